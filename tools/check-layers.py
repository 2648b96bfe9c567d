#!/usr/bin/env python3
"""Checks that every #include follows the layers (docs/architecture.md, "The layers").

    wire layout <- base <- verbs, socket <- memory <- gpu <- transport <- host
    <- public API <- engine, cli, python, examples

The base layer (core/include/nvmeof/base, core/base) holds what the layers of
the initiator share: the library's errors, a transfer and its outcome, a
memory region handle, a namespace's data path facts, protection, GPU memory's
declarations and logging. It sits on the wire layer, not under it: its errors
carry NVMe statuses (wire::Status) and raise wire::NvmeError, while the wire
layout needs nothing of them. Memory, transport and gpu may use it and not the
public API, whose headers re-export it (nvmeof/errors.hpp includes
nvmeof/base/errors.hpp, and so on), so no arrow points up from them. Verbs and
auth, shared with the target, and socket (system headers only) use neither.

Each source folder may reach only the layers RULES lists for it, directly or
through the project headers it includes: the check follows every include that
names a project header (`transport/rdma_queue.hpp`, `nvmeof/wire/io.hpp`,
`<nvmeof/...>`, or a bare name beside the includer) and names the chain when
one ends in a layer the folder may not use. A header of the includer's own
folder is checked on its own, not followed. A bare name that is a file of core/
not beside the includer is reported too; system, fio, CUDA and test framework
headers are not checked. Every source file under core/ must belong to a folder
RULES knows, so a new folder gets a place in the layers first.

The public API is declared in a few wire types (a completion's Status, the
low-level submit's Sqe, DiscoveryRecord, HostId): API_SHOWS lists their
headers, which a user of the API reaches through it but may not include itself.
The same holds for every base header: a user reaches it through the API
header that re-exports it and includes that one. No public header (API, base or
wire) names a `detail` namespace: what its declarations need of the library's
insides is an opaque type of namespace nvmeof (ControllerImpl, QueueImpl,
MemoryRecord), defined inside.
A folder that may not use the wire layer also may not name `wire::`: what it
needs of those types, it calls by the API's names.

    tools/check-layers.py [SOURCE_ROOT]   one line per violation, exit 1 on any
    tools/check-layers.py --self-test     shows the check fails on bad includes

Exit 0: clean; 1: violations (or a failed self-test); 2: usage.
"""
import os
import re
import sys
import tempfile

WIRE = "nvmeof/wire"  # the public wire layout (core/include/nvmeof/wire, nvmeof/wire.hpp)
API = "nvmeof"        # the public API (core/include/nvmeof)
BASE = "nvmeof/base"  # errors and shared types (core/include/nvmeof/base, core/base: base/...)

# The wire headers the public API's declarations are made of. Closed under
# their own includes; a new one here widens what every API user sees.
API_SHOWS = {f"{WIRE}/{name}" for name in ("status.hpp", "command.hpp", "common.hpp", "sgl.hpp",
                                           "discovery.hpp", "protection.hpp")}

# Folder (relative to the source root) -> the layers its files may include.
# The longest matching folder applies; None: anything (tests reach every layer).
RULES = {
    "core/include/nvmeof/wire": {WIRE},
    # The base layer sits on the wire layout only (an error carries a wire::Status).
    "core/include/nvmeof/base": {BASE, WIRE},
    "core/include/nvmeof": {API, BASE, WIRE},
    "core/wire": {WIRE},
    "core/base": {BASE, WIRE},
    # Shared with the target, which has none of the initiator's types: no base.
    "core/verbs": {"verbs"},
    # Non-blocking TCP streams (NVMe/TCP), beside verbs: system headers only.
    "core/socket": {"socket"},
    "core/auth": {"auth", WIRE},
    # Below the public API: what they share with it is the base layer's.
    "core/memory": {"memory", "verbs", BASE, WIRE},
    # A transport registers GPU memory for its controller (RDMA: in its PD).
    "core/transport": {"transport", "gpu", "memory", "verbs", "socket", BASE, WIRE},
    "core/gpu": {"gpu", "memory", "verbs", BASE, WIRE},
    # The handles reach their queue's final type (transport/queue_dispatch.hpp:
    # RdmaQueue, TcpQueue), whose headers name verbs and socket types.
    "core/host": {"host", "transport", "gpu", "memory", "verbs", "socket", "auth", API, BASE, WIRE},
    # The engine uses the public API only: it knows nothing of capsules.
    "engine": {API},
    # nvmeof-discover prints every field of a log entry as nvme-cli does, so it
    # needs the wire layout's names of TREQ, EFLAGS and the RDMA provider types.
    "cli": {API, WIRE},
    # The Python package offers the low-level submit, whose commands are wire
    # SQEs built by the wire layer, and NVMe status and opcode names.
    "python": {API, WIRE},
    # An example shows the low-level submit too (a Flush built by the wire layer).
    "examples": {API, WIRE},
    # The target shares the wire layout, the verbs owners and DH-HMAC-CHAP,
    # nothing of the initiator.
    "target": {WIRE, "verbs", "auth"},
    "softverbs": {"softverbs"},
    # Benchmarks of wire-layer functions (bench/crc_bench.cpp: both CRC versions
    # through the layer's own wire/crc.hpp).
    "bench": {WIRE},
    "tests": None,
}
INTERNAL = {"verbs", "socket", "memory", "transport", "gpu", "host", "auth", "softverbs"}
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
NAMES_WIRE = re.compile(r"\bwire::")
NAMES_DETAIL = re.compile(r"\bdetail\s*::|\bnamespace\s+(\w+\s*::\s*)*detail\b")
PUBLIC = "core/include/nvmeof"
# Where a layer-named include is found, as the build's include directories say.
INCLUDE_ROOTS = ("core/include", "core")


def layer_of(path):
    """The layer an include path names, or None when it names none."""
    if path.startswith(WIRE + "/") or path == WIRE + ".hpp":
        return WIRE
    if path.startswith((BASE + "/", "base/")):
        return BASE
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


def includes_of(root, relative):
    """(line number, quoted?, path) of each #include in a file, and its other lines."""
    with open(os.path.join(root, relative), encoding="utf-8", errors="replace") as source:
        lines = source.read().splitlines()
    found, code = [], []
    for number, line in enumerate(lines, 1):
        match = INCLUDE.match(line)
        if match:
            found.append((number, match.group(1) == '"', match.group(2)))
        else:
            code.append((number, line.split("//", 1)[0]))
    return found, code


def resolve(root, includer, quoted, path):
    """The project file (relative to root) an include names, or None."""
    candidates = []
    if quoted:
        candidates.append(os.path.join(os.path.dirname(includer), path))
    if "/" in path:
        candidates += [os.path.join(prefix, path) for prefix in INCLUDE_ROOTS]
    for candidate in candidates:
        if os.path.isfile(os.path.join(root, candidate)):
            return os.path.normpath(candidate)
    return None


def may_reach(allowed, layer, path):
    """Whether a folder with `allowed` may use a header of `layer` it reaches:
    the API's users reach the wire headers it shows and the base it re-exports."""
    return (layer is None or layer in allowed
            or (API in allowed and (path in API_SHOWS or layer == BASE)))


def first_forbidden(root, start, path, prefix, allowed, cache):
    """The shortest include chain from `start` (a header named `path`) to one
    that `prefix` may not reach, as a list of include paths, or None."""
    seen = {start}
    queue = [(start, [path])]
    while queue:
        file, chain = queue.pop(0)
        if file not in cache:
            cache[file] = [(quoted, p, resolve(root, file, quoted, p))
                           for _, quoted, p in includes_of(root, file)[0]]
        for quoted, p, target in cache[file]:
            if target is None or target in seen:
                continue
            seen.add(target)
            if not may_reach(allowed, layer_of(p), p):
                return chain + [p]
            if rule_for(target) != prefix:
                queue.append((target, chain + [p]))
    return None


def check(root):
    """Returns the violations under `root`, one line each."""
    problems = []
    core_names = core_files_by_name(root)
    cache = {}
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
                may_use = ", ".join(sorted(allowed))
                includes, code = includes_of(root, relative)
                for number, quoted, path in includes:
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
                    elif layer not in allowed:
                        problems.append(f"{relative}:{number}: {prefix}/ must not include {path} "
                                        f"(the {layer} layer); it may include: {may_use}")
                        continue
                    target = resolve(root, relative, quoted, path)
                    if target is None or rule_for(target) == prefix:
                        continue
                    chain = first_forbidden(root, target, path, prefix, allowed, cache)
                    if chain:
                        problems.append(f"{relative}:{number}: includes {' -> '.join(chain)} "
                                        f"(the {layer_of(chain[-1])} layer; {prefix}/ may use: "
                                        f"{may_use})")
                if prefix == PUBLIC or prefix.startswith(PUBLIC + "/"):
                    for number, line in code:
                        if NAMES_DETAIL.search(line):
                            problems.append(f"{relative}:{number}: a public header names the "
                                            f"internal namespace detail")
                if WIRE not in allowed:
                    for number, line in code:
                        if NAMES_WIRE.search(line):
                            problems.append(f"{relative}:{number}: {prefix}/ names wire:: "
                                            f"(the {WIRE} layer); it may use: {may_use}")
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
        "core/transport/rdma_queue.hpp": ('#include <memory>\n#include "memory/memory_record.hpp"\n'
                                          '#include "nvmeof/base/transfer.hpp"\n#include "base/log.hpp"\n'),
        "core/memory/memory_record.hpp": '#include "verbs/resources.hpp"\n#include "nvmeof/base/gpu.hpp"\n',
        "core/base/log.hpp": '#include "nvmeof/base/log.hpp"\n',
        "core/base/errors.cpp": '#include "nvmeof/base/errors.hpp"\n',
        "core/verbs/resources.hpp": "#include <infiniband/verbs.h>\n",
        "engine/job.hpp": '#include "fio.h"\n#include "nvmeof/errors.hpp"\n#include "job_facts.hpp"\n',
        "engine/job.cpp": '#include "job.hpp"\n// wire::Status, as a comment only\n',
        "engine/job_facts.hpp": "#pragma once\n",
        "core/include/nvmeof/errors.hpp": '#include "nvmeof/base/errors.hpp"\n',
        "core/include/nvmeof/gpu.hpp": '#include "nvmeof/base/gpu.hpp"\n',
        "core/include/nvmeof/queue.hpp": '#include "nvmeof/base/transfer.hpp"\n',
        "core/include/nvmeof/base/errors.hpp": '#include "nvmeof/wire/status.hpp"\n',
        "core/include/nvmeof/base/transfer.hpp": '#include "nvmeof/base/errors.hpp"\n',
        "core/include/nvmeof/base/gpu.hpp": "#pragma once\n",
        "core/include/nvmeof/base/log.hpp": "#pragma once\n",
        "core/include/nvmeof/nvmeof.hpp": '#include "nvmeof/errors.hpp"\n#include "nvmeof/wire.hpp"\n',
        "core/include/nvmeof/wire.hpp": '#include "nvmeof/wire/io.hpp"\n',
        "core/include/nvmeof/wire/status.hpp": '#include "nvmeof/wire/command.hpp"\n',
        "core/include/nvmeof/wire/command.hpp": "#pragma once\n",
        "core/include/nvmeof/wire/io.hpp": '#include "nvmeof/wire/command.hpp"\n',
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
        ("the engine reaching the wire layout through an API header",
         {"core/include/nvmeof/leaky.hpp": '#include "nvmeof/wire/io.hpp"\n',
          "engine/bad.cpp": '#include <vector>\n#include "nvmeof/leaky.hpp"\n'},
         "engine/bad.cpp:2: includes nvmeof/leaky.hpp -> nvmeof/wire/io.hpp (the nvmeof/wire layer; "
         "engine/ may use: nvmeof)"),
        ("the engine reaching it two API headers down",
         {"engine/bad.cpp": '#include "nvmeof/nvmeof.hpp"\n'},
         "engine/bad.cpp:1: includes nvmeof/nvmeof.hpp -> nvmeof/wire.hpp (the nvmeof/wire layer"),
        ("an engine header reaching it, reported once (not again in its includers)",
         {"engine/bad.hpp": '#include "nvmeof/nvmeof.hpp"\n', "engine/bad.cpp": '#include "bad.hpp"\n'},
         "engine/bad.hpp:1: includes nvmeof/nvmeof.hpp -> nvmeof/wire.hpp"),
        ("the engine naming the wire namespace",
         {"engine/bad.cpp": "#include \"job.hpp\"\nusing nvmeof::wire::Status;\n"},
         "engine/bad.cpp:2: engine/ names wire::"),
        ("memory including the public API",
         {"core/memory/bad.cpp": '#include "nvmeof/base/gpu.hpp"\n#include "nvmeof/gpu.hpp"\n'},
         "core/memory/bad.cpp:2: core/memory/ must not include nvmeof/gpu.hpp (the nvmeof layer)"),
        ("transport reaching the public API through a header of its own layer",
         {"core/transport/bad.hpp": '#include "nvmeof/queue.hpp"\n',
          "core/transport/bad.cpp": '#include "transport/bad.hpp"\n'},
         "core/transport/bad.hpp:1: core/transport/ must not include nvmeof/queue.hpp"),
        ("a base header including the public API",
         {"core/include/nvmeof/base/bad.hpp": '#include "nvmeof/queue.hpp"\n'},
         "core/include/nvmeof/base/ must not include nvmeof/queue.hpp (the nvmeof layer)"),
        ("the base layer including transport",
         {"core/base/bad.cpp": '#include "transport/rdma_queue.hpp"\n'},
         "core/base/ must not include transport/rdma_queue.hpp (the transport layer)"),
        ("the engine including a base header itself, not the API's",
         {"engine/bad.cpp": '#include "nvmeof/base/errors.hpp"\n'},
         "engine/ must not include nvmeof/base/errors.hpp (the nvmeof/base layer)"),
        ("verbs (shared with the target) including the base layer",
         {"core/verbs/bad.cpp": '#include "base/log.hpp"\n'},
         "core/verbs/ must not include base/log.hpp (the nvmeof/base layer)"),
        ("a public header naming an internal type",
         {"core/include/nvmeof/leaky.hpp": "namespace nvmeof {\nclass X { detail::Impl* p; };\n}\n"},
         "core/include/nvmeof/leaky.hpp:2: a public header names the internal namespace detail"),
        ("a base header opening the internal namespace",
         {"core/include/nvmeof/base/leaky.hpp": "namespace nvmeof::detail {\nstruct Impl;\n}\n"},
         "core/include/nvmeof/base/leaky.hpp:1: a public header names the internal namespace"),
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
