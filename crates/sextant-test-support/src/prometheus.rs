//! A real Prometheus server for the metrics tests: Debian's `prometheus`
//! (installed by `scripts/setup.sh`), started by the test with a scrape
//! configuration of its own that points at a Sextant's `/metrics`, on a
//! free loopback port, with its database in the test's scratch directory.
//! The tests ask it through its query API, as a dashboard or an alert rule
//! would, so what they check is what Prometheus really parsed and stored.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::ci::{cannot_run, have_program};
use crate::http::http_get;
use crate::net::free_port;
use crate::scratch::Scratch;
use crate::wait::wait_until;

/// The Prometheus program: on PATH, or Debian's /usr/bin/prometheus.
fn program() -> Option<String> {
    if have_program("prometheus") {
        Some("prometheus".to_string())
    } else if std::path::Path::new("/usr/bin/prometheus").exists() {
        Some("/usr/bin/prometheus".to_string())
    } else {
        None
    }
}

/// A running Prometheus, ended (by its PID) on drop.
pub struct Prometheus {
    child: Child,
    /// Its HTTP address (the query API).
    pub addr: SocketAddr,
    dir: Scratch,
}

/// One sample of an instant query's answer: its labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: serde_json::Map<String, Value>,
    pub value: f64,
}

impl Sample {
    /// The value of label `name`, or "" without it.
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).and_then(Value::as_str).unwrap_or("")
    }
}

impl Prometheus {
    /// Starts Prometheus scraping `target` (host:port, path `/metrics`)
    /// every `interval`, with the bearer token in `token_file` when given.
    /// `None` when Prometheus is not installed (see [`cannot_run`]: under CI
    /// that fails the test).
    pub fn start(
        tag: &str,
        target: SocketAddr,
        interval: Duration,
        token_file: Option<&str>,
    ) -> Option<Prometheus> {
        let Some(program) = program() else {
            cannot_run("prometheus is not installed (scripts/setup.sh installs it)");
            return None;
        };
        let dir = Scratch::new(&format!("prometheus-{tag}"));
        let ms = interval.as_millis().max(100);
        let auth = token_file.map_or(String::new(), |f| {
            format!("    authorization:\n      type: Bearer\n      credentials_file: {f}\n")
        });
        let config = format!(
            "global:\n  scrape_interval: {ms}ms\n  scrape_timeout: {ms}ms\n\
             scrape_configs:\n  - job_name: sextant\n    metrics_path: /metrics\n{auth}\
             \x20   static_configs:\n      - targets: ['{target}']\n"
        );
        let config_file = dir.write("prometheus.yml", &config);
        let addr = SocketAddr::new(
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            free_port(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        );
        let log = std::fs::File::create(dir.0.join("prometheus.log")).expect("create log");
        let child = Command::new(program)
            .arg(format!("--config.file={config_file}"))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.0.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        let p = Prometheus { child, addr, dir };
        let ready = wait_until(Duration::from_secs(30), || {
            http_get(addr, "/-/ready").is_ok_and(|(code, _)| code == 200)
        });
        assert!(
            ready,
            "prometheus did not become ready; its log:\n{}",
            p.log()
        );
        Some(p)
    }

    /// Prometheus's own log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.0.join("prometheus.log")).unwrap_or_default()
    }

    /// An instant query (PromQL): the samples of its vector answer.
    pub fn query(&self, promql: &str) -> Result<Vec<Sample>, String> {
        let path = format!(
            "/api/v1/query?query={}",
            sextant_http1::percent_encode(promql)
        );
        let (code, body) = http_get(self.addr, &path)?;
        let v: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
        if code != 200 || v["status"] != "success" {
            return Err(format!("query {promql}: HTTP {code}: {body}"));
        }
        let result = v["data"]["result"].as_array().cloned().unwrap_or_default();
        result
            .into_iter()
            .map(|s| {
                let labels = s["metric"].as_object().cloned().unwrap_or_default();
                let value = s["value"][1]
                    .as_str()
                    .and_then(|x| x.parse::<f64>().ok())
                    .ok_or_else(|| format!("no value in {s}"))?;
                Ok(Sample { labels, value })
            })
            .collect()
    }

    /// The health of the scrape target as Prometheus last saw it ("up",
    /// "down", "unknown") and its last error.
    pub fn target_health(&self) -> Result<(String, String), String> {
        let (_, body) = http_get(self.addr, "/api/v1/targets")?;
        let v: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
        let t = &v["data"]["activeTargets"][0];
        Ok((
            t["health"].as_str().unwrap_or("none").to_string(),
            t["lastError"].as_str().unwrap_or("").to_string(),
        ))
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
