//! Sextant's one HTTP/1 client, written by hand: the HTTP and HTTPS
//! monitors and the Prometheus load sources (`sextant-health`),
//! `sextant explain --server` and the tests' REST client
//! (`sextant-test-support`) all build requests and read responses with it.
//!
//! Written by hand rather than with an HTTP library because every user
//! sends one request on a fresh connection with `Connection: close` and
//! reads one response from a peer it does not trust: a small reader that is
//! bounded everywhere ([`Reader`]'s size limit, [`Limits::max_head`]) is
//! easier to trust than a general client, and its errors are the operator
//! texts the monitors and load sources have always shown.
//!
//! * [`Request`]: the request bytes;
//! * [`parse_status_line`], [`header_end`], [`header`], [`Framing`]: the
//!   pure parsing of a response, which the HTTP monitor also uses directly
//!   to judge a response while it arrives;
//! * [`Reader`]: a response buffer with a size limit, filled by any read
//!   function, blocking ([`Reader::fill`]) or async ([`Reader::fill_async`],
//!   so no runtime is named here), and [`Reader::progress`], which turns
//!   the bytes into a complete [`Response`] or an [`Error`];
//! * [`blocking`]: `GET` and `POST` over a `std` TCP stream with timeouts.
//!
//! A crate of its own, with no dependencies, so that the test support (a
//! dev-dependency of the pure crates, without tokio or TLS) can use it
//! without depending on `sextant-health`.

#![forbid(unsafe_code)]

pub mod blocking;
mod request;
mod response;

pub use request::{Request, host, percent_encode};
pub use response::{
    BadStatusLine, Error, Fill, Framing, Head, Limits, Reader, Response, contains, find, header,
    header_end, parse_status_line,
};
