//! VRRP (seed 004, active-active): the draft form both syntaxes read `add
//! vrid`, `set vrid`, `bind vrid`, `add ns ip ... -type VIP -vrid ID` and
//! `set vridParam` (native: `[vrrp]` and `[[vrrp.vrid]]`) into, the value
//! checks they share, and the validation that builds `Model::vrrp`.
//!
//! The front ends check single values (ranges, keywords, interface names,
//! addresses) with the functions here; everything that spans several lines
//! (a VIP before its `add vrid`, the same VIP in two VRIDs, a VRID without
//! an interface, tracked vservers that do not exist) is checked in
//! [`build`], once for both syntaxes, after the whole file is read.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::snapshot::FnvMap;
use sextant_core::vrrp::{Tracking, VipAddress, Vrid, VrrpChecksum, VrrpParams, VrrpSettings};
use sextant_core::{Model, ServiceId, VServerId};

use crate::draft::{Kind, Ref, Syntax};
use crate::duration;
use crate::error::Diag;

/// Shortest and longest advert interval: VRRPv3 carries it in centiseconds
/// in 12 bits (RFC 5798 §5.2.7), so 1 to 4095 cs.
pub(crate) const MIN_HELLO: Duration = Duration::from_millis(10);
pub(crate) const MAX_HELLO: Duration = Duration::from_millis(40_950);
/// The dead interval's range, as on the appliance.
pub(crate) const MIN_DEAD: Duration = Duration::from_secs(1);
pub(crate) const MAX_DEAD: Duration = Duration::from_secs(60);
/// The longest preemption delay, as on the appliance.
pub(crate) const MAX_PREEMPTION_DELAY: Duration = Duration::from_secs(36_000);

/// `add vrid` / `[[vrrp.vrid]]`: the VRID's own settings; its bound lists
/// stay empty until [`build`] fills them from the bindings.
#[derive(Debug)]
pub(crate) struct DraftVrid {
    pub vrid: Vrid,
    pub line: usize,
    /// `add vrid 1` / `[[vrrp.vrid]] 1`, for messages.
    pub context: Arc<str>,
    /// Lines that set tracking and preemption, for the warnings about them.
    pub tracking_line: Option<usize>,
    pub preemption_line: Option<usize>,
}

impl DraftVrid {
    pub(crate) fn new(id: u8, line: usize, context: Arc<str>) -> Self {
        DraftVrid {
            vrid: Vrid::new(id),
            line,
            context,
            tracking_line: None,
            preemption_line: None,
        }
    }
}

/// What a binding attaches to a VRID.
#[derive(Debug)]
pub(crate) enum VridBound {
    /// `-ifnum IFACE`, `interfaces`.
    Interface(String),
    /// `-trackifNum IFACE`, `track_interfaces`.
    TrackInterface(String),
    /// `-trackVserver NAME`, `track_vservers`.
    TrackVserver(Ref),
    /// `-trackService NAME`, `track_services`.
    TrackService(Ref),
    /// `add ns ip ... -vrid ID`, `addresses`.
    Address(VipAddress),
}

/// One thing bound to a VRID, on one line.
#[derive(Debug)]
pub(crate) struct VridBinding {
    pub vrid: u8,
    /// The VRID's index in [`DraftVrrp::vrids`] when the binding is written
    /// in its VRID's own table (TOML); otherwise it is found by `vrid`.
    pub of: Option<usize>,
    pub line: usize,
    /// `bind vrid 1`, `add ns ip 10.0.0.53`, `[[vrrp.vrid]] 1`.
    pub context: Arc<str>,
    pub bound: VridBound,
}

/// Everything about VRRP in one file.
#[derive(Debug, Default)]
pub(crate) struct DraftVrrp {
    pub params: VrrpParams,
    /// The line that set the dead interval: only a dead interval given in
    /// the file is checked against the hello interval.
    pub interval_line: Option<usize>,
    /// `set vridParam` / `[vrrp]`, for messages about the intervals.
    pub params_context: Option<Arc<str>>,
    pub vrids: Vec<DraftVrid>,
    pub bindings: Vec<VridBinding>,
}

// -- value checks shared by both front ends

/// A VRID: 1 to 255.
pub(crate) fn vrid_id(n: i128) -> Result<u8, String> {
    match n {
        1..=255 => Ok(n as u8),
        _ => Err(format!(
            "expected a VRID from 1 to 255, found {n} (VRID 0 is not valid on the wire)"
        )),
    }
}

/// A VRID from text.
pub(crate) fn vrid_text(text: &str) -> Result<u8, String> {
    let n: i128 = text
        .parse()
        .map_err(|_| format!("expected a VRID from 1 to 255, found \"{text}\""))?;
    vrid_id(n)
}

/// A base priority: 1 to 255, as on the appliance (255, its default, is the
/// highest: that node runs as RFC 5798's address owner, see docs/vrrp.md).
pub(crate) fn priority(n: i128) -> Result<u8, String> {
    match n {
        0 => Err(
            "0 is not a base priority (priority 0 means shutdown on the wire); use 1–255"
                .to_string(),
        ),
        1..=255 => Ok(n as u8),
        _ => Err(format!("expected a priority from 1 to 255, found {n}")),
    }
}

/// A base priority from text.
pub(crate) fn priority_text(text: &str) -> Result<u8, String> {
    let n: i128 = text
        .parse()
        .map_err(|_| format!("expected a priority from 1 to 255, found \"{text}\""))?;
    priority(n)
}

/// The advert interval: 10 ms to 40950 ms, in whole centiseconds.
pub(crate) fn hello_interval(d: Duration) -> Result<Duration, String> {
    if d < MIN_HELLO || d > MAX_HELLO {
        return Err(format!(
            "{} is out of range; expected 10 to 40950 ms (VRRPv3 carries the interval in centiseconds, at most 4095)",
            duration::format(d)
        ));
    }
    if !d.as_nanos().is_multiple_of(MIN_HELLO.as_nanos()) {
        return Err(format!(
            "{} is not a multiple of 10 ms (VRRPv3 carries the interval in centiseconds)",
            duration::format(d)
        ));
    }
    Ok(d)
}

/// The dead interval: 1 s to 60 s.
pub(crate) fn dead_interval(d: Duration) -> Result<Duration, String> {
    if d < MIN_DEAD || d > MAX_DEAD {
        return Err(format!(
            "{} is out of range; expected 1 to 60 s",
            duration::format(d)
        ));
    }
    Ok(d)
}

/// The preemption delay: 0 to 36000 s.
pub(crate) fn preemption_delay(d: Duration) -> Result<Duration, String> {
    if d > MAX_PREEMPTION_DELAY {
        return Err(format!(
            "{} is out of range; expected 0 to 36000 s",
            duration::format(d)
        ));
    }
    Ok(d)
}

/// A tracking mode, case-insensitively (`PROGRESSIVE`, `progressive`).
pub(crate) fn tracking(text: &str) -> Option<Tracking> {
    Tracking::ALL
        .into_iter()
        .find(|t| t.name().eq_ignore_ascii_case(text))
}

/// A checksum mode, case-insensitively; `-` is taken for `_`
/// (`pseudo-header`).
pub(crate) fn checksum(text: &str) -> Option<VrrpChecksum> {
    let text = text.replace('-', "_");
    VrrpChecksum::ALL
        .into_iter()
        .find(|c| c.name().eq_ignore_ascii_case(&text))
}

/// A Linux interface name, by the kernel's rule (`dev_valid_name`): 1 to
/// 15 bytes, not `.` or `..`, without `/`, `:` or white space.
pub(crate) fn interface_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the interface name is empty".to_string());
    }
    if name.contains('/')
        && name
            .split('/')
            .all(|p| p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(format!(
            "\"{name}\" is the appliance's slot/port numbering; Sextant runs on Linux interfaces: give the interface's name (e.g. eth0)"
        ));
    }
    if name.len() > 15 {
        return Err(format!(
            "interface name \"{name}\" is {} bytes long; Linux allows at most 15",
            name.len()
        ));
    }
    if name == "." || name == ".." {
        return Err(format!("\"{name}\" is not an interface name"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| *c == '/' || *c == ':' || c.is_whitespace())
    {
        return Err(format!(
            "interface name \"{name}\" contains {c:?}; Linux interface names cannot contain '/', ':' or white space"
        ));
    }
    Ok(())
}

/// Checks that a VIP is an address a node can take: unicast, not the
/// unspecified address or loopback.
pub(crate) fn vip(ip: IpAddr, prefix_len: u8) -> Result<VipAddress, String> {
    let bad = match ip {
        IpAddr::V4(v4) => {
            v4.is_unspecified() || v4.is_loopback() || v4.is_multicast() || v4.is_broadcast()
        }
        IpAddr::V6(v6) => v6.is_unspecified() || v6.is_loopback() || v6.is_multicast(),
    };
    if bad {
        return Err(format!(
            "{ip} cannot be a VIP; a VIP is a unicast address that the nodes share"
        ));
    }
    Ok(VipAddress { ip, prefix_len })
}

/// An `ADDR/LEN` VIP: IPv6 only when `v6_only` (`add ns ip6`), either
/// family otherwise (TOML `addresses`).
pub(crate) fn vip_cidr(text: &str, v6_only: bool) -> Result<VipAddress, String> {
    let example = if v6_only {
        "2001:db8::53/64"
    } else {
        "192.0.2.53/24 or 2001:db8::53/64"
    };
    let Some((addr, len)) = text.split_once('/') else {
        return Err(format!(
            "\"{text}\" has no prefix length; write ADDR/LEN, e.g. {example}"
        ));
    };
    let ip: IpAddr = addr
        .parse()
        .map_err(|_| format!("expected ADDR/LEN, e.g. {example}, found \"{text}\""))?;
    if v6_only && ip.is_ipv4() {
        return Err(format!(
            "{ip} is an IPv4 address; use add ns ip IP MASK for IPv4 VIPs"
        ));
    }
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let prefix_len = match len.parse::<u8>() {
        Ok(n) if (1..=max).contains(&n) => n,
        _ => {
            return Err(format!(
                "prefix length \"{len}\" in \"{text}\": expected 1 to {max}"
            ));
        }
    };
    vip(ip, prefix_len)
}

// -- validation

/// The VRID as messages name it.
fn label(syntax: Syntax, id: u8) -> String {
    match syntax {
        Syntax::Appliance => format!("vrid {id}"),
        Syntax::Toml => format!("[[vrrp.vrid]] {id}"),
    }
}

/// What a binding binds, for "already bound" messages, with its key in
/// each syntax.
fn what(bound: &VridBound) -> (String, &'static str, &'static str) {
    match bound {
        VridBound::Interface(n) => (format!("interface \"{n}\""), "-ifnum", "interfaces"),
        VridBound::TrackInterface(n) => (
            format!("tracked interface \"{n}\""),
            "-trackifNum",
            "track_interfaces",
        ),
        VridBound::TrackVserver(r) => (
            format!("vserver \"{}\"", r.name),
            "-trackVserver",
            "track_vservers",
        ),
        VridBound::TrackService(r) => (
            format!("service \"{}\"", r.name),
            "-trackService",
            "track_services",
        ),
        VridBound::Address(a) => (format!("VIP {}", a.ip), "-vrid", "addresses"),
    }
}

/// The key of a binding's sort in this syntax.
fn key(syntax: Syntax, bound: &VridBound) -> &'static str {
    let (_, a, t) = what(bound);
    match syntax {
        Syntax::Appliance => a,
        Syntax::Toml => t,
    }
}

/// What one binding resolved to, for the duplicate check.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Target {
    Interface(String),
    TrackInterface(String),
    Vserver(VServerId),
    Service(ServiceId),
}

/// Builds `model.vrrp` from `draft`. Runs after the vservers, services
/// and DNS listeners are in the model (tracking names them).
pub(crate) fn build(draft: &DraftVrrp, syntax: Syntax, diag: &mut Diag, model: &mut Model) {
    let mut settings = VrrpSettings {
        params: draft.params.clone(),
        vrids: Vec::new(),
    };
    intervals(draft, syntax, diag);

    // The VRIDs, each id once.
    let mut index: FnvMap<u8, usize> = FnvMap::default();
    for (i, d) in draft.vrids.iter().enumerate() {
        match index.get(&d.vrid.id) {
            Some(&first) => diag.error(
                d.line,
                format!(
                    "{}: vrid {} is already defined on line {}",
                    d.context, d.vrid.id, draft.vrids[first].line
                ),
            ),
            None => {
                index.insert(d.vrid.id, i);
            }
        }
    }
    let mut vrids: Vec<Vrid> = draft.vrids.iter().map(|d| d.vrid.clone()).collect();

    // The bindings, in order: each resolved and checked against what is
    // bound already.
    let mut seen: FnvMap<(usize, Target), usize> = FnvMap::default();
    let mut vips: FnvMap<IpAddr, (u8, usize)> = FnvMap::default();
    // Per VRID, its first VIP and that VIP's line.
    let mut first_vip: FnvMap<usize, (VipAddress, usize)> = FnvMap::default();
    for b in &draft.bindings {
        let Some(v) = b.of.or_else(|| index.get(&b.vrid).copied()) else {
            diag.error(
                b.line,
                format!(
                    "{}: vrid {} is not defined (add it with \"add vrid {}\")",
                    b.context, b.vrid, b.vrid
                ),
            );
            continue;
        };
        let id = draft.vrids[v].vrid.id;
        let target = match &b.bound {
            VridBound::Interface(n) => Target::Interface(n.clone()),
            VridBound::TrackInterface(n) => Target::TrackInterface(n.clone()),
            VridBound::TrackVserver(r) => {
                match resolve(
                    model.vserver_by_name(&r.name),
                    r,
                    Kind::VServer,
                    syntax,
                    diag,
                ) {
                    Some(i) => Target::Vserver(i),
                    None => continue,
                }
            }
            VridBound::TrackService(r) => {
                match resolve(
                    model.service_by_name(&r.name),
                    r,
                    Kind::Service,
                    syntax,
                    diag,
                ) {
                    Some(i) => Target::Service(i),
                    None => continue,
                }
            }
            VridBound::Address(a) => {
                if let Some(&(other, line)) = vips.get(&a.ip) {
                    let message = if other == id {
                        already(syntax, b, id, line)
                    } else {
                        format!(
                            "{}: VIP {} is already a VIP of vrid {other} (line {line}); a VIP belongs to one virtual router",
                            b.context, a.ip
                        )
                    };
                    diag.error(b.line, message);
                    continue;
                }
                vips.insert(a.ip, (id, b.line));
                match first_vip.get(&v) {
                    Some((first, line)) if first.ip.is_ipv4() != a.ip.is_ipv4() => {
                        diag.error(
                            b.line,
                            format!(
                                "{}: vrid {id} mixes IPv4 and IPv6 VIPs ({} on line {line}, {} here); VRRPv3 runs one instance per address family: use two VRIDs, one for each family",
                                b.context, first.ip, a.ip
                            ),
                        );
                        continue;
                    }
                    Some(_) => {}
                    None => {
                        first_vip.insert(v, (*a, b.line));
                    }
                }
                vrids[v].addresses.push(*a);
                continue;
            }
        };
        if let Some(&first) = seen.get(&(v, target.clone())) {
            diag.error(b.line, already(syntax, b, id, first));
            continue;
        }
        seen.insert((v, target.clone()), b.line);
        let vrid = &mut vrids[v];
        match target {
            Target::Interface(n) => vrid.interfaces.push(n),
            Target::TrackInterface(n) => vrid.track_interfaces.push(n),
            Target::Vserver(i) => vrid.track_vservers.push(model.vservers[i].name.clone()),
            Target::Service(i) => vrid.track_services.push(model.services[i].name.clone()),
        }
    }

    // Each VRID as a whole.
    for (i, d) in draft.vrids.iter().enumerate() {
        if index.get(&d.vrid.id) != Some(&i) {
            continue;
        }
        whole(d, &vrids[i], syntax, diag, model);
    }

    let mut kept: Vec<Vrid> = vrids
        .into_iter()
        .enumerate()
        .filter(|(i, v)| index.get(&v.id) == Some(i))
        .map(|(_, v)| v)
        .collect();
    kept.sort_by_key(|v| v.id);
    settings.vrids = kept;
    model.vrrp = settings;
}

/// "... is already bound" for a binding that repeats one on `first`.
fn already(syntax: Syntax, b: &VridBinding, id: u8, first: usize) -> String {
    let (thing, _, _) = what(&b.bound);
    match syntax {
        Syntax::Appliance => format!(
            "{}: {thing} is already bound to vrid {id} (line {first})",
            b.context
        ),
        Syntax::Toml => format!(
            "{}: {}: {thing} is listed twice (line {first})",
            b.context,
            key(syntax, &b.bound)
        ),
    }
}

/// A tracked vserver or service as the model found it by name
/// (case-insensitively), reporting it if it is not defined.
fn resolve<I>(found: Option<I>, r: &Ref, kind: Kind, syntax: Syntax, diag: &mut Diag) -> Option<I> {
    if found.is_none() {
        diag.error(
            r.line,
            format!(
                "{}: {} \"{}\" is not defined ({})",
                r.context,
                kind.noun(),
                r.name,
                syntax.how_to_define(kind, &r.name)
            ),
        );
    }
    found
}

/// Warns when the dead interval is not three advert intervals.
fn intervals(draft: &DraftVrrp, syntax: Syntax, diag: &mut Diag) {
    let (Some(line), Some(ctx)) = (draft.interval_line, &draft.params_context) else {
        return;
    };
    let p = &draft.params;
    let three = p.hello_interval * 3;
    if p.dead_interval == three {
        return;
    }
    let (dead, hello) = match syntax {
        Syntax::Appliance => ("-deadInterval", "-helloInterval"),
        Syntax::Toml => ("dead_interval", "hello_interval"),
    };
    diag.warn(
        line,
        format!(
            "{ctx}: {dead} {} is not 3 × {hello} ({}); VRRPv3 backups take over after Master_Down_Interval = 3 × the advertised interval + skew, so RFC 5798 peers (keepalived) wait about {} whatever {dead} says",
            duration::format(p.dead_interval),
            duration::format(three),
            duration::format(three),
        ),
    );
}

/// The checks of one VRID with everything bound to it.
fn whole(d: &DraftVrid, v: &Vrid, syntax: Syntax, diag: &mut Diag, model: &Model) {
    let name = label(syntax, v.id);
    let id = v.id;
    if v.addresses.is_empty() {
        let how = match syntax {
            Syntax::Appliance => format!("add one with `add ns ip IP MASK -type VIP -vrid {id}`"),
            Syntax::Toml => "add addresses = [\"IP/LEN\"]".to_string(),
        };
        diag.warn(
            d.line,
            format!("{name} has no VIP, so it advertises nothing ({how})"),
        );
    } else if v.interfaces.is_empty() {
        let how = match syntax {
            Syntax::Appliance => format!("add `bind vrid {id} -ifnum IFACE`"),
            Syntax::Toml => "add interfaces = [\"IFACE\"]".to_string(),
        };
        diag.error(d.line, format!("{name} has no interface: {how}"));
    }
    if v.priority == 255 && !v.preemption {
        let off = match syntax {
            Syntax::Appliance => "-preemption DISABLED",
            Syntax::Toml => "preemption = false",
        };
        diag.warn(
            d.preemption_line.unwrap_or(d.line),
            format!("{name}: {off} has no effect at priority 255: that node is the address owner of RFC 5798, which always takes its VIPs (docs/vrrp.md)"),
        );
    }
    if v.tracking == Tracking::None {
        return;
    }
    let line = d.tracking_line.unwrap_or(d.line);
    let mode = match syntax {
        Syntax::Appliance => format!("-tracking {}", v.tracking.name()),
        Syntax::Toml => format!("tracking = \"{}\"", v.tracking.name().to_ascii_lowercase()),
    };
    if !v.preemption && v.priority < 255 {
        let off = match syntax {
            Syntax::Appliance => "-preemption DISABLED",
            Syntax::Toml => "preemption = false",
        };
        // Preemption is the taking side's setting: what this node does as a
        // backup. A master at EP 0 hands its VIPs over whatever anyone's
        // preemption says; a master only lowered (PROGRESSIVE) keeps them
        // until a backup preempts.
        let what = if v.tracking == Tracking::Progressive {
            "as a backup this node never takes the VIPs from a master whose tracking lowered its priority below this node's, so a partly failed master keeps them"
        } else {
            "a master whose tracking drops it to 0 hands its VIPs over all the same (it advertises priority 0), but once this node's tracked objects are back it does not take its VIPs back, and as a backup it never takes them from a lower master"
        };
        diag.warn(
            d.preemption_line.unwrap_or(d.line).max(line),
            format!(
                "{name}: {mode} with {off}: {what} (seed 004: enable preemption with health tracking; the backups' setting is the one that moves a VIP)"
            ),
        );
    }
    // The mode counts vservers and services only; the DNS listener on a VIP
    // and -trackifNum interfaces are required in every mode, NONE too.
    let counted = !(v.track_vservers.is_empty() && v.track_services.is_empty());
    if counted {
        return;
    }
    let keys = match syntax {
        Syntax::Appliance => "no -trackVserver or -trackService",
        Syntax::Toml => "track_vservers and track_services are empty",
    };
    let listener = model
        .dns_listen
        .iter()
        .find(|a| v.addresses.iter().any(|vip| vip.ip == a.ip()));
    let required = match (listener, v.track_interfaces.is_empty()) {
        (Some(addr), true) => Some(format!("this node's DNS listener on {addr}")),
        (Some(addr), false) => Some(format!(
            "this node's DNS listener on {addr} and the tracked interfaces"
        )),
        (None, false) => Some("the tracked interfaces".to_string()),
        (None, true) => None,
    };
    match required {
        Some(required) => diag.warn(
            line,
            format!(
                "{name}: {mode} has nothing to count ({keys}); only the required objects, {required}, can move the VIPs, as they would with NONE"
            ),
        ),
        None => {
            let listen = match syntax {
                Syntax::Appliance => "add service NAME VIP ADNS PORT",
                Syntax::Toml => "[server] dns_listen",
            };
            diag.warn(
                line,
                format!(
                    "{name}: {mode} has nothing to track: nothing is bound to count ({keys}), no interface is tracked and no DNS listener ({listen}) is on its VIPs"
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(vrid_text("1"), Ok(1));
        assert_eq!(vrid_text("255"), Ok(255));
        assert!(vrid_text("0").is_err());
        assert!(vrid_text("256").is_err());
        assert!(vrid_text("x").is_err());
        assert_eq!(priority_text("254"), Ok(254));
        assert_eq!(priority_text("255"), Ok(255));
        assert!(priority_text("256").is_err());
        assert!(priority_text("0").unwrap_err().contains("shutdown"));
        assert!(priority_text("-3").is_err());
        assert!(hello_interval(Duration::from_millis(10)).is_ok());
        assert!(hello_interval(Duration::from_millis(40_950)).is_ok());
        assert!(hello_interval(Duration::from_millis(40_960)).is_err());
        assert!(hello_interval(Duration::from_millis(15)).is_err());
        assert!(hello_interval(Duration::ZERO).is_err());
        assert!(dead_interval(Duration::from_millis(999)).is_err());
        assert!(preemption_delay(Duration::ZERO).is_ok());
        assert!(preemption_delay(Duration::from_secs(36_001)).is_err());
        assert_eq!(tracking("progressive"), Some(Tracking::Progressive));
        assert_eq!(tracking("SOME"), None);
        assert_eq!(checksum("pseudo-header"), Some(VrrpChecksum::PseudoHeader));
        assert_eq!(checksum("PSEUDO_HEADER"), Some(VrrpChecksum::PseudoHeader));
        assert_eq!(checksum("rfc9568"), Some(VrrpChecksum::Rfc9568));
    }

    #[test]
    fn interfaces() {
        for ok in ["eth0", "ens3f1", "bond0.100", "a-b_c", "x23456789012345"] {
            assert!(interface_name(ok).is_ok(), "{ok}");
        }
        assert!(interface_name("1/1").unwrap_err().contains("slot/port"));
        for bad in ["", ".", "..", "eth0:1", "a b", "x234567890123456", "a/b"] {
            assert!(interface_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cidrs() {
        let a = vip_cidr("10.0.0.53/24", false).expect("v4");
        assert_eq!((a.ip.to_string(), a.prefix_len), ("10.0.0.53".into(), 24));
        assert!(vip_cidr("fd00::53/64", true).is_ok());
        assert!(vip_cidr("10.0.0.53/24", true).unwrap_err().contains("IPv4"));
        assert!(
            vip_cidr("10.0.0.53", false)
                .unwrap_err()
                .contains("no prefix")
        );
        assert!(vip_cidr("10.0.0.53/33", false).is_err());
        assert!(vip_cidr("fd00::53/0", false).is_err());
        assert!(vip_cidr("0.0.0.0/8", false).is_err());
        assert!(vip_cidr("ff02::12/64", false).is_err());
    }
}
