//! Between the metric exchange driver and the state engine: the driver's
//! events become engine events, the engine's reports and shared sessions
//! become wire messages. Every MEP event is logged and counted here; what
//! they mean for the site is decided by the engine.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sextant_core::{LdnsProbe, PathFigures, ServiceMetrics};
use sextant_mep::message::{
    LdnsRtt, LdnsRttEntry, LoadMetrics, ServiceEntry, ServiceState, SessionEntry, Sessions,
};
use sextant_mep::{LocalReport, MepEvent, Message};
use sextant_state::{Event, PeerServices, ReportedService, SharedRtt, SharedSession};
use tracing::{info, warn};

use sextant_core::log_throttle::LogThrottle;

/// Totals since start, for `/v1/status`.
#[derive(Debug, Default)]
pub struct MepCounters {
    pub peer_up: AtomicU64,
    pub peer_down: AtomicU64,
    pub adopted: AtomicU64,
    pub released: AtomicU64,
    pub adoption_refused: AtomicU64,
    pub parent_changed: AtomicU64,
    pub auth_failed: AtomicU64,
    pub bad_frames: AtomicU64,
    pub refused_connections: AtomicU64,
    /// Refusals, failed handshakes and bad frames are anyone's to cause:
    /// logged at most once per kind per period.
    pub log_auth_failed: LogThrottle,
    pub log_bad_frame: LogThrottle,
    pub log_refused: LogThrottle,
}

impl MepCounters {
    pub fn view(&self) -> sextant_api::MepCounters {
        let c = |a: &AtomicU64| a.load(Ordering::Relaxed);
        sextant_api::MepCounters {
            peer_up: c(&self.peer_up),
            peer_down: c(&self.peer_down),
            adopted: c(&self.adopted),
            released: c(&self.released),
            adoption_refused: c(&self.adoption_refused),
            parent_changed: c(&self.parent_changed),
            auth_failed: c(&self.auth_failed),
            bad_frames: c(&self.bad_frames),
            refused_connections: c(&self.refused_connections),
        }
    }
}

fn bump(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

/// Logs and counts one driver event and turns it into the state engine's
/// event, if it is one the engine decides on.
pub fn translate(event: MepEvent, counters: &MepCounters, now: Duration) -> Option<Event> {
    match event {
        MepEvent::PeerUp { site, via } => {
            bump(&counters.peer_up);
            match &via {
                Some(parent) => info!(%site, via = %parent, "metric exchange UP (relayed)"),
                None => info!(%site, "metric exchange UP"),
            }
            Some(Event::PeerUp { site, via })
        }
        MepEvent::PeerDown { site, reason } => {
            bump(&counters.peer_down);
            warn!(%site, %reason, "metric exchange DOWN");
            Some(Event::PeerDown { site, reason })
        }
        MepEvent::Services {
            from_site,
            via,
            full,
            entries,
            removed,
        } => Some(Event::PeerServices(PeerServices {
            site: from_site,
            via,
            full,
            entries: entries.into_iter().map(entry_to_state).collect(),
            removed: removed.into_iter().map(|k| (k.ip, k.port)).collect(),
        })),
        MepEvent::Sessions { from_site, entries } => Some(Event::PeerSessions {
            site: from_site,
            entries: entries.iter().filter_map(session_from_wire).collect(),
        }),
        MepEvent::AuthFailed { peer, site, reason } => {
            bump(&counters.auth_failed);
            if let Some(held) = counters.log_auth_failed.admit(now) {
                warn!(%peer, %site, %reason, similar_lines_held_back = held, "metric exchange authentication failed");
            }
            None
        }
        MepEvent::BadFrame { peer, site, reason } => {
            bump(&counters.bad_frames);
            if let Some(held) = counters.log_bad_frame.admit(now) {
                warn!(%peer, %site, %reason, similar_lines_held_back = held, "metric exchange session closed: bad frame");
            }
            None
        }
        MepEvent::Refused { peer, reason } => {
            bump(&counters.refused_connections);
            if let Some(held) = counters.log_refused.admit(now) {
                warn!(%peer, %reason, similar_lines_held_back = held, "metric exchange connection refused");
            }
            None
        }
        MepEvent::ParentChanged { new_parent } => {
            bump(&counters.parent_changed);
            match new_parent {
                Some(p) => info!(parent = %p, "this child site's parent is now {p}"),
                None => warn!("this child site has no parent connected"),
            }
            None
        }
        MepEvent::Adopted { child, for_parent } => {
            bump(&counters.adopted);
            info!(%child, %for_parent, "took over child site {child} as backup parent for {for_parent}");
            None
        }
        MepEvent::Released { child, reason } => {
            bump(&counters.released);
            info!(%child, %reason, "adopted child site {child} released");
            None
        }
        MepEvent::AdoptionRefused {
            child,
            for_parent,
            reason,
        } => {
            bump(&counters.adoption_refused);
            info!(%child, %for_parent, %reason, "child site refused the takeover");
            None
        }
        MepEvent::LdnsRtt { from_site, entries } => Some(Event::PeerRtt {
            site: from_site,
            entries: entries.iter().filter_map(rtt_from_wire).collect(),
        }),
        MepEvent::SiteMetrics {
            from_site, metrics, ..
        } => Some(Event::PeerSiteFigures {
            site: from_site,
            figures: site_from_wire(&metrics),
        }),
        // Config sync is not the state engine's: its machine takes these.
        MepEvent::ConfigSync { .. } => None,
        MepEvent::ConfigSyncRefused { from_site, reason } => {
            warn!(site = %from_site, %reason, "config sync: configuration update refused");
            None
        }
    }
}

fn entry_to_state(e: ServiceEntry) -> ReportedService {
    ReportedService {
        metrics: to_core(&e.metrics),
        up: e.state == ServiceState::Up,
        name: e.service.into(),
        ip: e.ip,
        port: e.port,
        public_ip: e.public_ip,
        public_port: e.public_port,
    }
}

/// The engine's report as the driver sends it.
pub fn report_to_wire(r: &sextant_state::LocalReport) -> LocalReport {
    LocalReport {
        services: r
            .services
            .iter()
            .map(|s| ServiceEntry {
                service: s.name.to_string(),
                ip: s.ip,
                port: s.port,
                public_ip: s.public_ip,
                public_port: s.public_port,
                state: if s.up {
                    ServiceState::Up
                } else {
                    ServiceState::Down
                },
                metrics: to_wire(&s.metrics),
            })
            .collect(),
        site: sextant_mep::message::SiteMetrics {
            cpu_percent: r.site.cpu_percent,
            memory_percent: r.site.memory_percent,
            // Bits per second on the wire.
            bandwidth_bps: r.site.bandwidth_bytes_ps.map(|b| (b * 8.0) as u64),
            ..Default::default()
        },
    }
}

/// Persistence entries as parents exchange them.
pub fn sessions_to_wire(list: &[SharedSession]) -> Message {
    Message::Sessions(Sessions {
        entries: list
            .iter()
            .map(|s| SessionEntry {
                vserver: s.vserver.clone(),
                client: format!("{}/{}", s.key, s.prefix),
                service: s.service.clone(),
                expires_in_s: s.remaining.as_secs().max(1),
            })
            .collect(),
    })
}

/// This site's RTTs for the other parents; groups as prefixes of the
/// LDNS masks (which are the same across the GSLB domain).
pub fn rtt_to_wire(list: &[SharedRtt], v4_mask: u8, v6_mask: u8) -> Message {
    Message::LdnsRtt(LdnsRtt {
        entries: list
            .iter()
            .map(|r| LdnsRttEntry {
                prefix: format!(
                    "{}/{}",
                    r.group,
                    if r.group.is_ipv4() { v4_mask } else { v6_mask }
                ),
                rtt_us: r
                    .rtt
                    .map(|d| d.as_micros().min(u128::from(u64::MAX)) as u64),
                probe: r.kind.map(|k| probe_word(k).to_string()),
                hops: r.path.map(|p| u32::from(p.hops)),
                ttl: r.path.map(|p| u32::from(p.ttl)),
                loss_permille: r.path.map(|p| u32::from(p.loss_permille)),
                mos_centi: r.path.map(|p| u32::from(p.mos_centi)),
                queried: r.queried,
                removed: r.removed,
            })
            .collect(),
    })
}

fn probe_word(kind: LdnsProbe) -> &'static str {
    match kind {
        LdnsProbe::Ping => "ping",
        LdnsProbe::DnsUdp => "dns",
        LdnsProbe::DnsTcp => "tcp",
    }
}

/// One received RTT entry; malformed ones are dropped (an unknown probe
/// word only loses the kind, nonsense path figures only the path).
fn rtt_from_wire(e: &LdnsRttEntry) -> Option<SharedRtt> {
    let addr = e
        .prefix
        .split_once('/')
        .map_or(e.prefix.as_str(), |(a, _)| a);
    Some(SharedRtt {
        group: addr.parse().ok()?,
        rtt: e.rtt_us.map(Duration::from_micros),
        kind: e.probe.as_deref().and_then(|p| match p {
            "ping" => Some(LdnsProbe::Ping),
            "dns" => Some(LdnsProbe::DnsUdp),
            "tcp" => Some(LdnsProbe::DnsTcp),
            _ => None,
        }),
        path: path_from_wire(e),
        queried: e.queried,
        removed: e.removed,
    })
}

/// The path figures of a received entry: all four, each in its range (hops
/// and TTL 0 to 255, loss 0 to 1000 ‰, MOS × 100 100 to 450), with an RTT;
/// anything else is no path (the RTT still counts).
fn path_from_wire(e: &LdnsRttEntry) -> Option<PathFigures> {
    e.rtt_us?;
    let path = PathFigures {
        hops: u8::try_from(e.hops?).ok()?,
        ttl: u8::try_from(e.ttl?).ok()?,
        loss_permille: u16::try_from(e.loss_permille?).ok()?,
        mos_centi: u16::try_from(e.mos_centi?).ok()?,
    };
    (path.loss_permille <= 1000 && (100..=450).contains(&path.mos_centi)).then_some(path)
}

/// One received persistence entry; malformed ones are dropped.
fn session_from_wire(e: &SessionEntry) -> Option<SharedSession> {
    let (addr, prefix) = e.client.split_once('/')?;
    Some(SharedSession {
        vserver: e.vserver.clone(),
        key: addr.parse().ok()?,
        prefix: prefix.parse().ok()?,
        service: e.service.clone(),
        // A peer cannot make an entry outlive a day here.
        remaining: std::time::Duration::from_secs(e.expires_in_s.min(86_400)),
    })
}

/// A site's figures as the wire carries them, to the engine's (bandwidth in
/// bytes per second; non-finite or negative figures are dropped).
pub fn site_from_wire(m: &sextant_mep::message::SiteMetrics) -> sextant_state::SiteFigures {
    let sane = |v: Option<f64>| v.filter(|v| v.is_finite() && *v >= 0.0);
    sextant_state::SiteFigures {
        cpu_percent: sane(m.cpu_percent),
        memory_percent: sane(m.memory_percent),
        bandwidth_bytes_ps: m.bandwidth_bps.map(|b| b as f64 / 8.0),
    }
}

/// Wire figures to the core's.
pub fn to_core(m: &LoadMetrics) -> ServiceMetrics {
    ServiceMetrics {
        connections: m.connections,
        response_time_us: m
            .response_time_ms
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| (ms * 1000.0) as u64),
        bandwidth_bps: m.bandwidth_bps,
        packets_ps: m.packets_ps,
        custom_load: m.custom_load.map(|l| l.min(u64::from(u32::MAX)) as u32),
        cpu_percent: m.cpu_percent.map(|p| p.min(100)),
        memory_percent: m.memory_percent.map(|p| p.min(100)),
        requests_ps: m.requests_ps,
        new_sessions_ps: m.new_sessions_ps,
        healthy_backends: m.healthy_backends,
    }
}

/// The core's figures to the wire's.
pub fn to_wire(m: &ServiceMetrics) -> LoadMetrics {
    LoadMetrics {
        connections: m.connections,
        response_time_ms: m.response_time_us.map(|us| us as f64 / 1000.0),
        bandwidth_bps: m.bandwidth_bps,
        packets_ps: m.packets_ps,
        custom_load: m.custom_load.map(u64::from),
        cpu_percent: m.cpu_percent,
        memory_percent: m.memory_percent,
        requests_ps: m.requests_ps,
        new_sessions_ps: m.new_sessions_ps,
        healthy_backends: m.healthy_backends,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_round_trip() {
        let m = ServiceMetrics {
            connections: Some(12),
            response_time_us: Some(1500),
            bandwidth_bps: None,
            packets_ps: Some(9),
            custom_load: Some(40),
            cpu_percent: Some(55),
            memory_percent: None,
            requests_ps: Some(1200),
            new_sessions_ps: Some(30),
            healthy_backends: Some(4),
        };
        assert_eq!(to_core(&to_wire(&m)), m);
        let hostile = LoadMetrics {
            response_time_ms: Some(f64::NAN),
            custom_load: Some(u64::MAX),
            ..Default::default()
        };
        let c = to_core(&hostile);
        assert_eq!(c.response_time_us, None);
        assert_eq!(c.custom_load, Some(u32::MAX));
    }

    #[test]
    fn sessions_round_trip_and_bad_ones_are_dropped() {
        let s = SharedSession {
            vserver: "vs".into(),
            key: "198.51.100.0".parse().unwrap(),
            prefix: 24,
            service: "a".into(),
            remaining: std::time::Duration::from_secs(30),
        };
        let Message::Sessions(wire) = sessions_to_wire(std::slice::from_ref(&s)) else {
            panic!("not a Sessions message")
        };
        assert_eq!(session_from_wire(&wire.entries[0]), Some(s));
        let bad = SessionEntry {
            vserver: "vs".into(),
            client: "nonsense".into(),
            service: "a".into(),
            expires_in_s: u64::MAX,
        };
        assert_eq!(session_from_wire(&bad), None);
    }

    #[test]
    fn rtt_path_figures_round_trip_and_nonsense_is_no_path() {
        let path = PathFigures {
            hops: 7,
            ttl: 57,
            loss_permille: 100,
            mos_centi: 412,
        };
        let r = SharedRtt {
            group: "198.51.100.0".parse().unwrap(),
            rtt: Some(Duration::from_micros(20_500)),
            kind: Some(LdnsProbe::DnsUdp),
            path: Some(path),
            queried: true,
            removed: false,
        };
        let Message::LdnsRtt(wire) = rtt_to_wire(std::slice::from_ref(&r), 24, 56) else {
            panic!("not an LdnsRtt message")
        };
        let e = &wire.entries[0];
        assert_eq!(e.prefix, "198.51.100.0/24");
        assert_eq!(
            (e.hops, e.ttl, e.loss_permille, e.mos_centi),
            (Some(7), Some(57), Some(100), Some(412))
        );
        assert_eq!(rtt_from_wire(e), Some(r));
        // Through JSON, as a peer reads it.
        let json = serde_json::to_vec(&wire).unwrap();
        let back: LdnsRtt = serde_json::from_slice(&json).unwrap();
        assert_eq!(rtt_from_wire(&back.entries[0]), Some(r));
        // Without a path: no figures on the wire, none read.
        let bare = SharedRtt { path: None, ..r };
        let Message::LdnsRtt(wire) = rtt_to_wire(&[bare], 24, 56) else {
            panic!("not an LdnsRtt message")
        };
        assert_eq!(wire.entries[0].hops, None);
        assert_eq!(rtt_from_wire(&wire.entries[0]), Some(bare));

        // Nonsense: the path is dropped, the RTT and the rest stand.
        let good = e.clone();
        let wild: [fn(&mut LdnsRttEntry); 9] = [
            |e| e.loss_permille = Some(1001),
            |e| e.mos_centi = Some(99),
            |e| e.mos_centi = Some(451),
            |e| e.mos_centi = Some(0),
            |e| e.hops = Some(256),
            |e| e.ttl = Some(u32::MAX),
            |e| e.ttl = None, // all four or none
            |e| e.mos_centi = None,
            |e| e.rtt_us = None, // a path without an RTT means nothing
        ];
        for (i, spoil) in wild.iter().enumerate() {
            let mut e = good.clone();
            spoil(&mut e);
            let got = rtt_from_wire(&e).expect("the entry itself is fine");
            assert_eq!(got.path, None, "case {i}: {e:?}");
            assert_eq!(got.rtt, e.rtt_us.map(Duration::from_micros), "case {i}");
            assert!(got.queried);
        }
        // The edges of the ranges are fine.
        let mut edge = good.clone();
        edge.loss_permille = Some(1000);
        edge.mos_centi = Some(100);
        edge.hops = Some(255);
        edge.ttl = Some(0);
        assert!(rtt_from_wire(&edge).and_then(|r| r.path).is_some());
        edge.mos_centi = Some(450);
        assert!(rtt_from_wire(&edge).and_then(|r| r.path).is_some());
    }
}
