//! Helpers the configuration tests share: parse a text that must be valid
//! (or must fail) in either syntax, and check one error.

#![allow(dead_code)]

use std::net::IpAddr;

use sextant_config::{parse_appliance, parse_toml};
use sextant_core::Model;

pub fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

/// An appliance-syntax text (`t.conf`) that must be valid.
pub fn conf(text: &str) -> Model {
    match parse_appliance(text, "t.conf") {
        Ok(m) => m,
        Err(e) => panic!("expected success, got:\n{e}"),
    }
}

/// A TOML text (`t.toml`) that must be valid.
pub fn toml(text: &str) -> Model {
    match parse_toml(text, "t.toml") {
        Ok(m) => m,
        Err(e) => panic!("expected success, got:\n{e}"),
    }
}

/// The errors of an appliance-syntax text that must be invalid, as (line,
/// message); each names the file.
pub fn conf_errors(text: &str) -> Vec<(usize, String)> {
    errors(parse_appliance(text, "t.conf").map(drop), "t.conf", text)
}

/// The same for TOML.
pub fn toml_errors(text: &str) -> Vec<(usize, String)> {
    errors(parse_toml(text, "t.toml").map(drop), "t.toml", text)
}

fn errors(
    parsed: Result<(), sextant_config::ConfigErrors>,
    file: &str,
    text: &str,
) -> Vec<(usize, String)> {
    match parsed {
        Ok(()) => panic!("expected errors, the text parsed:\n{text}"),
        Err(e) => e
            .errors
            .iter()
            .map(|e| {
                assert_eq!(e.file, file);
                (e.line, e.message.clone())
            })
            .collect(),
    }
}

/// Asserts exactly one error, on `line`, containing every one of `parts`.
pub fn one(errs: Vec<(usize, String)>, line: usize, parts: &[&str]) {
    assert_eq!(errs.len(), 1, "expected one error, got {errs:#?}");
    assert_eq!(errs[0].0, line, "wrong line: {errs:#?}");
    for p in parts {
        assert!(errs[0].1.contains(p), "message {:?} lacks {p:?}", errs[0].1);
    }
}

/// `m` without the warnings about services that nothing checks (no
/// monitor, no metric exchange): tests about other things leave their
/// services unmonitored; `unchecked.rs` is about those warnings.
pub fn without_unchecked(mut m: Model) -> Model {
    m.warnings.retain(|w| !w.contains(": nothing checks it ("));
    m
}
