//! systemd's notify protocol (sd_notify(3)) for `sextant serve` under a
//! `Type=notify` unit (packaging/sextant.service): READY=1 once DNS
//! answers, RELOADING=1/READY=1 around a SIGHUP reload with its outcome in
//! STATUS=, STOPPING=1 at SIGTERM, and WATCHDOG=1 pings that only a state
//! task still taking inputs lets through.
//!
//! Without `NOTIFY_SOCKET` (not started by systemd) nothing is sent and
//! nothing is logged.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sd_notify::NotifyState;
use tokio::sync::{mpsc, oneshot};
use tracing::{info, warn};

/// Sends notifications to the service manager, if there is one.
#[derive(Debug, Default)]
pub struct Notifier {
    /// A failed send is logged once (the manager went away, or the socket
    /// is not one): the daemon goes on serving either way.
    failure_logged: AtomicBool,
}

impl Notifier {
    fn send(&self, states: &[NotifyState]) {
        // `notify` sends nothing and succeeds when NOTIFY_SOCKET is unset.
        if let Err(e) = sd_notify::notify(states)
            && !self.failure_logged.swap(true, Ordering::Relaxed)
        {
            warn!(error = %e, "cannot notify systemd (NOTIFY_SOCKET)");
        }
    }

    /// What the daemon is doing, as `systemctl status` shows it.
    pub fn status(&self, status: &str) {
        self.send(&[NotifyState::Status(status)]);
    }

    /// DNS answers (or, on a child site, the first report is ready).
    pub fn ready(&self, status: &str) {
        self.send(&[NotifyState::Ready, NotifyState::Status(status)]);
    }

    /// A SIGHUP reload starts: with the time of the signal on the
    /// monotonic clock, as `Type=notify-reload` (systemd ≥ 253) wants it.
    pub fn reloading(&self) {
        match NotifyState::monotonic_usec_now() {
            Ok(now) => self.send(&[
                NotifyState::Reloading,
                now,
                NotifyState::Status("reloading the configuration"),
            ]),
            Err(_) => self.send(&[
                NotifyState::Reloading,
                NotifyState::Status("reloading the configuration"),
            ]),
        }
    }

    /// The reload is over (its outcome went out as STATUS= before).
    pub fn reloaded(&self) {
        self.send(&[NotifyState::Ready]);
    }

    /// SIGTERM or SIGINT.
    pub fn stopping(&self, status: &str) {
        self.send(&[NotifyState::Stopping, NotifyState::Status(status)]);
    }

    /// The watchdog's keep-alive.
    pub fn watchdog(&self) {
        self.send(&[NotifyState::Watchdog]);
    }
}

/// How often to ping the watchdog: half of `WATCHDOG_USEC` (as
/// sd_watchdog_enabled(3) advises), only when systemd set it for this
/// process (`WATCHDOG_PID` ours or unset) and there is a socket to ping.
pub fn watchdog_period() -> Option<Duration> {
    std::env::var_os("NOTIFY_SOCKET")?;
    ping_period(sd_notify::watchdog_enabled()?)
}

/// Half the watchdog timeout; none for a zero timeout (no watchdog).
fn ping_period(timeout: Duration) -> Option<Duration> {
    (!timeout.is_zero()).then_some(timeout / 2)
}

/// `STATUS=` once a configuration is in force.
pub fn loaded_status(generation: u64, services: usize) -> String {
    format!("configuration generation {generation} loaded ({services} services)")
}

/// `STATUS=` after a reload that failed: the first `FILE:LINE: reason` of
/// the error (STATUS is one line), how many more there were, and the
/// generation still in force.
pub fn reload_failed_status(error: &str, running: u64) -> String {
    let mut lines = error
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        // The "N error(s) in the configuration:" heading of `serve::load`.
        .filter(|l| !l.ends_with("in the configuration:"));
    let first = lines.next().unwrap_or("unknown error");
    let more = match lines.count() {
        0 => String::new(),
        1 => " (and 1 more error)".to_string(),
        n => format!(" (and {n} more errors)"),
    };
    format!("reload failed: {first}{more}; still running generation {running}")
}

/// Pings the watchdog every `period`, but only after the state task has
/// answered a liveness probe (`make_probe` wraps the reply channel into
/// one of its inputs) within that period: a state task that is stuck, or
/// so far behind that its inputs wait longer than a period, stops the
/// pings and systemd restarts the daemon after `WatchdogSec=`. Ends when
/// the state task is gone.
pub async fn keep_alive<T>(
    period: Duration,
    inputs: mpsc::Sender<T>,
    make_probe: impl Fn(oneshot::Sender<()>) -> T,
    mut ping: impl FnMut(),
) {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut withheld = false;
    loop {
        tick.tick().await;
        let (reply, answered) = oneshot::channel();
        let probe =
            async { inputs.send(make_probe(reply)).await.is_ok() && answered.await.is_ok() };
        if tokio::time::timeout(period, probe).await == Ok(true) {
            ping();
            if withheld {
                info!("the state task answers again; watchdog pings resume");
                withheld = false;
            }
        } else if inputs.is_closed() {
            return;
        } else if !withheld {
            warn!(
                ?period,
                "the state task did not answer a liveness probe in time; watchdog pings withheld"
            );
            withheld = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn pings_at_half_the_timeout() {
        assert_eq!(
            ping_period(Duration::from_secs(30)),
            Some(Duration::from_secs(15))
        );
        assert_eq!(ping_period(Duration::ZERO), None);
    }

    #[test]
    fn status_lines() {
        assert_eq!(
            loaded_status(3, 12),
            "configuration generation 3 loaded (12 services)"
        );
        let error = "2 error(s) in the configuration:\n\
                     /etc/sextant/sextant.conf:7: unknown command `add gslb vserv`\n\
                     /etc/sextant/sextant.conf:9: unknown service `web-9`";
        assert_eq!(
            reload_failed_status(error, 2),
            "reload failed: /etc/sextant/sextant.conf:7: unknown command `add gslb vserv` \
             (and 1 more error); still running generation 2"
        );
        assert_eq!(
            reload_failed_status("/x.conf: cannot read: No such file or directory", 1),
            "reload failed: /x.conf: cannot read: No such file or directory; still running generation 1"
        );
    }

    /// A stand-in state task on the same kind of channel: it answers the
    /// probes while `stuck` is false and stops taking inputs (as a task
    /// blocked in an effect does) once it is set.
    #[tokio::test(flavor = "current_thread")]
    async fn a_stuck_state_task_stops_the_pings() {
        let period = Duration::from_millis(20);
        let (tx, mut rx) = mpsc::channel::<oneshot::Sender<()>>(16);
        let stuck = Arc::new(AtomicBool::new(false));
        let stuck_task = Arc::clone(&stuck);
        let state_task = tokio::spawn(async move {
            while let Some(reply) = rx.recv().await {
                if stuck_task.load(Ordering::Relaxed) {
                    // Holds the receiver and takes nothing more.
                    std::future::pending::<()>().await;
                }
                let _ = reply.send(());
            }
        });
        let pings = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&pings);
        let watchdog = tokio::spawn(keep_alive(
            period,
            tx,
            |r| r,
            move || {
                counted.fetch_add(1, Ordering::Relaxed);
            },
        ));
        // Answering: pings come.
        while pings.load(Ordering::Relaxed) < 3 {
            tokio::time::sleep(period).await;
        }
        stuck.store(true, Ordering::Relaxed);
        // The probe in flight may still be answered before the task sees
        // `stuck`; after that one, none.
        tokio::time::sleep(period * 3).await;
        let at_stall = pings.load(Ordering::Relaxed);
        tokio::time::sleep(period * 10).await;
        assert_eq!(
            pings.load(Ordering::Relaxed),
            at_stall,
            "a stuck state task must stop the pings"
        );
        // The state task gone: the watchdog ends.
        state_task.abort();
        let _ = state_task.await;
        tokio::time::timeout(Duration::from_secs(5), watchdog)
            .await
            .expect("the watchdog ends with the state task")
            .expect("watchdog task");
    }
}
