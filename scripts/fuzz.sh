#!/usr/bin/env bash
# Fuzzes the CBOR decoder (strict and lenient) with libFuzzer for $1 (or $FUZZ_SECONDS) seconds.
#
#   scripts/fuzz.sh [SECONDS]
#
# Builds Fuzz/CBORDecoderFuzzer.swift with Sources/CBOR into .build-fuzz (its own scratch path,
# apart from .build), seeds the corpus with Tests/CBORTests/Regressions and the CBOR test
# vectors, and prints the number of executions. A crashing input is saved under
# Tests/CBORTests/Regressions/, where the CBOR tests replay it; the script then fails.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-${FUZZ_SECONDS:-60}}"
scratch=.build-fuzz
regressions=Tests/CBORTests/Regressions
swiftc="${SWIFTC:-$(command -v swiftc || true)}"
if [ -z "$swiftc" ]; then
    echo "fuzz: no swiftc on PATH (swift.org/install)" >&2
    exit 1
fi

mkdir -p "$scratch/corpus" "$scratch/seeds"
binary="$scratch/cbor-decoder-fuzzer"
sources=(Sources/CBOR/*.swift Fuzz/CBORDecoderFuzzer.swift)
if [ ! -x "$binary" ] || [ -n "$(find "${sources[@]}" -newer "$binary" 2>/dev/null)" ]; then
    echo "fuzz: building $binary"
    # The linker warns about every ASan symbol it cannot export; show its output only on failure.
    "$swiftc" -O -parse-as-library -module-name CBORFuzz -sanitize=fuzzer,address \
        -module-cache-path "$scratch/module-cache" "${sources[@]}" -o "$binary" >"$scratch/build.log" 2>&1 || {
        cat "$scratch/build.log" >&2
        exit 1
    }
fi

# Seeds from the vector files: every hex item of rfc8949-cbor.json and python-fido2's responses.
if command -v python3 >/dev/null && [ -z "$(ls -A "$scratch/seeds")" ]; then
    python3 - "$scratch/seeds" <<'PY'
import hashlib, json, os, sys
out = sys.argv[1]
for name in ("rfc8949-cbor.json", "python-fido2-vectors.json"):
    for entry in json.load(open(os.path.join("Tests/Vectors", name))):
        kind, hexed = entry.get("kind", ""), entry.get("hex")
        if hexed and (kind.startswith("cbor-vector") or kind == "ctap2-response-cbor"):
            data = bytes.fromhex(hexed)
            with open(os.path.join(out, hashlib.sha1(data).hexdigest()), "wb") as f:
                f.write(data)
PY
fi

log="$scratch/fuzz.log"
status=0
"$binary" "$scratch/corpus" "$regressions" "$scratch/seeds" \
    -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=256 \
    -artifact_prefix="$regressions/" -print_final_stats=1 >"$log" 2>&1 || status=$?

executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
echo "fuzz: ${executions:-unknown} executions in ${seconds} s (strict and lenient decoding, round trips)"
if [ "$status" -ne 0 ]; then
    tail -n 40 "$log" >&2
    echo "fuzz: libFuzzer exited with status $status; the input is saved under $regressions/" >&2
    exit "$status"
fi
