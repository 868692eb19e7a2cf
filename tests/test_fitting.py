"""fit: settings and inputs, posterior="auto", logging and verbose, refits, points far from zero."""

import logging
import os
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxnn

sys.path.insert(0, os.path.dirname(__file__))
from _data import _blobs, assert_same_refit  # noqa: E402
from jaxnn._src import platforms


@pytest.mark.xdist_group("nndescent")  # pynndescent's numba compilation (~45 s) once per worker
def test_auto_posterior_with_an_nndescent_graph_searches_once(monkeypatch):
    """posterior="auto" with graph_method="nndescent" searches one graph: the
    auxiliary fits on 80 % take theirs, and their scored points' neighbours,
    from the full search's candidate lists (graph.subgraph with the 2k
    candidates a point nndescent found) — a second nndescent search of 80 %
    cost nearly what the first did."""
    from jaxnn._src import fitting as fit_mod
    from jaxnn._src.graph import subgraph

    seen, derived = [], []
    real, real_subgraphs = fit_mod.graph_candidates, fit_mod.subgraph_and_rows

    def spy(X, k, *, method, **kw):
        out = real(X, k, method=method, **kw)
        seen.append((X.shape[0], method, out[1], np.asarray(out[0].indices)))
        return out

    def subgraph_spy(*args, **kw):
        derived.append((kw["candidates"], real_subgraphs(*args, **kw)))
        return derived[-1][1]

    monkeypatch.setattr(fit_mod, "graph_candidates", spy)
    monkeypatch.setattr(fit_mod, "subgraph_and_rows", subgraph_spy)
    m, k = 300, 2  # an 80 % of 240 ≥ 48·k² points: derived from the lists, not searched exactly
    X, y = _blobs(m=m, seed=2)
    jaxnn.fit(X, y, k=k, graph_method="nndescent", seed=4)
    (searched,) = seen
    assert searched[:2] == (m, "nndescent") and searched[2].shape == (m, 2 * k)
    folds = fit_mod.held_out_folds(m, m // 5, 4)  # cross-fitted: 60 < MIN_SCORED held out
    assert len(derived) == len(folds) == 4
    for (lists, got), (tr, val) in zip(derived, folds):
        assert lists is searched[2]
        for part, rows in zip(got, (None, val)):
            np.testing.assert_array_equal(part, subgraph(X, searched[3], tr, rows=rows, candidates=searched[2]))


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
    from jaxnn._src import sharding
    from jaxnn._src.plan import auto_chooser

    # chooser="auto": the lazy scan on CPU at this size, the colored schedule on a GPU
    how = {"lazy": "lazy chooser, scan", "colored": "colored chooser, colour schedule"}[
        auto_chooser(200, 200, platforms.platform(), 3)]
    assert any(re.fullmatch(rf"fit: GNNB boosting \(logistic loss, {how}\), 200 steps x 3 classes: \d+\.\d\d s", msg)
               for msg in messages)
    assert "fit: held-out choice: auxiliary fit on 160 points, scored on the other 40" in messages
    assert re.fullmatch(r"fit: held-out choice: temperature \d\S*, leverage shrinkage \d\.\d, held-out log loss "
                        r"\d\.\d{4}, Brier score \d\.\d{4}",
                        messages[-1])
    caplog.clear()
    with caplog.at_level("INFO", logger="jaxnn"):
        jaxnn.fit(X, y, k=5, posterior="link", chooser="colored")
    messages = [r.getMessage() for r in caplog.records]
    assert any(re.fullmatch(r"fit: \d+ colours in \d+ scan steps a pass \(instead of 200 sequential steps\)", msg)
               for msg in messages), messages


@pytest.mark.slow
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


def test_multilabel_rare_label_and_posterior_auto(caplog):
    # a label with one positive example: the auxiliary 80 % fit of posterior="auto" that
    # holds it out cannot fit it; that fold is left out (logged) and the others choose T
    X, Y = jaxnn.datasets.multilabel(n_samples=300, n_classes=4, seed=0)
    rare = np.zeros((300, 1), dtype=Y.dtype)
    rare[int(np.random.default_rng(0).permutation(300)[0])] = 1  # lands in the first held-out 20 %
    with caplog.at_level("INFO", logger="jaxnn"):
        model = jaxnn.fit(X, np.hstack([Y, rare]), k=8, posterior="auto")
    assert model.alpha.shape == (300, 5) and model.posterior_mix == 0.0 and model.posterior_temperature > 0
    assert any(r.getMessage() == "fit: held-out choice: 1 of 4 folds left out: a label has no positive (or no "
               "negative) example in the auxiliary fit's 80 %" for r in caplog.records)
    assert not any("training points' own scores" in r.getMessage() for r in caplog.records)
    P = np.asarray(jaxnn.predict_proba(model, X))
    assert P.shape == (300, 5) and np.all((P > 0) & (P < 1))


_HELD_FIRST = int(np.random.default_rng(0).permutation(1000)[0])  # fit's seed 0 holds this point out first


def _training_temperature(model, X, y, k):
    """The temperature of least log loss on the training points' own scores
    (each point's k nearest others): posterior="auto"'s fallback."""
    from jaxnn._src.calibration import fit_temperature, targets
    from jaxnn._src.prediction import held_out_scores

    graph = np.asarray(jaxnn.knn_graph(X, k).indices)
    H = held_out_scores(model, jnp.asarray(X, jnp.float32), found=graph).H
    return fit_temperature(H, targets(y, np.arange(X.shape[0]), model.classes, model.multilabel), model.multilabel)


@pytest.mark.parametrize("m, k, y_of, reason", [
    (45, 5, lambda i: i % 3, "45 points leave 9 < 10 to hold out"),
    (60, 47, lambda i: i % 3, "auxiliary fit's 48 points are too few for k=47"),
    # 200 held out: one fold, whose 80 % lacks the class of one example
    (1000, 5, lambda i: np.where(i == _HELD_FIRST, 3, i % 3), "a class has no example"),
])
def test_posterior_auto_fits_the_temperature_on_the_training_scores_where_it_cannot_hold_out(m, k, y_of, reason,
                                                                                              caplog):
    # the fallback was the link, silently (on 45 iris points its Brier score was 0.144
    # against the votes' 0.095 on the other 105), then the votes untested; now the
    # temperature is fit on the training points' own scores, with a log line saying why
    X = np.random.default_rng(1).normal(size=(m, 2))
    y = y_of(np.arange(m))
    with caplog.at_level("INFO", logger="jaxnn"):
        model = jaxnn.fit(X, y, k=k)
    assert model.posterior_mix == 0.0 and model.posterior_temperature > 0
    assert any("training points' own scores" in r.getMessage() and reason in r.getMessage() for r in caplog.records)
    assert model.posterior_temperature == pytest.approx(_training_temperature(model, X, y, k), rel=1e-6)


@pytest.mark.slow
def test_ripley_close_to_bayes():
    sp = jaxnn.datasets.ripley(seed=0)
    bayes = float(np.mean(jaxnn.datasets.ripley_bayes_predict(sp.X_test) != sp.y_test))
    for algorithm, loss in [("gnnb", "logistic"), ("unn", "exponential"), ("n3", "calibrated_hinge")]:
        model = jaxnn.fit(sp.X_train, sp.y_train, k=10, loss=loss, algorithm=algorithm)
        err = float(np.mean(jaxnn.predict(model, sp.X_test) != sp.y_test))
        assert err < bayes + 0.04, (algorithm, err, bayes)


def test_numpy_scalars_are_valid_settings():
    X, y = _blobs(m=60, seed=0)
    a = jaxnn.fit(X, y, k=np.int64(3), epsilon=np.float32(0.5), seed=np.int32(0), trace=np.bool_(False))
    b = jaxnn.fit(X, y, k=3, epsilon=0.5)
    assert_same_refit(np.asarray(a.alpha), np.asarray(b.alpha))
    assert jaxnn.fit(X, y.astype(np.float64), k=3).classes == (0.0, 1.0, 2.0)  # integral floats are labels


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


def test_auto_posterior_scores_at_most_max_scored_held_out_points(monkeypatch, caplog):
    """posterior="auto" scores a seeded random subset of at most MAX_SCORED
    held-out points (the exact query of all 20 % took half of a 10⁶-point fit);
    the auxiliary model is still fit on the whole 80 %."""
    from jaxnn._src import fitting as fit_mod

    from _data import floored_log_loss
    from jaxnn._src.calibration import fit_temperature

    seen = []
    real = fit_mod.held_out_scores

    def spy(model, X, **how):
        seen.append((model.X.shape[0], np.asarray(X)))
        return real(model, X, **how)

    monkeypatch.setattr(fit_mod, "held_out_scores", spy)
    monkeypatch.setattr(fit_mod, "MAX_SCORED", 25)
    monkeypatch.setattr(fit_mod, "MIN_SCORED", 1)  # one held-out part, not cross-fitted
    X, y = _blobs(m=200, C=2, seed=4)  # two classes: T alone (no kernel term)
    with caplog.at_level("INFO", logger="jaxnn"):
        capped = jaxnn.fit(X, y, k=5, seed=3, shrinkage=None)
    perm = np.random.default_rng(3).permutation(200)
    assert len(seen) == 1 and seen[0][0] == 160  # the scores and label sums, once
    for _, scored in seen:
        np.testing.assert_array_equal(scored, X[perm[:25]])
    assert "fit: held-out choice: auxiliary fit on 160 points, scored on 25 of the other 40" in [
        r.getMessage() for r in caplog.records]
    # the temperature is the one of least log loss on those 25 points
    aux = jaxnn.fit(X[perm[40:]], y[perm[40:]], k=5, seed=3, posterior="link", shrinkage=None)
    H = np.asarray(real(aux, X[perm[:25]]).H, float)
    target = (y[perm[:25]][:, None] == np.arange(2)[None, :]).astype(float)
    T = capped.posterior_temperature
    assert T == pytest.approx(fit_temperature(H, target, False), rel=1e-4)
    assert floored_log_loss(H, target, T) <= min(floored_log_loss(H, target, T * f) for f in (0.9, 1.1)) + 1e-6
    seen.clear()
    monkeypatch.setattr(fit_mod, "MAX_SCORED", 40)  # the whole 20 %: as before the cap
    jaxnn.fit(X, y, k=5, seed=3)
    np.testing.assert_array_equal(seen[0][1], X[perm[:40]])


def test_small_data_cross_fit_every_point_once(monkeypatch, caplog):
    """Below MIN_SCORED held-out points posterior="auto" cross-fits: 200
    points, five auxiliary fits on 160 each score the other 40 — every point
    once, by a fit that did not see it — and (T, s) are those of least log
    loss on all 200 scores."""
    from jaxnn._src import fitting as fit_mod
    from jaxnn._src.calibration import fit_kernel_term, fit_shrinkage
    from jaxnn._src.fitting import held_out_folds
    from jaxnn._src.prediction import tie_broken_argmax

    seen = []
    real = fit_mod.held_out_scores

    def spy(model, X, **how):
        seen.append((np.asarray(model.X), np.asarray(X), real(model, X, **how)))
        return seen[-1][2]

    monkeypatch.setattr(fit_mod, "held_out_scores", spy)
    X, y = _blobs(m=200, C=3, seed=4)
    model = jaxnn.fit(X, y, k=3, seed=3)
    folds = held_out_folds(200, 40, 3)
    assert len(seen) == len(folds) == 5
    np.testing.assert_array_equal(np.sort(np.concatenate([val for _, val in folds])), np.arange(200))
    for (train, scored, _), (tr, val) in zip(seen, folds):
        assert train.shape[0] == tr.size == 160
        np.testing.assert_array_equal(scored, X[val])
        # the auxiliary fit saw none of the points it scored
        assert not np.any(np.all(train[:, None, :] == np.asarray(scored, train.dtype)[None, :, :], axis=2))
    H, V, first, D, labels = (np.concatenate([parts[i] for _, _, parts in seen]) for i in range(5))
    order = np.concatenate([val for _, val in folds])
    target = (y[order][:, None] == np.arange(3)[None, :]).astype(float)
    _, s, common = fit_shrinkage(H, V, 3, target, False)
    S = (1 - s) * H + s * common * V
    T, w, b = fit_kernel_term(S, np.asarray(tie_broken_argmax(S, V, first, 3)), D, labels, target)
    assert (model.posterior_temperature, model.leverage_shrinkage) == (T, s)
    assert (model.posterior_weight, model.posterior_bandwidth) == (w, b)
    assert [len(held_out_folds(m, int(round(0.2 * m)), 0)) for m in (50, 500, 999, 1000, 10**5)] == [5, 2, 1, 1, 1]


def test_auto_posterior_with_given_neighbors_derives_the_auxiliary_graph(monkeypatch, caplog):
    """fit(neighbors=...) with posterior="auto" runs no neighbour search: the
    80 % fit's graph is graph.subgraph of the caller's (an exact search of the
    80 % could take minutes where the caller brought an approximate graph),
    and so is it of an approximate graph that fit searched."""
    from jaxnn._src import graph as graph_mod
    from jaxnn._src import fitting as fit_mod

    searches = []
    monkeypatch.setattr(fit_mod, "graph_candidates",
                        lambda *a, **kw: searches.append(a) or graph_mod.graph_candidates(*a, **kw))
    given, rounds = [], []
    real_fit = fit_mod._boosted  # the boosted fit: the main one, then the auxiliary one

    def spy_fit(data, spec, *found):
        given.append(data.graph)
        rounds.append(spec.rounds)
        return real_fit(data, spec, *found)

    monkeypatch.setattr(fit_mod, "_boosted", spy_fit)
    monkeypatch.setattr(fit_mod, "MIN_SCORED", 1)  # one held-out part, not cross-fitted
    X, y = _blobs(m=200, C=3, seed=4)
    nb = np.asarray(graph_mod.knn_graph(X, 5).indices)
    with caplog.at_level("INFO", logger="jaxnn"):
        model = jaxnn.fit(X, y, k=5, neighbors=nb, seed=3)
    assert not searches and 0.0 <= model.posterior_mix <= 1.0
    tr = np.random.default_rng(3).permutation(200)[40:]
    assert len(given) == 2 and rounds == [200, 160]  # the rounds scale with the 80 %: one pass each
    np.testing.assert_array_equal(given[1], graph_mod.subgraph(X, nb, tr))
    assert any(r.getMessage().startswith("fit: held-out choice: 5-NN graph of the 160 points and of the 40 scored "
                                         "among them from the full graph (two hops)") for r in caplog.records)
    # without given neighbours the 80 % fit's graph is an exact search of the 80 %
    # (done with the scored points' query: graph.graph_and_query)
    given.clear()
    jaxnn.fit(X, y, k=5, seed=3)
    assert len(given) == 2 and given[0] is None and len(searches) == 1  # the full fit's graph only
    np.testing.assert_array_equal(given[1], np.asarray(graph_mod.knn_graph(X[tr], 5).indices))
    # an approximate full graph is not searched again for the 80 %: derived from it likewise
    given.clear()
    searches.clear()
    jaxnn.fit(X, y, k=5, seed=3, graph_method="approx")
    full = np.asarray(graph_mod.knn_graph(X, 5, method="approx", seed=3).indices)
    assert len(given) == 2 and len(searches) == 1
    np.testing.assert_array_equal(given[1], graph_mod.subgraph(X, full, tr))


@pytest.mark.slow  # counts compilations of fresh programs
def test_auto_posterior_searches_the_auxiliary_graph_and_the_scored_points_at_once(compilations):
    """A fit of new shapes with posterior="auto" compiles one exact search:
    the 80 %'s graph and the scored points' neighbours come from one search
    (graph.graph_and_query) — not a third for the query — padded to the
    shapes of the search of all m points, whose program serves both; and one
    boosting, the auxiliary fit padded to the main fit's shapes."""
    from jaxnn._src import boosting
    from jaxnn._src import search as search_mod

    # m = 600 (640 rows) and the 80 %'s 480 (512 rows alone): the auxiliary search takes the main one's
    X, y = _blobs(m=600, C=7, seed=6)
    watched = search_mod.conditioned_search, boosting.boost
    with compilations(*watched) as compiled:  # their programs dropped first: every shape new
        model = jaxnn.fit(X, y, k=5, seed=2, chooser="lazy")  # boosting.boost on every platform
    assert [len(compiled.of(f)) for f in watched] == [1, 1], compiled
    assert model.posterior_mix in (0.0, 1.0)


@pytest.mark.parametrize("kind", ["uint8", "bool"])
@pytest.mark.slow
def test_auto_posterior_with_given_neighbors_derives_from_float_points(kind, monkeypatch):
    """The derived 80 % graph is computed on the points as floats: uint8
    differences used to wrap (0.8 % of rows right) and bool points crashed."""
    from jaxnn._src import fitting as fit_mod
    from jaxnn._src.graph import subgraph

    rng = np.random.default_rng(2)
    X = rng.integers(0, 256, (300, 4)).astype(np.uint8) if kind == "uint8" else rng.random((300, 6)) > 0.5
    y = (X[:, 0] > (128 if kind == "uint8" else 0)).astype(int)
    nb = np.asarray(jaxnn.knn_graph(X.astype(np.float32), 5).indices)
    seen = []
    real = fit_mod.subgraph_and_rows
    monkeypatch.setattr(fit_mod, "subgraph_and_rows", lambda *a, **kw: seen.append(real(*a, **kw)) or seen[-1])
    model = jaxnn.fit(X, y, k=5, neighbors=nb, seed=1)
    assert 0.0 <= model.posterior_mix <= 1.0
    tr = np.random.default_rng(1).permutation(300)
    np.testing.assert_array_equal(seen[0][0], subgraph(X.astype(np.float32), nb, tr[60:]))


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
            "jaxnn.fit(X, np.arange(80) % 2, k=3, posterior='link', shrinkage=None, verbose=True); "
            "jaxnn.fit(X, np.arange(80) % 2, k=3, posterior='link', shrinkage=None)")
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
    jaxnn.fit(X, y, k=3, posterior="link", shrinkage=None, verbose=True)  # the jaxnn logger is at its default level
    assert sum("exact 3-NN graph" in r.getMessage() for r in caplog.records) == 2  # start and end
    assert (logger.level, logger.handlers) == before
    with pytest.raises(TypeError, match="verbose must be a bool"):
        jaxnn.fit(X, y, k=3, verbose="yes")


@pytest.mark.slow
def test_auto_posterior_from_given_neighbors_centres_points_far_from_zero():
    """The 80 % graph derived from given neighbours (graph.subgraph) is computed
    on points centred like fit's: cast as given, float64 points at 10⁸ ± 1
    collapsed and the choice flipped (link → votes, predict_proba off by 0.32)."""
    from jaxnn._src import fitting as fit_mod

    given = []
    real_fit = fit_mod._boosted  # each fit's boosted part: the main fit, then the auxiliary one
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(fit_mod, "_boosted", lambda data, spec, *found: given.append(data.graph) or real_fit(data, spec, *found))
    X, y = _blobs(m=300, C=3, seed=8, spread=1.2)
    nb = np.asarray(jaxnn.knn_graph(X, 10).indices)
    try:
        near = jaxnn.fit(X, y, k=10, neighbors=nb, seed=4)
        far = jaxnn.fit(X.astype(np.float64) + 1e8, y, k=10, neighbors=nb, seed=4)
    finally:
        monkeypatch.undo()
    assert len(given) == 10  # each: the main fit, then four cross-fitted auxiliary fits (60 < MIN_SCORED held out)
    for a, b in zip(given[1:5], given[6:]):
        np.testing.assert_array_equal(b, a)  # the 80 %s' graphs (97 % of their entries differed before)
    assert far.posterior_mix == near.posterior_mix
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(far, X.astype(np.float64) + 1e8)),
                               np.asarray(jaxnn.predict_proba(near, X)), atol=1e-5)


def test_refits_on_other_data_of_one_shape_reuse_the_compiled_boosting(compilations):
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
    with compilations(boost):  # compiled anew
        jaxnn.fit(*sets[0], k=5, chooser="lazy", posterior="link", shrinkage=None)
    X, y = sets[other]
    with compilations() as compiled:
        model = jaxnn.fit(X, y, k=5, chooser="lazy", posterior="link", shrinkage=None)
    assert compiled.of(boost) == []
    nb = np.asarray(jaxnn.knn_graph(X, 5).indices)
    inv = jaxnn.inverse_neighbors(nb)  # the exact width
    algo = model.algorithm
    E0 = algo.init_edges(model.loss, model.Y)
    ref = boost(model.Y, E0, inv.members, inv.counts, jnp.asarray(nb), jnp.arange(200, dtype=jnp.int32),
                algorithm=algo, loss=model.loss, greedy=False, trace=False)
    # fit's α is boosting's, the unreached examples (n_j = 0) given their class-sign leverage
    from jaxnn._src.leverage import unreached_leverage

    np.testing.assert_allclose(np.asarray(model.alpha), np.asarray(unreached_leverage(ref.alpha, model.Y, nb)),
                               rtol=1e-5, atol=1e-6)


def test_a_sliced_graph_of_a_larger_set_is_refused_with_the_reason():
    """cross_val_score(params={"neighbors": nb}) slices nb's rows per fold but
    not the indices in them: the error says so (it named only the range)."""
    X, y = _blobs(m=200, C=3, seed=9)
    nb = np.asarray(jaxnn.knn_graph(X, 5).indices)
    with pytest.raises(ValueError, match=r"indices in \[0, 120\).*cross-validation slices the rows"):
        jaxnn.fit(X[:120], y[:120], k=5, neighbors=nb[:120], posterior="link")


@pytest.mark.parametrize("k, derived", [(5, True), (20, False)])
def test_a_small_exact_fit_takes_the_auxiliary_graphs_from_its_search(monkeypatch, k, derived):
    """On a few hundred points the exact search finds 64 neighbours a point
    (shared_sizes.shared_k): where that is ≥ EXACT_LISTS·k, the held-out
    choice's 80 % graph and scored points' neighbours are the first k kept
    points of those lists — the exact ones, with no second search —; with
    fewer (k = 20) the 80 % is searched (graph.graph_and_query)."""
    from jaxnn._src import fitting as fit_mod

    derived_parts, searched = [], []
    real_sub, real_search = fit_mod.subgraph_and_rows, fit_mod.graph_and_query
    monkeypatch.setattr(fit_mod, "subgraph_and_rows",
                        lambda *a, **kw: derived_parts.append((a, real_sub(*a, **kw))) or derived_parts[-1][1])
    monkeypatch.setattr(fit_mod, "graph_and_query",
                        lambda *a, **kw: searched.append(a) or real_search(*a, **kw))
    X, y = _blobs(m=200, C=3, seed=5)
    model = jaxnn.fit(X, y, k=k, seed=1)
    folds = fit_mod.held_out_folds(200, 40, 1)
    assert (len(derived_parts), len(searched)) == ((len(folds), 0) if derived else (0, len(folds)))
    for (args, (graph, rows)), (tr, val) in zip(derived_parts, folds):
        np.testing.assert_array_equal(args[2], tr)
        np.testing.assert_array_equal(graph, np.asarray(jaxnn.knn_graph(X[tr], k).indices))
        np.testing.assert_array_equal(rows, np.asarray(jaxnn.knn_query(X[tr], X[val], k).indices))
    assert model.posterior_temperature > 0


def test_tie_broken_argmax_of_stacked_scores_is_that_of_each():
    """tie_broken_argmax of (n_s, n, C) scores — select's every shrinkage at
    once, on the host — is that of each (n, C) slice, and NumPy's labels are
    the traced program's: exact ties in the primary scores go to the larger
    secondary, then to the nearest neighbour."""
    import jax.numpy as jnp

    from jaxnn._src.prediction import tie_broken_argmax

    rng = np.random.default_rng(3)
    S = rng.integers(-2, 3, size=(11, 40, 4)).astype(np.float32)  # few values: many exact ties
    V = rng.integers(0, 3, size=(40, 4)).astype(np.float32)
    first = rng.integers(0, 6, size=(40, 4)).astype(np.int32)
    stacked = tie_broken_argmax(S, V, first, 6)
    assert isinstance(stacked, np.ndarray) and stacked.shape == (11, 40)
    for s in range(11):
        np.testing.assert_array_equal(stacked[s], tie_broken_argmax(S[s], V, first, 6))
        np.testing.assert_array_equal(stacked[s], np.asarray(tie_broken_argmax(jnp.asarray(S[s]), jnp.asarray(V),
                                                                                jnp.asarray(first), 6)))
    tied = S == S.max(axis=-1, keepdims=True)
    assert np.any(tied.sum(axis=-1) > 1)  # the draw holds ties for the rule to break
