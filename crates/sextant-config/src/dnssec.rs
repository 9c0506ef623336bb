//! DNSSEC keys and the zones they sign, in both syntaxes:
//!
//! * appliance: `add dns key NAME PUBLIC_FILE PRIVATE_FILE [-TTL secs]
//!   [-publish T] [-activate T] [-inactive T] [-delete T] [-syncPublish T]
//!   [-syncDelete T]`, then `add dns zone ZONE -proxyMode NO -keyName K...`
//!   or `sign dns zone ZONE -keyName K...`;
//! * native: `[[zone.dnssec_key]]` tables (`file`, `ttl`, the times).
//!
//! The key files are BIND's (`sextant dnssec keygen` writes them), read
//! relative to the configuration file. A time given here overrides the one
//! in the `.private` file; both drive rollovers (docs/dnssec.md).

use std::path::{Path, PathBuf};

use sextant_core::Model;
use sextant_core::dnssec::{KeyTiming, SignedZone};

use crate::error::Diag;
use crate::files::{FileAccess, FileKind};

/// Keys and signed zones as written.
#[derive(Debug, Default)]
pub(crate) struct DraftDnssec {
    pub keys: Vec<DraftKey>,
    pub signings: Vec<ZoneSigning>,
}

/// One key: its two files and what the configuration says of it.
#[derive(Debug)]
pub(crate) struct DraftKey {
    pub name: String,
    pub line: usize,
    pub context: String,
    /// As written; relative to the configuration file.
    pub public: String,
    pub private: String,
    pub ttl: Option<u32>,
    /// Times that override the `.private` file's.
    pub timing: KeyTiming,
}

/// "Zone Z is signed with these keys".
#[derive(Debug)]
pub(crate) struct ZoneSigning {
    /// Normalized.
    pub zone: String,
    pub keys: Vec<String>,
    pub line: usize,
    pub context: String,
}

/// The default TTL of the DNSKEY RRset (the appliance's default `-TTL`
/// of `add dns key`).
pub(crate) const DEFAULT_KEY_TTL: u32 = 3600;

/// A time option's value: `YYYYMMDDHHMMSS` (UTC), as key files and
/// `dnssec-settime` write them, or a unix time in seconds.
pub(crate) fn time(text: &str) -> Result<u64, String> {
    sextant_dnssec::time::parse(text)
        .or_else(|| text.parse::<u64>().ok().filter(|_| text.len() != 14))
        .ok_or_else(|| {
            format!("expected a time YYYYMMDDHHMMSS in UTC (e.g. 20270101000000), found \"{text}\"")
        })
}

/// Reads every key file, checks each signed zone's keys, and fills
/// `model.dnssec`. Runs after the zones are built. Key files are read as
/// `files` allows; a problem in one is told by the file's name and what is
/// wrong, never by its content.
pub(crate) fn build(draft: &DraftDnssec, files: &FileAccess, diag: &mut Diag, model: &mut Model) {
    let base: PathBuf = Path::new(diag.file())
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut seen = std::collections::HashMap::new();
    for k in &draft.keys {
        if let Some(first) = seen.insert(k.name.to_ascii_lowercase(), k.line) {
            diag.error(
                k.line,
                format!(
                    "{}: the key \"{}\" is already added on line {first}",
                    k.context, k.name
                ),
            );
        }
    }
    let mut signed_zones: Vec<SignedZone> = Vec::new();
    for s in &draft.signings {
        let Some(zone) = model
            .zones
            .iter_enumerated()
            .find(|(_, z)| z.apex == s.zone)
            .map(|(id, _)| id)
        else {
            diag.error(
                s.line,
                format!(
                    "{}: \"{}\" is not a zone of this configuration; add it with add dns zone, add dns soaRec or [[zone]]",
                    s.context, s.zone
                ),
            );
            continue;
        };
        if signed_zones.iter().any(|z| z.zone == zone) {
            diag.error(
                s.line,
                format!(
                    "{}: the zone \"{}\" is already signed by an earlier line",
                    s.context, s.zone
                ),
            );
            continue;
        }
        let mut signed = SignedZone {
            zone,
            keys: Vec::new(),
            dnskey_ttl: DEFAULT_KEY_TTL,
        };
        for (i, name) in s.keys.iter().enumerate() {
            let Some(k) = draft
                .keys
                .iter()
                .find(|k| k.name.eq_ignore_ascii_case(name))
            else {
                diag.error(
                    s.line,
                    format!(
                        "{}: no key named \"{name}\"; add it first with add dns key",
                        s.context
                    ),
                );
                continue;
            };
            let read = |file: &str| {
                let path = base.join(file);
                files.read_text(&path, FileKind::DnssecKey).map_err(|why| {
                    format!("cannot read {} as a DNSSEC key file: {why}", path.display())
                })
            };
            let loaded = read(&k.public).and_then(|public| {
                let private = read(&k.private)?;
                sextant_dnssec::key::from_files(&k.name, &public, &private).map_err(|e| {
                    format!(
                        "{} and {}: {e}",
                        base.join(&k.public).display(),
                        base.join(&k.private).display()
                    )
                })
            });
            let (owner, mut key, file_ttl) = match loaded {
                Ok(l) => l,
                Err(e) => {
                    diag.error(k.line, format!("{}: {e}", k.context));
                    continue;
                }
            };
            if owner != s.zone {
                diag.error(
                    k.line,
                    format!(
                        "{}: the key is for \"{owner}\" (its DNSKEY's owner), not for the zone \"{}\" it signs (line {})",
                        k.context, s.zone, s.line
                    ),
                );
                continue;
            }
            let t = &k.timing;
            let f = &mut key.timing;
            for (over, field) in [
                (t.publish, &mut f.publish),
                (t.activate, &mut f.activate),
                (t.inactive, &mut f.inactive),
                (t.delete, &mut f.delete),
                (t.sync_publish, &mut f.sync_publish),
                (t.sync_delete, &mut f.sync_delete),
            ] {
                if over.is_some() {
                    *field = over;
                }
            }
            if i == 0 {
                signed.dnskey_ttl = k.ttl.or(file_ttl).unwrap_or(DEFAULT_KEY_TTL);
            }
            signed.keys.push(key);
        }
        if !signed.keys.is_empty() {
            signed_zones.push(signed);
        }
    }
    model.dnssec = signed_zones;
}
