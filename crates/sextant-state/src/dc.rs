//! Datacenter mode (seed 002): what is known of each datacenter, and the
//! rankings of the records' datacenters, worked out once per access period
//! (`-dcAccessPeriod`) and published for the DNS path to read.
//!
//! Figures arrive all the time (this node samples its own; peers send
//! theirs in their metric exchange reports; the path loss to each
//! datacenter comes from probe bursts this book asks for), but a ranking
//! only changes when an access period ends, so that answers do not flap
//! with every report. Which sites
//! this node reaches (for `-hc SITE`) is published at once, on every peer
//! up or down.

use std::sync::Arc;
use std::time::Duration;

use sextant_core::dc::{DcFacts, DcOrder, ServiceFacts, figure, rank_record};
use sextant_core::{
    DcCriterion, DcOrders, DcRecord, DcRecordId, DcSelection, IdVec, Model, ServiceId,
    ServiceMetrics, SiteId,
};

use crate::event::SiteFigures;

/// Where to send path-loss probe bursts, and from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LossTargets {
    /// This node's own site IP.
    pub source: Option<std::net::IpAddr>,
    /// Each site to measure: its name and site IP.
    pub targets: Vec<(String, std::net::IpAddr)>,
}

/// What the book needs of the engine at a ranking.
pub(crate) struct Ctx<'a> {
    pub model: &'a Model,
    pub own: SiteFigures,
    pub peers_up: &'a IdVec<SiteId, bool>,
    pub service_up: &'a dyn Fn(ServiceId) -> bool,
    pub service_metrics: &'a IdVec<ServiceId, ServiceMetrics>,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct DcBook {
    /// Per site: its latest reported figures.
    reported: IdVec<SiteId, Option<SiteFigures>>,
    /// Per site: the packet loss of the latest probe burst to it, percent.
    loss: IdVec<SiteId, Option<f64>>,
    /// A ranking at the end of an access period asked for new bursts, not
    /// yet handed to the edge.
    loss_due: bool,
    /// When the next ranking is due; `None` before the first.
    next_rank: Option<Duration>,
    /// The end of the first access period after a start or reload: until
    /// then a record ranked without one of its datacenters' figures is
    /// ranked again as soon as they are all known, not a period later.
    settle_until: Option<Duration>,
    /// Per record: its last ranking lacked a datacenter's figure.
    incomplete: IdVec<DcRecordId, bool>,
    orders: Arc<DcOrders>,
    /// The published orders are out of date.
    pub dirty: bool,
}

impl DcBook {
    /// A book for `model`, carrying figures over by site name from `old`.
    pub fn new(model: &Model, old: Option<(&DcBook, &Model)>) -> DcBook {
        let mut book = DcBook {
            reported: model.sites.iter().map(|_| None).collect(),
            loss: model.sites.iter().map(|_| None).collect(),
            loss_due: false,
            next_rank: None,
            settle_until: None,
            incomplete: IdVec::new(),
            orders: Arc::default(),
            dirty: true,
        };
        if let Some((old, old_model)) = old {
            for (i, s) in model.sites.iter_enumerated() {
                if let Some(j) = old_model.site_by_name(&s.name) {
                    book.reported[i] = old.reported.get(j).copied().flatten();
                    book.loss[i] = old.loss.get(j).copied().flatten();
                }
            }
        }
        book
    }

    /// Site `site`'s latest reported figures.
    pub fn reported_figures(&self, site: SiteId) -> Option<SiteFigures> {
        self.reported.get(site).copied().flatten()
    }

    pub fn reported(&mut self, site: SiteId, figures: SiteFigures) {
        if let Some(slot) = self.reported.get_mut(site) {
            *slot = Some(figures);
        }
    }

    /// One probe burst to `site`: `lost` of `sent` echo requests got no
    /// reply. Used by the next ranking (or, in the first access period, by
    /// the ranking it completes).
    pub fn path_loss(&mut self, site: SiteId, sent: u32, lost: u32) {
        if sent == 0 {
            return;
        }
        if let Some(slot) = self.loss.get_mut(site) {
            *slot = Some(f64::from(lost.min(sent)) * 100.0 / f64::from(sent));
        }
    }

    /// The datacenters to send a probe burst to now, with this node's own
    /// site IP to send from, when an access period's ranking asked for them:
    /// every other site in a DC Based PACKET_LOSS record. Taken once.
    pub fn take_loss_targets(&mut self, model: &Model) -> Option<LossTargets> {
        if !std::mem::take(&mut self.loss_due) {
            return None;
        }
        let local = model.local_site;
        let mut sites: Vec<SiteId> = model
            .dc_records
            .iter()
            .filter(|r| r.selection == DcSelection::DcBased(DcCriterion::PacketLoss))
            .flat_map(|r| r.groups.iter().map(|g| g.site))
            .filter(|s| Some(*s) != local)
            .collect();
        sites.sort_unstable();
        sites.dedup();
        if sites.is_empty() {
            return None;
        }
        Some(LossTargets {
            source: local.and_then(|l| model.sites.get(l)).map(|s| s.ip),
            targets: sites
                .into_iter()
                .filter_map(|s| model.sites.get(s))
                .map(|s| (s.name.clone(), s.ip))
                .collect(),
        })
    }

    /// A peer came or went: which sites are reachable must be published.
    pub fn reachability_changed(&mut self) {
        self.dirty = true;
    }

    /// When the next ranking is due, if the configuration has records.
    pub fn next_wake(&self, model: &Model) -> Option<Duration> {
        if model.dc_records.is_empty() {
            return None;
        }
        Some(self.next_rank.unwrap_or(Duration::ZERO))
    }

    /// Ranks again when an access period is over (or never was), and, in
    /// the first access period after a start or reload, as soon as a record
    /// ranked without some datacenter's figure has them all (the node's own
    /// figures, its peers' reports, measured loss: whichever came last).
    pub fn tick(&mut self, now: Duration, ctx: &Ctx<'_>) {
        if ctx.model.dc_records.is_empty() {
            return;
        }
        let due = self.next_rank.is_none_or(|t| now >= t);
        let settling = self.settle_until.is_some_and(|t| now < t);
        if due {
            // New bursts for the next ranking: the figure is never older
            // than an access period and a burst.
            self.loss_due = true;
        }
        if due {
            self.rank(now, ctx, false);
        } else if settling && self.completes_a_record(ctx) {
            self.rank(now, ctx, true);
        }
    }

    /// Whether a record whose last ranking lacked a figure has all of its
    /// datacenters' figures now.
    fn completes_a_record(&self, ctx: &Ctx<'_>) -> bool {
        if !self.incomplete.iter().any(|i| *i) {
            return false;
        }
        let facts = self.all_facts(ctx);
        ctx.model
            .dc_records
            .iter()
            .zip(&self.incomplete)
            .filter(|(_, incomplete)| **incomplete)
            .any(|(rec, _)| {
                (0..rec.groups.len()).all(|g| {
                    figure(&rec.selection, &self.group_facts(rec, g, &facts, ctx)).is_some()
                })
            })
    }

    fn all_facts(&self, ctx: &Ctx<'_>) -> IdVec<SiteId, DcFacts> {
        ctx.model
            .sites
            .ids()
            .map(|s| self.site_facts(s, ctx.model.local_site, ctx))
            .collect()
    }

    /// What is known of group `g` of `rec`: its site's facts and, Service
    /// Based, its measured service.
    fn group_facts(
        &self,
        rec: &DcRecord,
        g: usize,
        facts: &IdVec<SiteId, DcFacts>,
        ctx: &Ctx<'_>,
    ) -> DcFacts {
        let group = rec.groups[g];
        let mut f = facts.get(group.site).copied().unwrap_or_default();
        f.service = group.service.map(|s| ServiceFacts {
            up: (ctx.service_up)(s),
            metrics: f
                .reachable
                .then(|| ctx.service_metrics.get(s).copied())
                .flatten(),
        });
        f
    }

    /// Ranks every record now (at a reload too: new records must not wait
    /// a whole access period).
    ///
    /// `completed_only`: an early ranking in the first access period, for
    /// the records that now have every figure; the others keep the order
    /// they had, so no record is ranked by some of its figures only.
    pub fn rank(&mut self, now: Duration, ctx: &Ctx<'_>, completed_only: bool) {
        let model = ctx.model;
        let facts = self.all_facts(ctx);
        let previous = Arc::clone(&self.orders);
        let orders: IdVec<DcRecordId, Option<DcOrder>> = model
            .dc_records
            .iter_enumerated()
            .map(|(i, rec)| {
                let order = rank_record(rec, |g| self.group_facts(rec, g, &facts, ctx), now);
                let complete = order.figures.iter().all(Option::is_some);
                if completed_only && !complete && self.incomplete.get(i).copied().unwrap_or(true) {
                    previous.orders.get(i).cloned().flatten()
                } else {
                    Some(order)
                }
            })
            .collect();
        // Only DC and Service Based rank by figures worked out here.
        self.incomplete = model
            .dc_records
            .iter()
            .zip(&orders)
            .map(|(rec, o)| {
                matches!(
                    rec.selection,
                    DcSelection::DcBased(_) | DcSelection::ServiceBased { .. }
                ) && o
                    .as_ref()
                    .is_none_or(|o| o.figures.iter().any(Option::is_none))
            })
            .collect();
        let period = model.params.dc_access_period.max(Duration::from_millis(1));
        if self.settle_until.is_none() {
            self.settle_until = Some(now + period);
        }
        self.orders = Arc::new(DcOrders {
            orders,
            site_reachable: self.reachable(ctx),
        });
        self.next_rank = Some(now + period);
        self.dirty = true;
    }

    fn reachable(&self, ctx: &Ctx<'_>) -> IdVec<SiteId, bool> {
        ctx.model
            .sites
            .ids()
            .map(|s| {
                Some(s) == ctx.model.local_site || ctx.peers_up.get(s).copied().unwrap_or(false)
            })
            .collect()
    }

    /// The orders to publish, with reachability as of now.
    pub fn publish(&mut self, ctx: &Ctx<'_>) -> Arc<DcOrders> {
        let reachable = self.reachable(ctx);
        if self.orders.site_reachable != reachable {
            self.orders = Arc::new(DcOrders {
                orders: self.orders.orders.clone(),
                site_reachable: reachable,
            });
        }
        self.dirty = false;
        Arc::clone(&self.orders)
    }

    fn site_facts(&self, site: SiteId, local: Option<SiteId>, ctx: &Ctx<'_>) -> DcFacts {
        if Some(site) == local {
            return DcFacts {
                reachable: true,
                cpu_percent: ctx.own.cpu_percent,
                memory_percent: ctx.own.memory_percent,
                bandwidth_bytes_ps: ctx.own.bandwidth_bytes_ps,
                packet_loss_percent: Some(0.0),
                service: None,
            };
        }
        let reachable = ctx.peers_up.get(site).copied().unwrap_or(false);
        let reported = self
            .reported
            .get(site)
            .copied()
            .flatten()
            .filter(|_| reachable)
            .unwrap_or_default();
        DcFacts {
            reachable,
            cpu_percent: reported.cpu_percent,
            memory_percent: reported.memory_percent,
            bandwidth_bytes_ps: reported.bandwidth_bytes_ps,
            // Measured by this node's own probes, so it stands whether or
            // not metric exchange with the site is up.
            packet_loss_percent: self.loss.get(site).copied().flatten(),
            service: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sextant_core::{DcAddress, DcCriterion, DcGroup, DcHealth, DcRecord, DcSelection};
    use sextant_test_support::model::{ModelBuilder, ip};

    /// Sites a (local) and b; a DC Based CPU record over one address each;
    /// access period 1 s.
    fn model() -> Model {
        let mut b = ModelBuilder::new();
        b.add_site("a", ip("10.0.0.1"));
        b.add_site("b", ip("10.0.1.1"));
        b.model.set_local_site(SiteId::new(0));
        let mut m = b.build();
        m.params.dc_access_period = Duration::from_secs(1);
        m.dc_records.push(DcRecord {
            name: "www.example.com".into(),
            ttl: 5,
            selection: DcSelection::DcBased(DcCriterion::Cpu),
            total_dcs: 1,
            balance: sextant_core::Balance::RoundRobin,
            groups: vec![
                DcGroup {
                    site: SiteId::new(0),
                    service: None,
                },
                DcGroup {
                    site: SiteId::new(1),
                    service: None,
                },
            ],
            addresses: (0..2)
                .map(|g| DcAddress {
                    group: g,
                    ip: ip(&format!("192.0.2.{}", g + 1)),
                    weight: 1,
                    health: DcHealth::Always,
                })
                .collect(),
            fail_safe: vec![],
        });
        m
    }

    fn cpu(v: f64) -> SiteFigures {
        SiteFigures {
            cpu_percent: Some(v),
            ..SiteFigures::default()
        }
    }

    fn all_up(_: ServiceId) -> bool {
        true
    }

    const NO_METRICS: &IdVec<ServiceId, ServiceMetrics> = &IdVec::new();

    /// What the engine hands the book: every service UP, no service figures.
    fn ctx<'a>(model: &'a Model, own: SiteFigures, peers_up: &'a IdVec<SiteId, bool>) -> Ctx<'a> {
        Ctx {
            model,
            own,
            peers_up,
            service_up: &all_up,
            service_metrics: NO_METRICS,
        }
    }

    /// The published figures of the first record.
    fn figures(book: &mut DcBook, ctx: &Ctx<'_>) -> Vec<Option<f64>> {
        let o = book.publish(ctx);
        o.orders[DcRecordId::new(0)]
            .as_ref()
            .expect("ranked")
            .figures
            .clone()
    }

    fn ranked(book: &mut DcBook, ctx: &Ctx<'_>) -> (Vec<u8>, Vec<bool>) {
        let o = book.publish(ctx);
        let order = o.orders[DcRecordId::new(0)]
            .as_ref()
            .expect("ranked")
            .groups
            .clone();
        (order, o.site_reachable.iter().copied().collect())
    }

    /// Issue 24's reproduction in replay: neither site's CPU is known at
    /// start; the node's own figure (POSTed or sampled) arrives, then the
    /// peer's report. Ranked as soon as both are known, well within the
    /// first access period, and not before.
    #[test]
    fn the_first_ranking_with_every_figure_comes_as_soon_as_they_are_known() {
        let mut m = model();
        m.params.dc_access_period = Duration::from_secs(25);
        let s = |secs: f64| Duration::from_secs_f64(secs);
        let peers_up: IdVec<SiteId, bool> = vec![false, true].into();
        let mut book = DcBook::new(&m, None);
        let mut own = SiteFigures::default();
        book.tick(s(0.0), &ctx(&m, own, &peers_up));
        assert_eq!(
            figures(&mut book, &ctx(&m, own, &peers_up)),
            vec![None, None]
        );
        // The node's own figure alone: b's is still missing, no ranking.
        own = cpu(50.0);
        book.tick(s(1.0), &ctx(&m, own, &peers_up));
        assert_eq!(
            figures(&mut book, &ctx(&m, own, &peers_up)),
            vec![None, None]
        );
        // b's report completes it: ranked at once, b (10) first.
        book.reported(SiteId::new(1), cpu(10.0));
        book.tick(s(1.2), &ctx(&m, own, &peers_up));
        assert_eq!(
            figures(&mut book, &ctx(&m, own, &peers_up)),
            vec![Some(50.0), Some(10.0)]
        );
        assert_eq!(ranked(&mut book, &ctx(&m, own, &peers_up)).0, vec![1, 0]);
        // Then every access period: a change waits for it.
        own = cpu(5.0);
        book.tick(s(20.0), &ctx(&m, own, &peers_up));
        assert_eq!(ranked(&mut book, &ctx(&m, own, &peers_up)).0, vec![1, 0]);
        book.tick(s(26.3), &ctx(&m, own, &peers_up));
        assert_eq!(ranked(&mut book, &ctx(&m, own, &peers_up)).0, vec![0, 1]);
    }

    /// After the first access period a figure that appears waits for the
    /// next period, as every other change does.
    #[test]
    fn after_the_first_period_missing_figures_wait_for_the_next() {
        let m = model();
        let s = |secs: f64| Duration::from_secs_f64(secs);
        let peers_up: IdVec<SiteId, bool> = vec![false, true].into();
        let mut book = DcBook::new(&m, None);
        let own = cpu(50.0);
        book.tick(s(0.0), &ctx(&m, own, &peers_up));
        book.tick(s(1.0), &ctx(&m, own, &peers_up));
        assert_eq!(ranked(&mut book, &ctx(&m, own, &peers_up)).0, vec![0, 1]);
        book.reported(SiteId::new(1), cpu(10.0));
        book.tick(s(1.5), &ctx(&m, own, &peers_up));
        assert_eq!(
            ranked(&mut book, &ctx(&m, own, &peers_up)).0,
            vec![0, 1],
            "waits"
        );
        book.tick(s(2.0), &ctx(&m, own, &peers_up));
        assert_eq!(ranked(&mut book, &ctx(&m, own, &peers_up)).0, vec![1, 0]);
    }

    #[test]
    fn rankings_change_only_when_an_access_period_ends_or_every_figure_is_first_known() {
        let m = model();
        let s = |secs: f64| Duration::from_secs_f64(secs);
        let mut peers_up: IdVec<SiteId, bool> = vec![false, true].into();
        let mut book = DcBook::new(&m, None);
        let own = cpu(50.0);
        book.tick(s(0.0), &ctx(&m, own, &peers_up));
        // b's CPU unknown: a (50) first, b last.
        assert_eq!(ranked(&mut book, &ctx(&m, own, &peers_up)).0, vec![0, 1]);
        // b's first figures: ranked by them at once.
        book.reported(SiteId::new(1), cpu(10.0));
        book.tick(s(0.1), &ctx(&m, own, &peers_up));
        assert_eq!(ranked(&mut book, &ctx(&m, own, &peers_up)).0, vec![1, 0]);
        // A change within the access period waits for its end.
        book.reported(SiteId::new(1), cpu(90.0));
        book.tick(s(0.5), &ctx(&m, own, &peers_up));
        assert_eq!(ranked(&mut book, &ctx(&m, own, &peers_up)).0, vec![1, 0]);
        book.tick(s(1.1), &ctx(&m, own, &peers_up));
        assert_eq!(ranked(&mut book, &ctx(&m, own, &peers_up)).0, vec![0, 1]);
        // Reachability is published at once, the ranking keeps its period.
        peers_up[SiteId::new(1)] = false;
        book.reachability_changed();
        assert!(book.dirty);
        assert_eq!(
            ranked(&mut book, &ctx(&m, own, &peers_up)),
            (vec![0, 1], vec![true, false])
        );
    }
}
