#!/usr/bin/env python3
"""NVMe/TCP hosts side by side: our fio engine (trtype=tcp) and SPDK's fio
plugin (spdk_nvme, trtype=TCP), each against the same targets over loopback
TCP: nvmeof-target --transport tcp and SPDK's nvmf_tgt. Per point and host:
IOPS, CPU µs per I/O (getrusage of the fio process) and system calls per I/O
(perf stat's raw_syscalls:sys_enter on the fio process), each by the delta of a
run of T and one of 3T seconds, so that start-up (DPDK's initialisation in the
plugin, the connect in both) cancels. Prints figures and asserts nothing.

  bench/tcp_side_by_side.py [--build build] [--spdk DIR] [--pairs N] [--runtime S]
                            [--only TEXT] [--kernel-host]

Points: 4 KiB random reads at QD 1, 32 and 128; 128 KiB sequential reads at QD 8.
Hosts alternate point by point, so that drift on a shared machine hits both.

SPDK (v26.05, the peer's build.sh) is looked for under --spdk, else
$SPDK_CACHE (default /var/cache/nvmeof-ci)/spdk-<archive sha256>/spdk, where
tests/spdk/run-checks.sh builds and keeps it. Without it the SPDK host and
target are left out (said once). Needs root (DPDK's hugepages, the peer's
spdk-ns.sh).

--kernel-host: the Linux kernel's nvme-tcp host (nvme connect -t tcp, fio's
io_uring engine on the block device) as a third host. It needs the nvme-tcp
module; where it cannot be loaded (a container without modules) the host is
reported as not run, with the reason.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NQN = "nqn.2026-12.io.nvmeof:side-by-side"
NAMESPACE_MIB = 256
POINTS = [
    {"name": "4k randread qd1", "rw": "randread", "bs": "4k", "qd": 1},
    {"name": "4k randread qd32", "rw": "randread", "bs": "4k", "qd": 32},
    {"name": "4k randread qd128", "rw": "randread", "bs": "4k", "qd": 128},
    {"name": "128k read qd8", "rw": "read", "bs": "128k", "qd": 8},
]
HUGEPAGES = 1024


class BenchError(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spdk_tree(given):
    """SPDK's build folder (with build/bin/nvmf_tgt and build/fio/spdk_nvme), or None."""
    if given:
        return Path(given)
    for peer in (REPO.parent / "shared" / "peers" / "spdk", Path("/work/shared/peers/spdk")):
        archive = peer / "spdk-v26.05-src.tar.gz"
        if archive.is_file():
            sha = hashlib.sha256(archive.read_bytes()).hexdigest()
            tree = Path(os.environ.get("SPDK_CACHE", "/var/cache/nvmeof-ci")) / f"spdk-{sha}" / "spdk"
            if (tree / "build" / "fio" / "spdk_nvme").is_file():
                return tree
    return None


def spdk_ns_script():
    for peer in (REPO.parent / "shared" / "peers" / "spdk", Path("/work/shared/peers/spdk")):
        if (peer / "spdk-ns.sh").is_file():
            return str(peer / "spdk-ns.sh")
    raise BenchError("no spdk-ns.sh (the SPDK peer folder)")


class Env:
    def __init__(self, build, spdk):
        self.build = Path(build).resolve()
        self.target = self.build / "target" / "nvmeof-target"
        self.engine = self.build / "engine" / "libfio_nvmeof.so"
        self.softverbs_run = str(self.build / "softverbs" / "softverbs-run")
        for f in (self.target, self.engine):
            if not f.is_file():
                raise BenchError(f"{f} does not exist: build first")
        self.fio = shutil.which("fio") or "fio"
        self.spdk = spdk
        if spdk:
            self.spdk_libs = ":".join(str(spdk / p) for p in ("build/lib", "isa-l/.libs", "isa-l-crypto/.libs"))
            self.spdk_ns = spdk_ns_script()

    def spdk_prefix(self):
        """How an SPDK process (target or plugin) is run: its libraries, DPDK's
        driver folder without the mlx drivers (spdk-ns.sh), softverbs in place
        of the RDMA libraries it links (it speaks TCP here)."""
        return ["env", f"LD_LIBRARY_PATH={self.spdk_libs}", self.spdk_ns, self.softverbs_run]


def hugepages_ready():
    if int(Path("/proc/sys/vm/nr_hugepages").read_text()) < HUGEPAGES:
        Path("/proc/sys/vm/nr_hugepages").write_text(str(HUGEPAGES))
    if subprocess.run(["mountpoint", "-q", "/dev/hugepages"]).returncode != 0:
        os.makedirs("/dev/hugepages", exist_ok=True)
        subprocess.run(["mount", "-t", "hugetlbfs", "none", "/dev/hugepages"], check=True)


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_ours(env, workdir):
    """nvmeof-target --transport tcp with one RAM namespace; (proc, port)."""
    out = open(Path(workdir) / "nvmeof-target.log", "w")
    proc = subprocess.Popen([str(env.target), "--transport", "tcp", "--listen", "127.0.0.1", "--port", "0",
                             "--subsystem", NQN, "--namespace", f"ram:{NAMESPACE_MIB}M:4096"],
                            stdout=subprocess.PIPE, stderr=out, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on \S+:(\d+)", line)
    if not m:
        stop(proc)
        raise BenchError(f"nvmeof-target did not start: {line!r}")
    return proc, int(m.group(1))


def start_nvmf_tgt(env, workdir):
    """SPDK's nvmf_tgt on one core with a TCP transport and one malloc bdev; (proc, port)."""
    sock = f"/run/nvmeof-side-by-side-{os.getpid()}.sock"
    log = open(Path(workdir) / "nvmf_tgt.log", "w")
    proc = subprocess.Popen([*env.spdk_prefix(), str(env.spdk / "build" / "bin" / "nvmf_tgt"),
                             "-m", "0x1", "-u", "-r", sock], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not os.path.exists(sock):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            raise BenchError(f"nvmf_tgt did not start (log {log.name})")
        time.sleep(0.1)
    port = free_port()
    rpc = [sys.executable if Path(sys.executable).name.startswith("python3") else "python3",
           str(env.spdk / "scripts" / "rpc.py"), "-s", sock]
    for args in (["framework_wait_init"], ["nvmf_create_transport", "-t", "TCP"],
                 ["bdev_malloc_create", "-b", "m0", str(NAMESPACE_MIB), "4096"],
                 ["nvmf_create_subsystem", NQN, "-a", "-s", "SPDK0001"],
                 ["nvmf_subsystem_add_ns", NQN, "m0"],
                 ["nvmf_subsystem_add_listener", NQN, "-t", "tcp", "-a", "127.0.0.1", "-s", str(port)]):
        r = subprocess.run(["/usr/bin/python3", *rpc[1:], *args], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            stop(proc)
            raise BenchError(f"rpc {' '.join(args)}: {r.stderr[-500:]}")
    return proc, port


def fio_command(env, host, port, point, runtime_s, workdir):
    common = ["--output-format=json", "--name=sbs", f"--rw={point['rw']}", f"--bs={point['bs']}",
              f"--iodepth={point['qd']}", "--time_based=1", f"--runtime={runtime_s}", "--thread=1",
              "--norandommap", "--randrepeat=0", f"--size={NAMESPACE_MIB // 2}m"]
    if host == "ours":
        return [env.fio, f"--ioengine=external:{env.engine}", "--trtype=tcp", "--traddr=127.0.0.1",
                f"--trsvcid={port}", f"--subnqn={NQN}", *common]
    if host == "spdk":
        trid = f"trtype=TCP adrfam=IPv4 traddr=127.0.0.1 trsvcid={port} subnqn={NQN.replace(':', chr(92) + ':')} ns=1"
        return [*env.spdk_prefix(), env.fio, f"--ioengine={env.spdk / 'build' / 'fio' / 'spdk_nvme'}",
                f"--filename={trid}", *common]
    raise BenchError(f"no host {host}")


def one_run(env, host, port, point, runtime_s, workdir):
    """(I/Os, CPU seconds, system calls) of one fio run, the whole process."""
    stat = Path(workdir) / "perf-stat.txt"
    cmd = ["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-o", str(stat), "--",
           *fio_command(env, host, port, point, runtime_s, workdir)]
    out, err = Path(workdir) / "fio.json", Path(workdir) / "fio.err"
    with open(out, "w") as o, open(err, "w") as e:
        proc = subprocess.Popen(cmd, stdout=o, stderr=e)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise BenchError(f"{host} {point['name']}: fio exited {proc.returncode}: {err.read_text()[-1500:]}")
    text = out.read_text()
    job = json.loads(text[text.index("{"):])["jobs"][0]
    if job["error"] != 0:
        raise BenchError(f"{host} {point['name']}: fio error {job['error']}")
    ios = sum(job[d]["total_ios"] for d in ("read", "write"))
    lines = [ln for ln in stat.read_text().splitlines() if "raw_syscalls:sys_enter" in ln]
    return ios, usage.ru_utime + usage.ru_stime, int(lines[0].split(",")[0])


def measure(env, host, port, point, runtime_s, workdir):
    """{iops, cpu_us_per_io, syscalls_per_io} by the delta of T and 3T seconds.
    On a shared machine a burst of load can leave the long run with no more
    I/Os than the short one: then the pair is measured again (twice at most)."""
    for _ in range(3):
        short = one_run(env, host, port, point, runtime_s, workdir)
        long = one_run(env, host, port, point, 3 * runtime_s, workdir)
        ios = long[0] - short[0]
        if ios > short[0] // 2:
            return {"iops": ios / (2 * runtime_s), "cpu_us_per_io": (long[1] - short[1]) * 1e6 / ios,
                    "syscalls_per_io": (long[2] - short[2]) / ios}
        print(f"  ({host} {point['name']}: {short[0]} I/Os in {runtime_s} s, {long[0]} in {3 * runtime_s} s: "
              "measured again)", flush=True)
    raise BenchError(f"{host} {point['name']}: the long runs did too little more I/O than the short ones")


def kernel_host_reason():
    """Why the kernel's nvme-tcp host cannot run here, or None."""
    if Path("/sys/module/nvme_tcp").exists():
        return None if shutil.which("nvme") else "nvme-cli is not installed"
    if not shutil.which("modprobe"):
        return f"the nvme-tcp module is not loaded and there is no modprobe (kernel {os.uname().release})"
    r = subprocess.run(["modprobe", "nvme-tcp"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"the nvme-tcp module cannot be loaded ({(r.stderr or r.stdout).strip()[:200] or 'no modules'})"
    return None if shutil.which("nvme") else "nvme-cli is not installed"


def median(values):
    s = sorted(values)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=str(REPO / "build"))
    p.add_argument("--spdk", help="SPDK's source tree with its build (default: the CI cache)")
    p.add_argument("--pairs", type=int, default=2, help="measurements per point and host (default 2)")
    p.add_argument("--runtime", type=int, default=2, help="T of the T and 3T second runs (default 2)")
    p.add_argument("--only", action="append", help="only points whose name contains TEXT")
    p.add_argument("--kernel-host", action="store_true", help="also the kernel's nvme-tcp host, where it loads")
    p.add_argument("--json", help="write every measurement here")
    a = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("tcp_side_by_side: run as root (DPDK's hugepages, perf's tracepoints)")
    spdk = spdk_tree(a.spdk)
    env = Env(a.build, spdk)
    hosts = ["ours"] + (["spdk"] if spdk else [])
    if not spdk:
        print("SPDK's build not found: our host against nvmeof-target only")
    if a.kernel_host:
        reason = kernel_host_reason()
        if reason:
            print(f"the kernel's nvme-tcp host is not run: {reason}")
        else:
            print("the kernel's nvme-tcp host: nvme-tcp is available, but this script does not drive it yet "
                  "(nvme connect -t tcp, fio --ioengine=io_uring on the namespace's block device)")
    points = [pt for pt in POINTS if not a.only or any(t in pt["name"] for t in a.only)]
    workdir = tempfile.mkdtemp(prefix="tcp-side-by-side-")
    results = []
    targets = {}
    try:
        targets["nvmeof-target"] = start_ours(env, workdir)
        if spdk:
            hugepages_ready()
            targets["nvmf_tgt"] = start_nvmf_tgt(env, workdir)
        for _ in range(a.pairs):
            for target, (_, port) in targets.items():
                for point in points:
                    for host in hosts:
                        m = measure(env, host, port, point, a.runtime, workdir)
                        results.append({"target": target, "host": host, "point": point["name"], **m})
                        print(f"  {target:14} {point['name']:18} {host:5} {m['iops']:9.0f} IOPS "
                              f"{m['cpu_us_per_io']:7.2f} µs CPU/IO {m['syscalls_per_io']:6.2f} syscalls/IO",
                              flush=True)
    finally:
        for proc, _ in targets.values():
            stop(proc)
        shutil.rmtree(workdir, ignore_errors=True)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1) + "\n")
    print()
    print("| target | point | host | IOPS | CPU µs / I/O | system calls / I/O |")
    print("|---|---|---|---:|---:|---:|")
    for target in targets:
        for point in points:
            for host in hosts:
                rs = [r for r in results if (r["target"], r["point"], r["host"]) == (target, point["name"], host)]
                rng = lambda k: f"{median([r[k] for r in rs]):.{0 if k == 'iops' else 2}f}"  # noqa: E731
                span = lambda k: f" [{min(r[k] for r in rs):.{0 if k == 'iops' else 2}f}–" \
                                 f"{max(r[k] for r in rs):.{0 if k == 'iops' else 2}f}]"  # noqa: E731
                print(f"| {target} | {point['name']} | {host} | {rng('iops')}{span('iops')} "
                      f"| {rng('cpu_us_per_io')}{span('cpu_us_per_io')} "
                      f"| {rng('syscalls_per_io')}{span('syscalls_per_io')} |")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"tcp_side_by_side: {e}")
