#!/usr/bin/env python3
"""The MDTS-split bandwidth ratio, in alternating pairs. Prints figures; asserts nothing.

1 MiB sequential reads and writes at QD 8 against a target whose MDTS is 128 KiB
(each I/O goes as 8 commands) and one whose MDTS is 1 MiB (unsplit), alternated
--pairs times so that drift on a shared machine hits both sides alike; the ratio
is split / unsplit bandwidth per pair, then of the medians. The datapath suite
measures the same point once per repeat; this is for machines with cores to spare
(the target and fio each get their own) and for noisy ones (more pairs).

Usage: bench/mdts_split.py [--build DIR] [--fio PATH] [--pairs N] [--runtime S] [--target PATH]
                           [--fio-args ...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scaling  # noqa: E402  (start_target, stop_targets, NQN)

MDTS = {"split": "5", "unsplit": "8"}  # 2^5 and 2^8 pages of 4 KiB


def bandwidth(args, rw, mdts):
    port = scaling.BASE_PORT + 50
    target = scaling.start_target(args.build, port, args.namespace, ["--mdts", mdts], args.target)
    try:
        fio = subprocess.run(
            [f"{args.build}/softverbs/softverbs-run", args.fio, "--output-format=json", "--name=split",
             f"--ioengine=external:{args.build}/engine/libfio_nvmeof.so", "--traddr=127.0.0.1",
             f"--trsvcid={port}", f"--subnqn={scaling.NQN}", "--nsid=1", f"--rw={rw}", "--bs=1m",
             "--iodepth=8", "--time_based=1", f"--runtime={args.runtime}", "--ramp_time=1"] + args.fio_args,
            capture_output=True, text=True, timeout=args.runtime + 60)
    finally:
        scaling.stop_targets([target])
    if fio.returncode != 0:
        sys.exit(f"mdts_split: fio exit {fio.returncode}: {fio.stderr.strip()[-400:]}")
    job = json.loads(fio.stdout)["jobs"][0]
    return job[rw]["bw"] / 1024.0


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
    parser.add_argument("--fio-args", nargs="*", default=[], help="extra fio options, e.g. --poll_spin_us=0")
    args = parser.parse_args()
    args.build = os.path.abspath(args.build)
    os.environ.setdefault("SOFTVERBS_LIBDIR", os.path.join(args.build, "softverbs"))
    print(f"MDTS split: 1 MiB QD 8, 128 KiB vs 1 MiB MDTS, {args.pairs} alternating pairs of {args.runtime} s, "
          f"{os.cpu_count()} CPUs {' '.join(args.fio_args)}")
    for rw in args.rw.split(","):
        split, unsplit = [], []
        for pair in range(args.pairs):
            order = ["split", "unsplit"] if pair % 2 == 0 else ["unsplit", "split"]
            for side in order:
                (split if side == "split" else unsplit).append(bandwidth(args, rw, MDTS[side]))
            print(f"  {rw:5} pair {pair + 1}: split {split[-1]:7.0f} MiB/s  unsplit {unsplit[-1]:7.0f} MiB/s  "
                  f"ratio {split[-1] / unsplit[-1]:.3f}", flush=True)
        print(f"{rw:5} median split {statistics.median(split):7.0f} MiB/s  unsplit {statistics.median(unsplit):7.0f} "
              f"MiB/s  ratio {statistics.median(split) / statistics.median(unsplit):.3f}", flush=True)


if __name__ == "__main__":
    main()
