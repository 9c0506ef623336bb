//! Client Based selection (seed 002): each datacenter's figure towards the
//! querying client, read per query from the LDNS table (the probes of the
//! client's resolver by each site, the same prober the RTT method uses).

use crate::choose::Client;
use crate::dc::{ClientCriterion, DcRecord, DcSelection};
use crate::snapshot::Snapshot;

/// Group `g`'s figure for the record's Client Based criterion, if its
/// site has measured the client's LDNS.
pub(crate) fn figure(
    snap: &Snapshot,
    rec: &DcRecord,
    g: usize,
    client: &mut Client,
) -> Option<f64> {
    let DcSelection::ClientBased(criterion) = rec.selection else {
        return None;
    };
    let site = rec.groups.get(g)?.site;
    let row = client.rtt_row(snap)?;
    let path = snap.rtt().cell(row, site)?.path?;
    Some(match criterion {
        ClientCriterion::Hops => f64::from(path.hops),
        ClientCriterion::Ttl => f64::from(path.ttl),
        ClientCriterion::PacketLoss => f64::from(path.loss_permille) / 10.0,
        ClientCriterion::Mos => f64::from(path.mos_centi) / 100.0,
    })
}
