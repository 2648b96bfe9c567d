# Sourced by the build scripts: the compiler cache (meson uses ccache when it
# is on PATH) shared by every clone and build directory on the machine. Paths
# under the repository are hashed relative to it and the build directory is
# not hashed, so a fresh clone (CI's) hits what an earlier clone compiled.
root_for_ccache=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CCACHE_BASEDIR="$root_for_ccache"
export CCACHE_NOHASHDIR=true
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-12G}"
# The cache's folder named outright: debhelper (compat 13) runs the package
# build with HOME set to a folder under debian/ that its clean removes, where
# ccache's default folder would start empty on every package build.
if [ -z "${CCACHE_DIR:-}" ] && command -v ccache >/dev/null; then
    CCACHE_DIR=$(ccache -k cache_dir) && export CCACHE_DIR
fi
unset root_for_ccache
