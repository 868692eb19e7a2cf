"""Fits across processes under JAX's multi-process runtime (``jax.distributed``).

After ``jax.distributed.initialize()`` in every process, each process calls
:func:`jaxnn.fit` with *its own rows* of the training set (X, y and sample
weights): the training set is their concatenation in process order.
:func:`gathered` collects it on every process (each process's shapes checked
first, so that a process with other features or labels ends every process
with an error naming it); every exact k-NN search — the quadratic part: the
graph, the held-out choice's and ``k="auto"``'s — is searched a slice of
query rows per process (:func:`process_rows`), each on its own device
against all the points, and the slices gathered (:func:`gathered_rows`;
:mod:`jaxnn._src.graph`); the boosting and the posterior choice then run on
every process alike, so every process holds the same model, equal to the
one process's fit on the concatenated rows (the same graph; α to float32
rounding).  ``predict`` and ``predict_proba`` need nothing more: each
process answers for its own queries.

A process lost during a fit (no heartbeat for JAX's
``heartbeat_timeout_seconds``) makes JAX's coordination service end every
other process with an error naming it: no partial model is returned.
"""

from __future__ import annotations

import numpy as np

__all__ = ["joined", "gathered", "process_rows", "row_counts", "gathered_rows", "spans_processes"]


def joined() -> bool:
    """Whether this process is one of several under ``jax.distributed``."""
    import jax

    return jax.process_count() > 1


def spans_processes(devices) -> bool:
    """Whether ``devices`` (a plan's setting: None for this process's default
    device, an int, a list of devices or ``"all"``) include another
    process's: a program on them is launched by every process together, and
    one thread of each must launch such programs in one order
    (:func:`jaxnn.fit` then makes its held-out choice after its boosting,
    not beside it)."""
    import jax

    from jaxnn._src.sharding import resolve_devices

    return devices is not None and any(d.process_index != jax.process_index() for d in resolve_devices(devices))


def _allgather(a: np.ndarray) -> np.ndarray:
    """(P, …) every process's ``a`` (each the same shape and dtype), in process order."""
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(np.asarray(a)))


def gathered(X: np.ndarray, y, sample_weight=None):
    """(X, y, sample_weight) of every process's rows, concatenated in process
    order, on every process.  Each process's (rows, features), label kind
    and weights are compared first: a mismatch raises the same ValueError in
    every process, naming the first process that differs from process 0.
    Labels are numbers, booleans or strings here; an (m, C) indicator matrix
    works as for one process."""
    import jax

    y = np.asarray(y)
    if y.dtype.kind == "O":  # strings in an object array: as a string array
        try:
            y = y.astype(str) if all(isinstance(v, str) for v in y.ravel()) else y
        except TypeError:
            pass
    if y.dtype.kind not in _LABEL_KINDS:
        raise ValueError(f"under jax.distributed, y must hold numbers or strings (process {jax.process_index()} "
                         f"has {y.dtype} labels): encode them alike in every process")
    has_weights = sample_weight is not None
    width = y.dtype.itemsize // 4 if y.dtype.kind == "U" else 0  # characters of the longest label
    shape = np.array([X.shape[0], X.shape[1], y.ndim, y.shape[1] if y.ndim == 2 else 0, y.shape[0],
                      int(has_weights), _LABEL_KINDS.index(y.dtype.kind), width], np.int64)
    shapes = _allgather(shape)
    names = ("features", "label dimensions", "label columns", None, "sample weights (given or not)", "label kind")
    for p in range(1, shapes.shape[0]):
        for i, what in enumerate(names, start=1):
            if what is not None and shapes[p, i] != shapes[0, i]:
                raise ValueError(f"under jax.distributed, process {p} has other {what} than process 0 "
                                 f"({shapes[p, i]} against {shapes[0, i]}): every process must give the same "
                                 "columns of its own rows")
    bad = np.flatnonzero(shapes[:, 0] != shapes[:, 4])
    if bad.size:
        p = int(bad[0])
        raise ValueError(f"under jax.distributed, process {p} has {shapes[p, 0]} rows of X but {shapes[p, 4]} labels")
    counts = shapes[:, 0]
    X_all = gathered_rows(np.asarray(X, np.float64 if X.dtype.kind != "f" else X.dtype), counts)
    if y.dtype.kind == "U":  # strings as their characters' codes, to the longest label of any process
        chars = max(1, int(shapes[:, 7].max()))
        codes = np.asarray(y, f"U{chars}").reshape(-1, 1).view(np.uint32).reshape(y.shape[0], chars)
        y_all = gathered_rows(codes, counts).copy().view(f"U{chars}").reshape(-1)
    else:
        y_all = gathered_rows(y.astype(np.float64) if y.dtype.kind == "f" else y.astype(np.int64), counts)
        y_all = y_all.astype(y.dtype)
    w_all = gathered_rows(np.asarray(sample_weight, np.float64), counts) if has_weights else None
    return X_all, y_all, w_all


#: the kinds of labels gathered across processes: booleans, integers, floats, strings
_LABEL_KINDS = "biufU"


def gathered_rows(local: np.ndarray, counts) -> np.ndarray:
    """Every process's ``local`` rows (process p holds ``counts[p]`` of
    them), concatenated in process order, on every process: each padded to
    the largest count for the collective, the padding dropped."""
    counts = np.asarray(counts, np.int64)
    most = int(counts.max())
    padded = np.zeros((most,) + local.shape[1:], local.dtype)
    padded[: local.shape[0]] = local
    parts = _allgather(padded)
    return np.concatenate([parts[p, : counts[p]] for p in range(counts.size)])


def _slice(m: int, p: int, n: int) -> tuple:
    """(start, stop) of process p's share of m rows split evenly among n."""
    return p * m // n, (p + 1) * m // n


def process_rows(m: int) -> tuple:
    """(start, stop): this process's slice of m rows split evenly in process
    order (the queries of a search whose rows the processes share out)."""
    import jax

    return _slice(m, jax.process_index(), jax.process_count())


def row_counts(m: int) -> np.ndarray:
    """(P,) the rows of each process's slice (:func:`process_rows`)."""
    import jax

    n = jax.process_count()
    return np.array([stop - start for start, stop in (_slice(m, p, n) for p in range(n))], np.int64)
