#!/bin/bash
# demo.sh - the README quick start: build, send DEMO_BYTES (default 1 GiB) of random data from
# rdsend to rdrecv over loopback, check it arrived byte for byte, and put the speed next to the
# same bytes going through a local pipe (cat | cat) on this machine, measured in the same run.
#
# Both files live in tmpfs (/dev/shm), so the figure is rdpipe's and not the disk's. As root,
# what building needs is installed first (scripts/install-deps.sh --build).
# Exit 0 when the data arrived intact; 1 on a mismatch or a failed transfer; 130 on Ctrl-C.
# Everything it starts or writes is removed on every exit, Ctrl-C included.
#   env: DEMO_BYTES (K/M/G suffixes, default 1G), DEMO_DIR (tmpfs dir, default /dev/shm),
#        DEMO_BUILD (build dir, default build with the tools in bin/), DEMO_BIN (use the
#        rdsend/rdrecv in this dir as they are: no install, no build)
set -uo pipefail
cd "$(dirname "$0")/.."
say() { echo "demo: $*"; }

dir="" rpid="" spid="" cpid=""
cleanup() {
    local p
    for p in $spid $rpid $cpid; do kill "$p" 2>/dev/null; done
    for p in $spid $rpid $cpid; do wait "$p" 2>/dev/null; done
    [ -n "$dir" ] && rm -rf "$dir"
}
trap cleanup EXIT
trap 'echo; say "interrupted"; exit 130' INT
trap 'exit 143' TERM

# ---- build (installing what is missing when we can), unless DEMO_BIN names the tools ----
if [ -n "${DEMO_BIN:-}" ]; then bin=$DEMO_BIN
else
    if [ "$(id -u)" = 0 ]; then
        scripts/install-deps.sh --build || { say "installing the build dependencies failed"; exit 1; }
    fi
    build=${DEMO_BUILD:-build}
    if [ "$build" = build ]; then bin=bin; mk=(make); else bin=$build/bin; mk=(make OUT="$build" BINDIR="$bin"); fi
    say "building (${mk[*]})"
    log=${TMPDIR:-/tmp}/rdpipe-demo-build.$$.log
    if ! "${mk[@]}" -s -j"$(nproc)" > "$log" 2>&1; then
        tail -20 "$log"; rm -f "$log"
        say "the build failed (as root, scripts/install-deps.sh --build installs what it needs)"
        exit 1
    fi
    rm -f "$log"
fi

# ---- size and scratch space: both copies must fit in tmpfs and in memory ----
size=${DEMO_BYTES:-1G}
case $size in
    *[kK]) size=$(( ${size%?} << 10 )) ;; *[mM]) size=$(( ${size%?} << 20 )) ;;
    *[gG]) size=$(( ${size%?} << 30 )) ;; *[!0-9]*|'') say "DEMO_BYTES must be a number with K/M/G, not '$size'"; exit 1 ;;
esac
base=${DEMO_DIR:-/dev/shm}
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
dir=$(mktemp -d "$base/rdpipe-demo.XXXXXX") || { say "cannot create a scratch dir in $base"; exit 1; }
room=$(df -P -B1 "$dir" | awk 'NR == 2 {print $4}')
avail=$(awk '/^MemAvailable:/ {printf "%.0f", $2 * 1024}' /proc/meminfo)
fit=$(( (room < avail ? room : avail) / 3 ))   # input + output + headroom
if [ "$size" -gt "$fit" ]; then
    size=$(( fit >> 20 << 20 )); say "only room for $((size >> 20)) MiB in $base; sending that"
fi
mib=$((size >> 20))

# ---- data: random bytes, fast (AES-CTR keystream; urandom when openssl is missing) ----
say "writing $mib MiB of random data to $dir (tmpfs)"
seed=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
if command -v openssl > /dev/null; then
    openssl enc -aes-128-ctr -K "$seed" -iv 00000000000000000000000000000000 < /dev/zero 2>/dev/null |
        head -c "$size" > "$dir/in"
else head -c "$size" /dev/urandom > "$dir/in"; fi
[ "$(stat -c %s "$dir/in")" = "$size" ] || { say "could not write $size bytes to $dir"; exit 1; }

# ---- rdsend -> rdrecv over loopback ----
# The key goes through the environment (never in ps); rdrecv picks a free port (0) and tells it
# on --ready-fd. Both run in the background so Ctrl-C reaches the trap at once.
export RDPIPE_KEY
RDPIPE_KEY=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
"$bin/rdrecv" --timeout 30 --ready-fd 3 0 "$dir/out" 3> "$dir/port" 2> "$dir/recv.err" & rpid=$!
for _ in $(seq 100); do [ -s "$dir/port" ] && break; kill -0 "$rpid" 2>/dev/null || break; sleep 0.05; done
port=$(cat "$dir/port")
[ -n "$port" ] || { say "rdrecv did not start: $(cat "$dir/recv.err")"; exit 1; }
t0=$EPOCHREALTIME
"$bin/rdsend" -v 127.0.0.1 "$port" "$dir/in" 2> "$dir/send.err" & spid=$!
wait "$spid"; src=$?; spid=""
wait "$rpid"; rrc=$?; rpid=""
t1=$EPOCHREALTIME
if [ "$src" != 0 ] || [ "$rrc" != 0 ]; then
    say "FAILED: rdsend exit $src, rdrecv exit $rrc"
    cat "$dir/send.err" "$dir/recv.err" >&2
    exit 1
fi
transport=$(sed -n 's/.* over \([a-z]*\) (chunk.*/\1/p' "$dir/send.err" | head -1)

# ---- did it arrive whole? ----
if ! cmp -s "$dir/in" "$dir/out"; then
    say "MISMATCH: the received file differs from the sent one ($(cmp "$dir/in" "$dir/out" 2>&1 | head -1))"
    exit 1
fi
rm -f "$dir/out"

# ---- reference: the same bytes through a local pipe, tmpfs to tmpfs ----
t2=$EPOCHREALTIME
cat "$dir/in" | cat > "$dir/ref" & cpid=$!   # $!: the last cat; the first dies of SIGPIPE with it
wait "$cpid"; cpid=""
t3=$EPOCHREALTIME

awk -v n="$size" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v tr="${transport:-?}" 'BEGIN {
    r = n / (b - a) / 1e9; p = n / (d - c) / 1e9
    printf "demo: rdsend -> rdrecv over %s (loopback): %.3f GB/s (%.2f s, both ends checksumming)\n", tr, r, b - a
    printf "demo: cat | cat on this machine:          %.3f GB/s (%.2f s, same bytes, same tmpfs)\n", p, d - c
    printf "demo: rdpipe / local pipe = %.2f\n", r / p }'
say "OK, $size bytes arrived intact (cmp: byte-identical)"
exit 0
