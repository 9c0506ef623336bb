//! `add dns action`, `add dns policy` and `bind dns global`.
//!
//! A policy's rule is an expression in the appliance's syntax, written as one
//! quoted argument. The appliance's own documentation writes quotes inside
//! it without escaping them:
//!
//! ```text
//! add dns policy dnsPolPrefLoc "CLIENT.IP.SRC.MATCHES_LOCATION("\*.ZMB.\*.*")" prefLoc11
//! ```
//!
//! so the rule is taken from the raw line: when the text between the policy
//! name and the action name is one quoted string (`"..."` with `\"` and
//! `\\` escapes, or `'...'`), the rule is that string; otherwise the rule is
//! the raw text from the first `"` after the name to the last `"` before the
//! action, as written (the expression reader itself treats `\"` and `\*`
//! inside its strings as `"` and `*`). An error in the rule is reported at
//! its column in the line.

use sextant_core::Expr;
use sextant_core::policy::DnsActionKind;

use super::{Arity, OptSpec, Reader, context, opt};
use crate::dns_policy::{
    DraftAction, DraftBinding, DraftPolicy, MAX_PRIORITY, action_type, bind_point, goto,
    preferred_location,
};
use crate::draft::Ref;
use crate::lexer::Token;
use crate::scalar;

/// `add dns action NAME GslbPrefLoc -preferredLocList "L1" "L2" ...`,
/// `add dns action NAME NOOP`, `add dns action NAME DROP`.
pub(super) fn add_action(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[opt("preferredLocList", Arity::Many)];
    let ctx = context("add dns action", tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["NAME", "TYPE"]) else {
        return;
    };
    let name = pos[0].to_string();
    let kind = match action_type(pos[1]) {
        Err(e) => {
            r.error(line, &ctx, e);
            DnsActionKind::Noop
        }
        Ok(Some(kind)) => {
            if args.has("preferredLocList") {
                r.error(
                    line,
                    &ctx,
                    format!(
                        "-preferredLocList applies to GslbPrefLoc actions only, not to {}",
                        pos[1]
                    ),
                );
            }
            kind
        }
        Ok(None) => {
            let mut list = Vec::new();
            match args.get("preferredLocList") {
                Some(o) => {
                    for (i, text) in o.texts().enumerate() {
                        match preferred_location(i + 1, text) {
                            Ok(l) => list.push(l),
                            Err(e) => r.error(line, &ctx, format!("-preferredLocList: {e}")),
                        }
                    }
                }
                None if args.lacks("preferredLocList") => r.error(
                    line,
                    &ctx,
                    "a GslbPrefLoc action needs -preferredLocList with 1 to 8 locations in descending priority, e.g. -preferredLocList \"Asia.HK\" \"Europe.UK\"",
                ),
                None => {}
            }
            // Reported already: keep the rest of the checks quiet.
            if list.is_empty() {
                DnsActionKind::Noop
            } else {
                DnsActionKind::PreferredLocations(list)
            }
        }
    };
    r.draft.dns.actions.push(DraftAction {
        name,
        line,
        locations_line: line,
        kind,
    });
}

/// `add dns policy NAME "RULE" ACTION [-logAction NAME]`; ACTION may be
/// a built-in one (`dns_default_act_Drop`, ...).
pub(super) fn add_policy(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[opt("logAction", Arity::One)];
    let ctx = context("add dns policy", tokens);
    // The rule may span several tokens (see the module's documentation);
    // options start at the first option after the name.
    let opts_at = tokens
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, t)| t.is_option() || t.is_dash_lookalike())
        .map_or(tokens.len(), |(i, _)| i);
    let (pos, opts) = tokens.split_at(opts_at);
    if !opts.is_empty() {
        let args = r.args(line, &ctx, opts, OPTS);
        if args.has("logAction") {
            r.no_effect(line, crate::no_effect::Scope::DnsPolicy, "logAction");
        }
    }
    if pos.len() < 3 {
        let missing = ["NAME", "RULE", "ACTION"][pos.len()..].join(" ");
        r.error(
            line,
            &ctx,
            format!(
                "missing {missing}; expected NAME \"RULE\" ACTION, e.g. add dns policy pol1 \"CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8)\" act1"
            ),
        );
        return;
    }
    let name = pos[0].text.to_string();
    let action = &pos[pos.len() - 1];
    let rule_tokens = &pos[1..pos.len() - 1];
    let raw = r.raw;
    let (text, columns) = rule_text(raw, rule_tokens);
    let rule = match Expr::parse(&text) {
        Ok(e) => Some(e),
        Err(e) => {
            let column = columns
                .get(e.column - 1)
                .or(columns.last())
                .copied()
                .unwrap_or(1);
            r.diag
                .error_at(line, column, format!("{ctx}: rule: {}", e.message));
            None
        }
    };
    r.draft.dns.policies.push(DraftPolicy {
        name,
        line,
        rule,
        rule_text: text,
        action: Some(Ref {
            name: action.text.to_string(),
            line,
            context: ctx,
        }),
    });
}

/// The rule's text, and for each of its characters (and one past its end)
/// the 1-based column in `raw` it was written at.
fn rule_text(raw: &str, tokens: &[Token]) -> (String, Vec<usize>) {
    let (Some(first), Some(last)) = (tokens.first(), tokens.last()) else {
        return (String::new(), vec![1]);
    };
    let region = &raw[first.start..last.end];
    let base = raw[..first.start].chars().count() + 1;
    if tokens.len() == 1
        && let Some(mapped) = one_quoted_string(region)
    {
        let columns = mapped.iter().map(|(_, c)| base + c).collect();
        let text = mapped[..mapped.len() - 1]
            .iter()
            .map(|(ch, _)| ch)
            .collect();
        return (text, columns);
    }
    let (inner, offset) = match region.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(inner) => (inner, 1),
        None => (region, 0),
    };
    let count = inner.chars().count();
    let columns = (0..=count).map(|i| base + offset + i).collect();
    (inner.to_string(), columns)
}

/// When `token` is exactly one quoted string, its characters after the
/// lexer's unescaping, each with its 0-based character offset in `token`;
/// the last entry is the closing quote (a stand-in for "the end").
fn one_quoted_string(token: &str) -> Option<Vec<(char, usize)>> {
    let chars: Vec<char> = token.chars().collect();
    let quote = *chars.first()?;
    if quote != '"' && quote != '\'' {
        return None;
    }
    let mut out = Vec::new();
    let mut i = 1;
    while i < chars.len() {
        let c = chars[i];
        if c == quote {
            // The closing quote must end the token.
            if i + 1 != chars.len() {
                return None;
            }
            out.push((quote, i));
            return Some(out);
        }
        if quote == '"' && c == '\\' && matches!(chars.get(i + 1), Some('"' | '\\')) {
            out.push((chars[i + 1], i));
            i += 2;
            continue;
        }
        out.push((c, i));
        i += 1;
    }
    None
}

/// `bind dns global POLICY PRIORITY [-gotoPriorityExpression END|NEXT]
/// [-type REQ_DEFAULT|REQ_OVERRIDE]`.
pub(super) fn bind_global(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[
        opt("gotoPriorityExpression", Arity::One),
        opt("type", Arity::One),
    ];
    let ctx = context("bind dns global", tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["POLICY", "PRIORITY"]) else {
        return;
    };
    let priority = match scalar::int_in(pos[1], 1, MAX_PRIORITY) {
        Ok(p) => p as u32,
        Err(e) => {
            r.error(line, &ctx, format!("PRIORITY: {e}"));
            return;
        }
    };
    let goto = match args.get("gotoPriorityExpression") {
        Some(o) => r.value(line, &ctx, o, goto).unwrap_or_default(),
        None => Default::default(),
    };
    let bind_point = match args.get("type") {
        Some(o) => match r.value(line, &ctx, o, bind_point) {
            Some(b) => b,
            None => return,
        },
        None => crate::dns_policy::BindPoint::ReqDefault,
    };
    r.draft.dns.bindings.push(DraftBinding {
        policy: Ref {
            name: pos[0].to_string(),
            line,
            context: ctx,
        },
        priority,
        goto,
        bind_point,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::tokenize;

    fn rule(line: &str) -> (String, Vec<usize>) {
        let t = tokenize(line).expect("tokenizes");
        rule_text(line, &t[4..t.len() - 1])
    }

    #[test]
    fn seed_line_with_unescaped_quotes() {
        let line = r#"add dns policy dnsPolPrefLoc "CLIENT.IP.SRC.MATCHES_LOCATION("\*.ZMB.\*.*")" prefLoc11"#;
        let (text, cols) = rule(line);
        assert_eq!(text, r#"CLIENT.IP.SRC.MATCHES_LOCATION("\*.ZMB.\*.*")"#);
        // The rule starts after the opening quote at column 30.
        assert_eq!(cols[0], 31);
        assert_eq!(line.chars().nth(cols[0] - 1), Some('C'));
    }

    #[test]
    fn escaped_quotes_map_to_their_backslash() {
        let line = r#"add dns policy p "A(\"x\")" act"#;
        let (text, cols) = rule(line);
        assert_eq!(text, r#"A("x")"#);
        // A at 19, ( at 20, \" at 21, x at 23, \" at 24, ) at 26, closing " at 27.
        assert_eq!(cols, [19, 20, 21, 23, 24, 26, 27]);
    }

    #[test]
    fn other_shapes() {
        assert_eq!(rule("add dns policy p 'a \"b' act").0, "a \"b");
        assert_eq!(rule("add dns policy p true act").0, "true");
        assert_eq!(
            rule(r#"add dns policy p DNS.REQ.QUESTION.DOMAIN.EQ("x") act"#).0,
            r#"DNS.REQ.QUESTION.DOMAIN.EQ("x")"#
        );
        assert_eq!(
            rule(r#"add dns policy p "A("a b") && B("c")" act"#).0,
            r#"A("a b") && B("c")"#
        );
        assert_eq!(one_quoted_string(r#""a"b""#), None);
        assert_eq!(one_quoted_string(r#""abc"#), None);
    }
}
