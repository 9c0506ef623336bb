//! VRRPv3 advert codec: round trips, a hand-built known answer, and one test
//! per rejection. Checksums here come from `ref_checksum`, written from
//! RFC 1071 independently of the crate's code.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use sextant_vrrp::packet::{
    Advert, AdvertError, ChecksumMode, Decoded, Family, IPPROTO_VRRP, VRRP_GROUP_V4, VRRP_GROUP_V6,
    VRRP_TTL, virtual_mac,
};

const SRC4: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
const DST4: IpAddr = IpAddr::V4(VRRP_GROUP_V4);
const SRC6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1));
const DST6: IpAddr = IpAddr::V6(VRRP_GROUP_V6);

/// Reference Internet checksum: add the 16-bit big-endian words (an odd
/// last byte padded with zero) of the pseudo-header, if any, and the
/// message in a u32, fold the carries, complement.
fn ref_checksum(pseudo: bool, src: IpAddr, dst: IpAddr, msg: &[u8]) -> u16 {
    let mut data: Vec<u8> = Vec::new();
    if pseudo {
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                // RFC 768-style: src, dst, zero, protocol, 16-bit length.
                data.extend_from_slice(&s.octets());
                data.extend_from_slice(&d.octets());
                data.push(0);
                data.push(112);
                data.extend_from_slice(&(msg.len() as u16).to_be_bytes());
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                // RFC 8200 §8.1: src, dst, 32-bit length, 3 zeros, next header.
                data.extend_from_slice(&s.octets());
                data.extend_from_slice(&d.octets());
                data.extend_from_slice(&(msg.len() as u32).to_be_bytes());
                data.extend_from_slice(&[0, 0, 0, 112]);
            }
            _ => panic!("mixed families in test"),
        }
    }
    data.extend_from_slice(msg);
    if data.len() % 2 == 1 {
        data.push(0);
    }
    let mut sum: u32 = 0;
    for w in data.chunks(2) {
        sum += (u32::from(w[0]) << 8) | u32::from(w[1]);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Zeroes the checksum field of `msg` and fills it in again by the
/// reference, so that a hand-mutated message gets past the checksum check.
fn rechecksum(msg: &mut [u8], pseudo: bool, src: IpAddr, dst: IpAddr) {
    msg[6] = 0;
    msg[7] = 0;
    let c = ref_checksum(pseudo, src, dst, msg);
    msg[6..8].copy_from_slice(&c.to_be_bytes());
}

fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}

fn v6(last: u16) -> IpAddr {
    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, last))
}

fn advert(addrs: Vec<IpAddr>) -> Advert {
    Advert {
        vrid: 51,
        priority: 100,
        max_advert_int_cs: 100,
        addrs,
    }
}

/// The known-answer message of `known_answer_ipv4`, checksum field zero.
fn kat_message() -> Vec<u8> {
    vec![
        0x31, // version 3 (high nibble) | type 1 ADVERTISEMENT (low nibble)
        51,   // VRID 51
        100,  // priority 100
        1,    // count of IPv4 addresses: 1
        0x00, // rsvd (4 bits, zero) | Max Adver Int high 4 bits
        0x64, // Max Adver Int low 8 bits: 100 cs = 1 s
        0x00, // checksum high byte (filled in below)
        0x00, // checksum low byte
        192, 0, 2, 51, // IPv4 address 192.0.2.51
    ]
}

fn reject(bytes: &[u8], ttl: u8, src: IpAddr, dst: IpAddr) -> AdvertError {
    match Advert::decode(bytes, ttl, src, dst) {
        Ok(d) => panic!("accepted {d:?}"),
        Err(e) => e,
    }
}

#[test]
fn constants() {
    assert_eq!(IPPROTO_VRRP, 112);
    assert_eq!(VRRP_TTL, 255);
    assert_eq!(VRRP_GROUP_V4.to_string(), "224.0.0.18");
    assert_eq!(VRRP_GROUP_V6.to_string(), "ff02::12");
    assert_eq!(Family::V4.group(), DST4);
    assert_eq!(Family::V6.group(), DST6);
    assert_eq!(
        virtual_mac(51, Family::V4),
        [0x00, 0x00, 0x5e, 0x00, 0x01, 51]
    );
    assert_eq!(
        virtual_mac(255, Family::V6),
        [0x00, 0x00, 0x5e, 0x00, 0x02, 0xff]
    );
}

#[test]
fn known_answer_ipv4() {
    let advert = advert(vec![v4(192, 0, 2, 51)]);

    // Without the pseudo-header (RFC 9568).
    let mut plain = kat_message();
    let c = ref_checksum(false, SRC4, DST4, &plain);
    plain[6..8].copy_from_slice(&c.to_be_bytes());
    // Worked by hand: 3133 + 6401 + 0064 + c000 + 0233 = 1_57cb -> 57cc, !57cc = a833.
    assert_eq!(c, 0xa833);
    assert_eq!(
        advert.encode(ChecksumMode::NoPseudoHeader, SRC4, DST4),
        plain
    );
    assert_eq!(
        Advert::decode(&plain, 255, SRC4, DST4),
        Ok(Decoded {
            advert: advert.clone(),
            checksum: ChecksumMode::NoPseudoHeader
        })
    );

    // With the IPv4 pseudo-header (keepalived).
    let mut pseudo = kat_message();
    let c = ref_checksum(true, SRC4, DST4, &pseudo);
    pseudo[6..8].copy_from_slice(&c.to_be_bytes());
    // 57cc + c000 + 0201 + e000 + 0012 + 0070 + 000c = 1_fa5b -> fa5c, !fa5c = 05a3.
    assert_eq!(c, 0x05a3);
    assert_eq!(
        advert.encode(ChecksumMode::PseudoHeader, SRC4, DST4),
        pseudo
    );
    assert_eq!(
        Advert::decode(&pseudo, 255, SRC4, DST4),
        Ok(Decoded {
            advert,
            checksum: ChecksumMode::PseudoHeader
        })
    );
}

fn round_trip(advert: &Advert, mode: ChecksumMode, src: IpAddr, dst: IpAddr) {
    let bytes = advert.encode(mode, src, dst);
    let addr_len = Family::of(src).addr_len();
    assert_eq!(bytes.len(), 8 + advert.addrs.len() * addr_len);
    let decoded = Advert::decode(&bytes, 255, src, dst).expect("decodes");
    assert_eq!(&decoded.advert, advert);
    assert_eq!(decoded.checksum, mode);
}

#[test]
fn round_trip_ipv4_both_modes() {
    let one = advert(vec![v4(192, 0, 2, 51)]);
    let several = Advert {
        vrid: 7,
        priority: 255,
        max_advert_int_cs: 4095,
        addrs: vec![v4(192, 0, 2, 10), v4(198, 51, 100, 1), v4(203, 0, 113, 255)],
    };
    for a in [&one, &several] {
        round_trip(a, ChecksumMode::NoPseudoHeader, SRC4, DST4);
        round_trip(a, ChecksumMode::PseudoHeader, SRC4, DST4);
        // Unicast peers are the caller's policy, not the codec's.
        round_trip(a, ChecksumMode::PseudoHeader, SRC4, v4(192, 0, 2, 2));
    }
}

#[test]
fn round_trip_ipv6() {
    let one = advert(vec![v6(1)]);
    let several = Advert {
        vrid: 255,
        priority: 0,
        max_advert_int_cs: 1,
        addrs: vec![v6(1), v6(2), v6(0xffff)],
    };
    for a in [&one, &several] {
        round_trip(a, ChecksumMode::PseudoHeader, SRC6, DST6);
    }
}

#[test]
fn ipv6_always_uses_the_pseudo_header() {
    let a = advert(vec![v6(1)]);
    let bytes = a.encode(ChecksumMode::NoPseudoHeader, SRC6, DST6);
    assert_eq!(bytes, a.encode(ChecksumMode::PseudoHeader, SRC6, DST6));
    let mut check = bytes.clone();
    rechecksum(&mut check, true, SRC6, DST6);
    assert_eq!(check, bytes);
    let d = Advert::decode(&bytes, 255, SRC6, DST6).expect("decodes");
    assert_eq!(d.checksum, ChecksumMode::PseudoHeader);

    // Checksummed without the pseudo-header: wrong for IPv6.
    let mut plain = bytes;
    rechecksum(&mut plain, false, SRC6, DST6);
    let e = reject(&plain, 255, SRC6, DST6);
    assert_eq!(e.kind(), "bad_checksum");
}

#[test]
fn trailing_bytes_are_ignored_and_checksummed() {
    let a = advert(vec![v4(192, 0, 2, 51)]);
    let mut bytes = a.encode(ChecksumMode::NoPseudoHeader, SRC4, DST4);
    bytes.extend_from_slice(&[0xde, 0xad, 0xbe]);
    rechecksum(&mut bytes, false, SRC4, DST4);
    let d = Advert::decode(&bytes, 255, SRC4, DST4).expect("decodes");
    assert_eq!(d.advert, a);
    rechecksum(&mut bytes, true, SRC4, DST4);
    let d = Advert::decode(&bytes, 255, SRC4, DST4).expect("decodes");
    assert_eq!(d.checksum, ChecksumMode::PseudoHeader);
    assert_eq!(d.advert, a);
}

#[test]
fn reserved_bits_are_ignored() {
    let a = advert(vec![v4(192, 0, 2, 51)]);
    let mut bytes = a.encode(ChecksumMode::NoPseudoHeader, SRC4, DST4);
    bytes[4] |= 0xf0;
    rechecksum(&mut bytes, false, SRC4, DST4);
    assert_eq!(
        Advert::decode(&bytes, 255, SRC4, DST4)
            .expect("decodes")
            .advert,
        a
    );
}

// ---- One test per rejection ----

fn valid_v4() -> Vec<u8> {
    advert(vec![v4(192, 0, 2, 51)]).encode(ChecksumMode::NoPseudoHeader, SRC4, DST4)
}

#[test]
fn rejects_bad_ttl() {
    let e = reject(&valid_v4(), 64, SRC4, DST4);
    assert_eq!(
        e,
        AdvertError::BadTtl {
            ttl: 64,
            family: Family::V4
        }
    );
    assert_eq!(e.kind(), "bad_ttl");
    assert_eq!(
        e.to_string(),
        "TTL 64, must be 255 (sent from more than one hop away?)"
    );

    let v6_msg = advert(vec![v6(1)]).encode(ChecksumMode::PseudoHeader, SRC6, DST6);
    let e = reject(&v6_msg, 254, SRC6, DST6);
    assert_eq!(e.kind(), "bad_ttl");
    assert!(
        e.to_string().starts_with("hop limit 254, must be 255"),
        "{e}"
    );
}

#[test]
fn rejects_short_header() {
    let e = reject(&valid_v4()[..7], 255, SRC4, DST4);
    assert_eq!(e, AdvertError::Short { len: 7 });
    assert_eq!(e.kind(), "short");
    assert_eq!(reject(&[], 255, SRC6, DST6).kind(), "short");
}

#[test]
fn rejects_bad_version() {
    let mut m = valid_v4();
    m[0] = 0x21; // VRRPv2 advertisement
    rechecksum(&mut m, false, SRC4, DST4);
    let e = reject(&m, 255, SRC4, DST4);
    assert_eq!(e, AdvertError::BadVersion { version: 2 });
    assert_eq!(e.kind(), "bad_version");
}

#[test]
fn rejects_bad_type() {
    let mut m = valid_v4();
    m[0] = 0x32;
    rechecksum(&mut m, false, SRC4, DST4);
    let e = reject(&m, 255, SRC4, DST4);
    assert_eq!(e, AdvertError::BadType { ty: 2 });
    assert_eq!(e.kind(), "bad_type");
}

#[test]
fn rejects_count_beyond_length() {
    let mut m = valid_v4();
    m[3] = 2; // says two addresses, carries one
    rechecksum(&mut m, false, SRC4, DST4);
    let e = reject(&m, 255, SRC4, DST4);
    assert_eq!(
        e,
        AdvertError::CountMismatch {
            count: 2,
            family: Family::V4,
            len: 12,
            needed: 16
        }
    );
    assert_eq!(e.kind(), "count_mismatch");

    // The same 12 bytes read as IPv6: one address needs 24.
    let mut m = valid_v4();
    rechecksum(&mut m, true, SRC6, DST6);
    assert_eq!(reject(&m, 255, SRC6, DST6).kind(), "count_mismatch");
}

#[test]
fn rejects_bad_checksum() {
    let mut m = valid_v4();
    m[2] = 99; // priority changed after checksumming
    let e = reject(&m, 255, SRC4, DST4);
    let mut fixed_plain = m.clone();
    rechecksum(&mut fixed_plain, false, SRC4, DST4);
    let mut fixed_pseudo = m.clone();
    rechecksum(&mut fixed_pseudo, true, SRC4, DST4);
    assert_eq!(
        e,
        AdvertError::BadChecksum {
            found: u16::from_be_bytes([m[6], m[7]]),
            expected_pseudo_header: u16::from_be_bytes([fixed_pseudo[6], fixed_pseudo[7]]),
            expected_no_pseudo_header: Some(u16::from_be_bytes([fixed_plain[6], fixed_plain[7]])),
        }
    );
    assert_eq!(e.kind(), "bad_checksum");
    let text = e.to_string();
    assert!(text.contains("checksum 0xa833"), "{text}");
    assert!(text.contains("RFC 9568"), "{text}");

    // A keepalived-style checksum computed for another source fails too.
    let mut m = valid_v4();
    rechecksum(&mut m, true, v4(192, 0, 2, 9), DST4);
    assert_eq!(reject(&m, 255, SRC4, DST4).kind(), "bad_checksum");
}

#[test]
fn rejects_wrong_family() {
    // Source and destination of different families.
    let e = reject(&valid_v4(), 255, SRC4, DST6);
    assert_eq!(
        e,
        AdvertError::WrongFamily {
            addr: DST6,
            expected: Family::V4
        }
    );
    assert_eq!(e.kind(), "bad_family");

    // An IPv4-mapped address (an IPv4 address) in an IPv6 advert.
    let mapped = IpAddr::V6(Ipv4Addr::new(192, 0, 2, 51).to_ipv6_mapped());
    let mut m = advert(vec![v6(1)]).encode(ChecksumMode::PseudoHeader, SRC6, DST6);
    if let IpAddr::V6(a) = mapped {
        m[8..24].copy_from_slice(&a.octets());
    }
    rechecksum(&mut m, true, SRC6, DST6);
    let e = reject(&m, 255, SRC6, DST6);
    assert_eq!(
        e,
        AdvertError::WrongFamily {
            addr: mapped,
            expected: Family::V6
        }
    );
    assert_eq!(e.kind(), "bad_family");
}

#[test]
fn rejects_zero_count() {
    let mut m = valid_v4();
    m[3] = 0;
    m.truncate(8);
    rechecksum(&mut m, false, SRC4, DST4);
    let e = reject(&m, 255, SRC4, DST4);
    assert_eq!(e, AdvertError::ZeroCount);
    assert_eq!(e.kind(), "zero_count");
}

#[test]
fn rejects_zero_interval() {
    let mut m = valid_v4();
    m[4] = 0xf0; // reserved bits set, interval 0
    m[5] = 0;
    rechecksum(&mut m, true, SRC4, DST4);
    let e = reject(&m, 255, SRC4, DST4);
    assert_eq!(e, AdvertError::ZeroInterval);
    assert_eq!(e.kind(), "zero_interval");
}

#[test]
fn rejects_zero_vrid() {
    let mut m = valid_v4();
    m[1] = 0;
    rechecksum(&mut m, false, SRC4, DST4);
    let e = reject(&m, 255, SRC4, DST4);
    assert_eq!(e, AdvertError::ZeroVrid);
    assert_eq!(e.kind(), "zero_vrid");
}

// ---- Checking adverts to send ----

#[test]
fn check_accepts_valid_and_rejects_unsendable() {
    assert_eq!(advert(vec![v4(192, 0, 2, 51)]).check(Family::V4), Ok(()));
    assert_eq!(advert(vec![v6(1)]).check(Family::V6), Ok(()));

    let mixed = advert(vec![v4(192, 0, 2, 51), v6(1)]);
    assert_eq!(
        mixed.check(Family::V4).map_err(|e| e.kind()),
        Err("bad_family")
    );
    assert_eq!(
        mixed.check(Family::V6).map_err(|e| e.kind()),
        Err("bad_family")
    );

    let many = advert((0..=255).map(|i| v4(10, 0, 0, i as u8)).collect::<Vec<_>>());
    assert_eq!(
        many.check(Family::V4),
        Err(AdvertError::TooManyAddrs { count: 256 })
    );
    assert_eq!(
        many.check(Family::V4).map_err(|e| e.kind()),
        Err("too_many_addrs")
    );

    let mut slow = advert(vec![v4(192, 0, 2, 51)]);
    slow.max_advert_int_cs = 4096;
    assert_eq!(
        slow.check(Family::V4).map_err(|e| e.kind()),
        Err("bad_interval")
    );

    assert_eq!(
        advert(vec![]).check(Family::V4),
        Err(AdvertError::ZeroCount)
    );
    let mut zero = advert(vec![v4(192, 0, 2, 51)]);
    zero.vrid = 0;
    assert_eq!(zero.check(Family::V4), Err(AdvertError::ZeroVrid));
}

#[test]
fn encode_out_of_contract_does_not_panic_and_stays_well_formed() {
    // Other-family addresses skipped, count capped at 255, interval masked.
    let mut addrs: Vec<IpAddr> = (0..300u32)
        .map(|i| v4(10, 0, (i >> 8) as u8, i as u8))
        .collect();
    addrs.insert(0, v6(1));
    let a = Advert {
        vrid: 1,
        priority: 1,
        max_advert_int_cs: 0xf064,
        addrs,
    };
    let bytes = a.encode(ChecksumMode::NoPseudoHeader, SRC4, DST4);
    assert_eq!(bytes.len(), 8 + 255 * 4);
    let d = Advert::decode(&bytes, 255, SRC4, DST4).expect("well-formed");
    assert_eq!(d.advert.addrs.len(), 255);
    assert_eq!(d.advert.max_advert_int_cs, 0x064);
    assert_eq!(d.advert.addrs[0], v4(10, 0, 0, 0));
}

#[test]
fn every_kind_is_distinct() {
    let errors = [
        AdvertError::BadTtl {
            ttl: 1,
            family: Family::V4,
        },
        AdvertError::WrongFamily {
            addr: SRC4,
            expected: Family::V6,
        },
        AdvertError::Short { len: 0 },
        AdvertError::BadVersion { version: 2 },
        AdvertError::BadType { ty: 0 },
        AdvertError::CountMismatch {
            count: 1,
            family: Family::V4,
            len: 8,
            needed: 12,
        },
        AdvertError::BadChecksum {
            found: 0,
            expected_pseudo_header: 1,
            expected_no_pseudo_header: None,
        },
        AdvertError::ZeroCount,
        AdvertError::TooManyAddrs { count: 256 },
        AdvertError::ZeroInterval,
        AdvertError::IntervalTooLarge { cs: 4096 },
        AdvertError::ZeroVrid,
    ];
    let mut kinds: Vec<&str> = errors.iter().map(AdvertError::kind).collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(kinds.len(), errors.len());
}
