#!/bin/bash
# run-in-rxe-vm.sh - run a command inside a throw-away QEMU (TCG) VM that has Soft-RoCE (rdma_rxe) devices.
#
# usage: run-in-rxe-vm.sh SHARE_DIR COMMAND [ARGS...]
#   SHARE_DIR is mounted read-write at the same path in the guest; COMMAND (joined like ssh does) runs there
#   under bash as root, cwd=SHARE_DIR. The rest of the host's / is visible read-only (host binaries and libs:
#   rdma-core, perftest, your compiled test...). Stdout/stderr stream back; the exit status is the command's
#   (124 = command timed out in guest, 125 = VM/setup failure).
# guest network: veth pair va(10.0.0.1, rxe_a) <-> vb(10.0.0.2, rxe_b), MTU 9000 (RoCE MTU 4096), RoCEv2
#   GID index 1; a second rail the same way, vc(10.0.1.1, rxe_c) <-> vd(10.0.1.2, rxe_d). Connecting to 10.0.0.1 with source 10.0.0.2 bound (rdma_resolve_addr src, rping -I,
#   perftest --source_ip) goes over the veth via rxe_b; unbound it is same-device loopback on rxe_a.
#   Exported: RXE_SERVER_IP RXE_CLIENT_IP RXE_SERVER_DEV RXE_CLIENT_DEV RXE_GID_INDEX, and the
#   second rail's RXE_SERVER_IP2 RXE_CLIENT_IP2 RXE_SERVER_DEV2 RXE_CLIENT_DEV2.
# env: RXE_TIMEOUT (s, default 600), RXE_MEM (MiB, 2048), RXE_CPUS (2), RXE_LAB (/tmp/rxe-lab), RXE_KEEP=1
#   RXE_KERNEL: the kernel's meta-package (default linux-image-amd64; e.g. linux-image-6.12-amd64,
#   whose rxe flushes a downed link's queue pairs at once)
# host packages: qemu-system-x86 busybox-static kmod cpio (image build, cached in $RXE_LAB/cache)
#   + whatever the command uses in the guest, e.g. rdma-core ibverbs-providers ibverbs-utils rdmacm-utils
#     perftest iproute2 (iproute2 with `rdma` is required for the setup).
set -euo pipefail
LAB=${RXE_LAB:-/tmp/rxe-lab}; KPKG=${RXE_KERNEL:-linux-image-amd64}
[[ $KPKG =~ ^linux-image-[a-z0-9.+-]+$ ]] || { echo "run-in-rxe-vm: RXE_KERNEL: not a kernel package: $KPKG" >&2; exit 125; }
CACHE=$LAB/cache; [ "$KPKG" = linux-image-amd64 ] || CACHE=$LAB/cache-$KPKG   # one image per kernel
TIMEOUT=${RXE_TIMEOUT:-600}; MEM=${RXE_MEM:-2048}; CPUS=${RXE_CPUS:-2}
# TCG by default: /dev/kvm may exist yet hang (nested virtualisation); RXE_ACCEL=kvm opts in
if [ "${RXE_ACCEL:-tcg}" = kvm ]; then ACCEL="-accel kvm -cpu host"; else ACCEL="-accel tcg,thread=multi -cpu max"; fi
# loop, ext4, crc32c_generic (ext4 metadata checksums): a casefold filesystem for rdcp (the
# host's kernel may have no casefold)
MODS="virtio_pci 9pnet_virtio 9p crc32_generic veth rdma_rxe rdma_ucm loop ext4 crc32c_generic"   # no crc32_pclmul: 2x slower under TCG
die() { echo "run-in-rxe-vm: $*" >&2; exit 125; }
[ $# -ge 2 ] || { sed -n '2,20p' "$0" >&2; exit 125; }
SHARE=$(realpath -e "$1") || die "no such dir: $1"; shift; [ -d "$SHARE" ] || die "not a dir: $SHARE"
for t in qemu-system-x86_64 busybox depmod modprobe cpio gzip dpkg apt-get rdma; do
  command -v $t >/dev/null || die "missing $t (apt-get install qemu-system-x86 busybox-static kmod cpio iproute2)"; done

build_image() {  # Debian kernel + initramfs (busybox-static + the few modules), cached
  local w; w=$(mktemp -d "$LAB/build.XXXXXX"); chmod 755 "$w"
  local pkg; pkg=$(apt-cache depends "$KPKG" | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  [ -n "$pkg" ] || die "cannot resolve $KPKG (run apt-get update)"
  (cd "$w" && apt-get download "$pkg" >/dev/null 2>&1) || die "apt-get download $pkg failed"
  dpkg -x "$w"/*.deb "$w/k"; local KV; KV=$(ls "$w/k/lib/modules"); depmod -b "$w/k" "$KV"
  local i=$w/i; mkdir -p "$i"/{bin,proc,sys,dev,host,lib/modules/$KV}
  cp "$(command -v busybox)" "$i/bin/busybox"
  for a in $("$i/bin/busybox" --list); do [ "$a" = busybox ] || ln -s busybox "$i/bin/$a"; done
  for m in $MODS; do modprobe -d "$w/k" -S "$KV" --show-depends $m; done | awk '$1=="insmod"{print $2}' | sort -u |
    while read -r p; do r=${p#"$w/k/"}; mkdir -p "$i/$(dirname "$r")"; cp "$p" "$i/$r"; done
  cp "$w/k/lib/modules/$KV"/modules.{order,builtin,builtin.modinfo} "$i/lib/modules/$KV/"; depmod -b "$i" "$KV"
  cat > "$i/init" <<EOF
#!/bin/sh
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $MODS; do modprobe \$m || echo "init: modprobe \$m failed"; done
O=trans=virtio,version=9p2000.L,msize=512000
mount -t 9p -o \$O,ro,cache=loose hostroot /host || { echo "init: mount hostroot failed"; poweroff -f; }
mount -t proc proc /host/proc; mount -t sysfs sys /host/sys; mount -t devtmpfs dev /host/dev
mkdir -p /host/dev/pts /host/dev/shm; mount -t devpts devpts /host/dev/pts; mount -t tmpfs tmpfs /host/dev/shm
for d in tmp run var/tmp root; do mount -t tmpfs tmpfs /host/\$d; done
mkdir -p /host/run/rxe-ctl; mount -t 9p -o \$O ctl /host/run/rxe-ctl || { echo "init: mount ctl failed"; poweroff -f; }
exec chroot /host /bin/sh /run/rxe-ctl/guest.sh
EOF
  chmod +x "$i/init"; (cd "$i" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$w/initrd.gz"
  cp "$w/k/boot/vmlinuz-$KV" "$w/vmlinuz"; mkdir -p "$CACHE"; mv "$w/vmlinuz" "$w/initrd.gz" "$CACHE/"; rm -rf "$w"
  echo "$MODS" > "$CACHE/mods"
}
# an image built with other modules is built again
mkdir -p "$LAB"; [ -s "$CACHE/vmlinuz" ] && [ -s "$CACHE/initrd.gz" ] && [ "$(cat "$CACHE/mods" 2>/dev/null)" = "$MODS" ] || build_image

RUN=$(mktemp -d "$LAB/run.XXXXXX")
printf 'SHARE=%q\nTIMEOUT=%q\n' "$SHARE" "$TIMEOUT" > "$RUN/env"
printf '%s\n' "$*" > "$RUN/cmd.sh"; : > "$RUN/out.log"
cat > "$RUN/guest.sh" <<'EOF'
#!/bin/sh
C=/run/rxe-ctl; . $C/env; export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
( set -ex; ulimit -l unlimited
  mkdir -p "$SHARE"; mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 share "$SHARE"
  ip link set lo up
  ip link add va mtu 9000 type veth peer name vb mtu 9000
  ip addr add 10.0.0.1/24 dev va; ip addr add 10.0.0.2/24 dev vb; ip link set va up; ip link set vb up
  # force src-bound traffic between the two local IPs over the veth "cable" instead of lo
  ip rule add pref 100 lookup local; ip rule del pref 0
  ip rule add pref 10 from 10.0.0.1 to 10.0.0.2 iif lo lookup 201; ip route add 10.0.0.2 dev va src 10.0.0.1 table 201
  ip rule add pref 11 from 10.0.0.2 to 10.0.0.1 iif lo lookup 202; ip route add 10.0.0.1 dev vb src 10.0.0.2 table 202
  ip neigh add 10.0.0.1 lladdr "$(cat /sys/class/net/va/address)" dev vb nud permanent
  ip neigh add 10.0.0.2 lladdr "$(cat /sys/class/net/vb/address)" dev va nud permanent
  for i in all va vb; do echo 1 > /proc/sys/net/ipv4/conf/$i/accept_local; echo 0 > /proc/sys/net/ipv4/conf/$i/rp_filter; done
  rdma link add rxe_a type rxe netdev va; rdma link add rxe_b type rxe netdev vb
  # a second rail, the same way: vc (10.0.1.1, rxe_c) <-> vd (10.0.1.2, rxe_d)
  ip link add vc mtu 9000 type veth peer name vd mtu 9000
  ip addr add 10.0.1.1/24 dev vc; ip addr add 10.0.1.2/24 dev vd; ip link set vc up; ip link set vd up
  ip rule add pref 12 from 10.0.1.1 to 10.0.1.2 iif lo lookup 203; ip route add 10.0.1.2 dev vc src 10.0.1.1 table 203
  ip rule add pref 13 from 10.0.1.2 to 10.0.1.1 iif lo lookup 204; ip route add 10.0.1.1 dev vd src 10.0.1.2 table 204
  ip neigh add 10.0.1.1 lladdr "$(cat /sys/class/net/vc/address)" dev vd nud permanent
  ip neigh add 10.0.1.2 lladdr "$(cat /sys/class/net/vd/address)" dev vc nud permanent
  for i in vc vd; do echo 1 > /proc/sys/net/ipv4/conf/$i/accept_local; echo 0 > /proc/sys/net/ipv4/conf/$i/rp_filter; done
  rdma link add rxe_c type rxe netdev vc; rdma link add rxe_d type rxe netdev vd
  rdma link ) > $C/setup.log 2>&1
[ $? -eq 0 ] || { echo 125 > $C/rc; sync; echo o > /proc/sysrq-trigger; sleep 60; }
ulimit -l unlimited; cd "$SHARE"
export HOME=/root RXE_SERVER_IP=10.0.0.1 RXE_CLIENT_IP=10.0.0.2 RXE_SERVER_DEV=rxe_a RXE_CLIENT_DEV=rxe_b RXE_GID_INDEX=1
export RXE_SERVER_IP2=10.0.1.1 RXE_CLIENT_IP2=10.0.1.2 RXE_SERVER_DEV2=rxe_c RXE_CLIENT_DEV2=rxe_d
timeout -k 5 "$TIMEOUT" bash $C/cmd.sh > $C/out.log 2>&1 < /dev/null; echo $? > $C/rc
sync; echo o > /proc/sysrq-trigger; sleep 60
EOF
QPID=; TPID=
MAIN_PID=$BASHPID   # a subshell signalled before it set its own traps runs ours (bash)
cleanup() { [ "$BASHPID" = "$MAIN_PID" ] || return 0; [ -n "$QPID" ] && kill "$QPID" 2>/dev/null; [ -n "$TPID" ] && kill "$TPID" 2>/dev/null
  [ "${RXE_KEEP:-0}" = 1 ] && echo "run dir kept: $RUN" >&2 || rm -rf "$RUN"; }
trap cleanup EXIT; trap 'exit 130' INT TERM
timeout $((TIMEOUT + 180)) qemu-system-x86_64 $ACCEL -smp "$CPUS" -m "$MEM" \
  -display none -monitor none -serial "file:$RUN/console.log" -no-reboot -nic none \
  -kernel "$CACHE/vmlinuz" -initrd "$CACHE/initrd.gz" -append "console=ttyS0 panic=-1 quiet mitigations=off" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$RUN,mount_tag=ctl,security_model=none" \
  -virtfs "local,path=$SHARE,mount_tag=share,security_model=none,multidevs=remap" </dev/null &
QPID=$!
tail -n +1 -s 0.2 -f --pid=$QPID "$RUN/out.log" & TPID=$!
wait $QPID || true; QPID=; tail_rc=0; wait $TPID || tail_rc=$?; TPID=
if [ "$tail_rc" != 0 ]; then   # the live copy died (once in CI: SIGKILLed): the whole log again, so no case is lost
    echo "run-in-rxe-vm: the live copy of the VM's output ended early (status $tail_rc); all of it:"
    cat "$RUN/out.log" 2>/dev/null
fi
rc=$(cat "$RUN/rc" 2>/dev/null || echo 125)
if [ "$rc" = 125 ]; then echo "run-in-rxe-vm: VM/setup failed; setup log + console:" >&2
  cat "$RUN/setup.log" "$RUN/console.log" 2>/dev/null | tail -40 >&2; fi
exit "$rc"
