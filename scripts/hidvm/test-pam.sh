#!/usr/bin/env bash
# test-pam.sh — Debian's pam-u2f (pamu2fcfg, pam_u2f.so) and our PAM module (pam_securitykey.so,
# `securitykey pam enroll`) on one real hidraw key, in the QEMU guest of scripts/hidvm/run-in-vm.sh:
# one `securitykey virtual serve --uhid` key. Both ways: pamu2fcfg enrols the key and our module
# authenticates with its line; `securitykey pam enroll` writes a line and
# pam_u2f.so authenticates with it; an OpenSSH key file made through our provider
# (libsecuritykey-sk.so) authenticates through both modules' `sshformat`. pamtester runs each
# test-only PAM service; the modules' own debug lines show which module verified what.
#
#   scripts/hidvm/test-pam.sh              boots a guest and runs the test there
#   scripts/hidvm/test-pam.sh --in-guest   the test itself (scripts/hidvm/test-uhid.sh runs it in
#                                          its guest, so `make test` boots one guest for all)
#
# Uses the debug builds: .build/debug/securitykey, .build/debug/libpam_securitykey.so and
# .build/debug/libsecuritykey-sk.so (SECURITYKEY_BIN, SECURITYKEY_PAM_MODULE,
# SECURITYKEY_SK_PROVIDER override them). Fails unless every check ran and passed; exits 0 with
# "SKIPPED" only when no guest can start here.
set -euo pipefail
cd "$(dirname "$0")/../.."
export SECURITYKEY_BIN=${SECURITYKEY_BIN:-$PWD/.build/debug/securitykey}
export SECURITYKEY_PAM_MODULE=${SECURITYKEY_PAM_MODULE:-$PWD/.build/debug/libpam_securitykey.so}
export SECURITYKEY_SK_PROVIDER=${SECURITYKEY_SK_PROVIDER:-$PWD/.build/debug/libsecuritykey-sk.so}

ssh_guest_name=test-pam
# shellcheck source=scripts/hidvm/ssh-guest.sh
. scripts/hidvm/ssh-guest.sh

[[ -x $SECURITYKEY_BIN ]] || ssh_guest_fail "no $SECURITYKEY_BIN (swift build --product securitykey)"
[[ -f $SECURITYKEY_PAM_MODULE ]] || ssh_guest_fail "no $SECURITYKEY_PAM_MODULE (swift build --product pam_securitykey)"
[[ -f $SECURITYKEY_SK_PROVIDER ]] || ssh_guest_fail "no $SECURITYKEY_SK_PROVIDER (swift build --product securitykey-sk)"

if [[ ${1:-} != --in-guest ]]; then
    exec scripts/hidvm/run-in-vm.sh --skip-as test-pam scripts/hidvm/test-pam.sh --in-guest
fi

# --- in the guest --------------------------------------------------------------------------------
pam_u2f=$(find /lib/*/security /usr/lib/*/security -name pam_u2f.so 2>/dev/null | head -n 1)
command -v pamtester >/dev/null && command -v pamu2fcfg >/dev/null && [[ -n $pam_u2f ]] ||
    ssh_guest_fail "pamtester and libpam-u2f (pamu2fcfg, pam_u2f.so) are not installed"
SSH_GUEST_WORK=$(mktemp -d)
chmod 0755 "$SSH_GUEST_WORK"
services=()
trap 'ssh_guest_stop; rm -f "${services[@]}"; rm -rf "$SSH_GUEST_WORK"' EXIT
work=$SSH_GUEST_WORK
started=$SECONDS
ssh_guest_start_key
origin=pam://securitykey-hidvm
echo "test-pam: key at $ssh_guest_uri, $(dpkg-query -W -f='libpam-u2f ${Version}' libpam-u2f), origin $origin"

# authenticate NAME MODULE-LINE: a test-only service /etc/pam.d/securitykey-NAME with that one
# line; pamtester authenticates root through it; the output (with the modules' debug lines) is
# kept in $work/NAME.log.
authenticate() {
    local name=$1 line=$2 service=securitykey-hidvm-$1
    echo "auth required $line" >"/etc/pam.d/$service"
    services+=("/etc/pam.d/$service")
    pamtester -v "$service" root authenticate </dev/null >"$work/$name.log" 2>&1 ||
        ssh_guest_fail "$name: pamtester did not authenticate: $(cat "$work/$name.log")"
    grep -q "successfully authenticated" "$work/$name.log" || ssh_guest_fail "$name: $(cat "$work/$name.log")"
}
ours() { echo "$SECURITYKEY_PAM_MODULE debug timeout=30 $*"; }
theirs() { echo "$pam_u2f debug $*"; }
checks=0

# 1. pamu2fcfg's line, our module (Debian 12's pamu2fcfg 1.1.0 makes es256 and rs256 credentials,
# and the virtual key es256 and eddsa ones).
for type in es256; do
    pamu2fcfg -u root -o "$origin" -i "$origin" -t "$type" >"$work/pamu2fcfg-$type" 2>"$work/pamu2fcfg-$type.log" ||
        ssh_guest_fail "pamu2fcfg -t $type failed: $(cat "$work/pamu2fcfg-$type.log")"
    echo >>"$work/pamu2fcfg-$type"
    grep -q "^root:.*,$type," "$work/pamu2fcfg-$type" || ssh_guest_fail "pamu2fcfg wrote: $(cat "$work/pamu2fcfg-$type")"
    authenticate "ours-pamu2fcfg-$type" "$(ours authfile="$work/pamu2fcfg-$type" origin="$origin")"
    grep -q "pam_securitykey: assertion verified" "$work/ours-pamu2fcfg-$type.log" ||
        ssh_guest_fail "our module's log does not show a verified assertion: $(cat "$work/ours-pamu2fcfg-$type.log")"
    echo "test-pam: pamu2fcfg -t $type enrolled the key; pam_securitykey.so authenticated with its line"
    checks=$((checks + 1))
done

# 2. Our line, pam_u2f.so.
"$SECURITYKEY_BIN" pam enroll --user root --origin "$origin" --device "$ssh_guest_uri" >"$work/ours-line" \
    2>"$work/ours-line.log" || ssh_guest_fail "securitykey pam enroll failed: $(cat "$work/ours-line.log")"
grep -q "^root:.*,es256,+presence$" "$work/ours-line" || ssh_guest_fail "securitykey pam enroll wrote: $(cat "$work/ours-line")"
authenticate theirs-ours-line "$(theirs authfile="$work/ours-line" origin="$origin" appid="$origin")"
echo "test-pam: securitykey pam enroll wrote a line; pam_u2f.so authenticated with it"
checks=$((checks + 1))

# 3. An OpenSSH key file made through our provider, through both modules' sshformat.
ssh-keygen -t ecdsa-sk -w "$SECURITYKEY_SK_PROVIDER" -N '' -f "$work/id_ecdsa_sk" </dev/null \
    >"$work/ssh-keygen.log" 2>&1 || ssh_guest_fail "ssh-keygen -w our provider failed: $(cat "$work/ssh-keygen.log")"
authenticate ours-sshformat "$(ours sshformat authfile="$work/id_ecdsa_sk")"
grep -q "pam_securitykey: assertion verified" "$work/ours-sshformat.log" ||
    ssh_guest_fail "our module's log does not show a verified assertion: $(cat "$work/ours-sshformat.log")"
authenticate theirs-sshformat "$(theirs sshformat authfile="$work/id_ecdsa_sk")"
echo "test-pam: an ecdsa-sk key file from our provider authenticated through pam_securitykey.so and pam_u2f.so (sshformat)"
checks=$((checks + 2))

# 4. A control: the key gone, neither module lets root in.
ssh_guest_stop
if pamtester -v securitykey-hidvm-ours-pamu2fcfg-es256 root authenticate </dev/null >"$work/gone.log" 2>&1; then
    ssh_guest_fail "our module authenticated with no key present"
fi
grep -q "Authentication service cannot retrieve authentication info" "$work/gone.log" ||
    ssh_guest_fail "with no key, our module said: $(cat "$work/gone.log")"
checks=$((checks + 1))
[[ $checks == 5 ]] || ssh_guest_fail "ran $checks checks, not 5"
echo "test-pam: 5 checks (pamu2fcfg's line through ours, our line through pam_u2f, sshformat through both, no key) passed in $((SECONDS - started)) s."
