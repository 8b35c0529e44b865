#!/bin/bash
# compress.sh - rdsend --compress: zstd per chunk on the lanes (wire/rd_compress.h), with
# --compress=auto adapting the level (engine/rd_adapt.h). Byte-identical at sizes around the
# chunk for all-zero, text, incompressible and mixed data, fixed levels and auto, from a file
# and a pipe into a file (parallel lanes) and a pipe; composed with --encrypt; a flipped
# compressed byte on the wire; and a zstd bomb from a sender that holds the key.
. "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
KEY=compress-test-key-0123456789
CHUNK=65536

# corpora of 9 chunks and a bit: zeros, text, random, and chunks alternating between them
N=$((CHUNK * 9 + 777))
head -c $N /dev/zero > "$RD_T/zero"
seq 1 200000 | head -c $N > "$RD_T/text"
gen "$RD_T/random" $N
for i in 0 1 2 3 4 5 6 7 8 9; do
    case $((i % 3)) in 0) f=zero ;; 1) f=text ;; 2) f=random ;; esac
    dd if="$RD_T/$f" bs=$CHUNK skip="$i" count=1 2>/dev/null
done | head -c $N > "$RD_T/mixed"

# roundtrip CORPUS SIZE LEVEL FROM(file|pipe) TO(file|pipe) LANES [EXTRA...]
roundtrip() {
    local corpus=$1 size=$2 level=$3 from=$4 to=$5 lanes=$6 port rc out=$C/out
    shift 6
    head -c "$size" "$RD_T/$corpus" > "$C/in"
    port=$(free_port)
    if [ "$to" = file ]; then
        start RP /dev/null /dev/null "$C/rerr" "$RDRECV" --compress -v "$@" --lanes "$lanes" "$port" "$KEY" "$out"
    else
        # stdout a pipe (into cat); rdrecv's own status in $C/rrc (sh's would be cat's)
        rm -f "$C/rrc"
        start RP /dev/null "$out" "$C/rerr" sh -c 'r=$1; shift; { "$@"; echo $? > "$r"; } | cat' \
            sh "$C/rrc" "$RDRECV" -v "$@" --lanes "$lanes" "$port" "$KEY"
    fi
    wait_listen "$port" || { t_fail "rdrecv did not listen: $(cat "$C/rerr")"; return; }
    if [ "$from" = file ]; then
        timeout -k 2 "$(lim 30)" "$RDSEND" --compress="$level" -v "$@" --lanes "$lanes" --chunk-size $CHUNK \
            127.0.0.1 "$port" "$KEY" "$C/in" 2> "$C/serr"
    else
        cat "$C/in" | timeout -k 2 "$(lim 30)" "$RDSEND" --compress="$level" -v "$@" --lanes "$lanes" \
            --chunk-size $CHUNK 127.0.0.1 "$port" "$KEY" 2> "$C/serr"
    fi
    expect_rc $? 0 "rdsend --compress=$level ($corpus, $size bytes, $from)" "$(cat "$C/serr")"
    wait_pid "$RP" "$(lim 20)"; rc=$?
    [ "$to" = pipe ] && [ $rc = 0 ] && rc=$(cat "$C/rrc" 2>/dev/null || echo "none (no status written)")
    expect_rc "$rc" 0 "rdrecv ($to)" "$(cat "$C/rerr")"
    cmp -s "$C/in" "$out" ||
        t_fail "$corpus, $size bytes, level $level, $from -> $to, lanes $lanes: output differs ($(stat -c %s "$out") bytes)"
    [ "$size" -gt 0 ] && { grep -q "bytes as [0-9]* on the wire (ratio" "$C/serr" ||
        t_fail "rdsend -v does not report the ratio: $(cat "$C/serr")"; }
    return 0
}

seed=${RDPIPE_SEED:-$RANDOM}
RANDOM=$seed

t_begin "sizes around the chunk: zeros, text, random and mixed chunks, fixed levels and auto, byte-identical (seed $seed)"
for corpus in zero text random mixed; do
    for size in 0 1 $((CHUNK - 1)) $CHUNK $((CHUNK + 1)) $((RANDOM * 19 % N)); do
        roundtrip "$corpus" "$size" 1 file file 2
    done
    roundtrip "$corpus" $N auto pipe pipe 1
    roundtrip "$corpus" $N 19 file pipe 3
    roundtrip "$corpus" $N -5 pipe file 3
done
t_end

t_begin "what -v and --json report: raw and wire bytes, the ratio, the codec and the lanes"
roundtrip text $N 3 file file 2 --json
grep -q "\"wire_bytes\":[0-9]*,\"ratio\":[0-9.]*,\"compression\":\"zstd level 3\"" "$C/serr" || t_fail "rdsend --json: $(cat "$C/serr")"
grep -q "\"lanes\":2," "$C/serr" || t_fail "rdsend --json names no lanes: $(cat "$C/serr")"
wire=$(sed -n 's/.*"wire_bytes":\([0-9]*\).*/\1/p' "$C/serr")
[ -n "$wire" ] && [ "$wire" -lt $((N / 3)) ] || t_fail "text at level 3 went as $wire wire bytes of $N"
ratio=$(sed -n 's/.*"ratio":\([0-9.]*\).*/\1/p' "$C/serr")
awk -v r="$ratio" -v n=$N -v w="$wire" 'BEGIN{exit !(w > 0 && r - n / w < 0.001 && n / w - r < 0.001)}' ||
    t_fail "--json ratio '$ratio' is not bytes / wire_bytes ($N / $wire)"
grep -q "\"bytes\":$N," "$C/serr" || t_fail "rdsend --json bytes is not the raw size $N: $(cat "$C/serr")"
grep -q "\"compression\":\"zstd\"" "$C/rerr" || t_fail "rdrecv --json does not say it decompressed: $(cat "$C/rerr")"
roundtrip random $N 1 file file 2 --json
wire=$(sed -n 's/.*"wire_bytes":\([0-9]*\).*/\1/p' "$C/serr")
[ "$wire" = $N ] || t_fail "random data: $wire wire bytes, not the $N it was (incompressible chunks go raw)"
grep -q '"ratio":1.0000,' "$C/serr" || t_fail "random data: --json ratio is not 1.0000: $(cat "$C/serr")"
t_end

t_begin "--compress with --encrypt: compressed, then encrypted, byte-identical"
for corpus in text mixed; do
    roundtrip "$corpus" $N auto file file 2 --encrypt
    grep -q "encrypted with" "$C/serr" || t_fail "not encrypted: $(cat "$C/serr")"
    roundtrip "$corpus" $N 1 pipe pipe 1 --encrypt
done
t_end

t_begin "usage: --compress=0, 20, abc are refused with one line"
for bad in 0 20 abc -8; do
    "$RDSEND" --compress="$bad" 127.0.0.1 1 "$KEY" /dev/null 2> "$C/e"; rc=$?
    [ $rc = 1 ] || t_fail "--compress=$bad: exit $rc"
    grep -q "^rdsend: --compress must be auto or a zstd level from -7 to 19 (not 0), not '$bad'$" "$C/e" ||
        t_fail "--compress=$bad: $(cat "$C/e")"
done
t_end

# A relay (rdrecv --relay-fd, as rdpipe's cat segments) checks the END's totals, which count
# the bytes before compression, against what passed it: compressed frames count their raw
# length. Each of its three ways of passing frames: one connection spliced (1 -> 1), a pair
# per connection (2 -> 2), and frame by frame from its buffers (2 -> a sink that takes 1).
t_begin "--compress through a relay, text that compresses 8x: every hop exits 0, byte-identical"
seq 1 300000 | head -c $((CHUNK * 9 + 777)) > "$C/in"
SK=$(printf '%064x' 7)
for case in "1 16" "2 16" "2 1"; do
    set -- $case
    sport=$(free_port)
    RDPIPE_STREAM_KEY=$SK start SP /dev/null /dev/null "$C/sinkerr" "$RDRECV" --streams "$2" "$sport" \
        hop-key-1-0123456789 "$C/out"
    wait_listen "$sport" || t_fail "sink did not listen: $(cat "$C/sinkerr")"
    rport=$(free_port)
    echo "127.0.0.1 $sport hop-key-1-0123456789" > "$C/next"
    start RL "$C/next" /dev/null "$C/relerr" "$RDRECV" -v --relay-fd 0 "$rport" hop-key-0-0123456789
    wait_listen "$rport" || t_fail "relay did not listen: $(cat "$C/relerr")"
    RDPIPE_STREAM_KEY=$SK timeout -k 2 "$(lim 30)" "$RDSEND" --compress=3 -v --streams "$1" --chunk-size $CHUNK \
        127.0.0.1 "$rport" hop-key-0-0123456789 "$C/in" 2> "$C/serr"
    expect_rc $? 0 "rdsend --compress --streams $1 to the relay" "$(cat "$C/serr")"
    wait_pid "$RL" "$(lim 20)"; expect_rc $? 0 "the relay ($1 -> sink --streams $2)" "$(cat "$C/relerr")"
    wait_pid "$SP" "$(lim 20)"; expect_rc $? 0 "the sink behind the relay" "$(cat "$C/sinkerr")"
    cmp -s "$C/in" "$C/out" || t_fail "through a relay ($1 -> $2): output differs"
    grep -Eq "ratio ([2-9]|[1-9][0-9]+)\." "$C/serr" || t_fail "the text did not compress 2x or more: $(cat "$C/serr")"
    grep -Eq "^rdrecv: $(stat -c %s "$C/in") bytes as [0-9]+ on the wire \(ratio ([2-9]|[1-9][0-9]+)\." "$C/relerr" ||
        t_fail "the relay does not count the bytes before and after compression: $(cat "$C/relerr")"
done
t_end

t_begin "a flipped compressed byte on the wire: exit 4 on both sides, the chunk named"
if ! $PY -c 'import xxhash' 2>/dev/null; then
    t_skip "flipped compressed byte" "needs python3-xxhash"
else
    cp "$RD_T/text" "$C/in"
    rport=$(free_port)
    start RP /dev/null /dev/null "$C/rerr" "$RDRECV" --transport tcp "$rport" "$KEY" "$C/out"
    wait_listen "$rport" || t_fail "rdrecv did not listen: $(cat "$C/rerr")"
    pport=$(free_port)
    start MP /dev/null /dev/null "$C/merr" $PY "$RD_ROOT/tests/integration/mitm.py" flip "$pport" "$rport"
    wait_listen "$pport" || t_fail "the proxy did not listen: $(cat "$C/merr")"
    timeout -k 2 "$(lim 30)" "$RDSEND" --compress=1 --transport tcp --chunk-size $CHUNK 127.0.0.1 "$pport" \
        "$KEY" "$C/in" 2> "$C/serr"
    expect_rc $? 4 "rdsend --compress, a compressed byte flipped" "$(cat "$C/serr")"
    wait_pid "$RP" "$(lim 20)"; expect_rc $? 4 "rdrecv, a compressed byte flipped" "$(cat "$C/rerr")"
    wait_pid "$MP" 5 || kill_reap "$MP"
    grep -q "mitm: flip done" "$C/merr" || t_fail "the attacker never acted: $(cat "$C/merr")"
    grep -q "chunk 1 (bytes 65536..131072) fails its authentication tag" "$C/rerr" ||
        t_fail "rdrecv does not name the chunk: $(cat "$C/rerr")"
fi
t_end

# a sender that holds the key (python, tests/integration/fake_sender.py, over 2 stripes: it
# speaks the striped framing) sends a zstd bomb
FAKE=$RD_ROOT/tests/integration/fake_sender.py
if ! no_fake=$("$PY" "$FAKE" --check 2>&1); then
    t_skip "zstd bomb from a sender with the key" "python sender cannot run: $no_fake"
else
    head -c 200000 "$RD_T/random" > "$RD_T/small"
    for mode in bomb bombhdr; do
        case $mode in
            bomb) what="a zstd frame that claims 1 TiB of content: refused before decompressing, exit 4"
                  want="chunk 1 \(bytes 65536\.\.131072\) does not decompress to the length it names" ;;
            bombhdr) what="a header that claims a raw length of 4 GiB: refused by the frame parser, exit 4"
                     want="protocol error from sender .*: frame length out of range" ;;
        esac
        t_begin "zstd bomb: $what"
        port=$(free_port)
        # at most 1 GiB of address space (not under ASan, whose shadow memory needs terabytes)
        limit=(/usr/bin/prlimit --as=$((1 << 30)))
        [ -n "${ASAN_OPTIONS:-}" ] && limit=()
        start RP /dev/null "$C/out" "$C/rerr" "${limit[@]}" "$RDRECV" "$port" key
        wait_listen "$port" || t_fail "rdrecv not listening"
        timeout -k 2 "$(lim 30)" "$PY" "$FAKE" "$port" key 2 "$RD_T/small" "$mode" > "$C/fake" 2>&1; frc=$?
        wait_pid "$RP" "$(lim 15)"; rrc=$?
        [ $rrc = 4 ] || t_fail "rdrecv exit $rrc, not 4: $(cat "$C/rerr")"
        [ $frc = 0 ] || t_fail "the python sender: $(cat "$C/fake")"
        grep -Eq "$want" "$C/rerr" || t_fail "rdrecv does not say /$want/: $(cat "$C/rerr")"
        grep -q "ABORT (hop tag right)" "$C/fake" || t_fail "no ABORT reached the sender: $(cat "$C/fake")"
        n=$(stat -c %s "$C/out")
        [ "$n" -le 65536 ] || t_fail "rdrecv wrote $n bytes, more than the chunk before the bomb"
        t_end
    done
fi
