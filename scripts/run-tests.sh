#!/usr/bin/env bash
# Runs the built test suite (make test builds it first): the real-hidraw tests in a QEMU guest,
# then everything else inside one private PC/SC test bed.
#
# Suites in different test targets run in parallel in one `swift test` process. Two groups run
# on their own after everything else: the provider's PC/SC suite, because the bed has only two
# vpcd readers (the VPCD suite serializes itself), and the CLI tests, which run the built
# binary synchronously and would otherwise hold the cooperative threads that in-process
# servers of other suites need.
#
# The uhid tests need a kernel with uhid; this host may have none, so scripts/hidvm/test-uhid.sh
# runs them in a QEMU guest (skipping, with a message, only where no guest can start). A failure
# there does not stop the host suites; the script's status is the first failure's.
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
# UHIDServerTests ran in the guest above.
skip=$(IFS='|'; echo "${card_groups[*]}|UHIDServerTests")
scripts/pcsc-testbed.sh run -- bash -c '
    set -uo pipefail
    failed=0
    swift test --skip-build --disable-xctest --skip "'"$skip"'" || failed=$?
    # Every group runs even when one before it failed, so one run shows every failure.
    for group in '"${card_groups[*]}"'; do
        echo "== $group (on the PC/SC bed alone)"
        swift test --skip-build --disable-xctest --filter "$group" || failed=$?
    done
    exit $failed' || { rc=$?; [[ $status != 0 ]] || status=$rc; }

exit "$status"
