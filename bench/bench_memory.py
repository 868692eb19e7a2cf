"""Peak memory of ``fit`` and ``predict`` (asv ``peakmem_``: the largest
resident set size of the benchmark's process, its setup included).

``MemoryFit`` fits m = 2·10⁵ points in 32 dimensions (10 classes, the
synthetic mixture of :func:`common.synthetic`); ``MemoryPredict`` predicts
``n_queries`` points with a model of that fit, at two numbers of queries:
``predict`` streams its queries in blocks
(:data:`jaxnn._src.prediction.PREDICT_BLOCK_ROWS`), so its peak should not
follow the number of queries beyond the (n, C) answer itself;
``track_rows_per_block`` reads the rows of the blocks it streams.  Quick mode
(``JAXNN_BENCH_QUICK``): 2 000 points, 2 000 and 8 000 queries.
"""

from __future__ import annotations

import numpy as np

import jaxnn
from bench.common import K, QUICK, SEED, Benchmark, block, synthetic

MEMORY_M, MEMORY_D = (2_000, 32) if QUICK else (200_000, 32)
#: query counts of MemoryPredict: the same model asked about 1× and 4× as many points
MEMORY_QUERIES = (2_000, 8_000) if QUICK else (250_000, 1_000_000)


def _points(n: int, seed: int):
    X, y = synthetic(n, d=MEMORY_D, seed=seed)
    return np.asarray(X, np.float32), np.asarray(y)


class MemoryFit(Benchmark):
    """``jaxnn.fit(X, y, k=10, posterior="link", shrinkage=None)`` at m = 2·10⁵, d = 32."""

    timeout = 3600.0

    def setup(self):
        self.X, self.y = _points(MEMORY_M, SEED)

    def peakmem_fit(self):
        block(jaxnn.fit(self.X, self.y, k=K, posterior="link", shrinkage=None).alpha)


class MemoryPredict(Benchmark):
    """``jaxnn.predict`` of ``n_queries`` points with the model of
    :class:`MemoryFit`'s data (fit in ``setup_cache``, saved with
    ``jaxnn.save``, loaded in ``setup``)."""

    param_names = ["n_queries"]
    params = (list(MEMORY_QUERIES),)
    timeout = 3600.0

    def setup_cache(self):
        import os
        import tempfile

        X, y = _points(MEMORY_M, SEED)
        path = os.path.join(tempfile.mkdtemp(prefix="jaxnn-bench-memory-"), "model.jaxnn")
        jaxnn.save(jaxnn.fit(X, y, k=K, posterior="link", shrinkage=None), path)
        return path

    def setup(self, path, n_queries):
        self.model = jaxnn.load(path)
        self.Q, _ = _points(n_queries, SEED + 1)

    def peakmem_predict(self, path, n_queries):
        block(jaxnn.predict(self.model, self.Q))

    def track_rows_per_block(self, path, n_queries):
        """The most query rows one search of this ``predict`` call received
        (padding included): at most this many queries' distances, neighbours
        and score gathers are in memory at once.  Read from the call itself,
        by :func:`searched_rows`."""
        return max(searched_rows(lambda: block(jaxnn.predict(self.model, self.Q))))

    track_rows_per_block.unit = "rows"


def searched_rows(call) -> list:
    """The query rows of every search ``call()`` runs through ``predict``'s
    path (``jaxnn._src.prediction.padded_query``, spied on for the call and
    restored after): the blocks ``predict`` streams its queries in."""
    from jaxnn._src import prediction

    search, rows = prediction.padded_query, []

    def spy(X_train, X_query, *args, **kwargs):
        out = search(X_train, X_query, *args, **kwargs)
        rows.append(int(out[0].shape[0]))
        return out

    prediction.padded_query = spy
    try:
        call()
    finally:
        prediction.padded_query = search
    if not rows:
        raise RuntimeError("predict ran no search through prediction.padded_query: the spy measures nothing")
    return rows
