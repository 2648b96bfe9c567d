#!/usr/bin/env python3
"""fio with blocks far above what one queue can hold at once: bs=8M against a
target of MDTS 128 KiB (64 commands per I/O) and an 8-entry queue (7 usable
slots). The engine queues each I/O in parts; every block is verified and the
target's counters equal fio's totals. Over softverbs, or over NVMe/TCP with
NVMEOF_E2E_TRANSPORT=tcp (each part's data fetched by an R2T instead of an
RDMA READ). One test per invocation: `fio_large_block.py TEST`."""

import harness as h
from harness import check

MIB = 1024 * 1024


def test_large_block():
    wd = h.workdir()
    job = wd + "/large-block-8m.fio"
    h.write_job(job, """[global]
{TARGET}rw=write
bs=8m
size=64m
iodepth=4
verify=crc32c
verify_fatal=1
do_verify=1
verify_state_save=0
[large-block-8m]
""")
    with h.target(wd, extra=["--mqes", "7", "--mdts", "5"]) as t:
        proc, result = h.run_fio(job, t)
        t.stop()
    check(proc.returncode == 0 and result is not None,
          f"fio failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    check(not h.job_errors(result), f"job errors: {h.job_errors(result)}")
    sums = h.totals(result)
    check(sums["write"]["bytes"] == 64 * MIB, f"fio wrote {sums['write']['bytes']} bytes, not 64 MiB")
    check(sums["read"]["bytes"] == 64 * MIB, f"verify read {sums['read']['bytes']} bytes, not 64 MiB")
    stats = t.stats()
    check(stats["bytes"]["write"] == sums["write"]["bytes"],
          f"target received {stats['bytes']['write']} written bytes, fio reports {sums['write']['bytes']}")
    check(stats["bytes"]["read"] == sums["read"]["bytes"],
          f"target sent {stats['bytes']['read']} read bytes, fio reports {sums['read']['bytes']}")
    pieces = 64 * MIB // (128 * 1024)
    check(stats["commands"]["write"] == pieces and stats["commands"]["read"] == pieces,
          f"expected {pieces} write and read commands of 128 KiB, target counted {stats['commands']}")
    check(stats["max_inflight"]["io"] <= 7, f"more than 7 commands in flight: {stats['max_inflight']}")
    if t.transport == "tcp":
        # Each 128 KiB part is above the capsule's 4 KiB of data: fetched by
        # one R2T, answered by one H2CData PDU (MAXH2CDATA 128 KiB); each part
        # read back in two C2HData PDUs of 64 KiB (the Identify data besides).
        # RDMA's check of how the target batches its posts has no TCP twin:
        # the TCP target appends every PDU to one output buffer and counts no
        # send calls.
        tcp = stats["tcp"]
        check(stats["in_capsule_writes"] == 0 and tcp["r2t"] == pieces and tcp["h2c_data"] == pieces,
              f"expected {pieces} R2Ts each answered by one H2CData PDU, none in-capsule: {tcp}, "
              f"in-capsule {stats['in_capsule_writes']}")
        check(tcp["c2h_data"] >= 2 * pieces and tcp["term_reqs"] == 0,
              f"expected at least {2 * pieces} C2HData PDUs and no C2HTermReq: {tcp}")
        print(f"bs=8m: fio wrote and verified {sums['write']['bytes']} B; target commands {stats['commands']}, "
              f"max in flight {stats['max_inflight']['io']}, {tcp['r2t']} R2Ts, {tcp['h2c_data']} H2CData, "
              f"{tcp['c2h_data']} C2HData PDUs")
        return
    # Each poll pass posts its RDMA READs (and responses) as one list: fewer
    # calls than READs (one call per READ before; 268-277 calls for 516 READs).
    rdma = stats["rdma"]
    check(rdma["post_send_calls"] < rdma["read_ops"],
          f"the target posted its {rdma['read_ops']} RDMA READs in {rdma['post_send_calls']} calls")
    print(f"bs=8m: fio wrote and verified {sums['write']['bytes']} B; target commands {stats['commands']}, "
          f"max in flight {stats['max_inflight']['io']}, {rdma['post_send_calls']} ibv_post_send calls "
          f"for {rdma['read_ops']} RDMA READs")


TESTS = {"large-block": test_large_block}

if __name__ == "__main__":
    h.run_named(TESTS)
