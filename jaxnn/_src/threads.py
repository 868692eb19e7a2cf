"""Work on a second thread as part of the calling thread's call.

:func:`jaxnn.fit` makes its held-out choice of the posterior's temperature,
shrinkage and kernel term (an auxiliary fit, scoring, NumPy grids) while
its own boosting runs: the boosting's scan is sequential and keeps one core
busy, and JAX runs programs dispatched from two threads at once.  The work
is the same and so are its numbers; only its wall time overlaps.

A ``with`` block of JAX settings (``jax.enable_x64``, ``jax.default_device``,
…) holds for the thread that entered it alone: :func:`in_thread` carries the
caller's values of :data:`CARRIED` to the new thread, and a verbose call's
progress display (:func:`jaxnn._src.progress.progress_shown`, as lines: the
caller draws the bars)."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import Future
from typing import Callable

import jax

from jaxnn._src.progress import progress_shown, progress_shown_here

__all__ = ["CARRIED", "in_thread"]

#: the JAX settings a ``with`` block sets for its own thread, which
#: :func:`in_thread` carries to the new one: (the ``jax.config`` name, its
#: context manager)
CARRIED = (
    ("jax_enable_x64", jax.enable_x64),
    ("jax_default_device", jax.default_device),
    ("jax_default_matmul_precision", jax.default_matmul_precision),
    ("jax_numpy_dtype_promotion", jax.numpy_dtype_promotion),
    ("jax_numpy_rank_promotion", jax.numpy_rank_promotion),
    ("jax_debug_nans", jax.debug_nans),
    ("jax_debug_infs", jax.debug_infs),
    ("jax_disable_jit", jax.disable_jit),
)


def in_thread(work: Callable[[], object], name: str) -> Future:
    """Start ``work()`` on a new thread ``name`` and return the Future of its
    result (or its exception), the calling thread's :data:`CARRIED` JAX
    settings and progress display in force there.  The caller waits on the
    Future before it returns: no work outlives its call."""
    settings = [(enter, getattr(jax.config, key)) for key, enter in CARRIED]
    shown = progress_shown_here()
    future: Future = Future()

    def run():
        future.set_running_or_notify_cancel()
        try:
            with contextlib.ExitStack() as stack:
                for enter, value in settings:
                    stack.enter_context(enter(value))
                if shown:
                    stack.enter_context(progress_shown(bars=False))
                result = work()
        except BaseException as error:  # noqa: BLE001 - handed to the caller, who raises it
            future.set_exception(error)
        else:
            future.set_result(result)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future
