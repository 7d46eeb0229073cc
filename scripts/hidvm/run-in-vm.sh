#!/usr/bin/env bash
# run-in-vm.sh — run one command as root inside a throw-away QEMU guest whose kernel has uhid
# and hidraw, for testing the uhid server where the host kernel has neither.
#
#   scripts/hidvm/run-in-vm.sh [--setup] CMD [ARGS...]
#   scripts/hidvm/run-in-vm.sh --skip-as NAME CMD [ARGS...]
#
# The guest boots a stock Debian kernel (downloaded with `apt-get download`, unpacked, never
# installed) with a busybox initramfs. The host's root file system is shared read-only over 9p
# under a tmpfs overlay (writes vanish), except the current directory, which is shared
# read-write. CMD runs in the current directory with the caller's environment; its output is
# printed when the guest powers off, and its exit code is ours (125: the guest could not start;
# 124: it started but CMD did not finish within HIDVM_TIMEOUT). With --skip-as NAME (the test
# scripts), a guest that cannot start prints "NAME: SKIPPED" and exits 0 instead of 125.
#
# Knobs: HIDVM_CACHE (default ~/.cache/hidvm), HIDVM_MEM (MiB, 2048), HIDVM_SMP (nproc),
# HIDVM_TIMEOUT (s, 1800), HIDVM_KVER (Debian kernel ABI, default what linux-image-amd64 needs).
# Debian packages used: qemu-system-x86 busybox-static cpio kmod (installed when missing).
set -euo pipefail

skip_as=
# No guest can start here: 125, or for --skip-as a SKIPPED line and 0.
unavailable() {
    if [[ -n $skip_as ]]; then
        echo "$skip_as: SKIPPED — QEMU could not start a guest on this machine (see the hidvm lines above)."
        exit 0
    fi
    exit 125
}
fail() { echo "hidvm: $*" >&2; unavailable; }
say() { echo "hidvm: $*" >&2; }

setup_only=0
if [[ ${1:-} == --setup ]]; then setup_only=1; shift; fi
if [[ ${1:-} == --skip-as && -n ${2:-} ]]; then skip_as=$2; shift 2; fi
[[ $setup_only == 1 || $# -gt 0 ]] || { echo "usage: $0 [--setup | --skip-as NAME] CMD [ARGS...]" >&2; exit 2; }

cache=${HIDVM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hidvm}
mem=${HIDVM_MEM:-2048}
smp=${HIDVM_SMP:-$(nproc)}
limit=${HIDVM_TIMEOUT:-1800}

# --- host tools ---------------------------------------------------------------------------------
missing=()
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
[[ -x /bin/busybox ]] && ! ldd /bin/busybox >/dev/null 2>&1 || missing+=(busybox-static)
command -v cpio >/dev/null || missing+=(cpio)
command -v depmod >/dev/null || missing+=(kmod)
if (( ${#missing[@]} )); then
    [[ $(id -u) == 0 ]] || fail "install ${missing[*]} first (needs root)"
    say "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2 \
        || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2; } \
        || fail "apt-get install ${missing[*]} failed"
fi

# --- kernel -------------------------------------------------------------------------------------
mkdir -p "$cache"
kver=${HIDVM_KVER:-}
if [[ -z $kver && -s $cache/kver && -f $cache/kernel-$(cat "$cache/kver")/.done ]]; then kver=$(cat "$cache/kver"); fi
if [[ -z $kver ]]; then
    kver=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: linux-image-//p' | head -1)
    [[ -n $kver ]] || fail "cannot tell which kernel linux-image-amd64 depends on (apt-get update?)"
fi
kdir=$cache/kernel-$kver
if [[ ! -f $kdir/.done ]]; then
    say "downloading linux-image-$kver (unpacked into $kdir, not installed)"
    rm -rf "$kdir" && mkdir -p "$kdir/deb" "$kdir/root"
    (cd "$kdir/deb" && apt-get download "linux-image-$kver" >&2) || fail "apt-get download linux-image-$kver failed"
    dpkg-deb --fsys-tarfile "$kdir"/deb/*.deb | tar -x -C "$kdir/root" --wildcards \
        './boot/vmlinuz-*' './lib/modules/*/modules.*' './lib/modules/*/kernel/drivers/hid/*' \
        './lib/modules/*/kernel/drivers/virtio/*' './lib/modules/*/kernel/net/9p/*' './lib/modules/*/kernel/fs/*' \
        || fail "unpacking the kernel failed"
    rm -rf "$kdir/deb"
    depmod -b "$kdir/root" "$kver" || fail "depmod failed"
    touch "$kdir/.done"
fi
[[ -n ${HIDVM_KVER:-} ]] || echo "$kver" > "$cache/kver"
kernel=$kdir/root/boot/vmlinuz-$kver

# --- initramfs ----------------------------------------------------------------------------------
modules="hid hid-generic uhid virtio_pci 9pnet_virtio 9p overlay"
read -r -d '' guest_init <<'INIT' || true
#!/bin/sh
export PATH=/bin:/sbin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules.list); do insmod "/modules/$m" 2>/dev/console || echo "hidvm: insmod $m failed" >/dev/console; done
opts=trans=virtio,version=9p2000.L,msize=512000
mkdir -p /run /lower /upper /root
mount -t 9p -o $opts,cache=none run /run || { echo "hidvm: no run share" >/dev/console; poweroff -f; }
. /run/config.sh
: > /run/started
mount -t 9p -o $opts,ro,cache=loose hostroot /lower
mount -t tmpfs tmpfs /upper; mkdir -p /upper/data /upper/work
mount -t overlay -o lowerdir=/lower,upperdir=/upper/data,workdir=/upper/work overlay /root || mount --move /lower /root
for d in proc sys dev tmp run; do mkdir -p /root/$d; done
mount -t proc proc /root/proc; mount -t sysfs sysfs /root/sys; mount -t devtmpfs devtmpfs /root/dev
mkdir -p /root/dev/pts /root/dev/shm; mount -t devpts devpts /root/dev/pts; mount -t tmpfs tmpfs /root/dev/shm
mount -t tmpfs tmpfs /root/tmp; mount -t tmpfs tmpfs /root/run
mkdir -p /root/run/hidvm; mount --move /run /root/run/hidvm
mkdir -p "/root$HIDVM_WORKDIR"; mount -t 9p -o $opts,cache=mmap work "/root$HIDVM_WORKDIR"
chroot /root /bin/sh -c '/bin/bash /run/hidvm/cmd.sh > /run/hidvm/stdout 2> /run/hidvm/stderr; echo $? > /run/hidvm/rc'
sync; umount "/root$HIDVM_WORKDIR" 2>/dev/null; poweroff -f
INIT
stamp=$(printf '%s\n%s\n' "$guest_init" "$modules" | sha256sum | cut -c1-12)
initrd=$cache/securitykey-initrd-$kver-$stamp.img
if [[ ! -f $initrd ]]; then
    say "building $initrd"
    tree=$(mktemp -d)
    mkdir -p "$tree"/{bin,sbin,proc,sys,dev,modules}
    cp /bin/busybox "$tree/bin/"
    for applet in $("$tree/bin/busybox" --list); do [[ $applet == busybox ]] || ln -s busybox "$tree/bin/$applet"; done
    for m in $modules; do modprobe -d "$kdir/root" -S "$kver" --show-depends "$m"; done \
        | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r file; do
            cp "$file" "$tree/modules/"; basename "$file" >> "$tree/modules.list"
        done
    printf '%s\n' "$guest_init" > "$tree/init" && chmod 755 "$tree/init"
    (cd "$tree" && find . | cpio -o -H newc --quiet | gzip -1) > "$initrd.part" || fail "cpio failed"
    mv "$initrd.part" "$initrd" && rm -rf "$tree"
fi
if [[ $setup_only == 1 ]]; then say "ready: $kernel $initrd"; exit 0; fi

# --- run ----------------------------------------------------------------------------------------
run=$(mktemp -d "${TMPDIR:-/tmp}/hidvm.XXXXXX")
qemu_pid=
# Never leave a guest running behind us: stop it on any exit, including a signal.
trap '[[ -n $qemu_pid ]] && kill "$qemu_pid" 2>/dev/null; rm -rf "$run"' EXIT
trap 'exit 130' INT TERM HUP
workdir=$(pwd -P)
[[ $workdir != / && $workdir != *[[:space:]]* ]] || fail "run from a project directory without spaces"
printf 'HIDVM_WORKDIR=%q\n' "$workdir" > "$run/config.sh"
{
    echo '#!/bin/bash'
    export -p | grep -vE '^declare -x (SHLVL|OLDPWD|PWD|_|HOSTNAME)(=|$)'
    printf 'cd %q || exit 125\n' "$workdir"
    printf 'exec'; printf ' %q' "$@"; echo
} > "$run/cmd.sh"
accel=(-accel tcg,thread=multi -cpu max)
# KVM only where the CPU really offers hardware virtualisation.
if [[ -w /dev/kvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo; then accel=(-accel kvm -cpu host); fi
set +e
timeout -k 10 "$limit" qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot \
    "${accel[@]}" -m "$mem" -smp "$smp" -kernel "$kernel" -initrd "$initrd" \
    -append "console=ttyS0 quiet panic=-1 rdinit=/init" -serial "file:$run/console.log" \
    -fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap" \
    -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
    -fsdev "local,id=run,path=$run,security_model=none,multidevs=remap" -device virtio-9p-pci,fsdev=run,mount_tag=run \
    -fsdev "local,id=work,path=$workdir,security_model=none,multidevs=remap" -device virtio-9p-pci,fsdev=work,mount_tag=work \
    </dev/null >"$run/qemu.log" 2>&1 &
qemu_pid=$!
wait "$qemu_pid"
qemu_rc=$?
qemu_pid=
set -e
[[ -f $run/stdout ]] && cat "$run/stdout"
[[ -f $run/stderr ]] && cat "$run/stderr" >&2
if [[ ! -f $run/rc ]]; then
    cat "$run/qemu.log" >&2; tail -n 40 "$run/console.log" >&2
    # 125: the guest never came up (QEMU or the kernel failed); 124: it came up but CMD did not
    # finish within HIDVM_TIMEOUT.
    if [[ -f $run/started ]]; then say "the guest did not finish within ${limit}s (qemu exit $qemu_rc)"; exit 124; fi
    say "the guest did not start (qemu exit $qemu_rc)"; unavailable
fi
exit "$(cat "$run/rc")"
