//! Test helpers: a query builder that can also build malformed queries, and
//! an in-process server. Responses are decoded through hickory-proto (an
//! independent parser) by `sextant_test_support::dns::{decode, answer_addrs}`.
#![allow(dead_code)]

pub mod model;

use std::net::IpAddr;

use hickory_proto::op::Message;
use sextant_dns::{DnsShared, Transport, Worker, respond};
use sextant_test_support::dns::decode;

pub const CLIENT: [u8; 4] = [198, 18, 0, 7];

/// Wire form of a dotted name (labels as given, case kept).
pub fn name_wire(dotted: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for label in dotted.split('.').filter(|l| !l.is_empty()) {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out
}

/// Builds queries, well-formed or not.
#[derive(Clone)]
pub struct QueryBuilder {
    pub id: u16,
    pub flags: u16,
    pub qdcount: u16,
    pub ancount: u16,
    pub nscount: u16,
    pub arcount: u16,
    /// Question section bytes (name, type, class).
    pub question: Vec<u8>,
    /// Additional section bytes.
    pub additional: Vec<u8>,
    /// Bytes after everything counted in the header.
    pub trailing: Vec<u8>,
}

impl QueryBuilder {
    pub fn new(name: &str, qtype: u16) -> Self {
        Self::raw_name(&name_wire(name), qtype)
    }

    pub fn raw_name(name: &[u8], qtype: u16) -> Self {
        let mut question = name.to_vec();
        question.extend_from_slice(&qtype.to_be_bytes());
        question.extend_from_slice(&1u16.to_be_bytes());
        QueryBuilder {
            id: 0xbeef,
            flags: 0x0100, // RD
            qdcount: 1,
            ancount: 0,
            nscount: 0,
            arcount: 0,
            question,
            additional: Vec::new(),
            trailing: Vec::new(),
        }
    }

    pub fn class(mut self, class: u16) -> Self {
        let n = self.question.len();
        self.question[n - 2..].copy_from_slice(&class.to_be_bytes());
        self
    }

    /// Appends an OPT record.
    pub fn edns(mut self, payload: u16, version: u8, dnssec_ok: bool, options: &[u8]) -> Self {
        self.additional.push(0);
        self.additional.extend_from_slice(&41u16.to_be_bytes());
        self.additional.extend_from_slice(&payload.to_be_bytes());
        self.additional
            .extend_from_slice(&[0, version, if dnssec_ok { 0x80 } else { 0 }, 0]);
        self.additional
            .extend_from_slice(&(options.len() as u16).to_be_bytes());
        self.additional.extend_from_slice(options);
        self.arcount += 1;
        self
    }

    pub fn build(&self) -> Vec<u8> {
        let mut m = Vec::new();
        for w in [
            self.id,
            self.flags,
            self.qdcount,
            self.ancount,
            self.nscount,
            self.arcount,
        ] {
            m.extend_from_slice(&w.to_be_bytes());
        }
        m.extend_from_slice(&self.question);
        m.extend_from_slice(&self.additional);
        m.extend_from_slice(&self.trailing);
        m
    }
}

/// An ECS option: family, source prefix, scope, address octets as given.
pub fn ecs_option(family: u16, source: u8, scope: u8, addr: &[u8]) -> Vec<u8> {
    let mut o = Vec::new();
    o.extend_from_slice(&8u16.to_be_bytes());
    o.extend_from_slice(&(4 + addr.len() as u16).to_be_bytes());
    o.extend_from_slice(&family.to_be_bytes());
    o.extend_from_slice(&[source, scope]);
    o.extend_from_slice(addr);
    o
}

/// A server state plus one worker, answering from the test model.
pub struct Server {
    pub shared: DnsShared,
    pub worker: Worker,
    pub out: Vec<u8>,
}

impl Server {
    pub fn new() -> Self {
        Server {
            shared: DnsShared::new(model::snapshot()),
            worker: Worker::new(1),
            out: Vec::new(),
        }
    }

    /// Raw response bytes, `None` when dropped.
    pub fn raw(&mut self, request: &[u8], transport: Transport) -> Option<Vec<u8>> {
        self.raw_from(request, IpAddr::from(CLIENT), transport)
    }

    pub fn raw_from(
        &mut self,
        request: &[u8],
        source: IpAddr,
        transport: Transport,
    ) -> Option<Vec<u8>> {
        let answered = respond(
            &self.shared,
            &mut self.worker,
            request,
            source,
            transport,
            &mut self.out,
        );
        if answered {
            Some(self.out.clone())
        } else {
            assert!(self.out.is_empty(), "a dropped query leaves no output");
            None
        }
    }

    /// The response over UDP, decoded.
    pub fn udp(&mut self, request: &[u8]) -> Message {
        decode(&self.raw(request, Transport::Udp).expect("answered"))
    }

    pub fn tcp(&mut self, request: &[u8]) -> Message {
        decode(&self.raw(request, Transport::Tcp).expect("answered"))
    }
}

/// The options of a raw response's OPT record (the last record), as
/// (code, data), or `None` without OPT. Read from the bytes so that what
/// is asserted is exactly what was sent.
pub fn opt_options(raw: &[u8]) -> Option<Vec<(u16, Vec<u8>)>> {
    decode(raw).edns.as_ref()?;
    let at = (12..raw.len().saturating_sub(10)).rev().find(|&i| {
        let rdlen = usize::from(u16::from_be_bytes([raw[i + 9], raw[i + 10]]));
        raw[i] == 0 && raw[i + 1..i + 3] == [0, 41] && i + 11 + rdlen == raw.len()
    })?;
    let mut rdata = &raw[at + 11..];
    let mut out = Vec::new();
    while rdata.len() >= 4 {
        let code = u16::from_be_bytes([rdata[0], rdata[1]]);
        let len = usize::from(u16::from_be_bytes([rdata[2], rdata[3]]));
        out.push((code, rdata[4..4 + len].to_vec()));
        rdata = &rdata[4 + len..];
    }
    Some(out)
}

/// One EDNS option in wire form.
pub fn option(code: u16, data: &[u8]) -> Vec<u8> {
    let mut o = code.to_be_bytes().to_vec();
    o.extend_from_slice(&(data.len() as u16).to_be_bytes());
    o.extend_from_slice(data);
    o
}

impl Server {
    /// A server answering from the test model changed by `f`.
    pub fn with(f: impl FnOnce(&mut sextant_core::Model)) -> Self {
        let mut m = model::model();
        f(&mut m);
        Server {
            shared: DnsShared::new(sextant_core::Snapshot::new(std::sync::Arc::new(m), 1)),
            worker: Worker::new(1),
            out: Vec::new(),
        }
    }
}
