//! `GET /metrics`: every figure of the node in the Prometheus text format.
//!
//! Built on prometheus-client with an explicit [`Registry`] whose
//! [`Collector`]s read Sextant's own counters and publications at scrape
//! time: the DNS workers' counters (summed here, see
//! [`sextant_dns::counters`]), the published snapshot, the metric
//! exchange's status, the VRRP view. The hot path never touches
//! prometheus-client. Every label value comes from the configuration
//! (names of services, vservers, sites, monitors...), never from a client.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use sextant_core::{LbMethod, Model, MonitorId, Transition};
use sextant_dns::counters::{FALLBACK_WHYS, QUERY_TYPES, REASONS};

use super::error;
use crate::serve::Daemon;

/// The process's own counters that no other part keeps: reloads, service
/// transitions and probe results. Written by the state task (never the DNS
/// path), read at scrape time.
#[derive(Debug, Default)]
pub struct ProcessCounters {
    pub reloads_ok: AtomicU64,
    pub reloads_failed: AtomicU64,
    /// By service name: transitions to UP, to DOWN.
    transitions: Mutex<HashMap<String, [u64; 2]>>,
    /// By monitor name: probes that succeeded, that failed, that could
    /// not be made (a local error, [`ProbeCount::LocalError`]).
    probes: Mutex<HashMap<String, [u64; 3]>>,
}

/// How a probe ended, for [`ProcessCounters::probes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeCount {
    Success = 0,
    Failure = 1,
    /// Failed for a reason of this host (out of descriptors...): not
    /// counted towards the service's state.
    LocalError = 2,
}

impl ProcessCounters {
    pub fn transition(&self, service: &str, up: bool) {
        let mut map = self
            .transitions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = map.entry(service.to_string()).or_default();
        entry[usize::from(!up)] += 1;
    }

    /// Counts a batch of probe results.
    pub fn probes(
        &self,
        model: &Model,
        results: impl IntoIterator<Item = (MonitorId, ProbeCount)>,
    ) {
        let mut map = self
            .probes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (monitor, outcome) in results {
            let Some(m) = model.monitors.get(monitor) else {
                continue;
            };
            let entry = match map.get_mut(m.name.as_str()) {
                Some(e) => e,
                None => map.entry(m.name.clone()).or_default(),
            };
            entry[outcome as usize] += 1;
        }
    }
}

/// Every figure in the Prometheus text format (docs/metrics.md).
#[utoipa::path(get, path = "/metrics", tag = "read",
    responses((status = 200, description = "the Prometheus text exposition",
        content_type = "text/plain", body = String)))]
pub(super) async fn metrics(State(d): State<Arc<Daemon>>) -> Response {
    match render(&d) {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(_) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "cannot encode the metrics",
        ),
    }
}

/// The whole exposition, as a scrape gets it.
pub fn render(d: &Arc<Daemon>) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(DnsCollector(d.clone())));
    registry.register_collector(Box::new(HealthCollector(d.clone())));
    registry.register_collector(Box::new(MepCollector(d.clone())));
    registry.register_collector(Box::new(ConfigSyncCollector(d.clone())));
    registry.register_collector(Box::new(RttCollector(d.clone())));
    registry.register_collector(Box::new(DatacenterCollector(d.clone())));
    registry.register_collector(Box::new(VrrpCollector(d.clone())));
    registry.register_collector(Box::new(ProcessCollector(d.clone())));
    let mut out = String::with_capacity(16 * 1024);
    prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?;
    Ok(out)
}

type Labels = Vec<(&'static str, String)>;

/// Writes one metric family: a descriptor and its samples.
fn family<V>(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    kind: MetricType,
    samples: impl IntoIterator<Item = (Labels, V)>,
    write: impl Fn(&mut MetricEncoder<'_>, &V) -> std::fmt::Result,
) -> std::fmt::Result {
    let mut metric = enc.encode_descriptor(name, help, None, kind)?;
    for (labels, value) in samples {
        if labels.is_empty() {
            write(&mut metric, &value)?;
        } else {
            let mut sample = metric.encode_family(&labels)?;
            write(&mut sample, &value)?;
        }
    }
    Ok(())
}

/// A counter family (the encoder appends `_total` to `name`).
fn counters(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (Labels, u64)>,
) -> std::fmt::Result {
    family(enc, name, help, MetricType::Counter, samples, |m, v| {
        m.encode_counter::<NoLabelSet, u64, u64>(v, None)
    })
}

fn counter(enc: &mut DescriptorEncoder<'_>, name: &str, help: &str, v: u64) -> std::fmt::Result {
    counters(enc, name, help, [(Labels::new(), v)])
}

fn gauges(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (Labels, f64)>,
) -> std::fmt::Result {
    family(enc, name, help, MetricType::Gauge, samples, |m, v| {
        m.encode_gauge(v)
    })
}

fn gauge(enc: &mut DescriptorEncoder<'_>, name: &str, help: &str, v: f64) -> std::fmt::Result {
    gauges(enc, name, help, [(Labels::new(), v)])
}

fn one(key: &'static str, value: impl Into<String>) -> Labels {
    vec![(key, value.into())]
}

fn flag(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

macro_rules! daemon_collector {
    ($name:ident) => {
        struct $name(Arc<Daemon>);
        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(stringify!($name))
            }
        }
    };
}

daemon_collector!(DnsCollector);
daemon_collector!(HealthCollector);
daemon_collector!(MepCollector);
daemon_collector!(ConfigSyncCollector);
daemon_collector!(RttCollector);
daemon_collector!(DatacenterCollector);
daemon_collector!(VrrpCollector);
daemon_collector!(ProcessCollector);

impl Collector for DnsCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        let d = &self.0;
        let c = d.dns.stats.snapshot();
        let t = d.dns.answers.totals();
        let snap = d.dns.snapshot.load();
        let model = snap.model();
        let e = &mut enc;
        counters(
            e,
            "sextant_dns_queries",
            "DNS queries received, by transport (udp includes the queries answered on the XDP path; xdp counts the frames that path took)",
            [
                (one("transport", "udp"), c.queries_udp),
                (one("transport", "tcp"), c.queries_tcp),
                (one("transport", "xdp"), c.queries_xdp),
            ],
        )?;
        counters(
            e,
            "sextant_dns_query_types",
            "Parsed DNS queries by query type (types outside the list count as other)",
            QUERY_TYPES
                .iter()
                .zip(t.query_types)
                .map(|(ty, n)| (one("type", *ty), n)),
        )?;
        counters(
            e,
            "sextant_dns_responses",
            "DNS responses sent, by RCODE",
            [
                ("NOERROR", c.noerror),
                ("NXDOMAIN", c.nxdomain),
                ("REFUSED", c.refused),
                ("FORMERR", c.formerr),
                ("SERVFAIL", c.servfail),
                ("NOTIMP", c.notimp),
                ("BADVERS", c.badvers),
            ]
            .map(|(r, n)| (one("rcode", r), n)),
        )?;
        counter(
            e,
            "sextant_dns_truncated",
            "UDP responses sent truncated (TC=1), slipped ones included",
            c.truncated,
        )?;
        counter(
            e,
            "sextant_dns_dropped",
            "Packets not answered (too short, a response, or a DNS policy's DROP)",
            c.dropped,
        )?;
        counter(
            e,
            "sextant_dns_rate_limited",
            "UDP responses over the response rate limit (dropped or slipped)",
            c.rate_limited,
        )?;
        counter(
            e,
            "sextant_dns_slipped",
            "Rate-limited responses sent truncated instead of dropped",
            c.slipped,
        )?;
        counters(
            e,
            "sextant_dns_cookies",
            "Queries with a server cookie, by whether it was valid",
            [
                (one("result", "valid"), c.cookie_valid),
                (one("result", "invalid"), c.cookie_invalid),
            ],
        )?;
        counter(
            e,
            "sextant_dns_tcp_rejected",
            "TCP connections closed at once because the connection cap was hit",
            c.tcp_rejected,
        )?;
        counter(
            e,
            "sextant_dns_tcp_idle_closed",
            "TCP connections closed for idleness or a stalled query",
            c.tcp_idle_closed,
        )?;
        counter(
            e,
            "sextant_dnssec_signed_responses",
            "Responses that carried DNSSEC signatures (the query had DO, the zone is signed)",
            c.dnssec_signed,
        )?;
        counter(
            e,
            "sextant_dnssec_signatures",
            "RRSIGs made (signature cache misses; the other signatures came from the cache)",
            c.dnssec_signatures,
        )?;
        counters(
            e,
            "sextant_dns_decisions",
            "Answers decided, by reason (method: the vserver's method; fallback: its backup method; backup_vserver, backup_ip, empty_down_response, last_resort...)",
            REASONS
                .iter()
                .zip(t.reasons)
                .map(|(r, n)| (one("reason", *r), n)),
        )?;
        counters(
            e,
            "sextant_dns_method_decisions",
            "GSLB answers by the vserver's load balancing method, by whether it decided or fell back to its backup method",
            LbMethod::ALL.iter().enumerate().flat_map(|(i, (m, _))| {
                [
                    (
                        vec![("method", m.to_string()), ("result", "decided".into())],
                        t.method_decided[i],
                    ),
                    (
                        vec![("method", m.to_string()), ("result", "fell_back".into())],
                        t.method_fell_back[i],
                    ),
                ]
            }),
        )?;
        counters(
            e,
            "sextant_dns_fallbacks",
            "Times a method could not decide and its backup method did, by why",
            FALLBACK_WHYS
                .iter()
                .zip(t.fallback_whys)
                .map(|(w, n)| (one("why", *w), n)),
        )?;
        let count = |map: &HashMap<String, u64>, name: &str| map.get(name).copied().unwrap_or(0);
        counter(
            e,
            "sextant_query_log_dropped",
            "Query log entries dropped because the writer's queue was full",
            d.dns.query_log.get().map_or(0, |l| l.dropped()),
        )?;
        counters(
            e,
            "sextant_zone_answers",
            "Queries answered for names in each zone",
            model
                .zones
                .iter()
                .map(|z| (one("zone", z.apex.clone()), count(&t.zones, &z.apex))),
        )?;
        counters(
            e,
            "sextant_domain_answers",
            "Queries answered for each GSLB domain (address, CNAME or empty answers)",
            model.domains.iter().map(|dm| {
                (
                    vec![
                        ("domain", dm.name.clone()),
                        ("vserver", model.vserver(dm.vserver).name.clone()),
                    ],
                    count(&t.domains, &dm.name),
                )
            }),
        )?;
        counters(
            e,
            "sextant_vserver_hits",
            "GSLB queries answered by each vserver (a backup vserver counts the queries it answered)",
            model.vservers.iter().map(|v| {
                (
                    one("vserver", v.name.clone()),
                    count(&t.vserver_hits, &v.name),
                )
            }),
        )?;
        counters(
            e,
            "sextant_service_answers",
            "Times each service was in an answer",
            model.services.iter().map(|s| {
                (
                    vec![
                        ("service", s.name.clone()),
                        ("site", model.site(s.site).name.clone()),
                    ],
                    count(&t.services, &s.name),
                )
            }),
        )?;
        Ok(())
    }
}

impl Collector for HealthCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        let d = &self.0;
        let snap = d.dns.snapshot.load();
        let model = snap.model();
        let e = &mut enc;
        // Each service once per vserver it is bound to (once with an empty
        // vserver label when bound to none).
        let mut bound: Vec<Vec<&str>> = vec![Vec::new(); model.services.len()];
        for vs in &model.vservers {
            for b in &vs.bindings {
                if let Some(list) = bound.get_mut(b.service.index()) {
                    list.push(vs.name.as_str());
                }
            }
        }
        let per_binding = |value: &dyn Fn(sextant_core::ServiceId) -> Option<f64>| {
            let mut out = Vec::new();
            for (id, s) in model.services.iter_enumerated() {
                let Some(v) = value(id) else { continue };
                let site = model.site(s.site).name.clone();
                let vservers = &bound[id.index()];
                let names: Vec<&str> = if vservers.is_empty() {
                    vec![""]
                } else {
                    vservers.clone()
                };
                for vs in names {
                    out.push((
                        vec![
                            ("service", s.name.clone()),
                            ("site", site.clone()),
                            ("vserver", vs.to_string()),
                        ],
                        v,
                    ));
                }
            }
            out
        };
        gauges(
            e,
            "sextant_service_up",
            "Effective state of each service as DNS answers from it (1 UP, 0 DOWN): its monitors here, or its site's report for another site's service",
            per_binding(&|id| Some(flag(snap.is_up(id)))),
        )?;
        gauges(
            e,
            "sextant_service_monitors_up",
            "State the service's own monitors give on this node (1 all UP, 0 one DOWN); absent while no monitor has a result",
            per_binding(&|id| {
                let st = snap.status().get(id)?;
                let states: Vec<Transition> = st.monitors.iter().filter_map(|m| m.state).collect();
                if states.is_empty() {
                    return None;
                }
                Some(flag(states.iter().all(|s| *s == Transition::Up)))
            }),
        )?;
        gauges(
            e,
            "sextant_service_answerable",
            "Whether DNS may answer with the service (1: UP and enabled by the operator; 0: DOWN, disabled or draining)",
            per_binding(&|id| Some(flag(snap.answers(id)))),
        )?;
        gauges(
            e,
            "sextant_admin_state",
            "The operator's maintenance marks (1 per site, vserver or service that is disabled or draining; none while all are enabled)",
            super::maintenance::entries(&snap).into_iter().map(|m| {
                (
                    vec![("kind", m.kind), ("name", m.name), ("state", m.state)],
                    1.0,
                )
            }),
        )?;
        let mut monitor_up = Vec::new();
        let mut latency = Vec::new();
        for (id, s) in model.services.iter_enumerated() {
            let Some(st) = snap.status().get(id) else {
                continue;
            };
            for (slot, m) in s.monitors.iter().enumerate() {
                let Some(ms) = st.monitors.get(slot) else {
                    continue;
                };
                let labels = vec![
                    ("service", s.name.clone()),
                    ("monitor", model.monitor(*m).name.clone()),
                ];
                if let Some(state) = ms.state {
                    monitor_up.push((labels.clone(), flag(state == Transition::Up)));
                }
                if let Some(rt) = ms.last_response {
                    latency.push((labels, rt.as_secs_f64()));
                }
            }
        }
        gauges(
            e,
            "sextant_monitor_up",
            "Each monitor's verdict on each service it checks (1 UP, 0 DOWN)",
            monitor_up,
        )?;
        gauges(
            e,
            "sextant_monitor_response_seconds",
            "Response time of the last successful probe, per service and monitor",
            latency,
        )?;
        let transitions = {
            let map = d
                .counters
                .transitions
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            model
                .services
                .iter()
                .flat_map(|s| {
                    let n = map.get(&s.name).copied().unwrap_or_default();
                    [
                        (vec![("service", s.name.clone()), ("to", "up".into())], n[0]),
                        (
                            vec![("service", s.name.clone()), ("to", "down".into())],
                            n[1],
                        ),
                    ]
                })
                .collect::<Vec<_>>()
        };
        counters(
            e,
            "sextant_service_transitions",
            "State changes of each service since the start",
            transitions,
        )?;
        let probes = {
            let map = d
                .counters
                .probes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            model
                .monitors
                .iter()
                .flat_map(|m| {
                    let n = map.get(&m.name).copied().unwrap_or_default();
                    [
                        (
                            vec![("monitor", m.name.clone()), ("result", "success".into())],
                            n[0],
                        ),
                        (
                            vec![("monitor", m.name.clone()), ("result", "failure".into())],
                            n[1],
                        ),
                        (
                            vec![
                                ("monitor", m.name.clone()),
                                ("result", "local_error".into()),
                            ],
                            n[2],
                        ),
                    ]
                })
                .collect::<Vec<_>>()
        };
        counters(
            e,
            "sextant_monitor_probes",
            "Probes run by this node, by monitor and result",
            probes,
        )?;
        Ok(())
    }
}

impl Collector for MepCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        let d = &self.0;
        let status = d.mep_status.load();
        let e = &mut enc;
        let peers: Vec<_> = status
            .peers
            .iter()
            .filter(|p| p.state != sextant_mep::MepState::Local)
            .collect();
        let site = |p: &sextant_mep::PeerStatus| one("site", p.name.clone());
        gauge(
            e,
            "sextant_mep_running",
            "Metric exchange runs on this node",
            flag(status.running),
        )?;
        gauges(
            e,
            "sextant_mep_peer_up",
            "Metric exchange state of each other site (1 UP, 0 DOWN)",
            peers
                .iter()
                .map(|p| (site(p), flag(p.state == sextant_mep::MepState::Up))),
        )?;
        gauges(
            e,
            "sextant_mep_keepalive_rtt_seconds",
            "Round trip of the last keepalive on the direct link with each site",
            peers
                .iter()
                .filter_map(|p| Some((site(p), p.link_rtt?.as_secs_f64()))),
        )?;
        counters(
            e,
            "sextant_mep_keepalives_sent",
            "Keepalives sent to each site",
            peers.iter().map(|p| (site(p), p.keepalives_sent)),
        )?;
        counters(
            e,
            "sextant_mep_keepalives_lost",
            "Keepalives to each site whose echo never came",
            peers.iter().map(|p| (site(p), p.keepalives_lost)),
        )?;
        counters(
            e,
            "sextant_mep_messages",
            "Metric exchange messages (not keepalives) each way, by site",
            peers.iter().flat_map(|p| {
                [
                    (
                        vec![("site", p.name.clone()), ("direction", "sent".into())],
                        p.messages_sent,
                    ),
                    (
                        vec![("site", p.name.clone()), ("direction", "received".into())],
                        p.messages_received,
                    ),
                ]
            }),
        )?;
        counters(
            e,
            "sextant_mep_bytes",
            "Bytes written to and read from each site's metric exchange connections (keepalives included)",
            peers.iter().flat_map(|p| {
                [
                    (
                        vec![("site", p.name.clone()), ("direction", "sent".into())],
                        p.bytes_sent,
                    ),
                    (
                        vec![("site", p.name.clone()), ("direction", "received".into())],
                        p.bytes_received,
                    ),
                ]
            }),
        )?;
        counters(
            e,
            "sextant_mep_sessions",
            "Metric exchange sessions with each site that came up (every one after the first is a reconnect)",
            peers.iter().map(|p| (site(p), p.sessions_up)),
        )?;
        let c = d.mep_counters.view();
        counters(
            e,
            "sextant_mep_events",
            "Metric exchange events on this node (peer_up counts links coming up, reconnects included)",
            [
                ("peer_up", c.peer_up),
                ("peer_down", c.peer_down),
                ("adopted", c.adopted),
                ("released", c.released),
                ("adoption_refused", c.adoption_refused),
                ("parent_changed", c.parent_changed),
                ("auth_failed", c.auth_failed),
                ("bad_frame", c.bad_frames),
                ("refused_connection", c.refused_connections),
            ]
            .map(|(ev, n)| (one("event", ev), n)),
        )?;
        Ok(())
    }
}

/// Config sync among parents: nothing on a node that syncs with no one.
impl Collector for ConfigSyncCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        let status = self.0.config_sync.status();
        let Some(st) = status.as_ref().as_ref().filter(|s| !s.peers.is_empty()) else {
            return Ok(());
        };
        let e = &mut enc;
        gauge(
            e,
            "sextant_config_sync_incarnation",
            "The incarnation of the shared configuration this node runs",
            st.version.incarnation as f64,
        )?;
        gauge(
            e,
            "sextant_config_sync_automatic",
            "1 when automatic config sync is enabled on this node",
            flag(st.automatic),
        )?;
        let site = |p: &sextant_config_sync::PeerStatus| one("site", p.site.clone());
        gauges(
            e,
            "sextant_config_sync_peer_in_sync",
            "1 when the peer parent runs the same shared configuration as this node",
            st.peers.iter().map(|p| {
                (
                    site(p),
                    flag(p.state == sextant_config_sync::PeerState::InSync),
                )
            }),
        )?;
        gauges(
            e,
            "sextant_config_sync_peer_state",
            "Where each peer parent stands: 1 for its current state, 0 for the others",
            st.peers.iter().flat_map(|p| {
                sextant_config_sync::PeerState::ALL.map(|s| {
                    (
                        vec![("site", p.site.clone()), ("state", s.as_str().to_string())],
                        flag(p.state == s),
                    )
                })
            }),
        )?;
        gauges(
            e,
            "sextant_config_sync_peer_incarnation",
            "The incarnation each peer parent last said it runs",
            st.peers
                .iter()
                .filter_map(|p| p.version.as_ref().map(|v| (site(p), v.incarnation as f64))),
        )?;
        counters(
            e,
            "sextant_config_sync_bytes",
            "Bytes of config sync messages to and from each peer parent (frame headers included)",
            st.peers.iter().flat_map(|p| {
                [
                    (
                        vec![("site", p.site.clone()), ("direction", "sent".into())],
                        p.counters.bytes_sent,
                    ),
                    (
                        vec![("site", p.site.clone()), ("direction", "received".into())],
                        p.counters.bytes_received,
                    ),
                ]
            }),
        )?;
        counters(
            e,
            "sextant_config_sync_transfers",
            "Transfers of this node's configuration to each peer parent, as a line delta or as the whole text",
            st.peers.iter().flat_map(|p| {
                [
                    (
                        vec![("site", p.site.clone()), ("kind", "delta".into())],
                        p.counters.deltas_sent,
                    ),
                    (
                        vec![("site", p.site.clone()), ("kind", "full".into())],
                        p.counters.fulls_sent,
                    ),
                ]
            }),
        )?;
        counters(
            e,
            "sextant_config_sync_results",
            "What each peer parent did with this node's transfers",
            st.peers.iter().flat_map(|p| {
                [
                    ("applied", p.counters.applied),
                    ("rejected", p.counters.rejected),
                    ("refused", p.counters.refused),
                ]
                .map(|(r, n)| (vec![("site", p.site.clone()), ("result", r.to_string())], n))
            }),
        )?;
        counters(
            e,
            "sextant_config_sync_received",
            "Configurations received from each peer parent and applied here",
            st.peers
                .iter()
                .map(|p| (site(p), p.counters.received_applied)),
        )?;
        counter(
            e,
            "sextant_config_sync_lost_changes",
            "Changes made here that lost to another parent's newer one",
            st.lost_changes,
        )?;
        Ok(())
    }
}

impl Collector for RttCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        let d = &self.0;
        let snap = d.dns.snapshot.load();
        let table = snap.rtt();
        let stats = table.stats();
        let prober = d.ldns.prober.lock().map(|c| *c).unwrap_or_default();
        let e = &mut enc;
        gauge(
            e,
            "sextant_ldns_entries",
            "LDNS groups in the RTT table",
            table.len() as f64,
        )?;
        counters(
            e,
            "sextant_ldns_table_events",
            "RTT table entries created, refused by the creation rate limit, evicted at the size bound, expired unqueried",
            [
                ("created", stats.created),
                ("rate_limited", stats.rate_limited),
                ("evicted", stats.evicted),
                ("expired", stats.expired),
            ]
            .map(|(ev, n)| (one("event", ev), n)),
        )?;
        counters(
            e,
            "sextant_ldns_probes",
            "LDNS probes by result (sent, failed, held back by the probe rate limit)",
            [
                ("sent", prober.probes_sent),
                ("failed", prober.failures),
                ("rate_limited", prober.rate_limited),
            ]
            .map(|(r, n)| (one("result", r), n)),
        )?;
        Ok(())
    }
}

impl Collector for DatacenterCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        use sextant_core::RecordStatus;
        use sextant_core::dc_answer::record_status;
        let d = &self.0;
        let snap = d.dns.snapshot.load();
        let model = snap.model();
        let e = &mut enc;
        let statuses = [
            RecordStatus::Ok,
            RecordStatus::PartiallyOk,
            RecordStatus::NoHealthyRecords,
            RecordStatus::FailSafe,
        ];
        gauges(
            e,
            "sextant_dc_record_status",
            "Each datacenter-mode record's status (1 for the current one)",
            model.dc_records.iter_enumerated().flat_map(|(r, rec)| {
                let now = record_status(&snap, r);
                statuses.map(|s| {
                    (
                        vec![
                            ("record", rec.name.clone()),
                            ("status", s.describe().to_string()),
                        ],
                        flag(s == now),
                    )
                })
            }),
        )?;
        let site = |id| one("site", model.site(id).name.clone());
        gauges(
            e,
            "sextant_site_reachable",
            "Each site as this node sees it (1 reachable)",
            model
                .sites
                .iter_enumerated()
                .map(|(id, _)| (site(id), flag(snap.site_reachable(id)))),
        )?;
        let figures: Vec<_> = model
            .sites
            .iter_enumerated()
            .map(|(id, _)| (id, snap.site_figures(id)))
            .collect();
        gauges(
            e,
            "sextant_site_cpu_percent",
            "Each site's CPU figure (datacenter mode)",
            figures
                .iter()
                .filter_map(|(id, f)| Some((site(*id), f.as_ref()?.cpu_percent?))),
        )?;
        gauges(
            e,
            "sextant_site_memory_percent",
            "Each site's memory figure (datacenter mode)",
            figures
                .iter()
                .filter_map(|(id, f)| Some((site(*id), f.as_ref()?.memory_percent?))),
        )?;
        gauges(
            e,
            "sextant_site_bandwidth_bytes_per_second",
            "Each site's bandwidth figure (datacenter mode)",
            figures
                .iter()
                .filter_map(|(id, f)| Some((site(*id), f.as_ref()?.bandwidth_bytes_ps?))),
        )?;
        Ok(())
    }
}

impl Collector for VrrpCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        let vrrp = self.0.vrrp.api();
        let e = &mut enc;
        let id = |v: &sextant_api::VrrpVrid| {
            vec![
                ("vrid", v.vrid.to_string()),
                ("family", v.family.clone()),
                ("interface", v.interface.clone()),
            ]
        };
        gauges(
            e,
            "sextant_vrrp_state",
            "Each virtual router's state (1 for the current one)",
            vrrp.vrids.iter().flat_map(|v| {
                ["INITIALIZE", "BACKUP", "MASTER"].map(|s| {
                    let mut labels = id(v);
                    labels.push(("state", s.to_string()));
                    (labels, flag(v.state == s))
                })
            }),
        )?;
        gauges(
            e,
            "sextant_vrrp_effective_priority",
            "Each virtual router's priority after tracking",
            vrrp.vrids
                .iter()
                .map(|v| (id(v), f64::from(v.effective_priority))),
        )?;
        counters(
            e,
            "sextant_vrrp_transitions",
            "State changes of each virtual router since VRRP started",
            vrrp.vrids.iter().map(|v| (id(v), v.transitions_total)),
        )?;
        counters(
            e,
            "sextant_vrrp_adverts_received",
            "Advertisements each virtual router received",
            vrrp.vrids.iter().map(|v| (id(v), v.adverts_received)),
        )?;
        counters(
            e,
            "sextant_vrrp_dropped",
            "Received VRRP packets dropped before a virtual router, by interface and reason",
            vrrp.dropped.iter().map(|x| {
                (
                    vec![
                        ("interface", x.interface.clone()),
                        ("reason", x.reason.clone()),
                    ],
                    x.count,
                )
            }),
        )?;
        Ok(())
    }
}

impl Collector for ProcessCollector {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        let d = &self.0;
        let snap = d.dns.snapshot.load();
        let e = &mut enc;
        gauges(
            e,
            "sextant_build_info",
            "Always 1; the labels say which build runs",
            [(
                vec![
                    ("version", env!("CARGO_PKG_VERSION").to_string()),
                    ("commit", env!("SEXTANT_COMMIT").to_string()),
                    ("build_date", env!("SEXTANT_BUILD_DATE").to_string()),
                ],
                1.0,
            )],
        )?;
        gauge(
            e,
            "sextant_config_generation",
            "Generation of the running configuration (bumps on every successful reload)",
            snap.generation() as f64,
        )?;
        counters(
            e,
            "sextant_config_reloads",
            "Configuration reloads by result",
            [
                (
                    one("result", "success"),
                    d.counters.reloads_ok.load(Ordering::Relaxed),
                ),
                (
                    one("result", "failure"),
                    d.counters.reloads_failed.load(Ordering::Relaxed),
                ),
            ],
        )?;
        let start = d
            .clock
            .wall(std::time::Duration::ZERO)
            .duration_since(std::time::UNIX_EPOCH)
            .map(|t| t.as_secs_f64())
            .unwrap_or(0.0);
        gauge(
            e,
            "sextant_start_time_seconds",
            "When the process started, in seconds since the Unix epoch",
            start,
        )?;
        Ok(())
    }
}
