//! The XDP program, as eBPF instructions built here (no compiler, no
//! object file): it sends UDP to the listening addresses and ports to the
//! AF_XDP socket of the queue the frame arrived on and passes every other
//! frame (ARP, TCP, other ports, fragments, VLAN tags, IPv4 options, IPv6
//! extension headers) to the kernel unchanged.
//!
//! Safe code: this only produces the instruction words; `bpf` loads them
//! and the kernel's verifier checks them.

use std::net::SocketAddr;

/// One eBPF instruction (`struct bpf_insn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

// Instruction classes and operations (linux/bpf_common.h, linux/bpf.h).
const LDX_W: u8 = 0x61;
const LDX_H: u8 = 0x69;
const LDX_B: u8 = 0x71;
const MOV64_X: u8 = 0xbf;
const MOV64_K: u8 = 0xb7;
const ADD64_K: u8 = 0x07;
const AND64_K: u8 = 0x57;
const JGT_X: u8 = 0x2d;
const JA: u8 = 0x05;
/// 32-bit compares (`BPF_JMP32`), so that immediates above 2^31 compare
/// as the unsigned words they are.
const JNE32_K: u8 = 0x56;
const JEQ32_K: u8 = 0x16;
const LD_IMM64: u8 = 0x18;
const CALL: u8 = 0x85;
const EXIT: u8 = 0x95;
const PSEUDO_MAP_FD: u8 = 1;
const HELPER_REDIRECT_MAP: i32 = 51;
/// `XDP_PASS`: the program's answer for every frame it does not take, and
/// `bpf_redirect_map`'s when the queue has no socket.
pub const XDP_PASS: i32 = 2;

// Registers.
const R0: u8 = 0;
const R1: u8 = 1;
const R2: u8 = 2;
const R3: u8 = 3;
const R4: u8 = 4;
const R5: u8 = 5;
const R6: u8 = 6;

/// Offsets in `struct xdp_md`.
const MD_DATA: i16 = 0;
const MD_DATA_END: i16 = 4;
const MD_RX_QUEUE: i16 = 16;

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

/// A jump whose target is a label, resolved by [`Asm::finish`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Pass,
    Redirect,
    Ipv4,
    Ipv6,
    /// The next listening address's check.
    Next(usize),
}

/// A tiny assembler: instructions with label jumps.
#[derive(Default)]
struct Asm {
    code: Vec<Insn>,
    jumps: Vec<(usize, Label)>,
    labels: Vec<(Label, usize)>,
}

impl Asm {
    fn emit(&mut self, i: Insn) {
        self.code.push(i);
    }
    fn jump(&mut self, code: u8, dst: u8, src: u8, imm: i32, to: Label) {
        self.jumps.push((self.code.len(), to));
        self.emit(insn(code, dst, src, 0, imm));
    }
    fn label(&mut self, l: Label) {
        self.labels.push((l, self.code.len()));
    }
    /// `r5 = load(r2 + off)` then jump to `to` unless it equals `value`
    /// (the bytes as they lie in the frame, read as a little-endian word).
    fn expect(&mut self, load: u8, off: i16, value: i32, to: Label) {
        self.emit(insn(load, R5, R2, off, 0));
        self.jump(JNE32_K, R5, 0, value, to);
    }
    /// Jumps to `to` when fewer than `len` bytes of the frame are there;
    /// this bound is also what lets the verifier allow the loads after it.
    fn need(&mut self, len: i32, to: Label) {
        self.emit(insn(MOV64_X, R4, R2, 0, 0));
        self.emit(insn(ADD64_K, R4, 0, 0, len));
        self.jump(JGT_X, R4, R3, 0, to);
    }
    fn finish(mut self) -> Vec<Insn> {
        for (at, to) in std::mem::take(&mut self.jumps) {
            let target = self
                .labels
                .iter()
                .find(|(l, _)| *l == to)
                .map(|(_, t)| *t)
                .unwrap_or(at + 1);
            // Relative to the next instruction.
            self.code[at].off = (target as i64 - at as i64 - 1) as i16;
        }
        self.code
    }
}

/// A 16-bit field's bytes as the little-endian load of them reads.
fn le16(v: u16) -> i32 {
    i32::from(u16::from_le_bytes(v.to_be_bytes()))
}

/// Four bytes as the little-endian 32-bit load of them reads.
fn le32(b: [u8; 4]) -> i32 {
    u32::from_le_bytes(b) as i32
}

/// The program for `listen` (each an address, or the unspecified address
/// for any, and a port), redirecting through the XSKMAP whose descriptor
/// is `map_fd`.
pub fn build(listen: &[SocketAddr], map_fd: i32) -> Vec<Insn> {
    let mut a = Asm::default();
    a.emit(insn(MOV64_X, R6, R1, 0, 0));
    a.emit(insn(LDX_W, R2, R1, MD_DATA, 0));
    a.emit(insn(LDX_W, R3, R1, MD_DATA_END, 0));
    a.need(14, Label::Pass);
    a.emit(insn(LDX_H, R5, R2, 12, 0));
    a.jump(JEQ32_K, R5, 0, le16(0x0800), Label::Ipv4);
    a.jump(JEQ32_K, R5, 0, le16(0x86dd), Label::Ipv6);
    a.jump(JA, 0, 0, 0, Label::Pass);

    let v4: Vec<_> = listen.iter().filter(|s| s.is_ipv4()).collect();
    let v6: Vec<_> = listen.iter().filter(|s| s.is_ipv6()).collect();
    let mut next = 0;

    a.label(Label::Ipv4);
    a.need(14 + 20 + 8, Label::Pass);
    a.expect(LDX_B, 14, 0x45, Label::Pass);
    a.expect(LDX_B, 23, 17, Label::Pass);
    // Flags and fragment offset, less DF: zero unless a fragment.
    a.emit(insn(LDX_H, R5, R2, 20, 0));
    a.emit(insn(AND64_K, R5, 0, 0, le16(0x3fff)));
    a.jump(JNE32_K, R5, 0, 0, Label::Pass);
    for s in &v4 {
        let SocketAddr::V4(s) = s else { continue };
        let miss = Label::Next(next);
        next += 1;
        if !s.ip().is_unspecified() {
            a.expect(LDX_W, 30, le32(s.ip().octets()), miss);
        }
        a.expect(LDX_H, 36, le16(s.port()), miss);
        a.jump(JA, 0, 0, 0, Label::Redirect);
        a.label(miss);
    }
    a.jump(JA, 0, 0, 0, Label::Pass);

    a.label(Label::Ipv6);
    a.need(14 + 40 + 8, Label::Pass);
    a.expect(LDX_B, 20, 17, Label::Pass);
    for s in &v6 {
        let SocketAddr::V6(s) = s else { continue };
        let miss = Label::Next(next);
        next += 1;
        if !s.ip().is_unspecified() {
            let o = s.ip().octets();
            for (k, word) in o.chunks_exact(4).enumerate() {
                let w = [word[0], word[1], word[2], word[3]];
                a.expect(LDX_W, 38 + 4 * k as i16, le32(w), miss);
            }
        }
        a.expect(LDX_H, 56, le16(s.port()), miss);
        a.jump(JA, 0, 0, 0, Label::Redirect);
        a.label(miss);
    }
    a.jump(JA, 0, 0, 0, Label::Pass);

    a.label(Label::Redirect);
    a.emit(insn(LDX_W, R2, R6, MD_RX_QUEUE, 0));
    a.emit(insn(LD_IMM64, R1, PSEUDO_MAP_FD, 0, map_fd));
    a.emit(insn(0, 0, 0, 0, 0));
    a.emit(insn(MOV64_K, R3, 0, 0, XDP_PASS));
    a.emit(insn(CALL, 0, 0, 0, HELPER_REDIRECT_MAP));
    a.emit(insn(EXIT, 0, 0, 0, 0));

    a.label(Label::Pass);
    a.emit(insn(MOV64_K, R0, 0, 0, XDP_PASS));
    a.emit(insn(EXIT, 0, 0, 0, 0));
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every jump lands inside the program, and the last instruction exits.
    #[test]
    fn jumps_stay_inside_the_program() {
        let listen: Vec<SocketAddr> = vec![
            "10.53.0.1:53".parse().unwrap(),
            "0.0.0.0:5353".parse().unwrap(),
            "[fd53::1]:53".parse().unwrap(),
            "[::]:53".parse().unwrap(),
        ];
        let p = build(&listen, 7);
        assert_eq!(p.last().unwrap().code, EXIT);
        for (i, ins) in p.iter().enumerate() {
            let class = ins.code & 0x07;
            if (class == 0x05 || class == 0x06) && ins.code != CALL && ins.code != EXIT {
                let target = i as i64 + 1 + i64::from(ins.off);
                assert!(
                    target > i as i64 && (target as usize) < p.len(),
                    "jump {i} to {target}"
                );
            }
        }
    }

    #[test]
    fn words_are_compared_as_they_lie_in_the_frame() {
        // Port 53 is the bytes 00 35; a little-endian load reads 0x3500.
        assert_eq!(le16(53), 0x3500);
        assert_eq!(le16(0x0800), 0x0008);
        assert_eq!(le32([10, 53, 0, 1]), 0x0100_350a);
        // 192.168.x.x is above 2^31: compared as the same 32 bits.
        assert_eq!(le32([1, 0, 168, 192]) as u32, 0xc0a8_0001);
    }

    #[test]
    fn only_listening_families_get_address_checks() {
        let v4 = build(&["10.53.0.1:53".parse().unwrap()], 3);
        let both = build(
            &[
                "10.53.0.1:53".parse().unwrap(),
                "[fd53::1]:53".parse().unwrap(),
            ],
            3,
        );
        assert!(both.len() > v4.len());
        // The map descriptor is in the LD_IMM64's immediate.
        let ld = v4.iter().find(|i| i.code == LD_IMM64).unwrap();
        assert_eq!((ld.imm, ld.regs >> 4), (3, PSEUDO_MAP_FD));
    }
}
