#!/usr/bin/env bash
# Runs every libFuzzer target (or the ones named) for $1 (or $FUZZ_SECONDS) seconds each.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Builds Fuzz/ (one executable, securitykey-fuzz, over the FuzzTargets module) with
# `swift build --sanitize fuzzer --sanitize address` into .build-fuzz/fuzzer, apart from .build;
# extracts seeds from the vector files (scripts/fuzz-targets.py); keeps each target's corpus in
# .build-fuzz/corpus/TARGET (libFuzzer adds to the first folder only: the committed corpus,
# Fuzz/Corpus/TARGET, is read, never written; `make fuzz-corpus` rewrites it). A crashing input is saved under
# Tests/FuzzTargetsTests/Regressions/TARGET/, which `make test` replays; the script then fails.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-${FUZZ_SECONDS:-60}}"
shift || true
scratch=.build-fuzz
regressions=Tests/FuzzTargetsTests/Regressions
python="${PYTHON:-python3}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <("$python" scripts/fuzz-targets.py table | cut -f1)
fi

mkdir -p "$scratch"
echo "fuzz: building securitykey-fuzz (libFuzzer + AddressSanitizer)"
start=$SECONDS
# The linker warns about every ASan symbol it cannot export; show its output only on failure.
# swiftc keeps only the last -sanitize= flag it is given, and SwiftPM passes one per --sanitize:
# alone, `--sanitize fuzzer --sanitize address` compiles Swift code with ASan but without the
# fuzzer's coverage counters (C code, which clang compiles, gets both), so libFuzzer would run
# blind over every Swift parser. The combined flag, passed last, gives Swift code both.
swift build --package-path Fuzz --scratch-path "$scratch/fuzzer" --sanitize fuzzer --sanitize address \
    -Xswiftc -sanitize=fuzzer,address \
    >"$scratch/build.log" 2>&1 || { grep -v "Cannot export" "$scratch/build.log" >&2; exit 1; }
# Check that the Swift parsers carry libFuzzer's coverage counters (see above).
objects="$scratch/fuzzer/debug/CBOR.build"
# (grep -c reads all of readelf's output: grep -q would stop early and fail the pipe.)
if ! readelf -S "$objects"/CBORDecoder.swift.o 2>/dev/null | grep -c __sancov_cntrs >/dev/null; then
    echo "fuzz: the Swift modules were built without libFuzzer coverage counters" >&2
    exit 1
fi
echo "fuzz: built in $((SECONDS - start)) s"
binary="$scratch/fuzzer/debug/securitykey-fuzz"

rm -rf "$scratch/seeds"
"$python" scripts/fuzz-targets.py seeds "$scratch/seeds"

failed=()
for target in "${targets[@]}"; do
    mkdir -p "$scratch/corpus/$target" "$regressions/$target"
    log="$scratch/$target.log"
    status=0
    # Swift's own backtracer would delay libFuzzer's crash handler; leaks in the Swift runtime's
    # caches are not parser bugs.
    FUZZ_TARGET="$target" SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 nice "$binary" \
        "$scratch/corpus/$target" "$regressions/$target" "$scratch/seeds/$target" $(ls -d "Fuzz/Corpus/$target" 2>/dev/null) \
        -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
        -artifact_prefix="$regressions/$target/" -print_final_stats=1 >"$log" 2>&1 || status=$?
    executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
    printf 'fuzz: %-20s %10s executions in %s s (%s)\n' "$target" "${executions:-?}" "$seconds" "${coverage:-cov: ?}"
    if [ "$status" -ne 0 ]; then
        tail -n 30 "$log" >&2
        failed+=("$target")
    fi
done
# Empty regression folders are not kept.
find "$regressions" -mindepth 1 -type d -empty -delete
if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzz: ${failed[*]} failed; the inputs are saved under $regressions/TARGET/" >&2
    exit 1
fi
