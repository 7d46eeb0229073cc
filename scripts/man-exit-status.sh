#!/bin/sh
# man-exit-status.sh BINARY MANDIR
# Puts the real exit-status table into the man pages swift-argument-parser's generate-manual
# wrote for BINARY in MANDIR: the generator's EXIT STATUS section says only ".Ex -std" (0 on
# success, >0 on error), while the tool documents nine statuses. The table is read from
# `BINARY --help` (the root command's discussion, built from CLIExitStatus), so the pages say
# what the binary does; in the root page's DESCRIPTION, where the discussion put it as plain
# text, it is taken out. Run by `make release`; checked by CLITests.ManPageTests.
set -eu
bin=$1
dir=$2

rows=$("$bin" --help | awk '
    /^EXIT STATUS$/ { inside = 1; next }
    inside && /^ +[0-9]+ +[^ ]/ { sub(/^ +/, ""); print; next }
    inside { exit }')
[ -n "$rows" ] || { echo "man-exit-status: no EXIT STATUS table in $bin --help" >&2; exit 1; }

for page in "$dir"/securitykey.1 "$dir"/securitykey.*.1; do
    [ -f "$page" ] || continue
    awk -v rows="$rows" '
        # The plain-text copy in the DESCRIPTION: the heading and its rows.
        /^EXIT STATUS$/ { skipping = 1; next }
        skipping && /^ +[0-9]+ +/ { next }
        { skipping = 0 }
        /^\.Sh "EXIT STATUS"$/ { print; section = 1; next }
        section && /^\.Ex -std$/ {
            print ".Bl -tag -width 4n"
            n = split(rows, line, "\n")
            for (i = 1; i <= n; i++) {
                status = line[i]; sub(/ .*/, "", status)
                text = line[i]; sub(/^[0-9]+ +/, "", text)
                print ".It " status
                print text
            }
            print ".El"
            section = 0
            next
        }
        { print }' "$page" >"$page.tmp"
    mv "$page.tmp" "$page"
done
