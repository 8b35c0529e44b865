#!/bin/bash
# mitm.sh - an attacker on the path between rdsend and rdrecv (tests/integration/mitm.py, a
# TCP proxy that parses frames). It flips, replays, reorders, truncates, replaces and splices
# DATA frames, forges and reflects CONFIRM, and injects an ABORT; wherever it changes the
# stream it first recomputes every unkeyed check (END's totals and whole-stream hash). Each
# attack must end with exit 4 on both sides, the error naming what failed, and nothing
# claimed complete. The pass-through case shows the proxy itself is transparent.
. "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
if ! $PY -c 'import xxhash' 2>/dev/null; then
    t_skip "mitm attacks" "needs /usr/bin/python3 with xxhash (apt-get install python3-xxhash)"
    exit 0
fi
gen "$RD_T/in" 1500000   # 23 frames of 64 KiB

# attack MODE RDSEND_RC RDRECV_RC SENDER_PATTERN RECEIVER_PATTERN [RECORD]: the patterns (grep
# -Ei) name what failed; "" where that end cannot know (the pass-through; the receiver whose
# sender got a forged CONFIRM)
attack() {
    local mode=$1 src=$2 rrc=$3 spat=$4 rpat=$5 rec=${6:-}
    local rport pport
    rport=$(free_port)
    start RP /dev/null "$C/out" "$C/rerr" "$RDRECV" --transport tcp ${RX_OPTS:-} "$rport" mitm-test-key-0123456789
    wait_listen "$rport" || t_fail "rdrecv did not listen: $(cat "$C/rerr")"
    pport=$(free_port)   # after rdrecv took its port, so the two differ
    start MP /dev/null "$C/mout" "$C/merr" $PY "$RD_ROOT/tests/integration/mitm.py" "$mode" "$pport" "$rport" $rec
    wait_listen "$pport" || t_fail "mitm did not listen: $(cat "$C/merr")"
    timeout -k 2 "$(lim 30)" "$RDSEND" --transport tcp --chunk-size 64K 127.0.0.1 "$pport" \
        mitm-test-key-0123456789 "$RD_T/in" 2> "$C/serr"
    expect_rc $? "$src" "rdsend through the '$mode' attacker" "$(cat "$C/serr")"
    wait_pid "$RP" "$(lim 20)"; expect_rc $? "$rrc" "rdrecv behind the '$mode' attacker" "$(cat "$C/rerr")"
    wait_pid "$MP" 5 || kill_reap "$MP"
    if [ "$mode" != pass ] && [ "$mode" != record ]; then
        grep -q "mitm: $mode done" "$C/merr" || t_fail "the attacker never acted: $(cat "$C/merr")"
    fi
    [ -n "$spat" ] && { grep -Eqi -- "$spat" "$C/serr" || t_fail "rdsend does not say /$spat/: $(cat "$C/serr")"; }
    [ -n "$rpat" ] && { grep -Eqi -- "$rpat" "$C/rerr" || t_fail "rdrecv does not say /$rpat/: $(cat "$C/rerr")"; }
    return 0
}

t_begin "pass-through: the proxy alone changes nothing"
attack pass 0 0 "" ""
expect_same_file "$RD_T/in" "$C/out" "stream through the proxy"
t_end

# a failed handshake is a stranger's: rdrecv says so in one line and waits on for the right
# sender, here until its --timeout (exit 2)
t_begin "a handshake frame's seq or tag field changed (HELLO's seq, AUTH's tag): a bad frame, nothing written"
RX_OPTS="--timeout 3"
attack hsseq 4 2 "" "bad frame from .*authentication tag mismatch"
[ -s "$C/out" ] && t_fail "rdrecv wrote $(stat -c %s "$C/out") bytes"
attack hstag 4 2 "" "bad frame from .*authentication tag mismatch"
[ -s "$C/out" ] && t_fail "rdrecv wrote $(stat -c %s "$C/out") bytes"
RX_OPTS=
t_end

t_begin "a flipped payload bit fails its chunk's tag (exit 4 both sides)"
attack flip 4 4 "authentication tag|receiver" "chunk 1 .*fails its authentication tag"
t_end

t_begin "a replaced payload, END recomputed to match, fails its tag"
attack replace 4 4 "^rdsend: receiver: stream corrupt: chunk 1 .*fails its authentication tag" "chunk 1 .*fails its authentication tag"
t_end

t_begin "a replayed DATA frame is out of order"
attack replay 4 4 "^rdsend: receiver: protocol error from sender .*: frame out of order" "out of order"
t_end

t_begin "two swapped DATA frames are out of order"
attack reorder 4 4 "^rdsend: receiver: protocol error from sender .*: frame out of order" "out of order"
t_end

t_begin "the last frame dropped, END's totals and hash recomputed: END fails its tag"
attack truncate 4 4 "^rdsend: receiver: stream corrupt: END from sender .* fails its authentication tag" "END from sender .* fails its authentication tag"
t_end

t_begin "a frame spliced in from an earlier session with the same key fails its tag"
attack record 0 0 "" "" "$RD_T/recorded"
expect_same_file "$RD_T/in" "$C/out" "the recorded session"
attack splice 4 4 "^rdsend: receiver: stream corrupt: chunk 1 .*fails its authentication tag" "chunk 1 .*fails its authentication tag" "$RD_T/recorded"
t_end

t_begin "a CONFIRM forged from the END the attacker saw: rdsend exits 4, not 0"
attack confirm 4 4 "CONFIRM that fails its authentication tag" ""
t_end

t_begin "the sender's own END reflected back as its CONFIRM: rdsend exits 4"
attack reflect 4 4 "CONFIRM that fails its authentication tag" ""
t_end

t_begin "an injected ABORT without the hop key's tag is refused as a forgery"
attack abort 4 4 "^rdsend: receiver: .*(authentication tag|bad frame|protocol error)" "authentication tag|bad frame|protocol error"
grep -q "mitm says stop" "$C/rerr" && t_fail "rdrecv believed the forged ABORT's reason: $(cat "$C/rerr")"
t_end
