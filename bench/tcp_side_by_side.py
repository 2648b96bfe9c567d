#!/usr/bin/env python3
"""NVMe/TCP hosts side by side: our fio engine (trtype=tcp) and SPDK's fio
plugin (spdk_nvme, trtype=TCP), each against the same targets over loopback
TCP: nvmeof-target --transport tcp and SPDK's nvmf_tgt. Per point and host:
IOPS, CPU µs per I/O (getrusage of the fio process; and that plus every other
task's time but the target's, by schedstat, which holds the kernel's work
outside fio too: its nvme-tcp workers, softirqs where they ran) and system
calls per I/O (perf stat's raw_syscalls:sys_enter on the fio process), each by
the delta of a run of T and one of 3T seconds, so that start-up (DPDK's
initialisation in the plugin, the connect in both) cancels. Prints figures
and asserts nothing.

  bench/tcp_side_by_side.py [--build build] [--spdk DIR] [--pairs N] [--runtime S]
                            [--only TEXT] [--kernel-host] [--no-syscalls] [--json FILE]

Points: 4 KiB random reads at QD 1, 32 and 128; 128 KiB sequential reads at QD 8.
Hosts alternate point by point, so that drift on a shared machine hits both.

SPDK (v26.05, the peer's build.sh) is looked for under --spdk, else
$SPDK_CACHE (default /var/cache/nvmeof-ci)/spdk-<archive sha256>/spdk, where
tests/spdk/run-checks.sh builds and keeps it. Without it the SPDK host and
target are left out (said once). Needs root (DPDK's hugepages, the peer's
spdk-ns.sh).

--kernel-host: the Linux kernel's nvme-tcp host as a third host: nvme-cli
connects it to each target (nvme connect -t tcp, a host NQN of the script's
own), fio's io_uring engine drives the namespace's block device (direct=1),
and it is disconnected at the end. It needs the nvme-tcp module and nvme-cli;
where the module cannot be loaded (a container without modules) the host is
reported as not run, with the reason.

System calls are counted by perf stat where it is installed; without it by
strace -f -c, which stops fio at every call, so then each point runs twice
more with strace for the count alone (the CPU figures come from runs without
it). --no-syscalls leaves the count out.
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
import uuid
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
        # perf's tracepoint counts without slowing fio; strace -c, where perf is
        # missing, counts the same calls but stops fio at each one.
        self.syscall_counter = next((t for t in ("perf", "strace") if shutil.which(t)), None)
        self.kernel_devices = {}  # a target's port: the kernel host's block device on it
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


def other_tasks_ns(exclude_pid):
    """CPU time so far of every task on the machine but exclude_pid's threads,
    in ns, by the scheduler's own clock (schedstat), not by tick samples: ticks
    miss much of the short runs of the kernel host's workers. None without
    schedstat (a kernel without CONFIG_SCHED_INFO)."""
    total, found = 0, False
    for stat in Path("/proc").glob("[0-9]*/task/[0-9]*/schedstat"):
        if stat.parts[2] == str(exclude_pid):
            continue
        try:
            total += int(stat.read_text().split()[0])
            found = True
        except (OSError, ValueError, IndexError):
            continue  # a task that ended meanwhile
    return total if found else None


class KernelHost:
    """The Linux kernel's nvme-tcp host connected to one target: the block
    device fio's io_uring engine drives."""

    def __init__(self, port):
        self.port = port
        self.controller = None
        host_nqn = f"nqn.2014-08.org.nvmexpress:uuid:{uuid.uuid4()}"
        r = subprocess.run(["nvme", "connect", "-t", "tcp", "-a", "127.0.0.1", "-s", str(port), "-n", NQN,
                            f"--hostnqn={host_nqn}"], capture_output=True, text=True, timeout=90)
        if r.returncode != 0:
            raise BenchError(f"nvme connect -t tcp 127.0.0.1:{port}: exit {r.returncode}: "
                             f"{(r.stderr or r.stdout).strip()[-300:]}")
        self.device = None
        deadline = time.monotonic() + 10
        while self.device is None:
            self.device = self.find_device()
            if self.device is None:
                if time.monotonic() > deadline:
                    self.close()
                    raise BenchError(f"no block device after nvme connect to 127.0.0.1:{port}")
                time.sleep(0.1)

    def find_device(self):
        """Namespace 1's block device on the TCP controller to this port (both
        targets serve NQN, so the controller is told by its address). With
        native multipath the controller holds the path nvmeAcBn1, whose block
        device is the head nvmeAn1."""
        for c in Path("/sys/class/nvme").glob("nvme*"):
            try:
                if (c / "transport").read_text().strip() != "tcp" or \
                        f"trsvcid={self.port}," not in (c / "address").read_text().strip() + ",":
                    continue
            except OSError:
                continue
            self.controller = c.name
            for d in sorted(c.glob("nvme*n1")):
                name = re.sub(r"^nvme(\d+)c\d+n", r"nvme\1n", d.name)
                if Path("/dev", name).is_block_device():
                    return f"/dev/{name}"
        return None

    def close(self):
        if self.controller:
            subprocess.run(["nvme", "disconnect", "-d", self.controller], capture_output=True, timeout=60)
        else:
            subprocess.run(["nvme", "disconnect", "-n", NQN], capture_output=True, timeout=60)


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
    if host == "kernel":
        return [env.fio, "--ioengine=io_uring", f"--filename={env.kernel_devices[port]}", "--direct=1", *common]
    raise BenchError(f"no host {host}")


def one_run(env, host, port, target_pid, point, runtime_s, workdir, counter):
    """(I/Os, CPU seconds of the fio process, CPU seconds of the machine less
    the target's, system calls or None) of one fio run, its system calls
    counted by counter (perf, strace or None)."""
    stat = Path(workdir) / "syscalls.txt"
    fio = fio_command(env, host, port, point, runtime_s, workdir)
    if counter == "perf":
        cmd = ["perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-o", str(stat), "--", *fio]
    elif counter == "strace":
        cmd = ["strace", "-f", "-c", "-o", str(stat), "--", *fio]
    else:
        cmd = fio
    out, err = Path(workdir) / "fio.json", Path(workdir) / "fio.err"
    with open(out, "w") as o, open(err, "w") as e:
        others0 = other_tasks_ns(target_pid)
        proc = subprocess.Popen(cmd, stdout=o, stderr=e)
        _, status, usage = os.wait4(proc.pid, 0)
        others1 = other_tasks_ns(target_pid)
        proc.returncode = os.waitstatus_to_exitcode(status)
    fio_cpu = usage.ru_utime + usage.ru_stime
    # fio lives between the two readings only: its own time comes from wait4.
    machine = None if others0 is None or others1 is None else fio_cpu + (others1 - others0) / 1e9
    if proc.returncode != 0:
        raise BenchError(f"{host} {point['name']}: fio exited {proc.returncode}: {err.read_text()[-1500:]}")
    text = out.read_text()
    job = json.loads(text[text.index("{"):])["jobs"][0]
    if job["error"] != 0:
        raise BenchError(f"{host} {point['name']}: fio error {job['error']}")
    ios = sum(job[d]["total_ios"] for d in ("read", "write"))
    syscalls = None
    if counter == "perf":
        lines = [ln for ln in stat.read_text().splitlines() if "raw_syscalls:sys_enter" in ln]
        syscalls = int(lines[0].split(",")[0])
    elif counter == "strace":
        # strace -c's closing row: "100.00 SECONDS USECS/CALL CALLS [ERRORS] total"
        total = [ln.split() for ln in stat.read_text().splitlines() if ln.rstrip().endswith(" total")]
        syscalls = int(total[-1][3])
    return ios, fio_cpu, machine, syscalls


def run_pair(env, host, port, target_pid, point, runtime_s, workdir, counter):
    """(short run, long run, I/Os between them) of T and 3T seconds. On a
    shared machine a burst of load can leave the long run with no more I/Os
    than the short one: then the pair is measured again (twice at most)."""
    for _ in range(3):
        short = one_run(env, host, port, target_pid, point, runtime_s, workdir, counter)
        long = one_run(env, host, port, target_pid, point, 3 * runtime_s, workdir, counter)
        ios = long[0] - short[0]
        if ios > short[0] // 2:
            return short, long, ios
        print(f"  ({host} {point['name']}: {short[0]} I/Os in {runtime_s} s, {long[0]} in {3 * runtime_s} s: "
              "measured again)", flush=True)
    raise BenchError(f"{host} {point['name']}: the long runs did too little more I/O than the short ones")


def measure(env, host, port, target_pid, point, runtime_s, workdir):
    """{iops, cpu_us_per_io, machine_cpu_us_per_io, syscalls_per_io} by the
    delta of T and 3T seconds."""
    timed_counter = env.syscall_counter if env.syscall_counter == "perf" else None
    short, long, ios = run_pair(env, host, port, target_pid, point, runtime_s, workdir, timed_counter)
    result = {"iops": ios / (2 * runtime_s), "cpu_us_per_io": (long[1] - short[1]) * 1e6 / ios,
              "machine_cpu_us_per_io": None if long[2] is None or short[2] is None
              else (long[2] - short[2]) * 1e6 / ios, "syscalls_per_io": None}
    if timed_counter:
        result["syscalls_per_io"] = (long[3] - short[3]) / ios
    elif env.syscall_counter == "strace":
        short, long, ios = run_pair(env, host, port, target_pid, point, runtime_s, workdir, "strace")
        result["syscalls_per_io"] = (long[3] - short[3]) / ios
    return result


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


def figure(value, digits):
    return "–" if value is None else f"{value:.{digits}f}"


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
    p.add_argument("--no-syscalls", action="store_true", help="do not count system calls")
    a = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("tcp_side_by_side: run as root (DPDK's hugepages, perf's tracepoints)")
    spdk = spdk_tree(a.spdk)
    env = Env(a.build, spdk)
    if a.no_syscalls:
        env.syscall_counter = None
    hosts = ["ours"] + (["spdk"] if spdk else [])
    if not spdk:
        print("SPDK's build not found: our host against nvmeof-target only")
    if a.kernel_host:
        reason = kernel_host_reason()
        if reason:
            print(f"the kernel's nvme-tcp host is not run: {reason}")
        else:
            hosts.append("kernel")
    if env.syscall_counter == "strace":
        print("perf is not installed: system calls counted by strace -c in runs of their own")
    elif env.syscall_counter is None:
        print("system calls are not counted")
    points = [pt for pt in POINTS if not a.only or any(t in pt["name"] for t in a.only)]
    workdir = tempfile.mkdtemp(prefix="tcp-side-by-side-")
    results = []
    targets = {}
    kernel_hosts = []
    try:
        targets["nvmeof-target"] = start_ours(env, workdir)
        if spdk:
            hugepages_ready()
            targets["nvmf_tgt"] = start_nvmf_tgt(env, workdir)
        if "kernel" in hosts:
            for _, port in targets.values():
                kernel_hosts.append(KernelHost(port))
                env.kernel_devices[port] = kernel_hosts[-1].device
        for _ in range(a.pairs):
            for target, (proc, port) in targets.items():
                for point in points:
                    for host in hosts:
                        m = measure(env, host, port, proc.pid, point, a.runtime, workdir)
                        results.append({"target": target, "host": host, "point": point["name"], **m})
                        print(f"  {target:14} {point['name']:18} {host:6} {m['iops']:9.0f} IOPS "
                              f"{m['cpu_us_per_io']:7.2f} µs CPU/IO (fio) {figure(m['machine_cpu_us_per_io'], 2):>7} "
                              f"(machine) {figure(m['syscalls_per_io'], 2):>6} syscalls/IO", flush=True)
    finally:
        for kernel_host in kernel_hosts:
            kernel_host.close()
        for proc, _ in targets.values():
            stop(proc)
        shutil.rmtree(workdir, ignore_errors=True)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1) + "\n")
    print()
    print("| target | point | host | IOPS | CPU µs / I/O, fio | CPU µs / I/O, machine less target "
          "| system calls / I/O |")
    print("|---|---|---|---:|---:|---:|---:|")
    for target in targets:
        for point in points:
            for host in hosts:
                rs = [r for r in results if (r["target"], r["point"], r["host"]) == (target, point["name"], host)]
                cells = []
                for k in ("iops", "cpu_us_per_io", "machine_cpu_us_per_io", "syscalls_per_io"):
                    values = [r[k] for r in rs if r[k] is not None]
                    digits = 0 if k == "iops" else 2
                    cells.append(f"{figure(median(values), digits)} [{figure(min(values), digits)}–"
                                 f"{figure(max(values), digits)}]" if values else "–")
                print(f"| {target} | {point['name']} | {host} | {' | '.join(cells)} |")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"tcp_side_by_side: {e}")
