//! Attacks on metric exchange by a neighbour (issue 38, docs/security.md),
//! each performed against real `sextant serve` processes: two parent sites
//! that share one password (`-sitePassword`, as docs/mep.md's examples
//! show) and sync their configuration automatically, each answering
//! `app.example.com` with both sites' services.
//!
//! * **The relay.** X knows no password but can open TCP connections from
//!   either site's address. It asks P1 for a proof of P2's challenge and
//!   hands it to P2 as P1's, then pushes a forced configuration that names
//!   its own address. Protocol 1 logged X in and both parents answered X's
//!   address; protocol 2's acceptor proves nothing to a peer that has not
//!   proven itself, so X has nothing to relay.
//! * **The injection.** X sits on the path of the genuine link (an
//!   iptables DNAT inside a namespace the test makes sends P1's connection
//!   through X's relay) and, once the handshake is done, adds a frame of
//!   its own: the same forced configuration. Protocol 1 applied it; sealed
//!   frames end the session instead, and the link comes back.
//!
//! What is checked is what a client and an operator see: the answers, the
//! files, the logs, `/v1/sites`. No time is asserted; windows are bounded.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use sextant_mep::frame::{self, DEFAULT_MAX_FRAME};
use sextant_mep::message::{ConfigUpdate, ConfigVersion, Message};
use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));
const NAME: &str = "app.example.com";
/// The address X wants clients sent to.
const ATTACKER: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 66);
/// How long X's work is watched for an effect: three keepalive timeouts.
const WATCH: Duration = Duration::from_secs(3);

/// Site `me`'s file as its operator writes it: both parents with one
/// password, automatic config sync, a round-robin vserver over one service
/// per site (no monitor: UP as its site reports it). `svc_of` gives each
/// site's service address.
fn site_file(sites: &Sites, me: usize, svc_of: impl Fn(usize) -> Ipv4Addr) -> String {
    let mut c = sites.preamble(me, "MEP attack", " -sitePassword s3cret");
    c += "set gslb parameter -automaticConfigSync ENABLED -MEPKeepAliveTimeout 1000 MSEC\n\
          add gslb vserver vs_app HTTP -lbMethod ROUNDROBIN\n";
    for (k, name) in sites.names.iter().enumerate() {
        c += &format!(
            "add gslb service svc_{name} {} HTTP 80 -siteName {name}\n\
             bind gslb vserver vs_app -serviceName svc_{name}\n",
            svc_of(k)
        );
    }
    c += &format!("bind gslb vserver vs_app -domainName {NAME} -TTL 5\n");
    c
}

/// X's configuration push: the shared part of `victim`'s own file with
/// `victim`'s service moved to X's address, as a forced update from
/// `origin` with a high incarnation.
fn forged_update(sites: &Sites, victim: usize, origin: &str) -> Message {
    let file = site_file(sites, victim, |k| {
        if k == victim { ATTACKER } else { sites.svc[k] }
    });
    let shared = sextant_config::sync_text::split(Path::new("forged.conf"), &file)
        .expect("the forged file splits")
        .shared;
    Message::ConfigUpdate(ConfigUpdate {
        transfer: 7,
        version: ConfigVersion {
            incarnation: 1_000,
            origin: origin.into(),
            digest: sextant_config_sync::digest(&shared),
        },
        base: None,
        part: 0,
        last: true,
        text: shared,
        ops: Vec::new(),
        forced: true,
        files: Vec::new(),
        lineage: Vec::new(),
    })
}

/// Every address `at` answers for the name in a few queries.
fn answers(at: &SiteServer) -> Vec<Ipv4Addr> {
    let mut all = Vec::new();
    for _ in 0..4 {
        all.extend(at.try_query_a(NAME).unwrap_or_default());
    }
    all
}

/// Over [`WATCH`], no site answers X's address.
fn never_steered(sites: &[&SiteServer], what: &str) {
    let end = Instant::now() + WATCH;
    while Instant::now() < end {
        for s in sites {
            let got = answers(s);
            assert!(
                !got.contains(&ATTACKER),
                "{what}: {} answers X's address {ATTACKER}: {got:?}\n{}",
                s.name,
                s.log()
            );
        }
        thread::sleep(Duration::from_millis(100));
    }
}

/// X's end of a MEP connection: frames in and out, undecoded beyond the
/// plain frame codec (X has no keys).
struct Wire {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Wire {
    fn connect(from: IpAddr, to: SocketAddr) -> Wire {
        Wire {
            stream: tcp_from(from, 0, to).expect("X connects"),
            buf: Vec::new(),
        }
    }

    /// The next message, if one comes within `within` and decodes.
    fn next(&mut self, within: Duration) -> Option<Message> {
        let end = Instant::now() + within;
        loop {
            match frame::decode(&self.buf, DEFAULT_MAX_FRAME) {
                Ok(Some((m, n))) => {
                    self.buf.drain(..n);
                    return Some(m);
                }
                Ok(None) => {}
                Err(_) => return None,
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            let _ = self
                .stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))));
            let mut b = [0u8; 4096];
            match self.stream.read(&mut b) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&b[..n]),
            }
        }
    }

    fn send(&mut self, m: &Message) {
        let bytes = frame::encode_to_vec(m, DEFAULT_MAX_FRAME).expect("encode");
        let _ = self.stream.write_all(&bytes);
    }
}

#[test]
fn a_relayed_handshake_logs_nobody_in() {
    let net = Net::for_sites("mep_relay", 2);
    let sites = Sites::host(&net, &["P1", "P2"]);
    let scratch = net.scratch();
    let running = sites.start(SEXTANT, &scratch, |k| {
        site_file(&sites, k, |j| sites.svc[j])
    });
    wait_mesh_up(&running);
    let (p1, p2) = (&running[0], &running[1]);
    eventually_ok(EVENTUALLY, "P2 answers both sites", || {
        let got = answers(p2);
        if sites.svc.iter().all(|s| got.contains(s)) {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    });
    let file_before = std::fs::read_to_string(&p2.config).expect("P2's file");
    let mep = |site: &str| SocketAddr::new(sites.ip(site), MEP_PORT);

    // X as P1 at P2, and as P2 at P1: each says Hello first.
    let mut as_p1 = Wire::connect(sites.ip("P1"), mep("P2"));
    let mut as_p2 = Wire::connect(sites.ip("P2"), mep("P1"));
    let Some(Message::Hello(p2_hello)) = as_p1.next(Duration::from_secs(5)) else {
        panic!("P2 sends its Hello first");
    };
    let Some(Message::Hello(p1_hello)) = as_p2.next(Duration::from_secs(5)) else {
        panic!("P1 sends its Hello first");
    };
    // P2's challenge handed to P1, as if X were P2.
    as_p2.send(&Message::Hello(p2_hello));
    let from_p1 = as_p2.next(Duration::from_secs(2));
    // X presents itself to P2 as P1, with whatever P1 gave it.
    as_p1.send(&Message::Hello(p1_hello));
    if let Some(Message::AuthProof(proof)) = &from_p1 {
        as_p1.send(&Message::AuthProof(proof.clone()));
    }
    let _ = as_p1.next(Duration::from_secs(1));
    // Whatever P2 said, X pushes its configuration.
    as_p1.send(&forged_update(&sites, 1, "P1"));

    never_steered(&[p1, p2], "after the relay");
    assert_eq!(
        std::fs::read_to_string(&p2.config).expect("P2's file"),
        file_before,
        "P2's file changed"
    );
    assert!(
        !matches!(from_p1, Some(Message::AuthProof(_))),
        "P1 proved itself to a connection that had proven nothing: {from_p1:?}"
    );
    // The genuine link never noticed.
    for (at, other) in [(p1, "P2"), (p2, "P1")] {
        at.expect_mep(other, "UP")
            .unwrap_or_else(|e| panic!("{}: {e}", at.name));
    }
}

/// A relay between `listen` and `upstream` that connects upstream from
/// `source` (ports from `ports` up, which the DNAT rule leaves alone) and
/// passes every frame on, adding `inject` once when asked and a frame
/// boundary comes.
struct PathRelay {
    inject_now: Arc<AtomicBool>,
    injected: Arc<AtomicUsize>,
    sessions: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl PathRelay {
    fn start(
        ns: &Arc<Netns>,
        listen: SocketAddr,
        upstream: SocketAddr,
        source: IpAddr,
        ports: u16,
        inject: Vec<u8>,
    ) -> PathRelay {
        let listener = ns.run(|| TcpListener::bind(listen).expect("relay listens"));
        listener.set_nonblocking(true).expect("nonblocking");
        let relay = PathRelay {
            inject_now: Arc::new(AtomicBool::new(false)),
            injected: Arc::new(AtomicUsize::new(0)),
            sessions: Arc::new(AtomicUsize::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let (inject_now, injected, sessions, stop) = (
            relay.inject_now.clone(),
            relay.injected.clone(),
            relay.sessions.clone(),
            relay.stop.clone(),
        );
        let ns = ns.clone();
        thread::spawn(move || {
            let mut n = 0u16;
            // Bounded: until the test ends, and 100 sessions at most.
            while !stop.load(Ordering::SeqCst) && n < 100 {
                let down = match listener.accept() {
                    Ok((down, _)) => down,
                    Err(_) => {
                        thread::sleep(Duration::from_millis(20));
                        continue;
                    }
                };
                let port = ports + n;
                n += 1;
                let _ = down.set_nonblocking(false);
                let Ok(up) = ns.run(|| tcp_from(source, port, upstream)) else {
                    continue;
                };
                sessions.fetch_add(1, Ordering::SeqCst);
                let (Ok(down2), Ok(up2)) = (down.try_clone(), up.try_clone()) else {
                    continue;
                };
                thread::spawn(move || pump(up2, down2, None));
                let (inject, inject_now, injected) =
                    (inject.clone(), inject_now.clone(), injected.clone());
                thread::spawn(move || pump(down, up, Some((inject, inject_now, injected))));
            }
        });
        relay
    }
}

impl Drop for PathRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

type Injection = (Vec<u8>, Arc<AtomicBool>, Arc<AtomicUsize>);

/// Copies whole frames from `from` to `to` (by their length prefix); with
/// `inject`, writes its frame once at a boundary after it is asked for.
fn pump(mut from: TcpStream, mut to: TcpStream, inject: Option<Injection>) {
    let mut buf = Vec::new();
    let mut b = [0u8; 16 * 1024];
    let _ = from.set_read_timeout(Some(Duration::from_millis(100)));
    loop {
        if let Some((frame, now, done)) = &inject
            && now.swap(false, Ordering::SeqCst)
        {
            if to.write_all(frame).is_err() {
                return;
            }
            done.fetch_add(1, Ordering::SeqCst);
        }
        match from.read(&mut b) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&b[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(_) => break,
        }
        while buf.len() >= 4 {
            let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize + 4;
            if buf.len() < len {
                break;
            }
            if to.write_all(&buf[..len]).is_err() {
                return;
            }
            buf.drain(..len);
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Both);
}

#[test]
fn a_frame_injected_on_the_path_is_refused_and_the_link_recovers() {
    let Some(ns) = Netns::create("mepinject") else {
        return;
    };
    let scratch = Scratch::new("mep_inject");
    let ips = vec![Ipv4Addr::new(127, 0, 1, 1), Ipv4Addr::new(127, 0, 1, 2)];
    let svc = vec![Ipv4Addr::new(192, 0, 2, 10), Ipv4Addr::new(192, 0, 2, 20)];
    let sites = Sites::new(&["P1", "P2"], ips.clone(), svc);
    // Each site's connection to the other goes through X's relay, which
    // connects on from the site's own address (ports 61000..61099, which
    // the rule leaves alone).
    let forged =
        frame::encode_to_vec(&forged_update(&sites, 1, "P1"), DEFAULT_MAX_FRAME).expect("encode");
    let mut relays = Vec::new();
    for (from, to, relay_ip) in [(0, 1, "127.0.9.1"), (1, 0, "127.0.9.2")] {
        let listen = SocketAddr::new(relay_ip.parse().unwrap(), MEP_PORT);
        ns.exec_ok(&[
            "iptables",
            "-t",
            "nat",
            "-A",
            "OUTPUT",
            "-p",
            "tcp",
            "-s",
            &ips[from].to_string(),
            "-d",
            &ips[to].to_string(),
            "--dport",
            &MEP_PORT.to_string(),
            "!",
            "--sport",
            "61000:61099",
            "-j",
            "DNAT",
            "--to-destination",
            &listen.to_string(),
        ]);
        relays.push(PathRelay::start(
            &ns,
            listen,
            SocketAddr::new(IpAddr::V4(ips[to]), MEP_PORT),
            IpAddr::V4(ips[from]),
            61000,
            forged.clone(),
        ));
    }
    let running = sites.start_in(SEXTANT, &scratch, Some(ns.clone()), |k| {
        site_file(&sites, k, |j| sites.svc[j])
    });
    wait_mesh_up(&running);
    let (p1, p2) = (&running[0], &running[1]);
    let on_path: Vec<&PathRelay> = relays
        .iter()
        .filter(|r| r.sessions.load(Ordering::SeqCst) > 0)
        .collect();
    assert!(
        !on_path.is_empty(),
        "no link went through X's relay: {}",
        ns.exec(&["iptables", "-t", "nat", "-L", "-n", "-v"])
            .stdout
            .iter()
            .map(|&b| b as char)
            .collect::<String>()
    );
    eventually_ok(EVENTUALLY, "P2 answers both sites", || {
        let got = answers(p2);
        if sites.svc.iter().all(|s| got.contains(s)) {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    });
    let file_before = std::fs::read_to_string(&p2.config).expect("P2's file");
    // X adds its frame to the genuine, authenticated stream.
    for r in &on_path {
        r.inject_now.store(true, Ordering::SeqCst);
    }
    eventually(EVENTUALLY, "X's frame went in", || {
        on_path
            .iter()
            .all(|r| r.injected.load(Ordering::SeqCst) > 0)
    });
    never_steered(&[p1, p2], "after the injection");
    assert_eq!(
        std::fs::read_to_string(&p2.config).expect("P2's file"),
        file_before,
        "P2's file changed"
    );
    // The receiving end said why it dropped the session, and the link is
    // back (through the same relay: X can cut, not steer).
    let receiver = if relays[0].injected.load(Ordering::SeqCst) > 0 {
        p2
    } else {
        p1
    };
    eventually(EVENTUALLY, "the log names the integrity check", || {
        receiver.log().contains("integrity check")
    });
    wait_mesh_up(&running);
}

/// X, from a site's address and without the password, opens 400 MEP
/// connections at once and sends on each most of a 1 MiB frame. Protocol
/// 1 buffered every one (a node went from 77 MB to 587 MB); now a frame
/// before authentication is 4 KiB at most and only 4 connections per
/// address may wait to authenticate, so the node holds little, and its
/// genuine link stays UP.
#[test]
fn unauthenticated_connections_cannot_make_a_node_hold_their_frames() {
    const CONNECTIONS: usize = 400;
    const FRAME: usize = 1 << 20;
    let net = Net::for_sites("mep_prealloc", 2);
    let sites = Sites::host(&net, &["P1", "P2"]);
    let scratch = net.scratch();
    let running = sites.start(SEXTANT, &scratch, |k| {
        site_file(&sites, k, |j| sites.svc[j])
    });
    wait_mesh_up(&running);
    let p2 = &running[1];
    let pid = p2.pid().expect("P2 runs") as u32;
    let before = rss_kib(pid).expect("P2's VmRSS");
    raise_own_open_files(4 * CONNECTIONS as u64);

    // Most of a frame each: its length, then all but one byte of it, in
    // 64 KiB writes (bounded: 400 × 1 MiB at most).
    let target = SocketAddr::new(sites.ip("P2"), MEP_PORT);
    let mut held = Vec::new();
    let chunk = vec![b'x'; 64 * 1024];
    for _ in 0..CONNECTIONS {
        let Ok(mut s) = tcp_from(sites.ip("P1"), 0, target) else {
            continue;
        };
        let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
        let _ = s.write_all(&(FRAME as u32).to_be_bytes());
        let _ = s.write_all(&[sextant_mep::message::PROTOCOL_VERSION, 3]);
        let mut sent = 6;
        while sent < FRAME - 1 {
            let n = chunk.len().min(FRAME - 1 - sent);
            if s.write_all(&chunk[..n]).is_err() {
                break;
            }
            sent += n;
        }
        held.push(s);
    }
    thread::sleep(Duration::from_millis(500));
    let during = rss_kib(pid).expect("P2's VmRSS");
    eprintln!(
        "P2 VmRSS: {before} KiB before, {during} KiB with {} connections held ({} MiB sent at most)",
        held.len(),
        held.len()
    );
    assert!(
        during < before + 64 * 1024,
        "P2 grew from {before} KiB to {during} KiB while {} unauthenticated connections held most of a 1 MiB frame each",
        held.len()
    );
    assert!(
        proc_status(pid, "State:").is_some_and(|s| !s.starts_with('Z')),
        "P2 died"
    );
    for (at, other) in [(&running[0], "P2"), (p2, "P1")] {
        at.expect_mep(other, "UP")
            .unwrap_or_else(|e| panic!("{}: {e}", at.name));
    }
    drop(held);
}
