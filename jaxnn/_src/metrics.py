"""Classification and probability-estimation metrics (plain numpy).

All functions accept array-likes (numpy arrays, lists, JAX arrays), validate
their inputs -- mismatched lengths or a wrong number of dimensions raise a
``ValueError`` naming the offending argument -- and return a Python float.

Conventions
-----------
* Label vectors are 1-D, of shape ``(n,)``; they may hold ints or strings.
* Score / probability matrices are ``(n, C)``; column ``j`` corresponds to
  ``classes[j]``, where ``classes`` defaults to ``np.unique(y_true)`` (the
  sorted classes present in ``y_true``). Pass ``classes`` explicitly when some
  class is absent from ``y_true``.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "accuracy",
    "top_k_accuracy",
    "f_measure",
    "recall",
    "hamming_risk",
    "kl_divergence",
    "brier_score",
    "expected_calibration_error",
]

_AVERAGES = ("macro", "micro", "weighted")
#: kl_divergence's default clipping floor: the smallest normal float64
_TINY = float(np.finfo(np.float64).tiny)


# --------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------
def _asarray(name: str, a: ArrayLike) -> NDArray:
    """``np.asarray`` that names the argument when the input is ragged."""
    try:
        return np.asarray(a)
    except ValueError as err:  # inhomogeneous nested sequences
        raise ValueError(f"{name} must be a rectangular array") from err


def _check_label_values(name: str, a: NDArray, raw: object = None) -> None:
    """Labels must be mutually comparable (sortable) and free of NaN.

    ``raw`` is the input before ``np.asarray``: numpy silently turns a list
    such as ``[0, "a"]`` into strings, which this rejects.
    """
    if a.dtype.kind in "US" and isinstance(raw, (list, tuple)):
        if not all(isinstance(v, (str, bytes)) for v in raw):
            raise TypeError(
                f"labels of {name} must be mutually comparable (all numbers or all strings)"
            )
    elif a.dtype.kind == "O":
        values = a.ravel().tolist()
        numeric = all(isinstance(v, numbers.Real) for v in values)
        if not (numeric or all(isinstance(v, str) for v in values)
                or all(isinstance(v, bytes) for v in values)):
            raise TypeError(
                f"labels of {name} must be mutually comparable (all numbers or all strings)"
            )
        if numeric and any(v != v for v in values):
            raise ValueError(f"{name} contains NaN")
    elif a.dtype.kind in "fc" and np.any(np.isnan(a)):
        raise ValueError(f"{name} contains NaN")


def _labels(name: str, raw: ArrayLike) -> NDArray:
    a = _asarray(name, raw)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D (n,), got shape {a.shape}")
    if a.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    _check_label_values(name, a, raw)
    return a


def _matrix(name: str, a: ArrayLike) -> NDArray[np.float64]:
    a = _asarray(name, a)
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n, C), got shape {a.shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{name} is empty, got shape {a.shape}")
    kinds = {a.dtype.kind}
    if a.dtype.kind == "O":  # Python objects: classify each value
        kinds = {"f" if isinstance(v, numbers.Real) else "c" if isinstance(v, numbers.Complex) else "O"
                 for v in a.ravel().tolist()}
    if "c" in kinds:
        raise TypeError(f"{name} must be real, got complex values")
    if not kinds <= set("biuf"):
        raise TypeError(f"{name} must be numeric, got dtype {a.dtype}")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return a


def _same_length(name_a: str, a: NDArray, name_b: str, b: NDArray) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{name_b} has {b.shape[0]} rows but {name_a} has {a.shape[0]}"
        )


def _is_text(a: NDArray) -> bool:
    if a.dtype.kind == "O":  # already checked homogeneous by _check_label_values
        return a.size > 0 and isinstance(a.flat[0], (str, bytes))
    return a.dtype.kind in "US"


def _same_kind(name_a: str, a: NDArray, name_b: str, b: NDArray) -> None:
    """Reject comparing string labels with numeric labels (never equal)."""
    text_a, text_b = _is_text(a), _is_text(b)
    if text_a != text_b:
        raise TypeError(
            f"{name_a} and {name_b} mix string and numeric labels "
            f"(dtypes {a.dtype} and {b.dtype})"
        )


def _probabilities(
    name: str, p: NDArray[np.float64], atol: float = 1e-4, rows_sum_to_one: bool = True
) -> NDArray[np.float64]:
    """p checked as probabilities (rows summing to 1 unless told otherwise),
    up to ``atol`` of rounding on either side of [0, 1] — then clipped into it."""
    if np.any(p < -atol) or np.any(p > 1.0 + atol):
        raise ValueError(f"{name} must hold probabilities in [0, 1]")
    if rows_sum_to_one:
        sums = p.sum(axis=1)
        if not np.allclose(sums, 1.0, rtol=0.0, atol=atol):
            worst = float(np.max(np.abs(sums - 1.0)))
            raise ValueError(f"rows of {name} must sum to 1 (max deviation {worst:.3g})")
    return np.clip(p, 0.0, 1.0)


def _resolve_classes(
    y_true: NDArray, n_columns: int, classes: ArrayLike | None, matrix_name: str
) -> NDArray:
    """Class array matching the columns of a score/probability matrix."""
    if classes is None:
        cls = np.unique(y_true)
        if cls.shape[0] != n_columns:
            raise ValueError(
                f"y_true contains {cls.shape[0]} classes but {matrix_name} has "
                f"{n_columns} columns; pass `classes` to name every column"
            )
        return cls
    cls = _asarray("classes", classes)
    if cls.ndim != 1:
        raise ValueError(f"classes must be 1-D, got shape {cls.shape}")
    _check_label_values("classes", cls, classes)
    if np.unique(cls).shape[0] != cls.shape[0]:
        raise ValueError("classes must not contain duplicates")
    if cls.shape[0] != n_columns:
        raise ValueError(
            f"classes has {cls.shape[0]} entries but {matrix_name} has {n_columns} columns"
        )
    return cls


def class_indices(y_true: NDArray, classes: NDArray) -> NDArray[np.int64]:
    """Column index of every label of ``y_true`` within ``classes``."""
    _same_kind("y_true", y_true, "classes", classes)
    order = np.argsort(classes, kind="stable")
    sorted_cls = classes[order]
    pos = np.searchsorted(sorted_cls, y_true)
    pos = np.clip(pos, 0, sorted_cls.shape[0] - 1)
    found = sorted_cls[pos] == y_true
    if not np.all(found):
        missing = np.unique(y_true[~found])[:5]
        raise ValueError(f"y_true contains labels not in classes: {missing.tolist()}")
    return order[pos].astype(np.int64)


def _targets(
    y_true: ArrayLike, proba: NDArray[np.float64], classes: ArrayLike | None
) -> NDArray[np.int64]:
    """Integer class indices ``(n,)`` from labels ``(n,)`` or a one-hot ``(n, C)``."""
    y = _asarray("y_true", y_true)
    if y.ndim == 2:
        if y.shape != proba.shape:
            raise ValueError(
                f"one-hot y_true has shape {y.shape} but proba has shape {proba.shape}"
            )
        if classes is not None:
            raise ValueError("classes must be None when y_true is a one-hot matrix")
        if not (np.all((y == 0) | (y == 1)) and np.all(y.sum(axis=1) == 1)):
            raise ValueError("one-hot y_true must hold exactly one 1 per row (and 0 elsewhere)")
        return np.argmax(y, axis=1).astype(np.int64)
    y = _labels("y_true", y)
    _same_length("y_true", y, "proba", proba)
    cls = _resolve_classes(y, proba.shape[1], classes, "proba")
    return class_indices(y, cls)


# --------------------------------------------------------------------------
# Hard-label metrics
# --------------------------------------------------------------------------
def accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Fraction of correctly predicted labels.

    Args:
        y_true: ``(n,)`` true labels.
        y_pred: ``(n,)`` predicted labels.

    Returns:
        ``mean(y_true == y_pred)`` in ``[0, 1]``.
    """
    y_true = _labels("y_true", y_true)
    y_pred = _labels("y_pred", y_pred)
    _same_length("y_true", y_true, "y_pred", y_pred)
    _same_kind("y_true", y_true, "y_pred", y_pred)
    return float(np.mean(y_true == y_pred))


def top_k_accuracy(
    y_true: ArrayLike, scores: ArrayLike, k: int, classes: ArrayLike | None = None
) -> float:
    """Fraction of points whose true class is among the ``k`` highest scores.

    Args:
        y_true: ``(n,)`` true labels.
        scores: ``(n, C)`` scores (any monotone scale: logits, probabilities);
            column ``j`` belongs to ``classes[j]``.
        k: number of top classes that count as a hit (``k >= 1``). ``k >= C``
            always gives 1.0, a meaningless score: a ``UserWarning`` says so
            (as scikit-learn's ``top_k_accuracy_score`` does).
        classes: ``(C,)`` labels of the columns. Defaults to
            ``np.unique(y_true)``, i.e. the sorted classes present in
            ``y_true``, which must then number exactly ``C``.

    Returns:
        Top-k accuracy in ``[0, 1]``. Ties are broken as in scikit-learn's
        ``top_k_accuracy_score`` for C ≥ 3 (among equal scores the later
        column ranks higher), so the two agree exactly there.  With C = 2
        scikit-learn reads one column against a threshold and gives an exact
        tie (0.5 / 0.5) to the first class; here the later column wins it, as
        for any C.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    y_true = _labels("y_true", y_true)
    scores = _matrix("scores", scores)
    _same_length("y_true", y_true, "scores", scores)
    cls = _resolve_classes(y_true, scores.shape[1], classes, "scores")
    n_classes = scores.shape[1]
    if k >= n_classes:
        warnings.warn(
            f"top_k_accuracy: k ({k}) greater than or equal to the number of classes ({n_classes}) will result "
            f"in a perfect score and is therefore meaningless; use k < {n_classes}",
            UserWarning,
            stacklevel=2,
        )
    idx = class_indices(y_true, cls)
    ranked = np.argsort(scores, axis=1, kind="mergesort")[:, ::-1][:, : int(k)]
    return float(np.mean(np.any(ranked == idx[:, None], axis=1)))


def _per_class_counts(
    y_true: NDArray, y_pred: NDArray
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """True positives, predicted counts and true counts over the union of labels."""
    classes = np.union1d(y_true, y_pred)
    t = np.searchsorted(classes, y_true)
    p = np.searchsorted(classes, y_pred)
    C = classes.shape[0]
    tp = np.bincount(t[t == p], minlength=C).astype(np.float64)
    n_pred = np.bincount(p, minlength=C).astype(np.float64)
    n_true = np.bincount(t, minlength=C).astype(np.float64)
    return tp, n_pred, n_true


def _safe_div(num: NDArray[np.float64], den: NDArray[np.float64]) -> NDArray[np.float64]:
    out = np.zeros_like(num)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _check_pair_and_average(
    y_true: ArrayLike, y_pred: ArrayLike, average: str
) -> tuple[NDArray, NDArray]:
    if average not in _AVERAGES:
        raise ValueError(f"average must be one of {_AVERAGES}, got {average!r}")
    y_true = _labels("y_true", y_true)
    y_pred = _labels("y_pred", y_pred)
    _same_length("y_true", y_true, "y_pred", y_pred)
    _same_kind("y_true", y_true, "y_pred", y_pred)
    return y_true, y_pred


def _average(
    values: NDArray[np.float64], n_true: NDArray[np.float64], average: str
) -> float:
    if average == "macro":
        return float(np.mean(values))
    return float(np.sum(values * n_true) / np.sum(n_true))  # weighted


def f_measure(y_true: ArrayLike, y_pred: ArrayLike, average: str = "macro") -> float:
    """F1 score (harmonic mean of precision and recall).

    Per-class scores are computed over the union of the classes appearing in
    ``y_true`` or ``y_pred``; a class with no predicted (or no true) positives
    gets precision (recall) 0, and an F1 of 0 when both are 0. This matches
    scikit-learn's ``f1_score(..., zero_division=0)``.

    Args:
        y_true: ``(n,)`` true labels.
        y_pred: ``(n,)`` predicted labels.
        average: ``"macro"`` (unweighted class mean), ``"weighted"`` (mean
            weighted by true class frequency) or ``"micro"`` (global counts;
            equals :func:`accuracy` for single-label data).

    Returns:
        F1 in ``[0, 1]``.
    """
    y_true, y_pred = _check_pair_and_average(y_true, y_pred, average)
    tp, n_pred, n_true = _per_class_counts(y_true, y_pred)
    if average == "micro":
        tp, n_pred, n_true = tp.sum(keepdims=True), n_pred.sum(keepdims=True), n_true.sum(keepdims=True)
    f1 = _safe_div(2.0 * tp, n_pred + n_true)  # = 2PR/(P+R), 0 when undefined
    if average == "micro":
        return float(f1[0])
    return _average(f1, n_true, average)


def recall(y_true: ArrayLike, y_pred: ArrayLike, average: str = "macro") -> float:
    """Recall (true positive rate per class), averaged.

    Per-class recalls are computed over the union of the classes appearing in
    ``y_true`` or ``y_pred``; a class absent from ``y_true`` has recall 0.
    This matches scikit-learn's ``recall_score(..., zero_division=0)``. The
    macro average is the balanced accuracy when every predicted class also
    occurs in ``y_true``.

    Args:
        y_true: ``(n,)`` true labels.
        y_pred: ``(n,)`` predicted labels.
        average: ``"macro"``, ``"weighted"`` or ``"micro"`` (see :func:`f_measure`).

    Returns:
        Recall in ``[0, 1]``.
    """
    y_true, y_pred = _check_pair_and_average(y_true, y_pred, average)
    tp, _, n_true = _per_class_counts(y_true, y_pred)
    if average == "micro":
        return float(tp.sum() / n_true.sum())
    return _average(_safe_div(tp, n_true), n_true, average)


def hamming_risk(Y_true: ArrayLike, Y_pred: ArrayLike) -> float:
    """Fraction of wrong entries between two multi-label indicator matrices.

    Each matrix may be coded in {0, 1} or in {-1, +1} (independently); entry
    value 1 means "label present".

    Args:
        Y_true: ``(n, C)`` true indicator matrix.
        Y_pred: ``(n, C)`` predicted indicator matrix.

    Returns:
        ``mean(present(Y_true) != present(Y_pred))`` in ``[0, 1]``.
    """
    Y_true = _matrix("Y_true", Y_true)
    Y_pred = _matrix("Y_pred", Y_pred)
    if Y_true.shape != Y_pred.shape:
        raise ValueError(f"Y_pred has shape {Y_pred.shape} but Y_true has shape {Y_true.shape}")
    present = []
    for name, Y in (("Y_true", Y_true), ("Y_pred", Y_pred)):
        values = set(np.unique(Y).tolist())
        if not (values <= {0.0, 1.0} or values <= {-1.0, 1.0}):
            raise ValueError(f"{name} must be coded in {{0, 1}} or {{-1, +1}}, got values {sorted(values)}")
        present.append(Y == 1.0)
    return float(np.mean(present[0] != present[1]))


# --------------------------------------------------------------------------
# Probability metrics
# --------------------------------------------------------------------------
def kl_divergence(p_hat: ArrayLike, p_true: ArrayLike, eps: float = _TINY) -> float:
    """Average Kullback-Leibler divergence ``D_KL(p_hat || p_true)``.

    For every point ``x_i`` computes ``sum_c p_hat_c(x_i) * ln(p_hat_c(x_i) /
    p_c(x_i))`` -- note the order, the *estimated* posterior comes first, as
    in d'Ambrosio et al. (2012), eq. 32 -- and averages over the points.
    With test points drawn from the data distribution this is the
    Monte-Carlo estimate of the integral of the pointwise divergence under
    that distribution.  Eq. 32 also weights each class's term by Pr[c]: for
    C equiprobable classes its value is this one divided by C (paper 003's
    Table 3 is on that scale).

    Probabilities are clipped to ``[eps, 1]`` inside the logarithms only to
    keep ``ln 0`` out; terms with ``p_hat_c = 0`` contribute 0.  The default,
    the smallest normal float64, changes nothing else but where ``p_c = 0``
    exactly while ``p_hat_c > 0``: the divergence is infinite there (scipy's
    ``rel_entr``), and the floor reports the finite p_hat_c·ln(p_hat_c/eps)
    ≤ 708·p_hat_c instead (true posteriors reach 0 in float64 only beyond
    ~745 nats of evidence, never in the papers' settings); a larger ``eps`` caps
    every term (``eps=1e-12`` caps ln(p_hat/p) at 27.6) and under-reports the
    divergence wherever true posteriors are tiny, e.g. between well-separated
    classes.

    Args:
        p_hat: ``(n, C)`` estimated posteriors (rows sum to 1).
        p_true: ``(n, C)`` true posteriors (rows sum to 1).
        eps: clipping floor, a real number with ``0 < eps < 1``.

    Returns:
        Mean divergence (>= 0 up to clipping).
    """
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"eps must be a real number, got {type(eps).__name__}")
    if not 0.0 < float(eps) < 1.0:
        raise ValueError(f"eps must satisfy 0 < eps < 1, got {eps}")
    eps = float(eps)
    p_hat = _matrix("p_hat", p_hat)
    p_true = _matrix("p_true", p_true)
    if p_hat.shape != p_true.shape:
        raise ValueError(f"p_true has shape {p_true.shape} but p_hat has shape {p_hat.shape}")
    p_hat = _probabilities("p_hat", p_hat)
    p_true = _probabilities("p_true", p_true)
    log_ratio = np.log(np.clip(p_hat, eps, 1.0)) - np.log(np.clip(p_true, eps, 1.0))
    return float(np.mean(np.sum(p_hat * log_ratio, axis=1)))


def brier_score(
    y_true: ArrayLike, proba: ArrayLike, classes: ArrayLike | None = None
) -> float:
    """Multi-class Brier score ``mean_i sum_c (p_ic - 1[y_i = c])^2``.

    Ranges in ``[0, 2]``; for two classes it is twice the usual binary Brier
    score (scikit-learn's ``brier_score_loss(..., scale_by_half=False)``).

    Args:
        y_true: ``(n,)`` labels, or an ``(n, C)`` one-hot matrix.
        proba: ``(n, C)`` predicted probabilities in ``[0, 1]``, rows summing
            to 1; column ``j`` is ``classes[j]``.
        classes: ``(C,)`` column labels (labels input only); defaults to
            ``np.unique(y_true)``.

    Returns:
        The Brier score.
    """
    proba = _matrix("proba", proba)
    proba = _probabilities("proba", proba)
    idx = _targets(y_true, proba, classes)
    onehot = np.zeros_like(proba)
    onehot[np.arange(proba.shape[0]), idx] = 1.0
    return float(np.mean(np.sum((proba - onehot) ** 2, axis=1)))


def expected_calibration_error(
    y_true: ArrayLike,
    proba: ArrayLike,
    n_bins: int = 15,
    classes: ArrayLike | None = None,
) -> float:
    """Top-label expected calibration error with equal-width bins.

    The confidence of a point is its largest probability and its prediction
    the corresponding class (first column on ties). Confidences are binned
    into ``n_bins`` equal-width bins ``(b/B, (b+1)/B]`` (a confidence of
    exactly 0 goes into the first bin), and
    ``ECE = sum_b (|bin_b| / n) * |accuracy(bin_b) - mean_confidence(bin_b)|``.

    Args:
        y_true: ``(n,)`` labels, or an ``(n, C)`` one-hot matrix.
        proba: ``(n, C)`` predicted probabilities in ``[0, 1]`` (rows need not
            sum to 1, e.g. one-vs-rest posteriors); column ``j`` is ``classes[j]``.
        n_bins: number of bins (>= 1).
        classes: ``(C,)`` column labels (labels input only); defaults to
            ``np.unique(y_true)``.

    Returns:
        ECE in ``[0, 1]``.
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral):
        raise TypeError(f"n_bins must be an integer, got {type(n_bins).__name__}")
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    proba = _matrix("proba", proba)
    proba = _probabilities("proba", proba, rows_sum_to_one=False)
    idx = _targets(y_true, proba, classes)
    confidence = proba.max(axis=1)
    correct = (np.argmax(proba, axis=1) == idx).astype(np.float64)
    edges = np.linspace(0.0, 1.0, int(n_bins) + 1)
    bins = np.clip(np.searchsorted(edges, confidence, side="left") - 1, 0, int(n_bins) - 1)
    sum_conf = np.bincount(bins, weights=confidence, minlength=n_bins)
    sum_acc = np.bincount(bins, weights=correct, minlength=n_bins)
    return float(np.sum(np.abs(sum_acc - sum_conf)) / proba.shape[0])
