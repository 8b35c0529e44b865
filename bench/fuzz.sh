#!/usr/bin/env bash
# bench/fuzz.sh - run the libFuzzer targets for as long as you give them and report, per target,
# executions, coverage, speed and findings as a markdown table.
#
#   bench/fuzz.sh 600                   every target 600 s, one after the other
#   bench/fuzz.sh -runs=10000000 relay  a number of executions instead of a time
#   nice -n 10 bench/fuzz.sh 3600 proto handshake
#
# options (before the budget):
#   --fresh       start from the committed seeds instead of the corpus grown by earlier runs
#   --no-build    do not run make fuzz
#   --out FILE    also write the table to FILE
#   --max-time S  with -runs=N: stop a target after S seconds too
#   --chunk N     restart the fuzzer (same corpus) every N executions (default 2000000)
# Each target works on its own corpus in build-fuzz/bench-corpus/<name>/ (seeded from
# tests/fuzz/corpus/<name>/ and kept between runs, so long campaigns can be split into
# several runs; the committed corpus is never touched). Findings (crash-*, leak-*, timeout-*,
# oom-*) go to build-fuzz/findings/<name>/; a target stops at its first finding, which is
# named in the table. Logs: build-fuzz/bench-<name>.log.
# Columns: execs and seconds of this run, exec/s = execs / wall seconds, cov = covered edges,
# ft = libFuzzer features, corpus = inputs in the working corpus at the end, rss = peak MB.
# env: FUZZ_RSS_MB (2048), FUZZ_TIMEOUT (10 s per input), FUZZ_OUT (build-fuzz)
set -uo pipefail
cd "$(dirname "$0")/.."

fresh=0; build=1; outfile=; maxtime=; chunk=2000000
while [ $# -gt 0 ]; do
    case $1 in
        --fresh) fresh=1 ;;
        --no-build) build=0 ;;
        --out) outfile=$2; shift ;;
        --max-time) maxtime=$2; shift ;;
        --chunk) chunk=$2; shift ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) break ;;
    esac
    shift
done
[ $# -ge 1 ] || { echo "usage: bench/fuzz.sh [--fresh] [--no-build] [--out FILE] [--max-time S] [--chunk N] SECONDS|-runs=N [TARGET...]" >&2; exit 2; }
budget=$1; shift
runs=; secs=
if [[ $budget =~ ^-runs=[0-9]+$ ]]; then runs=${budget#-runs=}; what="$runs runs"
elif [[ $budget =~ ^[0-9]+$ ]]; then secs=$budget; what="${budget} s"
else echo "bench/fuzz.sh: budget must be SECONDS or -runs=N, not '$budget'" >&2; exit 2; fi
if [ -n "$maxtime" ]; then secs=$maxtime; what="$what (at most $maxtime s)"; fi

OUT=${FUZZ_OUT:-build-fuzz}
targets=()
if [ $# -eq 0 ]; then
    for f in tests/fuzz/fuzz_*.c; do n=${f##*/fuzz_}; targets+=("${n%.c}"); done
else
    for t in "$@"; do t=${t#fuzz_}; targets+=("$t"); done
fi
if [ $build = 1 ]; then
    make -s fuzz -j"$(nproc)" > /dev/null || { echo "bench/fuzz.sh: make fuzz failed" >&2; exit 1; }
fi

table=$(mktemp); trap 'rm -f "$table"' EXIT
{
    echo "rdpipe fuzz targets, $what each, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(clang --version | head -1)"
    echo
    echo "| target | execs | seconds | exec/s | cov | ft | corpus | rss MB | findings |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
} > "$table"
cat "$table"
status=0
for t in "${targets[@]}"; do
    bin=$OUT/fuzz_$t
    [ -x "$bin" ] || { echo "| $t | - | - | - | - | - | - | - | no $bin |" | tee -a "$table"; status=1; continue; }
    corpus=$OUT/bench-corpus/$t
    art=$OUT/findings/$t
    log=$OUT/bench-$t.log
    [ $fresh = 1 ] && rm -rf "$corpus"
    mkdir -p "$corpus" "$art"
    [ -d "tests/fuzz/corpus/$t" ] && cp -rn "tests/fuzz/corpus/$t/." "$corpus/"
    before=$(ls "$art")
    # in pieces of $chunk executions, each a fresh process on the grown corpus: ASan never
    # frees the bookkeeping of a finished thread (~750 bytes), and fuzz_relay starts one per input
    execs=0; rss=0; rc=0; last=; : > "$log"
    t0=$EPOCHREALTIME
    while :; do
        args=()
        spent=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%d", b-a}')
        if [ -n "$secs" ]; then
            [ "$spent" -ge "$secs" ] && break
            args+=(-max_total_time=$((secs - spent)))
        fi
        n=$chunk
        if [ -n "$runs" ]; then
            [ "$execs" -ge "$runs" ] && break
            [ $((runs - execs)) -lt "$n" ] && n=$((runs - execs))
        fi
        "$bin" -runs="$n" "${args[@]}" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -timeout="${FUZZ_TIMEOUT:-10}" \
            -print_final_stats=1 -artifact_prefix="$art/" "$corpus" > "$log.part" 2>&1
        rc=$?
        cat "$log.part" >> "$log"
        e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log.part" | tail -1)
        r=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log.part" | tail -1)
        execs=$((execs + ${e:-0}))
        [ "${r:-0}" -gt "$rss" ] && rss=$r
        l=$(grep -E '^#[0-9]+' "$log.part" | tail -1); [ -n "$l" ] && last=$l
        [ $rc = 0 ] && [ -z "$(comm -13 <(echo "$before") <(ls "$art"))" ] && [ "${e:-0}" -ge "$n" ] || break
    done
    rm -f "$log.part"
    wall=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.0f", b-a}')
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
    units=$(ls "$corpus" | wc -l)
    rate=$(awk -v e="${execs:-0}" -v w="$wall" 'BEGIN{printf "%.0f", (w > 0 ? e/w : 0)}')
    new=$(comm -13 <(echo "$before") <(ls "$art") | tr '\n' ' ')
    if [ $rc = 0 ] && [ -z "$new" ]; then finding=none
    else
        why=$(grep -m1 -E '^==[0-9]+==ERROR|check failed|runtime error' "$log" | sed 's/^==[0-9]*==//; s/|/\\|/g' | cut -c1-80)
        finding="${why:-exit $rc} ${new:+($art/${new% })}"
        status=1
    fi
    echo "| $t | ${execs:-?} | $wall | $rate | ${cov:-?} | ${ft:-?} | $units | ${rss:-?} | $finding |" | tee -a "$table"
done
[ -n "$outfile" ] && cp "$table" "$outfile"
exit $status
