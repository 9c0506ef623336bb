//! `GET /v1/stats`: the per-object answer counters as JSON, for the CLI's
//! `stat gslb vserver|service` (the same figures `/metrics` exports).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use sextant_api::{DomainStats, ServiceStats, Stats, VServerStats};

use crate::serve::Daemon;

/// The answer counters since the start, carried over reloads by name:
/// each vserver's hits and answers per service, each service's and each
/// domain's answers (`stat gslb ...`).
#[utoipa::path(get, path = "/v1/stats", tag = "read",
    responses((status = 200, description = "answer counters", body = Stats)))]
pub(super) async fn stats(State(d): State<Arc<Daemon>>) -> Json<Stats> {
    let totals = d.dns.answers.totals();
    let snap = d.dns.snapshot.load();
    let model = snap.model();
    let count = |map: &std::collections::HashMap<String, u64>, name: &str| {
        map.get(name).copied().unwrap_or(0)
    };
    Json(Stats {
        vservers: model
            .vservers
            .iter()
            .map(|v| VServerStats {
                name: v.name.clone(),
                hits: count(&totals.vserver_hits, &v.name),
                answers: v
                    .bindings
                    .iter()
                    .map(|b| {
                        let name = &model.service(b.service).name;
                        (name.clone(), count(&totals.services, name))
                    })
                    .collect(),
            })
            .collect(),
        services: model
            .services
            .iter()
            .map(|s| ServiceStats {
                name: s.name.clone(),
                site: model.site(s.site).name.clone(),
                answers: count(&totals.services, &s.name),
            })
            .collect(),
        domains: model
            .domains
            .iter()
            .map(|dm| DomainStats {
                name: dm.name.clone(),
                answers: count(&totals.domains, &dm.name),
                services: totals
                    .domain_services
                    .get(&dm.name)
                    .map(|m| m.iter().map(|(k, v)| (k.clone(), *v)).collect())
                    .unwrap_or_default(),
            })
            .collect(),
    })
}
