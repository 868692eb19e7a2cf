"""Shared sizes: the padded shapes that let problems of nearby sizes share
compiled programs.

A new array shape costs a compilation, so jaxnn pads what varies from call to
call: training sets to :func:`shared_rows`, query batches to
:func:`query_rows`, inverse neighbourhoods to :func:`shared_width` and, for
small exact searches, the neighbours found to :func:`shared_k`.
Padding and cutting happen on the host where they can (:func:`padded_rows`,
:func:`first_rows`, :func:`to_device`), where nothing compiles per size; what only a
program reads is handed to it as a NumPy array (:func:`program_argument`).
Setting :data:`SHARED_MAX_ROWS` (or :data:`SHARED_K_MAX_ROWS`) to 0 turns the
sharing off; every module reads them here, at call time.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import platforms


#: training sets of at most this many points are searched (and boosted, by
#: ``fit``) padded to :func:`shared_rows`: a few compiled programs serve every
#: size.  Beyond, a new size's compilation weighs less than padded work would
#: (up to a quarter more rows and steps: half as much search again)
SHARED_MAX_ROWS = 16384

#: exact searches of at most this many training points find the neighbours of
#: a shared k (:func:`shared_k`) and keep the first k
SHARED_K_MAX_ROWS = 2048

#: exact searches of at most this many training points find at least
#: :data:`SMALL_SHARED_K` neighbours (:func:`shared_k`): every k up to it shares
#: one search, boosting width and rule, where each power of two would compile
#: its own (a compilation outweighs searching 64 neighbours among so few)
SMALL_K_MAX_ROWS = 512

#: the fewest neighbours a search of at most :data:`SMALL_K_MAX_ROWS` points
#: finds: the power of two at ``fit(k="auto")``'s largest candidate k (50), so
#: that whichever k it chooses runs the programs its other folds compiled
SMALL_SHARED_K = 64

#: queries above which a search among few points keeps the floor of 8 (its
#: answer, 64 columns a query, would hold 8 times the memory where compiling
#: weighs nothing beside the work); ``predict`` scores its queries in blocks
#: of this many rows, so its blocks and a fit's held-out scoring share the rule
SMALL_K_MAX_QUERIES = 1 << 16


class PaddedShapes(NamedTuple):
    """The padded sizes of a run (what its compiled program depends on); a
    size a run does not use stays 0.

    Attributes:
      rows: examples M ≥ m (rows from m on: y = 0, n_j = 0, in no one's
        inverse neighbourhood).
      steps: scan steps (sequential: T padded with no-op steps; colored: the
        schedule's steps a pass).
      width: examples a step reads — the inverse neighbourhoods' width P of
        the sequential scan, the examples S of a colored step.
      length: entries of a step's member list — the edges L of a colored
        step, the flat member list of the windowed layout.
      windows: windows B of the windowed scan.
      window_rows: rows U of a window's local copy.
      max_count: the windowed scan's static largest n_j.
    """

    rows: int = 0
    steps: int = 0
    width: int = 0
    length: int = 0
    windows: int = 0
    window_rows: int = 0
    max_count: int = 0

    def at_least(self, other: "PaddedShapes | None") -> "PaddedShapes":
        """These shapes grown to at least ``other``'s, field by field (to share
        ``other``'s compiled program); None: unchanged."""
        if other is None:
            return self
        return PaddedShapes(*(max(int(a), int(b)) for a, b in zip(self, other)))


def shared_k(k: int, m: int, queries: int = 0) -> int:
    """The neighbours a concrete exact search of m training points finds to
    answer for k: for m ≤ :data:`SHARED_K_MAX_ROWS`, the power of two ≥
    max(k, 8) — 8, 16, 32, … —, at least :data:`SMALL_SHARED_K` for m ≤
    :data:`SMALL_K_MAX_ROWS` and at most :data:`SMALL_K_MAX_QUERIES` (padded)
    query rows; else k.  The search returns them nearest
    first, exact ties to the lower index, so its first k columns are the
    k-NN; a grid of ks (3, 5, 7 → 8; 9, 11, 15 → 16; on a few hundred points
    every k up to 64) then shares one compiled search, and :func:`fit` one
    boosting width and :func:`predict` one rule, where each k would compile
    its own.  The search's time grows about linearly with the neighbours it
    finds: at this size a few milliseconds more against a compilation for
    each new k; above it the search costs more and a compilation weighs
    less.  m may be the rows the points are padded to: :func:`shared_rows`
    (m) gives the same answer, and a search or boosting padded to another's
    rows (an auxiliary fit to its main fit's) then finds the other's
    neighbours and shares its program."""
    k, m = int(k), int(m)
    if m > SHARED_K_MAX_ROWS:
        return k
    floor = SMALL_SHARED_K if m <= SMALL_K_MAX_ROWS and int(queries) <= SMALL_K_MAX_QUERIES else 8
    return max(floor, 1 << (k - 1).bit_length())


def candidates_k(ks, m: int) -> int:
    """The k that the searches, boosting and scoring of a model whose k was
    chosen among the candidates ``ks`` on m training points
    (``fit(k="auto")``) are sized for: the largest candidate where a
    search of m points finds :func:`shared_k` neighbours (m ≤
    :data:`SHARED_K_MAX_ROWS`), so that whichever k a fold chooses runs the
    one search, boosting and rule of the others' — each range of k (8, 16,
    32, 64 neighbours) would compile its own —, the first k of them summed;
    else 0 (the model's own k: exactly k neighbours, which a wider search
    would only slow)."""
    return max(int(k) for k in ks) if int(m) <= SHARED_K_MAX_ROWS else 0


def shared_rows(m: int, block: int = 128) -> int:
    """The rows a training set of m points is padded to when m ≤
    :data:`SHARED_MAX_ROWS` (else m): whole blocks of ``block``, their number
    rounded up to three significant bits (1, 2, …, 8, 10, 12, 14, 16, 20, …,
    112, 128 blocks: at most a quarter more rows, an eighth on average).
    Cross-validation folds that differ by a row, and some of a learning
    curve's steps, then share one compiled search and boosting, where each
    new m would compile its own.
    Coarser than :func:`query_rows` would merge more sizes, but a training
    set is searched against itself: its padding costs twice over."""
    m = int(m)
    return m if m > SHARED_MAX_ROWS else in_blocks(m, block)


def in_blocks(n: int, block: int = 128, bits: int = 3) -> int:
    """n rounded up to whole blocks, their number rounded up to ``bits``
    significant bits (≥ n; at most 2^(1−bits) more: a quarter for 3)."""
    blocks = -(-int(n) // block)
    step = 1 << max(0, blocks.bit_length() - bits)
    return -(-blocks // step) * step * block


def at_shared_rows(*arrays, rows: int | None = None):
    """Arrays of a training set's m rows (a model's α and labels), padded
    with zero rows to :func:`shared_rows` (m) — at least ``rows`` — on the
    host when they are concrete and m ≤ :data:`SHARED_MAX_ROWS` — as the
    search pads the points, so that the scoring of models of nearby sizes
    compiles once — else (traced, or large) as they are.  Arrays padded on the
    host are left there, for a program to read (:func:`program_argument`)."""
    m = arrays[0].shape[0]
    if m > SHARED_MAX_ROWS or any(isinstance(a, jax.core.Tracer) for a in arrays):
        return arrays
    rows = max(shared_rows(m), rows or 0)

    def padded(a):
        if a.shape[0] == rows or not platforms.on_host(a):  # itself, NumPy padded, or a jitted pad on an accelerator
            return padded_rows(a, rows)
        return program_argument(padded_rows(np.asarray(a), rows))

    return tuple(padded(a) for a in arrays)


#: queries × training rows below which a batch of queries is padded rather
#: than given a program of its own: 2¹⁶ distances, every batch of up to 512
#: queries among 128 training rows (a small fit's training points, held-out
#: part and test set) in one program.  Each padded row is scored at every
#: call (the search skips the padding's blocks), so the floor is kept low: a
#: small fit runs its search and scoring several times (``posterior="auto"``'s folds)
SMALL_SEARCH_ELEMENTS = 1 << 16

#: (padded) training rows up to which a batch of fewer queries is padded as
#: the training points are: the shape of the training graph's own search (its
#: queries are the training points), so that a small model's graph search,
#: its held-out scoring and ``predict``'s batches run one compiled search and
#: one rule, where each would compile its own.  The search skips the padding
#: rows' blocks; the rule computes them (up to about a millisecond a call here)
QUERIES_AS_TRAINING_MAX_ROWS = 1024


def query_rows(n: int, block: int = 128, among: int | None = None) -> int:
    """The rows a batch of n queries is padded to (≥ n): whole blocks of
    ``block`` rows, their number rounded up to two significant bits up to 64
    blocks (1, 2, 3, 4, 6, 8, 12, …, 48, 64: at most half more work) and
    to four beyond (72, 80, …: at most an eighth more).  A new shape costs a
    compile that outweighs searching dozens of blocks, hence the coarse steps
    while batches are small: any batch of ≤ 128 queries shares one compiled
    search, and sizes 1 … 10⁴ need 14.

    ``among``: the (padded) training rows the queries are searched among and
    scored against.  Few of them make a padded query nearly free, so the
    rows are at least :data:`SMALL_SEARCH_ELEMENTS` / among (in whole
    blocks): among 128 padded rows, every batch of up to 512 queries — a
    fit's held-out part, the training points, a test set — shares one
    compiled search, scoring and posterior.  Among at most
    :data:`QUERIES_AS_TRAINING_MAX_ROWS` rows, the batch has at least the
    rows of a search of the training points themselves, whose program it
    then runs."""
    blocks = -(-int(n) // block)
    rows = in_blocks(n, block, bits=2 if blocks <= 64 else 4)
    if among is None:
        return rows
    among = int(among)
    if among <= QUERIES_AS_TRAINING_MAX_ROWS:  # as the training points' own search pads them
        rows = max(rows, query_rows(among, block))
    floor = SMALL_SEARCH_ELEMENTS // max(among, 1) // block * block
    return max(rows, in_blocks(floor, block, bits=2)) if floor >= block else rows


def padded_rows(a, rows: int):
    """a (n, …) with ``rows − n`` rows of zeros appended (a itself when
    rows = n): on the host for NumPy arrays; for concrete JAX arrays on the
    CPU too, copied there and back (nothing compiles per n); by a jitted pad
    for traced arrays and on an accelerator (no round trip over the bus; a
    small program per shape)."""
    n = a.shape[0]
    if rows == n:
        return a
    if isinstance(a, np.ndarray):
        out = np.zeros((rows,) + a.shape[1:], a.dtype)
        out[:n] = a
        return out
    if platforms.on_host(a):
        return to_device(padded_rows(np.asarray(a), rows))
    return _jitted_padded_rows(a, rows)


@functools.partial(jax.jit, static_argnames=("rows",))
def _jitted_padded_rows(a, rows: int):
    return jnp.zeros((rows,) + a.shape[1:], a.dtype).at[: a.shape[0]].set(a)


def first_rows(arrays, n: int, axis: int = 0):
    """The first n rows (entries along ``axis``) of each array of the tuple
    ``arrays`` (padded results): sliced on the host and put back on its
    device when every array is concrete on one device — a CPU, or any device
    for at most :data:`SHARED_MAX_ROWS` entries along every axis (a short
    round trip) — so that
    nothing compiles per n (``predict_proba``, ``decision_function`` and
    ``knn_query`` would compile a slice for each batch size); else one
    jitted slice for them all, compiled once per (shapes, n)."""
    if all(a.shape[axis] == n for a in arrays):
        return tuple(arrays)
    if all(_host_sliceable(a) for a in arrays):
        cut = (slice(None),) * axis + (slice(0, n),)
        return tuple(jax.device_put([np.asarray(a)[cut] for a in arrays], [next(iter(a.devices())) for a in arrays]))
    return _first_rows(tuple(arrays), n, axis)


def _host_sliceable(a) -> bool:
    """Whether :func:`first_rows` slices a on the host: a concrete JAX array
    on one device, a CPU, or an accelerator for an array of at most
    :data:`SHARED_MAX_ROWS` entries along every axis (a short round trip;
    the neighbours of many queries cut to their first k columns are not)."""
    if not isinstance(a, jax.Array) or isinstance(a, jax.core.Tracer) or len(a.devices()) != 1:
        return False
    return platforms.on_host(a) or max(a.shape, default=0) <= SHARED_MAX_ROWS


@functools.partial(jax.jit, static_argnames=("n", "axis"))
def _first_rows(arrays, n: int, axis: int):
    return tuple(jax.lax.slice_in_dim(a, 0, n, axis=axis) for a in arrays)


def first_k(indices, k: int):
    """The count of ``indices``'s first columns to sum for k neighbours
    (:func:`graph.neighbor_sum`'s ``k``): None where it holds exactly k columns,
    else k as an int32 — traced by a jitted caller, so that one compiled
    program serves every k whose search found the same :func:`shared_k`
    columns."""
    return None if indices.shape[1] == k else np.int32(k)


def at_shared_k(indices, k: int, m: int, searched_k: int | None = None):
    """Given neighbours (n, k) of queries among m training points, concrete,
    in the layout of the exact search's answer: widened on the host to
    :func:`shared_k` (``searched_k``, m) columns — the search of a model
    sized for ``searched_k`` ≥ k (None: k; ``Model.searched_k``) — (the added ones
    index point 0), with the count of the first columns to sum
    (:func:`first_k`).  Scoring them then runs the program, and gives the
    bits, that the search's own neighbours do (where there is nothing to
    widen, ``indices`` as they are: no copy to the host).  Returns (indices
    (n, k'), k or None)."""
    width = shared_k(k if searched_k is None else searched_k, m, indices.shape[0])
    if width <= indices.shape[1]:
        return indices, first_k(indices, k)
    host = np.asarray(indices)
    host = np.concatenate([host, np.zeros((host.shape[0], width - host.shape[1]), host.dtype)], axis=1)
    return host, first_k(host, k)


def shared_width(P: int) -> int:
    """The width of a members array for a largest inverse neighbourhood P:
    P rounded up to three significant bits (…, 8, 10, 12, 14, 16, 20, 24, 28,
    32, 40, …: at most a quarter more padding).  P depends on the data —
    cross-validation folds of one data set gave P = 71–78, two data sets of
    one shape 73 and 78 — and ``boost`` compiles per width, so ``fit`` pads
    to this shared width: such refits reuse the compiled boosting.  Padding
    is inert up to float rounding (a wider δ sums its zeros in another
    order: α's total moved by 7·10⁻⁸ relative on 2000 points)."""
    return in_blocks(max(1, int(P)), 1)


def program_argument(a, dtype=None) -> np.ndarray:
    """A host array (NumPy, or anything ``np.asarray`` takes) as an argument
    of a jitted program, in ``dtype`` if given (cast on the host): left a
    NumPy array, which the program's dispatch moves to its device for a
    fraction of what :func:`to_device` costs; jit keys it as it keys the
    same array on the device, so the two share the program.  For what only
    a program reads; what is kept (a model's arrays) or used outside a
    program goes by :func:`to_device`."""
    return np.asarray(a, dtype)


def to_device(a, dtype=None) -> jax.Array:
    """A host array (NumPy, or anything ``np.asarray`` takes) on the default
    device, in ``dtype`` if given (cast on the host), by ``jax.device_put``,
    which compiles nothing (``jnp.asarray`` of a NumPy array compiles a copy
    program per shape and dtype).  Dtypes are canonicalised alike (int64 →
    int32 without x64)."""
    return jax.device_put(np.asarray(a, dtype))
