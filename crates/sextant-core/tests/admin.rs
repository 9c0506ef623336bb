//! Runtime maintenance in `decide`: disabled and draining services,
//! disabled vservers and sites.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::*;
use sextant_test_support::model::{ip, service, snapshot as snap, with_down, www_model as model};

const THREE: &[(&str, &str, u32)] = &[
    ("a", "192.0.2.1", 1),
    ("b", "192.0.2.2", 1),
    ("c", "192.0.2.3", 1),
];

fn q(source: &str) -> Query<'_> {
    Query {
        name: "www.example.com",
        qtype: QueryType::A,
        source: ip(source),
        ecs: None,
    }
}

/// Persistence entries of a test: (vserver, masked key) → service.
#[derive(Default)]
struct Table(HashMap<(VServerId, IpAddr), ServiceId>);

impl Sessions for Table {
    fn lookup(&self, vserver: VServerId, key: IpAddr) -> Option<ServiceId> {
        self.0.get(&(vserver, key)).copied()
    }
}

fn ask_with(s: &Snapshot, source: &str, sessions: &impl Sessions) -> (Decision, Vec<IpAddr>) {
    let mut out = AnswerBuf::default();
    let d = decide(
        s,
        &q(source),
        &mut Cursor::new(0),
        sessions,
        &mut out,
        &mut NoTrace,
    );
    (d, out.addrs)
}

fn ask(s: &Snapshot, source: &str) -> (Decision, Vec<IpAddr>) {
    ask_with(s, source, &NoSessions)
}

fn trace(s: &Snapshot, source: &str, sessions: &impl Sessions) -> Vec<String> {
    let mut out = AnswerBuf::default();
    let mut t = VecTrace::default();
    decide(
        s,
        &q(source),
        &mut Cursor::new(0),
        sessions,
        &mut out,
        &mut t,
    );
    t.0.iter().map(|e| e.describe(s.model())).collect()
}

fn mark(state: AdminState) -> AdminMark {
    AdminMark {
        state,
        since_unix_ms: 1_800_000_000_000,
        reason: Some(Arc::from("patching")),
    }
}

fn with_marks(s: &Snapshot, marks: &[(AdminTarget, AdminState)]) -> Snapshot {
    let table = AdminTable::new(s.model(), marks.iter().map(|(t, st)| (*t, mark(*st))));
    s.with_admin(Arc::new(table))
}

/// Every address answered over `n` queries from different clients.
fn answered(s: &Snapshot, n: u32) -> Vec<IpAddr> {
    let mut c = Cursor::new(0);
    let mut all: Vec<IpAddr> = (0..n)
        .flat_map(|i| {
            let mut out = AnswerBuf::default();
            let src = format!("198.51.100.{}", i + 1);
            decide(s, &q(&src), &mut c, &NoSessions, &mut out, &mut NoTrace);
            out.addrs
        })
        .collect();
    all.sort();
    all.dedup();
    all
}

#[test]
fn a_disabled_service_is_never_answered_but_keeps_its_health() {
    let s = snap(model(THREE, LbMethod::RoundRobin));
    let off = with_marks(
        &s,
        &[(
            AdminTarget::Service(ServiceId::new(1)),
            AdminState::Disabled,
        )],
    );
    assert_eq!(answered(&off, 12), vec![ip("192.0.2.1"), ip("192.0.2.3")]);
    // Health is separate: still UP.
    assert!(off.is_up(ServiceId::new(1)));
    assert!(!off.answers(ServiceId::new(1)));
    let lines = trace(&off, "198.51.100.1", &NoSessions);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("skipped b") && l.contains("disabled by the operator")),
        "{lines:#?}"
    );
    // Enabled again: back in the rotation.
    let on = with_marks(&s, &[]);
    assert_eq!(answered(&on, 12).len(), 3);
}

#[test]
fn a_disabled_site_disables_its_services() {
    let mut b = sextant_test_support::model::ModelBuilder::local_site1();
    let far = b.add_site("site2", ip("10.0.0.2"));
    let a = b.add_service("a", ip("192.0.2.1"));
    let c = b.add_service_at("c", ip("192.0.2.3"), far);
    b.add_vserver("vs", LbMethod::RoundRobin, vec![(a, 1), (c, 1)]);
    b.add_domain("www.example.com", VServerId::new(0), 30);
    let s = snap(b.build());
    let off = with_marks(&s, &[(AdminTarget::Site(far), AdminState::Disabled)]);
    assert_eq!(answered(&off, 8), vec![ip("192.0.2.1")]);
    assert_eq!(off.admin().service(c), AdminState::Disabled);
    let cause = off.admin().service_cause(off.model(), c).map(|c| c.kind);
    assert_eq!(cause, Some(AdminKind::Site));
}

#[test]
fn a_disabled_vserver_answers_as_if_everything_were_down() {
    let mut m = model(THREE, LbMethod::RoundRobin);
    m.services.push(service("spare", ip("192.0.2.9")));
    let mut backup = VServer::new("backup", ServiceProtocol::Http);
    backup.bindings.push(Binding {
        service: ServiceId::new(3),
        weight: 1,
    });
    m.vservers.push(backup);
    let vs = VServerId::new(0);

    // No backup configured: NODATA, never a last-resort answer.
    let off = with_marks(
        &snap(m.clone()),
        &[(AdminTarget::VServer(vs), AdminState::Disabled)],
    );
    let (d, addrs) = ask(&off, "198.51.100.1");
    assert_eq!((d.reason, addrs.is_empty()), (Reason::AdminDisabled, true));
    assert!(matches!(d.outcome, Outcome::NoData { .. }));
    let lines = trace(&off, "198.51.100.1", &NoSessions);
    assert!(
        lines.iter().any(|l| l.contains("vserver vs is disabled")),
        "{lines:#?}"
    );

    // A backup IP answers, as for all-DOWN.
    m.domains[DomainId::new(0)].backup_ip = Some(ip("203.0.113.1"));
    let off = with_marks(
        &snap(m.clone()),
        &[(AdminTarget::VServer(vs), AdminState::Disabled)],
    );
    let (d, addrs) = ask(&off, "198.51.100.1");
    assert_eq!(
        (d.reason, addrs),
        (Reason::BackupIp, vec![ip("203.0.113.1")])
    );

    // A backup vserver answers first.
    m.vservers[vs].backup_vserver = Some(VServerId::new(1));
    let off = with_marks(
        &snap(m.clone()),
        &[(AdminTarget::VServer(vs), AdminState::Disabled)],
    );
    let (d, addrs) = ask(&off, "198.51.100.1");
    assert_eq!(
        (d.reason, addrs),
        (Reason::BackupVServer, vec![ip("192.0.2.9")])
    );

    // A disabled backup vserver is passed over too: the backup IP answers.
    let both = with_marks(
        &snap(m),
        &[
            (AdminTarget::VServer(vs), AdminState::Disabled),
            (
                AdminTarget::VServer(VServerId::new(1)),
                AdminState::Disabled,
            ),
        ],
    );
    let (d, addrs) = ask(&both, "198.51.100.1");
    assert_eq!(
        (d.reason, addrs),
        (Reason::BackupIp, vec![ip("203.0.113.1")])
    );
}

#[test]
fn the_last_resort_never_answers_a_disabled_service() {
    let s = snap(model(THREE, LbMethod::RoundRobin));
    let all = [ServiceId::new(0), ServiceId::new(1), ServiceId::new(2)];
    let down = with_down(&s, &all);
    // Everything DOWN, `a` and `b` disabled: the last resort is `c`.
    let off = with_marks(
        &down,
        &[
            (AdminTarget::Service(all[0]), AdminState::Disabled),
            (AdminTarget::Service(all[1]), AdminState::Draining),
        ],
    );
    for i in 1..6 {
        let (d, addrs) = ask(&off, &format!("198.51.100.{i}"));
        assert_eq!(
            (d.reason, addrs),
            (Reason::LastResort, vec![ip("192.0.2.3")])
        );
    }
}

#[test]
fn a_draining_service_keeps_its_persisted_clients_only() {
    let mut m = model(THREE, LbMethod::RoundRobin);
    m.vservers[VServerId::new(0)].persistence = Some(Persistence {
        timeout: Duration::from_secs(120),
        v4_mask: 32,
        v6_mask: 128,
    });
    let s = snap(m);
    let vs = VServerId::new(0);
    let b = ServiceId::new(1);
    let mut sessions = Table::default();
    sessions.0.insert((vs, ip("198.51.100.7")), b);
    let drain = with_marks(&s, &[(AdminTarget::Service(b), AdminState::Draining)]);

    // The persisted client keeps `b`, without refreshing its entry.
    let (d, addrs) = ask_with(&drain, "198.51.100.7", &sessions);
    assert_eq!(
        (d.reason, addrs),
        (Reason::Persistence, vec![ip("192.0.2.2")])
    );
    assert_eq!(d.stick, None);
    let lines = trace(&drain, "198.51.100.7", &sessions);
    assert!(lines.iter().any(|l| l.contains("draining")), "{lines:#?}");

    // New clients never get it.
    for i in 1..20 {
        let (_, addrs) = ask_with(&drain, &format!("198.51.100.{}", 100 + i), &sessions);
        assert_ne!(addrs, vec![ip("192.0.2.2")]);
    }

    // Disabled rather than draining: the persisted client moves, and its
    // entry is remade on the new service.
    let off = with_marks(&s, &[(AdminTarget::Service(b), AdminState::Disabled)]);
    let (d, addrs) = ask_with(&off, "198.51.100.7", &sessions);
    assert_ne!(addrs, vec![ip("192.0.2.2")]);
    assert!(d.stick.is_some_and(|st| st.service != b));

    // Draining and DOWN: not answered even to its persisted clients.
    let down = with_marks(
        &with_down(&s, &[b]),
        &[(AdminTarget::Service(b), AdminState::Draining)],
    );
    let (_, addrs) = ask_with(&down, "198.51.100.7", &sessions);
    assert_ne!(addrs, vec![ip("192.0.2.2")]);
}

#[test]
fn a_draining_service_keeps_its_clients_when_the_others_are_down() {
    let mut m = model(THREE, LbMethod::RoundRobin);
    m.vservers[VServerId::new(0)].persistence = Some(Persistence {
        timeout: Duration::from_secs(120),
        v4_mask: 24,
        v6_mask: 64,
    });
    let s = with_down(&snap(m), &[ServiceId::new(0), ServiceId::new(2)]);
    let b = ServiceId::new(1);
    let mut sessions = Table::default();
    sessions
        .0
        .insert((VServerId::new(0), ip("198.51.100.0")), b);
    let drain = with_marks(&s, &[(AdminTarget::Service(b), AdminState::Draining)]);
    let (d, addrs) = ask_with(&drain, "198.51.100.7", &sessions);
    assert_eq!(
        (d.reason, addrs),
        (Reason::Persistence, vec![ip("192.0.2.2")])
    );
}
