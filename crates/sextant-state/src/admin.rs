//! The operator's enable/disable/drain marks, kept by name.
//!
//! Ids change with every configuration, names do not: the book keys its
//! marks by kind and lower-case name, so a reload keeps them (and drops
//! those whose object is gone), and the state file the edge writes from
//! [`crate::Effect::SaveAdmin`] is read back at the next start.

use std::collections::BTreeMap;
use std::sync::Arc;

use sextant_core::{AdminKind, AdminMark, AdminState, AdminTable, AdminTarget, Model, Snapshot};

/// One mark by name: what the engine saves, publishes and reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminRecord {
    pub kind: AdminKind,
    /// The name as configured (as the operator gave it, when the object
    /// is gone).
    pub name: String,
    pub mark: AdminMark,
}

/// An operator's change of one object's administrative state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminChange {
    pub kind: AdminKind,
    pub name: String,
    pub state: AdminState,
    pub reason: Option<String>,
    /// When the operator asked, wall clock, milliseconds since the UNIX
    /// epoch (data from the edge: it is shown and saved, never waited on).
    pub at_unix_ms: u64,
}

/// Why a change cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdminError {
    #[error("no {} named {name:?}", kind.as_str())]
    Unknown { kind: AdminKind, name: String },
    #[error("only a service can be drained; disable the {} instead", kind.as_str())]
    DrainNotService { kind: AdminKind },
}

/// Every mark that is not `enabled`, by (kind, lower-case name).
#[derive(Debug, Clone, Default)]
pub struct AdminBook {
    marks: BTreeMap<(AdminKind, String), AdminRecord>,
}

impl AdminBook {
    /// The object `kind`/`name` of `model`, if it has it.
    fn target(model: &Model, base: &Snapshot, kind: AdminKind, name: &str) -> Option<AdminTarget> {
        match kind {
            AdminKind::Service => base.service_by_name(name).map(AdminTarget::Service),
            AdminKind::VServer => model
                .vservers
                .position(|v| v.name.eq_ignore_ascii_case(name))
                .map(AdminTarget::VServer),
            AdminKind::Site => model
                .sites
                .position(|s| s.name.eq_ignore_ascii_case(name))
                .map(AdminTarget::Site),
        }
    }

    /// The configured spelling of `name`.
    fn configured_name(model: &Model, target: AdminTarget) -> String {
        match target {
            AdminTarget::Service(id) => model.service(id).name.clone(),
            AdminTarget::VServer(id) => model.vserver(id).name.clone(),
            AdminTarget::Site(id) => model.site(id).name.clone(),
        }
    }

    /// Applies one change; returns the record as it now stands (state
    /// `enabled` when the mark was lifted).
    pub fn apply(
        &mut self,
        model: &Model,
        base: &Snapshot,
        change: AdminChange,
    ) -> Result<AdminRecord, AdminError> {
        if change.state == AdminState::Draining && change.kind != AdminKind::Service {
            return Err(AdminError::DrainNotService { kind: change.kind });
        }
        let target = Self::target(model, base, change.kind, &change.name).ok_or_else(|| {
            AdminError::Unknown {
                kind: change.kind,
                name: change.name.clone(),
            }
        })?;
        let record = AdminRecord {
            kind: change.kind,
            name: Self::configured_name(model, target),
            mark: AdminMark {
                state: change.state,
                since_unix_ms: change.at_unix_ms,
                reason: change
                    .reason
                    .filter(|r| !r.trim().is_empty())
                    .map(Arc::from),
            },
        };
        let key = (change.kind, record.name.to_ascii_lowercase());
        if change.state == AdminState::Enabled {
            self.marks.remove(&key);
        } else {
            self.marks.insert(key, record.clone());
        }
        Ok(record)
    }

    /// Takes saved marks in (at start); returns those whose object `model`
    /// does not have, which are left out.
    pub fn restore(
        &mut self,
        model: &Model,
        base: &Snapshot,
        records: Vec<AdminRecord>,
    ) -> Vec<AdminRecord> {
        let mut dropped = Vec::new();
        for r in records {
            let change = AdminChange {
                kind: r.kind,
                name: r.name.clone(),
                state: r.mark.state,
                reason: r.mark.reason.as_deref().map(str::to_string),
                at_unix_ms: r.mark.since_unix_ms,
            };
            if self.apply(model, base, change).is_err() {
                dropped.push(r);
            }
        }
        dropped
    }

    /// Keeps the marks whose object `model` still has (under its new
    /// spelling); returns the others, which are dropped.
    pub fn retain_configured(&mut self, model: &Model, base: &Snapshot) -> Vec<AdminRecord> {
        let old = std::mem::take(&mut self.marks);
        let records: Vec<AdminRecord> = old.into_values().collect();
        self.restore(model, base, records)
    }

    /// The marks by id of `model`, for the snapshot.
    pub fn table(&self, model: &Model, base: &Snapshot) -> AdminTable {
        AdminTable::new(
            model,
            self.marks.values().filter_map(|r| {
                Some((Self::target(model, base, r.kind, &r.name)?, r.mark.clone()))
            }),
        )
    }

    /// Every mark, sites first, then vservers, then services, by name.
    pub fn records(&self) -> Vec<AdminRecord> {
        let mut all: Vec<AdminRecord> = self.marks.values().cloned().collect();
        all.sort_by(|a, b| {
            let rank = |k: AdminKind| match k {
                AdminKind::Site => 0,
                AdminKind::VServer => 1,
                AdminKind::Service => 2,
            };
            (rank(a.kind), &a.name).cmp(&(rank(b.kind), &b.name))
        });
        all
    }

    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }

    /// Whether `kind`/`name` has a mark.
    pub fn has(&self, kind: AdminKind, name: &str) -> bool {
        self.marks.contains_key(&(kind, name.to_ascii_lowercase()))
    }
}

/// The marks the configuration's own `-state DISABLED` and `disable gslb
/// service|vserver` lines make ([`Model::config_disabled`]), set at
/// `at_unix_ms`: what a start without a maintenance state file begins
/// with.
pub fn config_records(model: &Model, at_unix_ms: u64) -> Vec<AdminRecord> {
    model
        .config_disabled
        .iter()
        .map(|d| AdminRecord {
            kind: d.kind,
            name: d.name.clone(),
            mark: AdminMark {
                state: AdminState::Disabled,
                since_unix_ms: at_unix_ms,
                reason: Some(Arc::from(d.reason())),
            },
        })
        .collect()
}

/// The configuration's disable lines that `new` has and `old` (the
/// configuration running before a reload) did not, as marks: a reload
/// applies them, the others stay as the operator left them.
pub fn new_config_records(old: &Model, new: &Model, at_unix_ms: u64) -> Vec<AdminRecord> {
    config_records(new, at_unix_ms)
        .into_iter()
        .filter(|r| {
            !old.config_disabled
                .iter()
                .any(|o| o.kind == r.kind && o.name.eq_ignore_ascii_case(&r.name))
        })
        .collect()
}
