"""A learned metric: a linear map A of the features under which the
neighbours are searched, learned by neighbourhood components analysis.

The leveraged k-NN rule takes its neighbours from the Euclidean distance of
the features as given.  Paper 004 (§7) points at fitting a Mahalanobis
metric to the domain *before* an instance-based classifier: distances
‖(x − x′)A‖², i.e. the Mahalanobis distance of M = AAᵀ.  ``fit(metric="nca")``
learns A (d, d) by neighbourhood components analysis (Goldberger, Roweis,
Hinton, Salakhutdinov, NIPS 2004): a stochastic 1-NN picks neighbour j of
x_i with probability

    p_ij = exp(−‖(x_i − x_j)A‖²) / Σ_{l≠i} exp(−‖(x_i − x_l)A‖²),   p_ii = 0,

and A minimises the weighted log loss of its leave-one-out prediction,

    L(A) = −(1/Σ_i u_i) Σ_i u_i log Σ_{j: y_j = y_i} p_ij        (NCA's eq. 6),

by L-BFGS (:func:`optax.lbfgs`, a fixed number of iterations in one
``lax.scan``, jitted), from A₀ = diag(1/σ) (each feature standardised, σ its
standard deviation; 1 for a constant feature), on a random 3/4 of the
points.  The other quarter is held out, in two halves: on the first, early
stopping chooses among A₀ and the iterates the one of least loss; on the
second it is kept only if its gain over A₀ exceeds :data:`MIN_GAIN_SE`
standard errors (:func:`clear_gain`), else A₀ — on small data an iterate
often wins on the points that chose it by chance, and loses on new ones.  On more than ``max_points``
training points A is learned on a seeded random ``max_points`` of them (the
objective holds every pair: memory grows as max_points²).  The rows are
padded to :func:`jaxnn._src.shared_sizes.shared_rows` and masked, so that
training sets of nearby sizes share one compiled program.

A itself is the model's ``transform``: the model stores the training points
mapped, x ↦ xA, and maps every query alike (:func:`apply_metric`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxnn._src.checks import check_integer, did_you_mean
from jaxnn._src.inputs import as_points, compute_dtype, encode_labels, sample_weights
from jaxnn._src.search import DISTANCE_PRECISION, distance_dots
from jaxnn._src.shared_sizes import shared_rows, to_device

__all__ = ["METRICS", "MAX_POINTS", "ITERATIONS", "HELD_OUT", "MIN_GAIN_SE", "learn_metric", "nca_loss", "nca_terms",
           "clear_gain", "apply_metric", "check_transform", "metric_transform"]

#: the metrics ``fit(metric=...)`` learns by name
METRICS = ("nca",)
#: training points the NCA objective holds at most (a seeded random subset beyond)
MAX_POINTS = 2000
#: L-BFGS iterations of the NCA objective
ITERATIONS = 50
#: fraction of the points held out: half chooses the iterate (early
#: stopping), half tests its gain over A₀
HELD_OUT = 0.25
#: the chosen iterate is kept only if its gain over A₀ on the test half
#: exceeds this many standard errors; else A₀ (the features standardised)
MIN_GAIN_SE = 2.0


def _mapped(X, A):
    """X @ A in full float32 on every platform (the search's precision)."""
    return jnp.matmul(X, A, precision=DISTANCE_PRECISION)


def nca_terms(A, X, labels, weights, queries=None):
    """(each point's −log p_i (n,) or, with ``queries``, each query's (q,);
    their weights, 0 where a point has no neighbour of its class) of NCA's
    loss :func:`nca_loss`."""
    present = weights > 0
    Q, lq, uq = (X, labels, weights) if queries is None else queries
    Z, Zq = _mapped(X, A), _mapped(Q, A)
    sq = jnp.sum(Zq * Zq, axis=1)[:, None] + jnp.sum(Z * Z, axis=1)[None, :]
    D = jnp.maximum(sq - 2.0 * distance_dots(Zq, Z), 0.0)
    excluded = ~present[None, :]
    if queries is None:
        excluded = excluded | jnp.eye(X.shape[0], dtype=bool)
    logp = jax.nn.log_softmax(jnp.where(excluded, -jnp.inf, -D), axis=1)
    same = (lq[:, None] == labels[None, :]) & ~excluded
    has_pair = jnp.any(same, axis=1)
    log_pi = jax.scipy.special.logsumexp(jnp.where(same, logp, -jnp.inf), axis=1)
    return -jnp.where(has_pair, log_pi, 0.0), jnp.where(has_pair, uq, 0.0)


def nca_loss(A, X, labels, weights, queries=None):
    """NCA's weighted log loss L(A) (module docstring) of the points X (n, d)
    mapped by A (d, r); labels (n,) int; weights (n,) ≥ 0 (0 for padding
    rows, which are no point's neighbour either).  ``queries``: None — the
    leave-one-out loss of X itself — or (Q (q, d), their labels (q,), their
    weights (q,)), whose neighbours are drawn among X (held-out points).
    Points without a neighbour of their class take no part (their term is
    −log 0)."""
    terms, u = nca_terms(A, X, labels, weights, queries)
    return jnp.sum(u * terms) / jnp.maximum(jnp.sum(u), 1e-30)


@functools.partial(jax.jit, static_argnames=("iterations",))
def _minimise(A0, X, labels, weights, held_out, iterations: int):
    """(the iterate of least held-out loss among A0 and ``iterations``
    L-BFGS steps on :func:`nca_loss` of the points X, the held-out loss of
    each iterate (iterations + 1,)); ``held_out``: (Q, labels, weights) of
    the points that choose."""
    def objective(A):
        return nca_loss(A, X, labels, weights)

    solver = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(objective)

    def step(carry, _):
        A, state, best, best_loss = carry
        value, grad = value_and_grad(A, state=state)
        updates, state = solver.update(grad, state, A, value=value, grad=grad, value_fn=objective)
        A = optax.apply_updates(A, updates)
        loss = nca_loss(A, X, labels, weights, held_out)
        better = loss < best_loss  # NaN never is
        return (A, state, jnp.where(better, A, best), jnp.where(better, loss, best_loss)), loss

    loss0 = nca_loss(A0, X, labels, weights, held_out)
    (_, _, best, _), losses = jax.lax.scan(step, (A0, solver.init(A0), A0, loss0), None, length=iterations)
    return best, jnp.concatenate([loss0[None], losses])


@jax.jit
def _gains(A0, A, X, labels, weights, held_out):
    """(each held-out point's NCA loss at A0 less at A (q,), their weights
    (q,)); neighbours among the points X."""
    terms0, u = nca_terms(A0, X, labels, weights, held_out)
    terms, _ = nca_terms(A, X, labels, weights, held_out)
    return terms0 - terms, u


def learn_metric(X, y, *, max_points: int = MAX_POINTS, iterations: int = ITERATIONS, seed: int = 0,
                 sample_weight=None) -> np.ndarray:
    """The NCA map A (d, d) of the (m, d) points X with labels y (m,)
    (module docstring): search ``X @ A`` for the neighbours of the learned
    metric.  Computed in X's compute dtype (float32 unless X is float64 under
    ``jax_enable_x64``), returned as a NumPy array of it.

    Args:
      X: (m, d) training points, m ≥ 2.
      y: (m,) class labels (any sortable values), or an (m, C) indicator
        matrix (multilabel: the points of one label set are one class).
      max_points: learn on at most this many points (a seeded random subset).
      iterations: L-BFGS iterations.
      seed: seed of the subset and of its held-out quarter.
      sample_weight: None or (m,) non-negative weights u_i of the points'
        terms in L(A).
    """
    Xa = as_points(X)
    m, d = Xa.shape
    if m < 2:
        raise ValueError(f"a metric needs at least 2 training points, got {m}")
    _, Y, multilabel = encode_labels(y, m)
    max_points = check_integer(max_points, "max_points", low=2)
    iterations = check_integer(iterations, "iterations", low=1)
    seed = check_integer(seed, "seed", low=0)
    weights = sample_weights(sample_weight, m)
    # multilabel: the points of one label set are one class
    labels = np.unique(Y, axis=0, return_inverse=True)[1].ravel() if multilabel else np.argmax(Y, axis=1)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(m)[:max_points]
    n_held = max(2, int(round(HELD_OUT * len(rows))))
    dtype = compute_dtype(Xa)
    Xs = np.asarray(Xa[rows], np.float64)
    Xs = Xs - Xs.mean(axis=0)
    sigma = Xs.std(axis=0)
    sigma = np.where(sigma > 0, sigma, 1.0)
    u = np.ones(m) if weights is None else np.asarray(weights, np.float64)

    def padded(part):  # rows of the subset, padded to shared_rows with weight 0
        pad = shared_rows(len(part)) - len(part)
        return (to_device(np.concatenate([Xs[part], np.zeros((pad, d))]), dtype),
                to_device(np.concatenate([labels[rows[part]], np.full(pad, -1)]), np.int32),
                to_device(np.concatenate([u[rows[part]], np.zeros(pad)]), dtype))

    A0 = np.diag(1.0 / sigma).astype(dtype)
    choose, test, train = np.split(np.arange(len(rows)), [n_held // 2, n_held])
    if min(len(choose), len(test), len(train)) < 1:  # too few points to learn and test a metric
        return A0
    train = padded(train)
    A, _ = _minimise(to_device(A0), *train, padded(choose), iterations)
    gain, held_weights = _gains(to_device(A0), A, *train, padded(test))
    A = np.asarray(A) if clear_gain(np.asarray(gain), np.asarray(held_weights)) else A0
    if not np.all(np.isfinite(A)):
        raise FloatingPointError("the NCA metric diverged (non-finite entries); fit with metric=None")
    return A


def clear_gain(gain, weights) -> bool:
    """Whether the held-out points' gains (n,) — each point's NCA loss at A₀
    less at the chosen iterate — have a weighted mean above
    :data:`MIN_GAIN_SE` of its standard errors (points of weight 0 aside)."""
    w = np.asarray(weights, np.float64)
    w = w / max(w.sum(), 1e-300)
    gain = np.asarray(gain, np.float64)
    mean = float(np.sum(w * gain))
    se = float(np.sqrt(np.sum(w * (gain - mean) ** 2) * np.sum(w * w)))
    return mean > MIN_GAIN_SE * se


def check_transform(transform, n_features: int, name: str = "metric") -> np.ndarray:
    """A user's map A as a (d, r) NumPy float64 array, d = ``n_features``,
    r ≥ 1, finite — else a TypeError or ValueError naming ``name``."""
    try:
        A = np.asarray(transform)
    except Exception as err:  # noqa: BLE001 — anything that is no array
        raise TypeError(f"{name} must be None, one of {METRICS} or a (n_features, r) array, got "
                        f"{type(transform).__name__}") from err
    if A.dtype == object or not (np.issubdtype(A.dtype, np.number) or A.dtype == np.bool_) or np.iscomplexobj(A):
        raise TypeError(f"{name} must be a real (n_features, r) array, got dtype {A.dtype}")
    if A.ndim != 2 or A.shape[0] != n_features or A.shape[1] < 1:
        raise ValueError(f"{name} must be a (n_features, r) = ({n_features}, r ≥ 1) array, got shape {A.shape}")
    A = A.astype(np.float64)
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} holds non-finite entries")
    return A


def apply_metric(X, transform):
    """The points X (n, d) mapped by ``transform`` A (d, r): X @ A, or X
    itself when A is None.  On the host (NumPy, in float64 when X or A is)
    unless X is traced (under ``jax.jit``)."""
    if transform is None:
        return X
    if isinstance(X, jax.core.Tracer):
        return _mapped(X, jnp.asarray(transform, X.dtype))
    A = np.asarray(transform)
    wide = np.float64 if np.float64 in (np.asarray(X).dtype, A.dtype) else np.float32
    return np.asarray(X, wide) @ A.astype(wide)


def metric_transform(metric, X, y, *, seed: int = 0, sample_weight=None):
    """The map A of ``fit(metric=...)`` for the (m, d) host points X, or None:
    None → None (the Euclidean metric of the features as given); ``"nca"``
    → :func:`learn_metric` (X, y, seed, sample_weight); a (d, r) array →
    itself, checked (:func:`check_transform`).  In X's compute dtype."""
    if metric is None:
        return None
    if isinstance(metric, str) and metric in METRICS:
        return learn_metric(X, y, seed=seed, sample_weight=sample_weight)  # in X's compute dtype
    if isinstance(metric, str):
        raise ValueError(f"unknown metric {metric!r}; use None, one of {METRICS} or a (n_features, r) array"
                         + did_you_mean(metric, METRICS))
    return check_transform(metric, X.shape[1]).astype(compute_dtype(X))
