//! `sextant`: the global server load balancer daemon and its tools.

mod admin_state;
mod api;
mod auth;
mod cli;
mod clock;
mod config_sync;
mod demo;
mod dns_probe;
mod dnssec;
mod events;
mod explain;
mod fd_budget;
mod generate;
mod listen_check;
mod logging;
mod mep_glue;
mod query_log;
mod serve;
mod site_metrics;
mod state_files;
mod suggest;
mod systemd;
mod unsaved;
mod vrrp_glue;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// mimalloc instead of the system allocator: a configuration of 100,000
/// services is some millions of small allocations, which glibc's malloc makes
/// the largest cost of a reload and leaves fragmented afterwards
/// (docs/architecture.md, "Allocator").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `sextant --version`: the release, the commit built and its date
/// (crates/sextant/build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SEXTANT_COMMIT"),
    ", ",
    env!("SEXTANT_BUILD_DATE"),
    ")"
);

/// Sextant answers DNS for load-balanced names with the best healthy site.
///
/// Start with `sextant demo` to see it answer real queries on 127.0.0.1:5353,
/// then write your own configuration (docs/config.md), check it with
/// `sextant check FILE` and run it with `sextant serve --config FILE`.
#[derive(Debug, Parser)]
#[command(name = "sextant", version = VERSION, about, long_about)]
struct Cli {
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = logging::Format::Text)]
    log_format: logging::Format,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server: authoritative GSLB DNS, health monitors and the REST API.
    ///
    /// DNS answers once every monitored service has its first probe result
    /// (or its response timeout has passed). A child site (`-parentSite`)
    /// reports its services to its parent and opens no DNS listener. SIGHUP
    /// re-reads the configuration file; an invalid file is reported and the
    /// running configuration stays in force. SIGTERM closes metric exchange
    /// sessions and exits 0.
    Serve(ServeArgs),

    /// Validate a configuration file (.conf appliance syntax or .toml).
    ///
    /// Exits 0 when the file is valid, after printing `warning: FILE:LINE:
    /// ...` on stderr for each setting that is accepted but has no effect;
    /// otherwise prints `FILE:LINE: reason` for every error and exits 1.
    Check {
        /// The configuration file.
        file: PathBuf,
    },

    /// Import a configuration saved by the appliance (a whole ns.conf).
    ///
    /// Writes its GSLB and DNS part as a Sextant configuration (appliance
    /// syntax, each command after a comment naming its line in NS_CONF) to
    /// OUT, or to stdout without -o, and prints a report: the commands left
    /// out (outside Sextant's scope) grouped with counts and lines, the
    /// lines changed, the secrets to enter again, what needs your action,
    /// and the settings taken that behave differently. A line the appliance
    /// itself would reject when loading the file (a duplicate `add`, a
    /// reference to something undefined, a wrapped or malformed line) is
    /// left out and listed with its number and reason, and the rest is
    /// written, as the appliance loads it.
    ///
    /// Exits 0 when the result is a valid configuration (`sextant check`
    /// accepts it) with every line taken, 3 when it is valid without the
    /// rejected lines the report lists, 1 when nothing usable was written
    /// (FILE:LINE: reason for each error). See docs/migrating.md.
    Import {
        /// The saved appliance configuration (ns.conf).
        ns_conf: PathBuf,
        /// Where to write the Sextant configuration; the name must end in
        /// .conf (the appliance command syntax), anything else is refused.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// The site this node runs as, instead of the site whose IP the
        /// appliance owns.
        #[arg(long)]
        local_site: Option<String>,
        /// All or nothing: a line the appliance would reject fails the
        /// import (exit 1) instead of being left out (exit 3).
        #[arg(long)]
        strict: bool,
    },

    /// Run a self-contained demo on loopback: three sites, real backends,
    /// DNS on 127.0.0.1:5353 and the API on 127.0.0.1:8053.
    Demo {
        /// Where the demo's DNS server listens.
        #[arg(long, default_value = "127.0.0.1:5353")]
        dns_listen: SocketAddr,
        /// Where the demo's REST API listens.
        #[arg(long, default_value = "127.0.0.1:8053")]
        api_listen: SocketAddr,
    },

    /// Talk to a running server with the appliance's verbs.
    ///
    /// `sextant cli show gslb vserver`, `sextant cli disable gslb service
    /// web-1 -reason "kernel update"`, `sextant cli stat gslb vserver vs_app`;
    /// the configuration commands (`add`, `set`, `unset`, `rm`, `bind`,
    /// `unbind`) change the running configuration at once, `save ns config`
    /// writes it to the file. A command may be one quoted argument
    /// (`sextant cli "show gslb service"`). Without a command, a prompt with
    /// history and Tab completion (`help` lists every command). Keywords may
    /// be shortened (`sh gslb vs`).
    /// Exits 0 on success, 1 when the server refuses or fails, 2 for a line
    /// that is not a command. See docs/cli.md.
    Cli {
        /// The server's REST API, http://HOST:PORT or HOST:PORT.
        #[arg(long, default_value = "http://127.0.0.1:8053")]
        server: String,
        /// A file with the API token for writes (`NAME TOKEN` or `TOKEN`;
        /// the server's token file works). Without it, $SEXTANT_API_TOKEN.
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// Print the API's JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// The command, e.g. `show gslb service web-1`; none for the prompt.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },

    /// Explain how a query is answered: offline from a file (every service
    /// UP, no RTTs measured), or live from a running server.
    ///
    /// Offline runs the same decision code as the server. With `--server`
    /// it asks the running server (`GET /v1/explain`), so the explanation has
    /// the real health, load figures and RTTs to the LDNS.
    Explain {
        /// The configuration file (offline).
        #[arg(long, required_unless_present = "server", conflicts_with = "server")]
        config: Option<PathBuf>,
        /// A running server's REST API, as `sextant cli --server` takes it:
        /// http://127.0.0.1:8053 or 127.0.0.1:8053 (live).
        #[arg(long)]
        server: Option<String>,
        /// With --server: a file with the API token, for a server whose
        /// reads need one (`--api-reads token`); else $SEXTANT_API_TOKEN.
        #[arg(long, requires = "server")]
        token_file: Option<PathBuf>,
        /// The address the query comes from (the client's LDNS).
        #[arg(long)]
        client: IpAddr,
        /// An EDNS Client Subnet, e.g. 198.51.100.0/24.
        #[arg(long)]
        ecs: Option<String>,
        /// The site to run as (as `serve --local-site`).
        #[arg(long)]
        local_site: Option<String>,
        /// The name to ask for.
        name: String,
        /// The query type: A, AAAA, SOA, NS, ANY.
        #[arg(default_value = "A")]
        qtype: String,
    },

    /// DNSSEC keys: make them, and print the DS records for the parent.
    ///
    /// See docs/dnssec.md for signing a zone and rolling its keys.
    #[command(subcommand)]
    Dnssec(dnssec::DnssecCommand),

    /// Write the manual pages and shell completions into DIR (used by
    /// scripts/package.sh; hidden from --help).
    #[command(hide = true)]
    GenerateAssets {
        /// The output directory: DIR/man and DIR/completions are made.
        dir: PathBuf,
    },
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The configuration file: `.conf` (appliance command syntax) or `.toml`.
    #[arg(long)]
    config: PathBuf,
    /// The site this node runs as; needed when the file has no `-siteType
    /// LOCAL` site, or when several sites share one host.
    #[arg(long)]
    local_site: Option<String>,
    /// DNS listen address (UDP and TCP); overrides the file's ADNS services.
    #[arg(long)]
    dns_listen: Option<SocketAddr>,
    /// REST API listen address; overrides the file (default 127.0.0.1:8053).
    #[arg(long)]
    api_listen: Option<SocketAddr>,
    /// The REST API's tokens: one per line, `NAME TOKEN` (or a bare
    /// `TOKEN`; `NAME TOKEN read` for a read-only one), `#` starts a
    /// comment, mode 0600. Every write (POST, PUT...) needs `Authorization:
    /// Bearer TOKEN`; without this file writes are refused (403). Overrides `[api] token_file` in a TOML file. Re-read
    /// on SIGHUP. Make a token with `openssl rand -hex 16`.
    #[arg(long, value_name = "PATH")]
    api_token_file: Option<PathBuf>,
    /// Whether reads (GET) need a token too: auto (open when the API
    /// listens on a loopback address; elsewhere a token, once a token file
    /// is given), open, or token.
    #[arg(long, value_enum, value_name = "WHO", default_value_t = api::auth::ReadAccess::Auto)]
    api_reads: api::auth::ReadAccess,
    /// Serve the REST API over TLS with this certificate chain (PEM);
    /// needs --api-tls-key. Without it the API is plain HTTP.
    #[arg(long, value_name = "FILE", requires = "api_tls_key")]
    api_tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --api-tls-cert.
    #[arg(long, value_name = "FILE", requires = "api_tls_cert")]
    api_tls_key: Option<PathBuf>,
    /// At most this many REST API connections open at once (TLS handshakes
    /// included); one more is closed at once. Default: 256, but at most an
    /// eighth of the limit on open files.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    api_max_connections: Option<u16>,
    /// Seconds a REST API client has to send a whole request head (and
    /// for its TLS handshake); also how long a kept-alive connection may
    /// wait idle for its next request. A client that takes no bytes of an
    /// answer for twice this long is closed.
    #[arg(long, value_name = "SECONDS", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=300))]
    api_header_timeout: u64,
    /// At most this many `/v1/events` streams open at once; one more is
    /// answered 503.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=4096))]
    api_max_event_streams: u16,
    /// UDP worker threads (default: one per core).
    #[arg(long)]
    udp_workers: Option<usize>,
    /// Receive buffer of each UDP socket in bytes, or 0 for the kernel's
    /// default (net.core.rmem_default). The default absorbs bursts of
    /// thousands of queries without a drop; the kernel caps it at
    /// net.core.rmem_max.
    #[arg(long, value_name = "BYTES", default_value_t = sextant_dns::DEFAULT_RECEIVE_BUFFER)]
    udp_receive_buffer: usize,
    /// Log queries as JSON lines to this file (`-`: stdout); off by
    /// default. The file is reopened on SIGHUP (logrotate).
    #[arg(long, value_name = "PATH|-")]
    query_log: Option<String>,
    /// Log one query in N (per DNS worker).
    #[arg(long, value_name = "N", default_value_t = 1)]
    query_log_sample: u64,
    /// Where the server writes its state files (the maintenance marks, a
    /// child site's backup-parent lists, the config sync version), named
    /// after the configuration file (NAME.admin-state.json...). The
    /// directory must exist. Default: beside the configuration file. The
    /// Debian package's unit passes /var/lib/sextant.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// A directory a configuration received over config sync may read
    /// DNSSEC key files and location files from, besides the configuration
    /// file's own directory (e.g. a GeoIP directory); repeat for more. A
    /// received configuration that names a file anywhere else is refused
    /// (docs/config-sync.md). The node's own configuration is not limited.
    #[arg(long, value_name = "DIR")]
    sync_file_dir: Vec<PathBuf>,
    /// Also answer UDP queries that arrive on this network interface
    /// through AF_XDP, before the kernel's IP and UDP layers (Linux; needs
    /// root). Only queries to the DNS listen addresses and port are taken;
    /// everything else (TCP, ARP, other ports) reaches the kernel as
    /// before, and netfilter does not see the queries taken. See
    /// docs/architecture.md ("The XDP path").
    #[arg(long, value_name = "INTERFACE")]
    xdp_interface: Option<String>,
    /// Where the XDP program runs: auto (in the driver when it has XDP,
    /// else generic), native, or generic.
    #[arg(long, value_enum, default_value_t = serve::XdpAttach::Auto, requires = "xdp_interface")]
    xdp_attach: serve::XdpAttach,
    /// How frames move between the driver and Sextant: auto (zero-copy
    /// when the driver has it, else copy), copy, or zero-copy.
    #[arg(long, value_enum, default_value_t = serve::XdpBind::Auto, requires = "xdp_interface")]
    xdp_bind: serve::XdpBind,
    /// RTT method: at most this many new LDNS entries per second (more
    /// are counted and dropped, so spoofed sources cannot make this site
    /// probe arbitrary addresses).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    ldns_new_per_second: u32,
    /// RTT method: at most this many LDNS entries; the least recently
    /// queried one makes room for a new one.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    ldns_max_entries: u64,
    /// RTT method: at most this many LDNS probes per second in all.
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u32).range(1..))]
    ldns_probes_per_second: u32,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.log_format);
    let result = match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::GenerateAssets { dir } => generate::assets(Cli::command(), &dir),
        Command::Check { file } => return check(&file),
        Command::Import {
            ns_conf,
            output,
            local_site,
            strict,
        } => return import(&ns_conf, output.as_deref(), local_site, strict),
        Command::Demo {
            dns_listen,
            api_listen,
        } => demo::run(dns_listen, api_listen),
        Command::Cli {
            server,
            token_file,
            json,
            command,
        } => {
            return cli::run(cli::Options {
                server,
                token_file,
                json,
                command,
            })
            .unwrap_or_else(|e| {
                eprintln!("sextant cli: {e:#}");
                ExitCode::FAILURE
            });
        }
        Command::Dnssec(command) => dnssec::run(command),
        Command::Explain {
            config,
            server,
            token_file,
            client,
            ecs,
            local_site,
            name,
            qtype,
        } => match (server, config) {
            (Some(server), _) => cli::client::token(token_file.as_deref()).and_then(|token| {
                explain::live(&server, token, client, ecs.as_deref(), &name, &qtype)
            }),
            (None, Some(config)) => explain::offline(
                &config,
                local_site.as_deref(),
                client,
                ecs.as_deref(),
                &name,
                &qtype,
            ),
            (None, None) => Err(anyhow::anyhow!(
                "give --config FILE (offline) or --server ADDR (a running server)"
            )),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sextant: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `sextant import`'s exit status when the written configuration is valid
/// without lines the appliance would reject (listed in the report).
const IMPORT_REJECTED_LINES: u8 = 3;

fn import(
    ns_conf: &Path,
    output: Option<&Path>,
    local_site: Option<String>,
    strict: bool,
) -> ExitCode {
    let text = match std::fs::read_to_string(ns_conf) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("sextant: cannot read {}: {e}", ns_conf.display());
            return ExitCode::FAILURE;
        }
    };
    // What import writes is the appliance's command syntax, which check and
    // serve read only from a *.conf file: refuse any other name before
    // anything is written.
    if let Some(path) = output
        && !path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("conf"))
    {
        eprintln!(
            "sextant: will not write {}: the imported configuration is in the appliance command syntax, \
             which `sextant check` and `sextant serve` read only from a file named *.conf; \
             name the output *.conf (e.g. -o {})",
            path.display(),
            path.with_extension("conf").display()
        );
        return ExitCode::FAILURE;
    }
    let options = sextant_config::import::ImportOptions { local_site, strict };
    let imported =
        sextant_config::import::import_appliance(&text, &ns_conf.display().to_string(), &options);
    match output {
        Some(path) => {
            if let Err(e) = sextant_mep::state::write_atomically(path, imported.config.as_bytes()) {
                eprintln!("sextant: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            print!("{}", imported.report);
            println!("Written to {}.", path.display());
        }
        None => {
            print!("{}", imported.config);
            eprint!("{}", imported.report);
        }
    }
    if !imported.report.ok() {
        ExitCode::FAILURE
    } else if imported.report.has_rejected() {
        ExitCode::from(IMPORT_REJECTED_LINES)
    } else {
        ExitCode::SUCCESS
    }
}

fn check(file: &std::path::Path) -> ExitCode {
    match sextant_config::load_file(file) {
        Ok(model) => {
            // Settings accepted without effect: the file is valid, but the
            // operator should know they do nothing.
            for w in &model.warnings {
                eprintln!("warning: {w}");
            }
            for w in dnssec::signing_gaps(&model) {
                eprintln!("warning: {}: {w}", file.display());
            }
            let records = match model.dc_records.len() {
                0 => String::new(),
                n => format!(", {n} datacenter-mode records"),
            };
            println!(
                "{}: OK ({} sites, {} services, {} vservers, {} domains{records}, {} monitors)",
                file.display(),
                model.sites.len(),
                model.services.len(),
                model.vservers.len(),
                model.domains.len(),
                model.monitors.len()
            );
            ExitCode::SUCCESS
        }
        Err(errors) => {
            for e in &errors.errors {
                println!("{e}");
            }
            // As a compiler does: what else the reading found, beside the
            // errors, so that one pass fixes both.
            for w in &errors.warnings {
                eprintln!("warning: {w}");
            }
            eprintln!(
                "sextant: {} error(s) in {}",
                errors.errors.len(),
                file.display()
            );
            ExitCode::FAILURE
        }
    }
}
