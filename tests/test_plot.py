"""jaxnn.plot: every figure renders (Agg, to a PNG that is not blank), draws on
the ``ax`` it is given, returns it, and refuses what it cannot draw."""

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest

import jaxnn

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

import jaxnn.plot  # noqa: E402
from jaxnn._src.plots import _pass_ends  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def ripley():
    return jaxnn.datasets.ripley(n_train=120, n_test=200, seed=1)


@pytest.fixture(scope="module")
def model(ripley):
    """Two passes with the trace: a pass boundary to mark."""
    m = ripley.X_train.shape[0]
    return jaxnn.fit(ripley.X_train, ripley.y_train, k=5, rounds=2 * m, trace=True, seed=0)


@pytest.fixture(scope="module")
def three_classes():
    d = jaxnn.datasets.gaussian_posteriors(0.6, n_train=90, n_test=60, n_classes=3, seed=0)
    return d, jaxnn.fit(d.X_train, d.y_train, k=5, posterior="link")


def _pixels(fig, path):
    fig.savefig(path, dpi=50)
    with open(path, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    img = plt.imread(path)
    return np.round(img[..., :3] * 255).astype(np.int16).reshape(-1, 3)


def rendered(ax, tmp_path, name="figure.png"):
    """The PNG of ``ax``'s figure, checked not blank: more non-white pixels
    than an empty figure of its size, and coloured ones (not only the grey
    of the frame and the text)."""
    rgb = _pixels(ax.figure, tmp_path / name)
    empty = plt.figure(figsize=ax.figure.get_size_inches())
    empty.add_subplot()
    blank = _pixels(empty, tmp_path / f"empty_{name}")
    plt.close(empty)

    def non_white(p):
        return np.mean(np.any(p < 245, axis=1))

    colourful = np.mean(np.ptp(rgb, axis=1) > 40)  # saturated pixels: the data, not black/grey
    colours = np.unique(rgb, axis=0).shape[0]
    assert non_white(rgb) > non_white(blank) + 0.01, f"{name}: no more ink than an empty figure"
    assert colourful > 0.005 and colours > 20, f"{name}: {colourful:.2%} coloured pixels, {colours} colours"
    return rgb


def drawn_on(ax):
    """What was drawn on ``ax``: images, collections (scatter, contour), lines, patches."""
    return len(ax.images) + len(ax.collections) + len(ax.lines) + len(ax.patches)


def _pixel_centres(image):
    """(rows, columns, 2): where each pixel of ``image`` (origin lower) is
    drawn, from its extent."""
    values = np.asarray(image.get_array())
    x0, x1, y0, y1 = image.get_extent()
    rows, cols = values.shape[:2]
    cx = x0 + (np.arange(cols) + 0.5) * (x1 - x0) / cols
    cy = y0 + (np.arange(rows) + 0.5) * (y1 - y0) / rows
    assert image.origin == "lower"  # row 0 at y0
    return np.stack(np.meshgrid(cx, cy), axis=-1)


def test_decision_map_binary_and_theta(model, ripley, tmp_path):
    ax = jaxnn.plot.decision_map(model, ripley.X_train, ripley.y_train, resolution=40)
    assert isinstance(ax, Axes) and len(ax.images) == 1 and drawn_on(ax) > 1
    rendered(ax, tmp_path, "map.png")
    # binary: each pixel is p̂ of the second class where it is drawn, over X's extent
    values = np.asarray(ax.images[0].get_array(), np.float64)
    centres = _pixel_centres(ax.images[0])
    assert values.shape == (40, 40) and 0.0 <= values.min() < 0.5 < values.max() <= 1.0
    P = np.asarray(jaxnn.predict_proba(model, centres.reshape(-1, 2)), np.float64)
    np.testing.assert_allclose(values, P[:, 1].reshape(40, 40), atol=1e-6)
    X = ripley.X_train
    assert np.all(centres[0, 0] <= X.min(axis=0)) and np.all(centres[-1, -1] >= X.max(axis=0))

    fig, (left, right) = plt.subplots(1, 2)
    n_figures = len(plt.get_fignums())
    out = jaxnn.plot.decision_map(model, ripley.X_train, ripley.y_train, theta=0.3, resolution=30, ax=right)
    assert out is right and drawn_on(right) > 0 and drawn_on(left) == 0
    assert len(plt.get_fignums()) == n_figures  # no new figure
    kept = jaxnn.prune_indices(model, 0.3).size
    assert f"{kept} of {model.X.shape[0]}" in right.get_title()
    # the kept prototypes are drawn: scatter points at exactly the pruned model's training points
    pruned = np.asarray(jaxnn.prune(model, 0.3).X)
    offsets = np.concatenate([c.get_offsets() for c in right.collections if c.get_offsets().shape[0]])
    assert all(np.any(np.all(np.isclose(offsets, p, atol=1e-5), axis=1)) for p in pruned)
    rendered(right, tmp_path, "map_theta.png")


def test_decision_map_multiclass(three_classes, tmp_path):
    d, model = three_classes
    fig, ax = plt.subplots()
    assert jaxnn.plot.decision_map(model, d.X_train, d.y_train, resolution=30, ax=ax) is ax
    rgb = np.asarray(ax.images[0].get_array(), np.float64)
    assert rgb.shape == (30, 30, 3) and 0.0 <= rgb.min() and rgb.max() <= 1.0
    rendered(ax, tmp_path)
    # each pixel: the colour of predict_proba's argmax class where it is drawn, faded toward white
    # as its p̂ falls to 1/C: 1 − rgb = 0.75·s·(1 − colour), s = (max p̂ − 1/C)/(1 − 1/C)
    from matplotlib.colors import to_rgb

    from jaxnn._src.plots import _CLASS_COLORS

    P = np.asarray(jaxnn.predict_proba(model, _pixel_centres(ax.images[0]).reshape(-1, 2)), np.float64)
    C = P.shape[1]
    colours = np.array([to_rgb(_CLASS_COLORS[c]) for c in range(C)])
    strength = (P.max(axis=1) - 1.0 / C) / (1.0 - 1.0 / C)
    want = 1.0 - 0.75 * strength[:, None] * (1.0 - colours[P.argmax(axis=1)])
    np.testing.assert_allclose(rgb.reshape(-1, 3), want, atol=1e-5)
    assert len(np.unique(P.argmax(axis=1))) == C  # every class's region is on the map


def test_decision_map_refuses_what_it_cannot_draw(model, ripley):
    X, y = ripley.X_train, ripley.y_train
    with pytest.raises(ValueError, match=r"2-D problems: X must have shape \(n, 2\), got \(120, 3\)"):
        jaxnn.plot.decision_map(model, np.c_[X, X[:, :1]], y)
    with pytest.raises(ValueError, match="shape"):
        jaxnn.plot.decision_map(model, X[:, 0], y)
    X3 = np.c_[X, X[:, 0] * X[:, 1]]
    model3 = jaxnn.fit(X3, y, k=5, posterior="link")
    with pytest.raises(ValueError, match="fit on 3 features, not 2"):
        jaxnn.plot.decision_map(model3, X, y)
    with pytest.raises(ValueError, match="not in classes"):
        jaxnn.plot.decision_map(model, X, y + 5)
    with pytest.raises(ValueError, match="120 labels"):
        jaxnn.plot.decision_map(model, X, y[:10])
    with pytest.raises(ValueError, match="fewer than k"):
        jaxnn.plot.decision_map(model, X, y, theta=0.01)
    with pytest.raises(ValueError, match="theta"):
        jaxnn.plot.decision_map(model, X, y, theta=1.5)
    with pytest.raises(TypeError, match="jaxnn Model"):
        jaxnn.plot.decision_map("model", X, y)
    with pytest.raises(TypeError, match="Axes"):
        jaxnn.plot.decision_map(model, X, y, ax="left")
    assert plt.get_fignums() == []  # every check came before a figure was made


def test_risk_trace(model, tmp_path):
    fig, ax = plt.subplots()
    assert jaxnn.plot.risk_trace(model, ax=ax) is ax
    x, risk = ax.lines[0].get_data()
    np.testing.assert_array_equal(x, np.arange(1, model.trace.shape[0] + 1))
    np.testing.assert_allclose(risk, np.asarray(model.trace), rtol=1e-6)
    m = model.X.shape[0]
    assert [line.get_xdata()[0] for line in ax.lines[1:]] == [m + 0.5]  # the end of pass 1
    assert ax.get_xlabel() == "boosting step" and ax.get_ylabel() == "surrogate risk"
    rendered(ax, tmp_path)


def test_risk_trace_needs_a_trace(three_classes):
    _, model = three_classes
    with pytest.raises(ValueError, match=r"no trace.*trace=True"):
        jaxnn.plot.risk_trace(model)


def test_pass_ends():
    assert _pass_ends(100, 100, 100) == []  # one pass
    assert _pass_ends(300, 300, 100) == [100, 200]
    assert _pass_ends(250, 250, 100) == [100, 200]  # 2.5 passes, one entry per step
    assert _pass_ends(36, 500, 250) == [18]  # colored: 18 schedule steps a pass
    assert _pass_ends(37, 500, 250) == []  # steps that do not split evenly: no marks


def test_reliability(model, ripley, tmp_path):
    ax = jaxnn.plot.reliability(model, ripley.X_test, ripley.y_test, bins=5)
    assert isinstance(ax, Axes)
    P = np.asarray(jaxnn.predict_proba(model, ripley.X_test), dtype=np.float64)
    brier = jaxnn.metrics.brier_score(ripley.y_test, P, classes=np.asarray(model.classes))
    legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
    assert f"Brier {brier:.3f}" in legend and "log loss" in legend and "ECE" in legend
    counts = [int(t.get_text()) for t in ax.texts]
    assert sum(counts) == ripley.X_test.shape[0]  # the counts above the bars cover every point
    rendered(ax, tmp_path)

    d_model = jaxnn.fit(ripley.X_train, ripley.y_train, k=5, posterior="link")
    fig, ax = plt.subplots()
    assert jaxnn.plot.reliability(d_model, ripley.X_test, ripley.y_test, ax=ax) is ax


def test_reliability_errors(model, ripley):
    with pytest.raises(ValueError, match="bins must be >= 1"):
        jaxnn.plot.reliability(model, ripley.X_test, ripley.y_test, bins=0)
    with pytest.raises(ValueError, match="not in classes"):
        jaxnn.plot.reliability(model, ripley.X_test, np.full(200, 7))
    Y = np.stack([ripley.y_train, 1 - ripley.y_train, ripley.y_train], axis=1)
    multilabel = jaxnn.fit(ripley.X_train, Y, k=5, posterior="link")
    with pytest.raises(ValueError, match="single-label"):
        jaxnn.plot.reliability(multilabel, ripley.X_test, ripley.y_test)


def test_pruning_curve(model, ripley, tmp_path):
    fig, ax = plt.subplots()
    thetas = [0.02, 0.1, 0.5, 1.0]  # 0.02 keeps 3 < k = 5 examples: skipped
    out = jaxnn.plot.pruning_curve(model, ripley.X_test, ripley.y_test, thetas=thetas, knn_draws=2, ax=ax)
    assert out is ax
    frac, error = ax.lines[0].get_data()
    m = model.X.shape[0]
    np.testing.assert_allclose(frac, [12 / m, 60 / m, 1.0])
    pruned = jaxnn.prune(model, 0.1)
    assert error[0] == pytest.approx(np.mean(jaxnn.predict(pruned, ripley.X_test) != ripley.y_test))
    assert error[-1] == pytest.approx(np.mean(jaxnn.predict(model, ripley.X_test) != ripley.y_test))
    assert any("random sample" in t.get_text() for t in ax.get_legend().get_texts())
    rendered(ax, tmp_path)


def test_pruning_curve_errors(model, ripley):
    with pytest.raises(ValueError, match="fewer than k=5"):
        jaxnn.plot.pruning_curve(model, ripley.X_test, ripley.y_test, thetas=[0.01, 0.02])
    with pytest.raises(ValueError, match="theta must lie in"):
        jaxnn.plot.pruning_curve(model, ripley.X_test, ripley.y_test, thetas=[0.5, 2.0])
    with pytest.raises(ValueError, match="knn_draws"):
        jaxnn.plot.pruning_curve(model, ripley.X_test, ripley.y_test, knn_draws=-1)


def test_without_matplotlib_says_how_to_install(monkeypatch, model, ripley):
    for name in ("matplotlib", "matplotlib.pyplot", "matplotlib.axes"):
        monkeypatch.setitem(sys.modules, name, None)  # import → ImportError
    for call in (lambda: jaxnn.plot.risk_trace(model),
                 lambda: jaxnn.plot.decision_map(model, ripley.X_train, ripley.y_train, resolution=5),
                 lambda: jaxnn.plot.reliability(model, ripley.X_test, ripley.y_test),
                 lambda: jaxnn.plot.pruning_curve(model, ripley.X_test, ripley.y_test, thetas=[1.0])):
        with pytest.raises(ImportError, match=r'pip install "jaxnn\[plot\]"'):
            call()


def test_import_jaxnn_imports_no_matplotlib():
    code = ("import sys, jaxnn; assert 'matplotlib' not in sys.modules and 'jaxnn.plot' not in sys.modules; "
            "assert 'plot' not in jaxnn.__all__; "
            "import jaxnn.plot; assert 'matplotlib' not in sys.modules; "
            "assert jaxnn.plot.decision_map is sys.modules['jaxnn.plot'].decision_map")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert jaxnn.plot is sys.modules["jaxnn.plot"]  # the lazy attribute
    with pytest.raises(AttributeError, match="no attribute 'plots'"):
        jaxnn.plots  # noqa: B018


def test_a_model_with_a_learned_metric_is_drawn_in_the_features_it_was_given(ripley):
    A = np.array([[2.0, 0.5], [-0.3, 1.5]])  # an invertible map
    model = jaxnn.fit(ripley.X_train, ripley.y_train, k=5, metric=A)
    ax = jaxnn.plot.decision_map(model, ripley.X_train, ripley.y_train, theta=0.5, resolution=20)
    kept = np.asarray(jaxnn.prune(model, 0.5).X) @ np.linalg.inv(A)  # the kept prototypes, unmapped
    offsets = np.concatenate([c.get_offsets() for c in ax.collections if c.get_offsets().shape[0]])
    assert all(np.any(np.all(np.isclose(offsets, p, atol=1e-4), axis=1)) for p in kept)
    fig, ax = plt.subplots()
    jaxnn.plot.pruning_curve(model, ripley.X_test, ripley.y_test, thetas=[0.5, 1.0], knn_draws=1, ax=ax)
    sample = jaxnn.knn_subsample(np.asarray(model.X), np.asarray(model.classes)[np.asarray(model.Y).argmax(1)],
                                 1.0, 0, k=5, size=model.X.shape[0])
    full_vote = np.mean(jaxnn.predict(dataclasses.replace(sample, transform=model.transform), ripley.X_test)
                        != ripley.y_test)
    assert ax.lines[1].get_data()[1][-1] == pytest.approx(full_vote)  # the vote under the model's metric
