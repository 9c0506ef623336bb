//! Automatic configuration sync among parent sites (seed 001, issue 27),
//! end to end: three parents and two children, each a `sextant serve`
//! process with its own configuration file in its own directory, written
//! as an operator writes it (its ADNS service, `-siteType LOCAL` on its own
//! site, site passwords, `-automaticConfigSync ENABLED`), all inside a
//! network namespace the test makes, so that links can be cut with
//! iptables. Parents on 127.0.1.x, children on 127.0.2.x.
//!
//! What is checked is what an operator sees: the answers of every parent,
//! the files on disk, `/v1/sites`, the logs. No wall-clock time is
//! asserted; waits are "eventually" deadlines.
//!
//! These tests need root, `ip` and `iptables`; without them they fail under
//! CI and print SKIPPED elsewhere.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

const PARENTS: [&str; 3] = ["P1", "P2", "P3"];
const CHILDREN: [&str; 2] = ["child_site1", "child_site2"];

fn p_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 1, i as u8 + 1)
}

fn c_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 2, i as u8 + 1)
}

/// The service addresses: one per parent site (nothing listens there; no
/// monitor is bound, so each is UP as its site reports it).
fn svc_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(192, 0, 2, 10 * (i as u8 + 1))
}

const NAME: &str = "app.example.com";

/// The shared part every parent starts with: sites, a zone, one service per
/// parent bound to a round-robin vserver with `weights`, the `-TTL` of its
/// domain.
fn shared(weights: [u32; 3], ttl: u32) -> String {
    let mut c = String::new();
    for (i, p) in PARENTS.iter().enumerate() {
        c += &format!("add gslb site {p} {} -sitePassword s3cret\n", p_ip(i));
    }
    for (i, ch) in CHILDREN.iter().enumerate() {
        c += &format!(
            "add gslb site {ch} {} -parentSite {}\n",
            c_ip(i),
            PARENTS[i]
        );
    }
    c += "add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
          add dns nsRec example.com ns1.example.com\n\
          add gslb vserver vs_app HTTP -lbMethod ROUNDROBIN\n";
    for i in 0..3 {
        c += &format!(
            "add gslb service svc{n} {} HTTP 80 -siteName {}\n\
             bind gslb vserver vs_app -serviceName svc{n} -weight {}\n",
            svc_ip(i),
            PARENTS[i],
            weights[i],
            n = i + 1
        );
    }
    c += &format!("bind gslb vserver vs_app -domainName {NAME} -TTL {ttl}\n");
    c
}

/// Parent `i`'s whole file: its own lines (ADNS service, the sync switch,
/// a keepalive of 1 s), then the shared part with its own site LOCAL.
fn parent_file(i: usize, automatic: bool, shared: &str) -> String {
    let me = PARENTS[i];
    let own_site = format!("add gslb site {me} {}", p_ip(i));
    format!(
        "# {me}: written by the operator\n\
         add service adns_{me} {ip} ADNS 5300\n\
         set gslb parameter -automaticConfigSync {} -MEPKeepAliveTimeout 1000 MSEC\n{}",
        if automatic { "ENABLED" } else { "DISABLED" },
        shared.replace(&own_site, &format!("{own_site} -siteType LOCAL")),
        ip = p_ip(i),
    )
}

/// A child holds itself and its parent only (seed 001).
fn child_file(i: usize) -> String {
    format!(
        "set gslb parameter -MEPKeepAliveTimeout 1000 MSEC\n\
         add gslb site {p} {pip} -sitePassword s3cret\n\
         add gslb site {c} {cip} -parentSite {p} -siteType LOCAL\n",
        p = PARENTS[i],
        pip = p_ip(i),
        c = CHILDREN[i],
        cip = c_ip(i)
    )
}

struct Lab {
    parents: Vec<SiteServer>,
    children: Vec<SiteServer>,
    ns: Arc<Netns>,
    scratch: Scratch,
}

impl Lab {
    /// Starts the parents (each with `automatic`) and, with `children`,
    /// the two children; waits until every parent link is UP.
    fn start(tag: &str, automatic: bool, children: bool) -> Option<Lab> {
        Lab::start_laid_out(
            tag,
            automatic,
            children,
            |scratch, i| scratch.join(PARENTS[i]),
            |_, _| Vec::new(),
        )
    }

    /// Like [`Lab::start`], with parent `i`'s directory `dir_of(scratch,
    /// i)` (made here) and more arguments to its `serve`, `extra_of(i,
    /// dir)` (written into its directory before it starts, if files).
    fn start_laid_out(
        tag: &str,
        automatic: bool,
        children: bool,
        dir_of: impl Fn(&Path, usize) -> PathBuf,
        extra_of: impl Fn(usize, &Path) -> Vec<String>,
    ) -> Option<Lab> {
        let ns = Netns::create(tag)?;
        let scratch = Scratch::new(&format!("config_sync_{tag}"));
        let base = shared([1, 1, 1], 5);
        let parents: Vec<SiteServer> = (0..3)
            .map(|i| {
                let dir = dir_of(&scratch.0, i);
                std::fs::create_dir_all(&dir).expect("site dir");
                let extra = extra_of(i, &dir);
                let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
                SiteServer::start_as_written_with(
                    SEXTANT,
                    &dir,
                    PARENTS[i],
                    p_ip(i),
                    SocketAddr::from((p_ip(i), 5300)),
                    &parent_file(i, automatic, &base),
                    Some(ns.clone()),
                    &extra,
                )
            })
            .collect();
        let children: Vec<SiteServer> = if children {
            (0..2)
                .map(|i| {
                    let dir = scratch.0.join(CHILDREN[i]);
                    std::fs::create_dir_all(&dir).expect("site dir");
                    SiteServer::start_as_written(
                        SEXTANT,
                        &dir,
                        CHILDREN[i],
                        c_ip(i),
                        SocketAddr::from((c_ip(i), 5300)),
                        &child_file(i),
                        Some(ns.clone()),
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        let lab = Lab {
            parents,
            children,
            ns,
            scratch,
        };
        for p in &lab.parents {
            for other in PARENTS.iter().filter(|o| **o != p.name) {
                eventually_ok(EVENTUALLY, &format!("{} sees {other} UP", p.name), || {
                    p.expect_mep(other, "UP").map(|_| ())
                });
            }
        }
        Some(lab)
    }

    fn p(&self, i: usize) -> &SiteServer {
        &self.parents[i]
    }

    fn file(&self, i: usize) -> String {
        std::fs::read_to_string(&self.parents[i].config).expect("read config")
    }

    /// The operator edits parent `i`'s file and sends SIGHUP.
    fn edit(&self, i: usize, file: &str) {
        self.parents[i].reload(file);
    }

    fn links_of(&self, i: usize) -> Vec<(Ipv4Addr, Ipv4Addr)> {
        (0..3)
            .filter(|j| *j != i)
            .map(|j| (p_ip(i), p_ip(j)))
            .collect()
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.scratch.0.join(name)
    }
}

/// `site`'s `config_sync` object in the `/v1/sites` of `at`.
fn sync_of(at: &SiteServer, site: &str) -> Result<Value, String> {
    let (code, body) = at.get("/v1/sites")?;
    if code != 200 {
        return Err(format!("/v1/sites: {code} {body}"));
    }
    let v: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    v.as_array()
        .and_then(|a| a.iter().find(|s| s["name"] == site))
        .map(|s| s["config_sync"].clone())
        .ok_or_else(|| format!("no site {site} in {body}"))
}

/// How often each address is the answer in `n` consecutive queries (one
/// UDP worker: weighted round robin is a fixed cycle, so a window of the
/// weights' sum holds each service exactly its weight's times).
fn answer_counts(at: &SiteServer, n: usize) -> Result<HashMap<Ipv4Addr, usize>, String> {
    let mut counts = HashMap::new();
    for _ in 0..n {
        for ip in at.try_query_a(NAME)? {
            *counts.entry(ip).or_insert(0) += 1;
        }
    }
    Ok(counts)
}

/// `at` answers with the weights `want`.
fn expect_weights(at: &SiteServer, want: [usize; 3]) -> Result<(), String> {
    let total: usize = want.iter().sum();
    let counts = answer_counts(at, total)?;
    let got: Vec<usize> = (0..3)
        .map(|i| counts.get(&svc_ip(i)).copied().unwrap_or(0))
        .collect();
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "{}: answers per service {got:?}, want {want:?}",
            at.name
        ))
    }
}

/// The shared configuration's version `at` runs, from its own site's entry.
fn version_of(at: &SiteServer) -> Result<(u64, String), String> {
    let v = sync_of(at, &at.name)?;
    Ok((
        v["incarnation"].as_u64().ok_or("no incarnation")?,
        v["origin"].as_str().ok_or("no origin")?.to_string(),
    ))
}

#[test]
fn a_weight_changed_at_p1_is_answered_by_every_parent_and_no_child_is_touched() {
    let Some(lab) = Lab::start("w", true, true) else {
        return;
    };
    let children_before: Vec<String> = lab
        .children
        .iter()
        .map(|c| std::fs::read_to_string(&c.config).expect("child config"))
        .collect();
    for i in 0..3 {
        eventually_ok(EVENTUALLY, "every parent answers 1:1:1", || {
            expect_weights(lab.p(i), [1, 1, 1])
        });
    }

    // The operator changes one weight at P1 and reloads.
    // Its comment and ADNS service line; the sync switch is checked below.
    let p2_own_before: Vec<String> = lab.file(1).lines().take(2).map(str::to_string).collect();
    lab.edit(0, &parent_file(0, true, &shared([3, 1, 1], 5)));
    for (i, name) in PARENTS.iter().enumerate() {
        eventually_ok(EVENTUALLY, &format!("{name} answers 3:1:1"), || {
            expect_weights(lab.p(i), [3, 1, 1])
        });
    }
    // P2's file: the sync header on top, its own lines kept as written,
    // its own site still LOCAL, the new weight.
    let f2 = lab.file(1);
    assert!(
        f2.starts_with("# sextant config sync: from P1, incarnation 1, sha256:"),
        "{f2}"
    );
    for own in &p2_own_before {
        assert!(
            f2.contains(own.as_str()),
            "P2 lost its own line {own:?}:\n{f2}"
        );
    }
    assert!(
        f2.contains("add gslb site P2 127.0.1.2 -sitePassword s3cret -siteType LOCAL")
            || f2.contains("add gslb site P2 127.0.1.2 -siteType LOCAL -sitePassword s3cret"),
        "{f2}"
    );
    assert!(f2.contains("-serviceName svc1 -weight 3"), "{f2}");
    assert!(f2.contains("-automaticConfigSync ENABLED"), "{f2}");
    assert!(f2.contains("-MEPKeepAliveTimeout 1000 MSEC"), "{f2}");
    // /v1/sites at P1: both peers in sync at incarnation 1.
    for peer in ["P2", "P3"] {
        eventually_ok(EVENTUALLY, &format!("P1 sees {peer} in sync"), || {
            let s = sync_of(lab.p(0), peer)?;
            if s["state"] == "in_sync" && s["incarnation"] == 1 {
                Ok(())
            } else {
                Err(format!("{peer}: {s}"))
            }
        });
    }
    let (_, metrics) = lab.p(0).get("/metrics").expect("metrics");
    assert!(
        metrics.contains("sextant_config_sync_peer_in_sync{site=\"P2\"} 1"),
        "{metrics}"
    );

    // A change made over the API at P3 travels the other way.
    let mut f3 = lab.file(2);
    f3 = f3.replace(
        &format!("-domainName {NAME} -TTL 5"),
        &format!("-domainName {NAME} -TTL 42"),
    );
    let r = lab.p(2).put("/v1/config", &[], &f3);
    assert_eq!(r.status, 200, "{}", r.body);
    for (i, name) in PARENTS.iter().enumerate() {
        eventually_ok(EVENTUALLY, &format!("{name} answers with TTL 42"), || {
            let m = lab.p(i).try_query(NAME, RecordType::A)?;
            match m.answers.first().map(|a| a.ttl) {
                Some(42) => Ok(()),
                other => Err(format!("TTL {other:?}")),
            }
        });
    }
    assert_eq!(
        version_of(lab.p(0)).expect("version"),
        (2, "P3".to_string())
    );

    // The children were never sent anything.
    for (c, before) in lab.children.iter().zip(&children_before) {
        assert_eq!(
            &std::fs::read_to_string(&c.config).expect("child config"),
            before
        );
        let (_, m) = c.get("/metrics").expect("metrics");
        assert!(!m.contains("sextant_config_sync_incarnation"), "{}", c.name);
    }

    // A restart keeps the synchronised configuration.
    let mut lab = lab;
    lab.parents[1].stop();
    lab.parents[1].restart();
    // The node publishes its own sync state a moment after its API
    // answers (ready): ask until it has.
    eventually_ok(
        EVENTUALLY,
        "P2 keeps version 2 from P3 across a restart",
        || {
            let v = version_of(lab.p(1))?;
            if v == (2, "P3".to_string()) {
                Ok(())
            } else {
                Err(format!("version {v:?}"))
            }
        },
    );
    eventually_ok(EVENTUALLY, "P2 answers 3:1:1 after its restart", || {
        expect_weights(lab.p(1), [3, 1, 1])
    });
}

#[test]
fn simultaneous_conflicting_changes_converge_on_the_first_site_name() {
    let Some(lab) = Lab::start("c", true, false) else {
        return;
    };
    // P2 and P3 change the same weight differently while neither hears of
    // the other's change: both make incarnation 1.
    let links = [(p_ip(0), p_ip(1)), (p_ip(0), p_ip(2)), (p_ip(1), p_ip(2))];
    lab.ns.cut(&links);
    for (i, peer) in [(0, "P2"), (0, "P3"), (1, "P3")] {
        eventually_ok(
            EVENTUALLY,
            &format!("{} sees {peer} DOWN", PARENTS[i]),
            || lab.p(i).expect_mep(peer, "DOWN").map(|_| ()),
        );
    }
    lab.edit(1, &parent_file(1, true, &shared([1, 5, 1], 5)));
    lab.edit(2, &parent_file(2, true, &shared([1, 1, 9], 5)));
    for i in [1, 2] {
        eventually_ok(
            EVENTUALLY,
            &format!("{} made incarnation 1", PARENTS[i]),
            || match version_of(lab.p(i))? {
                (1, o) if o == PARENTS[i] => Ok(()),
                v => Err(format!("{v:?}")),
            },
        );
    }
    lab.ns.heal(&links);
    // Same incarnation: P2's name sorts first, so P2's wins everywhere.
    for (i, name) in PARENTS.iter().enumerate() {
        eventually_ok(
            2 * EVENTUALLY,
            &format!("{name} runs P2's change"),
            || match version_of(lab.p(i))? {
                (1, o) if o == "P2" => Ok(()),
                v => Err(format!("{v:?}")),
            },
        );
        eventually_ok(EVENTUALLY, &format!("{name} answers P2's 1:5:1"), || {
            expect_weights(lab.p(i), [1, 5, 1])
        });
    }
    let log = lab.p(2).log();
    assert!(
        log.contains(
            "the change made here (incarnation 1 from P3) lost to incarnation 1 from P2 (received from"
        ),
        "{log}"
    );
    assert!(!lab.p(1).log().contains("lost to"));
}

#[test]
fn a_partitioned_parent_catches_up_when_the_link_heals() {
    let Some(lab) = Lab::start("p", true, false) else {
        return;
    };
    let links = lab.links_of(2);
    lab.ns.cut(&links);
    eventually_ok(EVENTUALLY, "P1 sees P3 DOWN", || {
        lab.p(0).expect_mep("P3", "DOWN").map(|_| ())
    });
    lab.edit(0, &parent_file(0, true, &shared([1, 1, 1], 33)));
    eventually_ok(EVENTUALLY, "P2 has incarnation 1", || {
        match version_of(lab.p(1))? {
            (1, o) if o == "P1" => Ok(()),
            v => Err(format!("{v:?}")),
        }
    });
    assert_eq!(version_of(lab.p(2)).expect("version").0, 0, "P3 is cut off");
    lab.ns.heal(&links);
    eventually_ok(2 * EVENTUALLY, "P3 catches up", || {
        match version_of(lab.p(2))? {
            (1, o) if o == "P1" => Ok(()),
            v => Err(format!("{v:?}")),
        }
    });
    eventually_ok(EVENTUALLY, "P3 answers with TTL 33", || {
        let m = lab.p(2).try_query(NAME, RecordType::A)?;
        match m.answers.first().map(|a| a.ttl) {
            Some(33) => Ok(()),
            other => Err(format!("TTL {other:?}")),
        }
    });
}

#[test]
fn a_configuration_invalid_at_a_receiver_is_refused_there_and_the_sender_sees_why() {
    let Some(lab) = Lab::start("i", true, false) else {
        return;
    };
    // A location file P1 and P2 have, P3 does not.
    let csv = "192.0.2.0,192.0.2.255,Europe,DE,*,*\n";
    for p in ["P1", "P2"] {
        std::fs::write(lab.dir(p).join("geo.csv"), csv).expect("write geo.csv");
    }
    let with_file = format!("{}add locationFile geo.csv\n", shared([1, 1, 1], 5));
    lab.edit(0, &parent_file(0, true, &with_file));
    eventually_ok(EVENTUALLY, "P2 takes it", || match version_of(lab.p(1))? {
        (1, o) if o == "P1" => Ok(()),
        v => Err(format!("{v:?}")),
    });
    eventually_ok(EVENTUALLY, "P1 sees P3 reject it", || {
        let s = sync_of(lab.p(0), "P3")?;
        let err = s["last_error"].as_str().unwrap_or("");
        if s["state"] == "rejected" && err.contains("geo.csv") {
            Ok(())
        } else {
            Err(format!("{s}"))
        }
    });
    assert!(lab.p(0).log().contains("P3 rejected incarnation 1 from P1"));
    // P3 keeps its running configuration and its file.
    assert_eq!(version_of(lab.p(2)).expect("version").0, 0);
    assert!(!lab.file(2).contains("geo.csv"));
    eventually_ok(EVENTUALLY, "P3 still answers", || {
        expect_weights(lab.p(2), [1, 1, 1])
    });
}

#[test]
fn a_parent_on_another_version_is_refused_at_both_ends_and_manual_sync_previews_and_forces() {
    let Some(mut lab) = Lab::start("v", false, false) else {
        return;
    };
    // P3 is "upgraded": it announces another software version.
    lab.parents[2].stop();
    lab.parents[2]
        .env
        .push(("SEXTANT_CONFIG_SYNC_VERSION".into(), "9.9.9".into()));
    lab.parents[2].restart();
    eventually_ok(EVENTUALLY, "P1 refuses P3", || {
        let s = sync_of(lab.p(0), "P3")?;
        if s["state"] == "refused" && s["last_error"].as_str().unwrap_or("").contains("9.9.9") {
            Ok(())
        } else {
            Err(format!("{s}"))
        }
    });
    eventually_ok(EVENTUALLY, "P3 refuses P1", || {
        let s = sync_of(lab.p(2), "P1")?;
        if s["state"] == "refused" {
            Ok(())
        } else {
            Err(format!("{s}"))
        }
    });
    assert!(
        lab.p(2)
            .log()
            .contains("it runs Sextant 0.1.0, this node 9.9.9")
    );

    // Automatic sync is off: a change at P1 stays at P1 ...
    lab.edit(0, &parent_file(0, false, &shared([2, 1, 1], 5)));
    eventually_ok(EVENTUALLY, "P1 answers 2:1:1", || {
        expect_weights(lab.p(0), [2, 1, 1])
    });
    eventually_ok(EVENTUALLY, "P1 sees P2 not synced (disabled)", || {
        let s = sync_of(lab.p(0), "P2")?;
        if s["state"] == "disabled" {
            Ok(())
        } else {
            Err(format!("{s}"))
        }
    });
    expect_weights(lab.p(1), [1, 1, 1]).expect("P2 unchanged");

    // ... until the operator syncs by hand. The preview shows the line.
    let cli = |args: &[&str]| {
        let token = lab.p(0).config.with_extension("api-tokens");
        let server = format!("http://{}", lab.p(0).api_addr);
        let mut all = vec!["cli", "--server", server.as_str(), "--token-file"];
        let token = token.to_str().expect("utf-8").to_string();
        all.push(&token);
        all.extend_from_slice(args);
        let out = lab.ns.run(|| SEXTANT.run(&all));
        (out.status.success(), output_text(&out))
    };
    let (ok, preview) = cli(&["sync", "gslb", "config", "-preview"]);
    assert!(ok, "{preview}");
    assert!(
        preview.contains("P2 (incarnation 0 from P2): a delta")
            || preview.contains("P2 (incarnation 0 from P1): a delta"),
        "{preview}"
    );
    assert!(
        preview.contains("- bind gslb vserver vs_app -serviceName svc1 -weight 1"),
        "{preview}"
    );
    assert!(
        preview.contains("+ bind gslb vserver vs_app -serviceName svc1 -weight 2"),
        "{preview}"
    );
    assert!(preview.contains("P3"), "{preview}");
    let (ok, out) = cli(&["sync", "gslb", "config", "-forceSync", "P2", "-debug"]);
    assert!(ok, "{out}");
    assert!(out.contains("P2: in sync"), "{out}");
    assert!(out.contains("-> P2 ConfigUpdate"), "{out}");
    assert!(out.contains("<- P2 ConfigResult"), "{out}");
    eventually_ok(EVENTUALLY, "P2 answers 2:1:1", || {
        expect_weights(lab.p(1), [2, 1, 1])
    });
    // P3 (refused) keeps its own.
    expect_weights(lab.p(2), [1, 1, 1]).expect("P3 unchanged");
    // A sync of every parent leaves P3 behind: the command says so and
    // fails, so that a script notices.
    let (ok, out) = cli(&["sync", "gslb", "config"]);
    assert!(!ok, "{out}");
    assert!(out.contains("P2: in sync"), "{out}");
    assert!(
        out.contains("1 parent(s) did not take this node's configuration: P3 (refused)"),
        "{out}"
    );
    // A wrong token changes nothing and says why.
    let before = version_of(lab.p(0)).expect("version");
    let server = format!("http://{}", lab.p(0).api_addr);
    let bad = lab.scratch.0.join("wrong.tokens");
    std::fs::write(&bad, "nobody not-the-token\n").expect("write");
    let out = lab.ns.run(|| {
        SEXTANT.run(&[
            "cli",
            "--server",
            &server,
            "--token-file",
            bad.to_str().expect("utf-8"),
            "sync",
            "gslb",
            "config",
        ])
    });
    assert!(!out.status.success());
    assert!(
        output_text(&out).contains("the token is not valid"),
        "{}",
        output_text(&out)
    );
    assert_eq!(
        version_of(lab.p(0)).expect("version"),
        before,
        "a refused sync made a new version"
    );
}

/// SIGHUP (the same number on every Linux architecture).
const SIGHUP: i32 = 1;

/// Parent `i`'s file in the native TOML syntax: its `[server]` (listener,
/// local site) and the sync switch are its own; the rest is shared.
fn toml_parent_file(i: usize, weights: [u32; 2]) -> String {
    let mut c = format!(
        "version = 1\n\n\
         # {me}'s own listener\n\
         [server]\n\
         dns_listen = [\"{ip}:5300\"]\n\
         local_site = \"{me}\"\n\n\
         [gslb]\n\
         automatic_config_sync = true\n\
         mep_keepalive_timeout = \"1s\"\n",
        me = PARENTS[i],
        ip = p_ip(i)
    );
    for (k, p) in PARENTS.iter().take(2).enumerate() {
        c += &format!(
            "\n[[site]]\nname = \"{p}\"\nip = \"{}\"\nsite_password = \"s3cret\"\n",
            p_ip(k)
        );
    }
    c += "\n[[zone]]\napex = \"example.com\"\nns = [\"ns1.example.com\"]\n\
          soa = { origin_server = \"ns1.example.com\", contact = \"hostmaster.example.com\" }\n";
    for (k, site) in PARENTS.iter().take(2).enumerate() {
        c += &format!(
            "\n[[service]]\nname = \"svc{n}\"\nip = \"{}\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"{site}\"\n",
            svc_ip(k),
            n = k + 1
        );
    }
    c += &format!(
        "\n[[vserver]]\nname = \"vs_app\"\nprotocol = \"HTTP\"\nlb_method = \"ROUNDROBIN\"\n\
         services = [{{ name = \"svc1\", weight = {} }}, {{ name = \"svc2\", weight = {} }}]\n\
         domains = [{{ name = \"{NAME}\", ttl = 5 }}]\n",
        weights[0], weights[1]
    );
    c
}

#[test]
fn parents_configured_in_toml_sync_their_changes_too() {
    let Some(ns) = Netns::create("t") else {
        return;
    };
    let scratch = Scratch::new("config_sync_t");
    let parents: Vec<SiteServer> = (0..2)
        .map(|i| {
            let dir = scratch.0.join(PARENTS[i]);
            std::fs::create_dir_all(&dir).expect("site dir");
            SiteServer::start_toml_as_written(
                SEXTANT,
                &dir,
                PARENTS[i],
                p_ip(i),
                SocketAddr::from((p_ip(i), 5300)),
                &toml_parent_file(i, [1, 1]),
                Some(ns.clone()),
            )
        })
        .collect();
    eventually_ok(EVENTUALLY, "P1 and P2 in sync", || {
        let s = sync_of(&parents[0], "P2")?;
        if s["state"] == "in_sync" {
            Ok(())
        } else {
            Err(format!("{s}"))
        }
    });
    parents[1].reload(&toml_parent_file(1, [1, 4]));
    eventually_ok(EVENTUALLY, "P1 answers 1:4", || {
        let counts = answer_counts(&parents[0], 5)?;
        let got = (
            counts.get(&svc_ip(0)).copied().unwrap_or(0),
            counts.get(&svc_ip(1)).copied().unwrap_or(0),
        );
        if got == (1, 4) {
            Ok(())
        } else {
            Err(format!("answers per service {got:?}"))
        }
    });
    let f1 = std::fs::read_to_string(&parents[0].config).expect("read");
    assert!(
        f1.starts_with("# sextant config sync: from P2, incarnation 1"),
        "{f1}"
    );
    assert!(f1.contains("local_site = \"P1\""), "{f1}");
    assert!(f1.contains("dns_listen = [\"127.0.1.1:5300\"]"), "{f1}");
    assert!(f1.contains("weight = 4"), "{f1}");
}

#[test]
fn an_edit_saved_but_not_loaded_yet_is_never_overwritten_by_a_sync() {
    let Some(lab) = Lab::start("e", true, false) else {
        return;
    };
    // The operator at P2 has saved an edit but not sent SIGHUP yet.
    let edited = parent_file(1, true, &shared([1, 7, 1], 5));
    std::fs::write(&lab.p(1).config, &edited).expect("write");
    // Meanwhile P1 changes something else.
    lab.edit(0, &parent_file(0, true, &shared([1, 1, 1], 60)));
    eventually_ok(EVENTUALLY, "P1 sees P2 refuse for now", || {
        let s = sync_of(lab.p(0), "P2")?;
        if s["last_error"]
            .as_str()
            .unwrap_or("")
            .contains("holds a change that is not loaded yet")
        {
            Ok(())
        } else {
            Err(format!("{s}"))
        }
    });
    assert_eq!(
        std::fs::read_to_string(&lab.p(1).config).expect("read"),
        edited,
        "the sync overwrote the edit"
    );
    // The operator loads it: a change made at P2 after it saw P1's, so the
    // newer one, and every parent takes it.
    lab.p(1).signal(SIGHUP);
    for (i, name) in PARENTS.iter().enumerate() {
        eventually_ok(EVENTUALLY, &format!("{name} answers P2's 1:7:1"), || {
            expect_weights(lab.p(i), [1, 7, 1])
        });
    }
    assert_eq!(
        version_of(lab.p(0)).expect("version"),
        (2, "P2".to_string())
    );
}

#[test]
fn over_the_secure_variant_the_sync_travels_inside_tls() {
    let Some(ns) = Netns::create("s") else {
        return;
    };
    let scratch = Scratch::new("config_sync_s");
    // Every parent's rpcNode is secure (each file's own lines): MEP between
    // them runs over TLS, and a parent refuses plain connections.
    let rpc: String = (0..3)
        .map(|k| format!("set ns rpcNode {} -password s3cret -secure YES\n", p_ip(k)))
        .collect();
    let file = |i: usize, weights: [u32; 3]| {
        let f = parent_file(i, true, &shared(weights, 5));
        let own = format!("add service adns_{} {} ADNS 5300\n", PARENTS[i], p_ip(i));
        f.replace(&own, &format!("{own}{rpc}"))
    };
    let parents: Vec<SiteServer> = (0..3)
        .map(|i| {
            let dir = scratch.0.join(PARENTS[i]);
            std::fs::create_dir_all(&dir).expect("site dir");
            SiteServer::start_as_written(
                SEXTANT,
                &dir,
                PARENTS[i],
                p_ip(i),
                SocketAddr::from((p_ip(i), 5300)),
                &file(i, [1, 1, 1]),
                Some(ns.clone()),
            )
        })
        .collect();
    for p in &parents {
        for other in PARENTS.iter().filter(|o| **o != p.name) {
            eventually_ok(
                EVENTUALLY,
                &format!("{} sees {other} UP over TLS", p.name),
                || {
                    let (_, body) = p.get("/v1/sites")?;
                    let v: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
                    let s = v
                        .as_array()
                        .and_then(|a| a.iter().find(|s| s["name"] == *other))
                        .cloned()
                        .unwrap_or_default();
                    if s["mep"] == "UP" && s["link_secure"] == true {
                        Ok(())
                    } else {
                        Err(format!("{s}"))
                    }
                },
            );
        }
    }
    parents[0].reload(&file(0, [4, 1, 1]));
    for (i, name) in PARENTS.iter().enumerate() {
        eventually_ok(EVENTUALLY, &format!("{name} answers 4:1:1"), || {
            expect_weights(&parents[i], [4, 1, 1])
        });
    }
    // The rpcNode lines stayed each parent's own.
    let f2 = std::fs::read_to_string(&parents[1].config).expect("read");
    assert!(
        f2.starts_with("# sextant config sync: from P1, incarnation 1"),
        "{f2}"
    );
    assert_eq!(f2.matches("-secure YES").count(), 3, "{f2}");
}

// ---------------------------------------------------------------------------
// A peer parent in an attacker's hands (issue 38): it holds P1's API token
// and P1's host, and pushes, through the real sync path (`PUT /v1/config`
// at P1, which P1 validates with its own files and sends on), a
// configuration that names files on the receiver. P2 must refuse it, keep
// its configuration and its file, never give any file's content back, and
// answer at once.

/// P2's own API token, in a file beside its configuration (as an operator
/// keeps /etc/sextant/api-tokens beside /etc/sextant/sextant.conf): the
/// secret the attacker is after.
const P2_TOKEN: &str = "p2-own-secret-9d41c7e2a05b3f68";

/// The three parents; P2 with its own token file `P2.api-tokens`; P1's
/// directory `depth` levels below DIR/P1, where `depth` is the number of
/// names in P2's directory's path, so that `../` that many times is the
/// root at P2 and DIR/P1 at P1 (the attacker's trick to make P1 accept a
/// path that is `/dev/zero` at P2: at P1 it is a file the attacker wrote).
fn attack_lab(tag: &str) -> Option<Lab> {
    let p2_depth = |scratch: &Path| {
        std::fs::canonicalize(scratch)
            .expect("scratch")
            .components()
            .count()
    };
    let mut lab = Lab::start_laid_out(
        tag,
        true,
        false,
        |scratch, i| {
            if i == 0 {
                let mut d = scratch.join("P1");
                for _ in 0..p2_depth(scratch) {
                    d.push("x");
                }
                d
            } else {
                scratch.join(PARENTS[i])
            }
        },
        |i, dir| {
            if i != 1 {
                return Vec::new();
            }
            let file = dir.join("P2.api-tokens");
            std::fs::write(&file, format!("operator {P2_TOKEN}\n")).expect("token file");
            let mode = std::os::unix::fs::PermissionsExt::from_mode(0o600);
            std::fs::set_permissions(&file, mode).expect("chmod");
            vec!["--api-token-file".into(), file.display().to_string()]
        },
    )?;
    lab.parents[1].token = Some(P2_TOKEN.to_string());
    Some(lab)
}

impl Lab {
    fn p1_dir(&self) -> PathBuf {
        self.parents[0]
            .config
            .parent()
            .expect("P1's directory")
            .to_path_buf()
    }

    /// `../` as many times as P2's directory has names: the root, at P2.
    fn to_root_from_p2(&self) -> String {
        let dir = self.parents[1].config.parent().expect("P2's directory");
        let names = std::fs::canonicalize(dir)
            .expect("P2 dir")
            .components()
            .count()
            - 1;
        "../".repeat(names)
    }

    /// The attacker's push: P1's file with `lines` added to the shared
    /// part, through P1's API (P1 validates it and sends it on).
    fn push_from_p1(&self, lines: &str) {
        let text = parent_file(0, true, &format!("{}{lines}", shared([1, 1, 1], 5)));
        let r = self.p(0).put("/v1/config", &[], &text);
        assert_eq!(r.status, 200, "P1 takes the attacker's text: {}", r.body);
    }

    /// P2 refused the push (P1 sees it rejected, naming `file` and
    /// `reason`), keeps its version, file and answers, answers a reload at
    /// once (no apply is stuck on a file), and nothing anywhere holds P2's
    /// token.
    fn expect_p2_refused(&self, file: &str, reason: &str, p2_file: &str) {
        self.expect_p2_refused_keeping(file, reason, p2_file, &[P2_TOKEN]);
    }

    /// [`Lab::expect_p2_refused`], and none of `secrets` shows anywhere.
    fn expect_p2_refused_keeping(&self, file: &str, reason: &str, p2_file: &str, secrets: &[&str]) {
        eventually_ok(EVENTUALLY, "P1 sees P2 refuse the push", || {
            let s = sync_of(self.p(0), "P2")?;
            let err = s["last_error"].as_str().unwrap_or("");
            if s["state"] == "rejected" && err.contains(file) && err.contains(reason) {
                Ok(())
            } else {
                Err(format!("{s}"))
            }
        });
        assert_eq!(version_of(self.p(1)).expect("version"), (0, "P2".into()));
        assert_eq!(self.file(1), p2_file, "P2's file is untouched");
        eventually_ok(EVENTUALLY, "P2 still answers as before", || {
            expect_weights(self.p(1), [1, 1, 1])
        });
        let dry = self.p(1).put("/v1/config?dry_run=1", &[], p2_file);
        assert_eq!(
            dry.status, 200,
            "P2 takes its own text at once: {}",
            dry.body
        );
        for p in &self.parents {
            let (_, sites) = p.get("/v1/sites").expect("/v1/sites");
            for secret in secrets {
                assert!(!sites.contains(secret), "{}'s /v1/sites: {sites}", p.name);
                assert!(
                    !p.log().contains(secret),
                    "{}'s log holds a secret of P2's",
                    p.name
                );
            }
        }
    }
}

#[test]
fn a_pushed_configuration_cannot_read_the_receivers_token_file() {
    let Some(lab) = attack_lab("tok") else {
        return;
    };
    let p2_file = lab.file(1);
    // On P1's host the attacker puts a real key pair under the names of
    // P2's token file and P2's configuration file, so that P1 accepts.
    let dir = lab.p1_dir();
    let d = dir.display().to_string();
    let out = SEXTANT.run(&["dnssec", "keygen", "-K", &d, "example.com"]);
    assert!(out.status.success(), "{}", output_text(&out));
    let base = dir.join(String::from_utf8_lossy(&out.stdout).trim());
    let base = base.display();
    std::fs::rename(format!("{base}.key"), dir.join("P2.api-tokens")).expect("key");
    std::fs::rename(format!("{base}.private"), dir.join("P2.conf")).expect("private");
    lab.push_from_p1(
        "add dns key k1 P2.api-tokens P2.conf\n\
         sign dns zone example.com -keyName k1\n",
    );
    lab.expect_p2_refused("P2.api-tokens", "never read as another file", &p2_file);
    // Another secret in P2's directory, which P2 may read (it is under
    // its configuration's directory): the error says what is wrong with it,
    // never what it holds.
    const OTHER: &str = "backup-password-71f3a9c04e2d";
    let other = lab.dir("P2").join("backup.credentials");
    std::fs::write(&other, format!("backup {OTHER}\n")).expect("write");
    std::fs::copy(dir.join("P2.api-tokens"), dir.join("backup.credentials")).expect("key");
    std::fs::copy(dir.join("P2.conf"), dir.join("backup.private")).expect("private");
    std::fs::copy(dir.join("P2.conf"), lab.dir("P2").join("backup.private")).expect("private");
    lab.push_from_p1(
        "add dns key k1 backup.credentials backup.private\n\
         sign dns zone example.com -keyName k1\n",
    );
    lab.expect_p2_refused_keeping(
        "backup.credentials",
        "the .key file, line 1: expected `OWNER [TTL] [IN] DNSKEY ...`",
        &p2_file,
        &[P2_TOKEN, OTHER],
    );
}

#[test]
fn a_pushed_location_file_of_dev_zero_fails_at_once() {
    let Some(lab) = attack_lab("zero") else {
        return;
    };
    let p2_file = lab.file(1);
    let path = format!("{}dev/zero", lab.to_root_from_p2());
    // At P1 the same path is a location file the attacker wrote.
    let mut at_p1 = lab.p1_dir();
    for _ in 0..path.matches("../").count() {
        at_p1.pop();
    }
    std::fs::create_dir_all(at_p1.join("dev")).expect("dir");
    std::fs::write(at_p1.join("dev/zero"), "192.0.2.0,192.0.2.255,Europe,DE\n").expect("csv");
    lab.push_from_p1(&format!("add locationFile {path}\n"));
    lab.expect_p2_refused("dev/zero", "outside the directories", &p2_file);
    // P2's own operator mistyping a location file as /dev/zero: refused at
    // once, saying why.
    let typo = format!("{p2_file}add locationFile /dev/zero\n");
    let r = lab.p(1).put("/v1/config?dry_run=1", &[], &typo);
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.body.contains("a character device, not a regular file"),
        "{}",
        r.body
    );
}

#[test]
fn a_pushed_location_file_that_is_a_fifo_fails_at_once() {
    let Some(lab) = attack_lab("fifo") else {
        return;
    };
    let p2_file = lab.file(1);
    // A named pipe in P2's directory (where a log shipper might read), and a
    // regular location file of the same name at P1.
    let fifo = lab.dir("P2").join("geo-feed.csv");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    std::fs::write(
        lab.p1_dir().join("geo-feed.csv"),
        "192.0.2.0,192.0.2.255,Europe,DE\n",
    )
    .expect("csv");
    lab.push_from_p1("add locationFile geo-feed.csv\n");
    lab.expect_p2_refused(
        "geo-feed.csv",
        "a FIFO (named pipe), not a regular file",
        &p2_file,
    );
    assert!(lab.p(1).log().contains("not a regular file"), "P2 logs why");
}

#[test]
fn a_version_claiming_the_receiver_as_origin_is_refused() {
    let Some(mut lab) = Lab::start("forge", true, false) else {
        return;
    };
    let p2_file = lab.file(1);
    // The attacker, in control of P1's host, stops it, changes the weights
    // in its file, and forges its saved version so that the text carries
    // the label "incarnation 9 from P2": a change P2 never made, which
    // would beat anything P2 runs by P2's own name.
    lab.parents[0].stop();
    let text = parent_file(0, true, &shared([5, 1, 1], 5));
    let config = lab.parents[0].config.clone();
    std::fs::write(&config, &text).expect("write P1's file");
    let split = sextant_config::sync_text::split(&config, &text).expect("split");
    let forged = serde_json::json!({
        "incarnation": 9,
        "origin": "P2",
        "digest": sextant_config_sync::digest(&split.shared),
    });
    std::fs::write(
        config.with_file_name("P1.config-sync.json"),
        forged.to_string(),
    )
    .expect("state file");
    lab.parents[0].restart();
    eventually_ok(EVENTUALLY, "P1 sees P2 refuse the forged version", || {
        let s = sync_of(lab.p(0), "P2")?;
        let err = s["last_error"].as_str().unwrap_or("");
        if s["state"] == "rejected" && err.contains("P2 never made it") {
            Ok(())
        } else {
            Err(format!("{s}"))
        }
    });
    assert!(
        lab.p(1)
            .log()
            .contains("names P2 as its origin, but P2 never made it"),
        "P2 logs why"
    );
    assert_eq!(version_of(lab.p(1)).expect("version"), (0, "P2".into()));
    assert_eq!(lab.file(1), p2_file);
    eventually_ok(EVENTUALLY, "P2 answers as before", || {
        expect_weights(lab.p(1), [1, 1, 1])
    });
}

#[test]
fn a_directory_allowed_with_sync_file_dir_is_read_from_a_received_configuration() {
    // A GeoIP directory beside the sites' directories: P2's operator
    // allows it (`--sync-file-dir`), P3's does not.
    let geo = |scratch: &Path| scratch.join("GeoIP");
    let Some(lab) = Lab::start_laid_out(
        "gdir",
        true,
        false,
        |scratch, i| {
            std::fs::create_dir_all(geo(scratch)).expect("GeoIP dir");
            scratch.join(PARENTS[i])
        },
        |i, dir| {
            let geo = geo(dir.parent().expect("scratch"));
            if i == 1 {
                vec!["--sync-file-dir".into(), geo.display().to_string()]
            } else {
                Vec::new()
            }
        },
    ) else {
        return;
    };
    let csv = lab.scratch.0.join("GeoIP").join("geo.csv");
    std::fs::write(&csv, "192.0.2.0,192.0.2.255,Europe,DE\n").expect("csv");
    let p3_file = lab.file(2);
    let text = parent_file(
        0,
        true,
        &format!(
            "{}add locationFile {}\n",
            shared([1, 1, 1], 5),
            csv.display()
        ),
    );
    let r = lab.p(0).put("/v1/config", &[], &text);
    assert_eq!(r.status, 200, "{}", r.body);
    eventually_ok(EVENTUALLY, "P2 takes it", || match version_of(lab.p(1))? {
        (1, o) if o == "P1" => Ok(()),
        v => Err(format!("{v:?}")),
    });
    assert!(lab.file(1).contains("add locationFile"));
    eventually_ok(EVENTUALLY, "P3 refuses it", || {
        let s = sync_of(lab.p(0), "P3")?;
        let err = s["last_error"].as_str().unwrap_or("");
        if s["state"] == "rejected" && err.contains("outside the directories") {
            Ok(())
        } else {
            Err(format!("{s}"))
        }
    });
    assert_eq!(lab.file(2), p3_file);
}

/// A configuration command at P1 (`sextant cli bind ...`, `POST
/// /v1/config/commands`) runs at once and is sent as a reload's change is:
/// P2 and P3 answer it and write it to their files, while P1's own file
/// waits for `save ns config`.
#[test]
fn a_configuration_command_travels_before_it_is_saved() {
    let Some(lab) = Lab::start("k", true, false) else {
        return;
    };
    let before = lab.file(0);
    for cmd in [
        "unbind gslb vserver vs_app -serviceName svc1",
        "bind gslb vserver vs_app -serviceName svc1 -weight 3",
    ] {
        let body = serde_json::json!({ "command": cmd }).to_string();
        let (code, answer) = lab.p(0).post("/v1/config/commands", &body);
        assert_eq!(code, 200, "{cmd}: {answer}");
    }
    for (i, name) in PARENTS.iter().enumerate() {
        eventually_ok(EVENTUALLY, &format!("{name} answers 3:1:1"), || {
            expect_weights(lab.p(i), [3, 1, 1])
        });
    }
    for (i, name) in PARENTS.iter().enumerate().skip(1) {
        eventually_ok(EVENTUALLY, &format!("{name} saved it"), || {
            let f = lab.file(i);
            if f.contains("bind gslb vserver vs_app -serviceName svc1 -weight 3\n") {
                Ok(())
            } else {
                Err(f)
            }
        });
    }
    assert_eq!(lab.file(0), before, "P1's file waits for save ns config");
    let status: Value = lab.p(0).api("/v1/status");
    assert_eq!(status["config_unsaved_commands"], 2, "{status}");
    let (code, answer) = lab.p(0).post("/v1/config/save", "{}");
    assert_eq!(code, 200, "{answer}");
    assert!(
        lab.file(0)
            .contains("bind gslb vserver vs_app -serviceName svc1 -weight 3\n")
    );
}

/// A parent with unsaved configuration commands (its file older than what
/// runs) still takes a newer configuration: the received part is merged
/// into what runs and written, saving its commands with it.
#[test]
fn a_parent_with_unsaved_commands_takes_a_newer_configuration_and_saves_it() {
    let Some(lab) = Lab::start("u", true, false) else {
        return;
    };
    for cmd in [
        "unbind gslb vserver vs_app -serviceName svc2",
        "bind gslb vserver vs_app -serviceName svc2 -weight 5",
    ] {
        let body = serde_json::json!({ "command": cmd }).to_string();
        let (code, answer) = lab.p(1).post("/v1/config/commands", &body);
        assert_eq!(code, 200, "{cmd}: {answer}");
    }
    for (i, name) in PARENTS.iter().enumerate() {
        eventually_ok(EVENTUALLY, &format!("{name} answers 1:5:1"), || {
            expect_weights(lab.p(i), [1, 5, 1])
        });
    }
    let status: Value = lab.p(1).api("/v1/status");
    assert_eq!(status["config_unsaved_commands"], 2, "{status}");
    // P1 (which saved P2's change when it received it) changes the TTL.
    lab.edit(0, &parent_file(0, true, &shared([1, 5, 1], 60)));
    eventually_ok(EVENTUALLY, "P2 takes P1's TTL and saves", || {
        let f = lab.file(1);
        if f.contains(&format!("-domainName {NAME} -TTL 60"))
            && f.contains("-serviceName svc2 -weight 5")
        {
            Ok(())
        } else {
            Err(f)
        }
    });
    let status: Value = lab.p(1).api("/v1/status");
    assert_eq!(status["config_unsaved"], false, "{status}");
}
