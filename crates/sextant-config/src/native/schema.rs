//! The native schema as serde types: the TOML keys, their types and which
//! are required. Values that need checks beyond their TOML type are kept as
//! [`Spanned`] strings or integers, so the reader can report them at their
//! line; `native::read` turns these into a draft.

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ServerT {
    #[serde(default)]
    pub(super) dns_listen: Vec<Spanned<String>>,
    pub(super) api_listen: Option<Spanned<String>>,
    pub(super) local_site: Option<Spanned<String>>,
}

/// `[api]`: the REST API's settings.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApiT {
    /// The API token file (`--api-token-file` overrides it).
    pub(super) token_file: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GslbT {
    pub(super) mep_keepalive_timeout: Option<Spanned<String>>,
    pub(super) rtt_tolerance: Option<Spanned<String>>,
    pub(super) ldns_v4_mask: Option<Spanned<i64>>,
    pub(super) ldns_v6_mask: Option<Spanned<i64>>,
    pub(super) ldns_entry_timeout: Option<Spanned<String>>,
    pub(super) ldns_probe_order: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) drop_ldns_requests: Option<Spanned<bool>>,
    pub(super) automatic_config_sync: Option<Spanned<bool>>,
    /// `-incarnation`: the configuration's sync counter.
    pub(super) incarnation: Option<Spanned<i64>>,
    pub(super) mep_port: Option<Spanned<i64>>,
    pub(super) mep_secure_port: Option<Spanned<i64>>,
    pub(super) ldns_probe_interval: Option<Spanned<String>>,
    pub(super) ldns_probe_timeout: Option<Spanned<String>>,
    /// Datacenter mode: how often figures are read and records re-ranked.
    pub(super) dc_access_period: Option<Spanned<String>>,
    /// `-GSLBSvcStateDelayTime` and `-SvcStateLearningTime`.
    pub(super) svc_state_delay_time: Option<Spanned<String>>,
    pub(super) svc_state_learning_time: Option<Spanned<String>>,
    /// The built-in LDNS monitors (`[gslb.ldns_dns]` ...).
    pub(super) ldns_ping: Option<Spanned<LdnsMonitorT>>,
    pub(super) ldns_dns: Option<Spanned<LdnsMonitorT>>,
    pub(super) ldns_tcp: Option<Spanned<LdnsMonitorT>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LdnsMonitorT {
    pub(super) interval: Option<Spanned<String>>,
    pub(super) response_timeout: Option<Spanned<String>>,
    pub(super) dest_port: Option<Spanned<i64>>,
    pub(super) retries: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SiteT {
    pub(super) name: Spanned<String>,
    pub(super) ip: Spanned<String>,
    pub(super) public_ip: Option<Spanned<String>>,
    pub(super) parent: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) backup_parents: Vec<Spanned<String>>,
    pub(super) metric_exchange: Option<bool>,
    pub(super) nw_metric_exchange: Option<Spanned<bool>>,
    pub(super) session_exchange: Option<Spanned<bool>>,
    pub(super) trigger_monitor: Option<Spanned<String>>,
    /// `-sitePassword`: the secret of the metric exchange links this site
    /// accepts.
    pub(super) site_password: Option<Spanned<String>>,
    /// `-clip`, `-publicCLIP`, `-naptrReplacementSuffix`: checked, no effect.
    pub(super) clip: Option<Spanned<String>>,
    pub(super) public_clip: Option<Spanned<String>>,
    pub(super) naptr_replacement_suffix: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MonitorT {
    pub(super) name: Spanned<String>,
    #[serde(rename = "type")]
    pub(super) kind: Spanned<String>,
    pub(super) interval: Option<Spanned<String>>,
    pub(super) response_timeout: Option<Spanned<String>>,
    pub(super) retries: Option<Spanned<i64>>,
    pub(super) success_retries: Option<Spanned<i64>>,
    pub(super) dest_port: Option<Spanned<i64>>,
    pub(super) dest_ip: Option<Spanned<String>>,
    pub(super) down_time: Option<Spanned<String>>,
    pub(super) reverse: Option<Spanned<bool>>,
    // http / https
    pub(super) request: Option<Spanned<String>>,
    pub(super) custom_headers: Option<Spanned<String>>,
    pub(super) status_codes: Option<Spanned<Vec<Spanned<IntOrText>>>>,
    pub(super) body_contains: Option<Spanned<String>>,
    // dns
    pub(super) query: Option<Spanned<String>>,
    pub(super) query_type: Option<Spanned<String>>,
    pub(super) expect_addresses: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) expect_rcodes: Option<Spanned<Vec<Spanned<IntOrText>>>>,
    // udp
    pub(super) send: Option<Spanned<String>>,
    pub(super) receive: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ServiceT {
    pub(super) name: Spanned<String>,
    pub(super) ip: Spanned<String>,
    pub(super) port: Spanned<i64>,
    pub(super) protocol: Spanned<String>,
    pub(super) site: Spanned<String>,
    pub(super) public_ip: Option<Spanned<String>>,
    pub(super) public_port: Option<Spanned<i64>>,
    pub(super) max_clients: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) monitors: Vec<Spanned<String>>,
    pub(super) load: Option<Spanned<LoadT>>,
    /// What a Service Based `[[dc_record]]` measures (`-vServiceName`).
    pub(super) vservice_name: Option<Spanned<String>>,
    /// `false`: nothing is to check the service (`-healthMonitor NO`).
    pub(super) health_monitor: Option<Spanned<bool>>,
    /// `true`: it starts disabled for maintenance (`-state DISABLED`).
    pub(super) disabled: Option<Spanned<bool>>,
}

/// `load = { source = "prometheus", url = ..., ... }` of a `[[service]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LoadT {
    pub(super) source: Spanned<String>,
    pub(super) url: Option<Spanned<String>>,
    pub(super) interval: Option<Spanned<String>>,
    pub(super) connections: Option<Spanned<String>>,
    pub(super) response_time: Option<Spanned<String>>,
    pub(super) bandwidth: Option<Spanned<String>>,
    pub(super) packets: Option<Spanned<String>>,
    pub(super) custom_load: Option<Spanned<String>>,
    pub(super) cpu: Option<Spanned<String>>,
    pub(super) memory: Option<Spanned<String>>,
    pub(super) requests: Option<Spanned<String>>,
    pub(super) new_sessions: Option<Spanned<String>>,
    pub(super) healthy_backends: Option<Spanned<String>>,
}

/// `[[rpc_node]]`: metric exchange credentials (`set ns rpcNode`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RpcNodeT {
    pub(super) ip: Spanned<String>,
    pub(super) password: Option<Spanned<String>>,
    pub(super) secure: Option<bool>,
    pub(super) source_ip: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct VServerT {
    pub(super) name: Spanned<String>,
    pub(super) protocol: Spanned<String>,
    pub(super) lb_method: Option<Spanned<String>>,
    pub(super) backup_lb_method: Option<Spanned<String>>,
    pub(super) persistence: Option<Spanned<PersistenceT>>,
    pub(super) empty_down_response: Option<bool>,
    pub(super) multi_ip_response: Option<bool>,
    pub(super) ecs: Option<bool>,
    pub(super) backup_vserver: Option<Spanned<String>>,
    pub(super) hash_v4_mask: Option<Spanned<i64>>,
    pub(super) hash_v6_mask: Option<Spanned<i64>>,
    /// RTT method: balance among sites within this of the best (`-tolerance`).
    pub(super) rtt_tolerance: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) services: Vec<Spanned<BindingT>>,
    #[serde(default)]
    pub(super) domains: Vec<Spanned<DomainT>>,
    /// `true`: it starts disabled for maintenance (`-state DISABLED`).
    pub(super) disabled: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PersistenceT {
    #[serde(rename = "type")]
    pub(super) kind: Spanned<String>,
    pub(super) timeout: Option<Spanned<String>>,
    pub(super) v4_mask: Option<Spanned<i64>>,
    pub(super) v6_mask: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BindingT {
    pub(super) name: Spanned<String>,
    pub(super) weight: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DomainT {
    pub(super) name: Spanned<String>,
    pub(super) ttl: Option<Spanned<i64>>,
    pub(super) backup_ip: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ZoneT {
    pub(super) apex: Spanned<String>,
    #[serde(default)]
    pub(super) ns: Vec<Spanned<String>>,
    pub(super) ns_ttl: Option<Spanned<i64>>,
    pub(super) soa: Option<Spanned<SoaT>>,
    #[serde(default)]
    pub(super) dnssec_key: Vec<Spanned<DnssecKeyT>>,
}

/// `[[zone.dnssec_key]]`: a key that signs the zone (docs/dnssec.md).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DnssecKeyT {
    /// The key files' path without `.key` / `.private`.
    pub(super) file: Spanned<String>,
    pub(super) ttl: Option<Spanned<i64>>,
    pub(super) publish: Option<Spanned<String>>,
    pub(super) activate: Option<Spanned<String>>,
    pub(super) inactive: Option<Spanned<String>>,
    pub(super) delete: Option<Spanned<String>>,
    pub(super) sync_publish: Option<Spanned<String>>,
    pub(super) sync_delete: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SoaT {
    pub(super) origin_server: Spanned<String>,
    pub(super) contact: Spanned<String>,
    pub(super) serial: Option<Spanned<i64>>,
    pub(super) refresh: Option<Spanned<i64>>,
    pub(super) retry: Option<Spanned<i64>>,
    pub(super) expire: Option<Spanned<i64>>,
    pub(super) minimum: Option<Spanned<i64>>,
    pub(super) ttl: Option<Spanned<i64>>,
}

/// A value written either as a number or as a string: status codes (`200`
/// or `"300-399"`) and DNS response codes (`3` or `"NXDOMAIN"`).
#[derive(Debug, Clone)]
pub(super) enum IntOrText {
    Int(i64),
    Text(String),
}

impl IntOrText {
    pub(super) fn as_text(&self) -> String {
        match self {
            IntOrText::Int(n) => n.to_string(),
            IntOrText::Text(t) => t.clone(),
        }
    }
}

impl<'de> Deserialize<'de> for IntOrText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = IntOrText;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<IntOrText, E> {
                Ok(IntOrText::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<IntOrText, E> {
                i64::try_from(v)
                    .map(IntOrText::Int)
                    .map_err(|_| E::custom("number too large"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IntOrText, E> {
                Ok(IntOrText::Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}
