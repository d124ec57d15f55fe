"""A plain PyTorch training script, written with no knowledge of CoDL.

A map-style Dataset whose __getitem__ costs CPU time (a synthetic "decode"), a DataLoader with
worker processes, a small CNN, SGD, a print every 10 steps. Optionally DistributedDataParallel
over Gloo when started with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT in the environment.

Under CoDL it runs unchanged: python3 -m codl.run experiments/victims/plain_train.py [ARGS]
"""

import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class SyntheticImages(Dataset):
    def __init__(self, n, work_ms, seed=0):
        self.n = n
        self.work_s = work_ms / 1000.0
        self.seed = seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 1000003 + i)
        label = i % 10
        img = torch.randn(3, 32, 32, generator=g) * 0.5 + (label / 10.0)
        # "decode": burn CPU for work_ms, as JPEG decoding and augmentation would
        deadline = time.perf_counter() + self.work_s
        x = 0
        while time.perf_counter() < deadline:
            x += 1
        return img, label


class SmallCNN(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.fc = nn.Linear(2 * width * 8 * 8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--samples", type=int, default=2048)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--item-work-ms", type=float, default=0.05, help="CPU time per sample")
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    distributed = "RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1
    model = SmallCNN(args.width)
    if distributed:
        torch.distributed.init_process_group("gloo")
        model = nn.parallel.DistributedDataParallel(model)
    rank = int(os.environ.get("RANK", "0"))

    data = SyntheticImages(args.samples, args.item_work_ms, seed=rank)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers, persistent_workers=args.workers > 0,
                        drop_last=True)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    step = 0
    start = time.time()
    first = None  # timed from the first batch on: the workers' start-up is not training
    while step < args.steps:
        for images, labels in loader:
            if first is None:
                first, first_cpu = time.perf_counter(), time.process_time()
            opt.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            opt.step()
            step += 1
            if step % 10 == 0:
                print(f"step {step} loss {loss.item():.4f} ({time.time() - start:.1f} s)",
                      flush=True)
            if step >= args.steps:
                break
    if distributed:
        torch.distributed.destroy_process_group()
    print(f"done: {step} steps, {time.perf_counter() - first:.4f} s after the first batch "
          f"({time.process_time() - first_cpu:.4f} s CPU)", flush=True)


if __name__ == "__main__":
    main()
