#!/usr/bin/env bash
# The one test command: installs test tools, checks formatting and lints, and
# runs every test of the workspace (unit, property and end-to-end).
# Every step runs even when an earlier one failed, so one run shows all
# problems; the script exits non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."

failed=()
step() { # step NAME COMMAND...
    local name="$1"
    shift
    echo "== $name: $*" >&2
    if ! "$@"; then
        echo "== $name FAILED" >&2
        failed+=("$name")
    fi
}

step setup scripts/setup.sh
step fmt cargo fmt --all -- --check
step clippy cargo clippy --workspace --all-targets -- -D warnings
step deny scripts/deny.sh
# The Debian package, built once before the tests (a release build: the
# longest step; too long for a test's timeout and too heavy to run beside
# the end-to-end tests). crates/sextant/tests/package.rs installs it.
echo "== package: scripts/package.sh" >&2
if deb="$(scripts/package.sh)"; then
    export SEXTANT_DEB="$deb"
else
    echo "== package FAILED" >&2
    failed+=(package)
fi
# The container image (packaging/Containerfile): its static binary and the
# image, built once before the tests (a second release build, with another
# target); crates/sextant/tests/container.rs runs both.
echo "== container: scripts/container.sh" >&2
if image="$(scripts/container.sh)"; then
    export SEXTANT_IMAGE="$image"
    export SEXTANT_STATIC_BIN="$PWD/target/x86_64-unknown-linux-gnu/release/sextant"
else
    echo "== container FAILED" >&2
    failed+=(container)
fi
# The Kubernetes manifests and the Helm chart against the API's schemas,
# their configuration checked by the image's binary (a few seconds).
SEXTANT_BIN="${SEXTANT_STATIC_BIN:-}" step kubernetes scripts/kubernetes-validate.sh
if cargo nextest --version >/dev/null 2>&1; then
    # Doc tests first (nextest does not run them), so that nextest's summary
    # is the last thing printed.
    step doctests cargo test --workspace --doc
    # End-to-end tests each start a server: one retry absorbs a rare
    # loopback hiccup on a loaded 2-core machine; a test that passes only on
    # its retry is reported as FLAKY, not hidden.
    step tests cargo nextest run --workspace --no-fail-fast --retries 1
else
    step tests cargo test --workspace --no-fail-fast
fi
# The black-box robustness suite, short counts, against the debug binary
# the test step has just built (a release build would add minutes).
step robustness-short env SHORT=1 PROFILE=debug bench/robustness.sh

# A short run of every fuzz target from the checked-in corpus (the seeds
# and fixed crashes also run as a plain test above, in sextant-fuzz-harness).
step fuzz-short env SECONDS_EACH=10 bench/fuzz.sh

if [ "${#failed[@]}" -ne 0 ]; then
    echo "scripts/test.sh: FAILED steps: ${failed[*]}" >&2
    exit 1
fi
echo "scripts/test.sh: all steps passed" >&2
