"""jaxnn.sklearn.BoostedKNNClassifier: scikit-learn's estimator checks, and
equality with the functional API it wraps."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import jaxnn
from jaxnn.sklearn import EXPECTED_FAILED_CHECKS, BoostedKNNClassifier

sys.path.insert(0, os.path.dirname(__file__))
from _data import assert_same_refit, cpu_devices_env  # noqa: E402

# k = 3: some checks fit on 10 points, and k must be < the number of points.  Both
# posteriors pass every check: the default "auto" (softmax(H/T), ranked like H and
# never exactly 0 or 1; the vote-mixed "auto" it replaced failed
# check_classifiers_train, check_decision_proba_consistency and
# check_classifiers_multilabel_output_format_predict_proba) and the papers' "link"
# At k = 3 check_class_weight_classifiers fails too (it passes at the default k): class
# weights reweigh the boosting risk, but a prediction still sums the leverages of its 3
# nearest prototypes, and on the check's 50 points of pure noise (cluster_std=20) weighted
# 1000 : 0.0001 about 60 % of the predictions are the heavy class, not the 87 % it asks.
AT_K3 = {"check_class_weight_classifiers": "3 neighbours' leverages outvote class weights on pure noise"}


@parametrize_with_checks(
    [BoostedKNNClassifier(k=3), BoostedKNNClassifier(k=3, posterior="link"), BoostedKNNClassifier(k=3, metric="nca")],
    expected_failed_checks=lambda est: {**EXPECTED_FAILED_CHECKS, **AT_K3},
)
@pytest.mark.slow  # scikit-learn's ~70 checks, each fitting anew
def test_sklearn_estimator_checks(estimator, check, every_sklearn_check):
    check(estimator)


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(240, n_features=3, centers=4, cluster_std=2.0, random_state=0)
    return X[:180], y[:180], X[180:], y[180:]


@pytest.mark.parametrize("posterior", ["link", "auto"])
def test_equals_the_functional_api(blobs, posterior):
    X, y, Xt, _ = blobs
    est = BoostedKNNClassifier(k=5, algorithm="n3", chooser="random", seed=3, posterior=posterior).fit(X, y)
    model = jaxnn.fit(X, y, k=5, algorithm="n3", chooser="random", seed=3, posterior=posterior)
    np.testing.assert_array_equal(np.asarray(est.model_.alpha), np.asarray(model.alpha))
    np.testing.assert_array_equal(est.predict(Xt), jaxnn.predict(model, Xt))
    np.testing.assert_allclose(est.predict_proba(Xt), np.asarray(jaxnn.predict_proba(model, Xt)), rtol=1e-6)
    np.testing.assert_allclose(est.decision_function(Xt), np.asarray(jaxnn.decision_function(model, Xt)), rtol=1e-6)
    np.testing.assert_array_equal(est.classes_, np.unique(y))
    assert est.n_features_in_ == 3


def test_binary_decision_function_is_the_margin_of_class_1(blobs):
    X, y, Xt, _ = blobs
    yb = np.where(y == 1, "one", "other")
    est = BoostedKNNClassifier(k=5).fit(X, yb)
    H = np.asarray(jaxnn.decision_function(est.model_, Xt))
    d = est.decision_function(Xt)
    assert d.shape == (len(Xt),)
    np.testing.assert_allclose(d, H[:, 1] - H[:, 0], rtol=1e-6)
    np.testing.assert_array_equal(est.predict(Xt), est.classes_[(d > 0).astype(int)])
    assert est.predict(Xt).dtype == yb.dtype  # string labels come back as given


@pytest.mark.slow
def test_pipeline_and_grid_search(blobs):
    X, y, Xt, yt = blobs
    pipe = make_pipeline(StandardScaler(), BoostedKNNClassifier())
    params = {"boostedknnclassifier__k": [3, 7], "boostedknnclassifier__loss": ["logistic", "matsushita"]}
    grid = GridSearchCV(pipe, params, cv=2)
    grid.fit(X, y)
    assert grid.best_params_["boostedknnclassifier__k"] in (3, 7)
    import joblib

    with joblib.parallel_config(backend="threading"):  # two fits at once in this process: the serial scores
        threads = GridSearchCV(pipe, params, cv=2, n_jobs=2).fit(X, y)
    for key in ("split0_test_score", "split1_test_score"):
        np.testing.assert_array_equal(threads.cv_results_[key], grid.cv_results_[key])
    assert threads.best_params_ == grid.best_params_
    knn = jaxnn.baselines.knn_fit(StandardScaler().fit(X).transform(X), y, k=grid.best_params_["boostedknnclassifier__k"])
    plain = np.mean(jaxnn.baselines.predict(knn, StandardScaler().fit(X).transform(Xt)) == yt)
    assert grid.score(Xt, yt) >= plain - 0.05  # boosting keeps k-NN's accuracy on easy blobs


def test_multilabel(blobs):
    X, y, Xt, _ = blobs
    Y = np.stack([y == 0, y == 1, (y == 1) | (y == 2)], axis=1).astype(int)
    est = BoostedKNNClassifier(k=5).fit(X, Y)
    np.testing.assert_array_equal(est.classes_, np.arange(3))
    pred, proba = est.predict(Xt), est.predict_proba(Xt)
    assert pred.shape == proba.shape == (len(Xt), 3)
    assert set(np.unique(pred)) <= {0, 1}
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_array_equal(pred, jaxnn.predict(est.model_, Xt))


def test_multilabel_proba_and_predict_are_the_functional_ones(blobs):
    # multilabel columns are separate posteriors (no row renormalisation), and a
    # label is on only where H > 0 (rounds=1 leaves many H = 0 exactly)
    X, y, Xt, _ = blobs
    Y = np.stack([y == 0, y == 1, (y == 1) | (y == 2)], axis=1).astype(int)
    est = BoostedKNNClassifier(k=5).fit(X, Y)
    np.testing.assert_allclose(est.predict_proba(Xt), np.asarray(jaxnn.predict_proba(est.model_, Xt)), rtol=1e-6)
    est1 = BoostedKNNClassifier(k=5, rounds=1, shrinkage=None).fit(X, Y)
    assert np.sum(np.asarray(jaxnn.decision_function(est1.model_, Xt)) == 0) > 0
    np.testing.assert_array_equal(est1.predict(Xt), np.asarray(jaxnn.predict(est1.model_, Xt)))


def test_multilabel_in_plus_minus_one_predicts_plus_minus_one(blobs):
    X, y, Xt, _ = blobs
    Y01 = np.stack([y == 0, y == 1, (y == 1) | (y == 2)], axis=1).astype(int)
    est01, estpm = BoostedKNNClassifier(k=5).fit(X, Y01), BoostedKNNClassifier(k=5).fit(X, 2 * Y01 - 1)
    np.testing.assert_array_equal(estpm.predict(Xt), 2 * est01.predict(Xt) - 1)
    assert estpm.score(X, 2 * Y01 - 1) == est01.score(X, Y01) > 0.5


def test_multilabel_values_other_than_indicators_are_refused_and_sparse_y_is_read(blobs):
    # scikit-learn calls any two-valued matrix an indicator: {0, 2} was read as 0/1
    # (predict then answered 0/1, score on its own y 0.10); a sparse y raised
    # "setting an array element with a sequence"
    from scipy.sparse import csr_matrix

    X, y, Xt, _ = blobs
    Y = np.stack([y == 0, y == 1, (y == 1) | (y == 2)], axis=1).astype(int)
    for bad in (2 * Y, np.where(Y > 0, 2, -1), Y + 1):
        with pytest.raises(ValueError, match="0/1 or -1/\\+1 values"):
            BoostedKNNClassifier(k=5).fit(X, bad)
    dense = BoostedKNNClassifier(k=5).fit(X, Y)
    np.testing.assert_array_equal(BoostedKNNClassifier(k=5).fit(X, csr_matrix(Y)).predict(Xt), dense.predict(Xt))


def test_refits_leave_nothing_stale(blobs):
    X, y, Xt, _ = blobs
    est = BoostedKNNClassifier(k=5, trace=True).fit(X, y)
    before = est.predict(Xt)
    with pytest.raises(ValueError, match="k must be <"):  # a failed refit keeps the previous fit whole
        est.fit(X[:5], np.array(["a", "b", "c", "a", "b"]))
    np.testing.assert_array_equal(est.predict(Xt), before)
    with pytest.raises(ValueError, match="k must be <"):  # also the number of features it was fit on
        est.fit(X[:5, :2], np.array(["a", "b", "c", "a", "b"]))
    np.testing.assert_array_equal(est.predict(Xt), before)
    est.set_params(trace=False).fit(X, y)
    assert est.model_.trace is None and not hasattr(est, "trace_")


def test_predict_proba_rows_sum_to_one_in_float64(blobs):
    # rows normalised in float32 missed 1 by up to 1.1e-7: log_loss warned "do not sum to one"
    import warnings

    from sklearn.metrics import log_loss

    X, y, Xt, yt = blobs
    for posterior in ("link", "votes", "auto"):
        P = BoostedKNNClassifier(k=5, posterior=posterior).fit(X, y).predict_proba(Xt)
        assert P.dtype == np.float64 and np.abs(P.sum(axis=1) - 1).max() <= 4e-16
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            log_loss(yt, P, labels=np.unique(y))


def test_fit_passes_epsilon_rounds_and_devices_on(blobs):
    X, y, _, _ = blobs
    est = BoostedKNNClassifier(k=5, epsilon=0.1, rounds=20).fit(X, y)
    model = jaxnn.fit(X, y, k=5, epsilon=0.1, rounds=20, posterior="link")
    assert_same_refit(np.asarray(est.model_.alpha), np.asarray(model.alpha))
    with pytest.raises(ValueError, match="devices"):
        BoostedKNNClassifier(k=5, devices="bogus").fit(X, y)


def test_failed_first_fit_leaves_no_n_features_in(blobs):
    X, y, _, _ = blobs
    est = BoostedKNNClassifier(k=50)
    with pytest.raises(ValueError, match="k must be <"):
        est.fit(X[:20], y[:20])
    assert not hasattr(est, "n_features_in_") and not hasattr(est, "model_")


def test_string_options_must_be_strings(blobs):
    X, y, _, _ = blobs
    for name in ("chooser", "posterior", "graph_method"):
        with pytest.raises(TypeError, match=f"{name} must be a str"):
            BoostedKNNClassifier(k=5, **{name: np.array(["lazy", "random"])}).fit(X, y)
    with pytest.raises(TypeError, match="integer"):
        jaxnn.fit(X, y, k=3, neighbors=jaxnn.Neighbors([[1.5]] * len(X), None))


def test_precomputed_neighbors_and_trace(blobs):
    X, y, Xt, _ = blobs
    nb = np.asarray(jaxnn.knn_graph(X, 5).indices)
    est = BoostedKNNClassifier(k=5, trace=True).fit(X, y, neighbors=nb)
    model = jaxnn.fit(X, y, k=5, neighbors=nb, trace=True, posterior="link")
    assert_same_refit(np.asarray(est.model_.alpha), np.asarray(model.alpha))
    np.testing.assert_array_equal(est.trace_, np.asarray(model.trace))  # a risk a step: m (lazy), or colours
    assert est.trace_.ndim == 1 and est.trace_.size > 1
    assert np.all(np.diff(est.trace_) <= 1e-6)  # GNNB never increases the surrogate risk


def test_pickle_round_trip(blobs):
    X, y, Xt, _ = blobs
    est = BoostedKNNClassifier(k=5, loss="phi_mu(0.25)").fit(X, y)
    back = pickle.loads(pickle.dumps(est))
    assert back.model_.loss is est.model_.loss  # the cached catalogue loss: nothing retraces
    np.testing.assert_array_equal(back.predict(Xt), est.predict(Xt))
    np.testing.assert_array_equal(back.predict_proba(Xt), est.predict_proba(Xt))


def test_custom_loss_pickling_names_the_loss(blobs):
    X, y, _, _ = blobs
    loss = jaxnn.losses.from_phi(lambda p: -jnp.sqrt(p * (1.0 - p)), name="my_phi")
    est = BoostedKNNClassifier(k=5, loss=loss).fit(X, y)
    with pytest.raises(pickle.PicklingError, match="my_phi"):
        pickle.dumps(est)


def test_custom_loss_clones_and_cross_validates(blobs):
    # clone deep-copies every parameter; a from_phi loss went through pickling and raised
    from sklearn.model_selection import cross_val_score

    X, y, _, _ = blobs
    loss = jaxnn.losses.from_phi(lambda p: -jnp.sqrt(p * (1.0 - p)), name="my_phi")
    est = BoostedKNNClassifier(k=5, loss=loss)
    assert clone(est).loss is loss
    assert cross_val_score(est, X, y, cv=2).mean() > 0.5


def test_clone_keeps_parameters_and_drops_the_fit(blobs):
    X, y, _, _ = blobs
    est = BoostedKNNClassifier(k=4, epsilon=0.3, chooser="colored").fit(X, y)
    twin = clone(est)
    assert twin.get_params() == est.get_params()
    assert not hasattr(twin, "model_")


# Pickles an estimator fit on forced host devices 2 and 3 (of 4) and checks,
# in that process, that clone / deepcopy / pickle give back the same devices
# and that GridSearchCV (which clones) runs with them.
_DEVICE_LIST_SCRIPT = """
import copy, pickle, sys
import jax, numpy as np
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from jaxnn.sklearn import BoostedKNNClassifier
X = np.random.default_rng(0).normal(size=(90, 3)); y = np.arange(90) % 3
devs = jax.devices()[2:4]
est = BoostedKNNClassifier(k=5, devices=devs, posterior="link", shrinkage=None).fit(X, y)  # no held-out fits
for twin in (clone(est), copy.deepcopy(est), pickle.loads(pickle.dumps(est))):
    assert twin.devices == devs and twin.devices is not devs and all(a is b for a, b in zip(twin.devices, devs)), twin.devices
assert est.devices is devs  # pickling did not touch the original
np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict(X), est.predict(X))
assert GridSearchCV(est, {"k": [3, 5]}, cv=2).fit(X, y).best_estimator_.devices == devs
sys.stdout.buffer.write(pickle.dumps(est))
"""


def test_a_device_list_clones_and_pickles():
    """jax.Device objects neither deep-copy nor pickle: clone passes them on,
    pickling stores (platform, id) and finds the devices again; loaded where
    they are missing, the estimator warns, predicts, and refuses to refit."""
    proc = subprocess.run([sys.executable, "-c", _DEVICE_LIST_SCRIPT], env=cpu_devices_env(4), capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    X = np.random.default_rng(0).normal(size=(90, 3))
    with pytest.warns(UserWarning, match=r"devices \['cpu:2', 'cpu:3'\] that this process does not have"):
        est = pickle.loads(proc.stdout)  # this process has one CPU device
    assert est.predict(X).shape == (90,)
    with pytest.raises(ValueError, match=r"devices \['cpu:2', 'cpu:3'\] \(from a pickled estimator\)"):
        est.fit(X, np.arange(90) % 3)
    est.set_params(devices=None).fit(X, np.arange(90) % 3)


def test_bad_inputs_raise_clear_errors(blobs):
    X, y, Xt, _ = blobs
    with pytest.raises(NotFittedError):
        BoostedKNNClassifier().predict(Xt)
    est = BoostedKNNClassifier(k=5).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(Xt[:, :2])
    with pytest.raises(ValueError, match="k must be < the number of training points"):
        BoostedKNNClassifier(k=50).fit(X[:20], y[:20])
    with pytest.raises(ValueError, match="Unknown label type"):
        BoostedKNNClassifier().fit(X, X[:, 0])
    with pytest.raises(ValueError, match="unknown loss"):
        BoostedKNNClassifier(loss="hinge").fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        BoostedKNNClassifier().fit(np.where(X > 3, np.nan, X), y)


def test_import_jaxnn_does_not_import_sklearn():
    code = "import sys, jaxnn; assert 'sklearn' not in sys.modules, 'jaxnn imported scikit-learn'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_estimator_predictions_compile_nothing_per_batch_size(compilations):
    """The estimator's answers are NumPy: it drops the query padding on the
    host, so batches of 1 … 128 rows compile nothing after the first (not
    even a slice), and give the full batch's rows."""
    from jaxnn._src import prediction as predict_mod
    from jaxnn._src import search as search_mod
    from jaxnn._src.sklearn import BoostedKNNClassifier

    rng = np.random.default_rng(6)
    X, y = rng.normal(size=(120, 3)), rng.integers(0, 3, 120)
    est = BoostedKNNClassifier(k=5).fit(X, y)
    Xq = X[:128 - 8] + 0.1
    watched = (search_mod.conditioned_search, predict_mod._rule)
    with compilations(*watched):  # compiled anew, for the first batch
        full = (est.predict_proba(Xq), est.decision_function(Xq), est.predict(Xq))
    with compilations() as compiled:
        for n in (1, 33, 119):
            np.testing.assert_allclose(est.predict_proba(Xq[:n]), full[0][:n], rtol=1e-6)
            np.testing.assert_allclose(est.decision_function(Xq[:n]), full[1][:n], rtol=1e-6, atol=1e-6)
            np.testing.assert_array_equal(est.predict(Xq[:n]), full[2][:n])
    assert compiled.of(*watched) == []
    assert compiled == [], compiled  # nothing at all (the slice of shared_sizes.first_rows was one a size)
