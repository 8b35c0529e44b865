#!/bin/bash
# rdcheck.sh - rdcheck on this host and against a "remote" one, each failure produced for real:
# no RDMA device (this machine has none), a locked-memory limit below what rdsend pins (with
# CAP_IPC_LOCK dropped, so the limit applies), a port a firewall drops (nft in a network
# namespace), a wrong address, an agent that cannot start. Each gives its line with the fix and
# exit 1. ssh is a stand-in that runs the command here (in the "remote" namespace when there
# is one), so the same agent code runs as over a real ssh. Also `rdrecv --check` on its own,
# usage errors (exit 2), and the bash completion.
. "$(dirname "$0")/../lib.sh"
RDCHECK=$RD_BIN/rdcheck
COMP=$RD_ROOT/completion/rdbench

if [ ! -x "$RDCHECK" ]; then
    t_begin "rdcheck is built"; t_fail "no $RDCHECK (make)"; t_end; exit 0
fi
HAS_RDMA=0; [ -n "$(ibv_devices 2> /dev/null | awk 'NR > 2')" ] && HAS_RDMA=1

# the ssh stand-in: OPTIONS... -- HOST COMMAND; logs its arguments, runs COMMAND with the
# binaries under test first on PATH, in namespace $FAKE_NS when set; FAKE_FAIL: act like an
# ssh that cannot reach the host
cat > "$RD_T/ssh" <<EOF
#!/bin/bash
printf '%s\n' "\$*" >> "$RD_T/ssh.log"
while [ \$# -gt 0 ] && [ "\$1" != -- ]; do shift; done
host=\$2; shift 2
if [ -n "\${FAKE_FAIL:-}" ]; then echo "ssh: connect to host \$host port 22: Connection refused" >&2; exit 255; fi
export PATH=$RD_BIN:\$PATH
if [ -n "\${FAKE_NS:-}" ]; then exec ip netns exec "\$FAKE_NS" bash -c "\$*"; fi
exec bash -c "\$*"
EOF
chmod +x "$RD_T/ssh"
SSH=$RD_T/ssh

# lines_ok FILE: every line is "✓ name: reason" or "✗ name: reason; fix: fix"
lines_ok() {
    local bad
    bad=$(grep -vE '^(✓ [^:]+: .+|✗ [^:]+: .+; fix: .+)$' "$1")
    [ -z "$bad" ] || t_fail "lines not in the form '✓/✗ name: reason[; fix: ...]': $(echo "$bad" | head -3 | tr '\n' '|')"
    [ -s "$1" ] || t_fail "no output"
}

t_begin "usage errors: exit 2, one line"
u() {   # u PATTERN ARGS...
    local pat=$1; shift
    timeout 10 "$RDCHECK" "$@" > "$C/o" 2> "$C/e"; expect_rc $? 2 "rdcheck $*"
    expect_err "$C/e" rdcheck "$pat"
    expect_empty "$C/o" "stdout of rdcheck $*"
}
u "^rdcheck: too many arguments: 'b' \(try 'rdcheck --help'\)$" a b
u "^rdcheck: '-oProxyCommand=x' is not a host name or address$" -- -oProxyCommand=x
u "^rdcheck: 'a b' is not a host name or address$" "a b"
u "^rdcheck: --seconds must be from 1 to 10, not '0'$" --seconds 0
u "^rdcheck: --transport must be auto, tcp or rdma, not 'all'$" --transport all
u "^rdcheck: --remote-path: letters, digits and / \. _ \+ - only, not 'x;reboot'$" --remote-path 'x;reboot'
u "^rdcheck: unknown option '-x' \(try 'rdcheck --help'\)$" -x
u "^rdcheck: invalid port '70000'$" --port 70000
timeout 10 "$RDCHECK" --help > "$C/o" 2>&1; expect_rc $? 0 "rdcheck --help"
grep -q '^exit codes: 0 every check passed, 1 a check failed, 2 usage error, 5 output not written$' "$C/o" || t_fail "--help lacks the exit codes"
t_end

t_begin "no RDMA device here: ✗ naming modprobe rdma_rxe and rdma link add, exit 1"
if [ "$HAS_RDMA" = 1 ]; then
    t_skip "this host has RDMA devices: the VM suite (tests/rxe/bench_tests.sh) checks them"
else
    timeout 20 "$RDCHECK" > "$C/o" 2> "$C/e"; expect_rc $? 1 "rdcheck without an RDMA device"
    expect_empty "$C/e" "rdcheck stderr"
    lines_ok "$C/o"
    grep -E '^✗ RDMA devices: no RDMA device on this host \(rdpipe will use TCP\); fix: .*modprobe rdma_rxe && rdma link add rxe0 type rxe netdev [a-z0-9]+$' "$C/o" > /dev/null ||
        t_fail "no device line with the Soft-RoCE fix: $(grep 'RDMA devices' "$C/o")"
    grep -q '^✓ huge pages: ' "$C/o" || t_fail "no huge pages line"
    grep -q '^✓ locked memory: ' "$C/o" || grep -q '^✗ locked memory: ' "$C/o" || t_fail "no locked memory line"
    [ "$(grep -c '^✗' "$C/o")" = "$(grep -c '^✗ RDMA devices\|^✗ locked memory' "$C/o")" ] ||
        t_fail "other checks failed too: $(grep '^✗' "$C/o" | tr '\n' '|')"
    # --transport tcp "checks that one only": RDMA's needs are not checked, nor a failure
    timeout 20 "$RDCHECK" --transport tcp > "$C/o" 2> "$C/e"; expect_rc $? 0 "rdcheck --transport tcp without an RDMA device"
    [ "$(cat "$C/o")" = "✓ RDMA: not checked (--transport tcp)" ] || t_fail "rdcheck --transport tcp: $(tr '\n' '|' < "$C/o")"
fi
t_end

# The kernel's settings seen through a private mount namespace: the real sysfs file stays.
t_begin "huge pages: transparent ones off and none reserved: ✗ naming both fixes; madvise: ✓"
if [ "$RD_IS_ROOT" != 1 ] || ! command -v unshare > /dev/null; then
    t_skip "needs root and unshare (a private mount namespace)"
elif ! [ -e /sys/kernel/mm/transparent_hugepage/enabled ]; then
    t_skip "this kernel has no transparent huge pages"
elif [ "$(awk '/HugePages_Free/{print $2}' /proc/meminfo)" != 0 ]; then
    t_skip "this host has free reserved huge pages: the ✗ case cannot arise here"
else
    for v in "always madvise [never]" "always [madvise] never"; do
        echo "$v" > "$C/thp"
        unshare -m sh -c "mount --bind '$C/thp' /sys/kernel/mm/transparent_hugepage/enabled && exec timeout 20 '$RDCHECK'" > "$C/o" 2> "$C/e"
        expect_empty "$C/e" "rdcheck stderr ($v)"
        lines_ok "$C/o"
        case $v in
            *"[never]") grep -qxF "✗ huge pages: transparent huge pages are never and no reserved ones are free: RDMA rings get 4 KiB pages, 512 times as many for the HCA to translate; fix: echo madvise > /sys/kernel/mm/transparent_hugepage/enabled, or reserve some (sysctl vm.nr_hugepages=N)" "$C/o" ||
                t_fail "never: $(grep 'huge' "$C/o")" ;;
            *) grep -qxF "✓ huge pages: RDMA rings get huge pages: transparent huge pages madvise, 0 MiB reserved and free" "$C/o" ||
                t_fail "madvise: $(grep 'huge' "$C/o")" ;;
        esac
    done
fi
t_end

# The limit applies only without CAP_IPC_LOCK: as root the test drops it, as rdsend would run
# under a service manager that does. 1M x 4 pins 6418288 bytes: 6268 KiB.
t_begin "locked memory below what rdsend pins: ✗ names the limit and the value needed, exit 1"
drop=()
if [ "$RD_IS_ROOT" = 1 ]; then
    if command -v setpriv > /dev/null; then drop=(setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock --); fi
fi
if [ "$RD_IS_ROOT" = 1 ] && [ ${#drop[@]} = 0 ]; then
    t_skip "no setpriv: CAP_IPC_LOCK cannot be dropped (apt-get install util-linux)"
    # what can be checked as root with the capability: its own line, a case of its own
    t_begin "locked memory below what rdsend pins, as root with CAP_IPC_LOCK: ✓ naming the capability"
    (ulimit -l 64; timeout 20 "$RDCHECK") > "$C/o" 2> "$C/e"
    grep -q '^✓ locked memory: limit 64 KiB (ulimit -l) is below the .* but this process has CAP_IPC_LOCK' "$C/o" ||
        t_fail "root's line: $(grep 'locked' "$C/o")"
else
    "${drop[@]}" bash -c "ulimit -l 64 && exec timeout 20 '$RDCHECK' --chunk-size 1M --depth 4" > "$C/o" 2> "$C/e"
    expect_rc $? 1 "rdcheck with ulimit -l 64"
    lines_ok "$C/o"
    grep -qxF "✗ locked memory: limit 64 KiB (ulimit -l) is below the 6268 KiB (6.1 MiB) that rdsend and rdrecv pin over RDMA (chunk 1 MiB x depth 4): registering their buffers fails; fix: ulimit -l 6268 (or unlimited) in the shell that runs rdsend/rdrecv; for good: '* - memlock 6268' in /etc/security/limits.conf, LimitMEMLOCK= for services" "$C/o" ||
        t_fail "locked memory line: $(grep 'locked' "$C/o")"
    # the value it names is the boundary: one KiB less still fails, that much passes
    "${drop[@]}" bash -c "ulimit -l 6267 && exec '$RDCHECK' --chunk-size 1M --depth 4" > "$C/o" 2>&1
    grep -q '^✗ locked memory: limit 6267 KiB' "$C/o" || t_fail "6267 KiB: $(grep locked "$C/o")"
    "${drop[@]}" bash -c "ulimit -l 6268 && exec '$RDCHECK' --chunk-size 1M --depth 4" > "$C/o" 2>&1
    grep -q '^✓ locked memory: limit 6268 KiB (ulimit -l) covers the 6268 KiB' "$C/o" || t_fail "6268 KiB: $(grep locked "$C/o")"
    # a relay pins both hops' rings and the upstream one again: 256K x 4, 7614128 bytes, 7436
    # KiB (under the usual hard limit, 8 MiB, which a container's root may not raise)
    "${drop[@]}" bash -c "ulimit -l 7435 && exec '$RDCHECK' --chunk-size 256K --depth 4" > "$C/o" 2>&1
    grep -qxF "✓ locked memory: limit 7435 KiB (ulimit -l) covers the 3196 KiB (3.1 MiB) that rdsend and rdrecv pin over RDMA (chunk 256 KiB x depth 4); a relay (rdpipe's cat segment) would pin 7436 KiB, and grants fewer frames in flight" "$C/o" ||
        t_fail "7435 KiB: $(grep locked "$C/o")"
    "${drop[@]}" bash -c "ulimit -l 7436 && exec '$RDCHECK' --chunk-size 256K --depth 4" > "$C/o" 2>&1
    grep -qxF "✓ locked memory: limit 7436 KiB (ulimit -l) covers the 3196 KiB (3.1 MiB) that rdsend and rdrecv pin over RDMA (chunk 256 KiB x depth 4), and the 7436 KiB of a relay" "$C/o" ||
        t_fail "7436 KiB: $(grep locked "$C/o")"
    # the default chunk and depth (4M x 8): another number, from the same rule
    "${drop[@]}" bash -c "ulimit -l 64 && exec '$RDCHECK'" > "$C/o" 2>&1
    grep -q '^✗ locked memory: .* (chunk 4 MiB x depth 8): .*; fix: ulimit -l 34956 ' "$C/o" || t_fail "defaults: $(grep locked "$C/o")"
fi
t_end

t_begin "with HOST (ssh stand-in): the agent, its TCP port, a second of traffic each way"
: > "$RD_T/ssh.log"
t0=$(now)
timeout "$(lim 60)" "$RDCHECK" --ssh "$SSH -o BatchMode=yes" 127.0.0.1 > "$C/o" 2> "$C/e"
rc=$?
lines_ok "$C/o"
expect_empty "$C/e" "rdcheck stderr"
grep -q '^✓ address: 127.0.0.1 is 127.0.0.1, reached through lo$' "$C/o" || t_fail "address line: $(grep address "$C/o")"
grep -Eq '^✓ agent: rdrecv --check listens on 127\.0\.0\.1 port [0-9]+ \(tcp(,rdma)?\)$' "$C/o" || t_fail "agent line: $(grep agent "$C/o")"
port=$(sed -n 's/^✓ agent: .* port \([0-9]*\) .*/\1/p' "$C/o")
grep -qx "✓ TCP port $port on 127.0.0.1: reachable, key accepted (tcp)" "$C/o" || t_fail "TCP port line: $(grep 'TCP port' "$C/o")"
# what rdsend plans for that link: loopback reports no speed, so one connection and half the cores
n=$(nproc); half=$((n / 2)); [ $half -lt 1 ] && half=1; [ $half -gt 8 ] && half=8
grep -qxF "✓ TCP plan for 127.0.0.1: lo reports no speed, $n core$([ "$n" = 1 ] || echo s): rdsend here asks for 1 connection and runs $half lane$([ "$half" = 1 ] || echo s) (unless --streams or --lanes say otherwise)" "$C/o" ||
    t_fail "plan line: $(grep 'plan' "$C/o")"
grep -Eq '^✓ TCP here → 127\.0\.0\.1: [0-9]+\.[0-9]{3} GB/s \(1\.[0-9] s, 1\.0 MiB messages at depth 8\)$' "$C/o" ||
    t_fail "traffic out: $(grep 'TCP here' "$C/o")"
# the way back is timed here from its first message to its last, while the agent sends for its
# second: a first message late under load (0.9 s once, beside 3 ASan scripts) shortens it
grep -Eq '^✓ TCP 127\.0\.0\.1 → here: [0-9]+\.[0-9]{3} GB/s \((0\.[5-9]|1\.[0-9]) s, 1\.0 MiB messages at depth 8\)$' "$C/o" ||
    t_fail "traffic back: $(grep 'here:' "$C/o")"
if [ "$HAS_RDMA" = 0 ]; then
    expect_rc $rc 1 "rdcheck 127.0.0.1 on a host without RDMA"
    [ "$(grep -c '^✗' "$C/o")" = 3 ] || t_fail "expected 3 ✗ (device, route, remote RDMA): $(grep '^✗' "$C/o" | tr '\n' '|')"
fi
# the key went over the channel: the remote command has no key in it
grep -q -- '-o BatchMode=yes -- 127.0.0.1 rdrecv --check --key-stdin --timeout 60 0$' "$RD_T/ssh.log" ||
    t_fail "remote command: $(cat "$RD_T/ssh.log")"
grep -Eq '[0-9a-f]{32}' "$RD_T/ssh.log" && t_fail "a key in ssh's arguments: $(cat "$RD_T/ssh.log")"
# the agent is gone once rdcheck is done (BYE), not at its 60 s timeout
sleep 0.2
[ -z "$(ss -Hltn "sport = :$port" 2> /dev/null)" ] || t_fail "the agent still listens on $port"
t_note "took $(elapsed "$t0")s"
t_end

t_begin "an ssh alias (Host myalias, HostName 127.0.0.1): reached at ssh's HostName, as rdpipe and rdcp reach it"
cat > "$RD_T/aliasssh" <<EOF
#!/bin/bash
for a in "\$@"; do [ "\$a" = -G ] && { printf 'user root\nhostname 127.0.0.1\nport 22\n'; exit 0; }; done
exec "$SSH" "\$@"
EOF
chmod +x "$RD_T/aliasssh"
timeout "$(lim 60)" "$RDCHECK" --ssh "$RD_T/aliasssh" --transport tcp myalias > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdcheck --transport tcp myalias"
lines_ok "$C/o"
grep -q "^✓ address: myalias is 127.0.0.1 (ssh's HostName 127.0.0.1), reached through lo$" "$C/o" || t_fail "address line: $(grep address "$C/o")"
grep -Eq '^✓ TCP port [0-9]+ on myalias: reachable, key accepted \(tcp\)$' "$C/o" || t_fail "TCP port line: $(grep 'TCP port' "$C/o")"
t_end

t_begin "a wrong address: a name that does not resolve, ✗ with the fix, no agent started, exit 1"
: > "$RD_T/ssh.log"
timeout 30 "$RDCHECK" --ssh "$SSH" nosuchhost.invalid > "$C/o" 2> "$C/e"
expect_rc $? 1 "rdcheck nosuchhost.invalid"
lines_ok "$C/o"
grep -qx '✗ address: cannot resolve nosuchhost.invalid; fix: check the name (getent hosts nosuchhost.invalid) or give its address' "$C/o" ||
    t_fail "address line: $(grep address "$C/o")"
grep -qv -- '-G -- nosuchhost.invalid$' "$RD_T/ssh.log" && t_fail "ssh ran for a host that does not resolve (not only asked for its config with -G)"
grep -q '^. agent:\|^. TCP port' "$C/o" && t_fail "checks went on past the address"
t_end

t_begin "the agent cannot start: ssh fails, or rdrecv is not there; each named with its fix"
FAKE_FAIL=1 timeout 30 "$RDCHECK" --ssh "$SSH" 127.0.0.1 > "$C/o" 2> "$C/e"
expect_rc $? 1 "rdcheck when ssh cannot connect"
lines_ok "$C/o"
grep -qF "✗ agent: could not start rdrecv --check on 127.0.0.1: ssh: connect to host 127.0.0.1 port 22: Connection refused; fix: check that \`$SSH 127.0.0.1 true\` works without a password prompt" "$C/o" ||
    t_fail "agent line: $(grep agent "$C/o")"
timeout 30 "$RDCHECK" --ssh "$SSH" --remote-path /nonexistent/rdrecv 127.0.0.1 > "$C/o" 2> "$C/e"
expect_rc $? 1 "rdcheck --remote-path /nonexistent/rdrecv"
grep -q '^✗ agent: could not start rdrecv --check on 127.0.0.1: .*No such file or directory; fix: install rdpipe on 127.0.0.1, or give its path with --remote-path$' "$C/o" ||
    t_fail "agent line: $(grep agent "$C/o")"
# an ssh that fails without a word: named by its status at once, not "no answer within 30 s"
timeout 30 "$RDCHECK" --ssh false 127.0.0.1 > "$C/o" 2> "$C/e"
expect_rc $? 1 "rdcheck --ssh false"
grep -q '^✗ agent: could not start rdrecv --check on 127.0.0.1: false exited with status 1 and said nothing; fix: ' "$C/o" ||
    t_fail "agent line (ssh false): $(grep agent "$C/o")"
# the ssh program missing here is no remote install's fault (the fix was chosen by the text)
timeout 30 "$RDCHECK" --transport tcp --ssh /nonexistent/ssh 127.0.0.1 > "$C/o" 2> "$C/e"
expect_rc $? 1 "rdcheck --ssh /nonexistent/ssh"
grep -qx '✗ agent: could not start rdrecv --check on 127.0.0.1: cannot run /nonexistent/ssh: No such file or directory; fix: give --ssh a program that runs here (apt install openssh-client for ssh)' "$C/o" ||
    t_fail "agent line (no ssh program): $(grep agent "$C/o")"
t_end

# What the agent says on stdout comes from the other host: its port must be a port (not "ssh",
# which would be looked up as a service: 22), and what is shown of it printable.
t_begin "an agent whose ready line is malformed: named, nothing connected to, exit 1"
printf '#!/bin/bash\nread key\nprintf "ready ssh tcp 1-2\\033[2J\\n"\ncat > /dev/null\n' > "$C/fake-agent"
chmod +x "$C/fake-agent"
timeout 30 "$RDCHECK" --ssh "$SSH" --remote-path "$C/fake-agent" 127.0.0.1 > "$C/o" 2> "$C/e"
expect_rc $? 1 "rdcheck with an agent that says 'ready ssh ...'"
lines_ok "$C/o"
grep -qxF "✗ agent: could not start rdrecv --check on 127.0.0.1: it said 'ready ssh tcp 1-2?[2J', not 'ready PORT TRANSPORTS PORT-RANGE'; fix: see rdrecv's message; rdcheck needs the rdrecv of the same rdpipe version on 127.0.0.1" "$C/o" ||
    t_fail "agent line: $(grep agent "$C/o" | cat -v)"
grep -q 'port ssh\|TCP port' "$C/o" && t_fail "it went on to connect: $(grep port "$C/o")"
t_end

# A real firewall: nft in the "remote" namespace drops TCP from here to its high ports. The
# ssh stand-in reaches the namespace without the network (ip netns exec), as ssh on port 22
# would get through such a firewall.
t_begin "a port the firewall drops: ✗ names the port range to open, exit 1"
if [ "$RD_IS_ROOT" != 1 ] || [ "$RD_QUICK" = 1 ]; then
    t_skip "needs root and no --quick"
elif ! command -v nft > /dev/null; then
    t_skip "no nft (apt-get install nftables)"
elif ! ns_setup; then
    t_fail "cannot set up the network namespaces"
else
    ip netns exec "$NS_B" nft -f - <<'EOF' || t_fail "nft"
table inet rdcheck_test {
    chain input {
        type filter hook input priority 0;
        ip saddr 10.77.0.1 tcp dport 1024-65535 drop
    }
}
EOF
    range=$(ip netns exec "$NS_B" cat /proc/sys/net/ipv4/ip_local_port_range | awk '{print $1 "-" $2}')
    t0=$(now)
    FAKE_NS=$NS_B timeout "$(lim 60)" ip netns exec "$NS_A" "$RDCHECK" --ssh "$SSH" --transport tcp 10.77.0.2 > "$C/o" 2> "$C/e"
    expect_rc $? 1 "rdcheck through the firewall"
    lines_ok "$C/o"
    grep -Eq '^✓ agent: rdrecv --check listens on 10\.77\.0\.2 port [0-9]+ \(tcp\)$' "$C/o" || t_fail "agent line: $(grep agent "$C/o")"
    grep -Eq "^✗ TCP port [0-9]+ on 10\.77\.0\.2: .*timed out.* \(a firewall drops it\?\); fix: open TCP ports $range on 10\.77\.0\.2 \(its ip_local_port_range, where rdpipe's hops listen\), e\.g\. nft add rule inet filter input tcp dport $range accept$" "$C/o" ||
        t_fail "port line: $(grep 'TCP port' "$C/o")"
    grep -q 'GB/s' "$C/o" && t_fail "traffic measured through a dropped port"
    t_note "took $(elapsed "$t0")s"
    # and without the rule the same check passes: it was the firewall
    ip netns exec "$NS_B" nft delete table inet rdcheck_test
    FAKE_NS=$NS_B timeout "$(lim 60)" ip netns exec "$NS_A" "$RDCHECK" --ssh "$SSH" --transport tcp 10.77.0.2 > "$C/o" 2> "$C/e"
    grep -Eq '^✓ TCP port [0-9]+ on 10\.77\.0\.2: reachable' "$C/o" || t_fail "without the firewall: $(grep 'TCP' "$C/o" | tr '\n' '|')"
    grep -Eq '^✓ TCP 10\.77\.0\.2 → here: ' "$C/o" || t_fail "no traffic without the firewall"
    # the veth's 10 Gb/s: one connection's and one lane's worth
    n=$(nproc)
    grep -qxF "✓ TCP plan for 10.77.0.2: $VETH_A at 10 Gb/s, $n core$([ "$n" = 1 ] || echo s): rdsend here asks for 1 connection and runs 1 lane (unless --streams or --lanes say otherwise)" "$C/o" ||
        t_fail "plan line over the veth: $(grep 'plan' "$C/o")"
fi
t_end

t_begin "rdrecv --check alone: the ready line, exit 2 after --timeout, no FILE, rdsend is told"
port=$(free_port)
timeout 20 "$RDRECV" --check --timeout 1 "$port" rdcheck-agent-key-0123456789 > "$C/o" 2> "$C/e"
expect_rc $? 2 "rdrecv --check --timeout 1"
grep -Eqx "ready $port tcp(,rdma)? [0-9]+-[0-9]+" "$C/o" || t_fail "ready line: $(cat "$C/o")"
expect_err "$C/e" rdrecv "^rdrecv: timed out after 1 s without a BYE from rdcheck$"
# --key-stdin: the key is the first line of stdin; when stdin (the ssh channel) ends, it goes
t0=$(now)
(echo rdcheck-agent-key-0123456789; sleep 0.5) | timeout 20 "$RDRECV" --check --key-stdin --timeout 15 0 > "$C/o" 2> "$C/e"
expect_rc $? 2 "rdrecv --check --key-stdin whose stdin ends"
grep -Eqx "ready [0-9]+ tcp(,rdma)? [0-9]+-[0-9]+" "$C/o" || t_fail "ready line: $(cat "$C/o")"
expect_err "$C/e" rdrecv "^rdrecv: rdcheck went away \(its channel closed\) before its BYE$"
fle "$(elapsed "$t0")" "$(lim 5)" || t_fail "it took $(elapsed "$t0")s to notice its stdin ended"
: | timeout 20 "$RDRECV" --check --key-stdin 0 > "$C/o" 2> "$C/e"
expect_rc $? 1 "rdrecv --check --key-stdin without a key"
expect_err "$C/e" rdrecv "^rdrecv: --key-stdin: no key on stdin$"
timeout 20 "$RDRECV" --check 0 rdcheck-agent-key-0123456789 "$C/file" > "$C/o" 2> "$C/e"
expect_rc $? 1 "rdrecv --check with a FILE"
expect_err "$C/e" rdrecv "^rdrecv: rdrecv --check takes no FILE"
[ -e "$C/file" ] && t_fail "rdrecv --check created its FILE"
timeout 20 "$RDSEND" --check 127.0.0.1 1 k > "$C/o" 2> "$C/e"
expect_rc $? 1 "rdsend --check"
expect_err "$C/e" rdsend "unknown option '--check'"
port=$(free_port)
start ap /dev/null "$C/ao" "$C/ae" "$RDRECV" --check --timeout 20 "$port" rdcheck-agent-key-0123456789
wait_listen "$port" "" 10 || t_fail "rdrecv --check did not listen"
head -c 1000 /dev/urandom | timeout 20 "$RDSEND" 127.0.0.1 "$port" rdcheck-agent-key-0123456789 2> "$C/e"
expect_rc $? 4 "rdsend at rdrecv --check"
expect_err "$C/e" rdsend "not rdrecv"
kill -0 "$ap" 2> /dev/null || t_fail "rdrecv --check stopped for an rdsend (it waits for rdcheck's BYE)"
kill_reap "$ap"
t_end

t_begin "bash completion: rdcheck's options, --transport values, hosts"
H=$RD_T/home; mkdir -p "$H/.ssh"
printf 'Host alpha beta\n' > "$H/.ssh/config"
comp() {
    (cd "$C" && HOME=$H bash --norc --noprofile -c '
        . "$0" || exit 99
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        _rdbench_complete
        printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"' "$COMP" "$@")
}
want() { local exp=$1 got; shift; got=$(comp "$@"); [ "$got" = "$exp" ] || t_fail "[$*]: got '$got', expected '$exp'"; }
exp=$("$RDCHECK" --help | grep -E '^ +-' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u | tr '\n' ' ' | sed 's/ $//')
want "$exp" "$RDCHECK" --
want "auto rdma tcp" "$RDCHECK" --transport ""
want "alpha beta" "$RDCHECK" -v ""
want "alpha" "$RDCHECK" --ssh myssh a
want "" "$RDCHECK" --port ""
want "" "$RDCHECK" alpha ""
t_end
