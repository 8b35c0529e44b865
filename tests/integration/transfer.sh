#!/bin/bash
# transfer.sh - successful transfers over loopback: chunk-boundary sizes, pipe and FILE
# input/output, every way of passing the key, IPv4/IPv6/names, and one 3 GiB stream.
. "$(dirname "$0")/../lib.sh"

K64=$((64 << 10)); M4=$((4 << 20))
# (size, chunk option) pairs: the 64K chunk around its boundaries, the default 4M chunk around its
cases=("0 64K" "1 64K" "4095 64K" "$((K64 - 1)) 64K" "$K64 64K" "$((K64 + 1)) 64K"
       "$((M4 - 1)) default" "$M4 default" "$((M4 + 1)) default")
modes=("stdin stdout" "file file" "stdin file" "file stdout")
for c in "${cases[@]}"; do
    set -- $c; size=$1; chunk=$2
    gen "$RD_T/in.$size" "$size"
    for m in "${modes[@]}"; do
        set -- $m
        t_begin "size $size chunk $chunk $1->$2"
        xfer_reset; X_IN=$1; X_OUT=$2
        if [ "$chunk" != default ]; then X_ROPTS=(--chunk-size "$chunk"); X_SOPTS=(--chunk-size "$chunk"); fi
        xfer "$RD_T/in.$size"
        t_end
    done
    rm -f "$RD_T/in.$size"
done

gen "$RD_T/in" $((3 << 20))

t_begin "chunk only on the sender (receiver grants it)"
xfer_reset; X_SOPTS=(--chunk-size 4K --depth 3); xfer "$RD_T/in"; t_end

t_begin "receiver caps chunk and depth below what the sender asks"
xfer_reset; X_ROPTS=(--chunk-size 16K --depth 2); X_SOPTS=(--chunk-size 1M --depth 32); xfer "$RD_T/in"; t_end

t_begin "key via --key-file"
xfer_reset; X_KEYMODE=file; X_IN=file; X_OUT=file; xfer "$RD_T/in"; t_end

t_begin "key via RDPIPE_KEY"
xfer_reset; X_KEYMODE=env; xfer "$RD_T/in"; t_end

t_begin "key file with CRLF and no trailing newline, same key as argv"
# the key file's first line is the key; \r\n stripped; the other side gives it on argv
port=$(free_port); key="crlf-$RANDOM"
printf '%s\r\n' "$key" > "$C/kf"
start rp /dev/null "$C/out" "$C/rerr" "$RDRECV" --key-file "$C/kf" "$port"
wait_listen "$port" || t_fail "rdrecv not listening"
timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" "$key" "$RD_T/in" 2> "$C/serr"; expect_rc $? 0 rdsend "$(cat "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_same_file "$RD_T/in" "$C/out" data
printf '%s' "$key" > "$C/kf2"   # no newline at all
start rp /dev/null "$C/out2" "$C/rerr" "$RDRECV" "$port" "$key"
wait_listen "$port" || t_fail "rdrecv not listening"
timeout -k 2 "$(lim 20)" "$RDSEND" --key-file "$C/kf2" 127.0.0.1 "$port" "$RD_T/in" 2> "$C/serr"; expect_rc $? 0 rdsend "$(cat "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_same_file "$RD_T/in" "$C/out2" data
t_end

t_begin "IPv6 loopback ::1"
xfer_reset; X_HOST=::1; xfer "$RD_T/in"; t_end

t_begin "host name localhost"
xfer_reset; X_HOST=localhost; xfer "$RD_T/in"; t_end

t_begin "receiver --bind 127.0.0.1, sender --bind 127.0.0.1"
xfer_reset; X_ROPTS=(--bind 127.0.0.1); X_SOPTS=(--bind 127.0.0.1); xfer "$RD_T/in"; t_end

t_begin "--transport tcp, --sync, --direct on both FILEs"
xfer_reset; X_IN=file; X_OUT=file; X_ROPTS=(--transport tcp --sync --direct); X_SOPTS=(--transport tcp --direct)
xfer "$RD_T/in"; t_end

t_begin "existing longer output FILE is truncated"
xfer_reset; X_OUT=file
head -c $((8 << 20)) /dev/zero > "$C/out.keep"
# xfer writes to $C/out; make it exist and be longer than the input beforehand
gen "$RD_T/small" 1000
port=$(free_port); cp "$C/out.keep" "$C/out"
start rp /dev/null /dev/null "$C/rerr" "$RDRECV" "$port" key "$C/out"
wait_listen "$port" || t_fail "rdrecv not listening"
timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" key "$RD_T/small" 2> "$C/serr"; expect_rc $? 0 rdsend "$(cat "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_same_file "$RD_T/small" "$C/out" data
t_end

t_begin "-v and --json report on stderr, data unaffected"
xfer_reset; port=$(free_port)
start rp /dev/null "$C/out" "$C/rerr" "$RDRECV" -v --json "$port" key
wait_listen "$port" || t_fail "rdrecv not listening"
timeout -k 2 "$(lim 20)" "$RDSEND" -v --json 127.0.0.1 "$port" key "$RD_T/in" 2> "$C/serr"; expect_rc $? 0 rdsend "$(cat "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_same_file "$RD_T/in" "$C/out" data
grep -q '^{.*}$' "$C/serr" || t_fail "rdsend --json printed no JSON line: $(cat "$C/serr")"
grep -q '^{.*}$' "$C/rerr" || t_fail "rdrecv --json printed no JSON line: $(cat "$C/rerr")"
grep -q "\"bytes\": *$((3 << 20))" "$C/serr" || t_fail "rdsend JSON lacks \"bytes\": $((3 << 20)): $(cat "$C/serr")"
# -v adds an unprefixed "Bandwidth X GB/s" line (the original rdma-pipe's output); everything
# else must carry the program prefix
grep -v -e '^{' -e '^Bandwidth [0-9.]* GB/s$' "$C/serr" > "$C/serr.txt"; expect_lines_prefixed "$C/serr.txt" rdsend
grep -v -e '^{' -e '^Bandwidth [0-9.]* GB/s$' "$C/rerr" > "$C/rerr.txt"; expect_lines_prefixed "$C/rerr.txt" rdrecv
t_end

t_begin "port 0 with --ready-fd: kernel-chosen port reported"
start rp /dev/null "$C/out" "$C/rerr" bash -c "exec \"\$0\" --ready-fd 3 0 key 3> \"$C/port\"" "$RDRECV"
wait_for_text "$C/port" '^[0-9]+$' 10 || t_fail "no port written to --ready-fd: $(cat "$C/rerr")"
port=$(cat "$C/port")
timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "${port:-1}" key "$RD_T/in" 2> "$C/serr"; expect_rc $? 0 rdsend "$(cat "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_same_file "$RD_T/in" "$C/out" data
t_end

t_begin "pipe that trickles (slow writer, many partial chunks)"
xfer_reset; port=$(free_port)
start rp /dev/null "$C/out" "$C/rerr" "$RDRECV" "$port" key
wait_listen "$port" || t_fail "rdrecv not listening"
( for i in $(seq 1 20); do head -c $((RANDOM % 5000 + 1)) /dev/urandom; sleep 0.02; done ) | tee "$C/sent" |
    timeout -k 2 "$(lim 30)" "$RDSEND" --chunk-size 4K 127.0.0.1 "$port" key 2> "$C/serr"
expect_rc "${PIPESTATUS[2]}" 0 rdsend "$(cat "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_same_file "$C/sent" "$C/out" data
t_end
rm -f "$RD_T/in" "$RD_T/small"

# ---- 3 GiB, streamed: generated on the fly, hashed on both sides, never stored ----
if [ "$RD_BIG" != 1 ]; then
    t_skip "3 GiB stream stdin->stdout" "--quick / --no-big"
else
    t_begin "3 GiB stream stdin->stdout"
    port=$(free_port); seed=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n'); size=$((3 << 30))
    mkfifo "$C/tx" "$C/rx" "$C/txh"
    start rp /dev/null "$C/rx" "$C/rerr" "$RDRECV" "$port" key
    sha256sum < "$C/rx" > "$C/rx.sha" & hr=$!
    sha256sum < "$C/txh" > "$C/tx.sha" & ht=$!
    wait_listen "$port" || t_fail "rdrecv not listening"
    ( gen_stream "$size" "$seed" | tee "$C/txh" > "$C/tx" ) & gp=$!; RD_PIDS+=("$gp")
    t0=$(now)
    start sp "$C/tx" /dev/null "$C/serr" "$RDSEND" 127.0.0.1 "$port" key
    wait_pid "$sp" "$(lim 300)"; expect_rc $? 0 rdsend "$(cat "$C/serr")"
    wait_pid "$rp" 20; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
    dt=$(elapsed "$t0")
    wait_pid "$gp" 10; wait_pid "$ht" 10; wait_pid "$hr" 10
    expect_empty "$C/serr" "rdsend stderr"; expect_empty "$C/rerr" "rdrecv stderr"
    tx=$(cut -d' ' -f1 "$C/tx.sha"); rx=$(cut -d' ' -f1 "$C/rx.sha")
    [ -n "$tx" ] && [ "$tx" = "$rx" ] || t_fail "sha256 differs: sent $tx, received $rx (seed $seed)"
    t_note "$(awk -v s="$size" -v t="$dt" 'BEGIN{printf "%.0f MB/s incl. generation and hashing", s/t/1e6}')"
    t_end
fi
