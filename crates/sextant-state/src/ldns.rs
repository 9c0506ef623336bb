//! The LDNS table of the RTT method (seed 003): which local DNS resolvers
//! this site probes, the RTTs it and the other parents measured to them,
//! what it told the others, and how the table stays bounded.
//!
//! An LDNS *group* (the query source masked with `-ldnsMask` /
//! `-v6ldnsMaskLen`) gets an entry when it queries a domain whose vserver
//! uses RTT here, or when another parent says its clients do; every parent
//! then probes it. An entry lives while some site still sees queries from it
//! (each site says so in its RTT messages, `queried`), and expires after
//! `-ldnsEntryTimeout` without. New entries are rate limited and the table
//! has a size limit with eviction of the least recently queried entry, so
//! spoofed sources cannot make the site probe arbitrary addresses at will;
//! addresses that cannot be resolvers are never probed. Everything refused
//! is counted ([`LdnsStats`]).
//!
//! A site sends its own RTT for a group only when it moved by more than
//! `-RTTTolerance` from the value it last sent, when its path figures
//! changed noticeably since it last sent them ([`path::noticeably_changed`]),
//! or when the group's `queried` state changed; and its whole table when a
//! peer comes up.
//!
//! # Path figures (datacenter mode, Client Based)
//!
//! This site's own cell also carries the path figures of its last
//! [`path::PATH_WINDOW`] probe cycles ([`path`]): hops and TTL from the
//! replies' TTL, loss from the failed cycles, MOS from RTT, jitter and loss.
//! Peers' cells carry what the peers sent.
//!
//! A failed cycle leaves the site without a cell, as the RTT method
//! requires (seed 003: a site that could not measure the LDNS has no RTT
//! and is never chosen by RTT for it), so Client Based ranks the site with
//! the unknown ones (last) for that LDNS until a cycle is answered again:
//! an operator looking at a resolver that just stopped answering this site
//! expects it to be the worst path, not its last good figures. The failure
//! is not forgotten, though: the window keeps it, so the next answered
//! cycle's figures carry it in the loss (and so the MOS) and keep the TTL
//! and hops of the latest reply that told one. Only after a whole window
//! without a TTL-bearing answer do the figures go away.

mod path;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::snapshot::FnvMap;
use sextant_core::{
    IdVec, LdnsProbe, LdnsStats, Model, PathFigures, RttCell, RttRowInfo, RttTable, SiteId,
};

use crate::event::SharedRtt;

/// How often expiry is checked.
pub(crate) const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// What the engine does with the book's decisions.
#[derive(Debug, Default)]
pub(crate) struct LdnsOut {
    pub probe_add: Vec<IpAddr>,
    pub probe_remove: Vec<IpAddr>,
    pub share: Vec<SharedRtt>,
}

/// What the book needs to know of the site, per call.
pub(crate) struct Ctx<'a> {
    pub model: &'a Model,
    /// Per site: metric exchange with it is up (the local site: false).
    pub peers_up: &'a IdVec<SiteId, bool>,
}

impl Ctx<'_> {
    fn local(&self) -> Option<SiteId> {
        self.model.local_site
    }

    /// This site exchanges RTT: a parent (seed 001: children have it off)
    /// with metric and network-metric exchange on.
    fn exchanges(&self) -> bool {
        self.local()
            .and_then(|l| self.model.sites.get(l))
            .is_some_and(|s| s.parent.is_none() && s.metric_exchange && s.nw_metric_exchange)
            && self.model.sites.len() > 1
    }

    fn peer_up(&self, site: SiteId) -> bool {
        self.peers_up.get(site).copied().unwrap_or(false)
    }

    /// Addresses that are never an LDNS worth probing.
    fn ignored(&self, ip: IpAddr) -> bool {
        let own = self
            .model
            .sites
            .iter()
            .any(|s| s.ip == ip || s.public_ip == Some(ip));
        own || ip.is_unspecified()
            || ip.is_multicast()
            || matches!(ip, IpAddr::V4(v4) if v4.is_broadcast())
    }
}

#[derive(Debug, Clone)]
struct Entry {
    /// The last query seen here.
    last_query: Option<Duration>,
    /// Per site: its measurement.
    cells: IdVec<SiteId, Option<RttCell>>,
    /// Per site: it said its clients query this LDNS.
    interest: IdVec<SiteId, bool>,
    /// The own RTT last sent, in µs (`Some(None)`: sent as unreachable);
    /// `None`: nothing sent yet.
    sent_rtt: Option<Option<u32>>,
    /// The own path figures last sent (with `sent_rtt`).
    sent_path: Option<PathFigures>,
    /// The `queried` state last sent.
    sent_queried: bool,
    /// This site's recent probe cycles, for its path figures.
    window: path::PathWindow,
}

impl Entry {
    fn new(sites: usize) -> Entry {
        Entry {
            last_query: None,
            cells: vec![None; sites].into(),
            interest: vec![false; sites].into(),
            sent_rtt: None,
            sent_path: None,
            sent_queried: false,
            window: path::PathWindow::default(),
        }
    }

    fn queried_here(&self, now: Duration, timeout: Duration) -> bool {
        self.last_query.is_some_and(|t| now < t + timeout)
    }
}

/// The LDNS table and its bookkeeping.
#[derive(Debug, Clone)]
pub(crate) struct LdnsBook {
    entries: FnvMap<IpAddr, Entry>,
    stats: LdnsStats,
    /// New-entry token bucket.
    tokens: f64,
    refilled: Option<Duration>,
    /// The table needs publishing again.
    pub dirty: bool,
    next_sweep: Option<Duration>,
    published: Arc<RttTable>,
}

impl Default for LdnsBook {
    fn default() -> Self {
        LdnsBook {
            entries: FnvMap::default(),
            stats: LdnsStats::default(),
            tokens: 0.0,
            refilled: None,
            dirty: false,
            next_sweep: None,
            published: Arc::default(),
        }
    }
}

fn micros(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX - 1)
}

impl LdnsBook {
    /// When the book wants a tick (expiry), if it has entries.
    pub fn next_wake(&self) -> Option<Duration> {
        self.next_sweep.filter(|_| !self.entries.is_empty())
    }

    /// LDNS groups that queried an RTT domain here (new or known).
    pub fn queried(&mut self, groups: &[IpAddr], now: Duration, ctx: &Ctx<'_>, out: &mut LdnsOut) {
        let p = &ctx.model.params;
        for ip in groups {
            let group = sextant_core::select::mask_ip(*ip, p.ldns_v4_mask, p.ldns_v6_mask);
            if let Some(e) = self.entries.get_mut(&group) {
                e.last_query = Some(now);
                if !e.sent_queried && ctx.exchanges() {
                    e.sent_queried = true;
                    out.share.push(shared(group, e, ctx, false));
                }
                continue;
            }
            if ctx.ignored(group) {
                self.stats.ignored += 1;
                // The counters are published with the table.
                self.dirty = true;
                continue;
            }
            if !self.take_token(now, p.ldns_new_per_second) {
                self.stats.rate_limited += 1;
                self.dirty = true;
                continue;
            }
            let mut e = Entry::new(ctx.model.sites.len());
            e.last_query = Some(now);
            if ctx.exchanges() {
                e.sent_queried = true;
                out.share.push(shared(group, &e, ctx, false));
            }
            self.insert(group, e, now, ctx, out);
        }
    }

    /// One probe cycle's result for `group` from this site, with the
    /// reply's TTL when the probe saw it (see the module doc for what a
    /// failed cycle does to the path figures).
    pub fn own_sample(
        &mut self,
        group: IpAddr,
        sample: Option<(Duration, LdnsProbe)>,
        ttl: Option<u8>,
        now: Duration,
        ctx: &Ctx<'_>,
        out: &mut LdnsOut,
    ) {
        let Some(local) = ctx.local() else { return };
        let tolerance = micros(ctx.model.params.rtt_tolerance);
        let exchanges = ctx.exchanges();
        let Some(e) = self.entries.get_mut(&group) else {
            return;
        };
        e.window.push(sample.map(|(rtt, _)| (rtt, ttl)));
        let path = e.window.figures();
        let cell = sample.map(|(rtt, kind)| RttCell {
            rtt,
            kind: Some(kind),
            at: now,
            path,
        });
        if let Some(slot) = e.cells.get_mut(local) {
            let moved = match (*slot, cell) {
                (Some(a), Some(b)) => a.rtt != b.rtt || a.kind != b.kind || a.path != b.path,
                (None, None) => false,
                _ => true,
            };
            *slot = cell;
            self.dirty |= moved;
        }
        if !exchanges {
            return;
        }
        let new = cell.map(|c| micros(c.rtt));
        let path = cell.and_then(|c| c.path);
        let send = match e.sent_rtt {
            None => true,
            Some(Some(old)) => new.is_none_or(|n| n.abs_diff(old) > tolerance),
            Some(None) => new.is_some(),
        } || path::noticeably_changed(e.sent_path, path);
        if send {
            e.sent_rtt = Some(new);
            e.sent_path = path;
            out.share.push(shared(group, e, ctx, false));
        }
    }

    /// Another parent's RTTs (and interest) for some groups.
    pub fn peer(
        &mut self,
        site: SiteId,
        entries: &[SharedRtt],
        now: Duration,
        ctx: &Ctx<'_>,
        out: &mut LdnsOut,
    ) {
        if Some(site) == ctx.local() || ctx.model.sites.get(site).is_none() {
            return;
        }
        let p = &ctx.model.params;
        for r in entries {
            let group = sextant_core::select::mask_ip(r.group, p.ldns_v4_mask, p.ldns_v6_mask);
            let cell = r.rtt.map(|rtt| RttCell {
                rtt,
                kind: r.kind,
                at: now,
                path: r.path,
            });
            if let Some(e) = self.entries.get_mut(&group) {
                e.cells[site] = if r.removed { None } else { cell };
                e.interest[site] = r.queried && !r.removed;
                self.dirty = true;
                continue;
            }
            // A group this site has not seen: probe it too while the peer's
            // clients use it (every parent probes every LDNS).
            if r.removed || !r.queried || ctx.ignored(group) {
                continue;
            }
            let mut e = Entry::new(ctx.model.sites.len());
            e.cells[site] = cell;
            e.interest[site] = true;
            self.insert(group, e, now, ctx, out);
        }
    }

    /// Metric exchange with `site` went down: its RTTs are stale (not
    /// published) and its interest no longer keeps entries alive.
    pub fn peer_down(&mut self, site: SiteId) {
        for e in self.entries.values_mut() {
            if let Some(i) = e.interest.get_mut(site) {
                *i = false;
            }
            if let Some(c) = e.cells.get_mut(site) {
                *c = None;
            }
        }
        self.dirty = true;
    }

    /// Metric exchange with a peer came up: it gets this site's whole table.
    pub fn peer_up(&mut self, now: Duration, ctx: &Ctx<'_>, out: &mut LdnsOut) {
        self.dirty = true;
        if !ctx.exchanges() {
            return;
        }
        let timeout = ctx.model.params.ldns_entry_timeout;
        let Some(local) = ctx.local() else { return };
        for (group, e) in self.entries.iter_mut() {
            let queried = e.queried_here(now, timeout);
            let own = e.cells.get(local).copied().flatten();
            if !queried && own.is_none() {
                continue;
            }
            e.sent_queried = queried;
            e.sent_rtt = Some(own.map(|c| micros(c.rtt)));
            e.sent_path = own.and_then(|c| c.path);
            out.share.push(shared(*group, e, ctx, false));
        }
    }

    /// Expires what no site queries any more.
    pub fn tick(&mut self, now: Duration, ctx: &Ctx<'_>, out: &mut LdnsOut) {
        if self.next_sweep.is_some_and(|t| now < t) {
            return;
        }
        self.next_sweep = Some(now + SWEEP_INTERVAL);
        let timeout = ctx.model.params.ldns_entry_timeout;
        let exchanges = ctx.exchanges();
        let mut gone = Vec::new();
        for (group, e) in self.entries.iter_mut() {
            let here = e.queried_here(now, timeout);
            if !here && e.sent_queried && exchanges {
                e.sent_queried = false;
                out.share.push(shared(*group, e, ctx, false));
            }
            let elsewhere = e
                .interest
                .iter_enumerated()
                .any(|(s, i)| *i && ctx.peer_up(s));
            if !here && !elsewhere {
                gone.push(*group);
            }
        }
        for group in gone {
            self.stats.expired += 1;
            self.dirty = true;
            self.remove(group, ctx, out);
        }
    }

    /// The table to publish (rebuilt only when something changed).
    pub fn table(&mut self, ctx: &Ctx<'_>) -> Arc<RttTable> {
        if self.dirty {
            self.dirty = false;
            let local = ctx.local();
            let sites = ctx.model.sites.len();
            let mut b = RttTable::builder(sites);
            b.reserve(self.entries.len()).stats(self.stats);
            let mut cells: IdVec<SiteId, Option<RttCell>> = vec![None; sites].into();
            for (group, e) in &self.entries {
                for (s, c) in cells.iter_enumerated_mut() {
                    let usable = Some(s) == local || ctx.peer_up(s);
                    *c = if usable {
                        e.cells.get(s).copied().flatten()
                    } else {
                        None
                    };
                }
                let info = RttRowInfo {
                    last_query: e.last_query,
                    peers_interested: e
                        .interest
                        .iter_enumerated()
                        .any(|(s, i)| *i && ctx.peer_up(s)),
                };
                b.row_with(*group, info, cells.as_slice());
            }
            self.published = Arc::new(b.build());
        }
        Arc::clone(&self.published)
    }

    /// The same table under a new configuration: cells follow their site
    /// by name; groups are kept as they are.
    pub fn reloaded(mut self, old: &Model, new: &Model) -> LdnsBook {
        let map: IdVec<SiteId, Option<SiteId>> = old
            .sites
            .iter()
            .map(|s| new.site_by_name(&s.name))
            .collect();
        for e in self.entries.values_mut() {
            let mut cells: IdVec<SiteId, _> = vec![None; new.sites.len()].into();
            let mut interest: IdVec<SiteId, _> = vec![false; new.sites.len()].into();
            for (old_id, new_id) in map.iter_enumerated() {
                if let Some(n) = *new_id {
                    cells[n] = e.cells.get(old_id).copied().flatten();
                    interest[n] = e.interest.get(old_id).copied().unwrap_or(false);
                }
            }
            e.cells = cells;
            e.interest = interest;
        }
        self.dirty = true;
        self
    }

    fn take_token(&mut self, now: Duration, per_second: u32) -> bool {
        let rate = f64::from(per_second.max(1));
        let elapsed = self
            .refilled
            .map_or(1.0, |t| now.saturating_sub(t).as_secs_f64());
        self.tokens = (self.tokens + elapsed * rate).min(rate);
        self.refilled = Some(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Adds an entry, making room first if the table is full.
    fn insert(&mut self, group: IpAddr, e: Entry, now: Duration, ctx: &Ctx<'_>, out: &mut LdnsOut) {
        let max = ctx.model.params.ldns_max_entries.max(1);
        if self.entries.len() >= max {
            self.evict(max, ctx, out);
        }
        self.entries.insert(group, e);
        self.stats.created += 1;
        self.dirty = true;
        if self.next_sweep.is_none() {
            self.next_sweep = Some(now + SWEEP_INTERVAL);
        }
        out.probe_add.push(group);
    }

    /// Removes the least recently queried entries: one in a hundred of the
    /// limit at once (at least one), so a full table under a stream of new
    /// sources costs one scan per hundred insertions, not one per insertion.
    fn evict(&mut self, max: usize, ctx: &Ctx<'_>, out: &mut LdnsOut) {
        let batch = (max / 100).max(1).min(self.entries.len());
        let mut by_age: Vec<(Option<Duration>, IpAddr)> = self
            .entries
            .iter()
            .map(|(g, e)| (e.last_query, *g))
            .collect();
        if batch < by_age.len() {
            by_age.select_nth_unstable(batch - 1);
        }
        for (_, group) in by_age.into_iter().take(batch) {
            self.stats.evicted += 1;
            self.remove(group, ctx, out);
        }
    }

    fn remove(&mut self, group: IpAddr, ctx: &Ctx<'_>, out: &mut LdnsOut) {
        if let Some(e) = self.entries.remove(&group) {
            out.probe_remove.push(group);
            self.dirty = true;
            if ctx.exchanges() && (e.sent_queried || e.sent_rtt.is_some()) {
                out.share.push(shared(group, &e, ctx, true));
            }
        }
    }
}

/// This site's view of one group, as sent to the other parents.
fn shared(group: IpAddr, e: &Entry, ctx: &Ctx<'_>, removed: bool) -> SharedRtt {
    let own = ctx.local().and_then(|l| e.cells.get(l).copied().flatten());
    SharedRtt {
        group,
        rtt: own.map(|c| c.rtt),
        kind: own.and_then(|c| c.kind),
        path: own.and_then(|c| c.path),
        queried: e.sent_queried && !removed,
        removed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sextant_core::Site;

    fn model(sites: usize) -> Model {
        let mut m = Model::default();
        for i in 0..sites {
            m.sites.push(Site::new(
                format!("s{i}"),
                IpAddr::from([127, 0, 0, 1 + i as u8]),
            ));
        }
        m.set_local_site(SiteId::new(0));
        m
    }

    fn ip(i: u32) -> IpAddr {
        IpAddr::from((0xc633_6400u32 + i).to_be_bytes())
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn new_entries_are_rate_limited_and_the_table_evicts_the_least_recently_queried() {
        let mut m = model(2);
        m.params.ldns_new_per_second = 10;
        m.params.ldns_max_entries = 20;
        let up: IdVec<SiteId, bool> = vec![false, true].into();
        let ctx = Ctx {
            model: &m,
            peers_up: &up,
        };
        let mut book = LdnsBook::default();
        let mut out = LdnsOut::default();
        let flood: Vec<IpAddr> = (0..1000).map(ip).collect();
        book.queried(&flood, secs(1.0), &ctx, &mut out);
        assert_eq!(out.probe_add.len(), 10, "one second's worth of new entries");
        assert_eq!(book.stats.rate_limited, 990);
        // A second later: ten more; later still the table is full and the
        // oldest make room.
        for t in 2..=5 {
            let fresh: Vec<IpAddr> = (t * 1000..t * 1000 + 10).map(ip).collect();
            book.queried(&fresh, secs(f64::from(t)), &ctx, &mut out);
        }
        assert!(book.entries.len() <= 20);
        assert!(book.stats.evicted >= 30, "{:?}", book.stats);
        assert!(
            !book.entries.contains_key(&ip(0)),
            "the first entries were the least recently queried"
        );
        assert!(book.entries.contains_key(&ip(5000)));
        // Known groups are not rate limited.
        let before = book.stats.rate_limited;
        book.queried(&[ip(5000); 50], secs(5.0), &ctx, &mut out);
        assert_eq!(book.stats.rate_limited, before);
    }

    #[test]
    fn addresses_that_cannot_be_resolvers_are_never_probed() {
        let m = model(2);
        let ctx = Ctx {
            model: &m,
            peers_up: &vec![false, false].into(),
        };
        let mut book = LdnsBook::default();
        let mut out = LdnsOut::default();
        let bad: Vec<IpAddr> = [
            "0.0.0.0",
            "::",
            "224.0.0.5",
            "ff02::1",
            "255.255.255.255",
            "127.0.0.2",
        ]
        .iter()
        .map(|s| s.parse().expect("ip"))
        .collect();
        book.queried(&bad, secs(1.0), &ctx, &mut out);
        assert!(out.probe_add.is_empty());
        assert_eq!(book.stats.ignored, 6);
    }

    #[test]
    fn a_peer_whose_exchange_is_down_is_not_published_and_a_child_shares_nothing() {
        let mut m = model(2);
        let mut up: IdVec<SiteId, bool> = vec![false, true].into();
        let mut book = LdnsBook::default();
        let mut out = LdnsOut::default();
        let ctx = Ctx {
            model: &m,
            peers_up: &up,
        };
        book.queried(&[ip(1)], secs(1.0), &ctx, &mut out);
        let peer = SharedRtt {
            group: ip(1),
            rtt: Some(Duration::from_millis(7)),
            kind: Some(LdnsProbe::DnsUdp),
            path: None,
            queried: true,
            removed: false,
        };
        book.peer(SiteId::new(1), &[peer], secs(1.5), &ctx, &mut out);
        let t = book.table(&ctx);
        let row = t.row(ip(1)).expect("row");
        assert_eq!(t.rtt_us(row, SiteId::new(1)), Some(7_000));
        up[SiteId::new(1)] = false;
        book.dirty = true;
        let ctx = Ctx {
            model: &m,
            peers_up: &up,
        };
        let t = book.table(&ctx);
        assert_eq!(
            t.rtt_us(t.row(ip(1)).expect("row"), SiteId::new(1)),
            None,
            "stale"
        );
        // A child site exchanges no RTT (seed 001).
        m.sites[SiteId::new(0)].parent = Some(SiteId::new(1));
        let ctx = Ctx {
            model: &m,
            peers_up: &up,
        };
        let mut out = LdnsOut::default();
        book.queried(&[ip(2)], secs(2.0), &ctx, &mut out);
        book.own_sample(
            ip(2),
            Some((Duration::from_millis(3), LdnsProbe::Ping)),
            Some(60),
            secs(2.5),
            &ctx,
            &mut out,
        );
        assert!(out.share.is_empty());
    }

    /// The own cell's path figures of `group` in the published table.
    fn own_path(book: &mut LdnsBook, ctx: &Ctx<'_>, group: IpAddr) -> Option<PathFigures> {
        let t = book.table(ctx);
        let row = t.row(group)?;
        t.cell(row, SiteId::new(0))?.path
    }

    #[test]
    fn own_samples_with_ttls_and_failures_make_the_path_figures() {
        let m = model(2);
        let up: IdVec<SiteId, bool> = vec![false, true].into();
        let ctx = Ctx {
            model: &m,
            peers_up: &up,
        };
        let mut book = LdnsBook::default();
        let mut out = LdnsOut::default();
        let g = ip(1);
        book.queried(&[g], secs(1.0), &ctx, &mut out);
        let ms = Duration::from_millis;
        // TCP answers tell no TTL: an RTT, no path.
        book.own_sample(
            g,
            Some((ms(20), LdnsProbe::DnsTcp)),
            None,
            secs(2.0),
            &ctx,
            &mut out,
        );
        assert_eq!(own_path(&mut book, &ctx, g), None);
        // A UDP answer with TTL 57 from a host 7 hops away.
        book.own_sample(
            g,
            Some((ms(20), LdnsProbe::DnsUdp)),
            Some(57),
            secs(3.0),
            &ctx,
            &mut out,
        );
        let p = own_path(&mut book, &ctx, g).expect("a path with a TTL");
        assert_eq!(
            (p.hops, p.ttl, p.loss_permille, p.mos_centi),
            (7, 57, 0, 440)
        );
        // Two failed cycles: no cell (seed 003), the window keeps them.
        for t in [4.0, 5.0] {
            book.own_sample(g, None, None, secs(t), &ctx, &mut out);
            let table = book.table(&ctx);
            let row = table.row(g).expect("row");
            assert_eq!(
                table.cell(row, SiteId::new(0)),
                None,
                "no RTT after a failed cycle"
            );
        }
        // The next answer carries them: 2 of 4 cycles lost, the TTL kept
        // from the reply that told one.
        book.own_sample(
            g,
            Some((ms(20), LdnsProbe::DnsTcp)),
            None,
            secs(6.0),
            &ctx,
            &mut out,
        );
        let p = own_path(&mut book, &ctx, g).expect("path");
        assert_eq!((p.hops, p.ttl, p.loss_permille), (7, 57, 400));
        assert_eq!(
            p.mos_centi,
            (mos_of(20.0, 0.0, 40.0) * 100.0).round() as u16
        );
        assert!(p.mos_centi < 200, "40 % loss is a poor path: {p:?}");
        // Ten clean cycles later the losses are out of the window.
        for i in 0..10 {
            let t = 7.0 + f64::from(i);
            book.own_sample(
                g,
                Some((ms(20), LdnsProbe::DnsUdp)),
                Some(57),
                secs(t),
                &ctx,
                &mut out,
            );
        }
        let p = own_path(&mut book, &ctx, g).expect("path");
        assert_eq!((p.loss_permille, p.mos_centi), (0, 440));
    }

    fn mos_of(rtt: f64, jitter: f64, loss: f64) -> f64 {
        path::mos(rtt, jitter, loss)
    }

    #[test]
    fn a_noticeable_path_change_is_shared_within_the_rtt_tolerance() {
        let m = model(2); // -RTTTolerance 5 ms by default
        let up: IdVec<SiteId, bool> = vec![false, true].into();
        let ctx = Ctx {
            model: &m,
            peers_up: &up,
        };
        let mut book = LdnsBook::default();
        let mut out = LdnsOut::default();
        let g = ip(1);
        book.queried(&[g], secs(1.0), &ctx, &mut out);
        let udp = |ms: u64| Some((Duration::from_millis(ms), LdnsProbe::DnsUdp));
        let step = |book: &mut LdnsBook, sample, ttl, t: f64| {
            let mut out = LdnsOut::default();
            book.own_sample(g, sample, ttl, secs(t), &ctx, &mut out);
            out.share
        };
        let first = step(&mut book, udp(20), Some(60), 2.0);
        assert_eq!(first.len(), 1, "the first RTT is sent");
        let sent = first[0].path.expect("with its path");
        assert_eq!((sent.hops, sent.ttl), (4, 60));
        // Same RTT, same path: nothing.
        assert!(step(&mut book, udp(21), Some(60), 3.0).is_empty());
        // The route changed (TTL 59), the RTT within the tolerance: sent.
        let moved = step(&mut book, udp(22), Some(59), 4.0);
        assert_eq!(moved.len(), 1);
        assert_eq!(moved[0].path.map(|p| p.hops), Some(5));
        assert_eq!(moved[0].rtt, Some(Duration::from_millis(22)));
        // A failure: unmeasurable, sent without RTT nor path.
        let failed = step(&mut book, None, None, 5.0);
        assert_eq!(failed.len(), 1);
        assert_eq!((failed[0].rtt, failed[0].path), (None, None));
        // Back: sent, its loss 1 in 5 cycles.
        let back = step(&mut book, udp(22), Some(59), 6.0);
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].path.map(|p| p.loss_permille), Some(200));
        // A clean cycle makes the loss fall to 1/6 = 166‰: 34‰ less is
        // under the loss threshold, but 3.4 points of loss are 8.5 of R,
        // which moves the MOS by more than 0.1: sent.
        let before = back[0].path.expect("path");
        let less = step(&mut book, udp(22), Some(59), 7.0);
        assert_eq!(less.len(), 1, "the MOS moved by 0.1 or more");
        let after = less[0].path.expect("path");
        assert_eq!(after.loss_permille, 166);
        assert!(
            after.mos_centi >= before.mos_centi + 10,
            "{before:?} {after:?}"
        );
    }

    #[test]
    fn peers_paths_reach_their_cells() {
        let m = model(2);
        let up: IdVec<SiteId, bool> = vec![false, true].into();
        let ctx = Ctx {
            model: &m,
            peers_up: &up,
        };
        let mut book = LdnsBook::default();
        let mut out = LdnsOut::default();
        let path = PathFigures {
            hops: 3,
            ttl: 61,
            loss_permille: 100,
            mos_centi: 350,
        };
        let peer = SharedRtt {
            group: ip(1),
            rtt: Some(Duration::from_millis(7)),
            kind: Some(LdnsProbe::Ping),
            path: Some(path),
            queried: true,
            removed: false,
        };
        book.peer(SiteId::new(1), &[peer], secs(1.0), &ctx, &mut out);
        let t = book.table(&ctx);
        let row = t.row(ip(1)).expect("row");
        assert_eq!(t.cell(row, SiteId::new(1)).and_then(|c| c.path), Some(path));
        // A peer that comes up gets this site's paths too.
        book.own_sample(
            ip(1),
            Some((Duration::from_millis(9), LdnsProbe::Ping)),
            Some(250),
            secs(2.0),
            &ctx,
            &mut out,
        );
        let mut out = LdnsOut::default();
        book.peer_up(secs(3.0), &ctx, &mut out);
        assert_eq!(out.share.len(), 1);
        assert_eq!(out.share[0].path.map(|p| p.hops), Some(5));
    }
}
