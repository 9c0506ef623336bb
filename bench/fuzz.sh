#!/usr/bin/env bash
# Bounded coverage-guided fuzzing of every decoder, on the stable toolchain:
# libFuzzer (from the libfuzzer-sys crate) with LLVM's SanitizerCoverage
# instrumentation passes, the same instrumentation cargo-fuzz uses (without
# AddressSanitizer, which needs nightly; Rust code is memory-safe, so what is
# looked for here is panics, overflows and hangs).
#
#   bench/fuzz.sh            # 60 s per target
#   SECONDS_EACH=10 bench/fuzz.sh
#
# Corpora persist in fuzz/corpus/<target> (ignored by git). Exits non-zero
# if any target finds a crash; the crashing input is left in fuzz/.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

SECONDS_EACH="${SECONDS_EACH:-60}"
TARGET_TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"

targets=(dns_respond mep_frames config_parsers)
# --target keeps the instrumentation away from build scripts.
cargo build --release --target "$TARGET_TRIPLE" --target-dir target/cov \
    $(printf -- '--bin %s ' "${targets[@]}")

failed=()
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    echo "== $t for ${SECONDS_EACH}s" >&2
    if ! "target/cov/$TARGET_TRIPLE/release/$t" "corpus/$t" \
            -max_total_time="$SECONDS_EACH" -timeout=5 -rss_limit_mb=1024 2> "target/cov/$t.log"; then
        failed+=("$t")
        tail -30 "target/cov/$t.log" >&2
    fi
    grep -E '^Done|DONE' "target/cov/$t.log" | tail -1 >&2 || true
done
if [ "${#failed[@]}" -ne 0 ]; then
    echo "fuzz: crashes in: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz: no crash in ${targets[*]} (${SECONDS_EACH}s each)" >&2
