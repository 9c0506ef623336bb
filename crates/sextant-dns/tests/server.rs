//! The UDP and TCP servers on 127.0.0.1, end to end.

#![allow(unsafe_code)] // system calls in the test harness; each block says why it is sound

mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use common::QueryBuilder;
use common::model::{BIG_SERVICES, WWW_V4};
use hickory_proto::op::ResponseCode;
use sextant_dns::{
    DnsShared, TcpConfig, bind_tcp, bind_udp, serve_tcp, serve_tcp_with, spawn_udp_sockets,
};
use sextant_test_support::ci::cannot_run;
use sextant_test_support::dns::{answer_addrs, decode};

const A: u16 = 1;
const TIMEOUT: Duration = Duration::from_secs(5);

fn shared() -> Arc<DnsShared> {
    Arc::new(DnsShared::new(common::model::snapshot()))
}

fn udp_client() -> UdpSocket {
    let c = UdpSocket::bind("127.0.0.1:0").unwrap();
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    c
}

fn tcp_exchange(stream: &mut TcpStream, query: &[u8]) -> Vec<u8> {
    let mut framed = (query.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(query);
    stream.write_all(&framed).unwrap();
    read_framed(stream)
}

fn read_framed(stream: &mut TcpStream) -> Vec<u8> {
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut body).unwrap();
    body
}

fn tcp_connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s
}

/// Whether the server closed the connection (EOF or reset) within the
/// read timeout.
fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut b = [0u8; 1];
    match stream.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

#[test]
fn udp_and_tcp_end_to_end() {
    let shared = shared();
    // Two sockets in one SO_REUSEPORT group on a port the kernel picks.
    let sockets = bind_udp("127.0.0.1:0".parse().unwrap(), 2).unwrap();
    let udp_addr = sockets[0].local_addr().unwrap();
    assert_eq!(sockets[1].local_addr().unwrap(), udp_addr);
    let handles = spawn_udp_sockets(sockets, Arc::clone(&shared)).unwrap();
    assert_eq!(handles.len(), 2);

    let client = udp_client();
    // Garbage first: it must be dropped or answered, and never stop the
    // workers.
    client.send_to(&[0xff; 5], udp_addr).unwrap();
    client
        .send_to(b"\x00\x01\x80\x00garbage!", udp_addr)
        .unwrap();
    client.send_to(&[0x42; 40], udp_addr).unwrap();

    let q = QueryBuilder::new("www.example.com", A).build();
    client.send_to(&q, udp_addr).unwrap();
    let mut buf = [0u8; 4096];
    // The third garbage datagram has a header and gets an error response
    // (NOTIMP: its opcode is 8); skip it.
    let answer = loop {
        let (n, _) = client.recv_from(&mut buf).expect("an answer over UDP");
        let m = decode(&buf[..n]);
        if m.metadata.id == 0xbeef {
            break m;
        }
        assert_eq!(m.metadata.id, 0x4242);
        assert_eq!(m.metadata.response_code, ResponseCode::NotImp);
    };
    assert_eq!(answer_addrs(&answer), vec![IpAddr::from(WWW_V4)]);
    assert!(answer.metadata.authoritative);

    // The big answer truncates over UDP...
    let big = QueryBuilder::new("big.example.com", A).build();
    client.send_to(&big, udp_addr).unwrap();
    let (n, _) = client.recv_from(&mut buf).unwrap();
    assert!(decode(&buf[..n]).metadata.truncation);

    // ...and comes whole over TCP.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tcp_addr = rt.block_on(async {
        let listener = bind_tcp("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve_tcp(listener, Arc::clone(&shared)));
        addr
    });
    let mut stream = tcp_connect(tcp_addr);
    let m = decode(&tcp_exchange(&mut stream, &big));
    assert!(!m.metadata.truncation);
    assert_eq!(answer_addrs(&m).len(), BIG_SERVICES);
    // Same connection, next query.
    let m = decode(&tcp_exchange(&mut stream, &q));
    assert_eq!(answer_addrs(&m), vec![IpAddr::from(WWW_V4)]);

    let stats = shared.stats.snapshot();
    assert!(stats.queries_udp >= 5);
    assert_eq!(stats.queries_tcp, 2);
    assert!(stats.dropped >= 2);
    rt.shutdown_background();
}

#[test]
fn one_udp_worker_without_reuseport() {
    let shared = shared();
    let sockets = bind_udp("127.0.0.1:0".parse().unwrap(), 1).unwrap();
    let addr = sockets[0].local_addr().unwrap();
    spawn_udp_sockets(sockets, shared).unwrap();
    let client = udp_client();
    let q = QueryBuilder::new("www.example.com", A).build();
    client.send_to(&q, addr).unwrap();
    let mut buf = [0u8; 512];
    let (n, _) = client.recv_from(&mut buf).unwrap();
    assert_eq!(answer_addrs(&decode(&buf[..n])), vec![IpAddr::from(WWW_V4)]);
}

#[test]
fn spawn_udp_on_a_picked_free_port() {
    // Pick a free port, release it, then let spawn_udp bind its group.
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let handles = sextant_dns::spawn_udp(addr, 2, shared()).unwrap();
    assert_eq!(handles.len(), 2);
    let client = udp_client();
    client
        .send_to(&QueryBuilder::new("www.example.com", A).build(), addr)
        .unwrap();
    let mut buf = [0u8; 512];
    let (n, _) = client.recv_from(&mut buf).unwrap();
    assert_eq!(decode(&buf[..n]).metadata.id, 0xbeef);
}

#[test]
fn tcp_pipelining_limits_and_hostile_clients() {
    let shared = shared();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let config = TcpConfig {
        max_connections: 3,
        idle_timeout: Duration::from_millis(1500),
        max_query: 1024,
    };
    let addr = rt.block_on(async {
        let listener = bind_tcp("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve_tcp_with(listener, Arc::clone(&shared), config));
        addr
    });

    // Three queries in one write come back in order.
    let mut s = tcp_connect(addr);
    let mut batch = Vec::new();
    for (i, name) in ["www.example.com", "nope.example.com", "example.org"]
        .iter()
        .enumerate()
    {
        let mut q = QueryBuilder::new(name, A);
        q.id = i as u16;
        let q = q.build();
        batch.extend_from_slice(&(q.len() as u16).to_be_bytes());
        batch.extend_from_slice(&q);
    }
    s.write_all(&batch).unwrap();
    let codes: Vec<(u16, ResponseCode)> = (0..3)
        .map(|_| {
            let m = decode(&read_framed(&mut s));
            (m.metadata.id, m.metadata.response_code)
        })
        .collect();
    assert_eq!(
        codes,
        [
            (0, ResponseCode::NoError),
            (1, ResponseCode::NXDomain),
            (2, ResponseCode::Refused)
        ]
    );
    // A query whose length prefix arrives split across two writes.
    let q = QueryBuilder::new("www.example.com", A).build();
    s.write_all(&[0]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    s.write_all(&[q.len() as u8]).unwrap();
    s.write_all(&q).unwrap();
    assert_eq!(decode(&read_framed(&mut s)).metadata.id, 0xbeef);

    // A slow client (silent, or stuck mid-message) is closed after the idle
    // timeout while others are served.
    let mut silent = tcp_connect(addr);
    let mut partial = tcp_connect(addr);
    partial.write_all(&[0, 40, 1, 2, 3]).unwrap();
    let mut other = tcp_connect(addr);
    // Over the cap of 3 open connections (s, silent, partial): closed at once.
    assert!(
        closed_by_server(&mut other),
        "connection over the cap is closed"
    );
    assert_eq!(shared.stats.snapshot().tcp_rejected, 1);
    // Closing one frees its place (once the server has seen the close).
    drop(s);
    let answered = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        let mut fresh = tcp_connect(addr);
        let mut framed = (q.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&q);
        let mut len = [0u8; 2];
        fresh.write_all(&framed).is_ok() && fresh.read_exact(&mut len).is_ok()
    });
    assert!(answered, "a freed place is taken again");
    assert!(closed_by_server(&mut silent), "idle connection closed");
    assert!(
        closed_by_server(&mut partial),
        "trickling connection closed"
    );

    // An oversized length prefix and an unanswerable message close too.
    let mut big = tcp_connect(addr);
    big.write_all(&[0xff, 0xff]).unwrap();
    assert!(closed_by_server(&mut big));
    let mut runt = tcp_connect(addr);
    runt.write_all(&[0, 3, 1, 2, 3]).unwrap();
    assert!(closed_by_server(&mut runt));
    rt.shutdown_background();
}

#[test]
fn udp_bursts_are_all_answered_over_v4_and_v6() {
    for bind in ["127.0.0.1:0", "[::1]:0"] {
        let sockets = match bind_udp(bind.parse().unwrap(), 2) {
            Ok(sockets) => sockets,
            Err(e) => {
                // CI has an IPv6 loopback (::1 on lo): there this fails.
                cannot_run(&format!("cannot bind {bind} (no IPv6 loopback?): {e}"));
                continue;
            }
        };
        let addr = sockets[0].local_addr().unwrap();
        spawn_udp_sockets(sockets, shared()).unwrap();
        let client_addr = if addr.is_ipv6() {
            "[::1]:0"
        } else {
            "127.0.0.1:0"
        };
        let client = UdpSocket::bind(client_addr).unwrap();
        client.set_read_timeout(Some(TIMEOUT)).unwrap();
        // Many queries back to back, so the server receives them in batches.
        let count = 64u16;
        for id in 0..count {
            let mut q = QueryBuilder::new("www.example.com", A);
            q.id = id;
            client.send_to(&q.build(), addr).unwrap();
        }
        let mut seen = vec![false; usize::from(count)];
        let mut buf = [0u8; 512];
        for _ in 0..count {
            let (n, from) = client.recv_from(&mut buf).expect("every query answered");
            assert_eq!(from, addr, "answered from the address queried");
            let m = decode(&buf[..n]);
            assert_eq!(answer_addrs(&m), vec![IpAddr::from(WWW_V4)]);
            seen[usize::from(m.metadata.id)] = true;
        }
        assert!(seen.iter().all(|s| *s), "{bind}: one answer per query");
    }
}

/// A VRRP VIP is not on the host until this node becomes master for it:
/// the plain bind refuses it, the VIP bind takes it (IP_FREEBIND), so the
/// DNS listener exists on every node and answers where the VIP is local.
#[cfg(target_os = "linux")]
#[test]
fn a_vip_not_on_the_host_binds_only_with_the_vip_bind() {
    let vip: std::net::SocketAddr = "192.0.2.53:5353".parse().unwrap();
    let err = bind_udp(vip, 1).expect_err("192.0.2.53 is not on this host");
    assert_eq!(err.kind(), std::io::ErrorKind::AddrNotAvailable, "{err}");
    let sockets = sextant_dns::bind_udp_vip(vip, 2).expect("freebind");
    assert_eq!(sockets.len(), 2);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        assert!(bind_tcp(vip).is_err());
        let l = sextant_dns::bind_tcp_vip(vip).expect("freebind");
        assert_eq!(l.local_addr().unwrap(), vip);
    });
}

/// An integer socket option, read back with getsockopt.
#[cfg(target_os = "linux")]
fn int_sockopt(socket: &UdpSocket, level: i32, name: i32) -> i32 {
    use std::os::fd::AsRawFd;
    let mut value: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: value and len are live and sized for the kernel to write.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&raw mut value).cast(),
            &raw mut len,
        )
    };
    assert_eq!(rc, 0, "getsockopt: {}", std::io::Error::last_os_error());
    value
}

/// Answers never carry DF and ignore path-MTU updates, on IPv4 and IPv6
/// (a spoofed "fragmentation needed" cannot make them fragment).
#[cfg(target_os = "linux")]
#[test]
fn udp_sockets_omit_path_mtu_discovery() {
    let v4 = bind_udp("127.0.0.1:0".parse().unwrap(), 2).unwrap();
    for s in &v4 {
        assert_eq!(
            int_sockopt(s, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER),
            libc::IP_PMTUDISC_OMIT
        );
    }
    match bind_udp("[::1]:0".parse().unwrap(), 1) {
        Ok(v6) => assert_eq!(
            int_sockopt(&v6[0], libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER),
            libc::IPV6_PMTUDISC_OMIT
        ),
        Err(e) => cannot_run(&format!("no IPv6 loopback here: {e}")),
    }
}

/// The receive buffer is the one asked for (the kernel doubles it for its
/// bookkeeping, within net.core.rmem_max), and 0 keeps the kernel's default.
#[cfg(target_os = "linux")]
#[test]
fn the_udp_receive_buffer_is_configurable() {
    let read = |p: &str| -> usize { std::fs::read_to_string(p).unwrap().trim().parse().unwrap() };
    let rmem_default = read("/proc/sys/net/core/rmem_default");
    let rmem_max = read("/proc/sys/net/core/rmem_max");
    let buffer = |receive_buffer| {
        let options = sextant_dns::UdpOptions {
            receive_buffer,
            freebind: false,
        };
        let s = sextant_dns::bind_udp_with("127.0.0.1:0".parse().unwrap(), 1, options).unwrap();
        int_sockopt(&s[0], libc::SOL_SOCKET, libc::SO_RCVBUF) as usize
    };
    assert_eq!(buffer(0), rmem_default, "0: the kernel's default");
    let asked = 256 << 10;
    assert_eq!(buffer(asked), 2 * asked.min(rmem_max), "256 KiB asked");
    assert_eq!(
        buffer(sextant_dns::DEFAULT_RECEIVE_BUFFER),
        2 * sextant_dns::DEFAULT_RECEIVE_BUFFER.min(rmem_max),
        "the default"
    );
}
