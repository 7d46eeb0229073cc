#!/usr/bin/env bash
# A private PC/SC test bed: pcscd with only the vsmartcard vpcd reader driver configured.
#
#   scripts/pcsc-testbed.sh run -- CMD...   start the bed, run CMD in its environment, stop the
#                                           bed, exit with CMD's status
#   scripts/pcsc-testbed.sh start [DIR]     start a bed in DIR (default .run/pcsc-testbed) and
#                                           print the environment to `eval`
#   scripts/pcsc-testbed.sh stop [DIR]      stop the bed started in DIR
#   scripts/pcsc-testbed.sh env [DIR]       print the environment of a running bed
#   scripts/pcsc-testbed.sh kill [DIR]      SIGKILL the bed's pcscd (a crash), keeping its setup
#   scripts/pcsc-testbed.sh restart [DIR]   SIGKILL the bed's pcscd if it runs and start it again
#                                           on the same socket, ports and readers
#
# pcscd hard-codes /run/pcscd for its socket and pid file, so the bed runs pcscd in a private
# mount namespace (unshare -m) with the bed's own directory bind-mounted over /run/pcscd: a
# pcscd the machine already runs is neither seen nor disturbed, and clients reach the bed's
# socket through PCSCLITE_CSOCK_NAME, which libpcsclite honours.
#
# vpcd exposes two readers per configured device, "Virtual PCD 00 00" listening on PORT and
# "Virtual PCD 00 01" on PORT+1; a virtual card connects to one of them. The bed picks the
# first free port pair from 35963 upwards (or PCSC_TESTBED_PORT if set) so that two beds can
# run side by side. PCSC_TESTBED_VPCD_DEVICES=N (1 to 8, default 1) configures N vpcd devices,
# 2N readers on ports PORT to PORT+2N-1 (pcsc-lite serves at most 16 readers).
#
# Environment handed to clients:
#   PCSCLITE_CSOCK_NAME        the bed's pcscd socket
#   SECURITYKEY_PCSC_TESTBED   the bed's directory (tests check it to know a bed is up)
#   SECURITYKEY_VPCD_HOST      where vpcd listens (127.0.0.1)
#   SECURITYKEY_VPCD_PORT      vpcd port of the first reader; the second is PORT+1
#   SECURITYKEY_VPCD_READERS   the reader names, separated by '|'
#
# Everything the bed starts is stopped by PID. Needs root (or CAP_SYS_ADMIN) for unshare -m.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
driver="${VPCD_DRIVER:-/usr/lib/pcsc/drivers/serial/libifdvpcd.so}"
devices="${PCSC_TESTBED_VPCD_DEVICES:-1}"
[[ "$devices" =~ ^[1-8]$ ]] || { echo "pcsc-testbed: PCSC_TESTBED_VPCD_DEVICES must be 1 to 8" >&2; exit 1; }

die() { echo "pcsc-testbed: $*" >&2; exit 1; }

port_busy() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

ports_free() {
    local p
    for (( p = $1; p < $1 + 2 * devices; p++ )); do port_busy "$p" && return 1; done
    return 0
}

all_listening() {
    local p
    for (( p = $1; p < $1 + 2 * devices; p++ )); do port_busy "$p" || return 1; done
    return 0
}

pick_port() {
    if [[ -n "${PCSC_TESTBED_PORT:-}" ]]; then echo "$PCSC_TESTBED_PORT"; return; fi
    local p=35963
    while (( p < 36963 )); do
        if ports_free "$p"; then echo "$p"; return; fi
        p=$((p + 16))
    done
    die "no free port pair for vpcd between 35963 and 36963"
}

print_env() {
    local dir="$1"
    [[ -f "$dir/env" ]] || die "no test bed running in $dir"
    cat "$dir/env"
}

is_our_pcscd() {
    local pid="$1"
    [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "^pcscd -f .*-c $2/conf"
}

start_bed() {
    local dir="$1"
    command -v pcscd >/dev/null || die "pcscd is not installed (apt-get install pcscd)"
    [[ -f "$driver" ]] || die "vpcd driver $driver is missing (apt-get install vsmartcard-vpcd)"
    command -v unshare >/dev/null || die "unshare is missing (apt-get install util-linux)"
    # Said in one sentence up front, rather than as pcscd dying during start-up.
    unshare -m --propagation private true 2>/dev/null \
        || die "a private PC/SC bed needs root (or CAP_SYS_ADMIN) to give pcscd its own /run/pcscd in a mount namespace (unshare -m); run as root"
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    if [[ -f "$dir/pcscd.pid" ]] && is_our_pcscd "$(cat "$dir/pcscd.pid")" "$dir"; then
        die "a test bed already runs in $dir (stop it first)"
    fi
    rm -rf "$dir/conf" "$dir/lib" "$dir/run" "$dir/env"
    mkdir -p "$dir/conf" "$dir/lib" "$dir/run"
    local port; port="$(pick_port)"
    local d readers=()
    : > "$dir/conf/vpcd"
    for (( d = 0; d < devices; d++ )); do
        # pcscd does not number readers of one name apart, so each device gets its own name; and
        # vpcd keeps its sockets in static arrays indexed by slot, so each device loads its own
        # copy of the driver (pcscd shares one loaded driver between entries of the same path).
        local friendly="Virtual PCD" library="$driver"
        if (( d > 0 )); then
            friendly="Virtual PCD $d"
            library="$dir/lib/libifdvpcd-$d.so"
            cp "$driver" "$library"
        fi
        cat >> "$dir/conf/vpcd" <<EOF
FRIENDLYNAME "$friendly"
DEVICENAME   /dev/null:$((port + 2 * d))
LIBPATH      $library
CHANNELID    $((port + 2 * d))

EOF
        readers+=("$friendly 00 00" "$friendly 00 01")
    done
    # The mount point must exist; an empty /run/pcscd is what pcscd itself would create.
    local script='[ -d /run/pcscd ] || mkdir -p /run/pcscd
mount --bind "$1/run" /run/pcscd || exit 97
shift
exec "$@"'
    local level="${PCSC_TESTBED_LOG_LEVEL:---error}"
    setsid unshare -m --propagation private sh -c "$script" sh "$dir" \
        pcscd -f "$level" -c "$dir/conf" > "$dir/pcscd.log" 2>&1 < /dev/null &
    local pid=$!
    echo "$pid" > "$dir/pcscd.pid"
    # Ready when the socket exists and vpcd listens on both ports (30 s: on a loaded 2-core
    # machine pcscd has been seen to need more than 10).
    local i
    for i in $(seq 1 300); do
        if ! kill -0 "$pid" 2>/dev/null; then
            cat "$dir/pcscd.log" >&2
            die "pcscd exited during start-up (log above)"
        fi
        if [[ -S "$dir/run/pcscd.comm" ]] && all_listening "$port"; then
            local names; names="$(IFS='|'; echo "${readers[*]}")"
            cat > "$dir/env" <<EOF
export PCSCLITE_CSOCK_NAME='$dir/run/pcscd.comm'
export SECURITYKEY_PCSC_TESTBED='$dir'
export SECURITYKEY_VPCD_HOST='127.0.0.1'
export SECURITYKEY_VPCD_PORT='$port'
export SECURITYKEY_VPCD_DEVICES='$devices'
export SECURITYKEY_VPCD_READERS='$names'
EOF
            return 0
        fi
        sleep 0.1
    done
    stop_bed "$dir"
    die "pcscd did not become ready within 30 s (see $dir/pcscd.log)"
}

stop_bed() {
    local dir="$1"
    [[ -d "$dir" ]] || return 0
    dir="$(cd "$dir" && pwd)"
    local pid=""
    [[ -f "$dir/pcscd.pid" ]] && pid="$(cat "$dir/pcscd.pid")"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        if is_our_pcscd "$pid" "$dir" || [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" =~ ^(unshare|sh)$ ]]; then
            kill -TERM "$pid" 2>/dev/null || true
            local i
            for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$dir/pcscd.pid" "$dir/env"
}

kill_bed() {
    local dir="$1"
    [[ -f "$dir/pcscd.pid" ]] || die "no test bed in $dir"
    local pid; pid="$(cat "$dir/pcscd.pid")"
    if is_our_pcscd "$pid" "$dir"; then
        kill -KILL "$pid" 2>/dev/null || true
        local i
        for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
}

restart_bed() {
    local dir="$1"
    [[ -f "$dir/env" ]] || die "no test bed in $dir to restart"
    dir="$(cd "$dir" && pwd)"
    local port count
    port="$(sed -n "s/^export SECURITYKEY_VPCD_PORT='\(.*\)'$/\1/p" "$dir/env")"
    count="$(sed -n "s/^export SECURITYKEY_VPCD_DEVICES='\(.*\)'$/\1/p" "$dir/env")"
    devices="${count:-$devices}"
    kill_bed "$dir"
    rm -f "$dir/pcscd.pid"
    # The same ports, so that the cards connected to vpcd find it again.
    local i
    for i in $(seq 1 50); do ports_free "$port" && break; sleep 0.1; done
    PCSC_TESTBED_PORT="$port" start_bed "$dir"
}

cmd="${1:-}"; shift || true
case "$cmd" in
    start)
        dir="${1:-$repo/.run/pcsc-testbed}"
        start_bed "$dir"
        print_env "$dir"
        ;;
    stop)
        stop_bed "${1:-$repo/.run/pcsc-testbed}"
        ;;
    env)
        print_env "${1:-$repo/.run/pcsc-testbed}"
        ;;
    kill)
        kill_bed "${1:-$repo/.run/pcsc-testbed}"
        ;;
    restart)
        dir="${1:-$repo/.run/pcsc-testbed}"
        restart_bed "$dir"
        print_env "$dir"
        ;;
    run)
        [[ "${1:-}" == "--" ]] && shift
        (( $# > 0 )) || die "usage: $0 run -- CMD..."
        mkdir -p "$repo/.run"
        dir="$(mktemp -d "$repo/.run/pcsc-testbed.XXXXXX")"
        trap 'stop_bed "$dir"; rm -rf "$dir"' EXIT
        trap 'exit 130' INT TERM
        start_bed "$dir"
        # shellcheck disable=SC1091
        source "$dir/env"
        status=0
        "$@" || status=$?
        exit "$status"
        ;;
    *)
        sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
        exit 2
        ;;
esac
