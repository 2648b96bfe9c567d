#!/usr/bin/env python3
"""Discovery from fio: a spec with no subnqn (or subnqn= the discovery NQN)
points at a discovery service; the engine reads its log and drives every
subsystem listed over the job's transport, one fio file each (NVMe/RDMA over
softverbs, or NVMe/TCP with NVMEOF_E2E_TRANSPORT=tcp: the target's discovery
service over TCP, trtype=tcp in the job). Against nvmeof-target serving
two subsystems: write + verify over both, the target's per-namespace counters
proving each got its share; and the failures (nothing usable listed, nothing
listening, a discovery spec among other files) as one clear error each.
One test per invocation: `fio_discovery.py TEST [ARGS]`."""
import time
from pathlib import Path

import harness as h
from harness import check

DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery"
SECOND = h.NQN + "-second"
# Sizes differ, so each namespace's byte count says which file it served.
SIZES = {(h.NQN, 1): 4 << 20, (SECOND, 1): 6 << 20}
TWO_SUBSYSTEMS = ["--subsystem", SECOND, "--namespace", "ram:6M"]


def write_verify_job(path, target_lines, mode="process"):
    threads = "thread=1\n" if mode == "thread" else ""
    # The transport as an option, unless the filename names it (SPDK's form).
    trtype = "" if "trtype=" in target_lines else f"trtype={h.TRANSPORT}\n"
    Path(path).write_text(f"""[global]
ioengine=external:{h.ENGINE}
{trtype}{target_lines}
{threads}rw=write
bs=64k
iodepth=8
verify=crc32c
verify_fatal=1
[discovered]
""")


def run_and_check_both(job, t):
    proc, result = h.run_fio(job, t)
    t.stop()
    check(proc.returncode == 0 and result is not None and not h.job_errors(result),
          f"fio failed (rc {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    used = [line for line in proc.stderr.splitlines() if "discovery at" in line and "using" in line]
    check(len(used) == 1 and f"127.0.0.1:{t.port}" in used[0] and h.NQN in used[0] and SECOND in used[0],
          f"expected one line naming the discovery service and both subsystems on stderr:\n{proc.stderr[-2000:]}")
    sums = h.totals(result)
    total = sum(SIZES.values())
    check(sums["write"]["bytes"] == total and sums["read"]["bytes"] == total,
          f"fio wrote {sums['write']['bytes']} and verified {sums['read']['bytes']} bytes, expected {total} each")
    per_ns = {(n["subnqn"], n["nsid"]): n["bytes"] for n in t.stats()["namespaces"]}
    for key, size in SIZES.items():
        got = per_ns.get(key, {"write": 0, "read": 0})
        check(got["write"] == size and got["read"] == size,
              f"namespace {key}: the target wrote {got['write']} / read {got['read']} bytes, expected {size}")
    print(f"fio said: {used[0].strip()}")
    print("target per namespace: " + ", ".join(f"{k[0].split(':')[-1]}/{k[1]}: {per_ns[k]}" for k in SIZES))


def test_no_subnqn(mode):
    """traddr and trsvcid only, as engine options: both subsystems written and verified."""
    wd = h.workdir()
    with h.target(wd, namespace="ram:4M", extra=TWO_SUBSYSTEMS) as t:
        job = wd + "/discovery.fio"
        write_verify_job(job, f"traddr={t.address}\ntrsvcid={t.port}", mode)
        run_and_check_both(job, t)


def test_discovery_nqn_filename():
    """SPDK's filename form with subnqn= the discovery NQN."""
    wd = h.workdir()
    with h.target(wd, namespace="ram:4M", extra=TWO_SUBSYSTEMS) as t:
        job = wd + "/discovery.fio"
        nqn = DISCOVERY_NQN
        write_verify_job(job, f"filename=trtype={h.TRANSPORT.upper()} adrfam=IPv4 traddr={t.address} "
                              f"trsvcid={t.port} subnqn={nqn} ns=1")
        run_and_check_both(job, t)


def expect_one_error(proc, needles, started):
    check(proc.returncode != 0, f"fio exited 0; expected a failure mentioning {needles}")
    lines = [line for line in proc.stderr.splitlines() if all(n in line for n in needles)]
    check(len(lines) >= 1, f"no line with {needles} in:\n{proc.stderr[-3000:]}")
    check(len({line.split(': ', 1)[-1] for line in lines}) == 1, f"more than one kind of error:\n{lines}")
    check(time.monotonic() - started < 30, "the failure took more than 30 s")
    print(f"fio said: {lines[0].strip()}")


def test_nothing_usable():
    """The only subsystem admits another host: the log lists nothing for us."""
    wd = h.workdir()
    with h.target(wd, extra=["--allow-host", "nqn.2026-12.io.nvmeof:someone-else"]) as t:
        job = wd + "/discovery.fio"
        write_verify_job(job, f"traddr={t.address}\ntrsvcid={t.port}")
        started = time.monotonic()
        proc, _ = h.run_fio(job, t)
        t.stop()
    expect_one_error(proc, [f"127.0.0.1:{t.port}", "lists no NVM subsystem"], started)


def test_nothing_listening():
    wd = h.workdir()
    with h.target(wd) as t:  # find a free port, then stop the target
        port = t.port
    job = wd + "/discovery.fio"
    write_verify_job(job, f"traddr=127.0.0.1\ntrsvcid={port}\nconnect_timeout_ms=5000")
    started = time.monotonic()
    proc, _ = h.run_fio(job, None)
    expect_one_error(proc, [f"discovery at 127.0.0.1:{port}"], started)


def test_mixed_files():
    """A discovery spec among other files is refused before anything connects."""
    wd = h.workdir()
    with h.target(wd) as t:
        job = wd + "/discovery.fio"
        write_verify_job(job, f"filename=traddr={t.address} trsvcid={t.port} subnqn={h.NQN.replace(':', chr(92) + ':')}"
                              f":traddr={t.address} trsvcid={t.port}")
        started = time.monotonic()
        proc, _ = h.run_fio(job, t)
        t.stop()
        stats = t.stats()
    expect_one_error(proc, ["discovery spec must be the job's only file"], started)
    check(stats["bytes"]["write"] == 0 and stats["bytes"]["read"] == 0, f"I/O reached the target: {stats['bytes']}")


TESTS = {
    "no-subnqn": test_no_subnqn,
    "discovery-nqn-filename": test_discovery_nqn_filename,
    "nothing-usable": test_nothing_usable,
    "nothing-listening": test_nothing_listening,
    "mixed-files": test_mixed_files,
}

if __name__ == "__main__":
    h.run_named(TESTS)
