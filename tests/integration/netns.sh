#!/bin/bash
# netns.sh - two network namespaces joined by a veth pair (10.77.0.1/24 + fd77::1/64 receiver
# side, 10.77.0.2/24 + fd77::2/64 sender side): transfers over IPv4 and IPv6, --bind, wrong
# key, an absent peer, and the link dropped mid-transfer. Needs root; skipped by --quick.
. "$(dirname "$0")/../lib.sh"

ALL=("ipv4 transfers" "ipv6 transfers" "--bind on both sides" "wrong key across namespaces"
     "absent host on the subnet" "default lanes planned for the link" "default streams planned for the link"
     "a name with several addresses" "link dropped mid-transfer")
if [ "$RD_IS_ROOT" != 1 ]; then
    for n in "${ALL[@]}"; do t_skip "$n" "needs root for network namespaces"; done; exit 0
fi
if [ "$RD_QUICK" = 1 ]; then
    for n in "${ALL[@]}"; do t_skip "$n" "--quick"; done; exit 0
fi
if ! ns_setup; then
    t_begin "namespace setup"; t_fail "cannot create namespaces / veth pair"; t_end; exit 1
fi

K64=$((64 << 10)); M4=$((4 << 20))
for s in 0 1 $((K64 + 1)) $((M4 + 1)) $((48 << 20)); do gen "$RD_T/in.$s" "$s"; done

for fam in ipv4 ipv6; do
    host=10.77.0.1; [ $fam = ipv6 ] && host=fd77::1
    t_begin "$fam transfers"
    for s in 0 1 $((K64 + 1)) $((M4 + 1)) $((48 << 20)); do
        xfer_reset; X_RNS=$NS_A; X_SNS=$NS_B; X_HOST=$host
        case $s in 1) X_IN=file; X_OUT=file ;; $((K64 + 1))) X_IN=stdin; X_OUT=file; X_ROPTS=(--chunk-size 64K); X_SOPTS=(--chunk-size 64K) ;;
                   $((M4 + 1))) X_IN=file; X_OUT=stdout; X_KEYMODE=env ;; *) X_KEYMODE=file ;; esac
        xfer "$RD_T/in.$s"
    done
    t_end
done

t_begin "--bind on both sides"
xfer_reset; X_RNS=$NS_A; X_SNS=$NS_B; X_HOST=10.77.0.1; X_ROPTS=(--bind 10.77.0.1); X_SOPTS=(--bind 10.77.0.2)
xfer "$RD_T/in.$((M4 + 1))"
xfer_reset; X_RNS=$NS_A; X_SNS=$NS_B; X_HOST=fd77::1; X_ROPTS=(--bind fd77::1); X_SOPTS=(--bind fd77::2)
xfer "$RD_T/in.$((M4 + 1))"
t_end

t_begin "wrong key across namespaces"
port=$(free_port)
start rp /dev/null "$C/out" "$C/rerr" ip netns exec "$NS_A" "$RDRECV" "$port" right
wait_listen "$port" "$NS_A" || t_fail "not listening"
timeout -k 2 "$(lim 20)" ip netns exec "$NS_B" "$RDSEND" 10.77.0.1 "$port" wrong "$RD_T/in.1" 2> "$C/serr"
expect_rc $? 3 "wrong rdsend"; expect_err "$C/serr" rdsend "authentication failed"
timeout -k 2 "$(lim 20)" ip netns exec "$NS_B" "$RDSEND" fd77::1 "$port" right "$RD_T/in.$((M4 + 1))" 2> "$C/serr"
expect_rc $? 0 "right rdsend (IPv6)" "$(cat "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
expect_err "$C/rerr" rdrecv "authentication failed"
expect_same_file "$RD_T/in.$((M4 + 1))" "$C/out" data
t_end

# /etc/netns/NS/hosts is the namespace's /etc/hosts under ip netns exec
t_begin "a name with several addresses: a dead first one (10.77.0.3, no host; sorted first as nearest to 10.77.0.2) costs a quarter second, not --timeout; --bind picks the family"
mkdir -p "/etc/netns/$NS_B"
printf '127.0.0.1 localhost\n10.77.0.3 rdmulti\n10.77.0.1 rdmulti\nfd77::1 rddual\n10.77.0.1 rddual\n' > "/etc/netns/$NS_B/hosts"
for how in "rdmulti" "rddual --bind 10.77.0.2" "rddual --bind fd77::2"; do
    set -- $how; name=$1; shift
    port=$(free_port)
    start rp /dev/null "$C/out" "$C/rerr" ip netns exec "$NS_A" "$RDRECV" "$port" key
    wait_listen "$port" "$NS_A" || t_fail "not listening"
    t0=$(now)
    timeout -k 2 "$(lim 20)" ip netns exec "$NS_B" "$RDSEND" -v --timeout 4 "$@" "$name" "$port" key "$RD_T/in.1" 2> "$C/serr"; rc=$?
    dt=$(elapsed "$t0")
    expect_rc $rc 0 "rdsend $how" "$(tail -2 "$C/serr")"
    wait_pid "$rp" 10; expect_rc $? 0 "rdrecv for $how" "$(cat "$C/rerr")"
    expect_within "$dt" "$(lim 2)" "rdsend $how"
    case $how in *fd77::2) grep -q 'fd77::1' "$C/serr" || t_fail "--bind fd77::2 did not go over IPv6: $(grep sending "$C/serr")";;
                 *10.77.0.2) grep -q '10\.77\.0\.1' "$C/serr" || t_fail "--bind 10.77.0.2 did not go over IPv4: $(grep sending "$C/serr")";; esac
done
rm -rf "/etc/netns/$NS_B"
t_end

t_begin "absent host on the subnet (10.77.0.9) with --timeout 2: exit 2"
t0=$(now)
timeout -k 2 "$(lim 20)" ip netns exec "$NS_B" "$RDSEND" --timeout 2 10.77.0.9 5000 key "$RD_T/in.1" 2> "$C/serr"; rc=$?
dt=$(elapsed "$t0")
expect_rc $rc 2 rdsend; expect_err "$C/serr" rdsend "cannot connect|unreachable|timed out"
expect_within "$dt" "$(lim 5)" "connect to an absent host"
t_note "${dt}s"
t_end
# -v's line that says how many lanes an end runs and why (run/rd_plan.h): a veth reports
# 10 Gb/s, one lane's worth; loopback reports no speed: half the cores (at most 8)
lanes_line() {   # lanes_line FILE PROG PATTERN
    grep -Eq -- "^$2: (sending|receiving) .*; lanes $3" "$1" ||
        t_fail "$2 -v does not say 'lanes $3': $(grep -E 'lanes' "$1" | head -c 400)"
}
t_begin "default lanes planned for the link: the veth's 10 Gb/s on both ends (--streams 2 counts it once), loopback's unknown speed, the cores taskset allows; a frame in flight per lane"
n=$(nproc); cores="$n cores?"
half=$((n / 2)); [ $half -lt 1 ] && half=1; [ $half -gt 8 ] && half=8
for streams in 1 2; do
    port=$(free_port)
    start rp /dev/null "$C/out" "$C/rerr" ip netns exec "$NS_A" "$RDRECV" -v "$port" key
    wait_listen "$port" "$NS_A" || t_fail "not listening"
    timeout -k 2 "$(lim 20)" ip netns exec "$NS_B" "$RDSEND" -v --json --streams $streams 10.77.0.1 "$port" key "$RD_T/in.$((M4 + 1))" 2> "$C/serr"
    expect_rc $? 0 "rdsend --streams $streams" "$(cat "$C/serr")"
    wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
    expect_same_file "$RD_T/in.$((M4 + 1))" "$C/out" "data, --streams $streams"
    lanes_line "$C/serr" rdsend "1 \\($VETH_B at 10 Gb/s, $cores\\)"
    lanes_line "$C/rerr" rdrecv "1 \\($VETH_A at 10 Gb/s, $cores\\)"
    grep -q '"lanes":1,"cipher":null,"link_gbps":10.000,' "$C/serr" || t_fail "rdsend --json: $(grep '^{' "$C/serr")"
done
port=$(free_port)
start rp /dev/null "$C/out" "$C/rerr" ip netns exec "$NS_A" "$RDRECV" -v "$port" key
wait_listen "$port" "$NS_A" || t_fail "not listening"
timeout -k 2 "$(lim 20)" ip netns exec "$NS_A" "$RDSEND" -v --json 127.0.0.1 "$port" key "$RD_T/in.1" 2> "$C/serr"
expect_rc $? 0 "rdsend over lo" "$(cat "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
lanes_line "$C/serr" rdsend "$half \\(link speed unknown on lo, $cores\\)"
lanes_line "$C/rerr" rdrecv "$half \\(link speed unknown on lo, $cores\\)"
grep -q '"link_gbps":null,' "$C/serr" || t_fail "rdsend --json over lo: $(grep '^{' "$C/serr")"
# compressing takes every core the process may use: taskset leaves one
port=$(free_port)
start rp /dev/null "$C/out" "$C/rerr" ip netns exec "$NS_A" "$RDRECV" -v "$port" key
wait_listen "$port" "$NS_A" || t_fail "not listening"
timeout -k 2 "$(lim 20)" ip netns exec "$NS_B" taskset -c "$(taskset -cp $$ | sed 's/.*: //; s/[-,].*//')" \
    "$RDSEND" -v --compress 10.77.0.1 "$port" key "$RD_T/in.1" 2> "$C/serr"
expect_rc $? 0 "rdsend under taskset" "$(cat "$C/serr")"
wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
lanes_line "$C/serr" rdsend "1 \\(compressing, 1 core\\)"
# more lanes than the default depth keeps busy: the sender asks for a frame each and 4 more,
# unless --depth says otherwise
for d in "" "--depth 5"; do
    port=$(free_port)
    start rp /dev/null "$C/out" "$C/rerr" ip netns exec "$NS_A" "$RDRECV" -v "$port" key
    wait_listen "$port" "$NS_A" || t_fail "not listening"
    timeout -k 2 "$(lim 20)" ip netns exec "$NS_B" "$RDSEND" -v --lanes 8 $d 10.77.0.1 "$port" key "$RD_T/in.$((M4 + 1))" 2> "$C/serr"
    expect_rc $? 0 "rdsend --lanes 8 $d" "$(cat "$C/serr")"
    wait_pid "$rp" 10; expect_rc $? 0 rdrecv "$(cat "$C/rerr")"
    expect_same_file "$RD_T/in.$((M4 + 1))" "$C/out" "data, --lanes 8 $d"
    want=12; [ -n "$d" ] && want=5
    grep -q "(chunk 1048576, depth $want); lanes 8 (--lanes)" "$C/serr" || t_fail "rdsend --lanes 8 $d: $(grep lanes "$C/serr")"
    grep -q "(chunk 1048576, depth $want) into " "$C/rerr" || t_fail "rdrecv after --lanes 8 $d: $(grep lanes "$C/rerr")"
done
t_end

# The sender's default --streams (run/rd_plan.h): a connection per 10 Gb/s of the link under
# its address, at most one per core. No link here reports more than a veth's 10 Gb/s, so the
# sender's address lives on a tap whose ethtool speed is set to 100 Gb/s (a tap keeps what it
# is told; it carries nothing here, having no reader) and the bytes go over the veth: the
# sender reads its link's speed through the socket's own address, as on a real host.
TAP=rdpt$$t; TAP=${TAP:0:15}
t_begin "default streams planned for the link: 100 Gb/s under the sender's address opens a connection per 10 Gb/s, one per core; --streams 1, taskset and the receiver's --streams say otherwise"
if ! command -v ethtool > /dev/null; then
    t_fail "no ethtool (scripts/install-deps.sh installs it)"
elif ! { ip -n "$NS_B" tuntap add dev "$TAP" mode tap && ip -n "$NS_B" link set "$TAP" up &&
         ip netns exec "$NS_B" ethtool -s "$TAP" speed 100000 duplex full autoneg off &&
         ip -n "$NS_B" addr add 10.77.5.2/32 dev "$TAP" && ip -n "$NS_A" route add 10.77.5.2/32 via 10.77.0.2; }; then
    t_fail "cannot give $NS_B a tap at 100 Gb/s"
else
    n=$(nproc); want=$((n < 10 ? n : 10))
    one_core=$(taskset -cp $$ | sed 's/.*: //; s/[-,].*//')
    # streams_case NAME ASKED GOT FROM GBPS RECV_OPTS -- SENDER_PREFIX...: a 48 MiB file from
    # FROM; the sender plans ASKED connections (says why when more than 1), the receiver grants GOT
    streams_case() {
        local name=$1 asked=$2 expect=$3 from=$4 gbps=$5 ropts=$6; shift 7
        local port; port=$(free_port)
        start rp /dev/null "$C/out" "$C/rerr" ip netns exec "$NS_A" "$RDRECV" -v $ropts "$port" key
        wait_listen "$port" "$NS_A" || t_fail "$name: not listening"
        timeout -k 2 "$(lim 30)" ip netns exec "$NS_B" "$@" -v --json --bind "$from" 10.77.0.1 "$port" key \
            "$RD_T/in.$((48 << 20))" 2> "$C/serr"
        expect_rc $? 0 "rdsend, $name" "$(cat "$C/serr")"
        wait_pid "$rp" 10; expect_rc $? 0 "rdrecv, $name" "$(cat "$C/rerr")"
        expect_same_file "$RD_T/in.$((48 << 20))" "$C/out" "data, $name"
        local over="over tcp (" tr=tcp
        [ "$expect" -gt 1 ] && over="over tcp, $expect streams (" tr="tcp, $expect streams"
        grep -qF "rdsend: sending $RD_T/in.$((48 << 20)) to 10.77.0.1:$port $over" "$C/serr" ||
            t_fail "$name: rdsend does not say '$over': $(grep -E 'sending|streams' "$C/serr")"
        grep "rdrecv: receiving from $from:" "$C/rerr" | grep -qF " $over" ||
            t_fail "$name: rdrecv does not say '$over' from $from: $(grep receiving "$C/rerr")"
        grep -qF "\"transport\":\"$tr\",\"peer\"" "$C/serr" && grep -qF "\"link_gbps\":$gbps.000," "$C/serr" ||
            t_fail "$name: rdsend --json: $(grep '^{' "$C/serr")"
        if [ "$asked" -gt 1 ]; then
            grep -qxF "rdsend: asking for $asked streams: $TAP at $gbps Gb/s, a connection per 10 Gb/s, $n cores (--streams 1 for one)" "$C/serr" ||
                t_fail "$name: rdsend -v does not say why $asked streams: $(grep -E 'asking|streams' "$C/serr")"
        elif grep -q "asking for" "$C/serr"; then
            t_fail "$name: rdsend plans streams: $(grep asking "$C/serr")"
        fi
    }
    streams_case "no --streams" "$want" "$want" 10.77.5.2 100 "" -- "$RDSEND"
    [ "$want" = 1 ] && t_note "1 core: the plan is one connection"
    streams_case "--streams 1" 1 1 10.77.5.2 100 "" -- "$RDSEND" --streams 1
    streams_case "one core (taskset)" 1 1 10.77.5.2 100 "" -- taskset -c "$one_core" "$RDSEND"
    streams_case "rdrecv --streams 1" "$want" 1 10.77.5.2 100 "--streams 1" -- "$RDSEND"
    streams_case "the veth's 10 Gb/s, one connection's worth" 1 1 10.77.0.2 10 "" -- "$RDSEND"
fi
t_end
rm -f "$RD_T"/in.*

# The link goes down under a running transfer. Nothing is closed or reset: each side must
# notice on its own (TCP_USER_TIMEOUT / keepalive in rd_tcp.c). Limit: 45 s each.
t_begin "link dropped mid-transfer: both sides exit non-zero"
LINK_LIMIT=$(lim 45)
port=$(free_port)
start rp /dev/null /dev/null "$C/rerr" ip netns exec "$NS_A" "$RDRECV" -v "$port" key
wait_listen "$port" "$NS_A" || t_fail "not listening"
start sp /dev/null /dev/null "$C/serr" ip netns exec "$NS_B" "$RDSEND" 10.77.0.1 "$port" key /dev/zero
wait_for_text "$C/rerr" 'receiving from' 10 || t_fail "transfer did not start: $(cat "$C/rerr" "$C/serr")"
sleep 0.5
t0=$(now)
ip -n "$NS_B" link set dev "$VETH_B" down || t_fail "cannot take $VETH_B down"
# wait for both, whichever ends first
sdt=""; rdt=""; src=""; rrc=""
while :; do
    if [ -z "$src" ] && ! { kill -0 "$sp" 2>/dev/null && [ "$(ps -o stat= -p "$sp" | cut -c1)" != Z ]; }; then
        wait "$sp"; src=$?; sdt=$(elapsed "$t0"); fi
    if [ -z "$rrc" ] && ! { kill -0 "$rp" 2>/dev/null && [ "$(ps -o stat= -p "$rp" | cut -c1)" != Z ]; }; then
        wait "$rp"; rrc=$?; rdt=$(elapsed "$t0"); fi
    [ -n "$src" ] && [ -n "$rrc" ] && break
    fle "$(elapsed "$t0")" "$LINK_LIMIT" || break
    sleep 0.1
done
[ -z "$src" ] && { kill_reap "$sp"; src=124; sdt=">$LINK_LIMIT"; }
[ -z "$rrc" ] && { kill_reap "$rp"; rrc=124; rdt=">$LINK_LIMIT"; }
expect_nonzero "$src" "rdsend (after ${sdt}s)"; expect_nonzero "$rrc" "rdrecv (after ${rdt}s)"
[ "$src" != 124 ] && expect_err "$C/serr" rdsend "timed out|lost|closed|unreachable"
grep -v -e 'listening on' -e 'receiving from' "$C/rerr" > "$C/rerr.e"
[ "$rrc" != 124 ] && expect_err "$C/rerr.e" rdrecv "timed out|lost|closed|unreachable"
t_note "rdsend exit $src after ${sdt}s, rdrecv exit $rrc after ${rdt}s"
t_end
