"""Tests for jaxnn.datasets (bundled UCI sets, synthetic generators, utilities)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jaxnn import datasets as D
from jaxnn._src import datasets as _DS

# (rows, features, classes) from jaxnn/data/README.md
README_TABLE = {
    "bupa": (345, 6, 2),
    "ionosphere": (351, 33, 2),
    "pima": (768, 8, 2),
    "satimage": (6435, 36, 6),
    "segment": (2310, 19, 7),
    "optdigits": (5620, 64, 10),
    "letter": (20000, 16, 26),
    "wdbc": (569, 30, 2),
    "iris": (150, 4, 3),
}
EXTRA = [
    "sonar", "vehicle", "vowel", "wine", "penbased", "magic", "texture",
    "spambase", "twonorm", "ring", "banana", "phoneme",
]


# --------------------------------------------------------------------------
# Bundled data
# --------------------------------------------------------------------------
def test_names_sorted_and_complete():
    n = D.names()
    assert n == sorted(n)
    assert set(README_TABLE) | set(EXTRA) == set(n)


@pytest.mark.parametrize("name", sorted(README_TABLE))
def test_load_matches_readme_table(name):
    rows, feats, n_classes = README_TABLE[name]
    X, y = D.load(name)
    assert X.dtype == np.float64
    assert X.shape == (rows, feats)
    assert y.shape == (rows,)
    assert len(np.unique(y)) == n_classes
    assert np.all(np.isfinite(X))


def test_all_bundled_sets_load():
    for name in D.names():
        X, y = D.load(name)
        assert X.ndim == 2 and y.ndim == 1 and X.shape[0] == y.shape[0] > 0
        assert len(np.unique(y)) >= 2


def test_label_types_and_known_values():
    X, y = D.load("iris")
    assert y.dtype.kind == "U"
    assert sorted(np.unique(y)) == ["Iris-setosa", "Iris-versicolor", "Iris-virginica"]
    np.testing.assert_array_equal(np.unique(y, return_counts=True)[1], [50, 50, 50])
    np.testing.assert_allclose(X[0], [5.1, 3.5, 1.4, 0.2])

    _, y = D.load("bupa")
    assert y.dtype == np.int64
    np.testing.assert_array_equal(np.unique(y), [1, 2])

    _, y = D.load("banana")  # labels written as "-1.0" / "1.0"
    assert y.dtype == np.int64
    np.testing.assert_array_equal(np.unique(y), [-1, 1])

    _, y = D.load("vehicle")  # "van " has a trailing space in the file
    assert set(np.unique(y)) == {"bus", "opel", "saab", "van"}

    _, y = D.load("satimage")  # UCI satimage has no class 6
    np.testing.assert_array_equal(np.unique(y), [1, 2, 3, 4, 5, 7])


def test_load_returns_copies():
    X1, y1 = D.load("iris")
    X1[:] = -1.0
    y1[:] = "x"
    X2, y2 = D.load("iris")
    assert X2[0, 0] == 5.1 and y2[0] == "Iris-setosa"
    assert X2.flags.writeable


def test_load_unknown_name_lists_available():
    with pytest.raises(ValueError, match="unknown data set 'nope'.*iris"):
        D.load("nope")
    with pytest.raises(TypeError):
        D.load(3)


def test_letter_sample():
    X, y = D.letter_sample()
    assert X.shape == (2561, 16) and y.shape == (2561,)
    X2, y2 = D.letter_sample()
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    X3, _ = D.letter_sample(seed=1)
    assert not np.array_equal(X, X3)
    # stratified: every class gets floor or ceil of its proportional share
    _, y_full = D.load("letter")
    cls, full_counts = np.unique(y_full, return_counts=True)
    got = np.array([np.sum(y == c) for c in cls])
    share = full_counts * 2561 / 20000
    assert np.all(got >= np.floor(share)) and np.all(got <= np.ceil(share))
    assert got.sum() == 2561
    assert D.letter_sample(n=26, seed=3)[1].shape == (26,)
    with pytest.raises(ValueError):
        D.letter_sample(n=0)
    with pytest.raises(ValueError):
        D.letter_sample(n=20001)


def test_letter_sample_full_size_and_shuffled():
    # n = 20000 (the whole set) is allowed: a permutation of every row
    X, y = D.letter_sample(n=20000)
    X_full, y_full = D.load("letter")
    assert X.shape == (20000, 16)
    np.testing.assert_array_equal(np.unique(y, return_counts=True)[1], np.unique(y_full, return_counts=True)[1])
    # "rows are returned in a random order", not grouped by class
    _, y = D.letter_sample(n=100, seed=0)
    assert np.any(y[:-1] > y[1:])
    assert len(set(y[:10])) > 3


def test_parse_labels_keeps_non_integral_numbers_as_floats():
    # load()'s rule: int64 when every label is integral, float64 when some are not
    labels = _DS._parse_labels(["1.5", "2"])
    assert labels.dtype == np.float64
    np.testing.assert_array_equal(labels, [1.5, 2.0])
    assert _DS._parse_labels(["1", "-2.0"]).dtype == np.int64


# --------------------------------------------------------------------------
# Ripley
# --------------------------------------------------------------------------
def test_ripley_shapes_balance_determinism():
    s = D.ripley()
    assert isinstance(s, D.Split)
    assert s.X_train.shape == (250, 2) and s.X_test.shape == (1000, 2)
    assert s.y_train.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(s.y_train), [125, 125])
    np.testing.assert_array_equal(np.bincount(s.y_test), [500, 500])
    s2 = D.ripley()
    for a, b in zip(s, s2):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(D.ripley(seed=1).X_train, s.X_train)
    # odd n: class 1 gets the extra point
    np.testing.assert_array_equal(np.bincount(D.ripley(n_train=7, n_test=3).y_train), [3, 4])
    # test set does not depend on n_train
    np.testing.assert_array_equal(D.ripley(n_train=10).X_test, s.X_test)


def test_ripley_moments():
    s = D.ripley(n_train=40000, n_test=1, seed=3)
    X, y = s.X_train, s.y_train
    # class 0: x-means -0.7/0.3 (mean -0.2, var 0.25 + 0.03), y-mean 0.3 (var 0.03)
    # class 1: x-means -0.3/0.4 (mean 0.05, var 0.1225 + 0.03), y-mean 0.7
    np.testing.assert_allclose(X[y == 0].mean(0), [-0.2, 0.3], atol=0.01)
    np.testing.assert_allclose(X[y == 1].mean(0), [0.05, 0.7], atol=0.01)
    np.testing.assert_allclose(X[y == 0].var(0), [0.28, 0.03], rtol=0.04)
    np.testing.assert_allclose(X[y == 1].var(0), [0.1525, 0.03], rtol=0.04)


def _ripley_posterior_naive(X):
    var = 0.03

    def dens(m):
        return np.exp(-np.sum((X - np.array(m)) ** 2, axis=1) / (2 * var)) / (2 * np.pi * var)

    p0 = 0.5 * dens([-0.7, 0.3]) + 0.5 * dens([0.3, 0.3])
    p1 = 0.5 * dens([-0.3, 0.7]) + 0.5 * dens([0.4, 0.7])
    return p1 / (p0 + p1)


def test_ripley_bayes_posterior_closed_form():
    rng = np.random.default_rng(0)
    X = rng.uniform([-1.2, -0.2], [1.0, 1.2], size=(500, 2))
    np.testing.assert_allclose(D.ripley_bayes_posterior(X), _ripley_posterior_naive(X), rtol=1e-10, atol=1e-14)
    # far away: still finite, no NaN
    far = np.array([[100.0, 100.0], [-100.0, -100.0]])
    post = D.ripley_bayes_posterior(far)
    assert np.all(np.isfinite(post))
    assert post[0] > 0.99 and post[1] < 0.01
    # at the component centres, the own class wins
    np.testing.assert_array_equal(
        D.ripley_bayes_predict([[-0.7, 0.3], [0.3, 0.3], [-0.3, 0.7], [0.4, 0.7]]), [0, 0, 1, 1]
    )
    with pytest.raises(ValueError, match="columns"):
        D.ripley_bayes_posterior(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="2-D"):
        D.ripley_bayes_posterior(np.zeros(3))


def test_ripley_bayes_error():
    # numerical integration of min(p0, p1) over a fine grid gives 0.0893
    err = D.ripley_bayes_error(n_mc=200_000, seed=0)
    assert 0.085 < err < 0.094
    assert D.ripley_bayes_error(n_mc=1000, seed=4) == D.ripley_bayes_error(n_mc=1000, seed=4)
    s = D.ripley(n_test=20000, seed=5)
    test_err = np.mean(D.ripley_bayes_predict(s.X_test) != s.y_test)
    assert abs(test_err - err) < 0.01
    with pytest.raises(ValueError):
        D.ripley_bayes_error(n_mc=0)


def _ripley_posterior_exact(x):
    """P(y = 1 | x) from exact rational log-densities (fractions), exp in 40-digit decimal."""
    from decimal import Decimal, localcontext
    from fractions import Fraction

    means = [(-0.7, 0.3), (0.3, 0.3), (-0.3, 0.7), (0.4, 0.7)]  # class 0, class 0, class 1, class 1
    logd = [-sum((Fraction(float(xi)) - Fraction(mi)) ** 2 for xi, mi in zip(x, m)) / (2 * Fraction(0.03)) for m in means]
    top = max(logd)
    with localcontext() as ctx:
        ctx.prec = 40
        w = [(Decimal(d.numerator) / Decimal(d.denominator)).exp() for d in (v - top for v in logd)]
        return float((w[2] + w[3]) / sum(w))


def test_ripley_bayes_posterior_far_from_the_data():
    # the squares ||x - mu||^2 overflowed (1e200 -> nan) or cancelled (1e150 -> 0.5)
    X = np.array([
        [1e200, 1e200], [1e150, 0.0], [-1e300, 5.0], [1.7e308, -1.7e308], [-1e10, 1e10],
        [3.0, -2.0], [30.0, 1.0], [-100.0, -100.0], [-5.0, 0.5], [-3.0, 0.55], [2.5, 0.45], [0.1, 0.5],
    ])
    post = D.ripley_bayes_posterior(X)
    ref = np.array([_ripley_posterior_exact(x) for x in X])
    np.testing.assert_allclose(post, ref, rtol=1e-12, atol=0)
    # analytic limits: the class of the component with the largest <x, mu> - ||mu||^2 / 2 wins;
    # on x1 = -x2 the closest components (-0.7, 0.3) and (-0.3, 0.7) tie
    np.testing.assert_array_equal(post[:5], [1.0, 1.0, 0.0, 0.0, 0.5])


def test_ripley_bayes_predict_is_posterior_above_one_half():
    # ties (a posterior of exactly 1/2) go to class 0
    X = np.array([[-0.99, 0.9899999999981056], [-1e10, 1e10], [0.0, 0.5], [0.3, 0.3], [-0.3, 0.7]])
    assert D.ripley_bayes_posterior(X[1:2])[0] == 0.5
    np.testing.assert_array_equal(D.ripley_bayes_predict(X), (D.ripley_bayes_posterior(X) > 0.5).astype(np.int64))
    assert D.ripley_bayes_predict(X[1:2])[0] == 0


def test_ripley_bayes_error_value():
    # numerical integration of min(p0, p1) over a fine grid: 0.0893 (the Monte-Carlo s.e. at 2e5 is 3e-4)
    assert abs(D.ripley_bayes_error(n_mc=200_000, seed=0) - 0.0893) < 0.0015


def test_synthetic_labels_are_shuffled():
    # balanced labels come "in shuffled order", not 0...0 1...1
    for y in (D.ripley(n_train=10, n_test=4).y_train, D.gaussian_posteriors(0.5, n_train=9, n_test=3).y_train):
        assert np.any(y[:-1] > y[1:])


def test_ripley_invalid():
    with pytest.raises(ValueError, match="n_train"):
        D.ripley(n_train=0)
    with pytest.raises(TypeError, match="n_test"):
        D.ripley(n_test=2.5)


_NAN, _INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    "fn",
    [
        lambda seed: D.ripley(n_train=5, n_test=5, seed=seed),
        lambda seed: D.letter_sample(n=26, seed=seed),
        lambda seed: D.ripley_bayes_error(n_mc=10, seed=seed),
        lambda seed: D.gaussian_posteriors(0.5, n_train=5, n_test=5, seed=seed),
        lambda seed: D.multilabel(n_samples=8, seed=seed),
        lambda seed: D.train_test_split(np.zeros((4, 1)), [0, 0, 1, 1], test_size=2, seed=seed),
    ],
    ids=["ripley", "letter_sample", "ripley_bayes_error", "gaussian_posteriors", "multilabel", "train_test_split"],
)
@pytest.mark.parametrize(
    "seed, exc, match",
    [
        (-1, ValueError, "seed must be >= 0"),
        ("a", TypeError, "seed must be an integer"),
        (1.5, TypeError, "seed must be an integer"),
        (None, TypeError, "seed must be an integer"),
        (True, TypeError, "seed must be an integer"),
    ],
)
def test_bad_seed(fn, seed, exc, match):
    with pytest.raises(exc, match=match):
        fn(seed)


@pytest.mark.parametrize(
    "fn",
    [
        D.ripley_bayes_posterior,
        D.ripley_bayes_predict,
        lambda X: D.gaussian_true_posteriors(X, 0.5, 3),
    ],
    ids=["ripley_bayes_posterior", "ripley_bayes_predict", "gaussian_true_posteriors"],
)
@pytest.mark.parametrize(
    "X, exc, match",
    [
        ([[_NAN, 0.0]], ValueError, "X contains NaN or infinite values"),
        ([[0.0, _INF]], ValueError, "X contains NaN or infinite values"),
        ([["a", "b"]], TypeError, "X must be numeric"),
        (np.zeros((1, 2)) + 1j, TypeError, "X must be real"),
        ([[0.0, 1.0], [2.0]], ValueError, "X must be a rectangular array"),
    ],
)
def test_posteriors_bad_points(fn, X, exc, match):
    with pytest.raises(exc, match=match):
        fn(X)


# --------------------------------------------------------------------------
# Gaussian posteriors
# --------------------------------------------------------------------------
def test_gaussian_posteriors_structure():
    g = D.gaussian_posteriors(0.5)
    assert isinstance(g, D.PosteriorSplit)
    assert g.X_train.shape == (1500, 2) and g.X_test.shape == (4500, 2)
    assert g.posterior_test.shape == (4500, 3)
    np.testing.assert_array_equal(np.bincount(g.y_train), [500, 500, 500])
    np.testing.assert_array_equal(np.bincount(g.y_test), [1500, 1500, 1500])
    np.testing.assert_allclose(g.posterior_test.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(g.posterior_test, D.gaussian_true_posteriors(g.X_test, 0.5, 3))
    g2 = D.gaussian_posteriors(0.5)
    np.testing.assert_array_equal(g.X_test, g2.X_test)
    # uneven split: remainder goes to the last classes
    np.testing.assert_array_equal(np.bincount(D.gaussian_posteriors(1.0, n_train=11, n_classes=4).y_train), [2, 3, 3, 3])


def test_gaussian_moments():
    sigma = 0.3
    g = D.gaussian_posteriors(sigma, n_train=30000, n_test=1, n_classes=4, seed=2)
    for c in range(4):
        Xc = g.X_train[g.y_train == c]
        mu = [math.cos(2 * math.pi * c / 4), math.sin(2 * math.pi * c / 4)]
        np.testing.assert_allclose(Xc.mean(0), mu, atol=0.015)
        np.testing.assert_allclose(Xc.std(0), [sigma, sigma], rtol=0.04)


def test_gaussian_true_posteriors_closed_form():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 2))
    for C, sigma in [(2, 0.7), (3, 1.0), (5, 0.4)]:
        angles = 2 * np.pi * np.arange(C) / C
        mu = np.stack([np.cos(angles), np.sin(angles)], 1)
        dens = np.exp(-np.sum((X[:, None] - mu[None]) ** 2, -1) / (2 * sigma**2))
        naive = dens / dens.sum(1, keepdims=True)
        post = D.gaussian_true_posteriors(X, sigma, C)
        np.testing.assert_allclose(post, naive, rtol=1e-10, atol=1e-15)
        # equal priors + isotropic: Bayes rule = nearest mean
        np.testing.assert_array_equal(post.argmax(1), np.argmin(np.sum((X[:, None] - mu[None]) ** 2, -1), 1))
    # two classes at (1,0) and (-1,0): logistic in x_1 with slope 2 / sigma^2
    x = np.array([[0.3, 5.0]])
    np.testing.assert_allclose(
        D.gaussian_true_posteriors(x, 0.8, 2)[0, 0], 1 / (1 + np.exp(-2 * 0.3 / 0.64)), rtol=1e-12
    )


def test_gaussian_true_posteriors_stable():
    X = np.array([[1000.0, -1000.0], [1.0, 0.0], [0.0, 0.0]])
    post = D.gaussian_true_posteriors(X, 0.01, 3)
    assert np.all(np.isfinite(post))
    np.testing.assert_allclose(post.sum(1), 1.0)
    assert post[1, 0] == pytest.approx(1.0)
    np.testing.assert_allclose(post[2], [1 / 3] * 3, rtol=1e-12)  # centre is equidistant



@pytest.mark.parametrize("sigma", [1e-300, 5e-324, 1e-160])
def test_gaussian_posteriors_tiny_sigma(sigma):
    # points sit on their class mean: the posterior is the one-hot of the class
    g = D.gaussian_posteriors(sigma, n_train=6, n_test=30, n_classes=3)
    assert np.all(np.isfinite(g.posterior_test))
    np.testing.assert_array_equal(g.posterior_test, np.eye(3)[g.y_test])
    post = D.gaussian_true_posteriors([[0.0, 0.0], [1e300, -1e300], [0.3, 5.0]], sigma, 3)
    np.testing.assert_allclose(post[0], [1 / 3] * 3, rtol=1e-12)  # equidistant centre
    np.testing.assert_array_equal(post[1:], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def test_gaussian_posteriors_huge_sigma():
    # sigma -> inf: posteriors tend to the uniform prior
    post = D.gaussian_true_posteriors([[0.3, 5.0], [-1e6, 2e6]], 1e300, 3)
    np.testing.assert_allclose(post, 1 / 3, rtol=1e-12)
    with pytest.raises(ValueError, match="sigma=.* is too large"):
        D.gaussian_posteriors(1e308, n_train=50, n_test=50)


@pytest.mark.parametrize("sigma", [-1.0, 0.0, float("nan"), float("inf")])
def test_gaussian_invalid_sigma(sigma):
    with pytest.raises(ValueError, match="sigma"):
        D.gaussian_posteriors(sigma)
    with pytest.raises(ValueError, match="sigma"):
        D.gaussian_true_posteriors(np.zeros((2, 2)), sigma, 3)


def test_gaussian_invalid_other():
    with pytest.raises(ValueError, match="n_classes"):
        D.gaussian_posteriors(0.5, n_classes=1)
    with pytest.raises(ValueError, match="n_classes"):
        D.gaussian_true_posteriors(np.zeros((2, 2)), 0.5, 1)
    with pytest.raises(TypeError, match="sigma"):
        D.gaussian_posteriors("big")
    with pytest.raises(ValueError, match="columns"):
        D.gaussian_true_posteriors(np.zeros((2, 3)), 0.5, 3)


# --------------------------------------------------------------------------
# Multi-label
# --------------------------------------------------------------------------
def test_multilabel_properties():
    X, Y = D.multilabel()
    assert X.shape == (600, 5) and Y.shape == (600, 4)
    assert X.dtype == np.float64 and Y.dtype == np.int64
    assert set(np.unique(Y)) <= {0, 1}
    assert np.all(Y.sum(0) > 0) and np.all(Y.sum(0) < 600)
    assert np.any(Y.sum(1) >= 2)
    X2, Y2 = D.multilabel()
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(Y, Y2)
    # labels are learnable: a least-squares linear fit beats the majority rule
    A = np.c_[X, np.ones(len(X))]
    W, *_ = np.linalg.lstsq(A, Y, rcond=None)
    lin_err = np.mean((A @ W > 0.5) != Y)
    assert lin_err < 0.5 * np.mean(np.minimum(Y.mean(0), 1 - Y.mean(0)))


@pytest.mark.parametrize("seed", range(20))
def test_multilabel_guarantees_small(seed):
    X, Y = D.multilabel(n_samples=4, n_features=1, n_classes=2, seed=seed)
    assert Y.shape == (4, 2)
    assert np.all(Y.sum(0) > 0) and np.all(Y.sum(0) < 4)
    assert np.any(Y.sum(1) >= 2)


def test_multilabel_prevalences_and_golden_value():
    # pi_c ~ U[0.25, 0.45]: round(pi_c n) positives (+1 if the two-label fix switched one on)
    for seed in range(5):
        prevalence = D.multilabel(seed=seed)[1].mean(0)
        assert np.all(prevalence >= 0.25 - 1 / 600) and np.all(prevalence <= 0.45 + 2 / 600), (seed, prevalence)
    # the two-label fix: the row with the highest second-best score gets its missing label
    np.testing.assert_array_equal(D.multilabel(n_samples=4, n_features=1, n_classes=2, seed=0)[1],
                                  [[0, 0], [1, 1], [0, 1], [0, 1]])


def test_multilabel_invalid():
    with pytest.raises(ValueError, match="n_classes"):
        D.multilabel(n_classes=1)
    with pytest.raises(ValueError, match="n_samples"):
        D.multilabel(n_samples=3)
    with pytest.raises(ValueError, match="n_features"):
        D.multilabel(n_features=0)


# --------------------------------------------------------------------------
# train_test_split / standardize
# --------------------------------------------------------------------------
def test_train_test_split_stratified():
    X, y = D.load("iris")
    Xtr, Xte, ytr, yte = D.train_test_split(X, y, test_size=0.2, seed=0)
    assert len(yte) == 30 and len(ytr) == 120
    assert Xtr.shape == (120, 4) and Xte.shape == (30, 4)
    for c in np.unique(y):
        assert np.sum(yte == c) == 10
    # exact partition of the rows
    ids = np.arange(150)
    itr, ite, jtr, jte = D.train_test_split(ids, ids, test_size=37, seed=1, stratify=False)
    np.testing.assert_array_equal(itr, jtr)
    assert len(ite) == 37
    np.testing.assert_array_equal(np.sort(np.r_[itr, ite]), ids)
    # ceil for fractions, unbalanced strata get floor/ceil of their share
    y2 = np.array([0] * 70 + [1] * 20 + [2] * 10)
    _, _, _, yte2 = D.train_test_split(np.zeros((100, 1)), y2, test_size=0.25, seed=3)
    assert len(yte2) == 25
    counts = np.bincount(yte2, minlength=3)
    share = np.array([70, 20, 10]) * 0.25
    assert np.all(counts >= np.floor(share)) and np.all(counts <= np.ceil(share))
    # determinism
    a = D.train_test_split(X, y, seed=5)
    b = D.train_test_split(X, y, seed=5)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_train_test_split_unstratified_is_random():
    # test rows drawn at random (seed-dependent), both parts returned in random order
    ids = np.arange(100)
    itr, ite, _, _ = D.train_test_split(ids, ids, test_size=25, seed=0, stratify=False)
    assert np.any(np.diff(itr) < 0) and np.any(np.diff(ite) < 0)
    tests = [set(D.train_test_split(ids, ids, test_size=5, seed=s, stratify=False)[1]) for s in (0, 1)]
    assert tests[0] != tests[1] and tests[0] != set(range(5))
    itr, _, _, _ = D.train_test_split(ids, np.repeat([0, 1], 50), test_size=25, seed=0)
    assert np.any(np.diff(itr) < 0)


def test_train_test_split_multilabel_rows():
    X, Y = D.multilabel(n_samples=200, seed=2)
    Xtr, Xte, Ytr, Yte = D.train_test_split(X, Y, test_size=0.3, seed=0)
    assert Ytr.shape == (140, 4) and Yte.shape == (60, 4)
    np.testing.assert_allclose(Yte.mean(0), Y.mean(0), atol=0.06)


def test_train_test_split_invalid():
    X = np.zeros((10, 2))
    y = np.zeros(10)
    with pytest.raises(ValueError, match="lengths"):
        D.train_test_split(X, y[:9])
    with pytest.raises(ValueError, match="test_size"):
        D.train_test_split(X, y, test_size=1.5)
    with pytest.raises(ValueError, match="test_size"):
        D.train_test_split(X, y, test_size=0)
    with pytest.raises(ValueError, match="test_size"):
        D.train_test_split(X, y, test_size=10)
    with pytest.raises(TypeError, match="test_size"):
        D.train_test_split(X, y, test_size="half")



@pytest.mark.parametrize(
    "y, kwargs, exc, match",
    [
        ([0, 0, 1, 1], {"stratify": "no"}, TypeError, "stratify must be a bool"),
        ([0, 0, 1, 1], {"stratify": 0}, TypeError, "stratify must be a bool"),
        ([0, 0, 1, 1], {"stratify": None}, TypeError, "stratify must be a bool"),
        (np.array([0, "a", 0, "a"], dtype=object), {}, TypeError, "labels of y must be mutually comparable"),
        ([0, "a", 0, "a"], {"stratify": False}, TypeError, "labels of y must be mutually comparable"),
        ([[0], [1, 2], [0], [1]], {}, ValueError, "y must be a rectangular array"),
    ],
)
def test_train_test_split_bad_flags_and_labels(y, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        D.train_test_split(np.zeros((4, 1)), y, test_size=2, **kwargs)
    # numpy bools are bools
    assert len(D.train_test_split(np.zeros((4, 1)), [0, 0, 1, 1], test_size=2, stratify=np.bool_(False))[3]) == 2


def test_standardize():
    rng = np.random.default_rng(0)
    Xtr = rng.normal(3.0, 2.0, size=(50, 3))
    Xtr[:, 2] = 7.0  # constant column
    Xte = rng.normal(size=(10, 3))
    Ztr, Zte = D.standardize(Xtr, Xte)
    np.testing.assert_allclose(Ztr[:, :2].mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Ztr[:, :2].std(0), 1.0)
    np.testing.assert_allclose(Ztr[:, 2], 0.0)
    np.testing.assert_allclose(Zte[:, 2], Xte[:, 2] - 7.0)
    mu, sd = Xtr[:, 0].mean(), Xtr[:, 0].std()
    np.testing.assert_allclose(Zte[:, 0], (Xte[:, 0] - mu) / sd)
    with pytest.raises(ValueError, match="features"):
        D.standardize(Xtr, Xte[:, :2])
    with pytest.raises(ValueError, match="X_train"):
        D.standardize(Xtr[:, 0], Xte)



@pytest.mark.parametrize(
    "X_train, X_test, exc, match",
    [
        ([[_NAN], [1.0]], [[1.0]], ValueError, "X_train contains NaN or infinite values"),
        ([[0.0], [1.0]], [[_INF]], ValueError, "X_test contains NaN or infinite values"),
        ([[0.0], [1.0]], [[-_INF]], ValueError, "X_test contains NaN or infinite values"),
        ([["a"], ["b"]], [[1.0]], TypeError, "X_train must be numeric"),
        ([[0.0], [1.0]], [["1"]], TypeError, "X_test must be numeric"),
        ([[0.0], [1e-300]], [[1e300]], ValueError, "X_test is too far from X_train"),
    ],
)
def test_standardize_bad_values(X_train, X_test, exc, match):
    with pytest.raises(exc, match=match):
        D.standardize(X_train, X_test)


def test_standardize_no_overflow():
    Ztr, Zte = D.standardize([[1e308], [-1e308]], [[0.0], [5e307]])
    np.testing.assert_allclose(Ztr, [[1.0], [-1.0]])
    np.testing.assert_allclose(Zte, [[0.0], [0.5]])
    big = np.array([[1.7e308], [-1.7e308], [-1.7e308]])
    Ztr, _ = D.standardize(big, big)
    np.testing.assert_allclose(Ztr[:, 0], [math.sqrt(2), -1 / math.sqrt(2), -1 / math.sqrt(2)])
    # tiny (subnormal) values are standardized as well
    Ztr, Zte = D.standardize([[5e-324], [0.0]], [[1e-323]])
    np.testing.assert_allclose(Ztr[:, 0], [1.0, -1.0])
    np.testing.assert_allclose(Zte, [[3.0]])


def test_train_test_split_sizes_are_not_rounded_up_by_float_error():
    # 0.07 * 100 = 7.000000000000001 and float32(0.3) * 10 = 3.0000001: ceil gave 8 and 4
    X = np.arange(200.0).reshape(100, 2)
    y = np.repeat([0, 1], 50)
    assert D.train_test_split(X, y, test_size=0.07)[1].shape[0] == 7
    assert D.train_test_split(X[:10], y[::10], test_size=np.float32(0.3), stratify=False)[1].shape[0] == 3
    assert D.train_test_split(X, y, test_size=0.071)[1].shape[0] == 8  # a real fraction still rounds up
    assert D.train_test_split(X, y, test_size=4e-10)[1].shape[0] == 1  # any positive share is a row


def test_check_points_reads_a_cpu_jax_array_in_place(compilations):
    """A JAX array on the CPU is checked for NaN/inf by NumPy, in place: the
    eager isfinite and all compiled two programs per new shape (~0.1 s)."""
    import jax.numpy as jnp

    from jaxnn._src.checks import check_points

    X = jnp.asarray(np.random.default_rng(3).normal(size=(37, 5)).astype(np.float32))
    with compilations(jnp.isfinite):  # compiled anew, at another shape: the name is one JAX reports
        assert bool(jnp.all(jnp.isfinite(X[:4])))
    with compilations() as compiled:  # (37, 5): not compiled since the programs were dropped
        assert check_points(X) is X
    assert compiled.of(jnp.isfinite) == [] and compiled == []
    for bad in (jnp.nan, jnp.inf):
        for dtype in (jnp.float32, jnp.bfloat16, jnp.float16):
            with pytest.raises(ValueError, match="Xb contains NaN or infinite values"):
                check_points(X.at[2, 3].set(bad).astype(dtype), "Xb")
    assert check_points(jnp.arange(6).reshape(3, 2)).shape == (3, 2)  # integers: finite by their dtype


def test_float64_features_too_small_for_float32_are_refused_by_name():
    """float64 points whose coordinates all lie near 1e-39 became float32
    subnormals, which XLA flushes to zero: every point one, the graph in index
    order, predictions constant (0.550 accuracy for 0.985) — silently.  Such a
    varying feature is refused with the fixes; constant tiny features, tiny
    values beside larger ones, 1e-30 and float64 under x64 are fine."""
    import jax

    import jaxnn
    from jaxnn._src.checks import check_points

    rng = np.random.default_rng(0)
    U = rng.uniform(-1, 1, size=(200, 2))
    y = (U[:, 0] > U[:, 1]).astype(int)
    for call in (lambda X: jaxnn.fit(X, y, k=5), lambda X: jaxnn.knn_graph(X, 5), lambda X: check_points(X)):
        with pytest.raises(ValueError, match=r"feature 0 \(and 1 more\) holds values no larger than 9.9\de-40"):
            call(U * 1e-39)
    with pytest.raises(ValueError, match=r"X's feature 1 \(and 0 more\).*rescale it.*enable_x64"):
        check_points(np.c_[U[:, 0], U[:, 1] * 1e-36])
    fine = [U * 1e-30, np.c_[U[:, 0], np.full(200, 1e-40)], np.c_[U[:, 0], U[:, 1] * 1e-39 + 1.0], U[:, :1] * 1e-39 + U[:, 1:]]
    for X in fine:
        check_points(X)
    model = jaxnn.fit(U * 1e-30, y, k=5, posterior="votes")
    assert np.mean(jaxnn.predict(model, U * 1e-30) == y) > 0.9
    with jax.enable_x64(True):
        check_points(U * 1e-39)


@pytest.mark.parametrize("value", [0.1, 0.3, 1 / 3, 1e-3, 123.456, -7.0])
def test_standardize_only_centres_a_column_of_one_value(value):
    """A constant training column is centred, not scaled (docstring), for
    values the float64 mean does not hold exactly too: the mean's rounding
    left a std of ~1e-17 there, so Z_train was 1 for 0 and a test value of
    1.1 in a column of 0.1 became 7.2e16."""
    X_train = np.column_stack([np.full(10, value), np.arange(10.0)])
    X_test = np.array([[value, 0.0], [value + 1.0, 0.0]])
    Z_train, Z_test = D.standardize(X_train, X_test)
    assert np.all(Z_train[:, 0] == 0.0)
    np.testing.assert_allclose(Z_test[:, 0], [0.0, 1.0], rtol=1e-12)
