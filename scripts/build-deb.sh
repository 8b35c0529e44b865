#!/bin/bash
# build-deb.sh - `make deb`: build the Debian package with debhelper in a copy of the tree, so
# the source tree stays clean, put it in build-deb/, and check it with lintian (no errors
# allowed; warnings are printed). The copy holds what git tracks plus untracked files that are
# not ignored (the working tree as it is); outside git, the tree minus build outputs.
#   env: RD_COMMIT  commit for --version (the Makefile passes git describe; the copy has no .git)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
for t in dpkg-buildpackage dh lintian; do
    command -v $t > /dev/null ||
        { echo "build-deb.sh: no $t (install it: sudo scripts/install-deps.sh)" >&2; exit 1; }
done

# the package version is debian/changelog's; the tools say RD_VERSION: they must agree
pkgver=$(dpkg-parsechangelog -S Version)
srcver=$(sed -n 's/^#define RD_VERSION "\(.*\)"$/\1/p' lib/run/rd_cli.h)
if [ "$pkgver" != "$srcver" ]; then
    echo "build-deb.sh: debian/changelog says $pkgver, lib/run/rd_cli.h RD_VERSION says $srcver" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/rdpipe-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/rdpipe-$pkgver
mkdir -p "$src"
if [ -d .git ] && command -v git > /dev/null; then
    git ls-files -z -c -o --exclude-standard | while IFS= read -r -d '' f; do
        [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"
    done | tar -c --null -T - -f - | tar -x -C "$src" -f -
else
    tar -c --exclude='./build' --exclude='./build-*' --exclude='./bin' --exclude='./tests/out' \
        -f - . | tar -x -C "$src" -f -
fi

echo "build-deb.sh: building rdpipe $pkgver (commit ${RD_COMMIT:-unknown}) in $work"
(cd "$src" && RD_COMMIT=${RD_COMMIT:-unknown} dpkg-buildpackage -b -us -uc) > "$work/build.log" 2>&1 || {
    tail -40 "$work/build.log"; echo "build-deb.sh: dpkg-buildpackage failed" >&2; exit 1; }

mkdir -p build-deb
rm -f build-deb/rdpipe_*
mv "$work"/rdpipe_* build-deb/
cp "$work/build.log" build-deb/build.log
deb=$(ls build-deb/rdpipe_*.deb)
echo "build-deb.sh: $deb"
dpkg-deb -c "$deb" | awk '{print "    " $NF}'

# lintian: errors fail the build; everything else is listed
lintian --fail-on error --no-tag-display-limit "$deb" | tee build-deb/lintian.txt ||
    { echo "build-deb.sh: lintian reports errors" >&2; exit 1; }
echo "build-deb.sh: lintian: $(grep -c '^E:' build-deb/lintian.txt) errors, $(grep -c '^W:' build-deb/lintian.txt) warnings"
