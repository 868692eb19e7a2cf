"""k-nearest-neighbour graphs and queries.

* :func:`knn_graph` — training neighbours NN_k(x_i), self excluded, exact ties
  broken by the lower index.  ``method="exact"`` is blocked brute force in JAX
  (:mod:`jaxnn._src.search`: one matmul per block of rows for
  ‖x‖² − 2x·x' + ‖x'‖², then a partial selection), memory bounded by
  ``block_size`` rows × m columns; ``method="nndescent"`` uses pynndescent.
* :func:`knn_query` — neighbours of new points among the training points.
* :func:`subgraph` — the graph of a subset, derived from the whole set's (each
  point's kept candidates where a search kept its candidate lists, else two hops).

Inverse neighbourhoods are in :mod:`jaxnn._src.inverse`, the padded sizes
the searches share in :mod:`jaxnn._src.shared_sizes`.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import multihost, platforms
from jaxnn._src.checks import check_integer, check_points, did_you_mean
from jaxnn._src.points import as_float, float32_ready
from jaxnn._src.search import block_rows, blocked_topk
from jaxnn._src.shared_sizes import first_rows, padded_rows, query_rows, to_device

__all__ = ["Neighbors", "knn_graph", "knn_query", "graph_and_query", "subgraph", "subgraph_and_rows"]

METHODS = ("exact", "nndescent", "approx")

#: distances from which an exact search on CPU warns on the "jaxnn" logger: those
#: of the exact graph of 2·10⁵ points, from which such a search takes long on a
#: CPU; its cost grows with m², nndescent's far more slowly
SLOW_SEARCH_PAIRS = 4 * 10**10

logger = logging.getLogger("jaxnn")


def _warn_if_slow(n_query: int, m: int, platform: str, what: str, hint: str) -> None:
    if platforms.warns_slow_search(platform) and n_query * m >= SLOW_SEARCH_PAIRS:
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


def knn_graph(
    X,
    k: int,
    *,
    method: str = "exact",
    block_size: int | None = None,
    seed: int = 0,
    candidates: int | None = None,
    n_jobs: int = -1,
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
        3k → 0.93 / 0.955, 4k → 0.965 / 0.984, the time growing about in
        proportion to the candidates.
      n_jobs: nndescent only — pynndescent's threads: −1 (the default)
        every core, or a count.  pynndescent splits its work by the number
        of threads, so a seed gives the same graph run to run with the same
        count; ``n_jobs=1`` gives the same graph on every machine.
      n_trees, n_iters: nndescent only — pynndescent's random-projection
        trees of its initial graph and its NN-descent rounds (None: its
        defaults, 21 and 17 at m = 10⁵).  Fewer trade recall for time; on
        the 10⁵-point set (``candidates=k + 2``, ``n_jobs=-1``): defaults
        recall@10 0.65; ``n_trees=8, n_iters=4`` 0.58; ``n_trees=4,
        n_iters=3`` 0.40 — GNNB's test accuracy 0.946 / 0.944 / 0.943 (exact
        graph 0.953).
      devices: exact and approx — None (the default device), an int n (the
        first n devices), a list of devices or ``"all"``: the query rows are
        split across them (``jax.shard_map``), the points replicated; same
        result.
      recall_target: approx only, in (0, 1].

    Returns:
      :class:`Neighbors` with ``indices`` (m, k) int32 and ``distances`` (m, k).
    """
    return graph_candidates(X, k, method=method, block_size=block_size, seed=seed, candidates=candidates,
                            n_jobs=n_jobs, n_trees=n_trees, n_iters=n_iters, devices=devices,
                            recall_target=recall_target)[0]


def graph_candidates(X, k: int, *, method: str = "exact", block_size: int | None = None, seed: int = 0,
                     candidates: int | None = None, n_jobs: int = -1, n_trees: int | None = None,
                     n_iters: int | None = None, devices=None, recall_target: float = 0.95) -> tuple:
    """(:func:`knn_graph` with the same arguments, every row's whole candidate
    list — nndescent's, :class:`NNDescentGraph`; an exact search's on one
    device where it found more than k neighbours (:func:`shared_sizes.shared_k`:
    small data), nearest first, −1 past the last point —, or None): for
    :func:`subgraph` to derive the graph of a subset from."""
    (X,) = float32_ready(check_points(X, "X"))
    m = X.shape[0]
    k = _check_k(k, m, exclude_self=True)
    if method not in METHODS:
        raise ValueError(f"unknown neighbour method {method!r}; use one of {METHODS}" + did_you_mean(method, METHODS))
    seed = check_integer(seed, "seed", low=0, high=2**32 - 1)  # nndescent's random state (checked for every method)
    if method == "nndescent":
        if candidates is None:
            candidates = default_candidates(k)
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
        found = nndescent_index(np.asarray(X), k, seed, int(candidates), int(n_jobs), **options)
        return found.neighbors, found.candidates
    for name, value in (("candidates", candidates), ("n_trees", n_trees), ("n_iters", n_iters)):
        if value is not None:
            raise ValueError(f"{name} applies to method='nndescent' only")
    if not (isinstance(n_jobs, (int, np.integer)) and not isinstance(n_jobs, bool) and n_jobs in (-1, 1)):
        raise ValueError(f"n_jobs applies to method='nndescent' only (the {method} search runs in JAX), got n_jobs={n_jobs!r}")
    if method == "approx":
        if isinstance(recall_target, bool) or not isinstance(recall_target, (int, float)) or not 0.0 < recall_target <= 1.0:
            raise ValueError(f"recall_target must lie in (0, 1], got {recall_target!r}")
    Xf = as_float(X)
    target = float(recall_target) if method == "approx" else None
    platform = platforms.platform(devices)
    _warn_if_slow(m, m, platform, f"knn_graph of {m} points",
                  "method='nndescent' (fit's graph_method=) is approximate and much faster at this size")
    if method == "exact" and devices is None and multihost.joined():  # every process searches its slice of rows
        return Neighbors(*(to_device(a) for a in _rows_across_processes(X, X, k, block_rows(m, block_size, platform)))), None
    idx, dist = blocked_topk(Xf, Xf, k, block_rows(m, block_size, platform), True, devices, target, cut=False)
    lists = None
    if idx.shape[1] > k:  # the point itself and the padding rows fill the columns past the m − 1 others
        lists = np.asarray(idx)[:m]
        lists = np.where((lists < m) & (lists != np.arange(m)[:, None]), lists, -1).astype(np.int32)
    return Neighbors(*first_rows(first_rows((idx, dist), k, axis=1), m)), lists


def _rows_across_processes(Q, X, k: int, block: int, **kw) -> tuple:
    """:func:`blocked_topk` of every row of Q among X (the same on every
    process) under ``jax.distributed``: each process searches its slice of
    Q's rows (:func:`multihost.process_rows`; with ``exclude_self`` row r
    stays training point r) on its own device, and the slices — the same
    rows one process's search gives — are gathered on every process:
    (indices, distances) host arrays of Q's rows."""
    n = Q.shape[0]
    start, stop = multihost.process_rows(n)
    idx, dist = blocked_topk(Q[start:stop], X, k, block, True, first_row=start, **kw)
    counts = multihost.row_counts(n)
    return tuple(multihost.gathered_rows(np.asarray(a)[: stop - start], counts) for a in (idx, dist))


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
    return X_train, X_query, as_float(X_train), k


def graph_and_query(X_train, X_query, k: int, *, devices=None, rows=None, cut_queries: bool = True,
                    share_k: bool = True):
    """``knn_graph(X_train, k)`` and ``knn_query(X_train, X_query, k)`` by one
    exact search: the rows of X_train and then those of X_query are queried
    together among X_train (the first m excluding themselves; a query row has
    no index of its own to exclude), conditioned as each alone would be — one
    compiled program where the two would compile one each (the largest part
    of a new size's first fit with ``posterior="auto"``).  Same neighbours as
    the two searches, up to float rounding in the distance tiles.

    Args:
      X_train: (m, d) points.  X_query: (n, d) points.  1 ≤ k < m.
      devices: as for :func:`knn_graph`.
      rows: a small X_train is padded to at least this many rows (a larger
        search's :func:`shared_sizes.shared_rows`, whose compiled program then serves).
      cut_queries: False: the queries' rows keep all the neighbours found
        (a small search's :func:`shared_sizes.shared_k`, nearest first).
      share_k: False: a small search finds exactly k neighbours, not
        :func:`shared_sizes.shared_k` (k) — for a caller whose ks already
        share this one search (:func:`jaxnn.select`).

    Returns:
      ((m, k), (n, k)) int32 NumPy indices into X_train, nearest first
      ((n, k') with ``cut_queries=False``).
    """
    X_train, X_query, Xt, k = _search_points(X_train, X_query, k, exclude_self=True)
    m = Xt.shape[0]
    if isinstance(X_train, np.ndarray) and isinstance(X_query, np.ndarray):  # stacked on the host: nothing compiles
        Q = to_device(np.concatenate([np.asarray(X_train, Xt.dtype), np.asarray(X_query, Xt.dtype)]))
    else:
        Q = jnp.concatenate([Xt, as_float(X_query).astype(Xt.dtype)])
    platform = platforms.platform(devices)
    _warn_if_slow(Q.shape[0], m, platform, f"knn_graph of {m} points and knn_query of {X_query.shape[0]}",
                  "method='nndescent' (fit's graph_method=) is approximate and much faster at this size")
    if devices is None and multihost.joined():  # every process searches its slice of the rows
        idx, _ = _rows_across_processes(np.asarray(Q), np.asarray(Xt), k, block_rows(m, None, platform), rows=rows,
                                        cut=False, share_k=share_k)
    else:
        idx, _ = blocked_topk(Q, Xt, k, block_rows(m, None, platform), True, devices, rows=rows, cut=False,
                              share_k=share_k)
    idx = np.asarray(idx)
    return idx[:m, :k], idx[m:Q.shape[0], :k] if cut_queries else idx[m:Q.shape[0]]


def padded_query(X_train, X_query, k: int, *, block_size: int | None = None, devices=None, cut: bool = True):
    """:func:`knn_query`'s search on the queries padded to :func:`query_rows`
    rows: (indices (rows, k') int32, distances (rows, k'), n).  Rows from n on
    are the neighbours of padding points (zeros), to be dropped; callers that
    go on computing (scores, posteriors) do so on all rows and drop them at
    the end, so every step sees the shared shape.  k' = k, or when not
    ``cut`` all the neighbours found, nearest first (a small search's
    :func:`shared_sizes.shared_k`: callers that sum the first k of them, a traced count,
    share one compiled program across ks)."""
    X_train, X_query, Xt, k = _search_points(X_train, X_query, k, exclude_self=False)
    m, n = Xt.shape[0], X_query.shape[0]
    platform = platforms.platform(devices)
    block = block_rows(m, block_size, platform, queries=n)
    rows = n if isinstance(X_query, jax.core.Tracer) else query_rows(n, block)
    if isinstance(X_query, np.ndarray):  # the cast and the padding on the host: nothing compiles per n
        Xq = padded_rows(np.asarray(X_query, dtype=Xt.dtype), rows)  # on the host: blocked_topk checks it there
    else:
        Xq = padded_rows(as_float(X_query).astype(Xt.dtype), rows)
    _warn_if_slow(n, m, platform, f"knn_query of {n} points among {m}",
                  "an approximate index can find the neighbours instead (predict's neighbors=, docs/guide/neighbour-graphs.md)")
    idx, dist = blocked_topk(Xq, Xt, k, block, False, devices, cut=cut, queries=n)
    return idx, dist, n


def neighbor_sum(rows, indices, k=None):
    """Σ_{t<k} rows[indices[:, t]] (n, C) for (m, C) rows, (n, k') indices
    and k ≤ k' (None: k'; a traced int scalar serves every k with one
    compiled program — :func:`jaxnn.select`'s candidates, scored from the
    largest one's neighbours), one neighbour column at a time (in column
    order), so that no (n, k, C) gather is made:
    ``jnp.sum(rows[indices], axis=1)`` would hold 11.7 GB to score 10⁶
    queries with C = 100 and take many times as long as this.  Columns from
    k on are masked, not skipped: the loop keeps its static length."""
    H0 = jnp.zeros((indices.shape[0], rows.shape[1]), rows.dtype)
    if k is None:
        return jax.lax.fori_loop(0, indices.shape[1], lambda t, H: H + rows[indices[:, t]], H0)
    return jax.lax.fori_loop(0, indices.shape[1], lambda t, H: jnp.where(t < k, H + rows[indices[:, t]], H), H0)


class NNDescentGraph(NamedTuple):
    """What :func:`nndescent_index` found."""

    neighbors: Neighbors  #: the (m, k) k-NN graph, self excluded, nearest first
    index: Any  #: the ``NNDescent`` index that found it, for :func:`nndescent_query`
    #: (m, candidates) int32 host array: each row's whole candidate list, self excluded, nearest
    #: first, −1 where pynndescent left it unfilled (its first k columns: ``neighbors`` where filled)
    candidates: np.ndarray


def default_candidates(k: int) -> int:
    """The neighbours pynndescent builds its graph of when none are given: 2k."""
    return 2 * int(k)


def nndescent_index(X: np.ndarray, k: int, seed: int, candidates: int, n_jobs: int, **options) -> NNDescentGraph:
    """The k-NN graph of X by pynndescent (``candidates`` neighbours a point,
    of which the k nearest are kept), with the index that found it and every
    row's candidates (:class:`NNDescentGraph`)."""
    from pynndescent import NNDescent

    m = X.shape[0]
    index = NNDescent(np.array(X, np.float32), n_neighbors=min(candidates + 1, m), random_state=seed, n_jobs=n_jobs, **options)
    raw_idx, raw_dist = index.neighbor_graph
    # Drop self *by index* (duplicates may displace it from column 0) and
    # keep the others in order (pynndescent returns each row ascending).
    rank = np.broadcast_to(np.arange(raw_idx.shape[1]), raw_idx.shape).copy()
    rank[raw_idx == np.arange(m)[:, None]] = raw_idx.shape[1]
    pick = np.argsort(rank, axis=1, kind="stable")[:, :raw_idx.shape[1] - 1]
    found = np.take_along_axis(raw_idx, pick, axis=1).astype(np.int32)
    idx = found[:, :k].astype(np.int64)
    dist = np.take_along_axis(raw_dist, pick[:, :k], axis=1).astype(np.float32)
    bad = np.nonzero((idx < 0).any(axis=1))[0]
    if bad.size:  # repair rows nndescent could not fill, with an exact search
        idx[bad], dist[bad] = _exact_rows(jnp.asarray(X), bad, k)
    return NNDescentGraph(Neighbors(to_device(idx, np.int32), to_device(dist)), index, found)


def nndescent_query(index, X_train, X_query, k: int) -> Neighbors:
    """The k nearest training points of each query row by a pynndescent
    ``index`` of X_train (approximate; rows it cannot fill — −1 entries —
    are searched exactly among X_train)."""
    # a writeable copy: numba compiles pynndescent's kernels anew for read-only
    # arrays (np.asarray of a JAX array is one), tens of seconds a process
    idx, dist = index.query(np.array(X_query, np.float32), k=k)
    idx, dist = idx.astype(np.int64), dist.astype(np.float32)
    bad = np.nonzero((idx < 0).any(axis=1))[0]
    if bad.size:
        X_train = jnp.asarray(X_train)
        idx[bad], dist[bad] = _exact_among(jnp.asarray(np.asarray(X_query)[bad], X_train.dtype), X_train, k)
    return Neighbors(to_device(idx, np.int32), to_device(dist))


def _exact_among(Q, X, k: int):
    """The exact k nearest rows of X to each row of Q (a few rows to repair):
    NumPy indices and distances, in the search's own tiles (a fixed 256 rows
    planned 1.06 GB at m = 10⁶ for 5 rows)."""
    return tuple(np.asarray(a)[: Q.shape[0]] for a in blocked_topk(Q, X, k, block_rows(X.shape[0], None), False))


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
#: points ~n²·d: they cost alike at n of a few tens of k², so below n = 48·k²
#: the exact search runs (the two hops' k² makes them the slower at large k)
SUBGRAPH_EXACT_RATIO = 48


def subgraph(X, neighbors, keep, rows=None, candidates=None, exact_lists: bool = False) -> np.ndarray:
    """The k-NN graph of the points ``X[keep]``, derived from a graph of all of X
    (with ``rows``: the k nearest kept points of other points of X).

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

    With ``candidates`` — each point's longer candidate list, as an
    approximate search found it (:class:`NNDescentGraph`: 2k a point by
    default) — a row's candidates are instead the kept points of its own
    list, in its order (no distance computed: a random 80 % keeps 16 of 20
    on average, and fewer than k in about one row of 10⁴ at k = 10), which
    gives the graph a search of the kept points alone would have found from
    those lists, at the cost of a filter.

    Args:
      X: (m, d) points.  neighbors: (m, k) indices into X (self excluded).
      keep: (n,) distinct indices into X, n > k.
      rows: (r,) indices into X of points outside ``keep`` whose neighbours
        among ``X[keep]`` are wanted instead (the held-out points of
        :func:`jaxnn.fit`'s ``posterior="auto"``): their candidates the same
        two hops, a row with fewer than k an exact query among ``X[keep]``.
        None: the kept points themselves.
      candidates: (m, c ≥ k) indices into X, each row nearest first, −1
        where unfilled (a row's own index is skipped), or None: two hops.
      exact_lists: the ``candidates`` are an exact search's (each row the c
        nearest points): their first k kept points are the exact neighbours
        among the kept points, at every n (no exact search below
        ``SUBGRAPH_EXACT_RATIO``·k²; a short row is still searched); without
        ``candidates``, no effect.

    Returns:
      (n, k) int32 neighbour indices into ``keep`` (row r: the neighbours of
      ``X[keep[r]]``), nearest first; with ``rows``, (r, k) (row r: those of
      ``X[rows[r]]``).
    """
    return _subgraphs(X, neighbors, keep, (rows,), candidates, exact_lists)[0]


def subgraph_and_rows(X, neighbors, keep, rows, candidates=None, exact_lists: bool = False) -> tuple:
    """``(subgraph(X, neighbors, keep, candidates=candidates),
    subgraph(X, neighbors, keep, rows=rows, candidates=candidates))`` — the
    same arrays, the rows of both with fewer than k candidates found by one
    exact search among the kept points (one compiled program, not two):
    :func:`jaxnn.fit`'s held-out choice derives the auxiliary fit's graph and
    its scored points' neighbours so."""
    return _subgraphs(X, neighbors, keep, (None, rows), candidates, exact_lists)


def _subgraphs(X, neighbors, keep, parts: tuple, candidates, exact_lists: bool = False) -> list:
    """[:func:`subgraph` (X, neighbors, keep, rows, candidates) for rows in ``parts``]."""
    nb = np.asarray(neighbors, dtype=np.int32)
    keep = np.asarray(keep, dtype=np.int64)
    m, k = nb.shape
    n = keep.size
    pos = np.full(m, -1, np.int32)
    pos[keep] = np.arange(n, dtype=np.int32)
    if n <= k or not np.array_equal(pos[keep], np.arange(n)):  # a repeated index: its later position won
        raise ValueError(f"keep must hold more than k={k} distinct indices into X, got {n} ({np.unique(keep).size} distinct)")
    exact_lists = exact_lists and candidates is not None  # without lists: two hops
    if n < SUBGRAPH_EXACT_RATIO * k * k and not exact_lists:  # k² candidates a row: the exact search is cheaper
        return [np.asarray(knn_graph(X[keep], k).indices, dtype=np.int32) if rows is None else
                np.asarray(knn_query(X[keep], X[np.asarray(rows, dtype=np.int64)], k).indices, dtype=np.int32)
                for rows in parts]
    (X,) = float32_ready(X)
    Xf = as_float(X) if candidates is None else None  # the two hops' points, on the device once for every part
    results, queries, shorts = [], [], []
    for rows in parts:
        targets = keep if rows is None else np.asarray(rows, dtype=np.int64)
        if candidates is None:
            result, full = _two_hops(Xf, nb, pos, targets, k)
        else:
            result, full = _kept_candidates(np.asarray(candidates, np.int32), pos, targets, k)
        short = np.nonzero(~full)[0]
        results.append(result)
        queries.append(targets[short])
        shorts.append(short)
    wanted = np.concatenate(queries)
    if wanted.size:  # fewer than k kept candidates: one exact search among the kept points for every part's
        # short rows, padded to a shared count (nothing compiles per count of short rows), k + 1 found so
        # that a kept point's own position can be dropped
        some = np.concatenate([wanted, np.full(query_rows(wanted.size) - wanted.size, wanted[0])])
        Xh = np.asarray(X)  # the kept points and the short rows gathered on the host: not all of X moved
        found = _exact_among(as_float(Xh[some]), as_float(Xh[keep]), k + 1)[0][: wanted.size]
        at = 0
        for rows, result, short, query in zip(parts, results, shorts, queries):
            rows_found = found[at: at + short.size]
            at += short.size
            self_pos = pos[query] if rows is None else np.full(short.size, -1)  # other points: no own position
            order = np.argsort(rows_found == self_pos[:, None], axis=1, kind="stable")[:, :k]  # self last, rest in order
            result[short] = np.take_along_axis(rows_found, order, axis=1)
    return [result.astype(np.int32) for result in results]


def _kept_candidates(candidates: np.ndarray, pos: np.ndarray, targets: np.ndarray, k: int) -> tuple:
    """((r, k) positions in the kept set of the first k kept points of each
    target row's ``candidates`` — −1 beyond a row's last —, (r,) whether a row
    had k): ``pos`` maps X's indices to kept positions (−1: not kept)."""
    if candidates.ndim != 2 or candidates.shape[1] < k:
        raise ValueError(f"candidates must be an (m, c) array with c >= k={k}, got shape {candidates.shape}")
    cand = candidates[targets]
    kept = np.where((cand >= 0) & (cand != targets[:, None]), pos[np.maximum(cand, 0)], -1)  # never itself
    mask = kept >= 0
    count = mask.sum(axis=1)
    flat = np.append(kept[mask], -1).astype(np.int32)  # the kept ones in the lists' order, row after row
    start = np.cumsum(count) - count  # row r's t-th kept one: flat[start[r] + t], while t < count[r]
    t = np.arange(k)
    return flat[np.where(t < count[:, None], start[:, None] + t, flat.size - 1)], count >= k


def _two_hops(Xj, nb: np.ndarray, pos: np.ndarray, targets: np.ndarray, k: int) -> tuple:
    """((r, k) positions in the kept set of the k nearest kept points within
    two hops of each target row, (r,) whether a row had k), in blocks of rows."""
    nbj, posj = to_device(nb), to_device(pos)
    r = targets.size
    block = max(1, min(SUBGRAPH_BLOCK, r, SUBGRAPH_ELEMENTS // ((k + k * k) * Xj.shape[1])))
    padded = np.concatenate([targets, np.full(-r % block, targets[0])]).astype(np.int32)
    out, ok = [], []
    for start in range(0, padded.size, block):
        idx, full = _two_hop_neighbors(Xj, nbj, posj, to_device(padded[start:start + block]), k)
        out.append(idx)
        ok.append(full)
    # writable: short rows are filled in by the caller
    return np.array(jnp.concatenate(out)[:r]), np.asarray(jnp.concatenate(ok))[:r]


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
