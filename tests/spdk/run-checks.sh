#!/usr/bin/env bash
# SPDK v26.05 as a peer, both directions, over softverbs (and TCP) on this machine:
#   - SPDK's fio plugin (spdk_nvme) against nvmeof-target: a plain namespace, PI namespaces
#     (512+8 and 4096+8 type 1 with pi_act=1; type 1 and 3 with pi_act=0; 4096+16 with the
#     64-bit guard), an attach through our discovery service, and NVMe/TCP (nvmeof-target
#     --transport tcp, with and without digests);
#   - our fio engine (plain, and a PI malloc bdev with pi_act=0), nvmeof-discover and the Python
#     package against SPDK's nvmf_tgt, over RDMA and over NVMe/TCP (the engine with and
#     without digests).
# SPDK is built once per source archive (the peer's build.sh) into a cache outside the clone,
# keyed by the archive's sha256. Prints one line per check and a closing summary:
#   ok     NAME (S s)
#   FAILED NAME (S s): why        followed by SPDK's *ERROR* lines and the end of each log
#   N passed, N failed
# and exits 0 only if every check passed.
#
#   tests/spdk/run-checks.sh [CHECK...]          (as root; default: every check)
#
# Environment: NVMEOF_BUILD_DIR  the build under test (default REPO/build, from tools/test.sh);
#              SPDK_PEER         the folder with SPDK's archive, build.sh and spdk-ns.sh
#                                (default REPO/../shared/peers/spdk, else /work/shared/peers/spdk);
#              SPDK_CACHE        where builds are kept (default /var/cache/nvmeof-ci);
#              SPDK_STEP_TIMEOUT seconds each step (a fio run, a target start, ...) may take
#                                before it is killed and its check fails (default 60).
# Logs: REPO/.cache/spdk/last-run/ (spdk-build.log, nvmf_tgt.log, rpc.log, CHECK/*.log).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(realpath -m "${NVMEOF_BUILD_DIR:-$repo/build}")
cache=${SPDK_CACHE:-/var/cache/nvmeof-ci}
step_timeout=${SPDK_STEP_TIMEOUT:-60}
out=$repo/.cache/spdk/last-run
softverbs_run=$build/softverbs/softverbs-run
. "$repo/tools/target-ready.sh"

all=(spdk-plugin-to-ours-plain spdk-plugin-to-ours-pi512+8-pract1 spdk-plugin-to-ours-pi4096+8-pract1
     spdk-plugin-to-ours-type1-pract0 spdk-plugin-to-ours-type3-pract0 spdk-plugin-to-ours-guard64
     spdk-plugin-discovery spdk-plugin-to-ours-tcp spdk-plugin-to-ours-tcp-digests ours-to-nvmf_tgt-plain ours-to-nvmf_tgt-pi ours-to-nvmf_tgt-type3
     ours-to-nvmf_tgt-tcp ours-to-nvmf_tgt-tcp-digests
     discover-to-nvmf_tgt
     python-to-nvmf_tgt python-to-nvmf_tgt-tcp)
checks=("$@")
[ ${#checks[@]} -gt 0 ] || checks=("${all[@]}")
for c in "${checks[@]}"; do
    case " ${all[*]} " in *" $c "*) ;; *) echo "run-checks: no check named '$c' (checks: ${all[*]})" >&2; exit 2 ;; esac
done

die() { echo "run-checks: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root: DPDK needs hugepages and spdk-ns.sh a private mount namespace"
for f in target/nvmeof-target engine/libfio_nvmeof.so cli/nvmeof-discover softverbs/softverbs-run python/nvmeof; do
    [ -e "$build/$f" ] || die "$build/$f is missing: build first (tools/test.sh, or ninja -C $build)"
done
peer=${SPDK_PEER:-}
if [ -z "$peer" ]; then
    for d in "$repo/../shared/peers/spdk" /work/shared/peers/spdk; do
        [ -f "$d/build.sh" ] && { peer=$d; break; }
    done
fi
archive=${peer:+$peer/spdk-v26.05-src.tar.gz}
[ -n "$peer" ] && [ -f "$archive" ] && [ -x "$peer/build.sh" ] && [ -x "$peer/spdk-ns.sh" ] ||
    die "no SPDK peer folder (spdk-v26.05-src.tar.gz, build.sh, spdk-ns.sh): set SPDK_PEER"
fio_src=$repo/.cache/fio-src
[ -d "$fio_src" ] || "$repo/tools/fetch-fio-source.sh" >/dev/null || die "no configured fio source in $fio_src"

rm -rf "$out"
mkdir -p "$out"
t0=$SECONDS

# --- SPDK, built once per archive ---------------------------------------------------------
sha=$(sha256sum "$archive" | cut -d' ' -f1)
spdk_out=$cache/spdk-$sha
spdk=$spdk_out/spdk
mkdir -p "$cache"
# One build at a time per archive: a second CI run on this machine waits for the first.
if ! flock "$cache/spdk-$sha.lock" "$peer/build.sh" "$spdk_out" "$fio_src" > "$out/spdk-build.log" 2>&1; then
    tail -n 30 "$out/spdk-build.log"
    die "SPDK's build failed (log: $out/spdk-build.log)"
fi
echo "$(tail -n 1 "$out/spdk-build.log") ($((SECONDS - t0)) s)"
spdk_libs=$spdk/build/lib:$spdk/isa-l/.libs:$spdk/isa-l-crypto/.libs
plugin=$spdk/build/fio/spdk_nvme

# --- hugepages, as DPDK wants them ----------------------------------------------------------
hugepages=1024
hugepages_before=$(cat /proc/sys/vm/nr_hugepages)
[ "$hugepages_before" -ge $hugepages ] || echo $hugepages > /proc/sys/vm/nr_hugepages
mountpoint -q /dev/hugepages || { mkdir -p /dev/hugepages && mount -t hugetlbfs none /dev/hugepages; } ||
    die "cannot mount hugetlbfs on /dev/hugepages"
free_pages=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
# At most about 220 of them were in use in a run here (nvmf_tgt with its two malloc bdevs).
[ "$free_pages" -ge 256 ] || die "only $free_pages hugepages are free (DPDK needs about 256): see /proc/meminfo"

# stop_pid PID: SIGTERM, then SIGKILL after 10 s; reaps it (a child of this shell).
stop_pid() {
    kill -TERM "$1" 2>/dev/null || return 0
    for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

# --- helpers (run inside a check's subshell; $log is the check's folder) ---------------------
# why TEXT: the reason the check failed, printed on its FAILED line.
why() { echo "$*" > "$log/why"; return 1; }

# step NAME LOGFILE CMD...: runs CMD bounded by the step timeout, appending its output to LOGFILE.
step() {
    local name=$1 file=$2 rc=0
    shift 2
    echo "+ $*" >> "$file"
    timeout -k 5 "$step_timeout" "$@" >> "$file" 2>&1 || rc=$?
    case $rc in
        0) return 0 ;;
        124 | 137) why "$name: timed out after $step_timeout s" ;;
        13[0-9] | 14[0-9]) why "$name: killed by SIG$(kill -l $((rc - 128))) (log: ${file#"$repo"/})" ;;
        *) why "$name: exit $rc (log: ${file#"$repo"/})" ;;
    esac
}

# ours NAMESPACE [TARGET-ARG...]: starts nvmeof-target serving NAMESPACE as $ours_nqn on a
# free port ($ours_port).
ours_nqn=nqn.2026-12.io.nvmeof:spdk-peer
ours() {
    local namespace=$1
    shift
    "$softverbs_run" "$build/target/nvmeof-target" --listen 127.0.0.1 --port 0 \
        --subsystem "$ours_nqn" --namespace "$namespace" "$@" > "$log/target.out" 2> "$log/target.log" &
    ours_pid=$!
    ours_port=$(target_port "$log/target.out" "$ours_pid") ||
        why "nvmeof-target --namespace $1 did not start: $(tail -n 1 "$log/target.log")"
}
stop_ours() {
    [ -n "${ours_pid:-}" ] || return 0
    stop_pid "$ours_pid"
    ours_pid=""
}

# plugin JOB SUBNQN FIO-ARGS...: SPDK's fio plugin against our target (fio threads only; the
# NQN's colons escaped, as fio splits filename at ':'), over $plugin_trtype (RDMA unless set).
# A run with no 'err= 0' fails too.
plugin() {
    local job=$1 subnqn=${2//:/\\:}
    shift 2
    local trid="trtype=${plugin_trtype:-RDMA} adrfam=IPv4 traddr=127.0.0.1 trsvcid=$ours_port subnqn=$subnqn ns=1"
    (cd "$log" && step "SPDK's fio plugin, job $job" "$log/fio.log" env LD_LIBRARY_PATH="$spdk_libs" \
        "$peer/spdk-ns.sh" "$softverbs_run" fio --thread=1 --ioengine="$plugin" --filename="$trid" \
        --name="$job" "$@") || return 1
    grep -q "^$job: (groupid=0, jobs=1): err= 0" "$log/fio.log" || why "SPDK's fio plugin, job $job: no 'err= 0'"
}

# engine JOB FIO-ARGS...: our fio engine against nvmf_tgt.
engine() {
    local job=$1
    shift
    (cd "$log" && step "our fio engine, job $job" "$log/fio.log" "$softverbs_run" fio \
        --ioengine="external:$build/engine/libfio_nvmeof.so" --traddr=127.0.0.1 --trsvcid="$tgt_port" \
        --name="$job" "$@") || return 1
    grep -q "^$job: (groupid=0, jobs=1): err= 0" "$log/fio.log" || why "our fio engine, job $job: no 'err= 0'"
}

# A few MiB each: written, then every block read back and checked.
verify=(--verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0)
every_check=("--pi_chk=GUARD,REFTAG,APPTAG" --apptag=0x1234 --apptag_mask=0xffff)

# --- SPDK's fio plugin -> nvmeof-target ------------------------------------------------------
check_plugin_plain() {
    ours ram:16M || return 1
    plugin plain "$ours_nqn" --rw=randwrite --bs=4k --size=4M --iodepth=16 "${verify[@]}"
}
# pi_act=1 on 8 bytes of PI: the controller inserts and strips it, only data travels (bs 4k).
check_plugin_pi512_pract1() {
    ours ram:16M:512+8:pi1 || return 1
    plugin pi512 "$ours_nqn" --rw=randwrite --bs=4k --size=4M --iodepth=16 --pi_act=1 "${every_check[@]}" "${verify[@]}"
}
check_plugin_pi4096_pract1() {
    ours ram:16M:4096+8:pi1 || return 1
    plugin pi4096 "$ours_nqn" --rw=randwrite --bs=8k --size=4M --iodepth=16 --pi_act=1 "${every_check[@]}" "${verify[@]}"
}
# pi_act=0: the plugin generates the PI into fio's buffer after fio checksummed it, so fio's
# verify fails against any target (SPDK's own nvmf_tgt too). Instead a write pass (the target
# checks the host's PI as pi_chk asks) and a read pass (the target checks what it stored, and
# the plugin checks it again on completion, guard, reference and application tags).
pract0_write_read() {   # FORMAT BS
    ours "$1" || return 1
    local size=$(($2 * 256))
    plugin write "$ours_nqn" --rw=write --bs="$2" --size=$size --iodepth=16 --pi_act=0 "${every_check[@]}" || return 1
    plugin read "$ours_nqn" --rw=read --bs="$2" --size=$size --iodepth=16 --pi_act=0 "${every_check[@]}"
}
check_plugin_type1_pract0() { pract0_write_read ram:16M:512+8:pi1 $((8 * (512 + 8))); }
check_plugin_type3_pract0() { pract0_write_read ram:16M:4096+8:pi3 $((2 * (4096 + 8))); }
# The 64-bit guard: the plugin's own PI code knows only the 16-bit guard (pi_act=0 would
# generate a 16-bit-guard PI into the 16 bytes), so pi_act=1: the controller generates the
# PI. SPDK leaves the metadata out of the transfer only when it is 8 bytes, so each block
# travels as 4096+16 and comes back with the controller's PI in place of what fio wrote there:
# fio's verify cannot match. A write pass and a read pass the controller checks instead.
check_plugin_guard64() {
    ours ram:16M:4096+16:pi1:guard64 || return 1
    plugin write "$ours_nqn" --rw=write --bs=4112 --size=$((4112 * 256)) --iodepth=16 --pi_act=1 "${every_check[@]}" || return 1
    plugin read "$ours_nqn" --rw=read --bs=4112 --size=$((4112 * 256)) --iodepth=16 --pi_act=1 "${every_check[@]}"
}
# NVMe/TCP: reads and writes from 512 B to 256 KiB (in the capsule, through R2T and H2CData,
# back in several C2HData PDUs), without digests and with both.
check_plugin_tcp() {
    ours ram:32M --transport tcp || return 1
    plugin_trtype=TCP plugin tcp "$ours_nqn" --rw=randrw --bsrange=512-256k --size=16M --iodepth=32 \
        "${verify[@]}"
}
check_plugin_tcp_digests() {
    ours ram:32M --transport tcp || return 1
    plugin_trtype=TCP plugin tcp-digests "$ours_nqn" --digest_enable=BOTH --rw=randrw --bsrange=512-256k \
        --size=16M --iodepth=32 "${verify[@]}"
}
# No subsystem NQN but the discovery NQN: the plugin (spdk_nvme_probe) reads our discovery
# log and attaches every NVMe subsystem it lists, the one here.
check_plugin_discovery() {
    ours ram:16M || return 1
    plugin discovery nqn.2014-08.org.nvmexpress.discovery --rw=randwrite --bs=4k --size=4M --iodepth=16 "${verify[@]}"
}

# --- our side -> nvmf_tgt --------------------------------------------------------------------
# One nvmf_tgt serves these checks: cnode1 a plain 4096-byte malloc bdev, cnode2 a 4096+8
# type 1 PI one (interleaved), cnode3 a 4096+8 type 3 one, all listening on one port, with
# the discovery service there.
tgt_plain=nqn.2016-06.io.spdk:cnode1
tgt_pi=nqn.2016-06.io.spdk:cnode2
tgt_pi3=nqn.2016-06.io.spdk:cnode3
tgt_tcp=nqn.2016-06.io.spdk:cnode4   # 512-byte blocks, NVMe/TCP only
tgt_pid=""
tgt_state=""     # "", "up", or why it failed
tgt_sock=/run/nvmeof-spdk-checks-$$.sock
rpc() { timeout -k 5 "$step_timeout" /usr/bin/python3 "$spdk/scripts/rpc.py" -s "$tgt_sock" "$@" >> "$out/rpc.log" 2>&1; }
start_nvmf_tgt() {
    tgt_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    tgt_tcp_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    LD_LIBRARY_PATH="$spdk_libs" "$peer/spdk-ns.sh" "$softverbs_run" "$spdk/build/bin/nvmf_tgt" \
        -m 0x1 -u -r "$tgt_sock" > "$out/nvmf_tgt.log" 2>&1 &
    tgt_pid=$!
    local started=$SECONDS
    for _ in $(seq $((step_timeout * 10))); do
        [ -S "$tgt_sock" ] && break
        kill -0 "$tgt_pid" 2>/dev/null || { tgt_state="nvmf_tgt exited at start"; return 1; }
        sleep 0.1
    done
    [ -S "$tgt_sock" ] || { tgt_state="nvmf_tgt made no RPC socket in $step_timeout s"; return 1; }
    local disc=nqn.2014-08.org.nvmexpress.discovery
    rpc framework_wait_init &&
        rpc nvmf_create_transport -t RDMA &&
        rpc nvmf_create_transport -t TCP &&
        rpc bdev_malloc_create -b plain0 32 4096 &&
        rpc bdev_malloc_create -b pi0 32 4096 -m 8 -i -t 1 &&
        rpc bdev_malloc_create -b pi3 32 4096 -m 8 -i -t 3 &&
        rpc bdev_malloc_create -b tcp512 32 512 &&
        rpc nvmf_create_subsystem "$tgt_plain" -a -s SPDK0001 &&
        rpc nvmf_subsystem_add_ns "$tgt_plain" plain0 &&
        rpc nvmf_subsystem_add_listener "$tgt_plain" -t rdma -a 127.0.0.1 -s "$tgt_port" &&
        rpc nvmf_subsystem_add_listener "$tgt_plain" -t tcp -a 127.0.0.1 -s "$tgt_tcp_port" &&
        rpc nvmf_create_subsystem "$tgt_tcp" -a -s SPDK0004 &&
        rpc nvmf_subsystem_add_ns "$tgt_tcp" tcp512 &&
        rpc nvmf_subsystem_add_listener "$tgt_tcp" -t tcp -a 127.0.0.1 -s "$tgt_tcp_port" &&
        rpc nvmf_create_subsystem "$tgt_pi" -a -s SPDK0002 &&
        rpc nvmf_subsystem_add_ns "$tgt_pi" pi0 &&
        rpc nvmf_subsystem_add_listener "$tgt_pi" -t rdma -a 127.0.0.1 -s "$tgt_port" &&
        rpc nvmf_create_subsystem "$tgt_pi3" -a -s SPDK0003 &&
        rpc nvmf_subsystem_add_ns "$tgt_pi3" pi3 &&
        rpc nvmf_subsystem_add_listener "$tgt_pi3" -t rdma -a 127.0.0.1 -s "$tgt_port" &&
        rpc nvmf_subsystem_add_listener "$disc" -t rdma -a 127.0.0.1 -s "$tgt_port" ||
        { tgt_state="nvmf_tgt's configuration failed: $(grep -m1 -i 'error\|exception' "$out/rpc.log")"; return 1; }
    tgt_state=up
    echo "spdk: nvmf_tgt (pid $tgt_pid) serving $tgt_plain, $tgt_pi and $tgt_pi3 on 127.0.0.1:$tgt_port (RDMA), $tgt_plain and $tgt_tcp on 127.0.0.1:$tgt_tcp_port (TCP) ($((SECONDS - started)) s)"
}
stop_nvmf_tgt() {
    [ -n "$tgt_pid" ] || return 0
    stop_pid "$tgt_pid"
    tgt_pid=""
    rm -f "$tgt_sock"
}

check_ours_plain() {
    engine plain --subnqn="$tgt_plain" --rw=randwrite --bs=4k --size=4M --iodepth=16 "${verify[@]}"
}
# NVMe/TCP: randrw from 512 B to 4 MiB on 512-byte blocks (above nvmf_tgt's 128 KiB MDTS: split;
# writes above its in-capsule size answered by R2Ts), four jobs on two I/O queues each, without
# and with digests.
check_ours_tcp() {
    local digest=${1:-NONE}
    engine "tcp-$digest" --subnqn="$tgt_tcp" --trtype=tcp --trsvcid="$tgt_tcp_port" \
        --digest_enable="$digest" --nr_io_queues=2 --rw=randrw --bssplit=512/10:4k/40:64k/20:1m/20:4m/10 \
        --iodepth=32 --numjobs=4 --size=6M --offset_increment=6M "${verify[@]}"
}
check_ours_tcp_digests() { check_ours_tcp BOTH; }
# pi_act=0 in the data-only layout (bs 4k on 4096+8): the engine generates the PI in its own
# bounce area after fio checksummed the data, so fio's verify works here.
check_ours_pi() {
    engine pi --subnqn="$tgt_pi" --rw=randwrite --bs=4k --size=4M --iodepth=16 --pi_act=0 \
        "${every_check[@]}" "${verify[@]}"
}
# Type 3 the other way round from spdk-plugin-to-ours-type3-pract0: our engine's PI (reference
# tag checked as asked) against SPDK's target, which leaves a type 3 reference tag unchecked.
check_ours_pi3() {
    engine pi3 --subnqn="$tgt_pi3" --rw=randwrite --bs=4k --size=4M --iodepth=16 --pi_act=0 \
        "${every_check[@]}" "${verify[@]}"
}
check_discover() {
    step "nvmeof-discover" "$log/discover.log" "$softverbs_run" "$build/cli/nvmeof-discover" \
        -t rdma -a 127.0.0.1 -s "$tgt_port" || return 1
    step "nvmeof-discover -o json" "$log/discover.json" "$softverbs_run" "$build/cli/nvmeof-discover" \
        -t rdma -a 127.0.0.1 -s "$tgt_port" -o json || return 1
    local nqn
    for nqn in "$tgt_plain" "$tgt_pi"; do
        grep -q "$nqn" "$log/discover.log" || { why "nvmeof-discover does not list $nqn"; return; }
        python3 - "$log/discover.json" "$nqn" "$tgt_port" <<'EOF' || { why "nvmeof-discover -o json has no rdma record of $nqn at 127.0.0.1:$tgt_port"; return; }
import json, sys
text = open(sys.argv[1]).read()
records = json.loads(text[text.index("{"):])["records"]
sys.exit(not any(r["subnqn"] == sys.argv[2] and r["trtype"] == "rdma" and r["traddr"] == "127.0.0.1"
                 and r["trsvcid"] == sys.argv[3] for r in records))
EOF
    done
}
check_python() {
    step "python3 python_roundtrip.py" "$log/python.log" env PYTHONPATH="$build/python" PYTHONDONTWRITEBYTECODE=1 \
        "$softverbs_run" /usr/bin/python3 "$here/python_roundtrip.py" 127.0.0.1 "$tgt_port" "$tgt_plain"
}
check_python_tcp() {
    step "python3 python_roundtrip.py (tcp)" "$log/python.log" env PYTHONPATH="$build/python" \
        PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$here/python_roundtrip.py" 127.0.0.1 "$tgt_tcp_port" \
        "$tgt_plain" tcp
}

# --- running the checks ------------------------------------------------------------------------
function_of() {
    case $1 in
        spdk-plugin-to-ours-plain) echo check_plugin_plain ;;
        spdk-plugin-to-ours-pi512+8-pract1) echo check_plugin_pi512_pract1 ;;
        spdk-plugin-to-ours-pi4096+8-pract1) echo check_plugin_pi4096_pract1 ;;
        spdk-plugin-to-ours-type1-pract0) echo check_plugin_type1_pract0 ;;
        spdk-plugin-to-ours-type3-pract0) echo check_plugin_type3_pract0 ;;
        spdk-plugin-to-ours-guard64) echo check_plugin_guard64 ;;
        spdk-plugin-discovery) echo check_plugin_discovery ;;
        spdk-plugin-to-ours-tcp) echo check_plugin_tcp ;;
        spdk-plugin-to-ours-tcp-digests) echo check_plugin_tcp_digests ;;
        ours-to-nvmf_tgt-plain) echo check_ours_plain ;;
        ours-to-nvmf_tgt-pi) echo check_ours_pi ;;
        ours-to-nvmf_tgt-type3) echo check_ours_pi3 ;;
        discover-to-nvmf_tgt) echo check_discover ;;
        python-to-nvmf_tgt) echo check_python ;;
        python-to-nvmf_tgt-tcp) echo check_python_tcp ;;
        ours-to-nvmf_tgt-tcp) echo check_ours_tcp ;;
        ours-to-nvmf_tgt-tcp-digests) echo check_ours_tcp_digests ;;
    esac
}

# What a failure shows: SPDK's *ERROR* lines, then the end of every log of the check (and the
# part of nvmf_tgt's log written during it).
show_failure() {
    local dir=$1 tgt_from=$2 f
    [ -f "$out/nvmf_tgt.log" ] && tail -n +"$tgt_from" "$out/nvmf_tgt.log" > "$dir/nvmf_tgt.log"
    # Each *ERROR* message once (without its timestamp), with how often it came.
    grep -h '\*ERROR\*' "$dir"/*.log 2>/dev/null | awk '
        { m = $0; sub(/^\[[^]]*\] /, "", m); if (!(m in n)) order[++k] = m; n[m]++ }
        END { for (i = 1; i <= k && i <= 30; i++) { c = n[order[i]]; printf "    %s%s\n", (c > 1 ? c " x " : ""), order[i] } }'
    for f in "$dir"/*.log "$dir"/*.json; do
        [ -s "$f" ] || continue
        echo "    --- the end of ${f#"$repo"/}"
        # fio's indented statistics left out: its error lines start at the margin.
        grep -vE '^ {2,}|^\s*$' "$f" | tail -n 15 | sed 's/^/    | /'
    done
}

# The 2 GiB of hugepages go back on the way out: the stages after this one
# (the QEMU guest) want the memory.
trap 'stop_nvmf_tgt; echo "$hugepages_before" > /proc/sys/vm/nr_hugepages' EXIT
pass=0
fail=0
for c in "${checks[@]}"; do
    log=$out/$c
    mkdir -p "$log"
    # nvmf_tgt's lines from here on are this check's (its start's too, for the first).
    tgt_from=1
    [ -f "$out/nvmf_tgt.log" ] && tgt_from=$(($(wc -l < "$out/nvmf_tgt.log") + 1))
    case $c in
        *nvmf_tgt*)
            [ -n "$tgt_state" ] || start_nvmf_tgt
            [ "$tgt_state" = up ] || echo "$tgt_state (log: ${out#"$repo"/}/nvmf_tgt.log)" > "$log/why"
            ;;
    esac
    start=$SECONDS
    if [ ! -f "$log/why" ] && ( ours_pid=""; trap 'stop_ours' EXIT; "$(function_of "$c")" ); then
        echo "ok     $c ($((SECONDS - start)) s)"
        pass=$((pass + 1))
    else
        echo "FAILED $c ($((SECONDS - start)) s): $(cat "$log/why" 2>/dev/null || echo "exit status non-zero")"
        show_failure "$log" "$tgt_from"
        fail=$((fail + 1))
    fi
done
stop_nvmf_tgt
echo "$pass passed, $fail failed ($((SECONDS - t0)) s; logs: ${out#"$repo"/})"
[ "$fail" -eq 0 ]
