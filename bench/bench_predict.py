"""Prediction: jaxnn GNNB vs scikit-learn's brute-force k-NN on the test split.

:class:`Predict` fits GNNB (logistic, lazy, one pass) from the cached graph in
``setup`` and compiles the exact query search, then

* ``time_predict`` — ``jaxnn.predict(model, X_test)`` (exact 10-NN query +
  H_c(x) + argmax);
* ``track_test_accuracy`` — its accuracy;
* ``track_predict_ratio_vs_sklearn_knn`` — that time over
  ``KNeighborsClassifier(n_neighbors=10, algorithm="brute").predict(X_test)``
  (fitted on the same training set), interleaved in one process.

:class:`PredictFromNeighbors` predicts from the test points' neighbours found
beforehand (``jaxnn.predict(model, neighbors=nb)``: no search, only the
gather of α and the argmax): ``time_predict_from_neighbors`` and
``track_time_ratio_vs_search`` (its time over ``time_predict``'s, which
searches, interleaved) — what an external index (pynndescent, README) leaves.

:class:`PredictPruned` does the same for ``jaxnn.prune(model, theta)``
(paper 001 §4.1: keep the examples with the largest |α|), θ ∈ {1, 0.5, 0.1}:
``time_predict``, ``track_test_accuracy``, ``track_kept_fraction`` and
``track_time_ratio_vs_unpruned`` (pruned / full predict time, interleaved) —
a pruned model searches fewer points, so it predicts proportionally faster.
"""

from __future__ import annotations

import inspect

import jax.numpy as jnp

import jaxnn

try:
    from jaxnn._src.prediction import _scores
except ImportError:  # older commits: H_c(x) compiles in the first call instead
    _scores = None

THETAS = (1.0, 0.5, 0.1)

from .common import DATASETS, K, Benchmark, GraphCache, accuracy, block, interleaved_best, problem, skip_unless, warm_query


class Predict(GraphCache, Benchmark):
    param_names = ["dataset"]
    params = (DATASETS,)

    def setup(self, cache, name):
        run = problem(cache, name).runner("gnnb", "lazy")
        self.data = run.problem.data
        self.model = run.model(block(run()))
        _warm_predict(self.model, self.data.X_test)

    def time_predict(self, cache, name):
        block(jaxnn.predict(self.model, self.data.X_test))

    def track_test_accuracy(self, cache, name):
        return accuracy(jaxnn.predict(self.model, self.data.X_test), self.data.y_test)

    track_test_accuracy.unit = "accuracy"

    def track_predict_ratio_vs_sklearn_knn(self, cache, name):
        neighbors = skip_unless("sklearn.neighbors")
        d = self.data
        knn = neighbors.KNeighborsClassifier(n_neighbors=K, algorithm="brute").fit(d.X_train, d.y_train)
        t_jaxnn, t_sklearn = interleaved_best(
            [lambda: jaxnn.predict(self.model, d.X_test), lambda: knn.predict(d.X_test)], repeat=3
        )
        return t_jaxnn / t_sklearn

    track_predict_ratio_vs_sklearn_knn.unit = "ratio"


def _warm_predict(model, X_test) -> None:
    """Compile the query search and H_c(x) of ``jaxnn.predict(model, X_test)``."""
    X_test = jnp.asarray(X_test)
    warm_query(model.X, X_test, K)
    if _scores is not None:
        dummy = jnp.zeros((X_test.shape[0], K), jnp.int32)
        block(_scores(model.alpha, model.Y, dummy))


class PredictFromNeighbors(GraphCache, Benchmark):
    """Prediction from precomputed query neighbours (``neighbors=``)."""

    param_names = ["dataset"]
    params = (DATASETS,)

    def setup(self, cache, name):
        if "neighbors" not in inspect.signature(jaxnn.predict).parameters:
            raise NotImplementedError("this jaxnn's predict takes no neighbors")
        run = problem(cache, name).runner("gnnb", "lazy")
        self.data = run.problem.data
        self.model = run.model(block(run()))
        _warm_predict(self.model, self.data.X_test)
        self.neighbors = block(jaxnn.knn_query(self.model.X, jnp.asarray(self.data.X_test), K).indices)
        block(jaxnn.predict(self.model, neighbors=self.neighbors))

    def time_predict_from_neighbors(self, cache, name):
        block(jaxnn.predict(self.model, neighbors=self.neighbors))

    def track_time_ratio_vs_search(self, cache, name):
        X = self.data.X_test
        t_given, t_search = interleaved_best(
            [lambda: jaxnn.predict(self.model, neighbors=self.neighbors), lambda: jaxnn.predict(self.model, X)],
            repeat=3,
        )
        return t_given / t_search

    track_time_ratio_vs_search.unit = "ratio"


class PredictPruned(GraphCache, Benchmark):
    """Prediction by a model pruned to the fraction θ of its prototypes."""

    param_names = ["dataset", "theta"]
    params = (DATASETS, THETAS)

    def setup(self, cache, name, theta):
        if not hasattr(jaxnn, "prune"):
            raise NotImplementedError("this jaxnn has no prune")
        run = problem(cache, name).runner("gnnb", "lazy")
        self.data = run.problem.data
        self.full = run.model(block(run()))
        self.model = jaxnn.prune(self.full, theta)
        _warm_predict(self.full, self.data.X_test)
        _warm_predict(self.model, self.data.X_test)

    def time_predict(self, cache, name, theta):
        block(jaxnn.predict(self.model, self.data.X_test))

    def track_test_accuracy(self, cache, name, theta):
        return accuracy(jaxnn.predict(self.model, self.data.X_test), self.data.y_test)

    track_test_accuracy.unit = "accuracy"

    def track_kept_fraction(self, cache, name, theta):
        return self.model.X.shape[0] / self.full.X.shape[0]

    track_kept_fraction.unit = "fraction"

    def track_time_ratio_vs_unpruned(self, cache, name, theta):
        X = self.data.X_test
        t_pruned, t_full = interleaved_best(
            [lambda: jaxnn.predict(self.model, X), lambda: jaxnn.predict(self.full, X)], repeat=3
        )
        return t_pruned / t_full

    track_time_ratio_vs_unpruned.unit = "ratio"
