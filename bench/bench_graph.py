"""k-NN graph construction: exact blocked brute force in JAX vs pynndescent.

* :class:`KnnGraph` — ``time_graph`` / ``peakmem_graph`` of jaxnn's exact
  ``knn_graph(X, k=10)`` for m ∈ {10⁴, 10⁵}, d ∈ {16, 128}.
* :class:`NNDescent` — the same graphs by ``knn_graph(..., method="nndescent",
  candidates=c)`` for c = 2k (the default) and 3k: ``track_seconds``,
  ``track_peak_rss_increase`` and ``track_recall`` (fraction of the exact 10
  neighbours found).  pynndescent's numba kernels JIT-compile in every new
  process (tens of seconds to minutes), so all (m, d, candidates) cases are
  measured in one ``setup_cache`` process after a warm-up call per d, and
  the tracks report them.
* :class:`GraphVsSklearn` — ``track_time_ratio_vs_sklearn_brute``: jaxnn's
  exact graph time over scikit-learn ``NearestNeighbors(algorithm="brute")``
  on the same points (m = 2·10⁴): each called once first, then the fastest
  of three calls each, interleaved in one process.

Points: a 10-class Gaussian mixture (``common.synthetic``), float32.
"""

from __future__ import annotations

import functools
import os
import threading

import jax.numpy as jnp
import numpy as np

from jaxnn import knn_graph

from .common import K, QUICK, SEED, Benchmark, block, interleaved_best, skip_unless, synthetic, timed_block, warm_exact_graph

GRAPH_M = (1000,) if QUICK else (10_000, 100_000)
GRAPH_D = (16,) if QUICK else (16, 128)
RATIO_M = 2000 if QUICK else 20_000
#: nndescent graph degrees: 2k (knn_graph's default) and 3k
NND_CANDIDATES = (2 * K, 3 * K)


@functools.lru_cache(maxsize=None)
def points(m: int, d: int) -> np.ndarray:
    return synthetic(m, d=d, seed=SEED)[0].astype(np.float32)


def recall(approx, exact) -> float:
    """Mean fraction of each row's exact neighbours present in ``approx``."""
    approx, exact = np.asarray(approx), np.asarray(exact)
    return float(np.mean(np.any(approx[:, :, None] == exact[:, None, :], axis=1)))


def _rss() -> int:
    """Resident set size of this process, bytes (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def peak_rss_increase(fn, interval: float = 0.005):
    """(result, seconds, peak RSS during ``fn()`` minus RSS before it, bytes),
    the peak sampled by a background thread every ``interval`` seconds."""
    base = peak = _rss()
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.wait(interval):
            peak = max(peak, _rss())

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        out, seconds = timed_block(fn)
    finally:
        done.set()
        thread.join()
    return out, seconds, max(peak, _rss()) - base


class KnnGraph(Benchmark):
    """Exact training-graph construction (blocked brute force in JAX)."""

    param_names = ["m", "d"]
    params = (GRAPH_M, GRAPH_D)

    def setup(self, m, d):
        self.X = jnp.asarray(points(m, d))
        warm_exact_graph(self.X, K)

    def time_graph(self, m, d):
        block(knn_graph(self.X, K).indices)

    def peakmem_graph(self, m, d):
        block(knn_graph(self.X, K).indices)


class NNDescent(Benchmark):
    """pynndescent's approximate graph: time, memory, recall vs exact, for
    the default ``candidates`` = 2k and for 3k (the ≥ 0.95-recall setting
    at d = 128)."""

    param_names = ["m", "d", "candidates"]
    params = (GRAPH_M, GRAPH_D, NND_CANDIDATES)

    def setup_cache(self):
        for d in GRAPH_D:  # numba JIT (some kernels are first hit at one d only)
            knn_graph(points(2000, d), K, method="nndescent", seed=SEED)
        out = {}
        for m in GRAPH_M:
            for d in GRAPH_D:
                X = points(m, d)
                exact = knn_graph(jnp.asarray(X), K).indices
                for c in NND_CANDIDATES:
                    nnd, seconds, rss = peak_rss_increase(
                        lambda: knn_graph(X, K, method="nndescent", seed=SEED, candidates=c).indices)
                    out[(m, d, c)] = {"seconds": seconds, "peak_rss_increase": rss, "recall": recall(nnd, exact)}
        return out

    setup_cache.timeout = 3600.0

    def track_seconds(self, cache, m, d, c):
        return cache[(m, d, c)]["seconds"]

    track_seconds.unit = "seconds"

    def track_peak_rss_increase(self, cache, m, d, c):
        return cache[(m, d, c)]["peak_rss_increase"]

    track_peak_rss_increase.unit = "bytes"

    def track_recall(self, cache, m, d, c):
        return cache[(m, d, c)]["recall"]

    track_recall.unit = "recall@10"


class GraphVsSklearn(Benchmark):
    """jaxnn exact graph / scikit-learn brute-force graph, m = 2·10⁴."""

    param_names = ["d"]
    params = (GRAPH_D,)

    def setup(self, d):
        NearestNeighbors = skip_unless("sklearn.neighbors").NearestNeighbors
        X_np = points(RATIO_M, d)
        X = jnp.asarray(X_np)
        # kneighbors() without X excludes each point itself, like knn_graph
        self.sklearn_graph = lambda: NearestNeighbors(n_neighbors=K, algorithm="brute").fit(X_np).kneighbors()[1]
        self.jaxnn_graph = lambda: knn_graph(X, K).indices
        warm_exact_graph(X, K)
        self.sklearn_graph()

    def track_time_ratio_vs_sklearn_brute(self, d):
        t_jaxnn, t_sklearn = interleaved_best([self.jaxnn_graph, self.sklearn_graph], repeat=3)
        return t_jaxnn / t_sklearn

    track_time_ratio_vs_sklearn_brute.unit = "ratio"
