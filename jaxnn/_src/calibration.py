"""Choosing the temperature T of the calibrated posteriors and the shrinkage
s of the leverages from scores at held-out points: NumPy, deterministic.

The posteriors are :func:`jaxnn._src.prediction.calibrated_posterior`'s,
p̂ = (1 − ε)·softmax(H/T) + ε/C (multilabel: (1 − ε)·σ(H_c/T) + ε/2 per
label); :func:`calibrated_log_probs` is their float64 NumPy twin.  T is the
temperature of least mean log loss on the held-out scores
(:func:`best_temperature`: a grid, then a finer one around its best), and s
the shrinkage of least log loss of the shrunk rule's scores
(:func:`fit_shrinkage`).  Where the scores come from — the auxiliary fits
on held-out folds — is :func:`jaxnn._src.fitting.held_out_folds`'s.
"""

from __future__ import annotations

import numpy as np

from jaxnn._src.inputs import label_rows
from jaxnn._src.prediction import POSTERIOR_FLOOR

__all__ = ["LOSS_BLOCK", "SHRINKAGES", "T_GRID", "T_REFINE", "best_temperature", "calibrated_log_probs",
           "common_leverage", "fit_shrinkage", "fit_temperature", "log_losses", "posterior_scores", "shrinkages_of",
           "targets"]

#: the temperatures posterior="auto" tries, as multiples of the RMS of the
#: scored H: 46 steps of 10^0.1 from 10⁻² to 10^2.5, then 11 steps of 10^0.01
#: around the best (a log loss flat to 0.1 % over one coarse step)
T_GRID = np.logspace(-2.0, 2.5, 46)
T_REFINE = np.logspace(-0.05, 0.05, 11)


def targets(y, rows, classes, multilabel: bool) -> np.ndarray:
    """The 0/1 targets (len(rows), C) of ``rows`` of the labels y: one-hot
    over ``classes``, or the indicator matrix's positives (multilabel)."""
    y_arr = label_rows(y)[rows]
    if multilabel:
        return (y_arr > 0).astype(np.float64)
    return (y_arr[:, None] == np.asarray(classes)[None, :]).astype(np.float64)


def calibrated_log_probs(H, T, multilabel: bool):
    """log p̂ and log(1 − p̂) (both (..., n, C), float64) of
    :func:`jaxnn._src.prediction.calibrated_posterior` at temperature T (a
    number, or an array broadcasting against H (n, C), e.g. (t, 1, 1))."""
    eps = POSTERIOR_FLOOR
    Z = np.asarray(H, np.float64) / T
    if multilabel:
        s = 1.0 / (1.0 + np.exp(-np.clip(Z, -700, 700)))
        p = (1 - eps) * s + eps / 2
        return np.log(p), np.log1p(-p)
    Z = Z - Z.max(axis=-1, keepdims=True)
    E = np.exp(Z)
    p = (1 - eps) * E / E.sum(axis=-1, keepdims=True) + eps / H.shape[-1]
    return np.log(p), np.log1p(-np.minimum(p, 1.0))


#: the most float64 entries (temperatures × n × C) :func:`log_losses` holds at once
LOSS_BLOCK = 1 << 22


def log_losses(H, target, Ts, multilabel: bool, weights=None) -> np.ndarray:
    """Mean log loss (t,) of the calibrated posteriors on scores H (n, C) at
    each temperature of ``Ts`` (t,): −log p̂ of the true class (single-label),
    or the summed per-label binary log losses; the ``weights``-weighted mean
    when given.  Temperatures in blocks of at most :data:`LOSS_BLOCK`
    entries.  Single-label targets are one-hot rows: only the true class's
    p̂_y = (1 − ε)·e^{(H_y − max H)/T} / Σ_c e^{(H_c − max H)/T} + ε/C is
    formed."""
    Ts = np.asarray(Ts, np.float64)
    step = max(1, LOSS_BLOCK // max(1, H.size))
    if not multilabel:
        H = H - H.max(axis=1, keepdims=True)
        true = np.sum(target * H, axis=1)  # (n,) H_y − max H
    out = []
    for lo in range(0, Ts.size, step):
        T = Ts[lo:lo + step, None]
        if multilabel:
            log_p, log_q = calibrated_log_probs(H, T[:, :, None], multilabel)
            per_row = np.sum(target * log_p + (1 - target) * log_q, axis=-1)
        else:
            total = np.exp(H / T[:, :, None]).sum(axis=-1)  # (t, n)
            eps = POSTERIOR_FLOOR
            per_row = np.log((1 - eps) * np.exp(true / T) / total + eps / H.shape[1])
        out.append(-np.average(per_row, axis=-1, weights=weights))
    return np.concatenate(out)


def fit_temperature(H, target, multilabel: bool, weights=None) -> float:
    """:func:`best_temperature`'s T."""
    return best_temperature(H, target, multilabel, weights)[0]


def best_temperature(H, target, multilabel: bool, weights=None) -> tuple:
    """(T, its loss): the T > 0 of least mean log loss (:func:`log_losses`) of the
    calibrated posteriors on scores H (n, C) and 0/1 targets (n, C): a grid
    of :data:`T_GRID` times the RMS of H, refined by :data:`T_REFINE`
    around its best (the smallest T on equal losses); rows with a non-finite
    score are left out; ``weights`` (n,): the weighted mean log loss.  1.0
    where H is 0 everywhere (every T gives the uniform posterior) or no row
    is finite or of positive weight.  NumPy, deterministic."""
    H = np.asarray(H, np.float64)
    keep = np.all(np.isfinite(H), axis=1)
    if weights is not None:
        keep &= np.asarray(weights) > 0
        weights = np.asarray(weights, np.float64)[keep]
    H, target = H[keep], np.asarray(target, np.float64)[keep]
    scale = float(np.sqrt(np.mean(H ** 2))) if H.size else 0.0
    if not scale > 0:
        return 1.0, np.inf
    best_T, best = 0.0, np.inf
    for grid in (scale * T_GRID, None):
        Ts = best_T * T_REFINE if grid is None else grid
        losses = np.nan_to_num(log_losses(H, target, Ts, multilabel, weights), nan=np.inf)
        i = int(np.argmin(losses))  # the first of equal losses: the smallest T
        if losses[i] < best:
            best_T, best = float(Ts[i]), float(losses[i])
    return best_T, best


#: the leverage shrinkages s that posterior="auto" tries (:func:`fit_shrinkage`)
SHRINKAGES = np.linspace(0.0, 1.0, 11)


def shrinkages_of(shrinkage) -> tuple:
    """The shrinkages s a ``shrinkage`` setting tries: :data:`SHRINKAGES` for
    ``"auto"``, (0.0,) for None — else a ValueError naming the setting."""
    if not (shrinkage is None or (isinstance(shrinkage, str) and shrinkage == "auto")):
        raise ValueError(f"shrinkage must be None or 'auto', got {shrinkage!r}")
    return (0.0,) if shrinkage is None else tuple(SHRINKAGES)


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
