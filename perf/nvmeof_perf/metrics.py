"""The figures compared and plotted, taken from fio's JSON report of one run.

Locally every point runs with group_reporting, so fio reports one entry with
its own merged latency percentiles. Through fio --client each host reports its
own entry; the sum over hosts adds IOPS, bandwidth and CPU, weights the mean
latency by I/Os and takes the worst host's percentile (percentiles of separate
hosts cannot be merged exactly from their summaries)."""

DIRECTIONS = ("read", "write", "trim")

# key: (label, unit, higher is better, threshold key)
PERCENTILES = {"p50": "50.000000", "p99": "99.000000", "p99.9": "99.900000"}
BASE_METRICS = {
    "iops": ("IOPS", "IO/s", True, "iops"),
    "bw": ("bandwidth", "MiB/s", True, "bw"),
    "cpu_per_io": ("CPU per I/O", "us", False, "cpu_per_io"),
}


def metric_info(key):
    """(label, unit, higher is better, threshold key) of a metric key such as
    'iops' or 'read clat p99'."""
    if key in BASE_METRICS:
        return BASE_METRICS[key]
    direction, _, stat = key.split(" ")
    return (f"{direction} clat {stat}", "us", False, f"clat_{stat}")


def job_entries(report):
    """The job entries of a local report, or of every host of a --client report
    (without fio's own 'All clients' sum, which this module recomputes)."""
    if "client_stats" in report:
        return [j for j in report["client_stats"] if j.get("jobname") != "All clients"]
    return list(report["jobs"])


def by_host(report):
    """{'HOST:PORT': [job entries]} of a --client report (the port tells apart
    servers on one host); {} for a local one."""
    hosts = {}
    for j in job_entries(report) if "client_stats" in report else []:
        hosts.setdefault(host_name(j), []).append(j)
    return hosts


def host_name(entry):
    host = entry.get("hostname", "?")
    return f"{host}:{entry['port']}" if "port" in entry else host


def from_entries(entries):
    """The metrics of a list of fio job entries (one point, one repeat)."""
    out = {"iops": 0.0, "bw": 0.0}
    ios_total = 0
    cpu_s = 0.0
    for j in entries:
        runtime_ms = max(j[d]["runtime"] for d in DIRECTIONS if d in j)
        for d in DIRECTIONS:
            if d in j:
                out["iops"] += j[d]["iops"]
                out["bw"] += j[d]["bw_bytes"] / (1 << 20)
                ios_total += j[d]["total_ios"]
        cpu_s += (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * runtime_ms / 1000.0
    if ios_total:
        out["cpu_per_io"] = cpu_s / ios_total * 1e6
    for d in DIRECTIONS:
        with_ios = [j for j in entries if d in j and j[d]["total_ios"] > 0]
        if not with_ios:
            continue
        ios = sum(j[d]["total_ios"] for j in with_ios)
        out[f"{d} clat mean"] = sum(j[d]["clat_ns"]["mean"] * j[d]["total_ios"] for j in with_ios) / ios / 1000.0
        for name, fio_key in PERCENTILES.items():
            values = [j[d]["clat_ns"].get("percentile", {}).get(fio_key) for j in with_ios]
            values = [v for v in values if v is not None]
            if values:
                out[f"{d} clat {name}"] = max(values) / 1000.0
    return out


def of_report(report):
    return from_entries(job_entries(report))


def percentiles(report, direction):
    """[(percentile, microseconds)] of one direction, worst host for --client."""
    merged = {}
    for j in job_entries(report):
        if direction in j and j[direction]["total_ios"] > 0:
            for k, v in j[direction]["clat_ns"].get("percentile", {}).items():
                merged[float(k)] = max(merged.get(float(k), 0), v / 1000.0)
    return sorted(merged.items())
