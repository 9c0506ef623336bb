#!/usr/bin/env python3
"""TCP listeners for the failover case of bench/peers.sh.

Listens on port 8053 of 127.0.61.1-4 (the four failover addresses) and
accepts and closes every connection, so that Sextant's tcp monitor,
gdnsd's tcp_connect check and PowerDNS's ifportup all see them UP.
Runs until killed (bench/peers.sh stops it by PID).
"""
import selectors
import socket

sel = selectors.DefaultSelector()
for i in range(1, 5):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((f"127.0.61.{i}", 8053))
    s.listen(64)
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
print("listening", flush=True)
while True:
    for key, _ in sel.select():
        try:
            conn, _ = key.fileobj.accept()
            conn.close()
        except OSError:
            pass
