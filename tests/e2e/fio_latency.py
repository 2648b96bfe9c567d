"""fio's latencies mean what fio says: against a target that delays every
answer by DELAY_MS, clat (issue to completion) is at least the delay for every
I/O, and lat = slat + clat. The engine stamps each I/O's issue time just before
its command is posted (FIO_ASYNCIO_SETS_ISSUE_TIME); without that fio stamps it
after the post and clat came out shorter than the target's own delay.

Over softverbs, or over NVMe/TCP with NVMEOF_E2E_TRANSPORT=tcp (the same
cases and checks): there every case takes the deferred path, the I/Os queued
between two reaps sent together (one sendmsg per queue) at the start of
getevents and stamped just before it, whatever iodepth_batch says.

Run one case: fio_latency.py qd1 | qd32 | qd32-batched"""
import sys
import tempfile

import harness as h

DELAY_MS = 1
NS_PER_MS = 1_000_000
# lat and slat + clat are each fio's means over the same I/Os; they differ
# only by rounding in fio's running means.
MEAN_SLACK_NS = 1_000

CASES = {
    # name: (iodepth, extra job lines)
    "qd1": (1, ""),
    "qd32": (32, ""),
    # Several I/Os per commit: posted together (deferred), stamped at the post.
    "qd32-batched": (32, "iodepth_batch_submit=8\niodepth_batch_complete_max=32\n"),
}


def run(case):
    iodepth, extra = CASES[case]
    with tempfile.TemporaryDirectory() as wd, \
            h.target(wd, namespace="ram:64M", extra=["--fault", f"delay-ms={DELAY_MS}"]) as t:
        job = f"{wd}/latency.fio"
        h.write_job(job, f"""[global]
{{TARGET}}thread=1
rw=randrw
bs=4k
iodepth={iodepth}
{extra}time_based=1
runtime=2
[latency]
""")
        proc, report = h.run_fio(job, t)
        h.check(proc.returncode == 0 and report is not None,
                f"fio failed (rc {proc.returncode}): {proc.stderr[-2000:]}")
        h.check(not h.job_errors(report), f"fio reported errors: {h.job_errors(report)}")
        for direction in ("read", "write"):
            stats = report["jobs"][0][direction]
            ios = stats["total_ios"]
            h.check(ios > 0, f"{direction}: no I/O")
            clat, lat, slat = stats["clat_ns"], stats["lat_ns"], stats["slat_ns"]
            print(f"{case} {direction}: {ios} I/Os; clat min {clat['min'] / 1e3:.1f} us, "
                  f"mean {clat['mean'] / 1e3:.1f} us; lat min {lat['min'] / 1e3:.1f} us, mean "
                  f"{lat['mean'] / 1e3:.1f} us; slat mean {slat['mean'] / 1e3:.2f} us")
            h.check(clat["min"] >= DELAY_MS * NS_PER_MS,
                    f"{direction}: clat min {clat['min']} ns is below the target's delay of "
                    f"{DELAY_MS} ms: the issue time is stamped after the command went out")
            h.check(clat["N"] == ios and slat["N"] == ios,
                    f"{direction}: {clat['N']} clat and {slat['N']} slat samples for {ios} I/Os")
            h.check(abs(lat["mean"] - (slat["mean"] + clat["mean"])) <= MEAN_SLACK_NS,
                    f"{direction}: lat mean {lat['mean']:.0f} ns is not slat + clat "
                    f"({slat['mean']:.0f} + {clat['mean']:.0f} ns)")
            h.check(lat["min"] >= clat["min"], f"{direction}: lat min below clat min")


if __name__ == "__main__":
    try:
        run(sys.argv[1])
    except h.Failure as failure:
        print(f"FAIL: {failure}")
        sys.exit(1)
    print("ok")
