#!/usr/bin/env bash
# tests/rdcp/hostile.sh - a hostile source against the real tree receiver: tree streams
# written by tests/rdcp/treegen.c (records no honest rdcp sends: a symlink and then a file
# through it, "..", absolute names, NUL bytes, hard links out of DST ...) go with the real
# rdsend to the real `rdcp --tree-recv` (started as rdpipe's agent starts it: key in
# RDPIPE_KEY, --ready-fd, DST). Beside DST lies a canary tree (files, a directory, a
# symlink); after every case its listing, modes, link counts, mtimes and sha256 must be
# unchanged, nothing may appear beside DST, and each refused record is one line on stderr
# with exit 23.
#
#   tests/rdcp/hostile.sh        RDPIPE_BIN=dir: binaries to test (default: bin/ of the repo)
# One line per case ("skip NAME: why" for one that cannot run here), then "N passed, N failed"
# (", N skipped" when some were); exit 0 iff none failed, 77 if it cannot run at all.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${RDPIPE_BIN:-$ROOT/bin}
case $BIN in /*) ;; *) BIN=$ROOT/$BIN ;; esac
[ -x "$BIN/rdcp" ] && [ -x "$BIN/rdsend" ] || { echo "skip: no $BIN/rdcp or rdsend (run make)"; exit 77; }
W=$(mktemp -d /tmp/rdcp-hostile.XXXXXX)
trap '[ "$BASHPID" = '$$' ] && rm -rf "$W"' EXIT   # not in a subshell that inherited it (bash)
cc -O2 -o "$W/treegen" "$ROOT/tests/rdcp/treegen.c" -lxxhash 2> "$W/cc.err" ||
    { echo "skip: cannot build treegen: $(head -1 "$W/cc.err")"; exit 77; }
S=$W/scene   # the canary and DST, nothing else
CAN=$S/canary
mkdir -p "$CAN/dir/sub" "$S/dst"
echo one > "$CAN/file1"; echo two > "$CAN/dir/file2"; ln -s file1 "$CAN/link"
chmod 0640 "$CAN/file1"; chmod 0750 "$CAN/dir"
touch -h -d '2001-01-01' "$CAN/file1" "$CAN/dir/file2" "$CAN/link" "$CAN/dir/sub" "$CAN/dir" "$CAN"

PASS=0 FAILN=0 SKIPN=0
ok() { echo "ok   $1"; PASS=$((PASS + 1)); }
bad() { echo "FAIL $1: $2"; FAILN=$((FAILN + 1)); }
skip_case() { echo "skip $1: $2"; SKIPN=$((SKIPN + 1)); }

# everything about the canary and what lies beside DST
snap() {
    (cd "$S" && find canary -printf '%p %y %m %n %u %T@ %l\n' | LC_ALL=C sort &&
        find canary -type f -exec sha256sum {} + | LC_ALL=C sort && ls -a "$S")
}

# recv [FLAGS...] < script: send the stream to `rdcp --tree-recv FLAGS $S/dst` (made
# fresh by case_); sets rc and leaves the receiver's messages (not its statistics) in $W/msg.
# With --resume the ready fd carries the manifest ("m ..." lines) before the port.
recv() {
    rm -f "$W/port"
    "$W/treegen" > "$W/stream" || { rc=99; return; }
    (RDPIPE_KEY=hostile-key exec timeout 60 "$BIN/rdcp" --tree-recv --ready-fd 3 "$@" "$S/dst" 3> "$W/port" 2> "$W/err") &
    local pid=$! i
    for i in $(seq 100); do grep -q '^[0-9]' "$W/port" 2>/dev/null && break; sleep 0.05; done
    timeout 60 "$BIN/rdsend" 127.0.0.1 "$(grep '^[0-9]' "$W/port")" hostile-key "$W/stream" 2> "$W/send.err"
    wait $pid; rc=$?
    grep -v '^{"tool"\|^@rdcp ' "$W/err" > "$W/msg"
}

# case NAME RC [FLAGS...] < script, then the patterns its lines must match, one per line, in
# $EXPECT (grep -E); the number of lines must be the number of patterns. $PREP (a command):
# what DST holds before the stream (run after DST is made empty, before the canary's snapshot)
case_() {
    local name=$1 want=$2; shift 2
    rm -rf "$S/dst" && mkdir "$S/dst"
    eval "${PREP:-}"
    local before; before=$(snap)
    recv "$@"
    local after; after=$(snap)
    local n; n=$(grep -c . "$W/msg")
    local np; np=$(printf '%s' "$EXPECT" | grep -c .)
    if [ "$before" != "$after" ]; then
        bad "$name" "the canary or DST's neighbourhood changed: $(diff <(echo "$before") <(echo "$after") | head -5 | tr '\n' ' ')"
    elif [ "$rc" != "$want" ]; then
        bad "$name" "exit $rc, want $want: $(head -3 "$W/msg" | tr '\n' ' ')"
    elif [ "$n" != "$np" ]; then
        bad "$name" "$n lines on stderr, want $np: $(head -5 "$W/msg" | tr '\n' ' ')"
    else
        local p
        while IFS= read -r p; do
            [ -n "$p" ] || continue
            grep -Eq -- "$p" "$W/msg" || { bad "$name" "no line matches '$p': $(head -5 "$W/msg" | tr '\n' ' ')"; return; }
        done <<< "$EXPECT"
        ok "$name"
    fi
}
D="'$S/dst"   # how messages begin to name a path in DST
NOTIN="not inside a directory this copy made"

EXPECT=''
case_ "an honest stream: files, dirs, symlink, hard link; exit 0" 0 -p <<EOF
R 0 d 1 x
d a 0750 12345
f a/f1 hello 0600 23456
l a/ln f1
h a/hl 0 a/f1
Z
EOF
r=1; [ "$(cat "$S/dst/a/f1")" = hello ] && [ "$(stat -c '%a %Y %h' "$S/dst/a" "$S/dst/a/f1")" = "$(printf '750 12345 2\n600 23456 2')" ] &&
    [ "$(readlink "$S/dst/a/ln")" = f1 ] && r=0
[ $r = 0 ] && ok "  ... its tree is right" || bad "  ... its tree is right" "$(ls -lR "$S/dst" | head -10 | tr '\n' ' ')"

EXPECT="^rdcp: refusing $D/a/evil.txt': $NOTIN"
case_ "symlink to a dir outside, then a file through it" 23 <<EOF
R 0 d 1 x
l a $CAN/dir
f a/evil.txt EVIL
Z
EOF
[ ! -e "$CAN/dir/evil.txt" ] && [ -L "$S/dst/a" ] && ok "  ... the symlink itself is kept" || bad "  ... the symlink itself is kept" "$(ls -l "$S/dst")"

EXPECT="^rdcp: refusing $D/a/b/c/evil': $NOTIN"
case_ "a made directory, a symlink inside it, a deep file through the symlink" 23 <<EOF
R 0 d 1 x
d a
l a/b $CAN
f a/b/c/evil @100000
Z
EOF

# the same past PATH_MAX (the receiver resolves such a path a part at a time): 22 made
# directories of 200-byte names, a symlink at the bottom, a file through it, and an honest
# file beside it that must arrive
deep=a; for i in $(seq 21); do deep=$deep/$(printf "%03d%0197d" "$i" 0); done
EXPECT="^rdcp: refusing $D/$deep/b/evil': $NOTIN"
case_ "past PATH_MAX: made directories, a symlink at the bottom, a file through it" 23 <<EOF
R 0 d 1 x
$(p=; for c in ${deep//\// }; do p=${p:+$p/}$c; echo "d $p"; done)
l $deep/b $CAN
f $deep/b/evil @100000
f $deep/honest HONEST
Z
EOF
[ "$(cd "$S/dst" && for c in ${deep//\// }; do cd "$c" || exit; done && cat honest)" = HONEST ] && [ ${#deep} -gt 4096 ] &&
    ok "  ... the honest file $((${#deep} + 7)) bytes deep arrived" || bad "  ... the honest file arrived" "$(ls "$S/dst" | head -3)"

EXPECT="^rdcp: cannot create directory $D/a': File exists"
case_ "symlink, then a directory record of the same name, then a file into it (dropped)" 23 <<EOF
R 0 d 1 x
l a $CAN/dir
d a
f a/evil EVIL
d a/sub
f a/sub/evil EVIL
Z
EOF

EXPECT="^rdcp: refusing $D/a/file2': $NOTIN
^rdcp: refusing $D/a/sub': $NOTIN
^rdcp: refusing $D/a/link2': $NOTIN"
case_ "unlink and rename through a link: a symlink, a directory and a hard link over canary names" 23 <<EOF
R 0 d 1 x
f ok OK
l a $CAN/dir
l a/file2 x
d a/sub
h a/link2 0 ok
Z
EOF

EXPECT="^rdcp: refusing $D/h1': hard link: '\.\.' component
^rdcp: refusing $D/h2': hard link: its target is not a file this copy made
^rdcp: refusing $D/h3': hard link: absolute path
^rdcp: refusing $D/h4': hard link: its target is not a file this copy made
^rdcp: refusing $D/h5': hard link: its target's root was not copied"
case_ "hard links to files outside DST (.., through a symlink, absolute, pre-existing, other root)" 23 <<EOF
R 0 d 1 x
l out $CAN
h h1 0 ../canary/file1
h h2 0 out/file1
h h3 0 $CAN/file1
h h4 0 out
h h5 7 file1
Z
EOF

EXPECT="^rdcp: refusing $D/a/file2': $NOTIN
^rdcp: cannot create directory $D/a': File exists
^rdcp: refusing $D/l1': this copy just made it from another source \(two sources with one name\)"
case_ "-p: chmod and utimes through a link (skipped file, directory, the link itself)" 23 -p --resume <<EOF
R 0 d 1 x
l a $CAN/dir
s a/file2 4 0777 5
d a 0777 5
l l1 $CAN/file1
s l1 4 0777 5
Z
EOF

# the same through a link that was in DST before the stream, not one the stream just made
EXPECT="^rdcp: refusing $D/l1': said to be complete here, but no regular file is"
PREP='ln -s "$CAN/file1" "$S/dst/l1"'
case_ "-p: chmod and utimes through a link already in DST, said to be complete" 23 -p --resume <<EOF
R 0 d 1 x
s l1 4 0777 5
Z
EOF
PREP=''

EXPECT="^rdcp: refusing $D/\.\./evil-up': '\.\.' component
^rdcp: refusing $D/$S/evil-abs': absolute path
^rdcp: refusing $D/a//b': empty path component
^rdcp: refusing $D/a/\\\\000b': NUL byte in the name
^rdcp: refusing $D/a/\.': '\.' component
^rdcp: refusing $D/a/\.\./\.\./evil-up2': '\.\.' component
^rdcp: refusing $D/a/': empty path component
^rdcp: refusing $D/\.\./evil-dir': '\.\.' component
^rdcp: refusing $D/\.\./evil-link': '\.\.' component
^rdcp: refusing $D/a/l': NUL byte in the link target"
case_ "names: .., absolute, empty components, NUL, ., trailing slash (files, dirs, links)" 23 <<EOF
R 0 d 1 x
d a
f ../evil-up EVIL
f $S/evil-abs EVIL
f a//b EVIL
f a/\x00b EVIL
f a/. EVIL
f a/../../evil-up2 EVIL
f a/ EVIL
d ../evil-dir
l ../evil-link $CAN
l a/l x\x00y
f a/fine FINE
Z
EOF
[ "$(cat "$S/dst/a/fine" 2>/dev/null)" = FINE ] && ok "  ... the good file after them is copied" || bad "  ... the good file after them is copied" "$(ls -l "$S/dst/a")"

EXPECT=''
case_ "a root named .. or / goes into DST itself" 0 <<EOF
R 0 d 0 ..
d -
f r1 R1
R 1 d 0 /
d -
f r2 R2
Z
EOF

EXPECT="^rdcp: cannot rename into place $D/a': Is a directory
^rdcp: cannot create directory $D/b': File exists
^rdcp: refusing $D/b': this copy just made it from another source \(two sources with one name\)
^rdcp: refusing $D/c': this copy just made it from another source \(two sources with one name\)"
case_ "duplicate names: a file over a directory, a directory over a file (its subtree dropped), a file over a file" 23 <<EOF
R 0 d 1 x
d a
f a OVER
f b B
d b
f b/x X
f b B2
f c C1
f c C2
Z
EOF
[ "$(cat "$S/dst/b")$(cat "$S/dst/c")" = BC1 ] && [ -d "$S/dst/a" ] && ok "  ... a later file of the same name is refused, the first stays (as cp refuses it)" ||
    bad "  ... a later file of the same name is refused, the first stays (as cp refuses it)" "$(ls -l "$S/dst")"

EXPECT=''
case_ "a file root into a directory DST lands in DST/NAME" 0 <<EOF
R 0 f 0 x
f - X
Z
EOF

# special files: a FIFO and a socket are made (empty, the mode as a file gets it); a device
# node is refused whatever mode it asks, and so is one outside DST or through a symlink
EXPECT="^rdcp: refusing $D/dev-c': not a FIFO or a socket \(rdcp makes no device nodes\)
^rdcp: refusing $D/dev-b': not a FIFO or a socket \(rdcp makes no device nodes\)
^rdcp: refusing $D/\.\./evil-fifo': '\.\.' component
^rdcp: refusing $D/ln/evil-fifo': $NOTIN"
case_ "special files: FIFO and socket made; device nodes, a FIFO outside DST or through a symlink refused" 23 <<EOF
R 0 d 1 x
n fifo p 0640
n sock s 0600
n dev-c c 0666
n dev-b b 0666
n ../evil-fifo p
l ln $CAN/dir
n ln/evil-fifo p
f after AFTER
Z
EOF
r=1; [ -p "$S/dst/fifo" ] && [ -S "$S/dst/sock" ] && [ "$(stat -c %a "$S/dst/fifo")" = 640 ] &&
    [ ! -e "$S/dst/dev-c" ] && [ ! -e "$S/dst/dev-b" ] && [ ! -e "$CAN/dir/evil-fifo" ] &&
    [ "$(cat "$S/dst/after")" = AFTER ] && r=0
[ $r = 0 ] && ok "  ... a FIFO and a socket are there, no device node, the file after them copied" ||
    bad "  ... a FIFO and a socket are there, no device node, the file after them copied" "$(ls -la "$S/dst" | tr '\n' ' ')"

# a file sent with its whole-file hash (not RDC_F_NOHASH) is checked against it
EXPECT="^rdcp: whole-file hash mismatch, not copied: $D/bad'"
case_ "a hashed file whose whole-file hash does not match: not copied, no temp file" 23 <<EOF
R 0 d 1 x
f good hello
x bad hello
f after @70000
Z
EOF
r=1; [ "$(cat "$S/dst/good")" = hello ] && [ ! -e "$S/dst/bad" ] && [ "$(stat -c %s "$S/dst/after")" = 70000 ] &&
    [ -z "$(find "$S/dst" -name '.rdcp.*')" ] && r=0
[ $r = 0 ] && ok "  ... the others are copied" || bad "  ... the others are copied" "$(ls -la "$S/dst" | tr '\n' ' ')"

# extended attributes: a receiver takes user.* with -X and ACLs with -p, nothing else (file
# capabilities or overlayfs' trusted.* from a hostile source would grant privileges); on the
# files its workers write (TREEGEN_NOHASH=1) and on those its stream thread writes
xattrs() {   # xattrs PATH: its attributes, one "name=value" a line (values as getfattr -e text)
    getfattr -h -d -m - --absolute-names "$1" 2>/dev/null | grep -v '^#' | grep . | LC_ALL=C sort | tr '\n' ' '
}
for nohash in 1 0; do
    EXPECT="^rdcp: refusing extended attribute 'security\.capability' of $D/sub': not a user\.\* attribute \(-X\) or an ACL \(-p\)
^rdcp: refusing extended attribute 'trusted\.overlay\.opaque' of $D/sub/f': not a user
^rdcp: refusing extended attribute 'system\.posix_acl_default' of $D/sub/f': not a user
^rdcp: refusing extended attribute 'plain' of $D/sub/big': not a user
^rdcp: cannot set extended attribute 'system\.posix_acl_access' of $D/sub/acl': "
    TREEGEN_NOHASH=$nohash case_ "extended attributes (-p -X, nohash $nohash): user.* and ACLs set; security.*, trusted.*, a file's default ACL refused; a bad ACL fails alone" 23 -p -X <<EOF
R 0 d 1 x
d sub
A security.capability \x01\x00\x00\x02
a user.dir D1
A user.ok yes
A trusted.overlay.opaque y
A system.posix_acl_default x
f sub/f hello
A plain x
A user.big @3000
f sub/big @1100000
A system.posix_acl_access garbage
f sub/acl hello
f sub/after hello
Z
EOF
    want="user.dir=\"D1\" "
    r=1; [ "$(xattrs "$S/dst/sub")" = "$want" ] && [ "$(xattrs "$S/dst/sub/f")" = 'user.ok="yes" ' ] &&
        [ "$(getfattr --only-values -n user.big "$S/dst/sub/big" 2>/dev/null | wc -c)" = 3000 ] &&
        [ "$(cat "$S/dst/sub/acl")" = hello ] && [ -z "$(xattrs "$S/dst/sub/acl")" ] &&
        [ -z "$(xattrs "$S/dst/sub/after")" ] && r=0
    [ $r = 0 ] && ok "  ... exactly the attributes taken are there" ||
        bad "  ... exactly the attributes taken are there" "sub: $(xattrs "$S/dst/sub") f: $(xattrs "$S/dst/sub/f") acl: $(xattrs "$S/dst/sub/acl")"
done
EXPECT="^rdcp: refusing extended attribute 'user\.x' of $D/f1': not a user
^rdcp: refusing extended attribute 'system\.posix_acl_access' of $D/f1': not a user"
case_ "extended attributes the receiver was not asked for (no -p, no -X) are refused, the file copied" 23 <<EOF
R 0 d 1 x
A user.x y
A system.posix_acl_access y
f f1 hello
Z
EOF
[ "$(cat "$S/dst/f1")" = hello ] && [ -z "$(xattrs "$S/dst/f1")" ] && ok "  ... f1 is there, without them" ||
    bad "  ... f1 is there, without them" "$(xattrs "$S/dst/f1")"
# a FIFO's and a socket's: their ACL is set (through an O_PATH fd: opening a FIFO would wait);
# user.* the kernel refuses there (one line); security.* never taken
NODE_ACL='\x02\x00\x00\x00\x01\x00\x06\x00\xff\xff\xff\xff\x02\x00\x04\x00\xfe\xff\x00\x00\x04\x00\x04\x00\xff\xff\xff\xff\x10\x00\x04\x00\xff\xff\xff\xff\x20\x00\x00\x00\xff\xff\xff\xff'
EXPECT="^rdcp: refusing extended attribute 'security\.capability' of $D/fifo': not a user
^rdcp: cannot set extended attribute 'user\.x' of $D/sock': Operation not permitted"
case_ "a FIFO's and a socket's attributes (-p -X): the ACL set, user.* refused by the kernel, security.* by us" 23 -p -X <<EOF
R 0 d 1 x
n fifo p 0640
A security.capability x
a system.posix_acl_access $NODE_ACL
n sock s 0600
a user.x y
f after AFTER
Z
EOF
r=1; [ -p "$S/dst/fifo" ] && getfacl -np "$S/dst/fifo" 2>/dev/null | grep -q '^user:65534:r--$' &&
    [ -S "$S/dst/sock" ] && [ "$(cat "$S/dst/after")" = AFTER ] && r=0
[ $r = 0 ] && ok "  ... the FIFO has the ACL, the file after them is copied" ||
    bad "  ... the FIFO has the ACL, the file after them is copied" "$(getfacl -np "$S/dst/fifo" 2>&1 | tr '\n' ' ')"
EXPECT="^rdcp: .*malformed record"
case_ "an 'x' record after a symlink (it belongs to no file or directory): the stream is broken, exit 4" 4 -X <<EOF
R 0 d 1 x
l ln target
a user.x y
Z
EOF
EXPECT="^rdcp: .*malformed record"
case_ "an attribute value over 64 KiB: the stream is broken, exit 4" 4 -X <<EOF
R 0 d 1 x
d sub
a user.v @65537
Z
EOF

# Skipping a file ("complete here") and continuing a partial one work in place on a file
# already in DST, where a hard link may share its inode with a file outside (snapshots made
# with cp -al or rsync --link-dest): a receiver not started with --resume takes neither
# (before 2026-11-27 it took both from any stream: the canary's file1 became mode 6777 with
# user.evil set, file2 was overwritten, and y was linked to it)
PREP='ln "$CAN/file1" "$S/dst/x"; ln "$CAN/dir/file2" "$S/dst/.rdcp.f.abcdef"'
EXPECT="^rdcp: refusing $D/x': skipped or continued by the sender, and this copy is not --resume
^rdcp: refusing $D/y': hard link: its target is not a file this copy made
^rdcp: refusing $D/f': skipped or continued by the sender, and this copy is not --resume"
case_ "no --resume: a skip record (mode, times, attributes in place) and a continued partial file are refused" 23 -p -X <<EOF
R 0 d 1 x
A user.evil 1
s x 4 06777 5
h y 0 x
c f twoPWNED 3 .rdcp.f.abcdef
Z
EOF
[ -z "$(getfattr --absolute-names -d "$CAN/file1" 2>/dev/null)" ] && ok "  ... the canary got no attribute" ||
    bad "  ... the canary got no attribute" "$(getfattr --absolute-names -d "$CAN/file1" 2>&1)"
# With --resume a partial file with another name is not continued (one rdcp made has one), and
# a file said to be complete must have the size the sender names
PREP='ln "$CAN/dir/file2" "$S/dst/.rdcp.f.abcdef"; echo own > "$S/dst/z"'
EXPECT="^rdcp: cannot continue the partial file of $D/f': Too many links
^rdcp: refusing $D/z': said to be complete here, but the file here has another size"
case_ "--resume: a partial file hard-linked elsewhere is not continued; a skipped file of another size is refused" 23 -p --resume <<EOF
R 0 d 1 x
c f twoPWNED 3 .rdcp.f.abcdef
s z 9 0600
Z
EOF
[ "$(cat "$S/dst/z")" = own ] && [ "$(stat -c %a "$S/dst/z")" != 600 ] && ok "  ... z untouched" ||
    bad "  ... z untouched" "$(stat -c '%a %s' "$S/dst/z")"
PREP=
# With --resume a file said to be complete, hard-linked to a file outside DST: its owner, mode,
# times and attributes go to a file of its own that takes its name, not to the canary (before
# 2026-11-29 the canary became mode 6777 with user.evil set)
# (the outside file is not the canary, whose link count the snapshot compares: x leaves it)
PREP='echo one > "$W/outside" && chmod 640 "$W/outside" && touch -d 2001-01-01 "$W/outside" && ln "$W/outside" "$S/dst/x"'
EXPECT=''
case_ "--resume: a complete file hard-linked outside DST gets its metadata as a file of its own" 0 -p -X --resume <<EOF
R 0 d 1 x
A user.evil 1
s x 4 06777 5
Z
EOF
[ "$(cat "$S/dst/x")" = one ] && [ "$(stat -c '%a %h %Y' "$S/dst/x")" = "6777 1 5" ] &&
    [ "$(getfattr --absolute-names --only-values -n user.evil "$S/dst/x" 2>/dev/null)" = 1 ] &&
    [ "$(stat -c '%a %h %Y' "$W/outside")" = "640 1 978307200" ] &&
    [ -z "$(getfattr --absolute-names -d "$W/outside" 2>/dev/null)" ] && ok "  ... x its own, the file outside as it was" ||
    bad "  ... x its own, the file outside as it was" "x: $(stat -c '%a %h %Y %s' "$S/dst/x"); outside: $(stat -c '%a %h %Y' "$W/outside") $(getfattr --absolute-names -d "$W/outside" 2>&1)"
PREP=
# The file of its own keeps what the source does not set: its owner (without -p) and its
# attributes (a cp -al snapshot's file of another user, with an attribute the source lacks)
PREP='echo one > "$W/outside2" && chown nobody "$W/outside2" && setfattr -n user.keep -v 1 "$W/outside2" 2> /dev/null; ln "$W/outside2" "$S/dst/x"'
EXPECT=''
case_ "--resume -X without -p: the file of its own keeps its owner and its attributes" 0 -X --resume <<EOF
R 0 d 1 x
s x 4 0644 5
Z
EOF
[ "$(stat -c '%U %h' "$S/dst/x")" = "nobody 1" ] && [ "$(cat "$S/dst/x")" = one ] &&
    { ! getfattr -n user.keep "$W/outside2" > /dev/null 2>&1 ||
      [ "$(getfattr --absolute-names --only-values -n user.keep "$S/dst/x" 2>/dev/null)" = 1 ]; } &&
    ok "  ... owner nobody and user.keep kept" ||
    bad "  ... owner nobody and user.keep kept" "$(stat -c '%U %h %s' "$S/dst/x"); $(getfattr --absolute-names -d "$S/dst/x" 2>&1)"
PREP=
# A partial file to continue must not be a file this stream just made: a source file named
# like one (copied on by an honest sender) would be appended to and renamed away
EXPECT="^rdcp: cannot continue the partial file of $D/f': File exists"
case_ "--resume: a 'partial file' the stream itself just made is not continued" 23 -p --resume <<EOF
R 0 d 1 x
f .rdcp.f.abcdef mine 0644
c f twoPWNED 3 .rdcp.f.abcdef
Z
EOF
[ "$(cat "$S/dst/.rdcp.f.abcdef" 2>/dev/null)" = mine ] && [ ! -e "$S/dst/f" ] && ok "  ... the file it made kept, no f" ||
    bad "  ... the file it made kept, no f" "$(ls -la "$S/dst" | tr '\n' '|')"

# A directory whose metadata cannot be set at the end (-p: here an existing directory made
# immutable, so chown, chmod and utimes fail): one line for each, exit 23 (before 2026-11-27
# only a failed chown was said; a failed chmod or utimes, or a directory that could not be
# opened, went without a word, and without -p or as another user the copy exited 0)
if mkdir -p "$W/immut" && chattr +i "$W/immut" 2>/dev/null; then
    chattr -i "$W/immut"
    PREP='mkdir "$S/dst/a" && chattr +i "$S/dst/a"'
    EXPECT="^rdcp: cannot set the owner of $D/a': Operation not permitted
^rdcp: cannot set the mode of $D/a': Operation not permitted
^rdcp: cannot set the times of $D/a': Operation not permitted"
    case_ "-p: a directory whose owner, mode and times cannot be set: a line each, exit 23" 23 -p <<EOF
R 0 d 1 x
d a 0700 5
Z
EOF
    chattr -i "$S/dst/a"
    PREP=
else
    skip_case "-p: a directory whose owner, mode and times cannot be set" "no chattr +i here"
fi

# Exit 0 means durable on every filesystem the copy wrote to: here a second one (ext4 on a
# loop device) mounted beneath DST, which DST's own syncfs does not reach (before 2026-11-27
# its files were left to the kernel's writeback: exit 0 with nothing written to its device).
# The device's count of sectors written, right after the receiver exits, must cover the file.
if truncate -s 64M "$W/m.img" && mkfs.ext4 -q -F "$W/m.img" 2>/dev/null && mkdir -p "$W/mnt" &&
   mount -o loop "$W/m.img" "$W/mnt" 2>/dev/null; then
    umount "$W/mnt"
    PREP='mkdir "$S/dst/m" && mount -o loop "$W/m.img" "$S/dst/m" && sync "$S/dst/m"'
    EXPECT=''
    written() { awk '{ print $7 }' "/sys/block/$(basename "$(findmnt -no SOURCE "$S/dst/m")")/stat"; }
    sectors_before=
    recv_then() { sectors_before=$(written); }
    PREP="$PREP && recv_then"
    case_ "a filesystem mounted beneath DST is synced before exit 0" 0 <<EOF
R 0 d 1 x
d m
f m/big @4194304
Z
EOF
    got=$(( $(written) - sectors_before ))
    [ "$got" -ge 8192 ] && ok "  ... its device wrote $got sectors before the receiver exited (the file: 8192)" ||
        bad "  ... its device wrote the file before the receiver exited" "$got sectors written, want 8192 or more"
    umount "$S/dst/m"
    PREP=
else
    skip_case "a filesystem mounted beneath DST is synced" "cannot mount a loop device here"
fi
rm -f "$W/m.img"

# A hashed sparse file of 1 PiB, all hole but its last byte: its hash runs over zeros for
# hours, while 200 MiB more of the stream fill the receiver's ring and hold the sender back.
# Once the sender is gone, the receiver stops (before: it went on hashing, orphaned, as long
# as nothing else stopped it). The killed sender's socket still holds unsent data against a
# closed window: while a window is closed its close is abortive (transport/rd_tcp_watch), so
# the receiver gets a reset at once (before 2026-11-27: about 20 s later, when that socket's
# TCP_USER_TIMEOUT ran out). A sender that is alive waits for the receiver however long
# (stalls.sh). Once per run of this script (not again with TREEGEN_NOHASH).
if [ -z "${TREEGEN_NOHASH:-}" ]; then
rm -rf "$S/dst" "$W/port" && mkdir "$S/dst"
{ printf 'R 0 d 1 x\nH big 1125899906842624\n'; for i in $(seq 200); do echo "f after$i @1048576"; done; echo Z; } |
    "$W/treegen" > "$W/stream"
(RDPIPE_KEY=hostile-key exec timeout 60 "$BIN/rdcp" --tree-recv --ready-fd 3 "$S/dst" 3> "$W/port" 2> "$W/err") &
pid=$!
for i in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.05; done
(exec "$BIN/rdsend" 127.0.0.1 "$(cat "$W/port")" hostile-key "$W/stream" 2> "$W/send.err") &
spid=$!   # rdsend itself (before 2026-11-27 a `timeout` around it, so the kill missed rdsend)
# killed once its socket holds unsent data against the closed window (ss: Send-Q) and rdsend's
# watcher, which looks twice a second, has seen the window closed: that is what this case is
# about. After a fixed second a loaded machine had not got there, and the kill closed the
# socket gently, its FIN waiting behind the full ring (2026-12-07)
rport=$(cat "$W/port")
for i in $(seq 200); do
    sq=$(ss -tnH state established "( dport = :$rport )" 2>/dev/null | awk '{ s += $2 } END { print s + 0 }')
    [ "${sq:-0}" -gt 1048576 ] && break
    sleep 0.1
done
sleep 1.2
kill -9 $spid; wait $spid 2>/dev/null
t0=$EPOCHREALTIME
wait $pid; rc=$?
took=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
if [ $rc = 4 ] && awk -v t="$took" 'BEGIN { exit !(t < 15) }'; then
    ok "a 1 PiB hashed hole: the receiver stops once its sender is killed, exit 4 (after $took s)"
else
    bad "a 1 PiB hashed hole: the receiver stops once its sender is killed" "exit $rc after $took s: $(grep -v '^{"tool"\|^@rdcp ' "$W/err" | head -3 | tr '\n' ' ')"
fi
rm -rf "$S/dst" && mkdir "$S/dst"
fi

# A whole file of 4 MiB sent as 4 Mi data records of one byte each. The receiver lends a big
# file's pieces to its workers out of the frames they came in, but not a piece under 64 KiB:
# each one would cost an allocation and a queue entry, held until the workers catch up, so
# such a stream makes the receiver hold far more than its ring (the build that lent every
# piece: 38 MB at its peak against 16 MB for an honest 64 MiB file in 1 MiB records). Its
# peak memory must stay within 8 MB of that honest stream's, and the file must arrive whole.
# Not under ThreadSanitizer: its shadow memory alone put 20 MB between the two (70 against 50).
if [ -z "${TREEGEN_NOHASH:-}" ] && nm "$BIN/rdcp" 2> /dev/null | grep -q ' __tsan_init$'; then
    skip_case "a big file in 1-byte data records: copied whole, peak memory within 8 MiB of honest records'" \
        "a ThreadSanitizer build: its shadow memory swamps the peak"
elif [ -z "${TREEGEN_NOHASH:-}" ]; then
peak() {   # peak STREAM [RDSEND OPTIONS]: sets rc and the receiver's peak RSS in KiB, rss
    rm -rf "$S/dst" "$W/port" && mkdir "$S/dst"
    (RDPIPE_KEY=hostile-key exec python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:], pass_fds=(3,))
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)' "$W/rss" timeout 120 "$BIN/rdcp" --tree-recv --ready-fd 3 "$S/dst" 3> "$W/port" 2> "$W/err") &
    local pid=$! i
    for i in $(seq 100); do grep -q '^[0-9]' "$W/port" 2>/dev/null && break; sleep 0.05; done
    timeout 120 "$BIN/rdsend" "${@:2}" 127.0.0.1 "$(grep '^[0-9]' "$W/port")" hostile-key "$1" 2> "$W/send.err"
    wait $pid; rc=$?
    rss=$(cat "$W/rss" 2>/dev/null || echo 0)
}
printf 'R 0 d 1 x\np big 67108864 1048576\nZ\n' | "$W/treegen" > "$W/stream"
peak "$W/stream"; honest=$rss hrc=$rc
printf 'R 0 d 1 x\np big 4194304 1\nZ\n' | "$W/treegen" > "$W/stream"
peak "$W/stream"; tiny=$rss
want=$(python3 -c 'import sys; sys.stdout.buffer.write(bytes(97 + i % 26 for i in range(4194304)))' | sha256sum)
got=$(sha256sum < "$S/dst/big" 2>/dev/null)
if [ $hrc = 0 ] && [ $rc = 0 ] && [ "$got" = "$want" ] && [ "$tiny" -le $((honest + 8192)) ]; then
    ok "a big file in 1-byte data records: copied whole, peak memory $tiny KiB (honest records: $honest KiB)"
else
    bad "a big file in 1-byte data records: copied whole, peak memory within 8 MiB of honest records'" \
        "exit $hrc and $rc, peak $tiny KiB against $honest KiB, file $([ "$got" = "$want" ] && echo whole || echo wrong)"
fi
# The same for small files, which the workers write out of the frames their bytes came in: a
# file keeps at most 4 pieces there, the rest of it is copied. In 16 MiB frames (the sender
# picks the size), a build that kept every piece held an allocation per byte of a frame: 96 MB
# at its peak against 43 MB for honest records. Both streams are 71 MB long (the honest one in
# 136 files), 2 frames in flight: both fill the receiver's ring alike.
small() { echo 'R 0 d 1 x'; for i in $(seq "$2"); do echo "p s$i 524288 $1"; done; echo Z; }
small 65536 136 | "$W/treegen" > "$W/stream"
peak "$W/stream" --chunk-size 16M --depth 2; honest=$rss hrc=$rc
small 1 8 | "$W/treegen" > "$W/stream"
peak "$W/stream" --chunk-size 16M --depth 2; tiny=$rss
want=$(python3 -c 'import sys; sys.stdout.buffer.write(bytes(97 + i % 26 for i in range(524288)))' | sha256sum)
whole=0
for i in 1 2 3 4 5 6 7 8; do [ "$(sha256sum < "$S/dst/s$i" 2>/dev/null)" = "$want" ] && whole=$((whole + 1)); done
if [ $hrc = 0 ] && [ $rc = 0 ] && [ $whole = 8 ] && [ "$tiny" -le $((honest + 8192)) ]; then
    ok "small files in 1-byte data records: copied whole, peak memory $tiny KiB (honest records: $honest KiB)"
else
    bad "small files in 1-byte data records: copied whole, peak memory within 8 MiB of honest records'" \
        "exit $hrc and $rc, peak $tiny KiB against $honest KiB, $whole of 8 files whole"
fi
rm -rf "$S/dst" && mkdir "$S/dst"
fi

# A stream that ends inside a small file (one the workers write): its bytes wait in the frame
# they came in while the file gathers, and are copied out when the frame goes back to the
# engine, which waits for every frame it lent before it returns (a build that kept them there
# hung in that wait until timeout killed it). Exit 4 on both ends, no file, no temporary, the
# file before it in place. Once per run of this script.
if [ -z "${TREEGEN_NOHASH:-}" ]; then
rm -rf "$S/dst" "$W/port" && mkdir "$S/dst"
printf 'R 0 d 1 x\nf before @1000\nT cut 1000000 600000\n' | "$W/treegen" > "$W/stream"
(RDPIPE_KEY=hostile-key exec timeout 30 "$BIN/rdcp" --tree-recv --ready-fd 3 "$S/dst" 3> "$W/port" 2> "$W/err") &
pid=$!
for i in $(seq 100); do grep -q '^[0-9]' "$W/port" 2>/dev/null && break; sleep 0.05; done
timeout 30 "$BIN/rdsend" 127.0.0.1 "$(grep '^[0-9]' "$W/port")" hostile-key "$W/stream" 2> "$W/send.err"; src=$?
wait $pid; rc=$?
if [ $rc = 4 ] && [ $src = 4 ] && grep -q "^rdcp: tree stream ended inside a record" "$W/err" && [ ! -e "$S/dst/cut" ] &&
    [ -z "$(find "$S/dst" -name '.rdcp.*')" ] && [ "$(wc -c < "$S/dst/before")" = 1000 ]; then
    ok "a stream that ends inside a small file: exit 4 on both ends, no file, no temporary"
else
    bad "a stream that ends inside a small file: exit 4 on both ends, no file, no temporary" \
        "exit $rc and $src: $(grep -v '^{"tool"\|^@rdcp ' "$W/err" | head -3 | tr '\n' ' ') $(ls -a "$S/dst" | tr '\n' ' ')"
fi
rm -rf "$S/dst" && mkdir "$S/dst"
fi

# --resume: the manifest of DST (what it already holds) must not list what a symlink in DST
# points to
rm -rf "$S/dst" "$W/port" && mkdir -p "$S/dst/sub" && echo own > "$S/dst/sub/own" && ln -s "$CAN/dir" "$S/dst/out" && ln -s "$CAN" "$S/dst/sub/up"
echo Z | "$W/treegen" > "$W/stream"
(RDPIPE_KEY=hostile-key exec timeout 60 "$BIN/rdcp" --tree-recv --ready-fd 3 --resume "$S/dst" 3> "$W/port" 2> "$W/err") &
pid=$!
for i in $(seq 100); do grep -q '^[0-9]' "$W/port" 2>/dev/null && break; sleep 0.05; done
timeout 60 "$BIN/rdsend" 127.0.0.1 "$(grep '^[0-9]' "$W/port")" hostile-key "$W/stream" 2> "$W/send.err"
wait $pid; rc=$?
# a manifest line: hex of u8 kind, u64 size, i64 + u32 mtime, 16 bytes hash, then u32 length + path
man=$(sed -n 's/^m //p' "$W/port" | python3 -c 'import sys; [print(bytes.fromhex(l.strip())[41:].decode("latin1")) for l in sys.stdin]' | tr -c '[:print:]\n' '.')
if [ $rc = 0 ] && [ "$(grep -c . <<< "$man")" = 2 ] && grep -q 'sub/own' <<< "$man" && ! grep -q 'file' <<< "$man"; then
    ok "--resume manifest: DST's files only, nothing behind its symlinks"
else
    bad "--resume manifest: DST's files only, nothing behind its symlinks" "rc=$rc manifest: $(tr '\n' ' ' <<< "$man")"
fi
rm -rf "$S/dst" && mkdir "$S/dst"

# A partial file named for continuing (--resume) that another rdcp still writes, as its lock
# (flock) says: not continued, one line, exit 23, and it stays as it was. The same file not
# held is continued.
resume_held() {   # resume_held NAME HOLD(0/1)
    local name=$1 hold=$2 holder=
    rm -rf "$S/dst" "$W/port" && mkdir "$S/dst" && printf abcdefghij > "$S/dst/.rdcp.f.Held01"
    printf 'R 0 d 1 x\nc f abcdefghijklmnopqrstuvwxyz 10 .rdcp.f.Held01\nZ\n' | "$W/treegen" > "$W/stream"
    if [ "$hold" = 1 ]; then
        flock -x "$S/dst/.rdcp.f.Held01" sleep 60 & holder=$!
        for i in $(seq 50); do flock -n "$S/dst/.rdcp.f.Held01" true || break; sleep 0.05; done
    fi
    (RDPIPE_KEY=hostile-key exec timeout 60 "$BIN/rdcp" --tree-recv --ready-fd 3 --resume "$S/dst" 3> "$W/port" 2> "$W/err") &
    local pid=$!
    for i in $(seq 100); do grep -q '^[0-9]' "$W/port" 2>/dev/null && break; sleep 0.05; done
    timeout 60 "$BIN/rdsend" 127.0.0.1 "$(grep '^[0-9]' "$W/port")" hostile-key "$W/stream" 2> "$W/send.err"
    wait $pid; rc=$?
    [ -n "$holder" ] && { pkill -P "$holder"; kill "$holder"; wait "$holder"; } 2> /dev/null
    grep -v '^{"tool"\|^@rdcp ' "$W/err" > "$W/msg"
    if [ "$hold" = 1 ]; then
        if [ $rc = 23 ] && [ "$(grep -c . "$W/msg")" = 1 ] &&
           grep -q "^rdcp: cannot continue the partial file of $D/f': Device or resource busy$" "$W/msg" &&
           [ "$(cat "$S/dst/.rdcp.f.Held01")" = abcdefghij ] && [ ! -e "$S/dst/f" ]; then
            ok "$name"
        else
            bad "$name" "rc=$rc $(head -3 "$W/msg" | tr '\n' ' ') $(ls -a "$S/dst" | tr '\n' ' ')"
        fi
    elif [ $rc = 0 ] && [ "$(cat "$S/dst/f" 2> /dev/null)" = abcdefghijklmnopqrstuvwxyz ] && [ ! -e "$S/dst/.rdcp.f.Held01" ]; then
        ok "$name"
    else
        bad "$name" "rc=$rc $(head -3 "$W/msg" | tr '\n' ' ') $(ls -a "$S/dst" | tr '\n' ' ')"
    fi
}
resume_held "--resume: a partial file another rdcp holds (flock) is not continued: one line, exit 23, left as it was" 1
resume_held "--resume: the same partial file, not held, is continued from its 10 bytes" 0
rm -rf "$S/dst" && mkdir "$S/dst"

# a local process swaps a directory for a symlink to the canary while the receiver writes into
# it (and into a sibling, so that it opens the directory again and again)
race() {   # race NAME [env...]
    local name=$1; shift
    { echo "R 0 d 1 x"; echo "d sub"; echo "d other"
      for i in $(seq 300); do echo "f sub/s$i @20000"; echo "f other/o$i @20000"; echo "d sub/d$i"; echo "f sub/d$i/x @100"; done
      echo Z; } > "$W/race.script"
    local before; before=$(snap)
    rm -rf "$S/dst" "$W/port" && mkdir "$S/dst"
    "$W/treegen" < "$W/race.script" > "$W/stream"
    (cd "$S/dst" && while :; do
        mv -T sub sub.real 2>/dev/null && ln -s "$CAN/dir" sub && rm -f sub && mv -T sub.real sub
    done) 2>/dev/null &
    local swapper=$!
    (RDPIPE_KEY=hostile-key exec env "$@" timeout 60 "$BIN/rdcp" --tree-recv --ready-fd 3 "$S/dst" 3> "$W/port" 2> "$W/err") &
    local pid=$! i
    for i in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.05; done
    timeout 60 "$BIN/rdsend" 127.0.0.1 "$(cat "$W/port")" hostile-key "$W/stream" 2> "$W/send.err"
    wait $pid; rc=$?
    kill $swapper; wait $swapper 2>/dev/null; sleep 0.2   # its last mv may still run
    [ -d "$S/dst/sub.real" ] && { rm -f "$S/dst/sub"; mv -T "$S/dst/sub.real" "$S/dst/sub"; }
    local after; after=$(snap)
    grep -v '^{"tool"\|^@rdcp ' "$W/err" > "$W/msg"
    local got; got=$(find "$S/dst" -type f | wc -l)
    local failed; failed=$(grep -c . "$W/msg")
    local dfail; dfail=$(grep -c "/sub/d[0-9]*'" "$W/msg")   # a directory that failed drops its file
    if [ "$before" != "$after" ]; then
        bad "$name" "the canary changed: $(diff <(echo "$before") <(echo "$after") | head -5 | tr '\n' ' ')"
    elif [ "$rc" != 0 ] && [ "$rc" != 23 ]; then
        bad "$name" "exit $rc: $(head -3 "$W/msg" | tr '\n' ' ')"
    elif [ $((got + failed + dfail)) -lt 900 ] || { [ "$rc" = 23 ] && [ "$failed" = 0 ]; }; then
        bad "$name" "$got files copied + $failed lines, want 900: $(head -3 "$W/msg" | tr '\n' ' ')"
    elif grep -v "cannot open the directory of\|$NOTIN\|cannot create directory" "$W/msg" | grep -q .; then
        bad "$name" "unexpected: $(head -3 "$W/msg" | tr '\n' ' ')"
    else
        ok "$name (exit $rc, $got files, $failed refused)"
    fi
}
race "race: a directory swapped for a symlink to the canary while it is written (openat2)"
race "race: the same without openat2 (O_NOFOLLOW walk)" RDCP_NO_OPENAT2=1

if [ $SKIPN != 0 ]; then echo "$PASS passed, $FAILN failed, $SKIPN skipped"; else echo "$PASS passed, $FAILN failed"; fi
[ $FAILN = 0 ]
