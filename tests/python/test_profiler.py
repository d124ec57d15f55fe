"""codl.run's forward_s, backward_s and optimizer_s against torch.profiler on the same steps."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import unittest

from codl_test_util import SCRIPTS, TORCH_MISSING, has_torch, run

STEPS = 40


@unittest.skipUnless(has_torch(), TORCH_MISSING)
class ProfilerAgreementTest(unittest.TestCase):
    def test_phases_agree_with_the_profiler_within_10_percent(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "prof.json")
            r = run([os.path.join(SCRIPTS, "profiled_train.py"), out, str(STEPS)])
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                prof = json.load(f)
        self.assertEqual(len(prof["forward"]), STEPS)
        self.assertEqual(len(prof["step"]), STEPS)
        steps = {s["step"]: s["phases"] for s in r.measured}
        self.assertEqual(len(steps), STEPS - 1)  # step 0 is warm-up
        # The same steps on both sides: iteration k of the loop is codl step k.
        ks = sorted(steps)
        pairs = {
            "forward_s": [prof["forward"][k] for k in ks],
            "backward_s": [prof["backward"][k] for k in ks],
            "optimizer_s": [prof["step"][k] + prof["zero_grad"][k] for k in ks],
        }
        for phase, theirs in pairs.items():
            ours = statistics.median(steps[k][phase] for k in ks)
            ref = statistics.median(theirs)
            self.assertLess(abs(ours - ref), 0.10 * ref,
                            f"{phase}: codl {ours * 1e3:.3f} ms, profiler {ref * 1e3:.3f} ms")


if __name__ == "__main__":
    unittest.main()
