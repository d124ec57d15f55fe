"""codl's explicit API: ``codl.phase``, ``codl.step_end`` and ``codl.instrument``.

The recorder they drive, and the phase names, live in codl.recorder (re-exported here for
callers of earlier versions); the PyTorch hooks in codl.torch_hooks, imported only by
``instrument`` so that the explicit API needs no torch.
"""

from __future__ import annotations

import contextlib
from typing import Any, Optional

from codl.recorder import (  # noqa: F401  (re-exported)
    BACKWARD,
    COMM,
    DATA_WAIT,
    FORWARD,
    H2D,
    MODE_EXPLICIT,
    MODE_LOADER,
    MODE_NONE,
    MODE_OPTIMIZER,
    OPTIMIZER,
    OTHER,
    PIPELINE_ORDER,
    Recorder,
    Sink,
    configure,
    phase_key,
    recorder,
)

__all__ = [
    "BACKWARD", "COMM", "DATA_WAIT", "FORWARD", "H2D", "MODE_EXPLICIT", "MODE_LOADER",
    "MODE_NONE", "MODE_OPTIMIZER", "OPTIMIZER", "OTHER", "PIPELINE_ORDER", "Recorder", "Sink",
    "configure", "instrument", "phase", "phase_key", "recorder", "step_end",
]


def phase(name: str) -> "contextlib.AbstractContextManager[None]":
    """``with codl.phase("decode"):`` times a named stage of the step (key ``decode_s``).

    Nested phases are exclusive: time inside an inner phase is the inner phase's only.
    """
    return recorder().phase(name)


def step_end(samples: Optional[int] = None) -> None:
    """Ends the current step (and starts the next). Once called, steps end only here: DataLoader
    iteration and optimizer.step() no longer end them. ``samples``: items this step processed."""
    recorder().boundary(MODE_EXPLICIT, samples=samples)


def instrument(loader: Any = None, model: Any = None, optimizer: Any = None) -> None:
    """Times a given DataLoader (``data_wait_s``, and its iteration ends steps), model
    (``forward_s``, ``backward_s``) and optimizer (``optimizer_s``) without codl.run."""
    from codl import torch_hooks  # torch is needed only here

    torch_hooks.instrument_objects(recorder(), loader=loader, model=model, optimizer=optimizer)
