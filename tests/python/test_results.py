"""codl.results.load: a stored experiment as pandas DataFrames, columns as docs/results.md names.

The database is made with the store's own schema: the migrations' SQL read from
lib/store/migrations.cc, applied in order (so the test follows the schema as it changes).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import tempfile
import unittest

from codl_test_util import REPO


def has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def make_db(path: str) -> None:
    with open(os.path.join(REPO, "lib", "store", "migrations.cc")) as f:
        blocks = re.findall(r'R"sql\((.*?)\)sql"', f.read(), re.S)
    assert blocks, "no migration SQL found in lib/store/migrations.cc"
    con = sqlite3.connect(path)
    for sql in blocks:
        con.executescript(sql)
    con.execute(f"PRAGMA user_version = {len(blocks)}")
    con.execute("INSERT INTO experiments (id, name, state) VALUES ('e-1234', 'py', 'done')")
    con.execute("INSERT INTO experiments (id, name, state) VALUES ('f-9', 'other', 'done')")
    trials = [(1, 0, 1, "baseline", 0.10), (2, 1, 0, "membw@0.5", 0.15)]
    for tid, idx, base, pairing, metric in trials:
        con.execute("INSERT INTO trials (id, experiment_id, idx, baseline, pairing, state, metric,"
                    " wall_s, victim_node) VALUES (?, 'e-1234', ?, ?, ?, 'done', ?, 2.0, 'n1')",
                    (tid, idx, base, pairing, metric))
        for seq, (name, med) in enumerate([("data_wait_s", 0.01 * tid), ("forward_s", 0.04)]):
            con.execute("INSERT INTO trial_phase_medians (trial_id, phase, median_s, seq) "
                        "VALUES (?, ?, ?, ?)", (tid, name, med, seq))
        for seq in range(3):
            ph = {"data_wait_s": 0.01 * tid, "forward_s": 0.04}
            if seq == 2:
                ph["comm_s"] = 0.002
            con.execute("INSERT INTO victim_steps (trial_id, seq, step, step_time_s, t_s, warmup,"
                        " phases) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (tid, seq, seq, metric, 0.1 * seq, int(seq == 0), json.dumps(ph)))
    con.execute("INSERT INTO trial_metrics (trial_id, metric, value) VALUES (1, 'elapsed', 4.0)")
    con.execute("INSERT INTO trial_metrics (trial_id, metric, value) VALUES (2, 'elapsed', 6.0)")
    con.execute("INSERT INTO trial_antagonists (trial_id, seq, name, injector, level, "
                "reached_target) VALUES (2, 0, 'membw', 'memcpy', 0.5, 0)")
    # Trial 2 ran as two ranks (victim.distributed): rank 1 on n2, its own phase medians.
    for rank, node, busy, medians in [(0, "n1", 0.05, {"data_wait_s": 0.02, "comm_s": 0.1}),
                                      (1, "n2", 0.14, {"data_wait_s": 0.03, "comm_s": 0.01})]:
        con.execute("INSERT INTO trial_ranks (trial_id, rank, node, exit_code, wall_s, "
                    "step_median_s, busy_median_s, phase_medians) VALUES (2, ?, ?, 0, 2.0, 0.15, "
                    "?, ?)", (rank, node, busy, json.dumps(medians)))
    con.commit()
    con.close()


@unittest.skipUnless(has_pandas(), "pandas is not importable (Debian: apt install python3-pandas)")
class ResultsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()
        cls.db = os.path.join(cls.tmp.name, "r.db")
        make_db(cls.db)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def test_trials(self) -> None:
        from codl import results

        r = results.load(self.db, "e-1")  # a unique prefix
        t = r.trials
        self.assertEqual(list(t["trial"]), [1, 2])  # numbered from 1, as codlctl shows trials
        self.assertEqual(list(t["trial_index"]), [0, 1])  # the store's and the plan's index
        self.assertEqual(list(t["role"]), ["baseline", "interfered"])
        self.assertEqual(list(t["pairing"]), ["baseline", "membw@0.5"])
        self.assertEqual(list(t["antagonists"]), ["", "membw"])
        self.assertEqual(list(t["intensities"]), ["", "0.5"])
        self.assertEqual(list(t["flagged"]), [0, 1])
        self.assertEqual(list(t["value"]), [4.0, 6.0])  # the elapsed metric by default
        self.assertEqual(list(t["metric"]), ["elapsed", "elapsed"])
        self.assertAlmostEqual(t["median_step_s"][1], 0.15)
        self.assertEqual(list(results.load(self.db, "e-1234", metric="p99").trials["value"]
                              .isna()), [True, True])
        self.assertEqual(set(t["experiment"]), {"py"})

    def test_steps_have_one_column_per_phase(self) -> None:
        import codl

        s = codl.results.load(self.db, "e-1234").steps
        self.assertEqual(len(s), 6)
        cols = list(s.columns)
        self.assertEqual(cols[cols.index("warmup") + 1:],
                         ["rank", "data_wait_s", "forward_s", "comm_s"])
        self.assertEqual(set(s["rank"]), {0})
        self.assertEqual(int(s["warmup"].sum()), 2)
        self.assertAlmostEqual(s[s.trial == 2]["data_wait_s"].iloc[0], 0.02)
        self.assertEqual(int(s["comm_s"].notna().sum()), 2)

    def test_phases_long_format(self) -> None:
        from codl import results

        p = results.load(self.db, "e-1234").phases
        self.assertEqual(list(p.columns[-5:]), ["state", "excluded", "rank", "phase", "seconds"])
        self.assertEqual(list(p[p.trial == 1]["phase"]), ["data_wait_s", "forward_s"])
        self.assertEqual(list(p[p.trial == 1]["rank"]), [0, 0])
        # Trial 2's rank 1: its own medians, in the trial's phase order then the rest.
        r1 = p[(p.trial == 2) & (p["rank"] == 1)]
        self.assertEqual(list(r1["phase"]), ["data_wait_s", "comm_s"])
        self.assertAlmostEqual(r1["seconds"].iloc[0], 0.03)
        self.assertEqual(set(p["excluded"]), {0})

    def test_ranks(self) -> None:
        from codl import results

        r = results.load_ranks(self.db, "e-1234")
        self.assertEqual(list(r["rank"]), [0, 1])
        self.assertEqual(list(r["node"]), ["n1", "n2"])
        self.assertEqual(list(r["trial"]), [2, 2])
        self.assertEqual(r["busy_median_s"].idxmax(), 1)  # rank 1 is the one the other waits for

    def test_unknown_or_ambiguous_id(self) -> None:
        from codl import results

        with self.assertRaisesRegex(KeyError, "no experiment"):
            results.load(self.db, "zzz")
        con = sqlite3.connect(self.db)
        con.execute("INSERT INTO experiments (id, name, state) VALUES ('e-5', 'x', 'done')")
        con.commit()
        con.close()
        with self.assertRaisesRegex(KeyError, "ambiguous"):
            results.load(self.db, "e-")


if __name__ == "__main__":
    unittest.main()
