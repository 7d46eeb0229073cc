#!/usr/bin/env bash
# put-section.sh HEADING SECTION_FILE: writes SECTION_FILE into Docs/Performance.md as the section
# headed HEADING ("## ..."), replacing that section if it is there, else placing it before "##
# Reading the numbers" (or at the end). Used by ssh-report.sh and scripts/size-report.sh, whose
# figures are never edited by hand.
set -euo pipefail
cd "$(dirname "$0")/../.."
heading="$1" section="$2" out=Docs/Performance.md
[[ -f $out ]] || echo "# Performance" >"$out"
awk -v heading="$heading" -v section="$section" '
    function put() { while ((getline line < section) > 0) print line; done = 1 }
    $0 == heading { skipping = 1; next }
    skipping && /^## / { skipping = 0 }
    skipping { next }
    !done && $0 == "## Reading the numbers" { put() }
    { print }
    END { if (!done) { print ""; put() } }' "$out" >"$out.partial"
mv "$out.partial" "$out"
