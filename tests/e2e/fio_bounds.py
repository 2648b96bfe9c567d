"""Bounded failure through fio (issue 12, part 6): each fault ends the job within
its configured bound + 1 s with a clear error, a long stall shorter than
io_timeout_ms is ridden out, and a long wait on a silent target sleeps instead
of spinning. Over softverbs, or over NVMe/TCP with NVMEOF_E2E_TRANSPORT=tcp
(the same cases and bounds). Run one case: fio_bounds.py NAME."""
import resource
import signal
import threading
import time

import harness as h

SLACK_S = 1.0  # the bound: the configured timeout + 1 s


def job_file(wd, name, options, runtime=30, iodepth=8):
    path = f"{wd}/{name}.fio"
    h.write_job(path, f"""[global]
{{TARGET}}{options}
rw=randread
bs=4k
iodepth={iodepth}
time_based=1
runtime={runtime}
[{name}]
""")
    return path


def watch_stderr(t, needle):
    """Timestamps the target's first stderr line containing `needle`."""
    seen = {}

    def reader():
        for line in t.proc.stderr:
            if needle in line and "at" not in seen:
                seen["at"] = time.monotonic()
                seen["line"] = line.strip()
    threading.Thread(target=reader, daemon=True).start()
    return seen


def test_connect_deadline():
    """Every message delayed 5 s, connect_timeout_ms=3000: the connect fails
    within 3 s + 1 s, naming the step that ran out and the total."""
    wd = h.workdir()
    job = job_file(wd, "slow", "connect_timeout_ms=3000\nio_timeout_ms=2000")
    with h.target(wd, extra=["--fault", "delay-ms=5000"]) as t:
        start = time.monotonic()
        proc, _ = h.run_fio(job, t, timeout=120)
        elapsed = time.monotonic() - start
        t.stop()
    h.check(proc.returncode != 0, "fio reported success although every answer took 5 s")
    lines = [line for line in proc.stderr.splitlines() if "connect deadline of 3000 ms" in line]
    h.check(lines, f"no error naming the connect deadline in:\n{proc.stderr[-3000:]}")
    h.check(" at " in lines[0], f"the error does not name the step: {lines[0]}")
    h.check(elapsed < 3 + SLACK_S, f"the connect took {elapsed:.1f} s to fail; the bound is 3 s + 1 s")
    print(f"failed after {elapsed:.1f} s: {lines[0].strip()}")


def test_io_timeout_no_shutdown_wait():
    """The target stops answering: with io_timeout_ms=2000 the job ends within
    2 s + 1 s of the stall, with no fixed shutdown wait on the dead target."""
    wd = h.workdir()
    job = job_file(wd, "silent", "io_timeout_ms=2000")
    with h.target(wd, extra=["--fault", "stop-answering-after=2000"]) as t:
        stall = watch_stderr(t, "stop-answering-after")
        proc, _ = h.run_fio(job, t, timeout=120)
        ended = time.monotonic()
        t.stop()
    h.check(proc.returncode != 0, "fio reported success although the target stopped answering")
    h.check("at" in stall, "the target never stopped answering (fault not reached)")
    after = ended - stall["at"]
    h.check(after < 2 + SLACK_S, f"the job ended {after:.1f} s after the stall; the bound is 2 s + 1 s")
    timeouts = [line for line in proc.stderr.splitlines() if "timed out" in line or "timeout" in line]
    h.check(timeouts, f"no timeout named in:\n{proc.stderr[-3000:]}")
    print(f"ended {after:.1f} s after the stall; fio said: {timeouts[0].strip()}")


def test_stall_shorter_than_io_timeout():
    """The whole target (its RDMA device included) stalls for 20 s with
    io_timeout_ms=30000: the RC retry window (over TCP, the kernel's
    retransmissions and keep-alives) must not end the job first; it completes
    without errors once the target resumes."""
    wd = h.workdir()
    job = job_file(wd, "stall", "io_timeout_ms=30000", runtime=25, iodepth=4)
    with h.target(wd) as t:
        def stall():
            time.sleep(2)
            t.proc.send_signal(signal.SIGSTOP)
            time.sleep(20)
            t.proc.send_signal(signal.SIGCONT)
        stopper = threading.Thread(target=stall)
        stopper.start()
        try:
            proc, result = h.run_fio(job, t, timeout=120)
        finally:
            stopper.join()
            t.proc.send_signal(signal.SIGCONT)
        t.stop()
    h.check(proc.returncode == 0 and result is not None and not h.job_errors(result),
            f"a 20 s stall failed the job although io_timeout_ms=30000:\n{proc.stderr[-3000:]}")
    print(f"completed {h.totals(result)['read']['ios']} reads across a 20 s stall")


def test_dead_target_sleeps():
    """A 10 s wait for a target that never answers (io_timeout_ms=10000) uses
    under 20 % of a core: a spinning wait would use all of one."""
    wd = h.workdir()
    job = job_file(wd, "dead", "io_timeout_ms=10000", runtime=60)
    with h.target(wd, extra=["--fault", "stop-answering-after=500"]) as t:
        stall = watch_stderr(t, "stop-answering-after")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc, _ = h.run_fio(job, t, timeout=150)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        ended = time.monotonic()
        t.stop()
    h.check(proc.returncode != 0, "fio reported success although the target stopped answering")
    h.check("at" in stall, "the target never stopped answering (fault not reached)")
    waited = ended - stall["at"]
    h.check(waited >= 9, f"the job ended {waited:.1f} s after the stall, before io_timeout_ms=10000")
    h.check(waited < 10 + SLACK_S, f"the job ended {waited:.1f} s after the stall; the bound is 10 s + 1 s")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    share = cpu / waited
    h.check(share < 0.20, f"fio used {cpu:.1f} s of CPU over a {waited:.1f} s wait ({share:.0%} of a core)")
    print(f"fio used {cpu:.2f} s of CPU over a {waited:.1f} s wait ({share:.1%} of a core)")


TESTS = {
    "connect-deadline": test_connect_deadline,
    "io-timeout-no-shutdown-wait": test_io_timeout_no_shutdown_wait,
    "stall-shorter-than-io-timeout": test_stall_shorter_than_io_timeout,
    "dead-target-sleeps": test_dead_target_sleeps,
}

if __name__ == "__main__":
    h.run_named(TESTS)
