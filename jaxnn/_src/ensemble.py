"""Divide and conquer: one leveraged k-NN per block of features.

Paper 000 §6.4 (GNNB) and paper 002 §6.2 (N³): to fight the curse of
dimensionality on long descriptors, (i) split the d features into n blocks
("sub-descriptors") and normalise each block of each example (L1 or L2),
(ii) learn one leveraged k-NN per block and read its class posteriors off the
matching link p̂ = ``loss.posterior(H)``, (iii) combine the n posteriors with a
generalised mean M_f(p_1, …, p_n) = f⁻¹((1/n) Σ_b f(p_b)):

==============  ===========  =====================================
``mean``        f(p)         M_f
==============  ===========  =====================================
"arithmetic"    p            (1/n) Σ p_b            (paper 000)
"geometric"     log p        (Π p_b)^{1/n}
"harmonic"      1/p          n / Σ 1/p_b            (paper 002 Fig. 1)
a number q ≠ 0  p^q          ((1/n) Σ p_b^q)^{1/q}  (power mean; q = 0
                                                      is the geometric)
==============  ===========  =====================================

Layout (no Python loop of fits): the blocks are gathered into one
``(n, m, w)`` array, w the widest block, narrower blocks padded with zero
columns (a zero column changes no distance).  The n training graphs are one
vmapped blocked top-k; the n sequential boosting runs are :func:`boost` on
one block after another (``lax.map``; inverse neighbourhoods padded to a
common width P with the sentinel m, whose label row is 0 so padding
contributes nothing — vmapped, a step's switch over widths would run every
width up to P, far slower on graphs with hubs), the n colored schedules one
vmapped scan, and prediction is one vmapped query.  With ``n_splits=1`` the unbatched code of :func:`jaxnn.fit`
runs, so ``fit_split(X, y, n_splits=1, norm=None)`` *is* ``fit(X, y, posterior="link",
shrinkage=None)`` (the blocks keep boosting's α and read the link posteriors).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import algorithms as algos
from jaxnn._src import losses as losses_mod
from jaxnn._src import boost_runs, shared_sizes
from jaxnn._src.checks import check_bool
from jaxnn._src.leverage import unreached_leverage
from jaxnn._src.graph import knn_graph, padded_query
from jaxnn._src.inputs import as_points, compute_dtype, encode_labels
from jaxnn._src.model import HostPickled, Model, without_float64
from jaxnn._src.params import check
from jaxnn._src.plan import Plan, make_plan
from jaxnn._src.points import float32_origin, shift_points
from jaxnn._src.prediction import link_posterior, normalise_rows, leveraged_scores
from jaxnn._src.progress import logger
from jaxnn._src.search import block_rows, blocked_topk, conditioned_search, conditioning_on_host, search_kernel
from jaxnn._src.shared_sizes import first_rows, padded_rows, query_rows, shared_rows, to_device

__all__ = [
    "SplitModel",
    "fit_split",
    "decision_function_split",
    "predict_proba_split",
    "predict_split",
    "generalized_mean",
    "block_posteriors",
    "split_features",
    "MEANS",
    "NORMS",
    "check_mean",
    "check_norm",
]

MEANS = ("arithmetic", "geometric", "harmonic")
NORMS = ("l2", "l1", None)
_P_MIN = 1e-12
_P_TOL = 1e-6  # slack on [0, 1] for the probabilities given to generalized_mean
# Power means with |q| beyond these bounds are computed as their limits: for
# |q| < _Q_SMALL, |log M_q − log GM| ≤ |q| Var(log p) / 2 ≤ 1e-18 (log p ∈
# [log 1e-12, 0]); for |q| > _Q_LARGE, |log M_q − log max/min| ≤ log(n) / |q|.
_Q_SMALL, _Q_LARGE = 1e-20, 1e20
#: the graph methods of fit_split: the blocks' batched search has no "approx"
_GRAPH_METHODS = ("exact", "nndescent")
# keyword arguments of fit_split forwarded to the per-block boosting
_FIT_KEYS = ("k", "loss", "algorithm", "rounds", "chooser", "epsilon", "seed", "graph_method", "trace")


# --------------------------------------------------------------------------
# generalised means
# --------------------------------------------------------------------------


def check_mean(kind, name: str):
    """'arithmetic' | 'geometric' | 'harmonic' | a finite real power q."""
    if isinstance(kind, str):
        key = kind.strip().lower()
        if key not in MEANS:
            raise ValueError(f"unknown {name} {kind!r}; use one of {MEANS} or a real power q")
        return key
    if isinstance(kind, bool) or not isinstance(kind, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be one of {MEANS} or a real power q, got {kind!r}")
    q = float(kind)
    if not math.isfinite(q):
        raise ValueError(f"{name} power must be finite, got {kind!r}")
    return {1.0: "arithmetic", 0.0: "geometric", -1.0: "harmonic"}.get(q, q)


def _check_probabilities(P, axis):
    """P as a float JAX array with a valid, non-empty ``axis`` (returned as a
    non-negative int); concrete values must be finite and in [0, 1] (up to
    _P_TOL).  A traced P (under jit, e.g. from :func:`predict_proba_split`)
    has only its shape and dtype checked."""
    if P is None or isinstance(P, (str, bytes)):
        raise TypeError(f"P must be an array of probabilities, got {type(P).__name__}")
    if not isinstance(P, jax.Array):
        try:
            P = np.asarray(P)
        except ValueError as err:  # ragged nested sequences
            raise ValueError("P must be a rectangular array") from err
    if np.issubdtype(P.dtype, np.complexfloating):
        raise TypeError(f"P must be real, got dtype {P.dtype}")
    if not (np.issubdtype(P.dtype, np.number) or P.dtype == bool):
        raise TypeError(f"P must hold numbers, got dtype {P.dtype}")
    if P.ndim == 0:
        raise ValueError("P must have at least one axis to average over, got a scalar")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an integer, got {type(axis).__name__}")
    if not -P.ndim <= axis < P.ndim:
        raise ValueError(f"axis {axis} is out of range for P with {P.ndim} dimension(s)")
    axis = int(axis) % P.ndim
    if P.shape[axis] == 0:
        raise ValueError(f"P is empty along axis {axis} (shape {P.shape}): nothing to average")
    P = jnp.asarray(P)
    if not jnp.issubdtype(P.dtype, jnp.floating):
        P = P.astype(jnp.result_type(float))
    if not isinstance(P, jax.core.Tracer):
        if not bool(jnp.all(jnp.isfinite(P))):
            raise ValueError("P contains NaN or infinite values")
        if not bool(jnp.all((P >= -_P_TOL) & (P <= 1.0 + _P_TOL))):
            raise ValueError("P must hold probabilities in [0, 1]")
    return P, axis


def generalized_mean(P, kind="arithmetic", axis: int = 0) -> jax.Array:
    """Generalised (quasi-arithmetic) mean M_f = f⁻¹(mean f(p)) along ``axis``.

    Args:
      P: array of probabilities, finite and in [0, 1] (ValueError otherwise;
        a traced P under jit is not checked); values are clipped to [0, 1],
        and, for every mean but the arithmetic one over two or more entries,
        floored at 1e-12 (so a 0 does not zero the geometric, harmonic or a
        power mean: the other entries still rank the classes).
      kind: ``"arithmetic"`` (f = id), ``"geometric"`` (f = log),
        ``"harmonic"`` (f = 1/x), or a finite real number q: the power mean
        f = x^q (q = 1, 0, −1 are the three named means).  Power means are
        computed in log space, exp(log-mean-exp(q log p) / q), so they are
        accurate for every q: they tend to the geometric mean as q → 0 and
        to the max (q → +∞) or min (q → −∞).
      axis: the axis averaged over (removed from the result); it must be
        non-empty.

    Examples: for [0.2, 0.8] the arithmetic, geometric and harmonic means are
    0.5, 0.4 and 0.32.  A mean over a single entry returns it, clipped to
    [0, 1] only (not floored: one block's posteriors are its model's).
    """
    kind = check_mean(kind, "kind")
    P, axis = _check_probabilities(P, axis)
    P = jnp.clip(P, 0.0, 1.0)
    if P.shape[axis] == 1:
        return jnp.squeeze(P, axis=axis)
    if kind == "arithmetic":  # well defined with zeros: no floor
        return jnp.mean(P, axis=axis)
    P = jnp.maximum(P, _P_MIN)
    if kind == "harmonic":
        return 1.0 / jnp.mean(1.0 / P, axis=axis)
    L = jnp.log(P)
    if kind == "geometric" or abs(kind) < _Q_SMALL:
        return jnp.exp(jnp.mean(L, axis=axis))
    ref = jnp.max(L, axis=axis, keepdims=True) if kind > 0 else jnp.min(L, axis=axis, keepdims=True)
    if abs(kind) > _Q_LARGE:
        return jnp.exp(jnp.squeeze(ref, axis=axis))
    # log M_q = ref + log(mean(exp(q (L − ref)))) / q, with q (L − ref) ≤ 0 and
    # log(mean(exp(t))) = log1p(mean(expm1(t))): accurate also for small |q|
    t = kind * (L - ref)
    log_mean = jnp.log1p(jnp.mean(jnp.expm1(t), axis=axis))
    return jnp.exp(jnp.squeeze(ref, axis=axis) + log_mean / kind)


# --------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SplitModel(HostPickled):
    """n leveraged k-NN rules, one per block of features, combined by a mean.

    Attributes (arrays are stacked over the block axis, first):
      alpha: (n, m, C) leveraging coefficients of each block's rule.
      X: (n, m, w) the normalised training blocks, zero-padded to the widest
        block width w (block b uses its first ``len(blocks[b])`` columns).
      Y: (m, C) training labels in {−1, +1} (shared by all blocks).
      trace: (n, T) per-block surrogate risk after each step, or None.
      blocks: tuple of n tuples of feature indices (the columns of each block).
      norm: ``"l2"``, ``"l1"`` or None — per-example normalisation of a block.
      mean: how posteriors are combined (:func:`generalized_mean` ``kind``).
      n_features: d, the width of the inputs.
      classes, k, loss, algorithm, multilabel, rounds: as in :class:`jaxnn.Model`.
      origin: None, or (d,): with ``norm=None``, subtracted in float64 from
        float64 features far from 0 before the cast to float32, training and
        query points alike (as :attr:`jaxnn.Model.origin`; a norm is not
        translation invariant, so normalised blocks are left as they are).
    """

    alpha: jax.Array
    X: jax.Array
    Y: jax.Array
    trace: Optional[jax.Array]
    blocks: tuple
    norm: Optional[str]
    mean: Any
    n_features: int
    classes: tuple
    k: int
    loss: Any
    algorithm: Any
    multilabel: bool
    rounds: int = 0
    origin: Optional[jax.Array] = None

    @property
    def n_splits(self) -> int:
        return len(self.blocks)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def boundaries(self) -> Optional[tuple]:
        """(n + 1,) start/stop columns when the blocks are contiguous and in
        order (block b = columns boundaries[b]:boundaries[b+1]), else None."""
        bounds = [self.blocks[0][0]]
        for block in self.blocks:
            if block[0] != bounds[-1] or tuple(block) != tuple(range(block[0], block[0] + len(block))):
                return None
            bounds.append(block[0] + len(block))
        return tuple(bounds)

    @property
    def models(self) -> tuple:
        """The per-block :class:`jaxnn.Model` s: their ``X`` is the normalised
        block, unpadded, and ``posterior_mix=0`` — :func:`jaxnn.predict_proba`
        gives their link posteriors with rows normalised, as for any
        single-label model, where :func:`block_posteriors` gives them raw.
        ``jaxnn.predict(model.models[b], block_b)`` works on blocks prepared
        by :func:`split_features` (already shifted by ``origin``: the block
        models have none)."""
        out = []
        for b, block in enumerate(self.blocks):
            trace = None if self.trace is None else self.trace[b]
            out.append(
                Model(
                    self.alpha[b], self.X[b][:, : len(block)], self.Y, trace, self.classes, self.k,
                    self.loss, self.algorithm, self.multilabel, posterior_mix=0.0, rounds=self.rounds,
                )
            )
        return tuple(out)


jax.tree_util.register_dataclass(
    SplitModel,
    data_fields=["alpha", "X", "Y", "trace", "origin"],
    meta_fields=["blocks", "norm", "mean", "n_features", "classes", "k", "loss", "algorithm", "multilabel", "rounds"],
)


# --------------------------------------------------------------------------
# blocks and normalisation
# --------------------------------------------------------------------------


def _make_blocks(n_splits, blocks, d: int) -> tuple:
    if n_splits is not None and (isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer))):
        raise TypeError(f"n_splits must be an integer, got {type(n_splits).__name__}")
    if blocks is None:
        if n_splits is None:
            raise TypeError("fit_split needs n_splits (or explicit blocks)")
        n = int(n_splits)
        if not 1 <= n <= d:
            raise ValueError(f"n_splits must lie in [1, d] = [1, {d}] (d = number of features), got {n_splits}")
        return tuple(tuple(int(i) for i in part) for part in np.array_split(np.arange(d), n))
    if isinstance(blocks, (str, bytes)) or not isinstance(blocks, Sequence) and not isinstance(blocks, np.ndarray):
        raise TypeError(f"blocks must be a sequence of sequences of feature indices, got {type(blocks).__name__}")
    out = []
    for b, part in enumerate(blocks):
        idx = np.asarray(part)
        if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
            raise ValueError(f"blocks[{b}] must be a non-empty 1-D sequence of integer feature indices, got {part!r}")
        if idx.min() < 0 or idx.max() >= d:
            raise ValueError(f"blocks[{b}] holds feature indices outside [0, {d})")
        if np.unique(idx).size != idx.size:
            raise ValueError(f"blocks[{b}] repeats a feature index")
        out.append(tuple(int(i) for i in idx))
    if not out:
        raise ValueError("blocks is empty: give at least one block of features")
    if n_splits is not None and n_splits != len(out):
        raise ValueError(f"n_splits={n_splits} disagrees with the {len(out)} blocks given")
    return tuple(out)


def check_norm(norm):
    """'l2' | 'l1' | None (any case, spaces stripped); a ValueError otherwise."""
    if norm is None:
        return None
    if isinstance(norm, str) and norm.strip().lower() in ("l1", "l2"):
        return norm.strip().lower()
    raise ValueError(f"unknown norm {norm!r}; use 'l2', 'l1' or None")


def _block_index(blocks: tuple, d: int) -> np.ndarray:
    """(n, w) column indices, padded with d (an all-zero column)."""
    w = max(len(b) for b in blocks)
    index = np.full((len(blocks), w), d, dtype=np.int64)
    for b, block in enumerate(blocks):
        index[b, : len(block)] = block
    return index


def _stack_blocks(Xa: np.ndarray, blocks: tuple, norm, dtype) -> jax.Array:
    """(m, d) → (n, m, w) normalised, zero-padded blocks, in ``dtype``."""
    m, d = Xa.shape
    index = _block_index(blocks, d)
    if len(blocks) == 1 and norm is None and index.shape[1] == d and np.array_equal(index[0], np.arange(d)):
        return to_device(np.asarray(Xa)[None], dtype)  # exactly fit()'s X
    work = np.float64 if dtype == jnp.float64 else np.float32  # host copy in the compute precision
    Xp = np.concatenate([Xa.astype(work, copy=False), np.zeros((m, 1), work)], axis=1)
    B = np.transpose(Xp[:, index], (1, 0, 2))  # (n, m, w)
    if norm is not None:
        size = np.sum(np.abs(B), axis=2, keepdims=True) if norm == "l1" else np.sqrt(np.sum(B * B, axis=2, keepdims=True))
        B = np.where(size > 0, B / np.where(size > 0, size, 1.0), 0.0)
    return to_device(B, dtype)  # device_put: nothing compiles per shape


def _warn_one_feature_blocks(blocks: tuple, norm) -> None:
    """Warn (``jaxnn`` logger) when a norm scales blocks of exactly one
    feature: x / |x| is the sign of x (−1, 0 or +1), so such a block keeps
    only each feature's sign, whatever the data."""
    if norm is None:
        return
    single = [b for b, block in enumerate(blocks) if len(block) == 1]
    if not single:
        return
    logger.warning(
        "fit_split: %d of %d blocks hold a single feature, which norm=%r reduces to its sign (-1, 0 or +1), "
        "discarding its magnitude; pass norm=None to keep the values, or use wider blocks (a smaller n_splits, "
        "or blocks=... with at least two features per block)",
        len(single), len(blocks), norm,
    )


def _warn_constant_blocks(Xs: np.ndarray, blocks: tuple, norm) -> None:
    """Warn (``jaxnn`` logger) about blocks that are the same for every training
    point once normalised, Xs (n, m, w): all their distances tie, so their
    neighbours are arbitrary and their posterior is one fixed vector that
    pulls every combined prediction toward the same classes."""
    constant = np.flatnonzero(np.all(Xs == Xs[:, :1, :], axis=(1, 2)))  # on the host: nothing compiles per m
    if constant.size == 0:
        return
    shown = ", ".join(f"{b} (features {', '.join(map(str, blocks[b][:4]))}{', ...' if len(blocks[b]) > 4 else ''})"
                      for b in constant[:5]) + (f" and {constant.size - 5} more" if constant.size > 5 else "")
    if norm is not None and any(len(blocks[b]) == 1 for b in constant):
        hint = f"a one-feature block keeps only its sign under norm={norm!r}: use norm=None or wider blocks"
    else:
        hint = "leave those features out (blocks=...)"
    logger.warning(
        "fit_split: %d of %d blocks are the same for every training point%s: %s. Their neighbours are "
        "arbitrary ties and their posteriors fixed vectors, which bias the combined prediction; %s",
        constant.size, len(blocks), " after normalisation" if norm is not None else "", shown, hint,
    )


def split_features(model: SplitModel, X) -> jax.Array:
    """The normalised, zero-padded blocks of X as the model sees them: (n, rows, w)."""
    return _query_blocks(model, X, pad=False)[0]


def _query_blocks(model: SplitModel, X, *, pad: bool):
    """(:func:`split_features` of X, its rows n); with ``pad``, X's rows are
    first padded with zero rows to :func:`shared_sizes.query_rows` (batches of nearby
    sizes share the compiled search and scoring; rows from n on are dropped
    by the callers)."""
    model = _check_split_model(model)
    Xq = as_points(X)
    if isinstance(Xq, jax.core.Tracer):
        raise TypeError("the split model's query blocks are built with NumPy on the host, so its query points "
                        "cannot be traced: call split_features, predict_split, predict_proba_split and "
                        "block_posteriors outside jax.jit, or close over concrete (NumPy) query points")
    if Xq.shape[1] != model.n_features:
        raise ValueError(f"X has {Xq.shape[1]} features but the model was fit on {model.n_features}")
    n = Xq.shape[0]
    Xq = shift_points(Xq, model.origin)
    if pad:
        Xq = padded_rows(Xq, query_rows(n))
    return _stack_blocks(Xq, model.blocks, model.norm, model.X.dtype), n


# --------------------------------------------------------------------------
# batched kernels
# --------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("k", "block", "exclude_self"))
def _topk_blocks(Q, X, k: int, block: int, exclude_self: bool):
    """vmap of the blocked exact top-k over the leading block axis."""
    return jax.vmap(lambda q, x: blocked_topk(q, x, k, block, exclude_self))(Q, X)


def _padded_blocks_search(Q, X, n_valid, transform, k: int, block: int, exclude_self: bool):
    """(n, rows_Q, k) indices of each query block's k nearest training
    points, vmapped over the n blocks (traced by the caller's program): X
    (n, rows, w) conditioned on the host (:func:`_conditioned_blocks`), its
    rows from n_valid on padding (never a neighbour), ``transform`` their
    stacked (e0, shift, s, e); Q (n, rows_Q, w) the query blocks as they are
    (query row r is training point r when ``exclude_self``)."""
    kernel = search_kernel(X.shape[1], X.shape[2], k, dtype=X.dtype)

    def one(q, x, t):
        return conditioned_search(q, x, n_valid, t, kernel=kernel, k=k, block=block, exclude_self=exclude_self,
                                   recall_target=None)[0]

    return jax.vmap(one)(Q, X, transform)


@functools.partial(jax.jit, static_argnames=("k", "block"))
def _topk_blocks_padded(Q, X, n_valid, transform, *, k: int, block: int):
    """(n, rows, k) indices: the search of :func:`_block_graphs`, each of the
    n blocks' rows Q among its own (:func:`_padded_blocks_search`)."""
    return _padded_blocks_search(Q, X, n_valid, transform, k, block, exclude_self=True)


def _block_graphs(Xs, k: int) -> np.ndarray:
    """(n, m, k) exact k-NN graphs (self excluded, nearest first) of the n
    blocks Xs (n, m, w), one vmapped search.  Blocks of at most
    :data:`shared_sizes.SHARED_MAX_ROWS` points are conditioned on the host
    and padded to :func:`shared_sizes.shared_rows` (m) rows (the padding
    never a neighbour), as :func:`jaxnn.knn_graph` searches one set, so that
    cross-validation folds of nearby sizes share one compiled search (5
    folds of 402–403 points compiled it twice).  Unlike ``knn_graph`` it
    finds exactly k neighbours, not :func:`shared_sizes.shared_k` (k): the
    wider search would slow every warm ``fit_split`` and its prediction, for
    ks that are seldom searched over."""
    n, m, _ = Xs.shape
    if m > shared_sizes.SHARED_MAX_ROWS:
        return np.asarray(_topk_blocks(Xs, Xs, k, _rows_per_tile(m, n), True)[0])
    rows = shared_rows(m)
    host = np.asarray(Xs)  # one copy to the host (none on a CPU)
    X, transform = _conditioned_blocks(host, rows)
    Q = to_device(padded_rows(host.transpose(1, 0, 2), rows).transpose(1, 0, 2))
    idx = _topk_blocks_padded(Q, X, to_device(m, np.int32), transform, k=k, block=_rows_per_tile(rows, n))
    return np.asarray(idx)[:, :m]


@functools.partial(jax.jit, static_argnames=("k", "block"))
def _scores_blocks(alpha, Y, X, Q, k: int, block: int):
    """(n, rows, C) per-block scores of the (n, rows, w) query blocks Q."""
    idx, _ = jax.vmap(lambda q, x: blocked_topk(q, x, k, block, False))(Q, X)
    return jax.vmap(leveraged_scores, in_axes=(0, None, 0))(alpha, Y, idx)


@functools.partial(jax.jit, static_argnames=("k", "block"))
def _scores_blocks_padded(alpha, Y, X, Q, n_valid, transform, *, k: int, block: int):
    """:func:`_scores_blocks` on a model's blocks padded to shared sizes:
    alpha (n, rows, C) and Y (rows, C) with zero rows from n_valid on, X
    (n, rows, w) conditioned on the host with its ``transform`` (as in
    :func:`_padded_blocks_search`)."""
    idx = _padded_blocks_search(Q, X, n_valid, transform, k, block, exclude_self=False)
    return jax.vmap(leveraged_scores, in_axes=(0, None, 0))(alpha, Y, idx)


def _conditioned_blocks(Xs, rows: int):
    """(the n blocks Xs (n, m, w) conditioned on the host
    (:func:`search.conditioning_on_host`) and padded to ``rows`` rows, on
    the device; their (e0, shift, s, e) stacked)."""
    host = np.asarray(Xs)
    parts = [conditioning_on_host(host[b]) for b in range(host.shape[0])]
    X = to_device(np.stack([padded_rows(x, rows) for x, _ in parts]))
    e0, shift, s, e = (np.stack([np.asarray(t[i]) for _, t in parts]) for i in range(4))
    return X, (to_device(e0, np.int32), to_device(shift), to_device(s), to_device(e, np.int32))


def _floored(kind, n_splits: int) -> bool:
    """Whether :func:`generalized_mean` floors the posteriors at _P_MIN."""
    return n_splits > 1 and kind != "arithmetic"


@functools.partial(jax.jit, static_argnames=("loss", "algorithm", "multilabel", "kind", "normalize"))
def _combine(H, *, loss, algorithm, multilabel: bool, kind, normalize: bool):
    """Per-block scores (n, rows, C) → combined posteriors (rows, C); rows
    normalised as :func:`jaxnn.predict_proba`'s (all-underflowed rows: the
    mass on the classes of largest Σ_b H^b; NaN propagates).  With one block
    this is the block model's :func:`jaxnn.predict_proba` exactly."""
    raw = link_posterior(loss, algorithm, multilabel, H)
    p = generalized_mean(raw, kind, axis=0)
    if not normalize:
        return p
    if _floored(kind, H.shape[0]):
        # every posterior at or below the floor: the floored mean is one value
        # for all classes; the row counts as underflowed (0), as it would unfloored
        empty = jnp.all(raw <= _P_MIN, axis=(0, 2))
        p = jnp.where(empty[:, None], 0.0, p)
    return normalise_rows(p, jnp.sum(H, axis=0))


@functools.partial(jax.jit, static_argnames=("loss", "algorithm", "multilabel", "kind"))
def _split_labels(H, *, loss, algorithm, multilabel: bool, kind):
    """Per-block scores (n, rows, C) → :func:`predict_split`'s class indices
    (rows,), or multilabel (rows, C) 0/1 indicators: the combined posterior
    decides, and where it ties (posteriors saturated at 1, underflowed to 0,
    or floored) the summed scores S = Σ_b H^b do.  With one block, links
    being non-decreasing in H, this is argmax H (ties → first class) and
    H > 0: :func:`jaxnn.predict` exactly."""
    p = generalized_mean(link_posterior(loss, algorithm, multilabel, H), kind, axis=0)
    S = jnp.sum(H, axis=0)
    if multilabel:
        return ((p > 0.5) | ((p == 0.5) & (S > 0))).astype(jnp.int32)
    top = p == jnp.max(p, axis=1, keepdims=True)
    i = jnp.argmax(jnp.where(top, S, -jnp.inf), axis=1)
    ok = jnp.take_along_axis(top, i[:, None], axis=1)[:, 0]
    # a tied class of S = −inf (or a NaN row, no class on top): the first class of largest p
    return jnp.where(ok, i, jnp.argmax(p, axis=1))


def _rows_per_tile(m: int, n: int) -> int:
    # keep n vmapped (rows × m) distance tiles within one default tile's budget
    return max(1, block_rows(m, None) // n)


# --------------------------------------------------------------------------
# fit / predict
# --------------------------------------------------------------------------


def fit_split(
    X,
    y,
    *,
    n_splits: Optional[int] = None,
    blocks=None,
    norm: Optional[str] = "l2",
    mean="geometric",
    **fit_kwargs,
) -> SplitModel:
    """Divide and conquer: one leveraged k-NN per block of features.

    Args:
      X: (m, d) training points.  y: labels or an indicator matrix, as in
        :func:`jaxnn.fit`.
      n_splits: n, the number of contiguous blocks, 1 ≤ n ≤ d; block widths
        differ by at most one (``numpy.array_split``).
      blocks: instead of ``n_splits``, explicit blocks: a sequence of
        sequences of feature indices (any order; blocks may overlap).
      norm: ``"l2"`` (default), ``"l1"`` or None: each block of each example
        is scaled to unit norm (an all-zero block stays zero).  A block of
        one feature then keeps only that feature's sign (a warning on the
        ``jaxnn`` logger says so): with one-feature blocks (e.g.
        ``n_splits=d``) use ``norm=None`` or wider blocks.
      mean: how :func:`predict_proba_split` combines the per-block
        posteriors: ``"geometric"`` (default), ``"arithmetic"``,
        ``"harmonic"`` or a power q (see :func:`generalized_mean`).
      **fit_kwargs: passed on as in :func:`jaxnn.fit`: ``k``, ``loss``,
        ``algorithm``, ``rounds``, ``chooser``, ``epsilon``, ``seed``,
        ``graph_method`` (``"exact"`` or ``"nndescent"``), ``trace``.  Every block gets the same settings;
        ``chooser="colored"`` runs each block's own colouring of its own
        graph (all blocks in one vmapped scan, their schedules padded to a
        common number of steps: a block's trace repeats its risk at padding
        steps), and ``"auto"`` picks as :func:`jaxnn.fit` does
        (:func:`jaxnn.auto_chooser`).  Precomputed
        ``neighbors`` are not supported, nor ``"auto"`` k/loss/rounds, nor
        ``posterior``: per-block posteriors are the raw link,
        ``loss.posterior(H)`` (single-label N³: the link of its initial
        edges, as :func:`jaxnn.predict_proba`).

    Returns:
      A :class:`SplitModel`.  With ``n_splits=1, norm=None`` its only block
      model equals ``jaxnn.fit(X, y, posterior="link", shrinkage=None, **fit_kwargs)``
      exactly (α, X, Y, trace, scores, labels).
    """
    unknown = sorted(set(fit_kwargs) - set(_FIT_KEYS))
    if unknown:
        hint = " (precomputed neighbours are per block: not supported)" if "neighbors" in unknown else ""
        raise TypeError(f"fit_split got unexpected keyword argument(s) {unknown}{hint}; accepted: {_FIT_KEYS}")
    opts = dict(k=10, loss="logistic", algorithm="gnnb", rounds=None, chooser="auto", epsilon=0.5, seed=0, graph_method="exact", trace=False)
    opts.update(fit_kwargs)

    Xa = as_points(X)
    m, d = Xa.shape
    classes, Y_np, multilabel = encode_labels(y, m)
    block_list = _make_blocks(n_splits, blocks, d)
    norm = check_norm(norm)
    mean = check_mean(mean, "mean")

    # the settings jaxnn._src.params declares, as jaxnn.fit reads them
    k = check("k", opts["k"], below=m)
    loss_obj = losses_mod.get(opts["loss"])
    epsilon = check("epsilon", opts["epsilon"])
    algo = algos.get(opts["algorithm"], epsilon=epsilon)
    algo.check(loss_obj)
    rounds = m if opts["rounds"] is None else check("rounds", opts["rounds"])
    plan = make_plan(m, Y_np.shape[1], rounds, check("chooser", opts["chooser"]), blocks=len(block_list))
    seed = check("seed", opts["seed"])
    graph_method = check("graph_method", opts["graph_method"], among=_GRAPH_METHODS, where=" for fit_split")
    trace = check("trace", opts["trace"])

    dtype = compute_dtype(Xa)
    _warn_one_feature_blocks(block_list, norm)
    # without a norm, float64 features far from 0 are centred before float32 (distances are unchanged)
    origin = float32_origin(Xa) if norm is None else None  # under x64 too, as fit
    Xs = _stack_blocks(shift_points(Xa, origin), block_list, norm, dtype)  # (n, m, w)
    _warn_constant_blocks(np.asarray(Xs), block_list, norm)
    res = _boost_split(Xs, Y_np, dtype, plan, k=k, algo=algo, loss=loss_obj, rounds=rounds, seed=seed,
                       graph_method=graph_method, trace=trace)
    Y = to_device(Y_np, dtype)  # cast on the host: nothing compiles per m
    return SplitModel(res.alpha, Xs, Y, res.trace, block_list, norm, mean, d, classes, k, loss_obj, algo, multilabel, rounds,
                      None if origin is None else jnp.asarray(origin, dtype))


def _boost_split(Xs, Y_np, dtype, plan: Plan, *, k, algo, loss, rounds, seed, graph_method, trace):
    """Graphs and boosting of the n blocks Xs (n, m, w), labels Y_np (m, C)
    ±1 on the host, as ``plan`` says (:func:`boost_runs.run_blocks`): a
    BoostResult whose alpha (n, m, C) and trace (n, T) carry the block axis
    first.  One block's graph is :func:`jaxnn.knn_graph`'s, as ``fit``
    searches it; several blocks' exact graphs are one vmapped search."""
    n = Xs.shape[0]
    if n == 1:
        nbrs = np.asarray(knn_graph(Xs[0], k, method=graph_method, seed=seed).indices)[None]
    elif graph_method == "exact":
        nbrs = _block_graphs(Xs, k)
    else:
        nbrs = np.stack([np.asarray(knn_graph(Xs[b], k, method=graph_method, seed=seed).indices) for b in range(n)])
    res = boost_runs.run_blocks(plan, Y_np, nbrs, dtype, algorithm=algo, loss=loss, rounds=rounds, seed=seed,
                                trace=trace)
    # each block's unreached examples take their class-sign leverage, as fit's do
    return res._replace(alpha=jnp.stack([unreached_leverage(res.alpha[b], Y_np, nbrs[b]) for b in range(n)]))


def _check_split_model(model) -> SplitModel:
    if not isinstance(model, SplitModel):
        raise TypeError(f"expected a jaxnn SplitModel (from fit_split), got {type(model).__name__}")
    return without_float64(model)


def decision_function_split(model: SplitModel, X) -> jax.Array:
    """Per-block scores H^b_c(x) = Σ_{j∈NN_k^b(x)} α^b_jc y_jc: (n_splits, rows, C)."""
    H, n = _padded_split_scores(model, X)
    return first_rows((H,), n, axis=1)[0]


def _padded_split_scores(model: SplitModel, X):
    """(:func:`decision_function_split` on X's rows padded to
    :func:`shared_sizes.query_rows`, the real rows n)."""
    model = _check_split_model(model)
    Q, n = _query_blocks(model, X, pad=True)
    n_splits, m = model.n_splits, model.X.shape[1]
    if n_splits == 1:  # as jaxnn.decision_function
        idx, _, _ = padded_query(model.X[0], Q[0], model.k)
        return leveraged_scores(model.alpha[0], model.Y, idx)[None], n
    if m > shared_sizes.SHARED_MAX_ROWS or any(isinstance(a, jax.core.Tracer) for a in (model.X, model.alpha)):
        return _scores_blocks(model.alpha, model.Y, model.X, Q, model.k, _rows_per_tile(m, n_splits)), n
    # as the fit searched: the blocks conditioned on the host and padded (models of nearby sizes share the program)
    rows = shared_rows(m)
    X, transform = _conditioned_blocks(model.X, rows)
    alpha = to_device(padded_rows(np.asarray(model.alpha).transpose(1, 0, 2), rows).transpose(1, 0, 2))
    H = _scores_blocks_padded(alpha, padded_rows(model.Y, rows), X, Q, to_device(m, np.int32), transform, k=model.k,
                              block=_rows_per_tile(rows, n_splits))
    return H, n


def block_posteriors(model: SplitModel, X) -> jax.Array:
    """Raw one-vs-rest posteriors of each block, link(H^b) clipped to [0, 1]: (n, rows, C)
    (single-label N³: the link of its initial edges, as :func:`jaxnn.predict_proba`)."""
    model = _check_split_model(model)
    H, n = _padded_split_scores(model, X)
    p = _jitted_link_posterior(model.loss, model.algorithm, model.multilabel, H)
    return first_rows((p,), n, axis=1)[0]


_jitted_link_posterior = jax.jit(link_posterior, static_argnums=(0, 1, 2))


def predict_proba_split(model: SplitModel, X, *, mean=None, normalize: Optional[bool] = None) -> jax.Array:
    """Combined posteriors (rows, C): the generalised mean over blocks of the
    per-block posteriors link(H^b), then (single-label, ``normalize=True``,
    the default) rows normalised to sum to 1 (rows whose posteriors all
    underflow, or all sit at or below the floor of :func:`generalized_mean`,
    put their mass on the classes of largest Σ_b H^b, as
    :func:`jaxnn.predict_proba` on H); multilabel models return the
    combined one-vs-rest posteriors as they are.  With one block: the block
    model's :func:`jaxnn.predict_proba`.

    ``mean`` overrides the model's mean (no refit needed to compare means).
    ``normalize`` is None (the default above) or a bool.
    """
    model = _check_split_model(model)
    kind = model.mean if mean is None else check_mean(mean, "mean")
    normalize = not model.multilabel if normalize is None else check_bool(normalize, "normalize")
    p, n = _padded_combined(model, X, kind, normalize)
    return first_rows((p,), n)[0]


def _padded_combined(model: SplitModel, X, kind, normalize: bool):
    """(:func:`predict_proba_split`'s posteriors on the padded rows, n)."""
    H, n = _padded_split_scores(model, X)
    return _combine(H, loss=model.loss, algorithm=model.algorithm, multilabel=model.multilabel, kind=kind,
                    normalize=normalize), n


def predict_split(model: SplitModel, X, *, mean=None) -> np.ndarray:
    """Labels (rows,): argmax of the combined posteriors, ties (e.g. posteriors
    saturated at 1 or underflowed to 0) broken by the summed scores Σ_b H^b,
    then by the first class; multilabel: (rows, C) 0/1 indicators, combined
    posterior > 1/2 (= 1/2: Σ_b H^b > 0).  With one block: :func:`jaxnn.predict`."""
    model = _check_split_model(model)
    kind = model.mean if mean is None else check_mean(mean, "mean")
    H, n = _padded_split_scores(model, X)
    out = _split_labels(H, loss=model.loss, algorithm=model.algorithm, multilabel=model.multilabel, kind=kind)
    out = np.asarray(out)[:n]  # the padding dropped on the host: nothing compiles per n
    if model.multilabel:
        return out.astype(np.int64)
    return np.asarray(model.classes)[out]
