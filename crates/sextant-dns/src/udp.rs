//! The UDP server: one blocking thread per `SO_REUSEPORT` socket.
//!
//! Plain threads rather than tokio: a blocking receive → `respond` → send
//! loop has no wakeups, no task scheduling and no await, and the kernel's
//! reuseport hashing spreads clients over the sockets (one per core) with
//! no queue shared between threads. On Linux each system call moves a
//! batch of datagrams (`recvmmsg`/`sendmmsg`, see `mmsg`): measured on
//! loopback with one pinned worker, about 10 % more queries per core than
//! one `recv_from`/`send_to` pair per query, where ~95 % of the time is the
//! kernel's per-packet work.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

#[cfg(not(target_os = "linux"))]
use crate::MAX_MESSAGE;
use crate::{DnsShared, Transport, Worker, random_seed, respond};

/// The receive buffer asked for by default (best effort: the kernel caps
/// it at `net.core.rmem_max`): room for bursts of thousands of queries, so
/// that none is dropped before a worker gets to it. The peers (Knot,
/// gdnsd) keep the kernel's default (`net.core.rmem_default`, usually
/// 208 KiB) and drop a share of the queries in bursts; see
/// docs/performance.md for what each costs.
pub const DEFAULT_RECEIVE_BUFFER: usize = 4 << 20;
/// The send buffer asked for (best effort, like the receive buffer).
const SEND_BUFFER: usize = 4 << 20;

/// How the UDP sockets of one address are set up.
#[derive(Debug, Clone, Copy)]
pub struct UdpOptions {
    /// Receive buffer in bytes, or 0 for the kernel's default.
    pub receive_buffer: usize,
    /// Bind with `IP_FREEBIND`: the address may not be on the host yet.
    pub freebind: bool,
}

impl Default for UdpOptions {
    fn default() -> Self {
        UdpOptions {
            receive_buffer: DEFAULT_RECEIVE_BUFFER,
            freebind: false,
        }
    }
}

/// Binds `workers` UDP sockets on `addr` with the default options.
///
/// With more than one worker every socket gets `SO_REUSEPORT` so they share
/// the port; with one, the socket is bound plainly (no reuseport group for
/// a stray process to join). Port 0 picks a free port for the first socket
/// and binds the others to the same one.
pub fn bind_udp(addr: SocketAddr, workers: usize) -> io::Result<Vec<UdpSocket>> {
    bind_udp_with(addr, workers, UdpOptions::default())
}

/// [`bind_udp`] for an address that may not be on the host yet: a VRRP
/// VIP, which is added when this node becomes master for it. The sockets
/// are bound with `IP_FREEBIND` and receive traffic once the address is
/// local (on the master, or on a backup that shares it).
pub fn bind_udp_vip(addr: SocketAddr, workers: usize) -> io::Result<Vec<UdpSocket>> {
    let options = UdpOptions {
        freebind: true,
        ..UdpOptions::default()
    };
    bind_udp_with(addr, workers, options)
}

/// [`bind_udp`] with explicit [`UdpOptions`]. Every socket also gets
/// `IP_PMTUDISC_OMIT` (see `sockopt`): answers never carry DF and ignore
/// path-MTU updates.
pub fn bind_udp_with(
    addr: SocketAddr,
    workers: usize,
    options: UdpOptions,
) -> io::Result<Vec<UdpSocket>> {
    let n = workers.max(1);
    let mut sockets: Vec<UdpSocket> = Vec::with_capacity(n);
    let mut bind_addr = addr;
    for _ in 0..n {
        let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        if n > 1 {
            socket.set_reuse_port(true)?;
        }
        if addr.is_ipv6() {
            // Keep v4 and v6 listeners independent, as configured.
            socket.set_only_v6(true)?;
        }
        if options.freebind {
            crate::set_freebind(&socket, addr)?;
        }
        #[cfg(target_os = "linux")]
        crate::sockopt::omit_path_mtu_discovery(&socket, addr)?;
        if options.receive_buffer > 0 {
            let _ = socket.set_recv_buffer_size(options.receive_buffer);
        }
        let _ = socket.set_send_buffer_size(SEND_BUFFER);
        socket.bind(&bind_addr.into())?;
        let socket: UdpSocket = socket.into();
        if bind_addr.port() == 0 {
            bind_addr = socket.local_addr()?;
        }
        sockets.push(socket);
    }
    Ok(sockets)
}

/// Binds `workers` sockets on `addr` (see [`bind_udp`]) and serves each
/// from its own thread. `workers == 0` is treated as 1.
pub fn spawn_udp(
    addr: SocketAddr,
    workers: usize,
    shared: Arc<DnsShared>,
) -> io::Result<Vec<JoinHandle<()>>> {
    spawn_udp_sockets(bind_udp(addr, workers)?, shared)
}

/// Serves already bound sockets, one thread each.
pub fn spawn_udp_sockets(
    sockets: Vec<UdpSocket>,
    shared: Arc<DnsShared>,
) -> io::Result<Vec<JoinHandle<()>>> {
    sockets
        .into_iter()
        .enumerate()
        .map(|(i, socket)| {
            let shared = Arc::clone(&shared);
            let seed = random_seed();
            std::thread::Builder::new()
                .name(format!("dns-udp-{i}"))
                .spawn(move || serve_udp(socket, &shared, seed))
        })
        .collect()
}

/// The worker loop on Linux: batches of datagrams per system call.
#[cfg(target_os = "linux")]
fn serve_udp(socket: UdpSocket, shared: &DnsShared, seed: u64) {
    let mut worker = Worker::new(seed);
    // Allocated once: the hot loop only reuses them.
    let mut batch = crate::mmsg::Batch::new();
    loop {
        if let Err(e) = batch.receive(&socket) {
            receive_failed(&e);
            continue;
        }
        // Start loading every source's RTT row before answering any, so the
        // cache misses of a large LDNS table overlap (see
        // `RttTable::prefetch`; measured in the `rtt_ratio` benchmark).
        {
            let snapshot = shared.snapshot.load();
            for peer in batch.peers() {
                snapshot.prefetch_ldns(peer.ip().to_canonical());
            }
        }
        batch.answer_all(|request, peer, out| {
            // Nothing can be sent back to port 0.
            peer.port() != 0
                && respond(
                    shared,
                    &mut worker,
                    request,
                    peer.ip().to_canonical(),
                    Transport::Udp,
                    out,
                )
        });
        batch.send(&socket);
    }
}

/// The worker loop elsewhere: one datagram per system call.
#[cfg(not(target_os = "linux"))]
fn serve_udp(socket: UdpSocket, shared: &DnsShared, seed: u64) {
    let mut worker = Worker::new(seed);
    // Allocated once: the hot loop only reuses them.
    let mut buf = vec![0u8; MAX_MESSAGE];
    let mut out = Vec::with_capacity(MAX_MESSAGE);
    loop {
        let (len, peer) = match socket.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e) => {
                receive_failed(&e);
                continue;
            }
        };
        if peer.port() == 0 {
            continue;
        }
        let request = buf.get(..len).unwrap_or(&[]);
        let source = peer.ip().to_canonical();
        let answered = respond(
            shared,
            &mut worker,
            request,
            source,
            Transport::Udp,
            &mut out,
        );
        if answered && let Err(e) = socket.send_to(&out, peer) {
            tracing::debug!(error = %e, %peer, "dns udp send failed");
        }
    }
}

/// Logs a receive error unless it is transient, and backs off so a
/// persistent error does not spin the thread.
fn receive_failed(e: &io::Error) {
    if !transient(e) {
        tracing::warn!(error = %e, "dns udp receive failed");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Errors after which the next receive may simply succeed.
fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
            | io::ErrorKind::TimedOut
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
    )
}
