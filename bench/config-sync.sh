#!/usr/bin/env bash
# Config sync among parents, measured (issue 27): three parents on loopback,
# each a `sextant serve` with its own file of 1,000 and 10,000 services; a
# one-line change and a whole new configuration at P1; the time until P2 and
# P3 answer with it (DNS), and the bytes of config sync P1 sent.
#
#   bench/config-sync.sh [SIZES]       (default 1000,10000; REPEAT=3)
#
# Prints a table (docs/config-sync.md shows one); asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
BIN="$(bench_release_bin)"
exec python3 bench/config-sync.py "$BIN" "${1:-1000,10000}"
