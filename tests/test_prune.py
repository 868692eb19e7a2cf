"""Prototype filtering (paper 001 §4.1): prune, prune_indices, knn_subsample."""

import math

import numpy as np
import pytest

import jaxnn
from jaxnn._src.prune import knn_subsample, prune, prune_indices


@pytest.fixture(scope="module")
def ripley():
    d = jaxnn.datasets.ripley(n_train=250, n_test=1000, seed=0)
    model = jaxnn.fit(d.X_train, d.y_train, k=5, algorithm="unn", loss="exponential", posterior="link")
    return d, model


@pytest.fixture(scope="module")
def blobs3():
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=1.5, size=(3, 4))
    y = rng.integers(0, 3, size=120)
    X = (centers[y] + rng.normal(size=(120, 4))).astype(np.float32)
    return X, y, jaxnn.fit(X, y, k=5, posterior="link")


def _err(model, d):
    return float(np.mean(jaxnn.predict(model, d.X_test) != d.y_test))


def test_theta_one_is_the_identity(ripley):
    d, model = ripley
    full = prune(model, 1.0)
    assert full is model
    np.testing.assert_array_equal(prune_indices(model, 1), np.arange(250))
    np.testing.assert_array_equal(np.asarray(jaxnn.decision_function(full, d.X_test)), np.asarray(jaxnn.decision_function(model, d.X_test)))
    np.testing.assert_array_equal(jaxnn.predict(full, d.X_test), jaxnn.predict(model, d.X_test))


def test_half_keeps_the_largest_alphas(ripley):
    d, model = ripley
    pm = prune(model, 0.5)
    A = np.abs(np.asarray(model.alpha))
    # two classes: both α columns agree, so exactly ⌈θ m⌉ = 125 examples are kept
    np.testing.assert_array_equal(A[:, 0], A[:, 1])
    assert pm.X.shape == (125, 2) and pm.Y.shape == (125, 2) and pm.alpha.shape == (125, 2)
    idx = prune_indices(model, 0.5)
    assert np.all(np.diff(idx) > 0)  # original order
    np.testing.assert_array_equal(np.asarray(pm.X), np.asarray(model.X)[idx])
    np.testing.assert_array_equal(np.asarray(pm.alpha), np.asarray(model.alpha)[idx])
    dropped = np.setdiff1d(np.arange(250), idx)
    assert A[idx, 0].min() >= A[dropped, 0].max()
    # about half of each class (±1 rounding per class would be exact halving)
    counts = np.bincount(d.y_train[idx], minlength=2)
    assert counts.sum() == 125 and np.all(np.abs(counts - 62.5) <= 20)
    assert (pm.classes, pm.k, pm.loss, pm.algorithm, pm.multilabel) == (model.classes, model.k, model.loss, model.algorithm, model.multilabel)
    # shapes of predictions
    assert jaxnn.predict(pm, d.X_test[:7]).shape == (7,)
    assert jaxnn.decision_function(pm, d.X_test[:7]).shape == (7, 2)
    P = np.asarray(jaxnn.predict_proba(pm, d.X_test[:7]))
    assert P.shape == (7, 2)
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-5)


def test_pruned_error_stays_close_on_ripley(ripley):
    # UNN (exponential loss), k = 5, Ripley 250 / 1000, seed 0.  Measured test
    # errors: full 0.110; θ = 0.5 → 0.096; θ = 0.25 → 0.103; plain k-NN on a
    # random sample of the same size (mean of 5 draws): θ = 0.25 → 0.111.
    d, model = ripley
    full = _err(model, d)
    half = _err(prune(model, 0.5), d)
    quarter = _err(prune(model, 0.25), d)
    assert full <= 0.13
    assert half <= full + 0.03
    assert quarter <= full + 0.03
    n = prune(model, 0.25).X.shape[0]
    rand = np.mean([_err(knn_subsample(d.X_train, d.y_train, 0.25, seed, k=5, size=n), d) for seed in range(5)])
    assert quarter <= rand


def test_multiclass_union_rule(blobs3):
    X, y, model = blobs3
    A = np.abs(np.asarray(model.alpha))
    n = math.ceil(0.3 * 120)
    idx = prune_indices(model, 0.3)
    for c in range(3):  # the top-⌈θm⌉ of every class column is kept
        assert set(np.argsort(-A[:, c], kind="stable")[:n]) <= set(idx)
    assert n <= idx.size <= min(120, 3 * n)
    pm = prune(model, 0.3)
    assert pm.X.shape[0] == idx.size
    assert jaxnn.predict(pm, X[:5]).shape == (5,)


def test_multilabel_prune(blobs3):
    X, _, _ = blobs3
    Yind = (X[:, :3] > 0).astype(int)
    model = jaxnn.fit(X, Yind, k=5, posterior="link")
    pm = prune(model, 0.5)
    assert pm.multilabel and pm.Y.shape[1] == 3 and 60 <= pm.Y.shape[0] <= 120
    assert jaxnn.predict(pm, X[:4]).shape == (4, 3)


@pytest.mark.parametrize("theta", [0, 0.0, -0.1, 1.0001, 2, float("nan"), float("inf")])
def test_theta_out_of_range(ripley, theta):
    d, model = ripley
    with pytest.raises(ValueError, match="theta"):
        prune(model, theta)
    with pytest.raises(ValueError, match="theta"):
        prune_indices(model, theta)
    with pytest.raises(ValueError, match="theta"):
        knn_subsample(d.X_train, d.y_train, theta)


def test_bad_inputs(ripley):
    d, model = ripley
    for theta in ("0.5", None, True):
        with pytest.raises(TypeError, match="theta"):
            prune(model, theta)
    with pytest.raises(ValueError, match="fewer than k"):
        prune(model, 0.01)  # ⌈2.5⌉ = 3 < k = 5
    assert prune(model, 0.02).X.shape[0] == 5  # exactly k is fine
    with pytest.raises(TypeError, match="Model"):
        prune("not a model", 0.5)
    with pytest.raises(ValueError, match="fewer than k"):
        knn_subsample(d.X_train, d.y_train, 0.01, k=5)
    with pytest.raises(ValueError, match="size"):
        knn_subsample(d.X_train, d.y_train, 0.5, size=251)


def test_knn_subsample(ripley):
    d, _ = ripley
    sub = knn_subsample(d.X_train, d.y_train, 0.2, seed=3, k=5)
    assert isinstance(sub, jaxnn.Model) and sub.X.shape == (50, 2) and sub.k == 5
    np.testing.assert_array_equal(np.asarray(sub.alpha), 1.0)
    rows = {tuple(r) for r in np.asarray(d.X_train, np.float32)}
    assert all(tuple(r) in rows for r in np.asarray(sub.X))
    again = knn_subsample(d.X_train, d.y_train, 0.2, seed=3, k=5)
    np.testing.assert_array_equal(np.asarray(again.X), np.asarray(sub.X))
    other = knn_subsample(d.X_train, d.y_train, 0.2, seed=4, k=5)
    assert not np.array_equal(np.asarray(other.X), np.asarray(sub.X))
    # α ≡ 1: the plain k-NN vote; predict_proba gives the vote fractions
    H = np.asarray(jaxnn.decision_function(sub, d.X_test[:20]))
    assert np.all(np.abs(H) <= 5) and np.all((H + 5) % 2 == 0)
    P = np.asarray(jaxnn.predict_proba(sub, d.X_test[:20]))
    np.testing.assert_allclose(P[:, 1], (H[:, 1] + 5) / 10, atol=1e-6)
    assert knn_subsample(d.X_train, d.y_train, 0.2, k=5, size=77).X.shape[0] == 77


@pytest.mark.parametrize("multilabel", [False, True], ids=["class", "label"])
def test_prune_warns_when_a_class_loses_every_prototype(caplog, multilabel):
    # |α| is ranked within each α column; with two classes both columns rank
    # alike, so a minority class (10 of 300) can vanish from the pruned model
    # silently; multilabel: a label can keep no positive example
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2)).astype(np.float32)
    X[290:] += 3
    y = np.r_[np.zeros(290, int), np.ones(10, int)]
    if multilabel:
        y = np.stack([np.arange(300) < 150, y], axis=1).astype(int)
    model = jaxnn.fit(X, y, k=5, posterior="link", chooser="lazy")  # auto's choice on CPU
    with caplog.at_level("WARNING", logger="jaxnn"):
        jaxnn.prune(model, 0.5)
    assert not caplog.records
    with caplog.at_level("WARNING", logger="jaxnn"):
        pruned = jaxnn.prune(model, 0.05)
    assert np.all(np.asarray(pruned.Y)[:, 1] < 0)
    (record,) = caplog.records
    named = "only positive or only negative examples of label(s) 1" if multilabel else "no example of class(es) 1"
    assert named in record.getMessage() and "raise theta" in record.getMessage()


def _model_with_alpha(A, Y=None, multilabel=False):
    """A Model (k = 1) holding the given α (m, C) — prune reads only α, Y, k
    and the label layout — with one-dimensional points j and by default
    example j of class j mod C."""
    import jax.numpy as jnp

    A = np.asarray(A, np.float32)
    m, C = A.shape
    if Y is None:
        Y = np.where(np.arange(m)[:, None] % C == np.arange(C), 1.0, -1.0)
    return jaxnn.Model(jnp.asarray(A), jnp.arange(m, dtype=jnp.float32)[:, None], jnp.asarray(Y, jnp.float32), None,
                       tuple(range(C)), 1, jaxnn.losses.get("logistic"), None, multilabel)


@pytest.mark.parametrize("m, theta, n", [(25, 0.3, 8), (100, 0.07, 7), (10, 0.3, 3), (100, 1e-12, 1), (7, 1e-9, 1)])
def test_prune_keeps_ceil_theta_m(m, theta, n):
    # ⌈θ m⌉ examples, at least 1: ⌈7.5⌉ = 8; θ m = 7.000000000000001 and
    # 3.0000000000000004 in floating point are 7 and 3; a tiny θ keeps the
    # single largest |α|
    A = np.random.default_rng(m).permutation(m)[:, None] * np.ones((1, 2)) + 1.0
    idx = prune_indices(_model_with_alpha(A), theta)
    np.testing.assert_array_equal(idx, np.sort(np.argsort(-A[:, 0])[:n]))


def test_prune_ties_go_to_the_lower_index():
    assert list(prune_indices(_model_with_alpha(np.ones((4, 2))), 0.5)) == [0, 1]
    A = np.array([[1.0], [2.0], [2.0], [2.0], [0.5]]) * np.ones((1, 2))
    assert list(prune_indices(_model_with_alpha(-A), 0.4)) == [1, 2]  # |α| ranked, ties → lower index


def test_multilabel_prune_warns_when_a_label_keeps_only_positives(caplog):
    # the examples with the largest |α| (the first half) are all positives of
    # label 0; label 1 keeps both signs
    m = 10
    Y = np.stack([np.where(np.arange(m) < 5, 1.0, -1.0), np.where(np.arange(m) % 2 == 0, 1.0, -1.0)], axis=1)
    A = np.where(np.arange(m) < 5, 2.0, 1.0)[:, None] * np.ones((1, 2))
    model = _model_with_alpha(A, Y, multilabel=True)
    with caplog.at_level("WARNING", logger="jaxnn"):
        pruned = prune(model, 0.5)
    np.testing.assert_array_equal(np.asarray(pruned.Y)[:, 0], 1.0)
    (record,) = caplog.records
    assert "only positive or only negative examples of label(s) 0," in record.getMessage()


@pytest.mark.parametrize("multilabel", [False, True], ids=["class", "label"])
def test_knn_subsample_warns_when_its_sample_loses_a_class(caplog, multilabel):
    """As prune does: a uniform sample of 15 from 300 points with 3 of a
    minority class held none of them on 5 seeds of 5, silently (the model
    still listed the class and predicted it nowhere)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2)).astype(np.float32)
    y = np.r_[np.zeros(297, int), np.ones(3, int)]
    if multilabel:
        y = np.stack([np.arange(300) < 150, y], axis=1).astype(int)
    with caplog.at_level("WARNING", logger="jaxnn"):
        jaxnn.knn_subsample(X, y, 1.0, k=5)
    assert not caplog.records
    with caplog.at_level("WARNING", logger="jaxnn"):
        model = jaxnn.knn_subsample(X, y, 0.05, seed=0, k=5)
    assert np.all(np.asarray(model.Y)[:, 1] < 0)
    (record,) = caplog.records
    named = "only positive or only negative examples of label(s) 1" if multilabel else "no example of class(es) 1"
    assert record.getMessage().startswith("knn_subsample: the sample of 15 holds") and named in record.getMessage()
    assert "another seed" in record.getMessage()


def test_knn_subsample_draws_without_replacement():
    X = np.arange(500, dtype=np.float32).reshape(250, 2)  # 250 distinct rows
    y = np.arange(250) % 2
    for seed in range(3):
        sub = np.asarray(knn_subsample(X, y, 0.2, seed=seed, k=5).X)
        assert sub.shape == (50, 2) and len({tuple(r) for r in sub}) == 50
    # a sample of exactly k examples is enough: ⌈0.02 · 250⌉ = 5 = k
    assert knn_subsample(X, y, 0.02, k=5).X.shape == (5, 2)
