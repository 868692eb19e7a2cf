"""The exact blocked neighbour search: distance tiles of ``block`` query rows
(‖q‖² − 2q·x + ‖x‖² by one matmul) after the points are conditioned
(shifted and scaled by powers of two), the k smallest of each row by a
two-stage partial selection (:func:`_smallest_k`) or, from 32 768 training
points on CPU, by column chunks that stay in cache (:func:`_chunked_topk`),
on a GPU by one fused kernel that writes no tile (:func:`_fused_topk`);
``lax.approx_min_k`` for ``method="approx"``; query rows sharded across
devices; query rows far from the training points (:func:`far_query_rows`)
ranked again exactly on the host (:func:`exact_rows`).
:mod:`jaxnn._src.graph` builds the public searches on it.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import group_minima, platforms, programs, shared_sizes, sharding
from jaxnn._src.checks import check_integer
from jaxnn._src.shared_sizes import first_rows, padded_rows, program_argument, query_rows, shared_k, shared_rows



def block_rows(m: int, block_size: int | None, platform: str | None = None, queries: int | None = None) -> int:
    """Query rows per distance tile of a search among m training points:
    ``block_size`` (checked, ≥ 1) clamped to the query rows (``queries``;
    None: m, as in :func:`knn_graph`) — a block larger than the queries is
    all of them in one block, and the queries are padded to whole blocks:
    ``block_size=10**9`` on 80 points aborted the process (SIGABRT) and
    10⁸ asked for 51 GB; None: at most 128 rows, a tile of at most
    :func:`platforms.search_tile_elements` distances."""
    if block_size is not None:
        block_size = check_integer(block_size, "block_size", low=1)
        return max(1, min(block_size, m if queries is None else int(queries)))
    tile = platforms.search_tile_elements(platform)
    return max(1, min(128, tile // max(m, 1)))  # 128 rows measured fastest on CPU

_GROUP = 32  # columns per group of the two-stage selection

#: the distance tiles' matmul precision: full float32.  JAX's default lets an
#: accelerator round float32 operands (TF32 on NVIDIA GPUs from Ampere on,
#: bfloat16 passes on TPU): an H200 then found other neighbours than the CPU
#: for points at nearly equal distances, and a fit on them other α.
DISTANCE_PRECISION = jax.lax.Precision.HIGHEST


def distance_dots(q, x):
    """(b, m) inner products q·xᵀ of (b, d) and (m, d), in full float32 on every platform."""
    return jnp.matmul(q, x.T, precision=DISTANCE_PRECISION)


#: :func:`_smallest_k` selects in two stages from m > 3·32·k columns: on a
#: 128-row tile the two stages beat one ``top_k`` from about 4·32·k columns
#: on and lose to it at 2·32·k, whatever k
TWO_STAGE_MIN_RATIO = 3


def _two_stages_pay(m: int, k: int) -> bool:
    """Whether selecting k of m columns in two stages (group minima, then
    32·k candidates) beats one ``top_k``: above :data:`TWO_STAGE_MIN_RATIO`·32·k columns."""
    return m > TWO_STAGE_MIN_RATIO * k * _GROUP


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
    if not _two_stages_pay(m, k):
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
#: The chunks keep a tile in a CPU cache; on a GPU or TPU their sequential
#: loop (m/8192 steps per tile) would cost kernel launches, so the one-pass
#: search runs there.
CHUNKED_MIN_M = 32_768
#: from this many training points on, the search's first stage is one fused
#: kernel (:func:`_fused_topk`) where :func:`platforms.fused_search` allows
FUSED_MIN_M = 32_768
#: columns per chunk: the (128, 8192) distance tile (4 MiB) stays in cache
_CHUNK = 8192
#: the chunked search gathers (rows, k·32, d) candidate points a tile; above
#: this k·32·d it would outgrow the cache and the one-pass search is used
_MAX_CANDIDATE_FLOATS = 1 << 17


def search_kernel(m: int, d: int, k: int, platform: str | None = None, dtype=np.float32):
    """The jitted exact search for m training points of dimension d and
    ``dtype`` on ``platform`` (default: where computations run now,
    :func:`platforms.platform`).  The fused kernel searches float32 points
    only (its first stage is float32 arithmetic at best), for k small enough
    that the two stages pay (:func:`_two_stages_pay`, as :func:`_smallest_k`)."""
    if (platforms.fused_search(platform) and m >= FUSED_MIN_M and _two_stages_pay(m, k)
            and np.dtype(dtype) == np.float32):
        return _fused_topk
    if platforms.chunked_search(platform) and m >= CHUNKED_MIN_M and k * _GROUP * d <= _MAX_CANDIDATE_FLOATS:
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


def _times_power_of_two(x, n):
    """x · 2^n (traced float32 or float64 x, integer scalar n): ``jnp.ldexp(x, n)``'s values —
    the same floats wherever the result is a normal number or 0, ±inf or
    NaN (a subnormal result is 0 where the platform flushes them, as XLA's
    CPU does) — by three multiplications by powers of two built from their
    bits, 2^(n/3) each rounded toward 0 and the rest: exponents of one sign,
    so no part under- or overflows before the whole does.  A small fraction
    of ``jnp.ldexp``'s program (its frexp and its many selects) to trace,
    lower and compile, in every search.  n is clipped where every finite x
    is already 0 or ±inf."""
    dtype = jnp.dtype(x.dtype)
    info = jnp.finfo(dtype)
    emax, bits = int(info.maxexp) - 1, jnp.int32 if dtype.itemsize == 4 else jnp.int64
    n = jnp.clip(jnp.asarray(n, bits), -(3 * (emax - 1) - 2), 3 * (emax - 1) - 2)
    third = jnp.sign(n) * (jnp.abs(n) // 3)
    for part in (third, third, n - 2 * third):  # each within the normal exponents [1 − emax, emax]
        x = x * jax.lax.bitcast_convert_type((part + emax) << int(info.nmant), dtype)
    return x


@jax.jit
def _conditioned(Q, X):
    """Q and X shifted and scaled alike for the search's ‖q‖² + ‖x‖² − 2q·x:
    (Q', X', e) with X' = (X − μ)/2^e, Q' = (Q − μ)/2^e and distances
    ‖q' − x'‖·2^e (:func:`_times_power_of_two`).

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
    host instead (:func:`conditioning_on_host`).  Fourth: (n,) whether each
    query row is far (:func:`far_query_rows`).
    """
    _, e0 = jnp.frexp(jnp.max(jnp.abs(X)))  # |X| < 2^e0
    Q, X = _times_power_of_two(Q, -e0), _times_power_of_two(X, -e0)  # exact (powers of two): |X| < 1
    mu = X[0] + jnp.mean(X - X[0], axis=0)  # a constant feature's mean is its value: see conditioning_on_host
    dev = jnp.max(jnp.abs(X - mu), axis=0)
    _, e = jnp.frexp(jnp.max(dev))
    s = _times_power_of_two(jnp.ones((), X.dtype), e)  # 2^e ≥ the spread; 1 for identical points
    shift = jnp.where(dev > 0, jnp.round(mu / s) * s, mu)  # constant features to 0 exactly
    Q = (Q - shift) / s
    return Q, (X - shift) / s, e + e0, _far(jnp.sum(Q * Q, axis=1), Q.shape[1])


def conditioning_on_host(X: np.ndarray):
    """:func:`_conditioned`'s steps for the training points X on the host, in
    float64 (X's own precision if wider), X' and the shift then rounded to
    X's dtype — the mean's sum in another order (the shift may differ by one
    2^e step: an exact shift either way): (X' (m, d), (e0, shift, s, e)),
    the queries to be conditioned alike, Q' = (Q·2^−e0 − shift)/s
    (:func:`conditioned_search`), the distances scaled back by 2^e.  For
    the small searches: their compiled program then holds no reduction of
    X, which compiles faster, and on the host it costs O(m·d).  The
    queries, possibly many, are conditioned in the program (on the host
    they would compile as little, but hold over twice their size at the
    peak of a large prediction, against once).

    The mean is the first point plus the mean of the differences from it, so
    that a constant feature's mean is exactly its value and it contributes 0
    to every distance: summed in float32, the mean of a feature constant at
    10⁹ (float32) or 10²⁰ was off by an ulp, its residue set 2^e, and the
    other features, 10⁻⁹ of it, vanished — every distance read 0 and the
    graph was index order."""
    dtype = X.dtype
    W = X.astype(np.float64) if dtype.itemsize < 8 else X  # float64, or X's own precision if wider
    _, e0 = np.frexp(np.max(np.abs(W)))  # |X| < 2^e0
    W = np.ldexp(W, -e0)  # exact (powers of two): |W| < 1
    mu = W[0] + np.mean(W - W[0], axis=0)  # a constant feature's mean is exactly its value
    dev = np.maximum(W.max(axis=0) - mu, mu - W.min(axis=0))  # max |W − mu| a feature, no (m, d) temporary
    _, e = np.frexp(np.max(dev))
    s = np.ldexp(W.dtype.type(1), e)  # 2^e ≥ the spread; 1 for identical points
    shift = np.where(dev > 0, np.round(mu / s) * s, mu).astype(dtype)  # constant features: to 0 exactly
    # (in X's dtype: the queries are shifted in it, on the device)
    return ((W - shift) / s).astype(dtype), (int(e0), shift, dtype.type(s), int(e) + int(e0))


#: a query row is far from the training points — :func:`far_query_rows`,
#: ranked again on the host — where its conditioned norm exceeds this many
#: times the bound 1.5·√d on the conditioned training points' norms
FAR_RATIO = 8.0


def _far(q_sq, d: int):
    """Whether conditioned query rows of squared norms ``q_sq`` lie beyond
    :data:`FAR_RATIO` times the bound on the conditioned training points'
    norms (every feature of them lies within ±1.5: spread ≤ 2^e, shift
    within half a step of the mean), or their norm is not finite (an
    overflow).  NumPy or jnp."""
    return ~(q_sq <= (FAR_RATIO * 1.5) ** 2 * d)


def far_query_rows(Q, transform) -> np.ndarray:
    """The indices of the rows of the host queries Q (n, d) far from the
    training points conditioned by ``transform`` = (e0, shift, s, e) of
    :func:`conditioning_on_host`: conditioned alike in float64, those of
    norm beyond :data:`FAR_RATIO`·1.5·√d (:func:`_far`).

    Their distance tiles ‖q‖² − 2q·x + ‖x‖² lose the ranking: the error of
    each is about ε·‖q‖², the differences between them about ‖q‖·spread, so
    that a row at ρ times the training points' reach ranks them with ρ
    times the error of a row among them; training points at 10⁰ and
    queries at ±10¹⁰ all got training row 0, queries at 10²⁰ an overflow.
    O(n·d) on the host."""
    e0, shift, s, _ = transform
    scale = float(np.ldexp(1.0, -int(e0))) / float(s)
    Qc = np.asarray(Q, np.float64) * scale - np.asarray(shift, np.float64) / float(s)  # no overflow: float64
    return np.flatnonzero(_far(np.einsum("ij,ij->i", Qc, Qc), Q.shape[1]))


#: at most this many (query, training) keys a step of :func:`exact_rows`
EXACT_ROWS_ELEMENTS = 1 << 22


def exact_rows(Q, X, k: int, n_valid: int, exclude=None):
    """The k nearest of X's first ``n_valid`` rows to each row of Q (r, d),
    on the host in float64: (indices (r, k) int32, distances (r, k)
    float64), ranked by ‖x‖² − 2q·x about X's first point — ‖q‖², the
    same across a row, is left out, so nothing of the size of ‖q‖²
    cancels and a query at 10³⁰ ranks as one near the points; exact ties
    go to the lower index, as the search's.  X's rows from ``n_valid`` on
    (padding) and the column ``exclude[i]`` of row i (≥ 0: the query's own
    point; −1: none) come after every other, at distance +inf, in index
    order — the search's order.  Distances are ‖q − x‖ computed directly."""
    X = np.asarray(X, np.float64)
    x0 = X[0]
    Xc, Qc = X - x0, np.asarray(Q, np.float64) - x0
    sq = np.einsum("ij,ij->i", Xc, Xc)
    sq[n_valid:] = np.inf
    step = max(1, EXACT_ROWS_ELEMENTS // max(X.shape[0], 1))
    idx, dist = [], []
    for start in range(0, Qc.shape[0], step):
        q = Qc[start:start + step]
        key = sq[None, :] - 2.0 * (q @ Xc.T)
        if exclude is not None:
            own = np.asarray(exclude[start:start + step])
            rows = np.flatnonzero(own >= 0)
            key[rows, own[rows]] = np.inf
        order = np.argsort(key, axis=1, kind="stable")[:, :k]
        direct = np.sqrt(np.sum((q[:, None, :] - Xc[order]) ** 2, axis=2))
        idx.append(order.astype(np.int32))
        dist.append(np.where(np.isfinite(np.take_along_axis(key, order, axis=1)), direct, np.inf))
    return np.concatenate(idx), np.concatenate(dist)


def _with_exact_rows(idx, dist, rows, Q, X, n_valid: int, exclude_self: bool, first_row: int = 0):
    """The search's (idx, dist) with the query ``rows`` (host indices)
    ranked again by :func:`exact_rows` (Q and X the given points), on the
    devices the search's answer is on; as they are when ``rows`` is empty."""
    if rows.size == 0:
        return idx, dist
    home = next(iter(idx.devices()))
    idx_h, dist_h = np.array(idx), np.array(dist)
    X = np.asarray(X)
    if X.shape[0] < idx_h.shape[1]:  # the search found padding columns too (at +inf, in index order)
        X = padded_rows(X, idx_h.shape[1])
    exclude = None
    if exclude_self:  # query row r is training point first_row + r (none past X's rows)
        exclude = rows + first_row
        exclude = np.where(exclude < X.shape[0], exclude, -1)
    new_idx, new_dist = exact_rows(np.asarray(Q)[rows], X, idx_h.shape[1], n_valid, exclude)
    idx_h[rows], dist_h[rows] = new_idx, new_dist.astype(dist_h.dtype)
    return jax.device_put(idx_h, home), jax.device_put(dist_h, home)


def blocked_topk(Q, X, k: int, block: int, exclude_self: bool, devices=None, recall_target=None, rows=None,
                  cut: bool = True, share_k: bool = True, queries: int | None = None, first_row: int = 0):
    """Exact kNN of rows of Q among rows of X, a tile of ``block`` query rows
    at a time; with ``devices``, the query rows are split across them; with a
    ``recall_target``, selected by ``lax.approx_min_k``.  Points are first
    :func:`_conditioned`; the distances returned are those of the given points.

    Returns (indices, distances) of at least Q's n rows, the first n being
    the answer: on one device, concrete X of at most :data:`shared_sizes.SHARED_MAX_ROWS`
    points is conditioned on the host (:func:`conditioning_on_host`),
    padded to :func:`shared_rows` (the padding never a neighbour) and Q to
    :func:`query_rows` rows, so that data of nearby sizes — cross-validation
    folds, a learning curve's steps — share one compiled search (where
    each new size would compile its own).  ``rows``: pad such X to at
    least this many rows (another search's, to share its compilation).  Such
    a search of at most :data:`shared_sizes.SHARED_K_MAX_ROWS` points finds
    :func:`shared_k` (k) neighbours (at most X's padded rows) and keeps the
    first k — or all of them when not ``cut``; exactly k when not
    ``share_k`` (a caller whose ks already share one search).

    Concrete query rows far from the training points (:func:`far_query_rows`:
    found on the host before the search where X is conditioned there, else
    by the search's program) are ranked again by :func:`exact_rows`; a
    search without any runs as it would otherwise.  ``queries``: Q's rows
    from this on are padding, never ranked again (None: none are).  Traced
    queries (under ``jax.jit``) keep the search's ranking.  ``first_row``:
    with ``exclude_self``, Q's row r is X's point first_row + r (a slice of
    a graph's rows: :mod:`jaxnn._src.multihost`; one device)."""
    n_real = Q.shape[0] if queries is None else int(queries)
    concrete = not isinstance(X, jax.core.Tracer) and not isinstance(Q, jax.core.Tracer)
    if devices is None:  # one program: (conditioning,) search and rescaling compile together
        if recall_target is not None:
            kernel, recall_target = _onepass_topk, float(recall_target)
        else:
            kernel = search_kernel(X.shape[0], X.shape[1], k, platforms.platform(), X.dtype)
        m, n_valid, q_valid, transform, found, far, own = X.shape[0], None, None, None, k, None, exclude_self
        if concrete and m <= shared_sizes.SHARED_MAX_ROWS:
            given = np.asarray(X)
            X, (e0, shift, s, e) = conditioning_on_host(given)  # no reduction of X in the program
            far = far_query_rows(np.asarray(Q)[:n_real], (e0, shift, s, e))
            X = program_argument(padded_rows(X, max(shared_rows(m), rows or 0)))
            n_valid, q_valid = program_argument(m, np.int32), program_argument(n_real, np.int32)
            Q = padded_rows(Q, query_rows(Q.shape[0], block, among=X.shape[0]))
            transform = (program_argument(e0, np.int32), program_argument(shift), program_argument(s),
                         program_argument(e, np.int32))
            if recall_target is None and share_k:  # a few ks share the program; the padding columns sort last
                found = min(shared_k(k, X.shape[0], Q.shape[0]), X.shape[0])  # as the search padded alike
            # a graph and a query search share the program: every query row r is compared
            # with training point row0 + r, and a query search's row0 is past X's rows
            row0 = program_argument(first_row if exclude_self else X.shape[0], np.int32)
            exclude_self = True
        else:
            given, row0 = X, first_row
        out = conditioned_search(Q, X, n_valid, transform, row0, q_valid, kernel=kernel, k=found, block=block,
                                 exclude_self=exclude_self, recall_target=recall_target,
                                 far_flags=concrete and far is None)
        idx, dist = out[:2]
        if concrete:
            far = np.flatnonzero(np.asarray(out[2])[:n_real]) if far is None else far
            idx, dist = _with_exact_rows(idx, dist, far, Q, given, m, own, first_row)
        return first_rows((idx, dist), k, axis=1) if cut else (idx, dist)  # nearest first: cut on the host
    if first_row:
        raise ValueError("first_row applies to a search on one device")
    given, given_q = X, Q
    Q, X, exponent, far = _conditioned(Q, X)
    idx, dist = _blocked_topk_conditioned(Q, X, k, block, exclude_self, devices, recall_target)
    dist = _times_power_of_two(dist, exponent)
    if concrete:
        far = np.flatnonzero(np.asarray(far)[:n_real])
        idx, dist = _with_exact_rows(idx, dist, far, given_q, given, given.shape[0], exclude_self)
    return idx, dist


@programs.jit(static_argnames=("kernel", "k", "block", "exclude_self", "recall_target", "far_flags"))
def conditioned_search(Q, X, n_valid=None, transform=None, row0=0, q_valid=None, *, kernel, k: int, block: int,
                        exclude_self: bool, recall_target, far_flags: bool = False):
    """:func:`blocked_topk` on one device, jitted whole: a new shape compiles
    one program, not three (the conditioning and the rescaling of the
    distances would compile programs of their own per query size).
    ``n_valid``: X's rows from n_valid on are padding (None: none are).
    ``q_valid`` (traced): Q's rows from it on are padding, their blocks not
    searched (None: all are searched).
    ``transform``: X comes conditioned (:func:`conditioning_on_host`) and
    (e0, shift, s, e) condition Q alike and scale the distances back; None:
    both are conditioned here.  ``row0`` (traced): with ``exclude_self``,
    query row r is training point row0 + r.  ``far_flags`` (without a
    ``transform``): a third output, (n,) whether each query row is far from
    the training points (:func:`far_query_rows`)."""
    far = None
    if transform is None:
        Q, X, exponent, far = _conditioned(Q, X)
    else:
        e0, shift, s, exponent = transform
        Q = (_times_power_of_two(Q, -e0) - shift) / s
    extra = {} if recall_target is None else {"recall_target": recall_target}
    idx, dist = kernel(Q, X, k, block, exclude_self, row0, n_valid=n_valid, q_valid=q_valid, **extra)
    if far_flags:
        return idx, _times_power_of_two(dist, exponent), far
    return idx, _times_power_of_two(dist, exponent)


def _blocked_topk_conditioned(Q, X, k: int, block: int, exclude_self: bool, devices, recall_target):
    """:func:`blocked_topk` on points already conditioned."""
    if recall_target is not None:
        kernel, recall_target = _onepass_topk, float(recall_target)
    else:
        kernel = search_kernel(X.shape[0], X.shape[1], k, platforms.platform(devices), X.dtype)
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
def _onepass_topk(Q, X, k: int, block: int, exclude_self: bool, row0=0, recall_target=None, n_valid=None,
                  q_valid=None):
    """block × m distance tiles, then :func:`_smallest_k` on each — or, with
    a ``recall_target``, ``lax.approx_min_k`` (TPU-native approximate
    selection; elsewhere XLA computes it exactly).  Query row r is training
    point ``row0 + r`` when ``exclude_self``.  X's rows from ``n_valid`` on
    (None: none) are padding, at distance +inf; Q's rows from ``q_valid``
    on are padding, not searched (:func:`_map_blocks`)."""
    n, m = Q.shape[0], X.shape[0]
    n_blocks = -(-n // block)
    Qp = jnp.zeros((n_blocks * block, Q.shape[1]), Q.dtype).at[:n].set(Q)
    cols = jnp.arange(m)
    x_sq = _padding_at_infinity(jnp.sum(X * X, axis=1), cols, n_valid)

    def one_block(b):
        start = b * block
        q = jax.lax.dynamic_slice_in_dim(Qp, start, block)
        d2 = jnp.sum(q * q, axis=1)[:, None] - 2.0 * distance_dots(q, X) + x_sq[None, :]
        d2 = jnp.maximum(d2, 0.0)
        if exclude_self:
            rows = row0 + start + jnp.arange(block)
            d2 = jnp.where(rows[:, None] == cols[None, :], jnp.inf, d2)
        if recall_target is None:
            vals, idx = _smallest_k(d2, k)
        else:
            vals, idx = jax.lax.approx_min_k(d2, k, recall_target=recall_target)
        return idx.astype(jnp.int32), jnp.sqrt(vals)

    idx, dist = _map_blocks(one_block, n_blocks, block, k, Q.dtype, q_valid)
    return idx.reshape(-1, k)[:n], dist.reshape(-1, k)[:n]


def _map_blocks(one_block, n_blocks: int, rows: int, k: int, dtype, q_valid=None):
    """``one_block``'s (indices (rows, k) int32, distances (rows, k) ``dtype``)
    for the query blocks 0 … n_blocks − 1 of ``rows`` rows each, stacked
    (n_blocks, rows, k): ``lax.map``.  With ``q_valid`` (traced: the query
    rows from it on are padding) a loop over the blocks that hold real rows
    only, zeros for the others: a batch padded to a shared size
    (:func:`shared_sizes.query_rows`) costs the search of its own rows'
    blocks, and its rows' answers are the same."""
    if q_valid is None:
        return jax.lax.map(one_block, jnp.arange(n_blocks))
    live = jnp.minimum((q_valid + rows - 1) // rows, n_blocks)

    def block(b, out):
        idx, dist = one_block(b)
        return out[0].at[b].set(idx), out[1].at[b].set(dist)

    zeros = (jnp.zeros((n_blocks, rows, k), jnp.int32), jnp.zeros((n_blocks, rows, k), dtype))
    return jax.lax.fori_loop(0, live, block, zeros)


@functools.partial(jax.jit, static_argnames=("k", "block", "exclude_self"))
def _chunked_topk(Q, X, k: int, block: int, exclude_self: bool, row0=0, n_valid=None, q_valid=None):
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

        def chunk_minima(c):
            xc = jax.lax.dynamic_slice_in_dim(Xp, c * _CHUNK, _CHUNK)
            d2 = q_sq - 2.0 * distance_dots(q, xc) + jax.lax.dynamic_slice_in_dim(x_sq, c * _CHUNK, _CHUNK)[None, :]
            if exclude_self:
                d2 = jnp.where(rows[:, None] == c * _CHUNK + jnp.arange(_CHUNK)[None, :], jnp.inf, d2)
            return jnp.min(d2.reshape(block, _CHUNK // _GROUP, _GROUP), axis=2)

        minima = jax.lax.map(chunk_minima, jnp.arange(n_chunks))  # (chunks, block, chunk/32)
        return _nearest_in_groups(q, q_sq, rows, jnp.moveaxis(minima, 0, 1).reshape(block, -1), Xp, x_sq, k,
                                  exclude_self)

    idx, dist = _map_blocks(one_block, n_blocks, block, k, Q.dtype, q_valid)
    return idx.reshape(-1, k)[:n], dist.reshape(-1, k)[:n]


def _nearest_in_groups(q, q_sq, rows, minima, Xp, x_sq, k: int, exclude_self: bool, two_level: bool = False):
    """The two-stage selection's second stage: (indices (b, k) int32,
    distances (b, k)) of the k nearest of the query rows q (b, d) (squared
    norms ``q_sq`` (b, 1); training points ``rows`` (b,) when
    ``exclude_self``) among the 32·k points of the k groups of 32 columns of
    least ``minima`` (b, groups), their distances computed again in full
    float32 from Xp (the points) and x_sq (their squared norms, +inf:
    padding).  The groups are taken in index order, so ties go to the lower
    index.  ``two_level``: the k groups by :func:`_smallest_k`'s two-stage
    selection over the minima (groups of 32 groups) rather than one
    ``top_k`` over all of them."""
    _, best_groups = _smallest_k(minima, k) if two_level else jax.lax.top_k(-minima, k)
    best_groups = jnp.sort(best_groups, axis=1)
    cand = (best_groups[:, :, None] * _GROUP + jnp.arange(_GROUP)).reshape(q.shape[0], k * _GROUP)
    d2 = q_sq - 2.0 * jnp.einsum("bd,bcd->bc", q, Xp[cand], precision=DISTANCE_PRECISION) + x_sq[cand]
    if exclude_self:
        d2 = jnp.where(rows[:, None] == cand, jnp.inf, d2)
    neg, pos = jax.lax.top_k(-jnp.maximum(d2, 0.0), k)
    return jnp.take_along_axis(cand, pos, axis=1).astype(jnp.int32), jnp.sqrt(-neg)


#: candidate or minima elements of one query block of :func:`_fused_topk` (512 MiB of float32)
FUSED_BLOCK_ELEMENTS = 1 << 27


def fused_block_rows(m_pad: int, k: int, d: int, unit: int = group_minima.BLOCK_ROWS) -> int:
    """Query rows of one block of :func:`_fused_topk`: a multiple of the
    kernel's rows ``unit``, its (rows, m_pad/32) minima and (rows, 32·k, d)
    candidates each within :data:`FUSED_BLOCK_ELEMENTS`."""
    per_row = max(m_pad // _GROUP, k * _GROUP * d, 1)
    return max(unit, FUSED_BLOCK_ELEMENTS // per_row // unit * unit)


def fused_points(X, n_valid=None, groups: int = group_minima.TILE_GROUPS):
    """The points X (m, d) laid out for :func:`jaxnn._src.group_minima.group_minima`:
    (Xp (m_pad, width) padded with zero rows and columns, x_sq (m_pad,) their
    squared norms, +inf from ``n_valid`` on (None: from m), and both
    :func:`~jaxnn._src.group_minima.permuted` within tiles of 32·``groups``)."""
    m, d = X.shape
    width, m_pad = group_minima.feature_width(d), group_minima.padded_columns(m, groups)
    Xp = jnp.zeros((m_pad, width), X.dtype).at[:m, :d].set(X)
    x_sq = jnp.full((m_pad,), jnp.inf, X.dtype).at[:m].set(  # padding: never near
        _padding_at_infinity(jnp.sum(X * X, axis=1), jnp.arange(m), n_valid))
    return Xp, x_sq, group_minima.permuted(Xp, groups), group_minima.permuted(x_sq, groups)


#: the fused first stage's products: TF32×3 — three TF32 tensor-core
#: products (high·high + high·low + low·high), about 21 of float32's 24 bits
#: — on a GPU; the second stage ranks the candidates in full float32
FUSED_PRECISION = jax.lax.DotAlgorithmPreset.TF32_TF32_F32_X3


@functools.partial(jax.jit, static_argnames=("k", "block", "exclude_self", "precision", "interpret", "block_rows",
                                             "groups"))
def _fused_topk(Q, X, k: int, block: int, exclude_self: bool, row0=0, n_valid=None, precision=FUSED_PRECISION,
                interpret: bool | None = None, block_rows: int = group_minima.BLOCK_ROWS,
                groups: int = group_minima.TILE_GROUPS, q_valid=None):
    """The two-stage selection of :func:`_smallest_k` with the first stage
    one Pallas kernel (:func:`jaxnn._src.group_minima.group_minima`: each
    query row's minimum over every group of 32 points, no distance tile
    written out) and the second :func:`_nearest_in_groups` (the k groups
    chosen two-level, faster than one ``top_k`` over a row's m/32 minima),
    on query blocks of :func:`fused_block_rows` (``block`` is not read: the
    kernel's blocks are its own, ``block_rows`` × ``groups``).
    ``precision``: the first stage's products (TF32×3 by default, on the
    tensor cores, where the CUDA cores' float32 products are slower:
    docs/performance.md, GPU); the second stage's are full float32 always,
    so that the neighbours are those of float32 distances but for near-ties
    within a few float32 ulps.  ``interpret``: Pallas' interpreter (None:
    where JAX's backend is a CPU)."""
    del block
    n, d = Q.shape
    Xp, x_sq, xt, xt_sq = fused_points(X, n_valid, groups)
    m_pad, width = Xp.shape
    rows_a_block = fused_block_rows(m_pad, k, width, block_rows)
    rows_a_block = min(rows_a_block, -(-n // block_rows) * block_rows)
    n_blocks = -(-n // rows_a_block)
    Qp = jnp.zeros((n_blocks * rows_a_block, width), Q.dtype).at[:n, :d].set(Q)

    def one_block(b):
        start = b * rows_a_block
        q = jax.lax.dynamic_slice_in_dim(Qp, start, rows_a_block)
        q_sq = jnp.sum(q * q, axis=1)
        rows = row0 + start + jnp.arange(rows_a_block, dtype=jnp.int32)
        own = rows if exclude_self else jnp.full_like(rows, -1)
        minima = group_minima.group_minima(q, q_sq, own, xt, xt_sq, precision=precision, block_rows=block_rows,
                                           groups=groups, interpret=interpret)
        return _nearest_in_groups(q, q_sq[:, None], rows, minima, Xp, x_sq, k, exclude_self, two_level=True)

    idx, dist = _map_blocks(one_block, n_blocks, rows_a_block, k, Q.dtype, q_valid)
    return idx.reshape(-1, k)[:n], dist.reshape(-1, k)[:n]
