#!/usr/bin/python3
"""dropfirst.py LHOST LPORT THOST TPORT N: a TCP forwarder from LHOST:LPORT to THOST:TPORT
that closes each of the first N connections once their first bytes (the HELLO) arrived,
without a word, as a receiver whose handshake slots a flood took does."""
import socket, sys, threading

lh, lp, th, tp, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])


def pipe(src, dst):
    while True:
        try:
            c = src.recv(65536)
        except OSError:
            c = b""
        try:
            if not c:
                dst.shutdown(socket.SHUT_WR)
                return
            dst.sendall(c)
        except OSError:
            return


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((lh, lp))
ls.listen(16)
while True:
    a, _ = ls.accept()
    if n > 0:
        n -= 1
        a.recv(65536)
        a.close()
        print("dropped one", file=sys.stderr, flush=True)
        continue
    b = socket.create_connection((th, tp))
    threading.Thread(target=pipe, args=(a, b), daemon=True).start()
    threading.Thread(target=pipe, args=(b, a), daemon=True).start()
