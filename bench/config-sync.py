#!/usr/bin/env python3
"""Config sync among parents, measured (issue 27): three parents on loopback
(127.0.71.1-3), each a `sextant serve` with its own file of N services; a
change at P1 (SIGHUP); how long until P2 and P3 answer with it over DNS, and
how many bytes of config sync P1 sent. Two changes: one line (a domain's
TTL) and a whole new configuration (every service's port, and the TTL).

Run by bench/config-sync.sh (which builds the release binary). Prints one
table; nothing is asserted. Bounded: every wait has a deadline, every
process is ended by its PID.
"""

import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

BIN = sys.argv[1]
SIZES = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "1000,10000").split(",")]
REPEAT = int(os.environ.get("REPEAT", "3"))
IPS = ["127.0.71.1", "127.0.71.2", "127.0.71.3"]
NAMES = ["P1", "P2", "P3"]
DNS_PORT = 5371
API_PORT = 8071
TOKEN = "bench-config-sync-token-0123456789abcdef"
DOMAIN = "app.bench.example"


def shared(n, ttl, port):
    lines = []
    for name, ip in zip(NAMES, IPS):
        lines.append(f"add gslb site {name} {ip}")
    lines.append("add dns soaRec bench.example -originServer ns1.bench.example -contact hostmaster.bench.example")
    lines.append("add dns nsRec bench.example ns1.bench.example")
    vservers = max(1, n // 10)
    for v in range(vservers):
        lines.append(f"add gslb vserver vs{v} HTTP -lbMethod ROUNDROBIN")
    for i in range(n):
        a, b = divmod(i, 250)
        lines.append(f"add gslb service s{i} 10.{a // 250}.{a % 250}.{b + 1} HTTP {port} -siteName {NAMES[i % 3]}")
        lines.append(f"bind gslb vserver vs{i % vservers} -serviceName s{i} -weight {1 + i % 100}")
    lines.append(f"bind gslb vserver vs0 -domainName {DOMAIN} -TTL {ttl}")
    for v in range(1, vservers):
        lines.append(f"bind gslb vserver vs{v} -domainName d{v}.bench.example -TTL 30")
    return "\n".join(lines) + "\n"


def file_for(k, text):
    me = NAMES[k]
    own = f"add gslb site {me} {IPS[k]}\n"
    return (
        f"add service adns_{me} {IPS[k]} ADNS {DNS_PORT}\n"
        "set gslb parameter -automaticConfigSync ENABLED\n"
        + text.replace(own, f"add gslb site {me} {IPS[k]} -siteType LOCAL\n")
    )


def api(k, path):
    req = urllib.request.Request(f"http://{IPS[k]}:{API_PORT}{path}", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.read().decode()


def ttl_of(k):
    """The TTL of the first answer for DOMAIN at parent k, or None."""
    qid = 0x5353
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in DOMAIN.split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack(">HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.5)
    try:
        s.sendto(q, (IPS[k], DNS_PORT))
        data, _ = s.recvfrom(4096)
    except OSError:
        return None
    finally:
        s.close()
    an = struct.unpack(">H", data[6:8])[0]
    if an == 0:
        return None
    pos = 12
    while data[pos] != 0:
        pos += data[pos] + 1
    pos += 5
    # The answer's name: a pointer (2 bytes) as Sextant writes it.
    pos += 2 if data[pos] & 0xC0 == 0xC0 else 0
    _rtype, _rclass, ttl = struct.unpack(">HHI", data[pos:pos + 8])
    return ttl


def sync_bytes(k):
    text = api(k, "/metrics")
    total = 0
    for line in text.splitlines():
        if line.startswith("sextant_config_sync_bytes_total{") and 'direction="sent"' in line:
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


def transfers(k):
    text = api(k, "/metrics")
    out = {"delta": 0, "full": 0}
    for line in text.splitlines():
        if line.startswith("sextant_config_sync_transfers_total{"):
            kind = "delta" if 'kind="delta"' in line else "full"
            out[kind] += int(float(line.rsplit(" ", 1)[1]))
    return out


def wait(what, cond, deadline=120):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            if cond():
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise SystemExit(f"config-sync bench: timed out waiting for {what}")


def in_sync(k):
    sites = json.loads(api(k, "/v1/sites"))
    peers = [s for s in sites if s.get("config_sync") and s["config_sync"]["state"] != "local"]
    return len(peers) == 2 and all(s["config_sync"]["state"] == "in_sync" for s in peers)


def run(n):
    work = tempfile.mkdtemp(prefix="sextant-config-sync-bench-")
    procs = []
    try:
        tokens = os.path.join(work, "tokens")
        with open(tokens, "w") as f:
            f.write(f"bench {TOKEN}\n")
        os.chmod(tokens, 0o600)
        base = shared(n, 5, 80)
        paths = []
        for k in range(3):
            p = os.path.join(work, f"{NAMES[k]}.conf")
            with open(p, "w") as f:
                f.write(file_for(k, base))
            paths.append(p)
            log = open(os.path.join(work, f"{NAMES[k]}.log"), "w")
            procs.append(subprocess.Popen(
                [BIN, "serve", "--config", p, "--api-listen", f"{IPS[k]}:{API_PORT}",
                 "--api-token-file", tokens, "--udp-workers", "1"],
                stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, RUST_LOG="warn")))
        for k in range(3):
            wait(f"{NAMES[k]} in sync with both peers", lambda k=k: in_sync(k))
        rows = []
        ttl, port = 5, 80
        for rep in range(REPEAT):
            for change in ["one line", "whole file"]:
                # One line: the domain's TTL only. The whole file: every
                # service's port too (and the TTL, to see it answered).
                ttl += 1
                if change == "whole file":
                    port += 1
                text = shared(n, ttl, port)
                before_bytes = sync_bytes(0)
                before_kind = transfers(0)
                with open(paths[0], "w") as f:
                    f.write(file_for(0, text))
                t0 = time.monotonic()
                procs[0].send_signal(signal.SIGHUP)
                wait("P1 answers with the change", lambda: ttl_of(0) == ttl)
                t1 = time.monotonic()
                took = {}
                for k in (1, 2):
                    wait(f"{NAMES[k]} answers with the change", lambda k=k: ttl_of(k) == ttl)
                    took[k] = time.monotonic()
                for k in range(3):
                    wait("in sync", lambda k=k: in_sync(k))
                kinds = transfers(0)
                kind = "delta" if kinds["delta"] > before_kind["delta"] else "full"
                rows.append((n, change, kind, (t1 - t0) * 1000, (took[1] - t0) * 1000,
                             (took[2] - t0) * 1000, sync_bytes(0) - before_bytes, len(text)))
        return rows
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


def main():
    print("| services | change | sent as | P1 reloaded (ms) | P2 answers (ms) | P3 answers (ms) | bytes P1 sent (to both) | shared text (bytes) |")
    print("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for n in SIZES:
        for (n_, change, kind, p1, p2, p3, sent, size) in run(n):
            print(f"| {n_} | {change} | {kind} | {p1:.0f} | {p2:.0f} | {p3:.0f} | {sent} | {size} |", flush=True)


if __name__ == "__main__":
    main()
