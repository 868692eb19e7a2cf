"""Many queries are predicted PREDICT_BLOCK_ROWS at a time: the same answers
as one call, and no call scores more rows than a block."""

import numpy as np
import pytest

import jaxnn
from jaxnn._src import prediction


@pytest.fixture(scope="module")
def model_and_queries():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 150)
    X = (rng.normal(size=(150, 4)) + np.eye(3, 4)[y] * 2).astype(np.float32)
    Q = rng.normal(size=(230, 4)).astype(np.float32) + 0.5
    return jaxnn.fit(X, y, k=5), X, Q


def test_blocks_give_the_one_call_answers(model_and_queries, monkeypatch):
    model, X, Q = model_and_queries
    whole = (jaxnn.predict(model, Q), np.asarray(jaxnn.predict_proba(model, Q)),
             np.asarray(jaxnn.decision_function(model, Q)))
    nb = jaxnn.knn_query(X, Q, model.k)
    from_nb = jaxnn.predict(model, neighbors=nb)
    rows = []
    real = prediction._query_parts
    monkeypatch.setattr(prediction, "_query_parts", lambda m, Xq, n: rows.append(len(Xq) if Xq is not None else len(getattr(n, "indices", n)))
                        or real(m, Xq, n))
    monkeypatch.setattr(prediction, "PREDICT_BLOCK_ROWS", 64)
    np.testing.assert_array_equal(jaxnn.predict(model, Q), whole[0])
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(model, Q)), whole[1], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(jaxnn.decision_function(model, Q)), whole[2], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(jaxnn.predict(model, neighbors=nb), from_nb)
    assert rows and max(rows) <= 64 and sum(rows) == 4 * 230


def test_the_estimator_streams_too(model_and_queries, monkeypatch):
    from jaxnn.sklearn import BoostedKNNClassifier

    _, X, Q = model_and_queries
    y = jaxnn.predict(model_and_queries[0], X)
    est = BoostedKNNClassifier(k=5).fit(X, y)
    whole = est.predict_proba(Q)
    monkeypatch.setattr(prediction, "PREDICT_BLOCK_ROWS", 50)
    np.testing.assert_allclose(est.predict_proba(Q), whole, rtol=1e-6, atol=1e-7)
