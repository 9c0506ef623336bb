//! The `sextant` binary under test: as one server on a test's own address
//! ([`Server`]), as one site of several ([`SiteServer`], in the host's
//! network namespace or a [`Netns`]), or as a command run to completion
//! ([`Bin::run`]).
//!
//! Only the `sextant` crate's own integration tests know where the binary
//! is (`env!("CARGO_BIN_EXE_sextant")` is set for them alone), so each of
//! its test files names it once and passes it in:
//!
//! ```ignore
//! const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));
//! let s = Server::start(SEXTANT, &net, Syntax::Conf, &config);
//! ```

use std::fs;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use sextant_api::{Explain, Ldns, MepCounters, Service, Site, State, Status};

use crate::api::{self, api_get_as};
use crate::dns::{Dns, Message, RecordType, a_records, build_query};
use crate::http::{Reply, bearer, http_get_as, http_request, http_send_json};
use crate::net::{API_PORT, DNS_PORT, Net};
use crate::netns::Netns;
use crate::wait::{EVENTUALLY, READY, wait_until};

/// The path of the `sextant` binary under test.
#[derive(Clone, Copy, Debug)]
pub struct Bin(pub &'static str);

impl Bin {
    /// A command for the binary: `RUST_LOG` from `SEXTANT_TEST_LOG`
    /// (default `info`), backtraces on, stdin closed.
    pub fn command(self) -> Command {
        let mut cmd = Command::new(self.0);
        self.prepare(&mut cmd);
        cmd
    }

    /// The same as [`Bin::command`], run inside `ns` (`ip netns exec`
    /// execs the binary in place: the pid is sextant's).
    pub fn command_in(self, ns: Option<&Netns>) -> Command {
        match ns {
            Some(ns) => {
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", &ns.name, self.0]);
                self.prepare(&mut cmd);
                cmd
            }
            None => self.command(),
        }
    }

    /// Runs the binary with `args` to completion (bounded by a deadline of
    /// 60 s), capturing its output. The output is read while the process
    /// runs, so that one larger than a pipe's buffer cannot stall it.
    pub fn run(self, args: &[&str]) -> Output {
        let mut child = Command::new(self.0)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sextant");
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut p) = pipe {
                    let _ = p.read_to_end(&mut bytes);
                }
                bytes
            })
        };
        let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
        let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
        let end = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for sextant") {
                break status;
            }
            if Instant::now() >= end {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "sextant {args:?} did not finish within 60s\nstdout:\n{}\nstderr:\n{}",
                    String::from_utf8_lossy(&stdout.join().unwrap_or_default()),
                    String::from_utf8_lossy(&stderr.join().unwrap_or_default())
                );
            }
            thread::sleep(Duration::from_millis(20));
        };
        Output {
            status,
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
        }
    }

    fn prepare(self, cmd: &mut Command) {
        cmd.env(
            "RUST_LOG",
            std::env::var("SEXTANT_TEST_LOG").unwrap_or_else(|_| "info".into()),
        )
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null());
    }
}

/// A finished command's stdout and stderr, for assertion messages.
pub fn output_text(out: &Output) -> String {
    format!(
        "--- stdout ---\n{}--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The child gets SIGKILL if the thread that spawns it dies without running
/// destructors (a test killed by a timeout), so no server outlives its test.
pub(crate) fn die_with_parent(cmd: &mut Command) -> &mut Command {
    // SAFETY: prctl(2) only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd
}

/// The child starts with RLIMIT_NOFILE `n` soft and hard (so it cannot
/// raise the soft one): for tests of what exhausts descriptors.
pub fn limit_open_files(cmd: &mut Command, n: u64) {
    // SAFETY: setrlimit(2) only, between fork and exec, on a local struct.
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A field of /proc/PID/status (`"VmRSS:"`, `"State:"`), trimmed.
pub fn proc_status(pid: u32, field: &str) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .map(|v| v.trim().to_string())
}

/// A process's resident memory (VmRSS) in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    proc_status(pid, "VmRSS:")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Raises this test process's own soft limit on open files to `want` (at
/// most the hard limit), for the many connections an attack test opens.
pub fn raise_own_open_files(want: u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < want {
            r.rlim_cur = want.min(r.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

/// Waits until `GET /v1/status` answers 200 at `api` (run by `get`), or
/// the child exits, or [`READY`] passes. `what` and `log` are for messages.
fn wait_ready(
    child: &mut Option<Child>,
    get: impl Fn() -> Result<(u16, String), String>,
    what: &str,
    log: impl Fn() -> String,
) -> Result<(), String> {
    let end = Instant::now() + READY;
    loop {
        if let Some(status) = child.as_mut().expect("spawned").try_wait().unwrap() {
            *child = None;
            return Err(format!(
                "{what} exited before it was ready ({status})\n--- log ---\n{}",
                log()
            ));
        }
        if let Ok((200, _)) = get() {
            return Ok(());
        }
        if Instant::now() >= end {
            return Err(format!(
                "{what} not ready within {READY:?} (GET /v1/status)\n--- log ---\n{}",
                log()
            ));
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// SIGTERM, then SIGKILL if it has not gone after 5 s.
fn terminate(mut child: Child) -> Option<ExitStatus> {
    if let Ok(Some(st)) = child.try_wait() {
        return Some(st);
    }
    // SAFETY: kill(2) on our own, not yet reaped child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait().ok()
}

/// `kill(pid, sig)`; panics if it fails.
fn signal(pid: i32, sig: i32, what: &str) {
    // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) of {what} failed");
}

/// Sets the open files limit (soft and hard) of the running process
/// `pid` to `n`, as `prlimit --pid PID --nofile=N:N` does: for a test that
/// leaves a server few descriptors after it started (the server raises its
/// soft limit to the hard one at start). Panics if it cannot.
pub fn set_open_files_limit(pid: i32, n: u64) {
    let limit = libc::rlimit {
        rlim_cur: n,
        rlim_max: n,
    };
    // SAFETY: prlimit(2) on a child we spawned, with a pointer to a local
    // struct and no old value asked for.
    let rc = unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, &limit, std::ptr::null_mut()) };
    assert_eq!(
        rc,
        0,
        "prlimit({pid}, RLIMIT_NOFILE, {n}): {}",
        std::io::Error::last_os_error()
    );
}

/// How many file descriptors process `pid` has open now (/proc/PID/fd).
pub fn open_files(pid: i32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/fd: {e}"))
        .count()
}

/// The API token every server started here accepts (its name in the token
/// file is [`TEST_TOKEN_NAME`]), and that [`Server`] and [`SiteServer`] send
/// with every request, as an operator's scripts would.
pub const TEST_TOKEN: &str = "sextant-test-token-5f0c1e9a7b3d";
pub const TEST_TOKEN_NAME: &str = "test";

/// How long a request of the helpers here may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Writes a token file holding [`TEST_TOKEN`] at `path`, mode 0600 (the
/// server refuses a token file others can read).
pub fn write_token_file(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::write(path, format!("{TEST_TOKEN_NAME} {TEST_TOKEN}\n")).expect("write token file");
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).expect("chmod token file");
}

/// Whether the arguments to `serve` name a token file of the test's own.
fn names_token_file(extra: &[impl AsRef<str>]) -> bool {
    extra.iter().any(|a| a.as_ref() == "--api-token-file")
}

/// A request with the API token (if any) to `addr`.
fn send(
    addr: SocketAddr,
    token: Option<&str>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<Reply, String> {
    let auth = bearer(token);
    let mut all: Vec<(&str, &str)> = headers.to_vec();
    if let Some(a) = auth.as_deref()
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
    {
        all.push(("Authorization", a));
    }
    http_request(addr, method, path, &all, body)
}

/// Config syntax of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    Conf,
    Toml,
}

impl Syntax {
    fn ext(self) -> &'static str {
        match self {
            Syntax::Conf => "conf",
            Syntax::Toml => "toml",
        }
    }
}

/// `sextant serve` on a test's own address ([`Net`]): DNS on
/// SERVER_IP:5300 (or another listener, [`Server::start_dns_on`]) and the
/// API on SERVER_IP:8080. Stopped on drop; its log and config are printed
/// if the test is failing.
pub struct Server {
    child: Option<Child>,
    pub net: Net,
    pub dir: PathBuf,
    pub config: PathBuf,
    pub stderr_path: PathBuf,
    pub stdout_path: PathBuf,
    pub dns: Dns,
    /// The API token its requests carry ([`TEST_TOKEN`] unless the test
    /// gave its own token file, or none).
    pub token: Option<String>,
}

impl Server {
    /// Writes `config` and starts `sextant serve` on the test's address,
    /// waiting until the API answers. Panics (with the server log) if it
    /// does not come up.
    pub fn start(bin: Bin, net: &Net, syntax: Syntax, config: &str) -> Server {
        Self::start_with(bin, net, syntax, config, &[])
    }

    /// Like [`Server::start`], with extra arguments to `serve`.
    pub fn start_with(bin: Bin, net: &Net, syntax: Syntax, config: &str, extra: &[&str]) -> Server {
        Self::try_start(bin, net, syntax, config, extra).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`Server::start_with`] but returns the log instead of panicking.
    pub fn try_start(
        bin: Bin,
        net: &Net,
        syntax: Syntax,
        config: &str,
        extra: &[&str],
    ) -> Result<Server, String> {
        Self::spawn(bin, net, syntax, config, net.dns_addr(), extra, true, None)
    }

    /// Like [`Server::start_with`], the server started with both the soft
    /// and the hard limit on open files at `nofile` (so that it cannot
    /// raise the soft one): for tests of what exhausts descriptors.
    pub fn start_with_nofile(
        bin: Bin,
        net: &Net,
        syntax: Syntax,
        config: &str,
        extra: &[&str],
        nofile: u64,
    ) -> Server {
        Self::spawn(
            bin,
            net,
            syntax,
            config,
            net.dns_addr(),
            extra,
            true,
            Some(nofile),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`Server::try_start`] but without a token file: the API's
    /// writes are disabled (unless `extra` names one).
    pub fn try_start_without_token(
        bin: Bin,
        net: &Net,
        syntax: Syntax,
        config: &str,
        extra: &[&str],
    ) -> Result<Server, String> {
        Self::spawn(bin, net, syntax, config, net.dns_addr(), extra, false, None)
    }

    /// Like [`Server::start`], but the DNS listener is `dns` (for example
    /// `[::1]:PORT`) instead of the test's own IPv4 address; the API stays
    /// on the test's address, and `dns` is what [`Server::dns`] talks to.
    pub fn start_dns_on(
        bin: Bin,
        net: &Net,
        syntax: Syntax,
        config: &str,
        dns: SocketAddr,
    ) -> Server {
        Self::spawn(bin, net, syntax, config, dns, &[], true, None)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[allow(clippy::too_many_arguments)] // private; each caller names what it changes
    fn spawn(
        bin: Bin,
        net: &Net,
        syntax: Syntax,
        config: &str,
        dns: SocketAddr,
        extra: &[&str],
        with_token: bool,
        nofile: Option<u64>,
    ) -> Result<Server, String> {
        let dir = net.tempdir();
        let config_path = dir.join(format!("sextant.{}", syntax.ext()));
        fs::write(&config_path, config).expect("write config");
        let token_file = dir.join("api-tokens");
        let token_args: Vec<String> = if with_token && !names_token_file(extra) {
            write_token_file(&token_file);
            vec!["--api-token-file".into(), token_file.display().to_string()]
        } else {
            Vec::new()
        };
        let token = (with_token && !names_token_file(extra)).then(|| TEST_TOKEN.to_string());
        let stderr_path = dir.join("stderr.log");
        let stdout_path = dir.join("stdout.log");
        let dns_arg = dns.to_string();
        let api = net.api_addr().to_string();
        let mut command = bin.command();
        if let Some(n) = nofile {
            limit_open_files(&mut command, n);
        }
        let child = command
            .args([
                "serve",
                "--config",
                config_path.to_str().unwrap(),
                "--dns-listen",
                &dns_arg,
                "--api-listen",
                &api,
            ])
            .args(&token_args)
            .args(extra)
            .stdout(fs::File::create(&stdout_path).unwrap())
            .stderr(fs::File::create(&stderr_path).unwrap())
            .spawn()
            .map_err(|e| format!("cannot spawn {}: {e}", bin.0))?;
        let mut server = Server {
            child: Some(child),
            net: net.clone(),
            dir,
            config: config_path,
            stderr_path,
            stdout_path,
            dns: Dns::new(dns),
            token,
        };
        let api_addr = net.api_addr();
        // A test's own token file that reads need may hold TEST_TOKEN; on
        // open reads a token is not looked at.
        let ready_token = server.token.clone().or(Some(TEST_TOKEN.to_string()));
        wait_ready(
            &mut server.child,
            || {
                http_get_as(
                    api_addr,
                    "/v1/status",
                    ready_token.as_deref(),
                    REQUEST_TIMEOUT,
                )
            },
            "sextant",
            || fs::read_to_string(&server.stderr_path).unwrap_or_default(),
        )
        .map_err(|e| format!("{e}\n--- config ---\n{config}"))?;
        Ok(server)
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("server running").id() as i32
    }

    /// The server's stderr so far.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => c.try_wait().unwrap().is_none(),
            None => false,
        }
    }

    pub fn signal(&self, sig: i32) {
        signal(self.pid(), sig, "sextant");
    }

    /// Rewrites the config file and sends SIGHUP.
    pub fn reload(&self, config: &str) {
        fs::write(&self.config, config).expect("rewrite config");
        self.signal(libc::SIGHUP);
    }

    /// GET on the API: the status and the body as JSON (a JSON string of
    /// the body if it is not JSON); panics on transport errors. For
    /// answers that are not a typed `/v1/...` result, such as errors.
    pub fn api(&self, path: &str) -> (u16, serde_json::Value) {
        let (status, body) = http_get_as(
            self.net.api_addr(),
            path,
            self.token.as_deref(),
            REQUEST_TIMEOUT,
        )
        .unwrap_or_else(|e| panic!("GET {path}: {e}\n--- stderr ---\n{}", self.log()));
        let v = serde_json::from_str(&body).unwrap_or(serde_json::Value::String(body));
        (status, v)
    }

    /// GET that must answer 200 with a `T`.
    pub fn get<T: DeserializeOwned>(&self, path: &str) -> T {
        api_get_as(
            self.net.api_addr(),
            path,
            self.token.as_deref(),
            REQUEST_TIMEOUT,
        )
        .unwrap_or_else(|e| panic!("{e}\n--- stderr ---\n{}", self.log()))
    }

    /// POST of a JSON body with the server's token: (status, body).
    pub fn post(&self, path: &str, json: &str) -> (u16, String) {
        http_send_json(
            self.net.api_addr(),
            "POST",
            path,
            json,
            self.token.as_deref(),
        )
        .unwrap_or_else(|e| panic!("POST {path}: {e}\n--- stderr ---\n{}", self.log()))
    }

    /// PUT of `body` with the server's token: the whole reply.
    pub fn put(&self, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        self.request("PUT", path, headers, body)
    }

    /// Any request with the server's token (unless `headers` has an
    /// `Authorization` of its own): the whole reply.
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        send(
            self.net.api_addr(),
            self.token.as_deref(),
            method,
            path,
            headers,
            body,
        )
        .unwrap_or_else(|e| panic!("{e}\n--- stderr ---\n{}", self.log()))
    }

    /// A request exactly as given, without the server's token: the whole
    /// reply (for tests of authentication itself).
    pub fn request_raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Reply {
        http_request(self.net.api_addr(), method, path, headers, body)
            .unwrap_or_else(|e| panic!("{e}\n--- stderr ---\n{}", self.log()))
    }

    /// `GET /v1/status`.
    pub fn status(&self) -> Status {
        self.get(api::STATUS)
    }

    /// `GET /v1/services`.
    pub fn services(&self) -> Vec<Service> {
        self.get(api::SERVICES)
    }

    /// `GET /v1/sites`.
    pub fn sites(&self) -> Vec<Site> {
        self.get(api::SITES)
    }

    pub fn generation(&self) -> u64 {
        self.status().generation
    }

    /// The `/v1/services` entry of a service by name.
    pub fn service(&self, name: &str) -> Option<Service> {
        self.services().into_iter().find(|s| s.name == name)
    }

    /// The state of a service by name, from /v1/services.
    pub fn service_state(&self, name: &str) -> Option<State> {
        self.service(name).map(|s| s.state)
    }

    /// Waits until the API reports `state` for `svc`.
    #[track_caller]
    pub fn wait_state(&self, svc: &str, state: State) {
        let mut last = None;
        let ok = wait_until(EVENTUALLY, || {
            last = self.service_state(svc);
            last == Some(state)
        });
        assert!(
            ok,
            "service {svc} not {state:?} within {EVENTUALLY:?} (last: {last:?})"
        );
    }

    /// `GET /v1/explain?name=NAME&client=CLIENT` (NAME may carry more
    /// parameters: `x.example.com&type=AAAA`).
    pub fn explain_full(&self, name: &str, client: &str) -> Explain {
        self.get(&api::explain_path(name, client))
    }

    /// The /v1/explain trace for a query, as one string.
    pub fn explain(&self, name: &str, client: &str) -> String {
        self.explain_full(name, client).trace.join("\n")
    }

    /// SIGTERM, then SIGKILL if it has not gone after a few seconds.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        terminate(self.child.take()?)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        if thread::panicking() {
            eprintln!(
                "===== sextant stderr ({}) =====\n{}\n===== config ({}) =====\n{}\n===== end =====",
                self.stderr_path.display(),
                self.log(),
                self.config.display(),
                fs::read_to_string(&self.config).unwrap_or_default()
            );
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// One site of a multi-site test: `sextant serve --local-site NAME` with
/// DNS on SITE_IP:5300 and the API on SITE_IP:8080, in the host's network
/// namespace or in a [`Netns`]. Its API and DNS helpers open their sockets
/// in the site's namespace. Stopped (by pid) on drop; its log is printed if
/// the test is failing.
///
/// [`SiteServer::start`] waits until the API answers;
/// [`SiteServer::start_without_dns`] does too but passes no
/// `--dns-listen`; [`SiteServer::spawn`] does not wait, for a test that
/// watches the process from its first moment or expects it to exit
/// ([`SiteServer::try_wait`], [`SiteServer::wait_exit`]). The `expect_*`
/// checks return why they do not hold, for
/// [`crate::wait::eventually_ok`].
pub struct SiteServer {
    pub name: String,
    pub ip: Ipv4Addr,
    /// SITE_IP:5300; nothing listens there for a site started with
    /// [`SiteServer::start_without_dns`].
    pub dns: Dns,
    pub api_addr: SocketAddr,
    pub config: PathBuf,
    pub log_path: PathBuf,
    pub ns: Option<Arc<Netns>>,
    bin: Bin,
    child: Option<Child>,
    /// Whether `serve` gets `--dns-listen SITE_IP:5300`.
    dns_listen: bool,
    /// When the process was last spawned.
    started: Instant,
    /// More arguments to `serve` ([`SiteServer::start_with`]).
    extra: Vec<String>,
    /// Whether `serve` gets `--local-site NAME` (not for a file that says
    /// which site is local itself: [`SiteServer::start_as_written`]).
    local_site_arg: bool,
    /// The API token its requests carry ([`TEST_TOKEN`], from the token
    /// file DIR/NAME.api-tokens, unless the test gave its own file).
    pub token: Option<String>,
    /// Environment variables of the next [`SiteServer::restart`] on.
    pub env: Vec<(String, String)>,
}

impl SiteServer {
    /// Writes `config` to DIR/NAME.conf and starts the site, waiting until
    /// its API answers.
    pub fn start(
        bin: Bin,
        dir: &Path,
        name: &str,
        ip: Ipv4Addr,
        config: &str,
        ns: Option<Arc<Netns>>,
    ) -> SiteServer {
        Self::start_with(bin, dir, name, ip, config, ns, &[])
    }

    /// Like [`SiteServer::start`], with more arguments to `serve` (e.g.
    /// `--ldns-new-per-second 20`), kept for [`SiteServer::restart`].
    pub fn start_with(
        bin: Bin,
        dir: &Path,
        name: &str,
        ip: Ipv4Addr,
        config: &str,
        ns: Option<Arc<Netns>>,
        extra: &[&str],
    ) -> SiteServer {
        let mut site = Self::new(bin, dir, name, ip, config, ns, true);
        site.extra = extra.iter().map(|a| a.to_string()).collect();
        site.launched(true)
    }

    /// Like [`SiteServer::start`] (host namespace) but without
    /// `--dns-listen`: `serve` opens only the listeners its configuration
    /// asks for (none for DNS in a child's file without an ADNS service).
    pub fn start_without_dns(
        bin: Bin,
        dir: &Path,
        name: &str,
        ip: Ipv4Addr,
        config: &str,
    ) -> SiteServer {
        Self::new(bin, dir, name, ip, config, None, false).launched(true)
    }

    /// Runs `config` as its file says, the way an operator runs an
    /// imported configuration: no `--local-site` (the file names its local
    /// site) and no `--dns-listen` (its ADNS services say where DNS
    /// listens, given here as `dns` for the test's client). Only the API
    /// address is given, SITE_IP:API_PORT, since several sites share a
    /// namespace. Waits until the API answers.
    pub fn start_as_written(
        bin: Bin,
        dir: &Path,
        name: &str,
        ip: Ipv4Addr,
        dns: SocketAddr,
        config: &str,
        ns: Option<Arc<Netns>>,
    ) -> SiteServer {
        Self::start_as_written_with(bin, dir, name, ip, dns, config, ns, &[])
    }

    /// Like [`SiteServer::start_as_written`], with more arguments to
    /// `serve` (e.g. `--xdp-interface eth0`).
    #[allow(clippy::too_many_arguments)]
    pub fn start_as_written_with(
        bin: Bin,
        dir: &Path,
        name: &str,
        ip: Ipv4Addr,
        dns: SocketAddr,
        config: &str,
        ns: Option<Arc<Netns>>,
        extra: &[&str],
    ) -> SiteServer {
        let mut site = Self::new(bin, dir, name, ip, config, ns, false);
        site.extra = extra.iter().map(|a| a.to_string()).collect();
        site.dns = Dns::new(dns);
        site.local_site_arg = false;
        site.launched(true)
    }

    /// Like [`SiteServer::start_as_written`], with the API at `api` instead
    /// of SITE_IP:API_PORT: `127.0.0.1:8053` in a namespace of the test's
    /// own is `serve`'s default, where `sextant cli` and `curl` find it
    /// without `--server`, as in the guides' transcripts.
    #[allow(clippy::too_many_arguments)]
    pub fn start_as_written_at(
        bin: Bin,
        dir: &Path,
        name: &str,
        ip: Ipv4Addr,
        dns: SocketAddr,
        api: SocketAddr,
        config: &str,
        ns: Option<Arc<Netns>>,
    ) -> SiteServer {
        let mut site = Self::new(bin, dir, name, ip, config, ns, false);
        site.dns = Dns::new(dns);
        site.api_addr = api;
        site.local_site_arg = false;
        site.launched(true)
    }

    /// Like [`SiteServer::start_as_written`], for a file in the native TOML
    /// syntax (written to DIR/NAME.toml).
    pub fn start_toml_as_written(
        bin: Bin,
        dir: &Path,
        name: &str,
        ip: Ipv4Addr,
        dns: SocketAddr,
        config: &str,
        ns: Option<Arc<Netns>>,
    ) -> SiteServer {
        let mut site = Self::new(bin, dir, name, ip, config, ns, false);
        let toml = dir.join(format!("{name}.toml"));
        fs::rename(&site.config, &toml).expect("name the site config .toml");
        site.config = toml;
        site.dns = Dns::new(dns);
        site.local_site_arg = false;
        site.launched(true)
    }

    /// Like [`SiteServer::start`] (host namespace) but returns as soon as
    /// the process is spawned, without waiting for its API: for a test that
    /// queries it from its first moment ([`SiteServer::started`]), or one
    /// that expects it to refuse to start ([`SiteServer::wait_exit`]).
    pub fn spawn(bin: Bin, dir: &Path, name: &str, ip: Ipv4Addr, config: &str) -> SiteServer {
        Self::new(bin, dir, name, ip, config, None, true).launched(false)
    }

    fn new(
        bin: Bin,
        dir: &Path,
        name: &str,
        ip: Ipv4Addr,
        config: &str,
        ns: Option<Arc<Netns>>,
        dns_listen: bool,
    ) -> SiteServer {
        let config_path = dir.join(format!("{name}.conf"));
        fs::write(&config_path, config).expect("write site config");
        let site = SiteServer {
            name: name.to_string(),
            ip,
            dns: Dns::new(SocketAddr::new(IpAddr::V4(ip), DNS_PORT)),
            api_addr: SocketAddr::new(IpAddr::V4(ip), API_PORT),
            config: config_path,
            log_path: dir.join(format!("{name}.log")),
            ns,
            bin,
            child: None,
            // A child site runs as an operator runs it (seed 001: no ADNS
            // service on a child), without --dns-listen.
            dns_listen: dns_listen && !is_child_site(config, name),
            started: Instant::now(),
            extra: Vec::new(),
            local_site_arg: true,
            token: Some(TEST_TOKEN.to_string()),
            env: Vec::new(),
        };
        let _ = fs::remove_file(&site.log_path);
        site
    }

    fn launched(mut self, wait: bool) -> SiteServer {
        self.launch(wait);
        self
    }

    /// Starts the process again after [`SiteServer::kill`] or
    /// [`SiteServer::stop`] (same configuration file; the log is appended).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "site {} is running", self.name);
        self.launch(true);
    }

    /// Spawns the process; with `wait`, waits until its API answers
    /// (panics with the log and config if it does not).
    fn launch(&mut self, wait: bool) {
        let mut log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .expect("open site log");
        let _ = writeln!(log, "===== test harness: starting site {} =====", self.name);
        let dns = self.dns.server.to_string();
        let api = self.api_addr.to_string();
        let config = self.config.to_str().expect("utf-8 path").to_string();
        let mut cmd = self.bin.command_in(self.ns.as_deref());
        die_with_parent(&mut cmd).args(["serve", "--config", config.as_str()]);
        if names_token_file(&self.extra) {
            self.token = None;
        } else {
            let file = self.config.with_extension("api-tokens");
            write_token_file(&file);
            cmd.arg("--api-token-file").arg(&file);
        }
        if self.local_site_arg {
            cmd.args(["--local-site", &self.name]);
        }
        if self.dns_listen {
            cmd.args(["--dns-listen", &dns]);
        }
        self.started = Instant::now();
        let child = cmd
            .args(["--api-listen", &api, "--udp-workers", "1"])
            .args(&self.extra)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn site {}: {e}", self.name));
        if !wait {
            self.child = Some(child);
            return;
        }
        let mut child = Some(child);
        let ready = wait_ready(
            &mut child,
            || self.get("/v1/status"),
            &format!("site {}", self.name),
            || self.log(),
        );
        self.child = child;
        if let Err(e) = ready {
            panic!(
                "{e}\n--- config ---\n{}",
                fs::read_to_string(&self.config).unwrap_or_default()
            );
        }
    }

    /// Runs `f` in the site's network namespace (directly without one).
    pub fn in_ns<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.ns {
            Some(ns) => ns.run(f),
            None => f(),
        }
    }

    pub fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.id() as i32)
    }

    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => c.try_wait().unwrap().is_none(),
            None => false,
        }
    }

    /// When the process was last spawned.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The exit status if the process has exited by itself (it is then
    /// reaped: the site is stopped); `None` while it runs.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        let st = self.child.as_mut()?.try_wait().unwrap()?;
        self.child = None;
        Some(st)
    }

    /// Waits up to `deadline` for the process to exit by itself; its exit
    /// status, or `None` if it still runs.
    pub fn wait_exit(&mut self, deadline: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + deadline;
        loop {
            if let Some(st) = self.try_wait() {
                return Some(st);
            }
            if Instant::now() >= end {
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `sig` to the running process.
    pub fn signal(&self, sig: i32) {
        let pid = self.pid().expect("site running");
        signal(pid, sig, &format!("site {}", self.name));
    }

    /// GET on the site's API (with its token).
    pub fn get(&self, path: &str) -> Result<(u16, String), String> {
        let addr = self.api_addr;
        let token = self.token.as_deref();
        self.in_ns(|| http_get_as(addr, path, token, REQUEST_TIMEOUT))
    }

    /// GET that must answer 200 with a `T`.
    pub fn try_api<T: DeserializeOwned + Send>(&self, path: &str) -> Result<T, String> {
        let addr = self.api_addr;
        let token = self.token.as_deref();
        self.in_ns(|| api_get_as(addr, path, token, REQUEST_TIMEOUT))
            .map_err(|e| format!("site {}: {e}", self.name))
    }

    /// Like [`SiteServer::try_api`]; panics on failure.
    pub fn api<T: DeserializeOwned + Send>(&self, path: &str) -> T {
        self.try_api(path).unwrap_or_else(|e| panic!("{e}"))
    }

    /// POST of a JSON body on the site's API, with its token.
    pub fn post(&self, path: &str, json: &str) -> (u16, String) {
        let addr = self.api_addr;
        let token = self.token.as_deref();
        self.in_ns(|| http_send_json(addr, "POST", path, json, token))
            .unwrap_or_else(|e| panic!("site {}: POST {path}: {e}", self.name))
    }

    /// A request exactly as given, without the site's token: the whole
    /// reply (for tests of authentication itself).
    pub fn request_raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Reply {
        let addr = self.api_addr;
        self.in_ns(|| http_request(addr, method, path, headers, body))
            .unwrap_or_else(|e| panic!("site {}: {e}", self.name))
    }

    /// PUT of `body` on the site's API, with its token: the whole reply.
    pub fn put(&self, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        self.request("PUT", path, headers, body)
    }

    /// Any request with the site's token (unless `headers` has an
    /// `Authorization` of its own): the whole reply.
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let addr = self.api_addr;
        let token = self.token.as_deref();
        self.in_ns(|| send(addr, token, method, path, headers, body))
            .unwrap_or_else(|e| panic!("site {}: {e}", self.name))
    }

    /// `/v1/status`.
    pub fn try_status(&self) -> Result<Status, String> {
        self.try_api(api::STATUS)
    }

    pub fn status(&self) -> Status {
        self.api(api::STATUS)
    }

    /// `/v1/sites`.
    pub fn try_sites(&self) -> Result<Vec<Site>, String> {
        self.try_api(api::SITES)
    }

    /// The `/v1/sites` entry of `site` (case-insensitive name).
    pub fn try_site(&self, site: &str) -> Result<Site, String> {
        let sites = self.try_sites()?;
        api::find_site(&sites, site).cloned().ok_or_else(|| {
            format!(
                "site {}: /v1/sites has no entry {site}: {sites:?}",
                self.name
            )
        })
    }

    pub fn site(&self, site: &str) -> Site {
        self.try_site(site).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The `mep` counters of `/v1/status`; panics when MEP is not running.
    pub fn mep(&self) -> MepCounters {
        self.status()
            .mep
            .unwrap_or_else(|| panic!("site {}: /v1/status has no mep counters", self.name))
    }

    /// `/v1/services`.
    pub fn try_services(&self) -> Result<Vec<Service>, String> {
        self.try_api(api::SERVICES)
    }

    /// The `/v1/services` entry of a service.
    pub fn try_service(&self, name: &str) -> Result<Service, String> {
        let all = self.try_services()?;
        all.iter()
            .find(|s| s.name == name)
            .cloned()
            .ok_or_else(|| format!("site {}: /v1/services has no {name}: {all:?}", self.name))
    }

    pub fn service(&self, name: &str) -> Service {
        self.try_service(name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The `/v1/sites` entry of `site`, which must show metric exchange
    /// with it as `want` (`UP`, `DOWN`...).
    pub fn expect_mep(&self, site: &str, want: &str) -> Result<Site, String> {
        let e = self.try_site(site)?;
        if e.mep != want {
            return Err(format!(
                "at {}: metric exchange with {site} is {}, want {want}: {e:?}",
                self.name, e.mep
            ));
        }
        Ok(e)
    }

    /// The `/v1/services` entry of `service`, which must be in `state`.
    pub fn expect_service(&self, service: &str, state: State) -> Result<Service, String> {
        let s = self.try_service(service)?;
        if s.state != state {
            return Err(format!(
                "at {}: {service} is not {state:?}: {s:?}",
                self.name
            ));
        }
        Ok(s)
    }

    /// The site must answer exactly `want` (in order) for `name`.
    pub fn expect_answer(&self, name: &str, want: &[Ipv4Addr]) -> Result<(), String> {
        let got = self.try_query_a(name)?;
        if got != want {
            return Err(format!(
                "at {}: {name} answered {got:?}, want {want:?}",
                self.name
            ));
        }
        Ok(())
    }

    /// A DNS query over UDP from 127.0.0.1 (in the site's namespace).
    pub fn try_query(&self, name: &str, rtype: RecordType) -> Result<Message, String> {
        let dns = self.dns.clone();
        let q = build_query(name, rtype, None);
        self.in_ns(|| dns.try_udp_from(None, &q))
            .map_err(|e| format!("site {}: {e}", self.name))
    }

    /// The A addresses the site answers for `name`.
    pub fn try_query_a(&self, name: &str) -> Result<Vec<Ipv4Addr>, String> {
        self.try_query(name, RecordType::A).map(|m| a_records(&m))
    }

    pub fn query_a(&self, name: &str) -> Vec<Ipv4Addr> {
        self.try_query_a(name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The A addresses the site answers for `name` asked over UDP from
    /// `source` (in the site's namespace): for a test whose LDNS (the
    /// query's source address) matters, as for the RTT method.
    pub fn try_query_a_from(&self, source: Ipv4Addr, name: &str) -> Result<Vec<Ipv4Addr>, String> {
        let dns = self.dns.clone();
        let q = build_query(name, RecordType::A, None);
        self.in_ns(|| dns.try_udp_from(Some(source), &q))
            .map(|m| a_records(&m))
            .map_err(|e| format!("site {}: {e}", self.name))
    }

    /// The `/v1/records` entry of the datacenter-mode record `name`.
    pub fn try_record(&self, name: &str) -> Result<sextant_api::Record, String> {
        let all: sextant_api::Records = self.try_api(api::RECORDS)?;
        all.records
            .into_iter()
            .find(|r| r.name == name)
            .ok_or_else(|| format!("site {}: /v1/records has no record {name}", self.name))
    }

    /// Sets this site's own figures (`POST /v1/site/figures`); `json` like
    /// `{"cpu_percent": 40}`. Panics unless the site accepts them.
    pub fn set_site_figures(&self, json: &str) {
        let (code, body) = self.post(api::SITE_FIGURES, json);
        assert_eq!(
            code,
            204,
            "site {}: POST {}: {body}",
            self.name,
            api::SITE_FIGURES
        );
    }

    /// `/v1/ldns`: the RTT method's LDNS table.
    pub fn try_ldns(&self) -> Result<Ldns, String> {
        self.try_api(api::LDNS)
    }

    pub fn ldns(&self) -> Ldns {
        self.try_ldns().unwrap_or_else(|e| panic!("{e}"))
    }

    /// The `/v1/explain` answer for `name` asked by `client`.
    pub fn explain(&self, name: &str, client: &str) -> Explain {
        self.api(&api::explain_path(name, client))
    }

    /// The site's log (stderr and stdout) so far.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Rewrites the configuration file and sends SIGHUP.
    pub fn reload(&self, config: &str) {
        fs::write(&self.config, config).expect("rewrite site config");
        self.signal(libc::SIGHUP);
    }

    /// SIGKILL by pid, as a crash: no goodbye to the peers.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM by pid, then SIGKILL if it has not gone after 5 s; the exit
    /// status (`None` if it was not running).
    pub fn stop(&mut self) -> Option<ExitStatus> {
        terminate(self.child.take()?)
    }
}

impl Drop for SiteServer {
    fn drop(&mut self) {
        self.stop();
        if thread::panicking() {
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(200)..];
            eprintln!(
                "===== site {} ({}) log, last {} lines, {:?} after its last start: {} =====\n{}\n===== end of site {} =====",
                self.name,
                self.ip,
                tail.len(),
                self.started.elapsed(),
                self.log_path.display(),
                tail.join("\n"),
                self.name
            );
        }
    }
}

/// Whether `config` (appliance syntax) makes site `name` a child
/// (`add gslb site NAME IP ... -parentSite P`).
fn is_child_site(config: &str, name: &str) -> bool {
    config.lines().any(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.len() > 3
            && w[0] == "add"
            && w[1] == "gslb"
            && w[2] == "site"
            && w[3].eq_ignore_ascii_case(name)
            && w.iter().any(|t| t.eq_ignore_ascii_case("-parentSite"))
    })
}
