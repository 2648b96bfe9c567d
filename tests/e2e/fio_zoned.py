#!/usr/bin/env python3
"""fio's zonemode=zbd through the engine, against nvmeof-target's zoned RAM
namespaces: sequential and random writes (within the open zone limit fio read
from the engine), SPDK's zone_append and initial_zone_reset, verify, two jobs
on one namespace, the zone statuses the target's faults give, and the options
refused on a namespace that is not zoned. Each test checks what fio moved, what
the target counted and the zones as the Python package reports them after the
job. Over NVMe/TCP with NVMEOF_E2E_TRANSPORT=tcp. One test per invocation:
`fio_zoned.py TEST`."""

import json
import os
import subprocess
import sys

import harness as h
from harness import check

KIB = 1024
MIB = 1024 * KIB
BLOCK = 4096
ZONE = 1 * MIB  # zone size
CAPACITY = 768 * KIB  # writable bytes of each zone
MAX_OPEN = 4
# 32 zones of 1 MiB, 768 KiB of each writable, at most 4 open.
ZONED = f"ram:32M:{BLOCK}:zoned=1M,cap=768K,max_open={MAX_OPEN}"
ZONE_BLOCKS = ZONE // BLOCK
EIO, EINVAL = 5, 22

# Run under the test's transport runner with the Python package on the path:
# the zones of namespace 1 as JSON.
REPORT = """
import json, sys
import nvmeof
host, port, nqn, transport = sys.argv[1:5]
with nvmeof.Controller.connect(host, nqn, port=int(port), transport=transport) as c:
    print(json.dumps([{"start": z.start, "capacity": z.capacity, "wp": z.write_pointer,
                       "state": z.state.name.lower()} for z in c.namespace(1).report_zones()]))
"""


def zones_of(t):
    """The namespace's zones as the Python package reports them (blocks)."""
    env = dict(os.environ, PYTHONPATH=os.environ["NVMEOF_PYTHONPATH"], ASAN_OPTIONS="detect_leaks=0")
    proc = subprocess.run([*h.softverbs_runner(t.transport), sys.executable, "-c", REPORT, t.address,
                           str(t.port), h.NQN, t.transport],
                          env=env, capture_output=True, text=True, timeout=60)
    check(proc.returncode == 0, f"zone report failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def written_bytes(zones):
    """Bytes below each zone's write pointer (a full zone: its capacity)."""
    total = 0
    for z in zones:
        if z["state"] == "full":
            total += z["capacity"] * BLOCK
        elif z["wp"] is not None:
            total += (z["wp"] - z["start"]) * BLOCK
    return total


def job_text(options, name="zoned"):
    return "[global]\n{TARGET}" + "\n".join(options) + f"\n[{name}]\n"


def run(t, wd, options, name="zoned"):
    """fio on one job made of `options`: (process, JSON report or None, stderr).
    The report is read from fio's stdout after any line fio writes before it
    (its own error line when a job fails)."""
    job = os.path.join(wd, f"{name}.fio")
    h.write_job(job, job_text(options, name))
    proc, _ = h.run_fio(job, t)
    start = proc.stdout.find("{")
    result = h.parse_report(proc.stdout[start:]) if start >= 0 else None
    return proc, result, proc.stderr


def run_clean(t, wd, options, name="zoned"):
    proc, result, stderr = run(t, wd, options, name)
    check(proc.returncode == 0 and result is not None and not h.job_errors(result),
          f"fio failed (rc {proc.returncode}):\n{proc.stdout[-2000:]}\n{stderr[-3000:]}")
    return h.totals(result)


ZBD = ["zonemode=zbd", "iodepth=8"]


def test_write():
    """Sequential writes over four zones fill each to its capacity; trims of
    two of them (fio's zone resets) empty those again."""
    wd = h.workdir()
    with h.target(wd, namespace=ZONED) as t:
        sums = run_clean(t, wd, ZBD + ["rw=write", "bs=64k", "size=4M"])
        zones = zones_of(t)
        trims = run_clean(t, wd, ZBD + ["rw=trim", "bs=1M", "size=2M"], name="trim")
        trimmed = zones_of(t)
        t.stop()
    check(trims["trim"]["ios"] == 2, f"fio trimmed {trims['trim']['ios']} zones, not 2")
    check([z["state"] for z in trimmed[:4]] == ["empty"] * 2 + ["full"] * 2,
          f"zones 0-3 after trimming 0-1: {[z['state'] for z in trimmed[:4]]}")
    expected = 4 * CAPACITY
    check(sums["write"]["bytes"] == expected, f"fio wrote {sums['write']['bytes']}, not {expected}")
    stats = t.stats()
    check(stats["bytes"]["write"] == expected, f"target received {stats['bytes']['write']} bytes")
    check([z["state"] for z in zones[:5]] == ["full"] * 4 + ["empty"],
          f"zones 0-4 after the job: {[z['state'] for z in zones[:5]]}")
    check(written_bytes(zones) == expected, f"the zones hold {written_bytes(zones)} bytes")
    print(f"write: {expected} bytes, zones 0-3 full, the rest empty; trims emptied zones 0-1")


def test_randwrite_max_open():
    """Random writes with max_open_zones=2 keep at most two zones open; a
    max_open_zones above the namespace's (4, from get_max_open_zones) is
    refused by fio."""
    wd = h.workdir()
    amount = 2 * MIB
    with h.target(wd, namespace=ZONED) as t:
        sums = run_clean(t, wd, ZBD + ["rw=randwrite", "bs=4k", "max_open_zones=2",
                                       f"io_size={amount}"])
        zones = zones_of(t)
        proc, _, stderr = run(t, wd, ZBD + ["rw=randwrite", "bs=4k", "max_open_zones=8",
                                            "io_size=64k"], name="too-many")
        t.stop()
    check(sums["write"]["bytes"] == amount, f"fio wrote {sums['write']['bytes']}, not {amount}")
    opened = [z for z in zones if z["state"] in ("implicitly_opened", "explicitly_opened")]
    check(len(opened) <= 2, f"{len(opened)} zones open after max_open_zones=2")
    check(written_bytes(zones) == amount, f"the zones hold {written_bytes(zones)} bytes")
    check(proc.returncode != 0 and f"larger than max ({MAX_OPEN})" in stderr,
          f"max_open_zones=8 on a namespace of {MAX_OPEN} was not refused by fio: {stderr[-1500:]}")
    print(f"randwrite: {amount} bytes, {len(opened)} zones open; max_open_zones=8 refused")


def test_zone_append():
    """zone_append=1: every write goes as Zone Append (the target counts no
    Write), lands where fio placed it (verify reads it back there), and fills
    the zones."""
    wd = h.workdir()
    with h.target(wd, namespace=ZONED) as t:
        sums = run_clean(t, wd, ZBD + ["rw=write", "bs=64k", "size=2M", "zone_append=1",
                                       "verify=crc32c", "verify_fatal=1", "verify_state_save=0"])
        zones = zones_of(t)
        t.stop()
    expected = 2 * CAPACITY
    check(sums["write"]["bytes"] == expected and sums["read"]["bytes"] == expected,
          f"fio wrote {sums['write']['bytes']}, verified {sums['read']['bytes']}; expected {expected}")
    stats = t.stats()
    appends = expected // (64 * KIB)
    check(stats["commands"]["write"] == 0, f"target counted {stats['commands']['write']} Writes")
    ns = stats["namespaces"][0]
    check(ns["commands"]["write"] == appends and ns["bytes"]["write"] == expected,
          f"namespace counted {ns['commands']['write']} appends of {ns['bytes']['write']} bytes, "
          f"expected {appends} of {expected}")
    check([z["state"] for z in zones[:3]] == ["full", "full", "empty"],
          f"zones 0-2: {[z['state'] for z in zones[:3]]}")
    print(f"zone_append: {appends} Zone Appends, {expected} bytes verified, no Write")


def test_verify():
    """Write then verify over three zones: every byte read back as written."""
    wd = h.workdir()
    with h.target(wd, namespace=ZONED) as t:
        sums = run_clean(t, wd, ZBD + ["rw=write", "bs=16k", "size=3M", "verify=crc32c",
                                       "verify_fatal=1", "verify_state_save=0"])
        t.stop()
    expected = 3 * CAPACITY
    check(sums["write"]["bytes"] == expected and sums["read"]["bytes"] == expected,
          f"wrote {sums['write']['bytes']}, verified {sums['read']['bytes']}; expected {expected}")
    check(t.stats()["errors"] == 0, f"target counted {t.stats()['errors']} errors")
    print(f"verify: {expected} bytes written and verified")


def test_numjobs():
    """Two jobs on one namespace share fio's zone state (the engine names
    their files after the target), each over two I/O queues (a zone's writes
    keep to one): no write misses a write pointer."""
    wd = h.workdir()
    amount = 2 * MIB
    with h.target(wd, namespace=ZONED) as t:
        sums = run_clean(t, wd, ZBD + ["rw=randwrite", "bs=4k", "size=4M", f"io_size={amount}",
                                       "numjobs=2", "nr_io_queues=2"])
        zones = zones_of(t)
        t.stop()
    check(sums["write"]["bytes"] == 2 * amount, f"fio wrote {sums['write']['bytes']}")
    check(t.stats()["errors"] == 0, f"target counted {t.stats()['errors']} errors")
    check(0 < written_bytes(zones) <= 4 * CAPACITY, f"the zones hold {written_bytes(zones)} bytes")
    print(f"numjobs=2, 2 queues each: {2 * amount} bytes over zones 0-3, no error")


def test_initial_zone_reset():
    """initial_zone_reset=1 empties every zone before the job: a zone the
    target made full (and the job never writes) is empty afterwards."""
    wd = h.workdir()
    full_zone = 5
    extra = ["--fault", f"zone-full={full_zone * ZONE_BLOCKS}"]
    with h.target(wd, namespace=ZONED, extra=extra) as t:
        check(zones_of(t)[full_zone]["state"] == "full", "the fault left the zone not full")
        sums = run_clean(t, wd, ZBD + ["rw=write", "bs=64k", "size=1M", "initial_zone_reset=1"])
        zones = zones_of(t)
        t.stop()
    check(sums["write"]["bytes"] == CAPACITY, f"fio wrote {sums['write']['bytes']}")
    check(zones[full_zone]["state"] == "empty", f"zone {full_zone}: {zones[full_zone]['state']}")
    check(zones[0]["state"] == "full", f"zone 0: {zones[0]['state']}")
    print(f"initial_zone_reset: zone {full_zone} reset, zone 0 written full")


def test_zone_faults():
    """The target's zone faults as the engine reports them: a write into a
    full zone (Zone Is Full), a read of an offline one (Zone Is Offline), and
    in zonemode=zbd the reset fio asks of a read only zone (Invalid Zone State
    Transition, the zone named)."""
    wd = h.workdir()
    offline, read_only = 2, 4
    extra = ["--fault", "zone-full=0", "--fault", f"zone-offline={offline * ZONE_BLOCKS}",
             "--fault", f"zone-read-only={read_only * ZONE_BLOCKS}"]
    cases = [(["rw=write", "bs=4k", "size=64k"], "write", "Zone Is Full"),
             (["rw=read", "bs=4k", f"offset={offline * ZONE}", "size=64k"], "read",
              "Zone Is Offline"),
             (ZBD + ["rw=write", "bs=64k", "size=6M"], "zbd",
              f"reset of the zone at byte {read_only * ZONE}")]
    with h.target(wd, namespace=ZONED, extra=extra) as t:
        for options, name, named in cases:
            proc, result, stderr = run(t, wd, options, name=name)
            check(proc.returncode != 0 and named in stderr,
                  f"{name}: rc {proc.returncode}, no '{named}' in:\n{stderr[-2000:]}")
            errors = dict(h.job_errors(result)) if result else {}
            check(errors.get(name) == EIO, f"{name}: job errors {errors}, expected EIO")
            print(f"{name}: EIO, '{named}'")
        t.stop()
    check("Invalid Zone State Transition" in stderr, f"zbd: the status is not named: {stderr}")


def test_not_zoned():
    """A namespace that is not zoned: zonemode=zbd without zonesize is fio's
    own refusal, with zonesize fio emulates zones; zone_append=1 is refused in
    one line naming the namespace."""
    wd = h.workdir()
    with h.target(wd, namespace="ram:16M") as t:
        proc, _, stderr = run(t, wd, ZBD + ["rw=write", "bs=64k", "size=2M"])
        check(proc.returncode != 0 and "Specifying the zone size is mandatory" in stderr,
              f"zonemode=zbd without zonesize: rc {proc.returncode}: {stderr[-1500:]}")
        sums = run_clean(t, wd, ZBD + ["zonesize=1M", "rw=write", "bs=64k", "size=2M"])
        check(sums["write"]["bytes"] == 2 * MIB, f"emulated zones: wrote {sums['write']['bytes']}")
        proc, result, stderr = run(t, wd, ZBD + ["zonesize=1M", "rw=write", "bs=64k", "size=2M",
                                                 "zone_append=1"], name="append")
        t.stop()
    line = f"zone_append=1: namespace 1 of {h.NQN} is not zoned"
    check(proc.returncode != 0 and line in stderr, f"zone_append=1 not refused: {stderr[-1500:]}")
    check(result is not None and dict(h.job_errors(result)).get("append") == EINVAL,
          f"zone_append=1: job errors {h.job_errors(result) if result else None}")
    print("not zoned: fio's zonesize line, emulated zones written, zone_append=1 refused")


TESTS = {"write": test_write, "randwrite-max-open": test_randwrite_max_open,
         "zone-append": test_zone_append, "verify": test_verify, "numjobs": test_numjobs,
         "initial-zone-reset": test_initial_zone_reset, "zone-faults": test_zone_faults,
         "not-zoned": test_not_zoned}

if __name__ == "__main__":
    h.run_named(TESTS)
