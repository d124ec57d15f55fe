#!/usr/bin/env python3
"""Every codlctl command line quoted in README.md and docs/*.md must parse.

A user copies these lines; "The following arguments were not expected" on one of them is a bug.
Each quoted line (in a code span or block, with at least one argument after the subcommand) is
expanded over its `a|b|c` alternatives and run with CODLCTL_PARSE_ONLY=1, which makes codlctl
stop after parsing: placeholders such as HOST:PORT or ID are fine, unknown options and
misplaced arguments are not. `validate` lines whose file exists in the repository run for real.

Usage: doc_commands_check.py CODLCTL REPO_ROOT
"""
import glob
import itertools
import os
import re
import shlex
import subprocess
import sys

SPAN = re.compile(r"`(codlctl [^`]+)`")
BLOCK_LINE = re.compile(r"^\s*(?:\$ )?(codlctl .+)$")


def quoted_lines(path):
    in_block = False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                in_block = not in_block
                continue
            if in_block:
                m = BLOCK_LINE.match(line)
                if m:
                    yield n, m.group(1)
            else:
                for m in SPAN.finditer(line):
                    yield n, m.group(1)


def expansions(line):
    line = line.split(" #")[0].strip()
    if any(s in line for s in ("...", "…", "──")):
        return []
    words = shlex.split(line)[1:]
    if len(words) < 2:  # a bare `codlctl run` in prose names the command, it is no example
        return []
    return [list(p) for p in itertools.product(*[w.split("|") for w in words])]


def main():
    codlctl, root = sys.argv[1], sys.argv[2]
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs/*.md")))
    passed = failed = 0
    for path in files:
        for n, line in quoted_lines(path):
            for args in expansions(line):
                env = dict(os.environ, CODLCTL_PARSE_ONLY="1")
                runs_for_real = args[0] == "validate" and os.path.exists(os.path.join(root, args[1]))
                if runs_for_real:
                    env.pop("CODLCTL_PARSE_ONLY")
                r = subprocess.run([codlctl] + args, cwd=root, env=env, capture_output=True,
                                   text=True, timeout=60)
                where = f"{os.path.relpath(path, root)}:{n}: codlctl {' '.join(args)}"
                if r.returncode != 0:
                    failed += 1
                    print(f"FAIL {where}\n     exit {r.returncode}: {r.stderr.strip()[:300]}")
                else:
                    passed += 1
                    print(f"ok   {where}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
