//! The dashboard (`/ui/`, issue 28) end to end in a real browser: Debian's
//! headless chromium (installed by `scripts/setup.sh`, driven by
//! `sextant_test_support::browser`) looks at the page that one of three
//! `sextant serve` processes serves, each site on its own loopback address
//! with a real TCP backend per site, monitored by TCP at its own site.
//!
//! The tests read the page only through the DOM contract of the dashboard
//! (data attributes and ids, see docs/dashboard.md), act on it with real
//! clicks and typing, and check the effect where an operator would: in the
//! page, over the API and with DNS queries. Each saves screenshots (PNG)
//! under `target/tmp/screenshots/dashboard/TEST/`. Without chromium they
//! fail under CI (`CI=true`) and print SKIPPED elsewhere.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use sextant_test_support::browser::Browser;
use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

const NAME: &str = "www.example.com";
/// The monitor's interval; a killed backend is DOWN after one failed probe.
const INTERVAL: Duration = Duration::from_secs(3);
const MONITOR: &str = "add lb monitor tcp-dash TCP -interval 3 SEC -resptimeout 1 SEC -retries 1\n";
/// How long the page may take to show what the API already says (it polls
/// every 2 s and listens to `/v1/events`).
const PAGE: Duration = Duration::from_secs(15);

/// Site `me`'s file: the three sites, one service per site on its backend
/// (`web-NAME`, monitored at its own site), one round-robin vserver over the
/// three for [`NAME`].
fn conf(sites: &Sites, me: usize, ports: &[u16]) -> String {
    let mut c = sites.preamble(me, "dashboard", "");
    c += MONITOR;
    for (k, name) in sites.names.iter().enumerate() {
        c += &format!(
            "add gslb service web-{name} {} TCP {} -siteName {name}\n\
             bind lb monitor tcp-dash web-{name}\n",
            sites.svc[k], ports[k]
        );
    }
    c += "add gslb vserver web TCP -lbMethod ROUNDROBIN\n";
    for name in &sites.names {
        c += &format!("bind gslb vserver web -serviceName web-{name}\n");
    }
    c += &format!("bind gslb vserver web -domainName {NAME} -TTL 5\n");
    c
}

struct Setup {
    sites: Sites,
    servers: Vec<SiteServer>,
    backends: Vec<Option<Backend>>,
    browser: Browser,
    _scratch: Scratch,
}

/// Three sites (fra, ams, nyc) with their mesh UP and every service UP, and
/// a browser showing fra's dashboard. `None` without chromium.
fn start(test: &str) -> Option<Setup> {
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("screenshots")
        .join("dashboard")
        .join(test);
    let mut browser = Browser::launch(&folder)?;
    let net = Net::for_sites(test, 3);
    let scratch = net.scratch();
    let sites = Sites::host(&net, &["fra", "ams", "nyc"]);
    let backends: Vec<Backend> = sites.svc.iter().map(|ip| Backend::tcp(*ip)).collect();
    let ports: Vec<u16> = backends.iter().map(|b| b.port()).collect();
    let servers = sites.start(SEXTANT, &scratch, |k| conf(&sites, k, &ports));
    wait_mesh_up(&servers);
    for name in &sites.names {
        eventually_ok(EVENTUALLY, &format!("fra has web-{name} UP"), || {
            servers[0]
                .expect_service(&format!("web-{name}"), State::Up)
                .map(|_| ())
        });
    }
    browser.record_csp_violations();
    browser.open(&format!("http://{}/ui/", servers[0].api_addr));
    // The page has run its script and heard from its node.
    browser.wait_for_text("#node", PAGE, "the node's site", |t| t == "site fra");
    Some(Setup {
        sites,
        servers,
        backends: backends.into_iter().map(Some).collect(),
        browser,
        _scratch: scratch,
    })
}

/// Queries fra's DNS for [`NAME`] every 50 ms (at most 2000 times) until
/// dropped, so that the answer counters behind the domain view move.
struct Queries {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Queries {
    fn start(dns: SocketAddr) -> Queries {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = thread::spawn(move || {
            let client = Dns::new(dns);
            for _ in 0..2000 {
                if stopping.load(Ordering::Relaxed) {
                    return;
                }
                let _ = client.try_udp_from(None, &build_query(NAME, RecordType::A, None));
                thread::sleep(Duration::from_millis(50));
            }
        });
        Queries {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Queries {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Setup {
    fn fra(&self) -> &SiteServer {
        &self.servers[0]
    }

    fn show(&mut self, view: &str) {
        self.browser.click(&format!("a[data-view=\"{view}\"]"));
        self.browser.wait_for(&format!("section#view-{view}"), PAGE);
    }

    /// The share of `service` in the domain view (`data-share`, 0..1).
    fn share(&mut self, service: &str) -> Option<f64> {
        self.browser
            .attr(
                &format!("[data-domain=\"{NAME}\"] [data-share-service=\"{service}\"]"),
                "data-share",
            )
            .and_then(|s| s.parse().ok())
    }

    fn shares(&mut self) -> Result<Vec<f64>, String> {
        let names: Vec<String> = self
            .sites
            .names
            .iter()
            .map(|n| format!("web-{n}"))
            .collect();
        names
            .iter()
            .map(|s| self.share(s).ok_or(format!("no share shown for {s}")))
            .collect()
    }

    /// The text of `field` in the services view's row of `service`.
    fn service_cell(&mut self, service: &str, field: &str) -> String {
        self.browser
            .text(&format!(
                "tr[data-service=\"{service}\"] [data-field=\"{field}\"]"
            ))
            .unwrap_or_default()
    }

    /// Fills the explain form and submits it; returns the result's text.
    fn explain_in_page(&mut self, client: Ipv4Addr) -> String {
        self.show("explain");
        let b = &mut self.browser;
        b.type_into("form#explain [name=\"name\"]", NAME);
        // The query type: a select or a text input, A either way.
        b.eval(
            "(() => { const t = document.querySelector('form#explain [name=\"type\"]'); \
             t.value = 'A'; t.dispatchEvent(new Event('change', {bubbles: true})); })()",
        );
        b.type_into("form#explain [name=\"client\"]", &client.to_string());
        b.eval("document.querySelector('#explain-result').textContent = ''");
        // A button is a submit button unless it says otherwise.
        b.click("form#explain [type=\"submit\"], form#explain button:not([type])");
        b.wait_for_text("#explain-result", PAGE, "shows an answer", |t| {
            t.contains("answer:")
        })
    }
}

/// The trimmed, non-empty lines of `text`.
fn lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn a_dead_backend_turns_down_in_the_page_its_share_moves_away_and_explain_shows_the_new_answer() {
    let Some(mut s) = start("dashboard_dead_backend") else {
        return;
    };
    let _queries = Queries::start(SocketAddr::new(IpAddr::V4(s.sites.ips[0]), DNS_PORT));

    // Every view is there and every site in the topology, linked up.
    for view in ["topology", "services", "domains", "rtt", "vrrp", "explain"] {
        s.show(view);
        s.browser.screenshot(&format!("view-{view}"));
    }
    s.show("topology");
    for pair in ["ams|fra", "fra|nyc", "ams|nyc"] {
        let link = format!("svg#topology [data-link=\"{pair}\"]");
        eventually_ok(PAGE, &format!("the topology shows {pair} up"), || {
            match s.browser.attr(&link, "data-state").as_deref() {
                Some("up") => Ok(()),
                other => Err(format!("{link} data-state {other:?}")),
            }
        });
    }
    for name in ["fra", "ams", "nyc"] {
        s.browser
            .wait_for(&format!("svg#topology g[data-site=\"{name}\"]"), PAGE);
    }
    s.browser.screenshot("topology");

    // All three services UP, each with a share of the answers.
    s.show("services");
    for name in ["fra", "ams", "nyc"] {
        let service = format!("web-{name}");
        let state = format!("tr[data-service=\"{service}\"] [data-field=\"state\"]");
        s.browser.wait_for_text(&state, PAGE, "UP", |t| t == "UP");
        s.browser
            .wait_for(&format!("svg[data-timeline=\"{service}\"]"), PAGE);
    }
    s.show("domains");
    eventually_ok(PAGE, "every service has a share of the answers", || {
        let shares = s.shares()?;
        if shares.iter().all(|x| *x > 0.0) {
            Ok(())
        } else {
            Err(format!("shares {shares:?}"))
        }
    });
    let ams_before = s.share("web-ams").expect("ams's share");
    s.browser.screenshot("domains-all-up");

    // ams's backend dies: within two monitor intervals its row says DOWN.
    s.backends[1].take().expect("ams's backend").kill();
    s.show("services");
    s.browser.wait_for_text(
        "tr[data-service=\"web-ams\"] [data-field=\"state\"]",
        2 * INTERVAL,
        "DOWN within two monitor intervals",
        |t| t == "DOWN",
    );
    let reason = s.service_cell("web-ams", "reason");
    assert!(!reason.is_empty(), "a DOWN service shows its reason");
    // Its timeline ends red however recent the change; the others' do not.
    let now_red = "svg[data-timeline=\"web-ams\"] rect.tl-DOWN:last-of-type";
    s.browser.wait_for(now_red, PAGE);
    let width: f64 = s
        .browser
        .attr(now_red, "width")
        .and_then(|w| w.parse().ok())
        .unwrap_or(0.0);
    assert!(
        width >= 4.0,
        "the DOWN stretch is {width} px wide: too thin to see"
    );
    assert!(
        !s.browser
            .shown("svg[data-timeline=\"web-fra\"] rect.tl-DOWN"),
        "web-fra's timeline has no DOWN"
    );
    s.browser.screenshot("services-ams-down");

    // The answers move away from it: once the page's 10-second window holds
    // only answers given after the DOWN, ams has (almost) none of them and
    // the two live services share them. The window has to pass first.
    s.show("domains");
    eventually_ok(
        EVENTUALLY + Duration::from_secs(10),
        "ams's share moves away",
        || {
            let shares = s.shares()?;
            let (fra, ams, nyc) = (shares[0], shares[1], shares[2]);
            if ams < 0.05 && ams < ams_before && fra > 0.3 && nyc > 0.3 {
                Ok(())
            } else {
                Err(format!(
                    "shares fra {fra} ams {ams} nyc {nyc} (ams before: {ams_before})"
                ))
            }
        },
    );
    s.browser.screenshot("domains-ams-down");

    // The explain form shows what `sextant explain --server` says: the new
    // answer, without ams.
    let ams_ip = s.sites.svc_of("ams").to_string();
    let client = Ipv4Addr::new(127, 0, 0, 1);
    let api = s.fra().api_addr.to_string();
    eventually_ok(EVENTUALLY, "the page explains as the command does", || {
        let page = s.explain_in_page(client);
        let out = SEXTANT.run(&[
            "explain",
            "--server",
            &api,
            "--client",
            &client.to_string(),
            NAME,
            "A",
        ]);
        if !out.status.success() {
            return Err(format!("sextant explain failed: {}", output_text(&out)));
        }
        let cli = String::from_utf8_lossy(&out.stdout);
        let answers: Vec<&str> = lines(&page)
            .into_iter()
            .filter(|l| l.starts_with("answer:"))
            .collect();
        if answers.is_empty() || answers.iter().any(|l| l.contains(&ams_ip)) {
            return Err(format!("the page's answers {answers:?} (ams is {ams_ip})"));
        }
        if lines(&page) != lines(&cli) {
            return Err(format!("the page says\n{page}\nthe command says\n{cli}"));
        }
        Ok(())
    });
    s.browser.screenshot("explain");
}

#[test]
fn actions_need_the_token_and_disable_from_the_page_stops_dns_answering_it() {
    let Some(mut s) = start("dashboard_actions") else {
        return;
    };
    let ams_ip = s.sites.svc_of("ams");
    s.show("services");
    let state = "tr[data-service=\"web-ams\"] [data-field=\"state\"]";
    s.browser.wait_for_text(state, PAGE, "UP", |t| t == "UP");
    let admin = "tr[data-service=\"web-ams\"] [data-field=\"admin\"]";
    s.browser
        .wait_for_text(admin, PAGE, "ENABLED", |t| t == "ENABLED");
    assert_eq!(s.browser.text("#token-state").as_deref(), Some("no token"));
    let disable = "button[data-action=\"disable\"][data-service=\"web-ams\"]";
    let yes = "[data-confirm-for=\"web-ams\"] button[data-confirm=\"yes\"]";
    let no = "[data-confirm-for=\"web-ams\"] button[data-confirm=\"no\"]";

    // Without a token: the API refuses, the page says why, nothing changes.
    s.browser.type_into(
        "input[data-reason-for=\"web-ams\"]",
        "maintenance window 42",
    );
    s.browser.click(disable);
    s.browser.click(yes);
    s.browser.wait_for("#error", PAGE);
    s.browser
        .wait_for_text("#error", PAGE, "the API's 401 message", |t| {
            t.contains("this request needs `Authorization: Bearer TOKEN`")
        });
    s.browser.screenshot("refused-without-token");

    // A wrong token: refused too, with its own message.
    s.browser.type_into("input#token", "not-the-token");
    s.browser.click("button#token-save");
    s.browser
        .wait_for_text("#token-state", PAGE, "token set", |t| t == "token set");
    s.browser.click(disable);
    s.browser.click(yes);
    s.browser
        .wait_for_text("#error", PAGE, "the API's 401 message", |t| {
            t.contains("the token is not valid")
        });
    let refused = s.fra().try_service("web-ams").expect("web-ams");
    assert_eq!(
        refused.admin_state, "enabled",
        "a refused action changed nothing"
    );
    let answered: Vec<Ipv4Addr> = (0..6).flat_map(|_| s.fra().query_a(NAME)).collect();
    assert!(
        answered.contains(&ams_ip),
        "ams is still answered: {answered:?}"
    );

    // With the token: the wrong token's refusal goes from the banner.
    s.browser.type_into("input#token", TEST_TOKEN);
    s.browser.click("button#token-save");
    s.browser
        .wait_for_text("#error", PAGE, "the banner clears", |t| t.is_empty());
    assert!(!s.browser.shown("#error"), "the banner is hidden");
    // Disable asks first; "no" changes nothing.
    s.browser.type_into(
        "input[data-reason-for=\"web-ams\"]",
        "maintenance window 42",
    );
    s.browser.click(disable);
    s.browser.wait_for_text(
        "[data-confirm-for=\"web-ams\"] [data-field=\"question\"]",
        PAGE,
        "the question",
        |t| t == "Disable web-ams (no more answers)?",
    );
    s.browser.screenshot("disable-asks-first");
    s.browser.click(no);
    assert!(!s.browser.shown(yes), "the question goes");
    std::thread::sleep(Duration::from_secs(1));
    let kept = s.fra().try_service("web-ams").expect("web-ams");
    assert_eq!(kept.admin_state, "enabled", "cancelled: nothing changed");
    // "Yes": disabled, shown, and DNS stops answering ams.
    s.browser.click(disable);
    s.browser.click(yes);
    s.browser
        .wait_for_text(admin, PAGE, "DISABLED", |t| t == "DISABLED");
    eventually_ok(EVENTUALLY, "fra stops answering ams", || {
        for i in 0..12 {
            let got = s.fra().try_query_a(NAME)?;
            if got.contains(&ams_ip) {
                return Err(format!("answer {i} still {got:?}"));
            }
        }
        Ok(())
    });
    let disabled = s.fra().try_service("web-ams").expect("web-ams");
    assert_eq!(disabled.admin_state, "disabled");
    assert_eq!(
        disabled.admin_reason.as_deref(),
        Some("maintenance window 42")
    );
    s.browser.screenshot("disabled-with-token");

    // A configuration command not saved yet: the bar says so until
    // `save ns config`.
    let hidden = "document.getElementById('config-unsaved').hidden";
    assert_eq!(s.browser.eval(hidden), serde_json::Value::Bool(true));
    let body = serde_json::json!({
        "command": "bind gslb vserver web -domainName other.example.com"
    });
    let (code, answer) = s.fra().post("/v1/config/commands", &body.to_string());
    assert_eq!(code, 200, "{answer}");
    s.browser
        .wait_for_text("#config-unsaved", PAGE, "the unsaved badge", |t| {
            t == "unsaved configuration: 1 command(s)"
        });
    assert_eq!(s.browser.eval(hidden), serde_json::Value::Bool(false));
    s.browser.screenshot("unsaved-configuration");
    let (code, answer) = s.fra().post("/v1/config/save", "{}");
    assert_eq!(code, 200, "{answer}");
    eventually_ok(PAGE, "the badge goes once saved", || {
        match s.browser.eval(hidden) {
            serde_json::Value::Bool(true) => Ok(()),
            other => Err(format!("hidden: {other}")),
        }
    });
}

impl Setup {
    /// Presses Tab until the focused element matches `selector` (at most
    /// 60 times), as a keyboard user moves through the page.
    fn tab_to(&mut self, selector: &str) {
        let focused = format!(
            "document.activeElement && document.activeElement.matches({})",
            serde_json::Value::String(selector.to_string())
        );
        for _ in 0..60 {
            self.browser.press("Tab");
            if self.browser.eval(&focused) == serde_json::Value::Bool(true) {
                return;
            }
        }
        let at = self
            .browser
            .eval("document.activeElement && document.activeElement.outerHTML.slice(0, 120)");
        panic!("Tab never reached {selector}; focus is on {at}");
    }

    /// Types `text` into the focused element, as a keyboard does.
    fn type_text(&mut self, text: &str) {
        self.browser
            .command("Input.insertText", serde_json::json!({ "text": text }));
    }
}

#[test]
fn the_keyboard_alone_reaches_every_view_the_token_and_the_actions() {
    let Some(mut s) = start("dashboard_keyboard") else {
        return;
    };
    // Every view from its link, with Tab and Enter.
    for view in ["services", "domains", "rtt", "vrrp", "explain", "topology"] {
        s.tab_to(&format!("a[data-view=\"{view}\"]"));
        s.browser.press("Enter");
        s.browser.wait_for(&format!("section#view-{view}"), PAGE);
    }
    // The token form, then a drain with its reason, all from the keyboard.
    s.tab_to("input#token");
    s.type_text(TEST_TOKEN);
    s.browser.press("Enter");
    s.browser
        .wait_for_text("#token-state", PAGE, "token set", |t| t == "token set");
    s.tab_to("a[data-view=\"services\"]");
    s.browser.press("Enter");
    s.browser.wait_for("tr[data-service=\"web-nyc\"]", PAGE);
    s.tab_to("input[data-reason-for=\"web-nyc\"]");
    s.type_text("rack 7 power work");
    s.tab_to("button[data-action=\"drain\"][data-service=\"web-nyc\"]");
    s.browser.press("Enter");
    // Drain asks first, its "yes" focused: Enter again.
    s.browser.wait_for(
        "[data-confirm-for=\"web-nyc\"] button[data-confirm=\"yes\"]",
        PAGE,
    );
    let focused = s.browser.eval("document.activeElement.dataset.confirm");
    assert_eq!(
        focused,
        Value::from("yes"),
        "the confirmation has the focus"
    );
    s.browser.press("Enter");
    s.browser.wait_for_text(
        "tr[data-service=\"web-nyc\"] [data-field=\"admin\"]",
        PAGE,
        "DRAINING",
        |t| t == "DRAINING",
    );
    let drained = s.fra().try_service("web-nyc").expect("web-nyc");
    assert_eq!(drained.admin_state, "draining");
    assert_eq!(drained.admin_reason.as_deref(), Some("rack 7 power work"));
    s.browser.screenshot("drained-from-the-keyboard");
    // Every view was drawn, under the node's Content-Security-Policy (no
    // inline script or style): nothing was blocked.
    let blocked = s.browser.csp_violations();
    assert!(blocked.is_empty(), "CSP violations: {blocked:#?}");
}

/// With `--api-reads token` the page itself loads (its files hold no data)
/// but shows nothing without the token, says why, and shows everything,
/// the live event stream included, once the token is saved.
#[test]
fn with_reads_behind_the_token_the_page_shows_nothing_until_it_has_one() {
    let net = Net::new("dashboard_reads");
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("screenshots")
        .join("dashboard")
        .join("dashboard_reads");
    let Some(mut browser) = Browser::launch(&folder) else {
        return;
    };
    let conf = format!(
        "{}add gslb service web1 {} HTTP 80 -siteName site1\n\
         add gslb vserver vs1 HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs1 -serviceName web1\n\
         bind gslb vserver vs1 -domainName {NAME} -TTL 5\n",
        net.conf_preamble(),
        net.svc_ip(1)
    );
    let server = Server::start_with(
        SEXTANT,
        &net,
        Syntax::Conf,
        &conf,
        &["--api-reads", "token"],
    );
    browser.record_csp_violations();
    browser.open(&format!("http://{}/ui/#services", net.api_addr()));
    browser.wait_for_text("#error", PAGE, "the API's 401 message", |t| {
        t.contains("this request needs `Authorization: Bearer TOKEN`")
    });
    assert!(
        !browser.shown("tr[data-service=\"web1\"]"),
        "no service is shown without the token"
    );
    browser.screenshot("reads-refused-without-token");

    browser.type_into("input#token", TEST_TOKEN);
    browser.click("button#token-save");
    browser.wait_for_text(
        "tr[data-service=\"web1\"] [data-field=\"state\"]",
        PAGE,
        "web1's state",
        |t| t == "UP" || t == "DOWN",
    );
    browser.wait_for_text(
        "#live-state",
        PAGE,
        "the event stream, with the token",
        |t| t == "live",
    );
    browser.wait_for_text("#error", PAGE, "no error once the token is saved", |t| {
        t.is_empty()
    });
    // An event reaches the page over the stream: a reload.
    server.signal(libc::SIGHUP);
    browser.wait_for_text("#events", PAGE, "the reload event", |t| {
        t.contains("reload: configuration")
    });
    browser.screenshot("reads-with-token");
    let blocked = browser.csp_violations();
    assert!(blocked.is_empty(), "CSP violations: {blocked:#?}");
    // A script slipped into the page (as a hostile name would try) does
    // not run, and the recorder sees it refused.
    browser.eval(
        "(() => { const s = document.createElement('script'); s.textContent = 'window.__injected = true'; document.body.append(s); })()",
    );
    assert_eq!(
        browser.eval("window.__injected === true"),
        Value::Bool(false)
    );
    let blocked = browser.csp_violations();
    assert!(
        blocked.iter().any(|v| v.starts_with("script-src")),
        "the injected script was not refused: {blocked:#?}"
    );
}

/// A partition between two other sites shows in fra's topology at once:
/// the three sites run in a network namespace of the test's own (and
/// chromium with them), iptables cuts ams <-> nyc, and fra's page draws
/// that link down, from what ams and nyc report, while fra's own links
/// stay up; healed, it is up again.
#[test]
fn a_partition_between_two_other_sites_shows_in_the_topology() {
    let Some(ns) = Netns::create("dash") else {
        return;
    };
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("screenshots")
        .join("dashboard")
        .join("dashboard_partition");
    let Some(mut browser) = Browser::launch_in(&ns, &folder) else {
        return;
    };
    let scratch = Scratch::new("dashboard_partition");
    let sites = Sites::new(
        &["fra", "ams", "nyc"],
        (1..=3).map(|k| Ipv4Addr::new(127, 0, 1, k)).collect(),
        (1..=3).map(|k| Ipv4Addr::new(127, 0, 2, k)).collect(),
    );
    let backends: Vec<Backend> = sites
        .svc
        .iter()
        .map(|ip| ns.run(|| Backend::tcp(*ip)))
        .collect();
    let ports: Vec<u16> = backends.iter().map(|b| b.port()).collect();
    let servers = sites.start_in(SEXTANT, &scratch, Some(ns.clone()), |k| {
        // Metric exchange notices a dead link within a second.
        format!(
            "set gslb parameter -MEPKeepAliveTimeout 1\n{}",
            conf(&sites, k, &ports)
        )
    });
    wait_mesh_up(&servers);
    browser.open(&format!("http://{}/ui/#topology", servers[0].api_addr));
    let link_state = |b: &mut Browser, pair: &str| {
        b.attr(
            &format!("svg#topology [data-link=\"{pair}\"]"),
            "data-state",
        )
    };
    let expect = |b: &mut Browser, want: &[(&str, &str)], what: &str| {
        eventually_ok(PAGE, what, || {
            for (pair, state) in want {
                let got = link_state(b, pair);
                if got.as_deref() != Some(*state) {
                    return Err(format!("{pair}: {got:?}, want {state}"));
                }
            }
            Ok(())
        });
    };
    expect(
        &mut browser,
        &[("ams|fra", "up"), ("fra|nyc", "up"), ("ams|nyc", "up")],
        "every link up",
    );

    let (ams, nyc) = (sites.ips[1], sites.ips[2]);
    ns.cut(&[(ams, nyc)]);
    expect(
        &mut browser,
        &[("ams|nyc", "down"), ("ams|fra", "up"), ("fra|nyc", "up")],
        "ams|nyc down, fra's own links up",
    );
    let row = browser
        .text("tr[data-link-row=\"ams|nyc\"]")
        .unwrap_or_default();
    assert!(
        row.contains("DOWN") && row.contains("ams") && row.contains("nyc"),
        "the links table says who reported it down: {row}"
    );
    browser.screenshot("topology-partition");

    ns.heal(&[(ams, nyc)]);
    expect(
        &mut browser,
        &[("ams|nyc", "up"), ("ams|fra", "up"), ("fra|nyc", "up")],
        "healed: every link up again",
    );
}

/// A service nothing checks is marked in the services view ("NOT
/// CHECKED"); one the configuration leaves unchecked on purpose
/// (`-healthMonitor NO`) is marked as such; a monitored one is not marked.
#[test]
fn a_service_nothing_checks_is_marked_in_the_services_view() {
    let net = Net::new("dashboard_unchecked");
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("screenshots")
        .join("dashboard")
        .join("dashboard_unchecked");
    let Some(mut browser) = Browser::launch(&folder) else {
        return;
    };
    let conf = format!(
        "{}{MONITOR}add gslb service web1 {ip1} HTTP 80 -siteName site1\n\
         add gslb service web2 {ip2} HTTP 80 -siteName site1 -healthMonitor NO\n\
         add gslb service web3 {ip3} HTTP 80 -siteName site1\n\
         bind lb monitor tcp-dash web3\n\
         add gslb vserver vs1 HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs1 -serviceName web1\n\
         bind gslb vserver vs1 -domainName {NAME} -TTL 5\n",
        net.conf_preamble(),
        ip1 = net.svc_ip(1),
        ip2 = net.svc_ip(2),
        ip3 = net.svc_ip(3),
    );
    let _server = Server::start(SEXTANT, &net, Syntax::Conf, &conf);
    browser.record_csp_violations();
    browser.open(&format!("http://{}/ui/#services", net.api_addr()));
    let mark = |s: &str| format!("tr[data-service=\"{s}\"] [data-field=\"unchecked\"]");
    browser.wait_for_text(&mark("web1"), PAGE, "web1 marked", |t| t == "NOT CHECKED");
    assert!(browser.shown(&mark("web1")), "the mark is visible");
    assert_eq!(
        browser.attr(&mark("web1"), "class").as_deref(),
        Some("unchecked")
    );
    browser.wait_for_text(&mark("web2"), PAGE, "web2 marked as chosen", |t| {
        t == "not checked (by choice)"
    });
    assert!(browser.shown(&mark("web2")));
    browser.wait_for_text(
        "tr[data-service=\"web3\"] [data-field=\"state\"]",
        PAGE,
        "web3's state",
        |t| t == "UP" || t == "DOWN",
    );
    assert!(
        !browser.shown(&mark("web3")),
        "a monitored service is not marked"
    );
    browser.screenshot("unchecked-services");
    let blocked = browser.csp_violations();
    assert!(blocked.is_empty(), "CSP violations: {blocked:#?}");
}

/// Two sites whose files give the accepting site (ams, the higher IP)
/// different passwords: the link never comes up, and fra's page says why
/// in the sites table, not only the log.
#[test]
fn a_site_password_mismatch_says_why_in_the_sites_table() {
    let test = "dashboard_password";
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("screenshots")
        .join("dashboard")
        .join(test);
    let Some(mut browser) = Browser::launch(&folder) else {
        return;
    };
    let net = Net::for_sites(test, 2);
    let scratch = net.scratch();
    let sites = Sites::host(&net, &["fra", "ams"]);
    let backends: Vec<Backend> = sites.svc.iter().map(|ip| Backend::tcp(*ip)).collect();
    let ports: Vec<u16> = backends.iter().map(|b| b.port()).collect();
    let servers = sites.start(SEXTANT, &scratch, |k| {
        let password = ["alpha-secret-1", "bravo-secret-2"][k];
        format!(
            "{}set gslb site ams -sitePassword {password}\n",
            conf(&sites, k, &ports)
        )
    });
    browser.open(&format!("http://{}/ui/#topology", servers[0].api_addr));
    let why = browser.wait_for_text(
        "tr[data-site-row=\"ams\"] [data-field=\"down\"]",
        PAGE,
        "the reason ams's link is down",
        |t| t.starts_with("authentication failed: "),
    );
    assert!(why.contains("password"), "{why}");
    browser.screenshot("site-password-mismatch");
}
