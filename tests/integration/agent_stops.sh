#!/bin/bash
# agent_stops.sh - a destination agent whose receiving role has not reported its port yet
# (rdcp --resume walks and hashes all of DST first: minutes on a big one) still stops when
# the initiator goes.
#
# No sshd: a stand-in ssh runs the agent here as its child, as sshd would, from a copy of
# the tools whose rdcp stops itself (SIGSTOP) before it becomes the receiving role: a walk
# that never ends. Until 2026-11-27 the agent watched only that role while it waited (up to
# 600 s), so an initiator killed meanwhile left the agent and the role running (and a role
# silent for 600 s was killed, failing a legitimate --resume of a big destination; now it
# waits as long as the role lives, which this test does not time).
. "$(dirname "$0")/../lib.sh"

for _b in rdpipe rdcp rdsend rdrecv; do
    [ -x "$RD_BIN/$_b" ] || { echo "FAIL $RD_GROUP: $RD_BIN/$_b not built (run make)" >&2; exit 2; }
done
# the remote host's tools: an rdcp that stops before it receives
R=$RD_T/remote
mkdir -p "$R"
cp "$RD_BIN/rdpipe" "$RD_BIN/rdsend" "$RD_BIN/rdrecv" "$R/"
cp "$RD_BIN/rdcp" "$R/rdcp.real"
cat > "$R/rdcp" <<EOF
#!/bin/bash
[ "\$1" = --tree-recv ] && { echo \$\$ > '$RD_T/role.pid'; kill -STOP \$\$; }
exec '$R/rdcp.real' "\$@"
EOF
cat > "$RD_T/ssh" <<EOF
#!/bin/bash
echo \$\$ > '$RD_T/ssh.pid'
exec '$R/rdpipe' --agent
EOF
chmod +x "$R/rdcp" "$RD_T/ssh"

gone_within() {   # gone_within SECONDS PID...: 0 once none of the PIDs is left
    local deadline p left
    deadline=$(awk -v a="$EPOCHREALTIME" -v s="$1" 'BEGIN{printf "%.3f", a+s}'); shift
    while :; do
        left=
        for p in "$@"; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
        [ -z "$left" ] && return 0
        awk -v a="$EPOCHREALTIME" -v d="$deadline" 'BEGIN{exit !(a > d)}' && { echo "$left"; return 1; }
        sleep 0.1
    done
}

mkdir -p "$C/src/d" "$C/dst"
echo data > "$C/src/d/f"

for sig in KILL INT; do
    t_begin "rdcp --resume killed (SIG$sig) while the destination's role has not reported its port: the remote agent and its role stop"
    rm -f "$RD_T/role.pid" "$RD_T/ssh.pid"
    start CP /dev/null "$C/out" "$C/err" "$RD_BIN/rdcp" -r --resume --ssh "$RD_T/ssh" "$C/src/" 127.0.0.1:"$C/dst/"
    for _ in $(seq 200); do [ -s "$RD_T/role.pid" ] && break; sleep 0.05; done
    role=$(cat "$RD_T/role.pid" 2>/dev/null)
    agent=$(cat "$RD_T/ssh.pid" 2>/dev/null)   # the stand-in ssh became the agent (exec)
    if [ -z "$role" ] || [ -z "$agent" ]; then
        t_fail "the role never started: $(cat "$C/err")"
        kill -KILL "$CP" 2>/dev/null
    else
        sleep 0.3   # the agent is in its wait for the port
        kill -"$sig" "$CP"
        wait_pid "$CP" "$(lim 10)"
        if ! left=$(gone_within "$(lim 5)" "$agent" "$role"); then
            t_fail "5 s after the initiator's SIG$sig still running:$(for p in $left; do printf ' [%s]' "$(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null)"; done)"
            kill -KILL $left 2>/dev/null
        fi
    fi
    t_end
done
