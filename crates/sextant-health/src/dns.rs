//! DNS monitor: one query over UDP, judged by response code and addresses.
//!
//! The query encoder and response decoder are written here (a few dozen
//! lines) instead of pulling in a DNS library: a monitor sends one fixed
//! question and reads the header and the answer section's A/AAAA records.
//! The response is untrusted input, so every read is a checked slice and
//! compression pointers are followed with a hop limit: malformed packets
//! become errors, never panics or loops.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};

use sextant_core::{DnsCheck, DnsQueryType};

use crate::{ProbeError, Success, udp};

const TYPE_A: u16 = 1;
pub(crate) const TYPE_NS: u16 = 2;
const TYPE_SOA: u16 = 6;
const TYPE_AAAA: u16 = 28;
const CLASS_IN: u16 = 1;
const HEADER_LEN: usize = 12;
/// Largest DNS message over UDP we accept (EDNS-sized, without sending EDNS).
pub(crate) const MAX_MESSAGE: usize = 4096;
/// Bound on compression pointers followed for one name.
const MAX_POINTER_HOPS: usize = 32;
const MAX_NAME_LEN: usize = 255;

/// Sends the query for `check` to `target` and judges the response.
pub(crate) async fn probe(check: &DnsCheck, target: SocketAddr) -> Result<Success, ProbeError> {
    let id = query_id();
    let query = encode_query(id, &check.query, check.query_type)?;
    let qtype = qtype(check.query_type);
    let socket = udp::connected_socket(target)
        .await
        .map_err(|e| udp::io_error("DNS", "DNS query to", target, e))?;
    socket
        .send(&query)
        .await
        .map_err(|e| udp::io_error("DNS", "DNS query to", target, e))?;
    let mut buf = vec![0u8; MAX_MESSAGE];
    loop {
        let n = socket
            .recv(&mut buf)
            .await
            .map_err(|e| udp::io_error("DNS", "DNS response from", target, e))?;
        let msg = buf.get(..n).unwrap_or_default();
        if let Some(verdict) = judge_datagram(check, id, qtype, msg) {
            return verdict;
        }
    }
}

/// Judges one datagram received for the query `id` / `qtype` of `check`:
/// `None` when it is not a reply to that query and the monitor waits on,
/// else the verdict. Pure, so the fuzz target runs exactly this.
pub(crate) fn judge_datagram(
    check: &DnsCheck,
    id: u16,
    qtype: u16,
    msg: &[u8],
) -> Option<Result<Success, ProbeError>> {
    // Datagrams that are not a reply to this query (stale replies to an
    // earlier probe, stray packets) are skipped, as a resolver would.
    if msg.get(..2) != Some(&id.to_be_bytes()[..]) {
        return None;
    }
    let response = match parse_response(msg) {
        Ok(r) => r,
        Err(e) => return Some(Err(e)),
    };
    if !response.is_answer_to(&check.query, qtype) {
        return None;
    }
    Some(judge(check, &response))
}

/// Applies the monitor's expectations to a parsed response.
pub(crate) fn judge(check: &DnsCheck, response: &Response) -> Result<Success, ProbeError> {
    let accepted = if check.expect_rcodes.is_empty() {
        &[0][..]
    } else {
        &check.expect_rcodes[..]
    };
    if !accepted.contains(&response.rcode) {
        return Err(ProbeError::DnsRcode {
            got: rcode_name(response.rcode),
            expected: join(accepted.iter().map(|&r| rcode_name(r))),
        });
    }
    let rcode = rcode_name(response.rcode);
    if check.expect_addresses.is_empty() {
        return Ok(Success::timed(format!("DNS {rcode}")));
    }
    match check
        .expect_addresses
        .iter()
        .find(|a| response.addresses.contains(a))
    {
        Some(found) => Ok(Success::timed(format!("DNS {rcode} with {found}"))),
        None => Err(ProbeError::DnsAddress {
            got: join(response.addresses.iter()),
            expected: join(check.expect_addresses.iter()),
        }),
    }
}

/// A random-ish 16-bit query id. `RandomState` is seeded from the OS per
/// instance; mixing in a counter keeps ids distinct in a burst. Together
/// with the random source port this makes blind spoofing of monitor answers
/// impractical without a dependency on a random number crate.
pub(crate) fn query_id() -> u16 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    (RandomState::new().hash_one(n) & 0xffff) as u16
}

pub(crate) fn qtype(t: DnsQueryType) -> u16 {
    match t {
        DnsQueryType::A => TYPE_A,
        DnsQueryType::Aaaa => TYPE_AAAA,
        DnsQueryType::Soa => TYPE_SOA,
    }
}

/// Encodes a query with RD=0 (we ask the target itself, not its recursion).
pub fn encode_query(id: u16, name: &str, query_type: DnsQueryType) -> Result<Vec<u8>, ProbeError> {
    encode_query_type(id, name, qtype(query_type))
}

/// [`encode_query`] for any numeric query type (the LDNS probe asks
/// `. IN NS`, which monitors cannot configure).
pub(crate) fn encode_query_type(id: u16, name: &str, qtype: u16) -> Result<Vec<u8>, ProbeError> {
    let mut out = Vec::with_capacity(HEADER_LEN + name.len() + 6);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&[0, 0]); // QR=0, opcode QUERY, RD=0
    out.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]); // QD=1, AN=NS=AR=0
    encode_name(name, &mut out)?;
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    Ok(out)
}

fn encode_name(name: &str, out: &mut Vec<u8>) -> Result<(), ProbeError> {
    let bad = |why| ProbeError::DnsQuery {
        name: name.to_string(),
        why,
    };
    let trimmed = name.strip_suffix('.').unwrap_or(name);
    let start = out.len();
    if !trimmed.is_empty() {
        for label in trimmed.split('.') {
            if label.is_empty() {
                return Err(bad("empty label"));
            }
            if label.len() > 63 {
                return Err(bad("label longer than 63 bytes"));
            }
            out.push(label.len() as u8);
            out.extend_from_slice(label.as_bytes());
        }
    }
    out.push(0);
    if out.len() - start > MAX_NAME_LEN {
        return Err(bad("name longer than 255 bytes"));
    }
    Ok(())
}

/// What the monitor needs from a DNS response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub id: u16,
    pub rcode: u8,
    pub truncated: bool,
    /// The question as echoed: lower-case name without trailing dot, type.
    pub question: Option<(String, u16)>,
    /// A and AAAA records of class IN in the answer section, in order.
    pub addresses: Vec<IpAddr>,
}

impl Response {
    /// Whether this response echoes our question (when it echoes one at
    /// all: some servers leave the question out of error responses).
    pub(crate) fn is_answer_to(&self, name: &str, qtype: u16) -> bool {
        match &self.question {
            None => true,
            Some((qname, t)) => {
                *t == qtype && qname.eq_ignore_ascii_case(name.strip_suffix('.').unwrap_or(name))
            }
        }
    }
}

/// Parses a response. Never panics, whatever the bytes.
pub fn parse_response(msg: &[u8]) -> Result<Response, ProbeError> {
    let mut r = Cursor { msg, pos: 0 };
    let id = r.u16()?;
    let flags = r.u16()?;
    if flags & 0x8000 == 0 {
        return Err(ProbeError::DnsMalformed("not a response (QR=0)"));
    }
    let qdcount = r.u16()?;
    let ancount = r.u16()?;
    let _nscount = r.u16()?;
    let _arcount = r.u16()?;
    let mut question = None;
    for _ in 0..qdcount {
        let name = r.name()?;
        let qtype = r.u16()?;
        let _qclass = r.u16()?;
        question.get_or_insert((name, qtype));
    }
    let mut addresses = Vec::new();
    for _ in 0..ancount {
        let _owner = r.name()?;
        let rtype = r.u16()?;
        let class = r.u16()?;
        let _ttl = r.u32()?;
        let rdlen = usize::from(r.u16()?);
        let rdata = r.take(rdlen)?;
        if class != CLASS_IN {
            continue;
        }
        match (rtype, rdata) {
            (TYPE_A, &[a, b, c, d]) => addresses.push(IpAddr::V4(Ipv4Addr::new(a, b, c, d))),
            (TYPE_AAAA, bytes) if bytes.len() == 16 => {
                let mut octets = [0u8; 16];
                octets.copy_from_slice(bytes);
                addresses.push(IpAddr::V6(Ipv6Addr::from(octets)));
            }
            _ => {}
        }
    }
    Ok(Response {
        id,
        rcode: (flags & 0x000f) as u8,
        truncated: flags & 0x0200 != 0,
        question,
        addresses,
    })
}

/// A checked reader over a message.
struct Cursor<'a> {
    msg: &'a [u8],
    pos: usize,
}

const TRUNCATED: ProbeError = ProbeError::DnsMalformed("truncated message");

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ProbeError> {
        let end = self.pos.checked_add(n).ok_or(TRUNCATED)?;
        let bytes = self.msg.get(self.pos..end).ok_or(TRUNCATED)?;
        self.pos = end;
        Ok(bytes)
    }

    fn u16(&mut self) -> Result<u16, ProbeError> {
        match self.take(2)? {
            &[a, b] => Ok(u16::from_be_bytes([a, b])),
            _ => Err(TRUNCATED),
        }
    }

    fn u32(&mut self) -> Result<u32, ProbeError> {
        match self.take(4)? {
            &[a, b, c, d] => Ok(u32::from_be_bytes([a, b, c, d])),
            _ => Err(TRUNCATED),
        }
    }

    /// Reads a possibly compressed name at the cursor, leaving the cursor
    /// after the name's bytes in place (a pointer counts two bytes).
    fn name(&mut self) -> Result<String, ProbeError> {
        let (name, next) = read_name(self.msg, self.pos)?;
        self.pos = next;
        Ok(name)
    }
}

/// Decodes the name at `pos`: lower case, dot separated, no trailing dot,
/// unusual bytes as `\DDD`. Returns the name and the offset after it.
fn read_name(msg: &[u8], mut pos: usize) -> Result<(String, usize), ProbeError> {
    let mut name = String::new();
    let mut wire_len = 0usize;
    let mut hops = 0usize;
    let mut after: Option<usize> = None;
    loop {
        let len = *msg.get(pos).ok_or(TRUNCATED)?;
        match len & 0xc0 {
            0x00 => {
                if len == 0 {
                    return Ok((name, after.unwrap_or(pos + 1)));
                }
                let start = pos + 1;
                let label = msg.get(start..start + usize::from(len)).ok_or(TRUNCATED)?;
                wire_len += 1 + label.len();
                if wire_len > MAX_NAME_LEN {
                    return Err(ProbeError::DnsMalformed("name longer than 255 bytes"));
                }
                if !name.is_empty() {
                    name.push('.');
                }
                for &b in label {
                    match b {
                        b'.' | b'\\' => name.push_str(&format!("\\{b:03}")),
                        0x21..=0x7e => name.push(char::from(b.to_ascii_lowercase())),
                        _ => name.push_str(&format!("\\{b:03}")),
                    }
                }
                pos = start + label.len();
            }
            0xc0 => {
                let low = *msg.get(pos + 1).ok_or(TRUNCATED)?;
                hops += 1;
                if hops > MAX_POINTER_HOPS {
                    return Err(ProbeError::DnsMalformed("compression loop"));
                }
                after.get_or_insert(pos + 2);
                pos = (usize::from(len & 0x3f) << 8) | usize::from(low);
            }
            _ => return Err(ProbeError::DnsMalformed("unknown label type")),
        }
    }
}

/// The mnemonic of a response code.
pub fn rcode_name(rcode: u8) -> String {
    match rcode {
        0 => "NOERROR".into(),
        1 => "FORMERR".into(),
        2 => "SERVFAIL".into(),
        3 => "NXDOMAIN".into(),
        4 => "NOTIMP".into(),
        5 => "REFUSED".into(),
        n => format!("RCODE{n}"),
    }
}

fn join<T: ToString>(items: impl Iterator<Item = T>) -> String {
    items.map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A response to `query` with the given rcode and answers, the answer
    /// owner names compressed to the question name.
    fn response(query: &[u8], rcode: u8, answers: &[IpAddr]) -> Vec<u8> {
        let mut out = query.to_vec();
        out[2] = 0x84; // QR, AA
        out[3] = rcode;
        out[6..8].copy_from_slice(&(answers.len() as u16).to_be_bytes());
        for a in answers {
            out.extend_from_slice(&[0xc0, 12]);
            let (t, data) = match a {
                IpAddr::V4(v4) => (TYPE_A, v4.octets().to_vec()),
                IpAddr::V6(v6) => (TYPE_AAAA, v6.octets().to_vec()),
            };
            out.extend_from_slice(&t.to_be_bytes());
            out.extend_from_slice(&CLASS_IN.to_be_bytes());
            out.extend_from_slice(&60u32.to_be_bytes());
            out.extend_from_slice(&(data.len() as u16).to_be_bytes());
            out.extend_from_slice(&data);
        }
        out
    }

    #[test]
    fn encodes_a_query() {
        let q = encode_query(0x1234, "www.Example.com.", DnsQueryType::Aaaa).unwrap();
        assert_eq!(&q[..12], &[0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&q[12..], b"\x03www\x07Example\x03com\x00\x00\x1c\x00\x01");
        assert!(encode_query(1, "a..b", DnsQueryType::A).is_err());
        assert!(encode_query(1, &"x".repeat(64), DnsQueryType::A).is_err());
        let long = vec!["abcdefghi"; 30].join(".");
        assert!(encode_query(1, &long, DnsQueryType::A).is_err());
        assert_eq!(
            &encode_query(1, "", DnsQueryType::A).unwrap()[12..],
            &[0, 0, 1, 0, 1]
        );
    }

    #[test]
    fn parses_compressed_answers() {
        let q = encode_query(7, "gslb.example.com", DnsQueryType::A).unwrap();
        let addrs: Vec<IpAddr> = vec!["192.0.2.1".parse().unwrap(), "2001:db8::1".parse().unwrap()];
        let r = parse_response(&response(&q, 0, &addrs)).unwrap();
        assert_eq!(r.id, 7);
        assert_eq!(r.rcode, 0);
        assert_eq!(r.question, Some(("gslb.example.com".into(), TYPE_A)));
        assert_eq!(r.addresses, addrs);
        assert!(r.is_answer_to("GSLB.example.com.", TYPE_A));
        assert!(!r.is_answer_to("other.example.com", TYPE_A));
    }

    #[test]
    fn judges_rcodes_and_addresses() {
        let q = encode_query(7, "a.example", DnsQueryType::A).unwrap();
        let ok: IpAddr = "192.0.2.1".parse().unwrap();
        let mut check = DnsCheck {
            query: "a.example".into(),
            query_type: DnsQueryType::A,
            expect_addresses: vec![],
            expect_rcodes: vec![],
        };
        let nx = parse_response(&response(&q, 3, &[])).unwrap();
        let e = judge(&check, &nx).unwrap_err();
        assert_eq!(e.to_string(), "DNS rcode NXDOMAIN not in NOERROR");
        check.expect_rcodes = vec![0, 3];
        assert!(judge(&check, &nx).is_ok());
        check.expect_addresses = vec![ok];
        let good = parse_response(&response(&q, 0, &[ok])).unwrap();
        assert_eq!(
            judge(&check, &good).unwrap().what,
            "DNS NOERROR with 192.0.2.1"
        );
        let other = parse_response(&response(&q, 0, &["192.0.2.9".parse().unwrap()])).unwrap();
        assert_eq!(
            judge(&check, &other).unwrap_err().to_string(),
            "DNS answer [192.0.2.9] has none of [192.0.2.1]"
        );
    }

    #[test]
    fn judges_datagrams_for_our_query_only() {
        let q = encode_query(7, "a.example", DnsQueryType::A).unwrap();
        let check = DnsCheck {
            query: "a.example".into(),
            query_type: DnsQueryType::A,
            expect_addresses: vec![],
            expect_rcodes: vec![],
        };
        let ok = response(&q, 0, &["192.0.2.1".parse().unwrap()]);
        let verdict = judge_datagram(&check, 7, TYPE_A, &ok).unwrap().unwrap();
        assert_eq!(verdict.what, "DNS NOERROR");
        // Another id, or another question: not ours, keep waiting.
        assert!(judge_datagram(&check, 8, TYPE_A, &ok).is_none());
        assert!(judge_datagram(&check, 7, TYPE_AAAA, &ok).is_none());
        // Ours but garbled: a failure, not a wait.
        assert!(
            judge_datagram(&check, 7, TYPE_A, &ok[..14])
                .unwrap()
                .is_err()
        );
        assert!(judge_datagram(&check, 7, TYPE_A, &[0, 7]).unwrap().is_err());
    }

    #[test]
    fn rejects_loops_and_truncation() {
        // A name that points at itself.
        let mut msg = vec![0, 1, 0x80, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        msg.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
        assert!(parse_response(&msg).is_err());
        // Answer count larger than the message.
        let q = encode_query(7, "a.example", DnsQueryType::A).unwrap();
        let mut r = response(&q, 0, &["192.0.2.1".parse().unwrap()]);
        r[7] = 2;
        assert!(parse_response(&r).is_err());
        r.truncate(r.len() - 1);
        assert!(parse_response(&r).is_err());
        assert!(parse_response(&[]).is_err());
        assert!(parse_response(&q).is_err(), "QR=0 is not a response");
    }

    proptest! {
        /// The parser never panics on arbitrary bytes.
        #[test]
        fn parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = parse_response(&bytes);
        }

        /// Nor on a valid response with bytes flipped, cut or appended.
        #[test]
        fn parser_survives_mutations(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
                                     cut in any::<usize>(), tail in proptest::collection::vec(any::<u8>(), 0..40)) {
            let q = encode_query(7, "www.example.com", DnsQueryType::Aaaa).unwrap();
            let mut r = response(&q, 0, &["2001:db8::1".parse().unwrap(), "192.0.2.1".parse().unwrap()]);
            for (i, b) in flips {
                let n = r.len();
                r[i % n] = b;
            }
            r.truncate(cut % (r.len() + 1));
            r.extend_from_slice(&tail);
            let _ = parse_response(&r);
        }
    }
}
