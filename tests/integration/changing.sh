#!/bin/bash
# changing.sh - the input FILE changes while rdsend sends it over TCP. A page-cached chunk is
# read by a lane (its tag is computed over that copy) and then sent from the file's pages with
# sendfile, so bytes that change after the read reach the receiver unlike their tag, and bytes
# that vanish cannot be sent at all. Either way both ends must fail: never exit 0, never a
# signal, never output that passes for the file.
. "$(dirname "$0")/../lib.sh"

HEAD=$((6 << 20))

# held_transfer SIZE CHANGE [RDSEND OPTION...]: SIZE random bytes in $C/in; rdrecv writes
# into a pipe whose reader takes HEAD bytes and then stops, so the receiver, both sockets and
# the sender's window fill and stall with chunks read, tagged and not yet sent; CHANGE (a
# command) changes $C/in meanwhile; then the reader drains the rest. Sets SRC and RRC, the
# exit codes. (64 MiB: about 26 MiB fit in the pipe, the receiver's ring and both socket
# buffers here; a file that fits entirely is sent before the change, and rightly succeeds.)
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
    sleep 0.5   # the stall: every buffer between the file and the pipe fills
    $change
    touch "$C/go"
    wait_pid "$sp" "$(lim 30)"; SRC=$?
    wait_pid "$rp" "$(lim 30)"; RRC=$?
    wait_pid "$readp" 5
    cat "$C/head" "$C/rest" 2>/dev/null > "$C/out"
}
shrink() { truncate -s $((3 << 20)) "$C/in"; }
rewrite() { gen "$C/new" "$(stat -c %s "$C/in")" && dd if="$C/new" of="$C/in" bs=1M conv=notrunc status=none; }

for streams in 1 2; do
    opts=(); [ $streams = 2 ] && opts=(--streams 2)
    t_begin "input FILE truncated while its chunks wait to be sent (streams $streams): rdsend 5, rdrecv 4"
    held_transfer $((64 << 20)) shrink "${opts[@]}"
    expect_rc "$SRC" 5 rdsend "$(head -c 300 "$C/serr")"
    expect_rc "$RRC" 4 rdrecv "$(head -c 300 "$C/rerr")"
    expect_err "$C/serr" rdsend "shrank while it was being sent"
    # a chunk not yet read is refused with an ABORT that says why; one whose header is out
    # when sendfile finds the pages gone can only be cut off
    expect_err "$C/rerr" rdrecv "sender aborted: .*shrank|closed by peer in the middle of a frame"
    t_end

    t_begin "input FILE rewritten in place while its chunks wait to be sent (streams $streams): both exit 4, a tag names it"
    held_transfer $((64 << 20)) rewrite "${opts[@]}"
    expect_rc "$SRC" 4 rdsend "$(head -c 300 "$C/serr")"
    expect_rc "$RRC" 4 rdrecv "$(head -c 300 "$C/rerr")"
    expect_err "$C/rerr" rdrecv "chunk [0-9]+ .* fails its authentication tag"
    expect_err "$C/serr" rdsend "fails its authentication tag"
    cmp -s "$C/out" "$C/in" && t_fail "the output equals the rewritten input"
    t_end
done
