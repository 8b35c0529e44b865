#!/bin/bash
# tests.sh - the RDMA cases, run INSIDE the rxe VM by tests/rxe/run.sh (cwd = the checkout).
# Receiver on $RXE_SERVER_IP (rxe_a), sender bound to $RXE_CLIENT_IP (rxe_b): traffic crosses the
# veth. Prints "PASS name" / "FAIL name: why" / "SKIP name: why" per case; exit status = number
# of failures.
# env: RDPIPE_BIN (dir of rdsend/rdrecv), RDPIPE_SMOKE (verbs_smoke binary), RXE_KILLS (6),
#      RXE_BIG_MB (128), RXE_ONLY=streams (the --streams and two-rail cases alone, multi-rail
#      by default among them), RXE_ONLY=rails (multi-rail by default alone),
#      RXE_ONLY=memlock (a relay and a receiver under a locked-memory limit alone),
#      RXE_ONLY=rdcp (rdcp over RDMA alone), RXE_ONLY=casefold (rdcp onto ext4 casefold alone),
#      RXE_ONLY=changing (the input file rewritten or truncated while it is sent)
set -u
BIN=${RDPIPE_BIN:-/work/main/bin}; SEND=$BIN/rdsend; RECV=$BIN/rdrecv
S=${RXE_SERVER_IP:-10.0.0.1}; C=${RXE_CLIENT_IP:-10.0.0.2}
KILLS=${RXE_KILLS:-6}; BIG_MB=${RXE_BIG_MB:-128}
T=/tmp/rxe-tests; rm -rf "$T"; mkdir -p "$T"
PORT=7600; npass=0; nfail=0; nskip=0
RS=(--transport rdma --bind "$S")          # receiver options
SS=(--transport rdma --bind "$C" --timeout 20)   # sender options

# lap NAME: the seconds since the case before, for the slowest-cases list at the end (what to
# trim when the stage grows: CI's whole run should stay under 30 minutes)
LAP_T=$(date +%s%N); LAPS=/tmp/rxe-laps; : > "$LAPS"
lap() { local t; t=$(date +%s%N); echo "$(((t - LAP_T) / 1000000)) ${1:0:90}" >> "$LAPS"; LAP_T=$t; }
pass() { echo "PASS $1"; npass=$((npass + 1)); lap "$1"; }
fail() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); lap "$1"; }
skip() { echo "SKIP $1: $2"; nskip=$((nskip + 1)); lap "$1"; }   # a case that cannot run here
slowest() {
    echo "--- slowest cases (seconds since the case before):"
    sort -rn "$LAPS" | head -n 12 | awk '{ t = $1; $1 = ""; printf "  %6.1f %s\n", t / 1000, $0 }'
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b - a}'; }
next_port() { PORT=$((PORT + 1)); }
sha() { sha256sum < "$1" | cut -d' ' -f1; }
# wait_exit PID SECS -> exit status, or 255 (and SIGKILL) when still running after SECS
wait_exit() {
    local pid=$1 end; end=$(awk -v t="$(now)" -v s="$2" 'BEGIN{printf "%.3f", t + s}')
    while kill -0 "$pid" 2>/dev/null; do
        awk -v t="$(now)" -v e="$end" 'BEGIN{exit !(t > e)}' && { kill -9 "$pid"; wait "$pid"; return 255; }
        sleep 0.05
    done
    wait "$pid"
}
# wait_text FILE REGEX SECS
wait_text() { local i; for ((i = 0; i < $3 * 20; i++)); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done; return 1; }

echo "--- rdma cases: receiver $S, sender bound to $C"
ibv_devices | grep -q rxe_a || { fail "setup" "no rxe devices in the VM"; exit 1; }

# smoke test of the transport alone (no engine); not under RXE_ONLY, whose groups pick cases
# (it takes half a minute under TCG)
if [ -n "${RDPIPE_SMOKE:-}" ] && [ -z "${RXE_ONLY:-}" ]; then
    if timeout 300 "$RDPIPE_SMOKE" "$S" "$C" > "$T/smoke.log" 2>&1; then pass "verbs_smoke (transport alone: $(grep -c '^ok' "$T/smoke.log") cases)"
    else fail "verbs_smoke" "$(grep -E 'FAIL|^  ' "$T/smoke.log" | tr '\n' '|')"; fi
fi

head -c $((BIG_MB << 20)) /dev/urandom > "$T/big"

# xfer NAME SIZE MODE [extra options for both sides]: MODE file|pipe (input and output alike)
xfer() {
    local name=$1 size=$2 mode=$3; shift 3
    next_port; head -c "$size" "$T/big" > "$T/in"; rm -f "$T/out" "$T/rrc"
    local t0 rp src rrc; t0=$(now)
    # with stdout to a pipe, $! is cat's: rdrecv's own status goes to $T/rrc
    if [ "$mode" = file ]; then
        "$RECV" "${RS[@]}" "$@" $PORT key "$T/out" 2> "$T/rerr" & rp=$!
        "$SEND" "${SS[@]}" "$@" $S $PORT key "$T/in" 2> "$T/serr"; src=$?
        wait_exit $rp 30; rrc=$?
    else
        { "$RECV" "${RS[@]}" "$@" $PORT key 2> "$T/rerr"; echo $? > "$T/rrc"; } | cat > "$T/out" & rp=$!
        cat "$T/in" | "$SEND" "${SS[@]}" "$@" $S $PORT key 2> "$T/serr"; src=${PIPESTATUS[1]}
        wait_exit $rp 30 > /dev/null; rrc=$(cat "$T/rrc" 2> /dev/null || echo "none (hung)")
    fi
    local dt; dt=$(since "$t0")
    if [ $src != 0 ] || [ "$rrc" != 0 ]; then
        fail "$name" "rdsend $src, rdrecv $rrc: $(cat "$T/serr" "$T/rerr" | tr '\n' '|')"
    elif [ "$(sha "$T/in")" != "$(sha "$T/out")" ]; then
        fail "$name" "output differs from input ($(stat -c %s "$T/out") bytes)"
    else
        pass "$name (${dt}s)"
    fi
}

# ---- --streams over RDMA: N QPs (N RDMA connections), frame k on connection k mod N, each
# joined with its MAC; then two rails (rxe_b -> rxe_a and rxe_d -> rxe_c): -d, --bind and HOST
# as comma lists, connection i on entry i mod the list's length. RO and SO: the receiver's and
# the sender's options. Kept to tens of MB: the emulated CPU is slow.
S2=${RXE_SERVER_IP2:-10.0.1.1}; C2=${RXE_CLIENT_IP2:-10.0.1.2}
# xfer2 NAME SIZE MODE HOST: one transfer (file or pipe on both ends); 0 when both exited 0 and
# the output's sha256 is the input's, else 1 with WHY set. XDT: the seconds it took.
xfer2() {
    local name=$1 size=$2 mode=$3 host=$4 rp src rrc t0
    next_port; head -c "$size" "$T/big" > "$T/in"; rm -f "$T/out" "$T/rrc"
    t0=$(now)
    if [ "$mode" = file ]; then
        { "$RECV" "${RO[@]}" $PORT key "$T/out" 2> "$T/rerr"; echo $? > "$T/rrc"; } & rp=$!
        "$SEND" "${SO[@]}" $host $PORT key "$T/in" 2> "$T/serr"; src=$?
    else
        { "$RECV" "${RO[@]}" $PORT key 2> "$T/rerr"; echo $? > "$T/rrc"; } | cat > "$T/out" & rp=$!
        cat "$T/in" | "$SEND" "${SO[@]}" $host $PORT key 2> "$T/serr"; src=${PIPESTATUS[1]}
    fi
    wait_exit $rp 60 > /dev/null; rrc=$(cat "$T/rrc" 2> /dev/null || echo "none (hung)")
    XDT=$(since "$t0"); WHY=""
    if [ $src != 0 ] || [ "$rrc" != 0 ]; then WHY="rdsend $src, rdrecv $rrc: $(cat "$T/serr" "$T/rerr" | tr '\n' '|')"
    elif [ "$(sha "$T/in")" != "$(sha "$T/out")" ]; then WHY="output differs from input ($(stat -c %s "$T/out") bytes)"; fi
    [ -z "$WHY" ]
}
# named N: both ends' -v lines name N streams (and $2, $3 when given: what each end's says)
named() {
    grep -q "over .*, $1 streams" "$T/serr" && grep -q "over .*, $1 streams" "$T/rerr" || { WHY+="-v does not say $1 streams: $(grep -h ' over ' "$T/serr" "$T/rerr" | tr '\n' '|') "; return 1; }
    [ -z "${2:-}" ] || grep -q "over $2, $1 streams" "$T/serr" || { WHY+="rdsend not over '$2': $(grep ' over ' "$T/serr") "; return 1; }
    [ -z "${3:-}" ] || grep -q "over $3, $1 streams" "$T/rerr" || { WHY+="rdrecv not over '$3': $(grep ' over ' "$T/rerr") "; return 1; }
}
# planned SEND_LINKS RECV_LINKS: both ends' -v say they planned their lanes for these ports
# ("rxe_b:1+rxe_d:1") at the rate the ports report (run/rd_plan.h; "+" in the names literal)
planned() {
    local s=${1//+/\\+} r=${2//+/\\+}
    grep -Eq "; lanes [0-9]+ \\($s at [1-9][0-9]* Gb/s, " "$T/serr" || { WHY+="rdsend did not plan lanes for $1: $(grep -h 'lanes' "$T/serr") "; return 1; }
    grep -Eq "; lanes [0-9]+ \\($r at [1-9][0-9]* Gb/s, " "$T/rerr" || { WHY+="rdrecv did not plan lanes for $2: $(grep -h 'lanes' "$T/rerr") "; return 1; }
}
# kill_case NAME WHO HOST: a --streams transfer from /dev/zero (RO, SO), WHO (sender or
# receiver) SIGKILLed mid-stream at 3 random points: the other end fails within 10 s, the
# receiver with exit 4, the sender with any non-zero status
kill_case() {
    local name=$1 who=$2 host=$3 bad="" worst=0 i rp sp rc dt t0
    for ((i = 1; i <= 3; i++)); do
        next_port
        "$RECV" -v "${RO[@]}" --chunk-size 256K $PORT key > /dev/null 2> "$T/rerr" & rp=$!
        "$SEND" -v "${SO[@]}" --chunk-size 256K $host $PORT key /dev/zero 2> "$T/serr" & sp=$!
        wait_text "$T/rerr" 'receiving from' 20 || { bad+="#$i never started: $(cat "$T/rerr" "$T/serr" | tr '\n' '|') "; kill -9 $sp $rp; wait $sp $rp; continue; }
        grep -q ", [0-9]* streams" "$T/rerr" || bad+="#$i: not striped: $(grep ' over ' "$T/rerr") "
        sleep "$(awk -v r=$RANDOM 'BEGIN{printf "%.2f", 0.3 + (r % 120) / 100}')"
        t0=$(now)
        if [ "$who" = sender ]; then
            kill -9 $sp; wait $sp 2> /dev/null; wait_exit $rp 10; rc=$?
            [ $rc = 4 ] || bad+="#$i: rdrecv exit $rc: $(tr '\n' '|' < "$T/rerr") "
        else
            kill -9 $rp; wait $rp 2> /dev/null; wait_exit $sp 10; rc=$?
            { [ $rc != 0 ] && [ $rc != 255 ]; } || bad+="#$i: rdsend exit $rc: $(tr '\n' '|' < "$T/serr") "
        fi
        dt=$(since "$t0")
        awk -v a="$dt" -v b="$worst" 'BEGIN{exit !(a > b)}' && worst=$dt
    done
    if [ -z "$bad" ] && awk -v w="$worst" 'BEGIN{exit !(w < 10)}'; then pass "$name: the other end exits $([ "$who" = sender ] && echo 4 || echo non-zero) (slowest ${worst}s)"
    else fail "$name" "slowest ${worst}s $bad"; fi
}
# signal_case NAME WHO: a transfer from /dev/zero (RO, SO), WHO (sender or receiver) sent
# SIGTERM mid-stream (a script's background job has SIGINT ignored): it ends by the signal
# (143) and the other end exits 4 naming it, over RDMA the ABORT as over TCP (signals.sh)
signal_case() {
    local name=$1 who=$2 rp sp rc1 rc2 err
    next_port
    "$RECV" -v "${RO[@]}" --chunk-size 256K $PORT key > /dev/null 2> "$T/rerr" & rp=$!
    "$SEND" -v "${SO[@]}" --chunk-size 256K $S $PORT key /dev/zero 2> "$T/serr" & sp=$!
    wait_text "$T/rerr" 'receiving from' 20 || { fail "$name" "never started: $(cat "$T/rerr" "$T/serr" | tr '\n' '|')"; kill -9 $sp $rp; wait $sp $rp; return; }
    sleep 0.5
    if [ "$who" = sender ]; then
        kill -TERM $sp; wait_exit $sp 10; rc1=$?; wait_exit $rp 10; rc2=$?
        err=$(tail -n 1 "$T/rerr")   # after -v's lines
        if [ $rc1 = 143 ] && [ $rc2 = 4 ] && [[ "$err" == "rdrecv: sender: interrupted by SIGTERM" ]]; then
            pass "$name: rdsend ends by SIGTERM, rdrecv exits 4 naming it"
        else fail "$name" "rdsend exit $rc1, rdrecv exit $rc2: $(tr '\n' '|' < "$T/rerr")"; fi
    else
        kill -TERM $rp; wait_exit $rp 10; rc1=$?; wait_exit $sp 10; rc2=$?
        err=$(tail -n 1 "$T/serr")
        if [ $rc1 = 143 ] && [ $rc2 = 4 ] && [[ "$err" == "rdsend: receiver: interrupted by SIGTERM" ]]; then
            pass "$name: rdrecv ends by SIGTERM, rdsend exits 4 naming it"
        else fail "$name" "rdrecv exit $rc1, rdsend exit $rc2: $(tr '\n' '|' < "$T/serr")"; fi
    fi
}
# relay_signal_case UP DOWN: rdsend --streams UP from /dev/zero -> relay -> rdrecv granting
# DOWN over RDMA; the relay sent SIGTERM mid-stream ends by it (143) after telling both ends
# (ops->shut_recv on the verbs and direct-stripe transports; signals.sh does it over TCP)
relay_signal_case() {
    local up=$1 down=$2 kport rport kp rp sp rrc src krc sk name
    name="SIGTERM to a relay between $up and $down QPs over RDMA"
    sk=$(printf '%064x' 7)
    next_port; kport=$PORT; next_port; rport=$PORT
    echo "$S $kport key2" > "$T/next"
    RDPIPE_STREAM_KEY=$sk "$RECV" "${RS[@]}" --streams $down $kport key2 > /dev/null 2> "$T/kerr" & kp=$!
    "$RECV" -v "${RS[@]}" --relay-fd 0 $rport key < "$T/next" 2> "$T/rerr" & rp=$!
    RDPIPE_STREAM_KEY=$sk "$SEND" "${SS[@]}" --streams $up --chunk-size 256K $S $rport key /dev/zero 2> "$T/serr" & sp=$!
    wait_text "$T/rerr" 'relaying from' 20 || { fail "$name" "never started: $(cat "$T/rerr" "$T/serr" "$T/kerr" | tr '\n' '|')"; kill -9 $sp $rp $kp; wait $sp $rp $kp; return; }
    sleep 0.5
    kill -TERM $rp; wait_exit $rp 10; rrc=$?
    wait_exit $sp 10; src=$?; wait_exit $kp 10; krc=$?
    if [ $rrc = 143 ] && [ $src = 4 ] && [ $krc = 4 ] && [ "$(tail -n 1 "$T/rerr")" = "rdrecv: interrupted by SIGTERM" ] &&
       [ "$(tail -n 1 "$T/serr")" = "rdsend: receiver: interrupted by SIGTERM" ] &&
       [ "$(tail -n 1 "$T/kerr")" = "rdrecv: sender: interrupted by SIGTERM" ]; then
        pass "$name: it ends by SIGTERM, rdsend and the sink exit 4 naming it"
    else fail "$name" "relay $rrc, rdsend $src, sink $krc: $(cat "$T/rerr" "$T/serr" "$T/kerr" | tr '\n' '|')"; fi
}
# paused_case NAME: the receiver's consumer sleeps 10 s before it reads (longer than the 8 s
# in which sends that never complete mean a lost link): the sender waits for credits, the
# heartbeats keep the connection alive, and 24 MiB arrive whole (stalls.sh does it over TCP)
paused_case() {
    local name=$1 rp rc1 rc2
    next_port
    head -c $((24 << 20)) "$T/big" > "$T/p.in"; rm -f "$T/p.out"
    { "$RECV" "${RO[@]}" $PORT key 2> "$T/rerr" | { sleep 10; cat > "$T/p.out"; }; } & rp=$!
    sleep 0.5
    timeout 120 "$SEND" "${SO[@]}" $S $PORT key "$T/p.in" 2> "$T/serr"; rc1=$?
    wait_exit $rp 30; rc2=$?
    if [ $rc1 = 0 ] && [ $rc2 = 0 ] && cmp -s "$T/p.in" "$T/p.out"; then pass "$name: 24 MiB byte-identical after the consumer's 10 s pause"
    else fail "$name" "rdsend exit $rc1, rdrecv|consumer exit $rc2: $(cat "$T/serr" "$T/rerr" | tr '\n' '|')"; fi
}
# packets rxe_X: what the device has sent so far (Soft-RoCE's counters)
packets() { cat /sys/class/infiniband/$1/ports/1/hw_counters/sent_pkts 2> /dev/null || echo 0; }

# relay_by_ref UP DOWN: rdsend --streams UP -> rdrecv -vv --relay-fd -> rdrecv granting DOWN,
# 12 MiB + 9 in 256 KiB frames: byte-identical, all exit 0. Between as many QPs on both sides
# every downstream QP sends its frames from the upstream ring they landed in (the relay's -vv:
# "N frames sent from an upstream ring"), none copied: the 49 DATA frames (and the END, which
# a single QP's relay passes the same way; a relay of pairs copies its END, after every pair
# stopped). Each QP carries several times its ring's depth, so a relay that held upstream
# frames until nobody reaps their sends hangs. From a striped upstream into one QP the relay
# passes each frame itself and copies it (no ring of one connection holds them all): 0.
relay_by_ref() {
    local up=$1 down=$2 kport rport kp rp src rrc krc sk got lines want qps name
    want=$((up != down ? 0 : up == 1 ? 50 : 49)); qps=$((up != down ? 0 : down))
    name="a relay between $up and $down QPs $([ $qps = 0 ] && echo copies || echo 'sends from the upstream ring')"
    sk=$(printf '%064x' 7)
    next_port; kport=$PORT; next_port; rport=$PORT
    head -c $((12 * 1048576 + 9)) "$T/big" > "$T/in"; rm -f "$T/out"
    echo "$S $kport key2" > "$T/next"
    RDPIPE_STREAM_KEY=$sk "$RECV" "${RS[@]}" --streams $down $kport key2 "$T/out" 2> "$T/kerr" & kp=$!
    "$RECV" -vv "${RS[@]}" --relay-fd 0 $rport key < "$T/next" 2> "$T/rerr" & rp=$!
    RDPIPE_STREAM_KEY=$sk timeout 60 "$SEND" "${SS[@]}" --streams $up --chunk-size 256K $S $rport key "$T/in" 2> "$T/serr"; src=$?
    wait_exit $rp 30; rrc=$?
    wait_exit $kp 30; krc=$?
    got=$(sed -n 's/.* \([0-9]*\) frames sent from an upstream ring$/\1/p' "$T/rerr" | awk '$1 > 0 {n++; s += $1} END {print n + 0, s + 0}')
    lines=$(grep -c "frames sent from an upstream ring" "$T/rerr")
    if [ $src = 0 ] && [ $rrc = 0 ] && [ $krc = 0 ] && cmp -s "$T/in" "$T/out" && [ "$got" = "$qps $want" ] &&
       [ "$lines" = $((up + down)) ] && ! grep -q "copying its frames" "$T/rerr"; then
        pass "$name: 12 MiB + 9 byte-identical, $want frames sent without a copy"
    else fail "$name" "rdsend $src, relay $rrc, sink $krc, QPs and frames sent by reference '$got', $lines stats lines: $(cat "$T/serr" "$T/kerr" | tr '\n' '|') relay: $(grep -v '^rdrecv: rdma: .*ring of' "$T/rerr" | tail -n 12 | tr '\n' '|')"; fi
}

# relay_compress UP DOWN: rdsend --compress --streams UP -> relay -> rdrecv granting DOWN, text
# that compresses 8x: every hop exits 0, byte-identical, and the relay counts the bytes before
# compression, as END totals them (before 2026-11-27 it counted the wire's, and every hop
# failed with "stream incomplete")
relay_compress() {
    local up=$1 down=$2 kport rport kp rp src rrc krc sk n
    sk=$(printf '%064x' 7)
    next_port; kport=$PORT; next_port; rport=$PORT
    seq 1 3000000 | head -c $((12 * 1048576 + 9)) > "$T/in"; rm -f "$T/out"
    n=$(stat -c %s "$T/in")
    echo "$S $kport key2" > "$T/next"
    RDPIPE_STREAM_KEY=$sk "$RECV" "${RS[@]}" --streams $down $kport key2 "$T/out" 2> "$T/kerr" & kp=$!
    "$RECV" -v "${RS[@]}" --relay-fd 0 $rport key < "$T/next" 2> "$T/rerr" & rp=$!
    RDPIPE_STREAM_KEY=$sk timeout 60 "$SEND" "${SS[@]}" --compress=3 --streams $up --chunk-size 256K $S $rport key "$T/in" 2> "$T/serr"; src=$?
    wait_exit $rp 30; rrc=$?
    wait_exit $kp 30; krc=$?
    if [ $src = 0 ] && [ $rrc = 0 ] && [ $krc = 0 ] && cmp -s "$T/in" "$T/out" &&
       grep -Eq "^rdrecv: $n bytes as [0-9]+ on the wire \(ratio ([2-9]|[1-9][0-9]+)\." "$T/rerr"; then
        pass "--compress through a relay between $up and $down QPs: 12 MiB of text byte-identical, the relay counts $n bytes"
    else fail "--compress through a relay between $up and $down QPs" "rdsend $src, relay $rrc, sink $krc: $(cat "$T/serr" "$T/kerr" | tr '\n' '|') relay: $(tail -n 6 "$T/rerr" | tr '\n' '|')"; fi
}

# "${LOCKED[@]}" --memlock=BYTES -- CMD...: CMD without CAP_IPC_LOCK, under that ulimit -l
# (each execs the next: CMD keeps the PID, so $! is its)
LOCKED=(setpriv --bounding-set -ipc_lock --inh-caps -ipc_lock prlimit)

# relay_memlock: a relay without CAP_IPC_LOCK, under a locked-memory limit (RLIMIT_MEMLOCK,
# which ibv_reg_mr charges each registered page to, again for a ring registered twice). A
# relay pins its upstream ring, its downstream ring, and the upstream ring once more to send
# from it (send_ref), so it grants the sender the depth whose three rings fit:
# - a limit between what its rings pin at the asked depth without that third one and with it
#   (a relay that counted only its upstream stream granted the full depth and copied every
#   frame): a smaller depth, which it says in one line, every frame still sent from the
#   upstream ring, no more pinned than the limit, all three exit 0, 12 MiB + 9 in 1 MiB frames
#   byte-identical;
# - a limit below its smallest rings: it registers none (what it pins stays below 1 MiB: the
#   control frames), and the sender fails with its reason, which names the ulimit -l it needs
#   (the relay says it too, and waits for another sender, as after any failed handshake).
# The limits come from an unlimited relay: its ring (-vv) and the pages it held (VmPin).
relay_memlock() {
    local kport rport kp cp rp mp src rrc krc sk pin ring depth own lim got got1 depth1 ring1
    sk=$(printf '%064x' 8)
    head -c $((12 * 1048576 + 9)) "$T/big" > "$T/in"
    # memlock_relay KIB|- [nosink]: rdsend -> relay -> rdrecv (KIB: the relay's limit, without
    # CAP_IPC_LOCK); sets src rrc krc, pin (KiB), got (frames by reference), ring and depth
    memlock_relay() {
        local wrap=()
        [ "$1" = - ] || wrap=("${LOCKED[@]}" --memlock=$(($1 * 1024)) --)
        next_port; kport=$PORT; next_port; rport=$PORT
        rm -f "$T/out" "$T/maxpin" "$T/kerr" "$T/slow"
        echo "$S $kport key2" > "$T/next"
        kp= cp=
        # the sink's consumer opens at once and reads 1 s late: the relay holds all three rings
        # for that second at least, which the sampler below cannot miss (a 12 MiB stream alone
        # passes in a few of its samples in a loaded VM, and once it saw only two rings)
        if [ -z "${2:-}" ]; then
            mkfifo "$T/slow"
            ( exec 3< "$T/slow"; sleep 1; exec cat <&3 > "$T/out" ) & cp=$!
            RDPIPE_STREAM_KEY=$sk "$RECV" "${RS[@]}" $kport key2 "$T/slow" 2> "$T/kerr" & kp=$!
        fi
        "${wrap[@]}" "$RECV" -vv "${RS[@]}" --relay-fd 0 $rport key < "$T/next" 2> "$T/rerr" & rp=$!
        (m=0; while [ -e /proc/$rp ]; do   # builtins only: a sample costs no fork
            v=
            while read -r k x _; do [ "$k" = VmPin: ] && { v=$x; break; }; done 2> /dev/null < /proc/$rp/status
            [ -n "$v" ] && [ "$v" -gt $m ] && m=$v
        done; echo $m > "$T/maxpin") & mp=$!
        RDPIPE_STREAM_KEY=$sk timeout 60 "$SEND" "${SS[@]}" --chunk-size 1M $S $rport key "$T/in" 2> "$T/serr"; src=$?
        [ -n "${2:-}" ] && { sleep 0.5; kill $rp 2> /dev/null; }   # nothing comes: see above
        wait_exit $rp 30; rrc=$?
        krc=-; [ -z "$kp" ] || { wait_exit $kp 30; krc=$?; }
        [ -z "$cp" ] || { wait_exit $cp 10; rm -f "$T/slow"; }
        wait $mp
        pin=$(cat "$T/maxpin")
        got=$(sed -n 's/.* \([0-9]*\) frames sent from an upstream ring$/\1/p' "$T/rerr" | awk '{s += $1} END {print s + 0}')
        set -- $(sed -n 's/.*: rdma: receive ring of \([0-9]*\) x \([0-9]*\) bytes.*/\1 \2/p' "$T/rerr" | head -n 1)
        depth=${1:-0}; ring=$(( ${1:-0} * ${2:-0} / 1024 ))
    }
    memlock_relay -
    got1=$got; depth1=$depth; ring1=$ring
    if [ $src != 0 ] || [ $rrc != 0 ] || [ $krc != 0 ] || [ "$ring" = 0 ] || [ "$got" -lt 13 ] || [ "$pin" -le $((2 * ring)) ]; then
        fail "a relay under a locked-memory limit" "unlimited run: rdsend $src, relay $rrc, sink $krc, ring $depth x ($ring KiB), $pin KiB pinned, $got by reference: $(tail -n 5 "$T/rerr" | tr '\n' '|')"
        return
    fi
    own=$((pin - ring1))
    lim=$((own + ring1 / 2))
    memlock_relay $lim
    if [ $src = 0 ] && [ $rrc = 0 ] && [ $krc = 0 ] && cmp -s "$T/in" "$T/out" && [ "$got" = "$got1" ] &&
       [ "$depth" -ge 4 ] && [ "$depth" -lt "$depth1" ] && [ "$pin" -le $lim ] && ! grep -q "copying its frames" "$T/rerr" &&
       grep -q "^rdrecv: warning: ulimit -l lets this relay pin $depth frames in flight (both hops' rings, the upstream's twice), not the $depth1 the sender asked for; raise it for full speed$" "$T/rerr"; then
        pass "a relay under a locked-memory limit ($lim KiB; $own + $ring1 pinned at depth $depth1): depth $depth, $pin KiB pinned, all $got frames sent from the upstream ring, 12 MiB + 9 byte-identical"
    else fail "a relay under a locked-memory limit" "limit $lim KiB: rdsend $src, relay $rrc, sink $krc, depth $depth (unlimited $depth1), $pin KiB pinned, $got by reference (unlimited $got1): $(grep -v 'key has' "$T/rerr" | tail -n 6 | tr '\n' '|')"; fi
    lim=$((own / 2))
    memlock_relay $lim nosink
    local why="a relay cannot register its RDMA buffers ([0-9]* KiB: both hops' rings, the upstream's twice): locked-memory limit is $lim KiB; raise it (ulimit -l [0-9]* or unlimited) or lower --chunk-size/--depth"
    if [ $src != 0 ] && [ "$pin" -lt 1024 ] && grep -q "^rdsend: receiver [^ ]*: $why$" "$T/serr" && grep -q "^rdrecv: $why$" "$T/rerr"; then
        pass "a relay whose rings do not fit in $lim KiB registers none ($pin KiB pinned): rdsend $src with its reason"
    else fail "a relay whose rings do not fit" "limit $lim KiB: rdsend $src, $pin KiB pinned: $(grep -v 'key has' "$T/serr" | tr '\n' '|') relay: $(grep -v 'key has' "$T/rerr" | tail -n 4 | tr '\n' '|')"; fi
}

# recv_memlock: an rdrecv without CAP_IPC_LOCK whose ulimit -l (1 MiB) holds its control frames
# but not the smallest ring of 1 MiB chunks: the sender proved the key, so it is told why
# (before, it saw only its connection drop), exits 4, and the receiver says it too and waits
# for another sender, as after any failed handshake
recv_memlock() {
    local rp src
    next_port; head -c 3000000 "$T/big" > "$T/in"; rm -f "$T/out"
    "${LOCKED[@]}" --memlock=1048576 -- "$RECV" "${RS[@]}" $PORT key "$T/out" 2> "$T/rerr" & rp=$!
    timeout 60 "$SEND" "${SS[@]}" --chunk-size 1M $S $PORT key "$T/in" 2> "$T/serr"; src=$?
    sleep 0.5; kill $rp 2> /dev/null; wait $rp 2> /dev/null
    local why="cannot register [0-9]* KiB of RDMA buffers: locked-memory limit is 1024 KiB; raise it (ulimit -l [0-9]* or unlimited) or lower --chunk-size/--depth"
    if [ $src = 4 ] && grep -q "^rdsend: receiver [^ ]*: $why$" "$T/serr" && grep -q "^rdrecv: $why$" "$T/rerr"; then
        pass "a receiver whose ring does not fit in ulimit -l tells the sender why: rdsend 4, $(grep -o 'cannot register [0-9]* KiB' "$T/serr")"
    else fail "a receiver whose ring does not fit in ulimit -l" "rdsend $src: $(grep -v 'key has' "$T/serr" | tr '\n' '|') rdrecv: $(grep -v 'key has' "$T/rerr" | tr '\n' '|')"; fi
}

# rdcp over RDMA (local agents; -H puts the data on rxe): a single file and a small tree with -a.
# Files over 1 MiB are written by the receiver's workers out of the registered ring, whose
# frames they give back from their own threads (engine/rd_hold).
rdcp_cases() {
    [ -x "$BIN/rdcp" ] || { skip "rdcp over RDMA" "no $BIN/rdcp"; return 0; }
    rm -rf "$T/cps" "$T/cpd"; mkdir -p "$T/cps/tree/sub" "$T/cpd"
    head -c 12000001 "$T/big" > "$T/cps/one.img"
    for i in $(seq 40); do head -c $((RANDOM * 2 + 1)) /dev/urandom > "$T/cps/tree/f$i"; done
    ln -s f1 "$T/cps/tree/link"; ln -s nowhere "$T/cps/tree/dangling"; mkdir "$T/cps/tree/empty"
    ln "$T/cps/tree/f2" "$T/cps/tree/sub/hard"
    for i in 1 2 3; do head -c $((i * 1500000 + RANDOM)) /dev/urandom > "$T/cps/tree/sub/m$i"; done
    ln "$T/cps/tree/sub/m2" "$T/cps/tree/hard-m2"
    PATH=$BIN:$PATH timeout 60 "$BIN/rdcp" --transport rdma --lanes 2 -H $S "$T/cps/one.img" "$T/cpd/one.img" 2> "$T/cperr"; rc=$?
    if [ $rc = 0 ] && cmp -s "$T/cps/one.img" "$T/cpd/one.img"; then pass "rdcp: a single file over RDMA (12 MB, read by 2 lanes into the registered ring)"
    else fail "rdcp single file over RDMA" "exit $rc: $(tr '\n' '|' < "$T/cperr")"; fi
    PATH=$BIN:$PATH timeout 60 "$BIN/rdcp" -a --transport rdma -H $S "$T/cps/tree" "$T/cpd/tree" 2> "$T/cperr"; rc=$?
    if [ $rc = 0 ] && diff -r --no-dereference "$T/cps/tree" "$T/cpd/tree" > /dev/null &&
       [ "$(stat -c %i "$T/cpd/tree/f2")" = "$(stat -c %i "$T/cpd/tree/sub/hard")" ] &&
       [ "$(stat -c %i "$T/cpd/tree/sub/m2")" = "$(stat -c %i "$T/cpd/tree/hard-m2")" ] &&
       [ "$(readlink "$T/cpd/tree/dangling")" = nowhere ] && [ -d "$T/cpd/tree/empty" ]; then
        pass "rdcp -a: a small tree over RDMA (symlinks, hard links, empty dir, files of 1.5-4.5 MB written from the ring by the workers)"
    else fail "rdcp -a tree over RDMA" "exit $rc: $(tr '\n' '|' < "$T/cperr")"; fi
}

# rdcp onto ext4 casefold, a filesystem that folds case and Unicode's forms: 'a' after 'A' and
# 'café' (é one code point) after 'café' (e + U+0301) are refused (exit 23, one line each), the
# first of each kept; before 2026-12-08 the second form replaced the first, exit 0. Over TCP:
# the filesystem is what is tested, and the host's kernel has no casefold.
casefold_case() {
    local img=$T/cf.img m=$T/cfm nfc nfd
    umount "$m" 2> /dev/null; rm -rf "$T/cfs" "$img"; mkdir -p "$T/cfs" "$m"
    if ! { truncate -s 32M "$img" && mkfs.ext4 -q -O casefold "$img" && mount -o loop "$img" "$m" &&
           mkdir "$m/d" && chattr +F "$m/d"; } > "$T/cferr" 2>&1; then
        skip "rdcp onto ext4 casefold" "cannot make one in this VM: $(tail -1 "$T/cferr")"
        umount "$m" 2> /dev/null; rm -f "$img"; return 0
    fi
    nfc=$(printf 'caf\xc3\xa9'); nfd=$(printf 'cafe\xcc\x81')
    printf N > "$T/cfs/$nfd"; printf C > "$T/cfs/$nfc"; printf U > "$T/cfs/A"; printf L > "$T/cfs/a"
    PATH=$BIN:$PATH timeout 60 "$BIN/rdcp" -r --transport tcp "$T/cfs/" "$m/d/" 2> "$T/cperr"; rc=$?
    local why=
    [ $rc = 23 ] || why+="exit $rc, not 23; "
    [ "$(grep -c "refusing '.*/d/\(a\|$nfc\)': this filesystem takes it for a name this copy just made (it folds case or Unicode's forms)$" "$T/cperr")" = 2 ] &&
        [ "$(grep -c . "$T/cperr")" = 2 ] || why+="not the two lines; "
    [ "$(cat "$m/d/A")$(cat "$m/d/$nfd")" = UN ] || why+="the first of each not kept ($(cat "$m/d/A")$(cat "$m/d/$nfd")); "
    [ "$(ls -A "$m/d" | wc -l)" = 2 ] || why+="$(ls -A "$m/d" | wc -l) entries, not 2; "
    if [ -z "$why" ]; then pass "rdcp onto ext4 casefold: 'a' after 'A' and 'café' (NFC) after 'café' (NFD) refused, exit 23, the first kept"
    else fail "rdcp onto ext4 casefold" "$why$(tr '\n' '|' < "$T/cperr")"; fi
    umount "$m"; rm -f "$img"
}

streams_cases() {
    echo "--- --streams over RDMA"
    RO=(-v "${RS[@]}"); SO=(-v "${SS[@]}" --streams 2)
    if xfer2 x $((24 * 1048576 + 7)) file $S && named 2 "rdma rxe_b port 1" "rdma rxe_a port 1"; then
        pass "--streams 2 on one device: 2 QPs, 24 MiB + 7 byte-identical, files (${XDT}s)"
    else fail "--streams 2 on one device, files" "$WHY"; fi
    RO=(-v "${RS[@]}" --chunk-size 64K); SO=(-v "${SS[@]}" --chunk-size 64K --streams 3)
    if xfer2 x $((3 * 1048576 + 5)) pipe $S && named 3; then
        pass "--streams 3 on one device: 3 QPs, 3 MiB + 5 in 64K chunks byte-identical, pipes (${XDT}s)"
    else fail "--streams 3 on one device, pipes" "$WHY"; fi
    RO=(-v "${RS[@]}" --streams 2); SO=(-v "${SS[@]}" --streams 4)
    if xfer2 x $((1048576 + 1)) file $S && named 2; then pass "--streams 4 asked, rdrecv --streams 2 grants 2: data intact"
    else fail "--streams 4 asked, 2 granted" "$WHY"; fi
    RO=(-v "${RS[@]}" --chunk-size 64K); SO=(-v "${SS[@]}" --chunk-size 64K --streams 2)
    if xfer2 x 0 file $S && xfer2 x 1 pipe $S && xfer2 x 65537 file $S; then pass "--streams 2: 0, 1 and 65537 bytes intact"
    else fail "--streams 2, small sizes" "$WHY"; fi
    RO=("${RS[@]}"); SO=("${SS[@]}" --streams 2)
    kill_case "--streams 2 on one device, sender SIGKILLed mid-stream" sender $S
    kill_case "--streams 2 on one device, receiver SIGKILLed mid-stream" receiver $S
    RO=("${RS[@]}"); SO=("${SS[@]}")
    signal_case "SIGTERM to the sender over RDMA" sender
    signal_case "SIGTERM to the receiver over RDMA" receiver
    RO=("${RS[@]}"); SO=("${SS[@]}" --streams 2)
    signal_case "SIGTERM to the sender, --streams 2 over RDMA" sender
    signal_case "SIGTERM to the receiver, --streams 2 over RDMA" receiver
    relay_signal_case 1 1
    relay_signal_case 2 2
    relay_signal_case 2 1
    paused_case "a consumer pausing 10 s, --streams 2 over RDMA"
    RO=("${RS[@]}"); SO=("${SS[@]}")
    paused_case "a consumer pausing 10 s over RDMA"

    # a relay passes its QPs on: rdpipe --streams 2 through a `cat` segment, both hops 2 QPs
    if [ -x "$BIN/rdpipe" ]; then
        head -c 12000007 "$T/big" > "$T/rs.in"; rm -f "$T/rs.out"
        PATH=$BIN:$PATH timeout 120 "$BIN/rdpipe" -v --streams 2 --transport rdma -H $S localhost:"< $T/rs.in" \
            localhost:cat localhost:"> $T/rs.out" < /dev/null 2> "$T/rserr"; rc=$?
        if [ $rc = 0 ] && cmp -s "$T/rs.in" "$T/rs.out" &&
           [ "$(grep -c "12000007 bytes .* over rdma rxe.*, 2 streams$" "$T/rserr")" = 2 ]; then
            pass "rdpipe --streams 2 through a relay over RDMA: both hops 2 QPs, 12 MB byte-identical"
        else fail "rdpipe --streams 2 through a relay over RDMA" "exit $rc: $(tr '\n' '|' < "$T/rserr")"; fi
    else skip "rdpipe --streams 2 through a relay over RDMA" "no $BIN/rdpipe"; fi

    # a relay between 2 QPs and 2 QPs moves each pair on a thread of its own (rd-fw0, rd-fw1:
    # frames copied from the upstream QP's ring into its pair's downstream), and a sender
    # killed mid-stream still fails the relay and the sink, the sink with the relay's reason
    local kport rport kp rp sp sk threads rrc krc t0
    sk=$(printf '%064x' 6)
    next_port; kport=$PORT; next_port; rport=$PORT
    echo "$S $kport key2" > "$T/next"
    RDPIPE_STREAM_KEY=$sk "$RECV" "${RS[@]}" $kport key2 > /dev/null 2> "$T/kerr" & kp=$!
    "$RECV" -v "${RS[@]}" --relay-fd 0 $rport key < "$T/next" 2> "$T/rerr" & rp=$!
    RDPIPE_STREAM_KEY=$sk "$SEND" "${SS[@]}" --streams 2 $S $rport key /dev/zero 2> "$T/serr" & sp=$!
    threads=""
    if wait_text "$T/rerr" 'relaying from .* 2 streams to .* 2 streams' 30; then
        sleep 1
        threads=$(cat /proc/$rp/task/*/comm 2> /dev/null | LC_ALL=C sort | grep '^rd-fw' | tr '\n' ' ')
    fi
    t0=$(now)
    kill -9 $sp; wait $sp 2> /dev/null
    wait_exit $rp 15; rrc=$?
    wait_exit $kp 15; krc=$?
    if [ "$threads" = "rd-fw0 rd-fw1 " ] && [ $rrc = 4 ] && [ $krc = 4 ] && grep -q "^rdrecv: sender: " "$T/kerr"; then
        pass "a relay between 2 QPs and 2 QPs: a thread per pair; sender SIGKILLed, relay and sink exit 4 ($(since "$t0")s)"
    else fail "a relay between 2 QPs and 2 QPs" "threads '$threads', relay $rrc, sink $krc: $(cat "$T/rerr" "$T/kerr" | tr '\n' '|')"; fi

    relay_by_ref 1 1
    relay_by_ref 2 2
    relay_by_ref 2 1
    relay_compress 1 1
    relay_compress 2 2
    relay_compress 2 1
    relay_memlock
    recv_memlock

    # the same measured in one run: 1 stream and 2 over the one link (rxe is the CPU's work)
    local r1 r2
    RO=("${RS[@]}"); SO=(-v "${SS[@]}")
    xfer2 x $((32 * 1048576)) file $S && r1=$(sed -n 's/^Bandwidth \(.*\) GB\/s.*/\1/p' "$T/serr")
    SO=(-v "${SS[@]}" --streams 2)
    xfer2 x $((32 * 1048576)) file $S && r2=$(sed -n 's/^Bandwidth \(.*\) GB\/s.*/\1/p' "$T/serr")
    echo "  measured, 32 MiB file -> file over rxe_b -> rxe_a: 1 stream ${r1:-?} GB/s, 2 streams ${r2:-?} GB/s"

    if ! ibv_devices | grep -q "${RXE_CLIENT_DEV2:-rxe_d}"; then
        fail "two rails" "no second rxe pair in the VM"; return
    fi
    echo "--- two rails: rxe_b -> rxe_a and rxe_d -> rxe_c"
    local b0 d0 b1 d1
    RO=(-v --transport rdma -d rxe_a,rxe_c); SO=(-v --transport rdma --timeout 20 -d rxe_b,rxe_d --bind $C,$C2 --streams 2)
    b0=$(packets rxe_b); d0=$(packets rxe_d)
    if xfer2 x $((24 * 1048576 + 3)) file $S,$S2 &&
       named 2 "rdma rxe_b port 1 + rdma rxe_d port 1" "rdma rxe_a port 1 + rdma rxe_c port 1" &&
       planned "rxe_b:1+rxe_d:1" "rxe_a:1+rxe_c:1"; then
        b1=$(packets rxe_b); d1=$(packets rxe_d)
        if [ $((b1 - b0)) -ge 1000 ] && [ $((d1 - d0)) -ge 1000 ]; then
            pass "two rails, --streams 2: 24 MiB + 3 byte-identical, $((b1 - b0)) packets sent by rxe_b, $((d1 - d0)) by rxe_d, lanes planned for both ports (${XDT}s)"
        else fail "two rails, --streams 2" "packets sent: rxe_b $((b1 - b0)), rxe_d $((d1 - d0)) (want >= 1000 each)"; fi
    else fail "two rails, --streams 2" "$WHY"; fi
    SO=(-v --transport rdma --timeout 20 -d rxe_b,rxe_d --bind $C,$C2 --streams 4 --chunk-size 256K)
    RO=(-v --transport rdma -d rxe_a,rxe_c --chunk-size 256K)
    if xfer2 x $((10 * 1048576 + 11)) pipe $S,$S2 && named 4 "rdma rxe_b port 1 + rdma rxe_d port 1"; then
        pass "two rails, --streams 4 (2 QPs a device): 10 MiB + 11 byte-identical, pipes (${XDT}s)"
    else fail "two rails, --streams 4" "$WHY"; fi
    RO=(--transport rdma -d rxe_a,rxe_c); SO=(--transport rdma --timeout 20 -d rxe_b,rxe_d --bind $C,$C2 --streams 2)
    kill_case "two rails, sender SIGKILLed mid-stream" sender $S,$S2
    kill_case "two rails, receiver SIGKILLed mid-stream" receiver $S,$S2
    default_rails_cases
}
# Multi-rail by default: rdsend names no rail, no device and no --streams; the receiver
# (listening on all addresses, its ports rxe_a and rxe_c) names 10.0.0.1 and 10.0.1.1 in RAILS,
# and the sender pairs 10.0.1.1 with rxe_d's 10.0.1.2 (its other ports, rxe_a and rxe_c, are
# the receiver's own in this one VM). One -d device or --streams 1 pins one connection.
default_rails_cases() {
    local b0 d0 b1 d1
    echo "--- multi-rail by default"
    RO=(-v --transport rdma -d rxe_a,rxe_c); SO=(-v --transport rdma --timeout 20 --bind $C)
    b0=$(packets rxe_b); d0=$(packets rxe_d)
    if xfer2 x $((24 * 1048576 + 5)) file $S &&
       named 2 "rdma rxe_b port 1 + rdma rxe_d port 1" "rdma rxe_a port 1 + rdma rxe_c port 1"; then
        b1=$(packets rxe_b); d1=$(packets rxe_d)
        if ! grep -q "^rdsend: 2 rails to .*: $S,$S2 from $C,$C2 (rxe_b,rxe_d)" "$T/serr"; then
            fail "multi-rail by default" "-v does not name the rails: $(tr '\n' '|' < "$T/serr")"
        elif [ $((b1 - b0)) -ge 1000 ] && [ $((d1 - d0)) -ge 1000 ]; then
            pass "multi-rail by default: 24 MiB + 5 byte-identical over rxe_b and rxe_d ($((b1 - b0)) and $((d1 - d0)) packets) (${XDT}s)"
        else fail "multi-rail by default" "packets sent: rxe_b $((b1 - b0)), rxe_d $((d1 - d0)) (want >= 1000 each)"; fi
    else fail "multi-rail by default" "$WHY $(grep -h 'rail' "$T/serr" | tr '\n' '|')"; fi
    RO=(-v --transport rdma -d rxe_a,rxe_c --chunk-size 64K)
    if xfer2 x 0 pipe $S && xfer2 x 1 file $S && xfer2 x $((3 * 65536 + 7)) pipe $S &&
       named 2 "rdma rxe_b port 1 + rdma rxe_d port 1"; then
        pass "multi-rail by default: 0, 1 and 3x64K+7 bytes intact, pipes and files"
    else fail "multi-rail by default, small sizes" "$WHY $(grep -h 'rail' "$T/serr" | tr '\n' '|')"; fi
    local pin
    for pin in "-d rxe_b" "--streams 1"; do
        RO=(-v --transport rdma -d rxe_a,rxe_c); SO=(-v --transport rdma --timeout 20 --bind $C $pin)
        d0=$(packets rxe_d)
        if xfer2 x $((8 * 1048576)) file $S && grep -q "over rdma rxe_b port 1 (chunk" "$T/serr" &&
           ! grep -q "rails to" "$T/serr" && [ $(($(packets rxe_d) - d0)) -lt 100 ] && planned rxe_b:1 rxe_a:1; then
            pass "rdsend $pin: one connection, rxe_d idle, lanes planned for rxe_b's port"
        else fail "rdsend $pin pins one connection" "${WHY:-$(grep ' over ' "$T/serr"); rxe_d sent $(($(packets rxe_d) - d0)) packets}"; fi
    done
    # a receiver with --bind takes connections on that address alone: it names no rails
    RO=(-v --transport rdma --bind $S); SO=(-v --transport rdma --timeout 20 --bind $C)
    if xfer2 x $((4 * 1048576)) file $S && grep -q "over rdma rxe_b port 1 (chunk" "$T/serr"; then
        pass "rdrecv --bind: no rails offered, one connection"
    else fail "rdrecv --bind offers no rails" "${WHY:-$(grep ' over ' "$T/serr")}"; fi
    # a relay (rdrecv --relay-fd, as rdpipe runs for a `cat`) offers its rails too: the sender
    # stripes over rxe_b and rxe_d into it, and it passes 2 connections on to the sink
    local sport rport src rrc krc sk
    sk=$(printf '%064x' 5)
    next_port; sport=$PORT; next_port; rport=$PORT
    head -c $((12 * 1048576 + 9)) "$T/big" > "$T/in"; rm -f "$T/out" "$T/rrc" "$T/krc"
    echo "$S $sport key2" > "$T/next"
    { RDPIPE_STREAM_KEY=$sk "$RECV" -v --transport rdma $sport key2 "$T/out" 2> "$T/kerr"; echo $? > "$T/krc"; } & local kp=$!
    { "$RECV" -v --transport rdma -d rxe_a,rxe_c --relay-fd 0 $rport key < "$T/next" 2> "$T/rerr"; echo $? > "$T/rrc"; } & local rp=$!
    RDPIPE_STREAM_KEY=$sk "$SEND" -v --transport rdma --timeout 20 --bind $C $S $rport key "$T/in" 2> "$T/serr"; src=$?
    wait_exit $rp 30 > /dev/null; wait_exit $kp 30 > /dev/null
    rrc=$(cat "$T/rrc" 2> /dev/null || echo "none (hung)"); krc=$(cat "$T/krc" 2> /dev/null || echo "none (hung)")
    if [ $src = 0 ] && [ "$rrc" = 0 ] && [ "$krc" = 0 ] && cmp -s "$T/in" "$T/out" &&
       grep -q "^rdsend: 2 rails to " "$T/serr" &&
       grep -q "relaying from .* over rdma rxe_a port 1 + rdma rxe_c port 1, 2 streams to .*, 2 streams (chunk" "$T/rerr"; then
        pass "a relay offers its rails: 2 rails in, 2 QPs on to the sink, 12 MiB + 9 byte-identical"
    else fail "a relay offers its rails" "rdsend $src, relay $rrc, sink $krc: $(cat "$T/serr" "$T/rerr" "$T/kerr" | tr '\n' '|')"; fi
    RO=(--transport rdma -d rxe_a,rxe_c); SO=(--transport rdma --timeout 20 --bind $C)
    kill_case "multi-rail by default, sender SIGKILLed mid-stream" sender $S
    kill_case "multi-rail by default, receiver SIGKILLed mid-stream" receiver $S
}
# measure_one RECV_OPTS... -- SEND_OPTS...: one transfer of the page-cached $T/in to rdrecv's
# /dev/null at $S (both ends -v, more -v in the options); GBS: the sender's GB/s, or
# failed(...) with both statuses; CPU_S and CPU_R: each end's CPU seconds per GB
measure_one() {
    local ro=() src rrc gb
    while [ "$1" != -- ]; do ro+=("$1"); shift; done; shift
    gb=$(awk -v b="$(stat -c %s "$T/in")" 'BEGIN { print b / 1e9 }')
    next_port
    /usr/bin/time -f '%U %S' -o "$T/rtime" "$RECV" -v "${ro[@]}" $PORT key > /dev/null 2> "$T/rerr" & rp=$!
    /usr/bin/time -f '%U %S' -o "$T/stime" "$SEND" -v "$@" $S $PORT key "$T/in" 2> "$T/serr"; src=$?
    wait_exit $rp 60 > /dev/null; rrc=$?
    GBS=$(sed -n 's/^Bandwidth \(.*\) GB\/s.*/\1/p' "$T/serr")
    [ $src = 0 ] && [ $rrc = 0 ] || GBS="failed($src/$rrc: $(tail -1 "$T/serr"))"
    CPU_S=$(awk -v gb=$gb '{ printf "%.2f", ($1 + $2) / gb }' "$T/stime")
    CPU_R=$(awk -v gb=$gb '{ printf "%.2f", ($1 + $2) / gb }' "$T/rtime")
}
# RXE_ONLY=measure-rails: rdsend FILE -> rdrecv /dev/null, one connection (--streams 1) against
# the rails found by default (rxe_b and rxe_d), in interleaved rounds, each end's GB/s and CPU
measure_rails_cases() {
    local mb=${RXE_MEASURE_MB:-48} rounds=${RXE_MEASURE_ROUNDS:-3} r v
    head -c $((mb << 20)) "$T/big" > "$T/in"
    echo "--- measuring: $mb MiB page-cached file -> /dev/null, $rounds rounds, 1 rail against 2 (vCPUs: $(nproc))"
    declare -A all
    for ((r = 1; r <= rounds; r++)); do
        for v in "one connection" "rails by default"; do
            local pin=(); [ "$v" = "one connection" ] && pin=(--streams 1)
            measure_one --transport rdma -d rxe_a,rxe_c -- --transport rdma --timeout 20 --bind $C "${pin[@]}"
            all[$v]+="$GBS "
            echo "  round $r, $v: $GBS GB/s; CPU s/GB sender $CPU_S, receiver $CPU_R ($(grep -o 'over rdma.*(chunk' "$T/serr"))"
        done
    done
    for v in "one connection" "rails by default"; do echo "  measured: $v: ${all[$v]}GB/s"; done
}
# RXE_ONLY=measure: rdsend FILE -> rdrecv /dev/null over rxe_b -> rxe_a, 1 stream against 2,
# and the rings on small pages, transparent huge pages and hugetlbfs pages, in rounds (each
# round runs every variant once, in turn), the sender's GB/s each
measure_cases() {
    local mb=${RXE_MEASURE_MB:-48} rounds=${RXE_MEASURE_ROUNDS:-3} r v
    head -c $((mb << 20)) "$T/big" > "$T/in"
    echo "--- measuring: $mb MiB page-cached file -> /dev/null, $rounds rounds; THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
    declare -A all
    for ((r = 1; r <= rounds; r++)); do
        for v in "1 stream, small pages" "1 stream, THP" "1 stream, hugetlbfs" "2 streams, hugetlbfs" "2 streams, small pages"; do
            local huge=1 streams=1; case $v in *small*) huge=0 ;; esac; case $v in 2*) streams=2 ;; esac
            case $v in *hugetlbfs) echo 128 > /proc/sys/vm/nr_hugepages ;; *) echo 0 > /proc/sys/vm/nr_hugepages ;; esac
            RDPIPE_RDMA_HUGE=$huge measure_one -v "${RS[@]}" -- -v "${SS[@]}" --streams $streams
            all[$v]+="$GBS "
            echo "  round $r, $v: $GBS GB/s ($(grep -o 'send ring .*' "$T/serr" | head -1); $(grep -o 'receive ring .*' "$T/rerr" | head -1))"
        done
    done
    echo 0 > /proc/sys/vm/nr_hugepages
    for v in "${!all[@]}"; do echo "  measured: $v: ${all[$v]}GB/s"; done
}
# ---- the input file changes while it is sent: each chunk goes out of the ring slot a lane
# read it into, so a file rewritten meanwhile arrives as read, chunk by chunk, with exit 0 (as
# over TCP: tests/integration/changing.sh); a file that shrinks fails both ends, no signal ----
# held_rewrite [RDSEND OPTION...]: 64 MiB sent to rdrecv's stdout, a pipe whose reader takes 6
# MiB and stops, so both rings fill with chunks read and not yet taken; the file is rewritten
# in place; then the reader drains the rest. Sets rc1 rc2 (rdrecv, rdsend) and OLD (how many
# 1 MiB chunks of the output are the old file's; "" when one is neither file's)
held_rewrite() {
    local rp sp readp k n=64
    # the old file is big's first n MiB, the new one the n after them: no copies to compare with
    next_port; head -c $((n << 20)) "$T/big" > "$T/in"
    rm -f "$T/out" "$T/head" "$T/rest" "$T/got" "$T/go" "$T/fifo"; mkfifo "$T/fifo"
    { head -c $((6 << 20)) > "$T/head"; touch "$T/got"
      while [ ! -e "$T/go" ]; do sleep 0.05; done; cat > "$T/rest"; } < "$T/fifo" & readp=$!
    "$RECV" "${RS[@]}" --chunk-size 1M $PORT key > "$T/fifo" 2> "$T/rerr" & rp=$!
    "$SEND" "${SS[@]}" --chunk-size 1M "$@" $S $PORT key "$T/in" 2> "$T/serr" & sp=$!
    for ((k = 0; k < 600; k++)); do [ -e "$T/got" ] && break; sleep 0.05; done
    sleep 1   # the stall: both rings fill
    dd if="$T/big" of="$T/in" bs=1M skip=$n count=$n conv=notrunc status=none
    touch "$T/go"
    wait_exit $sp 60; rc2=$?; wait_exit $rp 60; rc1=$?; wait_exit $readp 10 > /dev/null
    cat "$T/head" "$T/rest" 2> /dev/null > "$T/out"; rm -f "$T/head" "$T/rest"
    OLD=""
    [ "$(stat -c %s "$T/out")" = $((n << 20)) ] || return
    OLD=$(python3 - "$T/out" "$T/big" $n <<'EOF'
import mmap, sys
def mapped(path):
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
out, big, n = mapped(sys.argv[1]), mapped(sys.argv[2]), int(sys.argv[3])
M, n_old = 1 << 20, 0
for i in range(n):
    chunk = out[i * M:(i + 1) * M]
    if chunk == big[i * M:(i + 1) * M]: n_old += 1
    elif chunk != big[(n + i) * M:(n + i + 1) * M]: sys.exit()   # a chunk of neither file: ""
print(n_old)
EOF
)
}
changing_cases() {
    echo "--- the input file changes while it is sent"
    local rp sp rc1 rc2 i k
    for i in 1 2; do
        local so=(); [ $i = 2 ] && so=(--streams 2)
        if [ "$BIG_MB" -lt 128 ]; then skip "input rewritten mid-stream" "RXE_BIG_MB=$BIG_MB: the old and the new file are 64 MiB each of it"; continue; fi
        held_rewrite "${so[@]}"
        if [ $rc1 = 0 ] && [ $rc2 = 0 ] && [ -n "$OLD" ] && [ "$OLD" -ge 6 ] && [ "$OLD" -lt 64 ]; then
            pass "input rewritten mid-stream$([ $i = 2 ] && echo ', --streams 2'): exit 0 both, each chunk old or new ($OLD of 64 old)"
        else fail "input rewritten mid-stream$([ $i = 2 ] && echo ', --streams 2')" "rdsend $rc2, rdrecv $rc1, old chunks '${OLD}' (want 6..63; '' = a chunk of neither file, or short): $(cat "$T/serr" "$T/rerr" | tr '\n' '|')"; fi
    done
    rm -f "$T/out"
    for i in 1 2; do
        next_port; head -c $((96 << 20)) "$T/big" > "$T/in"; rm -f "$T/out"
        local so=(-v "${SS[@]}" --chunk-size 1M); [ $i = 2 ] && so+=(--streams 2)
        "$RECV" -v "${RS[@]}" $PORT key "$T/out" 2> "$T/rerr" & rp=$!
        "$SEND" "${so[@]}" $S $PORT key "$T/in" 2> "$T/serr" & sp=$!
        for ((k = 0; k < 400; k++)); do [ "$(stat -c %s "$T/out" 2> /dev/null || echo 0)" -ge $((6 << 20)) ] && break; sleep 0.05; done
        truncate -s $((3 << 20)) "$T/in"
        wait_exit $sp 30; rc2=$?; wait_exit $rp 30; rc1=$?
        if [ $rc1 != 0 ] && [ $rc1 -lt 128 ] && [ $rc2 != 0 ] && [ $rc2 -lt 128 ] && grep -q "shrank" "$T/serr"; then
            pass "input truncated mid-stream$([ $i = 2 ] && echo ', --streams 2'): rdsend $rc2, rdrecv $rc1: $(tail -1 "$T/serr")"
        else fail "input truncated mid-stream$([ $i = 2 ] && echo ', --streams 2')" "rdsend $rc2, rdrecv $rc1 (want both non-zero, no signal, 'shrank'): $(cat "$T/serr" "$T/rerr" | tr '\n' '|')"; fi
    done
}
# wait_both PID1 PID2 SECS: sets rc1 dt1 rc2 dt2 (exit status, seconds since $t0); a process
# still running after SECS is SIGKILLed (status 255)
wait_both() {
    local p1=$1 p2=$2 end; end=$(awk -v t="$(now)" -v s="$3" 'BEGIN{printf "%.3f", t + s}')
    rc1=; rc2=; dt1=; dt2=
    while [ -z "$rc1" ] || [ -z "$rc2" ]; do
        if [ -z "$rc1" ] && ! kill -0 "$p1" 2> /dev/null; then dt1=$(since "$t0"); wait "$p1"; rc1=$?; fi
        if [ -z "$rc2" ] && ! kill -0 "$p2" 2> /dev/null; then dt2=$(since "$t0"); wait "$p2"; rc2=$?; fi
        if awk -v t="$(now)" -v e="$end" 'BEGIN{exit !(t > e)}'; then
            [ -z "$rc1" ] && { kill -9 "$p1"; wait "$p1"; rc1=255; dt1=never; }
            [ -z "$rc2" ] && { kill -9 "$p2"; wait "$p2"; rc2=255; dt2=never; }
        fi
        sleep 0.05
    done
}
# the link itself goes down mid-stream and stays down (ip link set vb down: rxe_b's port goes
# DOWN, va loses its carrier): rdrecv hears nothing more and notices by its heartbeats; rdsend's
# own side fails, or (Soft-RoCE has been seen to complete nothing at all once its netdev is
# down) gives up by the RD_V_STUCK_MS backstop; 6.12's rxe flushes the port's queue pairs at once
# and both say the port is down; both exit 4 within 15 s. Last of the cases
# that need the link: rxe does not reliably carry new connections after the link comes back.
link_down_case() {
    next_port
    "$RECV" -v "${RS[@]}" --chunk-size 256K $PORT key > /dev/null 2> "$T/rerr" & rp=$!
    "$SEND" -v "${SS[@]}" --chunk-size 256K $S $PORT key /dev/zero 2> "$T/serr" & sp=$!
    if wait_text "$T/rerr" 'receiving from' 20; then
        sleep 1; t0=$(now); ip link set dev vb down; wait_both $rp $sp 20
        why=""
        [ "$rc1" = 4 ] && [ "$rc2" = 4 ] || why+="exits $rc1/$rc2 (want 4/4) "
        for d in "$dt1" "$dt2"; do awk -v d="$d" 'BEGIN{exit !(d != "never" && d <= 15)}' || why+="an exit after ${d}s (limit 15) "; done
        # 6.1's rxe goes silent (heartbeats notice); 6.12's flushes the port's queue pairs at once
        grep -Eq "connection to $C:[0-9]* lost: (the peer went silent|RDMA port rxe_a/1 is down)" "$T/rerr" ||
            why+="rdrecv says neither that $C went silent nor that rxe_a's port is down "
        grep -q "connection to $S:$PORT lost" "$T/serr" || why+="rdsend does not say the connection was lost "
        if [ -z "$why" ]; then pass "link down mid-stream: both exit 4 (rdrecv ${dt1}s, rdsend ${dt2}s): $(tail -1 "$T/serr")"
        else fail "link down mid-stream" "$why: $(cat "$T/rerr" "$T/serr" | tr '\n' '|')"; fi
    else fail "link down mid-stream" "never started: $(cat "$T/rerr" "$T/serr" | tr '\n' '|')"; kill -9 $rp $sp; wait $rp $sp; fi
    ip link set dev vb up
}

# run.sh RXE_ONLY=GROUP[,GROUP...]: those groups alone, in that order (linkdown last: rxe does
# not reliably carry new connections after the link comes back)
if [ -n "${RXE_ONLY:-}" ]; then
    for g in ${RXE_ONLY//,/ }; do
        case $g in
            streams) streams_cases ;;
            memlock) relay_memlock; recv_memlock ;;
            rdcp) rdcp_cases ;;
            casefold) casefold_case ;;
            rails) default_rails_cases ;;
            measure-rails) measure_rails_cases ;;
            changing) changing_cases ;;
            linkdown) link_down_case ;;
            measure) measure_cases ;;
            *) fail "RXE_ONLY" "no group '$g' (streams, memlock, rdcp, casefold, rails, measure-rails, changing, linkdown, measure)" ;;
        esac
    done
    rm -rf "$T"; slowest; echo "--- vm: $npass passed, $nfail failed, $nskip skipped"; exit $nfail
fi

K=65536
for sz in 0 1 4095 $((K - 1)) $K $((K + 1)) $((3 * K + 17)); do
    xfer "size $sz, 64K chunks, files" $sz file --chunk-size 64K
done
xfer "size $((K + 1)), 64K chunks, pipes" $((K + 1)) pipe --chunk-size 64K
xfer "10 MiB + 1 at the default chunk size, files" $((10 * 1048576 + 1)) file
# the codecs over RDMA: ciphertext and zstd frames in the registered rings, in place
head -c $((6 << 20)) /dev/zero >> "$T/big.z" && seq 1 400000 >> "$T/big.z"
xfer "--encrypt --compress, 10 MiB + 3 random, files" $((10 * 1048576 + 3)) file --encrypt --compress
xfer "--encrypt, 64K chunks + 1, pipes" $((65536 + 1)) pipe --chunk-size 64K --encrypt
# the ends agree on the cipher this (emulated) CPU prefers, as --version names it; each of the
# three over RDMA, forced on the sender
want=$("$SEND" --version | sed -n 's/.*; this end prefers //p')
xfer "--encrypt -v (${want:-?}), 1 MiB + 5, files" $((1048576 + 5)) file --encrypt -v
grep -q "encrypted with ${want:-?}$" "$T/serr" && pass "--encrypt agrees on $want" ||
    fail "--encrypt agrees on ${want:-?}" "rdsend -v: $(grep -o 'encrypted with [a-z0-9-]*' "$T/serr")"
for cipher in aes-256-ocb aes-256-gcm chacha20-poly1305; do
    RDPIPE_CIPHER=$cipher xfer "--encrypt $cipher, 3 x 64K + 9, files" $((3 * 65536 + 9)) file --chunk-size 64K --encrypt -v
    grep -q "encrypted with $cipher$" "$T/serr" || fail "--encrypt $cipher" "rdsend -v: $(grep -o 'encrypted with [a-z0-9-]*' "$T/serr")"
done
cp "$T/big" "$T/big.keep"; cp "$T/big.z" "$T/big"
xfer "--compress=3 --encrypt, zeros and text, files" $((8 << 20)) file --compress=3 --encrypt
cp "$T/big.keep" "$T/big"; rm -f "$T/big.keep" "$T/big.z"
xfer "$BIG_MB MiB random, default chunk, pipes" $((BIG_MB << 20)) pipe
xfer "$BIG_MB MiB random, 256K chunks depth 16, files" $((BIG_MB << 20)) file --chunk-size 256K --depth 16
streams_cases
changing_cases

# Differential subset over RDMA (tests/integration/differential.sh does the full matrix on
# TCP): each sender mode (a pipe written in random pieces with pauses, FILE, --direct FILE)
# against each sink mode, at small random sizes with random chunk sizes (odd ones too) and
# depths; sha256 compared. Seeded: RDPIPE_SEED (default 9) replays the same cases. The files
# live on the shared checkout (9p), which takes O_DIRECT (the guest's tmpfs does not). 9p also
# takes unaligned O_DIRECT writes, which a disk file system refuses, so what the host's
# differential.sh checks about those cannot happen here; this checks the RDMA side.
SEED=${RDPIPE_SEED:-9}; RANDOM=$SEED
D=$PWD/tests/out/rxe-diff.$$; rm -rf "$D"; mkdir -p "$D"
dio="O_DIRECT refused"
dd if=/dev/zero of="$D/probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null && dio="O_DIRECT taken"
dd if=/dev/zero of="$D/probe" bs=1000 count=1 oflag=direct status=none 2>/dev/null && dio+=", unaligned too"
echo "  differential over rdma, seed $SEED, files in $D ($dio)"
# pwriter FILE SEED: FILE to stdout in pieces of 1 byte .. 70 KB, pausing now and then longer
# than the sender waits on a quiet pipe (so frames of odd lengths go out)
pwriter() {
    local f=$1 size off=0 n; RANDOM=$2; size=$(stat -c %s "$f")
    while [ $off -lt $size ]; do
        if [ $((RANDOM % 3)) = 0 ]; then n=$((RANDOM % 5000 + 1)); else n=$((RANDOM * 2 % 70000 + 1)); fi
        dd if="$f" bs=64K iflag=skip_bytes,count_bytes skip=$off count=$n status=none || return 1
        off=$((off + n))
        [ $((RANDOM % 3)) = 0 ] && sleep 0.03
    done
}
id=0
for smode in pipe file direct; do
    for kmode in stdout file direct no-sync direct-stdout; do
        id=$((id + 1)); next_port
        chunks=(4096 65536 $((65536 + RANDOM % 4096 + 1)) $((8192 + RANDOM % 4096 + 1)))
        chunk=${chunks[RANDOM % 4]}; depth=$((RANDOM % 8 + 1))
        # a third of them edges, the rest 2-4 chunks and an odd tail (frames after an odd one)
        sizes=(0 1 4095 4097 $((chunk - 1)) $((chunk + 1)))
        if [ $((RANDOM % 3)) = 0 ]; then size=${sizes[RANDOM % 6]}
        else size=$(((RANDOM % 3 + 2) * chunk + RANDOM % chunk)); fi
        name="diff seed $SEED case $id: $smode -> $kmode, $size bytes, chunk $chunk depth $depth"
        head -c "$size" "$T/big" > "$D/in"; rm -f "$D/out"
        so=(--chunk-size "$chunk" --depth "$depth"); ro=(--chunk-size "$chunk" --depth "$depth"); sf=(); rf=()
        case $smode in file) sf=("$D/in") ;; direct) sf=("$D/in"); so+=(--direct) ;; esac
        case $kmode in
            file) rf=("$D/out") ;; direct) rf=("$D/out"); ro+=(--direct) ;;
            no-sync) rf=("$D/out"); ro+=(--no-sync) ;; direct-stdout) ro+=(--direct) ;;
        esac
        # rdrecv's own status in $T/rrc (with stdout to a pipe, $! would be cat's)
        if [ "$kmode" = stdout ]; then { "$RECV" "${RS[@]}" "${ro[@]}" $PORT key 2> "$T/rerr"; echo $? > "$T/rrc"; } | cat > "$D/out" & rp=$!
        else { "$RECV" "${RS[@]}" "${ro[@]}" $PORT key "${rf[@]}" > "$D/out" 2> "$T/rerr"; echo $? > "$T/rrc"; } & rp=$!; fi
        if [ "$smode" = pipe ]; then
            pwriter "$D/in" $((SEED * 1000 + id)) | "$SEND" "${SS[@]}" "${so[@]}" $S $PORT key 2> "$T/serr"; src=${PIPESTATUS[1]}
        else "$SEND" "${SS[@]}" "${so[@]}" $S $PORT key "${sf[@]}" < /dev/null 2> "$T/serr"; src=$?; fi
        wait_exit $rp 30; rrc=$(cat "$T/rrc" 2>/dev/null || echo "none (hung)"); rm -f "$T/rrc"
        if [ $src != 0 ] || [ "$rrc" != 0 ]; then
            fail "$name" "rdsend $src, rdrecv $rrc: $(cat "$T/serr" "$T/rerr" | tr '\n' '|') (replay: RDPIPE_SEED=$SEED)"
        elif [ "$(sha "$D/in")" != "$(sha "$D/out")" ]; then
            fail "$name" "output differs: $(stat -c %s "$D/out") bytes, sha256 $(sha "$D/out") (replay: RDPIPE_SEED=$SEED)"
        else pass "$name"; fi
    done
done
rm -rf "$D"

# IPv6, receiver listening on any address ([::], dual stack): loopback through rxe_a
if ip -6 addr add fd00:7::1/64 dev va nodad 2>/dev/null; then
    sleep 1; next_port; head -c 1000000 "$T/big" > "$T/in"
    "$RECV" --transport rdma $PORT key "$T/out" 2> "$T/rerr" & rp=$!
    "$SEND" -v --transport rdma --timeout 20 fd00:7::1 $PORT key "$T/in" 2> "$T/serr"; src=$?
    wait_exit $rp 20; rrc=$?
    if [ $src = 0 ] && [ $rrc = 0 ] && cmp -s "$T/in" "$T/out"; then pass "IPv6 (fd00:7::1), receiver on [::]"
    else fail "IPv6" "$src/$rrc: $(cat "$T/serr" "$T/rerr" | tr '\n' '|')"; fi
    # and IPv4 to the same any-address listener
    next_port
    "$RECV" --transport rdma $PORT key "$T/out" 2> "$T/rerr" & rp=$!
    "$SEND" "${SS[@]}" $S $PORT key "$T/in" 2> "$T/serr"; src=$?
    wait_exit $rp 20; rrc=$?
    if [ $src = 0 ] && [ $rrc = 0 ] && cmp -s "$T/in" "$T/out"; then pass "IPv4 to a receiver on [::]"
    else fail "IPv4 to [::]" "$src/$rrc: $(cat "$T/serr" "$T/rerr" | tr '\n' '|')"; fi
else skip "IPv6 (fd00:7::1), receiver on [::]; IPv4 to it" "cannot add fd00:7::1 to va (IPv6 off in the VM?)"; fi

# -v names the RDMA device and port
next_port; head -c 1000 "$T/big" > "$T/in"
"$RECV" -v "${RS[@]}" $PORT key > /dev/null 2> "$T/rerr" & rp=$!
"$SEND" -v "${SS[@]}" $S $PORT key "$T/in" 2> "$T/serr"; src=$?; wait_exit $rp 20; rrc=$?
if [ $src = 0 ] && [ $rrc = 0 ] && grep -q "rdma rxe_b port 1" "$T/serr" && grep -q "rdma rxe_a port 1" "$T/rerr"; then
    pass "-v shows the RDMA device on both sides"
else fail "-v shows the RDMA device" "$src/$rrc: $(cat "$T/serr" "$T/rerr" | tr '\n' '|')"; fi

# --transport auto on both ends (the default) picks RDMA where both have it; a receiver
# forced to TCP makes the auto sender fall back to TCP
next_port; head -c 300000 "$T/big" > "$T/in"
"$RECV" -v --bind "$S" $PORT key "$T/out" 2> "$T/rerr" & rp=$!
"$SEND" -v --bind "$C" --timeout 20 $S $PORT key "$T/in" 2> "$T/serr"; src=$?; wait_exit $rp 20; rrc=$?
if [ $src = 0 ] && [ $rrc = 0 ] && cmp -s "$T/in" "$T/out" && grep -q "over rdma rxe_b" "$T/serr"; then
    pass "auto on both ends uses RDMA"
else fail "auto uses RDMA" "$src/$rrc: $(cat "$T/serr" "$T/rerr" | tr '
' '|')"; fi
next_port
"$RECV" -v --transport tcp --bind "$S" $PORT key "$T/out" 2> "$T/rerr" & rp=$!
"$SEND" -v --bind "$C" --timeout 20 $S $PORT key "$T/in" 2> "$T/serr"; src=$?; wait_exit $rp 20; rrc=$?
if [ $src = 0 ] && [ $rrc = 0 ] && cmp -s "$T/in" "$T/out" && grep -q "using TCP" "$T/serr" && grep -q "over tcp" "$T/serr"; then
    pass "auto sender falls back to TCP when the receiver listens on TCP only"
else fail "auto falls back to TCP" "$src/$rrc: $(cat "$T/serr" "$T/rerr" | tr '\n' '|')"; fi

# wrong key: rdsend 3 "authentication failed"; rdrecv keeps listening and takes the right one
next_port; head -c 300000 "$T/big" > "$T/in"
"$RECV" "${RS[@]}" --timeout 60 $PORT rightkey "$T/out" 2> "$T/rerr" & rp=$!
"$SEND" "${SS[@]}" $S $PORT wrongkey "$T/in" 2> "$T/serr"; src=$?
if [ $src = 3 ] && grep -q "authentication failed" "$T/serr" && kill -0 $rp 2>/dev/null; then
    "$SEND" "${SS[@]}" $S $PORT rightkey "$T/in" 2> "$T/serr2"; src2=$?; wait_exit $rp 20; rrc=$?
    if [ $src2 = 0 ] && [ $rrc = 0 ] && [ "$(sha "$T/in")" = "$(sha "$T/out")" ]; then pass "wrong key: rdsend exits 3, rdrecv then serves the right sender"
    else fail "wrong key" "right sender after wrong one: $src2/$rrc $(cat "$T/serr2" "$T/rerr" | tr '\n' '|')"; fi
else
    fail "wrong key" "rdsend exit $src (want 3): $(cat "$T/serr" | tr '\n' '|')"; kill -9 $rp 2>/dev/null; wait $rp 2>/dev/null
fi

# strangers: rping (rdma_cm connect without our private data) and a TCP connection to the
# same port number; rdrecv must keep serving. It listens on both (auto: TCP and RDMA on one
# port; with --transport rdma nothing would take the TCP connection), and the strangers must
# have reached it: its -v names the refused rping, and the TCP connection was accepted
next_port; head -c 300000 "$T/big" > "$T/in"
"$RECV" -v --bind "$S" --timeout 60 $PORT key "$T/out" 2> "$T/rerr" & rp=$!
sleep 0.5
timeout 10 rping -c -a $S -I $C -p $PORT -C 1 > "$T/rping.log" 2>&1
tcp=refused; (exec 3<>/dev/tcp/$S/$PORT && echo "GET / HTTP/1.0" >&3) 2>/dev/null && tcp=accepted
"$SEND" "${SS[@]}" $S $PORT key "$T/in" 2> "$T/serr"; src=$?; wait_exit $rp 20; rrc=$?
why=""
grep -q "rdma: refused a connection from .*(not an rdpipe peer)" "$T/rerr" ||
    why+="rping never reached rdrecv (its -v names no refused connection; rping: $(tr '\n' '|' < "$T/rping.log")) "
[ $tcp = accepted ] || why+="the TCP connection to port $PORT was refused: the garbage never reached rdrecv "
if [ $src = 0 ] && [ $rrc = 0 ] && [ "$(sha "$T/in")" = "$(sha "$T/out")" ] && [ -z "$why" ]; then
    pass "rping and TCP garbage at the port reach rdrecv, which keeps serving"
else fail "strangers at the port" "$src/$rrc $why$(cat "$T/serr" "$T/rerr" | tr '\n' '|')"; fi

# sender SIGKILLed mid-stream at random points: rdrecv exits 4 within a few seconds
worst=0; bad=""
for ((i = 1; i <= KILLS; i++)); do
    next_port
    "$RECV" -v "${RS[@]}" --chunk-size 256K $PORT key > /dev/null 2> "$T/rerr" & rp=$!
    "$SEND" "${SS[@]}" --chunk-size 256K $S $PORT key /dev/zero 2> "$T/serr" & sp=$!
    wait_text "$T/rerr" 'receiving from' 20 || { bad+="#$i never started: $(tr '\n' '|' < "$T/rerr")"; kill -9 $sp $rp; wait $sp $rp; continue; }
    sleep "$(awk -v r=$RANDOM 'BEGIN{printf "%.2f", (r % 200) / 100}')"
    t0=$(now); kill -9 $sp; wait $sp 2>/dev/null
    wait_exit $rp 10; rc=$?; dt=$(since "$t0")
    awk -v a="$dt" -v b="$worst" 'BEGIN{exit !(a > b)}' && worst=$dt
    [ $rc = 4 ] || bad+="#$i: rdrecv exit $rc after ${dt}s: $(tr '\n' '|' < "$T/rerr") "
done
if [ -z "$bad" ] && awk -v w="$worst" 'BEGIN{exit !(w < 5)}'; then pass "sender SIGKILLed at $KILLS random points: rdrecv exits 4 (slowest ${worst}s)"
else fail "sender SIGKILLed mid-stream" "slowest ${worst}s $bad"; fi

# receiver SIGKILLed mid-stream: rdsend exits non-zero within a few seconds
worst=0; bad=""
for ((i = 1; i <= 3; i++)); do
    next_port
    "$RECV" -v "${RS[@]}" --chunk-size 256K $PORT key > /dev/null 2> "$T/rerr" & rp=$!
    "$SEND" "${SS[@]}" --chunk-size 256K $S $PORT key /dev/zero 2> "$T/serr" & sp=$!
    wait_text "$T/rerr" 'receiving from' 20 || { bad+="#$i never started "; kill -9 $sp $rp; wait $sp $rp; continue; }
    sleep 0.$((RANDOM % 10))
    t0=$(now); kill -9 $rp; wait $rp 2>/dev/null
    wait_exit $sp 10; rc=$?; dt=$(since "$t0")
    awk -v a="$dt" -v b="$worst" 'BEGIN{exit !(a > b)}' && worst=$dt
    { [ $rc != 0 ] && [ $rc != 255 ]; } || bad+="#$i: rdsend exit $rc after ${dt}s: $(tr '\n' '|' < "$T/serr") "
    [ -z "$bad" ] && [ $i = 1 ] && echo "  rdsend said: $(tail -1 "$T/serr") (exit $rc)"
done
if [ -z "$bad" ] && awk -v w="$worst" 'BEGIN{exit !(w < 5)}'; then pass "receiver SIGKILLed: rdsend exits non-zero (slowest ${worst}s)"
else fail "receiver SIGKILLed" "slowest ${worst}s $bad"; fi

# ---- liveness: a peer that goes silent (a host that dies, a cable cut) ----
# Both rxe devices live in this one VM, joined by the veth pair va <-> vb, so "the peer's host
# died" is played by a blackhole qdisc (built into the kernel, no module) on both veth ends:
# every packet either side sends vanishes without a word, links and neighbours stay up, and
# neither kernel reports anything. Only the QPs' unacknowledged heartbeats can notice.
silence() { tc qdisc add dev va root blackhole && tc qdisc add dev vb root blackhole; }
unsilence() { tc qdisc del dev va root 2> /dev/null; tc qdisc del dev vb root 2> /dev/null; }
# silent_check NAME: both exited 4 within 15 s, each naming the other and saying it went silent
silent_check() {
    local why=""
    [ "$rc1" = 4 ] || why+="rdrecv exit $rc1 (want 4) "
    [ "$rc2" = 4 ] || why+="rdsend exit $rc2 (want 4) "
    for d in "$dt1" "$dt2"; do awk -v d="$d" 'BEGIN{exit !(d != "never" && d <= 15)}' || why+="an exit after ${d}s (limit 15) "; done
    grep -q "connection to $C:[0-9]* lost: the peer went silent" "$T/rerr" || why+="rdrecv does not say that $C went silent "
    grep -q "connection to $S:$PORT lost: the peer went silent" "$T/serr" || why+="rdsend does not say that $S:$PORT went silent "
    if [ -z "$why" ]; then pass "$1: both exit 4 (rdrecv ${dt1}s, rdsend ${dt2}s): $(tail -1 "$T/rerr")"
    else fail "$1" "$why: $(cat "$T/rerr" "$T/serr" | tr '\n' '|')"; fi
}

# the path goes silent while data flows
next_port; unsilence
"$RECV" -v "${RS[@]}" --chunk-size 256K $PORT key > /dev/null 2> "$T/rerr" & rp=$!
"$SEND" -v "${SS[@]}" --chunk-size 256K $S $PORT key /dev/zero 2> "$T/serr" & sp=$!
if wait_text "$T/rerr" 'receiving from' 20; then
    sleep 1; t0=$(now); silence; wait_both $rp $sp 20; unsilence
    silent_check "peer goes silent while data flows"
else fail "peer goes silent while data flows" "never started: $(cat "$T/rerr" "$T/serr" | tr '\n' '|')"; kill -9 $rp $sp; wait $rp $sp; fi

# the path goes silent while the sender's input is quiet: its stdin (a fifo held open) gave
# 100000 bytes, all written out at the far end, then nothing
next_port; unsilence; rm -f "$T/fifo" "$T/out"; mkfifo "$T/fifo"; exec 7<> "$T/fifo"
"$RECV" -v "${RS[@]}" $PORT key "$T/out" 2> "$T/rerr" & rp=$!
"$SEND" -v "${SS[@]}" $S $PORT key < "$T/fifo" 2> "$T/serr" & sp=$!
head -c 100000 "$T/big" >&7
for ((i = 0; i < 400; i++)); do [ "$(stat -c %s "$T/out" 2> /dev/null)" = 100000 ] && break; sleep 0.05; done
if [ "$(stat -c %s "$T/out" 2> /dev/null)" = 100000 ]; then
    sleep 1; t0=$(now); silence; wait_both $rp $sp 20; unsilence
    silent_check "peer goes silent while the sender's stdin is idle"
else fail "peer goes silent while the sender's stdin is idle" "the first 100000 bytes never arrived: $(cat "$T/rerr" "$T/serr" | tr '\n' '|')"; kill -9 $rp $sp; wait $rp $sp; fi
exec 7>&-; rm -f "$T/fifo"

# a consumer that stops reading for 6 s, twice (3x the time a silent peer takes to be
# noticed): the receiver's ring fills, the sender waits for credits, heartbeats go on both
# ways, and the transfer completes intact
next_port; head -c 20000000 "$T/big" > "$T/in"; rm -f "$T/out"
{ "$RECV" -v -v "${RS[@]}" --chunk-size 256K $PORT key 2> "$T/rerr"; echo $? > "$T/rrc"; } |
    { sleep 6; dd bs=64K count=100 iflag=fullblock status=none; sleep 6; cat; } > "$T/out" & rp=$!
t0=$(now)
"$SEND" -v -v "${SS[@]}" --chunk-size 256K $S $PORT key "$T/in" 2> "$T/serr"; src=$?
wait_exit $rp 30; rrc=$(cat "$T/rrc" 2> /dev/null || echo "none (hung)"); rm -f "$T/rrc"; dt=$(since "$t0")
rhb=$(sed -n 's/.*rdma: .* \([0-9]*\) heartbeats,.*/\1/p' "$T/rerr"); shb=$(sed -n 's/.*rdma: .* \([0-9]*\) heartbeats,.*/\1/p' "$T/serr")
if [ $src = 0 ] && [ "$rrc" = 0 ] && [ "$(sha "$T/in")" = "$(sha "$T/out")" ] && awk -v d="$dt" 'BEGIN{exit !(d >= 12)}' &&
   [ "${rhb:-0}" -ge 10 ] && [ "${shb:-0}" -ge 10 ]; then
    pass "consumer stalls 2 x 6 s: no false timeout, 20 MB intact in ${dt}s, heartbeats sent: rdrecv $rhb, rdsend $shb"
else fail "slow consumer" "rdsend $src, rdrecv $rrc, ${dt}s, heartbeats $rhb/$shb: $(cat "$T/serr" "$T/rerr" | tr '\n' '|')"; fi

# stalled connection requests: a peer that sends rdpipe's connection request and then never
# completes the connection (no RTU) must not hold up the next sender. stall.c is built here:
# the guest sees the host's compiler and rdma-core headers.
cat > "$T/stall.c" << 'CEOF'
/* stall SERVER PORT SOURCE: connect with rdpipe's hello, then never read the answer, so the
 * connection is never completed; prints "sent" once the request is out */
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <unistd.h>
static void want(struct rdma_event_channel *ch, enum rdma_cm_event_type t)
{
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(ch, &ev) || ev->event != t) { fprintf(stderr, "stall: no %s\n", rdma_event_str(t)); _exit(1); }
    rdma_ack_cm_event(ev);
}
int main(int argc, char **argv)
{
    struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *dst, *src;
    struct rdma_addrinfo sh = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *id;
    if (argc != 4 || !ch || rdma_getaddrinfo(argv[1], argv[2], &hints, &dst) ||
        rdma_getaddrinfo(argv[3], NULL, &sh, &src) || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
        return 1;
    if (rdma_resolve_addr(id, src->ai_src_addr, dst->ai_dst_addr, 2000)) return 1;
    want(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
    if (rdma_resolve_route(id, 2000)) return 1;
    want(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
    struct ibv_qp_init_attr qa = { .cap = { 4, 4, 1, 1, 0 }, .qp_type = IBV_QPT_RC };
    if (rdma_create_qp(id, NULL, &qa)) return 1;
    char hello[8] = { 'R', 'D', 'P', 'v', 1, 0, 16, 0 };   /* struct rd_v_hello */
    struct rdma_conn_param p = { .private_data = hello, .private_data_len = sizeof hello,
                                 .retry_count = 6, .rnr_retry_count = 6 };
    if (rdma_connect(id, &p)) return 1;
    printf("sent\n");
    fflush(stdout);
    pause();
    return 0;
}
CEOF
if ! cc -o "$T/stall" "$T/stall.c" -lrdmacm -libverbs 2> "$T/cerr"; then
    fail "stalled connection requests" "cannot build stall.c: $(tr '\n' '|' < "$T/cerr")"
else
    # the time a sender takes alone, then with 3 stalled requests in front of it
    next_port; head -c 300000 "$T/big" > "$T/in"
    "$RECV" "${RS[@]}" --timeout 60 $PORT key "$T/out" 2> "$T/rerr" & rp=$!
    sleep 0.5; t0=$(now)
    "$SEND" "${SS[@]}" $S $PORT key "$T/in" 2> "$T/serr"; src=$?; tbase=$(since "$t0"); wait_exit $rp 20; rrc=$?
    next_port; rm -f "$T/out"; stallers=()
    "$RECV" -v "${RS[@]}" --timeout 60 $PORT key "$T/out" 2> "$T/rerr" & rp=$!
    sleep 0.5
    for i in 1 2 3; do "$T/stall" $S $PORT $C > "$T/stall.$i" 2>&1 & stallers+=($!); done
    for i in 1 2 3; do wait_text "$T/stall.$i" '^sent' 20; done
    sleep 0.5; t0=$(now)
    "$SEND" "${SS[@]}" $S $PORT key "$T/in" 2> "$T/serr2"; src2=$?; tstall=$(since "$t0"); wait_exit $rp 30; rrc2=$?
    nsent=$(cat "$T"/stall.? | grep -c '^sent')
    kill -9 "${stallers[@]}" 2> /dev/null; wait "${stallers[@]}" 2> /dev/null
    if [ $src = 0 ] && [ $rrc = 0 ] && [ $src2 = 0 ] && [ $rrc2 = 0 ] && [ "$nsent" = 3 ] && cmp -s "$T/in" "$T/out" &&
       awk -v a="$tstall" -v b="$tbase" 'BEGIN{exit !(a <= b + 2)}'; then
        pass "3 stalled RDMA connection requests do not hold up the sender: ${tstall}s (${tbase}s without them)"
    else fail "stalled connection requests" "alone $src/$rrc in ${tbase}s, behind $nsent stalled: $src2/$rrc2 in ${tstall}s: $(cat "$T/serr2" "$T/rerr" "$T"/stall.? | tr '\n' '|')"; fi
fi

# locked-memory limit too low for the ring: rdsend exits 5 and names the ulimit -l it needs,
# the whole connection's, as rdcheck counts it for 4M x 8 (root's CAP_IPC_LOCK would bypass the limit, so it is dropped)
next_port; head -c 300000 "$T/big" > "$T/in"
"$RECV" "${RS[@]}" --timeout 30 $PORT key > /dev/null 2> "$T/rerr" & rp=$!
(ulimit -l 2048 && exec setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock \
    "$SEND" "${SS[@]}" --chunk-size 4M $S $PORT key "$T/in") 2> "$T/serr"; src=$?
kill -9 $rp 2>/dev/null; wait $rp 2>/dev/null
if [ $src = 5 ] && grep -q "locked-memory limit is 2048 KiB; raise it (ulimit -l 34956 or unlimited)" "$T/serr"; then
    pass "memlock limit too low: rdsend exits 5 naming what the connection pins, rdcheck's 34956 KiB: $(tail -1 "$T/serr")"
else fail "memlock limit too low" "exit $src: $(cat "$T/serr")"; fi

rdcp_cases   # rdcp over RDMA (above)
casefold_case   # rdcp onto ext4 casefold (above)

# rdpipe over RDMA (local agents; -H puts the hops on rxe): data right, -v names the transport
if [ -x "$BIN/rdpipe" ]; then
    got=$(echo hello | PATH=$BIN:$PATH timeout 60 "$BIN/rdpipe" -v --transport rdma -H $S \
          localhost:'tr a-z A-Z' localhost:'rev' 2> "$T/rperr"); rc=$?
    if [ $rc = 0 ] && [ "$got" = OLLEH ] && grep -q "over rdma rxe" "$T/rperr"; then pass "rdpipe over RDMA: OLLEH, -v names the RDMA device"
    else fail "rdpipe over RDMA" "exit $rc, got '$got': $(tr '\n' '|' < "$T/rperr")"; fi
else skip "rdpipe over RDMA" "no $BIN/rdpipe"; fi

# rdpipe relays over RDMA: two `cat` segments forward frames verbs to verbs (each sent from the
# upstream ring it landed in); then a consumer that quits early: the ABORT crosses both relays
if [ -x "$BIN/rdpipe" ]; then
    head -c 20000003 "$T/big" > "$T/rl.in"; rm -f "$T/rl.out"
    PATH=$BIN:$PATH timeout 120 "$BIN/rdpipe" -v --transport rdma -H $S localhost:"< $T/rl.in" \
        localhost:cat localhost:cat localhost:"> $T/rl.out" < /dev/null 2> "$T/rlerr"; rc=$?
    if [ $rc = 0 ] && cmp -s "$T/rl.in" "$T/rl.out" && [ "$(grep -c "20000003 bytes .* over rdma rxe" "$T/rlerr")" = 3 ]; then
        pass "rdpipe: 2 relays over RDMA, 20 MB byte-identical, 3 hops over rdma"
    else fail "rdpipe relays over RDMA" "exit $rc: $(tr '\n' '|' < "$T/rlerr")"; fi
    t0=$(now)
    PATH=$BIN:$PATH timeout 120 "$BIN/rdpipe" --transport rdma -H $S localhost:"< $T/big" \
        localhost:cat localhost:cat localhost:'head -c 1000 > /dev/null; exit 5' < /dev/null 2> "$T/rlerr"; rc=$?
    if [ $rc = 5 ] && grep -q "command 'head -c 1000 > /dev/null; exit 5' failed with exit status 5" "$T/rlerr"; then
        pass "rdpipe: consumer quits behind 2 RDMA relays: exit 5 after $(since "$t0")s"
    else fail "rdpipe relays over RDMA, consumer quits" "exit $rc: $(tr '\n' '|' < "$T/rlerr")"; fi
else skip "rdpipe relays over RDMA (2 relays; a consumer that quits)" "no $BIN/rdpipe"; fi

# rdbench and rdcheck over the real devices (tests/rxe/bench_tests.sh prints its own PASS/FAIL
# lines, which run.sh counts); before the link-down case, which leaves rxe unreliable
RDPIPE_BIN=$BIN bash "$(dirname "$0")/bench_tests.sh"

link_down_case

# nobody listening: rdsend --transport rdma gives up with exit 2 after --timeout
next_port; t0=$(now)
"$SEND" --transport rdma --bind $C --timeout 2 $S $PORT key /dev/null 2> "$T/serr"; src=$?
if [ $src = 2 ]; then pass "no listener: rdsend exits 2 after $(since "$t0")s"
else fail "no listener" "exit $src: $(cat "$T/serr")"; fi

rm -rf "$T"
slowest
echo "--- vm: $npass passed, $nfail failed, $nskip skipped"
exit $nfail
