//! VRRPv3 advertisements: encoding, decoding and validation.
//!
//! The wire format is RFC 5798 §5.1 with the RFC 9568 clarifications. The
//! bytes handled here are the VRRP message, i.e. the IP payload; the IP
//! header (protocol [`IPPROTO_VRRP`], TTL / hop limit [`VRRP_TTL`]) is the
//! socket layer's job, which hands us the TTL and addresses it saw.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Version| Type  | Virtual Rtr ID|   Priority    |Count IPvX Addr|
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |(rsvd) |     Max Adver Int     |          Checksum             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                     IPvX Address(es) ...                      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Decoding never panics and never trusts a length it has not checked: the
//! input comes straight off a raw socket.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use sextant_checksum::{checksum as inet_checksum, sum_words};

/// IP protocol number assigned to VRRP (RFC 5798 §5.1.1.4): the raw socket's
/// protocol and the next header in the IPv6 pseudo-header.
pub const IPPROTO_VRRP: u8 = 112;

/// IPv4 multicast group adverts are sent to (RFC 5798 §5.1.1.2).
pub const VRRP_GROUP_V4: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 18);

/// IPv6 multicast group adverts are sent to (RFC 5798 §5.1.2.2).
pub const VRRP_GROUP_V6: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x12);

/// The only TTL / hop limit an advert may be sent and received with
/// (RFC 5798 §5.1.1.3, §7.1): anything lower was routed, so it cannot come
/// from a peer on our link and may be spoofed from afar.
pub const VRRP_TTL: u8 = 255;

/// VRRP version this codec speaks (the high nibble of byte 0).
pub const VRRP_VERSION: u8 = 3;

/// The only VRRPv3 message type, ADVERTISEMENT (the low nibble of byte 0).
pub const VRRP_TYPE_ADVERTISEMENT: u8 = 1;

/// Length of the fixed header before the addresses.
pub const HEADER_LEN: usize = 8;

/// Largest Max Adver Int: the field is 12 bits of centiseconds (40.95 s).
pub const MAX_ADVER_INT_MAX: u16 = 0x0fff;

/// Largest address count: the field is one byte.
pub const MAX_ADDRS: usize = 255;

/// Address family of an advert. VRRP runs one virtual router per family
/// (RFC 5798 §5.2.9); IPv4 and IPv6 adverts differ in address size,
/// checksum and virtual MAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// IPv4: 4-byte addresses, group 224.0.0.18, MAC 00:00:5e:00:01:VRID.
    V4,
    /// IPv6: 16-byte addresses, group ff02::12, MAC 00:00:5e:00:02:VRID.
    V6,
}

impl Family {
    /// The family of an address.
    pub fn of(addr: IpAddr) -> Family {
        match addr {
            IpAddr::V4(_) => Family::V4,
            IpAddr::V6(_) => Family::V6,
        }
    }

    /// Bytes per address in the message.
    pub fn addr_len(self) -> usize {
        match self {
            Family::V4 => 4,
            Family::V6 => 16,
        }
    }

    /// The multicast group adverts of this family are sent to.
    pub fn group(self) -> IpAddr {
        match self {
            Family::V4 => IpAddr::V4(VRRP_GROUP_V4),
            Family::V6 => IpAddr::V6(VRRP_GROUP_V6),
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        })
    }
}

/// The virtual router MAC address the master answers ARP / ND with and
/// sends from (RFC 5798 §7.3): 00:00:5e:00:01:VRID for IPv4,
/// 00:00:5e:00:02:VRID for IPv6, so that a failover needs no ARP cache
/// change on the hosts.
pub fn virtual_mac(vrid: u8, family: Family) -> [u8; 6] {
    let fam = match family {
        Family::V4 => 0x01,
        Family::V6 => 0x02,
    };
    [0x00, 0x00, 0x5e, 0x00, fam, vrid]
}

/// What the checksum covers.
///
/// IPv6 adverts always include the IPv6 pseudo-header (RFC 8200 §8.1). For
/// IPv4, RFC 9568 says the checksum covers the VRRP message only, but
/// keepalived (2.2) and others include the IPv4 pseudo-header, as RFC 5798's
/// ambiguous text was often read. A node must send what its peers expect,
/// so the mode is a setting for sending and is reported on receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumMode {
    /// The VRRP message alone (RFC 9568 for IPv4; never valid for IPv6).
    NoPseudoHeader,
    /// The message preceded by the IP pseudo-header: src, dst, length and
    /// protocol 112 (IPv6 always; IPv4 as keepalived does).
    PseudoHeader,
}

/// One VRRPv3 advertisement, as sent by a virtual router's master.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Advert {
    /// Virtual router ID, 1..=255 (0 is invalid on the wire).
    pub vrid: u8,
    /// Sender's priority: 255 owns the addresses, 0 means "master leaving,
    /// take over now" (RFC 5798 §5.2.4).
    pub priority: u8,
    /// Advertisement interval in centiseconds, 1..=4095 (12 bits on the
    /// wire); backups derive their master-down timer from it.
    pub max_advert_int_cs: u16,
    /// The virtual addresses, all of the packet's family, 1..=255 of them.
    pub addrs: Vec<IpAddr>,
}

/// A successfully decoded advert and the checksum mode that validated it,
/// so that the node can notice peers checksumming differently from itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decoded {
    /// The advert.
    pub advert: Advert,
    /// The checksum mode the message's checksum was valid in. For IPv4, if
    /// it happens to be valid in both (the pseudo-header sums to zero in
    /// one's complement, about one in 65,535 address pairs), this says
    /// [`ChecksumMode::NoPseudoHeader`]; IPv6 is always
    /// [`ChecksumMode::PseudoHeader`].
    pub checksum: ChecksumMode,
}

/// Why an advert was rejected. Each variant is one reason an operator may
/// need to tell apart (and count, see [`AdvertError::kind`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdvertError {
    /// TTL / hop limit other than 255: the packet crossed a router.
    #[error("{} {ttl}, must be 255 (sent from more than one hop away?)", ttl_name(*.family))]
    BadTtl {
        /// The TTL or hop limit received.
        ttl: u8,
        /// The packet's family, which names the field.
        family: Family,
    },
    /// An address of the other family than the packet's: source and
    /// destination of different families, an IPv4-mapped IPv6 address in an
    /// IPv6 advert, or (when checking an advert to send) a mixed list.
    #[error("{addr} is not an {expected} address, in an {expected} advert")]
    WrongFamily {
        /// The offending address.
        addr: IpAddr,
        /// The packet's family.
        expected: Family,
    },
    /// Shorter than the 8-byte fixed header.
    #[error("message of {len} bytes, shorter than the 8-byte VRRP header (truncated?)")]
    Short {
        /// Bytes received.
        len: usize,
    },
    /// Version other than 3 (a VRRPv2 peer, or not VRRP at all).
    #[error("VRRP version {version}, must be 3 (a VRRPv2 peer on the link?)")]
    BadVersion {
        /// Version received.
        version: u8,
    },
    /// Type other than 1, ADVERTISEMENT (the only VRRPv3 type).
    #[error("VRRP type {ty}, must be 1 (ADVERTISEMENT)")]
    BadType {
        /// Type received.
        ty: u8,
    },
    /// Too short for the address count in the header.
    #[error(
        "message of {len} bytes, but its count of {count} {family} addresses needs {needed} (truncated?)"
    )]
    CountMismatch {
        /// Address count in the header.
        count: u8,
        /// The packet's family.
        family: Family,
        /// Bytes received.
        len: usize,
        /// Bytes the count requires.
        needed: usize,
    },
    /// Checksum wrong in every mode this family allows.
    #[error("{}", checksum_message(*.found, *.expected_pseudo_header, *.expected_no_pseudo_header))]
    BadChecksum {
        /// Checksum in the message.
        found: u16,
        /// The checksum the message should carry with the pseudo-header.
        expected_pseudo_header: u16,
        /// IPv4 only: the checksum it should carry without (RFC 9568).
        expected_no_pseudo_header: Option<u16>,
    },
    /// An address count of zero: a virtual router has at least one address.
    #[error("address count 0, must be at least 1")]
    ZeroCount,
    /// More addresses than the one-byte count can say (when sending).
    #[error("{count} addresses, at most 255 fit in an advert")]
    TooManyAddrs {
        /// Addresses given.
        count: usize,
    },
    /// Max Adver Int of zero, which would make backups' timers fire at once.
    #[error("Max Adver Int 0, must be 1 to 4095 centiseconds")]
    ZeroInterval,
    /// Max Adver Int above 12 bits (when sending).
    #[error("Max Adver Int {cs} centiseconds, at most 4095 fit in 12 bits")]
    IntervalTooLarge {
        /// Interval given.
        cs: u16,
    },
    /// VRID 0, which RFC 5798 does not allow (1..=255).
    #[error("VRID 0, must be 1 to 255")]
    ZeroVrid,
}

fn ttl_name(family: Family) -> &'static str {
    match family {
        Family::V4 => "TTL",
        Family::V6 => "hop limit",
    }
}

fn checksum_message(found: u16, pseudo: u16, no_pseudo: Option<u16>) -> String {
    match no_pseudo {
        Some(no) => format!(
            "checksum {found:#06x}, expected {no:#06x} (RFC 9568, without pseudo-header) \
             or {pseudo:#06x} (with the IPv4 pseudo-header, as keepalived) (corrupt, or src/dst rewritten?)"
        ),
        None => format!(
            "checksum {found:#06x}, expected {pseudo:#06x} (with the IPv6 pseudo-header) \
             (corrupt, or src/dst rewritten?)"
        ),
    }
}

impl AdvertError {
    /// A short stable name for the reason, for counters and log fields
    /// (`bad_ttl`, `bad_checksum`, ...). Names never change once released.
    pub fn kind(&self) -> &'static str {
        match self {
            AdvertError::BadTtl { .. } => "bad_ttl",
            AdvertError::WrongFamily { .. } => "bad_family",
            AdvertError::Short { .. } => "short",
            AdvertError::BadVersion { .. } => "bad_version",
            AdvertError::BadType { .. } => "bad_type",
            AdvertError::CountMismatch { .. } => "count_mismatch",
            AdvertError::BadChecksum { .. } => "bad_checksum",
            AdvertError::ZeroCount => "zero_count",
            AdvertError::TooManyAddrs { .. } => "too_many_addrs",
            AdvertError::ZeroInterval => "zero_interval",
            AdvertError::IntervalTooLarge { .. } => "bad_interval",
            AdvertError::ZeroVrid => "zero_vrid",
        }
    }
}

impl Advert {
    /// Checks that this advert can be sent in a `family` packet and decoded
    /// back unchanged: VRID ≥ 1, 1..=255 addresses all of `family` (and no
    /// IPv4-mapped IPv6 ones), interval 1..=4095. [`Advert::decode`] applies
    /// the same checks; call this on configuration, since
    /// [`Advert::encode`] cannot fail.
    pub fn check(&self, family: Family) -> Result<(), AdvertError> {
        if self.vrid == 0 {
            return Err(AdvertError::ZeroVrid);
        }
        if self.addrs.is_empty() {
            return Err(AdvertError::ZeroCount);
        }
        if self.addrs.len() > MAX_ADDRS {
            return Err(AdvertError::TooManyAddrs {
                count: self.addrs.len(),
            });
        }
        if self.max_advert_int_cs == 0 {
            return Err(AdvertError::ZeroInterval);
        }
        if self.max_advert_int_cs > MAX_ADVER_INT_MAX {
            return Err(AdvertError::IntervalTooLarge {
                cs: self.max_advert_int_cs,
            });
        }
        for &addr in &self.addrs {
            if !of_family(addr, family) {
                return Err(AdvertError::WrongFamily {
                    addr,
                    expected: family,
                });
            }
        }
        Ok(())
    }

    /// Encodes the VRRP message (the IP payload) to send from `src` to `dst`
    /// with the checksum computed in `mode`.
    ///
    /// The packet's family is `src`'s. This cannot fail, so that the send
    /// path has no error to handle: validate the advert once with
    /// [`Advert::check`]. Out of contract input still gives a well-formed
    /// message rather than a panic: addresses of the other family are
    /// skipped, only the first 255 are sent, the interval is cut to 12
    /// bits. For IPv6, `mode` is ignored: the pseudo-header is mandatory.
    pub fn encode(&self, mode: ChecksumMode, src: IpAddr, dst: IpAddr) -> Vec<u8> {
        let family = Family::of(src);
        let mut out = Vec::with_capacity(HEADER_LEN + self.addrs.len() * family.addr_len());
        out.extend_from_slice(&[
            (VRRP_VERSION << 4) | VRRP_TYPE_ADVERTISEMENT,
            self.vrid,
            self.priority,
            0, // count, set below
        ]);
        out.extend_from_slice(&(self.max_advert_int_cs & MAX_ADVER_INT_MAX).to_be_bytes());
        out.extend_from_slice(&[0, 0]); // checksum, set below
        let mut count: u8 = 0;
        for &addr in &self.addrs {
            if count == u8::MAX {
                break;
            }
            match (family, addr) {
                (Family::V4, IpAddr::V4(a)) => out.extend_from_slice(&a.octets()),
                (Family::V6, IpAddr::V6(a)) => out.extend_from_slice(&a.octets()),
                _ => continue,
            }
            count += 1;
        }
        out[3] = count;
        let mode = effective_mode(family, mode);
        let sum = checksum(mode, src, dst, &out);
        out[6..8].copy_from_slice(&sum.to_be_bytes());
        out
    }

    /// Decodes and validates a received VRRP message (the IP payload),
    /// given the TTL / hop limit and addresses of its IP header.
    ///
    /// Checks, in this order (the first failure is returned): TTL / hop
    /// limit 255, `src` and `dst` of one family, the header's length,
    /// version 3, type 1, length for the address count, the checksum (IPv4:
    /// either mode; IPv6: pseudo-header), then VRID, count and interval
    /// non-zero and no IPv4-mapped address in an IPv6 advert. The checksum
    /// comes before the field checks so that a corrupt packet is counted as
    /// corrupt. Reserved bits are ignored, as RFC 5798 requires.
    ///
    /// Bytes after the addresses are accepted and ignored (RFC 5798 says to
    /// ignore what a receiver does not understand), but they are part of the
    /// IP payload the sender checksummed, so the checksum covers all of
    /// `bytes`. The destination is not checked against the group: unicast
    /// peers (keepalived `unicast_peer`) are legitimate; that is the
    /// caller's policy.
    pub fn decode(
        bytes: &[u8],
        ttl_or_hop_limit: u8,
        src: IpAddr,
        dst: IpAddr,
    ) -> Result<Decoded, AdvertError> {
        let family = Family::of(src);
        if ttl_or_hop_limit != VRRP_TTL {
            return Err(AdvertError::BadTtl {
                ttl: ttl_or_hop_limit,
                family,
            });
        }
        if Family::of(dst) != family {
            return Err(AdvertError::WrongFamily {
                addr: dst,
                expected: family,
            });
        }
        let Some(&[b0, vrid, priority, count, i0, i1, c0, c1]) = bytes.first_chunk::<HEADER_LEN>()
        else {
            return Err(AdvertError::Short { len: bytes.len() });
        };
        let version = b0 >> 4;
        if version != VRRP_VERSION {
            return Err(AdvertError::BadVersion { version });
        }
        let ty = b0 & 0x0f;
        if ty != VRRP_TYPE_ADVERTISEMENT {
            return Err(AdvertError::BadType { ty });
        }
        let addr_len = family.addr_len();
        let needed = HEADER_LEN + usize::from(count) * addr_len;
        let Some(addr_bytes) = bytes.get(HEADER_LEN..needed) else {
            return Err(AdvertError::CountMismatch {
                count,
                family,
                len: bytes.len(),
                needed,
            });
        };

        let found = u16::from_be_bytes([c0, c1]);
        let valid = |mode| checksum(mode, src, dst, bytes) == 0;
        let mode = match family {
            Family::V4 if valid(ChecksumMode::NoPseudoHeader) => ChecksumMode::NoPseudoHeader,
            _ if valid(ChecksumMode::PseudoHeader) => ChecksumMode::PseudoHeader,
            _ => {
                // What the sender should have put: the checksum over the
                // message with the field zeroed (a copy: error path only).
                let mut zeroed = bytes.to_vec();
                if let Some(field) = zeroed.get_mut(6..8) {
                    field.fill(0);
                }
                let expected = |mode| checksum(mode, src, dst, &zeroed);
                return Err(AdvertError::BadChecksum {
                    found,
                    expected_pseudo_header: expected(ChecksumMode::PseudoHeader),
                    expected_no_pseudo_header: match family {
                        Family::V4 => Some(expected(ChecksumMode::NoPseudoHeader)),
                        Family::V6 => None,
                    },
                });
            }
        };

        let addrs = match family {
            Family::V4 => addr_bytes
                .chunks_exact(4)
                .filter_map(|c| <[u8; 4]>::try_from(c).ok())
                .map(|o| IpAddr::V4(Ipv4Addr::from(o)))
                .collect(),
            Family::V6 => addr_bytes
                .chunks_exact(16)
                .filter_map(|c| <[u8; 16]>::try_from(c).ok())
                .map(|o| IpAddr::V6(Ipv6Addr::from(o)))
                .collect(),
        };
        let advert = Advert {
            vrid,
            priority,
            max_advert_int_cs: u16::from_be_bytes([i0, i1]) & MAX_ADVER_INT_MAX,
            addrs,
        };
        advert.check(family)?;
        Ok(Decoded {
            advert,
            checksum: mode,
        })
    }
}

/// Whether `addr` may appear in a `family` advert. IPv4-mapped IPv6
/// addresses are IPv4 addresses in disguise and have no place in an IPv6
/// virtual router.
fn of_family(addr: IpAddr, family: Family) -> bool {
    match (addr, family) {
        (IpAddr::V4(_), Family::V4) => true,
        (IpAddr::V6(a), Family::V6) => a.to_ipv4_mapped().is_none(),
        _ => false,
    }
}

/// IPv6 always uses the pseudo-header, whatever was asked.
fn effective_mode(family: Family, mode: ChecksumMode) -> ChecksumMode {
    match family {
        Family::V4 => mode,
        Family::V6 => ChecksumMode::PseudoHeader,
    }
}

/// The one's complement of the one's complement sum of `msg`, preceded in
/// [`ChecksumMode::PseudoHeader`] by the pseudo-header for `src`, `dst`
/// (IPv4: RFC 768 style src, dst, zero, protocol, 16-bit length; IPv6:
/// RFC 8200 §8.1 src, dst, 32-bit length, three zero bytes, next header).
/// Both layouts sum to the same words: addresses, length, protocol.
///
/// Over a message whose checksum field holds the right value this is 0;
/// over one whose field is zero it is the value to put there.
fn checksum(mode: ChecksumMode, src: IpAddr, dst: IpAddr, msg: &[u8]) -> u16 {
    let mut sum = sum_words(0, msg);
    if mode == ChecksumMode::PseudoHeader {
        sum += addr_sum(src) + addr_sum(dst);
        // The length is 16 bits in IPv4's pseudo-header and 32 in IPv6's;
        // summing both halves covers both (the high half is 0 for IPv4's
        // at most 65,535 bytes).
        let len = msg.len() as u64;
        sum += (len >> 16) & 0xffff;
        sum += len & 0xffff;
        sum += u64::from(IPPROTO_VRRP);
    }
    inet_checksum(sum)
}

fn addr_sum(addr: IpAddr) -> u64 {
    match addr {
        IpAddr::V4(a) => sum_words(0, &a.octets()),
        IpAddr::V6(a) => sum_words(0, &a.octets()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (folded).
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(sextant_checksum::fold(sum_words(0, &bytes)), 0xddf2);
        assert_eq!(
            checksum(
                ChecksumMode::NoPseudoHeader,
                IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                &bytes
            ),
            !0xddf2
        );
    }

    #[test]
    fn ipv6_ignores_requested_mode() {
        assert_eq!(
            effective_mode(Family::V6, ChecksumMode::NoPseudoHeader),
            ChecksumMode::PseudoHeader
        );
    }
}
