//! Writes the checked-in seed corpus, fuzz/corpus/<target>/: real, valid
//! inputs built by the project's own encoders (DNS queries, MEP frames,
//! VRRP adverts, monitor responses) or taken from its examples and docs
//! (configurations, policy expressions, Prometheus text). Run it again when
//! a format changes:
//!
//!   cargo run -p sextant-fuzz-harness --example write_seeds
//!
//! It replaces the seed directories wholesale; tests/corpus.rs then runs
//! every seed through its target.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Seeds {
    dir: PathBuf,
}

impl Seeds {
    fn new(target: &str) -> Seeds {
        let dir = root().join("fuzz/corpus").join(target);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Seeds { dir }
    }

    fn add(&self, name: &str, data: impl AsRef<[u8]>) {
        std::fs::write(self.dir.join(name), data).unwrap();
    }
}

// ---------------------------------------------------------------------------
// DNS queries

fn name_wire(name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for label in name.split('.').filter(|l| !l.is_empty()) {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out
}

/// A query: id, flags, the question, then the additional records given.
fn query(id: u16, flags: u16, name: &str, qtype: u16, additional: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&[0, 1, 0, 0, 0, 0]);
    out.extend_from_slice(&(additional.len() as u16).to_be_bytes());
    out.extend_from_slice(&name_wire(name));
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    for rr in additional {
        out.extend_from_slice(rr);
    }
    out
}

/// An OPT record: payload size, version, DO, options (code, data).
fn opt(payload: u16, version: u8, dnssec_ok: bool, options: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut rdata = Vec::new();
    for (code, data) in options {
        rdata.extend_from_slice(&code.to_be_bytes());
        rdata.extend_from_slice(&(data.len() as u16).to_be_bytes());
        rdata.extend_from_slice(data);
    }
    let mut out = vec![0];
    out.extend_from_slice(&41u16.to_be_bytes());
    out.extend_from_slice(&payload.to_be_bytes());
    out.extend_from_slice(&[0, version, if dnssec_ok { 0x80 } else { 0 }, 0]);
    out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    out.extend_from_slice(&rdata);
    out
}

/// A Client Subnet option's data.
fn ecs(family: u16, prefix: u8, addr: &[u8]) -> (u16, Vec<u8>) {
    let mut data = family.to_be_bytes().to_vec();
    data.extend_from_slice(&[prefix, 0]);
    data.extend_from_slice(&addr[..usize::from(prefix).div_ceil(8)]);
    (8, data)
}

fn dns_queries() -> Vec<(&'static str, Vec<u8>)> {
    const RD: u16 = 0x0100;
    let cookie = (10u16, vec![1, 2, 3, 4, 5, 6, 7, 8]);
    let nsid = (3u16, Vec::new());
    vec![
        ("a_www", query(1, RD, "www.example.com", 1, &[])),
        ("aaaa_www_upper", query(2, 0, "WWW.Example.COM", 28, &[])),
        ("a_big_no_edns", query(3, 0, "big.example.com", 1, &[])),
        (
            "a_big_edns4096",
            query(4, 0, "big.example.com", 1, &[opt(4096, 0, false, &[])]),
        ),
        (
            "a_big_edns1232_do",
            query(5, 0, "big.example.com", 1, &[opt(1232, 0, true, &[])]),
        ),
        (
            "a_ecs_v4_24",
            query(
                6,
                0,
                "ecs.example.com",
                1,
                &[opt(1232, 0, false, &[ecs(1, 24, &[198, 51, 100, 7])])],
            ),
        ),
        (
            "a_ecs_v6_56",
            query(
                7,
                0,
                "ecs.example.com",
                1,
                &[opt(
                    1232,
                    0,
                    false,
                    &[ecs(2, 56, &[0x20, 0x01, 0x0d, 0xb8, 0, 1, 2, 0])],
                )],
            ),
        ),
        (
            "a_cookie_nsid",
            query(
                8,
                0,
                "www.example.com",
                1,
                &[opt(1232, 0, false, &[cookie, nsid])],
            ),
        ),
        ("a_sticky", query(9, 0, "sticky.example.com", 1, &[])),
        ("soa_apex", query(10, 0, "example.com", 6, &[])),
        ("ns_apex", query(11, 0, "example.com", 2, &[])),
        ("any_www", query(12, 0, "www.example.com", 255, &[])),
        ("type65535_www", query(13, 0, "www.example.com", 65535, &[])),
        ("a_nxdomain", query(14, 0, "nope.example.com", 1, &[])),
        ("a_outside_zone", query(15, 0, "example.org", 1, &[])),
        ("opcode15", query(16, 15 << 11, "www.example.com", 1, &[])),
        (
            "edns_version1",
            query(17, 0, "www.example.com", 1, &[opt(1232, 1, false, &[])]),
        ),
        (
            "two_opt",
            query(
                18,
                0,
                "www.example.com",
                1,
                &[opt(1232, 0, false, &[]), opt(512, 0, false, &[])],
            ),
        ),
        ("qr_set", query(19, 0x8000, "www.example.com", 1, &[])),
        ("root_ns", query(20, 0, "", 2, &[])),
    ]
}

// ---------------------------------------------------------------------------
// Text taken from the repository

/// The fenced blocks of the Markdown files under docs/ and README.md whose
/// opening fence carries `tag` ("" for none) and whose text passes `keep`.
fn doc_blocks(tag: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.push(root().join("README.md"));
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut block: Option<String> = None;
        for line in text.lines() {
            match (&mut block, line.trim_start().strip_prefix("```")) {
                (None, Some(t)) => {
                    if t.trim() == tag {
                        block = Some(String::new());
                    } else {
                        // Skip to this block's end: mark with a sentinel.
                        block = Some("\0skip".into());
                    }
                }
                (Some(b), Some(_)) => {
                    if !b.starts_with("\0skip") && keep(b) {
                        out.push(std::mem::take(b));
                    }
                    block = None;
                }
                (Some(b), None) => {
                    b.push_str(line);
                    b.push('\n');
                }
                (None, None) => {}
            }
        }
    }
    out
}

fn copy_files(seeds: &Seeds, paths: &[&str]) {
    for p in paths {
        let name = p.replace('/', "_");
        seeds.add(&name, std::fs::read(root().join(p)).unwrap());
    }
}

fn configs() {
    let s = Seeds::new("config_appliance");
    copy_files(
        &s,
        &[
            "examples/sextant.conf",
            "crates/sextant/src/demo.conf",
            "docs/examples/prefloc.conf",
            "tests/appliance-configs/dc1-ns.conf",
            "tests/appliance-configs/dc1.sextant.conf",
            "tests/appliance-configs/child-eu-ns.conf",
            "tests/appliance-configs/child-eu.sextant.conf",
        ],
    );
    let commands = |b: &str| {
        b.lines()
            .any(|l| ["add ", "set ", "bind "].iter().any(|c| l.starts_with(c)))
    };
    for (i, b) in doc_blocks("", commands).iter().take(40).enumerate() {
        s.add(&format!("docs_block_{i:02}.conf"), b);
    }

    let s = Seeds::new("config_native");
    copy_files(&s, &["examples/sextant.toml"]);
    for (i, b) in doc_blocks("toml", |_| true).iter().enumerate() {
        s.add(&format!("docs_block_{i:02}.toml"), b);
    }
}

fn policy_exprs() {
    let s = Seeds::new("policy_expr");
    let exprs = [
        r#"CLIENT.IP.SRC.MATCHES_LOCATION("\*.ZMB.\*.*")"#,
        r#"CLIENT.IP.SRC.MATCHES_LOCATION("North America.US.*")"#,
        "CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8)",
        "CLIENT.IP.SRC.IN_SUBNET(2001:db8::/32).NOT",
        "CLIENT.IP.SRC.EQ(10.1.2.3)",
        "CLIENT.IP.SRC.EQ(2001:db8::1)",
        r#"DNS.REQ.QUESTION.DOMAIN.EQ("www.example.com")"#,
        r#"DNS.REQ.QUESTION.DOMAIN.ENDSWITH("example.com.")"#,
        "DNS.REQ.QUESTION.TYPE.EQ(A)",
        "DNS.REQ.QUESTION.TYPE.EQ(TYPE65)",
        "DNS.REQ.QUESTION.TYPE.EQ(AAAA) && !CLIENT.IP.SRC.IN_SUBNET(2001:db8::/32)",
        r#"DNS.REQ.QUESTION.DOMAIN.EQ("www.example.com") || CLIENT.IP.SRC.MATCHES_LOCATION("North America.US")"#,
        "(true || false) && !(CLIENT.IP.SRC.IN_SUBNET(192.168.0.0/16).NOT.NOT)",
        r#"dns.req.question.domain.eq("a\"b\\c")"#,
        "CLIENT.IP.SRC.IN_SUBNET(10.1.2.3/8) and true",
        "CLIENT.IP.SRC.FOO(1)",
    ];
    for (i, e) in exprs.iter().enumerate() {
        s.add(&format!("expr_{i:02}"), e);
    }
}

// ---------------------------------------------------------------------------
// Metric exchange

fn mep_messages() -> Vec<sextant_mep::Message> {
    use sextant_mep::message::*;
    vec![
        Message::Hello(Hello {
            site: "siteA".into(),
            ip: "127.0.0.1".parse().unwrap(),
            role: Role::Flat,
            generation: 7,
            nonce: "ab".repeat(32),
            acting_for: Some("P1".into()),
            protocol: 1,
        }),
        Message::AuthProof(AuthProof {
            hmac: "00ff".into(),
        }),
        Message::ServiceStates(ServiceStates {
            seq: 3,
            full: false,
            part: 0,
            last: true,
            removed: vec![ServiceKey {
                ip: "10.0.0.9".parse().unwrap(),
                port: 8080,
            }],
            entries: vec![ServiceEntry {
                service: "s1".into(),
                ip: "::1".parse().unwrap(),
                port: 443,
                public_ip: Some("2001:db8::1".parse().unwrap()),
                public_port: Some(8443),
                state: ServiceState::Down,
                metrics: LoadMetrics {
                    connections: Some(1),
                    response_time_ms: Some(2.5),
                    bandwidth_bps: Some(3),
                    packets_ps: Some(4),
                    custom_load: Some(5),
                    cpu_percent: Some(6),
                    memory_percent: Some(7),
                    requests_ps: Some(8),
                    new_sessions_ps: Some(9),
                    healthy_backends: Some(10),
                },
            }],
        }),
        Message::SiteMetrics(SiteMetrics {
            cpu_percent: Some(12.5),
            memory_percent: None,
            bandwidth_bps: Some(1_000_000),
            packet_loss_percent: Some(0.1),
            links: vec![PeerLink {
                site: "P2".into(),
                kind: "peer".into(),
                up: true,
            }],
        }),
        Message::LdnsRtt(LdnsRtt {
            entries: vec![LdnsRttEntry {
                prefix: "198.51.100.0/24".into(),
                rtt_us: Some(1234),
                probe: None,
                hops: Some(3),
                ttl: Some(61),
                loss_permille: Some(100),
                mos_centi: Some(412),
                queried: true,
                removed: false,
            }],
        }),
        Message::Sessions(Sessions {
            entries: vec![SessionEntry {
                vserver: "vs".into(),
                client: "198.51.100.0/24".into(),
                service: "s1".into(),
                expires_in_s: 60,
            }],
        }),
        Message::BackupParents(BackupParents {
            parent: "P1".into(),
            list: vec![SiteAddr {
                name: "P2".into(),
                ip: "127.0.0.2".parse().unwrap(),
            }],
        }),
        Message::Keepalive(Keepalive { sent_at_ms: 99 }),
        Message::KeepaliveAck(KeepaliveAck { echo: 99 }),
        Message::Reject(Reject {
            reason: "no".into(),
        }),
        Message::AcceptParent(AcceptParent {
            parent: "P2".into(),
        }),
        Message::ChildReport(ChildReport {
            child: "c1".into(),
            up: true,
            services: Some(vec![]),
            states: Some(ServiceStates {
                seq: 1,
                full: true,
                part: 2,
                last: false,
                entries: vec![],
                removed: vec![],
            }),
            site_metrics: Some(SiteMetrics::default()),
        }),
    ]
}

fn mep() {
    use sextant_mep::frame::encode_to_vec;
    let s = Seeds::new("mep_frames");
    let frames: Vec<Vec<u8>> = mep_messages()
        .iter()
        .map(|m| encode_to_vec(m, sextant_mep::DEFAULT_MAX_FRAME).unwrap())
        .collect();
    for (i, f) in frames.iter().enumerate() {
        // The first byte is where the target cuts the stream.
        let cut = u8::try_from(f.len() / 2).unwrap_or(u8::MAX);
        let mut data = vec![cut];
        data.extend_from_slice(f);
        s.add(&format!("frame_{i:02}"), data);
    }
    let mut stream = vec![3];
    for f in &frames {
        stream.extend_from_slice(f);
    }
    s.add("stream_all", stream);
}

/// Scripts for `mep_handshake` (see its doc: the low nibble is the step,
/// the high bit the direction: 0x00 passes P1's next frame to P2, 0x80
/// P2's to P1).
fn mep_handshake() {
    let s = Seeds::new("mep_handshake");
    // Hellos both ways, P1's proof, P2's proof, keepalives, data.
    let genuine: Vec<u8> = vec![0x00, 0x80, 0x00, 0x80, 0x80, 0x00, 0x0a, 0x8a, 0x00, 0x80];
    s.add("genuine", genuine.clone());
    let mut tampered = genuine.clone();
    tampered.extend_from_slice(&[0x0a, 0x06, 0x09, 0x01]);
    s.add("tampered_data", tampered);
    let mut replayed = genuine.clone();
    replayed.extend_from_slice(&[0x0a, 0x00, 0x07, 0x00, 0x05]);
    s.add("replayed_frame", replayed);
    let mut injected = genuine.clone();
    injected.extend_from_slice(&[0x08, 0x02, 0x07, 0x00]);
    s.add("injected_keepalive", injected);
    // The acceptor is handed a forged proof before anything else.
    s.add("forged_proof", vec![0x00, 0x08, 0x01, 0x11, 0x80]);
    s.add(
        "dropped_proof",
        vec![0x00, 0x80, 0x05, 0x0c, 0xff, 0x0c, 0xff],
    );
    s.add("raw_bytes", vec![0x09, 0x06, 0, 0, 0, 2, 2, 1]);
}

/// Scripts for `config_sync_transfer`: each step is a site byte, an
/// operation byte and its fields (see the target).
fn config_sync() {
    let s = Seeds::new("config_sync_transfer");
    // An offer of a newer version, then its whole text in one part.
    s.add(
        "offer_then_update",
        vec![
            1, 0, 1, 5, 0, 1, 1, 0, 1, 1, 6, 0, 1, 1, 200, 1, 0, 0, 0, 1, 1,
        ],
    );
    // A forced update that names this node (P2) as its origin.
    s.add(
        "own_origin",
        vec![1, 1, 1, 5, 1, 1, 1, 200, 1, 1, 0, 0, 0, 1, 0],
    );
    // A delta against a base, in two parts.
    s.add(
        "delta_parts",
        vec![
            1, 2, 1, 5, 0, 1, 1, 0, 0, 0, 1, 1, 2, 0, 3, 0, 1, 2, 1, 1, 1, 0, 1, 1,
        ],
    );
    s.add(
        "results_and_links",
        vec![1, 4, 0, 1, 0, 1, 0, 1, 1, 5, 0, 1, 6, 40, 1, 7],
    );
    // An offer at the largest incarnation, then a change made here.
    s.add("largest_incarnation", vec![1, 0, 0, 255, 0, 1, 1, 1, 1, 7]);
}

// ---------------------------------------------------------------------------
// Health

fn prometheus() {
    let s = Seeds::new("prometheus");
    s.add(
        "node_exporter",
        "# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n\
         # TYPE node_cpu_seconds_total counter\n\
         node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 12345.67\n\
         node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 89.5\n\
         # TYPE node_memory_MemAvailable_bytes gauge\n\
         node_memory_MemAvailable_bytes 1.2345e+09\n",
    );
    s.add(
        "histogram",
        "# TYPE http_request_duration_seconds histogram\n\
         http_request_duration_seconds_bucket{le=\"0.1\"} 10\n\
         http_request_duration_seconds_bucket{le=\"+Inf\"} 12\n\
         http_request_duration_seconds_sum 1.5\n\
         http_request_duration_seconds_count 12\n",
    );
    s.add(
        "escapes_timestamps",
        "# TYPE app_info gauge\n\
         app_info{path=\"C:\\\\x\",msg=\"say \\\"hi\\\"\\n\"} 1 1700000000000\n\
         app_connections  42\t\n\
         app_load{a=\"b\",} NaN\n\
         app_neg -Inf\r\n",
    );
    s.add(
        "openmetrics",
        "# TYPE requests counter\n\
         requests_total{code=\"200\"} 1027 1700000000.123 # {trace_id=\"abc\"} 1\n\
         # EOF\n",
    );
    s.add(
        "summary",
        "# TYPE rpc_duration_seconds summary\n\
         rpc_duration_seconds{quantile=\"0.5\"} 4773\n\
         rpc_duration_seconds_sum 1.7560473e+07\n\
         rpc_duration_seconds_count 2693\n",
    );
}

/// A response to `query` with `rcode` and A/AAAA answers whose owner is a
/// compression pointer to the question.
fn dns_response(query: &[u8], rcode: u8, answers: &[IpAddr]) -> Vec<u8> {
    let mut out = query.to_vec();
    out[2] = 0x84;
    out[3] = rcode;
    out[6..8].copy_from_slice(&(answers.len() as u16).to_be_bytes());
    for a in answers {
        out.extend_from_slice(&[0xc0, 12]);
        let (t, data): (u16, Vec<u8>) = match a {
            IpAddr::V4(v4) => (1, v4.octets().to_vec()),
            IpAddr::V6(v6) => (28, v6.octets().to_vec()),
        };
        out.extend_from_slice(&t.to_be_bytes());
        out.extend_from_slice(&1u16.to_be_bytes());
        out.extend_from_slice(&60u32.to_be_bytes());
        out.extend_from_slice(&(data.len() as u16).to_be_bytes());
        out.extend_from_slice(&data);
    }
    out
}

fn monitor_dns() {
    use sextant_core::DnsQueryType;
    use sextant_health::dns::encode_query;
    let s = Seeds::new("monitor_dns");
    let v4: IpAddr = "192.0.2.1".parse().unwrap();
    let v6: IpAddr = "2001:db8::1".parse().unwrap();
    let other: IpAddr = "192.0.2.99".parse().unwrap();
    // The first byte: bits 0-1 query type, 2 expect addresses, 3 accept
    // NXDOMAIN, 7 the expected id is the datagram's.
    let cases: [(&str, u8, DnsQueryType, u8, Vec<IpAddr>); 7] = [
        ("a_noerror", 0x80, DnsQueryType::A, 0, vec![v4]),
        ("a_expected_addr", 0x84, DnsQueryType::A, 0, vec![other, v4]),
        ("a_wrong_addr", 0x84, DnsQueryType::A, 0, vec![other]),
        ("aaaa_noerror", 0x81, DnsQueryType::Aaaa, 0, vec![v6]),
        ("soa_nxdomain_ok", 0x8a, DnsQueryType::Soa, 3, vec![]),
        ("a_servfail", 0x80, DnsQueryType::A, 2, vec![]),
        ("a_other_id", 0x00, DnsQueryType::A, 0, vec![v4]),
    ];
    for (name, sel, qtype, rcode, answers) in cases {
        let q = encode_query(0x1234, "www.example.com", qtype).unwrap();
        let mut data = vec![sel];
        data.extend_from_slice(&dns_response(&q, rcode, &answers));
        s.add(name, data);
    }
}

fn monitor_http() {
    let s = Seeds::new("monitor_http");
    // The first byte: bit 0 accept 2xx and 301-302, bit 1 look for
    // "alive" in the body; the second: where the response is cut (x4).
    let cases: [(&str, u8, u8, &str); 8] = [
        (
            "ok_head",
            0,
            4,
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        ),
        (
            "redirect_ranges",
            1,
            2,
            "HTTP/1.0 302 Found\r\nLocation: /x\r\n\r\n",
        ),
        (
            "unavailable",
            0,
            0,
            "HTTP/1.1 503 Service Unavailable\r\n\r\n",
        ),
        (
            "body_length",
            2,
            10,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nI am alive",
        ),
        (
            "body_chunked",
            3,
            12,
            "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nI am\r\n6;ext=1\r\n alive\r\n0\r\n\r\n",
        ),
        (
            "body_missing",
            2,
            8,
            "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nI am dead",
        ),
        (
            "bare_lf_close",
            2,
            3,
            "HTTP/1.1 200 OK\nServer: x\n\nalive and well",
        ),
        ("not_http", 0, 1, "SSH-2.0-OpenSSH_9.6\r\n"),
    ];
    for (name, sel, cut, text) in cases {
        let mut data = vec![sel, cut];
        data.extend_from_slice(text.as_bytes());
        s.add(name, data);
    }
}

// ---------------------------------------------------------------------------
// VRRP

fn vrrp() {
    use sextant_vrrp::packet::{Advert, ChecksumMode};
    let s = Seeds::new("vrrp_advert");
    let v4_src: IpAddr = "192.0.2.1".parse().unwrap();
    let v4_dst: IpAddr = "224.0.0.18".parse().unwrap();
    let v6_src: IpAddr = "fe80::1".parse().unwrap();
    let v6_dst: IpAddr = "ff02::12".parse().unwrap();
    let advert = |vrid, priority, cs, addrs: &[&str]| Advert {
        vrid,
        priority,
        max_advert_int_cs: cs,
        addrs: addrs.iter().map(|a| a.parse().unwrap()).collect(),
    };
    // The first byte: bit 0 IPv6, bit 1 the TTL is the next byte, bit 2
    // recompute the checksum (bit 3: with the pseudo-header).
    let cases = [
        (
            "v4_rfc9568",
            0u8,
            advert(51, 100, 100, &["192.0.2.100"]),
            ChecksumMode::NoPseudoHeader,
            v4_src,
            v4_dst,
        ),
        (
            "v4_keepalived_two_vips",
            0,
            advert(1, 255, 4095, &["192.0.2.100", "198.51.100.1"]),
            ChecksumMode::PseudoHeader,
            v4_src,
            v4_dst,
        ),
        (
            "v4_priority0_recompute",
            4,
            advert(255, 0, 1, &["203.0.113.5"]),
            ChecksumMode::NoPseudoHeader,
            v4_src,
            v4_dst,
        ),
        (
            "v6_one",
            1,
            advert(7, 150, 100, &["2001:db8::100"]),
            ChecksumMode::PseudoHeader,
            v6_src,
            v6_dst,
        ),
        (
            "v6_two_recompute",
            5,
            advert(9, 90, 300, &["2001:db8::100", "fe80::100"]),
            ChecksumMode::PseudoHeader,
            v6_src,
            v6_dst,
        ),
    ];
    for (name, sel, a, mode, src, dst) in cases {
        let mut data = vec![sel];
        data.extend_from_slice(&a.encode(mode, src, dst));
        s.add(name, data);
    }
    // A TTL of 64: rejected before anything else.
    let mut data = vec![2, 64];
    data.extend_from_slice(&advert(51, 100, 100, &["192.0.2.100"]).encode(
        ChecksumMode::NoPseudoHeader,
        v4_src,
        v4_dst,
    ));
    s.add("v4_ttl64", data);
}

// ---------------------------------------------------------------------------
// XDP frames: Ethernet, IPv4 or IPv6, UDP, a DNS query

fn frame(v6: bool, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    let udp_len = (8 + payload.len()) as u16;
    if v6 {
        f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
        f.extend_from_slice(&udp_len.to_be_bytes());
        f.extend_from_slice(&[17, 64]);
        f.extend_from_slice(&[0xfd, 0x77, 0, 0x50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        f.extend_from_slice(&[0xfd, 0x77, 0, 0x50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    } else {
        f.extend_from_slice(&[0x08, 0x00, 0x45, 0]);
        f.extend_from_slice(&(20 + udp_len).to_be_bytes());
        f.extend_from_slice(&[0, 1, 0x40, 0, 64, 17, 0, 0, 10, 77, 50, 2, 10, 77, 50, 1]);
    }
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&53u16.to_be_bytes());
    f.extend_from_slice(&udp_len.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

fn xdp() {
    let s = Seeds::new("xdp_frame");
    let a = query(1, 0, "app.example.com", 1, &[opt(1232, 0, false, &[])]);
    s.add("v4_query", frame(false, &a));
    s.add("v6_query", frame(true, &a));
    let mut padded = frame(false, &query(2, 0, "a.b", 1, &[]));
    padded.resize(60, 0);
    s.add("v4_padded_to_60", padded);
}

/// A tool run by hand, not a test: it panics with the path on an I/O error
/// in the project's own tree.
fn main() {
    for target in ["dns_query", "dns_respond"] {
        let s = Seeds::new(target);
        for (name, q) in dns_queries() {
            s.add(name, q);
        }
    }
    configs();
    policy_exprs();
    mep();
    mep_handshake();
    config_sync();
    prometheus();
    monitor_dns();
    monitor_http();
    vrrp();
    xdp();
}
