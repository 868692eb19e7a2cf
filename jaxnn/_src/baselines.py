"""Baseline contenders of the papers: SGD logistic regression, linear SVM, plain k-NN.

Same functional shape as jaxnn's main API: ``*_fit(X, y, ...) -> model`` and the
generic :func:`predict`, :func:`predict_proba`, :func:`decision_function`,
which dispatch on the model type.

* :func:`sgd_fit` — linear model, one-vs-rest logistic loss + L2, trained by
  minibatch SGD with optax (paper 000's SGD contender).
* :func:`svm_fit` — linear SVM, one-vs-rest (squared) hinge + L2 (like
  scikit-learn's ``LinearSVC``), with Platt-scaled posteriors (paper 003 eq. 31).
* :func:`knn_fit` — plain k-NN, H_c(x) = Σ_{j∈NN_k(x)} y_jc, y ∈ {−1,+1}.

Conventions
-----------
* ``X`` is ``(m, d)`` numeric; ``y`` is ``(m,)`` of any sortable hashable label
  values.  ``classes = np.unique(y)`` (at least two); column ``c`` of every
  ``(n, C)`` output is ``classes[c]``.  :func:`predict` returns the original
  label values as a numpy array; scores and probabilities are JAX arrays.
* Nothing is standardised implicitly: the linear models are sensitive to
  feature scale, so standardise (or otherwise scale) features yourself, e.g.
  with training-set mean and standard deviation.
* float32 by default (float64 inputs keep float64 only when ``jax_enable_x64``
  is on).  Training loops are jitted; hyper-parameters that fix array shapes
  (epochs, batch size, folds) are static, the others (alpha, C, learning rate,
  seed) are traced, so refits with the same shapes do not retrace.
* Models are immutable frozen dataclasses registered as pytrees (arrays are
  leaves, ``classes``/``k`` are static metadata).
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxnn._src import programs, shared_sizes
from jaxnn._src.checks import check_bool, check_integer, check_points, check_real, check_whole_labels
from jaxnn._src.graph import neighbor_sum, padded_query
from jaxnn._src.model import HostPickled, without_float64
from jaxnn._src.points import as_float, float32_origin, shift_points
from jaxnn._src.shared_sizes import (at_shared_rows, first_k, first_rows, in_blocks, padded_rows, query_rows,
                                     shared_rows, to_device)

__all__ = [
    "SGDModel",
    "SVMModel",
    "KNNModel",
    "sgd_fit",
    "svm_fit",
    "knn_fit",
    "predict",
    "predict_proba",
    "decision_function",
]

_SVM_LOSSES = ("squared_hinge", "hinge")


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------
@functools.partial(jax.tree_util.register_dataclass, data_fields=["W", "b"], meta_fields=["classes"])
@dataclasses.dataclass(frozen=True)
class SGDModel(HostPickled):
    """One-vs-rest linear logistic model f(x) = x W + b.

    Attributes:
      W: (d, C) weights.
      b: (C,) intercepts.
      classes: tuple of the C sorted class labels (static pytree metadata).
    """

    W: jax.Array
    b: jax.Array
    classes: tuple


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["W", "b", "platt_a", "platt_b"],
    meta_fields=["classes", "loss"],
)
@dataclasses.dataclass(frozen=True)
class SVMModel(HostPickled):
    """One-vs-rest linear SVM f(x) = x W + b with per-class Platt sigmoids.

    Attributes:
      W: (d, C) weights.
      b: (C,) intercepts.
      platt_a, platt_b: (C,) Platt parameters, p̂_c(x) = 1 / (1 + exp(a_c f_c(x) + b_c)).
      classes: tuple of the C sorted class labels (static).
      loss: ``"squared_hinge"`` or ``"hinge"`` (static, informative).
    """

    W: jax.Array
    b: jax.Array
    platt_a: jax.Array
    platt_b: jax.Array
    classes: tuple
    loss: str = "squared_hinge"


@functools.partial(jax.tree_util.register_dataclass, data_fields=["X", "labels", "origin"], meta_fields=["k", "classes"])
@dataclasses.dataclass(frozen=True)
class KNNModel(HostPickled):
    """Plain k-NN rule (all leveraging coefficients α ≡ 1).

    Attributes:
      X: (m, d) training points.
      labels: (m,) int32 class indices into ``classes``.
      k: number of neighbours (static).
      classes: tuple of the C sorted class labels (static).
      origin: None, or (d,): subtracted in float64 from float64 points far
        from 0 before their cast to float32, training and query alike
        (as :attr:`jaxnn.Model.origin`).
    """

    X: jax.Array
    labels: jax.Array
    k: int
    classes: tuple
    origin: Optional[jax.Array] = None


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------
def _check_y(y, m: int) -> tuple[np.ndarray, tuple]:
    """Labels → (int32 class indices (m,), sorted classes tuple)."""
    if y is None or isinstance(y, (str, bytes, dict, set)) or isinstance(y, numbers.Number):
        raise TypeError(f"y must be a 1-D array-like of labels, got {type(y).__name__}")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (n_samples,), got shape {y.shape}")
    if y.shape[0] != m:
        raise ValueError(f"X has {m} rows but y has {y.shape[0]} labels")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite labels")
    check_whole_labels(y)
    if y.dtype.kind == "c":
        raise TypeError(f"y labels must be sortable, got dtype {y.dtype}")
    try:
        classes, idx = np.unique(y, return_inverse=True)
    except TypeError as err:
        raise TypeError(f"y labels must be sortable and hashable: {err}") from err
    if classes.shape[0] < 2:
        raise ValueError(f"y must contain at least 2 classes, got {classes.shape[0]} ({classes.tolist()!r})")
    return idx.reshape(-1).astype(np.int32), tuple(classes)


def _check_int(value, name: str, *, low: int | None = 1, high: int | None = None) -> int:
    return check_integer(value, name, low=low, high=high)


def _check_positive(value, name: str) -> float:
    return check_real(value, name, low=0.0, low_open=True)


def _default_rate(learning_rate, d: int) -> float:
    if learning_rate is None:
        return 1.0 / float(np.sqrt(d))
    return _check_positive(learning_rate, "learning_rate")


def _check_features(model, X, *, device: bool = True):
    """X checked against the model's features (k-NN: shifted by its origin),
    as a floating JAX array — or, with ``device=False``, as given (host arrays
    stay on the host)."""
    X = check_points(X, "X")
    d = model.X.shape[1] if isinstance(model, KNNModel) else model.W.shape[0]
    if X.shape[1] != d:
        raise ValueError(f"X has {X.shape[1]} features but the model was fitted on {d}")
    if isinstance(model, KNNModel):  # shifted like the training points, before the cast
        X = shift_points(X, model.origin)
    return as_float(X) if device else X


def _signs(labels: np.ndarray, C: int, dtype) -> jax.Array:
    """(m,) class indices → (m, C) one-vs-rest targets in {−1, +1}."""
    return jnp.where(jnp.asarray(labels)[:, None] == jnp.arange(C)[None, :], 1.0, -1.0).astype(dtype)


def _labels_of(classes: tuple, idx) -> np.ndarray:
    return np.asarray(classes)[np.asarray(idx)]


# --------------------------------------------------------------------------
# SGD: one-vs-rest logistic regression
# --------------------------------------------------------------------------
def shared_features(d: int) -> int:
    """The features a small training set is padded to: whole blocks of 8,
    their number rounded up to three significant bits (8, 16, …, 64, 80, 96,
    112, 128, 160, …: at most a quarter more).  Zero features leave a linear
    model's fit unchanged (their weights get no gradient and stay 0)."""
    return in_blocks(d, 8)


def _shared_training(X, labels: np.ndarray):
    """A linear baseline's training set at shared sizes, so that trainings of
    nearby sizes — cross-validation folds, data sets of a few features —
    share one compiled program (each new (m, d) would compile the SGD, SVM
    and Platt programs again).

    X (m, d) checked points, labels (m,) int32 → (X (M, d') on the device,
    labels (M,) int32 on the device, m, d): at most
    :data:`shared_sizes.SHARED_MAX_ROWS` rows are padded with zero rows to
    :func:`shared_sizes.shared_rows` (m) and the features with zero columns to
    :func:`shared_features` (d), on the host; larger sets, and traced X, as
    they are (M = m, d' = d).  Padded rows carry zero weight in every loss."""
    m, d = X.shape
    if isinstance(X, jax.core.Tracer) or m > shared_sizes.SHARED_MAX_ROWS:
        return as_float(X), jnp.asarray(labels), m, d
    host = np.asarray(X)
    if host.dtype not in (np.float32, np.float64):
        host = host.astype(np.float64 if jax.config.jax_enable_x64 else np.float32)
    padded = np.zeros((shared_rows(m), shared_features(d)), host.dtype)
    padded[:m, :d] = host
    return to_device(padded), to_device(padded_rows(labels, padded.shape[0])), m, d


def _real_rows(rows: int, n, dtype) -> jax.Array:
    """(rows,) 1 for the first n (traced) rows, 0 for the padding."""
    return (jnp.arange(rows) < n).astype(dtype)


def _trained(params, d: int, what: str):
    """The trained (W (d', C), b, …) on the host: a ValueError if training
    diverged (a step size too large for the data), else the arrays back on
    the device with W cut to the d real features (checked and cut on the
    host: eagerly, each shape compiled its own small programs)."""
    host = [np.asarray(p) for p in params]
    if not all(np.all(np.isfinite(p)) for p in host):
        raise ValueError(f"{what} diverged (non-finite weights): lower learning_rate or rescale X")
    host[0] = host[0][:d]
    return tuple(to_device(p) for p in host)


def _shuffled_rows(key, n, rows: int) -> jax.Array:
    """(rows,) a permutation of the first n (traced) rows followed by the
    padding rows: the real rows sorted by their 32 random bits,
    ``jax.random.bits(key, (rows,), uint32)``
    (stable, so ties keep their order), the padding last.  JAX's default
    (partitionable) Threefry draws an entry's bits from its index alone, so
    the order of the real rows is the same at every padded size."""
    bits = jax.random.bits(key, (rows,), jnp.uint32)  # (uint64 under x64 by default: another order)
    last = jnp.array(np.iinfo(bits.dtype).max, bits.dtype)
    return jnp.argsort(jnp.where(jnp.arange(rows) < n, bits, last), stable=True)


def _cosine_decay(init_value, steps):
    """optax's ``cosine_decay_schedule(init_value, steps)`` with a traced
    number of steps (optax checks it on the host)."""

    def schedule(count):
        return init_value * 0.5 * (1.0 + jnp.cos(jnp.pi * jnp.minimum(count, steps) / steps))

    return schedule


@programs.jit(static_argnames=("n_classes", "epochs", "batch_size"))
def _sgd_train(X, labels, n, seed, alpha, learning_rate, *, n_classes: int, epochs: int, batch_size: int):
    """Minibatch Adam on mean_i Σ_c log(1 + exp(−Y_ic f_ic)) + alpha/2 ‖W‖².

    X (M, d), labels (M,) int32 of which the first n (traced) rows are real
    (:func:`_shared_training`) → W (d, C), b (C,).  Each epoch visits the
    real rows in a fresh order (:func:`_shuffled_rows` of
    ``jax.random.key(seed)`` folded with the epoch), ``batch_size`` at a time;
    the ragged last batch is padded with masked (zero-weight) rows and the
    batches holding only padding are skipped (no step: Adam's count and the
    schedule see the ⌈n / batch_size⌉ real batches of an epoch).
    """
    M, d = X.shape
    C = n_classes
    Y = _signs(labels, C, X.dtype)
    key = jax.random.key(seed)
    n_batches = -(-M // batch_size)
    slots = n_batches * batch_size
    opt = optax.adam(_cosine_decay(learning_rate, epochs * ((n + batch_size - 1) // batch_size)))
    params = (jnp.zeros((d, C), X.dtype), jnp.zeros((C,), X.dtype))
    mask = _real_rows(slots, n, X.dtype).reshape(n_batches, batch_size)

    def batch_loss(p, idx, w):
        W, b = p
        f = X[idx] @ W + b
        per_example = jnp.sum(jax.nn.softplus(-Y[idx] * f), axis=1)
        return jnp.sum(w * per_example) / jnp.sum(w) + 0.5 * alpha * jnp.sum(W * W)

    def batch_step(carry, xs):
        def step(carry):
            p, s = carry
            g = jax.grad(batch_loss)(p, idx, w)
            u, s = opt.update(g, s, p)
            return optax.apply_updates(p, u), s

        idx, w = xs
        return jax.lax.cond(w[0] > 0, step, lambda carry: carry, carry), None

    def epoch_step(carry, e):
        perm = _shuffled_rows(jax.random.fold_in(key, e), n, M)
        perm = jnp.concatenate([perm, jnp.zeros((slots - M,), perm.dtype)]).reshape(n_batches, batch_size)
        carry, _ = jax.lax.scan(batch_step, carry, (perm, mask))
        return carry, None

    (params, _), _ = jax.lax.scan(epoch_step, (params, opt.init(params)), jnp.arange(epochs))
    return params


def sgd_fit(X, y, *, alpha=1e-4, epochs=20, batch_size=64, learning_rate=None, seed=0) -> SGDModel:
    """Linear one-vs-rest logistic regression trained by minibatch SGD (optax).

    Minimises, for each class c independently (one-vs-rest, also for C = 2),
    ``mean_i log(1 + exp(−y_ic (x_i·w_c + b_c))) + alpha/2 ‖w_c‖²`` with
    y_ic ∈ {−1,+1}; the intercept is not penalised (as scikit-learn's
    ``SGDClassifier(loss="log_loss")``).

    Optimiser: ``optax.adam`` with a cosine-decayed step size from
    ``learning_rate`` to 0 over all ``epochs × ceil(m / batch_size)`` steps.
    Adam moves every coordinate of W by about ``learning_rate`` per step, so a
    step changes a score x·w_c by about ``learning_rate · √d`` on
    standardised features; the default ``learning_rate = 1/√d`` keeps that
    O(1) whatever d, where a fixed step would under-train small sets or
    overshoot for large d.  Each epoch shuffles with a
    permutation derived from ``seed``; the ragged last batch is padded with
    zero-weight rows, so every example is seen exactly once per epoch.  The
    whole loop is one jitted ``lax.scan`` (epochs) over a ``lax.scan``
    (minibatches); ``epochs``, ``batch_size`` and the number of classes are
    static, so refits that change only alpha, learning_rate, seed or the
    values of X do not retrace.  Few rows means few steps per epoch: on tiny
    sets raise ``epochs`` (or lower ``batch_size``) if training stalls.

    Features are **not** standardised: scale them yourself (e.g. to zero mean,
    unit variance on the training set).

    Args:
      X: (m, d) training points.
      y: (m,) labels, ≥ 2 classes.
      alpha: L2 penalty > 0.
      epochs: passes over the data ≥ 1.
      batch_size: rows per step ≥ 1 (clamped to m).
      learning_rate: initial Adam step size > 0; None → 1/√d.
      seed: integer seed of the shuffling, 0 ≤ seed < 2³².

    Returns:
      :class:`SGDModel` with ``W`` (d, C), ``b`` (C,).
    """
    X = check_points(X, "X")
    labels, classes = _check_y(y, X.shape[0])
    alpha = _check_positive(alpha, "alpha")
    learning_rate = _default_rate(learning_rate, X.shape[1])
    epochs = _check_int(epochs, "epochs")
    batch_size = _check_int(batch_size, "batch_size")
    seed = _check_int(seed, "seed", low=0, high=2**32 - 1)
    Xj, labels, m, d = _shared_training(X, labels)
    W, b = _sgd_train(
        Xj, labels, m, jnp.asarray(seed, jnp.uint32), jnp.asarray(alpha, Xj.dtype),
        jnp.asarray(learning_rate, Xj.dtype), n_classes=len(classes), epochs=epochs,
        batch_size=min(batch_size, Xj.shape[0]),
    )
    W, b = _trained((W, b), d, "SGD training")
    return SGDModel(W=W, b=b, classes=classes)


# --------------------------------------------------------------------------
# Linear SVM with Platt scaling
# --------------------------------------------------------------------------
def _hinge_objective(params, X, y, w, lam):
    """Weighted-mean hinge + lam/2 ‖coef‖² for one class; y in {−1,+1}, w (m,) ≥ 0."""
    coef, icpt = params
    loss = jnp.maximum(0.0, 1.0 - y * (X @ coef + icpt))
    return jnp.sum(w * loss) / jnp.sum(w) + 0.5 * lam * jnp.sum(coef * coef)


def _exact_step(r, q, a, lam, c0, c1):
    """Exact minimiser t ≥ 0 of the squared-hinge objective along a direction.

    φ(t) = Σ_i a_i max(0, r_i − t q_i)² + lam/2 ‖w + t p‖² is convex and
    piecewise quadratic, with φ'(t) = −2 Σ a_i max(0, r_i − t q_i) q_i +
    lam (c0 + t c1), c0 = w·p, c1 = ‖p‖².  Safeguarded Newton from t = 1
    keeps a bracket φ'(lo) < 0 < φ'(hi); a Newton point outside it is
    replaced by doubling (no upper end yet) or bisection.  40 iterations,
    each O(m), no matrix-vector product.
    Returns 0 when p is not a descent direction.
    """

    def dphi(t):
        return -2.0 * jnp.sum(a * jnp.maximum(r - t * q, 0.0) * q) + lam * (c0 + t * c1)

    def d2phi(t):
        return 2.0 * jnp.sum(a * (r - t * q > 0) * q * q) + lam * c1

    def refine(carry, _):
        lo, hi, t = carry
        g, h = dphi(t), d2phi(t)
        lo = jnp.where(g < 0, t, lo)
        hi = jnp.where(g > 0, t, hi)
        tn = t - g / jnp.where(h > 0, h, 1.0)
        fallback = jnp.where(jnp.isinf(hi), 2.0 * t, 0.5 * (lo + hi))  # expand, else bisect
        tn = jnp.where((h > 0) & (tn > lo) & (tn < hi), tn, fallback)
        return (lo, hi, jnp.where(g == 0, t, tn)), None

    zero = jnp.zeros((), r.dtype)
    (_, _, t), _ = jax.lax.scan(refine, (zero, zero + jnp.inf, zero + 1.0), None, length=40)
    return jnp.where(dphi(zero) < 0, t, zero)


def _sqhinge_solve(X, y, w, lam, iters: int):
    """L-BFGS for one class: mean_w max(0, 1 − y f)² + lam/2 ‖coef‖², f = X coef + icpt.

    Directions come from ``optax.scale_by_lbfgs`` (memory 10); the step length
    is the exact line minimum (:func:`_exact_step`), which keeps every
    curvature pair positive and compiles far faster than a generic line
    search under vmap.  Converged problems stay put (zero gradient → zero step).
    """
    a = w / jnp.sum(w)
    opt = optax.scale_by_lbfgs(memory_size=10)
    params = (jnp.zeros((X.shape[1],), X.dtype), jnp.zeros((), X.dtype))

    def step(carry, _):
        (coef, icpt), state = carry
        f = X @ coef + icpt
        r = 1.0 - y * f
        dz = -2.0 * a * jnp.maximum(r, 0.0) * y  # d loss / d f
        grad = (X.T @ dz + lam * coef, jnp.sum(dz))
        direction, state = opt.update(grad, state, (coef, icpt))
        pw, pb = -direction[0], -direction[1]
        descent = jnp.vdot(grad[0], pw) + grad[1] * pb < 0
        pw = jnp.where(descent, pw, -grad[0])
        pb = jnp.where(descent, pb, -grad[1])
        q = y * (X @ pw + pb)
        t = _exact_step(r, q, a, lam, jnp.vdot(coef, pw), jnp.vdot(pw, pw))
        return ((coef + t * pw, icpt + t * pb), state), None

    (params, _), _ = jax.lax.scan(step, (params, opt.init(params)), None, length=iters)
    return params


def _adam_solve(fun, params, iters: int, learning_rate):
    """``iters`` full-batch Adam steps with a cosine-decayed step size (non-smooth hinge)."""
    opt = optax.adam(optax.cosine_decay_schedule(learning_rate, iters))

    def step(carry, _):
        p, s = carry
        u, s = opt.update(jax.grad(fun)(p), s, p)
        return (optax.apply_updates(p, u), s), None

    (params, _), _ = jax.lax.scan(step, (params, opt.init(params)), None, length=iters)
    return params


def _svm_train(X, Y, weights, lam, learning_rate, *, epochs: int, squared: bool):
    """Train one-vs-rest SVMs for every (weight vector, class) pair.

    X (m, d), Y (m, C) ±1, weights (F, m) ≥ 0, lam (F,) → W (F, d, C), b (F, C).
    """
    d = X.shape[1]

    def one(y, w, lam):
        if squared:
            return _sqhinge_solve(X, y, w, lam, epochs)
        fun = lambda p: _hinge_objective(p, X, y, w, lam)  # noqa: E731
        p0 = (jnp.zeros((d,), X.dtype), jnp.zeros((), X.dtype))
        return _adam_solve(fun, p0, epochs, learning_rate)

    per_class = jax.vmap(one, in_axes=(1, None, None), out_axes=(1, 0))  # classes: W (d, C), b (C,)
    # One fit after another (all classes of a fit at once): vmapped over the F fits too,
    # the (F·C, m) solver vectors planned 12.4 GB at m = 10⁶, d = 16, C = 100.
    return jax.lax.map(lambda wl: per_class(Y, *wl), (weights, lam))


#: at most this many Newton steps for Platt's sigmoid, and at most this many halvings of a step
_PLATT_ITERS = 50
_PLATT_HALVINGS = 30
#: Platt's Newton iteration stops after a step taken where both gradient entries were below
#: this times the count of real rows (Lin, Lin & Weng stop below 10⁻⁵ in float64; a float32
#: sum over m rows cannot resolve an absolute bound)
_PLATT_GTOL = 1e-6
#: a Newton decrement below this many float steps of the objective is taken whole, unchecked
_PLATT_RESOLUTION = 1024


def _softplus(z):
    """log(1 + e^z), as max(z, 0) + log1p(e^−|z|) (``jax.nn.softplus`` guards infinities at twice the cost)."""
    return jnp.maximum(z, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(z)))


def _platt_fit(f, y, w=None):
    """Platt's sigmoid for every class, by safeguarded Newton (Lin, Lin & Weng 2007).

    f (m, C) out-of-fold decision values, y (m, C) in {−1,+1}, w None or
    (m,) 0/1 row weights (0: a padding row, left out).  Minimises
    Σ_i w_i (−t_i log p_i − (1 − t_i) log(1 − p_i)) over (a, b), with
    p_i = 1 / (1 + exp(a f_i + b)) and Platt's smoothed targets
    t = (N+ + 1)/(N+ + 2) for positives and 1/(N− + 2) for negatives.
    Each Newton step (2×2 system, closed form, Levenberg-damped) is halved
    until the objective decreases (at most :data:`_PLATT_HALVINGS` halvings;
    none decreasing it: the iteration stops) — taken whole where its Newton
    decrement is below what the objective resolves in f's dtype
    (:data:`_PLATT_RESOLUTION`); the iteration also stops after
    the step taken at a gradient below :data:`_PLATT_GTOL` times the real
    rows' count, and after :data:`_PLATT_ITERS` steps.  The classes run as
    one batch (``vmap``: until the last of them stops).  Returns a (C,), b (C,).
    """
    halvings = 2.0 ** -jnp.arange(_PLATT_HALVINGS, dtype=f.dtype)
    w = jnp.ones(f.shape[:1], f.dtype) if w is None else w

    def one(f, y):
        n_pos = jnp.sum(w * (y > 0))
        n_neg = jnp.sum(w * (y < 0))
        t = jnp.where(y > 0, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
        gtol = _PLATT_GTOL * jnp.sum(w)

        def nll(a, b):
            z = a * f + b
            return jnp.sum(w * (t * _softplus(z) + (1.0 - t) * _softplus(-z)))

        def newton(state):
            a, b, it, _ = state
            p = jax.nn.sigmoid(-(a * f + b))
            r = w * (t - p)  # d nll / dz
            h = w * p * (1.0 - p)  # d² nll / dz²
            ga, gb = jnp.sum(r * f), jnp.sum(r)
            haa, hab, hbb = jnp.sum(h * f * f), jnp.sum(h * f), jnp.sum(h)
            damp = 1e-12 + 1e-7 * (haa + hbb)
            haa, hbb = haa + damp, hbb + damp
            det = haa * hbb - hab * hab
            da = -(hbb * ga - hab * gb) / det
            db = -(haa * gb - hab * ga) / det
            now = nll(a, b)
            # near the minimum the step's decrease, about half the Newton decrement, is below what
            # the objective resolves in f's dtype: the full step is taken (Newton's quadratic region)
            unresolved = -(ga * da + gb * db) <= _PLATT_RESOLUTION * jnp.finfo(f.dtype).eps * (jnp.abs(now) + 1.0)

            def smaller(trial):  # the first halving that decreases the objective: (its index, found)
                j, _ = trial
                value = nll(a + halvings[j] * da, b + halvings[j] * db)
                found = jnp.isfinite(value) & (value < now)
                return jnp.where(found, j, j + 1), found

            j, found = jax.lax.while_loop(lambda trial: (trial[0] < _PLATT_HALVINGS) & ~trial[1], smaller,
                                          (jnp.zeros((), jnp.int32), unresolved))
            s = jnp.where(found, halvings[jnp.minimum(j, _PLATT_HALVINGS - 1)], 0.0)
            converged = jnp.maximum(jnp.abs(ga), jnp.abs(gb)) <= gtol
            return a + s * da, b + s * db, it + 1, converged | ~found

        ab0 = (jnp.zeros((), f.dtype), jnp.log((n_neg + 1.0) / (n_pos + 1.0)))
        a, b, _, _ = jax.lax.while_loop(lambda state: (state[2] < _PLATT_ITERS) & ~state[3], newton,
                                        ab0 + (jnp.zeros((), jnp.int32), jnp.zeros((), bool)))
        return a, b

    return jax.vmap(one, in_axes=(1, 1))(f, y)


@programs.jit(static_argnames=("n_classes", "n_folds", "epochs", "squared"))
def _svm_fit_jit(X, labels, folds, n, C, learning_rate, *, n_classes: int, n_folds: int, epochs: int,
                 squared: bool):
    """SVMs on all data and on each training fold; scores for Platt scaling.

    X (m, d), labels (m,) int32, folds (m,) int32 fold ids (ignored when
    n_folds = 0: the training scores are returned instead), of which the
    first n (traced) rows are real (:func:`_shared_training`; the padding
    weighs nothing in any fit).  Returns W (d, C), b (C,), out-of-fold
    scores (m, C).
    """
    m = X.shape[0]
    Y = _signs(labels, n_classes, X.dtype)
    real = _real_rows(m, n, X.dtype)
    held_out = folds[None, :] == jnp.arange(n_folds)[:, None]  # (F, m)
    weights = jnp.concatenate([real[None], (~held_out).astype(X.dtype) * real], axis=0)
    # mean loss + lam/2 ‖w‖² has the minimiser of 1/2 ‖w‖² + C Σ loss when lam = 1 / (C m_train).
    lam = 1.0 / (C * jnp.sum(weights, axis=1))
    Wf, bf = _svm_train(X, Y, weights, lam, learning_rate, epochs=epochs, squared=squared)
    W, b = Wf[0], bf[0]
    if n_folds == 0:
        f_oof = X @ W + b
    else:
        # each row scored by the fit that held it out, one fold at a time (no (F, m, C) block)
        def add_fold(f, acc):
            return jnp.where((folds == f)[:, None], X @ Wf[f + 1] + bf[f + 1], acc)

        f_oof = jax.lax.fori_loop(0, n_folds, add_fold, jnp.zeros((m, n_classes), X.dtype))
    return W, b, f_oof


@programs.jit(static_argnames=("n_classes",))
def _platt_jit(f, labels, n, *, n_classes: int):
    """(m, C) scores, (m,) class indices of which the first n (traced) are
    real → Platt (a, b), each (C,)."""
    return _platt_fit(f, _signs(labels, n_classes, f.dtype), _real_rows(f.shape[0], n, f.dtype))


def _check_platt_folds(platt_folds, m: int) -> int:
    """platt_folds as an int in [2, m]; a ValueError that explains the
    cross-fit (and how to shrink or skip it) when there are fewer than
    platt_folds training examples (the default 5 on a tiny training set)."""
    platt_folds = _check_int(platt_folds, "platt_folds", low=2)
    if platt_folds > m:
        smaller = f"platt_folds=k with 2 <= k <= {m}, or " if m >= 2 else ""
        raise ValueError(
            f"Platt scaling's {platt_folds}-fold cross-fit (platt_folds={platt_folds}) needs at least {platt_folds} "
            f"training examples, got {m}: pass {smaller}platt_folds=None to fit the Platt sigmoids on the "
            f"training scores instead (no cross-fit)"
        )
    return platt_folds


def _check_platt_classes(labels: np.ndarray, classes: tuple, n_folds: int) -> None:
    """A ValueError when a class has a single training example: the fold that
    holds it is fitted with no positive of that class, so its one out-of-fold
    score says nothing and the class's sigmoid can come out inverted (a_c > 0).
    Two examples suffice: :func:`_stratified_folds` deals a class's members to
    distinct folds, so every fold that holds one trains on another."""
    counts = np.bincount(labels, minlength=len(classes))
    lone = np.flatnonzero(counts < 2)
    if lone.size:
        shown = ", ".join(repr(np.asarray(classes[c]).item()) for c in lone[:5]) + (", ..." if lone.size > 5 else "")
        raise ValueError(
            f"Platt scaling's {n_folds}-fold cross-fit (platt_folds={n_folds}) needs at least 2 training examples "
            f"of every class (each fold's SVMs must train on a positive of every class they score), but "
            f"{lone.size} of {len(classes)} classes have a single example ({shown}): pass platt_folds=None to fit "
            f"the Platt sigmoids on the training scores instead (no cross-fit), or drop or merge those classes "
            f"(a smaller platt_folds does not help)"
        )


def _stratified_folds(labels: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """(m,) fold ids: a seeded shuffle, then classes dealt round-robin over folds."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(labels.shape[0])
    folds = np.empty(labels.shape[0], np.int32)
    offset = 0
    for c in np.unique(labels):
        members = perm[labels[perm] == c]
        folds[members] = (offset + np.arange(members.shape[0])) % n_folds
        offset += members.shape[0]
    return folds


def svm_fit(
    X,
    y,
    *,
    C=1.0,
    loss: str = "squared_hinge",
    epochs=None,
    learning_rate=None,
    platt_folds=5,
    seed=0,
) -> SVMModel:
    """Linear one-vs-rest SVM (like ``LinearSVC``) with Platt-scaled posteriors.

    For each class c (one-vs-rest, also for C = 2), minimises
    ``1/2 ‖w_c‖² + C Σ_i ℓ(y_ic (x_i·w_c + b_c))`` with ℓ the squared hinge
    max(0, 1 − t)² (default) or the hinge max(0, 1 − t), y_ic ∈ {−1,+1}; the
    intercept is not penalised.  Training is full batch and jitted, vmapped
    over classes; the Platt folds' fits run one after another (``lax.map``:
    memory of one fit's (m, C) vectors, 2.8 GB at m = 10⁶, d = 16, C = 100):

    * squared hinge (C¹, piecewise quadratic): L-BFGS — directions from
      ``optax.scale_by_lbfgs``, exact line search along each — ``epochs``
      iterations (default 100; full batch, 3 matrix-vector products each);
    * hinge (non-smooth): ``optax.adam`` with a cosine-decayed step size from
      ``learning_rate``, ``epochs`` full-batch steps (default 1000).

    The defaults reach the optimum at C ≤ 1; at C = 100 they can stop short
    of it (the hinge more than the squared hinge) with the same test
    accuracy — raise ``epochs`` (squared hinge: 1000) where the objective
    itself matters.

    Posteriors (paper 003 eq. 31, Platt 1999): p̂_c(x) = 1 / (1 + exp(a_c f_c(x) + b_c)),
    (a_c, b_c) maximising the log-likelihood of out-of-fold decision values
    from a stratified ``platt_folds``-fold cross-validation (paper: 5), with
    Platt's smoothed targets (N+ + 1)/(N+ + 2) and 1/(N− + 2), by Newton's
    method with backtracking.  ``platt_folds=None`` fits the sigmoids on the
    (optimistic) training decision values instead.

    Features are **not** standardised: scale them yourself.

    Args:
      X: (m, d) training points.
      y: (m,) labels, ≥ 2 classes.
      C: inverse regularisation strength > 0.
      loss: ``"squared_hinge"`` or ``"hinge"``.
      epochs: optimiser iterations ≥ 1 (see above for the defaults).
      learning_rate: initial Adam step size > 0 (hinge loss only); None → 1/√d.
      platt_folds: cross-validation folds for Platt scaling, 2 ≤ folds ≤ m, or
        None (no cross-fit: sigmoids fitted on the training scores; needed
        below 5 training examples unless a smaller ``platt_folds`` is given,
        and whenever a class has a single training example: the cross-fit
        refuses it, as its fold would train with no positive of the class).
      seed: integer seed of the fold assignment, 0 ≤ seed < 2³².

    Returns:
      :class:`SVMModel` with ``W`` (d, C), ``b`` (C,), ``platt_a`` (C,), ``platt_b`` (C,).
    """
    X = check_points(X, "X")
    m = X.shape[0]
    labels, classes = _check_y(y, m)
    C_reg = _check_positive(C, "C")
    if not isinstance(loss, str):
        raise TypeError(f"loss must be a string, got {type(loss).__name__}")
    if loss not in _SVM_LOSSES:
        raise ValueError(f"unknown SVM loss {loss!r}; use one of {_SVM_LOSSES}")
    squared = loss == "squared_hinge"
    epochs = (100 if squared else 1000) if epochs is None else _check_int(epochs, "epochs")
    learning_rate = _default_rate(learning_rate, X.shape[1])
    seed = _check_int(seed, "seed", low=0, high=2**32 - 1)
    if platt_folds is not None:
        platt_folds = _check_platt_folds(platt_folds, m)
        _check_platt_classes(labels, classes, platt_folds)

    if platt_folds is None:
        n_folds, folds = 0, np.zeros(m, np.int32)
    else:
        n_folds, folds = platt_folds, _stratified_folds(labels, platt_folds, seed)
    Xj, labels, m, d = _shared_training(X, labels)
    folds = to_device(np.concatenate([folds, np.full(Xj.shape[0] - m, -1, np.int32)]))  # padding: in no fold
    W, b, f_oof = _svm_fit_jit(
        Xj, labels, folds, m, jnp.asarray(C_reg, Xj.dtype), jnp.asarray(learning_rate, Xj.dtype),
        n_classes=len(classes), n_folds=n_folds, epochs=epochs, squared=squared,
    )
    platt_a, platt_b = _platt_jit(f_oof, labels, m, n_classes=len(classes))
    W, b, platt_a, platt_b = _trained((W, b, platt_a, platt_b), d, "SVM training")
    return SVMModel(W=W, b=b, platt_a=platt_a, platt_b=platt_b, classes=classes, loss=loss)


# --------------------------------------------------------------------------
# Plain k-NN
# --------------------------------------------------------------------------
def knn_fit(X, y, *, k=10) -> KNNModel:
    """Plain k-NN rule: H_c(x) = Σ_{j∈NN_k(x)} y_jc with y_jc ∈ {−1,+1}.

    Prediction is argmax_c H_c (ties → lowest class index), i.e. the majority
    vote; :func:`predict_proba` gives the vote fractions count_c / k.
    Neighbours are exact Euclidean (:func:`jaxnn._src.graph.knn_query`); a
    query point that is also a training point counts as its own neighbour.

    Args:
      X: (m, d) training points.
      y: (m,) labels, ≥ 2 classes.
      k: neighbours, 1 ≤ k ≤ m.

    Returns:
      :class:`KNNModel` holding ``X`` (m, d), ``labels`` (m,) int32, ``k``.
    """
    Xc = check_points(X, "X")
    origin = float32_origin(Xc)  # float64 points far from 0 keep their digits, also once cast from x64
    Xj = as_float(shift_points(Xc, origin))
    labels, classes = _check_y(y, Xj.shape[0])
    k = _check_int(k, "k", low=1)
    if k > Xj.shape[0]:
        raise ValueError(f"k must be <= the number of training points ({Xj.shape[0]}), got k={k}")
    return KNNModel(X=Xj, labels=to_device(labels), k=k, classes=classes,
                    origin=None if origin is None else jnp.asarray(origin, Xj.dtype))


@programs.jit(static_argnames=("C", "output", "dtype"))
def _votes(labels, idx, k=None, *, C: int, output: str, dtype: str):
    """Neighbour labels (via idx (n, k'), of which the first k — traced; None:
    all k' — are the k-NN) → counts (n, C) int32, H = 2·counts − k, or counts / k
    (``dtype`` the name of the scores' float dtype)."""
    counts = neighbor_sum(jax.nn.one_hot(labels, C, dtype=jnp.int32), idx, k)  # no (n, k, C) one-hot
    k = idx.shape[1] if k is None else k
    if output == "counts":
        return counts
    return (2 * counts - k).astype(dtype) if output == "scores" else counts.astype(dtype) / k


def _knn_votes(model: KNNModel, X, output: str) -> jax.Array:
    return first_rows(*_padded_knn_votes(model, X, output))[0]


def _padded_knn_votes(model: KNNModel, X, output: str):
    """((:func:`_votes` of X's rows padded to :func:`shared_sizes.query_rows`,), n):
    batches of nearby sizes share the compiled search and count."""
    model = without_float64(model)  # fit under jax_enable_x64, used after it: float32, its points centred
    X = _check_features(model, X, device=False)
    idx, _, n = padded_query(model.X, X, model.k, cut=False)  # nearby ks share the search and _votes
    (labels,) = at_shared_rows(model.labels)  # as the search pads the points: nearby sizes share _votes
    return (_votes(labels, idx, first_k(idx, model.k), C=len(model.classes), output=output,
                   dtype=np.dtype(model.X.dtype).name),), n


# --------------------------------------------------------------------------
# Generic prediction API
# --------------------------------------------------------------------------
@programs.jit()
def _linear_scores(W, b, X):
    return X @ W + b


def _model_type_error(model) -> TypeError:
    return TypeError(f"expected a baselines model (SGDModel, SVMModel, KNNModel), got {type(model).__name__}")


@functools.singledispatch
def decision_function(model: Any, X) -> jax.Array:
    """Real-valued scores, (n, C): f(x) = x W + b (linear) or H_c(x) = 2·count_c − k (k-NN).

    Args:
      model: a fitted :class:`SGDModel`, :class:`SVMModel` or :class:`KNNModel`.
      X: (n, d) points.
    """
    raise _model_type_error(model)


def _linear_points(model, X):
    """(X checked, in the model's dtype, its rows padded to
    :func:`shared_sizes.query_rows` — batches of nearby sizes share the compiled
    scoring — and its real rows n; under ``jax.jit`` X unpadded)."""
    X = _check_features(model, X, device=False)
    n, dtype = X.shape[0], model.W.dtype
    if isinstance(X, np.ndarray):  # cast and pad on the host: nothing compiles per n
        return to_device(padded_rows(X.astype(dtype), query_rows(n))), n
    X = as_float(X).astype(dtype)
    return (X if isinstance(X, jax.core.Tracer) else padded_rows(X, query_rows(n))), n


@decision_function.register(SGDModel)
@decision_function.register(SVMModel)
def _(model, X) -> jax.Array:
    model = without_float64(model)
    X, n = _linear_points(model, X)
    return first_rows((_linear_scores(model.W, model.b, X),), n)[0]


@decision_function.register(KNNModel)
def _(model, X) -> jax.Array:
    return _knn_votes(model, X, "scores")


@functools.singledispatch
def predict_proba(model: Any, X, **kwargs) -> jax.Array:
    """Class probabilities, (n, C), rows summing to one.

    * :class:`SGDModel`: one-vs-rest sigmoids σ(f_c(x)) normalised over classes
      (as scikit-learn's SGDClassifier); for C = 2 this is σ(f_1) up to the
      tiny asymmetry between the two one-vs-rest fits.
    * :class:`SVMModel`: Platt posteriors 1 / (1 + exp(a_c f_c + b_c)); since
      labels are single-label, they are normalised to sum to one unless
      ``normalize=False`` (then each column is class c's own one-vs-rest
      posterior estimate).
    * :class:`KNNModel`: vote fractions count_c / k.
    """
    raise _model_type_error(model)


@programs.jit()
def _ovr_logistic_proba(W, b, X):
    # σ(f_c) / Σ_c' σ(f_c'), normalised in log space (no 0/0 far from the data)
    return jax.nn.softmax(-jax.nn.softplus(-(X @ W + b)), axis=1)


@programs.jit(static_argnames=("normalize",))
def _platt_proba(W, b, platt_a, platt_b, X, *, normalize: bool):
    z = platt_a * (X @ W + b) + platt_b  # p̂_c = σ(−z_c)
    return jax.nn.softmax(-jax.nn.softplus(z), axis=1) if normalize else jax.nn.sigmoid(-z)


def _no_options(model, options: dict) -> None:
    if options:
        raise TypeError(f"predict_proba of a {type(model).__name__} takes no {', '.join(sorted(options))} "
                        "(normalize applies to SVM models)")


@predict_proba.register(SGDModel)
def _(model, X, **options) -> jax.Array:
    _no_options(model, options)
    model = without_float64(model)
    X, n = _linear_points(model, X)
    return first_rows((_ovr_logistic_proba(model.W, model.b, X),), n)[0]


@predict_proba.register(SVMModel)
def _(model, X, *, normalize: bool = True) -> jax.Array:
    model = without_float64(model)
    X, n = _linear_points(model, X)
    normalize = check_bool(normalize, "normalize")
    return first_rows((_platt_proba(model.W, model.b, model.platt_a, model.platt_b, X, normalize=normalize),), n)[0]


@predict_proba.register(KNNModel)
def _(model, X, **options) -> jax.Array:
    _no_options(model, options)
    return _knn_votes(model, X, "proba")


def predict(model, X) -> np.ndarray:
    """Predicted labels, (n,), as the original label values (numpy array).

    argmax_c of :func:`decision_function` (k-NN: of the votes), ties → the
    lowest class index.
    """
    if not isinstance(model, (SGDModel, SVMModel, KNNModel)):
        raise _model_type_error(model)
    if isinstance(model, KNNModel):
        (scores,), n = _padded_knn_votes(model, X, "counts")
    else:
        model = without_float64(model)
        X, n = _linear_points(model, X)
        scores = _linear_scores(model.W, model.b, X)
    if isinstance(scores, jax.core.Tracer):  # np.asarray raised JAX's TracerArrayConversionError
        raise TypeError("baselines.predict returns the labels as NumPy, so it cannot run under jax.jit / vmap: "
                        "inside, take jnp.argmax(baselines.decision_function(model, X), axis=1) (class indices "
                        "into model.classes), or call predict outside")
    # the padding dropped on the host: nothing compiles per n
    return _labels_of(model.classes, np.argmax(np.asarray(scores)[:n], axis=1))  # first maximum on ties
