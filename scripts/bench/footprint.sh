#!/usr/bin/env bash
# footprint.sh: peak resident memory of the shipped programs (issue 30), RUNS times each, printed
# as min / median / max in MiB with the command measured:
#   - `securitykey info --device udp:...` against a virtual key (GNU time's %M, the CLI's own peak);
#   - `securitykeyd` on a private session bus owning 8 virtual keys over UDP, idle: VmHWM and
#     VmRSS from /proc after it has listed the keys and sat for IDLE seconds (default 3);
#   - OpenSSH's provider library loaded as ssh-sk-helper does (bench/openssh/sk-load --resident,
#     no key present): the peak memory it adds to its host.
#
#   scripts/bench/footprint.sh [RUNS]        (default 5; release builds in .build/release)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
idle=${IDLE:-3}
cli=.build/release/securitykey
daemon=.build/release/securitykeyd
provider=.build/release/libsecuritykey-sk.so
skload=.build/bench/sk-load
for f in "$cli" "$daemon" "$provider" "$skload" /usr/bin/time; do
    [[ -x $f || -f $f ]] || { echo "footprint: $f is missing (make release .build/bench/sk-load)" >&2; exit 1; }
done
tmp=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# min / median / max of the KiB figures on stdin, in MiB.
spread() {
    sort -n | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "no figure"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "min %.1f  median %.1f  max %.1f MiB (n=%d)\n", v[1] / 1024, m / 1024, v[NR] / 1024, NR }'
}

free_port() { python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Serves a virtual key on a free UDP port; prints the port.
serve_key() {
    local port
    port=$(free_port)
    "$cli" virtual serve --udp "127.0.0.1:$port" --presence auto >/dev/null 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
        "$cli" info --device "udp:127.0.0.1:$port" >/dev/null 2>&1 && { echo "$port"; return; }
        sleep 0.1
    done
    echo "footprint: the virtual key on $port did not answer" >&2
    exit 1
}

port=$(serve_key)
echo "securitykey info --device udp:127.0.0.1:$port (GNU time %M, $runs runs):"
for _ in $(seq "$runs"); do
    /usr/bin/time -f %M -o "$tmp/time" "$cli" info --device "udp:127.0.0.1:$port" >/dev/null
    tail -n 1 "$tmp/time"
done | spread | sed 's/^/  peak /'

ports=("$port")
for _ in $(seq 7); do ports+=("$(serve_key)"); done
udp=()
for p in "${ports[@]}"; do udp+=(--udp "127.0.0.1:$p"); done
echo "securitykeyd --address BUS ${udp[*]} (8 virtual keys), idle ${idle} s after start, $runs runs:"
: >"$tmp/hwm"
: >"$tmp/rss"
for _ in $(seq "$runs"); do
    dbus-daemon --session --fork --print-address=3 --print-pid=4 3>"$tmp/address" 4>"$tmp/bus-pid"
    bus_pid=$(cat "$tmp/bus-pid")
    "$daemon" --address "$(head -n 1 "$tmp/address")" "${udp[@]}" >/dev/null 2>"$tmp/daemon.log" &
    daemon_pid=$!
    sleep "$idle"
    if ! kill -0 "$daemon_pid" 2>/dev/null; then
        kill "$bus_pid" 2>/dev/null || true
        echo "footprint: securitykeyd ended: $(tail -n 3 "$tmp/daemon.log")" >&2
        exit 1
    fi
    awk '/^VmHWM:/ { print $2 >> "'"$tmp/hwm"'" } /^VmRSS:/ { print $2 >> "'"$tmp/rss"'" }' "/proc/$daemon_pid/status"
    kill -TERM "$daemon_pid"
    wait "$daemon_pid" 2>/dev/null || true
    kill "$bus_pid" 2>/dev/null || true
done
spread <"$tmp/hwm" | sed 's/^/  peak (VmHWM) /'
spread <"$tmp/rss" | sed 's/^/  resident (VmRSS) /'

echo "bench/openssh/sk-load $provider --resident (no key present), $runs runs:"
for _ in $(seq "$runs"); do
    env -i PATH=/usr/bin:/bin "$skload" "$provider" --resident | sed -n 's/.*rss_added_kib=\([0-9]*\).*/\1/p'
done | spread | sed 's/^/  added to the host /'
