#!/usr/bin/env python3
"""The docs' rules (docs/internals/docs.md), checked on the source tree:

  code     every cpp block of README.md and docs/guide/ is a marked whole program or a
           marked region of a built file, verbatim; every shell block is run by a named
           file or marked not-run; docs/CONTRACT.md's marked traces are the golden traces
  figures  every measured figure in README.md and docs/guide/ is a marker, rendered as
           bench/results.json says (tools/docs_render.py)
  links    relative links in README.md, CHANGELOG.md, bench/RESULTS.md and docs/ resolve,
           anchors included; CONTRACT.md sections and decisions cited in the tree exist
  coverage every pool_options field and every error and condition enumerator is in the
           guide

Usage: docs_test.py SOURCE_ROOT. Prints one line per check, [  FAILED  ] with the
file and line of each breach."""
import glob
import os
import re
import subprocess
import sys

root = sys.argv[1]
sys.path.insert(0, os.path.join(root, "tools"))
from docs_render import MARKER, FigureError, load_rows, region, render  # noqa: E402

FENCE = re.compile(r"^```([\w+-]*)\n(.*?)^```\n", re.S | re.M)
MARK = re.compile(r"<!-- (example|fragment|run-by|not-run|sample output)(?::\s*(.*?))? -->\n$")
SHELLS = {"sh", "bash", "console", "shell"}
UNIT = re.compile(r"\d[\d,.]*\s?(?:×|ns\b|µs\b|us\b|ms\b|/s\b|%)")

failures = []
checks = 0


def rel(path):
    return os.path.relpath(path, root)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def fail(where, message):
    failures.append(f"{where}: {message}")


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def guide_pages():
    return sorted(glob.glob(os.path.join(root, "docs", "guide", "*.md")))


def user_docs():
    return [os.path.join(root, "README.md")] + guide_pages()


def blocks(text):
    """(language, body, marker kind, marker argument, line) of each fenced block."""
    for m in FENCE.finditer(text):
        before = text[:m.start()]
        last = before[before.rfind("\n", 0, len(before) - 1) + 1:] if before else ""
        mark = MARK.search(last)
        yield (m.group(1), m.group(2), mark.group(1) if mark else None,
               (mark.group(2) or "") if mark else "", line_of(text, m.start()), m)


def built_sources():
    """Sources the build compiles: every .cpp named in a meson.build (by its directory)."""
    names = set()
    for build in glob.glob(os.path.join(root, "**", "meson.build"), recursive=True):
        if "/build" in rel(build).split("/")[0] or rel(build).startswith("subprojects"):
            continue
        d = os.path.dirname(build)
        text = read(build)
        for f in glob.glob(os.path.join(d, "*.cpp")):
            base = os.path.basename(f)
            if f"'{base}'" in text or f"'{base[:-4]}'" in text:
                names.add(rel(f))
    return names


def check_code():
    global checks
    built = built_sources()
    for path in user_docs():
        text = read(path)
        for lang, body, kind, arg, line, _ in blocks(text):
            checks += 1
            where = f"{rel(path)}:{line}"
            if lang == "cpp":
                if kind == "example":
                    target = os.path.join(root, arg)
                    if not os.path.exists(target):
                        fail(where, f"example {arg} does not exist")
                    elif read(target) != body:
                        fail(where, f"the block differs from {arg}: run tools/render-docs")
                    elif arg not in built and not arg.startswith("tests/consumers/"):
                        fail(where, f"{arg} is not built by any meson.build")
                elif kind == "fragment":
                    path_part, _, name = arg.partition("#")
                    if not name or not os.path.exists(os.path.join(root, path_part)):
                        fail(where, f"fragment {arg}: name FILE#REGION of an existing file")
                        continue
                    cut = region(root, path_part, name)
                    if cut is None:
                        fail(where, f"{path_part} has no single region [{name}] ... [/{name}]")
                    elif cut != body:
                        fail(where, f"the block differs from {path_part}, region {name}: run tools/render-docs")
                    elif path_part not in built:
                        fail(where, f"{path_part} is not built by any meson.build")
                else:
                    fail(where, "a cpp block without <!-- example: PATH --> or <!-- fragment: PATH#REGION -->")
            elif lang in SHELLS:
                if kind == "not-run":
                    if not arg.strip():
                        fail(where, "not-run needs a reason")
                elif kind == "run-by":
                    runner = os.path.join(root, arg)
                    if not os.path.exists(runner):
                        fail(where, f"run-by {arg}: no such file")
                        continue
                    script = read(runner)
                    for command in body.splitlines():
                        command = command.strip()
                        if command and not command.startswith("#") and command not in script:
                            fail(where, f"{arg} does not run {command!r}")
                else:
                    fail(where, "a shell block without <!-- run-by: FILE --> or <!-- not-run: REASON -->")
    # docs/CONTRACT.md's marked traces are the golden traces (less their # lines).
    contract = read(os.path.join(root, "docs", "CONTRACT.md"))
    for lang, body, kind, arg, line, _ in blocks(contract):
        if kind != "example":
            continue
        checks += 1
        lines = read(os.path.join(root, arg)).splitlines(keepends=True)
        while lines and lines[0].startswith("#"):
            lines.pop(0)
        if "".join(lines) != body:
            fail(f"docs/CONTRACT.md:{line}", f"the trace differs from {arg}")


def check_figures():
    global checks
    rows = load_rows(os.path.join(root, "bench", "results.json"))
    allowed = [l.strip() for l in read(os.path.join(root, "docs", "figures-allow.txt")).splitlines()
               if l.strip() and not l.startswith("#")]
    rendered_only = [os.path.join(root, "bench", "RESULTS.md"), os.path.join(root, "docs", "DEMO.md")]
    for path in user_docs() + rendered_only:
        text = read(path)
        checks += 1
        try:
            if render(text, rows, rel(path)) != text:
                fail(rel(path), "a figure is not as bench/results.json has it: run tools/render-docs")
        except FigureError as e:
            fail(rel(path), str(e))
        if path in rendered_only:
            continue
        # Outside markers, code and sample output: no measured figure.
        prose = MARKER.sub(lambda m: " " * len(m.group(0)), text)
        for *_, m in blocks(prose):
            prose = prose[:m.start()] + re.sub(r"[^\n]", " ", m.group(0)) + prose[m.end():]
        prose = re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group(0)), prose)
        for phrase in allowed:
            prose = prose.replace(phrase, " " * len(phrase))
        for m in UNIT.finditer(prose):
            fail(f"{rel(path)}:{line_of(prose, m.start())}",
                 f"{m.group(0)!r} is a figure outside a marker (docs/internals/docs.md)")


def slug(heading, seen):
    s = re.sub(r"<[^>]+>", "", heading).strip().lower()
    s = re.sub(r"[^\w\- ]", "", s).replace(" ", "-")
    n = seen.get(s, 0)
    seen[s] = n + 1
    return s if n == 0 else f"{s}-{n}"


def anchors(path):
    text = FENCE.sub("", read(path))
    seen = {}
    return {slug(m.group(1), seen) for m in re.finditer(r"^#{1,6} (.+?)\s*#*$", text, re.M)}


def check_links():
    global checks
    docs = [os.path.join(root, p) for p in ("README.md", "CHANGELOG.md", "bench/RESULTS.md")]
    docs += sorted(glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))
    for path in docs:
        text = FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), read(path))
        text = re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group(0)), text)
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            checks += 1
            link = m.group(1)
            if re.match(r"[a-z]+:", link):
                continue
            target, _, anchor = link.partition("#")
            where = f"{rel(path)}:{line_of(text, m.start())}"
            full = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
            if not os.path.exists(full):
                fail(where, f"link to {link}: no such file")
            elif anchor and full.endswith(".md") and anchor not in anchors(full):
                fail(where, f"link to {link}: no heading with that anchor")


def check_citations():
    global checks
    contract = read(os.path.join(root, "docs", "CONTRACT.md"))
    sections = set(re.findall(r"^##+ (\d+(?:\.\d+)*)[. ]", contract, re.M))
    decisions_part = contract[contract.index("## 11."):]
    decisions = set(re.findall(r"^(\d+)\. \*\*", decisions_part, re.M))
    listed = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True)
    if listed.returncode == 0:
        files = listed.stdout.split()
    else:  # not a git checkout: every file but build directories'
        files = [rel(os.path.join(d, f)) for d, dirs, names in os.walk(root) for f in names
                 if not rel(d).startswith(("build", ".git"))]
    cited = re.compile(r"CONTRACT(?:\.md)?,? (?:section|§) ?(\d+(?:\.\d+)*)")
    for f in files:
        path = os.path.join(root, f)
        if not os.path.isfile(path) or f.startswith(("tests/traces/", "subprojects/")):
            continue
        try:
            text = read(path)
        except UnicodeDecodeError:
            continue
        for m in cited.finditer(text):
            checks += 1
            if m.group(1) not in sections:
                fail(f"{f}:{line_of(text, m.start())}", f"cites CONTRACT.md section {m.group(1)}: no such section")
        for m in re.finditer(r"\b[Dd]ecisions? (\d+)\b", text):
            checks += 1
            if m.group(1) not in decisions:
                fail(f"{f}:{line_of(text, m.start())}", f"cites decision {m.group(1)}: CONTRACT.md has no such decision")


def check_coverage():
    global checks
    guide = "".join(read(p) for p in guide_pages())
    options = read(os.path.join(root, "adapters/asio/include/fairpool/asio/options.hpp"))
    body = options[options.index("struct pool_options {"):]
    body = body[:body.index("\n};")]
    fields = re.findall(r"^    (?!//)[\w:<>, ]+?[ *&]([a-z_][a-z0-9_]*)(?:\{[^}]*\})?(?: = [^;]*)?;", body, re.M)
    errors = read(os.path.join(root, "adapters/asio/include/fairpool/asio/error.hpp"))
    enumerators = []
    for name in ("error", "condition"):
        enum = errors[errors.index(f"enum class {name} {{"):]
        enum = enum[:enum.index("};")]
        enumerators += re.findall(r"^\s+([a-z_]+)(?: = \d+)?,", enum, re.M)
    if len(fields) < 20 or len(enumerators) < 8:
        fail("coverage", f"read {len(fields)} pool_options fields and {len(enumerators)} enumerators: the reader is broken")
    for name in fields + enumerators:
        checks += 1
        if f"`{name}`" not in guide and not re.search(rf"`[^`\n]*\b{name}\b[^`\n]*`", guide):
            fail("docs/guide/", f"`{name}` is not mentioned")


for name, check in [("code", check_code), ("figures", check_figures), ("links", check_links),
                    ("citations", check_citations), ("coverage", check_coverage)]:
    before = len(failures)
    check()
    for f in failures[before:]:
        print(f"  {f}")
    print(f"[{'  FAILED  ' if len(failures) > before else '       OK '}] docs.{name} (0 ms)")
print(f"{checks} checks, {len(failures)} breaches")
sys.exit(1 if failures else 0)
