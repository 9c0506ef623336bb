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
#   XDP=0 bench/robustness.sh           # without the XDP pass
#
# After the IPv4 run, the same server configuration is started on [::1] and
# the groups that do not need many source addresses (all but rrl, whose
# sources spread over 127.0.0.0/8) run again over IPv6, with a tenth of the
# mutations; their lines are prefixed "v6 ". No IPv6 loopback is a FAIL.
#
# Then the XDP pass (as root; XDP=1 insists, XDP=0 leaves it out): the same
# configuration in a network namespace of the script's own, answering UDP
# through its XDP path (--xdp-interface) on a veth pair (server 10.53.9.1),
# probed from a second namespace (10.53.9.2, exempt from rate limiting as
# 127.0.0.1 is); the same groups as the IPv6 pass, a tenth of the
# mutations, lines prefixed "xdp ". Afterwards at least 99.9 % of the
# checks' UDP queries must have come through the XDP path (queries_xdp in
# /v1/status); the few others are mutated datagrams over the MTU, which
# arrive as fragments, and fragments are the kernel's.
# Under CI (CI=true) without root it is a FAIL, not left out.
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
XDP="${XDP:-}"                  # 1: the XDP pass, 0: without; default: when root
if [ -z "$XDP" ]; then
    if [ "$(id -u)" -eq 0 ] || [ "${CI:-}" = true ]; then XDP=1; else
        XDP=0; echo "robustness: not root, so no XDP pass (XDP=1 insists)" >&2
    fi
fi
XDP_SERVER=10.53.9.1
XDP_CLIENT=10.53.9.2
API_PORT_XDP="${API_PORT_XDP:-$((API_PORT + 2))}"
NS_SERVER="sxt-$$-rob-s"        # the test harness's stale sweep knows sxt-PID-*
NS_CLIENT="sxt-$$-rob-c"
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
SERVERX_PID=""
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
    stop "$SERVERX_PID"
    stop "$SERVER6_PID"
    stop "$SERVER_PID"
    if [ "$XDP" = 1 ]; then
        ip netns del "$NS_SERVER" 2>/dev/null || true
        ip netns del "$NS_CLIENT" 2>/dev/null || true
    fi
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

# IN prefixes the commands of the XDP pass (ip netns exec NS, which execs
# the command, so $! is the server's own PID); empty before it.
IN=()
start_server() { # start_server DNS_LISTEN API_LISTEN LOG [ARGS...] -> the server's PID in STARTED_PID
    echo "== starting sextant on $1" >&2
    RUST_LOG="${RUST_LOG:-warn}" "${IN[@]}" "$BIN" serve --config "$CONF" \
        --dns-listen "$1" --api-listen "$2" "${@:4}" 2> "$3" &
    STARTED_PID=$!
}
FROM=()                         # the same for the prober: the client namespace
answering() { # answering PID SERVER: waits up to 10 s for an answer to www.rob.example
    local _
    for _ in $(seq 50); do
        kill -0 "$1" 2>/dev/null || return 1
        if "${FROM[@]}" "$PROBER" --server "$2" --zone rob.example --name www.rob.example --checks none \
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
    timeout --signal=TERM "$TIME_LIMIT" "${FROM[@]}" "$PROBER" \
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
# ---- the XDP pass
xdp_fail() { echo "FAIL xdp $1" | tee -a "$OUT/robustness.txt"; rc=1; }
if [ "$XDP" = 1 ] && [ -n "$CHECKS6" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        xdp_fail "robustness: the XDP pass makes network namespaces and needs root (XDP=0 leaves it out)"
    elif ! ip netns add "$NS_SERVER" || ! ip netns add "$NS_CLIENT"; then
        xdp_fail "robustness: cannot make the network namespaces $NS_SERVER and $NS_CLIENT"
    else
        IF_S="rbs$$"; IF_C="rbc$$"
        ip netns exec "$NS_SERVER" ip link set lo up
        ip netns exec "$NS_CLIENT" ip link set lo up
        ip link add "$IF_S" type veth peer name "$IF_C"
        ip link set "$IF_S" netns "$NS_SERVER"; ip link set "$IF_C" netns "$NS_CLIENT"
        ip netns exec "$NS_SERVER" ip addr add "$XDP_SERVER/24" dev "$IF_S"
        ip netns exec "$NS_CLIENT" ip addr add "$XDP_CLIENT/24" dev "$IF_C"
        ip netns exec "$NS_SERVER" ip link set "$IF_S" up
        ip netns exec "$NS_CLIENT" ip link set "$IF_C" up
        IN=(ip netns exec "$NS_SERVER"); FROM=(ip netns exec "$NS_CLIENT")
        start_server "$XDP_SERVER:$PORT" "127.0.0.1:$API_PORT_XDP" "$OUT/robustness-server-xdp.log" \
            --xdp-interface "$IF_S"
        SERVERX_PID="$STARTED_PID"
        if ! answering "$SERVERX_PID" "$XDP_SERVER:$PORT"; then
            xdp_fail "server-answers: sextant did not answer www.rob.example on $XDP_SERVER:$PORT through XDP; its log: $(tr '\n' ' ' < "$OUT/robustness-server-xdp.log")"
        else
            # Queries that arrive before the XDP program is attached are the
            # UDP socket's (it binds first): count from here on.
            udp_xdp_now() { # -> "QUERIES_UDP QUERIES_XDP" from /v1/status, or nothing
                local status
                status="$("${IN[@]}" curl -s "http://127.0.0.1:$API_PORT_XDP/v1/status" || true)"
                echo "$(echo "$status" | grep -o '"queries_udp":[0-9]*' | cut -d: -f2) $(echo "$status" | grep -o '"queries_xdp":[0-9]*' | cut -d: -f2)"
            }
            read -r udp0 xdp0 <<< "$(udp_xdp_now)"
            set +e
            probe "$XDP_SERVER:$PORT" "$SERVERX_PID" "$CHECKS6" $((UDP_MUTATIONS / 10)) $((TCP_MUTATIONS / 10)) \
                2>&1 | sed -E 's/^(PASS|FAIL|SUMMARY)/xdp \1/' | tee -a "$OUT/robustness.txt"
            rcx="${PIPESTATUS[0]}"
            set -e
            [ "$rcx" -eq 124 ] && xdp_fail "robustness: the prober did not finish within $TIME_LIMIT s"
            [ "$rcx" -eq 0 ] || rc=1
            if ! kill -0 "$SERVERX_PID" 2>/dev/null; then
                xdp_fail "robustness: the server exited; its log is $OUT/robustness-server-xdp.log"
            else
                # The UDP queries went through the XDP path, not the UDP
                # socket that shares the address.
                read -r udp1 xdp1 <<< "$(udp_xdp_now)"
                if [ -n "${udp0:-}" ] && [ -n "${xdp0:-}" ] && [ -n "${udp1:-}" ] && [ -n "${xdp1:-}" ] \
                    && [ $((udp1 - udp0)) -gt 0 ] && [ $(( (xdp1 - xdp0) * 1000 )) -ge $(( (udp1 - udp0) * 999 )) ]; then
                    # The rest are mutated datagrams over the MTU: they come
                    # as fragments, which the program leaves to the kernel.
                    echo "PASS xdp path: $((xdp1 - xdp0)) of the checks' $((udp1 - udp0)) UDP queries came through the XDP path (want >= 99.9 %; the others were fragmented, which the kernel's socket answers)" \
                        | tee -a "$OUT/robustness.txt"
                else
                    xdp_fail "path: of the checks' UDP queries (queries_udp ${udp0:-?} -> ${udp1:-?}), $(( ${xdp1:-0} - ${xdp0:-0} )) came through the XDP path (queries_xdp ${xdp0:-?} -> ${xdp1:-?})"
                fi
            fi
        fi
    fi
fi
exit "$rc"
