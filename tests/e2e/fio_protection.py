#!/usr/bin/env python3
"""fio on namespaces with metadata and protection information (PI), with SPDK's
plugin's options (pi_act, pi_chk, apptag, apptag_mask, md_per_io_size), against
nvmeof-target's 512+8, 4096+8 and 4096+64 (64-bit guard) type 1 namespaces.
Each test is one or a few fio runs whose job sections cover the combinations.
Over softverbs, or over NVMe/TCP with NVMEOF_E2E_TRANSPORT=tcp (the same
cases and checks: nothing here is the transport's but how the bytes travel).
One test per invocation: `fio_protection.py TEST [ARG]`."""
import errno
import json
from pathlib import Path

import harness as h
from harness import check

# (target namespace spec, data bytes, metadata bytes, PI bytes): NSIDs 1, 2, 3.
NAMESPACES = [("ram:16M:512+8:pi1", 512, 8, 8),
              ("ram:16M:4096+8:pi1", 4096, 8, 8),
              ("ram:16M:4096+64:pi1:guard64", 4096, 64, 16)]
CHECKS = ["GUARD", "REFTAG", "APPTAG"]
# fio's job error for EILSEQ; glibc's strerror calls it "Invalid or incomplete
# multibyte or wide character" (elsewhere "Illegal byte sequence").
EILSEQ = errno.EILSEQ


def pi_target(wd, first=0, extra=()):
    """nvmeof-target serving NAMESPACES[first:] as NSIDs 1, 2, ..."""
    more = [arg for spec in NAMESPACES[first + 1:] for arg in ("--namespace", spec[0])]
    return h.target(wd, namespace=NAMESPACES[first][0], extra=[*more, *extra])


def spec(t, nsid):
    return f"traddr={t.address} trsvcid={t.port} subnqn={h.NQN.replace(':', chr(92) + ':')} ns={nsid}"


def global_section(t, mode, info=None):
    return (f"[global]\nioengine=external:{h.ENGINE}\ntrtype={t.transport}\n"
            + ("thread=1\n" if mode == "thread" else "")
            + (f"info_file={info}\n" if info else ""))


def subsets():
    """Every pi_chk value: "" (none) and each non-empty subset, '|'- or ','-joined."""
    out = []
    for bits in range(8):
        words = [c for i, c in enumerate(CHECKS) if bits >> i & 1]
        out.append(("|" if bits % 2 else ",").join(words))
    return out


def run_ok(job, t, what):
    proc, result = h.run_fio(job, t, timeout=240)
    check(proc.returncode == 0 and result is not None and not h.job_errors(result),
          f"{what}: fio failed (rc {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc, result


def layouts(info):
    """{job name: [layout of each namespace]} from the info_file's records."""
    records = [json.loads(line) for line in Path(info).read_text().splitlines()]
    return {r["job"]: [n["layout"] for n in r["namespaces"]] for r in records if r["record"] == "start"}


def test_verify(mode):
    """randrw with verify=crc32c in the data-only layout (bs=4k) on all three
    namespaces in each job, with pi_act 0 and 1 and each of the 8 pi_chk
    subsets: 16 job sections in one fio run, each in its own range. pi_act=0
    has the host stage, generate and check the PI; pi_act=1 with 8 bytes of PI
    moves data only (plain), the 64-bit guard's 64 bytes of metadata still
    travel (data-only)."""
    wd = h.workdir()
    job, info = wd + "/verify.fio", wd + "/facts.jsonl"
    with pi_target(wd) as t:
        files = ":".join(spec(t, n) for n in (1, 2, 3))
        text = global_section(t, mode, info) + f"""filename={files}
rw=randrw
bs=4k
size=768k
iodepth=8
verify=crc32c
do_verify=1
verify_fatal=1
verify_state_save=0
"""
        names = []
        for act in (0, 1):
            for i, chk in enumerate(subsets()):
                name = f"act{act}-chk{i}"
                names.append((name, act, chk))
                text += f"[{name}]\npi_act={act}\npi_chk={chk}\noffset={(act * 8 + i) * 256}k\n"
        Path(job).write_text(text)
        proc, result = run_ok(job, t, f"{mode} verify")
        t.stop()
    got = layouts(info)
    for name, act, chk in names:
        want = ["data-only"] * 3 if act == 0 else ["plain", "plain", "data-only"]
        check(got.get(name) == want, f"{name}: layouts {got.get(name)}, expected {want}")
        line = [ln for ln in proc.stderr.splitlines() if f"nvmeof: {name}: ns 1:" in ln]
        expect = "checks " + ("|".join(c for c in CHECKS if c in chk.replace(",", "|").split("|")) or "none")
        check(line and expect in line[0] and f"(pi_act={act})" in line[0],
              f"{name}: start-up line {line} does not say {expect!r}, pi_act={act}")
    sums = h.totals(result)
    check(sums["write"]["bytes"] > 0 and sums["read"]["bytes"] >= sums["write"]["bytes"],
          f"nothing verified: {sums}")
    print(f"{mode}: 16 jobs x 3 namespaces verified; fio wrote {sums['write']['bytes']} B, "
          f"read {sums['read']['bytes']} B")


# Interleaved jobs: (name, NSID, bs, pi_act); bs a multiple of data + metadata.
INTERLEAVED = [("i512-520", 1, 520, 0), ("i512-4160", 1, 4160, 0), ("i4096-4104", 2, 4104, 0),
               ("i64-act0", 3, 4160, 0), ("i64-act1", 3, 4160, 1)]


def test_interleaved(mode):
    """SPDK's layout (bs a multiple of data + metadata) without verify, every
    check on: pi_act=0 generates PI in fio's buffer (the target checks it on
    each write) and checks it on each read; the 64-bit guard's metadata travels
    with pi_act=1 too. fio's bytes are the target's, block for block."""
    wd = h.workdir()
    job, info = wd + "/interleaved.fio", wd + "/facts.jsonl"
    with pi_target(wd) as t:
        text = global_section(t, mode, info) + "rw=randrw\niodepth=8\npi_chk=GUARD|REFTAG|APPTAG\n"
        for k, (name, nsid, bs, act) in enumerate(INTERLEAVED):
            # Its own range of 128 blocks, at an offset that is a whole number of blocks.
            text += (f"[{name}]\nfilename={spec(t, nsid)}\nbs={bs}\npi_act={act}\n"
                     f"offset={k * 256 * bs}\nsize={128 * bs}\n")
        Path(job).write_text(text)
        proc, result = run_ok(job, t, f"{mode} interleaved")
        t.stop()
    got = layouts(info)
    for name, *_ in INTERLEAVED:
        check(got.get(name) == ["interleaved"], f"{name}: layout {got.get(name)}, not interleaved")
    per_job = {j["jobname"]: j for j in result["jobs"]}
    stats = {n["nsid"]: n["bytes"] for n in t.stats()["namespaces"]}
    for nsid in (1, 2, 3):
        for d in ("read", "write"):
            fio_bytes = sum(per_job[name][d]["io_bytes"] for name, n, *_ in INTERLEAVED if n == nsid)
            check(stats[nsid][d] == fio_bytes,
                  f"namespace {nsid}: the target moved {stats[nsid][d]} {d} bytes, fio {fio_bytes}")
    print(f"{mode}: {len(INTERLEAVED)} interleaved jobs; target bytes per namespace {stats}")


FIELDS = {"guard": ("GUARD", "Guard"), "apptag": ("APPTAG", "Application Tag"),
          "reftag": ("REFTAG", "Reference Tag")}
CORRUPT_LBA = 100


def test_corrupt(field):
    """The target stores LBA 100 with one bit of a PI field flipped: a job
    reading it back with that check on fails with EILSEQ and a line naming the
    check (pi_act 0 and 1, data-only with fio's verify; interleaved, written by
    one job and read by the next, since fio's verify does not survive PI
    generated in its buffer); with only that check off it passes (fio's verify
    too: the data is intact)."""
    word, status = FIELDS[field]
    others = "|".join(c for c in CHECKS if c != word)
    verify = "rw=write\nverify=crc32c\ndo_verify=1\n"
    # (name, pi_act, pi_chk, bs, what the job does, whether it must fail)
    jobs = [("on-act0", 0, word, 4096, verify, True), ("on-act1", 1, word, 4096, verify, True),
            ("write-interleaved", 0, word, 520, "rw=write\n", False),
            ("on-interleaved", 0, word, 520, "rw=read\n", True),
            ("off-act0", 0, others, 4096, verify, False), ("off-act1", 1, others, 4096, verify, False)]
    wd = h.workdir()
    job = wd + "/corrupt.fio"
    with pi_target(wd, extra=["--fault", f"corrupt-{field}={CORRUPT_LBA}"]) as t:
        text = global_section(t, "process") + f"filename={spec(t, 1)}\niodepth=4\nverify_state_save=0\n"
        for name, act, chk, bs, does, _ in jobs:
            # One after the other, each writing (and the target corrupting) LBA 100 again.
            text += f"[{name}]\nstonewall\npi_act={act}\npi_chk={chk}\nbs={bs}\nsize={256 * bs}\n{does}"
        Path(job).write_text(text)
        proc, _ = h.run_fio(job, t, timeout=240)
        t.stop()
    # fio 3.33 prints each failed job's "fio: pid=..., err=84/..." on stdout
    # before the JSON report: the report is what follows.
    start = proc.stdout.find("\n{")
    result = h.parse_report(proc.stdout[start + 1:] if start >= 0 else proc.stdout)
    check(result is not None, f"no JSON report (rc {proc.returncode}):\n{proc.stdout[:2000]}")
    errors = {j["jobname"]: j["error"] for j in result["jobs"]}
    for name, act, chk, bs, does, fails in jobs:
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(f"nvmeof: {name}: read")]
        if fails:
            check(errors[name] == EILSEQ, f"{name}: job error {errors[name]}, expected EILSEQ ({EILSEQ})")
            check(len(lines) == 1 and f"End-to-end {status} Check Error" in lines[0],
                  f"{name}: expected one line naming the {status} check:\n{proc.stderr[-3000:]}")
            # LBA 100 lies in the I/O at its offset rounded down to the block size.
            where = CORRUPT_LBA * (520 if bs == 520 else 512) // bs * bs
            check(f"at offset {where} " in lines[0], f"{name}: {lines[0]} is not the I/O of LBA {CORRUPT_LBA}")
            print(f"{name}: {lines[0].strip()}")
        else:
            check(errors[name] == 0 and not lines, f"{name}: error {errors[name]}: {lines}")
    check(proc.returncode != 0, "fio exited 0 although jobs failed")


def test_host_check():
    """A controller that returns a corrupted block without checking it (the
    target's skip-pi-checks fault on LBA 100, stored with a flipped guard):
    with pi_act=0 the engine's own check of each read catches it, EILSEQ and
    one line saying the host found it, in the data-only and the interleaved
    layouts; with pi_act=1 nobody checks the guard and fio's data verify passes
    (the data is intact)."""
    verify = "rw=write\nverify=crc32c\ndo_verify=1\n"
    jobs = [("host-act0", 0, 4096, verify, True), ("write-interleaved", 0, 520, "rw=write\n", False),
            ("host-interleaved", 0, 520, "rw=read\n", True), ("unchecked-act1", 1, 4096, verify, False)]
    wd = h.workdir()
    job = wd + "/host-check.fio"
    faults = ["--fault", f"corrupt-guard={CORRUPT_LBA}", "--fault", f"skip-pi-checks={CORRUPT_LBA}"]
    with pi_target(wd, extra=faults) as t:
        text = global_section(t, "process") + f"filename={spec(t, 1)}\niodepth=4\nverify_state_save=0\n"
        for name, act, bs, does, _ in jobs:
            text += f"[{name}]\nstonewall\npi_act={act}\npi_chk=GUARD\nbs={bs}\nsize={256 * bs}\n{does}"
        Path(job).write_text(text)
        proc, _ = h.run_fio(job, t, timeout=240)
        target_log = t.stop()
    start = proc.stdout.find("\n{")
    result = h.parse_report(proc.stdout[start + 1:] if start >= 0 else proc.stdout)
    check(result is not None, f"no JSON report (rc {proc.returncode}):\n{proc.stdout[:2000]}")
    errors = {j["jobname"]: j["error"] for j in result["jobs"]}
    for name, act, bs, does, fails in jobs:
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(f"nvmeof: {name}: read")]
        if fails:
            check(errors[name] == EILSEQ, f"{name}: job error {errors[name]}, expected EILSEQ ({EILSEQ})")
            check(len(lines) == 1 and "End-to-end Guard Check Error found by the host at LBA "
                  f"{CORRUPT_LBA}" in lines[0], f"{name}: expected the host's line:\n{proc.stderr[-3000:]}")
            print(f"{name}: {lines[0].strip()}")
        else:
            check(errors[name] == 0 and not lines, f"{name}: error {errors[name]}: {lines}")
    skipped = [ln for ln in target_log.splitlines() if "skip-pi-checks:" in ln]
    check(skipped, "the target never skipped a check: the test proves nothing")


REFUSED = [  # (job lines, what the one line must say)
    ("pi_act=0\nbs=1000", "block size 1000 fits no layout of namespace 1"),
    ("pi_act=0\nbs=520,4096", "block sizes 520 and 4096 need different layouts of namespace 1"),
    ("bs=1000", "block size 1000 is not a multiple of the 512-byte LBA size of namespace 1"),
    ("pi_act=2", "pi_act=2: must be 0"),
    ("pi_chk=GUARD|CRC", 'pi_chk=GUARD|CRC: unknown check "CRC"'),
    ("apptag=0x12345", "apptag=0x12345: an application tag field is 16 bits"),
    ("apptag_mask=65536", "apptag_mask=65536: an application tag field is 16 bits"),
    ("md_per_io_size=4q", "md_per_io_size=4q: not a byte count"),
]


def test_refusals():
    """Each mistake: fio exits non-zero before any I/O, with one engine line
    naming it. Then the notes: pi_act/pi_chk on a namespace without PI, and
    md_per_io_size, are named once and the job runs."""
    wd = h.workdir()
    job = wd + "/refused.fio"
    with h.target(wd, namespace=NAMESPACES[0][0], extra=["--namespace", "ram:16M"]) as t:
        for lines, needle in REFUSED:
            bs = "" if "bs=" in lines else "bs=4k\n"
            Path(job).write_text(global_section(t, "process") + f"filename={spec(t, 1)}\nrw=randrw\n"
                                 f"size=64k\n{bs}{lines}\n[bad]\n")
            proc, _ = h.run_fio(job, t)
            said = [ln for ln in proc.stderr.splitlines() if "nvmeof:" in ln]
            check(proc.returncode != 0, f"{lines!r}: fio exited 0")
            check(len(said) == 1 and needle in said[0],
                  f"{lines!r}: expected one engine line with {needle!r}, got:\n{proc.stderr[-2000:]}")
            print(f"{lines.splitlines()[-1]}: {said[0].strip()}")
        Path(job).write_text(global_section(t, "process") + f"filename={spec(t, 2)}\nrw=randrw\nbs=4k\n"
                             "size=64k\npi_act=0\npi_chk=GUARD\nmd_per_io_size=8k\nnumjobs=2\n[notes]\n")
        proc, result = run_ok(job, t, "notes")
        t.stop()
        stats = t.stats()
    # Namespace 1 saw no I/O: every refused job stopped before any.
    check([n["nsid"] for n in stats["namespaces"]] == [2], f"I/O went to {stats['namespaces']}")
    for needle in ("pi_act and pi_chk do not apply to namespace 2", "md_per_io_size=8192: no effect"):
        notes = [ln for ln in proc.stderr.splitlines() if needle in ln]
        check(len(notes) == 1, f"expected one note with {needle!r}:\n{proc.stderr[-2000:]}")
        print(notes[0].strip())


def test_job():
    """The shipped jobs/pi-verify.fio on a 512+8 type 1 namespace: data-only,
    verified, and every block the target moved is 520 bytes for fio's 512."""
    wd = h.workdir()
    with pi_target(wd) as t:
        proc, result = run_ok(h.shortened_job("pi-verify.fio", wd), t, "pi-verify.fio")
        t.stop()
    said = [ln for ln in proc.stderr.splitlines() if "nvmeof: pi-verify: ns 1:" in ln]
    check(said and "data-only layout" in said[0] and "checks GUARD|REFTAG|APPTAG" in said[0],
          f"start-up line {said}")
    sums, stats = h.totals(result), t.stats()
    for d in ("read", "write"):
        check(sums[d]["bytes"] > 0 and stats["bytes"][d] == sums[d]["bytes"] // 512 * 520,
              f"{d}: target moved {stats['bytes'][d]} bytes for fio's {sums[d]['bytes']}")
    print(f"pi-verify.fio: fio {sums['read']['bytes']} B read, {sums['write']['bytes']} B written; "
          f"target {stats['bytes']}")


# Other formats, one fio run: (target namespace spec, layout with pi_act=0, with pi_act=1).
FORMATS = [("ram:16M:512+16:pi2:first", "data-only", "data-only"),
           ("ram:16M:4096+8:pi3", "data-only", "plain"),
           ("ram:16M:4096+16:pi1:guard32:sts=16", "data-only", "plain"),
           ("ram:16M:512+8:pi2:sts=8", "data-only", "plain"),
           ("ram:16M:4096+16:pi3:guard64:first:sts=20", "data-only", "plain")]


def test_formats(mode):
    """randrw with verify=crc32c on PI types 2 and 3, PI first in the metadata,
    the 32-bit guard and storage tags with each guard: pi_act 0 and 1, every
    check on, one job section per namespace and pi_act, each in its own range."""
    wd = h.workdir()
    job, info = wd + "/formats.fio", wd + "/facts.jsonl"
    more = [arg for fmt in FORMATS[1:] for arg in ("--namespace", fmt[0])]
    with h.target(wd, namespace=FORMATS[0][0], extra=more) as t:
        text = global_section(t, mode, info) + """rw=randrw
bs=4k
size=256k
iodepth=8
verify=crc32c
do_verify=1
verify_fatal=1
verify_state_save=0
pi_chk=GUARD|REFTAG|APPTAG
apptag=0x5AA5
"""
        for nsid in range(1, len(FORMATS) + 1):
            for act in (0, 1):
                text += (f"[ns{nsid}-act{act}]\nfilename={spec(t, nsid)}\npi_act={act}\n"
                         f"offset={act * 256}k\n")
        Path(job).write_text(text)
        proc, result = run_ok(job, t, f"{mode} formats")
        t.stop()
    stats = {n["nsid"]: n["bytes"] for n in t.stats()["namespaces"]}
    got = layouts(info)
    for nsid, (fmt, layout0, layout1) in enumerate(FORMATS, start=1):
        for act, want in ((0, layout0), (1, layout1)):
            name = f"ns{nsid}-act{act}"
            check(got.get(name) == [want], f"{name} ({fmt}): layout {got.get(name)}, expected {want}")
        check(stats[nsid]["write"] > 0 and stats[nsid]["read"] >= stats[nsid]["write"],
              f"{fmt}: the target moved {stats[nsid]}")
    print(f"{mode}: {len(FORMATS)} formats x pi_act 0/1 verified; target bytes {stats}")


TESTS = {"job": test_job, "formats": test_formats, "host_check": test_host_check,
         "verify": test_verify, "interleaved": test_interleaved, "corrupt": test_corrupt,
         "refusals": test_refusals}

if __name__ == "__main__":
    h.run_named(TESTS)
