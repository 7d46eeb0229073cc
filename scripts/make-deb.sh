#!/usr/bin/env bash
# Builds dist/securitykey_VERSION_ARCH.deb with dpkg-deb from what `make release` built, installed
# (make install-files, no build) into a staging root
# (PREFIX=/usr, udev rules in /usr/lib/udev/rules.d), with Debian's layout: compressed man pages,
# the copyright file and changelog in /usr/share/doc/securitykey, md5sums, and lintian's
# overrides (packaging/debian/lintian-overrides, each with its reason). Run by `make deb`.
set -euo pipefail
cd "$(dirname "$0")/.."

version="$(.build/release/securitykey --version)"
arch="$(dpkg --print-architecture)"
work=.build/deb
root="$work/root"
rm -rf "$work"
mkdir -p "$root/DEBIAN" dist
make --no-print-directory install-files DESTDIR="$PWD/$root" PREFIX=/usr UDEVDIR=/usr/lib/udev/rules.d >/dev/null
# The daemon's files: user and system units, session and system bus activation, the system bus
# policy, the interface XML; the shared library all programs and libraries link; OpenSSH's
# provider library and its man page; the PAM module (in the system's PAM directory, make's PAMDIR)
# and its man page.
pamdir="$(make --no-print-directory -s -f Makefile print-pamdir)"
for f in usr/lib/systemd/user/securitykeyd.service usr/lib/systemd/system/securitykeyd.service \
    usr/share/dbus-1/services/org.securitykey.Daemon1.service \
    usr/share/dbus-1/system-services/org.securitykey.Daemon1.service \
    usr/share/dbus-1/system.d/org.securitykey.Daemon1.conf \
    usr/share/dbus-1/interfaces/org.securitykey.Daemon1.xml \
    usr/lib/securitykey/libsecuritykey.so.0 usr/lib/securitykey/libsecuritykey-sk.so usr/share/man/man7/securitykey-sk.7 \
    "${pamdir#/}/pam_securitykey.so" usr/share/man/man8/pam_securitykey.8 \
    usr/lib/systemd/system/securitykey-fleet.service usr/lib/systemd/system/securitykey-fleet.timer \
    usr/share/securitykey/prometheus/securitykey-rules.yml \
    usr/lib/systemd/user/securitykey-mds-update.service usr/lib/systemd/user/securitykey-mds-update.timer \
    usr/lib/systemd/system/securitykey-mds-update.service usr/lib/systemd/system/securitykey-mds-update.timer; do
    [ -f "$root/$f" ] || { echo "make-deb: $f is missing from the install" >&2; exit 1; }
done

doc="$root/usr/share/doc/securitykey"
install -d "$doc"
install -m 0644 packaging/debian/copyright "$doc/copyright"
install -m 0644 README.md Docs/CLI.md Docs/Daemon.md Docs/Fleet.md "$doc/"
gzip -9n "$doc/CLI.md" "$doc/Daemon.md" "$doc/Fleet.md"
{
    echo "securitykey ($version) unstable; urgency=medium"
    echo
    echo "  * Built from the repository; see CHANGELOG.md for what changed."
    echo
    echo " -- securitykey developers <securitykey@maintainer.invalid>  $(date -R -u -d @"${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n > "$doc/changelog.gz"
gzip -9n "$root"/usr/share/man/man1/*.1 "$root"/usr/share/man/man7/*.7 "$root"/usr/share/man/man8/*.8
install -D -m 0644 packaging/debian/lintian-overrides "$root/usr/share/lintian/overrides/securitykey"

size="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
# Packed relative relocations (make release uses them where the C library has them) load only
# with glibc 2.36 or later.
libc="libc6"
if objdump -p "$root/usr/lib/securitykey/libsecuritykey.so.0" | grep -q GLIBC_ABI_DT_RELR; then libc="libc6 (>= 2.36)"; fi
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" -e "s/@LIBC@/$libc/" packaging/debian/control \
    > "$root/DEBIAN/control"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf "%P\0" | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

deb="dist/securitykey_${version}_${arch}.deb"
# xz -9 for a package to ship (dpkg-deb's default is -6; -9's larger dictionary holds the whole
# shared library); SECURITYKEY_DEB_FAST=1 (test-packaging) takes xz -1, several times faster for a
# slightly larger package.
dpkg-deb --root-owner-group -Zxz -z"$([ "${SECURITYKEY_DEB_FAST:-0}" = 1 ] && echo 1 || echo 9)" \
    --build "$root" "$deb" >/dev/null
echo "$deb"
