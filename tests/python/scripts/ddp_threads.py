"""A 1-rank Gloo DDP job for test_ddp: codl's comm timing must run on codl's own thread.

Run under ``codl.run``. Two DDP models train side by side: one with codl's all-reduce (no hook
of the job's) and one with the job's own hook (torch's allreduce_hook, registered after the
constructor), each checked against the same model trained without DDP. Prints one JSON line
``{"threads": [...], "max_grad_diff": x}``: the threads codl's comm spans were recorded on.
"""

from __future__ import annotations

import copy
import json
import os
import threading

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

from codl import api

threads = set()
orig_span = api.Recorder.comm_span


def comm_span(self, start, end):  # type: ignore[no-untyped-def]
    threads.add(threading.current_thread().name)
    orig_span(self, start, end)


api.Recorder.comm_span = comm_span  # type: ignore[method-assign]


def main() -> None:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("gloo", rank=0, world_size=1)
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    plain = copy.deepcopy(base)
    ours = DDP(copy.deepcopy(base))
    theirs = DDP(copy.deepcopy(base))
    theirs.register_comm_hook(None, default_hooks.allreduce_hook)
    models = [plain, ours, theirs]
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in models]
    x, y = torch.randn(64, 16), torch.randn(64, 4)
    diff = 0.0
    for _ in range(12):
        grads = []
        for m, opt in zip(models, opts):
            opt.zero_grad()
            torch.nn.functional.mse_loss(m(x), y).backward()
            grads.append([p.grad.clone() for p in m.parameters()])
            opt.step()
        for g in grads[1:]:
            diff = max(diff, max((a - b).abs().max().item() for a, b in zip(grads[0], g)))
    dist.destroy_process_group()
    print(json.dumps({"threads": sorted(threads), "max_grad_diff": diff}), flush=True)


if __name__ == "__main__":
    main()
