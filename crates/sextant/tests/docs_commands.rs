//! Docs that cannot lie: every shell command of README.md and docs/*.md
//! that talks to a server runs against a real `sextant` that the page
//! itself starts, and the output the page shows is what it prints.
//!
//! One test per page (nextest runs them in parallel), each in a network
//! namespace of its own, so the addresses the page shows (127.0.0.1:8053,
//! 127.0.77.1...) are used as written. How a page says what to start, which
//! block is a file, and which block cannot run (with the reason) is the
//! `<!-- docs-test: ... -->` marker language of
//! `sextant_test_support::docs` (also in docs/architecture.md, "Docs that
//! cannot lie"). A block that talks to a server and has no `skip` marker
//! runs; a failing page lists every command whose output differs, at its
//! `FILE:LINE`.

use std::fs;
use std::path::{Path, PathBuf};

use sextant_test_support::docs::Page;
use sextant_test_support::prelude::*;

const SEXTANT: &str = env!("CARGO_BIN_EXE_sextant");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `page` (relative to the repository) and fails with every problem.
fn run_page(tag: &str, page: &str) {
    let path = root().join(page);
    let parsed = Page::read(&path, page).unwrap_or_else(|e| panic!("{e}"));
    // A page nothing of which runs needs no namespace.
    let runs = parsed.blocks.iter().any(|b| b.runs());
    if !runs {
        return;
    }
    // What the pages' commands use (scripts/setup.sh installs dig and curl).
    for program in ["bash", "curl", "dig", "python3"] {
        if !have_program(program) {
            cannot_run(&format!(
                "{page}'s commands need `{program}` (scripts/setup.sh installs it)"
            ));
            return;
        }
    }
    let Some(ns) = Netns::create(tag) else {
        return;
    };
    let scratch = Scratch::new(&format!("docs_{tag}"));
    let report = parsed.run(&ns, SEXTANT, &scratch.0, &root());
    eprintln!(
        "{page}: {} blocks run ({} commands), {} skipped",
        report.ran,
        report.commands,
        report.skipped.len()
    );
    if std::env::var_os("DOCS_UPDATE").is_some() && !report.differing.is_empty() {
        parsed.update(&path, &report).expect("rewrite the page");
        eprintln!(
            "{page}: {} shown output(s) rewritten",
            report.differing.len()
        );
    }
    for (line, reason) in &report.skipped {
        eprintln!("  skipped {page}:{line}: {reason}");
    }
    assert!(
        report.problems.is_empty(),
        "{} problem(s) in {page}:\n\n{}",
        report.problems.len(),
        report.problems.join("\n\n")
    );
}

macro_rules! pages {
    ($($name:ident => $page:literal,)*) => {
        $(
            #[test]
            fn $name() {
                run_page(stringify!($name), $page);
            }
        )*

        /// Every page has its test above: a new page is not left out.
        #[test]
        fn every_page_is_run() {
            let listed = [$($page),*];
            let mut pages = vec!["README.md".to_string()];
            for e in fs::read_dir(root().join("docs")).expect("read docs/") {
                let name = e.expect("a docs/ entry").file_name();
                let name = name.to_string_lossy();
                if name.ends_with(".md") {
                    pages.push(format!("docs/{name}"));
                }
            }
            for p in &pages {
                assert!(listed.contains(&p.as_str()), "{p} has no test in tests/docs_commands.rs: add it to pages!");
            }
            // And the README leads to every page.
            let readme = fs::read_to_string(root().join("README.md")).expect("read README.md");
            let unlinked: Vec<&String> = pages
                .iter()
                .filter(|p| p.starts_with("docs/") && !readme.contains(&format!("]({p}")))
                .collect();
            assert!(unlinked.is_empty(), "README.md does not link {unlinked:?}");
        }
    };
}

pages! {
    readme => "README.md",
    api => "docs/api.md",
    architecture => "docs/architecture.md",
    benchmarks => "docs/benchmarks.md",
    cli => "docs/cli.md",
    config_sync => "docs/config-sync.md",
    config => "docs/config.md",
    dashboard => "docs/dashboard.md",
    datacenter_mode => "docs/datacenter-mode.md",
    deploy => "docs/deploy.md",
    dnssec => "docs/dnssec.md",
    locations => "docs/locations.md",
    mep => "docs/mep.md",
    metrics => "docs/metrics.md",
    migrating => "docs/migrating.md",
    operations => "docs/operations.md",
    performance => "docs/performance.md",
    robustness => "docs/robustness.md",
    rtt => "docs/rtt.md",
    security => "docs/security.md",
    selection => "docs/selection.md",
    vrrp => "docs/vrrp.md",
}
