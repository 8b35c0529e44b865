#!/usr/bin/env bash
# tests/rdpipe/run.sh - rdpipe across real hosts: network namespaces running real sshds.
#
#   tests/rdpipe/run.sh            all cases (about a minute)
#   RDPIPE_BIN=dir                 where rdpipe/rdsend/rdrecv are (default: bin/ of the repo)
#   RDPIPE_KEEP=1                  keep the scratch directory (sshd logs) for debugging
#
# Layout: a "switch" namespace with a bridge, and hosts h0 h1 h2 h3 (10.99.0.10-13), each in
# its own namespace joined to the bridge by a veth pair. Nothing is configured in the root
# namespace. Every host runs its own sshd (host key, authorized key and config generated here,
# PATH with the repo's bin/ through SetEnv); the initiator runs in h0 with
# --ssh 'ssh -F cfg', where cfg names the hosts h0..h3 like the examples in the README.
# Namespaces share the filesystem and the process table, so files are compared directly and
# `ip netns pids` shows what is left on each "host" after every case.
#
# Prints one line per case and "N passed, N failed"; exits 0 iff all passed, 77 if it cannot
# run here (not root, no sshd, no network namespaces).
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${RDPIPE_BIN:-$ROOT/bin}
case $BIN in /*) ;; *) BIN=$ROOT/$BIN ;; esac

. "$ROOT/tests/rdpipe/lib.sh"

ok() { echo "ok   $1"; PASS=$((PASS + 1)); }
bad() { echo "FAIL $1: $2"; FAILN=$((FAILN + 1)); }
after() {   # after NAME: verify no strays, report them as a failure of NAME
    local s
    if ! s=$(no_strays); then bad "$1" "processes left: $(echo "$s" | tr '\n' ';')"; return 1; fi
    return 0
}

# wait until `pattern` matches N processes (pgrep -f), up to 20 s (times RDPIPE_SLOW: a
# sanitizer build beside other runs needs longer to move big.img through a relay)
wait_procs() {
    local pat=$1 n=$2
    for _ in $(seq $((200 * ${RDPIPE_SLOW:-1}))); do
        [ "$(pgrep -fc "$pat")" -ge "$n" ] && return 0
        sleep 0.1
    done
    return 1
}
ns_wait_pid() {   # ns_wait_pid HOST REGEX: ns_pid_matching, waiting up to 20 s (times RDPIPE_SLOW)
    for _ in $(seq $((200 * ${RDPIPE_SLOW:-1}))); do
        ns_pid_matching "$1" "$2" && return 0
        sleep 0.1
    done
    return 1
}
ns_pid_matching() {   # ns_pid_matching HOST REGEX: a pid in that namespace whose cmdline matches
    for p in $(ip netns pids "$P$1"); do
        if tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -Eq "$2"; then echo "$p"; return 0; fi
    done
    return 1
}

rdp_setup_or_skip
PASS=0 FAILN=0

# ---------------------------------------------------------------------------------------
head -c $((64 << 20)) /dev/urandom > "$T/big.img"
head -c 123457 /dev/urandom > "$T/small.bin"
BIGSUM=$(sha256sum < "$T/big.img" | cut -d' ' -f1)

name="example 1: echo hello | rdpipe h1:'tr a-z A-Z' h2:'rev'"
out=$(echo hello | rdpipe_h0 h1:'tr a-z A-Z' h2:'rev' 2>"$T/err"); rc=$?
if [ $rc = 0 ] && [ "$out" = OLLEH ]; then after "$name" && ok "$name"
else bad "$name" "rc=$rc out='$out' err=$(head -c 600 "$T/err")"; fi

name="example 2: h1:'producer' h2:'consumer', data h1 -> h2 directly"
rm -f "$T/copy2.bin"
rdpipe_h0 -v h1:"cat $T/small.bin" h2:"cat > $T/copy2.bin" </dev/null >"$T/out" 2>"$T/err"; rc=$?
if [ $rc = 0 ] && cmp -s "$T/small.bin" "$T/copy2.bin" && [ ! -s "$T/out" ] &&
   grep -q "h1 'cat $T/small.bin' -> h2 'cat > $T/copy2.bin': 123457 bytes" "$T/err"; then
    after "$name" && ok "$name"
else bad "$name" "rc=$rc err=$(head -c 800 "$T/err")"; fi

name="example 3: h1:'< big.img' h2:'tee >(sha256sum > sum)' h3:'> big.img'"
rm -f "$T/copy3.img" "$T/sum"
rdpipe_h0 h1:"< $T/big.img" h2:"tee >(sha256sum > $T/sum)" h3:"> $T/copy3.img" </dev/null 2>"$T/err"; rc=$?
sum=$(cut -d' ' -f1 "$T/sum" 2>/dev/null)
if [ $rc = 0 ] && cmp -s "$T/big.img" "$T/copy3.img" && [ "$sum" = "$BIGSUM" ]; then
    after "$name" && ok "$name"
else bad "$name" "rc=$rc sum=$sum err=$(head -c 600 "$T/err")"; fi

name="example 4: rdpipe -v h1:'wc -c' < file (bytes and bandwidth per hop)"
out=$(rdpipe_h0 -v h1:'wc -c' < "$T/big.img" 2>"$T/err"); rc=$?
if [ $rc = 0 ] && [ "$out" = $((64 << 20)) ] &&
   grep -q "hop 1 local stdin -> h1 'wc -c': 67108864 bytes .* GB/s" "$T/err" &&
   grep -q "hop 2 h1 'wc -c' -> local stdout: 9 bytes" "$T/err"; then
    after "$name" && ok "$name"
else bad "$name" "rc=$rc out='$out' err=$(head -c 800 "$T/err")"; fi

name="same host three times in one pipeline"
out=$(echo abc | rdpipe_h0 h1:'tr a-z A-Z' h1:'rev' h1:'tr A-Z a-z' 2>"$T/err"); rc=$?
if [ $rc = 0 ] && [ "$out" = cba ]; then after "$name" && ok "$name"
else bad "$name" "rc=$rc out='$out' err=$(head -c 600 "$T/err")"; fi

name="two pipelines at once over the same hosts"
(rdpipe_h0 h1:"cat $T/big.img" h2:'cat' h1:'sha256sum' </dev/null > "$T/p1" 2>"$T/e1") &
pa=$!
(rdpipe_h0 h2:"cat $T/big.img" h1:'cat' h2:'sha256sum' </dev/null > "$T/p2" 2>"$T/e2") &
pb=$!
wait $pa; ra=$?; wait $pb; rb=$?
if [ $ra = 0 ] && [ $rb = 0 ] && [ "$(cut -d' ' -f1 "$T/p1")" = "$BIGSUM" ] &&
   [ "$(cut -d' ' -f1 "$T/p2")" = "$BIGSUM" ]; then after "$name" && ok "$name"
else bad "$name" "rc=$ra/$rb err=$(head -c 400 "$T/e1") $(head -c 400 "$T/e2")"; fi

name="--encrypt --compress through two relays: each stream compressed and encrypted end to end, byte-identical"
out=$(rdpipe_h0 -vv --encrypt --compress h1:"< $T/big.img" h2:'cat' h3:'cat' h1:'sha256sum' </dev/null 2>"$T/err"); rc=$?
nenc=$(grep -c "encrypted with" "$T/err"); nzstd=$(grep -c "on the wire (ratio .*, zstd auto)" "$T/err")
if [ $rc = 0 ] && [ "$(echo "$out" | cut -d' ' -f1)" = "$BIGSUM" ] && [ "$nenc" -ge 2 ] && [ "$nzstd" -ge 1 ]; then
    after "$name" && ok "$name"
else bad "$name" "rc=$rc out='$out' 'encrypted with' lines: $nenc, 'zstd auto' lines: $nzstd err=$(head -c 800 "$T/err")"; fi

name="--compress=abc is a usage error naming the value"
rdpipe_h0 --compress=abc h1:cat </dev/null >/dev/null 2>"$T/err"; rc=$?
if [ $rc = 1 ] && grep -q "^rdpipe: --compress must be auto or a zstd level from -7 to 19 (not 0), not 'abc'$" "$T/err"; then ok "$name"
else bad "$name" "rc=$rc err=$(head -c 300 "$T/err")"; fi

name="--lanes 2 through a relay: every rdsend and rdrecv runs 2 lanes (-vv), byte-identical"
out=$(rdpipe_h0 -vv --lanes 2 h1:"< $T/big.img" h2:'cat' h1:'sha256sum' </dev/null 2>"$T/err"); rc=$?
nl=$(grep -c "; lanes 2 (--lanes)" "$T/err")
if [ $rc = 0 ] && [ "$(echo "$out" | cut -d' ' -f1)" = "$BIGSUM" ] && [ "$nl" = 4 ]; then after "$name" && ok "$name"
else bad "$name" "rc=$rc out='$out' 'lanes 2 (--lanes)' lines: $nl (want 4) err=$(grep lanes "$T/err" | head -c 800)"; fi

name="--streams 2 through a command: both hops striped over 2 connections (-v), byte-identical"
out=$(rdpipe_h0 -v --streams 2 h1:"< $T/big.img" h2:'cat -' h1:'sha256sum' </dev/null 2>"$T/err"); rc=$?
ns=$(grep -c "^rdpipe: hop [12] .* GB/s over tcp, 2 streams$" "$T/err")
if [ $rc = 0 ] && [ "$(echo "$out" | cut -d' ' -f1)" = "$BIGSUM" ] && [ "$ns" = 2 ]; then after "$name" && ok "$name"
else bad "$name" "rc=$rc out='$out' hops over 2 streams: $ns (want 2) err=$(grep hop "$T/err" | head -c 800)"; fi

name="--streams 2 through two relays: all 3 hops striped over 2 connections, the relays' too (-v), byte-identical"
out=$(rdpipe_h0 -v --streams 2 h1:"< $T/big.img" h2:'cat' h3:'cat' h1:'sha256sum' </dev/null 2>"$T/err"); rc=$?
ns=$(grep -c "^rdpipe: hop [123] .* GB/s over tcp, 2 streams$" "$T/err")
if [ $rc = 0 ] && [ "$(echo "$out" | cut -d' ' -f1)" = "$BIGSUM" ] && [ "$ns" = 3 ]; then after "$name" && ok "$name"
else bad "$name" "rc=$rc out='$out' hops over 2 streams: $ns (want 3) err=$(grep hop "$T/err" | head -c 800)"; fi

name="--lanes x is a usage error naming the value"
rdpipe_h0 --lanes x h1:cat </dev/null >/dev/null 2>"$T/err"; rc=$?
if [ $rc = 1 ] && [ "$(cat "$T/err")" = "rdpipe: --lanes must be from 1 to 64, not 'x'" ]; then ok "$name"
else bad "$name" "rc=$rc err=$(head -c 300 "$T/err")"; fi

name="the initiator as a middle hop (localhost:'cmd' and bare 'cmd')"
out=$(echo abc | rdpipe_h0 h1:'tr a-z A-Z' localhost:'rev' h2:'tr A-Z a-z' 'tr c C' 2>"$T/err"); rc=$?
if [ $rc = 0 ] && [ "$out" = Cba ]; then after "$name" && ok "$name"
else bad "$name" "rc=$rc out='$out' err=$(head -c 600 "$T/err")"; fi

name="'>file' truncates, '>>file' appends, '<file' as the only segment"
echo old-content-that-must-go > "$T/f"
echo one | rdpipe_h0 h2:"> $T/f" 2>"$T/err"; r1=$?
echo two | rdpipe_h0 h3:">> $T/f" 2>>"$T/err"; r2=$?
rdpipe_h0 h3:">> $T/new" </dev/null 2>>"$T/err"; r3=$?
out=$(rdpipe_h0 h1:"< $T/f" </dev/null 2>>"$T/err"); r4=$?
if [ $r1$r2$r3$r4 = 0000 ] && [ "$(cat "$T/f")" = "$(printf 'one\ntwo')" ] && [ -e "$T/new" ] &&
   [ "$out" = "$(printf 'one\ntwo')" ]; then after "$name" && ok "$name"
else bad "$name" "rc=$r1$r2$r3$r4 f='$(cat "$T/f")' out='$out' err=$(head -c 600 "$T/err")"; fi

name="'<file' and '>file' with ~/ and ~root/: that host's home directory, as scp takes it"
H=$(on_h0 $SSH h2 'mktemp -d ~/.rdpipe-test.XXXXXX') && HB=${H##*/} || H=
echo tilde-in > "$H/in" 2>/dev/null
rdpipe_h0 h2:"< ~/$HB/in" h3:"> ~root/$HB/out" </dev/null 2>"$T/err"; rc=$?
if [ -n "$H" ] && [ $rc = 0 ] && [ "$(cat "$H/out" 2>/dev/null)" = tilde-in ]; then after "$name" && ok "$name"
else bad "$name" "rc=$rc H=$H $(ls -a "$H" 2>&1 | tr '\n' ' ') err=$(head -c 600 "$T/err")"; fi
case $H in */.rdpipe-test.*) rm -rf "$H" ;; esac

name="stdin that is a terminal is not read; '>file' without input truncates"
if command -v script >/dev/null; then
    echo some-old-content > "$T/tty.out"
    on_h0 timeout 60 script -qec "rdpipe --ssh '$SSH' h1:'wc -c' h2:'> $T/tty.out'" /dev/null > "$T/tty.log" 2>&1; r1=$?
    on_h0 timeout 60 script -qec "rdpipe --ssh '$SSH' h3:'> $T/tty.out2'" /dev/null >> "$T/tty.log" 2>&1; r2=$?
    if [ $r1$r2 = 00 ] && [ "$(tr -d ' ' < "$T/tty.out")" = 0 ] && [ -e "$T/tty.out2" ] && [ ! -s "$T/tty.out2" ]; then
        after "$name" && ok "$name"
    else bad "$name" "rc=$r1$r2 out='$(cat "$T/tty.out")' log=$(head -c 400 "$T/tty.log")"; fi
else
    echo "skip $name: no script(1)"
fi

name="--remote-path (rdsend/rdrecv taken from the same directory)"
mkdir -p "$T/alt"
cp "$BIN/rdpipe" "$BIN/rdsend" "$BIN/rdrecv" "$T/alt/"
out=$(echo hello | rdpipe_h0 --remote-path "$T/alt/rdpipe" h1:'rev' h2:'tr a-z A-Z' 2>"$T/err"); rc=$?
if [ $rc = 0 ] && [ "$out" = OLLEH ]; then after "$name" && ok "$name"
else bad "$name" "rc=$rc out='$out' err=$(head -c 600 "$T/err")"; fi

name="-n prints the plan and starts nothing (a cat between hops shows as a relay)"
out=$(rdpipe_h0 -n h1:'tr a-z A-Z' h8:cat h9:'rev' </dev/null 2>&1); rc=$?
if [ $rc = 0 ] && echo "$out" | grep -q "h9 'rev'" && echo "$out" | grep -q "bash -c 'tr a-z A-Z'" &&
   echo "$out" | grep -A1 "[0-9]. h8 'cat'" | grep -q "relay: rdrecv --relay-fd"; then ok "$name"
else bad "$name" "rc=$rc out=$out"; fi

name="usage errors exit 1"
rdpipe_h0 >/dev/null 2>&1; r1=$?
rdpipe_h0 h1:cat "h2:< x" </dev/null >/dev/null 2>&1; r2=$?
rdpipe_h0 "h1:> x" h2:cat </dev/null >/dev/null 2>&1; r3=$?
if [ $r1$r2$r3 = 111 ]; then ok "$name"; else bad "$name" "rc=$r1 $r2 $r3"; fi

name="unknown host: ssh fails, exit 255 naming the host and saying it could not log in"
rdpipe_h0 h1:cat nosuchhost.invalid:cat </dev/null >/dev/null 2>"$T/err"; rc=$?
if [ $rc = 255 ] && grep -q "rdpipe: nosuchhost.invalid: cannot log in to run nosuchhost.invalid .cat. (ssh exited with status 255); see ssh.s message above" "$T/err"; then after "$name" && ok "$name"
else bad "$name" "rc=$rc err=$(head -c 600 "$T/err")"; fi

name="no rdpipe at --remote-path: exit 255, 'cannot start the agent', the PATH named"
rdpipe_h0 --remote-path /nonexistent/rdpipe h1:cat h2:cat </dev/null >/dev/null 2>"$T/err"; rc=$?
if [ $rc = 255 ] && grep -q "rdpipe: h[12]: cannot start the agent to run h[12] .cat. (ssh exited with status 127); is rdpipe on the PATH there? (see --remote-path)" "$T/err"; then after "$name" && ok "$name"
else bad "$name" "rc=$rc err=$(head -c 600 "$T/err")"; fi

name="'false' in the middle: status 1, message names host and command"
rdpipe_h0 h1:"cat $T/big.img" h2:'false' h3:'cat' </dev/null >/dev/null 2>"$T/err"; rc=$?
if [ $rc = 1 ] && grep -q "rdpipe: h2: command 'false' failed with exit status 1" "$T/err"; then
    after "$name" && ok "$name"
else bad "$name" "rc=$rc err=$(head -c 600 "$T/err")"; fi

name="a failing command: exit status 7 passes through"
out=$(echo x | rdpipe_h0 h1:'cat' h3:'cat; exit 7' 2>"$T/err"); rc=$?
if [ $rc = 7 ] && grep -q "h3: command 'cat; exit 7' failed with exit status 7" "$T/err"; then
    after "$name" && ok "$name"
else bad "$name" "rc=$rc err=$(head -c 600 "$T/err")"; fi

# start a pipeline that runs until it is killed: sleep $NAP on three hosts
start_sleepers() {
    (cd "$T" && exec ip netns exec "${P}h0" env PATH="$BIN:$PATH" \
        rdpipe --ssh "$SSH" h1:"sleep $NAP" h2:"cat; sleep $NAP" h3:"sleep $NAP" </dev/null >/dev/null 2>"$T/err") &
    RP=$!
    ( sleep $((60 * ${RDPIPE_SLOW:-1})); kill -9 $RP 2>/dev/null ) &
    GUARD=$!
    wait_procs "$NAP_RE" 3
}
finish_sleepers() {   # finish_sleepers NAME EXPECTED-RC GREP
    local rc=0
    wait $RP; rc=$?
    kill $GUARD 2>/dev/null; wait $GUARD 2>/dev/null
    if [ $rc = "$2" ] && grep -q "$3" "$T/err"; then after "$1" && ok "$1"
    else after "$1"; bad "$1" "rc=$rc err=$(head -c 600 "$T/err")"; fi
}

name="agent killed (SIGKILL): everything stops, exit 255"
if start_sleepers && ap=$(ns_wait_pid h2 'rdpipe --agent'); then
    kill -9 "$ap"
    finish_sleepers "$name" 255 "rdpipe: h2: lost the connection"
else bad "$name" "pipeline did not start: $(head -c 400 "$T/err")"; kill -9 $RP 2>/dev/null; wait $RP; after "$name"; fi

name="ssh killed: everything stops, exit 255"
if start_sleepers && sp=$(ns_wait_pid h0 '^ssh .* h3 '); then
    kill -9 "$sp"
    finish_sleepers "$name" 255 "rdpipe: h3: lost the connection .*ssh killed by signal 9"
else bad "$name" "pipeline did not start: $(head -c 400 "$T/err")"; kill -9 $RP 2>/dev/null; wait $RP; after "$name"; fi

name="SIGINT to rdpipe: everything stops, exit 130"
if start_sleepers; then
    kill -INT $RP
    finish_sleepers "$name" 130 "interrupted"
else bad "$name" "pipeline did not start"; kill -9 $RP 2>/dev/null; wait $RP; after "$name"; fi

name="SIGTERM to rdpipe: everything stops, exit 143"
if start_sleepers; then
    kill -TERM $RP
    finish_sleepers "$name" 143 "interrupted"
else bad "$name" "pipeline did not start"; kill -9 $RP 2>/dev/null; wait $RP; after "$name"; fi

name="rdpipe itself killed (SIGKILL): the agents notice and stop"
if start_sleepers; then
    kill -9 $RP
    wait $RP 2>/dev/null
    kill $GUARD 2>/dev/null; wait $GUARD 2>/dev/null
    after "$name" && ok "$name"
else bad "$name" "pipeline did not start"; kill -9 $RP 2>/dev/null; wait $RP; after "$name"; fi

name="a transfer killed (rdrecv SIGKILL): its status, nothing left"
if start_sleepers && vp=$(ns_wait_pid h2 'rdrecv'); then
    kill -9 "$vp"
    finish_sleepers "$name" 137 "rdpipe: h2: receiving the stream"
else bad "$name" "pipeline did not start: $(head -c 400 "$T/err")"; kill -9 $RP 2>/dev/null; wait $RP; after "$name"; fi

# a plain `cat` between two hops is one relay process that forwards frames unchanged
start_relay() {
    (cd "$T" && exec ip netns exec "${P}h0" env PATH="$BIN:$PATH" \
        rdpipe --ssh "$SSH" h1:"cat $T/big.img; sleep $NAP" h2:'cat' h3:"cat > /dev/null; sleep $NAP" </dev/null >/dev/null 2>"$T/err") &
    RP=$!
    ( sleep $((60 * ${RDPIPE_SLOW:-1})); kill -9 $RP 2>/dev/null ) &
    GUARD=$!
    wait_procs "$NAP_RE" 2
}
name="relay: h2:'cat' runs as rdrecv --relay-fd alone (no cat, no rdsend); killed: exit 137 naming it"
if start_relay && vp=$(ns_wait_pid h2 'rdrecv .*--relay-fd'); then
    extra=$(ns_pid_matching h2 '^(cat|rdsend|bash)( |$)')
    kill -9 "$vp"
    if [ -n "$extra" ]; then
        wait $RP; kill $GUARD 2>/dev/null; wait $GUARD 2>/dev/null
        bad "$name" "h2 also runs: $(tr '\0' ' ' < "/proc/$extra/cmdline" 2>/dev/null)"; after "$name"
    else
        finish_sleepers "$name" 137 "rdpipe: h2: relaying the stream from h1 to h3 failed"
    fi
else bad "$name" "pipeline did not start: $(head -c 400 "$T/err")"; kill -9 $RP 2>/dev/null; wait $RP; after "$name"; fi

# the consumer's status is the cause named, though its rdrecv fails first (a broken pipe): at
# once, and 50 ms after it closed its input (the agent gives it 200 ms before it stops it;
# the build before stopped it at once and named the broken pipe)
for consumer in 'head -c 1000 > /dev/null; exit 6' 'head -c 1000 > /dev/null; exec 0<&-; sleep 0.05; exit 6'; do
    name="relay: the consumer behind it quits early ($consumer): its status, the relay and the producer stop"
    rdpipe_h0 h1:"cat $T/big.img" h2:'cat' h3:"$consumer" </dev/null >/dev/null 2>"$T/err"; rc=$?
    if [ $rc = 6 ] && grep -q "rdpipe: h3: command '$consumer' failed with exit status 6" "$T/err"; then
        after "$name" && ok "$name"
    else bad "$name" "rc=$rc err=$(head -c 600 "$T/err")"; fi
done

name="relay: two relays on one host, -v names every hop"
rdpipe_h0 -v h1:"< $T/big.img" h2:'cat' h2:'cat' h3:"> $T/copy5.img" </dev/null >/dev/null 2>"$T/err"; rc=$?
if [ $rc = 0 ] && cmp -s "$T/big.img" "$T/copy5.img" &&
   [ "$(grep -c "hop [123] .*: 67108864 bytes" "$T/err")" = 3 ]; then
    after "$name" && ok "$name"
else bad "$name" "rc=$rc err=$(head -c 800 "$T/err")"; fi
rm -f "$T/copy5.img"

name="1 GiB of random data through 3 hosts (4 hops), sha256 compared"
big=$((1 << 30))
[ "${RDPIPE_BIG:-1}" = 0 ] && { big=$((64 << 20)); name="64 MiB (--no-big) of random data through 3 hosts (4 hops), sha256 compared"; }
head -c $big /dev/urandom > "$T/rnd"
sha256sum < "$T/rnd" | cut -d' ' -f1 > "$T/want" &   # hashed while the pipeline runs
hp=$!
t0=$(date +%s.%N)
# not in $(...): PIPESTATUS after got=$(...) would be the assignment's, never rdpipe's
rdpipe_h0 h1:'cat' h2:'cat' h3:'cat' < "$T/rnd" 2>"$T/err" | sha256sum | cut -d' ' -f1 > "$T/got"
rc=${PIPESTATUS[0]}
got=$(cat "$T/got")
t1=$(date +%s.%N)
wait $hp
want=$(cat "$T/want")
rm -f "$T/rnd"
if [ "$rc" = 0 ] && [ -n "$want" ] && [ "$got" = "$want" ]; then
    after "$name" && ok "$name ($(echo "$t0 $t1" | awk '{printf "%.1f s", $2 - $1}'))"
else bad "$name" "rc=$rc got=$got want=$want err=$(head -c 600 "$T/err")"; fi

# ---------------------------------------------------------------------------------------
# rdcheck HOST over a real sshd: it starts `rdrecv --check` on h2 through ssh (the key over the
# channel, never in an argv), reaches its TCP port, and moves a second of traffic each way.
# No RDMA device in the namespaces: exit 1, with the device, route and remote-RDMA lines ✗.
name="rdcheck h2 over a real sshd: agent, TCP port, traffic each way, the agent gone after"
if [ -x "$BIN/rdcheck" ]; then
    # rdcheck resolves HOST itself (the route check), so it gets h2's address, and ssh a config
    # that knows the hosts by address too
    sed 's/^Host h0 h1 h2 h3$/Host h0 h1 h2 h3 10.99.0.*/' "$CFG" > "$T/cfg-addr"
    on_h0 timeout 60 rdcheck --ssh "ssh -F $T/cfg-addr" "${ADDR[h2]}" > "$T/check.out" 2> "$T/check.err"; rc=$?
    why=""
    [ "$rc" = 1 ] || why+="exit $rc, expected 1 (no RDMA device); "
    [ -s "$T/check.err" ] && why+="stderr: $(head -c 300 "$T/check.err"); "
    grep -Eq '^✓ agent: rdrecv --check listens on [0-9.]+ port [0-9]+ \(tcp(,rdma)?\)$' "$T/check.out" || why+="no agent line; "
    grep -Eq '^✓ TCP port [0-9]+ on [0-9.]+: reachable, key accepted \(tcp\)$' "$T/check.out" || why+="no TCP port line; "
    grep -Eq '^✓ TCP here → [^:]+: [0-9]+\.[0-9]{3} GB/s' "$T/check.out" || why+="no traffic out; "
    grep -Eq '^✓ TCP [^ ]+ → here: [0-9]+\.[0-9]{3} GB/s' "$T/check.out" || why+="no traffic back; "
    grep -q '^✗ .*modprobe rdma_rxe' "$T/check.out" || why+="the missing device is not named with its fix; "
    sleep 0.3
    [ -z "$(ns_pid_matching h2 'rdrecv --check')" ] || why+="the agent still runs on h2; "
    if [ -z "$why" ]; then after "$name" && ok "$name"
    else bad "$name" "$why$(tr '\n' '|' < "$T/check.out")"; fi
else
    bad "$name" "no $BIN/rdcheck (run make)"
fi

echo "$PASS passed, $FAILN failed"
[ $FAILN = 0 ]
