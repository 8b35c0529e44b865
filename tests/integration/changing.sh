#!/bin/bash
# changing.sh - the input FILE changes while rdsend sends it over TCP. A page-cached chunk is
# read by a lane, tagged over that copy, and sent from that copy (not from the file's pages:
# rd_tcp.c). So a file rewritten meanwhile arrives as it was read, chunk by chunk, as cat
# would read it, with exit 0; one that grows is read to its new end, as by cat; a file that
# shrinks cannot be read to the size it had, and both ends fail: never exit 0 then, never a signal, never output that passes for the file.
. "$(dirname "$0")/../lib.sh"

HEAD=$((6 << 20))
MIB=160   # the file's size in MiB (see held_transfer)

# held_transfer SIZE CHANGE [RDSEND OPTION...]: SIZE random bytes in $C/in; rdrecv writes
# into a pipe whose reader takes HEAD bytes and then stops, so the receiver, both sockets and
# the sender's window fill and stall with chunks read, tagged and not yet sent; CHANGE (a
# command) changes $C/in meanwhile; then the reader drains the rest. Sets SRC and RRC, the
# exit codes. (SIZE must exceed what fits in the pipe, the receiver's ring and the socket
# buffers, or the whole file is read before the change and rightly succeeds: one connection
# held 26-42 MiB here, two can hold over 64 MiB, as each socket's receive buffer grows to
# tcp_rmem's 32 MiB.)
held_transfer() {
    local size=$1 change=$2 port rp sp readp
    shift 2
    gen "$C/in" "$size"
    rm -f "$C/rpipe" "$C/head" "$C/rest" "$C/got" "$C/go"
    mkfifo "$C/rpipe"
    { head -c $HEAD > "$C/head"; touch "$C/got"
      while [ ! -e "$C/go" ]; do sleep 0.05; done; cat > "$C/rest"; } < "$C/rpipe" &
    readp=$!
    port=$(free_port)
    start rp /dev/null "$C/rpipe" "$C/rerr" "$RDRECV" --chunk-size 1M "$port" key
    wait_listen "$port" || t_fail "rdrecv did not listen: $(cat "$C/rerr")"
    start sp /dev/null /dev/null "$C/serr" "$RDSEND" --chunk-size 1M "$@" 127.0.0.1 "$port" key "$C/in"
    local i
    for ((i = 0; i < 200; i++)); do [ -e "$C/got" ] && break; sleep 0.05; done
    [ -e "$C/got" ] || t_fail "the receiver never passed on $HEAD bytes: $(cat "$C/rerr" "$C/serr")"
    wait_stuck "$sp" || t_fail "rdsend never stalled"   # every buffer between the file and the pipe is full
    $change
    touch "$C/go"
    wait_pid "$sp" "$(lim 30)"; SRC=$?
    wait_pid "$rp" "$(lim 30)"; RRC=$?
    wait_pid "$readp" 5
    cat "$C/head" "$C/rest" 2>/dev/null > "$C/out"
}
shrink() { truncate -s $((3 << 20)) "$C/in"; }
grow() { head -c $((8 << 20)) /dev/urandom >> "$C/in"; }
rewrite() { cp "$C/in" "$C/old" && gen "$C/new" "$(stat -c %s "$C/in")" && dd if="$C/new" of="$C/in" bs=1M conv=notrunc status=none; }
# each_chunk_old_or_new: every 1 MiB chunk of the output is the old file's or the new one's
# there; prints how many were old
each_chunk_old_or_new() {
    local i n=$(($(stat -c %s "$C/old") >> 20)) old=0 off
    [ "$(stat -c %s "$C/out")" = "$(stat -c %s "$C/old")" ] || { echo "size $(stat -c %s "$C/out")"; return 1; }
    for ((i = 0; i < n; i++)); do
        off=$((i << 20))
        if cmp -s -i "$off:$off" -n 1048576 "$C/out" "$C/old"; then old=$((old + 1))
        elif ! cmp -s -i "$off:$off" -n 1048576 "$C/out" "$C/new"; then echo "chunk $i is neither"; return 1; fi
    done
    echo "$old"
}

for streams in 1 2; do
    opts=(); [ $streams = 2 ] && opts=(--streams 2)
    t_begin "input FILE truncated while its chunks wait to be sent (streams $streams): rdsend 5, rdrecv 4"
    held_transfer $((MIB << 20)) shrink "${opts[@]}"
    expect_rc "$SRC" 5 rdsend "$(head -c 300 "$C/serr")"
    expect_rc "$RRC" 4 rdrecv "$(head -c 300 "$C/rerr")"
    expect_err "$C/serr" rdsend "shrank while it was being sent"
    # the lane that finds the file short tells the receiver why, with an ABORT
    expect_err "$C/rerr" rdrecv "sender: .*shrank"
    t_end

    t_begin "input FILE rewritten in place while its chunks wait to be sent (streams $streams): sent as read, exit 0"
    held_transfer $((MIB << 20)) rewrite "${opts[@]}"
    expect_rc "$SRC" 0 rdsend "$(head -c 300 "$C/serr")"
    expect_rc "$RRC" 0 rdrecv "$(head -c 300 "$C/rerr")"
    old=$(each_chunk_old_or_new) || t_fail "the output is not the file as read: $old"
    # the first 6 MiB left before the rewrite; the chunks read after it are the new file's
    t_note "$old of $MIB chunks as before the rewrite"
    [ "${old:-0}" -ge 6 ] 2>/dev/null || t_fail "fewer than the 6 chunks sent before the rewrite are old: $old"
    [ "${old:-$MIB}" -lt $MIB ] 2>/dev/null || t_fail "every chunk was read before the rewrite: the case tested nothing"
    t_end
done

# read as cat reads: to the end the file has when the reader gets there (README, "The data path")
t_begin "input FILE appended to while its chunks wait to be sent: read to its new end, as cat would, exit 0"
held_transfer $((MIB << 20)) grow
expect_rc "$SRC" 0 rdsend "$(head -c 300 "$C/serr")"
expect_rc "$RRC" 0 rdrecv "$(head -c 300 "$C/rerr")"
[ "$(stat -c %s "$C/out")" = $(((MIB + 8) << 20)) ] || t_fail "the output has $(stat -c %s "$C/out") bytes, not the grown file's"
cmp -s "$C/out" "$C/in" || t_fail "the output is not the grown file"
t_end

# rdcp: a file written to while it is read (after the walk stat'ed it and named its size) would
# arrive as neither the old file nor the new one, or cut short of what it grew to: it fails
# alone, one line, exit 23, nothing of it left at the destination; the other files copied. The
# receiver is held (SIGSTOP) once the file's temporary is made, so the sender is held mid-file
# while the file changes. (Before 2026-11-27 only a file that shrank failed; this one arrived
# torn, with exit 0.)
t_begin "rdcp: a file written to while it is read fails alone: one line, exit 23, nothing of it left"
# The hold must land while big's temporary exists (the receiver still writing it), a window of
# a fraction of a second: a run that missed it (under load) is not counted and runs again.
rm -rf "$C/src"; mkdir -p "$C/src"
gen "$C/src/big" $((300 << 20)); echo hello > "$C/src/small"
held=
for attempt in 1 2 3; do
    rm -rf "$C/dst"; mkdir -p "$C/dst"
    start CP /dev/null "$C/cpout" "$C/cperr" "$RD_BIN/rdcp" --no-sync -r "$C/src/" "$C/dst/"
    recv=
    for _ in $(seq 400); do
        [ -n "$recv" ] || recv=$(pgrep -f -- "--tree-recv .*$C/dst/" | head -1)
        if [ -n "$recv" ] && compgen -G "$C/dst/.rdcp.big.*" > /dev/null; then
            kill -STOP "$recv"
            # stopped before the rename: the temporary is still there
            compgen -G "$C/dst/.rdcp.big.*" > /dev/null && held=$recv || kill -CONT "$recv"
            break
        fi
        kill -0 "$CP" 2> /dev/null || break
        sleep 0.01
    done
    [ -n "$held" ] && break
    wait_pid "$CP" "$(lim 60)"
done
if [ -z "$held" ]; then
    t_fail "never saw the receiver make big's temporary, in 3 runs: $(cat "$C/cperr")"
else
    printf 'x' | dd of="$C/src/big" bs=1 seek=$((299 << 20)) conv=notrunc status=none
    kill -CONT "$held"
fi
wait_pid "$CP" "$(lim 60)"; rc=$?
expect_rc $rc 23 "rdcp of a file written to meanwhile" "$(head -c 400 "$C/cperr")"
grep -q "source changed while being read: '$C/src/big'" "$C/cperr" ||
    t_fail "rdcp does not name the file that changed: $(head -c 400 "$C/cperr")"
[ -e "$C/dst/big" ] && t_fail "the changed file was copied ($(stat -c %s "$C/dst/big") bytes)"
compgen -G "$C/dst/.rdcp.*" > /dev/null && t_fail "a temporary was left: $(ls -a "$C/dst")"
[ "$(cat "$C/dst/small" 2>/dev/null)" = hello ] || t_fail "the other file was not copied: $(ls -a "$C/dst")"
t_end
