//! The client side of the wire format: one question out, the header and
//! the answer section's addresses back. The DNS monitor, the DNS self-probe
//! and the LDNS prober share it. A response is untrusted input, so every
//! read is a checked slice and compression pointers are followed with a hop
//! limit: malformed messages become errors, never panics or loops.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const TYPE_A: u16 = 1;
pub const TYPE_NS: u16 = 2;
pub const TYPE_SOA: u16 = 6;
pub const TYPE_AAAA: u16 = 28;
pub const CLASS_IN: u16 = 1;
const HEADER_LEN: usize = 12;
/// Bound on compression pointers followed for one name.
const MAX_POINTER_HOPS: usize = 32;
const MAX_NAME_LEN: usize = 255;

/// A query that cannot be encoded, or a response that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The query name cannot be encoded.
    #[error("invalid DNS query name {name:?}: {why}")]
    Name { name: String, why: &'static str },
    /// The response could not be parsed.
    #[error("malformed DNS response: {0}")]
    Malformed(&'static str),
}

/// Encodes a query for `name` and `qtype`, class IN, with RD=0 (we ask
/// the target itself, not its recursion).
pub fn encode_query(id: u16, name: &str, qtype: u16) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::with_capacity(HEADER_LEN + name.len() + 6);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&[0, 0]); // QR=0, opcode QUERY, RD=0
    out.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]); // QD=1, AN=NS=AR=0
    encode_name(name, &mut out)?;
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    Ok(out)
}

fn encode_name(name: &str, out: &mut Vec<u8>) -> Result<(), ClientError> {
    let bad = |why| ClientError::Name {
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
    pub fn is_answer_to(&self, name: &str, qtype: u16) -> bool {
        match &self.question {
            None => true,
            Some((qname, t)) => {
                *t == qtype && qname.eq_ignore_ascii_case(name.strip_suffix('.').unwrap_or(name))
            }
        }
    }
}

/// Parses a response. Never panics, whatever the bytes.
pub fn parse_response(msg: &[u8]) -> Result<Response, ClientError> {
    let mut r = Cursor { msg, pos: 0 };
    let id = r.u16()?;
    let flags = r.u16()?;
    if flags & 0x8000 == 0 {
        return Err(ClientError::Malformed("not a response (QR=0)"));
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

const TRUNCATED: ClientError = ClientError::Malformed("truncated message");

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ClientError> {
        let end = self.pos.checked_add(n).ok_or(TRUNCATED)?;
        let bytes = self.msg.get(self.pos..end).ok_or(TRUNCATED)?;
        self.pos = end;
        Ok(bytes)
    }

    fn u16(&mut self) -> Result<u16, ClientError> {
        match self.take(2)? {
            &[a, b] => Ok(u16::from_be_bytes([a, b])),
            _ => Err(TRUNCATED),
        }
    }

    fn u32(&mut self) -> Result<u32, ClientError> {
        match self.take(4)? {
            &[a, b, c, d] => Ok(u32::from_be_bytes([a, b, c, d])),
            _ => Err(TRUNCATED),
        }
    }

    /// Reads a possibly compressed name at the cursor, leaving the cursor
    /// after the name's bytes in place (a pointer counts two bytes).
    fn name(&mut self) -> Result<String, ClientError> {
        let (name, next) = read_name(self.msg, self.pos)?;
        self.pos = next;
        Ok(name)
    }
}

/// Decodes the name at `pos`: lower case, dot separated, no trailing dot,
/// unusual bytes as `\DDD`. Returns the name and the offset after it.
fn read_name(msg: &[u8], mut pos: usize) -> Result<(String, usize), ClientError> {
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
                    return Err(ClientError::Malformed("name longer than 255 bytes"));
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
                    return Err(ClientError::Malformed("compression loop"));
                }
                after.get_or_insert(pos + 2);
                pos = (usize::from(len & 0x3f) << 8) | usize::from(low);
            }
            _ => return Err(ClientError::Malformed("unknown label type")),
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sextant_test_support::dns::response_to;

    #[test]
    fn encodes_a_query() {
        let q = encode_query(0x1234, "www.Example.com.", TYPE_AAAA).unwrap();
        assert_eq!(&q[..12], &[0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&q[12..], b"\x03www\x07Example\x03com\x00\x00\x1c\x00\x01");
        assert!(encode_query(1, "a..b", TYPE_A).is_err());
        assert!(encode_query(1, &"x".repeat(64), TYPE_A).is_err());
        let long = vec!["abcdefghi"; 30].join(".");
        assert!(encode_query(1, &long, TYPE_A).is_err());
        assert_eq!(
            &encode_query(1, "", TYPE_A).unwrap()[12..],
            &[0, 0, 1, 0, 1]
        );
    }

    #[test]
    fn parses_compressed_answers() {
        let q = encode_query(7, "gslb.example.com", TYPE_A).unwrap();
        let addrs: Vec<IpAddr> = vec!["192.0.2.1".parse().unwrap(), "2001:db8::1".parse().unwrap()];
        let r = parse_response(&response_to(&q, 0, &addrs)).unwrap();
        assert_eq!(r.id, 7);
        assert_eq!(r.rcode, 0);
        assert_eq!(r.question, Some(("gslb.example.com".into(), TYPE_A)));
        assert_eq!(r.addresses, addrs);
        assert!(r.is_answer_to("GSLB.example.com.", TYPE_A));
        assert!(!r.is_answer_to("other.example.com", TYPE_A));
    }

    #[test]
    fn rejects_loops_and_truncation() {
        // A name that points at itself.
        let mut msg = vec![0, 1, 0x80, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        msg.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
        assert_eq!(
            parse_response(&msg).unwrap_err(),
            ClientError::Malformed("compression loop")
        );
        // Answer count larger than the message.
        let q = encode_query(7, "a.example", TYPE_A).unwrap();
        let mut r = response_to(&q, 0, &["192.0.2.1".parse().unwrap()]);
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
            let q = encode_query(7, "www.example.com", TYPE_AAAA).unwrap();
            let mut r = response_to(&q, 0, &["2001:db8::1".parse().unwrap(), "192.0.2.1".parse().unwrap()]);
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
