//! The query log's writer: one thread that takes the DNS workers' entries
//! off the bounded queue ([`sextant_dns::querylog`]), formats each as one
//! JSON line and writes it to a file (reopened on SIGHUP, for logrotate)
//! or to stdout. Formatting and writing never happen on a DNS thread.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use anyhow::Context;
use sextant_dns::DnsShared;
use sextant_dns::querylog::{QueryLog, QueryLogEntry};

/// Entries the queue holds before the DNS threads drop (and count) them.
const QUEUE: usize = 64 * 1024;

/// Where the log goes: `-` is stdout.
#[derive(Debug, Clone)]
pub enum Target {
    Stdout,
    File(PathBuf),
}

impl Target {
    pub fn parse(s: &str) -> Target {
        if s == "-" {
            Target::Stdout
        } else {
            Target::File(PathBuf::from(s))
        }
    }

    fn open(&self) -> std::io::Result<Box<dyn Write + Send>> {
        Ok(match self {
            Target::Stdout => Box::new(std::io::stdout()),
            Target::File(path) => Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            ),
        })
    }
}

/// Installs the query log on `dns` and starts its writer thread.
pub fn start(dns: &Arc<DnsShared>, target: Target, sample: u64) -> anyhow::Result<()> {
    let out = target
        .open()
        .with_context(|| format!("cannot open the query log {target:?}"))?;
    let (log, rx) = QueryLog::new(sample, QUEUE);
    if dns.query_log.set(log).is_err() {
        anyhow::bail!("the query log is already running");
    }
    let dns = Arc::clone(dns);
    std::thread::Builder::new()
        .name("query-log".into())
        .spawn(move || write_loop(&dns, &target, out, &rx))
        .context("cannot start the query log's writer")?;
    Ok(())
}

fn write_loop(
    dns: &DnsShared,
    target: &Target,
    out: Box<dyn Write + Send>,
    rx: &Receiver<QueryLogEntry>,
) {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    let mut line = String::with_capacity(512);
    let Some(log) = dns.query_log.get() else {
        return;
    };
    loop {
        if log.reopen.swap(false, Ordering::AcqRel) {
            let _ = out.flush();
            match target.open() {
                Ok(f) => out = std::io::BufWriter::with_capacity(64 * 1024, f),
                Err(e) => tracing::error!(error = %e, "cannot reopen the query log"),
            }
        }
        let entry = match rx.try_recv() {
            Ok(e) => e,
            Err(_) => {
                // Idle: what is written is on disk before waiting.
                let _ = out.flush();
                match rx.recv_timeout(Duration::from_secs(1)) {
                    Ok(e) => e,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        };
        line.clear();
        format_entry(&mut line, &entry, &dns.snapshot.load());
        if let Err(e) = out.write_all(line.as_bytes()) {
            tracing::error!(error = %e, "cannot write the query log");
        }
    }
}

/// One JSON line: time, client, ecs, name, type, rcode, answers, vserver,
/// method, reason.
fn format_entry(line: &mut String, e: &QueryLogEntry, snap: &sextant_core::Snapshot) {
    use sextant_core::Reason;
    let model = snap.model();
    let same_model = Arc::as_ptr(snap.model_arc()) as usize == e.model;
    let vserver = e
        .vserver
        .filter(|_| same_model)
        .and_then(|v| model.vservers.get(v))
        .map(|v| v.name.as_str());
    let method = match e.reason {
        Some(Reason::Method(m)) => Some(m.as_str()),
        Some(Reason::Fallback { backup, .. }) => Some(backup.as_str()),
        _ => None,
    };
    let reason = e.reason.map(|r| {
        let label = sextant_dns::counters::reason_label(&r);
        match r {
            Reason::Fallback { why, .. } => format!("{label}: {}", why.describe()),
            _ => label.to_string(),
        }
    });
    let answers: Vec<String> = e.addresses().map(|a| a.to_string()).collect();
    let value = Line {
        time: crate::api::rfc3339(e.time),
        client: e.client.to_string(),
        ecs: e.ecs.map(|(addr, prefix)| format!("{addr}/{prefix}")),
        name: e.name(),
        r#type: match sextant_core::records::type_name(e.qtype) {
            "other" => format!("TYPE{}", e.qtype),
            known => known.to_string(),
        },
        rcode: e.rcode.map(rcode_name),
        answers,
        vserver,
        method,
        reason,
    };
    line.push_str(&serde_json::to_string(&value).unwrap_or_default());
    line.push('\n');
}

/// One line of the log, its fields in this order.
#[derive(serde::Serialize)]
struct Line<'a> {
    time: String,
    client: String,
    ecs: Option<String>,
    name: &'a str,
    r#type: String,
    rcode: Option<&'static str>,
    answers: Vec<String>,
    vserver: Option<&'a str>,
    method: Option<&'static str>,
    reason: Option<String>,
}

fn rcode_name(r: sextant_dns::Rcode) -> &'static str {
    use sextant_dns::Rcode;
    match r {
        Rcode::NoError => "NOERROR",
        Rcode::FormErr => "FORMERR",
        Rcode::ServFail => "SERVFAIL",
        Rcode::NxDomain => "NXDOMAIN",
        Rcode::NotImp => "NOTIMP",
        Rcode::Refused => "REFUSED",
        Rcode::BadVers => "BADVERS",
    }
}
