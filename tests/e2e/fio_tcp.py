#!/usr/bin/env python3
"""fio through the engine over NVMe/TCP against nvmeof-target --transport tcp
(the kernel's loopback TCP, no softverbs): verify with each digest setting
across block sizes from 512 B to 4 MiB (split at MDTS, writes answered by
R2Ts whose data goes in several H2CData PDUs, reads in several C2HData PDUs)
and SPDK's filename form. (Reconnect over TCP: fio_reconnect.py with
NVMEOF_E2E_TRANSPORT=tcp.)

    fio_tcp.py verify NONE|HEADER|DATA|BOTH | spdk-filename
"""
import harness as h
from harness import check

# Small PDUs on both sides, so every large transfer is reassembled from pieces.
TCP_TARGET = ["--mdts", "5", "--maxh2cdata", "8K", "--c2h-pdu-bytes", "16K"]
DEPTHS = {"NONE": 1, "HEADER": 32, "DATA": 128, "BOTH": 16}
JOBS, SIZE_MB = 4, 8


def test_verify(digest):
    """randrw verify, bssplit 512 B to 4 MiB, numjobs 4 on 2 I/O queues each."""
    wd = h.workdir()
    job = wd + "/tcp-verify.fio"
    h.write_job(job, f"""[global]
{{TARGET}}digest_enable={digest}
nr_io_queues=2
rw=randrw
bssplit=512/10:4k/40:64k/20:1m/20:4m/10
blockalign=512
iodepth={DEPTHS[digest]}
numjobs={JOBS}
size={SIZE_MB}m
offset_increment={SIZE_MB}m
verify=crc32c
verify_fatal=1
verify_state_save=0
[tcp-{digest.lower()}]
""", transport="tcp")
    with h.target(wd, namespace="ram:64M:512", extra=TCP_TARGET, transport="tcp") as t:
        proc, result = h.run_fio(job, t, timeout=240)
        t.stop()
    check(proc.returncode == 0 and result is not None, f"fio failed:\n{proc.stderr[-3000:]}")
    check(not h.job_errors(result), f"job errors: {h.job_errors(result)}")
    sums = h.totals(result)
    check(sums["read"]["ios"] > 0 and sums["write"]["ios"] > 0, f"no reads or writes: {sums}")
    tcp = t.stats()["tcp"]
    check(tcp["r2t"] > 0, f"no write was answered by an R2T: {tcp}")
    check(tcp["h2c_data"] > tcp["r2t"], f"no R2T's data went in several H2CData PDUs: {tcp}")
    check(tcp["c2h_data"] > 0 and tcp["term_reqs"] == 0, f"target TCP counters: {tcp}")


def test_spdk_filename():
    """SPDK's plugin form: trtype=TCP in the filename, QD 1 write then verify."""
    wd = h.workdir()
    job = wd + "/tcp-filename.fio"
    with h.target(wd, transport="tcp") as t:
        nqn = h.NQN.replace(":", "\\\\:")
        h.write_job(job, f"""[global]
ioengine=external:${{NVMEOF_ENGINE}}
filename=trtype=TCP adrfam=IPv4 traddr=127.0.0.1 trsvcid={t.port} subnqn={nqn} ns=1
rw=write
bs=4k
iodepth=1
size=4m
verify=crc32c
verify_fatal=1
verify_state_save=0
[tcp-filename]
""")
        proc, result = h.run_fio(job, t, timeout=120)
        t.stop()
    check(proc.returncode == 0 and result is not None, f"fio failed:\n{proc.stderr[-3000:]}")
    check(not h.job_errors(result), f"job errors: {h.job_errors(result)}")
    check(h.totals(result)["read"]["bytes"] == 4 << 20, f"verify read back {h.totals(result)}")


if __name__ == "__main__":
    h.run_named({"verify": test_verify, "spdk-filename": test_spdk_filename})
