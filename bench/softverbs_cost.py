#!/usr/bin/env python3
"""What softverbs costs per work request and per I/O. Prints figures; asserts nothing.

1. softverbs_cost (softverbs/bench/sv_cost.cpp): an NVMe-oF-like 4 KiB read loop
   (SEND command + receive, peer answers WRITE 4 KiB + SEND) at QD 32. Under
   callgrind, by the delta method (runs of N and 3N I/Os, differences divided
   by the differences of the program's own call counts, so connect and set-up
   cancel): instructions per ibv_post_send WR, per ibv_post_recv, per
   ibv_poll_cq call and per CQE, the progress thread per I/O, and everything in
   libibverbs.so.1 per I/O. Heap allocations per I/O (steady state, both
   sides) and native IOPS / mean latency at QD 32 and QD 1 come from native runs.
2. --fio: fio + libfio_nvmeof.so against nvmeof-target (4 KiB randread, QD 32)
   under callgrind, N and 3N I/Os: instructions per I/O split per object
   (softverbs = libibverbs.so.1, engine+core = libfio_nvmeof.so + libnvmeof.so,
   fio, the rest); allocations per I/O by valgrind's heap summary (same delta);
   native IOPS at QD 32 and mean completion latency at QD 1, --repeats times.

Usage: bench/softverbs_cost.py [BUILD_DIR] [--ios N] [--fio] [--repeats R] [--runtime S]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NQN = "nqn.2026-12.io.nvmeof:svcost"
SOFTVERBS = "libibverbs.so.1"
INCLUSIVE = {
    "post_send": "sv::dp_post_send(",
    "post_recv": "sv::dp_post_recv(",
    "poll_cq": "sv::dp_poll_cq(",
    "progress": "sv::Engine::run(",
}


def annotate(out, inclusive):
    return subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}", "--threshold=100",
                           str(out)], capture_output=True, text=True, timeout=600).stdout


def per_object(out):
    """Self instructions per shared object (basename)."""
    objects = {}
    for line in annotate(out, False).splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+\S+?:.*\[(.+)\]$", line)
        if m:
            obj = os.path.basename(m.group(2))
            objects[obj] = objects.get(obj, 0) + int(m.group(1).replace(",", ""))
    return objects


def inclusive_costs(out):
    costs = {}
    text = annotate(out, True)
    for name, needle in INCLUSIVE.items():
        for line in text.splitlines():
            if needle in line and line.rstrip().endswith("]"):
                costs[name] = int(line.split()[0].replace(",", ""))
                break
    return costs


def run_probe(build, args, valgrind=None):
    cmd = [str(build / "softverbs" / "softverbs-run")] + (valgrind or []) + \
          [str(build / "softverbs" / "bench" / "softverbs_cost")] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    line = next((l for l in p.stdout.splitlines() if l.startswith("{")), None)
    if p.returncode != 0 or line is None:
        sys.exit(f"softverbs_cost failed (exit {p.returncode}): {p.stderr[-1500:]}")
    return json.loads(line)


def probe_section(build, ios, workdir, repeats):
    print("softverbs_cost: SEND 64 B + receive per I/O, peer answers WRITE 4 KiB + SEND 64 B; QD 32;\n"
          "the host sleeps on its completion channel when the CQ is empty")
    for chain in (False, True):
        flag = ["--chain"] if chain else []
        runs = []
        for n in (ios, 3 * ios):
            out = Path(workdir) / f"probe-{chain}-{n}.out"
            counts = run_probe(build, ["--ios", str(n)] + flag,
                               ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"])
            runs.append((counts, inclusive_costs(out), per_object(out).get(SOFTVERBS, 0)))
        (c1, i1, s1), (c3, i3, s3) = runs
        d = {k: c3[k] - c1[k] for k in ("ios", "send_wrs", "post_recv_calls", "poll_calls", "cqes")}
        cost = {k: i3.get(k, 0) - i1.get(k, 0) for k in INCLUSIVE}
        print(f"\n  {'one post per command' if not chain else 'commands freed by a poll posted as one list'}"
              f" (callgrind, delta of {ios} and {3 * ios} I/Os):")
        print(f"    ibv_post_send, per WR                 {cost['post_send'] / d['send_wrs']:8.0f}")
        print(f"    ibv_post_recv, per WR                 {cost['post_recv'] / d['post_recv_calls']:8.0f}")
        empty = (c3['empty_polls'] - c1['empty_polls']) / d['cqes']
        print(f"    ibv_poll_cq, per CQE                  {cost['poll_cq'] / d['cqes']:8.0f}"
              f"   ({d['poll_calls'] / d['cqes']:.2f} calls per CQE, {empty:.2f} of them empty)")
        print(f"    progress thread, per I/O              {cost['progress'] / d['ios']:8.0f}")
        total = cost['post_send'] + cost['post_recv'] + cost['poll_cq'] + cost['progress']
        print(f"    softverbs in all, per I/O             {total / d['ios']:8.0f}   (the four above, libc included;"
              f" {(s3 - s1) / d['ios']:.0f} in libibverbs.so.1 itself)")
    print()
    print("  native runs, busy polling (the 2-core machine is shared: IOPS and latency are noisy):")
    for label, args in (("QD 32", ["--ios", "50000", "--busy"]), ("QD 32 list", ["--ios", "50000", "--chain", "--busy"]),
                        ("QD 1", ["--ios", "5000", "--depth", "1", "--busy"])):
        rs = [run_probe(build, args) for _ in range(repeats)]
        iops = [r["iops"] for r in rs]
        lat = [r["mean_latency_us"] for r in rs]
        print(f"    {label:<11} IOPS median {statistics.median(iops):9.0f} (min {min(iops):.0f}, max {max(iops):.0f}),"
              f" mean latency median {statistics.median(lat):7.1f} us; heap allocations per I/O: host "
              f"{rs[0]['host_allocs_per_io']:.2f}, peer {rs[0]['peer_allocs_per_io']:.2f}")


def start_target(build, workdir):
    ready = Path(workdir) / "ready"
    proc = subprocess.Popen([str(build / "softverbs" / "softverbs-run"), str(build / "target" / "nvmeof-target"),
                             "--listen", "127.0.0.1", "--port", "0", "--subsystem", NQN, "--namespace", "ram:64M"],
                            stdout=open(ready, "w"), stderr=subprocess.DEVNULL)
    for _ in range(300):
        m = re.search(r"listening on \S+:(\d+)", ready.read_text())
        if m:
            return proc, int(m.group(1))
        time.sleep(0.1)
    proc.kill()
    sys.exit("softverbs_cost: nvmeof-target did not start")


def fio_args(fio, engine, port, qd, ios=None, runtime=None):
    args = [fio, "--output-format=json", "--name=svcost", "--rw=randread", "--bs=4k", "--size=64m",
            f"--iodepth={qd}", f"--iodepth_batch_complete_max={qd}", "--norandommap", "--randrepeat=0",
            "--thread=1", f"--ioengine=external:{engine}", "--traddr=127.0.0.1", f"--trsvcid={port}",
            f"--subnqn={NQN}"]
    return args + ([f"--runtime={runtime}", "--time_based"] if runtime else [f"--number_ios={ios}"])


def fio_section(build, ios, workdir, repeats, runtime):
    fio = str(ROOT / ".cache/fio-src/fio") if (ROOT / ".cache/fio-src/fio").exists() else "fio"
    engine = str(build / "engine" / "libfio_nvmeof.so")
    run = str(build / "softverbs" / "softverbs-run")
    target, port = start_target(build, workdir)
    try:
        groups = []
        heap = []
        for n in (ios, 3 * ios):
            out = Path(workdir) / f"fio-{n}.out"
            p = subprocess.run([run, "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] +
                               fio_args(fio, engine, port, 32, ios=n), capture_output=True, text=True, timeout=1800)
            if p.returncode != 0:
                sys.exit(f"fio under callgrind failed: {p.stderr[-1500:]}")
            groups.append((per_object(out), inclusive_costs(out)))
            p = subprocess.run([run, "valgrind", "--tool=memcheck", "--leak-check=no"] +
                               fio_args(fio, engine, port, 32, ios=n), capture_output=True, text=True, timeout=1800)
            m = re.search(r"total heap usage: ([\d,]+) allocs", p.stderr)
            heap.append(int(m.group(1).replace(",", "")) if m else None)
        split = {"softverbs (libibverbs.so.1)": lambda o: o == SOFTVERBS,
                 "engine+core (libfio_nvmeof.so, libnvmeof.so)": lambda o: o.startswith(("libfio_nvmeof", "libnvmeof")),
                 "fio": lambda o: o == "fio"}
        print(f"\nfio + engine, 4 KiB randread QD 32 against nvmeof-target (callgrind, delta of {ios} and {3 * ios} I/Os):")
        (o1, i1), (o3, i3) = groups
        rest = 0.0
        print("  self instructions per I/O, per object:")
        for label, match in split.items():
            v = sum(o3.get(o, 0) - o1.get(o, 0) for o in o3 if match(o)) / (2 * ios)
            print(f"    {label:<46}{v:8.0f}")
        for o in o3:
            if not any(match(o) for match in split.values()):
                rest += (o3[o] - o1.get(o, 0)) / (2 * ios)
        print(f"    {'the rest (libc, libstdc++, ld.so)':<46}{rest:8.0f}")
        print("  softverbs' entry points, inclusive (libc they call included), per I/O:")
        for name, label in (("post_send", "ibv_post_send"), ("post_recv", "ibv_post_recv"),
                            ("poll_cq", "ibv_poll_cq (busy polling: varies with timing)"),
                            ("progress", "progress thread")):
            print(f"    {label:<46}{(i3.get(name, 0) - i1.get(name, 0)) / (2 * ios):8.0f}")
        if None not in heap:
            print(f"    heap allocations per I/O (memcheck)          {(heap[1] - heap[0]) / (2 * ios):8.2f}")
        for qd in (32, 1):
            iops, clat = [], []
            for _ in range(repeats):
                p = subprocess.run([run] + fio_args(fio, engine, port, qd, runtime=runtime), capture_output=True,
                                   text=True, timeout=600)
                job = json.loads(p.stdout[p.stdout.find("{"):])["jobs"][0]["read"]
                iops.append(job["iops"])
                clat.append(job["clat_ns"]["mean"] / 1000.0)
            print(f"    native QD {qd:<3} IOPS median {statistics.median(iops):9.0f} (min {min(iops):.0f}, max "
                  f"{max(iops):.0f}); mean clat median {statistics.median(clat):7.1f} us ({repeats} x {runtime} s)")
    finally:
        target.terminate()
        target.wait(timeout=20)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build", nargs="?", default=str(ROOT / "build"))
    p.add_argument("--ios", type=int, default=2000, help="N of the delta method (runs of N and 3N)")
    p.add_argument("--fio", action="store_true", help="also measure a real fio run of the engine")
    p.add_argument("--no-probe", action="store_true", help="skip the softverbs_cost part")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--runtime", type=int, default=5)
    a = p.parse_args()
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        sys.exit("softverbs_cost: needs valgrind (apt-get install valgrind)")
    build = Path(a.build).resolve()
    workdir = tempfile.mkdtemp(prefix="softverbs-cost-")
    try:
        if not a.no_probe:
            probe_section(build, a.ios, workdir, a.repeats)
        if a.fio:
            fio_section(build, a.ios, workdir, a.repeats, a.runtime)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
