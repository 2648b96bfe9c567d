"""Asymmetric namespace access through fio (issue 14), over softverbs, or
over NVMe/TCP with NVMEOF_E2E_TRANSPORT=tcp (the same cases): the target
turns the port in use inaccessible mid-run and the job moves to the other
port; the first path down, or inaccessible, at start. Run one case:
fio_ana.py NAME."""
import harness as h
from fio_reconnect import Fio, job_file, kill, launch, outages


def finish_clean(fio, proc):
    try:
        rc, report, err = fio.finish()
    finally:
        kill(proc)
    h.check(report is not None, f"fio's stdout is not one JSON report:\n{err[-3000:]}")
    h.check(rc == 0 and not h.job_errors(report),
            f"fio failed (rc {rc}, {h.job_errors(report)}):\n{err[-3000:]}")
    t = h.totals(report)
    h.check(t["read"]["ios"] > 0 and t["write"]["ios"] > 0, f"no I/O: {t}")
    return err, t


def test_ana_move():
    """randrw verify on two ports; after 3000 commands the target makes port 0
    inaccessible (an ANA change notice, then path errors for its I/O): the job
    moves to port 1 with 0 errors, verify clean, and the log says why."""
    wd = h.workdir()
    proc, ports = launch(wd, [0, 0], "ram:64M", ["--fault", "ana-change-after=3000:0:inaccessible"])
    paths = ",".join(f"127.0.0.1:{p}" for p in ports)
    job = job_file(wd, "ana", "ctrl_loss_tmo_ms=20000\nreconnect_delay_ms=200\nio_timeout_ms=5000",
                   paths, runtime=6)
    err, t = finish_clean(Fio(job), proc)
    h.check(len(outages(err)) == 1, f"expected one move:\n{err[-3000:]}")
    h.check(f"on 127.0.0.1:{ports[1]}" in err, f"the job did not move to the second path:\n{err[-3000:]}")
    h.check(f"127.0.0.1:{ports[0]} is ANA inaccessible" in err or "path-related status (SCT 3)" in err,
            f"the log does not say the path became inaccessible:\n{err[-3000:]}")
    print(f"moved from port {ports[0]} to {ports[1]} after the ANA change; outage {outages(err)} ms; "
          f"{t['read']['ios']} reads verified")


def test_first_path_down():
    """Port 0 never listens (port-down-after=0:0): the job, without
    ctrl_loss_tmo, connects through the second path and runs clean."""
    wd = h.workdir()
    proc, ports = launch(wd, [0, 0], "ram:64M", ["--fault", "port-down-after=0:0"])
    paths = ",".join(f"127.0.0.1:{p}" for p in ports)
    job = job_file(wd, "down", "io_timeout_ms=5000", paths, runtime=3)
    err, t = finish_clean(Fio(job), proc)
    h.check(f"path 127.0.0.1:{ports[0]} failed" in err and "trying the next path" in err,
            f"the log does not say the first path was skipped:\n{err[-3000:]}")
    print(f"port {ports[0]} down at start; ran on {ports[1]}: {t['write']['ios']} writes")


def test_first_path_inaccessible():
    """Port 0 is ANA inaccessible from the start: the job takes port 1."""
    wd = h.workdir()
    proc, ports = launch(wd, [0, 0], "ram:64M", ["--ana-state", "0:inaccessible"])
    paths = ",".join(f"127.0.0.1:{p}" for p in ports)
    job = job_file(wd, "inaccessible", "io_timeout_ms=5000", paths, runtime=3)
    err, t = finish_clean(Fio(job), proc)
    h.check(f"127.0.0.1:{ports[0]} is ANA inaccessible; trying the next path" in err,
            f"the log does not say why port 0 was skipped:\n{err[-3000:]}")
    print(f"port {ports[0]} inaccessible; ran on {ports[1]}: {t['write']['ios']} writes")


TESTS = {
    "ana-move": test_ana_move,
    "first-path-down": test_first_path_down,
    "first-path-inaccessible": test_first_path_inaccessible,
}

if __name__ == "__main__":
    h.run_named(TESTS)
