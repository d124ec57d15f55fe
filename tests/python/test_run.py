"""python3 -m codl.run on unmodified PyTorch scripts (issue 27, "Tests and figures")."""

from __future__ import annotations

import os
import unittest

from codl_test_util import PLAIN_TRAIN, SCRIPTS, TORCH_MISSING, has_torch, run

TRAIN_PHASES = {"data_wait_s", "forward_s", "backward_s", "optimizer_s", "other_s"}


@unittest.skipUnless(has_torch(), TORCH_MISSING)
class FastLoaderTest(unittest.TestCase):
    """The plain script with 2 workers and a cheap __getitem__: compute dominates."""

    @classmethod
    def setUpClass(cls) -> None:
        # Width 32: compute large enough beside the workers' batches on a busy 2-core machine.
        cls.r = run([PLAIN_TRAIN, "--steps", "35", "--workers", "2", "--item-work-ms", "0.02",
                     "--width", "32"])

    def test_exit_and_own_stdout(self) -> None:
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        lines = self.r.stdout.splitlines()
        self.assertRegex(lines[-1],
                         r"^done: 35 steps, [0-9.]+ s after the first batch \([0-9.]+ s CPU\)$")
        self.assertEqual([ln.split()[1] for ln in lines[:-1]], ["10", "20", "30"])
        self.assertFalse(any(ln.startswith("{") for ln in lines))  # no record on stdout

    def test_every_step_is_recorded_with_the_training_phases(self) -> None:
        steps = self.r.steps
        self.assertEqual(len(steps), 34)  # the 35th step ends at a __next__ never called
        self.assertEqual([s["step"] for s in steps], list(range(34)))
        self.assertTrue(steps[0].get("warmup"))  # --warmup-steps defaults to 1
        for s in steps:
            self.assertEqual(set(s["phases"]), TRAIN_PHASES)
            self.assertAlmostEqual(sum(s["phases"].values()), s["step_time_s"], delta=1e-5)
            self.assertEqual(s["samples"], 32)  # the batch's first dimension

    def test_named_phases_explain_the_step(self) -> None:
        step = self.r.median()
        self.assertLess(self.r.median("other_s"), 0.10 * step)
        for name in ("forward_s", "backward_s", "optimizer_s"):
            self.assertGreater(self.r.median(name), 0)

    def test_fast_loader_waits_little(self) -> None:
        # Below a quarter of the step (typically ~5 %; CI once saw 10.1 % on a loaded 2-core
        # box), against at least half for the slow loader below: the attribution's contrast,
        # not a speed goal (those live in bench/).
        self.assertLess(self.r.median("data_wait_s"), 0.25 * self.r.median())


@unittest.skipUnless(has_torch(), TORCH_MISSING)
class LoaderBottleneckTest(unittest.TestCase):
    def test_slow_loader_is_data_wait(self) -> None:
        # 16 samples x 6 ms of CPU per batch on one worker: ~100 ms a step against ~3 ms of
        # compute (one worker leaves the training loop a core even on a busy 2-core machine).
        r = run([PLAIN_TRAIN, "--steps", "12", "--workers", "1", "--item-work-ms", "6",
                 "--width", "8", "--batch-size", "16", "--samples", "512"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreaterEqual(r.median("data_wait_s"), 0.50 * r.median())


@unittest.skipUnless(has_torch(), TORCH_MISSING)
class LauncherTest(unittest.TestCase):
    """The script runs as ``python3 SCRIPT ARGS`` would: argv, __main__, sys.path[0], exit."""

    def same_as_plain(self, how: str) -> None:
        script = os.path.join(SCRIPTS, "exit_status.py")
        plain = run([script, how], codl=False)
        under = run([script, how])
        self.assertEqual(under.returncode, plain.returncode)
        self.assertEqual(under.stdout, plain.stdout)
        self.assertIn("name __main__ file exit_status.py", under.stdout)
        self.assertIn("path0 True", under.stdout)
        self.assertEqual(plain.records, [])
        self.assertEqual(len(under.steps), 2 * 4)  # 2 epochs of 4 batches: StopIteration ends the last
        return under, plain

    def test_exit_status(self) -> None:
        under, plain = self.same_as_plain("3")
        self.assertEqual(under.returncode, 3)

    def test_exception(self) -> None:
        under, plain = self.same_as_plain("raise")
        self.assertEqual(under.returncode, 1)
        self.assertEqual(under.stderr.splitlines()[-1], "ValueError: on purpose")

    def test_signal(self) -> None:
        under, plain = self.same_as_plain("sigterm")
        self.assertEqual(under.returncode, -15)

    def test_max_steps_stops_cleanly(self) -> None:
        r = run(["--max-steps", "5", "--warmup-steps", "2", PLAIN_TRAIN, "--steps", "100000",
                 "--workers", "1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.steps), 7)
        self.assertEqual(len(r.measured), 5)
        self.assertNotIn("done", r.stdout)  # stopped, not run to its end
        self.assertTrue(r.records[-1].get("summary"))

    def test_loader_only(self) -> None:
        r = run(["--phases", "loader-only", os.path.join(SCRIPTS, "exit_status.py"), "0"])
        self.assertEqual(r.returncode, 0, r.stderr)
        for s in r.steps:
            self.assertEqual(set(s["phases"]), {"data_wait_s", "other_s"})

    def test_bad_option_is_a_usage_error(self) -> None:
        r = run(["--max-steps", "-1", PLAIN_TRAIN])
        self.assertEqual(r.returncode, 2)
        self.assertIn("--max-steps", r.stderr)


@unittest.skipUnless(has_torch(), TORCH_MISSING)
class ExplicitApiTest(unittest.TestCase):
    def test_phase_composes_with_codl_run(self) -> None:
        r = run([os.path.join(SCRIPTS, "with_api.py")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.steps), 16)  # 256 / 16 batches
        for s in r.measured:
            self.assertGreater(s["phases"]["augment_s"], 0.0025)
            self.assertIn("forward_s", s["phases"])
            self.assertAlmostEqual(sum(s["phases"].values()), s["step_time_s"], delta=1e-5)

    def test_instrument_without_codl_run(self) -> None:
        r = run([os.path.join(SCRIPTS, "instrumented.py")], codl=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "trained\n")
        self.assertEqual(len(r.steps), 20)  # 320 / 16 batches
        for s in r.steps:
            self.assertEqual(set(s["phases"]), TRAIN_PHASES)
            self.assertGreater(s["phases"]["forward_s"], 0)
            self.assertGreater(s["phases"]["optimizer_s"], 0)

    def test_instrument_under_codl_run_counts_once(self) -> None:
        # The model and optimizer are hooked twice (globally by codl.run, and by the script).
        r = run([os.path.join(SCRIPTS, "instrumented.py")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.steps), 20)
        for s in r.steps:
            self.assertEqual(set(s["phases"]), TRAIN_PHASES)
            self.assertAlmostEqual(sum(s["phases"].values()), s["step_time_s"], delta=1e-5)


if __name__ == "__main__":
    unittest.main()
