//! The Internet checksum (RFC 1071): the one's complement of the one's
//! complement sum of 16-bit words. One implementation for every place
//! Sextant writes or checks one (VRRP adverts, XDP answers, ICMP echoes),
//! so that a fix lands everywhere at once.
//!
//! The running total is a u64: it cannot overflow for any slice that fits
//! in memory, so carries are folded once at the end, and pseudo-header
//! words can be added to it in any order.
//!
//! The XDP path sums every answer frame, so the functions are `#[inline]`:
//! a call across crates is not inlined without LTO otherwise.

// Pure: no unsafe code, and (crate clippy.toml) no clock, socket, file or
// spawned task.
#![forbid(unsafe_code)]

/// Adds `bytes` as big-endian 16-bit words (an odd last byte padded with
/// zero) to the running total `sum`.
#[inline]
pub fn sum_words(mut sum: u64, bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(2);
    for w in &mut words {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    sum
}

/// Folds the carries of a running total into 16 bits (the one's
/// complement sum).
#[inline]
pub fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The checksum to put in a field that is zero while summing: over data
/// whose field already holds the right value it is 0.
#[inline]
pub fn checksum(sum: u64) -> u16 {
    !fold(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: words 0001 f203 f4f5 f6f7 sum to ddf2.
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum_words(0, &bytes)), 0xddf2);
        assert_eq!(checksum(sum_words(0, &bytes)), 0x220d);
    }

    #[test]
    fn data_with_its_checksum_sums_to_zero() {
        let mut bytes = vec![0x45, 0x00, 0x00, 0x1c, 0x12, 0x34, 0, 0, 0x40, 0x11];
        let c = checksum(sum_words(0, &bytes));
        bytes[6..8].copy_from_slice(&c.to_be_bytes());
        assert_eq!(checksum(sum_words(0, &bytes)), 0);
    }

    #[test]
    fn fold_carries() {
        assert_eq!(fold(0x1_fffe), 0xffff);
        assert_eq!(fold(0xffff_ffff_ffff), 0xffff);
        assert_eq!(fold(0x2_0001), 0x0003);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(sum_words(0, &[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
        assert_eq!(sum_words(7, &[0x12]), 7 + 0x1200);
    }
}
