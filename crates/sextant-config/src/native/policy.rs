//! `[[dns_action]]` and `[[dns_policy]]` (with its optional `bind` table):
//! the native form of `add dns action`, `add dns policy` and
//! `bind dns global`.
//!
//! ```toml
//! [[dns_action]]
//! name = "prefLoc11"
//! type = "GslbPrefLoc"
//! preferred_locations = ["Asia.HK", "Europe.UK"]
//!
//! [[dns_policy]]
//! name = "dnsPolPrefLoc"
//! rule = 'CLIENT.IP.SRC.MATCHES_LOCATION("*.ZMB.*.*")'
//! action = "prefLoc11"
//! bind = { priority = 100, goto = "END", type = "REQ_DEFAULT" }
//! ```

use std::ops::Range;

use serde::Deserialize;
use sextant_core::Expr;
use sextant_core::policy::DnsActionKind;
use toml::Spanned;

use super::{Element, Native};
use crate::dns_policy::{
    BindPoint, DraftAction, DraftBinding, DraftPolicy, MAX_PRIORITY, action_type, bind_point, goto,
    preferred_location, rule_error,
};
use crate::draft::Ref;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DnsActionT {
    name: Spanned<String>,
    #[serde(rename = "type")]
    kind: Spanned<String>,
    preferred_locations: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DnsPolicyT {
    name: Spanned<String>,
    rule: Spanned<String>,
    action: Spanned<String>,
    /// `-logAction`: accepted, no effect.
    log_action: Option<Spanned<String>>,
    bind: Option<Spanned<BindT>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BindT {
    priority: Spanned<i64>,
    goto: Option<Spanned<String>>,
    #[serde(rename = "type")]
    bind_type: Option<Spanned<String>>,
}

impl Native<'_> {
    pub(super) fn dns_action(&mut self, value: Element<'_>) {
        let line = self.line(&value.span());
        let name = Self::name_of(&value);
        let Some(a) = self.de::<DnsActionT>("[[dns_action]]", value) else {
            if let Some(name) = name {
                self.draft.dns.actions.push(DraftAction {
                    name,
                    line,
                    locations_line: line,
                    kind: DnsActionKind::Noop,
                });
            }
            return;
        };
        let ctx = format!("[[dns_action]] {}", a.name.get_ref());
        let line = self.at(&a.name);
        let mut locations_line = line;
        let kind = match action_type(a.kind.get_ref()) {
            Err(e) => {
                self.error(self.at(&a.kind), &ctx, format!("type: {e}"));
                DnsActionKind::Noop
            }
            Ok(Some(kind)) => {
                if let Some(l) = &a.preferred_locations {
                    self.error(
                        self.at(l),
                        &ctx,
                        format!(
                            "preferred_locations applies to type = \"GslbPrefLoc\" only, not to \"{}\"",
                            a.kind.get_ref()
                        ),
                    );
                }
                kind
            }
            Ok(None) => match &a.preferred_locations {
                None => {
                    self.error(
                        line,
                        &ctx,
                        "a GslbPrefLoc action needs preferred_locations, 1 to 8 locations in descending priority, e.g. [\"Asia.HK\", \"Europe.UK\"]",
                    );
                    DnsActionKind::Noop
                }
                Some(l) => {
                    locations_line = self.at(l);
                    let mut list = Vec::new();
                    let mut bad = false;
                    for (i, text) in l.get_ref().iter().enumerate() {
                        match preferred_location(i + 1, text.get_ref()) {
                            Ok(loc) => list.push(loc),
                            Err(e) => {
                                bad = true;
                                self.error(
                                    self.at(text),
                                    &ctx,
                                    format!("preferred_locations: {e}"),
                                );
                            }
                        }
                    }
                    if bad {
                        DnsActionKind::Noop
                    } else {
                        DnsActionKind::PreferredLocations(list)
                    }
                }
            },
        };
        self.draft.dns.actions.push(DraftAction {
            name: a.name.get_ref().clone(),
            line,
            locations_line,
            kind,
        });
    }

    pub(super) fn dns_policy(&mut self, value: Element<'_>) {
        let line = self.line(&value.span());
        let name = Self::name_of(&value);
        let Some(p) = self.de::<DnsPolicyT>("[[dns_policy]]", value) else {
            if let Some(name) = name {
                self.draft.dns.policies.push(DraftPolicy {
                    name,
                    line,
                    rule: None,
                    rule_text: String::new(),
                    action: None,
                });
            }
            return;
        };
        let ctx = format!("[[dns_policy]] {}", p.name.get_ref());
        let line = self.at(&p.name);
        let text = p.rule.get_ref();
        let rule = match Expr::parse(text) {
            Ok(e) => Some(e),
            Err(e) => {
                let rule_line = self.at(&p.rule);
                match self.rule_columns(p.rule.span(), text) {
                    Some(cols) => {
                        let column = cols.get(e.column - 1).or(cols.last()).copied().unwrap_or(1);
                        self.diag.error_at(
                            rule_line,
                            column,
                            format!("{ctx}: rule: {}", e.message),
                        );
                    }
                    None => self.error(rule_line, &ctx, rule_error(&e)),
                }
                None
            }
        };
        if let Some(v) = &p.log_action {
            crate::no_effect::warn(
                self.diag,
                self.at(v),
                crate::no_effect::Scope::DnsPolicy,
                "logAction",
                crate::draft::Syntax::Toml,
            );
        }
        let policy_ref = self.reference(&ctx, &p.name);
        self.draft.dns.policies.push(DraftPolicy {
            name: p.name.get_ref().clone(),
            line,
            rule,
            rule_text: text.clone(),
            action: Some(self.reference(&ctx, &p.action)),
        });
        let Some(bind) = &p.bind else { return };
        let bind_line = self.at(bind);
        let b = bind.get_ref();
        let Some(priority) = self.int(&ctx, "bind: priority", &b.priority, 1, MAX_PRIORITY) else {
            return;
        };
        let goto = match &b.goto {
            Some(g) => self.with(&ctx, "bind: goto", g, goto).unwrap_or_default(),
            None => Default::default(),
        };
        let bind_point = match &b.bind_type {
            Some(t) => match self.with(&ctx, "bind: type", t, bind_point) {
                Some(b) => b,
                None => return,
            },
            None => BindPoint::ReqDefault,
        };
        self.draft.dns.bindings.push(DraftBinding {
            policy: Ref {
                line: bind_line,
                ..policy_ref
            },
            priority: priority as u32,
            goto,
            bind_point,
        });
    }

    /// For each character of a single-line TOML string's value (and one
    /// past its end), the 1-based column in its line it was written at.
    /// `None` for multi-line strings.
    fn rule_columns(&self, span: Range<usize>, value: &str) -> Option<Vec<usize>> {
        let raw = self.text.get(span.clone())?;
        if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
            return None;
        }
        let line_start = self.text[..span.start].rfind('\n').map_or(0, |i| i + 1);
        let base = self.text[line_start..span.start].chars().count() + 1;
        let chars: Vec<char> = raw.chars().collect();
        let quote = *chars.first()?;
        let mut cols = Vec::new();
        let mut i = 1;
        while i < chars.len() {
            let c = chars[i];
            if c == quote {
                cols.push(base + i);
                break;
            }
            cols.push(base + i);
            i += match (quote, c, chars.get(i + 1)) {
                ('"', '\\', Some('u')) => 6,
                ('"', '\\', Some('U')) => 10,
                ('"', '\\', _) => 2,
                _ => 1,
            };
        }
        (cols.len() == value.chars().count() + 1).then_some(cols)
    }
}
