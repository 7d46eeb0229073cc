#!/usr/bin/env bash
# Runs the built test suite (make test builds it first): the real-hidraw tests in a QEMU guest,
# then everything else inside one private PC/SC test bed.
#
# Within a group, suites run in parallel in one process. Some groups run on their own after the
# rest: the provider's PC/SC suite, because the bed has only two vpcd readers (the VPCD suite
# serializes itself), and the suites that drive programs (CLI, daemon, OpenSSH, PAM), which
# would otherwise hold the cooperative threads that in-process servers of other suites need.
#
# The uhid tests need a kernel with uhid; this host may have none, so scripts/hidvm/test-uhid.sh
# runs them in a QEMU guest (skipping, with a message, only where no guest can start). A failure
# there does not stop the host suites; the script's status is the first failure's.
# The groups run the built test bundle itself (as `swift test --skip-build` would, and as the
# guest does), not `swift test`, which plans for ~20 s before each run and waits for SwiftPM's
# lock and build database on .build while any build holds them.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
scripts/hidvm/test-uhid.sh --no-build || status=$?
# WebAuthnVerificationTests is CPU-bound (certificate paths, 4 MB metadata BLOBs): beside the
# I/O suites on a 2-core machine it starves their servers' deadlines, so it runs on its own too.
# DaemonTests, like CLITests, drive processes from synchronous tests that wait (sleep, read
# pipes) on cooperative-pool threads; beside the in-process servers they starve them, so they
# run on their own as well.
# CLITests include FleetPrometheusTests (two node-exporters and a Prometheus on 127.0.0.1, about
# 20 s), which need no group of their own.
# SSHSecurityKeyProviderTests, like CLITests, run OpenSSH's programs from synchronous tests and
# wait on them; they run on their own too, and so do PAMSecurityKeyTests (pamtester, the same way).
card_groups=(ProviderPCSCTests CLITests DaemonTests WebAuthnVerificationTests SSHSecurityKeyProviderTests
    PAMSecurityKeyTests)
# The rest runs as two groups. The first holds the suites that only compute (parsers, encoders,
# python-fido2's bytes, fuzz regressions, the module table): in a debug build they keep both
# cooperative threads of a 2-core machine busy for seconds at a time, and beside them the
# in-process servers of the second group (virtual keys over UDP, vpcd and scripted hotplug, each
# with a deadline) went unscheduled for over 10 s on a CI machine and missed their deadlines.
# The second group also runs at most 12 tests at a time (Swift Testing's
# SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH): all 300 starting at once spend their first
# seconds making virtual keys (key pairs, certificates, in a debug build) and starve the servers
# of the first ones; 12 at a time passes with two CPU hogs beside it and costs ~10 % of its time.
compute_group=(CBORTests CTAP2Tests ISO7816Tests CTAPHIDTests FuzzTargetsTests ArchitectureTests
    SecurityKeyInternalsTests FleetTests SecurityKeysTests)
# UHIDServerTests ran in the guest above.
skip=$(IFS='|'; echo "${card_groups[*]}|UHIDServerTests")
bundle=$(ls -d .build/debug/*PackageTests.xctest | head -1)
[[ -x $bundle ]] || { echo "run-tests: no test bundle in .build/debug (swift build --build-tests)" >&2; exit 1; }
# Anchored to the module: "CTAPHIDTests" alone would also match CLITests' DecodeCTAPHIDTests.
compute="^($(IFS='|'; echo "${compute_group[*]}"))\\."
scripts/pcsc-testbed.sh run -- bash -c '
    set -uo pipefail
    failed=0
    echo "== the suites that only compute: '"${compute_group[*]}"'"
    "'"$bundle"'" --testing-library swift-testing --filter "'"$compute"'" || failed=$?
    echo "== the other suites, with in-process servers (not the groups below), 12 tests at a time"
    SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=12 \
        "'"$bundle"'" --testing-library swift-testing --skip "'"$skip|$compute"'" || failed=$?
    # Every group runs even when one before it failed, so one run shows every failure.
    for group in '"${card_groups[*]}"'; do
        echo "== $group (on the PC/SC bed alone)"
        "'"$bundle"'" --testing-library swift-testing --filter "$group" || failed=$?
    done
    exit $failed' || { rc=$?; [[ $status != 0 ]] || status=$rc; }

exit "$status"
