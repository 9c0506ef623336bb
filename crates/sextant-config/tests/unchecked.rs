//! A service that nothing checks (no monitor bound, no metric exchange
//! with its site) is warned about at its line, saying how to fix it;
//! `-healthMonitor NO` says so on purpose and silences the warning.

mod support;

use sextant_core::{HealthSource, ServiceId};
use support::conf;

const TEXT: &str = "\
add gslb site here 10.0.0.1 -siteType LOCAL
add gslb site there 10.0.0.2 -siteType REMOTE
add gslb site quiet 10.0.0.3 -siteType REMOTE -metricExchange DISABLED
add lb monitor tcp TCP
add gslb service local-bare 10.1.0.1 HTTP 80 -siteName here
add gslb service local-mon 10.1.0.2 HTTP 80 -siteName here
bind gslb service local-mon -monitorName tcp
add gslb service local-no 10.1.0.3 HTTP 80 -siteName here -healthMonitor NO
add gslb service remote-mep 10.2.0.1 HTTP 80 -siteName there
add gslb service remote-quiet 10.3.0.1 HTTP 80 -siteName quiet
add gslb service mon-no 10.1.0.4 HTTP 80 -siteName here -healthMonitor NO
bind lb monitor tcp mon-no
";

#[test]
fn a_service_nothing_checks_is_warned_about_at_its_line() {
    let m = conf(TEXT);
    let sources: Vec<HealthSource> = (0..m.services.len())
        .map(|i| m.health_source(ServiceId::new(i as u32)))
        .collect();
    assert_eq!(
        sources,
        vec![
            HealthSource::None,
            HealthSource::Monitors,
            HealthSource::NoneByChoice,
            HealthSource::MetricExchange,
            HealthSource::None,
            HealthSource::Monitors,
        ]
    );
    let unchecked: Vec<&String> = m
        .warnings
        .iter()
        .filter(|w| w.contains("nothing checks it"))
        .collect();
    assert_eq!(
        unchecked,
        vec![
            "t.conf:5: service local-bare: nothing checks it (no monitor bound, and its site does not report it over metric exchange), so it is UP whatever happens to it; bind a monitor (bind gslb service local-bare -monitorName MONITOR), or give the service -healthMonitor NO to say that nothing is to check it",
            "t.conf:10: service remote-quiet: nothing checks it (no monitor bound, and its site does not report it over metric exchange), so it is UP whatever happens to it; bind a monitor (bind gslb service remote-quiet -monitorName MONITOR), or give the service -healthMonitor NO to say that nothing is to check it",
        ]
    );
    // -healthMonitor NO with a monitor bound changes nothing, and says so.
    let no_with_monitor: Vec<&String> = m
        .warnings
        .iter()
        .filter(|w| w.contains("-healthMonitor NO is accepted"))
        .collect();
    assert_eq!(no_with_monitor.len(), 1, "{:?}", m.warnings);
    assert!(no_with_monitor[0].starts_with("t.conf:11: service mon-no: "));
}

#[test]
fn without_a_local_site_in_the_file_nothing_is_said() {
    let text = TEXT.replace(" -siteType LOCAL", "");
    let m = conf(&text);
    assert!(
        m.warnings.iter().all(|w| !w.contains("nothing checks it")),
        "{:?}",
        m.warnings
    );
}
