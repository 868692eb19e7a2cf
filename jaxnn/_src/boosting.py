"""The boosting engine: one jitted ``lax.scan`` over rounds, all classes at once.

State (DESIGN.md §3): the edges E (m, C), e_ic = y_ic·H_c(x_i) (plus N³'s
initial offset), and the leveraging coefficients α (m, C).  One step
leverages one example j per class: it reads the edges of inv(j) from the
padded ``members (m, P)`` array, asks the algorithm for δ (C,), adds δ·r to
those edges and δ to α_j (paper 000 Alg. 1 steps I.1–I.3).

Choosers (the weak index chooser, paper 001 [I.0]):

* ``lazy``: j = t mod m (each example once per pass, paper 001 [I.0.a]);
* ``random``: a seeded permutation per pass;
* ``colored``: each example once per pass in the order of a colouring of the
  conflict graph, run as vectorised steps over the examples of a colour
  (:mod:`jaxnn._src.schedule`) — the same result as the sequential scan in
  that order, with ~100 steps instead of m = 10⁵;
* ``greedy``: per class, the j with the largest |η_j|/n_j (∝ |δ_j| for GNNB
  and N³, the first Newton step for UNN) — GNNB*, N³'s WEO.  η is kept up to
  date incrementally: a step changes the weights of inv(j), which enter the η
  of their own k neighbours; the values η/n sit in the leaves of a tournament
  tree (:mod:`jaxnn._src.maxtree`), so a step costs O(n_j·k·C·log m), not
  O(m·C) for an argmax over the table.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import maxtree
from jaxnn._src.losses import Loss

__all__ = ["BoostResult", "boost", "chooser_order", "CHOOSERS", "surrogate_risk"]

CHOOSERS = ("lazy", "random", "greedy", "colored")


class BoostResult(NamedTuple):
    """alpha (m, C); edges (m, C); trace (T,) total surrogate risk after each
    step, or None."""

    alpha: jax.Array
    edges: jax.Array
    trace: Optional[jax.Array]


def surrogate_risk(loss: Loss, edges) -> jax.Array:
    """Total surrogate risk (1/(mC)) Σ_{i,c} ψ(e_ic) — paper 000 eqs (1)–(2)."""
    return jnp.mean(loss.psi(edges))


def chooser_order(chooser: str, m: int, rounds: int, seed: int) -> np.ndarray:
    """The example sequence of the lazy and random choosers, (rounds,) int32."""
    if chooser == "lazy":
        return (np.arange(rounds) % m).astype(np.int32)
    if chooser == "random":
        rng = np.random.default_rng(seed)
        passes = -(-rounds // m)
        return np.concatenate([rng.permutation(m) for _ in range(passes)])[:rounds].astype(np.int32)
    # greedy: the sequence is decided inside the loop; only its length matters
    return np.zeros(rounds, dtype=np.int32)


def _pad_rows(a, value=0):
    return jnp.concatenate([a, jnp.full((1,) + a.shape[1:], value, a.dtype)], axis=0)


@functools.partial(jax.jit, static_argnames=("algorithm", "loss", "greedy", "trace"))
def boost(Y, E0, members, counts, neighbors, order, *, algorithm, loss: Loss, greedy: bool, trace: bool) -> BoostResult:
    """Run ``len(order)`` boosting steps on every class.

    Args:
      Y: (m, C) labels in {−1, +1}, float dtype of the computation.
      E0: (m, C) initial edges (``algorithm.init_edges``).
      members, counts: inverse neighbourhoods, (m, P) int32 padded with m, (m,).
      neighbors: (m, k) int32 neighbour indices (used by the greedy chooser).
      order: (T,) int32 example sequence (ignored by the greedy chooser).
      algorithm, loss: static; greedy, trace: static flags.

    Returns:
      :class:`BoostResult`.
    """
    m, C = Y.shape
    dtype = Y.dtype
    Yp = _pad_rows(Y)  # sentinel row m has y = 0, hence r = 0 on padding
    Ep0 = _pad_rows(E0)
    cls = jnp.arange(C)

    def risk_change(e_old, e_new, valid):
        return jnp.sum(jnp.where(valid, loss.psi(e_new) - loss.psi(e_old), 0.0)) / (m * C)

    if not greedy:

        def step(carry, j):
            Ep, alpha, risk = carry
            idx = members[j]  # (P,)
            r = Yp[idx] * Y[j][None, :]  # (P, C)
            e = Ep[idx]
            delta = algorithm.delta(loss, e, r, jnp.broadcast_to(counts[j], (C,)), m)
            e_new = e + delta[None, :] * r
            Ep = Ep.at[idx].add(delta[None, :] * r)
            alpha = alpha.at[j].add(delta)
            if trace:
                risk = risk + risk_change(e, e_new, (idx < m)[:, None])
            return (Ep, alpha, risk), risk

        carry0 = (Ep0, jnp.zeros((m, C), dtype), surrogate_risk(loss, E0))
        (Ep, alpha, _), risks = jax.lax.scan(step, carry0, order)
        return BoostResult(alpha, Ep[:m], risks if trace else None)

    # ---- greedy: per-class argmax of |η_j|/n_j, η kept incrementally -------
    # |η_jc| = |Σ_{i∈inv(j)} w(e_ic) y_ic| (y_jc = ±1 drops out of the score);
    # v = η/n lives in the leaves of a max tree over |v| (jaxnn._src.maxtree).
    # A changed weight of i enters v_j of its k neighbours j scaled by 1/n_j,
    # read per edge from inv_n_nbrs (one row per i: no random 1/n_j lookups).
    k = neighbors.shape[1]
    nbrs_p = _pad_rows(neighbors.astype(jnp.int32), m)  # (m+1, k)
    inv_n = 1.0 / jnp.maximum(counts, 1).astype(dtype)
    inv_n_nbrs = _pad_rows(inv_n[neighbors], 0.0)  # (m+1, k); 0 keeps padding at 0
    wy = loss.weight(E0) * Y
    eta0 = jax.ops.segment_sum(jnp.repeat(wy, k, axis=0), neighbors.reshape(-1), num_segments=m)
    tree0 = maxtree.build(eta0 * inv_n[:, None])

    def step(carry, _):
        Ep, alpha, tree, risk = carry
        jc = maxtree.argmax(tree)  # (C,)
        idx = members[jc].T  # (P, C)
        valid = idx < m
        r = Yp[idx, cls[None, :]] * Y[jc, cls][None, :]
        e = Ep[idx, cls[None, :]]
        delta = algorithm.delta(loss, e, r, counts[jc], m)
        e_new = e + delta[None, :] * r
        Ep = Ep.at[idx, cls[None, :]].add(delta[None, :] * r)
        alpha = alpha.at[jc, cls].add(delta)
        # weights of inv(j) changed: they enter the η of their k neighbours
        dw = jnp.where(valid, loss.weight(e_new) - loss.weight(e), 0.0) * Yp[idx, cls[None, :]]  # (P, C)
        targets = jnp.swapaxes(nbrs_p[idx], 1, 2).reshape(-1, C)  # (P·k, C)
        dv = (dw[:, :, None] * inv_n_nbrs[idx]).swapaxes(1, 2).reshape(-1, C)
        tree = maxtree.add(tree, targets, dv)
        if trace:
            risk = risk + risk_change(e, e_new, valid)
        return (Ep, alpha, tree, risk), risk

    carry0 = (Ep0, jnp.zeros((m, C), dtype), tree0, surrogate_risk(loss, E0))
    (Ep, alpha, _, _), risks = jax.lax.scan(step, carry0, order)
    return BoostResult(alpha, Ep[:m], risks if trace else None)
