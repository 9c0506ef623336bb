#!/usr/bin/env bash
# VRRP failover benchmark: failover and failback as a client sees them, the
# longest gap in echo replies from the VIP pinged every 5 ms, in the VRRP lab
# of crates/sextant-test-support (two nodes and a client on a Linux bridge,
# in network namespaces of its own). Bounded: every wait has a deadline.
#
#   bench/vrrp-failover.sh                 # keepalived, 3 trials of each case
#   TRIALS=10 bench/vrrp-failover.sh
#   INTERVALS=0.1 FAILURES=hard VMAC=on bench/vrrp-failover.sh
#   IMPL=keepalived bench/vrrp-failover.sh # one implementation only
#
# IMPL (default "keepalived,sextant") runs each in turn in the same
# topology and then prints Sextant's ratio to keepalived per case (median
# and worst trial; below 1 is faster).
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

IMPLS="${IMPL:-keepalived,sextant}"
export TRIALS="${TRIALS:-3}"
export INTERVALS="${INTERVALS:-1,0.1}"
export FAILURES="${FAILURES:-graceful,hard}"
export VMAC="${VMAC:-off,on}"
export PING_MS="${PING_MS:-5}"

if [ "$(id -u)" -ne 0 ]; then
    echo "bench: run as root (network namespaces, raw sockets)" >&2
    exit 1
fi
if ! command -v ip >/dev/null 2>&1 || { ! command -v keepalived >/dev/null 2>&1 && [ ! -x /usr/sbin/keepalived ]; }; then
    scripts/setup.sh
fi
command -v ip >/dev/null 2>&1 || { echo "bench: ip is missing (scripts/setup.sh)" >&2; exit 1; }

OUT="$PWD/bench/out"
mkdir -p "$OUT"
echo "== building the driver (crates/sextant-test-support/examples/vrrp_failover.rs) and sextant" >&2
cargo build --release -q -p sextant-test-support --example vrrp_failover
cargo build --release -q -p sextant
export SEXTANT_BIN="$PWD/target/release/sextant"
IFS=, read -r -a impls <<< "$IMPLS"
for IMPL in "${impls[@]}"; do
    export IMPL
    echo "== $IMPL: intervals $INTERVALS, failures $FAILURES, vmac $VMAC, $TRIALS trials" >&2
    # The driver bounds each wait (convergence within 3 x Master_Down_Interval
    # + 10 s); timeout bounds the whole run as well.
    SUMMARY="$OUT/vrrp-failover-$IMPL.tsv" timeout 1800 \
        cargo run --release -q -p sextant-test-support --example vrrp_failover \
        2> >(tee "$OUT/vrrp-failover-$IMPL.log" >&2) | tee "$OUT/vrrp-failover-$IMPL.txt"
done

# Side by side whenever both have a table (one may come from an earlier
# run: IMPL=sextant after a change re-measures Sextant only).
if [ -f "$OUT/vrrp-failover-sextant.tsv" ] && [ -f "$OUT/vrrp-failover-keepalived.tsv" ]; then
    echo
    echo "sextant / keepalived (longest gap; median of the trials, and the worst trial)"
    echo "(tables of $(date -r "$OUT/vrrp-failover-sextant.tsv" '+%F %T') and $(date -r "$OUT/vrrp-failover-keepalived.tsv" '+%F %T'))"
    printf '%8s  %-8s  %-4s  %18s  %18s  %18s  %18s\n' interval failure vmac \
        "failover median" "failover worst" "failback median" "failback worst"
    join -t $'\t' \
        <(awk -F'\t' '{print $1"/"$2"/"$3"\t"$4"\t"$5"\t"$6"\t"$7}' "$OUT/vrrp-failover-sextant.tsv" | sort) \
        <(awk -F'\t' '{print $1"/"$2"/"$3"\t"$4"\t"$5"\t"$6"\t"$7}' "$OUT/vrrp-failover-keepalived.tsv" | sort) |
    awk -F'\t' '
        function cell(s, k) { return (s == "-" || k == "-" || k == 0) ? "-" : sprintf("%.3f/%.3f=%.2f", s, k, s / k) }
        { split($1, c, "/"); printf "%7ss  %-8s  %-4s  %18s  %18s  %18s  %18s\n", c[1], c[2], c[3],
            cell($2, $6), cell($3, $7), cell($4, $8), cell($5, $9) }'
fi
