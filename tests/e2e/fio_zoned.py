#!/usr/bin/env python3
"""fio's zonemode=zbd through the engine, against nvmeof-target's zoned RAM
namespaces: sequential and random writes (within the open zone limit fio read
from the engine), SPDK's zone_append and initial_zone_reset, verify, two jobs
on one namespace, the zone statuses the target's faults give, the options
refused on a namespace that is not zoned, and writes and Zone Appends through
a reconnect (docs/zoned.md). Each test checks what fio moved, what the target
counted and the zones as the Python package reports them after the job. Over
NVMe/TCP with NVMEOF_E2E_TRANSPORT=tcp. One test per invocation:
`fio_zoned.py TEST`."""

import json
import os
import re
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
EIO, EINVAL, ECONNRESET, ESHUTDOWN = 5, 22, 104, 108

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


# Reconnect options as tests/e2e/fio_reconnect.py sets them, with a short delay.
RECONNECT = ["ctrl_loss_tmo_ms=10000", "reconnect_delay_ms=100", "io_timeout_ms=5000"]
VERIFY = ["verify=crc32c", "verify_fatal=1", "verify_state_save=0"]
# The engine's lines (engine/job.cpp, engine/job_setup.cpp) and the core's (core/host/reconnect.cpp).
RECONNECTED = re.compile(r"reconnected after an outage of \d+ ms \(CNTLID \d+\), (\d+) I/Os re-sent")
SUMMARY = re.compile(r": (\d+) reconnects \(outages: [^)]*\), \d+ failed attempts, (\d+) I/Os retried")
REFUSED = re.compile(r"write of (\d+) bytes at offset (\d+) failed: Write: Zone Invalid Write "
                     r"\(SCT 0x1 SC 0xbc, DNR\): if a reconnect re-sent it, the write had reached "
                     r"the controller before the outage")
# A queue that saw the connection end says disconnected (ECONNRESET); one torn
# down because another queue of the controller saw it first, closed (ESHUTDOWN).
APPEND_FAILED = re.compile(r"write of (\d+) bytes at offset (\d+) failed: Zone Append: "
                           r"(?:disconnected|closed) \(")


def reconnects(stderr):
    """(reconnects, I/Os retried) of the engine's end-of-job note, and the
    I/Os each reconnect re-sent."""
    summary = SUMMARY.search(stderr)
    counts = (int(summary.group(1)), int(summary.group(2))) if summary else (0, 0)
    return counts, [int(n) for n in RECONNECTED.findall(stderr)]


def test_reconnect_outage():
    """rw=write with verify over three zones through an outage in the middle of
    the writes (outage-after: every connection dropped, nothing listening for
    300 ms). The writes held through it had not reached the controller (16
    KiB, above the capsule: their data was still to be fetched, by RDMA READ
    or R2T), and those the target had answered are completed by the host's
    teardown, not held: the reconnect re-sends the held ones at the write
    pointer, verify passes, the zones hold exactly the bytes written, the
    target counts no error, and the engine logs one reconnect that re-sent
    writes."""
    wd = h.workdir()
    with h.target(wd, namespace=ZONED, extra=["--fault", "outage-after=60:300"]) as t:
        proc, result, stderr = run(t, wd, ZBD + ["rw=write", "bs=16k", "size=3M"] + VERIFY +
                                   RECONNECT)
        zones = zones_of(t)
        target_log = t.stop()
    check("fault: outage-after=60:300: dropping every connection" in target_log,
          f"the target's outage did not happen:\n{target_log[-2000:]}")
    check(proc.returncode == 0 and result is not None and not h.job_errors(result),
          f"fio failed across the outage (rc {proc.returncode}):\n{stderr[-3000:]}")
    (count, retried), resent = reconnects(stderr)
    check(count == 1 and len(resent) == 1 and resent[0] > 0 and retried == resent[0],
          f"expected one reconnect that re-sent writes, found {count} reconnects, re-sent "
          f"{resent}, {retried} retried:\n{stderr[-3000:]}")
    expected = 3 * CAPACITY
    sums = h.totals(result)
    check(sums["write"]["bytes"] == expected and sums["read"]["bytes"] == expected,
          f"wrote {sums['write']['bytes']}, verified {sums['read']['bytes']}; expected {expected}")
    check([z["state"] for z in zones[:4]] == ["full"] * 3 + ["empty"],
          f"zones 0-3 after the job: {[z['state'] for z in zones[:4]]}")
    check(written_bytes(zones) == expected,
          f"the zones hold {written_bytes(zones)} bytes, fio wrote {expected}")
    stats = t.stats()
    ns = stats["namespaces"][0]
    check(stats["errors"] == 0 and ns["bytes"]["write"] == expected,
          f"the target counted {stats['errors']} errors and {ns['bytes']['write']} bytes written, "
          f"expected none and {expected}")
    print(f"outage: {resent[0]} writes re-sent by the reconnect, {expected} bytes written once "
          f"and verified, zones 0-2 full")


def test_reconnect_write_ran():
    """A write the controller ran but never answered (drop-after-run: its
    answer withheld, every connection dropped) is re-sent by the reconnect and
    refused by the zone's write pointer: the job fails that write, and only
    it, with EIO, Zone Invalid Write and the engine's line that it had reached
    the controller before the outage. Its blocks were written once: the zones
    hold the bytes fio wrote plus that write's (the writes held behind it, which
    the target never ran, were re-sent and landed)."""
    wd = h.workdir()
    with h.target(wd, namespace=ZONED, extra=["--fault", "drop-after-run=20"]) as t:
        proc, result, stderr = run(t, wd, ZBD + ["rw=write", "bs=16k", "size=3M"] + VERIFY +
                                   RECONNECT)
        zones = zones_of(t)
        target_log = t.stop()
    check("fault: drop-after-run=20: QID 1 CID " in target_log,
          f"the target did not run a write and drop its answer:\n{target_log[-2000:]}")
    errors = dict(h.job_errors(result)) if result else {}
    check(proc.returncode != 0 and errors.get("zoned") == EIO,
          f"fio: rc {proc.returncode}, job errors {errors}; expected EIO:\n{stderr[-3000:]}")
    refused = [(int(b), int(o)) for b, o in REFUSED.findall(stderr)]
    check(len(refused) == 1 and refused[0][0] == 16 * KIB,
          f"expected one 16 KiB write refused with Zone Invalid Write and the engine's line that it "
          f"had reached the controller, found {refused}:\n{stderr[-3000:]}")
    (count, retried), resent = reconnects(stderr)
    check(count == 1 and retried >= 1,
          f"expected one reconnect re-sending the write, found {count} reconnects, {retried} I/Os "
          f"retried:\n{stderr[-3000:]}")
    size, offset = refused[0]
    wrote = h.totals(result)["write"]["bytes"]
    check(written_bytes(zones) == wrote + size,
          f"the zones hold {written_bytes(zones)} bytes; fio wrote {wrote} and the refused write "
          f"{size} once, {wrote + size}")
    zone = zones[offset // ZONE]
    check((zone["wp"] - zone["start"]) * BLOCK >= offset % ZONE + size,
          f"the refused write at byte {offset} is not below its zone's write pointer: {zone}")
    check(t.stats()["errors"] == 1, f"the target counted {t.stats()['errors']} errors, not 1")
    print(f"write run, answer lost: the {size}-byte write at {offset} re-sent and refused (Zone "
          f"Invalid Write), written once; {retried - 1} writes held behind it re-sent and landed")


def test_reconnect_zone_append():
    """zone_append=1: the Zone Append the controller ran but never answered
    (drop-after-run), and those in flight behind it (which the target never
    ran), fail with the queue's error (`Zone Append: disconnected`,
    ECONNRESET, or `closed`, ESHUTDOWN, where the admin queue saw the outage
    first) and are never re-sent: the zones hold the bytes fio appended plus
    that one append's, once, as many as the target appended."""
    wd = h.workdir()
    with h.target(wd, namespace=ZONED, extra=["--fault", "drop-after-run=20"]) as t:
        proc, result, stderr = run(t, wd, ZBD + ["rw=write", "bs=16k", "size=3M",
                                                 "zone_append=1"] + VERIFY + RECONNECT)
        zones = zones_of(t)
        target_log = t.stop()
    check("fault: drop-after-run=20: QID 1 CID " in target_log,
          f"the target did not run a Zone Append and drop its answer:\n{target_log[-2000:]}")
    errors = dict(h.job_errors(result)) if result else {}
    check(proc.returncode != 0 and errors.get("zoned") in (ECONNRESET, ESHUTDOWN),
          f"fio: rc {proc.returncode}, job errors {errors}; expected ECONNRESET or ESHUTDOWN:\n"
          f"{stderr[-3000:]}")
    failed = sorted((int(o), int(b)) for b, o in APPEND_FAILED.findall(stderr))
    check(failed and all(b == 16 * KIB for _, b in failed) and "Zone Invalid Write" not in stderr,
          f"expected the 16 KiB Zone Appends in flight failed back with the queue's error (and "
          f"none re-sent), found {failed}:\n{stderr[-3000:]}")
    appended = h.totals(result)["write"]["bytes"]
    size = 16 * KIB  # the append the target ran
    check(written_bytes(zones) == appended + size,
          f"the zones hold {written_bytes(zones)} bytes; fio appended {appended} and the failed "
          f"append ran once: {appended + size} (twice: {appended + 2 * size})")
    ns = t.stats()["namespaces"][0]
    check(ns["bytes"]["write"] == appended + size,
          f"the target appended {ns['bytes']['write']} bytes, expected {appended + size}")
    print(f"Zone Append run, answer lost: {len(failed)} in flight failed back (errno "
          f"{errors['zoned']}), never re-sent; the zones hold {appended} + {size} bytes")


TESTS = {"write": test_write, "randwrite-max-open": test_randwrite_max_open,
         "zone-append": test_zone_append, "verify": test_verify, "numjobs": test_numjobs,
         "initial-zone-reset": test_initial_zone_reset, "zone-faults": test_zone_faults,
         "not-zoned": test_not_zoned, "reconnect-outage": test_reconnect_outage,
         "reconnect-write-ran": test_reconnect_write_ran,
         "reconnect-zone-append": test_reconnect_zone_append}

if __name__ == "__main__":
    h.run_named(TESTS)
