//! The read endpoints: each reads the one published snapshot (and the
//! metric exchange and VRRP publications), never a lock the DNS path or
//! the state task holds.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use sextant_api::{DnsCounters, Site, Status};

use sextant_core::{SiteKind, Snapshot, Transition};

use super::{error, rfc3339};
use crate::clock::Clock;
use crate::serve::Daemon;

/// The server's version, configuration generation, uptime and DNS
/// counters.
#[utoipa::path(get, path = "/v1/status", tag = "read",
    responses((status = 200, description = "the server's status", body = Status)))]
pub(super) async fn status(State(d): State<Arc<Daemon>>) -> Json<Status> {
    let snap = d.dns.snapshot.load();
    let model = snap.model();
    let c = d.dns.stats.snapshot();
    let unsaved = d
        .unsaved
        .lock()
        .map(|u| super::config::unsaved_view(&u))
        .unwrap_or_default();
    Json(Status {
        version: env!("CARGO_PKG_VERSION").to_string(),
        commit: env!("SEXTANT_COMMIT").to_string(),
        build_date: env!("SEXTANT_BUILD_DATE").to_string(),
        local_site: model.local_site.map(|s| model.site(s).name.clone()),
        generation: snap.generation(),
        config_file: d.config_file.display().to_string(),
        uptime_seconds: d.clock.now().as_secs(),
        last_reload_error: d.last_reload_error.read().ok().and_then(|e| e.clone()),
        dns: DnsCounters {
            queries_udp: c.queries_udp,
            queries_tcp: c.queries_tcp,
            noerror: c.noerror,
            nxdomain: c.nxdomain,
            refused: c.refused,
            formerr: c.formerr,
            servfail: c.servfail,
            notimp: c.notimp,
            badvers: c.badvers,
            truncated: c.truncated,
            tcp_rejected: c.tcp_rejected,
            dropped: c.dropped,
            rate_limited: c.rate_limited,
            slipped: c.slipped,
            cookie_valid: c.cookie_valid,
            cookie_invalid: c.cookie_invalid,
            tcp_idle_closed: c.tcp_idle_closed,
            queries_xdp: c.queries_xdp,
        },
        mep: d.mep_status.load().running.then(|| d.mep_counters.view()),
        config_unsaved: !unsaved.commands.is_empty(),
        config_unsaved_commands: unsaved.commands.len(),
        config_unsaved_since: unsaved.since,
    })
}

/// Every service as the published snapshot has it: the same moment the
/// DNS answers come from.
#[utoipa::path(get, path = "/v1/services", tag = "read",
    responses((status = 200, description = "every GSLB service", body = Vec<sextant_api::Service>)))]
pub(super) async fn services(State(d): State<Arc<Daemon>>) -> Json<Vec<sextant_api::Service>> {
    Json(service_views(&d.dns.snapshot.load(), &d.clock))
}

/// The API's view of every service of a snapshot.
fn service_views(snap: &Snapshot, clock: &Clock) -> Vec<sextant_api::Service> {
    let model = snap.model();
    model
        .services
        .iter_enumerated()
        .map(|(id, s)| {
            let status = snap.status().get(id);
            sextant_api::Service {
                name: s.name.clone(),
                site: model.site(s.site).name.clone(),
                ip: s.ip.to_string(),
                port: s.port,
                public_ip: s.public_ip.map(|ip| ip.to_string()),
                state: if snap.is_up(id) {
                    sextant_api::State::Up
                } else {
                    sextant_api::State::Down
                },
                last_change: status
                    .and_then(|st| st.last_change)
                    .map(|t| rfc3339(clock.wall(t))),
                reason: status.map(|st| st.reason.to_string()).unwrap_or_default(),
                monitors: s
                    .monitors
                    .iter()
                    .enumerate()
                    .map(|(slot, m)| {
                        let monitor = model.monitor(*m);
                        let ms = status.and_then(|st| st.monitors.get(slot));
                        sextant_api::MonitorState {
                            name: monitor.name.clone(),
                            kind: monitor.kind.type_name().to_string(),
                            state: match ms.and_then(|m| m.state) {
                                Some(Transition::Up) => "UP",
                                Some(Transition::Down) => "DOWN",
                                None => "UNKNOWN",
                            }
                            .to_string(),
                            last_detail: ms
                                .and_then(|m| m.last_detail.as_deref().map(str::to_string)),
                            last_response_ms: ms
                                .and_then(|m| m.last_response)
                                .map(|d| d.as_secs_f64() * 1000.0),
                        }
                    })
                    .collect(),
                admin_state: snap.admin().service(id).as_str().to_string(),
                admin_reason: snap
                    .admin()
                    .service_cause(model, id)
                    .and_then(|c| c.mark.reason.as_deref().map(str::to_string)),
                admin_since: snap
                    .admin()
                    .service_cause(model, id)
                    .map(|c| rfc3339(crate::admin_state::wall(c.mark.since_unix_ms))),
                load: super::push::to_push(snap.metrics(id)),
                health_source: model.health_source(id).as_str().to_string(),
                checked: model.health_source(id).checked(),
            }
        })
        .collect()
}

/// The virtual routers of this node: state, priorities, VIPs, transitions.
#[utoipa::path(get, path = "/v1/vrrp", tag = "read",
    responses((status = 200, description = "this node's VRRP virtual routers", body = sextant_api::Vrrp)))]
pub(super) async fn vrrp(State(d): State<Arc<Daemon>>) -> Json<sextant_api::Vrrp> {
    Json(d.vrrp.api())
}

/// Datacenter mode: every record with its status and its datacenters in
/// ranked order, from the same publication DNS answers from.
#[utoipa::path(get, path = "/v1/records", tag = "read",
    responses((status = 200, description = "datacenter-mode records", body = sextant_api::Records)))]
pub(super) async fn records(State(d): State<Arc<Daemon>>) -> Json<sextant_api::Records> {
    use sextant_core::dc_answer::{address_healthy, record_status};
    use sextant_core::{DcHealth, DcSelection};
    let snap = d.dns.snapshot.load();
    let model = snap.model();
    let now = d.clock.now();
    let site_name = |s: sextant_core::SiteId| {
        model
            .sites
            .get(s)
            .map(|s| s.name.clone())
            .unwrap_or_default()
    };
    let records = model
        .dc_records
        .iter_enumerated()
        .map(|(r, rec)| {
            let order = snap.dc_order(r);
            let ranked: Vec<u8> = match order {
                Some(o) if !rec.selection.is_client_based() => o.groups.clone(),
                _ => (0..rec.groups.len() as u8).collect(),
            };
            let datacenters = ranked
                .iter()
                .enumerate()
                .filter_map(|(rank, g)| {
                    let group = rec.groups.get(*g as usize)?;
                    Some(sextant_api::RecordDc {
                        rank: rank as u32 + 1,
                        site: site_name(group.site),
                        figure: order.and_then(|o| o.figures.get(*g as usize).copied().flatten()),
                        reachable: snap.site_reachable(group.site),
                        addresses: rec
                            .addresses
                            .iter()
                            .enumerate()
                            .filter(|(_, a)| a.group == *g)
                            .map(|(a, addr)| {
                                let (hc, service) = match addr.health {
                                    DcHealth::Always => ("NONE", None),
                                    DcHealth::Service(s) => ("SERVICE", Some(s)),
                                    DcHealth::SiteReachable => ("SITE", None),
                                    DcHealth::ServiceAndSite(s) => ("SERVICE_AND_SITE", Some(s)),
                                };
                                sextant_api::RecordAddress {
                                    ip: addr.ip.to_string(),
                                    weight: addr.weight,
                                    hc: hc.to_string(),
                                    service: service
                                        .and_then(|s| model.services.get(s))
                                        .map(|s| s.name.clone()),
                                    healthy: address_healthy(&snap, rec, a),
                                }
                            })
                            .collect(),
                    })
                })
                .collect();
            sextant_api::Record {
                name: rec.name.clone(),
                status: record_status(&snap, r).describe().to_string(),
                dc_selection: rec.selection.name().to_string(),
                criterion: rec.selection.criterion_name().map(str::to_string),
                vservice_name: match &rec.selection {
                    DcSelection::ServiceBased { service, .. } => Some(service.clone()),
                    _ => None,
                },
                total_dcs: rec.total_dcs,
                balance: rec.balance.name().to_string(),
                ttl: rec.ttl,
                ranked_age_seconds: order
                    .filter(|_| !rec.selection.is_client_based())
                    .map(|o| now.saturating_sub(o.at).as_secs_f64()),
                datacenters,
                fail_safe: rec.fail_safe.iter().map(|ip| ip.to_string()).collect(),
            }
        })
        .collect();
    Json(sextant_api::Records { records })
}

/// The RTT method's LDNS table: every group with every site's RTT, from
/// the same publication DNS answers from.
#[utoipa::path(get, path = "/v1/ldns", tag = "read",
    responses((status = 200, description = "the LDNS RTT table", body = sextant_api::Ldns)))]
pub(super) async fn ldns(State(d): State<Arc<Daemon>>) -> Json<sextant_api::Ldns> {
    use std::sync::atomic::Ordering;
    let snap = d.dns.snapshot.load();
    let model = snap.model();
    let table = snap.rtt();
    let now = d.clock.now();
    let age = |at: Duration| now.saturating_sub(at).as_secs_f64();
    let timeout = model.params.ldns_entry_timeout;
    let entries = table
        .rows()
        .map(|(group, info, cells)| sextant_api::LdnsEntry {
            ldns: group.to_string(),
            prefix_len: if group.is_ipv4() {
                model.params.ldns_v4_mask
            } else {
                model.params.ldns_v6_mask
            },
            last_query_age_seconds: info.last_query.filter(|t| now < *t + timeout).map(age),
            peers_interested: info.peers_interested,
            sites: model
                .sites
                .iter()
                .zip(cells)
                .map(|(site, cell)| sextant_api::LdnsSiteRtt {
                    site: site.name.clone(),
                    rtt_ms: cell.map(|c| c.rtt.as_secs_f64() * 1000.0),
                    probe: cell
                        .and_then(|c| c.kind)
                        .map(|k| k.monitor_name().to_string()),
                    age_seconds: cell.map(|c| age(c.at)),
                    hops: cell.and_then(|c| c.path).map(|p| p.hops),
                    ttl: cell.and_then(|c| c.path).map(|p| p.ttl),
                    packet_loss_percent: cell
                        .and_then(|c| c.path)
                        .map(|p| f64::from(p.loss_permille) / 10.0),
                    mos: cell
                        .and_then(|c| c.path)
                        .map(|p| f64::from(p.mos_centi) / 100.0),
                })
                .collect(),
        })
        .collect();
    let stats = table.stats();
    let prober = d.ldns.prober.lock().map(|c| *c).unwrap_or_default();
    Json(sextant_api::Ldns {
        entries,
        created: stats.created,
        rate_limited: stats.rate_limited,
        evicted: stats.evicted,
        expired: stats.expired,
        ignored: stats.ignored,
        queue_dropped: d.dns.ldns.dropped(),
        probes_sent: prober.probes_sent,
        probe_samples: prober.samples,
        probe_failures: prober.failures,
        probes_rate_limited: prober.rate_limited,
        rtt_messages_sent: d.ldns.messages_sent.load(Ordering::Relaxed),
        rtt_entries_sent: d.ldns.entries_sent.load(Ordering::Relaxed),
    })
}

/// Every site with its metric exchange state, link and figures.
#[utoipa::path(get, path = "/v1/sites", tag = "read",
    responses((status = 200, description = "every site", body = Vec<Site>)))]
pub(super) async fn sites(State(d): State<Arc<Daemon>>) -> Json<Vec<Site>> {
    let snap = d.dns.snapshot.load();
    let model = snap.model();
    let has_children = model.sites.iter().any(|s| s.parent.is_some());
    let mep = d.mep_status.load();
    let status = &mep.peers;
    let sync = d.config_sync.status();
    let mut sites: Vec<Site> = model
        .sites
        .iter_enumerated()
        .map(|(id, s)| {
            let figures = snap.site_figures(id);
            let peer = status.iter().find(|p| p.name.eq_ignore_ascii_case(&s.name));
            Site {
                name: s.name.clone(),
                ip: s.ip.to_string(),
                public_ip: s.public_ip.map(|ip| ip.to_string()),
                role: match s.kind {
                    SiteKind::Local => "local",
                    SiteKind::Remote => "remote",
                }
                .to_string(),
                kind: if s.parent.is_some() {
                    "child"
                } else if has_children {
                    "parent"
                } else {
                    "flat"
                }
                .to_string(),
                parent: s.parent.map(|p| model.site(p).name.clone()),
                mep: site_mep_state(snap.peer_link(id), peer, s.kind),
                current_parent: peer.and_then(|p| p.current_parent.clone()),
                adopted_for: peer.and_then(|p| p.adopted_for.clone()),
                via: snap
                    .peer_link(id)
                    .filter(|l| l.up)
                    .and_then(|l| l.via.as_deref().map(str::to_string)),
                last_message: peer
                    .and_then(|p| p.last_message)
                    .map(|t| rfc3339(d.clock.wall(t))),
                link_rtt_ms: peer
                    .and_then(|p| p.link_rtt)
                    .map(|r| r.as_secs_f64() * 1000.0),
                keepalives_sent: peer.map_or(0, |p| p.keepalives_sent),
                keepalives_lost: peer.map_or(0, |p| p.keepalives_lost),
                link: peer.and_then(|p| p.link).map(str::to_string),
                link_secure: peer.filter(|p| p.link.is_some()).map(|p| p.secure),
                last_down_reason: peer.and_then(|p| p.last_down_reason.clone()),
                reported_links: peer.and_then(reported_links),
                reported_links_age_seconds: peer.and_then(|p| reported_age(p, &d.clock)),
                cpu_percent: figures.and_then(|m| m.cpu_percent),
                memory_percent: figures.and_then(|m| m.memory_percent),
                config_sync: site_config_sync(&d, sync.as_ref().as_ref(), &s.name, s.kind),
            }
        })
        .collect();
    // Sites this node learned over metric exchange but does not configure
    // (a child's backup parents).
    for p in status {
        if !sites.iter().any(|s| s.name.eq_ignore_ascii_case(&p.name)) {
            sites.push(Site {
                name: p.name.clone(),
                ip: p.ip.to_string(),
                public_ip: None,
                role: "remote".to_string(),
                kind: p.kind.to_string(),
                parent: p.configured_parent.clone(),
                mep: mep_state(Some(p), SiteKind::Remote),
                current_parent: p.current_parent.clone(),
                adopted_for: p.adopted_for.clone(),
                via: p.via.clone(),
                last_message: p.last_message.map(|t| rfc3339(d.clock.wall(t))),
                link_rtt_ms: p.link_rtt.map(|r| r.as_secs_f64() * 1000.0),
                keepalives_sent: p.keepalives_sent,
                keepalives_lost: p.keepalives_lost,
                link: p.link.map(str::to_string),
                link_secure: p.link.map(|_| p.secure),
                last_down_reason: p.last_down_reason.clone(),
                reported_links: reported_links(p),
                reported_links_age_seconds: reported_age(p, &d.clock),
                // Not a site of this configuration: the engine keeps no
                // figures for it.
                cpu_percent: None,
                memory_percent: None,
                config_sync: None,
            });
        }
    }
    Json(sites)
}

/// A site's config sync state: this node's version for the local site,
/// the peer's standing for a peer parent, nothing for the others.
fn site_config_sync(
    d: &Daemon,
    sync: Option<&sextant_config_sync::Status>,
    name: &str,
    kind: SiteKind,
) -> Option<sextant_api::SiteConfigSync> {
    let sync = sync?;
    if kind == SiteKind::Local {
        if sync.peers.is_empty() {
            return None;
        }
        let v = &sync.version;
        return Some(sextant_api::SiteConfigSync {
            state: "local".to_string(),
            incarnation: Some(v.incarnation),
            origin: Some(v.origin.clone()),
            digest: Some(v.digest.clone()),
            software: Some(sync.software.clone()),
            automatic: Some(sync.automatic),
            last_error: None,
            last_sync: None,
            bytes_sent: 0,
            bytes_received: 0,
            deltas_sent: 0,
            fulls_sent: 0,
        });
    }
    let p = sync
        .peers
        .iter()
        .find(|p| p.site.eq_ignore_ascii_case(name))?;
    Some(sextant_api::SiteConfigSync {
        state: p.state.as_str().to_string(),
        incarnation: p.version.as_ref().map(|v| v.incarnation),
        origin: p.version.as_ref().map(|v| v.origin.clone()),
        digest: p.version.as_ref().map(|v| v.digest.clone()),
        software: p.software.clone(),
        automatic: p.automatic,
        last_error: p.last_error.clone(),
        last_sync: p.last_sync.map(|t| rfc3339(d.clock.wall(t))),
        bytes_sent: p.counters.bytes_sent,
        bytes_received: p.counters.bytes_received,
        deltas_sent: p.counters.deltas_sent,
        fulls_sent: p.counters.fulls_sent,
    })
}

/// A configured site's metric exchange state as the engine has it (the
/// state its services were decided with): UP, or DOWN where this node
/// expects to hear from it (the driver has it), else `n/a`.
fn site_mep_state(
    link: Option<&sextant_core::PeerLink>,
    peer: Option<&sextant_mep::PeerStatus>,
    kind: SiteKind,
) -> String {
    match (kind, link.is_some_and(|l| l.up), peer.is_some()) {
        (SiteKind::Local, ..) => "n/a",
        (SiteKind::Remote, true, _) => "UP",
        (SiteKind::Remote, false, true) => "DOWN",
        (SiteKind::Remote, false, false) => "n/a",
    }
    .to_string()
}

/// The links `peer` last reported of its own.
fn reported_links(peer: &sextant_mep::PeerStatus) -> Option<Vec<sextant_api::ReportedLink>> {
    peer.reported_links.as_ref().map(|(links, _)| {
        links
            .iter()
            .map(|l| sextant_api::ReportedLink {
                site: l.site.clone(),
                kind: l.kind.clone(),
                up: l.up,
            })
            .collect()
    })
}

/// How long ago `peer` reported its links.
fn reported_age(peer: &sextant_mep::PeerStatus, clock: &Clock) -> Option<f64> {
    peer.reported_links
        .as_ref()
        .map(|(_, at)| clock.now().saturating_sub(*at).as_secs_f64())
}

/// A site this node does not configure, as the driver knows it.
fn mep_state(peer: Option<&sextant_mep::PeerStatus>, kind: SiteKind) -> String {
    match (peer.map(|p| p.state), kind) {
        (Some(sextant_mep::MepState::Up), _) => "UP",
        (Some(sextant_mep::MepState::Down), SiteKind::Remote) => "DOWN",
        _ => "n/a",
    }
    .to_string()
}

/// The query `GET /v1/explain` explains.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct ExplainParams {
    /// The name asked for.
    name: String,
    /// The address the query comes from (the client's LDNS).
    #[param(value_type = String)]
    client: IpAddr,
    /// The query type (default A).
    #[serde(rename = "type")]
    qtype: Option<String>,
    /// An EDNS Client Subnet, e.g. 198.51.100.0/24.
    ecs: Option<String>,
    /// `text`: the explanation as `sextant explain --server` prints it
    /// (`text/plain`), for the dashboard; JSON otherwise.
    format: Option<String>,
}

/// How a query for `name` from `client` is answered now, step by step.
#[utoipa::path(get, path = "/v1/explain", tag = "read", params(ExplainParams),
    responses((status = 200, description = "the decision, step by step", body = sextant_api::Explain),
        (status = 400, description = "a bad name, type, client or ECS", body = sextant_api::ApiError)))]
pub(super) async fn explain(
    State(d): State<Arc<Daemon>>,
    headers: axum::http::HeaderMap,
    Query(p): Query<ExplainParams>,
) -> Response {
    let text = match p.format.as_deref() {
        None | Some("json") => false,
        Some("text") => true,
        Some(other) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("unknown format {other:?}; use json (the default) or text"),
            );
        }
    };
    let snap = d.dns.snapshot.load_full();
    match crate::explain::explain(
        &snap,
        &d.dns.sessions,
        &p.name,
        p.qtype.as_deref().unwrap_or("A"),
        p.client,
        p.ecs.as_deref(),
    ) {
        Ok(e) if text => {
            // The address the client asked, as `--server ADDR` names it.
            let server = headers
                .get(axum::http::header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("this server");
            (
                [(
                    axum::http::header::CONTENT_TYPE,
                    "text/plain; charset=utf-8",
                )],
                crate::explain::render(&e, &crate::explain::live_health(server)),
            )
                .into_response()
        }
        Ok(e) => Json(e).into_response(),
        Err(e) => error(StatusCode::BAD_REQUEST, format!("{e:#}")),
    }
}
