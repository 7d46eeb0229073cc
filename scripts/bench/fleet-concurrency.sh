#!/usr/bin/env bash
# `securitykey fleet` wall time on the latency simulator: K keys served by one
# `virtual serve --count K --latency MS` process, the whole CLI run (process start, listing,
# every key's getInfo, PIN status and silent assertion, JSON out) timed for 1 key and for K keys,
# with the default concurrency and with each --concurrency given. Medians of RUNS runs each,
# the variants interleaved.
#   scripts/bench/fleet-concurrency.sh [BINARY] [K=64] [MS=20] [RUNS=7] [CAPS="16"]
set -euo pipefail
bin="${1:-.build/debug/securitykey}"
keys="${2:-64}"
latency="${3:-20}"
runs="${4:-7}"
caps="${5:-16}"
work="$(mktemp -d)"
"$bin" virtual serve --udp 127.0.0.1:0 --count "$keys" --latency "$latency" --json >"$work/keys" 2>"$work/serve.err" &
serve=$!
trap 'kill "$serve" 2>/dev/null; wait "$serve" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 300); do
    [ "$(grep -c '"uri"' "$work/keys" || true)" -ge "$keys" ] && break
    sleep 0.1
done
mapfile -t uris < <(grep -o '"uri" *: *"udp:[^"]*"' "$work/keys" | sed 's/.*"udp:\([^"]*\)"/\1/')
[ "${#uris[@]}" -ge "$keys" ] || { echo "only ${#uris[@]} keys came up" >&2; exit 1; }
# The wall time of one `fleet --json ARGS...` run, in ms.
once() {
    local start end
    start=$(date +%s%N)
    "$bin" fleet --json "$@" >/dev/null
    end=$(date +%s%N)
    echo $(((end - start) / 1000000))
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
many=$(printf -- '--udp %s ' "${uris[@]:0:$keys}")
# The variants alternate within each round, so a change in the machine's load hits them alike.
declare -A times
for _ in $(seq "$runs"); do
    times[one]+=" $(once --udp "${uris[0]}")"
    times[all]+=" $(once $many)"
    for cap in $caps; do times[$cap]+=" $(once --concurrency "$cap" $many)"; done
done
one=$(median ${times[one]})
ratio() { awk -v a="$1" -v b="$one" 'BEGIN{printf "%.2f", a/b}'; }
echo "fleet, $keys keys at ${latency} ms latency, median of $runs CLI runs each, interleaved ($bin)"
echo "K=1:                            $one ms"
all=$(median ${times[all]})
echo "K=$keys, default:               $all ms  ($(ratio "$all") x K=1)"
for cap in $caps; do
    capped=$(median ${times[$cap]})
    echo "K=$keys, --concurrency $cap:    $capped ms  ($(ratio "$capped") x K=1)"
done
