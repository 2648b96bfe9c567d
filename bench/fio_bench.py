#!/usr/bin/env python3
"""4 KiB random-read IOPS and CPU per I/O through libfio_nvmeof.so against
nvmeof-target on loopback (softverbs), next to fio's null engine in the same
run, at queue depths 1, 32 and 128; then the instructions per I/O spent in the
engine and libnvmeof, counted by valgrind's callgrind (deterministic, so a
regression shows even on a noisy machine). Prints figures; asserts nothing.

Usage: bench/fio_bench.py [BUILD_DIR] [--runtime S] [--callgrind-ios N]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NQN = "nqn.2026-12.io.nvmeof:bench"


def start_target(build, workdir):
    run = build / "softverbs" / "softverbs-run"
    ready = Path(workdir) / "ready"
    proc = subprocess.Popen([str(run), str(build / "target" / "nvmeof-target"), "--listen", "127.0.0.1",
                             "--port", "0", "--subsystem", NQN, "--namespace", "ram:1G"],
                            stdout=open(ready, "w"), stderr=subprocess.DEVNULL)
    for _ in range(300):
        m = re.search(r"listening on \S+:(\d+)", ready.read_text())
        if m:
            return proc, int(m.group(1))
        time.sleep(0.1)
    proc.kill()
    sys.exit("bench: nvmeof-target did not start")


def fio_cmd(build, fio, engine_args, qd, runtime=None, ios=None):
    args = [fio, "--output-format=json", "--name=bench", "--rw=randread", "--bs=4k", "--size=1g",
            f"--iodepth={qd}", f"--iodepth_batch_complete_max={qd}", "--norandommap",
            "--randrepeat=0", "--thread=1"]
    args += [f"--runtime={runtime}", "--time_based"] if runtime else [f"--number_ios={ios}"]
    return args + engine_args


def run_json(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    start = out.stdout.find("{")
    if out.returncode != 0 or start < 0:
        sys.exit(f"bench: {' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    job = json.loads(out.stdout[start:])["jobs"][0]
    ios = job["read"]["total_ios"]
    runtime_s = job["read"]["runtime"] / 1000.0
    cpu = (job["usr_cpu"] + job["sys_cpu"]) / 100.0 * runtime_s
    return job["read"]["iops"], (cpu / ios * 1e6) if ios else float("nan"), job["read"]["clat_ns"]["mean"] / 1000.0


# Inclusive costs of the per-I/O work. Idle polling (getevents spinning while
# the target works) depends on how fast the peer answers, so it is reported
# apart and is not a regression signal.
INCLUSIVE = {
    "submit: Job::queue": "nvmeof::engine::Job::queue(",
    "post: Job::commit (incl. device post_send)": "nvmeof::engine::Job::commit(",
    "completion: RdmaQueue::handle_completion": "RdmaQueue::handle_completion(",
    "completion: Job::reap": "nvmeof::engine::Job::reap(",
    "getevents incl. idle polling (not stable)": "nvmeof::engine::Job::getevents(",
}


def callgrind(build, fio, engine_args, ios, workdir):
    """Self instructions per shared object, and inclusive instructions of the
    engine's submit and reap paths."""
    if not shutil.which("valgrind"):
        return None, None
    out = Path(workdir) / "callgrind.out"
    cmd = [str(build / "softverbs" / "softverbs-run"), "valgrind", "--tool=callgrind",
           f"--callgrind-out-file={out}"] + fio_cmd(build, fio, engine_args, 32, ios=ios)
    subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if not out.exists():
        return None, None
    per_object = {}
    self_cost = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", str(out)],
                               capture_output=True, text=True).stdout
    for line in self_cost.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+\S+?:.*\[(.+)\]$", line)
        if m:
            obj = os.path.basename(m.group(2))
            per_object[obj] = per_object.get(obj, 0) + int(m.group(1).replace(",", ""))
    inclusive = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                               capture_output=True, text=True).stdout
    paths = {}
    for label, needle in INCLUSIVE.items():
        for line in inclusive.splitlines():
            if needle in line and line.rstrip().endswith("]"):
                paths[label] = int(line.split()[0].replace(",", ""))
                break
    return per_object, paths


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build", nargs="?", default=str(ROOT / "build"))
    p.add_argument("--runtime", type=int, default=5)
    p.add_argument("--callgrind-ios", type=int, default=20000)
    a = p.parse_args()
    build = Path(a.build).resolve()
    fio = str(ROOT / ".cache/fio-src/fio") if (ROOT / ".cache/fio-src/fio").exists() else "fio"
    engine = build / "engine" / "libfio_nvmeof.so"
    workdir = tempfile.mkdtemp(prefix="nvmeof-bench-")
    target, port = start_target(build, workdir)
    env = dict(os.environ)
    ours = [f"--ioengine=external:{engine}", "--traddr=127.0.0.1", f"--trsvcid={port}", f"--subnqn={NQN}"]
    null = ["--ioengine=null"]
    run = str(build / "softverbs" / "softverbs-run")
    try:
        print(f"{'engine':<10}{'QD':>5}{'IOPS':>12}{'CPU us/IO':>12}{'mean clat us':>14}")
        for qd in (1, 32, 128):
            for name, args, wrap in (("nvmeof", ours, [run]), ("null", null, [])):
                iops, cpu_us, clat = run_json(wrap + fio_cmd(build, fio, args, qd, runtime=a.runtime), env)
                print(f"{name:<10}{qd:>5}{iops:>12.0f}{cpu_us:>12.2f}{clat:>14.1f}")
        objects, paths = callgrind(build, fio, ours, a.callgrind_ios, workdir)
        if objects:
            ios = a.callgrind_ios
            print(f"\ninstructions per I/O (callgrind, {ios} 4 KiB reads at QD 32, connect included):")
            for label, total in paths.items():
                print(f"  {label:<48}{total / ios:>10.0f}")
        else:
            print("\ncallgrind: valgrind not available or the run failed")
    finally:
        target.terminate()
        target.wait(timeout=20)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
