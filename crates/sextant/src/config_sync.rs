//! Config sync's edges: the pure [`Syncer`] runs in one task here; this
//! module feeds it (the configuration in force after every start, reload,
//! API write or sync; config messages and link changes from metric
//! exchange; a one-second tick; the operator's manual sync) and carries its
//! outputs out: messages over the MEP link, the apply of a received
//! configuration (merged into this node's file, validated, written
//! atomically, swapped in as a reload), the version's state file, logs.
//! docs/config-sync.md describes the behaviour.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use sextant_config::files::{FileAccess, FileKind};
use sextant_config::sync_text::{self, SyncHeader, SyncSyntax};
use sextant_config_sync::{
    Cause, Exchange, Input, Level, Output, Preview, Settings, Status, Syncer,
};
use sextant_core::Model;
use sextant_mep::MepEvent;
use sextant_mep::message::{ConfigVersion, FileDigest};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, error, info, warn};

use crate::serve::Daemon;

/// Announced instead of this build's version when set: lets a test run two
/// parents that disagree on the version without building another binary.
pub const VERSION_ENV: &str = "SEXTANT_CONFIG_SYNC_VERSION";

/// How often the syncer's timer runs (retries, timeouts).
const TICK: Duration = Duration::from_secs(1);

enum Command {
    Loaded {
        text: Arc<str>,
        model: Arc<Model>,
        cause: Option<Cause>,
    },
    Core(Input),
    Manual {
        force_site: Option<String>,
        reply: oneshot::Sender<u64>,
    },
    Preview {
        reply: oneshot::Sender<Vec<Preview>>,
    },
    Exchange {
        since: u64,
        reply: oneshot::Sender<Vec<Exchange>>,
    },
}

/// The daemon's handle on config sync.
pub struct ConfigSync {
    tx: mpsc::Sender<Command>,
    rx: std::sync::Mutex<Option<mpsc::Receiver<Command>>>,
    status: ArcSwap<Option<Status>>,
}

impl Default for ConfigSync {
    fn default() -> Self {
        let (tx, rx) = mpsc::channel(1024);
        ConfigSync {
            tx,
            rx: std::sync::Mutex::new(Some(rx)),
            status: ArcSwap::from_pointee(None),
        }
    }
}

impl ConfigSync {
    /// Where every peer parent stands (None before the first configuration).
    pub fn status(&self) -> Arc<Option<Status>> {
        self.status.load_full()
    }

    /// The configuration in force changed (the state task calls this after
    /// every swap; `cause` None: the start).
    pub fn loaded(&self, text: Arc<str>, model: Arc<Model>, cause: Option<Cause>) {
        if self
            .tx
            .try_send(Command::Loaded { text, model, cause })
            .is_err()
        {
            warn!("config sync is not keeping up; a configuration change was not seen by it");
        }
    }

    /// Takes the config sync part of a metric exchange event: its messages
    /// and the links with peer parents.
    pub fn on_mep(&self, event: &MepEvent) {
        let input = match event {
            MepEvent::PeerUp { site, via: None } => Input::PeerUp { site: site.clone() },
            MepEvent::PeerDown { site, .. } => Input::PeerDown { site: site.clone() },
            MepEvent::ConfigSync { from_site, msg } => Input::Received {
                site: from_site.clone(),
                msg: msg.clone(),
            },
            _ => return,
        };
        if self.tx.try_send(Command::Core(input)).is_err() {
            warn!("config sync is not keeping up; a metric exchange message to it was dropped");
        }
    }

    /// `sync gslb config [-forceSync SITE]`: returns the exchange log's
    /// position before it, for `-debug`.
    pub async fn manual(&self, force_site: Option<String>) -> Option<u64> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Command::Manual { force_site, reply })
            .await
            .ok()?;
        rx.await.ok()
    }

    pub async fn preview(&self) -> Option<Vec<Preview>> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(Command::Preview { reply }).await.ok()?;
        rx.await.ok()
    }

    pub async fn exchange_since(&self, since: u64) -> Option<Vec<Exchange>> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Command::Exchange { since, reply })
            .await
            .ok()?;
        rx.await.ok()
    }

    fn send_core(&self, input: Input) {
        if self.tx.try_send(Command::Core(input)).is_err() {
            warn!("config sync is not keeping up; an apply result was dropped");
        }
    }
}

fn software() -> String {
    std::env::var(VERSION_ENV).unwrap_or_else(|_| env!("CARGO_PKG_VERSION").to_string())
}

/// The syncer's view of a configuration.
fn settings(model: &Model, syntax: SyncSyntax) -> Settings {
    let local = model.local_site.map(|l| model.site(l));
    let is_child = local.is_some_and(|s| s.parent.is_some());
    let local_name = local.map(|s| s.name.clone()).unwrap_or_default();
    let peers = if is_child || local.is_none() {
        Vec::new()
    } else {
        model
            .sites
            .iter()
            .filter(|s| s.parent.is_none() && !s.name.eq_ignore_ascii_case(&local_name))
            .map(|s| s.name.clone())
            .collect()
    };
    Settings {
        local_site: local_name,
        software: software(),
        syntax: syntax.as_str().to_string(),
        automatic: model.params.automatic_config_sync,
        peers,
    }
}

/// The digests of the location files the configuration reads.
fn file_digests(model: &Model) -> Vec<FileDigest> {
    model
        .location_files
        .iter()
        .map(|(written, opened)| FileDigest {
            path: written.clone(),
            digest: FileAccess::operator()
                .read(opened, FileKind::Location)
                .ok()
                .map(|b| sextant_config_sync::digest_bytes(&b)),
        })
        .collect()
}

/// The config sync task, started with the configuration the daemon starts
/// with.
pub fn task(
    daemon: &Arc<Daemon>,
    model: &Arc<Model>,
    text: Arc<str>,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    let rx = daemon.config_sync.rx.lock().ok().and_then(|mut r| r.take());
    let d = Arc::clone(daemon);
    daemon.config_sync.loaded(text, Arc::clone(model), None);
    async move {
        if let Some(rx) = rx {
            run(d, rx).await;
        }
    }
}

async fn run(d: Arc<Daemon>, mut rx: mpsc::Receiver<Command>) {
    let syntax = SyncSyntax::of(&d.config_file).unwrap_or(SyncSyntax::Appliance);
    let mut syncer: Option<Syncer> = None;
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let command = tokio::select! {
            c = rx.recv() => match c {
                Some(c) => c,
                None => return,
            },
            _ = tick.tick() => Command::Core(Input::Tick),
        };
        let now = d.clock.now();
        let outputs = match command {
            Command::Loaded { text, model, cause } => {
                let Some(input) = loaded_input(&d, &text, &model, cause) else {
                    continue;
                };
                let s = syncer.get_or_insert_with(|| Syncer::new(settings(&model, syntax)));
                s.on(input, now)
            }
            Command::Core(input) => match syncer.as_mut() {
                Some(s) => s.on(input, now),
                None => continue,
            },
            Command::Manual { force_site, reply } => match syncer.as_mut() {
                Some(s) => {
                    let _ = reply.send(s.exchange_seq());
                    s.on(Input::Manual { force_site }, now)
                }
                None => continue,
            },
            Command::Preview { reply } => {
                let _ = reply.send(syncer.as_ref().map(Syncer::preview).unwrap_or_default());
                continue;
            }
            Command::Exchange { since, reply } => {
                let _ = reply.send(
                    syncer
                        .as_ref()
                        .map(|s| s.exchange_since(since))
                        .unwrap_or_default(),
                );
                continue;
            }
        };
        for o in outputs {
            carry_out(&d, o);
        }
        if let Some(s) = &syncer {
            d.config_sync.status.store(Arc::new(Some(s.status())));
        }
    }
}

/// The syncer's input for a configuration now in force; None when its
/// shared part cannot be read (logged).
fn loaded_input(d: &Daemon, text: &str, model: &Model, cause: Option<Cause>) -> Option<Input> {
    let split = match sync_text::split(&d.config_file, text) {
        Ok(s) => s,
        Err(e) => {
            error!(
                "config sync: cannot split the configuration into its shared and local parts: {e}"
            );
            return None;
        }
    };
    // None: the start, with the version kept in the state file and the one
    // the file's sync header names.
    let cause = cause.unwrap_or_else(|| Cause::Start {
        saved: read_state(&d.state_files.config_sync()),
        header: split.header.as_ref().map(|h| ConfigVersion {
            incarnation: h.incarnation,
            origin: h.origin.clone(),
            digest: h.digest.clone(),
        }),
    });
    Some(Input::Loaded {
        settings: settings(model, split.syntax),
        shared: Arc::from(split.shared),
        files: file_digests(model),
        file_incarnation: split.incarnation,
        cause,
    })
}

fn read_state(path: &Path) -> Option<ConfigVersion> {
    let bytes = std::fs::read(path).ok()?;
    match serde_json::from_slice(&bytes) {
        Ok(v) => Some(v),
        Err(e) => {
            warn!(file = %path.display(), "config sync: the state file cannot be read ({e}); the version starts from the configuration file");
            None
        }
    }
}

fn carry_out(d: &Arc<Daemon>, output: Output) {
    match output {
        Output::Send { site, msg } => {
            if let Ok(mep) = d.mep.lock()
                && let Some(m) = mep.as_ref()
            {
                m.send_to(&site, msg);
            } else {
                debug!(%site, "config sync: metric exchange is not running; message not sent");
            }
        }
        Output::Apply {
            from,
            transfer,
            version,
            shared,
            files,
        } => {
            let d = Arc::clone(d);
            tokio::spawn(async move {
                if let Err(failed) = apply(&d, &from, transfer, &version, shared, files).await {
                    d.config_sync.send_core(Input::ApplyFailed {
                        from,
                        transfer,
                        version,
                        errors: failed.errors,
                        retry: failed.retry,
                    });
                }
            });
        }
        Output::Save(version) => {
            let path = d.state_files.config_sync();
            let written = serde_json::to_vec_pretty(&version)
                .map_err(std::io::Error::other)
                .and_then(|b| sextant_mep::state::write_atomically(&path, &b));
            if let Err(e) = written {
                error!(file = %path.display(), "config sync: cannot save the version in force: {e}");
            }
        }
        Output::Log { level, text } => match level {
            Level::Debug => debug!("{text}"),
            Level::Info => info!("{text}"),
            Level::Warn => warn!("{text}"),
            Level::Error => error!("{text}"),
        },
    }
}

/// Why an apply did not happen.
struct ApplyFailed {
    errors: Vec<String>,
    /// Not the configuration's fault: the sender should try again later.
    retry: bool,
}

impl From<Vec<String>> for ApplyFailed {
    fn from(errors: Vec<String>) -> Self {
        ApplyFailed {
            errors,
            retry: false,
        }
    }
}

/// Merges a received shared part into this node's file, validates it as a
/// reload would, writes it atomically and swaps it in. The state task then
/// reports it back as [`Cause::Synced`].
///
/// A file whose shared part differs from the one in force holds an edit
/// not loaded yet (the operator saved it; the SIGHUP is on its way): it is
/// not overwritten, and the sender tries again later, by when the edit is a
/// change of this node's that competes by the usual rule.
async fn apply(
    d: &Arc<Daemon>,
    from: &str,
    transfer: u64,
    version: &ConfigVersion,
    shared: Arc<str>,
    files: Vec<FileDigest>,
) -> Result<(), ApplyFailed> {
    // Turns with API writes and SIGHUP reloads.
    let _writer = d.config_writer.lock().await;
    let started = Instant::now();
    let path = d.config_file.clone();
    let files_of_state = d.state_files.clone();
    let overrides = d.overrides.clone();
    let header = SyncHeader {
        origin: version.origin.clone(),
        incarnation: version.incarnation,
        digest: version.digest.clone(),
        at: crate::api::rfc3339(d.clock.wall_now()),
    };
    let running = d
        .running_config
        .read()
        .map(|t| Arc::clone(&t))
        .unwrap_or_else(|_| Arc::from(""));
    let saved = d.unsaved.lock().ok().and_then(|u| u.saved.clone());
    // A received configuration reads files only where this node's
    // operator allows (docs/config-sync.md).
    let access = crate::serve::received_files(&overrides, d.dns.snapshot.load().model());
    let checked = tokio::task::spawn_blocking(move || {
        let current = sextant_config::read_config_file(&path).map_err(|e| {
            e.errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        })?;
        let shared_of = |text: &str| sync_text::split(&path, text).map(|s| s.shared).ok();
        // With unsaved configuration commands the file is what was last
        // saved, and the received part is merged into what runs: the
        // write saves this node's unsaved changes with it.
        let (loaded, base) = match &saved {
            Some(saved) => (Arc::clone(saved), running.to_string()),
            None => (Arc::clone(&running), current.clone()),
        };
        if shared_of(&current) != shared_of(&loaded) {
            return Err(ApplyFailed {
                errors: vec![format!(
                    "{} holds a change that is not loaded yet (reload it: SIGHUP or PUT /v1/config); a sync does not overwrite it",
                    path.display()
                )],
                retry: true,
            });
        }
        let merged =
            sync_text::merge(&path, &base, &shared, &header).map_err(|e| vec![e.to_string()])?;
        let model = crate::serve::load_text_with(&overrides, &merged, &access)?;
        let warnings = compare_files(&files, &model);
        // The file it replaces is kept as NAME.conf.prev.
        files_of_state
            .replace_config(merged.as_bytes())
            .map_err(|e| vec![format!("{e:#}")])?;
        Ok::<_, ApplyFailed>((model, merged, warnings))
    })
    .await
    .map_err(|e| ApplyFailed::from(vec![format!("the apply failed: {e}")]))??;
    let (model, text, warnings) = checked;
    for w in &warnings {
        warn!("config sync: {w}");
    }
    let parse = started.elapsed();
    let (done_tx, done_rx) = oneshot::channel();
    let input = crate::serve::prepared_input(
        d,
        model,
        Arc::from(text),
        parse,
        started,
        Some(done_tx),
        Cause::Synced {
            from: from.to_string(),
            transfer,
            version: version.clone(),
            warnings,
        },
    );
    if d.inputs.send(input).await.is_err() {
        return Err(vec!["the server is stopping".to_string()].into());
    }
    match done_rx.await {
        Ok(Ok(generation)) => {
            // The file holds what runs now.
            let saved = d.unsaved.lock().map(|mut u| u.clear()).unwrap_or_default();
            if !saved.is_empty() {
                info!(
                    commands = saved.len(),
                    "config sync: this node's unsaved configuration commands were saved with the received configuration"
                );
            }
            crate::unsaved::forget(&d.config_file);
            info!(
                %from,
                incarnation = version.incarnation,
                origin = %version.origin,
                generation,
                "config sync: configuration received and in force"
            );
            Ok(())
        }
        Ok(Err(e)) => Err(vec![e].into()),
        Err(_) => Err(vec!["the server is stopping".to_string()].into()),
    }
}

/// Warnings for location files whose content differs from the sender's.
fn compare_files(sent: &[FileDigest], model: &Model) -> Vec<String> {
    let here = file_digests(model);
    sent.iter()
        .filter_map(|s| {
            let mine = here.iter().find(|h| h.path == s.path)?;
            (mine.digest != s.digest).then(|| {
                format!(
                    "location file {} differs from the sender's ({} here, {} there): answers by location may differ between parents; copy the file",
                    s.path,
                    mine.digest.as_deref().unwrap_or("unreadable"),
                    s.digest.as_deref().unwrap_or("unreadable")
                )
            })
        })
        .collect()
}
