//! Names in canonical wire form (RFC 4034 §6.2): labels, lower case, no
//! compression. Sextant's names are dotted, lower case, without the
//! trailing dot; "" is the root.

use crate::Error;

/// Appends the canonical wire form of `name` to `out`.
pub fn write(name: &str, out: &mut Vec<u8>) -> Result<(), Error> {
    let start = out.len();
    if !name.is_empty() {
        for label in name.split('.') {
            let len = u8::try_from(label.len())
                .ok()
                .filter(|l| (1..=63).contains(l))
                .ok_or_else(|| Error::BadName(name.to_string()))?;
            out.push(len);
            out.extend(label.bytes().map(|b| b.to_ascii_lowercase()));
        }
    }
    out.push(0);
    if out.len() - start > 255 {
        out.truncate(start);
        return Err(Error::BadName(name.to_string()));
    }
    Ok(())
}

/// The canonical wire form of `name`.
pub fn wire(name: &str) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(name.len() + 2);
    write(name, &mut out)?;
    Ok(out)
}

/// The RRSIG Labels field of an owner: its labels, the root not counted.
pub fn labels(name: &str) -> u8 {
    if name.is_empty() {
        0
    } else {
        u8::try_from(name.split('.').count()).unwrap_or(u8::MAX)
    }
}

/// The dotted form of a name read from a key file (`Example.COM.` →
/// `example.com`).
pub fn normalise(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_form_is_lower_case_labels() {
        assert_eq!(
            wire("WWW.example.com").unwrap(),
            b"\x03www\x07example\x03com\x00"
        );
        assert_eq!(wire("").unwrap(), b"\x00");
        assert!(wire("a..b").is_err());
        assert!(wire(&"a".repeat(64)).is_err());
        assert_eq!(labels("www.example.com"), 3);
        assert_eq!(labels(""), 0);
    }
}
