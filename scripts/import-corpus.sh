#!/usr/bin/env bash
# Imports every saved appliance configuration of a directory with `sextant
# import` and prints one row per file, then a totals line.
#
# Usage: scripts/import-corpus.sh SEXTANT_BIN [DIR]
#
#   SEXTANT_BIN  the sextant binary to run (e.g. target/debug/sextant)
#   DIR          the directory of *.conf files (default:
#                tests/appliance-configs/corpus)
#
# For each FILE it runs `SEXTANT_BIN import FILE -o OUT.conf` in a temporary
# directory, records the exit status, runs `SEXTANT_BIN check OUT.conf` when
# the import wrote a file, and reads the import's report and OUT.conf:
#
#   import     the import's exit status: 0 a valid configuration, 3 (from
#              versions that leave unreadable lines out) imported with lines
#              left out, anything else failed
#   check      `sextant check OUT.conf`: OK, FAIL(N errors), or - when the
#              import wrote nothing
#   svcs       GSLB services written (distinct `add gslb service` names)
#   unmon      of those, services of the local site (-siteName is the site the
#              written file marks -siteType LOCAL, no -cnameEntry) with no
#              `bind gslb service NAME -monitorName` line
#   other      services checked differently: -cnameEntry services and those of
#              other sites (their state comes from their site); with no LOCAL
#              site in the written file every service counts here
#   actions    entries under "Needs your action:" in the report
#   rejected   lines listed under a report section whose title starts with
#              "Rejected" (versions that leave unreadable lines out); 0 when
#              there is none
#
# Set KEEP_OUTPUT=1 to keep the temporary directory (reports, written files,
# check output); its path is printed at the end.
#
# Exit status: 0 when every file imported (clean or with lines left out), 1
# when any failed, 2 on a usage error.
set -euo pipefail

usage() {
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

[[ $# -ge 1 && $# -le 2 ]] || usage
bin=$1
dir=${2:-tests/appliance-configs/corpus}
[[ -x $bin ]] || { echo "import-corpus: $bin is not an executable file" >&2; exit 2; }
[[ -d $dir ]] || { echo "import-corpus: $dir is not a directory" >&2; exit 2; }
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac

shopt -s nullglob
files=("$dir"/*.conf)
[[ ${#files[@]} -gt 0 ]] || { echo "import-corpus: no *.conf files in $dir" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/import-corpus.XXXXXX")
if [[ ${KEEP_OUTPUT:-0} == 1 ]]; then
    trap 'echo "import-corpus: output kept in $work" >&2' EXIT
else
    trap 'rm -rf -- "$work"' EXIT
fi

# Entries of the report section titled TITLE (a line "TITLE:" or "TITLE
# (...):"): the indented lines up to the next blank line.
section_entries() { # REPORT TITLE-REGEX
    awk -v re="$2" '
        $0 ~ "^(" re ")" && /:[[:space:]]*\r?$/ { inside = 1; next }
        inside && /^[[:space:]]*\r?$/ { inside = 0 }
        inside && /^[[:space:]]+[^[:space:]]/ { print }
    ' "$1"
}

# How many saved-file lines the entries name: "line 7: ..." is 1, "lines
# 3-5, 9: ..." is 4; an entry that names no line counts 1.
count_named_lines() {
    awk '
        {
            n = 0
            if (match($0, /lines? [0-9][0-9, -]*/)) {
                spec = substr($0, RSTART, RLENGTH)
                sub(/^lines? /, "", spec)
                k = split(spec, parts, /, */)
                for (i = 1; i <= k; i++) {
                    if (parts[i] ~ /^[0-9]+-[0-9]+$/) {
                        split(parts[i], ab, "-"); n += ab[2] - ab[1] + 1
                    } else if (parts[i] ~ /^[0-9]+$/) {
                        n++
                    }
                }
            }
            total += (n > 0 ? n : 1)
        }
        END { print total + 0 }
    '
}

# Prints "SERVICES UNMONITORED OTHER" for a written configuration.
service_counts() { # OUT
    tr -d '\r' <"$1" | awk '
        function opt(name,   i) {
            for (i = 1; i < NF; i++) if (tolower($i) == "-" tolower(name)) return $(i + 1)
            return ""
        }
        $1 == "add" && $2 == "gslb" && $3 == "site" && tolower(opt("siteType")) == "local" { local = $4 }
        $1 == "add" && $2 == "gslb" && $3 == "service" {
            if (!($4 in seen)) order[++n] = $4
            seen[$4] = 1
            site[$4] = opt("siteName")
            cname[$4] = (opt("cnameEntry") != "")
        }
        $1 == "bind" && $2 == "gslb" && $3 == "service" {
            for (i = 5; i < NF; i++) if (tolower($i) == "-monitorname") monitored[$4] = 1
        }
        END {
            unmon = 0; other = 0
            for (i = 1; i <= n; i++) {
                s = order[i]
                if (cname[s] || local == "" || site[s] != local) other++
                else if (!(s in monitored)) unmon++
            }
            print n + 0, unmon, other
        }
    '
}

fmt='%-42s %6s %-14s %5s %5s %5s %7s %8s\n'
printf "$fmt" file import check svcs unmon other actions rejected
clean=0 partial=0 failed=0
for f in "${files[@]}"; do
    name=$(basename -- "$f" .conf)
    out=$work/$name.out.conf
    report=$work/$name.report
    status=0
    "$bin" import "$f" -o "$out" >"$report" 2>&1 || status=$?

    check=- svcs=- unmon=- other=-
    if [[ -s $out ]]; then
        cstatus=0
        "$bin" check "$out" >"$work/$name.check" 2>&1 || cstatus=$?
        if [[ $cstatus -eq 0 ]]; then
            check=OK
        else
            n=$(sed -n 's/^sextant: \([0-9][0-9]*\) error(s) in .*/\1/p' "$work/$name.check" | tail -n 1)
            check="FAIL(${n:-?})"
        fi
        read -r svcs unmon other < <(service_counts "$out")
    fi

    actions=$(section_entries "$report" 'Needs your action' | grep -c . || true)
    rejected=$(section_entries "$report" 'Rejected' | count_named_lines)

    if [[ $status -eq 0 && $rejected -eq 0 ]]; then
        clean=$((clean + 1))
    elif [[ $status -eq 0 || $status -eq 3 ]]; then
        partial=$((partial + 1))
    else
        failed=$((failed + 1))
    fi
    printf "$fmt" "$(basename -- "$f")" "$status" "$check" "$svcs" "$unmon" "$other" "$actions" "$rejected"
done
echo "${#files[@]} files: $clean imported clean, $partial imported with lines left out, $failed failed"
[[ $failed -eq 0 ]]
