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

__all__ = ["instrument", "phase", "step_end", "results", "__version__"]


def _version() -> str:
    """The project's version: the installed distribution's, else (a checkout on PYTHONPATH) the
    repository's VERSION file beside this package."""
    import importlib.metadata
    import pathlib

    beside = pathlib.Path(__file__).resolve().parent.parent / "VERSION"
    if beside.is_file():
        return beside.read_text(encoding="utf-8").strip()
    try:
        return importlib.metadata.version("codl")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def __getattr__(name: str) -> Any:
    if name == "results":  # imports pandas only when asked for
        import importlib

        return importlib.import_module("codl.results")
    if name == "__version__":
        return _version()
    raise AttributeError(f"module 'codl' has no attribute {name!r}")
