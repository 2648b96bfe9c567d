#!/usr/bin/env python3
"""Checks the documentation: README.md, docs/ (docs/perf/ included), SECURITY.md, CHANGELOG.md.

Fails on:
  - a relative link (or image) whose file does not exist, or whose #anchor names no heading
    of that Markdown file (GitHub's heading slugs);
  - an issue number ("issue 16", "Issue #3", "issues 14, 15") or a commit hash (a word of 7 to
    40 hex digits holding both a digit and a letter) anywhere in those files;
  - a date (YYYY-MM-DD) in a reference page: dated material belongs in docs/perf/ (file names
    of docs/perf/ records in links are fine);
  - a README.md of more than 250 lines.

Usage:
  tools/check-docs.py [SOURCE_ROOT]     check the tree (default: this script's tree)
  tools/check-docs.py --self-test       shows the check fails on each kind of problem
"""
import pathlib
import re
import sys
import tempfile

README_MAX_LINES = 250

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
ISSUE = re.compile(r"\b[Ii]ssues? ?#?[0-9]+")
COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
DATE = re.compile(r"\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b")
RECORD_NAME = re.compile(r"20[0-9]{2}-[01][0-9]-[0-3][0-9]-[A-Za-z0-9_.-]+\.md")


def doc_files(root):
    files = [root / "README.md", root / "SECURITY.md", root / "CHANGELOG.md"]
    files += sorted((root / "docs").rglob("*.md"))
    return [f for f in files if f.is_file()]


def is_record(root, path):
    return (root / "docs" / "perf") in path.parents


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found = set()
    counts = {}
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else HEADING.match(line)
        if match:
            base = slug(match.group(2))
            n = counts.get(base, 0)
            counts[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def prose_lines(path):
    """(number, line, in_fence) for each line of a Markdown file."""
    in_fence = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            yield number, line, True
            continue
        yield number, line, in_fence


def check(root):
    root = pathlib.Path(root).resolve()
    problems = []
    anchor_cache = {}
    for path in doc_files(root):
        relative = path.relative_to(root)
        record = is_record(root, path)
        for number, line, _ in prose_lines(path):
            where = f"{relative}:{number}"
            for match in ISSUE.finditer(line):
                problems.append(f"{where}: names an issue number ({match.group(0)!r})")
            for match in COMMIT.finditer(line):
                problems.append(f"{where}: looks like a commit hash ({match.group(0)!r})")
            if not record:
                undated = RECORD_NAME.sub("", line)
                for match in DATE.finditer(undated):
                    problems.append(f"{where}: a date ({match.group(0)}) in a reference page; "
                                    "dated material goes in docs/perf/")
        prose = "\n".join("" if in_fence else line for _, line, in_fence in prose_lines(path))
        for match in LINK.finditer(prose):
            where = f"{relative}:{prose.count(chr(10), 0, match.start()) + 1}"
            target = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            linked = path if file_part == "" else (path.parent / file_part).resolve()
            if not linked.exists():
                problems.append(f"{where}: link to {target}: no such file")
                continue
            if anchor and linked.is_file() and linked.suffix == ".md":
                if linked not in anchor_cache:
                    anchor_cache[linked] = anchors(linked)
                if anchor not in anchor_cache[linked]:
                    problems.append(f"{where}: link to {target}: no heading with that anchor")
    readme = root / "README.md"
    if not readme.is_file():
        problems.append("README.md: missing")
    else:
        lines = len(readme.read_text(encoding="utf-8").splitlines())
        if lines > README_MAX_LINES:
            problems.append(f"README.md: {lines} lines, more than {README_MAX_LINES}")
    return problems


def self_test():
    """The check passes a clean tree and names each kind of problem."""
    clean = {
        "README.md": "# x\n\nSee [the engine](docs/engine.md#options) and [a record](docs/perf/2026-01-02-run.md).\n",
        "docs/engine.md": "# Engine\n\n## Options\n\nData: `0xdeadbeef`, 1,067,962 I/Os.\n",
        "docs/perf/2026-01-02-run.md": "# A run (2026-01-02)\n\nBack to [the engine](../engine.md).\n",
    }
    cases = [
        ("a missing file", {"docs/engine.md": clean["docs/engine.md"] + "[x](nowhere.md)\n"},
         "link to nowhere.md: no such file"),
        ("a missing file, the link over two lines",
         {"docs/engine.md": clean["docs/engine.md"] + "See [the\nrecord](perf/nowhere.md).\n"},
         "link to perf/nowhere.md: no such file"),
        ("a missing anchor", {"README.md": "# x\n\n[x](docs/engine.md#no-such-heading)\n"},
         "no heading with that anchor"),
        ("an issue number", {"docs/engine.md": clean["docs/engine.md"] + "Fixed in issue 16.\n"},
         "names an issue number"),
        ("an issue number in a record", {"docs/perf/2026-01-02-run.md": "# r\n\nIssue #3 again.\n"},
         "names an issue number"),
        ("a commit hash", {"docs/engine.md": clean["docs/engine.md"] + "Since a018aad.\n"},
         "looks like a commit hash"),
        ("a date in a reference page", {"docs/engine.md": clean["docs/engine.md"] + "Run on 2026-12-04.\n"},
         "a date (2026-12-04) in a reference page"),
        ("a long README", {"README.md": "# x\n" + "line\n" * README_MAX_LINES},
         "more than 250"),
    ]
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        base = pathlib.Path(scratch)

        def tree(name, files):
            root = base / name
            for relative, text in {**clean, **files}.items():
                (root / relative).parent.mkdir(parents=True, exist_ok=True)
                (root / relative).write_text(text, encoding="utf-8")
            return root

        problems = check(tree("clean", {}))
        if problems:
            print("self-test: the clean tree fails:", *problems, sep="\n  ", file=sys.stderr)
            failures += 1
        for i, (what, files, expected) in enumerate(cases):
            problems = check(tree(f"case{i}", files))
            if not any(expected in p for p in problems):
                print(f"self-test: {what} not caught (wanted {expected!r}, got {problems})",
                      file=sys.stderr)
                failures += 1
    if failures:
        return 1
    print(f"docs self-test: the clean tree passes, {len(cases)} kinds of problem caught")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else pathlib.Path(__file__).resolve().parent.parent
    problems = check(root)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s) in the documentation", file=sys.stderr)
        return 1
    print(f"docs: {len(doc_files(pathlib.Path(root)))} files, links resolve, no issue numbers or commits")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
