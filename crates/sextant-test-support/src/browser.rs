//! A real browser for the dashboard's end-to-end tests: Debian's `chromium`
//! (installed by `scripts/setup.sh`), launched headless and driven over the
//! DevTools protocol. The tests look at the page as a person would (what the
//! DOM shows after the page's own scripts ran), click and type through real
//! input events, and save screenshots.
//!
//! The protocol runs over `--remote-debugging-pipe` (file descriptors 3 and
//! 4 of the browser, one JSON message per NUL-terminated record), the way
//! Playwright drives it: no port, no websocket, and no crate beyond
//! serde_json. (The `headless_chrome` crate was the first choice; its
//! build-time code generator `auto_generate_cdp` is GPL-3.0-or-later, which
//! deny.toml rejects.)
//!
//! Every wait polls the page until a deadline ("eventually"); nothing here
//! asserts how long something took. Without chromium a test calls
//! [`cannot_run`]: under CI that fails it.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::ci::{cannot_run, have_program, is_root};
use crate::netns::Netns;
use crate::scratch::Scratch;
use crate::wait::wait_until;

/// How long one protocol command may take before the test fails.
const COMMAND_DEADLINE: Duration = Duration::from_secs(60);

/// The chromium program: `$SEXTANT_CHROMIUM` when set (a path; `None`
/// when nothing is there), else `chromium` on PATH, else Debian's
/// /usr/bin/chromium.
pub fn chromium_program() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("SEXTANT_CHROMIUM") {
        let path = PathBuf::from(path);
        return path.exists().then_some(path);
    }
    if have_program("chromium") {
        Some(PathBuf::from("chromium"))
    } else if Path::new("/usr/bin/chromium").exists() {
        Some(PathBuf::from("/usr/bin/chromium"))
    } else {
        None
    }
}

/// A pipe whose two ends are at descriptors >= 10 and close on exec, so
/// that moving them to 3 and 4 in the child cannot overwrite one another.
fn high_pipe() -> (RawFd, RawFd) {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    let high = fds.map(|fd| {
        // SAFETY: fd is open; F_DUPFD_CLOEXEC returns a new descriptor.
        let h = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
        assert!(h >= 10, "fcntl: {}", std::io::Error::last_os_error());
        // SAFETY: fd is ours and no longer used.
        unsafe { libc::close(fd) };
        h
    });
    (high[0], high[1])
}

/// Decodes standard base64 (the screenshots' encoding in the protocol).
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let body = bytes
        .strip_suffix(b"==")
        .or_else(|| bytes.strip_suffix(b"="))
        .unwrap_or(&bytes);
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    for chunk in body.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        let take = match chunk.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => return None,
        };
        out.extend_from_slice(&n.to_be_bytes()[1..1 + take]);
    }
    Some(out)
}

/// A headless chromium showing one page, ended (by its PID) on drop.
pub struct Browser {
    child: Child,
    to_browser: File,
    from_browser: Receiver<Value>,
    /// The page's protocol session (`Target.attachToTarget`, flattened).
    session: String,
    next_id: u64,
    screenshots: PathBuf,
    // Chromium's profile, removed on drop.
    _profile: Scratch,
}

/// The JavaScript of "the element `selector`, as JSON-safe facts": whether it
/// exists, is shown, and its text. `null` when absent.
fn element_facts_js(selector: &str) -> String {
    let sel = Value::String(selector.to_string());
    format!(
        "(() => {{ const e = document.querySelector({sel}); if (!e) return null; \
         const r = e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden'; \
         return {{ shown: r, text: (e.innerText ?? e.textContent ?? '').trim() }}; }})()"
    )
}

impl Browser {
    /// Launches headless chromium with a viewport of common laptop size
    /// (1280 × 900)
    /// (`--no-sandbox` when root, as chromium refuses to sandbox as root),
    /// saving screenshots (and chromium's own log, `chromium.log`) into
    /// `screenshots` (created). `None` when chromium is not installed (see
    /// [`cannot_run`]: under CI that fails the test).
    pub fn launch(screenshots: &Path) -> Option<Browser> {
        let Some(program) = chromium_program() else {
            cannot_run("chromium is not installed (scripts/setup.sh installs it)");
            return None;
        };
        Some(Browser::launch_program(&program, screenshots))
    }

    /// Like [`Browser::launch`], with chromium inside the network namespace
    /// `netns` (`ip netns exec`), so that the page reaches the sites a test
    /// runs there.
    pub fn launch_in(netns: &Netns, screenshots: &Path) -> Option<Browser> {
        Browser::launch_in_namespace(&netns.name, screenshots)
    }

    /// Like [`Browser::launch_in`], in the network namespace named `name`
    /// (a VRRP lab node's, say).
    pub fn launch_in_namespace(name: &str, screenshots: &Path) -> Option<Browser> {
        let Some(program) = chromium_program() else {
            cannot_run("chromium is not installed (scripts/setup.sh installs it)");
            return None;
        };
        let mut command = Command::new("ip");
        command.args(["netns", "exec", name]).arg(&program);
        Some(Browser::launch_command(
            command,
            &format!("{} in {name}", program.display()),
            screenshots,
        ))
    }

    /// Like [`Browser::launch`] with a given chromium program; panics when it
    /// cannot be started.
    pub fn launch_program(program: &Path, screenshots: &Path) -> Browser {
        Browser::launch_command(
            Command::new(program),
            &program.display().to_string(),
            screenshots,
        )
    }

    /// Starts chromium with `command` (the program, and anything before it)
    /// and this harness's arguments.
    fn launch_command(mut command: Command, what: &str, screenshots: &Path) -> Browser {
        fs::create_dir_all(screenshots).expect("create the screenshots folder");
        // Pictures of an earlier run (a `failed.png` above all) would pass
        // for this run's.
        if let Ok(old) = fs::read_dir(screenshots) {
            for entry in old.flatten() {
                if entry.path().extension().is_some_and(|e| e == "png") {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        let profile = Scratch::new("chromium-profile");
        let log = File::create(screenshots.join("chromium.log")).expect("create chromium.log");
        // (browser reads, we write) and (browser writes, we read).
        let (in_read, in_write) = high_pipe();
        let (out_read, out_write) = high_pipe();
        command
            .arg("--headless")
            .arg("--remote-debugging-pipe")
            .arg("--disable-gpu")
            .arg("--disable-dev-shm-usage")
            .arg("--no-first-run")
            .arg("--no-default-browser-check")
            .arg("--hide-scrollbars")
            .arg("--window-size=1280,900")
            .arg(format!("--user-data-dir={}", profile.0.display()));
        if is_root() {
            command.arg("--no-sandbox");
        }
        command
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup chromium.log"))
            .stderr(log);
        // SAFETY: only async-signal-safe prctl and dup2 calls between fork
        // and exec; dup2 leaves the new descriptors open across exec. The
        // browser gets SIGKILL if the test's thread dies without running
        // destructors (a test killed by a timeout), as the servers do.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) < 0
                    || libc::dup2(in_read, 3) < 0
                    || libc::dup2(out_write, 4) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        // SAFETY: these two ends now belong to the child only; ours are the
        // other two, each owned by one File from here on.
        let (to_browser, from_browser) = unsafe {
            libc::close(in_read);
            libc::close(out_write);
            (File::from_raw_fd(in_write), File::from_raw_fd(out_read))
        };
        let (tx, rx) = channel();
        thread::spawn(move || {
            let mut reader = BufReader::new(from_browser);
            let mut record = Vec::new();
            loop {
                record.clear();
                match reader.read_until(0, &mut record) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if record.last() == Some(&0) {
                    record.pop();
                }
                if let Ok(message) = serde_json::from_slice::<Value>(&record)
                    && tx.send(message).is_err()
                {
                    return;
                }
            }
        });
        let mut browser = Browser {
            child,
            to_browser,
            from_browser: rx,
            session: String::new(),
            next_id: 0,
            screenshots: screenshots.to_path_buf(),
            _profile: profile,
        };
        let targets = browser.browser_command("Target.getTargets", json!({}));
        let page = targets["targetInfos"]
            .as_array()
            .and_then(|all| all.iter().find(|t| t["type"] == "page"))
            .and_then(|t| t["targetId"].as_str())
            .map(str::to_string);
        let page = match page {
            Some(id) => id,
            None => browser.browser_command("Target.createTarget", json!({"url": "about:blank"}))
                ["targetId"]
                .as_str()
                .expect("Target.createTarget gives a targetId")
                .to_string(),
        };
        let attached = browser.browser_command(
            "Target.attachToTarget",
            json!({"targetId": page, "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("Target.attachToTarget gives a sessionId")
            .to_string();
        browser.command("Page.enable", json!({}));
        browser.set_viewport(1280, 900);
        browser
    }

    /// Makes the page's viewport `width` × `height` CSS pixels (the window
    /// size alone leaves the browser's own frame out of it).
    #[track_caller]
    pub fn set_viewport(&mut self, width: u32, height: u32) {
        self.command(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
    }

    /// Sends one protocol command (to the page's session when `session`)
    /// and returns its result; panics on an error answer or after
    /// [`COMMAND_DEADLINE`]. Events in between are not needed: every wait
    /// polls the page instead.
    #[track_caller]
    fn send(&mut self, method: &str, params: Value, session: bool) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if session {
            message["sessionId"] = Value::String(self.session.clone());
        }
        let mut bytes = serde_json::to_vec(&message).expect("a JSON value serializes");
        bytes.push(0);
        self.to_browser
            .write_all(&bytes)
            .unwrap_or_else(|e| panic!("chromium's pipe is closed ({method}): {e}"));
        let end = Instant::now() + COMMAND_DEADLINE;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.from_browser.recv_timeout(left) {
                Ok(reply) if reply["id"] == id => {
                    if let Some(error) = reply.get("error") {
                        panic!("chromium refused {method}: {error}");
                    }
                    return reply["result"].clone();
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    panic!("chromium did not answer {method} within {COMMAND_DEADLINE:?}")
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("chromium ended while asked {method} (see chromium.log)")
                }
            }
        }
    }

    #[track_caller]
    fn browser_command(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, false)
    }

    /// Sends one protocol command to the page; see [`Browser::send`].
    #[track_caller]
    pub fn command(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, true)
    }

    /// From the next page opened on: every Content-Security-Policy
    /// violation of the page is recorded (for [`Browser::csp_violations`]),
    /// by a listener installed before any of the page's own scripts run.
    #[track_caller]
    pub fn record_csp_violations(&mut self) {
        self.command(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": "window.__cspViolations = []; document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI || 'inline'} at ${e.sourceFile}:${e.lineNumber}`));"}),
        );
    }

    /// The CSP violations recorded on the page so far (see
    /// [`Browser::record_csp_violations`]).
    #[track_caller]
    pub fn csp_violations(&mut self) -> Vec<String> {
        match self.eval("window.__cspViolations") {
            Value::Array(list) => list
                .into_iter()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect(),
            other => panic!("the CSP violation recorder is not installed: {other}"),
        }
    }

    /// Opens `url` and waits until the page has loaded.
    #[track_caller]
    pub fn open(&mut self, url: &str) {
        let reply = self.command("Page.navigate", json!({"url": url}));
        if let Some(error) = reply.get("errorText") {
            panic!("cannot open {url}: {error}");
        }
        let loaded = wait_until(COMMAND_DEADLINE, || {
            self.eval("document.readyState") == Value::String("complete".into())
        });
        assert!(
            loaded,
            "{url} did not finish loading within {COMMAND_DEADLINE:?}"
        );
    }

    /// The value of the JavaScript expression `js` (promises awaited), as
    /// JSON; `Value::Null` for `undefined`. Panics when it throws.
    #[track_caller]
    pub fn eval(&mut self, js: &str) -> Value {
        let reply = self.command(
            "Runtime.evaluate",
            json!({"expression": js, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(thrown) = reply.get("exceptionDetails") {
            panic!("{js} threw: {thrown}");
        }
        reply["result"].get("value").cloned().unwrap_or(Value::Null)
    }

    /// The text of the element `selector` (trimmed), or `None` when absent.
    pub fn text(&mut self, selector: &str) -> Option<String> {
        let facts = self.eval(&element_facts_js(selector));
        facts
            .get("text")
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    /// Whether the element `selector` exists and is shown.
    pub fn shown(&mut self, selector: &str) -> bool {
        self.eval(&element_facts_js(selector))
            .get("shown")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// The attribute `name` of the element `selector`, or `None`.
    pub fn attr(&mut self, selector: &str, name: &str) -> Option<String> {
        let js = format!(
            "document.querySelector({})?.getAttribute({}) ?? null",
            Value::String(selector.to_string()),
            Value::String(name.to_string())
        );
        self.eval(&js).as_str().map(str::to_string)
    }

    /// Waits until the element `selector` is shown; panics (with a
    /// screenshot saved as `failed-wait.png`) after `deadline`.
    #[track_caller]
    pub fn wait_for(&mut self, selector: &str, deadline: Duration) {
        if !wait_until(deadline, || self.shown(selector)) {
            self.fail(&format!("{selector} not shown within {deadline:?}"));
        }
    }

    /// Waits until the text of the element `selector` satisfies `want`;
    /// returns that text. Panics (with a screenshot) after `deadline`,
    /// saying the last text seen.
    #[track_caller]
    pub fn wait_for_text(
        &mut self,
        selector: &str,
        deadline: Duration,
        what: &str,
        mut want: impl FnMut(&str) -> bool,
    ) -> String {
        let mut last = None;
        let ok = wait_until(deadline, || {
            last = self.text(selector);
            last.as_deref().is_some_and(&mut want)
        });
        if !ok {
            self.fail(&format!(
                "{selector}: {what}, not within {deadline:?}; last text: {last:?}"
            ));
        }
        last.unwrap_or_default()
    }

    /// Clicks the element `selector` with real mouse events at its centre
    /// (scrolled into view first), as a person would.
    #[track_caller]
    pub fn click(&mut self, selector: &str) {
        // The point must hit the element itself: a page that is still
        // laying out (a banner appearing, a row growing after a poll) would
        // send the click to whatever moved under it.
        let js = format!(
            "(() => {{ const e = document.querySelector({}); if (!e) return null; \
             e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); \
             const x = r.left + r.width / 2, y = r.top + r.height / 2; \
             const hit = document.elementFromPoint(x, y); \
             return {{x, y, hit: !!hit && (hit === e || e.contains(hit))}}; }})()",
            Value::String(selector.to_string())
        );
        let mut at = self.eval(&js);
        for _ in 0..50 {
            if at["hit"].as_bool() != Some(false) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            at = self.eval(&js);
        }
        let (Some(x), Some(y)) = (at["x"].as_f64(), at["y"].as_f64()) else {
            self.fail(&format!("cannot find {selector} to click"));
        };
        if at["hit"].as_bool() == Some(false) {
            self.fail(&format!(
                "{selector} stays covered by another element: cannot click it"
            ));
        }
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.command(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// Empties the input `selector`, focuses it and types `text` into it
    /// (as text input, firing the page's `input` events).
    #[track_caller]
    pub fn type_into(&mut self, selector: &str, text: &str) {
        let js = format!(
            "(() => {{ const e = document.querySelector({}); if (!e) return false; \
             e.value = ''; e.focus(); return true; }})()",
            Value::String(selector.to_string())
        );
        if self.eval(&js) != Value::Bool(true) {
            self.fail(&format!("cannot find the input {selector}"));
        }
        self.command("Input.insertText", json!({"text": text}));
    }

    /// Presses `Enter` or `Tab` in the focused element.
    #[track_caller]
    pub fn press(&mut self, key: &str) {
        let (code, text) = match key {
            "Enter" => (13, "\r"),
            "Tab" => (9, "\t"),
            other => panic!("press knows Enter and Tab, not {other}"),
        };
        self.command(
            "Input.dispatchKeyEvent",
            json!({"type": "keyDown", "key": key, "code": key,
                   "windowsVirtualKeyCode": code, "text": text}),
        );
        self.command(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": code}),
        );
    }

    /// The page as PNG bytes (the whole page, not only the window).
    #[track_caller]
    fn png(&mut self) -> Vec<u8> {
        let reply = self.command(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        reply["data"]
            .as_str()
            .and_then(base64_decode)
            .expect("Page.captureScreenshot gives base64 data")
    }

    /// Saves a PNG of the whole page as `name.png` in the screenshots folder;
    /// returns its path.
    #[track_caller]
    pub fn screenshot(&mut self, name: &str) -> PathBuf {
        let png = self.png();
        let path = self.screenshots.join(format!("{name}.png"));
        fs::write(&path, png).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }

    /// Panics with `why`, after saving what the page showed then as
    /// `failed.png`.
    #[track_caller]
    fn fail(&mut self, why: &str) -> ! {
        let path = self.screenshot("failed");
        panic!("{why} (the page then: {})", path.display())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::base64_decode;

    #[test]
    fn base64_decodes_with_and_without_padding() {
        assert_eq!(base64_decode("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        assert_eq!(base64_decode("aGk=").as_deref(), Some(&b"hi"[..]));
        assert_eq!(base64_decode("YWJj").as_deref(), Some(&b"abc"[..]));
        assert_eq!(
            base64_decode("iVBORw0KGgo=").as_deref(),
            Some(&b"\x89PNG\r\n\x1a\n"[..])
        );
        assert_eq!(base64_decode("a$=="), None);
    }
}
