"""A training loop profiled by torch.profiler, as a user looking into a figure would do.

Writes, per iteration, the profiler's own durations of the forward pass (a record_function around
it), loss.backward() (likewise) and Optimizer.step + Optimizer.zero_grad (labelled by torch
itself) to the JSON file argv[1]. Nothing in it is written for CoDL.
"""

import json
import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(1)
steps = int(sys.argv[2])
data = TensorDataset(torch.randn(steps * 16, 3, 32, 32), torch.randint(0, 10, (steps * 16,)))
loader = DataLoader(data, batch_size=16)
model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(32 * 8 * 8, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for x, y in loader:
        opt.zero_grad()
        with record_function("train.forward"):
            loss = loss_fn(model(x), y)
        with record_function("train.backward"):
            loss.backward()
        opt.step()

per = {"forward": [], "backward": [], "step": [], "zero_grad": []}
for e in prof.events():
    name = e.name
    key = ("forward" if name == "train.forward" else "backward" if name == "train.backward"
           else "step" if name.startswith("Optimizer.step#") else
           "zero_grad" if name.startswith("Optimizer.zero_grad#") else None)
    if key:
        per[key].append((e.time_range.start, (e.time_range.end - e.time_range.start) / 1e6))
out = {k: [d for _, d in sorted(v)] for k, v in per.items()}
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
