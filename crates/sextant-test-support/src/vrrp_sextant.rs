//! Sextant as a node of the VRRP lab ([`crate::vrrp_lab`]): a `sextant
//! serve` in a node's namespace with a configuration an operator of that
//! site would write (the site's DNS service on its VIPs), and its
//! `/v1/vrrp` read from inside the namespace.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::api::api_get_as;
use crate::process::{TEST_TOKEN, write_token_file};
use crate::vrrp_lab::{Instance, Lab, NodeChild, Preempt, VrrpImpl, VrrpNode, node_ip};

/// The API port of a lab node (on the node's own address).
pub const API_PORT: u16 = 8053;

/// The GSLB part every node of the lab's site carries: one site whose IP
/// is the first VIP, one service, one vserver answering `www.example.com`.
pub const WWW: &str = "www.example.com";
/// The address `www.example.com` answers.
pub const WWW_ANSWER: &str = "10.77.1.80";

/// The configuration of one node with `instances` (one VRID each): the
/// site, its DNS service on every VIP (port 53), and the VRIDs, in the
/// appliance syntax. `extra` is appended (tracking, sharing, ...).
pub fn node_config(instances: &[Instance], extra: &str) -> String {
    let mut c = String::new();
    let site_ip = instances
        .iter()
        .flat_map(|i| i.vips.iter())
        .next()
        .copied()
        .unwrap_or(IpAddr::from([10, 77, 0, 200]));
    let _ = writeln!(c, "add gslb site dc1 {site_ip}");
    let _ = writeln!(
        c,
        "add gslb service web1 {WWW_ANSWER} HTTP 80 -siteName dc1"
    );
    let _ = writeln!(c, "add gslb vserver vs_www HTTP");
    let _ = writeln!(c, "bind gslb vserver vs_www -serviceName web1");
    let _ = writeln!(c, "bind gslb vserver vs_www -domainName {WWW} -TTL 5");
    let interval = instances
        .first()
        .map_or(Duration::from_secs(1), |i| i.advert);
    let vmac = instances.first().is_none_or(|i| i.vmac);
    let _ = writeln!(
        c,
        "set vridParam -helloInterval {} -virtualMac {}",
        interval.as_millis(),
        if vmac { "ENABLED" } else { "DISABLED" }
    );
    for inst in instances {
        let mut add = format!("add vrid {} -priority {}", inst.vrid, inst.priority);
        match inst.preempt {
            Preempt::On => {}
            Preempt::Off => add.push_str(" -preemption DISABLED"),
            Preempt::Delay(d) => {
                let _ = write!(add, " -preemptiondelaytimer {} MSEC", d.as_millis());
            }
        }
        let _ = writeln!(c, "{add}");
        let _ = writeln!(c, "bind vrid {} -ifnum eth0", inst.vrid);
        for (k, vip) in inst.vips.iter().enumerate() {
            let _ = writeln!(c, "add service dns_v{}_{k} {vip} ADNS 53", inst.vrid);
            let _ = match vip {
                IpAddr::V4(_) => writeln!(
                    c,
                    "add ns ip {vip} 255.255.255.0 -type VIP -vrid {}",
                    inst.vrid
                ),
                IpAddr::V6(_) => writeln!(c, "add ns ip6 {vip}/64 -type VIP -vrid6 {}", inst.vrid),
            };
        }
    }
    c.push_str(extra);
    c
}

/// A running `sextant serve` on a lab node.
pub struct SextantNode {
    pub node: usize,
    pub api: SocketAddr,
    pub config: PathBuf,
    child: NodeChild,
    /// The lab's node namespace name, to reach the API from inside it.
    ns: String,
}

impl SextantNode {
    /// Writes `config` and starts `bin serve` on `node`, waiting until its
    /// API answers.
    pub fn start(lab: &Lab, bin: &Path, node: usize, config: &str) -> SextantNode {
        Self::start_as(lab, bin, node, config, "dc1")
    }

    /// [`SextantNode::start`] as site `local_site` (another site of a
    /// multi-site layout in the same lab).
    pub fn start_as(
        lab: &Lab,
        bin: &Path,
        node: usize,
        config: &str,
        local_site: &str,
    ) -> SextantNode {
        let path = lab.dir().join(format!("node{node}.conf"));
        std::fs::write(&path, config).expect("write node config");
        let api = SocketAddr::new(IpAddr::V4(node_ip(node)), API_PORT);
        let bin = bin.to_str().expect("utf-8 path");
        let conf = path.to_str().expect("utf-8 path");
        let api_arg = api.to_string();
        // The API is on the node's own (not loopback) address, so reads
        // need the token too, as they would for an operator.
        let tokens = lab.dir().join(format!("node{node}.api-tokens"));
        write_token_file(&tokens);
        let tokens = tokens.to_str().expect("utf-8 path").to_string();
        let child = lab.node(node).spawn(&[
            bin,
            "serve",
            "--config",
            conf,
            "--local-site",
            local_site,
            "--api-listen",
            &api_arg,
            "--udp-workers",
            "1",
            "--api-token-file",
            &tokens,
        ]);
        let mut n = SextantNode {
            node,
            api,
            config: path,
            child,
            ns: lab.node(node).ns.name.clone(),
        };
        let ok = (0..200).any(|_| {
            if !n.child.is_running() {
                return false;
            }
            if lab
                .node(node)
                .run(|| {
                    api_get_as::<serde_json::Value>(
                        api,
                        "/v1/status",
                        Some(TEST_TOKEN),
                        Duration::from_millis(200),
                    )
                })
                .is_ok()
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
            false
        });
        assert!(ok, "sextant on node {node} did not come up:\n{}", n.log());
        n
    }

    /// `/v1/vrrp`, read inside the node's namespace.
    pub fn vrrp(&self, lab: &Lab) -> Result<sextant_api::Vrrp, String> {
        let api = self.api;
        lab.node(self.node)
            .run(|| api_get_as(api, "/v1/vrrp", Some(TEST_TOKEN), Duration::from_secs(2)))
    }

    /// `/v1/status`, read inside the node's namespace (its DNS counters say
    /// whether it answered).
    pub fn status(&self, lab: &Lab) -> Result<sextant_api::Status, String> {
        let api = self.api;
        lab.node(self.node)
            .run(|| api_get_as(api, "/v1/status", Some(TEST_TOKEN), Duration::from_secs(2)))
    }

    /// `/v1/sites`, read inside the node's namespace.
    pub fn sites(&self, lab: &Lab) -> Result<Vec<sextant_api::Site>, String> {
        let api = self.api;
        lab.node(self.node)
            .run(|| api_get_as(api, "/v1/sites", Some(TEST_TOKEN), Duration::from_secs(2)))
    }

    /// The state of VRID `vrid` (IPv4) on this node: `MASTER`, `BACKUP`...
    pub fn state(&self, lab: &Lab, vrid: u8) -> Option<String> {
        let v = self.vrrp(lab).ok()?;
        v.vrids
            .into_iter()
            .find(|r| r.vrid == vrid && r.family == "ipv4")
            .map(|r| r.state)
    }

    /// VRID `vrid` (IPv4) of this node's `/v1/vrrp`.
    pub fn vrid(&self, lab: &Lab, vrid: u8) -> Option<sextant_api::VrrpVrid> {
        self.vrrp(lab)
            .ok()?
            .vrids
            .into_iter()
            .find(|r| r.vrid == vrid && r.family == "ipv4")
    }

    /// The drop counter `reason` of this node's `/v1/vrrp`, summed over
    /// its interfaces (0 when absent or when the API does not answer).
    pub fn dropped(&self, lab: &Lab, reason: &str) -> u64 {
        self.vrrp(lab).map_or(0, |v| {
            v.dropped
                .iter()
                .filter(|d| d.reason == reason)
                .map(|d| d.count)
                .sum()
        })
    }

    pub fn log(&self) -> String {
        self.child.log()
    }

    pub fn is_running(&mut self) -> bool {
        self.child.is_running()
    }

    /// SIGTERM: the node hands its VIPs over (priority 0) and exits.
    pub fn stop_graceful(&mut self) {
        let _ = self.child.terminate(Duration::from_secs(10));
    }

    /// Sends `sig` (SIGSTOP and SIGCONT: a process that does not run for
    /// a while, as when starved or in a paused VM).
    pub fn signal(&mut self, sig: i32) {
        self.child.signal(sig);
    }

    /// SIGKILL: nothing is sent and the VIPs stay on its interfaces (a
    /// hard failure also cuts the node's link, see [`Lab::link_down`]).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
    }

    pub fn namespace(&self) -> &str {
        &self.ns
    }
}

/// Polls `check` every 20 ms until it holds and returns how long that
/// took; panics after `within` with `what`, the last reason `check` gave
/// and `logs()` (all the logs worth reading: every node's).
#[track_caller]
pub fn eventually(
    within: Duration,
    what: &str,
    mut check: impl FnMut() -> Result<(), String>,
    logs: impl Fn() -> String,
) -> Duration {
    let start = Instant::now();
    loop {
        let last = match check() {
            Ok(()) => return start.elapsed(),
            Err(e) => e,
        };
        if start.elapsed() > within {
            panic!("{what}: still not after {within:?}: {last}\n{}", logs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Checks `check` every 20 ms for `during`; panics with `what`, the reason
/// and `logs()` the first time it does not hold.
#[track_caller]
pub fn always(
    during: Duration,
    what: &str,
    mut check: impl FnMut() -> Result<(), String>,
    logs: impl Fn() -> String,
) {
    let start = Instant::now();
    loop {
        if let Err(e) = check() {
            panic!(
                "{what}: broken after {:?}: {e}\n{}",
                start.elapsed(),
                logs()
            );
        }
        if start.elapsed() > during {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sextant as a [`VrrpImpl`], for the failover benchmark.
pub struct SextantImpl {
    pub bin: PathBuf,
}

impl VrrpImpl for SextantImpl {
    fn name(&self) -> &str {
        "sextant"
    }

    fn start(&self, lab: &Lab, node: usize, instances: &[Instance]) -> Box<dyn VrrpNode> {
        let config = node_config(instances, "");
        Box::new(SextantNode::start(lab, &self.bin, node, &config))
    }
}

impl VrrpNode for SextantNode {
    fn stop_graceful(&mut self) {
        SextantNode::stop_graceful(self);
    }

    fn stop_hard(&mut self) {
        self.kill();
    }

    fn is_running(&mut self) -> bool {
        SextantNode::is_running(self)
    }

    fn log(&self) -> String {
        SextantNode::log(self)
    }
}
