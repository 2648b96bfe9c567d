#!/usr/bin/env python3
"""fio with DH-HMAC-CHAP against nvmeof-target over softverbs (or NVMe/TCP
with NVMEOF_E2E_TRANSPORT=tcp, the same cases): uni- and
bidirectional authentication with each hash and a few DH groups (data
verified, every queue authenticated), the key from a file, and the failures:
a wrong host key (the controller's reason named), a wrong controller key, no
key for a target that requires one, a malformed key refused before anything
connects. Secrets are made here the way nvme-cli's gen-dhchap-key makes them.
One test per invocation: `fio_auth.py TEST`."""
import base64
import os
import struct
import zlib

import harness as h
from harness import check

HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:8f9e0d1c-2b3a-4c5d-9e8f-0a1b2c3d4e5f"


def secret(hh, length, seed):
    key = bytes((seed * 37 + i * 11) & 0xFF for i in range(length))
    return f"DHHC-1:{hh:02d}:{base64.b64encode(key + struct.pack('<I', zlib.crc32(key))).decode()}:"


def job_text(dhchap_lines):
    return """[global]
{TARGET}hostnqn=""" + HOSTNQN + """
nr_io_queues=2
rw=randwrite
bs=4k
size=2m
iodepth=8
verify=crc32c
verify_fatal=1
do_verify=1
verify_state_save=0
""" + dhchap_lines + """[auth]
"""


def run(target_extra, dhchap_lines):
    wd = h.workdir()
    job = wd + "/auth.fio"
    h.write_job(job, job_text(dhchap_lines))
    with h.target(wd, extra=target_extra) as t:
        proc, result = h.run_fio(job, t, timeout=120)
        target_log = t.stop()
    return proc, result, target_log


def expect_success(hash_name, group, hh, bidirectional):
    host_key = secret(hh, {0: 32, 1: 32, 2: 48, 3: 64}[hh], 1)
    extra = ["--dhchap-key", f"{HOSTNQN}={host_key}", "--dhchap-hash", hash_name,
             "--dhchap-dhgroup", group]
    lines = f"dhchap_secret={host_key}\n"
    if bidirectional:
        ctrl_key = secret(0, 48, 2)
        extra += ["--dhchap-ctrl-key", f"{HOSTNQN}={ctrl_key}"]
        lines += f"dhchap_ctrl_secret={ctrl_key}\n"
    proc, result, log = run(extra, lines)
    check(proc.returncode == 0 and result is not None,
          f"fio failed (rc {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}\n{log}")
    check(not h.job_errors(result), f"job errors: {h.job_errors(result)}")
    written = h.totals(result)["write"]["bytes"]
    check(written == 2 * 1024 * 1024, f"fio wrote {written} bytes, not 2 MiB")
    authenticated = sorted({line.split(" on qid ")[1].split()[0]
                            for line in log.splitlines() if "authenticated on qid" in line})
    check(authenticated == ["0", "1", "2"],
          f"expected queues 0, 1 and 2 authenticated, the target logged {authenticated}:\n{log}")
    print(f"{hash_name}/{group}{' bidirectional' if bidirectional else ''}: wrote and verified "
          f"{written} B; queues {authenticated} authenticated")


def expect_failure(target_extra, lines, wanted, target_wanted=None):
    proc, result, log = run(target_extra, lines)
    output = proc.stdout + proc.stderr
    check(proc.returncode != 0, f"fio succeeded, expected a failure with {wanted!r}")
    check(wanted in output, f"fio's error does not say {wanted!r}:\n{output[-3000:]}")
    if target_wanted:
        check(target_wanted in log, f"the target log does not say {target_wanted!r}:\n{log}")
    line = next((l for l in output.splitlines() if wanted in l), "")
    print(f"failed as expected: {line.strip()}")


def test_wrong_key():
    expect_failure(["--dhchap-key", f"{HOSTNQN}={secret(1, 32, 1)}"],
                   f"dhchap_secret={secret(1, 32, 9)}\n",
                   "the controller refused authentication: authentication failed (wrong key?) "
                   "(reason code 0x01, explanation 0x01)",
                   "the host's response does not match its key")


def test_wrong_controller_key():
    key = secret(2, 48, 1)
    expect_failure(["--dhchap-key", f"{HOSTNQN}={key}", "--dhchap-ctrl-key",
                    f"{HOSTNQN}={secret(0, 32, 3)}"],
                   f"dhchap_secret={key}\ndhchap_ctrl_secret={secret(0, 32, 4)}\n",
                   "does not match dhchap_ctrl_secret (wrong controller key?)",
                   "the host aborted authentication")


def test_no_key():
    expect_failure(["--dhchap-key", f"{HOSTNQN}={secret(1, 32, 1)}"], "",
                   "the target requires in-band authentication (DH-HMAC-CHAP) and no "
                   "dhchap_secret is set")


def test_malformed_key():
    bad = secret(1, 32, 1)
    bad = bad[:12] + ("B" if bad[12] == "A" else "A") + bad[13:]
    expect_failure([], f"dhchap_secret={bad}\n", "dhchap_secret: secret CRC-32 does not match")


def test_key_file():
    key = secret(3, 64, 5)
    wd = h.workdir()
    path = os.path.join(wd, "host.key")
    with open(path, "w") as f:
        f.write(key + "\n")
    os.chmod(path, 0o600)
    proc, result, log = run(["--dhchap-key", f"{HOSTNQN}={key}"], f"dhchap_secret=@{path}\n")
    check(proc.returncode == 0 and result is not None and not h.job_errors(result),
          f"fio failed with dhchap_secret=@file (rc {proc.returncode}):\n{proc.stderr[-2000:]}\n{log}")
    print("dhchap_secret=@file: authenticated and verified")


TESTS = {
    "uni-sha256-null": lambda: expect_success("sha256", "null", 1, False),
    "uni-sha384-ffdhe2048": lambda: expect_success("sha384", "ffdhe2048", 2, False),
    "uni-sha512-ffdhe4096": lambda: expect_success("sha512", "ffdhe4096", 3, False),
    "bi-sha256-ffdhe3072": lambda: expect_success("sha256", "ffdhe3072", 0, True),
    "bi-sha384-null": lambda: expect_success("sha384", "null", 2, True),
    "bi-sha512-ffdhe2048": lambda: expect_success("sha512", "ffdhe2048", 3, True),
    "key-file": test_key_file,
    "wrong-key": test_wrong_key,
    "wrong-controller-key": test_wrong_controller_key,
    "no-key": test_no_key,
    "malformed-key": test_malformed_key,
}

if __name__ == "__main__":
    h.run_named(TESTS)
