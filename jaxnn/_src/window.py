"""The sequential scan in windows: S steps at a time on a small local copy of
the edges they touch.

On CPU, XLA splits every gather and scatter on an array over 256 KB across
its thread pool (docs/performance.md); a sequential step touches a few
hundred bytes of the (m, C) edge state, so from m·C ≈ 6·10⁴ on the dispatch,
not the work, sets the step's cost.  Here the steps of the ``lazy`` and
``random`` choosers run in windows of S consecutive steps: the rows U_b =
∪ inv(j) over the window's examples are gathered once into a local (U + 1,
C) array (U·C ≲ 2¹⁵), the S steps run on it, and the rows are scattered
back — the same arithmetic in the same order as
:func:`jaxnn._src.boosting.boost`, on arrays small enough to stay out of the
thread pool.  α of the window's examples is added once per window as well.

The layout is built once on the host (:func:`window_layout`): per window the
global rows U_b (padded with the sentinel m), and per step its members as
local row numbers in a flat list read with a ``dynamic_slice`` at the step's
offset (entries past n_j belong to the next step and are masked).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import programs, steps
from jaxnn._src.inverse import inverse_csr, members_in_order
from jaxnn._src.losses import Loss
from jaxnn._src.shared_sizes import PaddedShapes, in_blocks, shared_width, to_device
from jaxnn._src.sorting import unique_inverse
from jaxnn._src.steps import CHUNK, BoostResult, step_widths

__all__ = ["WindowLayout", "window_layout", "boost_windowed", "shared_max_count", "WINDOW_ELEMENTS"]

#: local edge entries (U·C) a window aims at: S = this / (C·k) steps
WINDOW_ELEMENTS = 1 << 15

class WindowLayout(NamedTuple):
    """Host-built layout of the windowed scan.

    Attributes:
      rows: (B, U) int32 global rows of each window, padded with m.
      examples: (B, S) int32 the examples of each window's steps, padded with m.
      local: (L,) int32 members of every step as local row numbers, step after
        step (padded with U at the end).
      start: (B, S) int32 offset of each step's members in ``local``.
      chunks: (B,) int32 the window's rows in chunks of U / :data:`ROW_CHUNKS`
        (U a multiple of it): only those are gathered and scattered back.
    """

    rows: jax.Array
    examples: jax.Array
    local: jax.Array
    start: jax.Array
    chunks: jax.Array

    @property
    def sizes(self) -> PaddedShapes:
        """The layout's data-dependent sizes (what the compiled scan depends
        on): windows B, rows per window U (``window_rows``) and the ``local``
        length L — the least sizes another layout is padded to
        (:func:`window_layout`'s ``at_least``) to reuse this one's compilation."""
        B, U = self.rows.shape
        return PaddedShapes(windows=B, window_rows=U, length=self.local.shape[0])


#: a window's rows are gathered and scattered back in chunks of U / ROW_CHUNKS,
#: as many as it has rows, not all at the widest window's U: on a graph with
#: hubs (U ≈ P) most windows are far narrower
ROW_CHUNKS = 8


def window_steps(n_classes: int, k: int) -> int:
    """Steps per window S: a power of two near ``WINDOW_ELEMENTS / (C·k)``, ≥ 16."""
    target = max(16, WINDOW_ELEMENTS // max(1, n_classes * k))
    return 1 << (target.bit_length() - 1)


#: windows laid out at a time by :func:`window_layout`: its host temporaries
#: take ~90 bytes per (step, member), so all at once 4 passes at m = 10⁵,
#: k = 30 held 1.0 GB (10⁶ points: ~10 GB); in pieces they stay ~100 MB
LAYOUT_WINDOWS = 512


def window_layout(neighbors, order, steps: int, *, shared: bool = False,
                  at_least: PaddedShapes | None = None) -> WindowLayout:
    """The windows of the example sequence ``order`` (T,), ``steps`` at a time,
    for the inverse neighbourhoods of the (m, k) ``neighbors``; built
    :data:`LAYOUT_WINDOWS` windows at a time (the same layout).

    U and L are always rounded up to shared sizes.  ``shared``: the number
    of windows B too, the extra windows empty (steps on the sentinel m: no
    change), so that sequences of nearby lengths share the compiled scan
    (``fit`` pads small problems so).  ``at_least``: pad B, U and L to at
    least these (another layout's :attr:`WindowLayout.sizes`)."""
    nbrs = np.asarray(neighbors)
    order = np.asarray(order, np.int64)
    csr = inverse_csr(nbrs)
    counts = csr[0]
    m, T, S = nbrs.shape[0], order.size, int(steps)
    n_windows = max(1, -(-T // S))
    if shared:
        n_windows = in_blocks(n_windows, 1)
    if at_least is not None:
        n_windows = max(n_windows, at_least.windows)
    examples = np.full(n_windows * S, m, np.int64)
    examples[:T] = order
    lens = np.concatenate([counts, [0]])[examples]  # sentinel m: no members
    offsets = np.cumsum(lens) - lens
    pieces = [_window_rows(csr, examples[a:a + LAYOUT_WINDOWS * S], lens[a:a + LAYOUT_WINDOWS * S], m, S)
              for a in range(0, n_windows * S, LAYOUT_WINDOWS * S)]
    # U and the length of ``local`` depend on the data: both are rounded up to shared sizes
    # (three significant bits), so refits on other data of the same size reuse the compiled scan
    U = shared_width(-(-max(rows.shape[1] for rows, _ in pieces) // ROW_CHUNKS)) * ROW_CHUNKS
    if at_least is not None:
        U = max(U, at_least.window_rows)
    rows = np.concatenate([np.pad(r, ((0, 0), (0, U - r.shape[1])), constant_values=m) for r, _ in pieces])
    pad = shared_max_count(counts) + CHUNK + 1  # a slice of any step width stays in bounds (no clamping)
    local = np.concatenate([loc for _, loc in pieces])
    length = max(in_blocks(local.size + pad), 0 if at_least is None else at_least.length)
    local = np.concatenate([local, np.full(length - local.size, U, np.int32)])
    chunk = U // ROW_CHUNKS
    chunks = -(-np.sum(rows < m, axis=1) // chunk)
    as32 = functools.partial(to_device, dtype=np.int32)  # jnp.asarray would compile a copy per shape
    return WindowLayout(as32(rows), as32(examples.reshape(n_windows, S)), as32(local), as32(offsets.reshape(n_windows, S)),
                        as32(chunks))


def shared_max_count(counts) -> int:
    """``boost_windowed``'s ``max_count`` for inverse-neighbourhood sizes
    ``counts``: the largest rounded up to :func:`shared_sizes.shared_width` (as the
    layout's U and length are), so that refits on other data of the same size
    reuse the compiled scan rather than compile their own; a wider top step
    is inert up to float rounding."""
    return shared_width(int(np.max(counts, initial=0)))


def _window_rows(csr, examples, lens, m: int, S: int):
    """((b, U_piece) int32 global rows of each of these windows, padded with m;
    (entries,) int32 each step's members as local row numbers) for a run of
    whole windows (``examples`` of b·S steps, ``lens`` their n_j)."""
    n_windows = examples.size // S
    flat = members_in_order(csr, examples)
    window = np.repeat(np.arange(examples.size) // S, lens)
    # local row number of each member within its window: rank among the window's distinct rows
    keys, inverse = unique_inverse(window * (m + 1) + flat, n_windows * (m + 1))
    key_window = keys // (m + 1)
    first = np.searchsorted(key_window, np.arange(n_windows))
    local = (inverse - first[window]).astype(np.int32)
    sizes = np.bincount(key_window, minlength=n_windows)
    U = max(1, int(sizes.max(initial=1)))
    rows = np.full((n_windows, U), m, np.int32)
    rows[key_window, np.arange(keys.size) - first[key_window]] = keys % (m + 1)
    return rows, local


@programs.jit(static_argnames=("algorithm", "loss", "trace", "n_steps", "max_count", "calls", "narrow"))
def boost_windowed(Y, E0, counts, layout: WindowLayout, n_points=None, *, algorithm, loss: Loss, trace: bool,
                   n_steps: int | None = None, max_count: int, calls: int = 1, narrow: bool | None = None) -> BoostResult:
    """The steps of ``layout`` — the same result as
    :func:`jaxnn._src.boosting.boost` on its example sequence (tested).

    Args:
      Y: (M, C) labels in {−1, +1}; E0: (M, C) initial edges, or None for
        ``algorithm.init_edges(loss, Y)`` computed inside the program;
        counts: (M,) n_j.
      layout: :func:`window_layout` of the sequence, over a graph of m ≤ M
        points (its sentinel is m).
      n_points: None (M = m), or m as a traced int32 scalar for a problem
        padded to M rows as ``fit`` pads small ones (rows from m on: y = 0,
        n_j = 0, in no inverse neighbourhood): UNN's m and the trace's
        mean are over the m examples.  A new m then compiles nothing.
      n_steps: the sequence's length T, static: the trace is cut to it (the
        last window is padded); None: the trace of every window's S steps
        (the steps past T change nothing), for the caller to cut.
      max_count: at least the largest n_j (P), static: the step widths —
        :func:`shared_max_count`, which data of one size share.
      calls, narrow: static, as for :func:`jaxnn._src.boosting.boost`.
    """
    M, C = Y.shape
    m = M if n_points is None else n_points  # the examples' m (a padded problem: traced)
    dtype = Y.dtype
    n_windows, U = layout.rows.shape
    S = layout.examples.shape[1]
    Yp = steps.labels(Y).y
    state0 = steps.start(Y, E0, algorithm=algorithm, loss=loss, n_points=n_points)
    counts_p = steps.with_sentinel(counts.astype(jnp.int32))
    P = max(int(max_count), 1)
    widths = step_widths(P, work=calls * n_windows * S * P * C, narrow=narrow)
    chunk = steps.chunk_width(widths, P)

    def members(offset, n, width):
        """Local rows of a step's members, ``width`` from ``offset`` (U past n)."""
        idx = jax.lax.dynamic_slice(layout.local, (offset,), (width,))
        return jnp.where(jnp.arange(width) < n, idx, U)

    def gather(w, Ew, Yw, y_j, offset, n):  # the local edges, r and n_j of the step's first w members
        idx = members(offset, n, w)
        return Ew[idx], Yw[idx] * y_j[None, :], jnp.broadcast_to(n, (C,))

    def step(carry, x):
        local, Yw = carry  # local: the window's edges (no α: added once a window) and the risk
        y_j, n, offset = x

        delta = steps.narrow_delta(algorithm, loss, widths, n, gather, m, local.edges, Yw, y_j, offset, n)

        def update(start, local):
            start = 0 if start is None else start
            idx = members(offset + start, n - start, chunk)
            return steps.apply(loss, local, idx, steps.edge_change(delta, Yw[idx], y_j), valid=(idx < U)[:, None],
                               size=m * C, trace=trace)

        local = steps.over_chunks(n, chunk, P, update, local)
        return (local, Yw), (delta, local.risk)

    row_chunk = U // ROW_CHUNKS

    def window(carry, b):
        state, Ew, Yw = carry
        rows = layout.rows[b]
        ex = layout.examples[b]
        n_chunks = layout.chunks[b]

        def load(i, local):  # chunk i of the window's rows into the local copies
            r = jax.lax.dynamic_slice(rows, (i * row_chunk,), (row_chunk,))
            at = (i * row_chunk, 0 * i)
            return (jax.lax.dynamic_update_slice(local[0], state.edges[r], at),
                    jax.lax.dynamic_update_slice(local[1], Yp[r], at))

        def store(i, Ep):  # and back (padding rows in the last chunk write the sentinel's 0 back to row m)
            r = jax.lax.dynamic_slice(rows, (i * row_chunk,), (row_chunk,))
            return Ep.at[r].set(jax.lax.dynamic_slice(Ew, (i * row_chunk, 0 * i), (row_chunk, C)))

        # the local copies are reused window to window: rows past this window's chunks hold
        # the last windows' values, which no member reads (its rows are < its own count;
        # masked slots read row U, the sentinel, 0 throughout)
        Ew, Yw = jax.lax.fori_loop(0, n_chunks, load, (Ew, Yw))
        xs = (Yp[ex], counts_p[ex], layout.start[b])
        (local, _), (deltas, risks) = jax.lax.scan(step, (steps.State(Ew, None, state.risk), Yw), xs)
        Ew = local.edges
        state = steps.State(jax.lax.fori_loop(0, n_chunks, store, state.edges), state.alpha, local.risk)
        state = steps.apply(loss, state, at=ex, delta=deltas)  # padding steps: δ = 0 on row m
        return (state, Ew, Yw), risks

    local0 = jnp.zeros((U + 1, C), dtype)
    (state, _, _), risks = jax.lax.scan(window, (state0, local0, local0), jnp.arange(n_windows))
    return steps.finish(state, risks.reshape(-1)[:n_steps], M, trace)
