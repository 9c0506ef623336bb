//! Config sync's split and merge (`sextant_config::sync_text`, issue 27)
//! over real configurations of both syntaxes: the shipped examples, the
//! seed-001 parent and child files the end-to-end tests build, and three
//! parents with everything a node keeps for itself (passwords, `-siteType
//! LOCAL`, ADNS services, rpcNodes, VRRP, DNS settings) next to what they
//! share (sites, services, vservers, monitors, locations, policies,
//! datacenter records, zones).
//!
//! The contract's invariants, for every pair (f, g) of files of one
//! deployment, s = split(g).shared and m = merge(f, s, h):
//! 1. split(m).shared == s (a received configuration is not a new change);
//! 2. merge(m, s, h) == m, split(m).header == h, .incarnation == h's;
//! 3. split(f).shared is the same whatever f's local lines and header;
//! 4. m parses into f's node (local site, listeners, VRRP, rpcNodes,
//!    passwords, DNS settings) serving g's GSLB configuration.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use sextant_config::parse_as;
use sextant_config::sync_text::{SyncHeader, SyncSyntax, SyncTextError, merge, split};
use sextant_core::{Model, SiteKind};

fn header(n: u64) -> SyncHeader {
    SyncHeader {
        origin: "P1".into(),
        incarnation: n,
        digest: "sha256:3f2a9c".into(),
        at: "2026-12-04T11:02:03Z".into(),
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

// ---------------------------------------------------------------------------
// The files
// ---------------------------------------------------------------------------

const PARENTS: [&str; 3] = ["P1", "P2", "P3"];

/// Parent `me` (0..3) of three, appliance syntax, as an operator writes it:
/// its own listener, DNS settings, metric exchange secrets and VRRP first,
/// then the GSLB configuration all parents share, with the seed-001
/// children and backup parents. `weight` is the weight of svc_c1 in vs_c1.
fn appliance_parent(me: usize, weight: u32) -> String {
    let mut c = format!(
        "# parent {p}: its own DNS listener and settings\n\
         add service adns1 127.0.1.{n} ADNS 5300\n\
         set dns parameter -nsid {p}\n\
         set ns rpcNode 127.0.1.1 -password mep-s3cret -secure YES\n\
         set ns rpcNode 127.0.1.2 -password mep-s3cret -secure YES\n\
         set ns rpcNode 127.0.1.3 -password mep-s3cret -secure YES\n\
         add vrid 7 -priority {prio}\n\
         bind vrid 7 -ifnum eth0\n\
         add ns ip 10.0.{n}.53 255.255.255.0 -type VIP -vrid 7\n\
         set gslb parameter -automaticConfigSync ENABLED -incarnation 5\n\
         \n\
         # --- shared GSLB configuration\n\
         set gslb parameter -MEPKeepAliveTimeout 5 -ldnsMask 255.255.255.0\n",
        p = PARENTS[me],
        n = me + 1,
        prio = 100 + me,
    );
    for (i, p) in PARENTS.iter().enumerate() {
        let local = if i == me { " -siteType LOCAL" } else { "" };
        c += &format!(
            "add gslb site {p} 127.0.1.{}{local} -sitePassword site-{p}-pw\n",
            i + 1
        );
    }
    for (i, p) in PARENTS.iter().enumerate() {
        c += &format!(
            "add gslb site child_site{n} 127.0.2.{n} -parentSite {p}\n",
            n = i + 1
        );
    }
    c += "set gslb site P1 -backupParentlist P2 P3\n\
          set gslb site P2 -backupParentlist P3 P1\n\
          set gslb site P3 -backupParentlist P1 P2\n\
          add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
          add dns nsRec example.com ns1.example.com\n\
          add lb monitor tcp-fast TCP -interval 1 SEC -resptimeout 500 MSEC -retries 2\n";
    for i in 1..=3 {
        let w = if i == 1 { weight } else { 10 };
        c += &format!(
            "# child {i}'s application\n\
             add gslb service svc_c{i} 127.0.3.{i} TCP 800{i} -siteName child_site{i}\n\
             bind gslb service svc_c{i} -monitorName tcp-fast\n\
             add gslb vserver vs_c{i} TCP -lbMethod ROUNDROBIN -EDR ENABLED\n\
             bind gslb vserver vs_c{i} -serviceName svc_c{i} -weight {w}\n\
             bind gslb vserver vs_c{i} -domainName c{i}.example.com -TTL 5\n"
        );
    }
    c += "add location 127.0.3.0 127.0.3.255 \"Europe.DE.HE.Frankfurt\" -longitude 8.68 -latitude 50.11\n\
          add dns action prefLoc11 GslbPrefLoc -preferredLocList \"Asia.HK\" \"Europe.UK\"\n\
          add dns policy dnsPolPrefLoc \"CLIENT.IP.SRC.MATCHES_LOCATION(\\\"\\*.ZMB.\\*.*\\\")\" prefLoc11\n\
          bind dns global dnsPolPrefLoc 100\n\
          add gslb dcRecord all.example.com -dcOrder P1 P2 P3 -TTL 30\n\
          bind gslb dcRecord all.example.com -siteName P1 -IPAddress 192.0.2.41\n\
          bind gslb dcRecord all.example.com -siteName P2 -IPAddress 192.0.2.42\n\
          # end of file\n";
    c
}

/// The same parent in the native syntax.
fn toml_parent(me: usize, weight: u32) -> String {
    let mut c = format!(
        "# parent {p}\n\
         version = 1\n\
         \n\
         [server]\n\
         dns_listen = [\"127.0.1.{n}:5300\"]\n\
         local_site = \"{p}\"\n\
         \n\
         [dns]\n\
         nsid = \"{p}\"\n\
         \n\
         [gslb]\n\
         automatic_config_sync = true\n\
         mep_keepalive_timeout = \"5s\"\n\
         incarnation = 5\n\
         ldns_v4_mask = 24\n\
         \n\
         [vrrp]\n\
         hello_interval = \"500ms\"\n\
         \n\
         [[vrrp.vrid]]\n\
         id = 7\n\
         priority = {prio}\n\
         interfaces = [\"eth0\"]\n\
         addresses = [\"10.0.{n}.53/24\"]\n",
        p = PARENTS[me],
        n = me + 1,
        prio = 100 + me,
    );
    for i in 1..=3 {
        c += &format!(
            "\n[[rpc_node]]\nip = \"127.0.1.{i}\"\npassword = \"mep-s3cret\"\nsecure = true\n"
        );
    }
    let backups = [["P2", "P3"], ["P3", "P1"], ["P1", "P2"]];
    for (i, p) in PARENTS.iter().enumerate() {
        c += &format!(
            "\n# parent {p}\n[[site]]\nname = \"{p}\"\nip = \"127.0.1.{}\"\nsite_password = \"site-{p}-pw\"\nbackup_parents = [\"{}\", \"{}\"]\n",
            i + 1,
            backups[i][0],
            backups[i][1]
        );
    }
    for (i, p) in PARENTS.iter().enumerate() {
        c += &format!(
            "\n[[site]]\nname = \"child_site{n}\"\nip = \"127.0.2.{n}\"\nparent = \"{p}\"\n",
            n = i + 1
        );
    }
    c += "\n[[monitor]]\nname = \"tcp-fast\"\ntype = \"tcp\"\ninterval = \"1s\"\nresponse_timeout = \"500ms\"\nretries = 2\n";
    for i in 1..=3 {
        let w = if i == 1 { weight } else { 10 };
        c += &format!(
            "\n[[service]]\nname = \"svc_c{i}\"\nip = \"127.0.3.{i}\"\nport = 800{i}\nprotocol = \"TCP\"\nsite = \"child_site{i}\"\nmonitors = [\"tcp-fast\"]\n\
             \n[[vserver]]\nname = \"vs_c{i}\"\nprotocol = \"TCP\"\nlb_method = \"roundrobin\"\nempty_down_response = true\n\
             services = [{{ name = \"svc_c{i}\", weight = {w} }}]\n\
             domains = [{{ name = \"c{i}.example.com\", ttl = 5 }}]\n"
        );
    }
    c += "\n[[zone]]\napex = \"example.com\"\nns = [\"ns1.example.com\"]\nsoa = { origin_server = \"ns1.example.com\", contact = \"hostmaster.example.com\" }\n\
          \n[[location]]\nfrom = \"127.0.3.0\"\nto = \"127.0.3.255\"\nlocation = \"Europe.DE.HE.Frankfurt\"\nlongitude = 8.68\nlatitude = 50.11\n\
          \n[[dns_action]]\nname = \"prefLoc11\"\ntype = \"GslbPrefLoc\"\npreferred_locations = [\"Asia.HK\", \"Europe.UK\"]\n\
          \n[[dns_policy]]\nname = \"dnsPolPrefLoc\"\nrule = 'CLIENT.IP.SRC.MATCHES_LOCATION(\"\\*.ZMB.\\*.*\")'\naction = \"prefLoc11\"\nbind = { priority = 100 }\n\
          \n[[dc_record]]\nname = \"all.example.com\"\ndc_order = [\"P1\", \"P2\", \"P3\"]\nttl = 30\n\
          \n[[dc_record.address]]\nsite = \"P1\"\nip = \"192.0.2.41\"\n\
          \n[[dc_record.address]]\nsite = \"P2\"\nip = \"192.0.2.42\"\n\
          # end of file\n";
    c
}

/// The parents' file of crates/sextant/tests/mep.rs's seed-001 tests: no
/// `-siteType LOCAL` (each process is told its site with `--local-site`),
/// no ADNS service (the test gives `--dns-listen`).
fn seed001_parent(weight: u32) -> String {
    let mut c = "set gslb parameter -MEPKeepAliveTimeout 1000 MSEC\n".to_string();
    for (i, p) in PARENTS.iter().enumerate() {
        c += &format!("add gslb site {p} 127.0.1.{}\n", i + 1);
    }
    for (i, p) in PARENTS.iter().enumerate() {
        c += &format!(
            "add gslb site child_site{n} 127.0.2.{n} -parentSite {p}\n",
            n = i + 1
        );
    }
    c += "set gslb site P1 -backupParentlist P2 P3\n\
          set gslb site P2 -backupParentlist P3 P1\n\
          set gslb site P3 -backupParentlist P1 P2\n\
          add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
          add dns nsRec example.com ns1.example.com\n";
    for n in 1..=3 {
        let w = if n == 1 { weight } else { 1 };
        c += &format!(
            "add gslb service svc_c{n} 127.0.3.{n} TCP 900{n} -siteName child_site{n}\n\
             add gslb vserver vs_c{n} TCP -lbMethod ROUNDROBIN -EDR ENABLED\n\
             bind gslb vserver vs_c{n} -serviceName svc_c{n} -weight {w}\n\
             bind gslb vserver vs_c{n} -domainName c{n}.example.com -TTL 5\n"
        );
    }
    c
}

/// A seed-001 child's file: itself, its parent, its own service.
fn seed001_child(n: usize) -> String {
    format!(
        "set gslb parameter -MEPKeepAliveTimeout 1000 MSEC\n\
         add gslb site {p} 127.0.1.{n}\n\
         add gslb site child_site{n} 127.0.2.{n} -parentSite {p}\n\
         add lb monitor tcp-fast TCP -interval 2 SEC -resptimeout 1 SEC\n\
         add gslb service svc_c{n} 127.0.3.{n} TCP 900{n} -siteName child_site{n}\n\
         bind gslb service svc_c{n} -monitorName tcp-fast\n",
        p = PARENTS[n - 1]
    )
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// ---------------------------------------------------------------------------
// The invariants
// ---------------------------------------------------------------------------

fn model(path: &Path, text: &str) -> Model {
    parse_as(path, text)
        .unwrap_or_else(|e| panic!("{} does not parse:\n{e}\n{text}", path.display()))
}

/// Checks the four invariants for f (the receiver's file) and g (the
/// sender's), both valid files at `path`.
fn invariants(path: &Path, f: &str, g: &str) {
    let h = header(9);
    let s = split(path, g).expect("g splits").shared;
    let m = merge(path, f, &s, &h).expect("merges");
    let back = split(path, &m).expect("the merged file splits");
    // 1.
    assert_eq!(back.shared, s, "split(merge) differs:\n{m}");
    // 2.
    assert_eq!(back.header, Some(h.clone()));
    assert_eq!(back.incarnation, Some(9));
    let again = merge(path, &m, &s, &h).expect("merges again");
    if again != m {
        let first = again.lines().zip(m.lines()).position(|(a, b)| a != b);
        panic!(
            "merge is not idempotent: first difference at line {first:?}:\n{}\n---\n{}",
            again
                .lines()
                .skip(first.unwrap_or(0).saturating_sub(3))
                .take(8)
                .collect::<Vec<_>>()
                .join("\n"),
            m.lines()
                .skip(first.unwrap_or(0).saturating_sub(3))
                .take(8)
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    // 3.
    assert_eq!(
        split(path, f).expect("f splits").shared,
        split(
            path,
            &merge(path, f, &split(path, f).expect("f").shared, &h).expect("m")
        )
        .expect("splits")
        .shared
    );
    // 4.
    let fm = model(path, f);
    let gm = model(path, g);
    let mm = model(path, &m);
    let name = |m: &Model| m.local_site.map(|id| m.sites[id].name.clone());
    assert_eq!(name(&mm), name(&fm), "local site");
    assert_eq!(mm.dns_listen, fm.dns_listen, "ADNS listeners");
    assert_eq!(mm.api_listen, fm.api_listen);
    assert_eq!(mm.vrrp, fm.vrrp, "VRRP");
    assert_eq!(mm.rpc_nodes, fm.rpc_nodes, "rpcNodes");
    assert_eq!(mm.dns, fm.dns, "DNS settings");
    assert_eq!(
        mm.params.automatic_config_sync,
        fm.params.automatic_config_sync
    );
    assert_eq!(mm.params.config_incarnation, Some(9));
    for site in mm.sites.iter() {
        let own = fm
            .site_by_name(&site.name)
            .and_then(|id| fm.sites[id].password.clone());
        assert_eq!(site.password, own, "password of {}", site.name);
    }
    // Which site is this node's and the passwords are the receiver's; the
    // rest of each site is the sender's.
    let kinds = |m: &Model| {
        m.sites
            .iter()
            .map(|s| (s.name.clone(), s.kind))
            .collect::<Vec<_>>()
    };
    let gm_kinds: Vec<_> = kinds(&mm)
        .into_iter()
        .map(|(name, _)| {
            let kind = fm
                .site_by_name(&name)
                .map(|id| fm.sites[id].kind)
                .unwrap_or_default();
            (name, kind)
        })
        .collect();
    assert_eq!(kinds(&mm), gm_kinds, "site kinds");
    let without_passwords = |m: &Model| {
        let mut sites: Vec<_> = m.sites.iter().cloned().collect();
        for s in &mut sites {
            s.password = None;
            s.kind = SiteKind::Remote;
        }
        sites
    };
    assert_eq!(without_passwords(&mm), without_passwords(&gm), "sites");
    assert_eq!(mm.services, gm.services, "services");
    assert_eq!(mm.vservers, gm.vservers, "vservers");
    assert_eq!(mm.domains, gm.domains, "domains");
    assert_eq!(mm.monitors, gm.monitors, "monitors");
    assert_eq!(mm.zones, gm.zones, "zones");
    assert_eq!(mm.records, gm.records, "records");
    assert_eq!(mm.dc_records, gm.dc_records, "dc records");
    assert_eq!(mm.dns_actions, gm.dns_actions, "dns actions");
    assert_eq!(mm.dns_policies, gm.dns_policies, "dns policies");
    assert_eq!(mm.dns_global_bindings, gm.dns_global_bindings);
    assert_eq!(mm.locations, gm.locations, "locations");
    let mut shared_params = mm.params.clone();
    shared_params.automatic_config_sync = gm.params.automatic_config_sync;
    shared_params.config_incarnation = gm.params.config_incarnation;
    assert_eq!(shared_params, gm.params, "GSLB parameters");
}

/// Every pair of the three parents, the receiver's file as it is and as
/// a previous sync left it, in both syntaxes.
#[test]
fn three_parents_in_both_syntaxes() {
    for (path, make) in [
        (
            "/etc/sextant/p.conf",
            appliance_parent as fn(usize, u32) -> String,
        ),
        ("/etc/sextant/p.toml", toml_parent),
    ] {
        let path = Path::new(path);
        for f in 0..3 {
            for g in 0..3 {
                let (ft, gt) = (make(f, 10), make(g, 40));
                invariants(path, &ft, &gt);
                // f as an earlier sync wrote it.
                let earlier = merge(
                    path,
                    &ft,
                    &split(path, &make(g, 20)).unwrap().shared,
                    &header(3),
                )
                .expect("merges");
                invariants(path, &earlier, &gt);
            }
        }
    }
}

#[test]
fn shipped_examples() {
    let mut seen = 0;
    for dir in [repo().join("examples"), repo().join("docs/examples")] {
        for entry in std::fs::read_dir(&dir).expect("examples") {
            let path = entry.expect("entry").path();
            if SyncSyntax::of(&path).is_none() {
                continue;
            }
            let text = read(&path);
            invariants(&path, &text, &text);
            seen += 1;
        }
    }
    assert!(seen >= 3, "{seen}");
    // fra receives a changed weight from itself: the example's weights.
    let path = repo().join("examples/sextant.conf");
    let f = read(&path);
    invariants(
        &path,
        &f,
        &f.replace(
            "-serviceName web-fra -weight 2",
            "-serviceName web-fra -weight 5",
        ),
    );
}

/// The seed-001 files of the end-to-end tests: parents named by
/// `--local-site` (no `-siteType LOCAL`: nothing to put back), and the
/// children's files, which split like any file.
#[test]
fn seed_001_parents_and_children() {
    let path = Path::new("parent.conf");
    invariants(path, &seed001_parent(1), &seed001_parent(7));
    let s = split(path, &seed001_parent(7)).unwrap().shared;
    let m = merge(path, &seed001_parent(1), &s, &header(2)).unwrap();
    // Without overlays, the shared part is the sender's text as it is.
    assert!(m.ends_with(&seed001_parent(7)), "{m}");
    assert_eq!(
        split(path, &seed001_parent(7)).unwrap().shared,
        seed001_parent(7)
    );
    for n in 1..=3 {
        let c = seed001_child(n);
        invariants(Path::new("child.conf"), &c, &c);
    }
}

// ---------------------------------------------------------------------------
// What the shared text is
// ---------------------------------------------------------------------------

/// A changed weight changes exactly one line of the shared text: the
/// binding's.
#[test]
fn a_changed_weight_changes_its_line_only() {
    for (path, make, want) in [
        (
            "p.conf",
            appliance_parent as fn(usize, u32) -> String,
            (
                "bind gslb vserver vs_c1 -serviceName svc_c1 -weight 10",
                "bind gslb vserver vs_c1 -serviceName svc_c1 -weight 55",
            ),
        ),
        (
            "p.toml",
            toml_parent,
            (
                "services = [{ name = \"svc_c1\", weight = 10 }]",
                "services = [{ name = \"svc_c1\", weight = 55 }]",
            ),
        ),
    ] {
        let path = Path::new(path);
        let a = split(path, &make(1, 10)).unwrap().shared;
        let b = split(path, &make(1, 55)).unwrap().shared;
        let diff: Vec<(&str, &str)> = a.lines().zip(b.lines()).filter(|(x, y)| x != y).collect();
        assert_eq!(diff, vec![want], "{path:?}");
        assert_eq!(a.lines().count(), b.lines().count());
        // And every parent has the same shared text.
        assert_eq!(split(path, &make(0, 10)).unwrap().shared, a);
        assert_eq!(split(path, &make(2, 10)).unwrap().shared, a);
    }
}

#[test]
fn local_and_per_node_content_never_travels() {
    let s = split(Path::new("p.conf"), &appliance_parent(1, 10))
        .unwrap()
        .shared;
    for local in [
        "ADNS",
        "rpcNode",
        "vrid",
        "-nsid",
        "sitePassword",
        "siteType",
        "incarnation",
        "automaticConfigSync",
        "mep-s3cret",
        "site-P1-pw",
    ] {
        assert!(!s.contains(local), "{local} in the shared text:\n{s}");
    }
    assert!(
        s.starts_with(
            "\n# --- shared GSLB configuration\nset gslb parameter -MEPKeepAliveTimeout 5"
        ),
        "{s}"
    );
    assert!(
        s.ends_with("bind gslb dcRecord all.example.com -siteName P2 -IPAddress 192.0.2.42\n"),
        "{s}"
    );
    let s = split(Path::new("p.toml"), &toml_parent(1, 10))
        .unwrap()
        .shared;
    for local in [
        "[server]",
        "[dns]",
        "[vrrp",
        "[[rpc_node]]",
        "site_password",
        "incarnation",
        "automatic_config_sync",
        "version",
        "s3cret",
        "pw\"",
    ] {
        assert!(!s.contains(local), "{local} in the shared text:\n{s}");
    }
    assert!(
        s.starts_with("\n[gslb]\nmep_keepalive_timeout = \"5s\"\nldns_v4_mask = 24\n"),
        "{s}"
    );
}

#[test]
fn the_merged_file_has_header_local_separator_shared() {
    let path = Path::new("p.conf");
    let s = split(path, &appliance_parent(0, 40)).unwrap().shared;
    let m = merge(path, &appliance_parent(1, 10), &s, &header(9)).unwrap();
    let lines: Vec<&str> = m.lines().collect();
    assert_eq!(
        lines[..4],
        [
            "# sextant config sync: from P1, incarnation 9, sha256:3f2a9c, at 2026-12-04T11:02:03Z",
            "# This node's own settings come first and are never synchronised; the shared GSLB",
            "# configuration follows and is replaced by every sync (docs/config-sync.md).",
            "# parent P2: its own DNS listener and settings",
        ]
    );
    assert!(lines.contains(&"set gslb parameter -automaticConfigSync ENABLED -incarnation 9"));
    assert!(
        lines.contains(&"add gslb site P2 127.0.1.2 -siteType LOCAL -sitePassword site-P2-pw"),
        "{m}"
    );
    assert!(
        lines.contains(&"add gslb site P1 127.0.1.1 -sitePassword site-P1-pw"),
        "{m}"
    );
    let sep = lines
        .iter()
        .position(|l| l.starts_with("# ---- shared GSLB configuration"))
        .expect("separator");
    // The local part's trailing comment stays local, before the separator.
    assert_eq!(lines[sep - 1], "# end of file");
    assert!(lines[..sep].iter().all(|l| !l.contains("gslb site")));
    assert!(lines[sep..].iter().all(|l| !l.contains("ADNS")));
}

/// A file without any incarnation gets a local line with it; a TOML file
/// without `[gslb]` a local `[gslb]`.
#[test]
fn an_incarnation_is_added_where_there_was_none() {
    let path = Path::new("c.conf");
    let f = "add service a 127.0.0.1 ADNS 53\nadd gslb site A 10.0.0.1 -siteType LOCAL\n";
    let m = merge(path, f, "add gslb site A 10.0.0.1\n", &header(4)).unwrap();
    assert!(
        m.contains("add service a 127.0.0.1 ADNS 53\nset gslb parameter -incarnation 4\n"),
        "{m}"
    );
    assert_eq!(split(path, &m).unwrap().incarnation, Some(4));
    // Per-node options on a shared line move to a local line of their own.
    let f = "add gslb site A 10.0.0.1 -siteType LOCAL\n\
             set gslb parameter -automaticConfigSync ENABLED -MEPKeepAliveTimeout 5 -incarnation 2\n";
    let s = split(path, f).unwrap();
    assert_eq!(
        (s.shared.as_str(), s.incarnation),
        (
            "add gslb site A 10.0.0.1\nset gslb parameter -MEPKeepAliveTimeout 5\n",
            Some(2)
        )
    );
    let m = merge(path, f, &s.shared, &header(4)).unwrap();
    assert!(
        m.contains(
            "\nset gslb parameter -automaticConfigSync ENABLED -incarnation 4\n# ---- shared"
        ),
        "{m}"
    );
    invariants(path, f, f);
    let path = Path::new("c.toml");
    let f =
        "version = 1\n[server]\nlocal_site = \"A\"\n[[site]]\nname = \"A\"\nip = \"10.0.0.1\"\n";
    let m = merge(
        path,
        f,
        "[[site]]\nname = \"A\"\nip = \"10.0.0.1\"\n",
        &header(4),
    )
    .unwrap();
    assert!(m.contains("[gslb]\nincarnation = 4\n"), "{m}");
    assert_eq!(model(path, &m).params.config_incarnation, Some(4));
    invariants(path, f, f);
    // The shared text's [gslb] receives the node's keys.
    let g =
        "version = 1\n[gslb]\nrtt_tolerance = \"7ms\"\n[[site]]\nname = \"A\"\nip = \"10.0.0.1\"\n";
    let m = merge(path, &m, &split(path, g).unwrap().shared, &header(5)).unwrap();
    assert!(
        m.contains("[gslb]\nincarnation = 5\nrtt_tolerance = \"7ms\"\n"),
        "{m}"
    );
    invariants(path, &m, g);
}

#[test]
fn a_sync_header_is_recognised_and_dropped() {
    for (path, f) in [
        ("p.conf", appliance_parent(2, 10)),
        ("p.toml", toml_parent(2, 10)),
    ] {
        let path = Path::new(path);
        let plain = split(path, &f).unwrap();
        assert_eq!(plain.header, None);
        assert_eq!(plain.incarnation, Some(5));
        let m = merge(path, &f, &plain.shared, &header(11)).unwrap();
        let synced = split(path, &m).unwrap();
        assert_eq!(synced.header, Some(header(11)));
        assert_eq!(synced.shared, plain.shared);
        // A comment that looks like a header but is not at the top is a comment.
        let moved = format!(
            "{f}{}",
            m.lines()
                .take(3)
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        );
        assert_eq!(split(path, &moved).unwrap().header, None);
    }
}

#[test]
fn crlf_files() {
    for (path, make) in [
        ("p.conf", appliance_parent as fn(usize, u32) -> String),
        ("p.toml", toml_parent),
    ] {
        let path = Path::new(path);
        let f = make(1, 10).replace('\n', "\r\n");
        let g = make(0, 30).replace('\n', "\r\n");
        // The shared text is the same as the LF file's: line ends do not travel.
        let s = split(path, &g).unwrap().shared;
        assert_eq!(s, split(path, &make(0, 30)).unwrap().shared);
        assert!(!s.contains('\r'));
        let m = merge(path, &f, &s, &header(9)).unwrap();
        assert!(
            !m.replace("\r\n", "").contains('\n'),
            "a bare LF in a CRLF file"
        );
        invariants(path, &f, &g);
    }
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

#[test]
fn errors_say_where_and_why() {
    let h = header(1);
    let e = split(Path::new("a.txt"), "x").unwrap_err();
    assert!(matches!(e, SyncTextError::UnknownSyntax { .. }));
    assert!(
        e.to_string()
            .starts_with("a.txt: unknown configuration file type"),
        "{e}"
    );

    // TOML text where the appliance syntax is expected, and the reverse.
    let toml_shared = split(Path::new("p.toml"), &toml_parent(0, 1))
        .unwrap()
        .shared;
    let e = merge(
        Path::new("p.conf"),
        &appliance_parent(1, 1),
        &toml_shared,
        &h,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "shared configuration from P1:2: \"[gslb]\" is not an appliance command: each line starts with a verb (add, set, bind, ...)"
    );
    let conf_shared = split(Path::new("p.conf"), &appliance_parent(0, 1))
        .unwrap()
        .shared;
    let e = merge(Path::new("p.toml"), &toml_parent(1, 1), &conf_shared, &h).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("shared configuration from P1:3: TOML syntax"),
        "{e}"
    );

    // A shared text holding what only a node's own part may hold.
    for (shared, want) in [
        (
            "add gslb site A 10.0.0.1\nadd service a 127.0.0.1 ADNS 53\n",
            "shared configuration from P1:2: `add service` is a node's own setting",
        ),
        (
            "add gslb site A 10.0.0.1 -sitePassword x\n",
            "shared configuration from P1:1: `-sitePassword` is a per-node option",
        ),
        (
            "add gslb site A 10.0.0.1",
            "shared configuration from P1:1: not in the canonical form",
        ),
        (
            "add gslb site A 10.0.0.1\r\n",
            "shared configuration from P1:1: not in the canonical form",
        ),
        (
            "add gslb site A \"10.0.0.1\n",
            "shared configuration from P1:1: unterminated quoted string",
        ),
    ] {
        let e = merge(
            Path::new("p.conf"),
            "add gslb site A 10.0.0.1\n",
            shared,
            &h,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with(want), "{shared:?}: {e}");
    }
    for (shared, want) in [
        (
            "[server]\nlocal_site = \"A\"\n",
            "shared configuration from P1:1: `[server]` is a node's own setting",
        ),
        (
            "[[site]]\nname = \"A\"\nip = \"1.1.1.1\"\nsite_password = \"x\"\n",
            "shared configuration from P1:4: `site_password` is a per-node key",
        ),
        (
            "version = 1\n",
            "shared configuration from P1:1: `version` is a node's own setting",
        ),
    ] {
        let e = merge(Path::new("p.toml"), "version = 1\n", shared, &h).unwrap_err();
        assert!(e.to_string().starts_with(want), "{shared:?}: {e}");
    }

    // This node's own site missing from the shared text.
    let e = merge(
        Path::new("p.conf"),
        "add gslb site A 10.0.0.1 -siteType LOCAL\n",
        "add gslb site B 10.0.0.2\n",
        &h,
    )
    .unwrap_err();
    assert!(matches!(e, SyncTextError::LocalSiteMissing { .. }), "{e}");
    assert!(e.to_string().contains("does not define site \"A\""), "{e}");

    // An incarnation that is not a count.
    let e = split(Path::new("p.conf"), "set gslb parameter -incarnation x\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "p.conf:1: incarnation: \"x\" is not an integer ≥ 0"
    );
}

// ---------------------------------------------------------------------------
// Shuffled local and shared lines, and size
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Local lines moved anywhere among the shared ones (where the reader
    /// allows it) change neither the shared text nor what a merge keeps.
    #[test]
    fn local_lines_anywhere(positions in prop::collection::vec(0usize..200, 9)) {
        let path = Path::new("p.conf");
        let f = appliance_parent(1, 10);
        let lines: Vec<&str> = f.lines().collect();
        // Lines 1..10 are the local ones (after the first comment).
        let local = &lines[1..10];
        let mut shuffled: Vec<&str> = lines[10..].to_vec();
        for (line, at) in local.iter().zip(&positions) {
            let at = at % (shuffled.len() + 1);
            shuffled.insert(at, line);
        }
        let text: String = shuffled.iter().map(|l| format!("{l}\n")).collect();
        // Still a valid file (VRRP's bind before its add is not: skip those).
        prop_assume!(parse_as(path, &text).is_ok());
        let want = split(path, &f).unwrap().shared;
        let got = split(path, &text).unwrap().shared;
        // The comment lines of the original travel with their commands;
        // compare commands only.
        let commands = |s: &str| s.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).map(str::to_string).collect::<Vec<_>>();
        prop_assert_eq!(commands(&got), commands(&want));
        let g = appliance_parent(0, 33);
        invariants(path, &text, &g);
    }
}

/// A 10,000-service file splits and merges (one pass over the lines, no
/// re-scan per line): the times of 1,000 and 10,000 services are printed
/// (`--nocapture`) for the performance note, not asserted.
#[test]
fn ten_thousand_services() {
    fn file(services: usize, me: usize) -> String {
        let mut c = format!("add service adns1 127.0.1.{} ADNS 53\n", me + 1);
        for (i, p) in PARENTS.iter().enumerate() {
            let local = if i == me { " -siteType LOCAL" } else { "" };
            c += &format!(
                "add gslb site {p} 127.0.1.{}{local} -sitePassword pw{i}\n",
                i + 1
            );
        }
        for i in 0..services {
            let p = PARENTS[i % 3];
            c += &format!(
                "add gslb service s{i} 10.{}.{}.{} HTTP 80 -siteName {p}\n\
                 add gslb vserver v{i} HTTP -lbMethod ROUNDROBIN\n\
                 bind gslb vserver v{i} -serviceName s{i} -weight {}\n\
                 bind gslb vserver v{i} -domainName d{i}.example.com -TTL 5\n",
                i / 65536,
                (i / 256) % 256,
                i % 256,
                1 + i % 100
            );
        }
        c
    }
    fn toml_file(services: usize, me: usize) -> String {
        let mut c = format!(
            "version = 1\n[server]\ndns_listen = [\"127.0.1.{}:53\"]\nlocal_site = \"{}\"\n",
            me + 1,
            PARENTS[me]
        );
        for (i, p) in PARENTS.iter().enumerate() {
            c += &format!(
                "[[site]]\nname = \"{p}\"\nip = \"127.0.1.{}\"\nsite_password = \"pw{i}\"\n",
                i + 1
            );
        }
        for i in 0..services {
            c += &format!(
                "[[service]]\nname = \"s{i}\"\nip = \"10.{}.{}.{}\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"{}\"\n\
                 [[vserver]]\nname = \"v{i}\"\nprotocol = \"HTTP\"\nservices = [{{ name = \"s{i}\", weight = {} }}]\n\
                 domains = [{{ name = \"d{i}.example.com\", ttl = 5 }}]\n",
                i / 65536,
                (i / 256) % 256,
                i % 256,
                PARENTS[i % 3],
                1 + i % 100
            );
        }
        c
    }
    for (path, make) in [
        ("big.conf", file as fn(usize, usize) -> String),
        ("big.toml", toml_file),
    ] {
        let path = Path::new(path);
        let time = |n: usize| {
            let (f, g) = (make(n, 1), make(n, 0));
            // The best of three: the machine is shared.
            let mut best = std::time::Duration::MAX;
            for _ in 0..3 {
                let start = std::time::Instant::now();
                let s = split(path, &g).unwrap().shared;
                let m = merge(path, &f, &s, &header(2)).unwrap();
                best = best.min(start.elapsed());
                assert_eq!(split(path, &m).unwrap().shared, s);
            }
            (best, g.len())
        };
        let (small, small_bytes) = time(1_000);
        let (big, big_bytes) = time(10_000);
        eprintln!(
            "{}: split + merge: 1,000 services ({small_bytes} bytes) {small:?}, 10,000 services ({big_bytes} bytes) {big:?}",
            path.display()
        );
        assert!(big_bytes > 9 * small_bytes);
    }
}

/// Pieces of both syntaxes, for texts that are mostly wrong.
const FRAGMENTS: &[&str] = &[
    "add gslb site ",
    "set gslb site ",
    "unset gslb site ",
    "set gslb parameter ",
    "add service ",
    "add server ",
    " -siteType ",
    " LOCAL ",
    " -sitePassword ",
    " -encrypted",
    " -incarnation ",
    " -automaticConfigSync ",
    " ENABLED",
    " 12",
    " -1",
    " \"q ",
    "'",
    "#",
    "\n",
    "\r\n",
    " ",
    "[gslb]",
    "[[site]]",
    "[server]",
    "name = ",
    "\"A\"",
    "incarnation = ",
    "site_password = ",
    "automatic_config_sync = true",
    "version = 1",
    "= [",
    "]",
    "{",
    "}",
    "\"\"\"",
    "x.y = 1",
    "# ---- shared GSLB configuration (the same at every parent; replaced by each sync) ----",
    "ü",
    "\u{feff}",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any text: split and merge answer (an error or a text), never panic,
    /// and what merge writes splits back to the shared text it was given.
    #[test]
    fn any_text_is_answered(
        a in prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40),
        b in prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40),
    ) {
        for path in ["x.conf", "x.toml"] {
            let path = Path::new(path);
            let (f, g) = (a.concat(), b.concat());
            let _ = split(path, &f);
            if let Ok(s) = split(path, &g)
                && let Ok(m) = merge(path, &f, &s.shared, &header(1))
            {
                prop_assert_eq!(split(path, &m).map(|x| x.shared), Ok(s.shared));
            }
        }
    }
}

/// `sign dns zone` (the appliance's verb for signing a zone) is a shared
/// line like `add dns key`, not an unknown command.
#[test]
fn sign_dns_zone_is_shared() {
    let text = "add service adns 10.0.0.1 ADNS 53\n\
                add dns soaRec example.com -originServer ns1.example.com -contact h.example.com\n\
                add dns key k1 k.key k.private\n\
                sign dns zone example.com -keyName k1\n";
    let s = split(Path::new("p.conf"), text).expect("split");
    assert!(
        s.shared.contains("sign dns zone example.com -keyName k1"),
        "{}",
        s.shared
    );
}
