"""The learned metric: fit(metric=...), jaxnn.learn_metric (NCA), Model.transform."""

import dataclasses
import os
import pickle
import sys

import jax.numpy as jnp
import numpy as np
import pytest

import jaxnn
from jaxnn._src import learned_metric as lm

sys.path.insert(0, os.path.dirname(__file__))
from _data import is_full_float32, matmul_precisions  # noqa: E402


def _nca_loss_reference(A, X, labels, weights, queries=None):
    """NCA's weighted log loss, a literal float64 loop over the points."""
    A, X = np.asarray(A, np.float64), np.asarray(X, np.float64)
    Q, lq, uq = (X, labels, weights) if queries is None else (np.asarray(queries[0], np.float64), *queries[1:])
    total = used = 0.0
    for i in range(len(Q)):
        others = [j for j in range(len(X)) if weights[j] > 0 and (queries is not None or j != i)]
        d = np.array([np.sum(((Q[i] - X[j]) @ A) ** 2) for j in others])
        p = np.exp(-(d - d.min()))
        p /= p.sum()
        same = np.array([labels[j] == lq[i] for j in others])
        if same.any() and uq[i] > 0:
            total -= uq[i] * np.log(p[same].sum())
            used += uq[i]
    return total / used


def _problem(m, d_noise=3, seed=0, scale=50.0):
    """Two classes split by x0 + x1 > 0, plus ``d_noise`` features of spread
    ``scale`` that carry nothing: the Euclidean neighbours are the noise's."""
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(size=(m, 2)), scale * rng.normal(size=(m, d_noise))]
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


def test_the_metric_asks_for_full_float32_matmuls():
    """NCA's distances and the mapping X @ A use the search's precision: with
    JAX's default a GPU computes float32 products in TF32, and the learned
    metric (and the mapped points) would differ from the CPU's."""
    import jax

    rng = np.random.default_rng(0)
    X, A = rng.normal(size=(30, 4)).astype(np.float32), rng.normal(size=(4, 3)).astype(np.float32)
    labels, weights = rng.integers(0, 2, 30), np.ones(30, np.float32)
    for fn, args in ((lambda A, X: lm.nca_loss(A, X, labels, weights), (A, X)),
                     (lambda X, A: lm.apply_metric(X, A), (X, A)),
                     (jax.grad(lambda A, X: lm.nca_loss(A, X, labels, weights)), (A, X))):
        found = matmul_precisions(fn, *args)
        assert found and all(is_full_float32(p) for p in found), found


def test_nca_loss_matches_a_float64_loop():
    rng = np.random.default_rng(1)
    X, labels = rng.normal(size=(30, 4)), rng.integers(0, 3, 30)
    weights = rng.uniform(0.5, 2.0, 30)
    weights[[3, 7]] = 0.0  # padding rows: no point's neighbour, no term
    labels[11] = 5  # a class of one point: no term
    A = rng.normal(size=(4, 3)) * 0.7
    got = float(lm.nca_loss(jnp.asarray(A), jnp.asarray(X), jnp.asarray(labels), jnp.asarray(weights)))
    assert got == pytest.approx(_nca_loss_reference(A, X, labels, weights), rel=1e-4)
    Q, lq = rng.normal(size=(9, 4)), rng.integers(0, 3, 9)
    uq = np.ones(9)
    got = float(lm.nca_loss(jnp.asarray(A), jnp.asarray(X), jnp.asarray(labels), jnp.asarray(weights),
                            (jnp.asarray(Q), jnp.asarray(lq), jnp.asarray(uq))))
    assert got == pytest.approx(_nca_loss_reference(A, X, labels, weights, (Q, lq, uq)), rel=1e-4)


def test_minimise_keeps_the_iterate_of_least_held_out_loss():
    X, y = _problem(160)
    Xs = (X - X.mean(0)) / X.std(0)
    part = lambda r: (jnp.asarray(Xs[r], jnp.float32), jnp.asarray(y[r], jnp.int32), jnp.ones(len(r), jnp.float32))
    held = part(np.arange(40))
    A, losses = lm._minimise(jnp.eye(5), *part(np.arange(40, 160)), held, 15)
    losses = np.asarray(losses)
    assert losses.shape == (16,)
    assert float(lm.nca_loss(A, *part(np.arange(40, 160)), held)) == pytest.approx(losses.min(), rel=1e-6)
    assert losses.min() < losses[0]  # the objective can be lowered here: steps are taken


def test_the_learned_metric_finds_the_neighbours_the_noise_hides():
    X, y = _problem(300)
    Xt, yt = _problem(300, seed=1)
    plain = jaxnn.fit(X, y)
    learned = jaxnn.fit(X, y, metric="nca")
    assert learned.transform.shape == (5, 5) and learned.n_features == 5
    acc_plain = np.mean(jaxnn.predict(plain, Xt) == yt)
    acc_learned = np.mean(jaxnn.predict(learned, Xt) == yt)
    assert acc_plain < 0.65  # chance: the neighbours are the noise's
    assert acc_learned > 0.8


def test_a_given_map_is_the_fit_on_the_mapped_points():
    X, y = _problem(120)
    Xt, _ = _problem(50, seed=2)
    A = np.random.default_rng(3).normal(size=(5, 3)).astype(np.float32)
    given = jaxnn.fit(X, y, metric=A)
    mapped = jaxnn.fit((X @ A).astype(np.float32), y)
    assert given.X.shape == (120, 3) and given.n_features == 5
    np.testing.assert_array_equal(jaxnn.predict(given, Xt), jaxnn.predict(mapped, (Xt @ A).astype(np.float32)))
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(given, Xt)),
                               np.asarray(jaxnn.predict_proba(mapped, (Xt @ A).astype(np.float32))), atol=1e-6)


def test_the_metric_is_the_same_for_the_same_seed_and_follows_a_uniform_scaling():
    X, y = _problem(200)
    A1 = jaxnn.learn_metric(X, y, seed=4)
    np.testing.assert_array_equal(A1, jaxnn.learn_metric(X, y, seed=4))
    A2 = jaxnn.learn_metric(8.0 * X + 3.0, y, seed=4)
    np.testing.assert_allclose(8.0 * A2, A1, rtol=2e-3, atol=2e-3 * np.abs(A1).max())


def test_a_model_with_a_metric_saves_loads_and_pickles_bit_for_bit(tmp_path):
    X, y = _problem(100)
    Xt, _ = _problem(40, seed=5)
    model = jaxnn.fit(X, y, metric="nca")
    path = tmp_path / "m.jaxnn"
    jaxnn.save(model, path)
    for back in (jaxnn.load(path), pickle.loads(pickle.dumps(model))):
        np.testing.assert_array_equal(np.asarray(back.transform), np.asarray(model.transform))
        np.testing.assert_array_equal(np.asarray(jaxnn.predict_proba(back, Xt)),
                                      np.asarray(jaxnn.predict_proba(model, Xt)))


def test_the_estimator_learns_the_metric():
    from sklearn.base import clone

    from jaxnn.sklearn import BoostedKNNClassifier

    X, y = _problem(200)
    Xt, yt = _problem(200, seed=6)
    est = BoostedKNNClassifier(metric="nca").fit(X, y)
    assert est.model_.transform is not None and est.n_features_in_ == 5
    assert est.score(Xt, yt) > 0.75
    assert clone(est).get_params()["metric"] == "nca"


@pytest.mark.parametrize("metric, error, words", [
    ("ncaa", ValueError, "did you mean 'nca'"),
    ("euclidean", ValueError, "unknown metric"),
    (np.ones((4, 2)), ValueError, "(5, r ≥ 1)"),
    (np.ones((5, 0)), ValueError, "(5, r ≥ 1)"),
    (np.full((5, 2), np.inf), ValueError, "non-finite"),
    (np.array([["a"] * 2] * 5), TypeError, "real"),
    (np.ones((5, 2), complex), TypeError, "real"),
    (object(), TypeError, "real"),
])
def test_a_bad_metric_is_refused_by_name(metric, error, words):
    X, y = _problem(40)
    with pytest.raises(error, match="metric") as info:
        jaxnn.fit(X, y, k=3, metric=metric)
    assert words in str(info.value)


def test_what_a_learned_metric_cannot_take_is_refused():
    X, y = _problem(40)
    nbrs = jaxnn.knn_graph(X, 3)
    with pytest.raises(ValueError, match="metric cannot be combined with precomputed neighbors"):
        jaxnn.fit(X, y, k=3, neighbors=nbrs, metric="nca")
    with pytest.raises(ValueError, match="max_points"):
        jaxnn.learn_metric(X, y, max_points=1)
    with pytest.raises(ValueError, match="iterations"):
        jaxnn.learn_metric(X, y, iterations=0)


def test_a_model_whose_transform_disagrees_is_refused_where_it_predicts():
    X, y = _problem(60)
    model = jaxnn.fit(X, y, k=3, metric=np.eye(5)[:, :3])
    with pytest.raises(ValueError, match="model.transform has shape"):
        jaxnn.predict(dataclasses.replace(model, transform=model.transform[:, :2]), X)
    with pytest.raises(ValueError, match="fit on 5"):
        jaxnn.predict(model, X[:, :3])  # the queries' features are the map's inputs


def test_nearby_sizes_share_one_compiled_metric(compilations):
    problems = {m: _problem(m, seed=m) for m in (150, 151, 152)}
    with compilations(lm._minimise):  # compiled anew
        jaxnn.learn_metric(*problems[150], iterations=3)
    with compilations() as compiled:
        for m in (151, 152):
            jaxnn.learn_metric(*problems[m], iterations=3)
    assert compiled.of(lm._minimise) == []


def test_a_multilabel_fit_learns_its_metric_on_the_label_sets():
    X, y = _problem(120)
    Y = np.c_[y, X[:, 0] > 0.5].astype(int)  # four label sets
    model = jaxnn.fit(X, Y, k=5, metric="nca")
    assert model.multilabel and model.transform.shape == (5, 5)
    assert jaxnn.predict(model, X[:7]).shape == (7, 2)


def test_clear_gain_asks_for_two_standard_errors():
    assert lm.clear_gain(np.full(10, 0.3), np.ones(10))  # no spread: any gain is clear
    assert not lm.clear_gain(np.array([1.0, -1.0] * 20), np.ones(40))  # mean 0
    gain = np.r_[np.full(50, 1.0), np.full(50, -0.6)]  # mean 0.2, se = 0.8 / sqrt(100)
    assert lm.clear_gain(gain, np.ones(100)) == (0.2 > lm.MIN_GAIN_SE * 0.08)
    heavy = np.r_[gain, np.full(5, -100.0)]  # weight-0 points take no part
    assert lm.clear_gain(heavy, np.r_[np.ones(100), np.zeros(5)]) == lm.clear_gain(gain, np.ones(100))


def test_labels_that_carry_nothing_keep_the_standardised_features():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 4)) * np.array([1.0, 10.0, 0.1, 3.0])
    y = rng.integers(0, 2, 200)
    A = jaxnn.learn_metric(X, y)
    np.testing.assert_allclose(A, np.diag(1.0 / X.std(axis=0)), rtol=1e-5)


def test_bad_settings_are_refused_before_the_metric_is_learned(monkeypatch):
    X, y = _problem(60)
    learned = []
    monkeypatch.setattr(lm, "learn_metric", lambda *a, **kw: learned.append(1) or np.eye(5))
    for bad in ({"k": 0}, {"k": 60}, {"posterior": "nope"}, {"graph_method": "nope"}, {"trace": "yes"},
                {"shrinkage": "always"}):
        with pytest.raises((TypeError, ValueError)):
            jaxnn.fit(X, y, metric="nca", **bad)
    assert learned == []
