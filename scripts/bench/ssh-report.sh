#!/usr/bin/env bash
# ssh-report.sh — runs scripts/bench/ssh-in-guest.sh and writes what it printed into
# Docs/Performance.md as the section "## OpenSSH through the provider (QEMU guest)", replacing
# that section if it is there, else placing it before "## Reading the numbers". The figures are
# never edited by hand. Run by `make bench-ssh` (SSH_BENCH_RUNS runs of each, default 5) and by
# scripts/bench/report.sh after it rewrites the file.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${SSH_BENCH_RUNS:-5}
out=Docs/Performance.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "ssh-report: running scripts/bench/ssh-in-guest.sh $runs (a QEMU guest; minutes)" >&2
scripts/bench/ssh-in-guest.sh "$runs" | tee "$tmp/bench.txt"
status=${PIPESTATUS[0]}
(( status == 0 )) || { echo "ssh-report: the benchmark failed (status $status); $out not changed" >&2; exit 1; }

commit=${BENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
heading="## OpenSSH through the provider (QEMU guest)"
{
    echo "$heading"
    echo
    echo "\`scripts/bench/ssh-in-guest.sh $runs\` (\`make bench-ssh\`) on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit:"
    echo "Debian's ssh-keygen and ssh with our \`libsecuritykey-sk.so\` (release build, Swift runtime linked in) and"
    echo "with OpenSSH's built-in provider (libfido2), taking turns on the same \`virtual serve --uhid\` key, and"
    echo "\`bench/openssh/sk-load\` loading the library as ssh-sk-helper does. The guest CPU is emulated and the"
    echo "machine was shared: compare the two providers' rows; the host rows are the load target's (<= 20 ms)."
    echo
    echo '```'
    cat "$tmp/bench.txt"
    echo '```'
    echo
} >"$tmp/section.md"

scripts/bench/put-section.sh "$heading" "$tmp/section.md"
echo "ssh-report: wrote the OpenSSH section of $out" >&2
