//! `GET /v1/openapi.json` against the running server: every documented
//! path is asked (writes with valid bodies), every answer's status must be
//! one the description lists, and every JSON body must validate against
//! the schema it documents. docs/api.md and the description list the same
//! endpoints.

use std::time::Duration;

use serde_json::{Value, json};
use sextant_test_support::http::bearer;
use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

fn config(net: &Net) -> String {
    let mut c = net.conf_preamble();
    c += &format!(
        "add gslb service web-1 {s0} HTTP 80 -siteName site1\n\
         add gslb service web-2 {s1} HTTP 80 -siteName site1\n\
         add gslb vserver vs_app HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs_app -serviceName web-1\n\
         bind gslb vserver vs_app -serviceName web-2\n\
         bind gslb vserver vs_app -domainName app.example.com -TTL 30\n",
        s0 = net.svc_ip(0),
        s1 = net.svc_ip(1),
    );
    c
}

/// The request to make for a documented path and method: the path with
/// its parameters filled in, and a body for writes.
fn request_for(path: &str, method: &str) -> (String, Option<Value>) {
    match (method, path) {
        ("get", "/v1/explain") => (
            "/v1/explain?name=app.example.com&client=192.0.2.1".to_string(),
            None,
        ),
        ("post", "/v1/services/{name}/metrics") => (
            "/v1/services/web-1/metrics".to_string(),
            Some(json!({"connections": 3})),
        ),
        ("post", "/v1/site/figures") => (path.to_string(), Some(json!({"cpu_percent": 12.5}))),
        // The running configuration itself, as a dry run.
        ("put", "/v1/config") => ("/v1/config?dry_run=1".to_string(), Some(Value::Null)),
        // A single site syncs with nobody: the answer is the documented 409.
        ("post", "/v1/config/sync") => (path.to_string(), Some(json!({"preview": true}))),
        // A configuration command that changes nothing, then its save.
        ("post", "/v1/config/commands") => (
            path.to_string(),
            Some(json!({"command": "set gslb vserver vs_app -lbMethod ROUNDROBIN"})),
        ),
        ("post", "/v1/config/save") => (path.to_string(), Some(json!({}))),
        ("get", "/v1/services/{name}/history") => ("/v1/services/web-1/history".to_string(), None),
        ("post", p)
            if p.ends_with("/disable") || p.ends_with("/enable") || p.ends_with("/drain") =>
        {
            let name = if p.starts_with("/v1/vservers/") {
                "vs_app"
            } else if p.starts_with("/v1/sites/") {
                "site1"
            } else {
                "web-2"
            };
            (
                p.replace("{name}", name),
                Some(json!({"reason": "openapi walk"})),
            )
        }
        ("get", p) if !p.contains('{') => (p.to_string(), None),
        _ => panic!(
            "tests/openapi.rs does not know how to ask {method} {path}: add it to request_for"
        ),
    }
}

/// The head of the response to `GET uri` (for a stream that never ends).
fn stream_head(addr: std::net::SocketAddr, uri: &str) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    write!(c, "GET {uri} HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("send");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && c.read(&mut byte).is_ok_and(|n| n == 1) {
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Validates `body` against `schema` (which may `$ref` the description's
/// components).
fn check(doc: &Value, schema: &Value, body: &Value, what: &str) {
    let wrapped = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "components": doc["components"],
        "allOf": [schema],
    });
    let validator = jsonschema::validator_for(&wrapped)
        .unwrap_or_else(|e| panic!("{what}: the documented schema does not compile: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what}: the answer does not match its documented schema:\n{}\nbody: {body}",
        errors.join("\n")
    );
}

#[test]
fn every_documented_endpoint_answers_as_documented() {
    let net = Net::new("openapi");
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net));
    let (code, doc) = s.api("/v1/openapi.json");
    assert_eq!(code, 200);
    assert!(
        doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")),
        "{doc}"
    );
    let paths = doc["paths"].as_object().expect("paths");
    assert!(paths.len() >= 12, "{paths:?}");

    let mut asked = 0;
    for (path, item) in paths {
        for (method, op) in item.as_object().expect("path item") {
            let (uri, body) = request_for(path, method);
            let what = format!("{} {uri}", method.to_uppercase());
            let token = s.token.as_deref();
            if uri == "/v1/events" {
                // A stream that never ends: its head only.
                let head = stream_head(net.api_addr(), &uri);
                assert!(head.starts_with("HTTP/1.1 200"), "{what}: {head}");
                assert!(
                    head.to_ascii_lowercase()
                        .contains("content-type: text/event-stream"),
                    "{what}: {head}"
                );
                asked += 1;
                continue;
            }
            let (status, text) = match &body {
                None => http_get_as(net.api_addr(), &uri, token, Duration::from_secs(5)),
                Some(Value::Null) => {
                    let (_, running) =
                        http_get_as(net.api_addr(), "/v1/config", token, Duration::from_secs(5))
                            .unwrap_or_else(|e| panic!("GET /v1/config: {e}"));
                    let auth = bearer(token).unwrap_or_default();
                    http_request(
                        net.api_addr(),
                        "PUT",
                        &uri,
                        &[("Authorization", &auth)],
                        &running,
                    )
                    .map(|r| (r.status, r.body))
                }
                Some(b) => http_send_json(
                    net.api_addr(),
                    method.to_uppercase().as_str(),
                    &uri,
                    &b.to_string(),
                    token,
                ),
            }
            .unwrap_or_else(|e| panic!("{what}: {e}"));
            let responses = &op["responses"];
            let documented = &responses[status.to_string()];
            assert!(
                documented.is_object(),
                "{what} answered {status}, which the description does not list ({responses}): {text}"
            );
            if let Some(schema) = documented["content"]["application/json"].get("schema") {
                let value: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {text}"));
                check(&doc, schema, &value, &what);
            }
            asked += 1;
        }
    }
    assert!(asked >= paths.len(), "asked {asked}");

    // Every operation refuses a parameter it does not document, with a
    // documented 400 naming it, before it does anything.
    for (path, item) in paths {
        for (method, op) in item.as_object().expect("path item") {
            let (uri, _) = request_for(path, method);
            let sep = if uri.contains('?') { '&' } else { '?' };
            let uri = format!("{uri}{sep}no_such_parameter=1");
            let what = format!("{} {uri}", method.to_uppercase());
            let auth = bearer(s.token.as_deref()).unwrap_or_default();
            let r = http_request(
                net.api_addr(),
                &method.to_uppercase(),
                &uri,
                &[("Authorization", &auth)],
                "",
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(r.status, 400, "{what}: {r:?}");
            assert!(r.body.contains("no_such_parameter"), "{what}: {r:?}");
            let documented = &op["responses"]["400"];
            assert!(documented.is_object(), "{what}: 400 is not documented");
            let schema = &documented["content"]["application/json"]["schema"];
            let value: Value = serde_json::from_str(&r.body).expect("JSON");
            check(&doc, schema, &value, &what);
        }
    }

    // A wrong answer must fail the check: the test can fail.
    let status_schema = json!({"$ref": "#/components/schemas/Status"});
    let bad = json!({"version": 1});
    let wrapped = json!({"components": doc["components"], "allOf": [status_schema]});
    assert!(
        !jsonschema::validator_for(&wrapped).unwrap().is_valid(&bad),
        "a Status without its fields validates: the check proves nothing"
    );

    // docs/api.md documents the same endpoints, no more, no fewer.
    let api_md = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/api.md"))
        .expect("docs/api.md");
    // Each endpoint is a heading "## `METHOD /path`" or, in a section of
    // several, a table row "| `METHOD /path` | ...".
    let mut in_docs: Vec<String> = api_md
        .lines()
        .filter_map(|l| l.strip_prefix("## `").or_else(|| l.strip_prefix("| `")))
        .filter_map(|l| l.split('`').next())
        .filter(|h| h.starts_with("GET ") || h.starts_with("POST ") || h.starts_with("PUT "))
        .map(|h| {
            let mut words = h.split_whitespace();
            let method = words.next().unwrap_or("").to_lowercase();
            let path = words.next().unwrap_or("");
            let path = path.split(['?', '[']).next().unwrap_or("");
            let path = path.replace("NAME", "{name}");
            format!("{method} {path}")
        })
        .collect();
    in_docs.dedup();
    in_docs.sort();
    let mut described: Vec<String> = paths
        .iter()
        .flat_map(|(p, item)| {
            item.as_object()
                .into_iter()
                .flat_map(|m| m.keys())
                .map(move |m| format!("{m} {p}"))
        })
        .collect();
    described.sort();
    assert_eq!(
        in_docs, described,
        "docs/api.md's endpoints and /v1/openapi.json's differ"
    );
}
