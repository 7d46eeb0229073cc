#!/usr/bin/env bash
# `securitykey fleet` wall time on the latency simulator: K keys served by one
# `virtual serve --count K --latency MS` process, the whole CLI run (process start, listing,
# every key's getInfo, PIN status and silent assertion, JSON out) timed for 1 key and for K keys,
# with the default concurrency and with each --concurrency given. Medians of RUNS runs.
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
# median of a run's wall time in ms: fleet ARGS...
median() {
    local times=()
    for _ in $(seq "$runs"); do
        local start end
        start=$(date +%s%N)
        "$bin" fleet --json "$@" >/dev/null
        end=$(date +%s%N)
        times+=($(((end - start) / 1000000)))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
one=$(median --udp "${uris[0]}")
all=$(median $(printf -- '--udp %s ' "${uris[@]:0:$keys}"))
echo "fleet, $keys keys at ${latency} ms latency, median of $runs CLI runs ($bin)"
echo "K=1:                        $one ms"
echo "K=$keys, default (all at once): $all ms  ($(awk -v a="$all" -v b="$one" 'BEGIN{printf "%.2f", a/b}') x K=1)"
for cap in $caps; do
    capped=$(median --concurrency "$cap" $(printf -- '--udp %s ' "${uris[@]:0:$keys}"))
    echo "K=$keys, --concurrency $cap:      $capped ms  ($(awk -v a="$capped" -v b="$one" 'BEGIN{printf "%.2f", a/b}') x K=1)"
done
