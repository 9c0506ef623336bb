//! An LDNS emulator: a DNS responder over UDP and TCP whose answers can be
//! delayed per *source address*, for the dynamic RTT tests.
//!
//! The test kernel has no netem, so the "distance" between a site and a
//! resolver is made here: every site probes from its own loopback address,
//! and the emulator holds its answers to that address back by the delay set
//! for it. A delayed UDP answer waits in a scheduler thread's queue, so it
//! holds up nobody else's; a TCP connection has its own thread, which sleeps.
//!
//! Answers echo the query's ID and question with QR=1 and the configured
//! rcode, and carry no records: the probes only time the round trip. Input
//! is untrusted and handled with checked reads only; anything that is not a
//! DNS query is ignored (and not counted).
//!
//! For the path figures of datacenter mode, a test can also set, per source
//! address, the IP TTL (IPv6: hop limit) its answers leave with
//! ([`LdnsEmulator::set_ttl`]: "this resolver is N hops from that site")
//! and a share of its queries that go unanswered
//! ([`LdnsEmulator::set_loss`], deterministic). By default answers leave
//! with the system's TTL and none is dropped.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How often the threads look at the stop flag.
const POLL: Duration = Duration::from_millis(20);
/// At most this many delayed UDP answers wait; more are dropped.
const MAX_PENDING: usize = 10_000;
/// At most this many TCP connections are served at once; more are closed.
const MAX_CONNECTIONS: usize = 64;
/// A TCP connection idle this long is closed.
const IDLE: Duration = Duration::from_secs(5);

/// A DNS responder for LDNS probes on one address, UDP and TCP on the same
/// port. Dropping it stops its threads and closes the port.
pub struct LdnsEmulator {
    addr: SocketAddr,
    state: Arc<State>,
    threads: Vec<JoinHandle<()>>,
}

/// What the threads share.
struct State {
    stop: AtomicBool,
    rcode: AtomicU8,
    delays: Mutex<HashMap<IpAddr, Duration>>,
    /// Per source: the TTL its answers are sent with.
    ttls: Mutex<HashMap<IpAddr, u8>>,
    /// Per source: the share of its queries dropped.
    losses: Mutex<HashMap<IpAddr, Loss>>,
    dropped: Mutex<HashMap<IpAddr, u64>>,
    /// Held while the UDP socket's TTL is set and an answer sent (two
    /// threads send on it); the TTL it has now, `None` for the default.
    udp_ttl: Mutex<Option<u8>>,
    /// The UDP socket's TTL (IPv6: unicast hops) as the system set it.
    default_ttl: u32,
    counts: Mutex<HashMap<IpAddr, u64>>,
    total: AtomicU64,
    /// Delayed UDP answers, earliest first.
    pending: Mutex<BinaryHeap<Reverse<Pending>>>,
    wake: Condvar,
    connections: AtomicUsize,
    connection_threads: Mutex<Vec<JoinHandle<()>>>,
}

/// A delayed UDP answer.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    due: Instant,
    seq: u64,
    to: SocketAddr,
    ttl: Option<u8>,
    answer: Vec<u8>,
}

/// A source's loss: of every 1000 queries, `permille` go unanswered,
/// spread evenly (query n is dropped when ⌊n·p/1000⌋ grows).
#[derive(Debug, Clone, Copy)]
struct Loss {
    permille: u16,
    /// Queries from the source since the loss was set.
    seen: u64,
}

impl Loss {
    /// Counts one more query; whether it is dropped.
    fn drops_next(&mut self) -> bool {
        let p = u64::from(self.permille.min(1000));
        self.seen += 1;
        self.seen * p / 1000 > (self.seen - 1) * p / 1000
    }
}

/// What to do with one query's answer.
struct Reply {
    delay: Duration,
    ttl: Option<u8>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl LdnsEmulator {
    /// A DNS responder on `addr` over UDP and TCP (same port; port 0 = pick
    /// a free one, the same for both protocols). Runs on its own threads;
    /// never panics on bad input.
    ///
    /// # Panics
    ///
    /// When the address cannot be bound (a test setup error).
    pub fn start(addr: SocketAddr) -> LdnsEmulator {
        let (udp, tcp) = bind_both(addr);
        let addr = udp.local_addr().expect("local address of the UDP socket");
        let default_ttl = if addr.is_ipv4() {
            udp.ttl()
        } else {
            socket2::SockRef::from(&udp).unicast_hops_v6()
        }
        .expect("the UDP socket's TTL");
        udp.set_read_timeout(Some(POLL))
            .expect("read timeout on the UDP socket");
        tcp.set_nonblocking(true)
            .expect("non-blocking TCP listener");
        let state = Arc::new(State {
            stop: AtomicBool::new(false),
            rcode: AtomicU8::new(0),
            delays: Mutex::default(),
            ttls: Mutex::default(),
            losses: Mutex::default(),
            dropped: Mutex::default(),
            udp_ttl: Mutex::default(),
            default_ttl,
            counts: Mutex::default(),
            total: AtomicU64::new(0),
            pending: Mutex::default(),
            wake: Condvar::new(),
            connections: AtomicUsize::new(0),
            connection_threads: Mutex::default(),
        });
        let sender = udp.try_clone().expect("clone of the UDP socket");
        let threads = vec![
            spawn("ldns-emu-udp", &state, move |s| serve_udp(&udp, &s)),
            spawn("ldns-emu-delay", &state, move |s| send_delayed(&sender, &s)),
            spawn("ldns-emu-tcp", &state, move |s| accept_tcp(&tcp, &s)),
        ];
        LdnsEmulator {
            addr,
            state,
            threads,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answers queries whose *source address* is `source` after `delay`
    /// (the kernel here has no netem, so per-site delay comes from here).
    /// Default 0.
    pub fn set_delay(&self, source: IpAddr, delay: Duration) {
        let mut delays = lock(&self.state.delays);
        if delay.is_zero() {
            delays.remove(&source);
        } else {
            delays.insert(source, delay);
        }
    }

    /// Sends the answers to queries from `source` with this IP TTL (IPv6:
    /// hop limit), as if the resolver were that many hops less than 64 away
    /// from it: the socket's unicast TTL is set before each send (TCP: per
    /// connection). `None`: the system's default again.
    pub fn set_ttl(&self, source: IpAddr, ttl: Option<u8>) {
        let mut ttls = lock(&self.state.ttls);
        match ttl {
            Some(t) => ttls.insert(source, t),
            None => ttls.remove(&source),
        };
    }

    /// Leaves `permille` of every 1000 queries from `source` unanswered,
    /// deterministically and evenly spread: 500 drops every second query,
    /// 100 every tenth, 1000 all (counted from this call, over UDP and TCP
    /// together). 0 answers every query again (the default).
    pub fn set_loss(&self, source: IpAddr, permille: u16) {
        let mut losses = lock(&self.state.losses);
        if permille == 0 {
            losses.remove(&source);
        } else {
            losses.insert(source, Loss { permille, seen: 0 });
        }
    }

    /// Queries from `source` left unanswered by [`LdnsEmulator::set_loss`].
    pub fn dropped_from(&self, source: IpAddr) -> u64 {
        lock(&self.state.dropped).get(&source).copied().unwrap_or(0)
    }

    /// The rcode of every answer (default 0 NOERROR; e.g. 5 REFUSED to test
    /// that error replies still count). Only the low 4 bits are used.
    pub fn set_rcode(&self, rcode: u8) {
        self.state.rcode.store(rcode & 0x0f, Ordering::SeqCst);
    }

    /// Queries received from `source` so far (UDP + TCP).
    pub fn queries_from(&self, source: IpAddr) -> u64 {
        lock(&self.state.counts).get(&source).copied().unwrap_or(0)
    }

    /// Queries received so far, from anyone (UDP + TCP).
    pub fn queries(&self) -> u64 {
        self.state.total.load(Ordering::SeqCst)
    }
}

impl Drop for LdnsEmulator {
    /// Stops every thread (each notices within [`POLL`]) and waits for them,
    /// so the port is closed when this returns.
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        self.state.wake.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let connections = std::mem::take(&mut *lock(&self.state.connection_threads));
        for t in connections {
            let _ = t.join();
        }
    }
}

impl State {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Counts a query from `source` and says how long to hold its answer
    /// and with what TTL to send it; `None`: drop it (its loss).
    fn received(&self, source: IpAddr) -> Option<Reply> {
        *lock(&self.counts).entry(source).or_insert(0) += 1;
        self.total.fetch_add(1, Ordering::SeqCst);
        if lock(&self.losses)
            .get_mut(&source)
            .is_some_and(Loss::drops_next)
        {
            *lock(&self.dropped).entry(source).or_insert(0) += 1;
            return None;
        }
        Some(Reply {
            delay: lock(&self.delays)
                .get(&source)
                .copied()
                .unwrap_or(Duration::ZERO),
            ttl: lock(&self.ttls).get(&source).copied(),
        })
    }

    /// Sends a UDP answer with `ttl` (`None`: the default), setting the
    /// socket's TTL first when it has another. Best effort, like UDP: an
    /// answer whose TTL cannot be set still goes out (and the test that
    /// asked for the TTL sees the wrong one, rather than a loss).
    fn send_udp(&self, socket: &UdpSocket, answer: &[u8], to: SocketAddr, ttl: Option<u8>) {
        let mut current = lock(&self.udp_ttl);
        if *current != ttl {
            let want = ttl.map_or(self.default_ttl, u32::from);
            if set_ttl(socket2::SockRef::from(socket), to.is_ipv6(), want).is_ok() {
                *current = ttl;
            }
        }
        let _ = socket.send_to(answer, to);
    }

    fn rcode(&self) -> u8 {
        self.rcode.load(Ordering::SeqCst)
    }
}

/// Binds UDP and TCP on the same port of `addr`'s address.
fn bind_both(addr: SocketAddr) -> (UdpSocket, TcpListener) {
    if addr.port() != 0 {
        let udp = UdpSocket::bind(addr).unwrap_or_else(|e| panic!("cannot bind UDP {addr}: {e}"));
        let tcp = TcpListener::bind(addr).unwrap_or_else(|e| panic!("cannot bind TCP {addr}: {e}"));
        return (udp, tcp);
    }
    // A free UDP port may be taken for TCP: try a few.
    for _ in 0..100 {
        let udp = UdpSocket::bind(addr).unwrap_or_else(|e| panic!("cannot bind UDP {addr}: {e}"));
        let port = udp.local_addr().map(|a| a.port()).unwrap_or(0);
        if let Ok(tcp) = TcpListener::bind(SocketAddr::new(addr.ip(), port)) {
            return (udp, tcp);
        }
    }
    panic!("no port free for both UDP and TCP on {}", addr.ip());
}

fn spawn(
    name: &str,
    state: &Arc<State>,
    f: impl FnOnce(Arc<State>) + Send + 'static,
) -> JoinHandle<()> {
    let state = Arc::clone(state);
    thread::Builder::new()
        .name(name.into())
        .spawn(move || f(state))
        .expect("spawn an emulator thread")
}

/// Receives UDP queries; answers at once, or queues the delayed answer.
fn serve_udp(socket: &UdpSocket, state: &State) {
    let mut buf = [0u8; 4096];
    let mut seq = 0u64;
    while !state.stopped() {
        let (n, from) = match socket.recv_from(&mut buf) {
            Ok(got) => got,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(_) => {
                // e.g. an ICMP error reported on the socket: not ours to fix.
                thread::sleep(Duration::from_millis(1));
                continue;
            }
        };
        let Some(reply) = answer(buf.get(..n).unwrap_or_default(), state.rcode()) else {
            continue;
        };
        let Some(Reply { delay, ttl }) = state.received(from.ip()) else {
            continue; // lost
        };
        if delay.is_zero() {
            state.send_udp(socket, &reply, from, ttl);
            continue;
        }
        let mut pending = lock(&state.pending);
        if pending.len() < MAX_PENDING {
            seq += 1;
            pending.push(Reverse(Pending {
                due: Instant::now() + delay,
                seq,
                to: from,
                ttl,
                answer: reply,
            }));
            state.wake.notify_all();
        }
    }
}

/// Sends the delayed UDP answers when they are due.
fn send_delayed(socket: &UdpSocket, state: &State) {
    let mut pending = lock(&state.pending);
    while !state.stopped() {
        let now = Instant::now();
        let wait = match pending.peek() {
            Some(Reverse(p)) if p.due <= now => {
                if let Some(Reverse(p)) = pending.pop() {
                    state.send_udp(socket, &p.answer, p.to, p.ttl);
                }
                continue;
            }
            Some(Reverse(p)) => (p.due - now).min(POLL),
            None => POLL,
        };
        pending = state
            .wake
            .wait_timeout(pending, wait)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// Accepts TCP connections, one thread each, at most [`MAX_CONNECTIONS`].
fn accept_tcp(listener: &TcpListener, state: &Arc<State>) {
    while !state.stopped() {
        let (conn, peer) = match listener.accept() {
            Ok(got) => got,
            Err(_) => {
                thread::sleep(Duration::from_millis(5));
                continue;
            }
        };
        if state.connections.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            drop(conn);
            continue;
        }
        state.connections.fetch_add(1, Ordering::SeqCst);
        let s = Arc::clone(state);
        let spawned = thread::Builder::new()
            .name("ldns-emu-conn".into())
            .spawn(move || {
                serve_tcp(conn, peer.ip(), &s);
                s.connections.fetch_sub(1, Ordering::SeqCst);
            });
        match spawned {
            Ok(t) => {
                let mut threads = lock(&state.connection_threads);
                threads.retain(|t| !t.is_finished());
                threads.push(t);
            }
            Err(_) => {
                state.connections.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

/// Serves the length-prefixed queries of one TCP connection.
fn serve_tcp(mut conn: TcpStream, peer: IpAddr, state: &State) {
    if conn.set_nonblocking(false).is_err() || conn.set_read_timeout(Some(POLL)).is_err() {
        return;
    }
    let _ = conn.set_nodelay(true);
    let default_ttl = if peer.is_ipv4() {
        conn.ttl()
    } else {
        socket2::SockRef::from(&conn).unicast_hops_v6()
    };
    let mut conn_ttl: Option<u8> = None;
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut last_read = Instant::now();
    while !state.stopped() {
        // Answer every complete message received so far.
        while let Some(&[hi, lo]) = buf.get(..2) {
            let end = 2 + usize::from(u16::from_be_bytes([hi, lo]));
            let Some(msg) = buf.get(2..end) else {
                break;
            };
            if let Some(reply) = answer(msg, state.rcode())
                && let Some(Reply { delay, ttl }) = state.received(peer)
            {
                if !sleep_unless_stopped(delay, state) {
                    return;
                }
                if ttl != conn_ttl
                    && let Ok(default) = default_ttl.as_ref()
                {
                    let want = ttl.map_or(*default, u32::from);
                    if set_ttl(socket2::SockRef::from(&conn), peer.is_ipv6(), want).is_ok() {
                        conn_ttl = ttl;
                    }
                }
                let mut framed = Vec::with_capacity(2 + reply.len());
                framed.extend_from_slice(&(reply.len() as u16).to_be_bytes());
                framed.extend_from_slice(&reply);
                if conn.write_all(&framed).is_err() {
                    return;
                }
            }
            buf.drain(..end);
        }
        match conn.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => {
                buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
                last_read = Instant::now();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if last_read.elapsed() > IDLE {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

/// Sets the unicast TTL (`v6`: hop limit) of a socket.
fn set_ttl(socket: socket2::SockRef<'_>, v6: bool, ttl: u32) -> io::Result<()> {
    if v6 {
        socket.set_unicast_hops_v6(ttl)
    } else {
        socket.set_ttl_v4(ttl)
    }
}

/// Sleeps `d` in small steps; `false` when the emulator stopped meanwhile.
fn sleep_unless_stopped(d: Duration, state: &State) -> bool {
    let end = Instant::now() + d;
    loop {
        if state.stopped() {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        thread::sleep((end - now).min(POLL));
    }
}

/// The answer to `query`: same ID, QR=1, opcode and RD echoed, `rcode`, the
/// first question echoed (if it can be read), no records. `None` when the
/// bytes are not a DNS query (too short, or QR=1).
fn answer(query: &[u8], rcode: u8) -> Option<Vec<u8>> {
    let header = query.get(..12)?;
    let (flags, qdcount) = (header[2], u16::from_be_bytes([header[4], header[5]]));
    if flags & 0x80 != 0 {
        return None;
    }
    let question = if qdcount > 0 {
        question_len(query, 12).and_then(|n| query.get(12..12 + n))
    } else {
        None
    };
    let mut out = Vec::with_capacity(12 + question.map_or(0, <[u8]>::len));
    out.extend_from_slice(&header[..2]);
    out.push(0x80 | (flags & 0x79)); // QR, the opcode and RD echoed
    out.push(rcode & 0x0f);
    out.extend_from_slice(&[0, u8::from(question.is_some()), 0, 0, 0, 0, 0, 0]);
    if let Some(q) = question {
        out.extend_from_slice(q);
    }
    Some(out)
}

/// The length of the uncompressed question (name, type, class) at `start`.
fn question_len(msg: &[u8], start: usize) -> Option<usize> {
    let mut pos = start;
    loop {
        let len = usize::from(*msg.get(pos)?);
        if len == 0 {
            let end = pos + 1 + 4;
            msg.get(start..end)?;
            return Some(end - start);
        }
        if len > 63 || pos - start > 255 {
            return None;
        }
        pos += 1 + len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUERY: &[u8] = &[
        0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, // RD=1, QD=1
        3, b'w', b'w', b'w', 0, 0, 2, 0, 1, // www IN NS
    ];

    #[test]
    fn answers_echo_id_and_question() {
        let a = answer(QUERY, 5).unwrap();
        assert_eq!(&a[..4], &[0xab, 0xcd, 0x81, 5]);
        assert_eq!(&a[4..12], &[0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&a[12..], &QUERY[12..]);
        assert!(answer(&a, 0).is_none(), "a response is not answered");
        // A query whose question cannot be read is answered without it.
        let mut bad = QUERY.to_vec();
        bad[12] = 0xc0;
        let a = answer(&bad, 0).unwrap();
        assert_eq!(a.len(), 12);
        assert_eq!(a[5], 0);
        for n in 0..QUERY.len() {
            let _ = answer(&QUERY[..n], 0);
        }
        assert!(answer(&QUERY[..11], 0).is_none());
    }

    #[test]
    fn udp_and_tcp_share_the_port_and_delays_are_per_source() {
        let emu = LdnsEmulator::start("127.0.0.1:0".parse().unwrap());
        let port = emu.addr().port();
        assert_ne!(port, 0);
        emu.set_delay("127.0.0.1".parse().unwrap(), Duration::from_millis(100));
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        // Garbage is ignored and not counted (it is read before the query).
        client.send_to(b"xx", emu.addr()).unwrap();
        let started = Instant::now();
        client.send_to(QUERY, emu.addr()).unwrap();
        let mut buf = [0u8; 512];
        let (n, _) = client.recv_from(&mut buf).unwrap();
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert_eq!(&buf[..2], &QUERY[..2]);
        assert_eq!(n, QUERY.len());

        let mut tcp = TcpStream::connect(emu.addr()).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut framed = (QUERY.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(QUERY);
        tcp.write_all(&framed).unwrap();
        let mut len = [0u8; 2];
        tcp.read_exact(&mut len).unwrap();
        let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
        tcp.read_exact(&mut msg).unwrap();
        assert_eq!(&msg[..2], &QUERY[..2]);
        assert_eq!(emu.queries_from("127.0.0.1".parse().unwrap()), 2);
        assert_eq!(emu.queries(), 2);
    }

    #[test]
    fn loss_drops_an_even_deterministic_share() {
        let pattern = |permille| {
            let mut l = Loss { permille, seen: 0 };
            (0..10).map(|_| l.drops_next()).collect::<Vec<_>>()
        };
        let (t, f) = (true, false);
        assert_eq!(pattern(500), [f, t, f, t, f, t, f, t, f, t]);
        assert_eq!(pattern(100), [f, f, f, f, f, f, f, f, f, t]);
        assert_eq!(pattern(300), [f, f, f, t, f, f, t, f, f, t]);
        assert_eq!(pattern(1000), [t; 10]);
        assert_eq!(pattern(2000), [t; 10], "more than all is all");
        let mut l = Loss {
            permille: 250,
            seen: 0,
        };
        assert_eq!((0..1000).filter(|_| l.drops_next()).count(), 250);
    }

    #[test]
    fn a_lossy_source_gets_every_other_answer() {
        let emu = LdnsEmulator::start("127.0.0.1:0".parse().unwrap());
        let me: IpAddr = "127.0.0.1".parse().unwrap();
        emu.set_loss(me, 500);
        emu.set_ttl(me, Some(33));
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut answered = 0;
        let mut buf = [0u8; 512];
        for _ in 0..4 {
            client.send_to(QUERY, emu.addr()).unwrap();
            if client.recv_from(&mut buf).is_ok() {
                answered += 1;
            }
        }
        assert_eq!(answered, 2);
        assert_eq!(emu.dropped_from(me), 2);
        assert_eq!(emu.queries_from(me), 4, "dropped queries are received");
        // Back to normal: every query answered, with the default TTL.
        emu.set_loss(me, 0);
        emu.set_ttl(me, None);
        client.send_to(QUERY, emu.addr()).unwrap();
        assert!(client.recv_from(&mut buf).is_ok());
        assert_eq!(emu.dropped_from(me), 2);
    }
}
