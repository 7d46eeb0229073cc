#!/usr/bin/env bash
# The functions of libsecuritykey.so.0 that the common commands run, in the order they first
# run: packaging/library/hot-symbols.txt, which `make release` hands lld as its symbol ordering
# file (issue 30's memory targets). Laid out together at the start of .text, they fill a few
# hundred contiguous pages instead of being spread over all 4,000: the kernel maps file pages
# around each fault (64 kB), so code touched at start-up costs its neighbours' pages too.
#
#   scripts/hot-symbols.sh        (after make release; takes about a minute under callgrind)
#
# Each command runs under valgrind's callgrind with the unstripped library (for its symbol
# names), against a virtual key served over UDP by the staged CLI; a name listed that a later
# build no longer has is skipped by the linker, so a stale list costs memory, never correctness.
set -euo pipefail
cd "$(dirname "$0")/.."
stage=.build/install
build=$(swift build -c release --show-bin-path)
[[ -x $stage/bin/securitykey && -f $build/libsecuritykey.so.0.unstripped ]] ||
    { echo "hot-symbols: no staged release build (make release)" >&2; exit 1; }
work=$(mktemp -d)
serve=
trap '[[ -n $serve ]] && kill "$serve" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/lib"
# Without the runtime objects' line tables, which valgrind 3.19 cannot read; the symbols stay.
objcopy --strip-debug "$build/libsecuritykey.so.0.unstripped" "$work/lib/libsecuritykey.so.0"
cli="$stage/bin/securitykey"
port=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$cli" virtual serve --udp "127.0.0.1:$port" --presence auto --state "$work/key.state" >/dev/null 2>&1 &
serve=$!
device="udp:127.0.0.1:$port?local=0"
for _ in $(seq 100); do "$cli" info --device "$device" >/dev/null 2>&1 && break; sleep 0.1; done
n=0
profile() {
    n=$((n + 1))
    LD_LIBRARY_PATH="$work/lib" valgrind --tool=callgrind --callgrind-out-file="$work/$n.out" \
        --dump-instr=no --compress-strings=no --compress-pos=no --demangle=no "$@" >"$work/$n.log" 2>"$work/$n.err" || true
}
profile "$cli" --version
profile "$cli" list --udp "127.0.0.1:$port"
profile "$cli" info --device "$device"
profile "$cli" register --device "$device" --rp example.org --user alice --json
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$work/$n.log")
profile "$cli" authenticate --device "$device" --rp example.org --credential "$id"
profile "$cli" info --device "$device" --json
# The daemon: start-up on a private bus with the key, one ListDevices, then SIGTERM.
bus=$(dbus-daemon --session --print-address=1 --fork --print-pid=2 2>"$work/bus.pid" | head -n 1)
n=$((n + 1))
LD_LIBRARY_PATH="$work/lib" valgrind --tool=callgrind --callgrind-out-file="$work/$n.out" \
    --dump-instr=no --compress-strings=no --compress-pos=no --demangle=no \
    "$stage/bin/securitykeyd" --address "$bus" --udp-only --udp "127.0.0.1:$port" >"$work/$n.log" 2>"$work/$n.err" &
daemon=$!
for _ in $(seq 300); do
    busctl --address="$bus" call org.securitykey.Daemon1 /org/securitykey/Daemon1 org.securitykey.Daemon1 \
        ListDevices >/dev/null 2>&1 && break
    sleep 0.1
done
kill -TERM "$daemon"; wait "$daemon" || true
kill "$(cat "$work/bus.pid")" 2>/dev/null || true
# OpenSSH's provider as ssh-sk-helper loads it (bench/openssh/sk-load, make builds it), listing
# the key's resident credentials; the PAM module as pamtester runs it, when root may write
# /etc/pam.d (a service file of its own, removed after).
if [[ -x .build/bench/sk-load ]]; then
    SECURITYKEY_UDP="127.0.0.1:$port" profile .build/bench/sk-load "$stage/lib/securitykey/libsecuritykey-sk.so" --resident
fi
if [[ $(id -u) == 0 ]] && command -v pamtester >/dev/null; then
    service=securitykey-hot-symbols-$$
    trap '[[ -n $serve ]] && kill "$serve" 2>/dev/null; rm -rf "$work" "/etc/pam.d/$service"' EXIT
    "$cli" pam enroll --device "$device" --user root --origin pam://hot-symbols >"$work/u2f_keys" 2>/dev/null
    echo "auth required $PWD/$stage/lib/securitykey/pam_securitykey.so authfile=$work/u2f_keys origin=pam://hot-symbols udp=127.0.0.1:$port timeout=30" \
        >"/etc/pam.d/$service"
    profile pamtester "$service" root authenticate
fi
# The callgrind files name each function once per object block: keep the library's, first seen first.
python3 - "$work" "$n" > packaging/library/hot-symbols.txt <<'PY'
import sys
work, count = sys.argv[1], int(sys.argv[2])
seen, order = set(), []
for i in range(1, count + 1):
    ob = cob = None  # the current function's object; the next called function's (cob=, one cfn=)
    for line in open(f"{work}/{i}.out", errors="replace"):
        key, _, value = line.partition("=")
        value = value.strip()
        if key == "ob":
            ob = value
        elif key == "cob":
            cob = value
        elif key in ("fn", "cfn"):
            obj = ob if key == "fn" else (cob or ob)
            if key == "cfn":
                cob = None
            if obj and "libsecuritykey.so" in obj and value and value not in seen:
                seen.add(value); order.append(value)
print("\n".join(order))
PY
echo "hot-symbols: $(wc -l < packaging/library/hot-symbols.txt) functions in packaging/library/hot-symbols.txt"
