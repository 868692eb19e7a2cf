"""ULS (paper 004, Algorithm 1): jaxnn.uls and its weak kinds.

The maths is checked against closed forms and float64 NumPy: paper 001
Table 1's steps, eq. 81 (zero edge after a step), eq. 74 (each step's drop
of the risk is the Bregman divergence D_ψ̃(w_{j+1} ‖ w_j), ψ̃ written in w
alone for each loss), ULS on the k-NN hypotheses = UNN, and the stored rules
scoring as decision_function does.
"""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxnn
from jaxnn._src import shared_sizes
from jaxnn._src import uls as uls_module
from jaxnn._src import weak as weak_module
from jaxnn._src.losses import get as get_loss

LN2 = np.log(2.0)


# ------------------------------------------------------------------ data
@pytest.fixture(scope="module")
def data():
    """120 points, 4 features (one binary, one constant), 3 classes."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    X[:, 2] = rng.integers(0, 2, 120)
    X[:, 3] = 1.5
    y = (X[:, 0] + 0.7 * X[:, 1] + 0.8 * X[:, 2] > 0.4).astype(int) + (X[:, 1] > 1.0)
    return X, y


# ------------------------------------------------------------------ NumPy references
def numpy_psi(name, x):
    x = np.asarray(x, np.float64)
    return {"exponential": lambda: np.exp(-x), "logistic": lambda: np.logaddexp(0.0, -x) / LN2,
            "matsushita": lambda: np.sqrt(1 + x * x) - x, "squared": lambda: (1 - x) ** 2}[name]()


def numpy_weight(name, x):
    x = np.asarray(x, np.float64)
    return {"exponential": lambda: np.exp(-x), "logistic": lambda: 1.0 / (1.0 + np.exp(x)) / LN2,
            "matsushita": lambda: 1 - x / np.sqrt(1 + x * x), "squared": lambda: 2 * (1 - x)}[name]()


def psi_tilde(name, w):
    """ψ̃(w) = ψ*(−w) (eq. 67) as a function of the weight w alone."""
    w = np.asarray(w, np.float64)
    if name == "exponential":
        return w * np.log(w) - w
    if name == "logistic":  # φ(p)/b with p = w ln 2 (entropy φ, b = ln 2)
        p = w * LN2
        return (p * np.log(p) + (1 - p) * np.log1p(-p)) / LN2
    if name == "matsushita":  # x = u/√(1 − u²), u = 1 − w: ψ̃ = −x w − ψ(x) = −√(1 − u²)
        u = 1 - w
        return -np.sqrt(1 - u * u)
    return w * w / 4 - w  # squared


def psi_tilde_slope(name, w):
    """ψ̃′(w) = −x(w), the margin whose weight is w."""
    w = np.asarray(w, np.float64)
    if name == "exponential":
        return np.log(w)
    if name == "logistic":
        p = w * LN2
        return np.log(p / (1 - p))
    if name == "matsushita":
        u = 1 - w
        return -u / np.sqrt(1 - u * u)
    return -(1 - w / 2)


def bregman(name, w_new, w_old):
    return psi_tilde(name, w_new) - psi_tilde(name, w_old) - psi_tilde_slope(name, w_old) * (w_new - w_old)


def rule_values_numpy(X, feature, threshold, greater):
    """h (n, T, C) ±1 of the stored rules, literal by literal."""
    n = X.shape[0]
    T, C, L = feature.shape
    h = np.ones((n, T, C))
    for t in range(T):
        for c in range(C):
            holds = np.ones(n, bool)
            for q in range(L):
                f = feature[t, c, q]
                if f < 0:
                    continue
                x = X[:, f]
                holds &= (x > threshold[t, c, q]) if greater[t, c, q] else (x <= threshold[t, c, q])
            h[:, t, c] = np.where(holds, 1.0, -1.0)
    return h


def encoded(y):
    classes = np.unique(y)
    return np.where(y[:, None] == classes[None], 1.0, -1.0)


# ------------------------------------------------------------------ eq. 70 closed forms
def test_exponential_step_is_half_log_of_the_weight_ratio():
    """Paper 001 Table 1: with h ∈ {−1, 0, 1}, δ = ½ log(W⁺/W⁻)."""
    rng = np.random.default_rng(1)
    e = rng.normal(size=(50, 3))
    a = rng.integers(-1, 2, size=(50, 3)).astype(float)
    s = rng.uniform(0.5, 2.0, size=(50, 1))
    with jax.enable_x64(True):
        d = np.asarray(uls_module.line_step(get_loss("exponential"), jnp.asarray(e), jnp.asarray(a), jnp.asarray(s)))
    w = s * np.exp(-e)
    closed = 0.5 * np.log(np.sum(np.where(a > 0, w, 0), 0) / np.sum(np.where(a < 0, w, 0), 0))
    np.testing.assert_allclose(d, closed, rtol=0, atol=1e-11)


def test_squared_step_closed_form_and_its_box():
    """Squared loss: (W⁺ − W⁻)/(2‖m_t‖₁) where it keeps every margin in [−1, 1];
    clipped to that box otherwise."""
    rng = np.random.default_rng(2)
    e = rng.uniform(-0.2, 0.2, size=(40, 2))
    a = rng.integers(-1, 2, size=(40, 2)).astype(float)
    s = np.ones((40, 1))
    with jax.enable_x64(True):
        d = np.asarray(uls_module.line_step(get_loss("squared"), jnp.asarray(e), jnp.asarray(a), jnp.asarray(s)))
        w = 2 * (1 - e)
        closed = (np.sum(np.where(a > 0, w, 0), 0) - np.sum(np.where(a < 0, w, 0), 0)) / (2 * np.abs(a).sum(0))
        np.testing.assert_allclose(d, closed, atol=1e-12)
        # every example agreeing: unclipped δ would take margins past 1; the box stops at 1
        a1 = np.abs(a) + 1.0
        d1 = np.asarray(uls_module.line_step(get_loss("squared"), jnp.asarray(e), jnp.asarray(a1), jnp.asarray(s)))
        new = e + a1 * d1
        assert np.all(np.abs(new) <= 1 + 1e-12) and np.allclose(new.max(0), 1.0)


@pytest.mark.parametrize("name", ["logistic", "matsushita"])
def test_newton_step_zeroes_the_edge_with_real_hypotheses(name):
    """Eq. 70 / 81 for real-valued h: Σ s a w(e + δa) = 0 in float64 NumPy."""
    rng = np.random.default_rng(3)
    e = rng.normal(size=(60, 2))
    a = rng.normal(size=(60, 2))
    s = rng.uniform(0.2, 3.0, size=(60, 1))
    with jax.enable_x64(True):
        d = np.asarray(uls_module.line_step(get_loss(name), jnp.asarray(e), jnp.asarray(a), jnp.asarray(s)))
    edge = np.sum(s * a * numpy_weight(name, e + a * d), 0)
    assert np.max(np.abs(edge)) < 1e-10 * np.sum(s * np.abs(a))


# ------------------------------------------------------------------ eqs. 74 and 81 on whole runs
@pytest.fixture(scope="module")
def rule_runs(data):
    X, y = data
    runs = {}
    with jax.enable_x64(True):
        for name in ("exponential", "logistic", "matsushita"):
            runs[name] = jaxnn.uls(X, y, weak="rules", loss=name, rounds=6, max_literals=2)
    return runs


@pytest.mark.parametrize("name", ["exponential", "logistic", "matsushita"])
def test_each_step_drops_the_risk_by_the_bregman_divergence(data, rule_runs, name):
    """Eq. 74: risk_j − risk_{j+1} = (1/m) Σ_i D_ψ̃(w_{j+1,i} ‖ w_{j,i}); eq. 81:
    after step j its rule has zero edge — all from the stored rules in NumPy."""
    X, y = data
    model = rule_runs[name]
    Y = encoded(y)
    h = rule_values_numpy(X, model.rule_feature, model.rule_threshold, model.rule_greater)  # (m, T, C)
    alpha = np.asarray(model.rule_alpha)
    margins = Y[:, None] * np.cumsum(h * alpha[None], axis=1)  # after each step
    margins = np.concatenate([np.zeros_like(margins[:, :1]), margins], axis=1)
    risk = np.mean(numpy_psi(name, margins), axis=0)  # (T + 1, C)
    np.testing.assert_allclose(np.asarray(model.risk), risk[1:], rtol=1e-9)
    w = numpy_weight(name, margins)
    drops = risk[:-1] - risk[1:]
    divergence = np.mean(bregman(name, w[:, 1:], w[:, :-1]), axis=0)
    # eqs. 74 and 81 hold where eq. 70 has a root: not for a rule no example disagrees with (δ = ±50)
    finite = np.abs(alpha) < uls_module.MAX_DELTA
    assert finite.mean() > 0.5
    np.testing.assert_allclose(drops[finite], divergence[finite], rtol=1e-8, atol=1e-12)
    assert np.all(drops > 0)
    edges = np.sum(w[:, 1:] * Y[:, None] * h, axis=0) / np.sum(w[:, 1:], axis=0)
    assert np.max(np.abs(edges[finite])) < 1e-10


def test_linear_kind_zero_edge_and_standardised_features(data):
    """"linear": each step zeroes its coordinate's edge (float64); the
    coefficients score standardised features (constant ones read 0) and a bias."""
    X, y = data
    with jax.enable_x64(True):
        model = jaxnn.uls(X, y, weak="linear", loss="logistic", rounds=1)
    Y = encoded(y)
    std = X.std(0)
    Z = np.concatenate([np.where(std > 0, (X - X.mean(0)) / np.where(std > 0, std, 1), 0), np.ones((120, 1))], 1)
    coef = np.asarray(model.linear_coef)
    assert np.all(np.count_nonzero(coef, axis=0) == 1)  # one coordinate per class
    H = Z @ coef
    w = numpy_weight("logistic", Y * H)
    edge = np.sum(w * Y * Z[:, np.argmax(np.abs(coef), 0)], 0)
    assert np.max(np.abs(edge)) < 1e-10
    # the coordinate chosen had the largest |edge| at H = 0
    start = np.abs(Z.T @ Y)
    np.testing.assert_array_equal(np.argmax(np.abs(coef), 0), np.argmax(start, 0))
    np.testing.assert_allclose(np.asarray(jaxnn.decision_function(model, X)), H, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ corrective
@pytest.mark.parametrize("weak", ["rules", "linear"])
def test_corrective_zeroes_every_chosen_edge_and_lowers_the_risk(data, weak):
    X, y = data
    Y = encoded(y)
    with jax.enable_x64(True):
        plain = jaxnn.uls(X, y, weak=weak, loss="logistic", rounds=4)
        fully = jaxnn.uls(X, y, weak=weak, loss="logistic", rounds=4, corrective=True)
        H = np.asarray(jaxnn.decision_function(fully, X), np.float64)
    w = numpy_weight("logistic", Y * H)
    if weak == "rules":
        h = rule_values_numpy(X, fully.rule_feature, fully.rule_threshold, fully.rule_greater)
        H = np.einsum("mtc,tc->mc", h, np.asarray(fully.rule_alpha))
        w = numpy_weight("logistic", Y * H)
        edges = np.einsum("mc,mtc->tc", w * Y, h)
    else:
        std = X.std(0)
        Z = np.concatenate([np.where(std > 0, (X - X.mean(0)) / np.where(std > 0, std, 1), 0), np.ones((120, 1))], 1)
        H = Z @ np.asarray(fully.linear_coef)
        w = numpy_weight("logistic", Y * H)
        edges = np.where(np.asarray(fully.linear_coef) != 0, Z.T @ (w * Y), 0.0)
    assert np.max(np.abs(edges)) < 1e-8 * 120
    risk_plain, risk_fully = np.asarray(plain.risk), np.asarray(fully.risk)
    # step 1: the same step; step 2: the same new hypothesis, re-solved with the first
    np.testing.assert_allclose(risk_fully[0], risk_plain[0], rtol=1e-10)
    assert np.all(risk_fully[1] <= risk_plain[1] + 1e-12)
    # the last step's α minimise the risk over the chosen hypotheses: no perturbation lowers it
    rng = np.random.default_rng(4)
    coef = np.asarray(fully.rule_alpha if weak == "rules" else fully.linear_coef)
    basis = h if weak == "rules" else np.broadcast_to(Z[:, :, None], Z.shape + (3,))
    for _ in range(5):
        moved = coef + 1e-3 * rng.normal(size=coef.shape) * (coef != 0)
        H2 = np.einsum("mtc,tc->mc", basis, moved)
        assert np.all(np.mean(numpy_psi("logistic", Y * H2), 0) >= np.mean(numpy_psi("logistic", Y * H), 0) - 1e-12)


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_corrective_step_takes_no_step_where_the_risk_is_flat(loss):
    """A hypothesis and its complement (columns a and −a): the risk depends on
    δ₁ − δ₂ alone, and the least-norm step is (δ/2, −δ/2) with δ the one
    hypothesis's step (the squared loss's within its box) — none along
    (1, 1), whatever the round-off."""
    rng = np.random.default_rng(5)
    a = np.where(rng.random(40) < 0.7, 1.0, -1.0).astype(np.float32)
    e = (0.3 * rng.normal(size=40)).astype(np.float32)
    s = rng.uniform(0.5, 2.0, 40).astype(np.float32)
    A = np.stack([a, -a, np.zeros(40, np.float32)], 1)
    mask = jnp.array([True, True, False])
    step = np.asarray(jax.jit(uls_module.block_step, static_argnums=0)(get_loss(loss), e, A, s, mask))
    one = np.asarray(uls_module.line_step(get_loss(loss), e[:, None], a[:, None], s[:, None]))[0]
    # float32 risks tell minimisers apart to about √eps: the line search's resolution
    np.testing.assert_allclose(step, [one / 2, -one / 2, 0.0], rtol=1e-3, atol=1e-6)


def test_corrective_refuses_knn_and_a_per_step_bag(data):
    X, y = data
    with pytest.raises(ValueError, match="corrective=True is not available for weak='knn'"):
        jaxnn.uls(X, y, weak="knn", corrective=True)
    with pytest.raises(ValueError, match="corrective=True needs one loss"):
        jaxnn.uls(X, y, loss=["logistic", "matsushita"], loss_choice="risk", corrective=True, rounds=2)


# ------------------------------------------------------------------ knn = UNN
@pytest.mark.parametrize("name", ["logistic", "exponential", "matsushita"])
def test_knn_kind_is_unn(data, name):
    """ULS on paper 001's hypotheses (one pass, index order) is UNN without
    smoothing: α equal in float64 on every example some example has as a
    neighbour (fit fills the others afterwards, outside eq. 70)."""
    X, y = data
    with jax.enable_x64(True):
        nb = jaxnn.knn_graph(X, 5)
        model = jaxnn.uls(X, y, weak="knn", k=5, loss=name)
        unn = jaxnn.fit(X, y, k=5, algorithm=jaxnn.unn(smoothing=False), loss=name, shrinkage=None,
                        posterior="link", neighbors=nb, chooser="lazy")
    reached = np.isin(np.arange(X.shape[0]), np.asarray(nb.indices))
    gap = np.abs(np.asarray(model.knn_alpha) - np.asarray(unn.alpha))[reached]
    assert gap.max() <= 1e-9
    assert np.all(np.asarray(model.knn_alpha)[~reached] == 0)
    # scores: H_c(x) = Σ_{j∈NN_k(x)} α_jc y_jc
    Xq = X[:7] + 0.05
    nq = np.asarray(jaxnn.knn_query(X, Xq, 5).indices)
    H = np.sum((np.asarray(model.knn_alpha) * encoded(y))[nq], axis=1)
    np.testing.assert_allclose(np.asarray(jaxnn.decision_function(model, Xq)), H, rtol=1e-5, atol=1e-4)


# ------------------------------------------------------------------ rules: the model is what it says
def test_stored_rules_score_as_decision_function(data):
    X, y = data
    model = jaxnn.uls(X, y, weak="rules", loss="logistic", rounds=10, max_literals=3)
    T, C, L = model.rule_feature.shape
    assert (T, C, L) == (10, 3, 3) and model.rule_feature.max() < X.shape[1]
    h = rule_values_numpy(X.astype(np.float32), model.rule_feature, model.rule_threshold, model.rule_greater)
    H = np.einsum("mtc,tc->mc", h, np.asarray(model.rule_alpha, np.float64))
    np.testing.assert_allclose(np.asarray(jaxnn.decision_function(model, X)), H, rtol=1e-5, atol=1e-4)
    assert not np.any(model.rule_feature == 3)  # the constant feature has no literal
    assert np.mean(jaxnn.predict(model, X) == y) > 0.85
    proba = np.asarray(jaxnn.predict_proba(model, X))
    assert proba.shape == (120, 3)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)


def test_rule_growth_takes_the_literal_of_largest_edge():
    """The first literal of a rule is the one of largest |2 Σ_{holds} v − Σ v|
    (the first of those within float32 round-off of it: a literal and its
    complement tie exactly), checked literal by literal in NumPy."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(50, 3))
    v = rng.normal(size=(50, 2))
    feature, threshold, greater = weak_module.literals(X)
    Lmat = np.asarray(weak_module.literal_matrix(jnp.asarray(X, jnp.float32), jnp.asarray(feature),
                                                 jnp.asarray(threshold, jnp.float32), jnp.asarray(greater)))
    lits, h = weak_module.grow_rules(jnp.asarray(Lmat), jnp.asarray(v, jnp.float32), 1)
    edges = np.abs(2 * Lmat.T @ v - v.sum(0))
    first_best = np.argmax(edges >= edges.max(0) * (1 - 1e-5), axis=0)
    np.testing.assert_array_equal(np.asarray(lits)[:, 0], first_best)
    np.testing.assert_array_equal(np.asarray(h), 2 * Lmat[:, first_best] - 1)


# ------------------------------------------------------------------ multilabel, kinds list, sample weights
def test_multilabel_and_a_list_of_kinds(data):
    X, _ = data
    Yml = np.stack([X[:, 0] > 0, X[:, 1] + X[:, 2] > 0.5], axis=1).astype(int)
    model = jaxnn.uls(X, Yml, weak=["linear", "rules"], rounds=5, loss="matsushita")
    assert model.multilabel and model.weak == ("linear", "rules") and model.rounds == (5, 5)
    assert model.risk.shape == (10, 2) and np.all(np.diff(model.risk, axis=0) <= 1e-6)
    pred = np.asarray(jaxnn.predict(model, X))
    assert pred.shape == (120, 2) and np.mean(pred == Yml) > 0.85
    H = np.asarray(jaxnn.decision_function(model, X))
    parts = (np.asarray(uls_module._linear_scores(jnp.asarray(X, jnp.float32), jnp.asarray(model.linear_mean),
                                                  jnp.asarray(model.linear_scale), jnp.asarray(model.linear_coef)))
             + np.einsum("mtc,tc->mc", rule_values_numpy(X.astype(np.float32), model.rule_feature,
                                                         model.rule_threshold, model.rule_greater),
                         np.asarray(model.rule_alpha)))
    np.testing.assert_allclose(H, parts, rtol=1e-5, atol=1e-4)


def test_sample_weights_weigh_each_term_of_the_risk(data):
    """The risk trace is (1/m) Σ_i s_i ψ(y_i H(o_i)) with the weights scaled to
    mean 1 (NumPy, from the stored rules); uniform weights change nothing."""
    X, y = data
    weight = np.random.default_rng(6).integers(1, 4, X.shape[0]).astype(float)
    with jax.enable_x64(True):
        weighted = jaxnn.uls(X, y, rounds=4, sample_weight=weight, loss="logistic")
        uniform = jaxnn.uls(X, y, rounds=4, sample_weight=np.full(X.shape[0], 3.0), loss="logistic")
        plain = jaxnn.uls(X, y, rounds=4, loss="logistic")
    s = weight * X.shape[0] / weight.sum()
    h = rule_values_numpy(X, weighted.rule_feature, weighted.rule_threshold, weighted.rule_greater)
    H = np.cumsum(h * np.asarray(weighted.rule_alpha)[None], axis=1)  # (m, T, C)
    risk = np.mean(s[:, None, None] * numpy_psi("logistic", encoded(y)[:, None] * H), axis=0)
    np.testing.assert_allclose(np.asarray(weighted.risk), risk, rtol=1e-9)
    np.testing.assert_array_equal(uniform.rule_feature, plain.rule_feature)
    np.testing.assert_allclose(np.asarray(uniform.rule_alpha), np.asarray(plain.rule_alpha), rtol=1e-12)


def test_integer_sample_weights_equal_repeated_examples():
    """s_i = 2 weighs example i as two copies of it (binary features: the
    same literals either way)."""
    rng = np.random.default_rng(6)
    X = rng.integers(0, 2, size=(40, 5)).astype(float)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 2, 40) > 1).astype(int)
    weight = rng.integers(1, 3, 40)
    with jax.enable_x64(True):
        weighted = jaxnn.uls(X, y, rounds=6, sample_weight=weight)
        repeated = jaxnn.uls(np.repeat(X, weight, 0), np.repeat(y, weight), rounds=6)
    np.testing.assert_array_equal(weighted.rule_feature, repeated.rule_feature)
    np.testing.assert_allclose(np.asarray(weighted.rule_alpha), np.asarray(repeated.rule_alpha), rtol=1e-10)


# ------------------------------------------------------------------ loss bags
def test_loss_bag_risk_and_edge_choices(data):
    X, y = data
    bag = ["logistic", "matsushita", "exponential"]
    with jax.enable_x64(True):
        singles = [jaxnn.uls(X, y, rounds=1, loss=name) for name in bag]
        by_risk = jaxnn.uls(X, y, rounds=1, loss=bag, loss_choice="risk")
        by_edge = jaxnn.uls(X, y, rounds=3, loss=bag, loss_choice="edge")
        one = jaxnn.uls(X, y, rounds=3, loss=["matsushita"], loss_choice="edge")
        alone = jaxnn.uls(X, y, rounds=3, loss="matsushita")
    first = np.stack([np.asarray(m.risk)[0] for m in singles])  # (L, C)
    np.testing.assert_array_equal(by_risk.loss_index[0], np.argmin(first, axis=0))
    np.testing.assert_allclose(np.asarray(by_risk.risk)[0], first.min(0), rtol=1e-10)
    assert by_risk.losses == tuple(bag) and by_risk.loss.name == "logistic"
    assert by_edge.loss_index.shape == (3, 3) and set(np.unique(by_edge.loss_index)) <= {0, 1, 2}
    np.testing.assert_allclose(np.asarray(one.rule_alpha), np.asarray(alone.rule_alpha), rtol=1e-12)


def test_loss_bag_edge_choice_takes_the_largest_normalised_edge(data):
    """Step 2 of an "edge" bag: per class, the loss whose grown rule has the
    largest |Σ w y h| / Σ w at the margins after step 1 (NumPy weights)."""
    X, y = data
    bag = ["logistic", "matsushita", "exponential"]
    with jax.enable_x64(True):
        model = jaxnn.uls(X, y, rounds=2, loss=bag, loss_choice="edge")
        Y = encoded(y)
        h = rule_values_numpy(X, model.rule_feature, model.rule_threshold, model.rule_greater)
        margins = Y * h[:, 0] * np.asarray(model.rule_alpha)[0]
        feature, threshold, greater = weak_module.literals(X)
        Lmat = weak_module.literal_matrix(jnp.asarray(X), jnp.asarray(feature), jnp.asarray(threshold),
                                          jnp.asarray(greater))
        edges = []
        for name in bag:
            w = numpy_weight(name, margins)
            _, rule = weak_module.grow_rules(Lmat, jnp.asarray(w * Y), 2)
            edges.append(np.abs(np.sum(w * Y * np.asarray(rule), 0)) / np.sum(w, 0))
    np.testing.assert_array_equal(model.loss_index[1], np.argmax(np.stack(edges), 0))


def test_float32_steps_zero_the_edge_to_round_off(data):
    X, y = data
    model = jaxnn.uls(X.astype(np.float32), y, rounds=3, loss="logistic")
    Y = encoded(y)
    h = rule_values_numpy(X.astype(np.float32), model.rule_feature, model.rule_threshold, model.rule_greater)
    H = np.cumsum(h * np.asarray(model.rule_alpha, np.float64)[None], axis=1)
    w = numpy_weight("logistic", Y[:, None] * H)
    edges = np.sum(w * Y[:, None] * h, 0) / np.sum(w, 0)
    # where a class was separated (δ = ±50), float32 weights underflow to 0 from there on
    finite = np.cumsum(np.abs(np.asarray(model.rule_alpha)) >= uls_module.MAX_DELTA, axis=0) == 0
    assert finite.mean() > 0.5 and np.max(np.abs(edges[finite])) < 1e-5


def test_loss_bag_fold_choice(data):
    X, y = data
    model = jaxnn.uls(X, y, rounds=5, loss=["squared", "logistic"], loss_choice="fold")
    assert model.loss.name in ("squared", "logistic") and model.loss_choice == "fold"
    assert np.all(model.loss_index == ("squared", "logistic").index(model.loss.name))
    H = np.asarray(jaxnn.decision_function(model, X))
    if model.loss.name == "squared":
        assert np.all(np.abs(np.asarray(model.risk)) < 1.0 + 1e-6)
    assert H.shape == (120, 3)


@pytest.mark.parametrize("corrective", [False, True])
def test_squared_loss_keeps_training_scores_in_the_unit_box(data, corrective):
    X, y = data
    weak = "linear" if corrective else ["linear", "rules"]
    model = jaxnn.uls(X, y, weak=weak, rounds=8, loss="squared", corrective=corrective)
    H = np.asarray(jaxnn.decision_function(model, X))
    assert np.max(np.abs(H)) <= 1 + 1e-5
    risk = np.asarray(model.risk)
    np.testing.assert_allclose(risk[-1], np.mean((1 - encoded(y) * H) ** 2, 0), rtol=1e-4)
    assert np.all(np.diff(risk, axis=0) <= 1e-6)


# ------------------------------------------------------------------ rounds=None
def test_rounds_none_chooses_a_count_that_beats_chance():
    X, y = jaxnn.datasets.load("bupa")
    Xtr, ytr, Xte, yte = X[::2], y[::2], X[1::2], y[1::2]
    model = jaxnn.uls(Xtr, ytr, weak="rules", max_literals=2)
    assert 1 <= model.rounds[0] <= uls_module.ROUNDS_CAP
    majority = max(np.mean(yte == c) for c in np.unique(y))
    assert np.mean(np.asarray(jaxnn.predict(model, Xte)) == yte) > majority


def test_fold_with_rounds_none_chooses_a_loss_and_a_count(data):
    X, y = data
    model = jaxnn.uls(X, y, weak="linear", loss=["logistic", "matsushita"], loss_choice="fold")
    assert model.loss.name in ("logistic", "matsushita") and 1 <= model.rounds[0] <= uls_module.ROUNDS_CAP
    assert model.risk.shape == (model.rounds[0], 3)


def test_rounds_none_knn_is_one_pass(data):
    X, y = data
    model = jaxnn.uls(X, y, weak="knn", k=5)
    assert model.rounds == (120,) and model.risk.shape == (120, 3)


# ------------------------------------------------------------------ compilation
def test_a_second_fit_of_the_same_shapes_compiles_nothing(data, compilations):
    X, y = data
    watched = (uls_module._boost_features,)
    with compilations(*watched):
        jaxnn.uls(X, y, rounds=3)
    X2 = 1.1 * X + np.random.default_rng(7).normal(scale=0.05, size=X.shape)
    with compilations() as compiled:  # other data of the same shape
        jaxnn.uls(X2, y[::-1], rounds=3)
    assert compiled.of(*watched) == []


def test_nearby_sizes_share_the_compiled_boosting(data, compilations):
    """Training sets padded to one shared size (120 and 100 rows: 128) run one
    compiled boosting of the linear and rules kinds."""
    X, y = data
    watched = (uls_module._boost_features,)
    with compilations(*watched):
        jaxnn.uls(X, y, weak=["linear", "rules"], rounds=3)
    with compilations() as compiled:
        jaxnn.uls(X[:100], y[:100], weak=["linear", "rules"], rounds=3)
    assert compiled.of(*watched) == []


@pytest.mark.parametrize("weak, corrective", [
    (["linear", "rules"], False),
    pytest.param(["knn", "linear"], False, marks=pytest.mark.slow),
    pytest.param("linear", True, marks=pytest.mark.slow),
    pytest.param("rules", True, marks=pytest.mark.slow),
])
def test_padded_rows_change_no_step(data, monkeypatch, weak, corrective):
    """The rows padded to a shared size (s = 0, Y = 0) change no choice and,
    to float32 round-off, no coefficient, risk or score: the fit at 120 rows
    padded to 128 against the same fit with padding off (every set "large")."""
    X, y = data
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    fits = []
    for limit in (None, 0):
        if limit is not None:
            monkeypatch.setattr(shared_sizes, "SHARED_MAX_ROWS", limit)
        fits.append(jaxnn.uls(X, y, weak=weak, rounds=4, k=5, corrective=corrective, sample_weight=w))
    padded, plain = fits
    np.testing.assert_array_equal(np.asarray(padded.loss_index), np.asarray(plain.loss_index))
    np.testing.assert_allclose(np.asarray(padded.risk), np.asarray(plain.risk), rtol=1e-5, atol=1e-7)
    for part in ("linear_coef", "rule_alpha", "knn_alpha"):
        a, b = getattr(padded, part), getattr(plain, part)
        assert (a is None) == (b is None), part
        if a is not None:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6, err_msg=part)
    if padded.rule_feature is not None:
        np.testing.assert_array_equal(np.asarray(padded.rule_feature), np.asarray(plain.rule_feature))
    np.testing.assert_allclose(np.asarray(jaxnn.decision_function(padded, X)),
                               np.asarray(jaxnn.decision_function(plain, X)), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize("kwargs, error, message", [
    (dict(max_literals=0), ValueError, "max_literals must be >= 1, got 0"),
    (dict(weak="rule"), ValueError, "unknown weak 'rule'.*did you mean 'rules'"),
    (dict(weak=["rules", "rules"]), ValueError, "weak lists a kind twice"),
    (dict(weak=[]), TypeError, "weak must be"),
    (dict(rounds=0), ValueError, "rounds must be >= 1, got 0"),
    (dict(loss="logistik"), ValueError, "loss: unknown loss 'logistik'"),
    (dict(loss=[]), ValueError, "loss must be a loss or a non-empty list"),
    (dict(loss=["logistic", "squared"]), ValueError, "loss_choice must be 'risk', 'edge' or 'fold'"),
    (dict(loss_choice="best"), ValueError, "loss_choice must be"),
    (dict(corrective="yes"), TypeError, "corrective must be a bool"),
    (dict(weak="knn", k=120), ValueError, "k must be < the number of training points"),
    (dict(seed=-1), ValueError, "seed must be >= 0"),
    (dict(verbose=1), TypeError, "verbose must be a bool"),
])
def test_bad_arguments_name_themselves(data, kwargs, error, message):
    X, y = data
    with pytest.raises(error, match=message):
        jaxnn.uls(X, y, **kwargs)


def test_verbose_reports_the_stages(data, caplog):
    X, y = data
    with caplog.at_level(logging.INFO, logger="jaxnn"):
        jaxnn.uls(X, y, rounds=2, verbose=True)
    assert any("uls: boosting" in r.getMessage() for r in caplog.records)


def test_nan_points_are_refused(data):
    X, y = data
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="X"):
        jaxnn.uls(Xn, y, rounds=2)
