#!/usr/bin/env python3
"""The README's code blocks marked `<!-- example: PATH -->` must be exactly the files
they name, which the build compiles and runs: the README never shows code that does not
build. Likewise docs/CONTRACT.md's marked trace blocks and the golden traces they name
(less the traces' leading `#` comment lines), which the golden tests replay: the
contract never shows a trace the tools refuse. Usage: readme_examples_test.py SOURCE_ROOT"""
import os
import re
import sys

root = sys.argv[1]
readme = open(os.path.join(root, "README.md")).read()
blocks = re.findall(r"<!-- example: (\S+) -->\n```cpp\n(.*?)```", readme, re.S)
if not blocks:
    sys.exit("no marked examples in README.md")
failed = False
for path, code in blocks:
    if open(os.path.join(root, path)).read() != code:
        print(f"[  FAILED  ] readme.{path} (0 ms): README.md differs from {path}")
        failed = True
    else:
        print(f"[       OK ] readme.{path} (0 ms)")

contract = open(os.path.join(root, "docs", "CONTRACT.md")).read()
traces = re.findall(r"<!-- example: (\S+) -->\n```\n(.*?)```", contract, re.S)
if not traces:
    sys.exit("no marked examples in docs/CONTRACT.md")
for path, text in traces:
    lines = open(os.path.join(root, path)).read().splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    if "".join(lines) != text:
        print(f"[  FAILED  ] contract.{path} (0 ms): docs/CONTRACT.md differs from {path}")
        failed = True
    else:
        print(f"[       OK ] contract.{path} (0 ms)")
sys.exit(1 if failed else 0)
