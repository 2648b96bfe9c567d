# shellcheck shell=bash disable=SC2154,SC2034
# The zoned interop checks, sourced by checks-guest.sh (its helpers and variables: begin,
# finish, problem, say, run_fio, start_target, host_connect, ...).
#
#   linux-host-to-ours-zoned, linux-host-tcp-to-ours-zoned: the Linux host (nvme-rdma,
#     nvme-tcp) on our target's zoned namespaces; over RDMA fio's t/zbd/test-zbd-support too.
#   engine-to-kernel-zoned: our fio engine with zonemode=zbd on nvmet's export of a zoned
#     null_blk, over RDMA and TCP.

# Namespace 1: zone capacity below the zone size and both limits, for the report and state
# checks and the fio jobs; namespace 2: capacity = size, an open limit and 256 zones (t/zbd's
# tests 3, 4, 28, 29, 48 and 58 want 65 to 130), for t/zbd (fio 3.33 does not know the active
# limit). Zone sizes are a power of two in blocks, as Linux requires.
zoned_zone_mib=4
zoned_ns1="ram:128M:zoned=4M,cap=3M,max_open=4,max_active=8"
zoned_ns2="ram:128M:zoned=512K,max_open=8"
zoned_ns1_zones=32 zoned_ns1_cap_sectors=6144 zoned_ns1_max_open=4 zoned_ns1_max_active=8
zoned_zone_sectors=$((zoned_zone_mib * 2048))
our_port_host_zoned=4425
our_port_host_tcp_zoned=4426
# t/zbd's tests to run (INTEROP_ZBD_TESTS, space separated; "all": every one). By default all but
# 30, 31, 32, 48, 57 and 58, which each run fio for 30 s (random I/O over the whole device,
# zone-locking stress, random writes with trims): half the script's time under TCG.
zbd_long_tests="30 31 32 48 57 58"
case "${INTEROP_ZBD_TESTS:-}" in
    all) zbd_tests="" ;;
    "") zbd_tests=""
        for zbd_n in $(seq 1 58); do
            case " $zbd_long_tests " in *" $zbd_n "*) ;; *) zbd_tests+="${zbd_tests:+ }$zbd_n" ;; esac
        done ;;
    *) zbd_tests="$INTEROP_ZBD_TESTS" ;;
esac

# zone_report_check DEV LABEL [INDEX:COND:WP_OFFSET...]: blkzone's report of DEV (namespace 1)
# lists $zoned_ns1_zones zones of $zoned_zone_sectors sectors and $zoned_ns1_cap_sectors sectors
# of capacity, each empty (condition 1, write pointer at its start) but the ones named:
# condition COND, write pointer WP_OFFSET sectors into the zone ("-": not checked). A full zone
# has no write pointer in our report; Linux puts it at the zone's end.
zone_report_check() {
    local dev=$1 label=$2; shift 2
    local verdict
    blkzone report "/dev/$dev" > "$work/zones-$label" 2>> "$log"
    cat "$work/zones-$label" >> "$log"
    verdict="$(python3 - "$work/zones-$label" "$zoned_ns1_zones" "$zoned_zone_sectors" \
        "$zoned_ns1_cap_sectors" "$@" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
count, size, cap = (int(a) for a in sys.argv[2:5])
expect = {}
for spec in sys.argv[5:]:
    i, cond, wp = spec.split(":")
    expect[int(i)] = (int(cond), None if wp == "-" else int(wp))
# blkzone prints the write pointer as an offset into the zone.
pat = re.compile(r"start: (0x[0-9a-f]+), len (0x[0-9a-f]+), cap (0x[0-9a-f]+), wptr (0x[0-9a-f]+)"
                 r".*zcond: *(\d+)\(\w+\) \[type: (\d+)")
zones = [m.groups() for m in map(pat.search, lines) if m]
problems = []
if len(zones) != count:
    problems.append(f"{len(zones)} zones reported, expected {count}")
for i, z in enumerate(zones[:count]):
    start, length, zcap, wp, cond, ztype = (int(v, 0) for v in z)
    want_cond, want_wp = expect.get(i, (1, 0))
    got = f"start {start:#x} len {length:#x} cap {zcap:#x} wp +{wp:#x} cond {cond} type {ztype}"
    if (start, length, zcap, ztype) != (i * size, size, cap, 2) or cond != want_cond or \
            (want_wp is not None and wp != want_wp):
        want = f"start {i * size:#x} len {size:#x} cap {cap:#x} wp " + \
            ("-" if want_wp is None else f"+{want_wp:#x}") + f" cond {want_cond} type 2"
        problems.append(f"zone {i}: {got}, expected {want}")
print("; ".join(problems[:4]) if problems else f"ok: {len(zones)} zones as expected")
PY
)"
    case "$verdict" in ok:*) say "  blkzone report ($label): ${verdict#ok: }" ;; *) problem "blkzone report ($label): $verdict" ;; esac
}

# sysfs_expect DEV ATTRIBUTE VALUE: /sys/block/DEV/queue/ATTRIBUTE reads VALUE.
sysfs_expect() {
    local got; got="$(cat "/sys/block/$1/queue/$2" 2>/dev/null)"
    echo "/sys/block/$1/queue/$2: $got" >> "$log"
    [ "$got" = "$3" ] || problem "/sys/block/$1/queue/$2 is '$got', expected '$3'"
}

# zoned_request_devices DEV: the request-based devices of namespace DEV: the path devices
# nvmeXcYnZ where the host uses native multipath (DEV is then the head), else DEV itself.
zoned_request_devices() {
    local dev=$1 q found=""
    for q in /sys/block/"${dev%n*}"c*n"${dev##*n}"; do
        [ -e "$q/queue/scheduler" ] && found+=" ${q##*/}"
    done
    echo "${found:-$dev}"
}

# zoned_path_scheduler DEV: mq-deadline on DEV's request-based devices: without it writes
# above queue depth 1 reach a zone out of order (Zone Invalid Write).
zoned_path_scheduler() {
    local dev=$1 q n=0
    for q in $(zoned_request_devices "$dev"); do
        q=/sys/block/$q/queue/scheduler
        grep -qs mq-deadline "$q" || continue
        echo mq-deadline > "$q" && n=$((n + 1))
        echo "$q: $(cat "$q")" >> "$log"
    done
    [ $n -gt 0 ] || problem "no mq-deadline scheduler for $dev's path devices"
}

# zoned_host_fio LABEL DEV [JOB LINE...]: a zonemode=zbd fio job through the kernel host on DEV.
zoned_host_fio() {
    local label=$1 dev=$2; shift 2
    { cat <<JOB
[global]
filename=/dev/$dev
ioengine=io_uring
direct=1
zonemode=zbd
verify=crc32c
verify_state_save=0
verify_fatal=1
JOB
      printf '%s\n' "$@" "[$label]"; } > "$work/$label.fio"
    run_fio "$label" "$work/$label.fio"
}

# The namespace as Linux sees it: zoned, its zones and limits, the state machine through
# blkzone, fio's zonemode=zbd with verify.
zoned_host_basics() {
    local dev=$1
    sysfs_expect "$dev" zoned host-managed
    sysfs_expect "$dev" nr_zones "$zoned_ns1_zones"
    sysfs_expect "$dev" chunk_sectors "$zoned_zone_sectors"
    # The limits (MOR, MAR): 6.1 keeps them on the request queue of the path device, and a
    # native multipath head (nvmeXnY over nvmeXcYnZ) reports 0, no limit.
    local path
    for path in $(zoned_request_devices "$dev"); do
        sysfs_expect "$path" max_open_zones "$zoned_ns1_max_open"
        sysfs_expect "$path" max_active_zones "$zoned_ns1_max_active"
    done
    say "  zone_append_max_bytes $(cat /sys/block/"$dev"/queue/zone_append_max_bytes 2>/dev/null)"
    [ "$(cat /sys/block/"$dev"/queue/zone_append_max_bytes 2>/dev/null)" -gt 0 ] 2>/dev/null \
        || problem "zone_append_max_bytes is not above 0 (Linux found no Zone Append)"
    zone_report_check "$dev" fresh

    # Zone 1 written 64 KiB: implicitly open; zone 2 opened, closed and finished; zone 3
    # opened explicitly, zone 4 finished from empty.
    local z=$zoned_zone_sectors
    dd if=/dev/urandom of="/dev/$dev" bs=64k count=1 seek=$((z / 128)) oflag=direct status=none 2>> "$log" \
        || problem "dd of 64 KiB to zone 1 failed"
    blkzone open -o $((2 * z)) -c 1 "/dev/$dev" 2>> "$log" || problem "blkzone open zone 2 failed"
    dd if=/dev/urandom of="/dev/$dev" bs=4k count=1 seek=$((2 * z / 8)) oflag=direct status=none 2>> "$log" \
        || problem "dd of 4 KiB to zone 2 failed"
    blkzone close -o $((2 * z)) -c 1 "/dev/$dev" 2>> "$log" || problem "blkzone close zone 2 failed"
    blkzone open -o $((3 * z)) -c 1 "/dev/$dev" 2>> "$log" || problem "blkzone open zone 3 failed"
    blkzone finish -o $((4 * z)) -c 1 "/dev/$dev" 2>> "$log" || problem "blkzone finish zone 4 failed"
    zone_report_check "$dev" actions 1:2:128 2:4:8 3:3:0 "4:14:$z"
    # A write off the write pointer fails (Zone Invalid Write, EIO to the host).
    if dd if=/dev/zero of="/dev/$dev" bs=4k count=1 seek=$((z / 8 + 100)) oflag=direct status=none 2>> "$log"; then
        problem "a write 100 blocks past zone 1's write pointer succeeded"
    fi
    blkzone finish -o $((2 * z)) -c 1 "/dev/$dev" 2>> "$log" || problem "blkzone finish zone 2 failed"
    blkzone reset -o $((3 * z)) -c 1 "/dev/$dev" 2>> "$log" || problem "blkzone reset zone 3 failed"
    zone_report_check "$dev" finished 1:2:128 "2:14:$z" "4:14:$z"
    blkzone reset "/dev/$dev" 2>> "$log" || problem "blkzone reset (all zones) failed"
    zone_report_check "$dev" reset

    zoned_path_scheduler "$dev"
    # Sequential writes over 8 zones (each to its capacity), then read back and verified.
    zoned_host_fio zbd-write-verify "$dev" rw=write bs=64k iodepth=4 size=$((8 * zoned_zone_mib))m
    # Random writes over all zones with at most max_open zones open, verified (with verify fio
    # resets the zones it will write before it starts, and never one while writing).
    zoned_host_fio zbd-randwrite-verify "$dev" rw=randwrite bs=16k iodepth=8 \
        "max_open_zones=$zoned_ns1_max_open" io_size=24m
    blkzone report "/dev/$dev" >> "$log" 2>&1
    local open; open="$(blkzone report "/dev/$dev" 2>/dev/null | grep -cE 'zcond: *(2|3)\(')"
    [ "$open" -le "$zoned_ns1_max_open" ] || problem "$open zones open after randwrite, above max_open_zones $zoned_ns1_max_open"
    blkzone reset "/dev/$dev" 2>> "$log" || problem "blkzone reset (all zones) failed"
    zone_report_check "$dev" after-fio
}

# fio's own zoned test script (fio 3.33's t/zbd/test-zbd-support, from the fetched source)
# on DEV: every test's verdict goes to the log and $INTEROP_OUT/zbd-results, each test's fio
# log to logs/zbd/. A test in zbd_known_failures that fails is reported only (docs/zoned.md has
# each cause); any other failing test fails the check.
zoned_t_zbd() {
    local dev=$1 src="$INTEROP_REPO/.cache/fio-src/t/zbd"
    if [ ! -x "$src/test-zbd-support" ]; then
        problem "no $src/test-zbd-support (run tools/fetch-fio-source.sh)"; return
    fi
    # It writes logs beside itself and runs ../../fio: a writable copy, the guest's fio.
    local tree="$work/fio-tree"
    rm -rf "$tree"; mkdir -p "$tree/t"; cp -r "$src" "$tree/t/zbd"; ln -sf "$(command -v fio)" "$tree/fio"
    [ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
    local args=() t
    for t in $zbd_tests; do args+=(-t "$t"); done
    local which="${INTEROP_ZBD_TESTS:-all but $zbd_long_tests (INTEROP_ZBD_TESTS=all runs them)}"
    say "  t/zbd/test-zbd-support on /dev/$dev (tests: $which)"
    local t0=$SECONDS rc=0
    # Its verdicts as they come (not on a terminal, it prints them without colours).
    (cd "$tree/t/zbd" && timeout -k 10 "${INTEROP_ZBD_TIMEOUT:-1800}" ./test-zbd-support "${args[@]}" "/dev/$dev") \
        > "$INTEROP_OUT/zbd-results" 2>&1 || rc=$?
    cat "$INTEROP_OUT/zbd-results" >> "$log"
    mkdir -p "$INTEROP_OUT/logs/zbd"
    cp -p "$tree"/t/zbd/test-zbd-support.log.* "$INTEROP_OUT/logs/zbd/" 2>/dev/null
    local pass fail skip
    pass="$(grep -oE 'Running test [0-9]+ \.\.\. PASS' "$INTEROP_OUT/zbd-results" | awk '{print $3}' | xargs)"
    fail="$(grep -oE 'Running test [0-9]+ \.\.\. FAIL' "$INTEROP_OUT/zbd-results" | awk '{print $3}' | xargs)"
    skip="$(grep -oE 'Running test [0-9]+ \.\.\. SKIP' "$INTEROP_OUT/zbd-results" | awk '{print $3}' | xargs)"
    say "  t/zbd after $((SECONDS - t0)) s (exit $rc): pass [$pass] fail [$fail] skip [$skip]"
    [ $rc -ne 124 ] || problem "t/zbd did not finish within ${INTEROP_ZBD_TIMEOUT:-1800} s"
    [ -n "$pass" ] || problem "t/zbd passed no test: $(head -3 "$INTEROP_OUT/zbd-results" | tr '\n' '|')"
    local f
    for f in $fail; do
        case " $zbd_known_failures " in *" $((10#$f)) "*) ;; *) problem "t/zbd test $f failed" ;; esac
    done
}
# t/zbd tests that fail for causes outside our target (docs/zoned.md has each): 54 trips an
# assertion of fio 3.33 itself (zbd_replay_write_order), on a zoned null_blk the same.
zbd_known_failures="54"

# linux_host_to_ours_zoned NAME TRTYPE PORT WITH_T_ZBD [TARGET OPTION...]
linux_host_to_ours_zoned() {
    local name=$1 trtype=$2 port=$3 with_t_zbd=$4; shift 4
    begin "$name"
    # What this check provokes: writes off the write pointer, into full zones, past a zone
    # (SCT 1, SC B8h-BFh; 6.1 without CONFIG_NVME_VERBOSE_ERRORS prints the codes alone).
    host_expected_errors='sct 0x1 / sc 0xb[89a-f]|I/O error, dev nvme'
    start_target "$port" "$@" --subsystem "$our_nqn" --namespace "$zoned_ns1" --namespace "$zoned_ns2" \
        || { finish "$name"; return; }
    if host_connect "$trtype" "$port"; then
        zoned_host_basics "$host_dev"
        local dev2="${host_dev%n*}n2"
        if [ "$with_t_zbd" = 1 ]; then
            if [ -b "/dev/$dev2" ]; then zoned_path_scheduler "$dev2"; zoned_t_zbd "$dev2"
            else problem "no block device $dev2 for namespace 2"; fi
        fi
    fi
    host_disconnect "$trtype"
    host_expected_errors=""
    stop_target
    finish "$name"
}
check_linux_host_to_ours_zoned() {
    linux_host_to_ours_zoned linux-host-to-ours-zoned rdma "$our_port_host_zoned" 1
}
check_linux_host_tcp_to_ours_zoned() {
    modprobe nvme-tcp 2>/dev/null || true
    linux_host_to_ours_zoned linux-host-tcp-to-ours-zoned tcp "$our_port_host_tcp_zoned" 0 --transport tcp
}

# ---- our fio engine, zonemode=zbd -> kernel nvmet serving a zoned null_blk ---------------
zoned_nqn="nqn.2026-12.io.nvmeof:kernel-zoned"
zoned_nullb=zoned0
zoned_nvmet_port_id=11 zoned_nvmet_tcp_port_id=12
zoned_nvmet_port=4431 zoned_nvmet_tcp_port=4432

# A 256 MiB zoned null_blk (64 zones of 4 MiB, memory backed) through configfs.
zoned_null_blk() {
    modprobe null_blk nr_devices=0 2>> "$log" || true
    local d=/sys/kernel/config/nullb/$zoned_nullb
    [ -d "$d" ] && return 0
    mkdir "$d" && echo 256 > "$d/size" && echo 4 > "$d/zone_size" && echo 0 > "$d/zone_nr_conv" &&
        echo 1 > "$d/zoned" && echo 1 > "$d/memory_backed" && echo 1 > "$d/power" 2>> "$log"
}

# engine_zoned_jobs TRTYPE PORT: the engine's zoned jobs against the kernel's zoned subsystem.
engine_zoned_jobs() {
    local trtype=$1 port=$2 label
    export NVMEOF_TRADDR="$addr" NVMEOF_TRSVCID="$port" NVMEOF_SUBNQN="$zoned_nqn"
    job() {   # job LABEL [JOB LINE...]
        label="$trtype-$1"; shift
        { engine_job_header; cat <<JOB
trtype=$trtype
zonemode=zbd
verify=crc32c
verify_state_save=0
verify_fatal=1
JOB
          printf '%s\n' "$@" "[$label]"; } > "$work/$label.fio"
        run_fio "$label" "$work/$label.fio"
    }
    job zbd-write-verify rw=write bs=64k iodepth=8 size=32m
    job zbd-randwrite-verify rw=randwrite bs=16k iodepth=8 max_open_zones=4 offset=32m size=128m io_size=24m
    # Zone Append, two jobs in disjoint zone ranges.
    job zbd-append-verify zone_append=1 rw=write bs=16k iodepth=8 numjobs=2 offset=160m size=32m offset_increment=32m
}

check_engine_to_kernel_zoned() {
    begin engine-to-kernel-zoned
    # shellcheck source=tests/interop/nvmet.sh
    . "$INTEROP_REPO/tests/interop/nvmet.sh"
    modprobe nvmet-tcp 2>/dev/null || true
    if ! zoned_null_blk; then problem "cannot create the zoned null_blk $zoned_nullb"; finish engine-to-kernel-zoned; return; fi
    say "  null_blk /dev/$zoned_nullb: $(cat /sys/block/$zoned_nullb/queue/zoned) $(cat /sys/block/$zoned_nullb/queue/nr_zones) zones"
    if ! { nvmet_subsys "$zoned_nqn" "/dev/$zoned_nullb" &&
           nvmet_port "$zoned_nvmet_port_id" "$addr" "$zoned_nvmet_port" &&
           nvmet_link "$zoned_nvmet_port_id" "$zoned_nqn" &&
           nvmet_port_tcp "$zoned_nvmet_tcp_port_id" "$addr" "$zoned_nvmet_tcp_port" &&
           nvmet_link "$zoned_nvmet_tcp_port_id" "$zoned_nqn"; } 2>> "$log"; then
        problem "cannot export /dev/$zoned_nullb through nvmet"; finish engine-to-kernel-zoned; return
    fi
    engine_zoned_jobs rdma "$zoned_nvmet_port"
    # nvmet-tcp on Debian's 6.1 trips over transparent huge pages in fio's buffers.
    local thp=/sys/kernel/mm/transparent_hugepage/enabled was
    was="$(grep -o '\[[a-z]*\]' "$thp" | tr -d '[]')"
    echo never > "$thp"
    engine_zoned_jobs tcp "$zoned_nvmet_tcp_port"
    echo "$was" > "$thp"
    nvmet_unlink "$zoned_nvmet_port_id" "$zoned_nqn"
    nvmet_unlink "$zoned_nvmet_tcp_port_id" "$zoned_nqn"
    finish engine-to-kernel-zoned
}
