#!/usr/bin/env bash
# Does the per-vserver round-robin counter cost through false sharing?
# (crates/sextant-core/src/snapshot.rs keeps one AtomicU64 per vserver in
# one array: 8 vservers per 64-byte cache line.)
#
#   bench/peers/false-sharing.sh             # 5 rounds of 5 s each layout
#
# Sextant with two UDP workers (SERVER_CPUS, default 0,1) and ten round-robin
# vservers v0..v9. Two dnsperf processes, each with one socket (-c 1) and a
# fixed source port, so that each worker gets the queries of one dnsperf
# only (the ports are chosen so that SO_REUSEPORT sends them to different
# workers: checked by the workers' own CPU time); dnsperf A asks v0, B asks
# v1 (the counter next to v0's: the same cache line, written by both
# workers) or v9 (8 counters away: never the same line). Rounds alternate;
# the medians of queries/s per server core are compared.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

DURATION="${DURATION:-5}"
ROUNDS="${ROUNDS:-5}"
SERVER_CPUS="${SERVER_CPUS:-0,1}"
OUTSTANDING="${OUTSTANDING:-200}"
PORT="${PORT:-5371}"
API_PORT="${API_PORT:-8171}"
ADDR=127.0.0.1

BIN="$(bench_release_bin)"
OUT="$PWD/bench/out/false-sharing"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sextant-fs.XXXXXX")"
SERVER_PID=""
cleanup() { bench_stop_pid "$SERVER_PID"; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

{
    echo "add gslb site bench 127.0.0.2 -siteType LOCAL -metricExchange DISABLED"
    echo "add dns soaRec peers.example -originServer ns1.peers.example -contact hostmaster.peers.example"
    echo "add dns nsRec peers.example ns1.peers.example"
    for v in $(seq 0 9); do
        echo "add gslb service s$v-a 127.0.70.$((2 * v + 1)) HTTP 80 -siteName bench"
        echo "add gslb service s$v-b 127.0.70.$((2 * v + 2)) HTTP 80 -siteName bench"
        echo "add gslb vserver v$v HTTP -lbMethod ROUNDROBIN"
        echo "bind gslb vserver v$v -serviceName s$v-a"
        echo "bind gslb vserver v$v -serviceName s$v-b"
        echo "bind gslb vserver v$v -domainName v$v.peers.example -TTL 30"
    done
} > "$WORK/fs.conf"

RUST_LOG=warn taskset -c "$SERVER_CPUS" "$BIN" serve --config "$WORK/fs.conf" \
    --dns-listen "$ADDR:$PORT" --api-listen "$ADDR:$API_PORT" --udp-workers 2 > "$OUT/server.log" 2>&1 &
SERVER_PID=$!
bench_wait_answer "$SERVER_PID" "$ADDR" "$PORT" v0.peers.example '^127\.0\.70\.' \
    || { echo "false-sharing: sextant did not start" >&2; cat "$OUT/server.log" >&2; exit 1; }

# The two UDP worker threads, by name.
TIDS=()
for t in /proc/"$SERVER_PID"/task/*; do
    grep -q '^dns-udp-' "$t/comm" 2>/dev/null && TIDS+=("${t##*/}")
done
[ "${#TIDS[@]}" -eq 2 ] || { echo "false-sharing: expected 2 dns-udp threads, found ${#TIDS[@]}" >&2; exit 1; }
tticks() { awk '{ print $14 + $15 }' "/proc/$SERVER_PID/task/$1/stat"; }

run() { # run NAME_B SECONDS PORT_A PORT_B -> "qps share ticks0 ticks1"
    echo "v0.peers.example A" > "$WORK/a.txt"
    echo "$1.peers.example A" > "$WORK/b.txt"
    local a0 b0 t0 w0 t1 w1
    a0="$(tticks "${TIDS[0]}")"; b0="$(tticks "${TIDS[1]}")"
    t0="$(bench_ticks "$SERVER_PID")"; w0="$(date +%s.%N)"
    dnsperf -s "$ADDR" -p "$PORT" -x "$3" -d "$WORK/a.txt" -c 1 -T 1 -q "$OUTSTANDING" -t 1 -l "$2" > "$WORK/a.out" 2>&1 &
    local pa=$!
    dnsperf -s "$ADDR" -p "$PORT" -x "$4" -d "$WORK/b.txt" -c 1 -T 1 -q "$OUTSTANDING" -t 1 -l "$2" > "$WORK/b.out" 2>&1 &
    local pb=$!
    wait "$pa" || true; wait "$pb" || true
    t1="$(bench_ticks "$SERVER_PID")"; w1="$(date +%s.%N)"
    echo "$(awk -v a="$(bench_field "$WORK/a.out" 'Queries per second:')" -v b="$(bench_field "$WORK/b.out" 'Queries per second:')" \
        'BEGIN { printf "%.0f", a + b }') $(bench_share "$t0" "$t1" "$w0" "$w1") $(($(tticks "${TIDS[0]}") - a0)) $(($(tticks "${TIDS[1]}") - b0))"
}

# Source ports that land on different workers: both threads busy.
PA=40001; PB=""
for cand in $(seq 40002 40040); do
    read -r _ _ x y <<< "$(run v9 1 "$PA" "$cand")"
    if [ "$x" -gt 5 ] && [ "$y" -gt 5 ]; then PB="$cand"; break; fi
done
[ -n "$PB" ] || { echo "false-sharing: found no source port pair split over the two workers" >&2; exit 1; }
echo "source ports $PA and $PB reach different workers" >&2

: > "$OUT/rounds.txt"
for r in $(seq "$ROUNDS"); do
    for b in v1 v9; do
        read -r qps share x y <<< "$(run "$b" "$DURATION" "$PA" "$PB")"
        echo "$b $r $qps $share $x $y" | tee -a "$OUT/rounds.txt" >&2
    done
done
{
    echo "false sharing of the round-robin counters, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg); 2 workers on CPUs $SERVER_CPUS, $ROUNDS x ${DURATION}s, medians"
    for b in v1 v9; do
        qps="$(awk -v b="$b" '$1 == b { print $3 }' "$OUT/rounds.txt" | bench_median)"
        pc="$(awk -v b="$b" '$1 == b && $4 > 0 { printf "%.0f\n", $3 / $4 }' "$OUT/rounds.txt" | bench_median)"
        echo "  v0 + $b ($([ "$b" = v1 ] && echo 'counters on one cache line' || echo 'counters on different lines')): $qps queries/s, $pc per server core"
    done
} | tee "$OUT/summary.txt"
