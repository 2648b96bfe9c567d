"""`nvmeof-perf budget`: instructions per I/O inside the engine and libnvmeof,
counted by valgrind's callgrind, a figure that does not depend on how busy the
machine is. The delta method cancels what is paid once per run (connect,
set-up, tear-down): runs of N and 3N reads, (cost(3N) - cost(N)) / 2N.

Per path, the cost of the function that does the work, without what it calls
in the RDMA device's libraries (libibverbs, librdmacm: here the software
device, on hardware the vendor's provider; shown beside it, not budgeted).
libc and libstdc++ calls count: an allocation or a clock read added to the
data path is the project's cost.
  submit      Job::queue (io_u to transfer to request slot, SQE built)
  commit      Job::commit (posting the SENDs)
  completion  RdmaQueue::handle_completion (including the receive re-post)
  reap        Job::reap (hand-back to fio)
and their sum, "engine+core". A budget file holds the figures of a known-good
build; `--check` fails when a path or the sum costs more than its budget by
more than the tolerance (5 %)."""
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import callgrind, runner, suite

PATHS = {
    "submit": "nvmeof::engine::Job::queue(",
    "commit": "nvmeof::engine::Job::commit(",
    "completion": "RdmaQueue::handle_completion(",
    "reap": "nvmeof::engine::Job::reap(",
}
TOTAL = "engine+core"
DEFAULT_IOS = 2000
DEFAULT_TOLERANCE = 0.05
QUEUE_DEPTH = 32
CALLGRIND_TIMEOUT_S = 900
is_ours = callgrind.objects_except("libibverbs", "librdmacm")


class BudgetError(Exception):
    pass


def _fio_args(tools, traddr, trsvcid, subnqn, ios):
    return [tools.fio, "--output-format=json", "--name=budget", "--rw=randread", "--bs=4k", "--size=64m",
            f"--iodepth={QUEUE_DEPTH}", f"--iodepth_batch_complete_max={QUEUE_DEPTH}", "--norandommap",
            "--randrepeat=0", "--thread=1", f"--number_ios={ios}", f"--ioengine=external:{tools.engine}",
            f"--traddr={traddr}", f"--trsvcid={trsvcid}", f"--subnqn={subnqn}",
            # Room for every I/O in flight even while SEND completions lag the
            # responses: a full queue would make fio re-queue ("busy"), and how
            # often depends on timing, not on the code.
            f"--queue_size={4 * QUEUE_DEPTH}"]


def path_costs(callgrind_out):
    """{path: (own instructions, inclusive instructions)} of one run."""
    graph = callgrind.CallGraph(callgrind_out)
    costs = {}
    for name, needle in PATHS.items():
        functions = graph.functions(needle)
        if functions:
            costs[name] = (sum(graph.own_inclusive(f, is_ours) for f in functions),
                           sum(graph.inclusive(f) for f in functions))
    return costs


def measure(tools, ios=DEFAULT_IOS):
    """{path: (own, inclusive) instructions per I/O} by the delta method on
    the embedded target; the own sum under TOTAL."""
    if not shutil.which("valgrind"):
        raise BudgetError("the instruction budget needs valgrind (apt-get install valgrind)")
    workdir = tempfile.mkdtemp(prefix="nvmeof-perf-budget-")
    try:
        target = suite.Target(namespace="ram:64M")
        with runner.embedded_target(tools, target, [], workdir) as (traddr, trsvcid):
            costs = []
            for n in (ios, 3 * ios):
                out = Path(workdir) / f"callgrind-{n}.out"
                cmd = [tools.softverbs_run, "valgrind", "--tool=callgrind", "--compress-strings=no",
                       "--compress-pos=no", f"--callgrind-out-file={out}"]
                cmd += _fio_args(tools, traddr, trsvcid, target.subnqn, n)
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CALLGRIND_TIMEOUT_S)
                if proc.returncode != 0 or not out.exists():
                    raise BudgetError(f"fio under callgrind failed (exit {proc.returncode}): {proc.stderr[-1500:]}")
                costs.append(path_costs(out))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    missing = [p for p in PATHS if p not in costs[0] or p not in costs[1]]
    if missing:
        raise BudgetError(f"callgrind has no cost for {', '.join(missing)} (engine built without symbols?)")
    per_io = {p: tuple((costs[1][p][i] - costs[0][p][i]) / (2 * ios) for i in range(2)) for p in PATHS}
    per_io[TOTAL] = (sum(v[0] for v in per_io.values()), sum(v[1] for v in per_io.values()))
    return per_io


def check(measured, budget, tolerance):
    """[(path, own, inclusive, budget, verdict)]; verdict 'over' beyond the tolerance."""
    rows = []
    for path in [*PATHS, TOTAL]:
        own, inclusive = measured[path]
        limit = budget.get(path)
        if limit is None:
            verdict = "no budget"
        else:
            verdict = "over" if own > limit * (1 + tolerance) else "ok"
        rows.append((path, own, inclusive, limit, verdict))
    return rows


def load_budget(path):
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise BudgetError(f"no budget file {path}") from None
    except json.JSONDecodeError as e:
        raise BudgetError(f"{path} is not JSON: {e}") from None
    if not isinstance(data.get("paths"), dict):
        raise BudgetError(f"{path} has no 'paths' table")
    return data


def markdown(rows, tolerance):
    out = ["| path | engine+core instructions per I/O | budget | verdict | with the RDMA device's |",
           "|---|---:|---:|---|---:|"]
    for path, own, inclusive, limit, verdict in rows:
        mark = f"**over budget** (> {tolerance * 100:.0f} %)" if verdict == "over" else verdict
        out.append(f"| {path} | {own:.0f} | {'-' if limit is None else f'{limit:.0f}'} | {mark} | {inclusive:.0f} |")
    return "\n".join(out)
