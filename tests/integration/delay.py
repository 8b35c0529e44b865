#!/usr/bin/python3
"""delay.py LHOST LPORT THOST TPORT DELAY_MS: a TCP forwarder from LHOST:LPORT to THOST:TPORT
(from LHOST) that holds every chunk DELAY_MS each way: a long round trip on loopback."""
import queue, socket, sys, threading, time

lh, lp, th, tp = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
delay = float(sys.argv[5]) / 1000


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
        if t > time.time():
            time.sleep(t - time.time())
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
    threading.Thread(target=handle, args=(a,), daemon=True).start()
