//! Sextant's DNSSEC, pure: keys and their files ([`key`]), DS records
//! ([`ds`]), RRSIGs over canonical RRsets ([`rrset`], [`sign`]), compact
//! denial of existence ([`denial`], RFC 9824) and the cache that makes a
//! signed answer cost nearly what an unsigned one does ([`cache`]).
//!
//! GSLB answers change with health and client, so nothing is signed ahead
//! of time: each RRset is signed the first time it is answered and its
//! signature reused from the cache until it nears expiry. The set of RRsets
//! a zone can answer is finite (each combination of chosen services), so
//! a warm cache answers nearly everything.
//!
//! No clock of its own: time comes in as unix seconds, as DNSSEC counts
//! it. The random source for new keys and ECDSA signatures comes in as an
//! argument (ring's check of a loaded key pair draws its own).

#![forbid(unsafe_code)]

pub mod cache;
pub mod chain;
pub mod denial;
pub mod ds;
pub mod key;
pub mod name;
pub mod rrset;
pub mod sign;
pub mod time;
pub mod zone;

pub use cache::SignatureCache;
pub use key::{Algorithm, Signer};
pub use rrset::RrsetBuf;
pub use sign::Validity;
pub use zone::ZoneSigner;

/// RR types of DNSSEC.
pub const TYPE_DS: u16 = 43;
pub const TYPE_RRSIG: u16 = 46;
pub const TYPE_NSEC: u16 = 47;
pub const TYPE_DNSKEY: u16 = 48;
pub const TYPE_CDS: u16 = 59;
pub const TYPE_CDNSKEY: u16 = 60;
/// RFC 9824's pseudo-type in an NSEC bitmap: the name does not exist.
pub const TYPE_NXNAME: u16 = 128;

/// What can go wrong with keys and signatures.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    KeyFile(String),
    #[error("DNSSEC algorithm {0} is not supported: use 13 (ECDSAP256SHA256) or 15 (ED25519)")]
    Algorithm(u8),
    #[error("unknown DNSSEC algorithm {0:?}: use ECDSAP256SHA256 (13) or ED25519 (15)")]
    AlgorithmName(String),
    #[error("the name {0:?} cannot be written in wire form")]
    BadName(String),
    #[error("a record cannot be written in wire form: {0}")]
    BadRdata(&'static str),
    #[error("cannot make a key: the random source failed")]
    Generate,
    #[error("signing failed")]
    Sign,
}
