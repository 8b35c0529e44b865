#!/bin/bash
# cli.sh - command line: help, version, usage errors (exit 1), --transport rdma without a
# device (exit 101), and the key staying out of argv with --key-file / RDPIPE_KEY.
. "$(dirname "$0")/../lib.sh"

t_begin "--help, -h, --version, -V exit 0 on stdout"
for tool in rdsend rdrecv; do
    bin=$RD_BIN/$tool
    for opt in --help -h; do
        timeout 5 "$bin" $opt > "$C/o" 2> "$C/e"; expect_rc $? 0 "$tool $opt"
        grep -q "^usage: $tool " "$C/o" || t_fail "$tool $opt: no usage line"
        grep -q 'exit codes' "$C/o" || t_fail "$tool $opt: exit codes not documented"
        expect_empty "$C/e" "$tool $opt stderr"
    done
    for opt in --version -V; do
        timeout 5 "$bin" $opt > "$C/o" 2> "$C/e"; expect_rc $? 0 "$tool $opt"
        grep -q "^$tool (rdpipe) " "$C/o" || t_fail "$tool $opt: $(cat "$C/o")"
    done
done
t_end

# usage TOOL PATTERN ARGS... : exit 1 with one "TOOL: ..." line matching PATTERN
usage() {
    local tool=$1 pat=$2; shift 2
    timeout 5 env -u RDPIPE_KEY "$RD_BIN/$tool" "$@" > "$C/o" 2> "$C/e" < /dev/null
    expect_rc $? 1 "$tool $*"
    expect_err "$C/e" "$tool" "$pat"
    expect_empty "$C/o" "$tool $* stdout"
}
t_begin "usage errors exit 1 with one line"
printf '' > "$C/emptykey"
usage rdsend 'missing HOST'
usage rdsend 'missing PORT' host
usage rdsend 'missing KEY' host 1234
usage rdsend 'too many' host 1234 key file extra
usage rdsend 'invalid port' host notaport key
usage rdsend 'invalid port' host 70000 key
usage rdsend 'transport' --transport foo host 1234 key
usage rdsend 'chunk' --chunk-size 1 host 1234 key
usage rdsend 'chunk' --chunk-size 1G host 1234 key
usage rdsend 'chunk' --chunk-size 4Q host 1234 key
usage rdsend 'depth' --depth 0 host 1234 key
usage rdsend 'depth' --depth 100000 host 1234 key
usage rdsend 'timeout' --timeout -1 host 1234 key
usage rdsend 'timeout' --timeout soon host 1234 key
usage rdsend 'empty' host 1234 ''
usage rdsend 'key file' --key-file "$C/no-such-key-file" host 1234
usage rdsend 'key file|empty' --key-file "$C/emptykey" host 1234
usage rdsend "^rdsend: cannot read key file '.*': Is a directory$" --key-file "$C" host 1234
usage rdrecv "^rdrecv: --timeout takes whole seconds from 0 to 1000000 \(11 days\), not '2147483647'$" --timeout 2147483647 1234 key
usage rdrecv 'missing PORT'
usage rdrecv 'missing KEY' 1234
usage rdrecv 'too many' 1234 key file extra
usage rdrecv 'invalid port' 12x34 key
usage rdrecv 'depth' --depth x 1234 key
usage rdrecv 'ready-fd' --ready-fd -1 1234 key
usage rdcp "bad source ''" '' b
usage rdcp "bad destination ''" a ''
RDPIPE_CIPHER=aes-128-xyz timeout 5 env -u RDPIPE_KEY "$RD_BIN/rdsend" host 1234 key > "$C/o" 2> "$C/e" < /dev/null
expect_rc $? 1 "RDPIPE_CIPHER=aes-128-xyz rdsend"
expect_err "$C/e" rdsend "^rdsend: RDPIPE_CIPHER must be aes-256-ocb, aes-256-gcm or chacha20-poly1305, not 'aes-128-xyz'$"
t_end

t_begin "unknown option: exit 1 with one prefixed line"
usage rdsend "unknown option '--no-such-option'" --no-such-option host 1234 key
usage rdrecv "unknown option '-5'" -5 key
usage rdrecv "option '--timeout' needs a value" 1234 key --timeout
usage rdsend "option '--help' takes no value" --help=x host 1234 key
usage rdrecv "option '--verbose' takes no value" --verbose=3 1234 key
usage rdpipe "unknown option '--bogus'" --bogus 'cat'
usage rdpipe "option '--ssh' needs a value" --ssh
usage rdcp "unknown option '-Z'" -Z a b
usage rdcp "option '--ssh' needs a value" --ssh
usage rdcp "option '--no-sync' takes no value" --no-sync=1 a b
usage rdrecv "a level after --compress needs '=': --compress=3" --compress 3 20030 key
usage rdbench "option '--sizes' needs a value" --sizes
timeout 5 "$RD_BIN/rdcheck" --verbose=1 > "$C/o" 2> "$C/e" < /dev/null
expect_rc $? 2 "rdcheck --verbose=1 (rdcheck's usage code)"
expect_err "$C/e" rdcheck "option '--verbose' takes no value"
usage rdsend "a level after --compress needs '=': --compress=-5" --compress -5 host 1234 key
usage rdpipe "a level after --compress needs '=': --compress=3" --compress 3 'cat'
usage rdpipe "--remote-path must not be empty" --remote-path '' 'cat'
usage rdrecv "key file '/dev/zero': its first line is longer than 4096 bytes \(is it the key file\?\)" --key-file /dev/zero 1234
usage rdcp "--remote-path must not be empty" --remote-path '' a b
usage rdsend "--gen-key takes no operands, not 'junk'" --gen-key junk
usage rdsend "--timeout takes whole seconds from 0 to 1000000 \(11 days\), not ' 5'" --timeout ' 5' host 1234 key
usage rdrecv "--bind needs an address, not ''" --bind '' 1234 key
usage rdsend "--bind needs an address, not ''" --bind '' host 1234 key
usage rdcp "a level after --compress needs '=': --compress=19" --compress 19 a b
t_end

t_begin "ports: digits only, and 0 is no port to connect to"
usage rdsend 'invalid port' host 0 key
usage rdsend 'invalid port' host +1234 key
usage rdsend 'invalid port' host ' 1234' key
usage rdrecv 'invalid port' -- -1 key
usage rdrecv 'invalid port' +1234 key
usage rdrecv "--ready-fd 1 is stdout" --ready-fd 1 0 key
t_end

t_begin "rdrecv PORT 0 without --ready-fd names the port it picked (a sender reaches it), with --ready-fd only there"
printf 'zero port\n' > "$C/in"
start rp /dev/null "$C/out" "$C/rerr" "$RDRECV" 0 key
port=""
for _ in $(seq 100); do
    port=$(sed -n 's/^rdrecv: listening on port \([0-9][0-9]*\) (tcp)$/\1/p' "$C/rerr")
    [ -n "$port" ] && break
    sleep 0.05
done
if [ -z "$port" ]; then
    t_fail "rdrecv 0 key did not name its port: $(tr '\n' '|' < "$C/rerr")"
    kill "$rp" 2>/dev/null
else
    timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" key "$C/in" 2> "$C/serr"; expect_rc $? 0 "rdsend to the port named" "$(cat "$C/serr")"
    wait_pid "$rp" 10; expect_rc $? 0 rdrecv
    cmp -s "$C/in" "$C/out" || t_fail "the stream to the port named did not arrive whole"
    [ "$(wc -l < "$C/rerr")" = 1 ] || t_fail "rdrecv 0 key: more than the port on stderr: $(tr '\n' '|' < "$C/rerr")"
fi
timeout -k 2 "$(lim 10)" "$RDRECV" --ready-fd 3 --timeout 1 0 key 2> "$C/e" 3> "$C/port" > /dev/null
expect_rc $? 2 "rdrecv --ready-fd 3 --timeout 1 0 key"; expect_err "$C/e" rdrecv "timed out waiting for a sender"
grep -Eqx '[0-9]+' "$C/port" || t_fail "--ready-fd got no port: $(cat "$C/port")"
t_end

t_begin "a usage error does not create or truncate the output FILE"
printf 'precious\n' > "$C/keep"
usage rdrecv 'depth' --depth 0 1234 key "$C/keep"
usage rdrecv 'depth' --depth 0 1234 key "$C/new"
[ "$(cat "$C/keep")" = precious ] || t_fail "existing FILE was modified"
[ -e "$C/new" ] && t_fail "FILE was created"
t_end

t_begin "--transport rdma without an RDMA device: exit 101 'no RDMA device'"
port=$(free_port)
printf 'x' > "$C/in"
t0=$(now)
timeout -k 2 "$(lim 10)" "$RDSEND" --transport rdma 127.0.0.1 "$port" key "$C/in" > /dev/null 2> "$C/e"
expect_rc $? 101 "rdsend --transport rdma"; expect_err "$C/e" rdsend "no RDMA device"
timeout -k 2 "$(lim 10)" "$RDRECV" --transport rdma "$port" key > /dev/null 2> "$C/e"
expect_rc $? 101 "rdrecv --transport rdma"; expect_err "$C/e" rdrecv "no RDMA device"
expect_within "$(elapsed "$t0")" "$(lim 3)" "both"
t_end

t_begin "default --transport auto falls back to TCP and says so under -v"
port=$(free_port); printf 'x' > "$C/in"
start rp /dev/null "$C/out" "$C/rerr" "$RDRECV" -v "$port" key
wait_listen "$port" || t_fail "not listening"
timeout -k 2 "$(lim 20)" "$RDSEND" -v 127.0.0.1 "$port" key "$C/in" 2> "$C/serr"; expect_rc $? 0 rdsend "$(cat "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv
grep -q '^rdsend: .*using TCP' "$C/serr" || t_fail "rdsend -v does not say it uses TCP: $(cat "$C/serr")"
grep -q '^rdrecv: listening on port .*tcp' "$C/rerr" || t_fail "rdrecv -v does not say it listens on tcp: $(cat "$C/rerr")"
t_end

# argv_of PID -> its argv as ps shows it to every user, and the raw /proc cmdline
argv_of() { ps -ww -o args= -p "$1"; tr '\0' ' ' < "/proc/$1/cmdline"; }
t_begin "key via RDPIPE_KEY / --key-file never appears in ps argv"
secret="s3cret-$RANDOM$RANDOM"; printf '%s\n' "$secret" > "$C/kf"
port=$(free_port)
start rp /dev/null "$C/out" "$C/rerr" env RDPIPE_KEY="$secret" "$RDRECV" "$port"
wait_listen "$port" || t_fail "rdrecv (RDPIPE_KEY) not listening: $(cat "$C/rerr")"
argv_of "$rp" > "$C/ps.r"
grep -q -- "$RDRECV" "$C/ps.r" || t_fail "ps does not show rdrecv for pid $rp: $(cat "$C/ps.r")"
grep -q -- "$secret" "$C/ps.r" && t_fail "the key is visible in rdrecv's argv: $(cat "$C/ps.r")"
mkfifo "$C/stall"
( exec sleep "$(lim 20)" ) > "$C/stall" & feeder=$!; RD_PIDS+=("$feeder")
start sp "$C/stall" /dev/null "$C/serr" "$RDSEND" --key-file "$C/kf" 127.0.0.1 "$port"
wait_for_text "$C/rerr" . 0.5   # give it time to connect (nothing is expected on stderr)
argv_of "$sp" > "$C/ps.s"
grep -q -- "$RDSEND" "$C/ps.s" || t_fail "ps does not show rdsend for pid $sp: $(cat "$C/ps.s")"
grep -q -- "$secret" "$C/ps.s" && t_fail "the key is visible in rdsend's argv: $(cat "$C/ps.s")"
kill_reap "$feeder"   # EOF: the (empty) transfer completes with the file and env keys
wait_pid "$sp" 10; expect_rc $? 0 rdsend "$(cat "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_empty "$C/out" "output of an empty stream"
# control: a positional key IS in argv, so the check above can see a key when there is one
start rp /dev/null /dev/null /dev/null "$RDRECV" --timeout 5 "$port" "$secret"
wait_listen "$port" || t_fail "control rdrecv not listening"
argv_of "$rp" | grep -q -- "$secret" || t_fail "control: positional key not found in ps output (check is blind)"
kill_reap "$rp"
t_end

t_begin "rdcp into a directory that does not exist: exit 5, the reason once, in one line"
printf 'x' > "$C/f"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" --no-progress "$C/f" "$C/no-such-dir/sub/x" > "$C/o" 2> "$C/e"
expect_rc $? 5 "rdcp"
expect_err "$C/e" rdcp "localhost: cannot open the directory of destination '.*/no-such-dir/sub/x': No such file or directory"
expect_empty "$C/o" "rdcp stdout"
t_end

t_begin "rdcp of a file to DIR/ that does not exist: exit 23, one line, and no file named DIR (as cp refuses)"
printf 'x' > "$C/f"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" --no-progress "$C/f" "$C/not-yet/" > "$C/o" 2> "$C/e"
expect_rc $? 23 "rdcp f not-yet/"
expect_err "$C/e" rdcp "^rdcp: localhost: destination '.*/not-yet/' is not a directory$"
[ -e "$C/not-yet" ] && t_fail "rdcp made $(ls -ld "$C/not-yet")"
t_end

t_begin "a path longer than the error's 512 bytes: the line keeps its start and the reason at its end"
long=$C/$(printf 'L%.0s' $(seq 250))/$(printf 'M%.0s' $(seq 250))/$(printf 'N%.0s' $(seq 250))/out
timeout -k 2 "$(lim 10)" "$RDRECV" --timeout 5 0 key "$long" > "$C/o" 2> "$C/e"
expect_rc $? 5 "rdrecv into a missing directory"
expect_err "$C/e" rdrecv "^rdrecv: cannot open output file '$C/LLL+ \\.\\.\\. N+/out': No such file or directory$"
t_end

t_begin "rdcp -P without -r: the progress line's total counts what the copy takes (a file, a symlink to one), not a directory's contents"
mkdir -p "$C/pd/d" "$C/pd/dst" && for i in 1 2 3; do printf 'x' > "$C/pd/d/f$i"; done
printf 'y' > "$C/pd/f" && ln -sf f "$C/pd/l"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" -P "$C/pd/d" "$C/pd/f" "$C/pd/l" "$C/pd/dst" > "$C/o" 2> "$C/e"
expect_rc $? 23 "rdcp -P d f l dst (d needs -r)"
tr '\r' '\n' < "$C/e" | grep -aq 'rdcp: 2/2 files' || t_fail "no 'rdcp: 2/2 files' progress line: $(tr '\r\033' '|?' < "$C/e" | head -c 400)"
grep -q "'.*/pd/d' is a directory (not copied; use -r)" "$C/e" || t_fail "the directory not named: $(tr '\r' '|' < "$C/e" | head -c 300)"
[ "$(cat "$C/pd/dst/l" 2>/dev/null)" = y ] && [ ! -L "$C/pd/dst/l" ] || t_fail "the symlink source did not arrive as its file"
t_end

t_begin "rdcp -P -r of a tree 150 levels deep, a symlink back up at the bottom (-L): the progress total counts all of it"
mkdir -p "$C/deep" && (
    cd "$C/deep" || exit 1
    for i in $(seq 150); do
        printf '%s' "$i" > "f$i"
        [ $((i % 50)) = 0 ] && mkdir "side$i" && printf 's' > "side$i/s"
        mkdir d && cd d || exit 1
    done
    printf 'leaf' > f && ln -s ../../.. up
) || t_fail "cannot make the deep tree"
for opt in -P -L; do
    rm -rf "$C/deepcopy"
    timeout -k 2 "$(lim 60)" "$RD_BIN/rdcp" -P -r $opt "$C/deep" "$C/deepcopy" > "$C/o" 2> "$C/e"
    rc=$?
    # -P: 154 files and the symlink; -L: the symlink is the directory 3 levels up, named as a
    # loop and not entered (exit 23), so 154 files
    if [ "$opt" = -P ]; then
        want=155; expect_rc $rc 0 "rdcp -P -r -P of the deep tree"
    else
        want=154; expect_rc $rc 23 "rdcp -P -r -L of the deep tree"
        grep -q "directory loop, not copied: '.*/d/up' is " "$C/e" || t_fail "-L: the loop not named: $(tr '\r' '|' < "$C/e" | tail -c 300)"
    fi
    tr '\r' '\n' < "$C/e" | grep -aq "rdcp: $want/$want files" ||
        t_fail "$opt: no 'rdcp: $want/$want files' progress line: $(tr '\r\033' '|?' < "$C/e" | tail -c 300)"
done
t_end

t_begin "rdcp: localhost:PATH is this machine without ssh (PATH from here), user@localhost:PATH logs in as user"
# an ssh that logs whom it was asked to reach and cannot log in
printf '#!/bin/sh\necho "$@" >> "%s"\nexit 255\n' "$C/ssh.log" > "$C/ssh" && chmod +x "$C/ssh"
mkdir -p "$C/lh" && printf 'lh' > "$C/lh/src"
(cd "$C/lh" && timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" --ssh "$C/ssh" src localhost:copy) > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp src localhost:copy"
[ "$(cat "$C/lh/copy" 2>/dev/null)" = lh ] || t_fail "localhost:copy is not ./copy"
[ -e "$C/ssh.log" ] && t_fail "localhost: went through ssh: $(cat "$C/ssh.log")"
(cd "$C/lh" && timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" --ssh "$C/ssh" src nobody@localhost:copy2) > "$C/o" 2> "$C/e"
expect_rc $? 255 "rdcp src nobody@localhost:copy2 (ssh cannot log in)"
grep -q '^-- nobody@localhost ' "$C/ssh.log" 2>/dev/null || t_fail "nobody@localhost did not go to ssh as nobody: $(cat "$C/ssh.log" 2>/dev/null)"
[ -e "$C/lh/copy2" ] && t_fail "nobody@localhost:copy2 was written here, as this user"
t_end

t_begin "rdcp: two sources with one name are refused the second time, as cp does (the first stays, a file or a symlink; exit 23); one source named twice is copied once"
mkdir -p "$C/two/a/d" "$C/two/b/d" "$C/two/dst" "$C/two/dst2"
printf 'A' > "$C/two/a/x"; printf 'B' > "$C/two/b/x"
printf 'a1' > "$C/two/a/d/f1"; printf 'b2' > "$C/two/b/d/f2"; printf 'A' > "$C/two/a/d/same"; printf 'B' > "$C/two/b/d/same"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" "$C/two/a/x" "$C/two/b/x" "$C/two/dst/" > "$C/o" 2> "$C/e"
expect_rc $? 23 "rdcp a/x b/x dst/"
expect_err "$C/e" rdcp "^rdcp: localhost: refusing '.*/two/dst/x': this copy just made it from another source \(two sources with one name\)$"
[ "$(cat "$C/two/dst/x")" = A ] || t_fail "dst/x is not the first source's: $(cat "$C/two/dst/x")"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" -r "$C/two/a/d" "$C/two/b/d" "$C/two/dst/" > "$C/o" 2> "$C/e"
expect_rc $? 23 "rdcp -r a/d b/d dst/ (merged, one name twice)"
expect_err "$C/e" rdcp "refusing '.*/two/dst/d/same': this copy just made it"
[ "$(cat "$C/two/dst/d/f1")$(cat "$C/two/dst/d/f2")$(cat "$C/two/dst/d/same")" = a1b2A ] || t_fail "the merged directory: $(ls -l "$C/two/dst/d")"
mkdir -p "$C/two/l" "$C/two/dst3" && ln -s somewhere "$C/two/l/x"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" -r "$C/two/l/x" "$C/two/b/x" "$C/two/dst3/" > "$C/o" 2> "$C/e"
expect_rc $? 23 "rdcp -r l/x (a symlink) b/x dst3/"
expect_err "$C/e" rdcp "refusing '.*/two/dst3/x': this copy just made it"
[ "$(readlink "$C/two/dst3/x")" = somewhere ] || t_fail "dst3/x is not the symlink: $(ls -l "$C/two/dst3")"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" "$C/two/a/x" "$C/two/a/x" "$C/two/dst2/" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp a/x a/x dst2/"
expect_err "$C/e" rdcp "^rdcp: localhost: warning: source '.*/two/a/x' named more than once \(copied once\)$"
[ "$(cat "$C/two/dst2/x")" = A ] || t_fail "dst2/x: $(cat "$C/two/dst2/x")"
t_end

t_begin "rdcp: two source hosts with one name: the second is refused too (h1:a/x h2:b/x DST/, merged trees, three hosts; exit 23), not silently replaced"
# a stand-in ssh: each host is this machine
printf '#!/bin/bash\nwhile [ $# -gt 0 ]; do case $1 in -o) shift 2;; --) shift; break;; -*) shift;; *) break;; esac; done\nshift\nexport SSH_CONNECTION="127.0.0.1 1 127.0.0.1 22" PATH="%s:$PATH"\nexec bash -c "$*"\n' "$RD_BIN" > "$C/ssh" && chmod +x "$C/ssh"
mkdir -p "$C/two/a/d" "$C/two/b/d" "$C/two/dst" "$C/two/dst2"
printf 'A' > "$C/two/a/x"; printf 'B' > "$C/two/b/x"; printf 'C' > "$C/two/y"
printf 'a1' > "$C/two/a/d/f1"; printf 'b2' > "$C/two/b/d/f2"; printf 'A' > "$C/two/a/d/same"; printf 'B' > "$C/two/b/d/same"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" --ssh "$C/ssh" h1:"$C/two/a/x" h2:"$C/two/b/x" h3:"$C/two/y" "$C/two/dst/" > "$C/o" 2> "$C/e"
expect_rc $? 23 "rdcp h1:a/x h2:b/x h3:y dst/"
expect_err "$C/e" rdcp "^rdcp: localhost: refusing '.*/two/dst/x': this copy just made it from another source \(two sources with one name\)$"
[ "$(cat "$C/two/dst/x")$(cat "$C/two/dst/y")" = AC ] || t_fail "dst/x and dst/y: $(cat "$C/two/dst/x" "$C/two/dst/y")"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" --ssh "$C/ssh" -r h1:"$C/two/a/d" h2:"$C/two/b/d" h3:"$C/two/b/x" "$C/two/dst2/" > "$C/o" 2> "$C/e"
expect_rc $? 23 "rdcp -r h1:a/d h2:b/d h3:b/x dst2/ (merged, one name twice)"
expect_err "$C/e" rdcp "refusing '.*/two/dst2/d/same': this copy just made it"
[ "$(cat "$C/two/dst2/d/f1")$(cat "$C/two/dst2/d/f2")$(cat "$C/two/dst2/d/same")$(cat "$C/two/dst2/x")" = a1b2AB ] ||
    t_fail "the merged directory: $(ls -l "$C/two/dst2/d")"
# a destination that is no directory fails every host's run alike: said once, the other hosts not run
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" --ssh "$C/ssh" h1:"$C/two/a/x" h2:"$C/two/y" h3:"$C/two/b/x" "$C/two/y" > "$C/o" 2> "$C/e"
expect_rc $? 23 "rdcp h1:a/x h2:y h3:b/x y (y a file)"
expect_err "$C/e" rdcp "^rdcp: localhost: destination '.*/two/y' is not a directory$"
[ "$(cat "$C/two/y")" = C ] || t_fail "y changed: $(cat "$C/two/y")"
t_end

t_begin "rdcp onto a device node, a FIFO or a symlink to one: refused, exit 23, the node still there (it was renamed over, exit 0)"
mkdir -p "$C/dv" && head -c 100000 /dev/urandom > "$C/dv/src" && mkfifo "$C/dv/ff"
nodes=ff
if [ "$(id -u)" = 0 ] && mknod "$C/dv/mynull" c 1 3 2> /dev/null; then nodes="ff mynull"; ln -s mynull "$C/dv/lnk"; nodes="$nodes lnk"; fi
for d in $nodes; do
    for opt in "" --resume; do
        timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" $opt "$C/dv/src" "$C/dv/$d" > "$C/o" 2> "$C/e"
        expect_rc $? 23 "rdcp $opt src $d"
        expect_err "$C/e" rdcp "^rdcp: localhost: destination '.*/dv/$d' is a (FIFO|character device): rdcp writes files, never into one \(rdrecv FILE does\)$"
    done
done
[ -p "$C/dv/ff" ] || t_fail "the FIFO is gone: $(ls -l "$C/dv")"
case $nodes in *mynull*) [ -c "$C/dv/mynull" ] && [ -L "$C/dv/lnk" ] || t_fail "the device or the link is gone: $(ls -l "$C/dv")";; esac
# a device node in DST where a file lands (rdcp ./null host:/dev/): refused too, not renamed over
case $nodes in *mynull*)
    mkdir -p "$C/dv/src2" && printf 'x' > "$C/dv/src2/mynull"
    timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" "$C/dv/src2/mynull" "$C/dv/" > "$C/o" 2> "$C/e"
    expect_rc $? 23 "rdcp src2/mynull dv/ (dv/mynull a char device)"
    expect_err "$C/e" rdcp "^rdcp: localhost: refusing '.*/dv/mynull': a character device is in the way: rdcp replaces no device node$"
    [ -c "$C/dv/mynull" ] || t_fail "dv/mynull was replaced: $(ls -l "$C/dv")";;
esac
t_end

t_begin "rdcp onto itself: 'are the same file' or 'into itself', exit 1, nothing touched (as cp; each file was replaced, exit 0)"
mkdir -p "$C/sc/d/sub" && printf 'x' > "$C/sc/f" && printf 'y' > "$C/sc/d/g" && ln "$C/sc/f" "$C/sc/hl"
ino=$(stat -c %i "$C/sc/f"); gino=$(stat -c %i "$C/sc/d/g")
while IFS='|' read -r args want; do
    (cd "$C/sc" && set -f && timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" $args) > "$C/o" 2> "$C/e"   # 'f*' as quoted
    expect_rc $? 1 "rdcp $args"
    expect_err "$C/e" rdcp "^rdcp: $want$"
done <<'EOF'
f f|'f' and 'f' are the same file
f hl|'f' and 'hl' are the same file
-r d .|'d' and '\./d' are the same file
-r d/ d|'d/' and 'd' are the same file
-r d d/sub|cannot copy a directory, 'd', into itself, 'd/sub/d'
-r d d/new|cannot copy a directory, 'd', into itself, 'd/new'
f* .|'f' and '\./f' are the same file
EOF
[ "$(stat -c %i "$C/sc/f")" = "$ino" ] && [ "$(stat -c %i "$C/sc/d/g")" = "$gino" ] && [ "$(stat -c %h "$C/sc/f")" = 2 ] ||
    t_fail "a file was replaced: $(ls -li "$C/sc" "$C/sc/d")"
[ -e "$C/sc/d/new" ] || [ -e "$C/sc/d/sub/d" ] && t_fail "a copy was made into the tree"
t_end

t_begin "rdcp -v onto a filesystem that fills up: the bytes said copied are those of the files that landed (failed files' bytes were counted)"
if [ "$(id -u)" != 0 ]; then
    t_skip "needs root (a small tmpfs)"
else
    mkdir -p "$C/en/src" "$C/en/mnt" && mount -t tmpfs -o size=3m tmpfs "$C/en/mnt"
    for i in 1 2 3 4 5 6; do head -c 1000000 /dev/urandom > "$C/en/src/f$i"; done
    timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" -v --no-progress -r "$C/en/src/" "$C/en/mnt/" > "$C/o" 2> "$C/e"
    expect_rc $? 23 "rdcp onto a full tmpfs"
    landed=$(find "$C/en/mnt" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
    said=$(sed -n 's/^rdcp: [0-9]* files, [0-9]* directories, \([0-9]*\) bytes .*/\1/p' "$C/e")
    [ -n "$said" ] && [ "$said" = "$landed" ] || t_fail "said $said bytes copied, $landed landed: $(grep 'files,' "$C/e")"
    [ "$landed" -lt 6000000 ] || t_fail "everything fit: the case tested nothing"
    umount "$C/en/mnt"
fi
t_end

# as_nobody_dir NAME: a fresh directory under /tmp that nobody can reach, the tools in its bin/
# (the test's own bin directory is root's alone); its path on stdout
as_nobody_dir() {
    local d
    d=$(mktemp -d "/tmp/$1.XXXXXX") && chmod 755 "$d" && mkdir "$d/bin" &&
        cp "$RD_BIN/rdcp" "$RD_BIN/rdpipe" "$RD_BIN/rdsend" "$RD_BIN/rdrecv" "$d/bin/" && echo "$d"
}

t_begin "rdcp: a hard link whose first name cannot be created (a directory the copy cannot write) still gets the file under its other name (exit 23, the first name said)"
if [ "$RD_IS_ROOT" != 1 ] || ! command -v setpriv > /dev/null; then
    t_skip "needs root and setpriv (a directory the copy cannot write)"
else
    HD=$(as_nobody_dir rdcp-hl)
    mkdir -p "$HD/hs/a" "$HD/hs/b" "$HD/hd/a" && echo data > "$HD/hs/a/x" && ln "$HD/hs/a/x" "$HD/hs/b/x"
    chown -R nobody "$HD/hs" "$HD/hd" && chown root "$HD/hd/a"
    (cd "$HD" && timeout -k 2 "$(lim 20)" setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp PATH="$HD/bin:$PATH" rdcp -r hs/ hd) > "$C/o" 2> "$C/e"
    expect_rc $? 23 "rdcp as nobody into a tree with a directory it cannot write"
    expect_err "$C/e" rdcp "^rdcp: localhost: cannot create a file in the directory of 'hd/a/x': Permission denied$"
    [ "$(cat "$HD/hd/b/x" 2>/dev/null)" = data ] || t_fail "hd/b/x: $(ls -la "$HD/hd/b" | tr '\n' '|')"
    [ -e "$HD/hd/a/x" ] && t_fail "hd/a/x was made"
    left=$(find "$HD/hd" -name '.rdcp.*'); [ -z "$left" ] || t_fail "temporary files left: $left"
    rm -rf "$HD"
fi
t_end

t_begin "rdcp: hard links between sources stay hard links (a/x a/y DIR/, and a file named before its tree)"
mkdir -p "$C/hl/src" "$C/hl/d1" "$C/hl/d2"
printf 'one' > "$C/hl/src/x" && ln "$C/hl/src/x" "$C/hl/src/y"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" "$C/hl/src/x" "$C/hl/src/y" "$C/hl/d1/" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp x y d1/ (y a hard link of x)"
expect_empty "$C/e" "rdcp x y d1/ stderr"
[ "$(cat "$C/hl/d1/x")$(cat "$C/hl/d1/y")" = oneone ] && [ "$C/hl/d1/x" -ef "$C/hl/d1/y" ] ||
    t_fail "d1: not one file under two names: $(ls -li "$C/hl/d1" | tr '\n' '|')"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" -r "$C/hl/src/x" "$C/hl/src" "$C/hl/d2/" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp -r src/x src d2/"
expect_empty "$C/e" "rdcp -r src/x src d2/ stderr"
[ "$C/hl/d2/x" -ef "$C/hl/d2/src/x" ] && [ "$C/hl/d2/x" -ef "$C/hl/d2/src/y" ] ||
    t_fail "d2: the tree's links are not the named file: $(ls -liR "$C/hl/d2" | tr '\n' '|')"
t_end

t_begin "rdcp: one source spelled two ways (f ./f /abs/f, d d/.) is copied once, with a warning per repeat, exit 0"
mkdir -p "$C/sp/d" "$C/sp/out" "$C/sp/out2" && printf 'F' > "$C/sp/f" && printf 'G' > "$C/sp/d/g"
(cd "$C/sp" && timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" f ./f "$C/sp/f" out/) > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp f ./f /abs/f out/"
[ "$(grep -c "^rdcp: localhost: warning: source '.*f' named more than once (copied once)$" "$C/e")" = 2 ] &&
    [ "$(wc -l < "$C/e")" = 2 ] || t_fail "not two warnings: $(tr '\n' '|' < "$C/e")"
[ "$(cat "$C/sp/out/f")" = F ] || t_fail "out/f: $(ls -l "$C/sp/out")"
(cd "$C/sp" && timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" -r d/ d/. out2/) > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp -r d/ d/. out2/"
expect_err "$C/e" rdcp "^rdcp: localhost: warning: source 'd/\.' named more than once \(copied once\)$"
[ "$(cat "$C/sp/out2/g")" = G ] || t_fail "out2/g: $(ls -l "$C/sp/out2")"
t_end

t_begin "rdcp: a FIFO named as a source without -r is refused (one line, exit 23, nothing made); with -r it is made again"
mkdir -p "$C/ff" && mkfifo "$C/ff/pipe"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" "$C/ff/pipe" "$C/ff/copy" > "$C/o" 2> "$C/e"
expect_rc $? 23 "rdcp FIFO copy"
expect_err "$C/e" rdcp "^rdcp: localhost: '.*/ff/pipe' is a FIFO, not a regular file \(not copied: rdsend sends a stream, -r makes the FIFO again\)$"
[ -e "$C/ff/copy" ] && t_fail "something was made: $(ls -l "$C/ff/copy")"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" -r "$C/ff/pipe" "$C/ff/copy" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp -r FIFO copy"
[ -p "$C/ff/copy" ] || t_fail "-r: no FIFO made: $(ls -l "$C/ff")"
t_end

t_begin "rdcp: a source file named like a partial file (.rdcp.NAME.XXXXXX) is copied, and a copy over the last one keeps it"
mkdir -p "$C/pn/src" && printf 'real' > "$C/pn/src/a" && printf 'user data' > "$C/pn/src/.rdcp.a.ABCDEF"
for round in 1 2; do
    timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" -r "$C/pn/src/" "$C/pn/dst" > "$C/o" 2> "$C/e"
    expect_rc $? 0 "rdcp -r src/ dst (round $round)"
    [ "$(cat "$C/pn/dst/.rdcp.a.ABCDEF" 2>/dev/null)" = "user data" ] && [ "$(cat "$C/pn/dst/a")" = real ] ||
        t_fail "round $round: $(ls -a "$C/pn/dst" | tr '\n' ' ')"
done
t_end

t_begin "rdcp --resume: a source file named like a partial of another (.rdcp.a.X, a's first MiB) is no partial: both arrive whole"
for round in 1 2 3; do
    rm -rf "$C/rs"; mkdir -p "$C/rs/S"
    head -c $((4 << 20)) /dev/urandom > "$C/rs/S/a" && head -c $((1 << 20)) "$C/rs/S/a" > "$C/rs/S/.rdcp.a.ABCDEF"
    timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" -r "$C/rs/S/" "$C/rs/D" > "$C/o" 2> "$C/e" || t_fail "round $round: the first copy: $(cat "$C/e")"
    rm "$C/rs/D/a"
    timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" --resume -r "$C/rs/S/" "$C/rs/D" > "$C/o" 2> "$C/e"
    expect_rc $? 0 "round $round: rdcp --resume"
    cmp -s "$C/rs/S/a" "$C/rs/D/a" && cmp -s "$C/rs/S/.rdcp.a.ABCDEF" "$C/rs/D/.rdcp.a.ABCDEF" ||
        t_fail "round $round: $(ls -la "$C/rs/D" | tr '\n' '|')"
done
t_end

t_begin "rdcp --progress interrupted: 'interrupted by signal 2' is the last thing on stderr (the progress line was redrawn after it)"
mkdir -p "$C/pi/src" "$C/pi/dst" && head -c $((32 << 20)) /dev/urandom > "$C/pi/src/f"
"$RD_BIN/rdcp" --progress --compress=19 -r "$C/pi/src/" "$C/pi/dst" 2> "$C/e" & pid=$!
for _ in $(seq $(($(lim 20) * 20))); do
    [ "$(find "$C/pi/dst" -name '.rdcp.*' -size +1M 2>/dev/null | head -1)" ] && break
    sleep 0.05
done
kill -INT $pid; wait $pid; rc=$?
expect_rc $rc 130 "the interrupted copy"
last=$(tr '\r' '\n' < "$C/e" | sed 's/\x1b\[K//g' | grep -v '^$' | tail -1)
[ "$last" = "rdcp: interrupted by signal 2" ] || t_fail "the last line: '$last' (stderr: $(tr '\r\033' '|?' < "$C/e" | tail -c 300))"
t_end

# The third case holds the source host's exit lines back 0.5 s, as a slow link would: which
# end's exit line came first named the failure before 2026-12-07, so the receiving end's
# "connection closed by peer" often beat the sender's own "killed" (2 of 3 runs under load).
t_begin "rdcp whose receiving or sending end is killed (the OOM killer): exit 4 naming the signal, not 137 as if rdcp were killed, even when the killed end's exit line comes last"
mkdir -p "$C/rk/src" && head -c $((32 << 20)) /dev/urandom > "$C/rk/src/big"
printf '#!/bin/bash\nwhile [ $# -gt 0 ]; do case $1 in -o) shift 2;; --) shift; break;; -*) shift;; *) break;; esac; done\nshift\nexport SSH_CONNECTION="127.0.0.1 1 127.0.0.1 22" PATH="%s:$PATH"\nbash -c "$*" | while IFS= read -r l; do case $l in exit*) sleep 0.5;; esac; printf "%%s\\n" "$l"; done\n' "$RD_BIN" > "$C/slowssh" && chmod +x "$C/slowssh"
for how in recv send slow-send; do
    role=${how#slow-} host=localhost src=$C/rk/src ssh=()
    [ $how = slow-send ] && { host=h1 src=h1:$C/rk/src ssh=(--ssh "$C/slowssh"); }
    rm -rf "$C/rk/dst"
    "$RD_BIN/rdcp" --no-progress "${ssh[@]}" --compress=19 -r "$src" "$C/rk/dst" 2> "$C/e" & pid=$!
    q=
    for _ in $(seq $(($(lim 20) * 20))); do
        q=$(pgrep -f -- "rdcp --tree-$role .*$C/rk/" | head -1)
        [ -n "$q" ] && [ -n "$(find "$C/rk/dst" -name '.rdcp.*' -size +1M 2>/dev/null | head -1)" ] && break
        sleep 0.05
    done
    [ -n "$q" ] && kill -9 "$q"
    wait $pid; rc=$?
    expect_rc $rc 4 "rdcp with its tree-$role killed ($how)"
    want=$([ $role = recv ] && echo receiving || echo sending)
    # (the other end may say what it saw and kept first)
    grep -q "^rdcp: $host: $want the tree was killed by signal 9$" "$C/e" || t_fail "tree-$role killed ($how): $(tr '\n' '|' < "$C/e")"
done
t_end

t_begin "rdcp: a name over 200 bytes: an interrupted copy's partial file is continued by --resume, then gone"
long=$(printf 'n%.0s' $(seq 230))
mkdir -p "$C/ln/src" "$C/ln/dst" && head -c $((32 << 20)) /dev/urandom > "$C/ln/src/$long"
# zstd at level 19 on random bytes: a copy slow enough to interrupt inside the file
"$RD_BIN/rdcp" --no-progress --compress=19 -r "$C/ln/src/" "$C/ln/dst" 2> "$C/e" & pid=$!
part=0
for _ in $(seq $(($(lim 20) * 20))); do
    part=$(find "$C/ln/dst" -name '.rdcp.*' -printf '%s\n' 2>/dev/null | head -1)
    [ "${part:-0}" -gt $((1 << 20)) ] && break
    sleep 0.05
done
kill -INT $pid; wait $pid; rc=$?
expect_rc $rc 130 "the interrupted copy"
[ "${part:-0}" -gt $((1 << 20)) ] || t_fail "no partial file of over 1 MiB seen: $(ls -a "$C/ln/dst" | cut -c1-40 | tr '\n' ' ')"
# a file named as the long name's key (its partial file's name less prefix and suffix) is
# another file: copying it leaves that partial file alone
pname=$(ls -A "$C/ln/dst" | grep '^\.rdcp\.' | head -1); key=${pname#.rdcp.}; key=${key%.??????}
mkdir -p "$C/ln/forge" && printf 'x' > "$C/ln/forge/$key"
timeout -k 2 "$(lim 60)" "$RD_BIN/rdcp" --no-progress -r "$C/ln/forge/" "$C/ln/dst" 2> "$C/e"
expect_rc $? 0 "rdcp of the file named as the key"
[ -n "$pname" ] && [ -e "$C/ln/dst/$pname" ] || t_fail "copying '${key:0:20}...' (${#key} bytes) removed the long name's partial file"
rm -f "$C/ln/dst/$key"
timeout -k 2 "$(lim 60)" "$RD_BIN/rdcp" --no-progress -v --resume -r "$C/ln/src/" "$C/ln/dst" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp --resume"
sk=$(sed -n 's/.*skipped \([0-9]*\) bytes.*/\1/p' "$C/e")
[ "${sk:-0}" -gt 0 ] || t_fail "--resume skipped nothing: $(tr '\n' '|' < "$C/e")"
cmp -s "$C/ln/src/$long" "$C/ln/dst/$long" || t_fail "the copy differs"
[ "$(ls -A "$C/ln/dst" | wc -l)" = 1 ] || t_fail "left in dst: $(ls -A "$C/ln/dst" | cut -c1-40 | tr '\n' ' ')"
t_end

t_begin "rdcp -p by a user who cannot keep the owner: setuid and setgid dropped (cp -p), kept by root; a directory's sticky bit kept without -p (cp -r)"
if [ "$RD_IS_ROOT" != 1 ] || ! command -v setpriv > /dev/null; then
    t_skip "needs root and setpriv (apt-get install util-linux)"
else
    PD=$(as_nobody_dir rdcp-suid) && mkdir "$PD/out"
    printf 'x' > "$PD/suid" && chmod 6755 "$PD/suid" && chown nobody "$PD/out"
    mkdir -p "$PD/tree/stk" && chmod 1777 "$PD/tree/stk"
    (cd "$PD" && timeout -k 2 "$(lim 20)" setpriv --reuid=nobody --regid=nogroup --clear-groups env PATH="$PD/bin:$PATH" rdcp -p suid out/) > "$C/o" 2> "$C/e"
    expect_rc $? 0 "rdcp -p suid out/ as nobody"
    [ "$(stat -c '%a %U' "$PD/out/suid")" = "755 nobody" ] || t_fail "as nobody: $(stat -c '%a %U' "$PD/out/suid")"
    timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" -p "$PD/suid" "$PD/rootcopy" > "$C/o" 2> "$C/e"
    expect_rc $? 0 "rdcp -p suid rootcopy as root"
    [ "$(stat -c '%a %U' "$PD/rootcopy")" = "6755 root" ] || t_fail "as root: $(stat -c '%a %U' "$PD/rootcopy")"
    (umask 022 && timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" -r "$PD/tree" "$PD/tree2") > "$C/o" 2> "$C/e"
    expect_rc $? 0 "rdcp -r tree tree2"
    [ "$(stat -c '%a' "$PD/tree2/stk")" = 1755 ] || t_fail "without -p, sticky directory: $(stat -c '%a' "$PD/tree2/stk")"
    rm -rf "$PD"
    t_end
fi

t_begin "rdcp onto a filesystem that folds case (exFAT): 'A' then 'a', 'Dir' then 'dir', 'Ärger' then 'ärger' refused the second time (exit 23, one line each), the first kept, and 'café' in its two Unicode forms both taken (exFAT tells them apart); a filesystem that tells case apart takes all eight"
mkdir -p "$C/cf/src/Dir" "$C/cf/src/dir" "$C/cf/mnt"
printf 'upper' > "$C/cf/src/A"; printf 'lower' > "$C/cf/src/a"; printf 'D' > "$C/cf/src/Dir/x"; printf 'd' > "$C/cf/src/dir/x"
# beyond ASCII too: until 2026-12-07 'ärger' replaced 'Ärger' there with exit 0
printf 'U' > "$C/cf/src/Ärger"; printf 'L' > "$C/cf/src/ärger"
# the two forms of café meet in the fold key (as ext4 casefold finds them): a filesystem that
# tells them apart is asked, and takes both
nfc=$(printf 'caf\xc3\xa9') nfd=$(printf 'cafe\xcc\x81')
printf 'C' > "$C/cf/src/$nfc"; printf 'N' > "$C/cf/src/$nfd"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" -r "$C/cf/src" "$C/cf/plain" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp -r onto this filesystem"
[ "$(cat "$C/cf/plain/A")$(cat "$C/cf/plain/a")$(cat "$C/cf/plain/Dir/x")$(cat "$C/cf/plain/dir/x")$(cat "$C/cf/plain/Ärger")$(cat "$C/cf/plain/ärger")$(cat "$C/cf/plain/$nfc")$(cat "$C/cf/plain/$nfd")" = upperlowerDdULCN ] ||
    t_fail "plain: $(ls -R "$C/cf/plain" | tr '\n' ' ')"
if [ "$RD_IS_ROOT" != 1 ] || ! command -v mount.exfat-fuse > /dev/null || ! command -v mkfs.exfat > /dev/null; then
    t_skip "needs root, exfat-fuse and exfatprogs"
elif ! { truncate -s 64M "$C/cf/img" && mkfs.exfat "$C/cf/img" > /dev/null 2>&1 &&
         loop=$(losetup -f --show "$C/cf/img") && mount.exfat-fuse "$loop" "$C/cf/mnt" > /dev/null 2>&1; }; then
    [ -n "${loop:-}" ] && losetup -d "$loop"
    t_skip "cannot mount an exFAT image here (FUSE)"
else
    timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" -r "$C/cf/src" "$C/cf/mnt/copy" > "$C/o" 2> "$C/e"
    expect_rc $? 23 "rdcp -r onto exFAT"
    [ "$(grep -c "refusing '.*/copy/\(a\|dir\|ärger\)': this filesystem takes it for a name this copy just made (it folds case or Unicode's forms)$" "$C/e")" = 3 ] &&
        [ "$(wc -l < "$C/e")" = 3 ] || t_fail "not the three lines: $(tr '\n' '|' < "$C/e")"
    [ "$(cat "$C/cf/mnt/copy/A")$(cat "$C/cf/mnt/copy/Dir/x")$(cat "$C/cf/mnt/copy/Ärger")$(cat "$C/cf/mnt/copy/$nfc")$(cat "$C/cf/mnt/copy/$nfd")" = upperDUCN ] || t_fail "exFAT: $(ls -R "$C/cf/mnt/copy" | tr '\n' ' ')"
    umount "$C/cf/mnt"; losetup -d "$loop"
    t_end
fi

t_begin "rdcp --resume: the source host learns of DST only the names this copy writes (DST/NAME), not the rest of DST"
# a stand-in ssh that runs the agent here and keeps a copy of what it is told (the manifest)
printf '#!/bin/bash\nwhile [ $# -gt 0 ]; do case $1 in -o) shift 2;; --) shift; break;; -*) shift;; *) break;; esac; done\nshift\nexport SSH_CONNECTION="127.0.0.1 1 127.0.0.1 22" PATH="%s:$PATH"\ntee -a "%s" | bash -c "$*"\n' \
    "$RD_BIN" "$RD_T/told" > "$RD_T/teessh" && chmod +x "$RD_T/teessh"
mkdir -p "$RD_T/mf/src/proj" "$RD_T/mf/dst/proj" && printf 'one' > "$RD_T/mf/src/proj/filealpha" && printf 'two' > "$RD_T/mf/src/filebeta"
printf 'one' > "$RD_T/mf/dst/proj/filealpha" && printf 'hush' > "$RD_T/mf/dst/privatenotes" && mkdir "$RD_T/mf/dst/privatedir"
hexof() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$RD_T/teessh" --resume -r "srchost:$RD_T/mf/src/proj" "srchost:$RD_T/mf/src/filebeta" "$RD_T/mf/dst/" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp --resume -r srchost:proj srchost:filebeta DST/"
told=$(grep '^manifest ' "$RD_T/told" | tr 'A-F' 'a-f')
[ "$(cat "$RD_T/mf/dst/filebeta" 2>/dev/null)" = two ] || t_fail "filebeta not copied"
grep -q "$(hexof filealpha)" <<< "$told" || t_fail "proj/filealpha not in the manifest: $(head -c 300 "$RD_T/told")"
grep -q "$(hexof privatenotes)\|$(hexof privatedir)" <<< "$told" && t_fail "the manifest named DST's other files: $told"
# '~' goes to DST/<home's name>, known only to the source host: nothing of DST is told for it
: > "$RD_T/told"
HOME="$RD_T/mf/src" timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$RD_T/teessh" --resume -r 'srchost:~' "$RD_T/mf/dst/" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp --resume -r srchost:~ DST/"
[ "$(cat "$RD_T/mf/dst/src/filebeta" 2> /dev/null)" = two ] || t_fail "srchost:~ did not land in DST/src: $(tr '\n' '|' < "$C/e")"
grep '^manifest ' "$RD_T/told" | tr 'A-F' 'a-f' | grep -q "$(hexof privatenotes)" && t_fail "srchost:~: the manifest named DST's other files"
# ... which the source host names first: a second run finds DST/src whole (before 2026-12-08
# '~' told nothing and sent it all again)
: > "$RD_T/told"
HOME="$RD_T/mf/src" timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$RD_T/teessh" -v --resume -r 'srchost:~' "$RD_T/mf/dst/" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp --resume -r srchost:~ DST/, again"
grep -q 'skipped 6 bytes' "$C/e" || t_fail "srchost:~ again: not the 6 bytes skipped: $(grep skipped "$C/e")"
grep '^manifest ' "$RD_T/told" | tr 'A-F' 'a-f' | grep -q "$(hexof privatenotes)" && t_fail "srchost:~ again: the manifest named DST's other files"
# a contents copy (SRC/) writes into DST itself, names only the source host knows: it lists
# them first, and the destination tells it of those alone (before 2026-12-08: all of DST)
printf 'one' > "$RD_T/mf/dst/filealpha"; : > "$RD_T/told"
timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$RD_T/teessh" -v --resume -r "srchost:$RD_T/mf/src/proj/" "$RD_T/mf/dst/" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp --resume -r srchost:proj/ DST/"
grep -q 'skipped 3 bytes' "$C/e" || t_fail "srchost:proj/: not the 3 bytes of DST/filealpha skipped: $(grep skipped "$C/e")"
told=$(grep '^manifest ' "$RD_T/told" | tr 'A-F' 'a-f')
grep -q "$(hexof filealpha)" <<< "$told" || t_fail "srchost:proj/: filealpha not in the manifest"
grep -q "$(hexof privatenotes)\|$(hexof privatedir)\|$(hexof filebeta)" <<< "$told" && t_fail "srchost:proj/: the manifest named DST's other files"
t_end

t_begin "rdcp --resume, a contents source whose host lists too many names (a flood), or cannot list (an older agent): DST is told nothing, one warning, every file sent whole, exit 0"
# the stand-in ssh again, its agent's lines changed on their way: 2^20 + 1 names before
# 'listed' (the bound), or no 'listed' at all
cat > "$RD_T/flood" <<'EOF'
#!/bin/bash
while IFS= read -r l; do
    [ "$l" = listed ] && yes 'root 61' | head -n 1048577
    printf '%s\n' "$l"
done
EOF
printf '#!/bin/bash\nexec grep --line-buffered -v "^listed$"\n' > "$RD_T/old"
chmod +x "$RD_T/flood" "$RD_T/old"
for kind in flood old; do
    printf '#!/bin/bash\nwhile [ $# -gt 0 ]; do case $1 in -o) shift 2;; --) shift; break;; -*) shift;; *) break;; esac; done\nshift\nexport SSH_CONNECTION="127.0.0.1 1 127.0.0.1 22" PATH="%s:$PATH"\ntee -a "%s" | bash -c "$*" | "%s"\n' \
        "$RD_BIN" "$RD_T/told" "$RD_T/$kind" > "$RD_T/sshx" && chmod +x "$RD_T/sshx"
    : > "$RD_T/told"
    timeout -k 2 "$(lim 60)" "$RD_BIN/rdcp" --ssh "$RD_T/sshx" -v --resume -r "srchost:$RD_T/mf/src/proj/" "$RD_T/mf/dst/" > "$C/o" 2> "$C/e"
    expect_rc $? 0 "$kind: rdcp --resume -r srchost:proj/ DST/"
    case $kind in
        flood) why="the sources hold too many names at their top" ;;
        old) why="its rdpipe cannot list the sources' names" ;;
    esac
    [ "$(grep -c "^rdcp: warning: srchost: $why: --resume tells it nothing of $RD_T/mf/dst/; every file is sent whole$" "$C/e")" = 1 ] ||
        t_fail "$kind: not the one warning: $(grep -v '^rdcp: [0-9]* files' "$C/e" | tr '\n' '|')"
    grep -q 'skipped 0 bytes' "$C/e" || t_fail "$kind: something was skipped: $(grep skipped "$C/e")"
    grep '^manifest ' "$RD_T/told" | tr 'A-F' 'a-f' | grep -q "$(hexof filealpha)\|$(hexof privatenotes)" && t_fail "$kind: the manifest named DST's files"
    [ "$(cat "$RD_T/mf/dst/filealpha")" = one ] || t_fail "$kind: DST/filealpha is not the source's"
done
t_end

t_begin "rdcp: a remote pattern is expanded on the source host, as scp's remote shell does ('host:*.log', dirs with -r, no dot files, no match is 23, a file of that very name is itself)"
G=$RD_T/glob
mkdir -p "$G/src/dir1" "$G/src/dir2" "$G/dst" "$G/dst2" "$G/dst3"
for i in 1 2 3; do printf "$i" > "$G/src/f$i.log"; done
printf 'h' > "$G/src/.hidden.log"; printf 'n' > "$G/src/note.txt"; printf 'a' > "$G/src/dir1/a"; printf 'b' > "$G/src/dir2/b"
timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$RD_T/teessh" "srchost:$G/src/*.log" "$G/dst/" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp 'srchost:src/*.log' dst/"
[ "$(cd "$G/dst" && ls -A | tr '\n' ' ')" = "f1.log f2.log f3.log " ] || t_fail "dst holds: $(ls -A "$G/dst" | tr '\n' ' ')"
timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$RD_T/teessh" -r "srchost:$G/src/dir?" "$G/dst2/" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp -r 'srchost:src/dir?' dst2/"
[ "$(cat "$G/dst2/dir1/a" "$G/dst2/dir2/b" 2>/dev/null)" = ab ] || t_fail "dst2: $(ls -R "$G/dst2" | tr '\n' ' ')"
timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$RD_T/teessh" "srchost:$G/src/*.none" "$G/dst3/" > "$C/o" 2> "$C/e"
expect_rc $? 23 "rdcp 'srchost:src/*.none' dst3/"
expect_err "$C/e" rdcp "^rdcp: srchost: cannot stat '.*/src/\*\.none': No such file or directory$"
printf 'star' > "$G/src/*.txt"
timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$RD_T/teessh" "srchost:$G/src/*.txt" "$G/dst3/" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp 'srchost:src/*.txt' dst3/ (a file of that name)"
[ "$(ls -A "$G/dst3")" = '*.txt' ] || t_fail "dst3 holds: $(ls -A "$G/dst3" | tr '\n' ' ')"
# a pattern may name several sources: DST must be a directory, as for cp and scp
timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$RD_T/teessh" "srchost:$G/src/f1.*" "$G/newname" > "$C/o" 2> "$C/e"
expect_rc $? 23 "rdcp 'srchost:src/f1.*' newname"
expect_err "$C/e" rdcp "^rdcp: localhost: destination '.*/newname' is not a directory$"
# --resume: the manifest covers what the pattern matches in DST, not DST's other files
printf 'other' > "$G/dst/zz.txt"; : > "$RD_T/told"
timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$RD_T/teessh" -v --resume "srchost:$G/src/*.log" "$G/dst/" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp --resume 'srchost:src/*.log' dst/"
grep -q 'skipped 3 bytes' "$C/e" || t_fail "--resume skipped not the 3 bytes there: $(grep 'skipped' "$C/e")"
told=$(grep '^manifest ' "$RD_T/told" | tr 'A-F' 'a-f')
grep -q "$(hexof f2.log)" <<< "$told" || t_fail "f2.log not in the manifest"
grep -q "$(hexof zz.txt)" <<< "$told" && t_fail "the manifest named DST's zz.txt"
t_end

t_begin "rdcp: a destination agent's manifest lines without --resume are dropped, not kept nor passed to the source"
# a stand-in ssh for the destination whose agent says 'manifest' lines unasked, after its first line
printf '#!/bin/bash\nwhile [ $# -gt 0 ]; do case $1 in -o) shift 2;; --) shift; break;; -*) shift;; *) break;; esac; done\nshift\nexport SSH_CONNECTION="127.0.0.1 1 127.0.0.1 22" PATH="%s:$PATH"\nbash -c "$*" | { IFS= read -r l; printf "%%s\\n" "$l"; for i in 1 2 3; do echo "manifest 4d414e49464553544c494e45"; done; exec cat; }\n' \
    "$RD_BIN" > "$C/chattyssh" && chmod +x "$C/chattyssh"
printf '#!/bin/bash\ncase " $* " in *" dsthost "*) exec "%s" "$@";; *) exec "%s" "$@";; esac\n' "$C/chattyssh" "$RD_T/teessh" > "$C/bothssh" && chmod +x "$C/bothssh"
: > "$RD_T/told"; mkdir -p "$C/ch"
timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$C/bothssh" -r "srchost:$RD_T/mf/src/proj" "dsthost:$C/ch/" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcp -r srchost:proj dsthost:DST/"
[ "$(cat "$C/ch/proj/filealpha" 2>/dev/null)" = one ] || t_fail "not copied: $(tr '\n' '|' < "$C/e")"
grep -q '^manifest' "$RD_T/told" && t_fail "the source was told: $(grep '^manifest' "$RD_T/told" | head -3 | tr '\n' '|')"
t_end

t_begin "rdcp: a source host that cannot be logged into does not stop the other hosts' sources (exit 255, the rest copied)"
printf '#!/bin/bash\ncase " $* " in *" badhost "*) echo x >> "%s"; echo "ssh: connect to host badhost port 22: Connection refused" >&2; exit 255;; esac\nexec "%s" "$@"\n' \
    "$C/bad.log" "$RD_T/teessh" > "$C/badssh" && chmod +x "$C/badssh"
mkdir -p "$C/mh" && printf 'good' > "$C/good1" && printf 'more' > "$C/good2"
for order in first last; do
    rm -rf "$C/mh" && mkdir "$C/mh"
    if [ $order = first ]; then set -- badhost:x "goodhost:$C/good1" "goodhost:$C/good2"; else set -- "goodhost:$C/good1" badhost:x "goodhost:$C/good2"; fi
    timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$C/badssh" "$@" "$C/mh/" > "$C/o" 2> "$C/e"
    expect_rc $? 255 "rdcp with badhost $order"
    [ "$(cat "$C/mh/good1" "$C/mh/good2" 2> /dev/null)" = goodmore ] || t_fail "badhost $order: goodhost's files not copied: $(ls "$C/mh" | tr '\n' ' '); $(tr '\n' '|' < "$C/e")"
    grep -q 'badhost' "$C/e" || t_fail "badhost $order: not named: $(tr '\n' '|' < "$C/e")"
done
# a destination that cannot be logged into is tried once, not once per source host
rm -f "$C/bad.log"
timeout -k 2 "$(lim 30)" "$RD_BIN/rdcp" --ssh "$C/badssh" "goodhost:$C/good1" "otherhost:$C/good2" badhost:/x > "$C/o" 2> "$C/e"
expect_rc $? 255 "rdcp to badhost from two source hosts"
[ "$(wc -l < "$C/bad.log")" = 1 ] || t_fail "badhost was tried $(wc -l < "$C/bad.log") times"
t_end

t_begin "rdsend -v says when the receiver granted less than it asked (chunk, depth), and not when it granted all"
head -c 300000 /dev/urandom > "$C/in"
for grant in less all; do
    port=$(free_port)
    if [ $grant = less ]; then ropts=(--chunk-size 64K --depth 4); else ropts=(); fi
    start rp /dev/null /dev/null "$C/rerr" "$RDRECV" "${ropts[@]}" "$port" key-0123456789abcdef /dev/null
    wait_listen "$port" || t_fail "rdrecv did not listen"
    timeout -k 2 "$(lim 20)" "$RDSEND" -v --chunk-size 1M --depth 8 127.0.0.1 "$port" key-0123456789abcdef "$C/in" 2> "$C/serr"
    expect_rc $? 0 "rdsend -v ($grant)"
    wait_pid "$rp" 10 > /dev/null
    n=$(grep -c '^rdsend: the receiver granted less than asked: chunk 65536 of 1048576, depth 4 of 8, 1 of 1 connections (its own limits' "$C/serr")
    [ $grant = less ] && [ "$n" != 1 ] && t_fail "no line saying what was granted: $(tr '\n' '|' < "$C/serr")"
    [ $grant = all ] && grep -q 'granted less' "$C/serr" && t_fail "a line about a grant that was all: $(tr '\n' '|' < "$C/serr")"
done
t_end

t_begin "rdrecv that no sender reached: the FILE it created is gone, an existing FILE is kept as it was"
printf 'precious\n' > "$C/keep"
timeout -k 2 "$(lim 10)" "$RDRECV" --ready-fd 3 --timeout 1 0 key "$C/new" 2> "$C/e" 3> /dev/null
expect_rc $? 2 "rdrecv --timeout 1 (new FILE)"; expect_err "$C/e" rdrecv "timed out waiting for a sender"
[ -e "$C/new" ] && t_fail "the FILE it created is still there"
timeout -k 2 "$(lim 10)" "$RDRECV" --ready-fd 3 --timeout 1 0 key "$C/keep" 2> "$C/e" 3> /dev/null
expect_rc $? 2 "rdrecv --timeout 1 (existing FILE)"
[ "$(cat "$C/keep" 2>/dev/null)" = precious ] || t_fail "the existing FILE changed"
t_end

# a stand-in ssh for the rdcp cases below: each host is this machine (cwd: this one's)
standin_ssh() {
    printf '#!/bin/bash\nwhile [ $# -gt 0 ]; do case $1 in -o) shift 2;; --) shift; break;; -*) shift;; *) break;; esac; done\nshift\nexport SSH_CONNECTION="127.0.0.1 1 127.0.0.1 22" PATH="%s:$PATH"\nexec bash -c "$*"\n' "$RD_BIN" > "$C/ssh" && chmod +x "$C/ssh"
}

t_begin "rdcp -p and -a keep the access times of files and directories as cp -p does (as they were before rdcp read them; local and to a host), without -p they are not copied"
standin_ssh
mkdir -p "$C/at/src/d"
printf 'one' > "$C/at/src/d/f"; printf 'two' > "$C/at/src/g"
touch -m -d '2010-01-02 03:04:05.5' "$C/at/src/d/f" "$C/at/src/g"
old='2001-02-03 04:05:06.123456789'
for how in local remote; do
    for opt in -rp -a -r; do
        # the atimes again before each copy (the copy reads them, which may move them)
        touch -a -d "$old" "$C/at/src/d/f" "$C/at/src/g"; touch -a -d "$old" "$C/at/src/d" "$C/at/src"
        want=$(stat -c '%X.%x' "$C/at/src/d/f" "$C/at/src/g" "$C/at/src/d" | tr '\n' ' ')
        dst=$C/at/dst-$how$opt; dstarg=$dst
        [ $how = remote ] && dstarg=h2:$dst
        timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" --ssh "$C/ssh" $opt "$C/at/src/" "$dstarg" > "$C/o" 2> "$C/e"
        expect_rc $? 0 "rdcp $opt src/ ($how)"
        expect_empty "$C/e" "rdcp $opt src/ ($how) stderr"
        got=$(stat -c '%X.%x' "$dst/d/f" "$dst/g" "$dst/d" 2>/dev/null | tr '\n' ' ')   # before reading them
        [ "$(cat "$dst/d/f" "$dst/g" 2>/dev/null)" = onetwo ] || t_fail "$opt ($how): the files' contents"
        if [ $opt = -r ]; then   # not asked for: a fresh atime, not the source's
            case $got in *2001-02-03*) t_fail "-r ($how) copied an atime: $got" ;; esac
        else
            [ "$got" = "$want" ] || t_fail "$opt ($how): atimes of d/f g d: $got, the source's: $want"
            [ "$(stat -c %y "$dst/d/f")" = "$(stat -c %y "$C/at/src/d/f")" ] || t_fail "$opt ($how): the mtime of d/f: $(stat -c %y "$dst/d/f")"
        fi
    done
done
t_end

t_begin "rdcp -a: a hard link whose first name cannot be made (a directory in the way, a directory that cannot be made) still gets its other names, linked (exit 23, the failure said)"
standin_ssh
mkdir -p "$C/hl/src/d1" "$C/hl/src/d2" "$C/hl/dst1/src/a" "$C/hl/dst2/src"
printf 'linked data' > "$C/hl/src/a"; ln "$C/hl/src/a" "$C/hl/src/b"; ln "$C/hl/src/a" "$C/hl/src/c"
printf 'deep' > "$C/hl/src/d1/x"; ln "$C/hl/src/d1/x" "$C/hl/src/d2/y"; ln "$C/hl/src/d1/x" "$C/hl/src/d2/z"
# dst1: a directory where the first name 'a' lands
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" -a "$C/hl/src" "$C/hl/dst1/" > "$C/o" 2> "$C/e"
expect_rc $? 23 "rdcp -a src dst1/ (a directory in a's way)"
expect_err "$C/e" rdcp "^rdcp: localhost: cannot rename into place '.*/hl/dst1/src/a': Is a directory$"
[ -d "$C/hl/dst1/src/a" ] || t_fail "dst1/src/a is no longer the directory"
[ "$(cat "$C/hl/dst1/src/b" "$C/hl/dst1/src/c" 2>/dev/null)" = "linked datalinked data" ] || t_fail "dst1: b and c: $(ls -la "$C/hl/dst1/src" | tr '\n' '|')"
[ "$(stat -c %i "$C/hl/dst1/src/b" 2>/dev/null)" = "$(stat -c %i "$C/hl/dst1/src/c" 2>/dev/null)" ] || t_fail "dst1: b and c are not one file"
[ "$(stat -c %h "$C/hl/dst1/src/b" 2>/dev/null)" = 2 ] || t_fail "dst1: b has $(stat -c %h "$C/hl/dst1/src/b" 2>/dev/null) names, not 2"
[ "$(stat -c %Y "$C/hl/dst1/src/b" 2>/dev/null)" = "$(stat -c %Y "$C/hl/src/a")" ] || t_fail "dst1: b lost its mtime (-a)"
# dst2 (to a host): a file where the directory d1 goes, so d1/x (the first name) cannot be made
printf 'blocker' > "$C/hl/dst2/src/d1"
timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" --ssh "$C/ssh" -a "$C/hl/src" "h2:$C/hl/dst2/" > "$C/o" 2> "$C/e"
expect_rc $? 23 "rdcp -a src h2:dst2/ (a file in d1's way)"
expect_err "$C/e" rdcp "^rdcp: h2: cannot create directory '.*/hl/dst2/src/d1': File exists$"
[ "$(cat "$C/hl/dst2/src/d1")" = blocker ] || t_fail "dst2/src/d1 changed"
[ "$(cat "$C/hl/dst2/src/d2/y" "$C/hl/dst2/src/d2/z" 2>/dev/null)" = deepdeep ] || t_fail "dst2: d2/y and d2/z: $(ls -la "$C/hl/dst2/src/d2" 2>&1 | tr '\n' '|')"
[ "$(stat -c %i "$C/hl/dst2/src/d2/y" 2>/dev/null)" = "$(stat -c %i "$C/hl/dst2/src/d2/z" 2>/dev/null)" ] || t_fail "dst2: y and z are not one file"
[ "$(cat "$C/hl/dst2/src/a" "$C/hl/dst2/src/b" 2>/dev/null)" = "linked datalinked data" ] || t_fail "dst2: a and b"
# nothing left behind: no temporary file anywhere
left=$(find "$C/hl/dst1" "$C/hl/dst2" -name '.rdcp.*')
[ -z "$left" ] || t_fail "temporary files left: $left"
t_end

t_begin "rdcp FILE/ (a regular file named with a trailing '/'): as a source, local or on a host, and as DST, local or on a host: cp's words, exit 23 (DST was exit 5, 'cannot access')"
standin_ssh
printf 'A' > "$C/afile"; printf 'B' > "$C/bfile"; mkdir -p "$C/dd"
for src in "$C/afile/" "h2:$C/afile/"; do
    host=localhost; case $src in h2:*) host=h2 ;; esac
    timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" --ssh "$C/ssh" "$src" "$C/dd/" > "$C/o" 2> "$C/e"
    expect_rc $? 23 "rdcp $src dd/"
    expect_err "$C/e" rdcp "^rdcp: $host: cannot stat '.*/afile/': Not a directory$"
    timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" --ssh "$C/ssh" "$src" "$C/new" > "$C/o" 2> "$C/e"
    expect_rc $? 23 "rdcp $src new"
    expect_err "$C/e" rdcp "^rdcp: $host: cannot stat '.*/afile/': Not a directory$"
    [ -e "$C/new" ] && t_fail "rdcp $src new made new"
done
for dst in "$C/afile/" "h2:$C/afile/" "$C/nodir/"; do
    host=localhost; case $dst in h2:*) host=h2 ;; esac
    timeout -k 2 "$(lim 20)" "$RD_BIN/rdcp" --ssh "$C/ssh" "$C/bfile" "$dst" > "$C/o" 2> "$C/e"
    expect_rc $? 23 "rdcp bfile $dst"
    expect_err "$C/e" rdcp "^rdcp: $host: destination '.*/(afile|nodir)/' is not a directory$"
done
[ "$(cat "$C/afile")" = A ] || t_fail "afile changed: $(cat "$C/afile")"
[ -e "$C/nodir" ] && t_fail "nodir was made"
t_end

t_begin "rdcp: a role that dies with no JSON (as out of memory does) between a -v line and a warning: its last message, not the -v line nor the warning, is the reason; the -v summary says the copy failed"
# before 2026-12-07 the agent kept the role's first line: 'receiving the tree failed (exit 5):
# listening on port ...' under -v. (After a warning the reason is named again, with its end.) The agent runs the role as its sibling rdcp: a copy of the
# tools with a stand-in rdcp whose --tree-recv dies so, the real one behind it otherwise.
mkdir -p "$C/fake/src" "$C/fake/dst"; echo hi > "$C/fake/src/a"
for t in rdpipe rdsend rdrecv; do cp "$RD_BIN/$t" "$C/fake/"; done
cp "$RD_BIN/rdcp" "$C/fake/rdcp-real"
cat > "$C/fake/rdcp" <<FAKE
#!/bin/bash
if [ "\$1" = --tree-recv ]; then
    echo "rdcp: listening on port 1 (tcp)" >&2; echo "rdcp: out of memory" >&2; echo "rdcp: warning: a warning" >&2
    exit 5
fi
exec "$C/fake/rdcp-real" "\$@"
FAKE
chmod +x "$C/fake/rdcp"
timeout -k 2 "$(lim 20)" "$C/fake/rdcp-real" -v -r "$C/fake/src" "$C/fake/dst/" > "$C/o" 2> "$C/e"
expect_rc $? 5 "rdcp whose destination role died"
grep -q '^rdcp: 0 files, .*; 0 errors; failed (exit 5)$' "$C/e" || t_fail "the summary does not say the copy failed: $(grep '^rdcp: [0-9]* files, ' "$C/e")"
grep -v '^rdcp: [0-9]* files, ' "$C/e" > "$C/e2"
diff <(printf '%s\n' "rdcp: localhost: listening on port 1 (tcp)" "rdcp: localhost: out of memory" \
       "rdcp: localhost: warning: a warning" "rdcp: localhost: receiving the tree failed (exit 5): out of memory") "$C/e2" > "$C/d" || t_fail "stderr: $(tr '\n' '|' < "$C/d")"
t_end
