#!/bin/bash
# demo.sh - the README quick start: install what is missing, build, and move 1 GiB of random
# data from rdsend to rdrecv over loopback, then check it arrived byte for byte.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] && scripts/install-deps.sh --build
make -s -j2
dir=$(mktemp -d)
trap 'kill $rpid 2>/dev/null; rm -rf "$dir"' EXIT
size=${DEMO_BYTES:-1G}
head -c "$size" /dev/urandom > "$dir/in"
port=$((20000 + RANDOM % 20000))
key=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
RDPIPE_KEY=$key bin/rdrecv "$port" "$dir/out" & rpid=$!
RDPIPE_KEY=$key bin/rdsend -v localhost "$port" "$dir/in"
wait $rpid
a=$(sha256sum < "$dir/in" | cut -d' ' -f1)
b=$(sha256sum < "$dir/out" | cut -d' ' -f1)
echo "sha256 sent     $a"
echo "sha256 received $b"
[ "$a" = "$b" ] && echo "demo: OK, the stream arrived intact" || { echo "demo: MISMATCH"; exit 1; }
