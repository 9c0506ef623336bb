#!/usr/bin/env bash
# Sextant side by side with the authoritative servers users would otherwise
# run, in one run, on loopback: Knot DNS (a static zone: the upper bound),
# gdnsd (multifo, weighted, geoip with a nets map) and PowerDNS (bind backend,
# LUA records: ifportup, pickwrandom, view), each configured for the same
# answers as Sextant (bench/peers/; the rows are bench/peers/cases.txt).
#
#   bench/peers.sh                       # full: 10 s load + 5 s latency per row, 3 repeats
#   DURATION=2 REPEAT=1 bench/peers.sh   # short mode, under 2 minutes (once built)
#   ONLY='static|w10' bench/peers.sh     # only the cases matching the regex
#
# Every server is pinned to SERVER_CPU (one UDP worker / thread each) and
# dnsperf to CLIENT_CPU; the servers run side by side but are loaded one at
# a time, row after row (A B C D A B C D ...), REPEAT times; medians are
# reported. The row sextant-rr-2w is the two-worker layout: Sextant with
# UDP_WORKERS_2 (2) workers pinned to TWO_SERVER_CPUS (0,1), dnsperf still on
# CLIENT_CPU (so it shares a core with one of the workers).
#
# Per row: queries/s under full load (dnsperf -c CLIENTS -q OUTSTANDING),
# the server's CPU share during that run (/proc/PID/stat utime+stime, all
# threads), queries/s per server core (qps / CPU share), loss, and latency
# p50/p90/p99 at a fixed LAT_QPS (1000) queries/s from the per-query latencies
# of `dnsperf -v`; then Sextant's ratio to each peer for the same kind of
# answer. Raw output goes to bench/out/peers/.
#
# The row `ceiling` is not a DNS server: it is Sextant's own UDP socket loop
# (crates/sextant-dns/examples/udp_ceiling.rs: the same bind, recvmmsg and
# sendmmsg batches) answering every query with a canned answer of the same
# size, so it measures what the kernel's socket path allows per core on this
# machine; every row is also printed as a share of it. Rows ending in
# -osbuf run with the kernel's default UDP receive buffer
# (--udp-receive-buffer 0), as Knot and gdnsd do, instead of Sextant's
# 4 MiB default.
#
# The row sextant-rr-scraped is the failover row again, on the same
# instance right after it, with curl fetching its /metrics every second
# (from CLIENT_CPU) while dnsperf loads it: its queries/s against
# sextant-rr's is what a Prometheus scrape costs the answer rate (the
# target is 0.98x or better). The same process, because two identical
# instances differ by up to 4 % per core on this machine (SCRAPE=0, the
# A/A control, measures that), which would hide the scrape's cost.
#
# The row sextant-rr-dashboard is the failover row again in the same way,
# with what an open dashboard (/ui/) asks of the server: every 2 s the
# JSON of all its views at once (more than any one view polls), and one
# /v1/events stream held open, from CLIENT_CPU. DASHBOARD=0 leaves it
# unpolled (its A/A control).
#
# The signed rows (case signed, queried with the DO bit): sextant-rr-do is
# the failover row asked with DO of the unsigned instance; sextant-signed-rr
# the same name of an instance whose zone is signed (a KSK and a ZSK made
# with `sextant dnssec keygen` at the start, ECDSA P-256), its signature
# cache warm; their ratio is what signing costs (the target is 0.9x or
# better). sextant-signed-cold (case cold) asks the signed instance for
# names that do not exist, each once (COLD_NAMES of them, more than the
# signature cache holds), so every answer signs its NSEC: its queries/s per
# core is the signatures per second per core.
#
# The signed peers, asked with DO beside them (loopback only): knot-onlinesign
# is Knot with mod-onlinesign on the static zone (bench/peers/
# knot-onlinesign.conf; it signs every answer as it goes out, with an ECDSA
# P-256 CSK it makes itself at start), and knot-onlinesign-cold asks it the
# cold row's names (its NSEC "black lies" signed one by one); pdns-lua-signed
# is PowerDNS with the failover LUA record (ifportup) of pdns-ifportup, its
# zone secured with `pdnsutil secure-zone` (bind backend with a DNSSEC
# database, bind-dnssec-db; one ECDSA P-256 CSK), so the LUA answers are
# signed live (bench/peers/pdns-signed/). The summary prints each peer's own
# signed/unsigned ratio (knot-onlinesign / knot, pdns-lua-signed /
# pdns-ifportup) next to Sextant's.
#
# NET=veth runs the same servers over a veth pair between two network
# namespaces the script makes (server 10.53.0.1, client 10.53.0.2) instead
# of loopback: each end's receive work runs in its own NAPI thread
# (threaded NAPI, GRO on), pinned to the CPU of its side, and the server
# ends have TSO off, which makes veth hand the answers to the client end's
# NAPI thread too (with TSO on it delivers them in the sender's context).
# So CPU busy (the server's CPU from /proc/stat) counts what the server
# side costs and nothing of the client's, as with two machines and a NIC
# whose interrupts land on the server's core. The mode adds two XDP rows,
# each on a veth pair of its own so that its program does not sit in front
# of the other rows: knot-xdp, Knot in its XDP mode (10.53.1.1), and
# sextant-xdp-*, Sextant with --xdp-interface (10.53.2.1; the
# preferred-location instance's XDP twin on 10.53.3.1). The clients
# (10.53.0.0/16) are in Europe.UK as 127.0.0.0/24 is, and Sextant's site
# address becomes 10.53.0.1 so that its RTT probes reach them. PowerDNS
# and the two-worker layout are not what the mode compares, so those rows
# are left out. Needs root.
#
#   NET=veth OUTSTANDING=100 bench/peers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

DURATION="${DURATION:-10}"              # seconds of full-load dnsperf per row
if [ -z "${LAT_DURATION:-}" ]; then     # seconds of the fixed-rate latency run per row
    LAT_DURATION=5; [ "$DURATION" -lt 5 ] && LAT_DURATION="$DURATION"
fi
REPEAT="${REPEAT:-3}"
LAT_QPS="${LAT_QPS:-1000}"
CLIENTS="${CLIENTS:-20}"                # dnsperf -c
TIMEOUT="${TIMEOUT:-1}"                 # dnsperf -t: a query unanswered this long is lost
OUTSTANDING="${OUTSTANDING:-500}"       # dnsperf -q
SERVER_CPU="${SERVER_CPU:-0}"
# SCRAPE=0 leaves sextant-rr-scraped unscraped: the A/A control, which shows
# how far two runs of one instance differ without any scrape.
SCRAPE="${SCRAPE:-1}"
DASHBOARD="${DASHBOARD:-1}"
CLIENT_CPU="${CLIENT_CPU:-1}"
UDP_WORKERS="${UDP_WORKERS:-1}"         # Sextant's workers in every row but the 2w one
UDP_WORKERS_2="${UDP_WORKERS_2:-2}"     # the two-worker layout
TWO_SERVER_CPUS="${TWO_SERVER_CPUS:-0,1}"
BASE_PORT="${BASE_PORT:-5391}"          # DNS ports BASE_PORT .. BASE_PORT+11
API_BASE_PORT="${API_BASE_PORT:-8191}"  # Sextant's API ports
ONLY="${ONLY:-.}"
COLD_NAMES="${COLD_NAMES:-300000}"      # distinct names of the cold signed row
NET="${NET:-loopback}"                  # loopback, or veth (see above)
case "$NET" in
    loopback) ADDR=127.0.0.1 ;;
    veth) ADDR=10.53.0.1; XDP_ADDR=10.53.1.1; SEXTANT_XDP_ADDR=10.53.2.1; SEXTANT_XDP_PL_ADDR=10.53.3.1
          CLIENT_ADDR=10.53.0.2 ;;
    *) echo "peers: NET is loopback or veth, not '$NET'" >&2; exit 2 ;;
esac
if [ "$NET" = veth ] && [ "$(id -u)" -ne 0 ]; then
    echo "peers: NET=veth makes network namespaces and needs root" >&2; exit 1
fi

# ---- tools and peers, from Debian packages when missing
need=()
command -v dnsperf >/dev/null 2>&1 || need+=(dnsperf)
command -v dig >/dev/null 2>&1 || need+=(bind9-dnsutils)
command -v taskset >/dev/null 2>&1 || need+=(util-linux)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ "$NET" = veth ]; then
    command -v ip >/dev/null 2>&1 || need+=(iproute2)
    command -v ethtool >/dev/null 2>&1 || need+=(ethtool)
fi
command -v knotd >/dev/null 2>&1 || [ -x /usr/sbin/knotd ] || need+=(knot)
command -v gdnsd >/dev/null 2>&1 || [ -x /usr/sbin/gdnsd ] || need+=(gdnsd)
command -v pdns_server >/dev/null 2>&1 || [ -x /usr/sbin/pdns_server ] || need+=(pdns-server)
[ -e /usr/lib/x86_64-linux-gnu/pdns/libbindbackend.so ] || ls /usr/lib/*/pdns/libbindbackend.so >/dev/null 2>&1 \
    || need+=(pdns-backend-bind)
if [ "${#need[@]}" -gt 0 ]; then
    SUDO=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO=(sudo -n); else
            echo "peers: missing ${need[*]}; run 'apt-get install -y ${need[*]}' as root" >&2; exit 1
        fi
    fi
    echo "== installing ${need[*]}" >&2
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive timeout 300 apt-get update -qq
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq "${need[@]}" >&2
    # The packages may have started their own daemons (on port 53, as
    # their users): stop them through their service manager or init
    # script, else by the PID in their pid file; never by name.
    for svc in knot gdnsd pdns; do
        if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ] \
            && systemctl is-active --quiet "$svc" 2>/dev/null; then
            "${SUDO[@]}" timeout 30 systemctl stop "$svc" || true
        elif [ -x "/etc/init.d/$svc" ]; then
            "${SUDO[@]}" timeout 30 "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
        fi
        for pidfile in "/run/$svc/$svc.pid" "/run/$svc.pid" "/run/pdns/pdns.pid" "/run/knot/knot.pid"; do
            [ -r "$pidfile" ] || continue
            pid="$(tr -dc 0-9 < "$pidfile")"
            [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && "${SUDO[@]}" kill -TERM "$pid" || true
        done
    done
fi
PATH="$PATH:/usr/sbin:/sbin"
for tool in dnsperf dig taskset curl python3 knotd gdnsd pdns_server pdnsutil $([ "$NET" = veth ] && echo ip ethtool); do
    command -v "$tool" >/dev/null 2>&1 || { echo "peers: $tool is missing" >&2; exit 1; }
done

BIN="$(bench_release_bin)"
echo "== building the kernel-ceiling example" >&2
cargo build --release -p sextant-dns --example udp_ceiling >&2
CEILING_BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/examples/udp_ceiling"
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
OUT="$PWD/bench/out/peers"
rm -rf "$OUT"; mkdir -p "$OUT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sextant-peers.XXXXXX")"
CONF="$PWD/bench/peers"

declare -A PID PORT HOST
PIDS=()
# sxt-PID-TAG: the test harness's stale-namespace sweep (netns.rs) removes
# them if this script dies without its trap.
NS_SERVER="sxt-$$-peers-s"
NS_CLIENT="sxt-$$-peers-c"
cleanup() {
    local i
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do bench_stop_pid "${PIDS[$i]}"; done
    if [ "$NET" = veth ]; then
        # The veth pairs go with their namespaces.
        ip netns del "$NS_SERVER" 2>/dev/null || true
        ip netns del "$NS_CLIENT" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# SRV and CLI prefix every server and every client command: empty on
# loopback, `ip netns exec NS` over veth (which execs the command, so $! is
# the server's own PID).
SRV=(); CLI=()
if [ "$NET" = veth ]; then
    SRV=(ip netns exec "$NS_SERVER"); CLI=(ip netns exec "$NS_CLIENT")
    export BENCH_CLIENT_NS="$NS_CLIENT"
    ip netns add "$NS_SERVER"; ip netns add "$NS_CLIENT"
    "${SRV[@]}" ip link set lo up; "${CLI[@]}" ip link set lo up
    # pair NET_INDEX SERVER_IF CLIENT_IF: 10.53.NET_INDEX.1 (server) and .2,
    # GRO on and threaded NAPI on both ends, each end's NAPI thread pinned to
    # its side's CPU.
    pair() {
        ip link add "$2" type veth peer name "$3"
        ip link set "$2" netns "$NS_SERVER"; ip link set "$3" netns "$NS_CLIENT"
        "${SRV[@]}" ip addr add "10.53.$1.1/24" dev "$2"; "${CLI[@]}" ip addr add "10.53.$1.2/24" dev "$3"
        "${SRV[@]}" ip link set "$2" up; "${CLI[@]}" ip link set "$3" up
        "${SRV[@]}" ethtool -K "$2" gro on tso off; "${CLI[@]}" ethtool -K "$3" gro on
        "${SRV[@]}" sh -c "echo 1 > /sys/class/net/$2/threaded"
        "${CLI[@]}" sh -c "echo 1 > /sys/class/net/$3/threaded"
        local ifname cpu thread
        for ifname in "$2" "$3"; do
            cpu="$SERVER_CPU"; [ "$ifname" = "$3" ] && cpu="$CLIENT_CPU"
            # The kernel names each NAPI thread napi/IFNAME-ID.
            for thread in $(ps -eo pid=,comm= | awk -v p="napi/$ifname-" 'index($2, p) == 1 { print $1 }'); do
                taskset -pc "$cpu" "$thread" > /dev/null
            done
        done
    }
    pair 0 "sxs$$" "sxc$$"
    pair 1 "sxx$$" "sxy$$"
    pair 2 "sxz$$" "sxw$$"
    pair 3 "sxv$$" "sxu$$"
    XDP_IF="sxx$$"
    SEXTANT_XDP_IF="sxz$$"
    SEXTANT_XDP_PL_IF="sxv$$"
    for a in "$ADDR" "$XDP_ADDR" "$SEXTANT_XDP_ADDR" "$SEXTANT_XDP_PL_ADDR"; do
        "${CLI[@]}" ping -c 1 -W 2 "$a" > /dev/null || { echo "peers: the veth pair to $a passes no traffic" >&2; exit 1; }
    done
fi

fill() { # fill SRC DST PORT [ADDR]: a config template with @WORK@, @ADDR@ and @PORT@ filled in
    sed -e "s|@WORK@|$WORK|g" -e "s|@ADDR@|${4:-$ADDR}|g" -e "s|@PORT@|$3|g" "$1" > "$2"
}
started() { # started INSTANCE PID PORT [ADDR]
    PID[$1]="$2"; PORT[$1]="$3"; HOST[$1]="${4:-$ADDR}"; PIDS+=("$2")
}

if [ "$NET" = loopback ]; then
    for p in $(seq "$BASE_PORT" $((BASE_PORT + 11))); do
        if ss -Hlun "sport = :$p" 2>/dev/null | grep -q .; then
            echo "peers: UDP port $p is in use; set BASE_PORT" >&2; exit 1
        fi
    done
fi

# ---- the failover addresses' TCP port, for every server's health check
bench_start_listeners "$OUT/listen.log" "$([ "$NET" = veth ] && echo "$NS_SERVER")"
PIDS+=("$BENCH_LISTENER_PID")

# ---- Knot DNS
mkdir -p "$WORK/knot"
cp "$CONF/peers.example.zone" "$WORK/knot/"
fill "$CONF/knot.conf" "$WORK/knot.conf" "$BASE_PORT"
"${SRV[@]}" taskset -c "$SERVER_CPU" knotd -c "$WORK/knot.conf" > "$OUT/knot.log" 2>&1 &
started knot "$!" "$BASE_PORT"
INSTANCES=(knot gdnsd sextant sextant-osbuf ceiling ceiling-osbuf)
if [ "$NET" = veth ]; then
    mkdir -p "$WORK/knot-xdp"
    cp "$CONF/peers.example.zone" "$WORK/knot-xdp/"
    sed -e "s|@WORK@|$WORK|g" -e "s|@IFACE@|$XDP_IF|g" -e "s|@PORT@|$BASE_PORT|g" "$CONF/knot-xdp.conf" > "$WORK/knot-xdp.conf"
    "${SRV[@]}" taskset -c "$SERVER_CPU" knotd -c "$WORK/knot-xdp.conf" > "$OUT/knot-xdp.log" 2>&1 &
    started knot-xdp "$!" "$BASE_PORT" "$XDP_ADDR"
    INSTANCES+=(knot-xdp)
else
    INSTANCES+=(pdns sextant-2w)
fi

# ---- gdnsd (its control socket and state live in its packaged /run/gdnsd
# and /var/lib/gdnsd; only one gdnsd may run at a time)
mkdir -p "$WORK/gdnsd/zones" /run/gdnsd /var/lib/gdnsd
fill "$CONF/gdnsd/config" "$WORK/gdnsd/config" $((BASE_PORT + 1))
cp "$CONF/gdnsd/zones/peers.example" "$WORK/gdnsd/zones/"
"${SRV[@]}" taskset -c "$SERVER_CPU" gdnsd -c "$WORK/gdnsd" start > "$OUT/gdnsd.log" 2>&1 &
started gdnsd "$!" $((BASE_PORT + 1))

# ---- PowerDNS
if [ "$NET" = loopback ]; then
    mkdir -p "$WORK/pdns"
    for f in pdns.conf named.conf peers.example.zone; do
        fill "$CONF/pdns/$f" "$WORK/pdns/$f" $((BASE_PORT + 2))
    done
    taskset -c "$SERVER_CPU" pdns_server --config-dir="$WORK/pdns" > "$OUT/pdns.log" 2>&1 &
    started pdns "$!" $((BASE_PORT + 2))
fi

# ---- The signed peers (loopback, beside sextant-signed): Knot signing
# online, its key made by Knot at start; PowerDNS's LUA records signed live,
# the zone secured with pdnsutil before the server starts.
if [ "$NET" = loopback ]; then
    mkdir -p "$WORK/knot-onlinesign/kasp"
    cp "$CONF/peers.example.zone" "$WORK/knot-onlinesign/"
    fill "$CONF/knot-onlinesign.conf" "$WORK/knot-onlinesign.conf" $((BASE_PORT + 10))
    taskset -c "$SERVER_CPU" knotd -c "$WORK/knot-onlinesign.conf" > "$OUT/knot-onlinesign.log" 2>&1 &
    started knot-onlinesign "$!" $((BASE_PORT + 10))
    mkdir -p "$WORK/pdns-signed"
    for f in pdns.conf named.conf; do
        fill "$CONF/pdns-signed/$f" "$WORK/pdns-signed/$f" $((BASE_PORT + 11))
    done
    cp "$CONF/pdns/peers.example.zone" "$WORK/pdns-signed/"
    if ! { pdnsutil --config-dir="$WORK/pdns-signed" create-bind-db "$WORK/pdns-signed/dnssec.db" \
            && pdnsutil --config-dir="$WORK/pdns-signed" secure-zone peers.example; } > "$OUT/pdns-signed.pdnsutil.log" 2>&1; then
        echo "peers: pdnsutil could not secure PowerDNS's zone:" >&2; cat "$OUT/pdns-signed.pdnsutil.log" >&2; exit 1
    fi
    taskset -c "$SERVER_CPU" pdns_server --config-dir="$WORK/pdns-signed" > "$OUT/pdns-signed.log" 2>&1 &
    started pdns-signed "$!" $((BASE_PORT + 11))
    INSTANCES+=(knot-onlinesign pdns-signed)
fi

# ---- Sextant: the main instance, the preferred-location one (its policy
# is evaluated for every query, so it is kept out of the other rows) and
# the two-worker layout
# Over veth the site's address is the server end's (the source of its RTT
# probes must be an address of an interface that reaches the clients).
SITE_ADDR=127.0.0.2; [ "$NET" = veth ] && SITE_ADDR="$ADDR"
sed -e "s|^add gslb site bench 127\.0\.0\.2 |add gslb site bench $SITE_ADDR |" "$CONF/sextant.conf" > "$WORK/sextant.conf"
grep -q "^add gslb site bench $SITE_ADDR " "$WORK/sextant.conf" || { echo "peers: sextant.conf has no site bench 127.0.0.2" >&2; exit 1; }
cat "$WORK/sextant.conf" "$CONF/sextant-prefloc.conf" > "$WORK/sextant-pl.conf"
start_sextant() { # start_sextant INSTANCE CONFIG PORT API_PORT WORKERS CPUS [RECEIVE_BUFFER [ADDR [ARGS...]]]
    local host="${8:-$ADDR}"
    RUST_LOG="${RUST_LOG:-warn}" "${SRV[@]}" taskset -c "$6" "$BIN" serve --config "$2" \
        --dns-listen "$host:$3" --api-listen "127.0.0.1:$4" --udp-workers "$5" \
        ${7:+--udp-receive-buffer "$7"} "${@:9}" > "$OUT/$1.log" 2>&1 &
    started "$1" "$!" "$3" "$host"
}
start_sextant sextant "$WORK/sextant.conf" $((BASE_PORT + 3)) "$API_BASE_PORT" "$UDP_WORKERS" "$SERVER_CPU"
start_sextant sextant-pl "$WORK/sextant-pl.conf" $((BASE_PORT + 4)) $((API_BASE_PORT + 1)) "$UDP_WORKERS" "$SERVER_CPU"
INSTANCES+=(sextant-pl)
if [ "$NET" = loopback ]; then
    start_sextant sextant-2w "$WORK/sextant.conf" $((BASE_PORT + 5)) $((API_BASE_PORT + 2)) "$UDP_WORKERS_2" "$TWO_SERVER_CPUS"
else
    # The XDP path: its program on its own pair; one XDP worker (the pair
    # has one receive queue) beside one UDP worker, all on SERVER_CPU; and
    # the preferred-location instance's twin on a pair of its own.
    start_sextant sextant-xdp "$WORK/sextant.conf" "$BASE_PORT" $((API_BASE_PORT + 4)) "$UDP_WORKERS" "$SERVER_CPU" \
        "" "$SEXTANT_XDP_ADDR" --xdp-interface "$SEXTANT_XDP_IF"
    start_sextant sextant-xdp-pl "$WORK/sextant-pl.conf" "$BASE_PORT" $((API_BASE_PORT + 5)) "$UDP_WORKERS" "$SERVER_CPU" \
        "" "$SEXTANT_XDP_PL_ADDR" --xdp-interface "$SEXTANT_XDP_PL_IF"
    INSTANCES+=(sextant-xdp sextant-xdp-pl)
fi
start_sextant sextant-osbuf "$WORK/sextant.conf" $((BASE_PORT + 7)) $((API_BASE_PORT + 3)) "$UDP_WORKERS" "$SERVER_CPU" 0
# The signed instance: the same configuration, its zone signed by a KSK and
# a ZSK made as an operator makes them.
if [ "$NET" = loopback ]; then
    mkdir -p "$WORK/keys"
    ksk="$("$BIN" dnssec keygen --ksk -K "$WORK/keys" peers.example)"
    zsk="$("$BIN" dnssec keygen -K "$WORK/keys" peers.example)"
    {
        cat "$WORK/sextant.conf"
        echo "add dns key peers.ksk $WORK/keys/$ksk.key $WORK/keys/$ksk.private"
        echo "add dns key peers.zsk $WORK/keys/$zsk.key $WORK/keys/$zsk.private"
        echo "sign dns zone peers.example -keyName peers.ksk peers.zsk"
    } > "$WORK/sextant-signed.conf"
    start_sextant sextant-signed "$WORK/sextant-signed.conf" $((BASE_PORT + 9)) $((API_BASE_PORT + 6)) "$UDP_WORKERS" "$SERVER_CPU"
    INSTANCES+=(sextant-signed)
fi
SCRAPED_API_PORT="$API_BASE_PORT"

# ---- the kernel's ceiling: Sextant's socket loop with a canned answer (the
# static name's four addresses), with Sextant's receive buffer and the kernel's
start_ceiling() { # start_ceiling INSTANCE PORT [RECEIVE_BUFFER]
    "${SRV[@]}" taskset -c "$SERVER_CPU" "$CEILING_BIN" "$ADDR:$2" 127.0.60.1,127.0.60.2,127.0.60.3,127.0.60.4 ${3:+"$3"} \
        > "$OUT/$1.log" 2>&1 &
    started "$1" "$!" "$2"
}
start_ceiling ceiling $((BASE_PORT + 6))
start_ceiling ceiling-osbuf $((BASE_PORT + 8)) 0

for inst in "${INSTANCES[@]}"; do
    if ! bench_wait_answer "${PID[$inst]}" "${HOST[$inst]}" "${PORT[$inst]}" static.peers.example '^127\.0\.60\.'; then
        echo "peers: $inst did not answer static.peers.example on port ${PORT[$inst]}; its log:" >&2
        cat "$OUT/$inst.log" >&2
        exit 1
    fi
done

# The signed peers must really sign: an RRSIG beside the answer to DO.
for inst in knot-onlinesign pdns-signed; do
    [ -n "${PID[$inst]:-}" ] || continue
    if ! dig @"${HOST[$inst]}" -p "${PORT[$inst]}" +dnssec +norec +time=1 +tries=2 static.peers.example A \
        | grep -Eq 'IN[[:space:]]+RRSIG[[:space:]]+A '; then
        echo "peers: $inst answers static.peers.example without an RRSIG for DO; its log:" >&2
        cat "$OUT/$inst.log" >&2
        exit 1
    fi
done

# Wait until the failover addresses are UP everywhere (all four seen), and
# until Sextant answers the RTT name by RTT (it must first probe dnsperf's
# address), so that only steady-state answers are measured.
seen() { # seen PORT NAME [HOST] -> the distinct addresses of 200 answers
    local f="$WORK/q-$2.txt"
    for _ in $(seq 200); do echo "$2 A"; done > "$f"
    "${CLI[@]}" dig @"${3:-$ADDR}" -p "$1" +short +time=1 +tries=1 -f "$f" 2>/dev/null | grep -E '^[0-9.]+$' | sort -u | sort -t. -k4n | tr '\n' ' ' | sed 's/ $//'
}
up_all=""
for _ in $(seq 60); do
    ok=1
    # gdnsd answers every UP address; it has all four when the checks pass.
    [ "$("${CLI[@]}" dig @"$ADDR" -p "${PORT[gdnsd]}" +short +time=1 +tries=1 failover.peers.example A | wc -l)" -eq 4 ] || ok=""
    # Sextant's round robin answers each of the four once they are UP.
    for inst in sextant sextant-osbuf $([ "$NET" = loopback ] && echo sextant-2w sextant-signed || echo sextant-xdp); do
        [ "$(seen "${PORT[$inst]}" failover.peers.example "${HOST[$inst]}" | wc -w)" -eq 4 ] || ok=""
    done
    [ -n "$ok" ] && { up_all=1; break; }
    sleep 0.5
done
[ -n "$up_all" ] || echo "peers: warning: the failover addresses are not all UP yet (the check below says where)" >&2
# The RTT instances and their API ports: the client's address is the LDNS
# each one probes (over veth, the client end of its pair).
rtt_ready() { # rtt_ready INSTANCE API_PORT CLIENT
    local i
    for i in $(seq 100); do
        if "${SRV[@]}" curl -s "http://127.0.0.1:$2/v1/explain?name=rtt.peers.example&client=$3" \
            | grep -q '"reason":"chosen by RTT"'; then return 0; fi
        "${CLI[@]}" dig @"${HOST[$1]}" -p "${PORT[$1]}" +short +time=1 +tries=1 rtt.peers.example A > /dev/null 2>&1 || true
        sleep 0.2
    done
    echo "peers: $1 does not answer rtt.peers.example by RTT for $3; /v1/ldns:" >&2
    "${SRV[@]}" curl -s "http://127.0.0.1:$2/v1/ldns" >&2; return 1
}
if [ "$NET" = loopback ]; then
    rtt_ready sextant "$API_BASE_PORT" "$ADDR"
else
    rtt_ready sextant "$API_BASE_PORT" "$CLIENT_ADDR"
    rtt_ready sextant-xdp $((API_BASE_PORT + 4)) "${SEXTANT_XDP_ADDR%.1}.2"
fi

# ---- the rows, and the check that every server gives the same answers
ROWS=()
while read -r case row inst name check addrs; do
    [ -n "${case:-}" ] && [ "${case#\#}" = "$case" ] || continue
    echo "$case" | grep -Eq "$ONLY" || continue
    [ -n "${PID[$inst]:-}" ] || continue # not started in this NET mode
    ROWS+=("$case|$row|$inst|$name|$check|$addrs")
done < "$CONF/cases.txt"

echo "== answers (dig @$ADDR from ${CLIENT_ADDR:-$ADDR})"
mismatch=0
for r in "${ROWS[@]}"; do
    IFS='|' read -r case row inst name check addrs <<< "$r"
    fq="$name.peers.example"
    want="$(echo "$addrs" | tr ' ' '\n' | sort -t. -k4n | tr '\n' ' ' | sed 's/ $//')"
    one="$("${CLI[@]}" dig @"${HOST[$inst]}" -p "${PORT[$inst]}" +short +time=1 +tries=1 "$fq" A | tr '\n' ' ' | sed 's/ $//')"
    if [ "$check" = none ]; then
        got="$want"
    elif [ "$check" = all ]; then
        got="$(echo "$one" | tr ' ' '\n' | sort -t. -k4n | tr '\n' ' ' | sed 's/ $//')"
    else
        got="$(seen "${PORT[$inst]}" "$fq" "${HOST[$inst]}")"
    fi
    if [ "$got" = "$want" ]; then verdict=ok; else verdict="MISMATCH (want $want)"; mismatch=1; fi
    printf '%-9s %-19s %-22s one answer: %-52s %s: %s  %s\n' "$case" "$row" "$fq" "$one" \
        "$([ "$check" = all ] && echo every || echo 'seen in 200')" "$got" "$verdict"
done | tee "$OUT/answers.txt"
grep -q MISMATCH "$OUT/answers.txt" && { echo "peers: the servers do not give the same answers" >&2; exit 1; }

# ---- the runs
: > "$OUT/runs.txt"
total=$(( ${#ROWS[@]} * REPEAT ))
n=0
for rep in $(seq "$REPEAT"); do
    for r in "${ROWS[@]}"; do
        IFS='|' read -r case row inst name check addrs <<< "$r"
        n=$((n + 1))
        pid="${PID[$inst]}"; port="${PORT[$inst]}"; host="${HOST[$inst]}"
        kill -0 "$pid" 2>/dev/null || { echo "peers: $inst (PID $pid) has exited; its log:" >&2; cat "$OUT/$inst.log" >&2; exit 1; }
        query="$WORK/query.txt"; dnssec=()
        echo "$name.peers.example A" > "$query"
        case "$case" in
            signed) dnssec=(-D) ;;
            cold)
                # Names never asked before, each once (the signature cache
                # holds fewer): every answer's NSEC is signed.
                dnssec=(-D); query="$WORK/cold-$rep.txt"
                [ -s "$query" ] || awk -v n="$COLD_NAMES" -v r="$rep" 'BEGIN { for (i = 0; i < n; i++) printf "c%d-%d.peers.example A\n", r, i }' > "$query" ;;
        esac
        echo "== [$n/$total] repeat $rep: $row ($name.peers.example)" >&2
        base="$OUT/$row.$rep"
        scraper=""
        if [ "$row" = sextant-rr-scraped ] && [ "$SCRAPE" = 1 ]; then
            # A Prometheus stand-in: one /metrics scrape a second, for as
            # long as the load run (bounded), from the client's CPU.
            (
                end=$((SECONDS + DURATION + 2))
                while [ "$SECONDS" -lt "$end" ]; do
                    "${SRV[@]}" taskset -c "$CLIENT_CPU" curl -s -o /dev/null --max-time 1 \
                        "http://127.0.0.1:$SCRAPED_API_PORT/metrics" || true
                    sleep 1
                done
            ) &
            scraper=$!
        elif [ "$row" = sextant-rr-dashboard ] && [ "$DASHBOARD" = 1 ]; then
            # The dashboard's requests: every view's JSON every 2 s and an
            # open event stream, for as long as the load run (bounded).
            (
                end=$((SECONDS + DURATION + 2))
                "${SRV[@]}" taskset -c "$CLIENT_CPU" curl -s -N -o /dev/null --max-time $((DURATION + 2)) \
                    "http://127.0.0.1:$SCRAPED_API_PORT/v1/events" &
                api="http://127.0.0.1:$SCRAPED_API_PORT/v1"
                while [ "$SECONDS" -lt "$end" ]; do
                    # One client for the round, over one kept-alive connection
                    # as a browser's: a curl process per request would cost
                    # the load generator's CPU more than the server's.
                    "${SRV[@]}" taskset -c "$CLIENT_CPU" curl -s --max-time 1 \
                        "$api/stats" "$api/services" "$api/sites" "$api/domains" \
                        "$api/vservers" "$api/records" "$api/ldns" "$api/vrrp" > /dev/null || true
                    sleep 2
                done
                wait
            ) &
            scraper=$!
        fi
        t0="$(bench_ticks "$pid")"; c0="$(bench_cpu_ticks "$SERVER_CPU")"; w0="$(date +%s.%N)"
        "${CLI[@]}" taskset -c "$CLIENT_CPU" dnsperf -s "$host" -p "$port" -d "$query" "${dnssec[@]}" \
            -c "$CLIENTS" -T 1 -q "$OUTSTANDING" -t "$TIMEOUT" -l "$DURATION" > "$base.load.txt" 2>&1 || true
        if [ -n "$scraper" ]; then kill "$scraper" 2>/dev/null || true; wait "$scraper" 2>/dev/null || true; fi
        t1="$(bench_ticks "$pid")"; c1="$(bench_cpu_ticks "$SERVER_CPU")"; w1="$(date +%s.%N)"
        share="$(bench_share "$t0" "$t1" "$w0" "$w1")"
        busy="$(bench_share "$c0" "$c1" "$w0" "$w1")"
        "${CLI[@]}" taskset -c "$CLIENT_CPU" dnsperf -s "$host" -p "$port" -d "$query" "${dnssec[@]}" \
            -c 1 -T 1 -Q "$LAT_QPS" -t "$TIMEOUT" -l "$LAT_DURATION" -v > "$base.lat.txt" 2>&1 || true
        bench_latencies "$base.lat.txt" "$base.lat.sorted"
        qps="$(bench_field "$base.load.txt" 'Queries per second:')"
        lost="$(bench_lost "$base.load.txt" | sed -E 's/.*\(([0-9.]+%)\).*/\1/')"
        lat_lost="$(bench_lost "$base.lat.txt" | sed -E 's/.*\(([0-9.]+%)\).*/\1/')"
        echo "$case:$row $rep ${qps:-0} $share ${lost:-?} $(bench_pct "$base.lat.sorted" 50) $(bench_pct "$base.lat.sorted" 90) $(bench_pct "$base.lat.sorted" 99) ${lat_lost:-?} $busy" \
            >> "$OUT/runs.txt"
    done
done

# The XDP rows must have gone through the XDP path, not the UDP socket that
# shares the address.
XDP_CHECK=""
if [ -n "${PID[sextant-xdp]:-}" ]; then
    for xdp in "sextant-xdp $((API_BASE_PORT + 4))" "sextant-xdp-pl $((API_BASE_PORT + 5))"; do
        line="$("${SRV[@]}" curl -s "http://127.0.0.1:${xdp#* }/v1/status" | python3 -c '
import json, sys
d = json.load(sys.stdin)["dns"]
print("%s: %d of its %d UDP queries came through the XDP path" % (sys.argv[1], d["queries_xdp"], d["queries_udp"]))
sys.exit(0 if d["queries_xdp"] >= 0.99 * d["queries_udp"] > 0 else 1)
' "${xdp% *}")" || { echo "peers: $line" >&2; exit 1; }
        XDP_CHECK="${XDP_CHECK:+$XDP_CHECK
}$line"
    done
fi

# ---- medians and ratios
col() { awk -v r="$1" -v c="$2" '$1 == r { print $c }' "$OUT/runs.txt"; }
declare -A PERCORE PERBUSY
ratio() { # ratio KEY_A KEY_B -> "0.95x (busy 0.97x)": per core, then per busy CPU
    awk -v a="${PERCORE[$1]:-0}" -v b="${PERCORE[$2]:-0}" -v c="${PERBUSY[$1]:-0}" -v d="${PERBUSY[$2]:-0}" \
        'BEGIN { if (b > 0) printf "%.2fx", a / b; else printf "?"; if (d > 0) printf " (busy %.2fx)", c / d }'
}
{
    echo "peers.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average at the start: $LOAD_START, at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "$("$BIN" --version 2>/dev/null || echo sextant) ($(git rev-parse --short HEAD 2>/dev/null || echo '?')), $(knotd --version 2>&1 | head -1), gdnsd $(gdnsd -h 2>&1 | sed -n 's/^gdnsd version //p' | head -1), $(pdns_server --version 2>&1 | sed -n 's/.*\(PowerDNS Authoritative Server [0-9.]*\).*/\1/p' | head -1), $(dnsperf -h 2>&1 | grep -m1 -o 'DNSPerf [0-9.]*' || echo dnsperf)"
    echo "network: $NET$([ "$NET" = veth ] && echo " (server $ADDR, Knot's XDP mode on $XDP_ADDR, Sextant's XDP path on $SEXTANT_XDP_ADDR and $SEXTANT_XDP_PL_ADDR, clients .2 of each; each end's NAPI thread on its side's CPU)")"
    echo "servers on CPU $SERVER_CPU (Sextant $UDP_WORKERS UDP worker; -2w: $UDP_WORKERS_2 workers on CPUs $TWO_SERVER_CPUS), dnsperf on CPU $CLIENT_CPU; load ${DURATION}s -c $CLIENTS -q $OUTSTANDING -t $TIMEOUT, latency ${LAT_DURATION}s at $LAT_QPS qps; median of $REPEAT"
    echo
    printf '| %-9s | %-19s | %9s | %5s | %13s | %8s | %13s | %8s | %5s | %5s | %6s | %8s |\n' case server "queries/s" CPU "q/s per core" "CPU busy" "q/s per busy" lost p50 p90 p99 "lost@1k"
    printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' ----------- --------------------- ----------: ------: ---------------: ---------: ---------------: ---------: ------: ------: -------: ---------:
    for r in "${ROWS[@]}"; do
        IFS='|' read -r case row _ <<< "$r"
        key="$case:$row"
        qps="$(col "$key" 3 | bench_median)"
        share="$(col "$key" 4 | bench_median)"
        percore="$(awk -v r="$key" '$1 == r && $4 > 0 { printf "%.0f\n", $3 / $4 }' "$OUT/runs.txt" | bench_median)"
        PERCORE[$key]="$percore"
        busy="$(col "$key" 10 | bench_median)"
        perbusy="$(awk -v r="$key" '$1 == r && $10 > 0 { printf "%.0f\n", $3 / $10 }' "$OUT/runs.txt" | bench_median)"
        PERBUSY[$key]="$perbusy"
        lost="$(col "$key" 5 | tr -d % | bench_median)"
        printf '| %-9s | %-19s | %9.0f | %5.2f | %13.0f | %8.2f | %13.0f | %7s%% | %5.0f | %5.0f | %6.0f | %7s%% |\n' "$case" "$row" "$qps" "$share" "$percore" "$busy" "$perbusy" "$lost" \
            "$(col "$key" 6 | bench_median)" "$(col "$key" 7 | bench_median)" "$(col "$key" 8 | bench_median)" "$(col "$key" 9 | tr -d % | bench_median)"
    done
    echo
    if [ "$NET" = veth ]; then
        echo "CPU: the server's own share of a core (/proc/PID/stat); CPU busy: CPU $SERVER_CPU's busy share (/proc/stat: the server, the server end's NAPI thread that receives its queries (and runs Knot's XDP program), the sending of its answers, and the idle servers beside it). Over veth, compare per busy CPU."
    else
        echo "CPU: the server's own share of a core (/proc/PID/stat); CPU busy: CPU $SERVER_CPU's busy share (/proc/stat: the server, the softirq work its traffic causes while it sleeps, and the idle servers beside it)"
    fi
    echo "latency columns: µs at $LAT_QPS queries/s; lost: share of the full-load queries dnsperf saw no answer to"
    echo
    echo "Sextant's queries/s per core against the peers' (same kind of answer; pl and rtt against the geo rows; in brackets the same per busy CPU):"
    for r in "${ROWS[@]}"; do
        IFS='|' read -r case row inst _ <<< "$r"
        [ "${inst#sextant}" != "$inst" ] || continue
        kind="$case"; [ "$case" = pl ] || [ "$case" = rtt ] && kind=geo
        parts=()
        [ -n "${PERCORE[static:knot]:-}" ] && parts+=("$(ratio "$case:$row" static:knot) knot-static")
        [ -n "${PERCORE[static:knot-xdp]:-}" ] && parts+=("$(ratio "$case:$row" static:knot-xdp) knot-xdp")
        # Knot's signed rows are the signed and cold kinds' own peers.
        if [ "$kind" = signed ] && [ -n "${PERCORE[signed:knot-onlinesign]:-}" ]; then
            parts+=("$(ratio "$case:$row" signed:knot-onlinesign) knot-onlinesign")
        fi
        if [ "$kind" = cold ] && [ -n "${PERCORE[cold:knot-onlinesign-cold]:-}" ]; then
            parts+=("$(ratio "$case:$row" cold:knot-onlinesign-cold) knot-onlinesign-cold")
        fi
        for p in "${ROWS[@]}"; do
            IFS='|' read -r pcase prow pinst _ <<< "$p"
            [ "$pcase" = "$kind" ] && [ "${pinst#sextant}" = "$pinst" ] && [ "${pinst#knot}" = "$pinst" ] && [ "${pinst#ceiling}" = "$pinst" ] || continue
            parts+=("$(ratio "$case:$row" "$pcase:$prow") $prow")
        done
        printf '  %s (%s): ' "$row" "$case"; (IFS=,; echo "${parts[*]}" | sed 's/,/, /g')
    done
    if [ -n "${PERCORE[failover:sextant-rr-scraped]:-}" ]; then
        echo
        qa="$(col failover:sextant-rr-scraped 3 | bench_median)"; qb="$(col failover:sextant-rr 3 | bench_median)"
        echo "Scraped every second against not scraped (sextant-rr-scraped / sextant-rr): queries/s $(awk -v a="$qa" -v b="$qb" 'BEGIN { if (b > 0) printf "%.3fx", a / b; else printf "?" }'), per core $(ratio failover:sextant-rr-scraped failover:sextant-rr)"
    fi
    if [ -n "${PERCORE[failover:sextant-rr-dashboard]:-}" ]; then
        qa="$(col failover:sextant-rr-dashboard 3 | bench_median)"; qb="$(col failover:sextant-rr 3 | bench_median)"
        echo "Dashboard open against none (sextant-rr-dashboard / sextant-rr): queries/s $(awk -v a="$qa" -v b="$qb" 'BEGIN { if (b > 0) printf "%.3fx", a / b; else printf "?" }'), per core $(ratio failover:sextant-rr-dashboard failover:sextant-rr)"
    fi
    if [ -n "${PERCORE[signed:sextant-signed-rr]:-}" ] && [ -n "${PERCORE[signed:sextant-rr-do]:-}" ]; then
        echo
        echo "Signed against unsigned, both asked with DO (sextant-signed-rr / sextant-rr-do): per core $(ratio signed:sextant-signed-rr signed:sextant-rr-do)"
    fi
    if [ -n "${PERCORE[cold:sextant-signed-cold]:-}" ]; then
        echo "Cold (a new name each query, its NSEC signed): ${PERCORE[cold:sextant-signed-cold]} signed answers per second per core"
    fi
    if [ -n "${PERCORE[signed:knot-onlinesign]:-}" ] || [ -n "${PERCORE[signed:pdns-lua-signed]:-}" ]; then
        echo
        echo "The peers signed against unsigned, per core: Knot (knot-onlinesign / knot, static) $(ratio signed:knot-onlinesign static:knot), PowerDNS (pdns-lua-signed / pdns-ifportup, failover) $(ratio signed:pdns-lua-signed failover:pdns-ifportup)"
    fi
    if [ -n "${PERCORE[cold:knot-onlinesign-cold]:-}" ]; then
        echo "Knot cold (a new name each query, its NSEC signed): ${PERCORE[cold:knot-onlinesign-cold]} signed answers per second per core"
    fi
    [ -n "$XDP_CHECK" ] && { echo; echo "$XDP_CHECK"; }
    if [ -n "${PERCORE[static:knot-xdp]:-}" ] && [ -n "${PERCORE[static:knot]:-}" ]; then
        echo
        echo "Knot's XDP mode against its UDP sockets (the same zone): $(ratio static:knot-xdp static:knot)"
        if [ -n "${PERBUSY[static:gdnsd]:-}" ]; then
            echo "1.5x gdnsd (static) per busy CPU is $(awk -v g="${PERBUSY[static:gdnsd]}" 'BEGIN { printf "%.0f", 1.5 * g }'), which is $(awk -v g="${PERBUSY[static:gdnsd]}" -v x="${PERBUSY[static:knot-xdp]}" 'BEGIN { if (x > 0) printf "%.2fx", 1.5 * g / x; else printf "?" }') knot-xdp's"
        fi
    fi
    if [ -n "${PERCORE[static:ceiling]:-}" ]; then
        echo
        echo "Every row's queries/s per core as a share of the kernel's ceiling (canned answers through Sextant's socket loop with its 4 MiB receive buffer, ${PERCORE[static:ceiling]} per core; with the kernel's default buffer, ${PERCORE[static:ceiling-osbuf]:-?}):"
        for r in "${ROWS[@]}"; do
            IFS='|' read -r case row inst _ <<< "$r"
            [ "$row" != ceiling ] || continue
            printf '  %-19s (%s): %s of the 4 MiB ceiling, %s of the default-buffer one\n' "$row" "$case" \
                "$(ratio "$case:$row" static:ceiling)" "$(ratio "$case:$row" static:ceiling-osbuf)"
        done
    fi
} | tee "$OUT/summary.txt"
