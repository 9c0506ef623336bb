//! Which site this node is, and the rules that only hold once that is
//! known: the local site can come from the file (`-siteType LOCAL`) or from
//! the command line (`--local-site`), so these checks run after parsing, on
//! the model, and every binary path (serve, explain, demo) shares them.

use sextant_core::{Model, SiteId};

/// The local site cannot be settled, or the configuration does not suit it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocalSiteError {
    #[error("--local-site {name}: no such site in the configuration (sites: {known})")]
    NoSuchSite { name: String, known: String },
    #[error(
        "no local site: mark this node's site with `-siteType LOCAL` in the file, or pass --local-site NAME"
    )]
    Unknown,
    #[error(
        "{site} is a child site, and a child's configuration holds only itself, its parent and its own services:\n  {}\n(remove those lines, or run this node as a parent site)",
        problems.join("\n  ")
    )]
    ChildHoldsMore { site: String, problems: Vec<String> },
}

/// Makes the site `name` local (the command line's `--local-site`), or
/// checks that the file names one (a file with a single site needs none),
/// then checks a child site's configuration. A child that configures
/// vservers gets a warning in [`Model::warnings`]: only parents answer DNS.
pub fn settle_local_site(model: &mut Model, name: Option<&str>) -> Result<(), LocalSiteError> {
    match name {
        Some(name) => {
            let Some(id) = model.site_by_name(name) else {
                let known: Vec<_> = model.sites.iter().map(|s| s.name.as_str()).collect();
                return Err(LocalSiteError::NoSuchSite {
                    name: name.to_string(),
                    known: if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    },
                });
            };
            model.set_local_site(id);
        }
        None if model.local_site.is_none() && model.sites.len() == 1 => {
            model.set_local_site(SiteId::new(0))
        }
        None if model.local_site.is_none() && !model.sites.is_empty() => {
            return Err(LocalSiteError::Unknown);
        }
        None => {}
    }
    check_child(model)
}

/// A child site's configuration holds only itself, its parent and its own
/// services (seed 001: "The configuration of a child site includes the child
/// site and its parent site, but no other parent or child sites"; "a child
/// site can have only local services").
fn check_child(model: &mut Model) -> Result<(), LocalSiteError> {
    let Some(local) = model.local_site else {
        return Ok(());
    };
    let Some(parent) = model.site(local).parent else {
        return Ok(());
    };
    let me = model.site(local).name.clone();
    let mut problems = Vec::new();
    for (id, site) in model.sites.iter_enumerated() {
        if id != local && id != parent {
            problems.push(format!(
                "site {} is neither this child site nor its parent {}",
                site.name,
                model.site(parent).name
            ));
        }
    }
    for service in &model.services {
        if service.site != local {
            problems.push(format!(
                "service {} belongs to site {}, not to this child site",
                service.name,
                model.site(service.site).name
            ));
        }
    }
    if !problems.is_empty() {
        return Err(LocalSiteError::ChildHoldsMore { site: me, problems });
    }
    if !model.vservers.is_empty() {
        model.warnings.push(format!(
            "{me} is a child site: its {} GSLB vserver(s) and their domains are not used (only parent sites answer DNS)",
            model.vservers.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(text: &str, local: &str) -> Result<Model, String> {
        let mut m = crate::parse_appliance(text, "t.conf").map_err(|e| e.to_string())?;
        settle_local_site(&mut m, Some(local)).map_err(|e| e.to_string())?;
        Ok(m)
    }

    const SITES: &str = "add gslb site p1 127.0.0.1\n\
                         add gslb site p2 127.0.0.2\n\
                         add gslb site c1 127.0.0.11 -parentSite p1\n\
                         add gslb service s1 127.0.1.1 HTTP 80 -siteName c1\n";

    #[test]
    fn a_child_holds_only_itself_its_parent_and_its_services() {
        let err = model(SITES, "c1").unwrap_err();
        assert!(
            err.contains("site p2 is neither this child site nor its parent p1"),
            "{err}"
        );
        let ok = "add gslb site p1 127.0.0.1\nadd gslb site c1 127.0.0.11 -parentSite p1\n\
                  add gslb service s1 127.0.1.1 HTTP 80 -siteName c1\n";
        assert!(model(ok, "c1").is_ok());
        let foreign = format!("{ok}add gslb service s2 127.0.1.2 HTTP 80 -siteName p1\n");
        let err = model(&foreign, "c1").unwrap_err();
        assert!(err.contains("service s2 belongs to site p1"), "{err}");
        // The same file is fine for the parent.
        assert!(model(SITES, "p1").is_ok());
    }

    #[test]
    fn the_local_site_comes_from_the_command_line_or_the_file() {
        let err = model(SITES, "p9").unwrap_err();
        assert!(err.contains("--local-site p9: no such site"), "{err}");
        assert!(err.contains("p1, p2, c1"), "{err}");
        let mut m = crate::parse_appliance(SITES, "t.conf").expect("parses");
        let err = settle_local_site(&mut m, None).unwrap_err();
        assert_eq!(err, LocalSiteError::Unknown);
        let mut one =
            crate::parse_appliance("add gslb site p1 127.0.0.1\n", "t.conf").expect("parses");
        settle_local_site(&mut one, None).expect("one site is local");
        assert_eq!(one.local_site, Some(SiteId::new(0)));
    }

    #[test]
    fn a_child_with_vservers_is_warned_that_they_are_not_used() {
        let text = "add gslb site p1 127.0.0.1\nadd gslb site c1 127.0.0.11 -parentSite p1\n\
                    add gslb service s1 127.0.1.1 HTTP 80 -siteName c1\n\
                    add gslb vserver vs HTTP\nbind gslb vserver vs -serviceName s1\n";
        let m = model(text, "c1").expect("valid");
        assert!(
            m.warnings
                .iter()
                .any(|w| w.contains("c1 is a child site: its 1 GSLB vserver(s)")),
            "{:?}",
            m.warnings
        );
    }
}
