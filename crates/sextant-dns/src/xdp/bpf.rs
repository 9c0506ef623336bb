//! The `bpf(2)` calls of the XDP path: the socket map, loading the program
//! and attaching it to an interface through a BPF link.
//!
//! Unsafe code: each call passes a zero-initialised `union bpf_attr`
//! (a byte buffer laid out as linux/bpf.h says) that lives for the call.
//! A link detaches the program when its descriptor is closed, so the
//! program goes away with the process however that ends.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use super::program::Insn;

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
/// In the driver (native XDP) rather than after the kernel built an skb.
pub const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
/// After the kernel built an skb: every driver has it, and it is slower.
pub const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;

/// `union bpf_attr`: large enough for every command used here, zeroed
/// (the kernel refuses non-zero bytes past the fields it knows).
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Self {
        Attr([0; 128])
    }
    fn u32(&mut self, at: usize, v: u32) -> &mut Self {
        self.0[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, at: usize, v: u64) -> &mut Self {
        self.0[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn name(&mut self, at: usize, name: &str) -> &mut Self {
        let n = name.len().min(15);
        self.0[at..at + n].copy_from_slice(&name.as_bytes()[..n]);
        self
    }
}

fn bpf(cmd: libc::c_long, attr: &mut Attr) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, writable buffer of the size passed, laid
    // out as the kernel expects for `cmd`; pointers inside it (set by the
    // callers) point at memory that outlives the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr.0.as_mut_ptr(),
            std::mem::size_of::<Attr>() as libc::c_uint,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn fd(r: libc::c_long) -> io::Result<OwnedFd> {
    let raw = RawFd::try_from(r).map_err(|_| io::Error::other("bpf returned no descriptor"))?;
    // SAFETY: the kernel just returned this descriptor to us; nothing else
    // owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// An XSKMAP (queue index → AF_XDP socket) with `entries` slots.
pub fn create_socket_map(entries: u32) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32(0, BPF_MAP_TYPE_XSKMAP)
        .u32(4, 4)
        .u32(8, 4)
        .u32(12, entries)
        .name(28, "sextant_xsks");
    fd(bpf(BPF_MAP_CREATE, &mut a)?)
}

/// Puts the socket `xsk` in slot `queue` of the map.
pub fn set_socket(map: RawFd, queue: u32, xsk: RawFd) -> io::Result<()> {
    let key = queue;
    let value = xsk as u32;
    let mut a = Attr::new();
    a.u32(0, map as u32)
        .u64(8, (&raw const key) as u64)
        .u64(16, (&raw const value) as u64)
        .u64(24, 0);
    bpf(BPF_MAP_UPDATE_ELEM, &mut a).map(|_| ())
}

/// Loads the program; on refusal the error carries the verifier's log.
pub fn load(program: &[Insn]) -> io::Result<OwnedFd> {
    let license = c"GPL";
    let mut log = vec![0u8; 64 * 1024];
    let mut a = Attr::new();
    a.u32(0, BPF_PROG_TYPE_XDP)
        .u32(4, program.len() as u32)
        .u64(8, program.as_ptr() as u64)
        .u64(16, license.as_ptr() as u64)
        .u32(24, 1)
        .u32(28, log.len() as u32)
        .u64(32, log.as_mut_ptr() as u64)
        .name(48, "sextant_dns")
        .u32(68, BPF_XDP);
    match bpf(BPF_PROG_LOAD, &mut a) {
        Ok(r) => fd(r),
        Err(e) => {
            let end = log.iter().position(|b| *b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            let last: Vec<&str> = text.lines().rev().take(6).collect();
            Err(io::Error::new(
                e.kind(),
                format!(
                    "the kernel refused the XDP program ({e}): {}",
                    last.into_iter().rev().collect::<Vec<_>>().join(" | ")
                ),
            ))
        }
    }
}

/// Attaches the program to interface `ifindex` with `flags`
/// ([`XDP_FLAGS_DRV_MODE`] or [`XDP_FLAGS_SKB_MODE`]); it stays attached
/// while the returned link is open.
pub fn attach(program: RawFd, ifindex: u32, flags: u32) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32(0, program as u32)
        .u32(4, ifindex)
        .u32(8, BPF_XDP)
        .u32(12, flags);
    fd(bpf(BPF_LINK_CREATE, &mut a)?)
}
