"""Carrying out a :class:`~jaxnn._src.plan.Plan`: the one place that calls the
engines (:func:`~jaxnn._src.boosting.boost`, :func:`~jaxnn._src.window.boost_windowed`,
:func:`~jaxnn._src.schedule.boost_colored`).

Each schedule is an :class:`Engine`, a pair of pure functions (as optax's
``GradientTransformation`` pairs ``init`` and ``update``): ``prepare`` lays
the graph out on the host as the schedule reads it (the inverse
neighbourhoods, the windows, the colour schedule; padded to shared sizes
where the plan says) and ``run`` runs the compiled steps on it.
:data:`ENGINES` holds them by :attr:`Plan.schedule <jaxnn._src.plan.Plan.schedule>`;
every run goes through one padded runner (the labels and edges padded →
``prepare`` → ``run`` → the result cut back), which

* :func:`run` uses for one neighbour graph (``fit``, ``posterior="auto"``'s
  auxiliary fit, ``fit_split`` with one block),
* :func:`run_blocks` for the n graphs of ``fit_split``'s feature blocks,
* :func:`pass_runner` for one pass at a time from given edges (``select``,
  which scores every number of passes from one run; the state stays padded
  between passes), with :func:`select_shapes` the padded shapes its
  candidate ks share.

A plan with ``shared`` set pads the problem to sizes that nearby m share
(:mod:`jaxnn._src.shared_sizes`), so that refits of nearby sizes —
cross-validation folds, ``posterior="auto"``'s auxiliary fit,
:func:`jaxnn.select` — reuse one compiled program; the result is that of
the unpadded run, cut back on the host.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import sharding, window
from jaxnn._src.boosting import boost, boost_calls
from jaxnn._src.inverse import inverse_counts, inverse_neighbors
from jaxnn._src.plan import Plan, chooser_order, chooser_orders
from jaxnn._src.progress import logger, progress_wanted, steps_done
from jaxnn._src.schedule import boost_colored, color_schedule, padded_schedule, stack_schedules
from jaxnn._src.shared_sizes import (PaddedShapes, in_blocks, padded_rows, program_argument, shared_k, shared_rows, shared_width,
                                     to_device)
from jaxnn._src.steps import BoostResult, Weights, initial_edges

__all__ = ["run", "run_blocks", "pass_runner", "select_shapes", "shared_shapes", "member_weights", "Engine", "Prepared",
           "ENGINES"]


#: the most steps (per class) one compiled run takes: longer runs go on from
#: the edges, a segment of whole passes at a time, so that memory (the example
#: order, the windowed layout, the colored scan's steps) does not grow with rounds
SEGMENT_STEPS = 1 << 21


def segment_rounds(m: int) -> int:
    """Steps of one segment of a long run on m examples: whole passes, about
    :data:`SEGMENT_STEPS` (at least one pass)."""
    return max(1, SEGMENT_STEPS // m) * m


def run(plan: Plan, Y_np, nbrs, dtype, *, algorithm, loss, rounds: int, seed: int, trace: bool, like=None,
        home=None, Y=None, weights=None, sized_k=None):
    """Boost T = ``rounds`` steps per class on the (m, k) graph ``nbrs`` as
    ``plan`` says, labels Y_np (m, C) ±1 on the host, in ``dtype``.

    A run of more than :func:`segment_rounds` (m) steps goes on from the
    edges one segment of whole passes after another (the same steps in the
    same order as one run: the lazy order, the random chooser's permutations
    from one generator, the greedy chooser's scores recomputed from the edges
    every m steps, the colored schedule's passes), so memory does not grow
    with ``rounds`` (the trace, when asked for, holds T values).

    ``like``: the padded shapes of another run whose compiled program this
    one is to reuse (only read by a shared plan).  ``home``: the device the
    results of a sharded run are gathered on (default: the first device).
    ``Y``: Y_np already on the device in ``dtype``, if the caller has it
    (an unpadded run then does not copy the labels again).  ``weights``:
    None, or the examples' sample weights (m,) on the host, of mean 1 —
    the run boosts the weighted surrogate risk (:class:`steps.Weights`;
    a plan for weights, ``make_plan(weighted=True)``, has no windows).
    ``sized_k``: the k a padded run's shapes are sized for (None: the
    graph's; :class:`Engine`).

    Returns (:class:`BoostResult` of the m examples and C classes — α (m, C),
    edges, the trace (T,) or None —, the padded shapes used or None)."""
    m = nbrs.shape[0]
    parts = chooser_orders(plan.chooser, m, rounds, seed, segment_rounds(m))
    steps, order = next(parts)
    result, shapes = _run_segment(plan, Y_np, nbrs, dtype, order, steps, None, algorithm=algorithm, loss=loss,
                                  trace=trace, like=like, home=home, Y=Y, weights=weights, sized_k=sized_k)
    done, alpha, traces = steps, result.alpha, [result.trace]
    for steps, order in parts:  # a long run: the next segment from the edges
        steps_done(done, rounds, "fit: %d of %d steps done", done, rounds)  # once a segment
        result, _ = _run_segment(plan, Y_np, nbrs, dtype, order, steps, result.edges, algorithm=algorithm, loss=loss,
                                 trace=trace, like=shapes, home=home, Y=Y, weights=weights, sized_k=sized_k)
        done, alpha = done + steps, alpha + result.alpha
        traces.append(result.trace)
    if len(traces) == 1:
        return result, shapes
    return BoostResult(alpha, result.edges, jnp.concatenate(traces) if trace else None), shapes


def _run_segment(plan: Plan, Y_np, nbrs, dtype, order, rounds: int, E0, *, algorithm, loss, trace: bool, like, home,
                 Y=None, weights=None, sized_k=None):
    """:func:`run`'s work for ``rounds`` steps in the example ``order``
    (None for the colored schedule, which runs rounds/m passes) from the
    edges E0 (m, C) (None: the algorithm's initial edges)."""
    return _padded_run(plan, Y_np, nbrs, dtype, order, rounds, E0, weights, algorithm=algorithm, loss=loss,
                       trace=trace, like=like, home=home, Y=Y, announce=True, sized_k=sized_k)


class Prepared(NamedTuple):
    """What an engine's ``prepare`` leaves for its ``run``.

    Attributes:
      arrays: the schedule's device arrays (its own NamedTuple: the inverse
        neighbourhoods and the order, the windows, the colour schedule), with
        a leading block axis for several graphs.
      static: the schedule's static setting (the windowed scan's largest
        n_j, the colored schedule's passes), or None.
      shapes: the :class:`PaddedShapes` the graph was padded to, or None.
      trace_steps: the trace's entries for the real steps (a padded run's
        trace is cut to them).
      note: a progress message (``logger.info`` arguments) about the layout,
        or None.
    """

    arrays: Any
    static: Any
    shapes: PaddedShapes | None
    trace_steps: int
    note: tuple | None = None


class Engine(NamedTuple):
    """A schedule's two pure functions.

    ``prepare(plan, nbrs, order, steps, pad_to, *, n_classes, sized_k)`` →
    :class:`Prepared`: the (m, k) graph ``nbrs`` — or (n, m, k), n blocks —
    laid out for ``steps`` steps per class in the example ``order`` (steps,)
    (None for the colored schedule, which runs steps/m passes), on the
    device; ``pad_to`` None (the problem's own sizes) or the
    :class:`PaddedShapes` to pad to at least, its ``rows`` those of the
    labels the run gets; ``n_classes`` the C the colored schedule's steps
    are sized for; ``sized_k`` the k the padded shapes are sized for — the
    sequential scan's width floor, the windowed scan's windows — (None: the
    graph's k; a k-NN graph's first columns sized for a larger k share its
    program).

    ``run(prepared, Y, E0, weights, *, algorithm, loss, trace, calls,
    narrow)`` → :class:`BoostResult` of the padded rows: the compiled steps
    on labels Y (rows, C), from edges E0 (None: the initial edges, computed
    in the program), with sample weights (:class:`steps.Weights` or None).
    """

    prepare: Callable[..., Prepared]
    run: Callable[..., BoostResult]


class _ScanArrays(NamedTuple):
    """The sequential and greedy scans' arrays: the inverse neighbourhoods
    (members (m, P), counts (m,)), the neighbours (m, k) (greedy only, else
    None), the order (T,), and n_points, n_steps (traced int32 scalars of a
    padded run, else None)."""

    members: jax.Array
    counts: jax.Array
    neighbors: jax.Array | None
    order: jax.Array
    n_points: jax.Array | None
    n_steps: jax.Array | None


class _WindowArrays(NamedTuple):
    """The windowed scan's arrays: counts (m,), the :class:`window.WindowLayout`,
    n_points (traced of a padded run, else None)."""

    counts: jax.Array
    layout: window.WindowLayout
    n_points: jax.Array | None


class _ColorArrays(NamedTuple):
    """The colored schedule's arrays: counts (m,), the
    :class:`schedule.ColorSchedule`, n_points and n_steps (traced of a padded
    run, else None)."""

    counts: jax.Array
    schedule: Any
    n_points: jax.Array | None
    n_steps: jax.Array | None


def _prepare_scan(plan: Plan, nbrs, order, steps: int, pad_to, *, n_classes: int, sized_k=None,
                  greedy: bool) -> Prepared:
    """The scan's :class:`_ScanArrays`: the padded (m, P) inverse
    neighbourhoods at :func:`shared_sizes.shared_width` (P) (refits of other
    data share the width), or padded as :func:`shared_shapes` says; n blocks
    stacked at one width (:func:`_blocks_shapes` where padded)."""
    order = np.asarray(order)
    if nbrs.ndim == 3:
        return _prepare_scan_blocks(nbrs, order, pad_to, greedy=greedy)
    m, k = nbrs.shape
    counts = inverse_counts(nbrs, m)
    if pad_to is None:
        inv = inverse_neighbors(nbrs, m, width=shared_width(counts.max()))
        arrays = _ScanArrays(inv.members, inv.counts, to_device(nbrs) if greedy else None, to_device(order), None, None)
        return Prepared(arrays, None, None, order.size)
    shapes = shared_shapes(m, order.size, counts.max(), sized_k or k, rows=pad_to.rows).at_least(pad_to)
    inv, neighbors = padded_graph(nbrs, shapes.rows, shapes.width, greedy=greedy)
    arrays = _ScanArrays(inv.members, inv.counts, neighbors, program_argument(padded_rows(order, shapes.steps)),
                         program_argument(m, np.int32), program_argument(order.size, np.int32))
    return Prepared(arrays, None, shapes, order.size)


def _prepare_scan_blocks(nbrs, order, pad_to, *, greedy: bool) -> Prepared:
    """:func:`_prepare_scan` of n blocks' (n, m, k) graphs: unpadded, one
    width :func:`shared_sizes.shared_width` (the largest P) for all blocks;
    padded, the examples to ``pad_to.rows``, the steps to
    :func:`shared_sizes.in_blocks` (no-ops), the members' width to the
    largest block's P, at least 2k, rounded up to two significant bits (16,
    24, 32, 48, …: folds' P straddle finer steps)."""
    n, m, k = nbrs.shape
    counts = np.stack([inverse_counts(nbrs[b], m) for b in range(n)])
    if pad_to is None:
        P = shared_width(counts.max())
        members = np.stack([np.asarray(inverse_neighbors(nbrs[b], m, width=P).members) for b in range(n)])
        arrays = _ScanArrays(to_device(members), to_device(counts), to_device(nbrs, np.int32) if greedy else None,
                             to_device(order), None, None)
        return Prepared(arrays, None, None, order.size)
    shapes = PaddedShapes(rows=pad_to.rows, steps=in_blocks(order.size),
                          width=in_blocks(max(int(counts.max()), 2 * k), 1, bits=2))
    graphs = [padded_graph(nbrs[b], shapes.rows, shapes.width, greedy=greedy) for b in range(n)]
    members, counts = (program_argument(np.stack([np.asarray(inv[i]) for inv, _ in graphs])) for i in range(2))
    neighbors = program_argument(np.stack([np.asarray(nb) for _, nb in graphs])) if greedy else None
    arrays = _ScanArrays(members, counts, neighbors, program_argument(padded_rows(order, shapes.steps)),
                         program_argument(m, np.int32), program_argument(order.size, np.int32))
    return Prepared(arrays, None, shapes, order.size)


def _run_scan(prepared: Prepared, Y, E0, weights, *, algorithm, loss, trace: bool, calls: int, narrow: bool,
              greedy: bool) -> BoostResult:
    """:func:`boost` on :class:`_ScanArrays`, or :func:`_boost_blocks` on
    stacked ones (no sample weights)."""
    a = prepared.arrays
    if a.members.ndim == 3:
        return _boost_blocks(Y, E0, a.members, a.counts, a.neighbors, a.order, a.n_points, a.n_steps,
                             algorithm=algorithm, loss=loss, greedy=greedy, trace=trace, narrow=narrow)
    calls = boost_calls(Y, a.members, a.neighbors, a.order, greedy=greedy, calls=calls, narrow=narrow)
    return boost(Y, E0, a.members, a.counts, a.neighbors, a.order, a.n_points, a.n_steps, weights, algorithm=algorithm,
                 loss=loss, greedy=greedy, trace=trace, calls=calls, narrow=narrow)


def _prepare_windowed(plan: Plan, nbrs, order, steps: int, pad_to, *, n_classes: int, sized_k=None) -> Prepared:
    """The windowed scan's :class:`_WindowArrays`: the
    :func:`window.window_layout` of ``order``, windows of
    :func:`window.window_steps` (C, ``sized_k`` or k) steps; padded, as
    :func:`windowed_layout` pads it (windows of the shared k's length —
    :func:`shared_sizes.shared_k` of ``sized_k`` or k), the counts to its rows.  ``static``: the largest n_j the steps are compiled
    for (:func:`window.shared_max_count`)."""
    m, k = nbrs.shape
    order = np.asarray(order)
    counts = inverse_counts(nbrs, m)
    if pad_to is None:
        layout = window.window_layout(nbrs, order, window.window_steps(n_classes, sized_k or k))
        return Prepared(_WindowArrays(to_device(counts), layout, None), window.shared_max_count(counts), None,
                        order.size)
    layout, shapes = windowed_layout(nbrs, order, window.window_steps(n_classes, shared_k(sized_k or k, pad_to.rows)),
                                     like=pad_to)
    arrays = _WindowArrays(program_argument(padded_rows(counts, shapes.rows)), layout, program_argument(m, np.int32))
    return Prepared(arrays, shapes.max_count, shapes, order.size)


def _run_windowed(prepared: Prepared, Y, E0, weights, *, algorithm, loss, trace: bool, calls: int,
                  narrow: bool) -> BoostResult:
    """:func:`window.boost_windowed` on :class:`_WindowArrays` (its trace
    holds every window's steps: the runner cuts it)."""
    if weights is not None:
        raise ValueError("the windowed scan has no sample weights: make the plan with weighted=True")
    a = prepared.arrays
    return window.boost_windowed(Y, E0, a.counts, a.layout, a.n_points, algorithm=algorithm, loss=loss, trace=trace,
                                 max_count=prepared.static, calls=calls, narrow=narrow)


def _prepare_colored(plan: Plan, nbrs, order, steps: int, pad_to, *, n_classes: int, sized_k=None) -> Prepared:
    """The colored schedule's :class:`_ColorArrays` for ``steps``/m passes:
    :func:`schedule.color_schedule` of the graph (sized for ``n_classes``
    classes on the plan's platform); padded, :func:`schedule.padded_schedule`
    with the counts padded to its rows (the (m,) colours, which the scan
    does not read, left out: their shape would compile per size); n blocks,
    each block its own colouring, stacked (:func:`schedule.stack_schedules`:
    a step runs a part of every block's colour; never padded)."""
    m = nbrs.shape[-2]
    passes = steps // m
    if nbrs.ndim == 3:
        n = nbrs.shape[0]
        schedule = stack_schedules([color_schedule(nbrs[b], n_classes=n_classes * n, platform=plan.platform)
                                    for b in range(n)])
        counts = to_device(np.stack([inverse_counts(nbrs[b], m) for b in range(n)]))
        return Prepared(_ColorArrays(counts, schedule, None, None), passes, None,
                        passes * int(schedule.examples.shape[1]))
    note = "fit: %d colours in %d scan steps a pass (instead of %d sequential steps)"
    if pad_to is None:
        schedule = color_schedule(nbrs, n_classes=n_classes, platform=plan.platform)
        counts = to_device(inverse_counts(nbrs, m))
        # n_colors reads all m colours: only for the progress log
        return Prepared(_ColorArrays(counts, schedule, None, None), passes, None, passes * schedule.n_steps,
                        (note, schedule.n_colors, schedule.n_steps, m) if progress_wanted() else None)
    schedule, real_steps, sizes = padded_schedule(nbrs, n_classes=n_classes, platform=plan.platform, pad_to=pad_to)
    arrays = _ColorArrays(program_argument(padded_rows(inverse_counts(nbrs, m), sizes.rows)),
                          schedule._replace(colors=None), program_argument(m, np.int32),
                          program_argument(real_steps, np.int32))
    return Prepared(arrays, passes, sizes, passes * real_steps,
                    (note, schedule.n_colors, real_steps, m) if progress_wanted() else None)


def _run_colored(prepared: Prepared, Y, E0, weights, *, algorithm, loss, trace: bool, calls: int,
                 narrow: bool) -> BoostResult:
    """:func:`schedule.boost_colored` on :class:`_ColorArrays`, or
    :func:`_boost_colored_blocks` on stacked ones (no sample weights)."""
    a = prepared.arrays
    if a.counts.ndim == 2:
        return _boost_colored_blocks(Y, E0, a.counts, a.schedule, algorithm=algorithm, loss=loss,
                                     passes=prepared.static, trace=trace)
    return boost_colored(Y, E0, a.counts, a.schedule, a.n_points, a.n_steps, weights, algorithm=algorithm, loss=loss,
                         passes=prepared.static, trace=trace)


#: the engine of each :attr:`Plan.schedule <jaxnn._src.plan.Plan.schedule>`
ENGINES = {
    "scan": Engine(functools.partial(_prepare_scan, greedy=False), functools.partial(_run_scan, greedy=False)),
    "greedy": Engine(functools.partial(_prepare_scan, greedy=True), functools.partial(_run_scan, greedy=True)),
    "windowed": Engine(_prepare_windowed, _run_windowed),
    "colored": Engine(_prepare_colored, _run_colored),
}


def _pad_to(plan: Plan, m: int, like: PaddedShapes | None) -> PaddedShapes | None:
    """The shapes a run of m examples is padded to at least: None where the
    plan does not share sizes, else :func:`shared_sizes.shared_rows` (m)
    rows, at least ``like``'s."""
    return PaddedShapes(rows=shared_rows(m)).at_least(like) if plan.shared else None


def _prepare(plan: Plan, nbrs, order, steps: int, pad_to, *, n_classes: int, sized_k=None) -> Prepared:
    """The plan's engine's ``prepare``, its arrays whole on every device of
    the plan's class mesh (:func:`sharding.replicated`)."""
    prepared = ENGINES[plan.schedule].prepare(plan, nbrs, order, steps, pad_to, n_classes=n_classes, sized_k=sized_k)
    return prepared._replace(arrays=sharding.replicated(prepared.arrays, plan.devices))


def _padded_run(plan: Plan, Y_np, nbrs, dtype, order, steps: int, E0, weights, *, algorithm, loss, trace: bool,
                like=None, home=None, Y=None, announce: bool = False, sized_k=None):
    """The one runner: the labels, edges and weights padded (or, unpadded,
    the labels and edges split along C over the plan's class mesh) →
    ``prepare`` → ``run`` → the result cut back to the m examples and the
    real steps (gathered on ``home`` from a mesh).  ``nbrs`` (m, k) or n
    blocks' (n, m, k); E0 (m, C) or None; ``announce``: log the engine's
    note; ``sized_k``: :class:`Engine`.  Returns (:class:`BoostResult`, the
    padded shapes or None)."""
    m, n_classes = Y_np.shape
    pad_to = _pad_to(plan, m, like)
    if pad_to is None:
        Y = to_device(Y_np, dtype) if Y is None else Y  # cast on the host: nothing compiles per m
        E0 = initial_edges(Y, algorithm=algorithm, loss=loss) if E0 is None else E0
        W = sharding.replicated(member_weights(weights, nbrs, dtype), plan.devices)
        Y, E0 = (sharding.on_classes(a, plan.devices) for a in (Y, E0))  # padded with y = 0 columns
    else:  # the initial edges computed in the program
        Y = program_argument(padded_rows(Y_np, pad_to.rows), dtype)
        E0 = _padded_edges(E0, pad_to.rows)
        W = member_weights(weights, nbrs, dtype, pad_to.rows)
    prepared = _prepare(plan, nbrs, order, steps, pad_to, n_classes=Y.shape[1], sized_k=sized_k)
    if announce and prepared.note is not None:
        logger.info(*prepared.note)
    result = ENGINES[plan.schedule].run(prepared, Y, E0, W, algorithm=algorithm, loss=loss, trace=trace, calls=1,
                                        narrow=plan.narrow)
    if plan.devices is not None:
        result = _gathered(result, n_classes, loss, home)
    return _cut(result, m, prepared.trace_steps), prepared.shapes


def _cut(result: BoostResult, m: int, steps: int) -> BoostResult:
    """A result cut to its m examples (axis −2) and its trace to ``steps``
    entries (axis −1), on the host (nothing compiles per size); what needs
    no cut is left as it is."""
    alpha, edges, trace = result
    if alpha.shape[-2] != m:
        alpha, edges = (to_device(np.asarray(a)[..., :m, :]) for a in (alpha, edges))
    if trace is not None and trace.shape[-1] != steps:
        trace = to_device(np.asarray(trace)[..., :steps])
    return BoostResult(alpha, edges, trace)


def _gathered(result: BoostResult, n_classes: int, loss, home) -> BoostResult:
    """A sharded run's result for its C real classes on ``home``: α and the
    edges cut to C columns, the trace the risk of the real classes only (the
    padded columns hold ψ(0) throughout)."""
    padded = result.alpha.shape[1] - n_classes
    trace = result.trace
    if trace is not None and padded:
        trace = (trace * result.alpha.shape[1] - loss.psi(jnp.zeros((), trace.dtype)) * padded) / n_classes
    home = home if home is not None else jax.devices()[0]
    alpha, edges = (jax.device_put(a[:, :n_classes], home) for a in (result.alpha, result.edges))
    return BoostResult(alpha, edges, None if trace is None else jax.device_put(trace, home))


def run_blocks(plan: Plan, Y_np, nbrs, dtype, *, algorithm, loss, rounds: int, seed: int, trace: bool) -> BoostResult:
    """:func:`run` on each of n graphs ``nbrs`` (n, m, k) of the same m
    examples (``fit_split``'s feature blocks), labels Y_np (m, C) shared:
    a :class:`BoostResult` whose α (n, m, C), edges and trace (n, T) carry
    the block axis first.  One block is :func:`run` itself; several run in
    one program (the plan never shares the colored schedule's sizes, nor
    windows, for several blocks)."""
    n, m, _ = nbrs.shape
    if n > 1 and rounds > segment_rounds(m):
        raise ValueError(f"fit_split boosts several blocks in one run of at most {segment_rounds(m)} steps per class "
                         f"on {m} points ({segment_rounds(m) // m} passes); got rounds={rounds}")
    if n == 1:
        res, _ = run(plan, Y_np, nbrs[0], dtype, algorithm=algorithm, loss=loss, rounds=rounds, seed=seed, trace=trace)
        return BoostResult(res.alpha[None], res.edges[None], None if res.trace is None else res.trace[None])
    return _padded_run(plan, Y_np, nbrs, dtype, _order(plan, m, rounds, seed), rounds, None, None, algorithm=algorithm, loss=loss,
                       trace=trace)[0]


@functools.partial(jax.jit, static_argnames=("algorithm", "loss", "greedy", "trace", "narrow"))
def _boost_blocks(Y, E0, members, counts, neighbors, order, n_points=None, n_steps=None, *, algorithm, loss, greedy,
                  trace, narrow=None):
    """:func:`boost` on each of stacked (n, m, P) members, (n, m) counts,
    (n, m, k) neighbours, one block after another (``lax.map``); labels,
    initial edges and the order are shared.  Not ``vmap``: batched, a step's
    ``lax.switch`` over widths would run every width up to P.  The body runs
    n times: its steps' narrowing is weighed against the n blocks' work
    (``calls``).  ``neighbors`` (n, m, k) for the greedy chooser, else None;
    ``n_points``, ``n_steps``: as for :func:`boost` (blocks padded to shared
    sizes)."""

    def one(blk):
        mem, cnt, nb = blk
        return boost(Y, E0, mem, cnt, nb, order, n_points, n_steps, algorithm=algorithm, loss=loss, greedy=greedy,
                     trace=trace, calls=members.shape[0], narrow=narrow)

    return jax.lax.map(one, (members, counts, neighbors))


@functools.partial(jax.jit, static_argnames=("algorithm", "loss", "passes", "trace"))
def _boost_colored_blocks(Y, E0, counts, schedule, *, algorithm, loss, passes, trace):
    """vmap of :func:`boost_colored` over (n, m) counts and a stacked
    schedule (:func:`stack_schedules`); labels and initial edges are shared."""

    def one(cnt, sched):
        return boost_colored(Y, E0, cnt, sched, algorithm=algorithm, loss=loss, passes=passes, trace=trace)

    return jax.vmap(one)(counts, schedule)


def _order(plan: Plan, m: int, steps: int, seed: int):
    """(steps,) ``fit``'s example sequence (:func:`plan.chooser_order`), or
    None for the colored schedule, whose passes follow the graph."""
    return None if plan.chooser == "colored" else chooser_order(plan.chooser, m, steps, seed)


def _pass_order(plan: Plan, m: int, max_passes: int, seed: int):
    """(max_passes, m) the example order of each pass of ``fit``'s sequence
    (the random chooser a new permutation each pass), or None (colored)."""
    order = _order(plan, m, max_passes * m, seed)
    return None if order is None else order.reshape(max_passes, m)


def select_shapes(plan: Plan, graph, n_classes: int, seed: int, fit_rows: int = 0):
    """The padded shapes that :func:`pass_runner` runs every candidate k at
    when the plan is shared (else None): those the plan's engine pads the
    largest k's graph ``graph`` (m, k_max) to for one pass (its windows of
    k_max's length), whose inverse neighbourhoods hold the smaller ks' —
    one compiled scan per loss for every k —; a sequential scan's at least
    the rows and steps of one pass of a fit of ``fit_rows`` examples
    (``fit(k="auto")``'s of all the points: its one-pass fit then runs the
    compiled pass of the chosen loss).  (The other engines' steps are not a
    pass's examples: their own shapes.)"""
    if not plan.shared:
        return None
    m, k_max = graph.shape
    orders = _pass_order(plan, m, 1, seed)
    fit_pass = None
    if fit_rows and plan.schedule == "scan":
        fit_pass = PaddedShapes(rows=shared_rows(fit_rows), steps=in_blocks(fit_rows))
    return _prepare(plan, graph, None if orders is None else orders[0], m, _pad_to(plan, m, fit_pass),
                    n_classes=n_classes, sized_k=k_max).shapes


def pass_runner(plan: Plan, nb: np.ndarray, n_classes: int, algorithm, seed: int, max_passes: int, shared=None,
                sized_k=None, calls: int = 1):
    """``(Y, edges, loss, p) → BoostResult`` of pass p (1-based) on the graph
    ``nb`` (m, k) as :func:`run` runs it (the plan's engine over pass p's
    slice of ``fit``'s sequence; the random chooser draws a new permutation
    each pass), Y and the edges given as the run holds them: padded to
    ``shared`` (:func:`select_shapes`; the shapes sized for ``sized_k``:
    :class:`Engine`) — the result is too, for the next pass —, or, with the plan's
    devices, split along C on their class mesh (:func:`sharding.on_classes`).
    The graph is laid out once for every pass with the same order (once per
    pass for the random chooser).  ``calls``: the runs of the compiled scan
    the caller makes (every k's and pass's), against which the steps'
    narrowing is weighed (:func:`steps.step_widths`)."""
    m = nb.shape[0]
    engine = ENGINES[plan.schedule]
    orders = _pass_order(plan, m, max_passes, seed)
    prepared = {}

    def run_pass(Y, edges, loss, p):
        key = p if plan.chooser == "random" else 1  # the others: every pass the same order
        if key not in prepared:
            prepared[key] = _prepare(plan, nb, None if orders is None else orders[p - 1], m, shared,
                                     n_classes=n_classes, sized_k=sized_k)
        return engine.run(prepared[key], Y, edges, None, algorithm=algorithm, loss=loss, trace=False, calls=calls,
                          narrow=plan.narrow)

    return run_pass


def shared_shapes(m: int, steps: int, largest: int, k: int, rows: int = 0) -> PaddedShapes:
    """The padded shapes of a sequential scan of m examples, ``steps`` steps
    and a largest inverse neighbourhood ``largest`` (P) of a k-NN graph:
    rows R = :func:`shared_sizes.shared_rows` (m), at least ``rows`` (another
    run's, whose program this one shares), steps
    :func:`shared_sizes.in_blocks` (steps), width
    :func:`shared_sizes.shared_width` (max(P, min(8·:func:`shared_sizes.shared_k`
    (k, R), R))): the ks that share a search share a width (so that fits of
    nearby sizes — cross-validation folds, a learning curve — reuse one
    compiled scan), never wider than the rows (P < m: no inverse
    neighbourhood is wider)."""
    rows = max(shared_rows(m), int(rows))
    return PaddedShapes(rows=rows, steps=in_blocks(steps),
                        width=shared_width(max(int(largest), min(8 * shared_k(k, rows), rows))))


def _padded_edges(E0, rows: int):
    """Edges to start a padded run from: None (the algorithm's initial edges,
    computed in the program) or E0 (m, C) with zero rows appended (the
    padding rows are no one's neighbour: their edges are never read)."""
    return None if E0 is None else to_device(padded_rows(np.asarray(E0), rows))


def member_weights(weights, nbrs, dtype, rows: int | None = None) -> Weights | None:
    """The :class:`steps.Weights` of the (m,) host sample weights ``weights``
    (None: None) on the (m, k) graph ``nbrs``: u, and the mass Σ_{i∈inv(j)}
    u_i of each example — computed in float64, so that unit weights give the
    counts n_j exactly — on the device in ``dtype``, padded with zeros to
    ``rows`` (a run padded to shared sizes)."""
    if weights is None:
        return None
    m, k = nbrs.shape
    u = np.asarray(weights, np.float64)
    mass = np.bincount(np.asarray(nbrs).ravel(), weights=np.repeat(u, k), minlength=m)[:m]
    rows = m if rows is None else rows
    return Weights(to_device(padded_rows(u, rows), dtype), to_device(padded_rows(mass, rows), dtype))


def windowed_layout(nbrs, order, steps: int, like: PaddedShapes | None = None):
    """(the :func:`window.window_layout` of ``order``, ``steps`` a window,
    padded to shared sizes; its :class:`PaddedShapes`): rows
    :func:`shared_sizes.shared_rows` (m), ``max_count`` :func:`window.shared_max_count`,
    each at least ``like``'s."""
    m = nbrs.shape[0]
    rows, max_count = shared_rows(m), window.shared_max_count(inverse_counts(nbrs, m))
    if like is not None:
        rows, max_count = max(rows, like.rows), max(max_count, like.max_count)
    layout = window.window_layout(nbrs, order, steps, shared=True, at_least=like)
    return layout, layout.sizes._replace(rows=rows, max_count=max_count)


def padded_graph(nbrs, rows: int, width: int, *, greedy: bool):
    """(inverse neighbourhoods ``width`` members wide, (rows, k) neighbour
    indices or None) of an (m, k) graph padded to ``rows`` examples for
    :func:`boost`'s ``n_points``: the padding rows are in no one's inv(j)
    (n_j = 0) and their own neighbours.  Only the greedy chooser reads the
    neighbours (the other scans would compile per k for an unused argument)."""
    m, k = nbrs.shape
    if not greedy:
        return inverse_neighbors(nbrs, rows, width=width), None
    ghosts = np.repeat(np.arange(m, rows, dtype=nbrs.dtype)[:, None], k, axis=1)
    return inverse_neighbors(nbrs, rows, width=width), to_device(np.concatenate([nbrs, ghosts]))
