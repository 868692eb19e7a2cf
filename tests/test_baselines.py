"""Tests for jaxnn.baselines: SGD logistic regression, linear SVM + Platt, plain k-NN.

Small data throughout; jitted trainers are reused across tests by sharing shapes.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_classification
from sklearn.linear_model import SGDClassifier
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

import jaxnn.baselines as BL
from jaxnn._src import baselines as _B


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------
def _split(X, y, n_train):
    return X[:n_train], X[n_train:], y[:n_train], y[n_train:]


@pytest.fixture(scope="module")
def blobs():
    """3 Gaussian blobs in 2-D, 240 train / 120 test."""
    X, y = make_blobs(360, n_features=2, centers=[[-4, 0], [4, 0], [0, 5]], cluster_std=1.4, random_state=0)
    return _split(X.astype(np.float32), y, 240)


@pytest.fixture(scope="module")
def separable():
    """Linearly separable 2-class set with a margin, standardised, 300 train / 200 test."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(800, 5))
    w = np.array([1.0, -2.0, 0.5, 0.0, 1.0])
    s = X @ w + 0.3
    keep = np.abs(s) > 0.4
    X, y = X[keep][:500], np.where(s[keep][:500] > 0, "pos", "neg")
    return _split(X, y, 300)


@pytest.fixture(scope="module")
def hard():
    """Overlapping 3-class problem, standardised on the training part (400 / 400)."""
    X, y = make_classification(800, 10, n_informative=5, n_redundant=2, n_classes=3, class_sep=1.0, random_state=0)
    Xtr, Xte, ytr, yte = _split(X, y, 400)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte), ytr, yte


@pytest.fixture(scope="module")
def svm_blobs(blobs):
    Xtr, _, ytr, _ = blobs
    return BL.svm_fit(Xtr, ytr)


def _acc(model, X, y):
    return float(np.mean(BL.predict(model, X) == y))


def _log_loss(P, y, classes):
    P = np.clip(np.asarray(P, np.float64), 1e-12, 1.0)
    idx = np.searchsorted(np.asarray(classes), y)
    return float(-np.mean(np.log(P[np.arange(len(y)), idx])))


def _svc_objective(W, b, X, y, classes, C):
    """Σ_c 1/2 ‖w_c‖² + C Σ_i max(0, 1 − y_ic f_ic)², in float64."""
    W, b = np.asarray(W, np.float64), np.asarray(b, np.float64)
    Y = np.where(np.asarray(y)[:, None] == np.asarray(classes)[None, :], 1.0, -1.0)
    margin = np.maximum(0.0, 1.0 - Y * (X @ W + b))
    return float(0.5 * np.sum(W * W) + C * np.sum(margin**2))


# --------------------------------------------------------------------------
# SGD
# --------------------------------------------------------------------------
def test_sgd_learns_blobs(blobs):
    Xtr, Xte, ytr, yte = blobs
    model = BL.sgd_fit(Xtr, ytr)
    assert isinstance(model, BL.SGDModel)
    assert model.W.shape == (2, 3) and model.b.shape == (3,)
    assert model.W.dtype == jnp.float32
    assert model.classes == (0, 1, 2)
    assert _acc(model, Xte, yte) > 0.9
    P = BL.predict_proba(model, Xte)
    assert P.shape == (120, 3)
    np.testing.assert_allclose(np.sum(P, axis=1), 1.0, atol=1e-5)
    assert np.all((np.asarray(P) >= 0) & (np.asarray(P) <= 1))
    S = BL.decision_function(model, Xte)
    np.testing.assert_allclose(S, Xte @ np.asarray(model.W) + np.asarray(model.b), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(BL.predict(model, Xte), np.argmax(np.asarray(S), axis=1))


def test_sgd_close_to_sklearn(hard):
    Xtr, Xte, ytr, yte = hard
    ours = _acc(BL.sgd_fit(Xtr, ytr), Xte, yte)
    sk = np.mean([
        np.mean(SGDClassifier(loss="log_loss", alpha=1e-4, random_state=s).fit(Xtr, ytr).predict(Xte) == yte)
        for s in range(3)
    ])
    assert ours > 0.5  # chance is 1/3
    assert ours >= sk - 0.04, (ours, sk)


def test_sgd_deterministic_and_seeded(blobs):
    Xtr, _, ytr, _ = blobs
    a = BL.sgd_fit(Xtr, ytr, seed=3)
    b = BL.sgd_fit(Xtr, ytr, seed=3)
    c = BL.sgd_fit(Xtr, ytr, seed=4)
    np.testing.assert_array_equal(a.W, b.W)
    np.testing.assert_array_equal(a.b, b.b)
    assert not np.array_equal(np.asarray(a.W), np.asarray(c.W))


def test_sgd_refit_does_not_retrace(blobs, compilations):
    """Other data, a regularisation, a learning rate and a seed are traced: one compiled training."""
    Xtr, _, ytr, _ = blobs
    with compilations(_B._sgd_train):  # compiled anew
        BL.sgd_fit(Xtr, ytr)
    with compilations() as compiled:
        BL.sgd_fit(Xtr, ytr, alpha=1e-2, learning_rate=0.3, seed=7)
        BL.sgd_fit(Xtr + 1.0, ytr)
    assert compiled.of(_B._sgd_train) == []


def test_sgd_float64_and_full_batch():
    # (blobs: 240 rows = 3 × 64 + 48, so the default fits above already cover a ragged last batch)
    X, y = make_blobs(90, 3, centers=3, random_state=2)
    with jax.enable_x64(True):
        model = BL.sgd_fit(X, y, epochs=30, batch_size=10_000)  # clamped to one full batch
        assert model.W.dtype == jnp.float64
        assert BL.predict_proba(model, X).dtype == jnp.float64
        assert _acc(model, X, y) > 0.9
        same = BL.sgd_fit(X, y, epochs=30, batch_size=90)
        # the same steps; sums over 128 padded slots or 90 rows round alike up to an ulp
        np.testing.assert_allclose(model.W, same.W, rtol=1e-13, atol=1e-15)


def test_sgd_minimises_the_regularised_logistic_loss():
    # mean_i Σ_c log(1 + exp(−Y_ic f_ic)) + alpha/2 ‖W‖², intercept unpenalised: scipy BFGS reference
    from scipy.optimize import minimize

    X, y = make_blobs(30, 2, centers=3, cluster_std=3.0, random_state=2)
    X = (X - X.mean(0)) / X.std(0)
    alpha = 0.1
    Y = np.where(y[:, None] == np.arange(3), 1.0, -1.0)

    def objective(p):
        W, b = p[:6].reshape(2, 3), p[6:]
        return np.mean(np.sum(np.logaddexp(0, -Y * (X @ W + b)), 1)) + 0.5 * alpha * np.sum(W * W)

    ref = minimize(objective, np.zeros(9), method="BFGS", options={"gtol": 1e-12}).x
    with jax.enable_x64(True):
        # full batch: the cosine-decayed Adam converges to the minimiser
        full = BL.sgd_fit(X, y, alpha=alpha, epochs=1000, batch_size=30, learning_rate=0.05)
        # ragged minibatches (30 = 4 × 7 + 2): padded rows carry no weight
        mini = BL.sgd_fit(X, y, alpha=alpha, epochs=4000, batch_size=7, learning_rate=0.05)
    for model, tol in ((full, 1e-5), (mini, 0.04)):
        got = np.r_[np.asarray(model.W).ravel(), np.asarray(model.b)]
        assert np.max(np.abs(got - ref)) < tol, (tol, np.max(np.abs(got - ref)))


def _sgd_reference(X, y, *, alpha, epochs, batch_size, learning_rate, seed):
    """float64 numpy minibatch Adam (optax's defaults: b1 0.9, b2 0.999, eps 1e-8)
    with a cosine-decayed step; epoch e visits the rows sorted (stably) by their
    jax.random.bits(fold_in(key(seed), e), (m,)), the ragged last batch padded with zero-weight rows."""
    m, d = X.shape
    C = int(y.max()) + 1
    Y = np.where(y[:, None] == np.arange(C), 1.0, -1.0)
    n_batches = -(-m // batch_size)
    T = epochs * n_batches
    W, b = np.zeros((d, C)), np.zeros(C)
    mom = [np.zeros_like(W), np.zeros_like(b)]
    vel = [np.zeros_like(W), np.zeros_like(b)]
    t = 0
    for e in range(epochs):
        bits = jax.random.bits(jax.random.fold_in(jax.random.key(seed), e), (m,), np.uint32)
        perm = np.argsort(np.asarray(bits), kind="stable")
        perm = np.r_[perm, np.zeros(n_batches * batch_size - m, int)].reshape(n_batches, batch_size)
        w = (np.arange(n_batches * batch_size) < m).reshape(n_batches, batch_size).astype(float)
        for idx, wb in zip(perm, w):
            f = X[idx] @ W + b
            r = wb[:, None] * (-Y[idx] / (1 + np.exp(Y[idx] * f))) / wb.sum()  # d loss / d f
            grads = [X[idx].T @ r + alpha * W, r.sum(0)]
            rate = learning_rate * 0.5 * (1 + np.cos(np.pi * t / T))
            t += 1
            for i, g in enumerate(grads):
                mom[i] = 0.9 * mom[i] + 0.1 * g
                vel[i] = 0.999 * vel[i] + 0.001 * g * g
                step = rate * (mom[i] / (1 - 0.9**t)) / (np.sqrt(vel[i] / (1 - 0.999**t)) + 1e-8)
                (W, b)[i][...] -= step
    return W, b


def test_sgd_equals_a_float64_reference_step_by_step():
    # every epoch a fresh permutation (one reused every epoch gave other weights), ragged batches
    X, y = make_blobs(11, 2, centers=3, random_state=4)
    kwargs = dict(alpha=0.05, epochs=3, batch_size=4, learning_rate=0.3, seed=7)
    W, b = _sgd_reference(X, y, **kwargs)
    with jax.enable_x64(True):
        model = BL.sgd_fit(X, y, **kwargs)
    np.testing.assert_allclose(np.asarray(model.W), W, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(model.b), b, rtol=1e-10, atol=1e-12)


def test_sgd_proba_is_normalised_ovr_sigmoids_and_default_rate(blobs):
    Xtr, Xte, ytr, _ = blobs
    model = BL.sgd_fit(Xtr, ytr)
    s = 1 / (1 + np.exp(-np.asarray(BL.decision_function(model, Xte), np.float64)))
    np.testing.assert_allclose(BL.predict_proba(model, Xte), s / s.sum(1, keepdims=True), rtol=1e-5)
    # learning_rate=None is 1/√d
    same = BL.sgd_fit(Xtr, ytr, learning_rate=1 / np.sqrt(2))
    np.testing.assert_array_equal(model.W, same.W)


# --------------------------------------------------------------------------
# SVM
# --------------------------------------------------------------------------
def test_svm_learns_blobs(blobs, svm_blobs):
    _, Xte, _, yte = blobs
    model = svm_blobs
    assert isinstance(model, BL.SVMModel)
    assert model.W.shape == (2, 3) and model.platt_a.shape == (3,) and model.platt_b.shape == (3,)
    assert _acc(model, Xte, yte) > 0.9


def test_svm_matches_linearsvc_objective(blobs, svm_blobs):
    Xtr, Xte, ytr, yte = blobs
    sk = LinearSVC(C=1.0, dual=False, tol=1e-8, max_iter=10_000, intercept_scaling=1e3).fit(Xtr, ytr)
    classes = svm_blobs.classes
    ours = _svc_objective(svm_blobs.W, svm_blobs.b, Xtr, ytr, classes, 1.0)
    ref = _svc_objective(sk.coef_.T, sk.intercept_, Xtr, ytr, classes, 1.0)
    assert ours <= ref * (1 + 1e-3), (ours, ref)
    assert np.mean(BL.predict(svm_blobs, Xte) == sk.predict(Xte)) >= 0.98
    assert abs(_acc(svm_blobs, Xte, yte) - np.mean(sk.predict(Xte) == yte)) <= 0.02


@pytest.mark.slow
def test_svm_separable_binary(separable):
    Xtr, Xte, ytr, yte = separable
    model = BL.svm_fit(Xtr, ytr, C=10.0)
    assert model.classes == ("neg", "pos")
    assert BL.predict(model, Xte).dtype == np.asarray(ytr).dtype
    assert _acc(model, Xtr, ytr) >= 0.99
    assert _acc(model, Xte, yte) >= 0.97
    sk = LinearSVC(C=10.0, dual=False, tol=1e-8, max_iter=10_000, intercept_scaling=1e3).fit(Xtr, ytr)
    assert abs(_acc(model, Xte, yte) - np.mean(sk.predict(Xte) == yte)) <= 0.02
    # binary: two one-vs-rest columns, mirror images of each other
    np.testing.assert_allclose(model.W[:, 0], -model.W[:, 1], atol=1e-3 * float(jnp.max(jnp.abs(model.W))))


def test_svm_hinge_close_to_linearsvc(blobs):
    Xtr, Xte, ytr, yte = blobs
    model = BL.svm_fit(Xtr, ytr, loss="hinge", platt_folds=None)
    assert model.loss == "hinge"
    sk = LinearSVC(C=1.0, loss="hinge", dual=True, max_iter=100_000).fit(Xtr, ytr)
    ours, ref = _acc(model, Xte, yte), float(np.mean(sk.predict(Xte) == yte))
    assert ours > 0.9
    assert ours >= ref - 0.03, (ours, ref)
    P = np.asarray(BL.predict_proba(model, Xte))
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-5)


def test_svm_platt_probabilities(blobs, svm_blobs):
    Xtr, Xte, ytr, yte = blobs
    P = np.asarray(BL.predict_proba(svm_blobs, Xte))
    assert P.shape == (120, 3)
    assert np.all((P >= 0) & (P <= 1))
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-5)
    Q = np.asarray(BL.predict_proba(svm_blobs, Xte, normalize=False))
    assert np.all((Q >= 0) & (Q <= 1))
    f = np.asarray(BL.decision_function(svm_blobs, Xte))
    np.testing.assert_allclose(Q, 1 / (1 + np.exp(np.asarray(svm_blobs.platt_a) * f + np.asarray(svm_blobs.platt_b))), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(P, Q / Q.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    # Platt slopes are negative: a larger SVM score means a larger posterior.
    assert np.all(np.asarray(svm_blobs.platt_a) < 0)
    prior = np.bincount(ytr) / len(ytr)
    const = _log_loss(np.tile(prior, (len(yte), 1)), yte, svm_blobs.classes)
    assert _log_loss(P, yte, svm_blobs.classes) < 0.5 * const


def test_platt_fit_recovers_sigmoid():
    rng = np.random.default_rng(0)
    f = rng.uniform(-3, 3, size=(4000, 1)).astype(np.float32)
    p = 1 / (1 + np.exp(-2.0 * f + 0.5))  # a = −2, b = 0.5
    y = np.where(rng.uniform(size=p.shape) < p, 1.0, -1.0).astype(np.float32)
    a, b = jax.jit(_B._platt_fit)(jnp.asarray(f), jnp.asarray(y))
    assert abs(float(a[0]) + 2.0) < 0.2 and abs(float(b[0]) - 0.5) < 0.15
    # first-order optimality with Platt's smoothed targets
    n_pos, n_neg = np.sum(y > 0), np.sum(y < 0)
    t = np.where(y > 0, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    q = 1 / (1 + np.exp(float(a[0]) * f.astype(np.float64) + float(b[0])))
    assert abs(np.sum((t - q) * f)) < 1e-2 * len(f) * 1e-2
    assert abs(np.sum(t - q)) < 1e-2 * len(f) * 1e-2


def test_stratified_folds():
    labels = np.repeat(np.arange(3), [50, 23, 7]).astype(np.int32)
    folds = _B._stratified_folds(labels, 5, seed=0)
    assert set(np.unique(folds)) == set(range(5))
    for c in range(3):
        counts = np.bincount(folds[labels == c], minlength=5)
        assert counts.max() - counts.min() <= 1
    sizes = np.bincount(folds)
    assert sizes.max() - sizes.min() <= 1
    np.testing.assert_array_equal(folds, _B._stratified_folds(labels, 5, seed=0))


def test_svm_deterministic_and_no_retrace(blobs, svm_blobs, compilations):
    Xtr, _, ytr, _ = blobs
    with compilations(_B._svm_fit_jit, _B._platt_jit):  # compiled anew
        again = BL.svm_fit(Xtr, ytr)
    for field in ("W", "b", "platt_a", "platt_b"):
        np.testing.assert_array_equal(getattr(again, field), getattr(svm_blobs, field))
    with compilations() as compiled:
        other = BL.svm_fit(Xtr, ytr, C=0.1, seed=5)
    assert compiled.of(_B._svm_fit_jit, _B._platt_jit) == []
    assert float(jnp.sum(other.W**2)) < float(jnp.sum(svm_blobs.W**2))  # more regularised


def test_svm_weights_match_linearsvc(blobs, svm_blobs):
    # the full-data fit minimises 1/2 ‖w‖² + C Σ max(0, 1 − y f)² (lam = 1/(C m)): LinearSVC's minimiser
    Xtr, _, ytr, _ = blobs
    sk = LinearSVC(C=1.0, dual=False, tol=1e-8, max_iter=10_000, intercept_scaling=1e3).fit(Xtr, ytr)
    np.testing.assert_allclose(svm_blobs.W, sk.coef_.T, atol=1e-4)
    np.testing.assert_allclose(svm_blobs.b, sk.intercept_, atol=1e-4)


@pytest.mark.slow
def test_svm_platt_fit_on_out_of_fold_scores(blobs, svm_blobs):
    # Platt's (a, b) come from scores of each fold by the fit on the other folds (same C, seed 0 folds)
    Xtr, _, ytr, _ = blobs
    labels = np.unique(ytr, return_inverse=True)[1].astype(np.int32)
    folds = _B._stratified_folds(labels, 5, 0)
    f = np.zeros((len(ytr), 3), np.float32)
    for k in range(5):
        sub = BL.svm_fit(Xtr[folds != k], ytr[folds != k], platt_folds=None)
        f[folds == k] = np.asarray(BL.decision_function(sub, Xtr[folds == k]))
    a, b = _B._platt_jit(jnp.asarray(f), jnp.asarray(labels), len(labels), n_classes=3)
    # float32 L-BFGS, 100 steps: the fold fits here and inside svm_fit (other rows, other padding) agree to ~1e-3
    np.testing.assert_allclose(svm_blobs.platt_a, a, rtol=2e-3)
    np.testing.assert_allclose(svm_blobs.platt_b, b, rtol=2e-3)
    # the fold assignment follows the seed
    assert not np.array_equal(folds, _B._stratified_folds(labels, 5, 1))
    assert not np.array_equal(np.asarray(BL.svm_fit(Xtr, ytr, seed=1).platt_a), np.asarray(svm_blobs.platt_a))


def test_platt_fit_matches_scipy():
    # minimiser of Σ −t log p − (1 − t) log(1 − p), p = 1/(1 + exp(a f + b)), targets
    # (N+ + 1)/(N+ + 2) and 1/(N− + 2)
    from scipy.optimize import minimize

    f = np.array([-2.0, -1.5, -1.0, -0.5, 0.0, 0.3, 0.8, 1.0, 1.5, 2.0])
    y = np.array([-1, -1, 1, -1, -1, 1, -1, 1, 1, 1.0])
    t = np.where(y > 0, 6 / 7, 1 / 7)

    def nll(p):
        z = p[0] * f + p[1]
        return np.sum(t * np.logaddexp(0, z) + (1 - t) * np.logaddexp(0, -z))

    ref = minimize(nll, [0.0, 0.0], method="BFGS", options={"gtol": 1e-10}).x
    a, b = jax.jit(_B._platt_fit)(jnp.asarray(f[:, None], jnp.float32), jnp.asarray(y[:, None], jnp.float32))
    np.testing.assert_allclose([float(a[0]), float(b[0])], ref, rtol=1e-4, atol=1e-5)


def test_svm_hinge_minimises_the_hinge_objective(blobs):
    # Σ_c 1/2 ‖w_c‖² + C Σ_i max(0, 1 − y_ic f_ic) against a tightly converged LinearSVC;
    # the default for the hinge is 1000 Adam steps
    Xtr, _, ytr, _ = blobs
    model = BL.svm_fit(Xtr, ytr, loss="hinge", platt_folds=None)
    sk = LinearSVC(C=1.0, loss="hinge", dual=True, tol=1e-10, max_iter=10**6, intercept_scaling=100).fit(Xtr, ytr)

    def objective(W, b):
        W, b = np.asarray(W, np.float64), np.asarray(b, np.float64)
        Y = np.where(ytr[:, None] == np.arange(3), 1.0, -1.0)
        return 0.5 * np.sum(W * W) + np.sum(np.maximum(0, 1 - Y * (Xtr @ W + b)))

    ours, ref = objective(model.W, model.b), objective(sk.coef_.T, sk.intercept_)
    assert ours <= ref * (1 + 2e-4), (ours, ref)
    np.testing.assert_array_equal(model.W, BL.svm_fit(Xtr, ytr, loss="hinge", platt_folds=None, epochs=1000).W)


@pytest.mark.slow
def test_inclusive_upper_bounds_are_accepted():
    # platt_folds ≤ m (leave-one-out), seed < 2³²
    assert BL.svm_fit(_X, _Y, platt_folds=10).platt_a.shape == (2,)
    assert BL.svm_fit(_X, _Y, seed=2**32 - 1).platt_a.shape == (2,)
    assert BL.sgd_fit(_X, _Y, seed=2**32 - 1).W.shape == (2, 2)


# --------------------------------------------------------------------------
# k-NN
# --------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 10])
def test_knn_matches_sklearn(k):
    rng = np.random.default_rng(k)
    X = rng.normal(size=(200, 4))
    y = rng.choice(np.array(["a", "b", "c", "d"]), size=200)
    Q = rng.normal(size=(80, 4))
    sk = KNeighborsClassifier(n_neighbors=k, algorithm="brute").fit(X, y)
    dist, _ = sk.kneighbors(Q, n_neighbors=k + 1)
    assert np.all(dist[:, k] - dist[:, k - 1] > 1e-4)  # no ties at the k-th neighbour in this data
    model = BL.knn_fit(X, y, k=k)
    assert isinstance(model, BL.KNNModel) and model.k == k
    np.testing.assert_array_equal(BL.predict(model, Q), sk.predict(Q))
    np.testing.assert_allclose(BL.predict_proba(model, Q), sk.predict_proba(Q), atol=1e-6)
    H = np.asarray(BL.decision_function(model, Q))
    np.testing.assert_allclose(H, 2 * k * sk.predict_proba(Q) - k, atol=1e-5)  # Σ_j y_jc, y ∈ {−1,+1}


def test_knn_learns_blobs(blobs):
    Xtr, Xte, ytr, yte = blobs
    assert _acc(BL.knn_fit(Xtr, ytr, k=10), Xte, yte) > 0.9


def test_knn_vote_ties_go_to_lowest_class():
    X = np.array([[0.0], [1.0], [10.0], [11.0]])
    y = np.array([7, 3, 3, 7])
    model = BL.knn_fit(X, y, k=2)
    # query 0.4: neighbours 0 (label 7) and 1 (label 3) → tie → class 3 (index 0)
    assert BL.predict(model, [[0.4]])[0] == 3
    np.testing.assert_allclose(BL.predict_proba(model, [[0.4]]), [[0.5, 0.5]])
    np.testing.assert_allclose(BL.decision_function(model, [[0.4]]), [[0.0, 0.0]])


def test_knn_k_equals_m():
    X = np.array([[0.0], [1.0], [2.0]])
    model = BL.knn_fit(X, [1, 2, 2], k=3)
    np.testing.assert_array_equal(BL.predict(model, [[0.0], [5.0]]), [2, 2])


# --------------------------------------------------------------------------
# Models, labels, public face
# --------------------------------------------------------------------------
def test_labels_are_returned_as_given(blobs):
    Xtr, Xte, ytr, _ = blobs
    labels = np.array([-3, 7, 100], dtype=np.int16)[ytr]
    model = BL.knn_fit(Xtr, labels, k=3)
    pred = BL.predict(model, Xte)
    assert pred.dtype == np.int16 and set(pred) <= {-3, 7, 100}
    model = BL.sgd_fit(Xtr, labels.tolist())
    assert model.classes == (-3, 7, 100)
    assert set(BL.predict(model, Xte)) <= {-3, 7, 100}


@pytest.mark.parametrize("fit", ["sgd_fit", "svm_fit", "knn_fit"])
def test_regression_targets_are_refused_as_labels(blobs, fit):
    # continuous y was taken as hundreds of classes (jaxnn.fit refuses it);
    # whole floats stay labels
    Xtr, _, ytr, _ = blobs
    kwargs = {"k": 3} if fit == "knn_fit" else {}
    with pytest.raises(ValueError, match="non-integer floats"):
        getattr(BL, fit)(Xtr, ytr + 0.5, **kwargs)
    assert getattr(BL, fit)(Xtr, ytr.astype(np.float64), **kwargs).classes == (0.0, 1.0, 2.0)


def test_models_are_immutable_pytrees(blobs, svm_blobs):
    Xtr, Xte, ytr, _ = blobs
    knn = BL.knn_fit(Xtr, ytr, k=3)
    for model in (svm_blobs, knn):
        with pytest.raises(dataclasses.FrozenInstanceError):
            model.classes = (9,)
        leaves = jax.tree.leaves(model)
        assert leaves and all(isinstance(leaf, jax.Array) for leaf in leaves)
    doubled = jax.tree.map(lambda a: a * 2, svm_blobs)
    assert isinstance(doubled, BL.SVMModel) and doubled.classes == svm_blobs.classes
    scores = jax.jit(lambda m, X: m.b + X @ m.W)(svm_blobs, jnp.asarray(Xte))
    np.testing.assert_allclose(scores, BL.decision_function(svm_blobs, Xte), rtol=1e-5, atol=1e-5)


def test_public_face():
    assert set(BL.__all__) == {
        "SGDModel", "SVMModel", "KNNModel", "sgd_fit", "svm_fit", "knn_fit",
        "predict", "predict_proba", "decision_function",
    }
    for name in BL.__all__:
        assert getattr(BL, name).__doc__


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------
_X = np.arange(20, dtype=float).reshape(10, 2)
_Y = np.array([0, 1] * 5)
_FITS = {"sgd": BL.sgd_fit, "svm": BL.svm_fit, "knn": lambda X, y, **kw: BL.knn_fit(X, y, k=kw.pop("k", 3), **kw)}


@pytest.mark.parametrize("fit", list(_FITS.values()), ids=list(_FITS))
@pytest.mark.parametrize(
    "X, y, match",
    [
        (np.arange(10.0), _Y, "2-D"),
        (np.zeros((10, 2, 1)), _Y, "2-D"),
        (np.zeros((0, 2)), np.zeros(0), "empty"),
        (np.where(np.eye(10, 2) > 0, np.nan, 0.0), _Y, "NaN"),
        (np.where(np.eye(10, 2) > 0, np.inf, 0.0), _Y, "infinite"),
        (_X, _Y[:9], "10 rows but y has 9"),
        (_X, np.zeros(10), "at least 2 classes"),
        (_X, _Y.reshape(5, 2), "1-D"),
        (_X, np.array([0.0, np.nan] * 5), "NaN"),
    ],
)
def test_bad_data_raises_valueerror(fit, X, y, match):
    with pytest.raises(ValueError, match=match):
        fit(X, y)


@pytest.mark.parametrize("fit", list(_FITS.values()), ids=list(_FITS))
@pytest.mark.parametrize("X, y", [(None, _Y), ("abc", _Y), (np.array([["a", "b"]] * 10), _Y), (_X, None), (_X, 3)])
def test_bad_types_raise_typeerror(fit, X, y):
    with pytest.raises(TypeError):
        fit(X, y)


@pytest.mark.parametrize(
    "fit, kwargs, error, match",
    [
        (BL.sgd_fit, {"alpha": 0.0}, ValueError, "alpha"),
        (BL.sgd_fit, {"alpha": -1.0}, ValueError, "alpha"),
        (BL.sgd_fit, {"alpha": float("nan")}, ValueError, "alpha"),
        (BL.sgd_fit, {"epochs": 0}, ValueError, "epochs"),
        (BL.sgd_fit, {"batch_size": 0}, ValueError, "batch_size"),
        (BL.sgd_fit, {"learning_rate": -0.1}, ValueError, "learning_rate"),
        (BL.sgd_fit, {"alpha": "big"}, TypeError, "alpha"),
        (BL.sgd_fit, {"epochs": 2.5}, TypeError, "epochs"),
        (BL.sgd_fit, {"epochs": True}, TypeError, "epochs"),
        (BL.sgd_fit, {"seed": "x"}, TypeError, "seed"),
        (BL.sgd_fit, {"seed": -1}, ValueError, "seed"),
        (BL.svm_fit, {"seed": 2**32}, ValueError, "seed"),
        (BL.svm_fit, {"C": 0.0}, ValueError, "C"),
        (BL.svm_fit, {"C": -2}, ValueError, "C"),
        (BL.svm_fit, {"C": None}, TypeError, "C"),
        (BL.svm_fit, {"epochs": -1}, ValueError, "epochs"),
        (BL.svm_fit, {"loss": "log"}, ValueError, "loss"),
        (BL.svm_fit, {"loss": 1}, TypeError, "loss"),
        (BL.svm_fit, {"platt_folds": 1}, ValueError, "platt_folds"),
        (BL.svm_fit, {"platt_folds": 11}, ValueError, "platt_folds"),
        (BL.svm_fit, {"platt_folds": 2.0}, TypeError, "platt_folds"),
        (BL.knn_fit, {"k": 0}, ValueError, "k must be >= 1"),
        (BL.knn_fit, {"k": 11}, ValueError, "k must be <="),
        (BL.knn_fit, {"k": 2.0}, TypeError, "k"),
        (BL.knn_fit, {"k": None}, TypeError, "k"),
    ],
)
def test_bad_hyperparameters(fit, kwargs, error, match):
    with pytest.raises(error, match=match):
        fit(_X, _Y, **kwargs)


@pytest.mark.slow
def test_svm_platt_folds_above_m_explain_the_cross_fit():
    # the default platt_folds=5 on 4 rows: say what needs 5 examples and how to avoid it
    X4, y4 = _X[:4], np.array([0, 1, 0, 1])
    with pytest.raises(ValueError) as info:
        BL.svm_fit(X4, y4)
    message = str(info.value)
    assert "Platt scaling's 5-fold cross-fit" in message and "at least 5 training examples, got 4" in message
    assert "platt_folds=k with 2 <= k <= 4" in message and "platt_folds=None" in message
    with pytest.raises(ValueError, match="Platt scaling's 11-fold cross-fit .* at least 11 training examples, got 10"):
        BL.svm_fit(_X, _Y, platt_folds=11)
    assert BL.svm_fit(X4, y4, platt_folds=None).platt_a.shape == (2,)  # the fixes the message offers work
    assert BL.svm_fit(X4, y4, platt_folds=4).platt_a.shape == (2,)


@pytest.mark.slow
def test_svm_platt_cross_fit_refuses_classes_with_one_example():
    # a class with a single example: the fold holding it trained with no positive of the class, so
    # its out-of-fold score said nothing and Platt's slope came out inverted (platt_a > 0: P(class)
    # falling as its SVM score rises) for 41 of 51 such classes at C = 100, m = 300 — refuse, as
    # scikit-learn's CalibratedClassifierCV does, and name the fix
    rng = np.random.default_rng(0)
    y = np.r_[np.arange(6), rng.integers(0, 3, 30)]  # classes 3, 4, 5 have one example each
    X = rng.normal(size=(y.size, 2)) + 3 * np.c_[np.cos(y), np.sin(y)]
    for folds in (5, 2):
        with pytest.raises(ValueError) as info:
            BL.svm_fit(X, y, platt_folds=folds)
        message = str(info.value)
        assert f"Platt scaling's {folds}-fold cross-fit" in message and "at least 2 training examples of every class" in message
        assert "3 of 6 classes have a single example (3, 4, 5)" in message and "platt_folds=None" in message
    model = BL.svm_fit(X, y, platt_folds=None)  # the fix the message offers works: training-score sigmoids
    assert np.all(np.asarray(model.platt_a) < 0)
    two = np.r_[y, 3, 4, 5]  # two examples of every class: each fold trains on a positive of each
    assert BL.svm_fit(np.r_[X, X[3:6] + 0.1], two).platt_a.shape == (6,)


def test_baselines_refuse_overflowing_data_diverged_training_and_stray_options():
    for fit in (BL.sgd_fit, BL.svm_fit, BL.knn_fit):
        with pytest.raises(ValueError, match="float32 range"):
            fit(np.asarray(_X, np.float64) * 1e39, _Y)
    with pytest.raises(ValueError, match="diverged"):
        BL.svm_fit(_X, _Y, loss="hinge", learning_rate=1e30)
    svm, sgd = BL.svm_fit(_X, _Y), BL.sgd_fit(_X, _Y)
    with pytest.raises(TypeError, match="normalize must be a bool"):
        BL.predict_proba(svm, _X, normalize="no")
    with pytest.raises(TypeError, match="takes no normalize"):
        BL.predict_proba(sgd, _X, normalize=False)
    big = np.array([[2**40, 0], [0, 1], [5, 5]], dtype=np.int64)  # int64 beyond int32 must not wrap
    knn = BL.knn_fit(big, [0, 1, 1], k=1)
    assert BL.predict(knn, np.array([[0, 0]]))[0] == 1


def test_predict_input_checks():
    model = BL.knn_fit(_X, _Y, k=3)
    for fn in (BL.predict, BL.predict_proba, BL.decision_function):
        with pytest.raises(ValueError, match="3 features"):
            fn(model, np.zeros((4, 3)))
        with pytest.raises(ValueError, match="2-D"):
            fn(model, np.zeros(2))
        with pytest.raises(ValueError, match="NaN"):
            fn(model, np.full((1, 2), np.nan))
        with pytest.raises(TypeError):
            fn(model, None)
        with pytest.raises(TypeError, match="baselines model"):
            fn({"W": 1}, np.zeros((4, 2)))


@pytest.mark.slow
def test_platt_scaling_tries_its_step_lengths_one_at_a_time(temp_bytes):
    # the 30 trial step lengths were vmapped inside the vmap over classes: a
    # (C, 30, m) buffer, 504 MB at m = 2·10⁴, C = 100 (25 GB at m = 10⁶); XLA's plan, no timing
    import jax
    import jax.numpy as jnp

    m, C = 20_000, 100
    temp = temp_bytes(_B._platt_jit.lower(jax.ShapeDtypeStruct((m, C), jnp.float32),
                                          jax.ShapeDtypeStruct((m,), jnp.int32), m, n_classes=C))
    assert temp < 30 * m * C * 4 / 4  # well below the 30 trials' (C, 30, m)


@pytest.mark.slow
def test_svm_fits_its_platt_folds_one_after_another(temp_bytes):
    # the F + 1 fits (all data, then each training fold) were vmapped with the classes: the
    # solver's (F·C, m) vectors and an (F, m, C) block of fold scores, 12.4 GB at m = 10⁶,
    # d = 16, C = 100 (2.8 GB now); XLA's plan, no timing
    import jax
    import jax.numpy as jnp

    m, d, C, F = 20_000, 16, 100, 5
    S = jax.ShapeDtypeStruct
    temp = temp_bytes(_B._svm_fit_jit.lower(S((m, d), jnp.float32), S((m,), jnp.int32), S((m,), jnp.int32),
                                            S((), jnp.int32), S((), jnp.float32), S((), jnp.float32),
                                            n_classes=C, n_folds=F, epochs=3, squared=True))
    assert temp < 10 * m * C * 4  # one fit's vectors, not the (F + 1)·C problems'


def test_knn_baseline_keeps_the_digits_of_points_far_from_zero():
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(200, 2))
    y = (Z[:, 0] > 0).astype(int)
    shift = np.array([1e8, -1e8])
    far = BL.knn_fit(Z[:150] + shift, y[:150], k=5)
    np.testing.assert_array_equal(BL.predict(far, Z[150:] + shift), BL.predict(BL.knn_fit(Z[:150], y[:150], k=5), Z[150:]))
    assert far.origin is not None


def test_knn_baseline_batches_of_other_sizes_share_the_compiled_search(compilations):
    """The k-NN baseline pads its queries as jaxnn.predict does: batches of
    1 … 128 rows reuse one compiled search and vote count, with the full
    batch's answers."""
    from jaxnn._src import baselines as bl_src
    from jaxnn._src import search as search_mod

    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(150, 4)), rng.integers(0, 3, 150)
    model = BL.knn_fit(X, y, k=5)
    Xq = X[:128] + 0.1
    with compilations(bl_src._votes, search_mod.conditioned_search):  # compiled anew
        p_all, labels_all = np.asarray(BL.predict_proba(model, Xq)), BL.predict(model, Xq)
    with compilations() as compiled:
        for n in (1, 40, 127):
            np.testing.assert_allclose(np.asarray(BL.predict_proba(model, Xq[:n])), p_all[:n])
            np.testing.assert_array_equal(BL.predict(model, Xq[:n]), labels_all[:n])
    assert compiled.of(bl_src._votes, search_mod.conditioned_search) == []


@pytest.mark.parametrize("fit", ["sgd_fit", "svm_fit"])
def test_linear_baselines_batches_of_other_sizes_share_the_compiled_scoring(fit, compilations):
    """SGD and SVM predictions pad their queries as jaxnn.predict does: batches
    of 1 … 128 rows reuse one compiled scoring, with the full batch's answers."""
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(150, 4)), rng.integers(0, 3, 150)
    model = getattr(BL, fit)(X, y)
    Xq = X[:128] + 0.1
    jitted = (_B._linear_scores, _B._ovr_logistic_proba if fit == "sgd_fit" else _B._platt_proba)
    with compilations(*jitted):  # compiled anew
        p_all, f_all, labels_all = (np.asarray(BL.predict_proba(model, Xq)),
                                    np.asarray(BL.decision_function(model, Xq)), BL.predict(model, Xq))
    with compilations() as compiled:
        for n in (1, 40, 127):
            np.testing.assert_allclose(np.asarray(BL.predict_proba(model, Xq[:n])), p_all[:n], rtol=1e-6)
            np.testing.assert_allclose(np.asarray(BL.decision_function(model, Xq[:n])), f_all[:n], rtol=1e-6,
                                       atol=1e-6)
            np.testing.assert_array_equal(BL.predict(model, Xq[:n]), labels_all[:n])
    assert compiled.of(*jitted) == []


def test_predict_under_jit_is_refused_with_the_traceable_alternative():
    """baselines.predict answers NumPy labels: under jax.jit it raised JAX's
    TracerArrayConversionError; now a TypeError naming what works inside."""
    rng = np.random.default_rng(21)
    X = rng.normal(size=(60, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    for model in (BL.knn_fit(X, y, k=3), BL.sgd_fit(X, y, epochs=2)):
        with pytest.raises(TypeError, match=r"jnp.argmax\(baselines.decision_function"):
            jax.jit(lambda m: BL.predict(m, X))(model)
        inside = jax.jit(lambda m: jnp.argmax(BL.decision_function(m, X), axis=1))(model)
        np.testing.assert_array_equal(np.asarray(model.classes)[np.asarray(inside)], BL.predict(model, X))


# --------------------------------------------------------------------------
# Shared sizes: trainings of nearby sizes share their compiled programs
# --------------------------------------------------------------------------
_TRAINERS = {
    "sgd": lambda X, y: BL.sgd_fit(X, y, epochs=3, batch_size=16),
    "svm": lambda X, y: BL.svm_fit(X, y, epochs=20),
    "svm-no-cross-fit": lambda X, y: BL.svm_fit(X, y, epochs=20, platt_folds=None),
    "svm-hinge": lambda X, y: BL.svm_fit(X, y, loss="hinge", epochs=30),
}


# SGD's minibatches at both sizes; each SVM variant (full batch) at one (all 8 pairs: 8 x64 trainings' compilations)
@pytest.mark.parametrize("trainer, m, d", [("sgd", 37, 3), ("sgd", 130, 9), ("svm", 130, 9), ("svm-no-cross-fit", 37, 3),
                                           ("svm-hinge", 37, 3)])
@pytest.mark.slow
def test_linear_baselines_trained_padded_equal_the_unpadded_training(trainer, m, d, monkeypatch):
    """Training sets of at most SHARED_MAX_ROWS rows are padded with zero rows
    (weight 0 in every loss, in no Platt fold) and zero features: the weights,
    intercepts and Platt sigmoids equal those of the training at the exact
    sizes, float64 to rounding (20–30 optimiser steps, short of convergence,
    carry a sum's last bits to ~1e-8 of Platt's a; m = 37 also has fewer rows than a minibatch;
    m = 130 has a ragged last batch and padded batches the epoch skips)."""
    rng = np.random.default_rng(m)
    X, y = rng.normal(size=(m, d)), rng.integers(0, 3, m)
    X[:, 0] += 2.0 * y  # something to learn
    fit = _TRAINERS[trainer]
    with jax.enable_x64(True):
        padded = fit(X, y)
        assert _B._shared_training(X, np.zeros(m, np.int32))[0].shape == (_B.shared_rows(m), _B.shared_features(d))
        monkeypatch.setattr(_B.shared_sizes, "SHARED_MAX_ROWS", 0)  # every set "large": trained as it is
        assert _B._shared_training(X, np.zeros(m, np.int32))[0].shape == (m, d)
        exact = fit(X, y)
    assert padded.W.shape == exact.W.shape == (d, 3)
    for field in [f.name for f in dataclasses.fields(exact) if f.name not in ("classes", "loss")]:
        np.testing.assert_allclose(np.asarray(getattr(padded, field)), np.asarray(getattr(exact, field)),
                                   rtol=1e-7, atol=1e-9, err_msg=field)  # rounding, grown by unconverged steps


@pytest.mark.slow  # counts compilations
def test_linear_baselines_of_nearby_sizes_share_the_compiled_training(compilations):
    """Cross-validation folds (sizes a row apart) and data sets of a few
    features more or less reuse one compiled SGD, SVM and Platt program each,
    where each new (m, d) compiled them again (~1 s on 2 CPU cores)."""
    rng = np.random.default_rng(7)
    jitted = (_B._sgd_train, _B._svm_fit_jit, _B._platt_jit)
    X, y = rng.normal(size=(170, 6)), rng.integers(0, 2, 170)
    with compilations(*jitted):  # compiled anew
        BL.sgd_fit(X, y)
        BL.svm_fit(X, y)
    with compilations() as compiled:
        for m, d in ((169, 6), (151, 5), (140, 2), (166, 8)):  # all within 256 rows and 8 features
            BL.sgd_fit(X[:m, :d], y[:m])
            BL.svm_fit(X[:m, :d], y[:m])
    assert compiled.of(*jitted) == []
    with compilations() as compiled:
        BL.svm_fit(np.c_[X, X], y)  # 12 features: a new width
    assert len(compiled.of(_B._svm_fit_jit)) == 1  # the watch sees a compilation


def test_linear_baselines_report_divergence_before_cutting_the_padding():
    """The divergence check reads the trained arrays on the host (eagerly,
    isfinite and all compiled per shape): still a ValueError naming the cure."""
    with pytest.raises(ValueError, match="SGD training diverged.*lower learning_rate"):
        BL.sgd_fit(_X, _Y, learning_rate=3e38)  # Adam moves W by ~the rate a step: inf in float32
