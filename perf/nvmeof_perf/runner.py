"""`nvmeof-perf run`: every point of a suite's matrix, each repeated, fio's
full JSON kept per point and repeat, with what is needed to tell two runs
apart later (commit, fio version, host, CPU, the target's limits)."""
import contextlib
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from . import fio_rdma

RESULT_FORMAT = "nvmeof-perf-result/1"
READY = re.compile(r"listening on (\S+):(\d+)")
TARGET_START_S = 30
FIO_SLACK_S = 120  # beyond runtime + ramp: connect, set-up, a slow fault run


class RunError(Exception):
    pass


@dataclass
class Tools:
    fio: str
    engine: str
    target: str
    softverbs_run: str

    @staticmethod
    def find(build_dir, engine=None):
        """Binaries from the environment (NVMEOF_FIO, NVMEOF_ENGINE,
        NVMEOF_TARGET_BIN, NVMEOF_SOFTVERBS_RUN, as the tests set them), else
        from the build folder; fio from PATH."""
        build = Path(build_dir)
        env = os.environ
        return Tools(
            fio=env.get("NVMEOF_FIO") or shutil.which("fio") or "fio",
            engine=str(Path(engine or env.get("NVMEOF_ENGINE") or build / "engine" / "libfio_nvmeof.so").resolve()),
            target=env.get("NVMEOF_TARGET_BIN") or str(build / "target" / "nvmeof-target"),
            softverbs_run=env.get("NVMEOF_SOFTVERBS_RUN") or str(build / "softverbs" / "softverbs-run"),
        )

    @staticmethod
    def installed(prefix, engine=None):
        """The installed layout: PREFIX/bin, PREFIX/lib*/fio/libfio_nvmeof.so."""
        prefix = Path(prefix)
        found = sorted(prefix.glob("lib*/**/fio/libfio_nvmeof.so"))
        env = os.environ
        return Tools(
            fio=env.get("NVMEOF_FIO") or shutil.which("fio") or "fio",
            engine=str(Path(engine or env.get("NVMEOF_ENGINE") or (found[0] if found else
                                                                    prefix / "lib" / "fio" / "libfio_nvmeof.so"))),
            target=env.get("NVMEOF_TARGET_BIN") or str(prefix / "bin" / "nvmeof-target"),
            softverbs_run=env.get("NVMEOF_SOFTVERBS_RUN") or str(prefix / "bin" / "softverbs-run"),
        )


@contextmanager
def embedded_target(tools, target, extra_args, workdir):
    """nvmeof-target on a free loopback port under softverbs; yields (addr, port)."""
    for exe in (tools.softverbs_run, tools.target):
        if not Path(exe).is_file():
            raise RunError(f"{exe} does not exist (build the project, or pass --build)")
    err_path = Path(workdir) / "target.stderr"
    cmd = [tools.softverbs_run, tools.target, "--listen", "127.0.0.1", "--port", "0",
           "--subsystem", target.subnqn, "--namespace", target.namespace, *target.args, *extra_args]
    with open(err_path, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        line = ""
        deadline = time.monotonic() + TARGET_START_S
        while time.monotonic() < deadline and proc.poll() is None:
            line = proc.stdout.readline()
            if line:
                break
        match = READY.search(line)
        if not match:
            raise RunError(f"nvmeof-target did not start: {err_path.read_text().strip()[-500:] or line!r}")
        yield match.group(1), match.group(2)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def job_text(point, engine, traddr, trsvcid, subnqn, runtime_s, ramp_s, info_file):
    """One fio job file for a point: the engine and target, the matrix values
    and the suite's options; time-based, grouped so that fio merges the
    percentiles of numjobs clones."""
    lines = ["[global]", f"ioengine=external:{engine}", f"traddr={traddr}", f"trsvcid={trsvcid}",
             f"subnqn={subnqn}", f"info_file={info_file}"]
    return "\n".join(lines + common_lines(point, runtime_s, ramp_s)) + "\n"


def common_lines(point, runtime_s, ramp_s, skip=()):
    """The job lines every fio engine's point shares: time, grouping, the
    point's options and axes (less the keys in skip), its section."""
    lines = ["time_based=1", f"runtime={runtime_s}", "group_reporting=1"]
    if ramp_s:
        lines.append(f"ramp_time={ramp_s}")
    options = {"size": "1g", "thread": 1, "norandommap": 1, "randrepeat": 0}
    options.update(point.options)
    options.update(point.params)
    lines += [f"{key}={value}" for key, value in options.items() if key not in skip]
    section = re.sub(r"[^\w.-]", "_", point.name.replace("=", ""))
    lines.append(f"[{section}]")
    return lines


def fio_version(fio):
    try:
        return subprocess.run([fio, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError as e:
        raise RunError(f"cannot run fio ({fio}): {e.strerror}") from None


def git_facts(path):
    """The commit of the repository a file lives in, and whether its tree was
    modified (None outside a git checkout)."""
    d = Path(path).resolve().parent
    try:
        commit = subprocess.run(["git", "-C", str(d), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=30)
        if commit.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(d), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30).stdout.strip() != ""
        describe = subprocess.run(["git", "-C", str(d), "describe", "--always", "--dirty"], capture_output=True,
                                  text=True, timeout=30).stdout.strip()
    except OSError:
        return None
    return {"commit": commit.stdout.strip(), "dirty": dirty, "describe": describe}


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def read_info(path):
    try:
        return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    except (OSError, json.JSONDecodeError):
        return []


def target_facts(info):
    """The target's limits as the engine saw them at start-up (first job)."""
    if not info or not info[0].get("controllers"):
        return {}
    c = info[0]["controllers"][0]
    facts = {k: c.get(k) for k in ("model", "serial", "firmware", "queue_size", "usable_slots", "mdts_bytes",
                                   "max_transfer_bytes", "io_queues", "rdma_device")}
    if info[0].get("namespaces"):
        ns = info[0]["namespaces"][0]
        facts.update({"ns_size_bytes": ns.get("size_bytes"), "lba_size": ns.get("lba_size")})
    return facts


def reserve_result_file(out_dir, suite_name):
    """A new file named by suite and UTC time; never an existing one."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1000):
        path = out_dir / (f"{suite_name}-{stamp}" + (f"-{n}" if n else "") + ".json")
        try:
            with open(path, "x"):
                return path
        except FileExistsError:
            continue
    raise RunError(f"cannot find a free result file name in {out_dir}")


def write_result(path, result):
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, path)


class Progress:
    """One rewritten line on a terminal: point, repeat, ETA. Silent otherwise."""

    def __init__(self, total_runs, seconds_per_run, stream=sys.stderr):
        self.total, self.estimate, self.stream = total_runs, seconds_per_run, stream
        self.enabled = stream.isatty()
        self.done, self.started = 0, time.monotonic()

    def show(self, index, count, name, repeat, repeats):
        """Point index/count, its name, the repeat (round) and the time left."""
        if not self.enabled:
            return
        if self.done:
            per_run = (time.monotonic() - self.started) / self.done
        else:
            per_run = self.estimate
        eta = int(per_run * (self.total - self.done))
        self.stream.write(f"\r\x1b[K[{index}/{count}] {name}  repeat {repeat}/{repeats}  ETA {eta // 60}:{eta % 60:02d}")
        self.stream.flush()

    def step(self):
        self.done += 1

    def finish(self):
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def run_fio(cmd, timeout, env):
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise RunError(f"fio did not finish within {timeout} s: {' '.join(cmd)}") from None
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        report = None
    if proc.returncode != 0 or report is None:
        raise RunError(f"fio failed (exit {proc.returncode}): {proc.stderr.strip()[-1500:] or proc.stdout[-1500:]}")
    return report, proc.stderr


def client_args(hosts):
    """fio --client arguments for the suite's hosts ('HOST', 'HOST,PORT',
    'ip:ADDR,PORT', 'ip6:ADDR,PORT', as fio takes them)."""
    return [f"--client={h}" for h in hosts]


def run_suite(s, tools, out_dir, repeats=None, target_args=(), stream=sys.stderr):
    """Runs every point of a suite; returns the result file's path."""
    repeats = repeats or s.repeats
    version = fio_version(tools.fio)
    if not Path(tools.engine).is_file():
        raise RunError(f"the engine {tools.engine} does not exist (build the project, or pass --engine)")
    path = reserve_result_file(out_dir, s.name)
    result = {
        "format": RESULT_FORMAT,
        "suite": {"name": s.name, "file": s.path, "definition": s.raw},
        "metadata": {
            "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": socket.gethostname(),
            "cpu_model": cpu_model(),
            "cpus": os.cpu_count(),
            "kernel": platform.release(),
            "fio_version": version,
            "engine": {"path": tools.engine, "git": git_facts(tools.engine)},
            "target": {"kind": s.target.kind, "args": list(s.target.args) + list(target_args)},
            "hosts": s.hosts,
            "repeats": repeats,
            "runtime_s": s.runtime_s,
            "ramp_s": s.ramp_s,
        },
        "points": [],
    }
    workdir = tempfile.mkdtemp(prefix="nvmeof-perf-")
    progress = Progress(len(s.points) * repeats, s.runtime_s + s.ramp_s + 1, stream)
    try:
        if s.target.kind == "embedded" and s.hosts != ["local"]:
            raise RunError("an embedded target needs hosts = ['local'] (fio --server hosts must reach "
                           "an external target; start it yourself and name it in [target])")
        if s.target.kind != "embedded" and target_args:
            raise RunError("--target-arg applies to the embedded target only")
        with contextlib.ExitStack() as stack:
            targets = Targets(stack, tools, s.target, list(target_args), workdir)
            traddr, trsvcid = targets.address(())
            result["metadata"]["target"].update({"traddr": traddr, "trsvcid": trsvcid, "subnqn": s.target.subnqn})
            wrap = [tools.softverbs_run] if s.target.kind == "embedded" else []
            for point in s.points:
                result["points"].append({"name": point.name, "params": point.params, "options": point.options,
                                         **({"target_args": list(point.target_args)} if point.target_args else {}),
                                         **({"ioengine": point.ioengine} if point.ioengine != "nvmeof" else {}),
                                         "runs": []})
            # Rounds: every point once, then every point again. A point's repeats
            # are spread over the whole run, so their min-max range takes in the
            # machine's slow drifts instead of one quiet (or busy) moment.
            for r in range(repeats):
                for index, point in enumerate(s.points, 1):
                    entry = result["points"][index - 1]
                    progress.show(index, len(s.points), point.name, r + 1, repeats)
                    if "skipped" not in entry:
                        try:
                            run = _run_point(s, point, index, r, tools, targets, wrap, workdir)
                            entry["runs"].append(run)
                            if "facts" not in result["metadata"]["target"] and run["info"] and not point.target_args:
                                result["metadata"]["target"]["facts"] = target_facts(run["info"])
                        except RunError as e:
                            if not point.optional:
                                raise
                            # An optional point (e.g. an engine option newer than this
                            # build) is recorded as skipped, with fio's reason.
                            entry["skipped"] = str(e)
                    progress.step()
                write_result(path, result)
    except BaseException:
        # A partial result is still a result, marked so: compare refuses nothing
        # but says which points are missing.
        result["incomplete"] = True
        write_result(path, result)
        raise
    finally:
        progress.finish()
        shutil.rmtree(workdir, ignore_errors=True)
    write_result(path, result)
    return path


class Targets:
    """The suite's target, and (embedded) one more nvmeof-target per distinct
    target_args of its points, each started when first needed and kept until
    the run ends (idle, a target sleeps)."""

    def __init__(self, stack, tools, target, extra_args, workdir):
        self.stack, self.tools, self.target, self.extra_args, self.workdir = stack, tools, target, extra_args, workdir
        self.started = {}

    def address(self, target_args):
        if self.target.kind != "embedded":
            return self.target.traddr, self.target.trsvcid
        if target_args not in self.started:
            d = Path(self.workdir) / f"target-{len(self.started)}"
            d.mkdir()
            self.started[target_args] = self.stack.enter_context(
                embedded_target(self.tools, self.target, self.extra_args + list(target_args), d))
        return self.started[target_args]


def _run_point(s, point, index, r, tools, targets, wrap, workdir):
    """One repeat of one point: its job file, fio (with the rdma server for an
    rdma point), the report and the engine's info lines."""
    info = Path(workdir) / f"info-{index}-{r}.jsonl"
    job = Path(workdir) / f"point-{index}-{r}.fio"
    timeout = s.runtime_s + s.ramp_s + FIO_SLACK_S
    started = time.monotonic()
    if point.ioengine == "rdma":
        try:
            with fio_rdma.server(tools, point, workdir) as port:
                job.write_text(fio_rdma.job_text(point, port, s.runtime_s, s.ramp_s, common_lines))
                report, _ = run_fio(wrap + [tools.fio, "--output-format=json", str(job)], timeout, dict(os.environ))
        except fio_rdma.ServerError as e:
            raise RunError(str(e)) from None
    else:
        traddr, trsvcid = targets.address(point.target_args)
        job.write_text(job_text(point, tools.engine, traddr, trsvcid, s.target.subnqn, s.runtime_s, s.ramp_s,
                                info))
        if s.hosts == ["local"]:
            cmd = wrap + [tools.fio, "--output-format=json", str(job)]
        else:
            cmd = [tools.fio, *client_args(s.hosts), "--output-format=json", str(job)]
        report, _ = run_fio(cmd, timeout, dict(os.environ))
    return {"repeat": r + 1, "wall_s": round(time.monotonic() - started, 3), "fio": report, "info": read_info(info)}


def load_result(path):
    try:
        result = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise RunError(f"no result file {path}") from None
    except json.JSONDecodeError as e:
        raise RunError(f"{path} is not a result file: {e}") from None
    if result.get("format") != RESULT_FORMAT:
        raise RunError(f"{path} is not an nvmeof-perf result ({RESULT_FORMAT})")
    return result
