#!/usr/bin/env bash
# The packaging checks (make test-packaging; `make test` runs them after the suite unless
# SECURITYKEY_SKIP_PACKAGING=1, and so CI does):
#  1. make install into a scratch DESTDIR: every file there, the programs and libraries need no
#     Swift runtime library (it is linked into libsecuritykey.so.0, which the four front ends
#     link), run, and make uninstall leaves nothing behind.
#  2. make deb: lintian finds no error or warning beyond the documented overrides; every
#     installed program and library, the installation and the package are within their
#     size ceilings, and none carries ICU's data (scripts/size-report.sh check).
#  3. the package installed into a minimal Debian chroot (debootstrap, no toolchain): apt pulls
#     its Depends, `securitykey --version` runs, and a virtual key served there is registered
#     with and signed in to; OpenSSH's provider library loads there (bench/openssh/sk-load:
#     dlopen, the four entry points, API version 0x000a) and Debian's ssh-keygen, with no key
#     present, says "device not found" through it.
#  4. a separate package depending on this one by path builds and runs, using only products.
#  5. make docs: the DocC catalog builds without a warning (no broken link).
#
# Each piece of work is done once: one static release build serves both the install check and
# the package (make install-files copies it without building). The parts that wait on the
# network run beside the ones that use the CPU: the chroot (debootstrap, once per build
# directory, then the package's Depends from the Debian mirror) is prepared in the background
# while the release binaries build, and so is the consumer package, whose debug build of the
# dependencies fills the core a release build leaves idle while it type-checks one module at a
# time; `make docs` runs after the release build, beside the checks. `make test` runs the builds
# beside the test suite (SECURITYKEY_PACKAGING_GATE, below). The package is compressed
# with xz -1 here (SECURITYKEY_DEB_FAST=1): -6, make deb's level, takes a minute longer for the
# same check. Each part's duration is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$(mktemp -d /tmp/securitykey-packaging.XXXXXX)"
chroot_dir="$scratch/chroot"
# Background jobs get their own process group (job control), so that cleanup can stop each one
# with everything it started.
set -m
background=()
serve_pid=""
cleanup() {
    [ -z "$serve_pid" ] || kill -KILL "$serve_pid" 2>/dev/null || true
    for pid in "${background[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    umount "$chroot_dir/proc" 2>/dev/null || true
    rm -rf "$scratch"
}
trap cleanup EXIT
start=$SECONDS
step() { echo "== test-packaging: $* (at $((SECONDS - start)) s)"; }
# Records how long a part took, for the summary: timed NAME COMMAND...
timed() {
    local name="$1" began=$SECONDS status=0
    shift
    "$@" || status=$?
    echo "$name $((SECONDS - began))" >> "$scratch/durations"
    return "$status"
}

# The chroot: Debian's minimal base (debootstrap, cached as a tarball in .build-packaging), proc,
# and what the package depends on and recommends, so that installing the .deb later needs no
# download. Runs in the background.
prepare_chroot() {
    local cache=.build-packaging/bookworm-minbase.tar
    mkdir -p .build-packaging
    if [ -f "$cache" ]; then
        mkdir -p "$chroot_dir" && tar -C "$chroot_dir" -xf "$cache"
    else
        debootstrap --variant=minbase bookworm "$chroot_dir" http://deb.debian.org/debian
        tar -C "$chroot_dir" -cf "$cache.partial" . && mv "$cache.partial" "$cache"
    fi
    cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
    mount -t proc proc "$chroot_dir/proc"
    local packages
    packages="$(sed -n -e 's/^Depends: //p' -e 's/^Recommends: //p' packaging/debian/control |
        sed -e 's/([^)]*)//g' -e 's/@LIBC@/libc6/' | tr ',' '\n' | tr -d ' ' | sort -u | tr '\n' ' ') openssh-client"
    chroot "$chroot_dir" /bin/sh -c "apt-get update -qq && \
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages"
}
(timed chroot prepare_chroot) </dev/null >"$scratch/chroot.log" 2>&1 &
background+=($!)
chroot_job=$!

# The consumer: a package of its own (its own scratch directory, so its own build of the
# dependencies, as a user's would be). Debug information and the index store are of no use to
# this check and only cost time.
build_consumer() {
    swift build --package-path Tests/Consumer --scratch-path .build-consumer --product Consumer \
        --disable-index-store -Xswiftc -gnone -Xcc -g0
}
(timed consumer-build build_consumer) </dev/null >"$scratch/consumer.log" 2>&1 &
background+=($!)
consumer_job=$!

step "make release (the shared library and its front ends; once, for install and the package)"
timed release make --no-print-directory release .build/bench/sk-load .build/bench/pam-load >"$scratch/release.log" 2>&1 ||
    { tail -n 40 "$scratch/release.log" >&2; echo "test-packaging: make release failed" >&2; exit 1; }

# make docs works in SwiftPM's build directory, so not beside make release (the two would wait
# for each other's lock). It compiles nothing the suite runs: it builds with the flags of the
# suite's debug build, so it finds the modules it documents built. Beside everything that follows.
(timed docs make --no-print-directory docs) </dev/null >"$scratch/docs.log" 2>&1 &
background+=($!)
docs_job=$!

# scripts/test.sh starts this script beside the test suite, in a cgroup with few CPU shares, so
# that the builds above use the CPU the suite leaves idle; the checks below wait for the suite
# to end (the file SECURITYKEY_PACKAGING_GATE names appears), as they would take their time from it.
if [ -n "${SECURITYKEY_PACKAGING_GATE:-}" ]; then
    step "built; waiting for the test suite to end"
    while [ ! -e "$SECURITYKEY_PACKAGING_GATE" ]; do sleep 1; done
fi

step "make install-files DESTDIR=$scratch/root, then make uninstall"
# The PAM module goes to the system's PAM directory, whatever PREFIX is.
pamdir="$(make --no-print-directory -s print-pamdir)"
make --no-print-directory install-files DESTDIR="$scratch/root" PREFIX=/usr/local UDEVDIR=/etc/udev/rules.d >/dev/null
for f in usr/local/bin/securitykey usr/local/bin/securitykeyd usr/local/share/man/man1/securitykey.1 \
    usr/local/share/man/man1/securitykeyd.1 usr/local/share/bash-completion/completions/securitykey \
    etc/udev/rules.d/70-securitykey.rules usr/local/lib/systemd/user/securitykeyd.service \
    usr/local/share/dbus-1/services/org.securitykey.Daemon1.service \
    usr/local/lib/systemd/system/securitykeyd.service \
    usr/local/share/dbus-1/system-services/org.securitykey.Daemon1.service \
    usr/local/share/dbus-1/system.d/org.securitykey.Daemon1.conf \
    usr/local/lib/securitykey/libsecuritykey-sk.so usr/local/share/man/man7/securitykey-sk.7 \
    usr/local/lib/securitykey/libsecuritykey.so.0 \
    "${pamdir#/}/pam_securitykey.so" usr/local/share/man/man8/pam_securitykey.8; do
    [ -f "$scratch/root/$f" ] || { echo "test-packaging: $f was not installed" >&2; exit 1; }
done
grep -q "Exec=/usr/local/bin/securitykeyd" "$scratch/root/usr/local/share/dbus-1/services/org.securitykey.Daemon1.service"
grep -q "Exec=/usr/local/bin/securitykeyd --system" \
    "$scratch/root/usr/local/share/dbus-1/system-services/org.securitykey.Daemon1.service"
grep -q "ExecStart=/usr/local/bin/securitykeyd --system" "$scratch/root/usr/local/lib/systemd/system/securitykeyd.service"
# The PAM module names the library's installed directory (/usr/local/lib/securitykey) by its
# absolute path, which ldd is pointed into the scratch root for; the others find it $ORIGIN-relative.
readelf -d "$scratch/root/${pamdir#/}/pam_securitykey.so" | grep -q 'RUNPATH.*\[/usr/local/lib/securitykey\]' ||
    { echo "test-packaging: the PAM module's RUNPATH is not /usr/local/lib/securitykey" >&2; exit 1; }
for binary in usr/local/bin/securitykey usr/local/bin/securitykeyd usr/local/lib/securitykey/libsecuritykey-sk.so \
    usr/local/lib/securitykey/libsecuritykey.so.0 "${pamdir#/}/pam_securitykey.so"; do
    if LD_LIBRARY_PATH="$scratch/root/usr/local/lib/securitykey" ldd "$scratch/root/$binary" |
        grep -E "libswift|Foundation|not found"; then
        echo "test-packaging: $binary needs the Swift runtime or a missing library" >&2
        exit 1
    fi
    if readelf -S "$scratch/root/$binary" | grep -q '\.symtab'; then
        echo "test-packaging: $binary is not stripped" >&2
        exit 1
    fi
done
env -i PATH=/usr/bin:/bin "$scratch/root/usr/local/bin/securitykey" --version
make --no-print-directory uninstall DESTDIR="$scratch/root" PREFIX=/usr/local UDEVDIR=/etc/udev/rules.d >/dev/null
left="$(find "$scratch/root" -type f)"
[ -z "$left" ] || { echo "test-packaging: make uninstall left: $left" >&2; exit 1; }

step "the Debian package (scripts/make-deb.sh, fast compression) + lintian"
deb="$(SECURITYKEY_DEB_FAST=1 timed deb scripts/make-deb.sh | tail -n 1)"
grep -q "Exec=/usr/bin/securitykeyd" <(dpkg-deb --fsys-tarfile "$deb" |
    tar -xOf - ./usr/share/dbus-1/services/org.securitykey.Daemon1.service) ||
    { echo "test-packaging: the package's D-Bus service does not name /usr/bin/securitykeyd" >&2; exit 1; }
timed lintian lintian --fail-on error,warning "$deb" 2>&1 | tee "$scratch/lintian.txt" ||
    { echo "test-packaging: lintian failed" >&2; exit 1; }

step "artifact sizes: no ICU data, and none past its ceiling (scripts/size-report.sh check)"
# The package's root (make-deb.sh leaves it in .build/deb/root): every ELF file in it, the whole
# installation and the package (xz -1 here, so the check is stricter than make deb's xz -9).
# Issue 30's targets, checked as they are: each front end within 12 MB (the shared library they
# link is bounded by the installation's target instead), everything installed within 25 MB, the
# package within 10 MB (scripts/size-report.sh's defaults).
scripts/size-report.sh check .build/deb/root "$deb" ||
    { echo "test-packaging: an artifact is larger than its ceiling" >&2; exit 1; }

step "the package in a debootstrap chroot"
wait "$chroot_job" || { tail -n 30 "$scratch/chroot.log" >&2; echo "test-packaging: preparing the chroot failed" >&2; exit 1; }
cp "$deb" "$chroot_dir/tmp/securitykey.deb"
chroot "$chroot_dir" /bin/sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/securitykey.deb' \
    >"$scratch/apt.log" 2>&1 || { tail -n 30 "$scratch/apt.log" >&2; exit 1; }
if chroot "$chroot_dir" /bin/sh -c 'command -v swift'; then
    echo "test-packaging: the chroot has a Swift toolchain; the check would prove nothing" >&2
    exit 1
fi
chroot "$chroot_dir" securitykey --version
port=$((30000 + $$ % 20000))
chroot "$chroot_dir" securitykey virtual serve --udp "127.0.0.1:$port" --pin 1234 >/dev/null 2>&1 &
serve_pid=$!
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
# The PAM module, as packaged: it exports PAM's two entry points only, loads into pamtester
# (copied in; the chroot has none) without a toolchain, and authenticates root with the line the
# packaged `securitykey pam enroll` wrote, against the same virtual key.
pam_module="$pamdir/pam_securitykey.so"
exported="$(nm -D --defined-only --extern-only "$chroot_dir$pam_module" | awk '{ print $3 }' | sort | tr '\n' ' ')"
[ "$exported" = "pam_sm_authenticate pam_sm_setcred " ] ||
    { echo "test-packaging: $pam_module exports: $exported" >&2; exit 1; }
echo 1234 | chroot "$chroot_dir" securitykey pam enroll --device "udp:127.0.0.1:$port" --user root \
    --origin pam://packaging --pin-stdin >"$chroot_dir/tmp/u2f_keys"
chmod 0644 "$chroot_dir/tmp/u2f_keys"
echo "auth required pam_securitykey.so authfile=/tmp/u2f_keys origin=pam://packaging udp=127.0.0.1:$port timeout=30" \
    >"$chroot_dir/etc/pam.d/securitykey-packaging"
cp /usr/bin/pamtester "$chroot_dir/tmp/pamtester"
chroot "$chroot_dir" env -i PATH=/usr/bin:/bin /tmp/pamtester -v securitykey-packaging root authenticate \
    </dev/null >"$scratch/pamtester.txt" 2>&1 ||
    { cat "$scratch/pamtester.txt" >&2; echo "test-packaging: the packaged PAM module did not authenticate" >&2; exit 1; }
echo "test-packaging: the packaged PAM module authenticated root through pamtester in the chroot"
# Loaded, called and closed three times in one process, as a PAM application ending transactions
# does: the shared library stays loaded (-z nodelete) and the module loads again.
cp .build/bench/pam-load "$chroot_dir/tmp/pam-load"
chroot "$chroot_dir" env -i PATH=/usr/bin:/bin /tmp/pam-load "$pam_module" 3 ||
    { echo "test-packaging: $pam_module did not load, run and close three times" >&2; exit 1; }
kill -TERM "$serve_pid" 2>/dev/null || true
wait "$serve_pid" 2>/dev/null || true
serve_pid=""
# OpenSSH's provider, as packaged: it loads without a toolchain and exports exactly OpenSSH's
# entry points; with no key anywhere (no hidraw, no pcscd, no SECURITYKEY_UDP) Debian's
# ssh-keygen, through it, fails with OpenSSH's "device not found", not a load error or a hang.
provider=/usr/lib/securitykey/libsecuritykey-sk.so
exported="$(nm -D --defined-only --extern-only "$chroot_dir$provider" | awk '{ print $3 }' | sort | tr '\n' ' ')"
[ "$exported" = "sk_api_version sk_enroll sk_load_resident_keys sk_sign " ] ||
    { echo "test-packaging: $provider exports: $exported" >&2; exit 1; }
cp .build/bench/sk-load "$chroot_dir/tmp/sk-load"
loaded="$(chroot "$chroot_dir" env -i PATH=/usr/bin:/bin timeout 60 /tmp/sk-load "$provider" --resident)" ||
    { echo "test-packaging: $provider does not load in the chroot" >&2; exit 1; }
echo "$loaded"
case "$loaded" in *api_version=0x000a*resident_result=-4\ *) ;; *)
    echo "test-packaging: $provider did not report API 0x000a and no device: $loaded" >&2; exit 1 ;;
esac
if chroot "$chroot_dir" env -i PATH=/usr/bin:/bin HOME=/root timeout 60 \
    ssh-keygen -q -t ecdsa-sk -w "$provider" -N '' -f /tmp/no-key </dev/null >"$scratch/ssh-keygen.txt" 2>&1; then
    echo "test-packaging: ssh-keygen enrolled a key with none present" >&2; exit 1
fi
# OpenSSH's log lines end in CR LF.
tr -d '\r' <"$scratch/ssh-keygen.txt" | grep -qx "Key enrollment failed: device not found" ||
    { cat "$scratch/ssh-keygen.txt" >&2; echo "test-packaging: ssh-keygen -w $provider did not say device not found" >&2; exit 1; }
echo "test-packaging: the packaged OpenSSH provider loads, and ssh-keygen through it says: device not found"

step "a package that depends on this one, by path"
wait "$consumer_job" || { tail -n 40 "$scratch/consumer.log" >&2; echo "test-packaging: the consumer did not build" >&2; exit 1; }
.build-consumer/debug/Consumer

step "make docs (DocC, warnings are errors)"
wait "$docs_job" ||
    { grep -v '^\[' "$scratch/docs.log" | tail -n 40 >&2; echo "test-packaging: make docs failed" >&2; exit 1; }

echo "test-packaging: passed in $((SECONDS - start)) s; parts (s):" $(sort "$scratch/durations" | tr '\n' ' ')
