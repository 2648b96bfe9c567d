"""`nvmeof-perf compare`: per point and metric, regressed, improved or
unchanged, judged on the spread of the repeats and never on one sample.

A change counts only when both hold:
  - the medians differ by more than the metric's relative threshold, and
  - the two sides' min-max ranges do not overlap (every current repeat is
    worse than every baseline repeat, or better).
With fewer than two repeats on a side there is no spread, so no verdict."""
import statistics

from . import metrics

# Relative thresholds (fractions) by threshold key; a suite's [thresholds]
# table or --threshold KEY=PCT overrides them.
DEFAULT_THRESHOLDS = {
    "iops": 0.10,
    "bw": 0.10,
    "cpu_per_io": 0.15,
    "clat_mean": 0.15,
    "clat_p50": 0.15,
    "clat_p99": 0.20,
    "clat_p99.9": 0.30,
}

REGRESSED, IMPROVED, UNCHANGED, NO_SPREAD = "regressed", "improved", "unchanged", "too few repeats"
MIN_REPEATS = 2


def verdict(base, cur, threshold, higher_is_better):
    """(verdict, relative change of the medians) of two lists of repeats."""
    if not base or not cur:
        return NO_SPREAD, None
    b, c = statistics.median(base), statistics.median(cur)
    change = (c - b) / b if b else (0.0 if c == b else float("inf"))
    if len(base) < MIN_REPEATS or len(cur) < MIN_REPEATS:
        return NO_SPREAD, change
    if abs(change) <= threshold:
        return UNCHANGED, change
    if c > b and min(cur) > max(base):
        better = higher_is_better
    elif c < b and max(cur) < min(base):
        better = not higher_is_better
    else:
        return UNCHANGED, change  # the ranges overlap: within the noise
    return (IMPROVED if better else REGRESSED), change


def parse_thresholds(table, where):
    """{key: fraction} from {key: percent}; unknown keys are errors."""
    out = {}
    for key, value in table.items():
        if key not in DEFAULT_THRESHOLDS:
            raise ValueError(f"{where}: unknown threshold '{key}' (known: {', '.join(DEFAULT_THRESHOLDS)})")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{where}: threshold '{key}' must be a percentage >= 0, not {value!r}")
        out[key] = value / 100.0
    return out


def point_samples(point):
    """{row name: {metric: [value per repeat]}}: the point itself (summed over
    hosts) and, for a --client run, each host."""
    rows = {}
    for run in point["runs"]:
        report = run["fio"]
        per_row = {point["name"]: metrics.of_report(report)}
        for host, entries in sorted(metrics.by_host(report).items()):
            per_row[f"{point['name']} @{host}"] = metrics.from_entries(entries)
        for row, values in per_row.items():
            for key, value in values.items():
                rows.setdefault(row, {}).setdefault(key, []).append(value)
    return rows


def samples(result):
    out = {}
    for point in result["points"]:
        out.update(point_samples(point))
    return out


def compare(baseline, current, thresholds):
    """[(row, metric, base values, current values, verdict, change)] and the
    rows found on one side only."""
    base, cur = samples(baseline), samples(current)
    rows, missing = [], []
    for name in list(base) + [n for n in cur if n not in base]:
        if name not in base or name not in cur:
            missing.append((name, "baseline" if name not in base else "current"))
            continue
        keys = list(base[name]) + [k for k in cur[name] if k not in base[name]]
        for key in keys:
            _, _, higher, tkey = metrics.metric_info(key)
            b, c = base[name].get(key, []), cur[name].get(key, [])
            v, change = verdict(b, c, thresholds[tkey], higher)
            rows.append((name, key, b, c, v, change))
    return rows, missing


def fmt(values):
    if not values:
        return "-"
    med = statistics.median(values)
    digits = 0 if med >= 100 else 2
    return f"{med:.{digits}f} [{min(values):.{digits}f}–{max(values):.{digits}f}]"


def markdown(rows, missing, thresholds, baseline_name, current_name):
    out = [f"Baseline: `{baseline_name}`  ", f"Current: `{current_name}`  ",
           "Values: median [min–max] over the repeats. A change counts when it exceeds the threshold "
           "and the ranges do not overlap.", "",
           "| point | metric | baseline | current | change | threshold | verdict |",
           "|---|---|---:|---:|---:|---:|---|"]
    for name, key, b, c, v, change in rows:
        label, unit, _, tkey = metrics.metric_info(key)
        ch = "-" if change is None else f"{change * 100:+.1f} %"
        mark = {REGRESSED: "**regressed**", IMPROVED: "improved"}.get(v, v)
        out.append(f"| {name} | {label} ({unit}) | {fmt(b)} | {fmt(c)} | {ch} | "
                   f"{thresholds[tkey] * 100:.0f} % | {mark} |")
    for name, side in missing:
        out.append(f"| {name} | - | | | | | not in the {side} |")
    counts = {}
    for row in rows:
        counts[row[4]] = counts.get(row[4], 0) + 1
    out.append("")
    out.append("Summary: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) +
               (f", {len(missing)} points on one side only" if missing else ""))
    return "\n".join(out)
