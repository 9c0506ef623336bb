//! Network namespaces of a test's own, with iptables rules to cut links.

use std::fs;
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::thread;

use crate::ci::{cannot_run, have_program, is_root};

/// A network namespace of the test's own (`ip netns add sxt-PID-TAG`, `lo`
/// up), deleted on drop. Inside it, all of 127.0.0.0/8 is routed to its
/// own `lo`, so sites get 127.0.x.y addresses that no other test sees, and
/// iptables rules in it cut links between them without touching the host.
///
/// * processes run inside with `ip netns exec NAME ...` (see
///   [`SiteServer::start`](crate::process::SiteServer::start));
/// * the test's own sockets (DNS and API clients, backends) are opened by
///   [`Netns::run`], on a helper thread that joined the namespace with
///   `setns(2)`: a socket stays in the namespace it was created in, so the
///   usual harness code works unchanged inside the closure.
pub struct Netns {
    pub name: String,
}

impl Netns {
    /// Creates the namespace. When the test cannot have one (not root, or
    /// `ip` / `iptables` missing) it returns None after
    /// [`cannot_run`](crate::ci::cannot_run): a failure under CI (which runs
    /// as root after scripts/setup.sh installed them), a printed `SKIPPED`
    /// elsewhere.
    pub fn create(tag: &str) -> Option<Arc<Netns>> {
        if !is_root() {
            cannot_run("this test needs root (network namespace and iptables)");
            return None;
        }
        for program in ["ip", "iptables", "iptables-restore"] {
            if !have_program(program) {
                cannot_run(&format!(
                    "this test needs `{program}` (scripts/setup.sh installs iproute2 and iptables)"
                ));
                return None;
            }
        }
        Self::remove_stale();
        let name = format!("sxt-{}-{tag}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .expect("run ip netns add");
        assert!(
            out.status.success(),
            "ip netns add {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ns = Arc::new(Netns { name });
        ns.exec_ok(&["ip", "link", "set", "lo", "up"]);
        Some(ns)
    }

    /// Deletes namespaces that earlier test processes left behind (a test
    /// killed by a timeout runs no destructor).
    pub(crate) fn remove_stale() {
        let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
            return;
        };
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let name = line.split_whitespace().next().unwrap_or_default();
            let Some(pid) = name
                .strip_prefix("sxt-")
                .and_then(|rest| rest.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = Command::new("ip").args(["netns", "del", name]).output();
            }
        }
    }

    /// Runs `f` on a thread inside the namespace and returns its result;
    /// sockets `f` opens live in the namespace (and stay there).
    pub fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        let path = format!("/run/netns/{}", self.name);
        thread::scope(|s| {
            s.spawn(|| {
                use std::os::fd::AsRawFd;
                let file = fs::File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
                // SAFETY: setns(2) with a valid descriptor of a network
                // namespace; it moves only this helper thread, which ends
                // when `f` returns.
                let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(
                    rc,
                    0,
                    "setns into {path}: {}",
                    std::io::Error::last_os_error()
                );
                f()
            })
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
        })
    }

    /// `ip netns exec NAME args...` to completion.
    pub fn exec(&self, args: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.name])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("ip netns exec {} {args:?}: {e}", self.name))
    }

    /// Like [`Netns::exec`]; panics unless it succeeds.
    pub fn exec_ok(&self, args: &[&str]) -> Output {
        let out = self.exec(args);
        assert!(
            out.status.success(),
            "ip netns exec {} {args:?} failed: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Joins this namespace and `peer` by a veth pair whose ends are both
    /// named `ifname`, up, with the addresses `here` and `there` (CIDR;
    /// IPv6 ones without duplicate address detection, so they work at once).
    pub fn veth_to(&self, peer: &Netns, ifname: &str, here: &[&str], there: &[&str]) {
        let out = Command::new("ip")
            .args(["link", "add", ifname, "netns", &self.name, "type", "veth"])
            .args(["peer", "name", ifname, "netns", &peer.name])
            .output()
            .expect("run ip link add");
        assert!(
            out.status.success(),
            "ip link add {ifname} (veth {} <-> {}) failed: {}",
            self.name,
            peer.name,
            String::from_utf8_lossy(&out.stderr)
        );
        for (ns, addrs) in [(self, here), (peer, there)] {
            for a in addrs {
                let mut args = vec!["ip", "addr", "add", a, "dev", ifname];
                if a.contains(':') {
                    args.push("nodad");
                }
                ns.exec_ok(&args);
            }
            ns.exec_ok(&["ip", "link", "set", ifname, "up"]);
        }
    }

    /// Applies iptables rules in one `iptables-restore --noflush` run, so a
    /// set of links goes down (or up) at once.
    fn restore(&self, rules: &str) {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.name, "iptables-restore", "--noflush"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn iptables-restore");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("*filter\n{rules}COMMIT\n").as_bytes())
            .expect("write iptables rules");
        let out = child.wait_with_output().expect("iptables-restore");
        assert!(
            out.status.success(),
            "iptables-restore failed: {}\nrules:\n{rules}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn rules(op: &str, pairs: &[(Ipv4Addr, Ipv4Addr)]) -> String {
        pairs
            .iter()
            .flat_map(|&(a, b)| [(a, b), (b, a)])
            .map(|(s, d)| format!("{op} INPUT -s {s}/32 -d {d}/32 -j DROP\n"))
            .collect()
    }

    /// Cuts each link A <-> B: every packet between the two addresses is
    /// dropped, in both directions (`iptables -A INPUT -s A -d B -j DROP`
    /// and the reverse).
    pub fn cut(&self, pairs: &[(Ipv4Addr, Ipv4Addr)]) {
        self.restore(&Self::rules("-A", pairs));
    }

    /// Heals links cut with [`Netns::cut`] (deletes their rules).
    pub fn heal(&self, pairs: &[(Ipv4Addr, Ipv4Addr)]) {
        self.restore(&Self::rules("-D", pairs));
    }

    /// Heals every link (flushes INPUT).
    pub fn heal_all(&self) {
        self.exec_ok(&["iptables", "-w", "-F", "INPUT"]);
    }

    /// The INPUT rules in force, for messages.
    pub fn rules_in_force(&self) -> String {
        String::from_utf8_lossy(&self.exec(&["iptables", "-w", "-S", "INPUT"]).stdout).into_owned()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}
