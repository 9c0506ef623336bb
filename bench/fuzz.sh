#!/usr/bin/env bash
# Bounded coverage-guided fuzzing of every decoder, on the stable toolchain:
# libFuzzer (from the libfuzzer-sys crate) with LLVM's SanitizerCoverage
# instrumentation passes, the same instrumentation cargo-fuzz uses (without
# AddressSanitizer, which needs nightly; Rust code is memory-safe, so what is
# looked for here is panics, overflows, violated invariants and hangs).
#
#   bench/fuzz.sh                              # every target, 60 s each
#   SECONDS_EACH=10 bench/fuzz.sh              # the CI short run (scripts/test.sh)
#   SECONDS_EACH=300 TARGETS="dns_query vrrp_advert" nice bench/fuzz.sh
#
# Each target starts from the checked-in seeds (fuzz/corpus/<target>), the
# inputs of fixed crashes (fuzz/regressions/<target>) and its working corpus
# (fuzz/work/<target>, git-ignored, grows from run to run; new inputs go only
# there, so runs leave the tree clean). A crash, a violated invariant or a
# hang (5 s per input) fails the run: the input is saved under
# fuzz/artifacts/<target>/ and the script exits 1. Logs and a summary
# (executions, coverage, corpus size per target) go to bench/out/fuzz/
# (or FUZZ_OUT, for runs side by side).
#
# The build is timed and reported. The instrumented binaries live in
# fuzz/target/cov (their flags differ from the workspace's, so they cannot
# share its target directory).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
out="${FUZZ_OUT:-$repo/bench/out/fuzz}"
mkdir -p "$out"

SECONDS_EACH="${SECONDS_EACH:-60}"
case "$SECONDS_EACH" in '' | *[!0-9]*) echo "fuzz.sh: SECONDS_EACH must be a number" >&2; exit 2 ;; esac
# Every [[bin]] of fuzz/Cargo.toml (the harness test checks that each
# target of sextant_fuzz_harness::TARGETS has one).
all_targets=$(sed -n 's/^name = "\([a-z_0-9]*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^sextant-fuzz$')
read -r -a targets <<<"${TARGETS:-$(echo $all_targets)}"
for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$all_targets" || { echo "fuzz.sh: unknown target $t (have: $(echo $all_targets))" >&2; exit 2; }
done

command -v c++ >/dev/null 2>&1 || {
    echo "fuzz.sh: libfuzzer-sys needs a C++ compiler: apt-get install -y g++" >&2
    exit 2
}

cd fuzz
TARGET_TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"

# --target keeps the instrumentation away from build scripts and proc macros.
build_start=$(date +%s)
timeout 3600 cargo build --release --locked --target "$TARGET_TRIPLE" --target-dir target/cov \
    $(printf -- '--bin %s ' "${targets[@]}")
build_secs=$(( $(date +%s) - build_start ))
echo "fuzz: build took ${build_secs}s" >&2

# A libFuzzer process is killed if it overstays its time by this much
# (libFuzzer itself stops at -max_total_time; this bounds a stuck process).
grace=120
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

failed=()
summary="$out/summary.txt"
printf '%-17s %8s %10s %8s %7s %7s %s\n' target seconds execs exec/s cov ft corpus >"$summary"
for t in "${targets[@]}"; do
    mkdir -p "work/$t" "artifacts/$t" "corpus/$t"
    dirs=("work/$t" "corpus/$t")
    [ -d "regressions/$t" ] && dirs+=("regressions/$t")
    log="$out/$t.log"
    echo "== $t for ${SECONDS_EACH}s" >&2
    status=0
    timeout --signal=KILL $((SECONDS_EACH + grace)) \
        "target/cov/$TARGET_TRIPLE/release/$t" "${dirs[@]}" \
        -max_total_time="$SECONDS_EACH" -timeout=5 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="artifacts/$t/" >"$log" 2>&1 &
    pids+=($!)
    wait "$!" || status=$?
    pids=()
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
    corpus=$(find "work/$t" -type f | wc -l)
    printf '%-17s %8s %10s %8s %7s %7s %s\n' "$t" "$SECONDS_EACH" "${execs:-?}" "${rate:-?}" \
        "${cov:-?}" "${ft:-?}" "$corpus" | tee -a "$summary" >&2
    if [ "$status" -ne 0 ]; then
        failed+=("$t")
        echo "== $t FAILED (exit $status); saved inputs:" >&2
        ls -1 "artifacts/$t" >&2 || true
        grep -E -A12 "panicked|ERROR: libFuzzer|SUMMARY" "$log" | head -40 >&2 || tail -30 "$log" >&2
    fi
done
echo "build ${build_secs}s" >>"$summary"
if [ "${#failed[@]}" -ne 0 ]; then
    echo "fuzz: crashes in: ${failed[*]} (inputs in fuzz/artifacts/<target>/; logs in $out/)" >&2
    exit 1
fi
echo "fuzz: no crash in ${targets[*]} (${SECONDS_EACH}s each); summary in $out/summary.txt" >&2
