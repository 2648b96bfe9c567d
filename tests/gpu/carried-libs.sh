# Sourced by the GPU machine's scripts with CARRY set (tools/device-carry.sh's
# folder): puts the carried libraries that machine lacks on LD_LIBRARY_PATH.
EXTRA=/tmp/device-lib-extra
mkdir -p "$EXTRA"
for lib in "$CARRY"/lib-fallback/*; do
    name=$(basename "$lib")
    ldconfig -p | grep -q "^[[:space:]]*$name " || { cp "$lib" "$EXTRA/"; echo "using the carried $name"; }
done
export LD_LIBRARY_PATH=$EXTRA${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
