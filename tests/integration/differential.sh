#!/bin/bash
# differential.sh - randomized differential test: every sender mode (a pipe written in random
# pieces with random pauses, FILE, --direct FILE) against every sink mode (stdout to a pipe,
# FILE, --direct FILE, --sync FILE, --direct --sync FILE, --no-sync FILE, --direct with stdout
# a regular file), at random sizes (half of them edges: 0, 1, 4095, 4096, 4097, chunk-1, chunk,
# chunk+1; the rest around chunk multiples or up to 3 MiB) with random --chunk-size (odd ones
# too, so frames end off 4 KiB boundaries even from files) and --depth, asked by the sender,
# capped by the receiver or both, with 1-4 lanes on both ends (a regular file with 2+ is
# written by the lanes) and no codec, --compress, --encrypt or both. The output's sha256 must be the input's, both exit 0,
# nothing on stderr. Catches the lost --direct writes of unaligned frames (issue 9).
#
# Reproducible: every case line names the seed and the case number; replay one with
#   RDPIPE_SEED=S RDPIPE_DIFF_CASE=N tests/run --no-build differential
# env: RDPIPE_SEED (default 9), RDPIPE_DIFF_ROUNDS (sender x sink rounds of 21 cases; default
#      4, 2 when RDPIPE_SLOW > 1), RDPIPE_DIFF_CASE (run only case N)
. "$(dirname "$0")/../lib.sh"

SEED=${RDPIPE_SEED:-9}
ROUNDS=${RDPIPE_DIFF_ROUNDS:-$([ "$RD_SLOW" = 1 ] && echo 4 || echo 2)}
ONLY=${RDPIPE_DIFF_CASE:-}
RANDOM=$SEED   # every choice below comes from bash's RANDOM, so the seed replays the run

SENDERS=(pipe file direct)
SINKS=(stdout file direct sync direct-sync no-sync direct-stdout)

# The pipe writer: the input in pieces of random size (1 byte .. 256 KiB), pausing now and then
# for longer than the sender waits on a quiet pipe, so frames of every odd length go out.
cat > "$RD_T/writer.py" <<'EOF'
import os, random, sys, time
path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
data = open(path, 'rb').read()
pos, paused = 0, 0.0
while pos < len(data):
    n = min(len(data) - pos, rng.choice([1, 7, 511, 4095, 4097, rng.randint(1, 1 << 18)]))
    view = memoryview(data)[pos:pos + n]
    while view:
        view = view[os.write(1, view):]
    pos += n
    if paused < 0.15 and rng.random() < 0.3:
        d = rng.uniform(0.006, 0.02)
        time.sleep(d)
        paused += d
EOF

# Choices go through globals, never $(...): a subshell reseeds RANDOM and the run would not replay.
rnd() { R=$(((RANDOM << 15 | RANDOM) % $1)); }   # rnd N: R = 0..N-1
# pick_chunk: CHUNK = a power of two, or an odd size whose frames never end on a 4 KiB boundary
pick_chunk() {
    rnd 4095; local odd4k=$((4097 + R)); rnd 65535; local odd64k=$((65537 + R))
    local c=(4096 8192 65536 131072 1048576 "$odd4k" "$odd64k")
    rnd ${#c[@]}; CHUNK=${c[R]}
}
# pick_size C: SIZE = half of the time an edge (0, 1, 4095, 4096, 4097, C-1, C, C+1), else
# around a multiple of C or anything up to 3 MiB
pick_size() {
    local c=$1 k edges=(0 1 4095 4096 4097 $(($1 - 1)) $1 $(($1 + 1)))
    rnd 2
    if [ $R = 0 ]; then rnd ${#edges[@]}; SIZE=${edges[R]}; return; fi
    rnd 5; k=$((1 + R))
    rnd 3
    case $R in
        0) rnd 3; SIZE=$((k * c + R - 1)) ;;
        1) rnd "$c"; SIZE=$((k * c + R)) ;;
        *) rnd $((3 << 20)); SIZE=$((R + 1)) ;;
    esac
}

# one case: sender mode, sink mode, size, chunk, depth, where the options go
run_case() {
    local id=$1 smode=$2 kmode=$3 size=$4 chunk=$5 depth=$6 who=$7 lanes=$8 codec=$9
    local port in=$RD_T/in.$id sopts=() ropts=() sfile=() rfile=() rout sin=/dev/null
    local feedp="" hashp="" sp rp src rrc want got replay
    replay="RDPIPE_SEED=$SEED RDPIPE_DIFF_CASE=$id"
    gen_stream "$size" "$(printf '%016x%016x' "$SEED" "$id")" > "$in" 2> "$C/gen.err" ||
        t_fail "gen_stream: $(head -c 300 "$C/gen.err") ($replay)"
    # the input must be the size the case names: an empty one would pass on empty output
    [ "$(stat -c %s "$in")" = "$size" ] || { t_fail "the input has $(stat -c %s "$in") bytes, not $size ($replay)"; return; }
    want=$(sha "$in")
    case $who in   # the chunk and depth asked by the sender, capped by the receiver, or both
        send) sopts+=(--chunk-size "$chunk" --depth "$depth") ;;
        recv) ropts+=(--chunk-size "$chunk" --depth "$depth") ;;
        *) sopts+=(--chunk-size "$chunk" --depth "$depth"); ropts+=(--chunk-size "$chunk" --depth "$depth") ;;
    esac
    # lanes on both ends (a regular file with 2+ is written by the lanes, pwrite at offsets)
    sopts+=(--lanes "$lanes"); ropts+=(--lanes "$lanes")
    case $codec in
        compress) sopts+=(--compress=1) ;;
        encrypt) sopts+=(--encrypt); ropts+=(--encrypt) ;;
        both) sopts+=(--compress=auto --encrypt); ropts+=(--encrypt) ;;
    esac
    rout=$C/rstdout
    case $kmode in
        stdout) mkfifo "$C/rpipe"; rout=$C/rpipe
                sha256sum < "$C/rpipe" | cut -d' ' -f1 > "$C/out.sha" & hashp=$! ;;
        file) rfile=("$C/out") ;;
        direct) rfile=("$C/out"); ropts+=(--direct) ;;
        sync) rfile=("$C/out"); ropts+=(--sync) ;;
        direct-sync) rfile=("$C/out"); ropts+=(--direct --sync) ;;
        no-sync) rfile=("$C/out"); ropts+=(--no-sync) ;;
        direct-stdout) rout=$C/out; ropts+=(--direct) ;;
    esac
    case $smode in
        pipe) mkfifo "$C/spipe"; sin=$C/spipe
              python3 "$RD_T/writer.py" "$in" "$((SEED * 100003 + id))" > "$C/spipe" & feedp=$! ;;
        file) sfile=("$in") ;;
        direct) sfile=("$in"); sopts+=(--direct) ;;
    esac
    port=$(free_port)
    start rp /dev/null "$rout" "$C/rerr" "$RDRECV" "${ropts[@]}" "$port" key "${rfile[@]}"
    wait_listen "$port" "" 10 || t_fail "rdrecv did not listen on port $port: $(cat "$C/rerr") ($replay)"
    start sp "$sin" "$C/sstdout" "$C/serr" "$RDSEND" "${sopts[@]}" 127.0.0.1 "$port" key "${sfile[@]}"
    wait_pid "$sp" "$(lim 30)"; src=$?
    wait_pid "$rp" "$(lim 10)"; rrc=$?
    if [ -n "$feedp" ]; then wait_pid "$feedp" 5; expect_rc $? 0 "the pipe writer ($replay)"; fi
    [ -n "$hashp" ] && wait_pid "$hashp" 5
    if [ "$kmode" = stdout ]; then got=$(cat "$C/out.sha" 2>/dev/null); else got=$(sha "$C/out"); fi
    expect_rc "$src" 0 rdsend "$(head -c 300 "$C/serr"); $replay"
    expect_rc "$rrc" 0 rdrecv "$(head -c 300 "$C/rerr"); $replay"
    expect_empty "$C/serr" "rdsend stderr ($replay)"
    expect_empty "$C/rerr" "rdrecv stderr ($replay)"
    [ "$want" = "$got" ] ||
        t_fail "sha256 differs: sent $size bytes $want, received $([ -f "$C/out" ] && stat -c %s "$C/out") bytes ${got:-none} ($replay)"
    rm -f "$in"
}

id=0
for ((round = 0; round < ROUNDS; round++)); do
    for smode in "${SENDERS[@]}"; do
        for kmode in "${SINKS[@]}"; do
            # drawn for every case, run or not, so that RDPIPE_DIFF_CASE replays the same one
            pick_chunk; chunk=$CHUNK
            rnd 16; depth=$((1 + R))
            pick_size "$chunk"; size=$SIZE
            rnd 3; who=(send recv both); who=${who[R]}
            rnd 4; lanes=$((1 + R))
            rnd 4; codec=(none compress encrypt both); codec=${codec[R]}
            id=$((id + 1))
            [ -n "$ONLY" ] && [ "$ONLY" != "$id" ] && continue
            t_begin "seed $SEED case $id: $smode -> $kmode, $size bytes, chunk $chunk depth $depth ($who), lanes $lanes, codec $codec"
            run_case "$id" "$smode" "$kmode" "$size" "$chunk" "$depth" "$who" "$lanes" "$codec"
            t_end
        done
    done
done
