#!/bin/bash
# streams.sh - --streams N: one stream striped over N TCP connections, over loopback. Sizes
# around the chunk boundary for 2, 3 and 4 stripes, a 50 MB file, what -v says and what the
# receiver grants, more stripes than frames, depth below streams, peers killed mid-stream,
# errors on either side, stripes that are not (a hand-written sender doing the real handshake
# and then forged JOINs, frames on the wrong stripe, a damaged frame), bad --streams values.
. "$(dirname "$0")/../lib.sh"

K64=$((64 << 10))
EXIT_LIMIT=$(lim 5)    # "within a few seconds"

# ---------------------------------------------------------------- sizes x stripes
for n in 2 3 4; do
    for size in 0 1 $((K64 - 1)) $K64 $((K64 + 1)) $((10 * K64 + 1)); do
        [ -f "$RD_T/in.$size" ] || gen "$RD_T/in.$size" "$size"
        t_begin "--streams $n, size $size, chunk 64K: stdin->stdout and file->file"
        for m in "stdin stdout" "file file"; do
            set -- $m
            xfer_reset; X_IN=$1; X_OUT=$2
            X_ROPTS=(--chunk-size 64K); X_SOPTS=(--chunk-size 64K --streams "$n")
            xfer "$RD_T/in.$size"
        done
        t_end
    done
done

t_begin "--streams 4, 50 MB random file, default chunk: file->file and stdin->stdout"
gen "$RD_T/big" $((50 << 20))
xfer_reset; X_IN=file; X_OUT=file; X_SOPTS=(--streams 4); xfer "$RD_T/big"
xfer_reset; X_SOPTS=(--streams 4); xfer "$RD_T/big"
rm -f "$RD_T/big"
t_end

# ---------------------------------------------------------------- what is granted, what -v says
# vxfer INPUT "RDRECV OPTS" "RDSEND OPTS": both with -v; both exit 0, the data arrives
vxfer() {
    local input=$1 ropts=($2) sopts=($3) port rp
    port=$(free_port)
    start rp /dev/null "$C/out" "$C/rerr" "$RDRECV" -v "${ropts[@]}" "$port" key
    wait_listen "$port" || t_fail "rdrecv did not listen: $(cat "$C/rerr")"
    timeout -k 2 "$(lim 30)" "$RDSEND" -v "${sopts[@]}" 127.0.0.1 "$port" key "$input" 2> "$C/serr"
    expect_rc $? 0 rdsend "$(head -c 400 "$C/serr")"
    wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(head -c 400 "$C/rerr")"
    expect_same_file "$input" "$C/out" data
}
# says PROG TRANSPORT: PROG's -v line names the transport as exactly TRANSPORT, then "(chunk"
says() {
    local f=$C/serr verb=sending
    [ "$1" = rdrecv ] && { f=$C/rerr; verb=receiving; }
    grep -Eq "^$1: $verb .* over $2 \(chunk" "$f" ||
        t_fail "$1 -v does not say 'over $2 (chunk': $(tr '\n' '|' < "$f")"
}
no_streams() {
    grep -q streams "$C/serr" "$C/rerr" && t_fail "-v mentions streams: $(cat "$C/serr" "$C/rerr" | tr '\n' '|')"
    return 0
}
gen "$RD_T/in" $((3 << 20))

t_begin "-v on both ends names 'tcp, 3 streams'; --json too"
vxfer "$RD_T/in" "--json" "--streams 3 --json"
says rdsend "tcp, 3 streams"; says rdrecv "tcp, 3 streams"
grep -q '"transport": *"tcp, 3 streams"' "$C/serr" || t_fail "rdsend --json transport: $(grep '^{' "$C/serr")"
grep -q '"transport": *"tcp, 3 streams"' "$C/rerr" || t_fail "rdrecv --json transport: $(grep '^{' "$C/rerr")"
t_end

t_begin "rdrecv --streams 1, rdsend --streams 4: one connection"
vxfer "$RD_T/in" "--streams 1" "--streams 4"
says rdsend tcp; says rdrecv tcp; no_streams
t_end

t_begin "rdrecv --streams 2, rdsend --streams 4: 2 streams"
vxfer "$RD_T/in" "--streams 2" "--streams 4"
says rdsend "tcp, 2 streams"; says rdrecv "tcp, 2 streams"
t_end

t_begin "rdsend without --streams, rdrecv --streams 8: one connection"
vxfer "$RD_T/in" "--streams 8" ""
says rdsend tcp; says rdrecv tcp; no_streams
t_end

t_begin "rdsend --streams 16 (the most), rdrecv default"
vxfer "$RD_T/in" "" "--streams 16 --chunk-size 64K"
says rdsend "tcp, 16 streams"; says rdrecv "tcp, 16 streams"
t_end

t_begin "more streams than frames: --streams 4, 2 chunks of data"
vxfer "$RD_T/in.$((K64 + 1))" "--chunk-size 64K" "--streams 4 --chunk-size 64K"
says rdsend "tcp, 4 streams"; says rdrecv "tcp, 4 streams"
t_end

t_begin "depth smaller than streams: --depth 1 --streams 3 (and the receiver capping depth at 1)"
vxfer "$RD_T/in.$((10 * K64 + 1))" "" "--depth 1 --streams 3 --chunk-size 64K"
grep -q 'over tcp, 3 streams (chunk 65536, depth 1)' "$C/serr" || t_fail "rdsend -v: $(tr '\n' '|' < "$C/serr")"
vxfer "$RD_T/in" "--depth 1" "--streams 3 --chunk-size 64K"
grep -q 'over tcp, 3 streams (chunk 65536, depth 1)' "$C/rerr" || t_fail "rdrecv -v: $(tr '\n' '|' < "$C/rerr")"
t_end

# ---------------------------------------------------------------- peers killed mid-stream
# errlines FILE -> the lines that are not -v chatter
errlines() { grep -v -e 'listening on port' -e 'receiving from' -e 'sending .* to ' -e 'using TCP' "$1"; }
# stream3 PORT [FIFO]: rdrecv -v and rdsend -v --streams 3 of an endless /dev/zero (or of its
# stdin from FIFO); returns once the stripes are up. Sets RP, SP.
stream3() {
    start RP /dev/null /dev/null "$C/rerr" "$RDRECV" -v --chunk-size 256K "$1" key
    wait_listen "$1" || t_fail "rdrecv not listening: $(cat "$C/rerr")"
    if [ -n "${2:-}" ]; then
        start SP "$2" /dev/null "$C/serr" "$RDSEND" -v --streams 3 --chunk-size 256K 127.0.0.1 "$1" key
    else
        start SP /dev/null /dev/null "$C/serr" "$RDSEND" -v --streams 3 --chunk-size 256K 127.0.0.1 "$1" key /dev/zero
    fi
    wait_for_text "$C/rerr" 'receiving from .* 3 streams' 10 || t_fail "transfer did not start: $(cat "$C/rerr" "$C/serr")"
}
# one_error FILE PROG PATTERN: apart from -v chatter, FILE is one "PROG: " line matching PATTERN
one_error() {
    errlines "$1" > "$1.e"
    expect_err "$1.e" "$2" "$3"
}

t_begin "rdsend --streams 3 SIGKILLed at 3 random points: rdrecv exits 4 within ${EXIT_LIMIT}s and says why"
worst=0
for i in 1 2 3; do
    port=$(free_port); stream3 "$port"
    sleep "$(awk -v r="$RANDOM" 'BEGIN{printf "%.3f", 0.05 + (r % 400) / 1000}')"
    t0=$(now); kill -9 "$SP" 2>/dev/null || t_fail "kill #$i: rdsend had already exited: $(cat "$C/serr")"
    wait "$SP" 2>/dev/null
    wait_pid "$RP" "$EXIT_LIMIT"; rc=$?; dt=$(elapsed "$t0")
    fle "$dt" "$worst" || worst=$dt
    expect_rc $rc 4 "rdrecv after kill #$i" "$(tr '\n' '|' < "$C/rerr")"
    one_error "$C/rerr" rdrecv "closed|lost|reset|incomplete|abort"
done
t_note "slowest exit ${worst}s"
t_end

t_begin "rdsend --streams 3 SIGKILLed while its input trickles: rdrecv exits 4 within ${EXIT_LIMIT}s"
port=$(free_port); mkfifo "$C/trickle"
( for i in $(seq 1 100); do head -c 3000 /dev/urandom; sleep 0.05; done ) > "$C/trickle" & feeder=$!; RD_PIDS+=("$feeder")
stream3 "$port" "$C/trickle"
sleep 0.5
t0=$(now); kill -9 "$SP"; wait "$SP" 2>/dev/null
wait_pid "$RP" "$EXIT_LIMIT"; rc=$?; dt=$(elapsed "$t0")
expect_rc $rc 4 rdrecv "$(tr '\n' '|' < "$C/rerr")"
one_error "$C/rerr" rdrecv "closed|lost|reset|incomplete|abort"
t_note "rdrecv exit after ${dt}s"
kill_reap "$feeder"
t_end

t_begin "rdrecv SIGKILLed at 3 random points of a --streams 3 transfer: rdsend exits 4 within ${EXIT_LIMIT}s"
worst=0
for i in 1 2 3; do
    port=$(free_port); stream3 "$port"
    sleep "$(awk -v r="$RANDOM" 'BEGIN{printf "%.3f", 0.05 + (r % 400) / 1000}')"
    t0=$(now); kill -9 "$RP" 2>/dev/null || t_fail "kill #$i: rdrecv had already exited: $(cat "$C/rerr")"
    wait "$RP" 2>/dev/null
    wait_pid "$SP" "$EXIT_LIMIT"; rc=$?; dt=$(elapsed "$t0")
    fle "$dt" "$worst" || worst=$dt
    expect_rc $rc 4 "rdsend after kill #$i" "$(tr '\n' '|' < "$C/serr")"
    one_error "$C/serr" rdsend "closed|lost|reset|receiver"
done
t_note "slowest exit ${worst}s"
t_end

t_begin "rdrecv SIGKILLed while rdsend --streams 3 waits for its input: rdsend exits 4 within ${EXIT_LIMIT}s"
port=$(free_port); mkfifo "$C/stall"
( head -c 100000 /dev/urandom; exec sleep "$(lim 30)" ) > "$C/stall" & feeder=$!; RD_PIDS+=("$feeder")
stream3 "$port" "$C/stall"
sleep 0.3
t0=$(now); kill -9 "$RP"; wait "$RP" 2>/dev/null
wait_pid "$SP" "$EXIT_LIMIT"; rc=$?; dt=$(elapsed "$t0")
expect_rc $rc 4 rdsend "$(tr '\n' '|' < "$C/serr")"
one_error "$C/serr" rdsend "closed|lost|reset|receiver"
t_note "rdsend exit after ${dt}s"
kill_reap "$feeder"
t_end

# ---------------------------------------------------------------- errors on either side
t_begin "wrong key with --streams 3: rdsend 3, rdrecv goes on and serves the right --streams 3 sender"
port=$(free_port)
start RP /dev/null "$C/out" "$C/rerr" "$RDRECV" "$port" right-key
wait_listen "$port" || t_fail "rdrecv not listening"
timeout -k 2 "$(lim 20)" "$RDSEND" --streams 3 127.0.0.1 "$port" wrong-key "$RD_T/in" 2> "$C/serr"
expect_rc $? 3 "wrong-key rdsend"; expect_err "$C/serr" rdsend "authentication failed"
timeout -k 2 "$(lim 20)" "$RDSEND" --streams 3 127.0.0.1 "$port" right-key "$RD_T/in" 2> "$C/serr2"
expect_rc $? 0 "right rdsend" "$(cat "$C/serr2")"; expect_empty "$C/serr2" "right rdsend stderr"
wait_pid "$RP" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_err "$C/rerr" rdrecv "authentication failed"
expect_same_file "$RD_T/in" "$C/out" data
t_end

t_begin "output write fails mid-stream (/proc/version) with --streams 3: rdrecv 5, rdsend 4 with the receiver's reason"
port=$(free_port)
start RP /dev/null /dev/null "$C/rerr" "$RDRECV" "$port" key /proc/version
wait_listen "$port" || t_fail "rdrecv not listening"
timeout -k 2 "$(lim 20)" "$RDSEND" --streams 3 127.0.0.1 "$port" key "$RD_T/in" 2> "$C/serr"; src=$?
wait_pid "$RP" "$(lim 10)"; expect_rc $? 5 rdrecv
expect_err "$C/rerr" rdrecv "cannot write /proc/version"
expect_rc $src 4 rdsend; expect_err "$C/serr" rdsend "receiver.*/proc/version"
t_end

t_begin "rdrecv | head -c 1000 with --streams 3: rdrecv 5, rdsend non-zero naming the receiver"
port=$(free_port); mkfifo "$C/pipe"
start RP /dev/null "$C/pipe" "$C/rerr" "$RDRECV" "$port" key
head -c 1000 < "$C/pipe" > "$C/head" & hp=$!
wait_listen "$port" || t_fail "rdrecv not listening"
timeout -k 2 "$(lim 20)" "$RDSEND" --streams 3 127.0.0.1 "$port" key "$RD_T/in" 2> "$C/serr"; src=$?
wait_pid "$RP" "$EXIT_LIMIT"; expect_rc $? 5 rdrecv; wait_pid "$hp" 5
expect_err "$C/rerr" rdrecv "cannot write stdout"
expect_nonzero $src rdsend; expect_err "$C/serr" rdsend "receiver"
cmp -s "$C/head" <(head -c 1000 "$RD_T/in") || t_fail "head did not get the first 1000 bytes"
t_end

t_begin "input read error (/proc/self/mem) with --streams 3, 3 runs: rdsend 5, rdrecv 4 naming the sender's reason"
for i in 1 2 3; do
    port=$(free_port)
    start RP /dev/null "$C/out" "$C/rerr" "$RDRECV" "$port" key
    wait_listen "$port" || t_fail "rdrecv not listening"
    timeout -k 2 "$(lim 20)" "$RDSEND" --streams 3 127.0.0.1 "$port" key /proc/self/mem 2> "$C/serr"
    expect_rc $? 5 "rdsend, run $i"; expect_err "$C/serr" rdsend "cannot read /proc/self/mem"
    wait_pid "$RP" "$(lim 10)"; expect_rc $? 4 "rdrecv, run $i"
    # without --streams: "rdrecv: sender: sender aborted: cannot read /proc/self/mem: ..."
    expect_err "$C/rerr" rdrecv "sender aborted: cannot read /proc/self/mem"
done
t_end

# ---------------------------------------------------------------- stripes that are not
# A sender written from the documented protocol in python3 (HKDF/HMAC from hashlib, XXH3-64
# from libxxhash via ctypes, or the xxhash module): the real handshake as rdsend, then forged
# JOINs on extra connections while it is connected, then the real stripes and the data.
cat > "$RD_T/fake_sender.py" <<'PYEOF'
# usage: fake_sender.py PORT KEY STREAMS DATAFILE [MODE]
# Connects as the primary, does HELLO/CHALLENGE/AUTH, then (MODE ok, the default) tries forged
# stripes, each of which must be turned away, joins the real ones, sends DATAFILE striped and
# waits for CONFIRM. MODE swap sends frames 0 and 1 on each other's connection, MODE corrupt
# damages the payload of frame 2 (keeping its checksum); both then expect the receiver's ABORT.
# MODE vanish closes the connection right after ACCEPT, before any stripe joins; MODE idle
# opens 4 connections that say nothing before it joins its stripes, and expects CONFIRM.
# Prints one line per step; exits 1 ("FAIL ...") at the first thing that is not as documented.
import ctypes, hashlib, hmac, os, socket, struct, sys

try:
    import xxhash
    def xxh3(b, seed=0):
        return xxhash.xxh3_64_intdigest(b, seed)
except ImportError:
    _lib = ctypes.CDLL("libxxhash.so.0")
    _lib.XXH3_64bits_withSeed.restype = ctypes.c_uint64
    _lib.XXH3_64bits_withSeed.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    def xxh3(b, seed=0):
        return _lib.XXH3_64bits_withSeed(b, len(b), seed)

HELLO, CHALLENGE, AUTH, ACCEPT, REJECT, DATA, END, CONFIRM, ABORT, JOIN = range(1, 11)

def die(msg):
    print("FAIL " + msg, flush=True)
    sys.exit(1)

def frame(typ, payload, seq=0):
    # magic, version 1, type, flags 0, length, reserved 0, seq, XXH3-64 of the payload;
    # on TCP after a u32 length prefix
    hdr = b"RDP\xb1" + struct.pack("<BBHIIQQ", 1, typ, 0, len(payload), 0, seq, xxh3(payload))
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

def recv_frame(s):
    n, = struct.unpack("<I", recv_exact(s, 4))
    f = recv_exact(s, n)
    if f[:4] != b"RDP\xb1" or f[4] != 1:
        die("not a v1 frame: %r" % f[:8])
    typ, flags, length, reserved, seq, csum = struct.unpack_from("<BHIIQQ", f, 5)
    payload = f[32:]
    if len(payload) != length or xxh3(payload) != csum:
        die("bad length or checksum in a type %d frame" % typ)
    return typ, payload

def hkdf(ikm, salt, info, n=32):
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out, i = out + t, i + 1
    return out[:n]

def mac(key, *parts):
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()

def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=15)

port, key, streams, path = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3]), sys.argv[4]
mode = sys.argv[5] if len(sys.argv) > 5 else "ok"
data = open(path, "rb").read()
k = hkdf(key, b"rdpipe", b"rdpipe v1 handshake mac")

c0 = connect(port)
hello = struct.pack("<HHIIII", 1, 1, 0, 65536, 4, streams) + os.urandom(32)
c0.sendall(frame(HELLO, hello))
typ, chal = recv_frame(c0)
if typ != CHALLENGE or len(chal) != 80:
    die("expected an 80-byte CHALLENGE, got type %d, %d bytes" % (typ, len(chal)))
caps, chunk, depth, granted = struct.unpack_from("<IIII", chal)
transcript = hello + chal[:48] + bytes(32)
if chal[48:] != mac(k, b"rdpipe v1 receiver proves key", transcript):
    die("the receiver's MAC is not HMAC(key, label || hello || challenge)")
print("CHALLENGE chunk %d depth %d streams %d, receiver MAC right" % (chunk, depth, granted), flush=True)
if granted != streams:
    die("asked for %d streams, granted %d" % (streams, granted))
c0.sendall(frame(AUTH, mac(k, b"rdpipe v1 sender proves key", transcript)))
typ, _ = recv_frame(c0)
if typ != ACCEPT:
    die("expected ACCEPT after AUTH, got type %d" % typ)
print("ACCEPT", flush=True)
jk = mac(k, b"rdpipe v1 join key", transcript)

def jmac(i):
    return mac(jk, b"rdpipe v1 stripe", struct.pack("<I", i))

def join(what, index, m, want):
    s = connect(port)
    s.sendall(frame(JOIN, struct.pack("<I", index) + m))
    typ, p = recv_frame(s)
    if typ != want:
        die("%s: answered type %d, expected %d" % (what, typ, want))
    if typ == REJECT:
        code, = struct.unpack_from("<I", p)
        print("REJECT %s: code %d: %s" % (what, code, p[4:].decode()), flush=True)
        s.close()
        return None
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
    join("wrong MAC", 1, mac(b"not the join key", b"rdpipe v1 stripe", struct.pack("<I", 1)), REJECT)
    join("index 0", 0, jmac(0), REJECT)
    join("index == streams", streams, jmac(streams), REJECT)
conns.append(join("stripe 1", 1, jmac(1), ACCEPT))
if mode == "ok":
    join("stripe 1 again", 1, jmac(1), REJECT)
for i in range(2, streams):
    conns.append(join("stripe %d" % i, i, jmac(i), ACCEPT))

# frame k (DATA seq k, then END) on connection k % streams
frames, state, seq = [], 0, 0
for off in range(0, len(data), chunk):
    piece = data[off:off + chunk]
    c = xxh3(piece)
    f = frame(DATA, piece, seq)
    if mode == "corrupt" and seq == 2:
        f = f[:-1] + bytes([f[-1] ^ 0x40])   # last payload byte; the header keeps the old checksum
    frames.append(f)
    state = xxh3(struct.pack("<QIQ", seq, len(piece), c), state)
    seq += 1
end = struct.pack("<QQQ", len(data), seq, state)
frames.append(frame(END, end))
if mode == "swap":
    frames[0], frames[1] = frames[1], frames[0]
try:
    for i, f in enumerate(frames):
        conns[i % streams].sendall(f)
except OSError as e:
    print("send stopped: %s" % e, flush=True)
typ, p = recv_frame(c0)
if mode not in ("ok", "idle"):
    if typ != ABORT:
        die("MODE %s: expected the receiver's ABORT, got type %d" % (mode, typ))
    print("ABORT: %s" % p[4:].decode(), flush=True)
    sys.exit(0)
if typ != CONFIRM or p != end:
    die("expected CONFIRM echoing END, got type %d %r" % (typ, p))
print("CONFIRM %d bytes in %d frames over %d connections" % (len(data), seq, streams), flush=True)
for s in conns:
    s.close()
PYEOF
have_xxh3=""
if ! command -v python3 > /dev/null; then have_xxh3="no python3"
elif ! python3 -c 'import xxhash' 2> /dev/null &&
     ! python3 -c 'import ctypes; ctypes.CDLL("libxxhash.so.0").XXH3_64bits_withSeed' 2> /dev/null; then
    have_xxh3="python3 has neither the xxhash module nor libxxhash.so.0 through ctypes: no XXH3-64 for frame checksums"
fi
# fake PORT MODE [STREAMS]: rdrecv on PORT, the python sender against it; sets FRC, RRC
fake() {
    start RP /dev/null "$C/out" "$C/rerr" "$RDRECV" "$1" key
    wait_listen "$1" || t_fail "rdrecv not listening"
    timeout -k 2 "$(lim 30)" python3 "$RD_T/fake_sender.py" "$1" key "${3:-3}" "$RD_T/in.small" "$2" > "$C/fake" 2>&1; FRC=$?
    wait_pid "$RP" "$(lim 15)"; RRC=$?
}
head -c 200000 /dev/urandom > "$RD_T/in.small"   # 4 chunks of 64K: 3 full, 1 partial

if [ -n "$have_xxh3" ]; then
    t_skip "forged stripes while a real sender is connected" "$have_xxh3"
    t_skip "frames on the wrong stripe / a damaged frame on a stripe" "$have_xxh3"
    t_skip "sender gone after ACCEPT, before its stripes" "$have_xxh3"
    t_skip "4 silent connections in the join window" "$have_xxh3"
else
    t_begin "forged stripes while a (python) sender is connected: each turned away with 'not a stripe of this session', the transfer completes"
    port=$(free_port); fake "$port" ok 3
    expect_rc $FRC 0 "python sender" "$(tr '\n' '|' < "$C/fake")"
    expect_rc $RRC 0 rdrecv "$(tr '\n' '|' < "$C/rerr")"
    expect_same_file "$RD_T/in.small" "$C/out" data
    n=$(grep -c '^REJECT .*: code 3: not a stripe of this session$' "$C/fake")
    [ "$n" = 4 ] || t_fail "expected 4 REJECTs (wrong MAC, index 0, index == streams, stripe 1 again): $(tr '\n' '|' < "$C/fake")"
    grep -q '^CONFIRM 200000 bytes in 4 frames over 3 connections$' "$C/fake" || t_fail "no CONFIRM: $(tr '\n' '|' < "$C/fake")"
    [ "$(wc -l < "$C/rerr")" = 4 ] || t_fail "rdrecv: expected one line per forged stripe (4): $(tr '\n' '|' < "$C/rerr")"
    n=$(grep -Ec '^rdrecv: connection from 127\.0\.0\.1:[0-9]+ is not a stripe of this session$' "$C/rerr")
    [ "$n" = 4 ] || t_fail "rdrecv lines: $(tr '\n' '|' < "$C/rerr")"
    t_end

    t_begin "frames 0 and 1 on each other's stripe / frame 2 damaged on its stripe: rdrecv 4, ABORT with the reason"
    port=$(free_port); fake "$port" swap 3
    expect_rc $FRC 0 "python sender (swap)" "$(tr '\n' '|' < "$C/fake")"
    expect_rc $RRC 4 "rdrecv (swap)"
    expect_err "$C/rerr" rdrecv "out of order"
    grep -q '^ABORT: .*out of order' "$C/fake" || t_fail "the sender was not told: $(tr '\n' '|' < "$C/fake")"
    port=$(free_port); fake "$port" corrupt 3
    expect_rc $FRC 0 "python sender (corrupt)" "$(tr '\n' '|' < "$C/fake")"
    expect_rc $RRC 4 "rdrecv (corrupt)"
    expect_err "$C/rerr" rdrecv "checksum mismatch in chunk 2"
    grep -q '^ABORT: .*checksum mismatch in chunk 2' "$C/fake" || t_fail "the sender was not told: $(tr '\n' '|' < "$C/fake")"
    t_end

    # The receiver watches connection 0 while it waits for the stripes: a sender that dies in
    # that window is noticed at once, not when the 10 s join window ends.
    t_begin "sender gone after ACCEPT, before its stripes: rdrecv exits 4 at once, saying so"
    port=$(free_port); t0=$(now); fake "$port" vanish 3; dt=$(elapsed "$t0")
    expect_rc $FRC 0 "python sender (vanish)" "$(tr '\n' '|' < "$C/fake")"
    expect_rc $RRC 4 rdrecv
    expect_err "$C/rerr" rdrecv "sender .* went away before all its connections joined"
    expect_within "$dt" "$(lim 3)" "rdrecv exit"
    expect_empty "$C/out" "rdrecv stdout"
    t_note "rdrecv exit after ${dt}s"
    t_end

    t_begin "4 silent connections opened in the join window do not keep the real stripes out"
    port=$(free_port); t0=$(now); fake "$port" idle 3; dt=$(elapsed "$t0")
    expect_rc $FRC 0 "python sender (idle)" "$(tr '\n' '|' < "$C/fake")"
    expect_rc $RRC 0 rdrecv "$(tr '\n' '|' < "$C/rerr")"
    expect_same_file "$RD_T/in.small" "$C/out" data
    [ "$(wc -l < "$C/rerr")" -le 4 ] || t_fail "more than one line per silent connection: $(tr '\n' '|' < "$C/rerr")"
    t_note "${dt}s"
    t_end
fi

# ---------------------------------------------------------------- usage
t_begin "--streams 0, 17, abc: exit 1 '--streams must be from 1 to 16, not ...', nothing connects"
port=$(free_port)   # nothing listens: a 1 (not a 2) proves the check comes first
for v in 0 17 abc; do
    timeout -k 2 "$(lim 10)" "$RDSEND" --streams "$v" 127.0.0.1 "$port" key "$RD_T/in" 2> "$C/serr"
    expect_rc $? 1 "rdsend --streams $v"
    expect_err "$C/serr" rdsend "^rdsend: --streams must be from 1 to 16, not '$v'$"
    timeout -k 2 "$(lim 10)" "$RDRECV" --streams "$v" "$port" key > "$C/out" 2> "$C/rerr"
    expect_rc $? 1 "rdrecv --streams $v"
    expect_err "$C/rerr" rdrecv "^rdrecv: --streams must be from 1 to 16, not '$v'$"
    expect_empty "$C/out" "rdrecv stdout"
done
t_end
