#!/usr/bin/env python3
"""fio end-to-end tests through libfio_nvmeof.so against nvmeof-target over
softverbs; `job` also over NVMe/TCP with NVMEOF_E2E_TRANSPORT=tcp. One test
per invocation: `fio_e2e.py TEST [ARG]`."""
import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import harness as h
from harness import check


def test_job(job):
    """A shipped job file runs clean, and the target saw exactly the I/O fio reports."""
    wd = h.workdir()
    with h.target(wd) as t:
        proc, result = h.run_fio(h.shortened_job(job, wd), t)
        stderr = t.stop()
    check(proc.returncode == 0 and result is not None,
          f"fio failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}\n{stderr[-2000:]}")
    check(not h.job_errors(result), f"job errors: {h.job_errors(result)}")
    sums = h.totals(result)
    stats = t.stats()
    check(sums["read"]["bytes"] + sums["write"]["bytes"] > 0, "fio moved no data")
    check(stats["bytes"]["write"] == sums["write"]["bytes"],
          f"target received {stats['bytes']['write']} written bytes, fio reports {sums['write']['bytes']}")
    check(stats["bytes"]["read"] == sums["read"]["bytes"],
          f"target sent {stats['bytes']['read']} read bytes, fio reports {sums['read']['bytes']}")
    # Each I/O is at least one command; above MDTS it is several.
    check(stats["commands"]["write"] >= sums["write"]["ios"], "fewer write commands than fio writes")
    check(stats["commands"]["read"] >= sums["read"]["ios"], "fewer read commands than fio reads")
    if t.transport == "tcp":
        check_tcp_data_path(stats, job)
    print(f"{job}: fio read {sums['read']['bytes']} B / write {sums['write']['bytes']} B; "
          f"target commands {stats['commands']}")


# How the writes of the jobs with an NVMe/TCP twin must travel: quickstart's
# 4 KiB all in the capsule; mixed-verify's 4 to 64 KiB both ways on one queue.
TCP_WRITES = {"quickstart.fio": "in-capsule", "mixed-verify.fio": "both"}


def check_tcp_data_path(stats, job):
    """Over NVMe/TCP every write's data came in its command capsule (up to
    4 KiB: the target's IOCCSZ) or was fetched by one R2T, answered by one
    H2CData PDU (no job writes above MAXH2CDATA, 128 KiB); every read's data
    went back in C2HData PDUs; no connection was ended by a C2HTermReq."""
    writes, tcp = stats["commands"]["write"], stats["tcp"]
    in_capsule = stats["in_capsule_writes"]
    check(in_capsule + tcp["r2t"] == writes and tcp["h2c_data"] == tcp["r2t"],
          f"{writes} writes: {in_capsule} in-capsule, {tcp['r2t']} R2Ts, {tcp['h2c_data']} H2CData PDUs")
    expect = TCP_WRITES.get(job)
    check(expect != "in-capsule" or in_capsule == writes > 0,
          f"{job}: {in_capsule} of {writes} writes in-capsule, expected all")
    check(expect != "both" or (in_capsule > 0 and tcp["r2t"] > 0),
          f"{job}: {in_capsule} writes in-capsule and {tcp['r2t']} by R2T, expected some of each")
    check(tcp["c2h_data"] >= stats["commands"]["read"] and tcp["term_reqs"] == 0,
          f"{stats['commands']['read']} reads: target TCP counters {tcp}")
    print(f"over TCP: {in_capsule} writes in-capsule, {tcp['r2t']} fetched by R2T; "
          f"{tcp['c2h_data']} C2HData PDUs")


def test_verify_modes(mode):
    """Write then verify in process or thread mode, numjobs > 1, blocks above MDTS."""
    wd = h.workdir()
    job = wd + "/verify.fio"
    threads = "thread=1\n" if mode == "thread" else ""
    h.write_job(job, f"""[global]
{{TARGET}}{threads}rw=write
bsrange=4k-512k
iodepth=8
numjobs=3
size=8m
offset_increment=8m
verify=crc32c
verify_fatal=1
[verify-{mode}]
""")
    with h.target(wd, extra=["--mdts", "5"]) as t:  # 128 KiB: 512 KiB I/Os split in 4
        proc, result = h.run_fio(job, t)
        t.stop()
    check(proc.returncode == 0 and result is not None, f"fio failed:\n{proc.stderr[-3000:]}")
    check(not h.job_errors(result), f"job errors: {h.job_errors(result)}")
    sums = h.totals(result)
    check(sums["read"]["bytes"] == sums["write"]["bytes"] == 3 * 8 * 1024 * 1024,
          f"verify did not read back everything written: {sums}")
    check(t.stats()["max_inflight"]["io"] >= 2, "no split pieces were in flight together")


def test_restart_verify():
    """Blocks written before a file-backed target restarts all read back verified."""
    wd = h.workdir()
    backing = wd + "/namespace.img"
    spec = f"file:{backing}"
    job = wd + "/restart.fio"
    h.write_job(job, """[global]
{TARGET}rw=randwrite
bs=4k
iodepth=16
size=16m
verify=crc32c
verify_fatal=1
[restart]
""")
    with h.target(wd, namespace=spec, extra=["--size", "64M"]) as t:
        proc, result = h.run_fio(job, t, args=["--do_verify=0"])
        t.stop()
    check(proc.returncode == 0 and not h.job_errors(result), f"write phase failed:\n{proc.stderr[-3000:]}")
    with h.target(wd, namespace=spec) as t:
        proc, result = h.run_fio(job, t, args=["--verify_only"])
        t.stop()
    check(proc.returncode == 0 and result is not None and not h.job_errors(result),
          f"verify after restart failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    check(h.totals(result)["read"]["bytes"] == 16 * 1024 * 1024, "verify-only read less than was written")


def expect_clean_failure(proc, needle):
    text = proc.stderr  # fio's JSON on stdout echoes the options; errors go to stderr
    check(proc.returncode != 0, f"fio exited 0; expected a failure mentioning {needle!r}")
    check(needle.lower() in text.lower(), f"no clear message {needle!r} in:\n{text[-3000:]}")
    for line in text.splitlines():
        if needle.lower() in line.lower():
            print(f"fio said: {line.strip()}")
            break


def test_bad_option():
    wd = h.workdir()
    with h.target(wd) as t:
        proc, _ = h.run_fio(h.shortened_job("randread-4k.fio", wd), t, extra_env={"NVMEOF_TRSVCID": "44x20"})
        t.stop()
    expect_clean_failure(proc, "trsvcid=44x20")


def test_unaligned():
    """An I/O whose offset or length is not a multiple of the namespace's block
    size fails with EINVAL, naming the block size (queue()'s uncommon path)."""
    wd = h.workdir()
    job = wd + "/unaligned.fio"
    # offset=1000: every I/O starts 1000 bytes past a block boundary.
    h.write_job(job, "[global]\n{TARGET}rw=read\nbs=4k\noffset=1000\nsize=64k\n[unaligned]\n")
    with h.target(wd) as t:
        proc, _ = h.run_fio(job, t, timeout=60)
        t.stop()
    expect_clean_failure(proc, "not aligned to the namespace's 512-byte blocks")


def test_offset_past_end():
    """offset= at or past the end of the namespace fails the job with one line
    naming the offset and the namespace's size (fio itself would run it and
    move nothing); a clone that offset_increment puts past the end fails alone.
    A range only partly past the end is fio's to truncate: it runs."""
    wd = h.workdir()
    size = 16 << 20
    job = wd + "/offset.fio"
    cases = [  # (job lines, the line expected, or None for a job that runs)
        ("offset=16m\nsize=1m\n", f"offset={size} is at or beyond the end of namespace 1"),
        ("offset=20m\n", f"offset={20 << 20} is at or beyond the end of namespace 1"),
        ("offset=100%\nsize=1m\n", f"offset={size} is at or beyond the end of namespace 1"),
        ("offset=15m\nsize=4m\n", None),
    ]
    with h.target(wd, namespace=f"ram:{size >> 20}M") as t:
        for lines, needle in cases:
            h.write_job(job, f"[global]\n{{TARGET}}rw=read\nbs=4k\n{lines}[offset]\n")
            proc, result = h.run_fio(job, t, timeout=60)
            label = lines.replace("\n", " ").strip()
            check(result is not None, f"{label}: fio's JSON does not parse:\n{proc.stdout[-2000:]}")
            if needle is None:
                check(proc.returncode == 0 and not h.job_errors(result),
                      f"{label}: fio failed (rc {proc.returncode}):\n{proc.stderr[-2000:]}")
                check(h.totals(result)["read"]["bytes"] == 1 << 20,
                      f"{label}: expected the 1 MiB left before the end, fio read {h.totals(result)['read']}")
                print(f"{label}: ran, read the 1 MiB before the end")
                continue
            engine_lines = [line for line in proc.stderr.splitlines() if "nvmeof:" in line]
            check(proc.returncode != 0, f"{label}: fio exited 0:\n{proc.stderr[-2000:]}")
            check(len(engine_lines) == 1 and needle in engine_lines[0] and f"({size} bytes)" in engine_lines[0],
                  f"{label}: expected one engine line with {needle!r}, got:\n{proc.stderr[-2000:]}")
            check(h.job_errors(result) == [("offset", errno.EINVAL)],
                  f"{label}: job errors {h.job_errors(result)}, expected EINVAL")
            check(h.totals(result)["read"]["bytes"] == 0, f"{label}: fio read data")
            print(f"{label}: {engine_lines[0].strip()}")
        # numjobs=2, offset_increment=16m: the second clone starts at the end.
        h.write_job(job, "[global]\n{TARGET}rw=read\nbs=4k\nsize=1m\nnumjobs=2\noffset_increment=16m\n"
                         "group_reporting=0\n[offset]\n")
        proc, result = h.run_fio(job, t, timeout=60)
        t.stop()
    check(result is not None, f"numjobs=2: fio's JSON does not parse:\n{proc.stdout[-2000:]}")
    engine_lines = [line for line in proc.stderr.splitlines() if "is at or beyond the end" in line]
    check(proc.returncode != 0 and len(engine_lines) == 1 and f"offset={size} " in engine_lines[0],
          f"numjobs=2: expected one line for the second clone (rc {proc.returncode}):\n{proc.stderr[-2000:]}")
    errors = [j["error"] for j in result["jobs"]]
    reads = [j["read"]["io_bytes"] for j in result["jobs"]]
    check(errors == [0, errno.EINVAL] and reads == [1 << 20, 0],
          f"numjobs=2: expected the first clone to read 1 MiB and the second to fail, got errors {errors}, reads {reads}")
    print(f"numjobs=2, offset_increment=16m: {engine_lines[0].strip()}")


def test_wrong_nqn():
    wd = h.workdir()
    with h.target(wd) as t:
        proc, _ = h.run_fio(h.shortened_job("randread-4k.fio", wd), t,
                            extra_env={"NVMEOF_SUBNQN": "nqn.2026-12.io.nvmeof:nope"})
        t.stop()
    expect_clean_failure(proc, "SUBNQN")


def test_nothing_listening():
    wd = h.workdir()
    with h.target(wd) as t:  # find a free port, then stop the target
        port = t.port
    dead = type("T", (), {"address": "127.0.0.1", "port": port})()
    start = time.monotonic()
    proc, _ = h.run_fio(h.shortened_job("randread-4k.fio", wd), dead)
    expect_clean_failure(proc, "listen")
    check(time.monotonic() - start < 60, "nothing listening took too long to report")


def test_connect_error_json(mode):
    """A job whose connect fails has a non-zero "error" in fio's JSON report
    (ECONNREFUSED for nothing listening), with the report still one JSON
    document, whether the connect ran in a probe process or in fio's thread."""
    wd = h.workdir()
    with h.target(wd) as t:  # find a free port, then stop the target
        port = t.port
    dead = type("T", (), {"address": "127.0.0.1", "port": port})()
    job = wd + "/refused.fio"
    threads = "thread=1\n" if mode == "thread" else ""
    h.write_job(job, f"[global]\n{{TARGET}}{threads}rw=read\nbs=4k\nsize=1m\n[refused]\n")
    proc, result = h.run_fio(job, dead, timeout=60)
    check(proc.returncode != 0, "fio exited 0 although nothing listens")
    check(result is not None, f"fio's JSON report does not parse:\n{proc.stdout[-2000:]}")
    errors = {j["jobname"]: j["error"] for j in result["jobs"]}
    check(errors == {"refused": errno.ECONNREFUSED},
          f"expected the job's error to be ECONNREFUSED ({errno.ECONNREFUSED}), JSON says {errors}; "
          f"stderr:\n{proc.stderr[-2000:]}")
    print(f"{mode}: JSON error {errors['refused']} ({os.strerror(errors['refused'])})")


def test_target_drops_connection():
    """The target drops every queue mid-run: the job ends with I/O errors, not a hang."""
    wd = h.workdir()
    with h.target(wd, extra=["--fault", "drop-after=2000"]) as t:
        start = time.monotonic()
        proc, result = h.run_fio(h.shortened_job("randread-4k.fio", wd, runtime=20), t,
                                 extra_env={}, timeout=120)
        t.stop()
    check(proc.returncode != 0, "fio reported success although the target dropped the connection")
    check(time.monotonic() - start < 60, "fio took too long to notice the dropped connection")
    errors = [line for line in proc.stderr.splitlines() if "nvmeof" in line and "failed" in line]
    check(errors, f"no engine error message in:\n{proc.stderr[-3000:]}")
    print(f"fio said ({len(errors)} error lines): {errors[0].strip()}")


def test_io_timeout():
    """A target that stops answering: every outstanding I/O fails with ETIMEDOUT
    after io_timeout_ms, and the job ends instead of hanging."""
    wd = h.workdir()
    job = wd + "/timeout.fio"
    h.write_job(job, """[global]
{TARGET}io_timeout_ms=1500
rw=randread
bs=4k
iodepth=8
time_based=1
runtime=30
[timeout]
""")
    with h.target(wd, extra=["--fault", "stop-answering-after=200"]) as t:
        start = time.monotonic()
        proc, _ = h.run_fio(job, t, timeout=120)
        elapsed = time.monotonic() - start
        t.stop()
    check(proc.returncode != 0, "fio reported success although the target stopped answering")
    check(elapsed < 25, f"the job took {elapsed:.1f} s to end; io_timeout_ms=1500 should end it in seconds")
    timeouts = [line for line in proc.stderr.splitlines() if "timed out" in line.lower() or "timeout" in line.lower()]
    check(timeouts, f"no timeout named in:\n{proc.stderr[-3000:]}")
    print(f"ended after {elapsed:.1f} s; fio said: {timeouts[0].strip()}")


def test_version_mismatch():
    """An engine built for another fio is refused at load with a clear message."""
    import os
    import shutil
    wd = h.workdir()
    fake = wd + "/libfio_nvmeof.so"
    data = open(h.ENGINE, "rb").read()
    marker = b"fio-3.33"
    check(marker in data, "engine does not carry its expected fio version string")
    open(fake, "wb").write(data.replace(marker, b"fio-9.99"))
    os.chmod(fake, 0o755)
    proc, _ = h.run_fio(h.shortened_job("randread-4k.fio", wd), None, extra_env={"NVMEOF_ENGINE": fake})
    expect_clean_failure(proc, "built for fio-9.99")
    shutil.rmtree(wd, ignore_errors=True)


def test_trim_and_fsync():
    """Trims become Dataset Management deallocate, fsync becomes Flush, and
    trimmed blocks read back as zeroes."""
    wd = h.workdir()
    job = wd + "/trim.fio"
    h.write_job(job, """[global]
{TARGET}bs=64k
size=4m
iodepth=4
[write]
rw=write
fsync=4
[trim]
stonewall
rw=trim
[read-zeroes]
stonewall
rw=read
verify=pattern
verify_pattern=0x00
do_verify=1
verify_only=1
""")
    with h.target(wd) as t:
        proc, result = h.run_fio(job, t)
        t.stop()
    check(proc.returncode == 0 and result is not None and not h.job_errors(result),
          f"fio failed:\n{proc.stderr[-3000:]}")
    stats = t.stats()
    sums = h.totals(result)
    check(sums["trim"]["ios"] == 64, f"expected 64 trims, fio reports {sums['trim']}")
    check(stats["commands"]["dataset_management"] == 64,
          f"target saw {stats['commands']['dataset_management']} deallocates, fio issued 64")
    check(stats["commands"]["flush"] >= 16, f"target saw {stats['commands']['flush']} flushes for 64 writes with fsync=4")
    print(f"trims {stats['commands']['dataset_management']}, flushes {stats['commands']['flush']}")


def test_gpu_job(job, registration):
    """A shipped GPU job file through the whole GPU path without a GPU: the fake
    CUDA driver's device memory faults when the CPU touches it, so data reaches
    the target only if softverbs serves the registration through cuMemcpy (or,
    registration "staging", the job runs over NVMe/TCP and the library copies
    through the region's host copy), and verify passes only if the engine's
    host mirror copies are right."""
    fake = os.environ.get("NVMEOF_FAKE_CUDA")
    check(fake, "NVMEOF_FAKE_CUDA is not set")
    wd = h.workdir()
    env = {"NVMEOF_GPU": "0", "NVMEOF_CUDA_LIBRARY": fake, "SOFTVERBS_CUDA_LIBRARY": fake,
           "FAKE_CUDA_OPAQUE": "1", "FAKE_CUDA_DMABUF": "1" if registration == "dma-buf" else "0"}
    transport = "tcp" if registration == "staging" else "rdma"
    path = h.shortened_job(job, wd, transport=transport)
    with h.target(wd, transport=transport) as t:
        proc, result = h.run_fio(path, t, extra_env=env)
        stderr = t.stop()
    output = proc.stdout + proc.stderr
    check(proc.returncode == 0 and result is not None,
          f"fio failed (rc {proc.returncode}):\n{output[-4000:]}\n{stderr[-2000:]}")
    check(not h.job_errors(result), f"job errors: {h.job_errors(result)}")
    check(f"registered by {registration}" in output, f"start-up line does not say {registration}:\n{output[:2000]}")
    sums = h.totals(result)
    stats = t.stats()
    check(sums["read"]["bytes"] > 0, "nothing was read into GPU memory")
    check(stats["bytes"]["write"] == sums["write"]["bytes"] and stats["bytes"]["read"] == sums["read"]["bytes"],
          f"target moved {stats['bytes']}, fio reports {sums}")
    print(f"{job} ({registration}): fio read {sums['read']['bytes']} B / write {sums['write']['bytes']} B "
          "through fake GPU memory")


def free_tcp_port():
    """Below the kernel's ephemeral range, as the perf runner picks fio's ports
    (a port handed out by binding to 0 can be taken again by a parallel test)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "perf"))
    from nvmeof_perf.fio_rdma import free_port
    return free_port()


def test_client_server():
    """fio --server runs the engine (as in distributed regression runs), and
    fio --client gets the engine's start-up line, its results, and its errors."""
    wd = h.workdir()
    job = wd + "/client-server.fio"
    h.write_job(job, """[global]
{TARGET}rw=randwrite
bs=4k
size=8m
iodepth=8
verify=crc32c
verify_fatal=1
[client-server]
""")
    port = free_tcp_port()
    with h.target(wd) as t:
        env = dict(os.environ, NVMEOF_ENGINE=h.ENGINE, NVMEOF_TRADDR=t.address, NVMEOF_TRSVCID=str(t.port),
                   NVMEOF_SUBNQN=h.NQN, NVMEOF_NSID="")
        server = subprocess.Popen([h.SOFTVERBS_RUN, h.FIO, f"--server=ip:127.0.0.1,{port}"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            client = [h.FIO, f"--client=ip:127.0.0.1,{port}"]
            ok = bad = None
            for _ in range(50):  # the server needs a moment to listen
                ok = subprocess.run(client + [job], env=env, capture_output=True, text=True, timeout=120)
                if "connection refused" not in (ok.stdout + ok.stderr).lower():
                    break
                time.sleep(0.2)
            bad = subprocess.run(client + [job], env=dict(env, NVMEOF_SUBNQN="nqn.2026-12.io.nvmeof:nope"),
                                 capture_output=True, text=True, timeout=120)
        finally:
            server.terminate()
            try:
                server.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.communicate()
        t.stop()
    out = ok.stdout + ok.stderr
    check(ok.returncode == 0, f"client run failed (rc {ok.returncode}):\n{out[-3000:]}")
    check("nvmeof: client-server: target" in out, f"the engine's start-up line did not reach the client:\n{out[-3000:]}")
    check("err= 0" in out, f"the job reported an error:\n{out[-3000:]}")
    stats = t.stats()
    check(stats["bytes"]["write"] == 8 * 1024 * 1024 and stats["bytes"]["read"] == 8 * 1024 * 1024,
          f"target moved {stats['bytes']}, expected 8 MiB written and verified")
    bad_out = bad.stdout + bad.stderr
    check(bad.returncode != 0 and "SUBNQN" in bad_out, f"wrong NQN not reported to the client:\n{bad_out[-3000:]}")
    print("client/server: start-up line, 8 MiB write+verify, and the wrong-NQN error all reached the client")


def test_keep_alive():
    """keep_alive_ms: the job outlives several timeouts, and the target counted
    a Keep Alive every half timeout."""
    wd = h.workdir()
    job = wd + "/keep-alive.fio"
    h.write_job(job, """[global]
{TARGET}keep_alive_ms=1000
rw=randread
bs=4k
iodepth=4
time_based=1
runtime=3
[keep-alive]
""")
    with h.target(wd) as t:
        proc, result = h.run_fio(job, t)
        t.stop()
    check(proc.returncode == 0 and result is not None and not h.job_errors(result),
          f"fio failed:\n{proc.stderr[-3000:]}")
    sent = t.stats()["commands"]["keep_alive"]
    check(sent >= 4, f"the target saw {sent} Keep Alive commands in 3 s with a 1000 ms timeout")
    print(f"keep-alive: {sent} Keep Alive commands in a 3 s job with keep_alive_ms=1000")


def read_info_records(path):
    """The info_file's start records (one per job; each job's end record follows)."""
    records = [json.loads(line) for line in open(path).read().splitlines()]
    return [r for r in records if r["record"] == "start"]


def test_machine_output(fmt, numjobs, mode):
    """In json, json+ and terse modes stdout is fio's report alone: the start-up
    lines go to stderr and the info_file gets one JSON record per job."""
    numjobs = int(numjobs)
    wd = h.workdir()
    job = wd + "/machine.fio"
    info = wd + "/facts.jsonl"
    Path(info).write_text("stale record from an earlier run\n")
    threads = "thread=1\n" if mode == "thread" else ""
    h.write_job(job, f"""[global]
{{TARGET}}{threads}info_file={info}
rw=randwrite
bs=4k
iodepth=4
size=2m
numjobs={numjobs}
offset_increment=2m
[machine]
""")
    with h.target(wd) as t:
        proc, _ = h.run_fio(job, t, args=[f"--output-format={fmt}"])
        t.stop()
    check(proc.returncode == 0, f"fio failed (rc {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    if fmt == "terse":
        lines = proc.stdout.splitlines()
        check(len(lines) == numjobs and all(line.startswith("3;fio-") for line in lines),
              f"stdout is not {numjobs} terse line(s):\n{proc.stdout[:2000]}")
    else:
        result = h.parse_report(proc.stdout)
        check(result is not None, f"stdout does not parse as JSON:\n{proc.stdout[:2000]}")
        check(len(result["jobs"]) == numjobs, f"{len(result['jobs'])} jobs in the report, expected {numjobs}")
        if fmt == "json+":
            check("bins" in result["jobs"][0]["write"]["clat_ns"], "json+ report has no latency bins")
    started = [line for line in proc.stderr.splitlines() if "nvmeof: machine: target" in line]
    check(len(started) == numjobs, f"expected {numjobs} start-up line(s) on stderr:\n{proc.stderr[-3000:]}")
    records = read_info_records(info)
    check(len(records) == numjobs, f"info_file holds {len(records)} records, expected {numjobs}")
    check(len({r["job_number"] for r in records}) == numjobs, f"job numbers repeat: {records}")
    for r in records:
        c, ns = r["controllers"][0], r["namespaces"][0]
        check(r["job"] == "machine" and c["subnqn"] == h.NQN and c["trsvcid"] == t.port, f"bad record {r}")
        check(ns["size_bytes"] == 128 << 20 and ns["lba_size"] == 512 and ns["nsid"] == 1, f"bad namespace {ns}")
        check(c["io_queues"] == c["io_queues_asked"] == 1 and c["queue_size"] >= 5, f"bad queues {c}")
        check(c["mdts_bytes"] == 128 << 10 and c["model"] and c["serial"] and c["cntlid"] > 0, f"bad controller {c}")
        check(c["rdma_device"] and c["source"], f"no device/source in {c}")
    print(f"{fmt} {mode} numjobs={numjobs}: stdout parses, {len(started)} start-up line(s) on stderr, "
          f"{len(records)} info record(s)")


def test_client_server_json():
    """--client/--server with --output-format=json after --client (the form in
    which fio's backend knows the mode): the client's stdout parses."""
    wd = h.workdir()
    job = wd + "/cs-json.fio"
    h.write_job(job, """[global]
{TARGET}rw=randread
bs=4k
size=4m
iodepth=4
numjobs=3
[cs-json]
""")
    port = free_tcp_port()
    with h.target(wd) as t:
        env = h.target_env(t)
        server = subprocess.Popen([h.SOFTVERBS_RUN, h.FIO, f"--server=ip:127.0.0.1,{port}"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            runs = {}
            for fmt in ("json", "json+"):
                for _ in range(50):  # the server needs a moment to listen
                    proc = subprocess.run([h.FIO, f"--client=ip:127.0.0.1,{port}", f"--output-format={fmt}", job],
                                          env=env, capture_output=True, text=True, timeout=120)
                    if "connection refused" not in (proc.stdout + proc.stderr).lower():
                        break
                    time.sleep(0.2)
                runs[fmt] = proc
        finally:
            server.terminate()
            try:
                server_out, _ = server.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server_out, _ = server.communicate()
        t.stop()
    for fmt, proc in runs.items():
        check(proc.returncode == 0, f"{fmt} client run failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        result = h.parse_report(proc.stdout)
        check(result is not None, f"{fmt}: the client's stdout does not parse as JSON:\n{proc.stdout[:2000]}")
        per_job = [j for j in result["client_stats"] if j["jobname"] == "cs-json"]
        check(len(per_job) == 3 and all(j["error"] == 0 for j in per_job), f"{fmt}: client_stats {per_job}")
    check(server_out.count("nvmeof: cs-json: target") == 6,
          f"the start-up lines did not reach the server's stderr:\n{server_out[-3000:]}")
    print("client/server json and json+: the client's stdout parses; 6 start-up lines on the server's stderr")


def test_every_job_json():
    """Every shipped job file in jobs/ runs with stdout that parses as JSON (the
    GPU jobs over the fake CUDA driver when it was built)."""
    fake = os.environ.get("NVMEOF_FAKE_CUDA")
    wd = h.workdir()
    ran = []
    for path in sorted(h.JOBS.glob("*.fio")):
        env = {}
        if path.name.startswith("gpu-"):
            if not fake:
                print(f"{path.name}: skipped (no fake CUDA driver in this build)")
                continue
            env = {"NVMEOF_GPU": "0", "NVMEOF_CUDA_LIBRARY": fake, "SOFTVERBS_CUDA_LIBRARY": fake,
                   "FAKE_CUDA_OPAQUE": "1", "FAKE_CUDA_DMABUF": "1"}
        if path.name == "spdk-compat.fio":
            env["NVMEOF_SUBNQN"] = h.NQN.replace(":", "\\:")  # the filename form escapes colons
        with h.target(wd) as t:
            proc, result = h.run_fio(h.shortened_job(path.name, wd, runtime=1), t, extra_env=env)
            t.stop()
        check(proc.returncode == 0, f"{path.name}: fio failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}")
        check(result is not None, f"{path.name}: stdout does not parse as JSON:\n{proc.stdout[:2000]}")
        check(not h.job_errors(result), f"{path.name}: job errors {h.job_errors(result)}")
        ran.append(path.name)
    check(len(ran) >= 8, f"only {ran} ran")
    print(f"stdout parsed as JSON for {len(ran)} job files: {' '.join(ran)}")


BAD_OPTIONS = [  # (option line, target options, what the one error line must say)
    ("nr_io_queues=0", [], "nr_io_queues=0:"),
    ("nr_io_queues=65535", [], "nr_io_queues=65535:"),
    ("queue_size=1", [], "queue_size=1:"),
    ("queue_size=70000", [], "queue_size=70000:"),
    ("keep_alive_ms=1", [], "keep_alive_ms=1:"),
    ("keep_alive_ms=1500", ["--kas", "20"], "keep-alive granularity (KAS) of 2000 ms"),
    ("io_timeout_ms=0", [], "io_timeout_ms=0:"),
    ("hostnqn=myhost", [], 'hostnqn="myhost": not an NVMe Qualified Name'),
    ("hostid=myhost", [], 'hostid="myhost": not a UUID'),
    ("fast_io_fail_tmo_ms=500", [], "fast_io_fail_tmo_ms=500: has no effect without reconnecting"),
]


def test_bad_options():
    """Each bad option value: fio exits non-zero before any job runs, with one
    line naming the option."""
    wd = h.workdir()
    for option, target_args, needle in BAD_OPTIONS:
        job = wd + "/bad.fio"
        h.write_job(job, f"""[global]
{{TARGET}}rw=randread
bs=4k
iodepth=4
size=1m
{option}
[bad]
""")
        with h.target(wd, extra=target_args) as t:
            proc, _ = h.run_fio(job, t)
            t.stop()
        lines = [line for line in proc.stderr.splitlines() if "nvmeof:" in line]
        check(proc.returncode != 0, f"{option!r}: fio exited 0")
        check(len(lines) == 1 and needle in lines[0],
              f"{option!r}: expected one engine line with {needle!r}, got:\n{proc.stderr[-2000:]}")
        check(t.stats()["bytes"]["read"] == 0, f"{option!r}: I/O ran although the option was refused")
        print(f"{option.splitlines()[-1]}: {lines[0].strip()}")


def test_queues_granted_fewer():
    """nr_io_queues above what the target grants: the job runs on what was
    granted, and one note says so."""
    wd = h.workdir()
    job = wd + "/queues.fio"
    info = wd + "/facts.jsonl"
    h.write_job(job, f"""[global]
{{TARGET}}nr_io_queues=1000
queue_size=16
info_file={info}
rw=randread
bs=4k
iodepth=8
size=1m
[queues]
""")
    with h.target(wd, extra=["--max-io-queues", "3"]) as t:
        proc, result = h.run_fio(job, t)
        t.stop()
    check(proc.returncode == 0 and result is not None and not h.job_errors(result),
          f"fio failed:\n{proc.stderr[-3000:]}")
    notes = [line for line in proc.stderr.splitlines() if "nr_io_queues=1000: the target granted 3" in line]
    check(len(notes) == 1, f"no note about the granted queues:\n{proc.stderr[-2000:]}")
    c = read_info_records(info)[0]["controllers"][0]
    check(c["io_queues"] == 3 and c["io_queues_asked"] == 1000 and c["queue_size_asked"] == 16,
          f"info record says {c}")
    print(f"{notes[0].strip()}; queue_size asked 16, granted {c['queue_size']}")


def test_spdk_compat():
    """jobs/spdk-compat.fio, an SPDK plugin job file with only ioengine changed,
    runs; its SPDK-only options are named once on stderr."""
    wd = h.workdir()
    with h.target(wd) as t:
        proc, result = h.run_fio(h.shortened_job("spdk-compat.fio", wd), t,
                                 extra_env={"NVMEOF_SUBNQN": h.NQN.replace(":", "\\:")})
        t.stop()
    check(proc.returncode == 0 and result is not None and not h.job_errors(result),
          f"fio failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}")
    notes = [line for line in proc.stderr.splitlines() if "no effect on NVMe/RDMA" in line]
    check(len(notes) == 1 and "enable_sgl" in notes[0] and "digest_enable" in notes[0],
          f"expected one note naming the ignored options:\n{proc.stderr[-2000:]}")
    sums, stats = h.totals(result), t.stats()
    check(sums["read"]["bytes"] > 0 and stats["bytes"]["read"] == sums["read"]["bytes"]
          and stats["bytes"]["write"] == sums["write"]["bytes"], f"target moved {stats['bytes']}, fio {sums}")
    print(f"spdk-compat: {notes[0].strip()}")


def test_multi_namespace(mode):
    """One job, three namespaces across two subsystems of one target (fio's
    filename=a:b:c, SPDK's form): write then verify each whole namespace. The
    namespaces differ in size, so each receives exactly its size in bytes, and
    the target's per-namespace counters prove every I/O went where fio meant."""
    wd = h.workdir()
    job = wd + "/multi.fio"
    info = wd + "/facts.jsonl"
    nqn2 = h.NQN + "-second"
    sizes = {(h.NQN, 1): 4 << 20, (h.NQN, 2): 6 << 20, (nqn2, 1): 10 << 20}
    extra = ["--namespace", "ram:6M", "--subsystem", nqn2, "--namespace", "ram:10M"]
    threads = "thread=1\n" if mode == "thread" else ""
    with h.target(wd, namespace="ram:4M", extra=extra) as t:
        files = ":".join(f"traddr={t.address} trsvcid={t.port} subnqn={nqn.replace(':', chr(92) + ':')} ns={ns}"
                         for nqn, ns in sizes)
        Path(job).write_text(f"""[global]
ioengine=external:{h.ENGINE}
{threads}filename={files}
info_file={info}
rw=write
bsrange=4k-256k
iodepth=8
verify=crc32c
verify_fatal=1
[multi]
""")
        proc, result = h.run_fio(job, t, args=[])
        t.stop()
    check(proc.returncode == 0 and result is not None and not h.job_errors(result),
          f"fio failed (rc {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    sums = h.totals(result)
    total = sum(sizes.values())
    check(sums["write"]["bytes"] == total and sums["read"]["bytes"] == total,
          f"fio wrote {sums['write']['bytes']} and verified {sums['read']['bytes']} bytes, expected {total} each")
    per_ns = {(n["subnqn"], n["nsid"]): n for n in t.stats()["namespaces"]}
    check(set(per_ns) == set(sizes), f"the target saw I/O on {sorted(per_ns)}, expected {sorted(sizes)}")
    for key, size in sizes.items():
        got = per_ns[key]["bytes"]
        check(got["write"] == size and got["read"] == size,
              f"namespace {key}: the target wrote {got['write']} / read {got['read']} bytes, expected {size}")
    record = read_info_records(info)[0]
    check(len(record["controllers"]) == 2 and len(record["namespaces"]) == 3,
          f"expected 2 controllers and 3 namespaces in {record}")
    check([n["controller"] for n in record["namespaces"]] == [0, 0, 1], f"namespaces map {record['namespaces']}")
    print(f"{mode}: 3 namespaces on 2 controllers; target per namespace = "
          + ", ".join(f"{k[0].split(':')[-1]}/{k[1]}: {per_ns[k]['bytes']}" for k in sizes))


TESTS = {
    "multi-namespace": test_multi_namespace,
    "bad-options": test_bad_options,
    "queues-granted-fewer": test_queues_granted_fewer,
    "spdk-compat": test_spdk_compat,
    "machine-output": test_machine_output,
    "client-server-json": test_client_server_json,
    "every-job-json": test_every_job_json,
    "keep-alive": test_keep_alive,
    "client-server": test_client_server,
    "gpu": test_gpu_job,
    "trim-fsync": test_trim_and_fsync,
    "job": test_job,
    "verify": test_verify_modes,
    "restart": test_restart_verify,
    "bad-option": test_bad_option,
    "unaligned": test_unaligned,
    "offset-past-end": test_offset_past_end,
    "wrong-nqn": test_wrong_nqn,
    "nothing-listening": test_nothing_listening,
    "connect-error-json": test_connect_error_json,
    "target-drops": test_target_drops_connection,
    "version-mismatch": test_version_mismatch,
    "io-timeout": test_io_timeout,
}

if __name__ == "__main__":
    h.run_named(TESTS)
