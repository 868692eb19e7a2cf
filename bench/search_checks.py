"""Measurements of the search and of prediction, as a script (not an
asv benchmark: compile times, peak memory and new batch sizes need a fresh
process or a cold cache).  Compare two versions by alternating runs::

    python bench/search_checks.py topk             # two-stage selection / one top_k, 128-row tiles
    python bench/search_checks.py compile          # compilation of a small search, 512-768 points
    python bench/search_checks.py memory           # peak memory of predict on 400 000 x 64 queries
    python bench/search_checks.py batches          # predict_proba at new batch sizes (m = 5000)
    PYTHONPATH=/tmp/old python bench/search_checks.py memory   # a copy: git archive REV jaxnn | tar -x -C /tmp/old

Prints milliseconds, seconds or MiB, and ``jaxnn.__file__``.
"""

from __future__ import annotations

import sys
import time


def _best(call, repeats: int = 30) -> float:
    import jax

    jax.block_until_ready(call())
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(call())
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv: list[str]) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxnn
    from jaxnn._src import search as search_mod

    mode = argv[0] if argv else "topk"
    rng = np.random.default_rng(0)
    if mode == "topk":  # the ratio search_mod.TWO_STAGE_MIN_RATIO is set from
        for k in (4, 8, 16, 32, 64):
            row = []
            for m in (2 * 32 * k, 4 * 32 * k):
                d2 = jnp.asarray(rng.random((128, m)).astype(np.float32))
                plain = jax.jit(lambda d, k=k: jax.lax.top_k(-d, k))
                ratio = search_mod.TWO_STAGE_MIN_RATIO
                search_mod.TWO_STAGE_MIN_RATIO = 0  # force the two stages
                two = jax.jit(lambda d, k=k: search_mod._smallest_k(d, k))
                jax.block_until_ready(two(d2))  # traced with the two stages
                search_mod.TWO_STAGE_MIN_RATIO = ratio
                row.append(f"m = {m // (32 * k)}·32k: {_best(lambda: two(d2)) / _best(lambda: plain(d2)):.2f}")
            print(f"k = {k}: two-stage / top_k time, " + ", ".join(row))
    elif mode == "compile":  # a small search's program, conditioned on the host (points) and in it (queries)
        i32, f32 = jax.ShapeDtypeStruct((), jnp.int32), jax.ShapeDtypeStruct((), jnp.float32)
        for m in (512, 640, 768):
            pts = jax.ShapeDtypeStruct((m, 16), jnp.float32)
            transform = (i32, jax.ShapeDtypeStruct((16,), jnp.float32), f32, i32)
            t = time.perf_counter()
            search_mod.conditioned_search.lower(pts, pts, i32, transform, kernel=search_mod._onepass_topk, k=10, block=128,
                                            exclude_self=True, recall_target=None).compile()
            print(f"m = {m}: search lowered and compiled in {time.perf_counter() - t:.3f} s")
    elif mode == "memory":
        import resource

        X = rng.normal(size=(5000, 64)).astype(np.float32)
        model = jaxnn.fit(X, (X[:, 0] > 0).astype(int), k=10, posterior="link", shrinkage=None)
        Q = rng.normal(size=(400_000, 64)).astype(np.float32)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        jaxnn.predict(model, Q)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(f"queries {Q.nbytes / 2**20:.0f} MiB; peak memory rose {(peak - base) / 1024:.0f} MiB")
    elif mode == "batches":
        centers = rng.normal(scale=2, size=(5, 16))
        y = rng.integers(0, 5, 5000)
        model = jaxnn.fit((centers[y] + rng.normal(size=(5000, 16))).astype(np.float32), y, k=10)
        Q = rng.normal(size=(3000, 16)).astype(np.float32)
        np.asarray(jaxnn.predict_proba(model, Q[:1000]))
        times = []
        for n in (1001, 1003, 1010, 1020):  # one padded size (sizes_mod.query_rows) with 1000
            t = time.perf_counter()
            jax.block_until_ready(jaxnn.predict_proba(model, Q[:n]))
            times.append(time.perf_counter() - t)
        print("predict_proba at new batch sizes: " + " ".join(f"{t * 1e3:.0f}" for t in times) + " ms")
    else:
        raise SystemExit(f"unknown mode {mode!r}: topk, compile, memory or batches")
    print(f"(jaxnn from {jaxnn.__file__})")


if __name__ == "__main__":
    main(sys.argv[1:])
