//! The dashboard stays right and light with many services (issue 40): the
//! API compresses and tags what the page polls, the event stream replays
//! what happened before the page was opened, a domain's shares are its own,
//! and at 1,000 and 10,000 services the page summarises first, pages its
//! table and downloads little per minute. Each test starts the real
//! `sextant serve` on loopback; the browser tests drive Debian's headless
//! chromium (`sextant_test_support::browser`) and fail under CI
//! (`CI=true`) without it. The figures measured are printed (`MEASURED`)
//! for docs/dashboard.md; the bounds asserted are sizes, never times.

use std::path::PathBuf;
use std::time::Duration;

use sextant_test_support::browser::Browser;
use sextant_test_support::events::EventReader;
use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// How long the page may take to show what the API already says.
const PAGE: Duration = Duration::from_secs(20);

/// The dashboard's services table holds this many rows at most (one page).
const PAGE_ROWS: usize = 50;

const MONITOR: &str =
    "add lb monitor tcp-light TCP -interval 3 SEC -resptimeout 1 SEC -retries 1\n";

fn browser(test: &str) -> Option<Browser> {
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("screenshots")
        .join("dashboard")
        .join(test);
    let mut b = Browser::launch(&folder)?;
    // Every request the page makes stays in its resource timing (the
    // default buffer keeps 250).
    b.command(
        "Page.addScriptToEvaluateOnNewDocument",
        serde_json::json!({"source": "performance.setResourceTimingBufferSize(1000000);"}),
    );
    b.record_csp_violations();
    Some(b)
}

/// `n` services on site1 (`svc-00000`...), ten to a vserver with a domain
/// each (`d0000.example.com`...). The last `down` are monitored on a
/// closed port (DOWN); the others are not monitored (`-healthMonitor NO`,
/// UP) unless `all_monitored`, when every one is (a mass outage).
fn many(net: &Net, n: usize, down: usize, all_monitored: bool) -> String {
    let mut c = net.conf_preamble();
    c += MONITOR;
    for i in 0..n {
        // Nothing listens on these ports of these addresses.
        let ip = net.svc_ip(1 + (i / 20_000) as u8);
        let port = 20_000 + i % 20_000;
        let monitored = all_monitored || i >= n - down;
        let no = if monitored { "" } else { " -healthMonitor NO" };
        c += &format!("add gslb service svc-{i:05} {ip} HTTP {port} -siteName site1{no}\n");
        if monitored {
            c += &format!("bind lb monitor tcp-light svc-{i:05}\n");
        }
    }
    for v in 0..n.div_ceil(10) {
        c += &format!("add gslb vserver vs-{v:04} HTTP -lbMethod ROUNDROBIN\n");
        for i in v * 10..(v * 10 + 10).min(n) {
            c += &format!("bind gslb vserver vs-{v:04} -serviceName svc-{i:05}\n");
        }
        c += &format!("bind gslb vserver vs-{v:04} -domainName d{v:04}.example.com -TTL 5\n");
    }
    c
}

#[test]
fn the_api_gzips_tags_its_reads_and_replays_recent_events_without_compressing_the_stream() {
    let net = Net::new("light_api");
    let server = Server::start(SEXTANT, &net, Syntax::Conf, &many(&net, 300, 0, false));
    let gzip = [("Accept-Encoding", "gzip")];

    // Asked for gzip: compressed, and much smaller; not asked: as it was.
    let plain = server.request("GET", "/v1/services", &[], "");
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-encoding"), None);
    let zipped = server.request("GET", "/v1/services", &gzip, "");
    assert_eq!(zipped.status, 200, "{}", zipped.body);
    assert_eq!(zipped.header("content-encoding"), Some("gzip"));
    assert!(
        zipped
            .header("vary")
            .is_some_and(|v| v.to_ascii_lowercase().contains("accept-encoding")),
        "{:?}",
        zipped.headers
    );
    let length = |r: &Reply| {
        r.header("content-length")
            .and_then(|l| l.parse::<usize>().ok())
            .unwrap_or(r.body.len())
    };
    println!(
        "MEASURED /v1/services at 300 services: {} bytes plain, {} gzip",
        plain.body.len(),
        length(&zipped)
    );
    assert!(
        length(&zipped) * 5 < plain.body.len(),
        "gzip {} of {}",
        length(&zipped),
        plain.body.len()
    );

    // Tagged: asked again with the tag, 304 and no body; changed, a new tag.
    let etag = plain
        .header("etag")
        .expect("/v1/services has an ETag")
        .to_string();
    let same = server.request("GET", "/v1/services", &[("If-None-Match", &etag)], "");
    assert_eq!(same.status, 304, "{same:?}");
    assert!(same.body.is_empty(), "{same:?}");
    let (code, answer) = server.post("/v1/services/svc-00007/disable", r#"{"reason":"rack 7"}"#);
    assert_eq!(code, 200, "{answer}");
    let changed = server.request("GET", "/v1/services", &[("If-None-Match", &etag)], "");
    assert_eq!(changed.status, 200);
    assert_ne!(changed.header("etag"), Some(etag.as_str()));
    // A refused read carries no tag.
    let refused = server.request_raw("POST", "/v1/services/svc-00007/enable", &[], "{}");
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("etag"), None);

    // The event stream: the disable above is sent again to a client that
    // connects later, with its id; it is never compressed, even when asked.
    let mut events = EventReader::connect(
        server.net.api_addr(),
        Some(TEST_TOKEN),
        "Accept-Encoding: gzip\r\n",
    );
    events.wait_for(&["event: maintenance", "\"svc-00007\"", "\"time\":"]);
    let head = events.seen.to_ascii_lowercase();
    assert!(
        !head.contains("content-encoding"),
        "the stream is not compressed:\n{}",
        events.seen
    );
    let id = events
        .seen
        .lines()
        .find_map(|l| l.strip_prefix("id:"))
        .map(|v| v.trim().to_string())
        .expect("the replayed event has an id");
    // Reconnecting after that id: it is not sent again; a new one is.
    let mut again = EventReader::connect(
        server.net.api_addr(),
        Some(TEST_TOKEN),
        &format!("Last-Event-ID: {id}\r\n"),
    );
    let (code, answer) = server.post("/v1/services/svc-00008/drain", "{}");
    assert_eq!(code, 200, "{answer}");
    again.wait_for(&["\"svc-00008\""]);
    again.drain(Duration::from_millis(300));
    assert!(
        !again.seen.contains("\"svc-00007\""),
        "an event before Last-Event-ID was sent again:\n{}",
        again.seen
    );
    drop(events);
    drop(again);

    // The server restarts (its event numbers begin again): a page that
    // reconnects with the old process's last id is sent the new one's
    // events all the same.
    let last = id_of(&again_seen(&server, &id), "svc-00008");
    let mut server = server;
    server.stop();
    let server = Server::start(SEXTANT, &net, Syntax::Conf, &many(&net, 300, 0, false));
    let (code, answer) = server.post("/v1/services/svc-00009/disable", "{}");
    assert_eq!(code, 200, "{answer}");
    let mut reconnected = EventReader::connect(
        server.net.api_addr(),
        Some(TEST_TOKEN),
        &format!("Last-Event-ID: {last}\r\n"),
    );
    reconnected.wait_for(&["\"svc-00009\""]);
}

/// The events a client reconnecting after `id` is sent (read for 300 ms).
fn again_seen(server: &Server, id: &str) -> String {
    let mut r = EventReader::connect(
        server.net.api_addr(),
        Some(TEST_TOKEN),
        &format!("Last-Event-ID: {id}\r\n"),
    );
    r.drain(Duration::from_millis(300));
    r.seen
}

/// The SSE id of the event whose data holds `"name"`.
fn id_of(stream: &str, name: &str) -> String {
    let mut id = None;
    for line in stream.lines() {
        if let Some(v) = line.strip_prefix("id:") {
            id = Some(v.trim().to_string());
        }
        if line.starts_with("data:") && line.contains(&format!("\"{name}\"")) {
            return id.unwrap_or_else(|| panic!("no id before {line}"));
        }
    }
    panic!("no event of {name} in:\n{stream}");
}

/// A domain's shares are what that domain was answered with: its vserver
/// `main` has `backup` as backup vserver, and `backup` answers a domain of
/// its own three times as often. With everything UP, `main`'s domain is
/// answered by `main`'s service alone, and its count is its own.
#[test]
fn a_domains_shares_and_count_are_its_own_not_its_backup_vservers() {
    let net = Net::new("light_domains");
    let Some(mut b) = browser("light_domains") else {
        return;
    };
    let conf = format!(
        "{}add gslb service main-1 {} HTTP 80 -siteName site1\n\
         add gslb service backup-1 {} HTTP 80 -siteName site1\n\
         add gslb vserver main HTTP -lbMethod ROUNDROBIN -backupVServer backup\n\
         add gslb vserver backup HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver main -serviceName main-1\n\
         bind gslb vserver backup -serviceName backup-1\n\
         bind gslb vserver main -domainName main.example.com -TTL 5\n\
         bind gslb vserver backup -domainName backup.example.com -TTL 5\n",
        net.conf_preamble(),
        net.svc_ip(1),
        net.svc_ip(2),
    );
    let server = Server::start(SEXTANT, &net, Syntax::Conf, &conf);
    b.open(&format!("http://{}/ui/#domains", net.api_addr()));
    b.wait_for("[data-domain=\"main.example.com\"]", PAGE);
    let dns = Dns::new(net.dns_addr());
    let main = "[data-domain=\"main.example.com\"]";
    let backup = "[data-domain=\"backup.example.com\"]";
    let share = |b: &mut Browser, domain: &str, service: &str| {
        b.attr(
            &format!("{domain} [data-share-service=\"{service}\"]"),
            "data-share",
        )
    };
    let answers = |b: &mut Browser, domain: &str| {
        b.attr(domain, "data-answers")
            .and_then(|a| a.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // Queries while the page samples the counters (bounded: 400 rounds).
    let mut seen = String::new();
    for round in 0..400 {
        let _ = dns.try_udp_from(None, &build_query("main.example.com", RecordType::A, None));
        for _ in 0..3 {
            let _ = dns.try_udp_from(
                None,
                &build_query("backup.example.com", RecordType::A, None),
            );
        }
        std::thread::sleep(Duration::from_millis(40));
        if round % 10 != 9 {
            continue;
        }
        let (m, bk) = (answers(&mut b, main), answers(&mut b, backup));
        let own = share(&mut b, main, "main-1");
        let borrowed = share(&mut b, main, "backup-1");
        seen = format!(
            "main: {m} answers, main-1 {own:?}, backup-1 {borrowed:?}; backup: {bk} answers; text {:?}",
            b.text(&format!("{main} [data-field=\"answers\"]"))
        );
        if m >= 20 && bk >= 2 * m && own.as_deref() == Some("1.0000") {
            break;
        }
    }
    println!("{seen}");
    assert_eq!(
        share(&mut b, main, "main-1").as_deref(),
        Some("1.0000"),
        "{seen}"
    );
    let borrowed = share(&mut b, main, "backup-1");
    assert!(
        borrowed.is_none() || borrowed.as_deref() == Some("0.0000"),
        "the backup vserver's own answers are not main's: {seen}"
    );
    let (m, bk) = (answers(&mut b, main), answers(&mut b, backup));
    assert!(
        m > 0 && bk >= 2 * m,
        "each domain counts its own answers: {seen}"
    );
    assert_eq!(
        b.text(&format!("{main} [data-field=\"answers\"]")),
        Some(format!("{m} answers"))
    );
    b.screenshot("domain-shares");
    drop(server);
    let blocked = b.csp_violations();
    assert!(blocked.is_empty(), "CSP violations: {blocked:#?}");
}

/// What the page downloads and how big it is, from its own resource timing
/// and DOM.
struct Weight {
    /// Bytes over the wire per minute (headers and bodies as sent).
    per_minute: u64,
    requests: u64,
    dom_nodes: u64,
}

/// Measures `window` of the open page at steady state.
fn weigh(b: &mut Browser, window: Duration) -> Weight {
    b.eval("window.__from = performance.now()");
    std::thread::sleep(window);
    let got = b.eval(
        "(() => { const e = performance.getEntriesByType('resource').filter((r) => r.startTime >= window.__from); \
         return { bytes: e.reduce((s, r) => s + r.transferSize, 0), n: e.length, span: performance.now() - window.__from, \
         dom: document.getElementsByTagName('*').length }; })()",
    );
    let bytes = got["bytes"].as_f64().unwrap_or(0.0);
    let span = got["span"].as_f64().unwrap_or(1.0).max(1.0);
    Weight {
        per_minute: (bytes * 60_000.0 / span) as u64,
        requests: got["n"].as_u64().unwrap_or(0),
        dom_nodes: got["dom"].as_u64().unwrap_or(0),
    }
}

/// The services view at `n` services, 20 DOWN: summary first, problems
/// first, one page of rows, and little downloaded per minute. Returns the
/// server, the browser and what one uncompressed `/v1/services` weighs.
fn services_at_scale(test: &str, n: usize) -> Option<(Net, Server, Browser, usize)> {
    let net = Net::new(test);
    let mut b = browser(test)?;
    let server = Server::start(SEXTANT, &net, Syntax::Conf, &many(&net, n, 20, false));
    let full = server.request("GET", "/v1/services", &[], "").body.len();
    b.open(&format!("http://{}/ui/#services", net.api_addr()));
    let total = if n >= 1000 {
        format!("{},{:03}", n / 1000, n % 1000)
    } else {
        n.to_string()
    };
    let headline = "#services-summary [data-field=\"headline\"]";
    b.wait_for_text(headline, PAGE, "the summary", |t| {
        t == format!("20 of {total} DOWN")
    });
    // Problems first: the DOWN services (the last 20 by name) lead.
    b.wait_for_text(
        "#services-body tr:first-child [data-field=\"state\"]",
        PAGE,
        "a DOWN service first",
        |t| t == "DOWN",
    );
    let rows = b
        .eval("document.querySelectorAll('#services-body tr').length")
        .as_u64()
        .unwrap_or(0) as usize;
    assert_eq!(rows, PAGE_ROWS, "one page of rows");
    b.screenshot(&format!("services-{n}"));
    let w = weigh(&mut b, Duration::from_secs(12));
    // Polled every 2 s, the page would download `full` 30 times a minute.
    let naive = full as u64 * 30;
    println!(
        "MEASURED services view at {n} services: {} bytes/minute over the wire ({} requests in 12 s), \
         {} DOM nodes; one uncompressed /v1/services is {full} bytes ({naive} bytes/minute re-downloaded every 2 s)",
        w.per_minute, w.requests, w.dom_nodes
    );
    assert!(
        w.per_minute * 20 < naive,
        "{} bytes a minute is not far below {naive}",
        w.per_minute
    );
    // The DOM holds one page of rows, whatever the number of services.
    assert!(w.dom_nodes < 4000, "{} DOM nodes", w.dom_nodes);
    Some((net, server, b, full))
}

#[test]
fn at_1000_services_the_page_summarises_sorts_filters_pages_and_stays_light() {
    let Some((net, server, mut b, _)) = services_at_scale("light_1000", 1000) else {
        return;
    };
    let first = "#services-body tr:first-child";
    // A header sorts by its column, again the other way round.
    b.click("#services-head th[data-sort=\"name\"] button");
    b.wait_for_text(&format!("{first} th"), PAGE, "by name", |t| {
        t == "svc-00000"
    });
    b.click("#services-head th[data-sort=\"name\"] button");
    b.wait_for_text(&format!("{first} th"), PAGE, "by name, descending", |t| {
        t == "svc-00999"
    });
    // Pages.
    b.click("#services-pager [data-page=\"next\"]");
    b.wait_for_text(&format!("{first} th"), PAGE, "page 2", |t| t == "svc-00949");
    assert_eq!(
        b.text("#services-pager [data-field=\"range\"]").as_deref(),
        Some("51–100 of 1,000")
    );
    // The filter keeps the rows that match, on one page.
    b.type_into("#services-filter", "svc-0005");
    b.wait_for_text(
        "#services-pager [data-field=\"range\"]",
        PAGE,
        "ten matches",
        |t| t == "1–10 of 10 (of 1,000)",
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#services-body tr').length"),
        Value::from(10)
    );
    b.screenshot("filtered");
    b.eval("(() => { const f = document.getElementById('services-filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()");

    // A mass outage: every service monitored, all DOWN. The page asks for
    // the timelines of the rows it shows, not one request per service.
    b.eval("window.__outage = performance.now()");
    server.reload(&many(&net, 1000, 20, true));
    b.wait_for_text(
        "#services-summary [data-field=\"headline\"]",
        Duration::from_secs(60),
        "all DOWN",
        |t| t == "1,000 of 1,000 DOWN",
    );
    // A few polls more, for any late request.
    std::thread::sleep(Duration::from_secs(3));
    let histories = b
        .eval(
            "performance.getEntriesByType('resource').filter((r) => r.startTime >= window.__outage && r.name.includes('/history')).length",
        )
        .as_u64()
        .unwrap_or(u64::MAX);
    println!("MEASURED mass outage of 1,000 services: {histories} history requests");
    assert!(
        histories <= 2 * PAGE_ROWS as u64,
        "{histories} history requests"
    );
    b.screenshot("mass-outage");
    let blocked = b.csp_violations();
    assert!(blocked.is_empty(), "CSP violations: {blocked:#?}");
}

#[test]
fn at_10000_services_the_page_stays_one_page_and_light() {
    let Some((_net, _server, mut b, _)) = services_at_scale("light_10000", 10_000) else {
        return;
    };
    let blocked = b.csp_violations();
    assert!(blocked.is_empty(), "CSP violations: {blocked:#?}");
}

/// A page opened after something happened shows it (the stream replays
/// it); a node that stops answering is shown stale with the time of the
/// last update, its states greyed rather than left green; with metric
/// exchange off, the topology draws no mesh of links nobody reports.
#[test]
fn a_late_page_shows_past_events_a_silent_node_goes_stale_and_no_mesh_without_metric_exchange() {
    let net = Net::new("light_stale");
    let Some(mut b) = browser("light_stale") else {
        return;
    };
    let preamble = net.conf_preamble().replace(
        "-siteType LOCAL",
        "-siteType LOCAL -metricExchange DISABLED",
    );
    let conf = format!(
        "{preamble}add gslb site site2 127.0.0.2 -metricExchange DISABLED\n\
         add gslb site site3 127.0.0.3 -metricExchange DISABLED\n\
         add gslb service web1 {} HTTP 80 -siteName site1\n\
         add gslb vserver vs1 HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs1 -serviceName web1\n\
         bind gslb vserver vs1 -domainName www.example.com -TTL 5\n",
        net.svc_ip(1),
    );
    let mut server = Server::start(SEXTANT, &net, Syntax::Conf, &conf);
    let (code, answer) = server.post("/v1/services/web1/drain", r#"{"reason":"before the page"}"#);
    assert_eq!(code, 200, "{answer}");

    // No metric exchange: three sites, no links drawn.
    b.open(&format!("http://{}/ui/#topology", net.api_addr()));
    b.wait_for("g[data-site=\"site3\"]", PAGE);
    b.wait_for("#links-body tr[data-no-links]", PAGE);
    assert_eq!(
        b.eval("document.querySelectorAll('#topology line.edge').length"),
        Value::from(0),
        "no links drawn"
    );
    b.screenshot("no-metric-exchange");

    // The drain happened before the page was opened: it is shown.
    b.click("a[data-view=\"services\"]");
    b.wait_for_text("#events", PAGE, "the replayed drain", |t| {
        t.contains("maintenance: service web1 draining: before the page")
    });
    let state = "tr[data-service=\"web1\"] [data-field=\"state\"]";
    b.wait_for_text(state, PAGE, "UP", |t| t == "UP");
    let colour = format!(
        "getComputedStyle(document.querySelector('{}')).color",
        state.replace('\'', "\\'")
    );
    let green = b.eval(&colour);
    assert!(!b.shown("#stale"), "not stale while the node answers");

    // The node stops: stale, with the time of the last update, not green.
    server.stop();
    b.wait_for_text("#stale", PAGE, "the stale banner", |t| {
        t.starts_with("stale — last update ")
    });
    let text = b.text("#stale").unwrap_or_default();
    let at = text.trim_start_matches("stale — last update ");
    assert!(
        at.len() == 8 && at.as_bytes()[2] == b':' && at.as_bytes()[5] == b':',
        "HH:MM:SS: {text:?}"
    );
    assert_eq!(b.eval("document.body.dataset.stale"), Value::from("true"));
    assert_ne!(
        b.eval(&colour),
        green,
        "the UP state is greyed, not left green"
    );
    b.screenshot("stale");
}
