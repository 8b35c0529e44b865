#!/bin/bash
# pipeline.sh - what rdpipe does when a segment fails, against what bash's `set -o pipefail`
# pipe does, with local segments (no ssh): a command that fails on its own still hands on
# what it wrote, the exit status is the last failing command's, and the cause is named, not
# its consequences. Each case runs a few times: the builds before failed them by timing.
. "$(dirname "$0")/../lib.sh"

RDPIPE=$RD_BIN/rdpipe
rdp() { timeout -k 2 "$(lim 30)" "$RDPIPE" "$@"; }
W=$RD_T/work   # the cases' files, kept from case to case ($C is emptied at each)
mkdir -p "$W" && cd "$W" || exit 2
printf 'a\n' > da && printf 'b\n' > db && head -c $((1 << 20)) /dev/urandom > r1m

t_begin "a command that fails on its own (diff: exit 1) still delivers what it wrote; the next segment runs to its end; exit 1, one line naming it"
want=$(diff da db)
for round in 1 2 3 4 5; do
    rdp 'diff da db' 'cat -' < /dev/null > o 2> e
    expect_rc $? 1 "round $round: rdpipe 'diff da db' 'cat -'"
    [ "$(cat o)" = "$want" ] || t_fail "round $round: the diff did not arrive: '$(tr '\n' '|' < o)'"
    expect_err e rdpipe "^rdpipe: localhost: command 'diff da db' failed with exit status 1$"
done
t_end

t_begin "1 MiB, then exit 1: all of it arrives (wc -c); 'echo new; exit 3' into '>file': the file holds it"
for round in 1 2 3; do
    rdp 'cat r1m; exit 1' 'wc -c' < /dev/null > o 2> e
    expect_rc $? 1 "round $round: rdpipe 'cat r1m; exit 1' 'wc -c'"
    [ "$(tr -d ' ' < o)" = 1048576 ] || t_fail "round $round: wc -c said '$(cat o)'"
done
echo old > m5
rdp 'echo new; exit 3' '>m5' < /dev/null > o 2> e
expect_rc $? 3 "rdpipe 'echo new; exit 3' '>m5'"
[ "$(cat m5)" = new ] || t_fail "m5 holds '$(cat m5)'"
t_end

t_begin "two failing commands: the last one's status, as pipefail gives it"
for round in 1 2 3 4; do
    rdp 'exit 3' 'cat -' 'exit 4' < /dev/null > o 2> e
    expect_rc $? 4 "round $round: rdpipe 'exit 3' 'cat -' 'exit 4'"
    expect_err e rdpipe "^rdpipe: localhost: command 'exit 4' failed with exit status 4$"
done
t_end

t_begin "the last command killed by SIGPIPE (rdpipe ... | head): 141, naming it, as bash gives it"
for round in 1 2 3; do
    rdp 'cat /dev/zero' 'cat -' < /dev/null 2> e | head -c 10 > /dev/null
    expect_rc "${PIPESTATUS[0]}" 141 "round $round: rdpipe 'cat /dev/zero' 'cat -' | head -c 10"
    expect_err e rdpipe "^rdpipe: localhost: command 'cat -' was killed by signal 13$"
done
t_end

t_begin "the cause, not its consequence: stdout /dev/full and stdin closed are exit 5 (local I/O), not the peer's 4"
for round in 1 2 3; do
    rdp 'echo x' cat < /dev/null > /dev/full 2> e
    expect_rc $? 5 "round $round: rdpipe 'echo x' cat > /dev/full"
    expect_err e rdpipe "cannot write stdout: No space left on device$"
    rdp cat cat <&- > o 2> e
    expect_rc $? 5 "round $round: rdpipe cat cat <&-"
    expect_err e rdpipe "cannot read stdin: Bad file descriptor$"
done
t_end

t_begin "a command's control bytes are shown as \\ooo on its one line"
rdp $'echo a\nexit 3 # \e[31mred' 'cat -' < /dev/null > o 2> e
expect_rc $? 3 "rdpipe with a newline and an escape in the command"
expect_err e rdpipe "^rdpipe: localhost: command 'echo a\\\\012exit 3 # \\\\033\[31mred' failed with exit status 3$"
[ "$(cat o)" = a ] || t_fail "the output: '$(cat o)'"
t_end

t_begin "stdout's reader goes away behind a last segment that is a relay ('cat') or remote (a stand-in ssh): 141, as bash gives it"
printf '#!/bin/bash\n# a stand-in ssh: skip its options and the host, run the command here\nwhile [ $# -gt 0 ]; do case $1 in -o) shift 2;; --) shift; break;; -*) shift;; *) break;; esac; done\nshift\nexport SSH_CONNECTION="127.0.0.1 1 127.0.0.1 22" PATH="%s:$PATH"\nexec bash -c "$*"\n' "$RD_BIN" > fakessh
chmod +x fakessh
for pipeline in "'seq 10000000' cat" "--ssh ./fakessh 'seq 10000000' 127.0.0.1:'tr 1 2'" "--ssh ./fakessh 127.0.0.1:'seq 10000000'"; do
    eval "rdp $pipeline" < /dev/null 2> e | head -1 > /dev/null
    expect_rc "${PIPESTATUS[0]}" 141 "rdpipe $pipeline | head -1"
    expect_err e rdpipe "^rdpipe: the reader of stdout went away \(SIGPIPE\)$"
done
t_end

t_begin "a command that stops reading early (head -c 10M) still hands on all it wrote, and what follows runs to its end; the hops before it are cut: 141 (SIGPIPE), or the command's own status"
for round in 1 2 3; do
    rdp 'head -c 100M /dev/zero' 'head -c 10M' 'wc -c' < /dev/null > o 2> e
    expect_rc $? 141 "round $round: rdpipe 'head -c 100M /dev/zero' 'head -c 10M' 'wc -c'"
    [ "$(tr -d ' ' < o)" = 10485760 ] || t_fail "round $round: wc -c said '$(cat o)'"
    expect_err e rdpipe "^rdpipe: localhost: the stream of localhost 'head -c 100M /dev/zero' was cut: localhost 'head -c 10M' stopped reading \(SIGPIPE\)$"
    rdp 'head -c 100M /dev/zero' 'head -c 10M; exit 3' 'wc -c' < /dev/null > o 2> e
    expect_rc $? 3 "round $round: ... 'head -c 10M; exit 3' ..."
    [ "$(tr -d ' ' < o)" = 10485760 ] || t_fail "round $round, exit 3: wc -c said '$(cat o)'"
done
# it closes its input and goes on for a second: not stopped (it was, 200 ms after)
rdp yes 'exec 0<&-; sleep 1; echo x' < /dev/null > o 2> e
expect_rc $? 141 "rdpipe yes 'exec 0<&-; sleep 1; echo x'"
[ "$(cat o)" = x ] || t_fail "its output: '$(cat o)'"
t_end

# A hop whose stream breaks (its rdsend killed) must not end, in the segment after it, the way a
# whole stream ends: with an EOF on the command's stdin. 'cat > part && mv part final' must
# never make final (before 2026-11-29 the agent's rdrecv wrote straight into the pipe, its
# death was the EOF, and final held the first part of the stream in 3 of 3 runs).
t_begin "a hop cut mid-stream (its rdsend killed): the command after it never sees an EOF, 'cat > part && mv part final' makes no final"
rm -f fifo && mkfifo fifo
# descendants PID NAME: the processes called NAME below PID
descendants() {
    local p q
    for p in $(pgrep -x "$2"); do
        q=$p
        while [ "$q" -gt 1 ]; do
            q=$(awk '{ print $4 }' "/proc/$q/stat" 2> /dev/null || echo 1)
            [ "$q" = "$1" ] && { echo "$p"; break; }
        done
    done
}
for round in 1 2 3; do
    rm -f part final
    rdp 'cat fifo' 'cat > part && mv part final' < /dev/null > o 2> e & rp=$!
    exec 7<> fifo   # the first segment's input (read-write: the open never waits): 4 MiB now, then the kill
    timeout 20 head -c $((4 << 20)) /dev/urandom >&7
    for ((i = 0; i < 100; i++)); do [ "$(stat -c %s part 2> /dev/null || echo 0)" -ge $((1 << 20)) ] && break; sleep 0.05; done
    victim=$(descendants $rp rdsend)
    [ -n "$victim" ] || t_fail "round $round: no rdsend of the first hop found to kill"
    kill -KILL $victim 2> /dev/null
    wait $rp; rc=$?
    exec 7>&-
    [ $rc = 0 ] && t_fail "round $round: rdpipe exit 0 after its hop was cut"
    [ -e final ] && t_fail "round $round: final was made, $(stat -c %s final) bytes (rdpipe exit $rc: $(tr '\n' '|' < e))"
done
t_end

# A file segment whose word bash expands is opened by bash, as a shell would: before
# 2026-11-29 '< $F' ran as a command that only opened the file (nothing out, exit 0), and
# '> "out$(echo 7)"' made a file named literally.
t_begin "file segments that bash expands: '< \$F', '< m\\ 5', '> \"out\$(echo 7)\"', '>> \$F.log', '< <(cmd)', '> >(cmd)'; '<m5 tr x y' is still a command"
printf 'x\n' > m5 && printf 'spaced\n' > 'm 5' && rm -f out7 m5.log
F=m5 rdp '< $F' 'wc -c' < /dev/null > o 2> e
expect_rc $? 0 "rdpipe '< \$F' 'wc -c'"; [ "$(tr -d ' ' < o)" = 2 ] || t_fail "'< \$F' gave '$(cat o)'"
rdp '< m\ 5' 'cat' < /dev/null > o 2> e
expect_rc $? 0 "rdpipe '< m\\ 5' cat"; [ "$(cat o)" = spaced ] || t_fail "'< m\\ 5' gave '$(cat o)'"
rdp 'cat m5' '> "out$(echo 7)"' < /dev/null > o 2> e
expect_rc $? 0 "rdpipe 'cat m5' '> \"out\$(echo 7)\"'"; [ "$(cat out7 2> /dev/null)" = x ] || t_fail "no out7: $(ls | tr '\n' ' ')"
F=m5 rdp 'cat m5' '>> $F.log' < /dev/null > o 2> e && F=m5 rdp 'cat m5' '>> $F.log' < /dev/null > o 2> e
expect_rc $? 0 "rdpipe 'cat m5' '>> \$F.log'"; [ "$(cat m5.log 2> /dev/null)" = "$(printf 'x\nx')" ] || t_fail "m5.log: '$(cat m5.log)'"
rdp '< <(echo procsub)' 'cat' < /dev/null > o 2> e
expect_rc $? 0 "rdpipe '< <(echo procsub)' cat"; [ "$(cat o)" = procsub ] || t_fail "'< <(echo procsub)' gave '$(cat o)'"
rm -f wcout; rdp 'echo hello' '> >(wc -c > wcout)' < /dev/null > o 2> e
expect_rc $? 0 "rdpipe 'echo hello' '> >(wc -c > wcout)'"; [ "$(cat wcout 2> /dev/null)" = 6 ] || t_fail "wcout: '$(cat wcout 2> /dev/null)'"
rdp '<m5 tr x y' 'cat' < /dev/null > o 2> e
expect_rc $? 0 "rdpipe '<m5 tr x y' cat"; [ "$(cat o)" = y ] || t_fail "'<m5 tr x y' gave '$(cat o)'"
rdp '< $NOPE/m5' 'cat' < /dev/null > o 2> e
expect_rc $? 1 "rdpipe '< \$NOPE/m5' cat"; grep -q 'No such file or directory' e || t_fail "no reason: $(cat e)"
t_end

t_begin "a segment that leaves a process running: rdpipe waits for it, and says which after 5 s, once; exit 0"
rdp '(sleep 10 > /dev/null 2>&1 &); echo x' 'cat -' < /dev/null > o 2> e
expect_rc $? 0 "rdpipe with a process left behind"
[ "$(cat o)" = x ] || t_fail "output '$(cat o)'"
expect_err e rdpipe "^rdpipe: localhost: waiting for 1 process the command left running \([0-9]+ sleep\): rdpipe waits for every process a segment starts; Ctrl-C ends them$"
t_end

# bash under sshd reads ~/.bashrc even for -c (SSH_CLIENT set, shell level 1 once the agent was
# exec'd): a .bashrc that prints put its line into the stream, exit 0 (before 2026-11-29)
t_begin "a ~/.bashrc that prints, as sshd would start the segments' bash: nothing of it in the stream"
mkdir -p "$C/home" && echo 'echo hello from bashrc' > "$C/home/.bashrc"
env SHLVL=0 SSH_CLIENT='10.0.0.1 40000 22' HOME="$C/home" timeout -k 2 "$(lim 30)" "$RDPIPE" 'seq 3' 'cat -' < /dev/null > o 2> e
expect_rc $? 0 "rdpipe 'seq 3' 'cat -' under an sshd's environment"
[ "$(cat o)" = "$(seq 3)" ] || t_fail "the stream holds: $(tr '\n' '|' < o)"
t_end

t_begin "--remote-path that names a directory: 255, 'the rdpipe there cannot be run', not 'cannot log in' (rdpipe and rdcp)"
[ -x "$W/fakessh" ] || t_fail "no stand-in ssh"
rdp --ssh "$W/fakessh" --remote-path / h1:cat < /dev/null > o 2> e
expect_rc $? 255 "rdpipe --remote-path /"
grep -q "^rdpipe: h1: cannot start the agent to run h1 'cat' (ssh exited with status 126); the rdpipe there cannot be run (see --remote-path)$" e ||
    t_fail "rdpipe: $(tr '\n' '|' < e)"
timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$W/fakessh" --remote-path / h1:m5 "$C/x" > o 2> e
expect_rc $? 255 "rdcp --remote-path /"
grep -q "^rdcp: h1: cannot start the agent (ssh exited with status 126; the rdpipe there cannot be run, see --remote-path)$" e ||
    t_fail "rdcp: $(tr '\n' '|' < e)"
t_end

t_begin "--remote-path naming a program that is not rdpipe (exits 0 at once): 'cannot start the agent', not 'cannot log in (status 0)'"
rdp --ssh "$W/fakessh" --remote-path /bin/true h1:cat < /dev/null > o 2> e
expect_rc $? 255 "rdpipe --remote-path /bin/true"
grep -q "^rdpipe: h1: cannot start the agent to run h1 'cat' (ssh exited with status 0); it ended without speaking as an rdpipe agent (see --remote-path)$" e ||
    t_fail "rdpipe: $(tr '\n' '|' < e)"
timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$W/fakessh" --remote-path /bin/true h1:m5 "$C/x" > o 2> e
expect_rc $? 255 "rdcp --remote-path /bin/true"
grep -q "^rdcp: h1: cannot start the agent (ssh exited with status 0; it ended without speaking as an rdpipe agent, see --remote-path)$" e ||
    t_fail "rdcp: $(tr '\n' '|' < e)"
t_end

t_begin "'> FILE' after a failed input: FILE untouched (written as rdrecv FILE: truncated only once a sender is in); an unwritable one named"
printf 'precious\n' > "$C/keep"
timeout -k 2 "$(lim 30)" "$RDPIPE" "< $C/missing" "> $C/keep" < /dev/null > o 2> e
expect_rc $? 5 "rdpipe '< missing' '> keep'"
[ "$(cat "$C/keep")" = precious ] || t_fail "keep was changed: '$(head -c 40 "$C/keep")'"
timeout -k 2 "$(lim 30)" "$RDPIPE" 'seq 3' "> $C/new" < /dev/null > o 2> e
expect_rc $? 0 "rdpipe 'seq 3' '> new'"
[ "$(cat "$C/new")" = "$(seq 3)" ] || t_fail "new holds: $(tr '\n' '|' < "$C/new")"
# '> -' is a file named -, as in bash (rdrecv's FILE '-' is stdout: the stream went nowhere, exit 0)
(cd "$C" && timeout -k 2 "$(lim 30)" "$RDPIPE" 'seq 3' '> -' < /dev/null > o 2> e)
expect_rc $? 0 "rdpipe 'seq 3' '> -'"
[ "$(cat "$C/-" 2> /dev/null)" = "$(seq 3)" ] || t_fail "no file '-' with the stream: $(ls -A "$C" | tr '\n' ' ') $(cat "$C/e")"
timeout -k 2 "$(lim 30)" "$RDPIPE" 'seq 3' "> $C/no/such/dir/f" < /dev/null > o 2> e
expect_rc $? 5 "rdpipe 'seq 3' '> no/such/dir/f'"
grep -q "cannot open output file '$C/no/such/dir/f': No such file or directory" e || t_fail "the message: $(tr '\n' '|' < e)"
t_end

t_begin "Ctrl-C ends what a segment left running, a setsid'ed process included (it left the segment's process group)"
"$RDPIPE" '(setsid sleep 4567 > /dev/null 2>&1 &); echo x' 'cat -' < /dev/null > o 2> e & rp=$!
for ((i = 0; i < 100; i++)); do pgrep -f 'sleep 4567' > /dev/null && break; sleep 0.05; done
pgrep -f 'sleep 4567' > /dev/null || t_fail "the setsid'ed sleep never started"
sleep 0.5
kill -INT $rp; wait $rp; rc=$?
expect_rc $rc 130 "rdpipe after Ctrl-C"
for ((i = 0; i < 60; i++)); do pgrep -f 'sleep 4567' > /dev/null || break; sleep 0.05; done
pgrep -f 'sleep 4567' > /dev/null && { t_fail "the setsid'ed sleep outlived rdpipe"; pkill -f 'sleep 4567'; }
t_end
