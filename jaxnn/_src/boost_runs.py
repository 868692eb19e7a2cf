"""Carrying out a :class:`~jaxnn._src.plan.Plan`: the one place that calls the
engines (:func:`~jaxnn._src.boosting.boost`, :func:`~jaxnn._src.window.boost_windowed`,
:func:`~jaxnn._src.schedule.boost_colored`).

* :func:`run` — one neighbour graph (``fit``, ``posterior="auto"``'s
  auxiliary fit, ``fit_split`` with one block);
* :func:`run_blocks` — the n graphs of ``fit_split``'s feature blocks;
* :func:`pass_runner` — one pass at a time from given edges (``select``,
  which scores every number of passes from one run), with
  :func:`select_shapes` the padded shapes its candidate ks share.

A plan with ``shared`` set pads the problem to sizes that nearby m share
(:mod:`jaxnn._src.shared_sizes`), so that refits of nearby sizes —
cross-validation folds, ``posterior="auto"``'s auxiliary fit,
:func:`jaxnn.select` — reuse one compiled program; the result is that of
the unpadded run, cut back on the host.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import sharding, window
from jaxnn._src.boosting import boost
from jaxnn._src.inverse import inverse_counts, inverse_neighbors
from jaxnn._src.plan import Plan, chooser_order, chooser_orders
from jaxnn._src.progress import logger, progress_wanted, steps_done
from jaxnn._src.schedule import boost_colored, color_schedule, padded_schedule, stack_schedules
from jaxnn._src.shared_sizes import PaddedShapes, in_blocks, padded_rows, shared_k, shared_rows, shared_width, to_device
from jaxnn._src.steps import BoostResult, Weights, initial_edges

__all__ = ["run", "run_blocks", "pass_runner", "select_shapes", "shared_shapes", "member_weights"]


#: the most steps (per class) one compiled run takes: longer runs go on from
#: the edges, a segment of whole passes at a time, so that memory (the example
#: order, the windowed layout, the colored scan's steps) does not grow with rounds
SEGMENT_STEPS = 1 << 21


def segment_rounds(m: int) -> int:
    """Steps of one segment of a long run on m examples: whole passes, about
    :data:`SEGMENT_STEPS` (at least one pass)."""
    return max(1, SEGMENT_STEPS // m) * m


def run(plan: Plan, Y_np, nbrs, dtype, *, algorithm, loss, rounds: int, seed: int, trace: bool, like=None,
        home=None, Y=None, weights=None):
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

    Returns (:class:`BoostResult` of the m examples and C classes — α (m, C),
    edges, the trace (T,) or None —, the padded shapes used or None)."""
    m = nbrs.shape[0]
    parts = chooser_orders(plan.chooser, m, rounds, seed, segment_rounds(m))
    steps, order = next(parts)
    result, shapes = _run_segment(plan, Y_np, nbrs, dtype, order, steps, None, algorithm=algorithm, loss=loss,
                                  trace=trace, like=like, home=home, Y=Y, weights=weights)
    done, alpha, traces = steps, result.alpha, [result.trace]
    for steps, order in parts:  # a long run: the next segment from the edges
        steps_done(done, rounds, "fit: %d of %d steps done", done, rounds)  # once a segment
        result, _ = _run_segment(plan, Y_np, nbrs, dtype, order, steps, result.edges, algorithm=algorithm, loss=loss,
                                 trace=trace, like=shapes, home=home, Y=Y, weights=weights)
        done, alpha = done + steps, alpha + result.alpha
        traces.append(result.trace)
    if len(traces) == 1:
        return result, shapes
    return BoostResult(alpha, result.edges, jnp.concatenate(traces) if trace else None), shapes


def _run_segment(plan: Plan, Y_np, nbrs, dtype, order, rounds: int, E0, *, algorithm, loss, trace: bool, like, home,
                 Y=None, weights=None):
    """:func:`run`'s work for ``rounds`` steps in the example ``order``
    (None for the colored schedule, which runs rounds/m passes) from the
    edges E0 (m, C) (None: the algorithm's initial edges)."""
    m, n_classes = Y_np.shape
    if weights is not None and plan.windowed:
        raise ValueError("the windowed scan has no sample weights: make the plan with weighted=True")
    if plan.shared and plan.chooser == "colored":
        return shared_size_colored(Y_np, nbrs, dtype, algorithm=algorithm, loss=loss, passes=rounds // m,
                                   trace=trace, platform=plan.platform, like=like, E0=E0, weights=weights)
    if plan.shared:
        return shared_size_boost(Y_np, nbrs, order, dtype, algorithm=algorithm, loss=loss, greedy=plan.greedy,
                                 windowed=plan.windowed, trace=trace, like=like, narrow=plan.narrow, E0=E0,
                                 weights=weights)
    if Y is None:
        Y = to_device(Y_np, dtype)  # cast on the host: nothing compiles per m
    E0 = initial_edges(Y, algorithm=algorithm, loss=loss) if E0 is None else E0
    W = member_weights(weights, nbrs, dtype)
    mesh = None
    if plan.devices is not None:  # the class axis split across the devices, padded with y = 0 columns
        mesh = sharding.class_mesh(plan.devices)
        Y, E0 = (sharding.shard_classes(sharding.pad_classes(a, mesh.devices.size), mesh) for a in (Y, E0))
        W = None if W is None else Weights(*(sharding.replicate(a, mesh) for a in W))
    if plan.chooser == "colored":  # the schedule's edge lists replace the members array
        schedule = color_schedule(nbrs, n_classes=Y.shape[1], platform=plan.platform)
        if progress_wanted():  # n_colors reads all m colours
            logger.info("fit: %d colours in %d scan steps a pass (instead of %d sequential steps)",
                        schedule.n_colors, schedule.n_steps, m)
        result = boost_colored(Y, E0, to_device(inverse_counts(nbrs, m)), schedule, weights=W, algorithm=algorithm,
                               loss=loss, passes=rounds // m, trace=trace)
    elif plan.windowed:  # a large edge state: the steps run in windows on a local copy
        counts = inverse_counts(nbrs, m)
        layout = window.window_layout(nbrs, order, window.window_steps(Y.shape[1], nbrs.shape[1]))
        result = window.boost_windowed(Y, E0, to_device(counts), layout, algorithm=algorithm, loss=loss, trace=trace,
                                       n_steps=rounds, max_count=window.shared_max_count(counts), narrow=plan.narrow)
    else:  # the padded (m, P) inverse neighbourhoods; refits of other data share the width
        inv = inverse_neighbors(nbrs, m, width=shared_width(inverse_counts(nbrs, m).max()))
        if mesh is not None:
            inv = type(inv)(*(sharding.replicate(a, mesh) for a in inv))
        result = boost(Y, E0, inv.members, inv.counts, to_device(nbrs) if plan.greedy else None, to_device(order),
                       weights=W, algorithm=algorithm, loss=loss, greedy=plan.greedy, trace=trace, narrow=plan.narrow)
    if mesh is not None:
        result = _gathered(result, n_classes, loss, home)
    return result, None


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
    the block axis first.  One block is :func:`run` itself."""
    n, m, _ = nbrs.shape
    if n > 1 and rounds > segment_rounds(m):
        raise ValueError(f"fit_split boosts several blocks in one run of at most {segment_rounds(m)} steps per class "
                         f"on {m} points ({segment_rounds(m) // m} passes); got rounds={rounds}")
    if n == 1:
        res, _ = run(plan, Y_np, nbrs[0], dtype, algorithm=algorithm, loss=loss, rounds=rounds, seed=seed, trace=trace)
        return BoostResult(res.alpha[None], res.edges[None], None if res.trace is None else res.trace[None])
    if plan.shared:  # (the plan never shares the colored schedule of several blocks)
        return _shared_size_blocks(Y_np, nbrs, chooser_order(plan.chooser, m, rounds, seed), dtype, algorithm=algorithm, loss=loss, greedy=plan.greedy,
                                   trace=trace, narrow=plan.narrow)
    Y = to_device(Y_np, dtype)
    E0 = initial_edges(Y, algorithm=algorithm, loss=loss)
    counts = np.stack([inverse_counts(nbrs[b], m) for b in range(n)])
    if plan.chooser == "colored":  # each block its own colouring; a step runs a part of every block's colour
        schedule = stack_schedules([color_schedule(nbrs[b], n_classes=Y.shape[1] * n, platform=plan.platform)
                                    for b in range(n)])
        return _boost_colored_blocks(Y, E0, to_device(counts), schedule, algorithm=algorithm, loss=loss,
                                     passes=rounds // m, trace=trace)
    # one width for all blocks, shared by refits of other data (padding is inert)
    P = shared_width(counts.max())
    members = np.stack([np.asarray(inverse_neighbors(nbrs[b], m, width=P).members) for b in range(n)])
    return _boost_blocks(Y, E0, to_device(members), to_device(counts),
                         to_device(nbrs, np.int32) if plan.greedy else None,
                         to_device(chooser_order(plan.chooser, m, rounds, seed)), algorithm=algorithm,
                         loss=loss, greedy=plan.greedy, trace=trace, narrow=plan.narrow)


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


def _shared_size_blocks(Y_np, nbrs, order, dtype, *, algorithm, loss, greedy: bool, trace: bool, narrow: bool):
    """:func:`_boost_blocks` on n blocks' (n, m, k) graphs padded to shared
    sizes, as :func:`shared_size_boost` pads one graph: the examples to
    :func:`shared_sizes.shared_rows` (m) rows (y = 0, n_j = 0), the steps to
    :func:`shared_sizes.in_blocks` (no-ops), the members' width to the
    largest block's P, at least 2k, rounded up to two significant bits (16,
    24, 32, 48, …: folds' P straddle finer steps); m and the steps traced,
    the padding cut on the host.  Returns the :class:`BoostResult` of the m
    examples and their steps."""
    n, m, k = nbrs.shape
    largest = max(int(inverse_counts(nbrs[b], m).max()) for b in range(n))
    shapes = PaddedShapes(rows=shared_rows(m), steps=in_blocks(order.size), width=in_blocks(max(largest, 2 * k), 1, bits=2))
    graphs = [padded_graph(nbrs[b], shapes.rows, shapes.width, greedy=greedy) for b in range(n)]
    members, counts = (to_device(np.stack([np.asarray(inv[i]) for inv, _ in graphs])) for i in range(2))
    neighbors = to_device(np.stack([np.asarray(nb) for _, nb in graphs])) if greedy else None
    res = _boost_blocks(to_device(padded_rows(Y_np, shapes.rows), dtype), None, members, counts, neighbors,
                        to_device(padded_rows(order, shapes.steps)), to_device(m, np.int32),
                        to_device(order.size, np.int32), algorithm=algorithm, loss=loss, greedy=greedy, trace=trace,
                        narrow=narrow)
    alpha, edges = (to_device(np.asarray(a)[:, :m]) for a in (res.alpha, res.edges))
    return res._replace(alpha=alpha, edges=edges,
                        trace=None if res.trace is None else to_device(np.asarray(res.trace)[:, :order.size]))


def select_shapes(plan: Plan, graph, n_classes: int, seed: int):
    """The padded shapes that :func:`pass_runner` runs every candidate k at
    when the plan is shared (else None): those of the largest k's graph
    ``graph`` (m, k_max), whose inverse neighbourhoods hold the smaller ks'
    — one compiled scan per loss for every k.  The colored schedule's
    :class:`PaddedShapes`: the colored schedule's, the windowed scan's (its
    windows of the largest k's length) or the sequential scan's."""
    if not plan.shared:
        return None
    m, k_max = graph.shape
    if plan.chooser == "colored":
        _, _, shapes = padded_schedule(graph, n_classes=n_classes, platform=plan.platform,
                                       pad_to=PaddedShapes(rows=shared_rows(m)))
        return shapes
    if plan.windowed:
        first = chooser_order(plan.chooser, m, m, seed)  # pass 1's order
        return windowed_layout(graph, first, window.window_steps(n_classes, k_max))[1]
    return shared_shapes(m, m, inverse_counts(graph, m).max(), k_max)


def pass_runner(plan: Plan, nb: np.ndarray, n_classes: int, algorithm, seed: int, max_passes: int, shared=None,
                window_k=None, calls: int = 1):
    """``(Y, edges, loss, p) → BoostResult`` of pass p (1-based) on the graph
    ``nb`` (m, k) as :func:`run` runs it: the colored schedule, or the scan —
    windowed where the plan says — over pass p's slice of ``fit``'s sequence
    (the random chooser draws a new permutation each pass); with the plan's
    devices, on their class mesh (Y and the edges given sharded so).
    ``shared``: :func:`select_shapes` (Y and the edges then have
    ``shared.rows`` rows; the windows are ``window_k``'s length).
    ``calls``: the runs of the compiled scan the caller makes (every k's and
    pass's), against which the steps' narrowing is weighed
    (:func:`steps.step_widths`)."""
    m = nb.shape[0]
    algo, narrow = algorithm, plan.narrow
    if plan.chooser == "colored" and shared is not None:  # padded as run pads it (shared_size_colored)
        schedule, real_steps, _ = padded_schedule(nb, n_classes=n_classes, platform=plan.platform, pad_to=shared)
        schedule = schedule._replace(colors=None)  # not read: its (m,) shape would compile per size
        counts = to_device(padded_rows(inverse_counts(nb, m), shared.rows))
        n_points, n_steps = to_device(m, np.int32), to_device(real_steps, np.int32)
        return lambda Y, edges, loss, p: boost_colored(Y, edges, counts, schedule, n_points, n_steps, algorithm=algo,
                                                       loss=loss, passes=1, trace=False)
    if plan.chooser == "colored":
        schedule = color_schedule(nb, n_classes=n_classes, platform=plan.platform)
        counts = jnp.asarray(inverse_counts(nb, m))
        return lambda Y, edges, loss, p: boost_colored(Y, edges, counts, schedule, algorithm=algo, loss=loss,
                                                       passes=1, trace=False)
    orders = chooser_order(plan.chooser, m, max_passes * m, seed).reshape(max_passes, m)
    if plan.windowed:  # a layout per distinct pass order, built when first needed (lazy: one for all passes)
        counts = inverse_counts(nb, m)
        if shared is None:
            counts_j, max_count, n_points, at_least = to_device(counts), window.shared_max_count(counts), None, None
        else:  # padded as run pads it (shared_size_windowed), at the largest k's sizes
            counts_j, max_count = to_device(padded_rows(counts, shared.rows)), shared.max_count
            n_points, at_least = to_device(m, np.int32), shared
        steps, layouts = window.window_steps(n_classes, window_k or nb.shape[1]), {}

        def windowed_pass(Y, edges, loss, p):
            key = p if plan.chooser == "random" else 1  # lazy: every pass the same order
            if key not in layouts:
                layouts[key] = window.window_layout(nb, orders[p - 1], steps, shared=shared is not None,
                                                    at_least=at_least)
            return window.boost_windowed(Y, edges, counts_j, layouts[key], n_points, algorithm=algo, loss=loss,
                                         trace=False, max_count=max_count, calls=calls, narrow=narrow)

        return windowed_pass
    greedy = plan.greedy
    if shared is not None:  # padded: sizes near m and the ks share the compiled scan (shared_size_boost)
        inv, neighbors = padded_graph(nb, shared.rows, shared.width, greedy=greedy)
        sizes = to_device(m, np.int32)
        orders = padded_rows(orders.T, shared.steps).T  # (passes, steps): no-op steps after the m
        return lambda Y, edges, loss, p: boost(Y, edges, inv.members, inv.counts, neighbors, to_device(orders[p - 1]),
                                               sizes, sizes, algorithm=algo, loss=loss, greedy=greedy, trace=False,
                                               calls=calls, narrow=narrow)
    inv = inverse_neighbors(nb, m, width=shared_width(inverse_counts(nb, m).max()))  # other folds' data share it
    if plan.devices is not None:
        mesh = sharding.class_mesh(plan.devices)
        inv = type(inv)(*(sharding.replicate(a, mesh) for a in inv))
    orders = jnp.asarray(orders)
    neighbors = jnp.asarray(nb) if greedy else None
    return lambda Y, edges, loss, p: boost(Y, edges, inv.members, inv.counts, neighbors, orders[p - 1],
                                           algorithm=algo, loss=loss, greedy=greedy, trace=False, calls=calls,
                                           narrow=narrow)


def shared_shapes(m: int, steps: int, largest: int, k: int) -> PaddedShapes:
    """The padded shapes of a sequential scan of m examples, ``steps`` steps
    and a largest inverse neighbourhood ``largest`` (P) of a k-NN graph:
    rows :func:`shared_sizes.shared_rows` (m), steps
    :func:`shared_sizes.in_blocks` (steps), width
    :func:`shared_sizes.shared_width` (max(P, 8·:func:`shared_sizes.shared_k`
    (k, m))): the ks that share a search share a width."""
    return PaddedShapes(rows=shared_rows(m), steps=in_blocks(steps),
                        width=shared_width(max(int(largest), 8 * shared_k(k, m))))


def shared_size_boost(Y_np, nbrs, order, dtype, *, algorithm, loss, greedy: bool, windowed: bool, trace: bool,
                       like: PaddedShapes | None = None, narrow: bool | None = None, E0=None, weights=None):
    """:func:`boost` on a small problem padded to shared sizes: the m examples
    to M = :func:`shared_sizes.shared_rows` (m) rows (y = 0, n_j = 0, no one's
    neighbour), the T steps to :func:`shared_sizes.in_blocks` (T) (no-ops) and the
    inverse neighbourhoods' width to :func:`shared_sizes.shared_width` (max(P, 8K)),
    K = :func:`shared_sizes.shared_k` (k, m) (the largest inverse
    neighbourhood P varies with the data; the floor 8K covers most folds),
    so that fits of nearby sizes — cross-validation folds, a learning curve
    — reuse one compiled boosting.
    The same steps run on the same edges: the result is that of the
    unpadded call (α, edges and trace sliced back on the host).  ``like``:
    shapes to pad to at least (another fit's, to share its compilation).
    ``windowed``: the windowed scan (:mod:`window`), its layout padded too
    (:func:`shared_size_windowed`).  ``E0``: the (m, C) edges to start from
    (None: the algorithm's initial edges, computed in the program).
    ``weights``: None or the sample weights (m,) of mean 1 (not windowed).

    Returns (:class:`BoostResult`, the :class:`PaddedShapes` used).
    """
    if windowed:
        return shared_size_windowed(Y_np, nbrs, order, dtype, algorithm=algorithm, loss=loss, trace=trace, like=like,
                                    narrow=narrow, E0=E0)
    m, k = nbrs.shape
    shapes = shared_shapes(m, order.size, inverse_counts(nbrs, m).max(), k).at_least(like)
    Y = to_device(padded_rows(Y_np, shapes.rows), dtype)
    inv, neighbors = padded_graph(nbrs, shapes.rows, shapes.width, greedy=greedy)
    result = boost(Y, _padded_edges(E0, shapes.rows), inv.members, inv.counts, neighbors,
                   to_device(padded_rows(order, shapes.steps)), to_device(m, np.int32),
                   to_device(order.size, np.int32), member_weights(weights, nbrs, dtype, shapes.rows),
                   algorithm=algorithm, loss=loss, greedy=greedy, trace=trace, narrow=narrow)
    return _first_of(result, m, order.size), shapes


def _padded_edges(E0, rows: int):
    """Edges to start a padded run from: None (the algorithm's initial edges,
    computed in the program) or E0 (m, C) with zero rows appended (the
    padding rows are no one's neighbour: their edges are never read)."""
    return None if E0 is None else to_device(padded_rows(np.asarray(E0), rows))


def _first_of(result: BoostResult, m: int, steps: int) -> BoostResult:
    """A padded boosting's result cut to its m examples and steps on the host
    (nothing compiles per size)."""
    alpha, edges = (to_device(np.asarray(a)[:m]) for a in (result.alpha, result.edges))
    trace = None if result.trace is None else to_device(np.asarray(result.trace)[:steps])
    return BoostResult(alpha, edges, trace)


def shared_size_windowed(Y_np, nbrs, order, dtype, *, algorithm, loss, trace: bool,
                          like: PaddedShapes | None = None, narrow: bool | None = None, E0=None):
    """:func:`window.boost_windowed` on a small problem padded to shared sizes:
    the examples to :func:`shared_sizes.shared_rows` (m) rows (y = 0, n_j = 0), the
    layout's windows to three significant bits (``window_layout(shared=True)``:
    empty windows change nothing), m traced (``n_points``) and the trace cut
    on the host — so that cross-validation folds of a many-class problem
    (m·C ≥ ``window.WINDOWED_MIN_STATE``: from m = 656 at C = 100) share one
    compiled scan (unpadded, 5 folds of 1602–1603 points, C = 100, compiled
    it 3 times).  ``like``: another fit's
    :class:`PaddedShapes`, to pad to at least.

    Returns (:class:`BoostResult`, the :class:`PaddedShapes` used).
    """
    m, k = nbrs.shape
    layout, shapes = windowed_layout(nbrs, order, window.window_steps(Y_np.shape[1], shared_k(k, m)), like=like)
    Y = to_device(padded_rows(Y_np, shapes.rows), dtype)
    counts = to_device(padded_rows(inverse_counts(nbrs, m), shapes.rows))
    result = window.boost_windowed(Y, _padded_edges(E0, shapes.rows), counts, layout, to_device(m, np.int32),
                                   algorithm=algorithm, loss=loss, trace=trace, max_count=shapes.max_count,
                                   narrow=narrow)
    return _first_of(result, m, order.size), shapes


def shared_size_colored(Y_np, nbrs, dtype, *, algorithm, loss, passes: int, trace: bool, platform: str,
                         like: PaddedShapes | None = None, E0=None, weights=None):
    """:func:`schedule.boost_colored` on a small problem padded to shared
    sizes: the examples to :func:`shared_sizes.shared_rows` (m) rows (y = 0, n_j = 0,
    in no step), the edges and examples a step to three significant bits and
    the steps to a power of two ≥ 4k (``color_schedule(pad_to=)``), m and
    the steps that run traced
    (``n_points``, ``n_steps``: the padding steps do not run) and the trace
    cut on the host — so that cross-validation folds share one compiled
    colouring and schedule, where each fold's data-dependent shapes would
    compile both (on a GPU or TPU ``chooser="auto"`` runs the colored
    schedule at every size).  ``like``: another fit's
    :class:`PaddedShapes`, to pad to at least.  ``weights``: None or the
    sample weights (m,) of mean 1.

    Returns (:class:`BoostResult`, the :class:`PaddedShapes` used).
    """
    m = nbrs.shape[0]
    pad_to = PaddedShapes(rows=shared_rows(m)).at_least(like)  # the steps: a power of two ≥ 4k, never run
    schedule, real_steps, sizes = padded_schedule(nbrs, n_classes=Y_np.shape[1], platform=platform, pad_to=pad_to)
    if progress_wanted():  # n_colors reads all m colours
        logger.info("fit: %d colours in %d scan steps a pass (instead of %d sequential steps)", schedule.n_colors,
                    real_steps, m)
    Y = to_device(padded_rows(Y_np, sizes.rows), dtype)
    counts = to_device(padded_rows(inverse_counts(nbrs, m), sizes.rows))
    # the (m,) colours, which the scan does not read, left out of its arguments
    result = boost_colored(Y, _padded_edges(E0, sizes.rows), counts, schedule._replace(colors=None), to_device(m, np.int32),
                           to_device(real_steps, np.int32), member_weights(weights, nbrs, dtype, sizes.rows),
                           algorithm=algorithm, loss=loss, passes=passes, trace=trace)
    return _first_of(result, m, passes * real_steps), sizes


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
