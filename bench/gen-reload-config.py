#!/usr/bin/env python3
"""Writes an appliance-syntax configuration of N GSLB services for
bench/reload-scale.sh, everything on loopback.

    bench/gen-reload-config.py N DNS_PORT OUT.conf [--edit K]

Two sites, both with metric exchange off (no MEP listener, no peer): `fra`
(LOCAL, 127.0.0.1) and `ams` (127.0.0.2). Services come in groups of 10, one
group per application: 5 at fra (addresses from 127.192.0.1), 5 at ams
(from 127.208.0.1), all on port 8080 where nothing listens, so the TCP
monitor bound to every service (60 s interval) fails fast with a refused
connection. Each group is one vserver with one domain under the zone
gslb.example.com, weights 1-100. With --edit K the K-th service (0-based)
gets another IP (127.200.x.y or 127.216.x.y): the same configuration with
one real change, for a reload. The ranges are far from the 127.80-127.100
ones other tests on this machine listen on, and port 8080 is below the
ephemeral range, so a probe never reaches a listener or connects to itself.
"""
import sys


def ip(base_second_octet: int, i: int) -> str:
    # i-th address after 127.B.0.0, skipping .0 and .255 in the last octet.
    host = (i // 254) * 256 + (i % 254) + 1
    return f"127.{base_second_octet + (host >> 16)}.{(host >> 8) & 255}.{host & 255}"


def main() -> int:
    args = sys.argv[1:]
    edit = None
    if "--edit" in args:
        k = args.index("--edit")
        edit = int(args[k + 1])
        del args[k : k + 2]
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        return 64
    n, dns_port, out = int(args[0]), int(args[1]), args[2]
    per_group, per_site = 10, 5
    groups = (n + per_group - 1) // per_group
    lines = [
        f"# bench/reload-scale.sh: {n} GSLB services, {groups} vservers/domains, 2 sites",
        f"add service sextant-dns 127.0.0.1 ADNS {dns_port}",
        "add gslb site fra 127.0.0.1 -siteType LOCAL -metricExchange DISABLED",
        "add gslb site ams 127.0.0.2 -metricExchange DISABLED",
        "add lb monitor tcp-8080 TCP -interval 60 SEC -resptimeout 2 SEC -retries 3",
        "add dns soaRec gslb.example.com -originServer ns1.gslb.example.com -contact hostmaster.example.com",
        "add dns nsRec gslb.example.com ns1.gslb.example.com",
    ]
    services, binds, vservers = [], [], []
    count = {"fra": 0, "ams": 0}
    made = 0
    for g in range(groups):
        app = f"app{g + 1:05d}"
        vs = f"gv-{app}"
        method = "SOURCEIPHASH" if g % 5 == 4 else "ROUNDROBIN"
        vservers.append(f"add gslb vserver {vs} HTTP -lbMethod {method}")
        for j in range(per_group):
            if made == n:
                break
            site, base = ("fra", 192) if j < per_site else ("ams", 208)
            name = f"{app}-{site}-{j % per_site + 1}"
            addr = ip(base, count[site])
            if edit is not None and made == edit:
                addr = ip(base + 8, count[site])  # 127.200.x.y / 127.216.x.y: unused
            count[site] += 1
            made += 1
            services.append(f"add gslb service {name} {addr} HTTP 8080 -siteName {site}")
            binds.append(f"bind gslb service {name} -monitorName tcp-8080")
            weight = (g * 7 + j * 13) % 100 + 1
            vservers.append(f"bind gslb vserver {vs} -serviceName {name} -weight {weight}")
        vservers.append(f"bind gslb vserver {vs} -domainName {app}.gslb.example.com -TTL 30")
    with open(out, "w") as f:
        f.write("\n".join(lines + services + binds + vservers) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
