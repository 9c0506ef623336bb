//! A configuration applied over the API (`GET /v1/config`, `PUT
//! /v1/config`) end to end: the real `sextant serve`, its configuration
//! file on disk, and DNS answers over real sockets before and after.

use std::fs;
use std::net::Ipv4Addr;

use sextant_test_support::prelude::*;

/// The binary under test.
const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

const CONFIG: &str = "/v1/config";

/// One site, one vserver answering www.example.com with two services:
/// web1 (unmonitored, UP) and web2, whose monitor finds its port closed
/// (DOWN) on `closed_port`.
fn config(net: &Net, closed_port: u16) -> String {
    let web2 = net.svc_ip(2);
    format!(
        "{}add lb monitor tcp TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2\n\
         add gslb service web1 {} HTTP 80 -siteName site1\n\
         add gslb service web2 {web2} TCP {} -siteName site1\n\
         bind gslb service web2 -monitorName tcp\n\
         add gslb vserver vs1 HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs1 -serviceName web1\n\
         bind gslb vserver vs1 -serviceName web2\n\
         bind gslb vserver vs1 -domainName www.example.com -TTL 5\n",
        net.conf_preamble(),
        net.svc_ip(1),
        closed_port
    )
}

/// The same with a second domain on the vserver.
fn with_api_domain(net: &Net, closed_port: u16) -> String {
    config(net, closed_port) + "bind gslb vserver vs1 -domainName api.example.com -TTL 5\n"
}

fn apply(r: &Reply) -> ConfigApply {
    assert_eq!(r.status, 200, "{r:?}");
    serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("not a ConfigApply ({e}): {r:?}"))
}

/// What must hold while the configuration has not changed.
fn unchanged(site: &SiteServer, text: &str, generation: u64) {
    assert_eq!(
        fs::read_to_string(&site.config).unwrap(),
        text,
        "the file changed"
    );
    assert_eq!(site.status().generation, generation, "the generation moved");
    assert!(
        site.query_a("api.example.com").is_empty(),
        "api.example.com answers"
    );
}

#[test]
fn a_configuration_put_over_the_api_is_checked_shown_applied_and_kept() {
    let net = Net::new("api_config_conf");
    let scratch = net.scratch();
    let port = Net::closed_port(net.svc_ip(2));
    let text = config(&net, port);
    let mut site = SiteServer::start(SEXTANT, &scratch.0, "site1", net.server_ip(), &text, None);
    let web = vec![net.svc_ip(1)];
    assert!(
        wait_until(EVENTUALLY, || site
            .expect_service("web2", State::Down)
            .is_ok()),
        "web2 is not DOWN: {:?}",
        site.try_service("web2")
    );
    assert_eq!(site.query_a("www.example.com"), web);
    let generation = site.status().generation;

    // The text holds the configuration's secrets: never an open read.
    let r = site.request("GET", CONFIG, &[("Authorization", "Basic x")], "");
    assert_eq!(r.status, 401, "{r:?}");

    // GET: the running text, its generation as the ETag.
    let r = site.request("GET", CONFIG, &[], "");
    assert_eq!((r.status, r.body.as_str()), (200, text.as_str()));
    assert_eq!(r.header("ETag"), Some(format!("\"{generation}\"").as_str()));

    // A dry run shows the difference and changes nothing.
    let new = with_api_domain(&net, port);
    let dry = apply(&site.put(&format!("{CONFIG}?dry_run=1"), &[], &new));
    assert!(!dry.applied);
    assert_eq!(dry.generation, generation);
    assert_eq!(dry.diff.added, ["domain api.example.com"]);
    assert!(
        dry.diff.removed.is_empty() && dry.diff.changed.is_empty(),
        "{dry:?}"
    );
    unchanged(&site, &text, generation);

    // Without the token: 401, nothing changes.
    let r = site.request(
        "PUT",
        CONFIG,
        &[("Authorization", "Bearer not-the-token-0123456789")],
        &new,
    );
    assert_eq!(r.status, 401, "{r:?}");
    unchanged(&site, &text, generation);

    // An invalid text: every error as FILE:LINE, nothing changes.
    let bad = format!("{new}bind gslb vserver nosuch -serviceName web1\n");
    let bad_line = bad.lines().count();
    let r = site.put(CONFIG, &[], &bad);
    assert_eq!(r.status, 400, "{r:?}");
    let rejected: ConfigRejected = serde_json::from_str(&r.body).unwrap();
    let at = format!("{}:{bad_line}: ", site.config.display());
    assert!(
        rejected.errors.iter().any(|e| e.starts_with(&at)),
        "no error at {at}: {rejected:?}"
    );
    unchanged(&site, &text, generation);

    // A stale writer: 409, nothing changes.
    let stale = format!("\"{}\"", generation + 5);
    let r = site.put(CONFIG, &[("If-Match", stale.as_str())], &new);
    assert_eq!(r.status, 409, "{r:?}");
    unchanged(&site, &text, generation);

    // Applied: the new domain answers at once, the file holds the text.
    let current = format!("\"{generation}\"");
    let done = apply(&site.put(CONFIG, &[("If-Match", current.as_str())], &new));
    assert!(done.applied);
    assert_eq!(done.generation, generation + 1);
    assert_eq!(done.diff.added, ["domain api.example.com"]);
    assert_eq!(site.status().generation, generation + 1);
    // Health carried over, as at a reload: web2 is DOWN at once, so it is
    // never answered.
    assert_eq!(site.service("web2").state, State::Down);
    for _ in 0..4 {
        assert_eq!(site.query_a("api.example.com"), web);
        assert_eq!(site.query_a("www.example.com"), web);
    }
    assert_eq!(fs::read_to_string(&site.config).unwrap(), new);
    assert_eq!(site.request("GET", CONFIG, &[], "").body, new);

    // The old generation is stale now.
    let r = site.put(CONFIG, &[("If-Match", current.as_str())], &text);
    assert_eq!(r.status, 409, "{r:?}");

    // A restart reads the file the API wrote.
    site.stop();
    site.restart();
    assert_eq!(site.query_a("api.example.com"), web);
    assert!(site.log().contains("configuration applied over the API"));
}

#[test]
fn a_toml_configuration_is_put_in_its_own_syntax() {
    let net = Net::new("api_config_toml");
    let svc = net.svc_ip(1);
    let service = |name: &str, ip: Ipv4Addr| {
        format!(
            "\n[[service]]\nname = \"{name}\"\nip = \"{ip}\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"site1\"\n"
        )
    };
    let vserver = |services: &str| {
        format!(
            "\n[[vserver]]\nname = \"vs1\"\nprotocol = \"HTTP\"\nlb_method = \"ROUNDROBIN\"\nservices = [{services}]\ndomains = [{{ name = \"www.example.com\", ttl = 5 }}]\n"
        )
    };
    let text = format!(
        "{}{}{}",
        net.toml_preamble(),
        service("web1", svc),
        vserver("{ name = \"web1\" }")
    );
    let s = Server::start(SEXTANT, &net, Syntax::Toml, &text);
    assert_eq!(s.dns.query_a("www.example.com"), vec![svc]);
    let generation = s.status().generation;

    let web2 = net.svc_ip(2);
    let new = format!(
        "{}{}{}{}",
        net.toml_preamble(),
        service("web1", svc),
        service("web2", web2),
        vserver("{ name = \"web1\" }, { name = \"web2\" }")
    );
    let bad = new.replace("port = 80", "port = 99999");
    let r = s.put(CONFIG, &[], &bad);
    assert_eq!(r.status, 400, "{r:?}");
    let rejected: ConfigRejected = serde_json::from_str(&r.body).unwrap();
    let file = format!("{}:", s.config.display());
    assert!(
        rejected.errors.iter().all(|e| e.starts_with(&file)),
        "{rejected:?}"
    );
    assert_eq!(s.status().generation, generation);

    let done = apply(&s.put(CONFIG, &[], &new));
    assert!(done.applied, "{done:?}");
    assert_eq!(done.diff.added, ["service web2"]);
    assert_eq!(done.diff.changed, ["vserver vs1"]);
    assert_eq!(fs::read_to_string(&s.config).unwrap(), new);
    let mut seen = s.dns.query_a("www.example.com");
    for _ in 0..4 {
        seen.extend(s.dns.query_a("www.example.com"));
    }
    assert!(seen.contains(&web2), "web2 never answered: {seen:?}");
}
