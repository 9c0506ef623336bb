#!/usr/bin/env bash
# VRRP failover benchmark: failover and failback as a client sees them, the
# longest gap in echo replies from the VIP pinged every 5 ms, in the VRRP lab
# of crates/sextant-test-support (two nodes and a client on a Linux bridge,
# in network namespaces of its own). Bounded: every wait has a deadline.
#
#   bench/vrrp-failover.sh                 # keepalived, 3 trials of each case
#   TRIALS=10 bench/vrrp-failover.sh
#   INTERVALS=0.1 FAILURES=hard VMAC=on bench/vrrp-failover.sh
#   IMPL=keepalived bench/vrrp-failover.sh # the implementation under test
#
# Cases: advert interval (INTERVALS, seconds: 1 and 0.1) x failure
# (FAILURES: graceful = the implementation's own stop, priority 0; hard =
# the master's cable cut and its process SIGKILLed) x virtual MAC (VMAC: off,
# on); each trial measures the failover and then the failback (the node comes
# back and preempts). Node 0 has priority 200, node 1 priority 100.
# Prints a table (median and every trial); the table and the driver's log go
# to bench/out/. Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

IMPL="${IMPL:-keepalived}"
export IMPL
export TRIALS="${TRIALS:-3}"
export INTERVALS="${INTERVALS:-1,0.1}"
export FAILURES="${FAILURES:-graceful,hard}"
export VMAC="${VMAC:-off,on}"
export PING_MS="${PING_MS:-5}"

if [ "$(id -u)" -ne 0 ]; then
    echo "bench: run as root (network namespaces, raw sockets)" >&2
    exit 1
fi
{ command -v ip >/dev/null 2>&1 && { [ "$IMPL" != keepalived ] || command -v keepalived >/dev/null 2>&1 \
    || [ -x /usr/sbin/keepalived ]; }; } || scripts/setup.sh
command -v ip >/dev/null 2>&1 || { echo "bench: ip is missing (scripts/setup.sh)" >&2; exit 1; }
if [ "$IMPL" = keepalived ] && ! command -v keepalived >/dev/null 2>&1 && [ ! -x /usr/sbin/keepalived ]; then
    echo "bench: keepalived is missing (scripts/setup.sh)" >&2
    exit 1
fi

OUT="$PWD/bench/out"
mkdir -p "$OUT"
echo "== building the driver (crates/sextant-test-support/examples/vrrp_failover.rs)" >&2
cargo build --release -q -p sextant-test-support --example vrrp_failover
echo "== $IMPL: intervals $INTERVALS, failures $FAILURES, vmac $VMAC, $TRIALS trials" >&2
# The driver bounds each wait (convergence within 3 x Master_Down_Interval
# + 10 s); timeout bounds the whole run as well.
timeout 1800 cargo run --release -q -p sextant-test-support --example vrrp_failover \
    2> >(tee "$OUT/vrrp-failover-$IMPL.log" >&2) | tee "$OUT/vrrp-failover-$IMPL.txt"
