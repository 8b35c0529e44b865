#!/bin/bash
# streams.sh - --streams N: one stream striped over N TCP connections, over loopback. Sizes
# around the chunk boundary for 2, 3 and 4 stripes, a 50 MB file, what -v says and what the
# receiver grants, more stripes than frames, depth below streams, peers killed mid-stream,
# errors on either side, stripes that are not (a hand-written sender doing the real handshake
# and then forged JOINs, frames on the wrong stripe, a damaged frame, a frame under the wrong
# key), bad --streams values.
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

t_begin "a reduced grant shows in --json: what ran (streams 2, depth 4) and what rdsend asked (4, 16)"
vxfer "$RD_T/in" "--streams 2 --depth 4 --json" "--streams 4 --depth 16 --chunk-size 64K --json"
grep -q '"chunk_size":65536,"depth":4,.*"streams":2,"asked":{"chunk_size":65536,"depth":16,"streams":4},' "$C/serr" ||
    t_fail "rdsend --json: $(grep '^{' "$C/serr")"
grep -q '"depth":4,.*"streams":2,"asked":null,' "$C/rerr" || t_fail "rdrecv --json: $(grep '^{' "$C/rerr")"
t_end

t_begin "a sender asking 64M x 64 gets 256 MiB in flight at most from a default rdrecv (depth 4), not 4 GiB; rdrecv --depth 64 grants it"
vxfer "$RD_T/in" "--json" "--chunk-size 64M --depth 64 --json"
grep -q '"chunk_size":67108864,"depth":4,' "$C/rerr" || t_fail "default rdrecv granted: $(grep -o '"chunk_size":[0-9]*,"depth":[0-9]*' "$C/rerr")"
vxfer "$RD_T/in" "--depth 64 --json" "--chunk-size 64M --depth 64 --json"
grep -q '"chunk_size":67108864,"depth":64,' "$C/rerr" || t_fail "rdrecv --depth 64 granted: $(grep -o '"chunk_size":[0-9]*,"depth":[0-9]*' "$C/rerr")"
t_end

# a middlebox that lets the first connection through and holds the others silent: the receiver
# gives up on the stripes after 10 s and says so on connection 0; rdsend waited 30 s for a
# stripe's ACCEPT, ignoring --timeout, and then named its own wait (before 2026-11-29)
t_begin "stripes held silent on the way: rdsend exits 4 with the receiver's reason by ~11 s, or 2 at its --timeout"
for to in "" 2; do
    # (free_port runs in a subshell: a second call names the same port until it listens)
    pport=$(free_port); port=$((pport + 1000))
    [ -z "$(ss -Hltn "sport = :$port")" ] || port=$((pport + 2000))
    start PX /dev/null /dev/null "$C/px.err" python3 "$RD_ROOT/tests/integration/tcpproxy.py" 127.0.0.1 "$pport" 127.0.0.1 "$port" 0 0 1
    wait_listen "$pport" || t_fail "tcpproxy.py did not listen: $(cat "$C/px.err")"
    start rp /dev/null /dev/null "$C/rerr" "$RDRECV" --timeout 30 "$port" key
    wait_listen "$port" || t_fail "rdrecv did not listen"
    t0=$(now)
    timeout -k 2 "$(lim 40)" "$RDSEND" ${to:+--timeout $to} --streams 3 127.0.0.1 "$pport" key "$RD_T/in" 2> "$C/serr"; rc=$?
    dt=$(elapsed "$t0")
    wait_pid "$rp" 30; rrc=$?
    expect_rc $rrc 4 "rdrecv with stripes held${to:+ (rdsend --timeout $to)}"
    if [ -z "$to" ]; then
        expect_rc $rc 4 "rdsend with stripes held"
        expect_err "$C/serr" rdsend "^rdsend: receiver 127\.0\.0\.1:$pport: only 1 of the sender's 3 connections arrived$"
        expect_within "$dt" "$(lim 15)" "rdsend with stripes held"
    else
        expect_rc $rc 2 "rdsend --timeout 2 with stripes held"
        expect_within "$dt" "$(lim 5)" "rdsend --timeout 2 with stripes held"
    fi
    kill_reap "$PX"
done
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

# ---------------------------------------------------------------- relays pass stripes on
# relays SINK_OPTS [INPUT_FIFO]: rdrecv (SINK_OPTS) <- relay 2 <- relay 1 <- rdsend --streams 3,
# all with -v, each relay an `rdrecv --relay-fd` as rdpipe runs for a `cat` segment; the two
# ends hold rdpipe's end-to-end stream key. Starts everything; sets SP, R1, R2, KP.
SK=$(printf '%064x' 9)
relays() {
    local kport r2port r1port file=("$RD_T/in")
    [ -n "${2:-}" ] && file=()   # rdsend reads its stdin, the FIFO
    kport=$(free_port)
    RDPIPE_STREAM_KEY=$SK start KP /dev/null "$C/out" "$C/kerr" "$RDRECV" -v $1 --chunk-size 64K "$kport" hop-key-2-0123456789
    wait_listen "$kport" || t_fail "sink did not listen: $(cat "$C/kerr")"
    r2port=$(free_port); echo "127.0.0.1 $kport hop-key-2-0123456789" > "$C/next2"
    start R2 "$C/next2" /dev/null "$C/r2err" "$RDRECV" -v --relay-fd 0 "$r2port" hop-key-1-0123456789
    wait_listen "$r2port" || t_fail "relay 2 did not listen: $(cat "$C/r2err")"
    r1port=$(free_port); echo "127.0.0.1 $r2port hop-key-1-0123456789" > "$C/next1"
    start R1 "$C/next1" /dev/null "$C/r1err" "$RDRECV" -v --relay-fd 0 "$r1port" hop-key-0-0123456789
    wait_listen "$r1port" || t_fail "relay 1 did not listen: $(cat "$C/r1err")"
    RDPIPE_STREAM_KEY=$SK start SP "${2:-/dev/null}" /dev/null "$C/serr" "$RDSEND" -v --streams 3 --chunk-size 64K \
        127.0.0.1 "$r1port" hop-key-0-0123456789 "${file[@]}"
}
# relay_says FILE "IN" "OUT": the relay's -v line names its two sides' transports exactly
relay_says() {
    grep -Eq "^rdrecv: relaying from 127\.0\.0\.1:[0-9]+ over $2 to 127\.0\.0\.1:[0-9]+ over $3 \(chunk 65536\)$" "$1" ||
        t_fail "relay -v does not say 'over $2 to ... over $3': $(tr '\n' '|' < "$1")"
}

t_begin "relays pass stripes on: rdsend --streams 3 -> relay -> relay -> rdrecv --streams 1, byte-identical"
relays "--streams 1"
wait_pid "$SP" "$(lim 30)"; expect_rc $? 0 rdsend "$(tr '\n' '|' < "$C/serr")"
wait_pid "$R1" "$(lim 10)"; expect_rc $? 0 "relay 1" "$(tr '\n' '|' < "$C/r1err")"
wait_pid "$R2" "$(lim 10)"; expect_rc $? 0 "relay 2" "$(tr '\n' '|' < "$C/r2err")"
wait_pid "$KP" "$(lim 10)"; expect_rc $? 0 "rdrecv behind two relays" "$(tr '\n' '|' < "$C/kerr")"
expect_same_file "$RD_T/in" "$C/out" "through two relays"
says rdsend "tcp, 3 streams"
relay_says "$C/r1err" "tcp, 3 streams" "tcp, 3 streams"
relay_says "$C/r2err" "tcp, 3 streams" "tcp"   # the sink grants one: the last hop is one connection
grep -Eq "^rdrecv: receiving from .* over tcp \(chunk" "$C/kerr" || t_fail "sink -v: $(tr '\n' '|' < "$C/kerr")"
t_end

t_begin "a relay of 3 stripes SIGKILLed mid-stream: rdsend and the sink behind the other relay exit 4, nothing confirmed"
mkfifo "$C/rtrickle"
( for i in $(seq 1 200); do head -c 30000 /dev/urandom; sleep 0.05; done ) > "$C/rtrickle" & feeder=$!; RD_PIDS+=("$feeder")
relays "" "$C/rtrickle"
wait_for_text "$C/r2err" 'relaying from .* 3 streams' 10 || t_fail "relays did not start: $(cat "$C/r1err" "$C/r2err")"
sleep 0.3
kill -9 "$R1" 2>/dev/null || t_fail "relay 1 had already exited: $(cat "$C/r1err")"
wait "$R1" 2>/dev/null
wait_pid "$SP" "$EXIT_LIMIT"; expect_rc $? 4 "rdsend after its relay was killed" "$(tr '\n' '|' < "$C/serr")"
wait_pid "$R2" "$EXIT_LIMIT"; expect_rc $? 4 "relay 2 after relay 1 was killed" "$(tr '\n' '|' < "$C/r2err")"
wait_pid "$KP" "$EXIT_LIMIT"; expect_rc $? 4 "the sink after relay 1 was killed" "$(tr '\n' '|' < "$C/kerr")"
kill_reap "$feeder"
t_end

# ---------------------------------------------------------------- thread names
# threads PID: the names of PID's threads (/proc/PID/task/*/comm), sorted, on one line
threads() { cat /proc/"$1"/task/*/comm 2>/dev/null | LC_ALL=C sort | tr '\n' ' '; }
t_begin "threads are named for what they do (top -H, perf): lanes, stripes, reader, writer"
mkfifo "$C/fifo"
port=$(free_port)
start rp /dev/null "$C/out" "$C/rerr" "$RDRECV" --lanes 2 "$port" key
wait_listen "$port" || t_fail "rdrecv did not listen: $(cat "$C/rerr")"
start sp "$C/fifo" /dev/null "$C/serr" "$RDSEND" --lanes 2 --streams 2 127.0.0.1 "$port" key
exec 3> "$C/fifo"
head -c $((2 << 20)) /dev/zero >&3
for _ in $(seq 100); do [ "$(stat -c %s "$C/out")" -ge $((2 << 20)) ] && break; sleep 0.05; done
st=$(threads "$sp") rt=$(threads "$rp")
exec 3>&-
wait_pid "$sp" 10; expect_rc $? 0 rdsend "$(head -c 300 "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(head -c 300 "$C/rerr")"
[ "$st" = "rd-lane0 rd-lane1 rd-monitor rd-reader rd-signals rd-tcp-watch rd-tx0 rd-tx1 rdsend " ] ||
    t_fail "rdsend's threads: '$st'"
[ "$rt" = "rd-lane0 rd-lane1 rd-rx0 rd-rx1 rd-signals rd-tcp-watch rd-writer rdrecv " ] || t_fail "rdrecv's threads: '$rt'"
rm -f "$C/fifo"
t_end

# A relay between two sides of 3 stripes splices each connection to its pair on its own thread
# (rd-fw0..2) and starts no receive workers (rd-rx*), which would copy every byte through
# user space; the send workers (rd-tx*) only carry the relay's own ABORT
t_begin "a relay between 3 stripes and 3 stripes: a splicing thread per pair (rd-fw0..2), no copying receive workers"
mkfifo "$C/fifo"
relays "--streams 3" "$C/fifo"
exec 3> "$C/fifo"
head -c $((2 << 20)) /dev/zero >&3
for _ in $(seq 100); do [ "$(stat -c %s "$C/out")" -ge $((2 << 20)) ] && break; sleep 0.05; done
r1t=$(threads "$R1") r2t=$(threads "$R2")
exec 3>&-
wait_pid "$SP" "$(lim 10)"; expect_rc $? 0 rdsend "$(tr '\n' '|' < "$C/serr")"
wait_pid "$R1" "$(lim 10)"; expect_rc $? 0 "relay 1" "$(tr '\n' '|' < "$C/r1err")"
wait_pid "$R2" "$(lim 10)"; expect_rc $? 0 "relay 2" "$(tr '\n' '|' < "$C/r2err")"
wait_pid "$KP" "$(lim 10)"; expect_rc $? 0 sink "$(tr '\n' '|' < "$C/kerr")"
cmp -s "$C/out" <(head -c $((2 << 20)) /dev/zero) || t_fail "the sink's output is not the 2 MiB written"
for t in "$r1t" "$r2t"; do
    [ "$t" = "rd-fw0 rd-fw1 rd-fw2 rd-relay-mon rd-signals rd-tcp-watch rd-tx0 rd-tx1 rd-tx2 rdrecv " ] || t_fail "a relay's threads: '$t'"
done
relay_says "$C/r1err" "tcp, 3 streams" "tcp, 3 streams"
rm -f "$C/fifo"
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
    # without --streams: "rdrecv: sender: cannot read /proc/self/mem: ..."
    expect_err "$C/rerr" rdrecv "sender: cannot read /proc/self/mem"
done
t_end

# ---------------------------------------------------------------- stripes that are not
# A sender written from the documented protocol v2 in python (tests/integration/fake_sender.py:
# CPace over ristretto255 and ChaCha20-Poly1305 tags from libsodium through ctypes, SHA-512,
# HMAC and HKDF from hashlib, XXH3-64 from the xxhash module or libxxhash): the real
# handshake as rdsend, checking the receiver's key confirmation, then forged JOINs on extra
# connections while it is connected, then the real stripes and the data; it checks the tag of
# the receiver's CONFIRM, or (for a damaged stream) of its ABORT under the hop key.
PY=/usr/bin/python3
FAKE=$RD_ROOT/tests/integration/fake_sender.py
no_fake=""
if [ ! -x "$PY" ]; then no_fake="no $PY"
elif ! no_fake=$("$PY" "$FAKE" --check 2>&1); then
    no_fake="python sender cannot run: ${no_fake:-$PY $FAKE --check failed}"
else no_fake=""; fi
# fake PORT MODE [STREAMS]: rdrecv on PORT, the python sender against it; sets FRC, RRC
fake() {
    start RP /dev/null "$C/out" "$C/rerr" "$RDRECV" "$1" key
    wait_listen "$1" || t_fail "rdrecv not listening"
    timeout -k 2 "$(lim 30)" "$PY" "$FAKE" "$1" key "${3:-3}" "$RD_T/in.small" "$2" > "$C/fake" 2>&1; FRC=$?
    wait_pid "$RP" "$(lim 15)"; RRC=$?
}
# out_prefix MAX: rdrecv's output is the start of the input, at most MAX bytes (nothing of the
# frame it refused or of what came after it)
out_prefix() {
    local n; n=$(stat -c %s "$C/out")
    [ "$n" -le "$1" ] || t_fail "rdrecv wrote $n bytes, more than the $1 before the bad frame"
    cmp -s "$C/out" <(head -c "$n" "$RD_T/in.small") || t_fail "rdrecv's output is not the start of the input"
}
head -c 200000 /dev/urandom > "$RD_T/in.small"   # 4 chunks of 64K: 3 full, 1 partial

if [ -n "$no_fake" ]; then
    t_skip "forged stripes while a real sender is connected" "$no_fake"
    t_skip "frames on the wrong stripe / a damaged frame on a stripe" "$no_fake"
    t_skip "a DATA frame tagged under the wrong key" "$no_fake"
    t_skip "sender gone after ACCEPT, before its stripes" "$no_fake"
    t_skip "4 silent connections in the join window" "$no_fake"
    t_skip "a python sender through a splicing relay: whole, swapped, damaged, a lying END, its ABORT" "$no_fake"
else
    t_begin "forged stripes while a (python) sender is connected: each turned away with 'not a stripe of this session', the transfer completes"
    port=$(free_port); fake "$port" ok 3
    expect_rc $FRC 0 "python sender" "$(tr '\n' '|' < "$C/fake")"
    expect_rc $RRC 0 rdrecv "$(tr '\n' '|' < "$C/rerr")"
    expect_same_file "$RD_T/in.small" "$C/out" data
    grep -q '^ACCEPT, receiver MAC right$' "$C/fake" || t_fail "the receiver's key confirmation: $(tr '\n' '|' < "$C/fake")"
    n=$(grep -c '^REJECT .*: code 3: not a stripe of this session$' "$C/fake")
    [ "$n" = 4 ] || t_fail "expected 4 REJECTs (wrong MAC, index 0, index == streams, stripe 1 again): $(tr '\n' '|' < "$C/fake")"
    grep -q '^CONFIRM 200000 bytes in 4 frames over 3 connections, tag right$' "$C/fake" || t_fail "no CONFIRM: $(tr '\n' '|' < "$C/fake")"
    [ "$(wc -l < "$C/rerr")" = 4 ] || t_fail "rdrecv: expected one line per forged stripe (4): $(tr '\n' '|' < "$C/rerr")"
    n=$(grep -Ec '^rdrecv: connection from 127\.0\.0\.1:[0-9]+ is not a stripe of this session$' "$C/rerr")
    [ "$n" = 4 ] || t_fail "rdrecv lines: $(tr '\n' '|' < "$C/rerr")"
    t_end

    t_begin "frames 0 and 1 on each other's stripe / frame 2 damaged on its stripe: rdrecv 4, ABORT with the reason"
    port=$(free_port); fake "$port" swap 3
    expect_rc $FRC 0 "python sender (swap)" "$(tr '\n' '|' < "$C/fake")"
    expect_rc $RRC 4 "rdrecv (swap)"
    expect_err "$C/rerr" rdrecv "out of order"
    grep -q '^ABORT (hop tag right): code 4: .*out of order' "$C/fake" || t_fail "the sender was not told: $(tr '\n' '|' < "$C/fake")"
    expect_empty "$C/out" "rdrecv stdout (swap)"
    port=$(free_port); fake "$port" corrupt 3
    expect_rc $FRC 0 "python sender (corrupt)" "$(tr '\n' '|' < "$C/fake")"
    expect_rc $RRC 4 "rdrecv (corrupt)"
    expect_err "$C/rerr" rdrecv "stream corrupt: chunk 2 .*fails its authentication tag"
    grep -q '^ABORT (hop tag right): code 4: stream corrupt: chunk 2 .*fails its authentication tag' "$C/fake" ||
        t_fail "the sender was not told: $(tr '\n' '|' < "$C/fake")"
    out_prefix $((2 * K64))
    t_end

    t_begin "a DATA frame tagged under the hop key, not the stream key: rdrecv 4, ABORT with the reason under the hop key"
    port=$(free_port); fake "$port" wrongkey 3
    expect_rc $FRC 0 "python sender (wrongkey)" "$(tr '\n' '|' < "$C/fake")"
    expect_rc $RRC 4 "rdrecv (wrongkey)"
    expect_err "$C/rerr" rdrecv "stream corrupt: chunk 1 .*fails its authentication tag"
    grep -q '^ABORT (hop tag right): code 4: stream corrupt: chunk 1 .*fails its authentication tag' "$C/fake" ||
        t_fail "the sender was not told: $(tr '\n' '|' < "$C/fake")"
    out_prefix "$K64"
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
    grep -q '^CONFIRM 200000 bytes in 4 frames over 3 connections, tag right$' "$C/fake" || t_fail "no CONFIRM: $(tr '\n' '|' < "$C/fake")"
    [ "$(wc -l < "$C/rerr")" -le 4 ] || t_fail "more than one line per silent connection: $(tr '\n' '|' < "$C/rerr")"
    t_note "${dt}s"
    t_end

    # The same python sender into a relay (`rdrecv --relay-fd`) whose sink takes 3 stripes too:
    # the relay splices each upstream connection to its pair downstream (rd_stripe_forward.c),
    # each on its own thread, and still checks every header, the order on each connection and
    # the END's totals; the sink holds the stream key the sender tags with (RDPIPE_STREAM_KEY).
    # fake_relay MODE [RELAY_OPTS]: sets FRC, RRC (the relay), KRC (the sink)
    fake_relay() {
        local kport rport
        kport=$(free_port)
        RDPIPE_STREAM_KEY=$SK start KP /dev/null "$C/out" "$C/kerr" "$RDRECV" --streams 3 --chunk-size 64K "$kport" hop-key-1-0123456789
        wait_listen "$kport" || t_fail "sink did not listen: $(cat "$C/kerr")"
        echo "127.0.0.1 $kport hop-key-1-0123456789" > "$C/next"
        rport=$(free_port)
        start RP "$C/next" /dev/null "$C/rerr" "$RDRECV" ${2:-} --relay-fd 0 "$rport" hop-key-0-0123456789
        wait_listen "$rport" || t_fail "relay did not listen: $(cat "$C/rerr")"
        RDPIPE_STREAM_KEY=$SK timeout -k 2 "$(lim 30)" "$PY" "$FAKE" "$rport" hop-key-0-0123456789 3 "$RD_T/in.small" "$1" > "$C/fake" 2>&1
        FRC=$?
        wait_pid "$RP" "$(lim 15)"; RRC=$?
        wait_pid "$KP" "$(lim 15)"; KRC=$?
    }
    # fake_relay_fails MODE REASON: all three exit as documented, the relay and the sink say
    # REASON (the sink as the relay's), the sender gets the relay's ABORT with it
    fake_relay_fails() {
        fake_relay "$1"
        expect_rc $FRC 0 "python sender ($1)" "$(tr '\n' '|' < "$C/fake")"
        expect_rc $RRC 4 "relay ($1)" "$(tr '\n' '|' < "$C/rerr")"
        expect_rc $KRC 4 "sink ($1)" "$(tr '\n' '|' < "$C/kerr")"
        expect_err "$C/rerr" rdrecv "^rdrecv: $2\$"
        expect_err "$C/kerr" rdrecv "^rdrecv: ${3:-sender: $2}\$"
        grep -Eq "^ABORT \(hop tag right\): code 4: $2\$" "$C/fake" || t_fail "the sender was not told: $(tr '\n' '|' < "$C/fake")"
    }

    t_begin "a python sender's 3 stripes through a relay to a 3-stripe sink: each connection spliced to its pair, CONFIRM's tag right, byte-identical"
    fake_relay ok -v
    expect_rc $FRC 0 "python sender" "$(tr '\n' '|' < "$C/fake")"
    expect_rc $RRC 0 relay "$(tr '\n' '|' < "$C/rerr")"
    expect_rc $KRC 0 sink "$(tr '\n' '|' < "$C/kerr")"
    expect_same_file "$RD_T/in.small" "$C/out" data
    grep -q '^CONFIRM 200000 bytes in 4 frames over 3 connections, tag right$' "$C/fake" || t_fail "no CONFIRM: $(tr '\n' '|' < "$C/fake")"
    n=$(grep -c '^REJECT .*: code 3: not a stripe of this session$' "$C/fake")
    [ "$n" = 4 ] || t_fail "the relay did not turn away the 4 forged stripes: $(tr '\n' '|' < "$C/fake")"
    grep -Eq '^rdrecv: relaying from 127\.0\.0\.1:[0-9]+ over tcp, 3 streams to 127\.0\.0\.1:[0-9]+ over tcp, 3 streams \(chunk 65536\)$' "$C/rerr" ||
        t_fail "relay -v: $(tr '\n' '|' < "$C/rerr")"
    t_end

    t_begin "through a splicing relay: frames 0 and 1 on each other's stripe -> the relay says 'frame out of order', all exit 4, nothing written"
    fake_relay_fails swap "protocol error from sender 127\.0\.0\.1:[0-9]+: frame out of order"
    expect_empty "$C/out" "sink stdout (swap)"
    t_end

    # a pair in the middle of a frame is woken when another fails: the relay does not wait for
    # a stripe the sender left half-sent
    t_begin "through a splicing relay: frames 0 and 1 swapped while stripe 2 stalls mid-frame -> all exit 4 at once"
    t0=$(now)
    fake_relay_fails stall "protocol error from sender 127\\.0\\.0\\.1:[0-9]+: frame out of order"
    dt=$(elapsed "$t0")
    expect_within "$dt" "$(lim 5)" "the relay's exit"
    t_note "${dt}s"
    t_end

    t_begin "through a splicing relay: frame 2 damaged -> passed on (the relay holds no stream key), the sink refuses it, all exit 4"
    fake_relay_fails corrupt "downstream: stream corrupt: chunk 2 \(bytes 131072\.\.196608\) fails its authentication tag" \
        "stream corrupt: chunk 2 \(bytes 131072\.\.196608\) fails its authentication tag"
    out_prefix $((2 * K64))
    t_end

    # the END comes on stripe 1 while the others may still be splicing: it is judged once every
    # pair has passed all its frames, and the relay's ABORT goes down the stripe the sink reads next
    t_begin "through a splicing relay: an END claiming one byte more -> 'stream incomplete', the sink told on the stripe it waits on, all exit 4"
    fake_relay_fails endlie "stream incomplete: sender sent 200001 bytes in 4 frames, 200000 bytes in 4 frames arrived"
    t_end

    t_begin "through a splicing relay: the sender's ABORT on stripe 2 after 2 frames -> its reason to the sink and back, all exit 4"
    fake_relay_fails abort "sender: fake sender: cannot read its input"
    out_prefix $((2 * K64))
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
