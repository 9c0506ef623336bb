//! A UDP relay between a resolver and the server under test that can
//! break every RRSIG it carries (one bit of each signature flipped): the
//! way a test makes a signature invalid on purpose, on the wire, without
//! touching the server.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// The RRSIG type.
const TYPE_RRSIG: u16 = 46;

/// Relays each datagram sent to [`SignatureBreaker::addr`] to the upstream
/// server and its answer back; while [`SignatureBreaker::set_breaking`] is
/// on, every RRSIG in an answer has its signature altered. Ends on drop.
pub struct SignatureBreaker {
    pub addr: SocketAddr,
    breaking: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SignatureBreaker {
    /// Listens on `listen` (port 0 picks one) and relays to `upstream`.
    pub fn start(listen: SocketAddr, upstream: SocketAddr) -> SignatureBreaker {
        let socket = UdpSocket::bind(listen).expect("bind the relay");
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .expect("read timeout");
        let addr = socket.local_addr().expect("relay address");
        let breaking = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (b, s) = (breaking.clone(), stop.clone());
        let thread = std::thread::spawn(move || relay(&socket, upstream, &b, &s));
        SignatureBreaker {
            addr,
            breaking,
            stop,
            thread: Some(thread),
        }
    }

    pub fn set_breaking(&self, on: bool) {
        self.breaking.store(on, Ordering::SeqCst);
    }
}

impl Drop for SignatureBreaker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn relay(socket: &UdpSocket, upstream: SocketAddr, breaking: &AtomicBool, stop: &AtomicBool) {
    let mut buf = [0u8; 65535];
    let mut answer = [0u8; 65535];
    while !stop.load(Ordering::SeqCst) {
        let Ok((n, client)) = socket.recv_from(&mut buf) else {
            continue;
        };
        let Ok(out) = UdpSocket::bind((upstream.ip(), 0)) else {
            continue;
        };
        let _ = out.set_read_timeout(Some(Duration::from_secs(2)));
        if out.send_to(&buf[..n], upstream).is_err() {
            continue;
        }
        let Ok(m) = out.recv(&mut answer) else {
            continue;
        };
        let reply = &mut answer[..m];
        if breaking.load(Ordering::SeqCst) {
            break_signatures(reply);
        }
        let _ = socket.send_to(reply, client);
    }
}

/// Flips one bit of the last octet of every RRSIG's RDATA (its signature)
/// in a DNS message; returns how many it altered. A message it cannot walk
/// is left as it is.
pub fn break_signatures(m: &mut [u8]) -> usize {
    let count = |at: usize| {
        m.get(at..at + 2)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
    };
    let questions = count(4);
    let records = usize::from(count(6)) + usize::from(count(8)) + usize::from(count(10));
    let mut at = 12;
    for _ in 0..questions {
        let Some(end) = skip_name(m, at) else {
            return 0;
        };
        at = end + 4;
    }
    let mut broken = 0;
    for _ in 0..records {
        let Some(end) = skip_name(m, at) else {
            return broken;
        };
        let Some(fixed) = m.get(end..end + 10) else {
            return broken;
        };
        let rtype = u16::from_be_bytes([fixed[0], fixed[1]]);
        let len = usize::from(u16::from_be_bytes([fixed[8], fixed[9]]));
        let rdata_end = end + 10 + len;
        if rdata_end > m.len() {
            return broken;
        }
        if rtype == TYPE_RRSIG && len > 0 {
            m[rdata_end - 1] ^= 0x01;
            broken += 1;
        }
        at = rdata_end;
    }
    broken
}

/// The offset just after the (possibly compressed) name at `at`.
fn skip_name(m: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *m.get(at)?;
        match len {
            0 => return Some(at + 1),
            l if l & 0xc0 == 0xc0 => return Some(at + 2),
            l => at += 1 + usize::from(l),
        }
    }
}
