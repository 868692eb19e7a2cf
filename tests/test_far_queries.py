"""Query points far from the training points find their true neighbours:
the search's distance tiles ‖q‖² − 2q·x + ‖x‖² cannot rank the training
points for a query at ±10¹⁰ (float32 cancellation) or 10²⁰ (‖q‖² overflows),
so such rows are ranked again exactly (jaxnn._src.search.exact_rows) — in
knn_query, in predict / predict_proba / decision_function and in the sharded
search.  Coordinates beyond float32 are refused, and a model whose α is not
finite is refused by prediction and by jaxnn.load."""

from __future__ import annotations

import dataclasses
import fractions

import numpy as np
import pytest

import jaxnn
from jaxnn.sklearn import BoostedKNNClassifier
from jaxnn._src import search

K = 5
MAGNITUDES = (1e6, 1e8, 1e10, 1e15, 1e20, 1e30)


def _points(m=500, seed=0):
    """m points of N(0, I₃) in float32 (the search's own points, so that the
    exact reference ranks the same numbers) and 0/1/2 labels by sector."""
    X = np.random.default_rng(seed).normal(size=(m, 3)).astype(np.float32)
    y = np.digitize(np.arctan2(X[:, 1], X[:, 0]), [-1.0, 1.0])
    return X, y


def _far_queries(magnitude):
    """(±mag, 0, 0), (0, ±mag, 0) and one point among the training points, float32."""
    return np.array([[magnitude, 0, 0], [-magnitude, 0, 0], [0, magnitude, 0], [0, -magnitude, 0],
                     [0.1, -0.2, 0.3]], np.float32)


def _exact_neighbours(X, Q, k):
    """The k nearest rows of X to each row of Q by exact rational arithmetic on
    the float32 values (ties: lower index), and whether a row's k-th and
    (k+1)-th distances differ (no tie at the cut)."""
    Xf = [[fractions.Fraction(float(v)) for v in row] for row in X]
    idx, clear = [], []
    for q in Q:
        qf = [fractions.Fraction(float(v)) for v in q]
        d2 = [sum((a - b) ** 2 for a, b in zip(qf, x)) for x in Xf]
        order = sorted(range(len(Xf)), key=lambda j: (d2[j], j))
        idx.append(order[:k])
        clear.append(len({d2[j] for j in order[:k + 1]}) == k + 1)
    return np.array(idx), np.array(clear)


@pytest.fixture(scope="module")
def data():
    X, y = _points()
    Q = np.concatenate([_far_queries(mag) for mag in MAGNITUDES])
    nb, clear = _exact_neighbours(X, Q, K)
    assert clear.all()  # no ties: the indices themselves are compared
    return X, y, Q, nb


def test_knn_query_finds_the_true_neighbours_of_far_queries(data):
    X, _, Q, nb = data
    found = jaxnn.knn_query(X, Q, K)
    np.testing.assert_array_equal(np.asarray(found.indices), nb)
    true = np.linalg.norm(Q.astype(np.float64)[:, None, :] - X.astype(np.float64)[nb], axis=2)
    np.testing.assert_allclose(np.asarray(found.distances), true, rtol=1e-6)


def test_far_queries_agree_with_scikit_learn_where_float64_ranks_them(data):
    from sklearn.neighbors import NearestNeighbors

    X, _, Q, _ = data
    Q = Q[np.max(np.abs(Q), axis=1) <= 1e10]  # beyond, float64's own expansion cancels too
    want = NearestNeighbors(n_neighbors=K, algorithm="brute").fit(X.astype(np.float64)).kneighbors(
        Q.astype(np.float64), return_distance=False)
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_query(X, Q, K).indices), want)


def test_far_queries_are_found_by_the_sharded_search(data):
    X, _, Q, nb = data
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_query(X, Q, K, devices=1).indices), nb)


@pytest.mark.slow  # a search of more than shared_sizes.SHARED_MAX_ROWS points: a program of its own
def test_far_queries_among_many_points_are_flagged_by_the_search_program():
    X, _ = _points(m=20_000, seed=1)
    Q = np.concatenate([_far_queries(mag) for mag in (1e10, 1e30)])
    found = np.asarray(jaxnn.knn_query(X, Q, K).indices)
    X64, Q64 = X.astype(np.float64), Q.astype(np.float64)
    key = np.sum(X64 ** 2, axis=1)[None, :] - 2 * Q64 @ X64.T  # ‖q‖² left out: exact enough to rank here
    np.testing.assert_array_equal(found, np.argsort(key, axis=1, kind="stable")[:, :K])


def test_predict_follows_the_true_neighbours_of_far_queries(data):
    X, y, Q, nb = data
    model = jaxnn.fit(X, y, k=K)
    np.testing.assert_array_equal(jaxnn.predict(model, Q), jaxnn.predict(model, neighbors=nb))
    np.testing.assert_array_equal(np.asarray(jaxnn.decision_function(model, Q)),
                                  np.asarray(jaxnn.decision_function(model, neighbors=nb)))
    P = np.asarray(jaxnn.predict_proba(model, Q))
    assert np.isfinite(P).all()
    np.testing.assert_array_equal(P, np.asarray(jaxnn.predict_proba(model, Q, neighbors=nb)))
    # the estimator ranks through the same search
    est = BoostedKNNClassifier(k=K).fit(X, y)
    np.testing.assert_array_equal(est.predict(Q), jaxnn.predict(est.model_, neighbors=nb))


def test_queries_near_the_points_keep_the_searchs_ranking():
    X, _ = _points()
    e0, shift, s, e = search.conditioning_on_host(X)[1]
    Q = np.concatenate([X[:50], 4 * X[:50], np.zeros((1, 3), np.float32)])  # within FAR_RATIO of the points
    assert search.far_query_rows(Q, (e0, shift, s, e)).size == 0
    assert search.far_query_rows(_far_queries(1e4), (e0, shift, s, e)).tolist() == [0, 1, 2, 3]


def test_exact_rows_put_padding_and_the_query_itself_last_in_index_order():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 0.0], [0.0, 0.0]])  # rows 3, 4: padding
    Q = np.array([[1e12, 0.0], [0.0, 0.0]])
    idx, dist = search.exact_rows(Q, X, 5, n_valid=3, exclude=np.array([-1, 0]))
    np.testing.assert_array_equal(idx, [[2, 1, 0, 3, 4], [1, 2, 0, 3, 4]])
    np.testing.assert_allclose(dist, [[1e12 - 2, 1e12 - 1, 1e12, np.inf, np.inf], [1, 2, np.inf, np.inf, np.inf]])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_queries_beyond_float32_are_refused(dtype):
    X, y = _points()
    Q = np.zeros((3, 3), dtype)
    with np.errstate(over="ignore"):
        Q[1, 0] = dtype(1e39)  # float32: inf
    with pytest.raises(ValueError, match="X_query"):
        jaxnn.knn_query(X, Q, K)
    with pytest.raises(ValueError, match="X .*(float32 range|infinite)"):
        jaxnn.predict(jaxnn.fit(X, y, k=K), Q)


# ----------------------------------------------------------------------------
# α that is not finite
# ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fitted():
    X, y = _points()
    return X, jaxnn.fit(X, y, k=K)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_prediction_refuses_an_alpha_that_is_not_finite(fitted, bad):
    X, model = fitted
    broken = dataclasses.replace(model, alpha=model.alpha.at[3, 0].set(bad).at[7, 1].set(bad))
    for predict in (jaxnn.predict, jaxnn.predict_proba, jaxnn.decision_function):
        with pytest.raises(ValueError, match=r"model\.alpha holds 2 NaN or infinite entries"):
            predict(broken, X[:4])
    est = BoostedKNNClassifier(k=K).fit(X, _points()[1])
    est.model_ = dataclasses.replace(est.model_, alpha=est.model_.alpha.at[0, 0].set(bad))
    with pytest.raises(ValueError, match=r"model\.alpha holds 1 NaN"):
        est.predict_proba(X[:4])
    # the model that passed keeps predicting; a NumPy α is checked at every call
    np.testing.assert_array_equal(jaxnn.predict(model, X[:4]), jaxnn.predict(model, X[:4]))
    alpha = np.array(model.alpha)
    host = dataclasses.replace(model, alpha=alpha)
    jaxnn.predict(host, X[:4])
    alpha[5, 2] = bad
    with pytest.raises(ValueError, match=r"model\.alpha holds 1 NaN"):
        jaxnn.predict(host, X[:4])


def test_load_refuses_a_file_whose_alpha_is_not_finite(fitted, tmp_path):
    import io
    import zipfile

    _, model = fitted
    path = tmp_path / "model.jaxnn"
    jaxnn.save(model, path)
    with zipfile.ZipFile(path) as z:
        entries = {name: z.read(name) for name in z.namelist()}
    alpha = np.load(io.BytesIO(entries["alpha.npy"]), allow_pickle=False).copy()
    alpha[0, 0] = np.nan
    buffer = io.BytesIO()
    np.save(buffer, alpha, allow_pickle=False)
    entries["alpha.npy"] = buffer.getvalue()
    with zipfile.ZipFile(path, "w") as z:  # the file edited by hand
        for name, data in entries.items():
            z.writestr(name, data)
    with pytest.raises(jaxnn.ModelFileError, match=r"model\.alpha holds 1 NaN"):
        jaxnn.load(path)
