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

# files of the kernel's pseudo filesystems: a sysfs attribute says 4096 bytes and holds a line,
# a /proc file says 0 and holds more; both arrive as cat reads them, as FILE and as stdin
for f in /sys/kernel/mm/transparent_hugepage/enabled /sys/devices/system/cpu/online /proc/version; do
    if [ ! -r "$f" ]; then t_skip "pseudo file $f" "not on this machine"; continue; fi
    for in in file stdin; do
        t_begin "pseudo file $f ($(stat -c %s "$f") bytes by its size) as $in: what cat reads"
        cat "$f" > "$C/pseudo"
        port=$(free_port)
        start rp /dev/null "$C/out" "$C/rerr" "$RDRECV" "$port" key
        wait_listen "$port" || t_fail "rdrecv did not listen: $(cat "$C/rerr")"
        if [ $in = file ]; then start sp /dev/null /dev/null "$C/serr" "$RDSEND" 127.0.0.1 "$port" key "$f"
        else start sp "$f" /dev/null "$C/serr" "$RDSEND" 127.0.0.1 "$port" key; fi
        wait_pid "$sp" "$(lim 10)"; expect_rc $? 0 rdsend "$(cat "$C/serr")"
        wait_pid "$rp" "$(lim 10)"; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
        expect_same_file "$C/pseudo" "$C/out" "data as cat reads it"
        t_end
    done
done

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

# ---- --direct on the receiver: frames at offsets that are not 4 KiB aligned ----
# A pipe that pauses after 5000 bytes makes the first frame 5000 bytes long, so every later
# frame starts mid-block. (Once, O_DIRECT refused those and the fallback wrote them at offset
# 0: both sides exited 0 with only the second part in the file.)
# paused_send PORT [rdsend options]: 5000 bytes, a pause, 300000 bytes, into rdsend; the bytes
# sent end up in $C/sent
paused_send() {
    local port=$1; shift
    ( head -c 5000 "$RD_T/in"; sleep 0.2; tail -c 300000 "$RD_T/in" ) | tee "$C/sent" |
        timeout -k 2 "$(lim 20)" "$RDSEND" "$@" 127.0.0.1 "$port" key 2> "$C/serr"
    expect_rc "${PIPESTATUS[2]}" 0 rdsend "$(cat "$C/serr")"
}
for dopt in "--direct" "--direct --chunk-size 64K" "--direct --no-sync"; do
    t_begin "rdrecv $dopt FILE: unaligned frames land at their offsets"
    port=$(free_port)
    start rp /dev/null /dev/null "$C/rerr" "$RDRECV" $dopt "$port" key "$C/out"
    wait_listen "$port" || t_fail "rdrecv not listening"
    paused_send "$port"
    wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
    expect_same_file "$C/sent" "$C/out" data
    t_end
done

t_begin "rdrecv --direct > FILE opened mid-way: data after what was there, position after it"
# stdout is a regular file already holding a header; a shell appends a trailer after rdrecv
port=$(free_port)
( printf 'header\n'; exec "$RDRECV" --direct "$port" key; ) > "$C/out" 2> "$C/rerr" &
rp=$!; RD_PIDS+=("$rp")
wait_listen "$port" || t_fail "rdrecv not listening"
paused_send "$port"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
{ printf 'header\n'; cat "$C/sent"; } > "$C/want"
expect_same_file "$C/want" "$C/out" "header + data"
port=$(free_port)
( "$RDRECV" --direct "$port" key; rc=$?; printf 'trailer\n'; exit $rc ) > "$C/out2" 2> "$C/rerr" &
rp=$!; RD_PIDS+=("$rp")
wait_listen "$port" || t_fail "rdrecv not listening"
paused_send "$port"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
{ cat "$C/sent"; printf 'trailer\n'; } > "$C/want2"
expect_same_file "$C/want2" "$C/out2" "data + trailer written by the shell after rdrecv"
t_end

t_begin "rdrecv --direct >> FILE (O_APPEND): appended, nothing overwritten"
port=$(free_port); printf 'already here\n' > "$C/out"
start rp /dev/null /dev/null "$C/rerr" bash -c 'exec "$0" --direct "$1" key >> "$2"' "$RDRECV" "$port" "$C/out"
wait_listen "$port" || t_fail "rdrecv not listening"
paused_send "$port"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
{ printf 'already here\n'; cat "$C/sent"; } > "$C/want"
expect_same_file "$C/want" "$C/out" "old content + data"
t_end

# ---- a write that fails is an error on both sides, never a silent gap ----
for dopt in "" "--direct"; do
    t_begin "disk full under rdrecv ${dopt:-(buffered)} FILE: rdrecv exits 5, rdsend 4"
    if [ "$RD_IS_ROOT" != 1 ]; then t_skip "disk full ${dopt}" "needs root for a tmpfs"; continue; fi
    port=$(free_port); mkdir -p "$C/full"
    # a 1 MiB tmpfs in a mount namespace of rdrecv's own: nothing to unmount afterwards
    start rp /dev/null /dev/null "$C/rerr" unshare -m bash -c \
        'mount -t tmpfs -o size=1m rdpipe-full "$2" && exec "$0" $3 "$1" key "$2/out"' \
        "$RDRECV" "$port" "$C/full" "$dopt"
    wait_listen "$port" || t_fail "rdrecv not listening: $(cat "$C/rerr")"
    timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" key "$RD_T/in" 2> "$C/serr"; expect_rc $? 4 rdsend "$(cat "$C/serr")"
    wait_pid "$rp" 10; expect_rc $? 5 rdrecv "$(cat "$C/rerr")"
    expect_err "$C/rerr" rdrecv "cannot (write|flush).*(no space|quota)"
    grep -qi "no space" "$C/serr" || t_fail "rdsend does not say why: $(cat "$C/serr")"
    t_end
done

# ---- durability: exit 0 means the bytes are on the disk ----
# sync_trace WANT OUT FILE OPTS...: rdrecv OPTS PORT key [FILE] (stdout to OUT) under strace.
# WANT names which of "fdatasync" and "fsync" (the new file's directory) must succeed before
# rdrecv's last socket write (the CONFIRM); the others must not happen at all.
sync_trace() {
    local want=$1 out=$2 f=() last_send fds fs; [ -n "$3" ] && f=("$3"); shift 3
    port=$(free_port); rm -f "$C/trace"
    # (LeakSanitizer cannot work under ptrace: off for the traced process of a SAN build)
    start rp /dev/null "$out" "$C/rerr" strace -f -qq -o "$C/trace" -e trace=fdatasync,fsync,writev,sendto,sendmsg \
        -E "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$RDRECV" "$@" "$port" key "${f[@]}"
    wait_listen "$port" || t_fail "rdrecv not listening: $(cat "$C/rerr")"
    timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" key "$RD_T/in" 2> "$C/serr"; expect_rc $? 0 rdsend "$(cat "$C/serr")"
    wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
    grep -q 'sync.*= -1' "$C/trace" && t_fail "rdrecv $* ${f[*]}: a sync failed: $(grep sync "$C/trace" | tr '\n' '|')"
    last_send=$(grep -nE 'writev|sendto|sendmsg' "$C/trace" | tail -1 | cut -d: -f1)
    fds=$(grep -n 'fdatasync' "$C/trace" | head -1 | cut -d: -f1)
    fs=$(grep -nE ' fsync\(| fsync resumed' "$C/trace" | head -1 | cut -d: -f1)
    case " $want " in
        *" fdatasync "*) [ -n "$fds" ] && [ "$fds" -lt "${last_send:-0}" ] ||
                         t_fail "rdrecv $* ${f[*]}: no fdatasync before the CONFIRM: $(grep sync "$C/trace" | tr '\n' '|')" ;;
        *) [ -z "$fds" ] || t_fail "rdrecv $* ${f[*]}: fdatasync although nothing needs it" ;;
    esac
    case " $want " in
        *" fsync "*) [ -n "$fs" ] && [ "$fs" -lt "${last_send:-0}" ] ||
                     t_fail "rdrecv $* ${f[*]}: the new file's directory not fsynced before the CONFIRM: $(grep sync "$C/trace" | tr '\n' '|')" ;;
        *) [ -z "$fs" ] || t_fail "rdrecv $* ${f[*]}: fsync although nothing needs it" ;;
    esac
}
if ! command -v strace > /dev/null; then
    t_skip "durability: fdatasync before CONFIRM" "no strace"
else
    t_begin "durability: a new FILE is fdatasynced and its directory fsynced before CONFIRM (default, --sync, --direct)"
    for o in "" --sync --direct; do
        rm -f "$C/out"; sync_trace "fdatasync fsync" /dev/null "$C/out" $o
        expect_same_file "$RD_T/in" "$C/out" "data (${o:-default})"
    done
    t_end
    t_begin "durability: an existing FILE and stdout to a file fdatasynced; --no-sync and a pipe not"
    : > "$C/out"; sync_trace "fdatasync" /dev/null "$C/out"; expect_same_file "$RD_T/in" "$C/out" "data (existing FILE)"
    rm -f "$C/out2"; sync_trace "fdatasync" "$C/out2" ""; expect_same_file "$RD_T/in" "$C/out2" "data (stdout a file)"
    rm -f "$C/out"; sync_trace "" /dev/null "$C/out" --no-sync; expect_same_file "$RD_T/in" "$C/out" "data (--no-sync)"
    mkfifo "$C/pipe"; cat "$C/pipe" > "$C/out3" & catp=$!
    sync_trace "" "$C/pipe" "" --sync; wait "$catp"; expect_same_file "$RD_T/in" "$C/out3" "data (a pipe, --sync)"
    t_end
fi

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
# stdout is a regular file here, so it was flushed, and -v says for how long
grep -Eq '^rdrecv: flushed stdout to the disk in [0-9.]+ s' "$C/rerr" || t_fail "rdrecv -v does not report the flush: $(cat "$C/rerr")"
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
    # hashed and counted on both sides (dd's count on its stderr): the same hash of no bytes
    # on both sides is no transfer
    LC_ALL=C dd if="$C/rx" bs=1M 2> "$C/rx.dd" | sha256sum > "$C/rx.sha" & hr=$!
    LC_ALL=C dd if="$C/txh" bs=1M 2> "$C/tx.dd" | sha256sum > "$C/tx.sha" & ht=$!
    wait_listen "$port" || t_fail "rdrecv not listening"
    ( gen_stream "$size" "$seed" 2> "$C/gen.err" | tee "$C/txh" > "$C/tx"; echo "${PIPESTATUS[0]}" > "$C/gen.rc" ) &
    gp=$!; RD_PIDS+=("$gp")
    t0=$(now)
    start sp "$C/tx" /dev/null "$C/serr" "$RDSEND" 127.0.0.1 "$port" key
    wait_pid "$sp" "$(lim 300)"; expect_rc $? 0 rdsend "$(cat "$C/serr")"
    wait_pid "$rp" 20; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
    dt=$(elapsed "$t0")
    wait_pid "$gp" 10; wait_pid "$ht" 10; wait_pid "$hr" 10
    expect_empty "$C/serr" "rdsend stderr"; expect_empty "$C/rerr" "rdrecv stderr"
    [ "$(cat "$C/gen.rc" 2>/dev/null)" = 0 ] || t_fail "gen_stream failed: $(head -c 300 "$C/gen.err")"
    ntx=$(sed -n 's/^\([0-9]*\) bytes.*/\1/p' "$C/tx.dd"); nrx=$(sed -n 's/^\([0-9]*\) bytes.*/\1/p' "$C/rx.dd")
    [ "$ntx" = "$size" ] || t_fail "sent ${ntx:-no} bytes, not $size: $(tr '\n' ' ' < "$C/tx.dd")"
    [ "$nrx" = "$size" ] || t_fail "received ${nrx:-no} bytes, not $size: $(tr '\n' ' ' < "$C/rx.dd")"
    tx=$(cut -d' ' -f1 "$C/tx.sha"); rx=$(cut -d' ' -f1 "$C/rx.sha")
    [ -n "$tx" ] && [ "$tx" = "$rx" ] || t_fail "sha256 differs: sent $tx, received $rx (seed $seed)"
    t_note "$(awk -v s="$size" -v t="$dt" 'BEGIN{printf "%.0f MB/s incl. generation and hashing", s/t/1e6}')"
    t_end
fi
