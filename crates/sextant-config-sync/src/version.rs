//! Which of two versions of the shared configuration is the newest: the
//! one rule every parent applies, so that they all end on the same one.

use std::cmp::Ordering;

use ring::digest::{SHA256, digest as sha256};
use sextant_mep_proto::message::ConfigVersion;

/// `sha256:` and the hex SHA-256 of `text`: what a version's `digest` holds.
pub fn digest(text: &str) -> String {
    digest_bytes(text.as_bytes())
}

/// `sha256:` and the hex SHA-256 of `bytes` (a location file's digest).
pub fn digest_bytes(bytes: &[u8]) -> String {
    let d = sha256(&SHA256, bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in d.as_ref() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The order of versions: the higher incarnation is newer; at the same
/// incarnation, the change made at the site whose name sorts first
/// (case-insensitively, then byte-wise) is newer; at the same label, the
/// digests decide, so that the order is total and the same everywhere.
pub fn compare(a: &ConfigVersion, b: &ConfigVersion) -> Ordering {
    a.incarnation
        .cmp(&b.incarnation)
        .then_with(|| {
            let (la, lb) = (a.origin.to_lowercase(), b.origin.to_lowercase());
            // Reversed: the name that sorts first wins.
            lb.cmp(&la).then_with(|| b.origin.cmp(&a.origin))
        })
        .then_with(|| a.digest.cmp(&b.digest))
}

/// `a` is newer than `b` and holds another text.
pub fn beats(a: &ConfigVersion, b: &ConfigVersion) -> bool {
    a.digest != b.digest && compare(a, b) == Ordering::Greater
}

/// How the rule is said in logs and errors.
pub const RULE: &str = "the higher incarnation wins; at the same incarnation, the change made at the site whose name sorts first";

/// `incarnation 9 from SiteP1`.
pub fn describe(v: &ConfigVersion) -> String {
    format!("incarnation {} from {}", v.incarnation, v.origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(incarnation: u64, origin: &str, digest: &str) -> ConfigVersion {
        ConfigVersion {
            incarnation,
            origin: origin.into(),
            digest: digest.into(),
        }
    }

    #[test]
    fn higher_incarnation_wins_then_first_name() {
        assert!(beats(&v(9, "SiteP3", "a"), &v(8, "SiteP1", "b")));
        assert!(beats(&v(8, "SiteP1", "a"), &v(8, "SiteP2", "b")));
        assert!(!beats(&v(8, "SiteP2", "a"), &v(8, "SiteP1", "b")));
        // Case does not decide before the name does.
        assert!(beats(&v(8, "sitep1", "a"), &v(8, "SiteP2", "b")));
    }

    #[test]
    fn the_same_text_is_never_newer() {
        assert!(!beats(&v(9, "SiteP1", "a"), &v(3, "SiteP2", "a")));
    }

    #[test]
    fn the_order_is_total_and_antisymmetric() {
        let all = [
            v(1, "A", "x"),
            v(1, "a", "y"),
            v(1, "B", "x"),
            v(2, "B", "z"),
            v(1, "A", "y"),
        ];
        for a in &all {
            for b in &all {
                assert_eq!(compare(a, b), compare(b, a).reverse(), "{a:?} {b:?}");
                if a != b {
                    assert_ne!(compare(a, b), Ordering::Equal, "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn digest_is_sha256_hex() {
        assert_eq!(
            digest(""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
