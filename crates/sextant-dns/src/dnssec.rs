//! The DNS threads' side of DNSSEC: each worker keeps the signers of the
//! snapshot's signed zones and its own signature cache, so a signed answer
//! takes no lock and waits for no other thread. A miss signs on the spot.

use std::sync::Arc;

use sextant_core::{Model, Snapshot, ZoneId};
use sextant_dnssec::{RrsetBuf, SignatureCache, Validity, ZoneSigner};

/// Signatures kept per DNS thread. An entry is about 200 bytes, so this is
/// some 3 MB a thread at most; negative answers (one per name asked) are
/// what fills it, and the oldest go first.
pub const CACHE_ENTRIES: usize = 16_384;

/// One worker's signers and signatures.
#[derive(Debug)]
pub struct DnssecWorker {
    /// The model the signers were built from (its address).
    model: usize,
    /// By zone index: the zone's signer when it is signed.
    signers: Vec<Option<ZoneSigner>>,
    pub(crate) cache: SignatureCache,
    /// The RRset being signed.
    pub(crate) set: RrsetBuf,
    /// An NSEC RDATA being made.
    pub(crate) nsec: Vec<u8>,
    /// Types at a name, for an NSEC's bitmap.
    pub(crate) types: Vec<u16>,
    /// Signatures made so far, as counted in the server's statistics.
    pub(crate) counted: u64,
    /// Whether the response being built carries a signature.
    pub(crate) signed: bool,
    rng: ring::rand::SystemRandom,
}

impl Default for DnssecWorker {
    fn default() -> Self {
        DnssecWorker {
            model: 0,
            signers: Vec::new(),
            cache: SignatureCache::new(CACHE_ENTRIES, Validity::default()),
            set: RrsetBuf::default(),
            nsec: Vec::with_capacity(300),
            types: Vec::with_capacity(16),
            counted: 0,
            signed: false,
            rng: ring::rand::SystemRandom::new(),
        }
    }
}

impl DnssecWorker {
    /// Rebuilds the signers when the snapshot's model is not the one they
    /// were built from (after a reload). The configuration checked every
    /// key when it loaded; a zone whose signer cannot be built stays
    /// unsigned.
    pub fn sync(&mut self, snapshot: &Snapshot) {
        let model: &Arc<Model> = snapshot.model_arc();
        let at = Arc::as_ptr(model) as usize;
        if at == self.model {
            return;
        }
        self.model = at;
        self.signers.clear();
        self.signers.resize_with(model.zones.len(), || None);
        for signed in &model.dnssec {
            let Some(zone) = model.zones.get(signed.zone) else {
                continue;
            };
            if let (Ok(signer), Some(slot)) = (
                ZoneSigner::new(signed, &zone.apex),
                self.signers.get_mut(signed.zone.index()),
            ) {
                *slot = Some(signer);
            }
        }
    }

    /// The signer of `zone`, when it is signed.
    pub fn signer(&self, zone: ZoneId) -> Option<&ZoneSigner> {
        self.signers.get(zone.index()).and_then(Option::as_ref)
    }

    /// Counts the response just built in `stats`: signed or not, and the
    /// signatures made for it.
    pub(crate) fn count(&mut self, stats: &crate::stats::DnsStats, shard: usize) {
        use crate::stats::Counter;
        if std::mem::take(&mut self.signed) {
            stats.incr(shard, Counter::DnssecSigned);
        }
        while self.counted < self.cache.counters.misses {
            stats.incr(shard, Counter::DnssecSignatures);
            self.counted += 1;
        }
    }

    /// Whether any zone is signed.
    pub fn any(&self) -> bool {
        self.signers.iter().any(Option::is_some)
    }

    /// Calls `emit` with each RRSIG of `self.set` (finished) by the keys of
    /// `zone` that sign its type at `now`.
    pub fn sign_set(
        &mut self,
        zone: ZoneId,
        now: u64,
        mut emit: impl FnMut(&[u8]) -> Result<(), crate::wire::build::BadName>,
    ) -> Result<(), crate::wire::build::BadName> {
        let Some(Some(z)) = self.signers.get(zone.index()) else {
            return Ok(());
        };
        for k in z.signing(self.set.rtype(), now) {
            let rrsig = self
                .cache
                .rrsig(z, k, &self.set, now, &self.rng)
                .map_err(|_| crate::wire::build::BadName("a signature could not be made"))?;
            emit(rrsig)?;
            self.signed = true;
        }
        Ok(())
    }
}

use std::net::IpAddr;

use sextant_core::Soa;
use sextant_core::records::{TYPE_A, TYPE_AAAA, TYPE_DS, TYPE_NS, TYPE_SOA};
use sextant_dnssec::{
    Error as SignError, TYPE_CDNSKEY, TYPE_CDS, TYPE_DNSKEY, TYPE_NSEC, TYPE_NXNAME, TYPE_RRSIG,
};

use crate::wire::Rcode;
use crate::wire::build::{BadName, ResponseWriter, Section};

/// One response's signing: on when the query has DO and the RRset's zone
/// is signed.
pub(crate) struct Signing<'a> {
    pub dnssec: &'a mut DnssecWorker,
    pub snapshot: &'a Snapshot,
    /// Unix seconds, as DNSSEC counts time.
    pub now: u64,
    pub on: bool,
}

fn bad(_: SignError) -> BadName {
    BadName("a name or record cannot be signed")
}

impl Signing<'_> {
    /// Whether `zone` is signed.
    pub fn signed(&self, zone: ZoneId) -> bool {
        self.dnssec.signer(zone).is_some()
    }

    /// Signs the RRset `fill` describes, just written to `section`: its
    /// RRSIGs follow it. `zone` defaults to the owner's.
    #[allow(clippy::too_many_arguments)]
    pub fn rrset(
        &mut self,
        w: &mut ResponseWriter<'_>,
        section: Section,
        owner: &str,
        qname: &str,
        rtype: u16,
        ttl: u32,
        zone: Option<ZoneId>,
        fill: impl FnOnce(&mut RrsetBuf) -> Result<(), SignError>,
    ) -> Result<(), BadName> {
        if !self.on {
            return Ok(());
        }
        // A DS RRset is the parent's (RFC 4034 §5): signed by the zone
        // above its owner, even when the owner is the apex of a zone here.
        let Some(zone) = zone.or_else(|| match rtype {
            TYPE_DS => owner
                .find('.')
                .and_then(|dot| self.snapshot.find_zone(&owner[dot + 1..])),
            _ => self.snapshot.find_zone(owner),
        }) else {
            return Ok(());
        };
        if !self.signed(zone) {
            return Ok(());
        }
        let set = &mut self.dnssec.set;
        set.start(owner, rtype, ttl).map_err(bad)?;
        fill(set).map_err(bad)?;
        if set.is_empty() {
            return Ok(());
        }
        set.finish();
        self.dnssec.sign_set(zone, self.now, |rrsig| {
            w.raw(section, owner, qname, TYPE_RRSIG, ttl, rrsig)
        })
    }

    /// Signs the address RRsets of an answer (A and AAAA apart).
    pub fn addresses(
        &mut self,
        w: &mut ResponseWriter<'_>,
        owner: &str,
        qname: &str,
        ttl: u32,
        addrs: &[IpAddr],
    ) -> Result<(), BadName> {
        for (rtype, v4) in [(TYPE_A, true), (TYPE_AAAA, false)] {
            if addrs.iter().any(|a| a.is_ipv4() == v4) {
                self.rrset(w, Section::Answer, owner, qname, rtype, ttl, None, |s| {
                    for a in addrs.iter().filter(|a| a.is_ipv4() == v4) {
                        s.push_addr(*a);
                    }
                    Ok(())
                })?;
            }
        }
        Ok(())
    }

    /// Signs a zone's SOA just written to `section`.
    #[allow(clippy::too_many_arguments)]
    pub fn soa_in(
        &mut self,
        w: &mut ResponseWriter<'_>,
        section: Section,
        zone: ZoneId,
        apex: &str,
        qname: &str,
        ttl: u32,
        soa: &Soa,
    ) -> Result<(), BadName> {
        self.rrset(w, section, apex, qname, TYPE_SOA, ttl, Some(zone), |s| {
            s.push_soa(soa)
        })
    }

    /// Signs the SOA of a negative answer; whether the answer is signed.
    pub fn soa(
        &mut self,
        w: &mut ResponseWriter<'_>,
        zone: ZoneId,
        apex: &str,
        qname: &str,
        ttl: u32,
        soa: &Soa,
    ) -> Result<bool, BadName> {
        if !self.on || !self.signed(zone) {
            return Ok(false);
        }
        self.soa_in(w, Section::Authority, zone, apex, qname, ttl, soa)?;
        Ok(true)
    }

    /// The compact denial of `qtype` at `name` (or of `name` itself), with
    /// its signature, in the authority section.
    #[allow(clippy::too_many_arguments)]
    pub fn deny(
        &mut self,
        w: &mut ResponseWriter<'_>,
        zone: ZoneId,
        name: &str,
        qname: &str,
        qtype: u16,
        nxdomain: bool,
        ttl: u32,
    ) -> Result<(), BadName> {
        // Never the type asked, even in the NXNAME proof of a name that
        // does not exist (a query for type RRSIG there).
        self.nsec(
            w,
            Section::Authority,
            zone,
            name,
            qname,
            Some(qtype),
            nxdomain,
            ttl,
        )
    }

    /// A query for type NSEC at a name of a signed zone, with DO: the
    /// name's NSEC (the one its compact denials are made of, listing every
    /// type it has) is the answer, signed. A NODATA would hold an NSEC of
    /// the very name and type it denies, which validators (BIND) reject.
    #[allow(clippy::too_many_arguments)]
    pub fn nsec_answer(
        &mut self,
        w: &mut ResponseWriter<'_>,
        zone: ZoneId,
        qname: &str,
        nxdomain: bool,
        ttl: u32,
    ) -> Result<(), BadName> {
        self.nsec(w, Section::Answer, zone, qname, qname, None, nxdomain, ttl)
    }

    /// The compact NSEC of `name` (less `denied`) with its signature, in
    /// `section`.
    #[allow(clippy::too_many_arguments)]
    fn nsec(
        &mut self,
        w: &mut ResponseWriter<'_>,
        section: Section,
        zone: ZoneId,
        name: &str,
        qname: &str,
        denied: Option<u16>,
        nxdomain: bool,
        ttl: u32,
    ) -> Result<(), BadName> {
        self.types_at(zone, name, denied.unwrap_or(0), nxdomain);
        let d = &mut *self.dnssec;
        sextant_dnssec::denial::compact_nsec(name, &d.types, denied, &mut d.nsec).map_err(bad)?;
        w.raw(section, name, qname, TYPE_NSEC, ttl, &d.nsec)?;
        let nsec = std::mem::take(&mut self.dnssec.nsec);
        let signed = self.rrset(w, section, name, qname, TYPE_NSEC, ttl, Some(zone), |s| {
            s.push_raw(&nsec);
            Ok(())
        });
        self.dnssec.nsec = nsec;
        signed
    }

    /// The types `name` has, less `qtype`, into `dnssec.types`: what its
    /// NSEC lists (never the type asked, or the proof would deny itself).
    fn types_at(&mut self, zone: ZoneId, name: &str, qtype: u16, nxdomain: bool) {
        let has_cds = self
            .dnssec
            .signer(zone)
            .is_some_and(|s| s.has_cds(self.now));
        let types = &mut self.dnssec.types;
        types.clear();
        if nxdomain {
            types.push(TYPE_NXNAME);
            return;
        }
        let model = self.snapshot.model();
        let records = self.snapshot.records().records_of(model, name);
        let apex = model.zones.get(zone).is_some_and(|z| z.apex == name);
        if !apex && self.snapshot.find_zone(name).is_some_and(|z| z != zone) {
            // The parent side of a zone of ours below `zone`: a delegation
            // (NS), with its DS records if it has any; the child's own
            // types are the child's to list.
            types.push(TYPE_NS);
            types.extend(
                records
                    .iter()
                    .map(|r| r.data.rtype())
                    .filter(|t| *t == TYPE_DS),
            );
        } else {
            if apex {
                types.extend([TYPE_SOA, TYPE_NS, TYPE_DNSKEY]);
                if has_cds {
                    types.extend([TYPE_CDS, TYPE_CDNSKEY]);
                }
            }
            // A DS at an apex is the parent's, not in the child's list.
            types.extend(
                records
                    .iter()
                    .map(|r| r.data.rtype())
                    .filter(|t| !(apex && *t == TYPE_DS)),
            );
            if self.snapshot.find_domain(name).is_some()
                || self.snapshot.find_dc_record(name).is_some()
            {
                types.extend([TYPE_A, TYPE_AAAA]);
            }
        }
        types.retain(|t| *t != qtype);
        types.sort_unstable();
        types.dedup();
    }

    /// DNSKEY, CDS or CDNSKEY at a signed zone's apex: the RRset (signed
    /// when DO is set), or `None` when there is none (NODATA then).
    pub fn apex_keys(
        &mut self,
        w: &mut ResponseWriter<'_>,
        zone: ZoneId,
        qname: &str,
        qtype: u16,
        apex: &str,
    ) -> Result<Option<Rcode>, BadName> {
        if qname != apex || !matches!(qtype, TYPE_DNSKEY | TYPE_CDS | TYPE_CDNSKEY) {
            return Ok(None);
        }
        let now = self.now;
        let Some(signer) = self.dnssec.signer(zone) else {
            return Ok(None);
        };
        let ttl = signer.dnskey_ttl;
        let mut written = 0;
        {
            let rdatas: Box<dyn Iterator<Item = &[u8]>> = match qtype {
                TYPE_DNSKEY => Box::new(signer.dnskeys(now)),
                TYPE_CDS => Box::new(signer.cds(now)),
                _ => Box::new(signer.cdnskeys(now)),
            };
            for rdata in rdatas {
                w.raw(Section::Answer, apex, qname, qtype, ttl, rdata)?;
                written += 1;
            }
        }
        if written == 0 {
            return Ok(None);
        }
        if self.on {
            let d = &mut *self.dnssec;
            d.set.start(apex, qtype, ttl).map_err(bad)?;
            if let Some(signer) = d.signers.get(zone.index()).and_then(Option::as_ref) {
                let rdatas: Box<dyn Iterator<Item = &[u8]>> = match qtype {
                    TYPE_DNSKEY => Box::new(signer.dnskeys(now)),
                    TYPE_CDS => Box::new(signer.cds(now)),
                    _ => Box::new(signer.cdnskeys(now)),
                };
                for rdata in rdatas {
                    d.set.push_raw(rdata);
                }
            }
            d.set.finish();
            d.sign_set(zone, now, |rrsig| {
                w.raw(Section::Answer, apex, qname, TYPE_RRSIG, ttl, rrsig)
            })?;
        }
        Ok(Some(Rcode::NoError))
    }
}
