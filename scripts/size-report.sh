#!/usr/bin/env bash
# size-report.sh: the size of every installed program and library (stripped, as `make
# install-files` puts them) and of the Debian package, against the targets of issue 30, with
# each artifact's largest parts: its sections, and the modules its symbols come from (read with
# nm from the unstripped link in .build/release, BUILD/NAME.unstripped, where there is one).
#
#   scripts/size-report.sh check ROOT [DEB]   print the table; exit 1 when something is over
#                                             its target (scripts/test-packaging.sh)
#   scripts/size-report.sh report             build the package from the release build
#                                             (scripts/make-deb.sh, make deb's compression), print
#                                             the table of its root and write it into
#                                             Docs/Performance.md as "## Artifact sizes"
#                                             (make size-report)
#
# Every ELF file under ROOT is an artifact, so a new one (a PAM module) is measured and checked
# without a change here. Targets, in bytes (MB = 10^6): SIZE_ARTIFACT_MAX (12 MB each, but for
# libsecuritykey.so.0, the library all of them link, which the installation's target bounds),
# SIZE_DEB_MAX (10 MB), SIZE_INSTALL_MAX (25 MB, everything installed).
set -euo pipefail
cd "$(dirname "$0")/.."
artifact_max=${SIZE_ARTIFACT_MAX:-12000000}
deb_max=${SIZE_DEB_MAX:-10000000}
install_max=${SIZE_INSTALL_MAX:-25000000}
build=${SIZE_BUILD_DIR:-.build/release}

mb() { awk -v b="$1" 'BEGIN { if (b < 1e6) printf "%.1f kB", b / 1e3; else printf "%.2f MB", b / 1e6 }'; }

# The table (Markdown) for ROOT and DEB on stdout; the verdict in $over (count of misses).
table() {
    local root="$1" deb="${2:-}" file size total verdict unstripped
    over=0
    echo "| artifact | stripped | target | largest parts |"
    echo "| --- | --- | --- | --- |"
    while IFS= read -r file; do
        size=$(stat -c %s "$file")
        verdict="<= $(mb "$artifact_max")"
        if [[ $(basename "$file") == libsecuritykey.so.* ]]; then
            # The one library the four front ends link (issue 30's second route): bounded by the
            # whole installation's target, not an artifact's.
            verdict="shared by all (the install's target)"
        elif (( size > artifact_max )); then verdict="**over** $(mb "$artifact_max")"; over=$((over + 1)); fi
        # ICU's data package names its entries icudtNNl/...: no artifact may carry it (issue 30).
        if grep -qa 'icudt[0-9][0-9]l' "$file"; then verdict="$verdict, **ICU data**"; over=$((over + 1)); fi
        # Only the shared library has an unstripped link beside the build (the front ends are a
        # few functions of C): the stripped file otherwise, whose sections alone are attributed.
        unstripped="$build/$(basename "$file").unstripped"
        [[ -f $unstripped ]] || unstripped="$file"
        echo "| \`${file#"$root"/}\` | $(mb "$size") | $verdict | $(parts "$file" "$unstripped") |"
    done < <(find "$root" -path "$root/DEBIAN" -prune -o -type f \
        -exec sh -c 'head -c 4 "$1" | grep -q "ELF"' _ {} \; -print | sort)
    total=$(find "$root" -path "$root/DEBIAN" -prune -o -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
    verdict="<= $(mb "$install_max")"
    if (( total > install_max )); then verdict="**over** $(mb "$install_max")"; over=$((over + 1)); fi
    echo "| everything installed ($(find "$root" -path "$root/DEBIAN" -prune -o -type f -print | wc -l) files) | $(mb "$total") | $verdict | |"
    if [[ -n $deb ]]; then
        size=$(stat -c %s "$deb")
        verdict="<= $(mb "$deb_max")"
        if (( size > deb_max )); then verdict="**over** $(mb "$deb_max")"; over=$((over + 1)); fi
        echo "| \`$(basename "$deb")\` | $(mb "$size") | $verdict | |"
    fi
}

# "sections: .text 4.1, .rodata 1.2, ...; modules: Swift 2.3, BoringSSL 1.5, ..." (MB) for one
# artifact: sections from the stripped file, modules from the symbols of the unstripped one.
parts() {
    local stripped="$1" unstripped="$2"
    python3 - "$stripped" "$unstripped" <<'EOF'
import os, re, subprocess, sys

stripped, unstripped = sys.argv[1], sys.argv[2]

def sections(path):
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    sizes = {}
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m and m.group(1) != "NULL":
            name = m.group(1)
            if name.startswith("swift5_"):
                name = "swift5_* (metadata)"
            sizes[name] = sizes.get(name, 0) + int(m.group(2), 16)
    return sizes

def module(symbol):
    """The module a symbol comes from, by its mangling or its C prefix."""
    s = symbol.lstrip("_") if symbol.startswith("_$s") else symbol
    if s.startswith("$s"):
        rest = s[2:]
        if rest.startswith("s"):
            return "Swift"
        if rest.startswith("Sc") or rest.startswith("ScT"):
            return "_Concurrency"
        if rest.startswith("So"):
            return "C types (imported)"
        if rest.startswith("S"):
            return "Swift"
        m = re.match(r"(\d+)", rest)
        if m:
            n = int(m.group(1))
            name = rest[len(m.group(1)):len(m.group(1)) + n]
            return name or "Swift (other)"
        return "Swift (other)"
    if s.startswith("CCryptoBoringSSL") or s.startswith("_CCryptoBoringSSL"):
        return "BoringSSL (swift-crypto)"
    if re.search(r"icudt\d+_dat", s) or re.match(r"_?(u|U|ucnv|ubrk|ucol|udat|unum|uloc|ures)[a-zA-Z]*_\d+$", s) \
            or "icu_" in s or s.startswith("_ZN6icu_"):
        return "ICU"
    if s.startswith("_ZN5swift") or s.startswith("swift_") or s.startswith("_swift"):
        return "Swift runtime"
    if s.startswith("_ZNSt") or s.startswith("_ZSt") or s.startswith("_ZNKSt") or s.startswith("__cxa"):
        return "C++ library"
    if "dispatch" in s:
        return "libdispatch"
    if s.startswith("_CF") or s.startswith("CF") or s.startswith("__CF"):
        return "CoreFoundation"
    if s.startswith("_Z"):
        return "C++ (other)"
    return "C (other)"

def modules(path):
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True).stdout
    sizes, total = {}, 0
    for line in out.splitlines():
        fields = line.split()
        if len(fields) != 4:
            continue
        size = int(fields[1], 16)
        name = module(fields[3])
        sizes[name] = sizes.get(name, 0) + size
        total += size
    return sizes, total

def mb(n):
    return f"{n / 1e6:.2f}"

sec = sections(stripped)
total_size = os.path.getsize(stripped)
if total_size < 1_000_000:
    # A front end: a few kB, its sections in kB.
    top = sorted(((v, k) for k, v in sec.items() if v >= 100), reverse=True)[:4]
    print("a front end: " + ", ".join(f"{k} {v / 1e3:.1f}" for v, k in top) + " (kB)")
    sys.exit(0)
top_sections = sorted(((v, k) for k, v in sec.items() if v >= 100_000), reverse=True)[:5]
text = "sections: " + ", ".join(f"{k} {mb(v)}" for v, k in top_sections)
mods, total = modules(unstripped)
if total:
    top = sorted(((v, k) for k, v in mods.items()), reverse=True)[:10]
    text += "; symbols by module: " + ", ".join(f"{k} {mb(v)}" for v, k in top)
else:
    text += "; (no symbol table to attribute)"
print(text + " (MB)")
EOF
}

case "${1:-}" in
check)
    [[ $# -ge 2 ]] || { echo "usage: $0 check ROOT [DEB]" >&2; exit 2; }
    table "$2" "${3:-}"
    if (( over > 0 )); then
        echo "size-report: $over artifact(s) over their target (issue 30; Docs/Performance.md, Artifact sizes)" >&2
        exit 1
    fi
    ;;
report)
    scratch=$(mktemp -d /tmp/securitykey-size.XXXXXX)
    trap 'rm -rf "$scratch"' EXIT
    deb=$(scripts/make-deb.sh | tail -n 1)
    # make-deb.sh leaves the package's root in .build/deb/root.
    table .build/deb/root "$deb" >"$scratch/table.md"
    cat "$scratch/table.md"
    commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
    heading="## Artifact sizes"
    {
        echo "$heading"
        echo
        echo "\`scripts/size-report.sh report\` (\`make size-report\`) on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit:"
        echo "each ELF file of the Debian package (\`make deb\`; stripped, as \`make install\` puts it too), everything"
        echo "it installs and the package itself, against the targets of issue 30 (MB = 10^6 bytes). Largest parts:"
        echo "the biggest sections of the stripped file, and the symbols of the unstripped link summed by the"
        echo "module their mangled name (or C prefix) names. \`make test-packaging\` fails on any miss."
        echo
        cat "$scratch/table.md"
        echo
    } >"$scratch/section.md"
    scripts/bench/put-section.sh "$heading" "$scratch/section.md"
    echo "size-report: wrote Docs/Performance.md" >&2
    (( over == 0 )) || echo "size-report: $over artifact(s) over their target" >&2
    ;;
*)
    echo "usage: $0 check ROOT [DEB] | report" >&2
    exit 2
    ;;
esac
