//! Whether this host can open the listeners a new configuration asks for,
//! checked before `PUT /v1/config` (and its dry run) accepts it.
//!
//! Some listeners move only at the next restart, and a configuration that
//! names an address this host does not have, or a port another program
//! holds, would be accepted today and stop the node at that restart. So
//! every listener the new configuration opens that the running one does not
//! hold is bound once, the way the server binds it, and released at once.
//! A failure refuses the configuration with the address and the reason.
//! One case cannot be told apart: the port is busy and this node itself
//! holds it (e.g. `0.0.0.0:53` replacing `127.0.0.1:53`); that is answered
//! as a warning, not a refusal.

use std::io;
use std::net::{IpAddr, SocketAddr};

use sextant_core::Model;
use socket2::{Domain, Protocol, Socket, Type};

/// A socket a configuration makes the server open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    pub what: &'static str,
    pub addr: SocketAddr,
    pub udp: bool,
    /// Bound with `IP_FREEBIND` (a VRRP VIP, on the host only while this
    /// node is master for it).
    pub freebind: bool,
}

/// The listeners a model opens: DNS (UDP and TCP) on every `dns_listen`,
/// the API, and metric exchange on the local site's IP when it runs.
pub fn listeners(model: &Model, default_api: SocketAddr) -> Vec<Listener> {
    let vips: Vec<IpAddr> = model
        .vrrp
        .vrids
        .iter()
        .flat_map(|v| v.addresses.iter().map(|a| a.ip))
        .collect();
    let mut out = Vec::new();
    for &addr in &model.dns_listen {
        let freebind = vips.contains(&addr.ip());
        for udp in [true, false] {
            out.push(Listener {
                what: if udp { "DNS (udp)" } else { "DNS (tcp)" },
                addr,
                udp,
                freebind,
            });
        }
    }
    out.push(Listener {
        what: "the API",
        addr: model.api_listen.unwrap_or(default_api),
        udp: false,
        freebind: false,
    });
    // Metric exchange on a site IP that is a VIP runs on the master only,
    // when the address is there: nothing can be checked on a backup.
    if sextant_state::metric_exchange_configured(model)
        && sextant_state::site_ip_vip(model).is_none()
        && let Some(local) = model.local_site
    {
        let ip = model.site(local).ip;
        out.push(Listener {
            what: "metric exchange",
            addr: SocketAddr::new(ip, model.params.mep_port),
            udp: false,
            freebind: false,
        });
        if model.rpc_nodes.iter().any(|n| n.secure) {
            out.push(Listener {
                what: "secure metric exchange",
                addr: SocketAddr::new(ip, model.params.mep_secure_port),
                udp: false,
                freebind: false,
            });
        }
    }
    out
}

/// What the check found: reasons to refuse, and what could not be checked.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Checked {
    pub refused: Vec<String>,
    pub warnings: Vec<String>,
}

/// Binds every listener of `new` that `running` does not hold, with
/// `bind` (the real one: [`try_bind`]), and says which fail and why.
pub fn check(
    running: &[Listener],
    new: &[Listener],
    bind: impl Fn(&Listener) -> io::Result<()>,
) -> Checked {
    let mut out = Checked::default();
    let holds = |l: &Listener| running.iter().any(|r| r.udp == l.udp && r.addr == l.addr);
    for l in new.iter().filter(|l| !holds(l)) {
        let Err(e) = bind(l) else { continue };
        let proto = if l.udp { "udp" } else { "tcp" };
        let ours = running.iter().any(|r| {
            r.udp == l.udp
                && r.addr.port() == l.addr.port()
                && (r.addr.ip() == l.addr.ip()
                    || r.addr.ip().is_unspecified()
                    || l.addr.ip().is_unspecified())
        });
        match e.kind() {
            io::ErrorKind::AddrInUse if ours => out.warnings.push(format!(
                "{} {proto}/{}: cannot be checked, this node holds that port itself now; \
                 if another program holds it too, the listener will fail to open",
                l.what, l.addr
            )),
            io::ErrorKind::AddrInUse => out.refused.push(format!(
                "{} {proto}/{}: the address is in use by another program",
                l.what, l.addr
            )),
            io::ErrorKind::AddrNotAvailable => out.refused.push(format!(
                "{} {proto}/{}: {} is not an address of this host",
                l.what,
                l.addr,
                l.addr.ip()
            )),
            io::ErrorKind::PermissionDenied => out.refused.push(format!(
                "{} {proto}/{}: permission denied (a port below 1024 needs CAP_NET_BIND_SERVICE)",
                l.what, l.addr
            )),
            _ => out.refused.push(format!(
                "{} {proto}/{}: cannot be opened: {e}",
                l.what, l.addr
            )),
        }
    }
    out
}

/// Binds a socket as the server would (no `SO_REUSEPORT`, so a port held
/// by anyone is found busy; `SO_REUSEADDR` on TCP as the server sets it, so
/// connections in TIME_WAIT do not count) and closes it at once.
pub fn try_bind(l: &Listener) -> io::Result<()> {
    let (kind, proto) = if l.udp {
        (Type::DGRAM, Protocol::UDP)
    } else {
        (Type::STREAM, Protocol::TCP)
    };
    let socket = Socket::new(Domain::for_address(l.addr), kind, Some(proto))?;
    if l.addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    if !l.udp {
        socket.set_reuse_address(true)?;
    }
    if l.freebind {
        match l.addr {
            SocketAddr::V4(_) => socket.set_freebind_v4(true)?,
            SocketAddr::V6(_) => socket.set_freebind_v6(true)?,
        }
    }
    socket.bind(&l.addr.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(what: &'static str, addr: &str, udp: bool) -> Listener {
        Listener {
            what,
            addr: addr.parse().unwrap(),
            udp,
            freebind: false,
        }
    }

    #[test]
    fn only_new_listeners_are_bound_and_each_failure_is_named() {
        let running = [
            l("DNS (udp)", "127.0.0.1:53", true),
            l("the API", "127.0.0.1:8053", false),
        ];
        let new = [
            l("DNS (udp)", "127.0.0.1:53", true),
            l("DNS (udp)", "192.0.2.1:53", true),
            l("DNS (udp)", "0.0.0.0:53", true),
            l("the API", "127.0.0.1:9000", false),
            l("metric exchange", "127.0.0.2:3011", false),
        ];
        let checked = check(&running, &new, |l| {
            assert_ne!(l.addr, "127.0.0.1:53".parse().unwrap(), "held: never bound");
            Err(io::Error::from(match l.addr.port() {
                53 if l.addr.ip().is_unspecified() => io::ErrorKind::AddrInUse,
                53 => io::ErrorKind::AddrNotAvailable,
                9000 => io::ErrorKind::AddrInUse,
                _ => return Ok(()),
            }))
        });
        assert_eq!(
            checked.refused,
            [
                "DNS (udp) udp/192.0.2.1:53: 192.0.2.1 is not an address of this host",
                "the API tcp/127.0.0.1:9000: the address is in use by another program",
            ]
        );
        assert_eq!(checked.warnings.len(), 1, "{checked:?}");
        assert!(checked.warnings[0].starts_with("DNS (udp) udp/0.0.0.0:53: cannot be checked"));
    }

    #[test]
    fn a_real_bind_finds_a_busy_port_and_a_foreign_address() {
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let busy = l("the API", &held.local_addr().unwrap().to_string(), false);
        assert_eq!(
            try_bind(&busy).unwrap_err().kind(),
            io::ErrorKind::AddrInUse
        );
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let busy = l("DNS (udp)", &udp.local_addr().unwrap().to_string(), true);
        assert_eq!(
            try_bind(&busy).unwrap_err().kind(),
            io::ErrorKind::AddrInUse
        );
        let foreign = l("DNS (udp)", "192.0.2.1:5300", true);
        assert_eq!(
            try_bind(&foreign).unwrap_err().kind(),
            io::ErrorKind::AddrNotAvailable
        );
        assert!(try_bind(&l("DNS (tcp)", "127.0.0.1:0", false)).is_ok());
    }
}
