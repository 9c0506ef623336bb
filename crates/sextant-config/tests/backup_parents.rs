//! Backup parent lists (seed 001): "You cannot add a new site as a backup
//! parent. You must first add all the sites and then configure the site as
//! a backup parent." In the appliance syntax each name must be a site added
//! on an earlier line; in TOML a parent site defined anywhere in the file.
//! Errors about one name point at its line and column.

mod support;

use sextant_config::{ConfigError, parse_appliance, parse_toml};
use sextant_core::SiteId;
use support::{conf, toml};

fn conf_errors(text: &str) -> Vec<ConfigError> {
    match parse_appliance(text, "t.conf") {
        Ok(_) => panic!("expected errors, the text parsed:\n{text}"),
        Err(e) => e.errors,
    }
}

fn toml_errors(text: &str) -> Vec<ConfigError> {
    match parse_toml(text, "t.toml") {
        Ok(_) => panic!("expected errors, the text parsed:\n{text}"),
        Err(e) => e.errors,
    }
}

/// Exactly one error, at `line:column`, whose message has every part.
fn one_at(errs: &[ConfigError], line: usize, column: usize, parts: &[&str]) {
    assert_eq!(errs.len(), 1, "expected one error, got {errs:#?}");
    assert_eq!(
        (errs[0].line, errs[0].column),
        (line, Some(column)),
        "wrong place: {errs:#?}"
    );
    for p in parts {
        assert!(
            errs[0].message.contains(p),
            "message {:?} lacks {p:?}",
            errs[0].message
        );
    }
}

const SEED_SET: &str = "set gslb site SiteP1 -backupParentlist SiteP2 SiteP3\n";

// -- the seed's example, appliance syntax

#[test]
fn seed_example_after_all_sites_is_valid() {
    let text = format!(
        "add gslb site SiteP1 10.0.0.1\nadd gslb site SiteP2 10.0.0.2\nadd gslb site SiteP3 10.0.0.3\n{SEED_SET}"
    );
    let m = conf(&text);
    assert_eq!(
        m.sites[SiteId::new(0)].backup_parents,
        vec![SiteId::new(1), SiteId::new(2)]
    );
    assert!(m.sites[SiteId::new(1)].backup_parents.is_empty());
}

#[test]
fn seed_example_before_a_site_is_added_is_an_error_at_the_name() {
    let text = format!(
        "add gslb site SiteP1 10.0.0.1\nadd gslb site SiteP2 10.0.0.2\n{SEED_SET}add gslb site SiteP3 10.0.0.3\n"
    );
    let errs = conf_errors(&text);
    one_at(&errs, 3, 47, &[]);
    assert_eq!(
        errs[0].to_string(),
        "t.conf:3:47: set gslb site SiteP1: backup parent \"SiteP3\" is not a site yet: it is added on line 4, after this line; move that \"add gslb site\" line above this one (add all the sites first, then set the backup parents)"
    );
}

#[test]
fn seed_example_before_every_backup_site_names_each() {
    let text = format!(
        "add gslb site SiteP1 10.0.0.1\n{SEED_SET}add gslb site SiteP2 10.0.0.2\nadd gslb site SiteP3 10.0.0.3\n"
    );
    let errs = conf_errors(&text);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert_eq!((errs[0].line, errs[0].column), (2, Some(40)));
    assert!(
        errs[0]
            .message
            .contains("\"SiteP2\" is not a site yet: it is added on line 3")
    );
    assert_eq!((errs[1].line, errs[1].column), (2, Some(47)));
    assert!(
        errs[1]
            .message
            .contains("\"SiteP3\" is not a site yet: it is added on line 4")
    );
}

#[test]
fn a_site_never_added_says_how_to_add_it() {
    let text = format!("add gslb site SiteP1 10.0.0.1\nadd gslb site SiteP2 10.0.0.2\n{SEED_SET}");
    let errs = conf_errors(&text);
    one_at(&errs, 3, 47, &[]);
    assert_eq!(
        errs[0].to_string(),
        "t.conf:3:47: set gslb site SiteP1: backup parent \"SiteP3\" is not a site yet: add it with \"add gslb site SiteP3 IP\" before this line (add all the sites first, then set the backup parents)"
    );
}

#[test]
fn the_list_on_add_gslb_site_follows_the_same_rule() {
    // Valid: both backups are added on earlier lines.
    let m = conf(
        "add gslb site SiteP2 10.0.0.2\nadd gslb site SiteP3 10.0.0.3\nadd gslb site SiteP1 10.0.0.1 -backupParentlist SiteP2 SiteP3\n",
    );
    assert_eq!(
        m.sites[SiteId::new(2)].backup_parents,
        vec![SiteId::new(0), SiteId::new(1)]
    );
    // SiteP3 comes later.
    let errs = conf_errors(
        "add gslb site SiteP2 10.0.0.2\nadd gslb site SiteP1 10.0.0.1 -backupParentlist SiteP2 SiteP3\nadd gslb site SiteP3 10.0.0.3\n",
    );
    one_at(
        &errs,
        2,
        56,
        &[
            "add gslb site SiteP1: backup parent \"SiteP3\" is not a site yet",
            "added on line 3",
        ],
    );
}

#[test]
fn names_are_case_insensitive_and_quoted_names_count_from_the_quote() {
    let m = conf(
        "add gslb site SiteP1 10.0.0.1\nadd gslb site SiteP2 10.0.0.2\nset gslb site sitep1 -backupParentlist SITEP2\n",
    );
    assert_eq!(m.sites[SiteId::new(0)].backup_parents, vec![SiteId::new(1)]);
    // A tab and a quoted name: the column is in characters, at the quote.
    let errs = conf_errors(
        "add gslb site SiteP1 10.0.0.1\nset gslb site SiteP1\t-backupParentlist \"Site P9\"\n",
    );
    one_at(
        &errs,
        2,
        40,
        &["backup parent \"Site P9\" is not a site yet"],
    );
}

#[test]
fn a_later_set_after_the_sites_are_added_is_valid() {
    // The rule is about the line of the list: once every site is added, the
    // list can be set, and a later set replaces it.
    let m = conf(
        "add gslb site SiteP1 10.0.0.1\nadd gslb site SiteP2 10.0.0.2\nset gslb site SiteP1 -backupParentlist SiteP2\nadd gslb site SiteP3 10.0.0.3\nset gslb site SiteP1 -backupParentlist SiteP3 SiteP2\n",
    );
    assert_eq!(
        m.sites[SiteId::new(0)].backup_parents,
        vec![SiteId::new(2), SiteId::new(1)]
    );
}

#[test]
fn the_other_rules_still_hold_and_point_at_the_name() {
    let sites = "add gslb site p 10.0.0.1\nadd gslb site q 10.0.0.2\nadd gslb site c 10.0.0.3 -parentSite p\n";
    // Own backup parent.
    one_at(
        &conf_errors(&format!("{sites}set gslb site p -backupParentlist q p\n")),
        4,
        37,
        &["site \"p\" cannot be its own backup parent"],
    );
    // A child is no backup parent.
    one_at(
        &conf_errors(&format!("{sites}set gslb site q -backupParentlist c\n")),
        4,
        35,
        &["backup parent \"c\" is a child site (of \"p\")"],
    );
    // Twice.
    one_at(
        &conf_errors(&format!("{sites}set gslb site p -backupParentlist q Q\n")),
        4,
        37,
        &["backup parent \"q\" is listed twice"],
    );
    // At most five: the error points at the sixth.
    let many = "add gslb site p 10.0.0.1\nadd gslb site a 10.0.0.2\nadd gslb site b 10.0.0.3\nadd gslb site c 10.0.0.4\nadd gslb site d 10.0.0.5\nadd gslb site e 10.0.0.6\nadd gslb site f 10.0.0.7\nset gslb site p -backupParentlist a b c d e f\n";
    one_at(
        &conf_errors(many),
        8,
        45,
        &["6 backup parents given; at most 5"],
    );
    // Only parents have backup parents (about the option, so no column).
    let errs = conf_errors(&format!("{sites}set gslb site c -backupParentlist q\n"));
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!((errs[0].line, errs[0].column), (4, None));
    assert!(
        errs[0]
            .message
            .contains("only parent sites have backup parents")
    );
}

// -- TOML

const TOML_SITES: &str = "version = 1\n\n[[site]]\nname = \"SiteP1\"\nip = \"10.0.0.1\"\n";

#[test]
fn toml_backup_parents_may_be_defined_further_down() {
    let text = format!(
        "{TOML_SITES}backup_parents = [\"SiteP2\", \"SiteP3\"]\n\n[[site]]\nname = \"SiteP2\"\nip = \"10.0.0.2\"\n\n[[site]]\nname = \"SiteP3\"\nip = \"10.0.0.3\"\n"
    );
    let m = toml(&text);
    assert_eq!(
        m.sites[SiteId::new(0)].backup_parents,
        vec![SiteId::new(1), SiteId::new(2)]
    );
    // The same model as the appliance syntax with the sites added first.
    let c = conf(&format!(
        "add gslb site SiteP1 10.0.0.1\nadd gslb site SiteP2 10.0.0.2\nadd gslb site SiteP3 10.0.0.3\n{SEED_SET}"
    ));
    assert_eq!(m, c);
}

#[test]
fn toml_backup_parent_not_defined_is_an_error_at_the_name() {
    let text = format!(
        "{TOML_SITES}backup_parents = [\"SiteP2\", \"SiteP4\"]\n\n[[site]]\nname = \"SiteP2\"\nip = \"10.0.0.2\"\n"
    );
    let errs = toml_errors(&text);
    one_at(&errs, 6, 29, &[]);
    assert_eq!(
        errs[0].to_string(),
        "t.toml:6:29: [[site]] SiteP1: backup parent \"SiteP4\" is not defined (add a [[site]] table with name = \"SiteP4\"); a backup parent must be a parent site of this file"
    );
}

#[test]
fn toml_backup_parent_must_be_a_parent_site() {
    let text = format!(
        "{TOML_SITES}backup_parents = [\"c\"]\n\n[[site]]\nname = \"c\"\nip = \"10.0.0.2\"\nparent = \"SiteP1\"\n"
    );
    one_at(
        &toml_errors(&text),
        6,
        19,
        &["backup parent \"c\" is a child site (of \"SiteP1\")"],
    );
    let own = format!("{TOML_SITES}backup_parents = [\"sitep1\"]\n");
    one_at(
        &toml_errors(&own),
        6,
        19,
        &["cannot be its own backup parent"],
    );
}

#[test]
fn toml_multi_line_lists_point_at_each_line() {
    let text = format!(
        "{TOML_SITES}backup_parents = [\n  \"SiteP2\",\n  \"nope\",\n]\n\n[[site]]\nname = \"SiteP2\"\nip = \"10.0.0.2\"\n"
    );
    one_at(
        &toml_errors(&text),
        8,
        3,
        &["backup parent \"nope\" is not defined"],
    );
}
