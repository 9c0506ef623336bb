//! Automatic configuration sync among parent sites (seed 001), pure.
//!
//! Parents share the GSLB part of their configuration (`sextant_config::
//! sync_text` splits a file into that shared text and the node's own
//! part). A [`Syncer`] keeps one parent's version of the shared text and
//! what it knows of every peer parent's, and decides what travels:
//!
//! * **Versions** are `(incarnation, origin, digest)`. A change made here (a
//!   reload of an edited file, `PUT /v1/config`) takes an incarnation one
//!   above the highest seen anywhere; [`version::compare`] orders versions
//!   the same way on every parent (higher incarnation, then the origin
//!   whose name sorts first), so all of them end on the same one. Two
//!   versions with one digest hold one text: in sync, whatever the labels.
//! * **Offers**: each parent tells each peer parent its version when the
//!   link comes up and after every change ([`ConfigOffer`]). A parent that
//!   runs a newer version than a peer sends it a transfer; the peer applies
//!   it (as a reload, validated) and answers with a [`ConfigResult`]. Having
//!   applied it, it offers it on, so a parent partitioned from the origin
//!   catches up through any other.
//! * **Transfers** are a line delta from the version the peer runs when the
//!   sender still has that version's text, else the whole text; either is
//!   cut into parts that fit a frame ([`delta`]). A delta that does not fit
//!   the receiver's text (checked by digest) is answered `NeedFull`.
//! * **Refusals**: a peer with another software version, sync protocol or
//!   configuration syntax is refused at both ends; a receiver where
//!   automatic sync is off takes only an operator's manual sync; a child
//!   never takes part (its node refuses in `sextant-mep-proto`).
//!
//! Inputs come with `now` (the daemon's monotonic clock, as a duration
//! since its start); outputs are messages to send, a text to apply, the
//! version to save, and log lines. No clock, socket or file here.

// Pure: no unsafe code, and (crate clippy.toml) no clock, socket, file or
// spawned task.
#![forbid(unsafe_code)]

pub mod delta;
pub mod version;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use sextant_mep_proto::message::{
    ConfigLabel, ConfigOffer, ConfigOutcome, ConfigResult, ConfigUpdate, ConfigVersion, FileDigest,
    LineOp, Message,
};

pub use version::{beats, compare, describe, digest, digest_bytes};

/// The config sync protocol's version ([`ConfigOffer::sync_protocol`]).
pub const SYNC_PROTOCOL: u32 = 1;
/// Texts of past versions kept to send deltas from.
const HISTORY: usize = 16;
/// A transfer without an answer for this long is given up and tried again.
pub const RESULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Retries of a transfer to a peer that is behind wait at least this long.
const RETRY_AFTER: Duration = Duration::from_secs(5);
/// The most an incoming transfer may hold (a hostile peer could otherwise
/// send parts until memory runs out): far above the text of 100,000
/// services.
pub const MAX_TRANSFER_BYTES: usize = 256 << 20;
/// Lines of the exchange log kept for `sync gslb config -debug`.
const EXCHANGE_LOG: usize = 256;
/// Changes a version's lineage remembers.
const LINEAGE: usize = 64;
/// Versions made here that are remembered: a received version that names
/// this node as its origin must be one of them.
const MADE_HERE: usize = 64;

/// What this node is, from its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// This node's site.
    pub local_site: String,
    /// This build's version (`0.1.0`); parents sync only within one.
    pub software: String,
    /// `appliance` or `toml`.
    pub syntax: String,
    /// `-automaticConfigSync ENABLED`.
    pub automatic: bool,
    /// The peer parents (every other parent, or every other site of a flat
    /// mesh); empty on a child site, which never syncs.
    pub peers: Vec<String>,
}

/// Why the configuration in force changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// The daemon started; `saved` is the version it ran when it stopped
    /// (its state file), `header` the one a sync wrote at the file's top.
    Start {
        saved: Option<ConfigVersion>,
        header: Option<ConfigVersion>,
    },
    /// A reload or an API write: the operator's change, if the shared text
    /// differs.
    Reload,
    /// The apply of a transfer this syncer asked for ([`Output::Apply`]).
    Synced {
        from: String,
        transfer: u64,
        version: ConfigVersion,
        warnings: Vec<String>,
    },
}

/// What happened.
#[derive(Debug, Clone)]
pub enum Input {
    /// The configuration in force is now this one.
    Loaded {
        settings: Settings,
        /// Its shared text.
        shared: Arc<str>,
        /// The files it names (location files) with their digests here.
        files: Vec<FileDigest>,
        /// `-incarnation` in the file, if any.
        file_incarnation: Option<u64>,
        cause: Cause,
    },
    /// The direct link with a peer parent is up / down.
    PeerUp {
        site: String,
    },
    PeerDown {
        site: String,
    },
    /// A config sync message from a peer parent.
    Received {
        site: String,
        msg: Message,
    },
    /// The apply of [`Output::Apply`] failed: the configuration in force is
    /// unchanged. `retry`: not the configuration's fault (this node's file
    /// holds a change not loaded yet): the sender tries again later.
    ApplyFailed {
        from: String,
        transfer: u64,
        version: ConfigVersion,
        errors: Vec<String>,
        retry: bool,
    },
    /// The operator's `sync gslb config`: this node's configuration becomes
    /// the newest and goes to every peer parent, or (`force_site`) to that
    /// one only, as a whole text, even where automatic sync is off.
    Manual {
        force_site: Option<String>,
    },
    /// The periodic timer (every second or so).
    Tick,
}

/// How loud a log line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

/// What the edges must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Send on the direct link with the peer parent.
    Send {
        site: String,
        msg: Message,
    },
    /// Validate `shared` merged into this node's file, write it, swap it in
    /// as a reload does, then report [`Cause::Synced`] (or
    /// [`Input::ApplyFailed`]).
    Apply {
        from: String,
        transfer: u64,
        version: ConfigVersion,
        shared: Arc<str>,
        files: Vec<FileDigest>,
    },
    /// Keep this version across restarts (the state file).
    Save(ConfigVersion),
    Log {
        level: Level,
        text: String,
    },
}

/// Where a peer parent stands, for `/v1/sites` and `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeerState {
    /// No offer from it yet (the link is down, or just up).
    Unknown,
    /// It runs the text this node runs.
    InSync,
    /// This node runs a newer version; it has not taken it yet.
    Behind,
    /// It runs a newer version; this node waits for its transfer.
    Ahead,
    /// A transfer to it is under way.
    Sending,
    /// It runs another software version, protocol or syntax, or refused.
    Refused,
    /// It found this node's version invalid and keeps its own.
    Rejected,
    /// Automatic sync is off at one end and the versions differ.
    Disabled,
}

impl PeerState {
    pub fn as_str(self) -> &'static str {
        match self {
            PeerState::Unknown => "unknown",
            PeerState::InSync => "in_sync",
            PeerState::Behind => "behind",
            PeerState::Ahead => "ahead",
            PeerState::Sending => "sending",
            PeerState::Refused => "refused",
            PeerState::Rejected => "rejected",
            PeerState::Disabled => "disabled",
        }
    }

    pub const ALL: [PeerState; 8] = [
        PeerState::Unknown,
        PeerState::InSync,
        PeerState::Behind,
        PeerState::Ahead,
        PeerState::Sending,
        PeerState::Refused,
        PeerState::Rejected,
        PeerState::Disabled,
    ];
}

/// Totals of one peer's exchange since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerCounters {
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub deltas_sent: u64,
    pub fulls_sent: u64,
    /// Transfers it applied, rejected, or refused.
    pub applied: u64,
    pub rejected: u64,
    pub refused: u64,
    /// Transfers from it this node applied.
    pub received_applied: u64,
}

/// One peer parent as this node sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerStatus {
    pub site: String,
    pub up: bool,
    pub state: PeerState,
    /// The version it runs, as it last said.
    pub version: Option<ConfigVersion>,
    pub software: Option<String>,
    pub automatic: Option<bool>,
    pub last_error: Option<String>,
    /// When it last applied a version of this node's (the syncer's clock).
    pub last_sync: Option<Duration>,
    pub counters: PeerCounters,
}

/// The syncer's whole state, for the API.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub version: ConfigVersion,
    pub automatic: bool,
    pub software: String,
    pub syntax: String,
    pub peers: Vec<PeerStatus>,
    /// Changes made here that lost to another parent's (seed 001's rule).
    pub lost_changes: u64,
}

/// One step of the exchange, for `-debug`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub seq: u64,
    pub at: Duration,
    pub site: String,
    /// `->` sent, `<-` received, `..` decided.
    pub direction: &'static str,
    pub text: String,
}

/// What `sync gslb config -preview` shows for one peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    pub site: String,
    pub version: Option<ConfigVersion>,
    /// `in sync`, `delta`, `full`, or why nothing would be sent.
    pub transfer: String,
    /// The lines it would lose (`- `) and gain (`+ `), when its text is
    /// known here.
    pub diff: Option<Vec<String>>,
}

#[derive(Debug)]
struct Outbound {
    transfer: u64,
    version: ConfigVersion,
    sent_at: Duration,
}

#[derive(Debug)]
struct Peer {
    site: String,
    up: bool,
    offer: Option<ConfigOffer>,
    refused: Option<String>,
    outbound: Option<Outbound>,
    /// Do not retry before this time.
    retry_at: Duration,
    /// The version it rejected: not sent again until ours changes.
    rejected: Option<ConfigVersion>,
    last_error: Option<String>,
    last_sync: Option<Duration>,
    counters: PeerCounters,
}

impl Peer {
    fn new(site: &str) -> Peer {
        Peer {
            site: site.to_string(),
            up: false,
            offer: None,
            refused: None,
            outbound: None,
            retry_at: Duration::ZERO,
            rejected: None,
            last_error: None,
            last_sync: None,
            counters: PeerCounters::default(),
        }
    }
}

/// An incoming transfer being assembled.
#[derive(Debug)]
struct Inbound {
    transfer: u64,
    next_part: u32,
    version: ConfigVersion,
    base: Option<ConfigVersion>,
    forced: bool,
    text: String,
    ops: Vec<LineOp>,
    files: Vec<FileDigest>,
    lineage: Vec<ConfigLabel>,
    bytes: usize,
}

/// One parent's config sync.
#[derive(Debug)]
pub struct Syncer {
    settings: Settings,
    version: ConfigVersion,
    text: Arc<str>,
    files: Vec<FileDigest>,
    /// Past versions' texts, newest last (the current one included).
    history: VecDeque<(ConfigVersion, Arc<str>)>,
    /// The highest incarnation seen anywhere: a change made here takes one more.
    highest: u64,
    /// The changes the current version builds on, newest first: sent with
    /// it, so that a parent whose own change is not among them knows that
    /// change is undone.
    lineage: Vec<ConfigLabel>,
    /// The lineage of the apply under way, and of the one queued.
    applying_lineage: Vec<ConfigLabel>,
    queued_lineage: Vec<ConfigLabel>,
    lost_changes: u64,
    /// The versions this node made (a reload or API write, a manual sync,
    /// its file at start), newest last. A version that names this node as
    /// origin and is not here was never made here: a peer that sends one
    /// is lying about where it came from, and it is refused.
    made_here: VecDeque<ConfigVersion>,
    peers: BTreeMap<String, Peer>,
    inbound: HashMap<String, Inbound>,
    /// An apply is under way (one at a time).
    applying: bool,
    /// A complete transfer that waits for the apply under way.
    queued: Option<Output>,
    next_transfer: u64,
    log: VecDeque<Exchange>,
    log_seq: u64,
    now: Duration,
}

fn key(site: &str) -> String {
    site.to_lowercase()
}

impl Syncer {
    /// A syncer for the configuration the daemon starts with: call
    /// [`Syncer::on`] with [`Input::Loaded`] and [`Cause::Start`] first.
    pub fn new(settings: Settings) -> Syncer {
        let text: Arc<str> = Arc::from("");
        let version = ConfigVersion {
            incarnation: 0,
            origin: settings.local_site.clone(),
            digest: digest(&text),
        };
        Syncer {
            settings,
            version,
            text,
            files: Vec::new(),
            history: VecDeque::new(),
            highest: 0,
            lineage: Vec::new(),
            applying_lineage: Vec::new(),
            queued_lineage: Vec::new(),
            lost_changes: 0,
            made_here: VecDeque::new(),
            peers: BTreeMap::new(),
            inbound: HashMap::new(),
            applying: false,
            queued: None,
            next_transfer: 1,
            log: VecDeque::new(),
            log_seq: 0,
            now: Duration::ZERO,
        }
    }

    /// The version in force.
    pub fn version(&self) -> &ConfigVersion {
        &self.version
    }

    /// The shared text in force.
    pub fn text(&self) -> &Arc<str> {
        &self.text
    }

    /// Takes one input; returns what to do.
    pub fn on(&mut self, input: Input, now: Duration) -> Vec<Output> {
        self.now = now;
        let mut out = Vec::new();
        match input {
            Input::Loaded {
                settings,
                shared,
                files,
                file_incarnation,
                cause,
            } => self.on_loaded(settings, shared, files, file_incarnation, cause, &mut out),
            Input::PeerUp { site } => {
                if let Some(p) = self.peers.get_mut(&key(&site)) {
                    p.up = true;
                    p.offer = None;
                    p.refused = None;
                    p.outbound = None;
                    p.retry_at = Duration::ZERO;
                    let site = p.site.clone();
                    self.offer_to(&site, &mut out);
                }
            }
            Input::PeerDown { site } => {
                if let Some(p) = self.peers.get_mut(&key(&site)) {
                    p.up = false;
                    p.outbound = None;
                }
                self.inbound.remove(&key(&site));
            }
            Input::Received { site, msg } => self.on_message(&site, msg, &mut out),
            Input::ApplyFailed {
                from,
                transfer,
                version,
                errors,
                retry,
            } => {
                self.applying = false;
                if retry {
                    self.note(
                        &from,
                        "..",
                        format!(
                            "{} not applied now: {}",
                            describe(&version),
                            errors.join("; ")
                        ),
                    );
                    out.push(Output::Log {
                        level: Level::Warn,
                        text: format!(
                            "config sync: the configuration sent by {from} ({}) is not applied now: {}",
                            describe(&version),
                            errors.join("; ")
                        ),
                    });
                    self.answer(
                        &from,
                        transfer,
                        &version,
                        ConfigOutcome::Refused,
                        errors,
                        Vec::new(),
                        &mut out,
                    );
                    self.run_queued(&mut out);
                    return out;
                }
                self.note(
                    &from,
                    "..",
                    format!(
                        "{} rejected here: {}",
                        describe(&version),
                        errors.join("; ")
                    ),
                );
                out.push(Output::Log {
                    level: Level::Error,
                    text: format!(
                        "config sync: the configuration sent by {from} ({}) is not valid here; the running configuration stays in force: {}",
                        describe(&version),
                        errors.join("; ")
                    ),
                });
                self.answer(
                    &from,
                    transfer,
                    &version,
                    ConfigOutcome::Rejected,
                    errors,
                    Vec::new(),
                    &mut out,
                );
                self.run_queued(&mut out);
            }
            Input::Manual { force_site } => self.on_manual(force_site, &mut out),
            Input::Tick => self.on_tick(&mut out),
        }
        out
    }

    fn on_loaded(
        &mut self,
        settings: Settings,
        shared: Arc<str>,
        files: Vec<FileDigest>,
        file_incarnation: Option<u64>,
        cause: Cause,
        out: &mut Vec<Output>,
    ) {
        let old_settings = std::mem::replace(&mut self.settings, settings);
        self.sync_peer_list();
        let d = digest(&shared);
        self.files = files;
        if let Some(i) = file_incarnation {
            self.highest = self.highest.max(i);
        }
        let new_version = match cause {
            Cause::Start { saved, header } => {
                let had_version = saved.is_some() || header.is_some();
                let known = [saved, header]
                    .into_iter()
                    .flatten()
                    .inspect(|v| self.highest = self.highest.max(v.incarnation))
                    .find(|v| v.digest == d);
                match known {
                    Some(v) => v,
                    None => ConfigVersion {
                        // A file edited while the daemon was down is a change
                        // made here, newer than anything it ran before; a
                        // file never synced here is at its own incarnation
                        // (a saved appliance file's `-incarnation`, or 0).
                        incarnation: if had_version {
                            self.highest.saturating_add(1)
                        } else {
                            self.highest
                        },
                        origin: self.settings.local_site.clone(),
                        digest: d,
                    },
                }
            }
            Cause::Reload => {
                if d == self.version.digest {
                    if old_settings.automatic != self.settings.automatic {
                        self.offer_all(out);
                    }
                    return;
                }
                self.highest = self.highest.max(self.version.incarnation).saturating_add(1);
                let v = ConfigVersion {
                    incarnation: self.highest,
                    origin: self.settings.local_site.clone(),
                    digest: d,
                };
                self.extend_lineage();
                self.made(&v);
                out.push(Output::Log {
                    level: Level::Info,
                    text: format!(
                        "config sync: the shared configuration changed here: {}{}",
                        describe(&v),
                        if self.settings.automatic {
                            ", sent to the peer parents"
                        } else {
                            " (automatic sync is off: `sync gslb config` sends it)"
                        }
                    ),
                });
                v
            }
            Cause::Synced {
                from,
                transfer,
                version,
                warnings,
            } => {
                self.applying = false;
                let v = if version.digest == d {
                    version.clone()
                } else {
                    out.push(Output::Log {
                        level: Level::Error,
                        text: format!(
                            "config sync: the configuration applied from {from} reads back with another shared text than was sent ({} against {}); please report this",
                            d, version.digest
                        ),
                    });
                    ConfigVersion {
                        digest: d,
                        ..version.clone()
                    }
                };
                // A change made here is lost when the version replacing it
                // does not build on it (ours is not in its lineage).
                let made_here =
                    self.version.origin == self.settings.local_site && self.version.incarnation > 0;
                let lineage = std::mem::take(&mut self.applying_lineage);
                if made_here && !lineage.contains(&label(&self.version)) {
                    self.lost_changes += 1;
                    out.push(Output::Log {
                        level: Level::Warn,
                        text: format!(
                            "config sync: the change made here ({}) lost to {} (received from {from}) and is undone ({})",
                            describe(&self.version),
                            describe(&version),
                            version::RULE
                        ),
                    });
                }
                self.lineage = lineage;
                if let Some(p) = self.peers.get_mut(&key(&from)) {
                    p.counters.received_applied += 1;
                }
                self.note(&from, "..", format!("applied {}", describe(&v)));
                let running = v.clone();
                self.set_version(v, shared, out);
                self.answer(
                    &from,
                    transfer,
                    &version,
                    ConfigOutcome::Applied,
                    Vec::new(),
                    warnings,
                    out,
                );
                let _ = running;
                self.offer_all(out);
                self.run_queued(out);
                return;
            }
        };
        self.highest = self.highest.max(new_version.incarnation);
        // At start: the file and state this node keeps are its own word.
        if self.is_local(&new_version.origin) {
            self.made(&new_version);
        }
        let changed = new_version != self.version || self.text.as_ref() != shared.as_ref();
        self.set_version(new_version, shared, out);
        if changed {
            self.offer_all(out);
        }
    }

    fn set_version(&mut self, v: ConfigVersion, text: Arc<str>, out: &mut Vec<Output>) {
        if self.version != v {
            out.push(Output::Save(v.clone()));
        }
        self.version = v.clone();
        self.text = Arc::clone(&text);
        self.history.retain(|(h, _)| h.digest != v.digest);
        self.history.push_back((v, text));
        while self.history.len() > HISTORY {
            self.history.pop_front();
        }
        for p in self.peers.values_mut() {
            p.rejected = None;
            p.retry_at = Duration::ZERO;
        }
    }

    /// Whether `origin` names this node's site.
    fn is_local(&self, origin: &str) -> bool {
        key(origin) == key(&self.settings.local_site)
    }

    /// Remembers a version made here.
    fn made(&mut self, v: &ConfigVersion) {
        if !self.made_here.contains(v) {
            self.made_here.push_back(v.clone());
        }
        while self.made_here.len() > MADE_HERE {
            self.made_here.pop_front();
        }
    }

    /// `v` names this node as its origin but was never made here.
    fn never_made_here(&self, v: &ConfigVersion) -> bool {
        self.is_local(&v.origin) && !self.made_here.contains(v)
    }

    /// Refuses a transfer of a version that claims to come from this node
    /// but was never made here: its sender (or whoever it got it from)
    /// forged the label, e.g. to make its text win by this node's name.
    fn refuse_forged_origin(
        &mut self,
        site: &str,
        transfer: u64,
        v: &ConfigVersion,
        out: &mut Vec<Output>,
    ) {
        let why = format!(
            "{} names {} as its origin, but {} never made it: refused (a version made at a site is only ever announced by that site first)",
            describe(v),
            self.settings.local_site,
            self.settings.local_site
        );
        self.note(site, "..", format!("refused: {why}"));
        out.push(Output::Log {
            level: Level::Error,
            text: format!(
                "config sync: the configuration sent by {site} is refused and the running configuration stays in force: {why}"
            ),
        });
        self.answer(
            site,
            transfer,
            v,
            ConfigOutcome::Rejected,
            vec![why],
            Vec::new(),
            out,
        );
    }

    /// The current version becomes the newest step of the lineage (before
    /// a change made here replaces it).
    fn extend_lineage(&mut self) {
        self.lineage.insert(0, label(&self.version));
        self.lineage.truncate(LINEAGE);
    }

    /// Keeps a `Peer` for each configured peer parent, and only those.
    fn sync_peer_list(&mut self) {
        let want: BTreeMap<String, String> = self
            .settings
            .peers
            .iter()
            .filter(|p| key(p) != key(&self.settings.local_site))
            .map(|p| (key(p), p.clone()))
            .collect();
        self.peers.retain(|k, _| want.contains_key(k));
        for (k, name) in want {
            self.peers.entry(k).or_insert_with(|| Peer::new(&name));
        }
    }

    fn offer(&self) -> ConfigOffer {
        ConfigOffer {
            version: self.version.clone(),
            software: self.settings.software.clone(),
            sync_protocol: SYNC_PROTOCOL,
            syntax: self.settings.syntax.clone(),
            automatic: self.settings.automatic,
        }
    }

    fn offer_all(&mut self, out: &mut Vec<Output>) {
        let up: Vec<String> = self
            .peers
            .values()
            .filter(|p| p.up)
            .map(|p| p.site.clone())
            .collect();
        for site in up {
            self.offer_to(&site, out);
            // Their last offer is still what they run: push at once where
            // they are behind, without waiting for their next offer.
            self.push_if_behind(&site, false, out);
        }
    }

    fn offer_to(&mut self, site: &str, out: &mut Vec<Output>) {
        let msg = Message::ConfigOffer(self.offer());
        self.send(site, msg, out);
    }

    fn send(&mut self, site: &str, msg: Message, out: &mut Vec<Output>) {
        let bytes = msg.to_json().map(|b| b.len() as u64 + 6).unwrap_or(0);
        if let Some(p) = self.peers.get_mut(&key(site)) {
            p.counters.bytes_sent += bytes;
        }
        let what = summary(&msg);
        self.note(site, "->", what);
        out.push(Output::Send {
            site: site.to_string(),
            msg,
        });
    }

    fn note(&mut self, site: &str, direction: &'static str, text: String) {
        self.log_seq += 1;
        self.log.push_back(Exchange {
            seq: self.log_seq,
            at: self.now,
            site: site.to_string(),
            direction,
            text,
        });
        while self.log.len() > EXCHANGE_LOG {
            self.log.pop_front();
        }
    }

    fn on_message(&mut self, site: &str, msg: Message, out: &mut Vec<Output>) {
        let Some(p) = self.peers.get_mut(&key(site)) else {
            out.push(Output::Log {
                level: Level::Warn,
                text: format!(
                    "config sync: a message from {site}, which is not a peer parent here; ignored"
                ),
            });
            return;
        };
        let site = p.site.clone();
        p.counters.bytes_received += msg.to_json().map(|b| b.len() as u64 + 6).unwrap_or(0);
        self.note(&site, "<-", summary(&msg));
        match msg {
            Message::ConfigOffer(offer) => self.on_offer(&site, offer, out),
            Message::ConfigUpdate(update) => self.on_update(&site, update, out),
            Message::ConfigResult(result) => self.on_result(&site, result, out),
            _ => {}
        }
    }

    /// Why this node does not sync with a peer that offers `offer`, if it
    /// does not.
    fn incompatible(&self, offer: &ConfigOffer) -> Option<String> {
        if offer.sync_protocol != SYNC_PROTOCOL {
            return Some(format!(
                "it speaks config sync protocol {}, this node {SYNC_PROTOCOL}",
                offer.sync_protocol
            ));
        }
        if offer.software != self.settings.software {
            return Some(format!(
                "it runs Sextant {}, this node {}: every parent must run the same version to sync its configuration (seed 001)",
                offer.software, self.settings.software
            ));
        }
        if offer.syntax != self.settings.syntax {
            return Some(format!(
                "its configuration file is in the {} syntax, this node's in the {} syntax: parents sync only within one syntax",
                offer.syntax, self.settings.syntax
            ));
        }
        None
    }

    fn on_offer(&mut self, site: &str, offer: ConfigOffer, out: &mut Vec<Output>) {
        self.highest = self.highest.max(offer.version.incarnation);
        let refused = self.incompatible(&offer);
        let Some(p) = self.peers.get_mut(&key(site)) else {
            return;
        };
        let newly_refused = refused.is_some() && p.refused != refused;
        p.refused = refused.clone();
        p.offer = Some(offer);
        if let Some(why) = refused {
            p.last_error = Some(format!("config sync refused: {why}"));
            if newly_refused {
                out.push(Output::Log {
                    level: Level::Error,
                    text: format!(
                        "config sync with {site} refused: {why}; both keep their configuration"
                    ),
                });
            }
            return;
        }
        self.push_if_behind(site, false, out);
    }

    /// Sends our version to `site` if it runs an older one (or, `forced`,
    /// whatever it runs), unless a transfer is under way or it refused.
    fn push_if_behind(&mut self, site: &str, forced: bool, out: &mut Vec<Output>) {
        let automatic = self.settings.automatic;
        let now = self.now;
        let Some(p) = self.peers.get(&key(site)) else {
            return;
        };
        if !p.up || p.refused.is_some() {
            return;
        }
        let Some(offer) = &p.offer else {
            return;
        };
        if !forced {
            if !automatic || !offer.automatic {
                return;
            }
            if !beats(&self.version, &offer.version)
                || p.outbound.is_some()
                || now < p.retry_at
                || p.rejected.as_ref() == Some(&self.version)
            {
                return;
            }
        }
        let base = offer.version.clone();
        self.start_transfer(site, Some(base), forced, out);
    }

    /// Sends our text to `site`: a delta from `base` when we still have
    /// its text and a delta is worth it, else the whole text.
    fn start_transfer(
        &mut self,
        site: &str,
        base: Option<ConfigVersion>,
        forced: bool,
        out: &mut Vec<Output>,
    ) {
        let transfer = self.next_transfer;
        self.next_transfer += 1;
        let base_text = base.as_ref().and_then(|b| {
            self.history
                .iter()
                .rev()
                .find(|(v, _)| v.digest == b.digest)
                .map(|(_, t)| Arc::clone(t))
        });
        let ops = base_text
            .as_ref()
            .and_then(|t| delta::delta(t, &self.text))
            .filter(|ops| {
                let size: usize = ops
                    .iter()
                    .map(|o| match o {
                        LineOp::Insert(l) => l.iter().map(|s| s.len() + 4).sum(),
                        _ => 16,
                    })
                    .sum();
                size < self.text.len() / 2 + 64
            });
        let mut msgs = Vec::new();
        let template = ConfigUpdate {
            transfer,
            version: self.version.clone(),
            base: None,
            part: 0,
            last: false,
            text: String::new(),
            ops: Vec::new(),
            forced,
            files: self.files.clone(),
            lineage: self.lineage.clone(),
        };
        let kind = match ops {
            Some(ops) => {
                let groups = delta::cut_ops(ops);
                let n = groups.len();
                for (i, g) in groups.into_iter().enumerate() {
                    msgs.push(ConfigUpdate {
                        base: base.clone(),
                        ops: g,
                        ..part_of(&template, i, n)
                    });
                }
                "delta"
            }
            None => {
                let parts = delta::cut_text(&self.text);
                let n = parts.len();
                for (i, t) in parts.into_iter().enumerate() {
                    msgs.push(ConfigUpdate {
                        text: t.to_string(),
                        ..part_of(&template, i, n)
                    });
                }
                "full"
            }
        };
        let version = self.version.clone();
        if let Some(p) = self.peers.get_mut(&key(site)) {
            if kind == "delta" {
                p.counters.deltas_sent += 1;
            } else {
                p.counters.fulls_sent += 1;
            }
            p.outbound = Some(Outbound {
                transfer,
                version: version.clone(),
                sent_at: self.now,
            });
        }
        self.note(
            site,
            "..",
            format!(
                "transfer {transfer}: {} as {}{} in {} part(s){}",
                describe(&version),
                if kind == "delta" {
                    "a delta"
                } else {
                    "the whole text"
                },
                base.as_ref()
                    .filter(|_| kind == "delta")
                    .map(|b| format!(" from {}", describe(b)))
                    .unwrap_or_default(),
                msgs.len(),
                if forced { ", forced" } else { "" }
            ),
        );
        for m in msgs {
            self.send(site, Message::ConfigUpdate(m), out);
        }
    }

    fn on_update(&mut self, site: &str, u: ConfigUpdate, out: &mut Vec<Output>) {
        self.highest = self.highest.max(u.version.incarnation);
        let refused = self.peers.get(&key(site)).and_then(|p| p.refused.clone());
        if let Some(why) = refused {
            if u.last {
                self.answer(
                    site,
                    u.transfer,
                    &u.version,
                    ConfigOutcome::Refused,
                    vec![why],
                    Vec::new(),
                    out,
                );
            }
            return;
        }
        if !self.settings.automatic && !u.forced {
            self.inbound.remove(&key(site));
            if u.last {
                let why = format!(
                    "automatic config sync is disabled at {}; enable it there, or run `sync gslb config -forceSync {}` at {site}",
                    self.settings.local_site, self.settings.local_site
                );
                self.answer(
                    site,
                    u.transfer,
                    &u.version,
                    ConfigOutcome::Refused,
                    vec![why],
                    Vec::new(),
                    out,
                );
            }
            return;
        }
        // Assemble the parts.
        let k = key(site);
        if u.part == 0 {
            self.inbound.insert(
                k.clone(),
                Inbound {
                    transfer: u.transfer,
                    next_part: 0,
                    version: u.version.clone(),
                    base: u.base.clone(),
                    forced: u.forced,
                    text: String::new(),
                    ops: Vec::new(),
                    files: u.files.clone(),
                    lineage: u.lineage.iter().take(LINEAGE).cloned().collect(),
                    bytes: 0,
                },
            );
        }
        let fits = match self.inbound.get(&k) {
            Some(i) => {
                i.transfer == u.transfer
                    && i.next_part == u.part
                    && i.version == u.version
                    && i.base == u.base
            }
            None => false,
        };
        if !fits {
            self.inbound.remove(&k);
            if u.last {
                self.answer(
                    site,
                    u.transfer,
                    &u.version,
                    ConfigOutcome::NeedFull,
                    vec!["the transfer's parts came out of order".into()],
                    Vec::new(),
                    out,
                );
            }
            return;
        }
        let Some(inb) = self.inbound.get_mut(&k) else {
            return;
        };
        inb.bytes += u.text.len()
            + u.ops
                .iter()
                .map(|o| match o {
                    LineOp::Insert(l) => l.iter().map(|s| s.len() + 4).sum(),
                    _ => 8,
                })
                .sum::<usize>();
        if inb.bytes > MAX_TRANSFER_BYTES {
            self.inbound.remove(&k);
            out.push(Output::Log {
                level: Level::Warn,
                text: format!("config sync: the transfer from {site} exceeds {MAX_TRANSFER_BYTES} bytes; dropped"),
            });
            return;
        }
        inb.next_part += 1;
        inb.text.push_str(&u.text);
        inb.ops.extend(u.ops);
        if !u.last {
            return;
        }
        let Some(inb) = self.inbound.remove(&k) else {
            return;
        };
        self.on_transfer(site, inb, out);
    }

    /// A whole transfer is in.
    fn on_transfer(&mut self, site: &str, inb: Inbound, out: &mut Vec<Output>) {
        let v = inb.version.clone();
        if v.digest == self.version.digest {
            // The same text: in sync; take the newer label so that every
            // parent shows the same one (never a label of this node's that
            // it did not make).
            let newer = compare(&v, &self.version) == std::cmp::Ordering::Greater;
            if newer && self.never_made_here(&v) {
                self.refuse_forged_origin(site, inb.transfer, &v, out);
                return;
            }
            if newer {
                let text = Arc::clone(&self.text);
                self.set_version(v.clone(), text, out);
                self.lineage = inb.lineage.clone();
            }
            let running = self.version.clone();
            self.answer_with(
                site,
                inb.transfer,
                &v,
                ConfigOutcome::Applied,
                Vec::new(),
                Vec::new(),
                running,
                out,
            );
            return;
        }
        if !inb.forced && !beats(&v, &self.version) {
            self.note(
                site,
                "..",
                format!(
                    "{} is older than {}: not applied",
                    describe(&v),
                    describe(&self.version)
                ),
            );
            self.answer(
                site,
                inb.transfer,
                &v,
                ConfigOutcome::Superseded,
                Vec::new(),
                Vec::new(),
                out,
            );
            // It runs something older than ours: it gets ours.
            self.push_if_behind(site, false, out);
            return;
        }
        if self.never_made_here(&v) {
            self.refuse_forged_origin(site, inb.transfer, &v, out);
            return;
        }
        let text = match &inb.base {
            None => inb.text,
            Some(base) => {
                let applied = if base.digest == self.version.digest {
                    delta::apply(&self.text, &inb.ops)
                        .map_err(|e| e.to_string())
                        .and_then(|t| {
                            if digest(&t) == v.digest {
                                Ok(t)
                            } else {
                                Err("the text after the delta has another digest".into())
                            }
                        })
                } else {
                    Err(format!(
                        "the delta applies to {}, this node runs {}",
                        describe(base),
                        describe(&self.version)
                    ))
                };
                match applied {
                    Ok(t) => t,
                    Err(why) => {
                        self.note(site, "..", format!("delta not applied: {why}"));
                        self.answer(
                            site,
                            inb.transfer,
                            &v,
                            ConfigOutcome::NeedFull,
                            vec![why],
                            Vec::new(),
                            out,
                        );
                        return;
                    }
                }
            }
        };
        if inb.base.is_none() && digest(&text) != v.digest {
            self.answer(
                site,
                inb.transfer,
                &v,
                ConfigOutcome::NeedFull,
                vec!["the text received has another digest than announced".into()],
                Vec::new(),
                out,
            );
            return;
        }
        let apply = Output::Apply {
            from: site.to_string(),
            transfer: inb.transfer,
            version: v,
            shared: Arc::from(text),
            files: inb.files,
        };
        if self.applying {
            // One apply at a time; of those that wait, the newest.
            let keep_new = match (&self.queued, &apply) {
                (Some(Output::Apply { version: q, .. }), Output::Apply { version: n, .. }) => {
                    compare(n, q) == std::cmp::Ordering::Greater
                }
                _ => true,
            };
            if keep_new {
                self.queued = Some(apply);
                self.queued_lineage = inb.lineage;
            }
            return;
        }
        self.applying = true;
        self.applying_lineage = inb.lineage;
        out.push(apply);
    }

    fn run_queued(&mut self, out: &mut Vec<Output>) {
        if self.applying {
            return;
        }
        if let Some(Output::Apply {
            from,
            transfer,
            version,
            shared,
            files,
        }) = self.queued.take()
        {
            if !beats(&version, &self.version) {
                self.answer(
                    &from,
                    transfer,
                    &version,
                    ConfigOutcome::Superseded,
                    Vec::new(),
                    Vec::new(),
                    out,
                );
                return;
            }
            self.applying = true;
            self.applying_lineage = std::mem::take(&mut self.queued_lineage);
            out.push(Output::Apply {
                from,
                transfer,
                version,
                shared,
                files,
            });
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn answer(
        &mut self,
        site: &str,
        transfer: u64,
        version: &ConfigVersion,
        outcome: ConfigOutcome,
        errors: Vec<String>,
        warnings: Vec<String>,
        out: &mut Vec<Output>,
    ) {
        let running = self.version.clone();
        self.answer_with(
            site, transfer, version, outcome, errors, warnings, running, out,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn answer_with(
        &mut self,
        site: &str,
        transfer: u64,
        version: &ConfigVersion,
        outcome: ConfigOutcome,
        errors: Vec<String>,
        warnings: Vec<String>,
        running: ConfigVersion,
        out: &mut Vec<Output>,
    ) {
        let msg = Message::ConfigResult(ConfigResult {
            transfer,
            version: version.clone(),
            outcome,
            errors,
            warnings,
            running,
        });
        self.send(site, msg, out);
    }

    fn on_result(&mut self, site: &str, r: ConfigResult, out: &mut Vec<Output>) {
        let now = self.now;
        let Some(p) = self.peers.get_mut(&key(site)) else {
            return;
        };
        if p.outbound.as_ref().map(|o| o.transfer) == Some(r.transfer) {
            p.outbound = None;
        }
        // What it runs now.
        if let Some(offer) = p.offer.as_mut() {
            offer.version = r.running.clone();
        }
        match r.outcome {
            ConfigOutcome::Applied => {
                p.counters.applied += 1;
                p.last_error = None;
                p.last_sync = Some(now);
                if !r.warnings.is_empty() {
                    p.last_error =
                        Some(format!("applied with warnings: {}", r.warnings.join("; ")));
                    out.push(Output::Log {
                        level: Level::Warn,
                        text: format!(
                            "config sync: {site} applied {} with warnings: {}",
                            describe(&r.version),
                            r.warnings.join("; ")
                        ),
                    });
                } else {
                    out.push(Output::Log {
                        level: Level::Info,
                        text: format!("config sync: {site} applied {}", describe(&r.version)),
                    });
                }
            }
            ConfigOutcome::Rejected => {
                p.counters.rejected += 1;
                p.rejected = Some(r.version.clone());
                let why = r.errors.join("; ");
                p.last_error = Some(format!("rejected {}: {why}", describe(&r.version)));
                out.push(Output::Log {
                    level: Level::Error,
                    text: format!(
                        "config sync: {site} rejected {} and keeps its configuration: {why}",
                        describe(&r.version)
                    ),
                });
            }
            ConfigOutcome::Refused => {
                p.counters.refused += 1;
                p.retry_at = now + RESULT_TIMEOUT;
                let why = r.errors.join("; ");
                p.last_error = Some(format!("refused: {why}"));
                out.push(Output::Log {
                    level: Level::Warn,
                    text: format!(
                        "config sync: {site} refused {}: {why}",
                        describe(&r.version)
                    ),
                });
            }
            ConfigOutcome::NeedFull => {
                let base = None;
                let forced = false;
                self.start_transfer(site, base, forced, out);
            }
            ConfigOutcome::Superseded => {
                p.retry_at = now + RETRY_AFTER;
            }
        }
    }

    fn on_manual(&mut self, force_site: Option<String>, out: &mut Vec<Output>) {
        // The operator's sync makes this node's configuration the newest.
        self.highest = self.highest.max(self.version.incarnation).saturating_add(1);
        let v = ConfigVersion {
            incarnation: self.highest,
            origin: self.settings.local_site.clone(),
            digest: self.version.digest.clone(),
        };
        let text = Arc::clone(&self.text);
        self.extend_lineage();
        self.made(&v);
        self.set_version(v.clone(), text, out);
        out.push(Output::Log {
            level: Level::Info,
            text: format!(
                "config sync: manual sync of {} to {}",
                describe(&v),
                force_site.as_deref().unwrap_or("every peer parent")
            ),
        });
        let targets: Vec<String> = self
            .peers
            .values()
            .filter(|p| p.up && force_site.as_deref().is_none_or(|f| key(f) == key(&p.site)))
            .map(|p| p.site.clone())
            .collect();
        for site in targets {
            self.offer_to(&site, out);
            let base = if force_site.is_some() {
                None
            } else {
                self.peers
                    .get(&key(&site))
                    .and_then(|p| p.offer.as_ref())
                    .map(|o| o.version.clone())
            };
            let refused = self.peers.get(&key(&site)).and_then(|p| p.refused.clone());
            if let Some(why) = refused {
                self.note(&site, "..", format!("not sent: {why}"));
                continue;
            }
            self.start_transfer(&site, base, true, out);
        }
    }

    fn on_tick(&mut self, out: &mut Vec<Output>) {
        let now = self.now;
        let mut retry = Vec::new();
        for p in self.peers.values_mut() {
            if let Some(o) = &p.outbound
                && now.saturating_sub(o.sent_at) >= RESULT_TIMEOUT
            {
                p.last_error = Some(format!(
                    "no answer to transfer {} ({}) within {} s",
                    o.transfer,
                    describe(&o.version),
                    RESULT_TIMEOUT.as_secs()
                ));
                p.outbound = None;
                p.retry_at = now + RETRY_AFTER;
            }
            if p.up && p.outbound.is_none() && now >= p.retry_at {
                retry.push(p.site.clone());
            }
        }
        for site in retry {
            self.push_if_behind(&site, false, out);
        }
    }

    /// Where every peer parent stands.
    pub fn status(&self) -> Status {
        Status {
            version: self.version.clone(),
            automatic: self.settings.automatic,
            software: self.settings.software.clone(),
            syntax: self.settings.syntax.clone(),
            lost_changes: self.lost_changes,
            peers: self
                .peers
                .values()
                .map(|p| PeerStatus {
                    site: p.site.clone(),
                    up: p.up,
                    state: self.state_of(p),
                    version: p.offer.as_ref().map(|o| o.version.clone()),
                    software: p.offer.as_ref().map(|o| o.software.clone()),
                    automatic: p.offer.as_ref().map(|o| o.automatic),
                    last_error: p.last_error.clone(),
                    last_sync: p.last_sync,
                    counters: p.counters,
                })
                .collect(),
        }
    }

    fn state_of(&self, p: &Peer) -> PeerState {
        if p.refused.is_some() {
            return PeerState::Refused;
        }
        let Some(offer) = &p.offer else {
            return PeerState::Unknown;
        };
        if offer.version.digest == self.version.digest {
            return PeerState::InSync;
        }
        if p.outbound.is_some() {
            return PeerState::Sending;
        }
        if p.rejected.as_ref() == Some(&self.version) {
            return PeerState::Rejected;
        }
        if !self.settings.automatic || !offer.automatic {
            return PeerState::Disabled;
        }
        if beats(&self.version, &offer.version) {
            PeerState::Behind
        } else {
            PeerState::Ahead
        }
    }

    /// What a manual sync would send each peer parent.
    pub fn preview(&self) -> Vec<Preview> {
        self.peers
            .values()
            .map(|p| {
                let version = p.offer.as_ref().map(|o| o.version.clone());
                let (transfer, diff) = match (&p.refused, &version) {
                    (Some(why), _) => (format!("nothing: {why}"), None),
                    (None, None) => (
                        if p.up {
                            "the whole text (its version is not known yet)".to_string()
                        } else {
                            "nothing: the link is down".to_string()
                        },
                        None,
                    ),
                    (None, Some(v)) if v.digest == self.version.digest => {
                        ("nothing to change: in sync".to_string(), Some(Vec::new()))
                    }
                    (None, Some(v)) => {
                        let known = self
                            .history
                            .iter()
                            .rev()
                            .find(|(h, _)| h.digest == v.digest)
                            .map(|(_, t)| Arc::clone(t));
                        match known {
                            Some(t) => ("a delta".to_string(), Some(line_diff(&t, &self.text))),
                            None => (
                                format!(
                                    "the whole text ({} lines); its text ({}) is not known here",
                                    delta::lines(&self.text).len(),
                                    describe(v)
                                ),
                                None,
                            ),
                        }
                    }
                };
                Preview {
                    site: p.site.clone(),
                    version,
                    transfer,
                    diff,
                }
            })
            .collect()
    }

    /// The exchange log after `seq` (0: all of it).
    pub fn exchange_since(&self, seq: u64) -> Vec<Exchange> {
        self.log.iter().filter(|e| e.seq > seq).cloned().collect()
    }

    /// The newest exchange log entry's number.
    pub fn exchange_seq(&self) -> u64 {
        self.log_seq
    }

    /// A transfer to some peer is under way.
    pub fn sending(&self) -> bool {
        self.peers.values().any(|p| p.outbound.is_some())
    }
}

/// Part `i` of the `n` of a transfer: the template's header, with the
/// files and the lineage on the first part only.
fn part_of(template: &ConfigUpdate, i: usize, n: usize) -> ConfigUpdate {
    let first = i == 0;
    ConfigUpdate {
        part: u32::try_from(i).unwrap_or(u32::MAX),
        last: i + 1 == n,
        files: if first {
            template.files.clone()
        } else {
            Vec::new()
        },
        lineage: if first {
            template.lineage.clone()
        } else {
            Vec::new()
        },
        ..template.clone()
    }
}

fn label(v: &ConfigVersion) -> ConfigLabel {
    ConfigLabel {
        incarnation: v.incarnation,
        origin: v.origin.clone(),
    }
}

/// `- old line` / `+ new line` for what changed from `old` to `new`.
pub fn line_diff(old: &str, new: &str) -> Vec<String> {
    let a = delta::lines(old);
    let mut out = Vec::new();
    let ops = delta::delta(old, new).unwrap_or_else(|| {
        vec![
            LineOp::Delete(a.len() as u32),
            LineOp::Insert(delta::lines(new).iter().map(|s| s.to_string()).collect()),
        ]
    });
    let mut at = 0usize;
    for op in ops {
        match op {
            LineOp::Keep(n) => at += n as usize,
            LineOp::Delete(n) => {
                for l in a.iter().skip(at).take(n as usize) {
                    out.push(format!("- {}", l.trim_end_matches(['\n', '\r'])));
                }
                at += n as usize;
            }
            LineOp::Insert(lines) => {
                for l in lines {
                    out.push(format!("+ {}", l.trim_end_matches(['\n', '\r'])));
                }
            }
        }
    }
    out
}

/// One line about a config sync message, for the exchange log.
fn summary(msg: &Message) -> String {
    let bytes = msg.to_json().map(|b| b.len() + 6).unwrap_or(0);
    match msg {
        Message::ConfigOffer(o) => format!(
            "ConfigOffer {} (Sextant {}, {} syntax, automatic {}), {bytes} bytes",
            describe(&o.version),
            o.software,
            o.syntax,
            if o.automatic { "on" } else { "off" }
        ),
        Message::ConfigUpdate(u) => format!(
            "ConfigUpdate transfer {} part {}{}: {}, {bytes} bytes",
            u.transfer,
            u.part,
            if u.last { " (last)" } else { "" },
            if u.base.is_some() {
                format!("{} delta step(s)", u.ops.len())
            } else {
                format!("{} bytes of text", u.text.len())
            }
        ),
        Message::ConfigResult(r) => format!(
            "ConfigResult transfer {}: {:?} {}{}, {bytes} bytes",
            r.transfer,
            r.outcome,
            describe(&r.version),
            if r.errors.is_empty() {
                String::new()
            } else {
                format!(": {}", r.errors.join("; "))
            }
        ),
        other => format!("{}", other.kind()),
    }
}
