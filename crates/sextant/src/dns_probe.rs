//! The DNS self-probe of this node's listeners on VRRP VIPs (seed 004: a
//! node whose DNS service is broken must give its VIPs up). Where the VIP
//! is on this host (the master, or a backup that shares it) the node asks
//! its own listener a real query through the VIP, as a client would: the
//! kernel path, the socket, a worker and the answer are all exercised, so
//! a firewall rule or a stuck worker shows up. Each result goes to the state
//! engine like every monitor's (`Event::ListenerProbe`), which decides the
//! verdict with its hysteresis and hold-down
//! (`sextant_state::listeners`) and publishes it for VRRP's tracking.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sextant_state::listeners::ListenerProbe;
use tokio::sync::mpsc;
use tracing::warn;

use crate::serve::Input;

/// Time between probes.
pub const PROBE_EVERY: Duration = Duration::from_millis(500);
/// How long a probe waits for its answer.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(400);

/// Starts a prober thread for each address. Probes begin once `serving`
/// says the DNS workers run; a prober ends when the state task is gone.
pub fn start(addrs: &[SocketAddr], serving: &Arc<AtomicBool>, inputs: &mpsc::Sender<Input>) {
    for &addr in addrs {
        let serving = Arc::clone(serving);
        let inputs = inputs.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("dns-probe {addr}"))
            .spawn(move || probe_loop(addr, &serving, &inputs));
        if let Err(e) = spawned {
            warn!(%addr, error = %e, "cannot start the DNS self-probe; the listener counts as UP");
        }
    }
}

fn probe_loop(addr: SocketAddr, serving: &AtomicBool, inputs: &mpsc::Sender<Input>) {
    let mut id: u16 = 0x5e00;
    loop {
        std::thread::sleep(PROBE_EVERY);
        let probe = if !serving.load(Ordering::Acquire) || !is_local(addr.ip()) {
            ListenerProbe::Unprobed
        } else {
            id = id.wrapping_add(1);
            match probe(addr, id) {
                Ok(()) => ListenerProbe::Answered,
                Err(e) => ListenerProbe::Failed(e.to_string()),
            }
        };
        if inputs
            .blocking_send(Input::Listener { addr, probe })
            .is_err()
        {
            return;
        }
    }
}

/// Whether `ip` is an address of this host now (a socket can bind it
/// without IP_FREEBIND).
fn is_local(ip: IpAddr) -> bool {
    UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// The name asked: any response (NXDOMAIN or REFUSED too) proves the
/// listener answers.
const PROBE_NAME: &str = "probe.sextant.invalid";

/// One query from the VIP to the listener on it, and a matching response.
fn probe(addr: SocketAddr, id: u16) -> std::io::Result<()> {
    use sextant_wire::client::{TYPE_A, encode_query, parse_response};
    let query = encode_query(id, PROBE_NAME, TYPE_A).map_err(std::io::Error::other)?;
    let socket = UdpSocket::bind(SocketAddr::new(addr.ip(), 0))?;
    socket.set_read_timeout(Some(PROBE_TIMEOUT))?;
    socket.send_to(&query, addr)?;
    let mut buf = [0u8; 1232];
    let deadline = Instant::now() + PROBE_TIMEOUT;
    loop {
        let (n, from) = socket.recv_from(&mut buf)?;
        // A response to our query, from the listener.
        if from == addr
            && buf
                .get(..n)
                .and_then(|msg| parse_response(msg).ok())
                .is_some_and(|r| r.id == id && r.is_answer_to(PROBE_NAME, TYPE_A))
        {
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

#[cfg(test)]
mod tests {
    use super::*;

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
