//! The Linux edge for real, as root, in two network namespaces of the
//! test's own joined by a veth pair: A (10.9.0.1, the VRRP node) and B
//! (10.9.0.2, a peer that receives, captures and probes). Each test builds
//! its own pair, deleted on drop (also on panic).

#![allow(unsafe_code)] // system calls in the test harness; each block says why it is sound

use std::io;
use std::mem::size_of;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use sextant_test_support::ci::cannot_run;
use sextant_test_support::netns::Netns;
use sextant_vrrp::link::{Link, Vip};
use sextant_vrrp::packet::{Advert, ChecksumMode, Family, VRRP_GROUP_V4, VRRP_GROUP_V6};
use sextant_vrrp_net::{
    AdvertSocket, Interface, LinuxLink, LinuxLinkOptions, NetError, Received, interface,
};

const IF: &str = "v0";
const A4: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const B4: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);
const VIP4: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 100);

/// Two namespaces and the veth between them (`v0` on each side).
struct Pair {
    a: Arc<Netns>,
    b: Arc<Netns>,
}

fn sh(ns: &Netns, script: &str) {
    ns.exec_ok(&["sh", "-c", script]);
}

fn pair(tag: &str) -> Option<Pair> {
    if !std::path::Path::new("/proc/sys/net/ipv6").exists() {
        cannot_run("this test needs IPv6 in the kernel");
        return None;
    }
    let a = Netns::create(&format!("vrrp-{tag}-a"))?;
    let b = Netns::create(&format!("vrrp-{tag}-b"))?;
    for ns in [&a, &b] {
        // No DAD in the test namespaces: link-local addresses are usable
        // at once, so the tests need not wait a second for them.
        sh(
            ns,
            "echo 0 > /proc/sys/net/ipv6/conf/default/accept_dad; \
             echo 0 > /proc/sys/net/ipv6/conf/all/accept_dad",
        );
    }
    a.exec_ok(&[
        "ip", "link", "add", IF, "type", "veth", "peer", "name", IF, "netns", &b.name,
    ]);
    a.exec_ok(&["ip", "addr", "add", "10.9.0.1/24", "dev", IF]);
    b.exec_ok(&["ip", "addr", "add", "10.9.0.2/24", "dev", IF]);
    // The peer learns MACs from gratuitous ARP (off by default).
    sh(
        &b,
        &format!(
            "for c in all default {IF}; do echo 1 > /proc/sys/net/ipv4/conf/$c/arp_accept; done"
        ),
    );
    for ns in [&a, &b] {
        ns.exec_ok(&["ip", "link", "set", IF, "up"]);
    }
    let p = Pair { a, b };
    for ns in [&p.a, &p.b] {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let i = ns.run(|| interface(IF)).expect("read v0");
            if i.up && i.ipv4.is_some() && i.ipv6_link_local.is_some() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "v0 not ready in {}: {i:?}",
                ns.name
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
    Some(p)
}

/// Runs `f` in `ns` on a thread of its own; returns once `f` has called
/// the ready callback (its sockets are open), with the thread's handle.
fn spawn_in<R: Send + 'static>(
    ns: &Arc<Netns>,
    f: impl FnOnce(&dyn Fn()) -> R + Send + 'static,
) -> thread::JoinHandle<R> {
    let ns = ns.clone();
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        ns.run(move || {
            let ready = move || {
                let _ = tx.send(());
            };
            f(&ready)
        })
    });
    let _ = rx.recv_timeout(Duration::from_secs(5));
    h
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// One receive: the result and the VRRP bytes.
type Got = io::Result<(Received, Vec<u8>)>;

/// In `ns`: opens the advert socket of `family` on v0 and receives `n`
/// datagrams (each result with its bytes), 2 s at most each.
fn receive(
    ns: &Arc<Netns>,
    family: Family,
    n: usize,
    buf_len: usize,
) -> thread::JoinHandle<Vec<Got>> {
    spawn_in(ns, move |ready| {
        runtime().block_on(async move {
            let i = interface(IF).expect("v0");
            let sock = match family {
                Family::V4 => AdvertSocket::open_v4(&i),
                Family::V6 => AdvertSocket::open_v6(&i),
            }
            .expect("open advert socket");
            ready();
            let mut out = Vec::new();
            let mut buf = vec![0u8; buf_len];
            for _ in 0..n {
                let r = tokio::time::timeout(Duration::from_secs(2), sock.recv(&mut buf))
                    .await
                    .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "no advert")));
                out.push(r.map(|r| {
                    let bytes = buf[r.payload.clone()].to_vec();
                    (r, bytes)
                }));
            }
            out
        })
    })
}

fn advert(vrid: u8, addrs: Vec<IpAddr>) -> Advert {
    Advert {
        vrid,
        priority: 100,
        max_advert_int_cs: 100,
        addrs,
    }
}

fn group(family: Family) -> IpAddr {
    match family {
        Family::V4 => VRRP_GROUP_V4.into(),
        Family::V6 => VRRP_GROUP_V6.into(),
    }
}

fn advert_crosses_the_link(family: Family, tag: &str) {
    let Some(p) = pair(tag) else { return };
    let rx = receive(&p.b, family, 1, 1500);
    let (src, packet) = p.a.run(move || {
        runtime().block_on(async move {
            let i = interface(IF).expect("v0");
            let sock = match family {
                Family::V4 => AdvertSocket::open_v4(&i),
                Family::V6 => AdvertSocket::open_v6(&i),
            }
            .expect("open advert socket");
            let vip: IpAddr = match family {
                Family::V4 => VIP4.into(),
                Family::V6 => "2001:db8::100".parse().unwrap(),
            };
            let packet = advert(7, vec![vip]).encode(
                ChecksumMode::PseudoHeader,
                sock.source(),
                group(family),
            );
            sock.send(&packet).expect("send advert");
            (sock.source(), packet)
        })
    });
    let got = rx
        .join()
        .expect("receiver")
        .remove(0)
        .expect("advert received in B");
    let (r, bytes) = got;
    assert_eq!(r.from, src, "from A's primary address");
    assert_eq!(r.ttl, 255);
    assert_eq!(r.to, Some(group(family)));
    assert_eq!(bytes, packet, "payload intact");
    let decoded = Advert::decode(&bytes, r.ttl, r.from, group(family)).expect("decodes");
    assert_eq!(decoded.advert.vrid, 7);
}

#[test]
fn ipv4_advert_crosses_the_link_with_ttl_255() {
    advert_crosses_the_link(Family::V4, "adv4");
}

#[test]
fn ipv6_advert_crosses_the_link_with_hop_limit_255() {
    advert_crosses_the_link(Family::V6, "adv6");
}

fn addrs(ns: &Netns, dev: &str) -> String {
    String::from_utf8_lossy(&ns.exec_ok(&["ip", "addr", "show", "dev", dev]).stdout).into_owned()
}

#[test]
fn take_and_release_put_the_vips_on_the_interface_and_idempotently() {
    let Some(p) = pair("addr") else { return };
    let v4 = Vip::host(VIP4.into());
    let v6 = Vip::host("2001:db8::100".parse().unwrap());
    let a = p.a.clone();
    p.a.run(move || {
        let i = interface(IF).expect("v0");
        let mut link =
            LinuxLink::new(&i, 7, Family::V4, LinuxLinkOptions::default()).expect("link");
        assert_eq!(link.vip_interface(), IF);
        assert_eq!(link.mac(), i.mac);
        link.take_addresses(&[v4, v6]).expect("take");
        link.take_addresses(&[v4, v6])
            .expect("take again: idempotent");
        let shown = addrs(&a, IF);
        assert!(shown.contains("inet 10.9.0.100/32"), "{shown}");
        assert!(shown.contains("inet6 2001:db8::100/128"), "{shown}");
        assert!(!shown.contains("tentative"), "NODAD: {shown}");
        link.release_addresses(&[v4, v6]).expect("release");
        link.release_addresses(&[v4, v6])
            .expect("release again: idempotent");
        let shown = addrs(&a, IF);
        assert!(!shown.contains("10.9.0.100"), "{shown}");
        assert!(!shown.contains("2001:db8::100"), "{shown}");
        assert!(
            shown.contains("inet 10.9.0.1/24"),
            "own address kept: {shown}"
        );
        link.close().expect("close");
    });
}

#[test]
fn local_addresses_go_on_lo() {
    let Some(p) = pair("lo") else { return };
    let v4 = Vip::host(VIP4.into());
    p.a.run(|| {
        sextant_vrrp_net::add_local_address("lo", &v4).expect("add");
        sextant_vrrp_net::add_local_address("lo", &v4).expect("add again");
    });
    assert!(addrs(&p.a, "lo").contains("10.9.0.100/32"));
    p.a.run(|| {
        sextant_vrrp_net::remove_local_address("lo", &v4).expect("remove");
        sextant_vrrp_net::remove_local_address("lo", &v4).expect("remove again");
    });
    assert!(!addrs(&p.a, "lo").contains("10.9.0.100"));
    let err =
        p.a.run(|| sextant_vrrp_net::add_local_address("nosuch0", &v4))
            .unwrap_err();
    assert!(err.to_string().contains("nosuch0"), "{err}");
}

// ---- AF_PACKET probes in the peer -------------------------------------

const ETH_P_ALL: u16 = 0x0003;
const ETH_P_ARP: u16 = 0x0806;

/// An AF_PACKET socket bound to `dev` for `proto`, with a short read
/// timeout.
fn packet_socket(dev: &str, proto: u16) -> socket2::Socket {
    let sock = socket2::Socket::new(
        socket2::Domain::PACKET,
        socket2::Type::RAW,
        Some(socket2::Protocol::from(i32::from(proto.to_be()))),
    )
    .expect("AF_PACKET socket");
    let index = interface(dev).expect("dev").index;
    let sll = sockaddr_ll(index, proto);
    // SAFETY: `sll` is a live sockaddr_ll and its size is passed.
    let rc = unsafe {
        libc::bind(
            sock.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "bind AF_PACKET: {}", io::Error::last_os_error());
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    sock
}

fn sockaddr_ll(index: u32, proto: u16) -> libc::sockaddr_ll {
    // SAFETY: all-zero is a valid sockaddr_ll.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto.to_be();
    sll.sll_ifindex = index as i32;
    sll.sll_halen = 6;
    sll.sll_addr[..6].copy_from_slice(&[0xff; 6]);
    sll
}

fn send_frame(fd: RawFd, index: u32, frame: &[u8]) {
    let sll = sockaddr_ll(index, ETH_P_ARP);
    // SAFETY: buffers live for the call, sizes passed.
    let n = unsafe {
        libc::sendto(
            fd,
            frame.as_ptr().cast(),
            frame.len(),
            0,
            (&sll as *const libc::sockaddr_ll).cast(),
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    assert!(n > 0, "send ARP probe: {}", io::Error::last_os_error());
}

/// Frames read from `sock` for `dur`, those `keep` accepts.
fn frames(sock: &socket2::Socket, dur: Duration, keep: impl Fn(&[u8]) -> bool) -> Vec<Vec<u8>> {
    use std::io::Read;
    let deadline = Instant::now() + dur;
    let mut out = Vec::new();
    let mut buf = [0u8; 2048];
    while Instant::now() < deadline {
        if let Ok(n) = (&*sock).read(&mut buf)
            && keep(&buf[..n])
        {
            out.push(buf[..n].to_vec());
        }
    }
    out
}

/// In B: asks for `ip` by ARP and returns the sender MACs of the replies
/// heard within 300 ms.
fn arp_probe(b: &Netns, ip: Ipv4Addr) -> Vec<[u8; 6]> {
    b.run(|| {
        let me = interface(IF).expect("v0");
        let sock = packet_socket(IF, ETH_P_ARP);
        let mut f = Vec::new();
        f.extend_from_slice(&[0xff; 6]);
        f.extend_from_slice(&me.mac);
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&me.mac);
        f.extend_from_slice(&B4.octets());
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&ip.octets());
        send_frame(sock.as_raw_fd(), me.index, &f);
        frames(&sock, Duration::from_millis(300), |f| {
            f.len() >= 42
                && f[12..14] == [0x08, 0x06]
                && f[20..22] == [0, 2]
                && f[28..32] == ip.octets()
        })
        .into_iter()
        .map(|f| {
            let mut mac = [0u8; 6];
            mac.copy_from_slice(&f[22..28]);
            mac
        })
        .collect()
    })
}

/// In B, on a thread: captures for `dur` the frames `keep` accepts.
fn capture(
    b: &Arc<Netns>,
    dur: Duration,
    keep: impl Fn(&[u8]) -> bool + Send + 'static,
) -> thread::JoinHandle<Vec<Vec<u8>>> {
    spawn_in(b, move |ready| {
        let sock = packet_socket(IF, ETH_P_ALL);
        ready();
        frames(&sock, dur, keep)
    })
}

fn is_vrrp_v4(f: &[u8]) -> bool {
    f.len() > 34 && f[12..14] == [0x08, 0x00] && f[23] == 112
}

const VMAC4: [u8; 6] = [0, 0, 0x5e, 0, 1, 7];
const VMAC6: [u8; 6] = [0, 0, 0x5e, 0, 2, 7];

#[test]
fn virtual_mac_macvlan_answers_arp_only_while_master() {
    let Some(p) = pair("vmac") else { return };
    let vip = Vip::host(VIP4.into());
    let (tx, rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let (step_tx, step_rx) = mpsc::channel::<&'static str>();
    // The link lives on a thread in A, driven step by step.
    let a = spawn_in(&p.a, move |ready| {
        let i = interface(IF).expect("v0");
        let mut link = LinuxLink::new(&i, 7, Family::V4, LinuxLinkOptions { virtual_mac: true })
            .expect("link");
        assert_eq!(link.vip_interface(), "vrrp.7");
        assert_eq!(link.mac(), VMAC4);
        let parent_mac = i.mac;
        ready();
        for step in step_rx {
            match step {
                "take" => link.take_addresses(&[vip]).expect("take"),
                "release" => link.release_addresses(&[vip]).expect("release"),
                "close" => {
                    link.close().expect("close");
                    let _ = done_tx.send(());
                    return parent_mac;
                }
                _ => unreachable!(),
            }
            let _ = tx.send(());
        }
        parent_mac
    });
    let step = |s| {
        step_tx.send(s).unwrap();
        rx.recv_timeout(Duration::from_secs(5)).expect("step done");
    };
    let link =
        String::from_utf8_lossy(&p.a.exec_ok(&["ip", "-d", "link", "show", "vrrp.7"]).stdout)
            .into_owned();
    assert!(link.contains("link/ether 00:00:5e:00:01:07"), "{link}");
    assert!(link.contains("macvlan mode private"), "{link}");
    assert!(link.contains("state DOWN"), "down until master: {link}");
    let sysctl = |path: &str| {
        String::from_utf8_lossy(
            &p.a.exec_ok(&["cat", &format!("/proc/sys/net/ipv4/conf/{path}")])
                .stdout,
        )
        .trim()
        .to_owned()
    };
    assert_eq!(sysctl("v0/arp_ignore"), "1");
    assert_eq!(sysctl("v0/arp_filter"), "1");
    assert_eq!(sysctl("vrrp.7/rp_filter"), "0");
    assert_eq!(sysctl("vrrp.7/arp_ignore"), "1");
    assert!(arp_probe(&p.b, VIP4).is_empty(), "nobody holds the VIP yet");

    step("take");
    let shown = addrs(&p.a, "vrrp.7");
    assert!(
        shown.contains("inet 10.9.0.100/32"),
        "VIP on the macvlan: {shown}"
    );
    assert!(!addrs(&p.a, IF).contains("10.9.0.100"), "not on the parent");
    let macs = arp_probe(&p.b, VIP4);
    assert_eq!(macs, vec![VMAC4], "answered once, with the virtual MAC");

    step("release");
    assert!(arp_probe(&p.b, VIP4).is_empty(), "no answer after release");
    assert!(!addrs(&p.a, "vrrp.7").contains("10.9.0.100"));

    step_tx.send("close").unwrap();
    done_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("closed");
    a.join().expect("link thread");
    assert!(
        !p.a.exec(&["ip", "link", "show", "vrrp.7"]).status.success(),
        "macvlan deleted"
    );
    assert_eq!(sysctl("v0/arp_ignore"), "0", "parent's sysctls restored");
    assert_eq!(sysctl("v0/arp_filter"), "0");
}

#[test]
fn a_left_over_macvlan_is_taken_over_and_drop_deletes_it() {
    let Some(p) = pair("reuse") else { return };
    p.a.exec_ok(&[
        "ip", "link", "add", "link", IF, "name", "vrrp.8", "type", "macvlan",
    ]);
    p.a.exec_ok(&["ip", "link", "set", "vrrp.8", "up"]);
    p.a.run(|| {
        let i = interface(IF).expect("v0");
        let link = LinuxLink::new(&i, 8, Family::V4, LinuxLinkOptions { virtual_mac: true })
            .expect("takes over vrrp.8");
        let v = interface("vrrp.8").expect("vrrp.8");
        assert_eq!(v.mac, [0, 0, 0x5e, 0, 1, 8]);
        assert!(!v.up, "brought down");
        drop(link);
    });
    assert!(
        !p.a.exec(&["ip", "link", "show", "vrrp.8"]).status.success(),
        "deleted on drop"
    );
}

#[test]
fn announce_makes_the_peer_learn_the_virtual_mac() {
    let Some(p) = pair("garp") else { return };
    let vip4 = Vip::host(VIP4.into());
    let vip6 = Vip::host("2001:db8::100".parse().unwrap());
    let na = capture(&p.b, Duration::from_millis(600), |f| {
        // IPv6, ICMPv6, type 136
        f.len() >= 14 + 40 + 32 && f[12..14] == [0x86, 0xdd] && f[20] == 58 && f[54] == 136
    });
    p.a.run(|| {
        let i = interface(IF).expect("v0");
        let mut l4 = LinuxLink::new(&i, 7, Family::V4, LinuxLinkOptions { virtual_mac: true })
            .expect("v4 link");
        let mut l6 = LinuxLink::new(&i, 7, Family::V6, LinuxLinkOptions { virtual_mac: true })
            .expect("v6 link");
        assert_eq!(l6.vip_interface(), "vrrp6.7");
        l4.take_addresses(&[vip4]).expect("take v4");
        l6.take_addresses(&[vip6]).expect("take v6");
        l4.announce(&[vip4]).expect("GARP");
        l6.announce(&[vip6]).expect("NA");
        // Keep the links until the capture is over.
        thread::sleep(Duration::from_millis(300));
        l4.close().expect("close v4");
        l6.close().expect("close v6");
    });
    let neigh =
        String::from_utf8_lossy(&p.b.exec_ok(&["ip", "neigh", "show", "10.9.0.100"]).stdout)
            .into_owned();
    assert!(
        neigh.contains("00:00:5e:00:01:07"),
        "B learnt the virtual MAC: {neigh:?}"
    );
    let na = na.join().expect("capture");
    let target: Ipv6Addr = "2001:db8::100".parse().unwrap();
    let frame = na
        .iter()
        .find(|f| f[62..78] == target.octets())
        .unwrap_or_else(|| panic!("an NA for the VIP: {na:?}"));
    assert_eq!(frame[6..12], VMAC6, "Ethernet source: the virtual MAC");
    assert_eq!(frame[21], 255, "hop limit");
    assert_eq!(
        frame[38..54],
        Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1).octets()
    );
    assert_eq!(
        frame[58] & 0xe0,
        0x20,
        "override, not solicited, not router"
    );
    assert_eq!(
        frame[78..86],
        [2, 1, 0, 0, 0x5e, 0, 2, 7],
        "target link-layer address"
    );
}

#[test]
fn adverts_leave_with_the_virtual_mac_while_master() {
    let Some(p) = pair("src") else { return };
    let vip = Vip::host(VIP4.into());
    let cap = capture(&p.b, Duration::from_millis(500), is_vrrp_v4);
    let parent_mac = p.a.run(|| {
        let i: Interface = interface(IF).expect("v0");
        let mut link = LinuxLink::new(&i, 7, Family::V4, LinuxLinkOptions { virtual_mac: true })
            .expect("link");
        assert_eq!(link.source(), IpAddr::V4(A4));
        let packet = advert(7, vec![VIP4.into()]).encode(
            ChecksumMode::PseudoHeader,
            link.source(),
            VRRP_GROUP_V4.into(),
        );
        link.take_addresses(&[vip]).expect("take");
        link.send_advert(&packet).expect("advert as master");
        link.release_addresses(&[vip]).expect("release");
        link.send_advert(&packet).expect("advert after release");
        link.close().expect("close");
        i.mac
    });
    let frames = cap.join().expect("capture");
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert_eq!(
        frames[0][6..12],
        VMAC4,
        "master's advert from the virtual MAC"
    );
    assert_eq!(frames[0][14 + 8], 255, "TTL");
    assert_eq!(
        frames[0][26..30],
        A4.octets(),
        "source: A's primary address"
    );
    assert_eq!(
        frames[1][6..12],
        parent_mac,
        "macvlan down: from the parent"
    );
}

#[test]
fn malformed_input_is_an_error_not_a_panic() {
    let Some(p) = pair("bad") else { return };
    // A buffer too short for the datagram (truncated IPv4 header), then a
    // datagram whose VRRP part is 3 bytes, then one with IP options.
    let rx = receive(&p.b, Family::V4, 3, 30);
    p.a.run(|| {
        let rt = runtime();
        let _enter = rt.enter();
        let i = interface(IF).expect("v0");
        let sock = AdvertSocket::open_v4(&i).expect("advert socket");
        sock.send(&[0u8; 40]).expect("send long");
        thread::sleep(Duration::from_millis(20));
        sock.send(&[0x31, 7, 100]).expect("send short");
        thread::sleep(Duration::from_millis(20));
        // IP_HDRINCL: a header with 4 bytes of options (IHL 6).
        let raw = socket2::Socket::new(
            socket2::Domain::IPV4,
            socket2::Type::RAW,
            Some(socket2::Protocol::from(112)),
        )
        .unwrap();
        raw.set_header_included_v4(true).unwrap();
        raw.bind_device(Some(IF.as_bytes())).unwrap();
        let mut pkt = vec![0x46, 0, 0, 0, 0, 0, 0, 0, 255, 112, 0, 0];
        pkt.extend_from_slice(&A4.octets());
        pkt.extend_from_slice(&VRRP_GROUP_V4.octets());
        pkt.extend_from_slice(&[1, 1, 1, 0]); // NOP NOP NOP EOL
        pkt.extend_from_slice(&[0x31, 7, 100, 0]);
        let to = socket2::SockAddr::from(std::net::SocketAddrV4::new(VRRP_GROUP_V4, 0));
        raw.send_to(&pkt, &to).expect("send with options");
    });
    let got = rx.join().expect("receiver");
    let e = got[0].as_ref().expect_err("too long for the buffer");
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    let (r, bytes) = got[1].as_ref().expect("short VRRP part still received");
    assert_eq!(bytes, &[0x31, 7, 100]);
    assert!(Advert::decode(bytes, r.ttl, r.from, VRRP_GROUP_V4.into()).is_err());
    let (r, bytes) = got[2].as_ref().expect("with IP options");
    assert_eq!(bytes, &[0x31, 7, 100, 0], "options stripped by IHL");
    assert_eq!(r.ttl, 255);
}

#[test]
fn errors_name_the_interface_and_the_operation() {
    let Some(p) = pair("err") else { return };
    let e = p.a.run(|| interface("nosuch0")).unwrap_err();
    assert!(matches!(e, NetError::NoSuchInterface { .. }));
    assert!(e.to_string().contains("nosuch0"), "{e}");
    let e = p.a.run(|| {
        let mut i = interface(IF).expect("v0");
        i.ipv4 = None;
        AdvertSocket::open_v4(&i).err().expect("no source address")
    });
    assert!(e.to_string().contains("v0 has no IPv4 address"), "{e}");
    let e =
        p.a.run(|| {
            let i = interface(IF).expect("v0");
            LinuxLink::new(&i, 0, Family::V4, LinuxLinkOptions::default()).err()
        })
        .expect("VRID 0 refused");
    assert!(e.to_string().contains("VRID 0"), "{e}");
}

#[test]
fn ipv6_adverts_leave_with_the_virtual_mac_from_the_link_local_address() {
    let Some(p) = pair("src6") else { return };
    let vip = Vip::host("2001:db8::100".parse().unwrap());
    let cap = capture(&p.b, Duration::from_millis(500), |f| {
        f.len() > 54 && f[12..14] == [0x86, 0xdd] && f[20] == 112
    });
    let (parent, source) = p.a.run(|| {
        let i: Interface = interface(IF).expect("v0");
        let mut link = LinuxLink::new(&i, 7, Family::V6, LinuxLinkOptions { virtual_mac: true })
            .expect("link");
        let packet = advert(7, vec![vip.ip]).encode(
            ChecksumMode::PseudoHeader,
            link.source(),
            VRRP_GROUP_V6.into(),
        );
        link.take_addresses(&[vip]).expect("take");
        link.send_advert(&packet).expect("advert as master");
        link.release_addresses(&[vip]).expect("release");
        link.close().expect("close");
        let source = link_source(&i);
        (i, source)
    });
    let frames = cap.join().expect("capture");
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0][6..12], VMAC6, "from the virtual MAC");
    assert_ne!(frames[0][6..12], parent.mac);
    assert_eq!(frames[0][21], 255, "hop limit");
    assert_eq!(
        frames[0][22..38],
        source.octets(),
        "from A's link-local address"
    );
}

fn link_source(i: &Interface) -> Ipv6Addr {
    i.ipv6_link_local.expect("link-local")
}

#[test]
fn interface_up_follows_the_carrier() {
    let Some(p) = pair("up") else { return };
    assert!(p.a.run(|| interface(IF)).expect("v0").up);
    // The peer's end down: A's end loses its carrier (IFF_RUNNING).
    p.b.exec_ok(&["ip", "link", "set", IF, "down"]);
    // The kernel reports carrier changes with a delay (linkwatch, up to 1 s).
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let i = p.a.run(|| interface(IF)).expect("v0");
        if !i.up {
            break;
        }
        assert!(Instant::now() < deadline, "still up without carrier: {i:?}");
        thread::sleep(Duration::from_millis(50));
    }
    p.a.exec_ok(&["ip", "link", "set", IF, "down"]);
    assert!(!p.a.run(|| interface(IF)).expect("v0").up);
}
