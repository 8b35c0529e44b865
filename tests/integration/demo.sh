#!/bin/bash
# demo.sh - scripts/demo.sh, the README's first command: exit 0 and "OK" when the data arrived,
# the transport and the cat|cat reference printed; non-zero on a corrupted copy; Ctrl-C
# (SIGINT to the script alone) leaves no rdsend/rdrecv running and no scratch files.
# Runs the demo against the binaries under test (DEMO_BIN), so it builds nothing.
. "$(dirname "$0")/../lib.sh"
DEMO=$RD_ROOT/scripts/demo.sh
# the demo's scratch space: tmpfs, like its default /dev/shm, but a directory of our own
SHM=$(mktemp -d /dev/shm/rdpipe-demotest.XXXXXX 2>/dev/null || mktemp -d "$RD_T/shm.XXXXXX")
rd_at_exit 'rm -rf "$SHM"'

# demo_left DIR: what a demo run left behind in DIR (its scratch dirs)
demo_left() { find "$1" -maxdepth 1 -name 'rdpipe-demo.*' 2>/dev/null; }

t_begin "demo: 64 MiB over loopback, exit 0, transport and reference printed, nothing left"
DEMO_BIN=$RD_BIN DEMO_BYTES=64M DEMO_DIR=$SHM timeout "$(lim 120)" "$DEMO" > "$C/o" 2> "$C/e"
expect_rc $? 0 "demo.sh" "$(tail -n 3 "$C/o" "$C/e" | tr '\n' '|')"
grep -q '^demo: OK, 67108864 bytes arrived intact' "$C/o" || t_fail "no OK line: $(tr '\n' '|' < "$C/o")"
grep -Eq '^demo: rdsend -> rdrecv over tcp \(loopback\): [0-9.]+ GB/s' "$C/o" || t_fail "no rdpipe figure with its transport: $(tr '\n' '|' < "$C/o")"
grep -Eq '^demo: cat \| cat on this machine: +[0-9.]+ GB/s' "$C/o" || t_fail "no reference figure"
grep -Eq '^demo: rdpipe / local pipe = [0-9.]+$' "$C/o" || t_fail "no ratio"
[ -z "$(demo_left "$SHM")" ] || t_fail "scratch left: $(demo_left "$SHM")"
t_end

t_begin "demo: a corrupted copy is a MISMATCH and a non-zero exit"
# an rdrecv that really receives, then flips one bit of what it wrote
mkdir -p "$C/bad"
cp "$RDSEND" "$C/bad/rdsend"
cat > "$C/bad/rdrecv" <<EOF
#!/bin/bash
"$RDRECV" "\$@"; rc=\$?
out=\${@: -1}
b=\$(od -An -tu1 -j1000 -N1 "\$out" | tr -d ' ')   # flip it: writing a constant byte would miss 1 time in 256
printf "\\\\\$(printf %o \$(( b ^ 1 )))" | dd of="\$out" bs=1 seek=1000 conv=notrunc status=none
exit \$rc
EOF
chmod +x "$C/bad/rdrecv"
DEMO_BIN=$C/bad DEMO_BYTES=1M DEMO_DIR=$SHM timeout "$(lim 60)" "$DEMO" > "$C/o" 2> "$C/e"; rc=$?
expect_nonzero $rc "demo.sh with a corrupting receiver"
grep -q '^demo: MISMATCH' "$C/o" || t_fail "no MISMATCH line: $(tr '\n' '|' < "$C/o")"
grep -q '^demo: OK' "$C/o" && t_fail "printed OK for a corrupted copy"
[ -z "$(demo_left "$SHM")" ] || t_fail "scratch left: $(demo_left "$SHM")"
t_end

t_begin "demo: SIGINT mid-transfer exits 130 at once, kills rdsend/rdrecv, removes its files"
# A sender that never ends (it streams a slow endless input instead of the demo's file), so the
# transfer is surely under way at the signal and only the demo's cleanup can stop it. Its
# binaries live in a dir of this case's own, so pgrep finds only this demo's processes.
mkdir -p "$C/b"; cp "$RDSEND" "$C/b/real-rdsend"; cp "$RDRECV" "$C/b/rdrecv"
cat > "$C/b/rdsend" <<EOF
#!/bin/bash
exec "$C/b/real-rdsend" "\${@:1:\$#-1}" < <(while head -c 65536 /dev/zero; do sleep 0.05; done)   # ends when the pipe does
EOF
chmod +x "$C/b/rdsend"
( exec env --default-signal=INT DEMO_BIN="$C/b" DEMO_BYTES=1M DEMO_DIR="$SHM" "$DEMO" > "$C/o" 2> "$C/e" ) & dp=$!
RD_PIDS+=("$dp")
seen=0
for _ in $(seq $((400 * RD_SLOW))); do
    for f in "$SHM"/rdpipe-demo.*/out; do [ -s "$f" ] && seen=1; done   # bytes are arriving
    [ $seen = 1 ] && break
    kill -0 "$dp" 2>/dev/null || break
    sleep 0.05
done
[ $seen = 1 ] || t_fail "the transfer never started: $(tr '\n' '|' < "$C/o")"
sigs=$(grep -E 'Sig(Ign|Cgt)' /proc/$dp/status 2>/dev/null | tr '\n' ' ')   # for the failure message
kill -INT "$dp"
wait_pid "$dp" "$(lim 3)"; rc=$?
expect_rc $rc 130 "demo.sh after SIGINT"
[ "$rc" = 130 ] || t_fail "demo's output: $(tr '\n' '|' < "$C/o") $(tr '\n' '|' < "$C/e"); its signal masks before the SIGINT: $sigs"
left=$(pgrep -af "^$C/b/")   # rdsend (real-rdsend) and rdrecv, started by the demo
[ -z "$left" ] || { t_fail "still running: $left ($(ps -o pid=,stat=,wchan:24= -p "$(pgrep -d, -f "^$C/b/")" 2>/dev/null | tr '\n' ' '))"
                    for p in $(pgrep -f "^$C/b/"); do kill -9 "$p"; done; }
pkill -f "bash $C/b/rdsend" 2>/dev/null   # this wrapper's own input loop (it ends with its pipe)
[ -z "$(demo_left "$SHM")" ] || t_fail "scratch left: $(demo_left "$SHM")"
t_end
