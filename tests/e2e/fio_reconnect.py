"""Reconnect and multipath through fio (issue 14): a target killed and started
again, a path lost for good, fast_io_fail_tmo and ctrl_loss_tmo, over
softverbs, or over NVMe/TCP with NVMEOF_E2E_TRANSPORT=tcp (the same cases and
bounds). Short timers keep each case well under 30 s. Run one case:
fio_reconnect.py NAME."""
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import harness as h

SLACK_S = 1.0  # the bound: ctrl_loss_tmo + 1 s
TRANSPORT = h.TRANSPORT  # NVMEOF_E2E_TRANSPORT's, rdma by default
RECONNECTED = re.compile(r"reconnected after an outage of (\d+) ms")


def launch(wd, ports, namespace, extra=(), env=None):
    """nvmeof-target on `ports` (0: any); returns the process and the real ports."""
    cmd = [*h.softverbs_runner(TRANSPORT), h.TARGET, "--transport", TRANSPORT, "--listen", "127.0.0.1"]
    for port in ports:
        cmd += ["--port", str(port)]
    cmd += ["--subsystem", h.NQN, "--namespace", namespace, *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=None if env is None else {**os.environ, **env})
    real = []
    deadline = time.monotonic() + 30
    while len(real) < len(ports) and time.monotonic() < deadline:
        line = proc.stdout.readline()
        match = h.READY.search(line or "")
        if not match:
            break
        real.append(int(match.group(2)))
    if len(real) != len(ports):
        proc.kill()
        _, err = proc.communicate(timeout=10)
        raise h.Failure(f"nvmeof-target did not start on {ports}: {err}")
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # never blocks on a full pipe
    return proc, real


def kill(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=15)


def job_file(wd, name, options, traddr, runtime, rw="randrw", verify=True):
    path = f"{wd}/{name}.fio"
    verify_lines = "verify=crc32c\nverify_fatal=1\nverify_backlog=32\nverify_state_save=0\n" if verify else ""
    h.write_job(path, f"""[global]
ioengine=external:${{NVMEOF_ENGINE}}
trtype={TRANSPORT}
traddr={traddr}
subnqn=${{NVMEOF_SUBNQN}}
{options}
rw={rw}
bs=4k
iodepth=8
size=16m
time_based=1
runtime={runtime}
{verify_lines}[{name}]
""")
    return path


class Fio:
    """fio running in the background, its stderr collected."""

    def __init__(self, job):
        env = h.target_env(h.Target(None, "127.0.0.1", 0, None))
        env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS", ""), "detect_leaks=0"]))
        self.start = time.monotonic()
        self.proc = subprocess.Popen([*h.softverbs_runner(TRANSPORT), h.FIO, "--output-format=json", str(job)], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(self, timeout=60):
        out, err = self.proc.communicate(timeout=timeout)
        self.ended = time.monotonic()
        return self.proc.returncode, h.parse_report(out), err


def outages(stderr):
    return [int(ms) for ms in RECONNECTED.findall(stderr)]


HELD_BY_QUEUE = re.compile(r"qid \d+: (?:queue failed|closed for a reconnect).*?(\d+) transfers held")
HELD_BY_CONTROLLER = re.compile(r"-> waiting to reconnect: (\d+) I/Os held")
RESENT = re.compile(r"reconnected after an outage of \d+ ms \(CNTLID \d+\), (\d+) I/Os re-sent")


def check_counts_agree(stderr):
    """The counts a reader compares agree: per outage, the transfers the
    queues say they held add up to the controller's "I/Os held", and the
    reconnect re-sends that many."""
    held, outages_seen = 0, []
    for line in stderr.splitlines():
        if m := HELD_BY_QUEUE.search(line):
            held += int(m.group(1))
        elif m := HELD_BY_CONTROLLER.search(line):
            h.check(int(m.group(1)) == held,
                    f"the queues held {held} transfers, the controller says {m.group(1)}: {line}")
            outages_seen.append(held)
            held = 0
        elif m := RESENT.search(line):
            h.check(outages_seen and int(m.group(1)) == outages_seen[-1],
                    f"re-sent {m.group(1)} after holding {outages_seen}: {line}")
    return outages_seen


def end_record(info):
    """The one controller of the info_file's "end" record (jobs with ctrl_loss_tmo_ms)."""
    records = [json.loads(line) for line in open(info)]
    h.check([r["record"] for r in records] == ["start", "end"], f"info_file records: {records}")
    h.check(len(records[1]["reconnect"]) == 1, f"end record: {records[1]}")
    return records[1]["reconnect"][0]


def test_restart_twice():
    """randrw verify, ctrl_loss_tmo_ms=30000: the target (file namespace) is
    killed and started again on its port twice; 0 errors, verify clean, two
    reconnects with their outage times in the log."""
    wd = h.workdir()
    namespace = f"file:{wd}/ns.img"
    extra = ["--size", "64M"]
    proc, (port,) = launch(wd, [0], namespace, extra)
    info = f"{wd}/facts.jsonl"
    job = job_file(wd, "restart", "ctrl_loss_tmo_ms=30000\nreconnect_delay_ms=300\nio_timeout_ms=5000\n"
                   f"info_file={info}", f"127.0.0.1:{port}", runtime=12)
    fio = Fio(job)
    try:
        for _ in range(2):
            time.sleep(3)
            kill(proc)
            time.sleep(1)
            proc, _ = launch(wd, [port], namespace)
        rc, report, err = fio.finish()
    finally:
        kill(proc)
    h.check(report is not None, f"fio's stdout is not one JSON report:\n{err[-3000:]}")
    h.check(rc == 0 and not h.job_errors(report), f"fio failed (rc {rc}, {h.job_errors(report)}):\n{err[-3000:]}")
    seen = outages(err)
    h.check(len(seen) == 2, f"expected two reconnects in the log, saw {seen}:\n{err[-3000:]}")
    h.check("2 reconnects (outages: " in err, f"no per-job reconnect summary:\n{err[-2000:]}")
    t = h.totals(report)
    h.check(t["read"]["ios"] > 0 and t["write"]["ios"] > 0, f"no I/O: {t}")
    held = check_counts_agree(err)
    h.check(len(held) == 2, f"expected two outages with held counts, saw {held}:\n{err[-3000:]}")
    end = end_record(info)
    h.check(end["ios_retried"] == sum(held), f"info_file re-sent {end['ios_retried']}, the log held {held}")
    h.check(end["reconnects"] == 2 and end["outages_ms"] == seen and not end["lost"],
            f"the info_file's end record does not match the log ({seen}): {end}")
    print(f"two reconnects, outages {seen} ms; {t['read']['ios']} reads verified, {t['write']['ios']} writes; "
          f"{end['ios_retried']} I/Os re-sent (info_file)")


def test_second_path():
    """Two ports of one target; the one in use stops listening for good and
    drops its connections: the job moves to the other path with 0 errors."""
    wd = h.workdir()
    proc, ports = launch(wd, [0, 0], "ram:64M", ["--fault", "port-down-after=3000:0"])
    paths = ",".join(f"127.0.0.1:{p}" for p in ports)
    job = job_file(wd, "paths", "ctrl_loss_tmo_ms=20000\nreconnect_delay_ms=200\nio_timeout_ms=5000",
                   paths, runtime=6)
    try:
        rc, report, err = Fio(job).finish()
    finally:
        kill(proc)
    h.check(report is not None, f"fio's stdout is not one JSON report:\n{err[-3000:]}")
    h.check(rc == 0 and not h.job_errors(report), f"fio failed (rc {rc}):\n{err[-3000:]}")
    h.check(len(outages(err)) == 1, f"expected one reconnect:\n{err[-3000:]}")
    h.check(f"on 127.0.0.1:{ports[1]}" in err, f"the reconnect did not move to the second path:\n{err[-3000:]}")
    print(f"moved from port {ports[0]} to {ports[1]}; outage {outages(err)} ms")


def test_fast_io_fail():
    """The target comes back after fast_io_fail_tmo_ms but before
    ctrl_loss_tmo_ms: I/Os fail from fast_io_fail_tmo on with a message
    naming it (ENOLINK), then the job recovers on the reconnect."""
    wd = h.workdir()
    namespace = f"file:{wd}/ns.img"
    stats = f"{wd}/after.json"
    proc, (port,) = launch(wd, [0], namespace, ["--size", "64M"])
    job = job_file(wd, "fastfail",
                   "ctrl_loss_tmo_ms=20000\nreconnect_delay_ms=300\nfast_io_fail_tmo_ms=1000\n"
                   # fio stops at errors other than EIO unless told: ENOLINK is 67.
                   "io_timeout_ms=5000\ncontinue_on_error=all\nignore_error=67,5:67,5",
                   f"127.0.0.1:{port}", runtime=10, rw="randwrite", verify=False)
    fio = Fio(job)
    try:
        time.sleep(3)
        kill(proc)
        time.sleep(3.5)  # past fast_io_fail_tmo_ms, well before ctrl_loss_tmo_ms
        proc, _ = launch(wd, [port], namespace, ["--stats", stats])
        rc, report, err = fio.finish()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=15)
    h.check(report is not None, f"fio's stdout is not one JSON report:\n{err[-3000:]}")
    h.check("fast_io_fail_tmo of 1000 ms passed" in err, f"no fast_io_fail_tmo message:\n{err[-3000:]}")
    h.check("Link has been severed" in err or "ENOLINK" in err,
            f"the failed I/Os do not say ENOLINK:\n{err[-3000:]}")
    h.check(len(outages(err)) == 1, f"expected one reconnect after the fast fail:\n{err[-3000:]}")
    after = json.loads(Path(stats).read_text())
    h.check(after["commands"]["write"] > 0, f"no write reached the target after it came back: {after}")
    print(f"I/Os failed with ENOLINK, then {after['commands']['write']} writes after the reconnect")


def test_no_restart():
    """The target is killed for good: the job ends with errors within
    ctrl_loss_tmo_ms + 1 s of the failure."""
    wd = h.workdir()
    proc, (port,) = launch(wd, [0], "ram:64M")
    info = f"{wd}/facts.jsonl"
    job = job_file(wd, "gone", f"ctrl_loss_tmo_ms=4000\nreconnect_delay_ms=300\nio_timeout_ms=5000\ninfo_file={info}",
                   f"127.0.0.1:{port}", runtime=30, verify=False, rw="randread")
    fio = Fio(job)
    time.sleep(3)
    kill(proc)
    killed = time.monotonic()
    rc, report, err = fio.finish()
    waited = fio.ended - killed
    h.check(rc != 0 or (report and h.job_errors(report)), f"fio reported success:\n{err[-3000:]}")
    h.check("ctrl_loss_tmo of 4000 ms passed" in err or "ctrl_loss_tmo passed" in err,
            f"no ctrl_loss_tmo message:\n{err[-3000:]}")
    h.check(waited < 4 + SLACK_S, f"the job ended {waited:.1f} s after the kill; the bound is 4 s + 1 s")
    end = end_record(info)
    h.check(end["lost"] and "ctrl_loss_tmo" in end["lost_reason"] and end["reconnects"] == 0,
            f"the info_file's end record does not say the controller was given up: {end}")
    print(f"the job ended {waited:.1f} s after the target was killed; info_file: {end['lost_reason']}")


def test_idle_drop():
    """The connection drops while nothing is in flight (QD 1, the drop between
    two I/Os): the failure is seen by a poll, fio's next submission is refused
    busy, and the controller must start its reconnect from there rather than
    leave fio retrying forever. Verify clean, at least one reconnect, within
    the bound."""
    wd = h.workdir()
    bound_s = 60
    if TRANSPORT == "tcp":  # the target resets the connection once its answer is out
        proc, (port,) = launch(wd, [0], "ram:64M", ["--fault", "reset-after=1200"])
    else:
        proc, (port,) = launch(wd, [0], "ram:64M", env={"SOFTVERBS_FAULTS": "drop,after=2500"})
    path = f"{wd}/idle.fio"
    h.write_job(path, f"""[idle]
ioengine=external:${{NVMEOF_ENGINE}}
trtype={TRANSPORT}
traddr=127.0.0.1:{port}
subnqn=${{NVMEOF_SUBNQN}}
ctrl_loss_tmo_ms=30000
reconnect_delay_ms=500
rw=randwrite
bs=4k
iodepth=1
size=8m
verify=crc32c
""")
    fio = Fio(path)
    try:
        try:
            rc, report, err = fio.finish(timeout=bound_s)
        except subprocess.TimeoutExpired:
            fio.proc.kill()
            _, err = fio.proc.communicate(timeout=15)
            raise h.Failure(f"fio still running after {bound_s} s (a spin on busy?):\n{err[-2000:]}")
    finally:
        kill(proc)
    h.check(report is not None, f"fio's stdout is not one JSON report:\n{err[-3000:]}")
    h.check(rc == 0 and not h.job_errors(report), f"fio failed (rc {rc}):\n{err[-3000:]}")
    seen = outages(err)
    h.check(seen, f"no reconnect in the log (was the connection dropped?):\n{err[-3000:]}")
    check_counts_agree(err)
    t = h.totals(report)
    h.check(t["write"]["ios"] == 2048 and t["read"]["ios"] == 2048, f"not every block written and verified: {t}")
    print(f"{len(seen)} reconnect(s), outages {seen} ms; {t['write']['ios']} writes verified in "
          f"{fio.ended - fio.start:.1f} s")


TESTS = {
    "idle-drop": test_idle_drop,
    "restart-twice": test_restart_twice,
    "second-path": test_second_path,
    "fast-io-fail": test_fast_io_fail,
    "no-restart": test_no_restart,
}

if __name__ == "__main__":
    h.run_named(TESTS)
