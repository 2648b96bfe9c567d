"""`nvmeof-perf show`: one result as a table, a row per point (and per host of
a --client run): the figures people quote, each the median over the repeats
with its min-max range; then the points skipped (and why) and the ratios the
suite declares."""
from . import compare, metrics, ratio

COLUMNS = ("iops", "bw", "cpu_per_io", "clat mean", "clat p99")


def _column_value(values, column):
    """The repeats' values of a column; latency columns take whichever
    direction did I/O (reads first)."""
    if column in values:
        return values[column]
    for direction in metrics.DIRECTIONS:
        key = f"{direction} {column}"
        if key in values:
            return values[key]
    return []


def markdown(result, name):
    meta = result.get("metadata", {})
    facts = meta.get("target", {}).get("facts", {})
    header = [f"Result: `{name}`  ",
              f"Suite: {result['suite']['name']}, engine {meta.get('engine', {}).get('git', {}).get('describe', '?')}, "
              f"{meta.get('fio_version', '?')}, host {meta.get('host', '?')}  ",
              f"Target: {meta.get('target', {}).get('kind', '?')}, MDTS {facts.get('mdts_bytes', '?')} bytes  ",
              "Values: median [min–max] over the repeats.", ""]
    labels = []
    for column in COLUMNS:
        key = column if column in metrics.BASE_METRICS else f"read {column}"
        label, unit, _, _ = metrics.metric_info(key)
        labels.append(f"{label.replace('read ', '')} ({unit})")
    out = header + ["| point | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(COLUMNS)]
    for row, values in compare.samples(result).items():
        out.append(f"| {row} | " + " | ".join(compare.fmt(_column_value(values, c)) for c in COLUMNS) + " |")
    skipped = [p for p in result["points"] if "skipped" in p]
    if skipped:
        out += ["", "Skipped (optional points whose run failed):"]
        out += [f"- {p['name']}: {' '.join(p['skipped'].split())[:300]}" for p in skipped]
    ratios = ratio.of_result(result)
    if ratios:
        out += ["", "Ratios (medians; printed, not judged):", "", ratio.markdown(ratios)]
    return "\n".join(out)
