#!/usr/bin/env bash
# make demo: a virtual security key served over PC/SC, then register → authenticate → verify
# with the securitykey CLI, as a relying party would. Stops everything it started.
#
# Needs: a built CLI (.build/debug/securitykey, or SECURITYKEY_BIN) and python3. The key is
# served over PC/SC in a private bed (scripts/pcsc-testbed.sh: pcscd, vsmartcard-vpcd, and root or
# CAP_SYS_ADMIN for its mount namespace); where that bed cannot start (an ordinary user), the
# demo says why in one sentence and serves the key over CTAPHID-over-UDP on 127.0.0.1 instead.
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
    [[ -d "$bed" ]] && "$here/pcsc-testbed.sh" stop "$bed" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

echo "1. Starting a private pcscd with the vpcd reader driver"
# Only the bed started here counts (an outer bed's variables may be in the environment).
unset SECURITYKEY_VPCD_READERS
transport=udp
if bed_env="$("$here/pcsc-testbed.sh" start "$bed" 2>"$work/bed.err")"; then
    eval "$bed_env"
    [[ -n "${SECURITYKEY_VPCD_READERS:-}" ]] && transport=pcsc
fi
if [[ $transport == udp ]]; then
    # The bed's own sentence (no root, no pcscd, ...), then the fallback that needs neither.
    echo "   No PC/SC bed: $(sed -n 's/^pcsc-testbed: //p' "$work/bed.err" | head -n 1)"
    echo "   Serving the key over CTAPHID-over-UDP on 127.0.0.1 instead (no root needed)."
fi

if [[ $transport == pcsc ]]; then
    echo "2. Serving a virtual security key to vpcd (securitykey virtual serve --pcsc)"
    "$bin" virtual serve --pcsc --state "$work/key.state" --attestation-root "$work/root.pem" \
        >"$work/serve.json" 2>"$work/serve.log" &
    serve_pid=$!
    device="pcsc:${SECURITYKEY_VPCD_READERS%%|*}"
    listed=(list)
else
    port="$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    echo "2. Serving a virtual security key on udp:127.0.0.1:$port (securitykey virtual serve --udp)"
    "$bin" virtual serve --udp "127.0.0.1:$port" --state "$work/key.state" --attestation-root "$work/root.pem" \
        >"$work/serve.json" 2>"$work/serve.log" &
    serve_pid=$!
    # Any free local port: another host process may hold the conventional 7112.
    device="udp:127.0.0.1:$port?local=0"
    listed=(list --udp "127.0.0.1:$port")
fi
ready=""
for _ in $(seq 1 100); do
    if "$bin" "${listed[@]}" --json 2>/dev/null | grep -q "\"${device%%\?*}"; then ready=1; break; fi
    kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log" >&2; echo "demo: the virtual key stopped" >&2; exit 1; }
    sleep 0.1
done
[[ -n "$ready" ]] || { cat "$work/serve.log" >&2; echo "demo: the virtual key did not appear within 10 s" >&2; exit 1; }
"$bin" "${listed[@]}"
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
