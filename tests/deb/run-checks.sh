#!/usr/bin/env bash
# The Debian packages (debian/) built from the clone, installed on this
# machine, used from their installed paths only, and purged again:
#   - dpkg-buildpackage -us -uc -b, the .debs moved to OUT and the tree cleaned;
#   - apt-get install of the .debs;
#   - the installed nvmeof-target on the installed softverbs, the installed
#     engine running the installed quickstart job in fio, nvmeof-discover
#     against the same target, and the README's Python snippet with the
#     installed package, from a folder outside the clone with a PATH of system
#     folders only;
#   - the file lists: the engine, every job of jobs/, the man pages meson
#     installs;
#   - apt-get purge of everything the install added.
#
# Usage (as root): tests/deb/run-checks.sh [OUT]     (default OUT: build/deb)
#
# A failure ends with one line "deb: FAIL: <cause>"; the packages are purged
# whatever happens.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(realpath -m "${1:-$root/build/deb}")
cd "$root"

added=()          # packages this run installed, purged at the end
target_pid=""
work=""
cleanup() {
    if [ -n "$target_pid" ] && kill -0 "$target_pid" 2>/dev/null; then
        kill -TERM "$target_pid"
        wait "$target_pid" 2>/dev/null || true
    fi
    target_pid=""
    if [ ${#added[@]} -gt 0 ]; then
        apt-get -o DPkg::Lock::Timeout=600 purge -y -q "${added[@]}" > "$out/purge.log" 2>&1 ||
            echo "deb: apt-get purge ${added[*]} failed; see $out/purge.log"
        added=()
    fi
    if [ -n "$work" ]; then
        rm -rf "$work"
    fi
    work=""
}
failed=""
fail() {
    failed=1
    cleanup
    echo "deb: FAIL: $*"
    exit 1
}
# A command failing outside fail() (set -e) still purges and says so.
trap 'status=$?; cleanup; [ $status -eq 0 ] || [ -n "$failed" ] || echo "deb: FAIL: stopped by a failing command (exit $status)"' EXIT

[ "$(id -u)" = 0 ] || fail "run as root: the packages are installed with apt-get and purged again"
for tool in dpkg-buildpackage dh_listpackages dpkg-parsechangelog; do
    command -v "$tool" >/dev/null || fail "$tool is missing: run tools/setup.sh (it installs debhelper and dpkg-dev)"
done
. tools/ccache-env.sh
export DEBIAN_FRONTEND=noninteractive

version=$(dpkg-parsechangelog -SVersion)
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
mapfile -t packages < <(dh_listpackages)
[ ${#packages[@]} -gt 0 ] || fail "dh_listpackages names no package in debian/control"

# A clean start: packages an interrupted run left installed, its output and
# the files dpkg-buildpackage writes beside the clone.
mapfile -t left < <(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${packages[@]}" 2>/dev/null |
                    awk '$1 != "un" { print $2 }')
if [ ${#left[@]} -gt 0 ]; then
    echo "deb: purging ${left[*]}, left installed by an earlier run"
    apt-get -o DPkg::Lock::Timeout=600 purge -y -q "${left[@]}" > /dev/null ||
        fail "cannot purge ${left[*]} left installed by an earlier run"
fi
rm -rf "$out"
mkdir -p "$out"
results=("../nvmeof_${version}_${arch}.buildinfo" "../nvmeof_${version}_${arch}.changes")
for p in "${packages[@]}"; do
    results+=("../${p}_${version}_${arch}.deb")
done
rm -f "${results[@]}"

# nocheck: -Dtests=false builds no test; noautodbgsym: no -dbgsym packages to
# write; werror: warnings are errors here as in every CI build (debian/rules).
echo "deb: dpkg-buildpackage -us -uc -b (log: $out/build.log)"
DEB_BUILD_OPTIONS="werror nocheck noautodbgsym parallel=$(nproc)" \
    dpkg-buildpackage -us -uc -b > "$out/build.log" 2>&1 || {
    # The errors and warnings (dh_missing names the files it found no package
    # for in its warnings), then the tree as it was.
    grep -E '(error|warning):|^FAILED:|Unmet build dependencies' "$out/build.log" | tail -n 30 || true
    cause=$(grep -m1 -E ': error:|^FAILED:|Unmet build dependencies' "$out/build.log" || echo "see the log")
    debian/rules clean > "$out/clean.log" 2>&1 || true
    fail "dpkg-buildpackage failed: $cause (log: $out/build.log)"
}
# What meson installed, for the man page checks below, before the clean
# removes the build directory.
meson introspect "obj-$(dpkg-architecture -qDEB_HOST_GNU_TYPE)" --installed > "$out/meson-installed.json" ||
    fail "meson introspect --installed failed on the package build's directory"
for f in "${results[@]}"; do
    [ -f "$f" ] || fail "dpkg-buildpackage did not write $f"
    mv "$f" "$out/"
done
debian/rules clean > "$out/clean.log" 2>&1 || fail "debian/rules clean failed; see $out/clean.log"
debs=()
for p in "${packages[@]}"; do
    debs+=("$out/${p}_${version}_${arch}.deb")
done

# Installed, with whatever they depend on that the machine lacks; everything
# new is purged at the end.
before=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | awk '$1 == "ii" { print $2 }' | sort)
apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${debs[@]}" > "$out/install.log" 2>&1 || {
    tail -n 20 "$out/install.log"
    # Whatever dpkg unpacked before the failure goes again.
    mapfile -t added < <(comm -13 <(echo "$before") <(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' |
                                                    awk '$1 != "un" { print $2 }' | sort))
    fail "apt-get install of the packages failed (the end of its log is above)"
}
mapfile -t added < <(comm -13 <(echo "$before") <(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' |
                                                awk '$1 == "ii" { print $2 }' | sort))
echo "deb: installed ${added[*]}"

# From here on only installed paths: a folder outside the clone, system
# folders on PATH (not the clone's, not pyenv's), nothing preloaded or added
# to the library and module search paths.
work=$(mktemp -d)
cd "$work"
sys_env=(env -u LD_LIBRARY_PATH -u LD_PRELOAD -u PYTHONPATH -u PYTHONHOME PATH=/usr/sbin:/usr/bin:/sbin:/bin)
run=/usr/bin/softverbs-run
for f in /usr/bin/nvmeof-target /usr/bin/nvmeof-discover /usr/bin/nvmeof-perf "$run" \
         /usr/lib/"$multiarch"/softverbs/libibverbs.so.1 /usr/lib/"$multiarch"/softverbs/librdmacm.so.1 \
         /usr/share/nvmeof/jobs/quickstart.fio; do
    [ -e "$f" ] || fail "$f is not installed"
done
engine=$(dpkg -L fio-nvmeof | grep '/fio/libfio_nvmeof\.so$' || true)
[ -n "$engine" ] || fail "dpkg -L fio-nvmeof lists no fio/libfio_nvmeof.so"
libnvmeof=$("${sys_env[@]}" ldd "$engine" | awk '$1 ~ /^libnvmeof\.so/ { print $3 }')
# realpath: with a merged /usr the loader finds it through /lib as well.
[ -n "$libnvmeof" ] && [ "$(realpath "$libnvmeof")" = "$(realpath "/usr/lib/$multiarch/libnvmeof.so.0")" ] ||
    fail "the installed engine loads libnvmeof from '${libnvmeof:-nowhere}', not /usr/lib/$multiarch/libnvmeof.so.0"
"${sys_env[@]}" nvmeof-perf --help > /dev/null 2>&1 || fail "the installed nvmeof-perf --help fails"

nqn=nqn.2026-12.io.nvmeof:deb-check
"${sys_env[@]}" "$run" nvmeof-target --listen 127.0.0.1 --port 0 --subsystem "$nqn" --namespace ram:256M \
    > "$work/ready" 2> "$work/target.log" &
target_pid=$!
. "$root/tools/target-ready.sh"
port=$(target_port "$work/ready" "$target_pid") ||
    fail "the installed nvmeof-target did not start under the installed softverbs-run: $(tail -n 1 "$work/target.log")"
echo "deb: installed nvmeof-target listening on 127.0.0.1:$port"

"${sys_env[@]}" NVMEOF_ENGINE="$engine" NVMEOF_TRADDR=127.0.0.1 NVMEOF_TRSVCID="$port" NVMEOF_SUBNQN="$nqn" \
    "$run" fio /usr/share/nvmeof/jobs/quickstart.fio > "$work/fio.log" 2>&1 || {
    tail -n 20 "$work/fio.log"
    fail "fio with the installed engine and /usr/share/nvmeof/jobs/quickstart.fio failed (the end of its output is above)"
}
grep -q 'quickstart: (groupid=0, jobs=1): err= 0' "$work/fio.log" ||
    fail "fio ran the installed quickstart job but reported no 'err= 0' for it"
echo "deb: fio $(dpkg-query -W -f='${Version}' fio) ran /usr/share/nvmeof/jobs/quickstart.fio with $engine: err= 0"

"${sys_env[@]}" "$run" nvmeof-discover -t rdma -a 127.0.0.1 -s "$port" > "$work/discover.log" 2>&1 ||
    fail "the installed nvmeof-discover failed: $(tail -n 1 "$work/discover.log")"
grep -q "$nqn" "$work/discover.log" || fail "the installed nvmeof-discover did not list $nqn"
echo "deb: installed nvmeof-discover lists $nqn"

# The README's snippet as written, with the port given since the target took a
# free one; -I: nothing from the current folder, the user's site or PYTHON*.
snippet='
import sys
import nvmeof
target_ip, subsystem_nqn, initiator_ip, port, version = sys.argv[1:6]
with nvmeof.Controller.connect(target_ip, subsystem_nqn, source=initiator_ip, port=int(port)) as controller:
    namespace = controller.namespace(1)
    with controller.allocate(4096) as block:
        namespace.read(block, slba=0, blocks=1)
        payload = block.read()
for module in (nvmeof, nvmeof._core):
    assert module.__file__.startswith("/usr/lib/python3/dist-packages/nvmeof/"), module.__file__
assert nvmeof.__version__ == version, (nvmeof.__version__, version)
assert len(payload) == 4096, len(payload)
print(f"nvmeof {nvmeof.__version__} from {nvmeof.__file__}: read LBA 0, {len(payload)} bytes")
'
"${sys_env[@]}" "$run" /usr/bin/python3 -I -c "$snippet" 127.0.0.1 "$nqn" 127.0.0.1 "$port" "$version" \
    > "$work/python.log" 2>&1 || {
    tail -n 20 "$work/python.log"
    fail "the README's Python snippet failed with the installed python3-nvmeof: $(tail -n 1 "$work/python.log")"
}
echo "deb: /usr/bin/python3: $(tail -n 1 "$work/python.log")"

kill -TERM "$target_pid"
wait "$target_pid" 2>/dev/null || true
target_pid=""

# The file lists: the engine (above), every job of the clone's jobs/, and each
# man page in the package meant for it.
echo "deb: dpkg -L fio-nvmeof:"
dpkg -L fio-nvmeof | sed 's/^/    /'
for job in "$root"/jobs/*.fio; do
    dpkg -L fio-nvmeof | grep -qx "/usr/share/nvmeof/jobs/$(basename "$job")" ||
        fail "fio-nvmeof does not hold /usr/share/nvmeof/jobs/$(basename "$job")"
done
for entry in fio-nvmeof:man7/fio-nvmeof.7 nvmeof-tools:man1/nvmeof-target.1 \
             nvmeof-tools:man1/nvmeof-discover.1 nvmeof-tools:man1/nvmeof-perf.1; do
    pkg=${entry%%:*} page=/usr/share/man/${entry#*:}
    dpkg -L "$pkg" | grep -qE "^${page//./\\.}(\\.gz)?$" || fail "$pkg does not hold $page"
done

purged=("${added[@]}")
cleanup
for p in "${purged[@]}"; do
    state=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
    case "$state" in
        "" | un*) ;;
        *) fail "$p is still on the machine after apt-get purge (dpkg state '$state')" ;;
    esac
done
echo "deb: ok (${#debs[@]} packages built, installed, used from their installed paths and purged: ${purged[*]})"
