"""The step recorder behind codl's explicit API (codl.api) and codl.run's PyTorch hooks
(codl.torch_hooks), with the phase names both use.

Time on the recording thread is charged exclusively: at every transition (a phase entered or
left, a step boundary) the time since the previous transition goes to the innermost open phase,
or to ``other_s`` when none is open. So the phases of a step always sum to its ``step_time_s``.
Communication (``comm_s``) is timed on another thread (codl's, waiting for the futures of DDP's
comm hooks): its in-flight union is moved out of ``backward_s`` where the two overlap.

One JSON line per step, in the jsonl progress format the CoDL agent parses (docs/victim.md,
"Progress formats"), is written to the file descriptor in ``CODL_PROGRESS_FD`` when it is set,
else to ``sys.stdout``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

OTHER = "other_s"
DATA_WAIT = "data_wait_s"
H2D = "h2d_s"
FORWARD = "forward_s"
BACKWARD = "backward_s"
OPTIMIZER = "optimizer_s"
COMM = "comm_s"
# Emitted first, in this order (the agent shows pipeline phases in the order first reported).
PIPELINE_ORDER = (DATA_WAIT, H2D, FORWARD, BACKWARD, COMM, OPTIMIZER)

# Who ends steps, strongest first: an explicit codl.step_end() wins over DataLoader iteration,
# which wins over optimizer.step().
MODE_NONE, MODE_OPTIMIZER, MODE_LOADER, MODE_EXPLICIT = 0, 1, 2, 3

_now = time.perf_counter
_get_ident = threading.get_ident
# This process's pid, kept current across fork (os.getpid is a system call; the hooks ask on
# every module call). Registered with the first recorder, not at import.
_pid = [0]
_fork_hook_registered = [False]


def _after_fork() -> None:
    _pid[0] = os.getpid()


def _track_pid() -> None:
    if not _fork_hook_registered[0]:
        _fork_hook_registered[0] = True
        os.register_at_fork(after_in_child=_after_fork)
    _pid[0] = os.getpid()


def phase_key(name: str) -> str:
    """A phase's key in the records: the name with ``_s`` appended unless it ends so."""
    if not name or not isinstance(name, str):
        raise ValueError("codl.phase: the name must be a non-empty string")
    return name if name.endswith("_s") else name + "_s"


class Sink:
    """Where records go: CODL_PROGRESS_FD (one os.write per line, atomic on a pipe) or stdout."""

    def __init__(self) -> None:
        self.fd: Optional[int] = None
        raw = os.environ.get("CODL_PROGRESS_FD", "")
        if raw:
            try:
                fd = int(raw)
                os.fstat(fd)
                self.fd = fd
            except (ValueError, OSError) as e:
                sys.stderr.write(f"codl: CODL_PROGRESS_FD={raw!r} is not an open descriptor "
                                 f"({e}); writing progress to stdout\n")

    def write(self, record: Dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":")) + "\n"
        if self.fd is not None:
            data = line.encode()
            while data:
                try:
                    n = os.write(self.fd, data)
                except InterruptedError:
                    continue
                except OSError:
                    return  # the reader went away; the job goes on
                data = data[n:]
            return
        try:
            sys.stdout.write(line)
            sys.stdout.flush()
        except (OSError, ValueError):
            pass


class _PendingStep:
    """A finished step whose GPU-side phases wait for their CUDA events."""

    def __init__(self, record: Dict[str, Any], gpu: List[Tuple[str, Any, Any]]) -> None:
        self.record = record
        self.gpu = gpu


class Recorder:
    """Process-wide step recorder. Use the module functions (``recorder()``) rather than a new one."""

    def __init__(self, warmup_steps: int = 0, max_steps: int = 0,
                 sink: Optional[Sink] = None) -> None:
        self.warmup_steps = warmup_steps
        self.max_steps = max_steps
        self.sink = sink or Sink()
        self.mode = MODE_NONE
        _track_pid()
        self.pid = _pid[0]
        self.thread = threading.get_ident()
        self.step_index = 0
        self.measured = 0
        self.step_open = False
        self.step_start = 0.0
        self.last_t = 0.0
        self.stack: List[str] = []
        self.depth: Dict[str, int] = {}
        self.acc: Dict[str, float] = {}
        self.samples: Optional[int] = None
        self.backward_spans: List[Tuple[float, float]] = []
        self.seen: List[str] = []  # every phase reported so far, first-reported order
        self.order: List[str] = []  # the same, pipeline phases first: the records' key order
        self.comm_lock = threading.Lock()
        self.comm_spans: List[Tuple[float, float]] = []
        # GPU phases: name -> CUDA event factory and open event; set by torch_hooks on CUDA.
        self.gpu_phases: Tuple[str, ...] = ()
        self.event_factory: Optional[Callable[[], Any]] = None
        self.gpu_open: Dict[str, Any] = {}
        self.gpu_done: List[Tuple[str, Any, Any]] = []
        self.pending: List[_PendingStep] = []
        self.config: Dict[str, Any] = {}
        # A profiler trace of some steps (torch_hooks.Tracer): told of every step and phase.
        self.tracer: Optional[Any] = None
        self.config_sent = False
        self.stop_requested = False
        self.closed = False
        self.started = _now()
        rank = os.environ.get("RANK")
        self.rank: Optional[int] = int(rank) if rank and rank.isdigit() else None

    # ---- ownership: only the thread and process that record steps touch the stack ----
    def _mine(self) -> bool:
        return _get_ident() == self.thread and _pid[0] == self.pid

    def _charge(self, now: float) -> None:
        if not self.step_open:
            self.last_t = now
            return
        name = self.stack[-1] if self.stack else OTHER
        dt = now - self.last_t
        if dt > 0:
            self.acc[name] = self.acc.get(name, 0.0) + dt
            if name == BACKWARD:
                self.backward_spans.append((self.last_t, now))
        self.last_t = now

    def _open_step(self, now: float) -> None:
        self.step_open = True
        self.step_start = now
        self.last_t = now

    # ---- phases ----
    def enter(self, name: str) -> None:
        if not self._mine():
            return
        d = self.depth.get(name, 0)
        self.depth[name] = d + 1
        if d:
            return  # re-entered (a global and a per-object hook, or nesting): counted once
        now = _now()
        if not self.step_open and self.mode in (MODE_NONE, MODE_OPTIMIZER, MODE_EXPLICIT):
            self._open_step(now)
        self._charge(now)
        self.stack.append(name)
        if self.tracer is not None:
            self.tracer.phase_begin(name)
        if self.event_factory is not None and name in self.gpu_phases:
            ev = self.event_factory()
            ev.record()
            self.gpu_open[name] = ev

    def exit(self, name: str) -> bool:
        """Leaves a phase; True when this closed it (the outermost of re-entered calls)."""
        if not self._mine():
            return False
        d = self.depth.get(name, 0)
        if d <= 0:
            return False
        self.depth[name] = d - 1
        if d > 1:
            return False
        self._charge(_now())
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i] == name:
                del self.stack[i]
                break
        if self.tracer is not None:
            self.tracer.phase_end(name)
        start = self.gpu_open.pop(name, None)
        if start is not None and self.event_factory is not None:
            end = self.event_factory()
            end.record()
            self.gpu_done.append((name, start, end))
        return True

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        key = phase_key(name)
        self.enter(key)
        try:
            yield
        finally:
            self.exit(key)

    def comm_span(self, start: float, end: float) -> None:
        """Any thread: an all-reduce was in flight from start to end (perf_counter seconds)."""
        with self.comm_lock:
            self.comm_spans.append((start, end))

    # ---- steps ----
    def boundary(self, mode: int, reopen: bool = True, samples: Optional[int] = None) -> None:
        """A step ends here for a source of the given strength; weaker sources are ignored."""
        if not self._mine():
            return
        if mode < self.mode:
            return
        now = _now()
        if mode > self.mode:
            if mode == MODE_LOADER and self.step_open:
                # What ran before the first batch (set-up, a forward to build lazy modules, the
                # tail of optimizer-driven steps) is no training step.
                self.discard_open_step()
            self.mode = mode
        if samples is not None:
            self.samples = (self.samples or 0) + int(samples)
        if self.step_open:
            self._charge(now)
            self._finish_step(now)
            if self.tracer is not None:
                self.tracer.step_closed(self.step_index - 1)
                now = _now()  # a trace written out is no part of the next step
        if reopen:
            self._open_step(now)
            if self.tracer is not None:
                self.tracer.step_opened(self.step_index)
        else:
            self.step_open = False
        self._flush_ready(block=False)
        if self.max_steps and self.measured >= self.max_steps and not self.stop_requested:
            self.stop_requested = True
            self.close()
            raise SystemExit(0)

    def add_samples(self, n: int) -> None:
        """The open step processes n more samples (reported as ``samples``)."""
        if self._mine() and self.step_open:
            self.samples = (self.samples or 0) + n

    def end_without_reopen(self, mode: int) -> None:
        """The loader ran dry: the open step ends here and none starts until the next batch."""
        self.boundary(mode, reopen=False)

    def discard_open_step(self) -> None:
        if self._mine():
            self.step_open = False
            self.samples = None
            self.acc.clear()
            if self.tracer is not None:
                self.tracer.step_discarded()
            self.backward_spans.clear()
            self.gpu_done.clear()

    def _comm_union(self, lo: float, hi: float) -> List[Tuple[float, float]]:
        if not self.comm_spans:  # no DDP: no lock taken
            return []
        with self.comm_lock:
            spans = self.comm_spans
            self.comm_spans = [s for s in spans if s[1] > hi]
        clipped = sorted((max(a, lo), min(b, hi)) for a, b in spans if b > lo and a < hi)
        union: List[Tuple[float, float]] = []
        for a, b in clipped:
            if union and a <= union[-1][1]:
                union[-1] = (union[-1][0], max(union[-1][1], b))
            else:
                union.append((a, b))
        return union

    def _finish_step(self, now: float) -> None:
        step_time = now - self.step_start
        acc = self.acc
        union = self._comm_union(self.step_start, now)
        if union:
            comm = sum(b - a for a, b in union)
            overlap = 0.0
            for a, b in union:
                for c, d in self.backward_spans:
                    lo, hi = max(a, c), min(b, d)
                    if hi > lo:
                        overlap += hi - lo
            acc[COMM] = acc.get(COMM, 0.0) + comm
            if BACKWARD in acc:
                acc[BACKWARD] = max(0.0, acc[BACKWARD] - overlap)
            acc[OTHER] = acc.get(OTHER, 0.0) - (comm - overlap)
        for name in acc:
            if name not in self.seen and name != OTHER:
                self.seen.append(name)
                ordered = [n for n in PIPELINE_ORDER if n in self.seen]
                self.order = ordered + [n for n in self.seen if n not in PIPELINE_ORDER]
        record: Dict[str, Any] = {"step": self.step_index, "step_time_s": step_time}
        warm = self.step_index < self.warmup_steps
        self.step_index += 1
        if not warm:
            self.measured += 1
        record["_acc"] = dict(acc)
        if warm:
            record["warmup"] = True
        if self.samples is not None:
            record["samples"] = self.samples
        if self.rank is not None:
            record["rank"] = self.rank
        if self.tracer is not None and self.tracer.active:
            record["traced"] = True
        self.pending.append(_PendingStep(record, self.gpu_done))
        self.gpu_done = []
        self.acc = {}
        self.samples = None
        self.backward_spans = []

    def _phases(self, record: Dict[str, Any], gpu: List[Tuple[str, Any, Any]]) -> Dict[str, float]:
        acc: Dict[str, float] = record.pop("_acc")
        step_time = record["step_time_s"]
        if gpu:
            gpu_s: Dict[str, float] = {}
            for name, a, b in gpu:
                gpu_s[name] = gpu_s.get(name, 0.0) + a.elapsed_time(b) / 1000.0
            for name, s in gpu_s.items():
                acc[name] = max(acc.get(name, 0.0), s)
        phases = {n: round(acc.get(n, 0.0), 9) for n in self.order}
        phases[OTHER] = round(max(0.0, step_time - sum(phases.values())), 9)
        record["step_time_s"] = round(step_time, 9)
        return phases

    def _flush_ready(self, block: bool) -> None:
        while self.pending:
            p = self.pending[0]
            if p.gpu and not block and not all(b.query() for _, _, b in p.gpu):
                return
            if p.gpu and block:
                p.gpu[-1][2].synchronize()
            self.pending.pop(0)
            p.record["phases"] = self._phases(p.record, p.gpu)
            self._emit(p.record)

    def _emit(self, record: Dict[str, Any]) -> None:
        if not self.config_sent:
            self.config_sent = True
            cfg: Dict[str, Any] = {"config": True, "codl": "python", "pid": self.pid}
            cfg.update(self.config)
            self.sink.write(cfg)
        self.sink.write(record)

    def close(self) -> None:
        """Writes every finished step (waiting for its CUDA events) and a summary line."""
        if os.getpid() != self.pid or self.closed:
            return
        self.closed = True
        if self.tracer is not None:
            self.tracer.close()
        self._flush_ready(block=True)
        if self.config_sent:
            self.sink.write({"summary": True, "steps": self.measured,
                             "warmup_steps": min(self.step_index, self.warmup_steps),
                             "elapsed_s": _now() - self.started})


_lock = threading.Lock()
_recorder: Optional[Recorder] = None


class _NullSink(Sink):
    def __init__(self) -> None:
        self.fd = None

    def write(self, record: Dict[str, Any]) -> None:
        pass


def recorder() -> Recorder:
    """The process's recorder, created on first use (its thread records steps). In a process
    forked from one that records (a DataLoader worker) it records nothing: the parent's
    hooks and CODL_PROGRESS_FD are inherited there, its steps are not."""
    global _recorder
    r = _recorder
    pid = _pid[0] if _fork_hook_registered[0] else os.getpid()
    if r is not None and r.pid == pid:
        return r
    with _lock:
        if _recorder is None:
            _recorder = Recorder()
        elif _recorder.pid != pid:
            _recorder = Recorder(sink=_NullSink())
        return _recorder


def configure(warmup_steps: int = 0, max_steps: int = 0) -> Recorder:
    """codl.run: a fresh recorder with the launcher's options (call before the job runs)."""
    global _recorder
    with _lock:
        _recorder = Recorder(warmup_steps=warmup_steps, max_steps=max_steps)
        return _recorder
