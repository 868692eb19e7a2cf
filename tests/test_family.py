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
from jaxnn._src import persist
from jaxnn._src.experiments import intrinsic_geometry as geometry_mod

sys.path.insert(0, os.path.dirname(__file__))
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


def test_a_family_file_with_a_wrong_field_is_refused(models, tmp_path):
    path = tmp_path / "uls.jaxnn"
    jaxnn.save(models["uls"], path)
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    meta = json.loads(str(np.load(io.BytesIO(entries["__jaxnn__.npy"]))))
    meta["model"]["fields"]["n_features"] = 0
    buf = io.BytesIO()
    np.save(buf, np.asarray(json.dumps(meta)))
    entries["__jaxnn__.npy"] = buf.getvalue()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    with pytest.raises(jaxnn.ModelFileError, match="n_features"):
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


def test_a_tree_of_frequency_leaves_predicts_its_leaves_frequencies(models, wine):
    X, _ = wine
    tree = models["udt"]
    H = np.asarray(jaxnn.decision_function(tree, X))
    assert np.all((H >= 0) & (H <= 1))  # leaves="posterior": the scores are the leaves' class frequencies
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(tree, X)), H / H.sum(axis=1, keepdims=True), rtol=1e-6)


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
def test_the_family_estimators_pass_scikit_learns_checks(name):
    sk = _sklearn()
    from sklearn.utils.estimator_checks import check_estimator

    est = getattr(sk, name)(**({"rounds": 10} if name == "ULSClassifier" else {}))
    expected = sk.ULS_EXPECTED_FAILED_CHECKS if name == "ULSClassifier" else {}
    results = check_estimator(est, on_fail=None, expected_failed_checks=expected)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed, failed
    assert {r["check_name"] for r in results if r["status"] == "xfail"} == set(expected)


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
