"""Connect/close cycles against one target leave both processes as they were:
what a service does for every reconnect, thousands of times in one process.
Memory (VmRSS) and open descriptors of the host (this process) and of the target
are taken after a warm-up, so allocator pools and lazily created state are in
place, and again at the end. Run apart from the API tests (meson test
python_leak): it takes a while."""
import os
import time

import nvmeof

from conftest import start_target

WARM_UP = 200
CYCLES = 2000
# Measured after the warm-up: the host's heap moves by up to 200 KiB (its
# high-water mark, not growth: a 6,000-cycle run stays flat), the target by a
# few pages. A record kept per QP and CQ (about 0.5 KiB per controller) grew
# each by more than 1 MiB.
MAX_GROWTH_KIB = 512
# Under a sanitizer build softverbs-run preloads its runtime: ASan keeps freed
# memory in a quarantine and TSan grows shadow memory, so RSS says nothing there
# and only descriptors are compared.
RSS_MEANINGFUL = not any(lib in os.environ.get("LD_PRELOAD", "") for lib in ("libasan", "libtsan"))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def settled_fds(pid):
    """A connection's descriptors close a little after close() returns (the
    target and both softverbs engines tear down asynchronously), so a count is
    the lowest seen over a short quiet spell: a leaked descriptor stays in it."""
    lowest = open_fds(pid)
    for _ in range(50):
        time.sleep(0.01)
        lowest = min(lowest, open_fds(pid))
    return lowest


def sample(target_pid):
    fds = (settled_fds(os.getpid()), settled_fds(target_pid))
    return {"host_rss": rss_kib(os.getpid()), "target_rss": rss_kib(target_pid),
            "host_fds": fds[0], "target_fds": fds[1]}


def test_connect_close_cycles_keep_both_processes_flat():
    with start_target() as target:
        pid = target.proc.pid  # softverbs-run execs the target

        def cycle():
            controller = nvmeof.Controller.connect(target.address, target.nqn, port=target.port)
            controller.close()

        start = time.monotonic()
        for _ in range(WARM_UP):
            cycle()
        before = sample(pid)
        for _ in range(WARM_UP, CYCLES):
            cycle()
        after = sample(pid)
        took = time.monotonic() - start
        print(f"\n{CYCLES} connect/close cycles in {took:.1f} s ({took * 1000 / CYCLES:.2f} ms each)")
        for side in ("host", "target"):
            rss0, rss1 = before[f"{side}_rss"], after[f"{side}_rss"]
            print(f"{side}: VmRSS {rss0} -> {rss1} KiB ({rss1 - rss0:+d}), "
                  f"fds {before[f'{side}_fds']} -> {after[f'{side}_fds']}")
        grown = CYCLES - WARM_UP
        if RSS_MEANINGFUL:
            assert after["host_rss"] - before["host_rss"] < MAX_GROWTH_KIB, f"the host grew over {grown} cycles"
            assert after["target_rss"] - before["target_rss"] < MAX_GROWTH_KIB, f"the target grew over {grown} cycles"
        assert after["host_fds"] == before["host_fds"]
        assert after["target_fds"] == before["target_fds"]
