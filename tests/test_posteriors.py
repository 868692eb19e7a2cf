"""predict_proba's link posteriors: rows whose posteriors all underflow, NaN,
and N³'s posterior from its class-balanced initial edges."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import jaxnn
from jaxnn import losses
from jaxnn._src import algorithms as algos
from jaxnn._src.prediction import _n3_link, link_posterior, normalise_rows
from jaxnn.metrics import brier_score


def _model(H, loss, algorithm, dtype=np.float32):
    """A hand-set model whose query i, with neighbours [[i]] (k = 1), has
    scores H[i]: training point i is in class 0 and α_i = H_i · y_i."""
    H = np.asarray(H, dtype)
    n, C = H.shape
    Y = np.where(np.arange(C) == 0, 1.0, -1.0).astype(dtype)[None].repeat(n, 0)
    model = jaxnn.Model(
        alpha=jnp.asarray(H * Y), X=jnp.zeros((n, 1), dtype), Y=jnp.asarray(Y), trace=None,
        classes=tuple(range(C)), k=1, loss=losses.get(loss), algorithm=algorithm, multilabel=False,
    )
    return model, np.arange(n)[:, None]


def _proba(model, nb):
    p = np.asarray(jaxnn.predict_proba(model, neighbors=nb))
    jitted = jax.jit(lambda q: jaxnn.predict_proba(model, neighbors=q))(jnp.asarray(nb))
    # documented to run under jax.jit: traced, the rows are not padded, and XLA may round
    # the program of the other shape differently in the last bit
    np.testing.assert_allclose(np.asarray(jitted), p, rtol=1e-6, atol=0)
    return p


@pytest.mark.parametrize("algorithm", [algos.unn(smoothing=False), algos.gnnb()], ids=["unn", "gnnb"])
def test_underflowed_rows_put_their_mass_on_the_largest_scores(algorithm):
    # every p̂_c = 1/(1 + e^{−2H_c}) underflows (H ≤ −400 also in float64): the
    # rows were uniform 1/C, whatever the order of H
    H = [
        [-400.0, -400.0, -500.0],  # the two largest tie → ½, ½, 0 (the limit of the normalised posteriors)
        [-450.0, -400.0, -500.0],  # one largest → 0, 1, 0
        [-400.0, -400.0, -400.0],  # all tied → ⅓ each
        [1.0, 0.0, -1.0],  # no underflow: the normalised posteriors as before
    ]
    model, nb = _model(H, "exponential" if isinstance(algorithm, algos.UNN) else "logistic", algorithm)
    p = _proba(model, nb)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(p[:3], [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6, atol=0)
    raw = np.asarray(model.loss.posterior(jnp.asarray(H[3:], jnp.float32)))
    np.testing.assert_allclose(p[3:], raw / raw.sum(axis=1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(np.argmax(p, axis=1)[:2], jaxnn.predict(model, neighbors=nb)[:2])


def test_nan_scores_give_nan_rows():
    # a NaN posterior was mapped to a uniform row, hiding the NaN.  A model whose α
    # holds NaN is refused where it predicts, so the normalised link posterior is
    # given the NaN scores directly
    H = jnp.asarray([[np.nan, 0.0, 1.0], [0.5, -0.5, 0.0]], jnp.float32)
    p = np.asarray(normalise_rows(link_posterior(losses.get("logistic"), algos.gnnb(), False, H), H))
    assert np.all(np.isnan(p[0]))
    assert np.all(np.isfinite(p[1])) and p[1].sum() == pytest.approx(1.0)
    model, nb = _model(np.asarray(H), "logistic", algos.gnnb())
    with pytest.raises(ValueError, match="alpha holds 1 NaN"):
        jaxnn.predict_proba(model, neighbors=nb)


def _psi64(loss):
    return jax.jit(lambda x: loss.psi(x))


@pytest.mark.parametrize("name", ["logistic", "matsushita", "calibrated_hinge", "squared"])
@pytest.mark.parametrize("C", [3, 10])
@pytest.mark.slow
def test_n3_posterior_is_the_minimiser_of_the_initial_edge_risk(name, C):
    # independent of the model code: H* = argmin_H p·ψ(e0⁺ + H) + (1 − p)·ψ(e0⁻ − H)
    # with e0⁺ = 0, e0⁻ = −p̂⁻¹(1/(2(C − 1))) (N³'s class-balanced initial edges),
    # by scipy in float64; the posterior of H* must be p
    loss = losses.get(name)
    ps = np.linspace(0.05, 0.95, C) if C > 3 else np.array([0.1, 0.5, 0.8])
    with jax.enable_x64(True):
        psi = _psi64(loss)
        e_pos = 0.0
        e_neg = -float(loss.posterior_inverse(jnp.float64(1.0 / (2.0 * (C - 1)))))
        risk = lambda h, p: p * float(psi(jnp.float64(e_pos + h))) + (1 - p) * float(psi(jnp.float64(e_neg - h)))
        H = np.array([minimize_scalar(risk, bracket=(-1.0, 1.0), args=(p,), tol=1e-12).x for p in ps])
        model, nb = _model(H[None], name, algos.n3(), np.float64)
        np.testing.assert_allclose(np.asarray(_n3_link(model.loss, model.algorithm, jnp.asarray(H[None]))), ps[None], rtol=1e-6)
        # through predict_proba: the row normalised over classes
        p = np.asarray(jaxnn.predict_proba(model, neighbors=nb))
        np.testing.assert_allclose(p[0], ps / ps.sum(), rtol=1e-6)


def _gaussians(C, seed=0, d=5, m=2000, spread=3.0):
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(C, d)) * spread
    y = rng.integers(0, C, size=2 * m)
    X = (means[y] + rng.normal(size=(2 * m, d))).astype(np.float32)
    return X[:m], y[:m], X[m:], y[m:]


@pytest.mark.slow
def test_n3_link_posteriors_are_calibrated():
    # 10 Gaussian classes, 2000 train / 2000 test points, d = 5; accuracy 0.965
    # for both.  Brier score: GNNB 0.094; N³ 0.522 with the plain link
    # loss.posterior(H) (mean max posterior 0.32), 0.081 with the initial-edge
    # link.  (30 classes, same recipe: GNNB 0.269; N³ 0.877 → 0.232.)
    X, y, Xt, yt = _gaussians(10)
    n3 = jaxnn.fit(X, y, algorithm="n3", posterior="link", shrinkage=None)
    gnnb = jaxnn.fit(X, y, algorithm="gnnb", posterior="link", shrinkage=None)
    p_n3, p_gnnb = np.asarray(jaxnn.predict_proba(n3, Xt)), np.asarray(jaxnn.predict_proba(gnnb, Xt))
    assert np.mean(jaxnn.predict(n3, Xt) == yt) > 0.9
    np.testing.assert_allclose(p_n3.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(np.argmax(p_n3, axis=1), jaxnn.predict(n3, Xt))  # link increasing in H
    b_n3, b_gnnb = brier_score(yt, p_n3, classes=np.arange(10)), brier_score(yt, p_gnnb, classes=np.arange(10))
    assert b_n3 <= 2 * b_gnnb and b_n3 < 0.2, (b_n3, b_gnnb)


@pytest.mark.slow
def test_n3_posteriors_unchanged_for_two_classes_and_multilabel():
    # no-change guard: with C = 2 both initial edges are 0 and the posterior is
    # the loss's; multilabel N³ keeps the plain link
    X, y, Xt, _ = _gaussians(2, m=300)
    for loss in ("logistic", "squared"):
        model = jaxnn.fit(X, y, k=5, algorithm="n3", loss=loss, posterior="link", shrinkage=None)
        raw = np.asarray(model.loss.posterior(jaxnn.decision_function(model, Xt)))
        np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(model, Xt)), raw / raw.sum(1, keepdims=True), rtol=1e-6)
    Y = np.stack([y, (X[:, 0] > 0).astype(int), 1 - y], axis=1)
    model = jaxnn.fit(X, Y, k=5, algorithm="n3", posterior="link", shrinkage=None)
    raw = np.asarray(model.loss.posterior(jaxnn.decision_function(model, Xt)))
    np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(model, Xt)), np.clip(raw, 0, 1), rtol=1e-6)


@pytest.mark.parametrize("algorithm", ["n3", "gnnb"])
@pytest.mark.slow
def test_split_posteriors_follow_predict_proba(algorithm):
    # one block without a norm is fit itself: its combined posteriors are
    # predict_proba's with posterior="link", shrinkage=None (the ensemble used the plain link
    # for N³ and its own uniform fallback)
    X, y, Xt, _ = _gaussians(5, m=400)
    sm = jaxnn.ensemble.fit_split(X, y, n_splits=1, norm=None, k=5, algorithm=algorithm)
    model = jaxnn.fit(X, y, k=5, algorithm=algorithm, posterior="link", shrinkage=None)
    np.testing.assert_allclose(np.asarray(jaxnn.ensemble.predict_proba_split(sm, Xt, mean="arithmetic")),
                               np.asarray(jaxnn.predict_proba(model, Xt)), rtol=1e-6, atol=1e-7)
