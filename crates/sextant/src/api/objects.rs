//! The configured GSLB objects as the appliance's `show gslb ...` lists
//! them: vservers with their bindings and domains, and domains. Read from
//! the published snapshot, so states are the ones DNS answers with.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use sextant_api::{Domain, VServer, VServerBinding};
use sextant_core::Snapshot;

use crate::serve::Daemon;

fn state(up: bool) -> sextant_api::State {
    if up {
        sextant_api::State::Up
    } else {
        sextant_api::State::Down
    }
}

/// Every GSLB vserver with its bindings' states and its domains.
#[utoipa::path(get, path = "/v1/vservers", tag = "read",
    responses((status = 200, description = "every GSLB vserver", body = Vec<VServer>)))]
pub(super) async fn vservers(State(d): State<Arc<Daemon>>) -> Json<Vec<VServer>> {
    Json(vserver_views(&d.dns.snapshot.load()))
}

fn vserver_views(snap: &Snapshot) -> Vec<VServer> {
    let model = snap.model();
    let mut domains: Vec<Vec<String>> = vec![Vec::new(); model.vservers.len()];
    for d in model.domains.iter() {
        if let Some(list) = domains.get_mut(d.vserver.index()) {
            list.push(d.name.clone());
        }
    }
    model
        .vservers
        .iter_enumerated()
        .map(|(id, v)| {
            let services: Vec<VServerBinding> = v
                .bindings
                .iter()
                .map(|b| {
                    let s = model.service(b.service);
                    VServerBinding {
                        service: s.name.clone(),
                        site: model.site(s.site).name.clone(),
                        ip: s.ip.to_string(),
                        port: s.port,
                        weight: b.weight,
                        state: state(snap.is_up(b.service)),
                    }
                })
                .collect();
            VServer {
                name: v.name.clone(),
                service_type: v.protocol.as_str().to_string(),
                state: state(services.iter().any(|b| b.state == sextant_api::State::Up)),
                lb_method: v.method.as_str().to_string(),
                backup_lb_method: v.backup_method.map(|m| m.as_str().to_string()),
                backup_vserver: v.backup_vserver.map(|b| model.vservers[b].name.clone()),
                persistence_timeout_seconds: v.persistence.map(|p| p.timeout.as_secs()),
                empty_down_response: v.empty_down_response,
                multi_ip_response: v.multi_ip_response,
                ecs: v.ecs,
                services,
                domains: domains
                    .get_mut(id.index())
                    .map(std::mem::take)
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// Every GSLB domain and the vserver that answers it.
#[utoipa::path(get, path = "/v1/domains", tag = "read",
    responses((status = 200, description = "every GSLB domain", body = Vec<Domain>)))]
pub(super) async fn domains(State(d): State<Arc<Daemon>>) -> Json<Vec<Domain>> {
    let snap = d.dns.snapshot.load();
    let model = snap.model();
    Json(
        model
            .domains
            .iter()
            .map(|dom| Domain {
                name: dom.name.clone(),
                vserver: model.vservers[dom.vserver].name.clone(),
                ttl: dom.ttl,
                backup_ip: dom.backup_ip.map(|ip| ip.to_string()),
            })
            .collect(),
    )
}
