#!/usr/bin/env python3
"""Checks that every #include follows the layers (docs/architecture.md, "The layers").

    wire layout <- verbs <- memory <- transport, gpu <- host <- public API
    <- engine, cli, python, examples

Each source folder may include only the folders RULES lists for it. An include
is the project's when it names a layer (`transport/rdma_queue.hpp`,
`nvmeof/wire/io.hpp`, `<nvmeof/...>`) or, written bare (`"controller_impl.hpp"`),
a file of core/ that is not beside the includer; system, fio, CUDA and test
framework headers are not checked. Every source file under core/ must belong
to a folder RULES knows, so a new folder gets a place in the layers first.

    tools/check-layers.py [SOURCE_ROOT]   one line per violation, exit 1 on any
    tools/check-layers.py --self-test     shows the check fails on bad includes

Exit 0: clean; 1: violations (or a failed self-test); 2: usage.
"""
import os
import re
import sys
import tempfile

WIRE = "nvmeof/wire"  # the public wire layout (core/include/nvmeof/wire)
API = "nvmeof"        # the public API (core/include/nvmeof)

# Folder (relative to the source root) -> the layers its files may include.
# The longest matching folder applies; None: anything (tests reach every layer).
RULES = {
    "core/include/nvmeof/wire": {WIRE},
    "core/include/nvmeof": {API, WIRE},
    "core/wire": {WIRE},
    "core/verbs": {"verbs"},
    "core/auth": {"auth", WIRE},
    "core/memory": {"memory", "verbs", API, WIRE},
    "core/transport": {"transport", "memory", "verbs", API, WIRE},
    "core/gpu": {"gpu", "memory", "verbs", API, WIRE},
    "core/host": {"host", "transport", "gpu", "memory", "verbs", "auth", API, WIRE},
    # Users of the library see its public API only, and the engine not even
    # the wire layout: it knows nothing of capsules.
    "engine": {API},
    "cli": {API},
    "python": {API},
    "examples": {API},
    # The target shares the wire layout, the verbs owners and DH-HMAC-CHAP,
    # nothing of the initiator.
    "target": {WIRE, "verbs", "auth"},
    "softverbs": {"softverbs"},
    "tests": None,
}
INTERNAL = {"verbs", "memory", "transport", "gpu", "host", "auth", "softverbs"}
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(path):
    """The layer an include path names, or None when it names none."""
    if path.startswith(WIRE + "/"):
        return WIRE
    if path.startswith(API + "/"):
        return API
    first = path.split("/", 1)[0]
    if "/" in path and first in INTERNAL:
        return first
    return None


def rule_for(relative):
    folder = os.path.dirname(relative)
    best = None
    for prefix in RULES:
        if folder == prefix or folder.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best):
                best = prefix
    return best


def core_files_by_name(root):
    names = {}
    for dirpath, _, files in os.walk(os.path.join(root, "core")):
        for name in files:
            names.setdefault(name, os.path.relpath(os.path.join(dirpath, name), root))
    return names


def check(root):
    """Returns the violations under `root`, one line each."""
    problems = []
    core_names = core_files_by_name(root)
    for top in sorted({prefix.split("/", 1)[0] for prefix in RULES}):
        for dirpath, dirnames, files in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(("build", ".")))
            for name in sorted(files):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                full = os.path.join(dirpath, name)
                relative = os.path.relpath(full, root)
                prefix = rule_for(relative)
                if prefix is None:
                    problems.append(f"{relative}: its folder has no place in the layers "
                                    f"(add it to RULES in tools/check-layers.py)")
                    continue
                allowed = RULES[prefix]
                if allowed is None:
                    continue
                with open(full, encoding="utf-8", errors="replace") as source:
                    lines = source.read().splitlines()
                for number, line in enumerate(lines, 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    quoted = match.group(1) == '"'
                    path = match.group(2)
                    layer = layer_of(path)
                    if layer is None:
                        # A bare name reaching into another core folder through
                        # an include path is still a layer crossing.
                        if (quoted and "/" not in path
                                and not os.path.exists(os.path.join(dirpath, path))
                                and path in core_names):
                            problems.append(f"{relative}:{number}: includes \"{path}\", which is "
                                            f"{core_names[path]}, not beside it")
                        continue
                    if layer not in allowed:
                        problems.append(f"{relative}:{number}: {prefix}/ must not include {path} "
                                        f"(the {layer} layer); it may include: "
                                        f"{', '.join(sorted(allowed))}")
    return problems


def self_test():
    """The check passes a clean tree and names each kind of bad include."""
    def check_tree(files):
        with tempfile.TemporaryDirectory(prefix="check-layers-") as root:
            for relative, text in files.items():
                path = os.path.join(root, relative)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as out:
                    out.write(text)
            return check(root)

    clean = {
        "core/host/negotiation.hpp": "#pragma once\n",
        "core/host/controller_impl.hpp": '#include "transport/rdma_queue.hpp"\n',
        "core/transport/rdma_queue.hpp": '#include <memory>\n#include "memory/memory_record.hpp"\n',
        "core/memory/memory_record.hpp": '#include "verbs/resources.hpp"\n#include "nvmeof/gpu.hpp"\n',
        "core/verbs/resources.hpp": "#include <infiniband/verbs.h>\n",
        "engine/job.hpp": '#include "fio.h"\n#include "nvmeof/nvmeof.hpp"\n#include "job_facts.hpp"\n',
        "engine/job_facts.hpp": "#pragma once\n",
        "tests/unit/anything.cpp": '#include "host/controller_impl.hpp"\n',
    }
    cases = [
        ("the clean tree", {}, None),
        ("transport including host", {"core/transport/bad.cpp": '#include "host/negotiation.hpp"\n'},
         "core/transport/bad.cpp:1: core/transport/ must not include host/negotiation.hpp"),
        ("gpu including host by angle brackets",
         {"core/gpu/bad.cpp": "#include <host/controller_impl.hpp>\n"},
         "core/gpu/ must not include host/controller_impl.hpp"),
        ("the wire layer including verbs", {"core/wire/bad.cpp": '  # include "verbs/resources.hpp"\n'},
         "core/wire/ must not include verbs/resources.hpp"),
        ("the engine including the wire layout", {"engine/bad.cpp": '#include "nvmeof/wire/io.hpp"\n'},
         "engine/ must not include nvmeof/wire/io.hpp"),
        ("a bare name from another core folder",
         {"core/transport/bad.cpp": '#include "controller_impl.hpp"\n'},
         'includes "controller_impl.hpp", which is core/host/controller_impl.hpp'),
        ("a core folder with no rule", {"core/newlayer/x.cpp": "#pragma once\n"},
         "core/newlayer/x.cpp: its folder has no place in the layers"),
    ]
    failed = 0
    for name, extra, expected in cases:
        problems = check_tree({**clean, **extra})
        if expected is None:
            ok = not problems
        else:
            ok = len(problems) == 1 and expected in problems[0]
        print(f"{'ok' if ok else 'FAILED'}: {name}" + ("" if ok else f": got {problems}"))
        failed += not ok
    return 1 if failed else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: tools/check-layers.py [SOURCE_ROOT] | --self-test", file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = check(root)
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} include(s) against the layers", file=sys.stderr)
        return 1
    print("layers: every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
