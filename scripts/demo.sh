#!/usr/bin/env bash
# make demo: a virtual security key served over PC/SC, then register → authenticate → verify
# with the securitykey CLI, as a relying party would. Stops everything it started.
#
# Needs: a built CLI (.build/debug/securitykey, or SECURITYKEY_BIN), pcscd and vsmartcard-vpcd
# (make deps), and root or CAP_SYS_ADMIN for the private PC/SC bed (scripts/pcsc-testbed.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
bin="${SECURITYKEY_BIN:-$repo/.build/debug/securitykey}"
[[ -x "$bin" ]] || { echo "demo: $bin is not built (swift build --product securitykey)" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/securitykey-demo.XXXXXX")"
bed="$work/bed"
serve_pid=""

cleanup() {
    if [[ -n "$serve_pid" ]] && kill -0 "$serve_pid" 2>/dev/null; then
        kill -TERM "$serve_pid" 2>/dev/null || true
        wait "$serve_pid" 2>/dev/null || true
    fi
    "$here/pcsc-testbed.sh" stop "$bed" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

echo "1. Starting a private pcscd with the vpcd reader driver"
eval "$("$here/pcsc-testbed.sh" start "$bed")"

echo "2. Serving a virtual security key to vpcd (securitykey virtual serve --pcsc)"
"$bin" virtual serve --pcsc --state "$work/key.state" --attestation-root "$work/root.pem" \
    >"$work/serve.json" 2>"$work/serve.log" &
serve_pid=$!
device="pcsc:${SECURITYKEY_VPCD_READERS%%|*}"
for _ in $(seq 1 100); do
    if "$bin" list --json 2>/dev/null | grep -q "\"$device\""; then break; fi
    kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log" >&2; echo "demo: the virtual key stopped" >&2; exit 1; }
    sleep 0.1
done
"$bin" list
echo

echo "3. securitykey register --rp example.org --user alice --json"
"$bin" register --device "$device" --rp example.org --user alice --json >"$work/registration.json"
echo "   credential $(json "$work/registration.json" 'd["id"][:32]')…, $(json "$work/registration.json" 'd["attestationFormat"]') attestation, algorithm $(json "$work/registration.json" 'd["response"]["publicKeyAlgorithm"]')"

echo "4. securitykey authenticate --rp example.org --credential <id> --json"
"$bin" authenticate --device "$device" --rp example.org \
    --credential "$(json "$work/registration.json" 'd["id"]')" --json >"$work/assertion.json"
echo "   signature $(json "$work/assertion.json" 'd["response"]["signature"][:32]')…, sign count $(json "$work/assertion.json" 'd["signCount"]')"

echo "5. securitykey verify --registration … --assertion … --trust-root <the virtual key's root>"
"$bin" verify --registration "$work/registration.json" --assertion "$work/assertion.json" \
    --trust-root "$work/root.pem" | sed 's/^/   /'

echo
echo "Done: the key was registered, signed in with, and both results verified. Stopping everything."
