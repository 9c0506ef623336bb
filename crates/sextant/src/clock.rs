//! The daemon's one time base.
//!
//! Every deadline — the state engine's publication, hold, learning and
//! readiness timers, LDNS expiry, datacenter access periods, metric
//! exchange's keepalives and the VRRP timers — is a [`Duration`] on one
//! monotonic clock that starts when the daemon does. A step of the system
//! clock (NTP, `date -s`, a resumed VM) therefore moves no deadline.
//!
//! Wall-clock time is read in one place, [`Clock::wall`], and only to show
//! a moment to people (the API's timestamps): it is the wall clock *now*
//! minus how long ago the moment was on the monotonic clock, so a shown
//! time follows a corrected wall clock instead of a stale offset.
//!
//! (DNS cookies carry Unix time on the wire, RFC 9018; that protocol field
//! is `sextant_dns`'s business and no deadline depends on it.)

use std::time::{Duration, Instant, SystemTime};

/// The monotonic time base, cheap to copy into every task.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Clock {
        Clock {
            origin: Instant::now(),
        }
    }

    /// The instant that is zero on this clock, for edges that keep their
    /// own `Instant` arithmetic (metric exchange's driver).
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Time since the daemon started: the `now` every machine is given.
    pub fn now(&self) -> Duration {
        self.since(Instant::now())
    }

    /// `at` on this clock.
    pub fn since(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.origin)
    }

    /// The tokio instant of a deadline on this clock, to sleep until it.
    pub fn deadline(&self, at: Duration) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.origin + at)
    }

    /// The wall-clock time of moment `at`, for display only.
    /// The wall clock now: for a moment to show (an event's time) or to
    /// keep across restarts (when an operator disabled a service), never
    /// for a deadline.
    pub fn wall_now(&self) -> SystemTime {
        SystemTime::now()
    }

    pub fn wall(&self, at: Duration) -> SystemTime {
        shown_at(at, self.now(), SystemTime::now())
    }
}

/// The wall-clock time of monotonic moment `at`, seen at monotonic `now`
/// when the wall clock reads `wall_now`.
fn shown_at(at: Duration, now: Duration, wall_now: SystemTime) -> SystemTime {
    match now.checked_sub(at) {
        Some(ago) => wall_now.checked_sub(ago).unwrap_or(SystemTime::UNIX_EPOCH),
        None => wall_now + (at - now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sextant_core::ServiceId;

    #[test]
    fn a_moment_is_shown_relative_to_the_wall_clock_read_now() {
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = Duration::from_secs(100);
        // Seen 20 s later: 20 s before the wall clock.
        assert_eq!(
            shown_at(at, Duration::from_secs(120), wall),
            wall - Duration::from_secs(20)
        );
        // After the wall clock was stepped back an hour, the same moment is
        // shown an hour earlier too: display follows the corrected clock.
        let stepped = wall - Duration::from_secs(3600);
        assert_eq!(
            shown_at(at, Duration::from_secs(120), stepped),
            stepped - Duration::from_secs(20)
        );
        // A deadline still ahead is shown ahead.
        assert_eq!(
            shown_at(Duration::from_secs(130), Duration::from_secs(120), wall),
            wall + Duration::from_secs(10)
        );
    }

    /// Seed-style configuration: p2's services keep their state for 10 s
    /// after metric exchange with p2 is lost (`-GSLBSvcStateDelayTime`).
    const DELAYED: &str = "\
add service dns1 127.0.0.1 ADNS 53
set gslb parameter -GSLBSvcStateDelayTime 10
add gslb site p1 127.0.0.1 -siteType LOCAL
add gslb site p2 127.0.0.2
add gslb service far 10.2.0.1 HTTP 80 -siteName p2
add gslb vserver vs HTTP -lbMethod ROUNDROBIN
bind gslb vserver vs -serviceName far
bind gslb vserver vs -domainName www.example.com -TTL 5
";

    /// The daemon's loop in miniature: the engine's `now` comes from the
    /// clock at a monotonic instant while the wall clock is stepped an hour
    /// back and then two hours forward; the hold timer fires exactly 10 s
    /// (monotonic) after the loss, and the moment of the change is shown on
    /// the stepped wall clock.
    #[test]
    fn stepping_the_wall_clock_an_hour_either_way_moves_no_engine_timer() {
        use sextant_state::{Effect, Engine, Event, PeerServices, ReportedService};
        let model = std::sync::Arc::new(
            sextant_config::parse_appliance(DELAYED, "delayed.conf").expect("configuration"),
        );
        let clock = Clock::start();
        let at = |s: f64| clock.since(clock.origin() + Duration::from_secs_f64(s));
        let mut wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let far_state = |effects: &[Effect]| {
            effects.iter().rev().find_map(|e| match e {
                Effect::Publish(s) => Some((
                    s.is_up(ServiceId::new(0)),
                    s.status().get(ServiceId::new(0))?.last_change,
                )),
                _ => None,
            })
        };
        let (mut engine, _) = Engine::new(model, 1, at(0.0));
        engine.apply(
            Event::PeerUp {
                site: "p2".into(),
                via: None,
            },
            at(1.0),
        );
        let up = engine.apply(
            Event::PeerServices(PeerServices {
                site: "p2".into(),
                via: None,
                full: true,
                entries: vec![ReportedService {
                    name: "far".into(),
                    ip: "10.2.0.1".parse().expect("address"),
                    port: 80,
                    public_ip: None,
                    public_port: None,
                    up: true,
                    metrics: Default::default(),
                }],
                removed: Vec::new(),
            }),
            at(1.0),
        );
        assert_eq!(far_state(&up).map(|s| s.0), Some(true));

        // The wall clock is stepped back an hour, then the link is lost.
        wall -= Duration::from_secs(3600);
        engine.apply(
            Event::PeerDown {
                site: "p2".into(),
                reason: "no keepalive".into(),
            },
            at(9.0),
        );
        assert_eq!(
            engine.next_wake(),
            Some(at(19.0)),
            "the hold ends 10 s later"
        );

        // Stepped forward two hours: the hold still has 0.1 s to run.
        wall += Duration::from_secs(7200);
        let early = engine.apply(Event::Tick, at(18.9));
        assert_ne!(far_state(&early).map(|s| s.0), Some(false), "fired early");
        assert_eq!(engine.next_wake(), Some(at(19.0)));
        let due = engine.apply(Event::Tick, at(19.0));
        let (up, changed) = far_state(&due).expect("a publication at the deadline");
        assert!(!up, "the hold ended on time");
        let changed = changed.expect("a moment of change");
        assert_eq!(changed, at(19.0));
        // Shown a second later on the (stepped) wall clock: a second ago.
        assert_eq!(
            shown_at(changed, at(20.0), wall),
            wall - Duration::from_secs(1)
        );
    }

    #[test]
    fn deadlines_are_measured_from_the_origin() {
        let clock = Clock::start();
        let later = clock.origin() + Duration::from_millis(1500);
        assert_eq!(clock.since(later), Duration::from_millis(1500));
        assert_eq!(clock.since(clock.origin()), Duration::ZERO);
    }
}
