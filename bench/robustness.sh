#!/usr/bin/env bash
# Black-box robustness suite: starts `sextant serve` on loopback with
# bench/robustness/*.toml and runs the dns-robustness prober against it
# (RFC 6891 rules, TC and TCP fallback, TCP limits, mutated packets over UDP
# and TCP, response rate limiting, cookies, NSID). One line per check,
# PASS or FAIL, then a summary; exits non-zero on any FAIL.
#
#   bench/robustness.sh                 # 1,000,000 UDP / 10,000 TCP mutations
#   SHORT=1 bench/robustness.sh         # 20,000 / 2,000 (CI: scripts/test.sh)
#   PROFILE=debug SHORT=1 bench/robustness.sh      # debug build (what scripts/test.sh runs)
#   SEXTANT_BIN=/path/to/sextant bench/robustness.sh # a prebuilt server
#   CHECKS=edns,tcp bench/robustness.sh # some groups only
#   IPV6=0 bench/robustness.sh          # without the IPv6 pass
#
# After the IPv4 run, the same server configuration is started on [::1] and
# the groups that do not need many source addresses (all but rrl, whose
# sources spread over 127.0.0.0/8) run again over IPv6, with a tenth of the
# mutations; their lines are prefixed "v6 ". No IPv6 loopback is a FAIL.
#
# Raw output: bench/out/robustness.txt, the server's log bench/out/robustness-server.log.
set -euo pipefail
cd "$(dirname "$0")/.."

SHORT="${SHORT:-}"
if [ -n "$SHORT" ]; then
    UDP_MUTATIONS="${UDP_MUTATIONS:-20000}"
    TCP_MUTATIONS="${TCP_MUTATIONS:-2000}"
else
    UDP_MUTATIONS="${UDP_MUTATIONS:-1000000}"
    TCP_MUTATIONS="${TCP_MUTATIONS:-10000}"
fi
RATE="${RATE:-20000}"           # mutated UDP packets per second, at most
ADDR=127.0.0.1                  # the suite binds sources in 127.0.0.0/8; loopback only
PORT="${PORT:-5471}"
API_PORT="${API_PORT:-8471}"
CHECKS="${CHECKS:-edns,nsid,cookies,tcp,rrl,mutation}"
IPV6="${IPV6:-1}"
ADDR6="::1"
PORT6="${PORT6:-$((PORT + 1))}"
API_PORT6="${API_PORT6:-$((API_PORT + 1))}"
# The IPv6 pass: the groups of CHECKS other than rrl.
CHECKS6="$(echo "$CHECKS" | tr ',' '\n' | grep -v '^rrl$' | paste -sd, -)"
SEED="${SEED:-1557}"
TIME_LIMIT="${TIME_LIMIT:-}"    # seconds the prober may run; default from the counts
if [ -z "$TIME_LIMIT" ]; then
    # Checks other than mutation take about 30 s; mutation runs at RATE.
    TIME_LIMIT=$((120 + UDP_MUTATIONS * 2 / RATE + TCP_MUTATIONS / 50))
fi

TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
PROFILE="${PROFILE:-release}"   # release, or debug (CI: the test step has built it already)
case "$PROFILE" in
    release) PROFILE_FLAG=(--release) ;;
    debug) PROFILE_FLAG=() ;;
    *) echo "robustness: PROFILE is release or debug" >&2; exit 2 ;;
esac
if [ -n "${SEXTANT_BIN:-}" ]; then
    # A prebuilt server (another checkout's, say); only the prober is built.
    BIN="$SEXTANT_BIN"
    [ -x "$BIN" ] || { echo "robustness: SEXTANT_BIN=$BIN is not an executable" >&2; exit 1; }
    echo "== building the prober ($PROFILE); server: $BIN" >&2
    cargo build "${PROFILE_FLAG[@]}" -p sextant-test-support --bin dns-robustness
else
    echo "== building sextant and the prober ($PROFILE)" >&2
    cargo build "${PROFILE_FLAG[@]}" -p sextant -p sextant-test-support --bin sextant --bin dns-robustness
    BIN="$TARGET/$PROFILE/sextant"
fi
PROBER="$TARGET/$PROFILE/dns-robustness"

OUT="$PWD/bench/out"
mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sextant-robustness.XXXXXX")"
SERVER_PID=""
SERVER6_PID=""
stop() { # stop PID: TERM, then KILL after 5 s
    local pid="$1"
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
}
cleanup() {
    stop "$SERVER6_PID"
    stop "$SERVER_PID"
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# The configuration: the fixed part, 80 services behind one multi-IP name
# (an answer of 80 A records, about 1,300 bytes), then the protections.
CONF="$WORK/suite.toml"
{
    cat bench/robustness/suite.toml
    for i in $(seq 80); do
        printf '\n[[service]]\nname = "many-%d"\nip = "127.0.71.%d"\nport = 80\nprotocol = "HTTP"\nsite = "rob"\n' "$i" "$i"
    done
    printf '\n[[vserver]]\nname = "gv-many"\nprotocol = "HTTP"\nlb_method = "ROUNDROBIN"\nmulti_ip_response = true\nservices = ['
    for i in $(seq 80); do printf '{ name = "many-%d" }, ' "$i"; done
    printf ']\ndomains = [{ name = "many.rob.example", ttl = 30 }]\n'
} > "$WORK/base.toml"
cat "$WORK/base.toml" bench/robustness/dns-limits.toml > "$CONF"

config_fail=""
if ! "$BIN" check "$CONF" > "$WORK/check.txt" 2>&1; then
    # A binary without the [dns] settings: say so as a failed check, and
    # run the rest against the configuration without them.
    config_fail="$(tr '\n' ' ' < "$WORK/check.txt")"
    "$BIN" check "$WORK/base.toml" >&2
    CONF="$WORK/base.toml"
fi

start_server() { # start_server DNS_LISTEN API_LISTEN LOG -> the server's PID in STARTED_PID
    echo "== starting sextant on $1" >&2
    RUST_LOG="${RUST_LOG:-warn}" "$BIN" serve --config "$CONF" \
        --dns-listen "$1" --api-listen "$2" 2> "$3" &
    STARTED_PID=$!
}
answering() { # answering PID SERVER: waits up to 10 s for an answer to www.rob.example
    local _
    for _ in $(seq 50); do
        kill -0 "$1" 2>/dev/null || return 1
        if "$PROBER" --server "$2" --zone rob.example --name www.rob.example --checks none \
            > /dev/null 2>&1; then
            return 0
        fi
        sleep 0.2
    done
    return 1
}

start_server "$ADDR:$PORT" "$ADDR:$API_PORT" "$OUT/robustness-server.log"
SERVER_PID="$STARTED_PID"
if ! answering "$SERVER_PID" "$ADDR:$PORT"; then
    echo "robustness: sextant did not answer www.rob.example on $ADDR:$PORT; its log:" >&2
    cat "$OUT/robustness-server.log" >&2
    exit 1
fi

{
    echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC') $("$BIN" --version 2>/dev/null || echo sextant) on $(nproc) cores"
    echo "# $UDP_MUTATIONS UDP / $TCP_MUTATIONS TCP mutations at <= $RATE/s, seed $SEED"
    if [ -n "$config_fail" ]; then
        echo "FAIL config-dns-protections: the [dns] settings of bench/robustness/dns-limits.toml are refused: $config_fail(the rest runs without them)"
    else
        echo "PASS config-dns-protections: the [dns] settings are accepted"
    fi
} | tee "$OUT/robustness.txt"

probe() { # probe SERVER PID CHECKS UDP_MUTATIONS TCP_MUTATIONS [PROBER_ARGS...]: the prober, time-limited
    local server="$1" pid="$2" checks="$3" udp="$4" tcp="$5"
    shift 5
    timeout --signal=TERM "$TIME_LIMIT" "$PROBER" \
        --server "$server" --pid "$pid" \
        --zone rob.example --name www.rob.example \
        --big big.rob.example:TXT --big many.rob.example:A \
        --checks "$checks" --seed "$SEED" \
        --udp-mutations "$udp" --tcp-mutations "$tcp" --rate "$RATE" \
        --idle-timeout 2 --tcp-max 50 --nsid node-a "$@"
}

set +e
probe "$ADDR:$PORT" "$SERVER_PID" "$CHECKS" "$UDP_MUTATIONS" "$TCP_MUTATIONS" \
    --rrl-rps 20 --rrl-slip 2 --rrl-seconds 3 --rrl-flood-pps 200 --exempt-source 127.0.0.2 \
    2>&1 | tee -a "$OUT/robustness.txt"
rc="${PIPESTATUS[0]}"
set -e
if [ "$rc" -eq 124 ]; then
    echo "FAIL robustness: the prober did not finish within $TIME_LIMIT s" | tee -a "$OUT/robustness.txt"
fi
# A cross-check of the prober's RSS figures, read here independently.
echo "# server $SERVER_PID at the end: $(grep -h VmRSS "/proc/$SERVER_PID/status" 2>/dev/null || echo 'gone'), $(ls "/proc/$SERVER_PID/fd" 2>/dev/null | wc -l) fds" \
    | tee -a "$OUT/robustness.txt"
if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "FAIL robustness: the server exited; its log is $OUT/robustness-server.log" | tee -a "$OUT/robustness.txt"
    rc=1
fi
if [ -n "$config_fail" ] && [ "$rc" -eq 0 ]; then
    rc=1
fi

# ---- the IPv6 pass
if [ "$IPV6" != 0 ] && [ -n "$CHECKS6" ]; then
    start_server "[$ADDR6]:$PORT6" "$ADDR:$API_PORT6" "$OUT/robustness-server6.log"
    SERVER6_PID="$STARTED_PID"
    if ! answering "$SERVER6_PID" "[$ADDR6]:$PORT6"; then
        echo "FAIL v6 server-answers: sextant did not answer www.rob.example on [$ADDR6]:$PORT6 (no IPv6 loopback here?); its log: $(tr '\n' ' ' < "$OUT/robustness-server6.log")" \
            | tee -a "$OUT/robustness.txt"
        rc=1
    else
        set +e
        probe "[$ADDR6]:$PORT6" "$SERVER6_PID" "$CHECKS6" $((UDP_MUTATIONS / 10)) $((TCP_MUTATIONS / 10)) \
            2>&1 | sed -E 's/^(PASS|FAIL|SUMMARY)/v6 \1/' | tee -a "$OUT/robustness.txt"
        rc6="${PIPESTATUS[0]}"
        set -e
        if [ "$rc6" -eq 124 ]; then
            echo "FAIL v6 robustness: the prober did not finish within $TIME_LIMIT s" | tee -a "$OUT/robustness.txt"
        fi
        if ! kill -0 "$SERVER6_PID" 2>/dev/null; then
            echo "FAIL v6 robustness: the server exited; its log is $OUT/robustness-server6.log" | tee -a "$OUT/robustness.txt"
            rc6=1
        fi
        [ "$rc6" -eq 0 ] || rc=1
    fi
fi
exit "$rc"
