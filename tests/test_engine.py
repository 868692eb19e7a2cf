"""Boosting engine: surrogate risk, choosers, step widths, hubs, windowed scan, colored schedule, step numerics."""

import dataclasses
import functools
import math
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxnn
from jaxnn._src.boosting import boost

sys.path.insert(0, os.path.dirname(__file__))
from _data import _blobs  # noqa: E402
from jaxnn._src import boost_runs, plan, platforms
from jaxnn._src import steps as steps_mod


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


#: one case per algorithm in the development tier (-m "not slow"), every case in the full suite
DEV_RISK_CASES = {("gnnb", "logistic", "lazy"), ("unn", "exponential", "lazy"), ("n3", "calibrated_hinge", "lazy")}


@pytest.mark.parametrize("algorithm, loss, chooser", [
    case if case in DEV_RISK_CASES else pytest.param(*case, marks=pytest.mark.slow) for case in RISK_CASES])
def test_surrogate_risk_never_increases(algorithm, loss, chooser):
    X, y = _blobs()
    model = jaxnn.fit(X, y, k=7, loss=loss, algorithm=algorithm, chooser=chooser, rounds=300, trace=True, shrinkage=None)
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


def _filled(alpha, Y, nb):
    """A float64 reference α (m, C) as fit documents ``model.alpha``: the
    examples no example's neighbour in nb (n_j = 0) take their class-sign
    mean leverage (``unreached_leverage``); the reached keep the reference's."""
    from jaxnn._src.leverage import unreached_leverage

    with jax.enable_x64(True):
        out = np.asarray(unreached_leverage(jnp.asarray(alpha, jnp.float64), jnp.asarray(Y, jnp.float64), nb))
    reached = np.bincount(np.asarray(nb).ravel(), minlength=len(alpha)) > 0
    np.testing.assert_array_equal(out[reached], np.asarray(alpha)[reached])
    return out


def _matsushita_weight(e):
    """GNNB's weight for the Matsushita loss, link(−e)/b with b = 1/2 (float64 numpy)."""
    return 2 * 0.5 * (1 - e / np.sqrt(1 + e * e))


@pytest.mark.slow
def test_greedy_chooser_matches_recomputed_reference():
    X, y = _blobs(m=90, C=3, seed=3)
    nb = np.asarray(jaxnn.knn_graph(X, 5).indices)
    with jax.enable_x64(True):
        model = jaxnn.fit(X.astype(np.float64), y, k=5, loss="matsushita", chooser="greedy", rounds=40, neighbors=nb,
                          shrinkage=None)
        alpha = np.asarray(model.alpha)
    Y = np.where(y[:, None] == np.arange(3)[None, :], 1.0, -1.0)
    ref = _greedy_gnnb_reference(X, Y, nb, _matsushita_weight, 1.0, 0.5, 40)
    np.testing.assert_allclose(alpha, _filled(ref, Y, nb), rtol=1e-7, atol=1e-9)


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
    from jaxnn._src.steps import NARROW_MIN_WORK, step_widths

    assert step_widths(502, narrow=platforms.narrows_steps("cpu")) == (16, 64, 502)
    assert step_widths(1024, narrow=platforms.narrows_steps("cpu")) == (16, 64, 256, 1024)
    assert step_widths(26, narrow=platforms.narrows_steps("cpu")) == (26,)  # narrow graphs: one plain full-width step
    assert step_widths(502, work=NARROW_MIN_WORK - 1, narrow=platforms.narrows_steps("cpu")) == (502,)  # small calls: not worth compiling
    assert step_widths(502, work=NARROW_MIN_WORK, narrow=platforms.narrows_steps("cpu")) == (16, 64, 502)
    for accelerator in ("gpu", "tpu"):  # control flow costs an accelerator more than padding
        assert step_widths(1024, work=NARROW_MIN_WORK, narrow=platforms.narrows_steps(accelerator)) == (1024,)


@pytest.fixture
def always_narrow(monkeypatch):
    """Narrow steps to n_j whatever the call's size and platform (the engine
    otherwise keeps small calls, and every call on a GPU or TPU, at full width)."""
    from jaxnn._src import boosting, ensemble, window

    # NARROW_MIN_WORK is read when these trace: drop their compilations (only
    # theirs — clearing every cache made later tests recompile everything)
    jitted = (boosting.boost, window.boost_windowed, boost_runs._boost_blocks)
    monkeypatch.setattr(steps_mod, "NARROW_MIN_WORK", 0)
    monkeypatch.setattr(platforms, "NARROW_PLATFORMS", ("cpu", "gpu", "tpu"))
    for f in jitted:
        f.clear_cache()
    yield
    for f in jitted:
        f.clear_cache()


@pytest.mark.parametrize("scan", ["plain", "windowed"])
@pytest.mark.parametrize("algorithm, loss", [("gnnb", "logistic"), ("unn", "exponential"), ("n3", "calibrated_hinge")])
@pytest.mark.slow
def test_lazy_steps_on_hubs_match_reference(algorithm, loss, scan, always_narrow, request):
    """Steps on a graph with hubs (P ≥ 64: δ at the narrowest width ≥ n_j,
    edges written 16 members at a time) equal the float64 reference, and the
    trace is the reference's risk after each step — in one plain scan, and in
    the windowed scan (16 steps at a time on a local copy of their rows)."""
    import sys, os

    sys.path.insert(0, os.path.dirname(__file__))
    import reference as R

    from jaxnn._src import window
    from jaxnn._src.steps import CHUNK, step_widths

    if scan == "windowed":
        request.getfixturevalue("windowed")
        assert window.window_steps(3, 5) == 16
    else:
        assert 180 * 3 < plan.WINDOWED_MIN_STATE  # m·C: fit runs the plain scan

    X, y = _blobs(m=180, C=3, seed=11)
    nb = _hub_graph(X, 5, np.arange(180) % 2)  # rows take hubs 0 and 1 in turn
    P = int(np.bincount(nb.ravel(), minlength=len(X)).max())
    assert len(step_widths(P)) > 1 and P > 4 * CHUNK  # the narrowed, chunked path runs
    Y = np.where(y[:, None] == np.arange(3)[None, :], 1.0, -1.0)
    ref = {"gnnb": R.gnnb, "unn": R.unn, "n3": R.n3}[algorithm](Y, nb, loss)
    with jax.enable_x64(True):
        model = jaxnn.fit(X.astype(np.float64), y, k=5, loss=loss, algorithm=algorithm, neighbors=nb, trace=True,
                          shrinkage=None,
                         chooser="lazy")
        alpha, trace = np.asarray(model.alpha), np.asarray(model.trace)
    scale = np.abs(ref.alpha).max()
    np.testing.assert_allclose(alpha, _filled(ref.alpha, Y, nb), rtol=1e-6, atol=1e-8 * scale)
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

    from jaxnn._src.steps import step_widths

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
        alpha = np.asarray(jaxnn.fit(X, y, k=4, loss="logistic", algorithm="gnnb", neighbors=nb, chooser="lazy").alpha)
    np.testing.assert_allclose(alpha, _filled(ref.alpha, Y, nb), rtol=1e-9, atol=1e-12)


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


@pytest.mark.slow
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
    ref = _greedy_gnnb_reference(X, Y, nb, _matsushita_weight, 1.0, 0.5, 60)
    np.testing.assert_allclose(alpha, _filled(ref, Y, nb), rtol=1e-7, atol=1e-9)
    assert alpha[0, 0] != 0  # the hub's own step was taken
    assert np.max(np.diff(np.asarray(model.trace))) <= 1e-12


def test_accelerator_step_layout_matches_references(monkeypatch):
    """The layout a GPU or TPU runs (``platforms.NARROW_PLATFORMS`` excludes
    it): every step at full width with no switch, a greedy step's pairs in
    one update with no inner loop — here forced on the CPU, big calls
    included — equals the float64 references on a graph with hubs, lazy and
    greedy alike."""
    import sys, os

    sys.path.insert(0, os.path.dirname(__file__))
    import reference as R

    from jaxnn._src import boosting

    monkeypatch.setattr(steps_mod, "NARROW_MIN_WORK", 0)  # size alone would narrow these steps
    monkeypatch.setattr(platforms, "NARROW_PLATFORMS", ())  # this CPU lays steps out as an accelerator
    boosting.boost.clear_cache()
    try:
        rng = np.random.default_rng(0)
        X, y = rng.normal(size=(240, 4)), rng.integers(0, 3, 240)
        nb = _hub_graph(X, 5, np.where(y == 0, 0, -1))
        P = int(np.bincount(nb.ravel()).max())
        assert P > 4 * 16 and steps_mod.step_widths(P) == (P,)
        Y = np.where(y[:, None] == np.arange(3)[None, :], 1.0, -1.0)
        with jax.enable_x64(True):
            lazy = jaxnn.fit(X, y, k=5, loss="logistic", chooser="lazy", neighbors=nb, trace=True)
            greedy = jaxnn.fit(X, y, k=5, loss="matsushita", chooser="greedy", rounds=60, neighbors=nb)
        ref = R.gnnb(Y, nb, "logistic")
        np.testing.assert_allclose(np.asarray(lazy.alpha), _filled(ref.alpha, Y, nb), rtol=1e-6,
                                   atol=1e-8 * np.abs(ref.alpha).max())
        np.testing.assert_allclose(np.asarray(lazy.trace), ref.parallel_risk, rtol=1e-7, atol=1e-10)
        ref_greedy = _greedy_gnnb_reference(X, Y, nb, _matsushita_weight, 1.0, 0.5, 60)
        np.testing.assert_allclose(np.asarray(greedy.alpha), _filled(ref_greedy, Y, nb), rtol=1e-7, atol=1e-9)
    finally:
        boosting.boost.clear_cache()


@pytest.mark.parametrize("algorithm, loss", [("gnnb", "logistic"), ("unn", "logistic"), ("n3", "matsushita")])
@pytest.mark.slow
def test_float32_matches_float64(algorithm, loss):
    X, y = _blobs(m=200, seed=5)
    nb = np.asarray(jaxnn.knn_graph(X, 6).indices)
    a32 = np.asarray(jaxnn.fit(X, y, k=6, loss=loss, algorithm=algorithm, neighbors=nb).alpha)
    with jax.enable_x64(True):
        a64 = np.asarray(jaxnn.fit(X.astype(np.float64), y, k=6, loss=loss, algorithm=algorithm, neighbors=nb).alpha)
    assert a64.dtype == np.float64 and a32.dtype == np.float32
    np.testing.assert_allclose(a32, a64, rtol=1e-4, atol=1e-4 * np.abs(a64).max())


def test_auto_chooser_runs_colored_on_accelerators_for_whole_passes():
    from jaxnn._src.plan import auto_chooser

    assert auto_chooser(100, 100, "cpu") == "lazy"
    assert auto_chooser(100, 300, "gpu") == "colored"
    assert auto_chooser(100, 300, "tpu") == "colored"
    assert auto_chooser(100, 150, "gpu") == "lazy"  # the schedule runs whole passes only
    # on CPU from m·C = 5·10⁶ (AUTO_COLORED_MIN_STATE_CPU) or m = 5·10⁵ (AUTO_COLORED_MIN_ROWS_CPU), whole passes only
    assert auto_chooser(500_000, 500_000, "cpu", 10) == "colored"
    assert auto_chooser(100_000, 200_000, "cpu", 50) == "colored"
    assert auto_chooser(499_999, 499_999, "cpu", 10) == "lazy"
    assert auto_chooser(500_000, 500_000, "cpu", 2) == "colored"
    assert auto_chooser(499_999, 499_999, "cpu", 2) == "lazy"
    assert auto_chooser(5_000_000, 5_000_000, "cpu") == "colored"
    assert auto_chooser(500_000, 750_000, "cpu", 10) == "lazy"


@pytest.mark.slow
def test_fit_default_chooser_is_what_auto_chooser_says(monkeypatch):
    X, y = _blobs(m=150, C=3, seed=5)
    lazy = jaxnn.fit(X, y, k=5, chooser="lazy", posterior="link", shrinkage=None)
    colored = jaxnn.fit(X, y, k=5, chooser="colored", posterior="link", shrinkage=None)
    platform = platforms.platform()
    expected = lazy if plan.auto_chooser(150, 150, platform, 3) == "lazy" else colored
    # the choosers' α differ in the first digits; a GPU's atomic scatter-adds may
    # change the last bits of one chooser's from run to run (README, Performance)
    assert np.abs(np.asarray(lazy.alpha) - np.asarray(colored.alpha)).max() > 1e-2
    same = functools.partial(np.testing.assert_allclose, rtol=1e-6, atol=1e-7)
    same(np.asarray(jaxnn.fit(X, y, k=5, posterior="link", shrinkage=None).alpha), np.asarray(expected.alpha))
    seen = []
    monkeypatch.setattr(plan, "auto_chooser", lambda m, rounds, platform, n_classes: seen.append((platform, n_classes)) or "colored")
    same(np.asarray(jaxnn.fit(X, y, k=5, posterior="link", shrinkage=None).alpha), np.asarray(colored.alpha))
    assert seen == [(platform, 3)]


def test_chooser_order_refuses_a_chooser_without_a_fixed_sequence():
    from jaxnn._src.plan import chooser_order

    with pytest.raises(ValueError, match="colored"):
        chooser_order("colored", 10, 10, 0)


@pytest.mark.slow
def test_unn_without_finite_root_caps_delta():
    """All r_i agree: without smoothing eq. (10) has no finite root → δ = ±max_delta;
    with the eq. (13) smoothing δ is finite (= ½ log((W⁺+1/m)/(1/m)) for exp)."""
    X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [5.2]], dtype=np.float32)
    y = np.array([0, 0, 0, 1, 1, 1])
    capped = jaxnn.fit(X, y, k=2, loss="exponential", algorithm=jaxnn.unn(smoothing=False, max_delta=7.0), chooser="lazy")
    a = np.asarray(capped.alpha)
    assert np.all(np.abs(a) == pytest.approx(7.0))
    smooth = jaxnn.fit(X, y, k=2, loss="exponential", algorithm="unn", chooser="lazy")  # j = 0 steps first
    s = np.asarray(smooth.alpha)
    assert np.all(np.isfinite(s)) and np.all(np.abs(s) < 7.0)
    # first step on j=0: inv(0) = {1, 2} both agree, W+ = 2, W- = 0, m = 6
    assert s[0, 0] == pytest.approx(0.5 * math.log((2 + 1 / 6) / (1 / 6)), rel=1e-5)
    logistic = jaxnn.fit(X, y, k=2, loss="logistic", algorithm=jaxnn.unn(smoothing=False, max_delta=7.0), chooser="lazy")
    assert np.all(np.abs(np.asarray(logistic.alpha)) == pytest.approx(7.0))


@pytest.mark.slow
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


@pytest.mark.parametrize("algorithm, loss", [("n3", "calibrated_hinge"), ("gnnb", "phi_power(0.3)")])
@pytest.mark.slow  # counts compilations
def test_root_finding_losses_compile_once(algorithm, loss, compilations):
    """Fits and posteriors that run the loss's root finder eagerly (N³'s
    initial edges p̂⁻¹(π) of a ψ-defined loss; a derived link) compiled its
    fori_loop anew on every call: 0.2–0.3 s a fit where 0.007 s is the work.
    (Refits of one shape reuse the boosting: test_fitting's
    test_refits_on_other_data_of_one_shape_reuse_the_compiled_boosting.)"""
    X, y = _blobs(m=120, seed=5)

    def fit_and_predict():
        model = jaxnn.fit(X, y, k=5, algorithm=algorithm, loss=loss, posterior="link", shrinkage=None)
        return jax.block_until_ready(jaxnn.predict_proba(model, X[:30]))

    from jaxnn._src import prediction as predict_mod
    from jaxnn._src import schedule, window
    from jaxnn._src import search as search_mod

    # the engine this platform's plan runs (a GPU's: the colored schedule)
    engine = {"colored": schedule.boost_colored, "windowed": window.boost_windowed}.get(
        plan.make_plan(len(y), len(np.unique(y)), len(y)).schedule, boost)
    watched = (search_mod.conditioned_search, engine, predict_mod._rule)
    with compilations(*watched):  # compiled anew (the root finder's program too, where it is one of its own)
        fit_and_predict(), fit_and_predict()
    with compilations() as compiled:
        fit_and_predict()
    assert compiled.of(*watched) == []
    assert compiled == [], compiled  # nothing: no root finder either


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


@pytest.mark.parametrize("loss", ["logistic", "exponential", "matsushita", "calibrated_hinge"])
@pytest.mark.parametrize("n_plus, n_minus, edge", [(500, 0, 0.0), (40, 1, 0.0), (10, 0, -16.0), (3, 2, 0.3)])
@pytest.mark.slow
def test_unn_fast_step_is_accurate_in_float32_when_one_side_dominates(loss, n_plus, n_minus, edge):
    # W = W⁺/(W⁺ + W⁻) rounds to 1 in float32 once W⁻ ≪ W⁺ (smoothing mass 1/m
    # against hundreds of weights): δ was max_delta = 50 for the logistic loss
    # at n = 500, m = 10⁵ (17.4 is right); δ now comes from the smaller share
    from jaxnn._src.algorithms import UNNFast

    m = 10**5
    L = jaxnn.losses.get(loss)
    e = np.full(n_plus + n_minus, edge, np.float32)
    r = np.r_[np.ones(n_plus), -np.ones(n_minus)].astype(np.float32)
    # jitted, as boosting runs it (one program a case, not one a primitive)
    delta = jax.jit(lambda e, r, n: UNNFast().delta(L, e, r, n, m))
    got = float(delta(e[:, None], r[:, None], np.array([e.size], np.int32))[0])
    with jax.enable_x64(True):
        w = float(L.weight(jnp.float64(edge)))
        wp, wm = n_plus * w + 1 / m, n_minus * w + 1 / m  # eq. 13's smoothing mass on each side
        exact = {  # paper 003 Table 2 (rows B, F, D) and the hinge transfer inverted, in W± directly
            "logistic": math.log(wp / wm), "exponential": 0.5 * math.log(wp / wm),
            "matsushita": (wp - wm) / (2 * math.sqrt(wp * wm)), "calibrated_hinge": (wp - wm) / wm,
        }[loss]
    np.testing.assert_allclose(got, min(exact, 50.0), rtol=2e-5)


@pytest.mark.slow
def test_unn_alpha_does_not_depend_on_a_wide_max_delta():
    """max_delta only bounds the root: where every root lies well inside, a
    wider bound must give the same α.  The root finder's fixed 50 float32
    iterations bisected ±max_delta too little: α was off by 4·10⁻⁴ at
    max_delta = 10¹⁰, by 604 at 10¹⁶ and by 1.6·10¹⁶ at 10³⁰ (float64 by
    5·10⁷ there), where the float64 reference reaches 7.9."""
    X, y = _blobs(m=40, C=3, seed=3)

    def fit(smoothing, max_delta):
        return jaxnn.fit(X, y, k=3, loss="logistic", algorithm=jaxnn.unn(smoothing, max_delta), rounds=120,
                         chooser="lazy", posterior="link", shrinkage=None)

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


# chunk None: fit's default (one step a colour here), for two algorithms; 16: colours cut into steps, for all
@pytest.mark.parametrize("algorithm, loss, chunk", [
    ("gnnb", "logistic", None), ("n3", "calibrated_hinge", None),
    *[(a, l, 16) for a, l in [("gnnb", "logistic"), ("unn", "logistic"), ("unn", "exponential"), ("n3", "calibrated_hinge"),
                              ("unn_fast", "matsushita")]]])
@pytest.mark.slow
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
        col = jaxnn.fit(X64, y, k=6, loss=loss, algorithm=algorithm, chooser="colored", rounds=800, neighbors=nb, posterior="link", shrinkage=None, trace=True)
        Y = col.Y
        E0 = col.algorithm.init_edges(col.loss, Y)
        if chunk is not None:
            res = boost_colored(Y, E0, inv.counts, sched, algorithm=col.algorithm, loss=col.loss, passes=2, trace=True)
            col = dataclasses.replace(col, alpha=res.alpha, trace=res.trace)
        seq = boost(Y, E0, inv.members, inv.counts, jax.numpy.asarray(nb), jax.numpy.asarray(np.concatenate([order, order])),
                    algorithm=col.algorithm, loss=col.loss, greedy=False, trace=True)
    # fit's α is boosting's with its unreached examples (n_j = 0) given their class-sign leverage;
    # boost_colored's own (chunk = 16) is boosting's
    want = np.asarray(seq.alpha) if chunk is not None else _filled(np.asarray(seq.alpha), np.asarray(Y), nb)
    np.testing.assert_allclose(np.asarray(col.alpha), want, rtol=1e-9, atol=1e-10)
    # risk after each step = sequential risk after that step's last example
    ends = np.cumsum((ex < 400).sum(axis=1))
    ends = np.concatenate([ends, ends + 400]) - 1
    np.testing.assert_allclose(np.asarray(col.trace), np.asarray(seq.trace)[ends], rtol=1e-9)


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
    assert default.n_steps == (cpu if platforms.platform() == "cpu" else gpu).n_steps
    model = jaxnn.fit(X, y, k=6, chooser="colored", posterior="link", shrinkage=None)
    E0 = model.algorithm.init_edges(model.loss, model.Y)
    counts = jaxnn.inverse_neighbors(nb).counts
    a = boost_colored(model.Y, E0, counts, cpu, algorithm=model.algorithm, loss=model.loss, passes=1, trace=False)
    b = boost_colored(model.Y, E0, counts, gpu, algorithm=model.algorithm, loss=model.loss, passes=1, trace=False)
    np.testing.assert_allclose(np.asarray(a.alpha), np.asarray(b.alpha), rtol=1e-5, atol=1e-6)
    # fit's α: boosting's, its unreached examples (n_j = 0) given their class-sign leverage
    np.testing.assert_allclose(_filled(np.asarray(b.alpha), np.asarray(model.Y), nb), np.asarray(model.alpha),
                               rtol=1e-5, atol=1e-6)


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


@pytest.mark.slow
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


@pytest.mark.slow
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

    monkeypatch.setattr(plan, "WINDOWED_MIN_STATE", 0)  # both are read outside jit:
    monkeypatch.setattr(window, "WINDOW_ELEMENTS", 16)  # no compilation to drop


@pytest.mark.parametrize("steps", [16, 48])
@pytest.mark.slow
def test_windowed_scan_equals_plain_scan(steps):
    """boost_windowed on a random sequence over several passes (its length no
    multiple of the window; examples with n_j = 0 in it) equals boost, float64."""
    from jaxnn._src.plan import chooser_order
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
        model = jaxnn.fit(X.astype(np.float64), y, k=4, rounds=1, neighbors=nb, posterior="link", shrinkage=None)
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


@pytest.mark.slow
def test_fit_runs_sequential_choosers_windowed_from_the_state_threshold(monkeypatch):
    from jaxnn._src import window

    calls = []
    real = window.boost_windowed
    monkeypatch.setattr(window, "boost_windowed", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    X, y = _blobs(m=300, C=4)  # m·C = 1200 edge entries
    on_cpu = platforms.platform() in platforms.WINDOWED_PLATFORMS  # a GPU runs the plain scan
    for threshold, chooser, expected in [(1200, "lazy", 1), (1200, "random", 1), (1201, "lazy", 0), (0, "greedy", 0), (0, "colored", 0)]:
        monkeypatch.setattr(plan, "WINDOWED_MIN_STATE", threshold)
        calls.clear()
        jaxnn.fit(X, y, k=5, chooser=chooser, posterior="link", shrinkage=None)
        assert len(calls) == (expected if on_cpu else 0), (threshold, chooser)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")  # as on a GPU machine
    assert not plan.make_plan(300, 4, 300, "lazy").windowed and not plan.make_plan(10**6, 10, 10**6, "lazy").windowed


def test_window_layout_in_pieces_is_the_layout_at_once(monkeypatch):
    """window_layout works LAYOUT_WINDOWS windows at a time (its temporaries,
    ~90 bytes per step and member, held 1.0 GB for 4 passes at m = 10⁵,
    k = 30, now 0.24 GB); any piece size gives the same layout, hubs (pieces
    of different widths U) and a last window cut short included."""
    from jaxnn._src import window
    from jaxnn._src.plan import chooser_order

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
