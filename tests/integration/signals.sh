#!/bin/bash
# signals.sh - SIGINT, SIGTERM and SIGHUP mid-stream: the interrupted end tells its peer why
# (an ABORT naming the signal) and then dies by the signal (128+N, as a UNIX tool must); the
# peer exits 4 naming it. Before 2026-11-27 both tools died at once, and the peer could only
# say "closed by peer", as for a network fault. A signal the tool was started with ignored
# (nohup, a script's background job) stays ignored.
. "$(dirname "$0")/../lib.sh"

SIGWRAP="$(dirname "$0")/sigwrap.py"

# sig_start NAME IN OUT ERR CMD...: CMD in the background under sigwrap.py, its signals at
# their default action; NAME_pid is the tool's own pid, NAME_wrap the wrapper's, and
# $C/NAME.status says how the tool ended ("exit N" or "signal N")
sig_start() {
    local name=$1 in=$2 out=$3 err=$4 i; shift 4
    rm -f "$C/$name.pid" "$C/$name.status"
    ( exec python3 "$SIGWRAP" "$C/$name.pid" "$C/$name.status" "$@" < "$in" > "$out" 2> "$err" ) &
    printf -v "${name}_wrap" '%s' "$!"
    RD_PIDS+=("$!")
    for ((i = 0; i < 200; i++)); do [ -s "$C/$name.pid" ] && break; sleep 0.05; done
    printf -v "${name}_pid" '%s' "$(cat "$C/$name.pid" 2>/dev/null)"
    RD_PIDS+=("$(cat "$C/$name.pid" 2>/dev/null)")
}
# sig_end NAME SECONDS WANT WHAT: the tool ended within SECONDS as WANT says ("signal 2")
sig_end() {
    local w="${1}_wrap"
    wait_pid "${!w}" "$2"
    local got
    got=$(cat "$C/$1.status" 2>/dev/null)
    [ "$got" = "$3" ] || t_fail "$4: ${got:-still running after ${2}s}, expected $3"
}
# stall_feed FIFO BYTES: BYTES of random data into FIFO, then silence (the writer stays)
stall_feed() {
    mkfifo "$1"
    ( head -c "$2" /dev/urandom; exec sleep "$(lim 60)" ) > "$1" & feeder=$!; RD_PIDS+=("$feeder")
}
wait_size() {   # wait_size FILE BYTES: true once FILE holds BYTES
    local i
    for ((i = 0; i < 200; i++)); do [ "$(stat -c %s "$1" 2>/dev/null)" = "$2" ] && return 0; sleep 0.05; done
    return 1
}

t_begin "SIGINT to rdsend while its stdin is quiet: it dies by SIGINT, rdrecv exits 4 naming it, the bytes before it arrived"
port=$(free_port); stall_feed "$C/feed" 1048576
start RP /dev/null "$C/out" "$C/rerr" "$RDRECV" "$port" key
wait_listen "$port" || t_fail "rdrecv not listening"
sig_start S "$C/feed" /dev/null "$C/serr" "$RDSEND" 127.0.0.1 "$port" key
wait_size "$C/out" 1048576 || t_fail "the first 1 MiB did not arrive ($(stat -c %s "$C/out") bytes)"
kill -INT "$S_pid"
sig_end S "$(lim 5)" "signal 2" "rdsend after SIGINT"
expect_err "$C/serr" rdsend "^rdsend: interrupted by SIGINT$"
wait_pid "$RP" "$(lim 5)"; expect_rc $? 4 "rdrecv after the sender's SIGINT" "$(cat "$C/rerr")"
expect_err "$C/rerr" rdrecv "sender: interrupted by SIGINT$"
[ "$(stat -c %s "$C/out")" = 1048576 ] || t_fail "rdrecv wrote $(stat -c %s "$C/out") bytes, not the 1 MiB sent before the signal"
kill_reap "$feeder"
t_end

t_begin "--json of a tool ended by SIGINT gives the status it dies with (130), not the stream's 4"
port=$(free_port); stall_feed "$C/feed" 65536
start RP /dev/null "$C/out" "$C/rerr" "$RDRECV" --json "$port" key
wait_listen "$port" || t_fail "rdrecv not listening"
sig_start S "$C/feed" /dev/null "$C/serr" "$RDSEND" --json 127.0.0.1 "$port" key
wait_size "$C/out" 65536 || t_fail "the first 64 KiB did not arrive"
kill -INT "$S_pid"
sig_end S "$(lim 5)" "signal 2" "rdsend after SIGINT"
grep -q '"exit_code":130,"error":"interrupted by SIGINT"' "$C/serr" || t_fail "rdsend's JSON: $(grep '^{' "$C/serr")"
wait_pid "$RP" "$(lim 5)"; expect_rc $? 4 "rdrecv after the sender's SIGINT"
grep -q '"exit_code":4,' "$C/rerr" || t_fail "rdrecv's JSON: $(grep '^{' "$C/rerr")"
kill_reap "$feeder"
t_end

t_begin "SIGTERM to rdsend mid-stream (a file at full speed): it dies by SIGTERM, rdrecv exits 4 naming it"
port=$(free_port)
start RP /dev/null /dev/null "$C/rerr" "$RDRECV" -v "$port" key
wait_listen "$port" || t_fail "rdrecv not listening"
sig_start S /dev/null /dev/null "$C/serr" "$RDSEND" 127.0.0.1 "$port" key /dev/zero
wait_for_text "$C/rerr" 'receiving from' 10 || t_fail "transfer did not start: $(cat "$C/rerr" "$C/serr")"
sleep 0.3
kill -TERM "$S_pid"
sig_end S "$(lim 5)" "signal 15" "rdsend after SIGTERM"
expect_err "$C/serr" rdsend "^rdsend: interrupted by SIGTERM$"
wait_pid "$RP" "$(lim 5)"; expect_rc $? 4 "rdrecv after the sender's SIGTERM" "$(cat "$C/rerr")"
grep -v -e 'listening on port' -e 'receiving from' "$C/rerr" > "$C/rerr.e"
expect_err "$C/rerr.e" rdrecv "sender: interrupted by SIGTERM$"
t_end

t_begin "SIGINT to rdrecv mid-stream into FILE: it dies by SIGINT, rdsend exits 4 naming it"
port=$(free_port)
sig_start R /dev/null /dev/null "$C/rerr" "$RDRECV" -v "$port" key "$C/out"
wait_listen "$port" || t_fail "rdrecv not listening"
start SP /dev/null /dev/null "$C/serr" "$RDSEND" 127.0.0.1 "$port" key /dev/zero
wait_for_text "$C/rerr" 'receiving from' 10 || t_fail "transfer did not start: $(cat "$C/rerr" "$C/serr")"
sleep 0.3
kill -INT "$R_pid"
sig_end R "$(lim 5)" "signal 2" "rdrecv after SIGINT"
grep -v -e 'listening on port' -e 'receiving from' "$C/rerr" > "$C/rerr.e"
expect_err "$C/rerr.e" rdrecv "^rdrecv: interrupted by SIGINT$"
wait_pid "$SP" "$(lim 5)"; expect_rc $? 4 "rdsend after the receiver's SIGINT" "$(cat "$C/serr")"
expect_err "$C/serr" rdsend "receiver: interrupted by SIGINT$"
t_end

t_begin "SIGHUP to rdrecv whose stdout is never read: it stops at once, rdsend exits 4 naming it"
# the writer is blocked in write() on a full pipe: the signal must wake it (rd_wake)
port=$(free_port); mkfifo "$C/never"
( exec sleep "$(lim 60)" ) < "$C/never" & reader=$!; RD_PIDS+=("$reader")   # holds the pipe, reads nothing
sig_start R /dev/null "$C/never" "$C/rerr" "$RDRECV" -v "$port" key
wait_listen "$port" || t_fail "rdrecv not listening"
start SP /dev/null /dev/null "$C/serr" "$RDSEND" 127.0.0.1 "$port" key /dev/zero
wait_for_text "$C/rerr" 'receiving from' 10 || t_fail "transfer did not start: $(cat "$C/rerr" "$C/serr")"
wait_stuck "$SP" || t_fail "rdsend never blocked: rdrecv's consumer reads?"   # the pipe is full, the writer blocked
t0=$(now); kill -HUP "$R_pid"
sig_end R "$(lim 5)" "signal 1" "rdrecv after SIGHUP"
expect_within "$(elapsed "$t0")" "$(lim 2)" "rdrecv's exit after SIGHUP"
wait_pid "$SP" "$(lim 5)"; expect_rc $? 4 "rdsend after the receiver's SIGHUP" "$(cat "$C/serr")"
expect_err "$C/serr" rdsend "receiver: interrupted by SIGHUP$"
kill_reap "$reader"
t_end

t_begin "SIGINT to rdrecv waiting for its FIFO's reader, a sender in: it says so and dies by SIGINT, rdsend exits 4 naming it"
port=$(free_port); mkfifo "$C/fifo"; gen "$C/in" 3000000
sig_start R /dev/null /dev/null "$C/rerr" "$RDRECV" -v "$port" key "$C/fifo"
wait_listen "$port" || t_fail "rdrecv not listening"
start sp "$C/in" /dev/null "$C/serr" "$RDSEND" 127.0.0.1 "$port" key
# the sender is in (-v says so just before the FIFO is opened), and no reader ever comes
for _ in $(seq 200); do grep -q 'receiving from' "$C/rerr" && break; sleep 0.05; done
sleep 0.2
kill -INT "$R_pid"
sig_end R "$(lim 5)" "signal 2" "rdrecv after SIGINT"
grep -q '^rdrecv: interrupted by SIGINT$' "$C/rerr" || t_fail "rdrecv did not say it: $(tr '\n' '|' < "$C/rerr")"
wait_pid "$sp" "$(lim 5)"; expect_rc $? 4 "rdsend after the receiver's SIGINT" "$(cat "$C/serr")"
expect_err "$C/serr" rdsend "^rdsend: receiver: interrupted by SIGINT$"
t_end

t_begin "SIGINT to rdrecv waiting for a sender: the FILE it created is gone, an existing FILE is left as it was"
port=$(free_port)
sig_start R /dev/null /dev/null "$C/rerr" "$RDRECV" "$port" key "$C/new"
wait_listen "$port" || t_fail "rdrecv not listening"
[ -e "$C/new" ] || t_fail "rdrecv did not create FILE before listening"
kill -INT "$R_pid"
sig_end R "$(lim 5)" "signal 2" "rdrecv waiting, after SIGINT"
[ -e "$C/new" ] && t_fail "the empty FILE rdrecv created is still there"
echo keep > "$C/old"
port=$(free_port)
sig_start R /dev/null /dev/null "$C/rerr" "$RDRECV" "$port" key "$C/old"
wait_listen "$port" || t_fail "rdrecv not listening"
kill -TERM "$R_pid"
sig_end R "$(lim 5)" "signal 15" "rdrecv waiting, after SIGTERM"
[ "$(cat "$C/old" 2>/dev/null)" = keep ] || t_fail "the existing FILE was changed or removed"
t_end

t_begin "rdsend stuck sending (the receiver's consumer never reads): SIGINT ends it within the 3 s grace, a second at once"
port=$(free_port); never_reading_receiver "$port"
sig_start S /dev/null /dev/null "$C/serr" "$RDSEND" 127.0.0.1 "$port" key /dev/zero
wait_for_text "$C/rerr" 'receiving from' 10 || t_fail "transfer did not start: $(cat "$C/rerr" "$C/serr")"
wait_stuck "$S_pid" || t_fail "rdsend never blocked: its consumer reads?"   # every buffer on the way is full
t0=$(now); kill -INT "$S_pid"
sig_end S "$(lim 8)" "signal 2" "stuck rdsend after SIGINT"
dt=$(elapsed "$t0")
fle 2.5 "$dt" || t_fail "stuck rdsend ended ${dt}s after SIGINT: before its grace, so its ABORT got out?"
expect_within "$dt" "$(lim 5)" "stuck rdsend's exit after SIGINT"
expect_err "$C/serr" rdsend "^rdsend: interrupted by SIGINT before the peer could be told$"
t_note "one SIGINT: ${dt}s"
kill_reap "$RP"
port=$(free_port); never_reading_receiver "$port"
sig_start S /dev/null /dev/null "$C/serr" "$RDSEND" 127.0.0.1 "$port" key /dev/zero
wait_for_text "$C/rerr" 'receiving from' 10 || t_fail "transfer did not start: $(cat "$C/rerr" "$C/serr")"
wait_stuck "$S_pid" || t_fail "rdsend never blocked: its consumer reads?"
t0=$(now); kill -INT "$S_pid"; sleep 0.2; kill -INT "$S_pid"
sig_end S "$(lim 5)" "signal 2" "stuck rdsend after two SIGINTs"
dt=$(elapsed "$t0")
expect_within "$dt" "$(lim 1.5)" "stuck rdsend's exit after a second SIGINT"
t_note "two SIGINTs: ${dt}s"
kill_reap "$RP" "$reader"
t_end

t_begin "a SIGINT and SIGHUP the tools were started with ignored (nohup, a script's '&') stay ignored: the stream arrives whole"
port=$(free_port); mkfifo "$C/two"
gen "$C/in1" 1048576; gen "$C/in2" 1048576; cat "$C/in1" "$C/in2" > "$C/in"
( cat "$C/in1"; sleep 1; cat "$C/in2" ) > "$C/two" & feeder=$!; RD_PIDS+=("$feeder")
SIGWRAP_IGNORE="INT HUP" sig_start R /dev/null "$C/out" "$C/rerr" "$RDRECV" "$port" key
wait_listen "$port" || t_fail "rdrecv not listening"
SIGWRAP_IGNORE="INT HUP" sig_start S "$C/two" /dev/null "$C/serr" "$RDSEND" 127.0.0.1 "$port" key
wait_size "$C/out" 1048576 || t_fail "the first 1 MiB did not arrive ($(stat -c %s "$C/out") bytes)"
kill -INT "$S_pid" "$R_pid"; kill -HUP "$S_pid" "$R_pid"
sig_end S "$(lim 10)" "exit 0" "rdsend with SIGINT and SIGHUP ignored"
sig_end R "$(lim 10)" "exit 0" "rdrecv with SIGINT and SIGHUP ignored"
expect_same_file "$C/in" "$C/out" "the stream"
expect_empty "$C/serr" "rdsend's stderr"
expect_empty "$C/rerr" "rdrecv's stderr"
t_end

# ---------------------------------------------------------------- a relay (rdpipe's `cat` hop)
# relay_sig UP DOWN FEED [OUT]: rdsend (UP: its options) -> relay -> rdrecv (DOWN) into OUT
# (/dev/null), rdsend reading FEED; the ends hold rdpipe's stream key. Starts the sink (KP) and the sender
# (SP) as jobs and the relay under sigwrap (L_pid), and waits until the relay says it relays.
SK=$(printf '%064x' 7)
relay_sig() {
    local kport lport
    kport=$(free_port)
    RDPIPE_STREAM_KEY=$SK start KP /dev/null "${4:-/dev/null}" "$C/kerr" "$RDRECV" $2 "$kport" hop-key-1-0123456789
    wait_listen "$kport" || t_fail "sink not listening: $(cat "$C/kerr")"
    lport=$(free_port); echo "127.0.0.1 $kport hop-key-1-0123456789" > "$C/next"
    sig_start L "$C/next" /dev/null "$C/lerr" "$RDRECV" -v --relay-fd 0 "$lport" hop-key-0-0123456789
    wait_listen "$lport" || t_fail "relay not listening: $(cat "$C/lerr")"
    RDPIPE_STREAM_KEY=$SK start SP "$3" /dev/null "$C/serr" "$RDSEND" $1 127.0.0.1 "$lport" hop-key-0-0123456789
    wait_for_text "$C/lerr" 'relaying from' 10 || t_fail "the relay did not start: $(cat "$C/lerr" "$C/serr" "$C/kerr")"
}
# relay_told SIG: the relay died by SIG after saying so, and both ends exit 4 naming it
relay_told() {
    local num=$1 name=$2
    sig_end L "$(lim 5)" "signal $num" "the relay after $name"
    grep -v -e 'listening on port' -e 'relaying from' -e 'using TCP' "$C/lerr" > "$C/lerr.e"
    expect_err "$C/lerr.e" rdrecv "^rdrecv: interrupted by $name$"
    wait_pid "$SP" "$(lim 5)"; expect_rc $? 4 "rdsend after its relay's $name" "$(cat "$C/serr")"
    expect_err "$C/serr" rdsend "receiver: interrupted by $name$"
    wait_pid "$KP" "$(lim 5)"; expect_rc $? 4 "the sink after the relay's $name" "$(cat "$C/kerr")"
    expect_err "$C/kerr" rdrecv "^rdrecv: sender: interrupted by $name$"
}

for mode in "splices one connection to one:;" "passes 2 stripes pair by pair:--streams 2;--streams 2" \
            "takes 2 stripes into 1 connection:--streams 2;--streams 1"; do
    what=${mode%%:*}; opts=${mode#*:}
    t_begin "SIGTERM to a relay that $what, at full speed: it dies by SIGTERM, rdsend and the sink exit 4 naming it"
    relay_sig "${opts%;*}" "${opts#*;}" /dev/zero
    sleep 0.3
    kill -TERM "$L_pid"
    relay_told 15 SIGTERM
    t_end
done

# The relay has passed on part of a frame and waits in splice for the rest when the signal
# comes. It must not leave the sink a torn frame, where the ABORT after it would be read as
# payload ("closed by peer in the middle of a frame"). To stop the sender inside a frame: the
# sink stops, every queue fills, so rdsend waits inside a frame's write; rdsend stops; the
# sink drains what was sent
t_begin "SIGTERM to a relay waiting in the middle of a frame: the rest of the frame, then the ABORT; both ends exit 4 naming SIGTERM"
relay_sig "" "" /dev/zero
sleep 0.3
kill -STOP "$KP"; sleep 0.5
kill -STOP "$SP"; kill -CONT "$KP"; sleep 0.5
kill -TERM "$L_pid"; sleep 0.2
kill -CONT "$SP"
relay_told 15 SIGTERM
t_end

t_begin "SIGINT to a relay whose sender is quiet: it dies by SIGINT, both ends exit 4 naming it, the bytes before it arrived"
stall_feed "$C/feed" 1048576
relay_sig "" "" "$C/feed" "$C/out"
wait_size "$C/out" 1048576 || t_fail "the first 1 MiB did not arrive ($(stat -c %s "$C/out") bytes)"
kill -INT "$L_pid"
relay_told 2 SIGINT
[ "$(stat -c %s "$C/out")" = 1048576 ] || t_fail "the sink wrote $(stat -c %s "$C/out") bytes, not the 1 MiB sent before the signal"
kill_reap "$feeder"
t_end
