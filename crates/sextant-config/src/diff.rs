//! What one configuration changes against another, object by object and
//! by name (`PUT /v1/config` shows it before it applies anything).
//!
//! Objects refer to each other by index into the model's tables, and
//! those indices move whenever an object is added or removed before
//! another one. So every reference is compared by the name it points to:
//! adding a service before `web-2` does not make `web-2` or its vserver
//! "changed".

use std::collections::BTreeMap;

use sextant_core::policy::DnsActionId;
use sextant_core::{Model, SiteId, VServerId};

/// The objects added, removed and changed, each as `"KIND NAME"`, in a
/// fixed order (kinds as listed in [`diff`], names sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
}

impl ConfigDiff {
    /// Whether the two configurations are the same.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }

    /// Compares the objects of one kind, keyed by lower-case name.
    fn compare<V: PartialEq>(
        &mut self,
        kind: &str,
        old: impl IntoIterator<Item = (String, V)>,
        new: impl IntoIterator<Item = (String, V)>,
    ) {
        let keyed = |items: Vec<(String, V)>| -> BTreeMap<String, (String, V)> {
            items
                .into_iter()
                .map(|(name, v)| (name.to_ascii_lowercase(), (name, v)))
                .collect()
        };
        let old = keyed(old.into_iter().collect());
        let new = keyed(new.into_iter().collect());
        for (key, (name, v)) in &new {
            match old.get(key) {
                None => self.added.push(format!("{kind} {name}")),
                Some((_, was)) if was != v => self.changed.push(format!("{kind} {name}")),
                Some(_) => {}
            }
        }
        for (key, (name, _)) in &old {
            if !new.contains_key(key) {
                self.removed.push(format!("{kind} {name}"));
            }
        }
    }

    /// A setting without a name of its own: changed or not.
    fn setting<V: PartialEq>(&mut self, what: &str, old: V, new: V) {
        if old != new {
            self.changed.push(what.to_string());
        }
    }
}

/// The difference from `old` (the running configuration) to `new`: sites,
/// monitors, services, vservers, domains (with the vserver each is bound
/// to), datacenter-mode records, zones, static records (by owner name),
/// DNS actions and policies (with their global binding), and the settings
/// without names (`gslb parameters`, `dns parameters`, `vrrp`,
/// `listeners`, `locations`, `rpc nodes`, `local site`).
pub fn diff(old: &Model, new: &Model) -> ConfigDiff {
    let mut d = ConfigDiff::default();
    d.compare("site", sites(old), sites(new));
    d.compare("monitor", monitors(old), monitors(new));
    d.compare("service", services(old), services(new));
    d.compare("vserver", vservers(old), vservers(new));
    d.compare("domain", domains(old), domains(new));
    d.compare("dc_record", dc_records(old), dc_records(new));
    d.compare("zone", zones(old), zones(new));
    d.compare("record", records(old), records(new));
    d.compare("dns_action", actions(old), actions(new));
    d.compare("dns_policy", policies(old), policies(new));
    d.setting("gslb parameters", &old.params, &new.params);
    d.setting("dns parameters", &old.dns, &new.dns);
    d.setting("vrrp", &old.vrrp, &new.vrrp);
    d.setting(
        "listeners",
        (&old.dns_listen, old.api_listen, &old.api_token_file),
        (&new.dns_listen, new.api_listen, &new.api_token_file),
    );
    d.setting("locations", &old.locations, &new.locations);
    d.setting("rpc nodes", &old.rpc_nodes, &new.rpc_nodes);
    d.setting("local site", local_site(old), local_site(new));
    d
}

fn site_name(m: &Model, id: SiteId) -> String {
    m.sites.get(id).map(|s| s.name.clone()).unwrap_or_default()
}

fn local_site(m: &Model) -> Option<String> {
    m.local_site.map(|s| site_name(m, s))
}

/// A site with its parent and backup parents by name.
fn sites(m: &Model) -> Vec<(String, impl PartialEq + use<>)> {
    m.sites
        .iter()
        .map(|s| {
            let refs = (
                s.parent.map(|p| site_name(m, p)),
                s.backup_parents
                    .iter()
                    .map(|&p| site_name(m, p))
                    .collect::<Vec<_>>(),
            );
            let mut bare = s.clone();
            bare.parent = None;
            bare.backup_parents.clear();
            (s.name.clone(), (bare, refs))
        })
        .collect()
}

fn monitors(m: &Model) -> Vec<(String, impl PartialEq + use<>)> {
    m.monitors
        .iter()
        .map(|x| (x.name.clone(), x.clone()))
        .collect()
}

/// A service with its site and monitors by name.
fn services(m: &Model) -> Vec<(String, impl PartialEq + use<>)> {
    m.services
        .iter()
        .map(|s| {
            let monitors: Vec<String> = s
                .monitors
                .iter()
                .filter_map(|&id| m.monitors.get(id).map(|x| x.name.clone()))
                .collect();
            let refs = (site_name(m, s.site), monitors);
            let mut bare = s.clone();
            bare.site = SiteId::new(0);
            bare.monitors.clear();
            (s.name.clone(), (bare, refs))
        })
        .collect()
}

/// A vserver with its bound services (and weights) and backup vserver by
/// name.
fn vservers(m: &Model) -> Vec<(String, impl PartialEq + use<>)> {
    m.vservers
        .iter()
        .map(|v| {
            let bindings: Vec<(String, u32)> = v
                .bindings
                .iter()
                .filter_map(|b| {
                    m.services
                        .get(b.service)
                        .map(|s| (s.name.to_ascii_lowercase(), b.weight))
                })
                .collect();
            let backup = v
                .backup_vserver
                .and_then(|b| m.vservers.get(b).map(|x| x.name.to_ascii_lowercase()));
            let mut bare = v.clone();
            bare.bindings.clear();
            bare.backup_vserver = None;
            (v.name.clone(), (bare, bindings, backup))
        })
        .collect()
}

/// A domain with the vserver it is bound to by name.
fn domains(m: &Model) -> Vec<(String, impl PartialEq + use<>)> {
    m.domains
        .iter()
        .map(|d| {
            let vserver = m
                .vservers
                .get(d.vserver)
                .map(|v| v.name.to_ascii_lowercase());
            let mut bare = d.clone();
            bare.vserver = VServerId::new(0);
            (d.name.clone(), (bare, vserver))
        })
        .collect()
}

/// A datacenter-mode record with its groups' sites and services, and
/// its addresses' health services, by name.
fn dc_records(m: &Model) -> Vec<(String, impl PartialEq + use<>)> {
    use sextant_core::dc::DcHealth;
    let service = |id: sextant_core::ServiceId| {
        m.services
            .get(id)
            .map(|s| s.name.to_ascii_lowercase())
            .unwrap_or_default()
    };
    m.dc_records
        .iter()
        .map(|r| {
            let groups: Vec<(String, Option<String>)> = r
                .groups
                .iter()
                .map(|g| (site_name(m, g.site), g.service.map(service)))
                .collect();
            let health: Vec<Option<String>> = r
                .addresses
                .iter()
                .map(|a| match a.health {
                    DcHealth::Service(s) | DcHealth::ServiceAndSite(s) => Some(service(s)),
                    DcHealth::Always | DcHealth::SiteReachable => None,
                })
                .collect();
            let mut bare = r.clone();
            for g in &mut bare.groups {
                g.site = SiteId::new(0);
                g.service = None;
            }
            for a in &mut bare.addresses {
                a.health = match a.health {
                    DcHealth::Service(_) => DcHealth::Service(sextant_core::ServiceId::new(0)),
                    DcHealth::ServiceAndSite(_) => {
                        DcHealth::ServiceAndSite(sextant_core::ServiceId::new(0))
                    }
                    other => other,
                };
            }
            (r.name.clone(), (bare, groups, health))
        })
        .collect()
}

fn zones(m: &Model) -> Vec<(String, impl PartialEq + use<>)> {
    m.zones
        .iter()
        .map(|z| (z.apex.clone(), z.clone()))
        .collect()
}

/// Static records grouped by owner name.
fn records(m: &Model) -> Vec<(String, impl PartialEq + use<>)> {
    let mut by_owner: BTreeMap<String, Vec<sextant_core::records::StaticRecord>> = BTreeMap::new();
    for r in &m.records {
        by_owner.entry(r.name.clone()).or_default().push(r.clone());
    }
    by_owner.into_iter().collect()
}

fn actions(m: &Model) -> Vec<(String, impl PartialEq + use<>)> {
    m.dns_actions
        .iter()
        .map(|a| (a.name.clone(), a.clone()))
        .collect()
}

/// A DNS policy with its action by name and its global binding (priority
/// and goto), if bound.
fn policies(m: &Model) -> Vec<(String, impl PartialEq + use<>)> {
    m.dns_policies
        .iter_enumerated()
        .map(|(id, p)| {
            let action = m.dns_actions.get(p.action).map(|a| a.name.clone());
            let binding = m
                .dns_global_bindings
                .iter()
                .find(|b| b.policy == id)
                .map(|b| (b.priority, b.goto));
            let mut bare = p.clone();
            bare.action = DnsActionId::new(0);
            (p.name.clone(), (bare, action, binding))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "add service adns1 127.0.0.1 ADNS 53\n\
        add gslb site site1 127.0.0.1 -siteType LOCAL\n\
        add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
        add dns nsRec example.com ns1.example.com\n";

    const WEB: &str = "add gslb service web1 192.0.2.1 HTTP 80 -siteName site1\n\
        add gslb vserver vs1 HTTP -lbMethod ROUNDROBIN\n\
        bind gslb vserver vs1 -serviceName web1\n\
        bind gslb vserver vs1 -domainName www.example.com -TTL 5\n";

    fn model(text: &str) -> Model {
        crate::parse_appliance(text, "test.conf").unwrap_or_else(|e| panic!("{e}"))
    }

    fn diff_of(old: &str, new: &str) -> ConfigDiff {
        diff(&model(old), &model(new))
    }

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_same_configuration_changes_nothing() {
        let text = format!("{HEAD}{WEB}");
        assert!(diff_of(&text, &text).is_empty());
    }

    #[test]
    fn added_removed_and_changed_objects_by_name() {
        let old = format!("{HEAD}{WEB}");
        let new = format!(
            "{HEAD}{}add gslb service web2 192.0.2.2 HTTP 80 -siteName site1\n\
             bind gslb vserver vs1 -serviceName web2\n\
             add gslb vserver vs2 HTTP\n\
             bind gslb vserver vs2 -domainName api.example.com\n",
            WEB.replace("-TTL 5", "-TTL 30")
        );
        let d = diff_of(&old, &new);
        assert_eq!(
            d.added,
            list(&["service web2", "vserver vs2", "domain api.example.com"])
        );
        assert_eq!(d.changed, list(&["vserver vs1", "domain www.example.com"]));
        assert!(d.removed.is_empty(), "{d:?}");

        let back = diff_of(&new, &old);
        assert_eq!(
            back.removed,
            list(&["service web2", "vserver vs2", "domain api.example.com"])
        );
        assert_eq!(back.changed, d.changed);
    }

    #[test]
    fn an_object_added_before_others_does_not_change_them() {
        // web0 comes first: every later service's index moves by one.
        let old = format!("{HEAD}{WEB}");
        let new = format!("{HEAD}add gslb service web0 192.0.2.9 HTTP 80 -siteName site1\n{WEB}");
        let d = diff_of(&old, &new);
        assert_eq!(d.added, list(&["service web0"]));
        assert!(d.changed.is_empty() && d.removed.is_empty(), "{d:?}");
    }

    #[test]
    fn a_binding_moved_to_another_vserver_changes_the_domain() {
        let old = format!("{HEAD}{WEB}add gslb vserver vs2 HTTP\n");
        let new = old.replace(
            "bind gslb vserver vs1 -domainName www.example.com",
            "bind gslb vserver vs2 -domainName www.example.com",
        );
        let d = diff_of(&old, &new);
        assert_eq!(d.changed, list(&["domain www.example.com"]));
    }

    #[test]
    fn zones_records_and_settings() {
        let old = format!("{HEAD}{WEB}");
        let new = format!(
            "{HEAD}{WEB}add dns addRec mail.example.com 192.0.2.25\n\
             set gslb parameter -ldnsEntryTimeout 300\n"
        );
        let d = diff_of(&old, &new);
        assert_eq!(d.added, list(&["record mail.example.com"]));
        assert_eq!(d.changed, list(&["gslb parameters"]));
    }

    #[test]
    fn datacenter_records_compare_their_sites_and_services_by_name() {
        let dc = "add gslb site fra 10.0.0.1 -siteType LOCAL\n\
            add gslb site ams 10.0.0.2\n\
            add gslb service web-fra 192.0.2.10 HTTP 80 -siteName fra -vServiceName web\n\
            add gslb service web-ams 192.0.2.20 HTTP 80 -siteName ams -vServiceName web\n\
            add gslb dcRecord cpu.example.com -dcSelection DC_BASED -criterion CPU -totalDCs 2\n\
            bind gslb dcRecord cpu.example.com -siteName ams -serviceName web-ams -weight 10\n\
            bind gslb dcRecord cpu.example.com -siteName fra -serviceName web-fra -hc SERVICE_AND_SITE\n";
        // A site and a service before the others move every index.
        let moved = dc
            .replace(
                "add gslb site ams",
                "add gslb site nyc 10.0.0.3\nadd gslb site ams",
            )
            .replace(
                "add gslb service web-fra",
                "add gslb service app-nyc 192.0.2.30 HTTP 80 -siteName nyc\nadd gslb service web-fra",
            );
        let d = diff_of(dc, &moved);
        assert_eq!(d.added, list(&["site nyc", "service app-nyc"]));
        assert!(d.changed.is_empty() && d.removed.is_empty(), "{d:?}");

        let reweighted = dc.replace("-weight 10", "-weight 20");
        assert_eq!(
            diff_of(dc, &reweighted).changed,
            list(&["dc_record cpu.example.com"])
        );
    }
}
