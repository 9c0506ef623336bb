//! `sextant dnssec keygen` and `sextant dnssec ds`: the key files a signed
//! zone needs, and the DS records its parent needs (docs/dnssec.md).

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use sextant_dnssec::{Algorithm, ds, key};

#[derive(Debug, clap::Subcommand)]
pub enum DnssecCommand {
    /// Make a key for ZONE: writes K<zone>.+<alg>+<tag>.key (the DNSKEY
    /// record) and .private (mode 0600) in BIND's format, and prints the
    /// base name. A key-signing key with --ksk; one key of each kind, or a
    /// single --ksk key used for everything (a CSK), signs a zone.
    Keygen {
        /// The zone the key signs, e.g. example.com.
        zone: String,
        /// ECDSAP256SHA256 (13, the default) or ED25519 (15).
        #[arg(long, short = 'a', default_value = "ECDSAP256SHA256")]
        algorithm: String,
        /// A key-signing key (flags 257: it signs the DNSKEY RRset and its
        /// DS goes to the parent); else a zone-signing key (256).
        #[arg(long)]
        ksk: bool,
        /// The directory to write the two files in.
        #[arg(long, short = 'K', default_value = ".")]
        directory: PathBuf,
        /// The TTL written in the .key file's DNSKEY record.
        #[arg(long, default_value_t = 3600)]
        ttl: u32,
    },
    /// Print the DS records (SHA-256) of the key-signing keys of ZONE, as
    /// a configuration file names them (or of the .key files given), for
    /// the parent zone's operator or registrar.
    Ds {
        /// The zone.
        zone: String,
        /// The configuration file whose keys sign ZONE.
        #[arg(long, required_unless_present = "key_file")]
        config: Option<PathBuf>,
        /// .key files to read instead of a configuration.
        #[arg(long = "key-file", conflicts_with = "config")]
        key_file: Vec<PathBuf>,
        /// How to print each DS: `zone` (a zone file line, for a
        /// registrar), or ready to paste into the parent zone's
        /// configuration when Sextant serves it: `conf` (an `add dns
        /// dsRec` line) or `toml` (a `[[record]]` table).
        #[arg(long, value_enum, default_value_t = DsFormat::Zone)]
        format: DsFormat,
    },
}

/// The forms `sextant dnssec ds` prints a DS in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DsFormat {
    /// `example.com. IN DS 20841 13 2 HEX`.
    Zone,
    /// `add dns dsRec example.com -keyTag 20841 ...` (the appliance syntax).
    Conf,
    /// A `[[record]]` table of type DS (the native syntax).
    Toml,
}

/// What is wrong, at this moment, with the keys of the signed zones of
/// `model` (zones whose RRsets no active key signs), and where the chain
/// of trust between its zones breaks (a signed zone below a signed zone
/// without a matching DS there), for `check` and each (re)load's log.
pub fn signing_gaps(model: &sextant_core::Model) -> Vec<String> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut gaps: Vec<String> = model
        .dnssec
        .iter()
        .filter_map(|s| {
            let apex = &model.zones.get(s.zone)?.apex;
            sextant_dnssec::ZoneSigner::new(s, apex).ok()
        })
        .flat_map(|z| sextant_dnssec::zone::signing_gaps(&z, now))
        .collect();
    gaps.extend(sextant_dnssec::chain::chain_breaks(model));
    gaps
}

pub fn run(command: DnssecCommand) -> anyhow::Result<()> {
    match command {
        DnssecCommand::Keygen {
            zone,
            algorithm,
            ksk,
            directory,
            ttl,
        } => keygen(&zone, &algorithm, ksk, &directory, ttl),
        DnssecCommand::Ds {
            zone,
            config,
            key_file,
            format,
        } => print_ds(&zone, config.as_deref(), &key_file, format),
    }
}

fn keygen(zone: &str, algorithm: &str, ksk: bool, dir: &Path, ttl: u32) -> anyhow::Result<()> {
    let algorithm = Algorithm::parse(algorithm)?;
    if zone.trim_end_matches('.').is_empty() {
        bail!("give the zone the key signs, e.g. example.com");
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .context("the system clock is before 1970")?
        .as_secs();
    let rng = ring::rand::SystemRandom::new();
    let k = key::generate(zone, algorithm, ksk, ttl, now, &rng)?;
    let public = dir.join(format!("{}.key", k.base_name));
    let private = dir.join(format!("{}.private", k.base_name));
    write_new(&public, &k.key_file, 0o644)?;
    write_new(&private, &k.private_file, 0o600)?;
    println!("{}", k.base_name);
    Ok(())
}

/// Writes a file that must not exist yet (never overwrites a key).
fn write_new(path: &Path, text: &str, mode: u32) -> anyhow::Result<()> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}

fn print_ds(
    zone: &str,
    config: Option<&Path>,
    key_files: &[PathBuf],
    format: DsFormat,
) -> anyhow::Result<()> {
    let zone = zone.trim_end_matches('.').to_ascii_lowercase();
    let mut dnskeys: Vec<(Vec<u8>, Option<u32>)> = Vec::new();
    if let Some(config) = config {
        let model = sextant_config::load_file(config).map_err(|e| anyhow::anyhow!("{e}"))?;
        let signed = model
            .dnssec
            .iter()
            .find(|s| model.zones.get(s.zone).is_some_and(|z| z.apex == zone))
            .with_context(|| format!("{} signs no zone {zone}", config.display()))?;
        let single = signed.single_kind();
        for k in &signed.keys {
            if k.is_ksk() || single {
                dnskeys.push((key::dnskey_rdata(k.flags, k.algorithm, &k.public_key), None));
            }
        }
    }
    for path in key_files {
        let text =
            fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let k = key::parse_public(&text).with_context(|| path.display().to_string())?;
        if k.zone != zone {
            bail!("{}: the key is for {}, not {zone}", path.display(), k.zone);
        }
        dnskeys.push((
            key::dnskey_rdata(k.flags, k.algorithm, &k.public_key),
            k.ttl,
        ));
    }
    for (dnskey, ttl) in dnskeys {
        let rdata = ds::rdata(&zone, &dnskey, ds::DIGEST_SHA256)?;
        println!("{}", ds_in(format, &zone, ttl, &rdata));
    }
    Ok(())
}

/// One DS (its RDATA: tag, algorithm, digest type, digest) as `format`
/// writes it.
fn ds_in(format: DsFormat, zone: &str, ttl: Option<u32>, rdata: &[u8]) -> String {
    let (tag, algorithm, digest_type, digest) = match rdata {
        [a, b, alg, dt, digest @ ..] => (u16::from_be_bytes([*a, *b]), *alg, *dt, digest),
        _ => return ds::text(zone, ttl, rdata),
    };
    let digest = ds::hex(digest);
    let ttl_conf = ttl.map(|t| format!(" -TTL {t}")).unwrap_or_default();
    let ttl_toml = ttl.map(|t| format!("ttl = {t}\n")).unwrap_or_default();
    match format {
        DsFormat::Zone => ds::text(zone, ttl, rdata),
        DsFormat::Conf => format!(
            "add dns dsRec {zone} -keyTag {tag} -algorithm {algorithm} -digestType {digest_type} -digest {digest}{ttl_conf}"
        ),
        DsFormat::Toml => format!(
            "[[record]]\nname = \"{zone}\"\ntype = \"DS\"\n{ttl_toml}key_tag = {tag}\nalgorithm = {algorithm}\ndigest_type = {digest_type}\ndigest = \"{digest}\"\n"
        ),
    }
}
