#!/usr/bin/env bash
# Runs the built test suite (make test builds it first) inside one private PC/SC test bed.
#
# The bed has two vpcd readers, and suites in different test targets run in parallel in one
# `swift test` process, so the suites that put cards in those readers run one group at a
# time: everything else first (with the VPCD suite, serialized within itself), then each
# other card-using group on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
card_groups=(ProviderPCSCTests PCSCCommandTests)
skip=$(IFS='|'; echo "${card_groups[*]}")
scripts/pcsc-testbed.sh run -- bash -c '
    set -euo pipefail
    swift test --skip-build --disable-xctest --skip "'"$skip"'"
    for group in '"${card_groups[*]}"'; do
        echo "== $group (on the PC/SC bed alone)"
        swift test --skip-build --disable-xctest --filter "$group"
    done'
