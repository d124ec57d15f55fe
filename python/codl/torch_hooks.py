"""PyTorch's extension points wired to codl's recorder (docs/victim.md, "Your own training job").

- DataLoader: every iterator's ``__next__`` ends the step before it (the first loader iterated
  drives steps) and the time blocked inside it is ``data_wait_s``;
- forward: global module forward pre/post hooks (outermost module call), or the given model's;
- backward: ``torch.autograd.backward`` / ``torch.autograd.grad`` (what ``Tensor.backward`` calls);
- optimizer: ``register_optimizer_step_pre_hook``/``post_hook`` on torch >= 2, the class's
  ``step`` wrapped on 1.x (as torch's own profiler hook does); ``zero_grad`` wrapped; without a
  loader, ``optimizer.step()`` ends the step;
- h2d (CUDA only): ``Tensor.to``/``Tensor.cuda`` from the host to a CUDA device;
- comm: a communication hook on every ``DistributedDataParallel`` (the user's own hook wrapped,
  or codl's all-reduce, which does what DDP does without one) times each bucket's collective
  until its future completes, waited for on a thread of codl's (``_CommWaiter``).
On CUDA the GPU-side phases are also timed with CUDA events, read one or more steps later.
Nothing here runs at import; ``install`` and ``instrument_objects`` do the wiring.
"""

from __future__ import annotations

import collections
import functools
import os
import threading
import time
import types
from typing import Any, Callable, Deque, Dict, Optional, Set, Tuple

import torch

from codl import recorder as recording

_now = time.perf_counter
_installed: Set[str] = set()
_loader_ids: Set[int] = set()  # instrument(loader=...): only these drive steps
_all_loaders = False  # codl.run: every loader
_driver: Optional[int] = None  # the loader whose iteration ends steps


def torch_major() -> int:
    try:
        return int(torch.__version__.split(".")[0])
    except ValueError:
        return 0


def _cuda_check(rec: recording.Recorder) -> None:
    """Once CUDA is initialised by the job, GPU phases are also timed with CUDA events."""
    if rec.event_factory is None and _cuda_possible and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        rec.gpu_phases = (recording.H2D, recording.FORWARD, recording.BACKWARD, recording.OPTIMIZER)
        rec.event_factory = functools.partial(torch.cuda.Event, enable_timing=True)


_cuda_possible = False


# ---- DataLoader ----
def _install_loader() -> None:
    if "loader" in _installed:
        return
    _installed.add("loader")
    from torch.utils.data import dataloader as dl

    base = dl._BaseDataLoaderIter
    orig_init = base.__init__
    orig_next = base.__next__

    @functools.wraps(orig_init)
    def __init__(self: Any, loader: Any, *args: Any, **kwargs: Any) -> None:
        orig_init(self, loader, *args, **kwargs)
        self._codl_loader = id(loader)

    @functools.wraps(orig_next)
    def __next__(self: Any) -> Any:
        global _driver
        lid = getattr(self, "_codl_loader", None)
        if lid is None or not (_all_loaders or lid in _loader_ids):
            return orig_next(self)
        rec = recording.recorder()
        if _driver is None:
            _driver = lid
        drives = lid == _driver
        if drives:
            _cuda_check(rec)
            rec.boundary(recording.MODE_LOADER)
        rec.enter(recording.DATA_WAIT)
        try:
            batch = orig_next(self)
        except StopIteration:
            rec.exit(recording.DATA_WAIT)
            if drives and rec.mode == recording.MODE_LOADER:
                rec.discard_open_step()
            raise
        except BaseException:
            rec.exit(recording.DATA_WAIT)
            raise
        rec.exit(recording.DATA_WAIT)
        if drives:
            n = _batch_len(batch)
            if n:
                rec.add_samples(n)
        return batch

    # setattr: monkeypatching is what these hooks do, and mypy rightly refuses `cls.f = g`.
    setattr(base, "__init__", __init__)
    setattr(base, "__next__", __next__)


def _batch_len(batch: Any) -> int:
    """Samples in a batch: the first dimension of its first tensor (0 when there is none)."""
    for _ in range(3):
        if isinstance(batch, torch.Tensor):
            return int(batch.shape[0]) if batch.dim() else 0
        if isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        elif isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        else:
            return 0
    return 0


# ---- forward ----
def _fwd_pre(module: Any, inputs: Any) -> None:
    recording.recorder().enter(recording.FORWARD)


def _fwd_post(module: Any, inputs: Any, output: Any) -> None:
    recording.recorder().exit(recording.FORWARD)


def _install_forward_global() -> None:
    if "forward" in _installed:
        return
    _installed.add("forward")
    from torch.nn.modules import module as m

    m.register_module_forward_pre_hook(_fwd_pre)
    m.register_module_forward_hook(_fwd_post)


# ---- backward ----
def _install_backward() -> None:
    if "backward" in _installed:
        return
    _installed.add("backward")
    ag = torch.autograd

    def timed(orig: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(orig)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            rec = recording.recorder()
            rec.enter(recording.BACKWARD)
            try:
                return orig(*args, **kwargs)
            finally:
                rec.exit(recording.BACKWARD)

        return wrapper

    ag.backward = timed(ag.backward)
    ag.grad = timed(ag.grad)


# ---- optimizer ----
def _step_pre(*_: Any) -> None:
    rec = recording.recorder()
    _cuda_check(rec)
    rec.enter(recording.OPTIMIZER)


def _step_post(*_: Any) -> None:
    rec = recording.recorder()
    if rec.exit(recording.OPTIMIZER):
        rec.boundary(recording.MODE_OPTIMIZER)


def _timed_step(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def step(self: Any, *args: Any, **kwargs: Any) -> Any:
        _step_pre()
        try:
            out = func(self, *args, **kwargs)
        except BaseException:
            recording.recorder().exit(recording.OPTIMIZER)
            raise
        _step_post()
        return out

    step._codl_timed = True  # type: ignore[attr-defined]
    return step


def _timed_zero_grad(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def zero_grad(self: Any, *args: Any, **kwargs: Any) -> Any:
        rec = recording.recorder()
        rec.enter(recording.OPTIMIZER)
        try:
            return func(self, *args, **kwargs)
        finally:
            rec.exit(recording.OPTIMIZER)

    zero_grad._codl_timed = True  # type: ignore[attr-defined]
    return zero_grad


def _install_optimizer_global() -> None:
    if "optimizer" in _installed:
        return
    _installed.add("optimizer")
    opt = torch.optim.Optimizer
    setattr(opt, "zero_grad", _timed_zero_grad(opt.zero_grad))
    from torch.optim import optimizer as om

    if hasattr(om, "register_optimizer_step_pre_hook"):  # torch >= 2.0
        getattr(om, "register_optimizer_step_pre_hook")(_step_pre)
        getattr(om, "register_optimizer_step_post_hook")(_step_post)
        return
    # torch 1.x: wrap each optimizer class's step once, when its first instance is made, before
    # torch's own profiler hook wraps it (Optimizer._hook_for_profile, in __init__), so that a
    # profiled job's Optimizer.step event holds our timing and not the other way round.
    orig_init = opt.__init__

    @functools.wraps(orig_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        cls = type(self)
        if not cls.__dict__.get("_codl_hooked", False):
            cls.step = _timed_step(cls.step)
            cls._codl_hooked = True
            if "zero_grad" in cls.__dict__ and not getattr(cls.zero_grad, "_codl_timed", False):
                cls.zero_grad = _timed_zero_grad(cls.zero_grad)
        orig_init(self, *args, **kwargs)

    setattr(opt, "__init__", __init__)


def _instrument_optimizer(optimizer: Any) -> None:
    if getattr(optimizer, "_codl_instrumented", False):
        return
    optimizer._codl_instrumented = True
    if hasattr(optimizer, "register_step_pre_hook"):  # torch >= 2.0
        optimizer.register_step_pre_hook(_step_pre)
        optimizer.register_step_post_hook(_step_post)
    else:
        optimizer.step = types.MethodType(_timed_step(type(optimizer).step), optimizer)
    optimizer.zero_grad = types.MethodType(_timed_zero_grad(type(optimizer).zero_grad), optimizer)


# ---- host-to-device copies ----
def _to_cuda(args: Any, kwargs: Any) -> bool:
    dev = kwargs.get("device")
    cands = [dev] if dev is not None else list(args[:1])
    for a in cands:
        if isinstance(a, torch.device):
            return a.type == "cuda"
        if isinstance(a, str):
            return a.startswith("cuda")
        if isinstance(a, int) and not isinstance(a, bool):
            return True
        if isinstance(a, torch.Tensor):
            return a.is_cuda
    return False


def _install_h2d() -> None:
    if "h2d" in _installed:
        return
    _installed.add("h2d")
    tensor = torch.Tensor
    orig_to = tensor.to
    orig_cuda = tensor.cuda

    @functools.wraps(orig_to)
    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.is_cuda or not _to_cuda(args, kwargs):
            return orig_to(self, *args, **kwargs)
        rec = recording.recorder()
        rec.enter(recording.H2D)
        try:
            return orig_to(self, *args, **kwargs)
        finally:
            rec.exit(recording.H2D)

    @functools.wraps(orig_cuda)
    def cuda(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.is_cuda:
            return orig_cuda(self, *args, **kwargs)
        rec = recording.recorder()
        rec.enter(recording.H2D)
        try:
            return orig_cuda(self, *args, **kwargs)
        finally:
            rec.exit(recording.H2D)

    setattr(tensor, "to", to)
    setattr(tensor, "cuda", cuda)


# ---- DDP communication ----
class _CommWaiter:
    """Waits for DDP's comm futures on a thread of codl's own, never on the backend's.

    A Python callback on a Gloo/NCCL future (``fut.then(fn)``, which torch's own
    ``allreduce_hook`` also uses) runs on the backend's worker thread and takes the GIL there,
    once to call ``fn`` and once more to free it after DDP has already seen the result. A job
    that ends right after its last step then deadlocks: the main thread, holding the GIL,
    destroys the Reducer, which joins a Gloo worker that waits for the GIL (8 runs in 20 of a
    2-rank Gloo job on a 2-core box). So nothing of codl's runs on the backend's threads:
    the hook hands the backend's future to this thread, which waits for it with the GIL
    released, records the span, and only then completes the future DDP waits on.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: Deque[Tuple[float, Any, Any, Callable[[Any], Any]]] = collections.deque()
        self._thread: Optional[threading.Thread] = None

    def submit(self, t0: float, fut: Any, out: Any, unwrap: Callable[[Any], Any]) -> None:
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="codl-comm", daemon=True)
                self._thread.start()
            self._queue.append((t0, fut, out, unwrap))
            self._cond.notify()

    def forget_thread(self) -> None:
        """In a forked child the thread is gone (a DataLoader worker): start another if needed."""
        self._cond = threading.Condition()
        self._queue.clear()
        self._thread = None

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                t0, fut, out, unwrap = self._queue.popleft()
            # In issue order: a later bucket that finished first is recorded when an earlier one
            # ends, which leaves the union of the spans (what comm_s sums) unchanged.
            value: Any = None
            error: Optional[BaseException] = None
            try:
                fut.wait()
                value = unwrap(fut.value())
            except BaseException as e:  # noqa: BLE001 - the job sees the backend's error
                error = e
            recording.recorder().comm_span(t0, _now())
            if error is None:
                out.set_result(value)
            else:
                out.set_exception(error)


_comm_waiter = _CommWaiter()
os.register_at_fork(after_in_child=_comm_waiter.forget_thread)


def _future_for(bucket: Any) -> Any:
    """The future DDP waits on; CUDA-aware for a CUDA bucket, so that DDP's wait orders its
    stream after the collective's (set_result records an event on this thread's stream, which
    the backend future's wait made follow the collective)."""
    buf = bucket.buffer()
    if buf.is_cuda:
        return torch.futures.Future(devices=[buf.device])
    return torch.futures.Future()


def _timed_comm_hook(hook: Callable[..., Any]) -> Callable[..., Any]:
    def codl_comm_hook(state: Any, bucket: Any) -> Any:
        t0 = _now()
        fut = hook(state, bucket)
        out = _future_for(bucket)
        _comm_waiter.submit(t0, fut, out, lambda value: value)
        return out

    codl_comm_hook.__name__ = getattr(hook, "__name__", "codl_comm_hook")
    # DDP checks the annotations (bucket: GradBucket, return: Future[Tensor]); ours are strings
    # under `from __future__ import annotations`, so none are shown to it.
    codl_comm_hook.__annotations__ = {}
    return codl_comm_hook


def _allreduce_hook(process_group: Any, bucket: Any) -> Any:
    """What DDP does without a hook (and torch's ``allreduce_hook``): the bucket divided by the
    world size, summed over the ranks; timed, with no Python callback on the backend's thread."""
    import torch.distributed as dist

    group = process_group if process_group is not None else dist.group.WORLD
    tensor = bucket.buffer()
    tensor.div_(group.size())
    t0 = _now()
    fut = dist.all_reduce(  # type: ignore[no-untyped-call]
        tensor, group=group, async_op=True).get_future()
    out = _future_for(bucket)
    _comm_waiter.submit(t0, fut, out, lambda value: value[0])
    return out


_allreduce_hook.__annotations__ = {}  # as codl_comm_hook's: strings would fail DDP's check


def _install_ddp() -> None:
    if "ddp" in _installed:
        return
    _installed.add("ddp")
    try:
        from torch.nn.parallel import DistributedDataParallel as DDP
    except ImportError:
        return
    orig_register = getattr(DDP, "register_comm_hook")
    orig_forward = DDP.forward

    @functools.wraps(orig_register)
    def register_comm_hook(self: Any, state: Any, hook: Callable[..., Any]) -> None:
        orig_register(self, state, _timed_comm_hook(hook))
        self._codl_comm = True

    @functools.wraps(orig_forward)
    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        # Registered at the first forward, so that a job's own hook (registered after the
        # constructor) is the one wrapped; a comm hook may be registered only once.
        if not getattr(self, "_codl_comm", False):
            self._codl_comm = True
            try:
                orig_register(self, self.process_group, _allreduce_hook)
            except Exception as e:  # noqa: BLE001 - never break the job for a timer
                import sys

                sys.stderr.write(f"codl: no comm_s for this DistributedDataParallel: {e}\n")
        return orig_forward(self, *args, **kwargs)

    setattr(DDP, "register_comm_hook", register_comm_hook)
    setattr(DDP, "forward", forward)


def install(rec: recording.Recorder, phases: str = "auto") -> None:
    """codl.run: every loader, module, optimizer and DDP of the job (``phases='loader-only'``:
    the DataLoader only)."""
    global _all_loaders, _cuda_possible
    _all_loaders = True
    _cuda_possible = torch.cuda.is_available()
    rec.config.update({"torch": torch.__version__, "phases_mode": phases})
    _install_loader()
    if phases == "loader-only":
        return
    _install_forward_global()
    _install_backward()
    _install_optimizer_global()
    _install_ddp()
    if _cuda_possible:
        _install_h2d()


def instrument_objects(rec: recording.Recorder, loader: Any = None, model: Any = None,
                       optimizer: Any = None) -> None:
    """codl.instrument: the given objects only (composes with install: nothing counts twice)."""
    global _cuda_possible
    _cuda_possible = torch.cuda.is_available()
    if loader is not None:
        _loader_ids.add(id(loader))
        _install_loader()
    if model is not None and not getattr(model, "_codl_instrumented", False):
        model._codl_instrumented = True
        model.register_forward_pre_hook(_fwd_pre)
        model.register_forward_hook(_fwd_post)
        _install_backward()
        _install_ddp()
        if _cuda_possible:
            _install_h2d()
    if optimizer is not None:
        _instrument_optimizer(optimizer)


# ---- a profiler trace of some measured steps ----
# The DFTracer names of codl's phases, used as the trace's range names.
TRACE_NAMES = {
    recording.DATA_WAIT: "ai.dataloader.fetch",
    recording.H2D: "ai.device.transfer",
    recording.FORWARD: "ai.compute.forward",
    recording.BACKWARD: "ai.compute.backward",
    recording.OPTIMIZER: "ai.compute.step",
    recording.COMM: "ai.comm.all_reduce",
}


class Tracer:
    """Records a PyTorch profiler (Kineto) trace of ``steps`` steps from step ``first`` on and
    writes it as Chrome-trace JSON to ``path``; each step is a ``codl.step#K`` range and each
    phase a range named as DFTracer names it (``codl.NAME`` for the job's own phases)."""

    def __init__(self, steps: int, path: str, first: int) -> None:
        self.steps = steps
        self.path = path
        self.first = first
        self.active = False
        self.done = False
        self.count = 0
        self.prof: Any = None
        self.step_range: Any = None
        self.ranges: Dict[str, Any] = {}

    @staticmethod
    def _range(name: str) -> Any:
        r = torch.autograd.profiler.record_function(name)
        r.__enter__()  # type: ignore[no-untyped-call]
        return r

    def _start(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        acts = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            acts.append(ProfilerActivity.CUDA)
        self.prof = profile(activities=acts)
        self.prof.__enter__()  # type: ignore[no-untyped-call]
        self.active = True

    def step_opened(self, index: int) -> None:
        if self.done:
            return
        if not self.active and index >= self.first:
            self._start()
        if self.active:
            self.step_range = self._range(f"codl.step#{index}")

    def _end_step(self) -> None:
        if self.step_range is not None:
            self.step_range.__exit__(None, None, None)
            self.step_range = None

    def step_closed(self, index: int) -> None:
        if not self.active:
            return
        self._end_step()
        self.count += 1
        if self.count >= self.steps:
            self.stop()

    def step_discarded(self) -> None:
        self._end_step()

    def phase_begin(self, name: str) -> None:
        if self.active and name not in self.ranges:
            self.ranges[name] = self._range(TRACE_NAMES.get(name, "codl." + name))

    def phase_end(self, name: str) -> None:
        r = self.ranges.pop(name, None)
        if r is not None:
            r.__exit__(None, None, None)

    def stop(self) -> None:
        if not self.active:
            return
        for r in reversed(list(self.ranges.values())):
            r.__exit__(None, None, None)
        self.ranges.clear()
        self._end_step()
        self.active = False
        self.done = True
        self.prof.__exit__(None, None, None)
        try:
            self.prof.export_chrome_trace(self.path)
        except OSError as e:
            import sys

            sys.stderr.write(f"codl: cannot write the trace to {self.path}: {e}\n")

    def close(self) -> None:
        self.stop()
