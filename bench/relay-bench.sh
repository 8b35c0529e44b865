#!/usr/bin/env bash
# bench/relay-bench.sh - what a relay (rdrecv --relay-fd, rdpipe's `cat` segment) costs, next to
# socat relaying the same stream, over loopback: rdsend FILE -> RELAY -> rdrecv > /dev/null.
#
#   bench/relay-bench.sh [SIZE_MIB] [ROUNDS]        (default 2048 MiB, 3 rounds)
#   RDPIPE_BIN=dir   BASE_BIN=dir (also the relay rows of the build in dir, e.g. the build before a
#   change, interleaved in the same rounds)   STREAMS="1 2 3" (the --streams of the relay rows)
#   RELAY_NET=rdma: over RDMA inside the Soft-RoCE VM instead (tests/rxe/run-in-vm.sh DIR
#   bench/relay-bench.sh 128 3; the sink and the relay on rxe_a, the sender from rxe_b; no
#   socat row)
#
# Rows, each run once per round, in turn:
#   relay, --streams N   rdsend --streams N -> rdrecv --relay-fd -> rdrecv --streams N (the sink
#                        grants N: a relay between N and N connections passes each to its pair)
#   socat                rdsend -> socat TCP-LISTEN -> rdrecv: a byte relay of one connection
#                        (read + write through user space), the ends' handshake passing through
# Prints, per row, the median over the rounds of the wall time (GB/s over the whole command) and
# of the relay process's CPU (user + sys seconds per GB, /usr/bin/time, and the user part alone:
# the relay's own work, where sys is the kernel's network stack), with the range. All
# three processes share this machine's cores, so the GB/s column is bounded by the ends; the CPU
# column is what a relay host would spend. Not a test: nothing asserts.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${RDPIPE_BIN:-$ROOT/bin}
BASE=${BASE_BIN:-}
MIB=${1:-2048}
ROUNDS=${2:-3}
STREAMS=${STREAMS:-1 2 3}
NET=${RELAY_NET:-loopback}
SRV=127.0.0.1 CLI=127.0.0.1 TR=()
if [ "$NET" = rdma ]; then
    SRV=${RXE_SERVER_IP:-10.0.0.1} CLI=${RXE_CLIENT_IP:-10.0.0.2}
    TR=(--transport rdma)
fi
for t in /usr/bin/time socat ss; do
    command -v "$t" > /dev/null || { echo "relay-bench: missing $t (apt-get install time socat iproute2)" >&2; exit 2; }
done
[ -x "$BIN/rdsend" ] || { echo "relay-bench: no $BIN/rdsend (make)" >&2; exit 2; }

W=$(mktemp -d /tmp/relay-bench.XXXXXX)
trap 'kill $(jobs -p) 2> /dev/null; rm -rf "$W"' EXIT
head -c $((MIB << 20)) /dev/urandom > "$W/in"
GB=$(awk -v m="$MIB" 'BEGIN{print m * 1048576 / 1e9}')
SK=$(printf '%064x' 11)
PORT=$((30000 + RANDOM % 20000))

listening() { ss -Hltn "sport = :$1" | grep -q .; }
# an RDMA listener is not a socket ss sees: give it time (outside the timed span)
wait_listen() { [ "$NET" = rdma ] && { sleep 1; return 0; }
    for _ in $(seq 100); do listening "$1" && return 0; sleep 0.02; done; return 1; }

# one BIN MODE N PORT -> "wall_s relay_cpu_s relay_user_s" (MODE relay or socat; the sink on PORT,
# the relay on PORT + 1); "fail" when an exit was not 0
one() {
    local bin=$1 mode=$2 n=$3 kp=$4 rp=$(($4 + 1)) kpid rpid src rrc krc t0 t1
    cat "$W/in" > /dev/null
    if [ "$mode" = relay ]; then
        RDPIPE_STREAM_KEY=$SK "$bin/rdrecv" "${TR[@]}" --bind "$SRV" --streams "$n" "$kp" hop-key-1-0123456789 > /dev/null 2> "$W/kerr" & kpid=$!
        wait_listen "$kp" || { echo fail; return; }
        echo "$SRV $kp hop-key-1-0123456789" > "$W/next"
        /usr/bin/time -f "%U %S" -o "$W/time" "$bin/rdrecv" "${TR[@]}" --bind "$SRV" --relay-fd 0 "$rp" hop-key-0-0123456789 < "$W/next" 2> "$W/rerr" & rpid=$!
        wait_listen "$rp" || { echo fail; return; }
        t0=$(date +%s.%N)
        RDPIPE_STREAM_KEY=$SK "$bin/rdsend" "${TR[@]}" --bind "$CLI" --streams "$n" "$SRV" "$rp" hop-key-0-0123456789 "$W/in" 2> "$W/serr"; src=$?
    else
        "$bin/rdrecv" "$kp" hop-key-1-0123456789 > /dev/null 2> "$W/kerr" & kpid=$!
        wait_listen "$kp" || { echo fail; return; }
        /usr/bin/time -f "%U %S" -o "$W/time" socat TCP-LISTEN:"$rp",bind=127.0.0.1,reuseaddr TCP:127.0.0.1:"$kp" 2> "$W/rerr" & rpid=$!
        wait_listen "$rp" || { echo fail; return; }
        t0=$(date +%s.%N)
        "$bin/rdsend" --streams 1 127.0.0.1 "$rp" hop-key-1-0123456789 "$W/in" 2> "$W/serr"; src=$?
    fi
    wait "$rpid"; rrc=$?
    wait "$kpid"; krc=$?
    t1=$(date +%s.%N)
    if [ "$src$rrc$krc" != 000 ]; then echo fail; return; fi
    awk -v a="$t0" -v b="$t1" -v u="$(cut -d' ' -f1 "$W/time")" -v s="$(cut -d' ' -f2 "$W/time")" \
        'BEGIN{printf "%.3f %.2f %.2f\n", b - a, u + s, u}'
}

declare -A WALL CPU USR
ROWS=()
for n in $STREAMS; do
    ROWS+=("relay $n $BIN")
    [ -n "$BASE" ] && ROWS+=("relay $n $BASE")
done
[ "$NET" = rdma ] || ROWS+=("socat 1 $BIN")
for r in $(seq "$ROUNDS"); do
    for row in "${ROWS[@]}"; do
        set -- $row
        PORT=$((PORT + 2))   # here, not in one(): it runs in a subshell
        out=$(one "$3" "$1" "$2" "$PORT")
        [ "$out" = fail ] && { echo "relay-bench: $row failed: $(cat "$W/serr" "$W/rerr" "$W/kerr" | tr '\n' '|')" >&2; continue; }
        set -- $out
        WALL[$row]+="$1 "
        CPU[$row]+="$2 "
        USR[$row]+="$3 "
    done
done

# med LIST -> "median (min-max)"
med() { tr ' ' '\n' <<< "$1" | grep . | sort -g | awk '{v[NR]=$1} END{if (!NR) {print "-"; exit}
    printf "%s (%s-%s)", v[int((NR+1)/2)], v[1], v[NR]}'; }
echo "relay bench: $MIB MiB over $NET, $ROUNDS rounds, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-52s %-24s %-26s %s\n' "relay" "GB/s (whole command)" "relay CPU s/GB" "of which user s/GB"
for row in "${ROWS[@]}"; do
    set -- $row
    name="rdrecv --relay-fd, --streams $2"
    [ "$1" = socat ] && name="socat TCP-LISTEN TCP (rdsend -> rdrecv, 1 stream)"
    [ "$3" != "$BIN" ] && name="$name [$3]"
    gbs=$(tr ' ' '\n' <<< "${WALL[$row]:-}" | grep . | awk -v g="$GB" '{printf "%.3f ", g / $1}')
    cpu=$(tr ' ' '\n' <<< "${CPU[$row]:-}" | grep . | awk -v g="$GB" '{printf "%.3f ", $1 / g}')
    usr=$(tr ' ' '\n' <<< "${USR[$row]:-}" | grep . | awk -v g="$GB" '{printf "%.3f ", $1 / g}')
    printf '%-52s %-24s %-26s %s\n' "$name" "$(med "$gbs")" "$(med "$cpu")" "$(med "$usr")"
done
