"""How ``fit`` runs its boosting: which chooser ``"auto"`` means
(:func:`auto_chooser`), whether the sequential steps run windowed
(:mod:`jaxnn._src.window`), and small problems padded to shared sizes so
that refits of nearby sizes (cross-validation folds, ``posterior="auto"``'s
auxiliary fit, :func:`jaxnn.select`) reuse one compiled program."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from jaxnn._src import shared_sizes, sharding, window
from jaxnn._src.boosting import BoostResult, boost
from jaxnn._src.inverse import inverse_counts, inverse_neighbors
from jaxnn._src.progress import logger, progress_wanted
from jaxnn._src.schedule import ScheduleSizes, boost_colored, padded_schedule
from jaxnn._src.shared_sizes import in_blocks, padded_rows, shared_k, shared_rows, shared_width, to_device


#: m·C from which ``chooser="auto"`` runs the colored schedule on CPU too
AUTO_COLORED_MIN_STATE_CPU = 5_000_000


def auto_chooser(m: int, rounds: int, platform: str, n_classes: int = 1) -> str:
    """What ``fit(chooser="auto")`` runs: ``"colored"`` when ``rounds`` is a
    multiple of m (the schedule runs whole passes) on an accelerator
    (``platform`` not ``"cpu"``), or on CPU from m·C ≥
    :data:`AUTO_COLORED_MIN_STATE_CPU`; else ``"lazy"``.

    Both visit every example once per pass and reach the same accuracy
    (asv ``ChooserAccuracy``: one GNNB pass over 12 UCI sets × 3 splits,
    lazy 0.9224, colored 0.9229; 10⁵-point synthetic set 0.9533 / 0.9553).
    On a GPU a sequential step costs ~8.5 µs (one H200, m = 10⁵, k = 10,
    C = 10, stop 34: a lazy pass 0.85 s, the colored one 11.8 ms).  On 2
    CPU cores, ``fit`` on a precomputed random graph (k = 10), first call in
    a fresh process / warm, lazy vs colored:
    m = 10⁵, C = 10: 3.5 / 0.59 vs 4.75 / 0.30 s; 2·10⁵: 4.5 / 1.3 vs
    5.0 / 0.65; 3·10⁵: 4.9 / 2.0 vs 5.9 / 1.0; 5·10⁵: 6.7 / 3.7 vs
    6.6 / 1.8; 10⁶: 11.1 / 7.4 vs 8.6 / 3.8; m = 10⁵, C = 100: 4.9 / 2.1–2.5
    vs 5.1 / 1.1–1.3 — the schedule is ~2× faster warm from 10⁵ on, and its
    compilation (the colouring compiles per size) stops costing more than
    that from m·C ≈ 5·10⁶; smaller fits (the UCI sets: ~1 s more compile
    colored) stay lazy on CPU.
    """
    if rounds % m:
        return "lazy"
    return "colored" if platform != "cpu" or m * int(n_classes) >= AUTO_COLORED_MIN_STATE_CPU else "lazy"


def runs_windowed(m: int, n_classes: int, chooser: str, devices) -> bool:
    """Whether the sequential steps run in windows (:mod:`window`): the lazy
    and random choosers on one device of ``window.WINDOWED_PLATFORMS`` (a CPU)
    from m·C ≥ ``window.WINDOWED_MIN_STATE``."""
    return (chooser not in ("greedy", "colored") and devices is None and m * n_classes >= window.WINDOWED_MIN_STATE
            and sharding.platform() in window.WINDOWED_PLATFORMS)


def boosts_at_shared_size(m: int, n_classes: int, chooser: str, devices) -> bool:
    """Whether ``fit`` runs its boosting padded to shared sizes
    (:func:`shared_size_boost`, :func:`shared_size_colored`): the
    sequential scan, plain or windowed (lazy, random, greedy), or the colored
    schedule (since stop 29), of at most :data:`shared_sizes.SHARED_MAX_ROWS` examples on one
    device — where a new size's compilation outweighs the padded steps."""
    return devices is None and m <= shared_sizes.SHARED_MAX_ROWS  # read here: one setting for search and boosting


class SharedShapes(NamedTuple):
    """The padded sizes of a shared-size boosting (:func:`shared_size_boost`):
    examples (rows), steps and the inverse neighbourhoods' width."""

    rows: int
    steps: int
    width: int

    @classmethod
    def of(cls, m: int, steps: int, largest: int, k: int) -> "SharedShapes":
        """The shapes of m examples, ``steps`` steps and a largest inverse
        neighbourhood ``largest`` (P) of a k-NN graph: :func:`shared_sizes.shared_rows`
        (m), :func:`shared_sizes.in_blocks` (steps), :func:`shared_sizes.shared_width`
        (max(P, 8·:func:`shared_sizes.shared_k` (k, m))): the ks that share a search
        share a width."""
        return cls(shared_rows(m), in_blocks(steps), shared_width(max(int(largest), 8 * shared_k(k, m))))


class WindowedShapes(NamedTuple):
    """The padded sizes of a shared-size windowed scan: examples (rows), the
    layout's :class:`window.WindowSizes` and the static ``max_count``."""

    rows: int
    layout: window.WindowSizes
    max_count: int


def shared_size_boost(Y_np, nbrs, order, dtype, *, algorithm, loss, greedy: bool, windowed: bool, trace: bool,
                       like: SharedShapes | WindowedShapes | None = None):
    """:func:`boost` on a small problem padded to shared sizes: the m examples
    to M = :func:`shared_sizes.shared_rows` (m) rows (y = 0, n_j = 0, no one's
    neighbour), the T steps to :func:`shared_sizes.in_blocks` (T) (no-ops) and the
    inverse neighbourhoods' width to :func:`shared_sizes.shared_width` (max(P, 8K)),
    K = :func:`shared_sizes.shared_k` (k, m) (the largest one, P, varies with the
    data — Gaussian folds of 400 points in 16 dimensions, k = 10, gave P =
    56–80, all under the floor 8k = 80 at stop 27; a power of two, coarser, made a step at m = 12 000 read 256
    members instead of 160: 12 % slower warm), so that fits of nearby sizes
    — cross-validation folds, a learning curve — reuse one compiled boosting
    instead of compiling ~0.15–0.3 s each (2 CPU cores).
    The same steps run on the same edges: the result is that of the
    unpadded call (α, edges and trace sliced back on the host).  ``like``:
    shapes to pad to at least (another fit's, to share its compilation).
    ``windowed``: the windowed scan (:mod:`window`), its layout padded too
    (:func:`shared_size_windowed`).

    Returns (:class:`BoostResult`, the :class:`SharedShapes` or
    :class:`WindowedShapes` used).
    """
    if windowed:
        return shared_size_windowed(Y_np, nbrs, order, dtype, algorithm=algorithm, loss=loss, trace=trace, like=like)
    m, k = nbrs.shape
    shapes = SharedShapes.of(m, order.size, inverse_counts(nbrs, m).max(), k)
    if like is not None:
        shapes = SharedShapes(*(max(a, b) for a, b in zip(shapes, like)))
    Y = to_device(padded_rows(Y_np, shapes.rows), dtype)
    inv, neighbors = padded_graph(nbrs, shapes.rows, shapes.width, greedy=greedy)
    result = boost(Y, None, inv.members, inv.counts, neighbors,  # E0 = init_edges(Y) in the program
                   to_device(padded_rows(order, shapes.steps)), to_device(m, np.int32),
                   to_device(order.size, np.int32), algorithm=algorithm, loss=loss, greedy=greedy, trace=trace)
    return _first_of(result, m, order.size), shapes


def _first_of(result: BoostResult, m: int, steps: int) -> BoostResult:
    """A padded boosting's result cut to its m examples and steps on the host
    (nothing compiles per size)."""
    alpha, edges = (to_device(np.asarray(a)[:m]) for a in (result.alpha, result.edges))
    trace = None if result.trace is None else to_device(np.asarray(result.trace)[:steps])
    return BoostResult(alpha, edges, trace)


def shared_size_windowed(Y_np, nbrs, order, dtype, *, algorithm, loss, trace: bool,
                          like: WindowedShapes | None = None):
    """:func:`window.boost_windowed` on a small problem padded to shared sizes:
    the examples to :func:`shared_sizes.shared_rows` (m) rows (y = 0, n_j = 0), the
    layout's windows to three significant bits (``window_layout(shared=True)``:
    empty windows change nothing), m traced (``n_points``) and the trace cut
    on the host — so that cross-validation folds of a many-class problem
    (m·C ≥ ``window.WINDOWED_MIN_STATE``: from m = 656 at C = 100) share one
    compiled scan (5 folds of 1602–1603 points, C = 100, compiled it 3 times,
    ~0.26 s each on 2 CPU cores).  ``like``: another fit's
    :class:`WindowedShapes`, to pad to at least.

    Returns (:class:`BoostResult`, the :class:`WindowedShapes` used).
    """
    m, k = nbrs.shape
    layout, shapes = windowed_layout(nbrs, order, window.window_steps(Y_np.shape[1], shared_k(k, m)), like=like)
    Y = to_device(padded_rows(Y_np, shapes.rows), dtype)
    counts = to_device(padded_rows(inverse_counts(nbrs, m), shapes.rows))
    result = window.boost_windowed(Y, None, counts, layout, to_device(m, np.int32),  # E0 in the program
                                   algorithm=algorithm, loss=loss, trace=trace, max_count=shapes.max_count)
    return _first_of(result, m, order.size), shapes


def shared_size_colored(Y_np, nbrs, dtype, *, algorithm, loss, passes: int, trace: bool, platform: str,
                         like: ScheduleSizes | None = None):
    """:func:`schedule.boost_colored` on a small problem padded to shared
    sizes: the examples to :func:`shared_sizes.shared_rows` (m) rows (y = 0, n_j = 0,
    in no step), the edges and examples a step to three significant bits and
    the steps to a power of two ≥ 4k (``color_schedule(pad_to=)``), m and
    the steps that run traced
    (``n_points``, ``n_steps``: the padding steps do not run) and the trace
    cut on the host — so that cross-validation folds share one compiled
    colouring and schedule, where each fold's data-dependent shapes compiled
    both (~0.9 s on 2 CPU cores; on a GPU or TPU ``chooser="auto"`` runs
    the colored schedule at every size).  ``like``: another fit's
    :class:`schedule.ScheduleSizes`, to pad to at least.

    Returns (:class:`BoostResult`, the :class:`schedule.ScheduleSizes` used).
    """
    m = nbrs.shape[0]
    pad_to = ScheduleSizes(shared_rows(m), 0, 0, 0)  # the steps: a power of two ≥ 4k, never run
    if isinstance(like, ScheduleSizes):
        pad_to = ScheduleSizes(*(max(a, b) for a, b in zip(pad_to, like)))
    schedule, real_steps, sizes = padded_schedule(nbrs, n_classes=Y_np.shape[1], platform=platform, pad_to=pad_to)
    if progress_wanted():  # n_colors reads all m colours
        logger.info("fit: %d colours in %d scan steps a pass (instead of %d sequential steps)", schedule.n_colors,
                    real_steps, m)
    Y = to_device(padded_rows(Y_np, sizes.rows), dtype)
    counts = to_device(padded_rows(inverse_counts(nbrs, m), sizes.rows))
    # E0 computed in the program; the (m,) colours, which the scan does not read, left out of its arguments
    result = boost_colored(Y, None, counts, schedule._replace(colors=None), to_device(m, np.int32),
                           to_device(real_steps, np.int32), algorithm=algorithm, loss=loss, passes=passes, trace=trace)
    return _first_of(result, m, passes * real_steps), sizes


def windowed_layout(nbrs, order, steps: int, like: WindowedShapes | None = None):
    """(the :func:`window.window_layout` of ``order``, ``steps`` a window,
    padded to shared sizes; its :class:`WindowedShapes`): rows
    :func:`shared_sizes.shared_rows` (m), ``max_count`` :func:`window.shared_max_count`,
    each at least ``like``'s."""
    m = nbrs.shape[0]
    rows, max_count = shared_rows(m), window.shared_max_count(inverse_counts(nbrs, m))
    if like is not None:
        rows, max_count = max(rows, like.rows), max(max_count, like.max_count)
    layout = window.window_layout(nbrs, order, steps, shared=True, at_least=None if like is None else like.layout)
    return layout, WindowedShapes(rows, layout.sizes, max_count)


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
