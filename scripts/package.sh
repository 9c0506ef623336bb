#!/usr/bin/env bash
# Builds the Debian package: the release binary, the manual pages and shell
# completions generated from it (`sextant generate-assets`, never
# committed), then `cargo deb`. Prints the .deb's path on stdout (the last
# line); everything else goes to stderr.
# Needs cargo-deb (scripts/setup.sh installs the pinned version). With
# LINTIAN=1 it also runs Debian's lintian on the result when installed.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo deb --version >/dev/null 2>&1; then
    echo "package.sh: cargo-deb is missing; run scripts/setup.sh" >&2
    exit 1
fi

cargo build --release --locked -p sextant >&2

assets=target/package-assets
rm -rf "$assets"
"${CARGO_TARGET_DIR:-target}/release/sextant" generate-assets "$assets" >&2
# Debian ships manual pages compressed; -n keeps the build reproducible.
gzip -9n "$assets"/man/*.1

# --no-build: the binary above is the one packaged (cargo deb would build
# it again with its own flags otherwise).
# Its output goes to stderr as it is, then its last line is the path (not
# `tee /dev/stderr`: reopening /dev/stderr truncates a log file that the
# caller redirected stderr to, losing everything written before).
if ! log="$(cargo deb -p sextant --no-build --locked 2>&1)"; then
    printf '%s\n' "$log" >&2
    echo "package.sh: cargo deb failed" >&2
    exit 1
fi
printf '%s\n' "$log" >&2
out="$(printf '%s\n' "$log" | tail -n 1)"
if [ ! -f "$out" ]; then
    echo "package.sh: cargo deb did not print a package path (got: $out)" >&2
    exit 1
fi

if [ "${LINTIAN:-0}" = 1 ]; then
    if command -v lintian >/dev/null 2>&1; then
        # Lintian's findings are reported, not fatal: see docs/deploy.md.
        lintian --info "$out" >&2 || true
    else
        echo "package.sh: lintian is not installed; skipped" >&2
    fi
fi

echo "$out"
