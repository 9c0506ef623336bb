//! Response building into a reused `Vec<u8>`, no allocation once the
//! buffer has grown to its working size.
//!
//! The writer appends the header, the question copied verbatim from the
//! request (so the client's case survives), then records section by
//! section, and patches the counts at the end. When a record does not fit
//! the size limit, everything after the question is dropped and TC is set
//! (RFC 1035 §4.2.1, RFC 6891 §7): the client retries over TCP. Space for
//! the OPT record is reserved up front so a truncated answer still carries
//! it.

use std::net::IpAddr;

use sextant_core::Soa;
use sextant_core::records::{RecordData, StaticRecord};

use super::Rcode;
use super::parse::{
    Ecs, FLAG_TC, HEADER_LEN, MAX_LABEL, MAX_NAME_WIRE, OPTION_COOKIE, OPTION_ECS, OPTION_NSID,
    TYPE_OPT,
};

use sextant_core::records::{
    TYPE_A, TYPE_AAAA, TYPE_CNAME, TYPE_DS, TYPE_MX, TYPE_NS, TYPE_SOA, TYPE_SRV, TYPE_TXT,
};
const CLASS_IN: u16 = 1;

/// The UDP payload size we advertise (the DNS Flag Day 2020 value, which
/// avoids IP fragmentation on common paths).
pub const OUR_UDP_PAYLOAD: u16 = 1232;

/// A configured name that cannot be written in wire form (empty label,
/// label over 63 octets, name over 255 octets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("configured name cannot be encoded: {0}")]
pub struct BadName(pub &'static str);

/// The response sections records can go to (OPT is written by `finish`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Answer,
    Authority,
    /// Left out, without TC, when it does not fit (RFC 2181 §9): only
    /// referral glue, written to [`Section::Authority`]'s rules by
    /// [`ResponseWriter::glue`], sets TC.
    Additional,
}

/// The OPT record of a response. Only these options are ever written:
/// nothing of the query's other options or flags is echoed.
#[derive(Debug, Clone, Copy, Default)]
pub struct OptOut<'a> {
    pub dnssec_ok: bool,
    /// Client Subnet to echo, with the scope prefix to put in it.
    pub ecs: Option<(Ecs, u8)>,
    /// Our NSID, for a query that asked for it.
    pub nsid: Option<&'a [u8]>,
    /// The client cookie followed by our fresh server cookie.
    pub cookie: Option<[u8; 24]>,
}

impl OptOut<'_> {
    /// Wire length of this OPT record.
    pub fn len(&self) -> usize {
        11 + self
            .ecs
            .map(|(e, _)| 8 + e.address_bytes().len())
            .unwrap_or(0)
            + self.nsid.map(|n| 4 + n.len()).unwrap_or(0)
            + self.cookie.map(|c| 4 + c.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Appends one response to `out`.
pub struct ResponseWriter<'o> {
    out: &'o mut Vec<u8>,
    /// Where the records begin (end of the question).
    records_start: usize,
    /// The most bytes the records may take before OPT.
    limit: usize,
    answers: u16,
    authorities: u16,
    additionals: u16,
    overflow: bool,
}

impl<'o> ResponseWriter<'o> {
    /// Clears `out` and writes the header and `question` (which may be
    /// empty). `limit` is the largest message allowed, `opt_len` the bytes
    /// to keep free for the OPT record.
    pub fn start(
        out: &'o mut Vec<u8>,
        id: u16,
        flags: u16,
        question: &[u8],
        limit: usize,
        opt_len: usize,
    ) -> Self {
        out.clear();
        let qdcount: u16 = if question.is_empty() { 0 } else { 1 };
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&flags.to_be_bytes());
        out.extend_from_slice(&qdcount.to_be_bytes());
        out.extend_from_slice(&[0; 6]);
        out.extend_from_slice(question);
        let records_start = out.len();
        ResponseWriter {
            out,
            records_start,
            limit: limit.saturating_sub(opt_len),
            answers: 0,
            authorities: 0,
            additionals: 0,
            overflow: false,
        }
    }

    /// Marks the response truncated: `finish` drops every record and sets
    /// TC (a rate limiter's slip).
    pub fn truncate(&mut self) {
        self.overflow = true;
    }

    /// Whether a record has been left out for lack of space.
    pub fn overflowed(&self) -> bool {
        self.overflow
    }

    /// Writes one record with `write` filling owner and everything after;
    /// drops it (and marks the overflow) if the message grows past the limit.
    fn record(
        &mut self,
        section: Section,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), BadName>,
    ) -> Result<(), BadName> {
        if self.overflow {
            return Ok(());
        }
        let mark = self.out.len();
        if let Err(e) = write(self.out) {
            self.out.truncate(mark);
            return Err(e);
        }
        if self.out.len() > self.limit {
            self.out.truncate(mark);
            // Additional data is optional: the rest of the message stands.
            if section != Section::Additional {
                self.overflow = true;
            }
            return Ok(());
        }
        match section {
            Section::Answer => self.answers += 1,
            Section::Authority => self.authorities += 1,
            Section::Additional => self.additionals += 1,
        }
        Ok(())
    }

    /// Referral glue: additional data that must fit (RFC 9471), so a
    /// missing one sets TC like an answer record.
    pub fn glue(
        &mut self,
        owner: &str,
        qname: &str,
        ttl: u32,
        addr: IpAddr,
    ) -> Result<(), BadName> {
        let mark = self.out.len();
        self.address_of(Section::Additional, owner, qname, ttl, addr)?;
        if self.out.len() == mark && !self.overflow {
            self.overflow = true;
        }
        Ok(())
    }

    /// An A or AAAA record owned by `owner` (compressed against the question).
    pub fn address_of(
        &mut self,
        section: Section,
        owner: &str,
        qname: &str,
        ttl: u32,
        addr: IpAddr,
    ) -> Result<(), BadName> {
        self.record(section, |out| {
            write_name(out, owner, qname)?;
            write_address(out, ttl, addr);
            Ok(())
        })
    }

    /// A static record of any type, owned by its name.
    pub fn static_record(
        &mut self,
        section: Section,
        qname: &str,
        rec: &StaticRecord,
    ) -> Result<(), BadName> {
        self.record(section, |out| {
            write_name(out, &rec.name, qname)?;
            let data = &rec.data;
            match data {
                RecordData::A(a) => write_address(out, rec.ttl, IpAddr::V4(*a)),
                RecordData::Aaaa(a) => write_address(out, rec.ttl, IpAddr::V6(*a)),
                RecordData::Cname(target) | RecordData::Ns(target) => {
                    let rtype = if matches!(data, RecordData::Ns(_)) {
                        TYPE_NS
                    } else {
                        TYPE_CNAME
                    };
                    fixed(out, rtype, rec.ttl, 0);
                    let start = out.len();
                    write_name(out, target, qname)?;
                    patch_rdlen(out, start);
                }
                RecordData::Mx {
                    preference,
                    exchange,
                } => {
                    fixed(out, TYPE_MX, rec.ttl, 0);
                    let start = out.len();
                    out.extend_from_slice(&preference.to_be_bytes());
                    write_name(out, exchange, qname)?;
                    patch_rdlen(out, start);
                }
                RecordData::Txt(strings) => {
                    fixed(out, TYPE_TXT, rec.ttl, 0);
                    let start = out.len();
                    for s in strings {
                        let bytes = s.as_bytes();
                        let len = u8::try_from(bytes.len())
                            .map_err(|_| BadName("TXT string longer than 255 octets"))?;
                        out.push(len);
                        out.extend_from_slice(bytes);
                    }
                    if out.len() - start > usize::from(u16::MAX) {
                        return Err(BadName("TXT data longer than 65535 octets"));
                    }
                    patch_rdlen(out, start);
                }
                RecordData::Srv {
                    priority,
                    weight,
                    port,
                    target,
                } => {
                    fixed(out, TYPE_SRV, rec.ttl, 0);
                    let start = out.len();
                    out.extend_from_slice(&priority.to_be_bytes());
                    out.extend_from_slice(&weight.to_be_bytes());
                    out.extend_from_slice(&port.to_be_bytes());
                    // RFC 2782: the target is not compressed.
                    write_name(out, target, "")?;
                    patch_rdlen(out, start);
                }
                RecordData::Ds {
                    key_tag,
                    algorithm,
                    digest_type,
                    digest,
                } => {
                    fixed(out, TYPE_DS, rec.ttl, 0);
                    let start = out.len();
                    out.extend_from_slice(&key_tag.to_be_bytes());
                    out.push(*algorithm);
                    out.push(*digest_type);
                    out.extend_from_slice(digest);
                    patch_rdlen(out, start);
                }
            }
            Ok(())
        })
    }

    /// An A or AAAA record owned by the question name.
    pub fn address(&mut self, section: Section, ttl: u32, addr: IpAddr) {
        // Writing a pointer and fixed fields cannot fail.
        let _ = self.record(section, |out| {
            out.extend_from_slice(&question_pointer());
            write_address(out, ttl, addr);
            Ok(())
        });
    }

    /// The SOA record of the zone `apex`.
    pub fn soa(
        &mut self,
        section: Section,
        apex: &str,
        qname: &str,
        ttl: u32,
        soa: &Soa,
    ) -> Result<(), BadName> {
        self.record(section, |out| {
            write_name(out, apex, qname)?;
            fixed(out, TYPE_SOA, ttl, 0);
            let rdata_start = out.len();
            write_name(out, &soa.origin_server, qname)?;
            write_name(out, &soa.contact, qname)?;
            for v in [soa.serial, soa.refresh, soa.retry, soa.expire, soa.minimum] {
                out.extend_from_slice(&v.to_be_bytes());
            }
            patch_rdlen(out, rdata_start);
            Ok(())
        })
    }

    /// One NS record of the zone `apex`.
    pub fn ns(
        &mut self,
        section: Section,
        apex: &str,
        qname: &str,
        ttl: u32,
        target: &str,
    ) -> Result<(), BadName> {
        self.record(section, |out| {
            write_name(out, apex, qname)?;
            fixed(out, TYPE_NS, ttl, 0);
            let rdata_start = out.len();
            write_name(out, target, qname)?;
            patch_rdlen(out, rdata_start);
            Ok(())
        })
    }

    /// A record whose RDATA is given whole, in wire form (DNSSEC's DNSKEY,
    /// RRSIG, NSEC, CDS...: no name in it is compressed, RFC 4034).
    pub fn raw(
        &mut self,
        section: Section,
        owner: &str,
        qname: &str,
        rtype: u16,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<(), BadName> {
        let len = u16::try_from(rdata.len()).map_err(|_| BadName("RDATA over 65535 octets"))?;
        self.record(section, |out| {
            write_name(out, owner, qname)?;
            fixed(out, rtype, ttl, len);
            out.extend_from_slice(rdata);
            Ok(())
        })
    }

    /// A CNAME record from `owner` to `target` (CNAME-based GSLB).
    pub fn cname(
        &mut self,
        section: Section,
        owner: &str,
        qname: &str,
        ttl: u32,
        target: &str,
    ) -> Result<(), BadName> {
        self.record(section, |out| {
            write_name(out, owner, qname)?;
            fixed(out, TYPE_CNAME, ttl, 0);
            let rdata_start = out.len();
            write_name(out, target, qname)?;
            patch_rdlen(out, rdata_start);
            Ok(())
        })
    }

    /// Appends OPT (if any), sets RCODE, patches counts, and applies
    /// truncation: on overflow only the question and OPT remain, with TC=1.
    /// Returns whether the response was truncated.
    pub fn finish(self, rcode: Rcode, opt: Option<OptOut<'_>>) -> bool {
        let ResponseWriter {
            out,
            records_start,
            mut answers,
            mut authorities,
            mut additionals,
            overflow,
            ..
        } = self;
        if overflow {
            out.truncate(records_start);
            answers = 0;
            authorities = 0;
            additionals = 0;
        }
        let mut additional = additionals;
        if let Some(opt) = opt {
            write_opt(out, rcode, opt);
            additional += 1;
        }
        if let Some(h) = out.get_mut(..HEADER_LEN) {
            let mut flags = u16::from_be_bytes([h[2], h[3]]) & !0x000f;
            flags |= rcode.code() & 0x0f;
            if overflow {
                flags |= FLAG_TC;
            }
            h[2..4].copy_from_slice(&flags.to_be_bytes());
            h[6..8].copy_from_slice(&answers.to_be_bytes());
            h[8..10].copy_from_slice(&authorities.to_be_bytes());
            h[10..12].copy_from_slice(&additional.to_be_bytes());
        }
        overflow
    }
}

/// A compression pointer to the question name at offset 12.
fn question_pointer() -> [u8; 2] {
    pointer(HEADER_LEN)
}

fn pointer(offset: usize) -> [u8; 2] {
    (0xc000 | (offset as u16 & 0x3fff)).to_be_bytes()
}

/// The fixed fields and RDATA of an A or AAAA record.
fn write_address(out: &mut Vec<u8>, ttl: u32, addr: IpAddr) {
    match addr {
        IpAddr::V4(a) => {
            fixed(out, TYPE_A, ttl, 4);
            out.extend_from_slice(&a.octets());
        }
        IpAddr::V6(a) => {
            fixed(out, TYPE_AAAA, ttl, 16);
            out.extend_from_slice(&a.octets());
        }
    }
}

/// TYPE, CLASS IN, TTL and RDLENGTH of a record.
fn fixed(out: &mut Vec<u8>, rtype: u16, ttl: u32, rdlen: u16) {
    out.extend_from_slice(&rtype.to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    out.extend_from_slice(&ttl.to_be_bytes());
    out.extend_from_slice(&rdlen.to_be_bytes());
}

/// Sets the RDLENGTH just before `rdata_start` to the bytes written since.
fn patch_rdlen(out: &mut [u8], rdata_start: usize) {
    let len = out.len().saturating_sub(rdata_start) as u16;
    if let Some(f) = out.get_mut(rdata_start.saturating_sub(2)..rdata_start) {
        f.copy_from_slice(&len.to_be_bytes());
    }
}

fn write_opt(out: &mut Vec<u8>, rcode: Rcode, opt: OptOut<'_>) {
    out.push(0);
    out.extend_from_slice(&TYPE_OPT.to_be_bytes());
    out.extend_from_slice(&OUR_UDP_PAYLOAD.to_be_bytes());
    // The upper 8 bits of the 12-bit extended RCODE (1 for BADVERS).
    let extended = (rcode.code() >> 4) as u8;
    out.extend_from_slice(&[extended, 0, if opt.dnssec_ok { 0x80 } else { 0 }, 0]);
    let rdlen = (opt.len() - 11) as u16;
    out.extend_from_slice(&rdlen.to_be_bytes());
    if let Some((ecs, scope)) = opt.ecs {
        let addr = ecs.address_bytes();
        let option_len = 4 + addr.len() as u16;
        out.extend_from_slice(&OPTION_ECS.to_be_bytes());
        out.extend_from_slice(&option_len.to_be_bytes());
        out.extend_from_slice(&ecs.family.to_be_bytes());
        out.extend_from_slice(&[ecs.source_prefix, scope]);
        out.extend_from_slice(addr);
    }
    if let Some(nsid) = opt.nsid {
        out.extend_from_slice(&OPTION_NSID.to_be_bytes());
        out.extend_from_slice(&(nsid.len() as u16).to_be_bytes());
        out.extend_from_slice(nsid);
    }
    if let Some(cookie) = opt.cookie {
        out.extend_from_slice(&OPTION_COOKIE.to_be_bytes());
        out.extend_from_slice(&(cookie.len() as u16).to_be_bytes());
        out.extend_from_slice(&cookie);
    }
}

/// Writes a dotted, case-insensitive `name`, compressed against the
/// question name when a label-aligned suffix of it equals a suffix of
/// `qname` (the lower-cased question name).
///
/// This works because in a wire name starting at offset 12 the length octet
/// of each label sits at `12 + ` the index of that label in the dotted form.
pub fn write_name(out: &mut Vec<u8>, name: &str, qname: &str) -> Result<(), BadName> {
    let mut rest = name.as_bytes();
    let mut wire = 0usize;
    loop {
        if rest.is_empty() {
            out.push(0);
            return Ok(());
        }
        if let Some(at) = suffix_offset(qname.as_bytes(), rest) {
            out.extend_from_slice(&pointer(HEADER_LEN + at));
            return Ok(());
        }
        let (label, tail) = match rest.iter().position(|b| *b == b'.') {
            Some(dot) => (
                rest.get(..dot).unwrap_or(&[]),
                rest.get(dot + 1..).unwrap_or(&[]),
            ),
            None => (rest, &[][..]),
        };
        if label.is_empty() {
            return Err(BadName("empty label"));
        }
        if label.len() > MAX_LABEL {
            return Err(BadName("label longer than 63 octets"));
        }
        wire += 1 + label.len();
        if wire + 1 > MAX_NAME_WIRE {
            return Err(BadName("name longer than 255 octets"));
        }
        out.push(label.len() as u8);
        out.extend_from_slice(label);
        rest = tail;
    }
}

/// Where `suffix` starts inside `qname` when it is a whole-label suffix.
fn suffix_offset(qname: &[u8], suffix: &[u8]) -> Option<usize> {
    let at = qname.len().checked_sub(suffix.len())?;
    let tail = qname.get(at..)?;
    let aligned = at == 0 || qname.get(at - 1) == Some(&b'.');
    (aligned && tail.eq_ignore_ascii_case(suffix)).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compress_against_question_suffixes() {
        let qname = "www.example.com";
        let mut out = Vec::new();
        write_name(&mut out, "example.com", qname).unwrap();
        assert_eq!(out, [0xc0, 12 + 4]);

        out.clear();
        write_name(&mut out, "ns1.Example.com", qname).unwrap();
        assert_eq!(out, [3, b'n', b's', b'1', 0xc0, 12 + 4]);

        out.clear();
        write_name(&mut out, "ns.example.net", qname).unwrap();
        assert_eq!(out, b"\x02ns\x07example\x03net\x00");

        out.clear();
        write_name(&mut out, "w.com", qname).unwrap();
        assert_eq!(out, [1, b'w', 0xc0, 12 + 12]);

        // "ww.example.com" is not a label-aligned suffix of the question.
        out.clear();
        write_name(&mut out, "ww.example.com", qname).unwrap();
        assert_eq!(out, [2, b'w', b'w', 0xc0, 12 + 4]);

        out.clear();
        write_name(&mut out, "", qname).unwrap();
        assert_eq!(out, [0]);
    }

    #[test]
    fn bad_names_are_errors_not_panics() {
        let mut out = Vec::new();
        assert!(write_name(&mut out, "a..b", "").is_err());
        assert!(write_name(&mut out, &"x".repeat(64), "").is_err());
        let long = vec!["a".repeat(63); 5].join(".");
        assert!(write_name(&mut out, &long, "").is_err());
    }

    fn static_rec(name: &str, data: RecordData) -> StaticRecord {
        StaticRecord {
            name: name.into(),
            ttl: 60,
            data,
        }
    }

    #[test]
    fn static_records_encode_their_rdata() {
        let question = b"\x07example\x03com\x00\x00\x0f\x00\x01";
        let mut out = Vec::new();
        let mut w = ResponseWriter::start(&mut out, 1, 0x8400, question, 512, 0);
        let mx = static_rec(
            "example.com",
            RecordData::Mx {
                preference: 10,
                exchange: "mail.example.com".into(),
            },
        );
        w.static_record(Section::Answer, "example.com", &mx)
            .unwrap();
        let txt = static_rec("example.com", RecordData::Txt(vec!["ab".into(), "".into()]));
        w.static_record(Section::Answer, "example.com", &txt)
            .unwrap();
        let srv = static_rec(
            "_s._tcp.example.com",
            RecordData::Srv {
                priority: 1,
                weight: 2,
                port: 3,
                target: "t.example.com".into(),
            },
        );
        w.static_record(Section::Additional, "example.com", &srv)
            .unwrap();
        assert!(!w.finish(Rcode::NoError, None));
        let records = &out[12 + question.len()..];
        // MX: owner pointer, type 15, class, ttl, rdlen 2+4+2, pref, "mail" + pointer.
        assert_eq!(&records[..2], &[0xc0, 12]);
        assert_eq!(&records[2..4], &TYPE_MX.to_be_bytes());
        assert_eq!(&records[10..12], &9u16.to_be_bytes());
        assert_eq!(&records[12..21], b"\x00\x0a\x04mail\xc0\x0c");
        // TXT: two character-strings, the second empty.
        let txt_at = 21;
        assert_eq!(&records[txt_at + 2..txt_at + 4], &TYPE_TXT.to_be_bytes());
        assert_eq!(&records[txt_at + 10..txt_at + 16], b"\x00\x04\x02ab\x00");
        // Counts: 2 answers, 1 additional.
        assert_eq!(&out[6..12], &[0, 2, 0, 0, 0, 1]);
    }

    #[test]
    fn additional_records_that_do_not_fit_are_dropped_without_tc() {
        let question = b"\x01a\x00\x00\x01\x00\x01";
        let mut out = Vec::new();
        let mut w = ResponseWriter::start(&mut out, 7, 0x8400, question, 60, 0);
        w.address(Section::Answer, 60, IpAddr::from([10, 0, 0, 1]));
        for i in 0..3 {
            w.address_of(
                Section::Additional,
                "a",
                "a",
                60,
                IpAddr::from([10, 0, 1, i]),
            )
            .unwrap();
        }
        assert!(!w.overflowed());
        assert!(!w.finish(Rcode::NoError, None));
        assert_eq!(&out[6..8], &[0, 1], "the answer stays");
        assert!(
            u16::from_be_bytes([out[10], out[11]]) < 3,
            "not all additional fit"
        );
        // Referral glue that does not fit sets TC.
        let mut out = Vec::new();
        let mut w = ResponseWriter::start(&mut out, 7, 0x8000, question, 40, 0);
        w.glue("a", "a", 60, IpAddr::from([10, 0, 0, 1])).unwrap();
        w.glue("a", "a", 60, IpAddr::from([10, 0, 0, 2])).unwrap();
        assert!(w.finish(Rcode::NoError, None));
    }

    #[test]
    fn overflow_keeps_question_and_opt_and_sets_tc() {
        let mut out = Vec::new();
        let question = b"\x01a\x00\x00\x01\x00\x01";
        let opt = OptOut {
            dnssec_ok: true,
            ..OptOut::default()
        };
        let mut w = ResponseWriter::start(&mut out, 7, 0x8400, question, 60, opt.len());
        for i in 0..3 {
            w.address(Section::Answer, 60, IpAddr::from([10, 0, 0, i]));
        }
        assert!(w.overflowed());
        assert!(w.finish(Rcode::NoError, Some(opt)));
        assert_eq!(out.len(), 12 + question.len() + 11);
        assert_eq!(&out[2..4], &(0x8400u16 | FLAG_TC).to_be_bytes());
        assert_eq!(&out[4..12], &[0, 1, 0, 0, 0, 0, 0, 1]);
    }
}
