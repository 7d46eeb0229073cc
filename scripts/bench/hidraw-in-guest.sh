#!/usr/bin/env bash
# hidraw-in-guest.sh — latency of our host and libfido2 over a real kernel hidraw node, in the
# QEMU guest of scripts/hidvm/run-in-vm.sh (the host kernel may have no uhid/hidraw).
#
#   scripts/bench/hidraw-in-guest.sh [N]          (N operations per kind, default 20)
#
# In the guest: `securitykey virtual serve --uhid --json` creates a USB FIDO key through
# /dev/uhid; once its /dev/hidrawN appears, each host driver runs N getinfo, N mc and N ga on it:
#   libfido2  $FIDO2_DRIVER --device /dev/hidrawN      (default .build/bench/fido2-udp-driver)
#   ours      $SECURITYKEY_BENCH_BIN drive --device hid:/dev/hidrawN
#             (default .build/release/securitykey-bench)
# and the median latency per operation is printed. The guest's CPU is usually emulated (TCG):
# the numbers compare the hosts with each other, they are not absolute.
# Build first: make bench-drivers; swift build -c release --product securitykey-bench
# --product securitykey.
set -euo pipefail
cd "$(dirname "$0")/../.."

fail() { echo "hidraw-in-guest: $*" >&2; exit 1; }

if [[ ${1:-} != --in-guest ]]; then
    n=${1:-20}
    [[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 100000 ]] || fail "N must be a number from 1 to 100000"
    for b in "${SECURITYKEY_BIN:-.build/release/securitykey}" \
        "${SECURITYKEY_BENCH_BIN:-.build/release/securitykey-bench}" "${FIDO2_DRIVER:-.build/bench/fido2-udp-driver}"; do
        [[ -x $b ]] || fail "no $b (make bench-drivers; swift build -c release --product securitykey-bench --product securitykey)"
    done
    exec scripts/hidvm/run-in-vm.sh scripts/bench/hidraw-in-guest.sh --in-guest "$n"
fi

n=$2
key_bin=${SECURITYKEY_BIN:-.build/release/securitykey}
ours_bin=${SECURITYKEY_BENCH_BIN:-.build/release/securitykey-bench}
fido2_bin=${FIDO2_DRIVER:-.build/bench/fido2-udp-driver}
[[ -e /dev/uhid ]] || fail "no /dev/uhid in this guest"

tmp=$(mktemp -d)
server_pid=
cleanup() { [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

"$key_bin" virtual serve --uhid --presence auto --json >"$tmp/key.out" 2>"$tmp/key.err" &
server_pid=$!
for _ in $(seq 600); do
    grep -q '"uri"' "$tmp/key.out" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || fail "the virtual key exited: $(cat "$tmp/key.err")"
    sleep 0.1
done
uri=$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["uri"])' "$tmp/key.out") ||
    fail "the virtual key announced no hidraw node in 60 s: $(cat "$tmp/key.err")"
[[ $uri == hid:/dev/hidraw* ]] || fail "unexpected key URI $uri"
echo "hidraw-in-guest: kernel $(uname -r), virtual key at $uri, $n operations per kind"

ops=$(printf 'getinfo %s\nmc %s\nga %s\nquit\n' "$n" "$n" "$n")
timeout 1200 "$fido2_bin" --device "${uri#hid:}" <<<"$ops" >"$tmp/libfido2.out" 2>"$tmp/libfido2.err" ||
    fail "libfido2 driver failed: $(cat "$tmp/libfido2.err")"
timeout 1200 "$ours_bin" drive --device "$uri" <<<"$ops" >"$tmp/ours.out" 2>"$tmp/ours.err" ||
    fail "our driver failed: $(cat "$tmp/ours.err")"

python3 - "$tmp/ours.out" "$tmp/libfido2.out" "$n" <<'EOF'
import json, statistics, sys
n = int(sys.argv[3])
results = {}
for host, path in (("ours", sys.argv[1]), ("libfido2", sys.argv[2])):
    lines = [json.loads(l) for l in open(path) if l.strip()]
    if not lines or lines[0].get("ready") is not True:
        sys.exit(f"hidraw-in-guest: {host} driver did not get ready: {lines[:1]}")
    for line in lines[1:]:
        if "error" in line:
            sys.exit(f"hidraw-in-guest: {host} {line.get('op')} failed: {line['error']}")
        if len(line.get("latencies_ns", [])) != n:
            sys.exit(f"hidraw-in-guest: {host} {line.get('op')} answered {len(line.get('latencies_ns', []))} latencies, not {n}")
        results[(host, line["op"])] = line
print("Emulated CPU (QEMU): these numbers are only relative (ours against libfido2), not absolute.")
print(f"{'op':8} {'host':9} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'cpu ms/op':>10} {'ours/libfido2':>14}")
for op in ("getinfo", "mc", "ga"):
    base = results.get(("libfido2", op))
    for host in ("libfido2", "ours"):
        r = results.get((host, op))
        if r is None:
            sys.exit(f"hidraw-in-guest: {host} gave no {op} result")
        lat = r["latencies_ns"]
        med = statistics.median(lat)
        ratio = f"{med / statistics.median(base['latencies_ns']):.2f}x" if host == "ours" else ""
        print(f"{op:8} {host:9} {med / 1e6:10.3f} {min(lat) / 1e6:8.3f} {max(lat) / 1e6:8.3f} "
              f"{r['cpu_ns'] / n / 1e6:10.3f} {ratio:>14}")
EOF
