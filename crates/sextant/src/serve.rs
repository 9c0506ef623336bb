//! `sextant serve`: wires the edges to the core.
//!
//! DNS runs on plain threads (one blocking UDP socket each, no await on the
//! hot path) and on tokio for TCP. Health monitors, reloads and the API run
//! on a small tokio runtime. One task owns the health book and is the only
//! writer of the published snapshot, so state changes never interleave.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Instant, SystemTime};

use anyhow::{Context, bail};
use sextant_core::{Model, Snapshot};
use sextant_dns::DnsShared;
use tokio::sync::mpsc;
use tracing::{error, info, warn};

use crate::ServeArgs;
use crate::health_book::HealthBook;
use crate::mep_glue::MepCounters;

/// Where the API listens when neither the file nor the flag says.
pub const DEFAULT_API_LISTEN: &str = "127.0.0.1:8053";

/// What the API reads: everything else it gets from the snapshot.
pub struct Daemon {
    pub dns: Arc<DnsShared>,
    pub config_file: PathBuf,
    pub started: Instant,
    /// Written only by the state task; the API reads it.
    pub book: RwLock<HealthBook>,
    pub last_reload_error: RwLock<Option<String>>,
    /// Metric exchange, when this node has peers.
    pub mep: Option<sextant_mep::MepHandle>,
    pub mep_counters: MepCounters,
    /// Load figures pushed over the API, for the state task.
    pub pushes: mpsc::Sender<(sextant_core::ServiceId, sextant_core::ServiceMetrics)>,
    /// This node's CPU and memory use, sampled by the state task.
    pub site_metrics: std::sync::Mutex<sextant_mep::message::SiteMetrics>,
    /// Other sites' CPU and memory use, as they last reported it.
    pub peer_site_metrics:
        std::sync::Mutex<std::collections::HashMap<String, sextant_mep::message::SiteMetrics>>,
}

/// The settings of a serve run that come from the command line.
#[derive(Debug, Clone)]
pub struct Overrides {
    pub config: PathBuf,
    pub local_site: Option<String>,
    pub dns_listen: Option<SocketAddr>,
    pub api_listen: Option<SocketAddr>,
}

impl From<&ServeArgs> for Overrides {
    fn from(a: &ServeArgs) -> Self {
        Overrides {
            config: a.config.clone(),
            local_site: a.local_site.clone(),
            dns_listen: a.dns_listen,
            api_listen: a.api_listen,
        }
    }
}

/// Loads and validates the configuration and applies the command line.
pub fn load(overrides: &Overrides) -> anyhow::Result<Model> {
    let mut model = sextant_config::load_file(&overrides.config).map_err(|errors| {
        anyhow::anyhow!(
            "{} error(s) in the configuration:\n{errors}",
            errors.errors.len()
        )
    })?;
    apply_local_site(&mut model, overrides.local_site.as_deref())?;
    if let Some(dns) = overrides.dns_listen {
        model.dns_listen = vec![dns];
    }
    if let Some(api) = overrides.api_listen {
        model.api_listen = Some(api);
    }
    Ok(model)
}

/// Makes the named site local, or checks that the file names one.
pub fn apply_local_site(model: &mut Model, name: Option<&str>) -> anyhow::Result<()> {
    match name {
        Some(name) => {
            let Some(id) = model.site_by_name(name) else {
                let known: Vec<_> = model.sites.iter().map(|s| s.name.as_str()).collect();
                bail!(
                    "--local-site {name}: no such site in the configuration (sites: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                );
            };
            model.set_local_site(id);
        }
        None if model.local_site.is_none() && model.sites.len() == 1 => model.set_local_site(0),
        None if model.local_site.is_none() && !model.sites.is_empty() => bail!(
            "no local site: mark this node's site with `-siteType LOCAL` in the file, or pass --local-site NAME"
        ),
        None => {}
    }
    check_child(model)
}

/// A child site's configuration holds only itself, its parent and its own
/// services (seed 001: "The configuration of a child site includes the child
/// site and its parent site, but no other parent or child sites"; "a child
/// site can have only local services").
fn check_child(model: &Model) -> anyhow::Result<()> {
    let Some(local) = model.local_site else {
        return Ok(());
    };
    let Some(parent) = model.site(local).parent else {
        return Ok(());
    };
    let me = &model.site(local).name;
    let mut problems = Vec::new();
    for (i, site) in model.sites.iter().enumerate() {
        let id = i as sextant_core::SiteId;
        if id != local && id != parent {
            problems.push(format!(
                "site {} is neither this child site nor its parent {}",
                site.name,
                model.site(parent).name
            ));
        }
    }
    for service in &model.services {
        if service.site != local {
            problems.push(format!(
                "service {} belongs to site {}, not to this child site",
                service.name,
                model.site(service.site).name
            ));
        }
    }
    if !problems.is_empty() {
        bail!(
            "{me} is a child site, and a child's configuration holds only itself, its parent and its own services:\n  {}\n(remove those lines, or run this node as a parent site)",
            problems.join("\n  ")
        );
    }
    if !model.vservers.is_empty() {
        warn!(
            site = %me,
            vservers = model.vservers.len(),
            "child site: its GSLB vservers and domains are not used (only parent sites answer DNS)"
        );
    }
    Ok(())
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let overrides = Overrides::from(&args);
    let model = load(&overrides)?;
    if model.dns_listen.is_empty() {
        bail!(
            "no DNS listener: add `add service dns1 IP ADNS 53` to the file or pass --dns-listen IP:PORT"
        );
    }
    let workers = args.udp_workers.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("sextant-rt")
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(overrides, model, workers.max(1)))
}

/// Runs the server until SIGTERM or SIGINT.
pub async fn serve(overrides: Overrides, model: Model, workers: usize) -> anyhow::Result<()> {
    let api_listen: SocketAddr = match model.api_listen {
        Some(a) => a,
        None => DEFAULT_API_LISTEN.parse()?,
    };
    let dns_listen = model.dns_listen.clone();
    let model = Arc::new(model);
    let generation = 1;
    let book = HealthBook::new(Arc::clone(&model));
    let snapshot = Snapshot::new(Arc::clone(&model), generation).with_states(book.states());
    let dns = Arc::new(DnsShared::new(snapshot));

    for addr in &dns_listen {
        sextant_dns::spawn_udp(*addr, workers, Arc::clone(&dns))
            .with_context(|| format!("cannot listen for DNS on udp/{addr}"))?;
        let listener = sextant_dns::bind_tcp(*addr)
            .with_context(|| format!("cannot listen for DNS on tcp/{addr}"))?;
        tokio::spawn(sextant_dns::serve_tcp(listener, Arc::clone(&dns)));
        info!(%addr, udp_workers = workers, "DNS listening on UDP and TCP");
    }

    let (mep_tx, mep_rx) = mpsc::channel(1024);
    let mep = if wants_metric_exchange(&model) {
        Some(sextant_mep::start(Arc::clone(&model), generation, mep_tx).with_context(|| {
            "cannot start metric exchange (the local site's IP must be an address of this host; \
             `-metricExchange DISABLED` on the site turns metric exchange off)"
        })?)
    } else {
        None
    };
    let (push_tx, push_rx) = mpsc::channel(256);
    let daemon = Arc::new(Daemon {
        dns,
        config_file: overrides.config.clone(),
        started: Instant::now(),
        book: RwLock::new(book),
        last_reload_error: RwLock::new(None),
        mep,
        mep_counters: MepCounters::default(),
        pushes: push_tx,
        site_metrics: Default::default(),
        peer_site_metrics: Default::default(),
    });

    let listener = tokio::net::TcpListener::bind(api_listen)
        .await
        .with_context(|| format!("cannot listen for the REST API on {api_listen}"))?;
    info!(addr = %api_listen, "REST API listening");
    let app = crate::api::router(Arc::clone(&daemon));
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            error!(error = %e, "REST API stopped");
        }
    });

    log_start(&model, &overrides.config);
    let (reload_tx, reload_rx) = mpsc::channel(4);
    tokio::spawn(state_task(
        Arc::clone(&daemon),
        overrides,
        generation,
        Inputs {
            reload: reload_rx,
            mep: mep_rx,
            pushes: push_rx,
        },
    ));
    wait_for_signals(reload_tx).await
}

fn log_start(model: &Model, file: &Path) {
    let local = model.local_site.map(|s| model.site(s));
    if let Some((site, parent)) = local.and_then(|s| s.parent.map(|p| (s, model.site(p)))) {
        warn!(
            site = %site.name,
            parent = %parent.name,
            "this node is a child site: it answers every DNS query with REFUSED; only parent sites answer DNS"
        );
    }
    info!(
        config = %file.display(),
        local_site = model.local_site.map(|s| model.site(s).name.as_str()).unwrap_or("-"),
        sites = model.sites.len(),
        services = model.services.len(),
        vservers = model.vservers.len(),
        domains = model.domains.len(),
        "sextant started"
    );
}

/// SIGHUP asks for a reload; SIGTERM and SIGINT end the process.
async fn wait_for_signals(reload: mpsc::Sender<()>) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hup = signal(SignalKind::hangup())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    loop {
        tokio::select! {
            _ = hup.recv() => {
                info!("SIGHUP: reloading the configuration");
                let _ = reload.try_send(());
            }
            _ = term.recv() => { info!("SIGTERM: stopping"); return Ok(()); }
            _ = int.recv() => { info!("SIGINT: stopping"); return Ok(()); }
        }
    }
}

/// The longest new load figures wait before they are published.
const FIGURES_FLUSH: std::time::Duration = std::time::Duration::from_millis(200);

/// How often this node samples its own CPU and memory use for its reports.
const SITE_METRICS_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// What the state task listens to besides probe results.
struct Inputs {
    reload: mpsc::Receiver<()>,
    mep: mpsc::Receiver<sextant_mep::MepEvent>,
    pushes: mpsc::Receiver<(sextant_core::ServiceId, sextant_core::ServiceMetrics)>,
}

/// Metric exchange runs when the local site has it on and there is another
/// site to talk to.
fn wants_metric_exchange(model: &Model) -> bool {
    model
        .local_site
        .is_some_and(|l| model.site(l).metric_exchange && model.sites.len() > 1)
}

/// The only writer of the health book and the published snapshot: applies
/// probe results, load figures, metric exchange reports and reloads, and
/// publishes every change as one snapshot.
async fn state_task(
    daemon: Arc<Daemon>,
    overrides: Overrides,
    mut generation: u64,
    mut inputs: Inputs,
) {
    let (obs_tx, mut obs_rx) = mpsc::channel(1024);
    let (load_tx, mut load_rx) = mpsc::channel(256);
    let first_model = match daemon.book.read() {
        Ok(book) => Arc::clone(book.model()),
        Err(_) => return,
    };
    let gates = match daemon.book.read() {
        Ok(book) => book.gates().clone(),
        Err(_) => return,
    };
    let mut monitors =
        sextant_health::start_gated(Arc::clone(&first_model), generation, obs_tx.clone(), gates);
    let mut loads = sextant_health::start_load_sources(first_model, generation, load_tx.clone());
    publish(&daemon);
    let mut site_tick = tokio::time::interval(SITE_METRICS_INTERVAL);
    let mut flush = tokio::time::interval(FIGURES_FLUSH);
    let mut figures_pending = false;
    let mut cpu = None;
    loop {
        // A state change is published at once; new load figures (every
        // probe brings a response time) are gathered and published at most
        // every FIGURES_FLUSH, so a large configuration is not republished
        // for each probe.
        let changes = tokio::select! {
            _ = flush.tick(), if figures_pending => {
                figures_pending = false;
                Vec::new()
            }
            _ = site_tick.tick(), if daemon.mep.is_some() => {
                let sample = crate::site_metrics::sample(&mut cpu);
                if let Ok(mut m) = daemon.site_metrics.lock() {
                    *m = sample;
                }
                figures_pending = true;
                continue;
            }
            Some(obs) = obs_rx.recv() => {
                if obs.generation != generation {
                    continue;
                }
                let Ok(mut book) = daemon.book.write() else { break };
                match book.observe(&obs, SystemTime::now()) {
                    Some(change) => vec![change],
                    None => {
                        figures_pending = true;
                        continue;
                    }
                }
            }
            Some(load) = load_rx.recv() => {
                if load.generation != generation {
                    continue;
                }
                let Ok(mut book) = daemon.book.write() else { break };
                book.set_local_metrics(load.service, load.metrics);
                figures_pending = true;
                continue;
            }
            Some((service, metrics)) = inputs.pushes.recv() => {
                let Ok(mut book) = daemon.book.write() else { break };
                book.set_local_metrics(service, metrics);
                Vec::new()
            }
            Some(event) = inputs.mep.recv() => {
                if let (sextant_mep::MepEvent::SiteMetrics { from_site, metrics, .. }, Ok(mut peers)) =
                    (&event, daemon.peer_site_metrics.lock())
                {
                    peers.insert(from_site.to_ascii_lowercase(), *metrics);
                }
                let Ok(mut book) = daemon.book.write() else { break };
                crate::mep_glue::apply(event, &mut book, &daemon.mep_counters, SystemTime::now())
            }
            Some(()) = inputs.reload.recv() => {
                match load(&overrides) {
                    Ok(model) => {
                        warn_fixed_listeners(&daemon, &model);
                        generation += 1;
                        let model = Arc::new(model);
                        monitors.stop();
                        loads.stop();
                        {
                            let Ok(mut book) = daemon.book.write() else { break };
                            *book = HealthBook::carry_over(Arc::clone(&model), &book);
                            let snapshot = Snapshot::new(Arc::clone(&model), generation)
                                .with_states(book.states())
                                .with_metrics(book.metrics());
                            daemon.dns.snapshot.store(Arc::new(snapshot));
                        }
                        if let Some(mep) = &daemon.mep {
                            mep.reload(Arc::clone(&model), generation);
                        }
                        let gates = match daemon.book.read() {
                            Ok(book) => book.gates().clone(),
                            Err(_) => break,
                        };
                        monitors = sextant_health::start_gated(Arc::clone(&model), generation, obs_tx.clone(), gates);
                        loads = sextant_health::start_load_sources(Arc::clone(&model), generation, load_tx.clone());
                        if let Ok(mut last) = daemon.last_reload_error.write() {
                            *last = None;
                        }
                        info!(generation, "configuration reloaded");
                        log_start(&model, &overrides.config);
                    }
                    Err(e) => {
                        error!("reload failed; the running configuration stays in force: {e:#}");
                        if let Ok(mut last) = daemon.last_reload_error.write() {
                            *last = Some(format!("{e:#}"));
                        }
                        continue;
                    }
                }
                Vec::new()
            }
            else => break,
        };
        if let Ok(book) = daemon.book.read() {
            for change in &changes {
                let service = book.model().service(change.service);
                if change.up {
                    info!(service = %service.name, ip = %service.ip, port = service.port,
                          reason = %change.reason, "service UP");
                } else {
                    warn!(service = %service.name, ip = %service.ip, port = service.port,
                          reason = %change.reason, "service DOWN");
                }
            }
        }
        publish(&daemon);
    }
}

/// Publishes the book's states and figures to the DNS path and, when they
/// changed, this site's report to metric exchange.
fn publish(daemon: &Daemon) {
    let Ok(book) = daemon.book.read() else { return };
    let current = daemon.dns.snapshot.load_full();
    let states = book.states();
    let metrics = book.metrics();
    if current.states()[..] != states[..] || current.metrics_table()[..] != metrics[..] {
        daemon
            .dns
            .snapshot
            .store(Arc::new(current.with_states(states).with_metrics(metrics)));
    }
    if let Some(mep) = &daemon.mep {
        let mut report = crate::mep_glue::local_report(&book);
        if let Ok(m) = daemon.site_metrics.lock() {
            report.site = *m;
        }
        mep.publish(report);
    }
}

fn warn_fixed_listeners(daemon: &Daemon, model: &Model) {
    let running = daemon.dns.snapshot.load();
    if running.model().dns_listen != model.dns_listen {
        warn!("DNS listen addresses changed in the file; they take effect at the next restart");
    }
    if running.model().api_listen != model.api_listen {
        warn!("the API listen address changed in the file; it takes effect at the next restart");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(text: &str, local: &str) -> anyhow::Result<Model> {
        let mut m =
            sextant_config::parse_appliance(text, "t.conf").map_err(|e| anyhow::anyhow!("{e}"))?;
        apply_local_site(&mut m, Some(local))?;
        Ok(m)
    }

    const SITES: &str = "add gslb site p1 127.0.0.1\n\
                         add gslb site p2 127.0.0.2\n\
                         add gslb site c1 127.0.0.11 -parentSite p1\n\
                         add gslb service s1 127.0.1.1 HTTP 80 -siteName c1\n";

    #[test]
    fn a_child_holds_only_itself_its_parent_and_its_services() {
        let err = model(SITES, "c1").unwrap_err().to_string();
        assert!(
            err.contains("site p2 is neither this child site nor its parent p1"),
            "{err}"
        );
        let ok = "add gslb site p1 127.0.0.1\nadd gslb site c1 127.0.0.11 -parentSite p1\n\
                  add gslb service s1 127.0.1.1 HTTP 80 -siteName c1\n";
        assert!(model(ok, "c1").is_ok());
        let foreign = format!("{ok}add gslb service s2 127.0.1.2 HTTP 80 -siteName p1\n");
        let err = model(&foreign, "c1").unwrap_err().to_string();
        assert!(err.contains("service s2 belongs to site p1"), "{err}");
        // The same file is fine for the parent.
        assert!(model(SITES, "p1").is_ok());
    }
}
