# Shell functions shared by the DNS benchmarks (bench/dns.sh, bench/peers.sh).
# Sourced, not run: the caller sets `set -euo pipefail` and cds to the repo.

# bench_release_bin -> builds the release binary of this checkout and prints
# its path (honours CARGO_TARGET_DIR, as cargo does).
bench_release_bin() {
    echo "== building the release binary" >&2
    cargo build --release -p sextant >&2
    echo "${CARGO_TARGET_DIR:-$PWD/target}/release/sextant"
}

# bench_field FILE LABEL -> the first word after LABEL on its line
# (dnsperf's "Queries per second:  123.4" and the like).
bench_field() {
    awk -v l="$2" 'index($0, l) { s = substr($0, index($0, l) + length(l)); split(s, a, " "); print a[1]; exit }' "$1"
}

# bench_lost FILE -> dnsperf's "Queries lost:" figure ("12 (0.01%)").
bench_lost() {
    grep -m1 'Queries lost:' "$1" | sed -E 's/.*Queries lost: *//' || true
}

# bench_latencies DNSPERF_V_OUTPUT SORTED_OUT -> writes the per-query
# latencies (seconds, sorted) that `dnsperf -v` printed, one a line.
# dnsperf -v prints "> NOERROR www.bench.example A 0.000034" per answered
# query, "> T ..." for one that timed out (no latency).
bench_latencies() {
    awk '$1 == ">" && $2 != "T" && $NF ~ /^[0-9.]+$/ { print $NF }' "$1" | sort -g > "$2"
}

# bench_pct SORTED P -> latency in µs at percentile P (nearest rank) of a
# file written by bench_latencies; "?" when it is empty.
bench_pct() {
    awk -v p="$2" '{ v[NR] = $1 } END {
        if (NR == 0) { print "?"; exit }
        r = int((NR * p + 99) / 100); if (r < 1) r = 1; if (r > NR) r = NR
        printf "%.0f", v[r] * 1e6 }' "$1"
}

# bench_ticks PID -> CPU time (user + system, clock ticks) the process has
# used so far, all of its threads together (/proc/PID/stat fields 14, 15).
bench_ticks() {
    awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# bench_cpu_ticks CPU -> busy time (clock ticks) of that CPU so far, all
# processes and interrupts together: user, nice, system, irq, softirq and
# steal of its /proc/stat line. The softirq work a server's traffic causes
# while the server sleeps (loopback delivery, deferred frees) is here but
# not in the server's own /proc/PID/stat.
bench_cpu_ticks() {
    awk -v c="cpu$1" '$1 == c { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}

# bench_share TICKS_BEFORE TICKS_AFTER WALL_BEFORE WALL_AFTER -> the share
# of one core the process used in between (1.00 = one core fully busy).
bench_share() {
    awk -v t="$(($2 - $1))" -v hz="$(getconf CLK_TCK)" -v w0="$3" -v w1="$4" \
        'BEGIN { printf "%.2f", t / hz / (w1 - w0) }'
}

# bench_stop_pid PID -> SIGTERM, up to 5 s of grace, then SIGKILL; by PID only.
bench_stop_pid() {
    local pid="$1"
    [ -n "$pid" ] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# bench_wait_answer PID ADDR PORT NAME REGEX -> waits (up to 20 s) until the
# server answers NAME A with an address matching REGEX; fails if the process
# PID exits or the time runs out. The dig runs in the network namespace
# BENCH_CLIENT_NS when that is set.
bench_wait_answer() {
    local pid="$1" addr="$2" port="$3" name="$4" re="$5" in=()
    [ -n "${BENCH_CLIENT_NS:-}" ] && in=(ip netns exec "$BENCH_CLIENT_NS")
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || return 1
        if "${in[@]}" dig @"$addr" -p "$port" +short +time=1 +tries=1 "$name" A 2>/dev/null | grep -q "$re"; then
            return 0
        fi
        sleep 0.2
    done
    return 1
}

# bench_median < numbers, one per line -> their median ("?" when none).
bench_median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "?"; exit } if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bench_start_listeners LOG -> starts bench/peers/listen.py (the failover
# addresses' TCP port for every server's health check) in the background,
# output to LOG, and waits until it listens, so that no server's first
# health check fails (that would mark an address DOWN for the down time).
# Sets BENCH_LISTENER_PID; fails if it does not start within 5 s. They run
# in the network namespace NS when one is given.
bench_start_listeners() { # bench_start_listeners LOG [NS]
    local log="$1" in=()
    [ -n "${2:-}" ] && in=(ip netns exec "$2")
    "${in[@]}" python3 bench/peers/listen.py > "$log" 2>&1 &
    BENCH_LISTENER_PID=$!
    for _ in $(seq 50); do grep -q listening "$log" && return 0; sleep 0.1; done
    echo "the TCP listeners (bench/peers/listen.py) did not start:" >&2
    cat "$log" >&2
    return 1
}
