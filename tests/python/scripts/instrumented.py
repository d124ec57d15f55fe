"""No codl.run: the script names its loader, model and optimizer with codl.instrument."""

import torch
from torch.utils.data import DataLoader, TensorDataset

import codl

loader = DataLoader(TensorDataset(torch.randn(320, 64), torch.randn(320, 1)), batch_size=16)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
codl.instrument(loader=loader, model=model, optimizer=opt)
for x, y in loader:
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
print("trained")
