"""Model selection: one graph at the largest k, every candidate scored, the best refit."""

import numpy as np
import pytest

import jaxnn
from jaxnn._src import boost_runs, plan, platforms, shared_sizes
from jaxnn._src import steps as steps_mod


def _data(m=160, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=m)
    X = rng.normal(size=(m, 3)) + 1.5 * np.eye(3)[y]
    return X.astype(np.float32), y


def _rule_accuracy(model, Xq, yq):
    """Held-out accuracy of the rule ``fit`` made (``predict``: unreached
    examples filled, ties by the vote, then the nearest neighbour): what
    ``select(shrinkage=None)`` scores a candidate as."""
    return float(np.mean(jaxnn.predict(model, Xq) == yq))


def test_select_scores_every_candidate_and_picks_the_best():
    X, y = _data()
    sel = jaxnn.select(X, y, ks=(3, 7), losses=("logistic", "matsushita"), passes=(1, 2))
    assert set(sel.scores) == {(k, l, p) for k in (3, 7) for l in ("logistic", "matsushita") for p in (1, 2)}
    assert sel.scores[(sel.k, sel.loss, sel.passes)] == max(sel.scores.values())
    assert all(0.0 <= v <= 1.0 for v in sel.scores.values())


def test_select_prefix_graph_equals_direct_fit():
    """Passes run from the previous edges equal one fit with rounds = passes·m."""
    X, y = _data(m=120, seed=1)
    tr, va = jaxnn._src.select._holdout(y, 0.25, 0)
    sel = jaxnn.select(X, y, ks=(5,), losses=("matsushita",), passes=(2,), shrinkage=None)
    model = jaxnn.fit(X[tr], y[tr], k=5, loss="matsushita", rounds=2 * tr.size, posterior="link", shrinkage=None)
    nb = np.asarray(jaxnn.knn_graph(X[tr], 5).indices)
    assert not (np.bincount(nb.ravel(), minlength=tr.size) > 0).all()  # some examples are unreached: the fill runs
    acc = _rule_accuracy(model, X[va], y[va])
    assert sel.scores[(5, "matsushita", 2)] == pytest.approx(acc)


@pytest.mark.parametrize("chooser", ["colored", "random", "greedy", "lazy-windowed", "random-windowed"])
@pytest.mark.slow  # many selects or fits
def test_select_scores_a_chooser_as_fit_runs_it(chooser, monkeypatch):
    """Every pass is scored as ``fit`` runs it: the colored schedule in the
    sequential order it equals (it was scored with every step on example 0:
    0.56 on easy data), the random chooser with a new permutation each pass
    (its passes all reused the first: 0.717 / 0.683 scored at 2 / 4 passes
    on the data below, 0.667 / 0.650 for the fits; 1 and 3 passes here), and a large edge state
    by fit's windowed scan ("-windowed": the threshold lowered to these data;
    select ran the plain scan there, 2.8× slower a pass at m = 10⁵)."""
    from jaxnn._src import window

    if chooser.endswith("-windowed"):
        chooser = chooser.removesuffix("-windowed")
        monkeypatch.setattr(plan, "WINDOWED_MIN_STATE", 0)
        calls = []
        real = window.boost_windowed
        monkeypatch.setattr(window, "boost_windowed", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    rng = np.random.default_rng(8)
    y = rng.integers(0, 3, size=240)
    X = (rng.normal(size=(240, 4)) + 1.2 * rng.normal(size=(3, 4))[y]).astype(np.float32)
    tr, va = jaxnn._src.select._holdout(y, 0.25, 0)
    sel = jaxnn.select(X, y, ks=(5, 8), losses=("logistic",), passes=(1, 3), chooser=chooser, shrinkage=None)
    nb = np.asarray(jaxnn.knn_graph(X[tr], 8).indices)[:, :5]  # select's prefix graph
    for passes in (1, 3):
        model = jaxnn.fit(X[tr], y[tr], k=5, neighbors=nb, chooser=chooser, rounds=passes * tr.size, posterior="link", shrinkage=None)
        acc = _rule_accuracy(model, X[va], y[va])
        assert sel.scores[(5, "logistic", passes)] == pytest.approx(acc), passes
    if plan.WINDOWED_MIN_STATE == 0:  # windows on CPU only (Plan.windowed, plan.py)
        from jaxnn._src import sharding

        if platforms.platform() in platforms.WINDOWED_PLATFORMS:
            assert len(calls) >= 2 * 3 + 2  # select: 2 ks × 3 passes; the fits: 2
        else:
            assert not calls

@pytest.mark.slow  # many selects or fits
def test_fit_auto():
    X, y = _data(seed=2)
    model = jaxnn.fit(X, y, k="auto", loss="auto", rounds="auto")
    assert model.k in (5, 10, 20, 50)
    assert model.loss.name in ("logistic", "matsushita")
    assert model.rounds in (160, 320, 640)
    only_k = jaxnn.fit(X, y, k="auto", loss="squared")
    assert only_k.loss.name == "squared" and only_k.rounds == 160
    assert np.mean(jaxnn.predict(model, X) == y) > 0.7


@pytest.mark.slow  # many selects or fits
def test_fit_auto_k_scores_the_rounds_it_will_run(monkeypatch):
    # k="auto" with rounds=3m chose k after one pass, then refit three
    from jaxnn._src import fitting

    seen = []
    real = fitting.select
    monkeypatch.setattr(fitting, "select", lambda *a, **kw: seen.append(kw["passes"]) or real(*a, **kw))
    X, y = _data(seed=2)
    model = jaxnn.fit(X, y, k="auto", loss="logistic", rounds=3 * 160, posterior="link", shrinkage=None)
    assert seen == [(3,)] and model.rounds == 480
    jaxnn.fit(X, y, k="auto", loss="logistic", rounds=200, posterior="link", shrinkage=None)  # 1.25 passes: scored as 1
    assert seen[-1] == (1,)


@pytest.mark.xdist_group("nndescent")  # pynndescent's numba compilation (~45 s) once per worker
def test_select_searches_with_the_graph_method_it_is_given(monkeypatch):
    """graph_method="nndescent" builds no exact graph (select ignored the
    method: fit(k="auto", graph_method="nndescent") on 10⁶ points ran an exact
    search of 75 % of them first, minutes) and queries the validation points
    with the same pynndescent index; fit(k="auto") hands its method on."""
    from jaxnn._src import select as select_mod

    def no_exact(*args, **kwargs):
        raise AssertionError("an exact search ran")

    monkeypatch.setattr(select_mod, "knn_graph", no_exact)
    monkeypatch.setattr(select_mod, "knn_query", no_exact)
    monkeypatch.setattr(select_mod, "graph_and_query", no_exact)
    X, y = _data(m=400, seed=3)
    sel = jaxnn.select(X, y, ks=(5, 10), losses=("logistic",), passes=(1,), graph_method="nndescent")
    assert set(sel.scores) == {(5, "logistic", 1), (10, "logistic", 1)}
    monkeypatch.undo()
    reference = jaxnn.select(X, y, ks=(5, 10), losses=("logistic",), passes=(1,))
    for key, score in sel.scores.items():  # an approximate graph of 300 points in 3-D: near the exact one's score
        assert abs(score - reference.scores[key]) <= 0.06, (key, score, reference.scores[key])
    from jaxnn._src import fitting

    seen = []
    real = fitting.select
    monkeypatch.setattr(fitting, "select", lambda *a, **kw: seen.append((kw["graph_method"], kw["devices"])) or real(*a, **kw))
    jaxnn.fit(X, y, k="auto", loss="logistic", graph_method="approx", devices=1, posterior="link", shrinkage=None)
    assert seen == [("approx", 1)]


@pytest.mark.slow  # many selects or fits
def test_select_on_devices_equals_the_default_device():
    X, y = _data(m=200, seed=4)
    for chooser in ("lazy", "colored"):
        kw = dict(ks=(3, 6), losses=("logistic",), passes=(1, 2), chooser=chooser)  # one loss: devices are not about it
        one = jaxnn.select(X, y, **kw)
        assert jaxnn.select(X, y, devices=1, **kw).scores == one.scores
        assert jaxnn.select(X, y, graph_method="approx", **kw).scores == one.scores


@pytest.mark.parametrize(
    "kwargs, match",
    [(dict(holdout=1.5), "holdout"), (dict(ks=(500,)), r"no candidate k of \(500,\) is in \[1, 44\] for a training part of 45 points"), (dict(passes=(0,)), "passes"), (dict(ks=()), "at least one"),
     (dict(chooser="fifo"), "unknown chooser"), (dict(graph_method="kdtree"), "unknown graph_method"),
     (dict(devices=99), "device")],
)
def test_select_bad_arguments(kwargs, match):
    X, y = _data(m=60)
    with pytest.raises(ValueError, match=match):
        jaxnn.select(X, y, **kwargs)


@pytest.mark.parametrize(
    "kwargs, err, match",
    [(dict(ks=[-3, 3]), ValueError, "each of ks must be >= 1"), (dict(ks=[2.7]), TypeError, "each of ks"),
     (dict(ks=[True]), TypeError, "each of ks"), (dict(passes=[1.5]), TypeError, "each of passes"),
     (dict(holdout="a"), TypeError, "holdout"), (dict(holdout=None), TypeError, "holdout"),
     (dict(epsilon="a"), TypeError, "epsilon"), (dict(seed=-1), ValueError, "seed"), (dict(seed="a"), TypeError, "seed"),
     (dict(ks=object()), TypeError, "ks must be a sequence"), (dict(graph_method=None), TypeError, "graph_method"),
     (dict(devices="some"), ValueError, "devices"), (dict(devices=1.5), TypeError, "devices"),
     (dict(graph_method="nndescent", seed=2**40), ValueError, "seed")],
)
def test_select_checks_every_candidate(kwargs, err, match):
    X, y = _data(m=60)
    with pytest.raises(err, match=match):
        jaxnn.select(X, y, **kwargs)


@pytest.mark.slow  # many selects or fits
def test_select_takes_a_lone_candidate_and_refuses_a_split_too_small():
    X, y = _data(m=60)
    one = jaxnn.select(X, y, ks=5, losses="logistic", passes=1)
    assert (one.k, one.loss, one.passes) == (5, "logistic", 1)
    with pytest.raises(ValueError, match="too few points"):  # every class keeps its only example
        jaxnn.select(X[:3], np.array([0, 1, 2]), ks=[1])
    # 3 classes of 2: two validation points (class by class rounding gave none)
    small = jaxnn.select(X[:6], np.array([0, 0, 1, 1, 2, 2]), ks=[1], losses="logistic", passes=1)
    assert small.k == 1


def test_auto_k_with_neighbors_is_rejected():
    X, y = _data(m=60)
    nb = np.asarray(jaxnn.knn_graph(X, 3).indices)
    with pytest.raises(ValueError, match="auto"):
        jaxnn.fit(X, y, k="auto", neighbors=nb)


@pytest.mark.parametrize("C, n", [(50, 2), (50, 3), (20, 14), (3, 40)])
def test_holdout_is_a_quarter_and_keeps_every_class_in_training(C, n):
    # rounding class by class left 50 classes of 2 with no validation point
    # (fit(k="auto") then refused the data) and 50 × 3 with a third
    y = np.repeat(np.arange(C), n)
    tr, va = jaxnn._src.select._holdout(y, 0.25, 0)
    assert abs(va.size - 0.25 * y.size) < 1 and np.intersect1d(tr, va).size == 0 and tr.size + va.size == y.size
    assert np.all(np.bincount(y[tr], minlength=C) >= 1)
    assert np.all(np.abs(np.bincount(y[va], minlength=C) - 0.25 * n) < 1)  # each class within one of its share


@pytest.mark.slow  # many selects or fits
def test_select_computes_in_float64_under_x64():
    # it cast to float32 whatever fit did: an offset of 1e8 left float32 noise
    import jax

    X, y = _data(m=160, seed=2)
    with jax.enable_x64(True):
        shifted = jaxnn.select(X.astype(np.float64) + 1e8, y, ks=(5,), losses=("logistic",), passes=(1,))
        plain = jaxnn.select(X.astype(np.float64), y, ks=(5,), losses=("logistic",), passes=(1,))
    assert shifted.scores == plain.scores


@pytest.mark.parametrize("offset", [1e6, 1e8])
@pytest.mark.slow  # many selects or fits
def test_select_centres_float64_points_far_from_zero_as_fit_does(offset):
    # select cast the 75 % and the 25 % to float32 as given: at 10⁸ ± 1 every point
    # became one and every candidate scored chance (two classes: 0.51 where 0.95-0.97 was due),
    # so fit(k="auto") chose at random; fit itself centred such points already
    X, y = _data(m=200, seed=5)
    kwargs = dict(ks=(3, 8), losses=("logistic", "matsushita"), passes=(1, 2))
    plain = jaxnn.select(X.astype(np.float64), y, **kwargs)
    shifted = jaxnn.select(X.astype(np.float64) + offset * np.array([1.0, -1.0, 0.0]), y, **kwargs)
    assert shifted.scores == plain.scores and min(plain.scores.values()) > 0.5  # 3 classes: chance 1/3


@pytest.mark.slow  # many selects or fits
def test_select_searches_the_graph_and_the_validation_points_at_once():
    """The exact graph of the 75 % and the 25 %'s neighbours among them come
    from one search (one compilation, graph.graph_and_query), equal to the two
    searches run apart."""
    from jaxnn._src import graph as graph_mod
    from jaxnn._src import select as select_mod

    seen = []
    monkeypatch = pytest.MonkeyPatch()
    real = select_mod.graph_and_query
    monkeypatch.setattr(select_mod, "graph_and_query", lambda *a, **kw: seen.append(real(*a, **kw)) or seen[-1])
    try:
        X, y = _data(m=200, seed=6)
        jaxnn.select(X, y, ks=(4, 7), losses=("logistic",), passes=(1,))
    finally:
        monkeypatch.undo()
    tr, va = select_mod._holdout(y, 0.25, 0)
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0][0], np.asarray(graph_mod.knn_graph(X[tr], 7).indices))
    np.testing.assert_array_equal(seen[0][1], np.asarray(graph_mod.knn_query(X[tr], X[va], 7).indices))


def test_select_splits_a_one_column_y_as_the_labels_fit_reads_it_as():
    """fit reads a one-column y as 1-D labels; select split it as multilabel
    (unstratified), so its scores and fit(k="auto")'s k differed."""
    X, y = _data(m=200, seed=7)
    kwargs = dict(ks=(3, 8), losses=("logistic",), passes=(1,))
    with pytest.warns(UserWarning, match=r"shape \(m, 1\): read as 1-D labels"):
        column = jaxnn.select(X, y[:, None], **kwargs)
    assert column.scores == jaxnn.select(X, y, **kwargs).scores


@pytest.mark.slow  # many selects or fits
def test_select_ties_go_to_smaller_k_then_fewer_passes_then_the_earlier_loss():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 40)
    X = (rng.normal(size=(80, 2)) * 0.1 + 10.0 * y[:, None]).astype(np.float32)  # far apart: every candidate scores 1
    sel = jaxnn.select(X, y, ks=(5, 3), losses=("matsushita", "logistic"), passes=(2, 1))
    assert set(sel.scores.values()) == {1.0}
    assert (sel.k, sel.passes, sel.loss) == (3, 1, "matsushita")


@pytest.mark.parametrize("sizes, fraction, counts", [((10, 12, 13), 0.25, (3, 3, 3)), ((1, 3), 0.5, (0, 2))])
def test_holdout_shares_by_largest_remainder_and_keeps_a_last_example(sizes, fraction, counts):
    # round(0.25 · 35) = 9 validation points; the floors 2 + 3 + 3 leave one, to the largest
    # remainder (class 0's 0.5); a class of one keeps its only example for training
    y = np.repeat(np.arange(len(sizes)), sizes)
    tr, va = jaxnn._src.select._holdout(y, fraction, 0)
    assert tuple(np.bincount(y[va], minlength=len(sizes))) == counts
    assert np.all(np.bincount(y[tr], minlength=len(sizes)) >= 1)


def test_select_drops_ks_the_training_part_cannot_hold():
    X, y = _data(m=80)
    tr, _ = jaxnn._src.select._holdout(y, 0.25, 0)
    sel = jaxnn.select(X, y, ks=(5, tr.size), losses="logistic", passes=1)
    assert {key[0] for key in sel.scores} == {5}


@pytest.mark.slow  # many selects or fits
def test_select_multilabel_scores_each_label_decision():
    """Multilabel data: a plain random quarter held out, and a candidate's score
    is the share of (point, label) decisions H_c > 0 that match the labels."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 3)).astype(np.float32)
    Y = np.stack([X[:, 0] > 0, X[:, 1] + X[:, 2] > 0], axis=1).astype(int)
    tr, va = jaxnn._src.select._holdout(Y, 0.25, 0)
    assert va.size == 20 and np.intersect1d(tr, va).size == 0 and tr.size == 60
    sel = jaxnn.select(X, Y, ks=(5,), losses=("logistic",), passes=(1,), shrinkage=None)
    model = jaxnn.fit(X[tr], Y[tr], k=5, loss="logistic", rounds=tr.size, posterior="link", shrinkage=None)
    want = float(np.mean(jaxnn.predict(model, X[va]) == Y[va]))
    assert want > 0.7 and sel.scores[(5, "logistic", 1)] == pytest.approx(want)


@pytest.mark.slow  # many selects or fits
def test_select_refuses_two_losses_of_one_name_and_hands_back_a_custom_loss():
    # scores are keyed by name: two custom losses both named "custom_phi" overwrote each
    # other's scores (the better one was lost), and Selection.loss, a name, was no loss fit knew
    import jax.numpy as jnp

    X, y = _data()
    a = jaxnn.losses.from_phi(lambda p: -jnp.sqrt(p * (1 - p)))
    b = jaxnn.losses.from_phi(lambda p: -p * (1 - p))
    with pytest.raises(ValueError, match="two different candidate losses are both named 'custom_phi'"):
        jaxnn.select(X, y, ks=(5,), losses=(a, b), passes=(1,))
    twice = jaxnn.select(X, y, ks=(5,), losses=("logistic", "Logistic"), passes=(1,))  # one loss, counted once
    assert set(twice.scores) == {(5, "logistic", 1)} and twice.loss == "logistic"
    mine = jaxnn.losses.from_phi(lambda p: -p * (1 - p), name="mine")
    sel = jaxnn.select(X, y, ks=(5,), losses=(mine,), passes=(1,))
    assert sel.loss is mine and set(sel.scores) == {(5, "mine", 1)}
    assert jaxnn.fit(X, y, k=sel.k, loss=sel.loss, posterior="link", shrinkage=None).loss is mine


@pytest.mark.parametrize("chooser", ["lazy", "lazy-windowed"])
@pytest.mark.slow  # many selects or fits
def test_select_weighs_narrow_steps_against_all_its_passes(chooser, monkeypatch):
    """select runs one compiled scan per loss for every candidate k and pass,
    at the largest k's width: whether its steps are narrowed to n_j
    (``steps_mod.step_widths``) is weighed against the work of all those runs
    (weighed per call, small folds ran every step at full width: optdigits'
    select 4–5× slower).  For the sequential scan the threshold here lies
    between one run's work and nine runs': select's steps narrow where one
    run's would not (a program whose runs narrow as one run's would is keyed
    as one run's, the fit's: boosting.boost_calls)."""
    from jaxnn._src import boosting, window

    if chooser == "lazy-windowed":
        monkeypatch.setattr(plan, "WINDOWED_MIN_STATE", 1)
    else:
        monkeypatch.setattr(steps_mod, "NARROW_MIN_WORK", 1 << 20)  # one run below, nine above (m = 200, C = 3)
    seen = []
    real = steps_mod.step_widths
    monkeypatch.setattr(window, "step_widths", lambda P, work=None, **kw: seen.append((P, work)) or real(P, work, **kw))
    monkeypatch.setattr(boosting, "step_widths", lambda P, work=None, **kw: seen.append((P, work)) or real(P, work, **kw))
    boosting.boost.clear_cache()
    window.boost_windowed.clear_cache()
    X, y = _data(m=200, seed=2)
    try:
        jaxnn.select(X, y, ks=(3, 6, 9), losses=("logistic", "matsushita"), passes=(1, 3), chooser="lazy")
        single = list(seen)
        seen.clear()
        boosting.boost.clear_cache()
        window.boost_windowed.clear_cache()
        jaxnn.select(X, y, ks=(9,), losses=("logistic",), passes=(1,), chooser="lazy")  # one run
    finally:
        boosting.boost.clear_cache()
        window.boost_windowed.clear_cache()
    assert len(single) == 2 and len(seen) == 1  # one trace per loss
    # each loss's program runs for 3 ks × 3 passes: 9 times the work of one run
    assert single[0] == (seen[0][0], 9 * seen[0][1])
    if chooser == "lazy":
        assert seen[0][1] < steps_mod.NARROW_MIN_WORK <= single[0][1]
        assert len(real(*single[0])) > 1 and len(real(*seen[0])) == 1  # select narrows, one run does not


@pytest.mark.slow  # many selects or fits
def test_select_searches_as_the_fit_its_candidates_make(monkeypatch, compilations):
    """select's candidate ks share one search of the largest k's neighbours.
    On at most shared_sizes.SHARED_K_MAX_ROWS points, where fit(k="auto")'s
    model is sized for the largest candidate (shared_sizes.candidates_k),
    select's search is that fit's: the training part padded to the fit's
    rows, shared_k(50) = 64 neighbours found, and the fit after it compiles
    no search of its own (400 points; 600, where fits at 5 and 50 alone
    would find 8 and 64) — nor, its one pass padded to the fit's rows and
    steps, a boosting of its own.  Above, it finds exactly max(ks)."""
    from jaxnn._src import boosting, search

    found = []
    real = search.conditioned_search
    monkeypatch.setattr(search, "conditioned_search", lambda *a, **kw: found.append(kw["k"]) or real(*a, **kw))
    X, y = _data(m=400, seed=4)
    with compilations(real):
        jaxnn.select(X, y, ks=(5, 10, 20, 50), losses=("logistic",), passes=(1,))
    assert found == [shared_sizes.shared_k(50, 400)] == [64]
    found.clear()
    with compilations() as compiled:
        jaxnn.fit(X, y, k=10, posterior="link", shrinkage=None)
    assert found == [shared_sizes.shared_k(10, 400)] == [64]
    assert compiled.of(real) == [], list(compiled)
    found.clear()
    X, y = _data(m=600, seed=4)
    with compilations(boosting.boost) as compiled:
        model = jaxnn.fit(X, y, k="auto", loss="logistic", rounds=600, posterior="link", shrinkage=None)
    assert (model.search_k, found) == (50, [64, 64])
    assert compiled.of(real, boosting.boost) == ["jit(conditioned_search)", "jit(boost)"], list(compiled)
    found.clear()
    X, y = _data(m=2100, seed=4)
    jaxnn.select(X, y, ks=(5, 10, 20, 50), losses=("logistic",), passes=(1,))
    assert found == [50]


@pytest.mark.slow  # six fits(k="auto")
def test_auto_k_models_of_any_chosen_k_share_their_programs_and_equal_a_fit_at_it(monkeypatch, compilations):
    """fit(k="auto") on 600 points sizes its model for the largest
    candidate (search_k = 50): data whose choice is k = 5 and data whose
    choice is k = 50 run the same compiled searches, boosting and rule —
    the second fit and its posteriors compile nothing —, and each model
    equals, bit for bit, a fit at its chosen k (the first k of the wider
    search's neighbours are the k-NN; padding is inert).  So do the other
    candidates (select's choice given): k = 10 and 20, whose held-out
    choice searches its 80 % (64 listed neighbours are too few for 4k)."""
    from jaxnn._src import boosting, fitting, prediction, search
    from jaxnn._src.select import Selection

    rng = np.random.default_rng(0)
    m = 600
    y = rng.integers(0, 2, m)
    apart = rng.normal(size=(m, 4)) + 6.0 * y[:, None]  # every k scores 1: ties go to the smallest
    close = rng.normal(size=(m, 4)) + 0.5 * y[:, None]  # overlapping classes: the widest vote wins
    settings = dict(loss="logistic", rounds=m)
    watched = (search.conditioned_search, boosting.boost, prediction._rule)
    chosen = []
    for X, watch in ((apart, watched), (close, ())):
        with compilations(*watch) as compiled:
            model = jaxnn.fit(X, y, k="auto", **settings)
            proba = np.asarray(jaxnn.predict_proba(model, X[:100]))
        if not watch:
            assert compiled.of(*watched) == [], list(compiled)
        chosen.append(model.k)
        assert model.search_k == 50
        plain = jaxnn.fit(X, y, k=model.k, **settings)
        assert plain.search_k == 0
        np.testing.assert_array_equal(np.asarray(model.alpha), np.asarray(plain.alpha))
        np.testing.assert_array_equal(proba, np.asarray(jaxnn.predict_proba(plain, X[:100])))
    assert chosen == [5, 50]
    for k in (10, 20):
        scores = {(c, "logistic", 1): float(c == k) for c in (5, 10, 20, 50)}
        monkeypatch.setattr(fitting, "select", lambda *a, **kw: Selection(k, "logistic", 1, scores))
        with compilations() as compiled:
            model = jaxnn.fit(close, y, k="auto", **settings)
            jaxnn.predict_proba(model, close[:100])
        assert (model.k, model.search_k) == (k, 50)
        assert compiled.of(*watched) == [], (k, list(compiled))


@pytest.mark.parametrize("multilabel", [False, True])
def test_select_scores_on_the_host_as_in_its_programs(multilabel, monkeypatch):
    """Few held-out entries (points × largest k × classes) are scored on the
    host, where two programs would compile for each new shape: the same
    scores as the programs give (HOST_SCORING_MAX_ENTRIES = 0 runs them)."""
    from jaxnn._src import select as select_mod

    X, y = _data(m=300, seed=6)
    if multilabel:
        y = np.stack([y == 0, X[:, 1] > 0], axis=1).astype(int)
    kw = dict(ks=(2, 5), losses=("logistic", "matsushita"), passes=(1, 2))
    assert 75 * 5 * 3 <= select_mod.HOST_SCORING_MAX_ENTRIES  # held-out points × k × classes: on the host
    host = jaxnn.select(X, y, **kw)
    monkeypatch.setattr(select_mod, "HOST_SCORING_MAX_ENTRIES", 0)
    assert jaxnn.select(X, y, **kw) == host


def test_select_scores_small_k_as_predict_does():
    """select scored argmax H of boosting's α: at k = 1 the examples no step
    reached kept α = 0 and their queries went to class 0 — 0.739 for 1-NN's
    0.991 on these digits, so k = 3 was chosen.  A candidate is scored as the
    rule fit makes (the fill, ties by the vote): at k = 1 exactly 1-NN."""
    from sklearn.datasets import load_digits
    from sklearn.neighbors import KNeighborsClassifier

    X, y = load_digits(return_X_y=True)
    X, y = X[:1300], y[:1300]
    tr, va = jaxnn._src.select._holdout(y, 0.25, 0)
    one_nn = KNeighborsClassifier(1).fit(X[tr], y[tr]).score(X[va], y[va])
    for shrinkage in ("auto", None):
        sel = jaxnn.select(X, y, ks=(1, 3), losses=("logistic",), passes=(1,), shrinkage=shrinkage)
        assert sel.scores[(1, "logistic", 1)] == pytest.approx(one_nn)


def test_select_scores_the_shrunk_rule_at_its_best_shrinkage():
    """shrinkage="auto" scores each candidate at the s ∈ {0, 0.1, …, 1} of
    best held-out accuracy: never below boosting's own rule (s = 0, what
    shrinkage=None scores), and at s = 1 the plain k-NN vote is among them."""
    from sklearn.neighbors import KNeighborsClassifier

    X, y = _data(m=300, seed=4)
    tr, va = jaxnn._src.select._holdout(y, 0.25, 0)
    ks = (2, 3, 6)
    auto = jaxnn.select(X, y, ks=ks, losses=("logistic",), passes=(1, 2))
    plain = jaxnn.select(X, y, ks=ks, losses=("logistic",), passes=(1, 2), shrinkage=None)
    assert set(auto.scores) == set(plain.scores)
    assert all(auto.scores[key] >= plain.scores[key] for key in auto.scores)
    for k in ks:  # s = 1: every α alike, the k-NN vote (its ties by the nearest neighbour, not the class index)
        knn = KNeighborsClassifier(k).fit(X[tr], y[tr]).score(X[va], y[va])
        assert auto.scores[(k, "logistic", 1)] >= knn - 1.5 / va.size


def test_select_refuses_a_bad_shrinkage():
    X, y = _data()
    for bad in ("none", 0.5, True):
        with pytest.raises(ValueError, match="shrinkage must be None or 'auto'"):
            jaxnn.select(X, y, ks=(3,), shrinkage=bad)


def test_fit_auto_scores_the_shrinkage_it_will_fit(monkeypatch):
    from jaxnn._src import fitting

    seen = []
    real = fitting.select
    monkeypatch.setattr(fitting, "select", lambda *a, **kw: seen.append(kw["shrinkage"]) or real(*a, **kw))
    X, y = _data()
    jaxnn.fit(X, y, k="auto", posterior="link", shrinkage=None)
    jaxnn.fit(X, y, k="auto")
    assert seen == [None, "auto"]


def test_select_scores_a_candidate_at_the_best_of_predicts_shrunk_rules():
    """shrinkage="auto": a candidate's score is the best held-out accuracy of
    predict's labels over the rules of α shrunk by each s ∈ SHRINKAGES toward
    ā (the RMS of its held-out scores over k) — every s scored, in one call."""
    import dataclasses

    from jaxnn._src.calibration import SHRINKAGES, common_leverage
    from jaxnn._src.leverage import shrunk_leverage

    X, y = _data(m=200, seed=7)
    tr, va = jaxnn._src.select._holdout(y, 0.25, 0)
    sel = jaxnn.select(X, y, ks=(2,), losses=("logistic",), passes=(1,))
    model = jaxnn.fit(X[tr], y[tr], k=2, rounds=tr.size, posterior="link", shrinkage=None)
    common = common_leverage(np.asarray(jaxnn.decision_function(model, X[va]), np.float64), 2)
    accuracies = [_rule_accuracy(dataclasses.replace(model, alpha=shrunk_leverage(model.alpha, s, common)), X[va], y[va])
                  for s in SHRINKAGES]
    assert max(accuracies) > max(accuracies[0], accuracies[-1])  # here an s strictly inside [0, 1] is best
    assert sel.scores[(2, "logistic", 1)] == pytest.approx(max(accuracies))
