"""The leverages a fit hands its rule, beside boosting's own: the examples no
step reached take their class's leverage (:func:`unreached_leverage`), and
the leverages shrink toward one common value (:func:`shrunk_leverage`).
Host NumPy passes placed where α is — or, for an α of at least
:data:`DEVICE_MIN_ELEMENTS` on an accelerator, one jitted pass there (α
would cross the bus twice: 4·10⁸ bytes each way at 10⁶ × 100);
:func:`jaxnn.fit` applies both, and :func:`jaxnn.select` scores its
candidates with the same rule."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import platforms

__all__ = ["shrunk_leverage", "unreached_leverage", "DEVICE_MIN_ELEMENTS"]

#: an α (m, C) of at least this many entries on an accelerator is filled and
#: shrunk there; smaller ones, and any on the host, by NumPy (no program
#: compiled per (m, C))
DEVICE_MIN_ELEMENTS = 1 << 22


def _on_device(alpha) -> bool:
    """Whether α is large and whole on one accelerator device."""
    return (isinstance(alpha, jax.Array) and alpha.size >= DEVICE_MIN_ELEMENTS and len(alpha.devices()) == 1
            and not platforms.on_host(alpha))


def unreached_leverage(alpha, Y, neighbors, weights=None):
    """α (m, C) with the rows of the examples that are no example's neighbour
    in ``neighbors`` — the (m, k) training graph boosting ran on (n_j = 0;
    with sample ``weights`` (m,), no neighbour of positive weight) —
    set to a leverage of their class: for each class c, the mean α_jc of the
    examples that are someone's neighbour (n_j > 0) and share the example's
    label sign y_jc, floored at 0 (0 where there are none).

    Boosting's step for example j is computed from the examples whose
    neighbour j is: with none, j is never leveraged and keeps α = 0 — yet
    j can be a query's neighbour, whose score would then ignore it.  Filled
    with the mean of its class-sign (docs/guide/posteriors.md), an
    unreached example votes for its label like a typical reached one, and at
    k = 1 with every α > 0 the rule is exactly 1-NN.  Examples that were
    reached keep their α.  Computed on the host (masked column sums, the
    unreached rows written into one copy of α; the answer placed as
    ``alpha`` is: its devices and sharding), α itself when every example
    was reached; deterministic.  ``Y`` may be on the host or a device.
    :func:`jaxnn.ensemble.fit_split` is to apply it to each block's α and
    graph, as :func:`fit` does."""
    nb = np.asarray(neighbors)
    per_edge = None if weights is None else np.repeat(np.asarray(weights, np.float64), nb.shape[1])
    reached = np.bincount(nb.ravel(), weights=per_edge, minlength=alpha.shape[0])[: alpha.shape[0]] > 0
    if reached.all():
        return alpha
    if _on_device(alpha):
        device = next(iter(alpha.devices()))
        return _filled(alpha, jax.device_put(np.asarray(Y) > 0, device), jax.device_put(reached, device))
    # on the host: O(mC) masked sums that would otherwise compile a program per (m, C)
    a, positive, r = np.asarray(alpha), np.asarray(Y) > 0, reached[:, None]
    unreached = np.flatnonzero(~reached)

    def group_mean(group):  # (C,): mean α over the reached examples of each column's group
        w = group & r
        n = np.count_nonzero(w, axis=0)
        return np.where(n > 0, np.sum(a, axis=0, where=w, dtype=np.float64) / np.maximum(n, 1), 0.0)

    fill = np.where(positive[unreached], group_mean(positive), group_mean(~positive))
    out = a.copy()
    out[unreached] = np.maximum(fill, 0).astype(a.dtype)
    return _placed_like(alpha, out)


@jax.jit
def _filled(alpha, positive, reached):
    """:func:`unreached_leverage` on the device: the class-sign means as
    (1, m)·(m, C) products (cuBLAS sums in a fixed order: deterministic),
    the counts as integer sums."""
    r = reached[:, None]

    def group_mean(group):
        w = group & r
        n = jnp.sum(w, axis=0, dtype=jnp.int32)
        total = jnp.matmul(jnp.ones((1, alpha.shape[0]), alpha.dtype), jnp.where(w, alpha, 0),
                           precision=jax.lax.Precision.HIGHEST)[0]
        return jnp.where(n > 0, total / jnp.maximum(n, 1).astype(alpha.dtype), 0)

    fill = jnp.where(positive, group_mean(positive)[None, :], group_mean(~positive)[None, :])
    return jnp.where(r, alpha, jnp.maximum(fill, 0).astype(alpha.dtype))


def shrunk_leverage(alpha, shrinkage: float, common: float):
    """α (m, C) shrunk toward one common leverage ā: (1 − s)·α + s·ā for
    s = ``shrinkage`` ∈ [0, 1], ā = ``common`` > 0 — the rule between
    boosting's (s = 0) and the plain k-NN vote (s = 1: every α alike, H the
    label sums scaled by ā).  :func:`jaxnn.fit` chooses s and ā on
    held-out data (:func:`jaxnn._src.calibration.fit_shrinkage`).  Computed
    on the host, placed as ``alpha`` is; α itself for s = 0."""
    if shrinkage == 0:
        return alpha
    if _on_device(alpha):
        return _shrunk(alpha, jnp.asarray(shrinkage, alpha.dtype), jnp.asarray(common, alpha.dtype))
    a = np.asarray(alpha)
    return _placed_like(alpha, ((1.0 - shrinkage) * a.astype(np.float64) + shrinkage * common).astype(a.dtype))


@jax.jit
def _shrunk(alpha, s, common):
    return (1 - s) * alpha + s * common


def _placed_like(alpha, values: np.ndarray):
    """Host ``values`` on ``alpha``'s devices, with its sharding (NumPy for a NumPy α)."""
    return jax.device_put(values, alpha.sharding) if isinstance(alpha, jax.Array) else values
