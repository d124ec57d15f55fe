"""A loop under codl.run that adds its own stage with codl.phase (the explicit API composes)."""

import time

import torch
from torch.utils.data import DataLoader, TensorDataset

import codl

loader = DataLoader(TensorDataset(torch.randn(256, 3, 16, 16)), batch_size=16)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.Flatten(), torch.nn.LazyLinear(2)
                            if hasattr(torch.nn, "LazyLinear") else torch.nn.Linear(8 * 14 * 14, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for (x,) in loader:
    with codl.phase("augment"):
        end = time.perf_counter() + 0.003
        while time.perf_counter() < end:
            pass
        x = x.flip(3)
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
