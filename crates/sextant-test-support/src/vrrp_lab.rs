//! A VRRP lab in network namespaces: N nodes and one client on a Linux
//! bridge, keepalived as the baseline implementation, and a pinger that
//! measures the longest gap in replies from a VIP.
//!
//! ```text
//!            switch namespace (sxt-PID-TAG-sw): bridge br0
//!        vn0          vn1      ...     vnN-1          vc        <- bridge side
//!         |            |                 |             |
//!       eth0         eth0              eth0          eth0       <- host side
//!   node 0 (-n0)  node 1 (-n1)  ...  node N-1    client (-c)
//!   10.77.0.10    10.77.0.11         10.77.0.(10+i)  10.77.0.100
//!   fd77::10      fd77::11           fd77::(10+i)    fd77::100   (if IPv6 works)
//! ```
//!
//! * [`Lab::new`] builds it (or returns None after
//!   [`cannot_run`](crate::ci::cannot_run): not root, or `ip` missing);
//!   everything is deleted on drop.
//! * [`Lab::link_down`] / [`Lab::link_up`] cut a node's cable (its veth end
//!   on the bridge side): the node's own `eth0` loses carrier.
//! * [`Lab::owners`] / [`Lab::which_node_owns`] are the ground truth (who
//!   has the VIP on an interface, by `ip addr` in each node namespace);
//!   [`Lab::client_neigh`] is what the client believes (its ARP entry),
//!   [`Lab::client_arp`] who answers an ARP request from the client.
//! * [`Keepalived`] runs keepalived 2.2 (VRRPv3) in a node namespace;
//!   [`VrrpImpl`] is the implementation under test in general (the
//!   benchmark takes it as a parameter), [`KeepalivedImpl`] the baseline.
//! * [`Pinger`] pings a VIP from the client every few milliseconds over a
//!   raw ICMP socket and reports the longest gap between replies.
//!
//! Processes are ended by PID, never by name. Declare the [`Lab`] before
//! the processes that run in it, so that they are dropped (killed) first.

use std::fs;
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::ci::{cannot_run, have_program, is_root};
use crate::netns::Netns;
use crate::scratch::Scratch;

/// The lab's IPv4 subnet, 10.77.0.0/24.
pub const PREFIX_LEN: u8 = 24;
/// The client's address.
pub const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 100);
/// The client's IPv6 address (when [`Lab::ipv6`]).
pub const CLIENT_IP6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 0x100);
/// Nodes are at most this many (10.77.0.10 ..= 10.77.0.99).
pub const MAX_NODES: usize = 90;

/// Node i's address, 10.77.0.(10+i).
pub fn node_ip(i: usize) -> Ipv4Addr {
    assert!(i < MAX_NODES, "node {i}: at most {MAX_NODES} nodes");
    Ipv4Addr::new(10, 77, 0, 10 + i as u8)
}

/// Node i's IPv6 address, fd77::(10+i) (decimal digits, as in IPv4).
pub fn node_ip6(i: usize) -> Ipv6Addr {
    assert!(i < MAX_NODES, "node {i}: at most {MAX_NODES} nodes");
    Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, hex_digits_of(10 + i as u16))
}

/// 23 -> 0x23, so that fd77::23 reads like 10.77.0.23.
fn hex_digits_of(n: u16) -> u16 {
    u16::from_str_radix(&n.to_string(), 16).expect("decimal digits are hex digits")
}

/// A VIP of the lab's subnet that no host has: 10.77.0.(200+k).
pub fn vip(k: u8) -> Ipv4Addr {
    assert!(k < 50, "vip({k}): 10.77.0.200 ..= 10.77.0.249");
    Ipv4Addr::new(10, 77, 0, 200 + k)
}

/// The VRRP virtual MAC of a VRID over IPv4 (RFC 5798 §7.3).
pub fn virtual_mac(vrid: u8) -> [u8; 6] {
    [0x00, 0x00, 0x5e, 0x00, 0x01, vrid]
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn fmt_mac(mac: [u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.trim().split(':');
    for b in &mut mac {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// One namespace of the lab (a node or the client) with its `eth0`.
pub struct Host {
    /// The namespace; [`Netns::exec`] and [`Netns::run`] work in it.
    pub ns: Netns,
    /// Its IPv4 address on `eth0`.
    pub ip: Ipv4Addr,
    /// Its IPv6 address on `eth0`, when the lab has IPv6.
    pub ip6: Option<Ipv6Addr>,
    /// The MAC address of its `eth0`.
    pub mac: [u8; 6],
    /// The bridge-side end of its veth pair, in the switch namespace.
    pub port: String,
    dir: PathBuf,
}

static SPAWNED: AtomicU16 = AtomicU16::new(0);

impl Host {
    /// `ip netns exec NS args...` to completion.
    pub fn exec(&self, args: &[&str]) -> Output {
        self.ns.exec(args)
    }

    /// Like [`Host::exec`]; panics unless it succeeds.
    pub fn exec_ok(&self, args: &[&str]) -> Output {
        self.ns.exec_ok(args)
    }

    /// Runs `f` on a thread inside the namespace (see [`Netns::run`]).
    pub fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.ns.run(f)
    }

    /// Starts `args` in the namespace (`ip netns exec NS args...`, which
    /// execs, so the child's PID is the program's), stdout and stderr to a
    /// log file of its own. The child is ended by PID when the returned
    /// handle is dropped.
    pub fn spawn(&self, args: &[&str]) -> NodeChild {
        let seq = SPAWNED.fetch_add(1, Ordering::Relaxed);
        let program = Path::new(args[0])
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let log = self
            .dir
            .join(format!("{}-{program}-{seq}.log", self.ns.name));
        let file = fs::File::create(&log).expect("create child log");
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns.name])
            .args(args)
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("dup log"))
            .stderr(file);
        crate::process::die_with_parent(&mut cmd);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {args:?} in {}: {e}", self.ns.name));
        NodeChild {
            child: Some(child),
            what: format!("{args:?} in {}", self.ns.name),
            log,
        }
    }
}

/// A process started by [`Host::spawn`]; on drop it gets SIGTERM, then
/// SIGKILL if it is still there after 5 s (by PID).
pub struct NodeChild {
    child: Option<Child>,
    what: String,
    log: PathBuf,
}

impl NodeChild {
    /// Its PID, while it has not been reaped.
    pub fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.id() as i32)
    }

    /// What it logged (stdout and stderr) so far.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Whether it still runs (reaps it if it has exited).
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            None => false,
            Some(c) => match c.try_wait() {
                Ok(None) => true,
                _ => {
                    self.child = None;
                    false
                }
            },
        }
    }

    /// Sends `sig` to it, if it still runs.
    pub fn signal(&mut self, sig: i32) {
        if self.is_running() {
            let pid = self.pid().expect("running");
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe {
                libc::kill(pid, sig);
            }
        }
    }

    /// Waits until it exits, at most `deadline`; its status, or None if it
    /// still runs.
    pub fn wait_exit(&mut self, deadline: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + deadline;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                self.child = None;
                return Some(st);
            }
            if Instant::now() >= end {
                return None;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGTERM, then SIGKILL after `grace`; waits for it.
    pub fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.signal(libc::SIGTERM);
        if let Some(st) = self.wait_exit(grace) {
            return Some(st);
        }
        self.kill()
    }

    /// SIGKILL; waits for it.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let _ = child.kill();
        child.wait().ok()
    }

    /// What it is, for messages.
    pub fn what(&self) -> &str {
        &self.what
    }
}

impl Drop for NodeChild {
    fn drop(&mut self) {
        self.terminate(Duration::from_secs(5));
    }
}

/// The lab: a switch namespace with bridge `br0`, N node namespaces and a
/// client namespace, each on the bridge by a veth pair. See the module
/// documentation.
pub struct Lab {
    nodes: Vec<Host>,
    client: Host,
    switch: Netns,
    ipv6: bool,
    scratch: Scratch,
}

impl Lab {
    /// Builds the lab for a test named `tag` (short: namespace names are
    /// `sxt-PID-TAG-n0`, and namespaces of dead test processes with the
    /// `sxt-PID-` prefix are removed). Returns None after
    /// [`cannot_run`](crate::ci::cannot_run) when not root or `ip` is
    /// missing.
    pub fn new(tag: &str, nodes: usize) -> Option<Lab> {
        if !is_root() {
            cannot_run("this test needs root (network namespaces, a bridge, raw sockets)");
            return None;
        }
        if !have_program("ip") {
            cannot_run("this test needs `ip` (scripts/setup.sh installs iproute2)");
            return None;
        }
        assert!(
            (1..=MAX_NODES).contains(&nodes),
            "Lab::new: 1..={MAX_NODES} nodes"
        );
        assert!(
            tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "Lab::new: tag {tag:?} is letters, digits and _"
        );
        Netns::remove_stale();
        let base = format!("sxt-{}-{tag}", std::process::id());
        let scratch = Scratch::new(&format!("vrrp-{tag}"));
        let switch = make_ns(&format!("{base}-sw"));
        switch.exec_ok(&["ip", "link", "add", "br0", "type", "bridge"]);
        switch.exec_ok(&["ip", "link", "set", "br0", "up"]);
        // The bridge must not filter VRRP multicast or IPv6 ND.
        let _ = switch.exec(&[
            "ip",
            "link",
            "set",
            "br0",
            "type",
            "bridge",
            "mcast_snooping",
            "0",
        ]);
        let ipv6 = Path::new("/proc/sys/net/ipv6").exists();
        let mut hosts = Vec::with_capacity(nodes);
        let mut ipv6_ok = ipv6;
        for i in 0..nodes {
            let (host, v6) = make_host(
                &switch,
                &format!("{base}-n{i}"),
                &format!("vn{i}"),
                node_ip(i),
                ipv6.then(|| node_ip6(i)),
                &scratch.0,
            );
            ipv6_ok &= v6;
            hosts.push(host);
        }
        let (client, v6) = make_host(
            &switch,
            &format!("{base}-c"),
            "vc",
            CLIENT_IP,
            ipv6.then_some(CLIENT_IP6),
            &scratch.0,
        );
        ipv6_ok &= v6;
        // The client learns a VIP's MAC only by asking (ARP), and updates
        // an existing entry from gratuitous ARP, like a router with the
        // kernel's default: no entries created from unsolicited ARP.
        client.run(|| {
            for f in ["all", "default", "eth0"] {
                let p = format!("/proc/sys/net/ipv4/conf/{f}/arp_accept");
                fs::write(&p, "0").unwrap_or_else(|e| panic!("write {p}: {e}"));
            }
        });
        Some(Lab {
            nodes: hosts,
            client,
            switch,
            ipv6: ipv6_ok,
            scratch,
        })
    }

    /// How many nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the lab has no nodes (never: [`Lab::new`] wants one).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Whether every host has its IPv6 address.
    pub fn ipv6(&self) -> bool {
        self.ipv6
    }

    /// Node i.
    pub fn node(&self, i: usize) -> &Host {
        &self.nodes[i]
    }

    /// The client.
    pub fn client(&self) -> &Host {
        &self.client
    }

    /// The switch namespace (bridge `br0`, ports `vn0`.. and `vc`).
    pub fn switch(&self) -> &Netns {
        &self.switch
    }

    /// The lab's scratch directory (configs and logs).
    pub fn dir(&self) -> &Path {
        &self.scratch.0
    }

    /// The MAC address of node i's `eth0`.
    pub fn mac_of(&self, i: usize) -> [u8; 6] {
        self.nodes[i].mac
    }

    /// Cuts node i's cable: its port on the bridge goes down (and its own
    /// `eth0` loses carrier).
    pub fn link_down(&self, i: usize) {
        self.switch
            .exec_ok(&["ip", "link", "set", &self.nodes[i].port, "down"]);
    }

    /// Plugs node i's cable back in.
    pub fn link_up(&self, i: usize) {
        self.switch
            .exec_ok(&["ip", "link", "set", &self.nodes[i].port, "up"]);
    }

    /// The addresses on each interface of node i except `lo`, by
    /// `ip -j addr` in its namespace: (interface, address).
    pub fn addrs_of(&self, i: usize) -> Vec<(String, IpAddr)> {
        let out = self.nodes[i].exec_ok(&["ip", "-j", "addr", "show"]);
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("ip -j addr show is JSON");
        let mut addrs = Vec::new();
        for link in v.as_array().into_iter().flatten() {
            let name = link["ifname"].as_str().unwrap_or_default();
            if name == "lo" {
                continue;
            }
            for a in link["addr_info"].as_array().into_iter().flatten() {
                if let Some(ip) = a["local"].as_str().and_then(|s| s.parse().ok()) {
                    addrs.push((name.to_string(), ip));
                }
            }
        }
        addrs
    }

    /// The nodes that have `vip` on an interface (the ground truth).
    pub fn owners(&self, vip: IpAddr) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.addrs_of(i).iter().any(|(_, a)| *a == vip))
            .collect()
    }

    /// The node that has `vip`, if exactly one has it.
    pub fn which_node_owns(&self, vip: IpAddr) -> Option<usize> {
        match self.owners(vip).as_slice() {
            [i] => Some(*i),
            _ => None,
        }
    }

    /// Removes `addr` from every interface of node i that has it (what a
    /// reboot does after the node's VRRP process was killed).
    pub fn remove_addr(&self, i: usize, addr: IpAddr) {
        let plen = if addr.is_ipv4() { 32 } else { 128 };
        for (ifname, a) in self.addrs_of(i) {
            if a == addr {
                let out = self.nodes[i].exec_ok(&["ip", "-j", "addr", "show", "dev", &ifname]);
                let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
                let len = v[0]["addr_info"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|x| x["local"].as_str() == Some(&a.to_string()))
                    .and_then(|x| x["prefixlen"].as_u64())
                    .unwrap_or(plen);
                self.nodes[i].exec_ok(&[
                    "ip",
                    "addr",
                    "del",
                    &format!("{a}/{len}"),
                    "dev",
                    &ifname,
                ]);
            }
        }
    }

    /// The client's neighbour entry for `vip` (its ARP entry, or its ND
    /// entry for an IPv6 VIP) after one echo request to `vip` (waiting up
    /// to 1 s for the reply) made it resolve: the MAC it sends to, or None
    /// when the entry is incomplete or failed.
    pub fn client_neigh(&self, vip: IpAddr) -> Option<[u8; 6]> {
        if let IpAddr::V4(v4) = vip {
            let _ = self.ping_once(v4, Duration::from_secs(1));
        } else {
            let _ = self
                .client
                .exec(&["ping", "-c", "1", "-W", "1", &vip.to_string()]);
        }
        self.client_neigh_entry(vip)
    }

    /// Who answers ARP for `vip`, as the client hears it: one ARP request
    /// broadcast from the client's `eth0` (an AF_PACKET socket, not the
    /// kernel's neighbour table), and the sender MAC of every reply for
    /// `vip` within `wait`, in order, duplicates kept. Unlike
    /// [`Lab::client_neigh`] nothing but ARP is sent, so the answer is not
    /// mixed with the MACs of IP packets the nodes send to the client.
    pub fn client_arp(&self, vip: Ipv4Addr, wait: Duration) -> Vec<[u8; 6]> {
        let client_mac = self.client.mac;
        self.client.run(move || arp_probe(client_mac, vip, wait))
    }

    /// The client's neighbour entry for `vip` as it is, without sending
    /// anything.
    pub fn client_neigh_entry(&self, vip: IpAddr) -> Option<[u8; 6]> {
        let out = self.client.exec_ok(&[
            "ip",
            "-j",
            "neigh",
            "show",
            "to",
            &vip.to_string(),
            "dev",
            "eth0",
        ]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        v.as_array()
            .into_iter()
            .flatten()
            .find_map(|e| e["lladdr"].as_str().and_then(parse_mac))
    }

    /// Forgets the client's neighbour entry for `vip`.
    pub fn client_forget(&self, vip: IpAddr) {
        let _ = self
            .client
            .exec(&["ip", "neigh", "del", &vip.to_string(), "dev", "eth0"]);
    }

    /// One echo request from the client to `target`; the round-trip time
    /// if a reply came within `timeout`.
    pub fn ping_once(&self, target: Ipv4Addr, timeout: Duration) -> Option<Duration> {
        let sock = icmp_socket(&self.client);
        let id = next_icmp_id();
        sock.set_read_timeout(Some(Duration::from_millis(20)))
            .expect("SO_RCVTIMEO");
        let t0 = Instant::now();
        send_echo(&sock, target, id, 1);
        let end = t0 + timeout;
        let mut buf = [0u8; 1500];
        while Instant::now() < end {
            if let Ok(n) = (&sock).read(&mut buf)
                && parse_echo_reply(&buf[..n], target, id).is_some()
            {
                return Some(t0.elapsed());
            }
        }
        None
    }
}

/// One ARP request for `target` from `eth0` of the current namespace
/// (which has `mac` and [`CLIENT_IP`]); the sender MACs of the replies.
fn arp_probe(mac: [u8; 6], target: Ipv4Addr, wait: Duration) -> Vec<[u8; 6]> {
    let proto = (libc::ETH_P_ARP as u16).to_be();
    // SAFETY: socket(2) with constant arguments; the descriptor is owned
    // by `fd` below.
    let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM, i32::from(proto)) };
    assert!(
        raw >= 0,
        "AF_PACKET socket: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
    use std::os::fd::AsRawFd;
    // SAFETY: a NUL-terminated name.
    let ifindex = unsafe { libc::if_nametoindex(c"eth0".as_ptr()) };
    assert!(ifindex != 0, "no eth0 here");
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = ifindex as i32;
    sll.sll_halen = 6;
    sll.sll_addr[..6].copy_from_slice(&[0xff; 6]);
    let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: binds our socket to a valid sockaddr_ll of `len` bytes.
    let rc = unsafe { libc::bind(fd.as_raw_fd(), (&raw const sll).cast(), len) };
    assert_eq!(rc, 0, "bind AF_PACKET: {}", std::io::Error::last_os_error());
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 10_000,
    };
    // SAFETY: SO_RCVTIMEO with a timeval of the right size.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&raw const tv).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
    }
    let mut req = [0u8; 28];
    req[0..2].copy_from_slice(&1u16.to_be_bytes()); // Ethernet
    req[2..4].copy_from_slice(&0x0800u16.to_be_bytes()); // IPv4
    req[4] = 6;
    req[5] = 4;
    req[6..8].copy_from_slice(&1u16.to_be_bytes()); // request
    req[8..14].copy_from_slice(&mac);
    req[14..18].copy_from_slice(&CLIENT_IP.octets());
    req[24..28].copy_from_slice(&target.octets());
    // SAFETY: sends `req` to the broadcast sockaddr_ll above.
    let sent = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            req.as_ptr().cast(),
            req.len(),
            0,
            (&raw const sll).cast(),
            len,
        )
    };
    assert_eq!(sent, 28, "send ARP: {}", std::io::Error::last_os_error());
    let mut macs = Vec::new();
    let end = Instant::now() + wait;
    let mut buf = [0u8; 128];
    while Instant::now() < end {
        // SAFETY: reads at most buf.len() bytes into buf.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 28 {
            continue;
        }
        let op = u16::from_be_bytes([buf[6], buf[7]]);
        let spa = Ipv4Addr::new(buf[14], buf[15], buf[16], buf[17]);
        // An answer to this probe is addressed to the client; gratuitous
        // replies (a new master's announcements) are addressed to the VIP.
        let tpa = Ipv4Addr::new(buf[24], buf[25], buf[26], buf[27]);
        if op == 2 && spa == target && tpa == CLIENT_IP {
            macs.push(buf[8..14].try_into().expect("6 bytes"));
        }
    }
    macs
}

fn make_ns(name: &str) -> Netns {
    let _ = Command::new("ip").args(["netns", "del", name]).output();
    let out = Command::new("ip")
        .args(["netns", "add", name])
        .output()
        .expect("run ip netns add");
    assert!(
        out.status.success(),
        "ip netns add {name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ns = Netns {
        name: name.to_string(),
    };
    ns.exec_ok(&["ip", "link", "set", "lo", "up"]);
    // A new namespace takes IPv4 forwarding from the host's (a container
    // engine turns it on there): a node that forwarded would pass a VIP's
    // traffic on to the master, which is not what a VRRP node does unless
    // told to (`-sendToMaster`).
    ns.exec_ok(&["sysctl", "-qw", "net.ipv4.ip_forward=0"]);
    ns
}

/// A host namespace on the bridge; whether its IPv6 address went on.
fn make_host(
    switch: &Netns,
    name: &str,
    port: &str,
    ip: Ipv4Addr,
    ip6: Option<Ipv6Addr>,
    dir: &Path,
) -> (Host, bool) {
    let ns = make_ns(name);
    switch.exec_ok(&[
        "ip", "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", name,
    ]);
    switch.exec_ok(&["ip", "link", "set", port, "master", "br0", "up"]);
    ns.exec_ok(&[
        "ip",
        "addr",
        "add",
        &format!("{ip}/{PREFIX_LEN}"),
        "dev",
        "eth0",
    ]);
    let v6 = ip6.is_some_and(|a| {
        ns.exec(&[
            "ip",
            "addr",
            "add",
            &format!("{a}/64"),
            "dev",
            "eth0",
            "nodad",
        ])
        .status
        .success()
    });
    ns.exec_ok(&["ip", "link", "set", "eth0", "up"]);
    let out = ns.exec_ok(&["ip", "-j", "link", "show", "eth0"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ip -j link is JSON");
    let mac = v[0]["address"]
        .as_str()
        .and_then(parse_mac)
        .expect("eth0 has a MAC");
    (
        Host {
            ns,
            ip,
            ip6: if v6 { ip6 } else { None },
            mac,
            port: port.to_string(),
            dir: dir.to_path_buf(),
        },
        v6,
    )
}

// ---------------------------------------------------------------------------
// VRRP instances and the implementations that run them.

/// Preemption of one VRRP instance on one node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Preempt {
    /// A higher priority takes over at once (the default).
    On,
    /// Never takes over from a running master (`nopreempt`).
    Off,
    /// Takes over after this delay (`preempt_delay`).
    Delay(Duration),
}

/// One VRRP instance (one VRID) as one node runs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    pub vrid: u8,
    /// 1..=254 (255 only for the address owner).
    pub priority: u8,
    /// Advertisement interval; VRRPv3 has centiseconds.
    pub advert: Duration,
    pub preempt: Preempt,
    /// Whether the VIPs live on a macvlan with the virtual MAC
    /// 00:00:5e:00:01:VRID (keepalived's `use_vmac`).
    pub vmac: bool,
    pub vips: Vec<IpAddr>,
}

impl Instance {
    /// VRID `vrid` with one VIP, preemption on, no virtual MAC.
    pub fn new(vrid: u8, priority: u8, advert: Duration, vip: IpAddr) -> Instance {
        Instance {
            vrid,
            priority,
            advert,
            preempt: Preempt::On,
            vmac: false,
            vips: vec![vip],
        }
    }

    /// With or without the virtual MAC.
    pub fn vmac(mut self, on: bool) -> Instance {
        self.vmac = on;
        self
    }

    /// With this preemption.
    pub fn preempt(mut self, p: Preempt) -> Instance {
        self.preempt = p;
        self
    }

    /// RFC 5798 §6.1: Master_Down_Interval = 3 × interval + skew, with
    /// skew = (256 − priority) × interval / 256, for this node as a backup.
    pub fn master_down_interval(&self) -> Duration {
        self.advert * 3 + self.skew()
    }

    /// RFC 5798 §6.1 Skew_Time, (256 − priority) × interval / 256.
    pub fn skew(&self) -> Duration {
        self.advert * (256 - u32::from(self.priority)) / 256
    }
}

/// A VRRP implementation that the lab can run on a node: keepalived now,
/// Sextant later. Adding one is implementing these two traits and a case of
/// [`implementation`].
pub trait VrrpImpl {
    /// Its name, for tables (`keepalived`).
    fn name(&self) -> &str;
    /// Starts it on node `node` of `lab` with these instances (one per
    /// VRID). Returns once the process runs; it may still be in its
    /// initial state.
    fn start(&self, lab: &Lab, node: usize, instances: &[Instance]) -> Box<dyn VrrpNode>;
}

/// One running node of a [`VrrpImpl`].
pub trait VrrpNode {
    /// Graceful stop: it resigns (priority 0 adverts) and gives its VIPs
    /// up; returns once it has exited.
    fn stop_graceful(&mut self);
    /// Hard stop: SIGKILL, nothing sent, its addresses stay where they are.
    fn stop_hard(&mut self);
    /// Whether it still runs.
    fn is_running(&mut self) -> bool;
    /// What it logged so far.
    fn log(&self) -> String;
}

/// The implementation named `name` (`keepalived`), or None.
pub fn implementation(name: &str) -> Option<Box<dyn VrrpImpl>> {
    match name {
        "keepalived" => Some(Box::new(KeepalivedImpl)),
        // The binary comes from the environment: this crate cannot see
        // cargo's CARGO_BIN_EXE_sextant (bench/vrrp-failover.sh sets it).
        "sextant" => Some(Box::new(crate::vrrp_sextant::SextantImpl {
            bin: std::env::var_os("SEXTANT_BIN")
                .map_or_else(|| "target/release/sextant".into(), Into::into),
        })),
        _ => None,
    }
}

/// The names [`implementation`] knows.
pub const IMPLEMENTATIONS: &[&str] = &["keepalived", "sextant"];

/// keepalived as a [`VrrpImpl`].
pub struct KeepalivedImpl;

impl VrrpImpl for KeepalivedImpl {
    fn name(&self) -> &str {
        "keepalived"
    }

    fn start(&self, lab: &Lab, node: usize, instances: &[Instance]) -> Box<dyn VrrpNode> {
        Box::new(Keepalived::start(lab, node, instances))
    }
}

impl VrrpNode for Keepalived {
    fn stop_graceful(&mut self) {
        self.stop();
    }
    fn stop_hard(&mut self) {
        self.kill();
    }
    fn is_running(&mut self) -> bool {
        Keepalived::is_running(self)
    }
    fn log(&self) -> String {
        Keepalived::log(self)
    }
}

/// The keepalived program: `keepalived` on PATH, or Debian's
/// /usr/sbin/keepalived when PATH lacks /usr/sbin.
pub fn keepalived_program() -> Option<String> {
    if have_program("keepalived") {
        Some("keepalived".into())
    } else if Path::new("/usr/sbin/keepalived").exists() {
        Some("/usr/sbin/keepalived".into())
    } else {
        None
    }
}

/// Whether keepalived can run here; if not, [`cannot_run`] was called and
/// the caller returns.
pub fn have_keepalived() -> bool {
    if keepalived_program().is_none() {
        cannot_run("this test needs keepalived (scripts/setup.sh installs it)");
        return false;
    }
    true
}

/// keepalived (VRRP only, VRRPv3) on one node, in the foreground:
/// `keepalived -n -l -D -G -P -R -f CONF -p PIDFILE -r VRRP_PIDFILE`.
/// keepalived forks a VRRP child, whose PID is in `VRRP_PIDFILE`; both
/// are ended by PID.
pub struct Keepalived {
    pub node: usize,
    /// The configuration file.
    pub conf: PathBuf,
    pid_file: PathBuf,
    vrrp_pid_file: PathBuf,
    child: NodeChild,
}

static KEEPALIVED_SEQ: AtomicU16 = AtomicU16::new(0);

impl Keepalived {
    /// keepalived.conf for node `node` with these instances (named
    /// `VI_<vrid>`, interface `eth0`, no scripts, no authentication).
    pub fn config(node: usize, instances: &[Instance]) -> String {
        let mut c = format!(
            "# sextant-test-support vrrp_lab, node {node}\n\
             global_defs {{\n    router_id lab-n{node}\n    vrrp_version 3\n}}\n"
        );
        for inst in instances {
            assert!(
                inst.advert >= Duration::from_millis(10)
                    && inst.advert.as_millis() % 10 == 0
                    && inst.advert <= Duration::from_secs(40),
                "VRRPv3 intervals are whole centiseconds up to 40.95 s: {:?}",
                inst.advert
            );
            c += &format!(
                "vrrp_instance VI_{vrid} {{\n    state BACKUP\n    interface eth0\n    \
                 virtual_router_id {vrid}\n    priority {prio}\n    advert_int {adv}\n",
                vrid = inst.vrid,
                prio = inst.priority,
                adv = secs(inst.advert),
            );
            match inst.preempt {
                Preempt::On => {}
                Preempt::Off => c += "    nopreempt\n",
                Preempt::Delay(d) => c += &format!("    preempt_delay {}\n", secs(d)),
            }
            if inst.vmac {
                c += &format!("    use_vmac vrrp.{}\n", inst.vrid);
            }
            c += "    virtual_ipaddress {\n";
            for ip in &inst.vips {
                let len = if ip.is_ipv4() { PREFIX_LEN } else { 64 };
                c += &format!("        {ip}/{len}\n");
            }
            c += "    }\n}\n";
        }
        c
    }

    /// Writes the config of [`Keepalived::config`] and starts keepalived
    /// in node `node`'s namespace. Panics if keepalived is missing (check
    /// with [`have_keepalived`] first) or exits within 200 ms (a config it
    /// rejects).
    pub fn start(lab: &Lab, node: usize, instances: &[Instance]) -> Keepalived {
        Self::start_with(lab, node, &Self::config(node, instances))
    }

    /// Like [`Keepalived::start`] with a config of the caller's.
    pub fn start_with(lab: &Lab, node: usize, config: &str) -> Keepalived {
        let program = keepalived_program().expect("keepalived is installed");
        let seq = KEEPALIVED_SEQ.fetch_add(1, Ordering::Relaxed);
        let base = lab.dir().join(format!("keepalived-n{node}-{seq}"));
        let conf = base.with_extension("conf");
        let pid_file = base.with_extension("pid");
        let vrrp_pid_file = base.with_extension("vrrp.pid");
        fs::write(&conf, config).expect("write keepalived.conf");
        let (c, p, r) = (
            conf.to_str().expect("utf-8"),
            pid_file.to_str().expect("utf-8"),
            vrrp_pid_file.to_str().expect("utf-8"),
        );
        // -n: no fork (this PID is keepalived's parent process); -l: log to
        // the console (our log file), -D detailed, -G not to syslog; -P VRRP
        // only; -R: no respawn of the VRRP child, so SIGKILL of it is final;
        // -p / -r: pid files of this instance, so several run on one machine.
        let mut child = lab.node(node).spawn(&[
            &program, "-n", "-l", "-D", "-G", "-P", "-R", "-f", c, "-p", p, "-r", r,
        ]);
        if child.wait_exit(Duration::from_millis(200)).is_some() {
            panic!(
                "keepalived on node {node} exited at once\n--- config ---\n{config}--- log ---\n{}",
                child.log()
            );
        }
        Keepalived {
            node,
            conf,
            pid_file,
            vrrp_pid_file,
            child,
        }
    }

    /// The PID of keepalived's parent process.
    pub fn pid(&self) -> Option<i32> {
        self.child.pid()
    }

    /// The PID of its VRRP child, from its pid file (within 2 s of start).
    pub fn vrrp_pid(&self) -> Option<i32> {
        let end = Instant::now() + Duration::from_secs(2);
        loop {
            if let Some(pid) = fs::read_to_string(&self.vrrp_pid_file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return Some(pid);
            }
            if Instant::now() >= end {
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether keepalived still runs.
    pub fn is_running(&mut self) -> bool {
        self.child.is_running()
    }

    /// What it logged (console log, `-l -D`).
    pub fn log(&self) -> String {
        self.child.log()
    }

    /// The lines of its log that report a checksum error ("Invalid VRRPv3
    /// checksum", "Invalid VRRPv2 checksum", "Checksum ERROR").
    pub fn checksum_errors(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|l| l.contains("Invalid VRRPv") || l.contains("Checksum ERROR"))
            .map(str::to_string)
            .collect()
    }

    /// Graceful stop: SIGTERM; keepalived sends priority 0 adverts and
    /// removes its VIPs. Waits up to 5 s, then SIGKILL.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        self.child.terminate(Duration::from_secs(5))
    }

    /// Hard stop: SIGKILL to the VRRP child, then to the parent (which would
    /// otherwise tell the child to shut down gracefully). Nothing is sent;
    /// the VIPs stay on the node's interfaces.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        if self.child.is_running()
            && let Some(pid) = self.vrrp_pid()
            && pid > 1
        {
            // SAFETY: kill(2) on the VRRP child of our own child process
            // (its PID file is ours; our child has not been reaped, and
            // with -R it does not respawn the VRRP child).
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        self.child.kill()
    }

    /// Its pid file (the parent process).
    pub fn pid_file(&self) -> &Path {
        &self.pid_file
    }
}

fn secs(d: Duration) -> String {
    let s = format!("{:.3}", d.as_secs_f64());
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

// ---------------------------------------------------------------------------
// The pinger.

static ICMP_ID: AtomicU16 = AtomicU16::new(0);

fn next_icmp_id() -> u16 {
    (std::process::id() as u16)
        .wrapping_mul(31)
        .wrapping_add(ICMP_ID.fetch_add(1, Ordering::Relaxed))
}

/// A raw ICMP socket in `host`'s namespace (created on a thread that
/// joined it; the socket stays there).
fn icmp_socket(host: &Host) -> Socket {
    host.run(|| Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4)))
        .expect("raw ICMP socket (root)")
}

fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn send_echo(sock: &Socket, target: Ipv4Addr, id: u16, seq: u16) {
    let mut pkt = [0u8; 16];
    pkt[0] = 8; // echo request
    pkt[4..6].copy_from_slice(&id.to_be_bytes());
    pkt[6..8].copy_from_slice(&seq.to_be_bytes());
    pkt[8..16].copy_from_slice(b"sxt-lab\0");
    let c = checksum(&pkt);
    pkt[2..4].copy_from_slice(&c.to_be_bytes());
    let to = SockAddr::from(SocketAddr::new(IpAddr::V4(target), 0));
    // Fails while the client has no route or neighbour; that is a lost
    // probe like any other.
    let _ = sock.send_to(&pkt, &to);
}

/// The sequence number of an echo reply from `from` with our `id`, in a
/// packet read from a raw IPv4 socket (IP header included).
fn parse_echo_reply(buf: &[u8], from: Ipv4Addr, id: u16) -> Option<u16> {
    if buf.len() < 20 || buf[0] >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(buf[0] & 0x0f) * 4;
    let src = Ipv4Addr::new(buf[12], buf[13], buf[14], buf[15]);
    let icmp = buf.get(ihl..)?;
    if src != from || icmp.len() < 8 || icmp[0] != 0 || icmp[1] != 0 {
        return None;
    }
    (u16::from_be_bytes([icmp[4], icmp[5]]) == id).then(|| u16::from_be_bytes([icmp[6], icmp[7]]))
}

/// What a [`Pinger`] saw.
#[derive(Clone, Debug)]
pub struct PingReport {
    /// Echo requests sent.
    pub sent: u32,
    /// Echo replies received.
    pub received: u32,
    /// How long it ran.
    pub ran: Duration,
    /// When each reply came, from the start.
    pub replies: Vec<Duration>,
    /// The longest time without a reply: between two consecutive replies,
    /// or from the start to the first reply, or from the last reply to the
    /// end.
    pub longest_gap: Duration,
    /// When (from the start) the longest gap began.
    pub longest_gap_at: Duration,
}

impl PingReport {
    fn from_replies(sent: u32, ran: Duration, replies: Vec<Duration>) -> PingReport {
        let mut longest = (Duration::ZERO, Duration::ZERO);
        let mut prev = Duration::ZERO;
        for &t in replies.iter().chain(std::iter::once(&ran)) {
            let gap = t.saturating_sub(prev);
            if gap > longest.0 {
                longest = (gap, prev);
            }
            prev = t;
        }
        PingReport {
            sent,
            received: replies.len() as u32,
            ran,
            replies,
            longest_gap: longest.0,
            longest_gap_at: longest.1,
        }
    }

    /// Requests without a reply.
    pub fn lost(&self) -> u32 {
        self.sent.saturating_sub(self.received)
    }
}

/// Pings a VIP from the client every `interval` over a raw ICMP socket in
/// the client's namespace, for at most `max_run`, on two threads (sender
/// and receiver) that timestamp each reply as it is read.
pub struct Pinger {
    stop: Arc<AtomicBool>,
    start: Instant,
    sender: Option<thread::JoinHandle<u32>>,
    receiver: Option<thread::JoinHandle<Vec<Duration>>>,
}

impl Pinger {
    /// Starts pinging `target` from the lab's client.
    pub fn start(lab: &Lab, target: Ipv4Addr, interval: Duration, max_run: Duration) -> Pinger {
        let sock = Arc::new(icmp_socket(&lab.client));
        sock.set_read_timeout(Some(Duration::from_millis(10)))
            .expect("SO_RCVTIMEO");
        let id = next_icmp_id();
        let stop = Arc::new(AtomicBool::new(false));
        let start = Instant::now();
        let end = start + max_run;
        let receiver = {
            let (sock, stop) = (sock.clone(), stop.clone());
            thread::spawn(move || {
                let mut replies = Vec::new();
                let mut buf = [0u8; 1500];
                // Bounded by `end` (and by the stop flag).
                while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                    if let Ok(n) = (&*sock).read(&mut buf)
                        && parse_echo_reply(&buf[..n], target, id).is_some()
                    {
                        replies.push(start.elapsed());
                    }
                }
                replies
            })
        };
        let sender = {
            let stop = stop.clone();
            thread::spawn(move || {
                let mut seq: u32 = 0;
                let mut next = start;
                while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                    send_echo(&sock, target, id, seq as u16);
                    seq += 1;
                    next += interval;
                    let now = Instant::now();
                    if next > now {
                        thread::sleep(next - now);
                    } else {
                        next = now;
                    }
                }
                seq
            })
        };
        Pinger {
            stop,
            start,
            sender: Some(sender),
            receiver: Some(receiver),
        }
    }

    /// How long it has run.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Stops it (or waits for `max_run` to end, whichever first) and
    /// reports. A reply still in flight when it stops counts as lost.
    pub fn stop(mut self) -> PingReport {
        self.stop.store(true, Ordering::Relaxed);
        let ran = self.start.elapsed();
        let sent = self.sender.take().expect("once").join().expect("sender");
        let replies = self
            .receiver
            .take()
            .expect("once")
            .join()
            .expect("receiver");
        let ran = replies.last().map_or(ran, |&last| last.max(ran));
        PingReport::from_replies(sent, ran, replies)
    }
}

impl Drop for Pinger {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.sender.take() {
            let _ = t.join();
        }
        if let Some(t) = self.receiver.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_macs() {
        assert_eq!(node_ip(0), Ipv4Addr::new(10, 77, 0, 10));
        assert_eq!(node_ip6(3).to_string(), "fd77::13");
        assert_eq!(fmt_mac(virtual_mac(51)), "00:00:5e:00:01:33");
        assert_eq!(parse_mac("00:00:5e:00:01:33"), Some(virtual_mac(51)));
        assert_eq!(parse_mac("00:00:5e:00:01"), None);
        assert_eq!(secs(Duration::from_millis(100)), "0.1");
        assert_eq!(secs(Duration::from_secs(1)), "1");
    }

    #[test]
    fn longest_gap_counts_the_ends() {
        let ms = Duration::from_millis;
        let r = PingReport::from_replies(5, ms(100), vec![ms(5), ms(10), ms(60)]);
        assert_eq!(r.longest_gap, ms(50));
        assert_eq!(r.longest_gap_at, ms(10));
        let r = PingReport::from_replies(5, ms(200), vec![ms(5), ms(10), ms(60)]);
        assert_eq!(r.longest_gap, ms(140));
        assert_eq!(r.lost(), 2);
    }

    #[test]
    fn master_down_interval_is_rfc_5798() {
        let i = Instance::new(1, 100, Duration::from_secs(1), IpAddr::V4(vip(0)));
        assert_eq!(i.skew(), Duration::from_secs(1) * 156 / 256);
        assert_eq!(
            i.master_down_interval(),
            Duration::from_millis(3609) + Duration::from_nanos(375_000)
        );
    }

    #[test]
    fn keepalived_config() {
        let i = Instance::new(51, 200, Duration::from_millis(100), IpAddr::V4(vip(0)))
            .vmac(true)
            .preempt(Preempt::Delay(Duration::from_secs(2)));
        let c = Keepalived::config(0, &[i]);
        for want in [
            "vrrp_version 3",
            "virtual_router_id 51",
            "priority 200",
            "advert_int 0.1",
            "preempt_delay 2",
            "use_vmac vrrp.51",
            "10.77.0.200/24",
        ] {
            assert!(c.contains(want), "{want} in\n{c}");
        }
    }
}
