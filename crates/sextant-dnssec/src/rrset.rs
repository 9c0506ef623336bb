//! An RRset in the canonical form signatures cover (RFC 4034 §6): owner in
//! canonical wire form, records sorted by RDATA, duplicates dropped. Built
//! into a reused buffer, so the DNS threads allocate nothing once it has
//! grown; the same bytes identify the RRset in the signature cache.

use std::net::IpAddr;

use sextant_core::Soa;
use sextant_core::records::{RecordData, TYPE_A, TYPE_AAAA};

use crate::{Error, name};

/// The class every record Sextant serves has.
pub const CLASS_IN: u16 = 1;

/// One RRset being assembled: owner, type and TTL fixed, RDATAs added.
#[derive(Debug, Default, Clone)]
pub struct RrsetBuf {
    owner: Vec<u8>,
    owner_labels: u8,
    rtype: u16,
    ttl: u32,
    /// Each RDATA, in canonical form, back to back.
    rdata: Vec<u8>,
    /// (start, end) of each RDATA in `rdata`.
    spans: Vec<(usize, usize)>,
    /// The canonical RRs, sorted (what a signature covers).
    canonical: Vec<u8>,
}

impl RrsetBuf {
    /// Starts a new RRset (the buffers are reused).
    pub fn start(&mut self, owner: &str, rtype: u16, ttl: u32) -> Result<(), Error> {
        self.owner.clear();
        name::write(owner, &mut self.owner)?;
        self.owner_labels = name::labels(owner);
        self.rtype = rtype;
        self.ttl = ttl;
        self.rdata.clear();
        self.spans.clear();
        self.canonical.clear();
        Ok(())
    }

    pub fn rtype(&self) -> u16 {
        self.rtype
    }

    pub fn ttl(&self) -> u32 {
        self.ttl
    }

    pub fn owner_labels(&self) -> u8 {
        self.owner_labels
    }

    /// Whether no RDATA has been added.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Adds one RDATA given in canonical form.
    pub fn push_raw(&mut self, rdata: &[u8]) {
        let start = self.rdata.len();
        self.rdata.extend_from_slice(rdata);
        self.spans.push((start, self.rdata.len()));
    }

    /// Adds an address (A or AAAA, as the RRset's type says).
    pub fn push_addr(&mut self, addr: IpAddr) {
        match addr {
            IpAddr::V4(v4) => self.push_raw(&v4.octets()),
            IpAddr::V6(v6) => self.push_raw(&v6.octets()),
        }
    }

    /// Adds a name as the whole RDATA (CNAME, NS).
    pub fn push_name(&mut self, target: &str) -> Result<(), Error> {
        let start = self.rdata.len();
        name::write(target, &mut self.rdata)?;
        self.spans.push((start, self.rdata.len()));
        Ok(())
    }

    /// Adds a static record's data.
    pub fn push_record(&mut self, data: &RecordData) -> Result<(), Error> {
        let start = self.rdata.len();
        match data {
            RecordData::A(v4) => self.rdata.extend_from_slice(&v4.octets()),
            RecordData::Aaaa(v6) => self.rdata.extend_from_slice(&v6.octets()),
            RecordData::Cname(t) | RecordData::Ns(t) => name::write(t, &mut self.rdata)?,
            RecordData::Mx {
                preference,
                exchange,
            } => {
                self.rdata.extend_from_slice(&preference.to_be_bytes());
                name::write(exchange, &mut self.rdata)?;
            }
            RecordData::Txt(strings) => {
                for s in strings {
                    let len = u8::try_from(s.len()).map_err(|_| Error::BadRdata("TXT string"))?;
                    self.rdata.push(len);
                    self.rdata.extend_from_slice(s.as_bytes());
                }
            }
            RecordData::Srv {
                priority,
                weight,
                port,
                target,
            } => {
                self.rdata.extend_from_slice(&priority.to_be_bytes());
                self.rdata.extend_from_slice(&weight.to_be_bytes());
                self.rdata.extend_from_slice(&port.to_be_bytes());
                // RFC 4034 §6.2 lists SRV among the types whose names are
                // lower-cased; ours already are.
                name::write(target, &mut self.rdata)?;
            }
            RecordData::Ds {
                key_tag,
                algorithm,
                digest_type,
                digest,
            } => {
                self.rdata.extend_from_slice(&key_tag.to_be_bytes());
                self.rdata.push(*algorithm);
                self.rdata.push(*digest_type);
                self.rdata.extend_from_slice(digest);
            }
        }
        self.spans.push((start, self.rdata.len()));
        Ok(())
    }

    /// Adds a zone's SOA.
    pub fn push_soa(&mut self, soa: &Soa) -> Result<(), Error> {
        let start = self.rdata.len();
        name::write(&soa.origin_server, &mut self.rdata)?;
        name::write(&soa.contact, &mut self.rdata)?;
        for n in [soa.serial, soa.refresh, soa.retry, soa.expire, soa.minimum] {
            self.rdata.extend_from_slice(&n.to_be_bytes());
        }
        self.spans.push((start, self.rdata.len()));
        Ok(())
    }

    /// Sorts the records and writes the canonical RRs (RFC 4034 §6.3):
    /// what the signature covers and what identifies the RRset.
    pub fn finish(&mut self) -> &[u8] {
        let rdata = &self.rdata;
        self.spans
            .sort_unstable_by(|a, b| rdata[a.0..a.1].cmp(&rdata[b.0..b.1]));
        self.spans
            .dedup_by(|a, b| rdata[a.0..a.1] == rdata[b.0..b.1]);
        self.canonical.clear();
        for &(start, end) in &self.spans {
            self.canonical.extend_from_slice(&self.owner);
            self.canonical.extend_from_slice(&self.rtype.to_be_bytes());
            self.canonical.extend_from_slice(&CLASS_IN.to_be_bytes());
            self.canonical.extend_from_slice(&self.ttl.to_be_bytes());
            let len = u16::try_from(end - start).unwrap_or(u16::MAX);
            self.canonical.extend_from_slice(&len.to_be_bytes());
            self.canonical.extend_from_slice(&rdata[start..end]);
        }
        &self.canonical
    }

    /// The canonical RRs of the last [`RrsetBuf::finish`].
    pub fn canonical(&self) -> &[u8] {
        &self.canonical
    }

    /// Each RDATA, in the order [`RrsetBuf::finish`] sorted them.
    pub fn rdatas(&self) -> impl Iterator<Item = &[u8]> {
        self.spans.iter().map(|&(s, e)| &self.rdata[s..e])
    }
}

/// The type of an address RRset.
pub fn addr_type(addr: IpAddr) -> u16 {
    if addr.is_ipv4() { TYPE_A } else { TYPE_AAAA }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn records_sort_by_rdata_and_duplicates_go() {
        let mut b = RrsetBuf::default();
        b.start("App.Example.com", TYPE_A, 30).unwrap();
        b.push_addr(Ipv4Addr::new(192, 0, 2, 20).into());
        b.push_addr(Ipv4Addr::new(192, 0, 2, 3).into());
        b.push_addr(Ipv4Addr::new(192, 0, 2, 20).into());
        let c = b.finish().to_vec();
        let rr = |last: u8| {
            let mut v =
                b"\x03app\x07example\x03com\x00\x00\x01\x00\x01\x00\x00\x00\x1e\x00\x04".to_vec();
            v.extend_from_slice(&[192, 0, 2, last]);
            v
        };
        assert_eq!(c, [rr(3), rr(20)].concat());
        // The same set in another order is the same RRset.
        b.start("app.example.com", TYPE_A, 30).unwrap();
        b.push_addr(Ipv4Addr::new(192, 0, 2, 20).into());
        b.push_addr(Ipv4Addr::new(192, 0, 2, 3).into());
        assert_eq!(b.finish(), &c[..]);
    }
}
