#!/usr/bin/env bash
# bench/bench.sh - rdsend->rdrecv throughput next to iperf3, nc, socat and mbuffer, measured in
# the same run over loopback (127.0.0.1) and over a veth pair between two network namespaces
# that this script creates (10.88.0.1/24 <-> 10.88.0.2/24) and always removes again.
#
#   bench/bench.sh                  everything; table on stdout + bench/results-YYYY-MM-DD.md
#   bench/bench.sh --stdout         the same, but write no results file
#   bench/bench.sh --nets loopback --tools rd_file,iperf3      a subset
#
# Method. Every transfer moves BENCH_BYTES bytes into /dev/null. Timing is wall-clock for every
# tool alike: the receiver is started and the script waits until its port is listening, then
# the clock runs from just before the sender starts until the receiver has exited (sender and
# receiver both done). rdsend's own --json figure and iperf3's own JSON figure are shown too.
# Each measurement is repeated BENCH_REPS times, tools interleaved round-robin so that noise
# from other work on the machine spreads over all of them; the median is reported, with the
# min-max spread beside it. Senders that read a file read the same page-cached file.
#
# Rows:
#   rdsend FILE            rdsend HOST PORT KEY FILE           page-cached file, read() by rdsend
#   rdsend <FILE           rdsend HOST PORT KEY < FILE         same file as stdin (still a regular file)
#   rdsend zeros FILE      rdsend HOST PORT KEY SPARSE         sparse file = size-limited /dev/zero, no pipe
#   rdsend, stdin piped    head -c N /dev/zero | rdsend ...    /dev/zero through a pipe (one extra copy)
#   rdsend --streams 2     rdsend --streams 2 HOST PORT KEY FILE   the file striped over 2 TCP connections
#   rdsend --lanes 1, 2    rdsend --lanes N ... FILE, rdrecv --lanes N: N threads per end for the
#                          per-chunk work (tags; with BENCH_RD_OUT the receiver's file writes)
#   iperf3                 iperf3 -c -n N -J                   single stream, sends from memory (reads no file)
#   iperf3 -P 2            iperf3 -c -n N -J -P 2              two streams (what --streams is to rdsend)
#   nc                     nc -l PORT >/dev/null ; nc -N HOST PORT < FILE      (netcat-openbsd)
#   socat                  socat -b1048576 -u TCP-LISTEN:.. OPEN:/dev/null ; socat -b1048576 -u FILE:.. TCP:..
#   mbuffer                mbuffer -q -I PORT -o /dev/null -m 64M ; mbuffer -q -i FILE -O HOST:PORT -m 64M
#   rd_base                rdsend FILE with the binaries in BENCH_BASE_BIN (e.g. the previous
#                          commit's build): a change's cost measured in the same run
#   rd_base_lanes2         rd_lanes2 with the binaries in BENCH_BASE_BIN
#
# Environment:
#   BENCH_BYTES=2147483648   bytes per transfer (the test file's size)
#   BENCH_REPS=3             repetitions of each measurement
#   BENCH_FILE=path          use this (existing) file instead of creating one; BENCH_BYTES = its size
#   BENCH_DIR=${TMPDIR:-/tmp} where the test files are created (removed at exit)
#   BENCH_PORT=N             first TCP port to use (default 40000 + pid % 10000; ports in use are skipped)
#   BENCH_TRANSPORT=tcp      rdpipe --transport
#   BENCH_RDPIPE_ARGS=""     extra options for rdsend and rdrecv, e.g. "--chunk-size 1M --depth 16"
#   BENCH_VETH_MTU=1500      MTU of the veth pair
#   BENCH_TIMEOUT=300        seconds before one transfer is given up
#   RDSEND, RDRECV           binaries (default: bin/rdsend, bin/rdrecv of this checkout)
#   BENCH_BASE_BIN=dir       rdsend and rdrecv to compare against (the rd_base rows; off if unset)
#   BENCH_RD_OUT=path        rdrecv (every rd_* row) writes this file instead of /dev/null
#                            (e.g. /dev/shm/out: a file in the page cache), removed after each
#                            transfer; the other tools still write /dev/null
#
# Also reported: CPU seconds (user+sys, sender+receiver) per GB, from /usr/bin/time (package
# time), which stays meaningful when the machine is shared and wall-clock figures are noisy.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

usage() { sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

write_file=1 out_file="" nets="loopback veth"
tools_all="rd_file rd_stdin rd_sparse rd_pipe rd_streams2 rd_lanes1 rd_lanes2 iperf3 iperf3_p2 nc socat mbuffer"
BASE_BIN=${BENCH_BASE_BIN:-}
[ -n "$BASE_BIN" ] && tools_all="rd_file rd_base ${tools_all#rd_file }" && tools_all=${tools_all/rd_lanes2 /rd_lanes2 rd_base_lanes2 }
tools="$tools_all"
while [ $# -gt 0 ]; do
    case "$1" in
        --stdout) write_file=0 ;;
        --out) out_file=$2; shift ;;
        --nets) nets=${2//,/ }; shift ;;
        --tools) tools=${2//,/ }; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
    esac
    shift
done

BYTES=${BENCH_BYTES:-2147483648}
REPS=${BENCH_REPS:-3}
TRANSPORT=${BENCH_TRANSPORT:-tcp}
RDARGS=${BENCH_RDPIPE_ARGS:-}
RDOUT=${BENCH_RD_OUT:-}
MTU=${BENCH_VETH_MTU:-1500}
TMO=${BENCH_TIMEOUT:-300}
RDSEND=${RDSEND:-$root/bin/rdsend}
RDRECV=${RDRECV:-$root/bin/rdrecv}
port=${BENCH_PORT:-$((40000 + $$ % 10000))}
KEY="bench-$$-$RANDOM"

label() {
    case "$1" in
        rd_file) echo "rdsend FILE" ;;  rd_stdin) echo "rdsend <FILE" ;;
        rd_sparse) echo "rdsend zeros FILE" ;;  rd_pipe) echo "rdsend, stdin piped from head" ;;
        rd_streams2) echo "rdsend --streams 2 FILE" ;;  iperf3_p2) echo "iperf3 -P 2" ;;
        rd_lanes1) echo "rdsend --lanes 1 FILE" ;;  rd_lanes2) echo "rdsend --lanes 2 FILE" ;;
        rd_base) echo "rdsend FILE, base build" ;;
        rd_base_lanes2) echo "rdsend --lanes 2 FILE, base build" ;;
        *) echo "$1" ;;
    esac
}
source_of() {
    case "$1" in
        rd_file|rd_base|rd_base_lanes2|rd_streams2|rd_lanes1|rd_lanes2|nc|socat|mbuffer) echo "page-cached file" ;;
        rd_stdin) echo "same file as stdin" ;;
        rd_sparse) echo "sparse file (zeros, no pipe)" ;;
        rd_pipe) echo "head -c N /dev/zero (pipe)" ;;
        iperf3|iperf3_p2) echo "memory (no file)" ;;
    esac
}

# ---- what is there --------------------------------------------------------------------------
missing_pkgs="" avail=""
need() {   # need CMD PACKAGE
    command -v "$1" >/dev/null 2>&1 && return 0
    case " $missing_pkgs " in *" $2 "*) ;; *) missing_pkgs="$missing_pkgs $2" ;; esac
    return 1
}
need ip iproute2; need ss iproute2; need timeout coreutils
have_ip=1; command -v ip >/dev/null && command -v ss >/dev/null || have_ip=0
for t in $tools; do
    case "$t" in
        rd_base|rd_base_lanes[0-9]*) if [ -x "$BASE_BIN/rdsend" ] && [ -x "$BASE_BIN/rdrecv" ]; then avail="$avail $t"
                 else echo "bench.sh: no rdsend/rdrecv in BENCH_BASE_BIN=$BASE_BIN; skipping rd_base" >&2; fi ;;
        rd_*) if [ -x "$RDSEND" ] && [ -x "$RDRECV" ]; then avail="$avail $t"
              else echo "bench.sh: $RDSEND or $RDRECV missing: run make first; skipping $t" >&2; fi ;;
        iperf3|iperf3_p2) need iperf3 iperf3 && avail="$avail $t" ;;
        nc) if need nc netcat-openbsd; then
                if nc -h 2>&1 | grep -q -- '-N[[:space:]]'; then avail="$avail $t"
                else echo "bench.sh: this nc has no -N (needs netcat-openbsd); skipping nc" >&2; fi
            fi ;;
        socat) need socat socat && avail="$avail $t" ;;
        mbuffer) need mbuffer mbuffer && avail="$avail $t" ;;
        *) echo "bench.sh: unknown tool '$t' (known: $tools_all)" >&2; exit 1 ;;
    esac
done
if [ -n "$missing_pkgs" ]; then
    echo "bench.sh: missing tools; install them with: apt-get install$missing_pkgs" >&2
    echo "bench.sh: (nothing is installed by this script; the rows that need them are skipped)" >&2
fi
[ "$have_ip" = 1 ] || { echo "bench.sh: cannot run without ip and ss (iproute2)" >&2; exit 1; }
tools=$avail
[ -n "$tools" ] || { echo "bench.sh: nothing to measure" >&2; exit 1; }
case " $nets " in *" veth "*)
    if [ "$(id -u)" != 0 ]; then
        echo "bench.sh: the veth measurements need root (network namespaces); skipping them" >&2
        nets=${nets//veth/}
    fi ;;
esac

# ---- set-up and clean-up --------------------------------------------------------------------
work="" ns_tx="" ns_rx="" pids=""
cleanup() {
    for p in $pids; do kill_tree "$p"; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    [ -n "$ns_tx" ] && ip netns del "$ns_tx" 2>/dev/null
    [ -n "$ns_rx" ] && ip netns del "$ns_rx" 2>/dev/null   # deleting a namespace deletes its veth end
    [ -n "$work" ] && rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

work=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/rdpipe-bench.XXXXXX") || exit 1
if [ -n "${BENCH_FILE:-}" ]; then
    file=$BENCH_FILE
    [ -f "$file" ] || { echo "bench.sh: BENCH_FILE '$file' is not a file" >&2; exit 1; }
    BYTES=$(stat -c %s "$file")
else
    file=$work/data.bin
    echo "bench.sh: creating a $BYTES-byte random test file in $work ..." >&2
    head -c "$BYTES" /dev/urandom > "$file" || exit 1
fi
sparse=$work/zeros.bin
truncate -s "$BYTES" "$sparse"
cat "$file" > /dev/null   # into the page cache

setup_veth() {
    ns_tx="rdbench-tx-$$" ns_rx="rdbench-rx-$$"
    local a="rdbt$$" b="rdbr$$"
    ip netns add "$ns_tx" && ip netns add "$ns_rx" &&
    ip link add "$a" netns "$ns_tx" mtu "$MTU" type veth peer name "$b" netns "$ns_rx" mtu "$MTU" &&
    ip -n "$ns_tx" addr add 10.88.0.1/24 dev "$a" &&
    ip -n "$ns_rx" addr add 10.88.0.2/24 dev "$b" &&
    ip -n "$ns_tx" link set lo up && ip -n "$ns_rx" link set lo up &&
    ip -n "$ns_tx" link set "$a" up && ip -n "$ns_rx" link set "$b" up || return 1
    local i   # wait for both ends to have carrier (no ping needed)
    for i in $(seq 100); do
        ip -n "$ns_tx" link show dev "$a" | grep -q LOWER_UP &&
            ip -n "$ns_rx" link show dev "$b" | grep -q LOWER_UP && return 0
        sleep 0.05
    done
    echo "bench.sh: the veth pair has no carrier" >&2
    return 1
}

# ---- one transfer ---------------------------------------------------------------------------
# per network: how to run the receiver / the sender, and the receiver's address
TXEXEC=() RXEXEC=() HOST=""
use_net() {
    case "$1" in
        loopback) TXEXEC=() RXEXEC=() HOST=127.0.0.1 ;;
        veth) TXEXEC=(ip netns exec "$ns_tx") RXEXEC=(ip netns exec "$ns_rx") HOST=10.88.0.2 ;;
    esac
}

next_port() {   # sets P to a port nobody uses in the receiver's namespace
    while :; do
        port=$((port + 1)); [ $port -gt 65000 ] && port=20001
        P=$port
        [ -z "$("${RXEXEC[@]}" ss -Htan "( sport = :$P or dport = :$P )" 2>/dev/null)" ] && return
    done
}

kill_tree() {   # kill_tree PID: the process and its descendants (time/timeout wrappers)
    local c
    for c in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$c"; done
    kill "$1" 2>/dev/null
}

wait_listen() {   # wait_listen PORT PID
    local i
    for i in $(seq 500); do
        [ -n "$("${RXEXEC[@]}" ss -Hltn "sport = :$1" 2>/dev/null)" ] && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.01
    done
    return 1
}

# run_one TOOL -> sets RES="WALL_GBPS OWN_GBPS" (OWN_GBPS "-" where the tool reports none), or fails
# (no subshell: the receiver's pid must reach the clean-up)
run_one() {
    local t=$1 p rx tx_rc rx_rc t0 t1 own=- log=$work/log
    RES=""
    next_port; p=$P
    TIMERX=() TIMETX=()
    if [ -n "$timebin" ]; then
        TIMERX=("$timebin" -f "%U %S" -o "$log.rxtime") TIMETX=("$timebin" -f "%U %S" -o "$log.txtime")
        : > "$log.rxtime"; : > "$log.txtime"
    fi
    : > "$log.rx"; : > "$log.tx"
    local rdopt=(--transport "$TRANSPORT" --no-progress --json)
    # shellcheck disable=SC2206
    local extra=($RDARGS)
    local rrecv=$RDRECV rxopt=() rxout=()
    case "$t" in rd_base*) rrecv=$BASE_BIN/rdrecv ;; esac
    case "$t" in rd_lanes[0-9]*|rd_base_lanes[0-9]*) rxopt=(--lanes "${t##*_lanes}") ;; esac
    [ -n "$RDOUT" ] && rxout=("$RDOUT")
    case "$t" in
        rd_*) "${RXEXEC[@]}" "${TIMERX[@]}" timeout "$TMO" "$rrecv" "${rdopt[@]}" "${extra[@]}" "${rxopt[@]}" "$p" "$KEY" "${rxout[@]}" > /dev/null 2> "$log.rx" & ;;
        iperf3|iperf3_p2) "${RXEXEC[@]}" "${TIMERX[@]}" timeout "$TMO" iperf3 -s -1 -p "$p" > /dev/null 2> "$log.rx" & ;;
        nc) "${RXEXEC[@]}" "${TIMERX[@]}" timeout "$TMO" nc -l "$p" > /dev/null 2> "$log.rx" & ;;
        socat) "${RXEXEC[@]}" "${TIMERX[@]}" timeout "$TMO" socat -b1048576 -u "TCP-LISTEN:$p,reuseaddr" OPEN:/dev/null 2> "$log.rx" & ;;
        mbuffer) "${RXEXEC[@]}" "${TIMERX[@]}" timeout "$TMO" mbuffer -q -I "$p" -o /dev/null -m 64M > /dev/null 2> "$log.rx" & ;;
    esac
    rx=$!; pids="$pids $rx"
    if ! wait_listen "$p" "$rx"; then
        kill_tree "$rx"; wait "$rx" 2>/dev/null
        echo "bench.sh: $t: receiver did not start listening on port $p: $(head -c 300 "$log.rx")" >&2
        return 1
    fi
    t0=$EPOCHREALTIME
    case "$t" in
        rd_file) "${TXEXEC[@]}" "${TIMETX[@]}" timeout "$TMO" "$RDSEND" "${rdopt[@]}" "${extra[@]}" "$HOST" "$p" "$KEY" "$file" 2> "$log.tx" ;;
        rd_base) "${TXEXEC[@]}" "${TIMETX[@]}" timeout "$TMO" "$BASE_BIN/rdsend" "${rdopt[@]}" "${extra[@]}" "$HOST" "$p" "$KEY" "$file" 2> "$log.tx" ;;
        rd_stdin) "${TXEXEC[@]}" "${TIMETX[@]}" timeout "$TMO" "$RDSEND" "${rdopt[@]}" "${extra[@]}" "$HOST" "$p" "$KEY" < "$file" 2> "$log.tx" ;;
        rd_sparse) "${TXEXEC[@]}" "${TIMETX[@]}" timeout "$TMO" "$RDSEND" "${rdopt[@]}" "${extra[@]}" "$HOST" "$p" "$KEY" "$sparse" 2> "$log.tx" ;;
        rd_pipe) head -c "$BYTES" /dev/zero | "${TXEXEC[@]}" "${TIMETX[@]}" timeout "$TMO" "$RDSEND" "${rdopt[@]}" "${extra[@]}" "$HOST" "$p" "$KEY" 2> "$log.tx" ;;
        rd_streams2) "${TXEXEC[@]}" "${TIMETX[@]}" timeout "$TMO" "$RDSEND" "${rdopt[@]}" "${extra[@]}" --streams 2 "$HOST" "$p" "$KEY" "$file" 2> "$log.tx" ;;
        rd_lanes[0-9]*) "${TXEXEC[@]}" "${TIMETX[@]}" timeout "$TMO" "$RDSEND" "${rdopt[@]}" "${extra[@]}" "${rxopt[@]}" "$HOST" "$p" "$KEY" "$file" 2> "$log.tx" ;;
        rd_base_lanes[0-9]*) "${TXEXEC[@]}" "${TIMETX[@]}" timeout "$TMO" "$BASE_BIN/rdsend" "${rdopt[@]}" "${extra[@]}" "${rxopt[@]}" "$HOST" "$p" "$KEY" "$file" 2> "$log.tx" ;;
        iperf3) "${TXEXEC[@]}" "${TIMETX[@]}" timeout "$TMO" iperf3 -c "$HOST" -p "$p" -n "$BYTES" -J > "$log.tx" 2>&1 ;;
        iperf3_p2) "${TXEXEC[@]}" "${TIMETX[@]}" timeout "$TMO" iperf3 -c "$HOST" -p "$p" -n "$BYTES" -J -P 2 > "$log.tx" 2>&1 ;;
        nc) "${TXEXEC[@]}" "${TIMETX[@]}" timeout "$TMO" nc -N "$HOST" "$p" < "$file" 2> "$log.tx" ;;
        socat) "${TXEXEC[@]}" "${TIMETX[@]}" timeout "$TMO" socat -b1048576 -u "FILE:$file" "TCP:$HOST:$p" 2> "$log.tx" ;;
        mbuffer) "${TXEXEC[@]}" "${TIMETX[@]}" timeout "$TMO" mbuffer -q -i "$file" -O "$HOST:$p" -m 64M 2> "$log.tx" ;;
    esac
    tx_rc=$?
    [ $tx_rc -ne 0 ] && kill_tree "$rx"
    wait "$rx"; rx_rc=$?
    t1=$EPOCHREALTIME
    pids=${pids/ $rx/}
    [ -n "$RDOUT" ] && rm -f "$RDOUT"
    if [ $tx_rc -ne 0 ] || [ $rx_rc -ne 0 ]; then
        echo "bench.sh: $t failed (sender exit $tx_rc, receiver exit $rx_rc): $(grep -v 'No controlling terminal' "$log.tx" "$log.rx" | head -c 400)" >&2
        return 1
    fi
    case "$t" in
        rd_*)
            local got
            got=$(sed -n 's/.*"bytes":\([0-9]*\).*/\1/p' "$log.rx")
            if [ "$got" != "$BYTES" ]; then
                echo "bench.sh: $t: rdrecv reports $got bytes, expected $BYTES" >&2; return 1
            fi
            own=$(sed -n 's/.*"gb_per_s":\([0-9.]*\).*/\1/p' "$log.tx") ;;
        iperf3|iperf3_p2)
            own=$(awk '/"sum_received"/ { f = 1 } f && /"bits_per_second"/ { gsub(/[^0-9.e+]/, "", $2); printf "%.4f", $2 / 8e9; exit }' FS=: "$log.tx") ;;
    esac
    local cpu=-
    [ -n "$timebin" ] && cpu=$(cat "$log.txtime" "$log.rxtime" | awk -v b="$BYTES" '$1 ~ /^[0-9.]+$/ { s += $1 + $2; n++ } END { if (n == 2) printf "%.3f", s / (b / 1e9); else print "-" }')
    RES=$(awk -v b="$BYTES" -v t0="$t0" -v t1="$t1" -v own="${own:--}" -v cpu="$cpu" 'BEGIN { printf "%.4f %s %s", b / (t1 - t0) / 1e9, own, cpu }')
}

# ---- the runs -------------------------------------------------------------------------------
declare -A WALL OWN CPU   # key "net tool" -> space-separated values
timebin=""
if [ -x /usr/bin/time ]; then timebin=/usr/bin/time
else echo "bench.sh: /usr/bin/time missing (apt package: time): no CPU-cost column" >&2; fi
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date '+%Y-%m-%d %H:%M:%S %Z')
for net in $nets; do
    if [ "$net" = veth ]; then
        setup_veth || { echo "bench.sh: cannot set up the veth pair; skipping veth" >&2; nets=${nets//veth/}; continue; }
    fi
    use_net "$net"
    for r in $(seq "$REPS"); do
        for t in $tools; do
            cat "$file" > /dev/null   # keep it cached whatever else ran meanwhile
            run_one "$t" || continue
            read -r w o u <<< "$RES"
            WALL[$net $t]="${WALL[$net $t]:-} $w"
            OWN[$net $t]="${OWN[$net $t]:-} $o"
            CPU[$net $t]="${CPU[$net $t]:-} $u"
            printf 'bench.sh: %-8s %-10s rep %d/%d: %s GB/s wall, %s GB/s self-reported, %s CPU s/GB\n' "$net" "$t" "$r" "$REPS" "$w" "$o" "$u" >&2
        done
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- report ---------------------------------------------------------------------------------
median() { tr ' ' '\n' | grep -v '^-\?$' | sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "-"; else if (NR % 2) printf "%.2f", v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
spread() { tr ' ' '\n' | grep -v '^-\?$' | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR > 1) printf "%.2f-%.2f", lo, hi }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }

ref=rd_file
md=$work/table.md
{
    echo "| tool | source | loopback GB/s | veth GB/s | self-reported GB/s (lo / veth) | rdsend FILE ÷ tool (lo / veth) | CPU s per GB, tx+rx (lo / veth) |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    for t in $tools; do
        cells="" ; ratios="" ; owns="" ; cpus=""
        for net in loopback veth; do
            case " $nets " in *" $net "*) ;; *) cells="$cells| n/a "; owns="$owns n/a"; ratios="$ratios n/a"; cpus="$cpus n/a"; continue ;; esac
            m=$(median <<< "${WALL[$net $t]:-}")
            s=$(spread <<< "${WALL[$net $t]:-}")
            cells="$cells| $m${s:+ ($s)} "
            owns="$owns $(median <<< "${OWN[$net $t]:-}")"
            cpus="$cpus $(median <<< "${CPU[$net $t]:-}")"
            ratios="$ratios $(ratio "$(median <<< "${WALL[$net $ref]:-}")" "$m")"
        done
        owns=$(echo $owns | sed 's# # / #'); ratios=$(echo $ratios | sed 's# # / #'); cpus=$(echo $cpus | sed 's# # / #')
        [ "$owns" = "- / -" ] && owns="-"
        [ "$t" = "$ref" ] && ratios="1.00 / 1.00"
        echo "| $(label "$t") | $(source_of "$t") $cells| $owns | $ratios | $cpus |"
    done
} > "$md"

rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo "?")
[ -n "$(git -C "$root" status --porcelain -- lib tools Makefile 2>/dev/null)" ] && rev="$rev + uncommitted changes in lib/tools"
[ "$RDSEND" = "$root/bin/rdsend" ] || rev="$rev; binaries $RDSEND, $RDRECV"
notes="$BYTES bytes per transfer, median of $REPS (min-max in brackets), GB/s = 1e9 bytes/s, wall clock from sender start to receiver exit.
rdpipe $rev, --transport $TRANSPORT${RDARGS:+ $RDARGS}${RDOUT:+; rdrecv writes the file $RDOUT (the other tools /dev/null)}; veth MTU $MTU; $(nproc) CPUs; kernel $(uname -r); load average $load_before at start, $load_after at end.
'self-reported' is rdsend's --json gb_per_s and iperf3's JSON sum_received; iperf3 sends from memory and reads no file.
CPU s per GB = user+sys seconds of sender and receiver together (from /usr/bin/time) per 1e9 bytes: robust to a busy machine where wall clock is not (not counted: head in the pipe row, softirq work the kernel charges to no task)."

echo
echo "rdpipe benchmark, $started"
echo "$notes"
echo
# a plain-text rendering of the same table
sed '2d' "$md" | awk -F'|' '
    { n = 0; for (i = 2; i < NF; i++) { c = $i; gsub(/^ +| +$/, "", c); cell[NR, ++n] = c; if (length(c) > w[n]) w[n] = length(c) } cols = n; rows = NR }
    END { for (r = 1; r <= rows; r++) { line = ""; for (i = 1; i <= cols; i++) line = line sprintf("%-*s  ", w[i], cell[r, i]); print line } }'

if [ "$write_file" = 1 ]; then
    out=${out_file:-$here/results-$(date +%Y-%m-%d).md}
    {
        [ -s "$out" ] && echo
        echo "### rdpipe benchmark, $started"
        echo
        echo "$notes" | sed 's/$/  /'
        echo
        cat "$md"
    } >> "$out"
    echo
    echo "markdown table appended to $out"
fi
