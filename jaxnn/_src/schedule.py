"""The exact parallel schedule (docs/design.md).

Two examples j, j' *conflict* when their inverse neighbourhoods share a
member (some x_i has both among its k neighbours).  Examples of one colour of
a proper colouring of this conflict graph touch disjoint edges, so one
vectorised step per colour gives *exactly* the sequential algorithm run in
colour order — with a few dozen sequential steps instead of m.

Each colour is stored as a flat edge list (pairs i ∈ inv(j), j in the colour)
padded to the largest colour's edge count and reduced with segment sums, not
as a dense colour × P block.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import platforms, programs
from jaxnn._src.algorithms import Segments
from jaxnn._src import steps
from jaxnn._src.inverse import inverse_csr, members_in_order
from jaxnn._src.losses import Loss
from jaxnn._src.maxtree import round_up
from jaxnn._src.shared_sizes import PaddedShapes, in_blocks, to_device
from jaxnn._src.sorting import stable_order
from jaxnn._src.steps import BoostResult

__all__ = ["ColorSchedule", "color_conflict_graph", "color_schedule", "padded_schedule",
           "stack_schedules", "boost_colored", "colored_order"]


#: inverse-neighbourhood sizes bounding the colouring's tiers below the top
#: one: a vertex's work is its tier's width, not the largest inverse
#: neighbourhood's (else a hub of P ≈ 500 would make every vertex cost 5 000
#: lookups).  Each tier compiles its own loop: more tiers make a warm colouring
#: faster and a first call slower, and (64, 16) balances the two
TIER_WIDTHS = (64, 16)
#: member lookups per iteration of the colouring's batched loop, for m = 10⁵:
#: a larger batch runs faster than one vertex an iteration (the plain greedy
#: colouring) until more of its vertices collide and are retried; it costs a
#: few more colours.
COLOR_BATCH_ELEMENTS = 4096
#: COLOR_BATCH_ELEMENTS was chosen at m = 10⁵; a vertex's chance to collide
#: with its batch grows as batch/m, so the default batch grows with m:
#: COLOR_BATCH_ELEMENTS per COLOR_BATCH_M examples (on larger random graphs
#: faster than a fixed batch, for about as many colours).
COLOR_BATCH_M = 100_000


def color_batch_elements(m: int) -> int:
    """The colouring's default batch for m examples: :data:`COLOR_BATCH_ELEMENTS`
    per :data:`COLOR_BATCH_M` examples, at least COLOR_BATCH_ELEMENTS."""
    return max(COLOR_BATCH_ELEMENTS, COLOR_BATCH_ELEMENTS * int(m) // COLOR_BATCH_M)


def _lowest_free(forbidden, none):
    """(B, W) uint32 bitmasks of forbidden colours → (B,) the lowest colour
    whose bit is 0 (``none`` = 32·W when all are set)."""
    free = ~forbidden
    low = free & (jnp.uint32(0) - free)  # lowest set bit of each word
    bit = jax.lax.population_count(low - jnp.uint32(1)).astype(jnp.int32)
    word = jnp.argmax(free != 0, axis=1)
    found = jnp.any(free != 0, axis=1)
    return jnp.where(found, word * 32 + jnp.take_along_axis(bit, word[:, None], axis=1)[:, 0], none).astype(jnp.int32)


# fused: XLA's defaults at every size (without its fusion emitters a small colouring runs slower)
@programs.jit(static_argnames=("widths", "batches", "words"), fused=True)
def _batched_colors(order, bounds, counts, starts, sources, *, widths: tuple, batches: tuple, words: int):
    """Speculative greedy colouring (Gebremedhin & Manne 2000), a batch of
    vertices at a time.

    Row i's bitmask holds the colours already used in NN(i) (a vertex j's
    step touches the edges of inv(j), so j and j' conflict exactly when some
    NN(i) holds both); a vertex's forbidden colours are the OR of the masks
    of its n_j rows — n_j lookups instead of the n_j·k colours of its
    conflict neighbours.  Each vertex of a batch takes its lowest free
    colour; one that shares a row with an earlier vertex of its batch gives
    it up and goes to the back of the queue (the first of a batch always
    keeps its colour, so the loop ends).  inv(j) is read from the
    compressed arrays of :func:`jaxnn._src.inverse.inverse_csr`, the first w
    entries from ``starts[j]``.  Tier t takes the vertices
    ``order[bounds[t]:bounds[t+1]]`` (n_j ≤ ``widths[t]``),
    ``batches[t]`` at a time.  With batches of 1 this is the sequential
    greedy colouring in ``order``.  Colours ≥ 32·``words`` are not
    representable: such a vertex gets 32·``words`` and the caller retries
    with more words.
    """
    m = counts.shape[0]  # padded (fit's shared sizes): vertices past bounds[-1] are never queued
    none = jnp.int32(32 * words)
    idle = jnp.iinfo(jnp.int32).max
    colors = jnp.full(m + 1, none, jnp.int32)
    masks = jnp.zeros((m + 1, words), jnp.uint32)  # row m (padding) stays 0
    claim = jnp.full(m + 1, idle, jnp.int32)  # rank of the first batch vertex on a row
    for t, (w, B) in enumerate(zip(widths, batches)):
        n = (bounds[t + 1] - bounds[t]).astype(jnp.int32)
        ring = jax.lax.dynamic_slice(jnp.concatenate([order, jnp.full(m + B, m, jnp.int32)]), (bounds[t],), (m + B,))
        queue = jnp.where(jnp.arange(m + B) < n, ring, m)  # a ring of m slots, slot m + B − 1 a dump

        def body(state, w=w, B=B):
            colors, masks, claim, queue, head, tail = state
            ranks = jnp.arange(B, dtype=jnp.int32)
            valid = head + ranks < tail
            batch = jnp.where(valid, queue[(head + ranks) % m], m)
            slots = jnp.arange(w)
            n_j = jnp.where(valid, counts[batch], 0)
            rows = jnp.where(slots < n_j[:, None], sources[starts[batch][:, None] + slots], m)  # (B, w), padding m
            forbidden = jax.lax.reduce(masks[rows], jnp.uint32(0), jax.lax.bitwise_or, (1,))
            tent = _lowest_free(forbidden, none)
            real = rows < m
            claim = claim.at[rows].min(jnp.where(real, ranks[:, None], idle))
            lose = valid & jnp.any(real & (claim[rows] < ranks[:, None]), axis=1)
            claim = claim.at[rows].set(idle)
            win = valid & ~lose
            bit = jnp.left_shift(jnp.uint32(1), (tent % 32).astype(jnp.uint32))
            onehot = jnp.where(jnp.arange(words)[None, :] == (tent // 32)[:, None], bit[:, None], jnp.uint32(0))
            written = jnp.where(win[:, None] & real, rows, m)  # winners share no row: unique writes
            masks = masks.at[written].set(jnp.where((written < m)[..., None], masks[rows] | onehot[:, None, :], jnp.uint32(0)))
            colors = colors.at[jnp.where(win, batch, m)].set(jnp.where(win, tent, none))
            slot = jnp.where(lose, (tail + jnp.cumsum(lose, dtype=jnp.int32) - 1) % m, m + B - 1)
            queue = queue.at[slot].set(batch)
            return colors, masks, claim, queue, head + jnp.sum(valid, dtype=jnp.int32), tail + jnp.sum(lose, dtype=jnp.int32)

        state = (colors, masks, claim, queue, jnp.int32(0), n)
        colors, masks, claim, _, _, _ = jax.lax.while_loop(lambda s: s[4] < s[5], body, state)
    return colors[:m]


def color_conflict_graph(neighbors, *, batch_elements: int | None = None) -> np.ndarray:
    """Colours (m,) int32 of a greedy colouring of the conflict graph of an
    (m, k) neighbour array.

    Vertices are taken by decreasing n_j (an upper bound on their conflict
    degree / k), ties by index — the largest-first heuristic — in batches of
    about ``batch_elements`` member lookups (:func:`_batched_colors`; a
    vertex of a batch that collides with an earlier one is retried later, so
    the colouring is proper but may use a few more colours than the
    sequential greedy one, which ``batch_elements=1`` gives exactly); default
    :func:`color_batch_elements` (m).
    """
    nbrs = np.asarray(neighbors)
    if batch_elements is None:
        batch_elements = color_batch_elements(nbrs.shape[0])
    return _colour(nbrs, inverse_csr(nbrs), batch_elements)


def _colour(neighbors: np.ndarray, csr, batch_elements: int, rows: int | None = None) -> np.ndarray:
    """:func:`color_conflict_graph` from the compressed inverse neighbourhoods
    ``csr``.  ``rows`` (≥ m): run :func:`_batched_colors` on arrays padded to
    that many vertices (fit's shared sizes: one compiled colouring serves
    nearby m); the padding vertices are never queued, so the colours are
    those of the unpadded call."""
    if isinstance(batch_elements, bool) or not isinstance(batch_elements, (int, np.integer)) or batch_elements < 1:
        raise ValueError(f"batch_elements must be a positive integer, got {batch_elements!r}")
    counts, starts, sources = csr
    m, k = counts.size, neighbors.shape[1]
    rows = m if rows is None else int(rows)
    largest = int(counts.max(initial=0))
    order = stable_order(largest - counts, largest + 1).astype(np.int32)  # by decreasing n_j, ties by index
    # the top tier's width: the largest n_j, at least 4k, rounded up to a power of two —
    # fewer shapes to compile (graphs of one size and k mostly share it: the largest n_j
    # of 1000 Gaussian points at k = 6 varied 15–30, which took 16 or 32)
    top = 1 << max(0, max(int(counts.max(initial=1)), 4 * k) - 1).bit_length()
    widths = (top,) + tuple(w for w in TIER_WIDTHS if w < top)
    # tier t: sorted counts in (widths[t+1], widths[t]]; the last tier takes the rest
    bounds = np.searchsorted(-counts[order], [-w for w in widths[1:]], side="left")
    bounds = np.concatenate([[0], bounds, [m]]).astype(np.int32)
    batches = tuple(max(1, int(batch_elements) // w) for w in widths)
    words = max(2, -(-5 * k // 32))  # room for 5k colours (k = 10: 64; greedy needs ~45–55)
    pad = rows - m
    padded = (np.pad(order, (0, pad)), bounds, np.pad(counts, (0, pad)), np.pad(starts, (0, pad)),
              np.pad(sources, (0, pad * k)))
    args = [to_device(a, np.int32) for a in padded]
    while True:
        colors = np.asarray(_batched_colors(*args, widths=widths, batches=batches, words=words))[:m]
        if colors.size == 0 or colors.max() < 32 * words:
            return colors
        words *= 2


class ColorSchedule(NamedTuple):
    """Padded edge lists, one per scan step.

    Every colour is cut, in order, into steps of about ``chunk`` units (an
    example counts n_j + 1: its edges and itself), so that padding every step
    to the largest one wastes little: the sizes of a largest-first colouring
    fall steeply (at m = 10⁵, k = 10: 58 291 edges in its first of 45
    colours, a few hundred in its last), and padding every colour to the
    largest would do 2.6× the work.  A part of a colour is conflict-free too,
    so the steps still give exactly the sequential algorithm in colour order.

    Attributes:
      edge_member: (T, L) int32, the member i of each edge (pad: m).
      edge_segment: (T, L) int32, which example of the step it belongs to (pad: S).
      examples: (T, S) int32, the examples j of each step (pad: m).
      colors: (m,) int32, the colour of each example, in the order they run
        (colour 0 first).
    """

    edge_member: jax.Array
    edge_segment: jax.Array
    examples: jax.Array
    colors: np.ndarray

    @property
    def n_colors(self) -> int:
        return int(self.colors.max()) + 1 if self.colors.size else 0

    @property
    def n_steps(self) -> int:
        """Scan steps of one pass (padding steps included, for a schedule
        built with ``pad_to``)."""
        return int(self.examples.shape[0])


#: the step's edge and example axes are padded to a multiple of this: on CPU
#: unaligned lengths run the same pass markedly slower
ALIGN = 256


def color_schedule(neighbors, *, chunk: int | None = None, n_classes: int = 1, platform: str | None = None,
                   pad_to: PaddedShapes | None = None) -> ColorSchedule:
    """Colour the conflict graph of an (m, k) neighbour array and lay the
    colours out as flat edge lists,
    cut into scan steps of about ``chunk`` units (see :class:`ColorSchedule`);
    by default ``chunk = E // n_classes`` (at least 256), E the edge ×
    class updates a step aims at on ``platform``
    (:func:`platforms.schedule_step_elements`: a cache's worth on a CPU, whole
    colours on an accelerator; default platform: where
    computations run now, :func:`platforms.platform`).

    Any order of the colours gives an exact schedule; it runs them in reverse
    order of :func:`color_conflict_graph`'s largest-first colouring (its
    colour c becomes ``n_colors − 1 − c``).  The first colour of a
    largest-first colouring holds the hubs and a maximal independent set
    around them; leveraging them last rather than first gives one pass the
    test accuracy of the sequential orders (docs/performance.md#the-colored-schedule,
    accuracy of the colour order).

    ``pad_to`` (``fit`` on at most ``shared_sizes.SHARED_MAX_ROWS`` examples) pads
    the schedule to shapes that nearby sizes share, so that one compiled
    colouring and :func:`boost_colored` serve cross-validation folds (where
    each fold's data-dependent shapes would compile their own): the
    examples to ``pad_to.rows`` ≥ m (the padding's sentinel is that, not m,
    for :func:`boost_colored` on Y padded alike), the steps to a power of two
    ≥ 4k (padding steps hold only padding; :func:`boost_colored` skips them
    given ``n_steps``: a fold's colour count varied 14–17 at m = 824, k = 6)
    and L and S to three significant bits of ``ALIGN`` blocks, each at least
    ``pad_to``'s.  The colours and the steps that run are unchanged."""
    schedule, _ = _host_schedule(neighbors, chunk, n_classes, platform, pad_to)
    return ColorSchedule(*(to_device(a) for a in schedule[:3]), schedule.colors)


def _host_schedule(neighbors, chunk, n_classes: int, platform, pad_to):
    """:func:`color_schedule`'s arrays on the host, and the number of its
    steps that hold examples (the padding steps come last)."""
    if chunk is None:
        elements = platforms.schedule_step_elements(platform)
        chunk = max(256, elements // max(int(n_classes), 1))
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValueError(f"chunk must be a positive number of edges, got {chunk!r}")
    nbrs = np.asarray(neighbors)
    csr = inverse_csr(nbrs)
    counts_np = csr[0]
    m = nbrs.shape[0]
    rows = m if pad_to is None else max(int(pad_to.rows), m)  # the padding's sentinel
    least = pad_to or PaddedShapes(rows=m)

    def shape(n: int, align: int, at_least: int) -> int:
        return round_up(n, align) if pad_to is None else max(in_blocks(n, align), at_least)

    def padded_steps(n: int) -> int:  # never run (boost_colored's n_steps): as coarse as memory allows
        return n if pad_to is None else max(1 << max(0, max(n, 4 * nbrs.shape[1]) - 1).bit_length(), least.steps)

    # run from the last colour of the largest-first colouring to the first
    # (see the docstring): relabelled so that colour 0 goes first
    colors = _colour(nbrs, csr, color_batch_elements(m), rows=rows)
    colors = (colors.max(initial=0) - colors).astype(np.int32)
    order = stable_order(colors, int(colors.max(initial=0)) + 1)  # examples grouped by colour, by index within
    lens = counts_np[order]
    units = lens + 1
    before = np.cumsum(units) - units  # units before each example (in this order)
    first_of_color = np.searchsorted(colors[order], colors[order], side="left")
    part = (before - before[first_of_color]) // int(chunk)  # part of its colour
    new_step = np.ones(m, bool)
    new_step[1:] = (colors[order][1:] != colors[order][:-1]) | (part[1:] != part[:-1])
    step = np.cumsum(new_step) - 1
    n_steps = int(step[-1]) + 1 if m else 0
    step_start = np.flatnonzero(new_step)
    slot = np.arange(m) - step_start[step]
    width = shape(int(slot.max()) + 1 if m else 1, ALIGN, least.width)
    steps = padded_steps(n_steps)  # ≥ n_steps: the padding steps hold only padding
    examples = np.full((steps, width), rows, np.int32)
    examples[step, slot] = order
    # edges: for each example j (in this order) its n_j members
    edge_counts = np.bincount(step, weights=lens, minlength=n_steps).astype(np.int64)
    length = shape(max(1, int(edge_counts.max()) if n_steps else 1), ALIGN, least.length)
    edge_member = np.full((steps, length), rows, np.int32)
    edge_segment = np.full((steps, length), width, np.int32)
    # the members of each example, in this order (inv(j) from the compressed arrays)
    flat_member = members_in_order(csr, order).astype(np.int32)
    flat_segment = np.repeat(slot.astype(np.int32), lens)
    # a step's edges are one contiguous run of the flat arrays: a slice copy per
    # step (n_steps of them, not one per edge)
    bounds = np.concatenate([[0], np.cumsum(edge_counts)])
    for t in range(n_steps):
        a, b = bounds[t], bounds[t + 1]
        edge_member[t, : b - a] = flat_member[a:b]
        edge_segment[t, : b - a] = flat_segment[a:b]
    return ColorSchedule(edge_member, edge_segment, examples, colors), n_steps


def padded_schedule(neighbors, *, n_classes: int, platform: str | None, pad_to: PaddedShapes):
    """:func:`color_schedule` padded to at least ``pad_to`` (``fit``'s and
    ``select``'s shared sizes), with what :func:`boost_colored` needs to run
    it: (the schedule, the number of its steps that hold examples — the
    padding steps come last — and its :class:`PaddedShapes`: rows, steps T,
    length L (edges a step), width S (examples a step))."""
    schedule, real_steps = _host_schedule(neighbors, None, n_classes, platform, pad_to)
    T, L = schedule.edge_member.shape
    sizes = PaddedShapes(rows=max(int(pad_to.rows), schedule.colors.size), steps=T, length=L,
                         width=schedule.examples.shape[1])
    return ColorSchedule(*(to_device(a) for a in schedule[:3]), schedule.colors), real_steps, sizes


def stack_schedules(schedules) -> ColorSchedule:
    """n schedules of the same m → one with a leading block axis, for a
    ``jax.vmap`` of :func:`boost_colored` (the blocks of
    :func:`jaxnn.ensemble.fit_split`).

    Each is padded to the largest step count T, edge length L and width S:
    a padding step has only padding edges (member m, segment S) and padding
    examples (m), so it changes nothing — the padded schedule gives exactly
    the same α and edges (its trace repeats the last risk at padding steps).

    Returns:
      A :class:`ColorSchedule` with edge_member, edge_segment (n, T, L),
      examples (n, T, S) and colors (n, m).
    """
    schedules = list(schedules)
    if not schedules:
        raise ValueError("stack_schedules needs at least one schedule")
    m = schedules[0].colors.size
    if any(s.colors.size != m for s in schedules):
        raise ValueError("stack_schedules: the schedules are for different numbers of examples")
    T = max(s.n_steps for s in schedules)
    L = max(int(s.edge_member.shape[1]) for s in schedules)
    S = max(int(s.examples.shape[1]) for s in schedules)
    n = len(schedules)
    edge_member = np.full((n, T, L), m, np.int32)
    edge_segment = np.full((n, T, L), S, np.int32)
    examples = np.full((n, T, S), m, np.int32)
    for b, s in enumerate(schedules):
        t, length = s.edge_member.shape
        width = s.examples.shape[1]
        seg = np.asarray(s.edge_segment)
        edge_member[b, :t, :length] = np.asarray(s.edge_member)
        edge_segment[b, :t, :length] = np.where(seg == width, S, seg)  # its padding segment → the common one
        examples[b, :t, :width] = np.asarray(s.examples)
    colors = np.stack([s.colors for s in schedules])
    return ColorSchedule(jnp.asarray(edge_member), jnp.asarray(edge_segment), jnp.asarray(examples), colors)


def colored_order(schedule: ColorSchedule) -> np.ndarray:
    """The sequential example order the schedule is equivalent to, (m,)."""
    ex = np.asarray(schedule.examples).reshape(-1)
    return ex[ex < schedule.colors.size].astype(np.int32)


@programs.jit(static_argnames=("algorithm", "loss", "passes", "trace"))
def boost_colored(Y, E0, counts, schedule: ColorSchedule, n_points=None, n_steps=None, weights=None, *, algorithm,
                  loss: Loss, passes: int, trace: bool) -> BoostResult:
    """``passes`` passes of the coloured schedule: one scan step per part of a colour.

    Equals :func:`jaxnn._src.boosting.boost` run in :func:`colored_order`
    (tests check it).  ``trace`` holds the total surrogate risk after each step.

    Args:
      Y: (M, C) labels in {−1, +1}; E0: (M, C) initial edges, or None for
        ``algorithm.init_edges(loss, Y)`` computed inside the program;
        counts: (M,) n_j.
      schedule: its padding's sentinel is M (``color_schedule(shared=True)``
        for a padded problem).
      n_points: None (M = m), or m as a traced int32 scalar for a problem
        padded to M rows as ``fit`` pads small ones (rows from m on: y = 0,
        n_j = 0, in no step): UNN's m and the trace's mean are over the m
        examples, and a new m compiles nothing.
      n_steps: None (every step of the schedule runs), or the schedule's
        first T' steps that hold examples, a traced int32 scalar: a pass runs
        those only (a ``fori_loop`` of passes·T' steps instead of a scan of
        passes·T), so a schedule padded to many steps costs none of them.
        The trace then holds the passes·T' risks first, then zeros.
      weights: None, or the :class:`~jaxnn._src.steps.Weights` (u, mass)
        of a weighted risk (0 on padding rows).
    """
    m, C = Y.shape
    size = m if n_points is None else n_points  # the examples' m (a padded problem: traced)
    dtype = Y.dtype
    Yp, Yu, Up = steps.labels(Y, weights)
    state0 = steps.start(Y, E0, algorithm=algorithm, loss=loss, n_points=n_points, weights=weights)
    counts_p = steps.with_sentinel(counts.astype(jnp.int32) if weights is None else weights.mass)
    S = schedule.examples.shape[1]
    T = schedule.examples.shape[0]

    def step(state, c):
        ei = schedule.edge_member[c]  # (L,)
        seg = schedule.edge_segment[c]  # (L,)
        ex = schedule.examples[c]  # (S,)
        ex_p = jnp.concatenate([ex, jnp.array([m], ex.dtype)])  # pad segment S -> sentinel
        layout = Segments(seg, S + 1)
        y_j = Yp[ex_p[seg]]
        r = Yp[ei] * y_j  # (L, C), 0 on padding
        e = jax.lax.optimization_barrier(state.edges[ei])  # keeps the gather out of the vectorised w(e) loop
        n = jnp.broadcast_to(counts_p[ex_p][:, None], (S + 1, C))
        delta = algorithm.delta(loss, e, r if Up is None else Yu[ei] * y_j, n, size, layout)  # (S+1, C)
        delta = jnp.where((ex_p < m)[:, None], delta, 0.0)
        state = steps.apply(loss, state, ei, steps.edge_change(delta[seg], r),  # r = y_ic·y_jc of the step's edges
                            valid=(ei < m)[:, None], size=size * C, u=None if Up is None else Up[ei][:, None], old=e,
                            trace=trace, at=ex_p, delta=delta)
        return state, state.risk

    if n_steps is None:
        state, risks = jax.lax.scan(step, state0, jnp.tile(jnp.arange(T), passes))
        return steps.finish(state, risks, m, trace)

    def run(i, carry):
        state, risks = carry
        state, risk = step(state, i % n_steps)
        return state, (risks.at[i].set(risk) if trace else risks)

    risks0 = jnp.zeros((passes * T,) if trace else (0,), dtype)
    state, risks = jax.lax.fori_loop(0, passes * n_steps, run, (state0, risks0))
    return steps.finish(state, risks, m, trace)
