#!/usr/bin/env bash
# tests/fuzz/run.sh - build the libFuzzer targets and run each for a while.
#
# usage: tests/fuzz/run.sh [--no-build] SECONDS [TARGET...]
#   TARGET: proto, handshake, relay, agent_line, ... (or fuzz_<name>); default: every
#           tests/fuzz/fuzz_*.c. Each target runs on one core; FUZZ_JOBS of them (default:
#           the cores) at once, so 6 targets of 60 s take 3 minutes on 2 cores, not 6.
# Each target first replays its committed seeds (tests/fuzz/corpus/<name>/, regress-* ones
# included), then mutates them for SECONDS. It works on a copy in a temporary directory, so
# the committed corpus never grows. Prints one line per target:
#   ok   fuzz/<name> (N execs, cov C, ft F)
#   FAIL fuzz/<name> (<what>; crash: tests/out/fuzz/<name>/crash-...; log: tests/out/fuzz-<name>.log)
# and "N passed, N failed" last; exits 0 iff every target passed, 77 when there is no libFuzzer.
# env: FUZZ_JOBS (cores), FUZZ_RSS_MB (2048), FUZZ_TIMEOUT (10 s per input), FUZZ_CC (clang),
#      FUZZ_OUT (build-fuzz)
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

build=1
[ "${1:-}" = --no-build ] && { build=0; shift; }
case ${1:-} in
    ''|-h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; [ -n "${1:-}" ]; exit $? ;;
esac
secs=$1; shift
[[ $secs =~ ^[0-9]+$ ]] || { echo "tests/fuzz/run.sh: SECONDS must be a number, not '$secs'" >&2; exit 2; }
OUT=${FUZZ_OUT:-build-fuzz}
RSS=${FUZZ_RSS_MB:-2048}
TMO=${FUZZ_TIMEOUT:-10}

targets=()
if [ $# -eq 0 ]; then
    for f in tests/fuzz/fuzz_*.c; do n=${f##*/fuzz_}; targets+=("${n%.c}"); done
else
    for t in "$@"; do t=${t#fuzz_}; t=${t#fuzz/}; targets+=("$t"); done
fi
for t in "${targets[@]}"; do
    [ -f "tests/fuzz/fuzz_$t.c" ] || { echo "tests/fuzz/run.sh: no target '$t' (tests/fuzz/fuzz_$t.c)" >&2; exit 2; }
done

LOGDIR=$ROOT/tests/out
mkdir -p "$LOGDIR"
# no libFuzzer here at all: skip (exit 77) rather than fail
has_libfuzzer() {
    local d; d=$(mktemp -d "${TMPDIR:-/tmp}/rdpipe-fuzzcc.XXXXXX")
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }\n' > "$d/t.c"
    "${FUZZ_CC:-clang}" -fsanitize=fuzzer,address -o "$d/t" "$d/t.c" > /dev/null 2>&1
    local rc=$?; rm -rf "$d"; return $rc
}
if [ $build = 1 ]; then
    if ! has_libfuzzer; then
        echo "no libFuzzer: ${FUZZ_CC:-clang} -fsanitize=fuzzer cannot link (install clang and libclang-rt-14-dev)"
        exit 77
    fi
    # under a lock: .ci/run builds the targets ahead, in the background, with the same lock
    if ! flock "$LOGDIR/fuzz-build.lock" make -s fuzz -j"$(nproc)" > "$LOGDIR/fuzz-build.log" 2>&1; then
        tail -20 "$LOGDIR/fuzz-build.log" | sed 's/^/       | /'
        echo "FAIL fuzz/build (make fuzz; log: tests/out/fuzz-build.log)"
        echo "0 passed, 1 failed"
        exit 1
    fi
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rdpipe-fuzz.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# fuzz_one T: fuzz target T, then write its one-line verdict (ok/FAIL, with context lines
# after a FAIL) to $WORK/T.verdict
fuzz_one() {
    local t=$1 bin=$OUT/fuzz_$1 log=$LOGDIR/fuzz-$1.log art=$LOGDIR/fuzz/$1 v=$WORK/$1.verdict
    if [ ! -x "$bin" ]; then
        echo "FAIL fuzz/$t (no $bin: run make fuzz)" > "$v"; return
    fi
    mkdir -p "$WORK/$t" "$art"
    [ -d "tests/fuzz/corpus/$t" ] && cp -r "tests/fuzz/corpus/$t/." "$WORK/$t/"
    rm -f "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-* "$art"/slow-unit-*
    # the outer timeout only catches a fuzzer that hangs outside an input
    timeout -k 10 $((secs + 120)) "$bin" -max_total_time="$secs" -rss_limit_mb="$RSS" -timeout="$TMO" \
        -print_final_stats=1 -artifact_prefix="$art/" "$WORK/$t" > "$log" 2>&1
    local rc=$? execs last cov ft found what
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
    found=$(ls "$art" 2>/dev/null | grep -v "^slow-unit-" | head -1)   # slow: a paused process
    if [ $rc = 0 ] && [ -z "$found" ]; then
        echo "ok   fuzz/$t (${execs:-?} execs, cov ${cov:-?}, ft ${ft:-?})" > "$v"
    else
        what=$(grep -m1 -E '^==[0-9]+==ERROR|check failed|runtime error|ERROR: libFuzzer' "$log" |
               sed 's/^==[0-9]*==//' | cut -c1-120)
        [ $rc = 124 ] || [ $rc = 137 ] && what="hung past ${secs}s"
        { echo "FAIL fuzz/$t (${what:-exit $rc}; crash: ${found:+tests/out/fuzz/$t/$found}${found:-none}; log: tests/out/fuzz-$t.log)"
          grep -E '^ +#[0-9]+ ' "$log" | grep -v -E 'libFuzzer|fuzzer::|libc|_start' | head -8 | sed 's/^/       | /'
        } > "$v"
    fi
}

JOBS=${FUZZ_JOBS:-$(nproc)}
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || JOBS=1
for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    fuzz_one "$t" &
done
wait
passed=0; failed=0
for t in "${targets[@]}"; do
    cat "$WORK/$t.verdict"
    case $(head -c 4 "$WORK/$t.verdict") in "ok  ") passed=$((passed + 1)) ;; *) failed=$((failed + 1)) ;; esac
done
echo "$passed passed, $failed failed"
[ $failed = 0 ]
