#!/bin/bash
# engine_bench.sh - bench/engine (make bench), which bench/engine.sh runs to measure how the
# lanes scale: one transfer, and its CPU counted for the end that did the work. The engine
# names its threads (rd-lane0, rd-reader, ...); a bench that told the ends apart by thread
# name put nearly all of it under "other" and printed 0.006 CPU s/GB for a sender that used
# 0.25 (2026-11-27), so the attribution itself is checked here.
. "$(dirname "$0")/../lib.sh"

case $RD_BUILD in
    build-san) mk=(make -s SAN=1 bench) ;;
    *) mk=(make -s OUT="$RD_BUILD" bench) ;;
esac
case $RD_BUILD in /*) ENGINE=$RD_BUILD/bench/engine ;; *) ENGINE=$RD_ROOT/$RD_BUILD/bench/engine ;; esac
[ -n "${RDPIPE_ENGINE:-}" ] && { ENGINE=$RDPIPE_ENGINE; mk=(true); }   # another engine binary, as built

t_begin "bench/engine: 128 MiB page-cached file -> /dev/null on 2 lanes, the CPU counted for sender and receiver"
(cd "$RD_ROOT" && "${mk[@]}") > "$C/make.log" 2>&1 || t_fail "${mk[*]}: $(tail -5 "$C/make.log")"
gen "$RD_T/eb" $((128 << 20))
cat "$RD_T/eb" > /dev/null
"$ENGINE" --source file:"$RD_T/eb" --sink null --lanes 2 2> "$C/err"; rc=$?
expect_rc $rc 0 "bench/engine" "$(tail -3 "$C/err")"
# result BYTES WALL_S SEND_CPU_S RECV_CPU_S OTHER_CPU_S LOST_CPU_S
read -r tag bytes wall send recv other lost < <(grep '^result ' "$C/err")
if [ "${tag:-}" != result ]; then
    t_fail "no result line: $(tail -3 "$C/err")"
else
    [ "$bytes" = $((128 << 20)) ] || t_fail "$bytes bytes arrived, $((128 << 20)) sent"
    # the sender reads and tags every byte, the receiver checks every tag: each more than the
    # main thread, which only starts and joins them (more where a sanitizer's start-up counts
    # for it: ASan beside TSan in CI, receiver 0.032 CPU s against 0.017, and on 2026-12-08
    # receiver 0.026 against 0.053, with the tag at 12 GB/s a core); together nearly all of
    # the process. The build that told the ends apart by name put nearly all under "other".
    awk -v s="$send" -v r="$recv" -v o="$other" -v l="$lost" \
        'BEGIN { exit !(s > 2 * o && r > o / 4 && s + r >= 0.7 * (s + r + o + l)) }' ||
        t_fail "CPU s: sender $send, receiver $recv, other $other, not attributed $lost"
    t_note "sender $send, receiver $recv, other $other CPU s"
fi
t_end
