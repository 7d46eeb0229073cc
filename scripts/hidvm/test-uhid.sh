#!/usr/bin/env bash
# test-uhid.sh — build the tests on the host, then run the uhid server tests in the QEMU guest
# (scripts/hidvm/run-in-vm.sh), where /dev/uhid and hidraw exist. Fails unless they really ran.
set -euo pipefail
cd "$(dirname "$0")/../.."
# python-fido2 is the independent host in the guest too.
export SECURITYKEY_PYTHON=${SECURITYKEY_PYTHON:-$PWD/.venv/bin/python3}
if [[ ${1:-} != --in-guest ]]; then
    swift build --build-tests --explicit-target-dependency-import-check error
    exec scripts/hidvm/run-in-vm.sh scripts/hidvm/test-uhid.sh --in-guest
fi
echo "guest kernel $(uname -r); $(ls -l /dev/uhid)"
bin=$(ls -d .build/debug/*PackageTests.xctest | head -1)
# tee: progress shows while the (slow, emulated) guest runs.
out=$(set -o pipefail; "$bin" --testing-library swift-testing --filter UHIDServerTests 2>&1 | tee /dev/stderr) \
    && rc=0 || rc=$?
if grep -q 'skipped' <<<"$out"; then echo "test-uhid: the uhid tests were skipped" >&2; exit 1; fi
for t in hidapiFindsOpensAndTalksToTheKey pythonFIDO2FindsAndTalksToTheKey \
    ourHostRegistersAndSignsInThroughHidapi libfido2ToolsListInspectAndRegister \
    pythonFIDO2RegistersAndSignsInThroughHidraw; do
    grep -q "$t() passed" <<<"$out" || { echo "test-uhid: $t did not pass" >&2; exit 1; }
done
exit "$rc"
