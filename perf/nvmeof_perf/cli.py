"""Command line of nvmeof-perf."""
import argparse
import json
import os
import sys
from pathlib import Path

from . import compare as compare_mod
from . import runner
from . import suite as suite_mod


def _suite_dirs(root):
    """Where suites are looked up by name: NVMEOF_PERF_SUITES, the source
    tree's bench/suites, the installed share/nvmeof/suites."""
    dirs = [d for d in os.environ.get("NVMEOF_PERF_SUITES", "").split(":") if d]
    installed = root / "share" / "nvmeof" / "suites"
    return dirs + ([installed] if installed.is_dir() else [root / "bench" / "suites"])


def _threshold_args(values):
    table = {}
    for v in values or []:
        key, sep, pct = v.partition("=")
        try:
            table[key] = float(pct.rstrip("%"))
        except ValueError:
            sep = ""
        if not sep:
            raise ValueError(f"--threshold {v!r}: expected METRIC=PERCENT, e.g. iops=10")
    return table


def _tools(a, root, engine):
    """Binaries of --build, else of the source tree's build/, else of the
    installation the command itself belongs to."""
    if a.build is None and not (root / "build").is_dir() and (root / "bin" / "nvmeof-target").exists():
        return runner.Tools.installed(root, engine)
    return runner.Tools.find(a.build or root / "build", engine)


def cmd_run(a, root):
    path = suite_mod.find(a.suite, _suite_dirs(root))
    s = suite_mod.select(suite_mod.load(path), a.only or [])
    if a.runtime:
        s.runtime_s = a.runtime
    if a.embedded:
        s.target = suite_mod.Target()
    tools = _tools(a, root, a.engine or s.engine)
    out = runner.run_suite(s, tools, a.output_dir, repeats=a.repeats, target_args=a.target_arg or [])
    print(out)
    return 0


def cmd_compare(a, root):
    base, cur = runner.load_result(a.baseline), runner.load_result(a.current)
    thresholds = dict(compare_mod.DEFAULT_THRESHOLDS)
    suite_table = cur["suite"]["definition"].get("thresholds", {})
    thresholds.update(compare_mod.parse_thresholds(suite_table, f"suite {cur['suite']['name']}"))
    thresholds.update(compare_mod.parse_thresholds(_threshold_args(a.threshold), "--threshold"))
    rows, missing = compare_mod.compare(base, cur, thresholds)
    print(compare_mod.markdown(rows, missing, thresholds, a.baseline, a.current))
    for name, r in ((a.baseline, base), (a.current, cur)):
        if r.get("incomplete"):
            print(f"\nNote: {name} is incomplete (its run stopped early).")
    return 1 if any(r[4] == compare_mod.REGRESSED for r in rows) else 0


def cmd_show(a, root):
    from . import show as show_mod
    print(show_mod.markdown(runner.load_result(a.result), a.result))
    return 0


def cmd_plot(a, root):
    from . import plot as plot_mod
    results = [runner.load_result(p) for p in a.results]
    try:
        written = plot_mod.plot(a.results, results, a.output)
    except plot_mod.PlotError as e:
        raise runner.RunError(str(e)) from None
    for path in written:
        print(path)
    return 0


def cmd_budget(a, root):
    from . import budget as budget_mod
    tools = _tools(a, root, a.engine)
    if not Path(tools.engine).is_file():
        raise runner.RunError(f"the engine {tools.engine} does not exist (build the project, or pass --engine)")
    try:
        budget = budget_mod.load_budget(a.check) if a.check else None
        # A re-baseline keeps the workloads of the file it replaces.
        previous = budget_mod.load_budget(a.write) if a.write and Path(a.write).is_file() else None
        source = budget or previous
        workloads = budget_mod.workloads_of(source) if source else budget_mod.DEFAULT_WORKLOADS
        if a.only:
            workloads = {k: w for k, w in workloads.items() if k in a.only}
            unknown = sorted(set(a.only) - set(workloads))
            if unknown:
                raise budget_mod.BudgetError(f"--only: no workload {', '.join(unknown)}")
        if a.syscalls:
            return _syscalls(a, budget_mod, tools, workloads)
        ios = a.ios or (source or {}).get("ios", budget_mod.DEFAULT_IOS)
        measured = budget_mod.measure(tools, workloads, ios)
    except budget_mod.BudgetError as e:
        raise runner.RunError(str(e)) from None
    if budget is not None:
        tolerance = budget.get("tolerance", budget_mod.DEFAULT_TOLERANCE)
        rows = budget_mod.check_workloads(measured, budget_mod.budgets_of(budget), tolerance,
                                          budget_mod.tolerances_of(budget))
        print(f"Instructions per I/O (callgrind, delta of {ios} and {3 * ios} I/Os) against {a.check}:")
        for name, w in workloads.items():
            print(f"  {name}: {w.describe()}")
        print()
        print(budget_mod.markdown(rows, tolerance))
        return 1 if any(r[5] == "over" for r in rows) else 0
    data = budget_mod.budget_file(measured, workloads, ios, runner.git_facts(tools.engine))
    # What people wrote about the figures stays, under "what".
    notes = {k: previous[k] for k in ("build", "regenerate") if previous and k in previous}
    data = {"what": data.pop("what"), **notes, **data}
    text = json.dumps(data, indent=1) + "\n"
    if a.write:
        Path(a.write).write_text(text)
        print(a.write)
    else:
        print(text, end="")
    return 0


def _syscalls(a, budget_mod, tools, workloads):
    """budget --syscalls: system calls per I/O of the NVMe/TCP workloads;
    exit 1 when --max-syscalls is given and a workload makes more sendmsg and
    recvmsg calls per I/O than that."""
    ios = a.ios or budget_mod.SYSCALL_IOS
    counted = budget_mod.count_syscalls(tools, workloads, ios)
    print(f"System calls per I/O (delta of {ios} and {3 * ios} I/Os, native runs):")
    for name, w in workloads.items():
        if name in counted:
            print(f"  {name}: {w.describe()}")
    print()
    print(budget_mod.syscalls_markdown(counted))
    if a.max_syscalls is None:
        return 0
    over = [name for name, c in counted.items() if c["syscalls"] > a.max_syscalls]
    for name in over:
        print(f"{name}: {counted[name]['syscalls']:.3f} sendmsg+recvmsg per I/O, more than {a.max_syscalls}")
    return 1 if over else 0


def main(root, argv=None):
    p = argparse.ArgumentParser(prog="nvmeof-perf", description="Performance-regression runs of fio jobs "
                                "through the nvmeof engine: run a suite, compare two runs, plot runs.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run every point of a suite; writes one new result file")
    r.add_argument("suite", help="suite name (bench/suites/NAME.toml) or path to a .toml file")
    r.add_argument("-o", "--output-dir", default="perf-results", help="folder of result files (default %(default)s)")
    r.add_argument("--build", help="build folder with the engine, target and softverbs (default: ./build of the "
                   "source tree)")
    r.add_argument("--engine", help="the engine's .so (overrides the suite and the build folder)")
    r.add_argument("--repeats", type=int, help="repeats per point (overrides the suite)")
    r.add_argument("--runtime", type=int, help="seconds per run (overrides the suite)")
    r.add_argument("--only", action="append", metavar="TEXT",
                   help="run only the points whose name contains TEXT (repeatable: any of them), "
                        "e.g. --only mdts= --only fio-rdma")
    r.add_argument("--embedded", action="store_true",
                   help="run against nvmeof-target on loopback (softverbs) whatever target the suite names: "
                        "to try a suite on any machine")
    r.add_argument("--target-arg", action="append", metavar="ARG",
                   help="one more argument for the embedded nvmeof-target (repeatable; write "
                        "--target-arg=--fault --target-arg=delay-ms=1)")
    c = sub.add_parser("compare", help="verdict per point and metric; exit 1 when anything regressed")
    c.add_argument("baseline")
    c.add_argument("current")
    c.add_argument("--threshold", action="append", metavar="METRIC=PCT",
                   help=f"relative threshold in percent (metrics: {', '.join(compare_mod.DEFAULT_THRESHOLDS)})")
    sh = sub.add_parser("show", help="one result as a table: per point, the median and range of the repeats")
    sh.add_argument("result")
    pl = sub.add_parser("plot", help="PNG plots of one or more results")
    pl.add_argument("results", nargs="+")
    pl.add_argument("-o", "--output", required=True, help="folder for the PNGs")
    b = sub.add_parser("budget", help="instructions per I/O by callgrind (deterministic); --check fails "
                       "when a path exceeds its budget by more than the file's tolerance")
    b.add_argument("--check", metavar="BUDGET_JSON", help="compare with a budget file; exit 1 when over")
    b.add_argument("--write", metavar="BUDGET_JSON", help="write the measured figures as a new budget file "
                   "(of that file's workloads when it exists, else 4k randread and randwrite at QD 32)")
    b.add_argument("--ios", type=int, help="N of the N and 3N runs (default: the budget's, else 2000)")
    b.add_argument("--build", help="build folder (default: ./build of the source tree)")
    b.add_argument("--engine", help="the engine's .so")
    b.add_argument("--only", action="append", metavar="WORKLOAD",
                   help="measure only this workload of the file (repeatable)")
    b.add_argument("--syscalls", action="store_true",
                   help="instead of instructions: system calls, PDUs and bytes copied per I/O of the NVMe/TCP "
                        "workloads (native runs; the engine's info_file counters, and perf stat when usable)")
    b.add_argument("--max-syscalls", type=float, metavar="PER_IO",
                   help="with --syscalls: exit 1 when a workload makes more sendmsg+recvmsg calls per I/O")
    a = p.parse_args(argv)
    if getattr(a, "repeats", None) is not None and a.repeats < 1:
        p.error("--repeats must be at least 1")
    try:
        return {"run": cmd_run, "compare": cmd_compare, "plot": cmd_plot, "show": cmd_show,
                "budget": cmd_budget}[a.command](a, Path(root))
    except (suite_mod.SuiteError, runner.RunError, ValueError) as e:
        print(f"nvmeof-perf: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nvmeof-perf: interrupted", file=sys.stderr)
        return 130
