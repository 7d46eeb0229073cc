#!/usr/bin/env bash
# load-report.sh — the load and soak benchmarks of issue 32, and their section "## Load and soak"
# of Docs/Performance.md (written with put-section.sh; the figures are never edited by hand):
#
#   1. securitykeyd under LOAD_CLIENTS D-Bus clients issuing LOAD_REQUESTS requests per round,
#      LOAD_ROUNDS rounds, on LOAD_UDP_KEYS UDP + LOAD_PCSC_KEYS PC/SC virtual keys
#      (scripts/bench/daemon_load.py, in a PC/SC test bed);
#   2. LOAD_CLI `securitykey authenticate` processes in a row on one PC/SC key (cli_load.py);
#   3. LOAD_SSH `ssh` logins through libsecuritykey-sk.so (ssh_load.py; an sshd on 127.0.0.1);
#   4. LOAD_SOAK ceremonies in-process on one virtual key (securitykey-bench soak).
#
# Run by `make bench-load`, which builds the release binaries and the provider first. With
# LOAD_WRITE=0 it prints and leaves Docs/Performance.md alone (for runs at a reduced scale).
# Exits non-zero when any part's checks failed (the section is still written, saying so).
set -uo pipefail
cd "$(dirname "$0")/../.."
clients=${LOAD_CLIENTS:-200} requests=${LOAD_REQUESTS:-10000} rounds=${LOAD_ROUNDS:-2}
udp_keys=${LOAD_UDP_KEYS:-4} pcsc_keys=${LOAD_PCSC_KEYS:-4}
cli=${LOAD_CLI:-1000} ssh=${LOAD_SSH:-200} soak=${LOAD_SOAK:-100000}
bin=.build/release
python=${SECURITYKEY_PYTHON:-.venv/bin/python3}
provider=${SK_PROVIDER:-$bin/libsecuritykey-sk.so}
for file in "$bin/securitykey" "$bin/securitykeyd" "$bin/securitykey-bench" "$provider"; do
    [[ -e $file ]] || { echo "load-report: $file is missing (make bench-load builds it)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
devices=$(( (pcsc_keys + 1) / 2 ))
(( devices >= 1 )) || devices=1

part() {  # part NAME COMMAND...: runs one part, its output to the terminal and to $tmp/NAME.txt
    local name=$1; shift
    echo "load-report: $*" >&2
    { echo "\$ $*"; "$@" 2>&1; } | tee "$tmp/$name.txt"
    local rc=${PIPESTATUS[0]}
    (( rc == 0 )) || { status=1; echo "(exit status $rc)" >>"$tmp/$name.txt"; }
}

part daemon env PCSC_TESTBED_VPCD_DEVICES=$devices scripts/pcsc-testbed.sh run -- \
    "$python" scripts/bench/daemon_load.py --bin $bin --clients "$clients" --requests "$requests" \
    --rounds "$rounds" --udp-keys "$udp_keys" --pcsc-keys "$pcsc_keys"
part cli scripts/pcsc-testbed.sh run -- "$python" scripts/bench/cli_load.py --bin $bin --count "$cli" --transport pcsc
part ssh "$python" scripts/bench/ssh_load.py --bin $bin --provider "$provider" --count "$ssh"
part soak $bin/securitykey-bench soak --ceremonies "$soak"

[[ ${LOAD_WRITE:-1} == 1 ]] || exit $status
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
load=$(cut -d' ' -f1-3 /proc/loadavg)
heading="## Load and soak"
{
    echo "$heading"
    echo
    echo "\`make bench-load\` (\`scripts/bench/load-report.sh\`) on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit,"
    echo "release builds; $(nproc) cores online, load average $load when it ended (the machine was shared:"
    echo "wall times and rates are those of a loaded machine; counts, RSS and fds are not affected)."
    echo "Each block starts with the exact command. What the checks are: the docstrings of"
    echo "\`scripts/bench/daemon_load.py\`, \`cli_load.py\`, \`ssh_load.py\` and \`Sources/Benchmarks/LoadSoak.swift\`;"
    echo "what the figures mean: \"Load and soak (issue 32)\" under \"Reading the numbers\"."
    for name in daemon cli ssh soak; do
        echo
        echo '```'
        cat "$tmp/$name.txt"
        echo '```'
    done
    echo
} >"$tmp/section.md"
scripts/bench/put-section.sh "$heading" "$tmp/section.md"
echo "load-report: wrote the load and soak section of Docs/Performance.md" >&2
exit $status
