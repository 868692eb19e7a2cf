"""k-NN graph construction: exact blocked brute force in JAX vs pynndescent.

* :class:`KnnGraph` — ``time_graph`` / ``peakmem_graph`` of jaxnn's exact
  ``knn_graph(X, k=10)`` for m ∈ {10⁴, 10⁵}, d ∈ {16, 128}.
* :class:`NNDescent` — the same graphs by ``knn_graph(..., method="nndescent",
  candidates=c)`` for c = 2k (the default) and 3k: ``track_seconds``,
  ``track_peak_rss_increase`` and ``track_recall`` (fraction of the exact 10
  neighbours found).  Each (m, d, candidates) case runs in its own process
  (:func:`nndescent_case`, from ``setup_cache``), after a warm-up call
  that compiles pynndescent's numba kernels there (tens of seconds a
  process): a peak measured in a process that ran other cases before would
  under-report.  The quick sizes (one case, the tests' smoke run) run it in
  the benchmark's own process.
* :class:`GraphVsSklearn` — ``track_time_ratio_vs_sklearn_brute``: jaxnn's
  exact graph time over scikit-learn ``NearestNeighbors(algorithm="brute")``
  on the same points (m = 2·10⁴): each called once first, then the fastest
  of three calls each, interleaved in one process.

Points: a 10-class Gaussian mixture (``common.synthetic``), float32.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import threading

import jax.numpy as jnp
import numpy as np

from jaxnn import knn_graph

from .common import (K, QUICK, SEED, Benchmark, block, in_child, interleaved_best, skip_unless, synthetic, timed_block,
                     warm_exact_graph)

GRAPH_M = (1000,) if QUICK else (10_000, 100_000)
GRAPH_D = (16,) if QUICK else (16, 128)
RATIO_M = 2000 if QUICK else 20_000
#: nndescent graph degrees: 2k (knn_graph's default) and 3k (quick: 2k, one
#: case, one process compiling pynndescent's kernels)
NND_CANDIDATES = (2 * K,) if QUICK else (2 * K, 3 * K)


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


def _max_rss() -> int:
    """The process's largest resident set size so far, bytes (``getrusage``; 0 where unknown)."""
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    except (ImportError, OSError):
        return 0


def peak_rss_increase(fn, interval: float = 0.005):
    """(result, seconds, peak RSS during ``fn()`` minus RSS before it, bytes):
    the peak sampled by a background thread every ``interval`` seconds, or
    the process's high-water mark where ``fn()`` raised it (exact, between
    samples too)."""
    base = peak = _rss()
    high = _max_rss()
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
    after = _max_rss()
    return out, seconds, max(peak, _rss(), after if after > high else 0) - base


def nndescent_case(m, d, candidates, path) -> None:
    """:class:`NNDescent`'s measurement of one case, in a new process
    (:func:`common.in_child`): pynndescent's numba kernels compiled by a
    call on 2000 points of dimension d, then the graph of the case's m
    points, its seconds and :func:`peak_rss_increase` printed, its indices
    saved to ``path`` (.npy).  Each case in its own process: the peak of a
    process never goes down and its allocator reuses what earlier cases
    freed, so cases measured one after another in one process under-report."""
    m, d, candidates = int(m), int(d), int(candidates)
    knn_graph(points(2000, d), K, method="nndescent", seed=SEED)
    X = points(m, d)
    nnd, seconds, rss = peak_rss_increase(
        lambda: knn_graph(X, K, method="nndescent", seed=SEED, candidates=candidates).indices)
    np.save(path, np.asarray(nnd))
    print(seconds, rss)


def _measured_case(m, d, candidates, path) -> str:
    """What :func:`nndescent_case` prints for one case: run in a new process
    (:func:`common.in_child`), or with the quick sizes — one case, a smoke
    run of the benchmark's code rather than a measurement — in this one, whose
    pynndescent kernels are compiled already (a new process compiles them
    again: tens of seconds)."""
    if not QUICK:
        return in_child("bench_graph", "nndescent_case", m, d, candidates, path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        nndescent_case(m, d, candidates, path)
    return printed.getvalue()


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
        import tempfile

        out, folder = {}, tempfile.mkdtemp(prefix="jaxnn-bench-nndescent-")
        for m in GRAPH_M:
            for d in GRAPH_D:
                exact = knn_graph(jnp.asarray(points(m, d)), K).indices
                for c in NND_CANDIDATES:
                    path = os.path.join(folder, f"{m}-{d}-{c}.npy")
                    seconds, rss = _measured_case(m, d, c, path).split()[-2:]
                    out[(m, d, c)] = {"seconds": float(seconds), "peak_rss_increase": int(rss),
                                      "recall": recall(np.load(path), exact)}
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
