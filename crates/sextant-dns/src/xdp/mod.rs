//! The XDP path (Linux): UDP queries to the listening addresses taken off
//! one interface before the kernel's network stack, through AF_XDP
//! sockets, and answered by the same [`respond`] as the socket path.
//!
//! An XDP program (`program`) on the interface sends those frames to the
//! AF_XDP socket of the queue they arrived on and passes everything else
//! (ARP, TCP, other addresses and ports, fragments) to the kernel as
//! before, so the UDP and TCP sockets keep serving what the program leaves
//! alone. One thread per receive queue reads frames from its socket's
//! ring, answers in the same frame (`frame`) and queues it for sending.
//! What this bypasses is the kernel's IP and UDP layers and the socket
//! buffers on both ways; firewall rules (netfilter) do not see these
//! queries either. docs/architecture.md says when to use it.

mod bpf;
pub mod frame;
mod program;
mod xsk;

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::thread::JoinHandle;

pub use xsk::BindMode;

use crate::{Counter, DnsShared, MAX_MESSAGE, Transport, Worker, random_seed, respond};

/// Frames taken from the receive ring per pass.
const BATCH: u32 = 64;
/// How long an idle worker sleeps in poll before looking again.
const IDLE_POLL_MS: i32 = 1000;

/// Where the program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AttachMode {
    /// In the driver when it supports XDP, else generic.
    #[default]
    Auto,
    /// In the driver (native XDP); fails if the driver has none.
    Native,
    /// After the kernel built its packet buffer: works everywhere, gains
    /// less.
    Generic,
}

/// How the XDP path is set up on one interface.
#[derive(Debug, Clone, Default)]
pub struct XdpOptions {
    pub attach: AttachMode,
    pub bind: BindMode,
}

/// Why the XDP path could not start; each says what to check.
#[derive(Debug, thiserror::Error)]
pub enum XdpError {
    #[error("no network interface named {0:?} (see `ip link`)")]
    NoInterface(String),
    #[error(
        "cannot create the XDP socket map: {0} (the XDP path needs root or CAP_BPF and CAP_NET_ADMIN, and a kernel with BPF)"
    )]
    Map(io::Error),
    #[error("{0}")]
    Program(io::Error),
    #[error(
        "cannot open an AF_XDP socket on {interface} queue {queue}: {error} (the kernel needs CONFIG_XDP_SOCKETS, zero-copy a driver that has it; \"busy\" means another AF_XDP program holds the queue)"
    )]
    Socket {
        interface: String,
        queue: u32,
        error: io::Error,
    },
    #[error(
        "cannot attach the XDP program to {interface} ({mode}): {error} (another XDP program may be attached there: `ip link show {interface}`)"
    )]
    Attach {
        interface: String,
        mode: &'static str,
        error: io::Error,
    },
    #[error("the XDP path needs a UDP listening address")]
    NoAddress,
}

/// The XDP path set up on an interface: program attached, sockets bound,
/// not yet answering ([`XdpPath::serve`] starts the workers). Frames that
/// arrive before then wait in the sockets' rings, as queries wait in a UDP
/// socket's buffer before its worker starts.
pub struct XdpPath {
    link: OwnedFd,
    program: OwnedFd,
    map: OwnedFd,
    sockets: Vec<xsk::Socket>,
    interface: String,
    attached: &'static str,
}

impl std::fmt::Debug for XdpPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpPath")
            .field("interface", &self.interface)
            .field("queues", &self.sockets.len())
            .field("attached", &self.attached)
            .finish()
    }
}

/// The number of receive queues of `interface`, from sysfs (1 when it does
/// not say).
fn receive_queues(interface: &str) -> u32 {
    std::fs::read_dir(format!("/sys/class/net/{interface}/queues"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count() as u32
        })
        .unwrap_or(0)
        .max(1)
}

/// The descriptors a running path must keep open; every worker holds
/// them, so the program stays attached exactly while the workers run.
struct Keep {
    _link: OwnedFd,
    _program: OwnedFd,
    _map: OwnedFd,
}

impl XdpPath {
    /// Sets up the XDP path for UDP queries to `listen` arriving on
    /// `interface`: one AF_XDP socket per receive queue, and the program
    /// attached.
    pub fn open(
        interface: &str,
        listen: &[SocketAddr],
        options: &XdpOptions,
    ) -> Result<XdpPath, XdpError> {
        if listen.is_empty() {
            return Err(XdpError::NoAddress);
        }
        let ifindex = xsk::interface_index(interface)
            .ok_or_else(|| XdpError::NoInterface(interface.into()))?;
        let queues = receive_queues(interface);
        let map = bpf::create_socket_map(queues).map_err(XdpError::Map)?;
        let program =
            bpf::load(&program::build(listen, map.as_raw_fd())).map_err(XdpError::Program)?;
        let mut sockets = Vec::with_capacity(queues as usize);
        for queue in 0..queues {
            let socket_error = |error| XdpError::Socket {
                interface: interface.into(),
                queue,
                error,
            };
            let socket = xsk::Socket::open(ifindex, queue, options.bind).map_err(socket_error)?;
            bpf::set_socket(map.as_raw_fd(), queue, socket.raw_fd()).map_err(socket_error)?;
            sockets.push(socket);
        }
        let attach = |flags, mode| {
            bpf::attach(program.as_raw_fd(), ifindex, flags).map_err(|error| XdpError::Attach {
                interface: interface.into(),
                mode,
                error,
            })
        };
        let (link, attached) = match options.attach {
            AttachMode::Native => (attach(bpf::XDP_FLAGS_DRV_MODE, "native")?, "native"),
            AttachMode::Generic => (attach(bpf::XDP_FLAGS_SKB_MODE, "generic")?, "generic"),
            AttachMode::Auto => match attach(bpf::XDP_FLAGS_DRV_MODE, "native") {
                Ok(link) => (link, "native"),
                Err(_) => (attach(bpf::XDP_FLAGS_SKB_MODE, "generic")?, "generic"),
            },
        };
        Ok(XdpPath {
            link,
            program,
            map,
            sockets,
            interface: interface.into(),
            attached,
        })
    }

    /// The interface the path is on.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// Where the program runs: "native" (in the driver) or "generic".
    pub fn attached(&self) -> &'static str {
        self.attached
    }

    /// How many receive queues (and so workers) the path has.
    pub fn queues(&self) -> usize {
        self.sockets.len()
    }

    /// Starts one worker thread per queue, answering from `shared`; they
    /// run for the life of the process.
    pub fn serve(self, shared: Arc<DnsShared>) -> io::Result<Vec<JoinHandle<()>>> {
        let keep = Arc::new(Keep {
            _link: self.link,
            _program: self.program,
            _map: self.map,
        });
        self.sockets
            .into_iter()
            .enumerate()
            .map(|(queue, socket)| {
                let shared = Arc::clone(&shared);
                let keep = Arc::clone(&keep);
                let seed = random_seed();
                std::thread::Builder::new()
                    .name(format!("dns-xdp-{queue}"))
                    .spawn(move || {
                        let _keep = keep;
                        serve(socket, &shared, seed)
                    })
            })
            .collect()
    }
}

/// One queue's loop: answer what arrived, send, recycle, sleep when idle.
fn serve(mut socket: xsk::Socket, shared: &DnsShared, seed: u64) {
    let mut worker = Worker::new(seed);
    // Allocated once: the loop only reuses it.
    let mut out = Vec::with_capacity(MAX_MESSAGE);
    loop {
        socket.recycle_sent();
        let n = socket.received(BATCH);
        if n == 0 {
            socket.wait(IDLE_POLL_MS);
            continue;
        }
        for k in 0..n {
            let (addr, len) = socket.frame(k);
            let reply = socket
                .buffer(addr)
                .and_then(|buf| answer(shared, &mut worker, buf, len as usize, &mut out));
            match reply {
                Some(len) => {
                    socket.send(addr, len as u32);
                }
                None => socket.refill(addr),
            }
        }
        socket.finish(n);
    }
}

/// Answers the query in the first `len` bytes of `buf` in place; the
/// answer frame's length, or `None` when there is nothing to send.
fn answer(
    shared: &DnsShared,
    worker: &mut Worker,
    buf: &mut [u8],
    len: usize,
    out: &mut Vec<u8>,
) -> Option<usize> {
    let shard = worker.shard;
    shared.stats.incr(shard, Counter::QueriesXdp);
    let Some(query) = frame::parse(buf.get(..len)?) else {
        shared.stats.incr(shard, Counter::Dropped);
        return None;
    };
    out.clear();
    let request = buf.get(query.payload.clone())?;
    let source = query.source.ip().to_canonical();
    if !respond(shared, worker, request, source, Transport::Udp, out) {
        return None;
    }
    frame::write_reply(buf, &query, out)
}
