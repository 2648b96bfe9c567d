"""`nvmeof-perf budget`: instructions per I/O inside the engine and libnvmeof,
counted by valgrind's callgrind, a figure that does not depend on how busy the
machine is. The delta method cancels what is paid once per run (connect,
set-up, tear-down): runs of N and 3N reads, (cost(3N) - cost(N)) / 2N.

Per path, the inclusive cost of the function that does the work:
  submit      Job::queue (io_u to transfer to request slot, SQE built)
  commit      Job::commit (including the device's post_send)
  completion  RdmaQueue::handle_completion (including the receive re-post)
  reap        Job::reap (hand-back to fio)
A budget file holds the figures of a known-good build; `--check` fails when
a path costs more than its budget by more than the tolerance (5 %)."""
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import runner, suite

PATHS = {
    "submit": "nvmeof::engine::Job::queue(",
    "commit": "nvmeof::engine::Job::commit(",
    "completion": "RdmaQueue::handle_completion(",
    "reap": "nvmeof::engine::Job::reap(",
}
DEFAULT_IOS = 2000
DEFAULT_TOLERANCE = 0.05
QUEUE_DEPTH = 32
CALLGRIND_TIMEOUT_S = 900


class BudgetError(Exception):
    pass


def _fio_args(tools, traddr, trsvcid, subnqn, ios):
    return [tools.fio, "--output-format=json", "--name=budget", "--rw=randread", "--bs=4k", "--size=64m",
            f"--iodepth={QUEUE_DEPTH}", f"--iodepth_batch_complete_max={QUEUE_DEPTH}", "--norandommap",
            "--randrepeat=0", "--thread=1", f"--number_ios={ios}", f"--ioengine=external:{tools.engine}",
            f"--traddr={traddr}", f"--trsvcid={trsvcid}", f"--subnqn={subnqn}"]


def inclusive_costs(callgrind_out):
    """{path: inclusive instructions} from a callgrind output file."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(callgrind_out)],
                          capture_output=True, text=True, timeout=300).stdout
    costs = {}
    for name, needle in PATHS.items():
        for line in text.splitlines():
            if needle in line and line.rstrip().endswith("]"):
                m = re.match(r"\s*([\d,]+)", line)
                if m:
                    costs[name] = int(m.group(1).replace(",", ""))
                    break
    return costs


def measure(tools, ios=DEFAULT_IOS):
    """{path: instructions per I/O} by the delta method on the embedded target."""
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        raise BudgetError("the instruction budget needs valgrind (apt-get install valgrind)")
    workdir = tempfile.mkdtemp(prefix="nvmeof-perf-budget-")
    try:
        target = suite.Target(namespace="ram:64M")
        with runner.embedded_target(tools, target, [], workdir) as (traddr, trsvcid):
            costs = []
            for n in (ios, 3 * ios):
                out = Path(workdir) / f"callgrind-{n}.out"
                cmd = [tools.softverbs_run, "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
                cmd += _fio_args(tools, traddr, trsvcid, target.subnqn, n)
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CALLGRIND_TIMEOUT_S)
                if proc.returncode != 0 or not out.exists():
                    raise BudgetError(f"fio under callgrind failed (exit {proc.returncode}): {proc.stderr[-1500:]}")
                costs.append(inclusive_costs(out))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    missing = [p for p in PATHS if p not in costs[0] or p not in costs[1]]
    if missing:
        raise BudgetError(f"callgrind has no cost for {', '.join(missing)} (engine built without symbols?)")
    return {p: (costs[1][p] - costs[0][p]) / (2 * ios) for p in PATHS}


def check(measured, budget, tolerance):
    """[(path, measured, budget, verdict)]; verdict 'over' beyond the tolerance."""
    rows = []
    for path in PATHS:
        limit = budget.get(path)
        if limit is None:
            rows.append((path, measured[path], None, "no budget"))
            continue
        rows.append((path, measured[path], limit, "over" if measured[path] > limit * (1 + tolerance) else "ok"))
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
    out = ["| path | instructions per I/O | budget | verdict |", "|---|---:|---:|---|"]
    for path, value, limit, verdict in rows:
        mark = f"**over budget** (> {tolerance * 100:.0f} %)" if verdict == "over" else verdict
        out.append(f"| {path} | {value:.0f} | {'-' if limit is None else f'{limit:.0f}'} | {mark} |")
    return "\n".join(out)
