"""The boosting engine: one jitted ``lax.scan`` over rounds, all classes at once.

State (docs/design.md, *The step core*): the edges E (m, C), e_ic = y_ic·H_c(x_i) (plus N³'s
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
  and N³; for UNN and UNN-fast the same gradient score, not their own δ,
  which would need a root per example) — GNNB*, N³'s WEO.  η is kept
  up to date incrementally (and recomputed from the edges every m steps, as
  float32 increments drift): a step changes the weights of inv(j), which enter
  the η of their own k neighbours; the values η/n sit in the leaves of a
  tournament tree (:mod:`jaxnn._src.maxtree`), so a step costs
  O(Σ_c n_jc·k·log m), not O(m·C) for an argmax over the table.  Ties in the
  stored float go to the lowest index; scores that are equal in exact
  arithmetic (e.g. (w+w+w)·(1/3) against w) can differ by an ulp, and then
  the larger stored one wins.
"""

from __future__ import annotations


import jax
import jax.numpy as jnp

from jaxnn._src import maxtree, plan, programs, steps
from jaxnn._src.losses import Loss
from jaxnn._src.steps import BoostResult, step_widths

__all__ = ["boost", "boost_calls", "GREEDY_PAIRS"]

#: (member, class) pairs a greedy step updates per inner-loop iteration: one
#: iteration for the ~100 pairs of a random graph's step at k = C = 10 (64,
#: 128 and 256 measured alike there and on the 10⁵-point set's hubs)
GREEDY_PAIRS = 128
def _work(Y, members, neighbors, order, greedy: bool, calls: int) -> int:
    """The padded work (steps × P × C, × k for greedy) of ``calls`` runs of
    :func:`boost` on these arguments' shapes, against which narrowing its
    steps is weighed (:func:`step_widths`)."""
    return calls * order.shape[0] * members.shape[1] * Y.shape[1] * (neighbors.shape[1] if greedy else 1)


def boost_calls(Y, members, neighbors, order, *, greedy: bool, calls: int, narrow: bool | None = None) -> int:
    """``calls`` as a caller of :func:`boost` passes it: 1 where its runs
    narrow the steps as one run would (:func:`step_widths`), else
    ``calls`` — so that a caller that runs the compiled program several
    times (``select``'s candidates) and one that runs it once (the fit
    after it) share it unless their narrowing differs (``calls`` is static:
    part of the program's key)."""
    narrow = plan.narrow_steps() if narrow is None else narrow
    P = members.shape[1]
    many, one = (steps.step_widths(P, work=_work(Y, members, neighbors, order, greedy, n), narrow=narrow)
                 for n in (calls, 1))
    return 1 if many == one else calls


@programs.jit(static_argnames=("algorithm", "loss", "greedy", "trace", "calls", "narrow"))
def boost(Y, E0, members, counts, neighbors, order, n_points=None, n_steps=None, weights=None, *, algorithm,
          loss: Loss, greedy: bool, trace: bool, calls: int = 1, narrow: bool | None = None) -> BoostResult:
    """Run ``len(order)`` boosting steps on every class.

    A step reads the edges of inv(j) at the narrowest of
    :func:`step_widths` ≥ n_j (a ``lax.switch`` that returns δ only, so the
    state is never copied) and writes them back ``CHUNK`` members at a time
    (a ``fori_loop`` of ⌈n_j/CHUNK⌉ iterations, in place; greedy:
    :data:`GREEDY_PAIRS` (member, class) pairs at a time, see
    :func:`_boost_greedy`): the cost of a step follows n_j, not the largest
    inverse neighbourhood P (on the exact graph of the 10⁵-point set, P =
    502 while most n_j are far smaller; the greedy chooser's pairs gather
    less than its 16-member chunks would; ``bench_fit.HubSteps``).

    Args:
      Y: (m, C) labels in {−1, +1}, float dtype of the computation.
      E0: (m, C) initial edges, or None for ``algorithm.init_edges(loss, Y)``
        computed inside the program (eagerly, N³'s would compile ~10 small
        programs for each new shape; GNNB's zeros one).
      members, counts: inverse neighbourhoods, (m, P) int32 padded with m, (m,).
      neighbors: (m, k) int32 neighbour indices, read by the greedy chooser
        only (None otherwise: nothing compiles per k).
      order: (T,) int32 example sequence (ignored by the greedy chooser).
      n_points, n_steps: optional int32 scalars (traced: a new value compiles
        nothing) for a problem padded to shared sizes, as ``fit`` pads small
        ones (:func:`jaxnn._src.shared_sizes.shared_rows`): only the first n_points
        rows are examples — the others have n_j = 0, y = 0 and appear in no
        inverse neighbourhood — and only the first n_steps steps run, the
        rest leaving the state as it is.  The algorithm's m (UNN's smoothing)
        and the trace's mean are then over the n_points examples.
      weights: None, or the :class:`~jaxnn._src.steps.Weights` (u, mass)
        of a weighted risk (0 on padding rows).
      algorithm, loss: static; greedy, trace: static flags.
      calls: static, how many times the caller runs this compiled program
        (``select``: once per candidate k and pass — each loss compiles its
        own; ``fit_split``: once per block): narrowing the steps
        (:func:`step_widths`) is weighed against the padded work of them
        all, not of one call.  Static, so part of the compiled
        program's key: callers that share a program pass the same value.
      narrow: static, whether steps may be narrowed (the plan's; None: the
        plan's rule, :func:`jaxnn._src.plan.narrow_steps`).

    Returns:
      :class:`BoostResult`.
    """
    m, C = Y.shape
    P = members.shape[1]
    narrow = plan.narrow_steps() if narrow is None else narrow
    widths = step_widths(P, work=_work(Y, members, neighbors, order, greedy, calls), narrow=narrow)
    size = m if n_points is None else n_points  # the examples' m (a padded problem: traced)
    labels = steps.labels(Y, weights)  # sentinel row m has y = 0, hence r = 0 on padding
    state0 = steps.start(Y, E0, algorithm=algorithm, loss=loss, n_points=n_points, weights=weights)
    if greedy:
        return _boost_greedy(Y, labels, state0, members, counts, neighbors, order, n_steps, widths, size, narrow,
                             weights, algorithm=algorithm, loss=loss, trace=trace)
    n_delta = steps.delta_counts(counts, weights)
    chunk = steps.chunk_width(widths, P)
    members = jnp.pad(members, ((0, 0), (0, -P % chunk)), constant_values=m)

    def member_chunk(j, start):
        """members[j, start:start + chunk] (the whole row when start is None),
        by slicing: a gather of scattered positions costs 4× more here."""
        return members[j] if start is None else jax.lax.dynamic_slice(members, (j, start), (1, chunk))[0]

    def gather(w, Ep, j):  # the edges, r and n_j of j's first w members
        idx = members[j, :w]
        return Ep[idx], labels.yu[idx] * Y[j][None, :], jnp.broadcast_to(n_delta[j], (C,))

    def step(state, tj):
        t, j = tj

        delta = steps.narrow_delta(algorithm, loss, widths, counts[j], gather, size, state.edges, j,
                                   dead=steps.padding(t, n_steps))
        delta, n = steps.live(t, n_steps, delta, counts[j])

        def update(start, moving):
            idx = member_chunk(j, start)  # (chunk,)
            return steps.apply(loss, moving, idx, steps.edge_change(delta, labels.y[idx], Y[j]),
                               valid=(idx < m)[:, None], size=size * C,
                               u=None if labels.u is None else labels.u[idx][:, None], trace=trace)

        moved = steps.over_chunks(n, chunk, P, update, state._replace(alpha=None))  # the chunks move the edges only
        state = steps.apply(loss, moved._replace(alpha=state.alpha), at=j, delta=delta)
        return state, state.risk

    state, risks = jax.lax.scan(step, state0, (jnp.arange(order.shape[0], dtype=jnp.int32), order))
    return steps.finish(state, risks, m, trace)


def _boost_greedy(Y, labels, state0, members, counts, neighbors, order, n_steps, widths, size, narrow, weights, *, algorithm,
                  loss, trace):
    """:func:`boost`'s greedy chooser (traced inside it): per class, the j
    with the largest |η_j|/n_j.

    |η_jc| = |Σ_{i∈inv(j)} w(e_ic) y_ic| (y_jc = ±1 drops out of the score);
    v = η/n lives in the leaves of a max tree over |v| (:mod:`maxtree`).  A
    step's update runs over the (member, class) pairs of inv(j_c) for every
    c, ranked class by class (members[j] lists inv(j) first, padding after),
    :data:`GREEDY_PAIRS` at a time: it costs Σ_c n_jc pairs, not C·P padded
    slots (on a random graph, k = 10: ~100 pairs, not 280).  A changed weight
    of member i enters v_j of its k neighbours j scaled by 1/n_j, read per
    edge from inv_n_nbrs (one row per i: no random 1/n_j lookups).  With
    sample weights η sums u_i·w(e_ic)·y_ic and n_j is the weighted count.
    """
    m, C = Y.shape
    P = members.shape[1]
    # gathers and scatters index with unsigned integers: with signed ones XLA
    # first maps negative indices to the end (and the tree's node // 8 keeps
    # the sign), which costs greedy steps time
    cls = jnp.arange(C, dtype=jnp.uint32)
    Yp, Yu, Up = labels  # sentinel row m: y = 0, hence no change there
    E0 = state0.edges[:m]
    n_delta = steps.delta_counts(counts, weights)
    k = neighbors.shape[1]
    nbrs_p = steps.with_sentinel(neighbors.astype(jnp.int32), m)  # (m+1, k)
    inv_n = 1.0 / jnp.where(n_delta > 0, n_delta, 1).astype(Y.dtype)
    inv_n_nbrs = steps.with_sentinel(inv_n[neighbors], 0.0)  # (m+1, k); 0 keeps padding at 0

    def scores(E):
        """The tree of v = η/n for edges E (m, C): η_j = Σ_{i: j ∈ NN(i)} w_i y_i,
        one neighbour column at a time (a scatter of the (m, C) table per
        column, not of an (m·k, C) copy: 381 MB at m = 10⁶, C = 10)."""
        wy = loss.weight(E) * (Y if Up is None else Yu[:m])
        eta = jax.lax.fori_loop(0, k, lambda t, eta: eta.at[neighbors[:, t]].add(wy), jnp.zeros_like(wy))
        return maxtree.build(eta * inv_n[:, None])

    # all pairs in one update where steps are not narrowed (a GPU: no inner loop)
    Q = min(GREEDY_PAIRS, P * C) if len(widths) > 1 or narrow else P * C
    looped = Q < P * C

    def gather(w, Ep, jc):  # per class c the edges, r and n_j of j_c's first w members
        idx = members[jc, :w].T.astype(jnp.uint32)  # (w, C)
        return Ep[idx, cls[None, :]], Yu[idx, cls[None, :]] * Y[jc, cls][None, :], n_delta[jc]

    def step(carry, t):
        state, tree = carry
        # v is updated by adding changes; in float32 their rounding piles up where
        # weights shrink by orders of magnitude (UNN, exponential loss: picks 4.7 %
        # below the best score after 20 passes), so v is recomputed every m steps
        tree = jax.lax.cond((t > 0) & (t % size == 0), lambda: scores(state.edges[:m]), lambda: tree)
        jc = maxtree.argmax(tree)  # (C,) uint32

        delta = steps.narrow_delta(algorithm, loss, widths, jnp.max(counts[jc]), gather, size, state.edges, jc)
        delta, n = steps.live(t, n_steps, delta, counts[jc])
        ends = jnp.cumsum(n)  # pair ranks [ends[c] − n[c], ends[c]) are class c's
        yj = Y[jc, cls]  # (C,)

        def update(q, carry):
            moving, tree = carry
            g = q * Q + jnp.arange(Q, dtype=jnp.int32)  # (Q,) pair ranks
            valid = g < ends[-1]
            c = jnp.minimum(jnp.sum(g[:, None] >= ends[None, :], axis=1), C - 1).astype(jnp.uint32)
            slot = (g - (ends[c] - n[c])).astype(jnp.uint32)
            i = jnp.where(valid, members[jc[c], jnp.minimum(slot, P - 1)], m).astype(jnp.uint32)  # (Q,); m: sentinel
            y = Yp[i, c]  # 0 on the sentinel: no change there
            e = moving.edges[i, c]
            change = steps.edge_change(delta[c], y, yj[c])
            # pairs are distinct (the sentinel's writes are no-ops)
            moving = steps.apply(loss, moving, (i, c), change, valid=valid, size=size * C,
                                 u=None if Up is None else Up[i], old=e, trace=trace, unique=True)
            # weights of inv(j) changed: they enter the η of their k neighbours
            dw = jnp.where(valid, loss.weight(e + change) - loss.weight(e), 0.0) * (y if Up is None else Yu[i, c])
            dv = dw[:, None] * inv_n_nbrs[i]  # (Q, k)
            tree = maxtree.add_pairs(tree, nbrs_p[i].reshape(-1), jnp.repeat(c, k), dv.reshape(-1))
            return moving, tree

        carry = (state._replace(alpha=None), tree)  # the pairs move the edges only
        if looped:
            carry = jax.lax.fori_loop(0, (ends[-1] + Q - 1) // Q, update, carry)
        else:
            carry = update(0, carry)
        moved, tree = carry
        state = steps.apply(loss, moved._replace(alpha=state.alpha), at=(jc, cls), delta=delta)
        return (state, tree), state.risk

    (state, _), risks = jax.lax.scan(step, (state0, scores(E0)), jnp.arange(order.shape[0], dtype=jnp.int32))
    return steps.finish(state, risks, m, trace)
