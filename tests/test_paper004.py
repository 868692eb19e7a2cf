"""Paper 004 (*Intrinsic Geometries in Learning*) §3's identities, checked in
float64 on jaxnn.losses objects.  The paper's φ is convex (Definition 6,
L287: −φ concave, −φ(0) = −φ(1) = a_φ ≥ 0, b_φ = −φ(1/2) − a_φ), as jaxnn's
is: a_φ = −φ(0) and b_φ = φ(0) − φ(1/2) = ``loss.b``; F_φ (eq. 30) is
``loss.psi``, ∇φ⁻¹ ``loss.link``, φ* ``loss.conjugate``.  The extraction lost
factors and signs; each test's docstring gives the paper line and the clean
form it checks."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.special import xlogy

from jaxnn import losses

BALANCED = ["squared", "logistic", "binary_logistic", "matsushita", "phi_mu(0.3)", "phi_power(0.5)",
            "phi_power(0.25)"]


pytestmark = pytest.mark.usefixtures("x64")  # float64 throughout (tests/conftest.py)


def _np(a):
    return np.asarray(a, dtype=np.float64)


def _grid(name, n=161):
    """Scores H inside im ∇φ (Table 2's third column): [−1, 1] for φ_B, else ℝ (read on [−8, 8])."""
    top = 1.0 if name == "squared" else 8.0
    return jnp.asarray(np.linspace(-top, top, n))


def _bregman(loss, y, p):
    """D_φ(y ‖ p) = φ(y) − φ(p) − (y − p)∇φ(p) (eq. 16), elementwise."""
    y = jnp.broadcast_to(jnp.asarray(y, jnp.float64), jnp.shape(p))
    return _np(loss.phi(y) - loss.phi(p) - (y - p) * loss.dphi(p))


@pytest.mark.parametrize("name", BALANCED)
def test_balanced_loss_is_one_at_zero_eq30(name):
    """L323, eq. 30: F_φ(x) = (φ*(−x) − a_φ)/b_φ, and F_φ(0) = 1 (L336);
    also eqs 32–33 (L331–333): φ*(x) = φ*(−x) + x, and φ*(x) → a_φ as x → inf im ∇φ."""
    loss = losses.get(name)
    b, a = float(loss.b(jnp.float64)), -float(loss.phi(jnp.float64(0.0)))
    assert b > 0 and a >= 0
    assert float(loss.psi(jnp.float64(0.0))) == pytest.approx(1.0, abs=1e-12)
    x = _grid(name)
    np.testing.assert_allclose(_np(loss.psi(x)), (_np(loss.conjugate(-x)) - a) / b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(loss.conjugate(x)), _np(loss.conjugate(-x)) + _np(x), rtol=1e-10, atol=1e-12)
    if name == "squared":  # im ∇φ_B = [−1, 1]: the limit is reached at −1
        assert float(loss.conjugate(jnp.float64(-1.0))) == pytest.approx(a, abs=1e-15)
    else:  # φ_v = −(x(1 − x))^v approaches as |x|^{−v/(1−v)}: slowly for v = ¼
        near, far = (abs(float(loss.conjugate(jnp.float64(x))) - a) for x in (-1e2, -1e6))
        assert far < 0.01 and far <= near / 10


def test_table2_rows_with_the_missing_one_over_ln2():
    """Table 2 (L241–247), F_φ(y*H) and ∇φ⁻¹(H) per row: (27) φ_μ, a_φ = μ:
    (−x + √((1−μ)² + x²))/(1 − μ) and ½(1 + H/√((1−μ)² + H²)); (28) φ_M:
    −x + √(1 + x²), ½(1 + H/√(1 + H²)); (26) φ_B: (1 − x)² on [−1, 1], ½(1 + H);
    (29) φ_Q: the row prints log(1 + e^{−x}), which is ln 2 at 0: eq. 30 needs
    the 1/b_φ = 1/ln 2 factor, log(1 + e^{−x})/ln 2, for F(0) = 1."""
    x = np.linspace(-8.0, 8.0, 161)
    for mu in (0.0, 0.3, 0.8):
        loss = losses.get("matsushita") if mu == 0.0 else losses.phi_mu(mu)
        assert -float(loss.phi(jnp.float64(0.0))) == pytest.approx(mu, abs=1e-15)  # a_φ = μ
        np.testing.assert_allclose(_np(loss.psi(jnp.asarray(x))), (-x + np.sqrt((1 - mu) ** 2 + x * x)) / (1 - mu),
                                   rtol=1e-9)
        np.testing.assert_allclose(_np(loss.link(jnp.asarray(x))), 0.5 * (1 + x / np.sqrt((1 - mu) ** 2 + x * x)),
                                   rtol=1e-12)
    gini = losses.get("squared")
    inside = np.linspace(-1.0, 1.0, 41)
    np.testing.assert_allclose(_np(gini.psi(jnp.asarray(inside))), (1 - inside) ** 2, rtol=1e-12)
    np.testing.assert_allclose(_np(gini.link(jnp.asarray(inside))), 0.5 * (1 + inside), rtol=1e-12)
    entropy = losses.get("logistic")
    printed = np.log1p(np.exp(-x))
    assert printed[80] == pytest.approx(math.log(2.0)) and abs(printed[80] - 1.0) > 0.3  # x = 0: the printed row
    np.testing.assert_allclose(_np(entropy.psi(jnp.asarray(x))), printed / math.log(2.0), rtol=1e-12)
    assert float(entropy.b(jnp.float64)) == pytest.approx(math.log(2.0), rel=1e-15)
    np.testing.assert_allclose(_np(entropy.link(jnp.asarray(x))), 1 / (1 + np.exp(-x)), rtol=1e-12)


@pytest.mark.parametrize("name", BALANCED)
def test_asymptotes_eq34(name):
    """L338–344: F_φ → 0 as x → sup im ∇φ and F_φ(x) ~ −x/b_φ as x → inf im ∇φ,
    i.e. the asymptote ℓ(x) = x(σ(x) − 1)/(2b_φ) (eq. 34, σ = sign), which F_φ
    stays above (F_φ convex) and approaches as |x| grows; for φ_B it is
    reached at the ends ±1 of im ∇φ."""
    loss = losses.get(name)
    b = float(loss.b(jnp.float64))
    x = np.concatenate([-np.logspace(0, 4, 9)[::-1], np.logspace(0, 4, 9)])

    def asymptote(v):
        return v * (np.sign(v) - 1) / (2 * b)

    gap = _np(loss.psi(jnp.asarray(x))) - asymptote(x)
    assert np.all(gap >= -1e-12)
    if name == "squared":
        np.testing.assert_allclose(gap, 0.0, atol=1e-12)  # |x| ≥ 1
        assert float(loss.psi(jnp.float64(0.0))) - asymptote(0.0) == pytest.approx(1.0)
        return
    left, right = gap[:9], gap[9:]
    assert np.all(np.diff(left) >= -1e-12) and np.all(np.diff(right) <= 1e-12)  # shrinks as |x| grows
    # at |x| = 10⁴ a tenth of the gap at |x| = 1 at most (φ_v: a gap of order |x|^{−v/(1−v)})
    assert left[0] < 0.05 and right[-1] < 0.05 and left[0] < left[-1] / 10 and right[-1] < right[0] / 10


@pytest.mark.parametrize("name", BALANCED)
def test_margin_eq42_eq43(name):
    """L419, eq. 42: μ_H = 2∇φ⁻¹(y*H) − 1, which by symmetry of φ is eq. 43
    (L423): y*(2 p̂ − 1) ∈ [−1, 1], p̂ = ∇φ⁻¹(H) (eq. 41); for φ_Q (29) it is
    2σ(y*H) − 1 = tanh(y*H/2), the margin of [33]."""
    loss = losses.get(name)
    H = _grid(name)
    for ystar in (-1.0, 1.0):
        margin = 2 * _np(loss.link(ystar * H)) - 1
        np.testing.assert_allclose(margin, ystar * (2 * _np(loss.link(H)) - 1), rtol=1e-12, atol=1e-13)
        assert np.all(np.abs(margin) <= 1)
        assert np.all(np.sign(margin[np.abs(_np(H)) > 0]) == np.sign(ystar * _np(H)[np.abs(_np(H)) > 0]))
        if name == "logistic":
            np.testing.assert_allclose(margin, np.tanh(ystar * _np(H) / 2), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", BALANCED)
def test_lemma2_eqs36_to_40(name):
    """Lemma 2 (L357–375), with y ∈ {0, 1}, y* = 2y − 1:
    (36) ψ(y*H) = D_ψ*(0 ‖ ∇ψ*⁻¹(y*H)) − ψ*(0) for ψ = F_φ, whose conjugate is
    ψ*(u) = (φ(−b_φ u) + a_φ)/b_φ on [−1/b_φ, 0] and ∇ψ*⁻¹ = ∇ψ = −w;
    (37) D_φ(y ‖ ∇φ⁻¹(H)) = b_φ F_φ(y*H); (38) = D_φ(1 ‖ ∇φ⁻¹(y*H));
    (40) = φ(y) + φ*(H) − yH."""
    loss = losses.get(name)
    b, a = float(loss.b(jnp.float64)), -float(loss.phi(jnp.float64(0.0)))
    H = _grid(name)
    for y in (0.0, 1.0):
        x = (2 * y - 1) * H  # y*H
        d37 = _bregman(loss, y, loss.link(H))
        np.testing.assert_allclose(d37, b * _np(loss.psi(x)), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(d37, _bregman(loss, 1.0, loss.link(x)), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(d37, _np(loss.phi(jnp.float64(y)) + loss.conjugate(H) - y * H), rtol=1e-9,
                                   atol=1e-12)
        # (36): u = ∇ψ(x) = −w(x); ψ*(u) = (φ(s) + a)/b, ∇ψ*(u) = −∇φ(s), s = −b u = ∇φ⁻¹(−x)
        u = -loss.weight(x)
        s = -b * u
        conj, conj0 = (loss.phi(s) + a) / b, (loss.phi(jnp.float64(0.0)) + a) / b
        d36 = conj0 - conj - (0.0 - u) * (-loss.dphi(s))
        np.testing.assert_allclose(_np(loss.psi(x)), _np(d36 - conj0), rtol=1e-9, atol=1e-12)


def test_lemma2_last_part_eq39():
    """Lemma 2's last claim (L367–369): a strictly convex loss ψ is a BCL,
    D_φ(y ‖ ∇φ⁻¹(H)) = ψ(y*H) for some φ, iff ψ*(−x) restricted to
    [0, 1] is permissible.  The logistic loss log(1 + e^{−x}) has
    ψ*(−x) = x log x + (1 − x) log(1 − x) = φ_Q: from_phi takes it and
    its D_φ is ψ; the exponential loss e^{−x} has ψ*(−x) = x log x − x, not
    symmetric about ½: from_phi refuses it (eq. 19 is an SCL, not a BCL, L336)."""
    logistic_conj = losses.from_phi(lambda x: xlogy(x, x) + xlogy(1 - x, 1 - x), name="logistic psi*")
    H = jnp.asarray(np.linspace(-8, 8, 161))
    for y in (0.0, 1.0):
        np.testing.assert_allclose(_bregman(logistic_conj, y, logistic_conj.link(H)),
                                   np.log1p(np.exp(-(2 * y - 1) * _np(H))), rtol=1e-9)
    with pytest.raises(ValueError, match="symmetric"):
        losses.from_phi(lambda x: xlogy(x, x) - x, name="exponential psi*")


@pytest.mark.parametrize("v", [0.25, 0.5, 0.75])
def test_eq107_is_permissible_only_with_its_minus_sign(v):
    """Eq. 107 (L895) prints φ_v(x) = (x(1 − x))^v, concave, with φ(½) > φ(0):
    b_φ < 0.  The permissible form is −(x(1 − x))^v: convex (φ'' > 0 on (0, 1)),
    symmetric, φ(0) = φ(1) = 0 (a_φ = 0), b_φ = 4^{−v} — jaxnn's phi_power(v).
    from_phi refuses the printed form (b = −4^{−v} ≤ 0)."""
    loss = losses.phi_power(v)
    p = jnp.asarray(np.linspace(0.005, 0.995, 199))
    np.testing.assert_allclose(_np(loss.phi(p)), -(_np(p) * (1 - _np(p))) ** v, rtol=1e-14)
    assert float(loss.phi(jnp.float64(0.0))) == 0.0 == float(loss.phi(jnp.float64(1.0)))
    assert float(loss.b(jnp.float64)) == pytest.approx(4.0 ** -v, rel=1e-14)
    curvature = _np(jax.vmap(jax.grad(jax.grad(loss.phi)))(p))
    assert np.all(curvature > 0)
    assert curvature.min() == pytest.approx(2 * v * 4 ** (1 - v), rel=1e-3)  # least at ½
    np.testing.assert_allclose(_np(loss.phi(p)), _np(loss.phi(1 - p)), rtol=1e-14)
    with pytest.raises(ValueError, match=r"not permissible: b = .* must be finite and > 0"):
        losses.from_phi(lambda x: (x * (1.0 - x)) ** v, name="printed eq. 107")
