//! Runtime maintenance: what the operator enabled, disabled or drained.
//!
//! The administrative state is separate from health: a disabled service is
//! still monitored and keeps its UP/DOWN state, it is only never answered.
//! The state engine keeps the operator's marks by name and publishes them
//! with every snapshot as an [`AdminTable`], so DNS, `explain` and the API
//! read them from the same moment as the health they go with.

use std::sync::Arc;

use crate::id::IdVec;
use crate::model::{Model, ServiceId, SiteId, VServerId};

/// What the operator said of a service, vserver or site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AdminState {
    /// Answered as its health allows (the default).
    #[default]
    Enabled,
    /// Never answered (`disable gslb service|vserver|site`).
    Disabled,
    /// Services only: no new answers; persistence entries that already
    /// point at it keep it until they expire.
    Draining,
}

impl AdminState {
    pub fn as_str(self) -> &'static str {
        match self {
            AdminState::Enabled => "enabled",
            AdminState::Disabled => "disabled",
            AdminState::Draining => "draining",
        }
    }

    /// Parses `enabled`, `disabled` or `draining` (any case).
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "enabled" => Some(AdminState::Enabled),
            "disabled" => Some(AdminState::Disabled),
            "draining" => Some(AdminState::Draining),
            _ => None,
        }
    }
}

/// What kind of object an administrative mark is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AdminKind {
    Service,
    VServer,
    Site,
}

impl AdminKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AdminKind::Service => "service",
            AdminKind::VServer => "vserver",
            AdminKind::Site => "site",
        }
    }

    /// Parses `service`, `vserver` or `site` (any case).
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "service" => Some(AdminKind::Service),
            "vserver" => Some(AdminKind::VServer),
            "site" => Some(AdminKind::Site),
            _ => None,
        }
    }
}

/// An object the configuration itself disables (`add gslb service ...
/// -state DISABLED`, `disable gslb vserver NAME`, as a saved appliance
/// configuration writes them). Not a state of its own: the server turns it
/// into an operator's mark ([`AdminMark`]) when it first sees the line (at
/// a start with no maintenance state file yet, or on the reload that adds
/// it), and from then on the operator's `enable` wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigDisabled {
    pub kind: AdminKind,
    /// The name as the object is configured.
    pub name: String,
    /// The line that disables it (the last one, when several do).
    pub line: usize,
}

impl ConfigDisabled {
    /// The reason its mark carries.
    pub fn reason(&self) -> String {
        format!("disabled in the configuration (line {})", self.line)
    }
}

/// One mark: the state the operator set, when and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminMark {
    pub state: AdminState,
    /// Wall-clock time the operator set it, in milliseconds since the UNIX
    /// epoch (given by the edge as data: it must survive a restart, which
    /// the daemon's monotonic clock does not).
    pub since_unix_ms: u64,
    pub reason: Option<Arc<str>>,
}

/// Every mark of one configuration, by id, as one snapshot publishes it.
/// Empty (and free on the DNS path) while nothing is marked.
#[derive(Debug, Clone, Default)]
pub struct AdminTable {
    services: IdVec<ServiceId, Option<AdminMark>>,
    vservers: IdVec<VServerId, Option<AdminMark>>,
    sites: IdVec<SiteId, Option<AdminMark>>,
    /// Per service: the state DNS honours (its own mark, or Disabled when
    /// its site is disabled). Empty when nothing is marked.
    effective: IdVec<ServiceId, AdminState>,
    /// Per vserver: disabled. Empty when no vserver is.
    vserver_disabled: IdVec<VServerId, bool>,
    any_draining: bool,
}

/// Why a service is not answered as its health alone would have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdminCause<'a> {
    /// The object the operator marked: the service itself or its site.
    pub kind: AdminKind,
    pub mark: &'a AdminMark,
}

impl AdminTable {
    /// The table of `model` with these marks (ids of that model).
    pub fn new(
        model: &Model,
        marks: impl IntoIterator<Item = (AdminTarget, AdminMark)>,
    ) -> AdminTable {
        let mut t = AdminTable::default();
        for (target, mark) in marks {
            if mark.state == AdminState::Enabled {
                continue;
            }
            match target {
                AdminTarget::Service(id) if id.index() < model.services.len() => {
                    if t.services.is_empty() {
                        t.services = model.services.iter().map(|_| None).collect();
                    }
                    t.services[id] = Some(mark);
                }
                AdminTarget::VServer(id) if id.index() < model.vservers.len() => {
                    if t.vservers.is_empty() {
                        t.vservers = model.vservers.iter().map(|_| None).collect();
                    }
                    t.vservers[id] = Some(mark);
                }
                AdminTarget::Site(id) if id.index() < model.sites.len() => {
                    if t.sites.is_empty() {
                        t.sites = model.sites.iter().map(|_| None).collect();
                    }
                    t.sites[id] = Some(mark);
                }
                _ => {}
            }
        }
        if !t.services.is_empty() || !t.sites.is_empty() {
            t.effective = model
                .services
                .iter_enumerated()
                .map(|(id, s)| {
                    let site_off = t.sites.get(s.site).is_some_and(|m| m.is_some());
                    match t.services.get(id).and_then(|m| m.as_ref()) {
                        _ if site_off => AdminState::Disabled,
                        Some(m) => m.state,
                        None => AdminState::Enabled,
                    }
                })
                .collect();
            t.any_draining = t.effective.iter().any(|s| *s == AdminState::Draining);
        }
        if !t.vservers.is_empty() {
            t.vserver_disabled = t.vservers.iter().map(|m| m.is_some()).collect();
        }
        t
    }

    /// Nothing is marked.
    pub fn is_empty(&self) -> bool {
        self.services.is_empty() && self.vservers.is_empty() && self.sites.is_empty()
    }

    /// The state DNS honours for a service (its site's disabling included).
    #[inline]
    pub fn service(&self, id: ServiceId) -> AdminState {
        self.effective.get(id).copied().unwrap_or_default()
    }

    /// Whether a vserver is disabled.
    #[inline]
    pub fn vserver_disabled(&self, id: VServerId) -> bool {
        self.vserver_disabled.get(id).copied().unwrap_or(false)
    }

    /// Some service is draining (so persistence looks for it).
    #[inline]
    pub fn any_draining(&self) -> bool {
        self.any_draining
    }

    /// The service's own mark.
    pub fn service_mark(&self, id: ServiceId) -> Option<&AdminMark> {
        self.services.get(id)?.as_ref()
    }

    pub fn vserver_mark(&self, id: VServerId) -> Option<&AdminMark> {
        self.vservers.get(id)?.as_ref()
    }

    pub fn site_mark(&self, id: SiteId) -> Option<&AdminMark> {
        self.sites.get(id)?.as_ref()
    }

    /// Why a service is not answered as its health has it: its site's
    /// disabling first (it wins), else its own mark.
    pub fn service_cause(&self, model: &Model, id: ServiceId) -> Option<AdminCause<'_>> {
        let site = model.services.get(id)?.site;
        if let Some(mark) = self.site_mark(site) {
            return Some(AdminCause {
                kind: AdminKind::Site,
                mark,
            });
        }
        self.service_mark(id).map(|mark| AdminCause {
            kind: AdminKind::Service,
            mark,
        })
    }
}

/// An object of one configuration that a mark can be on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminTarget {
    Service(ServiceId),
    VServer(VServerId),
    Site(SiteId),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_kinds_round_trip_through_their_names() {
        for s in [
            AdminState::Enabled,
            AdminState::Disabled,
            AdminState::Draining,
        ] {
            assert_eq!(AdminState::parse(s.as_str()), Some(s));
        }
        for k in [AdminKind::Service, AdminKind::VServer, AdminKind::Site] {
            assert_eq!(AdminKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(AdminState::parse("off"), None);
    }
}
