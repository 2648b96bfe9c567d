#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds with warnings as
# errors, runs every test (unit, softverbs conformance, target, integration over
# softverbs, fio end to end) and prints one closing 'N passed, N failed' line.
#
# Usage: tools/test.sh [BUILD_DIR] [extra meson setup options...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true

"$root/tools/setup.sh"
. "$root/tools/ccache-env.sh"

if [ -f "$build/build.ninja" ]; then
    meson configure "$build" -Dwerror=true -Dengine=enabled -Dman=enabled "$@" >/dev/null
else
    meson setup "$build" "$root" -Dwerror=true -Dengine=enabled -Dman=enabled "$@"
fi
ninja -C "$build"

status=0
# NVMEOF_TEST_SKIP_SUITES (CI's sanitizer stage): suites to leave out, by name.
skip=()
for suite in ${NVMEOF_TEST_SKIP_SUITES:-}; do skip+=(--no-suite "$suite"); done
meson test -C "$build" --print-errorlogs --num-processes 2 "${skip[@]}" || status=$?
python3 "$root/tools/test-summary.py" "$build/meson-logs/testlog.junit.xml" || status=1
exit $status
