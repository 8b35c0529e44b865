#!/bin/bash
# rxe-bench.sh - rdsend -> rdrecv over Soft-RoCE against perftest (ib_send_bw, ib_write_bw) with
# the same message size, rxe_b -> rxe_a over the veth, measured in the same VM boot.
# On the host it boots the VM (tests/rxe/run-in-vm.sh) and runs itself inside. Not a test: it
# prints a table (GB/s = 1e9 bytes/s) and ratios ours/perftest; the target ratio is >= 0.95.
#   bench/rxe-bench.sh [CHUNK ...]      default: 1M 4M (4M is rdsend's default chunk)
# env: BENCH_MB (256, file size), BENCH_DEPTH (8), BENCH_REPEAT (3: median of), BENCH_BUSY ("0":
#      RDPIPE_BUSY_POLL_US values to compare for the first chunk size), RXE_* as in run-in-vm.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd); TOP=$(cd "$HERE/.." && pwd)
if [ -z "${RXE_SERVER_IP:-}" ]; then      # host: build, boot, run inside
    make -C "$TOP" -s > /dev/null || [ -x "$TOP/bin/rdsend" ] || exit 1   # a broken tree: use the last build
    # the checkout is the share: visible in the guest at the same path wherever it lives
    RXE_MEM=${RXE_MEM:-3072} "$TOP/tests/rxe/run-in-vm.sh" "$TOP" \
        "BENCH_MB=${BENCH_MB:-256} BENCH_DEPTH=${BENCH_DEPTH:-8} BENCH_BUSY='${BENCH_BUSY:-0}' BENCH_REPEAT=${BENCH_REPEAT:-3} bash $HERE/rxe-bench.sh $*"
    exit $?
fi

S=$RXE_SERVER_IP; C=$RXE_CLIENT_IP; G=${RXE_GID_INDEX:-1}; BIN=$TOP/bin
MB=${BENCH_MB:-256}; DEPTH=${BENCH_DEPTH:-8}; BUSY=${BENCH_BUSY:-0}; REPEAT=${BENCH_REPEAT:-3}
CHUNKS=("$@"); [ ${#CHUNKS[@]} = 0 ] && CHUNKS=(1M 4M)
F=/tmp/bench.in; head -c $((MB << 20)) /dev/urandom > "$F"; cat "$F" > /dev/null   # tmpfs: page cache
PORT=7800
bytes() { numfmt --from=iec "$1"; }

# perftest TOOL SIZE -> GB/s (perftest prints MiB/s in the "BW average" column)
perftest1() {
    local n=$(( (MB << 20) / $2 )); [ $n -lt 8 ] && n=8
    PORT=$((PORT + 1))
    $1 -d rxe_a -x $G -F -p $PORT -s $2 -n $n > /tmp/pt-s.log 2>&1 & local sp=$!
    sleep 2
    $1 -d rxe_b -x $G -F -p $PORT -s $2 -n $n $S > /tmp/pt-c.log 2>&1; wait $sp
    local r; r=$(grep -A1 '#bytes' /tmp/pt-c.log | tail -1 | awk '{printf "%.4f", $4 * 1048576 / 1e9}')
    [ -n "$r" ] || { echo "$1 -s $2 failed: $(tail -3 /tmp/pt-c.log /tmp/pt-s.log | tr '\n' ' ')" >&2; r=0; }
    echo "$r"
}
# ours CHUNK [BUSY_US] -> GB/s (no BUSY_US: the transport's default) as rdsend --json reports
# it (transfer phase)
ours() { median ours1 "$@"; }
ours1() {
    PORT=$((PORT + 1))
    if [ -n "$2" ]; then export RDPIPE_BUSY_POLL_US=$2; else unset RDPIPE_BUSY_POLL_US; fi
    "$BIN/rdrecv" --transport rdma --bind $S --chunk-size $1 --depth $DEPTH $PORT k > /dev/null 2> /tmp/r.err &
    local rp=$!
    "$BIN/rdsend" --transport rdma --bind $C --timeout 20 --json --chunk-size $1 --depth $DEPTH \
        $S $PORT k "$F" 2> /tmp/s.json; local rc=$?; wait $rp
    [ $rc = 0 ] || { echo "rdsend failed: $(cat /tmp/s.json /tmp/r.err)" >&2; echo 0; return; }
    sed -n 's/.*"gb_per_s":\([0-9.]*\).*/\1/p' /tmp/s.json
}
# median of REPEAT runs of a measuring command: TCG timing is noisy
median() { local i v=(); for ((i = 0; i < REPEAT; i++)); do v+=("$("$@")"); done
    printf '%s\n' "${v[@]}" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
perftest() { median perftest1 "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a / b; else print "-" }'; }

echo "rxe bench (median of $REPEAT): $MB MiB page-cached file -> /dev/null, rxe_b -> rxe_a over veth, depth $DEPTH, $(nproc) vCPUs (TCG)"
if [ "$BUSY" != 0 ]; then
    for b in $BUSY; do printf "  busy-poll %5s us, chunk %s: %s GB/s\n" "$b" "${CHUNKS[0]}" "$(ours "${CHUNKS[0]}" "$b")"; done
fi
printf "%-8s %12s %12s %12s %10s %10s\n" chunk "rdpipe GB/s" "send_bw" "write_bw" "/send_bw" "/write_bw"
for ch in "${CHUNKS[@]}"; do
    sz=$(bytes "$ch")
    o=$(ours "$ch" ""); s=$(perftest ib_send_bw "$sz"); w=$(perftest ib_write_bw "$sz")
    printf "%-8s %12s %12s %12s %10s %10s\n" "$ch" "$o" "$s" "$w" "$(ratio "$o" "$s")" "$(ratio "$o" "$w")"
done
