"""OLS (paper 004 Algorithm 2): eq. 93's p-norm update against a float64
NumPy re-implementation, plain SGD at p = q = 2, eq. 98's rate, Lemma 9
(eq. 94), eq. 100, the three-point identity eq. 101 and Theorem 3 on
synthetic streams for q ∈ {2, 1.5, 1.2}; the stream API (predictions at any
point, batch-size independence, no retrace within a padded size) and its
errors."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import jaxnn
from jaxnn._src import ols as ols_src

# ----------------------------------------------------------------------------
# float64 NumPy references: the losses' closed forms (paper 004 eqs 26, 28, 29)
# and the update (eq. 93)
# ----------------------------------------------------------------------------


def _xlogx(p):
    return np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)


NP_LOSSES = {
    # name: (φ, φ', ∇φ⁻¹, λ = min φ'')
    "logistic": (lambda p: _xlogx(p) + _xlogx(1 - p), lambda p: np.log(p / (1 - p)),
                 lambda h: 1.0 / (1.0 + np.exp(-h)), 4.0),
    "matsushita": (lambda p: -np.sqrt(p * (1 - p)), lambda p: (2 * p - 1) / (2 * np.sqrt(p * (1 - p))),
                   lambda h: 0.5 * (1 + h / np.sqrt(1 + h * h)), 2.0),
    "squared": (lambda p: p * p - p, lambda p: 2 * p - 1, lambda h: np.clip(0.5 * (1 + h), 0.0, 1.0), 2.0),
}


def np_grad_psi(x, r):
    """∇ψ_r(x) = sign(x)|x|^{r−1}/‖x‖_r^{r−2} per column (Table 1), float64."""
    a = np.abs(x)
    norm = np.sum(a ** r, axis=0, keepdims=True) ** (1.0 / r)
    safe = np.where(norm > 0, norm, 1.0)
    return np.where(norm > 0, np.sign(x) * a ** (r - 1) / safe ** (r - 2), 0.0)


def half_sq_norm(x, r):
    return 0.5 * np.sum(np.abs(x) ** r) ** (2.0 / r)


def bregman_q(x, x2, q):
    """D_ψq(x ‖ x') = ½‖x‖_q² − ½‖x'‖_q² − (x − x')·∇ψ_q(x') (Table 1)."""
    return half_sq_norm(x, q) - half_sq_norm(x2, q) - float(np.sum((x - x2) * np_grad_psi(x2, q)))


def np_ols(X, Y, p, link, lam, eta=None):
    """Eq. 93 in float64: o_t = (x_t, 1), θ_t = θ_{t−1} − η_t (∇φ⁻¹(w_{t−1}·o_t) − y_t) o_t,
    w_t = ∇ψ_p(θ_t), η_t = eta or λ/((p − 1) max_{s≤t} ‖o_s‖_p²).  Returns the
    per-step records (o, y, w_{t−1}, w_t, θ_t, η_t)."""
    O = np.hstack([X, np.ones((X.shape[0], 1))]).astype(np.float64)
    theta = np.zeros((O.shape[1], Y.shape[1]))
    w = theta.copy()
    lam_p = 0.0
    steps = []
    for o, y in zip(O, Y.astype(np.float64)):
        lam_p = max(lam_p, float(np.sum(np.abs(o) ** p) ** (1 / p)))
        rate = eta if eta is not None else lam / ((p - 1) * lam_p ** 2)
        g = link(o @ w) - y
        theta = theta - rate * np.outer(o, g)
        w_new = np_grad_psi(theta, p)
        steps.append((o, y, w, w_new, theta, rate))
        w = w_new
    return steps


def _stream(T, d, seed, scale=1.0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, d)) * scale
    R = rng.normal(size=(d, classes))
    y = np.argmax(X @ R + rng.gumbel(size=(T, classes)), axis=1)
    return X.astype(np.float32), y


QS = [2.0, 1.5, 1.2]


@pytest.fixture(scope="module")
def stream():
    return _stream(240, 5, 0)


# ----------------------------------------------------------------------------
# the update
# ----------------------------------------------------------------------------


def test_p2_is_plain_sgd_on_the_phi_loss(stream):
    """q = p = 2: eq. 93 is w ← w − η(σ(w·o) − y)o, SGD on the logistic φ-loss
    (hand-written, float64), at a fixed η and at eq. 98's growing-λ_p rate."""
    X, y = stream
    for eta in (0.05, None):
        w = np.zeros(X.shape[1] + 1)
        lam_p = 0.0
        for x, t in zip(X.astype(np.float64), y):
            o = np.append(x, 1.0)
            lam_p = max(lam_p, np.linalg.norm(o))
            rate = eta if eta is not None else 4.0 / lam_p ** 2
            w -= rate * (1.0 / (1.0 + np.exp(-o @ w)) - t) * o
        state = jaxnn.ols_update(jaxnn.ols_init(X.shape[1], [0, 1], p=2.0, eta=eta), X, y)
        assert state.w.shape == (X.shape[1] + 1, 1)
        np.testing.assert_allclose(np.asarray(state.w)[:, 0], w, rtol=2e-5, atol=2e-6 * np.abs(w).max())
        np.testing.assert_array_equal(np.asarray(state.theta), np.asarray(state.w))  # ∇ψ_2 is the identity


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("loss", ["logistic", "matsushita"])
def test_update_agrees_with_float64_reference(stream, q, loss):
    """Eq. 93 with eq. 98's rate, three classes (one column each): jaxnn's
    float32 state against the float64 NumPy update, to float32 round-off."""
    X, _ = stream
    _, y = _stream(X.shape[0], X.shape[1], 0, classes=3)
    p = q / (q - 1)
    _, _, link, lam = NP_LOSSES[loss]
    ref = np_ols(X.astype(np.float64), np.eye(3)[y], p, link, lam)
    w_ref, theta_ref = ref[-1][3], ref[-1][4]
    state = jaxnn.ols_update(jaxnn.ols_init(X.shape[1], [0, 1, 2], loss=loss, p=p), X, y)
    assert state.p == pytest.approx(p, rel=1e-15) and state.q == pytest.approx(q, rel=1e-12)
    assert state.lam == lam and state.seen == X.shape[0]
    np.testing.assert_allclose(np.asarray(state.theta), theta_ref, rtol=0, atol=3e-5 * np.abs(theta_ref).max())
    np.testing.assert_allclose(np.asarray(state.w), w_ref, rtol=0, atol=3e-5 * np.abs(w_ref).max())
    lam_p = max(np.sum(np.abs(np.append(x, 1.0)) ** p) ** (1 / p) for x in X.astype(np.float64))
    assert float(state.lam_p) == pytest.approx(lam_p, rel=1e-6)
    assert state.rate == pytest.approx(lam / ((p - 1) * lam_p ** 2), rel=2e-6)  # eq. 98


def test_eq98_rate_and_eq97_curvature_bounds():
    """λ = min φ'' (eq. 97) from φ by jax.grad: 4 (φ_Q), 2 (φ_B, φ_M), 4/ln 2
    (log2 entropy), 2v·4^{1−v} for −(p(1 − p))^v; the rate follows λ_p as it grows."""
    expected = {"logistic": 4.0, "squared": 2.0, "matsushita": 2.0, "binary_logistic": 4.0 / math.log(2),
                "phi_power(0.5)": 2.0, "phi_power(0.25)": 0.5 * 4 ** 0.75}
    for name, lam in expected.items():
        assert ols_src.curvature_bound(name) == pytest.approx(lam, rel=1e-6), name
    state = jaxnn.ols_init(2, ["a", "b"], p=3.0)
    assert state.rate == math.inf and float(state.lam_p) == 0.0
    small = jaxnn.ols_update(state, np.float32([[1.0, 0.0]]), ["a"])  # ‖(1, 0, 1)‖_3 = 2^{1/3}
    assert small.rate == pytest.approx(4.0 / (2.0 * 2 ** (2 / 3)), rel=1e-6)
    big = jaxnn.ols_update(small, np.float32([[-2.0, 2.0]]), ["b"])  # ‖(−2, 2, 1)‖_3 = 17^{1/3}
    assert big.rate == pytest.approx(4.0 / (2.0 * 17 ** (2 / 3)), rel=1e-6)
    assert jaxnn.ols_update(big, np.float32([[0.5, 0.5]]), ["a"]).rate == big.rate  # a smaller o: λ_p stays
    assert jaxnn.ols_init(2, [0, 1], eta=0.3).rate == 0.3


def test_default_p_is_gentiles():
    """p = max(2, 2 ln(d + 1)): d + 1 entries of o, the bias included."""
    assert jaxnn.ols_init(50, [0, 1]).p == pytest.approx(2 * math.log(51), rel=1e-15)
    assert jaxnn.ols_init(1, [0, 1]).p == 2.0  # 2 ln 2 < 2


def test_grad_psi_is_table1s_link_and_inverts_the_dual():
    """∇ψ_r(x)_i = sign(x_i)|x_i|^{r−1}/‖x‖_r^{r−2} (Table 1) per column, ∇ψ_p ∘ ∇ψ_q = id
    (1/p + 1/q = 1), 0 at 0, and no overflow at |x| ~ 10^30 or underflow at 10^−30 in float32."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(7, 3))
    x[:, 2] = 0.0
    for q in QS:
        p = q / (q - 1)
        for r in (p, q):
            np.testing.assert_allclose(np.asarray(ols_src.grad_psi(np.float32(x), r)), np_grad_psi(x, r), rtol=2e-5,
                                       atol=1e-6)
        back = np.asarray(ols_src.grad_psi(ols_src.grad_psi(np.float32(x), q), p))
        np.testing.assert_allclose(back, x, rtol=2e-5, atol=1e-6)
        for size in (1e30, 1e-30):  # |x|^{p−1} would overflow / underflow float32
            scaled = np.asarray(ols_src.grad_psi(np.float32(x * size), 6.0))
            np.testing.assert_allclose(scaled, np_grad_psi(x, 6.0) * size, rtol=2e-5)


# ----------------------------------------------------------------------------
# Lemma 9, eqs 100–101 and Theorem 3 (float64)
# ----------------------------------------------------------------------------


def _theory_stream():
    X, y = _stream(300, 4, 3)
    return X.astype(np.float64), y.astype(np.float64)


@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("loss", ["logistic", "matsushita"])  # im ∇φ = R: eq. 101 holds for every w·o
def test_lemma9_eq100_eq101_and_theorem3(q, loss):
    """Paper 004 L748 (eq. 94): D_ψq(w_{t−1} ‖ w_t) ≤ η²(p − 1)/2 (p̂_w,t − y_t)² ‖o_t‖_p²
    at every step; L788 (eq. 100): d_t = D_ψq(r‖w_{t−1}) − D_ψq(r‖w_t) =
    η(p̂_w,t − y_t)(w_{t−1}·o_t − r·o_t) − D_ψq(w_{t−1} ‖ w_t) exactly; L796
    (eq. 101): D_φ(y‖p̂_w) + D_φ(p̂_w‖p̂_r) − D_φ(y‖p̂_r) = (p̂_w − y)(w·o − r·o)
    exactly; and Theorem 3 (L778–784) with η = λ/((p − 1)λ_p²) (eq. 98):
    Σ_t D_φ(p̂_w,t ‖ p̂_r,t) ≤ Σ_t D_φ(y_t ‖ p̂_r,t) + (p − 1)λ_p²‖r‖_q²/(2λ),
    p̂ = ∇φ⁻¹(·ᵀo_t), for references r near and far from the learner."""
    phi, dphi, link, lam = NP_LOSSES[loss]
    p = q / (q - 1)

    def D(a, b):
        return phi(a) - phi(b) - (a - b) * dphi(b)

    X, y = _theory_stream()
    O = np.hstack([X, np.ones((len(X), 1))])
    lam_p = max(np.sum(np.abs(O) ** p, axis=1) ** (1 / p))
    eta = lam / ((p - 1) * lam_p ** 2)
    steps = np_ols(X, y[:, None], p, link, lam, eta=eta)
    rng = np.random.default_rng(1)
    # references: the learner's end point, a random one, 0, one of large norm
    w_end = steps[-1][3][:, 0]
    refs = [w_end, rng.normal(size=O.shape[1]) * 0.5, np.zeros(O.shape[1]), 3 * w_end]
    for r in refs:
        lhs = rhs = 0.0
        for o, yt, w_prev, w_new, _, rate in steps:
            w_prev, w_new, yt = w_prev[:, 0], w_new[:, 0], yt[0]
            h, hr = o @ w_prev, o @ r
            a, b = link(h), link(hr)
            div = bregman_q(w_prev, w_new, q)
            assert div <= rate ** 2 * (p - 1) / 2 * (a - yt) ** 2 * np.sum(np.abs(o) ** p) ** (2 / p) * (1 + 1e-9)
            d_t = bregman_q(r, w_prev, q) - bregman_q(r, w_new, q)
            assert d_t == pytest.approx(rate * (a - yt) * (h - hr) - div, rel=1e-8, abs=1e-12)
            three = D(yt, a) + D(a, b) - D(yt, b)
            assert three == pytest.approx((a - yt) * (h - hr), rel=1e-9, abs=1e-12)
            assert d_t >= rate * (D(a, b) - D(yt, b)) - 1e-12  # the proof's step from (94), (96), (97)
            lhs += D(a, b)
            rhs += D(yt, b)
        bound = rhs + (p - 1) * lam_p ** 2 * np.sum(np.abs(r) ** q) ** (2 / q) / (2 * lam)
        assert lhs <= bound, (r, lhs, bound)
    # jaxnn's float32 update follows the float64 one on this stream
    state = jaxnn.ols_update(jaxnn.ols_init(X.shape[1], [0.0, 1.0], loss=loss, p=p, eta=eta),
                             X.astype(np.float32), y)
    np.testing.assert_allclose(np.asarray(state.w)[:, 0], w_end, rtol=0, atol=3e-5 * np.abs(w_end).max())


# ----------------------------------------------------------------------------
# the stream API
# ----------------------------------------------------------------------------


def _np_proba(state, X):
    w = np.asarray(state.w, np.float64)
    h = X.astype(np.float64) @ w[:-1] + w[-1]
    link = NP_LOSSES[state.loss.name][2]
    P = link(np.hstack([-h, h]) if w.shape[1] == 1 else h)
    return P / P.sum(axis=1, keepdims=True)


def test_predict_at_any_point_of_the_stream(stream):
    """jaxnn.predict / predict_proba / decision_function take the state before
    the first example (H = 0: uniform) and after each batch."""
    X, y = stream
    for classes, labels in (([0, 1], y), (["a", "b", "c"], np.array(["a", "b", "c"])[_stream(240, 5, 0, classes=3)[1]])):
        state = jaxnn.ols_init(X.shape[1], classes)
        np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(state, X[:4])), 1.0 / len(classes))
        np.testing.assert_array_equal(np.asarray(jaxnn.decision_function(state, X[:4])), 0.0)
        for start in (0, 100, 200):
            state = jaxnn.ols_update(state, X[start:start + 100], labels[start:start + 100])
            P = np.asarray(jaxnn.predict_proba(state, X))
            np.testing.assert_allclose(P, _np_proba(state, X), rtol=1e-5, atol=1e-6)
            H = np.asarray(jaxnn.decision_function(state, X))
            assert H.shape == (len(X), len(classes))
            np.testing.assert_array_equal(jaxnn.predict(state, X), np.asarray(classes)[np.argmax(H, axis=1)])
        assert np.mean(jaxnn.predict(state, X) == labels) > 0.6  # chance: 0.5 and 0.33 (noisy labels)


def test_binary_single_column_is_the_two_column_walk(stream):
    """Two classes learn one column h with H = (−h, h): the same as two
    columns "class 0" and "class 1" walked apart (a multilabel stream of
    (1 − y, y)), whose columns stay opposite (φ symmetric)."""
    X, y = stream
    one = jaxnn.ols_update(jaxnn.ols_init(X.shape[1], [0, 1], loss="matsushita", p=3.0), X, y)
    two = jaxnn.ols_update(jaxnn.ols_init(X.shape[1], 2, loss="matsushita", p=3.0, multilabel=True), X,
                           np.stack([1 - y, y], axis=1))
    w2 = np.asarray(two.w)
    np.testing.assert_allclose(w2[:, 0], -w2[:, 1], rtol=0, atol=1e-6 * np.abs(w2).max())
    np.testing.assert_allclose(np.asarray(one.w)[:, 0], w2[:, 1], rtol=0, atol=1e-5 * np.abs(w2).max())
    np.testing.assert_allclose(np.asarray(jaxnn.decision_function(one, X)), np.asarray(jaxnn.decision_function(two, X)),
                               rtol=0, atol=1e-4)


def test_one_batch_or_two_give_the_same_state(stream):
    X, y = stream
    init = jaxnn.ols_init(X.shape[1], [0, 1], p=3.0)
    whole = jaxnn.ols_update(init, X, y)
    for cut in (1, 77, 200):
        parts = jaxnn.ols_update(jaxnn.ols_update(init, X[:cut], y[:cut]), X[cut:], y[cut:])
        assert parts.seen == whole.seen == len(X)
        assert float(parts.lam_p) == float(whole.lam_p)
        np.testing.assert_allclose(np.asarray(parts.w), np.asarray(whole.w), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(np.asarray(parts.theta), np.asarray(whole.theta), rtol=1e-6, atol=1e-7)


def test_no_retrace_within_one_padded_batch_size(stream, compilations):
    X, y = stream
    state = jaxnn.ols_init(X.shape[1], [0, 1])
    with compilations(ols_src._advance):  # warm-up: compiles the update for batches of ≤ 128 rows
        state = jaxnn.ols_update(state, X[:100], y[:100])
    with compilations() as compiled:
        for n in (1, 37, 128):
            state = jaxnn.ols_update(state, X[:n], y[:n])
    assert compiled.of(ols_src._advance) == []


def test_ols_is_seeded_shuffles_of_ols_update(stream):
    """ols = per pass a permutation by NumPy's default_rng(seed), fed to ols_update."""
    X, y = stream
    model = jaxnn.ols(X, y, loss="squared", passes=2, seed=5)
    rng = np.random.default_rng(5)
    state = jaxnn.ols_init(X.shape[1], [0, 1], loss="squared")
    for _ in range(2):
        order = rng.permutation(len(X))
        state = jaxnn.ols_update(state, X[order], y[order])
    np.testing.assert_allclose(np.asarray(model.w), np.asarray(state.w), rtol=1e-6, atol=1e-7)
    assert model.seen == 2 * len(X) and model.family == "ols" and isinstance(model, jaxnn.OLSModel)
    other = jaxnn.ols(X, y, loss="squared", passes=2, seed=6)
    assert not np.allclose(np.asarray(other.w), np.asarray(model.w))
    more = jaxnn.ols_update(model, X[:5], y[:5])  # ols's result continues the stream
    assert more.seen == model.seen + 5


def test_multilabel_stream(stream):
    X, _ = stream
    Y = np.stack([X[:, 0] > 0, X[:, 1] > 0.5, X[:, 0] + X[:, 2] < 0], axis=1).astype(int)
    model = jaxnn.ols(X, Y, passes=3)
    assert model.multilabel and model.classes == (0, 1, 2) and model.w.shape == (X.shape[1] + 1, 3)
    assert np.mean(jaxnn.predict(model, X) == Y) > 0.85
    signed = jaxnn.ols_update(jaxnn.ols_init(X.shape[1], 3, multilabel=True), X, 2 * Y - 1)
    plain = jaxnn.ols_update(jaxnn.ols_init(X.shape[1], 3, multilabel=True), X, Y)
    np.testing.assert_array_equal(np.asarray(signed.w), np.asarray(plain.w))


# ----------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------


def test_bad_arguments_are_named():
    X = np.zeros((4, 2), np.float32)
    cases = [
        (lambda: jaxnn.ols_init(2, [0, 1], loss="exponential"), ValueError, r"loss 'exponential'.*permissible"),
        (lambda: jaxnn.ols(X, [0, 1, 0, 1], loss="amari(0.5)"), ValueError, r"loss 'amari\(0.5\)'"),
        (lambda: jaxnn.ols_init(2, [0, 1], loss="nope"), ValueError, r"unknown loss 'nope'"),
        (lambda: jaxnn.ols_init(2, [0, 1], p=1.5), ValueError, r"\bp must be .*2"),
        (lambda: jaxnn.ols(X, [0, 1, 0, 1], p=math.inf), ValueError, r"\bp must be"),
        (lambda: jaxnn.ols_init(2, [0, 1], p="2"), TypeError, r"\bp must be a real number"),
        (lambda: jaxnn.ols(X, [0, 1, 0, 1], eta=0.0), ValueError, r"\beta must be"),
        (lambda: jaxnn.ols_init(2, [0, 1], eta=-1), ValueError, r"\beta must be"),
        (lambda: jaxnn.ols(X, [0, 1, 0, 1], passes=0), ValueError, r"\bpasses must be >= 1"),
        (lambda: jaxnn.ols(X, [0, 1, 0, 1], seed=-1), ValueError, r"\bseed must be"),
        (lambda: jaxnn.ols_init(0, [0, 1]), ValueError, r"n_features must be >= 1"),
        (lambda: jaxnn.ols_init(2.0, [0, 1]), TypeError, r"n_features must be an integer"),
        (lambda: jaxnn.ols_init(2, [3]), ValueError, r"classes must hold at least 2"),
        (lambda: jaxnn.ols_init(2, [1, 1, 2]), ValueError, r"classes must be distinct"),
        (lambda: jaxnn.ols_init(2, "ab"), TypeError, r"classes must be"),
        (lambda: jaxnn.ols_init(2, 1, multilabel=True), ValueError, r"classes of a multilabel stream"),
        (lambda: jaxnn.ols_init(2, [0, 1], multilabel="yes"), TypeError, r"multilabel must be a bool"),
        (lambda: jaxnn.ols(X, [0, 0, 0, 0]), ValueError, r"single class"),
    ]
    for call, error, pattern in cases:
        with pytest.raises(error, match=pattern):
            call()


def test_a_refused_update_leaves_the_state_as_it_was(stream):
    X, y = stream
    state = jaxnn.ols_update(jaxnn.ols_init(X.shape[1], [0, 1]), X[:50], y[:50])
    before = (np.asarray(state.w).copy(), np.asarray(state.theta).copy(), float(state.lam_p), state.seen)
    nan = X[:3].copy()
    nan[1, 2] = np.nan
    uls_like = dataclasses.make_dataclass("ULSModel", [], bases=(jaxnn.OLSModel.__mro__[1],), frozen=True)
    uls_like.family = "uls"
    other = uls_like(classes=(0, 1), loss=state.loss, multilabel=False, n_features=X.shape[1])
    cases = [
        (lambda: jaxnn.ols_update(state, X[:3], [0, 1, 7]), ValueError, r"y_batch has label 7"),
        (lambda: jaxnn.ols_update(state, X[:3], ["a", "b", "c"]), ValueError, r"y_batch has label 'a'"),
        (lambda: jaxnn.ols_update(state, X[:3], [0, 1]), ValueError, r"y_batch"),
        (lambda: jaxnn.ols_update(state, X[:3, :2], y[:3]), ValueError, r"X_batch has 2 features"),
        (lambda: jaxnn.ols_update(state, nan, y[:3]), ValueError, r"X_batch contains NaN"),
        (lambda: jaxnn.ols_update(state, X[0], y[:1]), ValueError, r"X_batch must be a 2-D"),
        (lambda: jaxnn.ols_update(other, X[:3], y[:3]), TypeError, r"state must be an OLS state.*a ULS model"),
        (lambda: jaxnn.ols_update("state", X[:3], y[:3]), TypeError, r"state must be an OLS state.*str"),
        (lambda: jaxnn.ols_update(jaxnn.ols_init(X.shape[1], 3, multilabel=True), X[:3], y[:3]), ValueError,
         r"y_batch of a multilabel stream"),
    ]
    for call, error, pattern in cases:
        with pytest.raises(error, match=pattern):
            call()
    after = (np.asarray(state.w), np.asarray(state.theta), float(state.lam_p), state.seen)
    np.testing.assert_array_equal(after[0], before[0])
    np.testing.assert_array_equal(after[1], before[1])
    assert after[2:] == before[2:]
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.seen = 0
