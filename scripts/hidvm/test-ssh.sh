#!/usr/bin/env bash
# test-ssh.sh — Debian's real OpenSSH on a real hidraw key, in the QEMU guest of
# scripts/hidvm/run-in-vm.sh: one `securitykey virtual serve --uhid` key; ssh-keygen enrols an
# ecdsa-sk and an ed25519-sk key file through OpenSSH's built-in provider (libfido2, `-w internal`)
# and through ours (`-w libsecuritykey-sk.so`); every key file logs in to a private sshd on
# 127.0.0.1 through the other provider, so each provider signs with the other's key files. sshd's
# $SSH_USER_AUTH says which key logged in, and OpenSSH's own debug lines which provider answered.
#
#   scripts/hidvm/test-ssh.sh              boots a guest and runs the test there
#   scripts/hidvm/test-ssh.sh --in-guest   the test itself (scripts/hidvm/test-uhid.sh runs it in
#                                          its guest, so `make test` boots one guest for both)
#
# Uses the debug builds: .build/debug/securitykey and .build/debug/libsecuritykey-sk.so
# (SECURITYKEY_BIN, SECURITYKEY_SK_PROVIDER override them). Fails unless every enrolment and
# every login ran and matched; exits 0 with "SKIPPED" only when no guest can start here.
set -euo pipefail
cd "$(dirname "$0")/../.."
export SECURITYKEY_BIN=${SECURITYKEY_BIN:-$PWD/.build/debug/securitykey}
export SECURITYKEY_SK_PROVIDER=${SECURITYKEY_SK_PROVIDER:-$PWD/.build/debug/libsecuritykey-sk.so}

ssh_guest_name=test-ssh
# shellcheck source=scripts/hidvm/ssh-guest.sh
. scripts/hidvm/ssh-guest.sh

[[ -x $SECURITYKEY_BIN ]] || ssh_guest_fail "no $SECURITYKEY_BIN (swift build --product securitykey)"
[[ -f $SECURITYKEY_SK_PROVIDER ]] ||
    ssh_guest_fail "no $SECURITYKEY_SK_PROVIDER (swift build --product securitykey-sk)"

if [[ ${1:-} != --in-guest ]]; then
    exec scripts/hidvm/run-in-vm.sh --skip-as test-ssh scripts/hidvm/test-ssh.sh --in-guest
fi

# --- in the guest --------------------------------------------------------------------------------
command -v ssh-keygen >/dev/null && [[ -x /usr/sbin/sshd && -x /usr/lib/openssh/ssh-sk-helper ]] ||
    ssh_guest_fail "OpenSSH's client and server are not installed (openssh-client, openssh-server)"
SSH_GUEST_WORK=$(mktemp -d)
trap 'ssh_guest_stop; rm -rf "$SSH_GUEST_WORK"' EXIT
started=$SECONDS
ssh_guest_start_key
ssh_guest_start_sshd
echo "test-ssh: $(ssh -V 2>&1), key at $ssh_guest_uri, sshd on 127.0.0.1:$ssh_guest_port"

ours=$SECURITYKEY_SK_PROVIDER
# Evidence, in OpenSSH's own debug output, that PROVIDER served the operation logged in LOG:
# ssh-sk-helper names a loaded library and the API version it reports; the built-in provider
# reports how many devices libfido2 found.
provider_answered() {
    local provider=$1 log=$2
    if [[ $provider == internal ]]; then
        grep -qE 'sk_probe: [1-9][0-9]* device\(s\) detected|provider "internal"' "$log" &&
            ! grep -q "sshsk_open: provider $ours" "$log"
    else
        grep -q "sshsk_open: provider $provider implements version 0x000a" "$log"
    fi
}

keys=()
for type in ecdsa-sk ed25519-sk; do
    for provider in internal "$ours"; do
        file=$SSH_GUEST_WORK/$(ssh_guest_provider_name "$provider")-$type
        ssh_guest_enrol "$provider" "$type" "$file"
        provider_answered "$provider" "$file.log" ||
            ssh_guest_fail "ssh-keygen's output does not show provider $(ssh_guest_provider_name "$provider") enrolling $type"
        echo "test-ssh: enrolled $type through provider $(ssh_guest_provider_name "$provider"): $(cut -d' ' -f1 "$file.pub")"
        keys+=("$file")
    done
done

# Each key file logs in through the provider that did not make it (the same-provider logins are
# the host suites' and would only double the guest's time).
logins=0
for file in "${keys[@]}"; do
    expected=$(cut -d' ' -f1,2 "$file.pub")
    case $(basename "$file") in built-in-*) provider=$ours ;; *) provider=internal ;; esac
    got=$(ssh_guest_login "$file" "$provider") ||
        ssh_guest_fail "$(basename "$file") did not log in through provider $(ssh_guest_provider_name "$provider"): $(grep -v '^debug' "$file.login.log" | head -n 80)"
    [[ $got == "publickey $expected" ]] ||
        ssh_guest_fail "sshd says $(basename "$file") logged in with '$got', not '$expected'"
    provider_answered "$provider" "$file.login.log" ||
        ssh_guest_fail "ssh's output does not show provider $(ssh_guest_provider_name "$provider") signing"
    echo "test-ssh: $(basename "$file") logged in through provider $(ssh_guest_provider_name "$provider")"
    logins=$((logins + 1))
done
[[ ${#keys[@]} == 4 && $logins == 4 ]] || ssh_guest_fail "ran ${#keys[@]} enrolments and $logins logins, not 4 and 4"
echo "test-ssh: 4 enrolments and 4 logins, each provider signing with the other's key files, passed in $((SECONDS - started)) s."
