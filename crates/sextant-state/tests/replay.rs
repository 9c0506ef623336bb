//! Replays every `tests/replay/*.events` file through the engine and
//! compares the transcript with its `.golden` file; every `expect` line must
//! hold. `UPDATE_GOLDEN=1 cargo test -p sextant-state --test replay` rewrites
//! the golden files (review the diff: the `expect` lines are the seed's word).

#![allow(clippy::disallowed_methods)] // a test: reads and writes its fixture files

use std::path::{Path, PathBuf};

fn parse(text: &str) -> Result<sextant_core::Model, String> {
    sextant_config::parse_appliance(text, "replay.conf").map_err(|e| e.to_string())
}

fn replay_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/replay");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "events"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_replay_matches_its_golden_file_and_its_expectations() {
    let files = replay_files();
    assert!(files.len() >= 10, "replay files missing: {files:?}");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut problems = Vec::new();
    for file in &files {
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let out = match sextant_state::replay::run(&text, &parse) {
            Ok(o) => o,
            Err(e) => {
                problems.push(format!("{}: {e}", file.display()));
                continue;
            }
        };
        for f in &out.failures {
            problems.push(format!("{}: {f}", file.display()));
        }
        let golden = file.with_extension("golden");
        if update {
            std::fs::write(&golden, &out.transcript)
                .unwrap_or_else(|e| panic!("{}: {e}", golden.display()));
            continue;
        }
        match std::fs::read_to_string(&golden) {
            Ok(want) if want == out.transcript => {}
            Ok(want) => problems.push(format!(
                "{}: transcript differs from {}:\n{}",
                file.display(),
                golden.display(),
                first_difference(&want, &out.transcript)
            )),
            Err(e) => problems.push(format!(
                "{}: {e} (run with UPDATE_GOLDEN=1 to create it)",
                golden.display()
            )),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

fn first_difference(want: &str, got: &str) -> String {
    let (w, g): (Vec<_>, Vec<_>) = (want.lines().collect(), got.lines().collect());
    for i in 0..w.len().max(g.len()) {
        if w.get(i) != g.get(i) {
            return format!(
                "line {}:\n  golden: {}\n  now:    {}",
                i + 1,
                w.get(i).unwrap_or(&"<end>"),
                g.get(i).unwrap_or(&"<end>")
            );
        }
    }
    String::new()
}

#[test]
fn a_broken_replay_file_is_reported_with_its_line() {
    let err = sextant_state::replay::run(
        "config\nadd gslb site a 127.0.0.1 -siteType LOCAL\nend\nat 1 bogus\n",
        &parse,
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("line 4:"), "{err}");
    let err = sextant_state::replay::run("config\nadd nonsense\nend\n", &parse)
        .unwrap_err()
        .to_string();
    assert!(err.contains("configuration"), "{err}");
}

#[test]
fn a_failed_expectation_is_reported() {
    let text = "config\nadd gslb site a 127.0.0.1 -siteType LOCAL\nadd gslb service s 127.0.0.2 HTTP 80 -siteName a\nend\nexpect state s DOWN\n";
    let out = sextant_state::replay::run(text, &parse).unwrap();
    assert_eq!(out.failures.len(), 1, "{:?}", out.failures);
    assert!(out.failures[0].contains("line 5"), "{:?}", out.failures);
}
