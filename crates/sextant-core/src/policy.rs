//! DNS policies: an expression over the request, and the action it triggers.
//!
//! `add dns policy NAME "EXPR" ACTION` binds an [`Expr`] to a [`DnsAction`];
//! `bind dns global POLICY PRIORITY` puts it in the global request chain,
//! evaluated in priority order for every query.

use std::net::IpAddr;

use crate::decide::QueryType;
use crate::location::Location;

/// Index of a [`DnsAction`] in `Model::dns_actions`.
pub type DnsActionId = u32;
/// Index of a [`DnsPolicy`] in `Model::dns_policies`.
pub type DnsPolicyId = u32;

/// A policy rule, as parsed from the appliance's expression syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    /// `CLIENT.IP.SRC.MATCHES_LOCATION("q1.q2.*")`: the client's location
    /// perfectly matches the pattern.
    MatchesLocation(Location),
    /// `CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8)`; the address is stored masked.
    InSubnet { network: IpAddr, prefix: u8 },
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
