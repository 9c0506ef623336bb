//! [`LinuxLink`]: [`Link`] for one virtual router on one Linux interface.

use std::io;
use std::net::IpAddr;

use nix::errno::Errno;
use sextant_vrrp::link::{Link, Vip};
use sextant_vrrp::packet::{Family, virtual_mac};
use socket2::Socket;

use crate::netlink::Netlink;
use crate::sysctl::{Shared, get_sysctl, set_sysctl};
use crate::{Interface, NetError, announce, ifaddrs, socket};

/// How a [`LinuxLink`] holds its VIPs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinuxLinkOptions {
    /// Put the VIPs on a macvlan `vrrp.<VRID>` (IPv6: `vrrp6.<VRID>`) with
    /// the virtual router MAC (RFC 5798 §7.3), so that a failover changes
    /// no ARP / ND cache, only the switches' tables (which the gratuitous
    /// ARP updates). Without it the VIPs go on the interface itself and
    /// are answered with its own MAC.
    pub virtual_mac: bool,
}

/// The macvlan that carries the virtual MAC.
#[derive(Debug)]
struct Vmac {
    name: String,
    index: u32,
    mac: [u8; 6],
    /// IFF_UP as we last set it: up exactly while we hold the VIPs.
    up: bool,
}

/// [`Link`] for one VRID and family on one interface.
///
/// With [`LinuxLinkOptions::virtual_mac`], construction creates (or takes
/// over) the macvlan, down, and sets its sysctls; [`close`](Self::close)
/// or drop deletes it. The macvlan is up only while this node is master:
/// taking the addresses brings it up, releasing them brings it down first,
/// which stops ARP / ND replies with the virtual MAC at once.
///
/// Adverts leave through the macvlan while it is up, so that their
/// Ethernet source is the virtual MAC as RFC 5798 §7.3 asks (keepalived
/// does the same); while it is down (the advert a master sends just before
/// taking the addresses, the priority-0 one after releasing them) they
/// leave through the parent with its own MAC, since bringing the macvlan
/// up for them would make it answer ARP.
///
/// All kernel state goes through sockets opened at construction, which
/// stay in the network namespace of the thread that constructed the link.
/// Sysctls go through /proc/sys of the calling thread's namespace: call
/// every method from that namespace.
pub struct LinuxLink {
    vrid: u8,
    family: Family,
    parent: Interface,
    source: IpAddr,
    vmac: Option<Vmac>,
    nl: Netlink,
    parent_sender: Socket,
    vmac_sender: Option<Socket>,
    packet: Socket,
    icmpv6: Option<Socket>,
    /// Parent sysctls held for us, restored when the last holder goes.
    _shared: Vec<Shared>,
    closed: bool,
}

fn os<'a>(op: &'static str, name: &'a str) -> impl FnOnce(io::Error) -> NetError + 'a {
    move |source| NetError::Socket {
        name: name.to_owned(),
        op,
        source,
    }
}

impl LinuxLink {
    /// A link for virtual router `vrid` (1–255) of `family` on `interface`.
    /// The adverts' source is the interface's primary IPv4 address or its
    /// IPv6 link-local address ([`source`](Self::source)).
    pub fn new(
        interface: &Interface,
        vrid: u8,
        family: Family,
        options: LinuxLinkOptions,
    ) -> Result<LinuxLink, NetError> {
        let name = &interface.name;
        if vrid == 0 {
            return Err(NetError::Invalid {
                name: name.clone(),
                reason: "VRID 0 is reserved; use 1-255".into(),
            });
        }
        let source: IpAddr = match family {
            Family::V4 => interface.ipv4.map(IpAddr::V4),
            Family::V6 => interface.ipv6_link_local.map(IpAddr::V6),
        }
        .ok_or_else(|| NetError::NoSourceAddress {
            name: name.clone(),
            family: match family {
                Family::V4 => "IPv4",
                Family::V6 => "IPv6",
            },
        })?;
        let mut nl = Netlink::open().map_err(os("open a netlink socket", name))?;
        let parent_sender = socket::raw_socket(name, interface.index, source)
            .and_then(|s| socket::drop_all_input(&s).map(|()| s))
            .map_err(os("open the VRRP send socket", name))?;
        let mut shared = Vec::new();
        let vmac = if options.virtual_mac {
            let vmac = create_vmac(&mut nl, interface, vrid, family)?;
            if family == Family::V4 {
                // The parent must not answer ARP for the VIPs, which live on
                // the macvlan: with the default arp_ignore=0 Linux answers
                // for any local address on any interface, and would answer
                // with the parent's MAC. arp_ignore=1: answer only for
                // addresses on the interface the request came in on.
                // arp_filter=1: answer only if the kernel would route to
                // the sender through this interface. Both are restored
                // when the last virtual router on the parent closes.
                let conf = format!("net/ipv4/conf/{name}");
                shared.push(Shared::set(&format!("{conf}/arp_ignore"), "1")?);
                shared.push(Shared::set(&format!("{conf}/arp_filter"), "1")?);
                if get_sysctl("net/ipv4/conf/all/rp_filter").as_deref() == Some("1") {
                    tracing::warn!(
                        interface = %vmac.name,
                        "net.ipv4.conf.all.rp_filter=1 (strict) overrides the macvlan's rp_filter=0: \
                         traffic to the VIPs may be dropped; set it to 0 or 2 (loose)"
                    );
                }
            }
            Some(vmac)
        } else {
            if family == Family::V4 {
                // Without the macvlan the VIPs are secondaries on the
                // interface; the first VIP of a subnet other than the
                // interface's is that subnet's primary, and deleting a
                // primary deletes its secondaries unless they are promoted.
                shared.push(Shared::set(
                    &format!("net/ipv4/conf/{name}/promote_secondaries"),
                    "1",
                )?);
            }
            None
        };
        let (dev, dev_index) = match &vmac {
            Some(v) => (v.name.as_str(), v.index),
            None => (name.as_str(), interface.index),
        };
        let packet = announce::packet_socket().map_err(os("open an AF_PACKET socket", dev))?;
        let icmpv6 = match announce::icmpv6_socket(dev, dev_index) {
            Ok(s) => Some(s),
            Err(e) if family == Family::V6 => {
                return Err(os("open an ICMPv6 socket", dev)(e));
            }
            Err(e) => {
                tracing::debug!(interface = dev, error = %e, "no ICMPv6 socket: IPv6 VIPs cannot be announced");
                None
            }
        };
        Ok(LinuxLink {
            vrid,
            family,
            parent: interface.clone(),
            source,
            vmac,
            nl,
            parent_sender,
            vmac_sender: None,
            packet,
            icmpv6,
            _shared: shared,
            closed: false,
        })
    }

    /// The VRID.
    pub fn vrid(&self) -> u8 {
        self.vrid
    }

    /// The family of the adverts.
    pub fn family(&self) -> Family {
        self.family
    }

    /// The adverts' source address, which the checksum's pseudo-header
    /// covers ([`Advert::encode`](sextant_vrrp::packet::Advert::encode)).
    pub fn source(&self) -> IpAddr {
        self.source
    }

    /// The interface the VIPs go on: the macvlan, or the interface itself.
    pub fn vip_interface(&self) -> &str {
        match &self.vmac {
            Some(v) => &v.name,
            None => &self.parent.name,
        }
    }

    /// The MAC the VIPs answer with: the virtual MAC, or the interface's.
    pub fn mac(&self) -> [u8; 6] {
        match &self.vmac {
            Some(v) => v.mac,
            None => self.parent.mac,
        }
    }

    fn vip_dev(&self) -> (&str, u32, [u8; 6]) {
        match &self.vmac {
            Some(v) => (&v.name, v.index, v.mac),
            None => (&self.parent.name, self.parent.index, self.parent.mac),
        }
    }

    /// Deletes the macvlan (if any) and restores the parent's sysctls; the
    /// same happens on drop, with errors only logged.
    pub fn close(mut self) -> Result<(), NetError> {
        self.shut()
    }

    fn shut(&mut self) -> Result<(), NetError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        self.vmac_sender = None;
        self._shared.clear();
        if let Some(v) = &self.vmac {
            match self.nl.delete_link(v.index) {
                Err(e) if e.raw_os_error() != Some(Errno::ENODEV as i32) => {
                    return Err(NetError::Link {
                        name: v.name.clone(),
                        parent: self.parent.name.clone(),
                        op: "delete macvlan",
                        source: e,
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The socket adverts leave through now (see the type's comment), and
    /// its interface.
    fn sender(&mut self) -> (&Socket, u32, &str) {
        if let Some(v) = &self.vmac
            && v.up
        {
            if self.vmac_sender.is_none() {
                match socket::raw_socket(&v.name, v.index, self.source)
                    .and_then(|s| socket::drop_all_input(&s).map(|()| s))
                {
                    Ok(s) => self.vmac_sender = Some(s),
                    Err(e) => tracing::warn!(
                        interface = %v.name, error = %e,
                        "cannot send adverts through the macvlan; sending them from the parent's MAC"
                    ),
                }
            }
            if let Some(s) = &self.vmac_sender {
                return (s, v.index, &v.name);
            }
        }
        (&self.parent_sender, self.parent.index, &self.parent.name)
    }
}

/// Creates the macvlan, down, or takes over one left behind (same name:
/// its MAC is reset and it is brought down), and sets its sysctls.
fn create_vmac(
    nl: &mut Netlink,
    parent: &Interface,
    vrid: u8,
    family: Family,
) -> Result<Vmac, NetError> {
    let name = match family {
        Family::V4 => format!("vrrp.{vrid}"),
        Family::V6 => format!("vrrp6.{vrid}"),
    };
    let mac = virtual_mac(vrid, family);
    let err = |op, source| NetError::Link {
        name: name.clone(),
        parent: parent.name.clone(),
        op,
        source,
    };
    let existed = match nl.create_macvlan(parent.index, &name, mac) {
        Ok(()) => false,
        Err(e) if e.raw_os_error() == Some(Errno::EEXIST as i32) => true,
        Err(e) => return Err(err("create macvlan", e)),
    };
    let index = ifaddrs::index(&name)?;
    if existed {
        nl.set_up(index, false)
            .map_err(|e| err("bring down the existing macvlan", e))?;
        nl.set_mac(index, mac)
            .map_err(|e| err("set the virtual MAC of the existing macvlan", e))?;
    }
    let conf4 = format!("net/ipv4/conf/{name}");
    // arp_ignore=1: the macvlan answers ARP only for the addresses on it
    // (the VIPs), never for the parent's with the virtual MAC.
    set_sysctl(&format!("{conf4}/arp_ignore"), "1")?;
    if family == Family::V4 {
        // accept_local=1: accept packets whose source is one of our own
        // addresses, so that an advert from another VRRP instance on this
        // host (sourced from the shared parent address) is not dropped.
        set_sysctl(&format!("{conf4}/accept_local"), "1")?;
        // rp_filter=0: traffic to a VIP arrives on the macvlan while the
        // route back to its sender goes through the parent; strict
        // reverse-path filtering would drop it.
        set_sysctl(&format!("{conf4}/rp_filter"), "0")?;
        // promote_secondaries=1: removing the first VIP of a subnet must
        // not remove the others of that subnet.
        set_sysctl(&format!("{conf4}/promote_secondaries"), "1")?;
        // disable_ipv6=1: an IPv4 VRID's macvlan must send nothing of its
        // own. With IPv6 on, every time it comes up (takeover, or a cable
        // back under a macvlan left up by a crash) it sends DAD, MLD and
        // router solicitations from the shared virtual MAC, which teach the
        // switch the virtual MAC's port before or after the master's
        // gratuitous ARP (measured: a 0.65 s loss on failback at 1 s).
        set_sysctl(&format!("net/ipv6/conf/{name}/disable_ipv6"), "1")?;
    } else {
        // addr_gen_mode=1 (none): no EUI-64 link-local from the virtual
        // MAC, which would be the same on every node of the VRID and fail
        // DAD; we add the parent's own link-local instead, as the adverts'
        // source. Set while the link is down, before any address exists.
        set_sysctl(&format!("net/ipv6/conf/{name}/addr_gen_mode"), "1")?;
    }
    Ok(Vmac {
        name,
        index,
        mac,
        up: false,
    })
}

/// RTM_DELADDR, idempotently: an address already gone is not an error.
pub(crate) fn delete_address(
    nl: &mut Netlink,
    index: u32,
    name: &str,
    vip: &Vip,
) -> Result<(), NetError> {
    match nl.delete_address(index, vip.ip, vip.prefix_len) {
        Err(e) if e.raw_os_error() != Some(Errno::EADDRNOTAVAIL as i32) => Err(NetError::Address {
            vip: *vip,
            name: name.to_owned(),
            op: "remove",
            source: e,
        }),
        _ => Ok(()),
    }
}

impl Link for LinuxLink {
    type Error = NetError;

    fn send_advert(&mut self, packet: &[u8]) -> Result<(), NetError> {
        let source = self.source;
        let (sock, index, name) = self.sender();
        let to = socket::group(source, index);
        socket::send_all(sock, packet, &to).map_err(|source| NetError::Send {
            name: name.to_owned(),
            what: "a VRRP advert".into(),
            source,
        })
    }

    fn take_addresses(&mut self, vips: &[Vip]) -> Result<(), NetError> {
        if let Some(v) = &mut self.vmac {
            self.nl.set_up(v.index, true).map_err(|e| NetError::Link {
                name: v.name.clone(),
                parent: self.parent.name.clone(),
                op: "bring up macvlan",
                source: e,
            })?;
            v.up = true;
            if self.source.is_ipv6() {
                // The adverts' source, so that they can leave through the
                // macvlan (a link-local source must be on the device).
                let ll = Vip {
                    ip: self.source,
                    prefix_len: 64,
                };
                add_address(&mut self.nl, v.index, &v.name, &ll)?;
            }
        }
        let (name, index, _) = self.vip_dev();
        let name = name.to_owned();
        let mut first = Ok(());
        for vip in vips {
            let r = add_address(&mut self.nl, index, &name, vip);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    fn release_addresses(&mut self, vips: &[Vip]) -> Result<(), NetError> {
        if let Some(v) = &mut self.vmac {
            // First: a down macvlan answers nothing, at once.
            self.nl.set_up(v.index, false).map_err(|e| NetError::Link {
                name: v.name.clone(),
                parent: self.parent.name.clone(),
                op: "bring down macvlan",
                source: e,
            })?;
            v.up = false;
        }
        let (name, index, _) = self.vip_dev();
        let name = name.to_owned();
        let mut first = Ok(());
        for vip in vips {
            let r = delete_address(&mut self.nl, index, &name, vip);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    fn announce(&mut self, vips: &[Vip]) -> Result<(), NetError> {
        let (name, index, mac) = self.vip_dev();
        let mut first = Ok(());
        for vip in vips {
            let r = match vip.ip {
                IpAddr::V4(ip) => {
                    announce::send_frame(&self.packet, index, &announce::garp_frame(mac, ip))
                }
                IpAddr::V6(ip) => match &self.icmpv6 {
                    Some(sock) => announce::send_na(sock, index, mac, ip),
                    None => Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        "no ICMPv6 socket (IPv6 disabled?)",
                    )),
                },
            };
            if let (Err(source), true) = (r, first.is_ok()) {
                first = Err(NetError::Send {
                    name: name.to_owned(),
                    what: match vip.ip {
                        IpAddr::V4(_) => format!("a gratuitous ARP for {}", vip.ip),
                        IpAddr::V6(_) => format!("an unsolicited NA for {}", vip.ip),
                    },
                    source,
                });
            }
        }
        first
    }
}

/// RTM_NEWADDR, idempotently: an address already there is not an error.
pub(crate) fn add_address(
    nl: &mut Netlink,
    index: u32,
    name: &str,
    vip: &Vip,
) -> Result<(), NetError> {
    match nl.add_address(index, vip.ip, vip.prefix_len) {
        Err(e) if e.raw_os_error() != Some(Errno::EEXIST as i32) => Err(NetError::Address {
            vip: *vip,
            name: name.to_owned(),
            op: "add",
            source: e,
        }),
        _ => Ok(()),
    }
}

impl Drop for LinuxLink {
    fn drop(&mut self) {
        if let Err(e) = self.shut() {
            tracing::warn!(error = %e, "closing a VRRP link");
        }
    }
}
