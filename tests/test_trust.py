"""Predictions one can trust at any k: examples no step reached take their
class's leverage, exact ties in H go to the k-NN vote and then the nearest
neighbour (never the class index), predict and predict_proba agree, and the
default posteriors (softmax(H/T), T fit on held-out data) are never exactly
0 or 1.  Small data: the file runs in about 35 s on one core (no compilation
cache); the measurements of docs/results.md#small-k are the slow test at the
end."""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxnn

sys.path.insert(0, os.path.dirname(__file__))
from _data import _blobs, assert_same_refit  # noqa: E402


def _knn_rule(y, nb):
    """Plain k-NN labels of neighbour indices nb (n, k), nearest first: the
    most frequent class, ties to the tied class of the nearest neighbour."""
    labels = y[nb]
    out = []
    for row in labels:
        values, counts = np.unique(row, return_counts=True)
        tied = set(values[counts == counts.max()])
        out.append(next(v for v in row if v in tied))
    return np.array(out)


def _digits(train=1300):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    return train_test_split(X, y, train_size=train, random_state=0, stratify=y)


def _log_loss(P, y, classes):
    idx = np.searchsorted(np.asarray(classes), y)
    return float(-np.mean(np.log(np.asarray(P, np.float64)[np.arange(len(y)), idx])))


# ----------------------------------------------------------------------------
# 1. small k: unreached examples, ties
# ----------------------------------------------------------------------------

def test_examples_nobody_reached_take_the_mean_leverage_of_their_class_sign():
    """At k = 1 a third of the examples are no one's neighbour (n_j = 0):
    boosting never steps on them and left α = 0, so a query whose neighbour
    they were scored 0.  They now take, per class c, the mean α_jc of the
    reached examples with the same label sign y_jc (floored at 0)."""
    X, y = _blobs(m=150, C=3, seed=2)
    model = jaxnn.fit(X, y, k=1, posterior="link")
    nb = np.asarray(jaxnn.knn_graph(X, 1).indices)
    reached = np.bincount(nb.ravel(), minlength=150) > 0
    assert 0.1 < np.mean(~reached) < 0.6
    A, Y = np.asarray(model.alpha), np.asarray(model.Y)
    for c in range(3):
        for sign in (-1.0, 1.0):
            fill = max(A[reached & (Y[:, c] == sign), c].mean(), 0.0)
            got = A[~reached & (Y[:, c] == sign), c]
            assert got.size and fill > 0
            np.testing.assert_allclose(got, fill, rtol=1e-5)
    # the function itself: reached rows untouched, nothing reached in a group → 0, no reached row → α itself
    from jaxnn._src.leverage import unreached_leverage

    alpha = jnp.asarray([[2.0, -1.0], [4.0, 3.0], [0.0, 0.0], [0.0, 0.0]])
    Yp = jnp.asarray([[1.0, -1.0], [1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
    graph = np.array([[1], [0], [0], [1]])  # 2 and 3 are no one's neighbour
    np.testing.assert_allclose(np.asarray(unreached_leverage(alpha, Yp, graph)),
                               [[2.0, -1.0], [4.0, 3.0], [3.0, 1.0], [0.0, 0.0]])
    assert unreached_leverage(alpha, Yp, np.array([[1], [2], [3], [0]])) is alpha
    host = unreached_leverage(np.asarray(alpha), np.asarray(Yp), graph)  # host in, host out, same values
    assert isinstance(host, np.ndarray)
    np.testing.assert_array_equal(host, np.asarray(unreached_leverage(alpha, Yp, graph)))


def test_large_leverages_on_an_accelerator_are_filled_and_shrunk_there(monkeypatch):
    """An α of at least DEVICE_MIN_ELEMENTS on an accelerator (here: a CPU
    taken for one) is filled and shrunk by one program on its device, with
    the host pass's values (float32 sums against float64 ones)."""
    from jaxnn._src import leverage

    rng = np.random.default_rng(0)
    m, C = 3000, 7
    alpha = jnp.asarray(rng.normal(size=(m, C)).astype(np.float32))
    Y = np.where(rng.integers(0, C, m)[:, None] == np.arange(C), 1.0, -1.0)
    graph = rng.integers(0, m // 2, size=(m, 5))  # the upper half is no one's neighbour
    host_filled = leverage.unreached_leverage(alpha, Y, graph)
    host_shrunk = leverage.shrunk_leverage(alpha, 0.3, 0.7)
    monkeypatch.setattr(leverage, "DEVICE_MIN_ELEMENTS", m * C)
    monkeypatch.setattr(leverage.platforms, "on_host", lambda array: False)
    filled = leverage.unreached_leverage(alpha, Y, graph)
    assert isinstance(filled, jax.Array)
    np.testing.assert_allclose(np.asarray(filled), np.asarray(host_filled), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(leverage.shrunk_leverage(alpha, 0.3, 0.7)), np.asarray(host_shrunk),
                               rtol=1e-6, atol=1e-6)
    monkeypatch.setattr(leverage, "DEVICE_MIN_ELEMENTS", m * C + 1)  # smaller α: the host pass
    assert leverage.unreached_leverage(alpha, Y, graph).dtype == host_filled.dtype


def test_k1_with_every_alpha_positive_is_exactly_1nn():
    """k = 1: H_c(x) = α_jc y_jc for x's nearest training point j; with every
    α > 0 the label is j's — exactly 1-NN, for the fitted α (unreached
    examples included) and for any positive α."""
    X, y = _blobs(m=200, C=3, seed=5, spread=6.0)
    Xq = _blobs(m=120, C=3, seed=6, spread=6.0)[0]
    labels = np.array(["ant", "bee", "cat"])[y]
    model = jaxnn.fit(X, labels, k=1, posterior="link")
    assert np.all(np.asarray(model.alpha) > 0)
    nn = np.asarray(jaxnn.knn_query(X, Xq, 1).indices)[:, 0]
    np.testing.assert_array_equal(jaxnn.predict(model, Xq), labels[nn])
    rng = np.random.default_rng(0)
    positive = dataclasses.replace(model, alpha=jnp.asarray(rng.uniform(1e-3, 5.0, size=(200, 3)), jnp.float32))
    np.testing.assert_array_equal(jaxnn.predict(positive, Xq), labels[nn])


def test_exact_ties_go_to_the_vote_then_the_nearest_neighbour():
    """H ≡ 0 (every α 0): every class ties, and the label is plain k-NN's —
    the most frequent class among the k neighbours, a tied vote to the class
    of the nearest of them — not the first class; eagerly, under jax.jit, from
    given neighbours and through the estimator."""
    from jaxnn.sklearn import BoostedKNNClassifier

    X, y = _blobs(m=120, C=3, seed=2, spread=1.5)
    Xq = _blobs(m=60, C=3, seed=3, spread=1.5)[0]
    model = jaxnn.fit(X, y + 10, k=4, posterior="link")
    flat = dataclasses.replace(model, alpha=jnp.zeros_like(model.alpha))
    nb = np.asarray(jaxnn.knn_query(X, Xq, 4).indices)
    want = _knn_rule(y + 10, nb)
    counts = np.stack([(y[nb] == c).sum(1) for c in range(3)], 1)
    assert np.sum(np.sort(counts, 1)[:, -1] == np.sort(counts, 1)[:, -2]) >= 3  # tied votes occur
    assert len(set(want)) == 3
    np.testing.assert_array_equal(jaxnn.predict(flat, Xq), want)
    np.testing.assert_array_equal(np.asarray(jax.jit(jaxnn.predict)(flat, Xq)), want)
    np.testing.assert_array_equal(jaxnn.predict(flat, neighbors=nb), want)
    est = BoostedKNNClassifier(k=4).fit(X, y + 10)
    est.model_ = flat
    np.testing.assert_array_equal(est.predict(Xq), want)
    np.testing.assert_array_equal(np.asarray(est.classes_)[np.argmax(est.predict_proba(Xq), 1)], want)
    np.testing.assert_array_equal(np.asarray(est.classes_)[np.argmax(est.decision_function(Xq), 1)], want)


def test_small_k_on_digits_is_as_accurate_as_knn():
    """scikit-learn's digits, 1300 training rows: at k = 1, 39 % of them had
    α = 0 and 29 % of the test rows scored all zero, all labelled 0 (0.722
    accuracy for 1-NN's 0.978); k = 2: 0.958 for 0.982."""
    from sklearn.neighbors import KNeighborsClassifier

    Xtr, Xte, ytr, yte = _digits()
    for k in (1, 2):
        model = jaxnn.fit(Xtr, ytr, k=k, posterior="link")
        acc = np.mean(jaxnn.predict(model, Xte) == yte)
        knn = KNeighborsClassifier(k).fit(Xtr, ytr).score(Xte, yte)
        assert acc >= knn - 0.015, (k, acc, knn)
        H = np.asarray(jaxnn.decision_function(model, Xte))
        assert np.mean(np.all(H == 0, axis=1)) == 0.0


# ----------------------------------------------------------------------------
# 2. predict and predict_proba agree
# ----------------------------------------------------------------------------

@pytest.mark.slow
def test_default_predict_proba_ranks_like_predict():
    """argmax predict_proba differed from predict on 3 of 150 iris rows up to
    45 of 1797 digits (the k-NN vote fractions of posterior="auto"); now the
    default posteriors' argmax is predict's label, with the kernel term or
    without it (w = 0: increasing with H within a row), exact ties broken
    as predict breaks them."""
    from sklearn.datasets import load_iris, load_wine

    for X, y in (load_iris(return_X_y=True), load_wine(return_X_y=True), _digits(500)[::2]):
        X = jaxnn.datasets.standardize(X, X)[0]
        model = jaxnn.fit(X, y, k=10)
        assert model.posterior_temperature > 0
        for mdl in (model, dataclasses.replace(model, posterior_weight=0.0)):
            P = np.asarray(jaxnn.predict_proba(mdl, X))
            np.testing.assert_array_equal(np.asarray(mdl.classes)[np.argmax(P, axis=1)], jaxnn.predict(mdl, X))
        H = np.asarray(jaxnn.decision_function(model, X))
        for i in range(0, len(X), 7):  # w = 0: within a row, p̂ is increasing in H
            order = np.argsort(H[i], kind="stable")
            assert np.all(np.diff(P[i][order]) >= 0)
    # exact ties in H (α ≡ 0): the posterior's argmax is still predict's label
    X, y = _blobs(m=120, C=3, seed=2, spread=1.5)
    model = jaxnn.fit(X, y, k=4)
    flat = dataclasses.replace(model, alpha=jnp.zeros_like(model.alpha))
    for mdl in (flat, dataclasses.replace(flat, posterior_weight=0.0)):
        P = np.asarray(jaxnn.predict_proba(mdl, X))
        np.testing.assert_array_equal(np.argmax(P, axis=1), jaxnn.predict(mdl, X))
    np.testing.assert_allclose(P, 1.0 / 3.0, atol=1e-6)  # w = 0: H ties everywhere


@pytest.mark.parametrize("posterior", ["auto", "link", "votes"])
def test_sklearn_consistency_checks_pass_for_every_posterior(posterior):
    """check_classifiers_train (predict = argmax predict_proba = argmax
    decision_function) and check_decision_proba_consistency (predict_proba
    ranked like decision_function) for each posterior setting; "auto" and
    "votes" failed both."""
    from sklearn.utils.estimator_checks import check_classifiers_train, check_decision_proba_consistency

    from jaxnn.sklearn import BoostedKNNClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for check in (check_classifiers_train, check_decision_proba_consistency):
            check("BoostedKNNClassifier", BoostedKNNClassifier(k=3, posterior=posterior))


# ----------------------------------------------------------------------------
# 3. the default posteriors: never 0 or 1, calibrated on held-out data
# ----------------------------------------------------------------------------

@pytest.mark.slow
def test_default_posteriors_are_never_exactly_zero_or_one():
    """posterior="auto" took the vote fractions, 0 for the true class on a few
    rows (log loss 0.25–0.33 where SVC's was 0.07–0.11); the default
    posteriors lie strictly inside (0, 1), in float32 and in the estimator's
    float64, single-label and multilabel, and beat the votes' log loss."""
    from sklearn.datasets import load_breast_cancer

    from jaxnn.sklearn import BoostedKNNClassifier

    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = jaxnn.datasets.train_test_split(X, y, test_size=0.4, seed=0)
    Xtr, Xte = jaxnn.datasets.standardize(Xtr, Xte)
    model = jaxnn.fit(Xtr, ytr, k=10)
    P = np.asarray(jaxnn.predict_proba(model, Xte))
    assert P.dtype == np.float32 and np.all((P > 0) & (P < 1))
    Pe = BoostedKNNClassifier(k=10, posterior="auto").fit(Xtr, ytr).predict_proba(Xte)
    assert Pe.dtype == np.float64 and np.all((Pe > 0) & (Pe < 1))
    votes = np.asarray(jaxnn.predict_proba(jaxnn.fit(Xtr, ytr, k=10, posterior="votes"), Xte))
    with np.errstate(divide="ignore"):
        assert _log_loss(P, yte, model.classes) < _log_loss(votes, yte, model.classes)
    # extreme scores stay inside (0, 1) and keep predict's label
    from jaxnn._src.calibration import POSTERIOR_FLOOR, calibrated_posterior

    H = jnp.asarray([[1e4, -1e4, 0.0], [3.0, 3.0, -2.0], [-5e3, -5e3, -5e3]], jnp.float32)
    p = np.asarray(calibrated_posterior(H, 1e-3, jnp.asarray([0, 1, 2]), False))
    assert np.all((p > 0) & (p < 1)) and list(np.argmax(p, 1)) == [0, 1, 2]
    np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-6)
    assert p[0, 1] == pytest.approx(POSTERIOR_FLOOR / 3, rel=1e-5)
    # multilabel: per label (1 − ε)σ(H/T) + ε/2, above 1/2 exactly where predict says 1
    Xm, Ym = jaxnn.datasets.multilabel(n_samples=300, n_classes=4, seed=0)
    ml = jaxnn.fit(Xm[:200], Ym[:200], k=8)
    Pm = np.asarray(jaxnn.predict_proba(ml, Xm[200:]))
    assert ml.posterior_temperature > 0 and np.all((Pm > 0) & (Pm < 1))
    np.testing.assert_array_equal(Pm > 0.5, jaxnn.predict(ml, Xm[200:]) == 1)


def test_the_estimators_default_posteriors_are_never_exactly_zero_or_one():
    """The estimator defaulted to the papers' link, which saturates: on two
    far-apart blobs the squared loss's link gave exactly 0 and 1 on every
    row.  Its default is fit's calibrated posterior="auto", strictly inside
    (0, 1), with the same predict."""
    from sklearn.datasets import make_blobs

    from jaxnn.sklearn import BoostedKNNClassifier

    X, y = make_blobs(200, centers=[[-10.0, 0.0], [10.0, 0.0]], random_state=0)
    est = BoostedKNNClassifier(loss="squared").fit(X, y)
    assert est.get_params()["posterior"] == "auto"
    P = est.predict_proba(X)
    assert np.all((P > 0) & (P < 1))
    np.testing.assert_array_equal(est.classes_[np.argmax(P, axis=1)], est.predict(X))
    link = BoostedKNNClassifier(loss="squared", posterior="link").fit(X, y)
    assert np.any((link.predict_proba(X) == 0) | (link.predict_proba(X) == 1))  # what the default avoids
    np.testing.assert_array_equal(link.predict(X), est.predict(X))


def test_temperature_minimises_the_held_out_log_loss():
    """fit_temperature: scores drawn with a known temperature are given it
    back, and the log loss is no lower a step either side."""
    from _data import floored_log_loss
    from jaxnn._src.calibration import fit_temperature

    rng = np.random.default_rng(0)
    H = rng.normal(scale=3.0, size=(6000, 4))
    Z = H / 2.0
    P = np.exp(Z - Z.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    y = np.array([rng.choice(4, p=p) for p in P])
    target = np.eye(4)[y]
    T = fit_temperature(H, target, multilabel=False)
    assert 1.7 < T < 2.3, T
    loss = floored_log_loss(H, target, T)
    assert loss <= min(floored_log_loss(H, target, T * f) for f in (0.9, 1.1))
    assert fit_temperature(np.zeros((10, 3)), np.eye(3)[np.arange(10) % 3], False) == 1.0


def test_held_out_log_losses_at_a_grid_of_temperatures(monkeypatch):
    """log_losses: the mean log loss of the floored softmax(H/T) at every T of
    a grid (single-label: the true class's p̂ alone), in blocks of
    temperatures — equal to the definition at each T, whatever the block;
    multilabel: the summed per-label binary log losses, weighted means."""
    from _data import floored_log_loss
    from jaxnn._src import calibration

    rng = np.random.default_rng(3)
    H = rng.normal(scale=4.0, size=(300, 5))
    target = np.eye(5)[rng.integers(0, 5, 300)]
    Ts = np.logspace(-2, 2, 17)
    want = [floored_log_loss(H, target, T) for T in Ts]
    np.testing.assert_allclose(calibration.log_losses(H, target, Ts, False), want, rtol=1e-12)
    monkeypatch.setattr(calibration, "LOSS_BLOCK", 2 * H.size)  # two temperatures a block
    np.testing.assert_allclose(calibration.log_losses(H, target, Ts, False), want, rtol=1e-12)
    labels = (rng.random((300, 5)) < 0.3).astype(float)
    w = rng.random(300)
    from scipy.special import expit

    p = 0.99 * expit(H[None] / Ts[:, None, None]) + 0.005
    binary = -np.sum(labels * np.log(p) + (1 - labels) * np.log(1 - p), axis=2)
    np.testing.assert_allclose(calibration.log_losses(H, labels, Ts, True, weights=w),
                               np.average(binary, axis=1, weights=w), rtol=1e-12)


def test_small_data_fit_the_temperature_on_the_training_scores(caplog):
    """Too few points to hold 10 out (m < 48): posterior="auto" took the votes
    untested; it now fits T on the training points' own scores (logged)."""
    X, y = _blobs(m=40, C=2, seed=1, spread=1.5)
    with caplog.at_level(logging.INFO, logger="jaxnn"):
        model = jaxnn.fit(X, y, k=5)
    assert model.posterior_temperature > 0 and model.posterior_mix == 0.0
    assert any("training points' own scores" in r.getMessage() and "40 points leave 8 < 10" in r.getMessage()
               for r in caplog.records)
    P = np.asarray(jaxnn.predict_proba(model, X))
    assert np.all((P > 0) & (P < 1))


def test_link_and_votes_keep_their_meaning_and_the_temperature_survives_pickling():
    X, y = _blobs(m=150, C=3, seed=7)
    Xq = _blobs(m=40, C=3, seed=8)[0]
    link = jaxnn.fit(X, y, k=5, posterior="link")
    votes = jaxnn.fit(X, y, k=5, posterior="votes")
    assert link.posterior_temperature == votes.posterior_temperature == 0.0
    nb = np.asarray(jaxnn.knn_query(X, Xq, 5).indices)
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(votes, Xq)),
                               np.stack([(y[nb] == c).mean(1) for c in range(3)], 1), atol=1e-6)
    H = np.asarray(jaxnn.decision_function(link, Xq))
    raw = np.asarray(link.loss.posterior(H))
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(link, Xq)), raw / raw.sum(1, keepdims=True), rtol=1e-5)
    auto = jaxnn.fit(X, y, k=5)
    back = pickle.loads(pickle.dumps(auto))
    assert back.posterior_temperature == auto.posterior_temperature > 0
    np.testing.assert_array_equal(np.asarray(jaxnn.predict_proba(back, Xq)), np.asarray(jaxnn.predict_proba(auto, Xq)))
    # under jit, the model traced: the same posteriors
    np.testing.assert_allclose(np.asarray(jax.jit(jaxnn.predict_proba)(auto, jnp.asarray(Xq))),
                               np.asarray(jaxnn.predict_proba(auto, Xq)), rtol=1e-6)


# ----------------------------------------------------------------------------
# the measurements of docs/results.md (minutes): small k against plain k-NN
# ----------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", ["sk-digits", "sk-breast", "iris", "wine", "wdbc", "pima", "optdigits", "segment",
                                  "penbased", "letter", "sk-iris"])
def test_small_k_is_as_accurate_as_knn_on_bundled_sets(name):
    """docs/results.md#small-k: k = 1, 2, 3 on a fixed stratified 70/30 split
    (standardised, at most 3000 training rows), the default fit (leverages
    shrunk as held-out data say): accuracy at least scikit-learn's
    KNeighborsClassifier's minus two standard errors of the difference of two
    accuracies."""
    from sklearn import datasets as skd
    from sklearn.neighbors import KNeighborsClassifier

    loaders = {"sk-digits": skd.load_digits, "sk-iris": skd.load_iris, "sk-breast": skd.load_breast_cancer}
    X, y = loaders[name](return_X_y=True) if name in loaders else jaxnn.datasets.load(name)
    y = np.asarray(y)
    if X.shape[0] > 4285:
        X, _, y, _ = jaxnn.datasets.train_test_split(X, y, test_size=X.shape[0] - 4285, seed=0)
    Xtr, Xte, ytr, yte = jaxnn.datasets.train_test_split(X, y, test_size=0.3, seed=0)
    Xtr, Xte = jaxnn.datasets.standardize(Xtr, Xte)
    for k in (1, 2, 3):
        acc = np.mean(jaxnn.predict(jaxnn.fit(Xtr, ytr, k=k), Xte) == yte)
        knn = KNeighborsClassifier(k).fit(Xtr, ytr).score(Xte, yte)
        noise = 2 * np.sqrt(2 * max(knn * (1 - knn), 0.01) / len(yte))
        assert acc >= knn - noise, (name, k, acc, knn)


# ----------------------------------------------------------------------------
# leverage shrinkage (shrinkage="auto")
# ----------------------------------------------------------------------------

def test_shrunk_leverage_moves_alpha_toward_one_common_value():
    """(1 − s)·α + s·ā, placed as α is; s = 0 is α itself; s = 1 every α is ā,
    and H is ā times the label sums: the plain k-NN vote."""
    from jaxnn._src.leverage import shrunk_leverage

    alpha = jnp.asarray([[2.0, -1.0], [0.5, 3.0]])
    assert shrunk_leverage(alpha, 0.0, 7.0) is alpha
    out = shrunk_leverage(alpha, 0.25, 2.0)
    assert isinstance(out, jax.Array) and out.sharding == alpha.sharding and out.dtype == alpha.dtype
    np.testing.assert_allclose(np.asarray(out), 0.75 * np.asarray(alpha) + 0.5)
    X, y = _blobs(m=200, C=3, seed=5, spread=1.5)
    model = jaxnn.fit(X, y, k=5, posterior="link")
    flat = dataclasses.replace(model, alpha=shrunk_leverage(model.alpha, 1.0, 0.5))
    nb = np.asarray(jaxnn.knn_query(model.X, X[:40] + 0.05, 5).indices)
    sums = np.asarray(model.Y)[nb].sum(axis=1)
    np.testing.assert_allclose(np.asarray(jaxnn.decision_function(flat, X[:40] + 0.05)), 0.5 * sums, atol=1e-5)


def test_fit_shrinkage_picks_the_pair_of_least_held_out_log_loss():
    """fit_shrinkage: s over the grid and T for each, the (T, s) of least
    log loss of the calibrated posteriors on (1 − s)·H + s·ā·V; where the
    label sums V carry the signal and H is noise, s = 1; where H carries it
    and V is noise, s = 0."""
    from jaxnn._src.calibration import best_temperature, fit_shrinkage

    rng = np.random.default_rng(0)
    n, C, k = 400, 3, 5
    labels = rng.integers(0, C, n)
    target = np.eye(C)[labels]
    signal = 4.0 * (2 * target - 1) + rng.normal(size=(n, C))
    noise = rng.normal(size=(n, C)) * 4.0
    grid = np.linspace(0.0, 1.0, 11)
    for H, V, side in ((noise, signal, "V"), (signal, noise, "H")):
        T, s, common = fit_shrinkage(H, V, k, target, False)
        assert common == pytest.approx(np.sqrt(np.mean(H ** 2)) / k)
        fits = [best_temperature((1 - g) * H + g * common * V, target, False) for g in grid]
        best = int(np.argmin([loss for _, loss in fits]))  # the first of equal losses
        assert s == grid[best] and T == fits[best][0]
        assert (s >= 0.8) if side == "V" else (s <= 0.2), (side, s)


def test_shrinkage_is_auto_by_default_with_every_posterior_or_none(tmp_path):
    X, y = _blobs(m=120, C=3, seed=1)
    for bad in ("yes", 0.5, True):
        with pytest.raises(ValueError, match="shrinkage must be None or 'auto'"):
            jaxnn.fit(X, y, k=3, shrinkage=bad)
    plain = jaxnn.fit(X, y, k=3, shrinkage=None)
    assert plain.leverage_shrinkage == 0.0
    shrunk = jaxnn.fit(X, y, k=3)
    s = shrunk.leverage_shrinkage
    assert 0.0 < s <= 1.0 and round(s * 10) == s * 10  # these data choose some shrinkage
    assert not np.array_equal(np.asarray(shrunk.alpha), np.asarray(plain.alpha))
    assert_same_refit(np.asarray(jaxnn.fit(X, y, k=3, shrinkage="auto").alpha), np.asarray(shrunk.alpha))
    assert shrunk.trace is None
    # the link and the votes: the same held-out choice of s, no temperature
    for posterior, mix in (("link", 0.0), ("votes", 1.0)):
        other = jaxnn.fit(X, y, k=3, posterior=posterior)
        assert other.leverage_shrinkage == s and other.posterior_temperature == 0.0 and other.posterior_mix == mix
        assert_same_refit(np.asarray(other.alpha), np.asarray(shrunk.alpha))
        unshrunk = jaxnn.fit(X, y, k=3, posterior=posterior, shrinkage=None)
        assert_same_refit(np.asarray(unshrunk.alpha), np.asarray(plain.alpha))
    jaxnn.save(shrunk, tmp_path / "shrunk.jaxnn")
    back = jaxnn.load(tmp_path / "shrunk.jaxnn")
    assert back.leverage_shrinkage == s
    np.testing.assert_array_equal(np.asarray(back.alpha), np.asarray(shrunk.alpha))


def test_the_estimator_and_the_command_line_take_the_shrinkage(tmp_path):
    from jaxnn.sklearn import BoostedKNNClassifier

    X, y = _blobs(m=150, C=3, seed=2)
    est = BoostedKNNClassifier(k=2).fit(X, y)  # default: posterior="auto", shrinkage="auto"
    assert_same_refit(np.asarray(est.model_.alpha), np.asarray(jaxnn.fit(X, y, k=2).alpha))
    link = BoostedKNNClassifier(k=2, posterior="link").fit(X, y)  # s is chosen the same way for every posterior
    assert_same_refit(np.asarray(link.model_.alpha), np.asarray(est.model_.alpha))
    assert 0.0 < est.model_.leverage_shrinkage <= 1.0
    none = BoostedKNNClassifier(k=2, shrinkage=None).fit(X, y)
    assert none.model_.leverage_shrinkage == 0.0
    est.save(tmp_path / "est.jaxnn")
    assert BoostedKNNClassifier.load(tmp_path / "est.jaxnn").get_params()["shrinkage"] == "auto"
    from jaxnn._src import cli

    data = tmp_path / "d.csv"
    header = ",".join(f"x{i}" for i in range(X.shape[1]))
    data.write_text(f"{header},label\n" + "\n".join(",".join(map(repr, row.tolist())) + f",c{t}"
                                                      for row, t in zip(X, y)))
    for flag, want in ((["--shrinkage", "auto"], jaxnn.fit(X, y, k=2)), ([], jaxnn.fit(X, y, k=2)),
                       (["--shrinkage", "none"], jaxnn.fit(X, y, k=2, shrinkage=None))):
        assert cli.main(["fit", str(data), "--target", "label", "--k", "2", "--quiet", "-o", str(tmp_path / "m.jaxnn"),
                         "--scale", "none", *flag]) == 0
        assert jaxnn.load(tmp_path / "m.jaxnn").leverage_shrinkage == want.leverage_shrinkage


def _kernel_problem(seed=0, n=300, C=4, k=6):
    """Held-out-like parts: scores S carrying a weak signal, neighbour labels
    and squared distances where the true class's neighbours are the nearest."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, n)
    target = np.eye(C)[y]
    S = 1.0 * (2 * target - 1) + rng.normal(scale=2.0, size=(n, C))
    own = rng.random((n, k)) < 0.5
    labels = np.where(own, y[:, None], rng.integers(0, C, (n, k)))
    D = np.where(labels == y[:, None], 1.0, 3.0) + rng.random((n, k))
    order = np.argsort(D, axis=1)
    D, labels = np.take_along_axis(D, order, 1), np.take_along_axis(labels, order, 1)
    return S, np.eye(C, dtype=bool)[labels], D, target


def test_kernel_log_votes_is_the_twin_of_the_traced_kernel_vote():
    """calibration.kernel_log_votes (float64 NumPy) = log(κ + δ) with κ from
    calibration.kernel_weights (float32, traced) on the same distances — also
    where a wider search's extra columns are masked (k < k') and where every
    gap is 0 (equal weights); the weights sum to 1 and vanish beyond k."""
    from jaxnn._src.calibration import kernel_log_votes
    from jaxnn._src.calibration import KERNEL_VOTE_FLOOR, kernel_weights

    _, labels, D, _ = _kernel_problem(seed=1)
    D[:3] = 2.0  # equal distances: equal weights
    for b in (0.25, 1.0, 4.0):
        W = np.asarray(kernel_weights(D.astype(np.float32), b), np.float64)
        np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=1e-6)
        np.testing.assert_allclose(W[:3], 1.0 / D.shape[1], rtol=1e-6)
        want = np.log(np.einsum("nk,nkc->nc", W, labels.astype(float)) + KERNEL_VOTE_FLOOR)
        np.testing.assert_allclose(kernel_log_votes(D, labels, b), want, rtol=1e-5, atol=1e-5)
        wider = np.concatenate([D, np.full((D.shape[0], 3), 0.5)], axis=1).astype(np.float32)
        Wk = np.asarray(kernel_weights(wider, b, np.int32(D.shape[1])))
        np.testing.assert_array_equal(Wk[:, D.shape[1]:], 0.0)
        np.testing.assert_allclose(Wk[:, :D.shape[1]], W, rtol=1e-6)
    # a uniform scaling of the distances changes no weight
    np.testing.assert_allclose(np.asarray(kernel_weights((7.5 * D).astype(np.float32), 1.0)),
                               np.asarray(kernel_weights(D.astype(np.float32), 1.0)), rtol=1e-5)


def test_held_out_log_losses_with_a_kernel_term_follow_the_definition(monkeypatch):
    """log_losses with a kernel term G and predicted classes top: the mean
    −log p̂_y of p̂ = 0.99·softmax(H/T + G, top's logit raised to the row's
    largest) + 0.01/C, at every T and whatever the block of temperatures."""
    from jaxnn._src import calibration

    S, labels, D, target = _kernel_problem(seed=2)
    G = 1.5 * calibration.kernel_log_votes(D, labels, 1.0)
    top = np.argmax(S, axis=1)
    Ts = np.logspace(-1, 1.5, 9)
    want = []
    for T in Ts:
        Z = S / T + G
        Z[np.arange(len(Z)), top] = Z.max(axis=1)
        P = np.exp(Z - Z.max(axis=1, keepdims=True))
        P = 0.99 * P / P.sum(axis=1, keepdims=True) + 0.01 / P.shape[1]
        want.append(-np.mean(np.log(np.sum(target * P, axis=1))))
    np.testing.assert_allclose(calibration.log_losses(S, target, Ts, False, None, G, top), want, rtol=1e-12)
    monkeypatch.setattr(calibration, "LOSS_BLOCK", 2 * S.size)
    np.testing.assert_allclose(calibration.log_losses(S, target, Ts, False, None, G, top), want, rtol=1e-12)
    log_p, _ = calibration.calibrated_log_probs(S, Ts[3], False, G, top)
    assert -np.mean(np.sum(target * log_p, axis=1)) == pytest.approx(want[3], rel=1e-12)


def _screening_problems():
    """Held-out-like scores for the temperature grids' screening: few and many
    classes, scales from 10⁻² to 10⁴ (tiny and huge logits), rounded scores
    (tied rows and classes), weights, kernel terms up to the largest weight —
    and scales of 10⁻⁴² and 10³⁹, beyond float32's normal numbers."""
    rng = np.random.default_rng(11)
    for i, (C, scale) in enumerate([(2, 1.0), (3, 1e4), (10, 3.0), (10, 0.01), (26, 30.0), (60, 1.0),
                                    (200, 5.0), (1000, 2.0), (4, 1e-42), (5, 1e39)]):
        n = max(300, 6000 // C)  # every grid screened: n·C·11 ≥ SCREEN_MIN_ENTRIES
        H = rng.normal(size=(n, C)) * scale
        if scale >= 1 and i % 3 == 0:
            H = np.round(H)
        y = np.where(rng.random(n) < 0.7, np.argmax(H + rng.normal(size=(n, C)) * scale, axis=1), rng.integers(0, C, n))
        weights = rng.random(n) if i % 4 == 1 else None
        G = top = None
        if i % 2:
            top = np.argmax(H, axis=1)
            G = [0.25, 4.0][i % 4 == 1] * np.log(rng.dirichlet(np.ones(C), n) + 1e-3)
        yield H, np.eye(C)[y], weights, G, top


def _screened(H) -> bool:
    """Whether best_temperature's grids on H lie in SCREEN_RANGE (the two
    largest scales of :func:`_screening_problems` do not: never screened)."""
    from jaxnn._src import calibration

    low, high = calibration.SCREEN_RANGE
    return float(np.sqrt(np.mean(H ** 2))) * calibration.T_GRID[0] >= low and np.abs(H).max() <= high


def test_float32_screening_losses_stay_within_half_the_margin():
    """log_losses(dtype=np.float32), the screening pass: within half of
    screen_margin(C) of the float64 losses at every temperature of the grid
    (the bound that makes the screened choice exact)."""
    from jaxnn._src import calibration

    for H, target, weights, G, top in _screening_problems():
        if not _screened(H):
            continue
        Ts = float(np.sqrt(np.mean(H ** 2))) * np.concatenate([calibration.T_GRID, calibration.T_COARSE])
        exact = calibration.log_losses(H, target, Ts, False, weights, G, top)
        rough = calibration.log_losses(H, target, Ts, False, weights, G, top, dtype=np.float32)
        assert np.max(np.abs(rough - exact)) < calibration.screen_margin(H.shape[1]) / 2, H.shape
    with pytest.raises(ValueError, match="single-label"):
        calibration.log_losses(H, target, Ts, True, dtype=np.float32)


def test_screened_temperature_is_the_whole_float64_grids(monkeypatch):
    """best_temperature screens its grids in float32 (screened_losses) and
    still returns the T and the loss of least float64 log loss over the whole
    grid, the smallest T on equal losses — the choice without screening —
    and the screen leaves most temperatures to float32 on these scores."""
    from jaxnn._src import calibration

    computed = []
    log_losses = calibration.log_losses

    def counted(H, target, Ts, *args, **kw):
        if kw.get("dtype", np.float64) == np.float64:
            computed.append(np.size(Ts))
        return log_losses(H, target, Ts, *args, **kw)

    monkeypatch.setattr(calibration, "log_losses", counted)
    for H, target, weights, G, top in _screening_problems():
        for coarse in (False, True):
            computed.clear()
            screened = calibration.best_temperature(H, target, False, weights, G, top, coarse=coarse)
            exact = sum(computed)
            with monkeypatch.context() as unscreened:
                unscreened.setattr(calibration, "SCREEN_MIN_ENTRIES", np.inf)
                assert calibration.best_temperature(H, target, False, weights, G, top, coarse=coarse) == screened
            grid = len(calibration.T_COARSE) if coarse else len(calibration.T_GRID) + len(calibration.T_REFINE)
            assert (exact < grid) == _screened(H), (H.shape, computed)


def test_fit_kernel_term_picks_the_weight_of_least_held_out_log_loss(monkeypatch):
    """fit_kernel_term: (w, b) over ({0} ∪ KERNEL_WEIGHTS) × KERNEL_BANDWIDTHS,
    each with its best T on the coarse grid, on the first KERNEL_FIT_ENTRIES / C rows — the
    pair of least log loss — and T again on all rows; where the neighbours'
    distances say the class, w > 0; where they are noise, w = 0 and T is
    best_temperature's alone."""
    from jaxnn._src import calibration
    from jaxnn._src.calibration import (KERNEL_BANDWIDTHS, KERNEL_WEIGHTS, best_temperature, fit_kernel_term,
                                        kernel_log_votes)

    S, labels, D, target = _kernel_problem(seed=3)
    top = np.argmax(S, axis=1)
    monkeypatch.setattr(calibration, "KERNEL_FIT_ENTRIES", 200 * target.shape[1])
    T, w, b = fit_kernel_term(S, top, D, labels, target)
    part = slice(0, 200)
    fits = {(0.0, 0.0): best_temperature(S[part], target[part], False, coarse=True)[1]}
    for bb in KERNEL_BANDWIDTHS:
        for ww in KERNEL_WEIGHTS:
            G = ww * kernel_log_votes(D[part], labels[part], bb)
            fits[ww, bb] = best_temperature(S[part], target[part], False, None, G, top[part], coarse=True)[1]
    assert (w, b) == min(fits, key=fits.get) and w > 0
    assert T == best_temperature(S, target, False, None, w * kernel_log_votes(D, labels, b), top)[0]
    rng = np.random.default_rng(4)
    noise = np.eye(target.shape[1], dtype=bool)[rng.integers(0, target.shape[1], labels.shape[:2])]
    T0, w0, b0 = fit_kernel_term(S, top, rng.random(D.shape) + 1.0, noise, target)
    assert (w0, b0) == (0.0, 0.0) and T0 == best_temperature(S, target, False)[0]


def test_the_default_fits_a_kernel_term_where_distances_help(tmp_path, caplog):
    """On 4 well-separated classes posterior="auto" fits w > 0 (logged with
    its bandwidth), saves and loads it, and its posteriors keep predict's
    class on top; binary data keep w = 0."""
    X, y = _blobs(m=240, C=4, seed=7, spread=1.2)
    with caplog.at_level("INFO", logger="jaxnn"):
        model = jaxnn.fit(X, y, k=8)
    assert model.posterior_weight > 0 and model.posterior_bandwidth > 0
    assert any(f"kernel weight {model.posterior_weight:g} at bandwidth {model.posterior_bandwidth:g}"
               in r.getMessage() for r in caplog.records)
    P = np.asarray(jaxnn.predict_proba(model, X + 0.05))
    np.testing.assert_array_equal(np.asarray(model.classes)[P.argmax(axis=1)], jaxnn.predict(model, X + 0.05))
    jaxnn.save(model, tmp_path / "m.jaxnn")
    back = jaxnn.load(tmp_path / "m.jaxnn")
    assert (back.posterior_weight, back.posterior_bandwidth) == (model.posterior_weight, model.posterior_bandwidth)
    np.testing.assert_array_equal(np.asarray(jaxnn.predict_proba(back, X + 0.05)), P)
    Xb, yb = _blobs(m=120, C=2, seed=7)
    assert jaxnn.fit(Xb, yb, k=8).posterior_weight == 0.0
