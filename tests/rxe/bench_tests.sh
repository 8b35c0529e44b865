#!/bin/bash
# bench_tests.sh - rdbench and rdcheck over RDMA, run INSIDE the rxe VM (tests/rxe/run-in-vm.sh;
# cwd = the checkout). rxe_a on va 10.0.0.1, rxe_b on vb 10.0.0.2, the client bound to 10.0.0.2
# so traffic crosses the veth. Prints "PASS name" / "FAIL name: why" per case; exit status = the
# number of failures. Data is kept small: the VM emulates its CPUs (TCG), tens of MB/s.
# env: RDPIPE_BIN (dir of the tools)
#
# From the host: tests/rxe/run-in-vm.sh "$PWD" "RDPIPE_BIN=$PWD/build/bin bash $PWD/tests/rxe/bench_tests.sh"
set -u
BIN=${RDPIPE_BIN:-/work/main/bin}
S=${RXE_SERVER_IP:-10.0.0.1}; C=${RXE_CLIENT_IP:-10.0.0.2}
T=/tmp/rxe-bench; rm -rf "$T"; mkdir -p "$T"
KEY=rxe-bench-key-0123456789abcdef
PORT=7700; npass=0; nfail=0
pass() { echo "PASS $1"; npass=$((npass + 1)); }
fail() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
next_port() { PORT=$((PORT + 1)); }
flat() { tr '\n' '|' < "$1" | cut -c1-1500; }
wait_listen() { local i; for ((i = 0; i < 200; i++)); do ss -Hltn "sport = :$1" | grep -q . && return 0; sleep 0.05; done; return 1; }

# the ssh stand-in: OPTIONS... -- HOST COMMAND, run here (both "hosts" are this VM)
cat > "$T/ssh" <<EOF
#!/bin/bash
while [ \$# -gt 0 ] && [ "\$1" != -- ]; do shift; done
shift 2
export PATH=$BIN:\$PATH
exec bash -c "\$*"
EOF
chmod +x "$T/ssh"

echo "--- rdbench and rdcheck over rdma: server $S (rxe_a), client bound to $C (rxe_b)"
for t in rdbench rdcheck rdsend rdrecv; do [ -x "$BIN/$t" ] || { fail setup "no $BIN/$t"; exit 1; }; done

# rdcheck, local checks: all pass, and it names the devices
"$BIN/rdcheck" > "$T/o" 2> "$T/e"; rc=$?
if [ $rc = 0 ] && grep -q '^✓ RDMA devices: .*rxe_a' "$T/o" && grep -q '^✓ port rxe_a/1: ACTIVE, Ethernet (RoCE) on va$' "$T/o" &&
   grep -q '^✓ GIDs rxe_a/1: GID [0-9]* RoCE v2 10\.0\.0\.1 (va)' "$T/o" && grep -q '^✓ MTU rxe_a/1: active 4096 ' "$T/o" &&
   ! grep -q '^✗' "$T/o"; then
    pass "rdcheck (local): every check passes, rxe_a is named ($(grep -c '^✓' "$T/o") checks)"
else fail "rdcheck (local)" "exit $rc: $(flat "$T/o") $(flat "$T/e")"; fi

# rdcheck with HOST: route, agent, ports and traffic both ways over RDMA and TCP
"$BIN/rdcheck" --ssh "$T/ssh" --bind "$C" "$S" > "$T/o" 2> "$T/e"; rc=$?
why=""
[ $rc = 0 ] || why+="exit $rc; "
grep -q '^✗' "$T/o" && why+="a check failed; "
grep -q "^✓ RDMA route: $S is reached through rxe_b port 1" "$T/o" || why+="no RDMA route line; "
grep -Eq "^✓ agent: rdrecv --check listens on $S port [0-9]+ \(tcp,rdma\)$" "$T/o" || why+="no agent line; "
grep -Eq "^✓ RDMA port [0-9]+ on $S: reachable, key accepted \(rdma rxe_b" "$T/o" || why+="no RDMA port line; "
grep -q "^✓ MTU here and on $S: 4096 at both ends (rxe_b here, rxe_a there)$" "$T/o" || why+="no MTU line naming rxe_a; "
# what rdsend plans there: rxe on a veth reports 10 Gb/s, one queue pair's and one lane's worth
grep -Eq "^✓ RDMA plan for $S: rxe_b.* at 10 Gb/s, [0-9]+ cores?: rdsend here asks for 1 queue pair and runs 1 lane \(unless --streams, rails or --lanes say otherwise\)$" "$T/o" ||
    why+="no RDMA plan line; "
grep -Eq "^✓ TCP plan for $S: vb at 10 Gb/s, [0-9]+ cores?: rdsend here asks for 1 connection and runs 1 lane \(unless --streams or --lanes say otherwise\)$" "$T/o" ||
    why+="no TCP plan line; "
for k in RDMA TCP; do
    grep -Eq "^✓ $k here → $S: [0-9.]+ GB/s" "$T/o" || why+="no $k traffic out; "
    grep -Eq "^✓ $k $S → here: [0-9.]+ GB/s" "$T/o" || why+="no $k traffic back; "
done
sed 's/^/     | /' "$T/o"   # the whole report, for the log
if [ -z "$why" ]; then pass "rdcheck $S: all pass, over rxe_b to rxe_a: $(grep 'RDMA here' "$T/o" | sed 's/.*: //')"
else fail "rdcheck $S" "$why $(flat "$T/o") $(flat "$T/e")"; fi

# a wrong address: one on a network without RDMA (a veth pair of its own, no rxe on it)
ip link add vx type veth peer name vy 2> /dev/null
ip addr add 10.1.1.1/24 dev vx 2> /dev/null; ip addr add 10.1.1.2/24 dev vy 2> /dev/null
ip link set vx up; ip link set vy up
"$BIN/rdcheck" --ssh "$T/ssh" --bind 10.1.1.1 10.1.1.2 > "$T/o" 2> "$T/e"; rc=$?
if [ $rc = 1 ] && grep -Eq '^✗ RDMA route: 10\.1\.1\.2 is reached through [a-z0-9]+, which has no RDMA device; fix: give 10\.1\.1\.2.s address on the RDMA network \(this host.s RDMA addresses: .*10\.0\.0\.1 \(va, rxe_a\)' "$T/o"; then
    pass "rdcheck, an address off the RDMA network: ✗ RDMA route naming this host's RDMA addresses, exit 1"
else fail "rdcheck, wrong address" "exit $rc: $(grep 'route' "$T/o") $(flat "$T/e")"; fi
ip link del vx 2> /dev/null

# locked memory below what rdsend pins, for real: rdcheck names the value, rdsend --transport
# rdma fails under that limit and works with the value rdcheck named (CAP_IPC_LOCK dropped)
drop=(setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock --)
"${drop[@]}" bash -c "ulimit -l 64 && exec '$BIN/rdcheck' --chunk-size 1M --depth 4" > "$T/o" 2> "$T/e"; rc=$?
need=$(sed -n 's/^✗ locked memory: .*; fix: ulimit -l \([0-9]*\) .*/\1/p' "$T/o")
if [ $rc = 1 ] && [ -n "$need" ] && grep -q '^✗ locked memory: limit 64 KiB' "$T/o"; then
    head -c 3000000 /dev/urandom > "$T/in"
    next_port
    "$BIN/rdrecv" --transport rdma --bind "$S" $PORT "$KEY" "$T/out" 2> "$T/rerr" & rp=$!
    "${drop[@]}" bash -c "ulimit -l 64 && exec '$BIN/rdsend' --transport rdma --bind $C --timeout 20 --chunk-size 1M --depth 4 $S $PORT $KEY '$T/in'" 2> "$T/serr"; src=$?
    sleep 0.5; kill $rp 2> /dev/null; wait $rp 2> /dev/null
    next_port
    "$BIN/rdrecv" --transport rdma --bind "$S" $PORT "$KEY" "$T/out" 2> "$T/rerr" & rp=$!
    "${drop[@]}" bash -c "ulimit -l $need && exec '$BIN/rdsend' --transport rdma --bind $C --timeout 20 --chunk-size 1M --depth 4 $S $PORT $KEY '$T/in'" 2> "$T/serr2"; src2=$?
    wait $rp; rrc=$?
    if [ $src != 0 ] && grep -q 'locked-memory limit is 64 KiB, too low even for the control frames' "$T/serr" && [ $src2 = 0 ] && [ $rrc = 0 ] && cmp -s "$T/in" "$T/out"; then
        pass "locked memory: rdcheck names ulimit -l $need; rdsend fails at 64 KiB ($(head -c 120 "$T/serr")...), works at $need KiB"
    else fail "locked memory" "rdsend at 64 KiB: exit $src $(flat "$T/serr"); at $need: exit $src2/$rrc $(flat "$T/serr2") $(flat "$T/rerr")"; fi
else fail "locked memory (rdcheck)" "exit $rc: $(grep locked "$T/o") $(flat "$T/e")"; fi

# a receiver whose ulimit -l is lower than the sender's: it grants the deepest ring it may pin
# (8 frames of 1 MiB here, rdcheck's value for them) instead of failing to register the 32
# the sender asked for, says so in one line, and the file arrives whole
"${drop[@]}" bash -c "ulimit -l 64 && exec '$BIN/rdcheck' --chunk-size 1M --depth 8" > "$T/o" 2> "$T/e"
need8=$(sed -n 's/^✗ locked memory: .*; fix: ulimit -l \([0-9]*\) .*/\1/p' "$T/o")
if [ -n "$need8" ]; then
    head -c 20000000 /dev/urandom > "$T/in"; rm -f "$T/out"
    next_port
    "${drop[@]}" bash -c "ulimit -l $need8 && exec '$BIN/rdrecv' -v --transport rdma --bind $S $PORT $KEY '$T/out'" 2> "$T/rerr" & rp=$!
    "$BIN/rdsend" -v --transport rdma --bind "$C" --timeout 20 --chunk-size 1M --depth 32 $S $PORT $KEY "$T/in" 2> "$T/serr"; src=$?
    wait $rp; rrc=$?
    if [ $src = 0 ] && [ $rrc = 0 ] && cmp -s "$T/in" "$T/out" &&
       grep -qxF "rdrecv: warning: ulimit -l lets this end pin 8 frames in flight, not the 32 the sender asked for; raise it for full speed (rdcheck names the value)" "$T/rerr" &&
       grep -q "(chunk 1048576, depth 8)" "$T/serr"; then
        pass "locked memory, receiver: ulimit -l $need8 KiB grants depth 8 of the 32 asked, says so, file whole"
    else fail "locked memory, receiver" "exits $src/$rrc, cmp $(cmp "$T/in" "$T/out" 2>&1 | head -c 100): $(flat "$T/serr") $(flat "$T/rerr")"; fi
else fail "locked memory, receiver (rdcheck)" "$(grep locked "$T/o") $(flat "$T/e")"; fi

# rdbench over RDMA and TCP, small sizes: table, JSON with both runs, SVG with four panels
next_port
"$BIN/rdbench" --server --bind "$S" -v $PORT "$KEY" 2> "$T/serr" & sp=$!
sleep 1
t0=$(date +%s.%N)
"$BIN/rdbench" --transport all --bind "$C" --no-progress --sizes 4K-64K --depths 1-4 --point-time 0.2 \
    --json "$T/b.json" --svg "$T/b.svg" $S $PORT "$KEY" > "$T/o" 2> "$T/e"; rc=$?
dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}')
kill $sp 2> /dev/null; wait $sp 2> /dev/null
res=$(/usr/bin/python3 - "$T/b.json" "$T/b.svg" <<'EOF'
import json, sys, xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
runs = d["runs"]
assert [r["transport"] for r in runs] == ["rdma", "tcp"], [r["transport"] for r in runs]
assert "rxe_b" in runs[0]["local"], runs[0]["local"]
assert any(dv["name"] == "rxe_a" for dv in runs[0]["server"]["devices"]), runs[0]["server"]
for r in runs:
    pts = r["points"]
    assert [(p["size"], p["depth"]) for p in pts] == [(s, dd) for s in (4096, 16384, 65536) for dd in (1, 2, 4)]
    assert all(p["measured"] and p["gb_per_s"] > 0 and 0 < p["latency_p50_us"] <= p["latency_p99_us"] for p in pts), pts
    assert r["model"]["fitted"], r["model"]
root = ET.parse(sys.argv[2]).getroot()
panels = root.findall(".//{http://www.w3.org/2000/svg}g[@class='panel']")
assert len(panels) == 4, len(panels)
r0 = runs[0]["model"]
print("rdma: latency %.0f us, bandwidth %.3f GB/s, median error %.0f%%" % (r0["latency_us"], r0["bandwidth_gb_per_s"], 100 * r0["median_error"]))
EOF
) 2>&1; prc=$?
if [ $rc = 0 ] && [ $prc = 0 ] && grep -q '^rdma (rdma rxe_b' "$T/o" && grep -q '^tcp (tcp' "$T/o"; then
    pass "rdbench --transport all over rxe_b -> rxe_a: JSON with both runs, SVG with 4 panels (${dt}s; $res)"
else fail "rdbench over rdma" "exit $rc ($res): $(flat "$T/o") $(flat "$T/e") server: $(flat "$T/serr")"; fi

rm -rf "$T"
echo "--- bench vm: $npass passed, $nfail failed"
exit $nfail
