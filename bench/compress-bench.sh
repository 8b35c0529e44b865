#!/usr/bin/env bash
# bench/compress-bench.sh - what --compress buys, against plain rdsend/rdrecv and against
# compressing outside the tool (zstd -T0 -1 | rdsend -> rdrecv | zstd -d), in one run, rounds
# interleaved. Needs root (network namespaces). Not a test: nothing asserts.
#
#   bench/compress-bench.sh [MIB] [RUNS]    (default 256 MiB of each corpus, median of 3)
#   RDPIPE_BIN=dir (default bin/)   RATE=1gbit (the veth's tc tbf rate)
#
# Corpora (page-cached files in /dev/shm):
#   text    /usr/include's headers, repeated to MIB (compressible: zstd -1 ~4-5x)
#   mixed   /usr/bin's binaries and /usr/include's headers interleaved (zstd -1 ~2x)
#   random  /dev/urandom (incompressible)
# Links: a veth pair between two namespaces limited by tc tbf to RATE on the sender's side,
# and loopback. Prints GB/s (wall clock, sender start to receiver exit), the ratio to plain on
# the same link and corpus, and CPU seconds per GB of each end.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${RDPIPE_BIN:-$ROOT/bin}
case $BIN in /*) ;; *) BIN=$ROOT/$BIN ;; esac
MIB=${1:-256}
RUNS=${2:-3}
RATE=${RATE:-1gbit}
export RDPIPE_WEAK_KEY_OK=1
[ "$(id -u)" = 0 ] || { echo "compress-bench.sh: needs root (network namespaces)" >&2; exit 77; }
command -v zstd >/dev/null || { echo "compress-bench.sh: needs zstd (apt-get install zstd)" >&2; exit 77; }
DIR=$(mktemp -d /dev/shm/rdpipe-zb.XXXXXX)
NS_TX=rdzb-tx-$$ NS_RX=rdzb-rx-$$
cleanup() { ip netns del "$NS_TX" 2>/dev/null; ip netns del "$NS_RX" 2>/dev/null; rm -rf "$DIR"; }
trap cleanup EXIT
ip netns add "$NS_TX" && ip netns add "$NS_RX" &&
ip link add zbtx netns "$NS_TX" type veth peer name zbrx netns "$NS_RX" &&
ip -n "$NS_TX" addr add 10.87.0.1/24 dev zbtx && ip -n "$NS_RX" addr add 10.87.0.2/24 dev zbrx &&
ip -n "$NS_TX" link set zbtx up && ip -n "$NS_RX" link set zbrx up &&
ip -n "$NS_TX" link set lo up && ip -n "$NS_RX" link set lo up &&
ip netns exec "$NS_TX" tc qdisc add dev zbtx root tbf rate "$RATE" burst 1mb latency 100ms ||
    { echo "compress-bench.sh: cannot set up the namespaces" >&2; exit 1; }
sleep 1

bytes=$((MIB << 20))
find /usr/include -type f -name '*.h' -print0 | xargs -0 cat > "$DIR/headers"
while [ "$(stat -c %s "$DIR/text" 2>/dev/null || echo 0)" -lt $bytes ]; do cat "$DIR/headers" >> "$DIR/text"; done
truncate -s $bytes "$DIR/text"
find /usr/bin -type f -size +100k -print0 | head -z -n 200 | xargs -0 cat > "$DIR/bins" 2>/dev/null
: > "$DIR/mixed"
while [ "$(stat -c %s "$DIR/mixed")" -lt $bytes ]; do
    head -c $((4 << 20)) "$DIR/bins" >> "$DIR/mixed"; head -c $((4 << 20)) "$DIR/headers" >> "$DIR/mixed"
done
truncate -s $bytes "$DIR/mixed"
head -c $bytes /dev/urandom > "$DIR/random"
rm -f "$DIR/headers" "$DIR/bins"
KEY=bench-key-0123456789abcdef
PORT=18556

# run_row LINK ROW CORPUS: "seconds sender_cpu receiver_cpu"
run_row() {
    local link=$1 row=$2 corpus=$3 tx=() rx=() host=127.0.0.1 t0 t1 rp
    if [ "$link" = veth ]; then tx=(ip netns exec "$NS_TX"); rx=(ip netns exec "$NS_RX"); host=10.87.0.2; fi
    local in=$DIR/$corpus
    case $row in
        plain|auto|level1)
            local opt=()
            [ "$row" = auto ] && opt=(--compress=auto)
            [ "$row" = level1 ] && opt=(--compress=1)
            "${rx[@]}" /usr/bin/time -f "%U %S" -o "$DIR/rt" "$BIN/rdrecv" --transport tcp "$PORT" "$KEY" /dev/null &
            rp=$!; sleep 0.3; t0=$EPOCHREALTIME
            "${tx[@]}" /usr/bin/time -f "%U %S" -o "$DIR/st" "$BIN/rdsend" --transport tcp "${opt[@]}" "$host" "$PORT" "$KEY" "$in"
            wait $rp; t1=$EPOCHREALTIME ;;
        zstd)
            "${rx[@]}" /usr/bin/time -f "%U %S" -o "$DIR/rt" sh -c "'$BIN/rdrecv' --transport tcp $PORT $KEY | zstd -q -d > /dev/null" &
            rp=$!; sleep 0.3; t0=$EPOCHREALTIME
            "${tx[@]}" /usr/bin/time -f "%U %S" -o "$DIR/st" sh -c "zstd -q -T0 -1 -c < '$in' | '$BIN/rdsend' --transport tcp $host $PORT $KEY"
            wait $rp; t1=$EPOCHREALTIME ;;
    esac
    awk -v a="$t0" -v b="$t1" -v s="$(cat "$DIR/st")" -v r="$(cat "$DIR/rt")" \
        'BEGIN{split(s,x," "); split(r,y," "); printf "%.4f %.3f %.3f\n", b-a, x[1]+x[2], y[1]+y[2]}'
}

cases="veth:text veth:mixed veth:random loopback:text loopback:random"
rows="plain auto level1 zstd"
for ((i = 0; i < RUNS; i++)); do
    for c in $cases; do
        for r in $rows; do
            run_row "${c%%:*}" "$r" "${c#*:}" >> "$DIR/res.${c/:/_}.$r" 2>> "$DIR/err" || tail -3 "$DIR/err" >&2
        done
    done
done
gb=$(awk -v b=$bytes 'BEGIN{printf "%.6f", b/1e9}')
median() { sort -n | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }
echo "$MIB MiB per corpus, page-cached in /dev/shm -> /dev/null, median of $RUNS, $(date -u +%F), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg); veth limited to $RATE (tc tbf)"
echo
echo "| link | corpus | pipeline | GB/s | ÷ plain | sender CPU s/GB | receiver CPU s/GB |"
echo "|---|---|---|---:|---:|---:|---:|"
for c in $cases; do
    plain=$(cut -d' ' -f1 "$DIR/res.${c/:/_}.plain" | median)
    for r in $rows; do
        f=$DIR/res.${c/:/_}.$r
        s=$(cut -d' ' -f1 "$f" | median); sc=$(cut -d' ' -f2 "$f" | median); rc=$(cut -d' ' -f3 "$f" | median)
        case $r in
            plain) name="rdsend -> rdrecv" ;;
            auto) name="rdsend --compress=auto" ;;
            level1) name="rdsend --compress=1" ;;
            zstd) name="zstd -T0 -1 \\| rdsend -> rdrecv \\| zstd -d" ;;
        esac
        awk -v l="${c%%:*}" -v k="${c#*:}" -v n="$name" -v s="$s" -v p="$plain" -v g="$gb" -v sc="$sc" -v rc="$rc" \
            'BEGIN{printf "| %s | %s | %s | %.3f | %.2f | %.3f | %.3f |\n", l, k, n, g/s, p/s, sc/g, rc/g}'
    done
done
