"""`nvmeof-perf budget`: instructions per I/O inside the engine and libnvmeof,
counted by valgrind's callgrind, a figure that does not depend on how busy the
machine is. The delta method cancels what is paid once per run (connect,
set-up, tear-down): runs of N and 3N I/Os, (cost(3N) - cost(N)) / 2N.

Per path, the cost of the functions that do the work, without what they call
in the RDMA device's libraries (libibverbs, librdmacm: here the software
device, on hardware the vendor's provider; shown beside it, not budgeted) and
in fio itself (io_u_mark_submit, fio's own accounting that every engine with a
commit hook calls; fio's cost, like the ≈ 3,100 instructions per I/O of its
null engine). libc and libstdc++ calls count: an allocation or a clock read
added to the data path is the project's cost.
  submit      fio's queue hook, nvmeof_queue → Job::queue (io_u to transfer to
              request slot, SQE built; the SEND posted when fio commits every
              I/O, its default)
  commit      fio's commit hook, nvmeof_commit → Job::commit (posting the
              SENDs of a batch)
  completion  RdmaQueue::handle_completion (including the queue core's
              completion of each response, the receive re-post and the
              finished transfer written into the polling caller's array)
  reap        nvmeof_event (fio's per-I/O take of a finished io_u), and
              QueueCore::hand_back and Job::finish_unusual when used (transfers parked
              in the queue's ring, failed I/Os, GPU mirrors)
and their sum, "engine+core", for each workload of the budget file (by default
4 KiB random reads and 4 KiB random writes at QD 32: a write's data travels
another way, by the target's RDMA READ or in the command capsule). The
embedded target serves a plain 64 MiB namespace (NSID 1) and one of 4096+8
blocks with type 1 protection information (NSID 2, PI_NAMESPACE), for
workloads whose options name `nsid=2` and the PI options, and a zoned one
(NSID 3, ZONED_NAMESPACE) for workloads with `nsid=3` and `zonemode=zbd`
(their `initial_zone_reset=1` empties it before each run). A budget
file holds the figures of a known-good build; `--check` fails when a path or
the sum of any workload costs more than its budget by more than the tolerance
(5 %, and at least SLACK_INSTRUCTIONS: small paths move by an instruction or two
between runs)."""
import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import callgrind, runner, suite

PATHS = {
    # fio's hooks (each calls straight into Job::queue and Job::commit).
    "submit": ("nvmeof_queue(",),
    "commit": ("nvmeof_commit(",),
    "completion": ("RdmaQueue::handle_completion(",),
    "reap": ("QueueCore::hand_back(", "nvmeof::engine::Job::finish_unusual(", "nvmeof_event("),
}
TOTAL = "engine+core"
DEFAULT_IOS = 2000
PI_NAMESPACE = "ram:64M:4096+8:pi1"
PI_NSID = 2
# Zones of 4 MiB: the 3N run's 4 KiB writes (24 MiB at the default N) spread
# over 16 zones fill none, so fio resets no zone during a run.
ZONED_NAMESPACE = "ram:64M:4096:zoned=4M"
ZONED_NSID = 3
PREFILL_TIMEOUT_S = 300
DEFAULT_TOLERANCE = 0.05
# Also allowed over a path's budget, whatever the percentage: the delta method
# shares each poll's fixed cost among the I/Os it finds, and how many a poll
# finds varies a little from run to run (a path of 15 moves by 1 or 2).
SLACK_INSTRUCTIONS = 5
CALLGRIND_TIMEOUT_S = 900
is_ours = callgrind.objects_except("libibverbs", "librdmacm", "fio")


class BudgetError(Exception):
    pass


@dataclass(frozen=True)
class Workload:
    """One measured fio job: pattern, block size, queue depth and any more
    fio or engine options (e.g. {"in_capsule_writes": 1})."""
    rw: str
    bs: str = "4k"
    queue_depth: int = 32
    options: dict = field(default_factory=dict)

    def describe(self):
        extra = "".join(f", {k}={v}" for k, v in self.options.items())
        return f"{self.bs} {self.rw} at QD {self.queue_depth}{extra}"


DEFAULT_WORKLOADS = {"randread": Workload("randread"), "randwrite": Workload("randwrite")}


def _fio_args(tools, traddr, trsvcid, subnqn, ios, workload):
    qd = workload.queue_depth
    return [tools.fio, "--output-format=json", "--name=budget", f"--rw={workload.rw}", f"--bs={workload.bs}",
            # number_ios ends the run, not size: 3N 128 KiB I/Os exceed 64 MiB.
            "--size=64m", "--io_size=1t", f"--iodepth={qd}", f"--iodepth_batch_complete_max={qd}", "--norandommap",
            "--randrepeat=0", "--thread=1", f"--number_ios={ios}", f"--ioengine=external:{tools.engine}",
            f"--traddr={traddr}", f"--trsvcid={trsvcid}", f"--subnqn={subnqn}",
            # Room for every I/O in flight even while SEND completions lag the
            # responses: a full queue would make fio re-queue ("busy"), and how
            # often depends on timing, not on the code. A workload whose I/Os
            # split into several commands names its own.
            *([] if "queue_size" in workload.options else [f"--queue_size={4 * qd}"]),
            *(f"--{k}={v}" for k, v in workload.options.items())]


def _prefill_pi_namespace(tools, traddr, trsvcid, subnqn):
    """Writes the PI namespace once with pi_act=1 (the target generates each
    block's PI), outside callgrind: a read of a never-written block finds the
    escape tag and checks nothing, which would leave the host's check out of
    the read workloads' figures."""
    cmd = [tools.softverbs_run, tools.fio, "--name=prefill", "--rw=write", "--bs=128k", "--size=64m",
           "--iodepth=16", "--thread=1", f"--ioengine=external:{tools.engine}", f"--traddr={traddr}",
           f"--trsvcid={trsvcid}", f"--subnqn={subnqn}", f"--nsid={PI_NSID}", "--pi_act=1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PREFILL_TIMEOUT_S)
    if proc.returncode != 0:
        raise BudgetError(f"writing the PI namespace before the run failed (exit {proc.returncode}): "
                          f"{proc.stderr[-1500:]}")


def path_costs(callgrind_out):
    """{path: (own instructions, inclusive instructions)} of one run."""
    graph = callgrind.CallGraph(callgrind_out)
    costs = {}
    for name, needles in PATHS.items():
        functions = [f for needle in needles for f in graph.functions(needle)]
        if functions:
            costs[name] = (sum(graph.own_inclusive(f, is_ours) for f in functions),
                           sum(graph.inclusive(f) for f in functions))
    return costs


def measure(tools, workloads, ios=DEFAULT_IOS):
    """{workload name: {path: (own, inclusive) instructions per I/O}} by the
    delta method on the embedded target; each workload's own sum under TOTAL."""
    if not shutil.which("valgrind"):
        raise BudgetError("the instruction budget needs valgrind (apt-get install valgrind)")
    workdir = tempfile.mkdtemp(prefix="nvmeof-perf-budget-")
    measured = {}
    try:
        target = suite.Target(namespace="ram:64M",
                              args=["--namespace", PI_NAMESPACE, "--namespace", ZONED_NAMESPACE])
        with runner.embedded_target(tools, target, [], workdir) as (traddr, trsvcid):
            if any(str(w.options.get("nsid")) == str(PI_NSID) for w in workloads.values()):
                _prefill_pi_namespace(tools, traddr, trsvcid, target.subnqn)
            for name, workload in workloads.items():
                costs = []
                for n in (ios, 3 * ios):
                    out = Path(workdir) / f"callgrind-{name}-{n}.out"
                    cmd = [tools.softverbs_run, "valgrind", "--tool=callgrind", "--compress-strings=no",
                           "--compress-pos=no", f"--callgrind-out-file={out}"]
                    cmd += _fio_args(tools, traddr, trsvcid, target.subnqn, n, workload)
                    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CALLGRIND_TIMEOUT_S)
                    if proc.returncode != 0 or not out.exists():
                        raise BudgetError(f"{name}: fio under callgrind failed (exit {proc.returncode}): "
                                          f"{proc.stderr[-1500:]}")
                    costs.append(path_costs(out))
                measured[name] = per_io(costs[0], costs[1], ios, name)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return measured


def per_io(small, large, ios, name="workload"):
    """{path: (own, inclusive) per I/O} from the path costs of the N and 3N
    runs, the own sum under TOTAL."""
    missing = [p for p in PATHS if p not in small or p not in large]
    if missing:
        raise BudgetError(f"{name}: callgrind has no cost for {', '.join(missing)} "
                          "(engine built without symbols?)")
    out = {p: tuple((large[p][i] - small[p][i]) / (2 * ios) for i in range(2)) for p in PATHS}
    out[TOTAL] = (sum(v[0] for v in out.values()), sum(v[1] for v in out.values()))
    if out[TOTAL][0] <= 0:
        # e.g. a sequential job that stops at the end of its size in both runs
        raise BudgetError(f"{name}: the {3 * ios}-I/O run cost no more than the {ios}-I/O run "
                          "(did fio stop early? use a random pattern)")
    return out


def check(measured, budget, tolerance):
    """[(path, own, inclusive, budget, verdict)] of one workload; verdict
    'over' beyond the tolerance."""
    rows = []
    for path in [*PATHS, TOTAL]:
        own, inclusive = measured[path]
        limit = budget.get(path)
        if limit is None:
            verdict = "no budget"
        else:
            verdict = "over" if own > max(limit * (1 + tolerance), limit + SLACK_INSTRUCTIONS) else "ok"
        rows.append((path, own, inclusive, limit, verdict))
    return rows


def check_workloads(measured, budgets, tolerance):
    """[(workload, path, own, inclusive, budget, verdict)] of every measured
    workload against {workload: {path: budget}}; a workload the file has no
    figures for is 'no budget' throughout, never 'over'."""
    return [(name, *row) for name, costs in measured.items()
            for row in check(costs, budgets.get(name, {}), tolerance)]


def workloads_of(data):
    """{name: Workload} of a loaded budget file."""
    return {name: Workload(w["rw"], w.get("bs", "4k"), w.get("queue_depth", 32), dict(w.get("options", {})))
            for name, w in data["workloads"].items()}


def budgets_of(data):
    """{workload: {path: instructions}} of a loaded budget file."""
    return {name: w["paths"] for name, w in data["workloads"].items()}


def load_budget(path):
    """A budget file; one of the first format (a single 'paths' table: 4 KiB
    random reads) reads as its 'randread' workload."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise BudgetError(f"no budget file {path}") from None
    except json.JSONDecodeError as e:
        raise BudgetError(f"{path} is not JSON: {e}") from None
    if "workloads" not in data and isinstance(data.get("paths"), dict):
        data["workloads"] = {"randread": {"rw": "randread", "queue_depth": data.get("queue_depth", 32),
                                          "paths": data["paths"]}}
    workloads = data.get("workloads")
    if not isinstance(workloads, dict) or not workloads:
        raise BudgetError(f"{path} has no 'workloads' table")
    for name, w in workloads.items():
        if not isinstance(w, dict) or not isinstance(w.get("rw"), str) or not isinstance(w.get("paths"), dict):
            raise BudgetError(f"{path}: workload '{name}' needs 'rw' and a 'paths' table")
    return data


def budget_file(measured, workloads, ios, engine_git):
    """The budget file's data for figures just measured."""
    return {"what": "instructions per I/O in the engine and libnvmeof (with the libc/libstdc++ code they call, "
                    "without the RDMA device's libraries), per workload, per path and in sum; callgrind delta "
                    "method",
            "ios": ios, "tolerance": DEFAULT_TOLERANCE, "engine_git": engine_git,
            "workloads": {name: {"rw": w.rw, "bs": w.bs, "queue_depth": w.queue_depth,
                                 **({"options": w.options} if w.options else {}),
                                 "paths": {k: round(v[0]) for k, v in measured[name].items()},
                                 "inclusive_for_reference": {k: round(v[1]) for k, v in measured[name].items()}}
                          for name, w in workloads.items()}}


def markdown(rows, tolerance):
    out = ["| workload | path | engine+core instructions per I/O | budget | verdict | with the RDMA device's |",
           "|---|---|---:|---:|---|---:|"]
    for workload, path, own, inclusive, limit, verdict in rows:
        mark = (f"**over budget** (> {tolerance * 100:.0f} % and > {SLACK_INSTRUCTIONS})"
                if verdict == "over" else verdict)
        out.append(f"| {workload} | {path} | {own:.0f} | {'-' if limit is None else f'{limit:.0f}'} | {mark} "
                   f"| {inclusive:.0f} |")
    return "\n".join(out)
