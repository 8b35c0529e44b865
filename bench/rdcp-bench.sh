#!/usr/bin/env bash
# bench/rdcp-bench.sh - rdcp against scp, rsync and rdsend/rdrecv (+ tar) between two of the
# namespace hosts of tests/rdpipe (real sshds over veth + bridge; needs root).
#
#   bench/rdcp-bench.sh [FILE_MIB] [NFILES[,NFILES...]]   (default 2048 MiB, 5000 files of 1-64 KiB)
#   bench/rdcp-bench.sh 4096 20000,50000                  (the Lanes issue's sets)
#   RDPIPE_BIN=dir   RUNS=n (best of n, default 2)   ONLY="rdcp_tree tar_tree ..." (a subset of
#   the runs named below; FILE_MIB=0 or NFILES=0 leaves that half out). The data lives in
#   the test directory under /tmp: it needs FILE_MIB x 2 + the trees' size x 2 free.
#   BASE_BIN=dir: also time the rdcp in dir (a build from before a change), in the same run
#
# Every tool copies from h1 to h2:
#   one big file:  rdcp h1:F h2:D (started on h0) | the same with --no-sync | scp -O F h2:D (on
#                  h1; -O: the test sshds have no sftp) | rsync F h2:D (on h1) | rdrecv on h2 +
#                  rdsend on h1 (no ssh at all)
#   small files:   rdcp -r | rdcp -r --no-sync | tar c | rdsend  +  rdrecv | tar x | rsync -a |
#                  scp -r
# rdcp syncs the destination's filesystem before it exits 0 (syncfs); tar, rsync, scp and
# rdrecv do not, so the --no-sync rows are the like-for-like ones. The ratio columns are the
# other tool's time over this row's time: above 1, this row was faster.
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

ONLY=${ONLY:-}
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }
SETS=${NFILES//,/ }
[ "$FILE_MIB" -gt 0 ] && head -c $((FILE_MIB << 20)) /dev/urandom > "$T/big"
FILE_BYTES=$((FILE_MIB << 20))
# gentree N DIR: N files of 1-64 KiB of random bytes, 200 to a directory (one process, not one
# per file: 50,000 files in seconds)
gentree() {
    mkdir -p "$2"
    (cd "$2" && perl -e 'srand(11); open(my $u, "<:raw", "/dev/urandom") or die "urandom: $!";
        for my $i (0 .. $ARGV[0] - 1) {
            my $d = "d" . int($i / 200);
            mkdir $d if $i % 200 == 0;
            my $sz = 1024 + int(rand(63 * 1024));
            read($u, my $b, $sz) == $sz or die "urandom: $!";
            open(my $o, ">:raw", "$d/f$i") or die "$d/f$i: $!";
            print $o $b or die "$d/f$i: $!";
            close $o or die "$d/f$i: $!";
        }' "$1") || exit 1
}
declare -A TREE_BYTES
for n in $SETS; do
    [ "$n" -gt 0 ] || continue
    gentree "$n" "$T/tree$n"
    TREE_BYTES[$n]=$(du -sb --apparent-size "$T/tree$n" | cut -f1)
done

# Every run writes into a new directory: the root filesystem here is ext4 without a journal,
# whose inode allocator skips inodes freed in the last 60 s (300 s while their table block is
# dirty) one by one; creating 20,000 files right after deleting 20,000 cost 5-20 s more, in
# every tool, depending on the order of the runs. So outputs are kept until a set's runs are
# done, then removed, synced and left to age for SETTLE seconds (default 61).
clean() { OUTD=$(mktemp -d "$T/out.XXXXXX"); sync; }
settle() { rm -rf "$T"/out.*; sync; sleep "${SETTLE:-61}"; }
# time_one CMD...: seconds of one run (the output dir is emptied first)
time_one() {
    clean
    local t0 t1
    t0=$(now)
    "$@" > "$T/err" 2>&1 || { echo "failed: $*" >&2; tail -3 "$T/err" >&2; echo "nan"; return; }
    t1=$(now)
    rm -f "$OUTD/big"   # 4 GiB per run would fill the disk; one inode does not slow the allocator
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
rdcp_file() { on h0 rdcp --no-progress --ssh "$SSH" h1:"$T/big" h2:"$OUTD/big"; }
rdcp_file_nosync() { on h0 rdcp --no-progress --no-sync --ssh "$SSH" h1:"$T/big" h2:"$OUTD/big"; }
scp_file() { on h1 scp -O -q -F "$CFG" "$T/big" h2:"$OUTD/big"; }
rsync_file() { on h1 rsync --whole-file -e "ssh -F $CFG" "$T/big" h2:"$OUTD/big"; }
rdsend_file() {
    on h2 rdrecv --timeout 120 7791 "$KEY" "$OUTD/big" & local p=$!
    sleep 0.2
    on h1 rdsend "${ADDR[h2]}" 7791 "$KEY" "$T/big" && wait $p
}
TREE=tree   # the set being run: tree$N
BASE_BIN=${BASE_BIN:-}
case $BASE_BIN in /*|'') ;; *) BASE_BIN=$ROOT/$BASE_BIN ;; esac
base() { on h0 "$BASE_BIN/rdcp" --remote-path "$BASE_BIN/rdpipe" "$@"; }
rdcp_file_base() { base --no-progress --ssh "$SSH" h1:"$T/big" h2:"$OUTD/big"; }
rdcp_file_nosync_base() { base --no-progress --no-sync --ssh "$SSH" h1:"$T/big" h2:"$OUTD/big"; }
rdcp_tree_base() { base --no-progress -r --ssh "$SSH" h1:"$T/$TREE" h2:"$OUTD/$TREE"; }
rdcp_tree_nosync_base() { base --no-progress -r --no-sync --ssh "$SSH" h1:"$T/$TREE" h2:"$OUTD/$TREE"; }
BASE_RUNS=
[ -n "$BASE_BIN" ] && BASE_RUNS=_base
rdcp_tree() { on h0 rdcp --no-progress -r --ssh "$SSH" h1:"$T/$TREE" h2:"$OUTD/$TREE"; }
rdcp_tree_nosync() { on h0 rdcp --no-progress -r --no-sync --ssh "$SSH" h1:"$T/$TREE" h2:"$OUTD/$TREE"; }
tar_tree() {
    on h2 bash -c "rdrecv --timeout 120 7792 $KEY | tar x -C $OUTD" & local p=$!
    sleep 0.2
    on h1 bash -c "tar c -C $T $TREE | rdsend ${ADDR[h2]} 7792 $KEY" && wait $p
}
rsync_tree() { on h1 rsync -a --whole-file -e "ssh -F $CFG" "$T/$TREE" h2:"$OUTD/"; }
scp_tree() { on h1 scp -O -q -r -F "$CFG" "$T/$TREE" h2:"$OUTD/"; }

echo "rdcp bench: one $FILE_MIB MiB file; files of 1-64 KiB: $SETS; h1 -> h2; best of $RUNS; $(nproc) CPUs; ${ONLY:-all runs}" >&2
declare -A R
if [ "$FILE_MIB" -gt 0 ]; then
    for t in rdcp_file rdcp_file_nosync ${BASE_RUNS:+rdcp_file_base rdcp_file_nosync_base} scp_file rsync_file rdsend_file; do
        want $t || { R[$t]=skipped; continue; }
        R[$t]=$(best $t)
        echo "  $t: ${R[$t]} s" >&2
    done
    settle
fi
for n in $SETS; do
    [ "$n" -gt 0 ] || continue
    TREE=tree$n
    for t in rdcp_tree rdcp_tree_nosync ${BASE_RUNS:+rdcp_tree_base rdcp_tree_nosync_base} tar_tree rsync_tree scp_tree; do
        want $t || { R[$t$n]=skipped; continue; }
        R[$t$n]=$(best $t)
        echo "  $t ($n files): ${R[$t$n]} s" >&2
    done
    [ "$n" = "${SETS##* }" ] || settle   # not after the last set
done

# row LABEL TIME BYTES REF1 REF2: seconds, MB/s, REF1 / TIME, REF2 / TIME
row() {
    awk -v l="$1" -v t="$2" -v b="$3" -v r1="$4" -v r2="$5" 'function ratio(r) {
            return (r == "nan" || r == "skipped" || r == "" || r == "-") ? "-" : sprintf("%.2f", r / t) }
        BEGIN {
        if (t == "nan" || t == "skipped") { printf "| %-32s | %8s | %8s | %10s | %10s |\n", l, t == "nan" ? "failed" : "skipped", "-", "-", "-"; exit }
        printf "| %-32s | %8.2f | %8.1f | %10s | %10s |\n", l, t, b / t / 1e6, ratio(r1), ratio(r2) }'
}
if [ "$FILE_MIB" -gt 0 ]; then
    echo
    printf "| %-32s | %8s | %8s | %10s | %10s |\n" "one $FILE_MIB MiB file, h1 -> h2" seconds MB/s "rdsend / x" "rsync / x"
    echo "|----------------------------------|----------|----------|------------|------------|"
    for t in rdcp_file:"rdcp" rdcp_file_nosync:"rdcp --no-sync" \
             ${BASE_RUNS:+rdcp_file_base:"rdcp (BASE_BIN)" rdcp_file_nosync_base:"rdcp --no-sync (BASE_BIN)"} \
             scp_file:"scp" rsync_file:"rsync --whole-file" \
             rdsend_file:"rdsend/rdrecv (no ssh)"; do
        row "${t#*:}" "${R[${t%%:*}]}" $FILE_BYTES "${R[rdsend_file]}" "${R[rsync_file]}"
    done
fi
for n in $SETS; do
    [ "$n" -gt 0 ] || continue
    echo
    printf "| %-32s | %8s | %8s | %10s | %10s |\n" "$n files of 1-64 KiB ($((${TREE_BYTES[$n]} >> 20)) MiB)" seconds MB/s "tar / x" "rsync / x"
    echo "|----------------------------------|----------|----------|------------|------------|"
    for t in rdcp_tree:"rdcp -r" rdcp_tree_nosync:"rdcp -r --no-sync" \
             ${BASE_RUNS:+rdcp_tree_base:"rdcp -r (BASE_BIN)" rdcp_tree_nosync_base:"rdcp -r --no-sync (BASE_BIN)"} \
             tar_tree:"tar c | rdsend, rdrecv | tar x" \
             rsync_tree:"rsync -a --whole-file" scp_tree:"scp -r"; do
        row "${t#*:}" "${R[${t%%:*}$n]}" "${TREE_BYTES[$n]}" "${R[tar_tree$n]}" "${R[rsync_tree$n]}"
    done
done
