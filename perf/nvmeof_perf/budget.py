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
and their sum, "engine+core", for each workload of the budget file. A workload
over NVMe/TCP ("transport": "tcp") runs against the embedded target's TCP
listener, and two of its paths are the TCP queue's (TCP_PATHS):
  commit      nvmeof_commit, and Job::post_deferred, where getevents sends every
              I/O fio queued since the last reap in one sendmsg per queue (over
              TCP the commit hook sends nothing)
  completion  TcpQueue::take_pdus (every PDU received: headers checked, read
              data copied out of the receive buffer, commands completed);
              the recvmsg (TcpQueue::receive) is polling and not counted, as
              poll_cq is not over RDMA, nor the system calls' kernel side
              (callgrind sees user space only): `--syscalls` counts the calls.
              A TCP workload is checked within TCP_TOLERANCE (25 %) unless it
              names its own "tolerance": how many answers one recvmsg brings
              depends on timing
Without a budget file the workloads are 4 KiB random reads and 4 KiB random
writes at QD 32 over RDMA (a write's data travels another way, by the target's
RDMA READ or in the command capsule). The
embedded target serves a plain 64 MiB namespace (NSID 1) and one of 4096+8
blocks with type 1 protection information (NSID 2, PI_NAMESPACE), for
workloads whose options name `nsid=2` and the PI options, and a zoned one
(NSID 3, ZONED_NAMESPACE) for workloads with `nsid=3` and `zonemode=zbd`
(their `initial_zone_reset=1` empties it before each run). A budget
file holds the figures of a known-good build; `--check` fails when a path or
the sum of any workload costs more than its budget by more than the tolerance
(5 %, and at least SLACK_INSTRUCTIONS: small paths move by an instruction or two
between runs)."""
import contextlib
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
# Over NVMe/TCP: the send happens in getevents, the receive in the TCP queue.
TCP_PATHS = {
    **PATHS,
    "commit": ("nvmeof_commit(", "nvmeof::engine::Job::post_deferred("),
    "completion": ("TcpQueue::take_pdus(",),
}
# How much the TCP paths move between runs of one build: how many answers
# each recvmsg brings, and so each poll's fixed cost per I/O, depends on
# timing (the target's share of the cores): 4 KiB writes' completion measured
# 204 to 231 in runs minutes apart. A TCP workload's default tolerance.
TCP_TOLERANCE = 0.25
TRANSPORTS = ("rdma", "tcp")
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
    transport: str = "rdma"

    def describe(self):
        extra = "".join(f", {k}={v}" for k, v in self.options.items())
        over = " over NVMe/TCP" if self.transport == "tcp" else ""
        return f"{self.bs} {self.rw} at QD {self.queue_depth}{over}{extra}"

    def paths(self):
        return TCP_PATHS if self.transport == "tcp" else PATHS


DEFAULT_WORKLOADS = {"randread": Workload("randread"), "randwrite": Workload("randwrite")}


def _fio_args(tools, traddr, trsvcid, subnqn, ios, workload):
    qd = workload.queue_depth
    return [tools.fio, "--output-format=json", "--name=budget", f"--rw={workload.rw}", f"--bs={workload.bs}",
            # number_ios ends the run, not size: 3N 128 KiB I/Os exceed 64 MiB.
            "--size=64m", "--io_size=1t", f"--iodepth={qd}", f"--iodepth_batch_complete_max={qd}", "--norandommap",
            "--randrepeat=0", "--thread=1", f"--number_ios={ios}", f"--ioengine=external:{tools.engine}",
            f"--traddr={traddr}", f"--trsvcid={trsvcid}", f"--subnqn={subnqn}", f"--trtype={workload.transport}",
            # Room for every I/O in flight even while SEND completions lag the
            # responses: a full queue would make fio re-queue ("busy"), and how
            # often depends on timing, not on the code. A workload whose I/Os
            # split into several commands names its own.
            *([] if "queue_size" in workload.options else [f"--queue_size={4 * qd}"]),
            *(f"--{k}={v}" for k, v in workload.options.items())]


def _prefill_pi_namespace(tools, traddr, trsvcid, subnqn, transport="rdma"):
    """Writes the PI namespace once with pi_act=1 (the target generates each
    block's PI), outside callgrind: a read of a never-written block finds the
    escape tag and checks nothing, which would leave the host's check out of
    the read workloads' figures."""
    cmd = [tools.softverbs_run, tools.fio, "--name=prefill", "--rw=write", "--bs=128k", "--size=64m",
           "--iodepth=16", "--thread=1", f"--ioengine=external:{tools.engine}", f"--traddr={traddr}",
           f"--trsvcid={trsvcid}", f"--subnqn={subnqn}", f"--nsid={PI_NSID}", "--pi_act=1", f"--trtype={transport}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PREFILL_TIMEOUT_S)
    if proc.returncode != 0:
        raise BudgetError(f"writing the PI namespace before the run failed (exit {proc.returncode}): "
                          f"{proc.stderr[-1500:]}")


def path_costs(callgrind_out, paths=None):
    """{path: (own instructions, inclusive instructions)} of one run."""
    graph = callgrind.CallGraph(callgrind_out)
    costs = {}
    for name, needles in (paths or PATHS).items():
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
        with _targets(tools, workloads, workdir) as targets:
            for name, workload in workloads.items():
                traddr, trsvcid, subnqn = targets[workload.transport]
                costs = []
                for n in (ios, 3 * ios):
                    out = Path(workdir) / f"callgrind-{name}-{n}.out"
                    cmd = [*_wrapper(tools, workload), "valgrind", "--tool=callgrind", "--compress-strings=no",
                           "--compress-pos=no", f"--callgrind-out-file={out}"]
                    cmd += _fio_args(tools, traddr, trsvcid, subnqn, n, workload)
                    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CALLGRIND_TIMEOUT_S)
                    if proc.returncode != 0 or not out.exists():
                        raise BudgetError(f"{name}: fio under callgrind failed (exit {proc.returncode}): "
                                          f"{proc.stderr[-1500:]}")
                    costs.append(path_costs(out, workload.paths()))
                measured[name] = per_io(costs[0], costs[1], ios, name, workload.paths())
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return measured


def _wrapper(tools, workload):
    """softverbs under an RDMA workload; nothing under a TCP one (plain sockets)."""
    return [] if workload.transport == "tcp" else [tools.softverbs_run]


@contextlib.contextmanager
def _targets(tools, workloads, workdir):
    """{transport: (traddr, trsvcid, subnqn)}: one embedded target per transport
    the workloads use, each with the plain, the PI and the zoned namespace (the
    PI one written first when a workload reads it)."""
    with contextlib.ExitStack() as stack:
        targets = {}
        for transport in TRANSPORTS:
            used = [w for w in workloads.values() if w.transport == transport]
            if not used:
                continue
            args = ["--namespace", PI_NAMESPACE, "--namespace", ZONED_NAMESPACE]
            args += ["--transport", "tcp"] if transport == "tcp" else []
            target = suite.Target(namespace="ram:64M", args=args)
            traddr, trsvcid = stack.enter_context(runner.embedded_target(tools, target, [], workdir))
            if any(str(w.options.get("nsid")) == str(PI_NSID) for w in used):
                _prefill_pi_namespace(tools, traddr, trsvcid, target.subnqn, transport)
            targets[transport] = (traddr, trsvcid, target.subnqn)
        yield targets


def per_io(small, large, ios, name="workload", paths=None):
    """{path: (own, inclusive) per I/O} from the path costs of the N and 3N
    runs, the own sum under TOTAL."""
    paths = paths or PATHS
    missing = [p for p in paths if p not in small or p not in large]
    if missing:
        raise BudgetError(f"{name}: callgrind has no cost for {', '.join(missing)} "
                          "(engine built without symbols?)")
    out = {p: tuple((large[p][i] - small[p][i]) / (2 * ios) for i in range(2)) for p in paths}
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
    for path in [*(p for p in measured if p != TOTAL), TOTAL]:
        own, inclusive = measured[path]
        limit = budget.get(path)
        if limit is None:
            verdict = "no budget"
        else:
            verdict = "over" if own > max(limit * (1 + tolerance), limit + SLACK_INSTRUCTIONS) else "ok"
        rows.append((path, own, inclusive, limit, verdict))
    return rows


def check_workloads(measured, budgets, tolerance, tolerances=None):
    """[(workload, path, own, inclusive, budget, verdict)] of every measured
    workload against {workload: {path: budget}}, each within its own
    tolerance where `tolerances` names one, else `tolerance`; a workload the
    file has no figures for is 'no budget' throughout, never 'over'."""
    tolerances = tolerances or {}
    return [(name, *row) for name, costs in measured.items()
            for row in check(costs, budgets.get(name, {}), tolerances.get(name, tolerance))]


def tolerances_of(data):
    """{workload: tolerance} of a loaded budget file: a workload's own
    "tolerance", else TCP_TOLERANCE over NVMe/TCP; the others take the file's."""
    out = {}
    for name, w in data["workloads"].items():
        if "tolerance" in w:
            out[name] = float(w["tolerance"])
        elif w.get("transport") == "tcp":
            out[name] = TCP_TOLERANCE
    return out


def workloads_of(data):
    """{name: Workload} of a loaded budget file."""
    return {name: Workload(w["rw"], w.get("bs", "4k"), w.get("queue_depth", 32), dict(w.get("options", {})),
                           w.get("transport", "rdma"))
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
        if w.get("transport", "rdma") not in TRANSPORTS:
            raise BudgetError(f"{path}: workload '{name}': transport must be one of {', '.join(TRANSPORTS)}")
    return data


def budget_file(measured, workloads, ios, engine_git):
    """The budget file's data for figures just measured."""
    return {"what": "instructions per I/O in the engine and libnvmeof (with the libc/libstdc++ code they call, "
                    "without the RDMA device's libraries), per workload, per path and in sum; callgrind delta "
                    "method",
            "ios": ios, "tolerance": DEFAULT_TOLERANCE, "engine_git": engine_git,
            "workloads": {name: {"rw": w.rw, "bs": w.bs, "queue_depth": w.queue_depth,
                                 **({"transport": w.transport} if w.transport != "rdma" else {}),
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


# --- system calls per I/O (budget --syscalls) ---
SYSCALL_IOS = 20000
SYSCALL_TIMEOUT_S = 300
SYSCALL_FIELDS = ("send_calls", "receive_calls", "pdus_sent", "pdus_received", "bytes_copied")


def perf_stat_usable():
    """Whether `perf stat` may count this user's system calls (the
    raw_syscalls tracepoint: root, or perf_event_paranoid allowing it)."""
    if not shutil.which("perf"):
        return False
    try:
        proc = subprocess.run(["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "--", "true"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and "raw_syscalls:sys_enter" in proc.stderr and "<not" not in proc.stderr


def _end_record(info_path):
    """The transport counters of the info_file's end record (one job)."""
    records = [json.loads(line) for line in Path(info_path).read_text().splitlines() if line.strip()]
    ends = [r for r in records if r.get("record") == "end"]
    if len(ends) != 1 or "transport" not in ends[0]:
        raise BudgetError(f"{info_path}: expected one end record with transport counters, got {records}")
    return ends[0]["transport"]


def _syscall_run(tools, target, workload, ios, workdir, name, use_perf):
    """(fio's I/Os, {counter: total}) of one native run (no callgrind)."""
    traddr, trsvcid, subnqn = target
    info = Path(workdir) / f"info-{name}-{ios}.jsonl"
    stat = Path(workdir) / f"perf-{name}-{ios}.txt"
    cmd = [*_wrapper(tools, workload)]
    if use_perf:
        cmd += ["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-o", str(stat), "--"]
    cmd += _fio_args(tools, traddr, trsvcid, subnqn, ios, workload) + [f"--info_file={info}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=SYSCALL_TIMEOUT_S)
    if proc.returncode != 0:
        raise BudgetError(f"{name}: fio failed (exit {proc.returncode}): {proc.stderr[-1500:]}")
    job = json.loads(proc.stdout[proc.stdout.index("{"):])["jobs"][0]
    done = sum(job[d]["total_ios"] for d in ("read", "write", "trim"))
    end = _end_record(info)
    counts = {k: end[k] for k in SYSCALL_FIELDS}
    if use_perf:
        lines = [ln for ln in stat.read_text().splitlines() if "raw_syscalls:sys_enter" in ln]
        counts["all_syscalls"] = int(lines[0].split(",")[0])
    return done, counts


def count_syscalls(tools, workloads, ios=SYSCALL_IOS):
    """{workload: {counter: per I/O}} for the NVMe/TCP workloads, by the delta
    method on native runs of N and 3N I/Os (connect and set-up cancel): the
    engine's end record gives sendmsg and recvmsg calls (send_calls,
    receive_calls, and their sum "syscalls"), PDUs and bytes copied;
    `perf stat` on fio, when usable, every system call of the process
    ("all_syscalls": also the idle waits' poll/epoll_wait and fio's own)."""
    tcp = {name: w for name, w in workloads.items() if w.transport == "tcp"}
    if not tcp:
        raise BudgetError("no NVMe/TCP workload to count system calls of")
    use_perf = perf_stat_usable()
    workdir = tempfile.mkdtemp(prefix="nvmeof-perf-syscalls-")
    counted = {}
    try:
        with _targets(tools, tcp, workdir) as targets:
            for name, workload in tcp.items():
                (n1, small), (n3, large) = (_syscall_run(tools, targets["tcp"], workload, n, workdir, name, use_perf)
                                            for n in (ios, 3 * ios))
                if n3 <= n1:
                    raise BudgetError(f"{name}: the {3 * ios}-I/O run did no more I/O than the {ios}-I/O run")
                per = {k: (large[k] - small[k]) / (n3 - n1) for k in small}
                per["syscalls"] = per["send_calls"] + per["receive_calls"]
                counted[name] = per
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return counted


def syscalls_markdown(counted):
    out = ["| workload | sendmsg / I/O | recvmsg / I/O | transport system calls / I/O | all of fio's / I/O "
           "| PDUs sent / I/O | PDUs received / I/O | bytes copied / I/O |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, c in counted.items():
        every = f"{c['all_syscalls']:.2f}" if "all_syscalls" in c else "- (no perf)"
        out.append(f"| {name} | {c['send_calls']:.3f} | {c['receive_calls']:.3f} | {c['syscalls']:.3f} | {every} "
                   f"| {c['pdus_sent']:.2f} | {c['pdus_received']:.2f} | {c['bytes_copied']:.0f} |")
    return "\n".join(out)
