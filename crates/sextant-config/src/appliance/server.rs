//! `add server NAME IP`: the appliance's named addresses. Services may name
//! a server instead of giving an address (`add gslb service S SRV HTTP 80`,
//! `add service S SRV ADNS 53`), as saved configurations do.

use std::net::IpAddr;

use super::{Arity, OptSpec, Reader, context, opt};
use crate::lexer::Token;
use crate::scalar;

/// Options a saved file writes on `add server`; none changes an address.
const OPTS: &[OptSpec] = &[
    opt("state", Arity::One),
    opt("td", Arity::One),
    opt("translationIp", Arity::One),
    opt("translationMask", Arity::One),
    opt("domainResolveRetry", Arity::One),
    opt("IPv6Address", Arity::One),
];

/// `add server NAME IP [options]`.
pub(super) fn add_server(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("add server", tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some([name, address]) = r.positional(line, &ctx, &args, &["NAME", "IP"]) else {
        return;
    };
    if let Some(o) = args.get("state")
        && o.value().eq_ignore_ascii_case("DISABLED")
    {
        r.error(
            line,
            &ctx,
            "-state DISABLED: disabled servers are not supported; remove the services that use this server, or enable it",
        );
    }
    let ip = match scalar::ip(address) {
        Ok(ip) => ip,
        Err(_) => {
            r.error(
                line,
                &ctx,
                format!(
                    "\"{address}\" is not an IP address; servers by domain name are not supported (Sextant answers with the addresses it is given): give the server's address"
                ),
            );
            return;
        }
    };
    let key = name.to_ascii_lowercase();
    if let Some((_, first)) = r.servers.get(&key) {
        let first = *first;
        r.error(
            line,
            &ctx,
            format!("server \"{name}\" is already defined on line {first}"),
        );
        return;
    }
    r.servers.insert(key, (ip, line));
}

impl Reader<'_> {
    /// The address a service gives: an IP, or the name of a server defined
    /// on an earlier line (as on the appliance, which needs the server
    /// first). `what` names the argument in messages.
    pub(crate) fn address_or_server(
        &mut self,
        line: usize,
        ctx: &str,
        what: &str,
        text: &str,
    ) -> Result<IpAddr, ()> {
        if let Ok(ip) = scalar::ip(text) {
            return Ok(ip);
        }
        if let Some((ip, _)) = self.servers.get(&text.to_ascii_lowercase()) {
            return Ok(*ip);
        }
        let why = scalar::ip(text).err().unwrap_or_default();
        self.error(
            line,
            ctx,
            format!(
                "{what}: \"{text}\" is neither an IP address ({why}) nor a server defined on an earlier line with \"add server {text} IP\""
            ),
        );
        Err(())
    }
}
