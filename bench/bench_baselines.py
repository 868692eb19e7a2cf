"""jaxnn's boosted k-NN against the papers' baselines, on the same data.

Contenders (k = 10, logistic loss, defaults otherwise):

* ``jaxnn_default`` — ``jaxnn.fit(X, y, k=10)``: the fit a user gets, every
  other argument at its default (``posterior="auto"``, ``shrinkage="auto"``:
  the exact graph, one pass, and the auxiliary fit on 80 % of the data whose
  held-out scores choose the posterior's temperature, kernel term and
  shrinkage — on small data up to five of them);
* ``jaxnn_gnnb`` / ``jaxnn_unn`` / ``jaxnn_n3`` — ``jaxnn.fit(X, y, k=10,
  algorithm=…, posterior="link", shrinkage=None)``: exact graph + one pass of the default
  chooser (``posterior="auto"``, the default, would add one auxiliary fit
  on 80 % of the data);
* ``jaxnn_gnnb_fast`` (not in quick mode) — the pynndescent graph of
  :func:`_fast_fit` + two passes of the colored schedule;
* ``jaxnn_knn`` — ``baselines.knn_fit`` (plain k-NN, JAX);
* ``optax_sgd`` — ``baselines.sgd_fit`` (one-vs-rest logistic regression,
  minibatch Adam, 20 epochs);
* ``optax_svm`` — ``baselines.svm_fit(platt_folds=None)`` (linear squared-hinge
  SVM, L-BFGS; the 5-fold Platt scaling, which fits the SVM 5 more times for
  posteriors only, is left out, as LinearSVC has none);
* ``sklearn_sgd`` — ``SGDClassifier(loss="log_loss")``;
* ``sklearn_linearsvc`` — ``LinearSVC()``;
* ``sklearn_knn`` — ``KNeighborsClassifier(10, algorithm="brute")`` (its fit
  only stores the data).

Everything is measured once per ``asv run``, in one process, in
``setup_cache`` (scikit-learn asv_benchmarks' pattern): every contender is
fitted once (its compilation; the model scored for ``track_test_accuracy``),
then all of them are timed round-robin, each the same number of times
(:func:`common.interleaved_times`: ``ROUNDS`` rounds, fewer once
``ROUND_BUDGET`` seconds are spent, at least one), and a contender's fit
time is the median of its calls.  :class:`Baselines` reports
``track_test_accuracy`` and ``track_fit_seconds`` for every contender;
:class:`FitRatio` reports jaxnn GNNB's median fit time over each baseline's,
from those same rounds (``track_gnnb_fit_ratio_vs_*``; < 1: GNNB fits
faster), and the default fit's over SGD's and LinearSVC's
(``track_default_fit_ratio_vs_*``); :class:`FastFitRatio` the same for ``jaxnn_gnnb_fast`` against
``LinearSVC``; :class:`NNDescentDefaultFit` the default fit on an nndescent graph against the same
fit without the held-out choice and against ``LinearSVC``.
"""

from __future__ import annotations

import numpy as np

import jaxnn
from jaxnn import baselines as B

from .common import (
    DATASETS,
    K,
    QUICK,
    SEED,
    Benchmark,
    FirstCall,
    accuracy,
    block,
    dataset,
    four_class_points,
    interleaved_medians,
    interleaved_times,
)

JAXNN_ALGORITHMS = ("gnnb",) if QUICK else ("gnnb", "unn", "n3")
BASELINES = ("jaxnn_knn", "optax_sgd", "optax_svm", "sklearn_sgd", "sklearn_linearsvc", "sklearn_knn")
METHODS = ("jaxnn_default",) + tuple(f"jaxnn_{a}" for a in JAXNN_ALGORITHMS) + (() if QUICK else ("jaxnn_gnnb_fast",)) + BASELINES
#: contenders reported by Baselines (all are measured in setup_cache; the
#: quick mode reports three, to keep the smoke run's process count down)
REPORTED = ("jaxnn_default", "jaxnn_gnnb", "sklearn_linearsvc") if QUICK else METHODS
#: timed rounds after the warm-up call (each contender once a round) and the
#: seconds after which no new round starts (the 10⁵-point set's UNN fit alone
#: takes minutes: there, one round)
ROUNDS = 3
ROUND_BUDGET = 30.0 if QUICK else 600.0
#: rounds of :class:`NNDescentDefaultFit`: pynndescent's time varies by a fifth from fit to fit,
#: more than the held-out choice adds, so its medians need more rounds than the others'
DEFAULT_FIT_ROUNDS = 7
#: the optax SVM's L-BFGS iterations (``baselines.svm_fit``'s ``epochs``): its default (100), or 10 in
#: quick mode, whose fast-compile programs run each iteration several times slower than users' programs
SVM_EPOCHS = 10 if QUICK else None


def _fast_fit(d):
    """``jaxnn_gnnb_fast``: the fastest GNNB fit of the public API on CPU —
    ``knn_graph(method="nndescent", candidates=k + 2, n_trees=6, n_iters=3,
    n_jobs=-1)`` (a low-recall graph that costs GNNB little accuracy) +
    ``fit(..., chooser="colored", rounds=2 * m, posterior="link", shrinkage=None)``."""

    def fast():
        nb = jaxnn.knn_graph(d.X_train, K, method="nndescent", seed=SEED, candidates=K + 2, n_trees=6, n_iters=3,
                             n_jobs=-1).indices
        return block(jaxnn.fit(d.X_train, d.y_train, k=K, loss="logistic", posterior="link", shrinkage=None, neighbors=nb,
                               chooser="colored", rounds=2 * len(d.y_train)))

    return fast


def _linearsvc_fit(d):
    """``LinearSVC``'s fit on data ``d``, as a callable."""
    from sklearn.svm import LinearSVC

    return lambda: LinearSVC(random_state=SEED).fit(d.X_train, d.y_train)


def _contenders(d, fast: bool) -> dict:
    """{method: (fit callable returning a model, predict(model, X))} on data ``d``."""
    from sklearn.linear_model import SGDClassifier
    from sklearn.neighbors import KNeighborsClassifier

    out = {"jaxnn_default": (lambda: jaxnn.fit(d.X_train, d.y_train, k=K), jaxnn.predict)}
    for algorithm in JAXNN_ALGORITHMS:
        out[f"jaxnn_{algorithm}"] = (
            lambda a=algorithm: jaxnn.fit(d.X_train, d.y_train, k=K, algorithm=a, posterior="link", shrinkage=None, seed=SEED),
            jaxnn.predict,
        )
    if fast:
        out["jaxnn_gnnb_fast"] = (_fast_fit(d), jaxnn.predict)
    out["jaxnn_knn"] = (lambda: B.knn_fit(d.X_train, d.y_train, k=K), B.predict)
    out["optax_sgd"] = (lambda: B.sgd_fit(d.X_train, d.y_train, seed=SEED), B.predict)
    out["optax_svm"] = (lambda: B.svm_fit(d.X_train, d.y_train, platt_folds=None, seed=SEED, epochs=SVM_EPOCHS), B.predict)
    sk_predict = lambda est, X: est.predict(X)  # noqa: E731
    out["sklearn_sgd"] = (lambda: SGDClassifier(loss="log_loss", random_state=SEED).fit(d.X_train, d.y_train),
                          sk_predict)
    out["sklearn_linearsvc"] = (_linearsvc_fit(d), sk_predict)
    out["sklearn_knn"] = (lambda: KNeighborsClassifier(n_neighbors=K, algorithm="brute").fit(d.X_train, d.y_train),
                          sk_predict)
    return out


def _measure(name: str, fast: bool = not QUICK) -> dict:
    """{method: (median fit seconds, test accuracy)} on one data set: every
    contender fitted once (compiling; that model is scored), then all timed
    round-robin, each the same number of times."""
    d = dataset(name)
    contenders = _contenders(d, fast)
    out = {}
    for method, (fit, predict) in contenders.items():
        model = block(fit())
        out[method] = accuracy(predict(model, d.X_test), d.y_test)
    times = interleaved_times([fit for fit, _ in contenders.values()], ROUNDS, ROUND_BUDGET)
    return {method: (float(np.median(t)), out[method]) for method, t in zip(contenders, times)}


class BaselineCache:
    """Mixin: every contender fitted, scored and timed once per ``asv run``."""

    def setup_cache(self):
        return {name: _measure(name) for name in DATASETS}

    setup_cache.timeout = 3600.0

    @staticmethod
    def result(cache, name, method):
        """(median fit seconds, test accuracy); KeyError for an unknown method."""
        return cache[name][method]


class Baselines(BaselineCache, Benchmark):
    """Test accuracy and median fit time of every contender (compilation
    excluded: each is fitted once before it is timed)."""

    param_names = ["dataset", "method"]
    params = (DATASETS, REPORTED)

    def track_test_accuracy(self, cache, name, method):
        return self.result(cache, name, method)[1]

    track_test_accuracy.unit = "accuracy"

    def track_fit_seconds(self, cache, name, method):
        return self.result(cache, name, method)[0]

    track_fit_seconds.unit = "seconds"


class FitRatio(BaselineCache, Benchmark):
    """jaxnn GNNB's median fit time (graph + boosting) over the baseline's
    (``track_gnnb_fit_ratio_vs_*``), and the default fit's
    (``jaxnn.fit(X, y, k=10)``: the auxiliary fits of ``posterior="auto"`` and
    ``shrinkage="auto"`` included) over SGD's and LinearSVC's
    (``track_default_fit_ratio_vs_*``); every contender fitted once first,
    then all timed in the same round-robin rounds of one process."""

    param_names = ["dataset"]
    params = (DATASETS,)

    def _ratio(self, cache, name, baseline, contender="jaxnn_gnnb"):
        return self.result(cache, name, contender)[0] / self.result(cache, name, baseline)[0]

    def track_gnnb_fit_ratio_vs_optax_sgd(self, cache, name):
        return self._ratio(cache, name, "optax_sgd")

    def track_gnnb_fit_ratio_vs_optax_svm(self, cache, name):
        return self._ratio(cache, name, "optax_svm")

    def track_gnnb_fit_ratio_vs_sklearn_sgd(self, cache, name):
        return self._ratio(cache, name, "sklearn_sgd")

    def track_gnnb_fit_ratio_vs_sklearn_linearsvc(self, cache, name):
        return self._ratio(cache, name, "sklearn_linearsvc")

    def track_gnnb_fit_ratio_vs_sklearn_knn(self, cache, name):
        return self._ratio(cache, name, "sklearn_knn")

    def track_default_fit_ratio_vs_optax_sgd(self, cache, name):
        return self._ratio(cache, name, "optax_sgd", "jaxnn_default")

    def track_default_fit_ratio_vs_sklearn_sgd(self, cache, name):
        return self._ratio(cache, name, "sklearn_sgd", "jaxnn_default")

    def track_default_fit_ratio_vs_sklearn_linearsvc(self, cache, name):
        return self._ratio(cache, name, "sklearn_linearsvc", "jaxnn_default")

    for _f in (
        track_default_fit_ratio_vs_optax_sgd,
        track_default_fit_ratio_vs_sklearn_sgd,
        track_default_fit_ratio_vs_sklearn_linearsvc,
        track_gnnb_fit_ratio_vs_optax_sgd,
        track_gnnb_fit_ratio_vs_optax_svm,
        track_gnnb_fit_ratio_vs_sklearn_sgd,
        track_gnnb_fit_ratio_vs_sklearn_linearsvc,
        track_gnnb_fit_ratio_vs_sklearn_knn,
    ):
        _f.unit = "ratio"
    del _f


class FastFitRatio(Benchmark):
    """``jaxnn_gnnb_fast`` (nndescent graph + two colored passes) median fit
    time over ``LinearSVC``'s, both fitted once first (pynndescent's numba
    kernels and the jitted loops compile) and then timed round-robin, the
    same number of times, in one process.  Its own ``setup_cache``: the
    first nndescent call of a process compiles pynndescent's kernels for
    tens of seconds, which the other classes here do not pay."""

    param_names = ["dataset"]
    params = (DATASETS,)

    def setup_cache(self):
        return {name: self.ratio(dataset(name)) for name in DATASETS}

    @staticmethod
    def ratio(d) -> float:
        fast, svc = _fast_fit(d), _linearsvc_fit(d)
        fast(), svc()
        t_fast, t_svc = interleaved_medians([fast, svc], ROUNDS, ROUND_BUDGET)
        return t_fast / t_svc

    setup_cache.timeout = 3600.0

    def track_fast_gnnb_fit_ratio_vs_sklearn_linearsvc(self, cache, name):
        return cache[name]

    track_fast_gnnb_fit_ratio_vs_sklearn_linearsvc.unit = "ratio"


class NNDescentDefaultFit(Benchmark):
    """The default fit on an nndescent graph, ``jaxnn.fit(X, y, k=10,
    graph_method="nndescent")`` (its held-out choice of temperature,
    shrinkage and kernel term included: the auxiliary fit's graph from the
    full graph's candidate lists), against the same fit with
    ``posterior="link", shrinkage=None`` (no held-out choice) and against
    ``LinearSVC``: each fitted once first (pynndescent's numba kernels and
    the jitted loops compile), then all timed round-robin,
    :data:`DEFAULT_FIT_ROUNDS` times, in one process — median fit time ratios, and the default
    fit's test accuracy and log loss.  Its own ``setup_cache``, as
    :class:`FastFitRatio`'s."""

    param_names = ["dataset"]
    params = (DATASETS,)

    def setup_cache(self):
        return {name: self.measure(dataset(name)) for name in DATASETS}

    @staticmethod
    def measure(d) -> dict:
        fits = [lambda: block(jaxnn.fit(d.X_train, d.y_train, k=K, graph_method="nndescent", seed=SEED)),
                lambda: block(jaxnn.fit(d.X_train, d.y_train, k=K, graph_method="nndescent", seed=SEED,
                                        posterior="link", shrinkage=None)),
                _linearsvc_fit(d)]
        model = fits[0]()
        for fit in fits[1:]:
            fit()
        P = np.asarray(jaxnn.predict_proba(model, d.X_test), np.float64)
        labels = np.searchsorted(np.asarray(model.classes), d.y_test)
        t_default, t_link, t_svc = interleaved_medians(fits, DEFAULT_FIT_ROUNDS, ROUND_BUDGET)
        return {"vs_link": t_default / t_link, "vs_svc": t_default / t_svc,
                "accuracy": accuracy(jaxnn.predict(model, d.X_test), d.y_test),
                "log_loss": float(-np.mean(np.log(P[np.arange(len(labels)), labels])))}

    setup_cache.timeout = 3600.0

    def track_default_fit_ratio_vs_link_fit(self, cache, name):
        return cache[name]["vs_link"]

    def track_default_fit_ratio_vs_sklearn_linearsvc(self, cache, name):
        return cache[name]["vs_svc"]

    def track_default_test_accuracy(self, cache, name):
        return cache[name]["accuracy"]

    def track_default_test_log_loss(self, cache, name):
        return cache[name]["log_loss"]

    track_default_fit_ratio_vs_link_fit.unit = "ratio"
    track_default_fit_ratio_vs_sklearn_linearsvc.unit = "ratio"
    track_default_test_accuracy.unit = "accuracy"
    track_default_test_log_loss.unit = "nats"


class BaselineFolds(FirstCall, Benchmark):
    """Five cross-validation folds of ``baselines.sgd_fit`` and ``svm_fit``
    (Platt's 5-fold cross-fit included) in a new process.  A training set
    of at most 16384 rows trains padded to shared sizes (rows of zero
    weight, zero feature columns), so the folds, a row apart, should share
    one compiled SGD, SVM and Platt program.
    ``track_first_baseline_folds_seconds``: the first call, compilation
    included; ``track_baseline_folds_seconds``: a second call."""

    M = 503 if QUICK else 2003
    timeout = 180

    def workload(self):
        X, y = four_class_points(self.M, 16)
        folds = np.arange(self.M) % 5
        return lambda: [(B.sgd_fit(X[folds != f], y[folds != f]).W, B.svm_fit(X[folds != f], y[folds != f], epochs=SVM_EPOCHS).W)
                        for f in range(5)]

    def track_first_baseline_folds_seconds(self):
        return self.first

    def track_baseline_folds_seconds(self):
        return self.second_call_seconds()

    track_first_baseline_folds_seconds.unit = track_baseline_folds_seconds.unit = "seconds"
