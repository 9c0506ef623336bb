#!/usr/bin/env bash
# Whole-server DNS benchmark: sextant pinned to CPU 0, dnsperf pinned to CPU 1,
# everything on loopback, bounded in time.
#
#   bench/dns.sh                 # 20 s at full load, then 10 s at 1000 qps
#   DURATION=5 LAT_DURATION=5 bench/dns.sh
#   METHOD=RTT bench/dns.sh      # the same answers chosen by the RTT method
#
# Prints queries per second under full load, and latency at a fixed 1000 qps:
# dnsperf's own average/stddev, and p50/p90/p99/max computed from the
# per-query latencies that `dnsperf -v` reports. Raw output goes to bench/out/.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

DURATION="${DURATION:-20}"          # seconds of full-load dnsperf
LAT_DURATION="${LAT_DURATION:-10}"  # seconds of the fixed-rate latency run
LAT_QPS="${LAT_QPS:-1000}"
CLIENTS="${CLIENTS:-20}"            # dnsperf -c
OUTSTANDING="${OUTSTANDING:-500}"   # dnsperf -q
ADDR="${ADDR:-127.0.0.1}"
PORT="${PORT:-5399}"
API_PORT="${API_PORT:-8099}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
UDP_WORKERS="${UDP_WORKERS:-1}"   # one worker per server core: the server is pinned to one
METHOD="${METHOD:-ROUNDROBIN}"    # ROUNDROBIN or RTT

command -v dnsperf >/dev/null 2>&1 && command -v dig >/dev/null 2>&1 \
    && command -v taskset >/dev/null 2>&1 && command -v curl >/dev/null 2>&1 || scripts/setup.sh
for tool in dnsperf dig taskset curl; do
    command -v "$tool" >/dev/null 2>&1 || { echo "bench: $tool is missing (scripts/setup.sh)" >&2; exit 1; }
done

BIN="$(bench_release_bin)"

OUT="$PWD/bench/out"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sextant-bench.XXXXXX")"
SERVER_PID=""
cleanup() {
    bench_stop_pid "$SERVER_PID"
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

case "$METHOD" in
    ROUNDROBIN)
        # One site; the four services are all there.
        SITES="add gslb site bench $ADDR -siteType LOCAL"
        SITE_OF=(bench bench bench bench) ;;
    RTT)
        # Three sites without metric exchange: this site (127.0.0.2, so
        # that dnsperf's 127.0.0.1 is an LDNS it probes, not its own
        # address) has b1 and b2 and the only RTT; b3 and b4 are at the
        # others, which never report one. Every answer runs the RTT
        # comparison over the four and picks among b1 and b2.
        SITES="add gslb site bench 127.0.0.2 -siteType LOCAL -metricExchange DISABLED
add gslb site far1 127.0.0.3 -metricExchange DISABLED
add gslb site far2 127.0.0.4 -metricExchange DISABLED"
        SITE_OF=(bench bench far1 far2) ;;
    *) echo "bench: METHOD is ROUNDROBIN or RTT" >&2; exit 2 ;;
esac
cat > "$WORK/bench.conf" <<CONF
# One vserver over 4 unmonitored services ($METHOD), one zone.
add service bench-dns $ADDR ADNS $PORT
$SITES
add gslb service b1 127.0.50.1 HTTP 80 -siteName ${SITE_OF[0]}
add gslb service b2 127.0.50.2 HTTP 80 -siteName ${SITE_OF[1]}
add gslb service b3 127.0.50.3 HTTP 80 -siteName ${SITE_OF[2]}
add gslb service b4 127.0.50.4 HTTP 80 -siteName ${SITE_OF[3]}
add gslb vserver gv-bench HTTP -lbMethod $METHOD
bind gslb vserver gv-bench -serviceName b1
bind gslb vserver gv-bench -serviceName b2
bind gslb vserver gv-bench -serviceName b3
bind gslb vserver gv-bench -serviceName b4
bind gslb vserver gv-bench -domainName www.bench.example -TTL 30
add dns soaRec bench.example -originServer ns1.bench.example -contact hostmaster.bench.example
add dns nsRec bench.example ns1.bench.example
CONF

# 80% GSLB A answers, 10% NODATA (AAAA on an IPv4-only name), 10% NXDOMAIN.
: > "$WORK/queries.txt"
for _ in $(seq 8); do echo "www.bench.example A" >> "$WORK/queries.txt"; done
echo "www.bench.example AAAA" >> "$WORK/queries.txt"
echo "nothing.bench.example A" >> "$WORK/queries.txt"

echo "== starting sextant on $ADDR:$PORT (CPU $SERVER_CPU)" >&2
RUST_LOG="${RUST_LOG:-warn}" taskset -c "$SERVER_CPU" "$BIN" serve --config "$WORK/bench.conf" \
    --dns-listen "$ADDR:$PORT" --api-listen "$ADDR:$API_PORT" --udp-workers "$UDP_WORKERS" \
    2> "$OUT/server.log" &
SERVER_PID=$!

if ! bench_wait_answer "$SERVER_PID" "$ADDR" "$PORT" www.bench.example '^127\.0\.50\.'; then
    echo "bench: sextant did not answer www.bench.example on $ADDR:$PORT; its log:" >&2
    cat "$OUT/server.log" >&2
    exit 1
fi
if [ "$METHOD" = RTT ]; then
    # Until this site has probed dnsperf's address, answers come from the
    # fallback; measure only RTT answers.
    rtt=""
    for _ in $(seq 100); do
        if curl -s "http://$ADDR:$API_PORT/v1/explain?name=www.bench.example&client=$ADDR" \
            | grep -q '"reason":"chosen by RTT"'; then
            rtt=1; break
        fi
        dig @"$ADDR" -p "$PORT" +short +time=1 +tries=1 www.bench.example A > /dev/null 2>&1 || true
        sleep 0.2
    done
    if [ -z "$rtt" ]; then
        echo "bench: answers are not chosen by RTT; /v1/ldns:" >&2
        curl -s "http://$ADDR:$API_PORT/v1/ldns" >&2
        exit 1
    fi
fi

echo "== full load: dnsperf -c $CLIENTS -q $OUTSTANDING -l $DURATION (CPU $CLIENT_CPU)" >&2
t0="$(bench_ticks "$SERVER_PID")"
w0="$(date +%s.%N)"
taskset -c "$CLIENT_CPU" dnsperf -s "$ADDR" -p "$PORT" -d "$WORK/queries.txt" \
    -c "$CLIENTS" -T 1 -q "$OUTSTANDING" -l "$DURATION" > "$OUT/dnsperf-load.txt" 2>&1 || true
t1="$(bench_ticks "$SERVER_PID")"
w1="$(date +%s.%N)"
# Share of one core the server used during the load run.
server_cpu="$(bench_share "$t0" "$t1" "$w0" "$w1")"

echo "== latency: dnsperf -Q $LAT_QPS -l $LAT_DURATION -v" >&2
taskset -c "$CLIENT_CPU" dnsperf -s "$ADDR" -p "$PORT" -d "$WORK/queries.txt" \
    -c 1 -T 1 -Q "$LAT_QPS" -l "$LAT_DURATION" -v > "$OUT/dnsperf-latency.txt" 2>&1 || true

field() { bench_field "$@"; }
qps="$(field "$OUT/dnsperf-load.txt" 'Queries per second:')"
lost="$(bench_lost "$OUT/dnsperf-load.txt")"
avg="$(field "$OUT/dnsperf-latency.txt" 'Average Latency (s):')"
sd="$(field "$OUT/dnsperf-latency.txt" 'Latency StdDev (s):')"
lat_qps="$(field "$OUT/dnsperf-latency.txt" 'Queries per second:')"
lat_lost="$(bench_lost "$OUT/dnsperf-latency.txt")"
bench_latencies "$OUT/dnsperf-latency.txt" "$WORK/lat.txt"
n="$(wc -l < "$WORK/lat.txt")"
pct() { bench_pct "$WORK/lat.txt" "$1"; }
us() { awk -v s="$1" 'BEGIN { printf "%.0f", s * 1e6 }'; }

if [ -z "$qps" ]; then
    echo "bench: dnsperf gave no result; see $OUT/dnsperf-load.txt" >&2
    cat "$OUT/dnsperf-load.txt" >&2
    exit 1
fi

{
    echo "$("$BIN" --version 2>/dev/null || echo 'sextant (version unknown)') on $(nproc) cores; server on CPU $SERVER_CPU, dnsperf on CPU $CLIENT_CPU"
    echo "queries: 80% GSLB A ($METHOD over 4), 10% AAAA NODATA, 10% NXDOMAIN"
    echo "full load (${DURATION}s, -c $CLIENTS -q $OUTSTANDING): ${qps} queries/s, lost: ${lost:-?}"
    echo "server CPU during the load run: ${server_cpu} of one core" \
        "($(awk -v q="$qps" -v c="$server_cpu" 'BEGIN { if (c > 0) printf "%.0f", q / c; else print "?" }') queries/s per fully used server core, extrapolated linearly;" \
        "if well below 1.0, dnsperf on its one core is the limit, not the server)"
    if [ -n "$avg" ]; then
        echo "at ${LAT_QPS} qps (${LAT_DURATION}s, achieved ${lat_qps:-?}, lost ${lat_lost:-?}): average $(us "$avg") µs, stddev $(us "${sd:-0}") µs (dnsperf)"
    fi
    if [ "$n" -gt 0 ]; then
        echo "at ${LAT_QPS} qps, from $n per-query latencies: p50 $(pct 50) µs, p90 $(pct 90) µs, p99 $(pct 99) µs, max $(pct 100) µs"
    else
        echo "no per-query latencies in dnsperf -v output"
    fi
} | tee "$OUT/summary-$METHOD.txt"
