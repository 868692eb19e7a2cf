"""The default posteriors and what posterior="auto" fits them with: one
implementation of each formula, written over an array namespace ``xp`` so
that the same function runs traced in :mod:`jax.numpy` inside the rule's
compiled program (:func:`jaxnn._src.prediction._rule`) and in float64 NumPy on the
host, where the held-out choices are made (deterministic).

The posteriors (:func:`calibrated_posterior`): p̂ = (1 − ε)·softmax(Z) + ε/C
with logits Z = H/T + G and the predicted class's logit raised to the row's
largest (:func:`posterior_logits`, :func:`floored_softmax`); multilabel
(1 − ε)·σ(H_c/T) + ε/2 per label (:func:`floored_sigmoid`).  The kernel term
G = w·log(κ + δ), κ the distance-weighted vote of the k neighbours
(:func:`kernel_weights`, :func:`kernel_votes`, :func:`kernel_log_votes`).
The shrunk rule's scores (1 − s)·H + s·ā·V (:func:`shrunk_scores`).  T is the
temperature of least mean log loss on the held-out scores
(:func:`best_temperature`: a grid, then a finer one around its best), s the
shrinkage of least log loss of the shrunk rule's scores
(:func:`fit_shrinkage`), and the kernel term's weight w and bandwidth b of
least log loss (:func:`fit_kernel_term`).  Where the scores come from — the
auxiliary fits on held-out folds — is :func:`jaxnn._src.fitting.held_out_folds`'s.
tests/reference.py holds an independent float64 NumPy copy of the formulas.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src.inputs import label_rows
from jaxnn._src.params import check

__all__ = ["KERNEL_BANDWIDTHS", "KERNEL_FIT_ENTRIES", "KERNEL_VOTE_FLOOR", "KERNEL_WEIGHTS", "LOSS_BLOCK",
           "POSTERIOR_FLOOR", "SCREEN_MIN_ENTRIES", "SCREEN_RANGE", "SHRINKAGES", "T_COARSE", "T_GRID", "T_REFINE",
           "best_temperature", "calibrated_log_probs", "calibrated_posterior", "common_leverage", "fit_kernel_term",
           "fit_shrinkage", "fit_temperature", "floored_sigmoid", "floored_softmax", "kernel_log_votes",
           "kernel_votes", "kernel_weights", "log_losses", "posterior_logits", "posterior_scores", "screen_margin",
           "screened_losses", "shrinkages_of", "shrunk_scores", "targets"]

#: ε of the default (calibrated) posteriors p̂ = (1 − ε)·softmax(H/T) + ε/C
#: (multilabel: (1 − ε)·σ(H_c/T) + ε/2): every class keeps at least ε/C, so
#: that no default posterior is exactly 0 or 1 (a log loss of +inf where the
#: true class got 0), and a confident error costs at most log(C/ε); a correct
#: confident row pays −log(1 − ε(C − 1)/C) < 0.01.  Among 10⁻⁴ … 0.03 this ε
#: gave the least test log loss (docs/guide/posteriors.md).
POSTERIOR_FLOOR = 1e-2

#: δ of the kernel term w·log(κ_c + δ) of the default posteriors
#: (:func:`calibrated_posterior`): a class that none of the k neighbours is in
#: costs w·log δ, not −∞
KERNEL_VOTE_FLOOR = 1e-3


# --------------------------------------------------------------------------
# the formulas, over an array namespace xp (jax.numpy traced, or NumPy)
# --------------------------------------------------------------------------


def _class_axis(C: int, axis: int, ndim: int, xp):
    """The class indices 0 … C − 1 laid along ``axis`` of an ndim-D array."""
    axis = axis % ndim
    return xp.reshape(xp.arange(C), (C,) + (1,) * (ndim - 1 - axis))


def _fold(n: int, body, init, xp):
    """body(n − 1, … body(1, body(0, init))): ``lax.fori_loop`` traced, a
    Python loop in NumPy — the same order of operations either way."""
    if xp is np:
        for t in range(n):
            init = body(t, init)
        return init
    return jax.lax.fori_loop(0, n, body, init)


def posterior_logits(H, temperature, top=None, kernel_term=None, *, axis=-1, xp=jnp):
    """The logits Z = H/T + G of the default posteriors, from scores H (classes
    along ``axis``) at temperature T (a number, or an array broadcasting
    against H), with the ``kernel_term`` G (H's shape; None: 0) — then the
    logit of class ``top`` (H without its class axis, e.g. (n,)) raised to
    the row's largest.  H's dtype."""
    Z = H / xp.asarray(temperature, H.dtype)
    if kernel_term is None:
        return Z
    Z = Z + kernel_term
    is_top = _class_axis(Z.shape[axis], axis, Z.ndim, xp) == xp.expand_dims(top, axis)
    return xp.where(is_top, xp.max(Z, axis=axis, keepdims=True), Z)


def floored_softmax(Z, *, axis=-1, own=None, zero_max: bool = False, xp=jnp):
    """p̂ = (1 − ε)·softmax(Z) + ε/C along ``axis`` (C its length, ε =
    :data:`POSTERIOR_FLOOR`), softmax = e^{Z − max Z} / Σ e^{Z − max Z}: at
    every class, or only at one class a row, whose logits ``own`` (Z's
    dimensions, length 1 along ``axis``, broadcasting against Z) are given —
    then of length 1 along ``axis``.  ``zero_max``: Z's largest along
    ``axis`` is 0 already (no shift).  NaN in Z gives NaN.  In NumPy the
    sum adds the classes in order, whatever the other axes' sizes (NumPy's
    own sum adds a lone row pairwise): :func:`log_losses` at one temperature
    is the same number as on a whole grid."""
    eps = xp.asarray(POSTERIOR_FLOOR, Z.dtype)
    shift = 0.0 if zero_max else xp.max(Z, axis=axis, keepdims=True)
    E = xp.exp(Z if zero_max else Z - shift)
    total = _in_class_order(E, axis) if xp is np else xp.sum(E, axis=axis, keepdims=True)
    if own is not None:
        E = xp.exp(own if zero_max else own - shift)
    return (1 - eps) * (E / total) + eps / Z.shape[axis]


def _in_class_order(E: np.ndarray, axis: int) -> np.ndarray:
    """Σ of E along ``axis`` (kept, length 1), the classes added one after
    another."""
    rows = np.moveaxis(E, axis, 0)
    total = rows[0].copy()
    for row in rows[1:]:
        total += row
    return np.expand_dims(total, axis)


def floored_sigmoid(Z, *, xp=jnp):
    """p̂ = (1 − ε)·σ(Z) + ε/2 elementwise (ε = :data:`POSTERIOR_FLOOR`): the
    multilabel posteriors, above 1/2 exactly where Z > 0; σ is
    ``jax.nn.sigmoid`` traced, 1/(1 + e^{−Z}) (Z clipped to ±700) in NumPy."""
    eps = xp.asarray(POSTERIOR_FLOOR, Z.dtype)
    s = jax.nn.sigmoid(Z) if xp is jnp else 1.0 / (1.0 + np.exp(-np.clip(Z, -700, 700)))
    return (1 - eps) * s + eps / 2


def calibrated_posterior(H, temperature, top, multilabel: bool, kernel_term=None, *, xp=jnp):
    """The default posteriors from scores H (…, n, C): single-label
    p̂ = (1 − ε)·softmax(Z) + ε/C with ε = :data:`POSTERIOR_FLOOR` and
    logits Z = H/T + G, G the ``kernel_term`` (n, C) (w·log(κ + δ),
    :func:`kernel_log_votes`; None: 0), where the logit of ``top`` (n,) —
    :func:`jaxnn.predict`'s class — is raised to the row's largest
    (:func:`posterior_logits`, :func:`floored_softmax`), and an exact tie at
    a row's largest p̂ (equal logits, or too close to tell apart in the
    dtype) is broken toward ``top`` by moving the other tied classes one
    float step down, so that argmax p̂ is always ``predict``'s label (no
    ``top``: no tie broken, and no kernel term); multilabel
    p̂_c = (1 − ε)·σ(H_c/T) + ε/2 (:func:`floored_sigmoid`), above 1/2
    exactly where H_c > 0 (``predict``'s rule).  T a number, or an array
    broadcasting against H.  Strictly inside (0, 1); without a kernel term
    increasing in H_c within a row.  NaN in H gives NaN.  ``xp``: traced
    (``jax.numpy``, in the rule's program) or ``numpy`` (the host's float64)."""
    Z = posterior_logits(H, temperature, top, kernel_term, xp=xp)
    if multilabel:
        return floored_sigmoid(Z, xp=xp)
    p = floored_softmax(Z, xp=xp)
    if top is None:
        return p
    at = xp.broadcast_to(top[:, None], p.shape[:-1] + (1,))
    ptop = xp.take_along_axis(p, at, axis=-1)
    others = (p >= ptop) & (_class_axis(p.shape[-1], -1, p.ndim, xp) != top[:, None])
    return xp.where(others, xp.nextafter(ptop, xp.zeros_like(ptop)), p)


def _column_sum(A, xp):
    """Σ_t A[:, t] (n, 1), column by column in order: the columns beyond a
    row's k (zeros) change nothing, so that a search of more neighbours
    gives the same weights bit for bit."""
    return _fold(A.shape[1], lambda t, s: s + A[:, t, None], xp.zeros((A.shape[0], 1), A.dtype), xp)


def kernel_weights(D, bandwidth, k=None, *, xp=jnp):
    """The weights (n, k') of the distance-weighted vote κ of the default
    posteriors, from the squared distances D (n, k') of each query to its
    neighbours of which the first k (traced; None: all) count: with
    g_t = D_t − min_s D_s, K_t = exp(−g_t / (b·mean_s g_s)) for a relative
    bandwidth b > 0 (every K_t = 1 where all gaps are 0), normalised to sum
    to 1 over the k neighbours (0 beyond them), sums taken column by column
    in order.  The unit of each row's bandwidth is its own mean gap: the
    weights do not change when the points are translated, rotated or
    uniformly scaled.  D's dtype; NaN in D gives NaN."""
    D = xp.asarray(D)
    kk = D.shape[1]
    count = xp.asarray(kk if k is None else k, D.dtype)
    inside = xp.arange(kk)[None, :] < count
    gaps = D - xp.min(xp.where(inside, D, xp.inf), axis=1, keepdims=True)
    gaps = xp.where(inside, gaps, 0.0)
    scale = xp.asarray(bandwidth, D.dtype) * _column_sum(gaps, xp) / count
    K = xp.where(inside, xp.exp(-xp.where(scale > 0, gaps / xp.where(scale > 0, scale, 1.0), 0.0)), 0.0)
    return K / _column_sum(K, xp)


def kernel_votes(W, labels, *, xp=jnp):
    """κ_c(x) = Σ_t W_t [y_{j_t c} > 0] (n, C) for kernel weights W (n, k')
    (:func:`kernel_weights`), one neighbour column at a time: ``labels`` the
    neighbours' labels, an (n, k', C) bool array of y > 0, or a pair
    (Y, indices) of the training labels (m, C) and the (n, k') neighbour
    indices, gathered a column at a time (no (n, k', C) gather)."""
    if isinstance(labels, tuple):
        Y, indices = labels
        n_classes, column = Y.shape[1], (lambda t: Y[indices[:, t]] > 0)
    else:
        n_classes, column = labels.shape[2], (lambda t: labels[:, t])
    k0 = xp.zeros((W.shape[0], n_classes), W.dtype)
    return _fold(W.shape[1], lambda t, acc: acc + W[:, t, None] * column(t).astype(W.dtype), k0, xp)


def kernel_log_votes(D, labels, bandwidth, k=None, *, dtype=None, xp=np):
    """log(κ + δ) (n, C): κ the vote of the neighbours weighted by
    :func:`kernel_weights` at relative bandwidth b, from their squared
    distances D (n, k') of which the first k (None: all) count, and their
    ``labels`` (:func:`kernel_votes`); δ = :data:`KERNEL_VOTE_FLOOR`; κ in
    ``dtype`` (None: D's) before the log.  ``xp``: NumPy (the default: the
    host's held-out choice, D taken in float64) or ``jax.numpy`` (traced)."""
    if xp is np:
        D = np.asarray(D, np.float64)
    kappa = kernel_votes(kernel_weights(D, bandwidth, k, xp=xp), labels, xp=xp)
    if dtype is not None:
        kappa = kappa.astype(dtype)
    return xp.log(kappa + KERNEL_VOTE_FLOOR)


def shrunk_scores(H, V, shrinkage, common):
    """The scores (1 − s)·H + s·ā·V of the shrunk rule
    (:func:`jaxnn._src.leverage.shrunk_leverage` at s = ``shrinkage``, ā =
    ``common``), from a model's scores H (n, C) and the label sums V (n, C)
    of the same neighbours (the scores at α ≡ 1), in H's dtype."""
    return ((1.0 - shrinkage) * H + shrinkage * common * V).astype(H.dtype)


# --------------------------------------------------------------------------
# the held-out choices: NumPy, float64
# --------------------------------------------------------------------------


#: the temperatures posterior="auto" tries, as multiples of the RMS of the
#: scored H: 46 steps of 10^0.1 from 10⁻² to 10^2.5, then 11 steps of 10^0.01
#: around the best (a log loss flat to 0.1 % over one coarse step)
T_GRID = np.logspace(-2.0, 2.5, 46)
T_REFINE = np.logspace(-0.05, 0.05, 11)
#: the coarse grid that compares the kernel term's (w, b) pairs (:func:`fit_kernel_term`): 10^0.25 steps
T_COARSE = np.logspace(-2.0, 2.5, 19)


def targets(y, rows, classes, multilabel: bool) -> np.ndarray:
    """The 0/1 targets (len(rows), C) of ``rows`` of the labels y: one-hot
    over ``classes``, or the indicator matrix's positives (multilabel)."""
    y_arr = label_rows(y)[rows]
    if multilabel:
        return (y_arr > 0).astype(np.float64)
    return (y_arr[:, None] == np.asarray(classes)[None, :]).astype(np.float64)


def calibrated_log_probs(H, T, multilabel: bool, kernel_term=None, top=None):
    """log p̂ and log(1 − p̂) (both (..., n, C), float64) of
    :func:`calibrated_posterior` in float64 NumPy at temperature T (a
    number, or an array broadcasting against H (n, C), e.g. (t, 1, 1)),
    single-label with the ``kernel_term`` G (n, C) and the predicted
    classes ``top`` (n,)."""
    kernel_term = None if kernel_term is None else np.asarray(kernel_term, np.float64)
    top = None if top is None else np.asarray(top)
    p = calibrated_posterior(np.asarray(H, np.float64), T, top, multilabel, kernel_term, xp=np)
    return np.log(p), np.log1p(-p if multilabel else -np.minimum(p, 1.0))


#: the most float64 entries (temperatures × n × C) :func:`log_losses` holds at
#: once: 2 MiB, which a core's cache keeps between the steps of a block
LOSS_BLOCK = 1 << 18


def log_losses(H, target, Ts, multilabel: bool, weights=None, kernel_term=None, top=None, *,
               dtype=np.float64) -> np.ndarray:
    """Mean log loss (t,) of the calibrated posteriors on scores H (n, C) at
    each temperature of ``Ts`` (t,): −log p̂ of the true class (single-label),
    or the summed per-label binary log losses; the ``weights``-weighted mean
    when given; single-label, the ``kernel_term`` and ``top`` of
    :func:`calibrated_posterior`.  Temperatures in blocks of at most
    :data:`LOSS_BLOCK` entries.  Single-label targets are one-hot rows: only
    the true class's p̂ is formed (:func:`floored_softmax` of its logit), from H
    less its row maxima (without a kernel term the logits' maxima are then
    0), classes first ((C, t, n): the sums over classes add contiguous rows).

    ``dtype=np.float32`` (single-label): the same losses with the logits, less
    their row maxima in float64, exponentiated and summed in float32 — the
    screening pass of :func:`screened_losses`, within :func:`screen_margin`'s
    half of the float64 losses.
    """
    Ts = np.asarray(Ts, np.float64)
    rough = np.dtype(dtype) != np.float64
    if rough and multilabel:
        raise ValueError("log_losses screens single-label losses only")
    step = max(1, LOSS_BLOCK // max(1, H.size))
    if not multilabel:  # (C, 1, n), the true class's (1, 1, n)
        label = np.argmax(target, axis=1)[None, None, :]
        H = np.ascontiguousarray((H - H.max(axis=1, keepdims=True)).T)[:, None, :]
        if kernel_term is None:
            true = np.take_along_axis(H, label, axis=0)
            if rough:  # the shift made in float64: the float32 logits keep a relative error
                H, true = H.astype(dtype), true.astype(dtype)
        else:
            kernel_term = np.ascontiguousarray(np.asarray(kernel_term, np.float64).T)[:, None, :]
            top = np.asarray(top)
    out = []
    for lo in range(0, Ts.size, step):
        T = Ts[lo:lo + step, None]
        if multilabel:
            log_p, log_q = calibrated_log_probs(H, T[:, :, None], multilabel)
            per_row = np.sum(target * log_p + (1 - target) * log_q, axis=-1)
        else:
            zero_max = kernel_term is None
            if kernel_term is None:
                Z, own = posterior_logits(H, T, xp=np), posterior_logits(true, T, xp=np)
            else:
                Z = posterior_logits(H, T, top, kernel_term, axis=0, xp=np)
                own = np.take_along_axis(Z, label, axis=0)
                if rough:  # shifted in float64, then cast
                    shift = np.max(Z, axis=0, keepdims=True)
                    Z, own, zero_max = (Z - shift).astype(dtype), (own - shift).astype(dtype), True
            per_row = np.log(floored_softmax(Z, axis=0, own=own, zero_max=zero_max, xp=np)[0])  # (t, n)
        out.append(-np.average(per_row.astype(np.float64, copy=False), axis=-1, weights=weights))
    return np.concatenate(out)


#: :func:`screened_losses` screens grids of at least this many loss entries
#: (temperatures × rows × classes); on fewer the float64 losses alone are as quick
SCREEN_MIN_ENTRIES = 1 << 15


#: (least T, largest |H|) that :func:`screened_losses` screens: the float32
#: logits H/T then stay normal numbers (or, below 10⁻³⁰·T, too small to matter)
SCREEN_RANGE = (1e-30, 1e30)


def screen_margin(n_classes: int) -> float:
    """How far above the least float32 loss of a grid :func:`screened_losses`
    still computes the float64 loss: 2⁻²²·(3C + 64), twice a bound on the
    float32 losses' error.  With p̂ ≥ ε/C, float32 (unit roundoff u = 2⁻²⁴)
    errs in the sum of the C exponentials by at most u·(C − 1) (the
    additions), a few u each (the exponentials) and u·|Z_c|·3 in e^{Z_c}
    (the logits' rounding), which at most 3u/e of the sum a class, since the
    largest term is e⁰ = 1; in the true class's p̂ by u·3|Z| times its share
    of p̂ (at most u·3·(log(C/ε) + 1)); and −log p̂ by that plus log's
    rounding: about u·(2.1C + 4·log(C/ε) + 15) < u·(3C + 60) in all."""
    return 2.0 ** -22 * (3 * int(n_classes) + 64)


def screened_losses(H, target, Ts, multilabel: bool, weights=None, kernel_term=None, top=None) -> np.ndarray:
    """:func:`log_losses` (float64) at the temperatures ``Ts`` whose loss can be
    the least, +inf at the others — whose float64 loss is larger than the
    least: single-label, on a grid of at least :data:`SCREEN_MIN_ENTRIES`
    entries, a float32 pass (``dtype=np.float32``) screens every T, and
    float64 losses are computed where the float32 loss is within
    :func:`screen_margin` of the grid's least float32 loss, or not finite
    (every loss is computed for multilabel scores, small grids, and scores
    or temperatures outside :data:`SCREEN_RANGE`, where float32's range or
    its subnormal numbers would break the margin's bound).  Each float64
    loss is computed alone (the same number as on the whole grid), so the
    least and the first T that reaches it are :func:`log_losses`'s."""
    Ts = np.asarray(Ts, np.float64)
    exact = functools.partial(log_losses, H, target, multilabel=multilabel, weights=weights,
                              kernel_term=kernel_term, top=top)
    low, high = SCREEN_RANGE
    if (multilabel or H.size * Ts.size < SCREEN_MIN_ENTRIES or not Ts.size or not np.min(Ts) >= low
            or not np.max(np.abs(H), initial=0.0) <= high):
        return exact(Ts)
    rough = exact(Ts, dtype=np.float32)
    finite = np.isfinite(rough)
    if not finite.any():
        return exact(Ts)
    near = ~finite | (rough <= np.min(rough[finite]) + screen_margin(H.shape[1]))
    out = np.full(Ts.size, np.inf)
    out[near] = exact(Ts[near])
    return out


def fit_temperature(H, target, multilabel: bool, weights=None) -> float:
    """:func:`best_temperature`'s T."""
    return best_temperature(H, target, multilabel, weights)[0]


def best_temperature(H, target, multilabel: bool, weights=None, kernel_term=None, top=None,
                     coarse: bool = False) -> tuple:
    """(T, its loss): the T > 0 of least mean log loss (:func:`log_losses`) of the
    calibrated posteriors on scores H (n, C) and 0/1 targets (n, C) (with
    the ``kernel_term`` and ``top`` of :func:`calibrated_log_probs`): a grid
    of :data:`T_GRID` times the RMS of H, refined by :data:`T_REFINE`
    around its best (the smallest T on equal losses) — with ``coarse``
    :data:`T_COARSE` times the RMS of H, not refined; rows with a non-finite
    score are left out; ``weights`` (n,): the weighted mean log loss.  1.0
    where H is 0 everywhere (every T gives the uniform posterior) or no row
    is finite or of positive weight.  Each grid's losses by
    :func:`screened_losses` (a float32 pass first on large grids: the same T
    and loss).  NumPy, deterministic."""
    H = np.asarray(H, np.float64)
    keep = np.all(np.isfinite(H), axis=1)
    if kernel_term is not None:
        keep &= np.all(np.isfinite(kernel_term), axis=1)
    if weights is not None:
        keep &= np.asarray(weights) > 0
        weights = np.asarray(weights, np.float64)[keep]
    if kernel_term is not None:
        kernel_term, top = np.asarray(kernel_term, np.float64)[keep], np.asarray(top)[keep]
    H, target = H[keep], np.asarray(target, np.float64)[keep]
    scale = float(np.sqrt(np.mean(H ** 2))) if H.size else 0.0
    if not scale > 0:
        return 1.0, np.inf
    best_T, best = 0.0, np.inf
    for grid in ((scale * T_COARSE,) if coarse else (scale * T_GRID, None)):
        Ts = best_T * T_REFINE if grid is None else grid
        losses = np.nan_to_num(screened_losses(H, target, Ts, multilabel, weights, kernel_term, top), nan=np.inf)
        i = int(np.argmin(losses))  # the first of equal losses: the smallest T
        if losses[i] < best:
            best_T, best = float(Ts[i]), float(losses[i])
    return best_T, best


#: the leverage shrinkages s that posterior="auto" tries (:func:`fit_shrinkage`)
SHRINKAGES = np.linspace(0.0, 1.0, 11)


def shrinkages_of(shrinkage) -> tuple:
    """The shrinkages s a ``shrinkage`` setting tries: :data:`SHRINKAGES` for
    ``"auto"``, (0.0,) for None — else the ValueError of its declaration
    (:data:`jaxnn._src.params.PARAMS`)."""
    return (0.0,) if check("shrinkage", shrinkage) is None else tuple(SHRINKAGES)


def common_leverage(H, k: int) -> float:
    """ā, the leverage the shrunk rule moves every α toward: the RMS of the
    finite rows of scores H (n, C) over k, so that ā·V (V the label sums of
    k neighbours) is on H's scale; 1 where H is 0 everywhere."""
    H = np.asarray(H, np.float64)
    finite = np.all(np.isfinite(H), axis=1)
    scale = float(np.sqrt(np.mean(H[finite] ** 2))) if finite.any() else 0.0
    return scale / k if scale > 0 else 1.0


#: held-out scores (rows × classes) from which :func:`in_threads` spreads a grid over threads:
#: below, starting a pool and handing it the grid points costs more than they take
THREADED_MIN_ENTRIES = 1 << 14


def in_threads(fn, items, entries: int) -> list:
    """``[fn(x) for x in items]``, evaluated on up to one thread a core
    where each item works on ``entries`` ≥ :data:`THREADED_MIN_ENTRIES`
    held-out scores: the held-out choice's grid points are independent
    NumPy work, which releases the GIL on arrays of that size (the same
    numbers, in the same order, as the loop); on fewer, the loop."""
    items = list(items)
    workers = min(len(items), os.cpu_count() or 1) if entries >= THREADED_MIN_ENTRIES else 1
    if workers <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


def fit_shrinkage(H, V, k: int, target, multilabel: bool, weights=None, shrinkages=SHRINKAGES) -> tuple:
    """(T, s, ā) of least held-out log loss of the calibrated posteriors on
    the scores (1 − s)·H + s·ā·V of the shrunk rule (:func:`jaxnn._src.leverage.shrunk_leverage`):
    H (n, C) a model's held-out scores, V (n, C) the label sums
    Σ_{j∈NN_k(x)} y_jc of the same neighbours (the scores at α ≡ 1), ā the
    RMS of H over k (1 where H is 0 everywhere), so that ā·V is on H's scale;
    s over ``shrinkages``, the smallest on equal losses, and T by
    :func:`best_temperature` for each.  At small k boosting's leverages are
    estimated from one to three reciprocal neighbours each, and held-out
    data often prefer them shrunk (docs/guide/posteriors.md).  NumPy,
    deterministic (the shrinkages on threads: :func:`in_threads`)."""
    H, V = np.asarray(H, np.float64), np.asarray(V, np.float64)
    common = common_leverage(H, k)
    fits = in_threads(lambda s: best_temperature(shrunk_scores(H, V, s, common), target, multilabel, weights), shrinkages,
                      H.size)
    best = None
    for s, (T, loss) in zip(shrinkages, fits):
        if best is None or loss < best[0]:
            best = (loss, T, float(s))
    return best[1], best[2], common


def posterior_scores(p, target, multilabel: bool, weights=None) -> tuple:
    """(mean log loss, mean Brier score Σ_c (p̂_c − t_c)²) of posteriors p
    (n, C) against 0/1 targets, ``weights``-weighted when given: for the log line."""
    p = np.asarray(p, np.float64)
    if multilabel:
        logloss = -np.sum(target * np.log(p) + (1 - target) * np.log1p(-p), axis=1)
    else:
        logloss = -np.sum(target * np.log(p), axis=1)
    return (float(np.average(logloss, weights=weights)),
            float(np.average(np.sum((p - target) ** 2, axis=1), weights=weights)))


#: the weights w of the kernel term w·log(κ + δ) that posterior="auto" tries
#: beside w = 0 (:func:`fit_kernel_term`), for single-label models of three
#: or more classes
KERNEL_WEIGHTS = (0.25, 0.5, 1.0, 2.0, 4.0)
#: the relative bandwidths b of κ's weights that it tries (:func:`kernel_weights`)
KERNEL_BANDWIDTHS = (0.25, 1.0, 4.0)
#: at most this many held-out scores (rows × classes) choose (w, b) (the
#: first rows: the held-out points are in random order); T is then fit on all
KERNEL_FIT_ENTRIES = 25_000


def fit_kernel_term(S, top, D, neighbour_labels, target, weights=None) -> tuple:
    """(T, w, b): the weight w and bandwidth b of least held-out log loss of
    the calibrated posteriors with the kernel term G = w·log(κ + δ)
    (:func:`kernel_log_votes`) on scores S (n, C) whose predicted classes
    are ``top`` (n,) — w over 0 and :data:`KERNEL_WEIGHTS`, b over
    :data:`KERNEL_BANDWIDTHS`, each pair with its best T on the coarse grid
    (:func:`best_temperature` with ``coarse``), on the first rows,
    :data:`KERNEL_FIT_ENTRIES` scores — and T fit on all rows for that
    pair; (T, 0, 0) unless some w > 0 has a smaller loss than w = 0.
    Single-label.  NumPy, deterministic (the pairs on threads: :func:`in_threads`)."""
    part = slice(0, max(1, KERNEL_FIT_ENTRIES // S.shape[1]))
    Sp, topp, targetp = S[part], top[part], target[part]
    weightsp = None if weights is None else weights[part]
    best = (best_temperature(Sp, targetp, False, weightsp, coarse=True)[1], 0.0, 0.0)
    log_votes = {b: kernel_log_votes(D[part], neighbour_labels[part], b) for b in KERNEL_BANDWIDTHS}
    pairs = [(b, w) for b in KERNEL_BANDWIDTHS for w in KERNEL_WEIGHTS]
    losses = in_threads(lambda bw: best_temperature(Sp, targetp, False, weightsp, bw[1] * log_votes[bw[0]], topp,
                                                    coarse=True)[1], pairs, Sp.size)
    for (b, w), loss in zip(pairs, losses):
        if loss < best[0]:
            best = (loss, float(w), float(b))
    _, w, b = best
    if w == 0:
        return best_temperature(S, target, False, weights)[0], 0.0, 0.0
    return best_temperature(S, target, False, weights, w * kernel_log_votes(D, neighbour_labels, b), top)[0], w, b
