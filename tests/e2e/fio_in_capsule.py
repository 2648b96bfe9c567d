#!/usr/bin/env python3
"""fio 4 KiB random writes with verify and the engine option in_capsule_writes:
with 1 every write carries its data in the command capsule (the target counts
each as in-capsule and does no RDMA READ beyond the Connect data fetches),
with 0, or against a target whose capsule holds only the command (--ioccsz 4),
every write is fetched by an RDMA READ. The only other RDMA READs are of the
Connect data (always keyed), one per Connect the target counted, and of Host Behavior
Support's (keyed on the admin queue), one per controller. Over NVMe/TCP
(NVMEOF_E2E_TRANSPORT=tcp) a write not in the capsule is fetched by an R2T
(answered by H2CData) instead, counted instead of RDMA READs; the admin
queue's Connect and Host Behavior Support data always travel in its capsule
(8 KiB), an I/O queue's Connect data as its writes do. One test per
invocation: `fio_in_capsule.py TEST`."""

import harness as h
from harness import check

MIB = 1024 * 1024
SIZE = 16 * MIB
BLOCK = 4096


def run(in_capsule_writes, target_extra=()):
    wd = h.workdir()
    job = wd + "/in-capsule.fio"
    h.write_job(job, f"""[global]
{{TARGET}}in_capsule_writes={in_capsule_writes}
rw=randwrite
bs={BLOCK}
size={SIZE}
iodepth=16
verify=crc32c
verify_fatal=1
do_verify=1
verify_state_save=0
[in-capsule-{in_capsule_writes}]
""")
    with h.target(wd, extra=list(target_extra)) as t:
        proc, result = h.run_fio(job, t)
        t.stop()
    check(proc.returncode == 0 and result is not None,
          f"fio failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    check(not h.job_errors(result), f"job errors: {h.job_errors(result)}")
    sums = h.totals(result)
    check(sums["write"]["bytes"] == SIZE, f"fio wrote {sums['write']['bytes']} bytes, not {SIZE}")
    check(sums["read"]["bytes"] == SIZE, f"verify read {sums['read']['bytes']} bytes, not {SIZE}")
    stats = t.stats()
    writes = SIZE // BLOCK
    check(stats["commands"]["write"] == writes,
          f"target counted {stats['commands']['write']} writes, expected {writes}")
    return stats, writes


def fetches(stats, in_capsule):
    """The target's data fetches besides the capsule's, what they are, and
    how many of them are not writes: over RDMA the RDMA READs, the Connect
    (always keyed) and Host Behavior Support data among them; over TCP the
    R2Ts, the I/O queues' Connect data among them when writes do not go in
    the capsule (an admin queue's Connect, one per controller, and its Host
    Behavior Support data always do)."""
    connects = stats["commands"]["connect"]
    if h.TRANSPORT == "tcp":
        return stats["tcp"]["r2t"], "R2Ts", 0 if in_capsule else connects - stats["controllers"]
    return stats["rdma"]["read_ops"], "RDMA READs", connects + stats["controllers"]


def test_on():
    stats, writes = run(1)
    check(stats["in_capsule_writes"] == writes,
          f"{stats['in_capsule_writes']} of {writes} writes came in-capsule")
    fetched, what, others = fetches(stats, in_capsule=True)
    check(fetched == others,
          f"target did {fetched} {what}, expected only the {others} of the Connect and Host "
          f"Behavior Support data")
    print(f"in_capsule_writes=1: {writes} writes, all in-capsule, verified; {what} {fetched}")


def check_keyed(stats, writes, label):
    check(stats["in_capsule_writes"] == 0,
          f"{label}: {stats['in_capsule_writes']} writes came in-capsule, expected none")
    fetched, what, others = fetches(stats, in_capsule=False)
    check(fetched == writes + others,
          f"{label}: target did {fetched} {what}, expected {writes} writes + {others} Connect and "
          f"Host Behavior Support data")
    print(f"{label}: {writes} writes, all fetched by the target ({what}), verified")


def test_off():
    stats, writes = run(0)
    check_keyed(stats, writes, "in_capsule_writes=0")


def test_no_room():
    stats, writes = run(1, ["--ioccsz", "4"])
    check_keyed(stats, writes, "in_capsule_writes=1, target IOCCSZ 4")


TESTS = {"on": test_on, "off": test_off, "no-room": test_no_room}

if __name__ == "__main__":
    h.run_named(TESTS)
