#!/bin/bash
# lockout.sh - strangers who can reach rdrecv's port cannot lock the right sender out: 100
# connections that stall in the handshake (50 send a 4-byte length prefix and then nothing, 50
# trickle one byte a second, each reconnecting when dropped) cost the right sender no more
# than 1 s, with or without --streams; and repeated wrong keys from one address slow that
# address down while a right sender from another address goes through at once.
. "$(dirname "$0")/../lib.sh"

ALL=("100 stalled handshakes do not lock the right sender out"
     "100 stalled handshakes do not keep the stripes of --streams out"
     "wrong keys from one address slow it down, not a right sender from another"
     "a flood of HELLOs from 70 addresses of one network does not keep out a right sender 100 ms away"
     "a sender dropped in the handshake without a word tries again: exit 0; with --timeout 0, exit 2")
if ! command -v python3 > /dev/null; then
    for n in "${ALL[@]}"; do t_skip "$n" "no python3"; done; exit 0
fi

# The attackers: one process, one socket per connection, no threads. A staller sends a
# HELLO's 4-byte length prefix and then nothing; a trickler sends a HELLO's first bytes, one a
# second. Both reconnect PAUSE seconds after the receiver drops them, so the pressure stays.
# When many are dropped at once (the receiver has just authenticated a sender and is about to
# gather its --streams connections), BURST of them come back at once instead, to meet the
# stripes there. Sources: the attackers' addresses, round robin (loopback has all of 127/8).
# STAT gets "opened dropped open_now" ten times a second.
cat > "$RD_T/attack.py" <<'PYEOF'
# usage: attack.py HOST PORT STALLERS TRICKLERS SOURCES(a,b,...) PAUSE BURST STAT
import errno, os, selectors, socket, sys, time

host, port = sys.argv[1], int(sys.argv[2])
nstall, ntrickle = int(sys.argv[3]), int(sys.argv[4])
srcs, pause, burst, stat = sys.argv[5].split(","), float(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
PREFIX = b"\x50\x00\x00\x00"                      # a HELLO frame's length: 80 bytes follow
TRICKLE = PREFIX + b"RDP\xb1\x01\x01" + bytes(74)  # ... which never all come

class Conn:
    def __init__(self, kind, src):
        self.kind, self.src, self.sock, self.at, self.pos, self.up = kind, src, None, 0.0, 0, False

conns = [Conn("stall" if i < nstall else "trickle", srcs[i % len(srcs)]) for i in range(nstall + ntrickle)]
sel = selectors.DefaultSelector()
opened = dropped = 0

def connect(c, now):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.bind((c.src, 0))
        e = s.connect_ex((host, port))
    except OSError:
        s.close(); c.at = now + max(pause, 0.05); return
    if e not in (0, errno.EINPROGRESS):
        s.close(); c.at = now + max(pause, 0.05); return
    c.sock, c.up, c.at = s, False, float("inf")
    sel.register(s, selectors.EVENT_WRITE, c)

def lost(c, now):
    global dropped
    sel.unregister(c.sock); c.sock.close(); c.sock = None
    if c.up:
        dropped += 1
    c.at = now + pause

def connected(c, now):
    global opened
    if c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
        return lost(c, now)
    opened += 1
    c.up = True
    sel.modify(c.sock, selectors.EVENT_READ, c)
    if c.kind == "stall":
        try:
            c.sock.send(PREFIX)
        except OSError:   # the receiver may reset a connection it has just accepted
            return lost(c, now)
    else:
        c.pos, c.at = 0, now

last = last_burst = 0.0
recent = []   # (when, conn) of the latest drops
while True:
    now = time.monotonic()
    for c in conns:
        if c.sock is None and now >= c.at:
            connect(c, now)
        elif c.up and c.kind == "trickle" and now >= c.at:
            try:
                c.sock.send(TRICKLE[c.pos:c.pos + 1])
            except OSError:
                lost(c, now); continue
            c.pos, c.at = min(c.pos + 1, len(TRICKLE) - 1), now + 1.0
    gone = []
    for key, ev in sel.select(0.005):
        c = key.data
        if c.sock is None:
            continue
        if not c.up:
            connected(c, time.monotonic()); continue
        try:
            data = c.sock.recv(4096)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if not data:
            lost(c, time.monotonic())
            gone.append(c)
    now = time.monotonic()
    recent = [(t, c) for t, c in recent if now - t < 0.05] + [(now, c) for c in gone]
    # most of the receiver's set dropped at once: a sender won, its stripes come now
    if burst and len(recent) >= 40 and now - last_burst > 0.5:
        for t, c in recent[-burst:]:
            c.at = 0.0
        last_burst, recent = now, []
    if now - last > 0.1:
        with open(stat + ".tmp", "w") as f:
            f.write("%d %d %d\n" % (opened, dropped, sum(c.up for c in conns if c.sock)))
        os.replace(stat + ".tmp", stat)
        last = now
PYEOF

SOURCES=$(echo 127.1.0.{1..10} | tr ' ' ,)   # 10 connections from each: over the per-address cap
gen "$RD_T/in" $((48 << 20))

# listen_overflows: connections the kernel dropped because a listen queue was full (this
# network namespace); a dropped SYN is sent again 1 s later, which a slow case may show
listen_overflows() {
    awk '/^TcpExt:/ { if (!h) { split($0, k); h = 1 } else { split($0, v)
         for (i in k) if (k[i] == "ListenOverflows") print v[i] } }' /proc/net/netstat 2> /dev/null
}
# right_sender PORT [RDSEND OPTIONS...]: rdrecv on PORT must be running ($RP, output $C/out);
# the right rdsend sends $RD_T/in; sets SRC (its exit status), DT (its wall time) and OVF
# (listen queue overflows meanwhile)
right_sender() {
    local port=$1; shift
    local t0 o0; t0=$(now); o0=$(listen_overflows)
    timeout -k 2 "$(lim 40)" "$RDSEND" "$@" 127.0.0.1 "$port" right-key "$RD_T/in" 2> "$C/serr"; SRC=$?
    DT=$(elapsed "$t0")
    OVF=$(( $(listen_overflows || echo 0) - ${o0:-0} ))
}
# receiver PORT: rdrecv for the right key in the background ($RP), stdout $C/out, stderr $C/rerr
receiver() {
    rm -f "$C/out"
    start RP /dev/null "$C/out" "$C/rerr" "$RDRECV" "$1" right-key
    wait_listen "$1" || t_fail "rdrecv did not listen on $1: $(cat "$C/rerr")"
}
# received WHAT: the receiver exits 0 with the sender's bytes, every line of its stderr its own
received() {
    wait_pid "$RP" "$(lim 15)"; expect_rc $? 0 "rdrecv ($1)" "$(tail -3 "$C/rerr" | tr '\n' '|')"
    expect_same_file "$RD_T/in" "$C/out" "data ($1)"
    [ -s "$C/rerr" ] && expect_lines_prefixed "$C/rerr" rdrecv
}
# attack PORT BURST: the 50 + 50 attackers against PORT ($AP), once all 100 have connected
# and at least ten of them have been dropped (stat in $C/stat)
attack() {
    rm -f "$C/stat"
    start AP /dev/null /dev/null "$C/attack.err" python3 "$RD_T/attack.py" 127.0.0.1 "$1" 50 50 "$SOURCES" 0.2 "$2" "$C/stat"
    local i
    for ((i = 0; i < 100; i++)); do
        sleep 0.1
        [ -s "$C/stat" ] && [ "$(cut -d' ' -f1 < "$C/stat")" -ge 100 ] && [ "$(cut -d' ' -f2 < "$C/stat")" -ge 10 ] && break
    done
    sleep 0.5   # the oldest stallers are well into their handshake now
    cp "$C/stat" "$C/stat.before"
}
# attacked: the attackers were really there when the sender started ($C/stat.before)
attacked() {
    local s; s=$(cat "$C/stat.before" 2> /dev/null)
    kill_reap "$AP"
    [ -s "$C/attack.err" ] && t_fail "attack.py: $(tail -3 "$C/attack.err" | tr '\n' '|')"
    set -- $s
    [ "${1:-0}" -ge 100 ] || t_fail "${1:-0} attacker connections opened, expected at least 100 ($s)"
    [ "${3:-0}" -ge 60 ] || t_fail "only ${3:-0} attacker connections open when the right sender started ($s)"
    grep -q 'dropped for a newer one' "$C/rerr" || t_fail "rdrecv never had to drop a pending handshake: the set was not full"
    t_note "$1 attacker connections before the right sender, ${3:-0} of them open"
}

# ---------------------------------------------------------------- stalls
for streams in 1 16; do
    if [ $streams = 1 ]; then t_begin "${ALL[0]}"; else t_begin "${ALL[1]}"; fi
    sopts=(); [ $streams -gt 1 ] && sopts=(--streams $streams)
    port=$(free_port); receiver "$port"
    right_sender "$port" "${sopts[@]}"; t_alone=$DT
    expect_rc $SRC 0 "right sender alone" "$(cat "$C/serr")"
    received "alone"

    # with --streams, 12 of the attackers dropped when the right sender wins come back at once
    # (fewer than the listen queue holds): the 15 stripes join one after the other among them
    burst=0; [ $streams -gt 1 ] && burst=12
    port=$(free_port); receiver "$port"
    attack "$port" $burst
    right_sender "$port" "${sopts[@]}"
    attacked
    expect_rc $SRC 0 "right sender under attack" "$(cat "$C/serr")"
    expect_empty "$C/serr" "right sender stderr"
    limit=$(awk -v a="$t_alone" -v l="$(lim 1)" 'BEGIN{printf "%.2f", a+l}')
    expect_within "$DT" "$limit" "the right sender behind 100 stalled connections (alone: ${t_alone}s)"
    received "under attack"
    t_note "right sender alone ${t_alone}s, under attack ${DT}s ($OVF listen queue overflows meanwhile)"
    t_end
done

# ---------------------------------------------------------------- wrong keys, one address
t_begin "${ALL[2]}"
port=$(free_port); receiver "$port"
right_sender "$port" --bind 127.0.0.2; t_alone=$DT
expect_rc $SRC 0 "right sender alone" "$(cat "$C/serr")"
received "alone"

port=$(free_port); receiver "$port"
# seven wrong keys in a row from 127.0.0.1: three are free, then 0.25, 0.5, 1 and 2 s waits
waits=()
for i in 1 2 3 4 5 6 7; do
    t0=$(now)
    timeout -k 2 "$(lim 30)" "$RDSEND" 127.0.0.1 "$port" wrong-key "$RD_T/in" 2> "$C/wrong.$i"; rc=$?
    waits+=("$(elapsed "$t0")")
    expect_rc $rc 3 "wrong sender $i" "$(cat "$C/wrong.$i")"
done
t_note "wrong senders took ${waits[*]} s"
for i in 0 1 2; do
    expect_within "${waits[i]}" "$(lim 1)" "wrong sender $((i + 1)) (not slowed down yet)"
done
fle 0.9 "${waits[5]}" || t_fail "wrong sender 6 took ${waits[5]}s: not slowed down (expected a 1 s wait)"
fle 1.8 "${waits[6]}" || t_fail "wrong sender 7 took ${waits[6]}s: not slowed down (expected a 2 s wait)"
# meanwhile 127.0.0.1 keeps guessing, two at a time, and the right sender comes from 127.0.0.2
guessers=()
for i in 1 2; do
    ( while [ ! -e "$C/stop" ]; do
          "$RDSEND" 127.0.0.1 "$port" wrong-key "$RD_T/in" 2> /dev/null & echo $! > "$C/guess.$i"; wait $!
      done ) 2> /dev/null &   # the loop's shell would report the kill -9 below as "Killed"
    guessers+=($!); RD_PIDS+=($!)
done
sleep 1
right_sender "$port" --bind 127.0.0.2
touch "$C/stop"
for i in 1 2; do   # each loop's current rdsend (by its pid), until the loop has ended
    g=${guessers[i - 1]}
    for ((k = 0; k < 100; k++)); do
        kill -9 "$(cat "$C/guess.$i" 2> /dev/null)" 2> /dev/null
        st=$(ps -o stat= -p "$g" 2> /dev/null | cut -c1)
        { [ -z "$st" ] || [ "$st" = Z ]; } && break
        sleep 0.05
    done
    wait "$g" 2> /dev/null
done
expect_rc $SRC 0 "right sender from 127.0.0.2" "$(cat "$C/serr")"
expect_empty "$C/serr" "right sender stderr"
limit=$(awk -v a="$t_alone" -v l="$(lim 1)" 'BEGIN{printf "%.2f", a+l}')
expect_within "$DT" "$limit" "the right sender from 127.0.0.2 while 127.0.0.1 is slowed down (alone: ${t_alone}s)"
received "beside the guesser"
grep -q 'wait: 127.0.0.1 failed' "$C/rerr" || t_fail "rdrecv does not say it slowed 127.0.0.1 down: $(tail -3 "$C/rerr" | tr '\n' '|')"
grep -q '127.0.0.2' "$C/rerr" && t_fail "rdrecv says something about 127.0.0.2: $(grep 127.0.0.2 "$C/rerr" | head -3 | tr '\n' '|')"
t_note "right sender alone ${t_alone}s, beside the guesser ${DT}s"
t_end

# ---------------------------------------------------------------- a flood from many addresses
# 70 addresses of 127.3.0.0/24, 600 connections a second, each a HELLO and then nothing: more
# addresses than the set holds, so per-address limits never bite. The right sender is 100 ms
# away (tcpproxy.py), so its handshake takes longer than 64 arrivals. Before 2026-11-29 the
# set stopped the oldest handshake among addresses with one each, the right sender's every
# time (5 of 5 tries exited 4 "closed by peer"); now a flood evicts its own network's
# connections first, and a sender dropped in the handshake tries again.
t_begin "${ALL[3]}"
port=$(free_port); receiver "$port"
start FP /dev/null /dev/null "$C/flood.err" python3 "$RD_ROOT/tests/integration/flood.py" 127.0.0.1 "$port" 127.3.0 70 600 60
pport=$(free_port)
start DP /dev/null /dev/null "$C/delay.err" python3 "$RD_ROOT/tests/integration/tcpproxy.py" 127.0.0.5 "$pport" 127.0.0.1 "$port" 50
wait_listen "$pport" || t_fail "tcpproxy.py did not listen: $(cat "$C/delay.err")"
for ((i = 0; i < 50; i++)); do grep -q 'dropped for a newer one' "$C/rerr" && break; sleep 0.1; done
timeout -k 2 "$(lim 30)" "$RDSEND" --timeout 10 127.0.0.5 "$pport" right-key "$RD_T/in" 2> "$C/serr"
expect_rc $? 0 "the right sender behind 100 ms" "$(cat "$C/serr")"
kill -TERM "$FP" 2> /dev/null; wait_pid "$FP" 5 > /dev/null
kill_reap "$DP"
received "beside a flood from 70 addresses"
grep -q 'dropped for a newer one' "$C/rerr" || t_fail "rdrecv never had to drop a pending handshake: the set was not full"
# one line a dropped connection would fill a log: at most 20 in 10 s, then one for the rest
n=$(grep -c '^rdrecv: connection from' "$C/rerr")
[ "$n" -le 40 ] || t_fail "$n lines about the flood's connections"
grep -q '^rdrecv: \.\.\. and [0-9]* more lines about connections in the last 10 s (not shown)$' "$C/rerr" ||
    t_fail "no line for the lines not shown: $(tail -2 "$C/rerr" | tr '\n' '|')"
t_note "flood: $(cat "$C/flood.err"); the right sender dropped $(grep -c 'from 127.0.0.5:.*dropped for a newer' "$C/rerr") times; $n lines about it"
t_end

# what rdrecv does to a handshake the flood's own network cannot absorb (and did to the right
# sender's before): it closes the connection. rdsend takes that as "busy" and tries again after
# 50-250 ms for as long as it would retry a refused connection (before 2026-11-29: exit 4)
t_begin "${ALL[4]}"
port=$(free_port); receiver "$port"
pport=$(free_port)
start DP /dev/null /dev/null "$C/drop.err" python3 "$RD_ROOT/tests/integration/tcpproxy.py" 127.0.0.1 "$pport" 127.0.0.1 "$port" 0 3
wait_listen "$pport" || t_fail "tcpproxy.py did not listen: $(cat "$C/drop.err")"
timeout -k 2 "$(lim 30)" "$RDSEND" -v 127.0.0.1 "$pport" right-key "$RD_T/in" 2> "$C/serr"
expect_rc $? 0 "rdsend dropped 3 times" "$(cat "$C/serr")"
[ "$(grep -c 'closed the connection during the handshake (busy with other connections, or gone); again in [0-9]* ms$' "$C/serr")" = 3 ] ||
    t_fail "rdsend -v does not say it tried again, 3 times: $(grep -v '^rdsend: [0-9.]* [GMK]' "$C/serr" | head -5 | tr '\n' '|')"
received "after 3 drops"
kill_reap "$DP"
start DP /dev/null /dev/null "$C/drop.err" python3 "$RD_ROOT/tests/integration/tcpproxy.py" 127.0.0.1 "$pport" 127.0.0.1 "$port" 0 1
wait_listen "$pport" || t_fail "tcpproxy.py did not listen: $(cat "$C/drop.err")"
timeout -k 2 "$(lim 30)" "$RDSEND" --timeout 0 127.0.0.1 "$pport" right-key "$RD_T/in" 2> "$C/serr"
expect_rc $? 2 "rdsend --timeout 0, dropped once"
expect_err "$C/serr" rdsend "receiver 127\.0\.0\.1:$pport closed the connection during the handshake \(busy with other connections, or gone\)"
kill_reap "$DP"
t_end
