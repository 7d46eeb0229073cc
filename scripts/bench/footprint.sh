#!/usr/bin/env bash
# footprint.sh: peak resident memory of the shipped programs (issue 30), RUNS times each, printed
# as min / median / max in MiB with the command measured:
#   - `securitykey info --device udp:...` against a virtual key (GNU time's %M, the CLI's own peak);
#   - `securitykeyd` on a private session bus owning 8 virtual keys over UDP, idle: VmHWM and
#     VmRSS from /proc after it has listed the keys and sat for IDLE seconds (default 3);
#   - OpenSSH's provider library loaded as ssh-sk-helper does (bench/openssh/sk-load --resident,
#     no key present): the peak memory it adds to its host.
#   - the PAM module: loaded, called and closed three times as Linux-PAM does (bench/pam/pam-load:
#     load-to-first-call time and the memory it adds), and pamtester authenticating root with it
#     against a virtual key (a service file /etc/pam.d/securitykey-footprint-PID, removed after;
#     root only): pamtester's peak minus its peak with pam_permit.so in its place.
#
#   scripts/bench/footprint.sh [RUNS]        (default 5; what make release staged in .build/install)
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
idle=${IDLE:-3}
cli=.build/install/bin/securitykey
daemon=.build/install/bin/securitykeyd
provider=.build/install/lib/securitykey/libsecuritykey-sk.so
pam_module=$PWD/.build/install/lib/securitykey/pam_securitykey.so
skload=.build/bench/sk-load
pamload=.build/bench/pam-load
for f in "$cli" "$daemon" "$provider" "$pam_module" "$skload" "$pamload" /usr/bin/time; do
    [[ -x $f || -f $f ]] || { echo "footprint: $f is missing (make release .build/bench/sk-load .build/bench/pam-load)" >&2; exit 1; }
done
tmp=$(mktemp -d)
pids=()
service=securitykey-footprint-$$
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
    rm -f "/etc/pam.d/$service"
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

echo "bench/pam/pam-load $pam_module 3 (load, pam_sm_setcred, dlclose, three times), $runs runs:"
for _ in $(seq "$runs"); do
    env -i PATH=/usr/bin:/bin "$pamload" "$pam_module" 3 >>"$tmp/pam-load"
done
sed -n 's/.*first_call_ms=\([0-9.]*\).*/\1/p' "$tmp/pam-load" | sort -n |
    awk '{ v[NR] = $1 } END { printf "  load to first call: min %.1f  median %.1f  max %.1f ms\n", v[1], v[int((NR + 1) / 2)], v[NR] }'
sed -n 's/.*rss_added_kib=\([0-9]*\).*/\1/p' "$tmp/pam-load" | spread | sed 's/^/  added to the host /'

if [[ $(id -u) != 0 ]]; then
    echo "pamtester with the module: skipped (writing /etc/pam.d needs root)"
    exit 0
fi
echo "pamtester -v $service root authenticate against a virtual key, $runs runs (peak minus pam_permit.so's):"
"$cli" pam enroll --device "udp:127.0.0.1:$port" --user root --origin pam://footprint >"$tmp/u2f_keys" 2>"$tmp/enroll.log" ||
    { echo "footprint: securitykey pam enroll failed: $(tail -n 3 "$tmp/enroll.log")" >&2; exit 1; }
: >"$tmp/added"
for _ in $(seq "$runs"); do
    echo "auth required pam_permit.so" >"/etc/pam.d/$service"
    /usr/bin/time -f %M -o "$tmp/time" pamtester "$service" root authenticate >/dev/null 2>&1
    permit=$(tail -n 1 "$tmp/time")
    echo "auth required $pam_module authfile=$tmp/u2f_keys origin=pam://footprint udp=127.0.0.1:$port timeout=30" \
        >"/etc/pam.d/$service"
    /usr/bin/time -f %M -o "$tmp/time" pamtester "$service" root authenticate >"$tmp/pamtester.log" 2>&1 ||
        { echo "footprint: pamtester did not authenticate: $(tail -n 3 "$tmp/pamtester.log")" >&2; exit 1; }
    echo $(( $(tail -n 1 "$tmp/time") - permit )) >>"$tmp/added"
done
spread <"$tmp/added" | sed 's/^/  added to pamtester /'
