"""Losses: closed-form fast paths equal the quantities derived from φ (float64)."""

import math
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxnn import losses

BALANCED = ["squared", "logistic", "binary_logistic", "matsushita", "phi_mu(0.3)"]
GRID = np.linspace(-8.0, 8.0, 4001)


pytestmark = pytest.mark.usefixtures("x64")  # float64 throughout (tests/conftest.py)


def _np(a):
    return np.asarray(a, dtype=np.float64)


@pytest.mark.parametrize("name", BALANCED)
def test_fast_paths_equal_derived(name):
    """The catalogue loss equals the one from_phi derives from its φ after checking it permissible —
    hstar too, so the catalogue's curvature ratio of 1 (losses._phi_loss) is the checked one."""
    fast = losses.get(name)
    derived = losses.from_phi(fast.phi)  # everything from φ and jax.grad
    x = jnp.asarray(GRID)
    np.testing.assert_allclose(_np(fast.link(x)), _np(derived.link(x)), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(_np(fast.psi(x)), _np(derived.psi(x)), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(_np(fast.weight(x)), _np(derived.weight(x)), rtol=1e-11, atol=1e-12)
    assert float(fast.hstar(jnp.float64)) == pytest.approx(float(derived.hstar(jnp.float64)), rel=1e-12)


@pytest.mark.parametrize("name", BALANCED + ["phi_power(0.5)", "phi_power(0.7)"])
@pytest.mark.slow
def test_balanced_identities(name):
    loss = losses.get(name)
    x = jnp.asarray(GRID)
    assert float(loss.psi(jnp.float64(0.0))) == pytest.approx(1.0, abs=1e-12)  # ψ(0) = 1
    # w = −ψ' (by jax.grad of ψ) = link(−e)/b
    dpsi = jax.vmap(jax.grad(loss.psi))(x)
    np.testing.assert_allclose(_np(loss.weight(x)), -_np(dpsi), rtol=1e-7, atol=1e-9)
    # H* = 1/(b φ''(1/2)) = ψ''(0)
    b = float(loss.b(jnp.float64))
    d2 = float(jax.grad(jax.grad(loss.phi))(0.5))
    assert float(loss.hstar(jnp.float64)) == pytest.approx(1.0 / (b * d2), rel=1e-9)
    assert float(jax.grad(jax.grad(loss.psi))(0.0)) == pytest.approx(1.0 / (b * d2), rel=1e-6)
    # link inverts ∇φ and is symmetric
    p = jnp.linspace(0.01, 0.99, 99)
    np.testing.assert_allclose(_np(loss.link(loss.dphi(p))), _np(p), rtol=1e-10)
    np.testing.assert_allclose(_np(loss.link(x) + loss.link(-x)), 1.0, atol=1e-12)
    # ψ is convex and decreasing, posteriors in [0, 1]
    psi = _np(loss.psi(x))
    assert np.all(np.diff(psi) <= 1e-12)
    assert np.all(np.diff(psi, 2) >= -1e-9)
    post = _np(loss.posterior(x))
    assert post.min() >= 0.0 and post.max() <= 1.0


def test_closed_forms_of_table_1():
    x = jnp.asarray(GRID)
    ln2 = math.log(2)
    assert float(losses.squared().hstar(jnp.float64)) == pytest.approx(2.0)
    assert float(losses.logistic().hstar(jnp.float64)) == pytest.approx(1 / (4 * ln2))
    assert float(losses.binary_logistic().hstar(jnp.float64)) == pytest.approx(ln2 / 4)
    assert float(losses.matsushita().hstar(jnp.float64)) == pytest.approx(1.0)
    np.testing.assert_allclose(_np(losses.logistic().psi(x)), np.log1p(np.exp(-GRID)) / ln2, rtol=1e-12)
    np.testing.assert_allclose(_np(losses.matsushita().psi(x)), np.sqrt(1 + GRID**2) - GRID, rtol=1e-12)


def test_gini_weights_clip():
    """Derived means derived: the Gini conjugate over [0,1] clips the link."""
    sq = losses.from_phi(lambda p: p * p - p)
    x = jnp.asarray(GRID)
    np.testing.assert_allclose(_np(sq.weight(x)), np.clip(2 * (1 - GRID), 0, 4), atol=1e-12)
    psi_ref = np.where(GRID > 1, 0.0, np.where(GRID < -1, -4 * GRID, (1 - GRID) ** 2))
    np.testing.assert_allclose(_np(sq.psi(x)), psi_ref, atol=1e-11)


def test_phi_mu_zero_is_matsushita():
    x = jnp.asarray(GRID)
    np.testing.assert_allclose(_np(losses.phi_mu(0.0).psi(x)), _np(losses.matsushita().psi(x)), rtol=1e-12)
    np.testing.assert_allclose(_np(losses.phi_power(0.5).link(x)), _np(losses.matsushita().link(x)), atol=1e-12)


def test_non_balanced_losses():
    x = jnp.asarray(GRID)
    exp = losses.exponential()
    np.testing.assert_allclose(_np(exp.weight(x)), np.exp(-GRID), rtol=1e-12)
    # paper 003 eq. 11 / Table 1 F: p̂ = 1/(1 + e^{−2h})
    np.testing.assert_allclose(_np(exp.posterior(x)), 1 / (1 + np.exp(-2 * GRID)), rtol=1e-12)
    assert not math.isfinite(float(exp.hstar(jnp.float64)))
    a = 0.5
    am = losses.amari(a)
    c = (1 - a * a) / 4
    xs = jnp.linspace(-3.0, 5.0, 201)  # ψ finite on (−1/c, ∞), 1/c = 16/3
    ref = (4 - (1 - a * a) * _np(xs)) / (4 + (1 - a * a) * _np(xs))
    np.testing.assert_allclose(_np(am.posterior(xs)), 1 / (1 + ref ** (2 / (1 - a))), rtol=1e-9)
    assert float(am.psi(jnp.float64(-1 / c - 1))) == math.inf
    hinge = losses.calibrated_hinge()
    f = lambda h: (1 + np.maximum(0, h)) / (2 + np.abs(h))  # paper 002 Table 1 D
    np.testing.assert_allclose(_np(hinge.posterior(x)), f(GRID), rtol=1e-12)
    np.testing.assert_allclose(_np(hinge.weight(x)), f(-GRID), rtol=1e-12)
    assert float(hinge.hstar(jnp.float64)) == pytest.approx(0.25)
    p = jnp.linspace(0.05, 0.95, 19)
    np.testing.assert_allclose(_np(exp.posterior(exp.posterior_inverse(p))), _np(p), rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["exponential", "amari(0.5)", "amari(-0.25)", "calibrated_hinge"])
def test_psi_posteriors_at_large_margins(name, dtype):
    # eq. 11 as a quotient ψ'(−h)/(ψ'(−h) + ψ'(h)) was inf/inf = NaN for the
    # exponential loss from |h| ≈ 89 in float32, and predict_proba turned the
    # NaN rows into uniform ones
    loss = losses.get(name)
    h = np.array([0.0, 1.0, 10.0, 50.0, 89.0, 100.0, 400.0, 1e3, 1e4, 1e30], dtype)
    h = np.concatenate([-h[::-1], h])
    p = _np(loss.posterior(jnp.asarray(h)))
    assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
    assert np.all(np.diff(p) >= 0)  # non-decreasing in h
    np.testing.assert_allclose(p + p[::-1], 1.0, atol=1e-6 if dtype == np.float32 else 1e-12)  # p̂(−h) = 1 − p̂(h)
    assert p[0] < 1e-3 and p[-1] > 1 - 1e-3
    if name == "exponential":
        from scipy.special import expit

        ref = expit(2.0 * h.astype(np.float64))  # 1/(1 + e^{−2h}), accurate in both tails
        np.testing.assert_allclose(p, ref, rtol=1e-6 if dtype == np.float32 else 1e-12, atol=np.finfo(dtype).tiny)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exponential_posterior_inverse_near_0_and_1(dtype):
    # UNN-fast's δ = p̂⁻¹(W): was ~5000 (then clipped to 50) for W ≥ 0.99
    W = np.array([1e-6, 1e-3, 0.01, 0.3, 0.5, 0.9, 0.99, 0.999, 1 - 1e-6], np.float64)
    got = _np(losses.get("exponential").posterior_inverse(jnp.asarray(W.astype(dtype))))
    ref = 0.5 * np.log(W.astype(dtype).astype(np.float64) / (1 - W.astype(dtype).astype(np.float64)))
    np.testing.assert_allclose(got, ref, rtol=1e-4 if dtype == np.float32 else 1e-9, atol=1e-6)


@pytest.mark.slow
def test_curvature_vanishing_at_the_ends_is_unbounded():
    # φ(p) = −sin(πp)/π is permissible but φ'' → 0 at 0 and 1: sup ψ'' = ∞. A
    # grid stopping at 10⁻⁴ read H* = 3183 and GNNB barely moved; it is refused
    import jaxnn

    sin = losses.from_phi(lambda p: -jnp.sin(jnp.pi * p) / jnp.pi, name="sin")
    assert float(sin.hstar(jnp.float32)) == math.inf
    X, y = np.random.default_rng(0).normal(size=(40, 2)), np.arange(40) % 2
    with pytest.raises(ValueError, match="bounded curvature"):
        jaxnn.fit(X, y, k=3, loss=sin)
    # UNN's steps (generic roots: no closed form) stay finite; boosting alone, no held-out fit
    unn = jaxnn.fit(X, y, k=3, loss=sin, algorithm="unn", posterior="link", shrinkage=None)
    assert np.all(np.isfinite(np.asarray(unn.alpha)))
    # curvature with a positive floor at the ends keeps its finite bound
    # (φ'' = 2 − 0.6(p − ½)², smallest at the ends: 1.85; H* = 1/(b·1.85))
    floor = losses.from_phi(lambda p: (p - 0.5) ** 2 - 0.05 * (p - 0.5) ** 4, name="floor")
    b = 0.25 - 0.05 / 16
    assert float(floor.hstar(jnp.float64)) == pytest.approx(1 / (b * 1.85), rel=1e-4)


@pytest.mark.parametrize("C", [3, 100, 20_000, 100_000])
@pytest.mark.slow
def test_n3_hinge_initial_edges_for_many_classes(C):
    # the calibrated hinge's p̂⁻¹(1/(2(C − 1))) = −(2(C − 1) − 2): the root
    # finder's bracket of ±10⁴ cut it off from C ≈ 5000 on
    from jaxnn._src.algorithms import N3

    Y = jnp.asarray(np.where(np.arange(C) == 0, 1.0, -1.0)[None], jnp.float32)
    e0 = np.asarray(N3().init_edges(losses.get("calibrated_hinge"), Y), np.float64)
    assert e0[0, 0] == 0.0
    np.testing.assert_allclose(e0[0, 1:], 2 * (C - 1) - 2, rtol=1e-5)


def test_root_finder_keeps_an_exact_root_and_steps_back_from_nan():
    # a hand-written ψ = log2(1 + e^{−x}) overflows to NaN far out (e^{5000});
    # its posterior is the sigmoid. posterior_inverse(0.5) hit the root at its
    # start, bisected away from it into the NaN region, and stayed at −5000
    hand = losses.from_psi(lambda x: jnp.log(1 + jnp.exp(-x)) / jnp.log(2.0), name="hand")
    p = np.array([0.5, 0.25, 0.01, 0.99])
    for dtype in (np.float32, np.float64):
        got = _np(hand.posterior_inverse(jnp.asarray(p.astype(dtype))))
        np.testing.assert_allclose(got, np.log(p / (1 - p)), rtol=1e-5, atol=1e-6)
    from jaxnn._src.losses import increasing_root

    f = lambda x: x**3  # increasing; x0 = 0 is the root of 0
    np.testing.assert_array_equal(_np(increasing_root(f, jnp.zeros(3), -10.0, 10.0, jnp.zeros(3), 50)), 0.0)


def test_catalogue_is_cached_and_hashable():
    assert losses.get("logistic") is losses.get("logistic")
    assert losses.get("phi_mu(0.25)") is losses.phi_mu(0.25)
    hash(losses.get("matsushita"))
    assert losses.amari() is losses.amari(0.5) is losses.get("amari") is losses.get("amari(0.5)")


@pytest.mark.parametrize(
    "name", sorted(set(losses.names()) - {"phi_mu(<mu>)", "phi_power(<v>)", "amari(<alpha>)"})
    + ["phi_mu(0.1234567)", "phi_power(0.3)", "amari(-0.25)"],
)
def test_losses_pickle_by_name_to_the_same_object(name):
    loss = losses.get(name)
    assert pickle.loads(pickle.dumps(loss)) is loss  # same cached object: jitted code does not retrace


def test_custom_loss_pickling_names_the_loss():
    custom = losses.from_phi(lambda p: -jnp.sqrt(p * (1.0 - p)), name="my_phi")
    with pytest.raises(pickle.PicklingError, match="my_phi"):
        pickle.dumps(custom)


@pytest.mark.parametrize(
    "bad, err",
    [("nope", ValueError), (3, TypeError), ("phi_mu(2)", ValueError), ("amari(1)", ValueError), ("phi_power(0)", ValueError)],
)
def test_bad_loss_names(bad, err):
    with pytest.raises(err):
        losses.get(bad)


@pytest.mark.parametrize(
    "factory, arg, err",
    [(losses.phi_mu, None, TypeError), (losses.phi_mu, "abc", TypeError), (losses.phi_mu, [0.3], TypeError),
     (losses.phi_power, True, TypeError), (losses.phi_power, 1.0, ValueError), (losses.amari, float("nan"), ValueError)],
)
def test_loss_families_check_their_parameter(factory, arg, err):
    with pytest.raises(err, match=factory.__name__):
        factory(arg)
    assert losses.phi_mu(np.float32(0.25)) is losses.phi_mu(0.25)  # NumPy numbers are numbers: one cached loss


def test_from_psi_and_from_phi_check_what_the_function_returns():
    with pytest.raises(ValueError, match="convex decreasing"):
        losses.from_psi(lambda x: x)  # increasing
    with pytest.raises(ValueError, match="convex decreasing"):
        losses.from_psi(lambda x: -x)  # not strictly convex
    with pytest.raises(TypeError, match="psi must map"):
        losses.from_psi(lambda x: "s")
    with pytest.raises(TypeError, match="phi must map"):
        losses.from_phi(lambda p: "x")
    for bad in (float("nan"), "a", float("inf")):
        with pytest.raises(TypeError, match="domain_min"):
            losses.from_psi(lambda x: jnp.exp(-x), domain_min=bad)
    assert losses.from_psi(lambda x: jnp.exp(-x)).weight(0.0) == 1.0


@pytest.mark.parametrize(
    "make, symbol, loss_name",
    [
        (lambda: losses.from_phi(lambda p: -np.sqrt(p * (1 - p)), name="np_phi"), "phi", "np_phi"),  # numpy
        (lambda: losses.from_phi(lambda p: -math.sqrt(p * (1 - p))), "phi", "custom_phi"),  # math: float(tracer)
        (lambda: losses.from_phi(lambda p: p * p - p if p < 2 else 0.0), "phi", "custom_phi"),  # Python if
        (lambda: losses.from_psi(lambda x: np.log1p(np.exp(-x)), name="np_psi"), "psi", "np_psi"),
        (lambda: losses.from_psi(lambda x: jnp.exp(-x) if x > -100 else 0.0), "psi", "custom_psi"),
    ],
    ids=["numpy_phi", "math_phi", "if_phi", "numpy_psi", "if_psi"],
)
def test_from_phi_and_from_psi_refuse_untraceable_functions(make, symbol, loss_name):
    # a φ or ψ written with numpy/math/Python control flow: a TypeError naming the
    # function, the loss and the fix, not JAX's raw tracer error
    with pytest.raises(TypeError, match=rf"{symbol} \(.\) of loss '{loss_name}' must be written with jax.numpy \(jnp\)") as info:
        make()
    assert not isinstance(info.value, jax.errors.JAXTypeError)
    assert "traceable" in str(info.value) and "jnp.where" in str(info.value)


def test_not_permissible():
    with pytest.raises(ValueError, match="symmetric"):
        losses.from_phi(lambda p: p * p - p + 0.1 * p**3)  # asymmetric
    with pytest.raises(ValueError, match="b ="):
        losses.from_phi(lambda p: -(p * p - p))  # concave: b < 0
    with pytest.raises(ValueError, match="convex"):
        losses.from_phi(lambda p: (p - 0.5) ** 4 - 1 / 16)  # flat at 1/2: phi''(1/2) = 0
    with pytest.raises(TypeError):
        losses.from_phi("squared")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, a", [("matsushita", 1.0), ("phi_mu(0.3)", 0.7)])
@pytest.mark.slow
def test_square_root_losses_in_both_tails(name, a, dtype):
    """The closed forms ½(1 + h/√(a² + h²)) and ψ(x) = √(1 + x²) − x against
    80-digit decimal arithmetic: the plain forms read link(10³⁰) = ½ (h²
    overflows), link(−10⁴) = 0, float32 ψ(10⁴) = 0 and ψ(10²) off by 5e-4
    (cancellation), and float32 weight −ψ'(10³⁰) = 1 instead of 5·10⁻⁶¹."""
    from decimal import Decimal, getcontext

    getcontext().prec = 80
    loss = losses.get(name)
    h = np.array([1e-3, 1.0, 1e2, 1e4, 1e19, 1e30], dtype)
    h = np.concatenate([-h[::-1], [0.0], h]).astype(dtype)
    dec = [Decimal(repr(float(v))) for v in h]
    da = Decimal(repr(a))
    exact = {"posterior": [(1 + v / (da * da + v * v).sqrt()) / 2 for v in dec]}
    if name == "matsushita":
        exact["psi"] = [(1 + v * v).sqrt() - v for v in dec]
        exact["weight"] = [1 - v / (1 + v * v).sqrt() for v in dec]
    tiny = np.finfo(dtype).tiny
    for what, ref in exact.items():
        ref = np.array([float(r) for r in ref])
        got = np.asarray(getattr(loss, what)(jnp.asarray(h)), np.float64)
        normal = ref >= tiny  # below that, float32/64 may flush to 0
        np.testing.assert_allclose(got[normal], ref[normal], rtol=4e-7 if dtype == np.float32 else 1e-14, err_msg=what)
        assert np.all(np.abs(got[~normal]) < tiny), what
    assert float(loss.posterior(jnp.asarray(0.0, dtype))) == 0.5  # exactly (a²/(2a²) rounded 0.49999994 for μ = 0.3)
    # link'(h) = a²/(2(a² + h²)^{3/2}) — at 0 too (through |h| autodiff read 0), which N³'s curvature uses
    slope = np.array([float(jax.grad(loss.posterior)(jnp.asarray(v, dtype))) for v in h[4:-4]])
    np.testing.assert_allclose(slope, a * a / (2 * (a * a + h[4:-4].astype(float) ** 2) ** 1.5), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.slow
def test_derived_gini_link_saturates_exactly(dtype):
    """The Gini φ = p² − p has ∇φ(p) = 2p − 1 with range [−1, 1]: the derived
    link (∇φ)⁻¹ is exactly 0 below −1 and exactly 1 above 1, and the weight
    w(e) = link(−e)/b and the curvature ψ''(x) = 2·[|x| < 1] with it."""
    sq = losses.from_phi(lambda p: p * p - p)
    h = np.array([-50.0, -3.0, -2.0, -1.5, 1.5, 2.0, 3.0, 50.0], dtype)
    np.testing.assert_array_equal(_np(sq.link(jnp.asarray(h))), np.where(h > 0, 1.0, 0.0))
    np.testing.assert_array_equal(_np(sq.weight(jnp.asarray(h))), np.where(h > 0, 0.0, 4.0))
    x = np.array([-50.0, -3.0, -1.5, -1.01, -0.99, -0.5, 0.0, 0.5, 0.99, 1.01, 1.5, 3.0, 50.0], dtype)
    np.testing.assert_allclose(_np(sq.curvature(jnp.asarray(x))), np.where(np.abs(x) < 1, 2.0, 0.0), rtol=1e-6, atol=0)


def test_curvature_vanishing_only_very_near_the_ends_is_unbounded():
    # φ'' = 2 − 2e^{−p/d} − 2e^{−(1−p)/d} with d = 10⁻³: 2 in the bulk but
    # 2·10⁻⁴ at p = 10⁻⁷ (below 10⁻³·φ''(½)) — only a grid reaching 10⁻⁷
    # from the ends sees it: H* is infinite
    d = 1e-3
    edge = losses.from_phi(lambda p: p * p - p - 2 * d * d * (jnp.exp(-p / d) + jnp.exp(-(1 - p) / d)), name="edge")
    assert float(edge.hstar(jnp.float32)) == math.inf
    assert float(edge.hstar(jnp.float64)) == math.inf


def test_amari_near_and_at_its_domain_edge():
    """Amari α = ½: ψ(x) = (1 + x·3/16)^{−3}, w = −ψ' = (9/16)(1 + 3x/16)^{−4},
    finite for x > −16/3 and +∞ at and below it; the weight follows the
    closed form to within 10⁻⁶·16/3 of the edge (clamped only beyond)."""
    am = losses.amari(0.5)
    c = 0.1875
    x = np.array([-5.333, -5.33, -5.3, -5.0, -3.0, 0.0, 10.0])
    np.testing.assert_allclose(_np(am.weight(jnp.asarray(x))), 0.5625 * (1 + c * x) ** -4, rtol=1e-6)
    np.testing.assert_allclose(_np(am.psi(jnp.asarray(x))), (1 + c * x) ** -3, rtol=1e-6)
    assert float(am.psi(jnp.float64(-16 / 3))) == math.inf
    assert float(am.psi(jnp.float64(-5.3333))) < math.inf


@pytest.mark.parametrize("alpha", [0.5, -0.25, -0.9])
def test_amari_posterior_inverse_round_trips_near_0_and_1(alpha):
    # α = ½: p̂⁻¹(10⁻⁶) = −5.00636 lies within 6.1% of the domain edge −16/3;
    # for α < 0, p̂ falls to 0 only at the very edge: the root finder's bracket
    # reaches to 10⁻⁶ of it (at 0.999·edge, α = −0.9 gave p̂ ≥ 3.4e-4)
    loss = losses.amari(alpha)
    p = np.array([1e-6, 1e-4, 1e-3, 0.1, 0.5, 0.9, 0.999, 1 - 1e-6])
    with jax.enable_x64(True):
        h = loss.posterior_inverse(jnp.asarray(p))
        np.testing.assert_allclose(_np(loss.posterior(h)), p, rtol=1e-8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.slow
def test_phi_power_half_is_matsushita_in_the_tails(dtype):
    """φ_{1/2} = −√(p(1 − p)) is Matsushita's φ: the derived link (Newton in
    log p) must follow the closed form a²/(2r(r + s)) ≈ 1/(4h²) down to
    the smallest normal numbers, and ψ'' = (1 + x²)^{−3/2}."""
    pp, mat = losses.phi_power(0.5), losses.matsushita()
    big = [1e4, 1e12, 1e17] if dtype == np.float32 else [1e4, 1e12, 1e30, 1e80]
    h = np.array(big, dtype)
    h = np.concatenate([-h[::-1], h])
    np.testing.assert_allclose(_np(pp.link(jnp.asarray(h))), _np(mat.link(jnp.asarray(h))), rtol=1e-5, atol=0)
    # curvature: float32 is accurate on the side where link(−x) is near 0
    x = np.array([0.0, 1.0, 5.0, 30.0, 100.0, 300.0], dtype)
    if dtype == np.float64:
        x = np.concatenate([-x[::-1], x])
    np.testing.assert_allclose(_np(pp.curvature(jnp.asarray(x))), (1 + x.astype(np.float64) ** 2) ** -1.5,
                               rtol=1e-5 if dtype == np.float32 else 1e-9)


def test_from_psi_checks_the_surrogate_inside_a_positive_domain():
    # ψ(x) = 1/x on x > 0: convex and decreasing there; the surrogate check
    # runs at domain_min + 1 (x = 0 is outside its domain)
    inv = losses.from_psi(lambda x: 1.0 / x, domain_min=0.0, name="inv")
    assert float(inv.weight(jnp.float64(2.0))) == pytest.approx(0.25)  # −ψ'(2) = 1/4
    assert float(inv.psi(jnp.float64(0.0))) == math.inf


def test_a_new_process_compiles_one_program_per_loss_and_no_eager_operations_in_fit():
    """In a new process a catalogue loss (``logistic()``) compiles nothing,
    a loss from_phi checks (``phi_mu(0.3)``) one program — not φ's
    operations one by one — and a fit no eager operation, nor a fit that
    chooses k: H* is one program per dtype, a JAX array on the CPU is
    checked in place, the candidates' α are summed without a program of
    their own, and their boosting pass is the fit's program."""
    import json
    import subprocess
    import sys

    code = """if True:
        import json, logging, jax, numpy as np, jaxnn
        names = []
        class Names(logging.Handler):
            def emit(self, record):
                message = record.getMessage()
                if "Finished XLA compilation of" in message:
                    names.append(message.split("compilation of ")[1].split(" in ")[0])
        logger = logging.getLogger("jax")
        logger.addHandler(Names()); logger.setLevel(logging.WARNING); logger.propagate = False
        X = np.random.default_rng(0).normal(size=(250, 8)).astype(np.float32)
        with jax.log_compiles():
            jaxnn.losses.logistic()
            catalogue, names[:] = list(names), []
            jaxnn.losses.phi_mu(0.3)
            loss, names[:] = list(names), []
            jaxnn.fit(X, (X[:, 0] > 0).astype(int), k=10, posterior="link")
            fit, names[:] = list(names), []
            jaxnn.fit(X, (X[:, 0] > 0).astype(int), k="auto", posterior="link")
        print(json.dumps([catalogue, loss, fit, names]))
    """
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    catalogue, loss, fit, select = json.loads(proc.stdout.strip().splitlines()[-1])
    assert catalogue == [] and loss == ["jit(permissibility)"]
    eager = {"jit(add)", "jit(multiply)", "jit(subtract)", "jit(true_divide)", "jit(log)", "jit(isfinite)",
             "jit(_reduce_all)", "jit(not_equal)", "jit(bitwise_or)", "jit(broadcast_in_dim)",
             "jit(convert_element_type)"}
    assert not eager & set(fit), fit
    assert "jit(boost)" in fit and len(fit) <= 10, fit
    # k="auto": no eager operation either; the candidates' one boosting pass runs the program the
    # fit above compiled (the same padded shapes), and their few held-out scores are summed on the host
    assert not eager & set(select), select
    assert not {"jit(boost)", "jit(leveraged_scores)", "jit(tie_parts)"} & set(select), select


def test_threads_asking_for_a_loss_at_once_get_the_one_cached_object():
    """Concurrent first requests (fits in threads) build one Loss: each thread
    built its own with a bare lru_cache, and models fit with all but the last
    one stored raised PicklingError "loss 'logistic' is not one of
    jaxnn.losses.names()", and compiled again."""
    import pickle
    import threading

    name = "phi_mu(0.3712)"  # asked for nowhere else: the first request is in the threads
    start, got = threading.Barrier(4), []

    def ask():
        start.wait()
        got.append(losses.get(name))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and all(g is losses.get(name) for g in got)
    assert all(pickle.loads(pickle.dumps(g)) is g for g in got)
