//! DNS monitor: one query over UDP, judged by response code and addresses.
//!
//! The query encoder and the response decoder are `sextant_wire::client`'s
//! (shared with the DNS self-probe and the LDNS prober): a monitor sends one
//! fixed question and reads the header and the answer section's A/AAAA
//! records.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use sextant_core::{DnsCheck, DnsQueryType};

pub(crate) use sextant_wire::client::{
    ClientError, Response, TYPE_A, TYPE_AAAA, TYPE_NS, TYPE_SOA, parse_response, rcode_name,
};

use crate::{ProbeError, Success, udp};

/// Largest DNS message over UDP we accept (EDNS-sized, without sending EDNS).
pub(crate) const MAX_MESSAGE: usize = 4096;

impl From<ClientError> for ProbeError {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Name { name, why } => ProbeError::DnsQuery { name, why },
            ClientError::Malformed(why) => ProbeError::DnsMalformed(why),
        }
    }
}

/// Sends the query for `check` to `target` and judges the response.
pub(crate) async fn probe(check: &DnsCheck, target: SocketAddr) -> Result<Success, ProbeError> {
    let id = query_id();
    let query = encode_query(id, &check.query, check.query_type)?;
    let qtype = qtype(check.query_type);
    let socket = udp::connected_socket(target)
        .await
        .map_err(|e| udp::io_error("DNS", "DNS query to", target, e))?;
    socket
        .send(&query)
        .await
        .map_err(|e| udp::io_error("DNS", "DNS query to", target, e))?;
    let mut buf = vec![0u8; MAX_MESSAGE];
    loop {
        let n = socket
            .recv(&mut buf)
            .await
            .map_err(|e| udp::io_error("DNS", "DNS response from", target, e))?;
        let msg = buf.get(..n).unwrap_or_default();
        if let Some(verdict) = judge_datagram(check, id, qtype, msg) {
            return verdict;
        }
    }
}

/// Judges one datagram received for the query `id` / `qtype` of `check`:
/// `None` when it is not a reply to that query and the monitor waits on,
/// else the verdict. Pure, so the fuzz target runs exactly this.
pub(crate) fn judge_datagram(
    check: &DnsCheck,
    id: u16,
    qtype: u16,
    msg: &[u8],
) -> Option<Result<Success, ProbeError>> {
    // Datagrams that are not a reply to this query (stale replies to an
    // earlier probe, stray packets) are skipped, as a resolver would.
    if msg.get(..2) != Some(&id.to_be_bytes()[..]) {
        return None;
    }
    let response = match parse_response(msg) {
        Ok(r) => r,
        Err(e) => return Some(Err(e.into())),
    };
    if !response.is_answer_to(&check.query, qtype) {
        return None;
    }
    Some(judge(check, &response))
}

/// Applies the monitor's expectations to a parsed response.
pub(crate) fn judge(check: &DnsCheck, response: &Response) -> Result<Success, ProbeError> {
    let accepted = if check.expect_rcodes.is_empty() {
        &[0][..]
    } else {
        &check.expect_rcodes[..]
    };
    if !accepted.contains(&response.rcode) {
        return Err(ProbeError::DnsRcode {
            got: rcode_name(response.rcode),
            expected: join(accepted.iter().map(|&r| rcode_name(r))),
        });
    }
    let rcode = rcode_name(response.rcode);
    if check.expect_addresses.is_empty() {
        return Ok(Success::timed(format!("DNS {rcode}")));
    }
    match check
        .expect_addresses
        .iter()
        .find(|a| response.addresses.contains(a))
    {
        Some(found) => Ok(Success::timed(format!("DNS {rcode} with {found}"))),
        None => Err(ProbeError::DnsAddress {
            got: join(response.addresses.iter()),
            expected: join(check.expect_addresses.iter()),
        }),
    }
}

/// A random-ish 16-bit query id. `RandomState` is seeded from the OS per
/// instance; mixing in a counter keeps ids distinct in a burst. Together
/// with the random source port this makes blind spoofing of monitor answers
/// impractical without a dependency on a random number crate.
pub(crate) fn query_id() -> u16 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    (RandomState::new().hash_one(n) & 0xffff) as u16
}

pub(crate) fn qtype(t: DnsQueryType) -> u16 {
    match t {
        DnsQueryType::A => TYPE_A,
        DnsQueryType::Aaaa => TYPE_AAAA,
        DnsQueryType::Soa => TYPE_SOA,
    }
}

/// Encodes a monitor's query with RD=0 (we ask the target itself, not its
/// recursion).
pub fn encode_query(id: u16, name: &str, query_type: DnsQueryType) -> Result<Vec<u8>, ProbeError> {
    Ok(sextant_wire::client::encode_query(
        id,
        name,
        qtype(query_type),
    )?)
}

fn join<T: ToString>(items: impl Iterator<Item = T>) -> String {
    items.map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use sextant_test_support::dns::response_to;
    use std::net::IpAddr;

    #[test]
    fn judges_rcodes_and_addresses() {
        let q = encode_query(7, "a.example", DnsQueryType::A).unwrap();
        let ok: IpAddr = "192.0.2.1".parse().unwrap();
        let mut check = DnsCheck {
            query: "a.example".into(),
            query_type: DnsQueryType::A,
            expect_addresses: vec![],
            expect_rcodes: vec![],
        };
        let nx = parse_response(&response_to(&q, 3, &[])).unwrap();
        let e = judge(&check, &nx).unwrap_err();
        assert_eq!(e.to_string(), "DNS rcode NXDOMAIN not in NOERROR");
        check.expect_rcodes = vec![0, 3];
        assert!(judge(&check, &nx).is_ok());
        check.expect_addresses = vec![ok];
        let good = parse_response(&response_to(&q, 0, &[ok])).unwrap();
        assert_eq!(
            judge(&check, &good).unwrap().what,
            "DNS NOERROR with 192.0.2.1"
        );
        let other = parse_response(&response_to(&q, 0, &["192.0.2.9".parse().unwrap()])).unwrap();
        assert_eq!(
            judge(&check, &other).unwrap_err().to_string(),
            "DNS answer [192.0.2.9] has none of [192.0.2.1]"
        );
    }

    #[test]
    fn judges_datagrams_for_our_query_only() {
        let q = encode_query(7, "a.example", DnsQueryType::A).unwrap();
        let check = DnsCheck {
            query: "a.example".into(),
            query_type: DnsQueryType::A,
            expect_addresses: vec![],
            expect_rcodes: vec![],
        };
        let ok = response_to(&q, 0, &["192.0.2.1".parse().unwrap()]);
        let verdict = judge_datagram(&check, 7, TYPE_A, &ok).unwrap().unwrap();
        assert_eq!(verdict.what, "DNS NOERROR");
        // Another id, or another question: not ours, keep waiting.
        assert!(judge_datagram(&check, 8, TYPE_A, &ok).is_none());
        assert!(judge_datagram(&check, 7, TYPE_AAAA, &ok).is_none());
        // Ours but garbled: a failure, not a wait.
        assert!(
            judge_datagram(&check, 7, TYPE_A, &ok[..14])
                .unwrap()
                .is_err()
        );
        assert!(judge_datagram(&check, 7, TYPE_A, &[0, 7]).unwrap().is_err());
    }
}
