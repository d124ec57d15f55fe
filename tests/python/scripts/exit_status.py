"""Ends the way argv[1] says after a few loader steps: an exit status, an exception or SIGTERM."""

import os
import signal
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.arange(64.0).reshape(16, 4)), batch_size=4)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    for (x,) in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    print(f"epoch {epoch} argv {sys.argv[1:]} name {__name__} file {os.path.basename(__file__)}")
print("path0", sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
how = sys.argv[1]
if how == "raise":
    raise ValueError("on purpose")
if how == "sigterm":
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGTERM)
sys.exit(int(how))
