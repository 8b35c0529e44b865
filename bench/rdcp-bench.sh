#!/usr/bin/env bash
# bench/rdcp-bench.sh - rdcp against scp, rsync and rdsend/rdrecv (+ tar) between two of the
# namespace hosts of tests/rdpipe (real sshds over veth + bridge; needs root).
#
#   bench/rdcp-bench.sh [FILE_MIB] [NFILES]     (default 2048 MiB and 5000 files of 1-64 KiB)
#   RDPIPE_BIN=dir   RUNS=n (best of n, default 2)
#
# Every tool copies from h1 to h2:
#   one big file:  rdcp h1:F h2:D (started on h0) | scp -O F h2:D (on h1; -O: the test sshds have no sftp) | rsync F h2:D (on h1)
#                  | rdrecv on h2 + rdsend on h1 (no ssh at all)
#   small files:   rdcp -r | tar c | rdsend  +  rdrecv | tar x | rsync -a | scp -r
# Times are wall clock of the whole command, ssh logins included (rdsend/rdrecv: none). The
# hosts share this machine's CPUs and page cache (the source is cached). Needs rsync
# (apt-get install rsync). Not a test: nothing asserts.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${RDPIPE_BIN:-$ROOT/bin}
case $BIN in /*) ;; *) BIN=$ROOT/$BIN ;; esac
FILE_MIB=${1:-2048}
NFILES=${2:-5000}
RUNS=${RUNS:-2}
. "$ROOT/tests/rdpipe/lib.sh"
command -v rsync >/dev/null || skip "no rsync (apt-get install rsync)"
[ -x "$BIN/rdcp" ] || skip "no $BIN/rdcp"
rdp_setup_or_skip

on() { local h=$1; shift; ip netns exec "$P$h" env PATH="$BIN:$PATH" "$@"; }
now() { date +%s.%N; }

head -c $((FILE_MIB << 20)) /dev/urandom > "$T/big"
mkdir -p "$T/tree"
(cd "$T/tree" && awk -v n="$NFILES" 'BEGIN { srand(11); for (i = 0; i < n; i++) printf "%d %d\n", i, 1024 + int(rand() * 63 * 1024) }' |
    while read -r i sz; do
        [ $((i % 200)) = 0 ] && mkdir -p "d$((i / 200))"
        head -c "$sz" /dev/urandom > "d$((i / 200))/f$i"
    done)
TREE_BYTES=$(du -sb --apparent-size "$T/tree" | cut -f1)
FILE_BYTES=$((FILE_MIB << 20))

clean() { rm -rf "$T/out"; mkdir -p "$T/out"; sync; }
# time_one CMD...: seconds of one run (the output dir is emptied first)
time_one() {
    clean
    local t0 t1
    t0=$(now)
    "$@" > "$T/err" 2>&1 || { echo "failed: $*" >&2; tail -3 "$T/err" >&2; echo "nan"; return; }
    t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
best() {
    local b=nan t
    for _ in $(seq "$RUNS"); do
        t=$(time_one "$@")
        [ "$t" = nan ] && continue
        if [ "$b" = nan ] || awk -v a="$t" -v b="$b" 'BEGIN { exit !(a < b) }'; then b=$t; fi
    done
    echo "$b"
}

KEY=benchkey-$$
rdcp_file() { on h0 rdcp --no-progress --ssh "$SSH" h1:"$T/big" h2:"$T/out/big"; }
scp_file() { on h1 scp -O -q -F "$CFG" "$T/big" h2:"$T/out/big"; }
rsync_file() { on h1 rsync --whole-file -e "ssh -F $CFG" "$T/big" h2:"$T/out/big"; }
rdsend_file() {
    on h2 rdrecv --timeout 60 7791 "$KEY" "$T/out/big" & local p=$!
    sleep 0.2
    on h1 rdsend "${ADDR[h2]}" 7791 "$KEY" "$T/big" && wait $p
}
rdcp_tree() { on h0 rdcp --no-progress -r --ssh "$SSH" h1:"$T/tree" h2:"$T/out/tree"; }
tar_tree() {
    on h2 bash -c "rdrecv --timeout 60 7792 $KEY | tar x -C $T/out" & local p=$!
    sleep 0.2
    on h1 bash -c "tar c -C $T tree | rdsend ${ADDR[h2]} 7792 $KEY" && wait $p
}
rsync_tree() { on h1 rsync -a --whole-file -e "ssh -F $CFG" "$T/tree" h2:"$T/out/"; }
scp_tree() { on h1 scp -O -q -r -F "$CFG" "$T/tree" h2:"$T/out/"; }

echo "rdcp bench: one $FILE_MIB MiB file; $NFILES files of 1-64 KiB ($((TREE_BYTES >> 20)) MiB); h1 -> h2; best of $RUNS; $(nproc) CPUs" >&2
declare -A R
for t in rdcp_file scp_file rsync_file rdsend_file rdcp_tree tar_tree rsync_tree scp_tree; do
    R[$t]=$(best $t)
    echo "  $t: ${R[$t]} s" >&2
done

row() {   # row LABEL TIME BYTES REF_TIME
    awk -v l="$1" -v t="$2" -v b="$3" -v r="$4" 'BEGIN {
        if (t == "nan") { printf "| %-28s | %9s | %9s | %12s |\n", l, "failed", "-", "-"; exit }
        printf "| %-28s | %9.2f | %9.1f | %12.2f |\n", l, t, b / t / 1e6, t / r }'
}
echo
echo "| one ${FILE_MIB} MiB file, h1 -> h2   | seconds   | MB/s      | time / rdcp  |"
echo "|------------------------------|-----------|-----------|--------------|"
row "rdcp" "${R[rdcp_file]}" $FILE_BYTES "${R[rdcp_file]}"
row "scp" "${R[scp_file]}" $FILE_BYTES "${R[rdcp_file]}"
row "rsync --whole-file" "${R[rsync_file]}" $FILE_BYTES "${R[rdcp_file]}"
row "rdsend/rdrecv (no ssh)" "${R[rdsend_file]}" $FILE_BYTES "${R[rdcp_file]}"
echo
echo "| $NFILES files of 1-64 KiB         | seconds   | MB/s      | time / rdcp  |"
echo "|------------------------------|-----------|-----------|--------------|"
row "rdcp -r" "${R[rdcp_tree]}" "$TREE_BYTES" "${R[rdcp_tree]}"
row "tar c | rdsend, rdrecv | tar x" "${R[tar_tree]}" "$TREE_BYTES" "${R[rdcp_tree]}"
row "rsync -a --whole-file" "${R[rsync_tree]}" "$TREE_BYTES" "${R[rdcp_tree]}"
row "scp -r" "${R[scp_tree]}" "$TREE_BYTES" "${R[rdcp_tree]}"
