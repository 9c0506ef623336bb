//! Monitors as a saved appliance configuration (ns.conf) carries them,
//! against the real binary and real backends: the built-in `http` monitor
//! changed by `set lb monitor` (with `\r\n` escapes in its headers),
//! `-reverse YES`, `-destIP`/`-destPort` and `-downTime`.

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));
use std::fmt::Write as _;
use std::thread::sleep;
use std::time::Duration;

/// Requests a backend received in `window`.
fn requests_during(backend: &Backend, window: Duration) -> usize {
    let before = backend.requests().len();
    sleep(window);
    backend.requests().len() - before
}

#[test]
fn a_saved_configuration_drives_built_in_reverse_and_dest_ip_monitors() {
    let net = Net::new("monitors_saved_conf");
    let web = Backend::http(net.svc_ip(0));
    let maint = Backend::http(net.svc_ip(1));
    let dependency = Backend::tcp(net.svc_ip(3));
    let own_port = Net::closed_port(net.svc_ip(2));
    let mut c = net.conf_preamble();
    // As a saved file writes it: the built-in monitor, its type after the
    // name, and its headers with \r\n escapes.
    c.push_str(
        "set lb monitor http HTTP -respCode 200 -httpRequest \"GET /health\" -customHeaders \"Host: www.example.com\\r\\nX-Check: sextant\\r\\n\" -LRTM DISABLED -deviation 0 -interval 200 MSEC -resptimeout 100 MSEC -downTime 30\n",
    );
    c.push_str(
        "add lb monitor mon-maint HTTP-ECV -send \"GET /maintenance HTTP/1.1\\r\\nHost: app.example.com\\r\\n\\r\\n\" -recv OK -LRTM DISABLED -reverse YES -transparent NO -interval 200 MSEC -resptimeout 100 MSEC -retries 1\n",
    );
    writeln!(
        c,
        "add lb monitor mon-dep TCP -LRTM DISABLED -destIP {} -destPort {} -interval 200 MSEC -resptimeout 100 MSEC -retries 1",
        dependency.ip(),
        dependency.port()
    )
    .unwrap();
    for (name, ip, port, monitor) in [
        ("s-web", web.ip(), web.port(), "http"),
        ("s-maint", maint.ip(), maint.port(), "mon-maint"),
        ("s-dep", net.svc_ip(2), own_port, "mon-dep"),
    ] {
        writeln!(
            c,
            "add gslb service {name} {ip} HTTP {port} -siteName site1\nbind gslb service {name} -monitorName {monitor}"
        )
        .unwrap();
    }
    c.push_str(
        "add gslb vserver vs_app HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs_app -serviceName s-web\n\
         bind gslb vserver vs_app -serviceName s-maint\n\
         bind gslb vserver vs_app -domainName app.example.com -TTL 5\n",
    );
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);

    // The built-in http monitor, as changed: the request and the headers
    // the operator meant, one Host header, CR LF line ends.
    eventually(EVENTUALLY, "the http monitor probed s-web", || {
        !web.request_heads().is_empty()
    });
    s.wait_state("s-web", State::Up);
    let head = web.request_heads().remove(0);
    assert!(
        head.starts_with("GET /health HTTP/1.1\r\nHost: www.example.com\r\nX-Check: sextant\r\n"),
        "{head:?}"
    );
    assert_eq!(head.matches("Host:").count(), 1, "{head:?}");
    let svc = s.service("s-web").expect("s-web");
    assert_eq!(svc.monitors[0].name, "http");

    // -reverse YES: the maintenance page answers OK, so the service is
    // DOWN and not answered; the HTTP-ECV -send went out verbatim.
    s.wait_state("s-maint", State::Down);
    eventually(EVENTUALLY, "mon-maint probed s-maint", || {
        !maint.request_heads().is_empty()
    });
    assert_eq!(
        maint.request_heads()[0],
        "GET /maintenance HTTP/1.1\r\nHost: app.example.com\r\n\r\n"
    );
    let reason = s.service("s-maint").unwrap().reason;
    assert!(reason.contains("reverse monitor"), "{reason}");
    eventually(EVENTUALLY, "only s-web answered", || {
        let seen = s.dns.sample_a("app.example.com", 8);
        !seen.is_empty() && seen.iter().all(|ip| *ip == web.ip())
    });
    // The page goes away: UP.
    let maint_ip = maint.ip();
    maint.kill();
    s.wait_state("s-maint", State::Up);
    eventually(EVENTUALLY, "s-maint answered", || {
        s.dns.sample_a("app.example.com", 12).contains(&maint_ip)
    });

    // -destIP/-destPort: s-dep's own port is closed, but its monitor
    // watches the dependency, so it is UP until the dependency goes.
    s.wait_state("s-dep", State::Up);
    dependency.kill();
    s.wait_state("s-dep", State::Down);
}

/// `-downTime`: a DOWN service is probed every downTime (2 s), not every
/// interval (200 ms), and comes back UP at the next of those probes.
#[test]
fn a_down_service_is_probed_every_down_time() {
    let net = Net::new("monitors_down_time");
    let paced = Backend::http(net.svc_ip(0));
    let unpaced = Backend::http(net.svc_ip(1));
    paced.set_status(503);
    unpaced.set_status(503);
    let mut c = net.conf_preamble();
    c.push_str(
        "add lb monitor mon-paced HTTP -httpRequest \"GET /health\" -interval 200 MSEC -resptimeout 100 MSEC -retries 1 -downTime 2\n\
         add lb monitor mon-unpaced HTTP -httpRequest \"GET /health\" -interval 200 MSEC -resptimeout 100 MSEC -retries 1\n",
    );
    for (name, be, monitor) in [
        ("s-paced", &paced, "mon-paced"),
        ("s-unpaced", &unpaced, "mon-unpaced"),
    ] {
        writeln!(
            c,
            "add gslb service {name} {} HTTP {} -siteName site1\nbind gslb service {name} -monitorName {monitor}",
            be.ip(),
            be.port()
        )
        .unwrap();
    }
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    s.wait_state("s-paced", State::Down);
    s.wait_state("s-unpaced", State::Down);

    // Over 5 s: about 2-3 probes at the 2 s pace, about 25 at 200 ms. The
    // bounds are loose so a slow machine cannot fail them.
    let (paced_n, unpaced_n) = std::thread::scope(|t| {
        let p = t.spawn(|| requests_during(&paced, Duration::from_secs(5)));
        let u = t.spawn(|| requests_during(&unpaced, Duration::from_secs(5)));
        (p.join().unwrap(), u.join().unwrap())
    });
    assert!(
        (1..=4).contains(&paced_n),
        "DOWN with -downTime 2: {paced_n} probes in 5 s"
    );
    assert!(
        unpaced_n >= 10,
        "DOWN without -downTime: {unpaced_n} probes in 5 s"
    );

    // Healthy again: UP at the next downTime probe.
    paced.set_status(200);
    s.wait_state("s-paced", State::Up);
}
