#!/usr/bin/env bash
# What `make test` runs once the debug build is done: the suite (scripts/run-tests.sh), then the
# packaging checks (scripts/test-packaging.sh) unless SECURITYKEY_SKIP_PACKAGING=1. The status is
# the suite's failure, else the packaging's.
#
# The QEMU guest runs first, alone. Then the packaging's builds (the release build and the
# package that depends on this one, about 10 minutes of both cores) start beside the host's
# suites at a low priority (nice 10): the suites spend most of their time waiting on servers,
# child processes, touches and deadlines, and the builds take the CPU they leave idle, while a
# test that wants the CPU gets about nine tenths of it first. CI's fuzz build runs at nice 19
# and yields to both (.ci/run). The host suites run the built test bundle directly
# (scripts/run-tests.sh --host-only): the release build holds SwiftPM's lock and build database
# on .build meanwhile (it writes only .build's release directories).
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
if [ "${SECURITYKEY_SKIP_PACKAGING:-0}" = 1 ]; then
    scripts/run-tests.sh || status=$?
    echo "test: packaging checks skipped (SECURITYKEY_SKIP_PACKAGING=1)"
    exit "$status"
fi

# The QEMU guest first, alone: it emulates its CPUs (TCG) on both cores, so the builds would get
# nothing there, and its timing checks (a second program waits, then is told the key is busy)
# want the whole machine.
scripts/hidvm/test-uhid.sh --no-build || status=$?

mkdir -p .build
log=.build/prebuild.log
set -m
nice -n 10 scripts/test-packaging.sh --build-only </dev/null >"$log" 2>&1 &
prebuild=$!
set +m
trap 'kill -TERM -- "-$prebuild" 2>/dev/null || true' EXIT
began=$SECONDS
echo "== test: the packaging's builds started beside the suite at a low priority (log: $log)"

scripts/run-tests.sh --host-only || status=$?

echo "== test: the suite ended after $((SECONDS - began)) s; waiting for the packaging's builds"
waited=$SECONDS
# A failed build is not fatal here: the packaging checks build again and report the failure.
wait "$prebuild" || echo "test: the builds beside the suite failed (the packaging checks build again): $(tail -n 5 "$log")"
trap - EXIT
echo "== test: the builds ended $((SECONDS - waited)) s after the suite"

scripts/test-packaging.sh || { rc=$?; [ "$status" != 0 ] || status=$rc; }
exit "$status"
