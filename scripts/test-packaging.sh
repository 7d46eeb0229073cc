#!/usr/bin/env bash
# The packaging checks (make test-packaging, also run by scripts/run-tests.sh in CI):
#  1. make install into a scratch DESTDIR: every file there, the binaries need no Swift runtime
#     library (static), run, and make uninstall leaves nothing behind.
#  2. make deb: lintian finds no error or warning beyond the documented overrides.
#  3. the package installed into a minimal Debian chroot (debootstrap, no toolchain): apt pulls
#     its Depends, `securitykey --version` runs, and a virtual key served there is registered
#     with and signed in to.
#  4. a separate package depending on this one by path builds and runs, using only products.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$(mktemp -d /tmp/securitykey-packaging.XXXXXX)"
chroot_dir=""
cleanup() {
    if [ -n "$chroot_dir" ]; then
        pkill -KILL -f "$chroot_dir" 2>/dev/null || true
        umount "$chroot_dir/proc" 2>/dev/null || true
    fi
    rm -rf "$scratch"
}
trap cleanup EXIT
step() { echo "== test-packaging: $*"; }

step "make install DESTDIR=$scratch/root"
make --no-print-directory install DESTDIR="$scratch/root" PREFIX=/usr/local UDEVDIR=/etc/udev/rules.d >/dev/null
for f in usr/local/bin/securitykey usr/local/bin/securitykeyd usr/local/share/man/man1/securitykey.1 \
    usr/local/share/man/man1/securitykeyd.1 usr/local/share/bash-completion/completions/securitykey \
    etc/udev/rules.d/70-securitykey.rules usr/local/lib/systemd/user/securitykeyd.service \
    usr/local/share/dbus-1/services/org.securitykey.Daemon1.service \
    usr/local/lib/systemd/system/securitykeyd.service \
    usr/local/share/dbus-1/system-services/org.securitykey.Daemon1.service \
    usr/local/share/dbus-1/system.d/org.securitykey.Daemon1.conf; do
    [ -f "$scratch/root/$f" ] || { echo "test-packaging: $f was not installed" >&2; exit 1; }
done
grep -q "Exec=/usr/local/bin/securitykeyd" "$scratch/root/usr/local/share/dbus-1/services/org.securitykey.Daemon1.service"
grep -q "Exec=/usr/local/bin/securitykeyd --system" \
    "$scratch/root/usr/local/share/dbus-1/system-services/org.securitykey.Daemon1.service"
grep -q "ExecStart=/usr/local/bin/securitykeyd --system" "$scratch/root/usr/local/lib/systemd/system/securitykeyd.service"
for binary in securitykey securitykeyd; do
    if ldd "$scratch/root/usr/local/bin/$binary" | grep -E "swift|Foundation|not found"; then
        echo "test-packaging: $binary needs the Swift runtime or a missing library" >&2
        exit 1
    fi
    if readelf -S "$scratch/root/usr/local/bin/$binary" | grep -q '\.symtab'; then
        echo "test-packaging: $binary is not stripped" >&2
        exit 1
    fi
done
env -i PATH=/usr/bin:/bin "$scratch/root/usr/local/bin/securitykey" --version
make --no-print-directory uninstall DESTDIR="$scratch/root" PREFIX=/usr/local UDEVDIR=/etc/udev/rules.d >/dev/null
left="$(find "$scratch/root" -type f)"
[ -z "$left" ] || { echo "test-packaging: make uninstall left: $left" >&2; exit 1; }

step "make deb + lintian"
deb="$(make --no-print-directory deb | tail -n 1)"
lintian --fail-on error,warning \
    "$deb" 2>&1 | tee "$scratch/lintian.txt" || { echo "test-packaging: lintian failed" >&2; exit 1; }

step "the package in a debootstrap chroot"
chroot_dir="$scratch/chroot"
cache=.build-packaging/bookworm-minbase.tar
mkdir -p .build-packaging
if [ ! -f "$cache" ]; then
    debootstrap --variant=minbase bookworm "$chroot_dir" http://deb.debian.org/debian >"$scratch/debootstrap.log" 2>&1 ||
        { tail -n 20 "$scratch/debootstrap.log" >&2; exit 1; }
    tar -C "$chroot_dir" -cf "$cache" .
else
    mkdir -p "$chroot_dir" && tar -C "$chroot_dir" -xf "$cache"
fi
cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
cp "$deb" "$chroot_dir/tmp/securitykey.deb"
mount -t proc proc "$chroot_dir/proc"
chroot "$chroot_dir" /bin/sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/securitykey.deb' \
    >"$scratch/apt.log" 2>&1 || { tail -n 30 "$scratch/apt.log" >&2; exit 1; }
if chroot "$chroot_dir" /bin/sh -c 'command -v swift'; then
    echo "test-packaging: the chroot has a Swift toolchain; the check would prove nothing" >&2
    exit 1
fi
chroot "$chroot_dir" securitykey --version
port=$((30000 + $$ % 20000))
chroot "$chroot_dir" securitykey virtual serve --udp "127.0.0.1:$port" --pin 1234 >/dev/null 2>&1 &
for _ in $(seq 50); do
    chroot "$chroot_dir" securitykey info --device "udp:127.0.0.1:$port" >/dev/null 2>&1 && break
    sleep 0.1
done
registered="$(echo 1234 | chroot "$chroot_dir" securitykey register --device "udp:127.0.0.1:$port" \
    --rp example.org --user packaged --pin-stdin --json)"
id="$(printf '%s' "$registered" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')"
echo 1234 | chroot "$chroot_dir" securitykey authenticate --device "udp:127.0.0.1:$port" --rp example.org \
    --credential "$id" --pin-stdin --json >/dev/null
echo "test-packaging: registered and signed in inside the chroot with the packaged binary"
pkill -KILL -f "virtual serve --udp 127.0.0.1:$port" || true

step "a package that depends on this one, by path"
swift run --package-path Tests/Consumer --scratch-path .build-consumer Consumer
echo "test-packaging: passed"
