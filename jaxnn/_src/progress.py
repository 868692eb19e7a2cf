"""Progress of long calls: ``fit(verbose=True)`` and the ``jaxnn`` logger.

``fit`` and the other long calls report their stages (the neighbour graph,
boosting, the ``posterior="auto"`` choice…) and their wall times on the
``jaxnn`` logger at INFO level; :func:`logged` wraps a stage, and
:func:`progress_shown` turns the logger on for one thread's call.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Optional

import jax


#: ``fit`` reports its stages (graph, boosting, posterior choice) and their
#: wall times here at INFO level: ``logging.getLogger("jaxnn").setLevel("INFO")``
#: with a handler (``logging.basicConfig()``) shows them
logger = logging.getLogger("jaxnn")


class _Progress:
    """The state behind ``fit(verbose=True)``, shared by threads: while any
    call is verbose the ``jaxnn`` logger is at INFO (with a stderr handler of
    its own unless logging already has handlers), and a filter passes a record
    only from a verbose thread or at the level the logger had before.  The
    first verbose call in saves that level and the last one out restores it:
    saved and restored per call, overlapping verbose fits in threads (a
    threaded grid search) lost each other's lines and left the logger at INFO
    for good, so that every later fit logged and timed its stages."""

    lock = threading.Lock()
    threads: dict[int, int] = {}  # thread id → its verbose calls in progress
    level = logging.NOTSET  # the logger's own level before the first verbose call
    level_before = logging.WARNING  # its effective level then: what non-verbose threads still get
    handler: Optional[logging.Handler] = None

    @staticmethod
    def filter(record: logging.LogRecord) -> bool:
        return record.thread in _Progress.threads or record.levelno >= _Progress.level_before


@contextlib.contextmanager
def progress_shown():
    """The ``jaxnn`` logger at INFO level for this thread, for the duration
    (:class:`_Progress`)."""
    me = threading.get_ident()
    with _Progress.lock:
        if not _Progress.threads:
            _Progress.level, _Progress.level_before = logger.level, logger.getEffectiveLevel()
            _Progress.handler = None if logger.hasHandlers() else logging.StreamHandler()
            if _Progress.handler is not None:
                _Progress.handler.setFormatter(logging.Formatter("jaxnn: %(message)s"))
                logger.addHandler(_Progress.handler)
            logger.addFilter(_Progress.filter)
            logger.setLevel(logging.INFO)
        _Progress.threads[me] = _Progress.threads.get(me, 0) + 1
    try:
        yield
    finally:
        with _Progress.lock:
            _Progress.threads[me] -= 1
            if not _Progress.threads[me]:
                del _Progress.threads[me]
            if not _Progress.threads:
                logger.setLevel(_Progress.level)
                logger.removeFilter(_Progress.filter)
                if _Progress.handler is not None:
                    logger.removeHandler(_Progress.handler)


def progress_wanted() -> bool:
    """Whether this thread's stages are logged (then timed, blocking on the
    device): the logger enabled for INFO, by the user or by a verbose call of
    this thread."""
    if not logger.isEnabledFor(logging.INFO):
        return False
    return not _Progress.threads or threading.get_ident() in _Progress.threads or _Progress.level_before <= logging.INFO


def logged(description: str, work):
    """``work()``; when this thread's progress is logged (:func:`progress_wanted`),
    logs ``description`` as it starts and its seconds when done (blocking on
    the result, so the time is the work's, not its dispatch)."""
    if not progress_wanted():
        return work()
    logger.info("%s ...", description)
    t0 = time.perf_counter()
    out = jax.block_until_ready(work())
    logger.info("%s: %.2f s", description, time.perf_counter() - t0)
    return out
