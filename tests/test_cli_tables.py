"""The command line's table preparation (``jaxnn fit --scale --impute
--categorical``) and its Python route, :mod:`jaxnn.tabular`: the values
fitted (against closed forms), stored in the model file, applied alike by
``predict`` and ``evaluate``; files of the first format still predicting as
before; scikit-learn's wine data at its target accuracy.

Commands run in-process (``cli.main``).  One small mixed table (a numeric
column with a hole, a text column with a hole) is fit once for the module."""

from __future__ import annotations

import csv
import io
import json
import pathlib
import shutil
import warnings

import numpy as np
import pytest

import jaxnn
from jaxnn import tabular
from jaxnn._src import cli, persist, prepare
from _cli import assert_refused, outcome, run as _run, write_csv as _write_csv  # noqa: E402

DATA = pathlib.Path(__file__).with_name("data")
COLOURS = ("blue", "green", "red")
N_ROWS = 48


def _read_csv(text):
    return list(csv.reader(io.StringIO(text)))


@pytest.fixture(scope="module", autouse=True)
def no_user_cache():
    """The CLI's own compilation cache stays off (the tests' cache, if any, is used)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JAXNN_CACHE_DIR", "")
        yield


def _mixed_columns(seed=0):
    """A table of columns (as CSV texts): size (a number in the thousands,
    row 3 missing), weight (a number near 1), colour (text, row 5 missing)
    and the class, which the colour and the weight decide."""
    rng = np.random.default_rng(seed)
    colour = np.array(COLOURS)[np.arange(N_ROWS) % 3]
    weight = rng.normal(size=N_ROWS) + (colour == "red") * 3.0
    size = 1000 + 500 * rng.normal(size=N_ROWS)  # noise on a large scale: unscaled, it would rule the distances
    label = np.where((colour == "red") | (weight > 1.5), "yes", "no")
    size_text = [f"{v:.3f}" for v in size]
    colour_text = list(colour)
    size_text[2], colour_text[4] = "NA", ""
    return {"size": size_text, "weight": [f"{v:.4f}" for v in weight], "colour": colour_text, "label": list(label)}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, no_user_cache):
    """The mixed table's CSV, ``jaxnn fit --impute median --k 5`` of it, and the fit's output."""
    folder = tmp_path_factory.mktemp("cli_tables")
    columns = _mixed_columns()
    names = list(columns)
    train = _write_csv(folder / "train.csv", names, zip(*(columns[n] for n in names)))
    model = str(folder / "mixed.jaxnn")
    status, out, err = _run(["fit", train, "--target", "label", "--impute", "median", "--k", "5", "-o", model])
    assert status == 0 and err == "", err
    return {"folder": folder, "train": train, "model": model, "columns": columns, "out": out}


# --------------------------------------------------------------------------
# fitted values against closed forms (no fit: the preparation alone)
# --------------------------------------------------------------------------
def test_standard_scaling_is_the_training_mean_and_population_deviation():
    x = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]  # mean 5, population standard deviation 2
    prep = tabular.fit_preparation({"x": x, "c": [3.0] * 8})
    np.testing.assert_array_equal(prep.center, [5.0, 3.0])
    np.testing.assert_array_equal(prep.spread, [2.0, 1.0])  # a constant column: spread 1, not 0
    np.testing.assert_allclose(tabular.apply(prep, {"x": [5.0, 9.0, 1.0], "c": [3.0, 4.0, 3.0]}),
                               [[0.0, 0.0], [2.0, 1.0], [-2.0, 0.0]], rtol=0, atol=1e-15)


def test_robust_scaling_is_the_median_and_interquartile_range():
    x = [8.0, 1.0, 7.0, 2.0, 6.0, 3.0, 5.0, 4.0]
    # linear quantiles of 1..8: q25 = 1 + 0.25·7 = 2.75, median 4.5, q75 = 1 + 0.75·7 = 6.25
    prep = tabular.fit_preparation({"x": x}, scale="robust")
    assert prep.center.tolist() == [4.5] and prep.spread.tolist() == [3.5]
    np.testing.assert_allclose(tabular.apply(prep, {"x": [4.5, 8.0]})[:, 0], [0.0, 1.0])
    none = tabular.fit_preparation({"x": x}, scale="none")
    np.testing.assert_array_equal(tabular.apply(none, {"x": x})[:, 0], x)  # exactly the values


def test_imputation_fills_the_training_median_or_most_frequent_value():
    x = ["1", "NA", "3", "3", "10", "", "2"]  # present: 1, 3, 3, 10, 2 — median 3, most frequent 3
    y = ["5", "5", "?", "7", "7", "1", "9"]  # present: 5, 5, 7, 7, 1, 9 — median 6; most frequent: 5 and 7, the smaller
    c = ["b", "a", None, "a", "b", "c", "b"]  # most frequent: b
    data = {"x": x, "y": y, "c": c}
    median = tabular.fit_preparation(data, impute="median", scale="none")
    frequent = tabular.fit_preparation(data, impute="most-frequent", scale="none")
    assert [col.fill for col in median.columns] == [3.0, 6.0, "b"]
    assert [col.fill for col in frequent.columns] == [3.0, 5.0, "b"]
    Z = tabular.apply(median, data)
    np.testing.assert_array_equal(Z[:, 0], [1, 3, 3, 3, 10, 3, 2])
    np.testing.assert_array_equal(Z[:, 1], [5, 5, 6, 7, 7, 1, 9])
    np.testing.assert_array_equal(Z[2, 2:], [0, 1, 0])  # the missing category: b
    # the fills are of the training table: a new table's holes take them too
    np.testing.assert_array_equal(tabular.apply(frequent, {"x": [None], "y": ["NaN"], "c": ["N/A"]}), [[3, 5, 0, 1, 0]])


def test_imputation_comes_before_scaling():
    prep = tabular.fit_preparation({"x": ["0", "", "4"]}, impute="median")  # filled: 0, 2, 4
    assert prep.center.tolist() == [2.0] and prep.spread.tolist() == [pytest.approx(np.sqrt(8 / 3))]


def test_text_columns_become_one_hot_features_that_are_not_scaled():
    data = {"n": [1.0, 2.0, 3.0, 4.0], "colour": ["red", "blue", "red", "green"]}
    prep = tabular.fit_preparation(data)
    assert prep.columns[1] == tabular.Column("colour", "text", None, COLOURS)
    assert prep.feature_names == ("n", "colour=blue", "colour=green", "colour=red") and prep.n_features == 4
    np.testing.assert_array_equal(prep.center[1:], 0.0)
    np.testing.assert_array_equal(prep.spread[1:], 1.0)
    Z = tabular.apply(prep, {"colour": ["green", "red"], "n": [2.5, 2.5], "other": ["x", "y"]})
    np.testing.assert_array_equal(Z, [[0, 0, 1, 0], [0, 0, 0, 1]])


def test_an_unseen_category_is_a_zero_row_and_one_warning_naming_the_column_and_count():
    prep = tabular.fit_preparation({"colour": ["red", "blue", "red"], "shape": ["o", "x", "o"]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Z = tabular.apply(prep, {"colour": ["purple", "red", "pink", "purple"], "shape": ["x", "o", "o", "x"]})
    np.testing.assert_array_equal(Z[:, :2], [[0, 0], [0, 1], [0, 0], [0, 0]])
    np.testing.assert_array_equal(Z[:, 2:], [[0, 1], [1, 0], [1, 0], [0, 1]])
    assert len(caught) == 1 and caught[0].category is tabular.UnseenCategoryWarning
    message = str(caught[0].message)
    assert "'colour'" in message and "3 rows" in message and "'purple'" in message and "'pink'" in message


def test_a_column_of_numbers_with_a_stray_text_is_an_error_not_a_category():
    data = {"x": ["1", "2", "six", "4"]}
    with pytest.raises(ValueError, match=r"column 'x', row 3: 'six' is not a number"):
        tabular.fit_preparation(data)
    prep = tabular.fit_preparation({"x": ["a", "2", "b", "c"]})  # mostly text: a text column, "2" a category
    assert prep.columns[0].categories == ("2", "a", "b", "c")


def test_a_numeric_column_given_a_text_at_prediction_is_an_error_naming_the_cell():
    prep = tabular.fit_preparation({"x": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"column 'x', row 2: 'two' is not a number"):
        tabular.apply(prep, {"x": ["1", "two"]})
    with pytest.raises(ValueError, match=r"column 'x', row 1: missing value"):  # no fill: impute="none"
        tabular.apply(prep, {"x": [None, 1.0]})
    with pytest.raises(ValueError, match=r"no column 'x'"):
        tabular.apply(prep, {"y": [1.0]})


@pytest.mark.parametrize("keyword, value", [("scale", "minmax"), ("impute", "mean"), ("categorical", "ordinal"),
                                            ("scale", None)])
def test_bad_option_values_name_the_argument(keyword, value):
    with pytest.raises((TypeError, ValueError), match=rf"\b{keyword}\b"):
        tabular.fit_preparation({"x": [1.0, 2.0]}, **{keyword: value})


def test_bad_tables_are_refused():
    with pytest.raises(TypeError, match="mapping of column name"):
        tabular.fit_preparation(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="differ in length"):
        tabular.fit_preparation({"x": [1.0, 2.0], "y": [1.0]})
    with pytest.raises(ValueError, match="column 'x': every value is missing"):
        tabular.fit_preparation({"x": [None, "NA"]}, impute="median")
    with pytest.raises(ValueError, match="column 'c' holds text"):
        tabular.fit_preparation({"c": ["a", "b"]}, categorical="error")
    ids = [f"id{i}" for i in range(42)]  # one category a row: not categories
    with pytest.raises(ValueError, match=r"column 'id' holds 42 different texts in 42 rows"):
        tabular.fit_preparation({"id": ids, "x": np.arange(42.0)})
    assert tabular.fit_preparation({"id": ids[:21] * 2})[0][0].width == 21  # 21 categories in 42 rows: fine
    with pytest.raises(TypeError, match="Preparation"):
        tabular.apply({"x": 1}, {"x": [1.0]})


# --------------------------------------------------------------------------
# the model file
# --------------------------------------------------------------------------
def test_the_preparation_round_trips_through_the_model_file(mixed, tmp_path):
    model, prep = tabular.load(mixed["model"])
    path = str(tmp_path / "again.jaxnn")
    tabular.save(path, model, prep)
    model2, prep2 = tabular.load(path)
    assert prep2.columns == prep.columns and (prep2.scale, prep2.impute, prep2.categorical) == ("standard", "median",
                                                                                               "onehot")
    np.testing.assert_array_equal(prep2.center, prep.center)
    np.testing.assert_array_equal(prep2.spread, prep.spread)
    np.testing.assert_array_equal(np.asarray(jaxnn.load(path).alpha), np.asarray(model.alpha))  # jaxnn.load: the model
    with pytest.raises(ValueError, match="not of one fit"):
        tabular.save(path, model, tabular.fit_preparation({"x": [1.0, 2.0]}))
    assert tabular.load(DATA / "cli_model_v1" / "model.jaxnn")[1] is None  # the first format: no preparation


def test_a_broken_preparation_in_a_model_file_is_refused(mixed, tmp_path):
    model, prep = tabular.load(mixed["model"])
    meta, arrays = prepare.to_file(prep)
    broken = [({**meta, "preparation": {**meta["preparation"], "version": 99}}, arrays, "unknown version"),
              (meta, {**arrays, "preparation_spread": -arrays["preparation_spread"]}, "spread > 0"),
              (meta, {**arrays, "preparation_center": arrays["preparation_center"][:2]}, "center and spread"),
              ({"preparation": {**meta["preparation"], "scale": "minmax"}}, arrays, "unknown scale 'minmax'")]
    for extra_meta, extra_arrays, words in broken:
        path = tmp_path / "broken.jaxnn"
        persist.write_file(path, "Model", model, extra_meta=extra_meta, extra_arrays=extra_arrays)
        with pytest.raises(jaxnn.ModelFileError, match=words):
            tabular.load(path)


# --------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------
def test_fit_prepares_the_table_and_says_so(mixed):
    out = mixed["out"]
    assert out.count("\n") == 1 and out.startswith(f"jaxnn fit: {N_ROWS} rows, 3 features, 2 classes (no, yes); ")
    assert ("2 numeric columns standardised; 1 text column one-hot (colour: 3 categories) → 5 features; missing "
            "values filled (median); training accuracy ") in out
    model, prep = tabular.load(mixed["model"])
    # what the Python route fits on the same columns: the command line's preparation is that one
    columns = {k: v for k, v in mixed["columns"].items() if k != "label"}
    same = tabular.fit_preparation(columns, impute="median")
    assert prep.columns == same.columns and model.X.shape == (N_ROWS, 5)
    np.testing.assert_array_equal(prep.center, same.center)
    np.testing.assert_array_equal(prep.spread, same.spread)
    size = np.array([float(v) for v in columns["size"] if v != "NA"])
    assert prep.columns[0].fill == np.median(size)
    filled = np.where(np.array(columns["size"]) == "NA", np.median(size), np.array(columns["size"], dtype=object))
    filled = filled.astype(np.float64)
    assert prep.center[0] == pytest.approx(filled.mean(), rel=1e-14)
    assert prep.spread[0] == pytest.approx(filled.std(), rel=1e-14)
    assert json.loads(pathlib.Path(mixed["model"] + cli.COLUMNS_SUFFIX).read_text())["features"] == ["size", "weight",
                                                                                                    "colour"]


def test_predict_and_evaluate_apply_the_stored_preparation(mixed, capsys):
    model, prep = tabular.load(mixed["model"])
    columns = mixed["columns"]
    colours = ["purple", "purple", *columns["colour"][2:]]  # a category unseen in training, in two rows
    new = _write_csv(mixed["folder"] / "new.csv", ["label", "colour", "weight", "size"],  # another column order
                     zip(columns["label"], colours, columns["weight"], columns["size"]))
    status, out, err = outcome(["predict", mixed["model"], new, "--proba"], capsys)
    assert status == 0
    # one warning line, naming the column and the count
    assert err.count("\n") == 1 and err.startswith("jaxnn predict: warning: column 'colour': 2 rows of ")
    assert "'purple'" in err
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        X = tabular.apply(prep, _columns_of(new))
    np.testing.assert_array_equal(X[:2, 2:], 0.0)  # the unseen category: all-zero one-hot features
    P = np.array(_read_csv(out)[1:], dtype=np.float64)
    np.testing.assert_allclose(P, np.asarray(jaxnn.predict_proba(model, X)), rtol=1e-6)
    status, out, _ = outcome(["predict", mixed["model"], new], capsys)
    assert [r[0] for r in _read_csv(out)[1:]] == [str(v) for v in jaxnn.predict(model, X)]
    status, out, err = outcome(["evaluate", mixed["model"], new, "--quiet"], capsys)
    assert status == 0 and err.startswith("jaxnn evaluate: warning: column 'colour': 2 rows")
    accuracy = float(out.splitlines()[0].split()[1])
    assert accuracy == pytest.approx(np.mean(np.asarray(jaxnn.predict(model, X)) == np.array(columns["label"])),
                                     abs=1e-4)


def _columns_of(path):
    """The CSV at ``path`` as a dict of text columns."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return {name: [r[j] for r in rows[1:]] for j, name in enumerate(rows[0])}


def test_refused_preparations(mixed, tmp_path, capsys):
    train, model = mixed["train"], str(tmp_path / "m.jaxnn")
    cases = [
        (["fit", train, "--target", "label", "-o", model], ["column 'size'", "row 3 (line 4)", "missing value ('NA')"]),
        (["fit", train, "--target", "label", "--impute", "median", "--categorical", "error", "-o", model],
         ["column 'colour' holds text", "'red'"]),
        (["fit", train, "--target", "label", "--scale", "minmax", "-o", model], ["--scale", "minmax"]),
        (["fit", train, "--target", "label", "--impute", "mean", "-o", model], ["--impute", "mean"]),
        (["fit", train, "--target", "label", "--categorical", "ordinal", "-o", model], ["--categorical", "ordinal"]),
    ]
    for argv, words in cases:
        assert_refused(argv, capsys, *words)
    assert not pathlib.Path(model).exists()
    # the columns file and the model's preparation disagree
    lonely = tmp_path / "lonely.jaxnn"
    shutil.copy(mixed["model"], lonely)
    (tmp_path / "lonely.jaxnn.columns.json").write_text(json.dumps(
        {"format": "jaxnn-columns", "version": 1, "target": "label", "features": ["weight", "size", "colour"]}))
    assert_refused(["predict", str(lonely), train], capsys, "not of one fit")
    # a numeric column given a text, and a hole in a column fit without imputation
    bad = _write_csv(tmp_path / "bad.csv", ["size", "weight", "colour"], [["1", "heavy", "red"]])
    assert_refused(["predict", mixed["model"], bad], capsys, "column 'weight'", "row 1", "'heavy' is not a number")


def test_a_model_file_of_the_first_format_predicts_as_before(tmp_path, capsys):
    folder = tmp_path / "v1"
    shutil.copytree(DATA / "cli_model_v1", folder)
    model = str(folder / "model.jaxnn")
    status, out, err = outcome(["predict", model, str(folder / "query.csv")], capsys)
    assert status == 0 and err == ""
    assert _read_csv(out) == _read_csv((folder / "labels.csv").read_text())
    status, out, err = outcome(["predict", model, str(folder / "query.csv"), "--proba"], capsys)
    expected = _read_csv((folder / "proba.csv").read_text())
    assert status == 0 and _read_csv(out)[0] == expected[0]
    np.testing.assert_allclose(np.array(_read_csv(out)[1:], float), np.array(expected[1:], float), rtol=1e-5)
    status, out, err = outcome(["evaluate", model, str(folder / "train.csv"), "--quiet"], capsys)
    assert status == 0 and err == "" and out.startswith("accuracy ")
    # its features are used as they are: a text where a number was is still the clear error
    bad = _write_csv(tmp_path / "bad.csv", ["a", "b"], [["1", "x"]])
    assert_refused(["predict", model, bad], capsys, "column 'b'", "'x' is not a number")


@pytest.mark.slow  # a fit of its own shapes (some 10 s from an empty compilation cache)
def test_wine_with_the_defaults_reaches_095(tmp_path, capsys):
    """scikit-learn's wine data (13 features on very different scales,
    string class names) as a user writes it to CSV, split 70/30 stratified
    with seed 0: ``jaxnn fit`` then ``jaxnn evaluate`` with the defaults."""
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    from sklearn.model_selection import train_test_split

    wine = sklearn_datasets.load_wine()
    labels = np.asarray(wine.target_names)[wine.target]
    Xtr, Xte, ytr, yte = train_test_split(wine.data, labels, test_size=0.3, stratify=labels, random_state=0)
    header = [*wine.feature_names, "target"]
    def rows(X, y):  # each value in the shortest decimal that reads back as it
        return [[*(repr(float(v)) for v in x), label] for x, label in zip(X, y)]

    train = _write_csv(tmp_path / "wine_train.csv", header, rows(Xtr, ytr))
    test = _write_csv(tmp_path / "wine_test.csv", header, rows(Xte, yte))
    model = str(tmp_path / "wine.jaxnn")
    status, out, err = outcome(["fit", train, "--target", "target", "-o", model], capsys)
    assert status == 0 and err == "" and "13 numeric columns standardised" in out
    status, out, err = outcome(["evaluate", model, test, "--quiet"], capsys)
    assert status == 0 and err == ""
    assert float(out.splitlines()[0].split()[1]) >= 0.95
    _, prep = tabular.load(model)
    np.testing.assert_allclose(prep.center, Xtr.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(prep.spread, Xtr.std(axis=0), rtol=1e-12)
