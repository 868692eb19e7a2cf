"""Figures of fitted models (matplotlib): :mod:`jaxnn.plot`'s implementation.

Four views of a :class:`~jaxnn.Model`, each drawn on a matplotlib ``Axes``
(``ax=``; a new figure from ``pyplot.subplots`` when None) and returned:

* :func:`decision_map` — the posterior over the plane of a 2-D problem, the
  training points and, with ``theta``, the prototypes kept by θ filtering
  (paper 001 Fig. 3);
* :func:`risk_trace` — the surrogate risk after every boosting step of a
  ``fit(trace=True)``;
* :func:`reliability` — a reliability diagram of :func:`jaxnn.predict_proba`;
* :func:`pruning_curve` — test error against the fraction of prototypes kept
  by :func:`jaxnn.prune` (paper 001 Fig. 2).

matplotlib is imported when a function is called, not with this module:
``import jaxnn.plot`` works without it, and a call without it raises an
ImportError that says how to install it.  Nothing here calls ``plt.show()``.
"""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from jaxnn._src.family import FamilyModel
from jaxnn._src.metrics import class_indices
from jaxnn._src.model import Model
from jaxnn._src.prune import knn_subsample, prune, prune_indices

__all__ = ["decision_map", "risk_trace", "reliability", "pruning_curve", "DEFAULT_THETAS"]

INSTALL = 'pip install "jaxnn[plot]"'

#: θ values of :func:`pruning_curve` when none are given.
DEFAULT_THETAS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)

# one colour and one marker per class (cycled past ten): class 0 blue, class 1 red, as the binary map's ends
_CLASS_COLORS = ("tab:blue", "tab:red", "tab:green", "tab:orange", "tab:purple",
                 "tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")
_BINARY_CMAP = "RdBu_r"  # p(positive class): blue (class 0) → white (0.5) → red (class 1)


def _pyplot():
    """matplotlib.pyplot, or an ImportError that says how to get it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(f"jaxnn.plot needs matplotlib, which is not installed: {INSTALL}") from err
    return plt


def _check_ax(ax) -> None:
    """matplotlib is there and ``ax`` is None or an Axes: checked before any work."""
    _pyplot()
    from matplotlib.axes import Axes

    if ax is not None and not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")


def _axes(ax):
    """``ax``, or the Axes of a new pyplot figure when it is None."""
    if ax is None:
        _, ax = _pyplot().subplots()
    return ax


def _check_model(model, family: bool = False) -> Model:
    """``model`` if it is a :class:`Model` — or, with ``family``, a model of
    paper 004's family (jaxnn.uls, udt, ols) — else a TypeError."""
    if not isinstance(model, (Model, FamilyModel) if family else Model):
        also = " or a model of jaxnn.uls, udt or ols" if family else ""
        raise TypeError(f"expected a jaxnn Model (from jaxnn.fit){also}, got {type(model).__name__}")
    return model


def _single_label(model: Model, what: str) -> None:
    if model.multilabel:
        raise ValueError(f"{what} needs a single-label model; this one was fit on a multilabel indicator matrix")


def _searched_points(model: Model) -> np.ndarray:
    """The points the model searches (m, d): its training points as given to
    fit, mapped by its learned metric if it has one (``origin`` added back)."""
    P = np.asarray(model.X, dtype=np.float64)
    if model.origin is not None:
        P = P + np.asarray(model.origin, dtype=np.float64).reshape(-1, P.shape[1]).sum(axis=0)
    return P


def _training_points(model: Model) -> np.ndarray:
    """The model's training points (m, d) as given to fit (``origin`` added
    back, a learned metric's map A (d, d) undone: P = (X + origin) A⁻¹)."""
    P = _searched_points(model)
    if model.transform is not None:
        A = np.asarray(model.transform, dtype=np.float64)
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"the model's metric maps {A.shape[0]} features to {A.shape[1]}: its training points "
                             "cannot be drawn in the features they were given in")
        P = np.linalg.solve(A.T, P.T).T
    return P


def _class_index(model: Model, y, n: int, name: str = "y") -> np.ndarray:
    """Column of each label of ``y`` (n,) in ``model.classes``; a ValueError
    naming the labels the model does not know."""
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array of {n} labels (one per row of X), got shape {y.shape}")
    try:
        return class_indices(y, np.asarray(model.classes))
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name}: {err} (the model's classes: {list(model.classes)})") from err


def _label(value) -> str:
    return str(value.item() if hasattr(value, "item") else value)


def _name(obj) -> str:
    return getattr(obj, "name", None) or type(obj).__name__


def _check_int(value, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


# --------------------------------------------------------------------------
# decision map
# --------------------------------------------------------------------------
def decision_map(model, X, y, *, theta=None, resolution: int = 200, colorbar: bool = True, ax=None):
    """The posterior of a 2-D problem over the plane, its training points and, with
    ``theta``, the prototypes that θ filtering keeps (paper 001 Fig. 3).

    The background is :func:`jaxnn.predict_proba` on a ``resolution`` ×
    ``resolution`` grid covering ``X`` (5 % margin): for two classes p̂ of the
    second class (``model.classes[1]``; blue → white at 0.5 → red, with the
    p̂ = 0.5 boundary in black and a colour bar); for more, the colour of the
    argmax class, faded toward white as its p̂ falls to 1/C.  The points
    ``X`` are drawn coloured (and shaped) by their label ``y``.

    With ``theta`` the map is that of ``jaxnn.prune(model, theta)``: the rule
    of the kept prototypes only, which are drawn large with a black edge,
    over the faded points ``X``.

    Args:
      model: a single-label :class:`jaxnn.Model` fit on 2 features, or a
        model of paper 004's family (:func:`jaxnn.uls`, :func:`jaxnn.udt`,
        :func:`jaxnn.ols`; no ``theta``).
      X: (n, 2) points to draw — usually the training data — whose extent
        sets the grid's.
      y: (n,) their labels, values of ``model.classes``.
      theta: None, or θ ∈ (0, 1] of :func:`jaxnn.prune` (which raises when
        fewer than k prototypes remain).
      resolution: grid points per axis (≥ 2).
      colorbar: draw the colour bar of a two-class map.
      ax: the matplotlib Axes to draw on; None: a new figure.

    Returns:
      The matplotlib Axes.

    Raises:
      ValueError: X or the model not 2-D, y not of n known labels, a
        multilabel model, θ outside (0, 1] or keeping fewer than k examples.
    """
    model = _check_model(model, family=True)
    _check_ax(ax)
    _single_label(model, "decision_map")
    if theta is not None and isinstance(model, FamilyModel):
        raise ValueError(f"theta keeps a k-NN rule's prototypes: a {model.family.upper()} model has none")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"decision_map draws 2-D problems: X must have shape (n, 2), got {X.shape}")
    if X.shape[0] < 1 or not np.all(np.isfinite(X)):
        raise ValueError("decision_map: X must hold at least one point, all finite")
    d = model.n_features
    if d != 2:
        raise ValueError(f"decision_map draws 2-D problems: the model was fit on {d} features, not 2")
    y_idx = _class_index(model, y, X.shape[0])
    resolution = _check_int(resolution, "resolution", 2)
    shown = model if theta is None else prune(model, theta)

    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = 0.05 * np.where(hi > lo, hi - lo, 1.0)
    lo, hi = lo - pad, hi + pad
    gx, gy = np.linspace(lo[0], hi[0], resolution), np.linspace(lo[1], hi[1], resolution)
    G = np.stack(np.meshgrid(gx, gy), axis=-1).reshape(-1, 2)
    from jaxnn._src.prediction import predict_proba

    P = np.asarray(predict_proba(shown, G), dtype=np.float64).reshape(resolution, resolution, -1)

    ax = _axes(ax)
    from matplotlib.colors import to_rgb

    C = P.shape[-1]
    half = (hi - lo) / (2 * (resolution - 1))  # each pixel centred on its grid point
    extent = (lo[0] - half[0], hi[0] + half[0], lo[1] - half[1], hi[1] + half[1])
    if C == 2:
        im = ax.imshow(P[..., 1], origin="lower", extent=extent, aspect="auto", cmap=_BINARY_CMAP,
                       vmin=0.0, vmax=1.0, interpolation="bilinear")
        if P[..., 1].min() < 0.5 < P[..., 1].max():
            ax.contour(gx, gy, P[..., 1], levels=[0.5], colors="k", linewidths=1.0)
        if colorbar:
            ax.figure.colorbar(im, ax=ax, label=f"p̂(y = {_label(model.classes[1])} | x)", fraction=0.046, pad=0.04)
    else:
        top = P.argmax(axis=-1)
        strength = np.clip((P.max(axis=-1) - 1.0 / C) / (1.0 - 1.0 / C), 0.0, 1.0)[..., None]
        colors = np.array([to_rgb(_CLASS_COLORS[c % len(_CLASS_COLORS)]) for c in range(C)])
        rgb = (1.0 - 0.75 * strength) * 1.0 + 0.75 * strength * colors[top]  # white → the class colour
        ax.imshow(rgb, origin="lower", extent=extent, aspect="auto", interpolation="nearest")

    faded = theta is not None
    for c in np.unique(y_idx):
        pts = X[y_idx == c]
        ax.scatter(pts[:, 0], pts[:, 1], s=10 if faded else 16, marker=_MARKERS[c % len(_MARKERS)],
                   c=_CLASS_COLORS[c % len(_CLASS_COLORS)], alpha=0.35 if faded else 0.9,
                   edgecolors="none" if faded else "white", linewidths=0.4,
                   label=f"class {_label(model.classes[c])}")
    if theta is not None:
        kept = _training_points(shown)
        kept_class = np.asarray(shown.Y).argmax(axis=1)
        for c in np.unique(kept_class):
            pts = kept[kept_class == c]
            ax.scatter(pts[:, 0], pts[:, 1], s=42, marker=_MARKERS[c % len(_MARKERS)],
                       c=_CLASS_COLORS[c % len(_CLASS_COLORS)], edgecolors="k", linewidths=0.9,
                       label=f"prototypes, class {_label(model.classes[c])}")
        m = model.X.shape[0]
        ax.set_title(f"θ = {float(theta):g}: {kept.shape[0]} of {m} prototypes kept (k = {model.k})")
    elif isinstance(model, FamilyModel):
        ax.set_title(f"{model.family.upper()}, {_name(model.loss)} loss")
    else:
        ax.set_title(f"{_name(model.algorithm)}, {_name(model.loss)} loss, k = {model.k}")
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_xlabel("x₁")
    ax.set_ylabel("x₂")
    ax.legend(loc="best", fontsize=7, framealpha=0.8)
    return ax


# --------------------------------------------------------------------------
# risk trace
# --------------------------------------------------------------------------
def _pass_ends(n_steps: int, rounds: int, m: int) -> list:
    """Steps (1-based) after which a pass over the m examples ends, the last
    step excepted: every m steps when the trace has one entry per round, else
    (``chooser="colored"``: one entry per step of the schedule) every
    ``n_steps / passes`` steps when ``rounds`` is whole passes."""
    if m < 1 or rounds <= m:
        return []
    if n_steps == rounds:
        return list(range(m, n_steps, m))
    passes = rounds // m
    if rounds % m == 0 and passes > 1 and n_steps % passes == 0:
        per = n_steps // passes
        return list(range(per, n_steps, per))
    return []


def risk_trace(model, *, ax=None):
    """The surrogate risk after every boosting step of a ``fit(trace=True)``.

    x: the step (1 … T; for ``chooser="colored"`` the steps of the colored
    schedule, each updating many examples), y: ``model.trace``, the total
    surrogate risk (1/(mC)) Σ ψ(e_ic).  When ``model.rounds`` exceeds the
    number of training examples m (several passes), dotted lines mark the
    end of each pass (m as stored in the model: a pruned model's are not
    marked right).

    Args:
      model: a :class:`jaxnn.Model` fit with ``trace=True``.
      ax: the matplotlib Axes to draw on; None: a new figure.

    Returns:
      The matplotlib Axes.

    Raises:
      ValueError: the model has no trace.
    """
    model = _check_model(model)
    _check_ax(ax)
    if model.trace is None:
        raise ValueError("risk_trace: this model has no trace (model.trace is None): "
                         "fit it with jaxnn.fit(..., trace=True)")
    risk = np.asarray(model.trace, dtype=np.float64).reshape(-1)
    if risk.size == 0:
        raise ValueError("risk_trace: model.trace is empty (no boosting step was run)")
    ax = _axes(ax)
    steps = np.arange(1, risk.size + 1)
    ax.plot(steps, risk, color="tab:blue", lw=1.2, marker="o" if risk.size <= 60 else None, ms=3,
            label=f"{_name(model.algorithm)}, {_name(model.loss)} loss")
    ends = _pass_ends(risk.size, int(model.rounds), model.X.shape[0])
    for i, step in enumerate(ends):
        ax.axvline(step + 0.5, color="gray", ls=":", lw=1.0, label="end of a pass" if i == 0 else None)
    colored = risk.size != model.rounds
    ax.set_xlabel("step of the colored schedule" if colored else "boosting step")
    ax.set_ylabel("surrogate risk")
    ax.set_xlim(0.5, risk.size + 0.5)
    ax.set_title(f"risk trace: {risk[0]:.3g} → {risk[-1]:.3g} in {risk.size} steps")
    ax.legend(loc="best", fontsize=8)
    return ax


# --------------------------------------------------------------------------
# reliability diagram
# --------------------------------------------------------------------------
def reliability(model, X, y, *, bins: int = 10, ax=None):
    """A reliability diagram of :func:`jaxnn.predict_proba` on ``(X, y)``.

    Each point's confidence is its largest p̂ and its prediction that class;
    confidences are cut into ``bins`` equal-width bins of [0, 1] (as
    :func:`jaxnn.metrics.expected_calibration_error`).  Bars: the accuracy
    in each bin, with the number of points above it; dots: (mean confidence,
    accuracy) per bin; dashed: the diagonal of perfect calibration.  The
    legend gives the Brier score (:func:`jaxnn.metrics.brier_score`, in
    [0, 2]), the log loss −mean log p̂(y | x) and the ECE.

    Args:
      model: a single-label :class:`jaxnn.Model`, or a model of paper
        004's family (:func:`jaxnn.uls`, :func:`jaxnn.udt`, :func:`jaxnn.ols`).
      X: (n, d) points, y: (n,) their labels (values of ``model.classes``),
        usually held-out data.
      bins: number of bins (≥ 1).
      ax: the matplotlib Axes to draw on; None: a new figure.

    Returns:
      The matplotlib Axes.

    Raises:
      ValueError: a multilabel model, y not of n known labels, bins < 1.
    """
    model = _check_model(model, family=True)
    _check_ax(ax)
    _single_label(model, "reliability")
    bins = _check_int(bins, "bins", 1)
    from jaxnn._src.prediction import predict_proba

    P = np.asarray(predict_proba(model, X), dtype=np.float64)
    n = P.shape[0]
    if n < 1:
        raise ValueError("reliability needs at least one point")
    y_idx = _class_index(model, y, n)
    P = np.clip(P, 0.0, 1.0)
    confidence = P.max(axis=1)
    correct = (P.argmax(axis=1) == y_idx).astype(np.float64)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, confidence, side="left") - 1, 0, bins - 1)
    count = np.bincount(which, minlength=bins)
    seen = count > 0
    acc = np.bincount(which, weights=correct, minlength=bins)[seen] / count[seen]
    conf = np.bincount(which, weights=confidence, minlength=bins)[seen] / count[seen]

    onehot = np.zeros_like(P)
    onehot[np.arange(n), y_idx] = 1.0
    brier = float(np.mean(np.sum((P - onehot) ** 2, axis=1)))
    log_loss = float(-np.mean(np.log(np.clip(P[np.arange(n), y_idx], 1e-15, 1.0))))
    ece = float(np.sum(count[seen] * np.abs(acc - conf)) / n)

    ax = _axes(ax)
    width = 1.0 / bins
    left = edges[:-1][seen]
    bars = ax.bar(left, acc, width=width, align="edge", color="tab:blue", alpha=0.35, edgecolor="tab:blue",
                  label="accuracy per bin")
    for bar, c in zip(bars, count[seen]):
        ax.annotate(f"{c}", (bar.get_x() + width / 2, bar.get_height()), xytext=(0, 2),
                    textcoords="offset points", ha="center", va="bottom", fontsize=7, color="0.3")
    ax.plot([0, 1], [0, 1], ls="--", color="k", lw=1, label="perfect calibration")
    ax.plot(conf, acc, marker="o", color="tab:red", ms=4, lw=1,
            label=f"Brier {brier:.3f}, log loss {log_loss:.3f}, ECE {ece:.3f}")
    lowest = 1.0 / P.shape[1]
    if lowest > 0:
        ax.axvspan(0.0, lowest, color="0.9", zorder=0)  # confidences below 1/C cannot occur
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.08)
    ax.set_xlabel("confidence (p̂ of the predicted class)")
    ax.set_ylabel("accuracy")
    ax.set_title(f"reliability, {n} points (number per bin above the bars)", fontsize=10)
    ax.legend(loc="upper left", fontsize=8)
    return ax


# --------------------------------------------------------------------------
# pruning curve
# --------------------------------------------------------------------------
def _error(model: Model, X, y) -> float:
    """Test error of ``model`` on (X, y): 1 − accuracy, or (multilabel) the Hamming risk."""
    from jaxnn._src.prediction import predict

    pred = np.asarray(predict(model, X))
    y = np.asarray(y)
    if model.multilabel:
        return float(np.mean(pred != (y > 0)))
    return float(np.mean(pred != y))


def pruning_curve(model, X_test, y_test, *, thetas=None, knn_draws: int = 0, ax=None):
    """Test error against the fraction of prototypes kept by θ filtering
    (:func:`jaxnn.prune`; paper 001 Fig. 2).

    For each θ the model keeps :func:`jaxnn.prune_indices` (model, θ) — its
    examples of largest |α| — and is scored on ``(X_test, y_test)``; x is the
    fraction of the m training examples kept (⌈θm⌉/m for two classes, up to
    C⌈θm⌉/m with C classes), y the test error (1 − accuracy; multilabel: the
    Hamming risk).  θ keeping fewer than k examples are skipped.  With
    ``knn_draws`` > 0, the paper's baseline is drawn too: plain k-NN on a
    uniform random sample of the same size (:func:`jaxnn.knn_subsample`,
    mean ± standard deviation over seeds 0 … ``knn_draws`` − 1).

    Args:
      model: a fitted :class:`jaxnn.Model`.
      X_test, y_test: held-out data.
      thetas: θ values in (0, 1]; None: :data:`DEFAULT_THETAS` (0.05 … 1).
      knn_draws: random samples per θ of the k-NN baseline (0: none).
      ax: the matplotlib Axes to draw on; None: a new figure.

    Returns:
      The matplotlib Axes; its first line holds the (fraction, error) points.

    Raises:
      ValueError: a θ outside (0, 1], or no θ keeping at least k examples.
    """
    model = _check_model(model)
    _check_ax(ax)
    thetas = DEFAULT_THETAS if thetas is None else thetas
    thetas = sorted({float(t) for t in np.atleast_1d(np.asarray(thetas, dtype=np.float64))})
    if not thetas:
        raise ValueError("pruning_curve needs at least one theta")
    knn_draws = _check_int(knn_draws, "knn_draws", 0)
    m = model.X.shape[0]
    sizes = [prune_indices(model, t).size for t in thetas]  # checks every θ before any work
    runs = [(t, s) for t, s in zip(thetas, sizes) if s >= model.k]
    if not runs:
        raise ValueError(f"pruning_curve: every theta keeps fewer than k={model.k} of the {m} examples; "
                         f"use thetas of at least {model.k / m:.3g}")
    frac = np.array([s / m for _, s in runs])
    error = np.array([_error(prune(model, t), X_test, y_test) for t, _ in runs])

    ax = _axes(ax)
    label = f"{_name(model.algorithm)}, pruned" if model.algorithm is not None else "pruned"
    ax.plot(frac, error, marker="o", color="tab:blue", label=label)
    if knn_draws:
        P = _searched_points(model)  # the sample votes under the model's own metric
        Yt = np.asarray(model.Y) > 0
        y_train = Yt.astype(np.int64) if model.multilabel else np.asarray(model.classes)[Yt.argmax(axis=1)]

        def sample(seed, size):
            drawn = knn_subsample(P, y_train, 1.0, seed, k=model.k, size=size, loss=model.loss)
            return dataclasses.replace(drawn, transform=model.transform)

        errs = np.array([[_error(sample(seed, s), X_test, y_test) for seed in range(knn_draws)] for _, s in runs])
        ax.errorbar(frac, errs.mean(axis=1), yerr=errs.std(axis=1) if knn_draws > 1 else None, marker="s",
                    ms=4, capsize=3, color="tab:gray", ls="--", label=f"k-NN on a random sample ({knn_draws} draws)")
    full = error[-1] if runs[-1][1] == m else _error(model, X_test, y_test)
    ax.axhline(full, color="k", ls=":", lw=1, label=f"all {m} examples: {full:.3f}")
    ax.set_xlabel("fraction of prototypes kept")
    ax.set_ylabel("test Hamming risk" if model.multilabel else "test error")
    ax.set_xlim(0.0, 1.02)
    ax.set_title(f"θ filtering, k = {model.k}, {np.asarray(y_test).shape[0]} test points", fontsize=10)
    ax.legend(loc="best", fontsize=8)
    return ax
