#!/usr/bin/env python3
"""Every experiment quoted in README.md and docs/*.md is one `codlctl validate` accepts.

A fenced ```yaml block is checked when it is an experiment or a piece of one (its top-level
keys are experiment keys: victim, antagonists, pairings, repetitions, ...). A whole experiment
is validated as written; a piece is completed first with what it lacks (a name, the codl-victim
victim, a memcpy antagonist), so its own keys are still checked by the real parser and the
injectors' option tables. Other YAML (a Kubernetes probe, a daemon config) is left out and
counted. A block indented under a list item (as in docs/injectors.md) is dedented first.

Usage: doc_yaml_check.py CODLCTL REPO_ROOT
"""
import glob
import os
import re
import subprocess
import sys
import tempfile
import textwrap

# The parser's own list of top-level keys (MapReader(root, "", {...}) in lib/spec/spec_parse.cc),
# so a key added there is recognised here without an edit.
ROOT_KEYS = re.compile(r'MapReader\s+\w+\(\s*root,\s*"",\s*\{([^}]*)\}', re.S)
FILL = {
    "name": "name: doc-example",
    "victim": "victim: {command: [codl-victim, --steps, '5']}",
    "antagonists": "antagonists:\n  - {name: membw, injector: memcpy, levels: [0.5]}",
}
TOP_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:", re.M)


def yaml_blocks(path):
    """(first line number, text) of each ```yaml block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    start, body = None, []
    for n, line in enumerate(lines, 1):
        fence = line.strip()
        if start is None and fence == "```yaml":
            start, body = n + 1, []
        elif start is not None and fence.startswith("```"):
            yield start, textwrap.dedent("\n".join(body))
            start = None
        elif start is not None:
            body.append(line)


def main():
    codlctl, root = sys.argv[1], sys.argv[2]
    parser = open(os.path.join(root, "lib/spec/spec_parse.cc"), encoding="utf-8").read()
    m = ROOT_KEYS.search(parser)
    if not m:
        print("FAIL cannot find the top-level key list in lib/spec/spec_parse.cc")
        return 1
    experiment_keys = set(re.findall(r'"([a-z_]+)"', m.group(1)))
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs/*.md")))
    passed = failed = other = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            for n, text in yaml_blocks(path):
                keys = set(TOP_KEY.findall(text))
                where = f"{os.path.relpath(path, root)}:{n}"
                if not keys or not keys <= experiment_keys:
                    other += 1
                    print(f"--   {where}: not an experiment (keys {sorted(keys)})")
                    continue
                # A crosstalk experiment has no victim (docs/experiment-format.md, "Cross-talk").
                added = [FILL[k] for k in FILL
                         if k not in keys and not (k == "victim" and "crosstalk" in keys)]
                doc = text + ("\n" + "\n".join(added) if added else "") + "\n"
                exp = os.path.join(tmp, f"doc-{passed + failed}.yaml")
                with open(exp, "w", encoding="utf-8") as f:
                    f.write(doc)
                r = subprocess.run([codlctl, "validate", exp], cwd=root, capture_output=True,
                                   text=True, timeout=60)
                kind = "piece" if added else "experiment"
                if r.returncode != 0:
                    failed += 1
                    print(f"FAIL {where} ({kind}): codlctl validate exit {r.returncode}:\n"
                          f"     {(r.stderr or r.stdout).strip()[:400]}")
                    if added:
                        print("     completed with:\n" + textwrap.indent("\n".join(added), "       "))
                else:
                    passed += 1
                    print(f"ok   {where} ({kind})")
    print(f"{passed} passed, {failed} failed ({other} other YAML blocks left out)")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
