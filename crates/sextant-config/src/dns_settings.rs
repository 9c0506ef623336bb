//! The DNS server's identity and protections: `set dns parameter` (the
//! appliance's command, with Sextant's options) and `[dns]`, `[dns.rrl]`,
//! `[dns.cookies]` (native). Both front ends check single values with the
//! functions here and fill a [`DraftDnsServer`]; [`build`] checks what spans
//! options (rate limiting options without a rate) and sets `Model::dns`.

use std::net::IpAddr;
use std::time::Duration;

use sextant_core::{CookieSettings, DnsSettings, Model, RrlSettings};

use crate::duration;
use crate::error::Diag;

/// What the file says about the DNS server, before the cross-checks.
#[derive(Debug, Default)]
pub(crate) struct DraftDnsServer {
    pub nsid: Option<Vec<u8>>,
    pub tcp_idle_timeout: Option<Duration>,
    pub tcp_max_connections: Option<usize>,
    /// Set when any rate limiting setting is given, with the line of the
    /// first; the rate turns limiting on.
    pub rrl_line: Option<usize>,
    pub rrl_context: Option<String>,
    pub rrl_rate: Option<u32>,
    /// The rate was given but rejected (already reported).
    pub rrl_rate_bad: bool,
    pub rrl_slip: Option<u32>,
    pub rrl_ipv4_prefix: Option<u8>,
    pub rrl_ipv6_prefix: Option<u8>,
    pub rrl_exempt: Vec<(IpAddr, u8)>,
    pub rrl_table_size: Option<usize>,
    pub cookies: Option<bool>,
    pub cookie_rotation: Option<Duration>,
}

/// Longest NSID accepted: it rides in every answer that asks for it.
pub(crate) const MAX_NSID: usize = 128;

/// A text NSID: 1 to 128 octets.
pub(crate) fn nsid_text(t: &str) -> Result<Vec<u8>, String> {
    match t.len() {
        0 => Err("empty; give the node's name, e.g. \"node-a\"".into()),
        1..=MAX_NSID => Ok(t.as_bytes().to_vec()),
        n => Err(format!("{n} octets; at most {MAX_NSID}")),
    }
}

/// An NSID in hexadecimal: an even number of hex digits, 1 to 128 octets.
pub(crate) fn nsid_hex(t: &str) -> Result<Vec<u8>, String> {
    let t = t.strip_prefix("0x").unwrap_or(t);
    if t.is_empty() || !t.len().is_multiple_of(2) || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "\"{t}\" is not an even number of hexadecimal digits"
        ));
    }
    let bytes: Vec<u8> = (0..t.len())
        .step_by(2)
        .filter_map(|i| t.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect();
    if bytes.len() > MAX_NSID {
        return Err(format!("{} octets; at most {MAX_NSID}", bytes.len()));
    }
    Ok(bytes)
}

/// The TCP idle timeout: 1 s to 1 h.
pub(crate) fn tcp_idle_timeout(d: Duration) -> Result<Duration, String> {
    if d < Duration::from_secs(1) || d > Duration::from_secs(3600) {
        return Err(format!(
            "{} is out of range; expected 1 s to 1 h",
            duration::format(d)
        ));
    }
    Ok(d)
}

fn ranged(n: i128, lo: i128, hi: i128, what: &str) -> Result<i128, String> {
    if n < lo || n > hi {
        return Err(format!("expected {what} from {lo} to {hi}, found {n}"));
    }
    Ok(n)
}

/// Open TCP connections at most: 1 to 65535.
pub(crate) fn tcp_max_connections(n: i128) -> Result<usize, String> {
    ranged(n, 1, 65535, "a connection count").map(|n| n as usize)
}

/// Responses per second per prefix: 1 to 1,000,000.
pub(crate) fn rrl_rate(n: i128) -> Result<u32, String> {
    ranged(n, 1, 1_000_000, "responses per second").map(|n| n as u32)
}

/// Slip: 0 (drop all) to 100.
pub(crate) fn rrl_slip(n: i128) -> Result<u32, String> {
    ranged(n, 0, 100, "a slip").map(|n| n as u32)
}

pub(crate) fn ipv4_prefix(n: i128) -> Result<u8, String> {
    ranged(n, 1, 32, "an IPv4 prefix length").map(|n| n as u8)
}

pub(crate) fn ipv6_prefix(n: i128) -> Result<u8, String> {
    ranged(n, 1, 128, "an IPv6 prefix length").map(|n| n as u8)
}

/// Buckets: 1 to 16,777,216 (rounded up to a power of two).
pub(crate) fn table_size(n: i128) -> Result<usize, String> {
    ranged(n, 1, 1 << 24, "a bucket count").map(|n| n as usize)
}

/// The cookie secret's rotation period: 1 s to 30 days.
pub(crate) fn secret_rotation(d: Duration) -> Result<Duration, String> {
    if d < Duration::from_secs(1) || d > Duration::from_secs(30 * 86400) {
        return Err(format!(
            "{} is out of range; expected 1 s to 30 days",
            duration::format(d)
        ));
    }
    Ok(d)
}

/// An integer from text, for the appliance's options.
pub(crate) fn int_text(t: &str) -> Result<i128, String> {
    t.parse()
        .map_err(|_| format!("expected a whole number, found \"{t}\""))
}

/// An exempt range: `ADDR/LEN` (or a bare address, its own /32 or /128),
/// host bits zero.
pub(crate) fn cidr(t: &str) -> Result<(IpAddr, u8), String> {
    let (addr, len) = match t.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (t, None),
    };
    let ip: IpAddr = addr
        .parse()
        .map_err(|_| format!("\"{t}\" is not an address or ADDRESS/LENGTH range"))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len: u8 = match len {
        None => max,
        Some(l) => l
            .parse()
            .ok()
            .filter(|l| *l <= max)
            .ok_or_else(|| format!("\"{t}\": prefix length must be 0 to {max}"))?,
    };
    let host_bits_clear = match ip {
        IpAddr::V4(a) => len == 32 || u32::from(a) & (u32::MAX >> len) == 0,
        IpAddr::V6(a) => len == 128 || u128::from(a) & (u128::MAX >> len) == 0,
    };
    if !host_bits_clear {
        return Err(format!(
            "\"{t}\" has bits set past its prefix length; write the network address"
        ));
    }
    Ok((ip.to_canonical(), len))
}

/// Checks what spans options and sets `model.dns`.
pub(crate) fn build(d: &DraftDnsServer, diag: &mut Diag, model: &mut Model) {
    let mut s = DnsSettings {
        nsid: d.nsid.clone(),
        ..DnsSettings::default()
    };
    if let Some(t) = d.tcp_idle_timeout {
        s.tcp_idle_timeout = t;
    }
    if let Some(n) = d.tcp_max_connections {
        s.tcp_max_connections = n;
    }
    if let Some(line) = d.rrl_line {
        match d.rrl_rate {
            Some(rate) => {
                s.rrl = Some(RrlSettings {
                    responses_per_second: rate,
                    slip: d.rrl_slip.unwrap_or(RrlSettings::DEFAULT_SLIP),
                    ipv4_prefix: d
                        .rrl_ipv4_prefix
                        .unwrap_or(RrlSettings::DEFAULT_IPV4_PREFIX),
                    ipv6_prefix: d
                        .rrl_ipv6_prefix
                        .unwrap_or(RrlSettings::DEFAULT_IPV6_PREFIX),
                    exempt: d.rrl_exempt.clone(),
                    table_size: d.rrl_table_size.unwrap_or(RrlSettings::DEFAULT_TABLE_SIZE),
                })
            }
            None if d.rrl_rate_bad => {}
            None => diag.error(
                line,
                format!(
                    "{}: rate limiting settings without a rate; give {}",
                    d.rrl_context.as_deref().unwrap_or("rate limiting"),
                    if d.rrl_context.as_deref() == Some("[dns.rrl]") {
                        "responses_per_second"
                    } else {
                        "-rrlResponsesPerSecond N"
                    }
                ),
            ),
        }
    }
    if d.cookies == Some(true) {
        s.cookies = Some(CookieSettings {
            secret_rotation: d
                .cookie_rotation
                .unwrap_or(CookieSettings::DEFAULT_SECRET_ROTATION),
        });
    }
    model.dns = s;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(nsid_hex("6e6f6465").unwrap(), b"node");
        assert!(nsid_hex("6e6").is_err());
        assert!(nsid_hex("zz").is_err());
        assert!(nsid_text("").is_err());
        assert!(nsid_text(&"a".repeat(129)).is_err());
        assert_eq!(
            cidr("10.0.0.0/8").unwrap(),
            ("10.0.0.0".parse().unwrap(), 8)
        );
        assert_eq!(cidr("::1").unwrap(), ("::1".parse().unwrap(), 128));
        assert!(cidr("10.0.0.1/8").is_err());
        assert!(cidr("10.0.0.0/33").is_err());
        assert!(cidr("nope").is_err());
        assert!(rrl_rate(0).is_err());
        assert_eq!(rrl_slip(0).unwrap(), 0);
        assert!(ipv6_prefix(129).is_err());
        assert!(tcp_idle_timeout(Duration::from_millis(500)).is_err());
    }
}
