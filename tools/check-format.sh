#!/usr/bin/env bash
# Fails when a tracked C or C++ source differs from what clang-format makes of
# it (.clang-format at the root; softverbs/ keeps its own, 2-space one).
# Prints each file that differs and the first lines of the change.
#   tools/check-format.sh          check
#   tools/check-format.sh --fix    rewrite the files in place
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is missing (apt-get install clang-format)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.c' '*.cc')
if [ "${1:-}" = --fix ]; then
    clang-format -i "${files[@]}"
    exit 0
fi
bad=0
for f in "${files[@]}"; do
    if ! clang-format --dry-run --Werror "$f" 2>/dev/null; then
        echo "check-format: $f differs from clang-format's layout:"
        { clang-format "$f" | diff -u "$f" - || true; } | sed -n "3,14p" | sed "s/^/    /"
        bad=$((bad + 1))
    fi
done
[ "$bad" -eq 0 ] || { echo "check-format: $bad of ${#files[@]} files differ (tools/check-format.sh --fix rewrites them)"; exit 1; }
echo "check-format: ${#files[@]} files as clang-format lays them out ($(clang-format --version | sed 's/.*version \([0-9.]*\).*/clang-format \1/'))"
