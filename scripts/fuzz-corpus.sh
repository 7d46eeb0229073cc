#!/usr/bin/env bash
# Rewrites the committed corpus (Fuzz/Corpus/TARGET) of each target, or of the ones named, as
# the smallest set of inputs that keeps the coverage of everything known for it: the committed
# corpus itself, the corpus `make fuzz` grew (.build-fuzz/corpus/TARGET) and the seeds extracted
# from the vectors (scripts/fuzz-targets.py, from ../shared/vectors where it exists).
#
#   scripts/fuzz-corpus.sh [TARGET...]
#
# Runs scripts/fuzz-coverage.sh first (it builds the coverage binary and shows the figures
# before), then libFuzzer's -merge=1 into a fresh folder per target, which replaces the old one.
# Inputs over 256 KiB are left out: the corpus is committed. Run `make fuzz-coverage` after it
# on a fresh clone to see what is reproducible from the repository alone.
set -euo pipefail
cd "$(dirname "$0")/.."

scratch=.build-fuzz
committed=Fuzz/Corpus
python="${PYTHON:-python3}"
FUZZ_COVERAGE_MIN=0 scripts/fuzz-coverage.sh "$@"
binary="$scratch/coverage/debug/securitykey-fuzz"
rm -rf "$scratch/seeds"
"$python" scripts/fuzz-targets.py seeds "$scratch/seeds"

while IFS=$'\t' read -r target _; do
    if [ $# -gt 0 ] && [[ " $* " != *" $target "* ]]; then continue; fi
    candidates="$scratch/merge/$target-candidates"
    merged="$scratch/merge/$target"
    rm -rf "$candidates" "$merged" && mkdir -p "$candidates" "$merged"
    for d in "$committed/$target" "$scratch/corpus/$target" "$scratch/seeds/$target"; do
        [ -d "$d" ] && find "$d" -maxdepth 1 -type f -size -257k -exec cp -t "$candidates" {} +
    done
    FUZZ_TARGET="$target" SWIFT_BACKTRACE=enable=no LLVM_PROFILE_FILE=/dev/null \
        "$binary" -merge=1 -max_len=262144 "$merged" "$candidates" >"$scratch/merge/$target.log" 2>&1 || {
        tail -n 20 "$scratch/merge/$target.log" >&2
        echo "fuzz-corpus: merging $target failed" >&2
        exit 1
    }
    rm -rf "${committed:?}/$target" && mkdir -p "$committed/$target"
    # libFuzzer names each kept input by its SHA-1.
    find "$merged" -maxdepth 1 -type f -exec cp -t "$committed/$target" {} +
    printf 'fuzz-corpus: %-20s %4d inputs, %s\n' "$target" "$(find "$committed/$target" -type f | wc -l)" \
        "$(du -sh "$committed/$target" | cut -f1)"
    rm -rf "$candidates" "$merged"
done < <("$python" scripts/fuzz-targets.py table)
