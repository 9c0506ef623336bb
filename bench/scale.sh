#!/usr/bin/env bash
# Scale of the decision core (issue 12, item 3), with short criterion
# settings: decide() against domains and zones, location lookups and build
# against ranges, decide() against global DNS policies (sextant-core
# --bench scale), the snapshot rebuild after one health change against
# services (sextant-state --bench rebuild), and the memory table
# (sextant-core --bench scale_memory). The timing benches measure the
# bench thread's CPU time (crates/sextant-core/benches/cpu_time), so time
# spent waiting for a core on a busy machine is not counted.
#
#   bench/scale.sh                          # everything, about 10 minutes on 2 cores
#   ONLY=memory bench/scale.sh              # one part: core, state or memory
#   FILTER=location_db/ ONLY=core bench/scale.sh   # a criterion filter
#   CRITERION_ARGS="--warm-up-time 3 --measurement-time 5" bench/scale.sh
#
# Writes the raw output, the machine and its load before and after each
# part, and summary.md (one table of medians per criterion group) under
# bench/out/scale/<UTC time>/. Each part is bounded by RUN_TIMEOUT_S.
set -euo pipefail
cd "$(dirname "$0")/.."

ONLY="${ONLY:-core state memory}"
FILTER="${FILTER:-}"
CRITERION_ARGS="${CRITERION_ARGS:---warm-up-time 1 --measurement-time 2}"
RUN_TIMEOUT_S="${RUN_TIMEOUT_S:-1800}"
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"

for tool in cargo python3 timeout; do
    command -v "$tool" >/dev/null 2>&1 || { echo "scale.sh: $tool is missing" >&2; exit 1; }
done

STAMP="$(date -u +%Y%m%dT%H%M%SZ)"
OUT="$PWD/bench/out/scale/$STAMP"
mkdir -p "$OUT"
MARK="$OUT/.start"
touch "$MARK"

RUN_PID=""
cleanup() {
    if [ -n "$RUN_PID" ] && kill -0 "$RUN_PID" 2>/dev/null; then
        kill -TERM "$RUN_PID" 2>/dev/null || true
        wait "$RUN_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

machine() {
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)')"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
    echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
}

# run NAME CMD...: runs CMD bounded in time, output to $OUT/NAME.txt.
run() {
    local name="$1"
    shift
    {
        echo "== $name: $*"
        machine
    } | tee -a "$OUT/machine.txt" >&2
    timeout --kill-after=10 "$RUN_TIMEOUT_S" "$@" >"$OUT/$name.txt" 2>&1 &
    RUN_PID=$!
    local rc=0
    wait "$RUN_PID" || rc=$?
    RUN_PID=""
    echo "after $name: load $(cut -d' ' -f1-3 /proc/loadavg), exit $rc" | tee -a "$OUT/machine.txt" >&2
    [ "$rc" -eq 0 ] || { echo "scale.sh: $name failed (exit $rc), see $OUT/$name.txt" >&2; exit 1; }
}

# shellcheck disable=SC2086 # CRITERION_ARGS and FILTER are word lists
for part in $ONLY; do
    case "$part" in
    core) run core cargo bench -p sextant-core --bench scale -- $CRITERION_ARGS $FILTER ;;
    state) run state cargo bench -p sextant-state --bench rebuild -- $CRITERION_ARGS $FILTER ;;
    memory) run memory cargo bench -p sextant-core --bench scale_memory ;;
    *) echo "scale.sh: unknown part $part (core, state, memory)" >&2; exit 1 ;;
    esac
done

# One table per criterion group measured in this run: the median, and per
# element where the bench declares a throughput (the location lookups run
# 1024 per iteration).
python3 - "$TARGET/criterion" "$MARK" >"$OUT/summary.md" <<'PY'
import json, os, sys
root, mark = sys.argv[1], os.path.getmtime(sys.argv[2])
rows = {}
for dirpath, _, files in os.walk(root):
    if not dirpath.endswith(os.sep + "new") or "estimates.json" not in files:
        continue
    est = os.path.join(dirpath, "estimates.json")
    if os.path.getmtime(est) < mark:
        continue
    with open(os.path.join(dirpath, "benchmark.json")) as f:
        b = json.load(f)
    with open(est) as f:
        e = json.load(f)
    median = e["median"]["point_estimate"]
    lo, hi = e["median"]["confidence_interval"]["lower_bound"], e["median"]["confidence_interval"]["upper_bound"]
    per = ""
    tp = b.get("throughput") or {}
    if "Elements" in tp and tp["Elements"] > 1:
        per = tp["Elements"]
    rows.setdefault(b["group_id"], []).append((b.get("function_id") or "", b.get("value_str") or "", median, lo, hi, per))

def fmt(ns):
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= div:
            return f"{ns / div:.3g} {unit}"
    return f"{ns:.3g} ns"

def key(r):
    try:
        return (r[0], float(r[1]))
    except ValueError:
        return (r[0], 0.0)

for group in sorted(rows):
    print(f"### {group}\n")
    print("| bench | size | median | 95% CI of the median | per element |")
    print("|---|---:|---:|---|---:|")
    for fn, size, med, lo, hi, per in sorted(rows[group], key=key):
        pe = fmt(med / per) if per else ""
        print(f"| {fn} | {size} | {fmt(med)} | {fmt(lo)} – {fmt(hi)} | {pe} |")
    print()
PY
if [ -f "$OUT/memory.txt" ]; then
    grep -E '^(\||#|$)' "$OUT/memory.txt" >>"$OUT/summary.md" || true
fi
grep -hE '^(location_db|decide_domains):' "$OUT"/core.txt >"$OUT/build-notes.txt" 2>/dev/null || true
cat "$OUT/machine.txt"
echo
cat "$OUT/summary.md"
echo "scale.sh: raw output in $OUT" >&2
