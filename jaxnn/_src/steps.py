"""The step core shared by every schedule (sequential, greedy, windowed, colored).

A boosting step leverages example j for every class c (paper 000 Alg. 1
steps I.1–I.3, paper 001 Alg. 1): δ_c from the algorithm on the edges of
inv(j), then e_ic += δ_c·y_ic·y_jc for i ∈ inv(j) and α_jc += δ_c.  The
schedules differ only in which examples a step takes and how it reaches
their members; what they share is written here once:

* :func:`start` — the initial edges E0 (``algorithm.init_edges``), the
  sentinel row m appended to the labels, edges and α (y = 0 there, so a
  padded member's r = y_ic·y_jc is 0 and its update a no-op), the starting
  risk;
* :func:`edge_change` — δ_c·y_ic·y_jc for a step's members;
* :func:`risk_change` — the change of the total surrogate risk
  (1/(mC)) Σ ψ(e_ic) that a step's edge updates make (the trace);
* :func:`live` — a padding step t ≥ n_steps leaves the state as it is;
* :func:`finish` — α and the edges of the m examples, the trace if asked.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxnn._src.losses import Loss

__all__ = ["BoostResult", "with_sentinel", "initial_risk", "start", "edge_change", "risk_change", "live", "finish"]


class BoostResult(NamedTuple):
    """alpha (m, C); edges (m, C); trace (T,) total surrogate risk after each
    step, or None."""

    alpha: jax.Array
    edges: jax.Array
    trace: Optional[jax.Array]


def with_sentinel(a, value=0):
    """a (m, …) with one more row of ``value``: the sentinel row m."""
    return jnp.concatenate([a, jnp.full((1,) + a.shape[1:], value, a.dtype)], axis=0)


def initial_risk(loss: Loss, E0, n_points=None) -> jax.Array:
    """(1/(mC)) Σ_{i,c} ψ(e_ic) of the (m, C) initial edges E0, or, for a
    problem padded to shared sizes, the mean over its first ``n_points``
    (traced) rows only."""
    if n_points is None:
        return jnp.mean(loss.psi(E0))
    m, C = E0.shape
    return jnp.sum(jnp.where((jnp.arange(m) < n_points)[:, None], loss.psi(E0), 0.0)) / (n_points * C)


def start(Y, E0, *, algorithm, loss: Loss, n_points=None):
    """The state before the first step: (Yp, Ep, alpha, risk) — the (m, C)
    labels and edges with the sentinel row appended (m + 1, C), α zeros
    (m + 1, C) and the initial risk.  E0 None: ``algorithm.init_edges(loss,
    Y)`` computed here, inside the caller's program."""
    E0 = algorithm.init_edges(loss, Y) if E0 is None else E0
    return (with_sentinel(Y), with_sentinel(E0), jnp.zeros((Y.shape[0] + 1, Y.shape[1]), Y.dtype),
            initial_risk(loss, E0, n_points))


def edge_change(delta, y_members, y_j):
    """δ_c·y_ic·y_jc: (C,) δ, (…, C) member labels, (C,) or (…, C) labels of j."""
    return delta * y_members * y_j


def risk_change(loss: Loss, e_old, e_new, valid, size):
    """Σ_{valid} (ψ(e_new) − ψ(e_old)) / size, size = m·C of the real examples
    (traced for a padded problem)."""
    return jnp.sum(jnp.where(valid, loss.psi(e_new) - loss.psi(e_old), 0.0)) / size


def live(t, n_steps, delta, n):
    """(δ, n_j) at step t, or (0, 0) — no change — for a padding step
    t ≥ n_steps (n_steps None: every step runs)."""
    if n_steps is None:
        return delta, n
    running = t < n_steps
    return jnp.where(running, delta, 0.0), jnp.where(running, n, 0)


def finish(alpha, Ep, risks, m: int, trace: bool) -> BoostResult:
    """The :class:`BoostResult` of the first m rows (the sentinel dropped)."""
    return BoostResult(alpha[:m], Ep[:m], risks if trace else None)
