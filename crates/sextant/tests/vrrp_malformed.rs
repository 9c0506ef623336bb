//! Malformed VRRP adverts, a bounded fuzz run: two Sextant nodes with one
//! VRID settle (node 0 master), then the client namespace sends
//! [`PACKETS`] hostile IPv4 packets to 224.0.0.18 over a raw IP socket
//! (protocol 112, IP_HDRINCL: the test writes the IP header, TTL and source
//! included), from a PRNG with a fixed seed: truncated, wrong version,
//! wrong type, bad checksum, TTL ≠ 255, an address count beyond the
//! payload, count 0, interval 0, VRID 0, our VRID at priority 255 with a
//! bad checksum, another VRID, random bytes, valid adverts with one byte
//! changed, and IP headers the kernel refuses or drops.
//!
//! Then: both nodes still run, neither logged a new transition (node 0 was
//! master throughout and alone held the VIP), DNS over the VIP answers, and
//! each node's drop counters grew by exactly what the test's own
//! classifier (RFC 5798's checks in Sextant's documented order) predicts
//! for every packet that reaches it. Last, the positive control: one
//! valid advert with priority 254 from an address no node has makes the
//! master step down, so the node was listening all along. Needs root;
//! under CI a missing namespace fails.

#![allow(unsafe_code)] // system calls in the test harness; each block says why it is sound

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use sextant_test_support::dns::{Dns, RecordType, a_records, build_query};
use sextant_test_support::vrrp_lab::{CLIENT_IP, Instance, Lab, vip};
use sextant_test_support::vrrp_sextant::{
    SextantNode, WWW, WWW_ANSWER, always, eventually, node_config,
};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

const BIN: &str = env!("CARGO_BIN_EXE_sextant");
const INTERVAL: Duration = Duration::from_millis(100);
const VRID: u8 = 1;
/// How many hostile packets.
const PACKETS: usize = 2000;
/// The PRNG's seed.
const SEED: u64 = 0x5e47_a417_0004_0112;
const GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 18);
/// The positive control's sender: on the lab's subnet, no host has it.
const FAKE_ROUTER: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 99);

/// xorshift64*: small, deterministic, good enough to pick test cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
    fn range(&mut self, lo: u8, hi: u8) -> u8 {
        lo + self.below(u64::from(hi - lo) + 1) as u8
    }
}

fn sum16(data: &[u8]) -> u64 {
    data.chunks(2)
        .map(|c| u64::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum()
}

/// The one's complement checksum of `msg`, with the IPv4 pseudo-header of
/// `src`, `dst` (as keepalived and Sextant's default) or without (RFC
/// 9568). Over a message whose checksum field is right it is 0.
fn csum(msg: &[u8], pseudo: Option<(Ipv4Addr, Ipv4Addr)>) -> u16 {
    let mut s = sum16(msg);
    if let Some((src, dst)) = pseudo {
        s += sum16(&src.octets()) + sum16(&dst.octets()) + 112 + msg.len() as u64;
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// A VRRPv3 advert from `src` with the pseudo-header checksum; `count` is
/// written as given, whatever `addrs` holds.
fn advert(
    src: Ipv4Addr,
    vrid: u8,
    prio: u8,
    count: u8,
    int_cs: u16,
    addrs: &[Ipv4Addr],
) -> Vec<u8> {
    let mut m = vec![0x31, vrid, prio, count];
    m.extend_from_slice(&(int_cs & 0x0fff).to_be_bytes());
    m.extend_from_slice(&[0, 0]);
    for a in addrs {
        m.extend_from_slice(&a.octets());
    }
    fix_checksum(&mut m, src);
    m
}

fn fix_checksum(m: &mut [u8], src: Ipv4Addr) {
    m[6] = 0;
    m[7] = 0;
    let c = csum(m, Some((src, GROUP)));
    m[6..8].copy_from_slice(&c.to_be_bytes());
}

/// A checksum wrong with and without the pseudo-header.
fn break_checksum(m: &mut [u8], src: Ipv4Addr, rng: &mut Rng) {
    m[6] = 0;
    m[7] = 0;
    let with = csum(m, Some((src, GROUP)));
    let without = csum(m, None);
    let mut c = rng.next() as u16;
    // 0x0000 and 0xffff are the same in one's complement.
    while [with, without, !with, !without].contains(&c) || c == 0 || c == 0xffff {
        c = c.wrapping_add(0x0101);
    }
    m[6..8].copy_from_slice(&c.to_be_bytes());
}

/// The drop reason a node should count for `msg` received with `ttl` from
/// `src`, following the order `sextant_vrrp::packet::Advert::decode`
/// documents (TTL, length, version, type, count, checksum, then VRID,
/// count and interval non-zero), then the VRID demultiplexing; None for an
/// advert a node would hear (which this test never sends before the
/// control).
fn classify(msg: &[u8], ttl: u8, src: Ipv4Addr) -> Option<&'static str> {
    if ttl != 255 {
        return Some("bad_ttl");
    }
    if msg.len() < 8 {
        return Some("short");
    }
    if msg[0] >> 4 != 3 {
        return Some("bad_version");
    }
    if msg[0] & 0x0f != 1 {
        return Some("bad_type");
    }
    if msg.len() < 8 + 4 * usize::from(msg[3]) {
        return Some("count_mismatch");
    }
    if csum(msg, None) != 0 && csum(msg, Some((src, GROUP))) != 0 {
        return Some("bad_checksum");
    }
    if msg[1] == 0 {
        return Some("zero_vrid");
    }
    if msg[3] == 0 {
        return Some("zero_count");
    }
    if u16::from_be_bytes([msg[4], msg[5]]) & 0x0fff == 0 {
        return Some("zero_interval");
    }
    if msg[1] != VRID {
        return Some("other_vrid");
    }
    None
}

/// What the test sends, one kind per case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Truncated,
    WrongVersion,
    WrongType,
    BadChecksum,
    Ttl254,
    OtherTtl,
    CountBeyondPayload,
    CountZero,
    IntervalZero,
    VridZero,
    OursPriority255BadChecksum,
    OtherVridPriority255,
    RandomBytes,
    MutatedAdvert,
    /// An IPv4 header shorter than 20 bytes (IHL < 5): the sending kernel
    /// refuses it (EINVAL), so it never reaches the wire.
    IpHeaderIhlBelow5,
    /// IP version 5 in the header: the receiving kernels drop it in
    /// ip_rcv before any socket sees it.
    IpVersion5,
}

const KINDS: &[Kind] = &[
    Kind::Truncated,
    Kind::WrongVersion,
    Kind::WrongType,
    Kind::BadChecksum,
    Kind::Ttl254,
    Kind::OtherTtl,
    Kind::CountBeyondPayload,
    Kind::CountZero,
    Kind::IntervalZero,
    Kind::VridZero,
    Kind::OursPriority255BadChecksum,
    Kind::OtherVridPriority255,
    Kind::RandomBytes,
    Kind::MutatedAdvert,
    Kind::IpHeaderIhlBelow5,
    Kind::IpVersion5,
];

/// Whether packets of this kind reach the nodes' VRRP socket at all.
fn reaches_node(k: Kind) -> bool {
    !matches!(k, Kind::IpHeaderIhlBelow5 | Kind::IpVersion5)
}

/// One hostile packet: the IPv4 packet to send and the VRRP message in it
/// (for the classifier), with the TTL.
struct Case {
    kind: Kind,
    ip: Vec<u8>,
    msg: Vec<u8>,
    ttl: u8,
}

fn ip_packet(src: Ipv4Addr, ttl: u8, msg: &[u8]) -> Vec<u8> {
    let mut p = vec![0x45, 0, 0, 0, 0, 0, 0, 0, ttl, 112, 0, 0];
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&GROUP.octets());
    // Total length, ID and header checksum: the kernel fills them in
    // (IP_HDRINCL); the total length is set anyway.
    let total = (p.len() + msg.len()) as u16;
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p.extend_from_slice(msg);
    p
}

fn case(kind: Kind, rng: &mut Rng) -> Case {
    let src = CLIENT_IP;
    let ours = [vip(1)];
    let prio = rng.range(1, 254);
    let valid = |rng: &mut Rng| {
        let n = rng.range(1, 3);
        let addrs: Vec<Ipv4Addr> = (0..n).map(|k| vip(k + 1)).collect();
        let int_cs = 1 + rng.below(4095) as u16;
        advert(src, VRID, rng.range(1, 254), n, int_cs, &addrs)
    };
    let mut ttl = 255;
    let msg = match kind {
        Kind::Truncated => {
            let mut m = valid(rng);
            m.truncate(rng.below(8) as usize);
            m
        }
        Kind::WrongVersion => {
            let mut m = valid(rng);
            let mut v = rng.range(0, 15);
            if v == 3 {
                v = 2;
            }
            m[0] = (v << 4) | 1;
            fix_checksum(&mut m, src);
            m
        }
        Kind::WrongType => {
            let mut m = valid(rng);
            let mut t = rng.range(0, 15);
            if t == 1 {
                t = 0;
            }
            m[0] = 0x30 | t;
            fix_checksum(&mut m, src);
            m
        }
        Kind::BadChecksum => {
            let mut m = valid(rng);
            break_checksum(&mut m, src, rng);
            m
        }
        Kind::Ttl254 => {
            ttl = 254;
            valid(rng)
        }
        Kind::OtherTtl => {
            ttl = rng.range(1, 254);
            valid(rng)
        }
        Kind::CountBeyondPayload => {
            let mut m = advert(src, VRID, prio, 1, 10, &ours);
            m[3] = rng.range(2, 255);
            fix_checksum(&mut m, src);
            m
        }
        Kind::CountZero => advert(src, VRID, prio, 0, 10, &[]),
        Kind::IntervalZero => advert(src, VRID, 255, 1, 0, &ours),
        Kind::VridZero => advert(src, 0, 255, 1, 10, &ours),
        Kind::OursPriority255BadChecksum => {
            let mut m = advert(src, VRID, 255, 1, 10, &ours);
            break_checksum(&mut m, src, rng);
            m
        }
        Kind::OtherVridPriority255 => {
            let mut vrid = rng.range(2, 255);
            if vrid == VRID {
                vrid = 2;
            }
            advert(src, vrid, 255, 1, 10, &ours)
        }
        Kind::RandomBytes => {
            let len = rng.below(80) as usize;
            let mut m: Vec<u8> = (0..len).map(|_| rng.byte()).collect();
            if classify(&m, 255, src).is_none() {
                m[0] ^= 0x80;
            }
            m
        }
        Kind::MutatedAdvert => {
            // One byte changed (XOR with a non-zero value): a single-byte
            // change can never keep a one's complement checksum right.
            let mut m = valid(rng);
            let i = rng.below(m.len() as u64) as usize;
            let mut x = rng.byte();
            if x == 0 {
                x = 0x01;
            }
            m[i] ^= x;
            m
        }
        Kind::IpHeaderIhlBelow5 => {
            let m = valid(rng);
            let mut p = ip_packet(src, 255, &m);
            p[0] = 0x40 | rng.range(0, 4);
            return Case {
                kind,
                ip: p[..rng.range(1, 19) as usize].to_vec(),
                msg: m,
                ttl,
            };
        }
        Kind::IpVersion5 => {
            let m = valid(rng);
            let mut p = ip_packet(src, 255, &m);
            p[0] = 0x55;
            return Case {
                kind,
                ip: p,
                msg: m,
                ttl,
            };
        }
    };
    Case {
        kind,
        ip: ip_packet(src, ttl, &msg),
        msg,
        ttl,
    }
}

/// A raw protocol-112 socket in the client namespace, IP_HDRINCL, out of
/// its `eth0`.
fn raw_sender(lab: &Lab) -> Socket {
    lab.client().run(|| {
        let s = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(112)))
            .expect("raw socket (root)");
        let one: libc::c_int = 1;
        // SAFETY: IP_HDRINCL with a live c_int of the size passed.
        let rc = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_HDRINCL,
                (&raw const one).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0, "IP_HDRINCL: {}", std::io::Error::last_os_error());
        s.bind_device(Some(b"eth0")).expect("SO_BINDTODEVICE eth0");
        s.set_multicast_if_v4(&CLIENT_IP).expect("IP_MULTICAST_IF");
        s.set_multicast_loop_v4(false).expect("IP_MULTICAST_LOOP");
        s
    })
}

fn send(sock: &Socket, ip: &[u8]) -> std::io::Result<usize> {
    sock.send_to(ip, &SockAddr::from(SocketAddr::new(IpAddr::V4(GROUP), 0)))
}

fn dns_answer(lab: &Lab) -> Result<Vec<Ipv4Addr>, String> {
    lab.client().run(|| {
        let dns = Dns::new(SocketAddr::new(IpAddr::V4(vip(1)), 53));
        dns.try_udp_from(Some(CLIENT_IP), &build_query(WWW, RecordType::A, None))
            .map(|m| a_records(&m))
    })
}

fn drops(n: &SextantNode, lab: &Lab) -> BTreeMap<String, u64> {
    let v = n.vrrp(lab).expect("/v1/vrrp");
    let mut m = BTreeMap::new();
    for d in v.dropped {
        *m.entry(d.reason).or_default() += d.count;
    }
    m
}

fn transitions(n: &SextantNode, lab: &Lab) -> Vec<sextant_api::VrrpTransition> {
    n.vrid(lab, VRID).map(|v| v.transitions).unwrap_or_default()
}

fn all_logs(lab: &Lab, n0: &SextantNode, n1: &SextantNode) -> String {
    format!(
        "--- node 0 ---\n{}\n/v1/vrrp {:?}\n--- node 1 ---\n{}\n/v1/vrrp {:?}\n",
        n0.log(),
        n0.vrrp(lab),
        n1.log(),
        n1.vrrp(lab)
    )
}

/// Node 0 master and alone with the VIP, node 1 backup.
fn is_settled(lab: &Lab, n0: &SextantNode, n1: &SextantNode) -> Result<(), String> {
    match (
        lab.owners(IpAddr::V4(vip(1))).as_slice(),
        n0.state(lab, VRID).as_deref(),
        n1.state(lab, VRID).as_deref(),
    ) {
        ([0], Some("MASTER"), Some("BACKUP")) => Ok(()),
        other => Err(format!("{other:?}")),
    }
}

#[test]
fn malformed_adverts_change_nothing_and_a_valid_one_does() {
    let Some(lab) = Lab::new("vrfz", 2) else {
        return;
    };
    let v1 = IpAddr::V4(vip(1));
    let a = Instance::new(VRID, 200, INTERVAL, v1).vmac(true);
    let b = Instance::new(VRID, 100, INTERVAL, v1).vmac(true);
    let mut n0 = SextantNode::start(&lab, Path::new(BIN), 0, &node_config(&[a], ""));
    // Node 0 alone first, so that node 1 never was master.
    eventually(
        Duration::from_secs(5),
        "node 0 master alone",
        || match (lab.owners(v1).as_slice(), n0.state(&lab, VRID).as_deref()) {
            ([0], Some("MASTER")) => Ok(()),
            other => Err(format!("{other:?}")),
        },
        || n0.log(),
    );
    let mut n1 = SextantNode::start(&lab, Path::new(BIN), 1, &node_config(&[b], ""));
    let logs = || all_logs(&lab, &n0, &n1);
    let settled = || is_settled(&lab, &n0, &n1);
    eventually(Duration::from_secs(3), "settled", settled, logs);
    always(Duration::from_millis(300), "settled", settled, logs);
    assert_eq!(
        dns_answer(&lab),
        Ok(vec![WWW_ANSWER.parse().unwrap()]),
        "{}",
        logs()
    );

    let before = [drops(&n0, &lab), drops(&n1, &lab)];
    let trans_before = [transitions(&n0, &lab), transitions(&n1, &lab)];
    let heard_before = n1.vrid(&lab, VRID).map_or(0, |v| v.adverts_received);

    // The fuzz run, paced (about 2 per ms) so that it tests the parser,
    // not the socket's receive buffer.
    let sock = raw_sender(&lab);
    let mut rng = Rng(SEED);
    let mut sent: BTreeMap<Kind, usize> = BTreeMap::new();
    let mut refused: BTreeMap<Kind, (usize, String)> = BTreeMap::new();
    let mut expect: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut expect_by_kind: BTreeMap<Kind, BTreeMap<&'static str, u64>> = BTreeMap::new();
    let t = Instant::now();
    for i in 0..PACKETS {
        let kind = KINDS[i % KINDS.len()];
        let c = case(kind, &mut rng);
        match send(&sock, &c.ip) {
            Ok(_) => {
                *sent.entry(c.kind).or_default() += 1;
                if reaches_node(c.kind) {
                    let reason = classify(&c.msg, c.ttl, CLIENT_IP)
                        .unwrap_or_else(|| panic!("case {i} ({kind:?}) is a valid advert"));
                    *expect.entry(reason).or_default() += 1;
                    *expect_by_kind
                        .entry(c.kind)
                        .or_default()
                        .entry(reason)
                        .or_default() += 1;
                }
            }
            Err(e) => {
                let r = refused.entry(c.kind).or_insert((0, e.to_string()));
                r.0 += 1;
            }
        }
        if i % 200 == 199 {
            // Still one owner, node 0, while it goes on.
            assert_eq!(
                lab.owners(v1),
                vec![0],
                "after {} packets\n{}",
                i + 1,
                logs()
            );
        } else {
            std::thread::sleep(Duration::from_micros(400));
        }
    }
    eprintln!("sent {PACKETS} hostile packets in {:?}", t.elapsed());
    eprintln!("sent by kind: {sent:?}");
    eprintln!("refused by the sending kernel: {refused:?}");
    eprintln!("expected drop reasons by kind: {expect_by_kind:#?}");

    // The sending kernel refuses an IP header shorter than 20 bytes
    // outright (raw_send_hdrinc: EINVAL), and nothing else.
    assert!(
        !sent.contains_key(&Kind::IpHeaderIhlBelow5)
            && refused.keys().all(|k| *k == Kind::IpHeaderIhlBelow5),
        "refused: {refused:?}"
    );
    for k in KINDS.iter().filter(|k| reaches_node(**k)) {
        assert!(
            sent.get(k).copied().unwrap_or(0) > 0,
            "{k:?}: none sent: {refused:?}"
        );
    }

    // The counters catch up with what was sent (each node reads its socket
    // in its own time).
    let grown = |n: &SextantNode, b: &BTreeMap<String, u64>| -> BTreeMap<String, u64> {
        drops(n, &lab)
            .into_iter()
            .map(|(r, c)| {
                let d = c - b.get(&r).copied().unwrap_or(0);
                (r, d)
            })
            .filter(|(_, d)| *d > 0)
            .collect()
    };
    let want: BTreeMap<String, u64> = expect.iter().map(|(r, c)| (r.to_string(), *c)).collect();
    for (i, n) in [&n0, &n1].into_iter().enumerate() {
        eventually(
            Duration::from_secs(2),
            &format!("node {i}'s drop counters grow by what was sent"),
            || {
                let g = grown(n, &before[i]);
                if g == want {
                    Ok(())
                } else {
                    Err(format!("grew {g:?}, want {want:?}"))
                }
            },
            logs,
        );
    }
    eprintln!("each node's drop counters grew by {want:?}");

    // Nothing changed: both run, no transition, node 0 still master alone,
    // node 1 heard no advert but node 0's, DNS answers.
    let log_text = logs();
    // The IP version 5 packets went out but no node's socket saw them (a
    // malformed IP header would be logged as a failed receive): the
    // receiving kernels dropped them in ip_rcv.
    for (i, n) in [&n0, &n1].into_iter().enumerate() {
        assert!(
            !n.log().contains("VRRP receive failed"),
            "node {i} got a malformed IP header\n{log_text}"
        );
    }
    assert!(n0.is_running(), "node 0 died\n{log_text}");
    assert!(n1.is_running(), "node 1 died\n{log_text}");
    let logs = || all_logs(&lab, &n0, &n1);
    let settled = || is_settled(&lab, &n0, &n1);
    assert_eq!(transitions(&n0, &lab), trans_before[0], "{}", logs());
    assert_eq!(transitions(&n1, &lab), trans_before[1], "{}", logs());
    settled().unwrap_or_else(|e| panic!("after the fuzz run: {e}\n{}", logs()));
    let n1v = n1.vrid(&lab, VRID).expect("node 1's VRID");
    assert_eq!(
        n1v.master.as_deref(),
        Some(lab.node(0).ip.to_string().as_str()),
        "node 1 still follows node 0: {n1v:?}"
    );
    let heard = n1v.adverts_received - heard_before;
    let elapsed_ms = t.elapsed().as_millis() as u64 + 500;
    assert!(
        heard <= elapsed_ms / 100 + 5,
        "node 1 heard {heard} adverts in about {elapsed_ms} ms: more than node 0 sent"
    );
    assert_eq!(
        dns_answer(&lab),
        Ok(vec![WWW_ANSWER.parse().unwrap()]),
        "{}",
        logs()
    );

    // The positive control: one valid advert with a higher priority (254)
    // from an address no node has: the master steps down at once.
    let control = advert(FAKE_ROUTER, VRID, 254, 1, 10, &[vip(1)]);
    assert_eq!(classify(&control, 255, FAKE_ROUTER), None);
    let t = Instant::now();
    send(&sock, &ip_packet(FAKE_ROUTER, 255, &control)).expect("send the control advert");
    let took = eventually(
        Duration::from_secs(2),
        "the master steps down for the higher-priority advert",
        || {
            let tr = transitions(&n0, &lab);
            let new = &tr[trans_before[0].len().min(tr.len())..];
            match new.first() {
                Some(x) if x.from == "MASTER" && x.to == "BACKUP" => Ok(()),
                _ => Err(format!("new transitions {new:?}")),
            }
        },
        logs,
    );
    eprintln!(
        "control advert: node 0 stepped down after {took:?}: {:?}",
        transitions(&n0, &lab).last()
    );
    // With the fake router silent, node 0 takes the VIP back.
    eventually(Duration::from_secs(3), "node 0 master again", settled, logs);
    eprintln!("node 0 master again {:?} after the control", t.elapsed());
}

#[test]
fn classifier_and_checksum() {
    let m = advert(CLIENT_IP, 1, 100, 1, 100, &[vip(1)]);
    assert_eq!(csum(&m, Some((CLIENT_IP, GROUP))), 0);
    assert_eq!(classify(&m, 255, CLIENT_IP), None);
    assert_eq!(classify(&m, 254, CLIENT_IP), Some("bad_ttl"));
    assert_eq!(classify(&m[..7], 255, CLIENT_IP), Some("short"));
    let mut rng = Rng(SEED);
    for k in KINDS.iter().filter(|k| reaches_node(**k)) {
        for _ in 0..50 {
            let c = case(*k, &mut rng);
            assert!(classify(&c.msg, c.ttl, CLIENT_IP).is_some(), "{k:?}");
        }
    }
}
