#!/usr/bin/env bash
# Where Sextant's UDP path spends its time, for docs/performance.md
# ("profiles"): Sextant alone with bench/peers/sextant.conf, pinned to
# SERVER_CPU, dnsperf on CLIENT_CPU asking NAMES (default the weighted name).
#
#   bench/peers/profile.sh                          # w10, one worker
#   NAMES="failover w10" UDP_WORKERS=2 SERVER_CPUS=0,1 bench/peers/profile.sh
#
# 1. Batch sizes: every recvmmsg/sendmmsg return value during a load run
#    (perf tracepoints syscalls:sys_exit_recvmmsg / sys_exit_sendmmsg), as a
#    histogram, with queries per system call.
# 2. A cpu-clock profile of the server during a second load run (this VM has
#    no hardware counters), top entries by self time, kernel and user.
# Raw output under bench/out/profile/.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

DURATION="${DURATION:-5}"
NAMES="${NAMES:-w10}"
SERVER_CPUS="${SERVER_CPUS:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
UDP_WORKERS="${UDP_WORKERS:-1}"
CLIENTS="${CLIENTS:-20}"
OUTSTANDING="${OUTSTANDING:-500}"
PORT="${PORT:-5381}"
API_PORT="${API_PORT:-8181}"
ADDR=127.0.0.1
for tool in perf dnsperf dig taskset python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "profile: $tool is missing (apt-get install linux-perf dnsperf bind9-dnsutils)" >&2; exit 1; }
done

BIN="$(bench_release_bin)"
OUT="$PWD/bench/out/profile"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sextant-profile.XXXXXX")"
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
RUST_LOG="${RUST_LOG:-warn}" taskset -c "$SERVER_CPUS" "$BIN" serve --config bench/peers/sextant.conf \
    --dns-listen "$ADDR:$PORT" --api-listen "$ADDR:$API_PORT" --udp-workers "$UDP_WORKERS" \
    > "$OUT/server.log" 2>&1 &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
bench_wait_answer "$SERVER_PID" "$ADDR" "$PORT" static.peers.example '^127\.0\.60\.' \
    || { echo "profile: sextant did not start; its log:" >&2; cat "$OUT/server.log" >&2; exit 1; }
sleep 2 # the failover monitors' first probes

: > "$WORK/q.txt"
for n in $NAMES; do echo "$n.peers.example A" >> "$WORK/q.txt"; done
load() { # load OUTFILE
    taskset -c "$CLIENT_CPU" dnsperf -s "$ADDR" -p "$PORT" -d "$WORK/q.txt" -c "$CLIENTS" -T 1 \
        -q "$OUTSTANDING" -t 1 -l "$DURATION" > "$1" 2>&1 || true
}

tag="$(echo "$NAMES" | tr ' ' '+')-w$UDP_WORKERS"
echo "== batch sizes ($NAMES, $UDP_WORKERS worker(s) on CPUs $SERVER_CPUS)" >&2
perf record -q -e syscalls:sys_exit_recvmmsg -e syscalls:sys_exit_sendmmsg -p "$SERVER_PID" \
    -o "$WORK/sys.data" -- sleep $((DURATION + 1)) > /dev/null 2>&1 &
perf_pid=$!
sleep 0.5
load "$OUT/dnsperf-batch-$tag.txt"
wait "$perf_pid" || true
perf script -i "$WORK/sys.data" -F event,trace 2>/dev/null \
    | awk '{ ev = ($1 ~ /recvmmsg/) ? "recvmmsg" : "sendmmsg"; r = $NF + 0; if (r < 0) r = "err";
             n[ev]++; if (r != "err") s[ev] += r; h[ev " " r]++ }
           END { for (e in n) printf "%s: %d calls, %.2f datagrams per call\n", e, n[e], s[e] / n[e];
                 for (k in h) print "  " k ": " h[k] }' \
    | sort -k1,1 -k2n | tee "$OUT/batches-$tag.txt"
echo "dnsperf: $(bench_field "$OUT/dnsperf-batch-$tag.txt" 'Queries per second:') queries/s (under perf tracing)" \
    | tee -a "$OUT/batches-$tag.txt"

echo "== cpu-clock profile" >&2
t0="$(bench_ticks "$SERVER_PID")"; w0="$(date +%s.%N)"
perf record -q -e cpu-clock -F 4999 -p "$SERVER_PID" -o "$WORK/cpu.data" -- sleep $((DURATION + 1)) > /dev/null 2>&1 &
perf_pid=$!
sleep 0.5
load "$OUT/dnsperf-profile-$tag.txt"
wait "$perf_pid" || true
t1="$(bench_ticks "$SERVER_PID")"; w1="$(date +%s.%N)"
{
    echo "dnsperf: $(bench_field "$OUT/dnsperf-profile-$tag.txt" 'Queries per second:') queries/s, server CPU $(bench_share "$t0" "$t1" "$w0" "$w1") (while sampled)"
    echo "by object (kernel vs sextant vs libc):"
    perf report -i "$WORK/cpu.data" --no-children --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9.]+%' | head -5
    echo "top symbols (self):"
    perf report -i "$WORK/cpu.data" --no-children --sort symbol --percent-limit 0.7 --stdio 2>/dev/null \
        | grep -E '^ +[0-9.]+%' | head -40
} | tee "$OUT/profile-$tag.txt"
