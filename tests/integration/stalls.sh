#!/bin/bash
# stalls.sh - a receiver whose consumer stops reading for a while (zfs recv pausing, a tape,
# a disk busy flushing) is a slow pipe, not a dead peer: the sender waits, however long. Before
# 2026-11-27 a pause longer than TCP_USER_TIMEOUT (20 s) failed the transfer, "timed out while
# sending": since Linux 5.11 that timeout also ends a connection whose receive window stays
# closed, however the peer answers the window probes. And a receiver host that vanishes during
# such a pause must still fail the sender, not leave it waiting for ever. The tests shorten the
# timeout to 2 s with RDPIPE_TCP_USER_TIMEOUT_MS; the pauses are 3 times as long.
. "$(dirname "$0")/../lib.sh"

export RDPIPE_TCP_USER_TIMEOUT_MS=2000
PAUSE=6

# paused_xfer NAME SOPTS...: 48 MiB from a file, the receiver's consumer asleep for PAUSE s
# before it reads; both exit 0 and the output is byte-identical
paused_xfer() {
    local name=$1; shift
    port=$(free_port)
    ( exec "$RDRECV" "$port" key 2> "$C/rerr" | { sleep "$PAUSE"; cat > "$C/out"; } ) & rp=$!; RD_PIDS+=("$rp")
    wait_listen "$port" || t_fail "rdrecv not listening"
    t0=$(now)
    timeout -k 2 "$(lim 60)" "$RDSEND" "$@" 127.0.0.1 "$port" key "$C/in" 2> "$C/serr"
    expect_rc $? 0 "rdsend ($name)" "$(cat "$C/serr")"
    dt=$(elapsed "$t0")
    wait_pid "$rp" "$(lim 20)"
    expect_rc $? 0 "rdrecv | consumer ($name)" "$(cat "$C/rerr")"
    expect_same_file "$C/in" "$C/out" "the stream ($name)"
    fle "$((PAUSE - 2))" "$dt" || t_fail "rdsend ended after ${dt}s, long before the consumer woke at ${PAUSE}s: did the pause stall it at all?"
    t_note "$name: ${dt}s"
}

t_begin "the receiver's consumer pauses 3 timeouts long: the stream arrives whole (one connection, --streams 2)"
gen "$C/in" $((48 << 20))
paused_xfer "one connection"
paused_xfer "--streams 2" --streams 2
t_end

t_begin "FILE a FIFO whose reader has not come: rdrecv listens at once, --timeout holds, and the stream waits for the reader"
# before 2026-11-27 rdrecv opened it first, and that open blocked until a reader came: no port,
# no --ready-fd line, no --timeout, a sender refused meanwhile
mkfifo "$C/fifo"
( exec "$RDRECV" --ready-fd 3 --timeout 2 0 key "$C/fifo" 3> "$C/port" 2> "$C/rerr" ) & rp=$!; RD_PIDS+=("$rp")
for ((i = 0; i < $(lim 2) * 20; i++)); do [ -s "$C/port" ] && break; sleep 0.05; done
[ -s "$C/port" ] || t_fail "no port on --ready-fd within $(lim 2) s: rdrecv waits for the FIFO's reader before it listens"
wait_pid "$rp" "$(lim 6)"; expect_rc $? 2 "rdrecv --timeout 2 into a FIFO nobody reads"
expect_err "$C/rerr" rdrecv "timed out waiting for a sender"
[ -p "$C/fifo" ] || t_fail "the FIFO is gone or replaced"
gen "$C/in4" $((4 << 20))
port=$(free_port)
start rp /dev/null /dev/null "$C/rerr" "$RDRECV" "$port" key "$C/fifo"
wait_listen "$port" || t_fail "rdrecv not listening before the FIFO has a reader"
start sp "$C/in4" /dev/null "$C/serr" "$RDSEND" 127.0.0.1 "$port" key
sleep 1.5   # the sender is in; the FIFO's reader comes later
kill -0 "$sp" 2> /dev/null || t_fail "rdsend ended before the FIFO had a reader: $(cat "$C/serr")"
timeout -k 2 "$(lim 20)" cat "$C/fifo" > "$C/out4"
wait_pid "$sp" "$(lim 10)"; expect_rc $? 0 rdsend "$(cat "$C/serr")"
wait_pid "$rp" "$(lim 10)"; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_same_file "$C/in4" "$C/out4" "the stream through the FIFO"
t_end

NAME="the receiver's host vanishes 12 s into its consumer's pause: rdsend fails within seconds"
if [ "$RD_IS_ROOT" != 1 ]; then t_skip "$NAME" "needs root for network namespaces"; exit 0; fi
if [ "$RD_QUICK" = 1 ]; then t_skip "$NAME" "--quick"; exit 0; fi
if ! ns_setup; then t_begin "namespace setup"; t_fail "cannot create namespaces / veth pair"; t_end; exit 1; fi

t_begin "$NAME"
port=$(free_port)
( exec ip netns exec "$NS_A" "$RDRECV" "$port" key 2> "$C/rerr" | { sleep "$(lim 120)"; cat > /dev/null; } ) & rp=$!; RD_PIDS+=("$rp")
wait_listen "$port" "$NS_A" || t_fail "not listening"
start sp /dev/null /dev/null "$C/serr" ip netns exec "$NS_B" "$RDSEND" 10.77.0.1 "$port" key /dev/zero
# The kernel doubles the window probes' interval while the window stays closed (0.2 s, 0.4 s,
# ... 12.8 s, 25.6 s): 12 s in, the host's loss would show only after the probes at about 13 and
# 26 s, 14 s or more after the cut. rdsend caps the interval at half the timeout (1 s here) where
# the kernel has TCP_RTO_MAX_MS (6.15); before it, the case keeps its old 3 s pause and 40 s.
if python3 -c 'import socket; socket.socket().getsockopt(6, 44)' 2> /dev/null; then
    pause=12; within=6
else
    pause=3; within=40; t_note "this kernel has no TCP_RTO_MAX_MS: a 3 s pause"
fi
sleep "$pause"   # every buffer on the way fills, the window closes and stays closed past the timeout
kill -0 "$sp" 2> /dev/null || t_fail "rdsend ended while the consumer paused: $(cat "$C/serr")"
t0=$(now)
ip -n "$NS_A" link set dev "$VETH_A" down || t_fail "cannot take $VETH_A down"
wait_pid "$sp" "$(lim $within)"; rc=$?; dt=$(elapsed "$t0")
expect_rc "$rc" 4 "rdsend after the receiver's host vanished ${pause} s into the pause (${dt}s)"
[ "$rc" = 4 ] && expect_err "$C/serr" rdsend "^rdsend: connection to 10\.77\.0\.1:$port timed out: the peer stopped answering while its receive window was closed$"
t_note "rdsend exit $rc ${dt}s after the cut, ${pause} s into the pause"
kill_reap "$rp"
t_end
