//! NSID, DNS cookies and response rate limiting through `respond`.

mod common;

use std::net::IpAddr;
use std::time::{Duration, Instant};

use common::{CLIENT, QueryBuilder, Server, opt_options, option};
use hickory_proto::op::ResponseCode;
use sextant_core::{CookieSettings, RrlSettings};
use sextant_dns::Transport;
use sextant_test_support::dns::{answer_addrs, decode};

const A: u16 = 1;
const NSID: u16 = 3;
const COOKIE: u16 = 10;

fn q_with(options: &[u8]) -> Vec<u8> {
    QueryBuilder::new("www.example.com", A)
        .edns(1232, 0, false, options)
        .build()
}

fn codes(opts: &[(u16, Vec<u8>)]) -> Vec<u16> {
    opts.iter().map(|(c, _)| *c).collect()
}

#[test]
fn nsid_is_sent_only_when_asked_and_configured() {
    let mut s = Server::with(|m| m.dns.nsid = Some(b"node-a".to_vec()));
    let raw = s.raw(&q_with(&option(NSID, &[])), Transport::Udp).unwrap();
    assert_eq!(opt_options(&raw).unwrap(), vec![(NSID, b"node-a".to_vec())]);
    assert_eq!(answer_addrs(&decode(&raw)).len(), 1);
    // Also with other options around it, and over TCP, and on errors
    // answered from a parsed query (REFUSED).
    let both = [option(65001, &[1, 2]), option(NSID, &[])].concat();
    let raw = s.raw(&q_with(&both), Transport::Tcp).unwrap();
    assert_eq!(codes(&opt_options(&raw).unwrap()), vec![NSID]);
    let refused = QueryBuilder::new("example.org", A)
        .edns(1232, 0, false, &option(NSID, &[]))
        .build();
    let raw = s.raw(&refused, Transport::Udp).unwrap();
    assert_eq!(decode(&raw).metadata.response_code, ResponseCode::Refused);
    assert_eq!(codes(&opt_options(&raw).unwrap()), vec![NSID]);
    // Not asked: no NSID.
    let raw = s.raw(&q_with(&[]), Transport::Udp).unwrap();
    assert_eq!(opt_options(&raw).unwrap(), vec![]);
    // A non-empty NSID option is not a request (RFC 5001 §2.3).
    let raw = s.raw(&q_with(&option(NSID, b"x")), Transport::Udp).unwrap();
    assert_eq!(opt_options(&raw).unwrap(), vec![]);
    // No EDNS: no OPT at all.
    let raw = s
        .raw(
            &QueryBuilder::new("www.example.com", A).build(),
            Transport::Udp,
        )
        .unwrap();
    assert!(opt_options(&raw).is_none());
    // Not configured: nothing, even when asked.
    let mut plain = Server::new();
    let raw = plain
        .raw(&q_with(&option(NSID, &[])), Transport::Udp)
        .unwrap();
    assert_eq!(opt_options(&raw).unwrap(), vec![]);
}

fn with_cookies() -> Server {
    Server::with(|m| {
        m.dns.cookies = Some(CookieSettings {
            secret_rotation: Duration::from_secs(3600),
        })
    })
}

/// The COOKIE option of a response.
fn cookie_of(raw: &[u8]) -> Vec<u8> {
    opt_options(raw)
        .unwrap()
        .into_iter()
        .find(|(c, _)| *c == COOKIE)
        .map(|(_, d)| d)
        .expect("a COOKIE option")
}

#[test]
fn cookies_client_only_valid_invalid_and_malformed() {
    let mut s = with_cookies();
    let client = [0x24, 0x64, 0xc4, 0xab, 0xcf, 0x10, 0xc9, 0x57];
    // Client cookie only: answered, with a fresh server cookie.
    let raw = s
        .raw(&q_with(&option(COOKIE, &client)), Transport::Udp)
        .unwrap();
    assert_eq!(decode(&raw).metadata.response_code, ResponseCode::NoError);
    let full = cookie_of(&raw);
    assert_eq!(full.len(), 24);
    assert_eq!(full[..8], client);
    assert_eq!(full[8], 1, "RFC 9018 version 1");
    assert_eq!(full[9..12], [0, 0, 0], "reserved");
    let stats = s.shared.stats.snapshot();
    assert_eq!((stats.cookie_valid, stats.cookie_invalid), (0, 0));

    // The cookie comes back: valid, answered, a cookie again.
    let raw = s
        .raw(&q_with(&option(COOKIE, &full)), Transport::Udp)
        .unwrap();
    assert_eq!(answer_addrs(&decode(&raw)).len(), 1);
    assert_eq!(cookie_of(&raw)[..8], client);
    assert_eq!(s.shared.stats.snapshot().cookie_valid, 1);

    // From another address it is not valid: answered with a fresh cookie
    // (RFC 7873 §5.2.3), counted.
    let other = IpAddr::from([198, 18, 0, 99]);
    let raw = s
        .raw_from(&q_with(&option(COOKIE, &full)), other, Transport::Udp)
        .unwrap();
    assert_eq!(decode(&raw).metadata.response_code, ResponseCode::NoError);
    let fresh = cookie_of(&raw);
    assert_ne!(fresh[8..], full[8..]);
    // A forged hash.
    let mut forged = full.clone();
    forged[20] ^= 0x55;
    let raw = s
        .raw(&q_with(&option(COOKIE, &forged)), Transport::Udp)
        .unwrap();
    assert_eq!(answer_addrs(&decode(&raw)).len(), 1);
    assert_eq!(s.shared.stats.snapshot().cookie_invalid, 2);

    // Rotation: the previous secret is still accepted once, not twice.
    s.shared.rotate_cookie_secret_to([1; 16]);
    s.raw(&q_with(&option(COOKIE, &full)), Transport::Udp)
        .unwrap();
    assert_eq!(s.shared.stats.snapshot().cookie_valid, 2);
    s.shared.rotate_cookie_secret_to([2; 16]);
    s.raw(&q_with(&option(COOKIE, &full)), Transport::Udp)
        .unwrap();
    assert_eq!(s.shared.stats.snapshot().cookie_valid, 2);
    assert_eq!(s.shared.stats.snapshot().cookie_invalid, 3);

    // Malformed lengths: FORMERR.
    for len in [0usize, 7, 9, 15, 41] {
        let raw = s
            .raw(&q_with(&option(COOKIE, &vec![1u8; len])), Transport::Udp)
            .unwrap();
        assert_eq!(
            decode(&raw).metadata.response_code,
            ResponseCode::FormErr,
            "{len} octets"
        );
    }
}

#[test]
fn cookies_off_means_no_cookie_in_answers() {
    let mut s = Server::new();
    let raw = s
        .raw(&q_with(&option(COOKIE, &[7u8; 8])), Transport::Udp)
        .unwrap();
    assert_eq!(opt_options(&raw).unwrap(), vec![]);
}

fn rrl(rate: u32, slip: u32) -> RrlSettings {
    RrlSettings {
        responses_per_second: rate,
        slip,
        ipv4_prefix: 24,
        ipv6_prefix: 56,
        exempt: vec![("10.0.0.0".parse().unwrap(), 8)],
        table_size: 4096,
    }
}

fn limited_server(rate: u32, slip: u32, cookies: bool) -> Server {
    let s = Server::with(|m| {
        m.dns.rrl = Some(rrl(rate, slip));
        if cookies {
            m.dns.cookies = Some(CookieSettings {
                secret_rotation: Duration::from_secs(3600),
            });
        }
    });
    s.shared.set_rate_limiter(Some(&rrl(rate, slip)));
    s
}

/// Counts (answered, truncated, dropped) over `n` queries from `source`,
/// and the most responses the rate allows in the time they took.
fn flood(
    s: &mut Server,
    q: &[u8],
    source: IpAddr,
    transport: Transport,
    n: usize,
) -> ([usize; 3], usize) {
    let start = Instant::now();
    let mut counts = [0usize; 3];
    for _ in 0..n {
        match s.raw_from(q, source, transport) {
            Some(raw) => {
                let m = decode(&raw);
                if m.metadata.truncation {
                    assert!(m.answers.is_empty());
                    counts[1] += 1;
                } else {
                    assert_eq!(answer_addrs(&m).len(), 1);
                    counts[0] += 1;
                }
            }
            None => counts[2] += 1,
        }
    }
    // The bucket holds one second's worth (5) and refills at 5 per second.
    let allowed = 5 + (start.elapsed().as_secs_f64() * 5.0).ceil() as usize;
    (counts, allowed)
}

#[test]
fn a_flood_from_one_prefix_is_held_to_the_rate_with_the_slip_share() {
    let mut s = limited_server(5, 2, false);
    let q = QueryBuilder::new("www.example.com", A).build();
    let src = IpAddr::from([192, 0, 2, 1]);
    let ([answered, truncated, dropped], allowed) = flood(&mut s, &q, src, Transport::Udp, 400);
    assert!(
        answered >= 5 && answered <= allowed,
        "{answered} answered, {allowed} allowed"
    );
    let limited = truncated + dropped;
    assert_eq!(limited, 400 - answered);
    assert_eq!(
        truncated,
        limited / 2,
        "slip 2: every second limited response"
    );
    let st = s.shared.stats.snapshot();
    assert_eq!(st.rate_limited as usize, limited);
    assert_eq!(st.slipped as usize, truncated);

    // Another address of the same /24 shares the bucket (still empty).
    let same24 = IpAddr::from([192, 0, 2, 77]);
    let ([a, _, _], _) = flood(&mut s, &q, same24, Transport::Udp, 20);
    assert!(a <= allowed, "{a}");
    // TCP is never limited.
    let ([a, t, d], _) = flood(&mut s, &q, src, Transport::Tcp, 100);
    assert_eq!((a, t, d), (100, 0, 0));
    // Exempt ranges are never limited.
    let ([a, _, _], _) = flood(&mut s, &q, IpAddr::from([10, 9, 8, 7]), Transport::Udp, 100);
    assert_eq!(a, 100);
}

#[test]
fn slip_zero_drops_and_slip_one_truncates_every_limited_response() {
    let q = QueryBuilder::new("www.example.com", A).build();
    let src = IpAddr::from([192, 0, 2, 1]);
    let mut s = limited_server(5, 0, false);
    let ([a, t, d], allowed) = flood(&mut s, &q, src, Transport::Udp, 100);
    assert!(a <= allowed);
    assert_eq!((t, d), (0, 100 - a));
    let mut s = limited_server(5, 1, false);
    let ([a, t, d], allowed) = flood(&mut s, &q, src, Transport::Udp, 100);
    assert!(a <= allowed);
    assert_eq!((t, d), (100 - a, 0));
}

#[test]
fn a_valid_cookie_is_never_limited_and_malformed_floods_are_limited() {
    let mut s = limited_server(5, 2, true);
    let src = IpAddr::from(CLIENT);
    // Learn a cookie (this spends one response of the allowance).
    let raw = s
        .raw(&q_with(&option(COOKIE, &[3u8; 8])), Transport::Udp)
        .unwrap();
    let full = cookie_of(&raw);
    let ([a, t, d], _) = flood(
        &mut s,
        &q_with(&option(COOKIE, &full)),
        src,
        Transport::Udp,
        300,
    );
    assert_eq!((a, t, d), (300, 0, 0), "valid cookie: never limited");
    // A client cookie alone proves nothing: limited like any other.
    let ([a, _, _], allowed) = flood(
        &mut s,
        &q_with(&option(COOKIE, &[3u8; 8])),
        src,
        Transport::Udp,
        100,
    );
    assert!(a <= allowed, "{a}");
    // FORMERR answers count against the limit too.
    let mut bad = QueryBuilder::new("www.example.com", A);
    bad.qdcount = 2;
    let other = IpAddr::from([203, 0, 113, 5]);
    let mut answered = 0;
    for _ in 0..100 {
        answered += usize::from(s.raw_from(&bad.build(), other, Transport::Udp).is_some());
    }
    assert!((5..100).contains(&answered), "{answered}");
}

#[test]
fn without_a_limiter_nothing_is_limited() {
    let mut s = Server::new();
    let q = QueryBuilder::new("www.example.com", A).build();
    let ([a, _, _], _) = flood(
        &mut s,
        &q,
        IpAddr::from([192, 0, 2, 1]),
        Transport::Udp,
        200,
    );
    assert_eq!(a, 200);
    assert_eq!(s.shared.stats.snapshot().rate_limited, 0);
}
