"""A suite file (TOML): the target, the engine, the matrix of fio points, the
repeats and the hosts. Everything is checked up front so that a bad suite fails
with one line naming the cause before anything runs."""
import itertools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from . import compare, ratio

# Matrix axes in the order a point's name lists them.
AXES = ("rw", "bs", "iodepth", "numjobs", "nr_io_queues")
AXIS_DEFAULTS = {"numjobs": [1], "nr_io_queues": [1]}

DEFAULT_REPEATS = 3
DEFAULT_RUNTIME_S = 10
DEFAULT_NAMESPACE = "ram:1G"


class SuiteError(Exception):
    pass


# What a [[matrix]] table may hold besides its axes.
MATRIX_KEYS = {"options", "label", "target_args", "ioengine", "optional"}
# "nvmeof": the engine against the suite's target; "rdma": stock fio's rdma
# engine against a fio rdma server on loopback (embedded suites only), the
# bare transport's floor without NVMe-oF.
IOENGINES = ("nvmeof", "rdma")


@dataclass(frozen=True)
class Point:
    """One cell of the matrix: the axes' values plus the fio options that
    apply to every point (or to this group only), the group's label, the
    embedded target's extra arguments, the fio engine, and whether a failing
    run skips the point instead of stopping the suite."""
    params: dict
    options: dict
    label: str = ""
    target_args: tuple = ()
    ioengine: str = "nvmeof"
    optional: bool = False

    @property
    def name(self):
        p = self.params
        name = (f"{p['rw']} bs={p['bs']} qd={p['iodepth']} jobs={p['numjobs']} "
                f"queues={p['nr_io_queues']}")
        return f"{name} {self.label}" if self.label else name


@dataclass
class Target:
    kind: str = "embedded"            # "embedded" or "external"
    traddr: str = "127.0.0.1"
    trsvcid: str = "4420"
    subnqn: str = "nqn.2026-12.io.nvmeof:perf"
    namespace: str = DEFAULT_NAMESPACE  # embedded only
    args: list = field(default_factory=list)  # extra nvmeof-target arguments (embedded only)


@dataclass
class Suite:
    name: str
    path: str
    description: str
    target: Target
    engine: str | None
    runtime_s: int
    ramp_s: int
    repeats: int
    hosts: list
    points: list
    thresholds: dict
    ratios: list
    raw: dict


def _list(value, what):
    values = value if isinstance(value, list) else [value]
    if not values:
        raise SuiteError(f"{what} is an empty list")
    for v in values:
        if not isinstance(v, (str, int)) or isinstance(v, bool):
            raise SuiteError(f"{what} has {v!r}; expected strings or integers")
    return values


def _points(matrices, common_options, path):
    points = []
    for i, matrix in enumerate(matrices):
        where = f"{path}: matrix #{i + 1}"
        if not isinstance(matrix, dict):
            raise SuiteError(f"{where} is not a table")
        for axis in ("rw", "bs", "iodepth"):
            if axis not in matrix:
                raise SuiteError(f"{where} has no '{axis}'")
        axes = {a: _list(matrix.get(a, AXIS_DEFAULTS.get(a)), f"{where}: {a}") for a in AXES}
        options = dict(common_options)
        extra = matrix.get("options", {})
        if not isinstance(extra, dict):
            raise SuiteError(f"{where}: 'options' is not a table")
        options.update(extra)
        unknown = set(matrix) - set(AXES) - MATRIX_KEYS
        if unknown:
            raise SuiteError(f"{where} has unknown keys {sorted(unknown)} (fio options go in 'options')")
        label = matrix.get("label", "")
        if not isinstance(label, str):
            raise SuiteError(f"{where}: 'label' must be a string")
        target_args = matrix.get("target_args", [])
        if not isinstance(target_args, list) or not all(isinstance(a, str) for a in target_args):
            raise SuiteError(f"{where}: 'target_args' must be a list of strings")
        ioengine = matrix.get("ioengine", "nvmeof")
        if ioengine not in IOENGINES:
            raise SuiteError(f"{where}: ioengine must be one of {', '.join(IOENGINES)}, not {ioengine!r}")
        if ioengine == "rdma" and (target_args or axes["nr_io_queues"] != [1] or axes["numjobs"] != [1]):
            raise SuiteError(f"{where}: an rdma point is one fio rdma client and its server (no target_args, "
                             "nr_io_queues or numjobs)")
        optional = matrix.get("optional", False)
        if not isinstance(optional, bool):
            raise SuiteError(f"{where}: 'optional' must be true or false")
        for values in itertools.product(*(axes[a] for a in AXES)):
            points.append(Point(dict(zip(AXES, values)), options, label, tuple(target_args), ioengine, optional))
    names = [p.name for p in points]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SuiteError(f"{path}: the matrix lists a point twice: {sorted(dup)[0]}")
    return points


def _positive_int(table, key, default, where, minimum=1):
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise SuiteError(f"{where}{key} must be an integer >= {minimum}, not {value!r}")
    return value


def load(path):
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SuiteError(f"no suite file {path}") from None
    except tomllib.TOMLDecodeError as e:
        raise SuiteError(f"{path} is not valid TOML: {e}") from None
    known = {"name", "description", "target", "engine", "runtime", "ramp", "repeats", "hosts",
             "options", "matrix", "thresholds", "ratio"}
    unknown = set(raw) - known
    if unknown:
        raise SuiteError(f"{path}: unknown keys {sorted(unknown)}")

    t = raw.get("target", {})
    if isinstance(t, str):
        t = {"kind": t}
    target = Target()
    for key, value in t.items():
        if not hasattr(target, key):
            raise SuiteError(f"{path}: unknown target key '{key}'")
        setattr(target, key, value if key == "args" else str(value))
    if target.kind not in ("embedded", "external"):
        raise SuiteError(f"{path}: target kind must be 'embedded' or 'external', not {target.kind!r}")
    if not isinstance(target.args, list):
        raise SuiteError(f"{path}: target args must be a list of strings")

    hosts = raw.get("hosts", ["local"])
    if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) for h in hosts):
        raise SuiteError(f"{path}: hosts must be a non-empty list of strings ('local' or 'HOST[,PORT]')")
    if "local" in hosts and len(hosts) > 1:
        raise SuiteError(f"{path}: hosts is either ['local'] or a list of fio --server hosts")

    matrices = raw.get("matrix")
    if not matrices:
        raise SuiteError(f"{path}: no [[matrix]] table")
    options = raw.get("options", {})
    if not isinstance(options, dict):
        raise SuiteError(f"{path}: 'options' is not a table")
    thresholds = raw.get("thresholds", {})
    if not isinstance(thresholds, dict):
        raise SuiteError(f"{path}: 'thresholds' is not a table")
    try:
        compare.parse_thresholds(thresholds, str(path))
    except ValueError as e:
        raise SuiteError(str(e)) from None

    points = _points(matrices if isinstance(matrices, list) else [matrices], options, path)
    if target.kind == "external" and any(p.target_args or p.ioengine != "nvmeof" for p in points):
        raise SuiteError(f"{path}: target_args and ioengine = 'rdma' need the embedded target")
    ratios = _ratios(raw.get("ratio", []), {p.name for p in points}, path)

    return Suite(
        name=str(raw.get("name", path.stem)),
        path=str(path.resolve()),
        description=str(raw.get("description", "")),
        target=target,
        engine=raw.get("engine"),
        runtime_s=_positive_int(raw, "runtime", DEFAULT_RUNTIME_S, f"{path}: "),
        ramp_s=_positive_int(raw, "ramp", 0, f"{path}: ", minimum=0),
        repeats=_positive_int(raw, "repeats", DEFAULT_REPEATS, f"{path}: "),
        hosts=hosts,
        points=points,
        thresholds=thresholds,
        ratios=ratios,
        raw=raw,
    )


def _ratios(tables, point_names, path):
    """The suite's [[ratio]] tables, each naming two of its points."""
    if not isinstance(tables, list):
        raise SuiteError(f"{path}: 'ratio' must be [[ratio]] tables")
    out = []
    for i, t in enumerate(tables):
        where = f"{path}: ratio #{i + 1}"
        try:
            r = ratio.Ratio(**t)
        except TypeError:
            raise SuiteError(f"{where} needs name, numerator, denominator (and may have metric, goal)") from None
        if not all(isinstance(v, str) for v in (r.name, r.numerator, r.denominator, r.metric)):
            raise SuiteError(f"{where}: name, numerator, denominator and metric are strings")
        if r.goal is not None and (not isinstance(r.goal, (int, float)) or isinstance(r.goal, bool)):
            raise SuiteError(f"{where}: goal must be a number, not {r.goal!r}")
        for side in (r.numerator, r.denominator):
            if side not in point_names:
                raise SuiteError(f"{where} names no point of the suite: {side!r}")
        if r.metric not in ratio.METRICS:
            raise SuiteError(f"{where}: metric must be one of {', '.join(ratio.METRICS)}, not {r.metric!r}")
        out.append(r)
    return out


def select(s, texts):
    """The suite with only the points whose name contains one of texts (all
    of them when texts is empty); its ratios stay (a ratio missing a side
    shows no figures)."""
    if not texts:
        return s
    points = [p for p in s.points if any(t in p.name for t in texts)]
    if not points:
        raise SuiteError(f"no point of suite {s.name} has {' or '.join(map(repr, texts))} in its name")
    s.points = points
    return s


def find(name_or_path, search_dirs):
    """A suite named by path, or by name in the shipped suite folders."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        return p
    for d in search_dirs:
        candidate = Path(d) / f"{name_or_path}.toml"
        if candidate.exists():
            return candidate
    raise SuiteError(f"no suite '{name_or_path}' (looked in {', '.join(str(d) for d in search_dirs)})")
