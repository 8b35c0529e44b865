#!/bin/bash
# install-deps.sh - install what building and testing rdpipe needs on Debian 12 (run as root).
#   scripts/install-deps.sh            build + test + packaging dependencies
#   scripts/install-deps.sh --build    only what building needs
#   scripts/install-deps.sh --check    install nothing: print each missing package (one a line)
#                                      and exit 1 if any is missing (tests/run uses it)
# Checking is one dpkg-query call, so a machine that has everything pays ~50 ms. The VM stage
# of the tests also needs apt's package lists (it downloads Debian's kernel once); they count
# as missing, as "apt-lists", until apt-get update has run or the kernel is cached.
set -euo pipefail
build=(build-essential clang pkg-config libssl-dev libgcrypt20-dev libsodium-dev libzstd-dev libxxhash-dev libnuma-dev libunistring-dev librdmacm-dev libibverbs-dev)
test=(rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest iproute2 qemu-system-x86 busybox-static
      kmod cpio iperf3 netcat-openbsd socat mbuffer openssh-server openssh-client openssl procps psmisc
      coreutils util-linux bsdutils rsync python3 python3-xxhash strace nftables acl attr
      ethtool                                             # a tap that reports 100 Gb/s (netns.sh)
      exfat-fuse exfatprogs                               # a filesystem that folds case (cli.sh)
      gdb                                                 # stacks of a process that hangs (tests/lib.sh)
      libclang-rt-14-dev                                  # libFuzzer for the fuzz targets (make fuzz)
      mandoc man-db bash-completion                       # man pages: lint, `man rdsend`; completion
      debhelper dpkg-dev fakeroot lintian)                # make deb
build_only=0 check=0
for a in "$@"; do
    case $a in
        --build) build_only=1 ;;
        --check) check=1 ;;
        *) echo "install-deps.sh: unknown option $a (--build, --check)" >&2; exit 2 ;;
    esac
done
want=("${build[@]}")
[ $build_only = 1 ] || want+=("${test[@]}")

# one dpkg-query for all: names it does not know at all are simply absent from its output
declare -A have=()
while read -r name status; do
    [ "$status" = installed ] && have[$name]=1
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${want[@]}" 2>/dev/null || true)
missing=()
for p in "${want[@]}"; do [ -n "${have[$p]:-}" ] || missing+=("$p"); done

# the VM stage's kernel: cached by an earlier run, or resolvable through apt's lists
lists_missing=0
if [ $build_only = 0 ] && ! [ -s "${RXE_LAB:-/tmp/rxe-lab}/cache/vmlinuz" ] &&
   ! apt-cache show linux-image-amd64 > /dev/null 2>&1; then
    lists_missing=1
fi

if [ $check = 1 ]; then
    [ ${#missing[@]} -gt 0 ] && printf '%s\n' "${missing[@]}"
    [ $lists_missing = 1 ] && echo apt-lists
    [ ${#missing[@]} = 0 ] && [ $lists_missing = 0 ]
    exit
fi
[ ${#missing[@]} = 0 ] && [ $lists_missing = 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "install-deps.sh: needs root to install: ${missing[*]}${missing[*]:+ }$([ $lists_missing = 1 ] && echo '(and apt-get update)')" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
[ ${#missing[@]} = 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
apt-get install -y -q --no-install-recommends "${missing[@]}"
