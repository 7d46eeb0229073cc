#!/usr/bin/env bash
# What `make test` runs once the debug build is done: the suite (scripts/run-tests.sh: the QEMU
# guest, then the host's groups) and the packaging checks (scripts/test-packaging.sh) unless
# SECURITYKEY_SKIP_PACKAGING=1, whether the suite passed or not. The status is the suite's
# failure, else the packaging's.
#
# The suite leaves more than half of a 2-core machine idle: most of its tests wait on programs,
# servers and deadlines (seen here: 42 % busy on average over its 12 minutes). The packaging's
# builds (the release build, the consumer package, the DocC archive; about 10 minutes of both
# cores alone) run beside it in a cgroup with the fewest CPU shares the kernel allows (cgroup v1
# cpu.shares 2 against the suite's 1024; v2 cpu.weight 1 against 100), so that they take only
# the CPU the suite does not: the scheduler preempts them as soon as a test's process or thread
# is runnable. Niceness would not do: SwiftPM starts its compiler jobs at nice 0 whatever its
# own, and the test bed runs the suite in a session, so a scheduler autogroup, of its own,
# against which niceness counts for nothing (a release build at nice 19 beside the suite once
# made CLITests' PC/SC beds take over 30 s to start). The packaging checks themselves wait for the
# suite to end, and the cgroup then gets the CPU shares of any other. Where no cgroup can be made
# (no cpu controller, not root), the packaging runs after the suite, as a whole.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
if [ "${SECURITYKEY_SKIP_PACKAGING:-0}" = 1 ]; then
    scripts/run-tests.sh || status=$?
    echo "test: packaging checks skipped (SECURITYKEY_SKIP_PACKAGING=1)"
    exit "$status"
fi

# A cgroup for the background builds: its directory, and the file and values of its CPU share.
group="" share_file="" low="" normal=""
v1=/sys/fs/cgroup/cpu
if [ -w "$v1" ] && [ -f "$v1/cpu.shares" ]; then
    group="$v1/securitykey-packaging.$$" share_file=cpu.shares low=2 normal=1024
elif [ -w /sys/fs/cgroup ] && grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    # cgroup v2 with the cpu controller already given to the root's children (systemd does);
    # the machine's cgroup setup is not changed here.
    group="/sys/fs/cgroup/securitykey-packaging.$$" share_file=cpu.weight low=1 normal=100
fi
if [ -n "$group" ] && ! { mkdir "$group" 2>/dev/null && echo "$low" >"$group/$share_file" 2>/dev/null; }; then
    rmdir "$group" 2>/dev/null || true
    group=""
fi

if [ -z "$group" ]; then
    echo "test: no cgroup with a CPU share can be made here; the packaging checks run after the suite"
    scripts/run-tests.sh || status=$?
    scripts/test-packaging.sh || { rc=$?; [ "$status" != 0 ] || status=$rc; }
    exit "$status"
fi

work="$(mktemp -d /tmp/securitykey-test.XXXXXX)"
gate="$work/suite-ended"
log="$work/packaging.log"
packaging=""
cleanup() {
    # An interrupted run: the packaging's process group, then the cgroup once it is empty.
    if [ -n "$packaging" ] && kill -0 "$packaging" 2>/dev/null; then
        kill -TERM -- "-$packaging" 2>/dev/null || true
        wait "$packaging" 2>/dev/null || true
    fi
    for _ in $(seq 50); do rmdir "$group" 2>/dev/null && break; sleep 0.1; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# In its own process group (set -m), which it enters the cgroup before it starts, and every
# process it starts with it.
set -m
(echo "$BASHPID" >"$group/cgroup.procs" && exec env SECURITYKEY_PACKAGING_GATE="$gate" scripts/test-packaging.sh) \
    </dev/null >"$log" 2>&1 &
packaging=$!
set +m
echo "test: the packaging's builds run beside the suite, in $group ($share_file $low); their output follows the suite's"

scripts/run-tests.sh || status=$?

echo "$normal" >"$group/$share_file"
touch "$gate"
echo "== test: the packaging checks (scripts/test-packaging.sh), started beside the suite"
tail -c +1 -f --pid="$packaging" "$log" &
follower=$!
packaging_status=0
wait "$packaging" || packaging_status=$?
packaging=""
wait "$follower" 2>/dev/null || true
[ "$status" != 0 ] || status=$packaging_status
exit "$status"
