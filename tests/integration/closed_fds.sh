#!/bin/bash
# closed_fds.sh - tools started with stdin, stdout or stderr closed (`<&-`, cron): the closed
# number must never become the next file or socket a tool opens. Before 2026-11-27 rdrecv's
# FILE took a closed stderr's number and got its messages (exit 0, a corrupt file), and
# rdsend's connection took a closed stdin's and read itself (both ends hung).
. "$(dirname "$0")/../lib.sh"

# receiver_with_input: $C/in (3 MB), and an rdrecv (pid rp) on $port writing to $C/out
receiver_with_input() {
    gen "$C/in" 3000000
    port=$(free_port)
    start rp /dev/null "$C/out" "$C/rerr" "$RDRECV" "$port" key
    wait_listen "$port" || t_fail "rdrecv not listening"
}

t_begin "rdrecv FILE with stderr closed: the messages do not land in FILE (a wrong key first, -v)"
gen "$C/in" 3000000
port=$(free_port)
( exec "$RDRECV" -v "$port" key "$C/out" 2>&- ) & rp=$!; RD_PIDS+=("$rp")
wait_listen "$port" || t_fail "rdrecv not listening"
timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" wrong-key "$C/in" 2> "$C/serr1"
expect_rc $? 3 "rdsend with the wrong key" "$(cat "$C/serr1")"
timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" key "$C/in" 2> "$C/serr"
expect_rc $? 0 rdsend "$(cat "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv
expect_same_file "$C/in" "$C/out" "FILE"
t_end

t_begin "rdsend with stdin closed: exit 5 'cannot read stdin' at once; the receiver waits on"
receiver_with_input
timeout -k 2 "$(lim 10)" "$RDSEND" 127.0.0.1 "$port" key <&- 2> "$C/serr"
expect_rc $? 5 "rdsend <&-"
expect_err "$C/serr" rdsend "cannot read stdin: Bad file descriptor"
kill -0 "$rp" 2>/dev/null || t_fail "rdrecv died: $(cat "$C/rerr")"
timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" key < "$C/in" 2> "$C/serr"
expect_rc $? 0 "rdsend after it" "$(cat "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_same_file "$C/in" "$C/out" "stdout"
t_end

t_begin "rdsend with stdin open for writing only (0>>f): exit 5 'cannot read stdin' before connecting; rdrecv's FILE keeps its bytes"
gen "$C/in" 3000000
cp "$C/in" "$C/keep"
port=$(free_port)
start rp /dev/null /dev/null "$C/rerr" "$RDRECV" --timeout "$(lim 3)" "$port" key "$C/keep"
wait_listen "$port" || t_fail "rdrecv not listening"
timeout -k 2 "$(lim 10)" "$RDSEND" 127.0.0.1 "$port" key 0>> "$C/wo" 2> "$C/serr"
expect_rc $? 5 "rdsend 0>>wo"
expect_err "$C/serr" rdsend "^rdsend: cannot read stdin: Bad file descriptor$"
wait_pid "$rp" "$(lim 10)"; expect_rc $? 2 "rdrecv (no sender got in)" "$(cat "$C/rerr")"
expect_same_file "$C/in" "$C/keep" "rdrecv's FILE"
t_end

t_begin "--ready-fd N that is not open when rdrecv starts: exit 5 at once, one line; FILE (which would get that number) untouched"
printf 'PRECIOUS\n' > "$C/keep8"
timeout -k 2 "$(lim 10)" bash -c 'exec 3>&-; exec "$0" --timeout 2 --ready-fd 3 0 key "$1"' "$RDRECV" "$C/keep8" 2> "$C/rerr"
expect_rc $? 5 "rdrecv --ready-fd 3 with fd 3 closed"
expect_err "$C/rerr" rdrecv "^rdrecv: cannot write the port to --ready-fd 3: Bad file descriptor$"
[ "$(cat "$C/keep8")" = PRECIOUS ] || t_fail "FILE changed: $(od -c "$C/keep8" | head -2 | tr '\n' ' ')"
timeout -k 2 "$(lim 10)" "$RDRECV" --timeout 2 --ready-fd 3 0 key "$C/keep8" 2> "$C/rerr" 3< /dev/null
expect_rc $? 5 "rdrecv --ready-fd 3 with fd 3 read-only"
expect_err "$C/rerr" rdrecv "cannot write the port to --ready-fd 3: Bad file descriptor$"
t_end

t_begin "rdsend from a file on stdin leaves its offset after what it sent, as cat does ({ rdsend; cmd; } < file)"
receiver_with_input
off=$( { python3 -c 'import os; os.lseek(0, 1000, 0)'; "$RDSEND" 127.0.0.1 "$port" key 2> "$C/serr"; echo "rc=$?"
         python3 -c 'import os; print(os.lseek(0, 0, 1))'; } < "$C/in" )
[ "$(echo $off)" = "rc=0 3000000" ] || t_fail "rdsend's status and the offset after it: '$(echo $off)' $(cat "$C/serr")"
wait_pid "$rp" "$(lim 10)"; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
tail -c +1001 "$C/in" > "$C/want"
expect_same_file "$C/want" "$C/out" "what arrived (from offset 1000)"
t_end

t_begin "rdrecv with stdout closed and no FILE: exit 5 'cannot write stdout' before it listens"
port=$(free_port)
timeout -k 2 "$(lim 10)" "$RDRECV" --ready-fd 3 0 key >&- 2> "$C/rerr" 3> "$C/port"
expect_rc $? 5 "rdrecv >&-"
expect_err "$C/rerr" rdrecv "cannot write stdout: Bad file descriptor"
expect_empty "$C/port" "the port it listened on"
t_end

t_begin "rdrecv with stdout open for reading only ('1< file'): exit 5 before it listens"
printf 'x' > "$C/ro"
timeout -k 2 "$(lim 10)" "$RDRECV" --ready-fd 3 0 key 1< "$C/ro" 2> "$C/rerr" 3> "$C/port"
expect_rc $? 5 "rdrecv 1< file"
expect_err "$C/rerr" rdrecv "cannot write stdout: it is open for reading only"
expect_empty "$C/port" "the port it listened on"
t_end

t_begin "rdpipe with stdin closed: its first command finds stdin closed too"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdpipe" 'wc -c' <&- > "$C/o" 2> "$C/e"
expect_rc $? 1 "rdpipe 'wc -c' <&-"
grep -q "^wc: .*Bad file descriptor" "$C/e" || t_fail "wc did not find stdin closed: $(head -c 400 "$C/e" | tr '\n' '|')"
grep -q "^rdpipe: .*'wc -c' failed with exit status 1" "$C/e" || t_fail "rdpipe does not say wc failed: $(head -c 400 "$C/e" | tr '\n' '|')"
t_end

t_begin "--ready-fd that cannot be written: exit 5 with one line, not a silent wait"
timeout -k 2 "$(lim 10)" "$RDRECV" --ready-fd 9 0 key 9>&- 2> "$C/rerr" > /dev/null
expect_rc $? 5 "rdrecv --ready-fd 9 (closed)"
expect_err "$C/rerr" rdrecv "cannot write the port to --ready-fd 9: Bad file descriptor"
t_end

t_begin "stdout that cannot take --help, --version or --gen-key: exit 5 with one line"
for tool in rdsend rdrecv rdpipe rdcp rdbench rdcheck; do
    for opt in --help --version; do
        timeout 5 "$RD_BIN/$tool" $opt > /dev/full 2> "$C/e"
        expect_rc $? 5 "$tool $opt > /dev/full"
        expect_err "$C/e" "$tool" "cannot write stdout: No space left on device"
    done
done
timeout 5 "$RDSEND" --gen-key > /dev/full 2> "$C/e"
expect_rc $? 5 "rdsend --gen-key > /dev/full"
expect_err "$C/e" rdsend "cannot write the key: No space left on device"
t_end

# a write that failed before the exit's check: named once, with its cause (rdbench said it
# twice, the second time "write error"; rdcheck only "write error")
t_begin "rdbench's table and rdcheck's lines into /dev/full: exit 5, one line naming ENOSPC"
mkdir -p "$C/io"
timeout 60 "$RD_BIN/rdbench" --io "$C/io" --io-size 16M > /dev/full 2> "$C/e"
expect_rc $? 5 "rdbench --io > /dev/full"
expect_err "$C/e" rdbench "^rdbench: cannot write to stdout: No space left on device$"
timeout 20 "$RD_BIN/rdcheck" --transport tcp > /dev/full 2> "$C/e"
expect_rc $? 5 "rdcheck > /dev/full"
expect_err "$C/e" rdcheck "^rdcheck: cannot write stdout: No space left on device$"
t_end

# ---------------------------------------------------------------- ulimit -n
# Out of descriptors a tool stopped at a random point (rdrecv: `pipe: Too many open files`,
# libgcrypt: an abort at ulimit -n 4), or, out of them while listening, printed `accept: Too many
# open files` ten times a second until its --timeout (for ever without one), its sender waiting.
t_begin "ulimit -n 8 and no higher hard limit: each tool says so in one line and exits 5 before anything else"
for t in rdsend rdrecv rdpipe rdcp rdbench rdcheck; do
    timeout 20 prlimit --nofile=8:8 "$RD_BIN/$t" --version > "$C/o" 2> "$C/e"
    expect_rc $? 5 "$t under ulimit -n 8" "$(cat "$C/e")"
    expect_err "$C/e" "$t" "^$t: ulimit -n is 8 \(hard limit 8\): too few open files, at least 16 are needed$"
    expect_empty "$C/o" "$t's stdout"
done
t_end

t_begin "ulimit -n 8 with room below the hard limit: rdsend and rdrecv raise it, the stream arrives whole"
gen "$C/in" 3000000
port=$(free_port)
start rp /dev/null "$C/out" "$C/rerr" prlimit --nofile=8:4096 "$RDRECV" --streams 2 "$port" key
wait_listen "$port" || t_fail "rdrecv not listening: $(cat "$C/rerr")"
timeout -k 2 "$(lim 20)" prlimit --nofile=8:4096 "$RDSEND" --streams 2 127.0.0.1 "$port" key "$C/in" 2> "$C/serr"
expect_rc $? 0 rdsend "$(cat "$C/serr")"
wait_pid "$rp" "$(lim 10)"; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_same_file "$C/in" "$C/out" "the stream"
expect_empty "$C/rerr" "rdrecv's stderr"
t_end

t_begin "rdrecv out of descriptors while it listens (prlimit on the running process): exit 5 at once naming ulimit -n, not a wait for its --timeout"
gen "$C/in" 100000
port=$(free_port)
# (under ASan, LeakSanitizer's look at exit needs a descriptor too)
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" start rp /dev/null "$C/out" "$C/rerr" "$RDRECV" --timeout "$(lim 20)" "$port" key
wait_listen "$port" || t_fail "rdrecv not listening: $(cat "$C/rerr")"
# fds 0-2 are taken: a limit of 3 leaves it no number for the connection
prlimit --pid "$rp" --nofile=3:3 || t_fail "prlimit --pid failed"
t0=$(now)
timeout -k 2 "$(lim 30)" "$RDSEND" --timeout 2 127.0.0.1 "$port" key "$C/in" 2> "$C/serr"; src=$?
wait_pid "$rp" "$(lim 5)"; rrc=$?
expect_rc $rrc 5 "rdrecv out of descriptors" "$(cat "$C/rerr")"
expect_err "$C/rerr" rdrecv "^rdrecv: cannot take a connection: out of open files \(ulimit -n is 3\)$"
expect_rc $src 2 "rdsend turned away" "$(cat "$C/serr")"
expect_within "$(elapsed "$t0")" "$(lim 10)" "both ends"
t_end

# ---------------------------------------------------------------- ulimit -v
# glibc gave each thread that contends for malloc an arena reserving 64 MiB of address space:
# under ulimit -v 200000 two of them left too little, and rdcp's receiver died 'out of memory'
# in the middle of a tree, where under 100000 (no arena fits: all share one) it went through.
t_begin "ulimit -v 100000, 200000, 300000: rdcp -r of a tree of 300 files (two of 9 MiB) arrives whole, exit 0 (one malloc arena; before, 64 MiB of address space each)"
if ldd "$RD_BIN/rdcp" | grep -q 'lib[at]san'; then
    t_skip "a sanitizer's shadow memory does not fit under ulimit -v"
else
    mkdir -p "$C/av/src/d1" "$C/av/src/d2"
    for i in $(seq 150); do head -c $((RANDOM % 20000 + 1)) /dev/urandom > "$C/av/src/d1/f$i"; head -c $((RANDOM % 3000)) /dev/urandom > "$C/av/src/d2/g$i"; done
    gen "$C/av/src/big1" 9437184; gen "$C/av/src/big2" 9437185
    for v in 100000 200000 300000; do
        rm -rf "$C/av/dst" && mkdir "$C/av/dst"
        (ulimit -v "$v" && exec timeout -k 2 "$(lim 60)" "$RD_BIN/rdcp" -r "$C/av/src" "$C/av/dst/") > "$C/o" 2> "$C/e"
        expect_rc $? 0 "rdcp -r under ulimit -v $v" "$(head -3 "$C/e")"
        diff -r "$C/av/src" "$C/av/dst/src" > /dev/null || t_fail "ulimit -v $v: the tree differs"
        expect_empty "$C/e" "rdcp's stderr under ulimit -v $v"
    done
fi
t_end
