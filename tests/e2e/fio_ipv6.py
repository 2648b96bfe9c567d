#!/usr/bin/env python3
"""The quickstart job over IPv6 loopback: nvmeof-target listens on ::1 under
softverbs (or over NVMe/TCP, the kernel's TCP over IPv6, with
NVMEOF_E2E_TRANSPORT=tcp) and fio reaches it with NVMEOF_TRADDR=::1 (and the
bracketed [::1]); every block verifies, the engine's start-up line names
[::1] and the transport, and the target's counters equal fio's totals.
One test per invocation: `fio_ipv6.py TEST`."""

import harness as h
from harness import check


def run_quickstart(traddr):
    wd = h.workdir()
    with h.target(wd, extra=["--listen", "::1"]) as t:
        check(t.address == "[::1]", f"the target announced {t.address!r}, not [::1]")
        proc, result = h.run_fio(h.shortened_job("quickstart.fio", wd), t,
                                 extra_env={"NVMEOF_TRADDR": traddr})
        stderr = t.stop()
    check(proc.returncode == 0 and result is not None,
          f"fio failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}\n{stderr[-2000:]}")
    check(not h.job_errors(result), f"job errors: {h.job_errors(result)}")
    check(f"target [::1]:{t.port} over {t.transport} " in proc.stderr + proc.stdout,
          f"the start-up line does not name [::1]:{t.port} over {t.transport}:\n{proc.stderr[-2000:]}")
    sums = h.totals(result)
    stats = t.stats()
    check(sums["write"]["bytes"] > 0 and sums["read"]["bytes"] == sums["write"]["bytes"],
          f"quickstart did not write and verify everything: {sums}")
    check(stats["bytes"]["write"] == sums["write"]["bytes"] and stats["bytes"]["read"] == sums["read"]["bytes"],
          f"target bytes {stats['bytes']} differ from fio's {sums}")
    print(f"traddr={traddr}: quickstart wrote and verified {sums['write']['bytes']} B over IPv6 loopback "
          f"({t.transport})")


TESTS = {
    "quickstart": lambda: run_quickstart("::1"),
    "quickstart-bracketed": lambda: run_quickstart("[::1]"),
}

if __name__ == "__main__":
    h.run_named(TESTS)
