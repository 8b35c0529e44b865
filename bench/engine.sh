#!/usr/bin/env bash
# bench/engine.sh - the engines' ceiling: the real send and receive engines in one process over
# a transport that hands frames over by pointer (transport/rd_loop), so the machine's memory is
# the only wire: what rdsend/rdrecv could reach on an infinitely fast NIC. No network, no root.
#
#   make bench OUT=build && bench/engine.sh          table on stdout, progress on stderr
#
# Runs, each with lanes 1, 2 and 4:
#   file   a page-cached file of BENCH_BYTES (created in BENCH_DIR, removed at exit) -> /dev/null
#   file2file  the same file -> a new file in BENCH_OUT_DIR (default /dev/shm: the page cache
#          without writeback), not synced, removed after each run: the receiver's lanes write
#          it with pwrite at their offsets
#   zero   /dev/zero, BENCH_BYTES of it (read() by the engine's source) -> /dev/null
#   pipe   head -c BENCH_BYTES /dev/zero | engine (stdin -> stdout) | cat > /dev/null
# Each run is one process (bench/engine.c): the handshake, then both engines on two threads.
# GB/s = 1e9 bytes per second of wall clock, from the first engine's start to the last one's
# return. CPU s/GB per end: the CPU time of every thread of that end (its engine's reader,
# monitor, writer and lane threads included), read as each exits; the pipe's head and cat are
# not counted.
# Runs are interleaved round-robin (rep 1 of everything, then rep 2, ...) so that other work on
# the machine spreads over all of them. Reported: the median of BENCH_REPS runs, min-max in
# brackets; "x 1 lane": the median of each repetition's ratio to the 1-lane run of the same
# source taken just before it.
#
# Environment:
#   BENCH_BYTES=2147483648   bytes per run (the file's size); e.g. 256M for a quick look
#   BENCH_REPS=3             runs of each row
#   BENCH_LANES="1 2 4"      lane counts
#   BENCH_SOURCES="file file2file zero pipe"
#   BENCH_ENGINE_ARGS=""     more options for the engine: "--chunk 1M --depth 16"
#   BENCH_BASE_ENGINE=path   another build's bench/engine (e.g. the previous commit's): every
#                            row runs with both, interleaved, and "÷ base" is the median of each
#                            repetition's GB/s ratio between the two runs taken one after the other
#   BENCH_DIR=${TMPDIR:-/tmp}
#   BENCH_OUT_DIR=/dev/shm   where file2file writes (BENCH_DIR if there is no /dev/shm)
#   RDPIPE_BUILD=build       where `make bench` put bench/engine (OUT=...)
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD=${RDPIPE_BUILD:-build}
ENGINE=$BUILD/bench/engine
REPS=${BENCH_REPS:-3}
LANES=${BENCH_LANES:-1 2 4}
SOURCES=${BENCH_SOURCES:-file file2file zero pipe}
DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}
OUT_DIR=${BENCH_OUT_DIR:-$([ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo "$DIR")}
read -r -a EXTRA <<< "${BENCH_ENGINE_ARGS:-}"
BASE_ENGINE=${BENCH_BASE_ENGINE:-}
BUILDS="new${BASE_ENGINE:+ base}"

to_bytes() {   # 2G, 256M, 64K or plain bytes
    local v=$1
    case $v in
        *[Gg]) echo $(( ${v%?} << 30 )) ;;
        *[Mm]) echo $(( ${v%?} << 20 )) ;;
        *[Kk]) echo $(( ${v%?} << 10 )) ;;
        *) echo $(( v )) ;;
    esac
}
BYTES=$(to_bytes "${BENCH_BYTES:-2147483648}") || exit 2

[ -x "$ENGINE" ] || { echo "engine.sh: no $ENGINE: run 'make bench OUT=$BUILD' first" >&2; exit 2; }
[ -z "$BASE_ENGINE" ] || [ -x "$BASE_ENGINE" ] || { echo "engine.sh: BENCH_BASE_ENGINE=$BASE_ENGINE is not executable" >&2; exit 2; }

LOG=$(mktemp "$DIR/rdpipe-engine-log.XXXXXX") || exit 1
FILE= OUTF=
trap 'rm -f "$LOG" ${FILE:+"$FILE"} ${OUTF:+"$OUTF"}' EXIT
trap 'exit 130' INT TERM

if [[ " $SOURCES " == *" file2file "* ]]; then
    OUTF=$(mktemp -u "$OUT_DIR/rdpipe-engine-out.XXXXXX") || exit 1
fi
if [[ " $SOURCES " == *" file "* || -n "$OUTF" ]]; then
    avail_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
    [ $(( BYTES / 1024 )) -lt $(( avail_kb / 2 )) ] ||
        echo "engine.sh: warning: $BYTES bytes is more than half the available memory; the file may not stay cached" >&2
    FILE=$(mktemp "$DIR/rdpipe-engine-file.XXXXXX") || exit 1
    echo "engine.sh: writing $BYTES bytes of test file $FILE" >&2
    head -c "$BYTES" /dev/urandom > "$FILE" || exit 1
    sync "$FILE"   # no writeback of it during the runs
fi

describe() {
    case $1 in
        file) echo "page-cached file -> /dev/null" ;;
        file2file) echo "page-cached file -> file ($OUT_DIR)" ;;
        zero) echo "/dev/zero -> /dev/null" ;;
        pipe) echo "stdin pipe -> stdout pipe" ;;
        *) echo "$1" ;;
    esac
}

# run_one SOURCE LANES [BUILD]: prints "GBPS SEND_S_PER_GB RECV_S_PER_GB LOST_PCT", or fails
run_one() {
    local src=$1 lanes=$2 rc engine=$ENGINE
    [ "${3:-new}" = base ] && engine=$BASE_ENGINE
    local cmd=("$engine" --lanes "$lanes" "${EXTRA[@]}")
    case $src in
        file) "${cmd[@]}" --source "file:$FILE" --sink null 2> "$LOG"; rc=$? ;;
        file2file) "${cmd[@]}" --source "file:$FILE" --sink "file:$OUTF" 2> "$LOG"; rc=$?
              [ "$rc" = 0 ] && [ "$(stat -c %s "$OUTF")" != "$BYTES" ] && { echo "wrong output size" >> "$LOG"; rc=1; }
              rm -f "$OUTF" ;;
        zero) "${cmd[@]}" --source "zero:$BYTES" --sink null 2> "$LOG"; rc=$? ;;
        pipe) head -c "$BYTES" /dev/zero | "${cmd[@]}" --source stdin --sink stdout 2> "$LOG" | cat > /dev/null
              rc=${PIPESTATUS[1]} ;;
        *) echo "engine.sh: unknown source '$src'" >&2; return 1 ;;
    esac
    if [ "$rc" != 0 ] || ! grep -q '^result ' "$LOG"; then
        echo "engine.sh: $src lanes $lanes failed (exit $rc): $(head -c 400 "$LOG")" >&2
        return 1
    fi
    awk '/^result / { gb = $2 / 1e9; all = $4 + $5 + $6 + $7
                      printf "%.4f %.4f %.4f %.2f\n", gb / $3, $4 / gb, $5 / gb, (all > 0 ? 100 * $7 / all : 0) }' "$LOG"
}

# keys: "SOURCE LANES BUILD" (BUILD new, or base with BENCH_BASE_ENGINE)
declare -A GBPS SCPU RCPU RATIO BRATIO
worst_lost=0
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((rep = 1; rep <= REPS; rep++)); do
    [ "$FILE" ] && cat "$FILE" > /dev/null   # still all in the page cache
    for src in $SOURCES; do
        declare -A one=()
        for l in $LANES; do
            for b in $BUILDS; do
                out=$(run_one "$src" "$l" "$b") || continue
                read -r g s r lost <<< "$out"
                echo "engine.sh: rep $rep/$REPS $src lanes $l $b: $g GB/s, sender $s, receiver $r CPU s/GB" >&2
                GBPS[$src $l $b]+=" $g"; SCPU[$src $l $b]+=" $s"; RCPU[$src $l $b]+=" $r"
                [ "$l" = 1 ] && one[$b]=$g
                [ -n "${one[$b]:-}" ] && RATIO[$src $l $b]+=" $(awk -v a="$g" -v b="${one[$b]}" 'BEGIN { printf "%.3f", a / b }')"
                [ "$b" = new ] && new_g=$g
                [ "$b" = base ] && [ -n "${new_g:-}" ] &&
                    BRATIO[$src $l new]+=" $(awk -v a="$new_g" -v b="$g" 'BEGIN { printf "%.3f", a / b }')"
                worst_lost=$(awk -v a="$worst_lost" -v b="$lost" 'BEGIN { print (b > a ? b : a) }')
            done
            new_g=
        done
        unset one
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk -v f="$1" '{ v[NR] = $1 } END {
    if (!NR) { print "-"; exit }
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf f, m }'; }
spread() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR > 1) printf " (%.2f-%.2f)", v[1], v[NR] }'; }

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
echo "bench/engine.sh: send and receive engines in one process over the loop transport (frames passed by pointer)"
echo "$BYTES bytes per run, median of $REPS (min-max); $(nproc) cores ($cpu)"
echo "load average before: $load_before, after: $load_after${BENCH_ENGINE_ARGS:+; engine args: $BENCH_ENGINE_ARGS}"
echo
if [ -n "$BASE_ENGINE" ]; then
    echo "base: $BASE_ENGINE"
    echo
    echo "| source | lanes | build | GB/s | x 1 lane | ÷ base | sender CPU s/GB | receiver CPU s/GB |"
    echo "|---|---:|---|---:|---:|---:|---:|---:|"
else
    echo "| source | lanes | GB/s | x 1 lane | sender CPU s/GB | receiver CPU s/GB |"
    echo "|---|---:|---:|---:|---:|---:|"
fi
for src in $SOURCES; do
    for l in $LANES; do
        for b in $BUILDS; do
            k="$src $l $b" col="" bcol=""
            if [ -n "$BASE_ENGINE" ]; then
                col=" $b |"
                bcol=" $([ "$b" = new ] && median %.2f <<< "${BRATIO[$k]:-}") |"
            fi
            [ -n "${GBPS[$k]:-}" ] || { echo "| $(describe "$src") | $l |$col failed | |$bcol | |"; continue; }
            echo "| $(describe "$src") | $l |$col $(median %.2f <<< "${GBPS[$k]}")$(spread <<< "${GBPS[$k]}") |" \
                 "$(median %.2f <<< "${RATIO[$k]:-}") |$bcol $(median %.3f <<< "${SCPU[$k]}") |" \
                 "$(median %.3f <<< "${RCPU[$k]}") |"
        done
    done
done
echo
echo "CPU per end: all of its threads (engine threads included), each read as it exits; at most $worst_lost% of a"
echo "run's CPU time was not attributed to a thread. The pipe rows' head and cat run beside the engines, not counted."
echo "x 1 lane: the median of each repetition's ratio to the 1-lane run of the same source just before it."
[ -z "$BASE_ENGINE" ] || echo "÷ base: the median of each repetition's ratio of the new build's GB/s to the base build's, run right after it."
