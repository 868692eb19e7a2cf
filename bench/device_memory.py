"""Peak accelerator memory of ``jaxnn.predict`` at several numbers of queries,
each prediction in a fresh process (the allocator's peak never goes down
within one).  The GPU counterpart of asv's ``MemoryPredict``, which reads the
host's resident set size::

    JAX_PLATFORMS=cuda python -m bench.device_memory            # 2.5·10⁵ and 10⁶ queries
    JAX_PLATFORMS=cuda python -m bench.device_memory 1000 4000  # other counts

The model is :class:`bench.bench_memory.MemoryFit`'s (m = 2·10⁵, d = 32, k = 10,
``posterior="link"``, ``shrinkage=None``), fit once and saved with
``jaxnn.save``; each child process loads it, predicts, and prints the device's
``peak_bytes_in_use`` after loading and after predicting.  ``predict`` streams
its queries :data:`jaxnn._src.prediction.PREDICT_BLOCK_ROWS` at a time from
the host, so the prediction's peak should not grow with their number beyond
the (n,) answer.  Prints one line per count; exits 2 on a platform whose
devices report no memory statistics (the CPU).
"""

from __future__ import annotations

import os
import sys
import tempfile

os.environ.setdefault("JAXNN_CACHE_DIR", "")

DEFAULT_QUERIES = (250_000, 1_000_000)


def peak_bytes() -> int | None:
    """The first device's peak bytes in use so far, or None where it keeps no statistics."""
    import jax

    stats = jax.devices()[0].memory_stats()
    return None if not stats else int(stats.get("peak_bytes_in_use", 0))


def memory_points(n: int, seed: int):
    """MemoryFit's and MemoryPredict's points: the synthetic mixture, float32."""
    import numpy as np

    from bench.bench_memory import MEMORY_D
    from bench.common import synthetic

    X, y = synthetic(n, d=MEMORY_D, seed=seed)
    return np.asarray(X, np.float32), np.asarray(y)


def child(path: str, n_queries) -> None:
    """Load the model at ``path``, predict ``n_queries`` points, print the count
    and the peaks (a new process's: :func:`bench.common.in_child`)."""
    import jaxnn
    from bench.common import SEED, block

    n_queries = int(n_queries)
    model = jaxnn.load(path)
    Q, _ = memory_points(n_queries, SEED + 1)
    loaded = peak_bytes()
    block(jaxnn.predict(model, Q))
    print(f"{n_queries} {loaded} {peak_bytes()}")


def main(argv: list[str]) -> int:
    import jax

    import jaxnn
    from bench.bench_memory import MEMORY_M
    from bench.common import K, SEED, in_child  # as every benchmark: JAX_PLATFORMS=cpu unless set

    counts = [int(a) for a in argv] or list(DEFAULT_QUERIES)
    if peak_bytes() is None:
        print(f"no device memory statistics on {jax.devices()[0].platform} (JAX_PLATFORMS=cuda for a GPU)",
              file=sys.stderr)
        return 2
    X, y = memory_points(MEMORY_M, SEED)
    path = os.path.join(tempfile.mkdtemp(prefix="jaxnn-device-memory-"), "model.jaxnn")
    jaxnn.save(jaxnn.fit(X, y, k=K, posterior="link", shrinkage=None), path)
    print(f"device {jax.devices()[0].device_kind}; model m = {MEMORY_M}, d = {X.shape[1]}, k = {K}")
    print(f"{'queries':>10} {'after load (MB)':>16} {'after predict (MB)':>19} {'predict (MB)':>13}")
    for n in counts:
        _, loaded, peak = (int(v) for v in in_child("device_memory", "child", path, n).split()[-3:])
        print(f"{n:>10} {loaded / 2**20:>16.1f} {peak / 2**20:>19.1f} {(peak - loaded) / 2**20:>13.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
