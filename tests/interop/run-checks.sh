#!/usr/bin/env bash
# Interop checks against the Linux kernel's NVMe/RDMA target and host, over Soft-RoCE (rxe)
# in a QEMU guest. Builds (or reuses) the guest image, boots it ONCE, runs the checks in it
# (tests/interop/checks-guest.sh) and prints one line per check and a closing summary:
#   PASS name | FAIL name: why
#   N passed, N failed
#
#   tests/interop/run-checks.sh [CHECK...]      (default: all)
#
# Environment: NVMEOF_BUILD_DIR  build tree to test (default REPO/build; must be under the
#              repository, which the guest sees at the same path), INTEROP_TIMEOUT (whole boot,
#              default 1200 s, 3000 s with linux-host-to-ours-zoned), INTEROP_GTEST_FILTER
#              (triage only: --gtest_filter for the core integration tests), INTEROP_ZBD_TESTS (t/zbd test numbers for
#              linux-host-to-ours-zoned; default: all but the six that run 30 s each; "all"), INTEROP_ZBD_TIMEOUT (t/zbd, default
#              1800 s). Logs: .cache/interop/last-run/ (console.log = guest kernel log,
#              logs/<check>.log = every step's output).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${NVMEOF_BUILD_DIR:-$repo/build}"
all=(engine-to-kernel core-integration-to-kernel linux-host-to-ours linux-host-tcp-to-ours engine-to-ours
     engine-tcp-to-kernel errors-against-kernel discovery-against-kernel reconnect-against-kernel
     in-capsule-against-kernel engine-to-kernel-zoned linux-host-tcp-to-ours-zoned
     linux-host-to-ours-zoned)
# Named only (not in the default run): auth-engine-to-kernel, auth-linux-host-to-ours need a guest
# kernel with DH-HMAC-CHAP (INTEROP_KERNEL=backports; bookworm's 6.1 has none).
checks=("$@"); [ ${#checks[@]} -gt 0 ] || checks=("${all[@]}")
out="$repo/.cache/interop/last-run"
t0=$SECONDS

summary() {   # prints the per-check lines (a check without a result FAILs with $1) and totals
    local why=$1 pass=0 fail=0 c line
    echo
    for c in "${checks[@]}"; do
        line="$(grep -E "^(PASS|FAIL) $c(:|\$)" "$out/results" 2>/dev/null | head -1 || true)"
        [ -n "$line" ] || line="FAIL $c: $why"
        echo "$line"
        case "$line" in PASS*) pass=$((pass + 1)) ;; *) fail=$((fail + 1)) ;; esac
    done
    echo "$pass passed, $fail failed ($((SECONDS - t0)) s)"
    [ "$fail" -eq 0 ]
}

for f in engine/libfio_nvmeof.so target/nvmeof-target cli/nvmeof-discover; do
    [ -e "$build/$f" ] || { echo "run-checks: $build/$f is missing: build first (ninja -C $build)" >&2; exit 2; }
done

rm -rf "$out"; mkdir -p "$out"
# The guest runs host-built binaries: it compares these versions with its own.
dpkg-query -W -f '${Package} ${Version}\n' libc6 libstdc++6 libibverbs1 librdmacm1 \
    ibverbs-providers fio > "$out/host-versions" 2>/dev/null || true
if ! image="$("$here/build-image.sh" 2> "$out/build-image.log")"; then
    tail -30 "$out/build-image.log" >&2
    summary "guest image build failed (log: $out/build-image.log)"; exit 1
fi
echo "interop: image $image ready after $((SECONDS - t0)) s; booting"

# fio's t/zbd (linux-host-to-ours-zoned) takes about 2 minutes under TCG, 5 to 8 with
# INTEROP_ZBD_TESTS=all (30 allowed).
boot_timeout=1200
[[ " ${checks[*]} " != *" linux-host-to-ours-zoned "* ]] || boot_timeout=$((boot_timeout + 1800))
rc=0
# 4 GiB: engine-tcp-to-kernel's QD 128 job holds four jobs × 128 × 4 MiB of fio buffers
# (2 GiB) besides the kernel target's, which a 2 GiB guest's OOM killer ends.
"$here/run-in-guest.sh" --image "$image" --nvmet --mem "${INTEROP_MEM_MB:-4096}" \
    --timeout "${INTEROP_TIMEOUT:-$boot_timeout}" --out "$out" -- \
    env NVMEOF_BUILD_DIR="$build" INTEROP_GTEST_FILTER="${INTEROP_GTEST_FILTER:-}" \
        INTEROP_ZBD_TESTS="${INTEROP_ZBD_TESTS:-}" INTEROP_ZBD_TIMEOUT="${INTEROP_ZBD_TIMEOUT:-}" bash "$here/checks-guest.sh" "${checks[@]}" | sed 's/^/  | /' \
    || rc=${PIPESTATUS[0]}
case $rc in
    0|1) summary "no result (the guest run ended early)" ;;
    124) summary "guest timed out" ;;
    *) summary "no result (guest run exit $rc)" ;;
esac
