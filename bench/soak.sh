#!/usr/bin/env bash
# Soak (issue 12 item 6): two Sextant parent sites as separate processes,
# exchanging metrics (MEP), each with three real HTTP backends and an HTTP
# monitor on each service, all inside a network namespace of the script's
# own. For SOAK_SECONDS:
#   * dnsperf at half of the measured peak rate against site alpha;
#   * every FLAP_EVERY s one backend is killed or restarted (by PID), in
#     turn over four of the six (see FLAPPERS; one backend per site never
#     flaps, so every name always has a service UP);
#   * every CUT_EVERY s the MEP link between the two sites is cut (iptables
#     DROP on the MEP port between the two site addresses, inside the
#     namespace) or healed: cut for CUT_EVERY s, healed for CUT_EVERY s;
#   * soak-check sends CHECK_RATE queries/s to both sites and, at the end,
#     checks every answer against the state log of the site that gave it
#     (crates/sextant-test-support/src/bin/soak-check.rs);
#   * the fd count and VmRSS/VmHWM of each sextant process are sampled at
#     baseline (after a warm-up), every 30 s, and at the end after the load
#     stopped and everything healed.
#
#   sudo bench/soak.sh                     # 600 s
#   SOAK_SECONDS=60 sudo bench/soak.sh     # short mode
#   PEAK_QPS=40000 bench/soak.sh           # skip the 10 s peak measurement
#   BIN_DIR=target/debug bench/soak.sh     # use sextant and soak-check from there, no build
#
# Exit status: 0 when every answer was right (or in the stated ambiguity
# window), no more checker queries went unanswered than dnsperf's own loss
# share allows, every process's fd count returned to its baseline, the
# sites healed, and every cut and flap was seen in both sites' logs (MEP
# DOWN, a service transition); 1 otherwise; 2 when it cannot run (not root, tools missing, startup failed).
# Raw output: bench/out/soak/ (logs, samples, checker records, dnsperf).
set -euo pipefail
cd "$(dirname "$0")/.."

SOAK_SECONDS="${SOAK_SECONDS:-600}"
PEAK_QPS="${PEAK_QPS:-}"           # measured for PEAK_SECONDS when empty
PEAK_SECONDS="${PEAK_SECONDS:-10}"
CHECK_RATE="${CHECK_RATE:-200}"    # soak-check queries per second, both sites together
WINDOW_MS="${WINDOW_MS:-250}"      # ambiguity window at each logged transition
FLAP_EVERY="${FLAP_EVERY:-10}"
CUT_EVERY="${CUT_EVERY:-30}"
SAMPLE_EVERY="${SAMPLE_EVERY:-30}"
KEEPALIVE="${KEEPALIVE:-3}"        # -MEPKeepAliveTimeout, s: a cut is seen within it
UDP_WORKERS="${UDP_WORKERS:-1}"
MEP_PORT=3011
A_IP=127.0.1.1                     # site alpha (DNS :5300, API :8080, MEP :3011)
B_IP=127.0.1.2                     # site beta
BACKEND_PORT=8000

fail_setup() { echo "soak: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || fail_setup "needs root (a network namespace and iptables rules of its own); run it with sudo"
case "$SOAK_SECONDS" in ''|*[!0-9]*) fail_setup "SOAK_SECONDS must be a number" ;; esac
[ "$SOAK_SECONDS" -ge 30 ] || fail_setup "SOAK_SECONDS must be at least 30"

need_tools() {
    for t in ip iptables iptables-restore dnsperf dig ss; do command -v "$t" >/dev/null 2>&1 || return 1; done
}
need_tools || scripts/setup.sh
need_tools || fail_setup "ip, ss, iptables, dnsperf and dig are needed (scripts/setup.sh installs them)"

if [ -n "${BIN_DIR:-}" ]; then
    REL="$BIN_DIR"     # binaries built elsewhere (e.g. a debug build, to try the script)
else
    echo "== building sextant and soak-check (release)" >&2
    cargo build --release -p sextant -p sextant-test-support --bin sextant --bin soak-check >&2
    REL="${CARGO_TARGET_DIR:-$PWD/target}/release"
fi
SEXTANT="$REL/sextant"
CHECK="$REL/soak-check"

OUT="$PWD/bench/out/soak"
rm -rf "$OUT"
mkdir -p "$OUT"
# sxt-PID-TAG: the test harness's stale-namespace sweep (netns.rs) removes it
# if this script dies without its trap.
NS="sxt-$$-soak"
declare -A PIDS=()      # label -> pid of every process started
BACKEND_PID=()          # index -> pid (empty: killed)

stop_pid() { # stop_pid PID: TERM, wait up to 5 s, then KILL
    local pid="$1"
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    local rc=$?
    for label in "${!PIDS[@]}"; do stop_pid "${PIDS[$label]}"; done
    for pid in "${BACKEND_PID[@]}"; do [ -n "$pid" ] && stop_pid "$pid"; done
    ip netns del "$NS" 2>/dev/null || true
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$NS"
ip netns exec "$NS" ip link set lo up
inns() { ip netns exec "$NS" "$@"; }

# ---- configuration: one file, each process picks its site with --local-site
BACKENDS=(127.0.3.1 127.0.3.2 127.0.3.3 127.0.4.1 127.0.4.2 127.0.4.3)
SERVICES=(a1 a2 a3 b1 b2 b3)
SITE_OF=(alpha alpha alpha beta beta beta)
# The flap sequence: each entry toggles that backend (kill if alive, else
# restart): a2 and b2 go down 10 s apart and come back 20 s later, then a3
# and b3; a1 and b1 never flap.
FLAPPERS=(1 4 1 4 2 5 2 5)
WEIGHTS=(100 10 40 50 1 70)
{
    echo "# bench/soak.sh: two parent sites, six monitored HTTP services"
    echo "set gslb parameter -MEPKeepAliveTimeout $KEEPALIVE"
    echo "add gslb site alpha $A_IP -triggerMonitor MEPDOWN"
    echo "add gslb site beta $B_IP -triggerMonitor MEPDOWN"
    echo "add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com"
    echo "add dns nsRec example.com ns1.example.com"
    echo "add lb monitor soak-http HTTP -interval 500 MSEC -resptimeout 250 MSEC -retries 2"
    for k in "${!SERVICES[@]}"; do
        echo "add gslb service ${SERVICES[$k]} ${BACKENDS[$k]} HTTP $BACKEND_PORT -siteName ${SITE_OF[$k]}"
        echo "bind gslb service ${SERVICES[$k]} -monitorName soak-http"
    done
    echo "add gslb vserver vs-www HTTP -lbMethod ROUNDROBIN"
    echo "add gslb vserver vs-wrr HTTP -lbMethod ROUNDROBIN"
    for k in "${!SERVICES[@]}"; do
        echo "bind gslb vserver vs-www -serviceName ${SERVICES[$k]}"
        echo "bind gslb vserver vs-wrr -serviceName ${SERVICES[$k]} -weight ${WEIGHTS[$k]}"
    done
    echo "bind gslb vserver vs-www -domainName www.example.com -TTL 5"
    echo "bind gslb vserver vs-wrr -domainName wrr.example.com -TTL 5"
} > "$OUT/soak.conf"
printf 'www.example.com A\nwrr.example.com A\n' > "$OUT/queries.txt"

start_backend() { # start_backend INDEX
    local k="$1"
    ip netns exec "$NS" "$CHECK" backend "${BACKENDS[$k]}:$BACKEND_PORT" >> "$OUT/backend-${SERVICES[$k]}.log" 2>&1 &
    BACKEND_PID[$k]=$!
}
for k in "${!BACKENDS[@]}"; do start_backend "$k"; done

start_site() { # start_site NAME IP
    ip netns exec "$NS" "$SEXTANT" serve --config "$OUT/soak.conf" --local-site "$1" --log-format json \
        --dns-listen "$2:5300" --api-listen "$2:8080" --udp-workers "$UDP_WORKERS" \
        2> "$OUT/$1.log" &
    PIDS[$1]=$!
}
start_site alpha "$A_IP"
start_site beta "$B_IP"

# until DEADLINE_S CMD...: polls CMD every 0.5 s for DEADLINE_S seconds.
until_ok() {
    local deadline=$(( $(date +%s) + $1 )); shift
    while [ "$(date +%s)" -lt "$deadline" ]; do
        "$@" && return 0
        sleep 0.5
    done
    return 1
}
all_up() { # all_up IP: every service UP and MEP with the other site UP at the site on IP
    inns "$CHECK" healthy "$1:8080" > "$OUT/healthy-$1.txt" 2>&1
}
answers() { inns dig @"$1" -p 5300 +short +time=1 +tries=1 www.example.com A 2>/dev/null | grep -q '^127\.0\.'; }
healthy() { all_up "$A_IP" && all_up "$B_IP" && answers "$A_IP" && answers "$B_IP"; }

echo "== starting sites alpha ($A_IP) and beta ($B_IP) in namespace $NS" >&2
if ! until_ok 60 healthy; then
    echo "soak: the sites did not come up with every service UP and MEP UP; logs in $OUT" >&2
    for s in alpha beta; do echo "--- $s"; tail -20 "$OUT/$s.log"; done >&2
    exit 2
fi
for s in alpha beta; do
    [ "$(cat "/proc/${PIDS[$s]}/comm" 2>/dev/null)" = sextant ] || fail_setup "pid ${PIDS[$s]} of $s is not sextant"
done
inns ss -tn "( sport = :$MEP_PORT or dport = :$MEP_PORT )" > "$OUT/mep-sockets.txt" || true
echo "== MEP connections: $(grep -c ESTAB "$OUT/mep-sockets.txt" || true) ($OUT/mep-sockets.txt)" >&2

# ---- sampling: fds, VmRSS, VmHWM of each sextant process
sample() { # sample LABEL: one line per site into samples.txt
    local s pid fds rss hwm
    for s in alpha beta; do
        pid="${PIDS[$s]}"
        fds="$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)"
        rss="$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)"
        hwm="$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)"
        echo "$1 $(date -u +%H:%M:%S) $s fds=$fds rss_kib=$rss hwm_kib=$hwm load1=$(cut -d' ' -f1 /proc/loadavg)" >> "$OUT/samples.txt"
    done
}
# min_fds SITE: the fewest fds over 5 looks 0.3 s apart (a monitor's probe
# socket may be open at any one look).
min_fds() {
    local pid="${PIDS[$1]}" best=999999 n
    for _ in 1 2 3 4 5; do
        n="$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)"
        [ "$n" -lt "$best" ] && best="$n"
        sleep 0.3
    done
    echo "$best"
}

# ---- peak, then half of it
if [ -z "$PEAK_QPS" ]; then
    echo "== peak: dnsperf -c 8 -q 200 -l $PEAK_SECONDS against alpha" >&2
    timeout $((PEAK_SECONDS + 30)) ip netns exec "$NS" dnsperf -s "$A_IP" -p 5300 -d "$OUT/queries.txt" \
        -c 8 -q 200 -l "$PEAK_SECONDS" > "$OUT/dnsperf-peak.txt" 2>&1 || true
    PEAK_QPS="$(awk '/Queries per second:/ { printf "%d", $4 }' "$OUT/dnsperf-peak.txt")"
    [ -n "$PEAK_QPS" ] && [ "$PEAK_QPS" -gt 0 ] || { cat "$OUT/dnsperf-peak.txt" >&2; fail_setup "no peak measured"; }
fi
LOAD_QPS=$((PEAK_QPS / 2))
echo "== peak $PEAK_QPS queries/s; soak load $LOAD_QPS queries/s" >&2

# Warm-up done (the peak run): settle, then the baseline.
until_ok 30 healthy || true
sleep 3
declare -A BASE_FDS=()
for s in alpha beta; do BASE_FDS[$s]="$(min_fds "$s")"; done
sample baseline
LOAD1="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- the soak
echo "== soak: ${SOAK_SECONDS}s; load $LOAD_QPS q/s; flap every ${FLAP_EVERY}s; MEP cut/heal every ${CUT_EVERY}s; checker $CHECK_RATE q/s" >&2
START_UTC="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
timeout $((SOAK_SECONDS + 60)) ip netns exec "$NS" dnsperf -s "$A_IP" -p 5300 -d "$OUT/queries.txt" \
    -c 4 -q 500 -Q "$LOAD_QPS" -l "$SOAK_SECONDS" > "$OUT/dnsperf-soak.txt" 2>&1 &
PIDS[dnsperf]=$!
timeout $((SOAK_SECONDS + 120)) ip netns exec "$NS" "$CHECK" run \
    --site "alpha,$A_IP:5300,$A_IP:8080,$OUT/alpha.log" \
    --site "beta,$B_IP:5300,$B_IP:8080,$OUT/beta.log" \
    --name www.example.com --name wrr.example.com \
    --rate "$CHECK_RATE" --seconds "$SOAK_SECONDS" --window-ms "$WINDOW_MS" \
    --records "$OUT/check-records.csv" > "$OUT/check.txt" 2> "$OUT/check.err" &
PIDS[check]=$!

cut_rules() { # cut_rules -A|-D: the MEP port between the two site addresses, both ways
    local op="$1"
    {
        echo "*filter"
        for pair in "$A_IP $B_IP" "$B_IP $A_IP"; do
            set -- $pair
            echo "$op INPUT -s $1/32 -d $2/32 -p tcp --dport $MEP_PORT -j DROP"
            echo "$op INPUT -s $1/32 -d $2/32 -p tcp --sport $MEP_PORT -j DROP"
        done
        echo "COMMIT"
    } | inns iptables-restore --noflush
}

flaps=0; kills=0; restarts=0; cuts=0; heals=0; cut_on=0; flap_turn=0
t0="$(date +%s)"
next_flap=$FLAP_EVERY; next_cut=$CUT_EVERY; next_sample=$SAMPLE_EVERY
echo "t_s event" > "$OUT/events.txt"
while :; do
    el=$(( $(date +%s) - t0 ))
    [ "$el" -ge "$SOAK_SECONDS" ] && break
    if [ "$el" -ge "$next_flap" ]; then
        k="${FLAPPERS[$((flap_turn % ${#FLAPPERS[@]}))]}"
        if [ -n "${BACKEND_PID[$k]}" ]; then
            kill -KILL "${BACKEND_PID[$k]}" 2>/dev/null || true
            wait "${BACKEND_PID[$k]}" 2>/dev/null || true
            BACKEND_PID[$k]=""
            kills=$((kills + 1))
            echo "$el $(date -u +%H:%M:%S.%N) kill ${SERVICES[$k]}" >> "$OUT/events.txt"
        else
            start_backend "$k"
            restarts=$((restarts + 1))
            echo "$el $(date -u +%H:%M:%S.%N) restart ${SERVICES[$k]}" >> "$OUT/events.txt"
        fi
        flaps=$((flaps + 1)); flap_turn=$((flap_turn + 1)); next_flap=$((next_flap + FLAP_EVERY))
    fi
    if [ "$el" -ge "$next_cut" ]; then
        if [ "$cut_on" = 0 ]; then
            cut_rules -A; cut_on=1; cuts=$((cuts + 1))
            echo "$el $(date -u +%H:%M:%S.%N) cut MEP" >> "$OUT/events.txt"
        else
            cut_rules -D; cut_on=0; heals=$((heals + 1))
            echo "$el $(date -u +%H:%M:%S.%N) heal MEP" >> "$OUT/events.txt"
        fi
        next_cut=$((next_cut + CUT_EVERY))
    fi
    if [ "$el" -ge "$next_sample" ]; then
        sample "t+${el}s"
        next_sample=$((next_sample + SAMPLE_EVERY))
    fi
    for s in alpha beta; do
        kill -0 "${PIDS[$s]}" 2>/dev/null || { echo "soak: sextant $s (pid ${PIDS[$s]}) died; see $OUT/$s.log" >&2; exit 1; }
    done
    sleep 0.5
done
LOAD2="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- the load stops; everything heals
echo "== soak over; waiting for dnsperf and the checker" >&2
dns_rc=0; wait "${PIDS[dnsperf]}" || dns_rc=$?
check_rc=0; wait "${PIDS[check]}" || check_rc=$?
unset 'PIDS[dnsperf]' 'PIDS[check]'
if [ "$cut_on" = 1 ]; then
    cut_rules -D; heals=$((heals + 1))
    echo "end $(date -u +%H:%M:%S.%N) heal MEP" >> "$OUT/events.txt"
fi
for k in "${!BACKENDS[@]}"; do
    if [ -z "${BACKEND_PID[$k]}" ]; then
        start_backend "$k"
        echo "end $(date -u +%H:%M:%S.%N) restart ${SERVICES[$k]}" >> "$OUT/events.txt"
    fi
done
healed=1
until_ok 60 healthy || healed=0
sleep 3
inns ss -tn "( sport = :$MEP_PORT or dport = :$MEP_PORT )" > "$OUT/mep-sockets-end.txt" || true
declare -A END_FDS=()
for s in alpha beta; do END_FDS[$s]="$(min_fds "$s")"; done
sample end

# ---- report
field() { awk -v l="$2" 'index($0, l) { s = substr($0, index($0, l) + length(l)); split(s, a, " "); print a[1]; exit }' "$1"; }
kv() { sed -n "s/^soak\.$1=//p" "$OUT/check.txt" | head -1; }
d_sent="$(field "$OUT/dnsperf-soak.txt" 'Queries sent:')"
d_done="$(field "$OUT/dnsperf-soak.txt" 'Queries completed:')"
d_lost="$(field "$OUT/dnsperf-soak.txt" 'Queries lost:')"
d_qps="$(field "$OUT/dnsperf-soak.txt" 'Queries per second:')"
c_sent="$(kv sent)"; c_lost="$(kv lost)"; c_late="$(kv late)"; c_wrong="$(kv wrong)"
status=0
reasons=()
if [ -z "$d_sent" ] || [ "$d_sent" = 0 ]; then status=1; reasons+=("dnsperf gave no result (rc $dns_rc; $OUT/dnsperf-soak.txt)"); fi
case "$check_rc" in
    0) ;;
    3) # lost queries only: allowed up to dnsperf's own loss share
        allowed="$(awk -v s="${c_sent:-0}" -v dl="${d_lost:-0}" -v ds="${d_sent:-1}" \
            'BEGIN { a = s * dl / (ds > 0 ? ds : 1); printf "%d", (a == int(a)) ? a : int(a) + 1 }')"
        if [ $(( ${c_lost:-0} + ${c_late:-0} )) -gt "$allowed" ]; then
            status=1; reasons+=("checker: $c_lost lost + $c_late late of $c_sent, more than dnsperf's loss share allows ($allowed)")
        fi ;;
    1) status=1; reasons+=("checker: wrong answers ($c_wrong wrong; see WRONG lines in $OUT/check.txt)") ;;
    *) status=1; reasons+=("checker failed (rc $check_rc; $OUT/check.err)") ;;
esac
mep_down() { grep -c '"metric exchange DOWN"' "$OUT/$1.log" || true; }
mep_up() { grep -c '"metric exchange UP"' "$OUT/$1.log" || true; }
trans() { grep -c '"service \(UP\|DOWN\)"' "$OUT/$1.log" || true; }
# The faults must have happened: every cut seen as MEP DOWN at both sites,
# every flap as a service transition at both.
for s in alpha beta; do
    if [ "$(mep_down "$s")" -lt "$cuts" ]; then
        status=1; reasons+=("$s: $(mep_down "$s") metric exchange DOWN lines for $cuts cuts")
    fi
    if [ "$(trans "$s")" -lt "$flaps" ]; then
        status=1; reasons+=("$s: $(trans "$s") service transitions for $flaps flaps")
    fi
done
[ "$healed" = 1 ] || { status=1; reasons+=("did not heal (every service UP, MEP UP) within 60 s after the soak"); }
for s in alpha beta; do
    if [ "${END_FDS[$s]}" -gt "${BASE_FDS[$s]}" ]; then
        status=1; reasons+=("$s: $((END_FDS[$s] - BASE_FDS[$s])) more fds at the end (${END_FDS[$s]}) than at baseline (${BASE_FDS[$s]})")
    fi
done
col() { # col SITE KEY LABEL -> the value of KEY on SITE's LABEL sample
    awk -v s="$1" -v k="$2" -v l="$3" '$1 == l && $3 == s { for (i = 4; i <= NF; i++) { split($i, a, "="); if (a[1] == k) print a[2] } }' "$OUT/samples.txt" | tail -1
}
colmax() {
    awk -v s="$1" -v k="$2" '$3 == s { for (i = 4; i <= NF; i++) { split($i, a, "="); if (a[1] == k && a[2] + 0 > m) m = a[2] + 0 } } END { print m + 0 }' "$OUT/samples.txt"
}
{
    echo "Soak $START_UTC, ${SOAK_SECONDS}s ($("$SEXTANT" --version 2>/dev/null || echo sextant); $(nproc) cores; load average at start $LOAD1, at end $LOAD2)"
    echo "load: dnsperf -Q $LOAD_QPS (half of the peak $PEAK_QPS) against alpha: sent ${d_sent:-?}, completed ${d_done:-?}, lost ${d_lost:-?}, ${d_qps:-?} q/s"
    echo "faults: $flaps backend flaps ($kills kills, $restarts restarts, every ${FLAP_EVERY}s), $cuts MEP cuts and $heals heals (every ${CUT_EVERY}s)"
    echo "MEP seen DOWN/UP in the logs: alpha $(mep_down alpha)/$(mep_up alpha), beta $(mep_down beta)/$(mep_up beta)" \
        "(DOWN beyond one per cut: alpha $(( $(mep_down alpha) - cuts )), beta $(( $(mep_down beta) - cuts )));" \
        "service transitions logged: alpha $(trans alpha), beta $(trans beta)"
    echo "checker ($CHECK_RATE q/s, window ${WINDOW_MS} ms):"
    sed -n '/^soak-check:/,/^soak\./p' "$OUT/check.txt" | grep -v '^soak\.'
    grep '^WRONG' "$OUT/check.txt" | head -5 || true
    echo "process  fds base/end (min of 5 looks)  RSS KiB base/peak/end  VmHWM KiB end"
    for s in alpha beta; do
        printf '%-8s %4s / %-4s %27s / %s / %s %14s\n' "$s" "${BASE_FDS[$s]}" "${END_FDS[$s]}" \
            "$(col "$s" rss_kib baseline)" "$(colmax "$s" rss_kib)" "$(col "$s" rss_kib end)" "$(col "$s" hwm_kib end)"
    done
    if [ "$status" = 0 ]; then echo "RESULT: PASS"; else
        echo "RESULT: FAIL"; for r in "${reasons[@]}"; do echo "  - $r"; done
    fi
} | tee "$OUT/summary.txt"
exit "$status"
