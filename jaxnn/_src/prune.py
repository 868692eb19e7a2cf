"""Prototype filtering (paper 001 §4.1): keep the examples with the largest |α|.

A leveraged k-NN rule learns how much each training example should vote; the
most relevant prototypes get large |α_jc|, the least accurate ones (those in
the overlap between classes) small ones.  Keeping only the fraction θ with
the largest |α| gives a smaller, faster classifier whose test error stays
close to — on noisy data often below — that of the full rule, and far below
that of plain k-NN on a random sample of the same size (paper 001 Fig. 2).

Selection rule of :func:`prune`: for each class c, rank the m examples by
|α_jc| (ties → lower index) and take the top ⌈θ m⌉; an example is **kept if
it is in the top set of at least one class**.  For two classes the two α
columns of GNNB/UNN/N³ coincide, so exactly ⌈θ m⌉ examples are kept; with
C > 2 classes the union holds between ⌈θ m⌉ and min(m, C ⌈θ m⌉) examples.
Kept examples keep their α (no refit) and their original order, so θ = 1
returns the model unchanged.

Paper 001 sets θ = T/m, the number of boosting rounds, with the greedy
chooser (examples never leveraged keep α = 0); :func:`prune` is the post-hoc
variant: fit with all m rounds, then keep the largest |α|.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import losses as losses_mod
from jaxnn._src.checks import check_integer as _check_int
from jaxnn._src.inputs import as_points, compute_dtype, encode_labels, training_points
from jaxnn._src.model import Model
from jaxnn._src.progress import logger

__all__ = ["prune", "prune_indices", "knn_subsample"]


def _check_theta(theta) -> float:
    if isinstance(theta, bool) or not isinstance(theta, (int, float, np.integer, np.floating)):
        raise TypeError(f"theta must be a number in (0, 1], got {type(theta).__name__}")
    value = float(theta)
    if not (math.isfinite(value) and 0.0 < value <= 1.0):
        raise ValueError(f"theta must lie in (0, 1], got {theta!r}")
    return value


def _n_keep(theta: float, m: int) -> int:
    # ⌈θ m⌉, robust to θ·m landing a hair above an integer (0.3·10 = 3.0000000000000004)
    return max(1, min(m, math.ceil(round(theta * m, 9))))


def prune_indices(model: Model, theta) -> np.ndarray:
    """Sorted indices of the training examples :func:`prune` keeps.

    An example j is kept iff for some class c it is among the ⌈θ m⌉ largest
    |α_jc| (ties → lower index).
    """
    if not isinstance(model, Model):
        raise TypeError(f"expected a jaxnn Model (from jaxnn.fit), got {type(model).__name__}")
    theta = _check_theta(theta)
    A = np.abs(np.asarray(model.alpha, dtype=np.float64))
    m = A.shape[0]
    n = _n_keep(theta, m)
    if n == m:
        return np.arange(m)
    keep = np.zeros(m, dtype=bool)
    for c in range(A.shape[1]):
        keep[np.argsort(-A[:, c], kind="stable")[:n]] = True
    return np.nonzero(keep)[0]


def prune(model: Model, theta) -> Model:
    """Prototype filtering: the model restricted to the examples with the
    largest |α| per class (see :func:`prune_indices`).

    Args:
      model: a fitted :class:`jaxnn.Model`.
      theta: θ ∈ (0, 1]: each class column keeps its ⌈θm⌉ examples of
        largest |α| (ranked over all m examples, not within the class), and
        the model keeps their union — so between ⌈θm⌉ and m rows, and a
        small class may keep none of its own examples.

    Returns:
      A :class:`jaxnn.Model` with the kept rows of ``X``, ``Y`` and ``alpha``
      (original order); every other field (classes, k, loss, algorithm,
      trace, posterior settings…) is unchanged.
      θ = 1 returns ``model`` itself.

    Raises:
      ValueError: θ outside (0, 1], or fewer than k examples kept.
    """
    idx = prune_indices(model, theta)
    m = model.alpha.shape[0]
    if idx.size == m:
        return model
    if idx.size < model.k:
        raise ValueError(
            f"theta={theta} keeps {idx.size} examples, fewer than k={model.k}: "
            f"raise theta to at least {model.k / m:.3g}"
        )
    # a class (a label's positives or negatives) may lose every prototype: |α| is ranked over all examples
    _warn_if_classes_lost(np.asarray(model.Y)[idx] > 0, model.classes, model.multilabel,
                          f"prune: theta={theta} keeps", "raise theta")
    alpha, X, Y = _take_rows((model.alpha, model.X, model.Y), jnp.asarray(idx, jnp.int32))
    return dataclasses.replace(model, alpha=alpha, X=X, Y=Y)


def _warn_if_classes_lost(kept: np.ndarray, classes: tuple, multilabel: bool, what: str, fix: str) -> None:
    """Warn (``jaxnn`` logger) when the kept examples' (n, C) positive flags
    ``kept`` hold no example of a class — or, multilabel, only positive or
    only negative examples of a label — which the smaller model then cannot
    predict (or only votes one way on)."""
    if not multilabel:
        lost = [np.asarray(classes)[c].item() for c in np.flatnonzero(~kept.any(axis=0))]  # plain values to print
        if lost:
            logger.warning("%s no example of class(es) %s, which the model can no longer predict; %s",
                           what, ", ".join(map(repr, lost)), fix)
        return
    one_sided = np.flatnonzero(kept.all(axis=0) | ~kept.any(axis=0))
    if one_sided.size:
        logger.warning("%s only positive or only negative examples of label(s) %s, whose votes then all have one "
                       "sign; %s", what, ", ".join(map(str, one_sided)), fix)


@jax.jit
def _take_rows(arrays, idx):
    """The rows idx (sorted, in range) of each array: one program per kept
    size, rather than one per indexing operation."""
    return tuple(a.at[idx].get(mode="promise_in_bounds", unique_indices=True, indices_are_sorted=True) for a in arrays)


def knn_subsample(X, y, theta, seed: int = 0, *, k: int = 10, size=None, loss="logistic") -> Model:
    """Plain k-NN on a uniform random sample — paper 001's baseline for :func:`prune`.

    Draws ⌈θ m⌉ training examples (or ``size`` of them, e.g. the size of a
    pruned model) without replacement and returns them as a :class:`jaxnn.Model`
    with α ≡ 1, i.e. the unweighted vote H_c(x) = Σ_{j∈NN_k(x)} y_jc:
    ``jaxnn.predict(knn_subsample(X, y, 0.2, seed), X_test)``.
    ``predict_proba`` returns the k-NN vote fractions (``posterior_mix=1``);
    ``algorithm`` is None and ``rounds`` 0.  ``loss`` is stored as is.

    Args:
      X, y: training data as in :func:`jaxnn.fit`.
      theta: θ ∈ (0, 1], fraction of examples drawn.
      seed: seed of the draw.
      k: neighbours (≤ sample size).
      size: explicit sample size in [k, m], overrides θ.
    """
    Xa = as_points(X)
    m = Xa.shape[0]
    classes, Y_np, multilabel = encode_labels(y, m)
    theta = _check_theta(theta)
    seed = _check_int(seed, "seed", low=0)
    k = _check_int(k, "k", low=1)
    n = _n_keep(theta, m) if size is None else _check_int(size, "size", low=1)
    if n > m:
        raise ValueError(f"size must be <= the number of training points ({m}), got {size}")
    if n < k:
        raise ValueError(f"the sample holds {n} examples, fewer than k={k}")
    idx = np.sort(np.random.default_rng(seed).choice(m, size=n, replace=False))
    _warn_if_classes_lost(Y_np[idx] > 0, classes, multilabel, f"knn_subsample: the sample of {n} holds",
                          "draw a larger sample (theta or size) or another seed")
    dtype = compute_dtype(Xa)
    Y = jnp.asarray(Y_np[idx], dtype=dtype)
    Xj, origin = training_points(Xa[idx], dtype)
    return Model(
        jnp.ones(Y.shape, dtype), Xj, Y, None, classes, k,
        losses_mod.get(loss), None, multilabel, posterior_mix=1.0, rounds=0, origin=origin,
    )
