#!/usr/bin/env bash
# Start, reload and stop at scale: `sextant serve` (release build, one UDP
# worker) with 1,000 to 100,000 GSLB services, everything on loopback,
# every wait bounded.
#
#   bench/reload-scale.sh                       # N = 1000 10000 20000 40000 100000
#   SIZES="1000 10000" RELOADS=5 bench/reload-scale.sh
#   BUILD=0 bench/reload-scale.sh               # use the release binary as it is
#   BUILD=0 SEXTANT_BIN=path/to/sextant bench/reload-scale.sh
#
# Per N: bench/gen-reload-config.py writes the configuration (two sites with
# metric exchange off, N services split between them, a TCP monitor with a
# 60 s interval bound to every service, one vserver and domain per 10
# services, one zone); the services' addresses are from 127.192.0.1 and 127.208.0.1
# on port 8080, where nothing listens, so each probe is refused at once.
#
# * start: from launching the process until GET /v1/status answers *and* a
#   DNS query for one of the domains is answered; then until every service's
#   first probe result is applied (health known), and RSS (VmRSS) then.
# * reload, RELOADS times: the file is replaced by one with one service's IP
#   changed (alternately, so every reload is a real change), SIGHUP, and the
#   wall time until /v1/status shows the next generation; parse_ms,
#   engine_ms, apply_ms (and total_ms, in the detail file) from the server's
#   "configuration reloaded" log line. While each
#   reload runs (from just before the signal until 0.5 s after the new
#   generation shows), a loop of dig queries (+tries=1 +time=1) counts answers
#   and failures.
# * stop: SIGTERM until the process has exited, and its exit status.
#
# Prints one table; the configurations, the server logs and a per-N detail
# file land in bench/out/reload-scale/.
set -uo pipefail
cd "$(dirname "$0")/.."

SIZES="${SIZES:-1000 10000 20000 40000 100000}"
RELOADS="${RELOADS:-3}"
BUILD="${BUILD:-1}"
START_TIMEOUT_S="${START_TIMEOUT_S:-180}"
RELOAD_TIMEOUT_S="${RELOAD_TIMEOUT_S:-120}"
STOP_TIMEOUT_S="${STOP_TIMEOUT_S:-30}"
SETTLE_S="${SETTLE_S:-2}"         # pause after start and between reloads
ADDR=127.0.0.1

for tool in dig curl python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "bench: $tool is missing" >&2; exit 1; }
done

if [ "$BUILD" = 1 ]; then
    echo "== building the release binary (cargo build --release -p sextant)" >&2
    cargo build --release -p sextant >&2 || exit 1
fi
BIN="${SEXTANT_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/release/sextant}"
[ -x "$BIN" ] || { echo "bench: no release binary at $BIN" >&2; exit 1; }

OUT="$PWD/bench/out/reload-scale"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sextant-reload.XXXXXX")"
SERVER_PID=""
PROBER_PID=""
cleanup() {
    if [ -n "$PROBER_PID" ]; then kill "$PROBER_PID" 2>/dev/null; wait "$PROBER_PID" 2>/dev/null; fi
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SERVER_PID" 2>/dev/null
        wait "$SERVER_PID" 2>/dev/null
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
# A port free for both UDP and TCP on 127.0.0.1 (the kernel's pick).
free_port() {
    python3 - <<'PY'
import socket
for _ in range(50):
    t = socket.socket(); t.bind(("127.0.0.1", 0)); p = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", p)); print(p); break
    except OSError:
        pass
    finally:
        u.close(); t.close()
PY
}
# Whether the server process is alive (a zombie is not).
alive() {
    local st
    st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ]
}
generation() { # the generation /v1/status shows, or nothing
    curl -s --max-time 1 "http://$ADDR:$API_PORT/v1/status" 2>/dev/null \
        | grep -o '"generation":[0-9]*' | head -1 | cut -d: -f2
}
answers() { # answers NAME: a DNS query for NAME A gets an address back
    dig @"$ADDR" -p "$DNS_PORT" +tries=1 +time=1 +short "$1" A 2>/dev/null \
        | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$'
}
vm_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "-" }'; }
minimum() { tr ' ' '\n' | grep -v '^$' | sort -g | head -1; }
maximum() { tr ' ' '\n' | grep -v '^$' | sort -g | tail -1; }

# DNS prober: queries the domains in turn until $1 exists (at most 100,000
# queries); writes "ok fail" to $2.
prober() {
    local stop="$1" out="$2" groups="$3" ok=0 fail=0 i=0
    while [ ! -e "$stop" ] && [ $((ok + fail)) -lt 100000 ]; do
        i=$(( (i % groups) + 1 ))
        if answers "$(printf 'app%05d.gslb.example.com' "$i")"; then ok=$((ok + 1)); else fail=$((fail + 1)); fi
    done
    echo "$ok $fail" > "$out"
}

declare -a ROWS
run_size() {
    local n="$1" groups=$(( ($1 + 9) / 10 ))
    local conf="$WORK/sextant-$n.conf" a="$WORK/a-$n.conf" b="$WORK/b-$n.conf"
    local log="$OUT/server-$n.log" detail="$OUT/detail-$n.txt"
    DNS_PORT=$(free_port); API_PORT=$(free_port)
    while [ "$API_PORT" = "$DNS_PORT" ]; do API_PORT=$(free_port); done
    python3 bench/gen-reload-config.py "$n" "$DNS_PORT" "$a" || return 1
    python3 bench/gen-reload-config.py "$n" "$DNS_PORT" "$b" --edit $((n / 2)) || return 1
    cp "$a" "$conf"; cp "$a" "$OUT/sextant-$n.conf"
    : > "$detail"
    echo "== N=$n: $(wc -c < "$conf") bytes, DNS $ADDR:$DNS_PORT, API $ADDR:$API_PORT" >&2

    # ---- start
    local t0 t1 start_s="-" ready=""
    t0=$(now)
    RUST_LOG="${RUST_LOG:-info}" "$BIN" serve --config "$conf" \
        --api-listen "$ADDR:$API_PORT" --udp-workers 1 2> "$log" &
    SERVER_PID=$!
    local deadline=$(( $(date +%s) + START_TIMEOUT_S )) api=""
    while [ "$(date +%s)" -lt "$deadline" ] && alive "$SERVER_PID"; do
        if [ -z "$api" ]; then
            [ -n "$(generation)" ] && api=1 || { sleep 0.02; continue; }
        fi
        if answers app00001.gslb.example.com; then ready=1; break; fi
        sleep 0.02
    done
    t1=$(now)
    if [ -z "$ready" ]; then
        echo "bench: N=$n: not answering within ${START_TIMEOUT_S} s (log: $log)" >&2
        tail -5 "$log" >&2
        ROWS+=("$n start-failed")
        kill -KILL "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=""
        return 1
    fi
    start_s=$(elapsed "$t0" "$t1")
    local rss_kb cpu_start
    rss_kb=$(vm_kb "$SERVER_PID" VmRSS)
    cpu_start=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$SERVER_PID/stat")
    echo "start_s=$start_s rss_kb=$rss_kb cpu_s=$cpu_start" >> "$detail"
    echo "   answering in ${start_s} s, VmRSS ${rss_kb} kB, ${cpu_start} s CPU" >&2
    # Every backend refuses, so each service logs exactly one "service DOWN"
    # when its first result is applied: N of them means health is known for
    # all (DNS may answer before that, at the engine's ready deadline).
    local health_s="-" downs=0
    deadline=$(( $(date +%s) + START_TIMEOUT_S ))
    while [ "$(date +%s)" -lt "$deadline" ] && alive "$SERVER_PID"; do
        downs=$(grep -c 'service DOWN' "$log")
        [ "$downs" -ge "$n" ] && { health_s=$(elapsed "$t0" "$(now)"); break; }
        sleep 0.1
    done
    [ "$health_s" = - ] && health_s=">${START_TIMEOUT_S}(${downs})"
    rss_kb=$(vm_kb "$SERVER_PID" VmRSS)
    echo "health_s=$health_s rss_kb=$rss_kb" >> "$detail"
    echo "   every first probe result applied after ${health_s} s, VmRSS ${rss_kb} kB" >&2
    sleep "$SETTLE_S"

    # ---- reloads
    local gen r file reload_list="" parse_list="" apply_list="" engine_list="" q_ok=0 q_fail=0 reload_failed=""
    gen=$(generation)
    for r in $(seq "$RELOADS"); do
        if [ $((r % 2)) = 1 ]; then file="$b"; else file="$a"; fi
        cp "$file" "$conf.new" && mv "$conf.new" "$conf"
        local want=$((gen + 1)) got="" stop="$WORK/stop" counts="$WORK/counts"
        rm -f "$stop" "$counts"
        prober "$stop" "$counts" "$groups" &
        PROBER_PID=$!
        t0=$(now)
        kill -HUP "$SERVER_PID"
        deadline=$(( $(date +%s) + RELOAD_TIMEOUT_S ))
        while [ "$(date +%s)" -lt "$deadline" ] && alive "$SERVER_PID"; do
            got=$(generation)
            [ "${got:-0}" -ge "$want" ] 2>/dev/null && break
            sleep 0.01
        done
        t1=$(now)
        sleep 0.5
        touch "$stop"
        wait "$PROBER_PID" 2>/dev/null; PROBER_PID=""
        local ok fail
        read -r ok fail < "$counts" || { ok=0; fail=0; }
        q_ok=$((q_ok + ok)); q_fail=$((q_fail + fail))
        if [ "${got:-0}" != "$want" ]; then
            echo "bench: N=$n reload $r: generation ${got:-none}, wanted $want within ${RELOAD_TIMEOUT_S} s" >&2
            echo "reload=$r failed generation=${got:-none}" >> "$detail"
            reload_failed=">${RELOAD_TIMEOUT_S}"
            break
        fi
        local secs line pm am em tm
        secs=$(elapsed "$t0" "$t1")
        line=""
        for _ in $(seq 100); do
            line=$(grep 'configuration reloaded' "$log" | grep -E "generation=$want( |$)" | tail -1)
            [ -n "$line" ] && break
            sleep 0.05
        done
        pm=$(sed -nE 's/.*parse_ms=([0-9]+).*/\1/p' <<< "$line")
        am=$(sed -nE 's/.*apply_ms=([0-9]+).*/\1/p' <<< "$line")
        em=$(sed -nE 's/.*engine_ms=([0-9]+).*/\1/p' <<< "$line")
        tm=$(sed -nE 's/.*total_ms=([0-9]+).*/\1/p' <<< "$line")
        reload_list+=" $secs"; parse_list+=" ${pm:-}"; apply_list+=" ${am:-}"; engine_list+=" ${em:-}"
        echo "reload=$r generation=$want wall_s=$secs parse_ms=${pm:--} engine_ms=${em:--} apply_ms=${am:--} total_ms=${tm:--} dns_ok=$ok dns_fail=$fail rss_kb=$(vm_kb "$SERVER_PID" VmRSS)" >> "$detail"
        echo "   reload $r: generation $want in ${secs} s (log: parse ${pm:--} ms, engine ${em:--} ms, apply ${am:--} ms, total ${tm:--} ms), DNS ${ok} answered / ${fail} failed" >&2
        gen=$want
        sleep "$SETTLE_S"
    done
    local rss_after hwm
    rss_after=$(vm_kb "$SERVER_PID" VmRSS); hwm=$(vm_kb "$SERVER_PID" VmHWM)
    echo "rss_after_reloads_kb=$rss_after hwm_kb=$hwm" >> "$detail"

    # ---- stop
    local stop_s code=""
    t0=$(now)
    kill -TERM "$SERVER_PID"
    deadline=$(( $(date +%s) + STOP_TIMEOUT_S ))
    while [ "$(date +%s)" -lt "$deadline" ] && alive "$SERVER_PID"; do sleep 0.01; done
    t1=$(now)
    if alive "$SERVER_PID"; then
        kill -KILL "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null
        code="KILLED(>${STOP_TIMEOUT_S}s)"
    else
        wait "$SERVER_PID"; code=$?
    fi
    SERVER_PID=""
    stop_s=$(elapsed "$t0" "$t1")
    echo "stop_s=$stop_s exit=$code" >> "$detail"
    echo "   stopped in ${stop_s} s, exit status $code" >&2

    local rmin rmed rmax pmed amed emed reload_col
    rmin=$(minimum <<< "$reload_list"); rmed=$(median <<< "$reload_list"); rmax=$(maximum <<< "$reload_list")
    reload_col="${rmin:--}/${rmed:--}/${rmax:--}"
    [ -n "$reload_failed" ] && reload_col="FAILED${reload_failed}"
    pmed=$(median <<< "$parse_list"); amed=$(median <<< "$apply_list"); emed=$(median <<< "$engine_list")
    ROWS+=("$(printf '%7s %7s %8s %7s %7s %19s %8s %9s %8s %11s %8s %6s %6s' "$n" "$start_s" "$health_s" \
        "$(awk -v k="$rss_kb" 'BEGIN { printf "%.1f", k / 1024 }')" \
        "$(awk -v k="$rss_kb" -v n="$n" 'BEGIN { printf "%.2f", k / n }')" \
        "$reload_col" "$pmed" "${emed:--}" "$amed" "$q_fail/$((q_ok + q_fail))" \
        "$(awk -v k="${hwm:-0}" 'BEGIN { printf "%.1f", k / 1024 }')" "$stop_s" "$code")")
}

for n in $SIZES; do
    run_size "$n" || echo "bench: N=$n did not complete" >&2
done

{
    echo
    echo "Reload and start at scale: $("$BIN" --version 2>/dev/null || echo sextant), $(nproc) cores, --udp-workers 1, $RELOADS reloads per N ($(date -u +%Y-%m-%dT%H:%MZ))"
    printf '%7s %7s %8s %7s %7s %19s %8s %9s %8s %11s %8s %6s %6s\n' N start_s health_s RSS_MB KB/svc reload_s parse_ms engine_ms apply_ms dns_fail peak_MB stop_s exit
    for row in "${ROWS[@]}"; do echo "$row"; done
    echo
    echo "start_s: launch until /v1/status and a DNS answer; health_s: launch until every service's first"
    echo "probe result is applied; RSS_MB, KB/svc: VmRSS then; reload_s: SIGHUP until /v1/status shows the"
    echo "next generation, min/median/max; parse_ms, engine_ms, apply_ms: medians from the log (apply_ms = engine_ms"
    echo "+ stopping and starting the monitors; the new generation shows before the monitors start); dns_fail: failed/sent"
    echo "dig queries during all reloads; peak_MB: VmHWM after the reloads."
    echo "Per-N detail and server logs: $OUT/"
} | tee "$OUT/summary.txt"
