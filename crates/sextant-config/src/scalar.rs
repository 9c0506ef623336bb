//! Checks and conversions of single values shared by both syntaxes: IP
//! literals, ports, bounded integers, masks and DNS names. Each returns a
//! message that says what was expected and what was found, for the caller to
//! prefix with its context.

use std::net::{IpAddr, Ipv4Addr};

use sextant_core::{LbMethod, ServiceProtocol};

/// An IPv4 or IPv6 literal.
pub(crate) fn ip(text: &str) -> Result<IpAddr, String> {
    text.parse::<IpAddr>().map_err(|_| {
        format!(
            "expected an IPv4 or IPv6 address (e.g. 192.0.2.10 or 2001:db8::10), found \"{text}\""
        )
    })
}

/// An integer in `lo..=hi`, from text.
pub(crate) fn int_in(text: &str, lo: u64, hi: u64) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        Ok(n) => Err(format!(
            "expected a whole number from {lo} to {hi}, found {n}"
        )),
        Err(_) => Err(format!(
            "expected a whole number from {lo} to {hi}, found \"{text}\""
        )),
    }
}

/// An integer in `lo..=hi`, from a TOML integer.
pub(crate) fn int_value_in(n: i64, lo: u64, hi: u64) -> Result<u64, String> {
    match u64::try_from(n) {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!(
            "expected a whole number from {lo} to {hi}, found {n}"
        )),
    }
}

/// A TCP/UDP port, 1..=65535.
pub(crate) fn port(text: &str) -> Result<u16, String> {
    int_in(text, 1, 65535)
        .map(|p| p as u16)
        .map_err(|_| format!("expected a port from 1 to 65535, found \"{text}\""))
}

/// The appliance's `ENABLED` / `DISABLED`, case-insensitively.
pub(crate) fn enabled(text: &str) -> Result<bool, String> {
    if text.eq_ignore_ascii_case("ENABLED") {
        Ok(true)
    } else if text.eq_ignore_ascii_case("DISABLED") {
        Ok(false)
    } else {
        Err(format!("expected ENABLED or DISABLED, found \"{text}\""))
    }
}

/// The appliance's `YES` / `NO`, case-insensitively.
pub(crate) fn yes_no(text: &str) -> Result<bool, String> {
    if text.eq_ignore_ascii_case("YES") {
        Ok(true)
    } else if text.eq_ignore_ascii_case("NO") {
        Ok(false)
    } else {
        Err(format!("expected YES or NO, found \"{text}\""))
    }
}

/// A dotted IPv4 netmask (`255.255.255.0`) as a prefix length (24). The
/// appliance writes masks this way; the model stores prefix lengths.
pub(crate) fn v4_mask(text: &str) -> Result<u8, String> {
    let mask: Ipv4Addr = text
        .parse()
        .map_err(|_| format!("expected an IPv4 netmask such as 255.255.255.0, found \"{text}\""))?;
    let bits = u32::from(mask);
    let len = bits.leading_ones();
    if bits.checked_shl(len).unwrap_or(0) != 0 {
        return Err(format!(
            "netmask {text} is not contiguous (its one bits must all come first, e.g. 255.255.255.0)"
        ));
    }
    if len == 0 {
        return Err(format!(
            "netmask {text} has no network bits; use at least 128.0.0.0"
        ));
    }
    Ok(len as u8)
}

/// Checks an object name by the appliance's rule: 1 to 127 characters,
/// starting with a letter, digit or `_`, then letters, digits and
/// `_ # . : @ = -` or spaces. Imported configurations already follow it, and
/// it keeps names safe to show in logs, the API and metrics labels.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    const EXTRA: &str = "_#.:@=- ";
    let Some(first) = name.chars().next() else {
        return Err("the name is empty".to_string());
    };
    if name.chars().count() > 127 {
        return Err(format!(
            "\"{name}\" is {} characters long; the limit is 127",
            name.chars().count()
        ));
    }
    if !(first.is_ascii_alphanumeric() || first == '_') {
        return Err(format!(
            "\"{name}\" starts with '{first}'; a name starts with a letter, a digit or '_'"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || EXTRA.contains(*c)))
    {
        return Err(format!(
            "\"{name}\" contains '{c}'; names may contain letters, digits, spaces and _ # . : @ = -"
        ));
    }
    Ok(())
}

/// Lower case, without a trailing dot: the form the model stores names in.
/// The root name `.` stays `.`, so that messages can name it.
pub(crate) fn normalize_name(name: &str) -> String {
    match name {
        "." => ".".to_string(),
        _ => name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase(),
    }
}

/// Checks a (normalized) DNS name: labels of 1..=63 letters, digits,
/// hyphens or underscores, at most 253 characters in total.
pub(crate) fn check_domain(name: &str) -> Result<(), String> {
    if name == "." {
        return Err("the root name \".\" is not a name Sextant serves: its GSLB domains and zones are names below the root (a saved appliance file's root hints, `add dns nsRec . ...`, are the resolver's; `sextant import` leaves them out)".to_string());
    }
    if name.is_empty() {
        return Err("a domain name is empty".to_string());
    }
    if name.starts_with('.') {
        return Err(format!("domain name \"{name}\" starts with a dot"));
    }
    if name.len() > 253 {
        return Err(format!(
            "domain name \"{name}\" is {} characters long; the limit is 253",
            name.len()
        ));
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err(format!(
                "domain name \"{name}\" has an empty label (two dots in a row)"
            ));
        }
        if label.len() > 63 {
            return Err(format!(
                "domain name \"{name}\": label \"{label}\" is {} characters long; the limit is 63",
                label.len()
            ));
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(format!(
                "domain name \"{name}\" contains '{c}'; only letters, digits, '-' and '_' are allowed in labels"
            ));
        }
    }
    Ok(())
}

/// An HTTP status code or range: `200` or `300-399`, within 100..=599.
pub(crate) fn status_range(text: &str) -> Result<(u16, u16), String> {
    let code = |s: &str| int_in(s, 100, 599).map(|c| c as u16);
    let (lo, hi) = match text.split_once('-') {
        Some((a, b)) => (code(a), code(b)),
        None => (code(text), code(text)),
    };
    match (lo, hi) {
        (Ok(lo), Ok(hi)) if lo <= hi => Ok((lo, hi)),
        (Ok(_), Ok(_)) => Err(format!("range \"{text}\" runs backwards")),
        _ => Err(format!(
            "expected a status code (100-599) or a range such as 300-399, found \"{text}\""
        )),
    }
}

const RCODES: &[(&str, u8)] = &[
    ("NOERROR", 0),
    ("FORMERR", 1),
    ("SERVFAIL", 2),
    ("NXDOMAIN", 3),
    ("NOTIMP", 4),
    ("REFUSED", 5),
];

/// A DNS response code, by name or number (0..=15).
pub(crate) fn rcode(text: &str) -> Result<u8, String> {
    if let Some((_, n)) = RCODES.iter().find(|(w, _)| w.eq_ignore_ascii_case(text)) {
        return Ok(*n);
    }
    int_in(text, 0, 15).map(|n| n as u8).map_err(|_| {
        format!(
            "expected a response code (NOERROR, FORMERR, SERVFAIL, NXDOMAIN, NOTIMP, REFUSED or 0-15), found \"{text}\""
        )
    })
}

/// The appliance's protocol keyword (`HTTP`, `SSL_BRIDGE`, ...).
pub(crate) fn protocol(text: &str) -> Result<ServiceProtocol, String> {
    ServiceProtocol::parse(text).ok_or_else(|| {
        let all: Vec<&str> = ServiceProtocol::ALL.iter().map(|(n, _)| *n).collect();
        format!(
            "unknown protocol \"{text}\"; expected one of {}",
            all.join(", ")
        )
    })
}

/// The appliance's selection method keyword (`ROUNDROBIN`, `RTT`, ...).
pub(crate) fn lb_method(text: &str) -> Result<LbMethod, String> {
    LbMethod::parse(text).ok_or_else(|| {
        let all: Vec<&str> = LbMethod::ALL.iter().map(|(n, _)| *n).collect();
        format!(
            "unknown method \"{text}\"; expected one of {}",
            all.join(", ")
        )
    })
}

/// Checks a monitor's extra request headers (`-customHeaders`,
/// `custom_headers`): header lines (`Name: value`), each ended by CR LF as
/// the appliance writes them; blank lines are ignored.
pub(crate) fn header_lines(text: &str) -> Result<String, String> {
    for l in text.lines().map(str::trim_end) {
        if !l.is_empty() && l.split_once(':').is_none_or(|(n, _)| n.trim().is_empty()) {
            return Err(format!(
                "\"{l}\" is not a header line; write \"Name: value\\r\\n\" for each header"
            ));
        }
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        assert_eq!(v4_mask("255.255.255.255"), Ok(32));
        assert_eq!(v4_mask("255.255.255.0"), Ok(24));
        assert_eq!(v4_mask("255.255.128.0"), Ok(17));
        assert!(v4_mask("255.0.255.0").is_err());
        assert!(v4_mask("0.0.0.0").is_err());
        assert!(v4_mask("24").is_err());
    }

    #[test]
    fn domains() {
        assert!(check_domain("www.example.com").is_ok());
        assert!(check_domain("_sip._udp.example.com").is_ok());
        assert!(check_domain("a").is_ok());
        assert!(check_domain("").is_err());
        assert!(check_domain(".example.com").is_err());
        assert!(check_domain("a..b").is_err());
        assert!(check_domain("exa mple.com").is_err());
        assert!(check_domain("*.example.com").is_err());
        assert!(check_domain(&"a".repeat(64)).is_err());
        assert!(check_domain(&vec!["a".repeat(63); 4].join(".")).is_err());
        assert_eq!(normalize_name("WWW.Example.COM."), "www.example.com");
    }

    #[test]
    fn names() {
        assert!(check_name("web-fra_1").is_ok());
        assert!(check_name("my vserver #2").is_ok());
        assert!(check_name("_x").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name("-x").is_err());
        assert!(check_name("a/b").is_err());
        assert!(check_name(&"a".repeat(128)).is_err());
    }

    #[test]
    fn numbers() {
        assert_eq!(int_in("5", 1, 10), Ok(5));
        assert!(int_in("0", 1, 10).is_err());
        assert!(int_in("x", 1, 10).is_err());
        assert!(int_in("-1", 0, 10).is_err());
        assert_eq!(port("53"), Ok(53));
        assert!(port("0").is_err());
        assert!(port("65536").is_err());
        assert!(int_value_in(-1, 0, 5).is_err());
    }
}

/// Levenshtein distance between two strings, by characters: how far a
/// misspelt command or option is from the one meant.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod edit_distance_tests {
    use super::edit_distance;

    #[test]
    fn counts_single_edits() {
        assert_eq!(edit_distance("add gslb vsrever", "add gslb vserver"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
        assert_eq!(edit_distance("add servce", "add service"), 1);
    }
}
