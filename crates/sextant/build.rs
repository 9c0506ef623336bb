//! Build facts for `sextant --version` and `/v1/status`: the commit built
//! and its date. The date is the commit's (or `SOURCE_DATE_EPOCH`'s), not
//! the clock's at build time, so two builds of one commit are the same
//! binary. A build outside a git checkout (a source tarball) takes
//! `SEXTANT_COMMIT` or says "unknown".
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=SEXTANT_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    // A new commit changes HEAD (a detached checkout) or the branch's ref,
    // loose or packed. Only files that exist: cargo re-runs the script on
    // every build for one that does not.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for path in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
        if let Some(p) = git(&["rev-parse", "--git-path", path])
            && std::path::Path::new(&p).exists()
        {
            println!("cargo:rerun-if-changed={p}");
        }
    }

    let commit = std::env::var("SEXTANT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    let date = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .map(utc_date)
        .or_else(|| {
            git(&[
                "show",
                "-s",
                "--format=%cd",
                "--date=format-local:%Y-%m-%d",
                "HEAD",
            ])
        })
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=SEXTANT_COMMIT={commit}");
    println!("cargo:rustc-env=SEXTANT_BUILD_DATE={date}");
}

/// The trimmed output of a successful `git ARGS` in this crate's directory.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .env("TZ", "UTC")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// YYYY-MM-DD (UTC) of a Unix time (days to civil date, proleptic
/// Gregorian calendar).
fn utc_date(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
