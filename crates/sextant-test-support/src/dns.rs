//! A DNS client over real UDP and TCP sockets, messages through
//! hickory-proto (an independent implementation), and answer helpers.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

pub use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
pub use hickory_proto::rr::rdata::opt::{ClientSubnet, EdnsCode, EdnsOption};
pub use hickory_proto::rr::{Name, RData, Record, RecordType};

/// Builds a query for `name`/`rtype`, RD clear, optional EDNS payload size.
pub fn build_query(name: &str, rtype: RecordType, edns: Option<u16>) -> Message {
    let mut m = Message::query();
    m.metadata.recursion_desired = false;
    m.add_query(Query::query(
        Name::from_ascii(name).expect("valid name"),
        rtype,
    ));
    if let Some(size) = edns {
        let mut e = Edns::new();
        e.set_max_payload(size);
        m.set_edns(e);
    }
    m
}

/// Adds an EDNS Client Subnet option (creating EDNS with 1232 if absent).
pub fn with_ecs(mut m: Message, addr: IpAddr, source_prefix: u8) -> Message {
    let mut e = m.edns.take().unwrap_or_else(|| {
        let mut e = Edns::new();
        e.set_max_payload(1232);
        e
    });
    e.options_mut().insert(EdnsOption::Subnet(ClientSubnet::new(
        addr,
        source_prefix,
        0,
    )));
    m.set_edns(e);
    m
}

/// The A addresses in a message's answer section.
pub fn a_records(m: &Message) -> Vec<Ipv4Addr> {
    m.answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(a.0),
            _ => None,
        })
        .collect()
}

pub fn aaaa_records(m: &Message) -> Vec<Ipv6Addr> {
    m.answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::AAAA(a) => Some(a.0),
            _ => None,
        })
        .collect()
}

/// Whether the authority section holds an SOA record.
pub fn has_soa_authority(m: &Message) -> bool {
    m.authorities
        .iter()
        .any(|r| r.record_type() == RecordType::SOA)
}

/// The ECS option of a response, if any.
pub fn ecs_of(m: &Message) -> Option<ClientSubnet> {
    match m.edns.as_ref()?.option(EdnsCode::Subnet)? {
        EdnsOption::Subnet(s) => Some(*s),
        _ => None,
    }
}

#[derive(Clone, Debug)]
pub struct Dns {
    pub server: SocketAddr,
    pub timeout: Duration,
}

impl Dns {
    pub fn new(server: SocketAddr) -> Dns {
        Dns {
            server,
            timeout: Duration::from_secs(2),
        }
    }

    /// UDP exchange from an ephemeral port on `source` (None = 127.0.0.1),
    /// retried up to 3 times on timeout.
    pub fn try_udp_from(&self, source: Option<Ipv4Addr>, q: &Message) -> Result<Message, String> {
        self.try_udp_from_ip(IpAddr::V4(source.unwrap_or(Ipv4Addr::LOCALHOST)), q)
    }

    /// UDP exchange from `source` (IPv4 or IPv6), retried up to 3 times on
    /// timeout.
    pub fn try_udp_from_ip(&self, source: IpAddr, q: &Message) -> Result<Message, String> {
        let bytes = q.to_vec().map_err(|e| format!("encode: {e}"))?;
        let mut last = String::new();
        for _ in 0..3 {
            match self.raw_udp_from_ip(source, &bytes, self.timeout) {
                Ok(Some(resp)) => {
                    return Message::from_vec(&resp)
                        .map_err(|e| format!("cannot parse response ({e}): {resp:?}"));
                }
                Ok(None) => last = format!("timeout after {:?}", self.timeout),
                Err(e) => last = e,
            }
        }
        Err(format!(
            "UDP query from {source} to {} failed: {last}",
            self.server
        ))
    }

    /// Like [`Dns::try_udp_from_ip`]; panics on failure.
    pub fn udp_from_ip(&self, source: IpAddr, q: &Message) -> Message {
        self.try_udp_from_ip(source, q)
            .unwrap_or_else(|e| panic!("{e} (query {:?})", q.queries))
    }

    pub fn udp_from(&self, source: Option<Ipv4Addr>, q: &Message) -> Message {
        self.try_udp_from(source, q)
            .unwrap_or_else(|e| panic!("{e} (query {:?})", q.queries))
    }

    pub fn udp(&self, q: &Message) -> Message {
        self.udp_from(None, q)
    }

    /// Sends raw bytes over UDP from `source` (None = 127.0.0.1); returns
    /// the first datagram that comes back within `wait` (None if nothing
    /// does). Responses whose id does not match the query's (when it has
    /// one) are skipped.
    pub fn raw_udp_from(
        &self,
        source: Option<Ipv4Addr>,
        bytes: &[u8],
        wait: Duration,
    ) -> Result<Option<Vec<u8>>, String> {
        self.raw_udp_from_ip(
            IpAddr::V4(source.unwrap_or(Ipv4Addr::LOCALHOST)),
            bytes,
            wait,
        )
    }

    pub fn raw_udp(&self, bytes: &[u8], wait: Duration) -> Result<Option<Vec<u8>>, String> {
        self.raw_udp_from(None, bytes, wait)
    }

    /// TCP exchange (2-byte length framing).
    pub fn try_tcp(&self, q: &Message) -> Result<Message, String> {
        let bytes = q.to_vec().map_err(|e| format!("encode: {e}"))?;
        let mut s = TcpStream::connect_timeout(&self.server, self.timeout)
            .map_err(|e| format!("TCP connect {}: {e}", self.server))?;
        s.set_read_timeout(Some(self.timeout * 2)).unwrap();
        s.set_write_timeout(Some(self.timeout)).unwrap();
        let mut framed = (bytes.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&bytes);
        s.write_all(&framed)
            .map_err(|e| format!("TCP write: {e}"))?;
        let mut len = [0u8; 2];
        s.read_exact(&mut len)
            .map_err(|e| format!("TCP read length: {e}"))?;
        let mut body = vec![0u8; u16::from_be_bytes(len) as usize];
        s.read_exact(&mut body)
            .map_err(|e| format!("TCP read body: {e}"))?;
        Message::from_vec(&body).map_err(|e| format!("cannot parse TCP response: {e}"))
    }

    pub fn tcp(&self, q: &Message) -> Message {
        self.try_tcp(q)
            .unwrap_or_else(|e| panic!("{e} (query {:?})", q.queries))
    }

    /// Any message over UDP (alias of [`Dns::udp`]).
    pub fn query_full(&self, q: &Message) -> Message {
        self.udp(q)
    }

    /// Any message over TCP (alias of [`Dns::tcp`]).
    pub fn query_full_tcp(&self, q: &Message) -> Message {
        self.tcp(q)
    }

    /// A query over UDP without EDNS.
    pub fn query(&self, name: &str, rtype: RecordType) -> Message {
        self.udp(&build_query(name, rtype, None))
    }

    /// The A addresses for `name` (one UDP query from 127.0.0.1).
    pub fn query_a(&self, name: &str) -> Vec<Ipv4Addr> {
        a_records(&self.query(name, RecordType::A))
    }

    /// The A addresses for `name` asked from a given source address.
    pub fn query_a_from(&self, source: Ipv4Addr, name: &str) -> Vec<Ipv4Addr> {
        a_records(&self.udp_from(Some(source), &build_query(name, RecordType::A, None)))
    }

    /// `n` queries for `name`; every address seen, with multiplicity.
    pub fn sample_a(&self, name: &str, n: usize) -> Vec<Ipv4Addr> {
        (0..n).flat_map(|_| self.query_a(name)).collect()
    }

    /// One query `q` from each of `sources` (a fresh UDP socket bound to
    /// each), sent in batches of `batch` sockets; each batch waits up to
    /// `wait` for its answers. Returns how many queries were answered (a
    /// datagram with the query's ID came back). For floods of spoofed
    /// sources: bounded in sockets and time whatever the server does.
    pub fn flood_from(
        &self,
        sources: &[Ipv4Addr],
        q: &Message,
        batch: usize,
        wait: Duration,
    ) -> Result<usize, String> {
        let bytes = q.to_vec().map_err(|e| format!("encode: {e}"))?;
        let mut answered = 0;
        for chunk in sources.chunks(batch.max(1)) {
            let mut socks = Vec::with_capacity(chunk.len());
            for &src in chunk {
                let sock = UdpSocket::bind((src, 0)).map_err(|e| format!("bind {src}: {e}"))?;
                sock.connect(self.server)
                    .map_err(|e| format!("connect: {e}"))?;
                sock.set_nonblocking(true)
                    .map_err(|e| format!("non-blocking: {e}"))?;
                // A send refused now (an ICMP error of an earlier packet)
                // just counts as unanswered.
                let _ = sock.send(&bytes);
                socks.push(Some(sock));
            }
            let end = Instant::now() + wait;
            let mut buf = vec![0u8; 4096];
            while socks.iter().any(Option::is_some) && Instant::now() < end {
                let mut progress = false;
                for slot in socks.iter_mut() {
                    let Some(sock) = slot else { continue };
                    match sock.recv(&mut buf) {
                        Ok(n) if n >= 2 && buf[..2] == bytes[..2] => {
                            answered += 1;
                            *slot = None;
                            progress = true;
                        }
                        Ok(_) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(_) => {
                            *slot = None;
                        }
                    }
                }
                if !progress {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        }
        Ok(answered)
    }

    /// `n` copies of `q` (IDs 0 to n-1) from one socket bound to `source`,
    /// all in one `sendmmsg` so that they reach the server as one burst;
    /// how many distinct IDs are answered within `wait` of the send.
    pub fn burst_from(
        &self,
        source: IpAddr,
        q: &Message,
        n: u16,
        wait: Duration,
    ) -> Result<usize, String> {
        use std::os::fd::AsRawFd;
        let bytes = q.to_vec().map_err(|e| format!("encode: {e}"))?;
        let sock = UdpSocket::bind((source, 0)).map_err(|e| format!("bind {source}: {e}"))?;
        sock.connect(self.server)
            .map_err(|e| format!("connect: {e}"))?;
        // Room for every answer while the test is not yet reading.
        socket2::SockRef::from(&sock)
            .set_recv_buffer_size(4 << 20)
            .map_err(|e| format!("SO_RCVBUF: {e}"))?;
        let mut queries: Vec<Vec<u8>> = (0..n)
            .map(|id| {
                let mut b = bytes.clone();
                b[..2].copy_from_slice(&id.to_be_bytes());
                b
            })
            .collect();
        let mut iovs: Vec<libc::iovec> = queries
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        let mut headers: Vec<libc::mmsghdr> = iovs
            .iter_mut()
            .map(|iov| {
                // SAFETY: all-zero is a valid msghdr (no name, no control).
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_iov = iov;
                h.msg_hdr.msg_iovlen = 1;
                h
            })
            .collect();
        let start = Instant::now();
        // SAFETY: `headers` points at `iovs`, which point at `queries`; all
        // live until after the call.
        let sent =
            unsafe { libc::sendmmsg(sock.as_raw_fd(), headers.as_mut_ptr(), u32::from(n), 0) };
        if sent != i32::from(n) {
            return Err(format!(
                "sendmmsg sent {sent} of {n}: {}",
                std::io::Error::last_os_error()
            ));
        }
        let mut seen = vec![false; usize::from(n)];
        let mut answered = 0;
        let mut buf = vec![0u8; 4096];
        while answered < usize::from(n) {
            let left = (start + wait).saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            sock.set_read_timeout(Some(left)).unwrap();
            match sock.recv(&mut buf) {
                Ok(len) if len >= 2 => {
                    let id = usize::from(u16::from_be_bytes([buf[0], buf[1]]));
                    if let Some(slot) = seen.get_mut(id).filter(|s| !**s) {
                        *slot = true;
                        answered += 1;
                    }
                }
                Ok(_) => {}
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    break;
                }
                Err(e) => return Err(format!("recv: {e}")),
            }
        }
        Ok(answered)
    }

    /// Like [`Dns::raw_udp_from`], from any local address, IPv4 or IPv6
    /// (the server must listen in the same family).
    pub fn raw_udp_from_ip(
        &self,
        source: IpAddr,
        bytes: &[u8],
        wait: Duration,
    ) -> Result<Option<Vec<u8>>, String> {
        let sock = UdpSocket::bind((source, 0)).map_err(|e| format!("bind {source}: {e}"))?;
        sock.connect(self.server)
            .map_err(|e| format!("connect: {e}"))?;
        sock.send(bytes).map_err(|e| format!("send: {e}"))?;
        let end = Instant::now() + wait;
        let mut buf = vec![0u8; 65535];
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            sock.set_read_timeout(Some(left)).unwrap();
            match sock.recv(&mut buf) {
                Ok(n) => {
                    if bytes.len() >= 2 && n >= 2 && buf[..2] != bytes[..2] {
                        continue; // stale answer of an earlier try
                    }
                    return Ok(Some(buf[..n].to_vec()));
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    return Ok(None);
                }
                // ECONNREFUSED from an ICMP port unreachable: nothing listens.
                Err(e) => return Err(format!("recv: {e}")),
            }
        }
    }
}

/// Decodes a response; panics (with the bytes) if it does not parse.
pub fn decode(bytes: &[u8]) -> Message {
    Message::from_vec(bytes)
        .unwrap_or_else(|e| panic!("response does not parse: {e}: {bytes:02x?}"))
}

/// The A and AAAA addresses in the answer section, in order.
pub fn answer_addrs(m: &Message) -> Vec<IpAddr> {
    m.answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(IpAddr::V4(a.0)),
            RData::AAAA(a) => Some(IpAddr::V6(a.0)),
            _ => None,
        })
        .collect()
}

/// Runs `dig @SERVER -p PORT +time=2 +tries=2 +norec ARGS...` (inside `ns`
/// when given) and returns what it printed on stdout: the one way the tests
/// ask with an independent client's command line.
pub fn dig(ns: Option<&crate::netns::Netns>, server: SocketAddr, args: &[&str]) -> String {
    String::from_utf8_lossy(&dig_output(ns, server, args).stdout).into_owned()
}

/// Like [`dig`], with the exit status and stderr.
pub fn dig_output(
    ns: Option<&crate::netns::Netns>,
    server: SocketAddr,
    args: &[&str],
) -> std::process::Output {
    let at = format!("@{}", server.ip());
    let port = server.port().to_string();
    let mut cmd = match ns {
        Some(ns) => {
            let mut c = std::process::Command::new("ip");
            c.args(["netns", "exec", &ns.name, "dig"]);
            c
        }
        None => std::process::Command::new("dig"),
    };
    cmd.args([
        at.as_str(),
        "-p",
        port.as_str(),
        "+time=2",
        "+tries=2",
        "+norec",
    ])
    .args(args)
    .stdin(std::process::Stdio::null())
    .output()
    .expect("run dig")
}

/// A hand-made response to `query` (a query message as a client encoded
/// it) with `rcode` and one A or AAAA answer per address, each owner name a
/// compression pointer to the question: what the DNS monitor's and the wire
/// client's tests feed their parsers.
pub fn response_to(query: &[u8], rcode: u8, answers: &[IpAddr]) -> Vec<u8> {
    let mut out = query.to_vec();
    out[2] = 0x84; // QR, AA
    out[3] = rcode;
    out[6..8].copy_from_slice(&(answers.len() as u16).to_be_bytes());
    for a in answers {
        out.extend_from_slice(&[0xc0, 12]);
        let (rtype, data) = match a {
            IpAddr::V4(v4) => (1u16, v4.octets().to_vec()),
            IpAddr::V6(v6) => (28u16, v6.octets().to_vec()),
        };
        out.extend_from_slice(&rtype.to_be_bytes());
        out.extend_from_slice(&1u16.to_be_bytes()); // IN
        out.extend_from_slice(&60u32.to_be_bytes());
        out.extend_from_slice(&(data.len() as u16).to_be_bytes());
        out.extend_from_slice(&data);
    }
    out
}
