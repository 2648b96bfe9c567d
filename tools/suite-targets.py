#!/usr/bin/env python3
"""Prints the ninja targets the tests of one meson suite need, one per line.

    tools/suite-targets.py BUILD_DIR SUITE

A build that runs only one suite (CI's TSan stage) builds these instead of
everything, then runs `meson test --no-rebuild --suite SUITE`. A test needs its
own executable (when the build makes it) and every target it names in
`depends`. Exit 1 when no test is in the suite.
"""
import json
import os
import subprocess
import sys


def introspect(build, what):
    out = subprocess.run(["meson", "introspect", build, what], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    build, suite = os.path.realpath(sys.argv[1]), sys.argv[2]
    outputs = {}  # target id -> its files, relative to the build dir
    produced = {}  # absolute file -> relative, for a test's own executable
    for target in introspect(build, "--targets"):
        files = [os.path.relpath(f, build) for f in target["filename"]]
        outputs[target["id"]] = files
        for absolute, relative in zip(target["filename"], files):
            produced[os.path.realpath(absolute)] = relative
    needed = []
    tests = [t for t in introspect(build, "--tests")
             if any(s.split(":")[-1] == suite for s in t["suite"])]
    if not tests:
        print(f"suite-targets: no test in suite '{suite}'", file=sys.stderr)
        return 1
    for test in tests:
        for word in test["cmd"]:
            relative = produced.get(os.path.realpath(word))
            if relative is not None:
                needed.append(relative)
        for dep in test["depends"]:
            needed.extend(outputs.get(dep, []))
    for name in sorted(set(needed)):
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
