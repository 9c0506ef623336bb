//! Local load sources: scraping Prometheus text endpoints for the load
//! figures of the metric-driven methods (LEASTCONNECTION, ...) and of
//! datacenter mode's Service Based selection (CPU, requests, ...).
//!
//! [`start_load_sources`] runs one task per distinct (URL, interval) among
//! the local site's services whose `load_source` is
//! [`LoadSource::Prometheus`]; services that share an exporter share its
//! scrape. Each scrape sends one [`LoadObservation`] per service: its
//! figures, or all `None` with the reason when the scrape failed. Other
//! sources are not here: pushed figures arrive through the REST API, and
//! the monitors' response times (the default `LoadSource::Monitors`) are
//! in the monitors' own [`crate::Observation`]s; the binary combines them.
//!
//! The request is an HTTP/1.1 GET with `Connection: close`, written and
//! read with the HTTP monitor's client ([`sextant_http1`]), over plain HTTP
//! only; responses are read up to [`MAX_SCRAPE`] bytes. The exposition format parser
//! ([`parse_exposition`]) takes untrusted text and never panics.
//!
//! How series become figures:
//!
//! | figure | from the matching series |
//! |---|---|
//! | connections | their sum |
//! | response time | their mean, seconds → µs; for a histogram or summary, Δ`_sum` / Δ`_count` between two scrapes |
//! | bandwidth | their sum, bytes → bits (× 8) |
//! | packets | their sum |
//! | custom load | their mean, rounded and clamped to 0..=100 |
//! | CPU, memory | their mean, taken as percent (not scaled), rounded and clamped to 0..=100 |
//! | requests, new sessions | their sum |
//! | healthy backends | their sum, always as a gauge |
//!
//! A counter (declared `# TYPE name counter`, or named `..._total` with no
//! TYPE line) is turned into its per-second rate between two scrapes, so
//! it gives a figure from the second scrape on; a counter that went down
//! (a restart) counts from zero. Healthy backends are a count at the
//! moment of the scrape, never a rate: their series are read as gauges
//! whatever their type says. CPU and memory are never rescaled: a series
//! in 0..1 reads as 0 or 1 percent.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::{
    HttpUrl, LoadKind, LoadSource, MetricSelector, Model, PrometheusSource, ServiceId,
    ServiceMetrics, SiteKind,
};
use sextant_http1::{Head, Limits, Reader, Request};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc::Sender;
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};

/// The most a scrape reads (headers and body).
pub const MAX_SCRAPE: usize = 8 * 1024 * 1024;

/// The bounds of a scrape's response: [`MAX_SCRAPE`] in all, headers
/// within 64 KiB.
const LIMITS: Limits = Limits {
    max: MAX_SCRAPE,
    max_head: 64 * 1024,
    read_size: 64 * 1024,
};

/// The shortest interval scheduled, so a tiny interval cannot spin.
const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// A scrape may take its interval, but at least this long...
const MIN_SCRAPE_TIME: Duration = Duration::from_secs(1);
/// ... and at most this long.
const MAX_SCRAPE_TIME: Duration = Duration::from_secs(10);

/// The figures of one service from one scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadObservation {
    pub service: ServiceId,
    /// All `None` when the scrape failed; a figure whose series is missing
    /// (or, for a counter, at the first scrape) is `None` too.
    pub metrics: ServiceMetrics,
    /// The configuration generation the source belongs to, so the binary
    /// can drop results that arrive after a reload.
    pub generation: u64,
    /// Operator-readable: `scraped http://...: 12 connections, ...` or why
    /// the scrape failed.
    pub detail: String,
}

/// The running load sources of one configuration generation. Dropping it
/// (or calling [`LoadSources::stop`]) aborts every scrape task.
#[derive(Debug)]
pub struct LoadSources {
    tasks: JoinSet<()>,
    services: usize,
    endpoints: usize,
}

impl LoadSources {
    /// Stops all scrapes now (the same as dropping the handle).
    pub fn stop(self) {
        drop(self);
    }

    /// The number of services being measured.
    pub fn len(&self) -> usize {
        self.services
    }

    pub fn is_empty(&self) -> bool {
        self.services == 0
    }

    /// The number of distinct endpoints scraped (services sharing a URL
    /// and interval share a scrape).
    pub fn endpoints(&self) -> usize {
        self.endpoints
    }
}

impl Drop for LoadSources {
    fn drop(&mut self) {
        self.tasks.abort_all();
    }
}

/// Scrapes the Prometheus load source of every service of the local site
/// (`Site::kind == Local`) at its interval, sending one observation per
/// service and scrape on `tx`, tagged with `generation`. Services of other
/// sites are never scraped (their figures come over metric exchange); with
/// no local site nothing is scraped.
///
/// Must be called inside a tokio runtime. A source whose URL or metric
/// selectors do not parse (a model not built by `sextant-config`) is
/// skipped with a warning. A task ends by itself when the receiver of `tx`
/// is dropped.
pub fn start_load_sources(
    model: Arc<Model>,
    generation: u64,
    tx: Sender<LoadObservation>,
) -> LoadSources {
    let mut groups: Vec<Scraper> = Vec::new();
    let mut services = 0;
    for (id, service) in model.services.iter_enumerated() {
        let LoadSource::Prometheus(source) = &service.load_source else {
            continue;
        };
        let local = model
            .sites
            .get(service.site)
            .is_some_and(|s| s.kind == SiteKind::Local);
        if !local {
            continue;
        }
        let target = match Target::new(id, &service.name, source) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(service = %service.name, "load source not started: {e}");
                continue;
            }
        };
        let url = match HttpUrl::parse(&source.url) {
            Ok(u) => u,
            Err(e) => {
                tracing::warn!(service = %service.name, url = %source.url, "load source not started: {e}");
                continue;
            }
        };
        services += 1;
        match groups
            .iter_mut()
            .find(|g| g.url == url && g.interval == source.interval)
        {
            Some(g) => g.targets.push(target),
            None => groups.push(Scraper {
                url,
                interval: source.interval,
                targets: vec![target],
                generation,
            }),
        }
    }
    let endpoints = groups.len();
    let mut tasks = JoinSet::new();
    for g in groups {
        tasks.spawn(g.run(tx.clone()));
    }
    tracing::debug!(generation, services, endpoints, "load sources started");
    LoadSources {
        tasks,
        services,
        endpoints,
    }
}

/// One endpoint and the services it measures.
struct Scraper {
    url: HttpUrl,
    interval: Duration,
    targets: Vec<Target>,
    generation: u64,
}

impl Scraper {
    async fn run(mut self, tx: Sender<LoadObservation>) {
        // Keyed like a monitor binding of the first service, with a
        // monitor id no binding has.
        let first = self.targets.first().map_or(0, |t| t.service.raw());
        let key = (u64::from(first) << 32) | u64::from(u32::MAX);
        tokio::time::sleep(crate::schedule::jitter_of(key, self.interval)).await;
        let mut ticks = tokio::time::interval(self.interval.max(MIN_INTERVAL));
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let limit = self.interval.clamp(MIN_SCRAPE_TIME, MAX_SCRAPE_TIME);
        loop {
            ticks.tick().await;
            let result = match tokio::time::timeout(limit, fetch(&self.url)).await {
                Ok(r) => r,
                Err(_) => Err(format!("no response within {limit:?}")),
            };
            let now = Instant::now();
            let observations: Vec<LoadObservation> = match result {
                Ok(body) => {
                    let exposition = parse_exposition(&body);
                    self.targets
                        .iter_mut()
                        .map(|t| {
                            let (metrics, notes) = t.read(&exposition, now);
                            LoadObservation {
                                service: t.service,
                                metrics,
                                generation: self.generation,
                                detail: describe(&self.url, &metrics, &notes, exposition.skipped),
                            }
                        })
                        .collect()
                }
                Err(e) => self
                    .targets
                    .iter()
                    .map(|t| LoadObservation {
                        service: t.service,
                        metrics: ServiceMetrics::NONE,
                        generation: self.generation,
                        detail: format!("scrape of {} failed: {e}", self.url),
                    })
                    .collect(),
            };
            for o in observations {
                if tx.send(o).await.is_err() {
                    return; // nobody listens any more
                }
            }
        }
    }
}

/// `scraped URL: 12 connections, responds in 1.2ms; no series for X`.
fn describe(url: &HttpUrl, metrics: &ServiceMetrics, notes: &[String], skipped: usize) -> String {
    let mut out = format!("scraped {url}:");
    let figures: Vec<String> = LoadKind::EVERY
        .iter()
        .filter_map(|k| metrics.get(*k).map(|v| k.format(v)))
        .collect();
    if figures.is_empty() {
        out.push_str(" no figures");
    } else {
        let _ = write!(out, " {}", figures.join(", "));
    }
    for n in notes {
        let _ = write!(out, "; {n}");
    }
    if skipped > 0 {
        let _ = write!(
            out,
            "; {skipped} malformed line{} skipped",
            if skipped == 1 { "" } else { "s" }
        );
    }
    out
}

/// One service's figures from an endpoint, with what counters need to
/// remember between scrapes.
struct Target {
    service: ServiceId,
    figures: Vec<Figure>,
}

struct Figure {
    kind: LoadKind,
    selector: MetricSelector,
    /// The previous reading of a counter, or of a histogram's `_sum` and
    /// `_count`, and when it was taken.
    previous: Option<(Reading, Instant)>,
}

/// What one scrape read for a figure before unit conversion.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reading {
    /// A gauge (or untyped): the aggregated value, usable at once.
    Value(f64),
    /// A counter's sum over the matching series.
    Counter(f64),
    /// A histogram's or summary's `_sum` and `_count` over the matching
    /// series.
    Histogram { sum: f64, count: f64 },
}

impl Target {
    fn new(service: ServiceId, name: &str, source: &PrometheusSource) -> Result<Self, String> {
        let mut figures = Vec::new();
        for kind in LoadKind::EVERY {
            let Some(text) = source.metric(kind) else {
                continue;
            };
            let selector = MetricSelector::parse(text)
                .map_err(|e| format!("service {name}: {} metric: {e}", kind.as_str()))?;
            figures.push(Figure {
                kind,
                selector,
                previous: None,
            });
        }
        Ok(Target { service, figures })
    }

    /// The figures from one scrape, and notes on the missing ones.
    fn read(&mut self, exposition: &Exposition<'_>, now: Instant) -> (ServiceMetrics, Vec<String>) {
        let mut metrics = ServiceMetrics::NONE;
        let mut notes = Vec::new();
        for f in &mut self.figures {
            let Some(reading) = reading(exposition, f.kind, &f.selector) else {
                notes.push(format!("no series matches {}", f.selector));
                f.previous = None;
                continue;
            };
            let value = match reading {
                Reading::Value(v) => Some(v),
                Reading::Counter(v) => match f.previous {
                    Some((Reading::Counter(before), at)) => rate(before, v, now - at),
                    _ => None,
                },
                Reading::Histogram { sum, count } => match f.previous {
                    Some((Reading::Histogram { sum: s0, count: c0 }, _)) if count > c0 => {
                        Some((sum - s0) / (count - c0))
                    }
                    // No new observations (or a reset): the mean so far.
                    Some((Reading::Histogram { .. }, _)) if count > 0.0 => Some(sum / count),
                    _ => None,
                },
            };
            f.previous = match reading {
                Reading::Value(_) => None,
                other => Some((other, now)),
            };
            match value.and_then(|v| convert(f.kind, v)) {
                Some(v) => metrics.set(f.kind, Some(v)),
                None if matches!(reading, Reading::Value(_)) => {
                    notes.push(format!("{} is not a usable number", f.selector));
                }
                None => notes.push(format!("{} needs a second scrape for a rate", f.selector)),
            }
        }
        (metrics, notes)
    }
}

/// Per-second rate of a counter from `before` to `now` over `elapsed`; a
/// counter that went down was reset and counts from zero.
fn rate(before: f64, now: f64, elapsed: Duration) -> Option<f64> {
    let secs = elapsed.as_secs_f64();
    if secs <= 0.0 {
        return None;
    }
    let delta = if now >= before { now - before } else { now };
    Some(delta / secs)
}

/// The figure in its unit (connections, µs, bit/s, packets/s, 0..=100,
/// percent, requests/s, new sessions/s, backends) from a value in the
/// Prometheus unit; `None` for NaN or infinities.
fn convert(kind: LoadKind, v: f64) -> Option<u64> {
    if !v.is_finite() {
        return None;
    }
    let v = match kind {
        LoadKind::ResponseTime => v * 1e6,
        LoadKind::Bandwidth => v * 8.0,
        LoadKind::CustomLoad | LoadKind::Cpu | LoadKind::Memory => v.clamp(0.0, 100.0),
        LoadKind::Connections
        | LoadKind::Packets
        | LoadKind::Requests
        | LoadKind::NewSessions
        | LoadKind::HealthyBackends => v,
    };
    // `as` saturates: negative becomes 0, huge becomes u64::MAX.
    Some(v.round() as u64)
}

/// Aggregates the series matching `selector`.
fn reading(
    exposition: &Exposition<'_>,
    kind: LoadKind,
    selector: &MetricSelector,
) -> Option<Reading> {
    let name = selector.name.as_str();
    let ty = match kind {
        // A count at this moment: a rate of it would mean nothing.
        LoadKind::HealthyBackends => MetricType::Gauge,
        _ => exposition.type_of(name),
    };
    if matches!(ty, MetricType::Histogram | MetricType::Summary) {
        let sum_name = format!("{name}_sum");
        let count_name = format!("{name}_count");
        let (sum, n_sum) = exposition.aggregate(&sum_name, selector);
        let (count, n_count) = exposition.aggregate(&count_name, selector);
        return (n_sum > 0 && n_count > 0).then_some(Reading::Histogram { sum, count });
    }
    let (total, n) = exposition.aggregate(name, selector);
    if n == 0 {
        return None;
    }
    if ty == MetricType::Counter {
        return Some(Reading::Counter(total));
    }
    // Times and percentages average over series; amounts add up.
    let mean = matches!(
        kind,
        LoadKind::ResponseTime | LoadKind::CustomLoad | LoadKind::Cpu | LoadKind::Memory
    );
    Some(Reading::Value(if mean { total / n as f64 } else { total }))
}

// ---------------------------------------------------------------------------
// Fetching

/// GETs `url` and returns the body of a 2xx response as text.
async fn fetch(url: &HttpUrl) -> Result<String, String> {
    let mut stream = TcpStream::connect((url.host.as_str(), url.port))
        .await
        .map_err(|e| format!("connect to {}:{} failed: {e}", url.host, url.port))?;
    let _ = stream.set_nodelay(true);
    stream
        .write_all(&request_bytes(url))
        .await
        .map_err(|e| sextant_http1::Error::Send(e).to_string())?;
    read_scrape(&mut stream).await
}

/// Reads the response to a scrape: the body of a 2xx response as text.
async fn read_scrape<S: AsyncRead + Unpin>(stream: &mut S) -> Result<String, String> {
    let mut reader = Reader::for_response(LIMITS);
    loop {
        let fill = reader
            .fill_async(async |w| stream.read(w).await)
            .await
            .map_err(|e| sextant_http1::Error::Read(e).to_string())?;
        if let Some(response) = reader
            .progress(fill, check_head)
            .map_err(|e| e.to_string())?
        {
            return Ok(response.text());
        }
    }
}

/// The request for `url`.
fn request_bytes(url: &HttpUrl) -> Vec<u8> {
    let port = (url.port != 80).then_some(url.port);
    Request::new(&format!("GET {} HTTP/1.1", url.path))
        .header("Host", sextant_http1::host(&url.host, port))
        .header("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
        .header("Accept-Encoding", "identity")
        .header("Connection", "close")
        .header("User-Agent", "sextant-load")
        .finish(b"")
}

/// Refuses a response that is not 2xx or is compressed, before its body.
fn check_head(head: &Head, bytes: &[u8]) -> Result<(), String> {
    if !(200..300).contains(&head.status) {
        return Err(format!("HTTP {}", head.status));
    }
    for value in sextant_http1::header(bytes, "content-encoding") {
        if !value.eq_ignore_ascii_case("identity") {
            return Err(format!(
                "the response is compressed ({value}); only uncompressed text is read"
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The Prometheus text exposition format

/// The type a `# TYPE` line declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
    Summary,
    Untyped,
}

/// One sample line: `name{label="value",...} value [timestamp]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<'a> {
    pub name: &'a str,
    /// Label values with their escapes (`\\`, `\"`, `\n`) undone.
    pub labels: Labels<'a>,
    pub value: f64,
    /// Milliseconds since the epoch, when given.
    pub timestamp: Option<i64>,
}

/// A parsed exposition: its samples, declared types and how many lines
/// were skipped as malformed.
#[derive(Debug, Clone, Default)]
pub struct Exposition<'a> {
    pub samples: Vec<Sample<'a>>,
    pub types: HashMap<&'a str, MetricType>,
    pub skipped: usize,
}

impl Exposition<'_> {
    /// The declared type of a metric. A name with no TYPE line is a counter
    /// if it ends in `_total` (or its name without `_total` is declared a
    /// counter, as OpenMetrics writes it), else untyped.
    pub fn type_of(&self, name: &str) -> MetricType {
        if let Some(t) = self.types.get(name) {
            return *t;
        }
        match name.strip_suffix("_total") {
            Some(base) => match self.types.get(base) {
                Some(MetricType::Counter) | None => MetricType::Counter,
                Some(other) => *other,
            },
            None => MetricType::Untyped,
        }
    }

    /// The sum of the finite values of the samples named `name` whose
    /// labels match the selector's, and how many there were.
    fn aggregate(&self, name: &str, selector: &MetricSelector) -> (f64, usize) {
        let mut total = 0.0;
        let mut n = 0;
        for s in &self.samples {
            if s.name != name || !s.value.is_finite() {
                continue;
            }
            let matches = selector.labels.iter().all(|(want, value)| {
                s.labels
                    .iter()
                    .any(|(l, v)| *l == want.as_str() && v.as_ref() == value.as_str())
            });
            if matches {
                total += s.value;
                n += 1;
            }
        }
        (total, n)
    }
}

/// Parses the Prometheus text exposition format (version 0.0.4, and the
/// OpenMetrics text that is compatible with it): `# TYPE` lines are
/// recorded, other `#` lines skipped, each sample line read; a line that
/// does not parse is counted in `skipped` and left out. Never panics.
pub fn parse_exposition(text: &str) -> Exposition<'_> {
    let mut out = Exposition::default();
    for line in text.lines() {
        let line = line.trim_matches(|c: char| c == ' ' || c == '\t' || c == '\r');
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            if let Some((name, ty)) = type_line(comment) {
                out.types.insert(name, ty);
            }
            continue;
        }
        match sample_line(line) {
            Some(s) => out.samples.push(s),
            None => out.skipped += 1,
        }
    }
    out
}

/// `TYPE name type` (after the `#`).
fn type_line(comment: &str) -> Option<(&str, MetricType)> {
    let mut words = comment.split_ascii_whitespace();
    if words.next()? != "TYPE" {
        return None;
    }
    let name = words.next()?;
    let ty = match words.next()? {
        "counter" => MetricType::Counter,
        "gauge" => MetricType::Gauge,
        "histogram" | "gaugehistogram" => MetricType::Histogram,
        "summary" => MetricType::Summary,
        _ => MetricType::Untyped,
    };
    Some((name, ty))
}

/// One sample line, or `None` when it is malformed.
fn sample_line(line: &str) -> Option<Sample<'_>> {
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if !sextant_core::load::is_metric_name(name) {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.trim_start_matches([' ', '\t']).strip_prefix('{') {
        let (parsed, after) = label_set(after)?;
        labels = parsed;
        rest = after;
    }
    // The value must be separated from what precedes it.
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let mut words = rest.split_ascii_whitespace();
    let value = parse_value(words.next()?)?;
    let timestamp = match words.next() {
        None => None,
        // An OpenMetrics exemplar or comment after the value.
        Some(w) if w.starts_with('#') => None,
        Some(w) => {
            let ts = parse_timestamp(w)?;
            match words.next() {
                None => Some(ts),
                Some(w) if w.starts_with('#') => Some(ts),
                Some(_) => return None,
            }
        }
    };
    Some(Sample {
        name,
        labels,
        value,
        timestamp,
    })
}

/// A sample's labels: names and unescaped values.
type Labels<'a> = Vec<(&'a str, Cow<'a, str>)>;

/// The labels after `{` up to and including `}`, and the rest.
fn label_set(mut s: &str) -> Option<(Labels<'_>, &str)> {
    let mut labels = Vec::new();
    loop {
        s = s.trim_start_matches([' ', '\t']);
        if let Some(after) = s.strip_prefix('}') {
            return Some((labels, after));
        }
        let end = s
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        let label = &s[..end];
        if !sextant_core::load::is_label_name(label) {
            return None;
        }
        s = s[end..].trim_start_matches([' ', '\t']);
        s = s.strip_prefix('=')?.trim_start_matches([' ', '\t']);
        let (value, after) = label_value(s)?;
        labels.push((label, value));
        s = after.trim_start_matches([' ', '\t']);
        if let Some(after) = s.strip_prefix(',') {
            s = after;
        } else if !s.starts_with('}') {
            return None;
        }
    }
}

/// A `"..."` label value at the start of `s`, unescaped, and the rest.
fn label_value(s: &str) -> Option<(Cow<'_, str>, &str)> {
    let body = s.strip_prefix('"')?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            '\\' => {
                escaped = true;
                break;
            }
            '"' => return Some((Cow::Borrowed(&body[..i]), &body[i + 1..])),
            _ => {}
        }
    }
    if !escaped {
        return None; // no closing quote
    }
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((Cow::Owned(out), &body[i + 1..])),
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

/// A sample value: a float as Go writes it (`1`, `-2.5e-3`, `NaN`,
/// `+Inf`, `-Inf`).
fn parse_value(word: &str) -> Option<f64> {
    match word {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        // Rust also accepts "inf", "infinity", "nan" in any case; the
        // format does not, but they are harmless. Reject hex and the like.
        w if w
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')) =>
        {
            w.parse().ok()
        }
        _ => None,
    }
}

/// A timestamp: integer milliseconds (OpenMetrics writes fractional
/// seconds; those are accepted and converted).
fn parse_timestamp(word: &str) -> Option<i64> {
    if let Ok(ms) = word.parse::<i64>() {
        return Some(ms);
    }
    let secs = parse_value(word)?;
    let ms = secs * 1000.0;
    ms.is_finite().then_some(ms as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_samples_types_and_labels() {
        let text = "# HELP x help text\n# TYPE x counter\nx_total 3\nx{a=\"1\",b=\"q\\\"\\\\\\n\"} 1.5e3 1712345678000\n  y  -2 \n z{ a = \"v\" , } NaN\nbad{ 3\n# EOF\n";
        let e = parse_exposition(text);
        assert_eq!(e.skipped, 1);
        assert_eq!(e.types.get("x"), Some(&MetricType::Counter));
        assert_eq!(e.samples.len(), 4);
        assert_eq!(e.samples[0].name, "x_total");
        assert_eq!(e.samples[1].labels[1], ("b", Cow::Owned("q\"\\\n".into())));
        assert_eq!(e.samples[1].value, 1500.0);
        assert_eq!(e.samples[1].timestamp, Some(1_712_345_678_000));
        assert_eq!(e.samples[2].value, -2.0);
        assert!(e.samples[3].value.is_nan());
        assert_eq!(e.samples[3].labels, vec![("a", Cow::Borrowed("v"))]);
        assert_eq!(e.type_of("x_total"), MetricType::Counter);
        assert_eq!(e.type_of("y"), MetricType::Untyped);
        assert_eq!(e.type_of("w_total"), MetricType::Counter);
    }

    #[test]
    fn rejects_malformed_lines() {
        for line in [
            "x",
            "x{}",
            "x{a=\"1\"}",
            "x{a=\"1\"}3",
            "x{a=1} 3",
            "x{a=\"1\" 3",
            "x{a=\"1\"",
            "x{=\"1\"} 3",
            "x 3 4 5",
            "x 0x10",
            "x 3 notatime",
            "9x 3",
            "{a=\"b\"} 3",
            "x{a=\"1\"b=\"2\"} 3",
            "x{a=\"\\",
        ] {
            assert!(sample_line(line).is_none(), "{line:?}");
        }
        for line in [
            "x 3",
            "x{} 3",
            "x\t3",
            "x 3 # {trace_id=\"a\"} 1",
            "x 3 1712345678.5",
            "x +Inf",
            "x{a=\"}\"} 1",
        ] {
            assert!(sample_line(line).is_some(), "{line:?}");
        }
    }

    #[test]
    fn conversions() {
        assert_eq!(convert(LoadKind::ResponseTime, 0.0012), Some(1200));
        assert_eq!(convert(LoadKind::Bandwidth, 1000.0), Some(8000));
        assert_eq!(convert(LoadKind::CustomLoad, 140.0), Some(100));
        assert_eq!(convert(LoadKind::CustomLoad, -3.0), Some(0));
        assert_eq!(convert(LoadKind::Connections, -3.0), Some(0));
        assert_eq!(convert(LoadKind::Connections, 2.5), Some(3));
        assert_eq!(convert(LoadKind::Packets, f64::NAN), None);
        assert_eq!(convert(LoadKind::Packets, f64::INFINITY), None);
        assert_eq!(convert(LoadKind::Packets, 1e30), Some(u64::MAX));
        assert_eq!(convert(LoadKind::Cpu, 42.4), Some(42));
        assert_eq!(convert(LoadKind::Cpu, 0.35), Some(0), "percent, not scaled");
        assert_eq!(convert(LoadKind::Memory, 130.0), Some(100));
        assert_eq!(convert(LoadKind::Requests, 1500.4), Some(1500));
        assert_eq!(convert(LoadKind::HealthyBackends, 3.0), Some(3));
        assert_eq!(rate(10.0, 30.0, Duration::from_secs(2)), Some(10.0));
        assert_eq!(rate(30.0, 4.0, Duration::from_secs(2)), Some(2.0));
        assert_eq!(rate(1.0, 2.0, Duration::ZERO), None);
    }

    #[test]
    fn requests() {
        let u = HttpUrl::parse("http://[::1]:9101/metrics?x=1").unwrap();
        let r = String::from_utf8(request_bytes(&u)).unwrap();
        assert!(r.starts_with("GET /metrics?x=1 HTTP/1.1\r\nHost: [::1]:9101\r\n"));
        assert!(r.contains("Connection: close\r\n"));
        let u = HttpUrl::parse("http://exporter/").unwrap();
        let r = String::from_utf8(request_bytes(&u)).unwrap();
        assert!(r.contains("\r\nHost: exporter\r\n"));
    }

    #[tokio::test]
    async fn heads() {
        let read = async |wire: &[u8]| read_scrape(&mut &wire[..]).await;
        assert_eq!(
            read(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef").await,
            Ok("abc".to_string())
        );
        assert_eq!(
            read(b"HTTP/1.1 404 Not Found\r\n\r\n").await,
            Err("HTTP 404".to_string())
        );
        assert!(
            read(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n")
                .await
                .unwrap_err()
                .contains("compressed (gzip)")
        );
        assert_eq!(
            read(b"SSH-2.0\r\n\r\n").await,
            Err("malformed HTTP response: bad status line \"SSH-2.0\"".to_string())
        );
        assert_eq!(
            read(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
                .await,
            Ok("abc".to_string())
        );
        assert_eq!(
            read(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc").await,
            Err("connection closed before the end of the body".to_string())
        );
        assert_eq!(
            read(b"").await,
            Err("connection closed without a response".to_string())
        );
    }

    #[tokio::test]
    async fn an_oversize_scrape_fails() {
        let mut wire = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        wire.resize(MAX_SCRAPE + 1, b'#');
        assert_eq!(
            read_scrape(&mut &wire[..]).await,
            Err("the response is larger than 8 MiB".to_string())
        );
        wire.pop();
        assert_eq!(
            read_scrape(&mut &wire[..]).await.map(|b| b.len()),
            Ok(MAX_SCRAPE - 19)
        );
    }
}
