"""k-nearest-neighbour graphs and inverse neighbourhoods.

* :func:`knn_graph` — training neighbours NN_k(x_i), self excluded, exact ties
  broken by the lower index.  ``method="exact"`` is blocked brute force in JAX
  (one matmul per block of rows for ‖x‖² − 2x·x' + ‖x'‖², then
  :func:`jax.lax.top_k`), memory bounded by ``block_size`` rows × m columns;
  ``method="nndescent"`` uses pynndescent.
* :func:`knn_query` — neighbours of new points among the training points.
* :func:`inverse_neighbors` — inv(j) = {i : j ∈ NN_k(x_i)} as padded arrays
  ``members (m, P)`` (sentinel m) and ``counts (m,)`` (DESIGN.md §1, §5).
"""

from __future__ import annotations

import functools
import logging
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import sharding
from jaxnn._src.checks import check_integer, check_points, did_you_mean

__all__ = ["Neighbors", "InverseNeighbors", "knn_graph", "knn_query", "inverse_neighbors"]

METHODS = ("exact", "nndescent", "approx")
# Elements of one (block × m) distance tile; 2**24 float32 = 64 MiB.
_TILE_ELEMENTS = 1 << 24
# The same on a GPU or TPU (512 MiB): 128-row tiles up to m = 10⁶ — the tile
# height of the one GPU measurement so far (an H100, m = 10⁵: 109–122 ms, 0.02–0.05
# of scikit-learn brute) — where 2**24 would leave 16 rows and 62 500 steps.
_TILE_ELEMENTS_ACCELERATOR = 1 << 27


#: distances from which an exact search on CPU warns on the "jaxnn" logger: the
#: exact graph of 2·10⁵ points (d = 16) took 22 s on 2 CPU cores, and the cost
#: grows with m² (10⁶ points: ~9 min at d = 16, where nndescent takes ~50 s)
SLOW_SEARCH_PAIRS = 4 * 10**10

logger = logging.getLogger("jaxnn")


def _warn_if_slow(n_query: int, m: int, platform: str, what: str, hint: str) -> None:
    if platform == "cpu" and n_query * m >= SLOW_SEARCH_PAIRS:
        logger.warning("%s: the brute-force search compares all %.1e (query, training) pairs on CPU, which takes "
                       "minutes or more; %s", what, float(n_query) * m, hint)


class Neighbors(NamedTuple):
    """k nearest neighbours of each row.

    Attributes:
      indices: (n, k) int32, neighbour indices into the training set, nearest first.
      distances: (n, k) float, Euclidean distances (not squared), ascending.
    """

    indices: jax.Array
    distances: jax.Array


class InverseNeighbors(NamedTuple):
    """Padded inverse neighbourhoods.

    Attributes:
      members: (m, P) int32; row j lists inv(j) in increasing order, padded with m.
      counts: (m,) int32; n_j = |inv(j)|.
    """

    members: jax.Array
    counts: jax.Array


def _check_k(k, m: int, *, exclude_self: bool) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    limit = m - 1 if exclude_self else m
    if k > limit:
        what = "k must be < the number of training points" if exclude_self else "k must be <= the number of training points"
        raise ValueError(f"{what} ({m}), got k={k}")
    return k


def _block_rows(m: int, block_size: int | None, platform: str | None = None) -> int:
    if block_size is not None:
        block_size = check_integer(block_size, "block_size", low=1)
    if block_size is None:
        tile = _TILE_ELEMENTS if (platform or sharding.platform()) == "cpu" else _TILE_ELEMENTS_ACCELERATOR
        block_size = max(1, min(128, tile // max(m, 1)))  # 128 rows measured fastest on CPU
    if int(block_size) < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    return int(block_size)


#: exact searches of at most this many training points find the neighbours of
#: a shared k (:func:`shared_k`) and keep the first k
SHARED_K_MAX_ROWS = 2048


def shared_k(k: int, m: int) -> int:
    """The neighbours a concrete exact search of m training points finds to
    answer for k: for m ≤ :data:`SHARED_K_MAX_ROWS`, the power of two ≥
    max(k, 8) — 8, 16, 32, … — else k.  The search returns them nearest
    first, exact ties to the lower index, so its first k columns are the
    k-NN; a grid of ks (3, 5, 7 → 8; 9, 11, 15 → 16) then shares one
    compiled search, and :func:`fit` one boosting width, where each k
    compiled its own (~0.2 s of search and ~0.2 s of boosting on 2 CPU
    cores).  The search's time grows about linearly with the neighbours it
    finds (m = 2000, d = 16, warm: 10.7 ms at k = 10, 15.1 ms at 16), a few
    ms at this size against ~0.5 s of compilation for each new k; above it
    the search costs more (m = 4000: 24 → 34 ms) and a compile weighs less."""
    k = int(k)
    return k if m > SHARED_K_MAX_ROWS else max(8, 1 << (k - 1).bit_length())


_GROUP = 32  # columns per group of the two-stage selection
#: :func:`_smallest_k` selects in two stages from m > 3·32·k columns. Its time
#: over one ``top_k``'s on a 128-row tile (2 CPU cores), at k = 4 / 8 / 16 / 32 / 64:
#: 0.75 / 0.78 / 0.88 / 0.85 / 0.89 at m = 4·32k, 1.10 / 1.16 / 1.07 / 1.05 / 1.08
#: at m = 2·32k.  The ratio was 8 until stop 28 (at m = 2048, k = 10: 0.67 ms a
#: tile in one ``top_k``, 0.41 ms in two stages)
TWO_STAGE_MIN_RATIO = 3


def _smallest_k(d2, k: int):
    """(values, indices) of the k smallest entries of each row of d2 (B, m),
    ascending, exact ties broken by the lower column index.

    Two-stage partial selection: the k nearest columns lie in the k groups
    (of ``_GROUP`` contiguous columns) with the smallest group minima — each
    other group's minimum is beaten by k distinct points — so ``top_k`` runs
    on m/32 group minima and on 32·k candidates instead of on m columns.
    Candidate groups are re-sorted by index so ties still favour lower indices.
    Below :data:`TWO_STAGE_MIN_RATIO`·32·k columns one ``top_k`` is faster.
    """
    B, m = d2.shape
    if m <= TWO_STAGE_MIN_RATIO * k * _GROUP:
        neg, idx = jax.lax.top_k(-d2, k)
        return -neg, idx
    n_groups = -(-m // _GROUP)
    padded = jnp.full((B, n_groups * _GROUP), jnp.inf, d2.dtype).at[:, :m].set(d2)
    groups = padded.reshape(B, n_groups, _GROUP)
    _, best_groups = jax.lax.top_k(-jnp.min(groups, axis=2), k)  # (B, k)
    best_groups = jnp.sort(best_groups, axis=1)
    cand = jnp.take_along_axis(groups, best_groups[:, :, None], axis=1).reshape(B, k * _GROUP)
    cand_idx = (best_groups[:, :, None] * _GROUP + jnp.arange(_GROUP)[None, None, :]).reshape(B, k * _GROUP)
    neg, pos = jax.lax.top_k(-cand, k)
    return -neg, jnp.take_along_axis(cand_idx, pos, axis=1)


#: from this many training points on, the search runs in column chunks
#: (:func:`_chunked_topk`) on CPU; below it one pass over whole rows is faster.
#: Measured on 2 CPU cores, 10⁴ queries, k = 10: m = 5·10⁴: 2.5 → 0.6 s (d = 16),
#: 3.1 → 1.7 s (d = 128); m = 10⁵, d = 64: 2.3× faster; m = 2·10⁴: 1.1–1.3× slower.
#: The chunks keep a tile in a CPU cache; on a GPU or TPU their sequential
#: loop (m/8192 steps per tile) would cost kernel launches, so the one-pass
#: search runs there (the search measured on an H100, above).
CHUNKED_MIN_M = 32_768
#: columns per chunk: the (128, 8192) distance tile (4 MiB) stays in cache
_CHUNK = 8192
#: the chunked search gathers (rows, k·32, d) candidate points a tile; above
#: this k·32·d it would outgrow the cache and the one-pass search is used
_MAX_CANDIDATE_FLOATS = 1 << 17


def _search_kernel(m: int, d: int, k: int, platform: str | None = None):
    """The jitted exact search for m training points of dimension d on
    ``platform`` (default: where computations run now, ``sharding.platform()``)."""
    cpu = (platform or sharding.platform()) == "cpu"
    if cpu and m >= CHUNKED_MIN_M and k * _GROUP * d <= _MAX_CANDIDATE_FLOATS:
        return _chunked_topk
    return _onepass_topk


@functools.lru_cache(maxsize=32)
def _sharded_search(mesh, kernel, k: int, block: int, exclude_self: bool, per_device: int, recall_target):
    """``kernel`` with the query rows split over ``mesh``, jitted once per
    configuration (a fresh ``jax.jit`` per call would recompile every call)."""
    extra = {} if recall_target is None else {"recall_target": recall_target}
    spec = jax.sharding.PartitionSpec(sharding.ROWS)

    def local(q, x):
        return kernel(q, x, k, block, exclude_self, jax.lax.axis_index(sharding.ROWS) * per_device, **extra)

    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(spec, jax.sharding.PartitionSpec()), out_specs=(spec, spec)))


@jax.jit
def _conditioned(Q, X):
    """Q and X shifted and scaled alike for the search's ‖q‖² + ‖x‖² − 2q·x:
    (Q', X', e) with X' = (X − μ)/2^e, Q' = (Q − μ)/2^e and distances
    ‖q' − x'‖·2^e (``jnp.ldexp(d, e)``).

    2^e is the power of two at the top of X's spread about its mean, and μ
    that mean rounded to a multiple of 2^e: an offset larger than the spread
    is taken out, so the expansion does not cancel (float32 points offset by
    10³ had 84 % of their graph's rows wrong, by 10⁴ all), and the squares
    neither overflow nor underflow (float32 points scaled by 10¹⁹ gave NaN
    distances, by 10⁻²⁰ zeros).  The points are first scaled by the power of
    two below max |X|, so neither the mean's sum nor 2^e overflows (points
    near 10³⁷ summed to inf: 0.4 % of the graph right).  Every step is exact
    for points on a grid as coarse as 2^e (integers, say), and data centred
    already is only rescaled, by a power of two: exact ties stay ties, broken
    by the lower index.  Jitted: one dispatch per search, not one per
    operation.  A small search's training points are conditioned on the
    host instead (:func:`_conditioning_on_host`).
    """
    _, e0 = jnp.frexp(jnp.max(jnp.abs(X)))  # |X| < 2^e0
    Q, X = jnp.ldexp(Q, -e0), jnp.ldexp(X, -e0)  # exact (powers of two): |X| < 1
    mu = jnp.mean(X, axis=0)
    _, e = jnp.frexp(jnp.max(jnp.abs(X - mu)))
    s = jnp.ldexp(jnp.ones((), X.dtype), e)  # 2^e ≥ the spread; 1 for identical points
    shift = jnp.round(mu / s) * s
    return (Q - shift) / s, (X - shift) / s, e + e0


def _conditioning_on_host(X: np.ndarray):
    """:func:`_conditioned`'s steps for the training points X on the host, in
    X's dtype — the mean's sum in another order (the shift may differ by one
    2^e step: an exact shift either way): (X' (m, d), (e0, shift, s, e)),
    the queries to be conditioned alike, Q' = (ldexp(Q, −e0) − shift)/s
    (:func:`_conditioned_search`), the distances scaled back by 2^e.  For
    the small searches: their compiled program then holds no reduction of
    X: 0.19–0.21 → 0.15–0.16 s of compilation for a search of 512–768
    points (2 CPU cores), and on the host it costs O(m·d).  The queries,
    possibly many, are conditioned in the program as before (on the host
    too, 0.13–0.14 s, but they held 2.4× their size at the peak of a large
    prediction, against 1×)."""
    one = X.dtype.type(1)
    _, e0 = np.frexp(np.max(np.abs(X)))  # |X| < 2^e0
    X = np.ldexp(X, -e0).astype(X.dtype, copy=False)  # exact (powers of two): |X| < 1
    mu = np.sum(X, axis=0, dtype=X.dtype) / X.dtype.type(X.shape[0])
    _, e = np.frexp(np.max(np.abs(X - mu)))
    s = np.ldexp(one, e).astype(X.dtype, copy=False)  # 2^e ≥ the spread; 1 for identical points
    shift = np.round(mu / s) * s
    return (X - shift) / s, (int(e0), shift, s, int(e) + int(e0))


def _blocked_topk(Q, X, k: int, block: int, exclude_self: bool, devices=None, recall_target=None, rows=None,
                  cut: bool = True):
    """Exact kNN of rows of Q among rows of X, a tile of ``block`` query rows
    at a time; with ``devices``, the query rows are split across them; with a
    ``recall_target``, selected by ``lax.approx_min_k``.  Points are first
    :func:`_conditioned`; the distances returned are those of the given points.

    Returns (indices, distances) of at least Q's n rows, the first n being
    the answer: on one device, concrete X of at most :data:`SHARED_MAX_ROWS`
    points is conditioned on the host (:func:`_conditioning_on_host`),
    padded to :func:`shared_rows` (the padding never a neighbour) and Q to
    :func:`query_rows` rows, so that data of nearby sizes — cross-validation
    folds, a learning curve's steps — share one compiled search
    (~0.1–0.3 s a new size on 2 CPU cores).  ``rows``: pad such X to at
    least this many rows (another search's, to share its compilation).  Such
    a search of at most :data:`SHARED_K_MAX_ROWS` points finds
    :func:`shared_k` (k) neighbours (at most X's padded rows) and keeps the
    first k — or all of them when not ``cut``."""
    if devices is None:  # one program: (conditioning,) search and rescaling compile together
        if recall_target is not None:
            kernel, recall_target = _onepass_topk, float(recall_target)
        else:
            kernel = _search_kernel(X.shape[0], X.shape[1], k, sharding.platform())
        m, n_valid, transform, found = X.shape[0], None, None, k
        if not isinstance(X, jax.core.Tracer) and not isinstance(Q, jax.core.Tracer) and m <= SHARED_MAX_ROWS:
            X, (e0, shift, s, e) = _conditioning_on_host(np.asarray(X))  # no reduction of X in the program
            X, n_valid = to_device(padded_rows(X, max(shared_rows(m), rows or 0))), to_device(m, np.int32)
            Q = padded_rows(Q, query_rows(Q.shape[0], block))
            transform = to_device(e0, np.int32), to_device(shift), to_device(s), to_device(e, np.int32)
            if recall_target is None:  # a few ks share the program; the padding columns sort last
                found = min(shared_k(k, m), X.shape[0])
        idx, dist = _conditioned_search(Q, X, n_valid, transform, kernel=kernel, k=found, block=block,
                                        exclude_self=exclude_self, recall_target=recall_target)
        return first_rows((idx, dist), k, axis=1) if cut else (idx, dist)  # nearest first: cut on the host
    Q, X, exponent = _conditioned(Q, X)
    idx, dist = _blocked_topk_conditioned(Q, X, k, block, exclude_self, devices, recall_target)
    return idx, jnp.ldexp(dist, exponent)


@functools.partial(jax.jit, static_argnames=("kernel", "k", "block", "exclude_self", "recall_target"))
def _conditioned_search(Q, X, n_valid=None, transform=None, *, kernel, k: int, block: int, exclude_self: bool,
                        recall_target):
    """:func:`_blocked_topk` on one device, jitted whole: a new shape compiles
    one program, not three (the conditioning and the rescaling of the
    distances cost ~0.1 s of compilation of their own per query size).
    ``n_valid``: X's rows from n_valid on are padding (None: none are).
    ``transform``: X comes conditioned (:func:`_conditioning_on_host`) and
    (e0, shift, s, e) condition Q alike and scale the distances back; None:
    both are conditioned here."""
    if transform is None:
        Q, X, exponent = _conditioned(Q, X)
    else:
        e0, shift, s, exponent = transform
        Q = (jnp.ldexp(Q, -e0) - shift) / s
    extra = {} if recall_target is None else {"recall_target": recall_target}
    idx, dist = kernel(Q, X, k, block, exclude_self, n_valid=n_valid, **extra)
    return idx, jnp.ldexp(dist, exponent)


def to_device(a, dtype=None) -> jax.Array:
    """A host array (NumPy, or anything ``np.asarray`` takes) on the default
    device, in ``dtype`` if given (cast on the host), by ``jax.device_put``:
    ``jnp.asarray`` of a NumPy array compiles a copy program per shape and
    dtype (JAX 0.10: 6–12 ms each — ~10 of them in a first fit of a new
    size), ``device_put`` compiles nothing (75 µs for 400 × 16 floats).
    Dtypes are canonicalised alike (int64 → int32 without x64)."""
    return jax.device_put(np.asarray(a, dtype))


def _blocked_topk_conditioned(Q, X, k: int, block: int, exclude_self: bool, devices, recall_target):
    """:func:`_blocked_topk` on points already conditioned."""
    if recall_target is not None:
        kernel, recall_target = _onepass_topk, float(recall_target)
    else:
        kernel = _search_kernel(X.shape[0], X.shape[1], k, sharding.platform(devices))
    if devices is None:
        extra = {} if recall_target is None else {"recall_target": recall_target}
        return kernel(Q, X, k, block, exclude_self, **extra)
    mesh = sharding.row_mesh(devices)
    n, n_dev = Q.shape[0], mesh.devices.size
    per_device = -(-n // (n_dev * block)) * block  # whole tiles on every device
    Qp = jnp.zeros((per_device * n_dev, Q.shape[1]), Q.dtype).at[:n].set(Q)
    search = _sharded_search(mesh, kernel, k, block, exclude_self, per_device, recall_target)
    idx, dist = search(sharding.shard_rows(Qp, mesh), sharding.replicate(X, mesh))
    home = next(iter(X.devices()))  # hand back ordinary single-device arrays, where X was
    return jax.device_put(idx[:n], home), jax.device_put(dist[:n], home)


def _padding_at_infinity(x_sq, cols, n_valid):
    """‖x‖² (m,) with +inf at the padding columns (from ``n_valid`` on): no
    query is near them, and a row of d2 stays finite where it has points."""
    return x_sq if n_valid is None else jnp.where(cols < n_valid, x_sq, jnp.inf)


@functools.partial(jax.jit, static_argnames=("k", "block", "exclude_self", "recall_target"))
def _onepass_topk(Q, X, k: int, block: int, exclude_self: bool, row0=0, recall_target=None, n_valid=None):
    """block × m distance tiles, then :func:`_smallest_k` on each — or, with
    a ``recall_target``, ``lax.approx_min_k`` (TPU-native approximate
    selection; elsewhere XLA computes it exactly).  Query row r is training
    point ``row0 + r`` when ``exclude_self``.  X's rows from ``n_valid`` on
    (None: none) are padding, at distance +inf."""
    n, m = Q.shape[0], X.shape[0]
    n_blocks = -(-n // block)
    Qp = jnp.zeros((n_blocks * block, Q.shape[1]), Q.dtype).at[:n].set(Q)
    cols = jnp.arange(m)
    x_sq = _padding_at_infinity(jnp.sum(X * X, axis=1), cols, n_valid)

    def one_block(b):
        start = b * block
        q = jax.lax.dynamic_slice_in_dim(Qp, start, block)
        d2 = jnp.sum(q * q, axis=1)[:, None] - 2.0 * (q @ X.T) + x_sq[None, :]
        d2 = jnp.maximum(d2, 0.0)
        if exclude_self:
            rows = row0 + start + jnp.arange(block)
            d2 = jnp.where(rows[:, None] == cols[None, :], jnp.inf, d2)
        if recall_target is None:
            vals, idx = _smallest_k(d2, k)
        else:
            vals, idx = jax.lax.approx_min_k(d2, k, recall_target=recall_target)
        return idx.astype(jnp.int32), jnp.sqrt(vals)

    idx, dist = jax.lax.map(one_block, jnp.arange(n_blocks))
    return idx.reshape(-1, k)[:n], dist.reshape(-1, k)[:n]


@functools.partial(jax.jit, static_argnames=("k", "block", "exclude_self"))
def _chunked_topk(Q, X, k: int, block: int, exclude_self: bool, row0=0, n_valid=None):
    """The two-stage selection of :func:`_smallest_k` without a block × m tile.

    Stage 1 sweeps the columns in chunks of ``_CHUNK`` and keeps only the
    minimum of each group of 32 columns (the tile never leaves the cache);
    stage 2 takes the k groups with the smallest minima — they hold the k
    nearest points — and recomputes the distances of their 32·k points
    exactly, then selects the k smallest (ties: lower index, as the groups
    are re-sorted by index).
    """
    n, m = Q.shape[0], X.shape[0]
    n_blocks = -(-n // block)
    Qp = jnp.zeros((n_blocks * block, Q.shape[1]), Q.dtype).at[:n].set(Q)
    n_chunks = -(-m // _CHUNK)
    Xp = jnp.zeros((n_chunks * _CHUNK, X.shape[1]), X.dtype).at[:m].set(X)
    x_sq = jnp.full((n_chunks * _CHUNK,), jnp.inf, X.dtype).at[:m].set(  # padding: never near
        _padding_at_infinity(jnp.sum(X * X, axis=1), jnp.arange(m), n_valid))

    def one_block(b):
        start = b * block
        q = jax.lax.dynamic_slice_in_dim(Qp, start, block)
        q_sq = jnp.sum(q * q, axis=1)[:, None]
        rows = row0 + start + jnp.arange(block)

        def group_minima(c):
            xc = jax.lax.dynamic_slice_in_dim(Xp, c * _CHUNK, _CHUNK)
            d2 = q_sq - 2.0 * (q @ xc.T) + jax.lax.dynamic_slice_in_dim(x_sq, c * _CHUNK, _CHUNK)[None, :]
            if exclude_self:
                d2 = jnp.where(rows[:, None] == c * _CHUNK + jnp.arange(_CHUNK)[None, :], jnp.inf, d2)
            return jnp.min(d2.reshape(block, _CHUNK // _GROUP, _GROUP), axis=2)

        minima = jax.lax.map(group_minima, jnp.arange(n_chunks))  # (chunks, block, chunk/32)
        minima = jnp.moveaxis(minima, 0, 1).reshape(block, -1)
        _, best_groups = jax.lax.top_k(-minima, k)
        best_groups = jnp.sort(best_groups, axis=1)
        cand = (best_groups[:, :, None] * _GROUP + jnp.arange(_GROUP)).reshape(block, k * _GROUP)
        d2 = q_sq - 2.0 * jnp.einsum("bd,bcd->bc", q, Xp[cand]) + x_sq[cand]
        if exclude_self:
            d2 = jnp.where(rows[:, None] == cand, jnp.inf, d2)
        neg, pos = jax.lax.top_k(-jnp.maximum(d2, 0.0), k)
        return jnp.take_along_axis(cand, pos, axis=1).astype(jnp.int32), jnp.sqrt(-neg)

    idx, dist = jax.lax.map(one_block, jnp.arange(n_blocks))
    return idx.reshape(-1, k)[:n], dist.reshape(-1, k)[:n]


#: A feature whose mean lies further from 0 than this many times its range
#: (max − min) is centred before float64 / wide-integer points are cast to
#: float32: the cast keeps ~7 significant digits of the value, so points at
#: 10⁶ ± 1 lost half their neighbours and at 10⁸ ± 1 all became one point.
#: Below the ratio the cast's error is under 1.5·10⁻⁵ of the range and data
#: are left as they are (standardised data never cross it).
CENTRE_RATIO = 256.0


def float32_origin(X) -> np.ndarray | None:
    """The (d,) point to subtract from host points before their cast to float32,
    or None when no feature needs it (float32 or narrow-integer data, or
    every feature's |mean| ≤ ``CENTRE_RATIO`` × its range).

    A centred feature's origin is its mean rounded to float32 (so a float32
    model can hold it exactly), others' 0.  Distances are invariant under the
    shift: callers subtract it from the training and the query points alike
    (:func:`shift_points`), in float64, before the cast.
    """
    X = _wide_on_host(X)
    if not isinstance(X, np.ndarray) or X.dtype.kind not in "fiu" or X.dtype.itemsize < (8 if X.dtype.kind == "f" else 4):
        return None
    mean = X.mean(axis=0, dtype=np.float64)
    spread = X.max(axis=0).astype(np.float64) - X.min(axis=0)  # a range, not a std: no (m, d) temporary
    far = np.abs(mean) > CENTRE_RATIO * spread
    if not far.any():
        return None
    return np.where(far, mean.astype(np.float32), 0.0).astype(np.float64)


def float32_ready(X, *others):
    """(X, *others) for a search computed in float32: without x64, each shifted
    by X's :func:`float32_origin`, so float64 points far from 0 keep their
    digits in the cast; as they are under x64 (float64 keeps them)."""
    if jax.config.jax_enable_x64:
        return (X, *others)
    origin = float32_origin(X)
    return tuple(shift_points(a, origin) for a in (X, *others))


def _wide_on_host(X):
    """A concrete JAX array of 32- or 64-bit integers as NumPy (values such
    as int32 timestamps need centring before a cast to float32, which only
    the host does exactly); anything else as it is."""
    if isinstance(X, jax.Array) and not isinstance(X, jax.core.Tracer) and X.dtype.kind in "iu" and X.dtype.itemsize >= 4:
        return np.asarray(X)
    return X


def shift_points(X, origin):
    """X − origin: in float64 for host points (before any cast to float32;
    JAX arrays of 32/64-bit integers go to the host for it); for host points
    and a traced origin (a model passed into ``jax.jit``), as float32 parts
    hi + lo of X, hi − origin being exact for points near the origin; else in
    X's floating dtype (JAX arrays, under ``jax.jit`` too).  X itself when
    origin is None."""
    if origin is None:
        return X
    X = _wide_on_host(X)
    if isinstance(X, np.ndarray):
        if not isinstance(origin, jax.core.Tracer):
            return X.astype(np.float64) - np.asarray(origin, np.float64)
        hi = X.astype(origin.dtype)  # the float32 cast alone loses what lo keeps
        lo = (X.astype(np.float64) - hi).astype(origin.dtype)
        # the barrier keeps XLA from folding the two constants first, (hi + lo) − origin,
        # which rounds hi + lo back to hi (it did for 120 × 4 points at 10⁸)
        return jax.lax.optimization_barrier(jnp.asarray(hi) - origin) + jnp.asarray(lo)
    Xf = _as_float(X)
    return Xf - jnp.asarray(origin, Xf.dtype)


def _as_float(X):
    """Points as a floating JAX array to compute distances in: float32 or float64
    stay, anything else becomes the default float (float32, or float64 under
    ``jax_enable_x64``) — integers and bools on the host (jnp.asarray would
    first wrap int64 values beyond the int32 range), float16/bfloat16 (whose
    squared distances overflow) and long doubles (which JAX cannot hold) too."""
    if isinstance(X, jax.Array):
        return X if X.dtype in (jnp.float32, jnp.float64) else X.astype(jnp.result_type(float))
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64 if jax.config.jax_enable_x64 else np.float32)
    return to_device(X)


def knn_graph(
    X,
    k: int,
    *,
    method: str = "exact",
    block_size: int | None = None,
    seed: int = 0,
    candidates: int | None = None,
    n_jobs: int = 1,
    n_trees: int | None = None,
    n_iters: int | None = None,
    devices=None,
    recall_target: float = 0.95,
) -> Neighbors:
    """Training neighbour graph NN_k(x_i), self excluded.

    Args:
      X: (m, d) training points.
      k: neighbours per point, 1 ≤ k < m.
      method: ``"exact"`` (blocked brute force in JAX), ``"nndescent"``
        (approximate, pynndescent; −1 entries it may return are repaired with
        an exact search of those rows) or ``"approx"`` (the blocked search
        with ``lax.approx_min_k`` selecting each row's k nearest: TPU-native
        approximate top-k at ``recall_target``; on CPU and GPU XLA computes
        it exactly, slower than ``"exact"``'s two-stage selection).
      block_size: rows per distance tile (default: at most 128, keeping a
        tile ≤ 64 MiB on CPU and ≤ 512 MiB on a GPU or TPU).
      seed: random state of nndescent.
      candidates: nndescent only — pynndescent builds a graph of
        ``candidates`` neighbours (plus the point itself), of which the k
        nearest are kept; default 2k.  Recall@10 on the 10⁵-point Gaussian mixtures of the
        benchmarks (d = 64 / 128): k + 1 → 0.57 / 0.59, 2k → 0.83 / 0.86,
        3k → 0.93 / 0.955, 4k → 0.965 / 0.984, at 1×, 2×, 3×, 4× the time.
      n_jobs: nndescent only — pynndescent's threads (−1: all cores); 1, the
        default, is reproducible run to run, more threads may not be.
      n_trees, n_iters: nndescent only — pynndescent's random-projection
        trees of its initial graph and its NN-descent rounds (None: its
        defaults, 21 and 17 at m = 10⁵).  Fewer trade recall for time; on
        the 10⁵-point set (2 cores, ``candidates=k + 2``, ``n_jobs=-1``):
        defaults 3.0 s, recall@10 0.65; ``n_trees=8, n_iters=4`` 1.8 s,
        0.58; ``n_trees=4, n_iters=3`` 1.4 s, 0.40 — GNNB's test accuracy
        0.946 / 0.944 / 0.943 (exact graph 0.953).
      devices: exact and approx — None (the default device), an int n (the
        first n devices), a list of devices or ``"all"``: the query rows are
        split across them (``jax.shard_map``), the points replicated; same
        result.
      recall_target: approx only, in (0, 1].

    Returns:
      :class:`Neighbors` with ``indices`` (m, k) int32 and ``distances`` (m, k).
    """
    (X,) = float32_ready(check_points(X, "X"))
    m = X.shape[0]
    k = _check_k(k, m, exclude_self=True)
    if method not in METHODS:
        raise ValueError(f"unknown neighbour method {method!r}; use one of {METHODS}" + did_you_mean(method, METHODS))
    seed = check_integer(seed, "seed", low=0, high=2**32 - 1)  # nndescent's random state (checked for every method)
    if method == "nndescent":
        if candidates is None:
            candidates = 2 * k
        if isinstance(candidates, bool) or not isinstance(candidates, (int, np.integer)) or candidates <= k:
            raise ValueError(f"candidates must be an integer > k={k}, got {candidates!r}")
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0 or n_jobs < -1:
            raise ValueError(f"n_jobs must be a positive integer or -1, got {n_jobs!r}")
        if devices is not None:
            raise ValueError("devices applies to the exact and approx methods only (nndescent runs on the host CPU)")
        for name, value in (("n_trees", n_trees), ("n_iters", n_iters)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
        options = {name: int(v) for name, v in (("n_trees", n_trees), ("n_iters", n_iters)) if v is not None}
        return _nndescent_index(np.asarray(X), k, seed, int(candidates), int(n_jobs), **options)[0]
    for name, value in (("candidates", candidates), ("n_trees", n_trees), ("n_iters", n_iters)):
        if value is not None:
            raise ValueError(f"{name} applies to method='nndescent' only")
    if not (isinstance(n_jobs, (int, np.integer)) and not isinstance(n_jobs, bool) and n_jobs == 1):
        raise ValueError(f"n_jobs applies to method='nndescent' only (the {method} search runs in JAX), got n_jobs={n_jobs!r}")
    if method == "approx":
        if isinstance(recall_target, bool) or not isinstance(recall_target, (int, float)) or not 0.0 < recall_target <= 1.0:
            raise ValueError(f"recall_target must lie in (0, 1], got {recall_target!r}")
    Xf = _as_float(X)
    target = float(recall_target) if method == "approx" else None
    platform = sharding.platform(devices)
    _warn_if_slow(m, m, platform, f"knn_graph of {m} points",
                  "method='nndescent' (fit's graph_method=) is approximate and much faster at this size")
    idx, dist = _blocked_topk(Xf, Xf, k, _block_rows(m, block_size, platform), True, devices, target)
    return Neighbors(*first_rows((idx, dist), m))


def knn_query(X_train, X_query, k: int, *, block_size: int | None = None, devices=None) -> Neighbors:
    """Exact k nearest training points of each query row (blocked, in JAX).

    Batches of nearby sizes share one compiled search: the query rows are
    padded to :func:`query_rows` (n itself under ``jax.jit``), so predicting
    batch after batch compiles a few searches, not one per batch size.

    Args:
      X_train: (m, d) training points.  X_query: (n, d) query points.
      k: 1 ≤ k ≤ m.
      devices: as for :func:`knn_graph`: the query rows are split across them.

    Returns:
      :class:`Neighbors` with ``indices`` (n, k) int32 into X_train.
    """
    idx, dist, n = padded_query(X_train, X_query, k, block_size=block_size, devices=devices)
    return Neighbors(*first_rows((idx, dist), n))


def _search_points(X_train, X_query, k, *, exclude_self: bool):
    """The checks and conditioning shared by the searches of query points among
    training points: (X_train, X_query) checked and, without x64, shifted by
    X_train's float32 origin; X_train as the float array searched in; k checked."""
    X_train = check_points(X_train, "X_train")
    X_query = check_points(X_query, "X_query")
    if X_query.shape[1] != X_train.shape[1]:
        raise ValueError(f"X_query has {X_query.shape[1]} features but X_train has {X_train.shape[1]}")
    k = _check_k(k, X_train.shape[0], exclude_self=exclude_self)
    X_train, X_query = float32_ready(X_train, X_query)
    return X_train, X_query, _as_float(X_train), k


def graph_and_query(X_train, X_query, k: int, *, devices=None, rows=None, cut_queries: bool = True):
    """``knn_graph(X_train, k)`` and ``knn_query(X_train, X_query, k)`` by one
    exact search: the rows of X_train and then those of X_query are queried
    together among X_train (the first m excluding themselves; a query row has
    no index of its own to exclude), conditioned as each alone would be — one
    compiled program where the two would compile one each (~0.45 s on 2 CPU
    cores, the largest part of a new size's first fit with
    ``posterior="auto"``).  Same neighbours as the two searches, up to float
    rounding in the distance tiles.

    Args:
      X_train: (m, d) points.  X_query: (n, d) points.  1 ≤ k < m.
      devices: as for :func:`knn_graph`.
      rows: a small X_train is padded to at least this many rows (a larger
        search's :func:`shared_rows`, whose compiled program then serves).
      cut_queries: False: the queries' rows keep all the neighbours found
        (a small search's :func:`shared_k`, nearest first).

    Returns:
      ((m, k), (n, k)) int32 NumPy indices into X_train, nearest first
      ((n, k') with ``cut_queries=False``).
    """
    X_train, X_query, Xt, k = _search_points(X_train, X_query, k, exclude_self=True)
    m = Xt.shape[0]
    if isinstance(X_train, np.ndarray) and isinstance(X_query, np.ndarray):  # stacked on the host: nothing compiles
        Q = to_device(np.concatenate([np.asarray(X_train, Xt.dtype), np.asarray(X_query, Xt.dtype)]))
    else:
        Q = jnp.concatenate([Xt, _as_float(X_query).astype(Xt.dtype)])
    platform = sharding.platform(devices)
    _warn_if_slow(Q.shape[0], m, platform, f"knn_graph of {m} points and knn_query of {X_query.shape[0]}",
                  "method='nndescent' (fit's graph_method=) is approximate and much faster at this size")
    idx, _ = _blocked_topk(Q, Xt, k, _block_rows(m, None, platform), True, devices, rows=rows, cut=False)
    idx = np.asarray(idx)
    return idx[:m, :k], idx[m:Q.shape[0], :k] if cut_queries else idx[m:Q.shape[0]]


def query_rows(n: int, block: int = 128) -> int:
    """The rows a batch of n queries is padded to (≥ n): whole blocks of
    ``block`` rows, their number rounded up to two significant bits up to 64
    blocks (1, 2, 3, 4, 6, 8, 12, …, 48, 64: at most half more work) and
    to four beyond (72, 80, …: at most an eighth more).  A new shape costs a
    compile (~0.5 s on 2 CPU cores) that outweighs searching dozens of blocks,
    hence the coarse steps while batches are small: any batch of ≤ 128
    queries shares one compiled search, and sizes 1 … 10⁴ need 14."""
    blocks = -(-int(n) // block)
    return in_blocks(n, block, bits=2 if blocks <= 64 else 4)


#: training sets of at most this many points are searched (and boosted, by
#: ``fit``) padded to :func:`shared_rows`: a few compiled programs serve every
#: size.  Beyond, a new size's compilation (~1 s) weighs less than padded work
#: would (up to a quarter more rows and steps: half as much search again)
SHARED_MAX_ROWS = 16384


def shared_rows(m: int, block: int = 128) -> int:
    """The rows a training set of m points is padded to when m ≤
    :data:`SHARED_MAX_ROWS` (else m): whole blocks of ``block``, their number
    rounded up to three significant bits (1, 2, …, 8, 10, 12, 14, 16, 20, …,
    112, 128 blocks: at most a quarter more rows, an eighth on average).
    Cross-validation folds that differ by a row, and some of a learning
    curve's steps, then share one compiled search and boosting, where each
    new m compiled ~1 s of programs (2 CPU cores, ``posterior="auto"``).
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
    compiles once — else (traced, or large) as they are."""
    m = arrays[0].shape[0]
    if m > SHARED_MAX_ROWS or any(isinstance(a, jax.core.Tracer) for a in arrays):
        return arrays
    return tuple(padded_rows(a, max(shared_rows(m), rows or 0)) for a in arrays)


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
    if not isinstance(a, jax.core.Tracer) and next(iter(a.devices())).platform == "cpu":
        return to_device(padded_rows(np.asarray(a), rows))
    return _pad_rows(a, rows)


@functools.partial(jax.jit, static_argnames=("rows",))
def _pad_rows(a, rows: int):
    return jnp.zeros((rows,) + a.shape[1:], a.dtype).at[: a.shape[0]].set(a)


def first_rows(arrays, n: int, axis: int = 0):
    """The first n rows (entries along ``axis``) of each array of the tuple
    ``arrays`` (padded results): sliced on the host and put back on its
    device when every array is concrete on one device — a CPU, or any device
    for at most :data:`SHARED_MAX_ROWS` entries along every axis (a short
    round trip) — so that
    nothing compiles per n (``predict_proba``, ``decision_function`` and
    ``knn_query`` compiled a slice for each batch size, ~0.02 s, until stop
    28); else one jitted slice for them all, compiled once per (shapes, n)."""
    if all(a.shape[axis] == n for a in arrays):
        return tuple(arrays)
    if all(_host_sliceable(a) for a in arrays):
        cut = (slice(None),) * axis + (slice(0, n),)
        return tuple(jax.device_put(np.asarray(a)[cut], next(iter(a.devices()))) for a in arrays)
    return _first_rows(tuple(arrays), n, axis)


def _host_sliceable(a) -> bool:
    """Whether :func:`first_rows` slices a on the host: a concrete JAX array
    on one device, a CPU, or an accelerator for an array of at most
    :data:`SHARED_MAX_ROWS` entries along every axis (a short round trip;
    the neighbours of many queries cut to their first k columns are not)."""
    if not isinstance(a, jax.Array) or isinstance(a, jax.core.Tracer) or len(a.devices()) != 1:
        return False
    return next(iter(a.devices())).platform == "cpu" or max(a.shape, default=0) <= SHARED_MAX_ROWS


@functools.partial(jax.jit, static_argnames=("n", "axis"))
def _first_rows(arrays, n: int, axis: int):
    return tuple(jax.lax.slice_in_dim(a, 0, n, axis=axis) for a in arrays)


def padded_query(X_train, X_query, k: int, *, block_size: int | None = None, devices=None, cut: bool = True):
    """:func:`knn_query`'s search on the queries padded to :func:`query_rows`
    rows: (indices (rows, k') int32, distances (rows, k'), n).  Rows from n on
    are the neighbours of padding points (zeros), to be dropped; callers that
    go on computing (scores, posteriors) do so on all rows and drop them at
    the end, so every step sees the shared shape.  k' = k, or when not
    ``cut`` all the neighbours found, nearest first (a small search's
    :func:`shared_k`: callers that sum the first k of them, a traced count,
    share one compiled program across ks)."""
    X_train, X_query, Xt, k = _search_points(X_train, X_query, k, exclude_self=False)
    m, n = Xt.shape[0], X_query.shape[0]
    platform = sharding.platform(devices)
    block = _block_rows(m, block_size, platform)
    rows = n if isinstance(X_query, jax.core.Tracer) else query_rows(n, block)
    if isinstance(X_query, np.ndarray):  # the cast and the padding on the host: nothing compiles per n
        Xq = to_device(padded_rows(np.asarray(X_query, dtype=Xt.dtype), rows))
    else:
        Xq = padded_rows(_as_float(X_query).astype(Xt.dtype), rows)
    _warn_if_slow(n, m, platform, f"knn_query of {n} points among {m}",
                  "an approximate index can find the neighbours instead (predict's neighbors=, README)")
    idx, dist = _blocked_topk(Xq, Xt, k, block, False, devices, cut=cut)
    return idx, dist, n


def first_k(indices, k: int):
    """The count of ``indices``'s first columns to sum for k neighbours
    (:func:`neighbor_sum`'s ``k``): None where it holds exactly k columns,
    else k as an int32 — traced by a jitted caller, so that one compiled
    program serves every k whose search found the same :func:`shared_k`
    columns."""
    return None if indices.shape[1] == k else np.int32(k)


def neighbor_sum(rows, indices, k=None):
    """Σ_{t<k} rows[indices[:, t]] (n, C) for (m, C) rows, (n, k') indices
    and k ≤ k' (None: k'; a traced int scalar serves every k with one
    compiled program — :func:`jaxnn.select`'s candidates, scored from the
    largest one's neighbours), one neighbour column at a time (in column
    order), so that no (n, k, C) gather is made:
    ``jnp.sum(rows[indices], axis=1)`` held 11.7 GB to score 10⁶ queries
    with C = 100 and took 12–16× the time of this.  Columns from k on are
    masked, not skipped: the loop keeps its static length."""
    H0 = jnp.zeros((indices.shape[0], rows.shape[1]), rows.dtype)
    if k is None:
        return jax.lax.fori_loop(0, indices.shape[1], lambda t, H: H + rows[indices[:, t]], H0)
    return jax.lax.fori_loop(0, indices.shape[1], lambda t, H: jnp.where(t < k, H + rows[indices[:, t]], H), H0)


def _nndescent_index(X: np.ndarray, k: int, seed: int, candidates: int, n_jobs: int, **options):
    """(the k-NN graph of X by pynndescent, self excluded, nearest first;
    the ``NNDescent`` index that found it, for :func:`_nndescent_query`)."""
    from pynndescent import NNDescent

    m = X.shape[0]
    index = NNDescent(X.astype(np.float32), n_neighbors=min(candidates + 1, m), random_state=seed, n_jobs=n_jobs, **options)
    raw_idx, raw_dist = index.neighbor_graph
    # Drop self *by index* (duplicates may displace it from column 0) and
    # keep the k nearest others (pynndescent returns each row ascending).
    rank = np.broadcast_to(np.arange(raw_idx.shape[1]), raw_idx.shape).copy()
    rank[raw_idx == np.arange(m)[:, None]] = raw_idx.shape[1]
    pick = np.argsort(rank, axis=1, kind="stable")[:, :k]
    idx = np.take_along_axis(raw_idx, pick, axis=1).astype(np.int64)
    dist = np.take_along_axis(raw_dist, pick, axis=1).astype(np.float32)
    bad = np.nonzero((idx < 0).any(axis=1))[0]
    if bad.size:  # repair rows nndescent could not fill, with an exact search
        idx[bad], dist[bad] = _exact_rows(jnp.asarray(X), bad, k)
    return Neighbors(jnp.asarray(idx, dtype=jnp.int32), jnp.asarray(dist)), index


def _nndescent_query(index, X_train, X_query, k: int) -> Neighbors:
    """The k nearest training points of each query row by a pynndescent
    ``index`` of X_train (approximate; rows it cannot fill — −1 entries —
    are searched exactly among X_train)."""
    idx, dist = index.query(np.asarray(X_query, np.float32), k=k)
    idx, dist = idx.astype(np.int64), dist.astype(np.float32)
    bad = np.nonzero((idx < 0).any(axis=1))[0]
    if bad.size:
        X_train = jnp.asarray(X_train)
        idx[bad], dist[bad] = _exact_among(jnp.asarray(np.asarray(X_query)[bad], X_train.dtype), X_train, k)
    return Neighbors(jnp.asarray(idx, dtype=jnp.int32), jnp.asarray(dist))


def _exact_among(Q, X, k: int):
    """The exact k nearest rows of X to each row of Q (a few rows to repair):
    NumPy indices and distances, in the search's own tiles (a fixed 256 rows
    planned 1.06 GB at m = 10⁶ for 5 rows)."""
    return tuple(np.asarray(a)[: Q.shape[0]] for a in _blocked_topk(Q, X, k, _block_rows(X.shape[0], None), False))


def _exact_rows(X, rows: np.ndarray, k: int):
    """The exact k nearest other points of the points ``rows`` of X, found
    among all of X with each row's own index dropped (by index: a duplicate
    point may come first): NumPy (len(rows), k) indices and distances."""
    idx, dist = _exact_among(X[jnp.asarray(rows)], X, k + 1)
    keep = np.argsort(idx == np.asarray(rows)[:, None], axis=1, kind="stable")[:, :k]  # self last, rest in order
    return np.take_along_axis(idx, keep, axis=1), np.take_along_axis(dist, keep, axis=1)


#: at most this many rows a call of the two-hop candidate search, and at most
#: SUBGRAPH_ELEMENTS gathered coordinates (rows × (k + k²) × d; 2²⁴ floats = 64 MiB)
SUBGRAPH_BLOCK = 2048
SUBGRAPH_ELEMENTS = 1 << 24
#: :func:`subgraph`'s two hops cost ~n·k²·d, an exact search among the n kept
#: points ~n²·d: measured on 2 CPU cores (n = 4000 / 24 000, d = 16 / 64, k =
#: 5–40), they cost alike at n ≈ 15–80·k², so below n = 48·k² the exact search
#: runs (two hops at n = 24 000: k = 40 2.4 s against 0.9 s; k = 200 over a minute)
SUBGRAPH_EXACT_RATIO = 48


def subgraph(X, neighbors, keep) -> np.ndarray:
    """The k-NN graph of the points ``X[keep]``, derived from a graph of all of X.

    Each kept point's candidates are the kept points among its neighbours and
    their neighbours (two hops through any point, as in NN-descent's local
    join), itself excluded; the k nearest of them are its neighbours (ties →
    the lower index in X).  A row with fewer than k candidates gets an exact
    search among ``X[keep]`` (ties → the lower position in ``keep``).
    From an exact graph it is exact for the rows whose true neighbours among
    the kept points lie within two hops: for a random 80 % it recovered 0.96–0.97
    of the exact neighbours on small sets (tests) and 0.85–0.91 on 10⁵ clustered
    points, d = 64 / 16 — an approximate graph, like nndescent's, at a fraction
    of an exact search's cost.  :func:`jaxnn.fit`'s ``posterior="auto"`` uses
    it for its 80 % fit when the caller gave the neighbours.  Where two hops
    would cost more than an exact search (n < ``SUBGRAPH_EXACT_RATIO``·k²:
    large k), it is the exact k-NN graph of ``X[keep]``.

    Args:
      X: (m, d) points.  neighbors: (m, k) indices into X (self excluded).
      keep: (n,) distinct indices into X, n > k.

    Returns:
      (n, k) int32 neighbour indices into ``keep`` (row r: the neighbours of
      ``X[keep[r]]``), nearest first.
    """
    nb = np.asarray(neighbors, dtype=np.int32)
    keep = np.asarray(keep, dtype=np.int64)
    m, k = nb.shape
    n = keep.size
    if n <= k or np.unique(keep).size != n:
        raise ValueError(f"keep must hold more than k={k} distinct indices into X, got {n} ({np.unique(keep).size} distinct)")
    if n < SUBGRAPH_EXACT_RATIO * k * k:  # k² candidates a row: the exact search is cheaper
        return np.asarray(knn_graph(X[keep], k).indices, dtype=np.int32)
    pos = np.full(m, -1, np.int32)
    pos[keep] = np.arange(n, dtype=np.int32)
    (X,) = float32_ready(X)
    Xj, nbj, posj = _as_float(X), jnp.asarray(nb), jnp.asarray(pos)
    block = max(1, min(SUBGRAPH_BLOCK, n, SUBGRAPH_ELEMENTS // ((k + k * k) * Xj.shape[1])))
    padded = np.concatenate([keep, np.full(-n % block, keep[0])]).astype(np.int32)
    out, ok = [], []
    for start in range(0, padded.size, block):
        idx, full = _two_hop_neighbors(Xj, nbj, posj, jnp.asarray(padded[start:start + block]), k)
        out.append(idx)
        ok.append(full)
    result = np.array(jnp.concatenate(out)[:n])  # writable: short rows are filled in below
    short = np.nonzero(~np.asarray(jnp.concatenate(ok))[:n])[0]
    if short.size:  # too few candidates within two hops: an exact search among the kept points
        result[short] = _exact_rows(Xj[jnp.asarray(keep)], short, k)[0]
    return result.astype(np.int32)


@functools.partial(jax.jit, static_argnames=("k",))
def _two_hop_neighbors(X, nb, pos, rows, k: int):
    """(B, k) indices into the kept set of the k nearest kept points within
    two hops of each of ``rows`` (global indices), and whether each row had k."""
    B = rows.shape[0]
    first = nb[rows]
    cand = jnp.sort(jnp.concatenate([first, nb[first].reshape(B, k * k)], axis=1), axis=1)
    repeat = jnp.concatenate([jnp.zeros((B, 1), bool), cand[:, 1:] == cand[:, :-1]], axis=1)
    valid = (pos[cand] >= 0) & (cand != rows[:, None]) & ~repeat
    d2 = jnp.sum((X[cand] - X[rows][:, None, :]) ** 2, axis=-1)
    neg, slot = jax.lax.top_k(jnp.where(valid, -d2, -jnp.inf), k)  # equal distances: the lower index first
    return pos[jnp.take_along_axis(cand, slot, axis=1)], jnp.all(neg > -jnp.inf, axis=1)


def inverse_csr(indices, m: int | None = None):
    """Inverse neighbourhoods in compressed form, on the host.

    Returns ``(counts, starts, sources)``: n_j = ``counts[j]`` (m,), and
    inv(j) = {i : j ∈ NN_k(x_i)} in increasing i is
    ``sources[starts[j] : starts[j] + counts[j]]`` (``sources``: (n·k,)).
    One sort of the (j, i) pairs as unique int64 keys (11 ms at n·k = 10⁶;
    a stable argsort of the j's took 140 ms).
    """
    if isinstance(indices, Neighbors):
        indices = indices.indices
    nbrs = np.asarray(indices)
    if nbrs.ndim != 2:
        raise ValueError(f"neighbour indices must be 2-D (m, k), got shape {nbrs.shape}")
    if not np.issubdtype(nbrs.dtype, np.integer):
        raise TypeError(f"neighbour indices must be integers, got dtype {nbrs.dtype}")
    n, k = nbrs.shape
    m = n if m is None else check_integer(m, "m", low=1)
    targets = nbrs.reshape(-1).astype(np.int64)
    if targets.size and (targets.min() < 0 or targets.max() >= m):
        raise ValueError(f"neighbour indices must lie in [0, {m}); got values in [{targets.min()}, {targets.max()}]")
    pairs = np.sort(targets * n + np.repeat(np.arange(n, dtype=np.int64), k))
    counts = np.bincount(targets, minlength=m)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return counts, starts, pairs % n


def inverse_counts(indices, m: int | None = None) -> np.ndarray:
    """n_j = |inv(j)|, how many rows of an (n, k) neighbour array hold j: (m,) int32."""
    nbrs = np.asarray(indices)
    return np.bincount(nbrs.reshape(-1), minlength=nbrs.shape[0] if m is None else int(m)).astype(np.int32)


def members_in_order(csr, examples) -> np.ndarray:
    """inv(j) for each j of ``examples`` in turn (increasing i within), one flat
    array; ``examples`` may hold the sentinel m (no members).  ``csr``: the
    triple of :func:`inverse_csr`."""
    counts, starts, sources = csr
    examples = np.asarray(examples)
    lens = np.concatenate([counts, [0]])[examples]
    first = np.concatenate([starts, [0]])[examples]
    return sources[np.repeat(first - (np.cumsum(lens) - lens), lens) + np.arange(lens.sum())]


def inverse_neighbors(indices, m: int | None = None, *, width: int | None = None) -> InverseNeighbors:
    """Padded inverse neighbourhoods from an (m, k) neighbour index array.

    Built once from :func:`inverse_csr`: row j of ``members`` lists
    inv(j) = {i : j ∈ NN_k(x_i)} in increasing i, padded with the sentinel m.
    ``width``: the columns of ``members``, at least the largest inverse
    neighbourhood P (default: P itself; :func:`shared_width` for a width that
    graphs of one size but other data share).
    """
    counts, starts, sources = inverse_csr(indices, m)
    m = counts.size
    largest = max(1, int(counts.max(initial=0)))
    if width is None:
        width = largest
    elif check_integer(width, "width", low=1) < largest:
        raise ValueError(f"width={width} is narrower than the largest inverse neighbourhood ({largest} members)")
    width = int(width)
    rows = np.repeat(np.arange(m), counts)
    slot = np.arange(sources.size) - starts[rows]
    if m * width < DEVICE_MEMBERS_MIN:
        members = np.full((m, width), m, dtype=np.int32)
        members[rows, slot] = sources
        members = to_device(members)
    else:
        members = _scatter_members(jnp.asarray(rows, jnp.int32), jnp.asarray(slot, jnp.int32),
                                   jnp.asarray(sources, jnp.int32), m=m, width=width)
    return InverseNeighbors(members, to_device(counts, np.int32))


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


#: members arrays of at least this many entries are built on the device
#: (:func:`_scatter_members`); smaller ones on the host, where no compilation
#: (~0.1 s per shape) is paid
DEVICE_MEMBERS_MIN = 1 << 25


@functools.partial(jax.jit, static_argnames=("m", "width"))
def _scatter_members(rows, slots, values, *, m: int, width: int):
    """The (m, width) members array, filled with m and scattered on the
    device: a kNN graph's hubs make width ~50·k (P = 502 at m = 10⁵, k = 10:
    200 MB), which filled on the host and copied over cost 0.44 s, here 0.18."""
    return jnp.full((m, width), m, jnp.int32).at[rows, slots].set(values, unique_indices=True)
