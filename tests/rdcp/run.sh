#!/usr/bin/env bash
# tests/rdcp/run.sh - rdcp across real hosts: the network namespaces + sshds of
# tests/rdpipe/lib.sh (h0 runs the initiator; h1 h2 h3 are the other hosts). Namespaces share
# the filesystem, so "remote" trees are directories in the scratch dir, compared directly.
#
#   tests/rdcp/run.sh           all cases (about a minute and a half), then tests/rdcp/hostile.sh
#   RDCP_MANY=20000             how many small files in the many-files case (default 2000)
#   RDPIPE_BIN=dir              binaries to test (default: bin/ of the repo)
#   RDPIPE_KEEP=1               keep the scratch directory
#
# One line per case ("skip NAME: why" for one that cannot run here), then "N passed, N failed"
# (", N skipped" when some were); exit 0 iff none failed, 77 if it cannot run at all.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${RDPIPE_BIN:-$ROOT/bin}
case $BIN in /*) ;; *) BIN=$ROOT/$BIN ;; esac
[ -x "$BIN/rdcp" ] || { echo "skip: no $BIN/rdcp (run make)"; exit 77; }

. "$ROOT/tests/rdpipe/lib.sh"

PASS=0 FAILN=0 SKIPN=0
ok() { echo "ok   $1"; PASS=$((PASS + 1)); }
bad() { echo "FAIL $1: $2"; FAILN=$((FAILN + 1)); }
skip_case() { echo "skip $1: $2"; SKIPN=$((SKIPN + 1)); }
check() {   # check NAME CONDITION-RESULT(0/1) DETAIL: also verifies that nothing was left running
    local s
    if [ "$2" != 0 ]; then bad "$1" "$3"; return; fi
    if ! s=$(no_strays); then bad "$1" "processes left: $(echo "$s" | tr '\n' ';')"; return; fi
    ok "$1"
}
rdcp_h0() { on_h0 timeout 120 rdcp --no-progress --ssh "$SSH" "$@"; }

# the tree's content and metadata, NUL-safe: types, modes, sizes, link targets (+ mtimes with -t)
meta() {   # meta DIR [t]
    local fmt='%P\0%y %m %s %l\0'
    [ "${2:-}" = t ] && fmt='%P\0%y %m %s %l %T@\0'
    (cd "$1" && find . -mindepth 1 ! -type d -printf "$fmt" && find . -mindepth 1 -type d -printf "%P\0%y %m ${2:+%T@}\0") |
        tr '\0\n' '\n?' | paste -d' ' - - | LC_ALL=C sort
}
same_tree() {   # same_tree A B [t]: contents (diff -r) and metadata
    diff -r --no-dereference "$1" "$2" > "$T/diff.out" 2>&1 || { echo "diff: $(head -c 300 "$T/diff.out")"; return 1; }
    diff <(meta "$1" "${3:-}") <(meta "$2" "${3:-}") > "$T/meta.out" || { echo "meta: $(head -c 300 "$T/meta.out")"; return 1; }
    return 0
}
no_temps() { [ -z "$(find "$1" -name '.rdcp.*' 2>/dev/null | head -1)" ]; }

# a small tmpfs that fills up; mounted before the hosts start so that their mount namespaces
# (copies made by `ip netns exec`) have it too
mkdir -p "$T/full" "$T/full2" "$T/full3"
mount -t tmpfs -o size=8m rdcp-test "$T/full" || skip "cannot mount a tmpfs"
mount -t tmpfs -o size=4m rdcp-test2 "$T/full2" || { umount "$T/full"; skip "cannot mount a tmpfs"; }
mount -t tmpfs -o size=8m rdcp-test3 "$T/full3" || { umount "$T/full" "$T/full2"; skip "cannot mount a tmpfs"; }
trap 'umount "$T/full" "$T/full2" "$T/full3" 2>/dev/null; cleanup' EXIT
rdp_setup_or_skip

# ---------------------------------------------------------------------------------------
CH=$((4 << 20))
mkdir -p "$T/files"
for n in 0 1 4095 $((CH - 1)) $CH $((CH + 1)) $((1 << 20)) $(((1 << 20) - 1)) $(((1 << 20) + 1)); do
    head -c $n /dev/urandom > "$T/files/f$n"   # the engine's chunk: 4 MiB (RDMA), 1 MiB (TCP)
done
head -c $((48 << 20)) /dev/urandom > "$T/big.img"

# the zoo: odd names, links, empty dirs, deep nesting
Z=$T/zoo
mkdir -p "$Z/empty" "$Z/sub/empty2" "$Z/-leading dash"
echo one > "$Z/a file with spaces"
echo two > "$Z/-n"
printf 'three' > "$Z/new
line"
printf 'four' > "$Z/$(printf 'bad\xff\xfeutf8')"
printf 'five' > "$Z/back\\slash 'quote\" \$x *"
echo six > "$Z/-leading dash/--"
echo tab > "$Z/$(printf 'tab\there')"
ln -s "a file with spaces" "$Z/link"
ln -s /nonexistent/dangling "$Z/dangling"
ln -s sub "$Z/dirlink"
echo hard > "$Z/sub/h1"
ln "$Z/sub/h1" "$Z/h2"
ln "$Z/sub/h1" "$Z/sub/empty2/../h3"
d=$Z/deep
for i in $(seq 40); do d=$d/d$i; done
mkdir -p "$d" && echo bottom > "$d/file"
cp "$T/files/f$CH" "$Z/sub/chunk"
chmod 0750 "$Z/sub"; chmod 0604 "$Z/-n"; chmod 0755 "$Z/a file with spaces"
chown 1234:5678 "$Z/-n"; chown -h 4321:8765 "$Z/link"
touch -d '2001-02-03 04:05:06.789' "$Z/-n" "$Z/sub/h1"
touch -h -d '2002-01-01' "$Z/link"
touch -d '2003-01-01' "$Z/empty" "$Z/sub"

# ---------------------------------------------------------------------------------------
name="local -> remote: one file (48 MiB), -v reports bytes"
mkdir -p "$T/d1"
rdcp_h0 -v big.img h1:"$T/d1/big.img" 2> "$T/err"; rc=$?
r=1; [ $rc = 0 ] && cmp -s "$T/big.img" "$T/d1/big.img" && grep -q 'copied' "$T/err" && no_temps "$T/d1" && r=0
check "$name" $r "rc=$rc $(tail -2 "$T/err" | tr '\n' ' ')"

name="local -> remote: sizes 0 1 4095 and 1 MiB / 4 MiB chunks -1 +0 +1, several sources into a directory"
mkdir -p "$T/d2"
rdcp_h0 "$T"/files/* h1:"$T/d2" 2> "$T/err"; rc=$?
r=1; [ $rc = 0 ] && same_tree "$T/files" "$T/d2" > "$T/why" && r=0
check "$name" $r "rc=$rc $(cat "$T/why" "$T/err" | head -3 | tr '\n' ' ')"

name="files of /proc and /sys (a size of 0, or 4096 for one line): what cat reads, both ways"
# their size says nothing of what they hold; the sender reads them to their end, as cp does
mkdir -p "$T/ps1" "$T/ps-want"
P1=/proc/version P2=/sys/devices/system/cpu/online TOPO=/sys/devices/system/cpu/cpu0/topology
cat $P1 > "$T/ps-want/version"; cat $P2 > "$T/ps-want/online"
rdcp_h0 $P1 $P2 h1:"$T/ps1" 2> "$T/err"; rc1=$?
rdcp_h0 -r h1:$TOPO "$T/ps-topo" 2>> "$T/err"; rc2=$?
r=1; [ $rc1 = 0 ] && [ $rc2 = 0 ] && diff -r "$T/ps-want" "$T/ps1" > "$T/why" 2>&1 && [ -s "$T/ps1/version" ] &&
    (cd $TOPO && for f in *; do [ -f "$f" ] && [ -r "$f" ] || continue; cat "$f" | cmp -s - "$T/ps-topo/$f" || { echo "differs: $f"; exit 1; }; done) >> "$T/why" && r=0
check "$name" $r "rc=$rc1/$rc2 $(cat "$T/why" "$T/err" | head -3 | tr '\n' ' ')"

name="a host ssh cannot reach: exit 255, 'cannot log in'; no rdpipe there: 'cannot start the agent'"
rdcp_h0 "$T/files/f1" nosuchhost.invalid:"$T/nowhere" 2> "$T/err"; rc1=$?
rdcp_h0 --remote-path /nonexistent/rdpipe "$T/files/f1" h1:"$T/nowhere" 2> "$T/err2"; rc2=$?
r=1; [ $rc1 = 255 ] && [ $rc2 = 255 ] && [ ! -e "$T/nowhere" ] &&
    grep -q "^rdcp: nosuchhost.invalid: cannot log in (ssh exited with status 255; see its message above)$" "$T/err" &&
    grep -q "^rdcp: h1: cannot start the agent (ssh exited with status 127; is rdpipe on the PATH there? see --remote-path)$" "$T/err2" && r=0
check "$name" $r "rc=$rc1/$rc2 $(cat "$T/err" "$T/err2" | head -4 | tr '\n' ' ')"

name="remote -> local: -a the zoo (names, symlinks, dangling, hard links, empty dirs, depth 40, owners)"
rdcp_h0 -a h1:"$T/zoo" "$T/zoo-copy" 2> "$T/err"; rc=$?
r=1; [ $rc = 0 ] && same_tree "$T/zoo" "$T/zoo-copy" t > "$T/why" &&
    [ "$(stat -c %i "$T/zoo-copy/sub/h1")" = "$(stat -c %i "$T/zoo-copy/h2")" ] &&
    [ "$(stat -c %i "$T/zoo-copy/sub/h1")" = "$(stat -c %i "$T/zoo-copy/sub/h3")" ] &&
    [ -L "$T/zoo-copy/dangling" ] && [ "$(stat -c %h "$T/zoo-copy/sub/h1")" = 3 ] &&
    [ "$(stat -c %u:%g "$T/zoo-copy/-n" "$T/zoo-copy/link")" = "$(printf '1234:5678\n4321:8765')" ] && r=0
check "$name" $r "rc=$rc $(cat "$T/why" "$T/err" | head -3 | tr '\n' ' ')"

name="remote -> remote: h1 -> h2 directly, -r into an existing dir makes dst/NAME"
mkdir -p "$T/d3"
rdcp_h0 -v -a h1:"$T/zoo" h2:"$T/d3" 2> "$T/err"; rc=$?
r=1; [ $rc = 0 ] && same_tree "$T/zoo" "$T/d3/zoo" t > "$T/why" && grep -q "h1 -> h2 at ${ADDR[h2]}" "$T/err" && r=0
check "$name" $r "rc=$rc $(cat "$T/why" "$T/err" | head -3 | tr '\n' ' ')"

name="--encrypt --compress --lanes 2: remote -> remote -a the zoo and a 24 MiB file (half zeros, read by the lanes) identical, both ends' roles told"
# the agents start the roles through this rdcp, which logs their argv
mkdir -p "$T/alt-enc" "$T/d-enc"
cp "$BIN/rdpipe" "$T/alt-enc/"
printf '#!/bin/sh\necho "$*" >> "%s"\nexec "%s" "$@"\n' "$T/alt-enc/argv.log" "$BIN/rdcp" > "$T/alt-enc/rdcp"
chmod +x "$T/alt-enc/rdcp"
{ head -c $((12 << 20)) /dev/zero; head -c $((12 << 20)) "$T/big.img"; } > "$T/mixed.img"
rdcp_h0 --remote-path "$T/alt-enc/rdpipe" --encrypt --compress --lanes 2 -a h1:"$T/zoo" h1:"$T/mixed.img" h2:"$T/d-enc" 2> "$T/err"; rc=$?
r=1; [ $rc = 0 ] && same_tree "$T/zoo" "$T/d-enc/zoo" t > "$T/why" && cmp -s "$T/mixed.img" "$T/d-enc/mixed.img" &&
    grep -q -- "--tree-send .*--encrypt --compress=auto --lanes=2" "$T/alt-enc/argv.log" &&
    grep -q -- "--tree-recv .*--encrypt --compress=auto --lanes=2" "$T/alt-enc/argv.log" && r=0
check "$name" $r "rc=$rc $(cat "$T/why" "$T/err" "$T/alt-enc/argv.log" | head -5 | tr '\n' ' ')"

name="cp -r semantics: into a missing dst makes dst; 'src/' puts the contents into dst"
rdcp_h0 -r h1:"$T/zoo/sub" h2:"$T/d4" 2> "$T/err"; rc1=$?
mkdir -p "$T/d5"; rdcp_h0 -r h1:"$T/zoo/sub/" h2:"$T/d5" 2>> "$T/err"; rc2=$?
r=1; [ $rc1 = 0 ] && [ $rc2 = 0 ] && diff -r "$T/zoo/sub" "$T/d4" >/dev/null && diff -r "$T/zoo/sub" "$T/d5" >/dev/null && r=0
check "$name" $r "rc=$rc1/$rc2 $(head -3 "$T/err" | tr '\n' ' ')"

MANY=${RDCP_MANY:-2000}
name="$MANY small files (1 B - 64 KiB) in $((MANY / 100)) dirs, remote -> remote"
mkdir -p "$T/many"
(cd "$T/many" && for i in $(seq 0 $((MANY - 1))); do
    [ $((i % 100)) = 0 ] && mkdir -p "d$((i / 100))"
    echo "$i"; done | awk -v n="$MANY" 'BEGIN{srand(7)} {printf "%s %d\n", $1, 1 + int(rand() * 65535)}' |
    while read -r i sz; do head -c "$sz" /dev/urandom > "d$((i / 100))/f$i"; done)
t0=$(date +%s.%N)
rdcp_h0 -r h1:"$T/many" h2:"$T/many-copy" 2> "$T/err"; rc=$?
t1=$(date +%s.%N)
r=1; [ $rc = 0 ] && same_tree "$T/many" "$T/many-copy" > "$T/why" && r=0
check "$name ($(echo "$t1 - $t0" | bc | cut -c1-5) s)" $r "rc=$rc $(cat "$T/why" "$T/err" | head -3 | tr '\n' ' ')"

name="sparse: 1 GiB with 1 MiB of data keeps its holes (du), remote -> local"
mkdir -p "$T/sp"
truncate -s 1G "$T/sp/sparse"
head -c $((512 << 10)) /dev/urandom | dd of="$T/sp/sparse" bs=1M seek=100 conv=notrunc status=none
head -c $((512 << 10)) /dev/urandom | dd of="$T/sp/sparse" bs=1M seek=700 conv=notrunc status=none
rdcp_h0 h1:"$T/sp/sparse" "$T/sparse-copy" 2> "$T/err"; rc=$?
du1=$(du -k "$T/sp/sparse" | cut -f1); du2=$(du -k "$T/sparse-copy" | cut -f1)
r=1; [ $rc = 0 ] && cmp -s "$T/sp/sparse" "$T/sparse-copy" && [ "$du2" -le $((du1 + 64)) ] && r=0
check "$name (du $du1 K -> $du2 K)" $r "rc=$rc du $du1 $du2 $(head -2 "$T/err" | tr '\n' ' ')"

name="--lanes 3 --streams 2: both ends run 3 lanes over 2 connections (-vv), and big files read by the lanes arrive whole: random sizes about the 8 MiB where they start, the 48 MiB one, the sparse 1 GiB"
mkdir -p "$T/lanes-src"
for n in $((8 << 20)) $(((8 << 20) - 1)) $(((8 << 20) + 1)) $(((8 << 20) + RANDOM * 97)) $(((9 << 20) + RANDOM * 131)) $(((20 << 20) + RANDOM))
do head -c "$n" /dev/urandom > "$T/lanes-src/f$n"; done
cp "$T/big.img" "$T/lanes-src/"; cp --sparse=always "$T/sp/sparse" "$T/lanes-src/"
# 24 MiB with 4 KiB of data every MiB (parts read by the reader) and one 1 MiB extent (the lanes')
truncate -s $((24 << 20)) "$T/lanes-src/frag"
for i in $(seq 0 23); do head -c 4096 /dev/urandom | dd of="$T/lanes-src/frag" bs=4096 seek=$((i * 256 + RANDOM % 200)) conv=notrunc status=none; done
head -c $((1 << 20)) /dev/urandom | dd of="$T/lanes-src/frag" bs=1M seek=9 conv=notrunc status=none
rdcp_h0 -vv --lanes 3 --streams 2 -r h1:"$T/lanes-src" h2:"$T/lanes-dst" 2> "$T/err"; rc=$?
r=1; [ $rc = 0 ] && same_tree "$T/lanes-src" "$T/lanes-dst" > "$T/why" &&
    grep -q "h1: sending tree to .* over tcp, 2 streams .*; lanes 3 (--lanes)" "$T/err" &&
    grep -q "h2: receiving from .* over tcp, 2 streams .*; lanes 3 (--lanes)" "$T/err" &&
    grep -q "^rdcp: .* copied in .* over tcp, 2 streams; " "$T/err" &&
    [ "$(du -k "$T/lanes-dst/sparse" | cut -f1)" -le 1100 ] && [ "$(du -k "$T/lanes-dst/frag" | cut -f1)" -le 1300 ] && r=0
check "$name" $r "rc=$rc $(cat "$T/why" | head -3) $(grep -e lanes -e rdcp "$T/err" | head -5 | tr '\n' ' ')"

name="--lanes 0, --lanes 65, --streams 17: usage errors naming the value, exit 1"
rdcp_h0 --lanes 0 big.img h1:"$T/nolanes" 2> "$T/err"; rc1=$?
rdcp_h0 --lanes 65 big.img h1:"$T/nolanes" 2>> "$T/err"; rc2=$?
rdcp_h0 --streams 17 big.img h1:"$T/nolanes" 2>> "$T/err"; rc3=$?
r=1; [ $rc1 = 1 ] && [ $rc2 = 1 ] && [ $rc3 = 1 ] && [ "$(cat "$T/err")" = "rdcp: --lanes must be from 1 to 64, not '0'
rdcp: --lanes must be from 1 to 64, not '65'
rdcp: --streams must be from 1 to 16, not '17'" ] && [ ! -e "$T/nolanes" ] && r=0
check "$name" $r "rc=$rc1/$rc2/$rc3 $(head -3 "$T/err" | tr '\n' ' ')"

# big files are read by the sender's lanes (rdc_send.c): one that shrinks while they read it is
# named, dropped at the destination, and the copy exits 23 with the other files copied. h1's
# link is held to 400 Mbit/s meanwhile, so the 192 MiB file takes 4 s, and it shrinks as soon
# as its temporary name appears at the destination: the lanes are then a few MiB into it. The
# rest of it is not sent (as zeros): h1 sends under 100 MiB in all.
for lanes in 1 3; do
    name="a big file shrinking while $lanes lane(s) read it: named, not at the destination, the rest copied, exit 23"
    rm -rf "$T/shrink-src" "$T/shrink-dst"; mkdir -p "$T/shrink-src" "$T/shrink-dst"
    cat "$T/big.img" "$T/big.img" "$T/big.img" "$T/big.img" > "$T/shrink-src/b-big"; echo small > "$T/shrink-src/a-small"; echo last > "$T/shrink-src/c-last"
    ip netns exec "${P}h1" tc qdisc add dev eth0 root tbf rate 400mbit burst 256kb latency 200ms
    rdcp_h0 --lanes $lanes -r h1:"$T/shrink-src/" h2:"$T/shrink-dst" 2> "$T/err" & cp=$!
    seen=""
    for ((i = 0; i < 500; i++)); do
        ls -a "$T/shrink-dst" | grep -q '^\.rdcp\.b-big\.' && { seen=1; break; }
        sleep 0.02
    done
    truncate -s $((1 << 20)) "$T/shrink-src/b-big"
    wait $cp; rc=$?
    sent=$(ip netns exec "${P}h1" tc -s qdisc show dev eth0 | sed -n 's/^ *Sent \([0-9]*\) bytes.*/\1/p' | head -1)
    ip netns exec "${P}h1" tc qdisc del dev eth0 root
    r=1; [ -n "$seen" ] && [ $rc = 23 ] && grep -q "source changed while being read (shrank): '.*b-big'" "$T/err" &&
        [ "${sent:-999999999}" -lt $((100 << 20)) ] &&
        [ ! -e "$T/shrink-dst/b-big" ] && [ "$(cat "$T/shrink-dst/a-small" "$T/shrink-dst/c-last")" = "small
last" ] && no_temps "$T/shrink-dst" && r=0
    check "$name (h1 sent $((${sent:-0} >> 20)) MiB)" $r "rc=$rc seen='$seen' h1 sent ${sent:-?} bytes $(ls -a "$T/shrink-dst" | tr '\n' ' ') $(head -3 "$T/err" | tr '\n' ' ')"
done

name="-p keeps modes and mtimes (stat), without -p the umask applies and mtimes are new"
rdcp_h0 -r -p h1:"$T/zoo/sub" h2:"$T/d6" 2> "$T/err"; rc1=$?
rdcp_h0 -r h1:"$T/zoo/sub" h2:"$T/d7" 2>> "$T/err"; rc2=$?
r=1; [ $rc1 = 0 ] && [ $rc2 = 0 ] &&
    [ "$(stat -c '%a %Y' "$T/zoo/sub" "$T/zoo/sub/h1")" = "$(stat -c '%a %Y' "$T/d6" "$T/d6/h1")" ] &&
    [ "$(stat -c '%y' "$T/zoo/sub/h1")" = "$(stat -c '%y' "$T/d6/h1")" ] &&
    [ "$(stat -c '%Y' "$T/zoo/sub/h1")" != "$(stat -c '%Y' "$T/d7/h1")" ] && r=0
check "$name" $r "rc=$rc1/$rc2 $(head -2 "$T/err" | tr '\n' ' ')"

name="a directory without -r: one clear line, other sources still copied, exit 23"
mkdir -p "$T/d8"
rdcp_h0 h1:"$T/zoo" h1:"$T/big.img" h2:"$T/d8" 2> "$T/err"; rc=$?
r=1; [ $rc = 23 ] && grep -q "is a directory (not copied; use -r)" "$T/err" && cmp -s "$T/big.img" "$T/d8/big.img" && r=0
check "$name" $r "rc=$rc $(head -3 "$T/err" | tr '\n' ' ')"

name="several sources, destination not a directory: clear error, exit 23"
echo x > "$T/notadir"
rdcp_h0 files/f1 files/f0 h1:"$T/notadir" 2> "$T/err"; rc=$?
r=1; [ $rc = 23 ] && grep -q "h1: destination '.*notadir' is not a directory" "$T/err" && [ "$(cat "$T/notadir")" = x ] && r=0
check "$name" $r "rc=$rc $(head -3 "$T/err" | tr '\n' ' ')"

name="a directory that cannot be made: one line, its subtree skipped, the rest copied, exit 23"
mkdir -p "$T/d10" && echo in-the-way > "$T/d10/sub"
rdcp_h0 -r h1:"$T/zoo/" h2:"$T/d10" 2> "$T/err"; rc=$?
r=1; [ $rc = 23 ] && [ "$(grep -c . "$T/err")" = 1 ] && grep -q "h2: cannot create directory '.*d10/sub': File exists" "$T/err" &&
    [ "$(cat "$T/d10/sub")" = in-the-way ] && [ "$(cat "$T/d10/-n")" = two ] && no_temps "$T/d10" && r=0
check "$name" $r "rc=$rc $(head -3 "$T/err" | tr '\n' ' ')"

name="missing source: clear line naming it, exit 23"
rdcp_h0 h1:"$T/does-not-exist" "$T/d9" 2> "$T/err"; rc=$?
r=1; [ $rc = 23 ] && grep -q "h1: cannot stat '.*does-not-exist': No such file" "$T/err" && r=0
check "$name" $r "rc=$rc $(head -3 "$T/err" | tr '\n' ' ')"

name="permission denied (unprivileged user, local -> local): the path, the others copied, exit 23"
PD=$(mktemp -d /tmp/rdcp-perm.XXXXXX); chmod 755 "$PD"
mkdir "$PD/src" && echo a > "$PD/src/ok" && echo b > "$PD/src/secret" && chmod 600 "$PD/src/secret"
mkdir "$PD/bin" && cp "$BIN/rdcp" "$BIN/rdpipe" "$BIN/rdsend" "$BIN/rdrecv" "$PD/bin/"   # $BIN may be private
chown -R nobody "$PD" && chown root "$PD/src/secret"
(cd "$PD" && timeout 60 setpriv --reuid=nobody --regid=nogroup --clear-groups env PATH="$PD/bin:$PATH" rdcp --no-progress -r src dst) 2> "$T/err"; rc=$?
r=1; [ $rc = 23 ] && grep -q "cannot open '.*secret': Permission denied" "$T/err" && [ "$(cat "$PD/dst/ok")" = a ] && [ ! -e "$PD/dst/secret" ] && no_temps "$PD/dst" && r=0
check "$name" $r "rc=$rc $(head -3 "$T/err" | tr '\n' ' ')"
rm -rf "$PD"

name="destination fills up (8 MiB tmpfs): 'No space left' with host and path, no temp files, exit 23"
mkdir -p "$T/fsrc"
for i in 1 2 3 4; do head -c $((3 << 20)) /dev/urandom > "$T/fsrc/f$i"; done
rdcp_h0 -r h1:"$T/fsrc/" h2:"$T/full" 2> "$T/err"; rc=$?
r=1; [ $rc = 23 ] && grep -q "h2: .*'.*full/f[0-9]': No space left on device" "$T/err" && no_temps "$T/full" &&
    for f in "$T"/full/f*; do cmp -s "$f" "$T/fsrc/$(basename "$f")" || exit 1; done && r=0
check "$name" $r "rc=$rc $(head -3 "$T/err" | tr '\n' ' ') $(ls -a "$T/full" | tr '\n' ' ')"

# A sparse file is not preallocated (that would fill its holes), so the disk fills while its
# pieces are written, on the receiver's workers out of the engine's frames: the worker's
# error must fail the file, once, and leave nothing.
name="destination fills up under a sparse file's pieces (8 MiB tmpfs): one 'No space left' line, no file, no temp files, exit 23"
mkdir -p "$T/ssrc"
truncate -s 1M "$T/ssrc/sparse" && head -c $((12 << 20)) /dev/urandom >> "$T/ssrc/sparse"
rdcp_h0 -r h1:"$T/ssrc/" h2:"$T/full3" 2> "$T/err"; rc=$?
r=1; [ $rc = 23 ] && [ "$(grep -c "h2: cannot write '.*full3/sparse': No space left on device" "$T/err")" = 1 ] &&
    [ ! -e "$T/full3/sparse" ] && no_temps "$T/full3" && r=0
check "$name" $r "rc=$rc $(head -3 "$T/err" | tr '\n' ' ') $(ls -a "$T/full3" | tr '\n' ' ')"

name="-L follows symlinks (files and directories) and copies what they point to"
mkdir -p "$T/lsrc/real" && echo target > "$T/lsrc/real/t" && ln -s real "$T/lsrc/dl" && ln -s real/t "$T/lsrc/fl"
rdcp_h0 -r -L h1:"$T/lsrc/" h2:"$T/ldst" 2> "$T/err"; rc=$?
r=1; [ $rc = 0 ] && [ -d "$T/ldst/dl" ] && [ ! -L "$T/ldst/dl" ] && [ ! -L "$T/ldst/fl" ] &&
    [ "$(cat "$T/ldst/fl")" = target ] && [ "$(cat "$T/ldst/dl/t")" = target ] && r=0
check "$name" $r "rc=$rc $(head -3 "$T/err" | tr '\n' ' ')"

name="a symlink named as SRC: followed without -r, as cp and scp follow it (the bytes, not a link); with -r the link itself, as cp -r; a dangling one: exit 23"
mkdir -p "$T/sl/d" && echo payload > "$T/sl/real" && ln -s real "$T/sl/rel" && ln -s /nonexistent/x "$T/sl/dangle"
rdcp_h0 "$T/sl/rel" h1:"$T/sl/d/copied" 2> "$T/err"; rc1=$?
rdcp_h0 -r "$T/sl/rel" h1:"$T/sl/d/as-link" 2>> "$T/err"; rc2=$?
rdcp_h0 "$T/sl/dangle" h1:"$T/sl/d/dangle" 2> "$T/err3"; rc3=$?
r=1; [ $rc1 = 0 ] && [ ! -L "$T/sl/d/copied" ] && [ "$(cat "$T/sl/d/copied")" = payload ] &&
    [ $rc2 = 0 ] && [ "$(readlink "$T/sl/d/as-link")" = real ] &&
    [ $rc3 = 23 ] && [ ! -e "$T/sl/d/dangle" ] && [ ! -L "$T/sl/d/dangle" ] &&
    grep -q "^rdcp: localhost: cannot stat '.*/sl/dangle': No such file or directory$" "$T/err3" && r=0
check "$name" $r "rc=$rc1/$rc2/$rc3 $(ls -l "$T/sl/d" | tail -n +2 | tr '\n' ' ') $(cat "$T/err" "$T/err3" | head -3 | tr '\n' ' ')"

name="~ in HOST:PATH is that host's home, as scp and rsync take it (~/x, ~root/x, as source and destination); a local '~name' stays literal; an unknown ~user: exit 5 naming it"
H=$(on_h0 $SSH h2 'mktemp -d ~/.rdcp-test.XXXXXX') && HB=${H##*/} || H=
mkdir -p "$T/tl" && echo literal > "$T/tl/~lit"
rdcp_h0 files/f4095 "h2:~/$HB/x" 2> "$T/err"; rc1=$?
rdcp_h0 "h2:~root/$HB/x" h1:"$T/tl/back" 2>> "$T/err"; rc2=$?
(cd "$T/tl" && ip netns exec "${P}h0" env PATH="$BIN:$PATH" timeout 60 rdcp --no-progress --ssh "$SSH" '~lit' "h2:~/$HB/") 2>> "$T/err"; rc3=$?
rdcp_h0 files/f1 "h2:~no-such-user-rdcp/x" 2> "$T/err4"; rc4=$?
r=1; [ -n "$H" ] && [ $rc1 = 0 ] && cmp -s "$T/files/f4095" "$H/x" && [ $rc2 = 0 ] && cmp -s "$T/files/f4095" "$T/tl/back" &&
    [ $rc3 = 0 ] && [ "$(cat "$H/~lit")" = literal ] && [ $rc4 = 5 ] &&
    grep -q "^rdcp: h2: cannot open the directory of destination '~no-such-user-rdcp/x': No such file or directory$" "$T/err4" && r=0
check "$name" $r "rc=$rc1/$rc2/$rc3/$rc4 H=$H $(ls -a "$H" 2>&1 | tr '\n' ' ') $(cat "$T/err" "$T/err4" | head -3 | tr '\n' ' ')"
case $H in */.rdcp-test.*) rm -rf "$H" ;; esac

name="source vanished mid-copy: one line naming it, the rest copied, exit 23"
mkdir -p "$T/vsrc"
for i in 1 2 3 4 5; do head -c $((16 << 20)) /dev/urandom > "$T/vsrc/a$i"; done   # more than the engine reads ahead
echo gone > "$T/vsrc/zz-vanishes"
tc -n "${P}h1" qdisc add dev eth0 root tbf rate 160mbit burst 64kb latency 500ms
ip netns exec "${P}h0" env PATH="$BIN:$PATH" timeout 60 rdcp --no-progress --ssh "$SSH" -r h1:"$T/vsrc/" h2:"$T/vdst" 2> "$T/err" &
pid=$!
for _ in $(seq 100); do [ -e "$T/vdst/a1" ] && break; sleep 0.05; done
rm -f "$T/vsrc/zz-vanishes"
wait $pid; rc=$?
tc -n "${P}h1" qdisc del dev eth0 root
r=1; [ $rc = 23 ] && grep -q "h1: source vanished: '.*zz-vanishes'" "$T/err" && [ ! -e "$T/vdst/zz-vanishes" ] &&
    cmp -s "$T/vsrc/a5" "$T/vdst/a5" && no_temps "$T/vdst" && r=0
check "$name" $r "rc=$rc $(head -3 "$T/err" | tr '\n' ' ')"

name="--json summary"
rdcp_h0 --json files/f1 h1:"$T/j1" 2> "$T/err"; rc=$?
r=1; [ $rc = 0 ] && grep -q '^{"tool":"rdcp","files":1,.*"bytes":1,.*"exit_code":0}$' "$T/err" && r=0
check "$name" $r "rc=$rc $(tail -2 "$T/err" | tr '\n' ' ')"

# ---------------------------------------------------------------------------------------
name="SIGKILL mid-copy: no partial file under a final name, the one being written locked (flock); --resume completes it, skips bytes"
R=$T/rsrc
mkdir -p "$R/a"
for i in 1 2 3 4 5 6; do head -c $((6 << 20)) /dev/urandom > "$R/a/f$i"; done
head -c $((64 << 20)) /dev/urandom > "$R/big"
cp -r "$Z/sub" "$R/zsub"
tc -n "${P}h1" qdisc add dev eth0 root tbf rate 160mbit burst 64kb latency 500ms
ip netns exec "${P}h0" env PATH="$BIN:$PATH" rdcp --no-progress --ssh "$SSH" -a h1:"$R/" h2:"$T/rdst" 2> "$T/err" &
pid=$!   # ip netns exec and env exec: this is rdcp
for _ in $(seq 200); do   # until it is inside the 64 MiB file (apparent sizes: fallocate is not data)
    sz=$(find "$T/rdst" -type f -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}')
    [ "${sz:-0}" -gt $((50 << 20)) ] && break
    sleep 0.1
done
# the partial file of 'big' is locked while rdcp writes it: a later copy must leave it alone
held=none
for t in "$T/rdst"/.rdcp.big.*; do [ -f "$t" ] && { flock -n "$t" true && held=no || held=yes; }; done
kill -9 $pid; wait $pid 2>/dev/null
tc -n "${P}h1" qdisc del dev eth0 root
no_strays > /dev/null
partial=0
while IFS= read -r -d '' f; do
    case ${f##*/} in .rdcp.*) continue ;; esac
    cmp -s "$f" "$R/${f#"$T/rdst/"}" || { partial=1; echo "partial under final name: $f"; }
done < <(find "$T/rdst" -type f -print0)
temps=$(find "$T/rdst" -name '.rdcp.*' | wc -l)
rdcp_h0 -v -a --resume h1:"$R/" h2:"$T/rdst" 2> "$T/err2"; rc=$?
sk=$(sed -n 's/.*skipped \([0-9]*\) bytes.*/\1/p' "$T/err2")
r=1; [ $partial = 0 ] && [ $rc = 0 ] && [ "${sk:-0}" -gt 0 ] && same_tree "$R" "$T/rdst" t > "$T/why" && no_temps "$T/rdst" &&
    [ $held = yes ] && r=0
check "$name (skipped ${sk:-?} bytes, $temps partial kept)" $r "rc=$rc partial=$partial partial of big locked while written: $held $(cat "$T/why" "$T/err2" | head -3 | tr '\n' ' ')"

name="--resume of a complete tree skips everything and copies 0 bytes"
rdcp_h0 -v -a --resume h1:"$R/" h2:"$T/rdst" 2> "$T/err"; rc=$?
r=1; [ $rc = 0 ] && grep -q " 0 bytes (0 B) copied" "$T/err" && same_tree "$R" "$T/rdst" t > "$T/why" && r=0
check "$name" $r "rc=$rc $(cat "$T/why" "$T/err" | head -3 | tr '\n' ' ')"

name="--resume reads the destination's files for their hashes without touching their access times"
# relatime updates an atime older than a day on the first read: the manifest's hashing did so
# to every file in DST/NAME until 2026-12-07 (no -p here, which would set the times itself)
rm -rf "$T/asrc" "$T/adst" && mkdir -p "$T/asrc/d" "$T/adst" && head -c 300000 /dev/urandom > "$T/asrc/d/x" &&
    echo small > "$T/asrc/y" && cp -r "$T/asrc" "$T/adst/" && touch -a -d @946684800 "$T/adst/asrc/d/x" "$T/adst/asrc/y"
rdcp_h0 -v -r --resume h1:"$T/asrc" h2:"$T/adst" 2> "$T/err"; rc=$?
at="$(stat -c %X "$T/adst/asrc/d/x") $(stat -c %X "$T/adst/asrc/y")"
r=1; [ $rc = 0 ] && grep -q " 0 bytes (0 B) copied" "$T/err" && [ "$at" = "946684800 946684800" ] && r=0
check "$name" $r "rc=$rc atimes $at (want 946684800 946684800) $(head -3 "$T/err" | tr '\n' ' ')"

name="a later copy, without --resume, removes the partial files of what it completes: big and small files, top and nested; one a running rdcp holds, others' and what is not a regular file stay"
# An interrupted copy keeps its partial files for --resume; a copy that then writes those files
# whole (here without --resume) supersedes them. Before 2026-11-26 they stayed for good (a
# 64 MiB partial of 'big' after every interrupted run). A partial file that a running rdcp
# writes is locked by it (flock), as `flock` holds 'held' here: it stays.
echo small > "$R/a/small"
S=$T/rdst
head -c $((1 << 20)) /dev/urandom > "$S/.rdcp.big.Stale1"        # the stream thread's file
head -c 1000 /dev/urandom > "$S/.rdcp.big.Stale2"
echo x > "$S/a/.rdcp.small.Stale3"                               # a worker's file
echo x > "$S/a/.rdcp.f3.Stale4"                                  # nested, stream thread
echo x > "$S/.rdcp.big.Held01"
echo x > "$S/.rdcp.nothere.Other1"                              # no such file in the copy
echo secret > "$T/victim"; ln -s "$T/victim" "$S/a/.rdcp.f2.Link01"
mkdir "$S/.rdcp.big.Dir001"; mkfifo "$S/a/.rdcp.f1.Fifo01"
flock -x "$S/.rdcp.big.Held01" sleep 60 & holder=$!
for _ in $(seq 50); do flock -n "$S/.rdcp.big.Held01" true || break; sleep 0.05; done
rdcp_h0 -a h1:"$R/" h2:"$S" 2> "$T/err"; rc=$?
pkill -P "$holder"; kill "$holder" 2> /dev/null; wait "$holder" 2> /dev/null
left=$(cd "$S" && find . -name '.rdcp.*' | sort | tr '\n' ' ')
want="./.rdcp.big.Dir001 ./.rdcp.big.Held01 ./.rdcp.nothere.Other1 ./a/.rdcp.f1.Fifo01 ./a/.rdcp.f2.Link01 "
(cd "$S" && rm -rf .rdcp.big.Dir001 .rdcp.big.Held01 .rdcp.nothere.Other1 a/.rdcp.f1.Fifo01 a/.rdcp.f2.Link01)
r=1; [ $rc = 0 ] && [ ! -s "$T/err" ] && [ "$left" = "$want" ] && [ "$(cat "$T/victim")" = secret ] &&
    same_tree "$R" "$S" > "$T/why" 2>&1 && r=0   # not mtimes: removing the leftovers changed a/
check "$name" $r "rc=$rc left: $left $(cat "$T/why" "$T/err" 2> /dev/null | head -3 | tr '\n' ' ')"

name="IPv6 literals: local -> root@[fd99::12]:path and [fd99::12]:path -> local"
ip -n "${P}h0" addr add fd99::10/64 dev eth0 nodad && ip -n "${P}h2" addr add fd99::12/64 dev eth0 nodad
sed "s/^ListenAddress .*/ListenAddress fd99::12/; s|^PidFile .*|PidFile $T/sshd6.pid|" "$T/sshd-h2.conf" > "$T/sshd6.conf"
ip netns exec "${P}h2" "$SSHD" -f "$T/sshd6.conf" -E "$T/sshd6.log"
echo "fd99::* $(cut -d' ' -f1,2 "$T/hostkey.pub")" >> "$T/known_hosts"
printf 'Host fd99::*\n  IdentityFile %s/id\n  IdentitiesOnly yes\n  UserKnownHostsFile %s/known_hosts\n  GlobalKnownHostsFile /dev/null\n  BatchMode yes\n  LogLevel ERROR\n' "$T" "$T" >> "$CFG"
for _ in $(seq 50); do [ -s "$T/sshd6.pid" ] && break; sleep 0.1; done
rdcp_h0 -v files/f4095 "root@[fd99::12]:$T/v6.out" 2> "$T/err"; rc1=$?
rdcp_h0 "root@[fd99::12]:$T/files/f$CH" "$T/v6.back" 2>> "$T/err"; rc2=$?
kill "$(cat "$T/sshd6.pid")" 2>/dev/null
r=1; [ $rc1 = 0 ] && [ $rc2 = 0 ] && cmp -s "$T/files/f4095" "$T/v6.out" && cmp -s "$T/files/f$CH" "$T/v6.back" &&
    grep -q "at fd99::12 port" "$T/err" && r=0
check "$name" $r "rc=$rc1/$rc2 $(head -3 "$T/err" | tr '\n' ' ')"

name="-rL with directory loops (l -> ., m -> ., d/e/up -> ../..): each named once, the rest copied, exit 23"
mkdir -p "$T/loop/d/e" && echo x > "$T/loop/f" && echo y > "$T/loop/d/e/g"
ln -s . "$T/loop/l" && ln -s . "$T/loop/m" && ln -s ../.. "$T/loop/d/e/up"
rdcp_h0 -rL h1:"$T/loop" h2:"$T/loop-copy" 2> "$T/err"; rc=$?
r=1; [ $rc = 23 ] && [ "$(grep -c 'directory loop, not copied' "$T/err")" = 3 ] &&
    grep -q "h1: directory loop, not copied: '.*loop/l' is '.*loop' again" "$T/err" &&
    [ "$(cd "$T/loop-copy" && find . | LC_ALL=C sort | tr '\n' ' ')" = ". ./d ./d/e ./d/e/g ./f " ] && r=0
check "$name" $r "rc=$rc $(head -4 "$T/err" | tr '\n' ' ') $(find "$T/loop-copy" 2>/dev/null | head -5 | tr '\n' ' ')"

name="a tree deeper than PATH_MAX (40 directories of 200-byte names), -a: xattrs, an ACL on a FIFO, hard links; remote -> remote (-P: the progress total counts all of it), then --resume: whole, exit 0"
# paths of 8 KB: each directory is opened from its parent's fd and the walk climbs back by
# "..", the receiver resolves such a path a part at a time; diff -r cannot compare them, so
# tests/rdcp/tree_cmp.py walks both trees by chdir
python3 - "$T/abyss" <<'PY'
import os, struct, sys
os.mkdir(sys.argv[1]); os.chdir(sys.argv[1])
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i) for t, p, i in
    [(1, 6, 0xFFFFFFFF), (2, 4, 1234), (4, 4, 0xFFFFFFFF), (0x10, 4, 0xFFFFFFFF), (0x20, 0, 0xFFFFFFFF)])
for i in range(40):
    n = "%03d" % i + "d" * 197
    os.mkdir(n); os.chdir(n)
    os.setxattr(".", "user.level", str(i).encode())
    with open("f", "wb") as f:
        f.write(os.urandom(i * 997))
    os.setxattr("f", "user.k", b"v%d" % i)
    os.link("f", "h"); os.symlink("f", "l"); os.mkfifo("p")
    os.setxattr("p", "system.posix_acl_access", acl)
PY
rdcp_h0 -a -P h1:"$T/abyss" h2:"$T/abyss-copy" 2> "$T/err"; rc1=$?
tr '\r' '\n' < "$T/err" | grep -aq 'rdcp: 160/160 files' || echo "no progress line 'rdcp: 160/160 files' (the count walk's total): $(tr '\r\033' '|?' < "$T/err" | tail -c 200)" > "$T/count"
python3 "$ROOT/tests/rdcp/tree_cmp.py" "$T/abyss" "$T/abyss-copy" > "$T/why" 2>&1; c1=$?
cat "$T/count" >> "$T/why" 2>/dev/null && [ -s "$T/count" ] && c1=1
python3 - "$T/abyss-copy" 2>> "$T/why" <<'PY'
import os, sys
os.chdir(sys.argv[1])
for i in range(40):
    os.chdir("%03d" % i + "d" * 197)
with open("f", "r+b") as f:
    f.write(b"changed")
PY
rdcp_h0 -a -v --resume h1:"$T/abyss/" h2:"$T/abyss-copy" 2>> "$T/err"; rc2=$?
python3 "$ROOT/tests/rdcp/tree_cmp.py" "$T/abyss" "$T/abyss-copy" >> "$T/why" 2>&1; c2=$?
r=1; [ $rc1 = 0 ] && [ $c1 = 0 ] && [ $rc2 = 0 ] && [ $c2 = 0 ] &&
    grep -q '^rdcp: 160 files, 41 directories, 38883 bytes' "$T/err" && r=0
check "$name" $r "rc=$rc1/$rc2 cmp=$c1/$c2 $(cat "$T/why" | head -3 | tr '\n' ' ') $(grep -v '^rdcp: 160 files' "$T/err" | head -2 | cut -c1-300 | tr '\n' ' ')"

# the receiver writes small files on worker threads (lib/copy/rdc_recv_pool.c; the agent's
# RDCP_RECV_WORKERS sets how many, 0 = none, for local copies whose agents inherit it)
# gen_small DIR N SEED: N files of 0 B - 64 KiB of random bytes, 150 to a directory
gen_small() {
    mkdir -p "$1"
    (cd "$1" && perl -e 'srand($ARGV[1]); open(my $u, "<:raw", "/dev/urandom") or die;
        for my $i (0 .. $ARGV[0] - 1) {
            my $d = "d" . int($i / 150); mkdir $d if $i % 150 == 0;
            my $sz = int(rand(65537)); my $b = "";
            read($u, $b, $sz) == $sz or die if $sz;
            open(my $o, ">:raw", "$d/f$i") or die; print $o $b; close $o or die;
        }' "$2" "$3")
}
name="5000 small files, remote -> remote and local: 1, 2, 4, no receiver workers, no O_TMPFILE, sender walk inline / 1 ahead / 90 fds: byte-identical"
gen_small "$T/pool" 5000 5
printf 'x' > "$T/pool/d0/one" && : > "$T/pool/d1/empty" && head -c $((1 << 20)) /dev/urandom > "$T/pool/d2/mib" &&
    head -c $(((1 << 20) + 1)) /dev/urandom > "$T/pool/d3/mib1"   # the pool's limit, and one byte more
rdcp_h0 -a h1:"$T/pool" h2:"$T/pool-r" 2> "$T/err"; rc=$?
why=
[ $rc = 0 ] && same_tree "$T/pool" "$T/pool-r" t > "$T/why" && no_temps "$T/pool-r" || why="remote: rc=$rc $(cat "$T/why" "$T/err" | head -3 | tr '\n' ' ')"
# RDCP_NO_TMPFILE: the workers name a temporary file and rename it (kernels or filesystems
# without O_TMPFILE); RDCP_SEND_AHEAD: how far the sender's walk thread runs ahead (0: none);
# ulimit -n 90 leaves the walk room for a few open files only
for v in RDCP_RECV_WORKERS=1 RDCP_RECV_WORKERS=2 RDCP_RECV_WORKERS=4 RDCP_RECV_WORKERS=0 RDCP_NO_TMPFILE=1 \
         RDCP_SEND_AHEAD=0 RDCP_SEND_AHEAD=1 nofile=90; do
    [ -n "$why" ] && break
    d="$T/pool-${v/=/-}"
    if [ "$v" = nofile=90 ]; then
        on_h0 bash -c 'ulimit -n 90 && exec timeout 120 rdcp --no-progress -a "$0" "$1"' "$T/pool/" "$d" 2> "$T/err"; rc=$?
    else
        on_h0 env "$v" timeout 120 rdcp --no-progress -a "$T/pool/" "$d" 2> "$T/err"; rc=$?
    fi
    [ $rc = 0 ] && same_tree "$T/pool" "$d" t > "$T/why" && no_temps "$d" || why="$v: rc=$rc $(cat "$T/why" "$T/err" | head -3 | tr '\n' ' ')"
done
r=1; [ -z "$why" ] && r=0
check "$name" $r "$why"

# Without -p a new file or directory gets its mode as cp -r gives it: the kernel applies the
# umask, or the directory's default ACL, to the source's bits. Before 2026-11-26 an fchmod to
# mode & ~umask afterwards overrode the ACL (in a directory whose default ACL keeps others out,
# copies came out world-readable), and every new directory was made 0777 & ~umask (a private
# 0700 directory came out 0755, its 0644 files readable by all). Small files (the workers,
# with and without O_TMPFILE), one over the pool's 1 MiB (the stream thread), directories of
# 0755, 0700 and 0500 (each with a file, so it is written into before its mode is final); in a
# directory with a default ACL and in a plain one; -p keeps each mode exactly.
name="modes as cp -r gives them: a default ACL (others: none) applies, a 0700 directory stays 0700, small and big files, with and without O_TMPFILE; -p exact"
if ! command -v setfacl > /dev/null; then
    check "$name" 1 "no setfacl (apt-get install acl)"
else
    mkdir -p "$T/acl-src/d755" "$T/acl-src/d700" "$T/acl-src/d500" && echo small > "$T/acl-src/f644" &&
        echo ro > "$T/acl-src/f400" && printf '#!/bin/sh\n' > "$T/acl-src/x755" &&
        head -c $(((1 << 20) + 5)) /dev/urandom > "$T/acl-src/big644" &&
        for d in d755 d700 d500; do echo in > "$T/acl-src/$d/f"; chmod 644 "$T/acl-src/$d/f"; done &&
        chmod 644 "$T/acl-src/f644" "$T/acl-src/big644" && chmod 400 "$T/acl-src/f400" && chmod 755 "$T/acl-src/x755" &&
        chmod 755 "$T/acl-src/d755" && chmod 700 "$T/acl-src/d700" && chmod 500 "$T/acl-src/d500"
    modes() { (cd "$1" && stat -c '%a %n' f644 f400 x755 big644 d755 d700 d500 d700/f | tr '\n' ' '); }
    why=
    for v in cp RDCP_RECV_WORKERS=2 RDCP_NO_TMPFILE=1 p plain; do
        d="$T/acl-${v/=/-}"
        mkdir -p "$d"
        [ $v = plain ] || setfacl -d -m u::rwx,g::r-x,o::--- "$d" || { why="setfacl failed on $T"; break; }
        case $v in
            cp) (umask 022 && cp -r "$T/acl-src/"* "$d/") ;;
            p) on_h0 bash -c 'umask 022 && exec timeout 60 rdcp --no-progress -rp "$0" "$1"' "$T/acl-src/" "$d" 2> "$T/err" ;;
            plain) on_h0 bash -c 'umask 022 && exec timeout 60 rdcp --no-progress -r "$0" "$1"' "$T/acl-src/" "$d" 2> "$T/err" ;;
            *) on_h0 env "$v" bash -c 'umask 022 && exec timeout 60 rdcp --no-progress -r "$0" "$1"' "$T/acl-src/" "$d" 2> "$T/err" ;;
        esac || { why="$v: rc=$? $(head -3 "$T/err" | tr '\n' ' ')"; break; }
        want="640 f644 400 f400 750 x755 640 big644 750 d755 700 d700 500 d500 640 d700/f "
        [ $v = p ] || [ $v = plain ] && want="644 f644 400 f400 755 x755 644 big644 755 d755 700 d700 500 d500 644 d700/f "
        [ "$(modes "$d")" = "$want" ] || { why="$v: modes '$(modes "$d")', want '$want' (cp gave '$(modes "$T/acl-cp" 2>/dev/null)')"; break; }
        cmp -s "$T/acl-src/big644" "$d/big644" && [ "$(cat "$d/d500/f")" = in ] || { why="$v: contents differ"; break; }
    done
    r=1; [ -z "$why" ] && r=0
    check "$name" $r "$why"
    chmod -R u+w "$T"/acl-* 2> /dev/null; rm -rf "$T"/acl-*
fi

# extended attributes as cp keeps them: -p the ACLs (with the mode, as cp -p), -X user.*, -a
# both; security.* and trusted.* never. A directory's default ACL is set once its files are in
# (as cp -a and tar do), so a file without an ACL in the source gets none from it. Small files
# (the workers, with and without O_TMPFILE), one over the pool's 1 MiB (the stream thread).
name="extended attributes and ACLs (remote -> remote): -a keeps user.* and ACLs, -p ACLs only, -r none; security.*, trusted.* never; small and big files, O_TMPFILE on and off; set again on files --resume skips"
if ! command -v setfattr > /dev/null || ! command -v setfacl > /dev/null; then
    check "$name" 1 "no setfattr or setfacl (apt-get install attr acl)"
else
    X=$T/xa why=
    rm -rf "$X" && mkdir -p "$X/src/sub" && echo small > "$X/src/small" && echo plain > "$X/src/sub/plain" &&
        head -c $(((1 << 20) + 5)) /dev/urandom > "$X/src/big" &&
        setfattr -n user.color -v blue "$X/src/small" && setfattr -n user.bin -v 0sAAECAwQ= "$X/src/small" &&
        setfattr -n user.long -v "$(head -c 3000 /dev/zero | tr '\0' L)" "$X/src/big" &&
        setfattr -n user.dir -v yes "$X/src/sub" && setfattr -n trusted.secret -v no "$X/src/small" &&
        setfattr -n security.private -v no "$X/src/small" &&
        setfacl -m u:nobody:r,g:nogroup:rw "$X/src/small" && setfacl -m u:nobody:rwx "$X/src/sub" &&
        setfacl -d -m u:nobody:rx "$X/src/sub" && chmod 640 "$X/src/big" || why="setup failed"
    # every attribute but security.* and trusted.*, and the ACLs, of the tree
    dump() { (cd "$1" && getfattr -R -h -d -m '^(user|system)\.' -e hex . 2>/dev/null; getfacl -R -p . 2>/dev/null); }
    acls() { (cd "$1" && getfacl -R -p --skip-base . 2>/dev/null); }
    users() { (cd "$1" && getfattr -R -h -d -m '^user\.' . 2>/dev/null); }
    [ -n "$why" ] || for v in a a-RDCP_NO_TMPFILE=1 rp r; do
        d="$X/dst-${v/=/-}"
        rm -rf "$d"
        case $v in
            a-*) on_h0 env "${v#a-}" timeout 120 rdcp --no-progress -a "$X/src" "$d" 2> "$T/err" ;;   # local agents see the env
            *) rdcp_h0 -$v h1:"$X/src" h2:"$d" 2> "$T/err" ;;
        esac || { why="$v: rc=$? $(head -3 "$T/err" | tr '\n' ' ')"; break; }
        [ -s "$T/err" ] && { why="$v: stderr: $(head -3 "$T/err" | tr '\n' ' ')"; break; }
        cmp -s "$X/src/big" "$d/big" && [ "$(cat "$d/small")" = small ] || { why="$v: contents differ"; break; }
        case $v in
            a*) [ "$(dump "$X/src")" = "$(dump "$d")" ] || { why="$v: attributes differ: $(diff <(dump "$X/src") <(dump "$d") | head -6 | tr '\n' ' ')"; break; } ;;
            rp) [ "$(acls "$X/src")" = "$(acls "$d")" ] && [ -z "$(users "$d")" ] ||
                   { why="rp: ACLs differ or user.* copied: $(diff <(acls "$X/src") <(acls "$d") | head -4 | tr '\n' ' ') $(users "$d" | head -3 | tr '\n' ' ')"; break; } ;;
            r) [ -z "$(acls "$d")" ] && [ -z "$(users "$d")" ] || { why="r: attributes copied: $(acls "$d" | head -3 | tr '\n' ' ')"; break; } ;;
        esac
        getfattr -R -h -d -m '^(trusted|security)\.' "$d" 2>/dev/null | grep -q . && { why="$v: trusted.* or security.* copied"; break; }
    done
    # --resume finds both files complete: their attributes are set again all the same
    d=$X/dst-a
    [ -n "$why" ] || { setfattr -x user.color "$d/small" && setfattr -x user.long "$d/big" && setfacl -b "$d/small" &&
        rdcp_h0 -a --resume h1:"$X/src/" h2:"$d" 2> "$T/err" && [ ! -s "$T/err" ] && [ "$(dump "$X/src")" = "$(dump "$d")" ] ||
        why="--resume -a: $(head -3 "$T/err" | tr '\n' ' ') $(diff <(dump "$X/src") <(dump "$d") | head -6 | tr '\n' ' ')"; }
    # the test's own check: the source has what it compares
    [ -n "$why" ] || [ "$(users "$X/src" | grep -c '^user\.')" = 4 ] && [ "$(acls "$X/src" | grep -c '^default:user:nobody')" = 1 ] ||
        why="${why:-the source lacks its attributes}"
    r=1; [ -z "$why" ] && r=0
    check "$name" $r "$why"
    rm -rf "$X"
fi

# sources on several hosts, as scp takes them: one run per host, in the order the hosts are
# first named, each straight from its host to DST; a source that fails on one host does not
# stop the others; one summary (--json) for the whole command
name="sources on several hosts (h1, h3, local, h1 again -> h2): every one copied, one summary; a missing one is exit 23 and the rest still arrive; a missing DST refused once, the other hosts not run"
M=$T/mh
rm -rf "$M" && mkdir -p "$M/one" "$M/three/sub" "$M/dst" && head -c 300000 /dev/urandom > "$M/one/a" &&
    head -c 5000 /dev/urandom > "$M/three/sub/b" && echo local > "$M/loc" && echo again > "$M/again"
why=
rdcp_h0 -r --json h1:"$M/one" h3:"$M/three" "$M/loc" h1:"$M/again" h2:"$M/dst" 2> "$T/err"; rc=$?
[ $rc = 0 ] || why="exit $rc: $(head -3 "$T/err" | tr '\n' ' ')"
diff -r "$M/one" "$M/dst/one" > /dev/null && diff -r "$M/three" "$M/dst/three" > /dev/null &&
    cmp -s "$M/loc" "$M/dst/loc" && cmp -s "$M/again" "$M/dst/again" || why+=" trees differ: $(cd "$M/dst" && find . | sort | tr '\n' ' ')"
grep -q '^{"tool":"rdcp","files":4,"dirs":3,"bytes":305012,.*"exit_code":0}$' "$T/err" && [ "$(grep -c '"tool"' "$T/err")" = 1 ] ||
    why+=" json: $(tr '\n' ' ' < "$T/err")"
rm -rf "$M/dst" && mkdir "$M/dst"
rdcp_h0 -r h1:"$M/nothere" h3:"$M/three" h2:"$M/dst" 2> "$T/err"; rc=$?
[ $rc = 23 ] && diff -r "$M/three" "$M/dst/three" > /dev/null && grep -q "h1: cannot stat '.*/mh/nothere'" "$T/err" ||
    why+=" missing source: exit $rc, $(head -3 "$T/err" | tr '\n' ' ')"
rdcp_h0 -r h1:"$M/one" h3:"$M/three" h2:"$M/newdst" 2> "$T/err"; rc=$?
[ $rc = 23 ] && [ ! -e "$M/newdst" ] && [ "$(grep -c "is not a directory" "$T/err")" = 1 ] ||
    why+=" missing DST: exit $rc, $(head -3 "$T/err" | tr '\n' ' ')"
r=1; [ -z "$why" ] && r=0
check "$name" $r "$why"
rm -rf "$M"

# special files as cp -r copies them: a FIFO and a socket are made again (empty), with their
# modes (and times with -a); a device node is not copied, and says so: exit 23
name="special files (remote -> remote, -a): FIFO and socket made with mode, time and ACL, a device node refused with exit 23, the rest copied"
rm -rf "$T/sp" && mkdir -p "$T/sp/src" && mkfifo -m 0640 "$T/sp/src/fifo" && echo a > "$T/sp/src/a" &&
    /usr/bin/python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/sp/src/sock" &&
    mknod "$T/sp/src/null" c 1 3 && setfacl -m u:nobody:r "$T/sp/src/fifo" && setfacl -m g:nogroup:rw "$T/sp/src/sock" &&
    touch -h -d '2001-02-03' "$T/sp/src/fifo"
rdcp_h0 -a h1:"$T/sp/src" h2:"$T/sp/dst" 2> "$T/err"; rc=$?
why=
[ $rc = 23 ] || why="exit $rc, want 23"
[ "$(grep -c . "$T/err")" = 1 ] && grep -q "not copied: device file '.*/sp/src/null' (rdcp makes no device nodes)" "$T/err" ||
    why+=" stderr: $(head -3 "$T/err" | tr '\n' ' ')"
[ -p "$T/sp/dst/fifo" ] && [ -S "$T/sp/dst/sock" ] && [ ! -e "$T/sp/dst/null" ] && [ "$(cat "$T/sp/dst/a")" = a ] &&
    [ "$(stat -c '%a %Y' "$T/sp/dst/fifo")" = "$(stat -c '%a %Y' "$T/sp/src/fifo")" ] || why+=" tree: $(ls -la "$T/sp/dst" | tr '\n' ' ')"
for n in fifo sock; do
    a=$(cd "$T/sp/src" && getfacl -p --skip-base "$n" 2>/dev/null) b=$(cd "$T/sp/dst" && getfacl -p --skip-base "$n" 2>/dev/null)
    [ -n "$a" ] && [ "$a" = "$b" ] || why+=" $n's ACL: '$(tr '\n' ' ' <<< "$b")', want '$(tr '\n' ' ' <<< "$a")'"
done
r=1; [ -z "$why" ] && r=0
check "$name" $r "$why"
rm -rf "$T/sp"

# the workers give a new file its name with linkat, which never replaces: a name already
# taken goes through a temporary name and a rename, as every file did before
name="small files onto an existing tree (workers, with and without O_TMPFILE): each replaced, a symlink in the way replaced and not followed, a directory in the way refused, exit 23"
gen_small "$T/pool2" 600 6
why=
for v in RDCP_RECV_WORKERS=2 RDCP_NO_TMPFILE=1; do
    d="$T/ow-${v/=/-}"
    echo canary > "$T/ow-canary" && mkdir -p "$d"
    on_h0 timeout 120 rdcp --no-progress -r "$T/pool/d0" "$T/pool/d1" "$T/pool/d2" "$T/pool/d3" "$d/" 2> "$T/err" &&
        rm "$d/d0/f1" && mkdir "$d/d0/f1" && echo keep > "$d/d0/f1/inside" &&
        rm "$d/d1/f151" && ln -s "$T/ow-canary" "$d/d1/f151" && chmod 444 "$d/d2/f300" ||
        { why="$v: setup failed: $(head -3 "$T/err" | tr '\n' ' ')"; break; }
    on_h0 env "$v" timeout 120 rdcp --no-progress -r "$T/pool2/" "$d" 2> "$T/err"; rc=$?
    bad_files=$(cd "$T/pool2" && find . -type f ! -path ./d0/f1 | while read -r f; do cmp -s "$f" "$d/$f" || echo "$f"; done | head -3 | tr '\n' ' ')
    [ $rc = 23 ] && [ -z "$bad_files" ] && [ "$(grep -c . "$T/err")" = 1 ] &&
        grep -q "cannot rename into place '.*ow-${v/=/-}/d0/f1': Is a directory" "$T/err" &&
        [ "$(cat "$d/d0/f1/inside")" = keep ] && [ "$(cat "$T/ow-canary")" = canary ] && [ ! -L "$d/d1/f151" ] &&
        no_temps "$d" || { why="$v: rc=$rc differ: $bad_files $(head -3 "$T/err" | tr '\n' ' ') $(find "$d" -name '.rdcp.*' | head -2)"; break; }
done
r=1; [ -z "$why" ] && r=0
check "$name" $r "$why"
rm -rf "$T"/pool-* "$T"/pool2 "$T"/ow-*

name="hard links: 301 names of one inode across 30 dirs, 200 pairs, -a keeps the groups (remote -> remote)"
mkdir -p "$T/hl/d0" && echo one > "$T/hl/d0/base"
for d in $(seq 0 29); do
    mkdir -p "$T/hl/d$d"
    for i in $(seq 10); do ln "$T/hl/d0/base" "$T/hl/d$d/l$i"; done
done
for i in $(seq 200); do echo "pair $i" > "$T/hl/d$((i % 30))/p$i"; ln "$T/hl/d$((i % 30))/p$i" "$T/hl/d$(((i + 7) % 30))/q$i"; done
rdcp_h0 -a h1:"$T/hl" h2:"$T/hl-copy" 2> "$T/err"; rc=$?
groups() { (cd "$1" && find . -type f -printf '%i %p\n' | LC_ALL=C sort -k2 | awk '{ if (!($1 in g)) g[$1] = $2; print $2, g[$1] }'); }
r=1; [ $rc = 0 ] && same_tree "$T/hl" "$T/hl-copy" > "$T/why" && [ "$(stat -c %h "$T/hl-copy/d0/base")" = "$(stat -c %h "$T/hl/d0/base")" ] &&
    diff <(groups "$T/hl") <(groups "$T/hl-copy") > "$T/why" && r=0
check "$name" $r "rc=$rc links $(stat -c %h "$T/hl-copy/d0/base" 2>&1) $(cat "$T/why" "$T/err" | head -3 | tr '\n' ' ')"

name="small files fill the destination (4 MiB tmpfs, receiver workers): 'No space left' per file, no temp files, exit 23"
gen_small "$T/fsmall" 300 9
rdcp_h0 -r h1:"$T/fsmall/" h2:"$T/full2" 2> "$T/err"; rc=$?
differ=$(cd "$T/full2" && find . -type f | while read -r f; do cmp -s "$f" "$T/fsmall/$f" || echo "$f"; done | head -3 | tr '\n' ' ')
r=1; [ $rc = 23 ] && grep -q "h2: .*'.*full2/d[0-9]*/f[0-9]*': No space left on device" "$T/err" && no_temps "$T/full2" &&
    [ -n "$(find "$T/full2" -type f | head -1)" ] && [ -z "$differ" ] && r=0
check "$name" $r "rc=$rc $(head -3 "$T/err" | tr '\n' ' ') $(find "$T/full2" -name '.rdcp.*' | head -3 | tr '\n' ' ') differ: $differ"

# a hostile source against the receiver (no hosts needed; see the script): its streams as
# they are, then with every file flagged as rdcp's sender flags a whole file (RDC_F_NOHASH),
# which the receiver writes on its worker pool
# hostile LABEL [VAR=VALUE...]: its cases as ours; its exit status and last line checked too:
# 77 (it cannot run: treegen does not build...) is a skip, another non-zero status without a
# failing case, or a summary that is not what its lines said (it stopped midway), a failure
hostile() {
    local label=$1 line rc p=0 f=0 s=0 want got; shift
    env "$@" RDPIPE_BIN="$BIN" "$ROOT/tests/rdcp/hostile.sh" > "$T/hostile.out" 2>&1; rc=$?
    while IFS= read -r line; do
        case $line in
            "ok   "*) ok "$label: ${line#ok   }"; p=$((p + 1)) ;;
            "FAIL "*) bad "$label: ${line#FAIL }" ""; f=$((f + 1)) ;;
            "skip: "*) ;;
            "skip "*) line=${line#skip }; skip_case "$label: ${line%%: *}" "${line#*: }"; s=$((s + 1)) ;;
        esac
    done < "$T/hostile.out"
    if [ $rc = 77 ]; then
        line=$(tail -1 "$T/hostile.out"); skip_case "$label" "${line#skip: }"; return
    fi
    want="$p passed, $f failed"; [ $s != 0 ] && want="$want, $s skipped"
    got=$(tail -1 "$T/hostile.out")
    if [ "$got" != "$want" ]; then
        bad "$label" "exit $rc, its last line '$got', not '$want' (what its case lines say): it stopped midway? $(tail -3 "$T/hostile.out" | tr '\n' '|')"
    elif [ $rc != 0 ] && [ $f = 0 ]; then
        bad "$label" "exit $rc without a failing case: $(tail -3 "$T/hostile.out" | tr '\n' '|')"
    elif [ $rc = 0 ] && [ $f != 0 ]; then
        bad "$label" "exit 0 with $f failing cases"
    fi
}
hostile hostile
hostile "hostile (workers)" TREEGEN_NOHASH=1

if [ $SKIPN != 0 ]; then echo "$PASS passed, $FAILN failed, $SKIPN skipped"; else echo "$PASS passed, $FAILN failed"; fi
[ $FAILN = 0 ]
