"""The step core's one write (``steps.apply``) and the engine each plan runs."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from jaxnn._src import boost_runs, losses, steps
from jaxnn._src.plan import CHOOSERS, WINDOWED_MIN_STATE, make_plan


def _state(rng, m=6, C=3):
    edges = jnp.asarray(rng.normal(size=(m + 1, C)), jnp.float32)
    alpha = jnp.asarray(rng.normal(size=(m + 1, C)), jnp.float32)
    return steps.State(edges, alpha, jnp.float32(0.25))


def test_apply_writes_the_edges_alpha_and_the_trace():
    """edges[i] += change at the step's members, α_j += δ, and the risk adds
    Σ_valid u·(ψ(e_new) − ψ(e_old)) / size, computed here in float64."""
    rng = np.random.default_rng(0)
    loss = losses.get("logistic")
    state = _state(rng)
    idx = jnp.asarray([4, 1, 6])  # 6: the sentinel row, not valid
    change = jnp.asarray(rng.normal(size=(3, 3)), jnp.float32)
    valid = (idx < 6)[:, None]
    u = jnp.asarray([[2.0], [0.5], [0.0]], jnp.float32)
    delta = jnp.asarray([0.3, -0.2, 0.1], jnp.float32)
    out = steps.apply(loss, state, idx, change, valid=valid, size=18, u=u, trace=True, at=2, delta=delta)

    edges, alpha = np.asarray(state.edges, np.float64), np.asarray(state.alpha, np.float64)
    psi = lambda e: np.logaddexp(0.0, -e) / np.log(2.0)  # the logistic loss's ψ(e) = log2(1 + e^{−e})
    old, new = edges[[4, 1, 6]], edges[[4, 1, 6]] + np.asarray(change, np.float64)
    want_risk = 0.25 + np.sum((np.asarray(u) * (psi(new) - psi(old)))[:2]) / 18
    want_edges = edges.copy()
    want_edges[[4, 1, 6]] += np.asarray(change)
    want_alpha = alpha.copy()
    want_alpha[2] += np.asarray(delta)
    np.testing.assert_allclose(np.asarray(out.edges), want_edges, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out.alpha), want_alpha, rtol=1e-6)
    np.testing.assert_allclose(float(out.risk), want_risk, rtol=1e-5)
    # without the trace the risk stays; α alone (idx None) leaves the edges; a set of distinct
    # positions (unique) writes what the add does
    untraced = steps.apply(loss, state, idx, change, valid=valid, size=18, trace=False)
    assert float(untraced.risk) == 0.25 and np.array_equal(np.asarray(untraced.alpha), np.asarray(state.alpha))
    only_alpha = steps.apply(loss, state, at=2, delta=delta)
    assert np.array_equal(np.asarray(only_alpha.edges), np.asarray(state.edges))
    np.testing.assert_allclose(np.asarray(only_alpha.alpha), want_alpha, rtol=1e-6)
    as_set = steps.apply(loss, state, idx, change, trace=False, unique=True)
    assert np.array_equal(np.asarray(as_set.edges), np.asarray(untraced.edges))


def test_labels_hold_the_sentinel_and_the_weighted_labels():
    Y = jnp.asarray([[1.0, -1.0], [-1.0, 1.0]])
    plain = steps.labels(Y)
    assert plain.u is None and plain.yu is plain.y
    np.testing.assert_array_equal(np.asarray(plain.y), [[1, -1], [-1, 1], [0, 0]])
    weighted = steps.labels(Y, steps.Weights(jnp.asarray([2.0, 0.5]), jnp.asarray([1.0, 1.0])))
    np.testing.assert_array_equal(np.asarray(weighted.yu), [[2, -2], [-0.5, 0.5], [0, 0]])
    np.testing.assert_array_equal(np.asarray(weighted.u), [2, 0.5, 0])


@pytest.mark.parametrize("chooser", CHOOSERS)
def test_every_plan_runs_an_engine(chooser):
    """Plan.schedule names the engine: the chooser's, windowed for the
    sequential choosers from WINDOWED_MIN_STATE on a platform that windows."""
    m, C = 300, WINDOWED_MIN_STATE // 300 + 1
    for n_classes in (2, C):
        plan = make_plan(m, n_classes, m, chooser)
        assert plan.schedule in boost_runs.ENGINES
        want = {"colored": "colored", "greedy": "greedy"}.get(chooser, "windowed" if plan.windowed else "scan")
        assert plan.schedule == want
