#!/usr/bin/env bash
# What `make test` runs once the debug build is done: the suite (scripts/run-tests.sh: the QEMU
# guest, then the host's groups), then the packaging checks (scripts/test-packaging.sh) unless
# SECURITYKEY_SKIP_PACKAGING=1, whether the suite passed or not. The status is the suite's
# failure, else the packaging's.
#
# Each runs alone. Running the packaging's builds beside the suite was tried and made it flaky:
# niceness does not hold for SwiftPM's compiler jobs (it starts them at nice 0 whatever its own),
# and the test bed runs the suites in a session, and so a scheduler autogroup, of their own,
# against which niceness counts for nothing; with a release build beside them, CLITests' own PC/SC
# beds took over 30 s to start. A cgroup with few CPU shares would hold; it is not tried yet.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
scripts/run-tests.sh || status=$?
if [ "${SECURITYKEY_SKIP_PACKAGING:-0}" = 1 ]; then
    echo "test: packaging checks skipped (SECURITYKEY_SKIP_PACKAGING=1)"
else
    scripts/test-packaging.sh || { rc=$?; [ "$status" != 0 ] || status=$rc; }
fi
exit "$status"
