//! VRRP tracks this node's own DNS listener on each VIP (seed 004: a node
//! whose DNS service is broken must give its VIPs up). Where the VIP is on
//! this host (the master, or a backup that shares it) the node asks its own
//! listener a real query through the VIP, as a client would: the kernel
//! path, the socket, a worker and the answer are all exercised, so a
//! firewall rule or a stuck worker shows up. Where it is not (a backup),
//! nothing can reach the listener, so the last verdict holds for a while:
//! a node that just gave a VIP up because its DNS failed does not take it
//! back at once.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tracing::{info, warn};

/// Time between probes.
pub const PROBE_EVERY: Duration = Duration::from_millis(500);
/// How long a probe waits for its answer.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(400);
/// Consecutive failed probes that make the listener DOWN.
pub const FAILURES_DOWN: u32 = 3;
/// How long a DOWN verdict holds once the VIP is no longer local (and so
/// cannot be probed).
pub const HOLD_DOWN: Duration = Duration::from_secs(30);

/// The verdict on one listener, shared between its prober and VRRP.
#[derive(Debug)]
pub struct ListenerHealth {
    pub addr: SocketAddr,
    /// Milliseconds since `origin` of the last DOWN verdict (0: none).
    down_at_ms: AtomicU64,
    /// The listener failed its last probes and has not answered since.
    down: AtomicBool,
    origin: Instant,
}

impl ListenerHealth {
    fn new(addr: SocketAddr) -> Self {
        ListenerHealth {
            addr,
            down_at_ms: AtomicU64::new(0),
            down: AtomicBool::new(false),
            origin: Instant::now(),
        }
    }

    /// Whether the listener counts as UP for VRRP now. DOWN while the
    /// probes fail; DOWN for [`HOLD_DOWN`] after a failure that could not
    /// be probed again since (the VIP went away with it).
    pub fn up(&self) -> bool {
        if self.down.load(Ordering::Acquire) {
            return false;
        }
        let at = self.down_at_ms.load(Ordering::Acquire);
        at == 0 || self.origin.elapsed() > Duration::from_millis(at) + HOLD_DOWN
    }

    /// A probe verdict: DOWN starts the hold-down, an answer ends it.
    fn mark(&self, down: bool) {
        let at = if down {
            self.origin.elapsed().as_millis().max(1) as u64
        } else {
            0
        };
        self.down_at_ms.store(at, Ordering::Release);
        self.down.store(down, Ordering::Release);
    }

    /// The VIP is not local: stop saying DOWN for a probe failure now past;
    /// the hold-down still applies.
    fn unprobed(&self) {
        self.down.store(false, Ordering::Release);
    }
}

/// Starts a prober thread for each address; their verdicts, in order.
/// Probes begin once `serving` says the DNS workers run, and a prober ends
/// when nobody holds its verdict any more.
pub fn start(addrs: &[SocketAddr], serving: &Arc<AtomicBool>) -> Vec<Arc<ListenerHealth>> {
    addrs
        .iter()
        .map(|&addr| {
            let health = Arc::new(ListenerHealth::new(addr));
            let h = Arc::clone(&health);
            let serving = Arc::clone(serving);
            let spawned = std::thread::Builder::new()
                .name(format!("dns-probe {addr}"))
                .spawn(move || probe_loop(&h, &serving));
            if let Err(e) = spawned {
                warn!(%addr, error = %e, "cannot start the DNS self-probe; the listener counts as UP");
            }
            health
        })
        .collect()
}

fn probe_loop(h: &Arc<ListenerHealth>, serving: &AtomicBool) {
    let mut failures = 0u32;
    let mut id: u16 = 0x5e00;
    loop {
        std::thread::sleep(PROBE_EVERY);
        if Arc::strong_count(h) == 1 {
            return;
        }
        if !serving.load(Ordering::Acquire) || !is_local(h.addr.ip()) {
            failures = 0;
            h.unprobed();
            continue;
        }
        id = id.wrapping_add(1);
        match probe(h.addr, id) {
            Ok(()) => {
                if h.down.load(Ordering::Acquire) {
                    info!(addr = %h.addr, "DNS self-probe: the listener answers again");
                }
                failures = 0;
                h.mark(false);
            }
            Err(e) => {
                failures += 1;
                if failures == FAILURES_DOWN {
                    warn!(addr = %h.addr, error = %e, failures, "DNS self-probe: the listener does not answer; VRRP gives this VIP up");
                }
                if failures >= FAILURES_DOWN {
                    h.mark(true);
                }
            }
        }
    }
}

/// Whether `ip` is an address of this host now (a socket can bind it
/// without IP_FREEBIND).
fn is_local(ip: IpAddr) -> bool {
    UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// One query from the VIP to the listener on it, and a matching response.
fn probe(addr: SocketAddr, id: u16) -> std::io::Result<()> {
    let socket = UdpSocket::bind(SocketAddr::new(addr.ip(), 0))?;
    socket.set_read_timeout(Some(PROBE_TIMEOUT))?;
    socket.send_to(&query(id), addr)?;
    let mut buf = [0u8; 1232];
    let deadline = Instant::now() + PROBE_TIMEOUT;
    loop {
        let (n, from) = socket.recv_from(&mut buf)?;
        // A response (QR set) to our ID, from the listener.
        if from == addr && n >= 12 && buf[..2] == id.to_be_bytes() && buf[2] & 0x80 != 0 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no matching response",
            ));
        }
    }
}

/// `probe.sextant.invalid. IN A`, recursion not desired: any response
/// (NXDOMAIN or REFUSED too) proves the listener answers.
fn query(id: u16) -> Vec<u8> {
    let mut q = Vec::with_capacity(40);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in ["probe", "sextant", "invalid"] {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&[0, 1, 0, 1]);
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_is_a_well_formed_dns_message() {
        let q = query(0x1234);
        assert_eq!(&q[..4], &[0x12, 0x34, 0, 0]);
        assert_eq!(&q[4..6], &[0, 1], "one question");
        assert_eq!(q.len(), 12 + 1 + 5 + 1 + 7 + 1 + 7 + 1 + 4);
    }

    #[test]
    fn a_down_verdict_holds_while_it_cannot_be_probed_again() {
        let h = ListenerHealth::new("192.0.2.53:53".parse().expect("addr"));
        assert!(h.up());
        h.mark(true);
        assert!(!h.up());
        h.unprobed();
        assert!(!h.up(), "held down after the VIP went away");
        h.mark(false);
        assert!(h.up(), "an answer ends it at once");
    }

    /// A real listener on loopback answers; a closed port does not.
    #[test]
    fn probes_a_real_listener() {
        let server = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let addr = server.local_addr().expect("addr");
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            if let Ok((n, from)) = server.recv_from(&mut buf) {
                buf[2] |= 0x80;
                let _ = server.send_to(&buf[..n], from);
            }
        });
        assert!(probe(addr, 7).is_ok());
        let closed = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let closed_addr = closed.local_addr().expect("addr");
        drop(closed);
        assert!(probe(closed_addr, 8).is_err());
        assert!(is_local("127.0.0.1".parse().expect("ip")));
        assert!(!is_local("192.0.2.53".parse().expect("ip")));
    }
}
