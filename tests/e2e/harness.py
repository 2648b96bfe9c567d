"""Shared plumbing for the fio end-to-end tests: start nvmeof-target on a free
port (under softverbs, or over TCP), run fio with the engine, read fio's JSON
and the target's stats. Every wait is bounded; every process is reaped.

The transport is NVMEOF_E2E_TRANSPORT's (rdma, the default, or tcp) unless a
test names one: the target listens on it (over TCP without softverbs-run),
the job files written here say it (trtype=) and fio runs under softverbs-run
only over RDMA (over TCP, a sanitizer build still puts its runtime first)."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

FIO = os.environ.get("NVMEOF_FIO", "fio")
ENGINE = os.environ["NVMEOF_ENGINE"]
TARGET = os.environ["NVMEOF_TARGET_BIN"]
SOFTVERBS_RUN = os.environ["NVMEOF_SOFTVERBS_RUN"]
JOBS = Path(os.environ["NVMEOF_JOBS_DIR"])
NQN = "nqn.2026-12.io.nvmeof:e2e"
READY = re.compile(r"listening on (\S+):(\d+)")
TRANSPORT = os.environ.get("NVMEOF_E2E_TRANSPORT", "rdma")


class Failure(AssertionError):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


class Target:
    def __init__(self, proc, address, port, stats_path, transport=TRANSPORT):
        self.proc, self.address, self.port, self.stats_path = proc, address, port, stats_path
        self.transport = transport

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise Failure("nvmeof-target did not stop within 15 s of SIGTERM")
        stderr = self.proc.stderr.read() if self.proc.stderr else ""
        return stderr

    def stats(self):
        return json.loads(Path(self.stats_path).read_text())


@contextmanager
def target(workdir, namespace="ram:128M", extra=(), port=0, transport=TRANSPORT):
    """nvmeof-target on loopback: over softverbs (rdma), or over the kernel's
    TCP (tcp: no softverbs-run needed, none used)."""
    stats = os.path.join(workdir, f"target-stats-{time.monotonic_ns()}.json")
    cmd = [*softverbs_runner(transport), TARGET, "--transport", transport, "--listen", "127.0.0.1", "--port", str(port),
           "--subsystem", NQN, "--namespace", namespace, "--stats", stats, *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    line = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line or proc.poll() is not None:
            break
    match = READY.search(line or "")
    if not match:
        proc.kill()
        _, err = proc.communicate(timeout=10)
        raise Failure(f"nvmeof-target did not start: {line!r} {err}")
    t = Target(proc, match.group(1), int(match.group(2)), stats, transport)
    try:
        yield t
    finally:
        t.stop()


def shortened_job(job, workdir, runtime=2, transport=TRANSPORT):
    """The shipped job file with its runtime shortened and, over a transport
    other than RDMA (the shipped files name none: the engine's default), its
    trtype= first in [global]."""
    text = (JOBS / job).read_text()
    text = re.sub(r"(?m)^runtime=\d+$", f"runtime={runtime}", text)
    if transport != "rdma":
        text = text.replace("[global]\n", f"[global]\ntrtype={transport}\n", 1)
    path = Path(workdir) / job
    path.write_text(text)
    return path


def run_fio(job_path, t, extra_env=None, args=(), timeout=180):
    env = dict(os.environ)
    env.update({"NVMEOF_ENGINE": ENGINE, "NVMEOF_TRADDR": t.address if t else "127.0.0.1",
                "NVMEOF_TRSVCID": str(t.port) if t else "", "NVMEOF_SUBNQN": NQN,
                "NVMEOF_NSID": ""})
    env.update(extra_env or {})
    # Under an ASan build the engine brings the sanitizer into fio, and fio 3.33
    # leaks its own file table at exit: leak reports would be fio's, not ours
    # (the target, our own program, keeps leak detection on).
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS", ""), "detect_leaks=0"]))
    # (A test's stand-in for a target it stopped may name no transport.)
    transport = getattr(t, "transport", TRANSPORT)
    cmd = [*softverbs_runner(transport), FIO, "--output-format=json", *args, str(job_path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    return proc, parse_report(proc.stdout)


def softverbs_runner(transport):
    """What a program (the target, fio) runs under: softverbs-run over RDMA;
    over TCP nothing but, in a sanitizer build, the sanitizer's runtime put
    first (fio is not built with it and loads the engine, which is)."""
    if transport == "rdma":
        return [SOFTVERBS_RUN]
    runtime = sanitizer_runtime()
    if not runtime:
        return []
    preload = ":".join(filter(None, [runtime, os.environ.get("LD_PRELOAD", "")]))
    return ["env", f"LD_PRELOAD={preload}"]


_sanitizer_runtime = []


def sanitizer_runtime():
    """The ASan or TSan runtime the engine is linked against ('' if none), as
    softverbs-run finds it for the programs it runs."""
    if not _sanitizer_runtime:
        out = subprocess.run(["ldd", ENGINE], capture_output=True, text=True).stdout
        found = re.search(r"lib[at]san\.so\S*\s+=>\s+(\S+)", out)
        _sanitizer_runtime.append(found.group(1) if found else "")
    return _sanitizer_runtime[0]


def parse_report(stdout):
    """fio's JSON report: the whole of stdout, nothing before or after it
    (None when stdout is not exactly one JSON document)."""
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        return None


def target_env(t, extra=None):
    env = dict(os.environ, NVMEOF_ENGINE=ENGINE, NVMEOF_TRADDR=t.address, NVMEOF_TRSVCID=str(t.port),
               NVMEOF_SUBNQN=NQN, NVMEOF_NSID="")
    env.update(extra or {})
    return env


TARGET_LINES = """ioengine=external:${NVMEOF_ENGINE}
traddr=${NVMEOF_TRADDR}
trsvcid=${NVMEOF_TRSVCID}
subnqn=${NVMEOF_SUBNQN}
"""


def write_job(path, text, transport=TRANSPORT):
    """A job file whose {TARGET} stands for the engine and target lines every
    test job shares (taken from the environment, as the shipped job files do)
    and the transport's trtype."""
    Path(path).write_text(text.replace("{TARGET}", TARGET_LINES + f"trtype={transport}\n"))


def totals(result):
    """Sum of io_bytes and total_ios per direction over every job of a fio run."""
    out = {d: {"bytes": 0, "ios": 0} for d in ("read", "write", "trim")}
    for job in result["jobs"]:
        for d in out:
            out[d]["bytes"] += job[d]["io_bytes"]
            out[d]["ios"] += job[d]["total_ios"]
    return out


def job_errors(result):
    return [(j["jobname"], j["error"]) for j in result["jobs"] if j["error"] != 0]


def workdir():
    return tempfile.mkdtemp(prefix="nvmeof-e2e-")


def run_named(tests):
    """The entry point of every e2e script: `SCRIPT NAME [ARGS...]` runs
    tests[NAME](*ARGS) and prints one PASS or FAIL line (meson reads the exit
    status)."""
    name, *args = sys.argv[1:] or [""]
    if name not in tests:
        sys.exit(f"usage: {Path(sys.argv[0]).name} {{{'|'.join(tests)}}} [ARGS]")
    label = " ".join([name, *args])
    try:
        tests[name](*args)
    except Failure as failure:
        print(f"FAIL {label}: {failure}")
        sys.exit(1)
    print(f"PASS {label}")
