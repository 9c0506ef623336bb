//! Test support shared by Sextant's crates. Used only as a
//! `[dev-dependencies]` entry.
//!
//! * [`ci`]: a test that cannot run here fails under CI (`CI=true`) and
//!   prints `SKIPPED` elsewhere;
//! * [`model`]: hand-built `sextant_core::Model`s;
//! * [`alloc`]: a per-thread counting global allocator;
//! * [`location_data`]: real location databases fetched by `scripts/setup.sh`;
//! * [`net`]: the loopback addresses one end-to-end test owns;
//! * [`scratch`]: scratch directories;
//! * [`wait`]: "eventually, within a generous deadline";
//! * [`http`] and [`api`]: the REST API's HTTP/1.0 client (Sextant's one
//!   HTTP/1 client, `sextant-http1`) and typed reads of the REST API;
//! * [`dns`]: a DNS client over real sockets (hickory-proto);
//! * [`docs`]: the documentation's code blocks, run against a real server
//!   (docs that cannot lie);
//! * [`dns_proxy`]: a UDP relay that breaks the RRSIGs it carries, on demand;
//! * [`ldns`]: an LDNS emulator, a DNS responder over UDP and TCP whose
//!   answers are delayed per source address (the per-site RTT);
//! * [`resolver`]: real validating resolvers in front of the server under
//!   test: Unbound as the LDNS (with the zone's trust anchor) and `delv`;
//! * [`backend`]: TCP and HTTP backends;
//! * [`browser`]: headless chromium driven over the DevTools protocol, for the
//!   dashboard's tests;
//! * [`process`]: the `sextant` binary as a server, a site or a command;
//! * [`netns`]: network namespaces with iptables to cut links;
//! * [`sites`]: the parent sites of a multi-site test, started as processes;
//! * [`vrrp_lab`]: a VRRP lab (nodes and a client on a bridge, in network
//!   namespaces), keepalived as the baseline, and a pinger that measures
//!   failover gaps.
//!
//! Nothing here asserts a wall-clock time: waits are "eventually, within a
//! generous deadline".
//!
//! The binary under test is passed in by the caller: only the `sextant`
//! crate's own integration tests know its path, as
//! `env!("CARGO_BIN_EXE_sextant")` (see [`process::Bin`]). An end-to-end
//! test reads:
//!
//! ```ignore
//! use sextant_test_support::prelude::*;
//!
//! const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));
//!
//! #[test]
//! fn a_dead_backend_goes_down() {
//!     let net = Net::new("a_dead_backend_goes_down");
//!     let backend = Backend::tcp(net.svc_ip(0));
//!     let config = format!("{}add gslb service s0 {} TCP {} ...", net.conf_preamble(),
//!                          backend.ip(), backend.port());
//!     let s = Server::start(SEXTANT, &net, Syntax::Conf, &config);
//!     assert_eq!(s.dns.query_a("app.example.com"), vec![backend.ip()]);
//!     let services: Vec<Service> = s.services(); // typed GET /v1/services
//!     backend.kill();
//!     s.wait_state("s0", State::Down);
//! }
//! ```

#[allow(unsafe_code)] // system calls; each block says why it is sound
pub mod alloc;
pub mod api;
pub mod backend;
#[allow(unsafe_code)] // pipes for chromium's protocol; each block says why it is sound
pub mod browser;
#[allow(unsafe_code)] // system calls; each block says why it is sound
pub mod ci;
#[allow(unsafe_code)] // system calls; each block says why it is sound
pub mod dns;
pub mod dns_proxy;
#[allow(unsafe_code)] // kill(2) of a process group; the block says why it is sound
pub mod docs;
pub mod events;
pub mod http;
pub mod ldns;
pub mod location_data;
pub mod model;
pub mod net;
#[allow(unsafe_code)] // system calls; each block says why it is sound
pub mod netns;
#[allow(unsafe_code)] // system calls; each block says why it is sound
pub mod process;
pub mod prometheus;
pub mod resolver;
pub mod scratch;
pub mod sites;
#[allow(unsafe_code)] // system calls; each block says why it is sound
pub mod vrrp_lab;
pub mod vrrp_sextant;
pub mod wait;

/// Everything an end-to-end test usually needs, for `use ...::prelude::*`.
pub mod prelude {
    pub use crate::api::*;
    pub use crate::backend::Backend;
    pub use crate::ci::{cannot_run, have_program, under_ci};
    pub use crate::dns::*;
    pub use crate::dns_proxy::SignatureBreaker;
    pub use crate::http::{
        Reply, http_get, http_get_as, http_get_within, http_post, http_request, http_send_json,
    };
    pub use crate::ldns::LdnsEmulator;
    pub use crate::net::*;
    pub use crate::netns::Netns;
    pub use crate::process::*;
    pub use crate::resolver::{Delv, Unbound, delv};
    pub use crate::scratch::Scratch;
    pub use crate::sites::{Sites, wait_mesh_up};
    pub use crate::wait::*;
    pub use serde_json::Value;
}
