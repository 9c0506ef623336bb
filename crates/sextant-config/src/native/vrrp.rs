//! `[vrrp]` with its `[[vrrp.vrid]]` tables: the native form of `set
//! vridParam`, `add vrid`, `bind vrid` and `add ns ip ... -type VIP -vrid
//! ID` (seed 004).
//!
//! ```toml
//! [vrrp]
//! send_to_master = false
//! hello_interval = "1s"
//! dead_interval = "3s"
//! checksum = "pseudo_header"
//! virtual_mac = true
//!
//! [[vrrp.vrid]]
//! id = 1
//! priority = 200
//! tracking = "progressive"
//! interfaces = ["eth0"]
//! track_vservers = ["gv-www"]
//! addresses = ["10.0.0.53/24"]
//! ```
//!
//! Each `[[vrrp.vrid]]` is read on its own, so one bad table does not hide
//! the errors of the next.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde::de::IgnoredAny;
use toml::Spanned;
use toml::de::DeValue;

use super::{Element, Native};
use crate::duration;
use crate::vrrp::{self, DraftVrid, VridBinding, VridBound};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VrrpT {
    send_to_master: Option<bool>,
    hello_interval: Option<Spanned<String>>,
    dead_interval: Option<Spanned<String>>,
    checksum: Option<Spanned<String>>,
    virtual_mac: Option<bool>,
    /// Read table by table by [`Native::vrid`].
    #[allow(dead_code)]
    vrid: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VridT {
    id: Spanned<i64>,
    priority: Option<Spanned<i64>>,
    preemption: Option<Spanned<bool>>,
    preemption_delay: Option<Spanned<String>>,
    sharing: Option<bool>,
    tracking: Option<Spanned<String>>,
    #[serde(default)]
    interfaces: Vec<Spanned<String>>,
    #[serde(default)]
    track_interfaces: Vec<Spanned<String>>,
    #[serde(default)]
    track_vservers: Vec<Spanned<String>>,
    #[serde(default)]
    track_services: Vec<Spanned<String>>,
    #[serde(default)]
    addresses: Vec<Spanned<String>>,
}

impl Native<'_> {
    pub(super) fn vrrp(&mut self, value: Element<'_>) {
        let line = self.line(&value.span());
        let vrids = match value.get_ref() {
            DeValue::Table(t) => t.get("vrid").cloned(),
            _ => None,
        };
        if let Some(v) = self.de::<VrrpT>("[vrrp]", value) {
            self.vrrp_params(v);
        }
        if let Some(v) = vrids {
            let key_line = self.at(&v).max(line);
            self.each(key_line, "vrrp.vrid", v, Native::vrid);
        }
    }

    fn vrrp_params(&mut self, v: VrrpT) {
        let ctx: Arc<str> = "[vrrp]".into();
        let p = &mut self.draft.vrrp.params;
        if let Some(b) = v.send_to_master {
            p.send_to_master = b;
        }
        if let Some(b) = v.virtual_mac {
            p.virtual_mac = b;
        }
        if let Some(s) = &v.hello_interval
            && let Some(d) = self.vrrp_duration(&ctx, "hello_interval", s, vrrp::hello_interval)
        {
            self.draft.vrrp.params.hello_interval = d;
        }
        if let Some(s) = &v.dead_interval {
            self.draft.vrrp.interval_line = Some(self.at(s));
            if let Some(d) = self.vrrp_duration(&ctx, "dead_interval", s, vrrp::dead_interval) {
                self.draft.vrrp.params.dead_interval = d;
            }
        }
        if let Some(s) = &v.checksum
            && let Some(c) = self.with(&ctx, "checksum", s, |t| {
                vrrp::checksum(t).ok_or_else(|| {
                    format!("expected \"pseudo_header\" or \"rfc9568\", found \"{t}\"")
                })
            })
        {
            self.draft.vrrp.params.checksum = c;
        }
        self.draft.vrrp.params_context = Some(ctx);
    }

    /// A duration string, then `check`ed; reported as `ctx: key: ...`.
    fn vrrp_duration(
        &mut self,
        ctx: &str,
        key: &str,
        v: &Spanned<String>,
        check: fn(Duration) -> Result<Duration, String>,
    ) -> Option<Duration> {
        self.with(ctx, key, v, |t| duration::parse_suffixed(t).and_then(check))
    }

    fn vrid(&mut self, value: Element<'_>) {
        let Some(v) = self.de::<VridT>("[[vrrp.vrid]]", value) else {
            return;
        };
        let ctx: Arc<str> = format!("[[vrrp.vrid]] {}", v.id.get_ref()).into();
        let line = self.at(&v.id);
        let id = match vrrp::vrid_id(i128::from(*v.id.get_ref())) {
            Ok(id) => id,
            Err(e) => {
                self.error(line, &ctx, format!("id: {e}"));
                return;
            }
        };
        let mut d = DraftVrid::new(id, line, ctx.clone());
        if let Some(p) = &v.priority {
            match vrrp::priority(i128::from(*p.get_ref())) {
                Ok(p) => d.vrid.priority = p,
                Err(e) => self.error(self.at(p), &ctx, format!("priority: {e}")),
            }
        }
        if let Some(b) = &v.preemption {
            d.vrid.preemption = *b.get_ref();
            d.preemption_line = Some(self.at(b));
        }
        if let Some(s) = &v.preemption_delay
            && let Some(t) = self.vrrp_duration(&ctx, "preemption_delay", s, vrrp::preemption_delay)
        {
            d.vrid.preemption_delay = t;
        }
        d.vrid.sharing = v.sharing.unwrap_or(false);
        if let Some(s) = &v.tracking
            && let Some(t) = self.with(&ctx, "tracking", s, |t| {
                vrrp::tracking(t).ok_or_else(|| {
                    format!("expected \"none\", \"all\", \"one\" or \"progressive\", found \"{t}\"")
                })
            })
        {
            d.vrid.tracking = t;
            d.tracking_line = Some(self.at(s));
        }
        let own = self.draft.vrrp.vrids.len();
        self.draft.vrrp.vrids.push(d);

        let bind = |n: &mut Self, at: usize, bound: VridBound| {
            n.draft.vrrp.bindings.push(VridBinding {
                vrid: id,
                of: Some(own),
                line: at,
                context: ctx.clone(),
                bound,
            });
        };
        for (key, names, track) in [
            ("interfaces", &v.interfaces, false),
            ("track_interfaces", &v.track_interfaces, true),
        ] {
            for s in names {
                let at = self.at(s);
                match vrrp::interface_name(s.get_ref()) {
                    Ok(()) => {
                        let name = s.get_ref().clone();
                        let bound = if track {
                            VridBound::TrackInterface(name)
                        } else {
                            VridBound::Interface(name)
                        };
                        bind(self, at, bound);
                    }
                    Err(e) => self.error(at, &ctx, format!("{key}: {e}")),
                }
            }
        }
        for s in &v.track_vservers {
            let r = self.reference(&ctx, s);
            bind(self, r.line, VridBound::TrackVserver(r));
        }
        for s in &v.track_services {
            let r = self.reference(&ctx, s);
            bind(self, r.line, VridBound::TrackService(r));
        }
        for s in &v.addresses {
            let at = self.at(s);
            match vrrp::vip_cidr(s.get_ref(), false) {
                Ok(a) => bind(self, at, VridBound::Address(a)),
                Err(e) => self.error(at, &ctx, format!("addresses: {e}")),
            }
        }
    }
}
