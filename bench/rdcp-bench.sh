#!/usr/bin/env bash
# bench/rdcp-bench.sh - rdcp against scp, rsync and rdsend/rdrecv (+ tar) between two of the
# namespace hosts of tests/rdpipe (real sshds over veth + bridge; needs root).
#
#   bench/rdcp-bench.sh [FILE_MIB] [NFILES[,NFILES...]]   (default 2048 MiB, 5000 files of 1-64 KiB)
#   bench/rdcp-bench.sh 4096 20000,50000                  (the Lanes issue's sets)
#   FILE_KIB=1024-8192 bench/rdcp-bench.sh 0 400           (400 medium files of 1-8 MiB)
#   RDPIPE_BIN=dir   RUNS=n (best of n rounds, each running every tool once; default 2)   ONLY="rdcp_tree tar_tree ..." (a subset of
#   the runs named below; FILE_MIB=0 or NFILES=0 leaves that half out). The data lives in
#   the test directory under /tmp: it needs FILE_MIB x 2 + the trees' size x 2 free.
#   BASE_BIN=dir: also time the rdcp in dir (a build from before a change), in the same run
#   DEST=dir: where the copies are written (default: the test directory under /tmp). Mount it
#   before the run (the hosts' sshds see the mounts made before they start). This machine's
#   root ext4 has no journal, and without one ext4 checks every inode freed in the last
#   minutes one by one before reusing it (`recently_deleted`); a journaled ext4, the default
#   of mkfs.ext4 on a real server, does not: e.g. DEST=/mnt/x after
#   `truncate -s 12G /tmp/x.img && mkfs.ext4 -q /tmp/x.img && mount -o loop /tmp/x.img /mnt/x`
#   CPU=1: each rdcp run's agents start the tree roles through a wrapper that logs their CPU
#   time (/usr/bin/time), and rdsend and rdrecv run under it; the table gets CPU s per GB of
#   the sending and the receiving end (of the run with the best time)
#
# Every tool copies from h1 to h2:
#   one big file:  rdcp h1:F h2:D (started on h0) | the same with --no-sync | scp -O F h2:D (on
#                  h1; -O: the test sshds have no sftp) | rsync F h2:D (on h1) | rdrecv on h2 +
#                  rdsend on h1 (no ssh at all)
#   small files:   rdcp -r | rdcp -r --no-sync | tar c | rdsend  +  rdrecv | tar x | rsync -a |
#                  scp -r
# rdcp syncs the destination's filesystem before it exits 0 (syncfs), and rdrecv syncs the
# file it wrote (fdatasync); tar, rsync and scp do not. So rdcp is compared with rdsend/rdrecv
# at the same setting, and the --no-sync rows with tar, rsync and scp (in the tar pipe
# rdrecv writes to a pipe: nothing to sync). The ratio columns are the
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
DEST=${DEST:-$T}
[ -d "$DEST" ] && [ -w "$DEST" ] || skip "DEST=$DEST is not a writable directory"
trap 'rm -rf "$DEST"/out.*; cleanup' EXIT
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }
SETS=${NFILES//,/ }
[ "$FILE_MIB" -gt 0 ] && head -c $((FILE_MIB << 20)) /dev/urandom > "$T/big"
FILE_BYTES=$((FILE_MIB << 20))
# gentree N DIR: N files of FILE_KIB (default 1-64) KiB of random bytes, 200 to a directory
# (one process, not one per file: 50,000 files in seconds)
FILE_KIB=${FILE_KIB:-1-64}
KIB_LO=${FILE_KIB%-*} KIB_HI=${FILE_KIB#*-}
[[ $KIB_LO =~ ^[0-9]+$ && $KIB_HI =~ ^[0-9]+$ && $KIB_LO -ge 1 && $KIB_HI -ge $KIB_LO ]] ||
    { echo "FILE_KIB=$FILE_KIB: want LO-HI in KiB" >&2; exit 2; }
gentree() {
    mkdir -p "$2"
    (cd "$2" && perl -e 'srand(11); open(my $u, "<:raw", "/dev/urandom") or die "urandom: $!";
        my ($lo, $hi) = ($ARGV[1] * 1024, $ARGV[2] * 1024);
        for my $i (0 .. $ARGV[0] - 1) {
            my $d = "d" . int($i / 200);
            mkdir $d if $i % 200 == 0;
            my $sz = $lo + int(rand($hi - $lo));
            read($u, my $b, $sz) == $sz or die "urandom: $!";
            open(my $o, ">:raw", "$d/f$i") or die "$d/f$i: $!";
            print $o $b or die "$d/f$i: $!";
            close $o or die "$d/f$i: $!";
        }' "$1" "$KIB_LO" "$KIB_HI") || exit 1
}
declare -A TREE_BYTES
for n in $SETS; do
    [ "$n" -gt 0 ] || continue
    gentree "$n" "$T/tree$n"
    TREE_BYTES[$n]=$(du -sb --apparent-size "$T/tree$n" | cut -f1)
done
sync   # the data just written would otherwise be written back during the first rounds

# Every run writes into a new directory: the root filesystem here is ext4 without a journal,
# whose inode allocator skips inodes freed in the last 60 s (300 s while their table block is
# dirty) one by one; creating 20,000 files right after deleting 20,000 cost 5-20 s more, in
# every tool, depending on the order of the runs. So outputs are kept until a set's runs are
# done, then removed, synced and left to age for SETTLE seconds (default 61; 300 outlasts a
# dirty table block). SETTLE0=s: wait that long before the first set too (after a run that
# deleted many files).
clean() { OUTD=$(mktemp -d "$DEST/out.XXXXXX"); sync; }
settle() { rm -rf "$DEST"/out.*; sync; sleep "${SETTLE:-61}"; }
# time_one CMD...: seconds of one run (the output dir is emptied first); with CPU=1 also the
# user+sys seconds of the tree roles of that run: "SECONDS SEND_CPU RECV_CPU"
time_one() {
    clean
    local t0 t1
    rm -f "$T/cpu.log"
    t0=$(now)
    "$@" > "$T/err" 2>&1 || { echo "failed: $*" >&2; tail -3 "$T/err" >&2; echo "nan"; return; }
    t1=$(now)
    rm -f "$OUTD/big"   # 4 GiB per run would fill the disk; one inode does not slow the allocator
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
    [ "${CPU:-0}" = 1 ] && [ -s "$T/cpu.log" ] &&
        awk -F'|' '{ split($2, c, " "); if ($1 ~ /--tree-send|^rdsend /) s += c[2] + c[3]; if ($1 ~ /--tree-recv|^rdrecv /) r += c[2] + c[3] }
            END { printf " %.2f %.2f", s, r }' "$T/cpu.log"
}
# cpu_bin DIR: a copy of DIR's tools whose rdcp is a wrapper logging each role's CPU time
cpu_bin() {
    local d
    d="$T/cpu-$(echo "$1" | tr / _)"
    mkdir -p "$d"
    cp "$1/rdpipe" "$1/rdsend" "$1/rdrecv" "$d/" && cp "$1/rdcp" "$d/rdcp.real" || exit 1
    printf '#!/bin/sh\nexec /usr/bin/time -a -o %s -f "%%C|%%e %%U %%S" %s/rdcp.real "$@"\n' "$T/cpu.log" "$d" > "$d/rdcp"
    chmod +x "$d/rdcp"
    echo "$d"
}

KEY=benchkey-$$
RP=()   # --remote-path of the rdcp runs (CPU=1: the wrapper)
[ "${CPU:-0}" = 1 ] && RP=(--remote-path "$(cpu_bin "$BIN")/rdpipe")
rdcp_file() { on h0 rdcp "${RP[@]}" --no-progress --ssh "$SSH" h1:"$T/big" h2:"$OUTD/big"; }
rdcp_file_nosync() { on h0 rdcp "${RP[@]}" --no-progress --no-sync --ssh "$SSH" h1:"$T/big" h2:"$OUTD/big"; }
scp_file() { on h1 scp -O -q -F "$CFG" "$T/big" h2:"$OUTD/big"; }
rsync_file() { on h1 rsync --whole-file -e "ssh -F $CFG" "$T/big" h2:"$OUTD/big"; }
# listening PORT PID: wait until the receiver on h2 listens (it dies: fail). A poll, not a
# fixed sleep, which would count against the tar pipe's time (0.2 s did until 2026-11-26)
listening() {
    local i
    for i in $(seq 1000); do
        ip netns exec "${P}h2" ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.005
    done
    return 1
}
# rdrecv syncs the file before it confirms, as rdcp syncs; --no-sync on both for the other row
CPUT=()   # CPU=1: rdsend and rdrecv run under /usr/bin/time, logged as rdcp's roles are
[ "${CPU:-0}" = 1 ] && CPUT=(/usr/bin/time -a -o "$T/cpu.log" -f "%C|%e %U %S")
rdsend_file() {
    on h2 "${CPUT[@]}" rdrecv --timeout 120 "$@" 7791 "$KEY" "$OUTD/big" & local p=$!
    listening 7791 $p || { wait $p; return 1; }
    on h1 "${CPUT[@]}" rdsend "${ADDR[h2]}" 7791 "$KEY" "$T/big" && wait $p
}
rdsend_file_nosync() { rdsend_file --no-sync; }
TREE=tree   # the set being run: tree$N
BASE_BIN=${BASE_BIN:-}
case $BASE_BIN in /*|'') ;; *) BASE_BIN=$ROOT/$BASE_BIN ;; esac
BASE_RP=$BASE_BIN
[ "${CPU:-0}" = 1 ] && [ -n "$BASE_BIN" ] && BASE_RP=$(cpu_bin "$BASE_BIN")
base() { on h0 "$BASE_BIN/rdcp" --remote-path "$BASE_RP/rdpipe" "$@"; }
rdcp_file_base() { base --no-progress --ssh "$SSH" h1:"$T/big" h2:"$OUTD/big"; }
rdcp_file_nosync_base() { base --no-progress --no-sync --ssh "$SSH" h1:"$T/big" h2:"$OUTD/big"; }
rdcp_tree_base() { base --no-progress -r --ssh "$SSH" h1:"$T/$TREE" h2:"$OUTD/$TREE"; }
rdcp_tree_nosync_base() { base --no-progress -r --no-sync --ssh "$SSH" h1:"$T/$TREE" h2:"$OUTD/$TREE"; }
BASE_RUNS=
[ -n "$BASE_BIN" ] && BASE_RUNS=_base
rdcp_tree() { on h0 rdcp "${RP[@]}" --no-progress -r --ssh "$SSH" h1:"$T/$TREE" h2:"$OUTD/$TREE"; }
rdcp_tree_nosync() { on h0 rdcp "${RP[@]}" --no-progress -r --no-sync --ssh "$SSH" h1:"$T/$TREE" h2:"$OUTD/$TREE"; }
tar_tree() {
    on h2 bash -c "rdrecv --timeout 120 7792 $KEY | tar x -C $OUTD" & local p=$!
    listening 7792 $p || { wait $p; return 1; }
    on h1 bash -c "tar c -C $T $TREE | rdsend ${ADDR[h2]} 7792 $KEY" && wait $p
}
rsync_tree() { on h1 rsync -a --whole-file -e "ssh -F $CFG" "$T/$TREE" h2:"$OUTD/"; }
scp_tree() { on h1 scp -O -q -r -F "$CFG" "$T/$TREE" h2:"$OUTD/"; }

echo "rdcp bench: one $FILE_MIB MiB file; files of $FILE_KIB KiB: $SETS; h1 -> h2; best of $RUNS; $(nproc) CPUs; ${ONLY:-all runs}" >&2
declare -A R
# rounds SUFFIX RUN...: RUNS rounds, each running every RUN once in turn (interleaved: load from
# other jobs falls on all of them alike); R[RUN SUFFIX] = the best
rounds() {
    local sfx=$1 t v; shift
    for t in "$@"; do want $t && R[$t$sfx]=nan || R[$t$sfx]=skipped; done
    for _ in $(seq "$RUNS"); do
        for t in "$@"; do
            want $t || continue
            v=$(time_one $t)
            echo "  $t${sfx:+ ($sfx files)}: $v s" >&2
            [ "$v" = nan ] && continue
            if [ "${R[$t$sfx]}" = nan ] || awk -v a="${v%% *}" -v b="${R[$t$sfx]%% *}" 'BEGIN { exit !(a < b) }'; then R[$t$sfx]=$v; fi
        done
    done
}
if [ "$FILE_MIB" -gt 0 ]; then
    rounds "" rdcp_file rdcp_file_nosync ${BASE_RUNS:+rdcp_file_base rdcp_file_nosync_base} scp_file rsync_file rdsend_file rdsend_file_nosync
    settle
fi
[ -n "${SETTLE0:-}" ] && { sync; sleep "$SETTLE0"; }
for n in $SETS; do
    [ "$n" -gt 0 ] || continue
    TREE=tree$n
    # the source is meant to be cached; this machine's DAMON pages out what was not touched
    # for a minute (a settle), so it is read once first (cat: tar skips reading into /dev/null)
    find "$T/$TREE" -type f -exec cat {} + > /dev/null
    rounds "$n" rdcp_tree rdcp_tree_nosync ${BASE_RUNS:+rdcp_tree_base rdcp_tree_nosync_base} tar_tree rsync_tree scp_tree
    [ "$n" = "${SETS##* }" ] || settle   # not after the last set
done

# row LABEL TIME BYTES REF1 REF2: seconds, MB/s, REF1 / TIME, REF2 / TIME (TIME and the REFs:
# "SECONDS [SEND_CPU RECV_CPU]"); with CPU=1 also each end's CPU seconds per GB
row() {
    awk -v l="$1" -v tt="$2" -v b="$3" -v r1="$4" -v r2="$5" -v cpu="${CPU:-0}" '
        function first(x) { split(x, a, " "); return a[1] }
        function ratio(r) { r = first(r); return (r == "nan" || r == "skipped" || r == "" || r == "-") ? "-" : sprintf("%.2f", r / t) }
        BEGIN {
        n = split(tt, f, " "); t = f[1]; gb = b / 1e9
        x = cpu != 1 ? "" : n == 3 ? sprintf(" %8.2f | %8.2f |", f[2] / gb, f[3] / gb) : sprintf(" %8s | %8s |", "-", "-")
        if (t == "nan" || t == "skipped") { printf "| %-32s | %8s | %8s | %10s | %10s |%s\n", l, t == "nan" ? "failed" : "skipped", "-", "-", "-", x; exit }
        printf "| %-32s | %8.2f | %8.1f | %10s | %10s |%s\n", l, t, b / t / 1e6, ratio(r1), ratio(r2), x }'
}
# hdr TITLE REF1 REF2: the table's head
hdr() {
    if [ "${CPU:-0}" = 1 ]; then
        printf "| %-32s | %8s | %8s | %10s | %10s | %8s | %8s |\n" "$1" seconds MB/s "$2" "$3" "send s/GB" "recv s/GB"
        echo "|----------------------------------|----------|----------|------------|------------|----------|----------|"
    else
        printf "| %-32s | %8s | %8s | %10s | %10s |\n" "$1" seconds MB/s "$2" "$3"
        echo "|----------------------------------|----------|----------|------------|------------|"
    fi
}
if [ "$FILE_MIB" -gt 0 ]; then
    echo
    # rdsend / x: against rdsend/rdrecv with the same sync (rdcp, rdrecv: synced; the
    # --no-sync rows, scp and rsync: not)
    hdr "one $FILE_MIB MiB file, h1 -> h2" "rdsend / x" "rsync / x"
    for t in rdcp_file:"rdcp" rdcp_file_nosync:"rdcp --no-sync" \
             ${BASE_RUNS:+rdcp_file_base:"rdcp (BASE_BIN)" rdcp_file_nosync_base:"rdcp --no-sync (BASE_BIN)"} \
             scp_file:"scp" rsync_file:"rsync --whole-file" \
             rdsend_file:"rdsend/rdrecv (no ssh)" rdsend_file_nosync:"rdsend/rdrecv --no-sync"; do
        ref=rdsend_file_nosync
        case ${t%%:*} in rdcp_file|rdcp_file_base|rdsend_file) ref=rdsend_file ;; esac
        row "${t#*:}" "${R[${t%%:*}]}" $FILE_BYTES "${R[$ref]}" "${R[rsync_file]}"
    done
fi
for n in $SETS; do
    [ "$n" -gt 0 ] || continue
    echo
    hdr "$n files of $FILE_KIB KiB ($((${TREE_BYTES[$n]} >> 20)) MiB)" "tar / x" "rsync / x"
    for t in rdcp_tree:"rdcp -r" rdcp_tree_nosync:"rdcp -r --no-sync" \
             ${BASE_RUNS:+rdcp_tree_base:"rdcp -r (BASE_BIN)" rdcp_tree_nosync_base:"rdcp -r --no-sync (BASE_BIN)"} \
             tar_tree:"tar c | rdsend, rdrecv | tar x" \
             rsync_tree:"rsync -a --whole-file" scp_tree:"scp -r"; do
        row "${t#*:}" "${R[${t%%:*}$n]}" "${TREE_BYTES[$n]}" "${R[tar_tree$n]}" "${R[rsync_tree$n]}"
    done
done
