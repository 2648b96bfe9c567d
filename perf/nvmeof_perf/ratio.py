"""Ratios between two points of one result, declared by a suite's [[ratio]]
tables: e.g. the MDTS-split ratio, 1 MiB reads against a target whose MDTS
splits each into eight 128 KiB commands over the same reads unsplit. The
figures are printed with their goal, never asserted: on a shared machine
one run's ratio is a hint, not a verdict."""
import statistics
from dataclasses import dataclass

from . import compare

METRICS = ("iops", "bw", "cpu_per_io")


@dataclass(frozen=True)
class Ratio:
    name: str
    numerator: str    # point names, as the result lists them
    denominator: str
    metric: str = "bw"
    goal: float | None = None  # the ratio the work aims for (at least), shown beside it


def value(r, samples):
    """(median numerator, median denominator, their ratio); None where a side
    has no figures (a skipped or missing point)."""
    num = samples.get(r.numerator, {}).get(r.metric)
    den = samples.get(r.denominator, {}).get(r.metric)
    if not num or not den:
        return None
    n, d = statistics.median(num), statistics.median(den)
    return n, d, (n / d if d else None)


def of_result(result):
    """[(Ratio, value(...))] of the ratios the result's suite declares."""
    samples = compare.samples(result)
    return [(r, value(r, samples)) for r in
            (Ratio(**t) for t in result["suite"].get("definition", {}).get("ratio", []))]


def markdown(rows):
    out = ["| ratio | metric | numerator | denominator | ratio | goal |", "|---|---|---:|---:|---:|---|"]
    for r, v in rows:
        goal = "-" if r.goal is None else f"≥ {r.goal:.2f}"
        if v is None or v[2] is None:
            out.append(f"| {r.name} | {r.metric} | - | - | no figures | {goal} |")
            continue
        n, d, q = v
        met = "" if r.goal is None else (" (met)" if q >= r.goal else " (**below**)")
        out.append(f"| {r.name} | {r.metric} | {n:.1f} | {d:.1f} | {q:.3f} | {goal}{met} |")
    return "\n".join(out)
