"""Paper 004's family as users meet it: ULS, UDT and OLS models through the
one prediction API, saved and loaded, pickled, behind scikit-learn's
interface, on the command line, and in ``jaxnn experiment geometry``."""

from __future__ import annotations

import io
import json
import os
import pickle
import sys
import zipfile

import numpy as np
import pytest

import jaxnn
from jaxnn import experiments
from jaxnn._src import family, persist
from jaxnn._src.inputs import encode_labels
from jaxnn._src.experiments import intrinsic_geometry as geometry_mod

sys.path.insert(0, os.path.dirname(__file__))
import reference  # noqa: E402
from _cli import assert_refused, run, write_csv  # noqa: E402


@pytest.fixture(scope="module")
def wine():
    X, y = jaxnn.datasets.load("wine")
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X.astype(np.float32), y


@pytest.fixture(scope="module")
def models(wine):
    X, y = wine
    return {"uls": jaxnn.uls(X, y, rounds=10), "udt": jaxnn.udt(X, y, max_depth=4, loss="matsushita"),
            "ols": jaxnn.ols(X, y, passes=2)}


KINDS = ("uls", "udt", "ols")


def _answers(model, X):
    return (np.asarray(jaxnn.predict(model, X)), np.asarray(jaxnn.predict_proba(model, X)),
            np.asarray(jaxnn.decision_function(model, X)))


@pytest.mark.parametrize("kind", KINDS)
def test_the_one_prediction_api_answers_for_every_member(models, wine, kind):
    X, y = wine
    model = models[kind]
    labels, P, H = _answers(model, X)
    assert H.shape == P.shape == (len(y), 3) and labels.shape == (len(y),)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-5)
    assert np.all((P >= 0) & (P <= 1))
    np.testing.assert_array_equal(labels, np.asarray(model.classes)[np.argmax(H, axis=1)])
    np.testing.assert_array_equal(np.argmax(P, axis=1), np.argmax(H, axis=1))
    assert np.mean(labels == y) > 0.9  # wine is easy: each member learns it


@pytest.mark.parametrize("kind", KINDS)
def test_save_and_load_give_back_the_model_bitwise(models, wine, kind, tmp_path):
    X, _ = wine
    model = models[kind]
    path = tmp_path / f"{kind}.jaxnn"
    jaxnn.save(model, path)
    with zipfile.ZipFile(path) as archive, archive.open("__jaxnn__.npy") as fh:
        meta = json.loads(str(np.load(fh)))
    assert meta["kind"] == type(model).__name__ and meta["format_version"] == persist.FORMAT_VERSION
    back = jaxnn.load(path)
    assert type(back) is type(model) and back.loss is model.loss and back.classes == model.classes
    for before, after in zip(_answers(model, X), _answers(back, X)):
        np.testing.assert_array_equal(before, after)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(np.asarray(jaxnn.decision_function(again, X)), _answers(model, X)[2])


def test_a_class_of_the_same_name_elsewhere_does_not_change_what_a_file_loads(models, tmp_path):
    import dataclasses

    from jaxnn._src.family import FamilyModel

    dataclasses.make_dataclass("ULSModel", [], bases=(FamilyModel,), frozen=True)  # a user's own, say
    jaxnn.save(models["uls"], tmp_path / "uls.jaxnn")
    assert type(jaxnn.load(tmp_path / "uls.jaxnn")) is jaxnn.ULSModel


@pytest.mark.parametrize("field, value", [("n_features", 0), ("temperature", -1.0)])
def test_a_family_file_with_a_wrong_field_is_refused(models, tmp_path, field, value):
    path = tmp_path / "uls.jaxnn"
    jaxnn.save(models["uls"], path)
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    meta = json.loads(str(np.load(io.BytesIO(entries["__jaxnn__.npy"]))))
    meta["model"]["fields"][field] = value
    buf = io.BytesIO()
    np.save(buf, np.asarray(json.dumps(meta)))
    entries["__jaxnn__.npy"] = buf.getvalue()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    with pytest.raises(jaxnn.ModelFileError, match=field):
        jaxnn.load(path)


@pytest.mark.parametrize("kind", KINDS)
def test_prediction_refuses_what_a_family_model_cannot_take(models, wine, kind):
    X, _ = wine
    model = models[kind]
    with pytest.raises(TypeError, match="neighbors="):
        jaxnn.predict(model, X, neighbors=np.zeros((len(X), 3), np.int32))
    with pytest.raises(TypeError, match="query points X"):
        jaxnn.predict_proba(model)
    with pytest.raises(ValueError, match=r"X has 12 features.*13"):
        jaxnn.decision_function(model, X[:, :12])
    with pytest.raises(ValueError, match="X contains NaN"):
        jaxnn.predict(model, np.full((2, 13), np.nan))


def test_a_tree_of_frequency_leaves_predicts_its_leaves_frequencies(wine):
    X, y = wine
    tree = jaxnn.udt(X, y, max_depth=4, loss="matsushita", posterior="link")
    H = np.asarray(jaxnn.decision_function(tree, X))
    assert np.all((H >= 0) & (H <= 1))  # leaves="posterior": the scores are the leaves' class frequencies
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(tree, X)), H / H.sum(axis=1, keepdims=True), rtol=1e-6)


# --------------------------------------------------------------------------
# calibrated posteriors (posterior="auto")
# --------------------------------------------------------------------------


def _log_loss(S, y_codes, T, multilabel=False, Y=None):
    """Mean log loss of reference.calibrated_posteriors(S, T) (float64)."""
    top = None if multilabel else np.argmax(S, axis=1)
    P = reference.calibrated_posteriors(S, T, top=top, multilabel=multilabel)
    if multilabel:
        return -np.mean(np.sum(np.where(Y > 0, np.log(P), np.log1p(-P)), axis=1))
    return -np.mean(np.log(P[np.arange(len(y_codes)), y_codes]))


def _assert_least_log_loss(T, S, y_codes, **kw):
    """T is a (local) least of the held-out log loss: 5 % either way costs more."""
    assert T is not None and T > 0
    at = _log_loss(S, y_codes, T, **kw)
    assert at <= min(_log_loss(S, y_codes, T * 0.95, **kw), _log_loss(S, y_codes, T * 1.05, **kw)) + 1e-9


def _held_out(y):
    classes, Y, multilabel = encode_labels(y, len(y))
    train, held = family.held_out_split(Y, multilabel, 0)
    return train, held, np.searchsorted(np.asarray(classes), y)


def test_a_calibrated_tree_takes_the_temperature_of_least_held_out_log_loss(wine):
    """UDT: a tree grown on 80 % of each class (posterior="link") scores the
    rest; T minimises the log loss of softmax((2p − 1)/T) there, and the
    tree grown on all the data answers with those posteriors at T."""
    X, y = wine
    model = jaxnn.udt(X, y, max_depth=3)
    train, held, codes = _held_out(y)
    first = jaxnn.udt(X[train], y[train], max_depth=3, posterior="link")
    S = 2.0 * np.asarray(jaxnn.decision_function(first, X[held]), np.float64) - 1.0
    _assert_least_log_loss(model.temperature, S, codes[held])
    S_all = 2.0 * np.asarray(jaxnn.decision_function(model, X), np.float64) - 1.0
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(model, X)),
                               reference.calibrated_posteriors(S_all, model.temperature, top=np.argmax(S_all, 1)),
                               rtol=1e-5, atol=1e-7)
    link = jaxnn.udt(X, y, max_depth=3, posterior="link")
    assert link.temperature is None
    np.testing.assert_array_equal(jaxnn.predict(link, X), jaxnn.predict(model, X))


def test_a_calibrated_uls_model_takes_the_temperature_of_least_held_out_log_loss(wine):
    """ULS with rounds given: one more fit on 80 % of each class scores the
    rest; T minimises the log loss of softmax(H/T) there."""
    X, y = wine
    model = jaxnn.uls(X, y, rounds=5)
    train, held, codes = _held_out(y)
    first = jaxnn.uls(X[train], y[train], rounds=5, posterior="link")
    S = np.asarray(jaxnn.decision_function(first, X[held]), np.float64)
    _assert_least_log_loss(model.temperature, S, codes[held])
    np.testing.assert_array_equal(jaxnn.predict(jaxnn.uls(X, y, rounds=5, posterior="link"), X),
                                  jaxnn.predict(model, X))


def test_a_calibrated_ols_model_takes_the_temperature_of_its_first_pass_last_scores(wine):
    """OLS: each of the first pass's last 20 % of examples scored by the
    stream's state before its own update (ols_update replayed example by
    example in ols's order); T minimises their log loss, and ols_update
    keeps it."""
    X, y = wine
    model = jaxnn.ols(X, y, seed=3)
    codes = np.searchsorted(np.asarray(model.classes), y)
    order = np.random.default_rng(3).permutation(len(y))
    held = len(y) - int(family.HOLDOUT * len(y))
    state = jaxnn.ols_update(jaxnn.ols_init(X.shape[1], model.classes), X[order[:held]], y[order[:held]])
    S = []
    for i in order[held:]:
        S.append(np.asarray(jaxnn.decision_function(state, X[i:i + 1]), np.float64)[0])
        state = jaxnn.ols_update(state, X[i:i + 1], y[i:i + 1])
    _assert_least_log_loss(model.temperature, np.stack(S), codes[order[held:]])
    assert jaxnn.ols_update(model, X[:5], y[:5]).temperature == model.temperature
    assert jaxnn.ols_init(X.shape[1], model.classes).temperature is None


def test_a_multilabel_member_calibrates_each_label():
    X, Y = _multilabel_points()
    model = jaxnn.udt(X, Y, max_depth=3)
    P, labels = np.asarray(jaxnn.predict_proba(model, X)), np.asarray(jaxnn.predict(model, X))
    assert model.temperature > 0 and P.shape == Y.shape
    np.testing.assert_array_equal(labels, np.asarray(jaxnn.predict(jaxnn.udt(X, Y, max_depth=3, posterior="link"), X)))
    np.testing.assert_array_equal(labels, (P > 0.5).astype(labels.dtype))


def _multilabel_points():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4)).astype(np.float32)
    Y = np.stack([X[:, 0] + 0.5 * rng.normal(size=300) > 0, X[:, 1] - X[:, 2] > 0.3], axis=1).astype(int)
    return X, Y


@pytest.mark.parametrize("kind", KINDS)
def test_calibration_lowers_the_test_log_loss(kind):
    """On wdbc (a stratified 70/30 split), every member's default posteriors
    have a lower test log loss than its link's: a tree's pure leaves and a
    boosted or on-line score's overconfidence are what T corrects."""
    from sklearn.model_selection import train_test_split

    X, y = jaxnn.datasets.load("wdbc")
    X = ((X - X.mean(0)) / X.std(0)).astype(np.float32)
    Xa, Xb, ya, yb = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    fit = {"uls": lambda **kw: jaxnn.uls(Xa, ya, rounds=50, **kw),
           "udt": lambda **kw: jaxnn.udt(Xa, ya, max_depth=4, **kw),
           "ols": lambda **kw: jaxnn.ols(Xa, ya, **kw)}[kind]
    losses = {}
    for posterior in ("auto", "link"):
        P = np.clip(np.asarray(jaxnn.predict_proba(fit(posterior=posterior), Xb), np.float64), 1e-15, 1.0)
        losses[posterior] = -np.mean(np.log(P[np.arange(len(yb)), np.searchsorted(np.unique(y), yb)]))
    assert losses["auto"] < losses["link"], losses


# --------------------------------------------------------------------------
# scikit-learn
# --------------------------------------------------------------------------


def _sklearn():
    import jaxnn.sklearn

    return jaxnn.sklearn


def test_the_estimators_equal_the_functions_they_wrap(models, wine):
    sk = _sklearn()
    X, y = wine
    for est, model in ((sk.ULSClassifier(rounds=10), models["uls"]),
                       (sk.UDTClassifier(max_depth=4, loss="matsushita"), models["udt"]),
                       (sk.OLSClassifier(passes=2), models["ols"])):
        est.fit(X, y)
        np.testing.assert_array_equal(est.predict(X), jaxnn.predict(model, X))
        np.testing.assert_allclose(est.predict_proba(X), np.asarray(jaxnn.predict_proba(model, X)), rtol=1e-5,
                                   atol=1e-6)
        assert est.n_features_in_ == 13 and list(est.classes_) == [1, 2, 3]


def test_partial_fit_is_the_stream_of_ols_update(wine):
    sk = _sklearn()
    X, y = wine
    est = sk.OLSClassifier()
    with pytest.raises(ValueError, match="classes must be given"):
        est.partial_fit(X[:50], y[:50])
    est.partial_fit(X[:50], y[:50], classes=[1, 2, 3]).partial_fit(X[50:], y[50:])
    state = jaxnn.ols_update(jaxnn.ols_update(jaxnn.ols_init(13, (1, 2, 3)), X[:50], y[:50]), X[50:], y[50:])
    np.testing.assert_array_equal(np.asarray(est.model_.w), np.asarray(state.w))
    before = est.model_
    with pytest.raises(ValueError, match="y_batch"):
        est.partial_fit(X[:5], np.array([1, 2, 3, 9, 1]))  # a label the stream does not hold
    assert est.model_ is before


@pytest.mark.slow  # scikit-learn's ~60 checks, each fitting anew
@pytest.mark.parametrize("name", ["UDTClassifier", "OLSClassifier", "ULSClassifier"])
def test_the_family_estimators_pass_scikit_learns_checks(name, every_sklearn_check):
    sk = _sklearn()
    from sklearn.utils.estimator_checks import check_estimator

    est = getattr(sk, name)(**({"rounds": 10} if name == "ULSClassifier" else {}))
    expected = sk.ULS_EXPECTED_FAILED_CHECKS if name == "ULSClassifier" else {}
    results = check_estimator(est, on_fail=None, expected_failed_checks=expected)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed, failed
    assert {r["check_name"] for r in results if r["status"] == "xfail"} == set(expected)
    assert not [r["check_name"] for r in results if r["status"] == "skipped"]


# --------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wine_csv(tmp_path_factory, wine):
    X, y = wine
    folder = tmp_path_factory.mktemp("family-cli")
    names = np.array(["barolo", "grignolino", "barbera"])
    return write_csv(folder / "wine.csv", [f"x{j}" for j in range(13)] + ["cultivar"],
                     [[f"{v:.6f}" for v in row] + [names[label - 1]] for row, label in zip(X, y)]), folder


@pytest.mark.parametrize("model, options", [("udt", ["--max-depth", "3", "--loss", "logistic"]),
                                            ("uls", ["--rounds", "5", "--weak", "rules,linear"]),
                                            ("ols", [])])
def test_the_command_line_fits_predicts_and_evaluates_each_member(wine_csv, model, options):
    data, folder = wine_csv
    out = str(folder / f"{model}.jaxnn")
    status, stdout, stderr = run(["fit", data, "--target", "cultivar", "--model", model, *options, "-o", out])
    assert status == 0, stderr
    assert "training accuracy" in stdout
    assert type(jaxnn.load(out)).__name__ == {"udt": "UDTModel", "uls": "ULSModel", "ols": "OLSModel"}[model]
    status, stdout, stderr = run(["predict", out, data])
    assert status == 0, stderr
    assert stdout.splitlines()[0] == "cultivar" and set(stdout.splitlines()[1:]) <= {"barolo", "grignolino", "barbera"}
    status, stdout, stderr = run(["evaluate", out, data])
    assert status == 0 and "accuracy" in stdout, stderr


def test_the_command_line_refuses_options_a_model_does_not_take(wine_csv, tmp_path, capsys):
    data, _ = wine_csv
    out = str(tmp_path / "m.jaxnn")
    assert_refused(["fit", data, "--target", "cultivar", "--model", "udt", "--chooser", "lazy", "-o", out], capsys,
                   "--chooser", "--model udt")
    assert_refused(["fit", data, "--target", "cultivar", "--weak", "rules", "-o", out], capsys, "--weak", "uls")
    assert_refused(["fit", data, "--target", "cultivar", "--model", "ols", "--loss", "auto", "-o", out], capsys,
                   "--loss")
    assert not os.path.exists(out)


# --------------------------------------------------------------------------
# jaxnn experiment geometry
# --------------------------------------------------------------------------


def test_the_geometry_summary_ranks_and_counts_wins_as_defined():
    """Three algorithms on two domains, four folds: a is best on both (every
    fold), b and c tie on the first domain and c beats b on the second."""
    a = [[0.1, 0.1, 0.2, 0.1], [0.0, 0.1, 0.0, 0.1]]
    b = [[0.3, 0.4, 0.3, 0.5], [0.5, 0.6, 0.5, 0.7]]
    c = [[0.3, 0.4, 0.3, 0.5], [0.2, 0.3, 0.2, 0.3]]
    s = geometry_mod.summary(np.array([a, b, c]))
    np.testing.assert_allclose(s["rank"], [1.0, (2.5 + 3) / 2, (2.5 + 2) / 2])
    np.testing.assert_allclose(s["error"], [np.mean(a), np.mean(b), np.mean(c)])
    np.testing.assert_array_equal(s["first"], [2, 0, 0])
    np.testing.assert_allclose(s["beats"], [2.0, 0.0, 0.5])  # c beats b on one domain of two


@pytest.mark.slow  # every contender of §7 (ULS variants, UDT, OLS, references) on two folds of iris
def test_the_geometry_experiment_runs_every_contender(tmp_path):
    out = io.StringIO()
    result = experiments.run("geometry", quick=True, domains=("iris",), folds=2, progress=False, out=out)
    assert result.failures == []
    for group in result.groups:
        errors = result.errors[group]
        assert errors.shape == (len(result.names[group]), 1, 2) and np.all((errors >= 0) & (errors <= 0.5))
        assert set(geometry_mod.REFERENCES) <= set(result.names[group])
    assert set(result.groups) == {"ULS rules l=2 r=10", "UDT", "OLS"}
    text = out.getvalue()
    for name in ("AdaBoost", "F*", "E2", "CART", "SGDClassifier", "RBF-SVM", "mean rank"):
        assert name in text
    paths = experiments.plot_geometry(result, tmp_path)
    assert len(paths) == 3 and all(os.path.getsize(p) > 0 for p in paths)
