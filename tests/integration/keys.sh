#!/bin/bash
# keys.sh - key hygiene and protocol versions: --gen-key, the weak-key warning, and a peer of
# protocol version 1 (the last v1 commit, built from git) named clearly in both directions.
. "$(dirname "$0")/../lib.sh"
unset RDPIPE_WEAK_KEY_OK   # this script checks the warning itself

V1_COMMIT=3acebe1   # the last commit that spoke protocol version 1
gen "$RD_T/in" 200000

t_begin "--gen-key prints 64 hex digits, fresh each time, and exits 0"
for tool in "$RDSEND" "$RDRECV"; do
    k1=$("$tool" --gen-key 2> "$C/err"); rc=$?
    expect_rc $rc 0 "$(basename "$tool") --gen-key"
    k2=$("$tool" --gen-key 2>> "$C/err")
    [[ $k1 =~ ^[0-9a-f]{64}$ ]] || t_fail "$(basename "$tool") --gen-key printed '$k1'"
    [ "$k1" != "$k2" ] || t_fail "two --gen-key calls printed the same key"
    expect_empty "$C/err" "--gen-key stderr"
done
t_end

t_begin "a key shorter than 16 characters: one warning line naming the risk, and it still works"
port=$(free_port)
start RP /dev/null "$C/out" "$C/rerr" "$RDRECV" "$port" secret
wait_listen "$port" || t_fail "rdrecv not listening"
timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" secret "$RD_T/in" 2> "$C/serr"
expect_rc $? 0 "rdsend with a short key" "$(cat "$C/serr")"
wait_pid "$RP" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_same_file "$RD_T/in" "$C/out" "data sent under a short key"
expect_err "$C/serr" rdsend "warning: the key has 6 characters; a key shorter than 16 is easy to guess, one connection a guess \(rdsend --gen-key makes a strong one\)"
expect_err "$C/rerr" rdrecv "warning: the key has 6 characters"
t_end

t_begin "a generated key: no warning, nothing on stderr"
key=$("$RDRECV" --gen-key); port=$(free_port)
RDPIPE_KEY=$key start RP /dev/null "$C/out" "$C/rerr" "$RDRECV" "$port"
wait_listen "$port" || t_fail "rdrecv not listening"
RDPIPE_KEY=$key timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" "$RD_T/in" 2> "$C/serr"
expect_rc $? 0 "rdsend with a generated key" "$(cat "$C/serr")"
wait_pid "$RP" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_empty "$C/serr" "rdsend stderr"
expect_empty "$C/rerr" "rdrecv stderr"
expect_same_file "$RD_T/in" "$C/out" "data"
t_end

t_begin "RDPIPE_KEY set and the key given as an argument too: the argument is the key, never FILE (no file named after the key)"
key=$("$RDRECV" --gen-key)
mkdir -p "$C/wd"
for form in "stdout" "file"; do
    port=$(free_port); rm -f "$C/out"
    if [ $form = stdout ]; then
        (cd "$C/wd" && RDPIPE_KEY=$key exec "$RDRECV" "$port" "$key") > "$C/out" 2> "$C/rerr" & RP=$!
    else
        (cd "$C/wd" && RDPIPE_KEY=$key exec "$RDRECV" "$port" "$key" "$C/out") > /dev/null 2> "$C/rerr" & RP=$!
    fi
    wait_listen "$port" || t_fail "rdrecv not listening: $(cat "$C/rerr")"
    (cd "$C/wd" && RDPIPE_KEY=$key timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" "$key" "$RD_T/in") 2> "$C/serr"
    expect_rc $? 0 "rdsend HOST PORT KEY FILE with RDPIPE_KEY set ($form)" "$(cat "$C/serr")"
    wait_pid "$RP" 10; expect_rc $? 0 "rdrecv PORT KEY with RDPIPE_KEY set ($form)" "$(cat "$C/rerr")"
    expect_same_file "$RD_T/in" "$C/out" "data ($form)"
    [ -z "$(ls -A "$C/wd")" ] || t_fail "files made in the working directory: $(ls -A "$C/wd" | cut -c1-20)"
done
t_end

t_begin "a key from RDPIPE_KEY: gone from /proc/PID/environ once read, and the process is not the user's to read (not dumpable)"
if [ "$RD_IS_ROOT" != 1 ] || ! command -v setpriv > /dev/null; then
    t_skip "needs root and setpriv (apt-get install util-linux)"
else
    port=$(free_port)
    key=k3y$(printf '%032d' 7)zz   # 38 characters, easy to find
    RDPIPE_KEY=$key setpriv --reuid=nobody --regid=nogroup --clear-groups "$RDRECV" "$port" > /dev/null 2> "$C/rerr" &
    rp=$!
    wait_listen "$port" || t_fail "rdrecv not listening: $(cat "$C/rerr")"
    rpid=$(pgrep -P $rp -x rdrecv || echo $rp)
    tr '\0' '\n' < "/proc/$rpid/environ" | grep -q "$key" && t_fail "the key is still in /proc/$rpid/environ"
    setpriv --reuid=nobody --regid=nogroup --clear-groups cat "/proc/$rpid/environ" > /dev/null 2>&1 &&
        t_fail "another process of the same user read /proc/$rpid/environ"
    kill_reap "$rp"
fi
t_end

t_begin "a malformed RDPIPE_STREAM_KEY is a usage error (exit 1)"
RDPIPE_STREAM_KEY=xyz timeout -k 2 10 "$RDSEND" 127.0.0.1 1 0123456789abcdef0123 /dev/null 2> "$C/serr"
expect_rc $? 1 "rdsend with RDPIPE_STREAM_KEY=xyz"
expect_err "$C/serr" rdsend "RDPIPE_STREAM_KEY must be 64 hex digits"
t_end

# ---- offline guessing: an impostor receiver records a real sender's AUTH ----
if /usr/bin/python3 "$RD_ROOT/tests/integration/fake_sender.py" --check > "$RD_T/pycheck" 2>&1; then
    printf '%s\n' secret password 123456 right-key-0123456789 letmein > "$RD_T/candidates"
    for guess in wrong-guess-0123456 right-key-0123456789; do
        if [ $guess = right-key-0123456789 ]; then
            t_begin "control: an impostor that guessed the key right sees its one guess check"
        else
            t_begin "an impostor receiver cannot test key guesses offline (the right key among them)"
        fi
        port=$(free_port)
        start GP /dev/null "$C/gout" "$C/gerr" /usr/bin/python3 "$RD_ROOT/tests/integration/guess.py" \
            "$port" "$guess" "$RD_T/candidates"
        wait_listen "$port" || t_fail "the impostor did not listen: $(cat "$C/gerr")"
        timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" right-key-0123456789 "$RD_T/in" 2> "$C/serr"
        expect_nonzero $? "rdsend to an impostor"
        wait_pid "$GP" 10; expect_rc $? 0 "the impostor" "$(cat "$C/gout" "$C/gerr")"
        if [ $guess = right-key-0123456789 ]; then
            grep -qx "committed guess: right" "$C/gout" || t_fail "the control case does not see its right guess: $(cat "$C/gout")"
            grep -q "^offline: 5 of 5 candidates check" "$C/gout" || t_fail "$(cat "$C/gout")"
        else
            grep -qx "committed guess: wrong" "$C/gout" || t_fail "$(cat "$C/gout")"
            grep -qx "offline: 0 of 5 candidates check" "$C/gout" ||
                t_fail "a guess checked offline: $(cat "$C/gout")"
        fi
        t_end
    done
else
    t_skip "offline guessing" "$(cat "$RD_T/pycheck")"
fi

# ---- a version 1 peer: the real thing, built from the last v1 commit ----
V1=$RD_ROOT/tests/out/v1-$V1_COMMIT
if ! [ -x "$V1/bin/rdrecv" ]; then
    if git -C "$RD_ROOT" cat-file -e "$V1_COMMIT^{commit}" 2>/dev/null; then
        rm -rf "$V1.src" && mkdir -p "$V1.src" &&
            git -C "$RD_ROOT" archive "$V1_COMMIT" | tar -x -C "$V1.src" &&
            make -C "$V1.src" -s -j2 tools OUT="$V1" BINDIR="$V1/bin" RD_COMMIT=$V1_COMMIT > "$V1.log" 2>&1
        rm -rf "$V1.src"
    fi
fi
if ! [ -x "$V1/bin/rdrecv" ]; then
    t_skip "version 1 peers" "cannot build commit $V1_COMMIT (no git history here?) $(tail -3 "$V1.log" 2>/dev/null | tr '\n' ' ')"
    exit 0
fi

t_begin "this rdsend against a version 1 rdrecv: exit 4 naming both versions"
port=$(free_port)
start RP /dev/null "$C/out" "$C/rerr" "$V1/bin/rdrecv" --timeout 5 "$port" old-peer-key-0123456789
wait_listen "$port" || t_fail "v1 rdrecv not listening"
timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" old-peer-key-0123456789 "$RD_T/in" 2> "$C/serr"
expect_rc $? 4 "rdsend to a v1 rdrecv"
expect_err "$C/serr" rdsend "speaks rdpipe protocol version 1, this is version 2"
kill_reap "$RP"
expect_empty "$C/out" "v1 rdrecv output"
t_end

t_begin "a version 1 rdsend against this rdrecv: both name the versions, rdrecv keeps waiting"
port=$(free_port)
start RP /dev/null "$C/out" "$C/rerr" "$RDRECV" "$port" old-peer-key-0123456789
wait_listen "$port" || t_fail "rdrecv not listening"
timeout -k 2 "$(lim 20)" "$V1/bin/rdsend" 127.0.0.1 "$port" old-peer-key-0123456789 "$RD_T/in" 2> "$C/serr"
expect_rc $? 4 "v1 rdsend to this rdrecv"
grep -q "version 2" "$C/serr" || t_fail "the v1 rdsend was not told about version 2: $(cat "$C/serr")"
wait_for_text "$C/rerr" . 5
expect_err "$C/rerr" rdrecv "speaks rdpipe protocol version 1, this is version 2"
kill -0 "$RP" 2>/dev/null || t_fail "rdrecv gave up after the v1 sender"
timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" old-peer-key-0123456789 "$RD_T/in" 2> "$C/serr2"
expect_rc $? 0 "the right v2 sender afterwards" "$(cat "$C/serr2")"
wait_pid "$RP" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_same_file "$RD_T/in" "$C/out" "data from the v2 sender"
t_end
