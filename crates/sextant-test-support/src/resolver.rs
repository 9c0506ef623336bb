//! Real validating resolvers in front of an authoritative server under
//! test: Debian's Unbound as the LDNS, and BIND's `delv` (both installed by
//! `scripts/setup.sh`). What they accept is what a signed zone must give:
//! no validator of our own decides whether a signature is good.
//!
//! Each [`Unbound`] is a child process of the test with a configuration of
//! its own in the test's directory, on a loopback address and port the
//! test picks: it never reads /etc/unbound, never listens on port 53, and
//! refuses every name outside the zone under test, so no query leaves the
//! machine. Tests that need these tools start with [`tools_present`]: under
//! CI (`CI=true`) a missing tool fails the test, elsewhere it is `SKIPPED`.

use std::fs;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread;

use crate::ci::{cannot_run, have_program};
use crate::dns::{Dns, Edns, Message, Name, Query, RecordType, ResponseCode};
use crate::process::die_with_parent;
use crate::scratch::Scratch;
use crate::wait::{READY, wait_until};

/// A program on PATH or in Debian's /usr/sbin (not on every user's PATH).
fn program(name: &str) -> Option<String> {
    if have_program(name) {
        return Some(name.to_string());
    }
    let sbin = format!("/usr/sbin/{name}");
    Path::new(&sbin).exists().then_some(sbin)
}

/// Whether unbound, unbound-control and delv are installed. When one is
/// missing this says so through [`cannot_run`] (a failure under CI,
/// `SKIPPED` elsewhere) and the caller returns:
///
/// ```ignore
/// if !resolver::tools_present() {
///     return;
/// }
/// ```
pub fn tools_present() -> bool {
    let missing: Vec<&str> = ["unbound", "unbound-control", "delv"]
        .into_iter()
        .filter(|p| program(p).is_none())
        .collect();
    if missing.is_empty() {
        return true;
    }
    cannot_run(&format!(
        "the DNSSEC validation tests need {} (Debian packages unbound and \
         bind9-dnsutils; scripts/setup.sh installs them)",
        missing.join(", ")
    ));
    false
}

/// The trust anchor's records, one per line, as Unbound's
/// `trust-anchor-file` and delv's `trust-anchors` take them: DS or DNSKEY
/// records in presentation format (`OWNER [TTL] [IN] DS|DNSKEY RDATA`, as
/// `sextant dnssec ds`, `keymgr ... ds|dnskey` or `dig +short` print them
/// once the owner is put in front). Blank and `;` lines are skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnchorRecord {
    /// The owner name, fully qualified (ends with a dot).
    pub owner: String,
    /// `DS` or `DNSKEY`.
    pub rtype: String,
    /// The RDATA's fields, the key or digest joined into one field.
    pub rdata: Vec<String>,
}

/// Parses trust-anchor text (see [`AnchorRecord`]); panics on a line that is
/// neither a DS nor a DNSKEY record, since a test wrote it.
pub fn parse_trust_anchor(text: &str) -> Vec<AnchorRecord> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split(';').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let tokens: Vec<&str> = line
            .split_whitespace()
            .filter(|t| *t != "(" && *t != ")")
            .collect();
        let at = tokens
            .iter()
            .position(|t| t.eq_ignore_ascii_case("DS") || t.eq_ignore_ascii_case("DNSKEY"))
            .unwrap_or_else(|| panic!("trust anchor line is not DS or DNSKEY: {line}"));
        let rtype = tokens[at].to_ascii_uppercase();
        assert!(
            at >= 1 && tokens.len() >= at + 5,
            "trust anchor line too short: {line}"
        );
        let mut owner = tokens[0].to_string();
        if !owner.ends_with('.') {
            owner.push('.');
        }
        // DS: tag, algorithm, digest type, digest; DNSKEY: flags, protocol,
        // algorithm, key. The last field may have been split by spaces.
        let mut rdata: Vec<String> = tokens[at + 1..at + 4]
            .iter()
            .map(|t| t.to_string())
            .collect();
        rdata.push(tokens[at + 4..].concat());
        out.push(AnchorRecord {
            owner,
            rtype,
            rdata,
        });
    }
    assert!(!out.is_empty(), "empty trust anchor");
    out
}

/// The anchors in BIND 9.18's `trust-anchors { ... };` syntax (what
/// `delv -a` reads): `static-key` for a DNSKEY, `static-ds` for a DS.
pub fn bind_trust_anchors(trust_anchor: &str) -> String {
    let mut s = String::from("trust-anchors {\n");
    for a in parse_trust_anchor(trust_anchor) {
        let kind = if a.rtype == "DS" {
            "static-ds"
        } else {
            "static-key"
        };
        s.push_str(&format!(
            "    \"{}\" {kind} {} {} {} \"{}\";\n",
            a.owner, a.rdata[0], a.rdata[1], a.rdata[2], a.rdata[3]
        ));
    }
    s.push_str("};\n");
    s
}

/// `IP@PORT`, Unbound's address syntax.
fn at_port(addr: SocketAddr) -> String {
    format!("{}@{}", addr.ip(), addr.port())
}

/// A running Unbound: a validating resolver whose only zone is the one
/// under test (a stub zone to the authoritative server), with the given
/// trust anchor. Ended by its PID on drop; its log and configuration are
/// printed when the test is failing.
pub struct Unbound {
    child: Option<Child>,
    /// Where it listens (UDP and TCP).
    pub addr: SocketAddr,
    /// A DNS client to it.
    pub dns: Dns,
    dir: PathBuf,
    conf: PathBuf,
    control: String,
}

impl Unbound {
    /// The configuration [`Unbound::start`] writes, for `dir`.
    pub fn config(
        dir: &Path,
        listen: SocketAddr,
        zone: &str,
        authority: SocketAddr,
        anchor_file: &Path,
    ) -> String {
        let zone = zone.trim_end_matches('.');
        let d = dir.display();
        format!(
            "# written by sextant-test-support's resolver harness\n\
             server:\n\
             \x20   interface: {listen}\n\
             \x20   port: {port}\n\
             \x20   do-udp: yes\n\
             \x20   do-tcp: yes\n\
             \x20   access-control: 127.0.0.0/8 allow\n\
             \x20   access-control: ::1 allow\n\
             \x20   # The authority is on loopback.\n\
             \x20   do-not-query-localhost: no\n\
             \x20   username: \"\"\n\
             \x20   chroot: \"\"\n\
             \x20   directory: \"{d}\"\n\
             \x20   pidfile: \"{d}/unbound.pid\"\n\
             \x20   logfile: \"{d}/unbound.log\"\n\
             \x20   use-syslog: no\n\
             \x20   log-time-ascii: yes\n\
             \x20   verbosity: 1\n\
             \x20   # Why a validation failed, in the log.\n\
             \x20   val-log-level: 2\n\
             \x20   log-servfail: yes\n\
             \x20   module-config: \"validator iterator\"\n\
             \x20   trust-anchor-file: \"{anchor}\"\n\
             \x20   # No _ta-XXXX key-tag queries, no root-key sentinel: only\n\
             \x20   # the test's own queries reach the authority.\n\
             \x20   trust-anchor-signaling: no\n\
             \x20   root-key-sentinel: no\n\
             \x20   # The whole name asked at once: the stub zone's server is\n\
             \x20   # the authority itself, minimisation only adds queries.\n\
             \x20   qname-minimisation: no\n\
             \x20   prefetch: no\n\
             \x20   prefetch-key: no\n\
             \x20   num-threads: 1\n\
             \x20   msg-cache-size: 1m\n\
             \x20   rrset-cache-size: 1m\n\
             \x20   key-cache-size: 1m\n\
             \x20   neg-cache-size: 1m\n\
             \x20   # Every name outside the zone is refused, so nothing asks\n\
             \x20   # the root servers (and a default local zone such as\n\
             \x20   # test. does not shadow the zone).\n\
             \x20   local-zone: \".\" refuse\n\
             \x20   local-zone: \"{zone}.\" transparent\n\
             remote-control:\n\
             \x20   control-enable: yes\n\
             \x20   control-interface: \"{d}/unbound.ctl\"\n\
             \x20   control-use-cert: no\n\
             stub-zone:\n\
             \x20   name: \"{zone}.\"\n\
             \x20   stub-addr: {authority}\n",
            listen = at_port(listen),
            port = listen.port(),
            anchor = anchor_file.display(),
            authority = at_port(authority),
        )
    }

    /// Writes `unbound.conf` and `trust-anchor` into `dir` and starts
    /// `unbound -d -c unbound.conf`, listening on `listen`, resolving
    /// `zone` at `authority` and validating it from `trust_anchor` (DS or
    /// DNSKEY records, see [`AnchorRecord`]). Returns once its control
    /// socket answers. Panics (with its log) if it does not start; check
    /// [`tools_present`] first.
    pub fn start(
        dir: &Path,
        listen: SocketAddr,
        zone: &str,
        authority: SocketAddr,
        trust_anchor: &str,
    ) -> Unbound {
        Unbound::start_with_stubs(dir, listen, zone, authority, trust_anchor, &[])
    }

    /// Like [`Unbound::start`], with more stub zones: each child zone of
    /// `zone` in `stubs` is asked at its own address (a child served by
    /// another server, on a port that glue cannot give), while its DS is
    /// still asked of `zone`'s authority, so the chain of trust is the one
    /// a resolver on the Internet follows.
    pub fn start_with_stubs(
        dir: &Path,
        listen: SocketAddr,
        zone: &str,
        authority: SocketAddr,
        trust_anchor: &str,
        stubs: &[(&str, SocketAddr)],
    ) -> Unbound {
        let unbound = program("unbound").expect("unbound is installed (see tools_present)");
        fs::create_dir_all(dir).expect("create the resolver's directory");
        // Unbound reads the file as zone-file lines; parsing first makes a
        // malformed anchor a clear failure here.
        parse_trust_anchor(trust_anchor);
        let anchor_file = dir.join("trust-anchor");
        fs::write(&anchor_file, trust_anchor).expect("write the trust anchor");
        let conf = dir.join("unbound.conf");
        let mut text = Unbound::config(dir, listen, zone, authority, &anchor_file);
        for (child, addr) in stubs {
            text.push_str(&format!(
                "stub-zone:\n    name: \"{}.\"\n    stub-addr: {}\n",
                child.trim_end_matches('.'),
                at_port(*addr)
            ));
        }
        fs::write(&conf, text).expect("write unbound.conf");
        let out = fs::File::create(dir.join("unbound.out")).expect("create unbound.out");
        let child = die_with_parent(
            Command::new(unbound)
                .arg("-d")
                .arg("-c")
                .arg(&conf)
                .stdin(Stdio::null())
                .stdout(out.try_clone().expect("output handle"))
                .stderr(out),
        )
        .spawn()
        .expect("start unbound");
        let mut u = Unbound {
            child: Some(child),
            addr: listen,
            dns: Dns::new(listen),
            dir: dir.to_path_buf(),
            conf,
            control: program("unbound-control").unwrap_or_else(|| "unbound-control".into()),
        };
        let mut exited = None;
        let ready = wait_until(READY, || {
            if let Some(st) = u.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                exited = Some(st);
                return true;
            }
            u.control(&["status"]).is_ok()
        });
        if let Some(st) = exited {
            u.child = None;
            panic!("unbound exited at start ({st})\n{}", u.diagnostics());
        }
        assert!(
            ready,
            "unbound not ready within {READY:?}\n{}",
            u.diagnostics()
        );
        u
    }

    /// Runs `unbound-control -c CONF ARGS...`; its output, or why it failed.
    pub fn control(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new(&self.control)
            .arg("-c")
            .arg(&self.conf)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("run unbound-control: {e}"))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() {
            Ok(text)
        } else {
            Err(format!("unbound-control {args:?}: {}: {text}", out.status))
        }
    }

    /// Forgets everything cached for `zone` and below (answers, keys,
    /// bogus entries) and what Unbound learnt about its servers, so the
    /// next question goes to the authority again.
    pub fn flush(&self, zone: &str) {
        for args in [
            &["flush_zone", zone][..],
            &["flush_bogus"][..],
            &["flush_infra", "all"][..],
        ] {
            self.control(args)
                .unwrap_or_else(|e| panic!("{e}\n{}", self.diagnostics()));
        }
    }

    /// Asks `name`/`rtype` as a stub resolver does: RD=1, EDNS (1232) with
    /// DO=1, over UDP (TCP when the answer comes back truncated).
    pub fn try_ask(&self, name: &str, rtype: RecordType) -> Result<Message, String> {
        let q = validating_query(name, rtype);
        let m = self.dns.try_udp_from_ip(local_for(self.addr.ip()), &q)?;
        if m.metadata.truncation {
            return self.dns.try_tcp(&q);
        }
        Ok(m)
    }

    /// Like [`Unbound::try_ask`]; panics (with Unbound's log) on failure.
    pub fn ask(&self, name: &str, rtype: RecordType) -> Message {
        self.try_ask(name, rtype)
            .unwrap_or_else(|e| panic!("{e}\n{}", self.diagnostics()))
    }

    /// Unbound's log so far.
    pub fn log(&self) -> String {
        let log = fs::read_to_string(self.dir.join("unbound.log")).unwrap_or_default();
        let out = fs::read_to_string(self.dir.join("unbound.out")).unwrap_or_default();
        if out.trim().is_empty() {
            log
        } else {
            format!("{log}--- unbound's stdout and stderr ---\n{out}")
        }
    }

    /// Its log and configuration, for failure messages.
    pub fn diagnostics(&self) -> String {
        format!(
            "===== unbound log ({}) =====\n{}\n===== {} =====\n{}===== end =====",
            self.dir.display(),
            self.log(),
            self.conf.display(),
            fs::read_to_string(&self.conf).unwrap_or_default()
        )
    }
}

impl Drop for Unbound {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Our own child, by its PID (Child::kill), never by name.
            let _ = child.kill();
            let _ = child.wait();
        }
        if thread::panicking() {
            eprintln!("{}", self.diagnostics());
        }
    }
}

/// A query with RD=1 and EDNS(0) DO=1, 1232 bytes: what a validating
/// stub asks.
pub fn validating_query(name: &str, rtype: RecordType) -> Message {
    let mut m = Message::query();
    m.metadata.recursion_desired = true;
    m.add_query(Query::query(
        Name::from_ascii(name).expect("valid name"),
        rtype,
    ));
    let mut e = Edns::new();
    e.set_max_payload(1232);
    e.set_dnssec_ok(true);
    m.set_edns(e);
    m
}

/// Whether the response has AD set (the resolver validated it).
pub fn authentic(m: &Message) -> bool {
    m.metadata.authentic_data
}

/// The response's rcode.
pub fn rcode(m: &Message) -> ResponseCode {
    m.metadata.response_code
}

/// The loopback source address for a server in `ip`'s family.
fn local_for(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
    }
}

/// What `delv` printed for one question.
#[derive(Clone, Debug)]
pub struct Delv {
    /// Its standard output: the `; ...` verdict lines and the records.
    pub stdout: String,
    /// Its standard error (`;; resolution failed: ...` and the like).
    pub stderr: String,
}

impl Delv {
    /// Whether delv says `; fully validated` (or, for NXDOMAIN and NODATA,
    /// `; negative response, fully validated`). delv exits 0 either way,
    /// so this line is the verdict.
    pub fn fully_validated(&self) -> bool {
        self.stdout
            .lines()
            .any(|l| l.starts_with("; ") && l.trim_end().ends_with("fully validated"))
    }

    /// The answer records it printed (presentation format, one per line;
    /// comments left out).
    pub fn records(&self) -> Vec<String> {
        self.stdout
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with(';'))
            .map(str::to_string)
            .collect()
    }

    /// Both outputs, for failure messages.
    pub fn text(&self) -> String {
        format!(
            "--- delv stdout ---\n{}--- delv stderr ---\n{}",
            self.stdout, self.stderr
        )
    }
}

/// Runs `delv @IP -p PORT -a ANCHORS +root=ZONE NAME RTYPE` against
/// `server` (the authoritative server itself, or a resolver in front of
/// it), with `trust_anchor` (DS or DNSKEY records, see [`AnchorRecord`])
/// written to a scratch file in BIND's `trust-anchors` syntax. Bounded by
/// `timeout 30`. Check [`tools_present`] first.
pub fn delv(server: SocketAddr, zone: &str, trust_anchor: &str, name: &str, rtype: &str) -> Delv {
    let delv = program("delv").expect("delv is installed (see tools_present)");
    let dir = Scratch::new("delv");
    let anchors = dir.write("trust-anchors.conf", &bind_trust_anchors(trust_anchor));
    let out: Output = Command::new("timeout")
        .arg("30")
        .arg(delv)
        .arg(format!("@{}", server.ip()))
        .args(["-p", &server.port().to_string()])
        .args(["-a", &anchors])
        .arg(format!("+root={}", zone.trim_end_matches('.')))
        .args([name, rtype])
        .stdin(Stdio::null())
        .output()
        .expect("run delv");
    Delv {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The DNSViz that `scripts/setup.sh` installs (a virtual environment
/// under `$SEXTANT_TEST_DATA`, default /var/cache/sextant-test). When it
/// is missing this says so through [`cannot_run`] (a failure under CI,
/// `SKIPPED` elsewhere) and returns `None`.
pub fn dnsviz() -> Option<PathBuf> {
    let data = std::env::var("SEXTANT_TEST_DATA")
        .unwrap_or_else(|_| "/var/cache/sextant-test".to_string());
    let path = Path::new(&data).join("dnsviz-0.11.2/bin/dnsviz");
    if path.exists() {
        return Some(path);
    }
    cannot_run(&format!(
        "the DNSViz tests need {} (scripts/setup.sh installs DNSViz from PyPI)",
        path.display()
    ));
    None
}

/// What DNSViz said of a probe.
#[derive(Clone, Debug, Default)]
pub struct DnsViz {
    /// Each error and warning `dnsviz grok -l warning` reported, as `PATH
    /// errors|warnings: CODE: DESCRIPTION`.
    pub problems: Vec<String>,
    /// What `dnsviz print` printed: each name, its RRsets and proofs,
    /// marked `[.]` secure, `[-]` insecure, `[!]` bogus or in error.
    pub print: String,
    /// grok's JSON, for failure messages.
    pub grok: String,
}

/// `dnsviz probe -A -x ZONE+:SERVER NAMES...` (the authoritative servers,
/// starting at `zone` served by `server` on port 53 and following its
/// delegations), then `dnsviz grok -l warning` and `dnsviz print`, both
/// with `dnskey` (DNSKEY records in zone file form) as the trust anchor.
/// grok at its default level (everything) stops with a Python KeyError
/// on an insecure delegation in DNSViz 0.11.2, whoever serves it (Knot's
/// parent and child alike); at `-l warning` it reports every error and
/// warning. Each step bounded by `timeout 120`; panics with DNSViz's
/// output when one fails.
pub fn dnsviz_check(
    dnsviz: &Path,
    dir: &Path,
    zone: &str,
    server: IpAddr,
    dnskey: &str,
    names: &[&str],
) -> DnsViz {
    fs::create_dir_all(dir).expect("create the DNSViz directory");
    let probe = dir.join("probe.json");
    let grok = dir.join("grok.json");
    let anchor = dir.join("trusted-keys");
    fs::write(&anchor, dnskey).expect("write the trusted keys");
    let run = |what: &str, args: &[&std::ffi::OsStr]| -> String {
        let out = Command::new("timeout")
            .arg("120")
            .arg(dnsviz)
            .arg(what)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run dnsviz");
        assert!(
            out.status.success(),
            "dnsviz {what}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let stop_at = format!("{zone}+:{server}");
    let mut args: Vec<&std::ffi::OsStr> = vec!["-A".as_ref(), "-x".as_ref(), stop_at.as_ref()];
    args.extend(names.iter().map(std::ffi::OsStr::new));
    args.extend(["-o".as_ref(), probe.as_os_str()]);
    run("probe", &args);
    let trusted: [&std::ffi::OsStr; 5] = [
        "-P".as_ref(),
        "-t".as_ref(),
        anchor.as_os_str(),
        "-r".as_ref(),
        probe.as_os_str(),
    ];
    let mut args = trusted.to_vec();
    args.extend([
        "-l".as_ref(),
        "warning".as_ref(),
        "-o".as_ref(),
        grok.as_os_str(),
    ]);
    run("grok", &args);
    let print = run("print", &trusted);
    let text = fs::read_to_string(&grok).expect("read grok's output");
    let mut v = DnsViz {
        print,
        ..DnsViz::default()
    };
    // Nothing to report at this level: grok writes nothing at all.
    if !text.trim().is_empty() {
        let json: serde_json::Value = serde_json::from_str(&text).expect("grok writes JSON");
        walk(&json, "", &mut v.problems);
    }
    v.grok = text;
    v
}

/// Collects the `errors` and `warnings` of grok's JSON.
fn walk(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                if k == "errors" || k == "warnings" {
                    for e in v.as_array().into_iter().flatten() {
                        out.push(format!(
                            "{path} {k}: {}: {}",
                            e["code"].as_str().unwrap_or("?"),
                            e["description"].as_str().unwrap_or("")
                        ));
                    }
                }
                walk(v, &format!("{path}/{k}"), out);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, path, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_in_bind_syntax() {
        let text = "signed.test. DS 11831 13 2 269e19b8cccd1778\n\
                    ; a comment\n\
                    signed.test. 60 IN DNSKEY 257 3 13 ipQOLrm2 iqmSEi0I==\n";
        assert_eq!(
            bind_trust_anchors(text),
            "trust-anchors {\n    \"signed.test.\" static-ds 11831 13 2 \"269e19b8cccd1778\";\n    \
             \"signed.test.\" static-key 257 3 13 \"ipQOLrm2iqmSEi0I==\";\n};\n"
        );
    }
}
