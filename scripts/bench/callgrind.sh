#!/usr/bin/env bash
# callgrind.sh — host CPU per CTAP operation, in instructions, for our host and libfido2
# (and python-fido2 with --python), against one virtual key served over CTAPHID/UDP.
#
#   scripts/bench/callgrind.sh [--n1 N] [--n2 N] [--python] [--pcsc] [--out DIR]
#
# Each host driver runs under `valgrind --tool=callgrind` once per operation kind (getinfo, mc,
# ga) with N1 and then N2 operations fed on stdin; the total instruction count (Ir) of the whole
# process, all threads, is read from callgrind's output. The per-operation cost is
# (Ir(N2) - Ir(N1)) / (N2 - N1): start-up, the driver's own getInfo + makeCredential, and exit
# cancel. The libfido2 driver switches collection off while it verifies answers (the other hosts
# do not verify), so all hosts are counted for the same work: build, transact, parse.
#
# Hosts (the commands are fixed; binaries can be overridden for testing):
#   ours          $SECURITYKEY_BENCH_BIN drive --device udp:127.0.0.1:PORT?local=0
#                 (default .build/release/securitykey-bench)
#   libfido2      $FIDO2_DRIVER --device udp:127.0.0.1:PORT (default .build/bench/fido2-udp-driver)
#   python-fido2  $SECURITYKEY_PYTHON scripts/bench/fido2_driver.py --device udp:127.0.0.1:PORT
#                 (only with --python: slow under valgrind)
# The key: $SECURITYKEY_BIN virtual serve --udp (default .build/release/securitykey), not measured.
# With --pcsc, a second table: ours and python-fido2 (libfido2 has no PC/SC driver here) against a
# virtual card (virtual serve --pcsc) in a private PC/SC bed (scripts/pcsc-testbed.sh, needs root);
# pcscd's own work is another process and not counted, as the key's is not over UDP.
# Build first: make bench-drivers; swift build -c release --product securitykey-bench
# --product securitykey. Output: a table on stdout, also saved with the callgrind files and the
# per-mc-operation top 15 functions of our host in DIR (default .build/bench/callgrind).
# Exit status 1 when any run failed (the table still shows the others).
set -euo pipefail
cd "$(dirname "$0")/../.."

n1=5 n2=25 with_python=0 with_pcsc=0 out=.build/bench/callgrind
while (($#)); do
    case $1 in
        --n1) n1=$2; shift 2 ;;
        --n2) n2=$2; shift 2 ;;
        --python) with_python=1; shift ;;
        --pcsc) with_pcsc=1; shift ;;
        --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "callgrind: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[[ $n1 =~ ^[0-9]+$ && $n2 =~ ^[0-9]+$ && $n1 -ge 1 && $n2 -gt $n1 ]] || {
    echo "callgrind: need 1 <= --n1 < --n2" >&2; exit 2; }

fail() { echo "callgrind: $*" >&2; exit 1; }
command -v valgrind >/dev/null || fail "valgrind is not installed (apt-get install valgrind)"
command -v callgrind_annotate >/dev/null || fail "callgrind_annotate is missing (valgrind package)"

key_bin=${SECURITYKEY_BIN:-.build/release/securitykey}
ours_bin=${SECURITYKEY_BENCH_BIN:-.build/release/securitykey-bench}
fido2_bin=${FIDO2_DRIVER:-.build/bench/fido2-udp-driver}
python=${SECURITYKEY_PYTHON:-}
[[ -n $python ]] || { [[ -x .venv/bin/python3 ]] && python=.venv/bin/python3; }
[[ -x $key_bin ]] || fail "no $key_bin (swift build -c release --product securitykey)"
[[ -x $ours_bin ]] || fail "no $ours_bin (swift build -c release --product securitykey-bench)"
[[ -x $fido2_bin ]] || fail "no $fido2_bin (make bench-drivers)"
if ((with_python)); then
    [[ -n $python && -x $python ]] || fail "--python needs SECURITYKEY_PYTHON (a python with fido2 installed)"
    [[ -f scripts/bench/fido2_driver.py ]] || fail "--python needs scripts/bench/fido2_driver.py"
fi
demangle=$(command -v swift-demangle || true)
command -v objcopy >/dev/null || fail "objcopy is missing (binutils)"

mkdir -p "$out"
rm -f "$out"/*.callgrind "$out"/*.stdout "$out"/*.stderr
server_pid= card_pid= bed_dir=
cleanup() {
    [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    [[ -n $card_pid ]] && kill "$card_pid" 2>/dev/null && wait "$card_pid" 2>/dev/null
    [[ -n $bed_dir ]] && scripts/pcsc-testbed.sh stop "$bed_dir" >/dev/null 2>&1
    true
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$key_bin" virtual serve --udp "127.0.0.1:$port" --presence auto --json >"$out/key.stdout" 2>"$out/key.stderr" &
server_pid=$!
for _ in $(seq 100); do
    grep -q '"uri"' "$out/key.stdout" 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || fail "the virtual key exited: $(cat "$out/key.stderr")"
    sleep 0.1
done
grep -q '"uri"' "$out/key.stdout" || fail "the virtual key did not start in 10 s"
uri=udp:127.0.0.1:$port

# valgrind 3.19 (Debian 12) cannot read the DWARF 5 of Swift binaries: ours runs as a copy
# without debug information (symbols stay), and with sigsuspend-copy.so, without which
# valgrind 3.19 crashes in libdispatch's dispatch_main (see that file).
objcopy --strip-debug "$ours_bin" "$out/securitykey-bench" || fail "objcopy --strip-debug $ours_bin failed"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -shared -fPIC -o "$out/sigsuspend-copy.so" \
    scripts/bench/sigsuspend-copy.c || fail "building scripts/bench/sigsuspend-copy.c failed"

# ours runs each batch on the device's I/O thread (a task executor preference: no thread hop);
# ours-pool on the cooperative pool, handing each operation's I/O to that thread and back.
hosts=(ours ours-pool libfido2)
((with_python)) && hosts+=(python-fido2)

# Runs one host for one op kind and count under callgrind; prints the total Ir, or nothing when
# the run failed (its stdout and stderr stay in $out for a look).
# $ours_uri and $other_uri name the device; $tag prefixes the file names.
ours_uri=$uri?local=0 other_uri=$uri tag=
measure() {
    local host=$1 op=$2 n=$3 base=$out/$tag$1-$2-$3
    local -a env=() cmd=()
    case $host in
        ours) env=(LD_PRELOAD="$out/sigsuspend-copy.so")
              cmd=("$out/securitykey-bench" drive --device "$ours_uri") ;;
        ours-pool) env=(LD_PRELOAD="$out/sigsuspend-copy.so" SECURITYKEY_BENCH_EXECUTOR=pool)
              cmd=("$out/securitykey-bench" drive --device "$ours_uri") ;;
        libfido2) cmd=("$fido2_bin" --device "$other_uri") ;;
        python-fido2) cmd=("$python" scripts/bench/fido2_driver.py --device "$other_uri") ;;
    esac
    printf '%s %s\nquit\n' "$op" "$n" |
        timeout 1200 env "${env[@]}" valgrind --tool=callgrind --callgrind-out-file="$base.callgrind" \
            "${cmd[@]}" >"$base.stdout" 2>"$base.stderr" || return 0
    python3 - "$base.stdout" "$op" "$n" <<'EOF' || return 0
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = [l for l in lines if l.get("op") == sys.argv[2] and "error" not in l]
sys.exit(0 if lines and lines[0].get("ready") is True and len(ok) == 1
         and len(ok[0].get("latencies_ns", [])) == int(sys.argv[3]) else 1)
EOF
    # "totals:" (or "summary:" in older formats) is the first event, Ir.
    awk '/^(totals|summary):/ { print $2; exit }' "$base.callgrind"
}

declare -A per_op
for op in getinfo mc ga; do
    for host in "${hosts[@]}"; do
        echo "callgrind: $host $op x$n1 and x$n2 ..." >&2
        a=$(measure "$host" "$op" "$n1") b=$(measure "$host" "$op" "$n2")
        if [[ -n $a && -n $b ]]; then
            per_op[$host/$op]=$(((b - a) / (n2 - n1)))
        else
            per_op[$host/$op]=
            echo "callgrind: $host $op failed; see $out/$host-$op-*.stdout and .stderr" >&2
        fi
    done
done

{
    echo "Host CPU per operation, valgrind callgrind instructions (Ir), (Ir(n=$n2) - Ir(n=$n1)) / $((n2 - n1));"
    echo "one virtual key over CTAPHID/UDP on 127.0.0.1 (not measured); $(valgrind --version)."
    echo "Counted: building the request, the CTAPHID exchange, parsing the answer, and each host's"
    echo "fixed per-operation overhead; libfido2's answer verification is excluded (the others do not verify)."
    echo
    printf '%-8s %-13s %16s %14s %s\n' op host instructions/op ours/libfido2 "target ours <= 1.0x (first milestone 1.2x)"
    for op in getinfo mc ga; do
        base=${per_op[libfido2/$op]}
        for host in "${hosts[@]}"; do
            v=${per_op[$host/$op]}
            ratio="" verdict=""
            if [[ $host == ours || $host == ours-pool ]]; then
                if [[ -n $v && -n $base && $base -gt 0 ]]; then
                    ratio=$(awk -v a="$v" -v b="$base" 'BEGIN { printf "%.2fx", a / b }')
                    verdict=$(awk -v a="$v" -v b="$base" 'BEGIN { print (a <= b) ? "met" : (a <= 1.2 * b) ? "milestone met, target not" : "NOT met" }')
                else
                    verdict="unknown (a run failed)"
                fi
            fi
            printf '%-8s %-13s %16s %14s %s\n' "$op" "$host" "${v:-failed}" "$ratio" "$verdict"
        done
    done
    echo
    echo "Top 15 functions of our host by own instructions per mc operation"
    echo "(self Ir of the n=$n2 run minus the n=$n1 run, divided by $((n2 - n1))):"
    if [[ -f $out/ours-mc-$n1.callgrind && -f $out/ours-mc-$n2.callgrind && -n ${per_op[ours/mc]} ]]; then
        for n in "$n1" "$n2"; do
            callgrind_annotate --threshold=100 "$out/ours-mc-$n.callgrind" >"$out/ours-mc-$n.annotate" 2>/dev/null
        done
        python3 - "$out/ours-mc-$n1.annotate" "$out/ours-mc-$n2.annotate" "$((n2 - n1))" <<'EOF' |
import re, sys
def functions(path):
    costs, started = {}, False
    for line in open(path, errors="replace"):
        if "file:function" in line:
            started = True
            continue
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*)$", line) if started else None
        if m:
            name = m.group(2).strip()
            costs[name] = costs.get(name, 0) + int(m.group(1).replace(",", ""))
    return costs
a, b, d = functions(sys.argv[1]), functions(sys.argv[2]), int(sys.argv[3])
diff = {k: (b.get(k, 0) - a.get(k, 0)) / d for k in b}
total = sum(v for v in diff.values() if v > 0)
def share(v):
    return 100 * v / total if total else 0
for k, v in sorted(diff.items(), key=lambda kv: -kv[1])[:15]:
    name = re.sub(r"^(\?\?\?|\./[^:]*):", "", k)
    print(f"{v:10.0f} {share(v):5.1f}%  {name[:150]}")
print()
print("By object file (self Ir per mc operation):")
objects = {}
for k, v in diff.items():
    m = re.search(r"\[([^\]]+)\]$", k)
    obj = m.group(1).rsplit("/", 1)[-1] if m else "(no object named)"
    objects[obj] = objects.get(obj, 0) + v
for obj, v in sorted(objects.items(), key=lambda kv: -kv[1])[:8]:
    print(f"{v:10.0f} {share(v):5.1f}%  {obj}")
EOF
            if [[ -n $demangle ]]; then "$demangle" --simplified; else cat; fi
    else
        echo "(no data: the ours/mc runs failed)"
    fi
} | tee "$out/report.txt"

if ((with_pcsc)); then
    # Over PC/SC: a private bed (root), one virtual card, ours and python-fido2 (when there is one).
    pcsc_hosts=(ours)
    [[ -n $python && -x $python ]] && pcsc_hosts+=(python-fido2)
    pcsc_note=""
    if [[ $(id -u) -ne 0 && -z ${SECURITYKEY_PCSC_TESTBED:-} ]]; then
        pcsc_note="not run: a PC/SC bed needs root (unshare -m)"
    elif [[ -n ${SECURITYKEY_PCSC_TESTBED:-} ]]; then
        : # already inside a bed (scripts/pcsc-testbed.sh run -- ...)
    else
        bed_dir=$out/pcsc-bed
        bed_env=$(scripts/pcsc-testbed.sh start "$bed_dir") || pcsc_note="not run: the PC/SC bed did not start"
        [[ -z $pcsc_note ]] && eval "$bed_env"
    fi
    if [[ -z $pcsc_note ]]; then
        SECURITYKEY_VPCD_PORT=$SECURITYKEY_VPCD_PORT "$key_bin" virtual serve --pcsc --presence auto --json \
            >"$out/card.stdout" 2>"$out/card.stderr" &
        card_pid=$!
        for _ in $(seq 100); do
            grep -q '"vpcd"' "$out/card.stdout" 2>/dev/null && break
            sleep 0.1
        done
        grep -q '"vpcd"' "$out/card.stdout" || pcsc_note="not run: the virtual card did not start: $(cat "$out/card.stderr")"
    fi
    declare -A pcsc_op
    if [[ -z $pcsc_note ]]; then
        reader=${SECURITYKEY_VPCD_READERS%%|*}
        ours_uri="pcsc:$reader" other_uri="pcsc:$reader" tag=pcsc-
        for op in getinfo mc ga; do
            for host in "${pcsc_hosts[@]}"; do
                echo "callgrind: PC/SC $host $op x$n1 and x$n2 ..." >&2
                a=$(measure "$host" "$op" "$n1") b=$(measure "$host" "$op" "$n2")
                if [[ -n $a && -n $b ]]; then
                    pcsc_op[$host/$op]=$(((b - a) / (n2 - n1)))
                else
                    pcsc_op[$host/$op]=
                    echo "callgrind: PC/SC $host $op failed; see $out/pcsc-$host-$op-*" >&2
                fi
            done
        done
    fi
    {
        echo
        echo "Over PC/SC (pcscd + vpcd, one virtual card; libfido2 has no PC/SC driver here, so python-fido2"
        echo "is the other host; pcscd's work is in another process and not counted):"
        if [[ -n $pcsc_note ]]; then
            echo "$pcsc_note"
        else
            printf '%-8s %-13s %16s %18s\n' op host instructions/op ours/python-fido2
            for op in getinfo mc ga; do
                for host in "${pcsc_hosts[@]}"; do
                    v=${pcsc_op[$host/$op]} ratio=""
                    p=${pcsc_op[python-fido2/$op]:-}
                    if [[ $host == ours && -n $v && -n $p && $p -gt 0 ]]; then
                        ratio=$(awk -v a="$v" -v b="$p" 'BEGIN { printf "%.2fx", a / b }')
                    fi
                    printf '%-8s %-13s %16s %18s\n' "$op" "$host" "${v:-failed}" "$ratio"
                done
            done
            echo "(ours over UDP for comparison: getinfo ${per_op[ours/getinfo]:-?}, mc ${per_op[ours/mc]:-?}, ga ${per_op[ours/ga]:-?})"
        fi
    } | tee -a "$out/report.txt"
fi
echo "callgrind: report and callgrind files in $out" >&2
for key in "${!per_op[@]}"; do
    [[ -n ${per_op[$key]} ]] || fail "some runs failed (see the table); their output is in $out"
done
