#!/usr/bin/env python3
"""A randomized fault matrix through fio, over NVMe/RDMA (softverbs) or
NVMe/TCP: nvmeof-target faults on both (a target that drops every queue,
stops answering or ignores one I/O, an outage, a port down for good, the
target process killed, with or without a restart) and the transport's own:
over RDMA softverbs faults (a connection reset from either side, a NAK,
every message delayed), over TCP the target's TCP faults (a connection reset
after a command or in the middle of a transfer, a PDU cut short then a
stall or a FIN, a PDU with a bad type, HLEN, header or data digest, every
R2T or every completion delayed). Each is injected at random points
(message and command counts: during the connect, during the I/O, right
after an I/O completes, the last completion; a time for the kill), crossed
with QD 1 and 32, reconnect (ctrl_loss_tmo_ms) on and off, one and two
paths, and a host that runs flat out or (at QD 1) thinks 2 ms after each
I/O, idle between them; over TCP also the digests (digest_enable).
A round covers every fault of the transport x reconnect x pacing once, in
the seed's order; the CI form runs one round per transport.

Every run must end within its bound, from fio's start, named per case (the
same bounds over both transports):
  runtime          the calibrated clean run of the same job, twice, + 2 s
  io_timeout       + io_timeout_ms (a target that goes silent; twice where the
                   stall comes back after a reconnect: the re-sent I/O's too)
  connect_timeout  + connect_timeout_ms per path (silent during the connect)
  ctrl_loss_tmo    + ctrl_loss_tmo_ms + reconnect_delay_ms (reconnect on)
  fast_io_fail     + fast_io_fail_tmo_ms + reconnect_delay_ms (instead)
(the terms add up: a silent target with reconnect on gets both), and end
either clean (rc 0, every block written and read back verified, no job error)
or with a clear error (rc != 0 and an engine line naming the cause). A run
past its bound is killed (fio and every process under it) and fails the case;
rc 0 with missing I/O, a verify mismatch, or an error without an engine line
fails it too. Where the outcome is certain (a reconnect that must recover, a
fault without reconnect that must fail the job) the case also checks which
of the two it was.

  fault_matrix.py [--transport rdma|tcp|both] [--seed N] [--cases N | --soak MINUTES]
                  [--case I] [--build DIR]

The seed is printed first; --seed N reruns the same cases, --transport T
--seed N --case I case I alone. Each case prints one line (a failing one also
the commands to run it by hand and where its files are); the end prints, per
transport and bound kind, the worst time-to-end against its bound, then 'N
passed, N failed'. Run by hand, the programs are taken from --build (default:
build/ of this checkout) unless the meson test environment names them."""
import argparse
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def program_defaults(build):
    """What meson's test environment sets, for a run by hand."""
    build = Path(build).resolve()
    os.environ.setdefault("NVMEOF_ENGINE", str(build / "engine" / "libfio_nvmeof.so"))
    os.environ.setdefault("NVMEOF_TARGET_BIN", str(build / "target" / "nvmeof-target"))
    os.environ.setdefault("NVMEOF_SOFTVERBS_RUN", str(build / "softverbs" / "softverbs-run"))
    os.environ.setdefault("NVMEOF_JOBS_DIR", str(ROOT / "jobs"))
    os.environ.setdefault("NVMEOF_FIO", "fio")


def program_runner(transport):
    """What the target and fio run under (the e2e harness's rule: softverbs-run
    over RDMA, the sanitizer runtime first over TCP in a sanitizer build)."""
    import harness  # after program_defaults: it reads the environment on import
    return harness.softverbs_runner(transport)


# Timers of every job (short, for a CI run on two cores).
IO_TIMEOUT_MS = 2000
CONNECT_TIMEOUT_MS = 2000
CTRL_LOSS_TMO_MS = 2500
RECONNECT_DELAY_MS = 200
FAST_IO_FAIL_TMO_MS = 1000
SLACK_S = 2.0
SIZE = 2 * 1024 * 1024
SMALL_SIZE = 128 * 1024  # delay cases: every message is held
PACED_IOS = 96  # paced cases: writes (and as many reads) at QD 1, fio thinking
PACED_THINK_US = 2000  # after each I/O: the host idle between them
NQN = "nqn.2026-12.io.nvmeof:faults"

# Faults of nvmeof-target that mean the same over either transport.
TARGET_FAULTS = ["t-drop", "t-stop", "t-ignore-io", "t-outage", "t-port-down", "kill"]
FAULTS = {
    "rdma": ["sv-drop", "sv-drop-host", "sv-nak", "sv-delay"] + TARGET_FAULTS,
    # softverbs has no part over TCP: the target's TCP faults at the same
    # kinds of points instead (a reset, damaged or cut-short PDUs, delays).
    "tcp": ["t-reset", "t-reset-mid", "t-short-stall", "t-short-close", "t-corrupt-type",
            "t-corrupt-hlen", "t-corrupt-hdgst", "t-corrupt-ddgst", "t-r2t-delay", "t-delay"]
    + TARGET_FAULTS,
}
TRANSPORTS = list(FAULTS)
# The corrupt-pdu field of each t-corrupt-* fault, and the digest it needs.
CORRUPT_FIELDS = {"t-corrupt-type": "type", "t-corrupt-hlen": "hlen", "t-corrupt-hdgst": "hdgst",
                  "t-corrupt-ddgst": "ddgst"}
NEEDS_DIGEST = {"t-corrupt-hdgst": ("HEADER", "BOTH"), "t-corrupt-ddgst": ("DATA", "BOTH")}
DIGESTS = ["NONE", "HEADER", "DATA", "BOTH"]
# Faults that delay answers: instead of pacing, a delay longer or shorter than io_timeout.
DELAY_FAULTS = ("sv-delay", "t-delay", "t-r2t-delay")
# What each fault is, for --help and the case lines.
FAULT_TEXT = {
    "sv-drop": "(rdma) softverbs on the target side resets the first connection to send N messages",
    "sv-drop-host": "(rdma) softverbs on fio's side resets the first connection to send N messages",
    "sv-nak": "(rdma) softverbs on fio's side answers the Nth incoming RDMA WRITE with a NAK",
    "sv-delay": "(rdma) softverbs on the target side holds every message MS ms",
    "t-reset": "(tcp) nvmeof-target --fault reset-after=N: a RST after the Nth command's answer",
    "t-reset-mid": "(tcp) --fault reset-mid-transfer=N: a RST in the Nth I/O's data",
    "t-short-stall": "(tcp) --fault short-pdu=N:stall: the Nth I/O's first PDU cut short, then silence",
    "t-short-close": "(tcp) --fault short-pdu=N:close: the Nth I/O's first PDU cut short, then a FIN",
    "t-corrupt-type": "(tcp) --fault corrupt-pdu=N:type: the Nth I/O's first PDU of no known type",
    "t-corrupt-hlen": "(tcp) --fault corrupt-pdu=N:hlen: the Nth I/O's first PDU with a wrong HLEN",
    "t-corrupt-hdgst": "(tcp) --fault corrupt-pdu=N:hdgst: a bad header digest (header digests on)",
    "t-corrupt-ddgst": "(tcp) --fault corrupt-pdu=N:ddgst: the Nth I/O (a read) with a bad data "
                       "digest (data digests on)",
    "t-r2t-delay": "(tcp) --fault r2t-delay-ms=MS: every R2T MS ms late",
    "t-delay": "(tcp) --fault delay-ms=MS: every completion MS ms late",
    "t-drop": "nvmeof-target --fault drop-after=N",
    "t-stop": "nvmeof-target --fault stop-answering-after=N",
    "t-ignore-io": "nvmeof-target --fault ignore-io=N",
    "t-outage": "nvmeof-target --fault outage-after=N:MS",
    "t-port-down": "nvmeof-target --fault port-down-after=N:0",
    "kill": "SIGKILL of the target at a random time, perhaps restarted after MS ms",
}
# The queue failed with nothing in flight: the fault struck after the job's
# last command (message counts move with softverbs' batching, so a point
# drawn near the end of the calibrated run can land there).
IDLE_QUEUE_FAILURE = re.compile(r"queue failed [^\n]*[:;] 0 transfers held for a reconnect, 0 commands failed back")
ENGINE_CAUSE = re.compile(
    r"^nvmeof: .*(fail|timed out|timeout|ctrl_loss_tmo|fast_io_fail|ENOLINK|ENODEV|lost|"
    r"disconnect|refused|reject|unreachable|deadline|error)", re.I | re.M)
VERIFY_BAD = re.compile(r"verify: bad|verify failed|bad magic|bad header", re.I)
READY = re.compile(r"listening on (\S+):(\d+)")
ANNOUNCE = re.compile(r"^nvmeof: \S+: target .* I/O queue\(s\)", re.M)


PORTS = random.Random()  # not the seed's: ports are no part of a case


def free_ports(n=2):
    """Ports free now, below the kernel's ephemeral range (softverbs' own
    connections take ports from it, another process's too)."""
    ports = []
    while len(ports) < n:
        port = PORTS.randrange(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        if port not in ports:
            ports.append(port)
    return ports


def proc_stat(pid):
    """(ppid, CPU ticks) of a live process, or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), int(fields[11]) + int(fields[12])  # ppid, utime + stime


def process_tree(root):
    """root and its live descendants (fio's job processes call setsid(): a
    process group would miss them)."""
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = proc_stat(int(entry.name))
            if stat:
                children.setdefault(stat[0], []).append(int(entry.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    return tree


def tree_cpu_s(pids):
    ticks = sum((proc_stat(pid) or (0, 0))[1] for pid in pids)
    return ticks / os.sysconf("SC_CLK_TCK")


def kill_tree(proc):
    """SIGKILL to a process we started and to each of its descendants."""
    for pid in process_tree(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
    reaped(proc)


# Every process this script started and has not reaped: a signal to the
# script (meson's timeout, ^C) ends them too, they live in sessions of their own.
LIVE = set()


def spawn(*args, **kwargs):
    proc = subprocess.Popen(*args, start_new_session=True, **kwargs)
    LIVE.add(proc)
    return proc


def reaped(proc):
    LIVE.discard(proc)


def on_signal(signum, _frame):
    for proc in list(LIVE):
        kill_tree(proc)
    print(f"fault matrix: stopped by signal {signum}; its processes killed", flush=True)
    os._exit(128 + signum)


class Target:
    """nvmeof-target on fixed ports, in its own process group: over softverbs
    (rdma) or over the kernel's TCP (tcp: no softverbs-run)."""

    def __init__(self, wd, ports, namespace, transport, faults=(), sv_faults="", stats=None,
                 sv_stats=None):
        self.wd, self.ports, self.namespace = wd, ports, namespace
        runner = program_runner(transport)
        self.cmd = [*runner, os.environ["NVMEOF_TARGET_BIN"], "--transport", transport,
                    "--listen", "127.0.0.1"]
        for port in ports:
            self.cmd += ["--port", str(port)]
        self.cmd += ["--subsystem", NQN, "--namespace", namespace]
        if namespace.startswith("file:"):
            self.cmd += ["--size", "64M"]
        for fault in faults:
            self.cmd += ["--fault", fault]
        if stats:
            self.cmd += ["--stats", stats]
        self.env = {}
        if sv_faults:
            self.env["SOFTVERBS_FAULTS"] = sv_faults
        if sv_stats:
            self.env["SOFTVERBS_STATS"] = sv_stats
        self.log = []
        self.start()

    def start(self):
        self.proc = spawn(self.cmd, env=dict(os.environ, **self.env), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
        seen = 0
        deadline = time.monotonic() + 20
        while seen < len(self.ports) and time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not READY.search(line or ""):
                break
            seen += 1
        if seen < len(self.ports):
            kill_tree(self.proc)
            raise RuntimeError(f"nvmeof-target did not start: {self.proc.stderr.read()[-2000:]}")
        for stream in (self.proc.stdout, self.proc.stderr):
            threading.Thread(target=self._drain, args=(stream,), daemon=True).start()

    def _drain(self, stream):
        for line in stream:
            self.log.append((time.monotonic(), line.rstrip()))

    def kill(self):
        kill_tree(self.proc)

    def restart(self):
        """The same target again (same ports and namespace, no faults)."""
        faults_at = [i for i, a in enumerate(self.cmd) if a == "--fault"]
        for i in reversed(faults_at):
            del self.cmd[i:i + 2]
        self.env.pop("SOFTVERBS_FAULTS", None)
        self.start()

    def stop(self):
        """SIGTERM; a target that does not stop within 10 s is killed and said so."""
        if self.proc.poll() is not None:
            reaped(self.proc)
            return None
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
            reaped(self.proc)
            return None
        except subprocess.TimeoutExpired:
            kill_tree(self.proc)
            return "nvmeof-target did not stop within 10 s of SIGTERM"

    def command_line(self):
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return (env + " " if env else "") + shlex.join(self.cmd)


def job_text(c, ports):
    paths = ",".join(f"127.0.0.1:{p}" for p in ports[:c["paths"]])
    lines = [f"ioengine=external:{os.environ['NVMEOF_ENGINE']}", f"trtype={c['transport']}",
             *([f"digest_enable={c['digest']}"] if c["transport"] == "tcp" else []),
             f"traddr={paths}", f"subnqn={NQN}",
             "rw=randwrite", f"bs={c['bs']}", f"iodepth={c['qd']}", f"size={c['size']}",
             *([f"thinktime={PACED_THINK_US}"] if c["paced"] else []),
             "verify=crc32c", "verify_fatal=1", "verify_state_save=0",
             f"io_timeout_ms={IO_TIMEOUT_MS}", f"connect_timeout_ms={CONNECT_TIMEOUT_MS}"]
    if c["reconnect"]:
        lines += [f"ctrl_loss_tmo_ms={CTRL_LOSS_TMO_MS}", f"reconnect_delay_ms={RECONNECT_DELAY_MS}"]
        if c["fast_io_fail"]:
            lines.append(f"fast_io_fail_tmo_ms={FAST_IO_FAIL_TMO_MS}")
    return "[global]\n" + "\n".join(lines) + "\n[matrix]\n"


class Fio:
    def __init__(self, wd, job, transport, sv_faults="", sv_stats=None):
        self.env = {"ASAN_OPTIONS": ":".join(filter(None, [os.environ.get("ASAN_OPTIONS", ""),
                                                             "detect_leaks=0"]))}
        if sv_faults:
            self.env["SOFTVERBS_FAULTS"] = sv_faults
        if sv_stats:
            self.env["SOFTVERBS_STATS"] = sv_stats
        runner = program_runner(transport)
        self.cmd = [*runner, os.environ["NVMEOF_FIO"], "--output-format=json", str(job)]
        self.out, self.err = Path(wd) / "fio.out", Path(wd) / "fio.err"
        self.start = time.monotonic()
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.proc = spawn(self.cmd, env=dict(os.environ, **self.env), stdout=out, stderr=err,
                              cwd=wd)

    def wait(self, deadline):
        """(rc, seconds to end, None) or, past the deadline, fio and its job
        processes killed: (None, seconds, their CPU share over the last 0.5 s)."""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                reaped(self.proc)
                return self.proc.returncode, time.monotonic() - self.start, None
            time.sleep(0.02)
        elapsed = time.monotonic() - self.start
        # How busy the stuck processes are: their CPU over half a second.
        pids = process_tree(self.proc.pid)
        before = tree_cpu_s(pids)
        time.sleep(0.5)
        share = (tree_cpu_s(pids) - before) / 0.5
        kill_tree(self.proc)
        return None, elapsed, share

    def wait_announce(self, deadline):
        """Seconds from fio's start to the job's start-up line (its controller
        connected), or None when fio ends first or the deadline passes."""
        while time.monotonic() < deadline and self.proc.poll() is None:
            if ANNOUNCE.search(self.stderr()):
                return time.monotonic() - self.start
            time.sleep(0.005)
        return None

    def report(self):
        try:
            return json.loads(self.out.read_text())
        except (OSError, json.JSONDecodeError):
            return None

    def stderr(self):
        return self.err.read_text(errors="replace")

    def command_line(self):
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return f"(cd {self.out.parent} && {env} {shlex.join(self.cmd)})"


# ---------------------------------------------------------------- calibration

CALIBRATION = {}


def calibrate(c):
    """A clean run of this job shape: its duration, the commands the target
    saw and, over RDMA, the messages of the target's and fio's busiest
    connection (the I/O queue) and how many RDMA WRITEs into fio came before
    the I/O."""
    # Two paths add no message to the I/O queue and one or two admin commands:
    # calibrated on two. Over TCP with both digests, the slowest setting.
    rdma = c["transport"] == "rdma"
    key = (c["transport"], c["qd"], c["bs"], c["size"], c["paced"])
    if key in CALIBRATION:
        return CALIBRATION[key]
    wd = tempfile.mkdtemp(prefix="nvmeof-faults-cal-")
    for attempt in range(3):  # a port taken between the check and the target's bind
        ports = free_ports()
        try:
            t = Target(wd, ports, "ram:64M", c["transport"], stats=f"{wd}/target.json",
                       sv_stats=f"{wd}/sv-target.json" if rdma else None)
            break
        except RuntimeError as e:
            if "Address already in use" not in str(e) or attempt == 2:
                raise
    shape = dict(c, reconnect=False, fast_io_fail=False, paths=2, digest="BOTH")
    job = Path(wd) / "cal.fio"
    job.write_text(job_text(shape, ports))
    try:
        fio = Fio(wd, job, c["transport"], sv_stats=f"{wd}/sv-fio-%p.json" if rdma else None)
        announced = fio.wait_announce(time.monotonic() + 60)
        rc, took, _ = fio.wait(time.monotonic() + 60)
    finally:
        t.stop()
    if rc != 0:
        raise RuntimeError(f"calibration run failed (rc {rc}) in {wd}: {fio.stderr()[-2000:]}")

    stats = json.loads(Path(f"{wd}/target.json").read_text())["commands"]
    ios = c["size"] // parse_size(c["bs"])
    cal = {
        "seconds": took,
        "announced": announced if announced is not None else 0.0,
        "commands": sum(stats.values()),
        "io_commands": stats["read"] + stats["write"],
        "writes": stats["write"],
        "reads": ios,
    }
    if rdma:
        cal.update(softverbs_counts(wd, ios))
    shutil.rmtree(wd, ignore_errors=True)
    CALIBRATION[key] = cal
    messages = (f"I/O queue messages target {cal['target_msgs']} / fio {cal['host_msgs']}, "
                if rdma else "")
    print(f"calibrated {c['transport']} {shape_text(c)}: {took:.2f} s, {messages}"
          f"{cal['commands']} commands ({cal['io_commands']} I/O)", flush=True)
    return cal


def softverbs_counts(wd, ios):
    """The calibration's messages per connection, from softverbs' stats."""
    def messages(qp):
        return qp["sends"] + qp["writes"] + qp["reads"]
    target_qps = json.loads(Path(f"{wd}/sv-target.json").read_text())["qps"]
    host = [json.loads(p.read_text())["qps"] for p in Path(wd).glob("sv-fio-*.json")]
    job_qps = max(host, key=lambda qps: max(messages(q) for q in qps))
    io_qp = max(job_qps, key=messages)
    target_io = max(target_qps, key=messages)
    # The target's messages on the I/O queue, in order: the Connect's (its
    # data read, its answer), per write a data read (unless in the capsule)
    # and the answer, per read the data and the answer. Which of them answer
    # an I/O: at QD 1 (or paced) the host has nothing in flight after them.
    per_write, rest = divmod(messages(target_io) - 2 - 2 * ios, ios)
    completions = []
    if rest == 0 and per_write in (1, 2):
        completions = [2 + per_write * (k + 1) for k in range(ios)]
        completions += [2 + per_write * ios + 2 * (k + 1) for k in range(ios)]
    return {
        "target_msgs": messages(target_io),
        "target_admin_msgs": max(messages(q) for q in target_qps if q is not target_io),
        "host_msgs": messages(io_qp),
        "host_admin_msgs": max(messages(q) for qps in host for q in qps if q is not io_qp),
        "writes_in_before_io": sum(q["writes_in"] for q in job_qps if q is not io_qp),
        "completions": completions,
    }


def shape_text(c):
    return (f"qd={c['qd']} bs={c['bs']} size={c['size'] // 1024}k"
            + (f" thinktime={PACED_THINK_US}us" if c["paced"] else ""))


def parse_size(text):
    return int(text[:-1]) * 1024 if text.endswith("k") else int(text)


# ---------------------------------------------------------------- cases

def combos(transport):
    """A round: every fault of the transport, with reconnect on and off,
    paced and not (for the delays: a delay longer or shorter than io_timeout
    instead)."""
    return [(f, r, x) for f in FAULTS[transport] for r in (True, False) for x in (True, False)]


def make_case(seed, index, transport):
    """Case `index` of `seed` over `transport`: its fault, reconnect and
    pacing from a shuffled round over every combination, the rest drawn at
    random. (RDMA's cases are drawn as before the transport dimension, so
    its old seeds still name the same cases.)"""
    order = combos(transport)
    prefix = str(seed) if transport == "rdma" else f"{seed}/{transport}"
    random.Random(f"{prefix}/order/{index // len(order)}").shuffle(order)
    fault, reconnect, paced = order[index % len(order)]
    rng = random.Random(f"{prefix}/case/{index}")
    c = {"index": index, "transport": transport, "fault": fault, "reconnect": reconnect,
         "qd": rng.choice([1, 32]), "paths": rng.choice([1, 2]), "bs": rng.choice(["4k", "16k"]),
         "fast_io_fail": reconnect and rng.random() < 0.3, "size": SIZE,
         "u": rng.random(), "point": rng.choice(["random", "random", "idle", "idle", "last", "last", "start"]),
         "ms_u": rng.random(), "restart": rng.random() < 0.5, "paced": paced}
    if c["paced"]:
        # Idle between I/Os (at QD 32 fio would still keep some in flight),
        # and mostly faults right after a completion, while the host thinks.
        c["size"], c["qd"] = PACED_IOS * parse_size(c["bs"]), 1
        c["point"] = rng.choice(["idle", "idle", "idle", "random", "last", "start"])
    if fault in DELAY_FAULTS:
        c["size"], c["paced"], c["long"] = SMALL_SIZE, False, paced
    if fault == "sv-nak":
        c["bs"] = "4k"  # RDMA WRITEs into fio: the reads' data
    if fault == "t-r2t-delay":
        c["bs"] = "16k"  # above the capsule's 4 KiB: every write waits for its R2T
    # Over TCP the digests too: drawn, or one that has the digest the fault damages.
    c["digest"] = rng.choice(NEEDS_DIGEST.get(fault, DIGESTS)) if transport == "tcp" else "NONE"
    return c


def plan(c, cal, ports):
    """Concrete fault settings, the point's class (connect, io, end, never;
    run for a kill after the connect), the expected outcome (clean, error,
    either) and the bound."""
    u, last, start = c["u"], c["point"] == "last", c["point"] == "start"
    f = c["fault"]
    p = {"sv_target": "", "sv_host": "", "target": [], "kill_at": None, "restart_ms": None,
         "stall": False, "where": "io", "delay_ms": None}
    port_rule = f",port={ports[0]}" if c["paths"] == 2 else ""
    # times=1: the first connection to send N messages is reset, no other
    # (reconnects included). The admin connections send fewer than the I/O
    # queue: up to their count, the reset hits a connect.
    if f in ("sv-drop", "sv-drop-host"):
        side = "target" if f == "sv-drop" else "host"
        total, admin = cal[f"{side}_msgs"], cal[f"{side}_admin_msgs"]
        n = total if last else 1 + int(u * admin) if start else admin + 1 + int(u * (total - admin - 1))
        idle = [k for k in cal["completions"] if k > admin + 4]
        if c["point"] == "idle" and f == "sv-drop" and idle:
            n = idle[int(u * len(idle))]
        # Admin connections do not always send the same number of messages.
        p["where"] = "end" if n == total else "connect" if n <= admin + 4 else "io"
        rule = f"drop,after={n},times=1{port_rule}"
        p["sv_target" if f == "sv-drop" else "sv_host"] = rule
        p["what"] = f"{rule} of {total}"
    elif f == "sv-nak":
        # The admin queue's RDMA WRITEs (Identify, the ANA log page with two
        # paths or reconnect on) come first: one more or fewer than in the
        # calibration, so the points keep a WRITE away from the edges.
        first, count = cal["writes_in_before_io"] + 1, cal["reads"]
        if last:
            n = first + count - 2  # the last read or the one before
        elif start or count < 4:
            n = 1 + int(u * max(1, first - 2))
        else:
            n = first + 1 + int(u * (count - 3))
        p["where"] = "connect" if n < first else "io"  # a read in flight, the last one too
        p["sv_host"] = f"nak,op=write,nth={n}"
        p["what"] = f"{p['sv_host']} (I/O reads {first}..{first + count - 1} +-1)"
    elif f in DELAY_FAULTS:
        ms = IO_TIMEOUT_MS + 300 + int(c["ms_u"] * 700) if c["long"] else 5 + int(c["ms_u"] * 25)
        p["delay_ms"] = ms
        if f == "sv-delay":
            p["sv_target"] = f"delay,ms={ms}"
        else:
            p["target"] = [f"delay-ms={ms}" if f == "t-delay" else f"r2t-delay-ms={ms}"]
        p["stall"] = c["long"]
        # Every answer held (the Connect's too), or only the writes' R2Ts.
        p["where"] = "connect" if c["long"] and f != "t-r2t-delay" else "io"
        p["what"] = p["sv_target"] or p["target"][0]
    elif f in ("t-drop", "t-stop", "t-outage", "t-port-down", "t-reset"):
        # Commands: the admin ones of fio's two controllers (one opens the
        # file, one runs the job), the I/O, then the shutdown.
        total, first_io = cal["commands"], cal["commands"] - cal["io_commands"] - 2
        if last:
            n = total - 4 + int(u * 6)  # around the last I/O, the shutdown, past the end
        elif start:
            n = 1 + int(u * first_io)
        else:
            n = 1 + int(u * total)
        # The target runs every command it has received before it acts on a
        # count: at QD 32 a whole batch, the last I/O among them, may go first.
        # Where the I/O starts is an estimate (the shutdown's commands, one
        # path or two): a few commands either side count as the connect.
        p["where"] = ("connect" if n < first_io + 3 else "end" if n >= total - 4 - c["qd"] else "io")
        if n > total:
            p["where"] = "never"
        if f == "t-drop":
            p["target"] = [f"drop-after={n}"]
        elif f == "t-stop":
            p["target"] = [f"stop-answering-after={n}"]
            p["stall"] = True
        elif f == "t-outage":
            limit = FAST_IO_FAIL_TMO_MS if c["fast_io_fail"] else CTRL_LOSS_TMO_MS
            ms = 300 + int(c["ms_u"] * (limit + 1200))
            p["outage_ms"] = ms
            p["target"] = [f"outage-after={n}:{ms}"]
        elif f == "t-reset":
            p["target"] = [f"reset-after={n}"]
        else:
            p["target"] = [f"port-down-after={n}:0"]
        p["what"] = f"{p['target'][0]} of {total} commands (I/O from ~{first_io})"
    elif f == "t-corrupt-ddgst":
        # A read's data (the writes come first): only a C2HData has a data digest.
        writes, reads = cal["writes"], cal["reads"]
        n = writes + (reads if last else 1 if start else 1 + int(u * (reads - 1)))
        p["target"] = [f"corrupt-pdu={n}:ddgst"]
        p["what"] = f"{p['target'][0]} of {cal['io_commands']} I/O commands (reads from {writes + 1})"
    elif f in ("t-ignore-io", "t-reset-mid", "t-short-stall", "t-short-close") or f in CORRUPT_FIELDS:
        # The Nth I/O command: its answer lost, cut off by a RST, cut short or damaged.
        n = cal["io_commands"] if last else 1 if start else 1 + int(u * (cal["io_commands"] - 1))
        spec = {"t-ignore-io": f"ignore-io={n}", "t-reset-mid": f"reset-mid-transfer={n}",
                "t-short-stall": f"short-pdu={n}:stall", "t-short-close": f"short-pdu={n}:close"}
        p["target"] = [spec[f] if f in spec else f"corrupt-pdu={n}:{CORRUPT_FIELDS[f]}"]
        p["stall"] = f in ("t-ignore-io", "t-short-stall")
        p["what"] = f"{p['target'][0]} of {cal['io_commands']} I/O commands"
    elif f == "kill":
        # Timed from the job's start-up line (its controller connected) over
        # the clean run's I/O; 'start': from fio's start, during the connect.
        window = cal["seconds"] - cal["announced"]
        if start:
            p["kill_at"], p["kill_from"] = u * cal["announced"], "start"
            p["where"] = "connect"
        else:
            low, high = (0.9, 1.1) if last else (0.0, 0.9)
            p["kill_at"], p["kill_from"] = (low + u * (high - low)) * window, "announce"
            # The I/O lasts a fraction of a second: whether the kill lands in it
            # or after it is the machine's to say.
            p["where"] = "run"
        if c["restart"]:
            p["restart_ms"] = 200 + int(c["ms_u"] * 1300)
        p["what"] = (f"SIGKILL {p['kill_at']:.2f} s after "
                     + ("fio's start" if start else f"the job's connect (I/O {window:.2f} s clean)")
                     + (f", restarted {p['restart_ms']} ms later" if c["restart"] else ", for good"))
    p["expect"] = expect(c, p)
    # The bound, from fio's start.
    base = 2 * cal["seconds"] + SLACK_S
    terms, kind = [f"2 x clean {cal['seconds']:.1f}", f"slack {SLACK_S:.0f}"], "runtime"
    extra_ms = 0
    if p["stall"] and p["where"] == "connect":
        # A silent target during the connect: each path's connect deadline.
        extra_ms += CONNECT_TIMEOUT_MS * c["paths"]
        terms.append(f"connect_timeout {CONNECT_TIMEOUT_MS / 1000:g} x {c['paths']} path(s)")
        kind = "connect_timeout"
    elif p["stall"]:
        extra_ms += IO_TIMEOUT_MS
        terms.append(f"io_timeout {IO_TIMEOUT_MS / 1000:g}")
        kind = "io_timeout"
        if f == "t-r2t-delay" and c["reconnect"]:
            # The reconnect succeeds and the stall comes back with the re-sent
            # I/O: its deadline too (timing out again, it fails).
            extra_ms += IO_TIMEOUT_MS
            terms.append(f"io_timeout {IO_TIMEOUT_MS / 1000:g} again (re-sent)")
    if f in DELAY_FAULTS and not c["long"]:
        # Every message (every answer, every R2T) held: the clean run scaled
        # by the delay per message.
        held_msgs = {"sv-delay": cal.get("target_msgs"), "t-delay": cal["commands"],
                     "t-r2t-delay": cal["writes"]}[f]
        held = (held_msgs + 40) * p["delay_ms"] / 1000 / min(c["qd"], 4)
        base += held
        terms.append(f"delays {held:.1f}")
    if c["reconnect"]:
        limit = FAST_IO_FAIL_TMO_MS if c["fast_io_fail"] else CTRL_LOSS_TMO_MS
        extra_ms += limit + RECONNECT_DELAY_MS
        name = "fast_io_fail" if c["fast_io_fail"] else "ctrl_loss_tmo"
        terms.append(f"{name} {limit / 1000:g} + reconnect_delay {RECONNECT_DELAY_MS / 1000:g}")
        if kind == "runtime":
            kind = name
    if p["restart_ms"] is not None:
        extra_ms += p["restart_ms"]
        terms.append(f"restart {p['restart_ms'] / 1000:g}")
    p["bound"] = base + extra_ms / 1000
    p["kind"] = kind
    p["terms"] = " + ".join(terms)
    return p


def expect(c, p):
    """clean, error or either: 'either' wherever the outcome depends on timing
    or on which command the point lands (connect, the shutdown)."""
    f, where, reconnect = c["fault"], p["where"], c["reconnect"]
    if where == "never":
        return "clean"
    if where in ("connect", "end") and f not in DELAY_FAULTS:
        return "either"
    if f in DELAY_FAULTS:
        return "error" if c["long"] else "clean"
    if f == "t-stop":
        return "error"
    if f == "t-corrupt-ddgst":
        # The queue lives on: the read fails (Data Transfer Error), reconnect or not.
        return "error"
    # A lost connection, or a lost or damaged answer that ends its queue: a
    # reconnect re-sends what was in flight.
    if f in ("sv-drop", "sv-drop-host", "sv-nak", "t-drop", "t-ignore-io", "t-reset", "t-reset-mid",
             "t-short-stall", "t-short-close") or f in CORRUPT_FIELDS:
        return "clean" if reconnect else "error"
    if f == "t-outage":
        if not reconnect:
            return "error"
        limit = FAST_IO_FAIL_TMO_MS if c["fast_io_fail"] else CTRL_LOSS_TMO_MS
        if p["outage_ms"] + RECONNECT_DELAY_MS + 700 < limit:
            return "clean"
        return "error" if p["outage_ms"] > limit + 700 else "either"
    if f == "t-port-down":
        return "clean" if reconnect and c["paths"] == 2 else "error"
    if f == "kill":
        # A restart later than fast_io_fail_tmo fails I/Os until the reconnect;
        # killed for good, or without reconnect, the job may have ended first.
        if reconnect and p["restart_ms"] is not None and not c["fast_io_fail"]:
            return "clean"
        return "either"
    return "either"


def describe(c, p):
    digest = f" digest={c['digest']}" if c["transport"] == "tcp" else ""
    return (f"{c['fault']} {p['what']} [{c['point']} point: {p['where']}] {shape_text(c)}{digest} "
            f"paths={c['paths']} reconnect={'on' if c['reconnect'] else 'off'}"
            + (" fast_io_fail=on" if c["fast_io_fail"] else "") + f" expect={p['expect']}")


def run_case(seed, c, keep=False):
    cal = calibrate(c)
    wd = tempfile.mkdtemp(prefix=f"nvmeof-faults-{c['transport']}-{c['index']}-")
    for attempt in range(3):  # a port taken between the check and the target's bind
        ports = free_ports()
        p = plan(c, cal, ports)
        namespace = f"file:{wd}/ns.img" if p["restart_ms"] is not None else "ram:64M"
        try:
            t = Target(wd, ports[:c["paths"]], namespace, c["transport"], faults=p["target"],
                       sv_faults=p["sv_target"])
            break
        except RuntimeError as e:
            if "Address already in use" not in str(e) or attempt == 2:
                raise
    job = Path(wd) / "matrix.fio"
    job.write_text(job_text(c, ports))
    target_cmd = t.command_line()
    fio = Fio(wd, job, c["transport"], sv_faults=p["sv_host"])
    deadline = fio.start + p["bound"]
    problems = []
    try:
        rc, took, cpu = run_with_kill(fio, t, p, deadline)
    finally:
        stop_problem = t.stop()
    if stop_problem:
        problems.append(stop_problem)
    err = fio.stderr()
    report = fio.report()
    outcome, ok, why = judge(c, p, rc, report, err, cpu)
    if problems:
        ok, why = False, "; ".join([why] + problems) if why else "; ".join(problems)
    line = (f"case {c['transport']}/{c['index']} seed {seed}: {'PASS' if ok else 'FAIL'} {outcome}"
            + (f" ({why})" if why else "")
            + f"; ended {took:.1f} s / bound {p['bound']:.1f} s ({p['kind']}) -- {describe(c, p)}")
    print(line, flush=True)
    if not ok:
        print(f"  rerun: {Path(__file__).name} --transport {c['transport']} --seed {seed} --case {c['index']}")
        print(f"  bound: {p['terms']} = {p['bound']:.1f} s")
        print(f"  target: {target_cmd}")
        print(f"  fio:    {fio.command_line()}")
        print(f"  files:  {wd}")
        print("  job:    " + job.read_text().replace("\n", "\n          ").rstrip())
        tail = [l for l in err.splitlines() if l.strip()][-8:]
        print("  fio stderr (last lines):\n    " + "\n    ".join(tail))
        tlog = [l for _, l in t.log if "fault" in l or "disconnect" in l][-6:]
        if tlog:
            print("  target:\n    " + "\n    ".join(tlog))
        sys.stdout.flush()
    elif not keep:
        shutil.rmtree(wd, ignore_errors=True)
    return ok, p["kind"], took, p["bound"]


def run_with_kill(fio, t, p, deadline):
    """Waits for fio; kills (and maybe restarts) the target on the way."""
    if p["kill_at"] is not None:
        since = fio.start
        if p["kill_from"] == "announce":
            at = fio.wait_announce(deadline)
            since = fio.start + at if at is not None else time.monotonic()
        kill_time = since + p["kill_at"]
        while time.monotonic() < kill_time and fio.proc.poll() is None:
            time.sleep(0.01)
        t.kill()
        if p["restart_ms"] is not None:
            time.sleep(p["restart_ms"] / 1000)
            t.restart()
    return fio.wait(deadline)


def judge(c, p, rc, report, err, cpu):
    """(outcome, ok, why)."""
    if rc is None:
        return "hang", False, (f"did not end within the bound; killed; fio's processes were using {cpu:.0%} of a core")
    if VERIFY_BAD.search(err):
        return "verify-mismatch", False, "fio found data that does not verify"
    if rc == 0:
        if report is None:
            return "clean?", False, "rc 0 but stdout is not fio's JSON report"
        jobs = report.get("jobs", [])
        errors = [j["error"] for j in jobs if j.get("error")]
        writes = sum(j["write"]["total_ios"] for j in jobs)
        reads = sum(j["read"]["total_ios"] for j in jobs)
        want = c["size"] // parse_size(c["bs"])
        if errors:
            return "clean?", False, f"rc 0 with job errors {errors}"
        if writes == 0 and reads == 0:
            return "no-io", False, "rc 0 and no I/O"
        if writes != want or reads != want:
            return "partial", False, f"rc 0 but {writes} writes / {reads} verified reads of {want}"
        if p["expect"] == "error":
            if IDLE_QUEUE_FAILURE.search(err):
                return "clean", True, "the fault struck after the last command (nothing in flight)"
            return "clean", False, "the job should have failed"
        return "clean", True, ""
    cause = ENGINE_CAUSE.search(err)
    if not cause:
        return f"error rc {rc}", False, "no engine line naming the cause"
    outcome = f"error rc {rc}"
    if p["expect"] == "clean":
        return outcome, False, f"should have recovered; engine said: {cause.group(0)[:160]}"
    return outcome, True, cause.group(0)[:100]


def main():
    faults = "\n".join(f"  {name:15} {text}" for name, text in FAULT_TEXT.items())
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="faults:\n" + faults)
    ap.add_argument("--transport", choices=TRANSPORTS + ["both"], default="rdma",
                    help="rdma (over softverbs, the default), tcp, or both (rdma's cases, then tcp's)")
    ap.add_argument("--seed", type=int, default=None, help="the run to reproduce (default: a random one)")
    ap.add_argument("--cases", type=int, default=None,
                    help="cases to run per transport (default: one round, every fault x reconnect x "
                         "pacing: " + ", ".join(f"{len(combos(t))} cases over {t}" for t in TRANSPORTS) + ")")
    ap.add_argument("--soak", type=float, metavar="MINUTES", help="run cases until MINUTES have passed")
    ap.add_argument("--case", type=int, action="append", help="run only this case (repeatable)")
    ap.add_argument("--build", default=str(ROOT / "build"), help="where the programs are, run by hand")
    ap.add_argument("--keep", action="store_true", help="keep the work folder of passing cases too")
    args = ap.parse_args()
    program_defaults(args.build)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    transports = TRANSPORTS if args.transport == "both" else [args.transport]
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    print(f"fault matrix: seed {seed} over {' and '.join(transports)} "
          f"(rerun: {Path(__file__).name} --transport {args.transport} --seed {seed})", flush=True)
    started = time.monotonic()
    if args.case:
        cases = ((t, i) for t in transports for i in args.case)
    elif args.soak:
        end = started + args.soak * 60

        def soak():
            i = 0
            while True:
                for t in transports:
                    if time.monotonic() >= end:
                        return
                    yield t, i
                i += 1
        cases = soak()
    else:
        cases = ((t, i) for t in transports for i in range(args.cases or len(combos(t))))
    passed = failed = 0
    worst = {}
    failures = []
    for transport, i in cases:
        c = make_case(seed, i, transport)
        try:
            ok, kind, took, bound = run_case(seed, c, args.keep)
        except RuntimeError as e:
            print(f"case {transport}/{i} seed {seed}: FAIL setup: {e}", flush=True)
            ok, kind, took, bound = False, "setup", 0.0, 0.0
        if ok:
            passed += 1
        else:
            failed += 1
            failures.append(f"{transport}/{i}")
        key = (transport, kind)
        if kind != "setup" and (key not in worst or took / bound > worst[key][0] / worst[key][1]):
            worst[key] = (took, bound, i)
    print(f"{passed + failed} runs in {time.monotonic() - started:.0f} s; worst time-to-end per bound kind:")
    for (transport, kind), (took, bound, i) in sorted(worst.items()):
        print(f"  {transport:4} {kind:14} {took:5.1f} s of {bound:5.1f} s ({took / bound:.0%}, case {i})")
    if failures:
        print(f"failed cases (seed {seed}): {' '.join(failures)}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
