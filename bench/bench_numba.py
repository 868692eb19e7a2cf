"""Sequential GNNB in a numba loop vs jaxnn's sequential scan and colored schedule.

The same algorithm — GNNB, logistic loss, ε = 0.5, lazy order (each example
once, index order), one pass — on the synthetic set's exact graph
(m = 10⁵, k = 10, C = 10):

* ``time_numba`` — a plain triple loop compiled by numba (float32, one core);
* ``time_sequential`` — jaxnn's ``boost`` (``jax.lax.scan``, one step per example);
* ``time_colored`` — jaxnn's ``boost_colored`` (one vectorised step per colour
  of the conflict graph: the same result as the sequential algorithm run in
  colour order);
* ``track_colored_over_numba_ratio``, ``track_colored_over_sequential_ratio``
  — time ratios measured interleaved in one process (< 1: colored is faster).

``NumbaGreedyStep`` is the same comparison for the greedy chooser (GNNB*, k = 10,
C = 10, random neighbour arrays of m = 10⁴ / 10⁵ / 10⁶ rows, as
``bench_fit.GreedyStep``): a numba loop with the same branch-8 tournament tree
over |η_j|/n_j, repaired only up to the first ancestor whose maximum did not
change — the native floor of the step, and how it grows with m.
``RandomRows`` times the reads such a step is made of: one random row of an
(m, 10) table, 128 at a time, by numba and by JAX.

``FitFromGraph`` times what a user runs from a given graph —
``jaxnn.fit(X, y, k=10, neighbors=nb, posterior="link", shrinkage=None)``
(the checks, the inverse neighbourhoods, the schedule ``chooser="auto"``
picks, one pass) — against the numba loop with its inverse neighbourhoods
built inside the timing (:func:`_inverse_lists`), on random neighbour arrays
of m rows and C classes, round-robin in one process.

numba is benchmark-only (not a jaxnn dependency): without it every benchmark
here is skipped.  ``setup`` checks each numba loop against jaxnn's α before
timing it.
"""

from __future__ import annotations

import math

import numpy as np

from .bench_fit import GREEDY_C, GREEDY_LONG, GREEDY_M, GREEDY_STEPS, greedy_problem
from .common import (
    K,
    QUICK,
    Benchmark,
    GraphCache,
    block,
    interleaved_best,
    interleaved_medians,
    problem,
    random_neighbors,
    skip_unless,
)

DATASET = "synthetic"
EPSILON = 0.5
SCALE = np.float32(2.0 * (1.0 - EPSILON))  # GNNB's δ = 2(1 − ε)·η/(H*·n_j)


def _gnnb_lazy_logistic(members, counts, Y, passes, scale):
    """α (m, C) of ``passes`` lazy GNNB passes with the logistic loss.

    w(e) = σ(−e)/ln 2, H* = 1/(4 ln 2), δ_c = scale·η_c/(H*·n_j) with
    η_c = Σ_{i∈inv(j)} w(e_ic)·r_ic, r_ic = y_ic·y_jc; scale = 2(1 − ε).
    """
    m, C = Y.shape
    E = np.zeros((m, C), np.float32)
    alpha = np.zeros((m, C), np.float32)
    eta = np.zeros(C, np.float32)
    delta = np.zeros(C, np.float32)
    ln2 = np.float32(math.log(2.0))
    hstar = np.float32(1.0) / (np.float32(4.0) * ln2)
    for _ in range(passes):
        for j in range(m):
            n = counts[j]
            if n == 0:
                continue
            for c in range(C):
                eta[c] = 0.0
            for t in range(n):
                i = members[j, t]
                for c in range(C):
                    eta[c] += Y[i, c] * Y[j, c] / (np.float32(1.0) + np.exp(E[i, c])) / ln2
            for c in range(C):
                delta[c] = scale * eta[c] / (hstar * n)
                alpha[j, c] += delta[c]
            for t in range(n):
                i = members[j, t]
                for c in range(C):
                    E[i, c] += delta[c] * Y[i, c] * Y[j, c]
    return alpha


BRANCH = 8  # children per tree node, as jaxnn._src.maxtree.BRANCH


def _gnnb_greedy_logistic(members, counts, neighbors, Y, steps, scale):
    """α (m, C) after ``steps`` greedy GNNB steps (logistic loss, E0 = 0).

    Per class c a step takes the j with the largest |v_jc|, v = η/n,
    η_jc = Σ_{i∈inv(j)} w(e_ic) y_ic (ties: the smallest j), computes δ_c from
    the edges of inv(j) as :func:`_gnnb_lazy_logistic`, updates those edges and
    adds each member's weight change, scaled by 1/n_q, to v_qc for its k
    neighbours q.  v sits in the leaves of a tournament tree laid out as
    jaxnn's (class-major levels, n_0 = m + 1 rounded up to a multiple of 8,
    each level the maxima of 8 children, |·| above the leaves); after a step's
    leaf updates a node is recomputed only when a child changed, level by level.
    """
    m, C = Y.shape
    k = neighbors.shape[1]
    ln2 = np.float32(math.log(2.0))
    one = np.float32(1.0)
    hstar = one / (np.float32(4.0) * ln2)
    neg_inf = np.float32(-np.inf)
    sizes = [(m + 1 + BRANCH - 1) // BRANCH * BRANCH]
    while sizes[-1] > BRANCH:
        n = sizes[-1] // BRANCH
        sizes.append((n + BRANCH - 1) // BRANCH * BRANCH if n > BRANCH else n)
    L = len(sizes)
    start = np.zeros(L + 1, np.int64)  # level l is tree[start[l]:start[l + 1]], class-major
    for level in range(L):
        start[level + 1] = start[level] + C * sizes[level]
    tree = np.zeros(start[L], np.float32)
    inv_n = np.zeros(m, np.float32)
    for j in range(m):
        inv_n[j] = one / max(counts[j], 1)
    w0 = np.float32(0.5) / ln2  # w(0)
    for t in range(k):  # η, then v = η/n (jaxnn's order of the sums: exact ties break alike)
        for i in range(m):
            q = neighbors[i, t]
            for c in range(C):
                tree[c * sizes[0] + q] += w0 * Y[i, c]
    for c in range(C):
        for q in range(m):
            tree[c * sizes[0] + q] *= inv_n[q]
    for level in range(1, L):
        lower, n = sizes[level - 1], sizes[level]
        for c in range(C):
            for p in range(n):
                best = neg_inf
                if p < lower // BRANCH:
                    for b in range(BRANCH):
                        x = tree[start[level - 1] + c * lower + p * BRANCH + b]
                        best = max(best, abs(x) if level == 1 else x)
                tree[start[level] + c * n + p] = best
    E = np.zeros((m, C), np.float32)
    alpha = np.zeros((m, C), np.float32)
    chosen = np.zeros(C, np.int64)
    delta = np.zeros(C, np.float32)
    touched = np.zeros(C * members.shape[1] * k, np.int64)  # flat positions within a level
    for _ in range(steps):
        for c in range(C):  # walk down from the top: the first child holding the maximum
            node, width, level = 0, sizes[L - 1], L - 1  # the top level: all its nodes
            while level >= 0:
                base = start[level] + c * sizes[level] + node * BRANCH
                best, pick = neg_inf, 0
                for b in range(width):
                    x = abs(tree[base + b]) if level == 0 else tree[base + b]
                    if x > best:
                        best, pick = x, b
                node, width, level = node * BRANCH + pick, BRANCH, level - 1
            chosen[c] = node
        for c in range(C):
            j = chosen[c]
            eta = np.float32(0.0)
            for t in range(counts[j]):
                i = members[j, t]
                eta += Y[i, c] * Y[j, c] / (one + np.exp(E[i, c])) / ln2
            delta[c] = scale * eta / (hstar * max(counts[j], 1))
        n_touched = 0
        for c in range(C):
            j = chosen[c]
            for t in range(counts[j]):
                i = members[j, t]
                e = E[i, c]
                e_new = e + delta[c] * Y[i, c] * Y[j, c]
                E[i, c] = e_new
                dw = (one / (one + np.exp(e_new)) - one / (one + np.exp(e))) / ln2 * Y[i, c]
                for u in range(k):
                    q = neighbors[i, u]
                    tree[c * sizes[0] + q] += dw * inv_n[q]
                    touched[n_touched] = c * sizes[0] + q
                    n_touched += 1
            alpha[j, c] += delta[c]
        for level in range(1, L):  # repair: recompute the parents of changed nodes
            lower, n = sizes[level - 1], sizes[level]
            n_changed = 0
            for x in range(n_touched):
                c = touched[x] // lower
                p = (touched[x] - c * lower) // BRANCH
                best = neg_inf
                for b in range(BRANCH):
                    v = tree[start[level - 1] + c * lower + p * BRANCH + b]
                    best = max(best, abs(v) if level == 1 else v)
                if tree[start[level] + c * n + p] != best:
                    tree[start[level] + c * n + p] = best
                    touched[n_changed] = c * n + p
                    n_changed += 1
            n_touched = n_changed
    return alpha


_KERNELS = {}


def numba_kernel(fn=_gnnb_lazy_logistic):
    """``fn`` compiled by numba (once per process, cached on disk by numba)."""
    if fn not in _KERNELS:
        numba = skip_unless("numba")
        _KERNELS[fn] = numba.njit(cache=True, nogil=True)(fn)
    return _KERNELS[fn]


def check_agrees(alpha_numba, alpha_jax, tol: float, what: str) -> None:
    """AssertionError unless the numba loop's α matches jaxnn's to ``tol``
    (relative max error)."""
    alpha_jax = np.asarray(alpha_jax)
    err = np.max(np.abs(alpha_numba - alpha_jax)) / max(np.max(np.abs(alpha_jax)), 1e-12)
    if not err < tol:
        raise AssertionError(f"{what} disagrees with jaxnn's boost: relative max error {err:.3g}")


class NumbaVsColored(GraphCache, Benchmark):
    """numba sequential loop vs jaxnn sequential scan (plain, and windowed as
    ``fit`` runs it at this size) vs jaxnn colored schedule."""

    def setup(self, cache):
        kernel = numba_kernel()
        p = problem(cache, DATASET)
        self.members = np.asarray(p.members)
        self.counts = np.asarray(p.counts)
        self.Y = np.asarray(p.Y, np.float32)
        self.scale = SCALE
        self.sequential = p.runner("gnnb", "lazy")
        self.colored = p.runner("gnnb", "colored")
        self.windowed = p.runner("gnnb", "windowed")
        self.sequential.compile()
        self.colored.compile()
        self.windowed.compile()
        alpha_numba = kernel(self.members, self.counts, self.Y, 1, self.scale)  # compiles
        check_agrees(alpha_numba, block(self.sequential()).alpha, 1e-2, "numba loop")

    def _numba(self):
        return numba_kernel()(self.members, self.counts, self.Y, 1, self.scale)

    def time_numba(self, cache):
        self._numba()

    def time_sequential(self, cache):
        block(self.sequential())

    def time_colored(self, cache):
        block(self.colored())

    def time_windowed(self, cache):
        block(self.windowed())

    def track_windowed_over_sequential_ratio(self, cache):
        t_windowed, t_sequential = interleaved_best([self.windowed, self.sequential], repeat=3)
        return t_windowed / t_sequential

    track_windowed_over_sequential_ratio.unit = "ratio"

    def track_colored_over_numba_ratio(self, cache):
        t_colored, t_numba = interleaved_best([self.colored, self._numba], repeat=3)
        return t_colored / t_numba

    track_colored_over_numba_ratio.unit = "ratio"

    def track_colored_over_sequential_ratio(self, cache):
        t_colored, t_sequential = interleaved_best([self.colored, self.sequential], repeat=3)
        return t_colored / t_sequential

    track_colored_over_sequential_ratio.unit = "ratio"


#: greedy steps both loops run before the numba loop's α is checked against
#: jaxnn's (a greedy run is a chain of argmaxes: float sums taken in another
#: order split a near-tie differently after a few hundred steps, and the two
#: runs part ways from there — both right; at 50 steps they agree to 1e-7)
GREEDY_CHECK_STEPS = 50


class NumbaGreedyStep(Benchmark):
    """Greedy GNNB steps (k = 10, C = 10, random neighbour arrays of m rows,
    as ``bench_fit.GreedyStep``): a numba loop with jaxnn's tournament tree,
    repaired only up to the first unchanged ancestor
    (:func:`_gnnb_greedy_logistic`), against jaxnn's ``boost``.  Per step =
    (t(GREEDY_LONG) − t(GREEDY_STEPS)) / (GREEDY_LONG − GREEDY_STEPS), the four
    runs sampled round-robin in one process.  How the native step grows from
    m = 10⁴ to 10⁶ (its ~10³ leaf updates a step leave the L2 cache at 10⁶)
    is the floor for how flat any greedy step can stay as m grows."""

    param_names = ["m"]
    params = (GREEDY_M,)

    def setup(self, m):
        kernel = numba_kernel(_gnnb_greedy_logistic)
        p = greedy_problem(m)
        self.args = (np.asarray(p.members), np.asarray(p.counts), p.neighbors, np.asarray(p.Y, np.float32))
        self.scale = SCALE
        alpha_numba = kernel(*self.args, GREEDY_CHECK_STEPS, self.scale)  # compiles
        check_agrees(alpha_numba, block(p.runner("gnnb", "greedy", rounds=GREEDY_CHECK_STEPS)()).alpha, 1e-4,
                     "numba greedy loop")
        self.short = p.runner("gnnb", "greedy", rounds=GREEDY_STEPS)
        self.long = p.runner("gnnb", "greedy", rounds=GREEDY_LONG)
        self.short.compile()
        self.long.compile()

    def _numba(self, steps):
        return lambda: numba_kernel(_gnnb_greedy_logistic)(*self.args, steps, self.scale)

    def _per_step(self, long, short):
        return max(long - short, 0.0) / (GREEDY_LONG - GREEDY_STEPS) * 1e6

    def track_numba_step_microseconds(self, m):
        long, short = interleaved_best([self._numba(GREEDY_LONG), self._numba(GREEDY_STEPS)], repeat=5)
        return self._per_step(long, short)

    track_numba_step_microseconds.unit = "microseconds"

    def track_jaxnn_over_numba_step_ratio(self, m):
        fns = [self.long, self.short, self._numba(GREEDY_LONG), self._numba(GREEDY_STEPS)]
        t = interleaved_best(fns, repeat=5)
        return self._per_step(t[0], t[1]) / max(self._per_step(t[2], t[3]), 1e-9)

    track_jaxnn_over_numba_step_ratio.unit = "ratio"


#: random rows read per batch in :class:`RandomRows` (as many as a greedy
#: step's pairs, :data:`jaxnn._src.boosting.GREEDY_PAIRS`), and batches a call
ROW_BATCH, ROW_BATCHES = 128, 2000


def _sum_random_rows(table, rows):
    """Σ of table[rows[b, r]] over every batch b and row r: (C,) float32."""
    acc = np.zeros(table.shape[1], np.float32)
    for b in range(rows.shape[0]):
        for r in range(rows.shape[1]):
            acc += table[rows[b, r]]
    return acc


class RandomRows(Benchmark):
    """The machine's floor under a greedy step's growth with m: the time to
    read one random row of an (m, C = 10) float32 table — what a greedy step
    does for each of its ~10³ (member, neighbour) updates — by a numba loop
    and by jitted JAX (a ``fori_loop`` of gathers of :data:`ROW_BATCH`
    rows), at the sizes of ``GreedyStep``, µs a batch.  How much these grow
    from m = 10⁴ to 10⁶ is how much any step made of such reads must (huge
    pages, ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``, can lower it)."""

    param_names = ["m"]
    params = (GREEDY_M,)

    def setup(self, m):
        import jax
        import jax.numpy as jnp

        kernel = numba_kernel(_sum_random_rows)
        rng = np.random.default_rng(0)
        self.table = rng.random((m, GREEDY_C), dtype=np.float32)
        self.rows = rng.integers(0, m, (ROW_BATCHES, ROW_BATCH))
        want = self.table[self.rows.reshape(-1)].sum(axis=0)

        @jax.jit
        def sum_rows(table, rows):
            # the sum of a batch feeds the next batch's indices (a zero offset): no
            # batch is hoisted or fused with another, as in a step's scan
            def body(b, acc):
                offset = (acc[0] < -1.0).astype(jnp.uint32)  # 0: the table is ≥ 0
                return acc + jnp.sum(table[rows[b] + offset], axis=0)

            return jax.lax.fori_loop(0, rows.shape[0], body, jnp.zeros(table.shape[1], table.dtype))

        self.jax_table = jnp.asarray(self.table)
        self.jax_rows = jnp.asarray(self.rows.astype(np.uint32))
        self.sum_rows = sum_rows
        for got, what in ((kernel(self.table, self.rows), "numba"), (self._jax(), "JAX")):
            if not np.allclose(got, want, rtol=1e-3):
                raise AssertionError(f"{what} random-row sum disagrees with numpy's")

    def _jax(self):
        return np.asarray(self.sum_rows(self.jax_table, self.jax_rows))

    def _numba(self):
        return numba_kernel(_sum_random_rows)(self.table, self.rows)

    def track_numba_batch_microseconds(self, m):
        (t,) = interleaved_best([self._numba], repeat=5)
        return t / ROW_BATCHES * 1e6

    track_numba_batch_microseconds.unit = "microseconds"

    def track_jax_batch_microseconds(self, m):
        (t,) = interleaved_best([self._jax], repeat=5)
        return t / ROW_BATCHES * 1e6

    track_jax_batch_microseconds.unit = "microseconds"


def _inverse_lists(neighbors, m):
    """(members (m, P) int32, counts (m,) int32) of an (r, k) neighbour array:
    row j of members lists inv(j) = {i : j ∈ NN_k(i)} in ascending i, padded
    with 0 to P = the largest count (a counting sort: two passes over the edges)."""
    counts = np.zeros(m, np.int32)
    for i in range(neighbors.shape[0]):
        for t in range(neighbors.shape[1]):
            counts[neighbors[i, t]] += 1
    members = np.zeros((m, max(counts.max(), 1)), np.int32)
    fill = np.zeros(m, np.int32)
    for i in range(neighbors.shape[0]):
        for t in range(neighbors.shape[1]):
            j = neighbors[i, t]
            members[j, fill[j]] = i
            fill[j] += 1
    return members, counts


def _distinct_rows(nb: np.ndarray, m: int) -> np.ndarray:
    """``nb`` with each row's repeated neighbours redrawn until a row's k are
    distinct (random arrays repeat one in ~k²/2m rows; a k-NN graph never does)."""
    nb = nb.copy()
    rng = np.random.default_rng(1)
    while True:
        s = np.sort(nb, axis=1)
        bad = np.nonzero((s[:, 1:] == s[:, :-1]).any(axis=1))[0]
        if not bad.size:
            return nb
        draw = rng.integers(0, m - 1, size=(bad.size, nb.shape[1]))
        nb[bad] = draw + (draw >= bad[:, None])


#: FitFromGraph's rows m (random neighbour arrays, k = 10) and classes C
FIT_FROM_GRAPH_M = (2000,) if QUICK else (10_000, 100_000, 1_000_000)
FIT_FROM_GRAPH_C = (2, 10) if QUICK else (2, 10, 100)


class FitFromGraph(Benchmark):
    """``jaxnn.fit`` from a given graph against the numba loop of the same
    sequential pass (GNNB, logistic loss, ε = 0.5, one lazy pass), the
    inverse neighbourhoods built inside both timings: random neighbour
    arrays of m rows (k = 10, distinct neighbours a row), seed-0 labels in C
    classes.  ``track_fit_over_numba_ratio``: median fit time over the numba
    loop's, round-robin in one process (< 1: jaxnn is faster);
    ``time_fit`` / ``time_numba`` each alone.  ``setup`` checks the numba loop
    against ``fit(..., chooser="lazy")`` on a 2000-row problem of the same kind."""

    param_names = ["m", "C"]
    params = (FIT_FROM_GRAPH_M, FIT_FROM_GRAPH_C)
    timeout = 1800

    def setup(self, m, C):
        import jaxnn

        rng = np.random.default_rng(0)
        nb = _distinct_rows(random_neighbors(m), m)
        labels = rng.integers(0, C, m)
        labels[:C] = np.arange(C)  # every class present
        X = rng.normal(size=(m, 2)).astype(np.float32)  # not read: the graph is given
        Y = np.where(labels[:, None] == np.arange(C)[None, :], 1.0, -1.0).astype(np.float32)
        inverse, loop = numba_kernel(_inverse_lists), numba_kernel()
        kw = dict(k=K, loss="logistic", algorithm="gnnb", epsilon=EPSILON, posterior="link", shrinkage=None)
        self.fit = lambda: block(jaxnn.fit(X, labels, neighbors=nb, **kw).alpha)
        self.numba = lambda: loop(*inverse(nb, m), Y, 1, SCALE)
        small = min(m, 2000)
        sub = _distinct_rows(random_neighbors(small), small)
        want = jaxnn.fit(X[:small], labels[:small], neighbors=sub, chooser="lazy", **kw).alpha
        check_agrees(loop(*inverse(sub, small), Y[:small], 1, SCALE), want, 1e-2, "numba loop")
        self.fit()  # compiles
        self.numba()

    def time_fit(self, m, C):
        self.fit()

    def time_numba(self, m, C):
        self.numba()

    def track_fit_over_numba_ratio(self, m, C):
        t_fit, t_numba = interleaved_medians([self.fit, self.numba], rounds=3)
        return t_fit / t_numba

    track_fit_over_numba_ratio.unit = "ratio"
