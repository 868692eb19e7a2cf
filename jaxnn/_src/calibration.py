"""Choosing the temperature T of the calibrated posteriors and the shrinkage
s of the leverages from scores at held-out points: NumPy, deterministic.

The posteriors are :func:`jaxnn._src.prediction.calibrated_posterior`'s,
p̂ = (1 − ε)·softmax(H/T + G) + ε/C with the predicted class's logit raised
to the row's largest (multilabel: (1 − ε)·σ(H_c/T) + ε/2 per label);
:func:`calibrated_log_probs` is their float64 NumPy twin.  T is the
temperature of least mean log loss on the held-out scores
(:func:`best_temperature`: a grid, then a finer one around its best), s
the shrinkage of least log loss of the shrunk rule's scores
(:func:`fit_shrinkage`), and the kernel term G = w·log(κ + δ) the weight w
and bandwidth b of least log loss (:func:`fit_kernel_term`).  Where the scores come from — the auxiliary fits
on held-out folds — is :func:`jaxnn._src.fitting.held_out_folds`'s.
"""

from __future__ import annotations

import numpy as np

from jaxnn._src.inputs import label_rows
from jaxnn._src.params import check
from jaxnn._src.prediction import KERNEL_VOTE_FLOOR, POSTERIOR_FLOOR

__all__ = ["KERNEL_BANDWIDTHS", "KERNEL_FIT_ENTRIES", "KERNEL_WEIGHTS", "LOSS_BLOCK", "SHRINKAGES", "T_COARSE", "T_GRID",
           "T_REFINE", "best_temperature",
           "calibrated_log_probs", "common_leverage", "fit_kernel_term", "fit_shrinkage", "fit_temperature",
           "kernel_log_votes", "log_losses", "posterior_scores", "shrinkages_of", "targets"]

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
    :func:`jaxnn._src.prediction.calibrated_posterior` at temperature T (a
    number, or an array broadcasting against H (n, C), e.g. (t, 1, 1)),
    single-label with the ``kernel_term`` G (n, C) added to the logits and
    the logit of the predicted class ``top`` (n,) raised to the row's largest."""
    eps = POSTERIOR_FLOOR
    Z = np.asarray(H, np.float64) / T
    if multilabel:
        s = 1.0 / (1.0 + np.exp(-np.clip(Z, -700, 700)))
        p = (1 - eps) * s + eps / 2
        return np.log(p), np.log1p(-p)
    if kernel_term is not None:
        Z = Z + np.asarray(kernel_term, np.float64)
        Z = np.where(np.arange(Z.shape[-1]) == np.asarray(top)[:, None], Z.max(axis=-1, keepdims=True), Z)
    Z = Z - Z.max(axis=-1, keepdims=True)
    E = np.exp(Z)
    p = (1 - eps) * E / E.sum(axis=-1, keepdims=True) + eps / H.shape[-1]
    return np.log(p), np.log1p(-np.minimum(p, 1.0))


#: the most float64 entries (temperatures × n × C) :func:`log_losses` holds at once
LOSS_BLOCK = 1 << 22


def log_losses(H, target, Ts, multilabel: bool, weights=None, kernel_term=None, top=None) -> np.ndarray:
    """Mean log loss (t,) of the calibrated posteriors on scores H (n, C) at
    each temperature of ``Ts`` (t,): −log p̂ of the true class (single-label),
    or the summed per-label binary log losses; the ``weights``-weighted mean
    when given; single-label, the ``kernel_term`` and ``top`` of
    :func:`calibrated_log_probs`.  Temperatures in blocks of at most :data:`LOSS_BLOCK`
    entries.  Single-label targets are one-hot rows: without a kernel term only the true class's
    p̂_y = (1 − ε)·e^{(H_y − max H)/T} / Σ_c e^{(H_c − max H)/T} + ε/C is
    formed."""
    Ts = np.asarray(Ts, np.float64)
    step = max(1, LOSS_BLOCK // max(1, H.size))
    if not multilabel:
        H = H - H.max(axis=1, keepdims=True)
        true = np.sum(target * H, axis=1)  # (n,) H_y − max H
        rows, label, eps = np.arange(H.shape[0]), np.argmax(target, axis=1), POSTERIOR_FLOOR
        if kernel_term is not None:
            kernel_term, top = np.asarray(kernel_term, np.float64), np.asarray(top)
            H_top, G_top = H[rows, top], kernel_term[rows, top]
            H_label, G_label = H[rows, label], kernel_term[rows, label]
    out = []
    for lo in range(0, Ts.size, step):
        T = Ts[lo:lo + step, None]
        if multilabel:
            log_p, log_q = calibrated_log_probs(H, T[:, :, None], multilabel)
            per_row = np.sum(target * log_p + (1 - target) * log_q, axis=-1)
        elif kernel_term is not None:  # calibrated_log_probs' logits, classes first (fast reductions)
            Z = H.T[:, None, :] / T[None] + kernel_term.T[:, None, :]  # (C, t, n)
            zmax = Z.max(axis=0)  # (t, n): the raised logit of top
            total = np.exp(Z - zmax).sum(axis=0) - np.exp(H_top / T + G_top - zmax) + 1.0
            own = np.where(label == top, 1.0, np.exp(H_label / T + G_label - zmax))
            per_row = np.log((1 - eps) * own / total + eps / H.shape[1])
        else:
            total = np.exp(H / T[:, :, None]).sum(axis=-1)  # (t, n)
            per_row = np.log((1 - eps) * np.exp(true / T) / total + eps / H.shape[1])
        out.append(-np.average(per_row, axis=-1, weights=weights))
    return np.concatenate(out)


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
    is finite or of positive weight.  NumPy, deterministic."""
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
        losses = np.nan_to_num(log_losses(H, target, Ts, multilabel, weights, kernel_term, top), nan=np.inf)
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
    deterministic."""
    H, V = np.asarray(H, np.float64), np.asarray(V, np.float64)
    common = common_leverage(H, k)
    best = None
    for s in shrinkages:
        T, loss = best_temperature((1.0 - s) * H + s * common * V, target, multilabel, weights)
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
#: the relative bandwidths b of κ's weights that it tries (:func:`jaxnn._src.prediction.kernel_weights`)
KERNEL_BANDWIDTHS = (0.25, 1.0, 4.0)
#: at most this many held-out scores (rows × classes) choose (w, b) (the
#: first rows: the held-out points are in random order); T is then fit on all
KERNEL_FIT_ENTRIES = 25_000


def kernel_log_votes(D, neighbour_labels, bandwidth) -> np.ndarray:
    """log(κ + δ) (n, C), float64: κ_c = Σ_t K_t [y_{j_t c} > 0] the vote of
    the k neighbours weighted by :func:`jaxnn._src.prediction.kernel_weights`
    at relative bandwidth b — its float64 NumPy twin — from their squared
    distances D (n, k) and labels (n, k, C) bool
    (:class:`jaxnn._src.prediction.HeldOutScores`); δ =
    :data:`jaxnn._src.prediction.KERNEL_VOTE_FLOOR`."""
    D = np.asarray(D, np.float64)
    gaps = D - D.min(axis=1, keepdims=True)
    scale = bandwidth * gaps.mean(axis=1, keepdims=True)
    K = np.exp(-np.divide(gaps, scale, out=np.zeros_like(gaps), where=scale > 0))
    kappa = np.einsum("nk,nkc->nc", K / K.sum(axis=1, keepdims=True), np.asarray(neighbour_labels, np.float64))
    return np.log(kappa + KERNEL_VOTE_FLOOR)


def fit_kernel_term(S, top, D, neighbour_labels, target, weights=None) -> tuple:
    """(T, w, b): the weight w and bandwidth b of least held-out log loss of
    the calibrated posteriors with the kernel term G = w·log(κ + δ)
    (:func:`kernel_log_votes`) on scores S (n, C) whose predicted classes
    are ``top`` (n,) — w over 0 and :data:`KERNEL_WEIGHTS`, b over
    :data:`KERNEL_BANDWIDTHS`, each pair with its best T on the coarse grid
    (:func:`best_temperature` with ``coarse``), on the first rows,
    :data:`KERNEL_FIT_ENTRIES` scores — and T fit on all rows for that
    pair; (T, 0, 0) unless some w > 0 has a smaller loss than w = 0.
    Single-label.  NumPy, deterministic."""
    part = slice(0, max(1, KERNEL_FIT_ENTRIES // S.shape[1]))
    Sp, topp, targetp = S[part], top[part], target[part]
    weightsp = None if weights is None else weights[part]
    best = (best_temperature(Sp, targetp, False, weightsp, coarse=True)[1], 0.0, 0.0)
    for b in KERNEL_BANDWIDTHS:
        log_votes = kernel_log_votes(D[part], neighbour_labels[part], b)
        for w in KERNEL_WEIGHTS:
            loss = best_temperature(Sp, targetp, False, weightsp, w * log_votes, topp, coarse=True)[1]
            if loss < best[0]:
                best = (loss, float(w), float(b))
    _, w, b = best
    if w == 0:
        return best_temperature(S, target, False, weights)[0], 0.0, 0.0
    return best_temperature(S, target, False, weights, w * kernel_log_votes(D, neighbour_labels, b), top)[0], w, b
