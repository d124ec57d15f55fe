#!/usr/bin/env python3
"""codl.run's overhead: the same unmodified script with and without instrumentation.

Runs experiments/victims/plain_train.py (or --script) alternately as ``python3 SCRIPT`` and
``python3 -m codl.run SCRIPT`` (interleaved, A B A B ..., so drifts in the machine's load hit
both alike), reads the training time the script itself prints ("done: N steps, T s after the
first batch (C s CPU)"), and reports the ratio of mean step times instrumented / plain with a
bootstrap 95 % CI over the pairs, for wall time and for the main process's CPU time (where the
hooks run; less disturbed by other load on a shared machine). Goal (issue 27): <= 1.02 on CPU.

  /usr/bin/python3 bench/python/overhead.py --pairs 10 -- --steps 150 --workers 2
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
from typing import List, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DONE = re.compile(r"^done: (\d+) steps, ([0-9.]+) s after the first batch \(([0-9.]+) s CPU\)$",
                  re.M)


def one(script: str, args: Sequence[str], codl: bool) -> Tuple[float, float]:
    """(wall, CPU) seconds per step of one run; CPU is the main process's (time.process_time:
    every thread of it, not the loader's worker processes), where codl's hooks run."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(REPO, "python")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.pop("CODL_PROGRESS_FD", None)
    cmd = [sys.executable] + (["-m", "codl.run"] if codl else []) + [script] + list(args)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=REPO)
    m = DONE.search(p.stdout)
    if p.returncode != 0 or not m:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    steps, seconds, cpu = int(m.group(1)), float(m.group(2)), float(m.group(3))
    return seconds / (steps - 1), cpu / (steps - 1)  # from the first batch: steps - 1 intervals


def bootstrap_ratio(pairs: List[Tuple[float, float]], n: int = 10000,
                    seed: int = 1) -> Tuple[float, float, float]:
    rng = random.Random(seed)
    ratio = statistics.fmean(b for _, b in pairs) / statistics.fmean(a for a, _ in pairs)
    boots = []
    for _ in range(n):
        s = [pairs[rng.randrange(len(pairs))] for _ in pairs]
        boots.append(statistics.fmean(b for _, b in s) / statistics.fmean(a for a, _ in s))
    boots.sort()
    return ratio, boots[int(0.025 * n)], boots[int(0.975 * n) - 1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=10)
    p.add_argument("--script", default=os.path.join(REPO, "experiments", "victims",
                                                    "plain_train.py"))
    p.add_argument("script_args", nargs="*", help="after --: the script's arguments")
    a = p.parse_args()
    args = a.script_args or ["--steps", "150", "--workers", "2"]
    wall: List[Tuple[float, float]] = []
    cpu: List[Tuple[float, float]] = []
    for i in range(a.pairs):
        order = [False, True] if i % 2 == 0 else [True, False]  # alternate who goes first
        got = {codl: one(a.script, args, codl) for codl in order}
        wall.append((got[False][0], got[True][0]))
        cpu.append((got[False][1], got[True][1]))
        print(f"pair {i + 1}/{a.pairs}: plain {got[False][0] * 1e3:.3f} ms/step "
              f"({got[False][1] * 1e3:.3f} CPU), codl.run {got[True][0] * 1e3:.3f} ms/step "
              f"({got[True][1] * 1e3:.3f} CPU)", flush=True)
    print(f"script args: {' '.join(args)}; {a.pairs} interleaved pairs")
    for what, pairs in (("wall", wall), ("main-process CPU", cpu)):
        ratio, lo, hi = bootstrap_ratio(pairs)
        print(f"{what}: plain {statistics.fmean(x for x, _ in pairs) * 1e3:.3f} ms/step, "
              f"codl.run {statistics.fmean(y for _, y in pairs) * 1e3:.3f} ms/step, "
              f"ratio {ratio:.4f} (bootstrap 95% CI {lo:.4f} .. {hi:.4f})")


if __name__ == "__main__":
    main()
