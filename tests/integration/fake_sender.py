#!/usr/bin/python3
"""fake_sender.py - an rdsend written from the protocol's description, for tests/integration/streams.sh.

usage: fake_sender.py PORT KEY STREAMS DATAFILE [MODE]
       fake_sender.py --check      exit 0 if this python can run it, else print why and exit 2

Protocol version 2 (lib/wire/rd_proto.h, rd_tag.h, rd_auth.h, rd_cpace.h): a second,
independent implementation of it, in python, with libsodium (through ctypes) for ristretto255
and ChaCha20-Poly1305, hashlib/hmac for SHA-512, HMAC-SHA256 and HKDF, xxhash for XXH3-64.

Connects as the primary, does HELLO -> CHALLENGE -> AUTH -> ACCEPT (CPace over ristretto255,
checking the receiver's key-confirmation MAC), then (MODE ok, the default) tries forged
stripes, each of which must be turned away, joins the real ones, sends DATAFILE striped and
waits for CONFIRM, whose tag (stream key, direction UP, seq 0) it checks.
  swap      frames 0 and 1 go on each other's connection
  corrupt   the last payload byte of frame 2 is flipped (its tag kept)
  wrongkey  frame 1 is tagged under the hop key instead of the stream key
            these three expect the receiver's ABORT, whose hop tag (hop key, HOP_UP) is checked
  vanish    closes the connection right after ACCEPT, before any stripe joins
  idle      opens 4 connections that say nothing before it joins its stripes, expects CONFIRM
  bomb      asks for compression; frame 1 is a COMPRESSED DATA frame (raw length: one chunk)
            whose zstd frame claims 1 TiB of content (a zstd bomb), correctly tagged
  bombhdr   the same, but the header itself claims a raw length of 4 GiB - 1
            these two (like the first three) expect the receiver's ABORT
  endlie    the END claims one byte more than the DATA frames carried
  stall     half of frame 2 on its connection first (left open mid-frame), then 0.3 s later
            frames 0 and 1 swapped as in swap
  abort     after frames 0 and 1, an ABORT (hop key, HOP_DOWN; code 5, "fake sender: cannot
            read its input") where frame 2 would go, and nothing more
            these two expect the receiver's ABORT too
RDPIPE_STREAM_KEY (64 hex digits), as rdsend takes it: the stream key that tags DATA, END and
CONFIRM, in place of the session's (a relay's upstream, with the sink holding the same key).
Prints one line per step; exits 1 ("FAIL ...") at the first thing that is not as documented.
"""
import ctypes
import hashlib
import hmac
import os
import socket
import struct
import sys
import time

HELLO, CHALLENGE, AUTH, ACCEPT, REJECT, DATA, END, CONFIRM, ABORT, JOIN = range(1, 11)
TAG_DOWN, TAG_UP, TAG_HOP_DOWN, TAG_HOP_UP = 1, 2, 3, 4
VERSION = 2
HDR = 48
ZERO_TAG = bytes(16)


def die(msg):
    print("FAIL " + msg, flush=True)
    sys.exit(1)


# ---------------------------------------------------------------- the primitives
def load():
    """(libsodium, xxh3) or raise with the reason."""
    try:
        import xxhash
        xxh3 = xxhash.xxh3_64_intdigest
    except ImportError:
        try:
            lx = ctypes.CDLL("libxxhash.so.0")
            lx.XXH3_64bits_withSeed.restype = ctypes.c_uint64
            lx.XXH3_64bits_withSeed.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
        except (OSError, AttributeError) as e:
            raise RuntimeError("neither the xxhash module nor libxxhash.so.0 (XXH3-64): %s" % e)

        def xxh3(b, seed=0):
            return lx.XXH3_64bits_withSeed(b, len(b), seed)
    na = None
    for name in ("libsodium.so.23", "libsodium.so"):
        try:
            na = ctypes.CDLL(name)
            break
        except OSError:
            pass
    if na is None:
        raise RuntimeError("libsodium cannot be loaded through ctypes (neither libsodium.so.23 nor "
                           "libsodium.so: apt-get install libsodium23)")
    try:
        for name in ("crypto_core_ristretto255_from_hash", "crypto_scalarmult_ristretto255",
                     "crypto_core_ristretto255_is_valid_point", "crypto_core_ristretto255_scalar_random",
                     "crypto_aead_chacha20poly1305_ietf_encrypt_detached"):
            getattr(na, name).restype = ctypes.c_int if name != "crypto_core_ristretto255_scalar_random" else None
    except AttributeError as e:
        raise RuntimeError("this libsodium lacks ristretto255 or ChaCha20-Poly1305 IETF: %s" % e)
    if na.sodium_init() < 0:
        raise RuntimeError("sodium_init failed")
    return na, xxh3


try:
    NA, xxh3 = load()
except RuntimeError as e:
    if sys.argv[1:] == ["--check"]:
        print(e)
        sys.exit(2)
    die(str(e))


def buf(n):
    return ctypes.create_string_buffer(n)


def aead_tag(key, nonce, ad):
    """ChaCha20-Poly1305 (RFC 8439) of an empty plaintext: the 16-byte Poly1305 tag over ad."""
    assert len(key) == 32 and len(nonce) == 12
    c, mac, maclen = buf(1), buf(16), ctypes.c_ulonglong(0)
    rc = NA.crypto_aead_chacha20poly1305_ietf_encrypt_detached(
        c, mac, ctypes.byref(maclen), None, ctypes.c_ulonglong(0), ad, ctypes.c_ulonglong(len(ad)),
        None, nonce, key)
    if rc != 0 or maclen.value != 16:
        die("libsodium's ChaCha20-Poly1305 failed")
    return mac.raw


def self_test():
    """RFC 8439 2.8.2, so that a binding error here is not taken for a wrong tag over there."""
    key = bytes(range(0x80, 0xa0))
    nonce = bytes.fromhex("070000004041424344454647")
    ad = bytes.fromhex("50515253c0c1c2c3c4c5c6c7")
    m = (b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the "
         b"future, sunscreen would be it.")
    c, mac, maclen = buf(len(m)), buf(16), ctypes.c_ulonglong(0)
    NA.crypto_aead_chacha20poly1305_ietf_encrypt_detached(
        c, mac, ctypes.byref(maclen), m, ctypes.c_ulonglong(len(m)), ad, ctypes.c_ulonglong(len(ad)),
        None, nonce, key)
    if mac.raw != bytes.fromhex("1ae10b594f09e26a7e902ecbd0600691") or c.raw[:4] != bytes.fromhex("d31a8d34"):
        die("libsodium through ctypes fails RFC 8439's ChaCha20-Poly1305 test vector")


def ristretto_from_hash(h64):
    out = buf(32)
    NA.crypto_core_ristretto255_from_hash(out, h64)
    return out.raw


def scalarmult(scalar, point):
    """scalar * point, or None for an invalid point or an identity result (scalar_mult_vfy)."""
    out = buf(32)
    if NA.crypto_scalarmult_ristretto255(out, scalar, point) != 0 or out.raw == bytes(32):
        return None
    return out.raw


def random_scalar():
    out = buf(32)
    NA.crypto_core_ristretto255_scalar_random(out)
    return out.raw


def hkdf(ikm, salt, info, n=32):   # RFC 5869 with SHA-256
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out, i = out + t, i + 1
    return out[:n]


def mac(key, *parts):
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()


# ---------------------------------------------------------------- CPace (draft-irtf-cfrg-cpace-21)
def leb128(n):
    out = b""
    while True:
        b, n = n & 0x7f, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def lv(b):   # prepend_len
    return leb128(len(b)) + b


def lv_cat(*parts):
    return b"".join(lv(p) for p in parts)


DSI = b"CPaceRistretto255"


def cpace_generator(prs, ci, sid):
    # generator_string(DSI, PRS, CI, sid, 128): DSI and PRS padded to one SHA-512 block
    zpad = max(0, 128 - 1 - len(lv(prs)) - len(lv(DSI)))
    return ristretto_from_hash(hashlib.sha512(lv_cat(DSI, prs, bytes(zpad), ci, sid)).digest())


def cpace_isk(sid, k, ya, ada, yb, adb):   # initiator-responder: transcript_ir
    return hashlib.sha512(lv_cat(DSI + b"_ISK", sid, k) + lv_cat(ya, ada) + lv_cat(yb, adb)).digest()


# ---------------------------------------------------------------- frames
def header(typ, length, seq, tag=ZERO_TAG, flags=0, raw=0):
    # magic, version, type, flags, length, reserved 0, seq, tag, raw length (compressed), 0
    return (b"RDP\xb1" + struct.pack("<BBHII", VERSION, typ, flags, length, 0) + struct.pack("<Q", seq) + tag +
            struct.pack("<II", raw, 0))


def frame_tag(key, direction, hdr, payload):
    nonce = bytes([direction, 0, 0, 0]) + hdr[16:24]
    return aead_tag(key, nonce, hdr[:24] + hdr[40:48] + payload)


def frame(typ, payload, seq=0, key=None, direction=0, flags=0, raw=0):
    """A frame on TCP: u32 length, header, payload; tagged when key is given, else tag zero."""
    hdr = header(typ, len(payload), seq, ZERO_TAG, flags, raw)
    if key is not None:
        hdr = header(typ, len(payload), seq, frame_tag(key, direction, hdr, payload), flags, raw)
    return struct.pack("<I", len(hdr) + len(payload)) + hdr + payload


def recv_exact(s, n):
    out = b""
    while len(out) < n:
        try:
            b = s.recv(n - len(out))
        except OSError as e:
            die("after %d of %d bytes: %s" % (len(out), n, e))
        if not b:
            die("connection closed after %d of %d bytes" % (len(out), n))
        out += b
    return out


NAMES = {HELLO: "HELLO", CHALLENGE: "CHALLENGE", AUTH: "AUTH", ACCEPT: "ACCEPT", REJECT: "REJECT",
         DATA: "DATA", END: "END", CONFIRM: "CONFIRM", ABORT: "ABORT", JOIN: "JOIN"}


def recv_frame(s, key=None, direction=0, want=None):
    """(type, seq, payload) of the next frame. Its header must be a v2 one, its type want (if
    given); its tag must be zero (key None: a handshake frame) or right for key and direction."""
    n, = struct.unpack("<I", recv_exact(s, 4))
    if n < HDR:
        die("a %d-byte frame, shorter than the %d-byte header" % (n, HDR))
    f = recv_exact(s, n)
    if f[:4] != b"RDP\xb1" or f[4] != VERSION:
        die("not a v2 frame: %r" % f[:8])
    typ, flags, length, res1 = struct.unpack_from("<BHII", f, 5)
    seq, = struct.unpack_from("<Q", f, 16)
    tag, res2, payload = f[24:40], f[40:48], f[HDR:]
    name = NAMES.get(typ, "type %d" % typ)
    if flags or res1 or res2 != bytes(8):
        die("%s with flags %#x or non-zero reserved bytes" % (name, flags))
    if len(payload) != length:
        die("%s: header says %d payload bytes, the frame has %d" % (name, length, len(payload)))
    if want is not None and typ != want:
        why = ": %r" % payload[4:] if typ in (ABORT, REJECT) else ""
        die("expected %s, got %s%s" % (NAMES[want], name, why))
    if key is None:
        if tag != ZERO_TAG or seq != 0:
            die("handshake-time %s with a tag or a sequence number (seq %d)" % (name, seq))
    elif not hmac.compare_digest(tag, frame_tag(key, direction, f[:HDR], payload)):
        die("%s (seq %d) fails its tag under the expected key, direction %d" % (name, seq, direction))
    return typ, seq, payload


def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=15)


# ---------------------------------------------------------------- the sender
if sys.argv[1:] == ["--check"]:
    self_test()
    sys.exit(0)
self_test()
port, key, streams, path = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3]), sys.argv[4]
mode = sys.argv[5] if len(sys.argv) > 5 else "ok"
if mode not in ("ok", "swap", "corrupt", "wrongkey", "vanish", "idle", "bomb", "bombhdr", "endlie", "abort", "stall"):
    die("unknown MODE " + mode)
data = open(path, "rb").read()
prs = hkdf(key, b"rdpipe v2", b"rdpipe v2 cpace prs")

c0 = connect(port)
ns = os.urandom(32)
want_caps = 1 if mode.startswith("bomb") else 0   # RD_FLAG_COMPRESSED
hello = struct.pack("<HHIIII", VERSION, VERSION, want_caps, 65536, 4, streams) + ns
c0.sendall(frame(HELLO, hello))
typ, _, chal = recv_frame(c0)
if typ != CHALLENGE or len(chal) != 80:
    die("expected an 80-byte CHALLENGE, got type %d, %d bytes" % (typ, len(chal)))
caps, chunk, depth, granted = struct.unpack_from("<IIII", chal)
nr, yr = chal[16:48], chal[48:80]
print("CHALLENGE chunk %d depth %d streams %d" % (chunk, depth, granted), flush=True)
if caps != want_caps or chunk < 4096 or chunk > 65536 or depth < 1 or depth > 4:
    die("granted caps %#x chunk %d depth %d: not what was asked" % (caps, chunk, depth))
if granted != streams:
    die("asked for %d streams, granted %d" % (streams, granted))
if NA.crypto_core_ristretto255_is_valid_point(yr) != 1:
    die("the receiver's share is not a valid ristretto255 element")

# CPace: CI = label || HELLO || the agreed parameters and Nr; sid = Ns || Nr; the receiver is
# the initiator (its share came first)
ci = b"rdpipe v2" + hello + chal[:48]
sid = ns + nr
g = cpace_generator(prs, ci, sid)
ys_scalar = random_scalar()
ys = scalarmult(ys_scalar, g)
k = scalarmult(ys_scalar, yr)
if ys is None or k is None:
    die("the key exchange gives the identity")
isk = cpace_isk(sid, k, yr, b"rdpipe receiver", ys, b"rdpipe sender")
salt = b"rdpipe v2"
hop_key = hkdf(isk, salt, b"rdpipe v2 hop tags")
stream_key = hkdf(isk, salt, b"rdpipe v2 stream tags")
if os.environ.get("RDPIPE_STREAM_KEY"):
    stream_key = bytes.fromhex(os.environ["RDPIPE_STREAM_KEY"])
join_key = hkdf(isk, salt, b"rdpipe v2 join")
confirm_s = hkdf(isk, salt, b"rdpipe v2 sender confirms")
confirm_r = hkdf(isk, salt, b"rdpipe v2 receiver confirms")
mac_s = mac(confirm_s, b"rdpipe v2 sender proves key", hello, chal, ys)
c0.sendall(frame(AUTH, ys + mac_s))
typ, _, p = recv_frame(c0)
if typ == REJECT:
    die("AUTH rejected: %r" % p[4:])
if typ != ACCEPT or len(p) != 32:
    die("expected a 32-byte ACCEPT after AUTH, got type %d, %d bytes" % (typ, len(p)))
if not hmac.compare_digest(p, mac(confirm_r, b"rdpipe v2 receiver proves key", hello, chal, ys, mac_s)):
    die("the receiver's MAC is not HMAC(confirm_r, label || HELLO || CHALLENGE || Ys || MACs)")
print("ACCEPT, receiver MAC right", flush=True)


def jmac(i, key=join_key):
    return mac(key, b"rdpipe v2 stripe", struct.pack("<I", i))


def join(what, index, m, want):
    s = connect(port)
    s.sendall(frame(JOIN, struct.pack("<I", index) + m))
    typ, _, p = recv_frame(s)   # the stripe's own handshake: untagged
    if typ != want:
        die("%s: answered type %d, expected %d" % (what, typ, want))
    if typ == REJECT:
        if len(p) < 4:
            die("%s: a %d-byte REJECT" % (what, len(p)))
        code, = struct.unpack_from("<I", p)
        print("REJECT %s: code %d: %s" % (what, code, p[4:].decode()), flush=True)
        s.close()
        return None
    if p:
        die("%s: ACCEPT with a %d-byte payload" % (what, len(p)))
    print("ACCEPT %s" % what, flush=True)
    return s


conns = [c0]
if mode == "vanish":   # a sender that dies between ACCEPT and its stripes
    c0.close()
    print("vanished", flush=True)
    sys.exit(0)
if mode == "idle":     # connections that say nothing, ahead of the real stripes
    idle = [connect(port) for _ in range(4)]
    print("4 silent connections", flush=True)
if mode == "ok":
    # a MAC under a key of this very session, but not the join key
    join("wrong MAC", 1, jmac(1, stream_key), REJECT)
    join("index 0", 0, jmac(0), REJECT)
    join("index == streams", streams, jmac(streams), REJECT)
conns.append(join("stripe 1", 1, jmac(1), ACCEPT))
if mode == "ok":
    join("stripe 1 again", 1, jmac(1), REJECT)
for i in range(2, streams):
    conns.append(join("stripe %d" % i, i, jmac(i), ACCEPT))

# DATA seq k on connection k % streams, tagged DOWN under the stream key; END (seq = the
# number of DATA frames) totals them and chains XXH3-64 over their tags
frames, state, seq = [], 0, 0
for off in range(0, len(data), chunk):
    piece = data[off:off + chunk]
    f = frame(DATA, piece, seq, hop_key if mode == "wrongkey" and seq == 1 else stream_key, TAG_DOWN)
    if mode.startswith("bomb") and seq == 1:
        # a zstd frame: magic, descriptor (single segment, 8-byte content size), content size
        # 1 TiB, one last raw block of the 5 bytes that follow
        z = b"\x28\xb5\x2f\xfd" + bytes([0xe0]) + struct.pack("<Q", 1 << 40) + bytes([(5 << 3) | 1, 0, 0]) + b"bomb!"
        raw = 0xffffffff if mode == "bombhdr" else chunk
        f = frame(DATA, z, seq, stream_key, TAG_DOWN, flags=1, raw=raw)
    if mode == "corrupt" and seq == 2:
        f = f[:-1] + bytes([f[-1] ^ 0x40])   # last payload byte; the header keeps the old tag
    state = xxh3(f[4 + 24:4 + 40], state)
    frames.append(f)
    seq += 1
end = struct.pack("<QQQ", len(data) + (mode == "endlie"), seq, state)
frames.append(frame(END, end, seq, stream_key, TAG_DOWN))
if mode in ("swap", "stall"):
    frames[0], frames[1] = frames[1], frames[0]
if mode == "stall":
    conns[2 % streams].sendall(frames[2][:len(frames[2]) // 2])
    time.sleep(0.3)
    frames = frames[:2]
if mode == "abort":   # frames 0 and 1, then the ABORT in frame 2's place (connection 2 % streams)
    why = struct.pack("<I", 5) + b"fake sender: cannot read its input"
    frames = frames[:2] + [frame(ABORT, why, 0, hop_key, TAG_HOP_DOWN)]
try:
    for i, f in enumerate(frames):
        conns[i % streams].sendall(f)
except OSError as e:
    print("send stopped: %s" % e, flush=True)
if mode in ("ok", "idle"):
    typ, cseq, p = recv_frame(c0, stream_key, TAG_UP, CONFIRM)
    if typ != CONFIRM or cseq != 0 or p != end:
        die("expected CONFIRM (seq 0) echoing END, got type %d seq %d %r" % (typ, cseq, p))
    print("CONFIRM %d bytes in %d frames over %d connections, tag right" % (len(data), seq, streams), flush=True)
    for s in conns:
        s.close()
    sys.exit(0)
typ, _, p = recv_frame(c0, hop_key, TAG_HOP_UP, ABORT)
if typ != ABORT or len(p) < 4:
    die("MODE %s: expected the receiver's ABORT, got type %d" % (mode, typ))
print("ABORT (hop tag right): code %d: %s" % (struct.unpack_from("<I", p)[0], p[4:].decode()), flush=True)
