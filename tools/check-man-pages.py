#!/usr/bin/env python3
"""Checks the man pages (docs/man/*.scd) against the programs they describe,
and their rendering.

  check-man-pages.py engine-options --fio FIO --engine SO PAGE.scd
      every option of the engine's table (fio --enghelp=SO) is an entry of
      PAGE's OPTIONS section and every entry there is an option; each entry
      states its default, and where fio knows one (integer and boolean
      options) the page says the same.
  check-man-pages.py help-options [--section NAME]... PAGE.scd CMD [SUBCOMMAND...]
      every option `CMD --help` (and `CMD SUBCOMMAND --help`) lists is an
      entry of PAGE's OPTIONS section (and the other sections named), and
      every entry there is listed.
  check-man-pages.py render PAGE...
      each built page renders with man-db and groff with every warning on,
      prints none, and no line is wider than the 80 columns it is set in.
  check-man-pages.py --self-test
      each check fails on the kind of mistake it exists for.

Entries are scdoc definition terms: a line at column 0 starting with "*" in
the section, the names in bold, e.g. "*nr_io_queues*=_N_", "*-s*,
*--trsvcid*=_PORT_", "*fail-io=*_N_:_SCT_/_SC_"; the indented lines after
it are its text.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

WIDTH = 80
BOLD = re.compile(r"\*([^*\s][^*]*)\*")


def sections(text):
    """{heading: [lines]} of the level-1 sections ("# NAME")."""
    out, name = {}, None
    for line in text.splitlines():
        if line.startswith("# "):
            name = line[2:].strip()
            out[name] = []
        elif name is not None:
            out[name].append(line)
    return out


def entries(lines):
    """[(names in bold on the term line, body lines)] of a section."""
    out = []
    for line in lines:
        if line.startswith("*"):
            out.append((BOLD.findall(line), []))
        elif out and line.startswith("\t"):
            out[-1][1].append(line.strip())
        elif out and line.strip() and not line.startswith("#"):
            out.append(([], []))  # prose between entries ends the last one
    return [e for e in out if e[0]]


# --- engine options ----------------------------------------------------------

def fio_engine_options(fio, engine):
    """{name: default or None} from fio's --enghelp of the engine's table."""
    listing = subprocess.run([fio, f"--enghelp={engine}"], capture_output=True, text=True)
    if listing.returncode != 0:
        sys.exit(f"check-man-pages: {fio} --enghelp={engine} failed ({listing.returncode}):\n"
                 f"{listing.stdout}{listing.stderr}")
    names = [m.group(1) for m in re.finditer(r"^(\w+)\s+: ", listing.stdout, re.M)]
    if len(names) < 5:
        sys.exit(f"check-man-pages: no engine options in fio --enghelp's output:\n{listing.stdout}")
    options = {}
    for name in names:
        detail = subprocess.run([fio, f"--enghelp={engine},{name}"], capture_output=True,
                                text=True).stdout
        m = re.search(r"^\s*default: (.*)$", detail, re.M)
        default = m.group(1).strip() if m else None
        options[name] = None if default in (None, "no default") else default
    return options


def compare_engine_options(options, page_text, page):
    """Errors of PAGE's OPTIONS section against {name: fio default or None}."""
    section = sections(page_text).get("OPTIONS")
    if section is None:
        return [f"{page}: no OPTIONS section"]
    errors, documented = [], {}
    for names, body in entries(section):
        names = [n for n in names if re.fullmatch(r"[a-z][a-z0-9_]*", n)]
        for name in names:
            if name in documented:
                errors.append(f"{page}: engine option '{name}' is documented twice")
            documented[name] = (len(names), " ".join(body))
    for name in options:
        if name not in documented:
            errors.append(f"{page}: engine option '{name}' is not documented "
                          "(fio --enghelp lists it)")
    for name in documented:
        if name not in options:
            errors.append(f"{page}: documents engine option '{name}', which the engine does "
                          "not have (fio --enghelp does not list it)")
    for name, (grouped, text) in documented.items():
        if name not in options or grouped > 1:
            continue  # a text shared by several options (the SPDK ones, which do nothing) states no default
        m = re.search(r"Default: (\S+)", text)
        if m is None:
            errors.append(f"{page}: engine option '{name}' has no \"Default:\"")
        elif options[name] is not None and m.group(1).rstrip(".,;") != options[name]:
            errors.append(f"{page}: engine option '{name}': the page says \"Default: "
                          f"{m.group(1)}\", the engine's table {options[name]}")
    return errors


def compare_markdown_options(options, text, doc):
    """Errors of the Markdown reference DOC against the engine's options: each is
    named there (`name`), and each row of its option tables names a real one."""
    errors = [f"{doc}: engine option '{name}' is not mentioned (fio --enghelp lists it)"
              for name in options if f"`{name}`" not in text]
    for line in text.splitlines():
        cell = re.match(r"\|\s*((?:`[a-z][a-z0-9_]*`(?:,\s*)?)+)\s*\|", line)
        if cell is None:
            continue
        for name in re.findall(r"`([a-z][a-z0-9_]*)`", cell.group(1)):
            if name not in options:
                errors.append(f"{doc}: the option table lists '{name}', which the engine does "
                              "not have (fio --enghelp does not list it)")
    return errors


# --- command-line options ----------------------------------------------------

def help_options(help_text):
    """Option names a --help text defines: "--name" for each option and
    "name=" for the target's fault specs, from lines indented a little
    (deeper lines continue a description, where options are only named)."""
    found = set()
    for line in help_text.splitlines():
        m = re.match(r"( {1,8})(\S.*)$", line)
        if not m:
            continue
        head = re.split(r"\s{2,}", m.group(2))[0]
        if head.startswith("-"):
            found.update(re.findall(r"--[A-Za-z0-9][A-Za-z0-9-]*", head))
        else:
            spec = re.match(r"([a-z][a-z-]*=)", head)
            if spec:
                found.add(spec.group(1))
    return found


def compare_help_options(listed, page_text, page, section_names):
    parts = sections(page_text)
    documented = set()
    for name in section_names:
        if name not in parts:
            return [f"{page}: no {name} section"]
        for names, _ in entries(parts[name]):
            documented.update(n for n in names
                              if re.fullmatch(r"--[A-Za-z0-9][A-Za-z0-9-]*|[a-z][a-z-]*=", n))
    errors = [f"{page}: '{o}' is not documented (--help lists it)"
              for o in sorted(listed - documented)]
    errors += [f"{page}: documents '{o}', which --help does not list"
               for o in sorted(documented - listed)]
    return errors


def run_help(command):
    # argparse wraps at $COLUMNS: a fixed width keeps the parse the same everywhere.
    done = subprocess.run(command + ["--help"], capture_output=True, text=True,
                          env=dict(os.environ, COLUMNS="80"))
    if done.returncode != 0:
        sys.exit(f"check-man-pages: {' '.join(command)} --help exited {done.returncode}:\n"
                 f"{done.stderr}")
    return done.stdout


# --- rendering ---------------------------------------------------------------

def render_errors(page):
    """What is wrong with how man-db renders PAGE, as it would for a reader
    on an 80-column terminal. --warnings=w, not "all": groff's "all" leaves
    out the macro warnings (an undefined request is the likeliest slip)."""
    env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH=str(WIDTH), MAN_KEEP_STDERR="1",
               # The pages are ours; a container may forbid the sandbox.
               MAN_DISABLE_SECCOMP="1")
    done = subprocess.run(["man", "--warnings=w", "-l", page], capture_output=True, env=env)
    errors = []
    with open(page, "rb") as f:
        for number, line in enumerate(f, 1):
            if not line.isascii():
                # man-db converts it (preconv), groff alone and other readers warn.
                errors.append(f"{page}:{number}: not ASCII: {line.decode('utf-8', 'replace').strip()}")
    stderr = done.stderr.decode("utf-8", "replace").strip()
    if done.returncode != 0 or stderr:
        errors.append(f"{page}: man exited {done.returncode}: {stderr}")
    text = done.stdout.decode("utf-8", "replace")
    if not text.strip():
        errors.append(f"{page}: man rendered nothing")
    for number, line in enumerate(text.splitlines(), 1):
        if len(line) > WIDTH:
            errors.append(f"{page}: rendered line {number} is {len(line)} columns wide "
                          f"(more than {WIDTH}): {line.strip()}")
    return errors


# --- self-test ---------------------------------------------------------------

SELF_PAGE = """x(7)

# OPTIONS

*alpha*=_N_
\tSome text. Default: 4.

*beta*=_S_
\tText; no default stated.

*gamma*=_N_
\tDefault: 0 (off).

*grouped_one*, *grouped_two*
\tDo nothing.

# NOTES

*delta*
\tNot an option: outside OPTIONS.
"""


def self_test():
    failures = []

    def expect(what, errors, *fragments):
        for fragment in fragments:
            if not any(fragment in e for e in errors):
                failures.append(f"{what}: no error containing {fragment!r} in {errors}")
        if not fragments and errors:
            failures.append(f"{what}: unexpected errors {errors}")

    good = {"alpha": "4", "beta": None, "gamma": "0", "grouped_one": None, "grouped_two": None}
    page = SELF_PAGE.replace("Text; no default stated.", "Default: none.")
    expect("matching page", compare_engine_options(good, page, "p"))
    expect("option missing from the page",
           compare_engine_options({**good, "epsilon": "1"}, page, "p"), "'epsilon' is not documented")
    expect("option gone from the engine",
           compare_engine_options({k: v for k, v in good.items() if k != "alpha"}, page, "p"),
           "documents engine option 'alpha'")
    markdown = "| option | meaning |\n|---|---|\n| `alpha`, `beta` | a |\n| `gamma` | g |\n`grouped_one` `grouped_two`\n"
    expect("matching Markdown reference", compare_markdown_options(good, markdown, "m"))
    expect("option missing from the Markdown reference",
           compare_markdown_options({**good, "epsilon": "1"}, markdown, "m"), "'epsilon' is not mentioned")
    expect("Markdown table row of no option",
           compare_markdown_options({k: v for k, v in good.items() if k != "beta"}, markdown, "m"),
           "lists 'beta'")
    expect("wrong default", compare_engine_options({**good, "alpha": "8"}, page, "p"),
           "'alpha': the page says \"Default: 4.\", the engine's table 8")
    expect("no default stated", compare_engine_options(good, SELF_PAGE, "p"),
           "'beta' has no \"Default:\"")

    target_help = ("Usage: t [OPTIONS]\n\n  --listen ADDR            address (default x)\n"
                   "  --namespace ram:SIZE[:LBA]\n                           more text, e.g. "
                   "--not-an-option\n  -h, --help               this text\n"
                   "  drop-after=N             disconnect\n      --timeout-ms=MS  deadline\n")
    listed = help_options(target_help)
    if listed != {"--listen", "--namespace", "--help", "drop-after=", "--timeout-ms"}:
        failures.append(f"help_options parsed {sorted(listed)}")
    tool_page = ("t(1)\n\n# OPTIONS\n\n*--listen* _ADDR_\n\tx\n\n*--namespace* ram:_S_\n\tx\n\n"
                 "*-h*, *--help*\n\tx\n\n*--timeout-ms*=_MS_\n\tx\n\n# FAULTS\n\n"
                 "*drop-after=*_N_\n\tx\n")
    expect("matching tool page", compare_help_options(listed, tool_page, "t", ["OPTIONS", "FAULTS"]))
    expect("tool page without a fault",
           compare_help_options(listed, tool_page, "t", ["OPTIONS"]), "'drop-after=' is not documented")
    expect("tool page with an option --help lacks",
           compare_help_options(listed - {"--listen"}, tool_page, "t", ["OPTIONS", "FAULTS"]),
           "documents '--listen'")

    if shutil.which("man") is None:
        print("self-test: the rendering check is not tried: no man (apt-get install man-db)")
        return report(failures)
    with tempfile.TemporaryDirectory() as work:
        bad = os.path.join(work, "bad.1")
        with open(bad, "w", encoding="utf-8") as f:
            f.write(".TH BAD 1\n.SH NAME\nbad \\- a page\n.SH DESCRIPTION\n.undefinedmacro\n"
                    ".nf\n" + "x" * (WIDTH + 5) + "\n.fi\n2 \u00d7 3\n")
        expect("page with an undefined macro, a wide line and a non-ASCII character",
               render_errors(bad), "macro 'undefinedmacro' not defined", "columns wide", "not ASCII")
        fine = os.path.join(work, "fine.1")
        with open(fine, "w") as f:
            f.write(".TH FINE 1\n.SH NAME\nfine \\- a page\n")
        expect("clean page", render_errors(fine))

    return report(failures)


def report(failures):
    for failure in failures:
        print(f"self-test: {failure}", file=sys.stderr)
    print(f"self-test: {'FAILED' if failures else 'ok'}")
    return 1 if failures else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="check", required=True)
    e = sub.add_parser("engine-options")
    e.add_argument("--fio", required=True)
    e.add_argument("--engine", required=True)
    e.add_argument("--markdown", action="append", default=[],
                   help="a Markdown reference that must name every option too")
    e.add_argument("page")
    h = sub.add_parser("help-options")
    h.add_argument("--section", action="append", default=[])
    h.add_argument("page")
    h.add_argument("command")
    h.add_argument("subcommands", nargs="*")
    r = sub.add_parser("render")
    r.add_argument("pages", nargs="+")
    a = parser.parse_args()

    if a.check == "engine-options":
        options = fio_engine_options(a.fio, a.engine)
        with open(a.page) as f:
            errors = compare_engine_options(options, f.read(), a.page)
        for doc in a.markdown:
            with open(doc) as f:
                errors += compare_markdown_options(options, f.read(), doc)
    elif a.check == "help-options":
        listed = help_options(run_help([a.command]))
        for subcommand in a.subcommands:
            listed |= help_options(run_help([a.command, subcommand]))
        with open(a.page) as f:
            errors = compare_help_options(listed, f.read(), a.page, ["OPTIONS"] + a.section)
    else:
        errors = [e for page in a.pages for e in render_errors(page)]
    for error in errors:
        print(error, file=sys.stderr)
    if not errors:
        print(f"check-man-pages {a.check}: ok")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
