"""Helpers of the Python tests: run a script under codl.run (or plain) and read its records."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(REPO, "python")
SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
PLAIN_TRAIN = os.path.join(REPO, "experiments", "victims", "plain_train.py")
PYTHON = sys.executable
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)  # the package under test, as PYTHONPATH=python would


def has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


TORCH_MISSING = "torch is not importable by this python (Debian: apt install python3-torch)"


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    records: List[Dict] = field(default_factory=list)  # from CODL_PROGRESS_FD

    @property
    def steps(self) -> List[Dict]:
        return [r for r in self.records if "step_time_s" in r]

    @property
    def measured(self) -> List[Dict]:
        return [r for r in self.steps if not r.get("warmup")]

    def median(self, phase: Optional[str] = None, skip: int = 0) -> float:
        steps = self.measured[skip:]
        if phase is None:
            return statistics.median(s["step_time_s"] for s in steps)
        return statistics.median(s["phases"].get(phase, 0.0) for s in steps)


def env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = PYTHON_DIR + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    e.setdefault("OMP_NUM_THREADS", "1")
    e.setdefault("PYTHONFAULTHANDLER", "1")  # a hung child killed by run() says where it hung
    e.pop("CODL_PROGRESS_FD", None)
    if extra:
        e.update(extra)
    return e


def run(argv: Sequence[str], codl: bool = True, channel: bool = True,
        extra_env: Optional[Dict[str, str]] = None, timeout: float = 120) -> Run:
    """``python3 [-m codl.run] argv...``; with ``channel`` the records come on a pipe named by
    CODL_PROGRESS_FD (as the agent does), else they are read from stdout's JSON lines."""
    cmd = [PYTHON] + (["-m", "codl.run"] if codl else []) + list(argv)
    e = env(extra_env)
    lines: List[str] = []
    reader = None
    pass_fds: tuple = ()
    if channel:
        r, w = os.pipe()
        e["CODL_PROGRESS_FD"] = str(w)
        pass_fds = (w,)

        def read() -> None:
            with os.fdopen(r, "r") as f:
                lines.extend(f)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
    p = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, pass_fds=pass_fds, cwd=REPO)
    if channel:
        os.close(w)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # SIGABRT first: with PYTHONFAULTHANDLER set (env()), Python prints every thread's stack
        # to stderr, so a hang says where it hung; then kill.
        p.send_signal(signal.SIGABRT)
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        raise AssertionError(f"{cmd} timed out after {timeout} s; stderr: {err[-4000:]}")
    if reader:
        reader.join(10)
    else:
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    records = [json.loads(ln) for ln in lines if ln.strip()]
    return Run(p.returncode, out, err, records)
