#!/usr/bin/env python3
"""What codl.run's hooks cost per training step, measured in one process on a near-empty step.

A DataLoader (no workers) over 1-sample batches, a 2-layer model of 4 units, SGD: a step of a
few hundred microseconds that is almost all framework overhead, so the hooks' added time
stands out. Blocks of STEPS steps run alternately without hooks and with them (they are
installed once, then switched on and off through codl's recorder), and the per-step difference
of the medians is the hooks' cost in microseconds (CPU time of this process, and wall).

  /usr/bin/python3 bench/python/hook_cost.py [--blocks 20] [--steps 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Callable, List, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "python"))

import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from codl import api, torch_hooks  # noqa: E402


def make_loop(steps: int) -> Callable[[], None]:
    torch.set_num_threads(1)
    loader = DataLoader(TensorDataset(torch.randn(steps, 4)), batch_size=1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def loop() -> None:
        for (x,) in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()

    return loop


def timed(loop: Callable[[], None], steps: int) -> Tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    loop()
    return (time.perf_counter() - w) / steps, (time.process_time() - c) / steps


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--blocks", type=int, default=20)
    p.add_argument("--steps", type=int, default=2000)
    a = p.parse_args()

    class Null(api.Sink):
        def __init__(self) -> None:
            self.fd = None
            self.lines = 0

        def write(self, record: dict) -> None:
            self.lines += 1

    sink = Null()
    rec = api.configure()
    rec.sink = sink
    torch_hooks.install(rec)
    loop = make_loop(a.steps)  # the optimizer is made after install: its step is hooked
    off: List[Tuple[float, float]] = []
    on: List[Tuple[float, float]] = []
    for i in range(a.blocks):
        for enabled in ((False, True) if i % 2 == 0 else (True, False)):
            # Off: the hooks still run but find a recorder owned by another thread and return
            # at once, so the off blocks keep that check; their cost is the upper bound below.
            rec.thread = threading_ident() if enabled else -1
            (on if enabled else off).append(timed(loop, a.steps))
    rec.close()
    for k, what in ((0, "wall"), (1, "CPU")):
        f = statistics.median(x[k] for x in off)
        n = statistics.median(x[k] for x in on)
        print(f"{what}: {f * 1e6:.1f} us/step with the hooks idle, {n * 1e6:.1f} us/step "
              f"recording: +{(n - f) * 1e6:.1f} us per step")
    print(f"{sink.lines} records written; {a.blocks} blocks of {a.steps} steps each way")


def threading_ident() -> int:
    import threading

    return threading.get_ident()


if __name__ == "__main__":
    main()
