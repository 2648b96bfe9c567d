"""`nvmeof-perf plot`: PNGs of one or more results, one line per result
(baseline against current): IOPS and p99 latency versus queue depth per block
size and pattern, bandwidth versus block size, completion-latency percentiles.
Each marker is the median of the repeats; the bars span their min and max."""
import re
import statistics
from pathlib import Path

from . import compare, metrics


class PlotError(Exception):
    pass


def _plt():
    try:
        import matplotlib
    except ImportError:
        raise PlotError("plotting needs matplotlib (Debian: apt-get install python3-matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _bytes(bs):
    m = re.fullmatch(r"(\d+)([kKmMgG]?)[iI]?[bB]?", str(bs))
    if not m:
        return 0
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def _label(result, path):
    git = (result["metadata"]["engine"].get("git") or {}).get("describe", "")
    return f"{Path(path).stem}" + (f" ({git})" if git else "")


def _series(result):
    """[(params, {metric: [values]}, point)] of a result's points (sums over hosts)."""
    out = []
    for point in result["points"]:
        rows = compare.point_samples(point)
        out.append((point["params"], rows.get(point["name"], {}), point))
    return out


def _main_direction(rw):
    return "write" if "write" in rw and "rw" not in rw and "read" not in rw else "read"


def _errorbar(ax, xs, values_list, label, marker="o"):
    med = [statistics.median(v) for v in values_list]
    lo = [m - min(v) for m, v in zip(med, values_list)]
    hi = [max(v) - m for m, v in zip(med, values_list)]
    ax.errorbar(xs, med, yerr=[lo, hi], marker=marker, capsize=3, label=label)


def _finish(plt, fig, ax, title, xlabel, ylabel, path, log_ticks=None):
    """Titles, labels, legend; log_ticks: the x values of a log2 axis, each
    labelled as a plain number."""
    ax.set_title(title, fontsize="medium")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if log_ticks:
        from matplotlib.ticker import NullFormatter
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(log_ticks))
        ax.set_xticklabels([f"{x:g}" for x in sorted(log_ticks)])
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _short(name):
    """A point's name without the axes at their defaults."""
    return name.replace(" jobs=1", "").replace(" queues=1", "")


def _slug(text):
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")


def plot(result_paths, results, out_dir):
    """Writes the PNGs; returns their paths."""
    plt = _plt()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    labelled = [(_label(r, p), _series(r)) for r, p in zip(results, result_paths)]

    # Curves over iodepth: one figure per (rw, bs, numjobs, queues).
    groups = {}
    for label, series in labelled:
        for params, values, _ in series:
            key = (params["rw"], str(params["bs"]), params["numjobs"], params["nr_io_queues"])
            groups.setdefault(key, {}).setdefault(label, []).append((params["iodepth"], values))
    for (rw, bs, nj, nq), by_label in groups.items():
        if max(len(v) for v in by_label.values()) < 2:
            continue  # one queue depth: no curve to draw
        d = _main_direction(rw)
        suffix = f"{rw} bs={bs}" + (f" numjobs={nj}" if nj != 1 else "") + (f" queues={nq}" if nq != 1 else "")
        for metric, ylabel, name in (("iops", "IOPS (I/O per second)", "iops"),
                                     (f"{d} clat p99", f"{d} completion latency p99 (µs)", "p99")):
            fig, ax = plt.subplots(figsize=(7, 4.5))
            ticks = set()
            for label, pts in by_label.items():
                pts = sorted((qd, v[metric]) for qd, v in pts if metric in v)
                if pts:
                    _errorbar(ax, [p[0] for p in pts], [p[1] for p in pts], label)
                    ticks.update(p[0] for p in pts)
            if not ticks:
                plt.close(fig)
                continue
            path = out_dir / f"{name}-vs-iodepth-{_slug(suffix)}.png"
            _finish(plt, fig, ax, f"{'IOPS' if name == 'iops' else 'p99 latency'} vs queue depth: {suffix}",
                    "iodepth (I/Os in flight per job)", ylabel, path, log_ticks=ticks)
            written.append(path)

    # Bandwidth over block size: one figure per (rw, iodepth, numjobs, queues).
    groups = {}
    for label, series in labelled:
        for params, values, _ in series:
            key = (params["rw"], params["iodepth"], params["numjobs"], params["nr_io_queues"])
            groups.setdefault(key, {}).setdefault(label, []).append((_bytes(params["bs"]), values))
    for (rw, qd, nj, nq), by_label in groups.items():
        if max(len(v) for v in by_label.values()) < 2:
            continue
        suffix = f"{rw} qd={qd}" + (f" numjobs={nj}" if nj != 1 else "") + (f" queues={nq}" if nq != 1 else "")
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ticks = set()
        for label, pts in by_label.items():
            pts = sorted((bs / 1024, v["bw"]) for bs, v in pts if "bw" in v)
            _errorbar(ax, [p[0] for p in pts], [p[1] for p in pts], label)
            ticks.update(p[0] for p in pts)
        path = out_dir / f"bw-vs-bs-{_slug(suffix)}.png"
        _finish(plt, fig, ax, f"Bandwidth vs block size: {suffix}", "block size (KiB)", "bandwidth (MiB/s)",
                path, log_ticks=ticks)
        written.append(path)

    # Latency percentiles: one figure per point, first repeat of each result.
    points = {}
    for (label, _), result in zip(labelled, results):
        for point in result["points"]:
            if point["runs"]:
                points.setdefault(point["name"], []).append((label, point))
    for name, entries in points.items():
        rw = entries[0][1]["params"]["rw"]
        d = _main_direction(rw)
        fig, ax = plt.subplots(figsize=(7, 4.5))
        labels = []
        for label, point in entries:
            pcts = metrics.percentiles(point["runs"][0]["fio"], d)
            if pcts:
                # One slot per percentile, so that 99, 99.9 and 99.99 stay apart.
                ax.plot(range(len(pcts)), [v for _, v in pcts], marker=".", label=label)
                if len(pcts) > len(labels):
                    labels = [f"{p:g}" for p, _ in pcts]
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=45, fontsize="small")
        ax.set_yscale("log")
        path = out_dir / f"percentiles-{_slug(name)}.png"
        _finish(plt, fig, ax, f"{d} completion latency percentiles (first repeat): {_short(name)}",
                "percentile (%)", "completion latency (µs, log scale)", path)
        written.append(path)
    return written
