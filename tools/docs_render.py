"""What tools/render-docs writes into the docs and tests/docs_test.py checks is there
(docs/internals/docs.md): measured figures from bench/results.json, and code blocks cut
from the files they name.

A figure is written as a marker naming one row, or the ratio of two rows:

    <!-- fig: SCENARIO DESIGN METRIC -->TEXT<!-- /fig -->
    <!-- fig: SCENARIO DESIGN METRIC / SCENARIO DESIGN METRIC -->TEXT<!-- /fig -->

and TEXT is what render() writes for the row's value and unit. Used by
tools/render-docs (which rewrites the files) and tests/docs_test.py (which fails if
a file is not as rendered)."""
import json
import os
import re
import textwrap

MARKER = re.compile(r"<!-- fig: ([^>]*?) -->(.*?)<!-- /fig -->", re.S)


class FigureError(Exception):
    pass


def load_rows(path):
    with open(path) as f:
        rows = json.load(f)
    return {(r["scenario"], r["design"], r["metric"]): r for r in rows}


def _number(v, decimals):
    return f"{v:,.{decimals}f}"


def _scaled(v):
    """Three significant figures below 100, whole numbers above."""
    if abs(v) >= 100:
        return _number(v, 0)
    if abs(v) >= 10:
        return _number(v, 1)
    return _number(v, 2)


def format_value(value, unit, metric=""):
    if isinstance(value, str):
        return value
    if unit in ("ns", "us"):  # in the unit that keeps it below 1,000 (down to ns)
        ns = value * (1000 if unit == "us" else 1)
        for name, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
            if abs(ns) >= scale:
                return _scaled(ns / scale) + " " + name
        return _scaled(ns) + " ns"
    if unit == "instructions":
        return _number(value, 0 if float(value).is_integer() else 1)
    if unit == "fraction" or (unit == "ratio" and metric.endswith("_share")):
        return _scaled(100 * value) + " %"
    if unit == "ratio":
        return _scaled(value) + "×"
    if unit.endswith("/s"):  # sessions/s, requests/s
        return _number(value, 0) + "/s"
    if float(value).is_integer():
        return _number(value, 0)
    return _scaled(value)


def _row(rows, key, where):
    if key not in rows:
        raise FigureError(f"{where}: no row {' '.join(key)} in bench/results.json")
    return rows[key]


def figure(spec, rows, where="figure"):
    """The text for a marker's spec: 'S D M' or 'S D M / S D M'."""
    words = spec.split()
    if len(words) == 3:
        r = _row(rows, tuple(words), where)
        return format_value(r["value"], r["unit"], r["metric"])
    if len(words) == 7 and words[3] == "/":
        a, b = _row(rows, tuple(words[:3]), where), _row(rows, tuple(words[4:]), where)
        if not b["value"]:
            raise FigureError(f"{where}: {' '.join(words[4:])} is 0")
        return _scaled(a["value"] / b["value"]) + "×"
    raise FigureError(f"{where}: a figure names 'SCENARIO DESIGN METRIC' or two such joined by ' / ': {spec!r}")


def render(text, rows, where="file"):
    """`text` with every marker's content rendered."""
    def one(m):
        line = text.count("\n", 0, m.start()) + 1
        return f"<!-- fig: {m.group(1)} -->{figure(m.group(1), rows, f'{where}:{line}')}<!-- /fig -->"
    return MARKER.sub(one, text)


def region(root, path, name):
    """The lines of PATH between `// [NAME]` and `// [/NAME]`, dedented; None if the file
    has no single such region."""
    with open(os.path.join(root, path)) as f:
        lines = f.read().splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.rstrip().endswith(f"// [{name}]")]
    ends = [i for i, line in enumerate(lines) if line.rstrip().endswith(f"// [/{name}]")]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        return None
    return textwrap.dedent("".join(lines[starts[0] + 1:ends[0]]))


def render_code(text, root):
    """`text` with every block marked `example: PATH` or `fragment: PATH#REGION` made the
    file or region it names."""
    def fragment(m):
        path, _, name = m.group(1).partition("#")
        cut = region(root, path, name)
        if cut is None:
            raise FigureError(f"{path} has no single region [{name}] ... [/{name}]")
        return f"<!-- fragment: {m.group(1)} -->\n```cpp\n{cut}```\n"

    def example(m):
        with open(os.path.join(root, m.group(1))) as f:
            return f"<!-- example: {m.group(1)} -->\n```cpp\n{f.read()}```\n"
    text = re.sub(r"<!-- fragment: (\S+) -->\n```cpp\n.*?^```\n", fragment, text, flags=re.S | re.M)
    return re.sub(r"<!-- example: (\S+) -->\n```cpp\n.*?^```\n", example, text, flags=re.S | re.M)
