"""End-to-end tests of nvmeof-perf against nvmeof-target on loopback (softverbs):
two runs of one build compare unchanged; a target slowed on purpose compares
regressed with exit status 1; plots are written; two fio --server hosts are
reported per host and in sum. Binaries come from the environment meson sets
(NVMEOF_FIO, NVMEOF_ENGINE, NVMEOF_TARGET_BIN, NVMEOF_SOFTVERBS_RUN)."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAUNCHER = HERE.parent / "nvmeof-perf"
SUITES = HERE.parent.parent / "bench" / "suites"
ROW = re.compile(r"^\| (?P<point>[^|]+) \| (?P<metric>[^|]+) \|.*\| (?P<verdict>[^|]+) \|$")


class Failure(AssertionError):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def perf(*args, timeout=600):
    proc = subprocess.run([sys.executable, str(LAUNCHER), *args], capture_output=True, text=True, timeout=timeout)
    return proc


def run_suite(workdir, suite, *extra):
    proc = perf("run", str(suite), "-o", str(Path(workdir) / "results"), *extra)
    check(proc.returncode == 0, f"nvmeof-perf run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    path = Path(proc.stdout.strip())
    check(path.is_file(), f"run printed {proc.stdout!r}, not a result file")
    return path


def verdicts(table):
    rows = [m.groupdict() for m in map(ROW.match, table.splitlines()) if m]
    return [r for r in rows if r["point"] != "point" and not r["point"].startswith("---")]


def check_result(path, points):
    result = json.loads(path.read_text())
    meta = result["metadata"]
    check(meta["fio_version"].startswith("fio-"), f"fio version {meta['fio_version']!r}")
    check(meta["engine"]["path"] == str(Path(os.environ["NVMEOF_ENGINE"]).resolve()), f"engine {meta['engine']}")
    check(meta["target"]["facts"].get("mdts_bytes") == 131072, f"target facts {meta['target']}")
    check(len(result["points"]) == points, f"{len(result['points'])} points, expected {points}")
    for p in result["points"]:
        check(all(r["fio"]["jobs"][0]["error"] == 0 for r in p["runs"]), f"fio errors in {p['name']}")
    return result


def test_unchanged(workdir):
    """run quick twice, compare: every point and metric unchanged; then plot.

    A 2-vCPU VM (and an ASan build on one) drifts by a third between two runs
    25 s apart now and then, so a comparison that flags a change is repeated
    once with a third run against the second: a compare that flags identical
    builds every time still fails, one drift of the machine does not."""
    first = run_suite(workdir, "quick")
    second = run_suite(workdir, "quick")
    check(first != second, f"the second run wrote over the first ({first})")
    r = check_result(second, 3)
    check(all(len(p["runs"]) == 5 for p in r["points"]), "5 repeats per point expected")
    proc = perf("compare", str(first), str(second))
    rows = verdicts(proc.stdout)
    check(len(rows) >= 3 * 7, f"too few rows in the table:\n{proc.stdout}")
    noisy = [r for r in rows if r["verdict"].strip() != "unchanged"]
    if noisy or proc.returncode != 0:
        print(f"first compare flagged {len(noisy)} rows (exit {proc.returncode}); once more with a third run:\n"
              f"{proc.stdout}")
        third = run_suite(workdir, "quick")
        proc = perf("compare", str(second), str(third))
        rows = verdicts(proc.stdout)
        check(len(rows) >= 3 * 7, f"too few rows in the table:\n{proc.stdout}")
        noisy = [r for r in rows if r["verdict"].strip() != "unchanged"]
    check(not noisy and proc.returncode == 0,
          f"two runs of one build were not unchanged everywhere, twice (exit {proc.returncode}):\n{proc.stdout}")
    print(f"compare of two quick runs: {len(rows)} rows, all unchanged, exit 0")
    plots = Path(workdir) / "plots"
    proc = perf("plot", str(first), str(second), "-o", str(plots))
    check(proc.returncode == 0, f"plot failed: {proc.stderr[-2000:]}")
    pngs = sorted(plots.glob("*.png"))
    names = {p.name.split("-vs-")[0].split("-")[0] for p in pngs}
    check({"iops", "p99", "percentiles"} <= names, f"plots written: {[p.name for p in pngs]}")
    for p in pngs:
        check(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000, f"{p} is not a PNG plot")
    print(f"plot: {len(pngs)} PNGs")


def test_regressed(workdir):
    """A target whose every completion is 10 ms late: regressed, exit 1."""
    short = ("--runtime", "1", "--repeats", "2")
    base = run_suite(workdir, "quick", *short)
    slow = run_suite(workdir, "quick", *short, "--target-arg=--fault", "--target-arg=delay-ms=10")
    proc = perf("compare", str(base), str(slow))
    check(proc.returncode == 1, f"compare against the slowed target exited {proc.returncode}:\n{proc.stdout}")
    rows = verdicts(proc.stdout)
    iops = {r["point"].strip(): r["verdict"].strip() for r in rows if r["metric"].startswith("IOPS")}
    check(len(iops) == 3 and set(iops.values()) == {"**regressed**"},
          f"IOPS of every point should be regressed:\n{proc.stdout}")
    print(f"compare against a target delayed 10 ms per completion: IOPS regressed at {len(iops)} points, exit 1")


def test_gpu_fake(workdir):
    """The gpu suite as shipped, on the embedded target with the fake CUDA
    driver (device memory the CPU cannot touch): every point runs with its
    buffers in "GPU" memory and no fio error."""
    fake = os.environ.get("NVMEOF_FAKE_CUDA")
    check(fake, "NVMEOF_FAKE_CUDA is not set")
    os.environ.update({"NVMEOF_CUDA_LIBRARY": fake, "SOFTVERBS_CUDA_LIBRARY": fake, "FAKE_CUDA_OPAQUE": "1"})
    path = run_suite(workdir, "gpu", "--embedded", "--runtime", "1", "--repeats", "1")
    result = json.loads(path.read_text())
    check(len(result["points"]) == 6, f"{len(result['points'])} points, expected 6")
    for p in result["points"]:
        job = p["runs"][0]["fio"]["jobs"][0]
        check(job["error"] == 0, f"fio error {job['error']} in {p['name']}")
        done = job["read"]["total_ios"] + job["write"]["total_ios"]
        check(done > 0, f"no I/O in {p['name']}")
        check(str(p["options"].get("gpu")) == "0", f"the suite's gpu option is not in {p['name']}: {p['options']}")
    facts = result["metadata"]["target"]["facts"]
    check(facts.get("mdts_bytes") == 131072, f"target facts {facts}")
    print(f"gpu suite on the fake CUDA driver: {len(result['points'])} points, no fio error")


def free_port():
    """Below the ephemeral range, as the runner's own (nvmeof_perf.fio_rdma)."""
    sys.path.insert(0, str(HERE.parent))
    from nvmeof_perf import fio_rdma
    return fio_rdma.free_port()


def test_two_hosts(workdir):
    """Two fio --server on loopback (two ports) against one target: the
    result holds each host's report; compare lists each host and the sum."""
    env = os.environ
    wd = Path(workdir)
    target = subprocess.Popen([env["NVMEOF_SOFTVERBS_RUN"], env["NVMEOF_TARGET_BIN"], "--listen", "127.0.0.1",
                               "--port", "0", "--subsystem", "nqn.2026-12.io.nvmeof:perf", "--namespace",
                               "ram:64M"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    servers = []
    try:
        port = re.search(r":(\d+)$", target.stdout.readline().strip()).group(1)
        hosts = []
        for _ in range(2):
            p = free_port()
            servers.append(subprocess.Popen([env["NVMEOF_SOFTVERBS_RUN"], env["NVMEOF_FIO"],
                                             f"--server=ip:127.0.0.1,{p}"],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            hosts.append(f"ip:127.0.0.1,{p}")
        deadline = time.monotonic() + 20
        for h in hosts:  # wait until both listen
            port_n = int(h.rsplit(",", 1)[1])
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port_n), timeout=1).close()
                    break
                except OSError:
                    check(time.monotonic() < deadline, f"fio --server on {port_n} did not listen")
                    time.sleep(0.2)
        suite = wd / "two-hosts.toml"
        suite.write_text(f'''name = "two-hosts"
target = {{ kind = "external", traddr = "127.0.0.1", trsvcid = "{port}", subnqn = "nqn.2026-12.io.nvmeof:perf" }}
hosts = {json.dumps(hosts)}
runtime = 1
repeats = 2
[options]
size = "32m"
[[matrix]]
rw = "randread"
bs = "4k"
iodepth = 4
''')
        a = run_suite(workdir, suite)
        result = json.loads(a.read_text())
        report = result["points"][0]["runs"][0]["fio"]
        names = {f"{j['hostname']}:{j['port']}" for j in report["client_stats"] if j["jobname"] != "All clients"}
        check(len(report["client_stats"]) >= 2, f"client_stats: {report['client_stats']}")
        sys.path.insert(0, str(HERE.parent))
        from nvmeof_perf import metrics
        total = metrics.of_report(report)["iops"]
        per_host = [metrics.from_entries(e)["iops"] for e in metrics.by_host(report).values()]
        check(len(per_host) == 2 and all(v > 0 for v in per_host) and abs(sum(per_host) - total) < 1e-6 * total,
              f"the sum {total} is not the hosts' {per_host}")
        proc = perf("compare", str(a), str(a))
        rows = verdicts(proc.stdout)
        points = {r["point"].strip() for r in rows}
        host_rows = {p for p in points if " @" in p}
        check(len(points) == 1 + len(names) and len(host_rows) == len(names) == 2,
              f"expected the sum and one row group per host ({names}):\n{proc.stdout}")
        check(proc.returncode == 0, f"a result compared with itself exited {proc.returncode}")
        print(f"two fio --server hosts: {len(report['client_stats'])} client entries, rows {sorted(points)}")
    finally:
        for s in servers:
            s.terminate()
        for s in servers:
            try:
                s.wait(timeout=15)
            except subprocess.TimeoutExpired:
                s.kill()
                s.wait()
        target.terminate()
        target.wait(timeout=15)


BUDGET = HERE.parent.parent / "bench" / "instruction-budget.json"


def test_budget_within(workdir):
    """The committed instruction budget holds for this build."""
    proc = perf("budget", "--check", str(BUDGET))
    check(proc.returncode == 0, f"budget check exited {proc.returncode}:\n{proc.stdout}{proc.stderr[-2000:]}")
    rows = [line for line in proc.stdout.splitlines() if "| ok |" in line]
    workloads = len(json.loads(BUDGET.read_text())["workloads"])
    check(len(rows) == workloads * 5,
          f"expected 4 paths and their sum within budget, every workload:\n{proc.stdout}")
    print(proc.stdout)


def test_budget_over(workdir):
    """A write's submit path 10 % dearer than its budget (the budget lowered
    to 90 %, as if the code had grown) fails the check, and only that path of
    that workload is over: reads and writes are measured and judged apart."""
    budget = json.loads(BUDGET.read_text())
    # The QD 32 reads and writes only: every workload costs two callgrind runs.
    budget["workloads"] = {k: budget["workloads"][k] for k in ("randread", "randwrite")}
    paths = budget["workloads"]["randwrite"]["paths"]
    paths["submit"] = round(paths["submit"] * 0.9)
    lowered = Path(workdir) / "budget.json"
    lowered.write_text(json.dumps(budget))
    proc = perf("budget", "--check", str(lowered))
    check(proc.returncode == 1, f"budget check exited {proc.returncode}, expected 1:\n{proc.stdout}{proc.stderr[-2000:]}")
    over = [tuple(c.strip() for c in line.split("|")[1:3]) for line in proc.stdout.splitlines()
            if "**over budget**" in line]
    check(over == [("randwrite", "submit")], f"expected only the write's submit over budget:\n{proc.stdout}")
    ok = [line for line in proc.stdout.splitlines() if line.startswith("| randread |") and "| ok |" in line]
    check(len(ok) == 5, f"expected every read path within budget:\n{proc.stdout}")
    print(proc.stdout)


SMOKE_SUITE = """name = "datapath-smoke"
target = { kind = "embedded", namespace = "ram:64M" }
runtime = 1
repeats = 1
[options]
size = "32m"
[[matrix]]
rw = "read"
bs = "1m"
iodepth = 2
label = "mdts=128k"
[[matrix]]
rw = "read"
bs = "1m"
iodepth = 2
label = "mdts=1m"
target_args = ["--mdts", "8"]
[[matrix]]
rw = "randwrite"
bs = "4k"
iodepth = 1
label = "bogus-option"
options = { no_such_engine_option = 1 }
optional = true
[[matrix]]
rw = "write"
bs = "4k"
iodepth = 4
label = "fio-rdma"
ioengine = "rdma"
options = { verb = "write" }
[[ratio]]
name = "MDTS split"
numerator = "read bs=1m qd=2 jobs=1 queues=1 mdts=128k"
denominator = "read bs=1m qd=2 jobs=1 queues=1 mdts=1m"
goal = 0.95
"""


def test_datapath_smoke(workdir):
    """The datapath suite's mechanics, one short point each: a point with its
    own target arguments gets its own target (MDTS 1 MiB as the engine saw
    it); an optional point fio refuses is recorded as skipped and the run
    goes on; fio's rdma engine runs against its server; show prints the
    ratio. Figures are printed, not judged."""
    suite = Path(workdir) / "smoke.toml"
    suite.write_text(SMOKE_SUITE)
    path = run_suite(workdir, suite)
    result = json.loads(path.read_text())
    points = {p["name"]: p for p in result["points"]}
    split = points["read bs=1m qd=2 jobs=1 queues=1 mdts=128k"]
    whole = points["read bs=1m qd=2 jobs=1 queues=1 mdts=1m"]
    mdts = [p["runs"][0]["info"][0]["controllers"][0]["mdts_bytes"] for p in (split, whole)]
    check(mdts == [131072, 1 << 20], f"MDTS as the engine saw it: {mdts}")
    bogus = points["randwrite bs=4k qd=1 jobs=1 queues=1 bogus-option"]
    check(not bogus["runs"] and "no_such_engine_option" in bogus.get("skipped", ""),
          f"the optional point was not skipped with fio's reason: {bogus}")
    rdma = points["write bs=4k qd=4 jobs=1 queues=1 fio-rdma"]["runs"][0]["fio"]["jobs"][0]
    check(rdma["error"] == 0 and rdma["write"]["total_ios"] > 0, f"fio's rdma engine did no I/O: {rdma}")
    for p in (split, whole):
        job = p["runs"][0]["fio"]["jobs"][0]
        check(job["error"] == 0 and job["read"]["total_ios"] > 0, f"no I/O in {p['name']}")
    proc = perf("show", str(path))
    check(proc.returncode == 0 and "| MDTS split | bw |" in proc.stdout and "Skipped" in proc.stdout,
          f"show has no ratio or skipped list:\n{proc.stdout}{proc.stderr}")
    print(proc.stdout)


def test_tcp_syscalls(workdir):
    """Over NVMe/TCP at QD 32 the engine sends what fio queued between two
    reaps in one sendmsg and takes many answers per recvmsg: at most one of
    the two system calls per I/O over 3 × 20,000 4 KiB random reads (counts
    from the engine's info_file end record, not times)."""
    proc = perf("budget", "--check", str(BUDGET), "--syscalls", "--only", "tcp-randread",
                "--max-syscalls", "1")
    check(proc.returncode == 0, f"budget --syscalls exited {proc.returncode}:\n{proc.stdout}{proc.stderr[-2000:]}")
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| tcp-randread |")]
    check(len(rows) == 1, f"no tcp-randread row:\n{proc.stdout}")
    print(proc.stdout)


CASES = {"unchanged": test_unchanged, "regressed": test_regressed, "two-hosts": test_two_hosts,
         "gpu-fake": test_gpu_fake, "budget-within": test_budget_within, "budget-over": test_budget_over,
         "datapath-smoke": test_datapath_smoke, "tcp-syscalls": test_tcp_syscalls}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit(f"usage: perf_e2e.py {{{'|'.join(CASES)}}}")
    workdir = tempfile.mkdtemp(prefix="nvmeof-perf-test-")
    try:
        CASES[sys.argv[1]](workdir)
    except Failure as e:
        print(f"FAIL: {e}")
        sys.exit(1)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
