//! The DNSSEC keys of the zones Sextant signs, as the configuration loaded
//! them (key files in BIND's format, `sextant dnssec keygen`). Only data:
//! signing is `sextant-dnssec`'s, and the DNS workers build their signers
//! from this.

use crate::model::ZoneId;

/// A zone whose answers are signed, and its keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedZone {
    pub zone: ZoneId,
    /// In the configuration's order.
    pub keys: Vec<ZoneKey>,
    /// TTL of the DNSKEY, CDS and CDNSKEY RRsets.
    pub dnskey_ttl: u32,
}

/// One key of a signed zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneKey {
    /// The name the configuration gives it (`add dns key NAME`), or the
    /// key file's name.
    pub name: String,
    /// DNSKEY flags: 256 a zone-signing key, 257 a key-signing key (a
    /// combined signing key when it is the zone's only kind).
    pub flags: u16,
    /// The DNSSEC algorithm number (13 ECDSA P-256 SHA-256, 15 Ed25519).
    pub algorithm: u8,
    /// The public key as the DNSKEY record carries it.
    pub public_key: Vec<u8>,
    /// The private key: the scalar (ECDSA) or seed (Ed25519).
    pub private_key: SecretBytes,
    /// When the key is published, used and withdrawn (unix seconds).
    pub timing: KeyTiming,
}

/// A key's life, as BIND's key files keep it (`Publish:`, `Activate:`,
/// ... in the `.private` file; `dnssec-settime` edits them). `None`: not
/// set (never, for the ends; from the start, for the beginnings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyTiming {
    /// In the DNSKEY RRset from then.
    pub publish: Option<u64>,
    /// Signs from then.
    pub activate: Option<u64>,
    /// Signs no longer from then (still published).
    pub inactive: Option<u64>,
    /// Out of the DNSKEY RRset from then.
    pub delete: Option<u64>,
    /// Its CDS and CDNSKEY published from then (a key-signing key).
    pub sync_publish: Option<u64>,
    /// Its CDS and CDNSKEY withdrawn from then.
    pub sync_delete: Option<u64>,
}

impl KeyTiming {
    /// In the DNSKEY RRset at `now` (unix seconds).
    pub fn published(&self, now: u64) -> bool {
        self.publish.is_none_or(|t| t <= now) && self.delete.is_none_or(|t| now < t)
    }

    /// Signing at `now`.
    pub fn active(&self, now: u64) -> bool {
        self.published(now)
            && self.activate.is_none_or(|t| t <= now)
            && self.inactive.is_none_or(|t| now < t)
    }

    /// Its CDS and CDNSKEY are published at `now`.
    pub fn synced(&self, now: u64) -> bool {
        self.published(now)
            && self.sync_publish.is_some_and(|t| t <= now)
            && self.sync_delete.is_none_or(|t| now < t)
    }
}

/// Bytes that never appear in a log line or a debug print.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretBytes(pub Vec<u8>);

impl std::fmt::Debug for SecretBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretBytes({} bytes, redacted)", self.0.len())
    }
}

/// The flag of a key-signing key (RFC 4034 §2.1.1: SEP).
pub const FLAG_SEP: u16 = 0x0001;
/// The flag every DNSSEC zone key has.
pub const FLAG_ZONE: u16 = 0x0100;

impl ZoneKey {
    /// A key-signing key (SEP set): signs the DNSKEY RRset.
    pub fn is_ksk(&self) -> bool {
        self.flags & FLAG_SEP != 0
    }
}

impl SignedZone {
    /// Whether the zone's keys are only key-signing keys or only
    /// zone-signing keys: each then signs everything (a combined signing
    /// key, CSK).
    pub fn single_kind(&self) -> bool {
        let ksk = self.keys.iter().filter(|k| k.is_ksk()).count();
        ksk == 0 || ksk == self.keys.len()
    }
}
