//! The browser driver against a real page: a tiny HTTP server in this test
//! serves one HTML page whose scripts react late (after a timer), so that
//! every helper of `browser.rs` has to wait for the page, not just read it.
//! No Sextant is needed here; the dashboard's tests are in
//! crates/sextant/tests/dashboard.rs.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use sextant_test_support::browser::Browser;

const PAGE: &str = r#"<!doctype html>
<html><head><title>browser self-test</title></head><body>
<h1 id="title">browser self-test</h1>
<button id="go">Go</button>
<p id="late" hidden></p>
<input id="name" aria-label="name"><p id="echo"></p>
<form id="f"><input id="q" aria-label="q"></form><p id="submitted"></p>
<span id="tagged" data-share="0.25">25%</span>
<script>
  document.getElementById('go').addEventListener('click', () => setTimeout(() => {
    const late = document.getElementById('late');
    late.textContent = 'clicked'; late.hidden = false;
  }, 300));
  document.getElementById('name').addEventListener('input', e =>
    setTimeout(() => { document.getElementById('echo').textContent = 'hello ' + e.target.value; }, 100));
  document.getElementById('f').addEventListener('submit', e => {
    e.preventDefault();
    document.getElementById('submitted').textContent = 'submitted ' + document.getElementById('q').value;
  });
</script></body></html>"#;

/// Serves [`PAGE`] for every request until dropped.
struct PageServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PageServer {
    fn start() -> PageServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the page server");
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let addr = listener.local_addr().expect("local addr");
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                let Ok((stream, _)) = listener.accept() else {
                    thread::sleep(Duration::from_millis(20));
                    continue;
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut reader = BufReader::new(&stream);
                let mut line = String::new();
                // The request head, up to its empty line.
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let mut out = &stream;
                let _ = write!(
                    out,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{PAGE}",
                    PAGE.len()
                );
            }
        });
        PageServer {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn output_folder(test: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("screenshots")
        .join(test)
}

#[test]
fn every_helper_drives_a_real_page() {
    let server = PageServer::start();
    let folder = output_folder("browser_self_test");
    let Some(mut browser) = Browser::launch(&folder) else {
        return;
    };
    browser.open(&format!("http://{}/", server.addr));
    let wait = Duration::from_secs(10);

    browser.wait_for("#title", wait);
    assert_eq!(browser.text("#title").as_deref(), Some("browser self-test"));
    assert_eq!(browser.eval("document.title"), "browser self-test");
    assert_eq!(browser.eval("Promise.resolve(1 + 2)"), 3);
    assert_eq!(
        browser.attr("#tagged", "data-share").as_deref(),
        Some("0.25")
    );
    assert_eq!(browser.attr("#nothing", "data-share"), None);

    // Hidden until the timer after the click fires.
    assert!(!browser.shown("#late"));
    browser.click("#go");
    browser.wait_for("#late", wait);
    let text = browser.wait_for_text("#late", wait, "says clicked", |t| t == "clicked");
    assert_eq!(text, "clicked");

    browser.type_into("#name", "world");
    browser.wait_for_text("#echo", wait, "echoes the input", |t| t == "hello world");

    browser.type_into("#q", "sextant");
    browser.press("Enter");
    browser.wait_for_text("#submitted", wait, "the form was submitted", |t| {
        t == "submitted sextant"
    });

    let shot = browser.screenshot("page");
    let png = std::fs::read(&shot).expect("read the screenshot");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is not a PNG",
        shot.display()
    );
    assert!(
        png.len() > 1000,
        "{} is too small to show the page",
        shot.display()
    );

    // A wait that never holds fails, and leaves the page's picture behind.
    let missed = catch_unwind(AssertUnwindSafe(|| {
        browser.wait_for_text("#title", Duration::from_millis(300), "never", |t| {
            t == "other"
        })
    }));
    let message = missed
        .expect_err("a wait that never holds must fail")
        .downcast::<String>()
        .map(|m| *m)
        .unwrap_or_default();
    assert!(
        message.contains("last text: Some(\"browser self-test\")"),
        "{message}"
    );
    assert!(folder.join("failed.png").exists());
}

/// Launches with `$SEXTANT_CHROMIUM` as the browser; run only by
/// [`a_missing_chromium_fails_under_ci`], which points it at nothing.
#[test]
#[ignore = "run by a_missing_chromium_fails_under_ci in a child process"]
fn probe_launch_without_chromium() {
    if std::env::var_os("SEXTANT_CHROMIUM").is_none() {
        return; // run by hand: nothing to probe
    }
    let launched = Browser::launch(&output_folder("probe_launch_without_chromium"));
    assert!(
        launched.is_none(),
        "a browser launched from {:?}",
        std::env::var("SEXTANT_CHROMIUM")
    );
}

#[test]
fn a_missing_chromium_fails_under_ci() {
    let probe = |ci: &str| {
        Command::new(std::env::current_exe().expect("this test's executable"))
            .args([
                "--exact",
                "probe_launch_without_chromium",
                "--ignored",
                "--nocapture",
            ])
            .env("CI", ci)
            .env("SEXTANT_CHROMIUM", "/nonexistent/chromium")
            .output()
            .expect("run the probe")
    };
    let under_ci = probe("true");
    let said = String::from_utf8_lossy(&under_ci.stdout).to_string()
        + &String::from_utf8_lossy(&under_ci.stderr);
    assert!(
        !under_ci.status.success(),
        "under CI the probe must fail:\n{said}"
    );
    assert!(said.contains("chromium is not installed"), "{said}");

    let elsewhere = probe("false");
    let said = String::from_utf8_lossy(&elsewhere.stderr).to_string();
    assert!(
        elsewhere.status.success(),
        "off CI the probe skips:\n{said}"
    );
    assert!(
        said.contains("SKIPPED: chromium is not installed"),
        "{said}"
    );
}
