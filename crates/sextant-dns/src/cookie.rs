//! DNS cookies (RFC 7873) with the interoperable server cookie of RFC 9018:
//! version 1, three reserved octets, a 32-bit timestamp and SipHash-2-4
//! over client cookie | version | reserved | timestamp | client address,
//! keyed with a 16-octet server secret.
//!
//! A valid server cookie proves that the client received an earlier answer
//! at the address it claims, so the query is not spoofed: such queries are
//! exempt from rate limiting. Pure: the time and the secrets are passed in
//! (the server makes the secrets from the OS's random source and rotates
//! them; see `DnsShared::rotate_cookie_secret`).

use std::net::IpAddr;

use crate::wire::parse::Cookie;

/// RFC 9018 §4.3: a server cookie older than this is expired...
const MAX_AGE: u32 = 3600;
/// ...and one more than this in the future is not ours either.
const MAX_FUTURE: u32 = 300;

/// The server's current secret and the one before it, still accepted for
/// one rotation period so that cookies handed out just before a rotation
/// keep working.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookieSecrets {
    pub current: [u8; 16],
    pub previous: Option<[u8; 16]>,
}

impl CookieSecrets {
    pub fn new(secret: [u8; 16]) -> Self {
        CookieSecrets {
            current: secret,
            previous: None,
        }
    }

    /// The secrets after a rotation to `next`.
    pub fn rotated(&self, next: [u8; 16]) -> Self {
        CookieSecrets {
            current: next,
            previous: Some(self.current),
        }
    }
}

/// What a query's cookie option says about the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CookieStatus {
    /// Only a client cookie: the client has none of ours yet.
    ClientOnly,
    /// A server cookie we made for this client and address, not expired.
    Valid,
    /// A server cookie that is not ours, not for this address, or expired
    /// (RFC 7873 §5.2.3: answered normally, with a fresh cookie).
    Invalid,
}

/// The RFC 9018 server cookie for `client` at `ip` at time `timestamp`
/// (seconds since the epoch, serial arithmetic).
pub fn server_cookie(secret: &[u8; 16], client: &[u8; 8], ip: IpAddr, timestamp: u32) -> [u8; 16] {
    let mut cookie = [0u8; 16];
    cookie[0] = 1; // version; reserved octets stay 0
    cookie[4..8].copy_from_slice(&timestamp.to_be_bytes());
    let mut input = [0u8; 32];
    input[..8].copy_from_slice(client);
    input[8..16].copy_from_slice(&cookie[..8]);
    let len = match ip {
        IpAddr::V4(a) => {
            input[16..20].copy_from_slice(&a.octets());
            20
        }
        IpAddr::V6(a) => {
            input[16..32].copy_from_slice(&a.octets());
            32
        }
    };
    let hash = siphash24(secret, input.get(..len).unwrap_or(&input));
    cookie[8..].copy_from_slice(&hash.to_le_bytes());
    cookie
}

/// Checks the server part of `cookie` for a query from `ip` at `now`.
pub fn check(secrets: &CookieSecrets, cookie: &Cookie, ip: IpAddr, now: u32) -> CookieStatus {
    let server = cookie.server();
    if server.is_empty() {
        return CookieStatus::ClientOnly;
    }
    // Only our own construction (16 octets, version 1) can be valid.
    let Some(theirs) = server.get(..16).filter(|_| server.len() == 16) else {
        return CookieStatus::Invalid;
    };
    if theirs[0] != 1 {
        return CookieStatus::Invalid;
    }
    let ts = u32::from_be_bytes([theirs[4], theirs[5], theirs[6], theirs[7]]);
    // Serial arithmetic (RFC 1982) so the 2106 wrap is no cliff.
    let age = now.wrapping_sub(ts);
    let fresh = age <= MAX_AGE || ts.wrapping_sub(now) <= MAX_FUTURE;
    if !fresh {
        return CookieStatus::Invalid;
    }
    let matches = |secret: &[u8; 16]| {
        let ours = server_cookie(secret, &cookie.client, ip, ts);
        // Not secret-dependent timing worth hiding: a forger learns only
        // whether a guess of 64 bits matched.
        ours[..] == theirs[..]
    };
    if matches(&secrets.current) || secrets.previous.as_ref().is_some_and(matches) {
        CookieStatus::Valid
    } else {
        CookieStatus::Invalid
    }
}

/// The COOKIE option of a response: the client's cookie and a fresh server
/// cookie made with the current secret.
pub fn response_cookie(
    secrets: &CookieSecrets,
    client: &[u8; 8],
    ip: IpAddr,
    now: u32,
) -> [u8; 24] {
    let mut out = [0u8; 24];
    out[..8].copy_from_slice(client);
    out[8..].copy_from_slice(&server_cookie(&secrets.current, client, ip, now));
    out
}

/// SipHash-2-4 (Aumasson and Bernstein), key as 16 little-endian octets.
pub(crate) fn siphash24(key: &[u8; 16], data: &[u8]) -> u64 {
    let k0 = u64::from_le_bytes([
        key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7],
    ]);
    let k1 = u64::from_le_bytes([
        key[8], key[9], key[10], key[11], key[12], key[13], key[14], key[15],
    ]);
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    let chunks = data.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        let m = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        v[3] ^= m;
        sip_round(&mut v);
        sip_round(&mut v);
        v[0] ^= m;
    }
    let mut last = [0u8; 8];
    last[..tail.len()].copy_from_slice(tail);
    last[7] = data.len() as u8;
    let m = u64::from_le_bytes(last);
    v[3] ^= m;
    sip_round(&mut v);
    sip_round(&mut v);
    v[0] ^= m;
    v[2] ^= 0xff;
    for _ in 0..4 {
        sip_round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

#[inline]
fn sip_round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13);
    v[1] ^= v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16);
    v[3] ^= v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21);
    v[3] ^= v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17);
    v[1] ^= v[2];
    v[2] = v[2].rotate_left(32);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn arr<const N: usize>(s: &str) -> [u8; N] {
        hex(s).try_into().unwrap()
    }

    #[test]
    fn siphash_reference_vector() {
        // The SipHash paper's Appendix A: key 00..0f, message 00..0e.
        let key: [u8; 16] = std::array::from_fn(|i| i as u8);
        let msg: Vec<u8> = (0..15).collect();
        assert_eq!(siphash24(&key, &msg), 0xa129_ca61_49be_45e5);
        assert_eq!(siphash24(&key, &[]), 0x726f_db47_dd0e_0e31);
    }

    const SECRET: &str = "e5e973e5a6b2a43f48e7dc849e37bfcf";

    #[test]
    fn rfc9018_appendix_a_vectors() {
        let secret = arr::<16>(SECRET);
        let ip: IpAddr = "198.51.100.100".parse().unwrap();
        let client = arr::<8>("2464c4abcf10c957");
        // A.1: a new server cookie.
        assert_eq!(
            server_cookie(&secret, &client, ip, 1559731985),
            arr::<16>("010000005cf79f111f8130c3eee29480")
        );
        // A.2: 40 minutes later the cookie is still valid and renewed.
        let mut body = client.to_vec();
        body.extend(hex("010000005cf79f111f8130c3eee29480"));
        let c = parse_cookie(&body);
        let secrets = CookieSecrets::new(secret);
        assert_eq!(check(&secrets, &c, ip, 1559734385), CookieStatus::Valid);
        assert_eq!(
            response_cookie(&secrets, &client, ip, 1559734385)[8..],
            arr::<16>("010000005cf7a871d4a564a1442aca77")
        );
    }

    fn parse_cookie(body: &[u8]) -> Cookie {
        // Through the real option parser: an OPT with one COOKIE option.
        let mut m = vec![0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1];
        m.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0, 0]);
        m.extend_from_slice(&((body.len() + 4) as u16).to_be_bytes());
        m.extend_from_slice(&10u16.to_be_bytes());
        m.extend_from_slice(&(body.len() as u16).to_be_bytes());
        m.extend_from_slice(body);
        let mut buf = [0u8; 256];
        crate::parse_query(&m, &mut buf)
            .unwrap()
            .edns
            .unwrap()
            .cookie
            .unwrap()
    }

    #[test]
    fn statuses() {
        let secret = arr::<16>(SECRET);
        let secrets = CookieSecrets::new(secret);
        let ip: IpAddr = "2001:db8::1".parse().unwrap();
        let client = [9u8; 8];
        let now = 1_700_000_000u32;
        assert_eq!(
            check(&secrets, &parse_cookie(&client), ip, now),
            CookieStatus::ClientOnly
        );
        let good = response_cookie(&secrets, &client, ip, now);
        let c = parse_cookie(&good);
        assert_eq!(check(&secrets, &c, ip, now), CookieStatus::Valid);
        assert_eq!(check(&secrets, &c, ip, now + 3600), CookieStatus::Valid);
        assert_eq!(
            check(&secrets, &c, ip, now + 3601),
            CookieStatus::Invalid,
            "expired"
        );
        assert_eq!(check(&secrets, &c, ip, now - 300), CookieStatus::Valid);
        assert_eq!(
            check(&secrets, &c, ip, now - 301),
            CookieStatus::Invalid,
            "future"
        );
        let other: IpAddr = "2001:db8::2".parse().unwrap();
        assert_eq!(
            check(&secrets, &c, other, now),
            CookieStatus::Invalid,
            "address"
        );
        let mut forged = good;
        forged[23] ^= 1;
        assert_eq!(
            check(&secrets, &parse_cookie(&forged), ip, now),
            CookieStatus::Invalid
        );
        // After one rotation the old cookie is accepted, after two it is not.
        let once = secrets.rotated([1; 16]);
        assert_eq!(check(&once, &c, ip, now), CookieStatus::Valid);
        let twice = once.rotated([2; 16]);
        assert_eq!(check(&twice, &c, ip, now), CookieStatus::Invalid);
        // Other lengths of server cookie are not ours.
        let mut long = good.to_vec();
        long.push(0);
        assert_eq!(
            check(&secrets, &parse_cookie(&long), ip, now),
            CookieStatus::Invalid
        );
    }
}
