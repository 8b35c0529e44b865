#!/usr/bin/python3
"""flood.py HOST PORT PREFIX NADDR RATE SECONDS: strangers' connections to HOST:PORT, opened
round robin from PREFIX.1 .. PREFIX.NADDR at RATE a second for SECONDS; each sends a HELLO
that looks right (no key is needed for one) and then nothing, held open until the receiver
drops it. On SIGTERM or at the end: "opened N dropped N" on stderr."""
import os, selectors, signal, socket, struct, sys, time

host, port, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
naddr, rate, secs = int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])


def frame(typ, payload):
    hdr = b"RDP\xb1" + struct.pack("<BBHII", 2, typ, 0, len(payload), 0) + bytes(8) + bytes(16) + bytes(8)
    return struct.pack("<I", len(hdr) + len(payload)) + hdr + payload


HELLO = frame(1, struct.pack("<HHIIII", 2, 2, 0, 65536, 4, 1) + os.urandom(32))
opened = dropped = 0


def report(*_):
    print("opened %d dropped %d" % (opened, dropped), file=sys.stderr, flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, report)
sel = selectors.DefaultSelector()
t0, n = time.time(), 0
while time.time() - t0 < secs:
    while n < int((time.time() - t0) * rate):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind(("%s.%d" % (prefix, 1 + n % naddr), 0))
            s.connect_ex((host, port))
            sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ, "new")
            opened += 1
        except OSError:
            s.close()
        n += 1
    for key, ev in sel.select(timeout=0.002):
        s = key.fileobj
        if key.data == "new" and ev & selectors.EVENT_WRITE:
            try:
                s.send(HELLO)
            except OSError:
                pass
            sel.modify(s, selectors.EVENT_READ, "open")
        elif ev & selectors.EVENT_READ:
            try:
                d = s.recv(4096)
            except OSError:
                d = b""
            if not d:
                sel.unregister(s)
                s.close()
                dropped += 1
report()
