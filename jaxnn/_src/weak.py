"""The weak hypotheses of ULS (paper 004, Algorithm 1): how each kind is
built on the training points and how it scores query points.

Three kinds, each a family of functions h_t : X → ℝ whose edges
Σ_i s_i w_i y_ic h_t(o_i) (eq. 69's weights w, sample weights s) choose the
next step of :func:`jaxnn._src.uls.uls`:

* ``"knn"`` — paper 001's hypotheses: one per training example j,
  h_j(x) = y_jc·1[j ∈ NN_k(x)] (self excluded on the training points).  A
  step on j moves the margins of the examples whose neighbour lists hold j,
  its inverse neighbours (:func:`inverse_lists`); a query scores
  H_c(x) = Σ_{j∈NN_k(x)} α_jc y_jc (:func:`knn_scores`).
* ``"linear"`` — the coordinates of the standardised features and a bias,
  z(x) = ((x − mean)/std, 1) (constant features read 0, :func:`standardise`,
  :func:`linear_features`); H_c(x) = z(x)·β_c.
* ``"rules"`` — §7's "if monomial then ±1 else ∓1": literals x_f ≤ θ and
  x_f > θ over up to :data:`MAX_THRESHOLDS` quantile thresholds per feature
  (:func:`literals`), a rule of at most l literals is h(x) = 2·1[all hold] − 1
  ∈ {−1, +1} (its sign, "±1 or ∓1", lies in α's).  :func:`grow_rules`
  grows one rule per class for the current weights, all candidate literals
  scored by one matmul; :func:`rule_values` evaluates stored rules.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import programs

__all__ = ["KINDS", "MAX_THRESHOLDS", "inverse_lists", "knn_scores", "standardise", "linear_features", "literals",
           "literal_matrix", "grow_rules", "rule_values"]

#: the weak-hypothesis kinds of :func:`jaxnn.uls`
KINDS = ("knn", "linear", "rules")

#: thresholds per feature of the rules' literals (quantiles of its values)
MAX_THRESHOLDS = 32

#: a literal must raise a rule's |edge| by this relative amount to join it
#: (float round-off of equal edges does not grow a rule)
GROWTH_TOLERANCE = 1e-6

#: candidate literals whose |edge| lie within this relative distance of the
#: largest tie: the first (lowest index) of them is taken
TIE_FLOAT64, TIE_FLOAT32 = 1e-9, 1e-5


# ---------------------------------------------------------------- knn
def inverse_lists(nb: np.ndarray, m: int) -> np.ndarray:
    """(m, P) int32: row j lists the examples i with j ∈ NN_k(i) (ascending),
    padded with the sentinel m; P = the largest in-degree rounded up to a
    power of two (≥ 8)."""
    nb = np.asarray(nb)
    rows = np.repeat(np.arange(nb.shape[0]), nb.shape[1])
    cols = nb.reshape(-1)
    order = np.lexsort((rows, cols))
    rows, cols = rows[order], cols[order]
    counts = np.bincount(cols, minlength=m)
    P = max(8, 1 << (max(int(counts.max()), 1) - 1).bit_length())  # a power of two: graphs share programs
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(rows.size) - starts[cols]
    inv = np.full((m, P), m, np.int32)
    inv[cols, slot] = rows
    return inv


@programs.jit()
def knn_scores(alpha, Y, nb):
    """H (n, C) = Σ_{j∈nb[i]} α_jc y_jc for (m, C) α and labels, (n, k) neighbours."""
    return jnp.sum((alpha * Y.astype(alpha.dtype))[nb], axis=1)


# ---------------------------------------------------------------- linear
def standardise(X: np.ndarray):
    """(mean (d,), scale (d,)) of the training points: scale = 1/std, 0 for a
    constant feature (which then reads 0)."""
    X = np.asarray(X, np.float64)
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    scale = np.where(std > 0, 1.0 / np.where(std > 0, std, 1.0), 0.0)
    return mean, scale


@programs.jit()
def linear_features(X, mean, scale):
    """z(x) (n, d + 1): the standardised features, then the bias 1 (one
    compiled program, not one per operation when called eagerly)."""
    Z = (X - mean) * scale
    return jnp.concatenate([Z, jnp.ones((Z.shape[0], 1), Z.dtype)], axis=1)


# ---------------------------------------------------------------- rules
def literals(X: np.ndarray, max_thresholds: int = MAX_THRESHOLDS):
    """The candidate literals of the training points X (m, d): (feature (L,)
    int32, threshold (L,), greater (L,) bool), literal l reading
    x_f > θ if greater else x_f ≤ θ.  Thresholds per feature: the midpoints
    between consecutive distinct values when there are at most
    ``max_thresholds + 1`` of them, else midpoints at ``max_thresholds``
    evenly spaced quantiles; a constant feature has none."""
    X = np.asarray(X, np.float64)
    feats, thr = [], []
    for f in range(X.shape[1]):
        values = np.unique(X[:, f])
        if values.size < 2:
            continue
        if values.size > max_thresholds + 1:
            q = np.quantile(X[:, f], np.linspace(0, 1, max_thresholds + 2)[1:-1])
            lo = values[np.clip(np.searchsorted(values, q, side="right") - 1, 0, values.size - 2)]
            hi = values[np.searchsorted(values, lo, side="right")]
            cut = np.unique(0.5 * (lo + hi))
        else:
            cut = 0.5 * (values[:-1] + values[1:])
        feats.append(np.full(cut.size, f, np.int32))
        thr.append(cut)
    if not feats:  # every feature constant: the empty rule (a bias) alone
        return np.zeros(0, np.int32), np.zeros(0), np.zeros(0, bool)
    feats, thr = np.concatenate(feats), np.concatenate(thr)
    L = feats.size
    return (np.concatenate([feats, feats]), np.concatenate([thr, thr]),
            np.concatenate([np.zeros(L, bool), np.ones(L, bool)]))


@programs.jit()
def literal_matrix(X, feature, threshold, greater):
    """(n, L) in X's dtype: 1 where literal l holds for row i, else 0."""
    x = X[:, feature]
    return jnp.where(greater, x > threshold, x <= threshold).astype(X.dtype)


def grow_rules(Lmat, v, max_literals: int):
    """One rule per class, grown greedily for the signed weights v (m, C) =
    s_i w_ic y_ic: start from the empty monomial (h ≡ 1, edge Σ_i v_ic) and
    add, while fewer than ``max_literals`` are in, the literal whose rule has
    the largest |edge| (the first of those tied to round-off) Σ_i v_ic h(o_i) = 2 Σ_{monomial} v_ic − Σ_i v_ic, if it
    raises |edge| (relative :data:`GROWTH_TOLERANCE`).  Every candidate is
    scored at once: Lmatᵀ (v ⊙ monomial), (L, C).

    Returns (lits (C, max_literals) int32, −1 where unused; h (m, C) ±1 the
    rules' values on the training points)."""
    m, C = v.shape
    tie = TIE_FLOAT64 if v.dtype == jnp.float64 else TIE_FLOAT32
    total = jnp.sum(v, axis=0)
    inside = jnp.ones((m, C), v.dtype)
    best = jnp.abs(total)
    growing = jnp.ones((C,), bool)
    lits = []
    for _ in range(max_literals):
        cand = jnp.abs(2.0 * (Lmat.T @ (v * inside)) - total)  # (L, C)
        # the first of the literals within round-off of the largest |edge|: a literal and its
        # complement tie exactly on the empty rule, and summation order must not decide
        top = jnp.max(cand, axis=0)
        pick = jnp.argmax(cand >= top * (1 - tie), axis=0).astype(jnp.int32)
        value = jnp.take_along_axis(cand, pick[None], axis=0)[0]
        take = growing & (value > best * (1 + GROWTH_TOLERANCE))
        inside = jnp.where(take, inside * Lmat[:, pick], inside)
        best = jnp.where(take, value, best)
        lits.append(jnp.where(take, pick, -1))
        growing = take
    lits = jnp.stack(lits, axis=1) if lits else jnp.zeros((C, 0), jnp.int32)
    return lits, 2.0 * inside - 1.0


@programs.jit()
def rule_values(X, feature, threshold, greater):
    """h (n, T, C) ±1 of T·C stored rules on points X (n, d): ``feature``
    (T, C, l) int (−1: no literal), ``threshold`` (T, C, l), ``greater``
    (T, C, l) bool."""
    used = feature >= 0
    x = X[:, jnp.maximum(feature, 0)]  # (n, T, C, l)
    holds = jnp.where(greater, x > threshold, x <= threshold) | ~used
    return 2.0 * jnp.all(holds, axis=-1).astype(X.dtype) - 1.0
