//! Query parsing: bytes in, a borrowed [`ParsedQuery`] out, no allocation.
//!
//! Hand-written rather than hickory-proto because the hot path must not
//! allocate: the question name is lower-cased into a caller-provided stack
//! buffer and everything else is copied into small `Copy` structs. Every
//! read is a checked slice access, so hostile input yields a
//! [`ParseError`], never a panic.
//!
//! The checks follow RFC 1035 (header, question), RFC 6891 (EDNS0 OPT) and
//! RFC 7871 (Client Subnet). Semantic policy (which classes and types are
//! answered) is left to the caller so `explain` sees the same parse.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use sextant_core::{ClientSubnet, QueryType};

/// Size of the fixed DNS header.
pub const HEADER_LEN: usize = 12;
/// Longest name in wire form, length octets and root label included.
pub const MAX_NAME_WIRE: usize = 255;
/// Longest label.
pub const MAX_LABEL: usize = 63;
/// Resource record type of the EDNS0 pseudo-record.
pub const TYPE_OPT: u16 = 41;
/// EDNS option code of Client Subnet.
pub const OPTION_ECS: u16 = 8;
/// EDNS option code of the name server identifier (RFC 5001).
pub const OPTION_NSID: u16 = 3;
/// EDNS option code of DNS cookies (RFC 7873).
pub const OPTION_COOKIE: u16 = 10;

/// QR: the message is a response.
pub const FLAG_QR: u16 = 0x8000;
/// AA: authoritative answer.
pub const FLAG_AA: u16 = 0x0400;
/// TC: truncated.
pub const FLAG_TC: u16 = 0x0200;
/// RD: recursion desired.
pub const FLAG_RD: u16 = 0x0100;
/// RA: recursion available.
pub const FLAG_RA: u16 = 0x0080;
/// CD: checking disabled (copied into responses per RFC 6840).
pub const FLAG_CD: u16 = 0x0010;

/// The fixed header fields a response needs to echo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    pub id: u16,
    /// The raw flags word (QR, opcode, AA, TC, RD, RA, Z, AD, CD, RCODE).
    pub flags: u16,
    pub qdcount: u16,
    pub ancount: u16,
    pub nscount: u16,
    pub arcount: u16,
}

impl Header {
    /// Reads the header; `None` when fewer than 12 bytes are present.
    pub fn parse(msg: &[u8]) -> Option<Header> {
        let h = msg.get(..HEADER_LEN)?;
        let word = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
        Some(Header {
            id: word(0),
            flags: word(2),
            qdcount: word(4),
            ancount: word(6),
            nscount: word(8),
            arcount: word(10),
        })
    }

    pub fn is_response(&self) -> bool {
        self.flags & FLAG_QR != 0
    }

    pub fn opcode(&self) -> u8 {
        ((self.flags >> 11) & 0x0f) as u8
    }

    pub fn recursion_desired(&self) -> bool {
        self.flags & FLAG_RD != 0
    }

    pub fn checking_disabled(&self) -> bool {
        self.flags & FLAG_CD != 0
    }
}

/// An EDNS Client Subnet option exactly as the client sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ecs {
    /// 1 = IPv4, 2 = IPv6 (IANA address family numbers).
    pub family: u16,
    pub source_prefix: u8,
    /// Always 0 in a valid query.
    pub scope_prefix: u8,
    /// The address, zero-padded to its full length.
    pub addr: IpAddr,
    /// The address octets as sent (only `ceil(source_prefix / 8)` of them).
    raw: [u8; 16],
    raw_len: u8,
}

impl Ecs {
    /// The truncated address octets as they appeared on the wire.
    pub fn address_bytes(&self) -> &[u8] {
        self.raw.get(..usize::from(self.raw_len)).unwrap_or(&[])
    }

    /// The subnet as the decision core wants it.
    pub fn client_subnet(&self) -> ClientSubnet {
        ClientSubnet {
            addr: self.addr,
            source_prefix: self.source_prefix,
        }
    }
}

/// The EDNS0 OPT pseudo-record of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edns {
    /// The requestor's UDP payload size (the OPT CLASS field).
    pub udp_payload: u16,
    pub version: u8,
    /// DO: the client wants DNSSEC records (echoed, we sign nothing).
    pub dnssec_ok: bool,
    pub ecs: Option<Ecs>,
    /// The query carried an empty NSID option: the client asks who we are.
    pub nsid: bool,
    pub cookie: Option<Cookie>,
}

/// A DNS cookie option as received: the 8-octet client cookie and, when
/// the client has one from us, the 8 to 32 octets of server cookie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cookie {
    pub client: [u8; 8],
    server: [u8; 32],
    server_len: u8,
}

impl Cookie {
    /// The server cookie part (empty when the client has none yet).
    pub fn server(&self) -> &[u8] {
        self.server
            .get(..usize::from(self.server_len))
            .unwrap_or(&[])
    }
}

/// A well-formed query.
#[derive(Debug, Clone, Copy)]
pub struct ParsedQuery<'a> {
    pub header: Header,
    /// Lower case, dotted, no trailing dot; the root is "". A byte that
    /// cannot stand unescaped in a dotted name ('.' inside a label, or a
    /// non-ASCII byte) is replaced by NUL, which no configured name contains:
    /// such a name still finds its enclosing zone but never a GSLB domain.
    pub qname: &'a str,
    pub qtype: u16,
    pub qclass: u16,
    /// The question as received (name, type, class), original case kept, to
    /// be copied into the response.
    pub question: &'a [u8],
    pub edns: Option<Edns>,
}

impl ParsedQuery<'_> {
    pub fn id(&self) -> u16 {
        self.header.id
    }

    pub fn query_type(&self) -> QueryType {
        QueryType::from_code(self.qtype)
    }

    pub fn client_subnet(&self) -> Option<ClientSubnet> {
        self.edns.and_then(|e| e.ecs).map(|e| e.client_subnet())
    }
}

/// Why a query is malformed (answered with FORMERR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FormErr {
    #[error("QDCOUNT is {0}, expected 1")]
    QuestionCount(u16),
    #[error("the message ends inside the question")]
    TruncatedQuestion,
    #[error("compression pointer in the question name")]
    CompressedQuestion,
    #[error("unknown label type")]
    BadLabelType,
    #[error("name longer than 255 octets")]
    NameTooLong,
    #[error("answer or authority records in a query")]
    UnexpectedRecords,
    #[error("the message ends inside the additional section")]
    TruncatedRecord,
    #[error("more than one OPT record")]
    DuplicateOpt,
    #[error("OPT record owner is not the root")]
    OptOwnerNotRoot,
    #[error("malformed EDNS option")]
    BadOption,
    #[error("more than one Client Subnet option")]
    DuplicateEcs,
    #[error("Client Subnet family {0} is not IPv4 (1) or IPv6 (2)")]
    EcsFamily(u16),
    #[error("Client Subnet source prefix {0} is too long for its family")]
    EcsPrefix(u8),
    #[error("Client Subnet address length does not match its source prefix")]
    EcsAddressLength,
    #[error("Client Subnet address has bits set beyond its source prefix")]
    EcsAddressBits,
    #[error("Client Subnet scope prefix {0} is not 0 in a query")]
    EcsScope(u8),
    #[error("COOKIE option of {0} octets (a client cookie is 8, with a server cookie 16 to 40)")]
    CookieLength(usize),
    #[error("more than one COOKIE option")]
    DuplicateCookie,
}

/// What kind of failure a [`ParseError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// Fewer than 12 bytes: not even a header to echo. Dropped.
    #[error("shorter than a DNS header")]
    TooShort,
    /// QR=1: a response must never be answered (reflection loops). Dropped.
    #[error("the message is a response (QR=1)")]
    NotAQuery,
    /// Answered NOTIMP.
    #[error("opcode {0} is not implemented")]
    NotImplemented(u8),
    /// Answered FORMERR.
    #[error("malformed query: {0}")]
    Malformed(FormErr),
    /// Answered BADVERS (extended RCODE 16) with an OPT record.
    #[error("EDNS version {0} is not supported")]
    BadVersion(u8),
}

/// A query that cannot be answered normally, with what is needed to build
/// the error response (all `Copy`, nothing borrowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct ParseError {
    pub kind: ParseErrorKind,
    /// The header, when there was one.
    pub header: Header,
    /// Length of the question (name, type, class) starting at offset 12 when
    /// it parsed, so the error response can echo it; 0 otherwise.
    pub question_len: usize,
    /// The OPT record when one was read (its Client Subnet is not kept), so
    /// the error response carries OPT as RFC 6891 asks.
    pub edns: Option<Edns>,
}

impl ParseError {
    /// Whether the packet is dropped rather than answered.
    pub fn is_drop(&self) -> bool {
        matches!(
            self.kind,
            ParseErrorKind::TooShort | ParseErrorKind::NotAQuery
        )
    }
}

/// Parses a query.
///
/// `name_buf` receives the lower-cased dotted question name, which
/// [`ParsedQuery::qname`] borrows; 256 bytes always suffice because a wire
/// name is at most 255 octets.
// The error carries the OPT header (cookie included) by value so that
// answering a malformed query allocates nothing.
#[allow(clippy::result_large_err)]
pub fn parse_query<'a>(
    request: &'a [u8],
    name_buf: &'a mut [u8; 256],
) -> Result<ParsedQuery<'a>, ParseError> {
    let Some(header) = Header::parse(request) else {
        return Err(ParseError {
            kind: ParseErrorKind::TooShort,
            header: Header::default(),
            question_len: 0,
            edns: None,
        });
    };
    let fail = |kind, question_len, edns| ParseError {
        kind,
        header,
        question_len,
        edns,
    };
    if header.is_response() {
        return Err(fail(ParseErrorKind::NotAQuery, 0, None));
    }
    if header.opcode() != 0 {
        // Other opcodes give the sections other meanings (UPDATE); only the
        // first entry is read, to echo it when it looks like a question,
        // and an OPT record when the rest is laid out as a query's, so that
        // the NOTIMP carries an OPT back (RFC 6891 §7).
        let question_len = if header.qdcount == 1 {
            read_question(request, name_buf).map(|q| q.len).unwrap_or(0)
        } else {
            0
        };
        let edns = (question_len > 0 && header.ancount == 0 && header.nscount == 0)
            .then(|| read_additional(request, HEADER_LEN + question_len, header.arcount).ok())
            .flatten()
            .flatten();
        return Err(fail(
            ParseErrorKind::NotImplemented(header.opcode()),
            question_len,
            edns,
        ));
    }
    if header.qdcount != 1 {
        return Err(fail(
            ParseErrorKind::Malformed(FormErr::QuestionCount(header.qdcount)),
            0,
            None,
        ));
    }
    let q = read_question(request, name_buf)
        .map_err(|e| fail(ParseErrorKind::Malformed(e), 0, None))?;
    if header.ancount != 0 || header.nscount != 0 {
        return Err(fail(
            ParseErrorKind::Malformed(FormErr::UnexpectedRecords),
            q.len,
            None,
        ));
    }
    let additional_start = HEADER_LEN + q.len;
    let edns = read_additional(request, additional_start, header.arcount)
        .map_err(|(e, edns)| fail(e, q.len, edns))?;

    let question = request.get(HEADER_LEN..additional_start).ok_or_else(|| {
        fail(
            ParseErrorKind::Malformed(FormErr::TruncatedQuestion),
            0,
            None,
        )
    })?;
    let qname = std::str::from_utf8(name_buf.get(..q.name_len).unwrap_or(&[]))
        .map_err(|_| fail(ParseErrorKind::Malformed(FormErr::BadLabelType), 0, None))?;
    Ok(ParsedQuery {
        header,
        qname,
        qtype: q.qtype,
        qclass: q.qclass,
        question,
        edns,
    })
}

/// The question's extent and fields; the name is in the caller's buffer.
struct RawQuestion {
    /// Bytes from offset 12 to the end of QCLASS.
    len: usize,
    /// Bytes of dotted name written into the name buffer.
    name_len: usize,
    qtype: u16,
    qclass: u16,
}

fn read_question(msg: &[u8], name_buf: &mut [u8; 256]) -> Result<RawQuestion, FormErr> {
    let mut pos = HEADER_LEN;
    let mut name_len = 0usize;
    loop {
        let len = usize::from(*msg.get(pos).ok_or(FormErr::TruncatedQuestion)?);
        match len & 0xc0 {
            0x00 => {}
            0xc0 => return Err(FormErr::CompressedQuestion),
            _ => return Err(FormErr::BadLabelType),
        }
        // Wire length so far, this label and its length octet, plus the root.
        if len > 0 && pos - HEADER_LEN + 1 + len + 1 > MAX_NAME_WIRE {
            return Err(FormErr::NameTooLong);
        }
        pos += 1;
        if len == 0 {
            break;
        }
        let label = msg.get(pos..pos + len).ok_or(FormErr::TruncatedQuestion)?;
        if name_len > 0 {
            *name_buf.get_mut(name_len).ok_or(FormErr::NameTooLong)? = b'.';
            name_len += 1;
        }
        let dst = name_buf
            .get_mut(name_len..name_len + len)
            .ok_or(FormErr::NameTooLong)?;
        for (d, s) in dst.iter_mut().zip(label) {
            *d = match *s {
                b'.' | 0x80..=0xff => 0,
                c => c.to_ascii_lowercase(),
            };
        }
        name_len += len;
        pos += len;
    }
    let fixed = msg.get(pos..pos + 4).ok_or(FormErr::TruncatedQuestion)?;
    Ok(RawQuestion {
        len: pos + 4 - HEADER_LEN,
        name_len,
        qtype: u16::from_be_bytes([fixed[0], fixed[1]]),
        qclass: u16::from_be_bytes([fixed[2], fixed[3]]),
    })
}

/// Walks the additional section and returns the OPT record, if any.
///
/// Records other than OPT (e.g. TSIG) are skipped without being checked.
/// On error, also returns the OPT header when one had been read.
fn read_additional(
    msg: &[u8],
    mut pos: usize,
    count: u16,
) -> Result<Option<Edns>, (ParseErrorKind, Option<Edns>)> {
    let malformed = |e, edns| (ParseErrorKind::Malformed(e), edns);
    let mut edns: Option<Edns> = None;
    for _ in 0..count {
        let owner = pos;
        pos = skip_name(msg, pos).map_err(|e| malformed(e, edns))?;
        let fixed = msg
            .get(pos..pos + 10)
            .ok_or_else(|| malformed(FormErr::TruncatedRecord, edns))?;
        let rtype = u16::from_be_bytes([fixed[0], fixed[1]]);
        let class = u16::from_be_bytes([fixed[2], fixed[3]]);
        let ttl = [fixed[4], fixed[5], fixed[6], fixed[7]];
        let rdlen = usize::from(u16::from_be_bytes([fixed[8], fixed[9]]));
        pos += 10;
        let rdata = msg
            .get(pos..pos + rdlen)
            .ok_or_else(|| malformed(FormErr::TruncatedRecord, edns))?;
        pos += rdlen;
        if rtype != TYPE_OPT {
            continue;
        }
        if edns.is_some() {
            return Err(malformed(FormErr::DuplicateOpt, edns));
        }
        let header_only = Edns {
            udp_payload: class,
            version: ttl[1],
            dnssec_ok: ttl[2] & 0x80 != 0,
            ecs: None,
            nsid: false,
            cookie: None,
        };
        edns = Some(header_only);
        if msg.get(owner) != Some(&0) {
            return Err(malformed(FormErr::OptOwnerNotRoot, edns));
        }
        // The options of an unknown version cannot be interpreted; BADVERS
        // is decided after the whole section has been checked.
        if header_only.version == 0 {
            let o = read_options(rdata).map_err(|e| malformed(e, edns))?;
            edns = Some(Edns {
                ecs: o.ecs,
                nsid: o.nsid,
                cookie: o.cookie,
                ..header_only
            });
        }
    }
    match edns {
        Some(e) if e.version > 0 => Err((
            ParseErrorKind::BadVersion(e.version),
            Some(Edns { ecs: None, ..e }),
        )),
        _ => Ok(edns),
    }
}

/// Skips a name in a record owner, where compression is legal.
fn skip_name(msg: &[u8], mut pos: usize) -> Result<usize, FormErr> {
    let start = pos;
    loop {
        let len = usize::from(*msg.get(pos).ok_or(FormErr::TruncatedRecord)?);
        match len & 0xc0 {
            0x00 if len == 0 => return Ok(pos + 1),
            0x00 => pos += 1 + len,
            // A pointer ends the name; it is not followed.
            0xc0 => {
                msg.get(pos + 1).ok_or(FormErr::TruncatedRecord)?;
                return Ok(pos + 2);
            }
            _ => return Err(FormErr::BadLabelType),
        }
        if pos - start > MAX_NAME_WIRE {
            return Err(FormErr::NameTooLong);
        }
    }
}

/// The options of an OPT record Sextant acts on; others are ignored.
#[derive(Default)]
struct Options {
    ecs: Option<Ecs>,
    nsid: bool,
    cookie: Option<Cookie>,
}

/// Reads the options of a version-0 OPT record, keeping Client Subnet,
/// NSID and COOKIE.
fn read_options(mut rdata: &[u8]) -> Result<Options, FormErr> {
    let mut o = Options::default();
    while !rdata.is_empty() {
        let head = rdata.get(..4).ok_or(FormErr::BadOption)?;
        let code = u16::from_be_bytes([head[0], head[1]]);
        let len = usize::from(u16::from_be_bytes([head[2], head[3]]));
        let body = rdata.get(4..4 + len).ok_or(FormErr::BadOption)?;
        rdata = rdata.get(4 + len..).unwrap_or(&[]);
        match code {
            OPTION_ECS => {
                if o.ecs.is_some() {
                    return Err(FormErr::DuplicateEcs);
                }
                o.ecs = Some(read_ecs(body)?);
            }
            // RFC 5001 §2.3: a query's NSID option is empty; one with
            // data is not a request we know how to answer.
            OPTION_NSID => o.nsid = body.is_empty(),
            OPTION_COOKIE => {
                if o.cookie.is_some() {
                    return Err(FormErr::DuplicateCookie);
                }
                o.cookie = Some(read_cookie(body)?);
            }
            _ => {}
        }
    }
    Ok(o)
}

/// RFC 7873 §5.2.2: a client cookie of 8 octets, optionally followed by a
/// server cookie of 8 to 32; any other length is FORMERR.
fn read_cookie(body: &[u8]) -> Result<Cookie, FormErr> {
    if !(body.len() == 8 || (16..=40).contains(&body.len())) {
        return Err(FormErr::CookieLength(body.len()));
    }
    let mut c = Cookie {
        client: [0; 8],
        server: [0; 32],
        server_len: (body.len() - 8) as u8,
    };
    c.client
        .copy_from_slice(body.get(..8).ok_or(FormErr::CookieLength(body.len()))?);
    let rest = body.get(8..).unwrap_or(&[]);
    c.server
        .get_mut(..rest.len())
        .ok_or(FormErr::CookieLength(body.len()))?
        .copy_from_slice(rest);
    Ok(c)
}

/// Validates a Client Subnet option per RFC 7871 §6 and §7.1.
fn read_ecs(body: &[u8]) -> Result<Ecs, FormErr> {
    let head = body.get(..4).ok_or(FormErr::BadOption)?;
    let family = u16::from_be_bytes([head[0], head[1]]);
    let source_prefix = head[2];
    let scope_prefix = head[3];
    let max_prefix = match family {
        1 => 32,
        2 => 128,
        other => return Err(FormErr::EcsFamily(other)),
    };
    if source_prefix > max_prefix {
        return Err(FormErr::EcsPrefix(source_prefix));
    }
    if scope_prefix != 0 {
        return Err(FormErr::EcsScope(scope_prefix));
    }
    let addr = body.get(4..).unwrap_or(&[]);
    let needed = usize::from(source_prefix).div_ceil(8);
    if addr.len() != needed {
        return Err(FormErr::EcsAddressLength);
    }
    let spare_bits = needed * 8 - usize::from(source_prefix);
    if let Some(last) = addr.last() {
        let spare_mask = ((1u16 << spare_bits) - 1) as u8;
        if last & spare_mask != 0 {
            return Err(FormErr::EcsAddressBits);
        }
    }
    let mut raw = [0u8; 16];
    raw.get_mut(..needed)
        .ok_or(FormErr::EcsAddressLength)?
        .copy_from_slice(addr);
    let ip = if family == 1 {
        IpAddr::V4(Ipv4Addr::new(raw[0], raw[1], raw[2], raw[3]))
    } else {
        IpAddr::V6(Ipv6Addr::from(raw))
    };
    Ok(Ecs {
        family,
        source_prefix,
        scope_prefix,
        addr: ip,
        raw,
        raw_len: needed as u8,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(name: &[u8], tail: &[u8]) -> Vec<u8> {
        let mut m = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(name);
        m.extend_from_slice(&[0, 1, 0, 1]);
        m.extend_from_slice(tail);
        m
    }

    #[test]
    fn lower_cases_and_dots_the_name() {
        let m = query(b"\x03WwW\x07Example\x03COM\x00", &[]);
        let mut buf = [0u8; 256];
        let q = parse_query(&m, &mut buf).unwrap();
        assert_eq!(q.qname, "www.example.com");
        assert_eq!(q.question, &m[12..]);
        assert_eq!((q.qtype, q.qclass, q.id()), (1, 1, 0x1234));
        assert!(q.header.recursion_desired());
    }

    #[test]
    fn root_name_is_empty() {
        let m = query(b"\x00", &[]);
        let mut buf = [0u8; 256];
        assert_eq!(parse_query(&m, &mut buf).unwrap().qname, "");
    }

    #[test]
    fn dots_and_high_bytes_inside_labels_become_nul() {
        let m = query(b"\x05a.b\xffc\x03com\x00", &[]);
        let mut buf = [0u8; 256];
        assert_eq!(parse_query(&m, &mut buf).unwrap().qname, "a\0b\0c.com");
    }

    #[test]
    fn longest_legal_name_parses_and_one_more_octet_fails() {
        // 3 labels of 63 + one of 61: 4*1 + 252 + root = 255 octets.
        let mut name = Vec::new();
        for len in [63u8, 63, 63, 61] {
            name.push(len);
            name.extend(std::iter::repeat_n(b'a', usize::from(len)));
        }
        name.push(0);
        assert_eq!(name.len(), 255);
        let mut buf = [0u8; 256];
        let m = query(&name, &[]);
        assert_eq!(parse_query(&m, &mut buf).unwrap().qname.len(), 253);

        name[3 * 64] = 62;
        name.insert(3 * 64 + 1, b'a');
        let m = query(&name, &[]);
        let e = parse_query(&m, &mut buf).unwrap_err();
        assert_eq!(e.kind, ParseErrorKind::Malformed(FormErr::NameTooLong));
    }

    #[test]
    fn cookie_lengths() {
        for ok in [8usize, 16, 24, 40] {
            let c = read_cookie(&vec![7u8; ok]).unwrap();
            assert_eq!(c.server().len(), ok - 8);
            assert_eq!(c.client, [7; 8]);
        }
        for bad in [0usize, 1, 7, 9, 15, 41, 100] {
            assert_eq!(
                read_cookie(&vec![0u8; bad]).unwrap_err(),
                FormErr::CookieLength(bad)
            );
        }
    }

    #[test]
    fn ecs_bits_beyond_prefix_are_rejected() {
        assert_eq!(
            read_ecs(&[0, 1, 23, 0, 10, 0, 1]).unwrap_err(),
            FormErr::EcsAddressBits
        );
        let ok = read_ecs(&[0, 1, 23, 0, 10, 0, 0]).unwrap();
        assert_eq!(ok.addr, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 0)));
        assert_eq!(ok.address_bytes(), &[10, 0, 0]);
        let zero = read_ecs(&[0, 2, 0, 0]).unwrap();
        assert_eq!(zero.address_bytes(), &[] as &[u8]);
    }
}
