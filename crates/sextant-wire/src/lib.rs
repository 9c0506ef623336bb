//! DNS wire format, pure (no sockets, no tokio), in one place: the server's
//! query parsing and response building, both without heap allocation on the
//! hot path ([`parse`], [`build`]), and the client side that the DNS
//! monitor, the DNS self-probe and the LDNS prober share ([`client`]). Every
//! reader of untrusted bytes here is fuzzed (`fuzz/fuzz_targets`).

// Pure: no unsafe code, and (crate clippy.toml) no clock, socket, file or
// spawned task.
#![forbid(unsafe_code)]

pub mod build;
pub mod client;
pub mod parse;

/// Response codes Sextant sends (RFC 1035 §4.1.1, RFC 6891 §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rcode {
    NoError,
    FormErr,
    ServFail,
    NxDomain,
    NotImp,
    Refused,
    /// Extended RCODE 16: unsupported EDNS version; needs an OPT record.
    BadVers,
}

impl Rcode {
    /// The 12-bit (extended) code; the low 4 bits go in the header.
    pub fn code(self) -> u16 {
        match self {
            Rcode::NoError => 0,
            Rcode::FormErr => 1,
            Rcode::ServFail => 2,
            Rcode::NxDomain => 3,
            Rcode::NotImp => 4,
            Rcode::Refused => 5,
            Rcode::BadVers => 16,
        }
    }
}
