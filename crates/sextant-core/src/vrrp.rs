//! The VRRP configuration of one node (seed 004, active-active): the
//! virtual routers (VRIDs) this node takes part in, their base priorities,
//! what their health tracking counts, and the VIPs they move between the
//! nodes of a site.
//!
//! Only configuration: `sextant-config` builds it from `add vrid`, `bind
//! vrid`, `add ns ip ... -type VIP -vrid ID` and `set vridParam` (or the
//! native `[vrrp]` table); `sextant-vrrp` and the binary run it. The same
//! VRID is configured on every node that shares its VIPs, with a different
//! priority on each, so that each VIP is master on one node at a time.

use std::net::IpAddr;
use std::time::Duration;

/// A VIP of a virtual router (`add ns ip VIP MASK -type VIP -vrid ID`).
/// The prefix length is the one the address gets on the interface while
/// this node is master (the appliance writes it as a netmask).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VipAddress {
    pub ip: IpAddr,
    pub prefix_len: u8,
}

impl std::fmt::Display for VipAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.ip, self.prefix_len)
    }
}

/// How health tracking turns the base priority (BP) into the effective
/// priority (EP) that is advertised, from the tracked objects (N in all,
/// k of them down). Seed 004, "Health tracking".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Tracking {
    /// EP = BP whatever is down.
    #[default]
    None,
    /// EP = BP while everything tracked is up, else 0.
    All,
    /// EP = BP while at least one tracked object is up, else 0.
    One,
    /// EP = BP if all are up, 0 if all are down, else BP × (1 − k/N).
    Progressive,
}

impl Tracking {
    /// Every mode, in the order the appliance lists them.
    pub const ALL: [Tracking; 4] = [
        Tracking::None,
        Tracking::All,
        Tracking::One,
        Tracking::Progressive,
    ];

    /// The appliance's keyword (`-tracking PROGRESSIVE`); the native
    /// schema writes it in lower case.
    pub fn name(&self) -> &'static str {
        match self {
            Tracking::None => "NONE",
            Tracking::All => "ALL",
            Tracking::One => "ONE",
            Tracking::Progressive => "PROGRESSIVE",
        }
    }
}

/// What the checksum of an IPv4 advert covers. IPv6 adverts always cover
/// the pseudo-header (RFC 5798 §5.2.8); for IPv4, RFC 9568 drops it, but
/// keepalived 2.2 and the appliances still send it, so that is the default
/// (peers must agree, or they discard each other's adverts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum VrrpChecksum {
    /// RFC 5798: the checksum includes the IPv4 pseudo-header.
    #[default]
    PseudoHeader,
    /// RFC 9568: the VRRP message only.
    Rfc9568,
}

impl VrrpChecksum {
    pub const ALL: [VrrpChecksum; 2] = [VrrpChecksum::PseudoHeader, VrrpChecksum::Rfc9568];

    /// The appliance-syntax keyword (`-checksum PSEUDO_HEADER`); the native
    /// schema writes it in lower case.
    pub fn name(&self) -> &'static str {
        match self {
            VrrpChecksum::PseudoHeader => "PSEUDO_HEADER",
            VrrpChecksum::Rfc9568 => "RFC9568",
        }
    }
}

/// Settings shared by every VRID of the node (`set vridParam`, `[vrrp]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VrrpParams {
    /// A backup VIP that receives traffic hands it to the master instead of
    /// dropping it; a VRID's own `sharing` takes precedence (seed 004).
    pub send_to_master: bool,
    /// The advert interval (VRRPv3 carries it in centiseconds, so it is a
    /// multiple of 10 ms).
    pub hello_interval: Duration,
    /// How long without adverts before a backup takes over, as the appliance
    /// configures it. RFC 5798 backups derive it themselves as
    /// 3 × interval + skew; the configuration warns when the two differ.
    pub dead_interval: Duration,
    pub checksum: VrrpChecksum,
    /// The master answers for its VIPs with the virtual MAC
    /// 00:00:5e:00:01:VRID (seed 004, RFC 5798 §7.3), so that switches learn
    /// the new port from the gratuitous ARP on takeover; off, it uses the
    /// interface's own MAC.
    pub virtual_mac: bool,
}

impl VrrpParams {
    /// The default advert interval, 1 s (RFC 5798, the appliance).
    pub const DEFAULT_HELLO_INTERVAL: Duration = Duration::from_secs(1);
    /// The default dead interval, 3 s.
    pub const DEFAULT_DEAD_INTERVAL: Duration = Duration::from_secs(3);
}

impl Default for VrrpParams {
    fn default() -> Self {
        VrrpParams {
            send_to_master: false,
            hello_interval: Self::DEFAULT_HELLO_INTERVAL,
            dead_interval: Self::DEFAULT_DEAD_INTERVAL,
            checksum: VrrpChecksum::PseudoHeader,
            virtual_mac: true,
        }
    }
}

/// One virtual router on this node (`add vrid ID`, `[[vrrp.vrid]]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vrid {
    /// 1–255, the same on every node that shares these VIPs.
    pub id: u8,
    /// The base priority, 1–255 (0 means "shutting down" on the wire). 255,
    /// the appliance's default, is the highest: the node runs as RFC 5798's
    /// address owner (master at once at start, always preempts).
    pub priority: u8,
    /// A higher priority takes over from a lower master (seed 004: on by
    /// default, and needed for health tracking to move the VIPs).
    pub preemption: bool,
    /// How long a backup with a higher priority waits before it preempts.
    pub preemption_delay: Duration,
    /// While backup, still process traffic that reaches these VIPs.
    pub sharing: bool,
    pub tracking: Tracking,
    /// The Linux interfaces the VRID runs on (`bind vrid ID -ifnum IFACE`).
    pub interfaces: Vec<String>,
    /// Interfaces whose link state is tracked (`-trackifnum IFACE`).
    pub track_interfaces: Vec<String>,
    /// GSLB vservers whose state is tracked (`-trackVserver NAME`), by name.
    pub track_vservers: Vec<String>,
    /// GSLB services whose monitors' verdict is tracked
    /// (`-trackService NAME`), by name.
    pub track_services: Vec<String>,
    /// The VIPs, in configuration order; all of one address family
    /// (VRRPv3 runs one instance per family).
    pub addresses: Vec<VipAddress>,
}

impl Vrid {
    /// The default base priority.
    pub const DEFAULT_PRIORITY: u8 = 100;

    /// A VRID with the defaults: priority 100, preemption on without delay,
    /// no sharing, no tracking, nothing bound.
    pub fn new(id: u8) -> Self {
        Vrid {
            id,
            priority: Self::DEFAULT_PRIORITY,
            preemption: true,
            preemption_delay: Duration::ZERO,
            sharing: false,
            tracking: Tracking::None,
            interfaces: Vec::new(),
            track_interfaces: Vec::new(),
            track_vservers: Vec::new(),
            track_services: Vec::new(),
            addresses: Vec::new(),
        }
    }

    /// The virtual MAC of this VRID for IPv4 (00:00:5e:00:01:VRID) or IPv6
    /// (00:00:5e:00:02:VRID), RFC 5798 §7.3.
    pub fn virtual_mac(&self, ipv6: bool) -> [u8; 6] {
        [
            0x00,
            0x00,
            0x5e,
            0x00,
            if ipv6 { 0x02 } else { 0x01 },
            self.id,
        ]
    }
}

/// The node's VRRP configuration. Default: no VRIDs, so VRRP does not run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VrrpSettings {
    pub params: VrrpParams,
    /// Sorted by id, each id once.
    pub vrids: Vec<Vrid>,
}

impl VrrpSettings {
    /// The VRID with this id.
    pub fn vrid(&self, id: u8) -> Option<&Vrid> {
        self.vrids
            .binary_search_by_key(&id, |v| v.id)
            .ok()
            .map(|i| &self.vrids[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let p = VrrpParams::default();
        assert!(!p.send_to_master);
        assert_eq!(p.hello_interval, Duration::from_secs(1));
        assert_eq!(p.dead_interval, Duration::from_secs(3));
        assert_eq!(p.checksum, VrrpChecksum::PseudoHeader);
        assert!(p.virtual_mac);
        let v = Vrid::new(7);
        assert_eq!((v.id, v.priority), (7, 100));
        assert!(v.preemption && !v.sharing);
        assert_eq!(v.preemption_delay, Duration::ZERO);
        assert_eq!(v.tracking, Tracking::None);
        assert_eq!(v.virtual_mac(false), [0, 0, 0x5e, 0, 1, 7]);
        assert_eq!(v.virtual_mac(true), [0, 0, 0x5e, 0, 2, 7]);
        assert!(VrrpSettings::default().vrids.is_empty());
    }

    #[test]
    fn names_and_lookup() {
        let names: Vec<&str> = Tracking::ALL.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["NONE", "ALL", "ONE", "PROGRESSIVE"]);
        assert_eq!(VrrpChecksum::Rfc9568.name(), "RFC9568");
        let s = VrrpSettings {
            params: VrrpParams::default(),
            vrids: vec![Vrid::new(1), Vrid::new(3)],
        };
        assert_eq!(s.vrid(3).map(|v| v.id), Some(3));
        assert!(s.vrid(2).is_none());
        let a = VipAddress {
            ip: "10.0.0.53".parse().expect("ip"),
            prefix_len: 24,
        };
        assert_eq!(a.to_string(), "10.0.0.53/24");
    }
}
