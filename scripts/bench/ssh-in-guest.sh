#!/usr/bin/env bash
# ssh-in-guest.sh — OpenSSH through our provider (libsecuritykey-sk.so) against OpenSSH's built-in
# one (libfido2), side by side on the same `securitykey virtual serve --uhid` key in the QEMU guest
# of scripts/hidvm/run-in-vm.sh, and the provider's load-to-first-call time.
#
#   scripts/bench/ssh-in-guest.sh [N]          (N runs of each, default 5)
#
# Figures, each as min / median / max over N runs, the two providers' runs interleaved:
#   enrol   `ssh-keygen -t ecdsa-sk -w PROVIDER` (a new key file; the key answers touches at once)
#   login   `ssh -o SecurityKeyProvider=PROVIDER` to a private sshd on 127.0.0.1 in the guest,
#           running one command, with the same key file (enrolled by the built-in provider)
#   load    bench/openssh/sk-load: dlopen as ssh-sk-helper does, to the return of the first
#           sk_api_version, and to the return of sk_load_resident_keys with no key present
#           (runtime start-up and a device search), on this host and in the guest, one fresh
#           process per run
# Wall-clock times of whole commands (process starts, key exchange, the helper): the guest's CPU
# is emulated and 10-50x slower, so compare the providers with each other, not with a real
# machine; the host's load times are the ones the <= 20 ms target is about.
#
# Uses release builds (what `make install` ships): SECURITYKEY_BIN (.build/release/securitykey),
# SECURITYKEY_SK_PROVIDER (.build/install/lib/securitykey/libsecuritykey-sk.so, make release's), SK_LOAD (.build/bench/sk-load).
# `make bench-ssh` builds them and writes the figures into Docs/Performance.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
export SECURITYKEY_BIN=${SECURITYKEY_BIN:-$PWD/.build/release/securitykey}
export SECURITYKEY_SK_PROVIDER=${SECURITYKEY_SK_PROVIDER:-$PWD/.build/install/lib/securitykey/libsecuritykey-sk.so}
export SK_LOAD=${SK_LOAD:-$PWD/.build/bench/sk-load}

ssh_guest_name=ssh-in-guest
# shellcheck source=scripts/hidvm/ssh-guest.sh
. scripts/hidvm/ssh-guest.sh

# The load driver N times, one process each; prints "LABEL ms" lines for the summary.
load_runs() {
    local where=$1 n=$2 _ line
    for _ in $(seq "$n"); do
        # No key at all: no UDP endpoints, no pcscd (a test bed's, if one runs here, stays out).
        line=$(env -u SECURITYKEY_UDP PCSCLITE_CSOCK_NAME=/nonexistent/pcscd.comm \
            "$SK_LOAD" "$SECURITYKEY_SK_PROVIDER" --resident 2>/dev/null) ||
            ssh_guest_fail "sk-load failed on $SECURITYKEY_SK_PROVIDER"
        [[ $line == *"resident_result=-4 "* ]] ||
            ssh_guest_fail "sk_load_resident_keys with no key present did not say device-not-found (-4): $line"
        sed -E "s/.*first_call_ms=([0-9.]+).*resident_ms=([0-9.]+).*/load-first-call $where \\1\\nload-resident-none $where \\2/" <<<"$line"
    done
}

if [[ ${1:-} != --in-guest ]]; then
    n=${1:-5}
    [[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 100 ]] || ssh_guest_fail "N must be a number from 1 to 100"
    for f in "$SECURITYKEY_BIN" "$SK_LOAD"; do
        [[ -x $f ]] || ssh_guest_fail "no $f (make bench-ssh builds it)"
    done
    [[ -f $SECURITYKEY_SK_PROVIDER ]] || ssh_guest_fail "no $SECURITYKEY_SK_PROVIDER (make bench-ssh builds it)"
    # The guest gets the host's runs through the environment run-in-vm.sh hands over.
    SSH_BENCH_HOST_RUNS=$(load_runs host "$n")
    export SSH_BENCH_HOST_RUNS
    exec scripts/hidvm/run-in-vm.sh scripts/bench/ssh-in-guest.sh --in-guest "$n"
fi

# --- in the guest --------------------------------------------------------------------------------
n=$2
SSH_GUEST_WORK=$(mktemp -d)
trap 'ssh_guest_stop; rm -rf "$SSH_GUEST_WORK"' EXIT
ours=$SECURITYKEY_SK_PROVIDER
runs=$SSH_GUEST_WORK/runs
printf '%s\n' "${SSH_BENCH_HOST_RUNS:-}" | grep . >"$runs" || ssh_guest_fail "no host load runs were handed over"
load_runs guest "$n" >>"$runs"

ssh_guest_start_key
ssh_guest_start_sshd
echo "ssh-in-guest: $(ssh -V 2>&1), kernel $(uname -r), key at $ssh_guest_uri, $n runs each"

# ms since START (an $EPOCHREALTIME value), as a decimal.
elapsed_ms() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", (b - a) * 1000 }'; }

for i in $(seq "$n"); do
    # Alternate which provider goes first, so that neither always runs on a warmer guest.
    if (( i % 2 )); then order=(internal "$ours"); else order=("$ours" internal); fi
    for provider in "${order[@]}"; do
        start=$EPOCHREALTIME
        ssh_guest_enrol "$provider" ecdsa-sk "$SSH_GUEST_WORK/$(ssh_guest_provider_name "$provider")-$i"
        echo "enrol $(ssh_guest_provider_name "$provider") $(elapsed_ms "$start")" >>"$runs"
    done
done
login_key=$SSH_GUEST_WORK/built-in-1
expected="publickey $(cut -d' ' -f1,2 "$login_key.pub")"
for i in $(seq "$n"); do
    if (( i % 2 )); then order=(internal "$ours"); else order=("$ours" internal); fi
    for provider in "${order[@]}"; do
        start=$EPOCHREALTIME
        got=$(ssh_guest_login "$login_key" "$provider") || ssh_guest_fail "login through $(ssh_guest_provider_name "$provider") failed"
        echo "login $(ssh_guest_provider_name "$provider") $(elapsed_ms "$start")" >>"$runs"
        [[ $got == "$expected" ]] || ssh_guest_fail "sshd says the login used '$got', not '$expected'"
    done
done

# Sorted by what, provider and time, so each group's values arrive in order (min first).
sort -k1,1 -k2,2 -k3,3g "$runs" | awk -v n="$n" '
    function median(a, k,    m) { m = int((k + 1) / 2); return (k % 2) ? a[m] : (a[m] + a[m + 1]) / 2 }
    { key = $1 " " $2; count[key]++; value[key, count[key]] = $3 }
    # One line: OP runs of HOST (a provider, or where ours was loaded), labelled TEXT.
    function row(op, host, text, digits,    key, k, i, s, ratio, shown) {
        key = op " " host; k = count[key]
        if (k != n) { print "ssh-in-guest: " k " runs for " key ", not " n > "/dev/stderr"; failed = 1; return }
        for (i = 1; i <= k; i++) s[i] = value[key, i]
        med[key] = median(s, k)
        ratio = (host == "ours" && (op " built-in") in med) ? sprintf("%.2fx", med[key] / med[op " built-in"]) : ""
        shown = (host == "built-in") ? host : "ours"
        printf "%-40s %-9s %5d %9." digits "f %9." digits "f %9." digits "f %14s\n", text, shown, k, s[1], med[key], s[k], ratio
    }
    END {
        print "Wall-clock ms per command; the guest CPU is emulated (QEMU TCG): compare ours with the built-in provider."
        printf "%-40s %-9s %5s %9s %9s %9s %14s\n", "what", "provider", "runs", "min", "median", "max", "ours/built-in"
        row("enrol", "built-in", "ssh-keygen -t ecdsa-sk (guest)", 1)
        row("enrol", "ours", "ssh-keygen -t ecdsa-sk (guest)", 1)
        row("login", "built-in", "ssh login, one command (guest)", 1)
        row("login", "ours", "ssh login, one command (guest)", 1)
        row("load-first-call", "host", "dlopen to sk_api_version (host)", 2)
        row("load-first-call", "guest", "dlopen to sk_api_version (guest)", 2)
        row("load-resident-none", "host", "dlopen to sk_load_resident_keys (host)", 2)
        row("load-resident-none", "guest", "dlopen to sk_load_resident_keys (guest)", 2)
        print "(Load rows: ours only. sk_load_resident_keys with no key present returns SSH_SK_ERR_DEVICE_NOT_FOUND"
        print "after searching USB and PC/SC: the library'"'"'s start-up plus a search for keys.)"
        exit failed
    }'
