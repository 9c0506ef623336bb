//! Typed reads of the REST API: every `/v1/...` answer is parsed into the
//! `sextant-api` struct the daemon serialises, so a renamed or retyped
//! field breaks the test that reads it.

use std::net::SocketAddr;
use std::time::Duration;

use serde::de::DeserializeOwned;
/// A datacenter-mode record in `/v1/records` (the name `Record` is the DNS
/// record's in this crate).
pub use sextant_api::Record as DcRecordView;
pub use sextant_api::{
    ApiError, ConfigApply, ConfigDiff, ConfigRejected, DnsCounters, Explain, Ldns, LdnsEntry,
    LdnsSiteRtt, MepCounters, MonitorState, PushMetrics, RecordAddress, RecordDc, Records, Service,
    Site, SiteFiguresPush, State, Status,
};

use crate::http::{http_get, http_get_as, http_get_within};

pub const STATUS: &str = "/v1/status";
pub const SERVICES: &str = "/v1/services";
pub const SITES: &str = "/v1/sites";
/// The RTT method's LDNS table ([`Ldns`]).
pub const LDNS: &str = "/v1/ldns";
/// Datacenter-mode records ([`Records`]).
pub const RECORDS: &str = "/v1/records";
/// This site's own figures (POST [`SiteFiguresPush`]).
pub const SITE_FIGURES: &str = "/v1/site/figures";

/// The explain path for `name` (which may carry more parameters, as in
/// `x.example.com&type=AAAA`) asked by `client`.
pub fn explain_path(name: &str, client: &str) -> String {
    format!("/v1/explain?name={name}&client={client}")
}

/// GET `path` at `addr`; it must answer 200 with JSON that parses as `T`.
pub fn api_get<T: DeserializeOwned>(addr: SocketAddr, path: &str) -> Result<T, String> {
    parse(path, http_get(addr, path))
}

/// Like [`api_get`], with `timeout` for the connect and each read and write
/// ([`http_get_within`]).
pub fn api_get_within<T: DeserializeOwned>(
    addr: SocketAddr,
    path: &str,
    timeout: Duration,
) -> Result<T, String> {
    parse(path, http_get_within(addr, path, timeout))
}

/// Like [`api_get_within`], sending the API token `token` (if any).
pub fn api_get_as<T: DeserializeOwned>(
    addr: SocketAddr,
    path: &str,
    token: Option<&str>,
    timeout: Duration,
) -> Result<T, String> {
    parse(path, http_get_as(addr, path, token, timeout))
}

fn parse<T: DeserializeOwned>(
    path: &str,
    answer: Result<(u16, String), String>,
) -> Result<T, String> {
    let (status, body) = answer.map_err(|e| format!("GET {path}: {e}"))?;
    if status != 200 {
        return Err(format!("GET {path} -> {status}: {body}"));
    }
    serde_json::from_str(&body).map_err(|e| {
        format!(
            "GET {path}: not a {} ({e}): {body}",
            std::any::type_name::<T>()
        )
    })
}

/// `GET /v1/status`.
pub fn api_status(addr: SocketAddr) -> Result<Status, String> {
    api_get(addr, STATUS)
}

/// `GET /v1/services`.
pub fn api_services(addr: SocketAddr) -> Result<Vec<Service>, String> {
    api_get(addr, SERVICES)
}

/// `GET /v1/sites`.
pub fn api_sites(addr: SocketAddr) -> Result<Vec<Site>, String> {
    api_get(addr, SITES)
}

/// `GET /v1/explain?name=NAME&client=CLIENT`.
pub fn api_explain(addr: SocketAddr, name: &str, client: &str) -> Result<Explain, String> {
    api_get(addr, &explain_path(name, client))
}

/// The entry of `name` (case-insensitive) in a `/v1/sites` answer.
pub fn find_site<'a>(sites: &'a [Site], name: &str) -> Option<&'a Site> {
    sites.iter().find(|s| s.name.eq_ignore_ascii_case(name))
}

/// `GET /v1/ldns`.
pub fn api_ldns(addr: SocketAddr) -> Result<Ldns, String> {
    api_get(addr, LDNS)
}

/// The entry of the LDNS group `ldns` (its address as text) in a
/// `/v1/ldns` answer.
pub fn find_ldns<'a>(table: &'a Ldns, ldns: &str) -> Option<&'a LdnsEntry> {
    table.entries.iter().find(|e| e.ldns == ldns)
}

/// Site `site`'s measurement (case-insensitive name) in an LDNS entry.
pub fn ldns_site<'a>(entry: &'a LdnsEntry, site: &str) -> Option<&'a LdnsSiteRtt> {
    entry
        .sites
        .iter()
        .find(|s| s.site.eq_ignore_ascii_case(site))
}
