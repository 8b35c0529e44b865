#!/usr/bin/python3
"""mitm.py - a man in the middle between rdsend and rdrecv over TCP, for tests/integration/mitm.sh.

usage: mitm.py MODE LISTEN_PORT TARGET_PORT [RECORD_FILE]

It accepts one connection on 127.0.0.1:LISTEN_PORT, connects to 127.0.0.1:TARGET_PORT and
passes frames both ways (4-byte length prefix, 48-byte header, payload), tampering with the
stream as MODE says. Wherever it changes what it forwards, it first recomputes every unkeyed
check it can: END's totals and its whole-stream hash (XXH3 chained over the tags). Only the
keyed tags stay out of its reach, which is the point of the test.

modes:
  pass      change nothing (the control case: the transfer must succeed through it)
  flip      flip one payload bit of DATA frame 1
  replay    send DATA frame 1 twice
  reorder   swap DATA frames 1 and 2
  truncate  drop the last DATA frame and fix END's totals and hash to match
  replace   replace DATA frame 1's payload with other bytes of the same length
  record    pass everything and save the DATA frames to RECORD_FILE
  splice    put the recorded session's DATA frame 1 in place of this session's
  confirm   keep END from the receiver and answer the sender with a CONFIRM made from it
  reflect   send the sender's own END back to it as its CONFIRM (type changed, tag kept)
  abort     replace DATA frame 1 with an ABORT carrying a made-up reason (no valid tag)
Prints one line "mitm: MODE done" on stderr when it has acted.
"""
import pickle
import socket
import struct
import sys
import threading

import xxhash

HDR = 48
HELLO, AUTH = 1, 3
DATA, END, CONFIRM, ABORT = 6, 7, 8, 9


def recv_exact(s, n):
    b = bytearray()
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return bytes(b)


def read_frame(s):
    (n,) = struct.unpack("<I", recv_exact(s, 4))
    return bytearray(recv_exact(s, n))


def write_frame(s, f):
    s.sendall(struct.pack("<I", len(f)) + bytes(f))


def ftype(f):
    return f[5] if len(f) >= HDR else 0


def tag(f):
    return bytes(f[24:40])


def say(mode):
    print("mitm: %s done" % mode, file=sys.stderr, flush=True)


def fix_end(end, datas):
    """Recompute END's totals and whole-stream hash for the DATA frames that went on."""
    h = 0
    for d in datas:
        h = xxhash.xxh3_64_intdigest(tag(d), seed=h)
    total = sum(len(d) - HDR for d in datas)
    end[HDR:HDR + 24] = struct.pack("<QQQ", total, len(datas), h)
    end[16:24] = struct.pack("<Q", len(datas))   # END's seq counts the DATA frames
    return end


def upstream(mode, src, dst, back, record):
    """Sender -> receiver, where the stream is tampered with."""
    datas, n, held = [], 0, None
    saved = []
    if mode == "splice":
        with open(record, "rb") as f:
            saved = pickle.load(f)
    while True:
        f = read_frame(src)
        t = ftype(f)
        # handshake frames carry seq 0 and a zero tag: their MACs cover the payload alone
        if (mode == "hsseq" and t == HELLO) or (mode == "hstag" and t == AUTH):
            f[16 if mode == "hsseq" else 24] ^= 0x01
            say(mode)
        if t == DATA:
            if mode == "record":
                saved.append(bytes(f))
            if n == 1 and mode == "flip":
                f[HDR + 7] ^= 0x10
                say(mode)
            elif n == 1 and mode == "replace":
                f[HDR:] = bytes((x + 1) & 0xff for x in f[HDR:])
                say(mode)
            elif n == 1 and mode == "splice":
                f = bytearray(saved[1])
                say(mode)
            elif n == 1 and mode == "abort":
                reason = struct.pack("<I", 4) + b"mitm says stop"
                f = bytearray(f[:HDR]) + reason
                f[5] = ABORT
                f[8:12] = struct.pack("<I", len(reason))
                say(mode)
                write_frame(dst, f)
                n += 1
                continue
            elif n == 1 and mode == "reorder":
                held = f
                n += 1
                continue
            elif n == 1 and mode == "replay":
                say(mode)
                write_frame(dst, f)
                datas.append(f)
            if held is not None:
                say(mode)   # first: the receiver may hang up as soon as it sees the swap
                write_frame(dst, f)
                write_frame(dst, held)
                datas += [f, held]
                held = None
                n += 1
                continue
            if mode == "truncate":
                # hold each frame back one step: the last one never goes on
                if held_last[0] is not None:
                    write_frame(dst, held_last[0])
                    datas.append(held_last[0])
                held_last[0] = f
                n += 1
                continue
            write_frame(dst, f)
            datas.append(f)
            n += 1
            continue
        if t == END:
            if mode == "record":
                with open(record, "wb") as fh:
                    pickle.dump(saved, fh)
            if mode == "truncate":
                f = fix_end(f, datas)
                say(mode)
            elif mode in ("replay", "reorder", "flip", "replace", "splice"):
                f = fix_end(f, datas)   # the totals and hash match what went on
            if mode == "confirm":
                c = bytearray(f)
                c[5] = CONFIRM
                c[16:24] = bytes(8)
                say(mode)
                write_frame(back, c)
                return
            if mode == "reflect":
                c = bytearray(f)
                c[5] = CONFIRM
                say(mode)
                write_frame(back, c)
                return
        write_frame(dst, f)


held_last = [None]


def downstream(src, dst):
    while True:
        write_frame(dst, read_frame(src))


def main():
    mode, lport, tport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    record = sys.argv[4] if len(sys.argv) > 4 else None
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", lport))
    ls.listen(1)
    print("ready", flush=True)
    a, _ = ls.accept()
    b = socket.create_connection(("127.0.0.1", tport))

    def down():
        try:
            downstream(b, a)
        except (EOFError, OSError):
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    t = threading.Thread(target=down, daemon=True)
    t.start()
    try:
        upstream(mode, a, b, a, record)
    except (EOFError, OSError):
        pass
    # whatever happened, both sides are now on their own: cut the receiver off so it cannot
    # wait forever for frames the proxy no longer forwards
    if mode in ("confirm", "reflect"):
        try:
            b.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    t.join(timeout=20)


if __name__ == "__main__":
    main()
