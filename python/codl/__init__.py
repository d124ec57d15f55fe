"""codl: a training job as a CoDL victim (docs/victim.md, "Your own training job").

Explicit API (no import-time side effects; torch is imported only by ``instrument``)::

    import codl
    with codl.phase("decode"):        # a named stage of the step: key decode_s
        ...
    codl.step_end(samples=64)         # the step ends here
    codl.instrument(loader=loader, model=model, optimizer=opt)

Zero code change: ``python3 -m codl.run [--warmup-steps N] [--max-steps N] SCRIPT [ARGS...]``.
Results: ``codl.results.load(DB, ID)`` (pandas).
"""

from __future__ import annotations

from typing import Any

from codl.api import instrument, phase, step_end

__all__ = ["instrument", "phase", "step_end", "results"]


def __getattr__(name: str) -> Any:
    if name == "results":  # imports pandas only when asked for
        import importlib

        return importlib.import_module("codl.results")
    raise AttributeError(f"module 'codl' has no attribute {name!r}")
