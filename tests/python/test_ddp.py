"""DDP over Gloo, 2 ranks on loopback, each under codl.run: both report comm_s."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import unittest
from typing import List

from codl_test_util import PLAIN_TRAIN, TORCH_MISSING, Run, has_torch, run


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gloo_works() -> bool:
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    return dist.is_available() and dist.is_gloo_available()


@unittest.skipUnless(has_torch(), TORCH_MISSING)
@unittest.skipUnless(gloo_works(), "torch.distributed with Gloo is not available in this torch")
class DdpTest(unittest.TestCase):
    def run_ranks(self) -> List[Run]:
        port = str(free_port())
        results: List[Run] = [None, None]  # type: ignore[list-item]

        def rank(r: int) -> None:
            # As victim.distributed sets it (the launcher torch.distributed.run is not needed).
            env = {"RANK": str(r), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                   "MASTER_PORT": port, "GLOO_SOCKET_IFNAME": "lo"}
            try:
                results[r] = run([PLAIN_TRAIN, "--steps", "20", "--workers", "0", "--width", "8"],
                                 extra_env=env, timeout=60)
            except AssertionError as e:  # timed out: results[r] stays None
                print(f"rank {r}: {e}")

        threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    def test_both_ranks_report_comm(self) -> None:
        # The two ranks hung now and then on a loaded 2-core box, twice in a row once (empty
        # stderr; cause not found yet; a run takes ~3 s alone): up to three tries of 60 s on
        # fresh ports, then the test fails with the hung ranks' Python stacks (run() aborts
        # them under faulthandler). ctest runs it alone (RUN_SERIAL).
        results = self.run_ranks()
        for _ in range(2):
            if all(res is not None for res in results):
                break
            results = self.run_ranks()
        self.assertTrue(all(res is not None for res in results), "a rank timed out three times")
        for r, res in enumerate(results):
            self.assertEqual(res.returncode, 0, f"rank {r}: {res.stderr[-3000:]}")
            steps = res.measured
            self.assertGreaterEqual(len(steps), 15)
            self.assertTrue(all(s["rank"] == r for s in steps))
            comm = [s["phases"].get("comm_s", 0.0) for s in steps]
            self.assertTrue(all(c > 0 for c in comm), f"rank {r}: comm_s {comm}")
            for s in steps:
                self.assertAlmostEqual(sum(s["phases"].values()), s["step_time_s"], delta=1e-5)
                self.assertGreater(s["phases"]["backward_s"], 0)


if __name__ == "__main__":
    unittest.main()
