"""A stored experiment as pandas DataFrames: ``codl.results.load(DB, ID)``.

Reads the SQLite results database (lib/store, opened read-only) directly; column names are those
of ``codlctl results ID --trials`` / ``--phases`` (docs/results.md, "Long format"):

- ``trials``: one row per trial: experiment_id, experiment, trial, repetition, pairing, role,
  antagonists, intensities, state, metric, metric_unit, value (the trial's ``metric``,
  default elapsed), flagged, excluded, wall_s, victim_cores, victim_cpus, victim_node,
  started_unix_ms, finished_unix_ms, then exit_code, error and median_step_s (the median of
  the victim's per-step field, the progress parser's metric);
- ``steps``: one row per reported victim step: the trial columns experiment_id .. role, then
  seq, step, step_time_s, t_s, warmup and one column per phase (seconds; NaN where a step did
  not report it), in the trial's phase order; ``rank`` when the store keeps it;
- ``phases``: one row per trial, rank and phase: the trial columns, state, excluded, rank (0
  for a single instance), phase, seconds (the rank's median over its measured steps).

``load_ranks(DB, ID)`` gives the ranks of a victim run as several ranks (``victim.distributed``)
as ``codlctl results ID --ranks`` does: one row per trial and rank, with node, exit_code,
wall_s, step_median_s and busy_median_s (step time minus comm_s).
``ID`` may be an experiment id or a unique prefix of one.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Dict, List, NamedTuple, Sequence

import pandas as pd

TRIAL_KEYS = ["experiment_id", "experiment", "trial", "trial_index", "repetition", "pairing", "role",
              "antagonists", "intensities"]


class Results(NamedTuple):
    trials: pd.DataFrame
    steps: pd.DataFrame
    phases: pd.DataFrame


def _connect(db: str) -> sqlite3.Connection:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    return con


def _tables(con: sqlite3.Connection) -> List[str]:
    return [r["name"] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]


def _columns(con: sqlite3.Connection, table: str) -> List[str]:
    return [r["name"] for r in con.execute(f"PRAGMA table_info({table})")]


def _experiment(con: sqlite3.Connection, exp_id: str) -> sqlite3.Row:
    rows = con.execute("SELECT id, name FROM experiments WHERE id = ?", (exp_id,)).fetchall()
    if not rows:
        rows = con.execute("SELECT id, name FROM experiments WHERE id LIKE ? ORDER BY id",
                           (exp_id.replace("%", "") + "%",)).fetchall()
    if not rows:
        raise KeyError(f"no experiment {exp_id!r} in the results database")
    if len(rows) > 1:
        ids = ", ".join(r["id"] for r in rows[:5])
        raise KeyError(f"experiment id prefix {exp_id!r} is ambiguous ({ids})")
    row: sqlite3.Row = rows[0]
    return row


def load(db: str, exp_id: str, metric: str = "elapsed") -> Results:
    """The trials, steps and phases of experiment ``exp_id`` stored in ``db``; ``value`` is the
    per-trial ``metric`` (elapsed, throughput, mean, median, p90, p99) as the store keeps it."""
    con = _connect(db)
    try:
        return _load(con, exp_id, metric)
    finally:
        con.close()


def _load(con: sqlite3.Connection, exp_id: str, metric: str) -> Results:
    exp = _experiment(con, exp_id)
    values: Dict[int, float] = {}
    any_metrics = False  # an older store kept none: value is then the progress metric
    if "trial_metrics" in _tables(con):
        any_metrics = con.execute(
            "SELECT 1 FROM trial_metrics m JOIN trials t ON t.id = m.trial_id WHERE "
            "t.experiment_id = ? LIMIT 1", (exp["id"],)).fetchone() is not None
        for m in con.execute(
                "SELECT m.trial_id, m.value FROM trial_metrics m JOIN trials t ON t.id = "
                "m.trial_id WHERE t.experiment_id = ? AND m.metric = ?", (exp["id"], metric)):
            values[m["trial_id"]] = m["value"]
    tcols = set(_columns(con, "trials"))
    cpu = "victim_cpu_s" if "victim_cpu_s" in tcols else "0"
    cpus = "victim_effective_cpus" if "victim_effective_cpus" in tcols else "''"
    trows = con.execute(
        f"SELECT id, idx, repetition, baseline, pairing, state, error, exit_code, victim_node, "
        f"metric, wall_s, started_unix_ms, finished_unix_ms, {cpu} AS cpu_s, {cpus} AS cpus "
        f"FROM trials WHERE experiment_id = ? ORDER BY idx", (exp["id"],)).fetchall()
    ants: Dict[int, List[sqlite3.Row]] = {}
    for a in con.execute(
            "SELECT a.trial_id, a.name, a.level, a.reached_target FROM trial_antagonists a "
            "JOIN trials t ON t.id = a.trial_id WHERE t.experiment_id = ? ORDER BY a.trial_id, "
            "a.seq", (exp["id"],)):
        ants.setdefault(a["trial_id"], []).append(a)

    trials: List[Dict[str, Any]] = []
    keys: Dict[int, Dict[str, Any]] = {}
    for t in trows:
        mine = ants.get(t["id"], [])
        key = {
            "experiment_id": exp["id"], "experiment": exp["name"], "trial": t["idx"] + 1,
            "trial_index": t["idx"],
            "repetition": t["repetition"],
            "pairing": t["pairing"] or ("baseline" if t["baseline"] else ""),
            "role": "baseline" if t["baseline"] else "interfered",
            "antagonists": ";".join(a["name"] for a in mine),
            "intensities": ";".join(_num(a["level"]) for a in mine),
        }
        keys[t["id"]] = key
        wall = t["wall_s"]
        trials.append(dict(key, **{
            "state": t["state"], "metric": metric,
            "metric_unit": "steps/s" if metric == "throughput" else "s",
            # Trials stored before per-metric values were kept: the progress metric (median).
            "value": values.get(t["id"], None if any_metrics else t["metric"]),
            "flagged": int(any(not a["reached_target"] for a in mine)),
            "excluded": int(t["state"] != "done"),
            "wall_s": wall,
            "victim_cores": (t["cpu_s"] / wall) if t["cpu_s"] and wall else None,
            "victim_cpus": t["cpus"], "victim_node": t["victim_node"],
            "exit_code": t["exit_code"], "error": t["error"],
            "median_step_s": t["metric"],
            "started_unix_ms": t["started_unix_ms"], "finished_unix_ms": t["finished_unix_ms"],
        }))
    trials_df = pd.DataFrame(trials, columns=TRIAL_KEYS + [
        "state", "metric", "metric_unit", "value", "flagged", "excluded", "wall_s",
        "victim_cores", "victim_cpus", "victim_node", "started_unix_ms", "finished_unix_ms",
        "exit_code", "error", "median_step_s"])

    pcols = set(_columns(con, "trial_phase_medians"))
    order_by = "m.trial_id, m.seq IS NULL, m.seq, m.phase" if "seq" in pcols else \
        "m.trial_id, m.phase"
    phase_rows = con.execute(
        f"SELECT m.trial_id, m.phase, m.median_s, t.state FROM trial_phase_medians m "
        f"JOIN trials t ON t.id = m.trial_id WHERE t.experiment_id = ? ORDER BY {order_by}",
        (exp["id"],)).fetchall()
    phase_order: List[str] = []
    phases = []
    for r in phase_rows:
        if r["phase"] not in phase_order:
            phase_order.append(r["phase"])
        phases.append(dict(keys[r["trial_id"]], state=r["state"],
                           excluded=int(r["state"] != "done"), rank=0, phase=r["phase"],
                           seconds=r["median_s"]))
    states = {t["id"]: t["state"] for t in trows}
    for r in _rank_rows(con, exp["id"]):  # the later ranks' medians, in the trial's order
        medians = json.loads(r["phase_medians"] or "{}")
        if r["rank"] == 0 or r["trial_id"] not in keys:
            continue
        for name in phase_order + sorted(set(medians) - set(phase_order)):
            if name in medians:
                state = states[r["trial_id"]]
                phases.append(dict(keys[r["trial_id"]], state=state,
                                   excluded=int(state != "done"), rank=r["rank"], phase=name,
                                   seconds=medians[name]))
    phases_df = pd.DataFrame(phases, columns=TRIAL_KEYS + ["state", "excluded", "rank", "phase",
                                                           "seconds"])

    scols = _columns(con, "victim_steps")
    extra = [c for c in ("rank",) if c in scols]
    sel = ", ".join(["s.trial_id", "s.seq", "s.step", "s.step_time_s", "s.t_s", "s.warmup",
                     "s.phases"] + [f"s.{c}" for c in extra])
    steps: List[Dict[str, Any]] = []
    for s in con.execute(
            f"SELECT {sel} FROM victim_steps s JOIN trials t ON t.id = s.trial_id "
            f"WHERE t.experiment_id = ? ORDER BY t.idx, s.seq", (exp["id"],)):
        row = dict(keys[s["trial_id"]], seq=s["seq"], step=s["step"],
                   step_time_s=s["step_time_s"], t_s=s["t_s"], warmup=int(s["warmup"]))
        for c in extra:
            row[c] = s[c]
        try:
            ph = json.loads(s["phases"] or "{}")
        except ValueError:
            ph = {}
        for name, v in ph.items():
            if name not in phase_order:
                phase_order.append(name)
            row[name] = v
        steps.append(row)
    steps_df = pd.DataFrame(steps, columns=TRIAL_KEYS + ["seq", "step", "step_time_s", "t_s",
                                                         "warmup"] + extra + phase_order)
    return Results(trials_df, steps_df, phases_df)


def _rank_rows(con: sqlite3.Connection, exp_id: str) -> List[sqlite3.Row]:
    if "trial_ranks" not in _tables(con):  # a store older than schema version 10
        return []
    return con.execute(
        "SELECT r.trial_id, r.rank, r.node, r.exit_code, r.wall_s, r.step_median_s, "
        "r.busy_median_s, r.phase_medians FROM trial_ranks r JOIN trials t ON t.id = r.trial_id "
        "WHERE t.experiment_id = ? ORDER BY t.idx, r.rank", (exp_id,)).fetchall()


def load_ranks(db: str, exp_id: str) -> pd.DataFrame:
    """One row per trial and rank of a victim run as several ranks (empty for a single
    instance): the trial columns, state, excluded, rank, node, exit_code, wall_s,
    step_median_s, busy_median_s."""
    con = _connect(db)
    try:
        exp = _experiment(con, exp_id)
        trials = {t["id"]: t for t in con.execute(
            "SELECT id, idx, repetition, baseline, pairing, state FROM trials "
            "WHERE experiment_id = ?", (exp["id"],))}
        rows = []
        for r in _rank_rows(con, exp["id"]):
            t = trials[r["trial_id"]]
            rows.append({
                "experiment_id": exp["id"], "experiment": exp["name"], "trial": t["idx"] + 1,
                "trial_index": t["idx"],
                "repetition": t["repetition"],
                "pairing": t["pairing"] or ("baseline" if t["baseline"] else ""),
                "role": "baseline" if t["baseline"] else "interfered",
                "state": t["state"], "excluded": int(t["state"] != "done"), "rank": r["rank"],
                "node": r["node"], "exit_code": r["exit_code"], "wall_s": r["wall_s"],
                "step_median_s": r["step_median_s"] or None,
                "busy_median_s": r["busy_median_s"] if r["step_median_s"] else None})
        return pd.DataFrame(rows, columns=["experiment_id", "experiment", "trial", "trial_index",
                                           "repetition",
                                           "pairing", "role", "state", "excluded", "rank", "node",
                                           "exit_code", "wall_s", "step_median_s",
                                           "busy_median_s"])
    finally:
        con.close()


def _num(v: Any) -> str:
    """A level as codlctl prints it: 1 not 1.0, 0.5."""
    if v is None:
        return ""
    f = float(v)
    return str(int(f)) if f.is_integer() else repr(f)


def experiments(db: str) -> pd.DataFrame:
    """Every experiment in ``db``: id, name, state, total_trials, created_unix_ms."""
    con = _connect(db)
    try:
        rows: Sequence[sqlite3.Row] = con.execute(
            "SELECT id, name, state, total_trials, created_unix_ms FROM experiments "
            "ORDER BY created_unix_ms").fetchall()
        return pd.DataFrame([dict(r) for r in rows],
                            columns=["id", "name", "state", "total_trials", "created_unix_ms"])
    finally:
        con.close()
