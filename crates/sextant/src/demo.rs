//! `sextant demo`: a self-contained GSLB on loopback.
//!
//! It writes an embedded configuration (in the appliance's command syntax,
//! to show that existing configurations import as they are) to a temporary
//! file, starts real HTTP and TCP backends on loopback addresses for every
//! service, and runs the ordinary server on them. Typing `stop NAME` stops a
//! backend so its monitor fails and the answers move away from it.

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;

use crate::serve::{self, Overrides};

/// The demo configuration; `sextant check` accepts it as it is.
pub const DEMO_CONFIG: &str = include_str!("demo.conf");

pub fn run(dns_listen: SocketAddr, api_listen: SocketAddr) -> anyhow::Result<()> {
    let path = std::env::temp_dir().join(format!("sextant-demo-{}.conf", std::process::id()));
    std::fs::write(&path, DEMO_CONFIG)
        .with_context(|| format!("cannot write the demo configuration to {}", path.display()))?;
    let (token_file, token) = write_token_file()?;
    let defaults = sextant_core::GslbParams::default();
    let overrides = Overrides {
        config: path.clone(),
        local_site: None,
        dns_listen: Some(dns_listen),
        api_listen: Some(api_listen),
        ldns_new_per_second: defaults.ldns_new_per_second,
        ldns_max_entries: defaults.ldns_max_entries,
        ldns_probes_per_second: defaults.ldns_probes_per_second,
        udp_receive_buffer: sextant_dns::DEFAULT_RECEIVE_BUFFER,
        xdp: None,
        api_token_file: Some(token_file.clone()),
        api_reads: crate::api::auth::ReadAccess::Auto,
        api_tls: None,
        api_limits: Default::default(),
        query_log: None,
        state_dir: None,
        sync_file_dirs: Vec::new(),
    };
    let model = serve::load(&overrides)?;
    let backends = Backends::start(&model)?;
    print_tour(&model, dns_listen, api_listen, &path, &token);
    let stdin_backends = backends.clone();
    std::thread::spawn(move || stdin_backends.read_commands());
    let result = serve::run_model(overrides, model, 2);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&token_file);
    result
}

/// A fresh random API token in a token file of the demo's own (mode 0600),
/// so the dashboard's actions and `curl` writes work in the demo too.
fn write_token_file() -> anyhow::Result<(std::path::PathBuf, String)> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| anyhow::anyhow!("cannot draw a random API token for the demo"))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let path = std::env::temp_dir().join(format!("sextant-demo-{}.tokens", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot write the demo's token file {}", path.display()))?;
    writeln!(file, "demo {token}")
        .with_context(|| format!("cannot write the demo's token file {}", path.display()))?;
    Ok((path, token))
}

fn print_tour(
    model: &sextant_core::Model,
    dns: SocketAddr,
    api: SocketAddr,
    path: &Path,
    token: &str,
) {
    let (ip, port) = (dns.ip(), dns.port());
    println!(
        "Sextant demo: {} sites, {} services with real backends on loopback.",
        model.sites.len(),
        model.services.len()
    );
    println!(
        "Configuration: {} (edit it and send SIGHUP to reload)",
        path.display()
    );
    println!("Dashboard: http://{api}/ui/");
    println!(
        "API token: {token} (paste it into the dashboard to disable, drain or enable a service)"
    );
    println!();
    println!("Try:");
    for d in &model.domains {
        println!("  dig @{ip} -p {port} {} A +short", d.name);
    }
    if let Some(z) = model.zones.iter().next() {
        println!("  dig @{ip} -p {port} {} SOA", z.apex);
        println!(
            "  dig @{ip} -p {port} nothing.{} A        # NXDOMAIN",
            z.apex
        );
    }
    println!("  dig @{ip} -p {port} example.org A            # REFUSED: not our zone");
    println!("  curl -s http://{api}/v1/services");
    if let Some(d) = model.domains.iter().next() {
        println!(
            "  curl -s 'http://{api}/v1/explain?name={}&client=192.0.2.1'",
            d.name
        );
    }
    println!();
    println!("Watch failover: type `stop NAME` (then `start NAME`) and press Enter, e.g.");
    if let Some(s) = model.services.iter().next() {
        println!("  stop {}", s.name);
    }
    println!(
        "Backends: {}",
        model
            .services
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("Type `list` to see them, Ctrl-C to end the demo.");
    let _ = std::io::stdout().flush();
}

/// The demo's backends, one per service, each switchable on and off.
#[derive(Clone)]
struct Backends(Arc<Mutex<BTreeMap<String, Backend>>>);

struct Backend {
    addr: SocketAddr,
    running: Arc<AtomicBool>,
}

impl Backends {
    fn start(model: &sextant_core::Model) -> anyhow::Result<Self> {
        let mut map = BTreeMap::new();
        for s in &model.services {
            let addr = SocketAddr::new(s.ip, s.port);
            let running = Arc::new(AtomicBool::new(true));
            spawn_backend(s.name.clone(), addr, Arc::clone(&running))?;
            map.insert(s.name.to_ascii_lowercase(), Backend { addr, running });
        }
        Ok(Backends(Arc::new(Mutex::new(map))))
    }

    fn read_commands(&self) {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { return };
            let words: Vec<_> = line.split_whitespace().collect();
            match words.as_slice() {
                [] => {}
                ["list"] => self.list(),
                ["stop", name] => self.switch(name, false),
                ["start", name] => self.switch(name, true),
                _ => println!("commands: list | stop NAME | start NAME"),
            }
        }
    }

    fn list(&self) {
        let Ok(map) = self.0.lock() else { return };
        for (name, b) in map.iter() {
            let state = if b.running.load(Ordering::Relaxed) {
                "running"
            } else {
                "stopped"
            };
            println!("  {name:<14} {:<22} {state}", b.addr);
        }
    }

    fn switch(&self, name: &str, on: bool) {
        let Ok(map) = self.0.lock() else { return };
        match map.get(&name.to_ascii_lowercase()) {
            Some(b) => {
                b.running.store(on, Ordering::Relaxed);
                if on {
                    println!(
                        "{name} started on {}; its monitor brings it back UP",
                        b.addr
                    );
                } else {
                    println!(
                        "{name} stopped: {} refuses connections; after the monitor's retries it leaves the answers",
                        b.addr
                    );
                }
            }
            None => println!("no backend named {name}; type `list`"),
        }
    }
}

/// Serves a tiny HTTP response on `addr` while `running` is set; closes the
/// port while it is not, so monitors see a refused connection.
fn spawn_backend(name: String, addr: SocketAddr, running: Arc<AtomicBool>) -> anyhow::Result<()> {
    let first =
        bind(addr).with_context(|| format!("demo backend {name} cannot listen on {addr}"))?;
    std::thread::Builder::new()
        .name(format!("demo-{name}"))
        .spawn(move || {
            let mut listener = Some(first);
            loop {
                let want = running.load(Ordering::Relaxed);
                match (&listener, want) {
                    (Some(_), false) => listener = None,
                    (None, true) => listener = bind(addr).ok(),
                    _ => {}
                }
                if let Some(l) = &listener {
                    while let Ok((mut conn, _)) = l.accept() {
                        let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
                        let mut buf = [0u8; 1024];
                        let _ = conn.read(&mut buf);
                        let body = format!("hello from {name} ({addr})\n");
                        let _ = write!(
                            conn,
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        );
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })?;
    Ok(())
}

fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let l = TcpListener::bind(addr)?;
    l.set_nonblocking(true)?;
    Ok(l)
}
