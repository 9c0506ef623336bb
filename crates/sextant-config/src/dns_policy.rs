//! DNS actions, DNS policies and their bindings at the global request bind
//! point: the draft form both syntaxes read them into, the value checks they
//! share, and the validation that resolves names and builds
//! `Model::dns_actions`, `dns_policies` and `dns_global_bindings`.
//!
//! The front ends parse rules with [`Expr::parse`] themselves, because only
//! they know where the rule text starts in the file (for the column of an
//! error); everything that spans several objects is checked here, once for
//! both syntaxes.

use std::collections::HashMap;

use sextant_core::policy::{DnsAction, DnsActionKind, DnsPolicy, ExprError, Goto, PolicyBinding};
use sextant_core::{DnsActionId, DnsPolicyId, Expr, Idx, Location, Model};

use crate::draft::{Ref, Syntax};
use crate::error::Diag;
use crate::no_effect::Scope;
use crate::scalar::check_name;

/// A GslbPrefLoc action holds at most this many preferred locations.
pub(crate) const MAX_PREFERRED_LOCATIONS: usize = 8;
/// The highest binding priority the appliance accepts (2^31 - 1).
pub(crate) const MAX_PRIORITY: u64 = 2_147_483_647;

/// The action types, as the messages list them.
pub(crate) const ACTION_TYPES: &str = "GslbPrefLoc, NOOP, DROP";

/// The appliance's built-in DNS actions, which a policy names without an
/// `add dns action`: drop the query, or answer it normally (Sextant keeps
/// no cache, so bypassing it is answering normally too).
pub(crate) const BUILTIN_ACTIONS: [&str; 3] = [
    "dns_default_act_Drop",
    "dns_default_act_Cachebypass",
    "dns_default_act_NoOp",
];

/// The built-in action named `name` (case-insensitively): its name as the
/// appliance spells it and what it does.
pub(crate) fn builtin_action(name: &str) -> Option<(&'static str, DnsActionKind)> {
    let canonical = BUILTIN_ACTIONS
        .iter()
        .find(|b| b.eq_ignore_ascii_case(name))?;
    let kind = if *canonical == BUILTIN_ACTIONS[0] {
        DnsActionKind::Drop
    } else {
        DnsActionKind::Noop
    };
    Some((canonical, kind))
}

/// `add dns action` / `[[dns_action]]`.
#[derive(Debug)]
pub(crate) struct DraftAction {
    pub name: String,
    pub line: usize,
    /// Where the preferred locations were given, for the limit's message.
    pub locations_line: usize,
    /// Already checked by the front end, except the number of locations.
    pub kind: DnsActionKind,
}

/// `add dns policy` / `[[dns_policy]]`.
#[derive(Debug)]
pub(crate) struct DraftPolicy {
    pub name: String,
    pub line: usize,
    /// `None` when the rule did not parse (already reported); the policy
    /// still exists, so bindings to it raise no errors of their own.
    pub rule: Option<Expr>,
    pub rule_text: String,
    /// `None` only when the front end could not read the policy at all.
    pub action: Option<Ref>,
}

/// The two request bind points. REQ_OVERRIDE policies are evaluated before
/// REQ_DEFAULT ones; each has its own priorities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum BindPoint {
    ReqOverride,
    ReqDefault,
}

impl BindPoint {
    pub(crate) fn keyword(self) -> &'static str {
        match self {
            BindPoint::ReqOverride => "REQ_OVERRIDE",
            BindPoint::ReqDefault => "REQ_DEFAULT",
        }
    }
}

/// `bind dns global` / `bind = { ... }` of a `[[dns_policy]]`.
#[derive(Debug)]
pub(crate) struct DraftBinding {
    pub policy: Ref,
    pub priority: u32,
    pub goto: Goto,
    pub bind_point: BindPoint,
}

/// Everything about DNS policies in one file.
#[derive(Debug, Default)]
pub(crate) struct DnsDraft {
    pub actions: Vec<DraftAction>,
    pub policies: Vec<DraftPolicy>,
    pub bindings: Vec<DraftBinding>,
}

/// What a rule's parse error says: the rule's own column when the error
/// cannot be placed in the line (e.g. in a TOML multi-line string).
pub(crate) fn rule_error(e: &ExprError) -> String {
    format!("rule: column {} of the rule: {}", e.column, e.message)
}

/// The action type word, case-insensitively: `Ok(None)` for GslbPrefLoc
/// (whose locations come separately), `Ok(Some(kind))` for NOOP and DROP.
pub(crate) fn action_type(text: &str) -> Result<Option<DnsActionKind>, String> {
    if text.eq_ignore_ascii_case("GslbPrefLoc") {
        Ok(None)
    } else if text.eq_ignore_ascii_case("NOOP") {
        Ok(Some(DnsActionKind::Noop))
    } else if text.eq_ignore_ascii_case("DROP") {
        Ok(Some(DnsActionKind::Drop))
    } else {
        Err(format!(
            "action type \"{text}\" is not supported; supported: {ACTION_TYPES}"
        ))
    }
}

/// One preferred location; `index` is 1-based, for the message.
pub(crate) fn preferred_location(index: usize, text: &str) -> Result<Location, String> {
    Location::parse(text).map_err(|e| format!("preferred location {index}: {e}"))
}

/// `END` or `NEXT`, case-insensitively.
pub(crate) fn goto(text: &str) -> Result<Goto, String> {
    if text.eq_ignore_ascii_case("END") {
        Ok(Goto::End)
    } else if text.eq_ignore_ascii_case("NEXT") {
        Ok(Goto::Next)
    } else {
        Err(format!(
            "expected END or NEXT, found \"{text}\" (Sextant does not evaluate other goto expressions, such as USE_INVOCATION_RESULT or a priority number)"
        ))
    }
}

/// `REQ_DEFAULT` or `REQ_OVERRIDE`, case-insensitively.
pub(crate) fn bind_point(text: &str) -> Result<BindPoint, String> {
    if text.eq_ignore_ascii_case("REQ_DEFAULT") {
        Ok(BindPoint::ReqDefault)
    } else if text.eq_ignore_ascii_case("REQ_OVERRIDE") {
        Ok(BindPoint::ReqOverride)
    } else if text.to_ascii_uppercase().starts_with("RES_") {
        Err(format!(
            "\"{text}\": response-time policies are not supported; expected REQ_DEFAULT or REQ_OVERRIDE"
        ))
    } else {
        Err(format!(
            "expected REQ_DEFAULT or REQ_OVERRIDE, found \"{text}\""
        ))
    }
}

/// Resolves names and fills the model's DNS actions, policies and global
/// bindings (REQ_OVERRIDE ones first, each bind point by ascending
/// priority: the order they are evaluated in).
pub(crate) fn build(draft: &DnsDraft, syntax: Syntax, diag: &mut Diag, model: &mut Model) {
    let actions = index(
        diag,
        "dns action",
        draft.actions.iter().map(|a| (a.name.as_str(), a.line)),
    );
    for a in &draft.actions {
        if let Some((builtin, _)) = builtin_action(&a.name) {
            diag.error(
                a.line,
                format!(
                    "dns action \"{}\": {builtin} is the name of a built-in action, which policies use without defining it; give this action another name",
                    a.name
                ),
            );
        }
        if let DnsActionKind::PreferredLocations(list) = &a.kind {
            let key = match syntax {
                Syntax::Appliance => "-preferredLocList",
                Syntax::Toml => "preferred_locations",
            };
            if list.is_empty() {
                diag.error(
                    a.locations_line,
                    format!(
                        "dns action \"{}\": a GslbPrefLoc action needs at least one preferred location ({key})",
                        a.name
                    ),
                );
            } else if list.len() > MAX_PREFERRED_LOCATIONS {
                diag.error(
                    a.locations_line,
                    format!(
                        "dns action \"{}\": {key}: {} locations given; at most {MAX_PREFERRED_LOCATIONS} are allowed",
                        a.name,
                        list.len()
                    ),
                );
            }
        }
        model.dns_actions.push(DnsAction {
            name: a.name.clone(),
            kind: a.kind.clone(),
        });
    }

    let policies = index(
        diag,
        "dns policy",
        draft.policies.iter().map(|p| (p.name.as_str(), p.line)),
    );
    let mut builtins: HashMap<&'static str, DnsActionId> = HashMap::new();
    for p in &draft.policies {
        let action = p
            .action
            .as_ref()
            .and_then(|r| {
                let builtin = builtin_action(&r.name)
                    .filter(|_| !actions.contains_key(&r.name.to_ascii_lowercase()));
                let Some((name, kind)) = builtin else {
                    return resolve(diag, syntax, r, "dns action", &actions);
                };
                crate::no_effect::warn(diag, r.line, Scope::DnsPolicy, name, syntax);
                Some(*builtins.entry(name).or_insert_with(|| {
                    model.dns_actions.push(DnsAction {
                        name: name.to_string(),
                        kind,
                    })
                }))
            })
            // Not found: already an error, the model is discarded.
            .unwrap_or(DnsActionId::new(0));
        model.dns_policies.push(DnsPolicy {
            name: p.name.clone(),
            rule: p.rule.clone().unwrap_or(Expr::Const(false)),
            rule_text: p.rule_text.clone(),
            action,
        });
    }

    let mut bound: HashMap<(BindPoint, DnsPolicyId), usize> = HashMap::new();
    let mut priorities: HashMap<(BindPoint, u32), (String, usize)> = HashMap::new();
    let mut out: Vec<(BindPoint, PolicyBinding)> = Vec::new();
    for b in &draft.bindings {
        let Some(policy) = resolve(diag, syntax, &b.policy, "dns policy", &policies) else {
            continue;
        };
        let point = b.bind_point;
        if let Some(first) = bound.get(&(point, policy)) {
            diag.error(
                b.policy.line,
                format!(
                    "{}: dns policy \"{}\" is already bound to the global {} bind point (line {first})",
                    b.policy.context,
                    b.policy.name,
                    point.keyword()
                ),
            );
            continue;
        }
        bound.insert((point, policy), b.policy.line);
        if let Some((other, first)) = priorities.get(&(point, b.priority)) {
            diag.error(
                b.policy.line,
                format!(
                    "{}: priority {} is already used by dns policy \"{other}\" (line {first}); priorities are unique per bind point ({})",
                    b.policy.context,
                    b.priority,
                    point.keyword()
                ),
            );
            continue;
        }
        priorities.insert((point, b.priority), (b.policy.name.clone(), b.policy.line));
        out.push((
            point,
            PolicyBinding {
                policy,
                priority: b.priority,
                goto: b.goto,
            },
        ));
    }
    out.sort_by_key(|(point, b)| (*point != BindPoint::ReqOverride, b.priority));
    model.dns_global_bindings = out.into_iter().map(|(_, b)| b).collect();
}

type Index<I> = HashMap<String, I>;

/// Names → ids, reporting bad and duplicate names (case-insensitive). The
/// `i`th item gets id `i`: the model's table is built in the same order.
fn index<'a, I: Idx>(
    diag: &mut Diag,
    noun: &str,
    items: impl Iterator<Item = (&'a str, usize)>,
) -> Index<I> {
    let mut index = Index::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for (i, (name, line)) in items.enumerate() {
        if let Err(e) = check_name(name) {
            diag.error(line, format!("{noun} name: {e}"));
        }
        let key = name.to_ascii_lowercase();
        if let Some(first) = first_line.get(&key) {
            diag.error(
                line,
                format!(
                    "{noun} \"{name}\" is already defined on line {first} (names are case-insensitive)"
                ),
            );
        } else {
            first_line.insert(key.clone(), line);
            index.insert(key, I::from_index(i));
        }
    }
    index
}

fn resolve<I: Copy>(
    diag: &mut Diag,
    syntax: Syntax,
    r: &Ref,
    noun: &str,
    index: &Index<I>,
) -> Option<I> {
    let found = index.get(&r.name.to_ascii_lowercase()).copied();
    if found.is_none() {
        let hint = match syntax {
            Syntax::Appliance => format!("add it with \"add {noun}\""),
            Syntax::Toml => format!(
                "add a [[{}]] table with name = \"{}\"",
                noun.replace(' ', "_"),
                r.name
            ),
        };
        diag.error(
            r.line,
            format!(
                "{}: {noun} \"{}\" is not defined ({hint})",
                r.context, r.name
            ),
        );
    }
    found
}
