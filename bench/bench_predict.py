"""Prediction: jaxnn GNNB vs scikit-learn's brute-force k-NN on the test split.

:class:`Predict` fits GNNB (logistic, lazy, one pass) from the cached graph in
``setup`` and predicts once (compiling the query search and the scores), then

* ``time_predict`` — ``jaxnn.predict(model, X_test)`` (exact 10-NN query +
  H_c(x) + argmax);
* ``track_test_accuracy`` — its accuracy;
* ``track_predict_ratio_vs_sklearn_knn`` — that time over
  ``KNeighborsClassifier(n_neighbors=10, algorithm="brute").predict(X_test)``
  (fitted on the same training set): each called once first, then the
  fastest of three calls each, interleaved in one process.

:class:`PredictFromNeighbors` predicts from the test points' neighbours found
beforehand (``jaxnn.predict(model, neighbors=nb)``: no search, only the
gather of α and the argmax): ``time_predict_from_neighbors`` and
``track_time_ratio_vs_search`` (its time over ``time_predict``'s, which
searches, interleaved) — what an external index (pynndescent, README) leaves.

:class:`PredictPruned` does the same for ``jaxnn.prune(model, theta)``
(paper 001 §4.1: per class, keep the ⌈θm⌉ examples with the largest |α|;
the model keeps the union over classes), θ ∈ {0.5, 0.1} (quick: 0.1):
``time_predict``, ``track_test_accuracy``, ``track_kept_fraction`` (the
fraction of training examples kept: between θ and min(1, C·θ), set by how
much the classes' largest |α| overlap) and ``track_time_ratio_vs_unpruned``
(pruned / full predict time, interleaved) — a pruned model searches fewer
points, so it should predict about that fraction faster.  These two time
the scoring of the boosting's α alone (one lazy GNNB pass, logistic).
"""

from __future__ import annotations

import jax.numpy as jnp

import jaxnn

from .common import (DATASETS, K, QUICK, Benchmark, GraphCache, accuracy, block, dataset, interleaved_best, problem,
                     skip_unless)

#: fractions θ of PredictPruned (θ = 1 would keep every example: the model itself)
THETAS = (0.1,) if QUICK else (0.5, 0.1)


class Predict(GraphCache, Benchmark):
    """Prediction with the model ``jaxnn.fit`` returns (defaults, the cached graph)."""

    param_names = ["dataset"]
    params = (DATASETS,)

    def setup(self, cache, name):
        self.data = d = dataset(name)
        self.model = block(jaxnn.fit(d.X_train, d.y_train, k=K, neighbors=cache[name]))
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
        knn.predict(d.X_test)  # jaxnn's predict was called in setup
        t_jaxnn, t_sklearn = interleaved_best(
            [lambda: jaxnn.predict(self.model, d.X_test), lambda: knn.predict(d.X_test)], repeat=3
        )
        return t_jaxnn / t_sklearn

    track_predict_ratio_vs_sklearn_knn.unit = "ratio"


def _warm_predict(model, X_test) -> None:
    """Compile ``jaxnn.predict(model, X_test)`` (the query search and H_c(x))
    by calling it once."""
    block(jaxnn.predict(model, X_test))


class PredictFromNeighbors(GraphCache, Benchmark):
    """Prediction from precomputed query neighbours (``neighbors=``)."""

    param_names = ["dataset"]
    params = (DATASETS,)

    def setup(self, cache, name):
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
    """Prediction by a model pruned to the ⌈θm⌉ largest |α| of each class."""

    param_names = ["dataset", "theta"]
    params = (DATASETS, THETAS)

    def setup(self, cache, name, theta):
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
        """Training examples kept / all (θ ≤ it ≤ min(1, C·θ))."""
        return self.model.X.shape[0] / self.full.X.shape[0]

    track_kept_fraction.unit = "fraction"

    def track_time_ratio_vs_unpruned(self, cache, name, theta):
        X = self.data.X_test
        t_pruned, t_full = interleaved_best(
            [lambda: jaxnn.predict(self.model, X), lambda: jaxnn.predict(self.full, X)], repeat=3
        )
        return t_pruned / t_full

    track_time_ratio_vs_unpruned.unit = "ratio"
