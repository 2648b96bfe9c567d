#!/bin/bash
# The interop checks, run inside ONE guest boot (run-in-guest.sh --nvmet).
# Each check appends one line to $INTEROP_OUT/results: "PASS name" or "FAIL name: why".
# Detailed output of every step goes to $INTEROP_OUT/logs/<check>.log; a short progress
# line per step goes to the console.
#
#   checks-guest.sh [CHECK...]     (default: all; names as in the results)
#
# Environment (set by guest-run.sh): INTEROP_ADDR, INTEROP_NVMET_NQN, INTEROP_NVMET_PORT,
# INTEROP_OUT, INTEROP_REPO. NVMEOF_BUILD_DIR selects the build tree (default REPO/build);
# INTEROP_GTEST_FILTER (triage only) is passed to the integration tests as --gtest_filter.
set -uo pipefail

build="${NVMEOF_BUILD_DIR:-$INTEROP_REPO/build}"
engine="$build/engine/libfio_nvmeof.so"
target_bin="$build/target/nvmeof-target"
it_dir="$build/tests/integration"
jobs_dir="$INTEROP_REPO/jobs"
addr="$INTEROP_ADDR"
knqn="$INTEROP_NVMET_NQN"          # kernel target subsystem (any host)
kport="$INTEROP_NVMET_PORT"
rnqn="nqn.2026-12.io.nvmeof:kernel-restricted"   # kernel target subsystem, other host only
our_nqn="nqn.2026-12.io.nvmeof:interop-ours"
our_port_host=4421                 # our target for the Linux host (check 3)
our_port_engine=4422               # our target for our engine (check 4)
our_port_host_tcp=4424             # our target over NVMe/TCP for the Linux host
ktcp_port=4430                     # the kernel target's subsystem over NVMe/TCP (nvmet-tcp)
ktcp_port_id=9
idle_port=4499                     # nothing listens here (check 5)
# Under TCG I/O is ~100x slower than hardware: generous per-I/O timeouts, bounded runs.
io_timeout_ms=60000
step_timeout=300

mkdir -p "$INTEROP_OUT/logs"
results="$INTEROP_OUT/results"
work=/tmp/work/checks; mkdir -p "$work"
log=/dev/null                      # current check's log file
problems=()                        # failed steps of the current check

say() { echo "[$(cut -d' ' -f1 /proc/uptime)s] $*"; echo "== $*" >> "$log"; }
problem() { problems+=("$*"); say "  problem: $*"; }

dmesg_mark=0
begin() { log="$INTEROP_OUT/logs/$1.log"; : > "$log"; problems=(); dmesg_mark="$(dmesg | wc -l)"; say "check $1"; }
finish() {
    local name=$1
    # A kernel diagnosis worth naming in the verdict: an RDMA verbs file opened by one process
    # and used by a forked child (the kernel refuses uverbs write() then: EACCES).
    local forked; forked="$(dmesg | tail -n +"$((dmesg_mark + 1))" | grep -o 'uverbs_write: process [0-9]* ([^)]*) changed security contexts' | head -1)"
    [ -z "$forked" ] || problem "kernel: '$forked after opening file descriptor' (RDMA device context inherited across fork: ibv_post_send gets EACCES)"
    if [ ${#problems[@]} -eq 0 ]; then echo "PASS $name" >> "$results"; say "PASS $name"
    else
        local why; why="$(printf '%s; ' "${problems[@]}")"; why="${why%; }"
        echo "FAIL $name: $why" >> "$results"; say "FAIL $name: $why"
    fi
}

# A shipped job file made short: timed jobs run 2 s, sized jobs move at most 8 MiB per job
# (offset_increment is kept, so numjobs regions stay disjoint).
short_job() {
    local src=$1 dst=$2
    awk '/^runtime=[0-9]+$/ { print "runtime=2"; next }
         /^size=[0-9]+[mMgG]$/ {
             n = substr($0, 6) + 0; u = tolower(substr($0, length($0)));
             mb = (u == "g") ? n * 1024 : n;
             print "size=" (mb > 8 ? 8 : mb) "m"; next }
         { print }' "$src" > "$dst"
}

# run_fio LABEL JOBFILE [fio args...]: runs fio with the engine env set, checks exit 0,
# no job error, some I/O done, and (with verify) that reads happened. Problems recorded.
run_fio() {
    local label=$1 job=$2; shift 2
    local json="$work/$label.json" rc=0
    say "  fio $label"
    timeout -k 10 "$step_timeout" fio --output-format=json --output="$json" "$@" "$job" >> "$log" 2>&1 || rc=$?
    cat "$json" >> "$log" 2>/dev/null
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then problem "$label: fio did not finish within ${step_timeout}s"; return 1; fi
    local verdict
    verdict="$(python3 - "$json" "$job" <<'PY' 2>&1
import json, sys
text = open(sys.argv[1]).read()
data = json.loads(text[text.find("{"):])
errs = [(j["jobname"], j["error"]) for j in data["jobs"] if j["error"]]
ios = sum(j[d]["total_ios"] for j in data["jobs"] for d in ("read", "write"))
verify = "verify=" in open(sys.argv[2]).read()
reads = sum(j["read"]["total_ios"] for j in data["jobs"])
if errs: print("job errors %s" % errs)
elif ios == 0: print("no I/O done")
elif verify and reads == 0: print("verify job read nothing back")
else: print("ok %d ios" % ios)
PY
)"
    if [ $rc -ne 0 ]; then problem "$label: fio exit $rc ($verdict)"; return 1; fi
    case "$verdict" in ok*) say "    $verdict" ;; *) problem "$label: $verdict"; return 1 ;; esac
}

export NVMEOF_ENGINE="$engine" NVMEOF_NSID=""

# Host-built binaries need the host's library versions (run-checks.sh writes them).
if [ -s "$INTEROP_OUT/host-versions" ]; then
    while read -r pkg ver; do
        gver="$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null)"
        [ "$gver" = "$ver" ] || echo "[warning] $pkg: host $ver, guest ${gver:-not installed} (rebuild the image: apt upgrade drift?)"
    done < "$INTEROP_OUT/host-versions"
fi

# Our target in the background; waits for its "listening on" line (bounded).
target_pid=""
start_target() {
    local port=$1; shift
    "$target_bin" --listen "$addr" --port "$port" "$@" > "$work/target.out" 2>> "$log" &
    target_pid=$!
    for _ in $(seq 300); do
        grep -q "listening on" "$work/target.out" 2>/dev/null && return 0
        kill -0 "$target_pid" 2>/dev/null || break
        sleep 0.1
    done
    problem "nvmeof-target did not start on $addr:$port"; stop_target; return 1
}
stop_target() {
    [ -n "$target_pid" ] || return 0
    local rc=0
    kill -TERM "$target_pid" 2>/dev/null
    for _ in $(seq 150); do kill -0 "$target_pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$target_pid" 2>/dev/null; then
        problem "nvmeof-target ignored SIGTERM for 15 s"; kill -KILL "$target_pid"
    fi
    wait "$target_pid" || rc=$?
    [ $rc -eq 0 ] || problem "nvmeof-target exited $rc after SIGTERM"
    target_pid=""
}

# The [global] lines every job written here shares: the engine and the kernel target.
engine_job_header() {
    cat <<JOB
[global]
ioengine=external:\${NVMEOF_ENGINE}
traddr=\${NVMEOF_TRADDR}
trsvcid=\${NVMEOF_TRSVCID}
subnqn=\${NVMEOF_SUBNQN}
io_timeout_ms=$io_timeout_ms
JOB
}

# ---- 1. our fio engine -> kernel nvmet-rdma ---------------------------------------------
check_engine_to_kernel() {
    begin engine-to-kernel
    export NVMEOF_TRADDR="$addr" NVMEOF_TRSVCID="$kport" NVMEOF_SUBNQN="$knqn"
    local j name n=0
    for j in "$jobs_dir"/*.fio; do
        name="$(basename "$j" .fio)"
        # A job that sets the engine's gpu= option needs a GPU (none in the guest).
        if grep -qE '^\s*gpu\s*=' "$j"; then say "  skip $name (needs a GPU)"; continue; fi
        short_job "$j" "$work/$name.fio"
        echo "io_timeout_ms=$io_timeout_ms" >> "$work/$name.fio"
        if [ "$name" = spdk-compat ]; then
            # The target is in filename, which fio splits at ':': the NQN's colons escaped.
            NVMEOF_SUBNQN="${knqn//:/\\:}"
            run_fio "$name" "$work/$name.fio"; n=$((n + 1))
            NVMEOF_SUBNQN="$knqn"
            continue
        fi
        run_fio "$name" "$work/$name.fio"; n=$((n + 1))
    done
    [ $n -gt 0 ] || problem "no job files in $jobs_dir"
    # Thread mode, numjobs > 1 (the process-mode run is multi-job above).
    run_fio multi-job-thread "$work/multi-job.fio" --thread
    # Block sizes above nvmet-rdma's MDTS (1 MiB): each I/O is split into several commands.
    { engine_job_header; cat <<JOB
rw=write
iodepth=2
size=16m
verify=crc32c
verify_state_save=0
verify_fatal=1
[bs-2m]
bs=2m
[bs-4m]
stonewall
bs=4m
offset=32m
JOB
    } > "$work/above-mdts.fio"
    run_fio above-mdts "$work/above-mdts.fio"
    # Keep-alive: the kernel must accept a Connect with KATO and the engine's
    # Keep Alive commands for 4 timeouts. (It also counts I/O as keep-alive
    # traffic; the core tests below keep a host alive with Keep Alive alone.)
    { engine_job_header; cat <<JOB
keep_alive_ms=1000
rw=randread
bs=4k
iodepth=4
time_based=1
runtime=4
[keep-alive]
JOB
    } > "$work/keep-alive.fio"
    run_fio keep-alive "$work/keep-alive.fio"
    # The engine logs the MDTS the kernel target granted (on stderr, into $log, since fio's
    # JSON output holds fio's report alone); 2 MiB must be above it.
    local mdts; mdts="$(grep -ho 'MDTS [0-9]* bytes' "$log" 2>/dev/null | head -1 | awk '{print $2}')"
    if [ -z "$mdts" ]; then say "  (engine did not log the MDTS)"
    elif [ "$mdts" -ge $((2 << 20)) ]; then problem "kernel target MDTS $mdts is not below 2 MiB: above-mdts tests nothing"
    else say "  kernel target MDTS $mdts bytes; 2 MiB and 4 MiB I/Os were split"; fi
    finish engine-to-kernel
}

# ---- 2. core integration tests -> kernel nvmet-rdma ------------------------------------
check_core_to_kernel() {
    begin core-integration-to-kernel
    local t rc tcp_target=""
    # The tests that ask for NVMe/TCP reach the same subsystem on an nvmet-tcp port.
    modprobe nvmet-tcp 2>/dev/null || true
    # shellcheck source=tests/interop/nvmet.sh
    . "$INTEROP_REPO/tests/interop/nvmet.sh"
    if nvmet_port_tcp "$ktcp_port_id" "$addr" "$ktcp_port" && nvmet_link "$ktcp_port_id" "$knqn"; then
        tcp_target="$addr:$ktcp_port"
    else
        problem "could not add an nvmet-tcp port on $addr:$ktcp_port"
    fi
    for t in core_integration_test core_noalloc_test; do
        if [ ! -x "$it_dir/$t" ]; then problem "$t not built"; continue; fi
        say "  $t"
        rc=0
        NVMEOF_TEST_TARGET="$addr:$kport" NVMEOF_TEST_TCP_TARGET="$tcp_target" NVMEOF_TEST_NQN="$knqn" \
            timeout -k 10 600 "$it_dir/$t" --gtest_color=no ${INTEROP_GTEST_FILTER:+--gtest_filter="$INTEROP_GTEST_FILTER"} \
            > "$work/$t.out" 2>&1 || rc=$?
        cat "$work/$t.out" >> "$log"
        grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[ +(OK|FAILED|SKIPPED) ' "$work/$t.out" | sed 's/^/    /' >> "$log"
        local summary; summary="$(grep -E '^\[  PASSED  \]|tests? ran' "$work/$t.out" | tail -1)"
        say "    $summary"
        if [ $rc -ne 0 ]; then
            local failed; failed="$(grep -E '^\[  FAILED  \] [A-Za-z]' "$work/$t.out" | awk '{print $4}' | sort -u | xargs)"
            problem "$t exit $rc${failed:+ (failed: $failed)}"
        fi
    done
    [ -z "$tcp_target" ] || nvmet_unlink "$ktcp_port_id" "$knqn"
    finish core-integration-to-kernel
}

# ---- 3. Linux host (nvme-cli, nvme-rdma) -> our nvmeof-target --------------------------
# host_connect TRTYPE PORT: the Linux host discovers our target over TRTYPE (rdma or tcp) and
# connects to $our_nqn; sets host_connected (1 once nvme connect succeeded), host_dev to
# namespace 1's block device (empty on failure) and host_dmesg_mark to the kernel log's length
# before the connect. Returns 0 once the block device is there.
host_connected=0 host_dev="" host_dmesg_mark=0
host_connect() {
    local trtype=$1 port=$2 out rc=0
    host_connected=0 host_dev=""
    out="$(timeout -k 5 60 nvme discover -t "$trtype" -a "$addr" -s "$port" 2>&1)" || rc=$?
    echo "$out" >> "$log"
    if [ $rc -ne 0 ]; then problem "nvme discover exit $rc: $(echo "$out" | tail -1)"
    elif ! grep -q "subnqn: *$our_nqn" <<< "$out"; then problem "discovery log does not list $our_nqn"
    elif ! grep -q "trtype: *$trtype" <<< "$out"; then problem "discovery log does not name trtype $trtype"
    else say "  discover: $(grep -c '^=====Discovery Log Entry' <<< "$out") record(s)"; fi

    host_dmesg_mark="$(dmesg | wc -l)"
    rc=0
    out="$(timeout -k 5 90 nvme connect -t "$trtype" -a "$addr" -s "$port" -n "$our_nqn" 2>&1)" || rc=$?
    echo "$out" >> "$log"
    if [ $rc -ne 0 ]; then problem "nvme connect exit $rc: $(echo "$out" | tail -1)"; return 1; fi
    host_connected=1
    # The controller (or, with native multipath: our target reports ANA and
    # several controllers, so the namespace is the subsystem's nvmeXnY and the
    # controller holds only the hidden path nvmeXcYnZ) whose subsysnqn is ours;
    # its namespace block device appears shortly.
    local c d dev=""
    for _ in $(seq 100); do
        for c in /sys/class/nvme/nvme* /sys/class/nvme-subsystem/nvme-subsys*; do
            [ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$our_nqn" ] || continue
            for d in "$c"/nvme*n1; do
                [ -b "/dev/${d##*/}" ] && { dev="${d##*/}"; break; }
            done
        done
        [ -n "$dev" ] && [ -b "/dev/$dev" ] && break; dev=""; sleep 0.1
    done
    if [ -z "$dev" ]; then problem "no block device after nvme connect"; dmesg | tail -20 >> "$log"; return 1; fi
    host_dev=$dev
    say "  connected: /dev/$dev ($(cat /sys/block/"$dev"/size) sectors)"
}

# host_disconnect TRTYPE: after host_connect, nvme disconnect (where it connected), the block
# device gone, and no complaint from the kernel host about our controller (e.g. a failed
# Identify) since the connect, but for the lines host_expected_errors (a regex) matches: the
# errors a check provoked.
host_expected_errors=""
host_disconnect() {
    local trtype=$1 out rc=0
    if [ "$host_connected" = 1 ]; then
        out="$(timeout -k 5 60 nvme disconnect -n "$our_nqn" 2>&1)" || rc=$?
        echo "$out" >> "$log"
        if [ $rc -ne 0 ]; then problem "nvme disconnect exit $rc: $out"
        elif ! grep -q "disconnected 1 controller" <<< "$out"; then problem "nvme disconnect: '$out'"
        else say "  $out"; fi
        [ -z "$host_dev" ] || { sleep 1; [ ! -e "/dev/$host_dev" ] || problem "/dev/$host_dev still present after disconnect"; }
    fi
    local complaints; complaints="$(dmesg | tail -n +"$((host_dmesg_mark + 1))" | grep -E 'nvme' |
        grep -iE 'error|fail|invalid|timeout|reset|not supported|warn' |
        grep -vE "${host_expected_errors:-^$}" | head -3)"
    dmesg | tail -n +"$((host_dmesg_mark + 1))" | grep -iE "nvme|$trtype" >> "$log"
    [ -z "$complaints" ] || problem "kernel host logged: $(echo "$complaints" | tr '\n' '|')"
}

# linux_host_to_ours NAME TRTYPE PORT [TARGET OPTION...]: the Linux host discovers, connects
# to, verifies I/O on and disconnects from our target over TRTYPE (rdma or tcp).
linux_host_to_ours() {
    local name=$1 trtype=$2 port=$3; shift 3
    begin "$name"
    start_target "$port" "$@" --subsystem "$our_nqn" --namespace ram:64M || { finish "$name"; return; }
    if host_connect "$trtype" "$port"; then
        local dev=$host_dev
        # DLFEAT: our blocks read as zeroes once deallocated, and nvme-cli says so.
        local dlfeat; dlfeat="$(nvme id-ns "/dev/$dev" -H 2>&1 | grep 'Bytes Read From a Deallocated' | head -1)"
        echo "id-ns: $dlfeat" >> "$log"
        case "$dlfeat" in
            *"Metadata are 0x00"*) say "  id-ns dlfeat: ${dlfeat#*] : }" ;;
            *) problem "nvme id-ns -H: '$dlfeat' (DLFEAT should say all bytes 0x00)" ;;
        esac
        cat > "$work/kernel-host.fio" <<JOB
[kernel-host]
filename=/dev/$dev
ioengine=io_uring
direct=1
rw=randwrite
bs=4k
bsrange=4k-128k
size=16m
iodepth=16
verify=crc32c
verify_state_save=0
verify_fatal=1
do_verify=1
JOB
        run_fio io_uring-verify "$work/kernel-host.fio"
    fi
    host_disconnect "$trtype"
    stop_target
    finish "$name"
}
check_linux_host_to_ours() { linux_host_to_ours linux-host-to-ours rdma "$our_port_host"; }
# The same over NVMe/TCP (nvmeof-target --transport tcp, the kernel's nvme-tcp host).
check_linux_host_tcp_to_ours() {
    modprobe nvme-tcp 2>/dev/null || true
    linux_host_to_ours linux-host-tcp-to-ours tcp "$our_port_host_tcp" --transport tcp
}

# ---- 4. our engine -> our target over rxe ---------------------------------------------
check_engine_to_ours() {
    begin engine-to-ours
    start_target "$our_port_engine" --subsystem "$our_nqn" --namespace ram:128M || { finish engine-to-ours; return; }
    export NVMEOF_TRADDR="$addr" NVMEOF_TRSVCID="$our_port_engine" NVMEOF_SUBNQN="$our_nqn"
    local name
    for name in quickstart mixed-verify large-block; do
        short_job "$jobs_dir/$name.fio" "$work/ours-$name.fio"
        echo "io_timeout_ms=$io_timeout_ms" >> "$work/ours-$name.fio"
        run_fio "ours-$name" "$work/ours-$name.fio"
    done
    stop_target
    finish engine-to-ours
}

# ---- 4b. our engine and Python package -> kernel nvmet-tcp ------------------------------
# The kernel target's subsystem on an NVMe/TCP port too; fio verify through the engine with
# each digest setting (randrw, bssplit 512 B to 4 MiB: above nvmet's MDTS, so split; four
# jobs on two I/O queues each, QD 1 to 128), then the Python package's round trip.
check_engine_tcp_to_kernel() {
    begin engine-tcp-to-kernel
    modprobe nvmet-tcp 2>/dev/null || true
    # shellcheck source=tests/interop/nvmet.sh
    . "$INTEROP_REPO/tests/interop/nvmet.sh"
    if ! { nvmet_port_tcp "$ktcp_port_id" "$addr" "$ktcp_port" && nvmet_link "$ktcp_port_id" "$knqn"; }; then
        problem "could not add an nvmet-tcp port on $addr:$ktcp_port"; finish engine-tcp-to-kernel; return
    fi
    export NVMEOF_TRADDR="$addr" NVMEOF_TRSVCID="$ktcp_port" NVMEOF_SUBNQN="$knqn"
    local digest depth
    for digest in NONE HEADER DATA BOTH; do
        depth=$([ "$digest" = BOTH ] && echo 128 || echo 16)
        { engine_job_header; cat <<JOB
trtype=tcp
digest_enable=$digest
nr_io_queues=2
rw=randrw
bssplit=512/10:4k/40:64k/20:1m/20:4m/10
blockalign=512
iodepth=$depth
numjobs=4
size=8m
offset_increment=8m
verify=crc32c
verify_state_save=0
verify_fatal=1
[tcp-$digest]
JOB
        } > "$work/tcp-$digest.fio"
        run_fio "tcp-digest-$digest" "$work/tcp-$digest.fio"
    done
    # QD 1 with the SPDK filename form (trtype=TCP in the filename, digests off).
    { cat <<JOB
[global]
ioengine=external:\${NVMEOF_ENGINE}
io_timeout_ms=$io_timeout_ms
filename=trtype=TCP adrfam=IPv4 traddr=$addr trsvcid=$ktcp_port subnqn=${knqn//:/\\:} ns=1
rw=write
bs=4k
iodepth=1
size=4m
verify=crc32c
verify_state_save=0
verify_fatal=1
[tcp-filename-qd1]
JOB
    } > "$work/tcp-filename.fio"
    run_fio tcp-filename-qd1 "$work/tcp-filename.fio"
    say "  python round trip over tcp"
    if ! timeout -k 10 "$step_timeout" env PYTHONPATH="$build/python" PYTHONDONTWRITEBYTECODE=1 \
            python3 "$INTEROP_REPO/tests/spdk/python_roundtrip.py" "$addr" "$ktcp_port" "$knqn" tcp >> "$log" 2>&1; then
        problem "python round trip over tcp failed (log: $log)"
    fi
    nvmet_unlink "$ktcp_port_id" "$knqn"
    finish engine-tcp-to-kernel
}

# ---- 5. error cases against the kernel target ------------------------------------------
# expect_error LABEL PATTERN NQN PORT: fio with the engine must fail (non-zero, bounded) and
# say something matching PATTERN (case-insensitive).
expect_error() {
    local label=$1 pattern=$2 nqn=$3 port=$4 rc=0 t0=$SECONDS
    export NVMEOF_TRADDR="$addr" NVMEOF_TRSVCID="$port" NVMEOF_SUBNQN="$nqn"
    short_job "$jobs_dir/quickstart.fio" "$work/err-$label.fio"
    echo "connect_timeout_ms=20000" >> "$work/err-$label.fio"
    timeout -k 10 120 fio "$work/err-$label.fio" > "$work/err-$label.out" 2>&1 || rc=$?
    cat "$work/err-$label.out" >> "$log"
    local msg; msg="$(grep -E '^nvmeof:' "$work/err-$label.out" | head -1 | cut -c1-220)"
    [ -n "$msg" ] || msg="$(grep -iE 'error|fail|refus|reject' "$work/err-$label.out" | head -1 | cut -c1-220)"
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then problem "$label: hung (killed after 120 s)"
    elif [ $rc -eq 0 ]; then problem "$label: fio exited 0"
    elif ! grep -qiE "$pattern" "$work/err-$label.out"; then problem "$label: exit $rc but no clear message (/$pattern/): '$msg'"
    else say "  $label: exit $rc after $((SECONDS - t0)) s: $msg"; fi
}
check_errors_against_kernel() {
    begin errors-against-kernel
    # A subsystem that allows only some other host.
    source "$INTEROP_REPO/tests/interop/nvmet.sh"
    if [ ! -d "$NVMET/subsystems/$rnqn" ]; then
        nvmet_subsys "$rnqn" /dev/ram1 nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001 \
            && nvmet_link 1 "$rnqn" || problem "cannot configure the restricted subsystem"
    fi
    expect_error wrong-nqn 'subsystem|nqn|invalid|not found' nqn.2026-12.io.nvmeof:no-such-subsystem "$kport"
    expect_error host-not-allowed 'host|not allowed|denied|access' "$rnqn" "$kport"
    expect_error nothing-listening 'refused|reject|unreachable|no listener|not listening|listen' "$knqn" "$idle_port"
    finish errors-against-kernel
}

# ---- 6. nvmeof-discover against the kernel's discovery controller -----------------------
check_discovery_against_kernel() {
    begin discovery-against-kernel
    local discover="$build/cli/nvmeof-discover" rc=0
    say "  nvmeof-discover -a $addr -s $kport"
    timeout -k 5 120 "$discover" -t rdma -a "$addr" -s "$kport" > "$work/discover.out" 2> "$work/discover.err" || rc=$?
    cat "$work/discover.out" "$work/discover.err" >> "$log"
    if [ $rc -ne 0 ]; then problem "nvmeof-discover exit $rc: $(tail -1 "$work/discover.err")"
    else
        # The kernel host's own view of the same log, for a field-by-field comparison.
        timeout -k 5 120 nvme discover -t rdma -a "$addr" -s "$kport" > "$work/nvme-discover.out" 2>&1 || true
        cat "$work/nvme-discover.out" >> "$log"
        local verdict
        verdict="$(python3 - "$work/discover.out" "$work/nvme-discover.out" "$knqn" "$addr" "$kport" <<'PY' 2>&1
import re, sys
def records(path):
    out, cur = [], None
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("=====Discovery Log Entry"):
            cur = {}; out.append(cur)
        elif cur is not None and ":" in line:
            k, v = line.split(":", 1); cur[k.strip()] = v.strip()
    return out
ours, theirs = records(sys.argv[1]), records(sys.argv[2])
nqn, addr, port = sys.argv[3:6]
head = open(sys.argv[1]).read()
m = re.search(r"Discovery Log Number of Records (\d+), Generation counter (\d+)", head)
problems = []
if not m or int(m.group(1)) != len(ours):
    problems.append("header line missing or NUMREC differs from the entries printed")
mine = [r for r in ours if r.get("subnqn") == nqn]
if len(mine) != 1:
    problems.append(f"{len(mine)} records for {nqn}")
else:
    want = {"trtype": "rdma", "adrfam": "ipv4", "subtype": "nvme subsystem", "traddr": addr,
            "trsvcid": port, "rdma_qptype": "connected", "rdma_cms": "rdma-cm"}
    for k, v in want.items():
        if mine[0].get(k) != v:
            problems.append(f"{k} is '{mine[0].get(k)}', expected '{v}'")
if theirs:
    if len(theirs) != len(ours):
        problems.append(f"nvme discover lists {len(theirs)} records, nvmeof-discover {len(ours)}")
    for a, b in zip(ours, theirs):
        for k in sorted(set(a) & set(b)):
            if a[k] != b[k]:
                problems.append(f"{a.get('subnqn')}: {k} '{a[k]}' but nvme discover says '{b[k]}'")
else:
    problems.append("nvme discover printed no records to compare with")
print("; ".join(problems) if problems else f"ok: {len(ours)} record(s), the same as nvme discover")
PY
)"
        case "$verdict" in ok:*) say "  $verdict" ;; *) problem "$verdict" ;; esac
    fi
    # JSON output parses and lists the subsystem.
    rc=0
    timeout -k 5 120 "$discover" -a "$addr" -s "$kport" -o json > "$work/discover.json" 2>> "$log" || rc=$?
    if [ $rc -ne 0 ]; then problem "nvmeof-discover -o json exit $rc"
    elif ! python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert any(r["subnqn"]==sys.argv[2] for r in d["records"])' \
            "$work/discover.json" "$knqn" >> "$log" 2>&1; then problem "JSON output does not parse or lacks $knqn"
    fi
    # Nothing listening: exit 1, one line naming address:port, within the timeout.
    rc=0
    local t0=$SECONDS
    timeout -k 5 60 "$discover" -a "$addr" -s "$idle_port" --timeout-ms 10000 > /dev/null 2> "$work/discover-idle.err" || rc=$?
    cat "$work/discover-idle.err" >> "$log"
    if [ $rc -ne 1 ]; then problem "nothing listening: exit $rc, expected 1"
    elif ! grep -q "$addr:$idle_port" "$work/discover-idle.err"; then problem "nothing listening: message does not name $addr:$idle_port"
    else say "  nothing listening: exit 1 after $((SECONDS - t0)) s: $(head -1 "$work/discover-idle.err" | cut -c1-200)"; fi
    # The engine with no subsystem NQN: it reads the same log and runs on what it lists
    # (the kernel's "current discovery subsystem" entry is skipped, the subsystem used).
    cat > "$work/discovered.fio" <<JOB
[global]
ioengine=external:\${NVMEOF_ENGINE}
traddr=$addr
trsvcid=$kport
io_timeout_ms=$io_timeout_ms
rw=write
bs=4k
iodepth=4
size=4m
verify=crc32c
verify_state_save=0
verify_fatal=1
[discovered]
JOB
    local before; before="$(wc -l < "$log")"
    if run_fio discovered "$work/discovered.fio"; then
        local used; used="$(tail -n +"$before" "$log" | grep -i "discover" | grep -F "$knqn" | head -1)"
        if [ -z "$used" ]; then problem "the engine's discovery line does not name $knqn"
        else say "  engine: $(cut -c1-200 <<< "$used")"; fi
    fi
    finish discovery-against-kernel
}

# ---- 7. reconnect: the kernel target's port unlinked and relinked mid-run ----------------
# Once the link goes, nvmet (6.1) stops answering the subsystem's controllers on that port
# without disconnecting their queues; keep-alive (5 s) notices, the engine (ctrl_loss_tmo_ms)
# reconnects once the link is back, re-sends what was in flight, and fio's verify passes.
check_reconnect_against_kernel() {
    begin reconnect-against-kernel
    source "$INTEROP_REPO/tests/interop/nvmet.sh"
    export NVMEOF_TRADDR="$addr" NVMEOF_TRSVCID="$kport" NVMEOF_SUBNQN="$knqn"
    { engine_job_header; cat <<JOB
ctrl_loss_tmo_ms=120000
reconnect_delay_ms=1000
keep_alive_ms=5000
rw=randrw
bs=4k
iodepth=8
size=8m
time_based=1
runtime=25
verify=crc32c
verify_backlog=32
verify_fatal=1
verify_state_save=0
[reconnect]
JOB
    } > "$work/reconnect.fio"
    run_fio reconnect "$work/reconnect.fio" &
    local fio_pid=$!
    sleep 8
    say "  unlinking $knqn from nvmet port 1"
    nvmet_unlink 1 "$knqn"
    sleep 4
    say "  relinking it"
    nvmet_link 1 "$knqn" || problem "cannot relink $knqn to port 1"
    wait "$fio_pid" || true
    # run_fio ran in a subshell: its problems are in the log, not in this shell's list.
    grep -q "problem: reconnect" "$log" && problem "the fio run failed across the relink (see the log)"
    if grep -q "reconnected after an outage of" "$log"; then
        say "  $(grep -o 'reconnected after an outage of [0-9]* ms[^,]*' "$log" | head -1)"
    else
        problem "the engine did not log a reconnect"
    fi
    finish reconnect-against-kernel
}

# ---- 7./8. DH-HMAC-CHAP with the kernel ----------------------------------------------------
auth_host="nqn.2014-08.org.nvmexpress:uuid:7e57a0d1-5eed-4c0d-9a11-0123456789ab"
auth_nqn="nqn.2026-12.io.nvmeof:kernel-auth"
our_port_auth=4423

# auth_key HMAC: a secret as nvme-cli makes it (HMAC 0..3: key transformation hash).
auth_key() {
    nvme gen-dhchap-key --hmac="$1" --nqn="$auth_host" 2>> "$log" | grep -o 'DHHC-1:[^ ]*' | head -1
}

# auth_fio LABEL SECRET [CTRL_SECRET]: a short verified job from our engine to the kernel's
# auth subsystem as $auth_host.
auth_fio() {
    local label=$1 secret=$2 ctrl=${3:-}
    export NVMEOF_TRADDR="$addr" NVMEOF_TRSVCID="$kport" NVMEOF_SUBNQN="$auth_nqn"
    { engine_job_header; cat <<JOB
hostnqn=$auth_host
nr_io_queues=2
rw=randwrite
bs=4k
size=1m
iodepth=4
verify=crc32c
verify_state_save=0
verify_fatal=1
${secret:+dhchap_secret=$secret}
${ctrl:+dhchap_ctrl_secret=$ctrl}
[$label]
JOB
    } > "$work/$label.fio"
}

check_auth_engine_to_kernel() {
    begin auth-engine-to-kernel
    source "$INTEROP_REPO/tests/interop/nvmet.sh"
    local h="$NVMET/hosts/$auth_host"
    if [ ! -d "$NVMET/subsystems/$auth_nqn" ]; then
        # ram1 (free RAM disk; the restricted subsystem of check 5 may share it)
        nvmet_subsys "$auth_nqn" /dev/ram1 "$auth_host" && nvmet_link 1 "$auth_nqn" \
            || problem "cannot configure the auth subsystem"
    fi
    if [ ! -e "$h/dhchap_key" ]; then
        problem "guest kernel $(uname -r) has no nvmet host dhchap_key (CONFIG_NVME_TARGET_AUTH off; build the image with INTEROP_KERNEL=backports)"
        finish auth-engine-to-kernel; return
    fi
    local key ckey hash group
    key="$(auth_key 1)"; ckey="$(auth_key 2)"
    [ -n "$key" ] && [ -n "$ckey" ] || { problem "nvme gen-dhchap-key gave no key"; finish auth-engine-to-kernel; return; }
    echo "$key" > "$h/dhchap_key"
    for hash in "hmac(sha256)" "hmac(sha384)" "hmac(sha512)"; do
        for group in null ffdhe2048 ffdhe3072 ffdhe4096 ffdhe6144 ffdhe8192; do
            echo "$hash" > "$h/dhchap_hash" && echo "$group" > "$h/dhchap_dhgroup" \
                || { problem "nvmet refuses $hash/$group"; continue; }
            local label="auth-${hash:5:6}-$group"
            auth_fio "$label" "$key"
            run_fio "$label" "$work/$label.fio"
        done
    done
    # Bidirectional: the kernel proves its controller key.
    echo "$ckey" > "$h/dhchap_ctrl_key"
    for group in null ffdhe2048; do
        echo "hmac(sha512)" > "$h/dhchap_hash"; echo "$group" > "$h/dhchap_dhgroup"
        auth_fio "auth-bi-$group" "$key" "$ckey"
        run_fio "auth-bi-$group" "$work/auth-bi-$group.fio"
    done
    # Failures, each named: a wrong host key, a wrong controller key, no key.
    local wrong; wrong="$(auth_key 1)"
    local case_ pattern rc msg
    for case_ in wrong-key wrong-ctrl-key no-key; do
        case $case_ in
            # nvmet sends AUTH_Failure1 but also ends the controller, which sometimes wins the
            # race: then the Receive goes unanswered, and the host says what that means.
            wrong-key) auth_fio "auth-$case_" "$wrong"
                pattern="refused authentication: authentication failed|did not answer the DH-HMAC-CHAP_Reply" ;;
            wrong-ctrl-key) auth_fio "auth-$case_" "$key" "$wrong"; pattern="does not match dhchap_ctrl_secret" ;;
            no-key) auth_fio "auth-$case_" ""; pattern="no dhchap_secret is set" ;;
        esac
        rc=0
        timeout -k 10 120 fio "$work/auth-$case_.fio" > "$work/auth-$case_.out" 2>&1 || rc=$?
        cat "$work/auth-$case_.out" >> "$log"
        msg="$(grep -E '^nvmeof:' "$work/auth-$case_.out" | head -1 | cut -c1-240)"
        if [ $rc -eq 0 ]; then problem "$case_: fio exited 0"
        elif ! grep -qE "$pattern" "$work/auth-$case_.out"; then problem "$case_: exit $rc without '$pattern': '$msg'"
        else say "  $case_: $msg"; fi
    done
    echo -n > "$h/dhchap_ctrl_key" 2>/dev/null || true
    finish auth-engine-to-kernel
}

check_auth_linux_host_to_ours() {
    begin auth-linux-host-to-ours
    local help; help="$(nvme connect --help 2>&1)"   # not piped: grep -q would SIGPIPE it
    if ! grep -q -- '--dhchap-secret' <<< "$help"; then
        problem "nvme-cli $(nvme version 2>&1 | head -1) has no --dhchap-secret"; finish auth-linux-host-to-ours; return
    fi
    local key ckey wrong
    key="$(auth_key 1)"; ckey="$(auth_key 3)"; wrong="$(auth_key 1)"
    local mode secret ctrl_args expect
    for mode in uni bi wrong-key; do
        ctrl_args=()
        secret="$key"; expect=ok
        [ $mode = bi ] && ctrl_args=(--dhchap-ctrl-secret="$ckey")
        [ $mode = wrong-key ] && { secret="$wrong"; expect=fail; }
        start_target "$our_port_auth" --subsystem "$our_nqn" --namespace ram:64M \
            --dhchap-key "$auth_host=$key" --dhchap-ctrl-key "$auth_host=$ckey" \
            --dhchap-dhgroup ffdhe2048 || continue
        local out rc=0
        out="$(timeout -k 5 90 nvme connect -t rdma -a "$addr" -s "$our_port_auth" -n "$our_nqn" \
            --hostnqn="$auth_host" --dhchap-secret="$secret" "${ctrl_args[@]}" 2>&1)" || rc=$?
        echo "$out" >> "$log"
        if [ $expect = ok ]; then
            if [ $rc -ne 0 ]; then problem "$mode: nvme connect exit $rc: $(echo "$out" | tail -1)"
            else
                local queues; queues="$(grep -c 'authenticated on qid' "$log")"
                say "  $mode: connected; target log: $queues queue authentication(s)"
                grep -q 'authenticated on qid 0' "$log" || problem "$mode: the target logged no authenticated admin queue"
                timeout -k 5 60 nvme disconnect -n "$our_nqn" >> "$log" 2>&1 || problem "$mode: nvme disconnect failed"
            fi
        else
            if [ $rc -eq 0 ]; then problem "$mode: nvme connect succeeded with a wrong key"
                timeout -k 5 60 nvme disconnect -n "$our_nqn" >> "$log" 2>&1
            elif ! grep -q "does not match its key" "$log"; then problem "$mode: the target did not log the wrong key"
            else say "  $mode: nvme connect exit $rc; target: $(grep -o 'failed: the host.s response[^)]*)' "$log" | head -1)"; fi
            dmesg | tail -5 | grep -iE 'auth' >> "$log"
        fi
        stop_target
    done
    finish auth-linux-host-to-ours
}

# ---- in-capsule writes: our engine -> kernel nvmet-rdma, data in the command capsule -----
# nvmet takes write data in the capsule on I/O queues (param_inline_data_size, 4 KiB by
# default). A 4 KiB randwrite+verify job with in_capsule_writes=1 must verify clean. Whether
# the data really came in-capsule: nvmet maps every keyed data descriptor with the ib_core
# export rdma_rw_ctx_init and never an in-capsule one, so a kprobe's hit count over a
# write-only job is at least the writes with in_capsule_writes=0, and only the connect's own
# transfers with 1.
rw_ctx_hits() {   # prints the kprobe's hits so far, or nothing when it cannot be counted
    awk '$1 == "incap_rw_ctx" { print $2 }' /sys/kernel/tracing/kprobe_profile 2>/dev/null
}
check_in_capsule_against_kernel() {
    begin in-capsule-against-kernel
    export NVMEOF_TRADDR="$addr" NVMEOF_TRSVCID="$kport" NVMEOF_SUBNQN="$knqn"
    local inline
    inline="$(cat /sys/kernel/config/nvmet/ports/1/param_inline_data_size 2>/dev/null)"
    say "  nvmet port 1 param_inline_data_size: ${inline:-not readable}"
    [ -z "$inline" ] || [ "$inline" -ge 4096 ] || [ "$inline" -lt 0 ] \
        || problem "nvmet inline_data_size $inline is below 4 KiB: 4 KiB writes cannot go in-capsule"
    { engine_job_header; cat <<JOB
in_capsule_writes=1
rw=randwrite
bs=4k
iodepth=8
size=8m
verify=crc32c
verify_fatal=1
verify_state_save=0
[in-capsule-verify]
JOB
    } > "$work/in-capsule-verify.fio"
    run_fio in-capsule-verify "$work/in-capsule-verify.fio"

    mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>> "$log"
    if echo 'p:incap_rw_ctx rdma_rw_ctx_init' >> /sys/kernel/tracing/kprobe_events 2>> "$log" &&
        echo 1 > /sys/kernel/tracing/events/kprobes/incap_rw_ctx/enable 2>> "$log"; then
        local mode before after writes=512   # 2 MiB of 4 KiB writes
        for mode in 1 0; do
            { engine_job_header; cat <<JOB
in_capsule_writes=$mode
rw=randwrite
bs=4k
iodepth=8
size=2m
[in-capsule-$mode-count]
JOB
            } > "$work/in-capsule-$mode-count.fio"
            before="$(rw_ctx_hits)"
            run_fio "in-capsule-$mode-count" "$work/in-capsule-$mode-count.fio" || continue
            after="$(rw_ctx_hits)"
            local keyed=$((after - before))
            say "    in_capsule_writes=$mode: nvmet mapped $keyed keyed descriptors for $writes writes"
            # Besides the writes: the Connect data and Identify/log-page transfers of the
            # connect (a handful), so "none" is well below a quarter of the writes.
            if [ "$mode" = 1 ] && [ "$keyed" -gt $((writes / 4)) ]; then
                problem "in_capsule_writes=1: nvmet mapped $keyed keyed descriptors (writes not in-capsule)"
            elif [ "$mode" = 0 ] && [ "$keyed" -lt "$writes" ]; then
                problem "in_capsule_writes=0: nvmet mapped only $keyed keyed descriptors for $writes writes (the probe counts nothing?)"
            fi
        done
        echo 0 > /sys/kernel/tracing/events/kprobes/incap_rw_ctx/enable
        echo '-:incap_rw_ctx' >> /sys/kernel/tracing/kprobe_events
    else
        say "  (no kprobe on rdma_rw_ctx_init in this kernel: only the verify job is checked)"
    fi
    finish in-capsule-against-kernel
}

# shellcheck source=tests/interop/checks-zoned.sh
. "$INTEROP_REPO/tests/interop/checks-zoned.sh"

all=(engine-to-kernel core-integration-to-kernel linux-host-to-ours linux-host-tcp-to-ours engine-to-ours
     engine-tcp-to-kernel errors-against-kernel discovery-against-kernel reconnect-against-kernel
     in-capsule-against-kernel)
[ $# -gt 0 ] && all=("$@")
for c in "${all[@]}"; do
    case "$c" in
        engine-to-kernel) check_engine_to_kernel ;;
        core-integration-to-kernel) check_core_to_kernel ;;
        linux-host-to-ours) check_linux_host_to_ours ;;
        linux-host-tcp-to-ours) check_linux_host_tcp_to_ours ;;
        engine-to-ours) check_engine_to_ours ;;
        engine-tcp-to-kernel) check_engine_tcp_to_kernel ;;
        errors-against-kernel) check_errors_against_kernel ;;
        discovery-against-kernel) check_discovery_against_kernel ;;
        reconnect-against-kernel) check_reconnect_against_kernel ;;
        in-capsule-against-kernel) check_in_capsule_against_kernel ;;
        auth-engine-to-kernel) check_auth_engine_to_kernel ;;
        auth-linux-host-to-ours) check_auth_linux_host_to_ours ;;
        linux-host-to-ours-zoned) check_linux_host_to_ours_zoned ;;
        linux-host-tcp-to-ours-zoned) check_linux_host_tcp_to_ours_zoned ;;
        engine-to-kernel-zoned) check_engine_to_kernel_zoned ;;
        *) echo "FAIL $c: unknown check" >> "$results" ;;
    esac
done
# Exit status: 0 only if every requested check passed.
! grep -q '^FAIL' "$results"
