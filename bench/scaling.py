#!/usr/bin/env python3
"""IOPS per core as fio jobs are added, over softverbs. Prints figures; asserts nothing.

Issue 16's scaling point, for a machine with cores to spare (the GPU machine has
16): 4 KiB random reads at QD 32 with numjobs 1, 2, 4, 8, in two layouts:
  shared   one nvmeof-target process for every job (the target is one thread,
           so this shows where the target, not the initiator, is the limit);
  per-job  one nvmeof-target per job, each on its own port, so each initiator
           job has a target thread of its own.
Each row gives the total IOPS, the CPU fio's jobs used (their usr+sys, in cores),
the whole machine's busy cores over the run (fio, targets and softverbs'
progress threads together, from /proc/stat), and IOPS per core of each.

Usage: bench/scaling.py [--build DIR] [--fio PATH] [--jobs 1,2,4,8]
                        [--modes shared,per-job] [--runtime S] [--iodepth N] [--bs 4k] [--target PATH]
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

NQN = "nqn.2026-01.io.nvmeof:scaling"
BASE_PORT = 44500


def use_build(build):
    """The build directory as an absolute path, with softverbs-run pointed at its libraries:
    softverbs-run's built-in path is the build machine's, and a carried build is elsewhere."""
    build = os.path.abspath(build)
    os.environ.setdefault("SOFTVERBS_LIBDIR", os.path.join(build, "softverbs"))
    return build


def busy_and_total_jiffies():
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def start_target(build, port, namespace, extra=(), target=None):
    log = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(
        [f"{build}/softverbs/softverbs-run", target or f"{build}/target/nvmeof-target", "--port", str(port),
         "--subsystem", NQN, "--namespace", namespace, *extra],
        stdout=subprocess.PIPE, stderr=log, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        proc.wait()
        log.seek(0)
        sys.exit(f"scaling: nvmeof-target on port {port} did not start: {log.read().strip()[-400:]}")
    return proc


def stop_targets(targets):
    for proc in targets:
        proc.send_signal(signal.SIGTERM)
    for proc in targets:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def job_file(args, jobs, ports):
    lines = ["[global]", f"ioengine=external:{args.build}/engine/libfio_nvmeof.so", "traddr=127.0.0.1",
             f"subnqn={NQN}", "nsid=1", "rw=randread", f"bs={args.bs}", f"iodepth={args.iodepth}",
             "norandommap=1", "randrepeat=0", "time_based=1", f"runtime={args.runtime}", "ramp_time=1"]
    for job in range(jobs):
        lines += [f"[job{job}]", f"trsvcid={ports[job % len(ports)]}"]
    return "\n".join(lines) + "\n"


def run_point(args, mode, jobs):
    ports = [BASE_PORT] if mode == "shared" else [BASE_PORT + j for j in range(jobs)]
    targets = [start_target(args.build, port, args.namespace, target=args.target) for port in ports]
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".fio", delete=False) as f:
            f.write(job_file(args, jobs, ports))
        busy0, total0 = busy_and_total_jiffies()
        t0 = time.monotonic()
        fio = subprocess.run([f"{args.build}/softverbs/softverbs-run", args.fio, "--output-format=json", f.name],
                             capture_output=True, text=True, timeout=args.runtime + 120)
        wall = time.monotonic() - t0
        busy1, total1 = busy_and_total_jiffies()
        os.unlink(f.name)
    finally:
        stop_targets(targets)
    if fio.returncode != 0:
        print(f"  {mode} jobs={jobs}: fio exit {fio.returncode}: {fio.stderr.strip()[-400:]}")
        return None
    result = json.loads(fio.stdout)
    iops = sum(j["read"]["iops"] for j in result["jobs"])
    fio_cores = sum(j["usr_cpu"] + j["sys_cpu"] for j in result["jobs"]) / 100.0
    cpus = os.cpu_count() or 1
    busy_cores = (busy1 - busy0) / max(total1 - total0, 1) * cpus
    return {"mode": mode, "jobs": jobs, "iops": iops, "fio_cores": fio_cores, "busy_cores": busy_cores,
            "wall_s": wall}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(here, "..", "build"))
    parser.add_argument("--fio", default="fio")
    parser.add_argument("--jobs", default="1,2,4,8")
    parser.add_argument("--modes", default="shared,per-job")
    parser.add_argument("--runtime", type=int, default=5)
    parser.add_argument("--iodepth", type=int, default=32)
    parser.add_argument("--bs", default="4k")
    parser.add_argument("--namespace", default="ram:256M")
    parser.add_argument("--target", help="nvmeof-target binary (default: the build's)")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    args.build = use_build(args.build)
    rows = []
    print(f"scaling: {args.bs} randread QD {args.iodepth}, {args.runtime} s per point, "
          f"{os.cpu_count()} CPUs, softverbs loopback")
    print(f"{'layout':8} {'jobs':>4} {'IOPS':>10} {'fio cores':>9} {'IOPS/fio core':>13} "
          f"{'busy cores':>10} {'IOPS/busy core':>14}")
    for mode in args.modes.split(","):
        for jobs in (int(n) for n in args.jobs.split(",")):
            row = run_point(args, mode, jobs)
            if row is None:
                continue
            rows.append(row)
            print(f"{mode:8} {jobs:>4} {row['iops']:>10.0f} {row['fio_cores']:>9.2f} "
                  f"{row['iops'] / max(row['fio_cores'], 1e-9):>13.0f} {row['busy_cores']:>10.2f} "
                  f"{row['iops'] / max(row['busy_cores'], 1e-9):>14.0f}", flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
