"""Prediction with a fitted :class:`~jaxnn._src.model.Model`:
``decision_function`` (H, eq. 1), ``predict_proba`` (link posteriors, paper
003 eq. 29, mixed with k-NN vote fractions) and ``predict``; query batches
padded to shared sizes so that nearby batch sizes share one compiled
program."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import algorithms as algos
from jaxnn._src.graph import neighbor_sum, padded_query
from jaxnn._src.inputs import as_points, check_neighbors
from jaxnn._src.model import Model, check_model
from jaxnn._src.points import shift_points
from jaxnn._src.shared_sizes import at_shared_rows, first_k, first_rows, padded_rows, query_rows, to_device

__all__ = ["decision_function", "predict_proba", "predict", "host_scores", "host_proba"]


@jax.jit
def leveraged_scores(alpha, Y, indices, k=None):
    """H_c(x) = Σ_{j∈NN_k(x)} α_jc y_jc (eq. 1) → (n, C), for (n, k') neighbour
    indices, nearest first, of which the first k (traced; None: all k') are
    NN_k(x): :func:`jaxnn.select` scores every candidate k with one
    compiled program from the largest k's neighbours."""
    return neighbor_sum(alpha * Y, indices, k)


@jax.jit
def _vote_fractions(Y, indices, k=None):
    """v_c(x) = #{j ∈ NN_k(x) : y_jc > 0}/k for (n, k') neighbour indices, of
    which the first k (traced; None: all k') are NN_k(x) → (n, C)."""
    return neighbor_sum((Y > 0).astype(Y.dtype), indices, k) / (indices.shape[1] if k is None else k)


def _check_query(model: Model, X):
    """Checked query points, as :func:`as_points` gives them, shifted by the
    model's origin when it has one (knn_query puts them in the model's dtype)."""
    Xq = as_points(X)
    if Xq.shape[1] != model.X.shape[1]:
        raise ValueError(f"X has {Xq.shape[1]} features but the model was fit on {model.X.shape[1]}")
    return shift_points(Xq, model.origin)


def _query_parts(model: Model, X, neighbors):
    """(alpha, Y, (rows, k') indices of the model's training points nearest
    each query, k, n): the indices are ``neighbors`` when given (checked
    against X's rows if X is given too; k' = k = ``model.k``, k passed as
    None), else the exact search of X among ``model.X`` — for a small model
    all the :func:`shared_sizes.shared_k` neighbours it finds, with k as a traced
    count of them to sum (None where k' = k), so that models of nearby ks
    share one compiled scoring and posterior.  rows ≥ n: the queries are
    padded to :func:`shared_sizes.query_rows` (batches of nearby sizes share one
    compiled search, scoring and posterior; rows from n on are to be
    dropped); under ``jax.jit`` rows = n.
    alpha and Y are the model's, padded with zero rows to
    :func:`shared_sizes.shared_rows` for a concrete model of at most
    :data:`shared_sizes.SHARED_MAX_ROWS` points (as its search is): models of nearby sizes
    share one compiled scoring."""
    alpha, Y = at_shared_rows(model.alpha, model.Y)
    if neighbors is None:
        if X is None:
            raise TypeError("give the query points X, or their neighbours among the training points as neighbors=")
        idx, _, n = padded_query(model.X, _check_query(model, X), model.k, cut=False)
        return alpha, Y, idx, first_k(idx, model.k), n
    nb = check_neighbors(neighbors, model.X.shape[0], model.k)
    n = nb.shape[0]
    if X is not None:
        Xq = _check_query(model, X)
        if Xq.shape[0] != n:
            raise ValueError(f"X and neighbors have mismatched lengths: {Xq.shape[0]} rows in X, {n} in neighbors")
    if isinstance(nb, jax.core.Tracer):
        return alpha, Y, nb, None, n
    return alpha, Y, to_device(padded_rows(nb, query_rows(n))), None, n  # padding rows name training point 0


def decision_function(model: Model, X=None, *, neighbors=None) -> jax.Array:
    """H_c(x) for each row of X: (n, C), columns in ``model.classes`` order.

    ``neighbors``: optional (n, k) indices of each query's k nearest training
    points (``model.X`` rows, nearest first; k = ``model.k``), or a
    :class:`Neighbors` with at least k columns — from any search (an
    approximate index, neighbours shared by several models); then X may be
    left out, and no search is run.
    """
    model = check_model(model)
    alpha, Y, nb, k, n = _query_parts(model, X, neighbors)
    return first_rows((leveraged_scores(alpha, Y, nb, k),), n)[0]


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


def posterior_parts(model: Model, X, neighbors=None, found=None, rows=None):
    """(link posterior, vote fractions), both (n, C) NumPy arrays: the
    program of :func:`predict_proba` (:func:`_mixed_posterior`) at λ = 0 and
    λ = 1, so that ``posterior="auto"``'s choice compiles nothing that the
    fitted model's ``predict_proba`` does not use; the padding dropped on the
    host: nothing compiles per n.  ``found``: instead of ``neighbors``, the
    (n, k') host indices of X's k' ≥ k nearest training points, nearest
    first, from a search at :func:`shared_sizes.shared_k` (k') — all of them passed
    on, with k traced, so that nearby ks share one compiled program; with
    them, ``rows``: the model's α and labels are padded to at least so many
    rows (the main fit's, whose ``predict_proba`` then reuses the program)."""
    if found is None:
        alpha, Y, nb, k, n = _query_parts(model, X, neighbors)
    else:
        alpha, Y = at_shared_rows(model.alpha, model.Y, rows=rows)
        n = found.shape[0]
        if X.shape[0] != n:
            raise ValueError(f"X and found have mismatched lengths: {X.shape[0]} rows in X, {n} in found")
        nb = to_device(padded_rows(found, query_rows(n)))
        k = first_k(found, model.k)
    options = {"loss": model.loss, "algorithm": model.algorithm, "multilabel": model.multilabel}
    # λ as a Python float, positional, as predict_proba passes model.posterior_mix: the same program
    return tuple(np.asarray(_mixed_posterior(alpha, Y, nb, lam, k, **options))[:n] for lam in (0.0, 1.0))


def _normalised_link(alpha, Y, nb, k, *, loss, algorithm, multilabel: bool):
    """The link posterior p̂_c = link(H_c(x)) (:func:`link_posterior`), (n, C),
    for (n, k') neighbour indices nb of which the first k (traced; None: all)
    are NN_k; for single-label models normalised over classes
    (:func:`normalise_rows`: rows whose posteriors all underflow put their
    mass on the classes of largest H; NaN propagates).  Traced in the
    caller's program."""
    H = leveraged_scores(alpha, Y, nb, k)
    p_link = link_posterior(loss, algorithm, multilabel, H)
    return p_link if multilabel else normalise_rows(p_link, H)


def predict_proba(model: Model, X=None, *, neighbors=None) -> jax.Array:
    """Class posteriors p̂_c(x) ∈ [0, 1], (n, C), columns in ``model.classes`` order.

    p̂ = (1 − λ)·link(H_c(x)) + λ·v_c(x), with link the loss's posterior
    (paper 003 eq. 29 / eq. 11), v_c the fraction of the k neighbours in class
    c and λ = ``model.posterior_mix`` (see ``fit(posterior=...)``).  For
    single-label models rows sum to 1 (the one-vs-rest link posteriors are
    normalised); multilabel models return per-class posteriors.
    ``neighbors``: the query points' training neighbours, as for
    :func:`decision_function`.
    """
    return first_rows(*_padded_proba(check_model(model), X, neighbors))[0]


def _padded_proba(model: Model, X, neighbors):
    """((:func:`predict_proba` on the padded query rows,), n)."""
    alpha, Y, nb, k, n = _query_parts(model, X, neighbors)
    return (_mixed_posterior(alpha, Y, nb, model.posterior_mix, k, loss=model.loss, algorithm=model.algorithm,
                             multilabel=model.multilabel),), n


@functools.partial(jax.jit, static_argnames=("loss", "algorithm", "multilabel"))
def _mixed_posterior(alpha, Y, nb, lam, k=None, *, loss, algorithm, multilabel: bool):
    """(1 − λ)·link + λ·votes, (n, C): the link posterior of
    :func:`_normalised_link` and the vote fractions v_c(x) = #{j ∈ NN_k(x) :
    y_jc = +1}/k (:func:`_vote_fractions`), for (n, k') neighbour indices nb
    of which the first k (traced; None: all) are NN_k.  λ is traced:
    one program serves the link (λ = 0) and the votes (λ = 1) of
    ``posterior="auto"``, where a static λ compiled one each (folds of a
    cross-validation choose either); the votes are computed where λ ≠ 0 only
    (a ``lax.cond``)."""
    p_link = _normalised_link(alpha, Y, nb, k, loss=loss, algorithm=algorithm, multilabel=multilabel)

    def mixed(p_link):
        return (1.0 - lam) * p_link + lam * _vote_fractions(Y, nb, k).astype(p_link.dtype)

    return jax.lax.cond(lam == 0.0, lambda p: p, mixed, p_link)


def predict(model: Model, X=None, *, neighbors=None) -> np.ndarray:
    """Labels (n,) (argmax of H, ties → first class), or (n, C) 0/1 indicators
    for multilabel models (H_c > 0): NumPy arrays, or under ``jax.jit`` a JAX
    array (numeric labels only; a clear TypeError otherwise).  ``neighbors``:
    the query points' training neighbours, as for :func:`decision_function`."""
    model = check_model(model)
    alpha, Y, nb, k, n = _query_parts(model, X, neighbors)
    H = leveraged_scores(alpha, Y, nb, k)
    if isinstance(H, jax.core.Tracer):  # under jax.jit / vmap: a traced array, not NumPy
        return _traced_predict(model, H[:n])  # a traced model with concrete queries: rows were padded
    H = np.asarray(H)[:n]  # the padding dropped on the host: nothing compiles per n
    return _labels(model, H)


def host_scores(model: Model, X) -> np.ndarray:
    """:func:`decision_function` as a NumPy array, the padding dropped on the
    host (no slice compiles per batch size); for callers that want NumPy."""
    model = check_model(model)
    alpha, Y, nb, k, n = _query_parts(model, X, None)
    return np.asarray(leveraged_scores(alpha, Y, nb, k))[:n]


def host_proba(model: Model, X) -> np.ndarray:
    """:func:`predict_proba` as a NumPy array, as :func:`host_scores`."""
    (p,), n = _padded_proba(check_model(model), X, None)
    return np.asarray(p)[:n]


def _labels(model: Model, H: np.ndarray) -> np.ndarray:
    """Labels (n,) or multilabel (n, C) indicators from NumPy scores H (n, C)."""
    if model.multilabel:
        return (H > 0).astype(np.int64)
    return np.asarray(model.classes)[np.argmax(H, axis=1)]


def _traced_predict(model: Model, H) -> jax.Array:
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
    return jnp.asarray(as_held)[jnp.argmax(H, axis=1)]
