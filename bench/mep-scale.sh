#!/usr/bin/env bash
# MEP scale benchmark: 32 parents + 1024 children, and a 32-site flat mesh,
# every site with its own MEP driver, site IP (127.90.x.y / 127.91.x.y),
# listener and sessions, all in one process per run. Loopback only; bounded
# in time (each run has its own global timeout).
#
#   bench/mep-scale.sh                       # every run below
#   RUNS="tree mesh" bench/mep-scale.sh      # a subset
#   KA_MS=1000 KA_FIT_MS=3000 WINDOW_S=5 RUN_TIMEOUT_S=60 bench/mep-scale.sh
#
# Runs:
#   tree            parents/children, keepalive KA_MS; the failed parent's
#                   driver is dropped (its sockets close: peers see EOF)
#   tree-fit        the same with keepalive KA_FIT_MS (report traffic scales
#                   with 1/keepalive; pick one this machine can carry)
#   tree-blackhole  keepalive KA_FIT_MS; the failed parent keeps running but
#                   iptables drops all its packets, so only the keepalive
#                   timeout reveals it (worst case). Runs in a private network
#                   namespace (unshare -n), never touches the host's rules;
#                   skipped unless root with unshare and iptables.
#   mesh            32-site flat mesh, keepalive KA_MS, failed site dropped
#   mesh-blackhole  the same with the iptables blackhole
#   stream          the service state stream: a site with SYNC_SERVICES
#                   (100,000) services comes into sync with STREAM_PEERS (2)
#                   peers (time, bytes), then a site with CHURN_SERVICES
#                   (10,000) of which CHURN_PERCENT (1) % change every second:
#                   bytes per second per peer, measured, next to what the
#                   whole-list resend before the stream cost (computed from
#                   the message size x rate); keepalive KA_STREAM_MS (10 s,
#                   the default of -MEPKeepAliveTimeout)
#
# Prints a summary table; every figure of every run (one MODE.KEY=VALUE line
# each, with a comment) lands in bench/out/mep-scale/RUN.txt, progress and
# event reasons in RUN.err. Exit status: 0 when every run completed, 1 if one
# timed out or failed.
set -uo pipefail
cd "$(dirname "$0")/.."

KA_MS="${KA_MS:-1000}"
KA_FIT_MS="${KA_FIT_MS:-3000}"
PARENTS="${PARENTS:-32}"
CHILDREN="${CHILDREN:-1024}"
MESH="${MESH:-32}"
WINDOW_S="${WINDOW_S:-5}"
RUN_TIMEOUT_S="${RUN_TIMEOUT_S:-60}"
RUNS="${RUNS:-tree tree-fit tree-blackhole mesh mesh-blackhole stream}"
KA_STREAM_MS="${KA_STREAM_MS:-10000}"
SYNC_SERVICES="${SYNC_SERVICES:-100000}"
CHURN_SERVICES="${CHURN_SERVICES:-10000}"
CHURN_PERCENT="${CHURN_PERCENT:-1}"
STREAM_PEERS="${STREAM_PEERS:-2}"
STREAM_WINDOW_S="${STREAM_WINDOW_S:-10}"

echo "== building the benchmark (cargo build --release -p sextant-mep --example mep_scale)" >&2
cargo build --release -p sextant-mep --example mep_scale >&2 || exit 1
BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/examples/mep_scale"
OUT="$PWD/bench/out/mep-scale"
mkdir -p "$OUT"

can_blackhole() {
    [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && command -v iptables >/dev/null \
        && command -v ip >/dev/null
}

status=0
declare -A RC
run() {
    local label="$1"; shift
    local netns=0
    if [ "$1" = "--netns" ]; then netns=1; shift; fi
    rm -f "$OUT/$label.txt" "$OUT/$label.err"
    if [ "$netns" = 1 ] && ! can_blackhole; then
        echo "== $label: skipped (needs root, unshare, ip and iptables)" >&2
        RC[$label]=skipped
        return
    fi
    echo "== $label: mep_scale $* (at most ${RUN_TIMEOUT_S} s)" >&2
    local rc=0
    if [ "$netns" = 1 ]; then
        # A private network namespace: only lo, brought up; the blackhole's
        # iptables rules live and die with it.
        timeout -k 5 $((RUN_TIMEOUT_S + 20)) unshare -n sh -c 'ip link set lo up && exec "$@"' sh \
            "$BIN" "$@" --timeout-s "$RUN_TIMEOUT_S" >"$OUT/$label.txt" 2>"$OUT/$label.err" || rc=$?
    else
        timeout -k 5 $((RUN_TIMEOUT_S + 20)) "$BIN" "$@" --timeout-s "$RUN_TIMEOUT_S" \
            >"$OUT/$label.txt" 2>"$OUT/$label.err" || rc=$?
    fi
    RC[$label]=$rc
    case $rc in
        0) ;;
        2) echo "== $label: global timeout hit (see $OUT/$label.err)" >&2; status=1 ;;
        3) echo "== $label: completed, but a bound was missed" >&2; status=1 ;;
        *) echo "== $label: failed with status $rc (see $OUT/$label.err)" >&2; status=1 ;;
    esac
}

TREE=(--parents "$PARENTS" --children "$CHILDREN" --window-s "$WINDOW_S")
MESHA=(--mesh "$MESH" --window-s "$WINDOW_S")
for r in $RUNS; do
    case $r in
        tree) run tree "${TREE[@]}" --keepalive-ms "$KA_MS" ;;
        tree-fit) run tree-fit "${TREE[@]}" --keepalive-ms "$KA_FIT_MS" ;;
        tree-blackhole) run tree-blackhole --netns "${TREE[@]}" --keepalive-ms "$KA_FIT_MS" --fail blackhole ;;
        mesh) run mesh "${MESHA[@]}" --keepalive-ms "$KA_MS" ;;
        mesh-blackhole) run mesh-blackhole --netns "${MESHA[@]}" --keepalive-ms "$KA_MS" --fail blackhole ;;
        stream) run stream --stream --keepalive-ms "$KA_STREAM_MS" --sync-services "$SYNC_SERVICES" \
            --churn-services "$CHURN_SERVICES" --churn-percent "$CHURN_PERCENT" --peers "$STREAM_PEERS" \
            --window-s "$STREAM_WINDOW_S" ;;
        *) echo "unknown run $r" >&2; exit 64 ;;
    esac
done

# The value of KEY in a run's output, or "-".
get() {
    local v
    v=$(sed -n "s/^[a-z]*\.$2=\([^ ]*\).*/\1/p" "$OUT/$1.txt" 2>/dev/null | head -1)
    echo "${v:--}"
}

{
    echo
    echo "MEP scale ($(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ))"
    printf '%-15s %5s %6s %8s %10s %9s %8s %10s %7s %8s %9s %9s %7s %5s %s\n' \
        run sites ka_ms start_s converge_s visible_s detect_s takeover_s bound_s return_s \
        "tx_B/s" "rx_B/s" "KiB/st" cpu result
    for r in $RUNS; do
        [ "$r" = stream ] && continue
        [ "${RC[$r]:-}" = skipped ] && { printf '%-15s skipped\n' "$r"; continue; }
        [ -f "$OUT/$r.txt" ] || continue
        case $r in tree*) who=parent ;; *) who=site ;; esac
        result=ok
        case ${RC[$r]:-?} in 0) ;; 2) result=TIMEOUT ;; 3) result=BOUND-MISSED ;; *) result="rc=${RC[$r]}" ;; esac
        bound=$(get "$r" takeover_bound_s); [ "$bound" = - ] && bound=$(get "$r" detect_bound_s)
        printf '%-15s %5s %6s %8s %10s %9s %8s %10s %7s %8s %9s %9s %7s %5s %s\n' \
            "$r" "$(get "$r" sites)" "$(get "$r" keepalive_ms)" "$(get "$r" start_s)" \
            "$(get "$r" converge_s)" "$(get "$r" visible_s)" "$(get "$r" detect_s)" \
            "$(get "$r" takeover_s)" "$bound" "$(get "$r" return_s)" \
            "$(get "$r" ${who}_tx_Bps)" "$(get "$r" ${who}_rx_Bps)" \
            "$(get "$r" rss_steady_per_site_kib)" "$(get "$r" cpu_cores)" "$result"
    done
    echo
    echo "tx/rx: MEP payload bytes per second per parent (tree) or per site (mesh), from the kernel's"
    echo "per-socket TCP_INFO counters over a ${WINDOW_S} s steady window; KiB/st: (VmRSS - baseline) / sites;"
    echo "cpu: cores the whole process used in that window. Estimates, per-child figures, memory, event"
    echo "backlog and publish ratio: $OUT/RUN.txt"
    if [ -f "$OUT/stream.txt" ] && [[ " $RUNS " == *" stream "* ]]; then
        case ${RC[stream]:-?} in 0) result=ok ;; 2) result=TIMEOUT ;; 3) result=BOUND-MISSED ;; *) result="rc=${RC[stream]}" ;; esac
        echo
        echo "Service state stream (keepalive $(get stream keepalive_ms) ms, $(get stream peers) peers; $result):"
        echo "  $(get stream sync_services) services in sync: $(get stream sync_converge_s) s," \
            "$(get stream sync_bytes_per_peer) B per peer ($(get stream sync_snapshot_parts) frames;" \
            "as one frame it would be $(get stream sync_whole_frame_B) B)"
        echo "  $(get stream churn_services) services, $(get stream churn_changes_per_s) changing per second:" \
            "before $(get stream churn_before_Bps_per_peer) B/s per peer (computed)," \
            "after $(get stream churn_after_Bps_per_peer) B/s per peer (measured)"
    fi
} | tee "$OUT/summary.txt"
exit $status
