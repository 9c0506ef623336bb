//! The parent sites of a multi-site end-to-end test: names, site IPs and
//! one service address each; their configuration files begin alike and
//! they run as separate `sextant` processes.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use crate::net::{DNS_PORT, Net};
use crate::netns::Netns;
use crate::process::{Bin, SiteServer};
use crate::scratch::Scratch;
use crate::wait::{EVENTUALLY, eventually_ok};

/// The sites in configuration order and the service of each (`web-NAME`
/// at `svc[k]`).
pub struct Sites {
    pub names: Vec<&'static str>,
    pub ips: Vec<Ipv4Addr>,
    pub svc: Vec<Ipv4Addr>,
}

impl Sites {
    pub fn new(names: &[&'static str], ips: Vec<Ipv4Addr>, svc: Vec<Ipv4Addr>) -> Sites {
        assert_eq!(names.len(), ips.len());
        assert_eq!(names.len(), svc.len());
        Sites {
            names: names.to_vec(),
            ips,
            svc,
        }
    }

    /// Host-namespace sites at `net`'s site addresses with services at its
    /// service addresses.
    pub fn host(net: &Net, names: &[&'static str]) -> Sites {
        let n = names.len() as u8;
        Sites::new(
            names,
            (0..n).map(|k| net.site_ip(k)).collect(),
            (0..n).map(|k| net.svc_ip(k)).collect(),
        )
    }

    pub fn index(&self, site: &str) -> usize {
        self.names
            .iter()
            .position(|n| *n == site)
            .unwrap_or_else(|| panic!("no site {site}"))
    }

    pub fn ip(&self, site: &str) -> IpAddr {
        IpAddr::V4(self.ips[self.index(site)])
    }

    pub fn svc_of(&self, site: &str) -> Ipv4Addr {
        self.svc[self.index(site)]
    }

    /// The site whose service has address `ip`, for messages.
    pub fn site_of(&self, ip: Ipv4Addr) -> &'static str {
        self.svc
            .iter()
            .position(|s| *s == ip)
            .map_or("?", |k| self.names[k])
    }

    /// The first lines of site `me`'s file, as an operator writes them: its
    /// ADNS service, every site in the same order (itself `-siteType
    /// LOCAL`, each with `site_opts`), the `example.com` zone.
    pub fn preamble(&self, me: usize, what: &str, site_opts: &str) -> String {
        let mut c = format!(
            "# sextant {what} end-to-end test, site {}\n\
             add service adns1 {} ADNS {DNS_PORT}\n",
            self.names[me], self.ips[me]
        );
        for (k, (name, ip)) in self.names.iter().zip(&self.ips).enumerate() {
            let local = if k == me { " -siteType LOCAL" } else { "" };
            c += &format!("add gslb site {name} {ip}{local}{site_opts}\n");
        }
        c += "add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
              add dns nsRec example.com ns1.example.com\n";
        c
    }

    /// Starts every site with `conf(k)` as its file.
    pub fn start(
        &self,
        bin: Bin,
        scratch: &Scratch,
        conf: impl Fn(usize) -> String,
    ) -> Vec<SiteServer> {
        self.start_in(bin, scratch, None, conf)
    }

    /// Like [`Sites::start`], inside `netns` when given.
    pub fn start_in(
        &self,
        bin: Bin,
        scratch: &Scratch,
        netns: Option<Arc<Netns>>,
        conf: impl Fn(usize) -> String,
    ) -> Vec<SiteServer> {
        (0..self.names.len())
            .map(|k| {
                SiteServer::start(
                    bin,
                    &scratch.0,
                    self.names[k],
                    self.ips[k],
                    &conf(k),
                    netns.clone(),
                )
            })
            .collect()
    }
}

/// Every site sees metric exchange UP with every other.
pub fn wait_mesh_up(sites: &[SiteServer]) {
    for s in sites {
        for other in sites.iter().filter(|o| o.name != s.name) {
            eventually_ok(
                EVENTUALLY,
                &format!("{} sees metric exchange with {} UP", s.name, other.name),
                || s.expect_mep(&other.name, "UP").map(|_| ()),
            );
        }
    }
}
