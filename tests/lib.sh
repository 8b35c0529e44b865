# tests/lib.sh - shared helpers for the integration tests (sourced, not run).
#
# Every test script in tests/integration/ sources this file, then calls
#   t_begin "name"; ...checks (t_fail / expect_* helpers)...; t_end
# once per case. t_end prints one line per case ("ok", "FAIL" or "skip") and appends the
# verdict to $RD_RESULTS (set by tests/run) so the runner can count.
#
# Environment:
#   RDPIPE_BUILD  build dir (default: build)       RDPIPE_BIN  dir with rdsend/rdrecv
#                 (default: bin, or $RDPIPE_BUILD/bin when RDPIPE_BUILD is not "build")
#   RDPIPE_QUICK=1  skip slow cases (3 GiB, netns)   RDPIPE_BIG=0  skip only the 3 GiB case
#   RDPIPE_TMP    where scratch dirs go (/tmp)
#   RDPIPE_SLOW   multiply every time limit by this (default 1; tests/run sets 3 for sanitizers)
#
# Isolation: as root, each script re-executes itself in a private network namespace
# (unshare -n) with only "lo" up, so fixed test ports never collide with anything else on the
# machine and no test traffic can leave it. Without root the host loopback is used with
# random free ports and the netns cases are skipped.

RD_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# the tests' short keys are on purpose: keep rdsend/rdrecv's weak-key warning out of the
# stderr they compare line by line (tests/integration/keys.sh checks the warning itself)
export RDPIPE_WEAK_KEY_OK=1
RD_BUILD=${RDPIPE_BUILD:-build}
if [ -n "${RDPIPE_BIN:-}" ]; then RD_BIN=$RDPIPE_BIN
elif [ "$RD_BUILD" = build ]; then RD_BIN=$RD_ROOT/bin
else RD_BIN=$RD_BUILD/bin; fi
case $RD_BIN in /*) ;; *) RD_BIN=$RD_ROOT/$RD_BIN ;; esac
RDSEND=$RD_BIN/rdsend
RDRECV=$RD_BIN/rdrecv
RD_QUICK=${RDPIPE_QUICK:-0}
RD_BIG=${RDPIPE_BIG:-1}; [ "$RD_QUICK" = 1 ] && RD_BIG=0
RD_SLOW=${RDPIPE_SLOW:-1}
RD_GROUP=${RD_GROUP:-$(basename "${0%.sh}")}

# ---- isolation: private network namespace ----
if [ "$(id -u)" = 0 ] && [ -z "${RD_ISOLATED:-}" ] && command -v unshare >/dev/null; then
    export RD_ISOLATED=1
    exec unshare -n -- bash -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
fi
RD_IS_ROOT=0; [ "$(id -u)" = 0 ] && RD_IS_ROOT=1

for _b in "$RDSEND" "$RDRECV"; do
    if [ ! -x "$_b" ]; then echo "FAIL $RD_GROUP: $_b not built (run make)" >&2; exit 2; fi
done

RD_T=$(mktemp -d "${RDPIPE_TMP:-/tmp}/rdpipe-test.XXXXXX")
RD_CLEANUP=()          # commands run at exit, last first
RD_PIDS=()             # background processes we started (killed at exit if still alive)
rd_at_exit() { RD_CLEANUP+=("$1"); }
# A background subshell that is signalled before it has set its own traps (the watchdog of
# timeout() below, killed the moment a quick command returns) runs this shell's INT/TERM and
# EXIT traps as its own (bash): without this check it removed the test directory and killed
# the processes of the case still running in the main shell.
RD_MAIN_PID=$BASHPID
_rd_exit() {
    local i p
    [ "$BASHPID" = "$RD_MAIN_PID" ] || return 0
    for p in "${RD_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    for p in "${RD_PIDS[@]}"; do wait "$p" 2>/dev/null; done
    for ((i = ${#RD_CLEANUP[@]} - 1; i >= 0; i--)); do eval "${RD_CLEANUP[i]}" >/dev/null 2>&1; done
    rm -rf "$RD_T"
}
trap _rd_exit EXIT
trap 'exit 130' INT TERM

# ---- time ----
now() { echo "$EPOCHREALTIME"; }
# elapsed T0 -> seconds since T0 with 2 decimals
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.2f", b-a}'; }
# lim S -> S scaled by RDPIPE_SLOW (integer seconds)
lim() { awk -v s="$1" -v f="$RD_SLOW" 'BEGIN{printf "%d", s*f+0.999}'; }
# fle A B -> true iff A <= B (floats)
fle() { awk -v a="$1" -v b="$2" 'BEGIN{exit !(a<=b)}'; }

# ---- hangs ----
# A command that reaches its time limit first has every thread's stack written to $C/stacks,
# with those of the test's other processes (RD_PIDS) and their children; t_end prints them
# under the failing case. So a hang seen once (in CI, say) says where each thread waited.
# rd_tree PID... -> these live processes and all their descendants
rd_tree() {
    local p c
    for p in "$@"; do
        [ -d "/proc/$p" ] || continue
        echo "$p"
        for c in $(pgrep -P "$p"); do rd_tree "$c"; done
    done
}
# rd_stacks PID...: append the stacks of these processes and their descendants to $C/stacks.
# One gdb each, all at once: gdb stops its process when it attaches, before the slow part
# (reading symbols). One after another, the processes taken last were taken late: under load
# in CI, gdb on rdsend took over 1.5 s, its time limit ended it meanwhile, and its peer rdrecv,
# taken after it, had already shut the threads the stacks were to show (2026-12-07).
rd_stacks() {
    local p out=${C:-$RD_T}/stacks dir n=0 jobs=()
    command -v gdb > /dev/null || { echo "(no gdb: no stacks)" >> "$out"; return 0; }
    dir=$(mktemp -d "${RD_T:-/tmp}/stacks.XXXXXX") || return 0
    for p in $(rd_tree "$@" | awk '!seen[$0]++'); do
        case $(cat "/proc/$p/comm" 2>/dev/null) in sleep|timeout|bash|'') continue ;; esac
        n=$((n + 1))
        {
            echo "--- pid $p: $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-160)"
            command timeout 20 gdb -q -n -batch -p "$p" -ex 'thread apply all bt' 2>&1 | grep -E '^(Thread |#[0-9])' |
                sed -E 's/^Thread [0-9]+ \(Thread 0x[0-9a-f]+ \(LWP ([0-9]+)\) "?([^"]*)"?\):$/thread \2 (\1)/;
                        s/^(#[0-9]+) +(0x[0-9a-f]+ in )?([^ ]+) .* at ([^ ]+)$/  \1 \3 \4/;
                        s/^(#[0-9]+) +0x[0-9a-f]+ in ([^ ]+) .*$/  \1 \2/' | cut -c1-160
        } > "$dir/$n" &
        jobs+=($!)
    done
    [ ${#jobs[@]} = 0 ] || wait "${jobs[@]}"
    for p in $(seq "$n"); do cat "$dir/$p"; done >> "$out"
    rm -rf "$dir"
}
# timeout [OPTION]... LIMIT CMD...: coreutils' timeout, with the stacks taken a moment before
# LIMIT (3/4 of it, or 2 s before it: gdb needs the process still there; under RDPIPE_SLOW
# half of it, or 2 s times RDPIPE_SLOW before it: gdb attaching to a sanitizer build on a
# loaded machine took more than 1.5 s, the signal came first, and the stacks lacked the
# threads that had already ended). Once the stacks are being taken they are finished, though
# the command ends meanwhile: gdb on a sanitizer build with a dozen threads can take longer
# than those 2 s, and the stacks would lack its last process.
timeout() {
    local i=1 limit me=$BASHPID wd rc taking err
    while [[ ${!i} == -* ]]; do case ${!i} in -k|-s|--kill-after|--signal) i=$((i + 2)) ;; *) i=$((i + 1)) ;; esac; done
    limit=${!i%s}
    # Only the command writes to the caller's stderr: bash 5.2, forking and reaping around the
    # watchdog, now and then printed "wait_for: No record of process N" (N an earlier command
    # of this shell) there, and a case that expects one line of error read two (CI: 2 cases of
    # 556; here 27 of 3000 quick commands). The watchdog is stopped with SIGUSR1, which this
    # shell does not trap: with TERM, in the moment after fork before bash reset the traps, it
    # ran this shell's TERM and EXIT traps.
    exec {err}>&2 2> /dev/null
    (
        trap 'kill $s 2>/dev/null; exit 0' USR1
        sleep "$(awk -v l="$limit" -v f="$RD_SLOW" 'BEGIN{d=l-2*f; m=f>1?0.5:0.75; if (d<l*m) d=l*m; printf "%.2f", d}')" & s=$!
        wait $s
        trap - USR1
        : > "$RD_T/.taking-stacks.$BASHPID"
        rd_stacks $(pgrep -P "$me" -x timeout) "${RD_PIDS[@]}"
    ) {err}>&- &
    wd=$!; taking=$RD_T/.taking-stacks.$wd
    command timeout "$@" 2>&$err {err}>&-; rc=$?
    [ -e "$taking" ] || kill -USR1 "$wd"
    wait "$wd"
    rm -f "$taking"
    exec 2>&$err {err}>&-
    return $rc
}

# ---- cases ----
_rd_case=""; _rd_errs=(); _rd_t0=0; _rd_bug=""; _rd_note=""; _rd_open=0
t_begin() { _rd_case=$1; _rd_errs=(); _rd_bug=""; _rd_note=""; _rd_t0=$EPOCHREALTIME; _rd_open=1
            rm -rf "$RD_T/c"; mkdir -p "$RD_T/c"; C=$RD_T/c; }
t_fail() { _rd_errs+=("$*"); }
t_note() { _rd_note="${_rd_note:+$_rd_note; }$*"; }
# t_known_bug "text": this case exercises a bug in lib/ that is reported but not fixed yet.
# The case still FAILS if its assertions fail (it is never weakened); the text is appended.
t_known_bug() { _rd_bug=$*; }
t_end() {
    local verdict=ok dt line e
    # the case was closed by t_skip: nothing more to say, unless something failed after it
    [ "$_rd_open" = 0 ] && [ ${#_rd_errs[@]} = 0 ] && return 0
    _rd_open=0
    dt=$(elapsed "$_rd_t0")
    [ ${#_rd_errs[@]} -gt 0 ] && verdict=FAIL
    line=$(printf '%-4s %s/%s (%ss)' "$verdict" "$RD_GROUP" "$_rd_case" "$dt")
    [ -n "$_rd_note" ] && line="$line [$_rd_note]"
    [ "$verdict" = FAIL ] && [ -n "$_rd_bug" ] && line="$line [LIB BUG: $_rd_bug]"
    echo "$line"
    if [ "$verdict" = FAIL ]; then
        for e in "${_rd_errs[@]}"; do echo "       - $e"; done
        [ -s "$C/stacks" ] && { echo "       stacks at the time limit:"; head -300 "$C/stacks" | sed 's/^/         /'; }
    fi
    [ -n "${RD_RESULTS:-}" ] && echo "$verdict $RD_GROUP/$_rd_case" >> "$RD_RESULTS"
    _rd_errs=()
    return 0
}
# t_skip NAME REASON outside a case; inside one (after t_begin) t_skip [NAME] REASON skips that
# case: it is reported and counted as a skip only (never also as ok), under t_begin's name, and
# closes it (a t_end after it does nothing). A case that already failed is reported FAIL.
t_skip() {
    local name=$1 why=${2:-$1}
    if [ "$_rd_open" = 1 ]; then
        if [ ${#_rd_errs[@]} -gt 0 ]; then t_note "skipped: $why"; t_end; return 0; fi
        name=$_rd_case; _rd_open=0; _rd_errs=()
    fi
    echo "skip $RD_GROUP/$name ($why)"
    [ -n "${RD_RESULTS:-}" ] && echo "skip $RD_GROUP/$name" >> "$RD_RESULTS"
    return 0
}

# ---- assertions ----
# expect_rc GOT WANT WHAT
expect_rc() {
    if [ "$1" = 124 ] || [ "$1" = 137 -a "$2" != 137 ]; then
        t_fail "$3: hung (killed by the test's time limit) instead of exiting $2"
    elif [ "$1" != "$2" ]; then
        t_fail "$3: exit $1, expected $2${4:+ ($4)}"
    fi
}
# expect_nonzero GOT WHAT
expect_nonzero() {
    if [ "$1" = 124 ]; then t_fail "$2: hung (killed by the test's time limit)"
    elif [ "$1" = 0 ]; then t_fail "$2: exit 0, expected failure"; fi
}
# expect_err FILE PROG PATTERN: FILE (a stderr capture) is exactly one line, "PROG: ...",
# matching the extended regex PATTERN (case-insensitive)
expect_err() {
    local f=$1 prog=$2 pat=$3 n
    n=$(wc -l < "$f")
    if [ "$n" != 1 ]; then
        t_fail "$prog stderr: expected exactly 1 line, got $n: $(head -c 600 "$f" | tr '\n' '|')"
        return
    fi
    grep -q "^$prog: " "$f" || t_fail "$prog stderr lacks the '$prog: ' prefix: $(cat "$f")"
    grep -Eqi -- "$pat" "$f" || t_fail "$prog stderr does not match /$pat/: $(cat "$f")"
}
# expect_lines_prefixed FILE PROG: every line starts with "PROG: " (and there is at least one)
expect_lines_prefixed() {
    [ -s "$1" ] || { t_fail "$2 printed nothing on stderr"; return; }
    if grep -vq "^$2: " "$1"; then t_fail "$2 stderr has lines without the '$2: ' prefix: $(head -c 600 "$1" | tr '\n' '|')"; fi
}
expect_empty() { [ -s "$1" ] && t_fail "$2: expected empty, got: $(head -c 300 "$1" | tr '\n' '|')"; return 0; }
# expect_same_hash EXPECTED_HASH FILE WHAT
expect_same_file() {
    if ! cmp -s "$1" "$2"; then
        t_fail "$3: output differs from input ($(stat -c %s "$1" 2>/dev/null) vs $(stat -c %s "$2" 2>/dev/null) bytes; $(cmp "$1" "$2" 2>&1 | head -1))"
    fi
}
expect_within() {   # expect_within SECONDS_TAKEN LIMIT WHAT
    fle "$1" "$2" || t_fail "$3 took ${1}s, limit ${2}s"
}

# ---- processes ----
# start VAR IN OUT ERR CMD [ARGS...]: run CMD in the background with stdin from IN, stdout to
# OUT, stderr to ERR (paths; fifos work). VAR gets the command's own PID (exec'ed in the
# subshell), so it can be SIGKILLed precisely. It is killed at exit if still alive.
start() {
    local __v=$1 __in=$2 __out=$3 __err=$4; shift 4
    ( exec "$@" < "$__in" > "$__out" 2> "$__err" ) &
    local p=$!
    RD_PIDS+=("$p")
    printf -v "$__v" '%s' "$p"
}
# never_reading_receiver PORT [OPTION...]: rdrecv -v OPTION... PORT key ($RP, stderr $C/rerr)
# whose stdout is a FIFO ($C/never_read) that a process ($reader) holds open and never reads:
# a consumer that has stopped. A second call in the same case reuses the FIFO and its reader.
never_reading_receiver() {
    local port=$1; shift
    if ! [ -p "$C/never_read" ]; then
        mkfifo "$C/never_read"
        ( exec sleep "$(lim 60)" ) < "$C/never_read" & reader=$!; RD_PIDS+=("$reader")
    fi
    start RP /dev/null "$C/never_read" "$C/rerr" "$RDRECV" -v "$@" "$port" key
    wait_listen "$port" || t_fail "rdrecv not listening"
}
# wait_stuck PID: wait (up to 20 s x RD_SLOW) until PID has read and written nothing for 1 s, so
# every buffer between it and a stopped consumer is full; a fixed sleep is too short under TSan.
wait_stuck() {
    local pid=$1 last="" now_io i still=0
    for ((i = 0; i < $(lim 20) * 10; i++)); do
        now_io=$(awk '/^[rw]char:/{printf "%s ", $2}' "/proc/$pid/io" 2>/dev/null) || return 1
        if [ "$now_io" = "$last" ]; then ((++still >= 10)) && return 0; else still=0; last=$now_io; fi
        sleep 0.1
    done
    return 1
}
# kill_reap PID...: SIGKILL and reap quietly (no "Killed" job message)
kill_reap() {
    local p
    for p in "$@"; do kill -9 "$p" 2>/dev/null; done
    for p in "$@"; do wait "$p" 2>/dev/null; done
    return 0
}
# wait_pid PID SECONDS -> exit status of PID; 124 after SIGKILLing it when it overran
wait_pid() {
    local pid=$1 deadline rc
    deadline=$(awk -v a="$EPOCHREALTIME" -v s="$2" 'BEGIN{printf "%.3f", a+s}')
    while kill -0 "$pid" 2>/dev/null; do
        if ! fle "$EPOCHREALTIME" "$deadline"; then
            rd_stacks "$pid" "${RD_PIDS[@]}"
            kill -9 "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            return 124
        fi
        # finished children linger as zombies until waited for; kill -0 sees them, so peek
        [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" = Z ] && break
        sleep 0.05
    done
    wait "$pid" 2>/dev/null; rc=$?
    return $rc
}
# wait_for_text FILE REGEX SECONDS: true once FILE contains REGEX
wait_for_text() {
    local i n
    n=$(awk -v s="$3" 'BEGIN{printf "%d", s*20}')
    for ((i = 0; i < n; i++)); do
        grep -Eq -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}
# wait_listen PORT [NETNS] [SECONDS]: true once something listens on TCP PORT
wait_listen() {
    local i n pre=()
    [ -n "${2:-}" ] && pre=(ip netns exec "$2")
    n=$(awk -v s="${3:-10}" 'BEGIN{printf "%d", s*20}')
    for ((i = 0; i < n; i++)); do
        [ -n "$("${pre[@]}" ss -Hltn "sport = :$1" 2>/dev/null)" ] && return 0
        sleep 0.05
    done
    return 1
}
# free_port -> a TCP port nothing listens on (fixed sequence when isolated, random otherwise)
_rd_port=$((20000 + RANDOM % 20000))
free_port() {
    local p
    while :; do
        _rd_port=$((_rd_port + 1)); [ $_rd_port -gt 60000 ] && _rd_port=20001
        p=$_rd_port
        [ -z "$(ss -Hltn "sport = :$p" 2>/dev/null)" ] && break
    done
    echo "$p"
}

# ---- data ----
# gen FILE SIZE: random bytes (urandom for small sizes, AES-CTR keystream for big ones); says
# so on stderr and returns 1 when FILE did not get SIZE bytes
gen() {
    if [ "$2" -le $((64 << 20)) ]; then head -c "$2" /dev/urandom > "$1"
    else gen_stream "$2" > "$1"; fi
    local n; n=$(stat -c %s "$1" 2>/dev/null || echo none)
    [ "$n" = "$2" ] || { echo "gen: $1 has $n bytes, not $2" >&2; return 1; }
}
# gen_stream SIZE [SEED_HEX32]: SIZE pseudo-random bytes on stdout, fast (~1 GB/s per core).
# When openssl is missing or cannot run the keystream, it says why on stderr, writes nothing
# and returns 1 (callers that need the bytes still count them: a short stream is no stream).
gen_stream() {
    local seed=${2:-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')} probe rc
    if ! command -v openssl > /dev/null; then
        echo "gen_stream: no openssl (apt-get install openssl): no data generated" >&2; return 1
    fi
    probe=$(openssl enc -aes-128-ctr -K "$seed" -iv 00000000000000000000000000000000 < /dev/null 2>&1 > /dev/null); rc=$?
    if [ $rc != 0 ]; then
        echo "gen_stream: openssl enc -aes-128-ctr fails (exit $rc): $(echo "$probe" | head -c 300 | tr '\n' ' ')" >&2
        return 1
    fi
    openssl enc -aes-128-ctr -K "$seed" -iv 00000000000000000000000000000000 < /dev/zero 2>/dev/null |
        head -c "$1"
    rc=${PIPESTATUS[1]}
    [ "$rc" = 0 ] || { echo "gen_stream: head -c $1 failed (exit $rc)" >&2; return 1; }
}
sha() { sha256sum "$@" | cut -d' ' -f1; }

# ---- network namespaces (two namespaces joined by a veth pair) ----
# ns_setup: creates $NS_A (10.77.0.1/24, fd77::1/64) and $NS_B (10.77.0.2/24, fd77::2/64),
# joined by veth $VETH_A <-> $VETH_B; removed at exit (also on failure).
ns_setup() {
    NS_A=rdpt-$$-a; NS_B=rdpt-$$-b; VETH_A=rdpa$$; VETH_B=rdpb$$
    VETH_A=${VETH_A:0:15}; VETH_B=${VETH_B:0:15}
    rd_at_exit "ns_teardown"
    ip netns add "$NS_A" && ip netns add "$NS_B" &&
    ip link add "$VETH_A" netns "$NS_A" type veth peer name "$VETH_B" netns "$NS_B" &&
    ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up &&
    ip -n "$NS_A" addr add 10.77.0.1/24 dev "$VETH_A" &&
    ip -n "$NS_B" addr add 10.77.0.2/24 dev "$VETH_B" &&
    ip -n "$NS_A" -6 addr add fd77::1/64 dev "$VETH_A" nodad &&
    ip -n "$NS_B" -6 addr add fd77::2/64 dev "$VETH_B" nodad &&
    ip -n "$NS_A" link set "$VETH_A" up && ip -n "$NS_B" link set "$VETH_B" up || return 1
    # wait for both ends to be up (carrier) before the first connect
    local i
    for ((i = 0; i < 100; i++)); do
        ip -n "$NS_A" -o link show "$VETH_A" | grep -q 'LOWER_UP' &&
            ip -n "$NS_B" -o link show "$VETH_B" | grep -q 'LOWER_UP' &&
            ! ip -n "$NS_A" -6 addr show tentative | grep -q fd77 &&
            ! ip -n "$NS_B" -6 addr show tentative | grep -q fd77 && return 0
        sleep 0.1
    done
    return 1
}
ns_teardown() {
    local ns p
    for ns in "$NS_A" "$NS_B"; do
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
        ip netns del "$ns" 2>/dev/null
    done
}

# ---- one transfer ----
# xfer INPUT_FILE: rdrecv then rdsend, compare. Knobs (reset by xfer_reset):
#   X_IN=stdin|file  X_OUT=stdout|file   stdin/stdout are real pipes (fifos + cat)
#   X_HOST (127.0.0.1)  X_RNS / X_SNS: netns of receiver / sender ("" = current)
#   X_ROPTS / X_SOPTS: extra option arrays   X_KEYMODE=arg|file|env   X_LIMIT seconds
# Asserts: both exit 0, stderr empty on both sides, output identical to INPUT_FILE.
xfer_reset() {
    X_IN=stdin; X_OUT=stdout; X_HOST=127.0.0.1; X_RNS=""; X_SNS=""; X_ROPTS=(); X_SOPTS=()
    X_KEYMODE=arg; X_KEY="k-$RANDOM$RANDOM"; X_LIMIT=$(lim 60)
}
xfer_reset
xfer() {
    local input=$1 port rpre=() spre=() rkey=() skey=() rfile=() sfile=() renv=() senv=()
    local rin=/dev/null rout sin rp sp catp="" feedp="" rrc src
    local ropts=("${X_ROPTS[@]}") sopts=("${X_SOPTS[@]}")
    port=$(free_port)
    [ -n "$X_RNS" ] && rpre=(ip netns exec "$X_RNS")
    [ -n "$X_SNS" ] && spre=(ip netns exec "$X_SNS")
    case $X_KEYMODE in
        arg) rkey=("$X_KEY"); skey=("$X_KEY") ;;
        file) printf '%s\n' "$X_KEY" > "$C/key"; rkey=(); skey=()
              ropts+=(--key-file "$C/key"); sopts+=(--key-file "$C/key") ;;
        env) renv=(env RDPIPE_KEY="$X_KEY"); senv=(env RDPIPE_KEY="$X_KEY") ;;
    esac
    rm -f "$C/out" "$C/rpipe" "$C/spipe"
    if [ "$X_OUT" = file ]; then rfile=("$C/out"); rout=$C/rstdout
    else mkfifo "$C/rpipe"; rout=$C/rpipe; cat "$C/rpipe" > "$C/out" & catp=$!; fi
    if [ "$X_IN" = file ]; then sfile=("$input"); sin=/dev/null
    else mkfifo "$C/spipe"; sin=$C/spipe; cat "$input" > "$C/spipe" & feedp=$!; fi
    start rp "$rin" "$rout" "$C/rerr" "${rpre[@]}" "${renv[@]}" "$RDRECV" "${ropts[@]}" "$port" "${rkey[@]}" "${rfile[@]}"
    wait_listen "$port" "$X_RNS" 10 || t_fail "rdrecv did not listen on port $port: $(cat "$C/rerr")"
    start sp "$sin" "$C/sstdout" "$C/serr" "${spre[@]}" "${senv[@]}" "$RDSEND" "${sopts[@]}" "$X_HOST" "$port" "${skey[@]}" "${sfile[@]}"
    wait_pid "$sp" "$X_LIMIT"; src=$?
    wait_pid "$rp" 10; rrc=$?
    [ -n "$feedp" ] && { wait_pid "$feedp" 5 || kill -9 "$feedp" 2>/dev/null; }
    [ -n "$catp" ] && wait_pid "$catp" 5
    expect_rc "$src" 0 rdsend "$(head -c 300 "$C/serr")"
    expect_rc "$rrc" 0 rdrecv "$(head -c 300 "$C/rerr")"
    expect_empty "$C/serr" "rdsend stderr"
    expect_empty "$C/rerr" "rdrecv stderr"
    expect_empty "$C/sstdout" "rdsend stdout"
    [ "$X_OUT" = file ] && expect_empty "$C/rstdout" "rdrecv stdout (output went to FILE)"
    expect_same_file "$input" "$C/out" "data ($X_IN -> $X_OUT, $(stat -c %s "$input") bytes)"
}
