"""Prediction: jaxnn GNNB vs scikit-learn's brute-force k-NN on the test split.

:class:`Predict` fits GNNB (logistic, lazy, one pass) from the cached graph in
``setup`` and compiles the exact query search, then

* ``time_predict`` — ``jaxnn.predict(model, X_test)`` (exact 10-NN query +
  H_c(x) + argmax);
* ``track_test_accuracy`` — its accuracy;
* ``track_predict_ratio_vs_sklearn_knn`` — that time over
  ``KNeighborsClassifier(n_neighbors=10, algorithm="brute").predict(X_test)``
  (fitted on the same training set), interleaved in one process.
"""

from __future__ import annotations

import jax.numpy as jnp

import jaxnn

try:
    from jaxnn._src.model import _scores
except ImportError:  # older commits: H_c(x) compiles in the first call instead
    _scores = None

from .common import DATASETS, K, Benchmark, GraphCache, accuracy, block, interleaved_best, problem, skip_unless, warm_query


class Predict(GraphCache, Benchmark):
    param_names = ["dataset"]
    params = (DATASETS,)

    def setup(self, cache, name):
        run = problem(cache, name).runner("gnnb", "lazy")
        self.data = run.problem.data
        self.model = run.model(block(run()))
        X_test = jnp.asarray(self.data.X_test)
        warm_query(self.model.X, X_test, K)
        if _scores is not None:
            dummy = jnp.zeros((X_test.shape[0], K), jnp.int32)
            block(_scores(self.model.alpha, self.model.Y, dummy))  # compile H_c(x)

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
