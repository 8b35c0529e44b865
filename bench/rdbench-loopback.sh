#!/bin/bash
# rdbench-loopback.sh - rdbench over loopback, N runs, and the spread of what the model says:
# the figures the README quotes. Client and server share this machine's cores, so read them as
# what loopback does here, not as a link.
#
# usage: bench/rdbench-loopback.sh [RUNS] [rdbench options...]    (default: 5 runs of --quick)
#   RDPIPE_BIN   dir with rdbench (default: bin)       OUT   where JSON/SVG go (default: a temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${RDPIPE_BIN:-bin}
RUNS=${1:-5}; shift || true
[ $# -gt 0 ] || set -- --quick
OUT=${OUT:-$(mktemp -d /tmp/rdbench-loopback.XXXXXX)}
mkdir -p "$OUT"
KEY=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
PORT=$((20000 + RANDOM % 20000))
"$BIN/rdbench" --server "$PORT" "$KEY" 2> "$OUT/server.err" & sp=$!
trap 'kill $sp 2> /dev/null; wait $sp 2> /dev/null' EXIT
for _ in $(seq 50); do ss -Hltn "sport = :$PORT" | grep -q . && break; sleep 0.1; done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$RUNS"); do
    t0=$EPOCHREALTIME
    "$BIN/rdbench" --no-progress "$@" --json "$OUT/run$i.json" --svg "$OUT/run$i.svg" 127.0.0.1 "$PORT" "$KEY" > "$OUT/run$i.txt"
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.2f\n", b - a}' > "$OUT/run$i.wall"
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT" "$RUNS" <<'EOF'
import json, sys
out, runs = sys.argv[1], int(sys.argv[2])
rows = []
for i in range(1, runs + 1):
    m = json.load(open("%s/run%d.json" % (out, i)))["runs"][0]["model"]
    wall = float(open("%s/run%d.wall" % (out, i)).read())
    ops = m["op_rate_per_s"] or 0   # null: no limit on messages/s seen
    rows.append((m["latency_us"], m["bandwidth_gb_per_s"], ops, m["n_half_bytes"] / 1024,
                 100 * m["median_error"], 100 * m["max_error"], wall))
print("%-6s %12s %12s %14s %10s %10s %9s %8s" % ("run", "latency us", "GB/s", "messages/s", "n_half KiB",
                                                 "median err", "max err", "wall s"))
for i, r in enumerate(rows, 1):
    print("%-6d %12.1f %12.3f %14.0f %10.1f %9.0f%% %8.0f%% %8.2f" % ((i,) + r))
for name, k in (("latency us", 0), ("GB/s", 1), ("messages/s", 2), ("n_half KiB", 3), ("median err %", 4), ("wall s", 6)):
    v = sorted(r[k] for r in rows)
    print("%-13s min %.3g  median %.3g  max %.3g" % (name, v[0], v[len(v) // 2], v[-1]))
EOF
echo "files: $OUT"
