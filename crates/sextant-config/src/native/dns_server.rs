//! `[dns]` with `[dns.rrl]` and `[dns.cookies]`: the native form of `set
//! dns parameter`'s Sextant options.
//!
//! ```toml
//! [dns]
//! nsid = "node-a"                  # or nsid_hex = "6e6f6465"
//! tcp_idle_timeout = "10s"
//! tcp_max_connections = 1024
//!
//! [dns.rrl]                        # absent = off
//! responses_per_second = 20
//! slip = 2
//! ipv4_prefix = 24
//! ipv6_prefix = 56
//! exempt = ["10.0.0.0/8", "::1/128"]
//! table_size = 65536
//!
//! [dns.cookies]                    # absent = off
//! enabled = true
//! secret_rotation = "1h"
//! ```

use serde::Deserialize;
use toml::Spanned;

use super::{Element, Native};
use crate::dns_settings as ds;
use crate::duration;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DnsT {
    nsid: Option<Spanned<String>>,
    nsid_hex: Option<Spanned<String>>,
    tcp_idle_timeout: Option<Spanned<String>>,
    tcp_max_connections: Option<Spanned<i64>>,
    rrl: Option<Spanned<RrlT>>,
    cookies: Option<CookiesT>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RrlT {
    responses_per_second: Spanned<i64>,
    slip: Option<Spanned<i64>>,
    ipv4_prefix: Option<Spanned<i64>>,
    ipv6_prefix: Option<Spanned<i64>>,
    #[serde(default)]
    exempt: Vec<Spanned<String>>,
    table_size: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CookiesT {
    enabled: Option<bool>,
    secret_rotation: Option<Spanned<String>>,
}

impl Native<'_> {
    pub(super) fn dns_server(&mut self, value: Element<'_>) {
        let Some(d) = self.de::<DnsT>("[dns]", value) else {
            return;
        };
        let ctx = "[dns]";
        if d.nsid.is_some() && d.nsid_hex.is_some() {
            let line = d.nsid_hex.as_ref().map(|v| self.at(v)).unwrap_or(0);
            self.error(line, ctx, "give nsid or nsid_hex, not both");
        }
        if let Some(v) = &d.nsid
            && let Some(n) = self.with(ctx, "nsid", v, ds::nsid_text)
        {
            self.draft.dns_server.nsid = Some(n);
        }
        if let Some(v) = &d.nsid_hex
            && let Some(n) = self.with(ctx, "nsid_hex", v, ds::nsid_hex)
        {
            self.draft.dns_server.nsid = Some(n);
        }
        if let Some(v) = &d.tcp_idle_timeout
            && let Some(t) = self.with(ctx, "tcp_idle_timeout", v, |t| {
                duration::parse_suffixed(t).and_then(ds::tcp_idle_timeout)
            })
        {
            self.draft.dns_server.tcp_idle_timeout = Some(t);
        }
        if let Some(v) = &d.tcp_max_connections
            && let Some(n) = self.checked(ctx, "tcp_max_connections", v, ds::tcp_max_connections)
        {
            self.draft.dns_server.tcp_max_connections = Some(n);
        }
        if let Some(rrl) = &d.rrl {
            let line = self.at(rrl);
            let r = rrl.get_ref();
            let ctx = "[dns.rrl]";
            let dd = &mut self.draft.dns_server;
            dd.rrl_line = Some(line);
            dd.rrl_context = Some(ctx.to_string());
            self.draft.dns_server.rrl_rate = self.checked(
                ctx,
                "responses_per_second",
                &r.responses_per_second,
                ds::rrl_rate,
            );
            // Reported already; do not also say the rate is missing.
            self.draft.dns_server.rrl_rate_bad = self.draft.dns_server.rrl_rate.is_none();
            if let Some(v) = &r.slip {
                self.draft.dns_server.rrl_slip = self.checked(ctx, "slip", v, ds::rrl_slip);
            }
            if let Some(v) = &r.ipv4_prefix {
                self.draft.dns_server.rrl_ipv4_prefix =
                    self.checked(ctx, "ipv4_prefix", v, ds::ipv4_prefix);
            }
            if let Some(v) = &r.ipv6_prefix {
                self.draft.dns_server.rrl_ipv6_prefix =
                    self.checked(ctx, "ipv6_prefix", v, ds::ipv6_prefix);
            }
            if let Some(v) = &r.table_size {
                self.draft.dns_server.rrl_table_size =
                    self.checked(ctx, "table_size", v, ds::table_size);
            }
            for e in &r.exempt {
                if let Some(net) = self.with(ctx, "exempt", e, ds::cidr) {
                    self.draft.dns_server.rrl_exempt.push(net);
                }
            }
        }
        if let Some(c) = &d.cookies {
            self.draft.dns_server.cookies = Some(c.enabled.unwrap_or(true));
            if let Some(v) = &c.secret_rotation
                && let Some(t) = self.with("[dns.cookies]", "secret_rotation", v, |t| {
                    duration::parse_suffixed(t).and_then(ds::secret_rotation)
                })
            {
                self.draft.dns_server.cookie_rotation = Some(t);
            }
        }
    }

    /// An integer checked by `f`, reported as `ctx: key: ...` at its line.
    fn checked<T>(
        &mut self,
        ctx: &str,
        key: &str,
        v: &Spanned<i64>,
        f: fn(i128) -> Result<T, String>,
    ) -> Option<T> {
        match f(i128::from(*v.get_ref())) {
            Ok(t) => Some(t),
            Err(e) => {
                self.error(self.at(v), ctx, format!("{key}: {e}"));
                None
            }
        }
    }
}
