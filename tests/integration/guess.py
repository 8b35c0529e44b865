#!/usr/bin/python3
"""guess.py - an impostor rdrecv that tries to learn the key offline, for tests/integration/keys.sh.

usage: guess.py PORT GUESS CANDIDATES_FILE

It listens on 127.0.0.1:PORT, takes one real rdsend, and plays the receiver's part of the
handshake with GUESS as its key: it answers HELLO with a CHALLENGE whose CPace share is built
from GUESS, and receives the sender's AUTH (its share and key-confirmation MAC). Then, offline,
it tries every key in CANDIDATES_FILE (one per line) against what it recorded, the way the
version 1 attack tested guesses against the receiver's MAC: for each candidate it derives the
session keys it would share with the sender and checks the sender's MAC.

With CPace the impostor's own scalar commits it to GUESS: the sender's K is its scalar times
the impostor's share, and for any key but GUESS the impostor would need a discrete logarithm
to compute it. So the offline check cannot depend on the candidate: either every candidate
"checks" (GUESS was the key: one guess, tested online) or none does, the right key included.
Prints "committed guess: right|wrong" and "offline: N of M candidates check", then closes
without answering (the sender fails).
The crypto is fake_sender.py's (an implementation of the protocol written from its description).
"""
import os
import socket
import struct
import sys

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "fake_sender.py")) as f:
    lib = f.read().split("# ---------------------------------------------------------------- the sender")[0]
exec(compile(lib, os.path.join(here, "fake_sender.py"), "exec"))


def session_mac_check(prs_of_key, hello, chal, ns, nr, yr_scalar, yr, ys, mac_s):
    """Does the sender's MAC verify for a receiver that used yr_scalar under this key?"""
    ci = b"rdpipe v2" + hello + chal[:48]
    sid = ns + nr
    # the generator for this candidate: what an honest receiver with this key would have used
    g = cpace_generator(prs_of_key, ci, sid)
    # the impostor's share was made from ITS guess; for another candidate it has no scalar
    # that turns the sender's share into the sender's K (that would be a discrete log), so the
    # best it can do is its own scalar: K = yr_scalar * Ys
    k = scalarmult(yr_scalar, ys)
    if k is None or g is None:
        return False
    isk = cpace_isk(sid, k, yr, b"rdpipe receiver", ys, b"rdpipe sender")
    confirm_s = hkdf(isk, b"rdpipe v2", b"rdpipe v2 sender confirms")
    return hmac.compare_digest(mac_s, mac(confirm_s, b"rdpipe v2 sender proves key", hello, chal, ys))


port, guess, cand_file = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3]
candidates = [l.rstrip("\n").encode() for l in open(cand_file) if l.strip()]
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(1)
print("listening", flush=True)
c, _ = ls.accept()
c.settimeout(15)
typ, _, hello = recv_frame(c)
if typ != HELLO or len(hello) != 52:
    die("expected a 52-byte HELLO, got type %d" % typ)
ns = hello[20:52]
chunk = min(struct.unpack_from("<I", hello, 8)[0], 1 << 20)
depth = max(1, min(struct.unpack_from("<I", hello, 12)[0], 8))
nr = os.urandom(32)
params = struct.pack("<IIII", 0, chunk, depth, 1) + nr
ci = b"rdpipe v2" + hello + params
g = cpace_generator(hkdf(guess, b"rdpipe v2", b"rdpipe v2 cpace prs"), ci, ns + nr)
yr_scalar = random_scalar()
yr = scalarmult(yr_scalar, g)
chal = params + yr
c.sendall(frame(CHALLENGE, chal))
typ, _, auth = recv_frame(c)
if typ != AUTH or len(auth) != 64:
    die("expected a 64-byte AUTH, got type %d, %d bytes" % (typ, len(auth)))
ys, mac_s = auth[:32], auth[32:]
c.close()   # no ACCEPT: the sender never learns whether the guess was right

right = session_mac_check(hkdf(guess, b"rdpipe v2", b"rdpipe v2 cpace prs"), hello, chal, ns, nr,
                          yr_scalar, yr, ys, mac_s)
print("committed guess: %s" % ("right" if right else "wrong"), flush=True)
hits = [k for k in candidates
        if session_mac_check(hkdf(k, b"rdpipe v2", b"rdpipe v2 cpace prs"), hello, chal, ns, nr,
                             yr_scalar, yr, ys, mac_s)]
print("offline: %d of %d candidates check%s" % (len(hits), len(candidates),
                                                (": " + b", ".join(hits).decode()) if hits else ""), flush=True)
