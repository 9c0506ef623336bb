//! Every checked-in fuzz input, through the same function as its target:
//! the seeds in `fuzz/corpus/<target>/` and the inputs of crashes found and
//! fixed in `fuzz/regressions/<target>/` (named for the bug). Runs in the
//! normal test suite, without libFuzzer, so a fixed crash stays fixed.

use std::path::{Path, PathBuf};

use sextant_fuzz_harness::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The files of `dir` (none if it does not exist), sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .map(|e| e.map(|e| e.path()).expect("reading a corpus directory"))
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

fn run_dir(kind: &str) -> usize {
    let mut n = 0;
    for (name, body) in TARGETS {
        for file in files(&fuzz_dir().join(kind).join(name)) {
            let data = std::fs::read(&file).expect("reading a corpus file");
            eprintln!("{name}: {}", file.display());
            body(&data);
            n += 1;
        }
    }
    n
}

#[test]
fn every_target_has_seeds_and_they_pass() {
    for (name, _) in TARGETS {
        let seeds = files(&fuzz_dir().join("corpus").join(name));
        assert!(!seeds.is_empty(), "no seeds in fuzz/corpus/{name}");
        assert!(seeds.len() < 100, "fuzz/corpus/{name}: keep the seeds few");
    }
    assert!(run_dir("corpus") >= TARGETS.len());
}

#[test]
fn regressions_stay_fixed() {
    run_dir("regressions");
}

/// The binaries in fuzz/Cargo.toml and the list here are the same set, so
/// that bench/fuzz.sh and this test cover the same targets.
#[test]
fn every_target_has_a_binary() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for (name, _) in TARGETS {
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml has no [[bin]] {name}"
        );
        assert!(
            fuzz_dir()
                .join("fuzz_targets")
                .join(format!("{name}.rs"))
                .is_file()
        );
    }
}
