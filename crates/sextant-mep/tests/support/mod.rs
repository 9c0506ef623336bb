//! Helpers for the driver tests: models of several sites on their own
//! loopback addresses, a running node with its event stream, and a
//! hand-driven fake peer speaking the protocol through the pure session.

#![allow(dead_code)]

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use sextant_core::{Model, RpcNode};
use sextant_mep::frame::{DEFAULT_MAX_FRAME, FrameReader};
use sextant_mep::message::{LoadMetrics, Message, Role, ServiceEntry, ServiceState, SiteMetrics};
use sextant_mep::session::{Action, Session, SessionConfig};
use sextant_mep::sync::View;
use sextant_mep::{LocalReport, MepEvent, MepHandle, Options};
use sextant_test_support::model::{LinkedSite, ModelBuilder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The MEP port of every test (each test has its own 127.x.y.0/24).
pub const PORT: u16 = 23011;
pub const SECURE_PORT: u16 = 23009;

/// A site of a test configuration.
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: &'static str,
    pub ip: IpAddr,
    pub parent: Option<&'static str>,
    pub backups: Vec<&'static str>,
}

pub fn site(name: &'static str, ip: &str) -> Spec {
    Spec {
        name,
        ip: ip.parse().unwrap(),
        parent: None,
        backups: Vec::new(),
    }
}

impl Spec {
    pub fn child_of(mut self, parent: &'static str) -> Spec {
        self.parent = Some(parent);
        self
    }

    pub fn backups(mut self, list: &[&'static str]) -> Spec {
        self.backups = list.to_vec();
        self
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.ip, PORT)
    }
}

/// The configuration `local` has: every site for a parent or mesh member;
/// itself and its parent for a child (as seed 001 says).
pub fn model(specs: &[Spec], local: &str, keepalive: Duration) -> Model {
    let me = specs.iter().find(|s| s.name == local).unwrap();
    let included: Vec<&Spec> = match me.parent {
        Some(p) => specs
            .iter()
            .filter(|s| s.name == local || s.name == p)
            .collect(),
        None => specs.iter().collect(),
    };
    // A child does not hold the backup lists ("can be done only on the
    // parent site").
    let no_backups: &[&str] = &[];
    let sites: Vec<LinkedSite<'_>> = included
        .iter()
        .map(|s| LinkedSite {
            name: s.name,
            ip: s.ip,
            parent: s.parent,
            backups: if me.parent.is_none() {
                &s.backups
            } else {
                no_backups
            },
        })
        .collect();
    let mut b = ModelBuilder::new();
    b.add_linked_sites(&sites);
    b.set_local(local);
    let mut m = b.build();
    m.params.mep_port = PORT;
    m.params.mep_secure_port = SECURE_PORT;
    m.params.mep_keepalive_timeout = keepalive;
    m
}

/// Adds `set ns rpcNode IP -password P [-secure YES]`.
pub fn rpc(m: &mut Model, ip: IpAddr, password: Option<&str>, secure: bool) {
    m.rpc_nodes.push(RpcNode {
        ip,
        password: password.map(str::to_owned),
        secure,
        source_ip: None,
    });
}

/// A running driver and its events.
pub struct Node {
    pub name: &'static str,
    pub handle: Option<MepHandle>,
    pub events: mpsc::Receiver<MepEvent>,
    /// Every event seen so far, in order.
    pub seen: Vec<MepEvent>,
    /// Events received but not yet matched by a `wait`.
    pending: std::collections::VecDeque<MepEvent>,
    /// Every site's services as the events so far say (applied in order,
    /// as the binary does).
    pub views: std::collections::HashMap<String, View>,
}

impl Node {
    pub fn start(specs: &[Spec], name: &'static str, keepalive: Duration) -> Node {
        Node::start_model(model(specs, name, keepalive), name)
    }

    pub fn start_model(m: Model, name: &'static str) -> Node {
        Node::start_with(m, name, Options::default())
    }

    pub fn start_with(m: Model, name: &'static str, options: Options) -> Node {
        let (tx, rx) = mpsc::channel(1024);
        let handle = sextant_mep::start_with(Arc::new(m), 1, tx, options)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        Node {
            name,
            handle: Some(handle),
            events: rx,
            seen: Vec::new(),
            pending: Default::default(),
            views: Default::default(),
        }
    }

    pub fn handle(&self) -> &MepHandle {
        self.handle.as_ref().expect("running")
    }

    pub fn stop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.stop();
        }
    }

    /// Stops and waits until the listening sockets are closed, for a
    /// test that starts the same site again at once.
    pub async fn close(&mut self) {
        if let Some(h) = self.handle.take() {
            h.close().await;
        }
    }

    /// Waits for an event matching `pred`, among those received but not
    /// matched yet and then new ones (every event is kept in `seen`);
    /// panics after `within`.
    pub async fn wait(
        &mut self,
        within: Duration,
        what: &str,
        pred: impl Fn(&MepEvent) -> bool,
    ) -> MepEvent {
        if let Some(i) = self.pending.iter().position(&pred) {
            return self.pending.remove(i).expect("in range");
        }
        let deadline = Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(e)) => {
                    self.record(&e);
                    if pred(&e) {
                        return e;
                    }
                    self.pending.push_back(e);
                }
                Ok(None) => panic!(
                    "{}: event channel closed while waiting for {what}",
                    self.name
                ),
                Err(_) => panic!(
                    "{}: no {what} within {within:?}; events: {:#?}",
                    self.name, self.seen
                ),
            }
        }
    }

    /// Collects events for `d`, then returns every event seen so far.
    pub async fn drain_for(&mut self, d: Duration) -> &[MepEvent] {
        let deadline = Instant::now() + d;
        while let Ok(Some(e)) = tokio::time::timeout_at(deadline, self.events.recv()).await {
            self.record(&e);
            self.pending.push_back(e);
        }
        &self.seen
    }

    fn record(&mut self, e: &MepEvent) {
        if let MepEvent::Services {
            from_site,
            full,
            entries,
            removed,
            ..
        } = e
        {
            self.views
                .entry(from_site.clone())
                .or_default()
                .apply(*full, entries, removed);
            // Big lists: keep a summary only.
            self.seen.push(MepEvent::Services {
                from_site: from_site.clone(),
                via: None,
                full: *full,
                entries: entries.iter().take(3).cloned().collect(),
                removed: removed.iter().take(3).copied().collect(),
            });
        } else {
            self.seen.push(e.clone());
        }
    }

    /// Waits until the events received make `site`'s view equal `list`.
    pub async fn wait_view(&mut self, site: &str, list: &[ServiceEntry], within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            if self.views.get(site).is_some_and(|v| v.matches(list)) {
                return;
            }
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(e)) => {
                    self.record(&e);
                    if !matches!(e, MepEvent::Services { .. }) {
                        self.pending.push_back(e);
                    }
                }
                Ok(None) => panic!("{}: event channel closed", self.name),
                Err(_) => {
                    let have = self.views.get(site).map_or(0, |v| v.entries.len());
                    let tail: Vec<_> = self.seen.iter().rev().take(20).collect();
                    panic!(
                        "{}: view of {site} ({have} entries) is not the {} published within {within:?}; last events: {tail:#?}",
                        self.name,
                        list.len()
                    )
                }
            }
        }
    }

    /// Forgets every event received so far.
    pub fn forget(&mut self) {
        self.seen.clear();
        self.pending.clear();
    }

    pub async fn wait_up(&mut self, site: &str, within: Duration) {
        let s = site.to_owned();
        self.wait(
            within,
            &format!("PeerUp {site}"),
            move |e| matches!(e, MepEvent::PeerUp { site, .. } if *site == s),
        )
        .await;
    }

    pub async fn wait_down(&mut self, site: &str, within: Duration) -> String {
        let s = site.to_owned();
        match self
            .wait(
                within,
                &format!("PeerDown {site}"),
                move |e| matches!(e, MepEvent::PeerDown { site, .. } if *site == s),
            )
            .await
        {
            MepEvent::PeerDown { reason, .. } => reason,
            _ => unreachable!(),
        }
    }

    /// Waits for `Services` from `from` whose first entry is `service`
    /// with `connections`; returns its `via`.
    pub async fn wait_services(
        &mut self,
        from: &str,
        service: &str,
        connections: u64,
        within: Duration,
    ) -> Option<String> {
        let (f, s) = (from.to_owned(), service.to_owned());
        match self
            .wait(within, &format!("Services from {from}: {service}={connections}"), move |e| {
                matches!(e, MepEvent::Services { from_site, entries, .. }
                    if *from_site == f
                    && entries.first().is_some_and(|x| x.service == s && x.metrics.connections == Some(connections)))
            })
            .await
        {
            MepEvent::Services { via, .. } => via,
            _ => unreachable!(),
        }
    }

    pub async fn wait_parent(&mut self, parent: Option<&str>, within: Duration) {
        let p = parent.map(str::to_owned);
        self.wait(
            within,
            &format!("ParentChanged {parent:?}"),
            move |e| matches!(e, MepEvent::ParentChanged { new_parent } if *new_parent == p),
        )
        .await;
    }

    pub fn publish(&self, service: &str, ip: &str, connections: u64) {
        self.handle().publish(report(service, ip, connections));
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop();
    }
}

pub fn report(service: &str, ip: &str, connections: u64) -> LocalReport {
    LocalReport {
        services: vec![ServiceEntry {
            service: service.to_owned(),
            ip: ip.parse().unwrap(),
            port: 80,
            public_ip: None,
            public_port: None,
            state: ServiceState::Up,
            metrics: LoadMetrics {
                connections: Some(connections),
                ..Default::default()
            },
        }],
        site: SiteMetrics {
            cpu_percent: Some(10.0),
            ..Default::default()
        },
    }
}

/// `n` services of one site, all distinct by (ip, port); `version` moves
/// the figures of the services `k` with `k % every == 0`.
pub fn many(n: usize, version: u64, every: usize) -> Vec<ServiceEntry> {
    (0..n)
        .map(|k| ServiceEntry {
            service: format!("svc-{k}"),
            ip: std::net::Ipv4Addr::new(10, (k >> 16) as u8, (k >> 8) as u8, k as u8).into(),
            port: 443,
            public_ip: (k % 7 == 0)
                .then(|| std::net::Ipv4Addr::new(192, 0, (k >> 8) as u8, k as u8).into()),
            public_port: (k % 7 == 0).then_some(8443),
            state: ServiceState::Up,
            metrics: LoadMetrics {
                connections: Some(if k % every.max(1) == 0 { version } else { 0 }),
                response_time_ms: Some(1.5),
                ..Default::default()
            },
        })
        .collect()
}

pub fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// A TCP connection from `from` (any port) to `to`.
pub async fn connect_from(from: IpAddr, to: SocketAddr) -> TcpStream {
    let s = TcpSocket::new_v4().unwrap();
    s.bind(SocketAddr::new(from, 0)).unwrap();
    s.connect(to).await.unwrap()
}

/// A peer driven by hand through the pure session: `me` talking to `peer`.
pub struct Fake {
    pub stream: TcpStream,
    pub session: Session,
    pub reader: FrameReader,
    pub origin: Instant,
}

impl Fake {
    pub fn new(
        stream: TcpStream,
        me: &Spec,
        peer: &Spec,
        secret: Option<&str>,
        keepalive: Duration,
    ) -> Fake {
        let cfg = SessionConfig {
            local_name: me.name.to_owned(),
            local_ip: me.ip,
            role: Role::Flat,
            generation: 1,
            peer_name: peer.name.to_owned(),
            peer_ip: peer.ip,
            secret: secret.map(|s| s.as_bytes().to_vec()),
            nonce: [0x5a; 32],
            acting_for: None,
            keepalive_timeout: keepalive,
            // The fake dialled unless the connection came in on its own
            // listening address.
            initiator: stream.local_addr().ok() != Some(me.addr()),
        };
        let origin = Instant::now();
        Fake {
            stream,
            session: Session::new(cfg, Duration::ZERO),
            reader: FrameReader::new(DEFAULT_MAX_FRAME),
            origin,
        }
    }

    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    async fn run(&mut self, actions: Vec<Action>) {
        for a in actions {
            let mut bytes = Vec::new();
            self.session
                .encode(&a, DEFAULT_MAX_FRAME, &mut bytes)
                .unwrap();
            if !bytes.is_empty() {
                self.stream.write_all(&bytes).await.unwrap();
            }
        }
    }

    /// The next whole message received, its seal checked as the session
    /// does (`None`: more bytes are needed).
    pub fn next_message(&mut self) -> Option<Message> {
        let limit = self.session.frame_limit(DEFAULT_MAX_FRAME);
        let f = self.reader.next_frame(limit).unwrap()?.to_vec();
        Some(self.session.open(&f).unwrap())
    }

    /// Completes the handshake; panics if the session closes.
    pub async fn handshake(&mut self) {
        let now = self.now();
        let a = self.session.connected(now, None);
        self.run(a).await;
        let mut buf = [0u8; 4096];
        while self.session.state() != sextant_mep::State::Up {
            let n = tokio::time::timeout(Duration::from_secs(5), self.stream.read(&mut buf))
                .await
                .expect("handshake in time")
                .unwrap();
            assert!(n > 0, "peer closed during the handshake");
            self.reader.push(&buf[..n]);
            while let Some(m) = self.next_message() {
                let now = self.now();
                let a = self.session.on_frame(m, now);
                assert!(
                    !a.iter().any(|x| matches!(x, Action::Close(_))),
                    "session closed: {a:?}"
                );
                self.run(a).await;
            }
        }
    }

    /// Plays a live peer for `d`: answers the node's keepalives (and every
    /// frame, as the session does) and sends its own keepalives.
    pub async fn serve_for(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        let mut buf = [0u8; 4096];
        loop {
            let wake = self
                .session
                .next_deadline()
                .map_or(deadline, |t| (self.origin + t).min(deadline));
            tokio::select! {
                r = self.stream.read(&mut buf) => {
                    let n = r.unwrap();
                    assert!(n > 0, "the node closed the connection");
                    self.reader.push(&buf[..n]);
                    while let Some(m) = self.next_message() {
                        let now = self.now();
                        let a = self.session.on_frame(m, now);
                        self.run(a).await;
                    }
                }
                _ = tokio::time::sleep_until(wake) => {
                    if Instant::now() >= deadline {
                        return;
                    }
                    let now = self.now();
                    let a = self.session.tick(now);
                    self.run(a).await;
                }
            }
        }
    }

    /// Sends a message (the session must be up).
    pub async fn send(&mut self, m: Message) {
        let a = self.session.send(m);
        self.run(a).await;
    }
}
