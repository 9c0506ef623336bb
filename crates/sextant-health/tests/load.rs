//! Load sources: real scrapes of a small HTTP exporter on 127.0.0.1, and
//! the exposition parser against hostile text.
//!
//! The scrape schedule and timeouts are tokio timers, so the scrape tests
//! run on paused time: "no scrape after stop" and "a silent exporter times
//! out" are virtual time, not the machine's speed.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use sextant_core::{
    LoadKind, LoadSource, Model, PrometheusSource, Service, ServiceId, ServiceMetrics, Site, SiteId,
};
use sextant_health::load::{MetricType, parse_exposition};
use sextant_health::{LoadObservation, start_load_sources};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// An exporter whose whole HTTP response can be changed between scrapes.
struct Exporter {
    addr: SocketAddr,
    response: Arc<Mutex<Vec<u8>>>,
    seen: common::Seen,
}

impl Exporter {
    async fn start() -> Exporter {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let response: Arc<Mutex<Vec<u8>>> = Arc::default();
        let seen: common::Seen = Arc::default();
        let (r, s) = (response.clone(), seen.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (r, s) = (r.clone(), s.clone());
                tokio::spawn(async move {
                    let body = r.lock().unwrap().clone();
                    common::answer(&mut stream, &body, &s).await;
                });
            }
        });
        Exporter {
            addr,
            response,
            seen,
        }
    }

    /// Serves `text` with a Content-Length.
    fn serve(&self, text: &str) {
        *self.response.lock().unwrap() = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\r\n{text}",
            text.len()
        )
        .into_bytes();
    }

    fn serve_raw(&self, raw: &str) {
        *self.response.lock().unwrap() = raw.as_bytes().to_vec();
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn requests(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

fn lo() -> IpAddr {
    "127.0.0.1".parse().unwrap()
}

fn service(name: &str, site: SiteId, load_source: LoadSource) -> Service {
    Service {
        site,
        load_source,
        ..sextant_test_support::model::service(name, lo())
    }
}

/// A Prometheus source with these figures' selectors.
fn prometheus(url: String, interval_ms: u64, metrics: &[(LoadKind, &str)]) -> PrometheusSource {
    let mut source = PrometheusSource {
        url,
        interval: Duration::from_millis(interval_ms),
        metrics: Default::default(),
    };
    for (kind, selector) in metrics {
        source.metrics[kind.index()] = Some(selector.to_string());
    }
    source
}

/// Sites: 0 is local, 1 remote.
fn model(services: Vec<Service>) -> Model {
    let mut m = Model {
        sites: vec![
            Site::new("here", "10.0.0.1".parse().unwrap()),
            Site::new("there", "10.0.0.2".parse().unwrap()),
        ]
        .into(),
        services: services.into(),
        ..Model::default()
    };
    m.set_local_site(SiteId::new(0));
    m
}

async fn next(rx: &mut mpsc::Receiver<LoadObservation>) -> LoadObservation {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("an observation within 5s")
        .expect("channel open")
}

/// The next observation of `service`.
async fn next_of(rx: &mut mpsc::Receiver<LoadObservation>, service: ServiceId) -> LoadObservation {
    loop {
        let o = next(rx).await;
        if o.service == service {
            return o;
        }
    }
}

const HAPROXY: &str = r#"# HELP haproxy_backend_current_sessions Current number of active sessions.
# TYPE haproxy_backend_current_sessions gauge
haproxy_backend_current_sessions{proxy="web"} 12
haproxy_backend_current_sessions{proxy="api"} 4
haproxy_backend_current_sessions{proxy="api",extra="x"} 3
# TYPE haproxy_backend_response_time_average_seconds gauge
haproxy_backend_response_time_average_seconds{proxy="web"} 0.0125
haproxy_backend_response_time_average_seconds{proxy="api"} 0.002
haproxy_backend_response_time_average_seconds{proxy="api",extra="x"} 0.004
# TYPE haproxy_backend_bytes_out_total counter
haproxy_backend_bytes_out_total{proxy="web"} 1000
# TYPE custom_load gauge
custom_load{svc="web"} 140
"#;

#[tokio::test(start_paused = true)]
async fn scrapes_local_services_and_shares_an_endpoint() {
    let exporter = Exporter::start().await;
    exporter.serve(HAPROXY);
    let web = prometheus(
        exporter.url("/metrics"),
        100,
        &[
            (
                LoadKind::Connections,
                r#"haproxy_backend_current_sessions{proxy="web"}"#,
            ),
            (
                LoadKind::ResponseTime,
                r#"haproxy_backend_response_time_average_seconds{proxy="web"}"#,
            ),
            (
                LoadKind::Bandwidth,
                r#"haproxy_backend_bytes_out_total{proxy="web"}"#,
            ),
            (LoadKind::CustomLoad, r#"custom_load{svc="web"}"#),
            (LoadKind::Packets, "no_such_metric"),
        ],
    );
    let api = prometheus(
        exporter.url("/metrics"),
        100,
        &[
            (
                LoadKind::Connections,
                r#"haproxy_backend_current_sessions{proxy="api"}"#,
            ),
            (
                LoadKind::ResponseTime,
                r#"haproxy_backend_response_time_average_seconds{proxy="api"}"#,
            ),
        ],
    );
    let remote = prometheus(
        exporter.url("/remote"),
        100,
        &[(LoadKind::Connections, "haproxy_backend_current_sessions")],
    );
    let m = model(vec![
        service("web", SiteId::new(0), LoadSource::Prometheus(Box::new(web))),
        service("api", SiteId::new(0), LoadSource::Prometheus(Box::new(api))),
        service("pushed", SiteId::new(0), LoadSource::Push),
        service(
            "remote",
            SiteId::new(1),
            LoadSource::Prometheus(Box::new(remote)),
        ),
    ]);

    let (tx, mut rx) = mpsc::channel(64);
    let sources = start_load_sources(Arc::new(m), 9, tx);
    assert_eq!(sources.len(), 2);
    assert_eq!(sources.endpoints(), 1);

    let first = next_of(&mut rx, ServiceId::new(0)).await;
    assert_eq!(first.generation, 9);
    assert_eq!(
        first.metrics,
        ServiceMetrics {
            connections: Some(12),
            response_time_us: Some(12_500),
            // A byte counter: a rate from the second scrape on.
            bandwidth_bps: None,
            packets_ps: None,
            custom_load: Some(100),
            ..ServiceMetrics::NONE
        }
    );
    assert!(
        first.detail.starts_with(&format!(
            "scraped http://{}/metrics: 12 connections, 12.5ms, custom load 100",
            exporter.addr
        )),
        "{}",
        first.detail
    );
    assert!(
        first.detail.contains("no series matches no_such_metric"),
        "{}",
        first.detail
    );
    assert!(
        first.detail.contains("needs a second scrape"),
        "{}",
        first.detail
    );

    // api: the sum of its two connection series, the mean of its times.
    let api = next_of(&mut rx, ServiceId::new(1)).await;
    assert_eq!(api.metrics.connections, Some(7));
    assert_eq!(api.metrics.response_time_us, Some(3_000));

    // The counter grows by 1000 bytes between scrapes 100 ms apart: about
    // 10 kB/s, 80 kbit/s.
    exporter.serve(&HAPROXY.replace(
        "bytes_out_total{proxy=\"web\"} 1000",
        "bytes_out_total{proxy=\"web\"} 2000",
    ));
    let mut bps = None;
    for _ in 0..5 {
        let o = next_of(&mut rx, ServiceId::new(0)).await;
        if let Some(b) = o.metrics.bandwidth_bps
            && b > 0
        {
            bps = Some(b);
            break;
        }
    }
    let bps = bps.expect("a bandwidth rate");
    assert!((1_000..=1_000_000).contains(&bps), "{bps}");

    // One scrape per interval serves both services; the remote service's
    // URL is never asked for.
    let seen = exporter.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .all(|r| r.starts_with("GET /metrics HTTP/1.1\r\n"))
    );
    drop(sources);
}

/// The figures of datacenter mode's Service Based selection.
const SERVICE_FIGURES: &str = r#"# TYPE vservice_cpu_percent gauge
vservice_cpu_percent{svc="web",core="0"} 40
vservice_cpu_percent{svc="web",core="1"} 60
vservice_cpu_percent{svc="api",core="0"} 99
vservice_memory_percent{svc="web"} 73.6
# TYPE haproxy_backend_http_requests_total counter
haproxy_backend_http_requests_total{proxy="web"} 1000
# TYPE haproxy_backend_current_session_rate gauge
haproxy_backend_current_session_rate{proxy="web"} 25
healthy_backends_total{svc="web",pool="a"} 2
healthy_backends_total{svc="web",pool="b"} 1
"#;

#[tokio::test(start_paused = true)]
async fn scrapes_the_service_based_figures() {
    let exporter = Exporter::start().await;
    exporter.serve(SERVICE_FIGURES);
    let src = prometheus(
        exporter.url("/metrics"),
        100,
        &[
            (LoadKind::Cpu, r#"vservice_cpu_percent{svc="web"}"#),
            (LoadKind::Memory, "vservice_memory_percent"),
            (
                LoadKind::Requests,
                r#"haproxy_backend_http_requests_total{proxy="web"}"#,
            ),
            (
                LoadKind::NewSessions,
                r#"haproxy_backend_current_session_rate{proxy="web"}"#,
            ),
            (
                LoadKind::HealthyBackends,
                r#"healthy_backends_total{svc="web"}"#,
            ),
        ],
    );
    let m = model(vec![service(
        "web",
        SiteId::new(0),
        LoadSource::Prometheus(Box::new(src)),
    )]);
    let (tx, mut rx) = mpsc::channel(64);
    let _sources = start_load_sources(Arc::new(m), 1, tx);

    let first = next(&mut rx).await;
    assert_eq!(
        first.metrics,
        ServiceMetrics {
            // The mean of the two cores' series, as percent.
            cpu_percent: Some(50),
            memory_percent: Some(74),
            // A counter: a rate from the second scrape on.
            requests_ps: None,
            // A gauge: as is.
            new_sessions_ps: Some(25),
            // The sum of the pools, a gauge although named `_total`.
            healthy_backends: Some(3),
            ..ServiceMetrics::NONE
        }
    );
    assert_eq!(
        first.detail,
        format!(
            "scraped http://{}/metrics: CPU 50%, memory 74%, 25 new sessions/s, 3 healthy backends; haproxy_backend_http_requests_total{{proxy=\"web\"}} needs a second scrape for a rate",
            exporter.addr
        )
    );

    // 50 more requests between scrapes 100 ms apart: about 500/s. The
    // healthy backends stay 3, not a rate of 0.
    exporter.serve(&SERVICE_FIGURES.replace(
        "requests_total{proxy=\"web\"} 1000",
        "requests_total{proxy=\"web\"} 1050",
    ));
    let second = loop {
        let o = next(&mut rx).await;
        if o.metrics.requests_ps.is_some_and(|r| r > 0) {
            break o;
        }
    };
    let rps = second.metrics.requests_ps.unwrap_or_default();
    assert!((50..=5_000).contains(&rps), "{rps}");
    assert_eq!(second.metrics.healthy_backends, Some(3));
    assert_eq!(second.metrics.cpu_percent, Some(50));
    assert!(
        second.detail.contains(" requests/s, 25 new sessions/s"),
        "{}",
        second.detail
    );
}

#[tokio::test(start_paused = true)]
async fn failed_scrapes_report_no_figures() {
    let exporter = Exporter::start().await;
    exporter.serve_raw("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap()
    };
    let a = prometheus(
        exporter.url("/metrics"),
        50,
        &[(LoadKind::Connections, "c")],
    );
    let b = prometheus(
        format!("http://{closed}/metrics"),
        50,
        &[(LoadKind::Connections, "c")],
    );
    let m = model(vec![
        service("a", SiteId::new(0), LoadSource::Prometheus(Box::new(a))),
        service("b", SiteId::new(0), LoadSource::Prometheus(Box::new(b))),
    ]);
    let (tx, mut rx) = mpsc::channel(64);
    let _sources = start_load_sources(Arc::new(m), 1, tx);

    let o = next_of(&mut rx, ServiceId::new(0)).await;
    assert!(o.metrics.is_empty());
    assert_eq!(
        o.detail,
        format!(
            "scrape of http://{}/metrics failed: HTTP 503",
            exporter.addr
        )
    );
    let o = next_of(&mut rx, ServiceId::new(1)).await;
    assert!(o.metrics.is_empty());
    assert!(
        o.detail.contains("failed: connect to 127.0.0.1") && o.detail.contains("refused"),
        "{}",
        o.detail
    );

    // The exporter recovers: figures come back.
    exporter.serve("c 5\n");
    loop {
        let o = next_of(&mut rx, ServiceId::new(0)).await;
        if o.metrics.connections == Some(5) {
            break;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn chunked_bodies_histograms_and_garbage() {
    let exporter = Exporter::start().await;
    let text = "# TYPE rt histogram\nrt_bucket{le=\"+Inf\"} 10\nrt_sum 0.5\nrt_count 10\n\u{0}\u{fffd} garbage line\npk 42\n";
    let chunked = format!(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{}\r\n{:x}\r\n{}\r\n0\r\n\r\n",
        20,
        &text[..20],
        text.len() - 20,
        &text[20..]
    );
    exporter.serve_raw(&chunked);
    let src = prometheus(
        exporter.url("/"),
        80,
        &[(LoadKind::ResponseTime, "rt"), (LoadKind::Packets, "pk")],
    );
    let m = model(vec![service(
        "s",
        SiteId::new(0),
        LoadSource::Prometheus(Box::new(src)),
    )]);
    let (tx, mut rx) = mpsc::channel(64);
    let _sources = start_load_sources(Arc::new(m), 1, tx);

    let o = next(&mut rx).await;
    assert_eq!(o.metrics.packets_ps, Some(42));
    // A histogram: the first scrape has no interval yet.
    assert_eq!(o.metrics.response_time_us, None);
    assert!(
        o.detail.contains("1 malformed line skipped"),
        "{}",
        o.detail
    );
    // Second scrape, no new observations: the mean so far, 50 ms.
    let o = next(&mut rx).await;
    assert_eq!(o.metrics.response_time_us, Some(50_000));
    // Ten new observations taking 2 s in all: 200 ms each.
    let text2 = text
        .replace("rt_sum 0.5", "rt_sum 2.5")
        .replace("rt_count 10", "rt_count 20");
    exporter.serve(&text2);
    loop {
        let o = next(&mut rx).await;
        if o.metrics.response_time_us == Some(200_000) {
            break;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn only_the_local_site_is_scraped_and_stop_stops() {
    let exporter = Exporter::start().await;
    exporter.serve("c 1\n");
    let src = prometheus(exporter.url("/"), 20, &[(LoadKind::Connections, "c")]);
    // Remote only: nothing to do.
    let m = model(vec![service(
        "r",
        SiteId::new(1),
        LoadSource::Prometheus(Box::new(src.clone())),
    )]);
    let (tx, _rx) = mpsc::channel(64);
    let sources = start_load_sources(Arc::new(m), 1, tx);
    assert!(sources.is_empty());
    assert_eq!(sources.endpoints(), 0);
    // No local site at all: nothing either.
    let mut m = model(vec![service(
        "l",
        SiteId::new(0),
        LoadSource::Prometheus(Box::new(src.clone())),
    )]);
    m.local_site = None;
    m.sites[SiteId::new(0)].kind = sextant_core::SiteKind::Remote;
    let (tx, _rx) = mpsc::channel(64);
    assert!(start_load_sources(Arc::new(m), 1, tx).is_empty());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(exporter.requests(), 0);

    // Local: scraped until stopped.
    let m = model(vec![service(
        "l",
        SiteId::new(0),
        LoadSource::Prometheus(Box::new(src)),
    )]);
    let (tx, mut rx) = mpsc::channel(64);
    let sources = start_load_sources(Arc::new(m), 1, tx);
    next(&mut rx).await;
    next(&mut rx).await;
    sources.stop();
    tokio::time::sleep(Duration::from_millis(60)).await;
    let after_stop = exporter.requests();
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(exporter.requests(), after_stop);
}

#[tokio::test(start_paused = true)]
async fn a_silent_exporter_times_out() {
    let addr = common::silent_tcp_server().await;
    let src = prometheus(
        format!("http://{addr}/"),
        20,
        &[(LoadKind::Connections, "c")],
    );
    let m = model(vec![service(
        "s",
        SiteId::new(0),
        LoadSource::Prometheus(Box::new(src)),
    )]);
    let (tx, mut rx) = mpsc::channel(64);
    let _sources = start_load_sources(Arc::new(m), 1, tx);
    let o = next(&mut rx).await;
    assert!(o.metrics.is_empty());
    assert!(
        o.detail.ends_with("failed: no response within 1s"),
        "{}",
        o.detail
    );
}

#[test]
fn parser_reads_real_exporter_text() {
    // As nginx-prometheus-exporter and Envoy write it.
    let text = "# HELP nginx_connections_active Active client connections\n# TYPE nginx_connections_active gauge\nnginx_connections_active 3\n# TYPE envoy_cluster_upstream_rq_time histogram\nenvoy_cluster_upstream_rq_time_bucket{envoy_cluster_name=\"web\",le=\"0.5\"} 2\nenvoy_cluster_upstream_rq_time_sum{envoy_cluster_name=\"web\"} 12.5\nenvoy_cluster_upstream_rq_time_count{envoy_cluster_name=\"web\"} 4\n";
    let e = parse_exposition(text);
    assert_eq!(e.skipped, 0);
    assert_eq!(e.samples.len(), 4);
    assert_eq!(
        e.type_of("envoy_cluster_upstream_rq_time"),
        MetricType::Histogram
    );
    assert_eq!(e.type_of("nginx_connections_active"), MetricType::Gauge);
}

/// Fragments of exposition text, so that random lines get deep into the
/// parser rather than failing at the first character.
const FRAGMENTS: &[&str] = &[
    "x",
    "x_total",
    "{",
    "}",
    "a",
    "=",
    "\"",
    "\\",
    "\\\"",
    "\\n",
    ",",
    " ",
    "\t",
    "1",
    "-2.5e3",
    "NaN",
    "+Inf",
    "-Inf",
    "0x1",
    "#",
    "# TYPE",
    " counter",
    " histogram",
    "\n",
    "\r\n",
    "é",
    "\u{0}",
    "1712345678000",
    "_sum",
    "_count",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn parser_never_panics_on_arbitrary_text(text in "(?s).{0,600}") {
        let e = parse_exposition(&text);
        prop_assert!(e.samples.len() + e.skipped <= text.lines().count());
    }

    #[test]
    fn parser_never_panics_on_exposition_like_text(parts in prop::collection::vec(prop::sample::select(FRAGMENTS), 0..60)) {
        let text = parts.concat();
        let e = parse_exposition(&text);
        for s in &e.samples {
            prop_assert!(sextant_core::load::is_metric_name(s.name));
        }
    }

    /// A sample written by the rules is read back as written.
    #[test]
    fn written_samples_read_back(value in -1e9f64..1e9, label in "[a-z_][a-z0-9_]{0,8}", v in "[ -~]{0,12}") {
        let escaped = v.replace('\\', "\\\\").replace('"', "\\\"");
        let line = format!("m{{{label}=\"{escaped}\"}} {value}\n");
        let e = parse_exposition(&line);
        prop_assert_eq!(e.samples.len(), 1);
        prop_assert_eq!(e.samples[0].value, value);
        prop_assert_eq!(e.samples[0].labels[0].0, label.as_str());
        prop_assert_eq!(e.samples[0].labels[0].1.as_ref(), v.as_str());
    }
}
