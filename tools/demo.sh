#!/usr/bin/env bash
# README command (a): installs everything, builds, and runs the main job. Until
# the fio engine lands (issue 6), the main job is the protocol check suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build

"$root/tools/setup.sh"
[ -f "$build/build.ninja" ] || meson setup "$build" "$root"
ninja -C "$build"
meson test -C "$build" --suite wire --print-errorlogs
