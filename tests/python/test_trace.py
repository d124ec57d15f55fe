"""codl.run --trace-steps: a PyTorch profiler trace of measured steps, as Chrome-trace JSON."""

from __future__ import annotations

import json
import os
import tempfile
import unittest

from codl_test_util import PLAIN_TRAIN, TORCH_MISSING, has_torch, run


@unittest.skipUnless(has_torch(), TORCH_MISSING)
class TraceTest(unittest.TestCase):
    def test_trace_of_three_measured_steps(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.json")
            r = run(["--warmup-steps", "2", "--trace-steps", "3", "--trace-file", path,
                     PLAIN_TRAIN, "--steps", "9", "--workers", "1", "--width", "8"])
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(path) as f:
                trace = json.load(f)
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        names = [e.get("name", "") for e in events if e.get("ph") == "X"]
        self.assertEqual(sorted(n for n in names if n.startswith("codl.step#")),
                         ["codl.step#2", "codl.step#3", "codl.step#4"])
        # Per step: one fetch, two outermost module calls (the model, the loss), one backward,
        # zero_grad and step.
        for phase, n in (("ai.dataloader.fetch", 3), ("ai.compute.forward", 6),
                         ("ai.compute.backward", 3), ("ai.compute.step", 6)):
            self.assertEqual(names.count(phase), n, phase)
        traced = [s["step"] for s in r.steps if s.get("traced")]
        self.assertEqual(traced, [2, 3, 4])
        self.assertEqual(len(r.steps), 8)


if __name__ == "__main__":
    unittest.main()
