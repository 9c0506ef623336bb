//! Load figures of services, for the metric-driven selection methods
//! (LEASTCONNECTION, LEASTRESPONSETIME, LEASTBANDWIDTH, LEASTPACKETS,
//! CUSTOMLOAD), and the metric selectors that say where a Prometheus
//! endpoint carries them.
//!
//! The core never measures anything: the edges (load sources, the REST
//! push, monitors' response times, metric exchange with other sites) fill a
//! [`ServiceMetrics`] per service and publish them in the snapshot with
//! [`crate::Snapshot::with_metrics`].

use std::fmt;

use crate::model::LbMethod;

/// The load figures of one service. `None` means "not known (yet)": a
/// method that needs a figure some candidate lacks cannot decide and hands
/// over to its backup method.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ServiceMetrics {
    /// Open connections (LEASTCONNECTION).
    pub connections: Option<u64>,
    /// Response time in microseconds (LEASTRESPONSETIME).
    pub response_time_us: Option<u64>,
    /// Bandwidth in bits per second (LEASTBANDWIDTH).
    pub bandwidth_bps: Option<u64>,
    /// Packets per second (LEASTPACKETS).
    pub packets_ps: Option<u64>,
    /// Custom load, 0 to 100 (CUSTOMLOAD).
    pub custom_load: Option<u32>,
    /// The service's (vService's) own CPU and memory use, percent; requests
    /// and new sessions per second; healthy backends behind it: the
    /// figures datacenter mode's Service Based selection ranks by.
    pub cpu_percent: Option<u32>,
    pub memory_percent: Option<u32>,
    pub requests_ps: Option<u64>,
    pub new_sessions_ps: Option<u64>,
    pub healthy_backends: Option<u64>,
}

impl ServiceMetrics {
    /// No figure at all (the same as `Default`, usable in constants).
    pub const NONE: ServiceMetrics = ServiceMetrics {
        connections: None,
        response_time_us: None,
        bandwidth_bps: None,
        packets_ps: None,
        custom_load: None,
        cpu_percent: None,
        memory_percent: None,
        requests_ps: None,
        new_sessions_ps: None,
        healthy_backends: None,
    };

    /// The figure of one kind.
    pub fn get(&self, kind: LoadKind) -> Option<u64> {
        match kind {
            LoadKind::Connections => self.connections,
            LoadKind::ResponseTime => self.response_time_us,
            LoadKind::Bandwidth => self.bandwidth_bps,
            LoadKind::Packets => self.packets_ps,
            LoadKind::CustomLoad => self.custom_load.map(u64::from),
            LoadKind::Cpu => self.cpu_percent.map(u64::from),
            LoadKind::Memory => self.memory_percent.map(u64::from),
            LoadKind::Requests => self.requests_ps,
            LoadKind::NewSessions => self.new_sessions_ps,
            LoadKind::HealthyBackends => self.healthy_backends,
        }
    }

    /// Sets the figure of one kind (a custom load above `u32::MAX` is
    /// capped).
    pub fn set(&mut self, kind: LoadKind, value: Option<u64>) {
        match kind {
            LoadKind::Connections => self.connections = value,
            LoadKind::ResponseTime => self.response_time_us = value,
            LoadKind::Bandwidth => self.bandwidth_bps = value,
            LoadKind::Packets => self.packets_ps = value,
            LoadKind::CustomLoad => {
                self.custom_load = value.map(|v| u32::try_from(v).unwrap_or(u32::MAX))
            }
            LoadKind::Cpu => self.cpu_percent = value.map(|v| v.min(100) as u32),
            LoadKind::Memory => self.memory_percent = value.map(|v| v.min(100) as u32),
            LoadKind::Requests => self.requests_ps = value,
            LoadKind::NewSessions => self.new_sessions_ps = value,
            LoadKind::HealthyBackends => self.healthy_backends = value,
        }
    }

    /// Each figure from `self`, or from `other` where `self` has none: to
    /// combine sources (a scrape, a push, monitors' response times).
    pub fn or(self, other: ServiceMetrics) -> ServiceMetrics {
        ServiceMetrics {
            connections: self.connections.or(other.connections),
            response_time_us: self.response_time_us.or(other.response_time_us),
            bandwidth_bps: self.bandwidth_bps.or(other.bandwidth_bps),
            packets_ps: self.packets_ps.or(other.packets_ps),
            custom_load: self.custom_load.or(other.custom_load),
            cpu_percent: self.cpu_percent.or(other.cpu_percent),
            memory_percent: self.memory_percent.or(other.memory_percent),
            requests_ps: self.requests_ps.or(other.requests_ps),
            new_sessions_ps: self.new_sessions_ps.or(other.new_sessions_ps),
            healthy_backends: self.healthy_backends.or(other.healthy_backends),
        }
    }

    /// Whether no figure is known.
    pub fn is_empty(&self) -> bool {
        *self == ServiceMetrics::NONE
    }
}

/// One kind of load figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoadKind {
    Connections,
    ResponseTime,
    Bandwidth,
    Packets,
    CustomLoad,
    /// The figures only datacenter mode ranks by ([`LoadKind::SERVICE_FIGURES`]).
    Cpu,
    Memory,
    Requests,
    NewSessions,
    HealthyBackends,
}

impl LoadKind {
    /// The figures the selection methods decide by (LEASTCONNECTION ...
    /// CUSTOMLOAD).
    pub const ALL: [LoadKind; 5] = [
        LoadKind::Connections,
        LoadKind::ResponseTime,
        LoadKind::Bandwidth,
        LoadKind::Packets,
        LoadKind::CustomLoad,
    ];

    /// The figures of datacenter mode's Service Based selection that no
    /// selection method uses.
    pub const SERVICE_FIGURES: [LoadKind; 5] = [
        LoadKind::Cpu,
        LoadKind::Memory,
        LoadKind::Requests,
        LoadKind::NewSessions,
        LoadKind::HealthyBackends,
    ];

    /// Every figure: [`LoadKind::ALL`], then [`LoadKind::SERVICE_FIGURES`].
    /// Arrays with one entry per figure (a Prometheus source's selectors)
    /// are indexed like this list, by [`LoadKind::index`].
    pub const EVERY: [LoadKind; 10] = [
        LoadKind::Connections,
        LoadKind::ResponseTime,
        LoadKind::Bandwidth,
        LoadKind::Packets,
        LoadKind::CustomLoad,
        LoadKind::Cpu,
        LoadKind::Memory,
        LoadKind::Requests,
        LoadKind::NewSessions,
        LoadKind::HealthyBackends,
    ];

    /// The position of the figure in [`LoadKind::EVERY`] (the variants are
    /// declared in that order).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The figure a selection method decides by, if it decides by one.
    pub fn of_method(method: LbMethod) -> Option<LoadKind> {
        match method {
            LbMethod::LeastConnection => Some(LoadKind::Connections),
            LbMethod::LeastResponseTime => Some(LoadKind::ResponseTime),
            LbMethod::LeastBandwidth => Some(LoadKind::Bandwidth),
            LbMethod::LeastPackets => Some(LoadKind::Packets),
            LbMethod::CustomLoad => Some(LoadKind::CustomLoad),
            LbMethod::RoundRobin
            | LbMethod::SourceIpHash
            | LbMethod::StaticProximity
            | LbMethod::Rtt => None,
        }
    }

    /// Whether the figure is divided by the binding's weight before
    /// comparing (every LEAST* method; not CUSTOMLOAD).
    pub fn per_weight(self) -> bool {
        !matches!(self, LoadKind::CustomLoad) && LoadKind::of_kind_method(self)
    }

    /// Whether some selection method decides by it.
    fn of_kind_method(self) -> bool {
        LoadKind::ALL.contains(&self)
    }

    /// A short name for messages: `connections`, `response time`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            LoadKind::Connections => "connections",
            LoadKind::ResponseTime => "response time",
            LoadKind::Bandwidth => "bandwidth",
            LoadKind::Packets => "packet rate",
            LoadKind::CustomLoad => "custom load",
            LoadKind::Cpu => "CPU",
            LoadKind::Memory => "memory",
            LoadKind::Requests => "request rate",
            LoadKind::NewSessions => "new-session rate",
            LoadKind::HealthyBackends => "healthy backends",
        }
    }

    /// The figure in words, for traces: `12 connections`, `1.2ms`,
    /// `12.5 Mbit/s`, `500 packets/s`, `custom load 40`.
    pub fn format(self, value: u64) -> String {
        match self {
            LoadKind::Connections => {
                format!("{value} connection{}", if value == 1 { "" } else { "s" })
            }
            LoadKind::ResponseTime => format_micros(value),
            LoadKind::Bandwidth => format_bits(value),
            LoadKind::Packets => format!("{value} packets/s"),
            LoadKind::CustomLoad => format!("custom load {value}"),
            LoadKind::Cpu => format!("CPU {value}%"),
            LoadKind::Memory => format!("memory {value}%"),
            LoadKind::Requests => format!("{value} requests/s"),
            LoadKind::NewSessions => format!("{value} new sessions/s"),
            LoadKind::HealthyBackends => format!("{value} healthy backends"),
        }
    }

    /// A service's figure as a predicate for traces: `has 12
    /// connections`, `responds in 1.2ms`, `uses 12.5 Mbit/s`, `handles 500
    /// packets/s`, `has custom load 40`; `None` says which figure is
    /// missing.
    pub fn phrase(self, value: Option<u64>) -> String {
        match (self, value) {
            (LoadKind::ResponseTime, Some(v)) => format!("responds in {}", self.format(v)),
            (LoadKind::Bandwidth, Some(v)) => format!("uses {}", self.format(v)),
            (LoadKind::Packets, Some(v)) => format!("handles {}", self.format(v)),
            (_, Some(v)) => format!("has {}", self.format(v)),
            (LoadKind::Connections, None) => "has no connection count yet".to_string(),
            (LoadKind::ResponseTime, None) => "has no response time yet".to_string(),
            (LoadKind::Bandwidth, None) => "has no bandwidth figure yet".to_string(),
            (LoadKind::Packets, None) => "has no packet rate yet".to_string(),
            (LoadKind::CustomLoad, None) => "has no custom load yet".to_string(),
            (k, None) => format!("has no {k} figure yet"),
        }
    }

    /// `figure / weight` in words: `6`, `2.5` (connections, packets/s),
    /// `600µs`, `1.2 Mbit/s` (whole units).
    pub fn per_unit(self, figure: u64, weight: u32) -> String {
        let weight = u64::from(weight.max(1));
        match self {
            LoadKind::ResponseTime | LoadKind::Bandwidth => self.format(figure / weight),
            _ if figure.is_multiple_of(weight) => (figure / weight).to_string(),
            _ => {
                let text = format!("{:.2}", figure as f64 / weight as f64);
                text.trim_end_matches('0').to_string()
            }
        }
    }
}

impl fmt::Display for LoadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `850µs`, `12.3ms`, `1.25s`.
fn format_micros(us: u64) -> String {
    if us < 1_000 {
        format!("{us}µs")
    } else if us < 1_000_000 {
        format!("{:.1}ms", us as f64 / 1e3)
    } else {
        format!("{:.2}s", us as f64 / 1e6)
    }
}

/// `900 bit/s`, `12.5 kbit/s`, `3.2 Mbit/s`, `1.1 Gbit/s`.
fn format_bits(bps: u64) -> String {
    const UNITS: [(f64, &str); 3] = [(1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")];
    let v = bps as f64;
    for (scale, unit) in UNITS {
        if v >= scale {
            return format!("{:.1} {unit}", v / scale);
        }
    }
    format!("{bps} bit/s")
}

/// Which Prometheus series carries a figure: a metric name and optional
/// label matchers, written as in PromQL: `haproxy_backend_current_sessions`
/// or `haproxy_backend_current_sessions{proxy="web",instance="a"}`.
///
/// A series matches when it has the name and every label named here with
/// exactly that value; labels not named here may have any value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricSelector {
    pub name: String,
    pub labels: Vec<(String, String)>,
}

impl MetricSelector {
    /// Parses `name` or `name{label="value", ...}`. Only equality matchers
    /// are supported. Label values use the exposition format's escapes
    /// (`\\`, `\"`, `\n`).
    pub fn parse(text: &str) -> Result<MetricSelector, String> {
        let text = text.trim();
        let name_end = text
            .find(|c: char| c == '{' || c.is_whitespace())
            .unwrap_or(text.len());
        let name = &text[..name_end];
        if !is_metric_name(name) {
            return Err(format!(
                "\"{name}\" is not a metric name (letters, digits, _ and :, not starting with a digit)"
            ));
        }
        let rest = text[name_end..].trim_start();
        if rest.is_empty() {
            return Ok(MetricSelector {
                name: name.to_string(),
                labels: Vec::new(),
            });
        }
        let Some(body) = rest.strip_prefix('{') else {
            return Err(format!(
                "unexpected \"{rest}\" after the metric name; expected {{label=\"value\", ...}}"
            ));
        };
        let mut labels: Vec<(String, String)> = Vec::new();
        let mut s = body.trim_start();
        loop {
            if let Some(after) = s.strip_prefix('}') {
                if !after.trim().is_empty() {
                    return Err(format!(
                        "unexpected \"{}\" after the closing }}",
                        after.trim()
                    ));
                }
                break;
            }
            if s.is_empty() {
                return Err("missing closing }".to_string());
            }
            let label_end = s
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(s.len());
            let label = &s[..label_end];
            if !is_label_name(label) {
                return Err(format!(
                    "expected a label name at \"{}\"",
                    s.chars().take(20).collect::<String>()
                ));
            }
            s = s[label_end..].trim_start();
            if s.starts_with("!=") || s.starts_with("=~") || s.starts_with("!~") {
                return Err(format!(
                    "label {label}: only equality matchers (label=\"value\") are supported"
                ));
            }
            let Some(after) = s.strip_prefix('=') else {
                return Err(format!("label {label}: expected =\"value\""));
            };
            let (value, after) = quoted(after.trim_start())
                .ok_or_else(|| format!("label {label}: expected a double-quoted value"))?;
            if labels.iter().any(|(l, _)| l == label) {
                return Err(format!("label {label} is given twice"));
            }
            labels.push((label.to_string(), value));
            s = after.trim_start();
            if let Some(after) = s.strip_prefix(',') {
                s = after.trim_start();
            } else if !s.starts_with('}') {
                return Err(format!("label {label}: expected , or }} after the value"));
            }
        }
        Ok(MetricSelector {
            name: name.to_string(),
            labels,
        })
    }

    /// Whether a series with this name and these labels matches.
    pub fn matches<'a>(
        &self,
        name: &str,
        labels: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
    ) -> bool {
        name == self.name
            && self.labels.iter().all(|(want, value)| {
                labels
                    .clone()
                    .into_iter()
                    .any(|(l, v)| l == want && v == value)
            })
    }
}

impl fmt::Display for MetricSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if self.labels.is_empty() {
            return Ok(());
        }
        f.write_str("{")?;
        for (i, (l, v)) in self.labels.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let escaped = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            write!(f, "{l}=\"{escaped}\"")?;
        }
        f.write_str("}")
    }
}

/// A plain-HTTP URL as load sources use it: `http://HOST[:PORT][/PATH]`.
/// `HOST` is an IPv4 address, a bracketed IPv6 address or a DNS name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// As written, without brackets for IPv6.
    pub host: String,
    /// 80 unless given.
    pub port: u16,
    /// The path and query, starting with `/` (`/` when the URL has none).
    pub path: String,
}

impl HttpUrl {
    /// Parses and checks a URL; only `http` is supported.
    pub fn parse(text: &str) -> Result<HttpUrl, String> {
        let text = text.trim();
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(format!(
                "\"{text}\" is not a URL; expected http://HOST[:PORT]/PATH"
            ));
        };
        if scheme.eq_ignore_ascii_case("https") {
            return Err(
                "https is not supported: load sources are scraped over plain HTTP (expose the exporter on http:// inside the site)"
                    .to_string(),
            );
        }
        if !scheme.eq_ignore_ascii_case("http") {
            return Err(format!(
                "unsupported scheme \"{scheme}\"; expected http://HOST[:PORT]/PATH"
            ));
        }
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        if path.contains('#') {
            return Err("a URL fragment (#...) has no meaning here; remove it".to_string());
        }
        if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("the path contains spaces or control characters".to_string());
        }
        if authority.contains('@') {
            return Err("user names and passwords in the URL are not supported".to_string());
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let Some((host, after)) = v6.split_once(']') else {
                return Err("missing ] after the IPv6 address".to_string());
            };
            if host.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(format!("\"{host}\" is not an IPv6 address"));
            }
            let port = match after {
                "" => None,
                p => Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| format!("unexpected \"{p}\" after the IPv6 address"))?,
                ),
            };
            (host, port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        let port = match port {
            None => 80,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(format!("port \"{p}\" is not a number from 1 to 65535")),
            },
        };
        if host.is_empty() {
            return Err("the URL has no host".to_string());
        }
        let name_ok = host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
        if !name_ok && host.parse::<std::net::IpAddr>().is_err() {
            return Err(format!(
                "\"{host}\" is neither an IP address nor a host name"
            ));
        }
        Ok(HttpUrl {
            host: host.to_string(),
            port,
            path,
        })
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "http://[{}]:{}{}", self.host, self.port, self.path)
        } else {
            write!(f, "http://{}:{}{}", self.host, self.port, self.path)
        }
    }
}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
pub fn is_metric_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// `[a-zA-Z_][a-zA-Z0-9_]*`.
pub fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A `"..."` string at the start of `s` with `\\`, `\"`, `\n` unescaped
/// (any other backslash is kept), and the rest after the closing quote.
fn quoted(s: &str) -> Option<(String, &str)> {
    let body = s.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, '\\')) => out.push('\\'),
                Some((_, '"')) => out.push('"'),
                Some((_, other)) => {
                    out.push('\\');
                    out.push(other);
                }
                None => return None,
            },
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors() {
        let s = MetricSelector::parse("haproxy_backend_current_sessions").unwrap();
        assert_eq!(s.name, "haproxy_backend_current_sessions");
        assert!(s.labels.is_empty());
        let s =
            MetricSelector::parse(r#" x:y_z{ proxy = "web" , instance="a\"b\\c\n",} "#).unwrap();
        assert_eq!(
            s.labels,
            vec![
                ("proxy".to_string(), "web".to_string()),
                ("instance".to_string(), "a\"b\\c\n".to_string())
            ]
        );
        assert_eq!(
            MetricSelector::parse(&s.to_string()).unwrap(),
            s,
            "Display round-trips"
        );
        assert!(s.matches(
            "x:y_z",
            [("instance", "a\"b\\c\n"), ("proxy", "web"), ("z", "1")]
        ));
        assert!(!s.matches("x:y_z", [("proxy", "web")]));
        assert!(!s.matches("x", [("instance", "a\"b\\c\n"), ("proxy", "web")]));
        for bad in [
            "",
            "1abc",
            "a{",
            "a{b}",
            "a{b=c}",
            "a{b!=\"c\"}",
            "a{b=\"c\"",
            "a{b=\"c\"} x",
            "a b",
            "a{b=\"c\" d=\"e\"}",
            "a{b=\"c\",b=\"d\"}",
        ] {
            assert!(MetricSelector::parse(bad).is_err(), "{bad:?}");
        }
        assert!(MetricSelector::parse("a{}").unwrap().labels.is_empty());
    }

    #[test]
    fn urls() {
        let u = HttpUrl::parse("http://127.0.0.1:9101/metrics").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 9101, "/metrics")
        );
        let u = HttpUrl::parse("HTTP://exporter.local").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("exporter.local", 80, "/")
        );
        let u = HttpUrl::parse("http://[::1]:8404/stats;csv?x=1").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("::1", 8404, "/stats;csv?x=1")
        );
        assert_eq!(u.to_string(), "http://[::1]:8404/stats;csv?x=1");
        let u = HttpUrl::parse("http://h?x").unwrap();
        assert_eq!(u.path, "/?x");
        for (bad, why) in [
            ("https://h/", "https is not supported"),
            ("ftp://h/", "unsupported scheme"),
            ("h:80/metrics", "not a URL"),
            ("http:///metrics", "no host"),
            ("http://h:0/", "port"),
            ("http://h:99999/", "port"),
            ("http://u:p@h/", "passwords"),
            ("http://[::1/", "missing ]"),
            ("http://[zz]/", "not an IPv6"),
            ("http://a b/", "neither"),
            ("http://h/x#y", "fragment"),
            ("http://h/x y", "spaces"),
        ] {
            let e = HttpUrl::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn figures_read_well() {
        assert_eq!(LoadKind::Connections.format(1), "1 connection");
        assert_eq!(LoadKind::Connections.format(12), "12 connections");
        assert_eq!(LoadKind::ResponseTime.format(850), "850µs");
        assert_eq!(LoadKind::ResponseTime.format(12_345), "12.3ms");
        assert_eq!(LoadKind::ResponseTime.format(1_250_000), "1.25s");
        assert_eq!(LoadKind::Bandwidth.format(900), "900 bit/s");
        assert_eq!(LoadKind::Bandwidth.format(12_500_000), "12.5 Mbit/s");
        assert_eq!(LoadKind::Packets.format(500), "500 packets/s");
        assert_eq!(LoadKind::CustomLoad.format(40), "custom load 40");
        assert_eq!(LoadKind::Connections.per_unit(10, 2), "5");
        assert_eq!(LoadKind::Connections.per_unit(5, 2), "2.5");
        assert_eq!(LoadKind::Packets.per_unit(10, 3), "3.33");
        assert_eq!(LoadKind::ResponseTime.per_unit(3_000, 2), "1.5ms");
        assert_eq!(
            LoadKind::Connections.phrase(None),
            "has no connection count yet"
        );
        assert_eq!(
            LoadKind::ResponseTime.phrase(Some(900)),
            "responds in 900µs"
        );
    }

    #[test]
    fn every_kind_once_in_index_order() {
        for (i, k) in LoadKind::EVERY.iter().enumerate() {
            assert_eq!(k.index(), i, "{k}");
        }
        let combined: Vec<LoadKind> = LoadKind::ALL
            .into_iter()
            .chain(LoadKind::SERVICE_FIGURES)
            .collect();
        assert_eq!(combined, LoadKind::EVERY);
    }

    #[test]
    fn get_set_or() {
        let mut m = ServiceMetrics::default();
        assert!(m.is_empty());
        for (i, k) in LoadKind::ALL.iter().enumerate() {
            m.set(*k, Some(i as u64 + 1));
        }
        for (i, k) in LoadKind::ALL.iter().enumerate() {
            assert_eq!(m.get(*k), Some(i as u64 + 1));
        }
        let partial = ServiceMetrics {
            connections: Some(7),
            ..ServiceMetrics::NONE
        };
        assert_eq!(partial.or(m).connections, Some(7));
        assert_eq!(partial.or(m).custom_load, Some(5));
        m.set(LoadKind::CustomLoad, Some(u64::MAX));
        assert_eq!(m.custom_load, Some(u32::MAX));
    }
}

/// A site's own figures as a whole (its node's CPU, memory and bandwidth),
/// as the site measured or an operator set them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SiteFigures {
    pub cpu_percent: Option<f64>,
    pub memory_percent: Option<f64>,
    /// Bytes per second through the node's network interfaces.
    pub bandwidth_bytes_ps: Option<f64>,
}

impl SiteFigures {
    /// Whether any figure is known.
    pub fn is_known(&self) -> bool {
        self.cpu_percent.is_some()
            || self.memory_percent.is_some()
            || self.bandwidth_bytes_ps.is_some()
    }
}
