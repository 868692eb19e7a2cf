"""UDT — top-down decision-tree induction with any permissible φ (paper 004, Algorithm 3).

A tree is grown from a single leaf by replacing leaves with stumps.  The stump
of a leaf k′ on a variable v is scored by eq. 104 (paper 004 L836),

    A_φ = (1/b_φ) [ Σ_{children k} |S_k| G(p_k) − |S_k′| G(p_k′) ],
    G(p) = Σ_c (−φ(p_c)),

with one column per class: p_kc is the fraction of leaf k's examples of class c
(multilabel: of label c).  With φ_B (``"squared"``) Σ_c (−φ_B(p_c)) =
1 − Σ_c p_c² is CART's (multiclass) Gini index; with φ_Q (``"logistic"``) it
is, for two classes, twice the entropy of C4.5 (the same argmin), but for
three or more classes Σ_c H₂(p_c), the sum of the one-vs-rest binary
entropies, which is *not* the multiclass entropy −Σ_c p_c log p_c of
scikit-learn's ``criterion="entropy"`` (their splits may differ there);
φ_M (``"matsushita"``) is Kearns–Mansour's criterion.  Any permissible φ of
:mod:`jaxnn.losses` (``phi_mu(μ)``, ``phi_power(v)``, ``from_phi``) works.

Growth (one jitted program per level, every node of the level at once)
---------------------------------------------------------------------
Each feature's values are sorted once.  The training rows are kept, per
feature, in an order sorted by (leaf, value): every leaf is a contiguous
segment of positions, the same in every feature.  A level's program
(:func:`_evaluate`) takes cumulative class counts along these orders, so the
class counts left of every candidate threshold of every leaf and feature are
one subtraction; it scores A_φ for all of them at once and takes each leaf's
argmin (``jax.ops.segment_min`` over the leaf ids).  Splitting
(:func:`_apply`) is a stable partition of each leaf's segment (left rows,
then right rows), found with cumulative sums and one scatter: no sort after
the first.  Rows and leaves are padded to a few sizes, so a fit compiles a
handful of programs and a second fit of the same shapes none.

Candidate thresholds are the midpoints of consecutive distinct values of a
leaf (as scikit-learn, values within 1e-7 count as equal), stored as the
largest float32 not above the float64 midpoint: a float32 point goes left
exactly when it does in scikit-learn's float64 comparison.  ``max_bins``
first bins each feature with more distinct values than that at quantile cut
points (midpoints of the data's percentiles, as scikit-learn's histogram
trees) and searches only those cuts; a split's threshold is then the
midpoint of the training values either side of its cut (so ``max_bins`` at
least the number of distinct values gives the exact tree).

Which leaves are split
----------------------
Without ``max_leaf_nodes`` every leaf whose depth is below ``max_depth``, that
is not pure and that has a split leaving ``min_samples_leaf`` examples on
each side, is split at its least A_φ (as scikit-learn's depth-first
builder: a leaf is split even where its best A_φ is 0, which no split can
beat since −φ is concave).  With ``max_leaf_nodes`` the tree is grown best
first, as scikit-learn's best-first builder: of the current leaves, the one
of least A_φ is split next, until the tree has ``max_leaf_nodes`` leaves.
The candidates of a best-first round are still scored by the level program,
several leaves at once.

Ties: among splits of equal A_φ (float32), the lowest feature index wins,
then the lowest threshold; among leaves of equal A_φ, the one created first.
scikit-learn breaks ties by a random order of the features
(``random_state``), so where two splits tie the two trees may differ.

Leaves (eq. 106)
----------------
``leaves="posterior"``: the leaf's class frequencies p_k (the scores are
p_k, and the model's posterior is p_k as it is); ``leaves="link"`` (an
addition to the issue's options): ∇φ(p_k), where ∇φ is infinite (p = 0 or 1
for φ_Q, φ_M) of p clipped to [ε, 1 − ε], ε = :data:`LINK_EPSILON`;
``leaves="leveraged"``: the linearised tree of the proof of Theorem 4 (L857–
869).  Every node t carries the constant feature h_t = 1 and the leveraging
coefficient α_t = ∇φ(p_t) − Σ_{s ∈ path(t) \\ {t}} α_s h_s (eq. 70 solved
exactly on the node's examples), i.e. α_root = ∇φ(p_root) and α_t =
∇φ(p_t) − ∇φ(p_parent(t)); a point's score is the sum of α along its path,
which is ∇φ(p_k) at its leaf k, and the tree's surrogate risk is
Σ_i ψ_φ(y_i H(x_i)) = −m a_φ/b_φ + Σ_k |S_k| (−φ(p_k))/b_φ, a_φ = −φ(0).
"""

from __future__ import annotations

import dataclasses
import heapq
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import losses as losses_mod
from jaxnn._src import programs
from jaxnn._src.family import FamilyModel, held_out_split, held_out_temperature
from jaxnn._src.family import scores as family_scores
from jaxnn._src.inputs import as_points, encode_labels
from jaxnn._src.params import FAMILY_POSTERIORS, LEAVES, check
from jaxnn._src.shared_sizes import shared_rows, to_device

__all__ = ["UDTModel", "udt", "LEAVES", "LINK_EPSILON", "binning_cuts"]

#: where ∇φ(p) is infinite (p ∈ {0, 1} for φ_Q, φ_M), ∇φ(clip(p, ε, 1 − ε))
LINK_EPSILON = 1e-6

#: values of a feature closer than this are one value (scikit-learn's FEATURE_THRESHOLD)
FEATURE_THRESHOLD = 1e-7

# the leaf id of padding rows (beyond every padded number of leaves)
_NO_LEAF = 2**30


@dataclasses.dataclass(frozen=True)
class UDTModel(FamilyModel):
    """A decision tree grown by UDT (paper 004, Algorithm 3).

    Node arrays (N nodes, root 0, in pre-order: a node's left subtree follows
    it, then its right subtree):

    Attributes:
      feature: (N,) int32, the split variable of an internal node, −1 at a leaf.
      threshold: (N,) float32: x goes left when x[feature] <= threshold.
      left, right: (N,) int32 children (a leaf: itself).
      value: (N, C) float32, the node's value: p for ``"posterior"``, ∇φ(p)
        for ``"link"`` and ``"leveraged"`` (whose scores, α's path sums,
        equal it).
      proportions: (N, C) float32, p: the fraction of the node's training
        examples in each class (label).
      alpha: (N, C) float32, the leveraging coefficients of the linearised
        tree (h_t = 1): α's sum along the path to a node is ∇φ(p) there.
      n_samples: (N,) int32 training examples reaching each node.
      leaves: ``"posterior"``, ``"link"`` or ``"leveraged"``.
      depth: the depth of the deepest leaf (root: 0).
    """

    feature: np.ndarray = None
    threshold: np.ndarray = None
    left: np.ndarray = None
    right: np.ndarray = None
    value: np.ndarray = None
    proportions: np.ndarray = None
    alpha: np.ndarray = None
    n_samples: np.ndarray = None
    leaves: str = "posterior"
    depth: int = 0

    family: ClassVar[str] = "udt"

    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    @property
    def n_leaves(self) -> int:
        return int(np.sum(self.feature < 0))

    def scores(self, X: jax.Array) -> jax.Array:
        """H(x) (n, C): the value of the leaf each row of X (n, d) reaches, or
        for ``"leveraged"`` the sum of α along its path (a descent of
        ``depth`` steps; node arrays padded to a power of two)."""
        N = self.n_nodes
        size = _pow2(N)
        pad = size - N
        feature = np.pad(np.asarray(self.feature, np.int32), (0, pad), constant_values=-1)
        threshold = np.pad(np.asarray(self.threshold, np.float32), (0, pad))
        idx = np.arange(N, size, dtype=np.int32)
        left = np.concatenate([np.asarray(self.left, np.int32), idx])
        right = np.concatenate([np.asarray(self.right, np.int32), idx])
        path_sum = self.leaves == "leveraged"
        table = np.pad(np.asarray(self.alpha if path_sum else self.value, np.float32), ((0, pad), (0, 0)))
        return _descend(X, feature, threshold, left, right, table, np.int32(self.depth), path_sum=path_sum)

    def posterior(self, H: jax.Array) -> jax.Array:
        """p̂ (n, C): the scores themselves for ``leaves="posterior"`` (the
        leaves' class frequencies), else the loss's link ∇φ⁻¹(H)."""
        if self.leaves == "posterior":
            return H
        return self.loss.posterior(H)

    def logits(self, H: jax.Array) -> jax.Array:
        """S = 2H − 1 for ``leaves="posterior"`` (> 0 where p > 1/2), else H (∇φ(p))."""
        return _doubled_less_one(H) if self.leaves == "posterior" else H


@programs.jit()
def _doubled_less_one(H):
    """2H − 1 as one program (eagerly, two)."""
    return 2.0 * H - 1.0


@programs.jit(static_argnames=("path_sum",))
def _descend(X, feature, threshold, left, right, table, depth, *, path_sum: bool):
    """Each row of X (n, d) down the tree for ``depth`` steps: the table's row
    at its leaf, or the sum of the table's rows along its path."""
    n = X.shape[0]

    def step(_, state):
        node, acc = state
        f = feature[node]
        x = jnp.take_along_axis(X, jnp.maximum(f, 0)[:, None], axis=1)[:, 0]
        nxt = jnp.where(x <= threshold[node], left[node], right[node])
        moved = f >= 0
        nxt = jnp.where(moved, nxt, node)
        if path_sum:
            acc = acc + jnp.where(moved[:, None], table[nxt], 0.0)
        return nxt, acc

    node0 = jnp.zeros((n,), jnp.int32)
    acc0 = jnp.broadcast_to(table[0], (n, table.shape[1])) if path_sum else jnp.zeros((n, table.shape[1]), table.dtype)
    node, acc = jax.lax.fori_loop(0, depth, step, (node0, acc0))
    return acc if path_sum else table[node]


# --------------------------------------------------------------------------
# the level programs
# --------------------------------------------------------------------------


def _fractions(counts, n):
    """counts / n, exactly 1 where counts = n: XLA multiplies by a broadcast
    1/n, and 55·(1/55) = 1 − 2⁻²⁴ costs φ_M (infinite slope at 1) 2.4e−4."""
    return jnp.where(counts >= n, 1.0, counts / n)


def _impurity(loss, p):
    """G(p) = Σ_c (−φ(p_c)) over the last axis of p (…, C); p clipped to
    [0, 1] (a quotient of counts may round past 1, where φ_Q is NaN)."""
    phi = jax.vmap(loss.phi)
    p = jnp.clip(p, 0.0, 1.0)
    return -jnp.sum(phi(p.reshape(-1)).reshape(p.shape), axis=-1)


@programs.jit(static_argnames=("loss", "n_leaves", "factor"))
def _evaluate(X, Ypos, P, leaf_of_row, start, count, m, min_leaf, *, loss, n_leaves: int, factor: float):
    """The best split of every leaf, all at once (eq. 104).

    X (M, d) float32, Ypos (M, C) float32 in {0, 1}; P (M, d) int32: per
    feature the rows sorted by (leaf, value) (padding rows at the end);
    leaf_of_row (M,) int32; start, count (S,) int32: each leaf's segment of
    positions; m: the real rows; min_leaf: the fewest rows a side; ``factor``: A_φ's multiplier (2 when Ypos
    is the positive column of two classes, whose other column's impurity is
    the same by φ's symmetry).  Returns per leaf (S,): A_φ of its best
    split (inf: none), feature, rows going left, the values either side of
    the threshold, and the class counts (S, C)."""
    M, d = P.shape
    C = Ypos.shape[1]
    dtype = X.dtype
    pos = jnp.arange(M, dtype=jnp.int32)
    real = pos < m
    leaf_of_pos = jnp.where(real, leaf_of_row[P[:, 0]], _NO_LEAF)
    leaf_c = jnp.minimum(leaf_of_pos, n_leaves - 1)
    totals = jax.ops.segment_sum(Ypos, leaf_of_row, num_segments=n_leaves)  # (S, C); padding rows dropped

    Xv = jnp.take_along_axis(X, P, axis=0)  # (M, d) sorted values
    Yp = Ypos[P]  # (M, d, C)
    cs = jnp.cumsum(Yp, axis=0)
    st = start[leaf_c]  # (M,)
    n_node = count[leaf_c].astype(dtype)
    base = (cs - Yp)[st]  # (M, d, C): the counts before the leaf's segment, per feature
    L = cs - base
    nL = (pos - st + 1).astype(dtype)
    nR = n_node - nL
    R = totals[leaf_c][:, None, :] - L
    Xnext = jnp.concatenate([Xv[1:], Xv[-1:]], axis=0)
    valid = (real & (nL >= min_leaf) & (nR >= min_leaf))[:, None] & (Xnext > Xv + FEATURE_THRESHOLD)
    safe_l = jnp.maximum(nL, 1.0)[:, None, None]
    safe_r = jnp.maximum(nR, 1.0)[:, None, None]
    children = (nL[:, None] * _impurity(loss, _fractions(L, safe_l))
                + nR[:, None] * _impurity(loss, _fractions(R, safe_r)))
    parent = count.astype(dtype) * _impurity(loss, _fractions(totals, jnp.maximum(count, 1).astype(dtype)[:, None]))
    A = (children - parent[leaf_c][:, None]) * (factor / loss.b(dtype))
    A = jnp.where(valid, A, jnp.inf)

    seg = jnp.broadcast_to(leaf_of_pos[:, None], (M, d)).reshape(-1)
    best = jax.ops.segment_min(A.reshape(-1), seg, num_segments=n_leaves)
    key = jnp.arange(d, dtype=jnp.int32)[None, :] * M + pos[:, None]
    hit = (A == best[leaf_c][:, None]) & valid
    key = jnp.where(hit, key, jnp.iinfo(jnp.int32).max).reshape(-1)
    best_key = jax.ops.segment_min(key, seg, num_segments=n_leaves)
    found = jnp.isfinite(best)
    feat = jnp.where(found, best_key // M, 0)
    at = jnp.where(found, best_key % M, 0)
    v = Xv[at, feat]
    v_next = Xv[jnp.minimum(at + 1, M - 1), feat]
    n_left = jnp.where(found, at - start + 1, 0)
    return best, feat.astype(jnp.int32), n_left.astype(jnp.int32), v, v_next, totals


@programs.jit(static_argnames=("n_leaves",))
def _apply(X, P, leaf_of_row, split, feature, threshold, right_id, start, n_left, m, *, n_leaves: int):
    """Split the leaves flagged in ``split`` (S,): rows with x[feature] <=
    threshold stay in the leaf, the others go to the leaf ``right_id``; each
    split leaf's segment of every feature's order becomes its left rows then
    its right rows, in value order (a stable partition: cumulative counts
    and one scatter per feature).  Returns (P, leaf_of_row)."""
    M, d = P.shape
    pos = jnp.arange(M, dtype=jnp.int32)
    real_row = leaf_of_row < n_leaves
    leaf_c = jnp.minimum(leaf_of_row, n_leaves - 1)
    f = feature[leaf_c]
    x = jnp.take_along_axis(X, f[:, None], axis=1)[:, 0]
    moving = real_row & split[leaf_c]
    goes_left = x <= threshold[leaf_c]
    new_leaf = jnp.where(moving & ~goes_left, right_id[leaf_c], leaf_of_row)

    leaf_of_pos = leaf_c[P[:, 0]]
    moving_pos = moving[P[:, 0]]
    st = start[leaf_of_pos]
    nl = n_left[leaf_of_pos]
    lefts = (goes_left[P] & moving[P]).astype(jnp.int32)  # (M, d)
    before = jnp.cumsum(lefts, axis=0) - lefts
    left_before = before - before[st[:, None], jnp.arange(d)[None, :]]
    offset = pos[:, None] - st[:, None]
    new_pos = jnp.where(lefts > 0, st[:, None] + left_before, st[:, None] + nl[:, None] + offset - left_before)
    new_pos = jnp.where(moving_pos[:, None], new_pos, pos[:, None])

    def scatter(np_f, p_f):
        return jnp.zeros_like(p_f).at[np_f].set(p_f, unique_indices=True)

    P_new = jax.vmap(scatter, in_axes=(1, 1), out_axes=1)(new_pos, P)
    return P_new, new_leaf


@programs.jit(static_argnames=("loss",))
def _node_links(p, *, loss):
    """∇φ(p) (…, C), of p clipped to [ε, 1 − ε] where ∇φ(p) is not finite."""
    g = loss.dphi(p)
    clipped = loss.dphi(jnp.clip(p, LINK_EPSILON, 1.0 - LINK_EPSILON))
    return jnp.where(jnp.isfinite(g), g, clipped)


# --------------------------------------------------------------------------
# host side
# --------------------------------------------------------------------------


def _floor_midpoint(v, v_next):
    """The largest float32 not above the float64 midpoint of v < v_next (float32)."""
    mid = np.asarray(v, np.float64) / 2.0 + np.asarray(v_next, np.float64) / 2.0
    t = mid.astype(np.float32)
    t = np.where(t.astype(np.float64) > mid, np.nextafter(t, np.float32(-np.inf)), t)
    return np.maximum(t, np.asarray(v, np.float32)).astype(np.float32)


def binning_cuts(X: np.ndarray, max_bins: int) -> list:
    """Per feature, the float32 cut points of ``max_bins`` bins: all the
    thresholds (:func:`_floor_midpoint` of consecutive distinct values) where
    there are at most ``max_bins`` distinct values, else the midpoints of the
    data's percentiles at (0, 100) in ``max_bins`` steps (scikit-learn's
    histogram binning), distinct, as float32 thresholds."""
    cuts = []
    for j in range(X.shape[1]):
        col = np.asarray(X[:, j], np.float32)
        distinct = np.unique(col)
        if distinct.size <= max_bins:
            c = _floor_midpoint(distinct[:-1], distinct[1:])
        else:
            q = np.linspace(0, 100, max_bins + 1)[1:-1]
            c = np.unique(np.percentile(col.astype(np.float64), q, method="midpoint"))
            c32 = c.astype(np.float32)
            c = np.unique(np.where(c32.astype(np.float64) > c, np.nextafter(c32, np.float32(-np.inf)), c32))
        cuts.append(np.asarray(c, np.float32))
    return cuts


def _pow2(n: int, low: int = 8) -> int:
    return max(low, 1 << (max(1, int(n)) - 1).bit_length())


class _Grower:
    """The level programs driven from the host: leaves as segments, nodes as lists."""

    def __init__(self, X, Ypos, loss, min_leaf, bins=None):
        m, d = X.shape
        self.bins = bins  # None, or per feature (each bin's least value, its greatest) of binned X
        self.m = m
        M = self.rows = shared_rows(m)
        Xp = np.zeros((M, d), np.float32)
        Xp[:m] = X
        order = np.argsort(X, axis=0, kind="stable").astype(np.int32)
        P = np.empty((M, d), np.int32)
        P[:m] = order
        P[m:] = np.arange(m, M, dtype=np.int32)[:, None]
        Yp = np.zeros((M, Ypos.shape[1]), np.float32)
        Yp[:m] = Ypos
        leaf = np.full(M, _NO_LEAF, np.int32)
        leaf[:m] = 0
        # two classes: class 1's column alone (class 0's impurity is the same, φ(p) = φ(1 − p))
        self.binary = Ypos.shape[1] == 2 and bool(np.all(Ypos.sum(1) == 1))
        self.X = to_device(Xp)
        self.Y = to_device(Yp[:, 1:] if self.binary else Yp)
        self.P = to_device(P)
        self.leaf_of_row = to_device(leaf)
        self.loss = loss
        self.min_leaf = int(min_leaf)
        self.start = [0]
        self.count = [m]

    def n_segments(self, leaves: int) -> int:
        """The leaves' padded number: 256·8^j (at most the padded rows), so
        a tree of up to 256 leaves compiles one program of each kind and a
        deep one a few, while a level's answers stay small."""
        S = 256
        while S < leaves:
            S *= 8
        return min(S, max(self.rows, leaves))

    def evaluate(self):
        S = self.n_segments(len(self.start))
        start = np.zeros(S, np.int32)
        count = np.zeros(S, np.int32)
        start[: len(self.start)] = self.start
        count[: len(self.count)] = self.count
        out = _evaluate(self.X, self.Y, self.P, self.leaf_of_row, to_device(start), to_device(count),
                        np.int32(self.m), np.float32(self.min_leaf), loss=self.loss, n_leaves=S,
                        factor=2.0 if self.binary else 1.0)
        best, feat, n_left, v, v_next, totals = (np.asarray(a)[: len(self.start)] for a in out)
        if self.binary:
            totals = np.concatenate([np.asarray(self.count, np.float32)[:, None] - totals, totals], axis=1)
        thr = _floor_midpoint(v, v_next)
        if self.bins is None:
            return best, feat, n_left, thr, thr, totals
        # the model's threshold: the midpoint of the training values either side, as without bins
        ok = np.flatnonzero(np.isfinite(best))
        lo = np.array([self.bins[feat[i]][1][int(v[i])] for i in ok], np.float32)
        hi = np.array([self.bins[feat[i]][0][int(v_next[i])] for i in ok], np.float32)
        thr_model = np.zeros_like(thr)
        thr_model[ok] = _floor_midpoint(lo, hi)
        return best, feat, n_left, thr, thr_model, totals

    def split(self, segs, feats, thrs, n_lefts):
        """Split segments ``segs``; returns the right children's segment ids."""
        k0 = len(self.start)
        S = self.n_segments(k0 + len(segs))
        split = np.zeros(S, bool)
        feature = np.zeros(S, np.int32)
        threshold = np.zeros(S, np.float32)
        right_id = np.zeros(S, np.int32)
        start = np.zeros(S, np.int32)
        n_left = np.zeros(S, np.int32)
        start[:k0] = self.start
        rights = list(range(k0, k0 + len(segs)))
        for s, f, t, nl, r in zip(segs, feats, thrs, n_lefts, rights):
            split[s], feature[s], threshold[s], right_id[s], n_left[s] = True, f, t, r, nl
        self.P, self.leaf_of_row = _apply(self.X, self.P, self.leaf_of_row, to_device(split), to_device(feature),
                                          to_device(threshold), to_device(right_id), to_device(start),
                                          to_device(n_left), np.int32(self.m), n_leaves=S)
        for s, nl in zip(segs, n_lefts):
            st, n = self.start[s], self.count[s]
            self.count[s] = int(nl)
            self.start.append(st + int(nl))
            self.count.append(n - int(nl))
        return rights


def _grow(X, Ypos, loss, max_depth, min_leaf, max_leaf_nodes, bins=None):
    """The tree's nodes as host lists: (parent, depth, counts, n, feature,
    threshold, children) of the nodes kept, root 0."""
    g = _Grower(X, Ypos, loss, min_leaf, bins)
    depth_cap = np.inf if max_depth is None else max_depth
    # per node: segment, depth, A, feature, threshold, n_left, counts, n, children
    seg, depth, A, feat, thr, thr_model, nleft, counts, n, kids = [], [], [], [], [], [], [], [], [], []

    def record(node_segs, node_depths, ev):
        best, f, nl, t, t_model, totals = ev
        for s, dd in zip(node_segs, node_depths):
            seg.append(s)
            depth.append(dd)
            A.append(float(best[s]))
            feat.append(int(f[s]))
            thr.append(np.float32(t[s]))
            thr_model.append(np.float32(t_model[s]))
            nleft.append(int(nl[s]))
            counts.append(totals[s].astype(np.float64))
            n.append(int(g.count[s]))
            kids.append(None)

    record([0], [0], g.evaluate())

    def splittable(k):
        c = counts[k]
        impure = bool(np.any((c > 0) & (c < n[k])))
        return impure and np.isfinite(A[k]) and depth[k] < depth_cap

    def best_first(budget):
        """(nodes split in the best-first order, unexpanded nodes it reaches)."""
        heap = [(A[0], 0)] if splittable(0) else []
        internal, needed = [], []
        while heap and budget > 0:
            _, k = heapq.heappop(heap)
            budget -= 1
            if kids[k] is None:
                needed.append(k)
                continue
            internal.append(k)
            for c in kids[k]:
                if splittable(c):
                    heapq.heappush(heap, (A[c], c))
        return internal, needed

    frontier = [0]
    while True:
        if max_leaf_nodes is None:
            chosen = [k for k in frontier if splittable(k)]
        else:
            _, chosen = best_first(max_leaf_nodes - 1)
        if not chosen:
            break
        rights = g.split([seg[k] for k in chosen], [feat[k] for k in chosen], [thr[k] for k in chosen],
                         [nleft[k] for k in chosen])
        ev = g.evaluate()
        first = len(seg)
        segs, depths = [], []
        for k, r in zip(chosen, rights):
            segs += [seg[k], r]
            depths += [depth[k] + 1, depth[k] + 1]
        for i, k in enumerate(chosen):
            kids[k] = (first + 2 * i, first + 2 * i + 1)
        record(segs, depths, ev)
        frontier = list(range(first, len(seg)))

    if max_leaf_nodes is None:
        internal = {k for k in range(len(seg)) if kids[k] is not None}
    else:
        internal = set(best_first(max_leaf_nodes - 1)[0])

    # pre-order renumbering of the kept nodes
    out = dict(feature=[], threshold=[], left=[], right=[], counts=[], n=[], parent=[], depth=[])
    stack = [(0, -1, None)]  # (old node, new parent, side)
    while stack:
        k, parent, side = stack.pop()
        i = len(out["feature"])
        if parent >= 0:
            out["left" if side == 0 else "right"][parent] = i
        inner = k in internal
        out["feature"].append(feat[k] if inner else -1)
        out["threshold"].append(thr_model[k] if inner else np.float32(0.0))
        out["left"].append(i)
        out["right"].append(i)
        out["counts"].append(counts[k])
        out["n"].append(n[k])
        out["parent"].append(parent)
        out["depth"].append(depth[k])
        if inner:
            stack.append((kids[k][1], i, 1))
            stack.append((kids[k][0], i, 0))
    return out


def udt(X, y, *, loss="squared", max_depth=None, min_samples_leaf=1, max_leaf_nodes=None, leaves="posterior",
        max_bins=None, posterior="auto", seed=0) -> UDTModel:
    """Grow a decision tree by UDT (paper 004, Algorithm 3) with a permissible φ.

    Args:
      X: (m, d) finite real points.
      y: (m,) labels (C ≥ 2 classes), or an (m, C) 0/1 indicator matrix
        (multilabel: label c's p is the fraction of examples that have it).
      loss: a loss of :mod:`jaxnn.losses` with a permissible φ (name or
        :class:`~jaxnn.losses.Loss`): ``"squared"`` φ_B (Gini, CART),
        ``"logistic"`` φ_Q (entropy, C4.5), ``"matsushita"`` φ_M
        (Kearns–Mansour), ``"phi_mu(μ)"``, ``"phi_power(v)"``, a
        ``from_phi`` loss.  A loss given by ψ alone (``"exponential"``) has
        no φ and is refused.
      max_depth: the deepest a leaf may be (root: depth 0), None: no limit.
      min_samples_leaf: the fewest training examples a leaf may have.
      max_leaf_nodes: grow best first (split the leaf of least A_φ, eq. 104)
        up to this many leaves; None: every splittable leaf, level by level.
      leaves: ``"posterior"`` (p_k, eq. 106's estimator), ``"link"``
        (∇φ(p_k)) or ``"leveraged"`` (the linearised tree's α, whose path
        sums are ∇φ(p_k)); see the module's docstring.
      max_bins: search at most this many bins per feature (quantile cuts,
        :func:`binning_cuts`); None: every midpoint of distinct values.
      posterior: ``"auto"``: :func:`jaxnn.predict_proba` gives calibrated
        posteriors (a tree grown on 80 % of each class scores the other
        20 %, whose log loss chooses the temperature T of
        softmax(S/T) with S the leaves' values on the link's scale —
        2p − 1 for ``"posterior"`` leaves, whose 0 and 1 of pure leaves
        would otherwise be certainties; then the tree is grown on all the
        data); ``"link"``: the leaves' posteriors themselves (eq. 106).
        Labels are the same either way.
      seed: the held-out split's random state.

    Returns:
      A :class:`UDTModel`; ``jaxnn.predict`` / ``predict_proba`` /
      ``decision_function`` take it.

    Raises:
      TypeError / ValueError naming the argument: an unknown or φ-less
      loss, max_depth < 1, min_samples_leaf < 1, max_leaf_nodes < 2,
      max_bins < 2, an unknown ``leaves``, NaN or infinite values in X.
    """
    loss_obj = losses_mod.get(loss)
    if loss_obj.phi is None or not loss_obj.balanced:
        raise ValueError(f"loss {loss_obj.name!r} has no permissible φ (it is given by ψ alone): UDT needs one of "
                         "squared, logistic, matsushita, phi_mu(<mu>), phi_power(<v>) or a from_phi loss")
    if max_depth is not None:
        max_depth = check("max_depth", max_depth)
    min_samples_leaf = check("min_samples_leaf", min_samples_leaf)
    if max_leaf_nodes is not None:
        max_leaf_nodes = check("max_leaf_nodes", max_leaf_nodes)
    if max_bins is not None:
        max_bins = check("max_bins", max_bins)
    leaves = check("leaves", leaves)
    posterior = check("posterior", posterior, among=FAMILY_POSTERIORS, where=" for jaxnn.udt")
    seed = check("seed", seed)

    Xa = np.asarray(as_points(X), np.float32)
    classes, Y, multilabel = encode_labels(y, Xa.shape[0])
    Ypos = (np.asarray(Y) > 0).astype(np.float32)

    options = dict(loss_obj=loss_obj, max_depth=max_depth, min_samples_leaf=min_samples_leaf,
                   max_leaf_nodes=max_leaf_nodes, leaves=leaves, max_bins=max_bins)
    temperature = None
    if posterior == "auto":  # T on the held-out rows' scores of a tree grown on the others
        train, held = held_out_split(Y, multilabel, seed)
        if held.size:
            first = _tree(Xa[train], Ypos[train], classes, multilabel, **options)
            temperature = held_out_temperature(first.logits(family_scores(first, Xa[held])), Y[held], multilabel)
    return dataclasses.replace(_tree(Xa, Ypos, classes, multilabel, **options), temperature=temperature)


def _tree(Xa, Ypos, classes, multilabel, *, loss_obj, max_depth, min_samples_leaf, max_leaf_nodes, leaves,
          max_bins) -> UDTModel:
    """The tree UDT grows on points Xa (m, d) float32 with targets Ypos (m, C) 0/1."""
    m, d = Xa.shape
    bins = None
    Xfit = Xa
    if max_bins is not None:  # X as bin numbers: the number of cuts below x
        cuts = binning_cuts(Xa, max_bins)
        codes = np.stack([np.searchsorted(c, Xa[:, j], side="left") for j, c in enumerate(cuts)], axis=1)
        bins = []
        for j, c in enumerate(cuts):
            lo = np.full(c.size + 1, np.inf, np.float32)
            hi = np.full(c.size + 1, -np.inf, np.float32)
            np.minimum.at(lo, codes[:, j], Xa[:, j])
            np.maximum.at(hi, codes[:, j], Xa[:, j])
            bins.append((lo, hi))
        Xfit = codes.astype(np.float32)

    tree = _grow(Xfit, Ypos, loss_obj, max_depth, min_samples_leaf, max_leaf_nodes, bins)

    feature = np.asarray(tree["feature"], np.int32)
    threshold = np.asarray(tree["threshold"], np.float32)
    n_samples = np.asarray(tree["n"], np.int32)
    counts = np.asarray(tree["counts"], np.float64)
    prop = (counts / n_samples[:, None]).astype(np.float32)
    N = feature.shape[0]
    size = _pow2(N)
    links = np.asarray(_node_links(to_device(np.pad(prop, ((0, size - N), (0, 0)), constant_values=0.5)),
                                   loss=loss_obj))[:N].astype(np.float32)
    parent = np.asarray(tree["parent"], np.int64)
    alpha = links.copy()
    alpha[1:] = links[1:] - links[parent[1:]]
    value = prop if leaves == "posterior" else links
    return UDTModel(
        classes=classes, loss=loss_obj, multilabel=multilabel, n_features=d,
        feature=feature, threshold=threshold, left=np.asarray(tree["left"], np.int32),
        right=np.asarray(tree["right"], np.int32), value=value, proportions=prop, alpha=alpha,
        n_samples=n_samples, leaves=leaves, depth=int(max(tree["depth"])),
    )
