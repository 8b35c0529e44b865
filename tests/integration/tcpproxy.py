#!/usr/bin/python3
"""tcpproxy.py LHOST LPORT THOST TPORT [DELAY_MS [DROP_FIRST [PASS_ONLY]]]: a TCP forwarder from
LHOST:LPORT to THOST:TPORT (connecting from LHOST).
DELAY_MS: every chunk is held that long each way, a long round trip on loopback.
DROP_FIRST: the first N connections are closed once their first bytes (the HELLO) arrived,
without a word, as a receiver whose handshake slots a flood took closes them.
PASS_ONLY: only the first N connections (after those dropped) are forwarded; the later ones
are accepted and held open in silence, as a middlebox that lets one flow through."""
import queue, socket, sys, threading, time

lh, lp, th, tp = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
delay = float(sys.argv[5]) / 1000 if len(sys.argv) > 5 else 0.0
drop = int(sys.argv[6]) if len(sys.argv) > 6 else 0
pass_only = int(sys.argv[7]) if len(sys.argv) > 7 else -1
held = []


def pipe(src, dst):
    q = queue.Queue()

    def reader():
        while True:
            try:
                c = src.recv(65536)
            except OSError:
                c = b""
            q.put((time.time() + delay, c))
            if not c:
                return

    threading.Thread(target=reader, daemon=True).start()
    while True:
        t, c = q.get()
        # one look at the clock: between two, a loaded machine can pass t, and a negative
        # sleep raised ValueError, which ended this direction's forwarding in silence (the
        # rest of a stream stuck in the queue: lockout.sh's flood case hung in CI, 2026-11-29)
        wait = t - time.time()
        if wait > 0:
            time.sleep(wait)
        try:
            if not c:
                dst.shutdown(socket.SHUT_WR)
                return
            dst.sendall(c)
        except OSError:
            return


def handle(a):
    b = socket.create_connection((th, tp), source_address=(lh, 0))
    threading.Thread(target=pipe, args=(a, b), daemon=True).start()
    threading.Thread(target=pipe, args=(b, a), daemon=True).start()


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((lh, lp))
ls.listen(16)
while True:
    a, _ = ls.accept()
    if drop > 0:
        drop -= 1
        a.recv(65536)
        a.close()
        continue
    if pass_only == 0:
        held.append(a)
        continue
    pass_only -= 1 if pass_only > 0 else 0
    threading.Thread(target=handle, args=(a,), daemon=True).start()
