#!/bin/bash
# install-deps.sh - install what building and testing rdpipe needs on Debian 12 (run as root).
#   scripts/install-deps.sh          build + test dependencies
#   scripts/install-deps.sh --build  only what building needs
set -euo pipefail
build=(build-essential clang pkg-config libssl-dev libzstd-dev libxxhash-dev librdmacm-dev libibverbs-dev)
test=(rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest iproute2 qemu-system-x86 busybox-static
      kmod cpio iperf3 netcat-openbsd socat mbuffer openssh-server openssh-client openssl procps psmisc
      coreutils util-linux rsync)
want=("${build[@]}")
[ "${1:-}" = --build ] || want+=("${test[@]}")
missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
