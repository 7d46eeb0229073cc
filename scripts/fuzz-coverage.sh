#!/usr/bin/env bash
# Line coverage of each fuzz target's parser files over its corpus, measured with llvm-cov.
#
#   scripts/fuzz-coverage.sh [TARGET...]
#
# Builds Fuzz/ with -profile-generate -profile-coverage-mapping (libFuzzer, no ASan) into
# .build-fuzz/coverage, runs each target once over its committed corpus (Fuzz/Corpus/TARGET),
# its seeds, its regression files and, when there is one, the corpus `make fuzz` grew
# (.build-fuzz/corpus/TARGET), and prints the line coverage of the files scripts/fuzz-targets.py
# lists for it. Ends with the line `fuzz-coverage: N targets, min line coverage X%`, and fails
# when a target is under FUZZ_COVERAGE_MIN percent (default 95; 0 turns the check off). On a
# fresh clone only what is committed counts, which is what CI (.ci/run) checks.
set -euo pipefail
cd "$(dirname "$0")/.."

scratch=.build-fuzz
regressions=Tests/FuzzTargetsTests/Regressions
committed=Fuzz/Corpus
threshold="${FUZZ_COVERAGE_MIN:-95}"
python="${PYTHON:-python3}"
bin="$(dirname "$(command -v swift)")"
llvm_cov="${LLVM_COV:-$bin/llvm-cov}"
llvm_profdata="${LLVM_PROFDATA:-$bin/llvm-profdata}"

mkdir -p "$scratch"
echo "fuzz-coverage: building securitykey-fuzz with coverage mapping"
start=$SECONDS
# Coverage mapping needs no debug information and no index: leaving both out (as the packaging's
# consumer build does) saves a good part of this build, the longest of CI.
swift build --package-path Fuzz --scratch-path "$scratch/coverage" --sanitize fuzzer \
    -Xswiftc -profile-generate -Xswiftc -profile-coverage-mapping \
    --disable-index-store -Xswiftc -gnone -Xcc -g0 \
    >"$scratch/coverage-build.log" 2>&1 || { cat "$scratch/coverage-build.log" >&2; exit 1; }
echo "fuzz-coverage: built in $((SECONDS - start)) s"
binary="$scratch/coverage/debug/securitykey-fuzz"
[ -d "$scratch/seeds" ] || "$python" scripts/fuzz-targets.py seeds "$scratch/seeds"

profiles="$scratch/profiles"
rm -rf "$profiles" && mkdir -p "$profiles"

# One target: its run over its inputs, its profile and its report, into $profiles/TARGET.out
# (the lines to print) and $profiles/TARGET.percent; the status is the run's.
measure() {
    local target="$1" files="$2" d report percent
    local dirs=()
    for d in "$committed/$target" "$scratch/corpus/$target" "$scratch/seeds/$target" "$regressions/$target"; do
        [ -d "$d" ] && dirs+=("$d")
    done
    # -max_len as large as the largest seed (the seed script keeps files under 4 MiB): libFuzzer
    # cuts every input to -max_len, and a real MDS BLOB (4 MB) verifies only whole.
    FUZZ_TARGET="$target" SWIFT_BACKTRACE=enable=no LLVM_PROFILE_FILE="$profiles/$target.%p.profraw" \
        "$binary" -runs=0 -max_len=$((4 << 20)) "${dirs[@]}" >"$profiles/$target.log" 2>&1 || {
        { tail -n 20 "$profiles/$target.log"; echo "fuzz-coverage: $target failed on its corpus"; } >"$profiles/$target.out"
        return 1
    }
    # TARGET.PID: "virtual-key-*" would take virtual-key-u2f's profiles too, which may be running.
    "$llvm_profdata" merge -sparse "$profiles/$target".*.profraw -o "$profiles/$target.profdata"
    # llvm-cov names files by the path they were compiled at; report the target's files only.
    # shellcheck disable=SC2086
    report=$("$llvm_cov" report "$binary" -instr-profile="$profiles/$target.profdata" $(for f in $files; do echo "$PWD/$f"; done))
    percent=$(echo "$report" | awk '$1 == "TOTAL" { print $(NF-3) }' | tr -d '%')
    {
        echo "$report" | awk -v t="$target" 'NR > 2 && $1 != "TOTAL" && $1 !~ /^-/ && NF > 9 {
            n = split($1, p, "/"); printf "fuzz-coverage:   %-20s %-45s %s lines\n", t, p[n], $(NF-3) }'
        printf 'fuzz-coverage: %-20s %s%% of the lines of its parser files\n' "$target" "${percent:-0}"
    } >"$profiles/$target.out"
    echo "${percent:-0}" >"$profiles/$target.percent"
}

# The targets run as many at a time as there are CPUs (each run is one thread); their lines
# are printed in the table's order once all have ended.
targets=()
jobs=$(nproc 2>/dev/null || echo 1)
while IFS=$'\t' read -r target files; do
    if [ $# -gt 0 ] && [[ " $* " != *" $target "* ]]; then continue; fi
    targets+=("$target")
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    measure "$target" "$files" &
done < <("$python" scripts/fuzz-targets.py table)
wait || true

count=0
minimum=""
below=()
failed=()
for target in "${targets[@]}"; do
    [ -f "$profiles/$target.out" ] && cat "$profiles/$target.out"
    if [ ! -f "$profiles/$target.percent" ]; then
        failed+=("$target")
        continue
    fi
    percent=$(cat "$profiles/$target.percent")
    count=$((count + 1))
    if awk -v a="$percent" -v b="$threshold" 'BEGIN { exit !(a < b) }'; then below+=("$target"); fi
    if [ -z "$minimum" ] || awk -v a="$percent" -v b="$minimum" 'BEGIN { exit !(a < b) }'; then
        minimum="$percent"
    fi
done
if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzz-coverage: no figure for ${failed[*]}: the run or its report failed (above)" >&2
    exit 1
fi
echo "fuzz-coverage: $count targets, min line coverage ${minimum:-0}%"
if [ ${#below[@]} -ne 0 ]; then
    echo "fuzz-coverage: under ${threshold}% of their lines: ${below[*]} (grow the corpus with make fuzz, then make fuzz-corpus; Docs/Fuzzing.md)" >&2
    exit 1
fi
