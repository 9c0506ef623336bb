//! The kernel's ceiling for a UDP DNS server on this machine: Sextant's own
//! socket set-up and batched loop (`bind_udp`, `mmsg::Batch`: the same
//! `recvmmsg`/`sendmmsg` calls, batch size and buffers) with a canned
//! answer instead of `respond`. Whatever a query asks, it answers the
//! question it was asked with the configured A records (TTL 60, names
//! compressed to the question) and, when the query had an OPT record, an
//! OPT of its own (payload 1232, no options), so the answer is byte for
//! byte the size of Knot's or Sextant's for the same records.
//!
//! No real server with the same receive buffer can answer faster per core
//! through the kernel's socket path: the user-space work left is a copy of
//! the question. bench/peers.sh
//! runs it as the `ceiling` row so that every server's figure can be read
//! against what the kernel allows.
//!
//! `cargo run --release -p sextant-dns --example udp_ceiling -- 127.0.0.1:5300 127.0.60.1,127.0.60.2 [BYTES]`
//! (address to listen on, the A records, and optionally the socket's
//! receive buffer like `sextant serve --udp-receive-buffer`: 0 for the
//! kernel's default; runs until killed).

use std::net::{Ipv4Addr, SocketAddr};

/// Header flags of the canned answers: QR and AA (RD is copied).
const FLAGS_QR_AA: u16 = 0x8400;
const FLAG_RD: u16 = 0x0100;
/// The OPT record of an answer: root name, type 41, payload 1232, no
/// extended flags, no options.
const OPT: [u8; 11] = [0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0];

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = || std::io::Error::other("usage: udp_ceiling ADDR:PORT A[,A...] [RECEIVE_BUFFER]");
    let addr: SocketAddr = args
        .next()
        .ok_or_else(usage)?
        .parse()
        .map_err(std::io::Error::other)?;
    let records = args
        .next()
        .ok_or_else(usage)?
        .split(',')
        .map(|a| a.parse::<Ipv4Addr>().map_err(std::io::Error::other))
        .collect::<Result<Vec<_>, _>>()?;
    let receive_buffer = match args.next() {
        Some(b) => b.parse().map_err(std::io::Error::other)?,
        None => sextant_dns::DEFAULT_RECEIVE_BUFFER,
    };
    let answers = answer_records(&records);
    let options = sextant_dns::UdpOptions {
        receive_buffer,
        freebind: false,
    };
    let socket = sextant_dns::bind_udp_with(addr, 1, options)?
        .pop()
        .ok_or_else(|| std::io::Error::other("no socket bound"))?;
    serve(&socket, &answers, records.len() as u16)
}

/// The answer section: one A record per address, named by a pointer to
/// the question.
fn answer_records(records: &[Ipv4Addr]) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.len() * 16);
    for a in records {
        out.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]);
        out.extend_from_slice(&a.octets());
    }
    out
}

#[cfg(target_os = "linux")]
fn serve(socket: &std::net::UdpSocket, answers: &[u8], count: u16) -> std::io::Result<()> {
    // Never returns: the loop runs until the process is killed.
    let mut batch = sextant_dns::mmsg::Batch::new();
    loop {
        if let Err(e) = batch.receive(socket) {
            eprintln!("udp_ceiling: receive failed: {e}");
            continue;
        }
        batch.answer_all(|query, peer, out| peer.port() != 0 && canned(query, answers, count, out));
        batch.send(socket);
    }
}

#[cfg(not(target_os = "linux"))]
fn serve(socket: &std::net::UdpSocket, answers: &[u8], count: u16) -> std::io::Result<()> {
    let mut buf = [0u8; 4096];
    let mut out = Vec::with_capacity(4096);
    loop {
        let (len, peer) = socket.recv_from(&mut buf)?;
        out.clear();
        if peer.port() != 0 && canned(&buf[..len], answers, count, &mut out) {
            socket.send_to(&out, peer)?;
        }
    }
}

/// Writes the canned answer to `query` into `out`; false (nothing to send)
/// for a response or a datagram without a whole question.
fn canned(query: &[u8], answers: &[u8], count: u16, out: &mut Vec<u8>) -> bool {
    let Some(header) = query.get(..12) else {
        return false;
    };
    let flags = u16::from_be_bytes([header[2], header[3]]);
    if flags & 0x8000 != 0 {
        return false;
    }
    // The question: labels up to the root, then type and class.
    let mut at = 12;
    loop {
        match query.get(at) {
            Some(0) => break,
            Some(&len) if len < 64 => at += 1 + usize::from(len),
            _ => return false,
        }
    }
    let question_end = at + 1 + 4;
    let Some(question) = query.get(12..question_end) else {
        return false;
    };
    let with_opt = u16::from_be_bytes([header[10], header[11]]) > 0;
    let out_flags = FLAGS_QR_AA | (flags & FLAG_RD);
    out.clear();
    out.extend_from_slice(&header[..2]);
    out.extend_from_slice(&out_flags.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&u16::from(with_opt).to_be_bytes());
    out.extend_from_slice(question);
    out.extend_from_slice(answers);
    if with_opt {
        out.extend_from_slice(&OPT);
    }
    true
}
