"""Bundled UCI data sets and synthetic benchmark generators.

Everything here is plain numpy: arrays go in and come out as ``numpy.ndarray``
so the functions can be used with or without JAX.

Bundled data
------------
The ``*.csv.gz`` files in ``jaxnn/data`` are KEEL copies of classic UCI
classification sets (see ``jaxnn/data/README.md`` for provenance, licence and
citation). Each file is a gzip-compressed CSV without header whose last column
is the class label. They are read through :mod:`importlib.resources`, so they
work from an installed wheel as well as from a source checkout.

Synthetic problems
------------------
* :func:`ripley` -- Ripley's (1996) two-class mixture problem used by
  Piro et al. (2012), with its exact Bayes posterior / rule / error.
* :func:`gaussian_posteriors` -- the C-class isotropic Gaussian problem of
  d'Ambrosio et al. (2012, Sec. 5.3), shipped with the true test posteriors.
* :func:`multilabel` -- a small synthetic multi-label problem.

Utilities
---------
:func:`train_test_split` (optionally stratified) and :func:`standardize`.
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import math
import numbers
from importlib.resources import files
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "Split",
    "PosteriorSplit",
    "names",
    "load",
    "letter_sample",
    "ripley",
    "ripley_bayes_posterior",
    "ripley_bayes_predict",
    "ripley_bayes_error",
    "gaussian_posteriors",
    "gaussian_true_posteriors",
    "multilabel",
    "train_test_split",
    "standardize",
]

_SUFFIX = ".csv.gz"

# Ripley (1996) synthetic problem: class -> component means; common covariance
# RIPLEY_VAR * I for every component.
_RIPLEY_MEANS = np.array(
    [
        [[-0.7, 0.3], [0.3, 0.3]],  # class 0
        [[-0.3, 0.7], [0.4, 0.7]],  # class 1
    ],
    dtype=np.float64,
)
_RIPLEY_VAR = 0.03


# --------------------------------------------------------------------------
# Result containers
# --------------------------------------------------------------------------
class Split(NamedTuple):
    """A train/test split of a labelled data set.

    Attributes:
        X_train: ``(n_train, d)`` float64 features.
        y_train: ``(n_train,)`` int64 labels.
        X_test: ``(n_test, d)`` float64 features.
        y_test: ``(n_test,)`` int64 labels.
    """

    X_train: NDArray[np.float64]
    y_train: NDArray[np.int64]
    X_test: NDArray[np.float64]
    y_test: NDArray[np.int64]


class PosteriorSplit(NamedTuple):
    """A train/test split together with the true posteriors of the test points.

    Attributes:
        X_train: ``(n_train, d)`` float64 features.
        y_train: ``(n_train,)`` int64 labels in ``0..C-1``.
        X_test: ``(n_test, d)`` float64 features.
        y_test: ``(n_test,)`` int64 labels in ``0..C-1``.
        posterior_test: ``(n_test, C)`` float64 true class posteriors
            ``P(y = c | x)`` of the test points (rows sum to one).
    """

    X_train: NDArray[np.float64]
    y_train: NDArray[np.int64]
    X_test: NDArray[np.float64]
    y_test: NDArray[np.int64]
    posterior_test: NDArray[np.float64]


# --------------------------------------------------------------------------
# Argument validation helpers
# --------------------------------------------------------------------------
def _check_int(name: str, value: object, minimum: int) -> int:
    """Return ``value`` as int, raising TypeError/ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def _check_seed(seed: object) -> int:
    """A reproducible seed: a non-negative int (``None`` is rejected)."""
    return _check_int("seed", seed, 0)


def _check_bool(name: str, value: object) -> bool:
    # a leaf module (no jax): jaxnn._src.checks.check_bool's twin
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def _check_sigma(sigma: object) -> float:
    if isinstance(sigma, bool) or not isinstance(sigma, numbers.Real):
        raise TypeError(f"sigma must be a real number, got {type(sigma).__name__}")
    sigma = float(sigma)
    if not math.isfinite(sigma) or sigma <= 0.0:
        raise ValueError(f"sigma must be a positive finite number, got {sigma}")
    return sigma


def _asarray(name: str, a: ArrayLike) -> NDArray:
    """``np.asarray`` that names the argument when the input is ragged."""
    try:
        return np.asarray(a)
    except ValueError as err:  # inhomogeneous nested sequences
        raise ValueError(f"{name} must be a rectangular array") from err


def _as_points(X: ArrayLike, name: str = "X", dim: int | None = None) -> NDArray[np.float64]:
    """``(n, d)`` finite float64 points, errors naming ``name``."""
    X = _asarray(name, X)
    if np.iscomplexobj(X):
        raise TypeError(f"{name} must be real, got dtype {X.dtype}")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {X.dtype}")
    X = X.astype(np.float64)
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n, d), got ndim={X.ndim}")
    if dim is not None and X.shape[1] != dim:
        raise ValueError(f"{name} must have {dim} columns, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return X


def _logsumexp(a: NDArray[np.float64], axis: int) -> NDArray[np.float64]:
    """Numerically stable ``log(sum(exp(a), axis))`` (no SciPy needed)."""
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis)


def _balanced_labels(rng: np.random.Generator, n: int, n_classes: int) -> NDArray[np.int64]:
    """Shuffled labels with per-class counts as equal as possible.

    Each class gets ``n // n_classes`` points; the ``n % n_classes`` remaining
    points go to the *last* classes (so with two classes and odd ``n``, class 1
    gets the extra point).
    """
    base, rem = divmod(n, n_classes)
    counts = np.full(n_classes, base, dtype=np.int64)
    if rem:
        counts[n_classes - rem :] += 1
    y = np.repeat(np.arange(n_classes, dtype=np.int64), counts)
    rng.shuffle(y)
    return y


def _largest_remainder(sizes: NDArray[np.int64], n_take: int) -> NDArray[np.int64]:
    """Split ``n_take`` among groups proportionally to ``sizes`` (Hamilton method).

    Every group gets ``floor`` or ``ceil`` of its exact share and the counts sum
    to ``n_take``. Ties between equal remainders go to the earlier group.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    total = int(sizes.sum())
    exact = sizes * (n_take / total)
    counts = np.floor(exact).astype(np.int64)
    counts = np.minimum(counts, sizes)
    short = n_take - int(counts.sum())
    if short > 0:
        remainder = exact - counts
        remainder[counts >= sizes] = -np.inf  # a group cannot give more than it has
        order = np.argsort(-remainder, kind="stable")
        counts[order[:short]] += 1
    return counts


# --------------------------------------------------------------------------
# Bundled UCI data sets
# --------------------------------------------------------------------------
def _data_dir():
    return files("jaxnn") / "data"


def names() -> list[str]:
    """Names of the bundled data sets, sorted alphabetically.

    Returns:
        e.g. ``["banana", "bupa", "ionosphere", ...]``; each can be passed to
        :func:`load`.
    """
    return sorted(
        entry.name[: -len(_SUFFIX)]
        for entry in _data_dir().iterdir()
        if entry.name.endswith(_SUFFIX)
    )


def _parse_labels(raw: list[str]) -> NDArray:
    """Labels as int64 if all are integral numbers, float64 if all numeric, else str."""
    try:
        values = np.array([float(v) for v in raw], dtype=np.float64)
    except ValueError:
        return np.array(raw, dtype=str)
    if np.all(np.isfinite(values)) and np.all(values == np.round(values)):
        return values.astype(np.int64)
    return values


@functools.lru_cache(maxsize=None)
def _load_cached(name: str) -> tuple[NDArray[np.float64], NDArray]:
    available = names()
    if name not in available:
        from jaxnn._src.checks import did_you_mean  # here: this module imports NumPy only

        raise ValueError(
            f"unknown data set {name!r}; available: {', '.join(available)}" + did_you_mean(name, available)
        )
    raw = (_data_dir() / f"{name}{_SUFFIX}").read_bytes()
    text = gzip.decompress(raw).decode("utf-8")
    rows = [r for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
    if not rows:
        raise ValueError(f"data set {name!r} is empty")
    width = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != width:
            raise ValueError(
                f"data set {name!r}: row {i} has {len(r)} fields, expected {width}"
            )
    X = np.array([[float(v) for v in r[:-1]] for r in rows], dtype=np.float64)
    X = X.reshape(len(rows), width - 1)
    y = _parse_labels([r[-1].strip() for r in rows])
    X.setflags(write=False)
    y.setflags(write=False)
    return X, y


def load(name: str) -> tuple[NDArray[np.float64], NDArray]:
    """Load a bundled data set.

    Args:
        name: one of :func:`names` (e.g. ``"iris"``, ``"letter"``).

    Returns:
        ``(X, y)`` with ``X`` a float64 array of shape ``(n, d)`` and ``y`` a
        1-D array of shape ``(n,)`` holding the class labels: int64 when every
        label is an integral number (e.g. ``"1"``, ``"-1.0"``), float64 when
        all are numeric but some are not integral, otherwise stripped strings.
        Fresh copies are returned on each call (parsing is cached).

    Raises:
        TypeError: ``name`` is not a string.
        ValueError: unknown ``name``; the message lists the available names.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    X, y = _load_cached(name)
    return X.copy(), y.copy()


def letter_sample(n: int = 2561, seed: int = 0) -> tuple[NDArray[np.float64], NDArray]:
    """A fixed, stratified random subset of the ``letter`` data set.

    The GNNB paper (Piro et al., TPAMI 2014) used a 2561-row sample of Letter.
    This draws ``n`` rows without replacement, allocating them to the 26
    classes proportionally to their frequency (largest-remainder rounding) and
    sampling uniformly inside each class; rows are returned in a random order.
    The result is a deterministic function of ``(n, seed)``.

    Args:
        n: number of rows, ``1 <= n <= 20000``.
        seed: seed for ``numpy.random.default_rng`` (an int >= 0).

    Returns:
        ``(X, y)``: ``X`` float64 ``(n, 16)``, ``y`` str ``(n,)`` (letters).
    """
    n = _check_int("n", n, 1)
    seed = _check_seed(seed)
    X, y = _load_cached("letter")
    if n > len(y):
        raise ValueError(f"n must be <= {len(y)} (size of letter), got {n}")
    rng = np.random.default_rng(seed)
    classes, inverse, sizes = np.unique(y, return_inverse=True, return_counts=True)
    take = _largest_remainder(sizes, n)
    idx = np.concatenate(
        [
            rng.choice(np.flatnonzero(inverse == c), size=int(take[c]), replace=False)
            for c in range(len(classes))
        ]
    )
    rng.shuffle(idx)
    return X[idx].copy(), y[idx].copy()


# --------------------------------------------------------------------------
# Ripley's synthetic problem
# --------------------------------------------------------------------------
def _ripley_sample(rng: np.random.Generator, n: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    y = _balanced_labels(rng, n, 2)
    component = rng.integers(0, 2, size=n)
    means = _RIPLEY_MEANS[y, component]
    X = means + math.sqrt(_RIPLEY_VAR) * rng.standard_normal((n, 2))
    return X, y


def ripley(n_train: int = 250, n_test: int = 1000, seed: int = 0) -> Split:
    """Ripley's (1996) synthetic two-class problem (Piro et al. 2012, Sec. 4.1).

    Each class is an equal mixture of two 2-D Gaussians with common covariance
    ``0.03 * I`` (std ``sqrt(0.03) ~= 0.1732``); class 0 has means
    ``(-0.7, 0.3)`` and ``(0.3, 0.3)``, class 1 has means ``(-0.3, 0.7)`` and
    ``(0.4, 0.7)``; the class priors are equal. The Bayes error is 0.089 (Monte Carlo;
    the 8.0 % often quoted is the Bayes rule's error on Ripley's published test set).

    Sampling: labels are drawn first and are *exactly* balanced --
    ``n // 2`` points of class 0 and ``n - n // 2`` of class 1 (class 1 gets
    the extra point when ``n`` is odd) -- in shuffled order; then each point
    picks one of its class's two components with probability 1/2 and is drawn
    from that Gaussian. Train and test sets come from independent streams
    spawned from ``seed``, so changing ``n_train`` does not change the test set.

    Args:
        n_train: number of training points (>= 1).
        n_test: number of test points (>= 1).
        seed: seed for ``numpy.random.SeedSequence`` (an int >= 0).

    Returns:
        :class:`Split` with ``X_*`` float64 ``(n, 2)`` and ``y_*`` int64 in {0, 1}.
    """
    n_train = _check_int("n_train", n_train, 1)
    n_test = _check_int("n_test", n_test, 1)
    seed = _check_seed(seed)
    rng_train, rng_test = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    X_train, y_train = _ripley_sample(rng_train, n_train)
    X_test, y_test = _ripley_sample(rng_test, n_test)
    return Split(X_train, y_train, X_test, y_test)


def ripley_bayes_posterior(X: ArrayLike) -> NDArray[np.float64]:
    """Exact ``P(y = 1 | x)`` for Ripley's problem.

    Computed from the mixture densities with equal priors (the Gaussian
    normalising constants cancel because the covariance is shared), so it is
    stable far from the data: with ``-||x - mu||^2 = 2 <x, mu> - ||mu||^2 -
    ||x||^2`` the common ``||x||^2`` cancels between the four components (no
    square of ``x`` is ever formed), the component log-densities are computed
    for ``x`` scaled by a power of two (exact, no overflow) and taken relative
    to the largest one, and the class posterior is a ratio of sums of
    ``exp(<= 0)`` terms, one of them 1.

    Args:
        X: ``(n, 2)`` points.

    Returns:
        ``(n,)`` float64 posteriors of class 1.
    """
    X = _as_points(X, dim=2)
    means = _RIPLEY_MEANS.reshape(4, 2)  # class 0's two components, then class 1's
    # power-of-two scale s with |x| / s < 2 (s = 1 near the data): x / s and the products by s are exact
    _, exponent = np.frexp(np.max(np.abs(X), axis=1, keepdims=True))
    scale = np.ldexp(1.0, np.maximum(exponent - 1, 0))
    # log_comp / s = (<x / s, mu> - ||mu||^2 / (2 s)) / var, up to the common -||x||^2 / (2 var)
    z = ((X / scale) @ means.T - 0.5 * np.sum(means**2, axis=1) / scale) / _RIPLEY_VAR
    with np.errstate(over="ignore"):  # a log-ratio below -1.8e308 -> -inf -> weight 0
        w = np.exp((z - z.max(axis=1, keepdims=True)) * scale)  # in [0, 1], the largest exactly 1
    p0, p1 = w[:, 0] + w[:, 1], w[:, 2] + w[:, 3]
    return p1 / (p0 + p1)


def ripley_bayes_predict(X: ArrayLike) -> NDArray[np.int64]:
    """Bayes-optimal labels for Ripley's problem.

    Args:
        X: ``(n, 2)`` points.

    Returns:
        ``(n,)`` int64 in {0, 1}: 1 where ``P(y=1|x) > 1/2`` (ties go to 0).
    """
    return (ripley_bayes_posterior(X) > 0.5).astype(np.int64)


def ripley_bayes_error(n_mc: int = 10**6, seed: int = 12345) -> float:
    """Monte-Carlo estimate of the Bayes error of Ripley's problem (0.089).

    Draws ``n_mc`` points from the data distribution (balanced labels, as in
    :func:`ripley`) and averages the conditional error of the exact Bayes rule,
    ``min(eta(x), 1 - eta(x))`` with ``eta = P(y=1|x)``. This is an unbiased
    estimate of ``P(bayes_predict(x) != y)`` with lower variance than counting
    mistakes on sampled labels.

    Args:
        n_mc: number of Monte-Carlo points (>= 1).
        seed: seed for ``numpy.random.default_rng`` (an int >= 0).

    Returns:
        Estimated Bayes error as a Python float.
    """
    n_mc = _check_int("n_mc", n_mc, 1)
    rng = np.random.default_rng(_check_seed(seed))
    X, _ = _ripley_sample(rng, n_mc)
    eta = ripley_bayes_posterior(X)
    return float(np.mean(np.minimum(eta, 1.0 - eta)))


# --------------------------------------------------------------------------
# C-class isotropic Gaussians with known posteriors
# --------------------------------------------------------------------------
def _circle_means(n_classes: int) -> NDArray[np.float64]:
    angles = 2.0 * np.pi * np.arange(n_classes) / n_classes
    return np.stack([np.cos(angles), np.sin(angles)], axis=1)


def gaussian_true_posteriors(X: ArrayLike, sigma: float, n_classes: int) -> NDArray[np.float64]:
    """True posteriors of the :func:`gaussian_posteriors` problem.

    With equal priors and class densities ``N(mu_c, sigma^2 I)``,
    ``P(c | x) = softmax_c(-||x - mu_c||^2 / (2 sigma^2))``. As every mean
    lies on the unit circle this is ``softmax_c(<x, mu_c> / sigma^2)``; it is
    evaluated with the largest logit subtracted first and ``sigma`` divided
    twice, so it stays finite and correct for any positive finite ``sigma``
    (down to the smallest subnormal) and far-away points.

    Args:
        X: ``(n, 2)`` points.
        sigma: isotropic standard deviation (> 0).
        n_classes: number of classes ``C`` (>= 2).

    Returns:
        ``(n, C)`` float64, rows summing to one.
    """
    sigma = _check_sigma(sigma)
    n_classes = _check_int("n_classes", n_classes, 2)
    X = _as_points(X, dim=2)
    means = _circle_means(n_classes)
    # -||x - mu_c||^2 = 2 <x, mu_c> - ||x||^2 - 1: only <x, mu_c> depends on c.
    # Shift by the largest term (-> logits <= 0, the best class 0) before
    # dividing by sigma (twice: sigma**2 underflows for sigma < 1e-154), so no
    # inf - inf or 0 / 0 can occur.
    dot = X @ means.T
    with np.errstate(over="ignore"):  # -> -inf: a posterior of exactly 0
        logits = ((dot - dot.max(axis=1, keepdims=True)) / sigma) / sigma
    return np.exp(logits - _logsumexp(logits, axis=1)[:, None])


def gaussian_posteriors(
    sigma: float,
    n_train: int = 1500,
    n_test: int = 4500,
    n_classes: int = 3,
    seed: int = 0,
) -> PosteriorSplit:
    """Synthetic C-class Gaussian problem with known posteriors.

    Setting of d'Ambrosio et al. (2012, Sec. 5.3): ``C`` equiprobable classes
    in 2-D, class ``c`` distributed as ``N(mu_c, sigma^2 I)`` -- ``sigma`` is
    the *isotropic standard deviation* of every coordinate -- with means on
    the unit circle, ``mu_c = (cos(2 pi c / C), sin(2 pi c / C))``.  (The
    paper writes ``N(mu, sigma I)``, which read literally makes ``sigma`` a
    variance, and does not place its means; with ``sigma`` as a variance the
    KL divergences of boosted and k-NN posteriors grow ~1.35x and keep their
    order.)

    Labels are exactly balanced (``n // C`` per class, the remainder going to
    the last classes) and shuffled. Train and test sets come from independent
    streams spawned from ``seed``.

    Args:
        sigma: isotropic standard deviation (> 0).
        n_train: number of training points (>= 1).
        n_test: number of test points (>= 1).
        n_classes: number of classes ``C`` (>= 2).
        seed: seed for ``numpy.random.SeedSequence`` (an int >= 0).

    Returns:
        :class:`PosteriorSplit`; ``posterior_test`` is ``(n_test, C)`` with the
        exact Bayes posteriors of the test points.
    """
    sigma = _check_sigma(sigma)
    n_train = _check_int("n_train", n_train, 1)
    n_test = _check_int("n_test", n_test, 1)
    n_classes = _check_int("n_classes", n_classes, 2)
    seed = _check_seed(seed)
    means = _circle_means(n_classes)
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)]

    def draw(rng: np.random.Generator, n: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        y = _balanced_labels(rng, n, n_classes)
        with np.errstate(over="ignore"):
            X = means[y] + sigma * rng.standard_normal((n, 2))
        if not np.all(np.isfinite(X)):
            raise ValueError(f"sigma={sigma} is too large: the sampled points overflow float64")
        return X, y

    X_train, y_train = draw(rngs[0], n_train)
    X_test, y_test = draw(rngs[1], n_test)
    post = gaussian_true_posteriors(X_test, sigma, n_classes)
    return PosteriorSplit(X_train, y_train, X_test, y_test, post)


# --------------------------------------------------------------------------
# Multi-label data
# --------------------------------------------------------------------------
def multilabel(
    n_samples: int = 600,
    n_features: int = 5,
    n_classes: int = 4,
    seed: int = 0,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Synthetic multi-label problem.

    ``X ~ N(0, I_d)``. Each class ``c`` has a random unit direction ``w_c``
    and a prevalence ``pi_c ~ U[0.25, 0.45]``; its noisy linear score is
    ``s_c = <x, w_c> + 0.3 * eps`` (``eps ~ N(0, 1)``) and the ``round(pi_c * n)``
    points with the largest score are positives (so the problem is learnable
    and labels overlap). Guarantees: every class has at least one positive and
    one negative, and at least one row has two or more labels (if sampling
    happened to give none, the row with the highest second-best score gets
    that class switched on).

    Args:
        n_samples: number of rows (>= 4).
        n_features: number of features ``d`` (>= 1).
        n_classes: number of labels ``C`` (>= 2).
        seed: seed for ``numpy.random.default_rng`` (an int >= 0).

    Returns:
        ``(X, Y)``: ``X`` float64 ``(n, d)``, ``Y`` int64 ``(n, C)`` in {0, 1}.
    """
    n = _check_int("n_samples", n_samples, 4)
    d = _check_int("n_features", n_features, 1)
    C = _check_int("n_classes", n_classes, 2)
    rng = np.random.default_rng(_check_seed(seed))
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((d, C))
    W /= np.linalg.norm(W, axis=0, keepdims=True)
    prevalence = rng.uniform(0.25, 0.45, size=C)
    scores = X @ W + 0.3 * rng.standard_normal((n, C))
    Y = np.zeros((n, C), dtype=np.int64)
    for c in range(C):
        k = int(np.clip(round(prevalence[c] * n), 1, n - 2))
        top = np.argsort(-scores[:, c], kind="stable")[:k]
        Y[top, c] = 1
    if not np.any(Y.sum(axis=1) >= 2):
        # Switch on the best-scoring missing label of the row whose second-best
        # score is highest. Each class had <= n - 2 positives, so it keeps a
        # negative afterwards.
        masked = np.where(Y == 1, -np.inf, scores)
        i = int(np.argmax(np.sort(scores, axis=1)[:, -2]))
        if Y[i].sum() == 0:
            Y[i, int(np.argmax(scores[i]))] = 1
            masked[i] = np.where(Y[i] == 1, -np.inf, scores[i])
        Y[i, int(np.argmax(masked[i]))] = 1
    return X, Y


# --------------------------------------------------------------------------
# Splitting and scaling
# --------------------------------------------------------------------------
def train_test_split(
    X: ArrayLike,
    y: ArrayLike,
    test_size: float | int = 0.25,
    seed: int = 0,
    stratify: bool = True,
) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    """Random train/test split (numpy only), stratified by default.

    The test set has ``ceil(test_size * n)`` rows (the product rounded to 6
    decimals first: 0.07 of 100 rows is 7) for a float ``test_size`` in
    ``(0, 1)`` or exactly ``test_size`` rows for an int. With
    ``stratify=True`` the test rows are allocated to the classes
    proportionally to their sizes (largest-remainder rounding, so every class
    gets the floor or ceiling of its share) and drawn uniformly inside each
    class. For a 2-D ``y`` (e.g. a multi-label indicator matrix) each distinct
    row is a stratum. Both parts are returned in random order.

    Args:
        X: ``(n, ...)`` features.
        y: ``(n,)`` labels or ``(n, C)`` label matrix.
        test_size: fraction in ``(0, 1)`` or absolute count in ``[1, n-1]``.
        seed: seed for ``numpy.random.default_rng`` (an int >= 0).
        stratify: stratify on ``y`` (a bool).

    Returns:
        ``(X_train, X_test, y_train, y_test)`` (scikit-learn's order).
    """
    y_raw = y
    X = _asarray("X", X)
    y = _asarray("y", y)
    if y.dtype.kind in "US" and isinstance(y_raw, (list, tuple)) and not all(
        isinstance(v, (str, bytes)) for v in y_raw
    ):  # numpy would silently turn e.g. [0, "a"] into strings
        raise TypeError("labels of y must be mutually comparable (all numbers or all strings)")
    if X.ndim < 1 or y.ndim not in (1, 2):
        raise ValueError(
            f"X must have ndim >= 1 and y ndim 1 or 2, got X.ndim={X.ndim}, y.ndim={y.ndim}"
        )
    n = X.shape[0]
    if y.shape[0] != n:
        raise ValueError(f"X and y have different lengths: {n} != {y.shape[0]}")
    if n < 2:
        raise ValueError(f"need at least 2 rows to split, got {n}")
    if isinstance(test_size, bool) or not isinstance(test_size, numbers.Real):
        raise TypeError(f"test_size must be a float or an int, got {type(test_size).__name__}")
    if isinstance(test_size, numbers.Integral):
        n_test = int(test_size)
        if not 1 <= n_test <= n - 1:
            raise ValueError(f"test_size as a count must be in [1, {n - 1}], got {n_test}")
    else:
        frac = float(test_size)
        if not 0.0 < frac < 1.0:
            raise ValueError(f"test_size as a fraction must be in (0, 1), got {frac}")
        # 0.07·100 = 7.000000000000001 and float32 0.3·10 are not 8 and 4; any positive share is ≥ 1 row
        n_test = max(1, math.ceil(round(frac * n, 6)))
        if not 1 <= n_test <= n - 1:
            raise ValueError(
                f"test_size={frac} gives {n_test} test rows out of {n}; need 1..{n - 1}"
            )
    rng = np.random.default_rng(_check_seed(seed))
    if _check_bool("stratify", stratify):
        try:
            if y.ndim == 1:
                _, groups = np.unique(y, return_inverse=True)
            else:
                _, groups = np.unique(y, axis=0, return_inverse=True)
        except TypeError as err:  # e.g. an object array mixing str and int
            raise TypeError(
                "labels of y must be mutually comparable (all numbers or all strings) to stratify"
            ) from err
        groups = np.asarray(groups).reshape(-1)
        sizes = np.bincount(groups)
        take = _largest_remainder(sizes, n_test)
        test_idx = np.concatenate(
            [
                rng.choice(np.flatnonzero(groups == g), size=int(take[g]), replace=False)
                for g in range(len(sizes))
            ]
        )
    else:
        test_idx = rng.choice(n, size=n_test, replace=False)
    is_test = np.zeros(n, dtype=bool)
    is_test[test_idx] = True
    train_idx = rng.permutation(np.flatnonzero(~is_test))
    test_idx = rng.permutation(np.flatnonzero(is_test))
    return X[train_idx], X[test_idx], y[train_idx], y[test_idx]


def standardize(
    X_train: ArrayLike, X_test: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Z-score both sets with the training mean and standard deviation.

    Features whose training standard deviation is zero are only centred
    (their std is replaced by 1). Inputs must be finite; the statistics are
    computed on columns scaled by a power of two (exact), so values near the
    float64 limit do not overflow.

    Args:
        X_train: ``(n_train, d)``.
        X_test: ``(n_test, d)``.

    Returns:
        ``(Z_train, Z_test)`` float64 arrays of the same shapes.
    """
    X_train = _as_points(X_train, "X_train")
    X_test = _as_points(X_test, "X_test")
    if X_train.shape[0] == 0:
        raise ValueError("X_train is empty")
    if X_test.shape[1] != X_train.shape[1]:
        raise ValueError(
            f"X_test has {X_test.shape[1]} features but X_train has {X_train.shape[1]}"
        )
    # Power-of-two column scale: X / scale lies in [-2, 2] and is exact, so
    # mean and std cannot overflow and equal the unscaled ones times 1/scale.
    _, exponent = np.frexp(np.max(np.abs(X_train), axis=0))
    scale = np.ldexp(1.0, exponent - 1)
    mean_s = (X_train / scale).mean(axis=0)
    std_s = (X_train / scale).std(axis=0)
    # a column of one value is constant, whatever its mean's rounding leaves in std_s
    # (0.1 in every row gave std ~1e-17: Z_train 1, not 0, and a test 1.1 became 7e16)
    constant = np.all(X_train == X_train[0], axis=0)
    std_s = np.where(constant, 1.0, std_s)
    mean = np.where(constant, X_train[0], mean_s * scale)

    def z(X: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(over="ignore"):
            return np.where(constant, X - mean, (X / scale - mean_s) / std_s)

    Z_train, Z_test = z(X_train), z(X_test)
    if not np.all(np.isfinite(Z_test)):
        raise ValueError("X_test is too far from X_train: standardized values overflow float64")
    return Z_train, Z_test
