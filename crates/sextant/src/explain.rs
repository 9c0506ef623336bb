//! Explaining answers: the same `decide` as the DNS path, with a trace.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use sextant_core::decide::ClientSubnet;
use sextant_core::records::TYPE_ANY;
use sextant_core::select::mask_ip;
use sextant_core::{
    AdminKind, AdminMark, AdminState, AnswerBuf, ChainEnd, Cursor, NoSessions, Outcome, Query,
    QueryType, RecordData, Sessions, SkipWhy, Snapshot, StaticRecord, TraceEvent, VecTrace, decide,
};

/// Decides `name`/`qtype` for `client` on `snap` and records every step.
pub fn explain(
    snap: &Snapshot,
    sessions: &impl Sessions,
    name: &str,
    qtype: &str,
    client: IpAddr,
    ecs: Option<&str>,
) -> anyhow::Result<sextant_api::Explain> {
    let qtype_parsed = QueryType::parse(qtype).with_context(|| {
        format!("unknown query type {qtype:?}; use A, AAAA, SOA, NS, CNAME, MX, TXT, SRV or ANY")
    })?;
    let ecs_parsed = ecs.map(parse_subnet).transpose()?;
    let lower = name.trim_end_matches('.').to_ascii_lowercase();
    let query = Query {
        name: &lower,
        qtype: qtype_parsed,
        source: client,
        ecs: ecs_parsed,
    };
    let mut out = AnswerBuf::default();
    let mut trace = VecTrace::default();
    // A peeking cursor: the answer shown is the next one the server would
    // give, and showing it does not use up a round-robin turn.
    let decision = decide(
        snap,
        &query,
        &mut Cursor::peeking(0),
        sessions,
        &mut out,
        &mut trace,
    );
    let model = snap.model();
    let (rcode, ttl) = match decision.outcome {
        Outcome::Addresses { ttl, .. }
        | Outcome::DcAddresses { ttl, .. }
        | Outcome::GslbCname { ttl, .. } => ("NOERROR", Some(ttl)),
        Outcome::NoData { .. } | Outcome::ZoneSoa { .. } | Outcome::ZoneNs { .. } => {
            ("NOERROR", None)
        }
        Outcome::NxDomain { .. }
        | Outcome::Static {
            end: ChainEnd::NxDomain { .. },
        } => ("NXDOMAIN", None),
        Outcome::Static {
            end: ChainEnd::Addresses { ttl, .. },
        } => ("NOERROR", Some(ttl)),
        Outcome::Static { .. } => ("NOERROR", None),
        Outcome::Referral { .. } => ("NOERROR (referral)", None),
        Outcome::Refused => ("REFUSED", None),
        Outcome::Drop => ("DROP (no response)", None),
    };
    let answers = match decision.outcome {
        Outcome::ZoneSoa { zone } => {
            let soa = &model.zone(zone).soa;
            vec![format!(
                "SOA {} {} {} {} {} {} {}",
                soa.origin_server,
                soa.contact,
                soa.serial,
                soa.refresh,
                soa.retry,
                soa.expire,
                soa.minimum
            )]
        }
        Outcome::ZoneNs { zone } => model
            .zone(zone)
            .ns
            .iter()
            .map(|n| format!("NS {n}"))
            .collect(),
        Outcome::Static { end } => {
            let mut lines: Vec<String> = out
                .chain
                .iter()
                .filter_map(|i| model.records.get(*i as usize))
                .map(describe_record)
                .collect();
            match end {
                ChainEnd::Records { node, rtype } => lines.extend(
                    snap.records()
                        .records(model, node)
                        .iter()
                        .filter(|r| rtype == TYPE_ANY || r.data.rtype() == rtype)
                        .map(describe_record),
                ),
                ChainEnd::Addresses { .. } => lines.extend(out.addrs.iter().map(|a| a.to_string())),
                _ => {}
            }
            lines
        }
        Outcome::GslbCname { service, .. } => {
            vec![format!(
                "CNAME {}",
                model.service(service).cname.as_deref().unwrap_or("?")
            )]
        }
        Outcome::Referral { cut } => snap
            .records()
            .records(model, cut)
            .iter()
            .map(|r| format!("referral: {}", describe_record(r)))
            .collect(),
        _ => out.addrs.iter().map(|a| a.to_string()).collect(),
    };
    Ok(sextant_api::Explain {
        name: lower.clone(),
        qtype: qtype.to_ascii_uppercase(),
        client: client.to_string(),
        ecs: ecs.map(str::to_string),
        rcode: rcode.to_string(),
        answers,
        ttl,
        reason: decision.reason.describe(),
        trace: trace.0.iter().map(|e| describe(snap, e)).collect(),
        ecs_scope: decision.ecs_scope,
        down: down_candidates(snap, &lower),
    })
}

/// One step of the trace; for what the operator took out, also when and
/// why.
fn describe(snap: &Snapshot, event: &TraceEvent) -> String {
    let model = snap.model();
    let admin = snap.admin();
    match event {
        TraceEvent::Skipped {
            service,
            why: SkipWhy::Disabled | SkipWhy::Draining,
        } => {
            let Some(cause) = admin.service_cause(model, *service) else {
                return event.describe(model);
            };
            let s = model.service(*service);
            let whose = match cause.kind {
                AdminKind::Site => format!("its site {} is ", model.site(s.site).name),
                _ => String::new(),
            };
            format!(
                "skipped {} ({}:{}): {whose}{}",
                s.name,
                s.answer_ip(),
                s.port,
                admin_note(cause.mark)
            )
        }
        TraceEvent::VServerDisabled { vserver } => match admin.vserver_mark(*vserver) {
            Some(mark) => format!(
                "vserver {} is {}: answered as if no service were UP",
                model.vserver(*vserver).name,
                admin_note(mark)
            ),
            None => event.describe(model),
        },
        _ => event.describe(model),
    }
}

/// `disabled by operator at TIME: REASON` / `draining since TIME: REASON`.
pub fn admin_note(mark: &AdminMark) -> String {
    let at = crate::api::rfc3339(crate::admin_state::wall(mark.since_unix_ms));
    let mut text = match mark.state {
        AdminState::Draining => format!("draining since {at}"),
        _ => format!("disabled by operator at {at}"),
    };
    if let Some(reason) = &mark.reason {
        text.push_str(": ");
        text.push_str(reason);
    }
    text
}

/// One static record as zone-file text: `www.example.com CNAME app.example.com`.
fn describe_record(r: &StaticRecord) -> String {
    let data = match &r.data {
        RecordData::A(a) => a.to_string(),
        RecordData::Aaaa(a) => a.to_string(),
        RecordData::Cname(t) | RecordData::Ns(t) => t.clone(),
        RecordData::Mx {
            preference,
            exchange,
        } => format!("{preference} {exchange}"),
        RecordData::Txt(strings) => strings
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(" "),
        RecordData::Srv {
            priority,
            weight,
            port,
            target,
        } => format!("{priority} {weight} {port} {target}"),
        RecordData::Ds {
            key_tag,
            algorithm,
            digest_type,
            digest,
        } => format!(
            "{key_tag} {algorithm} {digest_type} {}",
            digest
                .iter()
                .map(|b| format!("{b:02X}"))
                .collect::<String>()
        ),
    };
    format!("{} {} {} {data}", r.name, r.ttl, r.data.type_name())
}

/// The DOWN services bound to the name's vserver and its backup vservers,
/// with the reason the state engine gave.
fn down_candidates(snap: &Snapshot, name: &str) -> Vec<String> {
    let model = snap.model();
    let Some(domain) = snap.find_domain(name) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut vserver = Some(model.domain(domain).vserver);
    // A backup chain longer than the vservers would be a loop.
    for _ in 0..model.vservers.len() {
        let Some(v) = vserver else { break };
        let vs = model.vserver(v);
        if let Some(mark) = snap.admin().vserver_mark(v) {
            out.push(format!("vserver {} is {}", vs.name, admin_note(mark)));
        }
        for b in &vs.bindings {
            if let Some(cause) = snap.admin().service_cause(model, b.service) {
                let s = model.service(b.service);
                let by = match cause.kind {
                    AdminKind::Site => format!(" (its site {})", model.site(s.site).name),
                    _ => String::new(),
                };
                out.push(format!(
                    "{} ({}:{}) of vserver {} is {}{by}, {}",
                    s.name,
                    s.ip,
                    s.port,
                    vs.name,
                    admin_note(cause.mark),
                    if snap.is_up(b.service) { "UP" } else { "DOWN" }
                ));
            } else if !snap.is_up(b.service) {
                let s = model.service(b.service);
                let reason = snap
                    .status()
                    .get(b.service)
                    .map(|st| st.reason.to_string())
                    .unwrap_or_default();
                out.push(format!(
                    "{} ({}:{}) of vserver {} is DOWN: {reason}",
                    s.name, s.ip, s.port, vs.name
                ));
            }
        }
        vserver = vs.backup_vserver;
    }
    out
}

/// Parses `ADDRESS/PREFIX` as an EDNS Client Subnet.
fn parse_subnet(s: &str) -> anyhow::Result<ClientSubnet> {
    let (addr, prefix) = s.split_once('/').unwrap_or((s, ""));
    let addr: IpAddr = addr
        .parse()
        .with_context(|| format!("ECS {s:?}: expected ADDRESS/PREFIX, e.g. 198.51.100.0/24"))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix: u8 = if prefix.is_empty() {
        max
    } else {
        prefix
            .parse()
            .ok()
            .filter(|p| *p <= max)
            .with_context(|| format!("ECS {s:?}: prefix must be 0..={max}"))?
    };
    Ok(ClientSubnet {
        addr: mask_ip(addr, prefix, prefix),
        source_prefix: prefix,
    })
}

/// `sextant explain`: loads the file and explains one query, every service UP.
pub fn offline(
    config: &Path,
    local_site: Option<&str>,
    client: IpAddr,
    ecs: Option<&str>,
    name: &str,
    qtype: &str,
) -> anyhow::Result<()> {
    let mut model = sextant_config::load_file(config).map_err(|errors| {
        anyhow::anyhow!(
            "{} error(s) in the configuration:\n{errors}",
            errors.errors.len()
        )
    })?;
    crate::serve::apply_local_site(&mut model, local_site)?;
    let snap = Snapshot::new(Arc::new(model), 1);
    let e = explain(&snap, &NoSessions, name, qtype, client, ecs)?;
    print(
        &e,
        "every service assumed UP, no RTTs measured (offline; `--server ADDR` asks a running server)",
    );
    Ok(())
}

/// `sextant explain --server ADDR`: the running server's explanation, with
/// its live health, figures and RTTs. `token` is sent where the server
/// asks one for reads (`--api-reads token`).
pub fn live(
    server: &str,
    token: Option<String>,
    client: IpAddr,
    ecs: Option<&str>,
    name: &str,
    qtype: &str,
) -> anyhow::Result<()> {
    let api = crate::cli::client::Client::new(server, token)?;
    let mut path = format!(
        "/v1/explain?name={}&client={client}&type={}",
        crate::cli::encode(name),
        crate::cli::encode(qtype)
    );
    if let Some(ecs) = ecs {
        path.push_str(&format!("&ecs={}", crate::cli::encode(ecs)));
    }
    let body = api
        .get(&path)
        .map_err(|e| anyhow::anyhow!("the server at {server}: {e:#}"))?;
    let e: sextant_api::Explain = serde_json::from_str(&body).map_err(|e| {
        anyhow::anyhow!("the server at {server} sent an explanation this sextant cannot read: {e}")
    })?;
    print(&e, &live_health(server));
    Ok(())
}

/// The health line of a live explanation: the CLI's and the dashboard's
/// (`/v1/explain?format=text`) say the same.
pub fn live_health(server: &str) -> String {
    format!("live, from the server at {server}")
}

/// Prints an explanation for a terminal.
fn print(e: &sextant_api::Explain, health: &str) {
    print!("{}", render(e, health));
}

/// An explanation as text for a terminal (also `sextant cli`'s `explain`).
pub fn render(e: &sextant_api::Explain, health: &str) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "query:   {} {} from {}{}",
        e.name,
        e.qtype,
        e.client,
        e.ecs
            .as_deref()
            .map(|s| format!(" (ECS {s})"))
            .unwrap_or_default()
    );
    let _ = writeln!(o, "health:  {health}");
    let _ = writeln!(o, "rcode:   {}", e.rcode);
    if e.answers.is_empty() {
        let _ = writeln!(o, "answer:  (none)");
    }
    for a in &e.answers {
        let _ = writeln!(
            o,
            "answer:  {a}{}",
            e.ttl.map(|t| format!("  ttl {t}")).unwrap_or_default()
        );
    }
    let _ = writeln!(o, "reason:  {}", e.reason);
    if e.ecs.is_some() {
        let _ = writeln!(o, "scope:   /{}", e.ecs_scope);
    }
    for d in &e.down {
        let _ = writeln!(o, "down:    {d}");
    }
    let _ = writeln!(o, "steps:");
    for (i, step) in e.trace.iter().enumerate() {
        let _ = writeln!(o, "  {}. {step}", i + 1);
    }
    o
}
