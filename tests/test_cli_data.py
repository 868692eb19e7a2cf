"""The command line on a user's own tables: ``jaxnn fit``, ``predict``,
``evaluate`` and ``datasets``, run in-process (``cli.main([...])``).

One model is fit for the module (a CSV with a header, a string target in the
middle of the columns); every later fit has the same shapes, so it reuses
the compiled programs.  Each user mistake ends with one line on stderr and
exit status 2, before any work."""

from __future__ import annotations

import csv
import gzip
import io
import json
import pathlib
import sys
import zipfile

import numpy as np
import pytest

import jaxnn
from jaxnn._src import cli, tabular
from _cli import assert_refused, outcome, run as _run, write_csv as _write_csv  # noqa: E402

N_ROWS = 90
CLASSES = ("alpha", "beta", "gamma")


def _data(seed=0):
    """(X, y): three well separated 2-D blobs with a noise feature, 30 rows a class."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.array(CLASSES), N_ROWS // 3)
    centres = {"alpha": (0.0, 0.0), "beta": (3.0, 0.0), "gamma": (0.0, 3.0)}
    X = np.array([centres[c] for c in y]) + rng.normal(scale=0.6, size=(N_ROWS, 2))
    X = np.column_stack([X, rng.normal(size=N_ROWS)])
    order = rng.permutation(N_ROWS)
    return X[order], y[order]


_outcome, _assert_refused = outcome, assert_refused


@pytest.fixture(scope="module", autouse=True)
def no_user_cache():
    """The CLI's own persistent compilation cache (~/.cache/jaxnn/xla) stays
    off: the tests' cache (tests/conftest.py), if any, is used instead."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JAXNN_CACHE_DIR", "")
        yield


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, no_user_cache):
    """The training CSV (columns: x1, species, x2, noise), the model fit on it
    with ``jaxnn fit``, its (X, y) and the fit's stdout."""
    folder = tmp_path_factory.mktemp("cli_data")
    X, y = _data()
    train = _write_csv(folder / "train.csv", ["x1", "species", "x2", "noise"],
                       [[str(a), label, str(b), str(c)] for (a, b, c), label in zip(X, y)])
    model = str(folder / "model.jaxnn")
    # features as written (no scaling): the model predicts on the table's own X
    status, out, err = _run(["fit", train, "--target", "species", "--k", "5", "--seed", "1", "--scale", "none",
                             "-o", model])
    assert status == 0 and err == "", err
    return {"folder": folder, "train": train, "model": model, "X": X, "y": y, "out": out}


# --------------------------------------------------------------------------
# fit, predict, evaluate end to end
# --------------------------------------------------------------------------
def test_fit_writes_the_model_its_columns_and_one_summary_line(fitted):
    out = fitted["out"]
    assert out.count("\n") == 1 and out.startswith("jaxnn fit: 90 rows, 3 features, 3 classes (alpha, beta, gamma)")
    accuracy = float(out.split("training accuracy ")[1].split(";")[0])
    assert 0.9 <= accuracy <= 1.0 and " s; wrote " in out
    columns = json.loads(pathlib.Path(fitted["model"] + cli.COLUMNS_SUFFIX).read_text())
    assert columns["target"] == "species" and columns["features"] == ["x1", "x2", "noise"]
    model = jaxnn.load(fitted["model"])
    assert model.k == 5 and [str(c) for c in model.classes] == list(CLASSES) and model.X.shape == (N_ROWS, 3)


def test_fit_metric_nca_writes_a_model_that_maps_its_queries(fitted, capsys):
    model = str(fitted["folder"] / "nca.jaxnn")
    status, out, err = _run(["fit", fitted["train"], "--target", "species", "--k", "5", "--metric", "nca",
                             "--scale", "none", "-o", model])
    assert status == 0 and err == "", err
    loaded = jaxnn.load(model)
    assert loaded.transform.shape == (3, 3)
    status, out, err = _outcome(["predict", model, fitted["train"]], capsys)
    assert status == 0 and err == ""
    assert out.splitlines()[1:N_ROWS + 1] == [str(v) for v in jaxnn.predict(loaded, fitted["X"])]


def test_predict_writes_labels_that_the_loaded_model_predicts(fitted, capsys):
    out_csv = fitted["folder"] / "labels.csv"
    status, out, err = _outcome(["predict", fitted["model"], fitted["train"], "-o", str(out_csv)], capsys)
    assert status == 0 and err == "" and out.count("\n") == 1 and "90 rows" in out
    rows = list(csv.reader(io.StringIO(out_csv.read_text())))
    assert rows[0] == ["species"] and len(rows) == N_ROWS + 1
    expected = jaxnn.predict(jaxnn.load(fitted["model"]), fitted["X"])
    assert [r[0] for r in rows[1:]] == [str(v) for v in expected]
    assert np.mean(np.array([r[0] for r in rows[1:]]) == fitted["y"]) > 0.9


def test_predict_writes_to_stdout_without_o_or_with_dash(fitted, capsys):
    outputs = []
    for extra in ([], ["-o", "-"], ["--quiet"]):
        status, out, err = _outcome(["predict", fitted["model"], fitted["train"], *extra], capsys)
        assert status == 0 and err == ""
        outputs.append(out)
    assert outputs[0] == outputs[1] == outputs[2] and outputs[0].startswith("species\n")
    assert len(outputs[0].splitlines()) == N_ROWS + 1


def test_proba_columns_are_named_after_the_classes_and_sum_to_one(fitted, capsys):
    status, out, err = _outcome(["predict", fitted["model"], fitted["train"], "--proba"], capsys)
    assert status == 0 and err == ""
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == [f"p_{c}" for c in CLASSES]
    P = np.array(rows[1:], dtype=np.float64)
    assert P.shape == (N_ROWS, 3) and np.all(P >= 0) and np.allclose(P.sum(axis=1), 1.0, atol=1e-5)
    expected = np.asarray(jaxnn.predict_proba(jaxnn.load(fitted["model"]), fitted["X"]))
    np.testing.assert_allclose(P, expected, rtol=1e-6)  # each value printed in float32's shortest exact form


def test_predict_reads_the_features_by_name_in_any_order(fitted, capsys):
    X = fitted["X"]
    shuffled = _write_csv(fitted["folder"] / "shuffled.csv", ["comment", "noise", "x2", "x1"],
                          [[f"row {i}", str(c), str(b), str(a)] for i, (a, b, c) in enumerate(X)])
    _, plain, _ = _outcome(["predict", fitted["model"], fitted["train"]], capsys)
    status, out, err = _outcome(["predict", fitted["model"], shuffled], capsys)
    assert status == 0 and err == "" and out == plain  # the extra text column is ignored


def test_evaluate_prints_the_scores_and_the_confusion_matrix(fitted, capsys):
    status, out, err = _outcome(["evaluate", fitted["model"], fitted["train"]], capsys)  # --target: the fit's
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("jaxnn evaluate: ") and "90 rows, target species" in lines[0]
    scores = {line.rsplit(None, 1)[0]: float(line.rsplit(None, 1)[1]) for line in lines[1:4]}
    model = jaxnn.load(fitted["model"])
    X, y = fitted["X"], fitted["y"]
    P = np.asarray(jaxnn.predict_proba(model, X), dtype=np.float64)
    assert scores["accuracy"] == pytest.approx(jaxnn.metrics.accuracy(y, jaxnn.predict(model, X)), abs=1e-4)
    assert scores["Brier score"] == pytest.approx(jaxnn.metrics.brier_score(y, P, classes=np.array(CLASSES)), abs=1e-4)
    p_true = P[np.arange(N_ROWS), np.searchsorted(np.array(CLASSES), y)]
    assert scores["log loss"] == pytest.approx(-np.mean(np.log(p_true)), abs=1e-4)
    header = lines[lines.index("confusion matrix (rows: true class, columns: predicted class)") + 1]
    assert header.split()[-3:] == list(CLASSES)
    matrix = np.array([line.split()[1:] for line in lines[-3:]], dtype=int)
    assert [line.split()[0] for line in lines[-3:]] == list(CLASSES)
    assert matrix.sum() == N_ROWS and list(matrix.sum(axis=1)) == [30, 30, 30]
    assert np.trace(matrix) / N_ROWS == pytest.approx(scores["accuracy"], abs=1e-4)
    quiet = _outcome(["evaluate", fitted["model"], fitted["train"], "--target", "species", "--quiet"], capsys)[1]
    assert quiet.splitlines() == lines[1:]


def test_evaluate_plot_writes_a_reliability_diagram(fitted, capsys):
    pytest.importorskip("matplotlib")
    png = fitted["folder"] / "reliability.png"
    status, out, err = _outcome(["evaluate", fitted["model"], fitted["train"], "--plot", str(png)], capsys)
    assert status == 0 and err == "" and f"reliability diagram written to {png}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fit_quiet_prints_nothing_and_a_numeric_target_stays_numeric(fitted, capsys):
    X, y = fitted["X"], fitted["y"]
    codes = {c: str(i + 1) for i, c in enumerate(CLASSES)}
    data = _write_csv(fitted["folder"] / "numeric.csv", ["x1", "x2", "noise", "grade"],
                      [[str(a), str(b), str(c), codes[label]] for (a, b, c), label in zip(X, y)])
    model = str(fitted["folder"] / "numeric.jaxnn")
    status, out, err = _outcome(["fit", data, "--target", "grade", "--k", "5", "--seed", "1", "--quiet", "-o", model],
                                capsys)
    assert (status, out, err) == (0, "", "")
    assert jaxnn.load(model).classes == (1, 2, 3)
    _, labels, _ = _outcome(["predict", model, data], capsys)
    _, text_labels, _ = _outcome(["predict", fitted["model"], fitted["train"]], capsys)
    assert labels.splitlines()[0] == "grade"
    assert labels.splitlines()[1:] == [codes[v] for v in text_labels.splitlines()[1:]]  # the same fit, renamed
    status, out, _ = _outcome(["evaluate", model, data, "--quiet"], capsys)
    assert status == 0 and out.splitlines()[5].split() == ["true", "\\", "predicted", "1", "2", "3"]


# --------------------------------------------------------------------------
# user mistakes: one line on stderr, status 2, no traceback
# --------------------------------------------------------------------------
def test_refused_fits(fitted, tmp_path, capsys):
    train, model = fitted["train"], str(tmp_path / "m.jaxnn")

    def table(name, text):
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    blobs = "\n".join(f"{i},{i % 2},{'ab'[i % 2]}" for i in range(12))
    cases = [
        (["fit", str(tmp_path / "nope.csv"), "--target", "species", "-o", model], ["nope.csv", "no such file"]),
        (["fit", str(tmp_path), "--target", "species", "-o", model], ["is a directory"]),
        (["fit", train, "--target", "specie", "-o", model], ["no column 'specie'", "did you mean 'species'"]),
        (["fit", train, "--target", "species", "--features", "x1,x3", "-o", model], ["no column 'x3'"]),
        (["fit", train, "--target", "species", "--features", "x1,species", "-o", model], ["target column"]),
        (["fit", train, "--target", "species", "--features", "x1,,x2", "-o", model], ["empty name"]),
        (["fit", table("text.csv", f"a,b,y\n1,2,u\n3,4,v\n5,six,u\n{blobs}\n"), "--target", "y", "-o", model],
         ["column 'b'", "row 3 (line 4)", "'six' is not a number"]),
        (["fit", table("hole.csv", f"a,b,y\n1,2,u\n3,,v\n{blobs}\n"), "--target", "y", "-o", model],
         ["column 'b'", "row 2 (line 3)", "missing value"]),
        (["fit", table("na.csv", f"a,b,y\n1,2,u\n3,4,v\n5,6,u\n7,NA,v\n{blobs}\n"), "--target", "y", "-o", model],
         ["column 'b'", "row 4 (line 5)", "missing value ('NA')"]),
        (["fit", table("notarget.csv", "a,b,y\n1,2,u\n3,4,\n5,6,v\n"), "--target", "y", "-o", model],
         ["column 'y'", "row 2", "missing target value"]),
        (["fit", table("empty.csv", ""), "--target", "y", "-o", model], ["empty.csv", "empty"]),
        (["fit", table("blank.csv", "\n\n"), "--target", "y", "-o", model], ["blank.csv", "no header"]),
        (["fit", table("header.csv", "a,b,y\n"), "--target", "y", "-o", model], ["no data rows"]),
        (["fit", table("ragged.csv", "a,b,y\n1,2,u\n3,4\n"), "--target", "y", "-o", model],
         ["row 2 (line 3) has 2 fields", "header has 3"]),
        (["fit", table("one.csv", "a,b,y\n1,2,u\n3,4,u\n5,6,u\n"), "--target", "y", "-o", model],
         ["one class ('u')", "two or more"]),
        (["fit", table("dup.csv", "a,a,y\n1,2,u\n"), "--target", "y", "-o", model], ["two columns named 'a'"]),
        (["fit", table("index.csv", ",a,y\n0,1,u\n1,2,v\n"), "--target", "y", "-o", model], ["no name", "index=False"]),
        (["fit", fitted["model"], "--target", "y", "-o", model], ["zip archive", "not a CSV"]),
        (["fit", train, "--target", "species", "--k", "90", "-o", model], ["--k", "90 rows"]),
        (["fit", train, "--target", "species", "--k", "0", "-o", model], ["--k", "got '0'"]),
        (["fit", train, "--target", "species", "--loss", "logistc", "-o", model], ["--loss", "unknown loss"]),
        (["fit", train, "--target", "species", "--algorithm", "boost", "-o", model], ["--algorithm"]),
        (["fit", train, "--target", "species", "--seed", "-1", "-o", model], ["--seed"]),
        (["fit", train, "--target", "species", "-o", str(tmp_path / "no" / "m.jaxnn")], ["-o", "no directory"]),
        (["fit", train, "--target", "species", "-o", str(tmp_path)], ["-o", "is a directory"]),
        (["fit", train, "-o", model], ["--target"]),
        (["fit", train, "--target", "species"], ["-o"]),
    ]
    for argv, words in cases:
        _assert_refused(argv, capsys, *words)
    assert not (tmp_path / "m.jaxnn").exists()


def test_refused_predictions_and_evaluations(fitted, tmp_path, capsys):
    model, train = fitted["model"], fitted["train"]
    not_npz = tmp_path / "model.npz"
    np.savez(not_npz, a=np.arange(3))
    empty = tmp_path / "empty.jaxnn"
    empty.write_bytes(b"")
    zipped = tmp_path / "zipped.jaxnn"
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("hello.txt", "hi")
    lonely = tmp_path / "lonely.jaxnn"  # a model without its columns file
    lonely.write_bytes(pathlib.Path(model).read_bytes())
    few = _write_csv(tmp_path / "few.csv", ["x1", "noise"], [["1", "2"]])
    strangers = _write_csv(tmp_path / "strangers.csv", ["x1", "x2", "noise", "species"],
                           [["0", "0", "0", "alpha"], ["1", "1", "1", "delta"]])
    nolabel = _write_csv(tmp_path / "nolabel.csv", ["x1", "x2", "noise"], [["0", "0", "0"]])
    cases = [
        (["predict", str(tmp_path / "none.jaxnn"), train], ["none.jaxnn", "no such model file"]),
        (["predict", train, train], ["train.csv", "not a jaxnn model file"]),
        (["predict", str(not_npz), train], ["not a jaxnn model file"]),
        (["predict", str(empty), train], ["empty"]),
        (["predict", str(zipped), train], ["not a jaxnn model file"]),
        (["predict", str(lonely), train], ["lonely.jaxnn.columns.json", "is missing"]),
        (["predict", model, str(tmp_path / "none.csv")], ["no such file"]),
        (["predict", model, few], ["lacks the feature column 'x2'"]),
        (["predict", model, train, "-o", str(tmp_path / "no" / "out.csv")], ["no directory"]),
        (["evaluate", str(tmp_path / "none.jaxnn"), train], ["no such model file"]),
        (["evaluate", model, nolabel], ["no target column 'species'", "--target"]),
        (["evaluate", model, train, "--target", "x9"], ["no target column 'x9'"]),
        (["evaluate", model, strangers], ["labels the model was not fit on: delta"]),
        (["evaluate", model, train, "--plot", str(tmp_path / "r.unknown")], ["--plot", ".png"]),
        (["evaluate", model, train, "--plot", str(tmp_path / "no" / "r.png")], ["--plot", "no directory"]),
    ]
    for argv, words in cases:
        _assert_refused(argv, capsys, *words)
    (tmp_path / "lonely.jaxnn.columns.json").write_text("{not json")
    _assert_refused(["predict", str(lonely), train], capsys, "cannot be read")
    (tmp_path / "lonely.jaxnn.columns.json").write_text(json.dumps(
        {"format": "jaxnn-columns", "version": 1, "target": "y", "features": ["a"]}))
    _assert_refused(["predict", str(lonely), train], capsys, "not of one fit")


def test_a_missing_matplotlib_is_one_line(fitted, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    _assert_refused(["evaluate", fitted["model"], fitted["train"], "--plot", str(fitted["folder"] / "r.png")],
                    capsys, "matplotlib", 'pip install "jaxnn[plot]"')


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    data = tmp_path / "data.parquet"
    data.write_bytes(b"PAR1" + b"\0" * 16 + b"PAR1")  # recognised by its first bytes
    _assert_refused(["fit", str(data), "--target", "y", "-o", str(tmp_path / "m.jaxnn")], capsys,
                    "Parquet", 'pip install "jaxnn[io]"')


def test_parquet_is_read_like_csv(fitted, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.read_csv(fitted["train"])[["species", "noise", "x2", "x1"]]
    frame.to_parquet(tmp_path / "train.parquet")
    X, y, names = tabular.read_xy(tmp_path / "train.parquet", "species")
    assert names == ["noise", "x2", "x1"] and list(y) == list(fitted["y"])
    np.testing.assert_array_equal(X, fitted["X"][:, [2, 1, 0]])
    frame.loc[4, "x2"] = None
    frame.to_parquet(tmp_path / "hole.parquet")
    with pytest.raises(tabular.TableError, match=r"column 'x2', row 5: missing value"):
        tabular.read_xy(tmp_path / "hole.parquet", "species")


@pytest.mark.parametrize("command", ["fit", "predict", "evaluate", "datasets"])
def test_help_shows_an_example(command, capsys):
    status, out, err = _outcome([command, "--help"], capsys)
    assert status == 0 and err == "" and "example:" in out and f"jaxnn {command}" in out.split("example:")[1]


# --------------------------------------------------------------------------
# datasets
# --------------------------------------------------------------------------
def test_datasets_lists_rows_features_and_classes(capsys):
    status, out, err = _outcome(["datasets"], capsys)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["name", "rows", "features", "classes"]
    assert [line.split()[0] for line in lines[1:]] == jaxnn.datasets.names()
    assert "iris 150 4 3".split() in [line.split() for line in lines]


def test_datasets_export_round_trips(tmp_path, capsys):
    path = tmp_path / "wine.csv"
    status, out, err = _outcome(["datasets", "wine", "-o", str(path)], capsys)
    assert status == 0 and err == "" and "wine" in out and "target" in out
    X, y, names = tabular.read_xy(path, "target")
    X0, y0 = jaxnn.datasets.load("wine")
    assert names == [f"x{j}" for j in range(1, 14)]
    np.testing.assert_array_equal(X, X0)  # bit for bit: the shortest exact decimal of every value
    np.testing.assert_array_equal(y, y0)
    status, out, _ = _outcome(["datasets", "iris"], capsys)  # to stdout
    assert status == 0 and out.splitlines()[0] == "x1,x2,x3,x4,target" and len(out.splitlines()) == 151
    _assert_refused(["datasets", "irs"], capsys, "unknown data set 'irs'", "did you mean 'iris'")
    _assert_refused(["datasets", "-o", str(path)], capsys, "NAME")


# --------------------------------------------------------------------------
# reading tables
# --------------------------------------------------------------------------
def test_csv_dialects_are_read(tmp_path):
    expected_X, expected_y = np.array([[1.0, 2.5], [3.0, -4.0]]), ["a, b", "c"]
    texts = {
        "comma.csv": '\ufeffx,"y",label\n1,2.5,"a, b"\n\n3 , -4,c\n,,\n',  # BOM, quotes, blank lines, spaces
        "semicolon.csv": "x;y;label\n1;2.5;a, b\n3;-4;c\n",
        "tab.tsv": "x\ty\tlabel\n1\t2.5\ta, b\n3\t-4\tc\n",
    }
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        X, y, names = tabular.read_xy(tmp_path / name, "label")
        assert names == ["x", "y"] and list(y) == expected_y, name
        np.testing.assert_array_equal(X, expected_X)
    with gzip.open(tmp_path / "packed.csv.gz", "wt") as f:
        f.write(texts["semicolon.csv"])
    X, y, _ = tabular.read_xy(tmp_path / "packed.csv.gz", "label")
    np.testing.assert_array_equal(X, expected_X)
    (tmp_path / "latin.csv").write_bytes("x,label\n1,caf\xe9\n".encode("latin-1"))
    with pytest.raises(tabular.TableError, match="not UTF-8"):
        tabular.read_table(tmp_path / "latin.csv")


def test_labels_are_whole_numbers_or_texts():
    assert tabular.parse_labels(np.array(["1", "-2", "3.0"])).tolist() == [1, -2, 3]
    assert tabular.parse_labels(np.array(["0.5", "1.5"])).tolist() == ["0.5", "1.5"]  # classes, not targets
    assert tabular.parse_labels(np.array(["1", "b"])).tolist() == ["1", "b"]
