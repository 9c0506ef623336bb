#!/usr/bin/env bash
# The dependency check of scripts/test.sh: licences, duplicate versions and
# sources against deny.toml, always; RustSec advisories too when the
# advisory database can be fetched (it lives on github.com, which some build
# machines, this project's CI among them, cannot reach: then it says so and
# the rest of the check still decides).
set -uo pipefail
cd "$(dirname "$0")/.."

cargo deny --locked check bans licenses sources || exit 1

out="$(cargo deny --locked check advisories 2>&1)"
rc=$?
if [ $rc -ne 0 ] && grep -q "failed to fetch advisory database" <<<"$out"; then
    echo "deny.sh: advisories NOT checked: the RustSec database cannot be fetched from github.com here" >&2
    exit 0
fi
echo "$out" >&2
exit $rc
