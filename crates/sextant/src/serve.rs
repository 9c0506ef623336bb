//! `sextant serve`: wires the edges to the core.
//!
//! DNS runs on plain threads (one blocking UDP socket each, no await on the
//! hot path) and on a tokio runtime of its own for TCP. Health monitors,
//! metric exchange, reloads and the API run on the control runtime. One task
//! drives the state engine ([`sextant_state::Engine`]): it turns what the
//! edges report into events and carries out the engine's effects, so the
//! engine is the only place a site's state is decided and the only writer of
//! the published snapshot.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use sextant_config::files::FileAccess;
use sextant_core::{Model, Snapshot};
use sextant_dns::DnsShared;
use sextant_health::Gates;
use sextant_state::{Effect, Engine, Event, LocalSession, Prepared, Probe};
use tokio::sync::{mpsc, oneshot};
use tracing::{error, info, warn};

use crate::ServeArgs;
use crate::api::metrics::ProbeCount;
use crate::clock::Clock;
use crate::mep_glue::MepCounters;

/// Where the API listens when neither the file nor the flag says.
pub const DEFAULT_API_LISTEN: &str = "127.0.0.1:8053";

/// What the API reads besides the published snapshot (health, reasons and
/// figures all come from the snapshot, the one DNS answers from).
pub struct Daemon {
    pub dns: Arc<DnsShared>,
    pub config_file: PathBuf,
    /// The one time base of every deadline (and the uptime).
    pub clock: Clock,
    pub last_reload_error: RwLock<Option<String>>,
    /// Metric exchange, when this node has peers (taken at stop).
    pub mep: Mutex<Option<sextant_mep::MepHandle>>,
    /// What metric exchange publishes of its links after every step (its
    /// status while it runs, "not running" otherwise): the API reads it
    /// without the driver's lock.
    pub mep_status: Arc<arc_swap::ArcSwap<sextant_mep::MepStatus>>,
    pub mep_counters: MepCounters,
    /// Inputs for the state task (load figures pushed over the API).
    pub inputs: mpsc::Sender<Input>,
    /// This node's figures as an operator set them (`POST /v1/site/figures`).
    pub site_overrides: std::sync::Mutex<crate::site_metrics::Overrides>,
    /// The LDNS prober's counters and the RTT messages sent, for `/v1/ldns`.
    pub ldns: LdnsCounters,
    /// The virtual routers, for `/v1/vrrp`.
    pub vrrp: Arc<crate::vrrp_glue::VrrpView>,
    /// This node's DNS listeners are answering (VRRP tracks it: a node that
    /// cannot answer gives its VIPs up).
    pub dns_serving: Arc<std::sync::atomic::AtomicBool>,
    /// The last report of this site's services, for a metric exchange
    /// that starts late (on the node that becomes master of the site IP).
    pub last_report: Mutex<Option<Arc<sextant_state::LocalReport>>>,
    /// The API's tokens and read policy (re-read on SIGHUP).
    pub api_access: Arc<crate::api::auth::Access>,
    /// The text of the configuration in force (`GET /v1/config`).
    pub running_config: RwLock<Arc<str>>,
    /// The command line, applied to a configuration put over the API as
    /// to one read at a reload.
    pub overrides: Overrides,
    /// Held while a configuration put over the API is checked, written
    /// and swapped in, so that two writers take turns.
    pub config_writer: tokio::sync::Mutex<()>,
    /// Where the state files are (`--state-dir`, else beside the file).
    pub state_files: crate::state_files::StateFiles,
    /// The running configuration's changes not in the file yet
    /// (configuration commands before `save ns config`).
    pub unsaved: Mutex<crate::unsaved::Unsaved>,
    /// What `/v1/events` streams.
    pub events: crate::events::Events,
    /// Each service's recent transitions.
    pub history: crate::events::History,
    /// Reloads, transitions and probe results, for `/metrics`.
    pub counters: crate::api::metrics::ProcessCounters,
    /// Automatic configuration sync among parents.
    pub config_sync: crate::config_sync::ConfigSync,
    /// systemd's notify protocol (nothing without `NOTIFY_SOCKET`).
    pub systemd: crate::systemd::Notifier,
}

/// What `/v1/ldns` tells of this site's probing and RTT exchange.
#[derive(Debug, Default)]
pub struct LdnsCounters {
    pub prober: Mutex<sextant_health::ldns::LdnsProberCounters>,
    pub messages_sent: AtomicU64,
    pub entries_sent: AtomicU64,
}

/// The settings of a serve run that come from the command line.
#[derive(Debug, Clone)]
pub struct Overrides {
    pub config: PathBuf,
    pub local_site: Option<String>,
    pub dns_listen: Option<SocketAddr>,
    pub api_listen: Option<SocketAddr>,
    /// The LDNS table's bounds (`--ldns-...`).
    pub ldns_new_per_second: u32,
    pub ldns_max_entries: usize,
    pub ldns_probes_per_second: u32,
    /// Each UDP socket's receive buffer (`--udp-receive-buffer`; 0: the
    /// kernel's default).
    pub udp_receive_buffer: usize,
    /// The XDP path (`--xdp-interface`), when asked for.
    pub xdp: Option<XdpSettings>,
    /// `--api-token-file` (ahead of the file's `[api] token_file`).
    pub api_token_file: Option<PathBuf>,
    /// `--api-reads`.
    pub api_reads: crate::api::auth::ReadAccess,
    /// `--api-tls-cert` and `--api-tls-key`.
    pub api_tls: Option<(PathBuf, PathBuf)>,
    /// `--api-max-connections`, `--api-header-timeout`...
    pub api_limits: crate::api::listen::Limits,
    /// `--query-log` and `--query-log-sample`.
    pub query_log: Option<(crate::query_log::Target, u64)>,
    /// `--state-dir`: where the state files go (else beside the file).
    pub state_dir: Option<PathBuf>,
    /// `--sync-file-dir`: where a configuration received over config sync
    /// may read files, besides the configuration file's directory.
    pub sync_file_dirs: Vec<PathBuf>,
}

/// `--xdp-attach`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum XdpAttach {
    #[default]
    Auto,
    Native,
    Generic,
}

/// `--xdp-bind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum XdpBind {
    #[default]
    Auto,
    Copy,
    ZeroCopy,
}

/// The XDP path's settings from the command line.
#[derive(Debug, Clone)]
pub struct XdpSettings {
    pub interface: String,
    pub attach: XdpAttach,
    pub bind: XdpBind,
}

impl From<&ServeArgs> for Overrides {
    fn from(a: &ServeArgs) -> Self {
        Overrides {
            config: a.config.clone(),
            local_site: a.local_site.clone(),
            dns_listen: a.dns_listen,
            api_listen: a.api_listen,
            ldns_new_per_second: a.ldns_new_per_second,
            ldns_max_entries: usize::try_from(a.ldns_max_entries).unwrap_or(usize::MAX),
            ldns_probes_per_second: a.ldns_probes_per_second,
            udp_receive_buffer: a.udp_receive_buffer,
            xdp: a.xdp_interface.clone().map(|interface| XdpSettings {
                interface,
                attach: a.xdp_attach,
                bind: a.xdp_bind,
            }),
            api_token_file: a.api_token_file.clone(),
            api_reads: a.api_reads,
            api_tls: a.api_tls_cert.clone().zip(a.api_tls_key.clone()),
            api_limits: crate::api::listen::Limits {
                max_connections: a.api_max_connections.map(usize::from),
                header_timeout: Duration::from_secs(a.api_header_timeout),
                handshake_timeout: Duration::from_secs(a.api_header_timeout),
                write_timeout: 2 * Duration::from_secs(a.api_header_timeout),
                max_event_streams: usize::from(a.api_max_event_streams),
            },
            query_log: a
                .query_log
                .as_deref()
                .map(|t| (crate::query_log::Target::parse(t), a.query_log_sample)),
            state_dir: a.state_dir.clone(),
            sync_file_dirs: a.sync_file_dir.clone(),
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
    settle(overrides, &mut model)?;
    Ok(model)
}

/// Like [`load`], also returning the text the model was read from (the
/// running configuration `GET /v1/config` shows).
pub fn load_with_text(overrides: &Overrides) -> anyhow::Result<(Model, Arc<str>)> {
    match sextant_config::read_config_file(&overrides.config) {
        Ok(text) => {
            let model = load_text(overrides, &text).map_err(|errors| {
                anyhow::anyhow!(
                    "{} error(s) in the configuration:\n{}",
                    errors.len(),
                    errors.join("\n")
                )
            })?;
            Ok((model, Arc::from(text)))
        }
        Err(errors) => Err(anyhow::anyhow!(
            "{} error(s) in the configuration:\n{errors}",
            errors.errors.len()
        )),
    }
}

/// Validates `text` as the configuration file's content (with the same
/// parser and checks as a start or SIGHUP) and applies the command line;
/// the errors as `FILE:LINE: reason`, FILE being the configuration file.
pub fn load_text(overrides: &Overrides, text: &str) -> Result<Model, Vec<String>> {
    load_text_with(overrides, text, &FileAccess::operator())
}

/// [`load_text`], reading the files the text names as `files` allows (a
/// configuration received over config sync: [`received_files`]).
pub fn load_text_with(
    overrides: &Overrides,
    text: &str,
    files: &FileAccess,
) -> Result<Model, Vec<String>> {
    let mut model =
        sextant_config::parse_as_with(&overrides.config, text, files).map_err(|errors| {
            errors
                .errors
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
        })?;
    settle(overrides, &mut model).map_err(|e| vec![format!("{e:#}")])?;
    Ok(model)
}

/// Which files a configuration received over config sync may make this
/// node read: those under the configuration file's directory and each
/// `--sync-file-dir`, never the node's own configuration file (its site
/// passwords), API token file or TLS key (`running`: the model in force,
/// for its `[api] token_file`).
pub fn received_files(overrides: &Overrides, running: &Model) -> FileAccess {
    let own_dir = overrides
        .config
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let dirs = std::iter::once(own_dir).chain(overrides.sync_file_dirs.iter().cloned());
    let secrets = token_file(overrides, running)
        .into_iter()
        .chain(std::iter::once(overrides.config.clone()))
        .chain(overrides.api_tls.as_ref().map(|(_, key)| key.clone()));
    FileAccess::received(dirs).never_read(secrets)
}

/// Applies the command line to a validated model.
fn settle(overrides: &Overrides, model: &mut Model) -> anyhow::Result<()> {
    apply_local_site(model, overrides.local_site.as_deref())?;
    if let Some(dns) = overrides.dns_listen {
        model.dns_listen = vec![dns];
    }
    if let Some(api) = overrides.api_listen {
        model.api_listen = Some(api);
    }
    model.params.ldns_new_per_second = overrides.ldns_new_per_second;
    model.params.ldns_max_entries = overrides.ldns_max_entries;
    model.params.ldns_probes_per_second = overrides.ldns_probes_per_second;
    Ok(())
}

/// The API token file: `--api-token-file`, else the file's `[api]
/// token_file` (relative to the configuration file's directory).
fn token_file(overrides: &Overrides, model: &Model) -> Option<PathBuf> {
    overrides.api_token_file.clone().or_else(|| {
        model.api_token_file.as_ref().map(|f| {
            overrides
                .config
                .parent()
                .map(|dir| dir.join(f))
                .unwrap_or_else(|| f.clone())
        })
    })
}

/// Makes the named site local, or checks that the file names one, and
/// checks a child site's configuration (`sextant_config::settle_local_site`).
pub fn apply_local_site(model: &mut Model, name: Option<&str>) -> anyhow::Result<()> {
    Ok(sextant_config::settle_local_site(model, name)?)
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let overrides = Overrides::from(&args);
    // A mistyped directory would silently allow nothing.
    for dir in &overrides.sync_file_dirs {
        if !dir.is_dir() {
            bail!(
                "--sync-file-dir {}: not a directory (a directory a configuration received over config sync may read files from)",
                dir.display()
            );
        }
    }
    let model = load(&overrides)?;
    let workers = args.udp_workers.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    run_model(overrides, model, workers)
}

/// Serves a loaded configuration with `workers` UDP threads until SIGTERM.
pub fn run_model(overrides: Overrides, mut model: Model, workers: usize) -> anyhow::Result<()> {
    let budget = crate::fd_budget::raise_limit();
    let bindings = model.services.iter().map(|s| s.monitors.len()).sum();
    if let Some(w) = budget.warning(bindings) {
        warn!("{w}");
    }
    for w in &model.warnings {
        warn!("{w}");
    }
    let child = is_child(&model);
    if child {
        if !model.dns_listen.is_empty() {
            warn!(
                listen = ?model.dns_listen,
                "this node is a child site: only parent sites answer DNS (seed 001), so its ADNS service / --dns-listen is not used"
            );
            model.dns_listen.clear();
        }
    } else if model.dns_listen.is_empty() {
        bail!(
            "no DNS listener: add `add service dns1 IP ADNS 53` to the file or pass --dns-listen IP:PORT \
             (only a child site, `-parentSite`, runs without one)"
        );
    }
    // The control plane (state engine, monitors, metric exchange, API) and
    // TCP DNS run on runtimes of their own, so that many slow TCP clients
    // cannot delay a keepalive or a probe.
    let control = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("sextant-ctl")
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let tcp = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("sextant-dns-tcp")
        .enable_all()
        .build()
        .context("cannot start the async runtime for DNS over TCP")?;
    let result = control.block_on(serve(
        overrides,
        model,
        workers.max(1),
        tcp.handle().clone(),
    ));
    // SIGTERM: in-flight TCP queries and API calls get a moment to finish.
    tcp.shutdown_timeout(SHUTDOWN_GRACE);
    control.shutdown_timeout(SHUTDOWN_GRACE);
    if result.is_ok() {
        info!("stopped");
    }
    result
}

/// How long in-flight work may take to finish after SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

fn is_child(model: &Model) -> bool {
    model
        .local_site
        .is_some_and(|l| model.site(l).parent.is_some())
}

/// DNS sockets bound at start (so a busy port is reported at once) and
/// served once the engine says DNS may answer.
struct DnsListeners {
    udp: Vec<std::net::UdpSocket>,
    tcp: Vec<tokio::net::TcpListener>,
}

/// Binds the DNS listeners; those on a VRRP VIP (which is on the host only
/// while this node is master for it) are bound with `IP_FREEBIND`.
fn bind_dns(
    addrs: &[SocketAddr],
    vips: &[std::net::IpAddr],
    workers: usize,
    receive_buffer: usize,
    tcp: &tokio::runtime::Handle,
) -> anyhow::Result<DnsListeners> {
    let mut l = DnsListeners {
        udp: Vec::new(),
        tcp: Vec::new(),
    };
    for addr in addrs {
        let vip = vips.contains(&addr.ip());
        let options = sextant_dns::UdpOptions {
            receive_buffer,
            freebind: vip,
        };
        let udp = sextant_dns::bind_udp_with(*addr, workers, options);
        l.udp
            .extend(udp.with_context(|| format!("cannot listen for DNS on udp/{addr}"))?);
        let _guard = tcp.enter();
        let listener = if vip {
            sextant_dns::bind_tcp_vip(*addr)
        } else {
            sextant_dns::bind_tcp(*addr)
        };
        l.tcp
            .push(listener.with_context(|| format!("cannot listen for DNS on tcp/{addr}"))?);
    }
    Ok(l)
}

/// Runs the server until SIGTERM or SIGINT.
pub async fn serve(
    overrides: Overrides,
    model: Model,
    workers: usize,
    tcp: tokio::runtime::Handle,
) -> anyhow::Result<()> {
    let api_listen: SocketAddr = match model.api_listen {
        Some(a) => a,
        None => DEFAULT_API_LISTEN.parse()?,
    };
    let dns_listen = model.dns_listen.clone();
    let model = Arc::new(model);
    let generation = 1;
    let clock = Clock::start();
    // Read before anything answers: a disabled service stays out from the
    // first answer on, and a file that cannot be read stops the start.
    if let Some(dir) = &overrides.state_dir
        && !dir.is_dir()
    {
        anyhow::bail!(
            "--state-dir {}: not a directory (create it, writable by the server's user)",
            dir.display()
        );
    }
    let state_files =
        crate::state_files::StateFiles::new(&overrides.config, overrides.state_dir.as_deref());
    state_files.remove_stale_temps();
    let file_text = std::fs::read_to_string(&overrides.config).unwrap_or_default();
    // An earlier run's changes that were never saved: said, and kept aside.
    crate::unsaved::recover(&overrides.config, &file_text);
    let admin_file = state_files.admin();
    let saved_marks = crate::admin_state::load(&admin_file)?;
    let (mut engine, mut first) = Engine::new(Arc::clone(&model), generation, clock.now());
    match saved_marks {
        Some(marks) if !marks.is_empty() => {
            info!(file = %admin_file.display(), marks = marks.len(), "maintenance state read");
            first.extend(engine.apply(Event::AdminRestore(marks), clock.now()));
        }
        Some(_) => {}
        // No state file yet: the objects the configuration disables
        // (`-state DISABLED`, `disable gslb ...`) start disabled, and the
        // file written now keeps what the operator does from here on.
        None if !model.config_disabled.is_empty() => {
            let marks = sextant_state::config_records(
                &model,
                crate::admin_state::unix_ms(clock.wall_now()),
            );
            info!(file = %admin_file.display(), marks = marks.len(), "no maintenance state yet: the configuration's disable lines apply");
            first.extend(engine.apply(Event::AdminRestore(marks), clock.now()));
        }
        None => {}
    }
    let dns = Arc::new(DnsShared::new(Snapshot::new(
        Arc::clone(&model),
        generation,
    )));
    // The start's last publication (the restored maintenance marks in it)
    // is the only one: an earlier one, stored by the state task while it
    // writes the state file, would show the API a disabled service as
    // enabled for those milliseconds. It is in force before the API
    // listens.
    if let Some(last) = first.iter().rposition(|e| matches!(e, Effect::Publish(_))) {
        let mut at = 0;
        first.retain(|e| {
            at += 1;
            !matches!(e, Effect::Publish(_)) || at - 1 == last
        });
    }
    if let Some(Effect::Publish(published)) = first.iter().find(|e| matches!(e, Effect::Publish(_)))
    {
        dns.snapshot.store(Arc::clone(published));
    }
    dns.set_rate_limiter(model.dns.rrl.as_ref());
    if let Some((target, sample)) = &overrides.query_log {
        crate::query_log::start(&dns, target.clone(), *sample)?;
    }
    let mut tasks = Tasks::default();
    tasks.spawn(rotate_cookie_secrets(Arc::clone(&dns)));
    let vips: Vec<std::net::IpAddr> = model
        .vrrp
        .vrids
        .iter()
        .flat_map(|v| v.addresses.iter().map(|a| a.ip))
        .collect();
    let listeners = bind_dns(
        &dns_listen,
        &vips,
        workers,
        overrides.udp_receive_buffer,
        &tcp,
    )?;
    let xdp = overrides
        .xdp
        .as_ref()
        .map(|x| open_xdp(x, &dns_listen, &vips))
        .transpose()?;

    let (mep_tx, mep_rx) = mpsc::channel(1024);
    // A site IP that is a VRRP VIP is on this host only while this node is
    // master for it: metric exchange then starts and stops with it (the
    // engine decides, `Effect::MetricExchange`).
    let site_vip = sextant_state::site_ip_vip(&model)
        .filter(|_| sextant_state::metric_exchange_configured(&model));
    let mep_status = Arc::<arc_swap::ArcSwap<sextant_mep::MepStatus>>::default();
    let mep = if engine.runs_metric_exchange() {
        Some(start_mep(
            clock,
            &mep_status,
            &model,
            generation,
            mep_tx.clone(),
            &state_files,
        )?)
    } else {
        if let Some(ip) = site_vip {
            info!(site_ip = %ip, "the site IP is a VRRP VIP: metric exchange runs on the node that is master for it");
        }
        None
    };
    let api_access = Arc::new(crate::api::auth::Access::load(
        token_file(&overrides, &model),
        overrides.api_reads,
        api_listen,
        clock,
    )?);
    let api_tls = overrides
        .api_tls
        .as_ref()
        .map(|(cert, key)| crate::api::tls::server_config(cert, key))
        .transpose()?;
    let (input_tx, input_rx) = mpsc::channel(1024);
    let daemon = Arc::new(Daemon {
        dns,
        config_file: overrides.config.clone(),
        clock,
        last_reload_error: RwLock::new(None),
        mep: Mutex::new(mep),
        mep_status,
        mep_counters: MepCounters::default(),
        inputs: input_tx.clone(),
        site_overrides: Default::default(),
        ldns: LdnsCounters::default(),
        vrrp: Default::default(),
        dns_serving: Default::default(),
        last_report: Mutex::new(None),
        api_access,
        running_config: RwLock::new(Arc::from(file_text)),
        unsaved: Mutex::new(Default::default()),
        overrides: overrides.clone(),
        config_writer: tokio::sync::Mutex::new(()),
        state_files: state_files.clone(),
        events: Default::default(),
        history: Default::default(),
        counters: Default::default(),
        config_sync: Default::default(),
        systemd: Default::default(),
    });
    daemon
        .systemd
        .status("starting: waiting for the first health results");
    let (site_master_tx, mut site_master_rx) = tokio::sync::watch::channel(false);
    if site_vip.is_some() {
        let inputs = input_tx.clone();
        tasks.spawn(async move {
            while site_master_rx.changed().await.is_ok() {
                let master = *site_master_rx.borrow_and_update();
                if inputs.send(Input::SiteIpMaster(master)).await.is_err() {
                    return;
                }
            }
        });
    }
    let vip_listeners: Vec<SocketAddr> = sextant_state::listeners::vip_listeners(&model).collect();
    crate::dns_probe::start(&vip_listeners, &daemon.dns_serving, &input_tx);
    let vrrp = crate::vrrp_glue::start(
        &model,
        Arc::clone(&daemon.dns),
        Arc::clone(&daemon.dns_serving),
        Arc::clone(&daemon.vrrp),
        site_vip.map(|ip| (ip, site_master_tx)),
        daemon.clock,
        daemon.events.clone(),
    )
    .context("cannot start VRRP")?;

    let listener = tokio::net::TcpListener::bind(api_listen)
        .await
        .with_context(|| format!("cannot listen for the REST API on {api_listen}"))?;
    let app = crate::api::router(Arc::clone(&daemon), &overrides.api_limits);
    // Read after the descriptor limit was raised: the cap is a share of it.
    let cap = crate::api::listen::connection_cap(
        overrides.api_limits.max_connections,
        &crate::fd_budget::current(),
    );
    info!(
        addr = %api_listen,
        tls = api_tls.is_some(),
        max_connections = cap,
        header_timeout_s = overrides.api_limits.header_timeout.as_secs(),
        max_event_streams = overrides.api_limits.max_event_streams,
        "REST API listening"
    );
    // At shutdown the API stops accepting and finishes the requests in
    // flight (within the grace period).
    tasks.set.spawn(crate::api::listen::serve(
        listener,
        api_tls,
        app,
        overrides.api_limits,
        cap,
        tasks.token.clone(),
        clock,
    ));

    log_start(&model, &overrides.config);
    // Config sync hears of the starting configuration before the state
    // task forwards it any metric exchange event (a link UP must find it).
    let running_text = daemon
        .running_config
        .read()
        .map(|t| Arc::clone(&t))
        .unwrap_or_else(|_| Arc::from(""));
    tasks.spawn(crate::config_sync::task(&daemon, &model, running_text));
    let (ready_tx, ready_rx) = oneshot::channel();
    tasks.spawn(state_task(
        Arc::clone(&daemon),
        engine,
        first,
        StateInputs {
            mep_tx,
            mep: mep_rx,
            inputs: input_rx,
            ready: Some(ready_tx),
        },
    ));
    if let Some(period) = crate::systemd::watchdog_period() {
        info!(
            ?period,
            "systemd watchdog: pinging while the state task answers"
        );
        let pinger = Arc::clone(&daemon);
        tasks.spawn(crate::systemd::keep_alive(
            period,
            input_tx.clone(),
            Input::Alive,
            move || pinger.systemd.watchdog(),
        ));
    }
    let dns_daemon = Arc::clone(&daemon);
    let answer = async move {
        if ready_rx.await.is_err() {
            return;
        }
        // READY=1 only once the sockets bound at start are served, the
        // first publication made: a query sent on READY is answered.
        match start_dns(&dns_daemon, listeners, xdp, &tcp, &dns_listen, workers) {
            Ok(()) => {
                let running = dns_daemon.dns.snapshot.load();
                dns_daemon.systemd.ready(&crate::systemd::loaded_status(
                    running.generation(),
                    running.model().services.len(),
                ));
            }
            Err(e) => {
                error!("cannot start DNS: {e:#}");
                dns_daemon
                    .systemd
                    .status(&format!("cannot start DNS: {e:#}"));
            }
        }
    };
    tasks.spawn(answer);
    let result = wait_for_signals(overrides, Arc::clone(&daemon), input_tx).await;
    // Hand the VIPs over first (priority 0), while DNS still answers.
    if let Some(v) = vrrp {
        v.shutdown().await;
    }
    tasks.token.cancel();
    // Close metric exchange sessions so peers see this site go at once.
    if let Ok(mut mep) = daemon.mep.lock()
        && let Some(m) = mep.take()
    {
        m.stop();
    }
    tasks.wait(SHUTDOWN_GRACE).await;
    result
}

/// The daemon's long-lived tasks and the one token that stops them all.
#[derive(Default)]
struct Tasks {
    token: tokio_util::sync::CancellationToken,
    set: tokio::task::JoinSet<()>,
}

impl Tasks {
    /// Runs `task` until it ends or the daemon stops.
    fn spawn(&mut self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        let token = self.token.clone();
        self.set.spawn(async move {
            tokio::select! {
                () = token.cancelled() => {}
                () = task => {}
            }
        });
    }

    /// After `token.cancel()`: waits up to `grace` for every task to end
    /// (the API finishes the requests in flight); those still running then
    /// are aborted when the set is dropped.
    async fn wait(mut self, grace: Duration) {
        let all_ended = async { while self.set.join_next().await.is_some() {} };
        if tokio::time::timeout(grace, all_ended).await.is_err() {
            warn!("some tasks did not stop within {grace:?}; they are cut short");
        }
    }
}

/// Replaces the DNS cookie secret every `dns.cookies.secret_rotation` (read
/// from the running model each period, so a reload changes it from the
/// next rotation on); the previous secret stays valid for one more period.
async fn rotate_cookie_secrets(dns: Arc<DnsShared>) {
    loop {
        let period = dns
            .snapshot
            .load()
            .model()
            .dns
            .cookies
            .as_ref()
            .map(|c| c.secret_rotation)
            .unwrap_or(sextant_core::CookieSettings::DEFAULT_SECRET_ROTATION);
        tokio::time::sleep(period).await;
        if dns.snapshot.load().model().dns.cookies.is_some() {
            dns.rotate_cookie_secret();
        }
    }
}

/// Sets up the XDP path for the UDP listen addresses (attached, not yet
/// answering): a failure here stops the start, with the reason.
fn open_xdp(
    settings: &XdpSettings,
    listen: &[SocketAddr],
    vips: &[std::net::IpAddr],
) -> anyhow::Result<sextant_dns::xdp::XdpPath> {
    use sextant_dns::xdp::{AttachMode, BindMode, XdpOptions, XdpPath};
    if listen.iter().any(|a| vips.contains(&a.ip())) {
        anyhow::bail!(
            "--xdp-interface: the XDP path does not serve VRRP VIPs (it would answer for a VIP while this node is backup); listen on the VIPs without it"
        );
    }
    let options = XdpOptions {
        attach: match settings.attach {
            XdpAttach::Auto => AttachMode::Auto,
            XdpAttach::Native => AttachMode::Native,
            XdpAttach::Generic => AttachMode::Generic,
        },
        bind: match settings.bind {
            XdpBind::Auto => BindMode::Auto,
            XdpBind::Copy => BindMode::Copy,
            XdpBind::ZeroCopy => BindMode::ZeroCopy,
        },
    };
    XdpPath::open(&settings.interface, listen, &options).with_context(|| {
        format!(
            "--xdp-interface {}: cannot start the XDP path",
            settings.interface
        )
    })
}

/// Serves the bound DNS sockets: UDP on plain threads, TCP on its runtime,
/// and the XDP path's queues on threads of their own.
fn start_dns(
    daemon: &Arc<Daemon>,
    listeners: DnsListeners,
    xdp: Option<sextant_dns::xdp::XdpPath>,
    tcp: &tokio::runtime::Handle,
    addrs: &[SocketAddr],
    workers: usize,
) -> anyhow::Result<()> {
    if addrs.is_empty() {
        return Ok(());
    }
    sextant_dns::spawn_udp_sockets(listeners.udp, Arc::clone(&daemon.dns))
        .context("cannot start the DNS worker threads")?;
    if let Some(path) = xdp {
        let (queues, attached) = (path.queues(), path.attached());
        let interface = path.interface().to_string();
        path.serve(Arc::clone(&daemon.dns))
            .context("cannot start the XDP worker threads")?;
        info!(%interface, queues, attached, "DNS answering UDP through XDP");
    }
    for listener in listeners.tcp {
        tcp.spawn(sextant_dns::serve_tcp(listener, Arc::clone(&daemon.dns)));
    }
    for addr in addrs {
        info!(%addr, udp_workers = workers, "DNS answering on UDP and TCP");
    }
    daemon
        .dns_serving
        .store(true, std::sync::atomic::Ordering::Release);
    Ok(())
}

fn log_start(model: &Model, file: &Path) {
    for gap in crate::dnssec::signing_gaps(model) {
        warn!("DNSSEC: {gap}");
    }
    let local = model.local_site.map(|s| model.site(s));
    if let Some((site, parent)) = local.and_then(|s| s.parent.map(|p| (s, model.site(p)))) {
        warn!(
            site = %site.name,
            parent = %parent.name,
            "this node is a child site: it reports its services to its parent and answers no DNS; only parent sites answer DNS"
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

/// SIGHUP re-reads the configuration off the state task (parsing a large
/// file takes a while; nothing waits for it); SIGTERM and SIGINT end the
/// process.
async fn wait_for_signals(
    overrides: Overrides,
    daemon: Arc<Daemon>,
    inputs: mpsc::Sender<Input>,
) -> anyhow::Result<()> {
    use std::sync::atomic::{AtomicU8, Ordering};
    use tokio::signal::unix::{SignalKind, signal};
    let mut hup = signal(SignalKind::hangup())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    // 0: idle; 1: a reload runs; 2: it runs and another SIGHUP came, so it
    // reads the file once more when done (an edit saved meanwhile counts).
    let loading = Arc::new(AtomicU8::new(0));
    loop {
        tokio::select! {
            _ = hup.recv() => {
                // The query log's file is reopened (logrotate moved it).
                if let Some(log) = daemon.dns.query_log.get() {
                    log.reopen.store(true, Ordering::Release);
                }
                if loading.fetch_max(1, Ordering::AcqRel) > 0 {
                    loading.store(2, Ordering::Release);
                    info!("SIGHUP: a reload is running; the file is read again when it is done");
                    continue;
                }
                info!("SIGHUP: reloading the configuration");
                let (overrides, daemon, inputs, loading) =
                    (overrides.clone(), Arc::clone(&daemon), inputs.clone(), Arc::clone(&loading));
                tokio::task::spawn_blocking(move || loop {
                    let signalled = Instant::now();
                    daemon.systemd.reloading();
                    // A token rotation takes effect without a restart.
                    daemon.api_access.reload();
                    let (done, outcome) = oneshot::channel();
                    {
                        // Not while a configuration put over the API is
                        // written and swapped in: the file is read before
                        // or after it, and applied in that order.
                        let _writer = daemon.config_writer.blocking_lock();
                        let input = prepare_reload(&overrides, &daemon, signalled, done);
                        if inputs.blocking_send(input).is_err() {
                            return;
                        }
                    }
                    // The state task has put the outcome in STATUS= when
                    // it answers; the reload is over for systemd.
                    match outcome.blocking_recv() {
                        Err(_) => return,
                        // The file runs now: unsaved commands are gone.
                        Ok(Ok(_)) => {
                            let dropped = daemon.unsaved.lock().map(|mut u| u.clear()).unwrap_or_default();
                            crate::unsaved::log_dropped(&dropped, "SIGHUP re-read the file");
                            crate::unsaved::forget(&daemon.config_file);
                        }
                        Ok(Err(_)) => {}
                    }
                    daemon.systemd.reloaded();
                    // Again if a SIGHUP came meanwhile, else idle.
                    if loading.compare_exchange(1, 0, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                        return;
                    }
                    loading.store(1, Ordering::Release);
                });
            }
            _ = term.recv() => {
                info!("SIGTERM: stopping");
                daemon.systemd.stopping("stopping (SIGTERM)");
                return Ok(());
            }
            _ = int.recv() => {
                info!("SIGINT: stopping");
                daemon.systemd.stopping("stopping (SIGINT)");
                return Ok(());
            }
        }
    }
}

/// Reads and validates the file and builds its tables, off the state task
/// (at 100,000 services this is most of a reload's time).
fn prepare_reload(
    overrides: &Overrides,
    daemon: &Daemon,
    signalled: Instant,
    done: oneshot::Sender<Result<u64, String>>,
) -> Input {
    let started = Instant::now();
    match load_with_text(overrides) {
        Ok((model, text)) => {
            let parse = started.elapsed();
            prepared_input(
                daemon,
                model,
                text,
                parse,
                signalled,
                Some(done),
                sextant_config_sync::Cause::Reload,
            )
        }
        Err(e) => Input::Reloaded {
            result: Err(format!("{e:#}")),
            parse: started.elapsed(),
            prepare: Duration::ZERO,
            signalled,
            text: Arc::from(""),
            done: Some(done),
            cause: sextant_config_sync::Cause::Reload,
        },
    }
}

/// A validated configuration (read from `text`) made ready for the state
/// task, as a SIGHUP reload does it; `done` hears the generation it got.
pub fn prepared_input(
    daemon: &Daemon,
    mut model: Model,
    text: Arc<str>,
    parse: Duration,
    signalled: Instant,
    done: Option<oneshot::Sender<Result<u64, String>>>,
    cause: sextant_config_sync::Cause,
) -> Input {
    let started = Instant::now();
    if is_child(&model) {
        model.dns_listen.clear();
    }
    warn_fixed_listeners(daemon, &model);
    for w in &model.warnings {
        warn!("{w}");
    }
    let prepared =
        Prepared::new(Arc::new(model)).at(crate::admin_state::unix_ms(daemon.clock.wall_now()));
    Input::Reloaded {
        result: Ok(Box::new(prepared)),
        parse,
        prepare: started.elapsed(),
        signalled,
        text,
        done,
        cause,
    }
}

/// At most this many probe results waiting in the channel are applied (and
/// published) together.
const PROBE_BATCH: usize = 1024;

/// How often new LDNS and query marks go from the DNS path to the engine.
const LDNS_SWEEP: Duration = Duration::from_millis(250);

/// How often this node samples its own CPU and memory use for its reports.
const SITE_METRICS_INTERVAL: Duration = Duration::from_secs(5);

/// Inputs of the state task besides the monitors' own channels.
pub enum Input {
    /// Load figures pushed over the API.
    Figures(sextant_core::ServiceId, sextant_core::ServiceMetrics),
    /// The operator set this site's figures: sample (and send) them now.
    SiteFigures,
    /// VRRP: this node is (`true`) or is no longer master of the VIP that
    /// is the site IP.
    SiteIpMaster(bool),
    /// An operator's maintenance change (API); answered once it is
    /// published and saved.
    Admin {
        change: sextant_state::AdminChange,
        reply: oneshot::Sender<AdminOutcome>,
    },
    /// A DNS self-probe of this node's listener on a VIP.
    Listener {
        addr: SocketAddr,
        probe: sextant_state::listeners::ListenerProbe,
    },
    /// A configuration re-read after SIGHUP (or put over the API) with its tables built, how long
    /// reading and building took, and when the signal came.
    Reloaded {
        result: Result<Box<Prepared>, String>,
        parse: Duration,
        prepare: Duration,
        signalled: Instant,
        /// The text the configuration was read from.
        text: Arc<str>,
        /// Told the generation once the configuration is in force (or why
        /// not): a configuration put over the API waits for it.
        done: Option<oneshot::Sender<Result<u64, String>>>,
        /// An operator's change, or a configuration config sync received.
        cause: sextant_config_sync::Cause,
    },
    /// The watchdog's liveness probe: answered at once, so the pings stop
    /// when the state task no longer takes inputs.
    Alive(oneshot::Sender<()>),
}

struct StateInputs {
    mep_tx: mpsc::Sender<sextant_mep::MepEvent>,
    mep: mpsc::Receiver<sextant_mep::MepEvent>,
    inputs: mpsc::Receiver<Input>,
    ready: Option<oneshot::Sender<()>>,
}

/// Starts metric exchange for `model`.
fn start_mep(
    clock: Clock,
    status: &Arc<arc_swap::ArcSwap<sextant_mep::MepStatus>>,
    model: &Arc<Model>,
    generation: u64,
    tx: mpsc::Sender<sextant_mep::MepEvent>,
    state_files: &crate::state_files::StateFiles,
) -> anyhow::Result<sextant_mep::MepHandle> {
    let options = sextant_mep::Options {
        state_file: is_child(model).then(|| state_files.mep()),
        origin: clock.origin(),
        status: Arc::clone(status),
        // The share of the descriptor limit in force (docs/operations.md).
        max_inbound: crate::fd_budget::current().mep,
        ..Default::default()
    };
    sextant_mep::start_with(Arc::clone(model), generation, tx, options).with_context(|| {
        "cannot start metric exchange (the local site's IP must be an address of this host; \
         `-metricExchange DISABLED` on the site turns metric exchange off)"
    })
}

/// Starts metric exchange (with the last report, for a node that became
/// master of the site IP's VIP) or stops it (the peers reconnect to the new
/// master), as the engine says.
fn run_metric_exchange(daemon: &Daemon, edges: &Edges, run: bool) {
    let Ok(mut mep) = daemon.mep.lock() else {
        return;
    };
    if run && mep.is_none() {
        match start_mep(
            daemon.clock,
            &daemon.mep_status,
            &edges.model,
            edges.generation,
            edges.mep_tx.clone(),
            &daemon.state_files,
        ) {
            Ok(m) => {
                if let Ok(last) = daemon.last_report.lock()
                    && let Some(report) = last.as_ref()
                {
                    m.publish(crate::mep_glue::report_to_wire(report));
                }
                info!("metric exchange started");
                *mep = Some(m);
            }
            Err(e) => error!("{e:#}"),
        }
    } else if !run && let Some(m) = mep.take() {
        info!("metric exchange stopped");
        tokio::spawn(m.close());
    }
}

/// What the state task runs for the engine: monitors and load sources of
/// the configuration in force.
struct Edges {
    model: Arc<Model>,
    generation: u64,
    gates: Gates,
    monitors: Option<sextant_health::Monitors>,
    loads: Option<sextant_health::LoadSources>,
    obs_tx: mpsc::Sender<sextant_health::Observation>,
    load_tx: mpsc::Sender<sextant_health::LoadObservation>,
    /// The RTT method's LDNS prober (parents only).
    ldns: Option<sextant_health::ldns::LdnsProber>,
    ldns_tx: mpsc::Sender<sextant_health::ldns::LdnsSample>,
    /// Results of the path-loss bursts the engine asks for.
    loss_tx: mpsc::Sender<Event>,
    /// For a metric exchange started late ([`Effect::MetricExchange`]).
    mep_tx: mpsc::Sender<sextant_mep::MepEvent>,
    /// The outcome of the maintenance change just applied, for its answer.
    admin_outcome: Option<AdminOutcome>,
    admin_save_error: Option<String>,
}

impl Edges {
    /// One probe burst to each target, each reported as `Event::PathLoss`
    /// (datacenter mode's DC Based PACKET_LOSS). The bursts run on their
    /// own; a result that finds the channel full is dropped (the next
    /// access period measures again).
    fn measure_path_loss(&self, targets: sextant_state::LossTargets) {
        use sextant_health::path_loss::{Burst, measure};
        static ICMP_REFUSED_LOGGED: std::sync::atomic::AtomicBool =
            std::sync::atomic::AtomicBool::new(false);
        for (site, ip) in targets.targets {
            let tx = self.loss_tx.clone();
            tokio::spawn(async move {
                match measure(ip, targets.source, Burst::DEFAULT).await {
                    Ok(l) => {
                        tracing::debug!(%site, sent = l.sent, lost = l.lost, "path loss measured");
                        let _ = tx.try_send(Event::PathLoss {
                            site,
                            sent: u32::from(l.sent),
                            lost: u32::from(l.lost),
                        });
                    }
                    Err(e) => {
                        if !ICMP_REFUSED_LOGGED.swap(true, Ordering::Relaxed) {
                            tracing::warn!(%site, error = %e, "cannot measure the packet loss to other datacenters (ICMP); DC_BASED PACKET_LOSS ranks them as unknown (last)");
                        }
                    }
                }
            });
        }
    }

    /// Starts the LDNS prober on a parent, or gives it the new settings.
    fn start_ldns(&mut self) {
        let model = &self.model;
        let local = model.local_site.and_then(|l| model.sites.get(l));
        let Some(site) = local.filter(|s| s.parent.is_none()) else {
            self.ldns = None;
            return;
        };
        let config =
            sextant_health::ldns::LdnsProberConfig::from_params(&model.params, Some(site.ip));
        match self.ldns.as_mut() {
            Some(p) => p.reconfigure(config),
            None => {
                self.ldns = Some(sextant_health::ldns::LdnsProber::start(
                    config,
                    self.ldns_tx.clone(),
                ))
            }
        }
    }

    /// Starts the monitors and load sources of the configuration in force;
    /// after a reload, the monitors of unchanged bindings keep running.
    fn start(&mut self) {
        self.monitors = Some(match self.monitors.take() {
            Some(running) => {
                let (monitors, kept) =
                    running.restart(Arc::clone(&self.model), self.generation, self.gates.clone());
                info!(
                    kept,
                    started = monitors.len() - kept,
                    "health monitors: unchanged bindings keep probing"
                );
                monitors
            }
            None => sextant_health::start_gated(
                Arc::clone(&self.model),
                self.generation,
                self.obs_tx.clone(),
                self.gates.clone(),
            ),
        });
        self.loads = Some(sextant_health::start_load_sources(
            Arc::clone(&self.model),
            self.generation,
            self.load_tx.clone(),
        ));
        self.start_ldns();
    }
}

/// Drives the engine: the only place its events come from and its effects
/// are carried out.
async fn state_task(
    daemon: Arc<Daemon>,
    mut engine: Engine,
    first: Vec<Effect>,
    mut inputs: StateInputs,
) {
    let (obs_tx, mut obs_rx) = mpsc::channel(4096);
    let (load_tx, mut load_rx) = mpsc::channel(1024);
    let (ldns_tx, mut ldns_rx) = mpsc::channel(4096);
    let (loss_tx, mut loss_rx) = mpsc::channel(256);
    let mut edges = Edges {
        model: Arc::clone(engine.model()),
        generation: engine.generation(),
        gates: Gates::open(engine.model().services.len()),
        monitors: None,
        loads: None,
        obs_tx,
        load_tx,
        ldns: None,
        ldns_tx,
        loss_tx,
        mep_tx: inputs.mep_tx.clone(),
        admin_outcome: None,
        admin_save_error: None,
    };
    // New LDNS from the DNS path and the query marks of the published RTT
    // table reach the engine this often.
    let mut ldns_tick = tokio::time::interval(LDNS_SWEEP);
    ldns_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut swept: Option<Arc<sextant_core::RttTable>> = None;
    carry_out(&daemon, &mut edges, &mut inputs.ready, first);
    edges.start();
    daemon.dns.sessions.set_sharing(engine.session_exchange());
    let mut site_tick = tokio::time::interval(SITE_METRICS_INTERVAL);
    let mut session_tick = tokio::time::interval(engine.session_share_interval());
    let mut sampler = crate::site_metrics::Sampler::default();
    let has_mep = sextant_state::metric_exchange_configured(engine.model());
    let has_dc = !engine.model().dc_records.is_empty();
    let mut local_errors = crate::fd_budget::LocalErrorLog::default();
    loop {
        let wake = engine.next_wake().map(|at| daemon.clock.deadline(at));
        let event = tokio::select! {
            Some(ev) = inputs.mep.recv() => {
                announce_mep(&daemon, &ev);
                daemon.config_sync.on_mep(&ev);
                match crate::mep_glue::translate(ev, &daemon.mep_counters, daemon.clock.now()) {
                    Some(e) => e,
                    None => continue,
                }
            }
            // The branches are served fairly (select! picks at random among
            // the ready ones), so a reload never waits behind a stream of
            // probe results, nor they behind it.
            Some(input) = inputs.inputs.recv() => match input {
                Input::Figures(service, metrics) => Event::LocalFigures { service, metrics },
                Input::SiteFigures => own_site_figures(&daemon, &mut sampler),
                Input::SiteIpMaster(master) => Event::SiteIpMaster(master),
                Input::Listener { addr, probe } => Event::ListenerProbe { addr, probe },
                Input::Alive(reply) => {
                    let _ = reply.send(());
                    continue;
                }
                Input::Admin { change, reply } => {
                    let effects = engine.apply(Event::Admin(change), daemon.clock.now());
                    // Carried out (published, saved) before the answer, so
                    // a query right after it sees the change.
                    carry_out(&daemon, &mut edges, &mut inputs.ready, effects);
                    if let Some(outcome) = edges.admin_outcome.take() {
                        let _ = reply.send(outcome);
                    }
                    continue;
                }
                Input::Reloaded { result: Ok(prepared), parse, prepare, signalled, text, done, cause } => {
                    let started = Instant::now();
                    let effects = engine.apply(Event::Reload(prepared), daemon.clock.now());
                    let engine_time = started.elapsed();
                    daemon.dns.set_rate_limiter(engine.model().dns.rrl.as_ref());
                    carry_out(&daemon, &mut edges, &mut inputs.ready, effects);
                    daemon.dns.sessions.set_sharing(engine.session_exchange());
                    session_tick = tokio::time::interval(engine.session_share_interval());
                    if let Ok(mut last) = daemon.last_reload_error.write() {
                        // The configuration is in force; a refused token
                        // file is still worth showing.
                        *last = daemon.api_access.reload_error();
                    }
                    if let Ok(mut running) = daemon.running_config.write() {
                        *running = Arc::clone(&text);
                    }
                    daemon.config_sync.loaded(text, Arc::clone(engine.model()), Some(cause));
                    daemon.systemd.status(&crate::systemd::loaded_status(
                        engine.generation(),
                        engine.model().services.len(),
                    ));
                    if let Some(done) = done {
                        let _ = done.send(Ok(engine.generation()));
                    }
                    daemon.events.send(
                        "reload",
                        serde_json::json!({
                            "time": crate::api::rfc3339(daemon.clock.wall_now()),
                            "generation": engine.generation(),
                            "result": "ok",
                            "services": engine.model().services.len(),
                        }),
                    );
                    daemon.counters.reloads_ok.fetch_add(1, Ordering::Relaxed);
                    info!(
                        generation = engine.generation(),
                        services = engine.model().services.len(),
                        parse_ms = parse.as_millis() as u64,
                        prepare_ms = prepare.as_millis() as u64,
                        engine_ms = engine_time.as_millis() as u64,
                        apply_ms = started.elapsed().as_millis() as u64,
                        total_ms = signalled.elapsed().as_millis() as u64,
                        "configuration reloaded"
                    );
                    for gap in crate::dnssec::signing_gaps(engine.model()) {
                        warn!("DNSSEC: {gap}");
                    }
                    continue;
                }
                Input::Reloaded { result: Err(e), done, .. } => {
                    error!("reload failed; the running configuration stays in force: {e}");
                    daemon
                        .systemd
                        .status(&crate::systemd::reload_failed_status(&e, engine.generation()));
                    if let Some(done) = done {
                        let _ = done.send(Err(e.clone()));
                    }
                    daemon.events.send(
                        "reload",
                        serde_json::json!({
                            "time": crate::api::rfc3339(daemon.clock.wall_now()),
                            "generation": engine.generation(),
                            "result": "error",
                            "error": e,
                        }),
                    );
                    daemon.counters.reloads_failed.fetch_add(1, Ordering::Relaxed);
                    if let Ok(mut last) = daemon.last_reload_error.write() {
                        *last = Some(match daemon.api_access.reload_error() {
                            Some(tokens) => format!("{e}\n{tokens}"),
                            None => e,
                        });
                    }
                    continue;
                }
            },
            Some(obs) = obs_rx.recv() => {
                // Results already waiting are applied with this one and
                // published once (at start every service's first result
                // arrives within a second; one publication each is N²).
                let generation = engine.generation();
                let batch: Vec<Event> = std::iter::once(obs)
                    .chain(std::iter::from_fn(|| obs_rx.try_recv().ok()).take(PROBE_BATCH - 1))
                    .filter(|o| o.generation == generation)
                    .map(|o| {
                        if o.local_error {
                            local_errors.note(&o.detail, daemon.clock.now());
                            return Event::ProbeLocalError {
                                service: o.service,
                                monitor: o.monitor,
                                detail: o.detail,
                            };
                        }
                        Event::Probe(Probe {
                            service: o.service,
                            monitor: o.monitor,
                            success: o.success,
                            detail: o.detail,
                            response_time: o.response_time,
                        })
                    })
                    .collect();
                if batch.is_empty() {
                    continue;
                }
                daemon.counters.probes(
                    engine.model(),
                    batch.iter().filter_map(|ev| match ev {
                        Event::Probe(p) => Some((
                            p.monitor,
                            if p.success { ProbeCount::Success } else { ProbeCount::Failure },
                        )),
                        Event::ProbeLocalError { monitor, .. } => {
                            Some((*monitor, ProbeCount::LocalError))
                        }
                        _ => None,
                    }),
                );
                let effects = engine.apply_all(batch, daemon.clock.now());
                carry_out(&daemon, &mut edges, &mut inputs.ready, effects);
                continue;
            }
            Some(load) = load_rx.recv() => {
                if load.generation != engine.generation() {
                    continue;
                }
                Event::LocalFigures { service: load.service, metrics: load.metrics }
            }
            _ = site_tick.tick(), if has_mep || has_dc => {
                own_site_figures(&daemon, &mut sampler)
            }
            Some(loss) = loss_rx.recv() => loss,
            _ = session_tick.tick(), if has_mep && engine.session_exchange() => {
                let entries: Vec<LocalSession> = daemon
                    .dns
                    .sessions
                    .drain_journal()
                    .into_iter()
                    .map(|e| LocalSession { vserver: e.vserver, key: e.key, service: e.service, remaining: e.remaining })
                    .collect();
                if entries.is_empty() {
                    continue;
                }
                Event::LocalSessions(entries)
            }
            Some(sample) = ldns_rx.recv() => {
                let sextant_health::ldns::LdnsSample { ldns, outcome } = sample;
                let (sample, ttl) = match outcome {
                    sextant_health::ldns::LdnsOutcome::Rtt { rtt, kind, ttl } => {
                        (Some((rtt, kind)), ttl)
                    }
                    sextant_health::ldns::LdnsOutcome::Failed { detail } => {
                        tracing::debug!(%ldns, %detail, "LDNS probe cycle failed");
                        (None, None)
                    }
                };
                Event::LdnsSample { group: ldns, sample, ttl }
            }
            _ = ldns_tick.tick() => {
                if let (Some(p), Ok(mut c)) = (edges.ldns.as_ref(), daemon.ldns.prober.lock()) {
                    *c = p.counters();
                }
                let mut groups = daemon.dns.ldns.drain();
                let current = Arc::clone(daemon.dns.snapshot.load().rtt());
                // Marks made in a table replaced since the last sweep count too.
                if let Some(old) = swept.as_ref().filter(|old| !Arc::ptr_eq(old, &current)) {
                    groups.extend(old.take_queried());
                }
                groups.extend(current.take_queried());
                swept = Some(current);
                if groups.is_empty() {
                    continue;
                }
                Event::LdnsQueried(groups)
            }
            _ = sleep_until(wake) => Event::Tick,
            else => break,
        };
        let effects = engine.apply(event, daemon.clock.now());
        carry_out(&daemon, &mut edges, &mut inputs.ready, effects);
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Samples this site's figures (the operator's where set) for the engine.
fn own_site_figures(daemon: &Daemon, sampler: &mut crate::site_metrics::Sampler) -> Event {
    let overrides = daemon.site_overrides.lock().map(|o| *o).unwrap_or_default();
    let sample = crate::site_metrics::sample(sampler, overrides);
    Event::OwnSiteFigures(crate::mep_glue::site_from_wire(&sample))
}

/// Carries out the engine's effects, in order.
fn carry_out(
    daemon: &Daemon,
    edges: &mut Edges,
    ready: &mut Option<oneshot::Sender<()>>,
    effects: Vec<Effect>,
) {
    let mut restart = false;
    edges.admin_save_error = None;
    for effect in effects {
        match effect {
            Effect::Publish(snapshot) => daemon.dns.snapshot.store(snapshot),
            Effect::Transition {
                service,
                up,
                reason,
            } => {
                let Some(s) = edges.model.services.get(service) else {
                    continue;
                };
                record_transition(daemon, &edges.model, service, up, &reason);
                daemon.counters.transition(&s.name, up);
                if up {
                    info!(service = %s.name, ip = %s.ip, port = s.port, %reason, "service UP");
                } else {
                    warn!(service = %s.name, ip = %s.ip, port = s.port, %reason, "service DOWN");
                }
            }
            Effect::Gate { service, open } => edges.gates.set(service, open),
            Effect::MetricExchange { run } => run_metric_exchange(daemon, edges, run),
            Effect::ListenerState {
                addr,
                up: false,
                reason,
            } => {
                warn!(%addr, "DNS self-probe: {reason}; VRRP gives this VIP up");
            }
            Effect::ListenerState {
                addr,
                up: true,
                reason,
            } => {
                info!(%addr, "DNS self-probe: {reason}");
            }
            Effect::ProbePace {
                service,
                slot,
                slow,
            } => edges.gates.set_slow(service, slot, slow),
            Effect::Report(report) => {
                if let Ok(mut last) = daemon.last_report.lock() {
                    *last = Some(Arc::clone(&report));
                }
                if let Ok(mep) = daemon.mep.lock()
                    && let Some(m) = mep.as_ref()
                {
                    m.publish(crate::mep_glue::report_to_wire(&report));
                }
            }
            Effect::ShareSessions(list) => {
                if let Ok(mep) = daemon.mep.lock()
                    && let Some(m) = mep.as_ref()
                {
                    m.send_to_peers(crate::mep_glue::sessions_to_wire(&list));
                }
            }
            Effect::InstallSessions(list) => {
                for s in list {
                    daemon
                        .dns
                        .sessions
                        .install(s.vserver, s.key, s.service, s.remaining);
                }
            }
            Effect::Ready => {
                if let Some(tx) = ready.take() {
                    let _ = tx.send(());
                }
            }
            Effect::ProbeLdns { add, remove } => {
                if let Some(p) = edges.ldns.as_mut() {
                    for g in add {
                        p.add(g);
                    }
                    for g in remove {
                        p.remove(g);
                    }
                }
            }
            Effect::MeasurePathLoss(targets) => edges.measure_path_loss(targets),
            Effect::Admin(result) => {
                if let Ok(r) = &result {
                    let entry = crate::api::admin_entry(r);
                    info!(
                        kind = %entry.kind,
                        name = %entry.name,
                        state = %entry.state,
                        reason = entry.reason.as_deref().unwrap_or("-"),
                        "maintenance: {} {} is now {}",
                        entry.kind,
                        entry.name,
                        entry.state
                    );
                    let mut data = serde_json::to_value(&entry).unwrap_or_default();
                    if let Some(o) = data.as_object_mut() {
                        o.insert(
                            "time".into(),
                            crate::api::rfc3339(daemon.clock.wall_now()).into(),
                        );
                    }
                    daemon.events.send("maintenance", data);
                }
                edges.admin_outcome = Some(AdminOutcome {
                    result,
                    save_error: None,
                });
            }
            Effect::SaveAdmin(records) => {
                let file = daemon.state_files.admin();
                // A small file, written on an operator's action only; the
                // answer to that action waits for it anyway.
                let saved =
                    tokio::task::block_in_place(|| crate::admin_state::save(&file, &records));
                if let Err(e) = saved {
                    error!("{e:#}; the change is in force but a restart would lose it");
                    edges.admin_save_error = Some(format!("{e:#}"));
                }
            }
            Effect::AdminDropped(records) => {
                for r in records {
                    warn!(
                        kind = r.kind.as_str(),
                        name = %r.name,
                        state = r.mark.state.as_str(),
                        "maintenance: {} {} is no longer configured; its mark is dropped",
                        r.kind.as_str(),
                        r.name
                    );
                }
            }
            Effect::ShareRtt(list) => {
                if let Ok(mep) = daemon.mep.lock()
                    && let Some(m) = mep.as_ref()
                {
                    let p = &edges.model.params;
                    m.send_to_peers(crate::mep_glue::rtt_to_wire(
                        &list,
                        p.ldns_v4_mask,
                        p.ldns_v6_mask,
                    ));
                    daemon.ldns.messages_sent.fetch_add(1, Ordering::Relaxed);
                    daemon
                        .ldns
                        .entries_sent
                        .fetch_add(list.len() as u64, Ordering::Relaxed);
                }
            }
            Effect::Restart {
                model,
                generation,
                closed_gates,
                slow_probes,
                renumber,
            } => {
                if let Some(l) = edges.loads.take() {
                    l.stop();
                }
                // Persistence entries survive the reload under the new ids.
                daemon.dns.sessions.renumber(
                    |v| renumber.vservers.get(v).copied().flatten(),
                    |s| renumber.services.get(s).copied().flatten(),
                );
                edges.gates = Gates::open(model.services.len());
                for s in closed_gates {
                    edges.gates.set(s, false);
                }
                for (service, slot) in slow_probes {
                    edges.gates.set_slow(service, slot, true);
                }
                if let Ok(mep) = daemon.mep.lock()
                    && let Some(m) = mep.as_ref()
                {
                    m.reload(Arc::clone(&model), generation);
                }
                daemon
                    .history
                    .retain(model.services.iter().map(|s| s.name.as_str()));
                edges.model = model;
                edges.generation = generation;
                restart = true;
            }
        }
    }
    if restart {
        edges.start();
    }
    // The save's failure goes with the change it saved.
    if let (Some(o), Some(e)) = (edges.admin_outcome.as_mut(), edges.admin_save_error.take()) {
        o.save_error = Some(e);
    }
}

/// What an operator's maintenance change came to, for its API answer.
#[derive(Debug)]
pub struct AdminOutcome {
    pub result: Result<sextant_state::AdminRecord, sextant_state::AdminError>,
    /// In force but not written to the state file.
    pub save_error: Option<String>,
}

/// A service's transition into its history and onto `/v1/events`.
fn record_transition(
    daemon: &Daemon,
    model: &Model,
    service: sextant_core::ServiceId,
    up: bool,
    reason: &str,
) {
    let Some(s) = model.services.get(service) else {
        return;
    };
    let word = |up: bool| if up { "UP" } else { "DOWN" };
    let time = crate::api::rfc3339(daemon.clock.wall_now());
    daemon.history.record(
        &s.name,
        sextant_api::HistoryEntry {
            time: time.clone(),
            from: word(!up).to_string(),
            to: word(up).to_string(),
            reason: reason.to_string(),
        },
    );
    daemon.events.send(
        "transition",
        serde_json::json!({
            "time": time,
            "service": s.name,
            "site": model.site(s.site).name,
            "from": word(!up),
            "to": word(up),
            "reason": reason,
        }),
    );
}

/// Metric exchange links that come up or go down, onto `/v1/events`.
fn announce_mep(daemon: &Daemon, ev: &sextant_mep::MepEvent) {
    let time = crate::api::rfc3339(daemon.clock.wall_now());
    match ev {
        sextant_mep::MepEvent::PeerUp { site, via } => daemon.events.send(
            "mep",
            serde_json::json!({"time": time, "site": site, "state": "UP", "via": via}),
        ),
        sextant_mep::MepEvent::PeerDown { site, reason } => daemon.events.send(
            "mep",
            serde_json::json!({"time": time, "site": site, "state": "DOWN", "reason": reason}),
        ),
        _ => {}
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
    if running.model().vrrp != model.vrrp {
        warn!(
            "VRRP settings (vrid, vridParam, VIPs) changed in the file; they take effect at the \
             next restart (restart the nodes one at a time: the others keep the VIPs)"
        );
    }
}
