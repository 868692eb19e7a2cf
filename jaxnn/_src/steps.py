"""The step core shared by every schedule (sequential, greedy, windowed, colored).

A boosting step leverages example j for every class c (paper 000 Alg. 1
steps I.1–I.3, paper 001 Alg. 1): δ_c from the algorithm on the edges of
inv(j), then e_ic += δ_c·y_ic·y_jc for i ∈ inv(j) and α_jc += δ_c.  The
schedules differ only in which examples a step takes and how it reaches
their members; what they share is written here once:

* :func:`labels` — the :class:`Labels` a run reads, the sentinel row m
  appended (y = 0 there, so a padded member's r = y_ic·y_jc is 0 and its
  update a no-op): y_ic, the labels δ reads (y_ic, or u_i·y_ic in a
  weighted fit) and the sample weights;
* :func:`start` — the :class:`State` before the first step: the initial
  edges E0 (``algorithm.init_edges``) and α with the sentinel row, and the
  starting risk;
* :func:`narrow_delta` — δ of a step at the narrowest compiled width ≥ n_j
  (:func:`step_widths`, :func:`narrowest`), from a function that gathers
  the edges and r of the step's first w members;
* :func:`edge_change` — δ_c·y_ic·y_jc for a step's members;
* :func:`apply` — a step's writes to the :class:`State`: the edges it
  moves (a scatter), α_j += δ and the trace's risk change
  (:func:`risk_change`, the change of (1/(mC)) Σ ψ(e_ic));
* :func:`live` — a padding step t ≥ n_steps leaves the state as it is;
* :func:`finish` — α and the edges of the m examples, the trace if asked.

Sample weights (:class:`Weights`) weigh each example's term of the surrogate
risk, (1/(mC)) Σ_i u_i Σ_c ψ(e_ic) with the u_i of mean 1: a step reads
r_i = u_i·y_ic·y_jc (the member's weight times its label product) and the
weighted count Σ_{i∈inv(j)} u_i in place of n_j, so every algorithm's δ is
that of the weighted risk; the edges still move by δ·y_ic·y_jc, and the
trace sums u_i·(ψ(e_new) − ψ(e_old)).  With every u_i = 1 each of these is
the unweighted quantity exactly.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import plan, programs
from jaxnn._src.losses import Loss
from jaxnn._src.losses import get as get_loss

__all__ = ["BoostResult", "Weights", "Labels", "State", "delta_counts", "surrogate_risk", "initial_edges", "with_sentinel",
           "initial_risk", "labels", "start", "narrow_delta", "edge_change", "apply", "risk_change", "live", "finish",
           "step_widths", "narrowest", "STEP_WIDTHS", "CHUNK", "NARROW_MIN_WORK"]


class BoostResult(NamedTuple):
    """alpha (m, C); edges (m, C); trace (T,) total surrogate risk after each
    step, or None."""

    alpha: jax.Array
    edges: jax.Array
    trace: Optional[jax.Array]


class Weights(NamedTuple):
    """The sample weights of a weighted run, on the device: u (M,) each
    example's weight in the surrogate risk, mean 1 over the m examples and 0
    on padding rows; mass (M,) Σ_{i∈inv(j)} u_i, the weighted count a step
    on j reads in place of n_j (:func:`jaxnn._src.boost_runs.member_weights`)."""

    u: jax.Array
    mass: jax.Array


def delta_counts(counts, weights: Weights | None):
    """The n_j that δ reads, (M,): the counts, or a weighted run's masses."""
    return counts if weights is None else weights.mass


def with_sentinel(a, value=0):
    """a (m, …) with one more row of ``value``: the sentinel row m."""
    return jnp.concatenate([a, jnp.full((1,) + a.shape[1:], value, a.dtype)], axis=0)


def initial_risk(loss: Loss, E0, n_points=None, u=None) -> jax.Array:
    """(1/(mC)) Σ_{i,c} ψ(e_ic) of the (m, C) initial edges E0, or, for a
    problem padded to shared sizes, the mean over its first ``n_points``
    (traced) rows only; with sample weights u (m,), Σ u_i ψ(e_ic) / (mC)."""
    psi = loss.psi(E0) if u is None else u[:, None] * loss.psi(E0)
    if n_points is None:
        return jnp.mean(psi)
    m, C = E0.shape
    return jnp.sum(jnp.where((jnp.arange(m) < n_points)[:, None], psi, 0.0)) / (n_points * C)


class Labels(NamedTuple):
    """The labels a run reads, each with the sentinel row m appended (y = 0
    there: a padded member's r and edge change are 0).

    Attributes:
      y: (m + 1, C) the labels y_ic in {−1, +1}.
      yu: (m + 1, C) the labels δ reads: ``y`` itself, or with sample
        weights u_i·y_ic.
      u: (m + 1,) the sample weights (0 on the sentinel), or None.
    """

    y: jax.Array
    yu: jax.Array
    u: Optional[jax.Array]


class State(NamedTuple):
    """What the steps change, carried from step to step.

    Attributes:
      edges: (m + 1, C) e_ic = y_ic·H_c(x_i) (plus N³'s initial offset),
        the sentinel row m last.
      alpha: (m + 1, C) the leveraging coefficients α, or None where a
        loop moves the edges only (a step's chunks of members, a window's
        local copy).
      risk: () the total surrogate risk (1/(mC)) Σ ψ(e_ic) after the last
        step (read for the trace).
    """

    edges: jax.Array
    alpha: Optional[jax.Array]
    risk: jax.Array


def labels(Y, weights: Weights | None = None) -> Labels:
    """The :class:`Labels` of (m, C) labels Y and the sample weights (None:
    unweighted): y_ic, the labels δ reads (u_i·y_ic with weights) and u, the
    sentinel row appended to each."""
    Yp = with_sentinel(Y)
    if weights is None:
        return Labels(Yp, Yp, None)
    return Labels(Yp, with_sentinel(Y * weights.u[:, None]), with_sentinel(weights.u))


def start(Y, E0, *, algorithm, loss: Loss, n_points=None, weights: Weights | None = None) -> State:
    """The :class:`State` before the first step: the (m, C) edges E0 with
    the sentinel row appended (m + 1, C), α zeros (m + 1, C) and the initial
    risk (over the first ``n_points`` rows, weighted by ``weights``' u).
    E0 None: ``algorithm.init_edges(loss, Y)`` computed here, inside the
    caller's program."""
    E0 = algorithm.init_edges(loss, Y) if E0 is None else E0
    u = None if weights is None else weights.u
    return State(with_sentinel(E0), jnp.zeros((Y.shape[0] + 1, Y.shape[1]), Y.dtype),
                 initial_risk(loss, E0, n_points, u))


def narrow_delta(algorithm, loss: Loss, widths: tuple, n, gather, size, *operands, dead=None):
    """δ (C,) of one step from ``algorithm.delta`` on its members' edges,
    computed at the narrowest ``widths[t]`` ≥ n (:func:`narrowest`: only that
    width runs).  ``gather(w, *operands)`` → (e, r, counts): the (w, C)
    edges of the step's first w members, their r = y_ic·y_jc
    (u_i·y_ic·y_jc with weights) and the (C,) n_j δ reads
    (:func:`delta_counts`), from the step's ``operands`` (its edges and
    example, handed to the switch's branches); ``size`` the examples' m.
    ``dead``: :func:`padding`'s answer for the step (None: none is), δ = 0
    there from an empty last branch of the switch — no root search."""

    def at(w):
        return lambda *ops: algorithm.delta(loss, *gather(w, *ops), size)

    def nothing(edges, *rest):  # a padding step's δ = 0, (C,)
        return jnp.zeros(edges.shape[-1:], edges.dtype)

    return narrowest(widths, n, [at(w) for w in widths], *operands, dead=None if dead is None else (dead, nothing))


def edge_change(delta, y_members, y_j=None):
    """δ_c·y_ic·y_jc: (C,) or (…, C) δ, (…, C) member labels y_ic and (C,) or
    (…, C) labels y_jc of j — or, with ``y_j`` None, ``y_members`` the
    products r_i = y_ic·y_jc a step computed already for δ."""
    return delta * y_members if y_j is None else delta * y_members * y_j


def risk_change(loss: Loss, e_old, e_new, valid, size, u=None):
    """Σ_{valid} (ψ(e_new) − ψ(e_old)) / size, size = m·C of the real examples
    (traced for a padded problem); with the members' sample weights u
    (broadcast against the edges), Σ_{valid} u·(ψ(e_new) − ψ(e_old)) / size."""
    change = loss.psi(e_new) - loss.psi(e_old)
    if u is not None:  # a zero weight's term is gone, even where its ψ overflowed
        valid, change = valid & (u > 0), u * change
    return jnp.sum(jnp.where(valid, change, 0.0)) / size


def apply(loss: Loss, state: State, idx=None, change=None, *, valid=None, size=None, u=None, old=None,
          trace: bool = False, unique: bool = False, at=None, delta=None) -> State:
    """A step's writes to ``state``: the edges at ``idx`` (rows, or a tuple
    (rows, classes) of pairs) move by ``change`` (:func:`edge_change`); with
    ``trace`` the risk adds :func:`risk_change` over the ``valid`` ones (m·C
    = ``size``, the members' sample weights ``u``); α[``at``] += ``delta``
    where ``at`` is given.  ``old``: the edges at ``idx`` if the step read
    them already; ``unique``: the positions are distinct (a sentinel's
    repeated writes excepted, whose change is 0), written with a set rather
    than an add.  ``idx`` None: α alone."""
    edges, risk = state.edges, state.risk
    if idx is not None:
        e = edges[idx] if old is None else old
        if trace:
            risk = risk + risk_change(loss, e, e + change, valid, size, u)
        edges = edges.at[idx].set(e + change) if unique else edges.at[idx].add(change)
    alpha = state.alpha if at is None else state.alpha.at[at].add(delta)
    return State(edges, alpha, risk)


def padding(t, n_steps):
    """Whether step t is a padding step, t ≥ n_steps (a traced bool), or None
    where every step runs (n_steps None)."""
    return None if n_steps is None else t >= n_steps


def live(t, n_steps, delta, n):
    """(δ, n_j) at step t, or (0, 0) — no change — for a padding step
    (:func:`padding`)."""
    dead = padding(t, n_steps)
    if dead is None:
        return delta, n
    return jnp.where(dead, 0.0, delta), jnp.where(dead, 0, n)


def finish(state: State, risks, m: int, trace: bool) -> BoostResult:
    """The :class:`BoostResult` of the first m rows of ``state`` (the
    sentinel dropped), the (T,) ``risks`` if ``trace``."""
    return BoostResult(state.alpha[:m], state.edges[:m], risks if trace else None)


def surrogate_risk(loss: Loss | str, edges) -> jax.Array:
    """Total surrogate risk (1/(mC)) Σ_{i,c} ψ(e_ic) — paper 000 eqs (1)–(2).

    ``loss``: a :class:`Loss` or a name; ``edges``: the (m, C) edges
    e_ic = y_ic·H_c(x_i) (any shape), finite where they are concrete."""
    loss = get_loss(loss)
    if not isinstance(edges, jax.core.Tracer):
        if edges is None or isinstance(edges, (str, bytes, dict, set)):
            raise TypeError(f"edges must be an array of numbers, got {type(edges).__name__}")
        arr = np.asarray(edges)
        if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)) or arr.size == 0:
            raise TypeError(f"edges must be a non-empty array of real numbers, got dtype {arr.dtype}, shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("edges contain NaN or infinite values")
    return jnp.mean(loss.psi(edges))


@programs.jit(static_argnames=("algorithm", "loss"))
def initial_edges(Y, *, algorithm, loss: Loss) -> jax.Array:
    """``algorithm.init_edges(loss, Y)`` (m, C) as one compiled program, kept
    across processes (:mod:`jaxnn._src.programs`): run eagerly, N³'s
    class-balanced edges would compile ~10 small programs for each new
    shape.  (:func:`boost` computes them inside its own program when given
    ``E0=None``.)"""
    return algorithm.init_edges(loss, Y)


#: widths a step's δ is compiled at, below the padded P (see :func:`step_widths`)
STEP_WIDTHS = (16, 64, 256)
#: members updated per inner-loop iteration of a step
CHUNK = 16

#: padded work (steps × P × C, × k for greedy, × the calls of one compiled
#: program) from which narrowing pays for its compilation: the narrowed step
#: (a switch over widths) compiles longer than the plain one, while a
#: padded edge costs little
NARROW_MIN_WORK = 1 << 24


def chunk_width(widths: tuple, P: int) -> int:
    """Members a step updates at a time: :data:`CHUNK` where the step has
    several widths (its n_j ≤ P varies), else the whole padded row P."""
    return CHUNK if len(widths) > 1 else P


def over_chunks(n, chunk: int, P: int, update, state):
    """``update(start, state)`` over the ⌈n/chunk⌉ chunks of a step's n
    members (start = c·chunk, traced), or once, unlooped, with start None
    when the chunk is the whole row (chunk = P: an example with n_j = 0 then
    moves by δ = 0, nothing)."""
    if chunk == P:
        return update(None, state)
    return jax.lax.fori_loop(0, (n + chunk - 1) // chunk, lambda c, s: update(c * chunk, s), state)


def step_widths(P: int, work: int | None = None, narrow: bool | None = None) -> tuple:
    """The widths at which a sequential or greedy step computes δ: those of
    :data:`STEP_WIDTHS` at most P/4, then P.  A step on example j runs at
    the narrowest width ≥ n_j — the rest of members[j] is padding — so the
    hubs of a kNN graph (P = 502 at m = 10⁵, k = 10, while the median n_j is
    4) do not make every step read P·C edges.  A single width means one
    plain full-width step: when P < 64 (the switch and loop would cost more
    than the padding they save), when the padded ``work`` of the call is
    under :data:`NARROW_MIN_WORK` (the extra compilation would cost more
    than the run saves), or when ``narrow`` is False (the plan's decision;
    None: the plan's rule where computations run now,
    :func:`jaxnn._src.plan.narrow_steps` — a GPU or TPU reads a padded row in one
    kernel; control flow costs it more)."""
    if (work is not None and work < NARROW_MIN_WORK) or not (plan.narrow_steps() if narrow is None else narrow):
        return (max(int(P), 1),)
    return tuple(w for w in STEP_WIDTHS if 4 * w <= P) + (max(int(P), 1),)


def narrowest(widths: tuple, n, delta_fns, *operands, dead=None):
    """δ from ``delta_fns[t](*operands)`` for the narrowest ``widths[t]`` ≥ n
    (a ``lax.switch``: only that one runs; a plain call for one width).
    ``dead``: None, or (a traced bool, a function of the operands giving
    δ = 0): where the bool is true that function runs instead, as a last
    branch of the switch (a padding step: no root search)."""
    if dead is None and len(delta_fns) == 1:
        return delta_fns[0](*operands)
    tier = jnp.searchsorted(jnp.asarray(widths, jnp.int32), n.astype(jnp.int32))
    if dead is None:
        return jax.lax.switch(tier, delta_fns, *operands)
    padding, nothing = dead
    return jax.lax.switch(jnp.where(padding, len(delta_fns), tier), [*delta_fns, nothing], *operands)
