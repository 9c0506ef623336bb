//! Config sync among parents, replayed without a network: each parent is a
//! `Syncer`, links are in-memory queues, and "applying" a text succeeds
//! unless the text holds the word INVALID (as a validation error would).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use sextant_config_sync::{Cause, Input, Level, Output, PeerState, Settings, Syncer, digest};
use sextant_mep_proto::message::{ConfigOutcome, ConfigVersion, Message};

struct Node {
    syncer: Syncer,
    settings: Settings,
    /// The shared text in force (what the daemon runs).
    running: Arc<str>,
    saved: Option<ConfigVersion>,
    logs: Vec<(Level, String)>,
}

struct Net {
    nodes: BTreeMap<String, Node>,
    /// Links that are up, as (a, b) with a < b.
    up: Vec<(String, String)>,
    queue: VecDeque<(String, String, Message)>,
    now: Duration,
    /// Messages and bytes sent, all links together.
    sent: Vec<(String, String, Message)>,
}

fn config(services: usize, weight: u32) -> String {
    let mut t = String::from(
        "add gslb site P1 10.0.0.1\nadd gslb site P2 10.0.0.2\nadd gslb site P3 10.0.0.3\n",
    );
    for i in 0..services {
        t.push_str(&format!(
            "add gslb service s{i} 192.0.2.{} HTTP 80 -siteName P{}\n",
            i % 250,
            i % 3 + 1
        ));
    }
    t.push_str("add gslb vserver v HTTP -lbMethod ROUNDROBIN\n");
    for i in 0..services {
        t.push_str(&format!(
            "bind gslb vserver v -serviceName s{i} -weight {}\n",
            if i == 7 { weight } else { 1 }
        ));
    }
    t
}

fn settings(site: &str, all: &[&str], software: &str, automatic: bool) -> Settings {
    Settings {
        local_site: site.to_string(),
        software: software.to_string(),
        syntax: "appliance".to_string(),
        automatic,
        peers: all
            .iter()
            .filter(|s| **s != site)
            .map(|s| s.to_string())
            .collect(),
    }
}

impl Net {
    fn new(sites: &[&str], text: &str) -> Net {
        let mut net = Net {
            nodes: BTreeMap::new(),
            up: Vec::new(),
            queue: VecDeque::new(),
            now: Duration::ZERO,
            sent: Vec::new(),
        };
        for s in sites {
            net.start(s, settings(s, sites, "0.1.0", true), text, None);
        }
        net
    }

    fn start(&mut self, site: &str, settings: Settings, text: &str, saved: Option<ConfigVersion>) {
        let mut syncer = Syncer::new(settings.clone());
        let out = syncer.on(
            Input::Loaded {
                settings: settings.clone(),
                shared: Arc::from(text),
                files: Vec::new(),
                file_incarnation: None,
                cause: Cause::Start {
                    saved: saved.clone(),
                    header: None,
                },
            },
            self.now,
        );
        self.nodes.insert(
            site.to_string(),
            Node {
                syncer,
                settings,
                running: Arc::from(text),
                saved,
                logs: Vec::new(),
            },
        );
        self.carry(site, out);
    }

    fn link(&mut self, a: &str, b: &str) {
        let pair = if a < b {
            (a.to_string(), b.to_string())
        } else {
            (b.to_string(), a.to_string())
        };
        if !self.up.contains(&pair) {
            self.up.push(pair);
            self.input(a, Input::PeerUp { site: b.into() });
            self.input(b, Input::PeerUp { site: a.into() });
        }
    }

    fn cut(&mut self, a: &str, b: &str) {
        self.up
            .retain(|(x, y)| !((x == a && y == b) || (x == b && y == a)));
        self.queue
            .retain(|(f, t, _)| !((f == a && t == b) || (f == b && t == a)));
        self.input(a, Input::PeerDown { site: b.into() });
        self.input(b, Input::PeerDown { site: a.into() });
    }

    fn mesh(&mut self) {
        let sites: Vec<String> = self.nodes.keys().cloned().collect();
        for i in 0..sites.len() {
            for j in i + 1..sites.len() {
                self.link(&sites[i], &sites[j]);
            }
        }
    }

    fn linked(&self, a: &str, b: &str) -> bool {
        self.up
            .iter()
            .any(|(x, y)| (x == a && y == b) || (x == b && y == a))
    }

    fn input(&mut self, site: &str, input: Input) {
        let now = self.now;
        let out = self
            .nodes
            .get_mut(site)
            .expect("node")
            .syncer
            .on(input, now);
        self.carry(site, out);
    }

    fn carry(&mut self, site: &str, out: Vec<Output>) {
        for o in out {
            match o {
                Output::Send { site: to, msg } => {
                    if self.linked(site, &to) {
                        self.sent.push((site.to_string(), to.clone(), msg.clone()));
                        self.queue.push_back((site.to_string(), to, msg));
                    }
                }
                Output::Apply {
                    from,
                    transfer,
                    version,
                    shared,
                    ..
                } => {
                    let node = self.nodes.get_mut(site).expect("node");
                    let input = if shared.contains("INVALID") {
                        Input::ApplyFailed {
                            from,
                            transfer,
                            version,
                            errors: vec!["P.conf:12: INVALID is not a command".into()],
                            retry: false,
                        }
                    } else {
                        node.running = Arc::clone(&shared);
                        Input::Loaded {
                            settings: node.settings.clone(),
                            shared,
                            files: Vec::new(),
                            file_incarnation: None,
                            cause: Cause::Synced {
                                from,
                                transfer,
                                version,
                                warnings: Vec::new(),
                            },
                        }
                    };
                    self.input(site, input);
                }
                Output::Save(v) => self.nodes.get_mut(site).expect("node").saved = Some(v),
                Output::Log { level, text } => self
                    .nodes
                    .get_mut(site)
                    .expect("node")
                    .logs
                    .push((level, text)),
            }
        }
    }

    /// Delivers every queued message (and what they cause).
    fn settle(&mut self) {
        let mut n = 0;
        while let Some((from, to, msg)) = self.queue.pop_front() {
            n += 1;
            assert!(n < 10_000, "the exchange does not settle");
            if self.nodes.contains_key(&to) {
                self.input(&to, Input::Received { site: from, msg });
            }
        }
    }

    fn tick(&mut self, secs: u64) {
        self.now += Duration::from_secs(secs);
        let sites: Vec<String> = self.nodes.keys().cloned().collect();
        for s in sites {
            self.input(&s, Input::Tick);
        }
        self.settle();
    }

    /// The operator edits the file at `site` and reloads.
    fn edit(&mut self, site: &str, text: &str) {
        let node = self.nodes.get_mut(site).expect("node");
        node.running = Arc::from(text);
        let input = Input::Loaded {
            settings: node.settings.clone(),
            shared: Arc::from(text),
            files: Vec::new(),
            file_incarnation: None,
            cause: Cause::Reload,
        };
        self.input(site, input);
    }

    fn running(&self, site: &str) -> &str {
        &self.nodes[site].running
    }

    fn version(&self, site: &str) -> ConfigVersion {
        self.nodes[site].syncer.version().clone()
    }

    fn state(&self, site: &str, peer: &str) -> PeerState {
        self.nodes[site]
            .syncer
            .status()
            .peers
            .iter()
            .find(|p| p.site == peer)
            .map(|p| p.state)
            .expect("peer")
    }

    fn logged(&self, site: &str, level: Level, needle: &str) -> bool {
        self.nodes[site]
            .logs
            .iter()
            .any(|(l, t)| *l == level && t.contains(needle))
    }

    fn update_bytes(&self) -> usize {
        self.sent
            .iter()
            .filter(|(_, _, m)| matches!(m, Message::ConfigUpdate(_)))
            .map(|(_, _, m)| m.to_json().map(|b| b.len()).unwrap_or(0))
            .sum()
    }
}

#[test]
fn a_change_at_one_parent_reaches_every_other_as_a_small_delta() {
    let base = config(10_000, 1);
    let mut net = Net::new(&["P1", "P2", "P3"], &base);
    net.mesh();
    net.settle();
    assert_eq!(net.state("P1", "P2"), PeerState::InSync);
    assert!(
        net.sent
            .iter()
            .all(|(_, _, m)| matches!(m, Message::ConfigOffer(_))),
        "same text: offers only"
    );

    let changed = config(10_000, 40);
    net.edit("P1", &changed);
    net.settle();
    for s in ["P2", "P3"] {
        assert_eq!(net.running(s), changed, "{s}");
        assert_eq!(net.version(s), net.version("P1"));
        assert_eq!(net.state("P1", s), PeerState::InSync);
    }
    assert_eq!(net.version("P1").incarnation, 1);
    assert_eq!(net.version("P1").origin, "P1");
    // Two deltas of one line each, not 10,000 services twice.
    let bytes = net.update_bytes();
    assert!(bytes < 2_000, "{bytes} bytes of updates");
    assert!(changed.len() > 500_000);
}

#[test]
fn a_whole_new_configuration_travels_whole_in_parts() {
    let base = config(100, 1);
    let mut net = Net::new(&["P1", "P2"], &base);
    net.mesh();
    net.settle();
    let new = config(20_000, 3).replace("HTTP 80", "SSL 443");
    net.edit("P2", &new);
    net.settle();
    assert_eq!(net.running("P1"), new);
    let parts = net
        .sent
        .iter()
        .filter(|(f, _, m)| f == "P2" && matches!(m, Message::ConfigUpdate(u) if u.base.is_none()))
        .count();
    assert!(parts > 1, "{parts} parts");
}

#[test]
fn simultaneous_changes_converge_on_the_first_site_name_and_the_loser_logs_it() {
    let base = config(50, 1);
    let mut net = Net::new(&["P1", "P2", "P3"], &base);
    net.mesh();
    net.settle();
    let at_p1 = config(50, 10);
    let at_p2 = config(50, 20);
    // Both edits before any message moves.
    net.edit("P2", &at_p2);
    net.edit("P1", &at_p1);
    net.settle();
    for s in ["P1", "P2", "P3"] {
        assert_eq!(net.running(s), at_p1, "{s}");
        assert_eq!(net.version(s).origin, "P1", "{s}");
    }
    assert!(
        net.logged("P2", Level::Warn, "lost to incarnation 1 from P1"),
        "{:?}",
        net.nodes["P2"].logs
    );
    assert!(!net.logged("P1", Level::Warn, "lost"));
    assert_eq!(net.nodes["P2"].syncer.status().lost_changes, 1);
}

#[test]
fn a_partitioned_parent_catches_up_through_another_when_the_link_heals() {
    let base = config(50, 1);
    let mut net = Net::new(&["P1", "P2", "P3"], &base);
    net.mesh();
    net.settle();
    net.cut("P1", "P3");
    net.cut("P2", "P3");
    let first = config(50, 5);
    let second = config(50, 6);
    net.edit("P1", &first);
    net.settle();
    net.edit("P1", &second);
    net.settle();
    assert_eq!(net.running("P2"), second);
    assert_eq!(net.running("P3"), base);
    // P3 comes back, but only towards P2 (P1 is still cut off).
    net.link("P2", "P3");
    net.settle();
    assert_eq!(net.running("P3"), second);
    assert_eq!(net.version("P3"), net.version("P1"));
}

#[test]
fn an_invalid_configuration_is_rejected_and_the_sender_sees_why() {
    let base = config(50, 1);
    let mut net = Net::new(&["P1", "P2"], &base);
    net.mesh();
    net.settle();
    let bad = format!("{base}INVALID line\n");
    net.edit("P1", &bad);
    net.settle();
    assert_eq!(net.running("P2"), base, "P2 keeps its configuration");
    assert_eq!(net.state("P1", "P2"), PeerState::Rejected);
    let st = net.nodes["P1"].syncer.status();
    let err = st.peers[0].last_error.clone().unwrap_or_default();
    assert!(err.contains("P.conf:12: INVALID is not a command"), "{err}");
    assert!(net.logged("P1", Level::Error, "P2 rejected incarnation 1 from P1"));
    // Not sent again and again.
    let before = net.sent.len();
    net.tick(60);
    assert_eq!(net.sent.len(), before);
    // A fixed file goes through.
    let fixed = config(50, 9);
    net.edit("P1", &fixed);
    net.settle();
    assert_eq!(net.running("P2"), fixed);
}

#[test]
fn another_software_version_is_refused_at_both_ends() {
    let base = config(10, 1);
    let mut net = Net::new(&["P1"], &base);
    net.start(
        "P2",
        settings("P2", &["P1", "P2"], "0.2.0", true),
        &config(10, 2),
        None,
    );
    // P1's settings know P2 as a peer.
    let s1 = settings("P1", &["P1", "P2"], "0.1.0", true);
    net.nodes.get_mut("P1").expect("P1").settings = s1.clone();
    net.edit("P1", &base);
    net.link("P1", "P2");
    net.settle();
    assert_eq!(net.state("P1", "P2"), PeerState::Refused);
    assert_eq!(net.state("P2", "P1"), PeerState::Refused);
    assert!(net.logged("P1", Level::Error, "it runs Sextant 0.2.0, this node 0.1.0"));
    assert!(net.logged("P2", Level::Error, "it runs Sextant 0.1.0, this node 0.2.0"));
    assert_eq!(net.running("P1"), base);
    assert_eq!(net.running("P2"), config(10, 2));
    assert!(
        !net.sent
            .iter()
            .any(|(_, _, m)| matches!(m, Message::ConfigUpdate(_)))
    );
}

#[test]
fn without_automatic_sync_only_a_manual_sync_goes_through() {
    let base = config(10, 1);
    let sites = ["P1", "P2"];
    let mut net = Net::new(&["P1"], &base);
    net.nodes.get_mut("P1").expect("P1").settings = settings("P1", &sites, "0.1.0", true);
    net.edit("P1", &base);
    net.start("P2", settings("P2", &sites, "0.1.0", false), &base, None);
    net.link("P1", "P2");
    net.settle();
    let changed = config(10, 30);
    net.edit("P1", &changed);
    net.settle();
    assert_eq!(net.running("P2"), base);
    assert_eq!(net.state("P1", "P2"), PeerState::Disabled);
    net.input(
        "P1",
        Input::Manual {
            force_site: Some("P2".into()),
        },
    );
    net.settle();
    assert_eq!(net.running("P2"), changed);
    assert_eq!(net.state("P1", "P2"), PeerState::InSync);
}

#[test]
fn a_restart_keeps_its_version_and_an_edit_made_while_down_is_newer() {
    let base = config(10, 1);
    let mut net = Net::new(&["P1", "P2"], &base);
    net.mesh();
    net.settle();
    let changed = config(10, 4);
    net.edit("P1", &changed);
    net.settle();
    let v = net.version("P2");
    let saved = net.nodes["P2"].saved.clone();
    assert_eq!(saved.as_ref(), Some(&v));
    // P2 restarts with the file it was sent.
    net.cut("P1", "P2");
    let s2 = net.nodes["P2"].settings.clone();
    net.start("P2", s2.clone(), &changed, saved.clone());
    assert_eq!(net.version("P2"), v);
    // P2 restarts again after its file was edited while it was down.
    let edited = config(10, 77);
    net.start("P2", s2, &edited, saved);
    assert!(net.version("P2").incarnation > v.incarnation);
    assert_eq!(net.version("P2").origin, "P2");
    net.link("P1", "P2");
    net.settle();
    assert_eq!(net.running("P1"), edited);
}

#[test]
fn a_delta_for_another_base_is_answered_with_the_whole_text() {
    let base = config(200, 1);
    let mut net = Net::new(&["P1", "P2"], &base);
    net.mesh();
    net.settle();
    // P2's text changes behind the syncer's back: its offer still names
    // the old version, so P1's delta does not fit.
    let drift = config(200, 2);
    {
        let node = net.nodes.get_mut("P2").expect("P2");
        let settings = node.settings.clone();
        node.syncer = Syncer::new(settings.clone());
        let _ = node.syncer.on(
            Input::Loaded {
                settings,
                shared: Arc::from(drift.as_str()),
                files: Vec::new(),
                file_incarnation: None,
                cause: Cause::Start {
                    saved: Some(ConfigVersion {
                        incarnation: 0,
                        origin: "P1".into(),
                        digest: digest(&base),
                    }),
                    header: None,
                },
            },
            Duration::ZERO,
        );
    }
    // P1 believes P2 runs `base` (its last offer); P2 now runs `drift` at
    // incarnation 0 from P2.
    let changed = config(200, 3);
    net.edit("P1", &changed);
    net.settle();
    assert_eq!(net.running("P2"), changed);
    let outcomes: Vec<ConfigOutcome> = net
        .sent
        .iter()
        .filter_map(|(_, _, m)| match m {
            Message::ConfigResult(r) => Some(r.outcome),
            _ => None,
        })
        .collect();
    assert!(outcomes.contains(&ConfigOutcome::NeedFull), "{outcomes:?}");
    assert_eq!(outcomes.last(), Some(&ConfigOutcome::Applied));
}

#[test]
fn the_same_text_at_two_parents_is_in_sync_without_a_transfer() {
    let base = config(10, 1);
    let mut net = Net::new(&["P1", "P2", "P3"], &base);
    net.mesh();
    net.settle();
    for a in ["P1", "P2", "P3"] {
        for b in ["P1", "P2", "P3"] {
            if a != b {
                assert_eq!(net.state(a, b), PeerState::InSync);
            }
        }
    }
    assert_eq!(net.update_bytes(), 0);
}

#[test]
fn preview_shows_the_lines_each_peer_would_get() {
    let base = config(10, 1);
    let sites = ["P1", "P2"];
    let mut net = Net::new(&["P1"], &base);
    net.nodes.get_mut("P1").expect("P1").settings = settings("P1", &sites, "0.1.0", true);
    net.edit("P1", &base);
    net.start("P2", settings("P2", &sites, "0.1.0", false), &base, None);
    net.link("P1", "P2");
    net.settle();
    net.edit("P1", &config(10, 30));
    net.settle();
    let preview = net.nodes["P1"].syncer.preview();
    assert_eq!(preview.len(), 1);
    assert_eq!(preview[0].transfer, "a delta");
    assert_eq!(
        preview[0].diff.clone().unwrap_or_default(),
        vec![
            "- bind gslb vserver v -serviceName s7 -weight 1".to_string(),
            "+ bind gslb vserver v -serviceName s7 -weight 30".to_string()
        ]
    );
}

#[test]
fn a_silent_peer_is_retried_after_the_timeout() {
    let base = config(10, 1);
    let mut net = Net::new(&["P1", "P2"], &base);
    net.mesh();
    net.settle();
    net.edit("P1", &config(10, 2));
    // The update is lost on the way.
    net.queue.clear();
    assert_eq!(net.state("P1", "P2"), PeerState::Sending);
    net.tick(10);
    assert_eq!(net.running("P2"), base);
    net.tick(31);
    net.tick(6);
    assert_eq!(net.running("P2"), config(10, 2));
}

#[test]
fn a_change_made_while_cut_off_is_lost_to_a_newer_one_that_did_not_build_on_it() {
    let base = config(20, 1);
    let mut net = Net::new(&["P1", "P2", "P3"], &base);
    net.mesh();
    net.settle();
    net.cut("P1", "P3");
    net.cut("P2", "P3");
    net.edit("P3", &config(20, 3));
    net.edit("P1", &config(20, 10));
    net.settle();
    net.edit("P1", &config(20, 11));
    net.settle();
    // P1 is at incarnation 2, P3 at 1: higher, but P3's change is not in it.
    net.link("P2", "P3");
    net.settle();
    assert_eq!(net.running("P3"), config(20, 11));
    assert!(
        net.logged(
            "P3",
            Level::Warn,
            "the change made here (incarnation 1 from P3) lost to incarnation 2 from P1"
        ),
        "{:?}",
        net.nodes["P3"].logs
    );
}

#[test]
fn a_change_built_on_ours_is_no_loss() {
    let base = config(20, 1);
    let mut net = Net::new(&["P1", "P2", "P3"], &base);
    net.mesh();
    net.settle();
    net.edit("P3", &config(20, 3));
    net.settle();
    net.edit("P1", &config(20, 4));
    net.settle();
    assert_eq!(net.running("P3"), config(20, 4));
    assert!(
        !net.logged("P3", Level::Warn, "lost"),
        "{:?}",
        net.nodes["P3"].logs
    );
}

/// Starts P1 and P2 (P2 first, with `base`), P1 with `text` under a label
/// forged in its saved state: incarnation 9 "from P2".
fn forged_label(base: &str, text: &str) -> (Net, ConfigVersion) {
    let sites = ["P1", "P2"];
    let mut net = Net::new(&[], base);
    net.start("P2", settings("P2", &sites, "0.1.0", true), base, None);
    let forged = ConfigVersion {
        incarnation: 9,
        origin: "P2".into(),
        digest: digest(text),
    };
    net.start(
        "P1",
        settings("P1", &sites, "0.1.0", true),
        text,
        Some(forged.clone()),
    );
    net.mesh();
    net.settle();
    (net, forged)
}

#[test]
fn a_version_naming_the_receiver_as_origin_that_it_never_made_is_refused() {
    let base = config(20, 1);
    let text = config(20, 5);
    let (mut net, forged) = forged_label(&base, &text);
    // P2 keeps what it runs, says why, and tells P1.
    assert_eq!(net.running("P2"), base);
    assert_eq!(net.version("P2").incarnation, 0);
    assert!(
        net.logged(
            "P2",
            Level::Error,
            "names P2 as its origin, but P2 never made it"
        ),
        "{:?}",
        net.nodes["P2"].logs
    );
    assert!(net.logged("P1", Level::Error, "P2 rejected incarnation 9 from P2"));
    assert_eq!(net.state("P1", "P2"), PeerState::Rejected);
    // Not sent again while P1 runs it.
    let updates = |net: &Net| {
        net.sent
            .iter()
            .filter(|(_, _, m)| matches!(m, Message::ConfigUpdate(_)))
            .count()
    };
    let before = updates(&net);
    net.tick(40);
    net.tick(40);
    assert_eq!(updates(&net), before);
    assert_eq!(net.running("P2"), base);
    // A change genuinely made at P1 (above the forged incarnation) is taken.
    let changed = config(20, 7);
    net.edit("P1", &changed);
    net.settle();
    assert_eq!(net.running("P2"), changed);
    assert_eq!(net.version("P2").origin, "P1");
    assert!(net.version("P2").incarnation > forged.incarnation);
}

#[test]
fn a_label_naming_the_receiver_is_not_taken_even_for_the_same_text() {
    // A hostile peer sends P2's own text under a label "from P2" that P2
    // never made (the same text is otherwise taken with the newer label).
    let base = config(20, 1);
    let mut net = Net::new(&["P1", "P2"], &base);
    net.mesh();
    net.settle();
    let forged = ConfigVersion {
        incarnation: 9,
        origin: "p2".into(),
        digest: digest(&base),
    };
    let update = sextant_mep_proto::message::ConfigUpdate {
        transfer: 7,
        version: forged.clone(),
        base: None,
        part: 0,
        last: true,
        text: base.clone(),
        ops: Vec::new(),
        forced: true,
        files: Vec::new(),
        lineage: Vec::new(),
    };
    net.input(
        "P2",
        Input::Received {
            site: "P1".into(),
            msg: Message::ConfigUpdate(update),
        },
    );
    net.settle();
    assert_ne!(net.version("P2"), forged);
    assert_eq!(net.version("P2").incarnation, 0);
    assert!(net.logged("P2", Level::Error, "never made it"));
    assert!(net.logged("P1", Level::Error, "P2 rejected incarnation 9 from p2"));
}

#[test]
fn a_version_made_here_that_comes_back_is_in_sync() {
    // P2 makes a change, P1 takes it and offers it back: no refusal.
    let base = config(20, 1);
    let mut net = Net::new(&["P1", "P2"], &base);
    net.mesh();
    net.settle();
    let changed = config(20, 3);
    net.edit("P2", &changed);
    net.settle();
    net.tick(40);
    assert_eq!(net.running("P1"), changed);
    assert_eq!(net.version("P1"), net.version("P2"));
    assert!(!net.logged("P2", Level::Error, "never made it"));
}
