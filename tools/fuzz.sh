#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz (docs/testing.md, "Fuzzing").
#   tools/fuzz.sh TARGET SECONDS [LIBFUZZER_ARG...]
#   tools/fuzz.sh all SECONDS [LIBFUZZER_ARG...]
#   tools/fuzz.sh list
# Builds build-fuzz (clang, ASan + UBSan, -Dfuzz=enabled) when needed, seeds
# each target with its committed corpus (tests/fuzz/corpus/TARGET, read only:
# new inputs go to a scratch directory), and fails on any crash, leak, timeout
# or sanitizer report, keeping the reproducer. Prints executions per target.
# Runs as many targets at once as there are cores (NVMEOF_FUZZ_JOBS sets it).
# NVMEOF_FUZZ_BUILD picks another build folder; NVMEOF_FUZZ_KEEP=1 keeps the
# scratch corpora.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${NVMEOF_FUZZ_BUILD:-$root/build-fuzz}

usage() { echo "usage: tools/fuzz.sh TARGET|all SECONDS [LIBFUZZER_ARG...] | tools/fuzz.sh list" >&2; exit 2; }
[ $# -ge 1 ] || usage

. "$root/tools/ccache-env.sh"
if [ ! -f "$build/build.ninja" ]; then
    command -v clang++ >/dev/null || { echo "fuzz: clang++ is missing (apt-get install clang libclang-rt-14-dev, or tools/setup.sh)" >&2; exit 1; }
    wrap=""
    command -v ccache >/dev/null && wrap="ccache "  # meson adds it only to compilers it picks itself
    CC="${wrap}clang" CXX="${wrap}clang++" meson setup "$build" "$root" -Dfuzz=enabled -Dtests=false -Dengine=disabled \
        -Dpython=disabled -Dcuda=disabled -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
ninja -C "$build" fuzz-targets >/dev/null

all_targets=()
for exe in "$build"/tests/fuzz/fuzz-*; do
    [ -f "$exe" ] && [ -x "$exe" ] && all_targets+=("${exe##*/fuzz-}")
done
if [ "$1" = list ]; then
    printf '%s\n' "${all_targets[@]}"
    exit 0
fi
[ $# -ge 2 ] || usage
which=$1
seconds=$2
shift 2
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: SECONDS must be a positive whole number, not '$seconds'" >&2; exit 2; }
if [ "$which" = all ]; then
    targets=("${all_targets[@]}")
else
    [ -x "$build/tests/fuzz/fuzz-$which" ] || { echo "fuzz: no target '$which' (targets: ${all_targets[*]})" >&2; exit 2; }
    targets=("$which")
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/nvmeof-fuzz.XXXXXX")
# Abort on the first report of any sanitizer, so libFuzzer saves the input.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
# fuzz_one TARGET: one target's run, its exit status left in $scratch/TARGET/status.
fuzz_one() {
    local t=$1 seeds="$root/tests/fuzz/corpus/$1" extra=() status=0
    mkdir -p "$scratch/$t/new"
    [ -f "$root/tests/fuzz/$t.dict" ] && extra=("-dict=$root/tests/fuzz/$t.dict")
    [ -f "$root/tests/fuzz/$t.options" ] && extra+=($(grep -v '^#' "$root/tests/fuzz/$t.options"))
    "$build/tests/fuzz/fuzz-$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$scratch/$t/" "${extra[@]}" "${fuzzer_args[@]}" \
        "$scratch/$t/new" "$seeds" >"$scratch/$t/log" 2>&1 || status=$?
    echo "$status" > "$scratch/$t/status"
}
# As many targets at once as there are cores (NVMEOF_FUZZ_JOBS): each is one
# single-threaded process, so each still gets its SECONDS of one core.
fuzzer_args=("$@")
jobs=${NVMEOF_FUZZ_JOBS:-$(nproc)}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: NVMEOF_FUZZ_JOBS must be a positive whole number, not '$jobs'" >&2; exit 2; }
running=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
    fuzz_one "$t" &
    running=$((running + 1))
done
wait
failed=()
for t in "${targets[@]}"; do
    log="$scratch/$t/log"
    status=$(cat "$scratch/$t/status" 2>/dev/null || echo "?")
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$( (grep -o 'cov: [0-9]*' "$log" || true) | tail -1 | cut -d' ' -f2)
    if [ "$status" != 0 ] || grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|fuzz finding:' "$log"; then
        failed+=("$t")
        echo "fuzz: $t FAILED (exit $status) after ${execs:-?} executions; reproducer and log in $scratch/$t/"
        (grep -E 'ERROR:|runtime error:|fuzz finding:|SUMMARY:|Test unit written to' "$log" || tail -5 "$log") |
            head -20 | sed 's/^/    /'
    else
        echo "fuzz: $t: ${execs:-0} executions in ${seconds} s (${rate:-0}/s), coverage ${cov:-?} edges, $(ls "$scratch/$t/new" | wc -l) new inputs"
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]} (kept $scratch)"
    exit 1
fi
if [ "${NVMEOF_FUZZ_KEEP:-0}" = 1 ]; then
    echo "fuzz: scratch corpora kept in $scratch"
else
    rm -rf "$scratch"
fi
echo "fuzz: all ${#targets[@]} targets ran clean"
