//! DNS policies: an expression over the request, and the action it triggers.
//!
//! `add dns policy NAME "EXPR" ACTION` binds an [`Expr`] to a [`DnsAction`];
//! `bind dns global POLICY PRIORITY` puts it in the global request chain,
//! evaluated in priority order for every query.

use std::fmt;
use std::net::IpAddr;

use crate::decide::QueryType;
use crate::location::Location;
use crate::select::mask_ip;

pub use crate::id::{DnsActionId, DnsPolicyId};

/// A policy rule, as parsed from the appliance's expression syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    /// `CLIENT.IP.SRC.MATCHES_LOCATION("q1.q2.*")`: the client's location
    /// perfectly matches the pattern.
    MatchesLocation(Location),
    /// `CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8)` or `(2001:db8::/32)`; the
    /// address is stored masked.
    InSubnet {
        network: IpAddr,
        prefix: u8,
    },
    /// `CLIENT.IP.SRC.EQ(10.1.2.3)` or `(2001:db8::1)`: the client is this
    /// one address (an IPv4-mapped IPv6 client counts as its IPv4 address).
    SrcEq(IpAddr),
    /// `DNS.REQ.QUESTION.DOMAIN.EQ("name")`, lower case, no trailing dot.
    DomainEq(String),
    /// `DNS.REQ.QUESTION.DOMAIN.ENDSWITH("suffix")`, lower case, no trailing dot.
    DomainEndsWith(String),
    /// `DNS.REQ.QUESTION.TYPE.EQ(A)`.
    TypeEq(QueryType),
    /// `true` / `false` literals.
    Const(bool),
}

/// What a policy does when its rule is true.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DnsActionKind {
    /// `GslbPrefLoc -preferredLocList "L1" "L2" ...`: up to 8 preferred
    /// locations, highest priority first.
    PreferredLocations(Vec<Location>),
    /// Do nothing (the request continues as if no policy matched).
    Noop,
    /// Drop the request: no response at all.
    Drop,
}

/// `add dns action`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsAction {
    pub name: String,
    pub kind: DnsActionKind,
}

/// `add dns policy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsPolicy {
    pub name: String,
    pub rule: Expr,
    /// The rule as written, for explain and the API.
    pub rule_text: String,
    pub action: DnsActionId,
}

/// After a policy matched: stop (`END`) or evaluate the next one (`NEXT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Goto {
    #[default]
    End,
    Next,
}

/// `bind dns global POLICY PRIORITY [-gotoPriorityExpression END|NEXT]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyBinding {
    pub policy: DnsPolicyId,
    pub priority: u32,
    pub goto: Goto,
}

/// What a rule can look at.
#[derive(Debug, Clone, Copy)]
pub struct RequestFacts<'a> {
    /// The client address (the ECS address where the vserver enables ECS).
    pub client: IpAddr,
    /// The client's location, if the database knows it.
    pub client_location: Option<&'a Location>,
    /// Lower case, no trailing dot.
    pub qname: &'a str,
    pub qtype: QueryType,
}

// ---------------------------------------------------------------------------
// Expressions: parsing, canonical text, evaluation.

/// How deeply an expression may nest (parentheses, `!`, and chains of `&&` /
/// `||`, which build left-deep trees). Evaluation recurses this deep, so the
/// limit keeps a hostile or generated configuration from exhausting a
/// worker's stack.
pub const MAX_EXPR_DEPTH: usize = 256;

/// A rule that cannot be parsed: where (1-based character column in the
/// expression text) and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct ExprError {
    /// 1-based character column in the expression text.
    pub column: usize,
    /// What was expected and what was found, without the column.
    pub message: String,
}

/// The functions an expression can call, in the order of the "supported"
/// list in messages.
const FUNCTIONS: &[(&str, Func, &str)] = &[
    (
        "CLIENT.IP.SRC.MATCHES_LOCATION",
        Func::MatchesLocation,
        "CLIENT.IP.SRC.MATCHES_LOCATION(\"continent.country.*\")",
    ),
    (
        "CLIENT.IP.SRC.IN_SUBNET",
        Func::InSubnet,
        "CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8)",
    ),
    (
        "CLIENT.IP.SRC.EQ",
        Func::SrcEq,
        "CLIENT.IP.SRC.EQ(10.1.2.3)",
    ),
    (
        "DNS.REQ.QUESTION.DOMAIN.EQ",
        Func::DomainEq,
        "DNS.REQ.QUESTION.DOMAIN.EQ(\"www.example.com\")",
    ),
    (
        "DNS.REQ.QUESTION.DOMAIN.ENDSWITH",
        Func::DomainEndsWith,
        "DNS.REQ.QUESTION.DOMAIN.ENDSWITH(\"example.com\")",
    ),
    (
        "DNS.REQ.QUESTION.TYPE.EQ",
        Func::TypeEq,
        "DNS.REQ.QUESTION.TYPE.EQ(A)",
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    MatchesLocation,
    InSubnet,
    SrcEq,
    DomainEq,
    DomainEndsWith,
    TypeEq,
}

impl Expr {
    /// Parses a rule in the appliance's default expression syntax.
    ///
    /// `||` binds loosest, then `&&`, then prefix `!`; parentheses group. A
    /// condition followed by `.NOT` is negated,
    /// as the appliance writes `CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8).NOT`.
    /// Both binary operators associate to the left. Function names and the
    /// literals `true` / `false` are case-insensitive. Inside a quoted
    /// argument a backslash makes the next character literal, so `\"` is a
    /// quote, `\\` a backslash and `\*` a star (the appliance's documentation
    /// writes `"\*.ZMB.\*.*"`).
    pub fn parse(text: &str) -> Result<Expr, ExprError> {
        let mut p = Parser {
            chars: text.chars().collect(),
            pos: 0,
            nesting: 0,
        };
        p.skip_ws();
        if p.at_end() {
            return Err(p.error_here(format!(
                "the expression is empty; expected a condition such as {}",
                FUNCTIONS[1].2
            )));
        }
        let (expr, _) = p.or()?;
        p.skip_ws();
        if !p.at_end() {
            return Err(p.expected_operator());
        }
        Ok(expr)
    }

    /// Evaluates the rule for one request. Never allocates.
    pub fn eval(&self, facts: &RequestFacts<'_>) -> bool {
        self.eval_with(facts, &mut |pattern| {
            facts
                .client_location
                .is_some_and(|client| pattern.matches_perfectly(client))
        })
    }

    /// Evaluates the rule as [`eval`](Self::eval) does, except that
    /// `MATCHES_LOCATION(pattern)` is `matches_location(pattern)`, asked
    /// only when the evaluation reaches it (`&&` and `||` stop early), so
    /// that the caller looks the client's location up only then
    /// (`facts.client_location` is not read). Never allocates.
    pub fn eval_with(
        &self,
        facts: &RequestFacts<'_>,
        matches_location: &mut impl FnMut(&Location) -> bool,
    ) -> bool {
        match self {
            Expr::And(a, b) => {
                a.eval_with(facts, matches_location) && b.eval_with(facts, matches_location)
            }
            Expr::Or(a, b) => {
                a.eval_with(facts, matches_location) || b.eval_with(facts, matches_location)
            }
            Expr::Not(a) => !a.eval_with(facts, matches_location),
            Expr::MatchesLocation(pattern) => matches_location(pattern),
            Expr::InSubnet { network, prefix } => in_subnet(facts.client, *network, *prefix),
            Expr::SrcEq(ip) => in_subnet(facts.client, *ip, if ip.is_ipv4() { 32 } else { 128 }),
            Expr::DomainEq(name) => {
                // Query names arrive in lower case: equal bytes first.
                let q = strip_dot(facts.qname);
                q.len() == name.len() && (q == name || q.eq_ignore_ascii_case(name))
            }
            Expr::DomainEndsWith(suffix) => {
                let q = strip_dot(facts.qname).as_bytes();
                let s = suffix.as_bytes();
                q.len() >= s.len() && q[q.len() - s.len()..].eq_ignore_ascii_case(s)
            }
            Expr::TypeEq(t) => facts.qtype == *t,
            Expr::Const(b) => *b,
        }
    }

    /// Whether evaluating the rule needs the client's location (so the
    /// caller can skip the location lookup when no rule does).
    pub fn needs_location(&self) -> bool {
        match self {
            Expr::And(a, b) | Expr::Or(a, b) => a.needs_location() || b.needs_location(),
            Expr::Not(a) => a.needs_location(),
            Expr::MatchesLocation(_) => true,
            Expr::InSubnet { .. }
            | Expr::SrcEq(_)
            | Expr::DomainEq(_)
            | Expr::DomainEndsWith(_)
            | Expr::TypeEq(_)
            | Expr::Const(_) => false,
        }
    }

    /// Binding strength, for printing with the fewest parentheses.
    fn precedence(&self) -> u8 {
        match self {
            Expr::Or(..) => 1,
            Expr::And(..) => 2,
            _ => 3,
        }
    }

    fn fmt_at(&self, f: &mut fmt::Formatter<'_>, min: u8) -> fmt::Result {
        if self.precedence() < min {
            f.write_str("(")?;
            self.fmt_at(f, 0)?;
            return f.write_str(")");
        }
        match self {
            // Left-associative: a right operand of the same operator needs
            // parentheses to read back as the same tree.
            Expr::Or(a, b) => {
                a.fmt_at(f, 1)?;
                f.write_str(" || ")?;
                b.fmt_at(f, 2)
            }
            Expr::And(a, b) => {
                a.fmt_at(f, 2)?;
                f.write_str(" && ")?;
                b.fmt_at(f, 3)
            }
            Expr::Not(a) => {
                f.write_str("!")?;
                a.fmt_at(f, 3)
            }
            Expr::MatchesLocation(loc) => {
                f.write_str("CLIENT.IP.SRC.MATCHES_LOCATION(")?;
                write_quoted(f, &loc.to_string())?;
                f.write_str(")")
            }
            Expr::InSubnet { network, prefix } => {
                write!(f, "CLIENT.IP.SRC.IN_SUBNET({network}/{prefix})")
            }
            Expr::SrcEq(ip) => write!(f, "CLIENT.IP.SRC.EQ({ip})"),
            Expr::DomainEq(name) => {
                f.write_str("DNS.REQ.QUESTION.DOMAIN.EQ(")?;
                write_quoted(f, name)?;
                f.write_str(")")
            }
            Expr::DomainEndsWith(suffix) => {
                f.write_str("DNS.REQ.QUESTION.DOMAIN.ENDSWITH(")?;
                write_quoted(f, suffix)?;
                f.write_str(")")
            }
            Expr::TypeEq(t) => {
                f.write_str("DNS.REQ.QUESTION.TYPE.EQ(")?;
                write_type(f, *t)?;
                f.write_str(")")
            }
            Expr::Const(true) => f.write_str("true"),
            Expr::Const(false) => f.write_str("false"),
        }
    }
}

impl fmt::Display for Expr {
    /// The canonical appliance text: upper-case function names, quoted
    /// strings with `"` and `\` escaped, `&&` / `||` / `!` with the fewest
    /// parentheses. `Expr::parse` reads it back to an equal expression.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_at(f, 0)
    }
}

impl std::str::FromStr for Expr {
    type Err = ExprError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Expr::parse(s)
    }
}

fn write_quoted(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in s.chars() {
        if c == '"' || c == '\\' {
            f.write_str("\\")?;
        }
        write!(f, "{c}")?;
    }
    f.write_str("\"")
}

/// The query types `DNS.REQ.QUESTION.TYPE.EQ` names, as the appliance
/// spells them, with their codes.
pub const QUERY_TYPE_NAMES: &[(&str, u16)] = &[
    ("A", 1),
    ("NS", 2),
    ("CNAME", 5),
    ("SOA", 6),
    ("PTR", 12),
    ("HINFO", 13),
    ("MX", 15),
    ("TXT", 16),
    ("AAAA", 28),
    ("LOC", 29),
    ("SRV", 33),
    ("NAPTR", 35),
    ("DNAME", 39),
    ("DS", 43),
    ("RRSIG", 46),
    ("NSEC", 47),
    ("DNSKEY", 48),
    ("NSEC3", 50),
    ("CAA", 257),
    ("AXFR", 252),
    ("ANY", 255),
];

/// A query type by name (case-insensitive) or as `TYPEnn`.
fn query_type(text: &str) -> Option<QueryType> {
    if let Some((_, code)) = QUERY_TYPE_NAMES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(text))
    {
        return Some(QueryType::from_code(*code));
    }
    let digits = text
        .get(..4)?
        .eq_ignore_ascii_case("TYPE")
        .then(|| &text[4..])?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u16>().ok().map(QueryType::from_code)
}

fn write_type(f: &mut fmt::Formatter<'_>, t: QueryType) -> fmt::Result {
    let code = t.code();
    match QUERY_TYPE_NAMES.iter().find(|(_, c)| *c == code) {
        Some((name, _)) => f.write_str(name),
        None => write!(f, "TYPE{code}"),
    }
}

fn strip_dot(name: &str) -> &str {
    name.strip_suffix('.').unwrap_or(name)
}

fn in_subnet(client: IpAddr, network: IpAddr, prefix: u8) -> bool {
    match (network, client) {
        (IpAddr::V4(n), IpAddr::V4(c)) => mask_ip(IpAddr::V4(c), prefix, 128) == IpAddr::V4(n),
        (IpAddr::V4(n), IpAddr::V6(c)) => c
            .to_ipv4_mapped()
            .is_some_and(|c| mask_ip(IpAddr::V4(c), prefix, 128) == IpAddr::V4(n)),
        (IpAddr::V6(n), IpAddr::V6(c)) => mask_ip(IpAddr::V6(c), 32, prefix) == IpAddr::V6(n),
        (IpAddr::V6(_), IpAddr::V4(_)) => false,
    }
}

/// A recursive-descent parser over the expression's characters; `pos` is a
/// character index, so columns are `pos + 1`.
struct Parser {
    chars: Vec<char>,
    pos: usize,
    /// Open parentheses and `!`s around the current position.
    nesting: usize,
}

type Parsed = Result<(Expr, usize), ExprError>;

impl Parser {
    fn at_end(&self) -> bool {
        self.pos >= self.chars.len()
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek2(&self) -> Option<char> {
        self.chars.get(self.pos + 1).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn error_at(&self, pos: usize, message: impl Into<String>) -> ExprError {
        ExprError {
            column: pos + 1,
            message: message.into(),
        }
    }

    fn error_here(&self, message: impl Into<String>) -> ExprError {
        self.error_at(self.pos, message)
    }

    /// What is at the current position, for "found ..." in messages.
    fn found(&self) -> String {
        let Some(c) = self.peek() else {
            return "the end of the expression".to_string();
        };
        if is_word_char(c) {
            let word: String = self.chars[self.pos..]
                .iter()
                .take_while(|c| is_word_char(**c))
                .take(60)
                .collect();
            format!("\"{word}\"")
        } else if c == '"' {
            "a quoted string".to_string()
        } else {
            format!("\"{c}\"")
        }
    }

    /// The error after a complete operand when something other than an
    /// operator follows.
    fn expected_operator(&self) -> ExprError {
        let hint = match self.peek() {
            Some('&') if self.peek2() != Some('&') => "; write && for a logical and",
            Some('|') if self.peek2() != Some('|') => "; write || for a logical or",
            Some(')') => "; this ) closes no (",
            _ => {
                let word: String = self.chars[self.pos..]
                    .iter()
                    .take_while(|c| is_word_char(**c))
                    .collect();
                match word.to_ascii_lowercase().as_str() {
                    "and" => "; write && for a logical and",
                    "or" => "; write || for a logical or",
                    _ => "",
                }
            }
        };
        self.error_here(format!(
            "expected && or || or the end of the expression, found {}{hint}",
            self.found()
        ))
    }

    fn check_depth(&self, depth: usize, pos: usize) -> Result<(), ExprError> {
        if depth > MAX_EXPR_DEPTH || self.nesting > MAX_EXPR_DEPTH {
            return Err(self.error_at(
                pos,
                format!(
                    "the expression nests too deeply (more than {MAX_EXPR_DEPTH} levels of operators and parentheses); split it into several policies"
                ),
            ));
        }
        Ok(())
    }

    fn or(&mut self) -> Parsed {
        let (mut left, mut depth) = self.and()?;
        loop {
            self.skip_ws();
            if self.peek() == Some('|') && self.peek2() == Some('|') {
                let at = self.pos;
                self.pos += 2;
                let (right, d) = self.and()?;
                depth = depth.max(d) + 1;
                self.check_depth(depth, at)?;
                left = Expr::Or(Box::new(left), Box::new(right));
            } else {
                return Ok((left, depth));
            }
        }
    }

    fn and(&mut self) -> Parsed {
        let (mut left, mut depth) = self.unary()?;
        loop {
            self.skip_ws();
            if self.peek() == Some('&') && self.peek2() == Some('&') {
                let at = self.pos;
                self.pos += 2;
                let (right, d) = self.unary()?;
                depth = depth.max(d) + 1;
                self.check_depth(depth, at)?;
                left = Expr::And(Box::new(left), Box::new(right));
            } else {
                return Ok((left, depth));
            }
        }
    }

    fn unary(&mut self) -> Parsed {
        self.skip_ws();
        if self.peek() == Some('!') {
            let at = self.pos;
            self.pos += 1;
            self.nesting += 1;
            self.check_depth(0, at)?;
            let (inner, depth) = self.unary()?;
            self.nesting -= 1;
            self.check_depth(depth + 1, at)?;
            return Ok((Expr::Not(Box::new(inner)), depth + 1));
        }
        self.primary()
    }

    /// `.NOT` suffixes after a condition that started at `at`.
    fn not_suffixes(&mut self, parsed: (Expr, usize), at: usize) -> Parsed {
        let (mut expr, mut depth) = parsed;
        while self.at_not_suffix() {
            self.pos += 4;
            depth += 1;
            self.check_depth(depth, at)?;
            expr = Expr::Not(Box::new(expr));
        }
        Ok((expr, depth))
    }

    /// Whether `.NOT` (any case) follows, as a whole word.
    fn at_not_suffix(&self) -> bool {
        let word: String = self.chars[self.pos..].iter().take(4).collect();
        word.eq_ignore_ascii_case(".NOT")
            && !self
                .chars
                .get(self.pos + 4)
                .is_some_and(|c| is_word_char(*c) && *c != '.')
    }

    fn primary(&mut self) -> Parsed {
        self.skip_ws();
        let start = self.pos;
        match self.peek() {
            None => {
                Err(self
                    .error_here("expected a condition, !, or (, found the end of the expression"))
            }
            Some('(') => {
                self.pos += 1;
                self.nesting += 1;
                self.check_depth(0, start)?;
                let inner = self.or()?;
                self.nesting -= 1;
                self.skip_ws();
                if self.peek() != Some(')') {
                    let message = if self.at_end() {
                        format!(
                            "expected ) to close the ( at column {}, found the end of the expression",
                            start + 1
                        )
                    } else {
                        format!(
                            "expected && or || or ) to close the ( at column {}, found {}",
                            start + 1,
                            self.found()
                        )
                    };
                    return Err(self.error_here(message));
                }
                self.pos += 1;
                Ok(inner)
            }
            Some(c) if is_word_char(c) => {
                let word: String = self.chars[self.pos..]
                    .iter()
                    .take_while(|c| is_word_char(**c))
                    .collect();
                self.pos += word.chars().count();
                if word.eq_ignore_ascii_case("true") {
                    return Ok((Expr::Const(true), 1));
                }
                if word.eq_ignore_ascii_case("false") {
                    return Ok((Expr::Const(false), 1));
                }
                let Some(&(name, func, _)) = FUNCTIONS
                    .iter()
                    .find(|(name, _, _)| name.eq_ignore_ascii_case(&word))
                else {
                    let supported: Vec<&str> = FUNCTIONS.iter().map(|f| f.2).collect();
                    return Err(self.error_at(
                        start,
                        format!(
                            "unknown function {word}; supported: {}, true, false",
                            supported.join(", ")
                        ),
                    ));
                };
                self.call(name, func, start)
            }
            Some(_) => Err(self.error_here(format!(
                "expected a condition (such as {}), !, or (, found {}",
                FUNCTIONS[1].2,
                self.found()
            ))),
        }
    }

    /// The parenthesized argument of `name`, after the name.
    /// Followed by any `.NOT` suffixes; `start` is where the name began.
    fn call(&mut self, name: &str, func: Func, start: usize) -> Parsed {
        self.skip_ws();
        if self.peek() != Some('(') {
            return Err(self.error_here(format!("expected ( after {name}, found {}", self.found())));
        }
        self.pos += 1;
        self.skip_ws();
        let arg_pos = self.pos;
        let quoted = self.peek() == Some('"');
        let arg = match func {
            Func::MatchesLocation | Func::DomainEq | Func::DomainEndsWith => {
                if !quoted {
                    return Err(self.error_here(format!(
                        "{name} takes a quoted string, found {}",
                        self.found()
                    )));
                }
                self.string()?
            }
            Func::InSubnet | Func::SrcEq | Func::TypeEq => {
                if quoted {
                    self.string()?
                } else {
                    let arg: String = self.chars[self.pos..]
                        .iter()
                        .take_while(|c| !c.is_whitespace() && **c != ')' && **c != '(')
                        .collect();
                    self.pos += arg.chars().count();
                    arg
                }
            }
        };
        let expr = match func {
            Func::MatchesLocation => Location::parse(&arg)
                .map(Expr::MatchesLocation)
                .map_err(|e| self.error_at(arg_pos, e.to_string()))?,
            Func::InSubnet => {
                let (network, prefix) =
                    subnet(&arg).map_err(|m| self.error_at(arg_pos, format!("{name}: {m}")))?;
                Expr::InSubnet { network, prefix }
            }
            Func::SrcEq => {
                let ip: IpAddr = arg.parse().map_err(|_| {
                    self.error_at(
                        arg_pos,
                        format!(
                            "{name}: expected one address such as 10.1.2.3 or 2001:db8::1, found \"{arg}\" (for a subnet, use CLIENT.IP.SRC.IN_SUBNET)"
                        ),
                    )
                })?;
                Expr::SrcEq(ip)
            }
            Func::DomainEq => Expr::DomainEq(normalize_domain(&arg)),
            Func::DomainEndsWith => Expr::DomainEndsWith(normalize_domain(&arg)),
            Func::TypeEq => match query_type(&arg) {
                Some(t) => Expr::TypeEq(t),
                None => {
                    let names: Vec<&str> = QUERY_TYPE_NAMES.iter().map(|(n, _)| *n).collect();
                    return Err(self.error_at(
                        arg_pos,
                        format!(
                            "{name}: unknown query type \"{arg}\"; expected one of {} or TYPEnn",
                            names.join(", ")
                        ),
                    ));
                }
            },
        };
        self.skip_ws();
        if self.peek() != Some(')') {
            return Err(self.error_here(format!(
                "expected ) after the argument of {name}, found {}",
                self.found()
            )));
        }
        self.pos += 1;
        self.not_suffixes((expr, 1), start)
    }

    /// A `"..."` string at the current position; a backslash makes the next
    /// character literal.
    fn string(&mut self) -> Result<String, ExprError> {
        let open = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            match self.peek() {
                None => {
                    return Err(self.error_at(open, "unterminated string: this \" is never closed"));
                }
                Some('"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some('\\') if self.peek2().is_some() => {
                    out.extend(self.peek2());
                    self.pos += 2;
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// Lower case, without trailing dots: how names are compared.
/// Trailing dots and white space are cut together, so that the result is
/// normalized already (the canonical text must parse back to it).
fn normalize_domain(text: &str) -> String {
    text.trim_start()
        .trim_end_matches(|c: char| c == '.' || c.is_whitespace())
        .to_ascii_lowercase()
}

/// `10.0.0.0/8`, `2001:db8::/32`, or a bare address (a host route). The
/// address is masked to the prefix.
fn subnet(text: &str) -> Result<(IpAddr, u8), String> {
    let (addr, len) = match text.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (text, None),
    };
    let ip: IpAddr = addr.parse().map_err(|_| {
        format!("expected a subnet such as 10.0.0.0/8 or 2001:db8::/32, found \"{text}\"")
    })?;
    let max: u8 = if ip.is_ipv4() { 32 } else { 128 };
    let prefix = match len {
        None => max,
        Some(l) => match l.parse::<u8>() {
            Ok(p) if p <= max && !l.starts_with('+') => p,
            _ => {
                return Err(format!(
                    "prefix length \"{l}\" in \"{text}\" must be a number from 0 to {max}"
                ));
            }
        },
    };
    Ok((mask_ip(ip, prefix, prefix), prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(s: &str) -> Expr {
        Expr::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    /// Found by fuzz/policy_expr (fuzz/regressions/policy_expr/
    /// endswith_newlines_then_dot): a name ending in white space and then a
    /// dot kept the white space, so its canonical text parsed back to
    /// another rule.
    #[test]
    fn endswith_newlines_then_dot_round_trips() {
        let e = parse("DNS.REQ.QUESTION.DOMAIN.ENDSWITH(\"exa.com\n\n.\")");
        assert_eq!(e, Expr::DomainEndsWith("exa.com".into()));
        assert_eq!(parse(&e.to_string()), e);
        let e = parse("DNS.REQ.QUESTION.DOMAIN.EQ(\" Www.Example.com . .\")");
        assert_eq!(e, Expr::DomainEq("www.example.com".into()));
    }

    fn err(s: &str) -> ExprError {
        match Expr::parse(s) {
            Ok(e) => panic!("{s:?} parsed as {e:?}"),
            Err(e) => e,
        }
    }

    fn loc(s: &str) -> Location {
        Location::parse(s).expect("location")
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    fn facts<'a>(client: &str, location: Option<&'a Location>, qname: &'a str) -> RequestFacts<'a> {
        RequestFacts {
            client: ip(client),
            client_location: location,
            qname,
            qtype: QueryType::A,
        }
    }

    fn t(b: bool) -> Box<Expr> {
        Box::new(Expr::Const(b))
    }

    #[test]
    fn seed_000_expression() {
        // The text between the outer quotes of the seed's policy line.
        let e = parse(r#"CLIENT.IP.SRC.MATCHES_LOCATION("\*.ZMB.\*.*")"#);
        assert_eq!(e, Expr::MatchesLocation(loc("*.ZMB.*.*")));
        assert!(e.needs_location());
        // The same, as the properly escaped token reads after unquoting.
        assert_eq!(parse(r#"CLIENT.IP.SRC.MATCHES_LOCATION("*.ZMB.*.*")"#), e);
        let zmb = loc("Africa.ZMB");
        let hk = loc("Asia.HK");
        assert!(e.eval(&facts("10.0.0.1", Some(&zmb), "www.example.com")));
        assert!(!e.eval(&facts("10.0.0.1", Some(&hk), "www.example.com")));
        assert!(!e.eval(&facts("10.0.0.1", None, "www.example.com")));
        assert_eq!(e.to_string(), r#"CLIENT.IP.SRC.MATCHES_LOCATION("*.zmb")"#);
    }

    #[test]
    fn matches_location_needs_the_named_qualifiers() {
        let e = parse(r#"client.ip.src.matches_location("Europe.UK")"#);
        let uk = loc("europe.uk.london");
        let wild = loc("europe");
        assert!(e.eval(&facts("::1", Some(&uk), "a")));
        // A client location with a wildcard where the pattern names a qualifier does not match.
        assert!(!e.eval(&facts("::1", Some(&wild), "a")));
        // The all-wildcard pattern matches any client with a location.
        let any = parse(r#"CLIENT.IP.SRC.MATCHES_LOCATION("*")"#);
        assert!(any.eval(&facts("::1", Some(&wild), "a")));
        assert!(!any.eval(&facts("::1", None, "a")));
    }

    fn typed<'a>(client: &str, qtype: QueryType) -> RequestFacts<'a> {
        RequestFacts {
            client: ip(client),
            client_location: None,
            qname: "www.example.com",
            qtype,
        }
    }

    #[test]
    fn src_eq_matches_one_address_v4_v6_and_mapped() {
        let e = parse("CLIENT.IP.SRC.EQ(127.0.0.7)");
        assert_eq!(e, Expr::SrcEq(ip("127.0.0.7")));
        assert!(!e.needs_location());
        assert!(e.eval(&facts("127.0.0.7", None, "a")));
        assert!(!e.eval(&facts("127.0.0.8", None, "a")));
        assert!(e.eval(&facts("::ffff:127.0.0.7", None, "a")));
        assert!(!e.eval(&facts("::1", None, "a")));
        assert_eq!(e.to_string(), "CLIENT.IP.SRC.EQ(127.0.0.7)");
        let v6 = parse("client.ip.src.eq(2001:DB8::1)");
        assert!(v6.eval(&facts("2001:db8::1", None, "a")));
        assert!(!v6.eval(&facts("2001:db8::2", None, "a")));
        assert!(!v6.eval(&facts("127.0.0.7", None, "a")));
        assert_eq!(parse(&v6.to_string()), v6);
        let e = err("CLIENT.IP.SRC.EQ(10.0.0.0/8)");
        assert_eq!(e.column, 18);
        assert!(e.message.contains("CLIENT.IP.SRC.IN_SUBNET"), "{e}");
    }

    #[test]
    fn not_suffix_negates_the_condition_before_it() {
        let e = parse("CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8).NOT");
        assert_eq!(
            e,
            Expr::Not(Box::new(Expr::InSubnet {
                network: ip("10.0.0.0"),
                prefix: 8
            }))
        );
        assert!(!e.eval(&facts("10.1.1.1", None, "a")));
        assert!(e.eval(&facts("192.0.2.1", None, "a")));
        // On IPv6 prefixes too, any case, twice, and after a group.
        let v6 = parse("CLIENT.IP.SRC.IN_SUBNET(2001:db8::/32).not");
        assert!(v6.eval(&facts("2001:db9::1", None, "a")));
        assert!(!v6.eval(&facts("2001:db8::1", None, "a")));
        let twice = parse("CLIENT.IP.SRC.EQ(10.0.0.1).NOT.NOT");
        assert!(twice.eval(&facts("10.0.0.1", None, "a")));
        let many = format!("CLIENT.IP.SRC.EQ(10.0.0.1){}", ".NOT".repeat(100_000));
        assert!(err(&many).message.contains("nests too deeply"));
        // Binds tighter than && and ||.
        let mixed = parse("CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8).NOT && DNS.REQ.QUESTION.TYPE.EQ(A)");
        assert!(mixed.eval(&typed("192.0.2.1", QueryType::A)));
        assert!(!mixed.eval(&typed("10.0.0.1", QueryType::A)));
        assert_eq!(parse(&mixed.to_string()), mixed);
        // Not a suffix: .NOTE is no operator.
        let e = err("CLIENT.IP.SRC.EQ(10.0.0.1).NOTE");
        assert!(e.message.contains("expected && or ||"), "{e}");
    }

    #[test]
    fn type_eq_names_the_appliance_types() {
        for (name, code) in QUERY_TYPE_NAMES {
            let e = parse(&format!("DNS.REQ.QUESTION.TYPE.EQ({name})"));
            assert!(
                e.eval(&typed("10.0.0.1", QueryType::from_code(*code))),
                "{name}"
            );
            assert!(!e.eval(&typed("10.0.0.1", QueryType::from_code(code + 1000))));
            assert_eq!(e.to_string(), format!("DNS.REQ.QUESTION.TYPE.EQ({name})"));
        }
        let aaaa = parse("DNS.REQ.QUESTION.TYPE.EQ(aaaa)");
        assert!(aaaa.eval(&typed("10.0.0.1", QueryType::Aaaa)));
        assert!(!aaaa.eval(&typed("10.0.0.1", QueryType::A)));
        let numbered = parse("DNS.REQ.QUESTION.TYPE.EQ(TYPE65)");
        assert!(numbered.eval(&typed("10.0.0.1", QueryType::from_code(65))));
        assert_eq!(numbered.to_string(), "DNS.REQ.QUESTION.TYPE.EQ(TYPE65)");
        let e = err("DNS.REQ.QUESTION.TYPE.EQ(BOGUS)");
        assert!(e.message.contains("CNAME, SOA"), "{e}");
        assert!(
            err("DNS.REQ.QUESTION.TYPE.EQ(TYPE)")
                .message
                .contains("unknown query type")
        );
    }

    #[test]
    fn in_subnet_v4_v6_and_mapped() {
        let e = parse("CLIENT.IP.SRC.IN_SUBNET(10.1.2.3/8)");
        assert_eq!(
            e,
            Expr::InSubnet {
                network: ip("10.0.0.0"),
                prefix: 8
            }
        );
        assert!(!e.needs_location());
        assert!(e.eval(&facts("10.200.0.1", None, "a")));
        assert!(!e.eval(&facts("11.0.0.1", None, "a")));
        assert!(e.eval(&facts("::ffff:10.9.9.9", None, "a")));
        assert!(!e.eval(&facts("::ffff:11.9.9.9", None, "a")));
        assert!(!e.eval(&facts("2001:db8::1", None, "a")));

        let v6 = parse("CLIENT.IP.SRC.IN_SUBNET( 2001:db8::/32 )");
        assert!(v6.eval(&facts("2001:db8:ffff::1", None, "a")));
        assert!(!v6.eval(&facts("2001:db9::1", None, "a")));
        assert!(!v6.eval(&facts("10.0.0.1", None, "a")));

        let all = parse("CLIENT.IP.SRC.IN_SUBNET(0.0.0.0/0)");
        assert!(all.eval(&facts("192.0.2.1", None, "a")));
        let host = parse("CLIENT.IP.SRC.IN_SUBNET(\"192.0.2.7\")");
        assert_eq!(host.to_string(), "CLIENT.IP.SRC.IN_SUBNET(192.0.2.7/32)");
        assert!(host.eval(&facts("192.0.2.7", None, "a")));
        assert!(!host.eval(&facts("192.0.2.8", None, "a")));

        assert!(
            err("CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/33)")
                .message
                .contains("0 to 32")
        );
        assert!(
            err("CLIENT.IP.SRC.IN_SUBNET(::/129)")
                .message
                .contains("0 to 128")
        );
        let e = err("CLIENT.IP.SRC.IN_SUBNET(10.0.0/8)");
        assert_eq!(e.column, 25);
        assert!(e.message.contains("expected a subnet"), "{e}");
    }

    #[test]
    fn domain_eq_and_endswith() {
        let eq = parse(r#"DNS.REQ.QUESTION.DOMAIN.EQ("WWW.Example.com.")"#);
        assert_eq!(eq, Expr::DomainEq("www.example.com".into()));
        assert!(eq.eval(&facts("10.0.0.1", None, "www.example.com")));
        assert!(eq.eval(&facts("10.0.0.1", None, "WWW.EXAMPLE.COM.")));
        assert!(!eq.eval(&facts("10.0.0.1", None, "example.com")));

        let ends = parse(r#"DNS.REQ.QUESTION.DOMAIN.ENDSWITH("example.com")"#);
        assert!(ends.eval(&facts("10.0.0.1", None, "www.example.com")));
        assert!(ends.eval(&facts("10.0.0.1", None, "example.com")));
        // A plain string suffix, as on the appliance: not label-aware.
        assert!(ends.eval(&facts("10.0.0.1", None, "badexample.com")));
        assert!(!ends.eval(&facts("10.0.0.1", None, "example.org")));
        assert!(!ends.eval(&facts("10.0.0.1", None, "com")));
        let dotted = parse(r#"DNS.REQ.QUESTION.DOMAIN.ENDSWITH(".example.com")"#);
        assert!(dotted.eval(&facts("10.0.0.1", None, "www.example.com")));
        assert!(!dotted.eval(&facts("10.0.0.1", None, "badexample.com")));
        // Multi-byte names never split a character.
        assert!(!ends.eval(&facts("10.0.0.1", None, "ü")));
        assert!(!dotted.eval(&facts("10.0.0.1", None, "ééééééééééé")));

        let e = err("DNS.REQ.QUESTION.DOMAIN.EQ(www.example.com)");
        assert_eq!(e.column, 28);
        assert!(e.message.contains("takes a quoted string"), "{e}");
    }

    #[test]
    fn query_type() {
        let a = parse("DNS.REQ.QUESTION.TYPE.EQ(A)");
        let aaaa = parse("dns.req.question.type.eq(aaaa)");
        assert_eq!(aaaa, Expr::TypeEq(QueryType::Aaaa));
        let mut f = facts("10.0.0.1", None, "x");
        assert!(a.eval(&f));
        assert!(!aaaa.eval(&f));
        f.qtype = QueryType::Aaaa;
        assert!(aaaa.eval(&f));
        assert_eq!(
            parse("DNS.REQ.QUESTION.TYPE.EQ(TYPE99)").to_string(),
            "DNS.REQ.QUESTION.TYPE.EQ(TYPE99)"
        );
        assert_eq!(parse("DNS.REQ.QUESTION.TYPE.EQ(type28)"), aaaa);
        let e = err("DNS.REQ.QUESTION.TYPE.EQ(AAAAA)");
        assert_eq!(e.column, 26);
        assert!(e.message.contains("unknown query type \"AAAAA\""), "{e}");
    }

    #[test]
    fn precedence_not_and_parentheses() {
        assert_eq!(
            parse("true || false && false"),
            Expr::Or(t(true), Box::new(Expr::And(t(false), t(false))))
        );
        assert_eq!(
            parse("(true || false) && false"),
            Expr::And(Box::new(Expr::Or(t(true), t(false))), t(false))
        );
        assert_eq!(
            parse("true && false || true"),
            Expr::Or(Box::new(Expr::And(t(true), t(false))), t(true))
        );
        // Left-associative.
        assert_eq!(
            parse("true || false || true"),
            Expr::Or(Box::new(Expr::Or(t(true), t(false))), t(true))
        );
        assert_eq!(parse("!true"), Expr::Not(t(true)));
        assert_eq!(parse("!!TRUE"), Expr::Not(Box::new(Expr::Not(t(true)))));
        assert_eq!(
            parse("!true && false"),
            Expr::And(Box::new(Expr::Not(t(true))), t(false))
        );
        assert_eq!(
            parse("!(true && false)"),
            Expr::Not(Box::new(Expr::And(t(true), t(false))))
        );
        assert_eq!(parse("  ( ( FALSE ) )  "), Expr::Const(false));

        let f = facts("10.0.0.1", None, "www.example.com");
        assert!(parse("true || false && false").eval(&f));
        assert!(!parse("(true || false) && false").eval(&f));
        assert!(!parse("!true").eval(&f));
        assert!(parse("!(true && false)").eval(&f));
        let combined = parse(
            r#"CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8) && !DNS.REQ.QUESTION.DOMAIN.ENDSWITH("internal.example.com") || DNS.REQ.QUESTION.TYPE.EQ(AAAA)"#,
        );
        assert!(combined.eval(&f));
        assert!(!combined.eval(&facts("10.0.0.1", None, "a.internal.example.com")));
        assert!(!combined.eval(&facts("192.0.2.1", None, "www.example.com")));
    }

    #[test]
    fn display_is_canonical() {
        let e = parse(
            r#"!(client.ip.src.in_subnet(10.9.0.0/16) || DNS.REQ.QUESTION.DOMAIN.EQ("a\"b\\c")) && (true && (false || TRUE))"#,
        );
        assert_eq!(
            e.to_string(),
            r#"!(CLIENT.IP.SRC.IN_SUBNET(10.9.0.0/16) || DNS.REQ.QUESTION.DOMAIN.EQ("a\"b\\c")) && (true && (false || true))"#
        );
        // `a && (b && c)` keeps its shape.
        let right = Expr::And(t(true), Box::new(Expr::And(t(false), t(true))));
        assert_eq!(right.to_string(), "true && (false && true)");
        assert_eq!(parse(&right.to_string()), right);
    }

    #[test]
    fn error_columns_and_messages() {
        let e = err("true && false false");
        assert_eq!(e.column, 15);
        assert!(
            e.message
                .starts_with("expected && or || or the end of the expression, found \"false\""),
            "{e}"
        );
        assert_eq!(e.to_string(), format!("column 15: {}", e.message));

        let e = err("CLIENT.IP.SRC.FOO(1)");
        assert_eq!(e.column, 1);
        assert!(
            e.message.starts_with(
                "unknown function CLIENT.IP.SRC.FOO; supported: CLIENT.IP.SRC.MATCHES_LOCATION"
            ),
            "{e}"
        );

        let e = err("  true && CLIENT.IP.SRC.MATCHES_LOCATION(\"Europe..UK\")");
        assert_eq!(e.column, 42);
        assert!(e.message.contains("qualifier 2 is empty"), "{e}");

        let e = err("(true || false");
        assert_eq!(e.column, 15);
        assert!(
            e.message.contains("expected ) to close the ( at column 1"),
            "{e}"
        );

        let e = err("true & false");
        assert_eq!(e.column, 6);
        assert!(e.message.contains("write && for a logical and"), "{e}");
        let e = err("true or false");
        assert_eq!(e.column, 6);
        assert!(e.message.contains("write || for a logical or"), "{e}");
        let e = err("true)");
        assert!(e.message.contains("closes no ("), "{e}");

        let e = err("DNS.REQ.QUESTION.DOMAIN.EQ(\"abc)");
        assert_eq!(e.column, 28);
        assert!(e.message.contains("unterminated string"), "{e}");

        let e = err("CLIENT.IP.SRC.IN_SUBNET");
        assert_eq!(e.column, 24);
        assert!(
            e.message
                .contains("expected ( after CLIENT.IP.SRC.IN_SUBNET, found the end"),
            "{e}"
        );

        let e = err("CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8 x");
        assert_eq!(e.column, 36);
        assert!(e.message.contains("expected ) after the argument"), "{e}");

        assert_eq!(err("").column, 1);
        assert!(err("   ").message.contains("empty"));
        assert_eq!(err("true &&").column, 8);
        assert_eq!(err("!").column, 2);
        let e = err("true && ?");
        assert_eq!(e.column, 9);
        assert!(e.message.contains("found \"?\""), "{e}");
        // Columns count characters, not bytes.
        assert_eq!(err("DNS.REQ.QUESTION.DOMAIN.EQ(\"é\") é").column, 33);
    }

    #[test]
    fn nesting_is_limited() {
        let deep = format!(
            "{}true{}",
            "(".repeat(MAX_EXPR_DEPTH),
            ")".repeat(MAX_EXPR_DEPTH)
        );
        assert_eq!(parse(&deep), Expr::Const(true));
        let too_deep = format!("{}true{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(err(&too_deep).message.contains("nests too deeply"));
        assert!(
            err(&"!".repeat(100_000))
                .message
                .contains("nests too deeply")
        );
        let chain = vec!["true"; MAX_EXPR_DEPTH].join(" || ");
        assert!(parse(&chain).eval(&facts("10.0.0.1", None, "a")));
        let long = vec!["true"; 10_000].join(" && ");
        assert!(err(&long).message.contains("nests too deeply"));
    }

    fn arb_location() -> impl Strategy<Value = Location> {
        proptest::collection::vec(
            prop_oneof![Just("*".to_string()), "[a-z0-9 &',_-]{1,6}"],
            0..=6,
        )
        .prop_filter_map("valid location", |parts| {
            Location::parse(&parts.join(".")).ok()
        })
    }

    fn arb_leaf() -> impl Strategy<Value = Expr> {
        prop_oneof![
            arb_location().prop_map(Expr::MatchesLocation),
            (any::<u32>(), 0u8..=32).prop_map(|(a, p)| {
                let network = mask_ip(IpAddr::V4(a.into()), p, p);
                Expr::InSubnet { network, prefix: p }
            }),
            (any::<u128>(), 0u8..=128).prop_map(|(a, p)| {
                let network = mask_ip(IpAddr::V6(a.into()), p, p);
                Expr::InSubnet { network, prefix: p }
            }),
            "[a-z0-9.\"\\\\ *_-]{0,12}[a-z0-9\"\\\\*_-]"
                .prop_map(|s| Expr::DomainEq(s.trim().to_string()))
                .prop_filter(
                    "no trailing dot or space",
                    |e| matches!(e, Expr::DomainEq(s) if normalize_domain(s) == *s)
                ),
            "[a-z0-9.-]{0,12}[a-z0-9-]".prop_map(Expr::DomainEndsWith),
            any::<u16>().prop_map(|c| Expr::TypeEq(QueryType::from_code(c))),
            any::<bool>().prop_map(Expr::Const),
        ]
    }

    fn arb_expr() -> impl Strategy<Value = Expr> {
        arb_leaf().prop_recursive(6, 64, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone())
                    .prop_map(|(a, b)| Expr::And(Box::new(a), Box::new(b))),
                (inner.clone(), inner.clone())
                    .prop_map(|(a, b)| Expr::Or(Box::new(a), Box::new(b))),
                inner.prop_map(|a| Expr::Not(Box::new(a))),
            ]
        })
    }

    fn arb_facts() -> impl Strategy<Value = (IpAddr, Option<Location>, String, u16)> {
        (
            prop_oneof![
                any::<u32>().prop_map(|a| IpAddr::V4(a.into())),
                any::<u128>().prop_map(|a| IpAddr::V6(a.into())),
            ],
            proptest::option::of(arb_location()),
            "\\PC{0,20}",
            any::<u16>(),
        )
    }

    proptest! {
        #[test]
        fn display_reads_back(e in arb_expr()) {
            let text = e.to_string();
            let back = Expr::parse(&text);
            prop_assert_eq!(back, Ok(e), "text: {}", text);
        }

        #[test]
        fn eval_never_panics(e in arb_expr(), (client, location, qname, code) in arb_facts()) {
            let f = RequestFacts {
                client,
                client_location: location.as_ref(),
                qname: &qname,
                qtype: QueryType::from_code(code),
            };
            let v = e.eval(&f);
            // `!` really negates.
            prop_assert_eq!(Expr::Not(Box::new(e)).eval(&f), !v);
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,80}") {
            let _ = Expr::parse(&s);
        }

        #[test]
        fn parse_never_panics_on_near_misses(
            parts in proptest::collection::vec(prop_oneof![
                Just("CLIENT.IP.SRC.MATCHES_LOCATION"), Just("CLIENT.IP.SRC.IN_SUBNET"),
                Just("DNS.REQ.QUESTION.DOMAIN.EQ"), Just("DNS.REQ.QUESTION.TYPE.EQ"),
                Just("("), Just(")"), Just("\""), Just("\\"), Just("&&"), Just("||"), Just("!"),
                Just("10.0.0.0/8"), Just("::/0"), Just("Europe.*"), Just("true"), Just(" "), Just("é"),
            ], 0..24)
        ) {
            let s: String = parts.concat();
            if let Err(e) = Expr::parse(&s) {
                prop_assert!(e.column >= 1 && e.column <= s.chars().count() + 1, "{} in {:?}", e, s);
            }
        }
    }
}
