#!/usr/bin/env python3
"""A real PyTorch victim for CoDL: trains a small CNN on image files read from disk.

The input pipeline is the standard one: a map-style Dataset that opens one file per sample and
decodes it into a normalised float tensor, batched by torch.utils.data.DataLoader worker
processes. Reads bypass the page cache (O_DIRECT, or POSIX_FADV_DONTNEED after the read where
the file system refuses O_DIRECT), so storage interference reaches the job as it would on a
dataset larger than memory.

Prints the CoDL JSON-lines progress format on stdout, one flushed line per step:
  {"step": 3, "step_time_s": 0.021, "phases": {"data_wait_s": ..., "compute_s": ...}, "loss": 2.1}
with "h2d_s" added on CUDA, a {"config": true, ...} line first and a {"summary": true, ...} line
last (docs/victim.md). Runs on CPU (Debian's python3-torch 1.13 is enough) and on CUDA.

  python3 experiments/victims/pytorch_cnn.py --data /tmp/codl-cnn --steps 30
"""
import argparse
import errno
import json
import mmap
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

CLASSES = 10
MANIFEST = "codl-cnn-dataset.json"
PAGE = 4096


def emit(record):
    print(json.dumps(record, separators=(",", ":")), flush=True)


def sample_path(data_dir, index):
    return os.path.join(data_dir, "img-%08d.bin" % index)


def sample_bytes(image_size):
    return 1 + 3 * image_size * image_size  # label byte, then CHW uint8 pixels


def generate(data_dir, samples, image_size, seed):
    """Writes `samples` files: a class label and an image = class pattern + noise, so the CNN has
    something to learn (the loss falls). Same seed, same bytes."""
    os.makedirs(data_dir, exist_ok=True)
    manifest = os.path.join(data_dir, MANIFEST)
    if os.path.exists(manifest):
        os.unlink(manifest)
    gen = torch.Generator().manual_seed(seed)
    shape = (3, image_size, image_size)
    patterns = torch.randint(0, 256, (CLASSES,) + shape, generator=gen, dtype=torch.int16)
    for i in range(samples):
        label = i % CLASSES
        noise = torch.randint(-96, 97, shape, generator=gen, dtype=torch.int16)
        image = (patterns[label] + noise).clamp_(0, 255).to(torch.uint8)
        fd = os.open(sample_path(data_dir, i), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, bytes([label]) + image.numpy().tobytes())
            os.fdatasync(fd)  # then drop the pages: the first epoch must read storage too
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    with open(manifest, "w") as f:
        json.dump({"samples": samples, "image_size": image_size, "seed": seed}, f)


def probe_io_mode(path):
    """'direct' when the file system takes O_DIRECT reads, else 'fadvise'."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as e:
        if e.errno in (errno.EINVAL, errno.EOPNOTSUPP):
            return "fadvise"
        raise
    try:
        buf = mmap.mmap(-1, PAGE)  # anonymous mmap: page-aligned, as O_DIRECT needs
        os.preadv(fd, [buf], 0)
        return "direct"
    except OSError as e:
        if e.errno in (errno.EINVAL, errno.EOPNOTSUPP):
            return "fadvise"
        raise
    finally:
        os.close(fd)


class DiskImages(Dataset):
    """One file per sample, read without the page cache and decoded to a normalised tensor."""

    def __init__(self, data_dir, samples, image_size, io_mode):
        self.data_dir, self.samples, self.image_size, self.io_mode = data_dir, samples, image_size, io_mode
        self.size = sample_bytes(image_size)
        self.buf = None  # per worker process: created lazily after fork

    def __len__(self):
        return self.samples

    def read(self, path):
        if self.io_mode == "direct":
            if self.buf is None:
                self.buf = mmap.mmap(-1, (self.size + PAGE - 1) // PAGE * PAGE)
            fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
            try:
                n = os.preadv(fd, [self.buf], 0)
            finally:
                os.close(fd)
            data = self.buf[: self.size]
        else:
            fd = os.open(path, os.O_RDONLY)
            try:
                data = os.pread(fd, self.size, 0)
                n = len(data)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        if n < self.size:
            raise IOError("%s is shorter than %d bytes; regenerate the dataset" % (path, self.size))
        return data

    def __getitem__(self, index):
        data = self.read(sample_path(self.data_dir, index))
        s = self.image_size
        image = torch.frombuffer(bytearray(data[1:]), dtype=torch.uint8).view(3, s, s)
        image = image.float().div_(255.0).sub_(0.5).div_(0.25)
        return image, data[0]


class SmallCNN(nn.Module):
    def __init__(self, image_size):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * (image_size // 4) ** 2, CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def parse_args(argv):
    cpus = os.cpu_count() or 1
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="dataset folder; generated when it holds none")
    p.add_argument("--samples", type=int, default=512, help="images in the dataset (default 512)")
    p.add_argument("--image-size", type=int, default=32, help="square image side, a multiple of 4 (default 32)")
    p.add_argument("--steps", type=int, default=30, help="measured steps (default 30)")
    p.add_argument("--warmup-steps", type=int, default=0,
                   help="steps before them, printed with \"warmup\": true (default 0)")
    p.add_argument("--batch-size", type=int, default=32, help="images per step (default 32)")
    p.add_argument("--workers", type=int, default=min(2, cpus), help="DataLoader worker processes")
    p.add_argument("--threads", type=int, default=0,
                   help="torch intra-op threads; 0 = half the CPUs the workers leave free, 1..4 "
                        "(oversubscribed OpenMP threads spin and make steps 10x slower)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    for name in ("samples", "steps", "batch_size", "image_size"):
        if getattr(a, name) < 1:
            p.error("--%s must be at least 1" % name.replace("_", "-"))
    if a.image_size % 4:
        p.error("--image-size must be a multiple of 4 (two 2x2 poolings)")
    if a.batch_size > a.samples:
        p.error("--batch-size %d is larger than --samples %d" % (a.batch_size, a.samples))
    if a.workers < 0 or a.warmup_steps < 0:
        p.error("--workers and --warmup-steps must not be negative")
    if a.threads == 0:
        a.threads = max(1, min(4, (cpus - a.workers) // 2))
    return a


def ensure_dataset(a):
    manifest = os.path.join(a.data, MANIFEST)
    want = {"samples": a.samples, "image_size": a.image_size}
    if os.path.exists(manifest):
        with open(manifest) as f:
            have = json.load(f)
        if all(have.get(k) == v for k, v in want.items()):
            return
        print("pytorch_cnn: %s holds %s; regenerating for %s" % (a.data, have, want), file=sys.stderr)
    else:
        print("pytorch_cnn: generating %d images in %s" % (a.samples, a.data), file=sys.stderr)
    generate(a.data, a.samples, a.image_size, a.seed)


def main(argv):
    a = parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    if a.device == "cuda" and not torch.cuda.is_available():
        print("pytorch_cnn: --device cuda: no CUDA device available", file=sys.stderr)
        return 1
    cuda = a.device != "cpu" and torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    ensure_dataset(a)
    io_mode = probe_io_mode(sample_path(a.data, 0))

    loader = DataLoader(
        DiskImages(a.data, a.samples, a.image_size, io_mode),
        batch_size=a.batch_size, shuffle=True, drop_last=True, num_workers=a.workers,
        pin_memory=cuda, persistent_workers=a.workers > 0,
        generator=torch.Generator().manual_seed(a.seed))
    model = SmallCNN(a.image_size).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    emit({"config": True, "victim": "pytorch_cnn", "torch": torch.__version__,
          "device": torch.cuda.get_device_name(0) if cuda else "cpu", "io_mode": io_mode,
          "samples": a.samples, "image_size": a.image_size, "batch_size": a.batch_size,
          "workers": a.workers, "threads": a.threads, "steps": a.steps,
          "warmup_steps": a.warmup_steps})

    batches = iter(loader)
    times = []
    prev = time.perf_counter()
    for step in range(a.warmup_steps + a.steps):
        t0 = time.perf_counter()
        try:
            x, y = next(batches)
        except StopIteration:  # next epoch; persistent workers are reused
            batches = iter(loader)
            x, y = next(batches)
        t1 = time.perf_counter()
        phases = {"data_wait_s": t1 - t0}
        if cuda:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            phases["h2d_s"], t1 = t2 - t1, t2
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        loss_value = loss.item()  # waits for the device, so compute_s is the real compute time
        t2 = time.perf_counter()
        phases["compute_s"] = t2 - t1
        record = {"step": step, "step_time_s": t2 - prev, "phases": phases, "loss": round(loss_value, 4)}
        if step < a.warmup_steps:
            record["warmup"] = True
        else:
            times.append(t2 - prev)
        emit(record)
        prev = t2
    median = statistics.median(times)
    emit({"summary": True, "steps": a.steps, "median_step_time_s": median,
          "samples_per_s": a.batch_size / median if median > 0 else 0.0})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
