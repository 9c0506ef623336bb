#!/usr/bin/env bash
# What one answer costs the whole server, in instructions, for each kind of
# answer of bench/peers.sh: Sextant (release build) with the peers bench's
# configurations runs under callgrind, dnsperf sends QUERIES queries of one
# name at a rate callgrind keeps up with, and the instructions the server
# executed meanwhile (every thread, user space: parsing, the decision, the
# answer, the socket loop; not the kernel, whose share is the same for
# every kind) are divided by the queries answered. Instruction counts do
# not move with the machine's load, unlike queries/s, so this shows
# differences of a few percent that bench/peers.sh cannot. The idle server's
# own instructions over as long a time (timers, monitors) are measured
# first and subtracted. Prints a table and each row's ratio to the
# round-robin answer (failover). Needs valgrind and dnsperf.
#
#   bench/peers/answer-cost.sh
#   NAMES="failover geo pl" QUERIES=5000 bench/peers/answer-cost.sh
#   SERVE_ARGS="--query-log /dev/null" bench/peers/answer-cost.sh   # the query log's cost
#
# Raw output (dnsperf, callgrind dumps) under bench/out/answer-cost/.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

NAMES="${NAMES:-failover w10 wu geo pl static}"
QUERIES="${QUERIES:-20000}"
RATE="${RATE:-2000}" # queries/s; callgrind runs the server some 50x slower
PORT="${PORT:-5481}"
# Extra arguments to `sextant serve` (word-split), e.g. the query log.
SERVE_ARGS="${SERVE_ARGS:-}"
API_PORT="${API_PORT:-8281}"
ADDR=127.0.0.1
for tool in valgrind callgrind_control dnsperf dig python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "answer-cost: $tool is missing (apt-get install valgrind dnsperf bind9-dnsutils)" >&2; exit 1; }
done

BIN="$(bench_release_bin)"
OUT="$PWD/bench/out/answer-cost"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sextant-answer-cost.XXXXXX")"
PIDS=()
cleanup() {
    local i
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do bench_stop_pid "${PIDS[$i]}"; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_start_listeners "$OUT/listen.log"
PIDS+=("$BENCH_LISTENER_PID")
cat bench/peers/sextant.conf bench/peers/sextant-prefloc.conf > "$WORK/sextant-pl.conf"

# start INSTANCE CONFIG PORT API_PORT: the server under callgrind, counting
# from the start (the counters are zeroed before each measured window).
start() {
    # shellcheck disable=SC2086 # SERVE_ARGS is a list of arguments
    RUST_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$WORK/$1.cg" \
        "$BIN" serve --config "$2" --dns-listen "$ADDR:$3" --api-listen "$ADDR:$4" \
        --udp-workers 1 $SERVE_ARGS > "$OUT/$1.log" 2>&1 &
    PIDS+=("$!")
    eval "PID_$1=$!"
    bench_wait_answer "$!" "$ADDR" "$3" static.peers.example '^127\.0\.60\.' \
        || { echo "answer-cost: $1 did not start; its log:" >&2; cat "$OUT/$1.log" >&2; exit 1; }
}
start plain bench/peers/sextant.conf "$PORT" "$API_PORT"
start pl "$WORK/sextant-pl.conf" $((PORT + 1)) $((API_PORT + 1))
sleep 5 # the failover monitors' first probes

# window PID OUT_FILE CMD...: zeroes PID's counters, runs CMD, dumps them,
# and prints the instructions counted in between.
window() {
    local pid="$1" out="$2"
    shift 2
    callgrind_control -z "$pid" > /dev/null 2>&1
    "$@"
    callgrind_control -d "$pid" > /dev/null 2>&1
    # The newest dump of that process holds the window's totals.
    local dump
    dump="$(ls -t "$WORK"/*.cg.* 2>/dev/null | head -1)"
    cp "$dump" "$out"
    awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

secs=$(( (QUERIES + RATE - 1) / RATE ))
idle="$(window "$PID_plain" "$OUT/idle.cg" sleep "$secs")"
echo "idle server: $idle instructions in $secs s (subtracted from each row)" | tee "$OUT/summary.txt"

printf '| answer | name | queries answered | instructions per answer | / failover |\n|---|---|---:|---:|---:|\n' \
    | tee -a "$OUT/summary.txt"
declare -A PER
for n in $NAMES; do
    if [ "$n" = pl ]; then pid="$PID_pl"; port=$((PORT + 1)); else pid="$PID_plain"; port="$PORT"; fi
    echo "$n.peers.example A" > "$WORK/q.txt"
    ir="$(window "$pid" "$OUT/$n.cg" sh -c "dnsperf -s $ADDR -p $port -d $WORK/q.txt -c 1 -T 1 \
        -q 20 -t 2 -Q $RATE -n $QUERIES > $OUT/dnsperf-$n.txt 2>&1 || true")"
    done_n="$(bench_field "$OUT/dnsperf-$n.txt" 'Queries completed:')"
    [ -n "$done_n" ] && [ "$done_n" -gt 0 ] || { echo "answer-cost: no answers for $n; see $OUT/dnsperf-$n.txt" >&2; exit 1; }
    PER[$n]="$(awk -v ir="$ir" -v idle="$idle" -v q="$done_n" 'BEGIN { printf "%.0f", (ir - idle) / q }')"
done
for n in $NAMES; do
    ratio="$(awk -v a="${PER[$n]}" -v b="${PER[failover]:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }')"
    printf '| %s | %s.peers.example | %s | %s | %s |\n' "$n" "$n" \
        "$(bench_field "$OUT/dnsperf-$n.txt" 'Queries completed:')" "${PER[$n]}" "$ratio" | tee -a "$OUT/summary.txt"
done
