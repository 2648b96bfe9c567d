#!/usr/bin/env python3
"""The MDTS-split bandwidth ratio, in alternating pairs. Prints figures; asserts nothing.

1 MiB sequential reads and writes at QD 8 against a target whose MDTS is 128 KiB
(each I/O goes as 8 commands) and one whose MDTS is 1 MiB (unsplit), alternated
--pairs times so that drift on a shared machine hits both sides alike; the ratio
is split / unsplit bandwidth per pair, then of the medians. The datapath suite
measures the same point once per repeat; this is for machines with cores to spare
(the target and fio each get their own) and for noisy ones (more pairs).

--threads adds each thread's CPU per GiB moved (target and fio, each split into
its own thread and softverbs' progress thread), sampled over the middle of each
run from /proc, to show which thread pays for the split.

Usage: bench/mdts_split.py [--build DIR] [--fio PATH] [--pairs N] [--runtime S] [--target PATH]
                           [--threads] [--fio-args ...]
"""
import argparse
import json
import glob
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scaling  # noqa: E402  (use_build, start_target, stop_targets, NQN)

MDTS = {"split": "5", "unsplit": "8"}  # 2^5 and 2^8 pages of 4 KiB


def read_stat(path):
    """(name, fields after the name) of a /proc stat file, or None once the task is gone."""
    try:
        text = open(path).read()
    except OSError:
        return None
    return text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()


def thread_ticks(pids):
    """{(pid, thread name): CPU ticks (utime + stime)} for every thread of those processes."""
    ticks = {}
    for pid in pids:
        for path in glob.glob(f"/proc/{pid}/task/*/stat"):
            if stat := read_stat(path):
                name, fields = stat
                ticks[(pid, name)] = ticks.get((pid, name), 0) + int(fields[11]) + int(fields[12])
    return ticks


def children(pid):
    """The processes whose parent is pid (fio's job processes)."""
    found = []
    for path in glob.glob("/proc/[0-9]*/stat"):
        if (stat := read_stat(path)) and int(stat[1][1]) == pid:
            found.append(int(path.split("/")[2]))
    return found


def bandwidth(args, rw, mdts):
    """MiB/s, and {thread label: CPU ms per GiB} when --threads."""
    port = scaling.BASE_PORT + 50
    target = scaling.start_target(args.build, port, args.namespace, ["--mdts", mdts], args.target)
    per_gib = {}
    try:
        fio = subprocess.Popen(
            [f"{args.build}/softverbs/softverbs-run", args.fio, "--output-format=json", "--name=split",
             f"--ioengine=external:{args.build}/engine/libfio_nvmeof.so", "--traddr=127.0.0.1",
             f"--trsvcid={port}", f"--subnqn={scaling.NQN}", "--nsid=1", f"--rw={rw}", "--bs=1m",
             "--iodepth=8", "--time_based=1", f"--runtime={args.runtime}", "--ramp_time=1"] + args.fio_args,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if args.threads:
            time.sleep(1.5)
            pids = [target.pid, fio.pid] + children(fio.pid)
            before, t0 = thread_ticks(pids), time.monotonic()
            time.sleep(max(args.runtime - 1.5, 0.5))
            after, t1 = thread_ticks(pids), time.monotonic()
        out, err = fio.communicate(timeout=args.runtime + 60)
    finally:
        scaling.stop_targets([target])
    if fio.returncode != 0:
        sys.exit(f"mdts_split: fio exit {fio.returncode}: {err.strip()[-400:]}")
    mib_s = json.loads(out)["jobs"][0][rw]["bw"] / 1024.0
    if args.threads:
        gib = mib_s * (t1 - t0) / 1024.0
        hz = os.sysconf("SC_CLK_TCK")
        for (pid, name), ticks in after.items():
            role = "target" if pid == target.pid else "fio"
            label = f"{role}/{name}"
            per_gib[label] = per_gib.get(label, 0.0) + (ticks - before.get((pid, name), 0)) * 1000.0 / hz / gib
    return mib_s, per_gib


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(here, "..", "build"))
    parser.add_argument("--fio", default="fio")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--runtime", type=int, default=5)
    parser.add_argument("--namespace", default="ram:1G")
    parser.add_argument("--rw", default="read,write")
    parser.add_argument("--target", help="nvmeof-target binary (default: the build's)")
    parser.add_argument("--threads", action="store_true", help="CPU per GiB of each thread")
    parser.add_argument("--fio-args", nargs="*", default=[], help="extra fio options, e.g. --poll_spin_us=0")
    args = parser.parse_args()
    args.build = scaling.use_build(args.build)
    print(f"MDTS split: 1 MiB QD 8, 128 KiB vs 1 MiB MDTS, {args.pairs} alternating pairs of {args.runtime} s, "
          f"{os.cpu_count()} CPUs {' '.join(args.fio_args)}")
    for rw in args.rw.split(","):
        split, unsplit = [], []
        cpu = {"split": {}, "unsplit": {}}
        for pair in range(args.pairs):
            order = ["split", "unsplit"] if pair % 2 == 0 else ["unsplit", "split"]
            for side in order:
                mib_s, per_gib = bandwidth(args, rw, MDTS[side])
                (split if side == "split" else unsplit).append(mib_s)
                for label, ms in per_gib.items():
                    cpu[side].setdefault(label, []).append(ms)
            print(f"  {rw:5} pair {pair + 1}: split {split[-1]:7.0f} MiB/s  unsplit {unsplit[-1]:7.0f} MiB/s  "
                  f"ratio {split[-1] / unsplit[-1]:.3f}", flush=True)
        print(f"{rw:5} median split {statistics.median(split):7.0f} MiB/s  unsplit {statistics.median(unsplit):7.0f} "
              f"MiB/s  ratio {statistics.median(split) / statistics.median(unsplit):.3f}", flush=True)
        if args.threads:
            print(f"  {rw} CPU ms per GiB, median of the pairs (thread: split / unsplit):")
            for label in sorted(set(cpu["split"]) | set(cpu["unsplit"])):
                a = statistics.median(cpu["split"].get(label, [0.0]))
                b = statistics.median(cpu["unsplit"].get(label, [0.0]))
                if max(a, b) >= 1:
                    print(f"    {label:24} {a:6.0f} / {b:6.0f}")


if __name__ == "__main__":
    main()
