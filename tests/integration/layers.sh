#!/bin/bash
# layers.sh - lib/ is a stack of folders and every #include points down it (ARCHITECTURE.md):
#   util < wire < transport < engine < run < remote < pipe | copy, and bench (rdbench,
#   rdcheck) beside pipe and copy but on run/ and below only
# pipe/ and copy/ never include each other; transport details (rd_tcp.h, rd_verbs.h) stay
# inside transport/; every lib header is included by its folder ("transport/rd_tcp.h").
. "$(dirname "$0")/../lib.sh"
LIB=${RDPIPE_LAYERS_LIB:-$RD_ROOT/lib}   # another tree to check (the test's own broken-tree cases)

declare -A rank=([util]=0 [wire]=1 [transport]=2 [engine]=3 [run]=4 [remote]=5 [pipe]=6 [copy]=6 [bench]=6)
# bench/ (rdbench, rdcheck) sits on run/ and below: it starts no agents, so not even remote/
declare -A skips=([bench]=remote)

# layer_violations DIR: one line per include that breaks a rule, nothing when all is well
layer_violations() {
    local dir=$1 f from line to hdr
    for f in "$dir"/*/*.[ch]; do
        from=$(basename "$(dirname "$f")")
        [ -n "${rank[$from]:-}" ] || { echo "$f: folder '$from' is not a known layer"; continue; }
        while IFS= read -r line; do
            hdr=${line#*\"}; hdr=${hdr%\"*}
            if [[ $hdr != */* ]]; then
                [ -e "$(dirname "$f")/$hdr" ] && echo "$f: includes \"$hdr\" without its folder"
                continue
            fi
            to=${hdr%%/*}
            [ -n "${rank[$to]:-}" ] || continue
            if [ "${rank[$to]}" -gt "${rank[$from]}" ]; then
                echo "$f: $from/ includes $hdr from $to/, a higher layer"
            elif [ "$to" != "$from" ] && [ "${rank[$to]}" = "${rank[$from]}" ]; then
                echo "$f: $from/ includes $hdr from $to/, a sibling (share it through a lower layer)"
            fi
            [ "${skips[$from]:-}" = "$to" ] && echo "$f: $from/ includes $hdr from $to/, which it must not use"
            case $hdr in
                transport/rd_tcp.h|transport/rd_verbs.h)
                    [ "$from" = transport ] || echo "$f: $from/ reaches into $hdr (use the ops in rd_transport.h)" ;;
            esac
        done < <(grep -h '^#include "' "$f")
    done
}

t_begin "every include in lib/ points down the stack; transport details stay in transport/"
out=$(layer_violations "$LIB")
[ -z "$out" ] || t_fail "$(echo "$out" | head -20 | tr '\n' '|')"
t_end

t_begin "the check catches an upward include, a sibling include, a TCP leak and a bare include"
cp -r "$LIB" "$C/lib"
echo '#include "run/rd_cli.h"' >> "$C/lib/transport/rd_select.c"
echo '#include "pipe/rdp_agent.h"' >> "$C/lib/copy/rdc_send.c"
echo '#include "transport/rd_tcp.h"' >> "$C/lib/engine/rd_relay.c"
echo '#include "rd_error.h"' >> "$C/lib/util/rd_queue.c"
out=$(layer_violations "$C/lib")
for want in "transport/rd_select.c: transport/ includes run/rd_cli.h" \
            "copy/rdc_send.c: copy/ includes pipe/rdp_agent.h from pipe/, a sibling" \
            "engine/rd_relay.c: engine/ reaches into transport/rd_tcp.h" \
            "util/rd_queue.c: includes \"rd_error.h\" without its folder"; do
    grep -qF "$want" <<< "$out" || t_fail "not caught: $want (got: $(echo "$out" | tr '\n' '|'))"
done
[ "$(wc -l <<< "$out")" = 4 ] || t_fail "expected 4 findings, got: $(echo "$out" | tr '\n' '|')"
t_end

t_begin "bench/ (rdbench, rdcheck) includes no remote/, and nothing includes bench/"
rm -rf "$C/lib"; cp -r "$LIB" "$C/lib"
echo '#include "remote/rdr_line.h"' >> "$C/lib/bench/rdb_sweep.c"
echo '#include "bench/rdb_model.h"' >> "$C/lib/copy/rdc_send.c"
echo '#include "bench/rdb_net.h"' >> "$C/lib/run/rd_run.c"
out=$(layer_violations "$C/lib")
for want in "bench/rdb_sweep.c: bench/ includes remote/rdr_line.h from remote/, which it must not use" \
            "copy/rdc_send.c: copy/ includes bench/rdb_model.h from bench/, a sibling" \
            "run/rd_run.c: run/ includes bench/rdb_net.h from bench/, a higher layer"; do
    grep -qF "$want" <<< "$out" || t_fail "not caught: $want (got: $(echo "$out" | tr '\n' '|'))"
done
[ "$(wc -l <<< "$out")" = 3 ] || t_fail "expected 3 findings, got: $(echo "$out" | tr '\n' '|')"
t_end

# Threads: every thread of lib/ is started with rd_thread_create (it records into its owner's
# error context) unless it does a stranger's work and is listed here; nothing is cancelled.
STRANGER_THREADS="transport/rd_waiting.c transport/rd_verbs_accept.c transport/rd_stripe.c bench/rdb_door.c"
thread_violations() {   # LIBDIR: one line per violation
    local d=$1 f rel
    grep -rln 'pthread_cancel' "$d" --include='*.c' | sed "s|^$d/||; s|\$|: cancels a thread|"
    for f in $(grep -rl '\bpthread_create(' "$d" --include='*.c'); do
        rel=${f#$d/}
        [ "$rel" = util/rd_error.c ] && continue
        case " $STRANGER_THREADS " in *" $rel "*) continue ;; esac
        echo "$rel: starts a thread outside its owner's error context (use rd_thread_create)"
    done
    grep -rn 'static[^(]*\b\(err_code\|err_msg\)\b' "$d" --include='*.c' | sed "s|^$d/||; s|:.*|: a process-wide error slot|"
}

t_begin "threads of lib/ record into their transfer's error context, nothing cancels one"
out=$(thread_violations "$LIB")
[ -z "$out" ] || t_fail "$(echo "$out" | tr '\n' '|')"
t_end

t_begin "the check catches a bare pthread_create, a pthread_cancel and a process-wide error slot"
rm -rf "$C/lib"; cp -r "$LIB" "$C/lib"
sed -i 's/\brd_thread_create(/pthread_create(/' "$C/lib/engine/rd_lanes.c"
echo 'static void stop(pthread_t t) { pthread_cancel(t); }' >> "$C/lib/engine/rd_relay.c"
echo 'static int err_code;' >> "$C/lib/util/rd_clock.c"
out=$(thread_violations "$C/lib")
for want in "engine/rd_lanes.c: starts a thread outside its owner's error context" \
            "engine/rd_relay.c: cancels a thread" \
            "util/rd_clock.c: a process-wide error slot"; do
    grep -qF "$want" <<< "$out" || t_fail "not caught: $want (got: $(echo "$out" | tr '\n' '|'))"
done
[ "$(wc -l <<< "$out")" = 3 ] || t_fail "expected 3 findings, got: $(echo "$out" | tr '\n' '|')"
t_end
