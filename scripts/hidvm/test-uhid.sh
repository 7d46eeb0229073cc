#!/usr/bin/env bash
# test-uhid.sh — the real-hidraw tests: run the uhid server tests and `securitykey virtual serve
# --uhid` in the QEMU guest (scripts/hidvm/run-in-vm.sh), where /dev/uhid and hidraw exist, with
# three independent hosts on the same /dev/hidrawN: ours (libhidapi-hidraw), libfido2's tools and
# python-fido2; then Debian's OpenSSH with its built-in provider and ours on one key
# (scripts/hidvm/test-ssh.sh, in the same guest), Debian's pam-u2f and our PAM module on one
# key (scripts/hidvm/test-pam.sh), and deadlines, a key destroyed mid-ceremony and six programs
# on one key at once (scripts/hidvm/test-faults.sh). Fails unless every named test really ran
# and passed.
#
#   scripts/hidvm/test-uhid.sh [--no-build]
#
# Exit 0 with a "SKIPPED" line only when the guest cannot start here (run-in-vm.sh exit 125:
# no QEMU, no kernel, no boot); a guest that starts and then fails or hangs is a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
# python-fido2 is the independent host in the guest too.
export SECURITYKEY_PYTHON=${SECURITYKEY_PYTHON:-$PWD/.venv/bin/python3}
tests=(hidapiFindsOpensAndTalksToTheKey pythonFIDO2FindsAndTalksToTheKey
    ourHostRegistersAndSignsInThroughHidapi libfido2ToolsListInspectAndRegister
    pythonFIDO2RegistersAndSignsInThroughHidraw
    otherProcessesWaitThenFailWhileTheKeyIsHeldAndSucceedAfter
    aSecondCLIProcessWaitsForTheKeyIsToldWhyAndThenSucceeds
    cancellingATouchWaitSendsCTAPHIDCancelAndTheKeyStaysUsable keyboardInterfacesAreNeverListed
    hotplugEventsFollowTheKey aKeyPluggedInWhileAChoiceWaitsIsUsedWithinASecond)

if [[ ${1:-} != --in-guest ]]; then
    if [[ ${1:-} != --no-build ]]; then
        make --no-print-directory build-tests
    fi
    [[ -x $SECURITYKEY_PYTHON ]] || { echo "test-uhid: no python-fido2 at $SECURITYKEY_PYTHON (make pydeps)" >&2; exit 1; }
    echo "== uhid/hidraw tests in a QEMU guest (scripts/hidvm)"
    exec scripts/hidvm/run-in-vm.sh --skip-as test-uhid scripts/hidvm/test-uhid.sh --in-guest
fi

# --- in the guest --------------------------------------------------------------------------------
[[ -c /dev/uhid ]] || { echo "test-uhid: the guest has no /dev/uhid" >&2; exit 1; }
echo "guest kernel $(uname -r); $(ls -l /dev/uhid)"
bin=$(ls -d .build/debug/*PackageTests.xctest | head -1)
cli=.build/debug/securitykey
# The guest's output shows when it powers off (run-in-vm.sh), so collect and print it whole.
out=$("$bin" --testing-library swift-testing --filter UHIDServerTests 2>&1) && rc=0 || rc=$?
printf '%s\n' "$out"
if grep -q 'skipped' <<<"$out"; then echo "test-uhid: the uhid tests were skipped" >&2; exit 1; fi
for t in "${tests[@]}"; do
    grep -q "$t() passed" <<<"$out" || { echo "test-uhid: $t did not pass" >&2; exit 1; }
done
[[ $rc == 0 ]] || exit "$rc"

# `securitykey virtual serve --uhid`, then libfido2 and our CLI on the node it names.
echo "== securitykey virtual serve --uhid"
work=$(mktemp -d)
"$cli" virtual serve --uhid --json --attestation-root "$work/root.pem" >"$work/serve.json" 2>"$work/serve.log" &
serve=$!
trap 'kill "$serve" 2>/dev/null || true' EXIT
for _ in $(seq 200); do [[ -s $work/serve.json ]] && break; kill -0 "$serve" || break; sleep 0.1; done
field() { "$SECURITYKEY_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }
uri=$(field "$work/serve.json" uri) || { cat "$work/serve.log" >&2; echo "test-uhid: serve --uhid printed no URI" >&2; exit 1; }
node=${uri#hid:}
aaguid=$(field "$work/serve.json" aaguid | tr -d -)
[[ -c $node ]] || { echo "test-uhid: $node is not a device node" >&2; exit 1; }
fido2-token -L | grep -q "^$node:" || { echo "test-uhid: fido2-token -L does not list $node" >&2; exit 1; }
fido2-token -I "$node" | grep -qx "aaguid: $aaguid" \
    || { echo "test-uhid: fido2-token -I $node does not show aaguid $aaguid" >&2; exit 1; }
# Without access to the node (nobody, mode 0600 root): a clear error naming it and the udev rules.
denied=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$cli" info --device "$uri" --json) && {
    echo "test-uhid: an unprivileged user opened $node" >&2; exit 1; }
grep -q '"code" *: *"permission-denied"' <<<"$denied" && grep -q "$node" <<<"$denied" && grep -q udev <<<"$denied" \
    || { echo "test-uhid: unexpected permission error: $denied" >&2; exit 1; }
"$cli" register --device "$uri" --rp example.org --user alice --json >"$work/registration.json"
"$cli" authenticate --device "$uri" --rp example.org \
    --credential "$(field "$work/registration.json" id)" --json >"$work/assertion.json"
"$cli" verify --registration "$work/registration.json" --assertion "$work/assertion.json" \
    --trust-root "$work/root.pem"

echo "== securitykeyd beside other programs on the key"
# The daemon opens (and flock-locks) a hidraw key only while a request holds it: with the daemon
# idle, our CLI and libfido2's tools open the key at once, and the daemon still serves it.
fail() { echo "test-uhid: $*" >&2; cat "$work/daemon.log" >&2 2>/dev/null || true; exit 1; }
/usr/bin/dbus-daemon --session --nofork --nopidfile --address="unix:path=$work/bus" --print-address=1 \
    >"$work/bus.address" 2>/dev/null &
bus=$!
trap 'kill "$serve" "$bus" ${daemon:-} 2>/dev/null || true' EXIT
for _ in $(seq 100); do [[ -s $work/bus.address ]] && break; sleep 0.1; done
address=$(head -n 1 "$work/bus.address")
[[ -n $address ]] || fail "dbus-daemon printed no address"
.build/debug/securitykeyd --address "$address" -v 2>"$work/daemon.log" &
daemon=$!
listed=""
for _ in $(seq 150); do
    listed=$(busctl --address="$address" call org.securitykey.Daemon1 /org/securitykey/Daemon1 \
        org.securitykey.Daemon1 ListDevices 2>/dev/null || true)
    grep -q "$node" <<<"$listed" && break
    sleep 0.2
done
grep -q "$node" <<<"$listed" || fail "securitykeyd does not list $node: $listed"
"$cli" info --device "$uri" --timeout 3 --json >"$work/info.json" 2>"$work/info.err" \
    || fail "the CLI could not open $node beside an idle securitykeyd: $(cat "$work/info.err")"
! grep -q "busy with another application" "$work/info.err" || fail "the CLI waited for the idle daemon"
timeout 10 fido2-token -I "$node" | grep -qx "aaguid: $aaguid" \
    || fail "fido2-token -I could not open $node beside an idle securitykeyd"
"$cli" register --rp daemon.example --user carol --json --via-daemon --bus-address "$address" \
    >"$work/via-daemon.json" || fail "securitykeyd did not serve $node after the others used it"
[[ $(field "$work/via-daemon.json" device) == "$uri" ]] || fail "the daemon used another key"
kill -TERM "$daemon" && wait "$daemon" || fail "securitykeyd did not stop cleanly on SIGTERM"
kill -TERM "$bus" 2>/dev/null; wait "$bus" 2>/dev/null || true

kill -TERM "$serve" && wait "$serve" || { echo "test-uhid: serve --uhid did not stop cleanly on SIGTERM" >&2; exit 1; }
trap - EXIT
# Stopping destroys the uhid device: its node goes away.
for _ in $(seq 50); do [[ -e $node ]] || break; sleep 0.1; done
[[ ! -e $node ]] || { echo "test-uhid: $node still exists after serve --uhid stopped" >&2; exit 1; }
echo "test-uhid: ${#tests[@]} uhid tests, the serve --uhid round trip and securitykeyd beside other programs passed in the guest."

echo "== OpenSSH: the built-in provider and ours on one uhid key"
scripts/hidvm/test-ssh.sh --in-guest

echo "== PAM: Debian's pam-u2f and our module on one uhid key"
scripts/hidvm/test-pam.sh --in-guest

echo "== Faults: a silent key, a key destroyed mid-ceremony, six programs on one key"
scripts/hidvm/test-faults.sh --in-guest
