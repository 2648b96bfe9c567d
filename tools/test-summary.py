#!/usr/bin/env python3
"""Prints one closing line for a meson test run, counting GoogleTest cases one by
one: 'N passed, N failed, N skipped'. Exits non-zero on any failure and on any
skipped test outside the GPU suite (only tests that need a GPU may skip, and
the death tests of the transport's invariants in a build without them)."""
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

junit = sys.argv[1]


def build_option(name):
    """A meson option of the build that wrote `junit`, or None."""
    options = Path(junit).parent.parent / "meson-info" / "intro-buildoptions.json"
    if not options.exists():
        return None
    return next((o["value"] for o in json.loads(options.read_text()) if o["name"] == name), None)


# -Dinvariants=false (the default) compiles the checks out, so their death
# tests skip; a build with them must run them.
invariants_off = build_option("invariants") is False
passed = failed = skipped = 0
unexpected_skips = []
for suite in ET.parse(junit).getroot().iter("testsuite"):
    suite_name = suite.get("name", "")
    for case in suite.iter("testcase"):
        name = f"{suite_name}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None or case.get("result") == "skipped":
            skipped += 1
            expected = "gpu" in name.lower() or (invariants_off and "invariants" in name.lower())
            if not expected:
                unexpected_skips.append(name)
        else:
            passed += 1

# A test killed by its timeout or crashing before GoogleTest wrote its report
# leaves no failed case in the JUnit file: take meson's own verdict too.
bad_runs = []
log = Path(junit).with_name("testlog.json")
if log.exists():
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL"):
            bad_runs.append(f"{entry.get('name')}: {entry.get('result')}")
for run in bad_runs:
    print(f"failed run: {run}")
failed += len(bad_runs)

for name in unexpected_skips:
    print(f"unexpected skip: {name}")
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or unexpected_skips or passed == 0 else 0)
