#!/bin/bash
# run.sh - the RDMA (Soft-RoCE) test suite, from the host: build, two host-side checks, then ONE
# VM boot (tests/rxe/run-in-vm.sh) that runs the verbs smoke test and tests/rxe/tests.sh.
# Exit 0 = all passed, 1 = failures, 77 = this host cannot run the VM (the reason is printed).
# Last line: "N passed, N failed" (", N skipped" when cases in the VM could not run: SKIP lines).   env: RXE_* (see run-in-vm.sh), RXE_KILLS, RXE_BIG_MB, SAN=1,
# RXE_ONLY=streams (only tests.sh's --streams and multi-rail cases, to iterate quickly),
# RXE_ONLY=measure (1 stream against 2, small against huge pages; RXE_MEASURE_MB, _ROUNDS),
# RXE_ONLY=changing (the input file rewritten or truncated while it is sent)
set -u
HERE=$(cd "$(dirname "$0")" && pwd); TOP=$(cd "$HERE/../.." && pwd)
npass=0; nfail=0
pass() { echo "PASS $1"; npass=$((npass + 1)); }
fail() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
skip() { echo "SKIP rxe suite: $*"; echo "$npass passed, $nfail failed"; exit 77; }

# The build under test: RDPIPE_BUILD (as tests/run sets it) or SAN=1. Not tests/run's snapshot
# in /tmp: the guest sees the checkout, but its /tmp is its own.
OUT=${RDPIPE_BUILD:-build}; [ "${SAN:-0}" = 1 ] && OUT=build-san
case $OUT in
    build) mk=(SAN=0); BIN=$TOP/bin ;;
    build-san) mk=(SAN=1); BIN=$TOP/build-san/bin ;;
    *-san) mk=(OUT="$OUT" BINDIR="$OUT/bin" SAN=1); BIN=$TOP/$OUT/bin ;;   # e.g. build-b-san
    *) mk=(OUT="$OUT" BINDIR="$OUT/bin"); BIN=$TOP/$OUT/bin ;;
esac

echo "--- building ($OUT)"
make -C "$TOP" -s "${mk[@]}" > /tmp/rxe-build.$$ 2>&1 && make -C "$HERE" -s "${mk[@]}" >> /tmp/rxe-build.$$ 2>&1 ||
    { cat /tmp/rxe-build.$$; rm -f /tmp/rxe-build.$$; fail build "make failed"; echo "$npass passed, $nfail failed"; exit 1; }
rm -f /tmp/rxe-build.$$

# ---- host side: no RDMA device here (the usual CI box) ----
if [ -z "$(ibv_devices 2>/dev/null | awk 'NR > 2')" ]; then
    "$BIN/rdsend" --transport rdma 127.0.0.1 7999 key /dev/null 2> /tmp/rxe-err.$$; rc=$?
    if [ $rc = 101 ] && grep -q "no RDMA device" /tmp/rxe-err.$$; then pass "host: --transport rdma without a device exits 101 'no RDMA device'"
    else fail "host: --transport rdma without a device" "exit $rc: $(cat /tmp/rxe-err.$$)"; fi
    port=$((20000 + RANDOM % 20000))
    head -c 100000 /dev/urandom > /tmp/rxe-in.$$
    "$BIN/rdrecv" --bind 127.0.0.1 $port key /tmp/rxe-out.$$ 2>/dev/null & rp=$!
    "$BIN/rdsend" -v 127.0.0.1 $port key /tmp/rxe-in.$$ 2> /tmp/rxe-err.$$; rc=$?; wait $rp; rrc=$?
    if [ $rc = 0 ] && [ $rrc = 0 ] && cmp -s /tmp/rxe-in.$$ /tmp/rxe-out.$$ && grep -qi "tcp" /tmp/rxe-err.$$; then
        pass "host: --transport auto without a device falls back to TCP"
    else fail "host: auto falls back to TCP" "exit $rc/$rrc: $(tr '\n' '|' < /tmp/rxe-err.$$)"; fi
    rm -f /tmp/rxe-in.$$ /tmp/rxe-out.$$ /tmp/rxe-err.$$
else
    echo "--- host has RDMA devices: skipping the no-device checks"
fi

# ---- can this host boot the VM? ----
for t in qemu-system-x86_64 busybox depmod modprobe cpio rdma ibv_devices rping; do
    command -v $t > /dev/null || skip "missing $t (apt-get install qemu-system-x86 busybox-static kmod cpio iproute2 rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest)"
done
LAB=${RXE_LAB:-/tmp/rxe-lab}; KPKG=${RXE_KERNEL:-linux-image-amd64}
CACHE=$LAB/cache; [ "$KPKG" = linux-image-amd64 ] || CACHE=$LAB/cache-$KPKG   # as run-in-vm.sh
if ! [ -s "$CACHE/vmlinuz" ] && ! apt-cache depends "$KPKG" 2> /dev/null | grep -q 'Depends: linux-image-[0-9]'; then
    skip "no cached kernel in $CACHE and apt cannot fetch $KPKG"
fi

# The checkout itself is the VM's share: mounted read-write at the same path in the guest, it
# is visible there wherever it lives (the guest's /tmp, /run and /root are fresh tmpfs).
VMLOG=$(mktemp /tmp/rxe-vm.XXXXXX)
echo "--- booting the Soft-RoCE VM (TCG: slow; the whole suite takes a few minutes)"
RXE_MEM=${RXE_MEM:-3072} RXE_TIMEOUT=${RXE_TIMEOUT:-1500} "$HERE/run-in-vm.sh" "$TOP" \
    "RDPIPE_SEED=${RDPIPE_SEED:-9} RDPIPE_BIN=$BIN RDPIPE_SMOKE=$TOP/$OUT/tests/verbs_smoke RXE_KILLS=${RXE_KILLS:-6} RXE_BIG_MB=${RXE_BIG_MB:-128} RXE_ONLY=${RXE_ONLY:-} RXE_MEASURE_MB=${RXE_MEASURE_MB:-48} RXE_MEASURE_ROUNDS=${RXE_MEASURE_ROUNDS:-3} RXE_MEASURE_CHUNK=${RXE_MEASURE_CHUNK:-4M} bash $HERE/tests.sh" \
    | tee "$VMLOG"
vmrc=${PIPESTATUS[0]}
if grep -q "^run-in-rxe-vm: the live copy" "$VMLOG"; then   # count from the whole log it printed again
    sed -n '/^run-in-rxe-vm: the live copy/,$p' "$VMLOG" > "$VMLOG.all" && mv "$VMLOG.all" "$VMLOG"
fi
vp=$(grep -c '^PASS ' "$VMLOG"); vf=$(grep -c '^FAIL ' "$VMLOG"); vs=$(grep -c '^SKIP ' "$VMLOG")
vsummary=$(grep -c '^--- vm: ' "$VMLOG")
rm -f "$VMLOG"
npass=$((npass + vp)); nfail=$((nfail + vf))
if [ "$vmrc" = 125 ]; then fail "vm" "the VM did not boot or set up rxe (exit 125)"
elif [ "$vmrc" = 124 ]; then fail "vm" "timed out inside the VM"
elif [ "$vf" = 0 ] && [ "$vmrc" != 0 ]; then fail "vm" "tests.sh exited $vmrc"
elif [ "$vsummary" = 0 ]; then fail "vm" "tests.sh's summary line never arrived: its cases went uncounted"; fi
if [ "$vs" != 0 ]; then echo "$npass passed, $nfail failed, $vs skipped"; else echo "$npass passed, $nfail failed"; fi
[ $nfail = 0 ]
