"""Boosting engine: invariants, choosers, precision, determinism, bad inputs."""

import dataclasses
import logging
import math
import pickle
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxnn
from jaxnn._src.boosting import boost


def _blobs(m=240, C=3, d=4, seed=0, spread=1.5):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=spread, size=(C, d))
    y = rng.integers(0, C, size=m)
    X = centers[y] + rng.normal(size=(m, d))
    return X.astype(np.float32), y


CASES = [
    ("gnnb", "logistic"),
    ("gnnb", "squared"),
    ("gnnb", "binary_logistic"),
    ("gnnb", "matsushita"),
    ("unn", "exponential"),
    ("unn", "logistic"),
    ("unn", "squared"),
    ("unn", "amari(0.5)"),
    ("unn_fast", "matsushita"),
    ("unn_fast", "exponential"),
    ("n3", "calibrated_hinge"),
]


RISK_CASES = [(a, l, "lazy") for a, l in CASES] + [
    (a, l, c) for a, l in [("gnnb", "squared"), ("unn", "logistic"), ("n3", "calibrated_hinge")] for c in ("random", "greedy")
]


@pytest.mark.parametrize("algorithm, loss, chooser", RISK_CASES)
def test_surrogate_risk_never_increases(algorithm, loss, chooser):
    X, y = _blobs()
    model = jaxnn.fit(X, y, k=7, loss=loss, algorithm=algorithm, chooser=chooser, rounds=300, trace=True)
    risk = np.asarray(model.trace, dtype=np.float64)
    assert risk.shape == (300,)
    assert np.all(np.isfinite(risk))
    if algorithm == "unn_fast":  # eq. (30) is an approximation: no monotonicity guarantee
        return
    assert np.max(np.diff(risk)) <= 1e-5 * max(1.0, abs(risk[0]))
    assert risk[-1] < risk[0]
    # the trace agrees with the risk recomputed from the final edges
    Y = np.asarray(model.Y)
    H = np.asarray(model.alpha)  # rebuild edges from alpha on the training graph
    nb = np.asarray(jaxnn.knn_graph(X, 7).indices)
    E = Y * np.sum(H[nb] * Y[nb], axis=1)
    if algorithm == "n3":
        E = E + np.asarray(model.algorithm.init_edges(model.loss, model.Y))
    final = float(jaxnn.surrogate_risk(model.loss, E))
    assert final == pytest.approx(float(risk[-1]), rel=1e-4, abs=1e-5)


def _greedy_gnnb_reference(X, Y, nb, loss_w, hstar, eps, rounds):
    """float64 GNNB*: per class, leverage argmax_j |η_j|/n_j, recomputed from scratch."""
    m, C = Y.shape
    inv = [np.nonzero((nb == j).any(axis=1))[0] for j in range(m)]
    n = np.array([len(s) for s in inv])
    alpha = np.zeros((m, C))
    for c in range(C):
        e = np.zeros(m)
        for _ in range(rounds):
            w = loss_w(e)
            eta = np.array([np.sum(w[s] * Y[s, c]) * Y[j, c] for j, s in enumerate(inv)])
            score = np.abs(eta) / np.maximum(n, 1)
            # scores equal up to rounding are ties (the engine sums η
            # incrementally, this from scratch): the smallest j wins
            j = int(np.nonzero(score >= score.max() * (1 - 1e-12))[0][0])
            delta = 2 * (1 - eps) * eta[j] / (hstar * max(n[j], 1))
            e[inv[j]] += delta * Y[inv[j], c] * Y[j, c]
            alpha[j, c] += delta
    return alpha


def test_greedy_chooser_matches_recomputed_reference():
    X, y = _blobs(m=90, C=3, seed=3)
    nb = np.asarray(jaxnn.knn_graph(X, 5).indices)
    with jax.enable_x64(True):
        model = jaxnn.fit(X.astype(np.float64), y, k=5, loss="matsushita", chooser="greedy", rounds=40, neighbors=nb)
        alpha = np.asarray(model.alpha)
    Y = np.where(y[:, None] == np.arange(3)[None, :], 1.0, -1.0)
    w = lambda e: 2 * 0.5 * (1 - e / np.sqrt(1 + e * e))  # link(−e)/b, b = 1/2
    ref = _greedy_gnnb_reference(X, Y, nb, w, 1.0, 0.5, 40)
    np.testing.assert_allclose(alpha, ref, rtol=1e-7, atol=1e-9)


def _hub_graph(X, k, hub_of_row):
    """The exact kNN graph with row i's farthest neighbour replaced by the
    hub ``hub_of_row[i]`` (−1: none): inverse neighbourhoods of tens of
    members, so P ≥ 64 and steps run narrowed and chunked."""
    nb = np.asarray(jaxnn.knn_graph(X, k).indices).copy()
    for i, hub in enumerate(hub_of_row):
        if hub >= 0 and hub != i and hub not in nb[i]:
            nb[i, -1] = hub
    return nb


def test_step_widths():
    from jaxnn._src.boosting import NARROW_MIN_WORK, step_widths

    assert step_widths(502) == (16, 64, 502)
    assert step_widths(1024) == (16, 64, 256, 1024)
    assert step_widths(26) == (26,)  # narrow graphs: one plain full-width step
    assert step_widths(502, work=NARROW_MIN_WORK - 1) == (502,)  # small calls: not worth compiling
    assert step_widths(502, work=NARROW_MIN_WORK) == (16, 64, 502)


@pytest.fixture
def always_narrow(monkeypatch):
    """Narrow steps to n_j whatever the call's size (the engine otherwise
    keeps small calls at full width, cheaper to compile)."""
    from jaxnn._src import boosting, ensemble, window

    # NARROW_MIN_WORK is read when these trace: drop their compilations (only
    # theirs — clearing every cache made later tests recompile everything)
    jitted = (boosting.boost, window.boost_windowed, ensemble._boost_blocks)
    monkeypatch.setattr(boosting, "NARROW_MIN_WORK", 0)
    for f in jitted:
        f.clear_cache()
    yield
    for f in jitted:
        f.clear_cache()


@pytest.mark.parametrize("scan", ["plain", "windowed"])
@pytest.mark.parametrize("algorithm, loss", [("gnnb", "logistic"), ("unn", "exponential"), ("n3", "calibrated_hinge")])
def test_lazy_steps_on_hubs_match_reference(algorithm, loss, scan, always_narrow, request):
    """Steps on a graph with hubs (P ≥ 64: δ at the narrowest width ≥ n_j,
    edges written 16 members at a time) equal the float64 reference, and the
    trace is the reference's risk after each step — in one plain scan, and in
    the windowed scan (16 steps at a time on a local copy of their rows)."""
    import sys, os

    sys.path.insert(0, os.path.dirname(__file__))
    import reference as R

    from jaxnn._src import window
    from jaxnn._src.boosting import CHUNK, step_widths

    if scan == "windowed":
        request.getfixturevalue("windowed")
        assert window.window_steps(3, 5) == 16
    else:
        assert 180 * 3 < window.WINDOWED_MIN_STATE  # m·C: fit runs the plain scan

    X, y = _blobs(m=180, C=3, seed=11)
    nb = _hub_graph(X, 5, np.arange(180) % 2)  # rows take hubs 0 and 1 in turn
    P = int(np.bincount(nb.ravel(), minlength=len(X)).max())
    assert len(step_widths(P)) > 1 and P > 4 * CHUNK  # the narrowed, chunked path runs
    Y = np.where(y[:, None] == np.arange(3)[None, :], 1.0, -1.0)
    ref = {"gnnb": R.gnnb, "unn": R.unn, "n3": R.n3}[algorithm](Y, nb, loss)
    with jax.enable_x64(True):
        model = jaxnn.fit(X.astype(np.float64), y, k=5, loss=loss, algorithm=algorithm, neighbors=nb, trace=True)
        alpha, trace = np.asarray(model.alpha), np.asarray(model.trace)
    scale = np.abs(ref.alpha).max()
    np.testing.assert_allclose(alpha, ref.alpha, rtol=1e-6, atol=1e-8 * scale)
    np.testing.assert_allclose(trace, ref.parallel_risk, rtol=1e-7, atol=1e-10)


def _width_boundary_graph(m=300, k=4, seed=0):
    """A graph whose in-degrees sit on both sides of every step width: n_0 =
    m − 5 (P, widths 16, 64, P) and n_1..n_4 = 16, 17, 64, 65; other examples
    have a few members."""
    rng = np.random.default_rng(seed)
    nb = np.empty((m, k), np.int64)
    second = np.full(m, -1)
    start = 5
    for target, count in [(1, 16), (2, 17), (3, 64), (4, 65)]:
        second[start:start + count] = target
        start += count
    for i in range(m):
        fixed = [0, second[i]] if i >= 5 else []
        fixed = [t for t in fixed if t >= 0]
        pool = np.setdiff1d(np.arange(5, m), [i])
        nb[i] = fixed + list(rng.choice(pool, k - len(fixed), replace=False))
    return nb


@pytest.mark.parametrize("scan", ["plain", "windowed"])
def test_steps_at_width_boundaries_match_reference(scan, always_narrow, request):
    """An example with n_j one more than a step width runs at the next width
    (all its members count in δ): GNNB over every width boundary equals the
    float64 reference."""
    import sys, os

    sys.path.insert(0, os.path.dirname(__file__))
    import reference as R

    from jaxnn._src.boosting import step_widths

    if scan == "windowed":
        request.getfixturevalue("windowed")
    nb = _width_boundary_graph()
    n = np.bincount(nb.ravel(), minlength=len(nb))
    assert step_widths(int(n.max())) == (16, 64, int(n.max())) and list(n[1:5]) == [16, 17, 64, 65]
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(len(nb), 3)), rng.integers(0, 2, len(nb))
    Y = np.where(y[:, None] == np.arange(2)[None, :], 1.0, -1.0)
    ref = R.gnnb(Y, nb, "logistic")
    with jax.enable_x64(True):
        alpha = np.asarray(jaxnn.fit(X, y, k=4, loss="logistic", algorithm="gnnb", neighbors=nb).alpha)
    np.testing.assert_allclose(alpha, ref.alpha, rtol=1e-9, atol=1e-12)


@pytest.fixture(params=[None, 7], ids=["pairs-default", "pairs-7"])
def greedy_pairs(request, monkeypatch):
    """The greedy step's (member, class) pairs per update iteration: the
    default, or 7 (every step runs several iterations, one ending mid-class)."""
    from jaxnn._src import boosting

    if request.param is not None:
        monkeypatch.setattr(boosting, "GREEDY_PAIRS", request.param)  # read when boost traces
        boosting.boost.clear_cache()
    yield request.param
    if request.param is not None:
        boosting.boost.clear_cache()


def test_greedy_steps_on_hubs_match_recomputed_reference(always_narrow, greedy_pairs):
    """Greedy steps on a hub of ~90 members (its update: 128 pairs an
    iteration, or 7: dozens) equal GNNB* recomputed from scratch, and the
    trace never increases.  Random points and labels: blobs give pure
    neighbourhoods of equal structure, exact ties that rounding (incremental
    η here, from-scratch sums there) breaks either way."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(240, 4)), rng.integers(0, 3, 240)
    nb = _hub_graph(X, 5, np.where(y == 0, 0, -1))  # class-0 rows all point to hub 0
    assert np.bincount(nb.ravel())[0] > 4 * 16
    with jax.enable_x64(True):
        model = jaxnn.fit(X, y, k=5, loss="matsushita", chooser="greedy", rounds=60, neighbors=nb, trace=True)
        alpha = np.asarray(model.alpha)
    Y = np.where(y[:, None] == np.arange(3)[None, :], 1.0, -1.0)
    w = lambda e: 2 * 0.5 * (1 - e / np.sqrt(1 + e * e))  # link(−e)/b, b = 1/2
    ref = _greedy_gnnb_reference(X, Y, nb, w, 1.0, 0.5, 60)
    np.testing.assert_allclose(alpha, ref, rtol=1e-7, atol=1e-9)
    assert alpha[0, 0] != 0  # the hub's own step was taken
    assert np.max(np.diff(np.asarray(model.trace))) <= 1e-12


@pytest.mark.parametrize("algorithm, loss", [("gnnb", "logistic"), ("unn", "logistic"), ("n3", "matsushita")])
def test_float32_matches_float64(algorithm, loss):
    X, y = _blobs(m=200, seed=5)
    nb = np.asarray(jaxnn.knn_graph(X, 6).indices)
    a32 = np.asarray(jaxnn.fit(X, y, k=6, loss=loss, algorithm=algorithm, neighbors=nb).alpha)
    with jax.enable_x64(True):
        a64 = np.asarray(jaxnn.fit(X.astype(np.float64), y, k=6, loss=loss, algorithm=algorithm, neighbors=nb).alpha)
    assert a64.dtype == np.float64 and a32.dtype == np.float32
    np.testing.assert_allclose(a32, a64, rtol=1e-4, atol=1e-4 * np.abs(a64).max())


def test_posteriors_and_determinism():
    X, y = _blobs(m=200, seed=2)
    Xq, _ = _blobs(m=50, seed=9)
    m1 = jaxnn.fit(X, y, k=5, chooser="random", seed=4)
    m2 = jaxnn.fit(X, y, k=5, chooser="random", seed=4)
    m3 = jaxnn.fit(X, y, k=5, chooser="random", seed=5)
    np.testing.assert_array_equal(np.asarray(m1.alpha), np.asarray(m2.alpha))
    assert not np.array_equal(np.asarray(m1.alpha), np.asarray(m3.alpha))
    p = np.asarray(jaxnn.predict_proba(m1, Xq))
    assert p.shape == (50, 3) and p.min() >= 0 and p.max() <= 1
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-5)
    link = jaxnn.fit(X, y, k=5, chooser="random", seed=4, posterior="link")
    votes = jaxnn.fit(X, y, k=5, chooser="random", seed=4, posterior="votes")
    assert link.posterior_mix == 0.0 and votes.posterior_mix == 1.0 and 0.0 <= m1.posterior_mix <= 1.0
    pl, pv = np.asarray(jaxnn.predict_proba(link, Xq)), np.asarray(jaxnn.predict_proba(votes, Xq))
    lam = m1.posterior_mix
    np.testing.assert_allclose(p, (1 - lam) * pl + lam * pv, rtol=1e-5, atol=1e-6)
    nb = np.asarray(jaxnn.knn_query(X, Xq, 5).indices)
    np.testing.assert_allclose(pv, np.stack([(y[nb] == c).mean(1) for c in range(3)], 1), atol=1e-6)
    H = np.asarray(jaxnn.decision_function(link, Xq))
    raw = np.asarray(link.loss.posterior(H))
    np.testing.assert_allclose(pl, raw / raw.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(jaxnn.predict(m1, Xq), jaxnn.predict(m2, Xq))
    H = np.asarray(jaxnn.decision_function(m1, Xq))
    np.testing.assert_array_equal(jaxnn.predict(m1, Xq), np.argmax(H, axis=1))


@pytest.mark.xdist_group("nndescent")  # pynndescent's numba compilation (~45 s) once per worker
def test_auto_posterior_auxiliary_fit_uses_the_same_graph_method(monkeypatch):
    """posterior="auto" fits an auxiliary model on 80 %: its graph must come
    from the caller's graph_method (an exact graph there made an nndescent
    fit of 10⁵ points take 17 s instead of 4)."""
    from jaxnn._src import fitting as fit_mod

    seen = []
    real = fit_mod.knn_graph

    def spy(X, k, *, method="exact", **kw):
        seen.append((X.shape[0], method))
        return real(X, k, method=method, **kw)

    monkeypatch.setattr(fit_mod, "knn_graph", spy)
    X, y = _blobs(m=200, seed=2)
    jaxnn.fit(X, y, k=5, graph_method="nndescent")
    assert seen == [(200, "nndescent"), (160, "nndescent")]


@pytest.mark.xdist_group("nndescent")  # pynndescent's numba compilation (~45 s) once per worker
def test_prediction_from_a_pynndescent_index_readme_recipe():
    """The README's recipe: a pynndescent index on model.X, queried for k
    neighbours, fed to predict(neighbors=) — pynndescent's int32 (n, k) result
    is taken as it is, and its labels agree with the exact search's."""
    from pynndescent import NNDescent

    X, y = _blobs(m=400, C=3, seed=1)
    model = jaxnn.fit(X[:300], y[:300], k=5, posterior="link")
    index = NNDescent(np.asarray(model.X), n_neighbors=30, random_state=0)
    index.prepare()
    nb, _ = index.query(X[300:], k=model.k)
    assert nb.shape == (100, 5)
    agree = np.mean(jaxnn.predict(model, neighbors=nb) == jaxnn.predict(model, X[300:]))
    assert agree >= 0.95, agree


def test_fit_logs_its_stages_and_their_seconds(caplog):
    """At INFO, the "jaxnn" logger gets each stage as it starts and its wall
    time when done; at the default level nothing is emitted."""
    X, y = _blobs(m=200, C=3, seed=4)
    with caplog.at_level("WARNING", logger="jaxnn"):
        jaxnn.fit(X, y, k=5, posterior="link")
    assert not caplog.records
    with caplog.at_level("INFO", logger="jaxnn"):
        jaxnn.fit(X, y, k=5)
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == "fit: exact 5-NN graph of 200 points in 4 dimensions ..."
    assert re.fullmatch(r"fit: exact 5-NN graph of 200 points in 4 dimensions: \d+\.\d\d s", messages[1])
    assert any(re.fullmatch(r"fit: GNNB boosting \(logistic loss, lazy chooser, scan\), 200 steps x 3 classes: \d+\.\d\d s", msg)
               for msg in messages)
    assert "fit: posterior='auto': auxiliary fit on 160 points, Brier scores on the other 40" in messages
    assert re.fullmatch(r"fit: posterior='auto': held-out Brier score link \d\.\d{4}, votes \d\.\d{4} -> (link|votes)", messages[-1])
    caplog.clear()
    with caplog.at_level("INFO", logger="jaxnn"):
        jaxnn.fit(X, y, k=5, posterior="link", chooser="colored")
    messages = [r.getMessage() for r in caplog.records]
    assert any(re.fullmatch(r"fit: \d+ colours in \d+ scan steps a pass \(instead of 200 sequential steps\)", msg)
               for msg in messages), messages


def test_verbose_fits_in_overlapping_threads_keep_their_lines_and_restore_the_logger(caplog):
    """verbose=True is per call, also in threads (a threaded grid search):
    each verbose fit gets all its lines, a plain fit running beside them none,
    and the logger is as before once all are done.  Saved and restored per
    call, the short fit's exit dropped the long fit's later lines and left the
    logger at INFO for good."""
    import logging
    import threading

    small, large = _blobs(m=200, C=3, seed=4), _blobs(m=1600, C=3, seed=5)
    with caplog.at_level("WARNING"):  # logging configured by the app: its handlers print jaxnn's lines
        jaxnn.fit(*small, k=5, verbose=True)  # compiled; and the lines of one serial verbose fit
        serial = len(caplog.records)
        jaxnn.fit(*large, k=5)
        caplog.clear()
        jaxnn_logger = logging.getLogger("jaxnn")
        before = (jaxnn_logger.level, list(jaxnn_logger.handlers), list(jaxnn_logger.filters))
        start = threading.Barrier(3)
        idents = {}

        def run(name, data, verbose):
            start.wait()
            idents[name] = threading.get_ident()
            jaxnn.fit(*data, k=5, verbose=verbose)

        threads = [threading.Thread(target=run, args=args) for args in
                   (("short", small, True), ("long", large, True), ("plain", large, False))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        by_thread = {name: [r for r in caplog.records if r.thread == ident] for name, ident in idents.items()}
        assert len(by_thread["short"]) == serial and len(by_thread["long"]) == serial, {
            n: len(v) for n, v in by_thread.items()}
        assert by_thread["plain"] == []
        assert (jaxnn_logger.level, jaxnn_logger.handlers, jaxnn_logger.filters) == before
        caplog.clear()
        jaxnn.fit(*small, k=5)
        assert not caplog.records  # nothing left at INFO


def test_auto_chooser_runs_colored_on_accelerators_for_whole_passes():
    from jaxnn._src.boost_runs import auto_chooser

    assert auto_chooser(100, 100, "cpu") == "lazy"
    assert auto_chooser(100, 300, "gpu") == "colored"
    assert auto_chooser(100, 300, "tpu") == "colored"
    assert auto_chooser(100, 150, "gpu") == "lazy"  # the schedule runs whole passes only
    # on CPU from m·C = 5·10⁶ on (AUTO_COLORED_MIN_STATE_CPU), whole passes only
    assert auto_chooser(500_000, 500_000, "cpu", 10) == "colored"
    assert auto_chooser(100_000, 200_000, "cpu", 50) == "colored"
    assert auto_chooser(499_999, 499_999, "cpu", 10) == "lazy"
    assert auto_chooser(5_000_000, 5_000_000, "cpu") == "colored"
    assert auto_chooser(500_000, 750_000, "cpu", 10) == "lazy"


def test_fit_default_chooser_is_what_auto_chooser_says(monkeypatch):
    from jaxnn._src import sharding
    from jaxnn._src import fitting as fit_mod

    X, y = _blobs(m=150, C=3, seed=5)
    lazy = jaxnn.fit(X, y, k=5, chooser="lazy", posterior="link")
    colored = jaxnn.fit(X, y, k=5, chooser="colored", posterior="link")
    platform = sharding.platform()
    expected = lazy if fit_mod.auto_chooser(150, 150, platform, 3) == "lazy" else colored
    np.testing.assert_array_equal(np.asarray(jaxnn.fit(X, y, k=5, posterior="link").alpha), np.asarray(expected.alpha))
    seen = []
    monkeypatch.setattr(fit_mod, "auto_chooser", lambda m, rounds, platform, n_classes: seen.append((platform, n_classes)) or "colored")
    np.testing.assert_array_equal(np.asarray(jaxnn.fit(X, y, k=5, posterior="link").alpha), np.asarray(colored.alpha))
    assert seen == [(platform, 3)]


def test_chooser_order_refuses_a_chooser_without_a_fixed_sequence():
    from jaxnn._src.boosting import chooser_order

    with pytest.raises(ValueError, match="colored"):
        chooser_order("colored", 10, 10, 0)


def test_string_labels_and_classes_order():
    X, y = _blobs(m=120, C=3, seed=1)
    names = np.array(["cat", "ant", "bee"])[y]
    model = jaxnn.fit(X, names, k=5)
    assert model.classes == ("ant", "bee", "cat")
    assert model.alpha.shape == (120, 3)
    pred = jaxnn.predict(model, X[:10])
    assert set(pred) <= {"ant", "bee", "cat"}


def test_epsilon_beside_an_algorithm_object_is_refused_not_ignored():
    X, y = _blobs(m=60, C=2, seed=0)
    with pytest.raises(ValueError, match=r"epsilon=0.9 was given beside the algorithm object GNNB\(epsilon=0.1\)"):
        jaxnn.fit(X, y, k=3, algorithm=jaxnn.gnnb(0.1), epsilon=0.9)
    with pytest.raises(ValueError, match="epsilon"):
        jaxnn.fit(X, y, k=3, algorithm=jaxnn.unn(), epsilon=np.float32(0.2))
    by_name = jaxnn.fit(X, y, k=3, algorithm="gnnb", epsilon=0.1, posterior="link")
    as_object = jaxnn.fit(X, y, k=3, algorithm=jaxnn.gnnb(0.1), posterior="link")
    np.testing.assert_array_equal(np.asarray(by_name.alpha), np.asarray(as_object.alpha))


def test_a_column_of_labels_is_read_as_labels():
    # y[:, None] (a one-column DataFrame) was a one-label multilabel problem: classes (0,),
    # (n, 1) predictions; three classes in a column were refused as "not an indicator matrix"
    X, y = _blobs(m=120, C=3, seed=1)
    with pytest.warns(UserWarning, match=r"shape \(m, 1\): read as 1-D labels"):
        col = jaxnn.fit(X, y[:, None], k=5, posterior="link")
    flat = jaxnn.fit(X, y, k=5, posterior="link")
    assert col.classes == (0, 1, 2) and not col.multilabel
    np.testing.assert_array_equal(np.asarray(col.alpha), np.asarray(flat.alpha))
    assert jaxnn.predict(col, X[:7]).shape == (7,)
    with pytest.raises(ValueError, match="at least 2 columns"):
        jaxnn.fit(X, np.zeros((120, 0)), k=5)


def test_multilabel():
    X, Y = jaxnn.datasets.multilabel(n_samples=300, n_classes=4, seed=0)
    model = jaxnn.fit(X, Y, k=8, loss="matsushita", trace=True)
    assert model.multilabel and model.alpha.shape == (300, 4)
    P = jaxnn.predict(model, X)
    assert P.shape == (300, 4) and set(np.unique(P)) <= {0, 1}
    assert np.mean(P == Y) > 0.75
    pm = jaxnn.fit(X, 2 * Y - 1, k=8, loss="matsushita", trace=True)  # {-1,+1} accepted too
    np.testing.assert_array_equal(np.asarray(pm.alpha), np.asarray(model.alpha))
    assert np.max(np.diff(np.asarray(model.trace))) <= 1e-6


def test_multilabel_rare_label_and_posterior_auto():
    # a label with one positive example: the auxiliary 80 % fit of posterior="auto" may
    # miss it, and then takes the votes untested (λ = 1, what the choice keeps within one
    # standard error; it kept the link) instead of failing on a constant column
    X, Y = jaxnn.datasets.multilabel(n_samples=300, n_classes=4, seed=0)
    rare = np.zeros((300, 1), dtype=Y.dtype)
    rare[int(np.random.default_rng(0).permutation(300)[0])] = 1  # lands in the held-out 20 %
    model = jaxnn.fit(X, np.hstack([Y, rare]), k=8, posterior="auto")
    assert model.alpha.shape == (300, 5) and model.posterior_mix == 1.0


_HELD_FIRST = int(np.random.default_rng(0).permutation(60)[0])  # fit's seed 0 holds this point out first


@pytest.mark.parametrize("m, k, y_of, reason", [
    (45, 5, lambda i: i % 3, "45 points leave 9 < 10 to hold out"),
    (60, 47, lambda i: i % 3, "auxiliary fit's 48 points are too few for k=47"),
    (60, 5, lambda i: np.where(i == _HELD_FIRST, 3, i % 3), "a class has no example"),
])
def test_posterior_auto_takes_the_votes_where_it_cannot_hold_out(m, k, y_of, reason, caplog):
    # the fallback was the link, silently: on 45 iris points its Brier score was 0.144
    # against the votes' 0.095 on the other 105
    X = np.random.default_rng(1).normal(size=(m, 2))
    with caplog.at_level("INFO", logger="jaxnn"):
        model = jaxnn.fit(X, y_of(np.arange(m)), k=k)
    assert model.posterior_mix == 1.0
    assert any("takes the votes untested" in r.getMessage() and reason in r.getMessage() for r in caplog.records)


def test_ripley_close_to_bayes():
    sp = jaxnn.datasets.ripley(seed=0)
    bayes = float(np.mean(jaxnn.datasets.ripley_bayes_predict(sp.X_test) != sp.y_test))
    for algorithm, loss in [("gnnb", "logistic"), ("unn", "exponential"), ("n3", "calibrated_hinge")]:
        model = jaxnn.fit(sp.X_train, sp.y_train, k=10, loss=loss, algorithm=algorithm)
        err = float(np.mean(jaxnn.predict(model, sp.X_test) != sp.y_test))
        assert err < bayes + 0.04, (algorithm, err, bayes)


def test_unn_without_finite_root_caps_delta():
    """All r_i agree: without smoothing eq. (10) has no finite root → δ = ±max_delta;
    with the eq. (13) smoothing δ is finite (= ½ log((W⁺+1/m)/(1/m)) for exp)."""
    X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [5.2]], dtype=np.float32)
    y = np.array([0, 0, 0, 1, 1, 1])
    capped = jaxnn.fit(X, y, k=2, loss="exponential", algorithm=jaxnn.unn(smoothing=False, max_delta=7.0))
    a = np.asarray(capped.alpha)
    assert np.all(np.abs(a) == pytest.approx(7.0))
    smooth = jaxnn.fit(X, y, k=2, loss="exponential", algorithm="unn")
    s = np.asarray(smooth.alpha)
    assert np.all(np.isfinite(s)) and np.all(np.abs(s) < 7.0)
    # first step on j=0: inv(0) = {1, 2} both agree, W+ = 2, W- = 0, m = 6
    assert s[0, 0] == pytest.approx(0.5 * math.log((2 + 1 / 6) / (1 / 6)), rel=1e-5)
    logistic = jaxnn.fit(X, y, k=2, loss="logistic", algorithm=jaxnn.unn(smoothing=False, max_delta=7.0))
    assert np.all(np.abs(np.asarray(logistic.alpha)) == pytest.approx(7.0))


def test_unn_closed_form_equals_generic_root():
    X, y = _blobs(m=150, seed=7)
    exp_fast = jaxnn.losses.exponential()
    exp_generic = jaxnn.losses.from_psi(lambda x: jax.numpy.exp(-x), name="exp-generic")
    assert exp_generic.unn_closed_form is None
    with jax.enable_x64(True):
        X64 = X.astype(np.float64)
        a = np.asarray(jaxnn.fit(X64, y, k=6, loss=exp_fast, algorithm="unn").alpha)
        b = np.asarray(jaxnn.fit(X64, y, k=6, loss=exp_generic, algorithm="unn").alpha)
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_no_retrace_for_same_shapes():
    X, y = _blobs(m=100, seed=11)
    jaxnn.fit(X, y, k=4, loss="matsushita")
    before = boost._cache_size()
    jaxnn.fit(X + 1.0, y, k=4, loss="matsushita")
    jaxnn.fit(X, y[::-1].copy(), k=4, loss="matsushita", epsilon=0.5)
    assert boost._cache_size() == before


@pytest.mark.parametrize("algorithm, loss", [("n3", "calibrated_hinge"), ("gnnb", "phi_power(0.3)")])
def test_root_finding_losses_compile_once(algorithm, loss, caplog):
    """Fits and posteriors that run the loss's root finder eagerly (N³'s
    initial edges p̂⁻¹(π) of a ψ-defined loss; a derived link) compiled its
    fori_loop anew on every call: 0.2–0.3 s a fit where 0.007 s is the work."""
    import logging

    X, y = _blobs(m=120, seed=5)

    def fit_and_predict():
        model = jaxnn.fit(X, y, k=5, algorithm=algorithm, loss=loss, posterior="link")
        return jax.block_until_ready(jaxnn.predict_proba(model, X[:30]))

    fit_and_predict(), fit_and_predict()
    with caplog.at_level(logging.WARNING, logger="jax"), jax.log_compiles():
        fit_and_predict()
    compiled = [r.getMessage()[:90] for r in caplog.records if "Finished XLA compilation" in r.getMessage()]
    assert compiled == []


def test_predict_breaks_ties_toward_the_first_class_and_zero_is_negative():
    """H tied across classes → the first class (argmax's first); a multilabel
    H_c = 0 → not that label (H > 0), eagerly and under jit."""
    X, y = _blobs(m=60, C=3, seed=2)
    for labels, want in ((y + 10, 10), (np.array(["b", "a", "c"])[y], "a")):
        model = jaxnn.fit(X, labels, k=5, posterior="link")
        flat = dataclasses.replace(model, alpha=jnp.zeros_like(model.alpha))  # H ≡ 0 everywhere
        assert np.all(jaxnn.predict(flat, X[:7]) == want)
        if want == 10:
            assert np.all(np.asarray(jax.jit(jaxnn.predict)(flat, X[:7])) == 10)
    Y = np.stack([y == 0, y != 0], axis=1).astype(int)
    multi = jaxnn.fit(X, Y, k=5, posterior="link")
    flat = dataclasses.replace(multi, alpha=jnp.zeros_like(multi.alpha))
    assert jaxnn.predict(flat, X[:7]).sum() == 0
    assert int(jax.jit(jaxnn.predict)(flat, X[:7]).sum()) == 0


@pytest.mark.parametrize("labels", [np.array([3, 2**40]), np.array([1, 2**64 - 1], np.uint64),
                                    np.array([0.0, 2.0**24 + 1]), np.array([-1.0, 1e300])])
def test_predict_under_jit_refuses_labels_jax_cannot_hold(labels):
    """jax.jit(predict) answers in JAX's 32-bit dtypes: labels they cannot hold
    came back wrong without a word (2**40 → 0, 2**24 + 1 → 2**24, 1e300 → inf);
    they are refused by name, and labels that fit still predict as eagerly."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    side = (X[:, 0] > 0).astype(int)
    model = jaxnn.fit(X, labels[side], k=3, posterior="link")
    with pytest.raises(TypeError, match="cannot hold every class label"):
        jax.jit(jaxnn.predict)(model, X[:6])
    fits = np.array([3, 7] if labels.dtype.kind in "iu" else [-1.0, 2.0**24], labels.dtype)
    model = jaxnn.fit(X, fits[side], k=3, posterior="link")
    np.testing.assert_array_equal(np.asarray(jax.jit(jaxnn.predict)(model, X[:6])), jaxnn.predict(model, X[:6]))


def test_prediction_under_jit_equals_eager():
    X, y = _blobs(m=120, seed=3)
    model = jaxnn.fit(X, y, k=5, posterior="votes")
    Xq = jnp.asarray(_blobs(m=30, seed=4)[0])
    for fn in (jaxnn.decision_function, jaxnn.predict_proba, jaxnn.predict):
        want = np.asarray(fn(model, Xq))
        np.testing.assert_array_equal(np.asarray(jax.jit(fn)(model, Xq)), want)  # model traced too
        np.testing.assert_array_equal(np.asarray(jax.jit(lambda q, fn=fn: fn(model, q))(Xq)), want)  # closed over
    named = jaxnn.fit(X, np.array(["a", "b", "c"])[y], k=5)
    with pytest.raises(TypeError, match="numeric class labels"):
        jax.jit(jaxnn.predict)(named, Xq)
    with pytest.raises(ValueError, match="features"):
        jax.jit(jaxnn.decision_function)(model, Xq[:, :2])
    bad = X.copy()
    bad[0, 0] = np.nan
    bad_model = dataclasses.replace(model, X=jnp.asarray(bad))
    with pytest.raises(ValueError, match="NaN"):  # a concrete (closed-over) model is still checked
        jax.jit(lambda q: jaxnn.decision_function(bad_model, q))(Xq)


def test_prediction_from_precomputed_query_neighbors():
    """neighbors= (any search's (n, k) indices into model.X, or a Neighbors
    with ≥ k columns) gives the same H, posteriors and labels as the built-in
    exact search, with or without X, and under jax.jit."""
    X, y = _blobs(m=150, C=3, seed=5)
    Xq = _blobs(m=40, C=3, seed=6)[0]
    model = jaxnn.fit(X, y, k=5)
    assert 0.0 <= model.posterior_mix <= 1.0
    exact = jaxnn.knn_query(X, Xq, 5)
    wider = jaxnn.knn_query(X, Xq, 8)  # a Neighbors with more columns: its first 5
    for fn in (jaxnn.decision_function, jaxnn.predict_proba, jaxnn.predict):
        want = np.asarray(fn(model, Xq))
        for given in (exact, wider, exact.indices, np.asarray(exact.indices, np.int64)):
            np.testing.assert_array_equal(np.asarray(fn(model, neighbors=given)), want)
            np.testing.assert_array_equal(np.asarray(fn(model, Xq, neighbors=given)), want)
        jitted = jax.jit(lambda mdl, nb, fn=fn: fn(mdl, neighbors=nb))(model, exact.indices)
        np.testing.assert_array_equal(np.asarray(jitted), want)
    # other neighbours give other scores: the argument is used, not ignored
    shifted = (np.asarray(exact.indices) + 1) % 150
    assert not np.array_equal(np.asarray(jaxnn.decision_function(model, neighbors=shifted)),
                              np.asarray(jaxnn.decision_function(model, Xq)))
    H = np.asarray(jaxnn.decision_function(model, neighbors=shifted))
    want = np.sum(np.asarray(model.alpha)[shifted] * np.asarray(model.Y)[shifted], axis=1)
    np.testing.assert_allclose(H, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("neighbors, X, exc, match", [
    (None, None, TypeError, "give the query points X"),
    ("abc", None, TypeError, "neighbors must be an"),
    (np.zeros((4, 5)), None, TypeError, "integer index array"),
    (np.zeros((4, 5), bool), None, TypeError, "integer index array"),
    (np.zeros((4, 4), int), None, ValueError, "model.k = 5"),
    (np.zeros((4, 6), int), None, ValueError, "model.k = 5"),
    (np.zeros(5, int), None, ValueError, "shape"),
    (np.zeros((0, 5), int), None, ValueError, "at least one row"),
    (np.array([[0, 1, 2, 3, -1]]), None, ValueError, r"in \[0, 150\)"),
    (np.array([[0, 1, 2, 3, 150]]), None, ValueError, r"in \[0, 150\)"),
    (np.array([[0, 1, 2, 3, 3]]), None, ValueError, "row 0 repeats"),
    ([[0, 1, 2], [3, 4]], None, ValueError, "rectangular"),
    (np.array([[0, 1, 2, 3, 4]]), np.zeros((2, 4), np.float32), ValueError, "mismatched lengths"),
    (np.array([[0, 1, 2, 3, 4]]), np.zeros((1, 3), np.float32), ValueError, "features"),
    (np.array([[0, 1, 2, 3, 4]]), np.full((1, 4), np.nan, np.float32), ValueError, "NaN"),
])
def test_prediction_neighbors_bad_input(neighbors, X, exc, match):
    Xt, y = _blobs(m=150, C=3, seed=5)
    model = jaxnn.fit(Xt, y, k=5, posterior="link")
    for fn in (jaxnn.decision_function, jaxnn.predict_proba, jaxnn.predict):
        with pytest.raises(exc, match=match):
            fn(model, X, neighbors=neighbors)
    narrow = jaxnn.knn_query(Xt, Xt[:3], 4)
    with pytest.raises(ValueError, match="at least 5 columns"):
        jaxnn.predict(model, neighbors=narrow)
    with pytest.raises(ValueError, match="model.k = 5"):  # a traced array: its shape is still checked
        jax.jit(lambda nb: jaxnn.decision_function(model, neighbors=nb))(jnp.zeros((2, 4), jnp.int32))


def test_surrogate_risk_takes_a_loss_name_and_checks_edges():
    E = np.array([[0.5, -1.0], [2.0, 0.0]], np.float32)
    logistic = jaxnn.losses.get("logistic")
    assert float(jaxnn.surrogate_risk("logistic", E)) == float(jaxnn.surrogate_risk(logistic, E))
    with pytest.raises(ValueError, match="unknown loss"):
        jaxnn.surrogate_risk("nope", E)
    with pytest.raises(ValueError, match="NaN"):
        jaxnn.surrogate_risk(logistic, [np.nan])
    for bad in ("abc", None, []):
        with pytest.raises(TypeError, match="edges"):
            jaxnn.surrogate_risk(logistic, bad)


def test_numpy_scalars_are_valid_settings():
    X, y = _blobs(m=60, seed=0)
    a = jaxnn.fit(X, y, k=np.int64(3), epsilon=np.float32(0.5), seed=np.int32(0), trace=np.bool_(False))
    b = jaxnn.fit(X, y, k=3, epsilon=0.5)
    np.testing.assert_array_equal(np.asarray(a.alpha), np.asarray(b.alpha))
    assert jaxnn.fit(X, y.astype(np.float64), k=3).classes == (0.0, 1.0, 2.0)  # integral floats are labels


@pytest.mark.parametrize("loss", ["logistic", "exponential", "matsushita", "calibrated_hinge"])
@pytest.mark.parametrize("n_plus, n_minus, edge", [(500, 0, 0.0), (40, 1, 0.0), (10, 0, -16.0), (3, 2, 0.3)])
def test_unn_fast_step_is_accurate_in_float32_when_one_side_dominates(loss, n_plus, n_minus, edge):
    # W = W⁺/(W⁺ + W⁻) rounds to 1 in float32 once W⁻ ≪ W⁺ (smoothing mass 1/m
    # against hundreds of weights): δ was max_delta = 50 for the logistic loss
    # at n = 500, m = 10⁵ (17.4 is right); δ now comes from the smaller share
    from jaxnn._src.algorithms import UNNFast

    m = 10**5
    L = jaxnn.losses.get(loss)
    e = np.full(n_plus + n_minus, edge, np.float32)
    r = np.r_[np.ones(n_plus), -np.ones(n_minus)].astype(np.float32)
    got = float(UNNFast().delta(L, jnp.asarray(e)[:, None], jnp.asarray(r)[:, None], jnp.asarray([e.size]), m)[0])
    with jax.enable_x64(True):
        w = float(L.weight(jnp.float64(edge)))
        wp, wm = n_plus * w + 1 / m, n_minus * w + 1 / m  # eq. 13's smoothing mass on each side
        exact = {  # paper 003 Table 2 (rows B, F, D) and the hinge transfer inverted, in W± directly
            "logistic": math.log(wp / wm), "exponential": 0.5 * math.log(wp / wm),
            "matsushita": (wp - wm) / (2 * math.sqrt(wp * wm)), "calibrated_hinge": (wp - wm) / wm,
        }[loss]
    np.testing.assert_allclose(got, min(exact, 50.0), rtol=2e-5)


def test_unn_alpha_does_not_depend_on_a_wide_max_delta():
    """max_delta only bounds the root: where every root lies well inside, a
    wider bound must give the same α.  The root finder's fixed 50 float32
    iterations bisected ±max_delta too little: α was off by 4·10⁻⁴ at
    max_delta = 10¹⁰, by 604 at 10¹⁶ and by 1.6·10¹⁶ at 10³⁰ (float64 by
    5·10⁷ there), where the float64 reference reaches 7.9."""
    X, y = _blobs(m=40, C=3, seed=3)

    def fit(smoothing, max_delta):
        return jaxnn.fit(X, y, k=3, loss="logistic", algorithm=jaxnn.unn(smoothing, max_delta), rounds=120,
                         chooser="lazy", posterior="link")

    narrow = np.asarray(fit(True, 1e3).alpha)
    for wide in (1e16, 1e30):
        np.testing.assert_allclose(np.asarray(fit(True, wide).alpha), narrow, rtol=1e-5, atol=1e-5,
                                   err_msg=f"max_delta={wide:g}")
    unsmoothed = fit(False, 1e30)  # one-sided steps are ±10³⁰: α, H and posteriors stay finite
    assert np.all(np.isfinite(np.asarray(unsmoothed.alpha)))
    proba = np.asarray(jaxnn.predict_proba(unsmoothed, X))
    assert np.all((proba >= 0) & (proba <= 1))


def test_algorithm_factories_reject_bad_parameters():
    with pytest.raises(ValueError, match="max_delta must be finite"):
        jaxnn.unn(max_delta=float("inf"))
    for too_wide in (3e38, 1e31):  # α and H would overflow float32 (inf α, NaN posteriors at 3e38)
        with pytest.raises(ValueError, match=r"max_delta must be finite and lie in \(0, 1e\+30\]"):
            jaxnn.unn(smoothing=False, max_delta=too_wide)
        with pytest.raises(ValueError, match="max_delta"):
            jaxnn.unn_fast(max_delta=too_wide)
    with pytest.raises(ValueError, match="max_delta"):
        jaxnn.unn_fast(max_delta=0.0)
    with pytest.raises(TypeError, match="smoothing must be a bool"):
        jaxnn.unn(smoothing="no")
    with pytest.raises(TypeError, match="epsilon must be a real number"):
        jaxnn.gnnb(None)
    with pytest.raises(ValueError, match="epsilon"):
        jaxnn.gnnb(1.0)
    for eps in (0.0, 1.0):  # the classes themselves, as algorithm= objects, check too
        with pytest.raises(ValueError, match="epsilon"):
            jaxnn.GNNB(epsilon=eps)
    X, y = _blobs(m=40, seed=0)
    with pytest.raises(ValueError, match="max_delta"):
        jaxnn.fit(X, y, k=3, algorithm=jaxnn.UNN(max_delta=0.0))


def test_fit_takes_a_knn_graph_result_and_uses_its_first_k():
    X, y = _blobs(m=60, seed=0)
    graph = jaxnn.knn_graph(X, 5)
    want = jaxnn.fit(X, y, k=3, neighbors=np.asarray(graph.indices)[:, :3])
    np.testing.assert_array_equal(np.asarray(jaxnn.fit(X, y, k=3, neighbors=graph).alpha), np.asarray(want.alpha))
    whole = jaxnn.fit(X, y, k=5, neighbors=np.asarray(graph.indices))
    np.testing.assert_array_equal(np.asarray(jaxnn.fit(X, y, k=5, neighbors=graph).alpha), np.asarray(whole.alpha))
    with pytest.raises(ValueError, match="shape"):
        jaxnn.fit(X, y, k=6, neighbors=graph)


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(k=0), ValueError, "k must be"),
        (dict(k=60), ValueError, "k must be <"),
        (dict(k=2.0), TypeError, "k must be an integer"),
        (dict(loss="hinge2"), ValueError, "unknown loss"),
        (dict(loss=3), TypeError, "loss must be"),
        (dict(algorithm="adaboost"), ValueError, "unknown algorithm"),
        (dict(chooser="best"), ValueError, "unknown chooser"),
        (dict(epsilon=1.0), ValueError, "epsilon"),
        (dict(epsilon=0.0), ValueError, "epsilon"),
        (dict(rounds=0), ValueError, "rounds"),
        (dict(loss="exponential", algorithm="gnnb"), ValueError, "bounded curvature"),
        (dict(neighbors=np.zeros((60, 3), dtype=np.int32)), ValueError, "exclude each point"),
        (dict(neighbors=np.ones((60, 2), dtype=np.int32)), ValueError, "shape"),
        (dict(neighbors=np.full((60, 3), 99, dtype=np.int32)), ValueError, "indices in"),
        (dict(neighbors=np.ones((60, 3))), TypeError, "integer"),
        (dict(neighbors=(np.arange(60)[:, None] + np.array([1, 1, 2])) % 60), ValueError, "repeats an index"),
        (dict(neighbors=(np.arange(60)[:, None] + np.arange(1, 4)) % 60, graph_method="foo"), ValueError, "graph_method"),
        (dict(epsilon="a"), TypeError, "epsilon must be a real number"),
        (dict(epsilon=float("nan")), ValueError, "epsilon"),
        (dict(trace="no"), TypeError, "trace must be a bool"),
    ],
)
def test_fit_bad_arguments(kwargs, err, match):
    X, y = _blobs(m=60, seed=0)
    kwargs.setdefault("k", 3)
    with pytest.raises(err, match=match):
        jaxnn.fit(X, y, **kwargs)


def test_fit_bad_data():
    X, y = _blobs(m=60, seed=0)
    Xn = X.copy(); Xn[3, 1] = np.nan
    Xi = X.copy(); Xi[0, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        jaxnn.fit(Xn, y, k=3)
    with pytest.raises(ValueError, match="NaN or infinite"):
        jaxnn.fit(Xi, y, k=3)
    with pytest.raises(ValueError, match="mismatched lengths"):
        jaxnn.fit(X, y[:-1], k=3)
    with pytest.raises(ValueError, match="single class"):
        jaxnn.fit(X, np.zeros(60), k=3)
    with pytest.raises(ValueError, match="2-D"):
        jaxnn.fit(X[:, 0], y, k=3)
    with pytest.raises(TypeError, match="numbers"):
        jaxnn.fit(np.array([["a", "b"]] * 60), y, k=3)
    with pytest.raises(ValueError, match="indicator"):
        jaxnn.fit(X, np.full((60, 2), 3), k=3)
    for bad_y in ("abc", 3, {"a": 1}, None):
        with pytest.raises(TypeError, match="y must be an array of labels"):
            jaxnn.fit(X, bad_y, k=3)
    with pytest.raises(ValueError, match="non-integer floats"):  # regression targets, not classes
        jaxnn.fit(X, np.random.default_rng(0).random(60), k=3)
    indicators = np.stack([y == 0, y == 1, np.zeros(60, bool)], axis=1)
    with pytest.raises(ValueError, match="column 2 .* never positive"):
        jaxnn.fit(X, indicators, k=3)
    with pytest.raises(ValueError, match="all positive"):
        jaxnn.fit(X, np.stack([y == 0, np.ones(60, bool)], axis=1), k=3)
    with pytest.raises(ValueError, match="float32 range"):
        jaxnn.fit(X.astype(np.float64) * 1e39, y, k=3)
    with pytest.raises(ValueError, match="rectangular"):
        jaxnn.fit([[1.0, 2.0], [3.0]] * 30, y, k=3)
    model = jaxnn.fit(X, y, k=3)
    with pytest.raises(ValueError, match="float32 range"):
        jaxnn.predict(model, X.astype(np.float64) * 1e39)
    with pytest.raises(ValueError, match="features"):
        jaxnn.predict(model, X[:, :2])
    with pytest.raises(ValueError, match="NaN"):
        jaxnn.predict_proba(model, Xn)
    with pytest.raises(TypeError, match="Model"):
        jaxnn.predict("model", X)


@pytest.mark.parametrize("algorithm, loss", [("gnnb", "logistic"), ("unn", "logistic"), ("unn", "exponential"), ("n3", "calibrated_hinge"), ("unn_fast", "matsushita")])
@pytest.mark.parametrize("chunk", [None, 16])  # None: fit's default (one step a colour here); 16: colours cut into steps
def test_colored_schedule_equals_sequential_in_colour_order(algorithm, loss, chunk):
    from jaxnn._src.schedule import boost_colored, color_schedule, colored_order

    X, y = _blobs(m=400, C=4, seed=8)
    nb = np.asarray(jaxnn.knn_graph(X, 6).indices)
    inv = jaxnn.inverse_neighbors(nb)
    sched = color_schedule(nb) if chunk is None else color_schedule(nb, chunk=chunk)
    # a proper colouring: no two examples of a colour share an inverse-neighbourhood member
    members, counts = np.asarray(inv.members), np.asarray(inv.counts)
    for c in range(sched.n_colors):
        js = np.nonzero(sched.colors == c)[0]
        touched = np.concatenate([members[j, : counts[j]] for j in js])
        assert touched.size == np.unique(touched).size
    assert sched.n_colors < 60
    assert (sched.n_steps == sched.n_colors) if chunk is None else (sched.n_steps > 2 * sched.n_colors)
    # every step lies within one colour
    ex = np.asarray(sched.examples)
    for row in ex:
        assert np.unique(sched.colors[row[row < 400]]).size == 1
    order = colored_order(sched)
    assert sorted(order.tolist()) == list(range(400))
    with jax.enable_x64(True):
        X64 = X.astype(np.float64)
        col = jaxnn.fit(X64, y, k=6, loss=loss, algorithm=algorithm, chooser="colored", rounds=800, neighbors=nb, posterior="link", trace=True)
        Y = col.Y
        E0 = col.algorithm.init_edges(col.loss, Y)
        if chunk is not None:
            res = boost_colored(Y, E0, inv.counts, sched, algorithm=col.algorithm, loss=col.loss, passes=2, trace=True)
            col = dataclasses.replace(col, alpha=res.alpha, trace=res.trace)
        seq = boost(Y, E0, inv.members, inv.counts, jax.numpy.asarray(nb), jax.numpy.asarray(np.concatenate([order, order])),
                    algorithm=col.algorithm, loss=col.loss, greedy=False, trace=True)
    np.testing.assert_allclose(np.asarray(col.alpha), np.asarray(seq.alpha), rtol=1e-9, atol=1e-10)
    # risk after each step = sequential risk after that step's last example
    ends = np.cumsum((ex < 400).sum(axis=1))
    ends = np.concatenate([ends, ends + 400]) - 1
    np.testing.assert_allclose(np.asarray(col.trace), np.asarray(seq.trace)[ends], rtol=1e-9)


def test_color_schedule_layout():
    """The colours run in reverse of the largest-first colouring, and each is
    cut into steps of ``chunk`` units (n_j + 1 an example) counted from the
    colour's own first example, in index order."""
    from jaxnn._src.schedule import color_conflict_graph, color_schedule

    X, _ = _blobs(m=300, C=3, seed=4)
    nb = np.asarray(jaxnn.knn_graph(X, 6).indices)
    first_fit = color_conflict_graph(nb)
    chunk = 40
    sched = color_schedule(nb, chunk=chunk)
    np.testing.assert_array_equal(sched.colors, first_fit.max() - first_fit)
    n = np.bincount(nb.ravel(), minlength=len(nb))
    ex = np.asarray(sched.examples)
    steps = [row[row < len(nb)] for row in ex]
    expected = []
    for c in range(sched.n_colors):
        js = np.flatnonzero(sched.colors == c)  # index order
        units = n[js] + 1
        part = (np.cumsum(units) - units) // chunk
        expected += [js[part == p] for p in range(part.max() + 1)]
    assert len(steps) == len(expected) == sched.n_steps
    for got, want in zip(steps, expected):
        np.testing.assert_array_equal(got, want)


def test_unsmoothed_steps_when_every_weight_underflows():
    """float32 weights that underflow on both sides (W⁺ = W⁻ = 0): UNN's root
    is undefined and δ = 0, not NaN; UNN-fast's step, when only the r = −1 side
    underflows, is +max_delta as UNN's (all remaining weight on the + side)."""
    from jaxnn._src.algorithms import BLOCK

    r = jnp.asarray([[1.0], [-1.0]], jnp.float32)
    n = jnp.asarray([2])
    both = jnp.asarray([[120.0], [130.0]], jnp.float32)
    d = jaxnn.unn(smoothing=False).delta(jaxnn.losses.get("exponential"), both, r, n, 60, BLOCK)
    np.testing.assert_array_equal(np.asarray(d), [0.0])
    one = jnp.asarray([[0.0], [120.0]], jnp.float32)
    logistic = jaxnn.losses.get("logistic")
    fast = jaxnn.unn_fast(smoothing=False).delta(logistic, one, r, n, 60, BLOCK)
    exact = jaxnn.unn(smoothing=False).delta(logistic, one, r, n, 60, BLOCK)
    np.testing.assert_array_equal(np.asarray(fast), [50.0])
    np.testing.assert_array_equal(np.asarray(exact), [50.0])


def test_unn_closed_form_smoothing_scales_with_the_weight_at_zero():
    # eq. 13's smoothing mass is s·w(0): a closed-form δ and the generic root agree for a ψ with w(0) = 2
    from jaxnn._src.algorithms import BLOCK

    with jax.enable_x64(True):
        closed = jaxnn.losses.from_psi(lambda x: 2 * jnp.exp(-x), name="exp2", unn_closed_form=lambda p, n: 0.5 * jnp.log(p / n))
        generic = jaxnn.losses.from_psi(lambda x: 2 * jnp.exp(-x), name="exp2g")
        e, r, n = jnp.asarray([[0.3], [-0.2], [1.1]]), jnp.asarray([[1.0], [1.0], [-1.0]]), jnp.asarray([3])
        a, b = (float(jaxnn.unn().delta(L, e, r, n, 60, BLOCK)[0]) for L in (closed, generic))
    assert a == pytest.approx(b, rel=1e-12)


def test_colouring_is_proper_with_hubs_one_past_a_tier():
    # two hubs with n_j = 17 = 2⁴ + 1 sharing their last member must get different colours
    from jaxnn._src.schedule import color_conflict_graph

    m = 300
    nb = (np.arange(m)[:, None] + np.arange(1, 5)[None, :]) % m
    nb[:12, 0], nb[20:32, 0] = 100, 200
    nb[299] = [100, 200, 1, 2]
    assert list(np.bincount(nb.ravel(), minlength=m)[[100, 200]]) == [17, 17]
    colors = color_conflict_graph(nb, batch_elements=256)
    assert colors[100] != colors[200]
    assert all(len(set(colors[row])) == len(row) for row in nb)  # a row's neighbours share a member: itself


def test_color_schedule_steps_hold_at_least_256_units():
    from jaxnn._src.schedule import color_schedule

    nb = (np.arange(400)[:, None] + np.arange(1, 7)[None, :]) % 400
    a = color_schedule(nb, n_classes=1000, platform="cpu")  # STEP_ELEMENTS // 1000 < 256
    assert a.n_steps == color_schedule(nb, chunk=256).n_steps


def test_color_schedule_rejects_bad_chunk():
    from jaxnn._src.schedule import color_schedule

    nb = np.asarray(jaxnn.knn_graph(np.random.default_rng(0).normal(size=(30, 2)), 3).indices)
    with pytest.raises(ValueError, match="chunk"):
        color_schedule(nb, chunk=0)


def test_color_schedule_steps_follow_the_platform():
    """On CPU a step holds ~STEP_ELEMENTS/C edge × class updates (cache);
    on an accelerator whole colours up to STEP_ELEMENTS_ACCELERATOR/C.  Both
    are the same sequential order, so α agrees."""
    from jaxnn._src import sharding
    from jaxnn._src.schedule import boost_colored, color_schedule, colored_order

    X, y = _blobs(m=400, C=4, seed=8)
    nb = np.asarray(jaxnn.knn_graph(X, 6).indices)
    C = 1000  # CPU steps of max(256, 131 072 // 1000) = 256 units: colours are cut
    cpu = color_schedule(nb, n_classes=C, platform="cpu")
    gpu = color_schedule(nb, n_classes=C, platform="gpu")
    assert cpu.n_steps > cpu.n_colors
    assert gpu.n_steps == gpu.n_colors
    np.testing.assert_array_equal(colored_order(cpu), colored_order(gpu))
    default = color_schedule(nb, n_classes=C)
    assert default.n_steps == (cpu if sharding.platform() == "cpu" else gpu).n_steps
    model = jaxnn.fit(X, y, k=6, chooser="colored", posterior="link")
    E0 = model.algorithm.init_edges(model.loss, model.Y)
    counts = jaxnn.inverse_neighbors(nb).counts
    a = boost_colored(model.Y, E0, counts, cpu, algorithm=model.algorithm, loss=model.loss, passes=1, trace=False)
    b = boost_colored(model.Y, E0, counts, gpu, algorithm=model.algorithm, loss=model.loss, passes=1, trace=False)
    np.testing.assert_allclose(np.asarray(a.alpha), np.asarray(b.alpha), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(b.alpha), np.asarray(model.alpha), rtol=1e-5, atol=1e-6)


def test_stack_schedules_rejects_empty_and_mismatched_lists():
    from jaxnn._src.schedule import color_schedule, stack_schedules

    rng = np.random.default_rng(0)
    a = color_schedule(np.asarray(jaxnn.knn_graph(rng.normal(size=(30, 2)), 3).indices))
    b = color_schedule(np.asarray(jaxnn.knn_graph(rng.normal(size=(40, 2)), 3).indices))
    with pytest.raises(ValueError, match="at least one"):
        stack_schedules([])
    with pytest.raises(ValueError, match="different numbers of examples"):
        stack_schedules([a, b])


def test_colored_needs_whole_passes():
    X, y = _blobs(m=60)
    with pytest.raises(ValueError, match="multiple of m"):
        jaxnn.fit(X, y, k=3, chooser="colored", rounds=90)


def _plain_greedy_colouring(members, counts, nb):
    """The largest-first greedy colouring of the conflict graph, one vertex at a time."""
    m = counts.size
    colors = np.full(m, -1)
    for j in np.lexsort((np.arange(m), -counts)):
        taken = {colors[x] for i in members[j, : counts[j]] for x in nb[i]}
        colors[j] = next(c for c in range(m) if c not in taken)
    return colors


def _assert_proper(colors, nb):
    """Examples sharing an inverse-neighbourhood member (both in some NN(i)) differ in colour."""
    for row in nb:  # (a row may list a vertex twice: the hub rows below)
        vertices = np.unique(row)
        assert np.unique(colors[vertices]).size == vertices.size


def test_batched_colouring_is_proper_and_one_per_batch_equals_plain_greedy():
    from jaxnn._src.schedule import color_conflict_graph

    rng = np.random.default_rng(3)
    m, k = 500, 4
    nb = np.stack([rng.choice(np.delete(np.arange(m), i), k, replace=False) for i in range(m)])
    nb[: 150, 0] = np.where(np.arange(150) == 7, 8, 7)  # a hub: 7 is in ~150 neighbourhoods (P > 64)
    nb[150:190, 0] = np.where(np.arange(150, 190) == 9, 10, 9)  # a second, n_j in (16, 64]
    inv = jaxnn.inverse_neighbors(nb)
    counts, members = np.asarray(inv.counts), np.asarray(inv.members)
    assert counts.max() > 64 and ((counts > 16) & (counts <= 64)).any() and (counts <= 4).any()
    greedy = _plain_greedy_colouring(members, counts, nb)
    np.testing.assert_array_equal(color_conflict_graph(nb, batch_elements=1), greedy)
    batched = color_conflict_graph(nb, batch_elements=256)
    _assert_proper(batched, nb)
    # each vertex took its lowest free colour at its turn: at most its conflict degree
    for j in range(m):
        conflicting = {x for i in members[j, : counts[j]] for x in nb[i]} - {j}
        assert batched[j] <= len(conflicting)
    assert batched.max() + 1 <= 1.25 * (greedy.max() + 1)
    np.testing.assert_array_equal(color_conflict_graph(nb, batch_elements=256), batched)
    with pytest.raises(ValueError, match="batch_elements"):
        color_conflict_graph(nb, batch_elements=0)


def test_colouring_with_more_colours_than_the_first_bitmask_holds():
    """70 examples that pairwise conflict need 70 colours > the 64 bits first tried (k = 2)."""
    from itertools import combinations

    from jaxnn._src.schedule import color_conflict_graph

    clique = np.arange(70)
    pairs = np.array(list(combinations(clique, 2)))  # row i = 70 + p has NN = a pair of the clique
    nb = np.concatenate([np.stack([clique + 70, clique + 140], axis=1), pairs])  # clique rows point elsewhere
    colors = color_conflict_graph(nb)
    _assert_proper(colors, nb)
    assert np.unique(colors[clique]).size == 70


@pytest.fixture
def windowed(monkeypatch):
    """The windowed sequential scan for every size, with windows of 16 steps
    (fit otherwise keeps it for edge states of ≥ 2¹⁶ entries, ~2¹⁵ local entries a window)."""
    from jaxnn._src import window

    monkeypatch.setattr(window, "WINDOWED_MIN_STATE", 0)  # both are read outside jit:
    monkeypatch.setattr(window, "WINDOW_ELEMENTS", 16)  # no compilation to drop


@pytest.mark.parametrize("steps", [16, 48])
def test_windowed_scan_equals_plain_scan(steps):
    """boost_windowed on a random sequence over several passes (its length no
    multiple of the window; examples with n_j = 0 in it) equals boost, float64."""
    from jaxnn._src.boosting import chooser_order
    from jaxnn._src.window import boost_windowed, window_layout

    X, y = _blobs(m=150, C=4, seed=5)
    nb = np.array(jaxnn.knn_graph(X, 4).indices)
    to_hub = (np.arange(150) % 3 == 0) & (np.arange(150) != 7) & ~np.any(nb == 7, axis=1)
    nb[to_hub, -1] = 7  # a hub: windows from 1 to 8 row chunks wide
    counts = np.bincount(nb.ravel(), minlength=150)
    assert (counts == 0).any()
    chunks = np.asarray(window_layout(nb, chooser_order("random", 150, 407, seed=3), steps).chunks)
    # windows copy different numbers of row chunks (the widest its real rows: U is rounded up)
    assert chunks.min() < chunks.max() <= 8
    order = chooser_order("random", 150, 407, seed=3)
    with jax.enable_x64(True):
        model = jaxnn.fit(X.astype(np.float64), y, k=4, rounds=1, neighbors=nb, posterior="link")
        Y, algo, loss = model.Y, model.algorithm, model.loss
        E0 = algo.init_edges(loss, Y)
        inv = jaxnn.inverse_neighbors(nb)
        plain = boost(Y, E0, inv.members, inv.counts, jax.numpy.asarray(nb), jax.numpy.asarray(order),
                      algorithm=algo, loss=loss, greedy=False, trace=True)
        got = boost_windowed(Y, E0, inv.counts, window_layout(nb, order, steps), algorithm=algo, loss=loss,
                             trace=True, n_steps=order.size, max_count=int(counts.max()))
    np.testing.assert_allclose(np.asarray(got.alpha), np.asarray(plain.alpha), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(got.edges), np.asarray(plain.edges), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(got.trace), np.asarray(plain.trace), rtol=1e-12)


def test_fit_runs_sequential_choosers_windowed_from_the_state_threshold(monkeypatch):
    from jaxnn._src import window

    calls = []
    real = window.boost_windowed
    monkeypatch.setattr(window, "boost_windowed", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    X, y = _blobs(m=300, C=4)  # m·C = 1200 edge entries
    for threshold, chooser, expected in [(1200, "lazy", 1), (1200, "random", 1), (1201, "lazy", 0), (0, "greedy", 0), (0, "colored", 0)]:
        monkeypatch.setattr(window, "WINDOWED_MIN_STATE", threshold)
        calls.clear()
        jaxnn.fit(X, y, k=5, chooser=chooser, posterior="link")
        assert len(calls) == expected, (threshold, chooser)


def test_auto_posterior_scores_at_most_max_scored_held_out_points(monkeypatch, caplog):
    """posterior="auto" scores a seeded random subset of at most MAX_SCORED
    held-out points (the exact query of all 20 % took half of a 10⁶-point fit);
    the auxiliary model is still fit on the whole 80 %."""
    from jaxnn._src import fitting as fit_mod

    seen = []
    real = fit_mod._posterior_parts

    def spy(model, X, **how):
        seen.append((model.X.shape[0], np.asarray(X)))
        return real(model, X, **how)

    monkeypatch.setattr(fit_mod, "_posterior_parts", spy)
    monkeypatch.setattr(fit_mod, "MAX_SCORED", 25)
    X, y = _blobs(m=200, C=3, seed=4)
    with caplog.at_level("INFO", logger="jaxnn"):
        capped = jaxnn.fit(X, y, k=5, seed=3)
    perm = np.random.default_rng(3).permutation(200)
    assert len(seen) == 1 and seen[0][0] == 160
    np.testing.assert_array_equal(seen[0][1], X[perm[:25]])
    assert "fit: posterior='auto': auxiliary fit on 160 points, Brier scores on 25 of the other 40" in [
        r.getMessage() for r in caplog.records]
    # the choice is the one-standard-error rule on those 25 points
    aux = jaxnn.fit(X[perm[40:]], y[perm[40:]], k=5, seed=3, posterior="link")
    p_link, p_votes = (np.asarray(p, float) for p in real(aux, X[perm[:25]]))
    target = (y[perm[:25]][:, None] == np.arange(3)[None, :]).astype(float)
    brier = np.stack([np.sum((p - target) ** 2, axis=1) for p in (p_link, p_votes)], axis=1)
    best = int(np.argmin(brier.mean(0)))
    se = (brier - brier[:, [best]]).std(axis=0, ddof=1) / 5.0
    assert capped.posterior_mix == float(np.nonzero(brier.mean(0) <= brier.mean(0)[best] + se)[0].max())
    seen.clear()
    monkeypatch.setattr(fit_mod, "MAX_SCORED", 40)  # the whole 20 %: as before the cap
    jaxnn.fit(X, y, k=5, seed=3)
    np.testing.assert_array_equal(seen[0][1], X[perm[:40]])


def test_one_standard_error_rule():
    """The last candidate within one standard error (std with ddof = 1 over
    √n, of the paired differences to the best) of the best mean."""
    from jaxnn._src.fitting import _one_standard_error_choice

    # differences to the best (column 0): 0.9, −0.1 → mean 0.4, se = 1/2 (ddof = 0: 0.354)
    assert _one_standard_error_choice(np.array([[0.1, 1.0], [0.2, 0.1]])) == 1
    assert _one_standard_error_choice(np.array([[0.1, 1.0], [0.2, 0.3]])) == 0  # 0.9, 0.1: mean 0.5 > se 0.4
    assert _one_standard_error_choice(np.array([[0.0, 0.3], [0.0, 0.3], [0.0, 0.3]])) == 0  # se 0 < mean 0.3
    assert _one_standard_error_choice(np.array([[0.3, 0.0], [0.3, 0.0]])) == 1  # the last is the best


def test_auto_posterior_with_given_neighbors_derives_the_auxiliary_graph(monkeypatch, caplog):
    """fit(neighbors=...) with posterior="auto" runs no neighbour search: the
    80 % fit's graph is graph.subgraph of the caller's (an exact search of the
    80 % could take minutes where the caller brought an approximate graph)."""
    from jaxnn._src import graph as graph_mod
    from jaxnn._src import fitting as fit_mod

    searches = []
    monkeypatch.setattr(fit_mod, "knn_graph", lambda *a, **kw: searches.append(a) or graph_mod.knn_graph(*a, **kw))
    given, rounds = [], []
    real_fit = fit_mod._fit_checked  # the checked fit: the main one, then the auxiliary one

    def spy_fit(*args, **kw):
        given.append(kw.get("neighbors"))
        rounds.append(kw.get("rounds"))
        return real_fit(*args, **kw)

    monkeypatch.setattr(fit_mod, "_fit_checked", spy_fit)
    X, y = _blobs(m=200, C=3, seed=4)
    nb = np.asarray(graph_mod.knn_graph(X, 5).indices)
    with caplog.at_level("INFO", logger="jaxnn"):
        model = jaxnn.fit(X, y, k=5, neighbors=nb, seed=3)
    assert not searches and 0.0 <= model.posterior_mix <= 1.0
    tr = np.random.default_rng(3).permutation(200)[40:]
    assert len(given) == 2 and rounds == [200, 160]  # the rounds scale with the 80 %: one pass each
    np.testing.assert_array_equal(given[1], graph_mod.subgraph(X, nb, tr))
    assert any(r.getMessage().startswith("fit: posterior='auto': 5-NN graph of the 160 points from the full graph (two hops)")
               for r in caplog.records)
    # without given neighbours the 80 % fit's graph is an exact search of the 80 %
    # (done with the scored points' query: graph.graph_and_query)
    given.clear()
    jaxnn.fit(X, y, k=5, seed=3)
    assert len(given) == 2 and given[0] is None and len(searches) == 1  # knn_graph: the full fit's graph only
    np.testing.assert_array_equal(given[1], np.asarray(graph_mod.knn_graph(X[tr], 5).indices))


def test_auto_posterior_searches_the_auxiliary_graph_and_the_scored_points_at_once():
    """A fit of new shapes with posterior="auto" compiles one exact search:
    the 80 %'s graph and the scored points' neighbours come from one search
    (graph.graph_and_query) — not a third for the query — padded to the
    shapes of the search of all m points, whose program serves both (~0.25 s
    each on 2 CPU cores; three programs in stop 25, two in stop 26); and one
    boosting, the auxiliary fit padded to the main fit's shapes."""
    from jaxnn._src import boosting
    from jaxnn._src import search as search_mod

    # m = 600 (640 rows) and the 80 %'s 480 (512 rows alone): the auxiliary search takes the main one's
    X, y = _blobs(m=600, C=7, seed=6)  # 7 classes: a boosting shape no other test uses
    X = np.c_[X, X[:, :1] * 0.5]  # a width no other test uses: every search shape is new
    before = search_mod._conditioned_search._cache_size(), boosting.boost._cache_size()
    model = jaxnn.fit(X, y, k=5, seed=2)
    after = search_mod._conditioned_search._cache_size(), boosting.boost._cache_size()
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)
    assert model.posterior_mix in (0.0, 1.0)


@pytest.mark.parametrize("kind", ["uint8", "bool"])
def test_auto_posterior_with_given_neighbors_derives_from_float_points(kind, monkeypatch):
    """The derived 80 % graph is computed on the points as floats: uint8
    differences used to wrap (0.8 % of rows right) and bool points crashed."""
    from jaxnn._src import fitting as fit_mod

    rng = np.random.default_rng(2)
    X = rng.integers(0, 256, (300, 4)).astype(np.uint8) if kind == "uint8" else rng.random((300, 6)) > 0.5
    y = (X[:, 0] > (128 if kind == "uint8" else 0)).astype(int)
    nb = np.asarray(jaxnn.knn_graph(X.astype(np.float32), 5).indices)
    seen = []
    real = fit_mod.subgraph
    monkeypatch.setattr(fit_mod, "subgraph", lambda *a: seen.append(real(*a)) or seen[-1])
    model = jaxnn.fit(X, y, k=5, neighbors=nb, seed=1)
    assert 0.0 <= model.posterior_mix <= 1.0
    tr = np.random.default_rng(1).permutation(300)[60:]
    np.testing.assert_array_equal(seen[0], real(X.astype(np.float32), nb, tr))


def test_prediction_neighbors_given_as_a_search_result_pair():
    X, y = _blobs(m=100, C=3, seed=5)
    model = jaxnn.fit(X, y, k=5, posterior="link")
    nb = jaxnn.knn_query(X, X[:4], 5)
    with pytest.raises(TypeError, match="pass the indices"):
        jaxnn.predict(model, neighbors=(np.asarray(nb.indices), np.asarray(nb.distances)))


def test_prediction_from_neighbors_does_not_retrace():
    """Given neighbours of one shape, later calls (other indices, other models of
    the same shapes) reuse the compiled scoring: nothing retraces."""
    from jaxnn._src.prediction import _scores

    X, y = _blobs(m=120, C=3, seed=8)
    model = jaxnn.fit(X, y, k=4, posterior="link")
    other = jaxnn.fit(X + 0.5, y, k=4, posterior="link")
    nb = np.asarray(jaxnn.knn_query(X, X[:30], 4).indices)
    jaxnn.predict_proba(model, neighbors=nb)
    jaxnn.decision_function(model, neighbors=nb)
    before = _scores._cache_size()
    for mdl in (model, other):
        jaxnn.decision_function(mdl, neighbors=(nb + 1) % 120)
        jaxnn.predict_proba(mdl, neighbors=nb[::-1].copy())
        jaxnn.predict(mdl, neighbors=jaxnn.knn_query(X, X[:30], 4))
    assert _scores._cache_size() == before


def test_batches_of_other_sizes_share_the_compiled_prediction():
    """Query batches are padded to sizes_mod.query_rows: after one batch, batches of
    other sizes within the same bucket (here 1 … 128 rows) reuse the compiled
    search, scores and posteriors — only a slice to n rows is compiled anew —
    and give what each point gives alone (the padding changes nothing)."""
    from jaxnn._src import search as search_mod
    from jaxnn._src.prediction import _mixed_posterior, _scores

    X, y = _blobs(m=300, C=3, seed=8)
    model = jaxnn.fit(X, y, k=4, posterior="auto")
    Xq = X[:128] + 0.05
    p_all = np.asarray(jaxnn.predict_proba(model, Xq))
    H_all = np.asarray(jaxnn.decision_function(model, Xq))
    labels_all = jaxnn.predict(model, Xq)
    watched = (_scores, _mixed_posterior, search_mod._conditioned_search)
    before = [f._cache_size() for f in watched]
    for n in (1, 7, 50, 127):
        np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(model, Xq[:n])), p_all[:n], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(np.asarray(jaxnn.decision_function(model, Xq[:n])), H_all[:n], rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(jaxnn.predict(model, Xq[:n]), labels_all[:n])
        assert jaxnn.knn_query(X, Xq[:n], 4).indices.shape == (n, 4)
    assert [f._cache_size() for f in watched] == before


def test_query_rows_buckets():
    """query_rows: whole blocks, their number at two significant bits up to 64
    blocks and four beyond — never below n, at most half (then an eighth)
    more than the whole blocks."""
    from jaxnn._src.shared_sizes import query_rows

    assert [query_rows(n) for n in (1, 128, 129, 257, 640, 769, 8192, 8193, 9217)] == [
        128, 128, 256, 384, 768, 1024, 8192, 9216, 10240]
    for n in range(1, 30_000, 37):
        for block in (1, 5, 128):
            rows, blocks = query_rows(n, block), -(-n // block)
            assert rows >= n and rows % block == 0
            assert rows <= blocks * block * (3 / 2 if blocks <= 64 else 9 / 8)
    assert len({query_rows(n) for n in range(1, 10_001)}) == 14


def test_scoring_makes_no_neighbor_by_class_gather():
    """H = Σ_t (α∘Y)[nb[:, t]] adds one neighbour column at a time: the (n, k, C)
    gather of α[nb]·Y[nb] held 11.7 GB (and 22.6 s) to score 10⁶ queries with
    C = 100 (now 0.33 GB, 0.42 s).  XLA's own buffer plan, no timing."""
    from jaxnn._src import baselines
    from jaxnn._src.prediction import _scores, _vote_fractions

    m, n, k, C = 20_000, 100_000, 10, 100
    rows, idx = jax.ShapeDtypeStruct((m, C), jnp.float32), jax.ShapeDtypeStruct((n, k), jnp.int32)
    gather_bytes = n * k * C * 4
    count = jax.ShapeDtypeStruct((), jnp.int32)  # the first k columns of more (select's candidates)
    for fn, args in ((_scores, (rows, rows, idx)), (_scores, (rows, rows, idx, count)), (_vote_fractions, (rows, idx))):
        assert fn.lower(*args).compile().memory_analysis().temp_size_in_bytes < gather_bytes / 10, fn.__name__
    votes = baselines._votes.lower(jax.ShapeDtypeStruct((m,), jnp.int32), idx, C=C, output="counts", dtype=jnp.float32)
    assert votes.compile().memory_analysis().temp_size_in_bytes < gather_bytes / 10


def test_window_layout_in_pieces_is_the_layout_at_once(monkeypatch):
    """window_layout works LAYOUT_WINDOWS windows at a time (its temporaries,
    ~90 bytes per step and member, held 1.0 GB for 4 passes at m = 10⁵,
    k = 30, now 0.24 GB); any piece size gives the same layout, hubs (pieces
    of different widths U) and a last window cut short included."""
    from jaxnn._src import window
    from jaxnn._src.boosting import chooser_order

    rng = np.random.default_rng(2)
    m, k = 700, 6
    nb = np.stack([rng.choice(np.delete(np.arange(m), i), k, replace=False) for i in range(m)])
    nb[rng.random(m) < 0.4, -1] = 3  # a hub
    nb[3, -1] = 4
    order = chooser_order("random", m, 2 * m + 5, 0)
    monkeypatch.setattr(window, "LAYOUT_WINDOWS", 10**9)
    whole = window.window_layout(nb, order, 16)
    for piece in (1, 3):
        monkeypatch.setattr(window, "LAYOUT_WINDOWS", piece)
        for a, b in zip(whole, window.window_layout(nb, order, 16)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_fit_and_predict_on_float64_points_far_from_zero():
    # timestamps-like features: float32 kept ~7 digits of 10⁸ ± 1 (every point one value,
    # accuracy 0.53); the model now stores X centred in float64 and shifts queries alike
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(400, 2))
    y = (Z[:, 0] > 0).astype(int)
    shift = np.array([1e8, -3e7])
    near = jaxnn.fit(Z[:300], y[:300], k=5, posterior="link")
    far = jaxnn.fit(Z[:300] + shift, y[:300], k=5, posterior="link")
    assert near.origin is None and far.origin is not None
    np.testing.assert_allclose(np.asarray(far.origin), shift.astype(np.float32))
    np.testing.assert_allclose(np.asarray(far.alpha), np.asarray(near.alpha), atol=1e-6)
    Q = Z[300:] + shift
    np.testing.assert_array_equal(jaxnn.predict(far, Q), jaxnn.predict(near, Z[300:]))
    H = np.asarray(jaxnn.decision_function(far, Q))
    np.testing.assert_allclose(H, np.asarray(jaxnn.decision_function(near, Z[300:])), atol=1e-5)
    # under jit a float32 query is shifted in float32 (exactly here: the query and the
    # origin both lie on float32's grid), with eager's result
    Qj = jnp.asarray(np.round(Q), jnp.float32)
    np.testing.assert_allclose(np.asarray(jax.jit(jaxnn.decision_function)(far, Qj)),
                               np.asarray(jaxnn.decision_function(far, np.asarray(Qj))), atol=1e-6)
    pruned = jaxnn.prune(far, 0.5)
    assert pruned.origin is far.origin
    sub = jaxnn.knn_subsample(Z + shift, y, theta=0.5, k=5)
    assert sub.origin is not None and np.mean(jaxnn.predict(sub, Q) == y[300:]) > 0.9


def test_messages_for_common_slips():
    # from a new-user audit: each slip got a message that did not point to the fix
    import scipy.sparse as sparse  # scikit-learn's dependency, in the test extras

    X, y = _blobs(m=60, C=2, seed=0)
    with pytest.raises(ValueError, match="did you mean 'lazy'"):
        jaxnn.fit(X, y, k=3, chooser="Lazy")
    with pytest.raises(ValueError, match="did you mean 'votes'"):
        jaxnn.fit(X, y, k=3, posterior="vote")
    with pytest.raises(ValueError, match="did you mean 'exact'"):
        jaxnn.knn_graph(X, 3, method="exakt")
    with pytest.raises(ValueError, match="did you mean 'gnnb'"):
        jaxnn.fit(X, y, k=3, algorithm="gnb")
    with pytest.raises(ValueError, match="did you mean 'iris'"):
        jaxnn.datasets.load("Iris")
    with pytest.raises(ValueError) as err:  # nothing close: no suggestion
        jaxnn.fit(X, y, k=3, graph_method="zzz")
    assert "did you mean" not in str(err.value)
    with pytest.raises(TypeError, match=r"X is a sparse matrix \(csr_matrix\).*X.toarray\(\)"):
        jaxnn.fit(sparse.csr_matrix(X), y, k=3)
    wide = np.asarray(jaxnn.knn_graph(X, 5).indices)
    with pytest.raises(ValueError, match=r"pass neighbors\[:, :3\]"):
        jaxnn.fit(X, y, k=3, neighbors=wide)
    assert jaxnn.fit(X, y, k=jnp.int32(3), posterior="link").k == 3  # a 0-d integer array is an integer
    with pytest.raises(TypeError, match="k must be an integer"):
        jaxnn.fit(X, y, k=jnp.float32(3))


class _NullableFrame:
    """What pandas' nullable columns (Float64, Int64) look like to NumPy: an
    object array (pd.NA for missing values) and a ``to_numpy(dtype, na_value)``."""

    def __init__(self, values):
        self.values = np.asarray(values, float)

    def __array__(self, dtype=None, copy=None):
        return np.array([[None if np.isnan(v) else v for v in row] for row in self.values], dtype=object)

    def to_numpy(self, dtype=None, na_value=None):
        return np.where(np.isnan(self.values), na_value, self.values).astype(dtype)


def test_nullable_columns_are_numbers_and_missing_values_nan():
    # a stand-in for pandas (not a dependency); the test below uses pandas where it is installed
    X, y = _blobs(m=60, C=2, seed=0)
    np.testing.assert_array_equal(np.asarray(jaxnn.fit(_NullableFrame(X), y, k=3, posterior="link").alpha),
                                  np.asarray(jaxnn.fit(X, y, k=3, posterior="link").alpha))
    holed = X.copy()
    holed[4, 1] = np.nan
    assert np.asarray(_NullableFrame(holed)).dtype == object
    with pytest.raises(ValueError, match="NaN"):  # was "X must hold numbers, got dtype object"
        jaxnn.fit(_NullableFrame(holed), y, k=3)


def test_pandas_nullable_columns_are_numbers():
    pd = pytest.importorskip("pandas")  # not a dependency: skipped where it is not installed
    X, y = _blobs(m=60, C=2, seed=0)
    frame = pd.DataFrame(X).astype("Float64")  # pandas' nullable floats: an object array to NumPy once NA is in
    np.testing.assert_array_equal(np.asarray(jaxnn.fit(frame, y, k=3, posterior="link").alpha),
                                  np.asarray(jaxnn.fit(X, y, k=3, posterior="link").alpha))
    frame.iloc[4, 1] = pd.NA
    with pytest.raises(ValueError, match="NaN"):  # was "X must hold numbers, got dtype object"
        jaxnn.fit(frame, y, k=3)


def test_verbose_prints_the_stages_to_stderr(caplog):
    code = ("import numpy as np, jaxnn; X = np.random.default_rng(0).normal(size=(80, 2)); "
            "jaxnn.fit(X, np.arange(80) % 2, k=3, posterior='link', verbose=True); "
            "jaxnn.fit(X, np.arange(80) % 2, k=3, posterior='link')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("jaxnn: ")]
    assert lines[0] == "jaxnn: fit: exact 3-NN graph of 80 points in 2 dimensions ..."
    assert re.fullmatch(r"jaxnn: fit: GNNB boosting .*: \d+\.\d\d s", lines[-1])
    assert len(lines) == 4  # the second, quiet fit printed nothing
    # with logging configured (pytest's own handler here), the records go there, once
    X, y = _blobs(m=60, C=2, seed=0)
    logger = logging.getLogger("jaxnn")
    before = logger.level, list(logger.handlers)
    jaxnn.fit(X, y, k=3, posterior="link", verbose=True)  # the jaxnn logger is at its default level
    assert sum("exact 3-NN graph" in r.getMessage() for r in caplog.records) == 2  # start and end
    assert (logger.level, logger.handlers) == before
    with pytest.raises(TypeError, match="verbose must be a bool"):
        jaxnn.fit(X, y, k=3, verbose="yes")


@pytest.mark.parametrize("labels", [
    np.array([0.0, 1.0, 2.0], np.float32),
    np.array([3, 7, 9], np.uint8),
    np.array(["2020-01-01", "2021-06-01", "2022-01-01"], "datetime64[D]"),
    np.array(["ant", "bee", "cat"]),
])
def test_predict_answers_in_the_labels_dtype(labels):
    """predict's labels have y's dtype, as scikit-learn's classifiers' do
    (float32 labels came back float64, datetime64 as datetime.date objects),
    for jaxnn.predict, a pickled model and the split models."""
    import pickle

    X, y = _blobs(m=90, C=3, seed=2)
    y_named = labels[y]
    model = jaxnn.fit(X, y_named, k=4)
    got = jaxnn.predict(model, X)
    assert got.dtype == labels.dtype
    np.testing.assert_array_equal(got, labels[np.argmax(np.asarray(jaxnn.decision_function(model, X)), axis=1)])
    assert model.classes == tuple(labels)
    assert jaxnn.predict(pickle.loads(pickle.dumps(model)), X[:5]).dtype == labels.dtype
    assert jaxnn.ensemble.predict_split(jaxnn.ensemble.fit_split(X, y_named, n_splits=2, k=4), X[:5]).dtype == labels.dtype


def test_a_float64_model_predicts_in_float32_once_x64_is_off():
    """A model fit inside `with jax.enable_x64(True):` and used after it: one
    warning of ours (not a dozen of JAX's dtype truncations), float32 results
    equal to the float64 model's to float32 precision, under jit too."""
    import warnings

    X, y = _blobs(m=80, C=3, seed=5)
    X = X.astype(np.float64)
    with jax.enable_x64(True):
        model = jaxnn.fit(X, y, k=4)
        sm = jaxnn.ensemble.fit_split(X, y, n_splits=2, k=4)
        p64 = np.asarray(jaxnn.predict_proba(model, X))
        labels64 = jaxnn.predict(model, X)
        split64 = np.asarray(jaxnn.ensemble.predict_proba_split(sm, X))
    assert model.alpha.dtype == np.float64
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        p32 = jaxnn.predict_proba(model, X)
        labels32 = jaxnn.predict(model, X)
        split32 = jaxnn.ensemble.predict_proba_split(sm, X)
    messages = [str(w.message) for w in seen]
    assert len(messages) == 3 and all("fit in float64" in msg for msg in messages), messages
    assert seen[0].filename == __file__  # points at the caller's line
    assert p32.dtype == np.float32 and split32.dtype == np.float32
    np.testing.assert_allclose(np.asarray(p32), p64, atol=1e-5)
    np.testing.assert_allclose(np.asarray(split32), split64, atol=1e-5)
    np.testing.assert_array_equal(labels32, labels64)


@pytest.mark.parametrize("offset", [0.0, 1e8])
def test_a_float64_model_far_from_zero_used_after_x64_is_centred_like_a_float32_fit(offset):
    """The float32 copy of a model fit under x64 stores its points as a
    float32 fit does: features far from 0 centred first.  Cast as stored,
    points at 10⁸ ± 1 became one and predicted at chance (0.395 for 0.775,
    3 classes) — Model, fit_split's SplitModel (norm=None) and the k-NN
    baseline alike; SGD and SVM models warn once a call too (JAX's own
    truncation warnings before)."""
    import warnings

    from jaxnn import baselines

    X, y = _blobs(m=420, C=3, seed=8, spread=1.2)
    X, y, Xq, yq = X[:300], y[:300], X[300:], y[300:]
    X, Xq = X.astype(np.float64) + offset, Xq.astype(np.float64) + offset
    with jax.enable_x64(True):
        fitted = {"model": jaxnn.fit(X, y, k=10, posterior="link"),
                  "split": jaxnn.ensemble.fit_split(X, y, n_splits=2, k=10, norm=None),
                  "knn": baselines.knn_fit(X, y, k=10),
                  "sgd": baselines.sgd_fit(X - offset, y), "svm": baselines.svm_fit(X - offset, y)}
        want = {name: np.asarray(jaxnn.predict(m, Xq)) if name == "model" else
                np.asarray(jaxnn.ensemble.predict_split(m, Xq)) if name == "split" else
                np.asarray(baselines.predict(m, Xq - (offset if name in ("sgd", "svm") else 0.0)))
                for name, m in fitted.items()}
    assert min(np.mean(w == yq) for w in want.values()) > 0.6
    # pickled and loaded without x64 too: JAX's array pickling cast to float32 uncentred on loading
    # (0.48 accuracy for 0.99 at 10⁸ ± 1, no warning); now the loaded model is narrowed on use alike
    loaded = {f"{name} (pickled)": pickle.loads(pickle.dumps(m)) for name, m in fitted.items()}
    want.update({f"{name} (pickled)": want[name] for name in fitted})
    for name, m in {**fitted, **loaded}.items():
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            got = (np.asarray(jaxnn.predict(m, Xq)) if name.startswith("model") else
                   np.asarray(jaxnn.ensemble.predict_split(m, Xq)) if name.startswith("split") else
                   np.asarray(baselines.predict(m, Xq - (offset if name[:3] in ("sgd", "svm") else 0.0))))
        assert [str(w.message)[:50] for w in seen] == [f"this {type(m).__name__} was fit in float64 (under jax_enable_x64)"[:50]], name
        assert np.mean(got == want[name]) >= 0.98, (name, np.mean(got == want[name]))
    with pytest.warns(UserWarning, match="fit in float64"):
        narrowed = jaxnn._src.model.without_float64(fitted["model"])
    assert narrowed.X.dtype == np.float32 and (narrowed.origin is None) == (offset == 0.0)


def test_a_traced_model_centres_a_float64_numpy_query_in_float64():
    """jax.jit(lambda model: predict(model, Xq)) with Xq float64 NumPy (what the
    README advises far from 0): the model's origin is then a tracer, and the
    query was cast to float32 before the shift — 0.315 accuracy for 0.775 at
    10⁸ ± 1.  It is split into float32 parts hi + lo, hi − origin exact."""
    X, y = _blobs(m=420, C=3, seed=8, spread=1.2)
    X, y, Xq = X[:300], y[:300], X[300:]
    X, Xq = X.astype(np.float64) + 1e8, Xq.astype(np.float64) + 1e8
    model = jaxnn.fit(X, y, k=10, posterior="link")
    assert model.origin is not None
    eager = np.asarray(jaxnn.predict_proba(model, Xq))
    traced = np.asarray(jax.jit(lambda m: jaxnn.predict_proba(m, Xq))(model))
    np.testing.assert_allclose(traced, eager, atol=1e-5)


def test_auto_posterior_from_given_neighbors_centres_points_far_from_zero():
    """The 80 % graph derived from given neighbours (graph.subgraph) is computed
    on points centred like fit's: cast as given, float64 points at 10⁸ ± 1
    collapsed and the choice flipped (link → votes, predict_proba off by 0.32)."""
    from jaxnn._src import fitting as fit_mod

    given = []
    real_fit = fit_mod._fit_checked  # each fit's checked part: the main fit, then the auxiliary one
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(fit_mod, "_fit_checked", lambda *a, **kw: given.append(kw["neighbors"]) or real_fit(*a, **kw))
    X, y = _blobs(m=300, C=3, seed=8, spread=1.2)
    nb = np.asarray(jaxnn.knn_graph(X, 10).indices)
    try:
        near = jaxnn.fit(X, y, k=10, neighbors=nb, seed=4)
        far = jaxnn.fit(X.astype(np.float64) + 1e8, y, k=10, neighbors=nb, seed=4)
    finally:
        monkeypatch.undo()
    assert len(given) == 4
    np.testing.assert_array_equal(given[3], given[1])  # the 80 %'s graph (97 % of its entries differed before)
    assert far.posterior_mix == near.posterior_mix
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(far, X.astype(np.float64) + 1e8)),
                               np.asarray(jaxnn.predict_proba(near, X)), atol=1e-5)


def test_refits_on_other_data_of_one_shape_reuse_the_compiled_boosting():
    """fit pads the members array to sizes_mod.shared_width: data sets of one shape
    whose largest inverse neighbourhoods differ (cross-validation folds,
    refits) run one compiled boost, with the α of the exact width (to float
    rounding: a wider δ sums its padding zeros in another order)."""
    from jaxnn._src.boosting import boost
    from jaxnn._src.inverse import inverse_counts
    from jaxnn._src.shared_sizes import shared_width

    sets = [_blobs(m=200, C=3, seed=s) for s in (11, 12, 13, 14)]
    widths = [int(inverse_counts(np.asarray(jaxnn.knn_graph(X, 5).indices)).max()) for X, _ in sets]
    same = [i for i in range(1, 4) if shared_width(widths[i]) == shared_width(widths[0]) and widths[i] != widths[0]]
    assert same, widths  # data whose exact widths differ but share a padded width
    other = same[0]
    jaxnn.fit(*sets[0], k=5, chooser="lazy", posterior="link")
    before = boost._cache_size()
    X, y = sets[other]
    model = jaxnn.fit(X, y, k=5, chooser="lazy", posterior="link")
    assert boost._cache_size() == before
    nb = np.asarray(jaxnn.knn_graph(X, 5).indices)
    inv = jaxnn.inverse_neighbors(nb)  # the exact width
    algo = model.algorithm
    E0 = algo.init_edges(model.loss, model.Y)
    ref = boost(model.Y, E0, inv.members, inv.counts, jnp.asarray(nb), jnp.arange(200, dtype=jnp.int32),
                algorithm=algo, loss=model.loss, greedy=False, trace=False)
    np.testing.assert_allclose(np.asarray(model.alpha), np.asarray(ref.alpha), rtol=1e-5, atol=1e-6)


def test_a_sliced_graph_of_a_larger_set_is_refused_with_the_reason():
    """cross_val_score(params={"neighbors": nb}) slices nb's rows per fold but
    not the indices in them: the error says so (it named only the range)."""
    X, y = _blobs(m=200, C=3, seed=9)
    nb = np.asarray(jaxnn.knn_graph(X, 5).indices)
    with pytest.raises(ValueError, match=r"indices in \[0, 120\).*cross-validation slices the rows"):
        jaxnn.fit(X[:120], y[:120], k=5, neighbors=nb[:120], posterior="link")


def test_predict_of_a_traced_model_drops_the_padded_query_rows():
    """A traced model with concrete queries (closed over in a jitted function,
    or vmap over models): the queries are padded to a shared size, and
    predict returned the padding too — 128 labels for 50 queries — where
    decision_function and predict_proba dropped it."""
    X, y = _blobs(m=200, C=3, seed=12)
    model = jaxnn.fit(X, y, k=5, posterior="link")
    Xq, want = X[:50], jaxnn.predict(model, X[:50])
    closed = jax.jit(lambda mm: jaxnn.predict(mm, Xq))(model)
    np.testing.assert_array_equal(np.asarray(closed), want)
    twice = jax.tree.map(lambda a: jnp.stack([a, a]), model)
    mapped = jax.vmap(lambda mm: jaxnn.predict(mm, Xq))(twice)
    assert mapped.shape == (2, 50)
    np.testing.assert_array_equal(np.asarray(mapped[1]), want)


def test_an_x64_model_far_from_zero_stays_right_under_jit_once_x64_is_off():
    """fit (as fit_split and knn_fit) centres float64 points far from 0 under
    x64 too: a model whose float64 leaves JAX casts to float32 — rebuilt from
    NumPy leaves or unpickled, then traced with x64 off — keeps its points
    apart.  Stored uncentred, they became one (0.6 agreement, silently)."""
    X, y = _blobs(m=300, C=3, seed=13, spread=1.2)
    X = X.astype(np.float64) + 1e8
    with jax.enable_x64(True):
        model = jaxnn.fit(X[:200], y[:200], k=10, posterior="link")
        want = np.asarray(jaxnn.predict(model, X[200:]))
        knn = jaxnn.baselines.knn_fit(X[:200], y[:200], k=10)
        want_knn = np.asarray(jaxnn.baselines.predict(knn, X[200:]))
    assert model.origin is not None and knn.origin is not None
    leaves, treedef = jax.tree_util.tree_flatten(model)
    rebuilt = jax.tree_util.tree_unflatten(treedef, [np.asarray(a) for a in leaves])
    Xq = X[200:]  # float64 NumPy, closed over (a jit argument would be cast to float32 before jaxnn sees it)
    got = np.asarray(jax.jit(lambda mm: jaxnn.predict(mm, Xq))(rebuilt))
    np.testing.assert_array_equal(got, want)
    with pytest.warns(UserWarning, match="fit in float64"):
        np.testing.assert_array_equal(np.asarray(jaxnn.baselines.predict(knn, Xq)), want_knn)
