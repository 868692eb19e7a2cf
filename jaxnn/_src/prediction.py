"""Prediction with a fitted :class:`~jaxnn._src.model.Model`:
``decision_function`` (H, eq. 1), ``predict`` (argmax H, exact ties broken by
the k-NN vote, then by the nearest neighbour: :func:`tie_broken_argmax`) and
``predict_proba`` (the default: softmax(H/T + w·log(κ + δ)) with a
temperature T, and for three or more classes a weight w of the
distance-weighted vote κ of the same neighbours, fit on held-out data, a
floor, and ``predict``'s class on top; or the papers' link
posteriors, paper 003 eq. 29, mixed with k-NN vote fractions); query batches
padded to shared sizes so that nearby batch sizes share one compiled
program."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import algorithms as algos
from jaxnn._src import family, programs
from jaxnn._src.calibration import calibrated_posterior, kernel_log_votes
from jaxnn._src.graph import neighbor_sum, padded_query
from jaxnn._src.inputs import as_points, check_neighbors
from jaxnn._src.learned_metric import apply_metric
from jaxnn._src.model import Model, check_model, takes_kernel_term
from jaxnn._src.points import shift_points
from jaxnn._src.shared_sizes import (at_shared_k, at_shared_rows, first_k, first_rows, padded_rows, program_argument,
                                     query_rows)

__all__ = ["decision_function", "predict_proba", "predict", "host_scores", "host_proba", "host_rule", "PREDICT_BLOCK_ROWS",
           "tie_broken_argmax", "tie_parts", "host_neighbor_sum", "host_first_positions", "label_sums",
           "neighbor_sq_distances", "held_out_scores", "HeldOutScores", "RuleParts", "family_rule"]

@programs.jit()
def leveraged_scores(alpha, Y, indices, k=None):
    """H_c(x) = Σ_{j∈NN_k(x)} α_jc y_jc (eq. 1) → (n, C), for (n, k') neighbour
    indices, nearest first, of which the first k (traced; None: all k') are
    NN_k(x): :func:`jaxnn.select` scores every candidate k with one
    compiled program from the largest k's neighbours."""
    return neighbor_sum(alpha * Y, indices, k)


def _first_positions(Y, indices, k=None):
    """f_c(x) = the position (0 = nearest) of the first of the k nearest
    neighbours in class c (y_jc > 0), k' where none is: (n, C) int32, for
    (n, k') neighbour indices of which the first k (traced; None: all) are
    NN_k(x) — one neighbour column at a time, from the farthest, as
    :func:`graph.neighbor_sum` (no (n, k, C) gather).  Traced in the
    caller's program."""
    kk = indices.shape[1]
    f0 = jnp.full((indices.shape[0], Y.shape[1]), kk, jnp.int32)

    def step(i, f):
        t = kk - 1 - i
        hit = Y[indices[:, t]] > 0
        if k is not None:
            hit = hit & (t < k)
        return jnp.where(hit, t, f)

    return jax.lax.fori_loop(0, kk, step, f0)


def tie_parts(Y, indices, k=None):
    """(vote counts #{j ∈ NN_k(x) : y_jc > 0}, :func:`_first_positions`), each
    (n, C): what :func:`predict` breaks exact ties in H by
    (:func:`tie_broken_argmax`), for neighbour indices as
    :func:`leveraged_scores` takes them.  Traced in the caller's program."""
    return neighbor_sum((Y > 0).astype(Y.dtype), indices, k), _first_positions(Y, indices, k)


def host_neighbor_sum(rows, indices, k: int) -> np.ndarray:
    """:func:`graph.neighbor_sum` in NumPy: Σ_{t<k} rows[indices[:, t]] (n, C)
    for (m, C) rows and (n, k') indices, summed in the program's order (one
    column at a time, nearest first) — the same floats, nothing to compile."""
    H = np.zeros((indices.shape[0], rows.shape[1]), rows.dtype)
    for t in range(k):
        H += rows[indices[:, t]]
    return H


def host_first_positions(Y, indices, k: int) -> np.ndarray:
    """:func:`_first_positions` in NumPy: (n, C) int32, the position of the
    first of the k nearest neighbours in each class (y_jc > 0), k' =
    indices.shape[1] where none is."""
    first = np.full((indices.shape[0], Y.shape[1]), indices.shape[1], np.int32)
    for t in range(k - 1, -1, -1):
        first[Y[indices[:, t]] > 0] = t
    return first


def tie_broken_argmax(primary, secondary, first, width: int):
    """The class index (…, n) of largest ``primary`` (…, n, C); exact ties go to the
    tied class of largest ``secondary`` (n, C), then to the tied class of the
    nearest neighbour (smallest ``first``, :func:`_first_positions`, values in
    [0, width]) — never to the lowest class index, unless no neighbour is in
    any class still tied (then the lowest of them).  ``predict`` ranks by
    (H, votes, nearest neighbour); the estimator's ``posterior="votes"`` by
    (votes, H, nearest neighbour); ``select`` the scores of every shrinkage
    at once ((n_s, n, C) ``primary``).  Traced (jnp), or NumPy for NumPy
    arrays (the held-out choices': nothing to compile); NaN rows give 0."""
    xp = np if all(isinstance(a, np.ndarray) for a in (primary, secondary, first)) else jnp
    top = primary == xp.max(primary, axis=-1, keepdims=True)
    second = xp.where(top, secondary, -np.inf)
    top = top & (second == xp.max(second, axis=-1, keepdims=True))
    return xp.argmax(xp.where(top, width - first, -1), axis=-1)


def neighbor_sq_distances(points, X, indices):
    """‖x − x_j‖² (n, k') of each query point x (``points`` (n, d)) to its
    neighbours j (``indices`` (n, k') into the training points X (m, d)),
    one neighbour column at a time (no (n, k', d) gather).  Traced (jnp)."""
    kk = indices.shape[1]

    def column(t, D):
        return D.at[:, t].set(jnp.sum((points - X[indices[:, t]]) ** 2, axis=1))

    return jax.lax.fori_loop(0, kk, column, jnp.zeros((points.shape[0], kk), points.dtype))


def _check_query(model: Model, X):
    """Checked query points, as :func:`as_points` gives them, mapped by the
    model's learned metric and shifted by its origin when it has them
    (knn_query puts them in the model's dtype)."""
    Xq = as_points(X)
    if Xq.shape[1] != model.n_features:
        raise ValueError(f"X has {Xq.shape[1]} features but the model was fit on {model.n_features}")
    return shift_points(apply_metric(Xq, model.transform), model.origin)


class QueryParts(NamedTuple):
    """What the rule of a model is computed from at a batch of queries
    (:func:`_query_parts`)."""

    alpha: Any  #: (m', C) leverages, padded with zero rows
    Y: Any  #: (m', C) labels, padded alike
    X: Any  #: (m', d) training points in the model's search space, padded alike
    nb: Any  #: (rows, k') neighbour indices, nearest first
    #: (rows, d) the queries in the search space (zeros where neighbours are given without X), or None
    points: Any
    k: Any  #: the count of nb's first columns that are NN_k(x) (None: all)
    n: int  #: the queries' rows (rows from n on are padding)


def _query_parts(model: Model, X, neighbors, points: bool = False) -> QueryParts:
    """(alpha, Y, training points, (rows, k') indices of the model's training points nearest
    each query, the queries, k, n): the indices are ``neighbors`` when given (checked
    against X's rows if X is given too; concrete ones widened to the search's
    columns, :func:`shared_sizes.at_shared_k`, so that they run its program and
    give its bits; traced ones as they are, k' = k = ``model.k``, k passed as
    None), else the exact search of X among ``model.X`` — for a small model
    all the :func:`shared_sizes.shared_k` neighbours it finds (of
    ``model.searched_k``: the largest candidate's for ``fit(k="auto")``), with k as a traced
    count of them to sum (None where k' = k), so that models of nearby ks
    share one compiled scoring and posterior.  rows ≥ n: the queries are
    padded to :func:`shared_sizes.query_rows` (batches of nearby sizes share one
    compiled search, scoring and posterior; rows from n on are to be
    dropped); under ``jax.jit`` rows = n.
    alpha and Y are the model's, padded with zero rows to
    :func:`shared_sizes.shared_rows` for a concrete model of at most
    :data:`shared_sizes.SHARED_MAX_ROWS` points (as its search is): models of nearby sizes
    share one compiled scoring.  The queries (the training points' dtype,
    padded to the indices' rows) are kept with ``points`` or for a model
    with a kernel term (:func:`_uses_kernel`), else None; they are zeros
    where only ``neighbors`` is given (:func:`predict_proba` refuses a
    kernel term without them)."""
    points = points or _uses_kernel(model)
    alpha, Y, Xt = at_shared_rows(model.alpha, model.Y, model.X)
    if neighbors is None:
        if X is None:
            raise TypeError("give the query points X, or their neighbours among the training points as neighbors=")
        Xq = _check_query(model, X)
        idx, _, n = padded_query(model.X, Xq, model.searched_k, cut=False)
        Xp = _padded_points(Xq, model.X.dtype, idx.shape[0]) if points else None
        return QueryParts(alpha, Y, Xt, idx, Xp, first_k(idx, model.k), n)
    nb = check_neighbors(neighbors, model.X.shape[0], model.k)
    n = nb.shape[0]
    Xq = None
    if X is not None:
        Xq = _check_query(model, X)
        if Xq.shape[0] != n:
            raise ValueError(f"X and neighbors have mismatched lengths: {Xq.shape[0]} rows in X, {n} in neighbors")
    k = None
    if not isinstance(nb, jax.core.Tracer):  # the search's layout: its program, its bits
        nb, k = at_shared_k(nb, model.k, model.X.shape[0], model.searched_k)
        nb = program_argument(padded_rows(nb, query_rows(n, among=alpha.shape[0])))  # padding: point 0
    if not points:
        return QueryParts(alpha, Y, Xt, nb, None, k, n)
    if Xq is None:
        Xq = (jnp if isinstance(nb, jax.core.Tracer) else np).zeros((n, model.X.shape[1]))
    return QueryParts(alpha, Y, Xt, nb, _padded_points(Xq, model.X.dtype, nb.shape[0]), k, n)


def _padded_points(Xq, dtype, rows: int):
    """Query points (n, d) in ``dtype``, padded with zero rows to ``rows``
    (on the host for a NumPy array: nothing compiles per n)."""
    if isinstance(Xq, np.ndarray):
        return program_argument(padded_rows(np.asarray(Xq, dtype), rows))
    return padded_rows(jnp.asarray(Xq).astype(dtype), rows)


#: query rows scored at a time: a larger batch of queries is streamed in
#: blocks of this many rows, so that the working memory of a prediction (the
#: padded queries, their neighbours and the (rows, k, C) gathers of the
#: scores) does not grow with the number of queries — only the (n, C) answer does
PREDICT_BLOCK_ROWS = 1 << 16


def _streamed(score, model: Model, X, neighbors, join):
    """``score(model, X, neighbors)`` on the rows of X (and of ``neighbors``)
    :data:`PREDICT_BLOCK_ROWS` at a time, the answers joined by ``join``; one
    call for at most that many rows, under ``jax.jit`` (traced queries or
    neighbours), and for anything ``score`` is to refuse (it says why)."""
    if isinstance(X, jax.core.Tracer) or isinstance(getattr(neighbors, "indices", neighbors), jax.core.Tracer):
        return score(model, X, neighbors)
    if X is not None:
        X = as_points(X)  # checked once; the blocks are slices of the host array
    n = _query_count(X, neighbors)
    if n is None or n <= PREDICT_BLOCK_ROWS:
        return score(model, X, neighbors)

    def rows(a, start):
        if a is None:
            return None
        cut = slice(start, start + PREDICT_BLOCK_ROWS)
        return a._replace(**{f: getattr(a, f)[cut] for f in a._fields}) if hasattr(a, "_fields") else a[cut]

    return join([score(model, rows(X, start), rows(neighbors, start)) for start in range(0, n, PREDICT_BLOCK_ROWS)])


def _query_count(X, neighbors):
    """The queries' rows when X and ``neighbors`` (an array or a
    :class:`Neighbors`) agree on them, else None (one call reports the problem)."""
    counts = set()
    if X is not None:
        counts.add(X.shape[0] if X.ndim else None)
    if neighbors is not None:
        parts = tuple(neighbors) if hasattr(neighbors, "_fields") else (neighbors,)
        if not all(isinstance(part, (np.ndarray, jax.Array)) and part.ndim == 2 for part in parts):
            return None
        counts.update(part.shape[0] for part in parts)
    return counts.pop() if len(counts) == 1 else None


def _device_rows(parts):
    return jnp.concatenate(parts, axis=0)


def _host_rows(parts):
    return np.concatenate([np.asarray(p) for p in parts], axis=0)



def decision_function(model: Model, X=None, *, neighbors=None) -> jax.Array:
    """H_c(x) for each row of X: (n, C), columns in ``model.classes`` order.

    ``neighbors``: optional (n, k) indices of each query's k nearest training
    points (``model.X`` rows, nearest first; k = ``model.k``), or a
    :class:`Neighbors` with at least k columns — from any search (an
    approximate index, neighbours shared by several models); then X may be
    left out, and no search is run.  Many queries are scored
    :data:`PREDICT_BLOCK_ROWS` at a time.

    A model of paper 004's family (``jaxnn.uls``, ``ols``, ``udt``) gives its
    own scores: its separator's, its stream's w·x or its leaves' values.
    """
    if isinstance(model, family.FamilyModel):
        return _family_answer(model, X, neighbors, "scores")
    return _streamed(_decision_function, check_model(model), X, neighbors, _device_rows)


def _decision_function(model: Model, X, neighbors) -> jax.Array:
    q = _query_parts(model, X, neighbors)
    return first_rows((leveraged_scores(q.alpha, q.Y, q.nb, q.k),), q.n)[0]


def link_posterior(loss, algorithm, multilabel: bool, H):
    """The one-vs-rest link posteriors p̂_c = link(H_c) in [0, 1], (…, C) from H (…, C):
    the loss's posterior (paper 003 eq. 11 / eq. 29), except for single-label
    N³, whose link accounts for N³'s class-balanced initial edges
    (:func:`_n3_link`); multilabel N³ keeps the plain link (its initial edges
    depend on each training example's whole label vector)."""
    p = _n3_link(loss, algorithm, H) if isinstance(algorithm, algos.N3) and not multilabel else loss.posterior(H)
    return jnp.clip(p, 0.0, 1.0)


def _n3_link(loss, algorithm, H):
    """N³'s link posterior for single-label models: (…, C) from H (…, C).

    N³ starts from the class-balanced initial edges e0 of ``N3.init_edges``
    (p̂(−e0) = π = 1/(2·#{l : y_il = y_ic})): with C classes a positive has
    e0⁺ = 0 and a negative e0⁻ = −p̂⁻¹(1/(2(C − 1))).  The surrogate risk for
    class c at x, p·ψ(e0⁺ + H_c) + (1 − p)·ψ(e0⁻ − H_c), is least where
    p·w(e0⁺ + H_c) = (1 − p)·w(e0⁻ − H_c) (w = −ψ'), so

        p̂_c = w(e0⁻ − H_c) / (w(e0⁺ + H_c) + w(e0⁻ − H_c)),

    paper 003 eq. 11 shifted by the initial edges (with C = 2, e0⁺ = e0⁻ = 0
    and it is the loss's posterior).  Computed as 1/(1 + w⁺/w⁻): a weight that
    is 0 or underflows gives p̂ = 0 or 1, not 0/0; where both weights are 0 (a
    flat stretch of ψ on both sides: no catalogue loss) every p is a
    minimiser and p̂ = 1/2.  NaN in H gives NaN.
    """
    C = H.shape[-1]
    one_positive = jnp.where(jnp.arange(C) == 0, 1.0, -1.0).astype(H.dtype)[None]
    e0 = algorithm.init_edges(loss, one_positive)  # (1, C): [e0⁺, e0⁻, …, e0⁻]
    w_pos = loss.weight(e0[0, 0] + H)
    w_neg = loss.weight(e0[0, 1] - H)
    both_zero = (w_pos == 0) & (w_neg == 0)
    p = 1.0 / (1.0 + w_pos / jnp.where(both_zero, 1.0, w_neg))  # w⁻ = 0 < w⁺: w⁺/0 = inf, p̂ = 0
    return jnp.where(both_zero, 0.5, p).astype(H.dtype)


def normalise_rows(p, H):
    """Rows of the one-vs-rest posteriors p (n, C) normalised to sum to 1.

    Where a row's total is 0 (every p̂_c underflowed: H_c far below 0 for all
    c) the mass goes uniformly to the classes of largest H (ties share) —
    the limit of the normalised posteriors for links with exponential tails,
    and the argmax that :func:`predict` returns.  A row holding a NaN stays
    NaN (its total is NaN, not 0).
    """
    total = jnp.sum(p, axis=1, keepdims=True)
    empty = total == 0
    top = (H == jnp.max(H, axis=1, keepdims=True)).astype(p.dtype)
    top = top / jnp.sum(top, axis=1, keepdims=True)
    return jnp.where(empty, top, p / jnp.where(empty, 1.0, total))


def _found_parts(model: Model, X, found, rows) -> QueryParts:
    """:func:`_query_parts` for queries X whose (n, k') host neighbour
    indices ``found`` are given: α, the labels and the training points padded to at least ``rows``
    rows, the indices widened to the search's :func:`shared_sizes.shared_k` columns
    (:func:`shared_sizes.at_shared_k`: the program a search's own neighbours run) and
    they and the queries padded to :func:`shared_sizes.query_rows` rows on the device,
    and k the traced count of them to sum."""
    alpha, Y, Xt = at_shared_rows(model.alpha, model.Y, model.X, rows=rows)
    n = found.shape[0]
    if X.shape[0] != n:
        raise ValueError(f"X and found have mismatched lengths: {X.shape[0]} rows in X, {n} in found")
    found, k = at_shared_k(np.asarray(found), model.k, alpha.shape[0], model.searched_k)
    nb = program_argument(padded_rows(found, query_rows(n, among=alpha.shape[0])))
    points = _padded_points(_check_query(model, X), model.X.dtype, nb.shape[0])
    return QueryParts(alpha, Y, Xt, nb, points, k, n)


class HeldOutScores(NamedTuple):
    """A model's rule at held-out points (:func:`held_out_scores`), NumPy."""

    H: np.ndarray  #: (n, C) scores H_c(x) = Σ_{j∈NN_k(x)} α_jc y_jc
    V: np.ndarray  #: (n, C) label sums Σ_{j∈NN_k(x)} y_jc (the scores at α ≡ 1)
    first: np.ndarray  #: (n, C) position of each class's nearest neighbour (k: none)
    D: np.ndarray  #: (n, k) squared distances to the k neighbours, nearest first ((n, 0) without ``kernel``)
    neighbour_labels: np.ndarray  #: (n, k, C) bool, y_jc > 0 of the k neighbours ((n, 0, C) alike)


def held_out_scores(model: Model, X, found=None, rows=None, kernel: bool = False) -> HeldOutScores:
    """:class:`HeldOutScores` of ``model`` at X — what
    ``posterior="auto"`` fits its temperature, leverage shrinkage and kernel
    term on: the scores H, the label sums V (k·(2·v_c − 1), v the
    vote fractions) and the first positions (:func:`predict`'s ties) by
    :func:`predict`'s compiled program (:func:`_rule`), and with ``kernel``
    the squared distances and labels of the k neighbours
    (:func:`jaxnn._src.calibration.kernel_weights`), the padding dropped on the host.  ``found``: X's (n, k') host indices of
    its k' ≥ k nearest training points, nearest first, from a search at
    :func:`shared_sizes.shared_k` (k') — all passed on, k traced, so that
    nearby ks share one program (a graph of the training points
    themselves, self excluded, serves too); with them, ``rows``: the
    model's α and labels are padded to at least so many rows (the main
    fit's, whose ``predict_proba`` then reuses the program — with ``kernel``
    the program with the kernel term, :func:`_uses_kernel`)."""
    q = _query_parts(model, X, None, points=True) if found is None else _found_parts(model, X, found, rows)
    parts = _rule_of(model, q, 0.0, 0.0, kernel)
    H, counts, first = (np.asarray(a)[:q.n] for a in (parts.H, parts.counts, parts.first))
    if kernel:
        D = np.asarray(parts.D)[:q.n, :model.k]
        labels = np.asarray(model.Y)[np.asarray(q.nb)[:q.n, :model.k]] > 0
    else:  # no kernel term to fit: none of its parts
        D, labels = np.zeros((q.n, 0), np.float32), np.zeros((q.n, 0, H.shape[1]), bool)
    return HeldOutScores(H, label_sums(counts, model.k), np.minimum(first, model.k), D, labels)


def label_sums(counts, k: int):
    """V_c(x) = Σ_{j∈NN_k(x)} y_jc, the scores at α ≡ 1, from the vote counts
    #{j ∈ NN_k(x) : y_jc = +1} (labels y ∈ {−1, +1}): 2·counts − k."""
    return 2.0 * counts - k


def _normalised_link(H, *, loss, algorithm, multilabel: bool):
    """The link posterior p̂_c = link(H_c(x)) (:func:`link_posterior`), (n, C),
    from scores H (n, C); for single-label models normalised over classes
    (:func:`normalise_rows`: rows whose posteriors all underflow put their
    mass on the classes of largest H; NaN propagates).  Traced in the
    caller's program."""
    p_link = link_posterior(loss, algorithm, multilabel, H)
    return p_link if multilabel else normalise_rows(p_link, H)


def predict_proba(model: Model, X=None, *, neighbors=None) -> jax.Array:
    """Class posteriors p̂_c(x) ∈ [0, 1], (n, C), columns in ``model.classes`` order.

    A model fit with ``posterior="auto"`` (the default) has a temperature
    T = ``model.posterior_temperature`` > 0, fit on held-out data, and gets
    p̂ = (1 − ε)·softmax(H(x)/T) + ε/C, ε = :data:`jaxnn._src.calibration.POSTERIOR_FLOOR`
    (multilabel: (1 − ε)·σ(H_c(x)/T) + ε/2 per label): never exactly 0 or 1,
    increasing in H_c within a row, and its argmax is always :func:`predict`'s
    label (exact ties broken as ``predict`` breaks them).  Otherwise (T = 0:
    ``posterior="link"`` or ``"votes"``) p̂ = (1 − λ)·link(H_c(x)) + λ·v_c(x),
    with link the loss's posterior (paper 003 eq. 29 / eq. 11), v_c the
    fraction of the k neighbours in class c and λ = ``model.posterior_mix``.
    For single-label models rows sum to 1 (the one-vs-rest link posteriors
    are normalised); multilabel models return per-class posteriors.
    ``neighbors``: the query points' training neighbours, as for
    :func:`decision_function`.  docs/guide/posteriors.md compares them.
    Many queries are scored :data:`PREDICT_BLOCK_ROWS` at a time.

    A model of paper 004's family gives the link posteriors ∇φ⁻¹(H) of its
    scores (a tree grown with ``leaves="posterior"``: its leaves' class
    frequencies), normalised as above.
    """
    if isinstance(model, family.FamilyModel):
        return _family_answer(model, X, neighbors, "proba")
    return _streamed(lambda mdl, Xb, nb: first_rows(*_padded_proba(mdl, Xb, nb))[0], check_model(model), X,
                     neighbors, _device_rows)


def _padded_proba(model: Model, X, neighbors):
    """((:func:`predict_proba` on the padded query rows,), n)."""
    q = _query_parts(model, X, neighbors)
    if X is None and _uses_kernel(model) and _kernel_weight(model) > 0:
        raise ValueError("this model's posteriors weigh each query's neighbours by their distances to it "
                         f"(model.posterior_weight = {_kernel_weight(model):g}): give the query points X "
                         "as well as neighbors=")
    return (_rule_of(model, q).proba,), q.n


def _temperature(model: Model) -> float:
    """``model.posterior_temperature`` (0.0 for a model without one: pickled
    before the field existed)."""
    return float(getattr(model, "posterior_temperature", 0.0) or 0.0)


def _kernel_weight(model: Model) -> float:
    """``model.posterior_weight`` (0.0 for a model without one)."""
    return float(getattr(model, "posterior_weight", 0.0) or 0.0)


def _uses_kernel(model: Model) -> bool:
    """Whether ``model``'s posteriors are computed with a kernel term (T > 0,
    single-label, three or more classes; w = 0 adds nothing): the one place
    that says so, a static choice of :func:`_rule`'s program — a model whose
    posteriors cannot have one (binary, multilabel, the link or the votes)
    compiles none of it, and a ``posterior="auto"`` fit's held-out scoring
    runs the program its model's predictions will."""
    return _temperature(model) > 0 and takes_kernel_term(model.multilabel, model.n_classes)


def _rule_of(model: Model, q: QueryParts, lam=None, temperature=None, kernel=None, proba: bool = True) -> RuleParts:
    """:func:`_rule` for ``model`` on its query parts (:func:`_query_parts`):
    λ, T, w and b the model's unless given (λ and T), passed as Python floats, positionally,
    so that every caller — predict, predict_proba, the estimator and
    ``posterior="auto"``'s scoring — runs one program for these shapes (with
    the kernel term where :func:`_uses_kernel`, or ``kernel`` says so).
    Without ``proba`` (labels and scores only), a model with no temperature
    (``posterior="link"`` or ``"votes"``: no held-out scoring compiled the
    program with posteriors) runs the program without them, which every loss
    and algorithm share (``RuleParts.proba`` None); a calibrated model runs the
    one its scoring and ``predict_proba`` run."""
    temperature = _temperature(model) if temperature is None else float(temperature)
    if not proba and temperature == 0.0:
        return _rule(q.alpha, q.Y, q.nb, 0.0, q.k, 0.0, None, None, 0.0, 0.0, loss=None, algorithm=None,
                     multilabel=model.multilabel, proba=False)
    lam = float(model.posterior_mix) if lam is None else float(lam)
    kernel = _uses_kernel(model) if kernel is None else kernel
    bandwidth = float(getattr(model, "posterior_bandwidth", 0.0) or 0.0)
    return _rule(q.alpha, q.Y, q.nb, lam, q.k, temperature, q.X if kernel else None, q.points if kernel else None,
                 _kernel_weight(model), bandwidth, loss=model.loss, algorithm=model.algorithm,
                 multilabel=model.multilabel)


class RuleParts(NamedTuple):
    """A model's rule at a batch of queries (:func:`_rule`), for (n, k')
    neighbour indices."""

    H: Any  #: (n, C) scores H_c(x) = Σ_{j∈NN_k(x)} α_jc y_jc
    counts: Any  #: (n, C) vote counts #{j ∈ NN_k(x) : y_jc > 0}
    first: Any  #: (n, C) position of each class's nearest neighbour (k' where none is)
    top: Any  #: (n,) index of the predicted class
    proba: Any  #: (n, C) posteriors (None from the program without them)
    D: Any  #: (n, k') squared distances to the neighbours, or None without the query points


@programs.jit(static_argnames=("loss", "algorithm", "multilabel", "proba"))
def _rule(alpha, Y, nb, lam, k, temperature, X, points, weight, bandwidth, *, loss, algorithm, multilabel: bool,
          proba: bool = True):
    """:class:`RuleParts` (H, vote counts, first positions, index of the
    predicted class, posteriors, squared distances to the neighbours) for
    (n, k') neighbour indices nb of which the first k (traced; None: all)
    are NN_k(x): the parts of :func:`predict`'s rule (argmax H, exact ties by the vote, then
    the nearest neighbour) and :func:`predict_proba`'s posteriors — where the
    temperature T > 0 the calibrated posteriors
    (:func:`jaxnn._src.calibration.calibrated_posterior`,
    ties toward the predicted class; given the query ``points`` (n, d) and
    the training points X — a model with a kernel term, :func:`_uses_kernel`
    — with the kernel term w·log(κ + δ), κ the vote of the k neighbours weighted by
    :func:`jaxnn._src.calibration.kernel_weights` at relative bandwidth b, δ =
    :data:`jaxnn._src.calibration.KERNEL_VOTE_FLOOR`: :func:`jaxnn._src.calibration.kernel_log_votes`), else (1 − λ)·link + λ·votes, the link
    posterior of :func:`_normalised_link` and the vote fractions
    v_c(x) = #{j ∈ NN_k(x) : y_jc = +1}/k.  λ, T, w and b are traced: one program
    serves every fitted model of these shapes with a kernel term, one every
    model without (folds of a cross-validation fit other Ts), and predict
    and predict_proba share it; each branch is
    computed only where taken (``lax.cond``).  Without ``proba`` (static) the
    program stops at the predicted class (no posteriors: ``loss`` and
    ``algorithm`` unread, None)."""
    H = leveraged_scores(alpha, Y, nb, k)
    counts, first = tie_parts(Y, nb, k)
    top = tie_broken_argmax(H, counts, first, nb.shape[1])
    if not proba:
        return RuleParts(H, counts, first, top, None, None)

    D = None if points is None else neighbor_sq_distances(points, X, nb)

    def kernel_term():
        return jnp.asarray(weight, H.dtype) * kernel_log_votes(D, (Y, nb), bandwidth, k, dtype=H.dtype, xp=jnp)

    def calibrated(H):
        if multilabel:
            return calibrated_posterior(H, temperature, None, True)
        return calibrated_posterior(H, temperature, top, False, None if points is None else kernel_term())

    def link_or_votes(H):
        p_link = _normalised_link(H, loss=loss, algorithm=algorithm, multilabel=multilabel)

        def mixed(p_link):
            votes = counts / (nb.shape[1] if k is None else k)
            return (1.0 - lam) * p_link + lam * votes.astype(p_link.dtype)

        return jax.lax.cond(lam == 0.0, lambda p: p, mixed, p_link)

    return RuleParts(H, counts, first, top, jax.lax.cond(temperature > 0.0, calibrated, link_or_votes, H), D)


def predict(model: Model, X=None, *, neighbors=None) -> np.ndarray:
    """Labels (n,): argmax_c H_c(x); an exact tie goes to the tied class with
    the most of the k neighbours, then to the tied class of the nearest
    neighbour (:func:`tie_broken_argmax`) — not to the first class, so that a
    point's label always follows its neighbours (every H = 0 is plain k-NN,
    and k = 1 with every α > 0 exactly 1-NN).  Multilabel models: (n, C) 0/1
    indicators (H_c > 0).  NumPy arrays, or under ``jax.jit`` a JAX array
    (numeric labels only; a clear TypeError otherwise).  ``neighbors``: the
    query points' training neighbours, as for :func:`decision_function`.
    Many queries are scored :data:`PREDICT_BLOCK_ROWS` at a time.
    A model of paper 004's family predicts argmax_c H_c(x) (multilabel:
    p̂_c(x) > 1/2); exact ties go to the first class."""
    if isinstance(model, family.FamilyModel):
        return _family_answer(model, X, neighbors, "labels")
    return _streamed(_predict, check_model(model), X, neighbors, _host_rows)


def family_rule(model: family.FamilyModel, X, proba: bool = True) -> tuple:
    """(H (n, C), p̂ (n, C) or None) of a model of paper 004's family on X,
    from one scoring: with a ``temperature``, the calibrated posteriors of
    the model's logits (:func:`~jaxnn._src.calibration.calibrated_posterior`, ties
    broken toward argmax H); else the model's posterior of H (the link)
    clipped to [0, 1] and, single-label, normalised over the classes
    (:func:`normalise_rows`)."""
    H = family.scores(model, X)
    if not proba:
        return H, None
    if model.temperature is not None:
        return H, _family_posterior(model.logits(H), H, model.temperature, multilabel=model.multilabel)
    p = jnp.clip(model.posterior(H), 0.0, 1.0)
    return H, p if model.multilabel else normalise_rows(p, H)


@programs.jit(static_argnames=("multilabel",))
def _family_posterior(S, H, temperature, *, multilabel: bool):
    """The calibrated posteriors (n, C) of a family model's logits S (n, C)
    at temperature T (traced), ties broken toward argmax H
    (:func:`~jaxnn._src.calibration.calibrated_posterior`; multilabel: none
    to break), as one program: run eagerly, its operations would compile
    a program each for every new shape."""
    top = None if multilabel else jnp.argmax(H, axis=1)
    return calibrated_posterior(S, temperature, top, multilabel)


def _family_answer(model: family.FamilyModel, X, neighbors, answer: str):
    """``decision_function`` (``answer="scores"``), ``predict_proba``
    (``"proba"``) or ``predict`` (``"labels"``) for a model of paper 004's family."""
    name = model.family.upper()
    if neighbors is not None:
        raise TypeError(f"neighbors= is for k-NN models; a {name} model scores the query points X")
    if X is None:
        raise TypeError(f"a {name} model needs the query points X")
    H, p = family_rule(model, X, proba=answer == "proba" or model.multilabel)
    if answer == "scores":
        return H
    if answer == "proba":
        return p
    traced = isinstance(H, jax.core.Tracer)
    if model.multilabel:
        return (p > 0.5).astype(jnp.int32) if traced else np.asarray(p > 0.5, np.int64)
    if traced:
        return _traced_predict(model, H, jnp.argmax(H, axis=1))
    H = np.asarray(H)
    return _labels(model, H, np.argmax(H, axis=1))  # on the host: no program of its own


def _predict(model: Model, X, neighbors):
    q = _query_parts(model, X, neighbors)
    n = q.n
    parts = _rule_of(model, q, proba=False)
    H, top = parts.H, parts.top
    if isinstance(H, jax.core.Tracer):  # under jax.jit / vmap: a traced array, not NumPy
        return _traced_predict(model, H[:n], top[:n])  # a traced model with concrete queries: rows were padded
    # the padding dropped on the host: nothing compiles per n
    return _labels(model, np.asarray(H)[:n], np.asarray(top)[:n])


def host_scores(model: Model, X) -> np.ndarray:
    """:func:`decision_function` as a NumPy array, the padding dropped on the
    host (no slice compiles per batch size); for callers that want NumPy."""
    return _streamed(lambda mdl, Xb, _: np.asarray(_decision_function(mdl, Xb, None)), check_model(model), X, None,
                     _host_rows)


def host_proba(model: Model, X) -> np.ndarray:
    """:func:`predict_proba` as a NumPy array, as :func:`host_scores`."""
    def proba(mdl, Xb, _):
        (p,), n = _padded_proba(mdl, Xb, None)
        return np.asarray(p)[:n]

    return _streamed(proba, check_model(model), X, None, _host_rows)


def host_rule(model: Model, X, proba: bool = False) -> tuple:
    """(H, vote fractions, first positions, predicted class index), NumPy, the
    parts of :func:`predict`'s rule at X (:func:`_rule`), as
    :func:`host_scores`: what the scikit-learn estimator ranks its classes by
    — and with ``proba``, :func:`predict_proba` last, from the same search.
    The first positions are :func:`_first_positions`' (k where no neighbour
    is in the class)."""
    parts = _streamed(lambda mdl, Xb, _: _host_rule(mdl, Xb, proba), check_model(model), X, None,
                      lambda blocks: tuple(_host_rows(p) for p in zip(*blocks)))
    return tuple(parts)


def _host_rule(model: Model, X, proba: bool) -> tuple:
    q = _query_parts(model, X, None)
    parts = _rule_of(model, q, proba=proba)
    H, counts, first, top = (np.asarray(a)[:q.n] for a in (parts.H, parts.counts, parts.first, parts.top))
    if q.nb.shape[1] != model.k:  # a wider search (shared_k): no class was first beyond the k-th
        first = np.minimum(first, model.k)
    return (H, counts / model.k, first, top) + ((np.asarray(parts.proba)[:q.n],) if proba else ())


def _labels(model: Model, H: np.ndarray, top: np.ndarray) -> np.ndarray:
    """Labels (n,) (class ``top``) or multilabel (n, C) indicators (H > 0)
    from NumPy scores H (n, C) and predicted class indices top (n,)."""
    if model.multilabel:
        return (H > 0).astype(np.int64)
    return np.asarray(model.classes)[top]


def _traced_predict(model: Model, H, top) -> jax.Array:
    """:func:`predict` inside ``jax.jit``: the labels as a JAX array (numeric
    or boolean labels only; indicators int32 for multilabel models)."""
    if model.multilabel:
        return (H > 0).astype(jnp.int32)
    classes = np.asarray(model.classes)
    if not (np.issubdtype(classes.dtype, np.number) or classes.dtype == bool):
        raise TypeError(
            f"predict under jax.jit needs numeric class labels, got dtype {classes.dtype}; "
            "take jnp.argmax(jaxnn.decision_function(model, X), axis=1) for class indices "
            "into model.classes instead"
        )
    held = jax.dtypes.canonicalize_dtype(classes.dtype)  # int64 → int32 etc. without x64
    with np.errstate(over="ignore", invalid="ignore"):
        as_held = classes.astype(held)
    if held != classes.dtype and not np.array_equal(as_held.astype(classes.dtype), classes):
        raise TypeError(
            f"predict under jax.jit answers in JAX's {held}, which cannot hold every class label "
            f"({classes.dtype} labels {classes.tolist()} would come back as {as_held.tolist()}); "
            "enable x64, predict outside jax.jit, or take jnp.argmax(jaxnn.decision_function(model, X), axis=1) "
            "for class indices into model.classes"
        )
    return jnp.asarray(as_held)[top]
