//! Static records of the zones Sextant is authoritative for (`add dns
//! addRec`, `[[record]]`, ...), and the name table that answers them.
//!
//! The model keeps the records sorted by owner name (then type), so one
//! name's records are one slice. [`RecordTable`] is built once per
//! configuration (inside the snapshot's compiled tables): every owner name,
//! every empty non-terminal (a name with records or GSLB domains below it)
//! and every delegation point is one entry of an FNV map. The GSLB hot path
//! never looks at it: `decide` finds GSLB domains first and consults this
//! table only for names that are not GSLB domains, or for query types a
//! GSLB domain does not answer.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::id::IdVec;
use crate::model::{Model, ZoneId};
use crate::snapshot::FnvMap;

/// RR type codes used by static records (RFC 1035, 2782, 3596).
pub const TYPE_A: u16 = 1;
pub const TYPE_NS: u16 = 2;
pub const TYPE_CNAME: u16 = 5;
pub const TYPE_SOA: u16 = 6;
pub const TYPE_MX: u16 = 15;
pub const TYPE_TXT: u16 = 16;
pub const TYPE_AAAA: u16 = 28;
pub const TYPE_SRV: u16 = 33;
/// DS (RFC 4034): a delegation signer, owned by the parent side of a cut.
pub const TYPE_DS: u16 = 43;
pub const TYPE_ANY: u16 = 255;

/// How many CNAMEs one answer follows before it stops (a loop, or a chain
/// longer than any sane zone has).
pub const MAX_CNAME_CHAIN: usize = 8;

/// One static resource record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticRecord {
    /// The owner: lower case, no trailing dot.
    pub name: String,
    pub ttl: u32,
    pub data: RecordData,
}

/// The data of a static record. Names are lower case without trailing dot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordData {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Cname(String),
    Mx {
        preference: u16,
        exchange: String,
    },
    /// One or more character-strings, each at most 255 bytes.
    Txt(Vec<String>),
    Srv {
        priority: u16,
        weight: u16,
        port: u16,
        target: String,
    },
    /// A name server of a delegated child zone (the owner is the child's
    /// apex, below one of our zones). The apex NS records of our own zones
    /// are in [`crate::Zone::ns`].
    Ns(String),
    /// A delegation signer (RFC 4034 §5) of a child zone: the owner is a
    /// delegation point (an NS delegation or a zone of ours below
    /// another), and the record is the parent's, signed by the parent.
    Ds {
        key_tag: u16,
        algorithm: u8,
        digest_type: u8,
        digest: Vec<u8>,
    },
}

impl RecordData {
    /// The RR type code.
    pub fn rtype(&self) -> u16 {
        match self {
            RecordData::A(_) => TYPE_A,
            RecordData::Aaaa(_) => TYPE_AAAA,
            RecordData::Cname(_) => TYPE_CNAME,
            RecordData::Mx { .. } => TYPE_MX,
            RecordData::Txt(_) => TYPE_TXT,
            RecordData::Srv { .. } => TYPE_SRV,
            RecordData::Ns(_) => TYPE_NS,
            RecordData::Ds { .. } => TYPE_DS,
        }
    }

    /// The type's mnemonic, for messages.
    pub fn type_name(&self) -> &'static str {
        type_name(self.rtype())
    }

    /// The name whose addresses belong in the additional section (NS, MX
    /// and SRV targets), if any.
    pub fn additional_target(&self) -> Option<&str> {
        match self {
            RecordData::Ns(t) | RecordData::Mx { exchange: t, .. } => Some(t),
            RecordData::Srv { target, .. } => Some(target),
            _ => None,
        }
    }
}

/// The mnemonic of an RR type code.
pub fn type_name(rtype: u16) -> &'static str {
    match rtype {
        TYPE_A => "A",
        TYPE_NS => "NS",
        TYPE_CNAME => "CNAME",
        TYPE_SOA => "SOA",
        TYPE_MX => "MX",
        TYPE_TXT => "TXT",
        TYPE_AAAA => "AAAA",
        TYPE_SRV => "SRV",
        TYPE_DS => "DS",
        TYPE_ANY => "ANY",
        _ => "other",
    }
}

pub use crate::id::NodeId;

/// One name of a zone we serve that is not (only) a GSLB domain.
#[derive(Debug, Clone)]
pub struct NameNode {
    /// The zone the name is in.
    pub zone: ZoneId,
    /// Its records: `model.records[start..end]` (empty for an empty
    /// non-terminal or a GSLB-only name).
    pub start: u32,
    pub end: u32,
    /// It owns a CNAME (then it owns nothing else).
    pub cname: bool,
    /// It is a delegation point: its NS records are a child zone's.
    pub cut: bool,
}

/// The names of the static records, compiled for lookup.
#[derive(Debug, Default)]
pub struct RecordTable {
    by_name: FnvMap<Box<str>, NodeId>,
    nodes: IdVec<NodeId, NameNode>,
    /// Whether any delegation exists (so that queries skip the walk).
    any_cut: bool,
}

impl RecordTable {
    /// Builds the table for `model`: `model.records` must be sorted by name
    /// (as `sextant-config` builds it); `zone_of` finds a name's zone.
    pub fn new(model: &Model, zone_of: impl Fn(&str) -> Option<ZoneId>) -> Self {
        let mut t = RecordTable::default();
        let records = &model.records;
        let mut i = 0;
        while i < records.len() {
            let name = &records[i].name;
            let mut j = i;
            let (mut cname, mut cut) = (false, false);
            while j < records.len() && records[j].name == *name {
                match records[j].data {
                    RecordData::Cname(_) => cname = true,
                    RecordData::Ns(_) => cut = true,
                    _ => {}
                }
                j += 1;
            }
            if let Some(zone) = zone_of(name) {
                t.any_cut |= cut;
                let id = t.insert(name, zone);
                let node = &mut t.nodes[id];
                (node.start, node.end, node.cname, node.cut) = (i as u32, j as u32, cname, cut);
            }
            i = j;
        }
        // GSLB and datacenter-mode names exist (NODATA for other types),
        // and so do the empty non-terminals: every name between an owner
        // and its apex.
        let answered = model
            .domains
            .iter()
            .map(|d| d.name.as_str())
            .chain(model.dc_records.iter().map(|d| d.name.as_str()));
        let mut pending: Vec<(String, ZoneId)> = Vec::new();
        for name in answered {
            if let Some(zone) = zone_of(name) {
                pending.push((name.to_string(), zone));
            }
        }
        let owners = records.iter().map(|r| r.name.as_str()).chain(
            model
                .domains
                .iter()
                .map(|d| d.name.as_str())
                .chain(model.dc_records.iter().map(|d| d.name.as_str())),
        );
        for owner in owners {
            let Some(zone) = zone_of(owner) else { continue };
            let apex = &model.zone(zone).apex;
            let mut rest = owner;
            while let Some(dot) = rest.find('.') {
                rest = &rest[dot + 1..];
                if rest.len() <= apex.len() {
                    break;
                }
                pending.push((rest.to_string(), zone));
            }
        }
        for (name, zone) in pending {
            t.insert(&name, zone);
        }
        t
    }

    /// The node of `name`, made empty on first mention.
    fn insert(&mut self, name: &str, zone: ZoneId) -> NodeId {
        if let Some(id) = self.by_name.get(name) {
            return *id;
        }
        let id = self.nodes.push(NameNode {
            zone,
            start: 0,
            end: 0,
            cname: false,
            cut: false,
        });
        self.by_name.insert(name.into(), id);
        id
    }

    /// The node of a lower-case name, if the name exists in our zones
    /// (owner of records, empty non-terminal, or above a GSLB domain).
    pub fn find(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    pub fn node(&self, id: NodeId) -> &NameNode {
        &self.nodes[id]
    }

    /// The records of a node.
    pub fn records<'m>(&self, model: &'m Model, id: NodeId) -> &'m [StaticRecord] {
        let n = &self.nodes[id];
        model
            .records
            .get(n.start as usize..n.end as usize)
            .unwrap_or(&[])
    }

    /// The records of `name` (lower case), empty when it has none.
    pub fn records_of<'m>(&self, model: &'m Model, name: &str) -> &'m [StaticRecord] {
        self.find(name)
            .map(|id| self.records(model, id))
            .unwrap_or(&[])
    }

    /// The delegation point at or above `name` and strictly below `apex`,
    /// if the name is in a delegated child zone.
    pub fn find_cut(&self, name: &str, apex: &str) -> Option<NodeId> {
        if !self.any_cut {
            return None;
        }
        let mut rest = name;
        while rest.len() > apex.len() {
            if let Some(id) = self.find(rest)
                && self.nodes[id].cut
            {
                return Some(id);
            }
            rest = &rest[rest.find('.')? + 1..];
        }
        None
    }

    /// Number of names (owners and empty non-terminals).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// Sorts records into the order the model keeps: by name, then by type,
/// each name's records of one type in the order given.
pub fn sort_records(records: &mut [StaticRecord]) {
    records.sort_by(|a, b| {
        a.name
            .cmp(&b.name)
            .then(a.data.rtype().cmp(&b.data.rtype()))
    });
}
