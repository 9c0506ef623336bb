//! One AF_XDP socket: its frame memory (UMEM) and its four rings.
//!
//! Unsafe code: the socket set-up calls, the memory maps of the UMEM and
//! the rings, and the ring accesses. Each ring is a single-producer,
//! single-consumer queue shared with the kernel: the producer writes
//! descriptors, then publishes its index with a release store; the consumer
//! reads the other side's index with an acquire load before the
//! descriptors. One thread owns the socket, so each of our ends has one
//! writer.
#![allow(unsafe_code)]

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// Bytes per frame; an answer is at most `MAX_UDP` (1232) octets plus 62
/// of headers.
pub const FRAME: u32 = 2048;
/// Frames in the UMEM, all handed to the kernel for receiving at start.
pub const FRAMES: u32 = 4096;
/// Descriptors in each ring (a power of two). The fill and completion
/// rings hold every frame, so returning one never waits.
const RX_RING: u32 = 2048;
const TX_RING: u32 = 2048;
const FILL_RING: u32 = FRAMES;
const COMPLETION_RING: u32 = FRAMES;
/// Frames the kernel sends per kick in copy mode (its default budget).
const TX_KICK_BUDGET: u32 = 32;

/// The index of the network interface `name`, if there is one.
pub fn interface_index(name: &str) -> Option<u32> {
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: a valid NUL-terminated string for the call's duration.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    (index != 0).then_some(index)
}

/// A memory map, unmapped on drop.
struct Map {
    at: NonNull<u8>,
    len: usize,
}

// SAFETY: the map is plain memory; the rings' sharing rules are kept by
// `Ring` (one owner thread) and the kernel.
unsafe impl Send for Map {}

impl Map {
    fn new(fd: Option<RawFd>, len: usize, offset: libc::off_t) -> io::Result<Map> {
        let (flags, fd) = match fd {
            Some(fd) => (libc::MAP_SHARED | libc::MAP_POPULATE, fd),
            None => (
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
            ),
        };
        // SAFETY: a fresh mapping chosen by the kernel; no existing memory
        // is touched.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                offset,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        NonNull::new(at.cast())
            .map(|at| Map { at, len })
            .ok_or_else(|| io::Error::other("mmap returned null"))
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped; nothing refers to it
        // after drop.
        unsafe {
            libc::munmap(self.at.as_ptr().cast(), self.len);
        }
    }
}

/// One ring: its two indices and its descriptors, in a map.
struct Ring<T> {
    _map: Map,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    descs: *mut T,
    mask: u32,
    /// Our end's index, published by `submit` / `release`.
    local: u32,
    /// The other end's index as last read.
    cached: u32,
}

// SAFETY: the pointers point into `_map`, which moves with the ring; one
// thread uses a ring at a time.
unsafe impl<T> Send for Ring<T> {}

impl<T: Copy> Ring<T> {
    /// Maps ring `kind` of size `n` (a power of two) with the kernel's
    /// offsets `off`.
    fn map(fd: RawFd, off: &libc::xdp_ring_offset, n: u32, pgoff: u64) -> io::Result<Self> {
        let len = off.desc as usize + n as usize * size_of::<T>();
        let map = Map::new(Some(fd), len, pgoff as libc::off_t)?;
        let base = map.at.as_ptr();
        // SAFETY: the kernel's offsets lie inside the `len` bytes mapped.
        let (producer, consumer, flags, descs) = unsafe {
            (
                base.add(off.producer as usize).cast::<AtomicU32>(),
                base.add(off.consumer as usize).cast::<AtomicU32>(),
                base.add(off.flags as usize).cast::<AtomicU32>(),
                base.add(off.desc as usize).cast::<T>(),
            )
        };
        Ok(Ring {
            _map: map,
            producer,
            consumer,
            flags,
            descs,
            mask: n - 1,
            local: 0,
            cached: 0,
        })
    }

    fn load(p: *const AtomicU32) -> u32 {
        // SAFETY: an aligned u32 inside the live map, shared with the kernel
        // only through atomic accesses.
        unsafe { (*p).load(Ordering::Acquire) }
    }

    fn store(p: *const AtomicU32, v: u32) {
        // SAFETY: as in `load`.
        unsafe { (*p).store(v, Ordering::Release) }
    }

    fn slot(&self, index: u32) -> *mut T {
        // SAFETY: masked into the ring's `mask + 1` descriptors.
        unsafe { self.descs.add((index & self.mask) as usize) }
    }

    fn needs_wakeup(&self) -> bool {
        Self::load(self.flags) & libc::XDP_RING_NEED_WAKEUP != 0
    }

    // ---- as the producer (fill and TX rings)

    /// Room for how many more descriptors (reading the kernel's index
    /// again only when the last one read leaves none).
    fn free(&mut self) -> u32 {
        let size = self.mask + 1;
        let free = size - self.local.wrapping_sub(self.cached);
        if free > 0 {
            return free;
        }
        self.cached = Self::load(self.consumer);
        size - self.local.wrapping_sub(self.cached)
    }

    /// Writes one descriptor (the caller checked [`Ring::free`]).
    fn push(&mut self, v: T) {
        // SAFETY: a slot the kernel has consumed (free() > 0), ours until
        // submitted.
        unsafe { self.slot(self.local).write(v) };
        self.local = self.local.wrapping_add(1);
    }

    /// Publishes what was pushed.
    fn submit(&self) {
        Self::store(self.producer, self.local);
    }

    // ---- as the consumer (RX and completion rings)

    /// How many descriptors are ready to read.
    fn ready(&mut self) -> u32 {
        self.cached = Self::load(self.producer);
        self.cached.wrapping_sub(self.local)
    }

    /// The descriptor `k` places after our index (`k` < [`Ring::ready`]).
    fn peek(&self, k: u32) -> T {
        // SAFETY: a slot the kernel has produced and not yet had back.
        unsafe { self.slot(self.local.wrapping_add(k)).read() }
    }

    /// Hands `n` read descriptors back to the kernel.
    fn release(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
        Self::store(self.consumer, self.local);
    }
}

/// An AF_XDP socket bound to one queue of one interface, with its own
/// UMEM. Frames move RX → (answered in place) TX → completion → fill, or
/// RX → fill when not answered; each frame is in exactly one place.
pub struct Socket {
    fd: OwnedFd,
    umem: Map,
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    fill: Ring<u64>,
    completion: Ring<u64>,
    /// Answers pushed on TX since the last kick.
    unsent: u32,
}

fn setsockopt<T>(fd: RawFd, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` is a live `T` of the size passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_XDP,
            name,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// How a socket moves frames: zero-copy, copy, or whichever the driver
/// allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BindMode {
    #[default]
    Auto,
    Copy,
    ZeroCopy,
}

impl Socket {
    /// Opens a socket on queue `queue` of interface `ifindex`, with every
    /// frame on the fill ring.
    pub fn open(ifindex: u32, queue: u32, mode: BindMode) -> io::Result<Socket> {
        // SAFETY: a plain socket call.
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: just created, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let raw = fd.as_raw_fd();
        let len = (FRAMES * FRAME) as usize;
        let umem = Map::new(None, len, 0)?;
        let reg = libc::xdp_umem_reg {
            addr: umem.at.as_ptr() as u64,
            len: len as u64,
            chunk_size: FRAME,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        setsockopt(raw, libc::XDP_UMEM_REG, &reg)?;
        setsockopt(raw, libc::XDP_UMEM_FILL_RING, &FILL_RING)?;
        setsockopt(raw, libc::XDP_UMEM_COMPLETION_RING, &COMPLETION_RING)?;
        setsockopt(raw, libc::XDP_RX_RING, &RX_RING)?;
        setsockopt(raw, libc::XDP_TX_RING, &TX_RING)?;
        // SAFETY: plain old data; the kernel fills it.
        let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
        let mut off_len = size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
        // SAFETY: `off` is live and `off_len` says its size.
        let r = unsafe {
            libc::getsockopt(
                raw,
                libc::SOL_XDP,
                libc::XDP_MMAP_OFFSETS,
                (&raw mut off).cast(),
                &mut off_len,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let rx = Ring::map(raw, &off.rx, RX_RING, libc::XDP_PGOFF_RX_RING as u64)?;
        let tx = Ring::map(raw, &off.tx, TX_RING, libc::XDP_PGOFF_TX_RING as u64)?;
        let fill = Ring::map(raw, &off.fr, FILL_RING, libc::XDP_UMEM_PGOFF_FILL_RING)?;
        let completion = Ring::map(
            raw,
            &off.cr,
            COMPLETION_RING,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING,
        )?;
        let mut socket = Socket {
            fd,
            umem,
            rx,
            tx,
            fill,
            completion,
            unsent: 0,
        };
        for i in 0..FRAMES {
            socket.fill.push(u64::from(i * FRAME));
        }
        socket.fill.submit();
        let flags = libc::XDP_USE_NEED_WAKEUP
            | match mode {
                BindMode::Auto => 0,
                BindMode::Copy => libc::XDP_COPY,
                BindMode::ZeroCopy => libc::XDP_ZEROCOPY,
            };
        let addr = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: `addr` is a live sockaddr_xdp of the size passed.
        let r = unsafe {
            libc::bind(
                raw,
                (&raw const addr).cast(),
                size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(socket)
    }

    /// Waits up to `timeout_ms` for frames to arrive.
    pub fn wait(&self, timeout_ms: i32) {
        let mut p = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one live pollfd.
        unsafe {
            libc::poll(&mut p, 1, timeout_ms);
        }
    }

    /// Frames sent since start are back: hand them to the fill ring.
    pub fn recycle_sent(&mut self) {
        let n = self.completion.ready();
        if n == 0 {
            return;
        }
        // The fill ring holds every frame, so there is always room.
        let room = self.fill.free().min(n);
        for k in 0..room {
            let addr = self.completion.peek(k);
            self.fill.push(addr);
        }
        self.completion.release(room);
        self.fill.submit();
    }

    /// How many received frames are waiting, at most `max`.
    pub fn received(&mut self, max: u32) -> u32 {
        self.rx.ready().min(max)
    }

    /// The `k`-th waiting frame: its address in the UMEM and its length.
    pub fn frame(&self, k: u32) -> (u64, u32) {
        let d = self.rx.peek(k);
        (d.addr, d.len)
    }

    /// The whole buffer of the frame at `addr`, for reading the query and
    /// writing the answer in place; `None` for an address outside the
    /// UMEM (never given by a sound kernel).
    pub fn buffer(&mut self, addr: u64) -> Option<&mut [u8]> {
        let start = usize::try_from(addr).ok()?;
        // The chunk this address lies in (a frame may start past the
        // chunk's start when the driver adds headroom).
        let end = (start / FRAME as usize + 1) * FRAME as usize;
        if end > self.umem.len {
            return None;
        }
        // SAFETY: inside the UMEM; the frame is ours (read from the RX
        // ring, not yet given back), so the kernel does not touch it, and
        // the borrow of `self` keeps it unique.
        Some(unsafe {
            std::slice::from_raw_parts_mut(self.umem.at.as_ptr().add(start), end - start)
        })
    }

    /// Queues the frame at `addr` (now `len` bytes of answer) for sending;
    /// `false` if the TX ring is full (then the frame goes back to the fill
    /// ring instead, and the answer is dropped as a full socket buffer
    /// would drop it).
    pub fn send(&mut self, addr: u64, len: u32) -> bool {
        if self.tx.free() == 0 {
            self.refill(addr);
            return false;
        }
        self.tx.push(libc::xdp_desc {
            addr,
            len,
            options: 0,
        });
        self.unsent += 1;
        true
    }

    /// Gives a frame that is not answered back for receiving.
    pub fn refill(&mut self, addr: u64) {
        if self.fill.free() > 0 {
            self.fill.push(addr);
        }
    }

    /// Done with the first `n` received frames (each sent or refilled):
    /// publishes the fill and TX rings and wakes the kernel to send.
    pub fn finish(&mut self, n: u32) {
        self.rx.release(n);
        self.fill.submit();
        if self.unsent > 0 {
            self.tx.submit();
            let unsent = std::mem::take(&mut self.unsent);
            if self.tx.needs_wakeup() {
                self.kick_tx(unsent);
            }
        }
    }

    /// Has the kernel send what the TX ring holds. In copy mode one kick
    /// sends at most a budget of frames (32 by default) and says EAGAIN
    /// when more are left; a batch of 64 answers needs two kicks, else the
    /// rest would wait until the next query arrives or the idle poll ends
    /// (a burst of 200 queries over veth had its last answers a second
    /// late). EAGAIN also means a full completion ring or a busy driver, so
    /// the kicks are bounded: enough for this batch, then what is left
    /// waits for the next pass.
    fn kick_tx(&mut self, frames: u32) {
        // One more than the batch needs, for frames a bounded pass left.
        for _ in 0..frames.div_ceil(TX_KICK_BUDGET) + 1 {
            // SAFETY: a send with no data: the kick AF_XDP documents.
            let r = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null(),
                    0,
                )
            };
            if r >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EAGAIN) {
                return;
            }
            // Sent frames make room in the completion ring.
            self.recycle_sent();
        }
    }

    /// The socket's descriptor, for the XSKMAP.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
