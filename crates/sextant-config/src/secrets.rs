//! Secrets in configuration files that Sextant cannot use as written.
//!
//! The appliance saves its metric exchange passwords encrypted with a key
//! only it holds (`-encrypted -encryptmethod ENCMTHD_3`), so a saved file's
//! secrets must be entered again in clear. `sextant import` writes a
//! placeholder in their place, a value starting with [`REENTER_PREFIX`]: the
//! readers accept it with a warning, and metric exchange over that link
//! fails to authenticate until the real secret replaces it (a placeholder is
//! never used as a secret: it would be the same guessable text on every
//! site).

/// What a placeholder secret starts with, e.g.
/// `-sitePassword SEXTANT-REENTER-site2`.
pub const REENTER_PREFIX: &str = sextant_core::SECRET_PLACEHOLDER_PREFIX;

/// Whether `value` is a placeholder written by `sextant import`.
pub fn is_placeholder(value: &str) -> bool {
    value.starts_with(REENTER_PREFIX)
}

/// A site's metric exchange secret as written, and the warning a
/// placeholder deserves; `Err` for an empty one.
pub(crate) fn site_password(
    value: &str,
    site: &str,
) -> Result<(sextant_core::SitePassword, Option<String>), String> {
    if value.is_empty() {
        return Err("the site password is empty".into());
    }
    if is_placeholder(value) {
        return Ok((
            sextant_core::SitePassword::Placeholder,
            Some(format!(
                "placeholder password: MEP with site {site} will fail to authenticate until the real secret is entered"
            )),
        ));
    }
    Ok((sextant_core::SitePassword::Clear(value.to_string()), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_recognised_and_never_used_as_secrets() {
        assert!(is_placeholder("SEXTANT-REENTER-site2"));
        assert!(!is_placeholder("sextant-reenter-site2"));
        let (p, warn) = site_password("SEXTANT-REENTER-x", "s2").expect("accepted");
        assert_eq!(p, sextant_core::SitePassword::Placeholder);
        assert!(warn.expect("warns").contains("MEP with site s2 will fail"));
        let (p, warn) = site_password("hunter2", "s2").expect("accepted");
        assert_eq!(p, sextant_core::SitePassword::Clear("hunter2".into()));
        assert!(warn.is_none());
        assert!(site_password("", "s2").is_err());
    }
}
