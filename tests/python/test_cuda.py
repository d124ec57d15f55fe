"""On a CUDA device: GPU phases timed with CUDA events, h2d_s reported, no synchronize added."""

from __future__ import annotations

import os
import tempfile
import unittest

from codl_test_util import TORCH_MISSING, has_torch, run


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


SCRIPT = '''
import torch
from torch.utils.data import DataLoader, TensorDataset
dev = torch.device("cuda")
loader = DataLoader(TensorDataset(torch.randn(1024, 3, 64, 64), torch.randint(0, 10, (1024,))),
                    batch_size=32, pin_memory=True)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 64, 3), torch.nn.ReLU(), torch.nn.Conv2d(64, 64, 3),
                            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                            torch.nn.Linear(64, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
syncs = [0]
orig = torch.cuda.synchronize
def counting(*a, **k):
    syncs[0] += 1
    return orig(*a, **k)
torch.cuda.synchronize = counting
for x, y in loader:
    x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
print("syncs during training", syncs[0])
'''


@unittest.skipUnless(has_torch(), TORCH_MISSING)
@unittest.skipUnless(cuda_available(), "no CUDA device (torch.cuda.is_available() is False)")
class CudaTest(unittest.TestCase):
    def test_gpu_phases(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "gpu_train.py")
            with open(path, "w") as f:
                f.write(SCRIPT)
            r = run([path])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("syncs during training 0", r.stdout)
        steps = r.measured
        self.assertGreater(len(steps), 20)
        for s in steps:
            for name in ("h2d_s", "forward_s", "backward_s", "optimizer_s"):
                self.assertIn(name, s["phases"])
        self.assertGreater(r.median("forward_s"), 0)
        self.assertGreater(r.median("h2d_s"), 0)


if __name__ == "__main__":
    unittest.main()
