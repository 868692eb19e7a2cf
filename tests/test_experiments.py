"""The paper experiments (jaxnn.experiments) run end to end on tiny settings."""

import io
import os
import pickle
import sys

import numpy as np
import pytest

from jaxnn import experiments
from jaxnn._src.experiments import common


@pytest.fixture(scope="module")
def ripley_result():
    return experiments.ripley(thetas=(0.5, 1.0), n_draws=2, n_train=120, n_test=200, n_mc=2000, progress=False)


@pytest.fixture(scope="module")
def uci_result():
    pytest.importorskip("sklearn")
    return experiments.uci(
        domains=("iris",), folds=2, ks=(5,), methods=("k-NN", "GNNB(log)", "SGD", "RBF-SVM"), progress=False
    )


@pytest.fixture(scope="module")
def posteriors_result():
    return experiments.posteriors(
        sigmas=(0.5,), ks=(5,), n_seeds=1, n_train=150, n_test=200,
        methods=("GNNB(log) link", "GNNB(log) auto", "k-NN votes"), progress=False,
    )


@pytest.fixture(scope="module")
def splits_result():
    return experiments.splits(domains=("wine",), n_splits=(1, 2, 32), folds=1, k=5, progress=False)


def test_registry_and_public_api():
    assert set(experiments.EXPERIMENTS) == {"ripley", "uci", "posteriors", "splits", "geometry"}
    assert set(experiments.FORMATTERS) == set(experiments.EXPERIMENTS)
    for name in experiments.__all__:
        assert hasattr(experiments, name)


@pytest.mark.slow  # the paper's experiments, end to end
def test_ripley(ripley_result):
    r = ripley_result
    assert r.error.shape == r.error_std.shape == (3, 2)
    assert np.all((r.error >= 0) & (r.error <= 1))
    assert list(r.size) == [60, 120]
    # θ = 1 keeps every prototype: the pruned rows equal the unpruned models' errors
    for i, name in enumerate(r.methods[:2]):
        assert r.error[i, -1] == pytest.approx(r.unpruned_error[name])
    assert r.error[2, -1] == pytest.approx(r.knn_error) and r.error_std[2, -1] == 0.0
    assert 0.05 < r.bayes_mc < 0.12 and 0 <= r.bayes_test <= 1
    # paper 001's protocol: ⌈θm⌉ greedy rounds, the leveraged examples kept
    assert set(r.leveraged) == {"UNN(exp) T=θm", "GNNB(log) T=θm"}
    for errors, kept in r.leveraged.values():
        assert np.all((errors >= 0) & (errors <= 1))
        assert np.all((kept >= 5) & (kept <= r.size))  # an example chosen twice counts once
    buf = io.StringIO()
    experiments.format_ripley(r, out=buf)
    text = buf.getvalue()
    assert "Bayes" in text and "UNN(exp)" in text and "0.50" in text and "T=θm" in text


@pytest.mark.slow  # the paper's experiments, end to end
def test_uci(uci_result):
    r = uci_result
    assert r.contenders == ("k-NN k=5", "GNNB(log) k=5", "SGD", "RBF-SVM")
    assert r.accuracy.shape == (1, 4, 2)
    for metric in ("accuracy", "f_measure", "recall"):
        values = getattr(r, metric)
        assert np.all(np.isfinite(values)) and np.all((values >= 0) & (values <= 1))
    assert np.all(r.train_s >= 0) and np.all(r.test_s >= 0)
    assert r.accuracy.mean() > 0.8  # iris
    ranks = r.ranks("accuracy")
    assert ranks.shape == (1, 4) and np.all((ranks >= 1) & (ranks <= 4))
    assert ranks.sum() == pytest.approx(1 + 2 + 3 + 4)
    buf = io.StringIO()
    experiments.format_uci(r, out=buf)
    text = buf.getvalue()
    for piece in ("test accuracy", "macro F-measure", "macro recall", "train time", "best k per method", "rank"):
        assert piece in text
    assert "RBF-SVM grid choices" in text


def test_uci_rejects_unknown_method():
    with pytest.raises(ValueError, match="unknown method"):
        experiments.uci(domains=("iris",), methods=("nope",), progress=False)


@pytest.mark.slow  # the paper's experiments, end to end
def test_posteriors(posteriors_result):
    r = posteriors_result
    assert r.kl.shape == r.accuracy.shape == (1, 1, 3, 1)
    assert np.all(np.isfinite(r.kl)) and np.all(r.kl >= -1e-9)
    assert np.all((r.accuracy >= 0) & (r.accuracy <= 1))
    lam = r.mix[0, 0, r.methods.index("GNNB(log) auto"), 0]
    assert 0.0 <= lam <= 1.0
    assert np.isnan(r.mix[0, 0, r.methods.index("k-NN votes"), 0])
    buf = io.StringIO()
    experiments.format_posteriors(r, out=buf)
    text = buf.getvalue()
    assert "k = 5" in text and "Gl/A" in text and "vs k-NN votes" in text
    # paper 003's eq. 32 weights each class by Pr[c] = 1/C: its row is the mean row / C
    lines = text.splitlines()
    mean_row = next(line for line in lines if line.startswith(" mean"))
    eq32_row = next(line for line in lines if line.startswith("eq.32"))
    np.testing.assert_allclose([float(v) / r.n_classes for v in mean_row.split()[1:]],
                               [float(v) for v in eq32_row.split()[1:]], atol=1e-4)


@pytest.mark.slow  # the paper's experiments, end to end
def test_splits(splits_result):
    r = splits_result
    assert r.dims == (13,)
    assert r.accuracy.shape == (1, 3, 3, 1)
    got = r.accuracy[0, :2]
    assert np.all((got >= 0) & (got <= 1)) and got.mean() > 0.7
    assert np.all(np.isnan(r.accuracy[0, 2]))  # n = 32 > d = 13: skipped
    # with one block every mean of a single posterior is that posterior
    assert r.accuracy[0, 0, 0, 0] == r.accuracy[0, 0, 1, 0] == r.accuracy[0, 0, 2, 0]
    buf = io.StringIO()
    experiments.format_splits(r, out=buf)
    assert "geometric" in buf.getvalue() and "wine" in buf.getvalue()


@pytest.mark.slow  # the paper's experiments, end to end
def test_main_ripley_quick_prints_a_table(capsys, tmp_path):
    path = tmp_path / "ripley.pkl"
    assert experiments.main(["ripley", "--quick", "--no-progress", "--save", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Ripley" in out and "Bayes" in out and "wall time" in out
    with open(path, "rb") as fh:
        result = pickle.load(fh)
    assert isinstance(result, experiments.RipleyResult)
    assert result.thetas[-1] == 1.0
    for i, name in enumerate(result.methods[:2]):
        assert result.error[i, -1] == pytest.approx(result.unpruned_error[name])


def test_unknown_experiment_lists_the_names(capsys):
    with pytest.raises(SystemExit):
        experiments.main(["bogus"])
    err = capsys.readouterr().err
    assert all(name in err for name in ("ripley", "uci", "posteriors", "splits"))
    with pytest.raises(ValueError, match="ripley.*uci.*posteriors.*splits"):
        experiments.run("bogus")


def test_option_for_another_experiment_is_refused():
    with pytest.raises(SystemExit):
        experiments.main(["ripley", "--folds", "3"])


def test_plot_without_matplotlib_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib → ImportError
    with pytest.raises(ImportError, match="pip install matplotlib"):
        experiments.run("ripley", plot_dir=str(tmp_path), progress=False)


@pytest.mark.slow  # the paper's experiments, end to end
def test_plots(tmp_path, ripley_result, uci_result, posteriors_result, splits_result):
    pytest.importorskip("matplotlib")
    paths = []
    paths += experiments.plot_ripley(ripley_result, str(tmp_path))
    paths += experiments.plot_uci(uci_result, str(tmp_path))
    paths += experiments.plot_posteriors(posteriors_result, str(tmp_path), grid=30)
    paths += experiments.plot_splits(splits_result, str(tmp_path))
    names = {os.path.basename(p) for p in paths}
    assert {"ripley_theta.png", "uci_accuracy.png", "posteriors_kl.png", "posteriors_map.png", "splits.png"} <= names
    for p in paths:
        with open(p, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # the paper's experiments, end to end
def test_main_plot_writes_pngs(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    argv = ["ripley", "--no-progress", "--thetas", "1", "--draws", "1", "--plot", str(tmp_path)]
    assert experiments.main(argv) == 0
    assert (tmp_path / "ripley_theta.png").exists()
    assert "wrote" in capsys.readouterr().out


def test_progress_line_and_folds():
    buf = io.StringIO()
    bar = common.Progress(12, "uci", stream=buf)
    bar.step("pima fold 3 GNNB(log)")
    bar.close()
    assert buf.getvalue().startswith("[ 1/12] uci: pima fold 3 GNNB(log)")
    y = np.repeat([0, 1, 2], [10, 7, 5])
    folds = common.stratified_folds(y, 3, seed=0)
    sizes = np.bincount(folds)
    assert sizes.max() - sizes.min() <= 1
    for c in range(3):
        per_class = np.bincount(folds[y == c], minlength=3)
        assert per_class.max() - per_class.min() <= 1
    np.testing.assert_array_equal(common.rank_desc(np.array([0.9, 0.8, 0.9, np.nan])), [1.5, 3.0, 1.5, np.nan])


def _splits_result(domains, dims, n_splits, ran):
    """A SplitsResult by hand: accuracy 0.9 where ``ran[d][n]``, NaN (skipped, n > d) elsewhere."""
    D, N = len(domains), len(n_splits)
    acc = np.full((D, N, 3, 1), np.nan)
    fit_s = np.full((D, N, 1), np.nan)
    for di in range(D):
        for ni in range(N):
            if ran[di][ni]:
                acc[di, ni] = 0.9
                fit_s[di, ni] = 1.0
    return experiments.SplitsResult(domains=tuple(domains), dims=tuple(dims), n_splits=tuple(n_splits),
                                    means=("arithmetic", "geometric", "harmonic"), accuracy=acc, fit_s=fit_s,
                                    folds=1, protocol="single stratified 70/30 split", k=10, seed=0)


def test_splits_table_names_every_domain_whichever_n_was_skipped():
    # n = 8 > iris's d = 4 came first: iris's rows lost its name and d, and the mean over one
    # domain looked like the mean over both
    r = _splits_result(("wine", "iris"), (13, 4), (8, 1, 2), [[True, True, True], [False, True, True]])
    buf = io.StringIO()
    experiments.format_splits(r, out=buf)
    lines = buf.getvalue().splitlines()
    iris = [line for line in lines if line.startswith("iris")]
    assert len(iris) == 1 and iris[0].split()[:3] == ["iris", "4", "1"]
    assert any(line.split()[:2] == ["mean", "8"] and "(over 1 of 2 domains)" in line for line in lines)
    assert "n > d" in lines[-1] and "iris (d=4): n = 8" in lines[-1]


def test_splits_table_when_no_n_ran_on_a_domain():
    # `jaxnn experiment splits --domains iris --n-splits 50` printed a table without rows and a
    # mean row of "—" (the command line refuses it now; the library skips n > d)
    r = _splits_result(("iris",), (4,), (50,), [[False]])
    buf = io.StringIO()
    experiments.format_splits(r, out=buf)
    text = buf.getvalue()
    assert "—" not in text and "iris" in text and "no n ran" in text and "iris (d=4): n = 50" in text


class _WorkStarted(Exception):
    pass


def _no_fits(*args, **kwargs):
    raise _WorkStarted("a fit started")


def test_uci_refuses_more_folds_than_rows_before_any_fit(monkeypatch):
    # folds=1000 on iris failed every fold (an empty test part) for 159 s and returned
    from jaxnn._src.experiments import uci_benchmark

    monkeypatch.setattr(uci_benchmark, "fit_contender", _no_fits)
    with pytest.raises(ValueError, match="folds=1000 is more than the 150 rows of iris"):
        experiments.uci(domains=("iris",), folds=1000, methods=("k-NN",), progress=False)
    with pytest.raises(ValueError, match="folds=51 is more than the 50 rows of iris's smallest class"):
        experiments.uci(domains=("wdbc", "iris"), folds=51, methods=("k-NN",), progress=False)
    with pytest.raises(ValueError, match="folds must be >= 2"):
        experiments.uci(domains=("iris",), folds=1, methods=("k-NN",), progress=False)


def test_splits_refuses_more_folds_than_a_class_has_rows_before_any_fit(monkeypatch):
    import jaxnn.ensemble

    monkeypatch.setattr(jaxnn.ensemble, "fit_split", _no_fits)
    with pytest.raises(ValueError, match="folds=51 is more than the 50 rows of iris's smallest class"):
        experiments.splits(domains=("iris",), folds=51, progress=False)
    with pytest.raises(ValueError, match="folds must be >= 1"):
        experiments.splits(domains=("iris",), folds=0, progress=False)
