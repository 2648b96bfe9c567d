#!/usr/bin/env bash
# Fetches the Debian source of the installed fio, checks its version against
# `fio --version`, and configures it (./configure --disable-native), so the fio
# engine compiles against exactly the headers of the fio that will load it.
#
# Usage: tools/fetch-fio-source.sh [DEST]      (default DEST: .cache/fio-src)
#
# The system's apt state is untouched: a private sources list and private lists
# directory are used. With no installed fio (or FIO_BUILD=1), the source of the
# candidate fio package is fetched and fio itself is built into DEST/fio, so
# the engine and the fio that loads it always come from one tree.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/.cache/fio-src}
die() { echo "fetch-fio-source: $*" >&2; exit 1; }

command -v apt-get >/dev/null || die "apt-get is needed (Debian/Ubuntu)"
command -v dpkg-source >/dev/null || die "dpkg-source is needed: apt-get install dpkg-dev"

installed_version=""
if command -v fio >/dev/null; then
    installed_version=$(fio --version | sed -n 's/^fio-//p')
fi
build_fio=${FIO_BUILD:-0}
if [ -z "$installed_version" ]; then
    build_fio=1
fi

# A configured tree for the installed fio, kept machine-wide by an earlier
# clone's run: copied instead of fetched and configured again.
machine_copy="${NVMEOF_MACHINE_CACHE:-/var/cache/nvmeof}/fio-src-${installed_version:-none}"
if [ ! -f "$dest/config-host.h" ] && [ "$build_fio" = 0 ] && [ -n "$installed_version" ] &&
    [ -f "$machine_copy/.nvmeof-fio-version" ]; then
    mkdir -p "$(dirname "$dest")"
    cp -a "$machine_copy" "$dest.tmp.$$" && mv "$dest.tmp.$$" "$dest"
    echo "fetch-fio-source: copied configured fio $installed_version from $machine_copy"
fi

if [ -f "$dest/config-host.h" ] && [ -f "$dest/.nvmeof-fio-version" ]; then
    have=$(cat "$dest/.nvmeof-fio-version")
    if [ -n "$installed_version" ] && [ "$have" = "$installed_version" ] && [ "$build_fio" = 0 ]; then
        echo "fetch-fio-source: $dest already holds configured fio $have"
        exit 0
    fi
    if [ "$build_fio" = 1 ] && [ -x "$dest/fio" ]; then
        echo "fetch-fio-source: $dest already holds fio $have, built"
        exit 0
    fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/sources.list.d" "$work/lists/partial" "$work/cache/archives/partial"
# Source entries mirroring the system's binary ones.
for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" > "$work/sources.list.d/$(basename "$f")"
done
if [ -f /etc/apt/sources.list ]; then
    sed -n 's/^deb /deb-src /p' /etc/apt/sources.list > "$work/sources.list.d/system.list"
fi
apt_private=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/sources.list.d"
             -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o Debug::NoLocking=1
             -o APT::Sandbox::User=root)
echo "fetch-fio-source: updating private source lists"
apt-get "${apt_private[@]}" -qq update

package_version=""
if [ -n "$installed_version" ]; then
    package_version=$(dpkg-query -W -f='${Version}' fio 2>/dev/null || true)
fi
spec=fio
[ -n "$package_version" ] && spec="fio=$package_version"
echo "fetch-fio-source: fetching the source of $spec"
(cd "$work" && apt-get "${apt_private[@]}" -qq source "$spec" >/dev/null)
tree=$(find "$work" -maxdepth 1 -type d -name 'fio-*' | head -n 1)
[ -n "$tree" ] || die "apt-get source $spec produced no source tree"

source_version=$(sed -n 's/^DEF_VER=fio-//p' "$tree/FIO-VERSION-GEN")
[ -n "$source_version" ] || die "cannot read DEF_VER from $tree/FIO-VERSION-GEN"
if [ -n "$installed_version" ] && [ "$source_version" != "$installed_version" ]; then
    # The fio on PATH is not Debian's (or not this release's): build fio from
    # this source too, and use that one with the engine.
    echo "fetch-fio-source: installed fio is $installed_version, source is $source_version:" \
         "building fio $source_version into $dest/fio" >&2
    build_fio=1
fi

rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tree" "$dest"
echo "fetch-fio-source: configuring fio $source_version in $dest"
(cd "$dest" && ./configure --disable-native >"$dest/configure.log" 2>&1) ||
    die "fio ./configure failed; see $dest/configure.log"
if [ "$build_fio" = 1 ]; then
    echo "fetch-fio-source: building fio $source_version (no matching fio is installed)"
    make -C "$dest" -j"$(nproc)" fio >"$dest/build.log" 2>&1 || die "building fio failed; see $dest/build.log"
fi
echo "$source_version" > "$dest/.nvmeof-fio-version"
if [ "$build_fio" = 0 ] && [ "$source_version" = "$installed_version" ] &&
    mkdir -p "$(dirname "$machine_copy")" 2>/dev/null; then
    rm -rf "$machine_copy.tmp.$$"
    cp -a "$dest" "$machine_copy.tmp.$$" 2>/dev/null && rm -rf "$machine_copy" &&
        mv "$machine_copy.tmp.$$" "$machine_copy" || rm -rf "$machine_copy.tmp.$$"
fi
echo "fetch-fio-source: ready: $dest (fio $source_version)"
