"""Divide and conquer (jaxnn.ensemble): generalised means, the split model,
equality with jaxnn.fit for one block, the vmapped path against a loop of
fits, and that splitting helps when blocks carry independent evidence."""

import dataclasses
import math

import jax
import numpy as np
import pytest

import jaxnn
from jaxnn import ensemble as ens
from jaxnn._src import boost_runs, plan, platforms
from jaxnn._src import steps as steps_mod

# Shapes are shared across tests (m = 120, d = 10, C = 3, k = 5, n_splits = 3,
# 30 query rows) so that compiled programs are reused and the file stays fast.


def _blobs(m=120, C=3, d=10, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=1.5, size=(C, d))
    y = rng.integers(0, C, size=m)
    return (centers[y] + rng.normal(size=(m, d))).astype(np.float32), y


def _block_mixture(m, n_blocks=8, width=4, K=3, sigma=0.5, C=2, seed=0):
    """Given the class, each block of `width` features is an independent draw
    around one of K unit directions specific to (block, class), times a
    nuisance scale e^U(−1, 1) per example and block (what L2 removes)."""
    U = np.random.default_rng(123).normal(size=(n_blocks, C, K, width))
    U /= np.linalg.norm(U, axis=-1, keepdims=True)
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, m)
    comp = rng.integers(0, K, (m, n_blocks))
    X = U[np.arange(n_blocks)[None, :], y[:, None], comp] + sigma * rng.normal(size=(m, n_blocks, width))
    X = X * np.exp(rng.uniform(-1.0, 1.0, size=(m, n_blocks, 1)))
    return X.reshape(m, n_blocks * width).astype(np.float32), y


# ---------------------------------------------------------------- means


@pytest.mark.parametrize("kind, expected", [("arithmetic", 0.5), ("geometric", 0.4), ("harmonic", 0.32), (1, 0.5), (0, 0.4), (-1, 0.32), (2.0, math.sqrt(0.34))])
def test_generalized_mean_closed_forms(kind, expected):
    assert float(ens.generalized_mean(np.array([0.2, 0.8]), kind)) == pytest.approx(expected, rel=1e-6)


def test_generalized_mean_axis_order_and_clipping():
    rng = np.random.default_rng(0)
    P = rng.uniform(0.01, 1.0, size=(5, 7, 3))
    a = np.asarray(ens.generalized_mean(P, "arithmetic", axis=0))
    g = np.asarray(ens.generalized_mean(P, "geometric", axis=0))
    h = np.asarray(ens.generalized_mean(P, "harmonic", axis=0))
    assert a.shape == g.shape == h.shape == (7, 3)
    np.testing.assert_allclose(a, P.mean(0), rtol=1e-6)
    np.testing.assert_allclose(g, np.exp(np.log(P).mean(0)), rtol=1e-5)
    np.testing.assert_allclose(h, 1 / (1 / P).mean(0), rtol=1e-5)
    assert np.all(h <= g + 1e-6) and np.all(g <= a + 1e-6)  # HM ≤ GM ≤ AM
    np.testing.assert_allclose(np.asarray(ens.generalized_mean(P, "harmonic", axis=2)), 1 / (1 / P).mean(2), rtol=1e-5)
    # a zero is clipped to 1e-12: GM(0, 1) = 1e-6, HM(0, 1) ≈ 2e-12
    assert float(ens.generalized_mean(np.array([0.0, 1.0]), "geometric")) == pytest.approx(1e-6, rel=1e-3)
    assert float(ens.generalized_mean(np.array([0.0, 1.0]), "harmonic")) == pytest.approx(2e-12, rel=1e-3)
    # one entry: returned as is
    assert float(ens.generalized_mean(np.array([0.3]), "harmonic")) == pytest.approx(0.3)


@pytest.mark.parametrize("kind", ["median", "", None, float("nan"), True])
def test_generalized_mean_rejects_unknown_kind(kind):
    with pytest.raises(ValueError, match="kind"):
        ens.generalized_mean(np.array([0.2, 0.8]), kind)


@pytest.mark.parametrize(
    "q, expected",
    [
        (1e-300, 0.4), (-1e-300, 0.4), (1e-21, 0.4), (1e-10, 0.4),  # q → 0: geometric
        (1e308, 0.8), (1e21, 0.8), (1e6, 0.8),  # q → +∞: max
        (-1e308, 0.2), (-1e21, 0.2), (-1e6, 0.2),  # q → −∞: min
    ],
)
def test_generalized_mean_power_limits(q, expected):
    assert float(ens.generalized_mean(np.array([0.2, 0.8]), q)) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("q", [1e-3, 0.5, 3.0, -2.0, -7.5, 50.0, -50.0, 300.0])
def test_generalized_mean_power_matches_float64_reference(q):
    P = np.random.default_rng(1).uniform(0.05, 1.0, size=(5, 7))
    ref = np.mean(P**q, axis=0) ** (1.0 / q)  # float64, no overflow for these q
    np.testing.assert_allclose(np.asarray(ens.generalized_mean(P, q)), ref, rtol=2e-5)
    # and a zero (clipped to 1e-12) with a strongly negative q: P**q would overflow
    got = float(ens.generalized_mean(np.array([0.0, 0.5]), -40.0))
    assert got == pytest.approx(1e-12 * 2 ** (1 / 40), rel=1e-4)


@pytest.mark.parametrize(
    "P, q",
    [([0.2, 0.8], 5000.0), ([0.2, 0.8], -5000.0), ([0.3, 0.9, 0.6], 2e4),  # large |q|: near, not at, the max / min
     ([1e-12, 1.0], 5e-5), ([1e-12, 1.0], -5e-5), ([1e-12, 0.5, 1.0], 1e-4)],  # small |q|: near, not at, the GM
)
def test_generalized_mean_large_and_small_powers(P, q):
    """M_q = (mean p^q)^{1/q} in float64 log space, exp((logsumexp(q log p) − log n)/q):
    M_5000(0.2, 0.8) = 0.8·2^{−1/5000} = 0.79989, not the max 0.8;
    M_{5e-5}(1e-12, 1) = 1.00478e-6, not the geometric mean 1e-6."""
    from scipy.special import logsumexp

    L = np.log(np.asarray(P, np.float64))
    ref = np.exp((logsumexp(q * L) - np.log(L.size)) / q)
    assert float(ens.generalized_mean(np.asarray(P), q)) == pytest.approx(ref, rel=1e-5)


@pytest.mark.parametrize(
    "P, axis, exc, match",
    [
        ([np.nan, 0.5], 0, ValueError, "P contains NaN or infinite"),
        ([np.inf, 0.5], 0, ValueError, "P contains NaN or infinite"),
        ([5.0, -3.0], 0, ValueError, "P must hold probabilities in \\[0, 1\\]"),
        ([0.5, 1.1], 0, ValueError, "P must hold probabilities"),
        ([], 0, ValueError, "P is empty along axis 0"),
        (np.zeros((2, 0)), 1, ValueError, "P is empty along axis 1"),
        (0.5, 0, ValueError, "P must have at least one axis"),
        ([0.2, 0.8], 5, ValueError, "axis 5 is out of range"),
        ([0.2, 0.8], -2, ValueError, "axis -2 is out of range"),
        ([0.2, 0.8], "a", TypeError, "axis must be an integer"),
        ([0.2, 0.8], 0.0, TypeError, "axis must be an integer"),
        ([0.2, 0.8], True, TypeError, "axis must be an integer"),
        (["a", "b"], 0, TypeError, "P must hold numbers"),
        (np.array([0.5, None]), 0, TypeError, "P must hold numbers"),
        (None, 0, TypeError, "P must be an array"),
        ("0.5", 0, TypeError, "P must be an array"),
        (np.array([0.5, 0.5]) + 0j, 0, TypeError, "P must be real"),
        ([[0.5], [0.2, 0.3]], 0, ValueError, "P must be a rectangular array"),
    ],
)
def test_generalized_mean_rejects_bad_P_and_axis(P, axis, exc, match):
    with pytest.raises(exc, match=match):
        ens.generalized_mean(P, "geometric", axis=axis)


def test_generalized_mean_traced_and_jax_inputs():
    # concrete JAX arrays are checked; traced ones (under jit) run unchecked
    with pytest.raises(ValueError, match="NaN"):
        ens.generalized_mean(jax.numpy.array([0.5, float("nan")]))
    out = jax.jit(lambda p: ens.generalized_mean(p, 0.5))(jax.numpy.array([0.2, 0.8]))
    assert float(out) == pytest.approx(0.45, rel=1e-5)
    assert float(ens.generalized_mean([True, False], "arithmetic")) == 0.5


# ---------------------------------------------------------------- one block == fit


@pytest.fixture(scope="module")
def data():
    X, y = _blobs()
    Xq, _ = _blobs(m=30, seed=1)
    return X, y, Xq


@pytest.fixture(scope="module")
def sm3(data):
    X, y, _ = data
    return ens.fit_split(X, y, n_splits=3, k=5)  # norm="l2", mean="geometric"


def test_one_split_without_norm_equals_fit(data):
    X, y, Xq = data
    kw = dict(k=5, chooser="random", seed=3, rounds=200, trace=True)
    ref = jaxnn.fit(X, y, posterior="link", shrinkage=None, **kw)
    sm = ens.fit_split(X, y, n_splits=1, norm=None, **kw)
    (blk,) = sm.models
    for name in ("alpha", "X", "Y"):
        np.testing.assert_array_equal(np.asarray(getattr(blk, name)), np.asarray(getattr(ref, name)))
    np.testing.assert_array_equal(np.asarray(blk.trace), np.asarray(ref.trace))
    assert (blk.classes, blk.k, blk.loss, blk.algorithm, blk.rounds) == (ref.classes, ref.k, ref.loss, ref.algorithm, ref.rounds)
    np.testing.assert_array_equal(np.asarray(ens.decision_function_split(sm, Xq))[0], np.asarray(jaxnn.decision_function(ref, Xq)))
    np.testing.assert_array_equal(ens.predict_split(sm, Xq), jaxnn.predict(ref, Xq))
    np.testing.assert_allclose(np.asarray(ens.predict_proba_split(sm, Xq)), np.asarray(jaxnn.predict_proba(ref, Xq)), atol=1e-6)


@pytest.mark.slow
def test_one_split_colored_equals_fit(data):
    X, y, _ = data
    kw = dict(k=5, chooser="colored", rounds=240, trace=True)
    ref = jaxnn.fit(X, y, posterior="link", shrinkage=None, **kw)
    (blk,) = ens.fit_split(X, y, n_splits=1, norm=None, **kw).models
    np.testing.assert_array_equal(np.asarray(blk.alpha), np.asarray(ref.alpha))
    np.testing.assert_array_equal(np.asarray(blk.trace), np.asarray(ref.trace))


@pytest.mark.slow
def test_colored_blocks_each_run_their_own_schedule(data):
    """Each block's colored fit equals the sequential scan in *its own*
    colour order (blocks have different graphs, so different schedules,
    padded to a common step count); its trace never increases and stays
    flat at the padding steps."""
    from jaxnn._src.boosting import boost
    from jaxnn._src.leverage import unreached_leverage
    from jaxnn._src.schedule import color_schedule, colored_order

    X, y, _ = data
    blocks = [[0, 1], [2, 3], list(range(4, 10))]  # 8, 9 and 10 steps a pass
    sm = ens.fit_split(X, y, blocks=blocks, norm="l1", k=5, chooser="colored", rounds=240, trace=True)
    Xs = np.asarray(ens.split_features(sm, X))
    steps = []
    for b in range(3):
        nb = np.asarray(jaxnn.knn_graph(Xs[b][:, : len(blocks[b])], 5).indices)
        order = colored_order(color_schedule(nb))
        steps.append(color_schedule(nb, n_classes=3 * 3).n_steps)
        inv = jaxnn.inverse_neighbors(nb)
        E0 = sm.algorithm.init_edges(sm.loss, sm.Y)
        seq = boost(sm.Y, E0, inv.members, inv.counts, jax.numpy.asarray(nb), jax.numpy.asarray(np.tile(order, 2)),
                    algorithm=sm.algorithm, loss=sm.loss, greedy=False, trace=False)
        # fit_split's α: the block's boosting α, its unreached examples (n_j = 0) given their class-sign leverage
        want = unreached_leverage(seq.alpha, sm.Y, nb)
        np.testing.assert_allclose(np.asarray(sm.alpha[b]), np.asarray(want), rtol=1e-5, atol=1e-6)
    assert len(set(steps)) == 3  # the padding is exercised
    trace = np.asarray(sm.trace)
    assert trace.shape == (3, 2 * max(steps))
    assert np.all(np.diff(trace, axis=1) <= 1e-6)
    for b in range(3):
        pad = slice(steps[b], max(steps))
        np.testing.assert_array_equal(trace[b, pad], trace[b, steps[b] - 1])


@pytest.mark.slow
def test_auto_chooser_picks_as_fit(sm3, data, monkeypatch):
    from jaxnn._src.plan import auto_chooser

    X, y, _ = data
    platform = platforms.platform()
    expected = ens.fit_split(X, y, n_splits=3, k=5, chooser=auto_chooser(120, 120, platform, 3))
    np.testing.assert_array_equal(np.asarray(sm3.alpha), np.asarray(expected.alpha))  # sm3: the default chooser
    seen = []
    monkeypatch.setattr(plan, "auto_chooser", lambda m, rounds, platform, n_classes: seen.append((m, rounds, platform, n_classes)) or "colored")
    auto = ens.fit_split(X, y, n_splits=3, k=5, rounds=240)
    assert seen == [(120, 240, platform, 3)]
    colored = ens.fit_split(X, y, n_splits=3, k=5, rounds=240, chooser="colored")
    np.testing.assert_array_equal(np.asarray(auto.alpha), np.asarray(colored.alpha))


def _l1(A):
    return A / np.abs(A).sum(1, keepdims=True)


@pytest.mark.parametrize("chooser, check_blocks", [("lazy", (0, 1, 2)), ("greedy", (1,)), ("colored", (0, 1, 2))])
@pytest.mark.slow
def test_vmapped_blocks_equal_a_loop_of_fits(data, chooser, check_blocks):
    X, y, Xq = data
    sm = ens.fit_split(X, y, n_splits=3, norm="l1", k=5, chooser=chooser)
    assert sm.blocks == (tuple(range(0, 4)), tuple(range(4, 7)), tuple(range(7, 10)))  # widths 4, 3, 3: padded
    assert sm.boundaries == (0, 4, 7, 10)
    H = np.asarray(ens.decision_function_split(sm, Xq))
    assert H.shape == (3, 30, 3)
    Q = np.asarray(ens.split_features(sm, Xq))
    for b in check_blocks:
        block = list(sm.blocks[b])
        ref = jaxnn.fit(_l1(X[:, block]), y, k=5, chooser=chooser, posterior="link", shrinkage=None)
        np.testing.assert_allclose(np.asarray(sm.models[b].alpha), np.asarray(ref.alpha), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(H[b], np.asarray(jaxnn.decision_function(ref, _l1(Xq[:, block]))), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(jaxnn.predict(sm.models[b], Q[b][:, : len(block)]), jaxnn.predict(ref, _l1(Xq[:, block])))


def test_blocks_weigh_narrow_steps_against_all_blocks(data, monkeypatch):
    """``_boost_blocks`` runs ``boost``'s body once per block: whether its
    steps are narrowed to n_j is weighed against the n blocks' work (weighed
    per block, spambase's 8 blocks, P = 2560, ran every step full width:
    3.1 s instead of 0.64 s warm)."""
    from jaxnn._src import boosting, shared_sizes
    from jaxnn._src import ensemble as ens_src

    X, y, _ = data
    seen = []
    real = steps_mod.step_widths
    monkeypatch.setattr(boosting, "step_widths", lambda P, work=None, **kw: seen.append((P, work)) or real(P, work, **kw))
    boost_runs._boost_blocks.clear_cache()
    boosting.boost.clear_cache()
    try:
        ens.fit_split(X, y, n_splits=3, norm="l1", k=5, rounds=2 * X.shape[0], chooser="lazy")
    finally:
        boost_runs._boost_blocks.clear_cache()
        boosting.boost.clear_cache()
    (P, work), = seen
    steps = shared_sizes.in_blocks(2 * X.shape[0])  # a small problem's steps run padded to a shared number
    assert work == 3 * steps * P * 3  # blocks × steps × width × classes


# ---------------------------------------------------------------- posteriors


def test_posteriors_are_probabilities(sm3, data):
    _, _, Xq = data
    B = np.clip(np.asarray(ens.block_posteriors(sm3, Xq)), 1e-12, 1.0)
    # extreme powers: the max / min over blocks, tiny powers: the geometric mean
    for q, ref in [(1e308, B.max(0)), (-1e308, B.min(0)), (1e-300, np.exp(np.log(B).mean(0)))]:
        P = np.asarray(ens.predict_proba_split(sm3, Xq, mean=q, normalize=False))
        np.testing.assert_allclose(P, ref, rtol=1e-5)
        assert np.all(np.isfinite(np.asarray(ens.predict_proba_split(sm3, Xq, mean=q))))
    B = np.asarray(ens.block_posteriors(sm3, Xq))
    assert B.shape == (3, 30, 3) and np.all(B >= 0) and np.all(B <= 1)
    for mean in ["geometric", "arithmetic", "harmonic", 0.5]:
        P = np.asarray(ens.predict_proba_split(sm3, Xq, mean=mean))
        assert P.shape == (30, 3)
        assert np.all(P >= 0) and np.all(P <= 1)
        np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-5)
        raw = np.asarray(ens.generalized_mean(B, mean))
        np.testing.assert_allclose(P, raw / raw.sum(1, keepdims=True), rtol=1e-5)
        np.testing.assert_allclose(np.asarray(ens.predict_proba_split(sm3, Xq, mean=mean, normalize=False)), raw, rtol=1e-6)
        labels = ens.predict_split(sm3, Xq, mean=mean)
        assert labels.shape == (30,) and set(labels) <= {0, 1, 2}
        np.testing.assert_array_equal(labels, np.argmax(P, axis=1))
    # the model's own mean (geometric) is the default
    np.testing.assert_array_equal(np.asarray(ens.predict_proba_split(sm3, Xq)), np.asarray(ens.predict_proba_split(sm3, Xq, mean="geometric")))


def test_multilabel_split(data):
    X, _, Xq = data
    Yind = (X[:, :3] > 0).astype(int)
    Yind[0] = 1 - Yind[1]  # both values in every column
    sm = ens.fit_split(X, Yind, n_splits=3, k=5)
    assert sm.multilabel and sm.n_classes == 3
    P = np.asarray(ens.predict_proba_split(sm, Xq))
    assert P.shape == (30, 3) and np.all((P >= 0) & (P <= 1))
    pred = ens.predict_split(sm, Xq)
    assert pred.shape == (30, 3) and set(np.unique(pred)) <= {0, 1}
    np.testing.assert_array_equal(pred, (P > 0.5).astype(int))


def test_multilabel_split_predicts_strictly_above_one_half(data):
    # one boosting round: most query points get H = 0 in every block, so a
    # combined posterior of exactly link(0) = 1/2 — predicted 0 (p > 1/2)
    X, _, Xq = data
    Yind = (X[:, :3] > 0).astype(int)
    sm = ens.fit_split(X, Yind, n_splits=3, k=5, rounds=1, mean="arithmetic")
    H = np.asarray(ens.decision_function_split(sm, Xq))
    P = np.asarray(ens.predict_proba_split(sm, Xq))
    undecided = np.all(H == 0, axis=0)
    assert undecided.sum() > 10
    np.testing.assert_array_equal(P[undecided], 0.5)
    pred = ens.predict_split(sm, Xq)
    np.testing.assert_array_equal(pred, (P > 0.5).astype(int))
    np.testing.assert_array_equal(pred[undecided], 0)


def test_normalisation_and_explicit_blocks(sm3, data):
    X, y, _ = data
    B = np.asarray(ens.split_features(sm3, X))
    assert B.shape == (3, 120, 4)
    np.testing.assert_allclose(np.linalg.norm(B, axis=2), 1.0, rtol=1e-5)  # L2 per block and example
    np.testing.assert_allclose(B[1, :, :3], X[:, 4:7] / np.linalg.norm(X[:, 4:7], axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(B[1, :, 3], 0.0)  # padding column
    Xz = X.copy()
    Xz[0, [1, 4, 7]] = 0.0  # an all-zero block stays zero
    sm = ens.fit_split(Xz, y, blocks=[[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]], norm="l1", k=5)
    assert sm.n_splits == 3 and sm.boundaries is None and sm.n_features == 10
    B1 = np.asarray(ens.split_features(sm, Xz))
    np.testing.assert_allclose(np.abs(B1[1, 1:]).sum(1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(B1[1, 0], 0.0)
    np.testing.assert_allclose(B1[0], _l1(Xz[:, [0, 3, 6, 9]]), rtol=1e-5)


def test_constant_blocks_warn(data, caplog):
    X, y, _ = data
    with caplog.at_level("WARNING", logger="jaxnn"):
        ens.fit_split(X, y, n_splits=3, k=5)
    assert not caplog.records
    Xc = X.copy()
    Xc[:, 7:] = 2.5  # block 2 (features 7, 8, 9) constant
    with caplog.at_level("WARNING", logger="jaxnn"):
        ens.fit_split(Xc, y, n_splits=3, k=5, norm=None)
    (record,) = caplog.records
    message = record.getMessage()
    assert "1 of 3 blocks" in message and "2 (features 7, 8, 9)" in message and "blocks=" in message
    caplog.clear()
    # positive one-feature blocks become all ones under a norm: only their sign is left
    with caplog.at_level("WARNING", logger="jaxnn"):
        ens.fit_split(np.abs(X), y, n_splits=10, k=5)
    (record,) = [r for r in caplog.records if "same for every training point" in r.getMessage()]
    message = record.getMessage()
    assert "10 of 10 blocks" in message and "after normalisation" in message and "and 5 more" in message
    assert "norm=None" in message


def test_one_feature_blocks_under_a_norm_warn(data, caplog):
    # a norm maps a one-feature block to its sign: warn even when the block is not constant
    X, y, Xq = data

    def one_feature_warnings():
        return [r.getMessage() for r in caplog.records if "single feature" in r.getMessage()]

    blocks = [[0], [1, 2, 3, 4], [5, 6, 7, 8]]
    with caplog.at_level("WARNING", logger="jaxnn"):
        sm = ens.fit_split(X, y, blocks=blocks, k=5)
    (message,) = one_feature_warnings()
    assert "1 of 3 blocks" in message and "norm='l2'" in message and "sign" in message
    assert "norm=None" in message and "wider blocks" in message
    caplog.clear()
    with caplog.at_level("WARNING", logger="jaxnn"):
        ens.fit_split(X, y, n_splits=10, k=5, norm="l1")
    (message,) = one_feature_warnings()
    assert "10 of 10 blocks" in message and "norm='l1'" in message
    caplog.clear()
    # no norm, or no one-feature block: no warning
    with caplog.at_level("WARNING", logger="jaxnn"):
        sm_none = ens.fit_split(X, y, blocks=blocks, k=5, norm=None)
        ens.fit_split(X, y, n_splits=3, k=5)
    assert not one_feature_warnings()
    # the warning changes no result: the one-feature block is still the sign of feature 0
    np.testing.assert_array_equal(np.asarray(ens.split_features(sm, Xq))[0, :, 0], np.sign(Xq[:, 0]))
    np.testing.assert_allclose(np.asarray(ens.split_features(sm_none, Xq))[0, :, 0], Xq[:, 0])


def test_split_model_is_a_pytree(sm3, data):
    X, _, Xq = data
    leaves, treedef = jax.tree_util.tree_flatten(sm3)
    assert len(leaves) == 3  # alpha, X, Y (trace None)
    back = jax.tree_util.tree_unflatten(treedef, leaves)
    assert isinstance(back, ens.SplitModel) and back.blocks == sm3.blocks and back.mean == "geometric" and back.rounds == 120
    np.testing.assert_array_equal(ens.predict_split(back, Xq), ens.predict_split(sm3, Xq))



# ------------------------------------------------- saturated and underflowed posteriors


def _saturating(n_splits, sep, seed):
    """Overlapping classes boosted long by UNN without smoothing (m = 120,
    d = 10, k = 5, 30 query rows): large |H|, so that float32 link
    posteriors saturate at 1 (ties) or underflow to 0 on some query rows."""
    rng = np.random.default_rng(seed)
    m = 120
    y = rng.integers(0, 3, m)
    X = (rng.normal(size=(m, 10)) + sep * np.eye(3, 10)[y]).astype(np.float32)
    Xq = (rng.normal(size=(30, 10)) * 1.5).astype(np.float32)
    kw = dict(k=5, algorithm=jaxnn.unn(smoothing=False), rounds=10 * m, chooser="lazy")  # as auto on CPU
    return X, y, Xq, kw, ens.fit_split(X, y, n_splits=n_splits, norm=None, **kw)


@pytest.mark.slow
def test_one_block_predicts_as_fit_where_posteriors_saturate_or_underflow():
    """fit_split's promise (n_splits=1, norm=None ≡ fit, labels included) where
    two classes' posteriors both round to 1 (predict_split took the first,
    jaxnn.predict the larger H) or all underflow (the 1e-12 floor made every
    class tie: a uniform posterior and class 0)."""
    X, y, Xq, kw, sm = _saturating(1, 0.5, 0)
    ref = jaxnn.fit(X, y, posterior="link", shrinkage=None, **kw)
    B = np.asarray(ens.block_posteriors(sm, Xq))[0]
    assert np.sum((B == 1).sum(1) > 1) >= 1 and np.sum(B.max(1) == 0) >= 1  # both cases occur
    np.testing.assert_array_equal(ens.predict_split(sm, Xq), jaxnn.predict(ref, Xq))
    np.testing.assert_array_equal(np.asarray(ens.predict_proba_split(sm, Xq)), np.asarray(jaxnn.predict_proba(ref, Xq)))


def test_split_ties_in_the_combined_posterior_go_to_the_summed_scores():
    """Several blocks: where the combined posterior ties, the label is the tied
    class of largest Σ_b H^b; a row whose posteriors are all at or below the
    floor puts its mass on the largest Σ_b H^b (not uniform)."""
    _, _, Xq, _, sm = _saturating(3, 2.0, 2)
    S = np.asarray(ens.decision_function_split(sm, Xq)).sum(0)
    B = np.asarray(ens.block_posteriors(sm, Xq))
    low = np.all(B <= 1e-12, axis=(0, 2))
    assert low.sum() >= 1
    for mean in ["geometric", "arithmetic", "harmonic", -3.0]:
        R = np.asarray(ens.predict_proba_split(sm, Xq, mean=mean, normalize=False))
        top = R == R.max(1, keepdims=True)
        assert np.sum(top.sum(1) > 1) >= 5
        np.testing.assert_array_equal(ens.predict_split(sm, Xq, mean=mean), np.argmax(np.where(top, S, -np.inf), axis=1))
        P = np.asarray(ens.predict_proba_split(sm, Xq, mean=mean))
        if mean == "arithmetic":  # no floor: the exact mean of the tiny posteriors, normalised
            np.testing.assert_allclose(P[low], R[low] / R[low].sum(1, keepdims=True), rtol=1e-6)
        else:  # floored: every class 1e-12, a tie
            np.testing.assert_array_equal(P[low], (S[low] == S[low].max(1, keepdims=True)).astype(np.float32))


def test_one_block_multilabel_predicts_as_fit_at_one_half(data):
    """Tiny scores: link(H) rounds to exactly 1/2; the label is H > 0, as jaxnn.predict's."""
    X, _, Xq = data
    Yind = (X[:, :3] > 0).astype(int)
    sm = ens.fit_split(X, Yind, n_splits=1, norm=None, k=5)
    ref = jaxnn.fit(X, Yind, posterior="link", shrinkage=None, k=5)
    sm = dataclasses.replace(sm, alpha=sm.alpha * 1e-9)
    ref = dataclasses.replace(ref, alpha=ref.alpha * 1e-9)
    np.testing.assert_array_equal(np.asarray(ens.predict_proba_split(sm, Xq)), 0.5)
    pred = jaxnn.predict(ref, Xq)
    assert 0 < pred.sum() < pred.size
    np.testing.assert_array_equal(ens.predict_split(sm, Xq), pred)


def test_generalized_mean_floors_only_two_or_more_entries_of_means_that_need_it():
    # one entry: clipped to [0, 1], not floored (one block's posteriors are its model's)
    for kind in ["arithmetic", "geometric", "harmonic", 0.5, -3.0]:
        assert float(ens.generalized_mean(np.array([1e-30], np.float32), kind)) == np.float32(1e-30)
        assert float(ens.generalized_mean(np.array([0.0]), kind)) == 0.0
    # the arithmetic mean needs no floor; the others keep it (a 0 does not zero them)
    assert float(ens.generalized_mean(np.array([0.0, 0.0]), "arithmetic")) == 0.0
    assert float(ens.generalized_mean(np.array([2e-20, 0.0], np.float32), "arithmetic")) == np.float32(1e-20)
    assert float(ens.generalized_mean(np.array([0.0, 0.0]), "geometric")) == pytest.approx(1e-12, rel=1e-5)
    assert float(ens.generalized_mean(np.array([0.0, 1.0]), -3.0)) == pytest.approx(1e-12 * 2 ** (1 / 3), rel=1e-4)


# ---------------------------------------------------------------- splitting helps


@pytest.mark.slow
def test_more_splits_help_with_independent_blocks():
    # 8 blocks × 4 features, 2 classes, m = 300 train / 600 test, k = 7,
    # norm="l2", geometric mean.  Measured test errors for n_splits = 1, 2, 8:
    # 0.158, 0.147, 0.060 (norm=None: 0.175, 0.165, 0.078; data seeds 1–3
    # give the same picture: 8 splits halve the error).
    X, y = _block_mixture(900)
    Xtr, ytr, Xte, yte = X[:300], y[:300], X[300:], y[300:]
    err = {n: np.mean(ens.predict_split(ens.fit_split(Xtr, ytr, n_splits=n, k=7), Xte) != yte) for n in (1, 2, 8)}
    assert err[1] >= 0.12
    assert err[2] <= err[1]
    assert err[8] <= 0.09 and err[8] <= 0.6 * err[1]


# ---------------------------------------------------------------- bad inputs


def test_bad_inputs(sm3, data):
    X, y, _ = data
    for n in (0, -1, 11):
        with pytest.raises(ValueError, match="n_splits"):
            ens.fit_split(X, y, n_splits=n)
    with pytest.raises(TypeError, match="n_splits"):
        ens.fit_split(X, y, n_splits=2.0)
    with pytest.raises(TypeError, match="n_splits"):
        ens.fit_split(X, y)
    with pytest.raises(ValueError, match="norm"):
        ens.fit_split(X, y, n_splits=2, norm="l3")
    with pytest.raises(ValueError, match="mean"):
        ens.fit_split(X, y, n_splits=2, mean="median")
    with pytest.raises(TypeError, match="neighbors"):
        ens.fit_split(X, y, n_splits=2, neighbors=np.zeros((120, 3), int))
    with pytest.raises(TypeError, match="unexpected"):
        ens.fit_split(X, y, n_splits=2, kk=3)
    with pytest.raises(ValueError, match="k must be"):
        ens.fit_split(X, y, n_splits=2, k=120)
    with pytest.raises(ValueError, match="multiple of m"):
        ens.fit_split(X, y, n_splits=2, chooser="colored", rounds=90)
    with pytest.raises(ValueError, match="unknown chooser"):
        ens.fit_split(X, y, n_splits=2, chooser="fifo")
    with pytest.raises(ValueError, match="blocks"):
        ens.fit_split(X, y, blocks=[[0, 1], [10]])
    with pytest.raises(ValueError, match="blocks"):
        ens.fit_split(X, y, blocks=[[0, 0]])
    with pytest.raises(ValueError, match="n_splits"):
        ens.fit_split(X, y, n_splits=3, blocks=[[0, 1], [2, 3]])
    with pytest.raises(ValueError, match="NaN"):
        ens.fit_split(np.where(np.arange(10) == 2, np.nan, X), y, n_splits=2)
    with pytest.raises(ValueError, match="features"):
        ens.predict_split(sm3, X[:, :9])
    with pytest.raises(ValueError, match="mean"):
        ens.predict_proba_split(sm3, X, mean="mode")
    with pytest.raises(TypeError, match="SplitModel"):
        ens.predict_split(sm3.models[0], X)



@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda X, y, sm: ens.fit_split(X, y, blocks=[[0, 1], [2, 3]], n_splits="2"), TypeError, "n_splits must be an integer"),
        (lambda X, y, sm: ens.fit_split(X, y, blocks=[[0, 1], [2, 3]], n_splits=2.0), TypeError, "n_splits must be an integer"),
        (lambda X, y, sm: ens.fit_split(X, y, n_splits=2, trace="no"), TypeError, "trace must be a bool"),
        (lambda X, y, sm: ens.fit_split(X, y, n_splits=2, trace=1), TypeError, "trace must be a bool"),
        (lambda X, y, sm: ens.predict_proba_split(sm, X, normalize="no"), TypeError, "normalize must be a bool"),
        (lambda X, y, sm: ens.predict_proba_split(sm, X, normalize=0), TypeError, "normalize must be a bool"),
    ],
)
def test_bad_flags(sm3, data, call, exc, match):
    X, y, _ = data
    with pytest.raises(exc, match=match):
        call(X, y, sm3)


@pytest.mark.slow
def test_float64_features_far_from_zero_keep_their_digits_without_a_norm():
    # as jaxnn.fit: with norm=None, features at 10⁸ ± 1 are centred in float64 before the
    # cast to float32 (they all became one point); query blocks are shifted alike
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(240, 4))
    y = (Z[:, 0] + Z[:, 2] > 0).astype(int)
    shift = np.array([1e8, 0.0, -5e7, 2e6])
    near = ens.fit_split(Z[:180], y[:180], n_splits=2, norm=None, k=5)
    far = ens.fit_split(Z[:180] + shift, y[:180], n_splits=2, norm=None, k=5)
    np.testing.assert_array_equal(ens.predict_split(far, Z[180:] + shift), ens.predict_split(near, Z[180:]))
    np.testing.assert_allclose(np.asarray(far.alpha), np.asarray(near.alpha), atol=1e-6)
    assert near.origin is None and far.origin is not None
    assert ens.fit_split(Z[:180] + shift, y[:180], n_splits=2, k=5).origin is None  # a norm: left as it is



def test_split_prediction_under_jit_and_a_mistyped_graph_method_say_what_to_do(data):
    X, y, Xq = data
    sm = ens.fit_split(X, y, n_splits=2, k=5)
    with pytest.raises(TypeError, match="outside jax.jit"):  # was JAX's TracerArrayConversionError
        jax.jit(ens.predict_proba_split)(sm, Xq)
    with pytest.raises(ValueError, match="unknown graph_method 'exakt' for fit_split.*did you mean 'exact'"):
        ens.fit_split(X, y, n_splits=2, k=5, graph_method="exakt")


@pytest.mark.parametrize("n_splits", [1, 3])
@pytest.mark.slow
def test_split_batches_of_other_sizes_share_the_compiled_prediction(n_splits, compilations):
    """Split-model queries are padded to shared_sizes.query_rows like jaxnn.predict's:
    batches of 1 … 128 rows compile nothing (the search and scoring reused,
    cut to n rows on the host), and each row gets what it gets in the full
    batch."""
    X, y = _blobs(m=200, C=3, seed=4)
    from jaxnn._src import ensemble as ens_src
    from jaxnn._src import prediction as predict_mod

    sm = ens.fit_split(X, y, n_splits=n_splits, k=5)
    Xq = X[:128] + 0.1
    scoring = predict_mod.leveraged_scores if n_splits == 1 else ens_src._scores_blocks_padded  # one block: jaxnn's
    watched = (scoring, ens_src._combine, ens_src._jitted_link_posterior, ens_src._split_labels)
    with compilations(*watched):  # compiled anew, for the full batch
        p_all = np.asarray(ens.predict_proba_split(sm, Xq))
        H_all = np.asarray(ens.decision_function_split(sm, Xq))
        post_all = np.asarray(ens.block_posteriors(sm, Xq))
        labels_all = ens.predict_split(sm, Xq)
    with compilations() as compiled:
        _batches_of_other_sizes(sm, Xq, p_all, H_all, post_all, labels_all)
    assert compiled.of(*watched) == []
    assert compiled == [], compiled  # nothing: no search, scoring, combination or slice


def _batches_of_other_sizes(sm, Xq, p_all, H_all, post_all, labels_all):
    for n in (1, 9, 127):
        np.testing.assert_allclose(np.asarray(ens.predict_proba_split(sm, Xq[:n])), p_all[:n], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(np.asarray(ens.decision_function_split(sm, Xq[:n])), H_all[:, :n], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.asarray(ens.block_posteriors(sm, Xq[:n])), post_all[:, :n], rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(ens.predict_split(sm, Xq[:n]), labels_all[:n])
        assert ens.split_features(sm, Xq[:n]).shape[1] == n
