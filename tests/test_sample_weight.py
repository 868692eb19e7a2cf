"""Sample weights: ``fit(sample_weight=)`` boosts the weighted surrogate risk
(1/(mC)) Σ_i u_i Σ_c ψ(e_ic), u of mean 1 — checked against the float64
reference (``reference.weighted``), for every algorithm and chooser; uniform
weights are the unweighted model bit for bit; bad weights are refused by name."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import reference as R  # noqa: E402
from _data import assert_same_refit  # noqa: E402

M, D = 120, 3


def _problem(k=6, C=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, M)
    X = rng.normal(size=(M, D))
    X[:, 0] += 1.2 * y
    NN = R.knn_bruteforce(X, k)
    return X, y, R.encode_labels(y)[0], NN


def _weights(seed=1, zeros=True):
    rng = np.random.default_rng(seed)
    u = rng.gamma(1.0, 1.0, M)
    if zeros:
        u[rng.choice(M, M // 8, replace=False)] = 0.0
    return u


def _fit(X, y, NN, *, x64=True, **kw):
    import jax

    import jaxnn

    with jax.enable_x64(x64):
        model = jaxnn.fit(X.astype(np.float64 if x64 else np.float32), y, k=NN.shape[1], neighbors=NN,
                          posterior="link", shrinkage=None, **kw)
        return np.asarray(model.alpha), None if model.trace is None else np.asarray(model.trace)


def _order(chooser, rounds):
    """The lazy chooser's sequence, or the random chooser's: a permutation per
    pass from ``default_rng(seed=0)``."""
    if chooser == "lazy":
        return np.arange(rounds) % M
    rng = np.random.default_rng(0)
    return np.concatenate([rng.permutation(M) for _ in range(-(-rounds // M))])[:rounds]


GRID = [("gnnb", "logistic", "lazy"), ("n3", "calibrated_hinge", "random"), ("unn", "matsushita", "lazy"),
        ("unn", "exponential", "lazy"), ("unn_fast", "logistic", "random")]


@pytest.mark.parametrize("algorithm, loss, chooser", GRID, ids=["-".join(g) for g in GRID])
def test_weighted_fit_matches_the_float64_reference(algorithm, loss, chooser):
    """α and the trace (the weighted risk after each step, all classes
    stepping together) of a float64 fit with random weights, an eighth of
    them 0, equal the reference's over two passes."""
    X, y, Y, NN = _problem()
    u = _weights()
    rounds = 2 * M
    alpha, trace = _fit(X, y, NN, algorithm=algorithm, loss=loss, chooser=chooser, rounds=rounds, trace=True,
                        sample_weight=u)
    ref = R.weighted(Y, NN, loss, algorithm, u, order=_order(chooser, rounds))
    want = R.fill_unreached(ref.alpha, Y, NN, weights=u)
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(alpha, want, rtol=1e-6, atol=1e-9 * scale)
    np.testing.assert_allclose(trace, ref.parallel_risk, rtol=1e-7, atol=1e-10)


def test_weighted_float32_fit_matches_the_reference():
    X, y, Y, NN = _problem(seed=3)
    u = _weights(seed=4)
    alpha, _ = _fit(X, y, NN, x64=False, algorithm="gnnb", loss="logistic", chooser="lazy", sample_weight=u)
    want = R.fill_unreached(R.weighted(Y, NN, "logistic", "gnnb", u).alpha, Y, NN, weights=u)
    np.testing.assert_allclose(alpha, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.parametrize("algorithm", ["gnnb", "unn"])
def test_weighted_colored_schedule_matches_the_reference_in_its_colour_order(algorithm):
    """The colored schedule weighs each colour's segment sums: the reference
    run in the schedule's own order gives its α."""
    from jaxnn._src.schedule import color_schedule, colored_order

    X, y, Y, NN = _problem(seed=5)
    u = _weights(seed=6)
    alpha, trace = _fit(X, y, NN, algorithm=algorithm, loss="logistic", chooser="colored", rounds=M, trace=True,
                        sample_weight=u)
    order = colored_order(color_schedule(NN, n_classes=Y.shape[1]))
    ref = R.weighted(Y, NN, "logistic", algorithm, u, order=order)
    want = R.fill_unreached(ref.alpha, Y, NN, weights=u)
    np.testing.assert_allclose(alpha, want, rtol=1e-6, atol=1e-9 * float(np.abs(want).max()))
    assert trace[-1] == pytest.approx(ref.parallel_risk[-1], rel=1e-7)


def test_weighted_greedy_steps_match_the_reference_replayed(greedy_picks):
    """The greedy chooser's picks under weights, replayed in the weighted
    reference, give the engine's α; each class's first pick maximises the
    weighted score |Σ_{i∈inv(j)} u_i w(e_i) y_i| / Σ_{i∈inv(j)} u_i."""
    X, y, Y, NN = _problem(seed=7)
    u = _weights(seed=8)
    rounds = 60
    alpha, _ = _fit(X, y, NN, algorithm="gnnb", loss="logistic", chooser="greedy", rounds=rounds, sample_weight=u)
    picks = greedy_picks
    order = np.stack(picks, axis=1)[:, :rounds]
    ref = R.weighted(Y, NN, "logistic", "gnnb", u, order=order)
    want = R.fill_unreached(ref.alpha, Y, NN, weights=u)
    np.testing.assert_allclose(alpha, want, rtol=1e-6, atol=1e-9 * float(np.abs(want).max()))
    # the first pick of each class is the argmax of the weighted score at the start (all edges 0)
    uu = u * (M / u.sum())
    mass = np.bincount(NN.ravel(), weights=np.repeat(uu, NN.shape[1]), minlength=M)
    for c in range(Y.shape[1]):
        eta = np.bincount(NN.ravel(), weights=np.repeat(uu * Y[:, c], NN.shape[1]), minlength=M)
        score = np.abs(eta) / np.where(mass > 0, mass, 1.0)
        assert score[order[c, 0]] == pytest.approx(score.max(), rel=1e-6)


@pytest.mark.parametrize("chooser", ["lazy", "random", "greedy", "colored"])
def test_uniform_weights_give_the_unweighted_model_bit_for_bit(chooser):
    X, y, _, NN = _problem(seed=9)
    kw = dict(algorithm="unn", loss="logistic", chooser=chooser, rounds=M, trace=True)
    a, ta = _fit(X, y, NN, x64=False, **kw)
    b, tb = _fit(X, y, NN, x64=False, sample_weight=np.full(M, 2.5), **kw)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ta, tb)


def test_a_zero_weight_removes_the_example_from_every_step():
    """With u_i = 0, example i's term leaves the risk: its edges enter no δ
    (the reference's weighted steps), the other weights' scale is immaterial,
    and i stays a neighbour and a prototype of the fitted rule."""
    import jaxnn

    X, y, Y, NN = _problem(seed=10)
    u = np.ones(M)
    u[:10] = 0.0
    alpha, _ = _fit(X, y, NN, algorithm="gnnb", loss="logistic", sample_weight=u)
    ref = R.weighted(Y, NN, "logistic", "gnnb", u)
    np.testing.assert_allclose(alpha, R.fill_unreached(ref.alpha, Y, NN, weights=u), rtol=1e-6, atol=1e-9)
    # the weights of the others scale alike: doubling them changes nothing
    u2 = np.where(u > 0, 2.0, 0.0)
    alpha2, _ = _fit(X, y, NN, algorithm="gnnb", loss="logistic", sample_weight=u2)
    np.testing.assert_array_equal(alpha, alpha2)
    model = jaxnn.fit(X, y, k=6, sample_weight=u, posterior="link", shrinkage=None)
    assert np.mean(jaxnn.predict(model, X) == y) > 0.6


def _weighted_log_loss(H, y, u, T, eps=0.01):
    """Σ u_i·(−log p̂_i) / Σ u_i, p̂ = (1 − ε)·softmax(H_i/T)_{y_i} + ε/C, float64."""
    Z = np.asarray(H, np.float64) / T
    Z -= Z.max(axis=1, keepdims=True)
    P = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    p = (1 - eps) * P[np.arange(len(y)), y] + eps / H.shape[1]
    return float(np.sum(u * -np.log(p)) / np.sum(u))


def _minimising_temperature(H, y, u) -> float:
    """The T > 0 of least weighted log loss: a grid of 10^0.02 steps over
    10⁻³ … 10³ times the RMS of H, then golden-section search in log T around
    its best."""
    loss = lambda t: _weighted_log_loss(H, y, u, 10.0 ** t)  # noqa: E731
    centre = np.log10(np.sqrt(np.mean(np.asarray(H, np.float64) ** 2)))
    grid = centre + np.arange(-3.0, 3.0, 0.02)
    i = int(np.argmin([loss(t) for t in grid]))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    g = (np.sqrt(5.0) - 1) / 2
    for _ in range(60):
        a, b = hi - g * (hi - lo), lo + g * (hi - lo)
        lo, hi = (lo, b) if loss(a) < loss(b) else (a, hi)
    return 10.0 ** ((lo + hi) / 2)


def test_weighted_default_posterior_fits_its_temperature_on_the_weighted_log_loss():
    """posterior="auto" fits T on held-out scores: on 120 points, five
    auxiliary fits of 96 (weighted), each scoring the other 24
    (fitting.held_out_folds).  Those scores, made here by jaxnn.fit and
    decision_function, give the weighted log loss's minimiser (NumPy float64,
    golden-section search), which the model's T must be to its grid's 10^0.005
    — and the unweighted minimiser must be another T, so that the check can
    tell the weights were used.  Two classes and no shrinkage: T alone is
    fit (no kernel term, no shrunk leverages)."""
    import jaxnn
    from jaxnn._src.fitting import held_out_folds

    X, y, _, _ = _problem(C=2, seed=11)
    u = _weights(seed=12)
    model = jaxnn.fit(X, y, k=6, sample_weight=u, shrinkage=None)
    H, rows = [], []
    for tr, val in held_out_folds(M, round(0.2 * M), seed=0):
        aux = jaxnn.fit(X[tr], y[tr], k=6, sample_weight=u[tr], posterior="link", shrinkage=None)
        H.append(np.asarray(jaxnn.decision_function(aux, X[val]), np.float64))
        rows.append(val)
    H, rows = np.concatenate(H), np.concatenate(rows)
    assert sorted(rows) == list(range(M))  # every point scored once, by a fit that did not see it
    weighted = _minimising_temperature(H, y[rows], u[rows])
    unweighted = _minimising_temperature(H, y[rows], np.ones(M))
    assert abs(np.log10(unweighted / weighted)) > 0.05, (weighted, unweighted)
    T = model.posterior_temperature
    assert abs(np.log10(T / weighted)) < 0.008, (T, weighted, unweighted)
    assert _weighted_log_loss(H, y[rows], u[rows], T) < _weighted_log_loss(H, y[rows], u[rows], weighted) + 1e-4
    p = np.asarray(jaxnn.predict_proba(model, X))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-5)
    assert np.all(np.argmax(p, axis=1) == np.searchsorted(model.classes, jaxnn.predict(model, X)))


BAD = [
    (np.ones(M - 1), ValueError, r"shape \(120,\)"),
    (np.ones((M, 1)), ValueError, "shape"),
    (-np.ones(M), ValueError, ">= 0"),
    (np.r_[np.ones(M - 1), np.nan], ValueError, "NaN"),
    (np.r_[np.ones(M - 1), np.inf], ValueError, "NaN or infinite"),
    (np.zeros(M), ValueError, "zero everywhere"),
    (np.array(["a"] * M), TypeError, "real numbers"),
    ("heavy", TypeError, "sample_weight"),
    (True, TypeError, "sample_weight"),
    (np.array([object()] * M), TypeError, "real numbers"),
]


@pytest.mark.parametrize("weights, error, words", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_sample_weights_are_refused_by_name(weights, error, words):
    import jaxnn

    X, y, _, _ = _problem()
    with pytest.raises(error, match=words) as info:
        jaxnn.fit(X, y, k=5, sample_weight=weights)
    assert "sample_weight" in str(info.value)


def test_sample_weight_with_auto_settings_is_refused():
    import jaxnn

    X, y, _, _ = _problem()
    with pytest.raises(ValueError, match="sample_weight cannot be combined with k, loss or rounds 'auto'"):
        jaxnn.fit(X, y, k="auto", sample_weight=np.ones(M))


def test_huge_weights_and_a_scalar_weight_are_taken():
    from jaxnn._src.inputs import sample_weights

    np.testing.assert_allclose(sample_weights(np.full(4, 1e308), 4), np.ones(4))
    np.testing.assert_allclose(sample_weights(3, 4), np.ones(4))
    np.testing.assert_allclose(sample_weights([1, 3], 2), [0.5, 1.5])


# --------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------


def test_estimator_sample_weight_and_class_weight_are_fit_s_weights():
    """``fit(sample_weight=)`` and ``class_weight`` reach jaxnn.fit: the α of
    the estimator's model equals the functional fit's with the same weights
    ("balanced": n / (C · count), scikit-learn's rule; a dict per label)."""
    pytest.importorskip("sklearn")
    import jaxnn
    from jaxnn.sklearn import BoostedKNNClassifier

    X, y, _, _ = _problem(seed=13)
    y = np.where(y == 2, 0, y)  # unbalanced: class 0 twice class 1
    u = _weights(seed=14)
    counts = np.bincount(y)
    balanced = y.size / (2 * counts[y])
    for est, w in ((BoostedKNNClassifier(k=6).fit(X, y, sample_weight=u), u),
                   (BoostedKNNClassifier(k=6, class_weight="balanced").fit(X, y), balanced),
                   (BoostedKNNClassifier(k=6, class_weight="balanced").fit(X, y, sample_weight=u), balanced * u),
                   (BoostedKNNClassifier(k=6, class_weight={1: 3.0}).fit(X, y), np.where(y == 1, 3.0, 1.0))):
        want = jaxnn.fit(X, y, k=6, posterior="link", sample_weight=w)
        np.testing.assert_allclose(np.asarray(est.model_.alpha), np.asarray(want.alpha), rtol=1e-6, atol=1e-7)
    plain = BoostedKNNClassifier(k=6).fit(X, y)
    ones = BoostedKNNClassifier(k=6).fit(X, y, sample_weight=np.ones(M))
    assert_same_refit(np.asarray(plain.model_.alpha), np.asarray(ones.model_.alpha))


@pytest.mark.parametrize("class_weight, error, words", [
    ("heavy", ValueError, "class_weight must be None, 'balanced' or a dict"),
    (["a"], TypeError, "class_weight must be"),
    ({0: -1.0}, ValueError, r"class_weight\[0\] must be a number >= 0"),
    ({7: 1.0}, ValueError, "not in y"),
])
def test_bad_class_weights_are_refused_by_name(class_weight, error, words):
    pytest.importorskip("sklearn")
    from jaxnn.sklearn import BoostedKNNClassifier

    X, y, _, _ = _problem()
    with pytest.raises(error, match=words):
        BoostedKNNClassifier(k=5, class_weight=class_weight).fit(X, y)


def test_a_class_weight_dict_saves_and_loads(tmp_path):
    pytest.importorskip("sklearn")
    from jaxnn.sklearn import BoostedKNNClassifier

    X, y, _, _ = _problem()
    est = BoostedKNNClassifier(k=5, class_weight={0: 2.0, 2: 0.5}).fit(X, y)
    est.save(tmp_path / "m.jaxnn")
    back = BoostedKNNClassifier.load(tmp_path / "m.jaxnn")
    assert back.class_weight == {0: 2.0, 2: 0.5}
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
