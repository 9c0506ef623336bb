#!/usr/bin/env bash
# Installs what Sextant's tests and benchmarks need on a fresh Debian machine:
# dig (bind9-dnsutils), dnsperf, ip (iproute2), iptables, taskset (util-linux),
# curl (bench/dns.sh METHOD=RTT reads the API), keepalived (the VRRPv3
# baseline of the VRRP lab and bench/vrrp-failover.sh; Debian bookworm has
# 1:2.2.7) and ping (iputils-ping, for looking at the VRRP lab by hand; the
# lab's own pinger is in Rust).
# Idempotent: installs only what is missing, and touches nothing but Debian's
# package registry. Run as root (CI runs it as root); as another user it uses
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

if [ "${#need[@]}" -eq 0 ]; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif have sudo && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
else
    echo "setup.sh: missing ${need[*]}; run 'apt-get install -y ${need[*]}' as root" >&2
    exit 0
fi

echo "setup.sh: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq >/dev/null
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
