"""Stock fio's own `rdma` engine over softverbs: the bare transport's floor
next to the nvmeof engine (no NVMe-oF, no target; one RDMA operation per
I/O, as fio's rdma engine does it). A point runs a fio rdma server on a free
loopback port and the point's fio job as its client; the server serves one
client and exits."""
import random
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

SERVER_START_S = 20
SERVER_EXIT_S = 30


class ServerError(Exception):
    pass


def free_port():
    """A free loopback port below the kernel's ephemeral range: a port the
    kernel handed out (bind to 0) could be taken again, before fio binds it,
    by a parallel test's outgoing connection or `--port 0` listener."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
    for _ in range(100):
        port = random.randrange(10000, low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise ServerError(f"no free port between 10000 and {low}")


@contextmanager
def server(tools, point, workdir):
    """fio's rdma engine as server (rw=read) for the point's block size and
    queue depth; yields its port once it listens."""
    port = free_port()
    log = Path(workdir) / f"rdma-server-{port}.log"
    cmd = [tools.softverbs_run, tools.fio, "--name=server", "--ioengine=rdma", f"--port={port}", "--rw=read",
           f"--bs={point.params['bs']}", f"--iodepth={point.params['iodepth']}", "--size=64m",
           f"--output={log}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        _wait_listening(port, proc, log)
        yield port
        try:
            proc.wait(timeout=SERVER_EXIT_S)
        except subprocess.TimeoutExpired:
            pass  # killed below; the client's report is what counts
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _wait_listening(port, proc, log):
    # softverbs listens on the TCP port of the same number; a bare TCP
    # connection is dropped by it without harm.
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    text = log.read_text().strip()[-500:] if log.exists() else ""
    raise ServerError(f"fio's rdma server on port {port} did not listen: {text or 'no output'}")


def job_text(point, port, runtime_s, ramp_s, common_lines):
    """The client's job file: fio's rdma engine to the server's port, the
    point's axes and options (not nr_io_queues, an nvmeof option)."""
    lines = ["[global]", "ioengine=rdma", "hostname=127.0.0.1", f"port={port}"]
    lines += common_lines(point, runtime_s, ramp_s, skip=("nr_io_queues",))
    return "\n".join(lines) + "\n"
