"""The functional API: ``fit``, ``decision_function``, ``predict_proba``, ``predict``.

A fitted :class:`Model` is an immutable pytree: arrays (α, the training points
and their ±1 labels) plus static metadata (classes, k, loss, algorithm).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import threading
import time
import warnings
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import algorithms as algos
from jaxnn._src import losses as losses_mod
from jaxnn._src import sharding, window
from jaxnn._src.checks import check_bool, check_points, check_real, check_whole_labels, did_you_mean
from jaxnn._src.checks import check_integer as _check_int
from jaxnn._src.boosting import BoostResult, boost, check_chooser, chooser_order, initial_edges
from jaxnn._src.graph import METHODS as _GRAPH_METHODS
from jaxnn._src.graph import (SHARED_MAX_ROWS, Neighbors, at_shared_rows, first_k, first_rows, float32_origin,
                              graph_and_query, in_blocks, inverse_counts, inverse_neighbors, knn_graph, neighbor_sum,
                              padded_query, padded_rows, query_rows, shared_k, shared_rows, shared_width, shift_points,
                              subgraph, to_device)
from jaxnn._src.schedule import ScheduleSizes, boost_colored, color_schedule, padded_schedule

__all__ = ["Model", "fit", "decision_function", "predict_proba", "predict", "encode_labels", "auto_chooser"]

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
def _progress_shown():
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


def _progress_wanted() -> bool:
    """Whether this thread's stages are logged (then timed, blocking on the
    device): the logger enabled for INFO, by the user or by a verbose call of
    this thread."""
    if not logger.isEnabledFor(logging.INFO):
        return False
    return not _Progress.threads or threading.get_ident() in _Progress.threads or _Progress.level_before <= logging.INFO


def _logged(description: str, work):
    """``work()``; when this thread's progress is logged (:func:`_progress_wanted`),
    logs ``description`` as it starts and its seconds when done (blocking on
    the result, so the time is the work's, not its dispatch)."""
    if not _progress_wanted():
        return work()
    logger.info("%s ...", description)
    t0 = time.perf_counter()
    out = jax.block_until_ready(work())
    logger.info("%s: %.2f s", description, time.perf_counter() - t0)
    return out


class _HostArray(NamedTuple):
    """A JAX array of a pickled model, stored as the NumPy array it holds."""

    value: np.ndarray


class HostPickled:
    """Pickling for the models (frozen dataclasses): JAX arrays are stored as
    NumPy arrays, and on loading become JAX arrays again — except float64
    ones while x64 is off, which stay NumPy, so that the model is narrowed by
    :func:`without_float64` on use, as in the process that fit it.  JAX's own
    array pickling cast them to float32 on loading, uncentred: a model fit
    under x64 on points at 10⁸ ± 1 and loaded without it predicted at chance
    (0.48 for 0.99), with no warning."""

    def __reduce__(self):
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields = {name: _HostArray(np.asarray(v)) if isinstance(v, jax.Array) else v for name, v in fields.items()}
        return _unpickled, (type(self), fields)


def _unpickled(cls, fields: dict):
    x64 = jax.config.jax_enable_x64

    def back(v):
        if not isinstance(v, _HostArray):
            return v
        return v.value if v.value.dtype == np.float64 and not x64 else jnp.asarray(v.value)

    return cls(**{name: back(v) for name, v in fields.items()})


@dataclasses.dataclass(frozen=True)
class Model(HostPickled):
    """A leveraged k-NN rule H_c(x) = Σ_{j∈NN_k(x)} α_jc y_jc.

    Attributes:
      alpha: (m, C) leveraging coefficients, columns in ``classes`` order.
      X: (m, d) training points.
      Y: (m, C) training labels in {−1, +1}.
      trace: (T,) total surrogate risk after each step, if fit(trace=True).
      classes: tuple of the C class labels (sorted), NumPy scalars of y's
        dtype, so that :func:`predict` answers in it; multilabel: 0..C−1.
      k: neighbours used.
      loss: the :class:`~jaxnn.losses.Loss` (its ``posterior`` is the link).
      algorithm: the algorithm object (``GNNB``, ``UNN``, ``UNNFast``, ``N3``).
      multilabel: True if fit on an indicator matrix.
      posterior_mix: λ ∈ [0, 1] of :func:`predict_proba`,
        p̂ = (1 − λ)·link(H) + λ·(k-NN vote fractions); chosen by ``fit``.
      rounds: boosting steps per class that were run.
      origin: None, or (d,) — the point subtracted (in float64) from float64
        training points far from 0 before their cast to float32, so that
        they keep their digits (:data:`jaxnn._src.graph.CENTRE_RATIO`);
        ``X`` is stored shifted, and query points are shifted alike.
    """

    alpha: jax.Array
    X: jax.Array
    Y: jax.Array
    trace: Optional[jax.Array]
    classes: tuple
    k: int
    loss: Any
    algorithm: Any
    multilabel: bool
    posterior_mix: float = 0.0
    rounds: int = 0
    origin: Optional[jax.Array] = None

    @property
    def n_classes(self) -> int:
        return len(self.classes)


jax.tree_util.register_dataclass(
    Model,
    data_fields=["alpha", "X", "Y", "trace", "origin"],
    meta_fields=["classes", "k", "loss", "algorithm", "multilabel", "posterior_mix", "rounds"],
)


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------


def _as_points(X, name: str = "X") -> np.ndarray:
    """Checked points (:func:`checks.check_points`) on the host; under
    ``jax.jit`` (query points of decision_function / predict_proba) the tracer."""
    X = check_points(X, name)
    return X if isinstance(X, jax.core.Tracer) else np.asarray(X)


def _training_points(Xa, dtype):
    """(X as the model stores it (m, d) in ``dtype``, its origin or None):
    float64 points far from 0 are shifted before the cast to float32
    (:func:`graph.float32_origin`)."""
    (Xp,), origin = _shifted_parts(Xa, dtype, slice(None))
    return to_device(Xp), None if origin is None else to_device(origin, dtype)


def _shifted_parts(Xa, dtype, *rows):
    """(``Xa[r]`` for each index r of ``rows`` as NumPy points in ``dtype``,
    all shifted by the first part's float32 origin; that origin or None)."""
    origin = float32_origin(Xa[rows[0]])  # under x64 too: a float64 model stays right once cast to float32
    return tuple(np.asarray(shift_points(Xa[r], origin), dtype) for r in rows), origin


def _points_of_parts(Xa, dtype, *rows):
    """``Xa[r]`` for each index array r of ``rows``, as NumPy points in
    ``dtype``: the points a model fit on ``Xa[rows[0]]`` computes with
    (:func:`_training_points`) and, for the other parts, its queries as
    prediction shifts them."""
    return _shifted_parts(Xa, dtype, *rows)[0]


def label_rows(y) -> np.ndarray:
    """y as a NumPy array of per-example labels for splitting and scoring:
    a one-column y as 1-D, as :func:`encode_labels` reads it (its warning is
    encode_labels' to give)."""
    y_arr = np.asarray(y)
    return y_arr[:, 0] if y_arr.ndim == 2 and y_arr.shape[1] == 1 else y_arr


def encode_labels(y, m: int):
    """Labels → (classes tuple, Y (m, C) int8 in {−1, +1}, multilabel flag).

    int8: a float64 Y took 8·m·C bytes of host memory for the whole fit
    (800 MB at m = 10⁶, C = 100)."""
    if y is None or isinstance(y, (str, bytes, dict, set)):
        raise TypeError(f"y must be an array of labels, got {type(y).__name__}")
    try:
        arr = np.asarray(y)
    except ValueError as err:  # rows of different lengths
        raise ValueError(f"y must be a rectangular array: {err}") from None
    if arr.ndim == 0:
        raise TypeError(f"y must be an array of labels, got {type(y).__name__}")
    if arr.dtype == object and arr.ndim == 1 and any(np.ndim(v) for v in arr):
        raise ValueError("y must be 1-D labels or a rectangular 2-D indicator matrix, got rows of different lengths")
    if arr.shape[0] != m:
        raise ValueError(f"X and y have mismatched lengths: {m} rows in X, {arr.shape[0]} labels in y")
    if arr.ndim == 2 and arr.shape[1] == 1:  # a column of labels (a one-column DataFrame), as scikit-learn reads it
        warnings.warn("y has shape (m, 1): read as 1-D labels — pass y.ravel() (a multilabel indicator matrix "
                      "needs at least 2 columns)", UserWarning, stacklevel=3)
        arr = arr[:, 0]
    if arr.ndim == 1:
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise ValueError("y contains NaN or infinite values")
        check_whole_labels(arr)
        try:
            classes, codes = np.unique(arr, return_inverse=True)
        except TypeError as err:
            raise TypeError(f"labels in y must be mutually comparable (sortable): {err}") from None
        if classes.size < 2:
            raise ValueError(f"y has a single class ({classes[0]!r}); at least 2 classes are needed")
        Y = np.full((m, classes.size), -1, np.int8)
        Y[np.arange(m), codes.reshape(-1)] = 1
        return tuple(classes), Y, False  # NumPy scalars: predict answers in y's own dtype
    if arr.ndim == 2:
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise TypeError(f"a 2-D y must be a numeric indicator matrix, got dtype {arr.dtype}")
        vals = np.unique(arr)
        if np.all(np.isin(vals, [0, 1])):
            Y = np.where(arr > 0, np.int8(1), np.int8(-1))
        elif np.all(np.isin(vals, [-1, 1])):
            Y = arr.astype(np.int8)
        else:
            raise ValueError(f"a 2-D y must be an indicator matrix with values in {{0, 1}} or {{-1, +1}}, got values {vals[:5]}")
        if arr.shape[1] < 2:
            raise ValueError("a 2-D y (a multilabel indicator matrix) needs at least 2 columns")
        constant = np.nonzero(np.all(Y == Y[:1], axis=0))[0]
        if constant.size:
            c = int(constant[0])
            raise ValueError(f"column {c} of the indicator matrix y is {'all positive' if Y[0, c] > 0 else 'never positive'}: "
                             "every label needs positive and negative examples")
        return tuple(range(arr.shape[1])), Y, True
    raise ValueError(f"y must be 1-D labels or a 2-D indicator matrix, got shape {arr.shape}")




def _check_neighbors(neighbors, m: int, k: int, *, rows: int | None = None):
    """(rows, k) int32 indices into m training points, nearest first: an int
    array, or a :class:`Neighbors` (:func:`knn_graph` / :func:`knn_query`'s
    result; with more than k columns, its first k, the nearest — one search
    serves several k).  ``rows``: fit's graph — exactly m rows, each without its
    own index; None: query neighbours — any number ≥ 1 of rows, and under
    ``jax.jit`` a traced array gets its shape and dtype checked only."""
    if neighbors is None or isinstance(neighbors, (str, bytes, dict, set)):
        raise TypeError(f"neighbors must be an (n, k) integer index array or a jaxnn.Neighbors, "
                        f"got {type(neighbors).__name__}")
    sliced = isinstance(neighbors, Neighbors)
    if (not sliced and isinstance(neighbors, tuple) and len(neighbors) == 2
            and all(getattr(part, "ndim", None) == 2 for part in neighbors)):
        raise TypeError("neighbors is a pair of arrays — a search's (indices, distances), as pynndescent's "
                        "query returns: pass the indices")
    nb = neighbors.indices if sliced else neighbors
    if not isinstance(nb, jax.core.Tracer):
        try:
            nb = np.asarray(nb)
        except ValueError as err:  # rows of different lengths
            raise ValueError(f"neighbors must be a rectangular (n, k) array: {err}") from None
    if not jnp.issubdtype(nb.dtype, jnp.integer):
        raise TypeError(f"neighbors must be an integer index array or a jaxnn.Neighbors, got dtype {nb.dtype}")
    n_ok = nb.ndim == 2 and (nb.shape[0] == rows if rows is not None else nb.shape[0] > 0)
    if not n_ok or (nb.shape[1] < k if sliced else nb.shape[1] != k):
        if rows is not None:
            want = f"{rows} rows and at least {k} columns" if sliced else f"shape (m, k) = ({rows}, {k})"
        else:
            want = (f"at least {k} columns" if sliced else f"shape (n, k) with k = model.k = {k}") + " and at least one row"
        wider = not sliced and nb.ndim == 2 and nb.shape[1] > k and n_ok
        raise ValueError(f"neighbors must have {want}, got shape {tuple(nb.shape)}"
                         + (f": pass neighbors[:, :{k}] (the {k} nearest) or the jaxnn.Neighbors itself" if wider else ""))
    nb = nb[:, :k]
    if isinstance(nb, jax.core.Tracer):
        return nb.astype(jnp.int32)
    if nb.min() < 0 or nb.max() >= m:
        hint = ("; a graph of a larger set whose rows were taken for a subset (cross-validation slices the "
                "rows of fit's neighbors= but not the indices in them) needs a graph of the subset itself"
                if rows is not None and nb.max() >= m else "")
        raise ValueError(f"neighbors must hold indices in [0, {m}) (the training points), "
                         f"got values in [{nb.min()}, {nb.max()}]{hint}")
    if rows is not None and np.any(nb == np.arange(m)[:, None]):
        raise ValueError("neighbors must exclude each point itself (row i may not contain i)")
    repeats = np.nonzero(np.any(np.diff(np.sort(nb, axis=1), axis=1) == 0, axis=1))[0]
    if repeats.size:
        raise ValueError(f"neighbors must list k distinct training points a row: row {repeats[0]} repeats an index")
    return nb.astype(np.int32)


def _compute_dtype(X: np.ndarray):
    if X.dtype == np.float64 and jax.config.jax_enable_x64:
        return jnp.float64
    return jnp.float32


# --------------------------------------------------------------------------
# fit / predict
# --------------------------------------------------------------------------


def fit(
    X,
    y,
    *,
    k: int = 10,
    loss="logistic",
    algorithm="gnnb",
    rounds: Optional[int] = None,
    chooser: str = "auto",
    epsilon: float = 0.5,
    neighbors=None,
    seed: int = 0,
    graph_method: str = "exact",
    trace: bool = False,
    posterior: str = "auto",
    devices=None,
    verbose: bool = False,
) -> Model:
    """Learn a leveraged k-NN rule by boosting.

    Args:
      X: (m, d) training points.
      y: (m,) class labels (any sortable values) or an (m, C) {0,1} / {−1,+1}
        indicator matrix (multilabel).
      k: neighbours, 1 ≤ k < m, or ``"auto"`` (chosen by :func:`jaxnn.select`
        among 5, 10, 20, 50 on a held-out 25 %, with the same
        ``graph_method``, ``chooser`` and ``devices``).
      loss: a name (:func:`jaxnn.losses.names`), a :class:`~jaxnn.losses.Loss`
        or ``"auto"`` (logistic or Matsushita, chosen by :func:`jaxnn.select`).
      algorithm: ``"gnnb"``, ``"unn"``, ``"unn_fast"``, ``"n3"`` or an
        algorithm object (``jaxnn.gnnb(...)``, ``jaxnn.unn(...)``…).
      rounds: boosting steps per class T (default m: one pass), or ``"auto"``
        (1, 2 or 4 passes, chosen by :func:`jaxnn.select`).
      chooser: ``"auto"`` (default: :func:`auto_chooser` — ``"colored"``
        when ``rounds`` is whole passes on a GPU or TPU, or on CPU from
        m·C ≥ 5·10⁶; else ``"lazy"``),
        ``"lazy"`` (index order), ``"random"`` (seeded permutation),
        ``"colored"`` (the exact parallel schedule: every example once per
        pass in the order of a colouring of the conflict graph, vectorised
        over the examples of a colour, a colour cut into steps of about
        2¹⁷/C edges; ``rounds`` must be a multiple of m) or ``"greedy"``
        (largest |δ|: GNNB*, N³'s WEO).  From m·C ≥ 2¹⁶ the ``lazy`` and
        ``random`` steps run in windows on a local copy of the rows they
        touch (:mod:`jaxnn._src.window`; same result, ~3× faster on CPU).
      epsilon: GNNB's ε ∈ (0, 1) (paper 000 eq. 10).
      neighbors: optional precomputed (m, k) int neighbour indices (self excluded),
        or a :class:`Neighbors` from :func:`knn_graph` (of k or more neighbours:
        its first k, the nearest, are used).
      seed: seed of the random chooser and of nndescent.
      graph_method: ``"exact"``, ``"nndescent"`` or ``"approx"`` (TPU-native
        ``lax.approx_min_k``) when ``neighbors`` is None (:func:`jaxnn.knn_graph`).
      trace: record the total surrogate risk after every step (``model.trace``;
        after every step of the schedule for ``chooser="colored"``).  It
        evaluates ψ on every edge a step writes: 2–6× the time of a lazy pass.
      posterior: how :func:`predict_proba` estimates posteriors — ``"link"``
        (the papers' p̂ = link(H), paper 003 eq. 29), ``"votes"`` (k-NN vote
        fractions) or ``"auto"`` (default): whichever of the two has the
        lower Brier score on a held-out 20 % for an auxiliary fit on the
        other 80 % (one extra fit; within one standard error, the votes).
        One pass of boosting leaves link(H) shrunk toward uniform and more
        passes overfit posteriors, while vote fractions are hard to beat when
        classes separate (README, "Posteriors"); ``"auto"`` is never much
        worse than either.  Data too small to hold 10 points out (m < 48),
        or whose 80 % would lack a class, get the votes untested (logged).
        :func:`predict` always uses argmax H.
      devices: None (default device), an int n (the first n devices), a list
        of devices or ``"all"``: the class axis of the boosting state is
        sharded across them, and so are the query rows of the exact graph
        search (:mod:`jaxnn._src.sharding`); results equal the single-device
        ones.
      verbose: print each stage (the neighbour graph, boosting, the
        ``posterior="auto"`` choice…) as it starts and its wall time when
        done, to stderr — the ``jaxnn`` logger at INFO level for this call
        (through your own handlers instead, when logging is configured).

    Returns:
      A fitted :class:`Model`.  Computation is float32 unless X is float64 and
      ``jax_enable_x64`` is on.
    """
    if check_bool(verbose, "verbose"):
        with _progress_shown():
            return fit(X, y, k=k, loss=loss, algorithm=algorithm, rounds=rounds, chooser=chooser, epsilon=epsilon,
                       neighbors=neighbors, seed=seed, graph_method=graph_method, trace=trace, posterior=posterior,
                       devices=devices)
    Xa = _as_points(X)
    m = Xa.shape[0]
    classes, Y_np, multilabel = encode_labels(y, m)
    if "auto" in (_auto(k), _auto(loss), _auto(rounds)):
        from jaxnn._src.select import DEFAULT_KS, DEFAULT_LOSSES, DEFAULT_PASSES, select

        if neighbors is not None and _auto(k) == "auto":
            raise ValueError("k='auto' cannot be combined with precomputed neighbors")
        sel = _logged("fit: choosing the 'auto' settings on a held-out 25 %", lambda: select(
            Xa, y,
            ks=DEFAULT_KS if _auto(k) == "auto" else (_check_int(k, "k", low=1),),
            losses=DEFAULT_LOSSES if _auto(loss) == "auto" else (loss,),
            passes=DEFAULT_PASSES if _auto(rounds) == "auto" else (_given_passes(rounds, m),),
            algorithm=algorithm, chooser=chooser, epsilon=epsilon, seed=_check_int(seed, "seed", low=0),
            graph_method=graph_method, devices=devices,
        ))
        k = sel.k if _auto(k) == "auto" else k
        loss = sel.loss if _auto(loss) == "auto" else loss
        rounds = sel.passes * m if _auto(rounds) == "auto" else rounds
        logger.info("fit: 'auto' chose k=%d, loss %s, %d pass(es): held-out accuracy %.4f",
                    sel.k, sel.loss, sel.passes, sel.scores[(sel.k, sel.loss, sel.passes)])
    k = _check_int(k, "k", low=1)
    if k >= m:
        raise ValueError(f"k must be < the number of training points ({m}), got k={k}")
    loss_obj = losses_mod.get(loss)
    epsilon = check_real(epsilon, "epsilon", low=0.0, high=1.0, low_open=True, high_open=True)
    algo = algos.get(algorithm, epsilon=epsilon)
    algo.check(loss_obj)
    check_chooser(chooser)
    rounds = m if rounds is None else _check_int(rounds, "rounds", low=1)
    seed = _check_int(seed, "seed", low=0)
    platform = sharding.platform(devices)
    if chooser == "auto":
        chooser = auto_chooser(m, rounds, platform, Y_np.shape[1])
    if chooser == "colored" and rounds % m:
        raise ValueError(f"chooser='colored' runs whole passes: rounds must be a multiple of m={m}, got {rounds}")
    for value, name in ((posterior, "posterior"), (graph_method, "graph_method")):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if posterior not in _POSTERIORS:
        raise ValueError(f"unknown posterior {posterior!r}; use one of {_POSTERIORS}" + did_you_mean(posterior, _POSTERIORS))
    trace = check_bool(trace, "trace")
    if graph_method not in _GRAPH_METHODS:  # checked even when neighbors are given
        raise ValueError(f"unknown graph_method {graph_method!r}; use one of {_GRAPH_METHODS}"
                         + did_you_mean(graph_method, _GRAPH_METHODS))
    return _fit_checked(Xa, y, classes, Y_np, multilabel, k=k, loss_obj=loss_obj, algo=algo, rounds=rounds,
                        chooser=chooser, seed=seed, graph_method=graph_method, trace=trace, posterior=posterior,
                        devices=devices, neighbors=neighbors)


def _fit_checked(Xa, y, classes, Y_np, multilabel: bool, *, k: int, loss_obj, algo, rounds: int, chooser: str, seed: int,
                 graph_method: str, trace: bool, posterior: str, devices, neighbors, like=None) -> Model:
    """:func:`fit` once its settings are checked and resolved (``chooser``
    not ``"auto"``): (m, d) host points Xa, the labels y as given and as
    :func:`encode_labels` reads them (classes, Y_np, multilabel).  ``like``:
    the :class:`SharedShapes` of another fit whose compiled search and
    boosting this one is to reuse (``posterior="auto"``'s auxiliary fit
    takes the main fit's), or None."""
    m = Xa.shape[0]
    platform = sharding.platform(devices)
    dtype = _compute_dtype(Xa)
    Xj, origin = _training_points(Xa, dtype)
    if neighbors is None:
        graph_devices = devices if graph_method in ("exact", "approx") else None
        nbrs = _logged(f"fit: {graph_method} {k}-NN graph of {m} points in {Xa.shape[1]} dimensions",
                       lambda: np.asarray(knn_graph(Xj, k, method=graph_method, seed=seed, devices=graph_devices).indices))
    else:
        nbrs = _check_neighbors(neighbors, m, k, rows=m)
    Y = to_device(Y_np, dtype)  # cast on the host: nothing compiles per m
    n_classes = Y.shape[1]
    # posterior="auto"'s auxiliary fit runs windowed when the main fit did, to share its compiled scan
    windowed = _runs_windowed(m, n_classes, chooser, devices) or isinstance(like, WindowedShapes)
    shared = _boosts_at_shared_size(m, n_classes, chooser, devices)
    E0 = None if shared else initial_edges(Y, algorithm=algo, loss=loss_obj)
    if devices is not None:
        mesh = sharding.class_mesh(devices)
        n_dev = mesh.devices.size
        Y = sharding.shard_classes(sharding.pad_classes(Y, n_dev), mesh)
        E0 = sharding.shard_classes(sharding.pad_classes(E0, n_dev), mesh)

    shapes = None  # the padded shapes of a shared-size boosting

    def run_boosting():
        nonlocal shapes
        if shared and chooser == "colored":  # a small problem: the schedule padded to shared sizes
            result, shapes = _shared_size_colored(Y_np, nbrs, dtype, algorithm=algo, loss=loss_obj, passes=rounds // m,
                                                  trace=bool(trace), platform=platform, like=like)
            return result
        if shared:  # a small problem: the (windowed) scan padded to shared sizes
            result, shapes = _shared_size_boost(Y_np, nbrs, chooser_order(chooser, m, rounds, seed), dtype,
                                                algorithm=algo, loss=loss_obj, greedy=chooser == "greedy",
                                                windowed=windowed, trace=bool(trace), like=like)
            return result
        if chooser != "colored" and not windowed:  # the padded (m, P) inverse neighbourhoods
            largest = inverse_counts(nbrs, m).max()  # P
            order = chooser_order(chooser, m, rounds, seed)
            inv = inverse_neighbors(nbrs, m, width=shared_width(largest))  # refits share the width
            if devices is not None:
                inv = type(inv)(*(sharding.replicate(a, mesh) for a in inv))
            greedy = chooser == "greedy"  # the only chooser that reads the neighbours
            return boost(Y, E0, inv.members, inv.counts, to_device(nbrs) if greedy else None, to_device(order),
                         algorithm=algo, loss=loss_obj, greedy=greedy, trace=bool(trace))
        counts = inverse_counts(nbrs, m)  # n_j; the padded members array is not needed
        if chooser == "colored":  # the schedule's edge lists replace the members array
            schedule = color_schedule(nbrs, n_classes=Y.shape[1], platform=platform)
            if _progress_wanted():  # n_colors reads all m colours
                logger.info("fit: %d colours in %d scan steps a pass (instead of %d sequential steps)",
                            schedule.n_colors, schedule.n_steps, m)
            return boost_colored(Y, E0, to_device(counts), schedule, algorithm=algo, loss=loss_obj,
                                 passes=rounds // m, trace=bool(trace))
        # a large edge state: the sequential steps run in windows on a local copy (jaxnn._src.window)
        order = chooser_order(chooser, m, rounds, seed)
        layout = window.window_layout(nbrs, order, window.window_steps(Y.shape[1], k))
        return window.boost_windowed(Y, E0, to_device(counts), layout, algorithm=algo, loss=loss_obj,
                                     trace=bool(trace), n_steps=rounds, max_count=window.shared_max_count(counts))

    scan = "colour schedule" if chooser == "colored" else "windowed scan" if windowed else "scan"
    result = _logged(f"fit: {type(algo).__name__} boosting ({loss_obj.name} loss, {chooser} chooser, {scan}), "
                     f"{rounds} steps x {n_classes} classes", run_boosting)
    alpha = result.alpha[:, :n_classes]
    trace = result.trace
    padded = Y.shape[1] - n_classes
    if trace is not None and padded:  # the risk of the real classes: padded columns hold ψ(0) throughout
        psi0 = loss_obj.psi(jnp.zeros((), trace.dtype))
        trace = (trace * Y.shape[1] - psi0 * padded) / n_classes
    Y = Y[:, :n_classes]
    if devices is not None:  # hand back ordinary single-device arrays, where JAX puts results by default
        home = next(iter(Xj.devices()))
        alpha, Y = jax.device_put(alpha, home), jax.device_put(Y, home)
        trace = None if trace is None else jax.device_put(trace, home)
    model = Model(alpha, Xj, Y, trace, classes, k, loss_obj, algo, multilabel, rounds=rounds, origin=origin)
    mix = {"link": 0.0, "votes": 1.0}.get(posterior)
    if mix is None:
        # the 80 % fit's graph: derived from the caller's (two hops) when they gave one —
        # jaxnn cannot repeat their search, and an exact one of 80 % may take minutes
        mix = _choose_posterior_mix(Xa, y, k=k, loss=loss_obj, algorithm=algo, rounds=rounds, chooser=chooser, seed=seed,
                                    graph_method=graph_method, devices=devices,
                                    graph=nbrs if neighbors is not None else None, like=shapes)
    return dataclasses.replace(model, posterior_mix=float(mix))


def _runs_windowed(m: int, n_classes: int, chooser: str, devices) -> bool:
    """Whether the sequential steps run in windows (:mod:`window`): the lazy
    and random choosers on one device from m·C ≥ ``window.WINDOWED_MIN_STATE``."""
    return chooser not in ("greedy", "colored") and devices is None and m * n_classes >= window.WINDOWED_MIN_STATE


def _boosts_at_shared_size(m: int, n_classes: int, chooser: str, devices) -> bool:
    """Whether ``fit`` runs its boosting padded to shared sizes
    (:func:`_shared_size_boost`, :func:`_shared_size_colored`): the
    sequential scan, plain or windowed (lazy, random, greedy), or the colored
    schedule (since stop 29), of at most ``SHARED_MAX_ROWS`` examples on one
    device — where a new size's compilation outweighs the padded steps."""
    return devices is None and m <= SHARED_MAX_ROWS


class SharedShapes(NamedTuple):
    """The padded sizes of a shared-size boosting (:func:`_shared_size_boost`):
    examples (rows), steps and the inverse neighbourhoods' width."""

    rows: int
    steps: int
    width: int

    @classmethod
    def of(cls, m: int, steps: int, largest: int, k: int) -> "SharedShapes":
        """The shapes of m examples, ``steps`` steps and a largest inverse
        neighbourhood ``largest`` (P) of a k-NN graph: :func:`graph.shared_rows`
        (m), :func:`graph.in_blocks` (steps), :func:`graph.shared_width`
        (max(P, 8·:func:`graph.shared_k` (k, m))): the ks that share a search
        share a width."""
        return cls(shared_rows(m), in_blocks(steps), shared_width(max(int(largest), 8 * shared_k(k, m))))


class WindowedShapes(NamedTuple):
    """The padded sizes of a shared-size windowed scan: examples (rows), the
    layout's :class:`window.WindowSizes` and the static ``max_count``."""

    rows: int
    layout: window.WindowSizes
    max_count: int


def _shared_size_boost(Y_np, nbrs, order, dtype, *, algorithm, loss, greedy: bool, windowed: bool, trace: bool,
                       like: SharedShapes | WindowedShapes | None = None):
    """:func:`boost` on a small problem padded to shared sizes: the m examples
    to M = :func:`graph.shared_rows` (m) rows (y = 0, n_j = 0, no one's
    neighbour), the T steps to :func:`graph.in_blocks` (T) (no-ops) and the
    inverse neighbourhoods' width to :func:`graph.shared_width` (max(P, 8K)),
    K = :func:`graph.shared_k` (k, m) (the largest one, P, varies with the
    data — Gaussian folds of 400 points in 16 dimensions, k = 10, gave P =
    56–80, all under the floor 8k = 80 at stop 27; a power of two, coarser, made a step at m = 12 000 read 256
    members instead of 160: 12 % slower warm), so that fits of nearby sizes
    — cross-validation folds, a learning curve — reuse one compiled boosting
    instead of compiling ~0.15–0.3 s each (2 CPU cores).
    The same steps run on the same edges: the result is that of the
    unpadded call (α, edges and trace sliced back on the host).  ``like``:
    shapes to pad to at least (another fit's, to share its compilation).
    ``windowed``: the windowed scan (:mod:`window`), its layout padded too
    (:func:`_shared_size_windowed`).

    Returns (:class:`BoostResult`, the :class:`SharedShapes` or
    :class:`WindowedShapes` used).
    """
    if windowed:
        return _shared_size_windowed(Y_np, nbrs, order, dtype, algorithm=algorithm, loss=loss, trace=trace, like=like)
    m, k = nbrs.shape
    shapes = SharedShapes.of(m, order.size, inverse_counts(nbrs, m).max(), k)
    if like is not None:
        shapes = SharedShapes(*(max(a, b) for a, b in zip(shapes, like)))
    Y = to_device(padded_rows(Y_np, shapes.rows), dtype)
    inv, neighbors = padded_graph(nbrs, shapes.rows, shapes.width, greedy=greedy)
    result = boost(Y, None, inv.members, inv.counts, neighbors,  # E0 = init_edges(Y) in the program
                   to_device(padded_rows(order, shapes.steps)), to_device(m, np.int32),
                   to_device(order.size, np.int32), algorithm=algorithm, loss=loss, greedy=greedy, trace=trace)
    return _first_of(result, m, order.size), shapes


def _first_of(result: BoostResult, m: int, steps: int) -> BoostResult:
    """A padded boosting's result cut to its m examples and steps on the host
    (nothing compiles per size)."""
    alpha, edges = (to_device(np.asarray(a)[:m]) for a in (result.alpha, result.edges))
    trace = None if result.trace is None else to_device(np.asarray(result.trace)[:steps])
    return BoostResult(alpha, edges, trace)


def _shared_size_windowed(Y_np, nbrs, order, dtype, *, algorithm, loss, trace: bool,
                          like: WindowedShapes | None = None):
    """:func:`window.boost_windowed` on a small problem padded to shared sizes:
    the examples to :func:`graph.shared_rows` (m) rows (y = 0, n_j = 0), the
    layout's windows to three significant bits (``window_layout(shared=True)``:
    empty windows change nothing), m traced (``n_points``) and the trace cut
    on the host — so that cross-validation folds of a many-class problem
    (m·C ≥ ``window.WINDOWED_MIN_STATE``: from m = 656 at C = 100) share one
    compiled scan (5 folds of 1602–1603 points, C = 100, compiled it 3 times,
    ~0.26 s each on 2 CPU cores).  ``like``: another fit's
    :class:`WindowedShapes`, to pad to at least.

    Returns (:class:`BoostResult`, the :class:`WindowedShapes` used).
    """
    m, k = nbrs.shape
    layout, shapes = _windowed_layout(nbrs, order, window.window_steps(Y_np.shape[1], shared_k(k, m)), like=like)
    Y = to_device(padded_rows(Y_np, shapes.rows), dtype)
    counts = to_device(padded_rows(inverse_counts(nbrs, m), shapes.rows))
    result = window.boost_windowed(Y, None, counts, layout, to_device(m, np.int32),  # E0 in the program
                                   algorithm=algorithm, loss=loss, trace=trace, max_count=shapes.max_count)
    return _first_of(result, m, order.size), shapes


def _shared_size_colored(Y_np, nbrs, dtype, *, algorithm, loss, passes: int, trace: bool, platform: str,
                         like: ScheduleSizes | None = None):
    """:func:`schedule.boost_colored` on a small problem padded to shared
    sizes: the examples to :func:`graph.shared_rows` (m) rows (y = 0, n_j = 0,
    in no step), the edges and examples a step to three significant bits and
    the steps to a power of two ≥ 4k (``color_schedule(pad_to=)``), m and
    the steps that run traced
    (``n_points``, ``n_steps``: the padding steps do not run) and the trace
    cut on the host — so that cross-validation folds share one compiled
    colouring and schedule, where each fold's data-dependent shapes compiled
    both (~0.9 s on 2 CPU cores; on a GPU or TPU ``chooser="auto"`` runs
    the colored schedule at every size).  ``like``: another fit's
    :class:`schedule.ScheduleSizes`, to pad to at least.

    Returns (:class:`BoostResult`, the :class:`schedule.ScheduleSizes` used).
    """
    m = nbrs.shape[0]
    pad_to = ScheduleSizes(shared_rows(m), 0, 0, 0)  # the steps: a power of two ≥ 4k, never run
    if isinstance(like, ScheduleSizes):
        pad_to = ScheduleSizes(*(max(a, b) for a, b in zip(pad_to, like)))
    schedule, real_steps, sizes = padded_schedule(nbrs, n_classes=Y_np.shape[1], platform=platform, pad_to=pad_to)
    if _progress_wanted():  # n_colors reads all m colours
        logger.info("fit: %d colours in %d scan steps a pass (instead of %d sequential steps)", schedule.n_colors,
                    real_steps, m)
    Y = to_device(padded_rows(Y_np, sizes.rows), dtype)
    counts = to_device(padded_rows(inverse_counts(nbrs, m), sizes.rows))
    # E0 computed in the program; the (m,) colours, which the scan does not read, left out of its arguments
    result = boost_colored(Y, None, counts, schedule._replace(colors=None), to_device(m, np.int32),
                           to_device(real_steps, np.int32), algorithm=algorithm, loss=loss, passes=passes, trace=trace)
    return _first_of(result, m, passes * real_steps), sizes


def _windowed_layout(nbrs, order, steps: int, like: WindowedShapes | None = None):
    """(the :func:`window.window_layout` of ``order``, ``steps`` a window,
    padded to shared sizes; its :class:`WindowedShapes`): rows
    :func:`graph.shared_rows` (m), ``max_count`` :func:`window.shared_max_count`,
    each at least ``like``'s."""
    m = nbrs.shape[0]
    rows, max_count = shared_rows(m), window.shared_max_count(inverse_counts(nbrs, m))
    if like is not None:
        rows, max_count = max(rows, like.rows), max(max_count, like.max_count)
    layout = window.window_layout(nbrs, order, steps, shared=True, at_least=None if like is None else like.layout)
    return layout, WindowedShapes(rows, layout.sizes, max_count)


def padded_graph(nbrs, rows: int, width: int, *, greedy: bool):
    """(inverse neighbourhoods ``width`` members wide, (rows, k) neighbour
    indices or None) of an (m, k) graph padded to ``rows`` examples for
    :func:`boost`'s ``n_points``: the padding rows are in no one's inv(j)
    (n_j = 0) and their own neighbours.  Only the greedy chooser reads the
    neighbours (the other scans would compile per k for an unused argument)."""
    m, k = nbrs.shape
    if not greedy:
        return inverse_neighbors(nbrs, rows, width=width), None
    ghosts = np.repeat(np.arange(m, rows, dtype=nbrs.dtype)[:, None], k, axis=1)
    return inverse_neighbors(nbrs, rows, width=width), to_device(np.concatenate([nbrs, ghosts]))


def _given_passes(rounds, m: int) -> int:
    """Passes that ``rounds`` given beside an ``"auto"`` setting are scored
    as: rounds/m rounded, at least one (one when rounds is None)."""
    return 1 if rounds is None else max(1, round(_check_int(rounds, "rounds", low=1) / m))


_POSTERIORS = ("auto", "link", "votes")


#: m·C from which ``chooser="auto"`` runs the colored schedule on CPU too
AUTO_COLORED_MIN_STATE_CPU = 5_000_000


def auto_chooser(m: int, rounds: int, platform: str, n_classes: int = 1) -> str:
    """What ``fit(chooser="auto")`` runs: ``"colored"`` when ``rounds`` is a
    multiple of m (the schedule runs whole passes) on an accelerator
    (``platform`` not ``"cpu"``), or on CPU from m·C ≥
    :data:`AUTO_COLORED_MIN_STATE_CPU`; else ``"lazy"``.

    Both visit every example once per pass and reach the same accuracy
    (asv ``ChooserAccuracy``: one GNNB pass over 12 UCI sets × 3 splits,
    lazy 0.9224, colored 0.9229; 10⁵-point synthetic set 0.9533 / 0.9553).
    On a GPU a sequential step costs ~9 µs (one H100, m = 10⁵, k = 10,
    C = 10, an earlier version of this code: a lazy pass 869 ms, the
    colored one 9.9 ms).  On 2 CPU cores, ``fit`` on a precomputed random
    graph (k = 10), first call in a fresh process / warm, lazy vs colored:
    m = 10⁵, C = 10: 3.5 / 0.59 vs 4.75 / 0.30 s; 2·10⁵: 4.5 / 1.3 vs
    5.0 / 0.65; 3·10⁵: 4.9 / 2.0 vs 5.9 / 1.0; 5·10⁵: 6.7 / 3.7 vs
    6.6 / 1.8; 10⁶: 11.1 / 7.4 vs 8.6 / 3.8; m = 10⁵, C = 100: 4.9 / 2.1–2.5
    vs 5.1 / 1.1–1.3 — the schedule is ~2× faster warm from 10⁵ on, and its
    compilation (the colouring compiles per size) stops costing more than
    that from m·C ≈ 5·10⁶; smaller fits (the UCI sets: ~1 s more compile
    colored) stay lazy on CPU.
    """
    if rounds % m:
        return "lazy"
    return "colored" if platform != "cpu" or m * int(n_classes) >= AUTO_COLORED_MIN_STATE_CPU else "lazy"


def _auto(value):
    return "auto" if isinstance(value, str) and value == "auto" else None
# λ candidates of posterior="auto".  Intermediate blends were tried (21-point
# grid): they put link mass where the votes are 0 and the true posterior is
# tiny, which the KL to the truth punishes; choosing one estimator is safer.
_MIX_GRID = np.array([0.0, 1.0])


#: at most this many held-out points are scored by posterior="auto" (a seeded
#: random subset of the 20 %).  A per-point Brier score lies in [0, 2], so the
#: standard error of a mean over 10⁴ points is below 0.01, while scoring costs an
#: exact neighbour query of every scored point against the 80 % (m = 10⁶, d = 16:
#: ~150 s for all 2·10⁵ held-out points, half of the whole fit)
MAX_SCORED = 10_000


def _choose_posterior_mix(X, y, *, k, loss, algorithm, rounds, chooser, seed, graph_method="exact", devices=None,
                          holdout=0.2, graph=None, like=None) -> float:
    """λ ∈ {0, 1} (link or votes) with the lower held-out Brier score.

    An auxiliary model is fit on a seeded random 80 % of the data (same
    settings — its neighbour graph by the same ``graph_method``, or, given
    ``graph`` (the (m, k) graph of all the data), derived from it by
    :func:`graph.subgraph` — rounds scaled with the sample) and scored on the
    other 20 % (at most :data:`MAX_SCORED` of them, drawn at random).  An
    exact graph and the scored points' neighbours come from one search
    (:func:`graph.graph_and_query`: one compilation, not two).  ``like``: the
    main fit's :class:`SharedShapes` (a small fit's), to which the auxiliary
    fit's search and boosting are padded — the m points' graph search and
    boosting compiled already serve them (a new size's first fit compiles
    two programs fewer, ~0.4 s on 2 CPU cores).
    Returns 1 (the votes, which the choice keeps within one standard error)
    without a fit when the data cannot be split so: fewer than 10 held-out
    points, k + 1 or fewer points left in the 80 %, or a class (a label's
    positives or negatives) missing from the 80 %.
    """
    m = X.shape[0]
    n_val = int(round(holdout * m))

    def votes_untested(reason: str) -> float:
        logger.info("fit: posterior='auto' takes the votes untested: %s", reason)
        return 1.0

    if n_val < 10:
        return votes_untested(f"{m} points leave {n_val} < 10 to hold out")
    if m - n_val <= k + 1:
        return votes_untested(f"the auxiliary fit's {m - n_val} points are too few for k={k}")
    perm = np.random.default_rng(seed).permutation(m)
    val, tr = perm[:n_val], perm[n_val:]
    val = val[:MAX_SCORED]  # perm is random: its first entries are a random subset
    y_arr = label_rows(y)
    if y_arr.ndim == 1:
        classes = np.unique(y_arr)
        if np.unique(y_arr[tr]).size != classes.size:
            return votes_untested("a class has no example in the auxiliary fit's 80 %")
        target = (y_arr[val][:, None] == classes[None, :]).astype(float)
    else:
        positive = y_arr[tr] > 0
        if np.any(np.all(positive == positive[:1], axis=0)):
            return votes_untested("a label has no positive (or no negative) example in the auxiliary fit's 80 %")
        target = (y_arr[val] > 0).astype(float)
    aux_rounds = max(1, int(round(rounds * tr.size / m)))
    scored = "" if val.size == n_val else f"{val.size} of "
    logger.info("fit: posterior='auto': auxiliary fit on %d points, Brier scores on %sthe other %d", tr.size, scored, n_val)
    aux_graph = val_neighbors = None
    if graph is not None:
        aux_graph = _logged(f"fit: posterior='auto': {k}-NN graph of the {tr.size} points from the full graph (two hops)",
                            lambda: subgraph(X, graph, tr))
    elif graph_method == "exact":  # the 80 %'s graph and the scored points' neighbours: one search, one compilation
        aux_graph, val_neighbors = _logged(
            f"fit: posterior='auto': exact {k}-NN graph of the {tr.size} points and of the {val.size} scored among them",
            lambda: graph_and_query(*_points_of_parts(X, _compute_dtype(X), tr, val), k, devices=devices,
                                    rows=None if like is None else like.rows, cut_queries=False))
    aux = _fit_checked(X[tr], y_arr[tr], *encode_labels(y_arr[tr], tr.size), k=k, loss_obj=loss, algo=algorithm,
                       rounds=aux_rounds, chooser=chooser, seed=seed, graph_method=graph_method, trace=False,
                       posterior="link", devices=devices, neighbors=aux_graph, like=like)
    p_link, p_votes = (np.asarray(p, float) for p in _posterior_parts(aux, X[val], found=val_neighbors,
                                                                      rows=None if like is None else like.rows))
    # per-example Brier score of every blend: (scored points, len(grid))
    blends = (1 - _MIX_GRID)[None, :, None] * p_link[:, None, :] + _MIX_GRID[None, :, None] * p_votes[:, None, :]
    brier = np.sum((blends - target[:, None, :]) ** 2, axis=2)
    mix = float(_MIX_GRID[_one_standard_error_choice(brier)])
    logger.info("fit: posterior='auto': held-out Brier score %s -> %s",
                ", ".join(f"{name} {b:.4f}" for name, b in zip(("link", "votes"), brier.mean(axis=0))),
                "votes" if mix else "link")
    return mix


def _one_standard_error_choice(brier: np.ndarray) -> int:
    """The one-standard-error rule toward the last candidate: (n, G) per-point
    scores (lower is better) of G candidates on n ≥ 2 points → the largest
    index whose mean is within one standard error of the best mean, the
    error being that of the mean paired difference to the best candidate,
    std(ddof=1)/√n."""
    mean = brier.mean(axis=0)
    best = int(np.argmin(mean))
    se = (brier - brier[:, [best]]).std(axis=0, ddof=1) / np.sqrt(brier.shape[0])
    return int(np.nonzero(mean <= mean[best] + se)[0].max())


def _check_model(model) -> Model:
    if not isinstance(model, Model):
        raise TypeError(f"expected a jaxnn Model (from jaxnn.fit), got {type(model).__name__}")
    return without_float64(model)


def without_float64(model):
    """``model`` itself — or, when it holds float64 arrays (fit under
    ``jax_enable_x64``) and x64 is off now, a copy in float32, with a warning.

    Fitting float64 data inside ``with jax.enable_x64(True):`` and predicting
    after it would otherwise ask for float64 in every operation, which JAX
    truncates to float32 with a warning each (a dozen a call).  The cast keeps
    the points apart: features far from 0 were centred at fit time, under x64
    too (``model.origin``, :func:`graph.float32_origin`, a float32 number)."""
    if jax.config.jax_enable_x64:
        return model
    wide = [a for a in jax.tree_util.tree_leaves(model) if getattr(a, "dtype", None) == jnp.float64]
    if not wide or any(isinstance(a, jax.core.Tracer) for a in wide):
        return model
    warnings.warn(f"this {type(model).__name__} was fit in float64 (under jax_enable_x64), which is off now: it "
                  "predicts in float32; predict inside `with jax.enable_x64(True):` for float64", UserWarning, stacklevel=4)
    return jax.tree_util.tree_map(lambda a: a.astype(jnp.float32) if getattr(a, "dtype", None) == jnp.float64 else a, model)


@jax.jit
def _scores(alpha, Y, indices, k=None):
    """H_c(x) = Σ_{j∈NN_k(x)} α_jc y_jc (eq. 1) → (n, C), for (n, k') neighbour
    indices, nearest first, of which the first k (traced; None: all k') are
    NN_k(x): :func:`jaxnn.select` scores every candidate k with one
    compiled program from the largest k's neighbours."""
    return neighbor_sum(alpha * Y, indices, k)


@jax.jit
def _vote_fractions(Y, indices, k=None):
    """v_c(x) = #{j ∈ NN_k(x) : y_jc > 0}/k for (n, k') neighbour indices, of
    which the first k (traced; None: all k') are NN_k(x) → (n, C)."""
    return neighbor_sum((Y > 0).astype(Y.dtype), indices, k) / (indices.shape[1] if k is None else k)


def _check_query(model: Model, X):
    """Checked query points, as :func:`_as_points` gives them, shifted by the
    model's origin when it has one (knn_query puts them in the model's dtype)."""
    Xq = _as_points(X)
    if Xq.shape[1] != model.X.shape[1]:
        raise ValueError(f"X has {Xq.shape[1]} features but the model was fit on {model.X.shape[1]}")
    return shift_points(Xq, model.origin)


def _query_parts(model: Model, X, neighbors):
    """(alpha, Y, (rows, k') indices of the model's training points nearest
    each query, k, n): the indices are ``neighbors`` when given (checked
    against X's rows if X is given too; k' = k = ``model.k``, k passed as
    None), else the exact search of X among ``model.X`` — for a small model
    all the :func:`graph.shared_k` neighbours it finds, with k as a traced
    count of them to sum (None where k' = k), so that models of nearby ks
    share one compiled scoring and posterior.  rows ≥ n: the queries are
    padded to :func:`graph.query_rows` (batches of nearby sizes share one
    compiled search, scoring and posterior; rows from n on are to be
    dropped); under ``jax.jit`` rows = n.
    alpha and Y are the model's, padded with zero rows to
    :func:`graph.shared_rows` for a concrete model of at most
    ``SHARED_MAX_ROWS`` points (as its search is): models of nearby sizes
    share one compiled scoring."""
    alpha, Y = at_shared_rows(model.alpha, model.Y)
    if neighbors is None:
        if X is None:
            raise TypeError("give the query points X, or their neighbours among the training points as neighbors=")
        idx, _, n = padded_query(model.X, _check_query(model, X), model.k, cut=False)
        return alpha, Y, idx, first_k(idx, model.k), n
    nb = _check_neighbors(neighbors, model.X.shape[0], model.k)
    n = nb.shape[0]
    if X is not None:
        Xq = _check_query(model, X)
        if Xq.shape[0] != n:
            raise ValueError(f"X and neighbors have mismatched lengths: {Xq.shape[0]} rows in X, {n} in neighbors")
    if isinstance(nb, jax.core.Tracer):
        return alpha, Y, nb, None, n
    return alpha, Y, to_device(padded_rows(nb, query_rows(n))), None, n  # padding rows name training point 0


def decision_function(model: Model, X=None, *, neighbors=None) -> jax.Array:
    """H_c(x) for each row of X: (n, C), columns in ``model.classes`` order.

    ``neighbors``: optional (n, k) indices of each query's k nearest training
    points (``model.X`` rows, nearest first; k = ``model.k``), or a
    :class:`Neighbors` with at least k columns — from any search (an
    approximate index, neighbours shared by several models); then X may be
    left out, and no search is run.
    """
    model = _check_model(model)
    alpha, Y, nb, k, n = _query_parts(model, X, neighbors)
    return first_rows((_scores(alpha, Y, nb, k),), n)[0]


def _link_posterior(loss, algorithm, multilabel: bool, H):
    """The one-vs-rest link posteriors p̂_c = link(H_c) in [0, 1], (…, C) from H (…, C):
    the loss's posterior (paper 003 eq. 11 / eq. 29), except for single-label
    N³, whose link accounts for N³'s class-balanced initial edges
    (:func:`_n3_link`); multilabel N³ keeps the plain link (its initial edges
    depend on each training example's whole label vector)."""
    p = _n3_link(loss, algorithm, H) if isinstance(algorithm, algos.N3) and not multilabel else loss.posterior(H)
    return jnp.clip(p, 0.0, 1.0)


def _n3_link(loss, algorithm, H):
    """N³'s link posterior for single-label models: (…, C) from H (…, C).

    N³ starts from the class-balanced initial edges e0 of ``N3.init_edges``
    (p̂(−e0) = π = 1/(2·#{l : y_il = y_ic})): with C classes a positive has
    e0⁺ = 0 and a negative e0⁻ = −p̂⁻¹(1/(2(C − 1))).  The surrogate risk for
    class c at x, p·ψ(e0⁺ + H_c) + (1 − p)·ψ(e0⁻ − H_c), is least where
    p·w(e0⁺ + H_c) = (1 − p)·w(e0⁻ − H_c) (w = −ψ'), so

        p̂_c = w(e0⁻ − H_c) / (w(e0⁺ + H_c) + w(e0⁻ − H_c)),

    paper 003 eq. 11 shifted by the initial edges (with C = 2, e0⁺ = e0⁻ = 0
    and it is the loss's posterior).  Computed as 1/(1 + w⁺/w⁻): a weight that
    is 0 or underflows gives p̂ = 0 or 1, not 0/0; where both weights are 0 (a
    flat stretch of ψ on both sides: no catalogue loss) every p is a
    minimiser and p̂ = 1/2.  NaN in H gives NaN.
    """
    C = H.shape[-1]
    one_positive = jnp.where(jnp.arange(C) == 0, 1.0, -1.0).astype(H.dtype)[None]
    e0 = algorithm.init_edges(loss, one_positive)  # (1, C): [e0⁺, e0⁻, …, e0⁻]
    w_pos = loss.weight(e0[0, 0] + H)
    w_neg = loss.weight(e0[0, 1] - H)
    both_zero = (w_pos == 0) & (w_neg == 0)
    p = 1.0 / (1.0 + w_pos / jnp.where(both_zero, 1.0, w_neg))  # w⁻ = 0 < w⁺: w⁺/0 = inf, p̂ = 0
    return jnp.where(both_zero, 0.5, p).astype(H.dtype)


def _normalise_rows(p, H):
    """Rows of the one-vs-rest posteriors p (n, C) normalised to sum to 1.

    Where a row's total is 0 (every p̂_c underflowed: H_c far below 0 for all
    c) the mass goes uniformly to the classes of largest H (ties share) —
    the limit of the normalised posteriors for links with exponential tails,
    and the argmax that :func:`predict` returns.  A row holding a NaN stays
    NaN (its total is NaN, not 0).
    """
    total = jnp.sum(p, axis=1, keepdims=True)
    empty = total == 0
    top = (H == jnp.max(H, axis=1, keepdims=True)).astype(p.dtype)
    top = top / jnp.sum(top, axis=1, keepdims=True)
    return jnp.where(empty, top, p / jnp.where(empty, 1.0, total))


def _posterior_parts(model: Model, X, neighbors=None, found=None, rows=None):
    """(link posterior, vote fractions), both (n, C) NumPy arrays: the
    program of :func:`predict_proba` (:func:`_mixed_posterior`) at λ = 0 and
    λ = 1, so that ``posterior="auto"``'s choice compiles nothing that the
    fitted model's ``predict_proba`` does not use (a program of its own took
    ~0.1 s of a first fit's ~1 s on 2 CPU cores); the padding dropped on the
    host: nothing compiles per n.  ``found``: instead of ``neighbors``, the
    (n, k') host indices of X's k' ≥ k nearest training points, nearest
    first, from a search at :func:`graph.shared_k` (k') — all of them passed
    on, with k traced, so that nearby ks share one compiled program; with
    them, ``rows``: the model's α and labels are padded to at least so many
    rows (the main fit's, whose ``predict_proba`` then reuses the program)."""
    if found is None:
        alpha, Y, nb, k, n = _query_parts(model, X, neighbors)
    else:
        alpha, Y = at_shared_rows(model.alpha, model.Y, rows=rows)
        n = found.shape[0]
        if X.shape[0] != n:
            raise ValueError(f"X and found have mismatched lengths: {X.shape[0]} rows in X, {n} in found")
        nb = to_device(padded_rows(found, query_rows(n)))
        k = first_k(found, model.k)
    options = {"loss": model.loss, "algorithm": model.algorithm, "multilabel": model.multilabel}
    # λ as a Python float, positional, as predict_proba passes model.posterior_mix: the same program
    return tuple(np.asarray(_mixed_posterior(alpha, Y, nb, lam, k, **options))[:n] for lam in (0.0, 1.0))


def _normalised_link(alpha, Y, nb, k, *, loss, algorithm, multilabel: bool):
    """The link posterior p̂_c = link(H_c(x)) (:func:`_link_posterior`), (n, C),
    for (n, k') neighbour indices nb of which the first k (traced; None: all)
    are NN_k; for single-label models normalised over classes
    (:func:`_normalise_rows`: rows whose posteriors all underflow put their
    mass on the classes of largest H; NaN propagates).  Traced in the
    caller's program."""
    H = _scores(alpha, Y, nb, k)
    p_link = _link_posterior(loss, algorithm, multilabel, H)
    return p_link if multilabel else _normalise_rows(p_link, H)


def predict_proba(model: Model, X=None, *, neighbors=None) -> jax.Array:
    """Class posteriors p̂_c(x) ∈ [0, 1], (n, C), columns in ``model.classes`` order.

    p̂ = (1 − λ)·link(H_c(x)) + λ·v_c(x), with link the loss's posterior
    (paper 003 eq. 29 / eq. 11), v_c the fraction of the k neighbours in class
    c and λ = ``model.posterior_mix`` (see ``fit(posterior=...)``).  For
    single-label models rows sum to 1 (the one-vs-rest link posteriors are
    normalised); multilabel models return per-class posteriors.
    ``neighbors``: the query points' training neighbours, as for
    :func:`decision_function`.
    """
    return first_rows(*_padded_proba(_check_model(model), X, neighbors))[0]


def _padded_proba(model: Model, X, neighbors):
    """((:func:`predict_proba` on the padded query rows,), n)."""
    alpha, Y, nb, k, n = _query_parts(model, X, neighbors)
    return (_mixed_posterior(alpha, Y, nb, model.posterior_mix, k, loss=model.loss, algorithm=model.algorithm,
                             multilabel=model.multilabel),), n


@functools.partial(jax.jit, static_argnames=("loss", "algorithm", "multilabel"))
def _mixed_posterior(alpha, Y, nb, lam, k=None, *, loss, algorithm, multilabel: bool):
    """(1 − λ)·link + λ·votes, (n, C): the link posterior of
    :func:`_normalised_link` and the vote fractions v_c(x) = #{j ∈ NN_k(x) :
    y_jc = +1}/k (:func:`_vote_fractions`), for (n, k') neighbour indices nb
    of which the first k (traced; None: all) are NN_k.  λ is traced:
    one program serves the link (λ = 0) and the votes (λ = 1) of
    ``posterior="auto"``, where a static λ compiled one each (folds of a
    cross-validation choose either); the votes are computed where λ ≠ 0 only
    (a ``lax.cond``)."""
    p_link = _normalised_link(alpha, Y, nb, k, loss=loss, algorithm=algorithm, multilabel=multilabel)

    def mixed(p_link):
        return (1.0 - lam) * p_link + lam * _vote_fractions(Y, nb, k).astype(p_link.dtype)

    return jax.lax.cond(lam == 0.0, lambda p: p, mixed, p_link)


def predict(model: Model, X=None, *, neighbors=None) -> np.ndarray:
    """Labels (n,) (argmax of H, ties → first class), or (n, C) 0/1 indicators
    for multilabel models (H_c > 0): NumPy arrays, or under ``jax.jit`` a JAX
    array (numeric labels only; a clear TypeError otherwise).  ``neighbors``:
    the query points' training neighbours, as for :func:`decision_function`."""
    model = _check_model(model)
    alpha, Y, nb, k, n = _query_parts(model, X, neighbors)
    H = _scores(alpha, Y, nb, k)
    if isinstance(H, jax.core.Tracer):  # under jax.jit / vmap: a traced array, not NumPy
        return _traced_predict(model, H[:n])  # a traced model with concrete queries: rows were padded
    H = np.asarray(H)[:n]  # the padding dropped on the host: nothing compiles per n
    return _labels(model, H)


def host_scores(model: Model, X) -> np.ndarray:
    """:func:`decision_function` as a NumPy array, the padding dropped on the
    host (no slice compiles per batch size); for callers that want NumPy."""
    model = _check_model(model)
    alpha, Y, nb, k, n = _query_parts(model, X, None)
    return np.asarray(_scores(alpha, Y, nb, k))[:n]


def host_proba(model: Model, X) -> np.ndarray:
    """:func:`predict_proba` as a NumPy array, as :func:`host_scores`."""
    (p,), n = _padded_proba(_check_model(model), X, None)
    return np.asarray(p)[:n]


def _labels(model: Model, H: np.ndarray) -> np.ndarray:
    """Labels (n,) or multilabel (n, C) indicators from NumPy scores H (n, C)."""
    if model.multilabel:
        return (H > 0).astype(np.int64)
    return np.asarray(model.classes)[np.argmax(H, axis=1)]


def _traced_predict(model: Model, H) -> jax.Array:
    """:func:`predict` inside ``jax.jit``: the labels as a JAX array (numeric
    or boolean labels only; indicators int32 for multilabel models)."""
    if model.multilabel:
        return (H > 0).astype(jnp.int32)
    classes = np.asarray(model.classes)
    if not (np.issubdtype(classes.dtype, np.number) or classes.dtype == bool):
        raise TypeError(
            f"predict under jax.jit needs numeric class labels, got dtype {classes.dtype}; "
            "take jnp.argmax(jaxnn.decision_function(model, X), axis=1) for class indices "
            "into model.classes instead"
        )
    held = jax.dtypes.canonicalize_dtype(classes.dtype)  # int64 → int32 etc. without x64
    with np.errstate(over="ignore", invalid="ignore"):
        as_held = classes.astype(held)
    if held != classes.dtype and not np.array_equal(as_held.astype(classes.dtype), classes):
        raise TypeError(
            f"predict under jax.jit answers in JAX's {held}, which cannot hold every class label "
            f"({classes.dtype} labels {classes.tolist()} would come back as {as_held.tolist()}); "
            "enable x64, predict outside jax.jit, or take jnp.argmax(jaxnn.decision_function(model, X), axis=1) "
            "for class indices into model.classes"
        )
    return jnp.asarray(as_held)[jnp.argmax(H, axis=1)]
