#!/usr/bin/env bash
# smoke.sh — drive the libfido2 benchmark host against a virtual key served over CTAPHID/UDP.
#
#   bench/libfido2/smoke.sh
#
# Starts `securitykey virtual serve --udp 127.0.0.1:PORT --presence auto`, runs
# .build/bench/fido2-udp-driver against it and asserts: {"ready":true}; 3 successful getinfo,
# mc and ga (3 latencies each, a CPU time); an error line for an unknown operation and for a bad
# COUNT; exit 0 on quit; and {"ready":false,...} with exit 1, within its --timeout, when no key
# answers, when a device never answers, and when a device answers only with junk datagrams
# (wrong sizes, random 64-byte reports).
# Knobs: SECURITYKEY_BIN (default .build/release/securitykey, else .build/debug/securitykey),
# FIDO2_DRIVER (default .build/bench/fido2-udp-driver; `make bench-drivers` builds it).
set -euo pipefail
cd "$(dirname "$0")/../.."

fail() { echo "smoke: FAIL: $*" >&2; exit 1; }

bin=${SECURITYKEY_BIN:-}
if [[ -z $bin ]]; then
    for b in .build/release/securitykey .build/debug/securitykey; do [[ -x $b ]] && { bin=$b; break; }; done
fi
[[ -n $bin && -x $bin ]] || fail "no securitykey binary (swift build --product securitykey, or set SECURITYKEY_BIN)"
driver=${FIDO2_DRIVER:-.build/bench/fido2-udp-driver}
[[ -x $driver ]] || fail "no $driver (make bench-drivers)"

tmp=$(mktemp -d)
server_pid= fake_pid=
cleanup() {
    [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    [[ -n $fake_pid ]] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

# A free UDP port (the kernel's choice, released just before the key binds it).
port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# Nothing listens yet: the driver must say so, not hang or claim readiness.
set +e
timeout 30 "$driver" --device "udp:127.0.0.1:$port" </dev/null >"$tmp/none.out" 2>"$tmp/none.err"
rc=$?
set -e
[[ $rc == 1 ]] || fail "driver without a key exited $rc, expected 1"
grep -q '"ready":false' "$tmp/none.out" || fail "driver without a key printed: $(cat "$tmp/none.out")"
echo "smoke: no key -> $(cat "$tmp/none.out")"

# Hostile devices: one that never answers, one that answers every report with junk. The driver
# must give up within its --timeout (1 s here) with a clear {"ready":false}, never hang or crash.
for mode in silent junk; do
    python3 - "$mode" "$tmp/fake.port" <<'EOF' &
import os, socket, sys
mode, port_file = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
with open(port_file + ".part", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(port_file + ".part", port_file)
s.settimeout(30)
try:
    while True:
        data, peer = s.recvfrom(4096)
        if mode == "junk":
            for size in (200, 10, 65, 0, 64, 64):
                s.sendto(os.urandom(size), peer)
except socket.timeout:
    pass
EOF
    fake_pid=$!
    for _ in $(seq 100); do [[ -s $tmp/fake.port ]] && break; sleep 0.05; done
    set +e
    start=$SECONDS
    timeout 30 "$driver" --timeout 1000 --device "udp:127.0.0.1:$(cat "$tmp/fake.port")" </dev/null \
        >"$tmp/$mode.out" 2>"$tmp/$mode.err"
    rc=$?
    set -e
    kill "$fake_pid" 2>/dev/null; wait "$fake_pid" 2>/dev/null || true
    fake_pid=
    rm -f "$tmp/fake.port"
    [[ $rc == 1 ]] || fail "driver against a $mode device exited $rc, expected 1: $(cat "$tmp/$mode.err")"
    grep -q '"ready":false' "$tmp/$mode.out" || fail "driver against a $mode device printed: $(cat "$tmp/$mode.out")"
    ((SECONDS - start <= 10)) || fail "driver against a $mode device took $((SECONDS - start)) s with --timeout 1000"
    echo "smoke: $mode device -> $(cat "$tmp/$mode.out") after $((SECONDS - start)) s;" \
        "$(grep -c dropped "$tmp/$mode.err" || true) junk datagrams dropped"
done

"$bin" virtual serve --udp "127.0.0.1:$port" --presence auto --json >"$tmp/serve.out" 2>"$tmp/serve.err" &
server_pid=$!
for _ in $(seq 100); do
    grep -q '"uri"' "$tmp/serve.out" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || fail "securitykey serve exited: $(cat "$tmp/serve.err")"
    sleep 0.1
done
grep -q '"uri"' "$tmp/serve.out" || fail "securitykey serve printed nothing in 10 s"

printf 'getinfo 3\nmc 3\nga 3\nfrobnicate 3\nmc 0\nmc -2\nquit\n' |
    timeout 120 "$driver" --device "udp:127.0.0.1:$port" >"$tmp/driver.out" 2>"$tmp/driver.err" ||
    fail "driver exited $?: $(cat "$tmp/driver.err")"
cat "$tmp/driver.out" | cut -c1-160

python3 - "$tmp/driver.out" <<'EOF' || fail "driver output did not check out"
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
assert lines[0] == {"ready": True}, lines[0]
for line, op in zip(lines[1:4], ["getinfo", "mc", "ga"]):
    assert line.get("op") == op, line
    assert "error" not in line, line
    lat = line["latencies_ns"]
    assert len(lat) == 3 and all(isinstance(x, int) and x > 0 for x in lat), line
    assert isinstance(line["cpu_ns"], int) and line["cpu_ns"] > 0, line
assert lines[4]["op"] == "frobnicate" and "unknown operation" in lines[4]["error"], lines[4]
assert lines[5]["op"] == "mc" and "COUNT" in lines[5]["error"], lines[5]
assert lines[6]["op"] == "mc" and "COUNT" in lines[6]["error"], lines[6]
assert len(lines) == 7, lines[7:]
EOF
echo "smoke: ok (ready; 3 getinfo, 3 mc, 3 ga verified; bad input rejected; absent, silent and junk devices detected)"
