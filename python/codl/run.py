"""python3 -m codl.run [--warmup-steps N] [--max-steps N] [--phases auto|loader-only] SCRIPT [ARGS...]

Runs SCRIPT as ``python3 SCRIPT ARGS...`` would (same sys.argv, sys.path[0], ``__main__``, exit
status and signals) with its PyTorch training instrumented (codl.torch_hooks): one CoDL progress
record per step on CODL_PROGRESS_FD, else stdout. torch is hooked when the script imports it,
so a script that never does runs as it would.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.abc
import importlib.machinery
import os
import runpy
import sys
from typing import Any, List, Optional, Sequence

from codl import recorder as recording

USAGE = ("python3 -m codl.run [--warmup-steps N] [--max-steps N] [--phases auto|loader-only] "
         "[--trace-steps N] [--trace-file F] SCRIPT [ARGS...]")


def _non_negative(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} is negative (0 or more)")
    return v


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python3 -m codl.run", usage=USAGE,
                                description="Run an unmodified PyTorch script as a CoDL victim.")
    p.add_argument("--warmup-steps", type=_non_negative, default=1,
                   help="first N steps flagged warmup (default 1: the loader's workers start)")
    p.add_argument("--max-steps", type=_non_negative, default=0,
                   help="exit 0 after N measured steps (default 0: run to the end)")
    p.add_argument("--phases", choices=("auto", "loader-only"), default="auto",
                   help="auto: every phase; loader-only: data_wait_s and other_s only")
    p.add_argument("--trace-steps", type=_non_negative,
                   default=_non_negative(os.environ.get("CODL_TRACE_STEPS", "0") or "0"),
                   help="record a PyTorch profiler trace of the first N measured steps "
                        "(default $CODL_TRACE_STEPS, else 0: none)")
    p.add_argument("--trace-file", default=os.environ.get("CODL_TRACE_FILE", "codl-trace.json"),
                   help="where the trace goes, Chrome-trace JSON (default $CODL_TRACE_FILE, "
                        "else codl-trace.json)")
    p.add_argument("script", help="the training script")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments, unchanged")
    return p.parse_args(list(argv))


class _TorchWatcher(importlib.abc.MetaPathFinder):
    """Installs the hooks right after the job's first ``import torch``."""

    def __init__(self, on_import: Any) -> None:
        self.on_import = on_import

    def find_spec(self, name: str, path: Any, target: Any = None) -> Optional[importlib.machinery.ModuleSpec]:
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module
        on_import = self.on_import

        def exec_then_hook(module: Any) -> None:
            exec_module(module)
            sys.modules[name] = module
            on_import()

        setattr(loader, "exec_module", exec_then_hook)
        return spec


def main(argv: Optional[List[str]] = None) -> None:
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    script = opts.script
    if not os.path.exists(script):
        sys.stderr.write(f"{sys.executable}: can't open file {script!r}: "
                         "[Errno 2] No such file or directory\n")
        sys.exit(2)
    rec = recording.configure(warmup_steps=opts.warmup_steps, max_steps=opts.max_steps)
    rec.config.update({"launcher": "codl.run", "warmup_steps": opts.warmup_steps,
                       "max_steps": opts.max_steps})

    def hook_torch() -> None:
        from codl import torch_hooks

        torch_hooks.install(rec, opts.phases)
        if opts.trace_steps:
            rec.tracer = torch_hooks.Tracer(opts.trace_steps, os.path.abspath(opts.trace_file),
                                            first=opts.warmup_steps)

    if "torch" in sys.modules:
        hook_torch()
    else:
        sys.meta_path.insert(0, _TorchWatcher(hook_torch))
    atexit.register(rec.close)
    sys.argv = [script] + list(opts.args)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
