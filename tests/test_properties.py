"""Invariants of fitting and prediction, checked with hypothesis over generated
problems (``PROPERTY_EXAMPLES`` examples each: 200 in the full suite, fewer in
the development tier — tests/conftest.py chooses the hypothesis profile).

Problems are generated from a seed (points from a Gaussian mixture, labels,
sizes, k), so that hypothesis shrinks to small, readable cases.
"""

from __future__ import annotations

import dataclasses
import os
import sys

import jax
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import assume, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import jaxnn

sys.path.insert(0, os.path.dirname(__file__))
from _data import assert_same_refit  # noqa: E402

ALGORITHMS = ("gnnb", "unn", "n3")
CHOOSERS = ("lazy", "random", "greedy", "colored")


@st.composite
def problems(draw, min_m=12, max_m=60):
    """(X (m, d) float64, y (m,) ints with every class present, k)."""
    m = draw(st.integers(min_m, max_m))
    d = draw(st.integers(1, 4))
    C = draw(st.integers(2, 4))
    k = draw(st.integers(1, min(8, m - 1)))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.arange(C), rng.integers(0, C, m - C)])
    rng.shuffle(y)
    centres = rng.normal(scale=2.0, size=(C, d))
    X = centres[y] + rng.normal(size=(m, d))
    return X, y, k


def _knn_margin(X, k: int) -> float:
    """The smallest relative gap between a point's k-th and (k+1)-th nearest
    distance (float64, self excluded): near 0, float32 may order them otherwise."""
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d2, np.inf)
    part = np.sort(d2, axis=1)[:, : k + 1]
    if part.shape[1] <= k:
        return np.inf
    return float(np.min((part[:, k] - part[:, k - 1]) / np.maximum(part[:, k], 1e-300)))


@given(problem=problems(), algorithm=st.sampled_from(ALGORITHMS), chooser=st.sampled_from(CHOOSERS),
       passes=st.integers(1, 3))
def test_the_surrogate_risk_never_increases_at_a_step(problem, algorithm, chooser, passes):
    """GNNB Theorem 4, UNN eq. (A.2), N³: every step (every scan step of the
    colored schedule) leaves the total surrogate risk no higher."""
    X, y, k = problem
    model = jaxnn.fit(X, y, k=k, algorithm=algorithm, chooser=chooser, rounds=passes * X.shape[0], trace=True,
                      posterior="link", shrinkage=None)  # boosting's own steps: no held-out fit
    trace = np.asarray(model.trace, np.float64)
    assert np.all(np.isfinite(trace))
    rises = np.diff(trace)
    assert np.all(rises <= 1e-5 * np.abs(trace[:-1]) + 1e-7), (rises.max(), trace)


@given(problem=problems(), posterior=st.sampled_from(("link", "votes", "auto")))
def test_posteriors_are_probability_rows(problem, posterior):
    X, y, k = problem
    model = jaxnn.fit(X, y, k=k, posterior=posterior)
    P = np.asarray(jaxnn.predict_proba(model, X + 0.1), np.float64)
    assert P.shape == (X.shape[0], np.unique(y).size)
    assert np.all(np.isfinite(P)) and np.all(P >= 0) and np.all(P <= 1)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-5)


@given(problem=problems(), perm_seed=st.integers(0, 2**16))
def test_permuting_class_labels_permutes_the_columns(problem, perm_seed):
    X, y, k = problem
    C = np.unique(y).size
    perm = np.random.default_rng(perm_seed).permutation(C)
    base = jaxnn.fit(X, y, k=k, posterior="link")
    relabelled = jaxnn.fit(X, perm[y], k=k, posterior="link")
    # class c of the first fit is class perm[c] of the second, its column perm[c]
    np.testing.assert_allclose(np.asarray(relabelled.alpha)[:, perm], np.asarray(base.alpha), rtol=1e-5, atol=1e-6)
    Q = X + 0.05
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(relabelled, Q))[:, perm],
                               np.asarray(jaxnn.predict_proba(base, Q)), rtol=1e-5, atol=1e-6)


@given(problem=problems(), shift=st.floats(-1e8, 1e8, allow_nan=False), log2_scale=st.integers(-20, 20))
def test_translating_or_uniformly_scaling_X_changes_nothing(problem, shift, log2_scale):
    """The exact graph, α and the predictions of X and of a·X + b (a a power
    of two, b up to 10⁸) agree when no k-th and (k+1)-th neighbours are near
    a tie (float32 may order those either way)."""
    X, y, k = problem
    assume(_knn_margin(X, k) > 1e-3)
    moved = X * 2.0**log2_scale + shift
    base = jaxnn.fit(X, y, k=k, posterior="link")
    other = jaxnn.fit(moved, y, k=k, posterior="link")
    np.testing.assert_array_equal(np.sort(np.asarray(jaxnn.knn_graph(moved, k).indices), axis=1),
                                  np.sort(np.asarray(jaxnn.knn_graph(X, k).indices), axis=1))
    np.testing.assert_allclose(np.asarray(other.alpha), np.asarray(base.alpha), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(jaxnn.predict(other, moved), jaxnn.predict(base, X))


@given(problem=problems(), shift=st.floats(-1e3, 1e3, allow_nan=False), log2_scale=st.integers(-10, 10),
       weight=st.sampled_from((0.5, 2.0)), bandwidth=st.sampled_from((0.25, 1.0, 4.0)))
def test_the_kernel_term_ignores_translation_and_uniform_scaling(problem, shift, log2_scale, weight, bandwidth):
    """With a kernel term (w > 0, three or more classes) the posteriors of
    queries Q under a model of X equal those of a·Q + b under the same
    model moved (a a power of two): each query's bandwidth is in units of
    its own neighbours' distances."""
    X, y, k = problem
    assume(np.unique(y).size >= 3 and _knn_margin(np.concatenate([X, X + 0.05]), k) > 1e-3)
    moved = X * 2.0**log2_scale + shift
    kernel = dict(posterior_temperature=1.0, posterior_weight=weight, posterior_bandwidth=bandwidth)
    base = dataclasses.replace(jaxnn.fit(X, y, k=k, posterior="link", shrinkage=None), **kernel)
    other = dataclasses.replace(jaxnn.fit(moved, y, k=k, posterior="link", shrinkage=None), **kernel)
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(other, (X + 0.05) * 2.0**log2_scale + shift)),
                               np.asarray(jaxnn.predict_proba(base, X + 0.05)), atol=2e-3)


@given(problem=problems())
def test_unit_leverage_is_the_knn_vote(problem):
    """α ≡ 1 gives H_c(x) = Σ_{j∈NN_k(x)} y_jc = k·(2·v_c(x) − 1), v the
    k-NN vote fractions (self excluded on the training points)."""
    X, y, k = problem
    model = jaxnn.fit(X, y, k=k, posterior="link", shrinkage=None)  # α is replaced: no held-out fit
    unit = dataclasses.replace(model, alpha=np.ones_like(np.asarray(model.alpha)))
    H = np.asarray(jaxnn.decision_function(unit, neighbors=jaxnn.knn_graph(X, k)), np.float64)
    nb = np.asarray(jaxnn.knn_graph(X, k).indices)
    votes = (y[nb][:, :, None] == np.unique(y)[None, None, :]).mean(axis=1)
    np.testing.assert_allclose(H, k * (2 * votes - 1), atol=1e-5)


def _seeded_fits() -> dict[str, np.ndarray]:
    """Default fits (the held-out posterior choice included) of every chooser,
    of string labels, and of a k = 2 graph that leaves examples unreached
    (their leverage from the labels alone): α, the posterior settings and the
    query posteriors, by name.  Run in two processes and compared."""
    from _data import _blobs

    out = {}
    rng = np.random.default_rng(11)
    X = rng.normal(size=(60, 3)) + np.repeat(np.eye(3) * 2.5, 20, axis=0)
    y = np.repeat(np.arange(3), 20)
    cases = {chooser: (X, y, dict(k=5, chooser=chooser, seed=7)) for chooser in CHOOSERS}
    cases["strings"] = (X, np.array(["setosa", "virginica", "versicolor"])[y], dict(k=5, chooser="random", seed=3))
    cases["unreached"] = (*_blobs(m=150, C=3, seed=4), dict(k=2, chooser="random", seed=1))
    for name, (Xc, yc, kw) in cases.items():
        model = jaxnn.fit(Xc, yc, **kw)
        out[f"{name}.alpha"] = np.asarray(model.alpha)
        out[f"{name}.posterior"] = np.array([model.posterior_temperature, model.posterior_weight,
                                             model.posterior_bandwidth, model.posterior_mix], np.float64)
        out[f"{name}.proba"] = np.asarray(jaxnn.predict_proba(model, Xc[:20] + 0.1))
    return out


def test_the_same_seed_gives_the_same_fit_bit_for_bit_in_another_process(tmp_path):
    """Two processes (another hash seed) fitting one problem with one seed get
    the same α, posterior settings and posteriors: bit for bit on a CPU
    (to float32 rounding on a GPU: assert_same_refit).  Within one process
    the same program on the same inputs could not differ."""
    import subprocess

    path = tmp_path / "fits.npz"
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); import numpy as np; "
            f"import test_properties as t; np.savez({str(path)!r}, **t._seeded_fits())")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    here = _seeded_fits()
    with np.load(path) as there:
        assert sorted(there.files) == sorted(here)
        for name, value in here.items():
            assert_same_refit(there[name], value)
    assert here["unreached.posterior"][0] > 0  # a temperature was chosen


@given(problem=problems(), algorithm=st.sampled_from(ALGORITHMS))
def test_float32_is_float64_up_to_rounding(problem, algorithm):
    X, y, k = problem
    assume(_knn_margin(X, k) > 1e-3)
    # boosting's α: a held-out choice of the shrinkage (a grid) may round to another grid point
    kw = dict(k=k, algorithm=algorithm, posterior="link", shrinkage=None)
    single = jaxnn.fit(X.astype(np.float32), y, **kw)
    with jax.enable_x64(True):
        double = jaxnn.fit(X, y, **kw)
        alpha64 = np.asarray(double.alpha)
    assert alpha64.dtype == np.float64
    scale = max(1.0, float(np.abs(alpha64).max()))
    np.testing.assert_allclose(np.asarray(single.alpha, np.float64), alpha64, rtol=1e-3, atol=1e-4 * scale)


def test_property_profile_runs_enough_examples(request):
    """The full suite runs every property over at least 200 examples."""
    from hypothesis import settings

    if "not slow" in (request.config.getoption("markexpr") or ""):
        pytest.skip("the development tier runs fewer examples")
    assert settings.default.max_examples >= 200


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 400), C=st.integers(2, 40),
       log10_scale=st.one_of(st.floats(-3, 4), st.sampled_from([-42.0, 39.0])), kernel=st.booleans(),
       weighted=st.booleans(), coarse=st.booleans())
def test_screening_temperatures_in_float32_keeps_the_float64_choice(seed, n, C, log10_scale, kernel, weighted, coarse):
    """best_temperature with every grid screened in float32 first
    (``SCREEN_MIN_ENTRIES = 0``) returns the T and the loss of the whole
    float64 grid — for scores of any scale (beyond float32's normal numbers
    too), with ties (rounded scores), weights and kernel terms."""
    from jaxnn._src import calibration

    rng = np.random.default_rng(seed)
    H = np.round(rng.normal(size=(n, C)) * 10.0, 0) * 10.0 ** (log10_scale - 1)
    target = np.eye(C)[np.where(rng.random(n) < 0.6, np.argmax(H, axis=1), rng.integers(0, C, n))]
    weights = rng.random(n) if weighted else None
    top = np.argmax(H, axis=1) if kernel else None
    G = 4.0 * np.log(rng.dirichlet(np.ones(C), n) + 1e-3) if kernel else None
    choose = lambda: calibration.best_temperature(H, target, False, weights, G, top, coarse=coarse)  # noqa: E731
    with pytest.MonkeyPatch.context() as screen:
        screen.setattr(calibration, "SCREEN_MIN_ENTRIES", 0)
        screened = choose()
    with pytest.MonkeyPatch.context() as whole:
        whole.setattr(calibration, "SCREEN_MIN_ENTRIES", np.inf)
        assert choose() == screened


@given(seed=st.integers(0, 2**31 - 1), k=st.integers(1, 16), C=st.sampled_from([1, 3]),
       scale=st.sampled_from([1e-30, 1.0, 1e30]))
def test_select_scores_on_the_host_as_its_programs_to_the_bit(seed, k, C, scale):
    """select's host scoring (few held-out entries) sums the scores, vote
    counts and first positions in its programs' order: the same floats,
    whatever k of the searched columns, α's scale and the labels' ties."""
    from jaxnn._src import prediction
    from jaxnn._src import select as select_mod

    rng = np.random.default_rng(seed)
    Y = np.where(rng.integers(0, C + 1, (64, 1)) == np.arange(C), 1.0, -1.0).astype(np.float32)  # some in no class
    alpha = (rng.standard_normal((64, C)) * scale).astype(np.float32)
    idx = rng.integers(0, 64, (40, 16)).astype(np.int32)
    kk = np.int32(k)
    want = np.asarray(prediction.leveraged_scores(alpha, Y, idx, kk))
    np.testing.assert_array_equal(prediction.host_neighbor_sum(alpha * Y, idx, k), want)
    counts, first = (np.asarray(a) for a in select_mod._tie_parts(Y, idx, kk))
    np.testing.assert_array_equal(prediction.host_neighbor_sum((Y > 0).astype(np.float32), idx, k), counts)
    np.testing.assert_array_equal(prediction.host_first_positions(Y, idx, k), first)


@given(seed=st.integers(0, 2**31 - 1), n=st.one_of(st.integers(-6, 6), st.integers(-2300, 2300)), x64=st.booleans())
def test_times_power_of_two_is_ldexp(seed, n, x64):
    """The searches scale by powers of two with three bit-built factors, not
    jnp.ldexp (a far larger program): the same floats for every normal x
    and exponent, and for 0, ±inf and NaN; a subnormal result is 0 or
    ldexp's own (the platform may flush them)."""
    from jaxnn._src import search

    dtype = np.float64 if x64 else np.float32
    rng = np.random.default_rng(seed)
    tiny, low, top = np.finfo(dtype).tiny, np.finfo(dtype).minexp, np.finfo(dtype).maxexp
    exponents = np.concatenate([rng.integers(low, top, 32), rng.integers(low, low + 4, 16),
                                rng.integers(top - 4, top, 16)])
    x = np.ldexp(rng.uniform(0.5, 1.0, 64) * rng.choice([-1, 1], 64), exponents).astype(dtype)  # near both ends too
    x = np.concatenate([x, np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype)])
    with jax.enable_x64(x64):
        want = np.asarray(jax.numpy.ldexp(x, n))
        got = np.asarray(jax.jit(search._times_power_of_two)(x, n))
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    same &= np.signbit(got) == np.signbit(want)
    assert np.all(same | ((np.abs(want) < tiny) & (got == 0))), (n, x[~same], want[~same], got[~same])
