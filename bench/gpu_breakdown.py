"""Where the time of a large fit goes on an accelerator, one JSON line per number.

* the exact graph of the synthetic mixture (d = 64, k = 10) at m ∈ ``--m``:
  the one-pass search of whole distance tiles (``onepass``), the search
  ``jaxnn.knn_graph`` runs (``search``), variants of the fused search's
  blocks (from 10⁵ points), its first stage alone (``minima``), each with
  the fraction of rows whose indices equal the one-pass search's; the rows
  where any differs, against float64 brute force (``float64``: rows exact,
  and the largest relative excess of a found neighbour's distance over the
  exact one's); and the float32 matmul rate of one (16384 × 64)·(64 × m)
  product (``gemm``), from which the search's float32 arithmetic bound
  2·m²·d / rate (and at the H200's nominal 67 Tflop/s);
* ``fit(..., neighbors=nb, posterior="link", shrinkage=None)`` at C ∈
  ``--classes``: the whole fit from the graph, the colored schedule's
  prepare (colouring, layout, transfers) and run (the passes on the device),
  and the unreached examples' leverage, each timed by wrapping the stage
  and waiting for its result; edge updates/s of the pass = m·k·C / run;
  with ``--step-elements N …``, again with colored steps of 2^N edge × class
  updates (``--boost-only``: the graph searched once, no search numbers).

Steady state: each number is the second of two calls (the first compiles).
Usage: ``JAX_PLATFORMS=cuda python -m bench.gpu_breakdown [--m 100000 1000000] [--classes 10 100]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxnn
from jaxnn._src import boost_runs, fitting, group_minima, platforms, search

from .common import synthetic

K = 10


def _say(**kw):
    print(json.dumps(kw), flush=True)


def _twice(fn):
    """(result, first call's seconds, second call's seconds), each waited for."""
    times = []
    for _ in range(2):
        t = time.perf_counter()
        out = jax.block_until_ready(fn())
        times.append(time.perf_counter() - t)
    return out, times[0], times[1]


def _with_kernel(kernel, fn):
    """fn() with the exact search's kernel swapped for ``kernel``."""
    original = search.search_kernel
    search.search_kernel = lambda *a, **k: kernel
    try:
        return fn()
    finally:
        search.search_kernel = original


def _exact_rows(X: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(len(rows), K) the float64 brute-force neighbours of X's ``rows`` (self excluded)."""
    X64 = X.astype(np.float64)
    out = np.empty((rows.size, K), np.int64)
    for i, r in enumerate(rows):
        d = np.einsum("ij,ij->i", X64 - X64[r], X64 - X64[r])
        d[r] = np.inf
        out[i] = np.argsort(d, kind="stable")[:K]
    return out


def _excess(X: np.ndarray, rows: np.ndarray, got: np.ndarray, exact: np.ndarray) -> float:
    """Largest relative excess of the float64 distance of a found row's i-th
    neighbour over the exact i-th's."""
    X64 = X.astype(np.float64)
    worst = 0.0
    for i, r in enumerate(rows):
        dg = np.sort(np.linalg.norm(X64[got[i]] - X64[r], axis=1))
        de = np.linalg.norm(X64[exact[i]] - X64[r], axis=1)
        worst = max(worst, float(np.max((dg - de) / de[-1])))
    return worst


def graphs(m: int, X: np.ndarray) -> np.ndarray:
    d = X.shape[1]
    rate_rows = 16384
    A = jnp.asarray(X[:rate_rows])
    B = jnp.asarray(X)
    gemm = jax.jit(lambda a, b: jnp.min(search.distance_dots(a, b), axis=1))
    _, _, t = _twice(lambda: gemm(A, B))
    rate = 2.0 * rate_rows * m * d / t
    _say(part="gemm", m=m, seconds=t, tflops=rate / 1e12, bound_seconds=2.0 * m * m * d / rate,
         bound_67_tflops_seconds=2.0 * m * m * d / 67e12)

    onepass = search.search_kernel(m, d, K, "tpu")  # whole tiles, as a TPU searches
    base, first, t = _twice(lambda: _with_kernel(onepass, lambda: jaxnn.knn_graph(X, K).indices))
    base = np.asarray(base)
    _say(part="onepass", m=m, first=first, seconds=t)
    kernel = search.search_kernel(m, d, K)
    got, first, t = _twice(lambda: jaxnn.knn_graph(X, K).indices)
    found = {"search": np.asarray(got)}
    _say(part="search", m=m, kernel=getattr(kernel, "__name__", str(kernel)), first=first, seconds=t,
         rows_equal=float(np.mean(np.all(found["search"] == base, axis=1))))
    fused = search.search_kernel(max(m, search.FUSED_MIN_M), d, K, "gpu")
    variants = {
        "rows128": functools.partial(fused, block_rows=128),
        "groups128": functools.partial(fused, groups=128),
        "rows32": functools.partial(fused, block_rows=32),
    } if m >= 100_000 else {}
    for name, kernel in variants.items():
        try:
            got, first, t = _twice(lambda: _with_kernel(kernel, lambda: jaxnn.knn_graph(X, K).indices))
            found[name] = np.asarray(got)
            _say(part=name, m=m, first=first, seconds=t,
                 rows_equal=float(np.mean(np.all(found[name] == base, axis=1))))
        except Exception as e:  # noqa: BLE001 - a variant that does not build is a result
            _say(part=name, m=m, error=f"{type(e).__name__}: {str(e)[:400]}")
    # the rows where any search differs from the one-pass search, against float64 brute force
    differ = np.flatnonzero(np.any([np.any(v != base, axis=1) for v in found.values()], axis=0))[:100]
    if differ.size:
        exact = _exact_rows(X, differ)
        same = lambda a: int(np.sum(np.all(np.sort(a[differ], 1) == np.sort(exact, 1), axis=1)))  # noqa: E731
        _say(part="float64", m=m, rows=int(differ.size), onepass_exact=same(base),
             onepass_excess=_excess(X, differ, base[differ], exact),
             **{f"{n}_exact": same(v) for n, v in found.items()},
             **{f"{n}_excess": _excess(X, differ, v[differ], exact) for n, v in found.items()})
    # the first stage alone, on every query block
    try:
        Xp, _, xt, xt_sq = search.fused_points(jnp.asarray(X))
        m_pad, width = Xp.shape
        rows = search.fused_block_rows(m_pad, K, width)
        n_blocks = -(-m // rows)

        @jax.jit
        def stage_one(xt, xt_sq, Xp):
            Qp = jnp.zeros((n_blocks * rows, width)).at[:m].set(Xp[:m])

            def one(b):
                q = jax.lax.dynamic_slice_in_dim(Qp, b * rows, rows)
                own = b * rows + jnp.arange(rows, dtype=jnp.int32)
                return jnp.min(group_minima.group_minima(q, jnp.sum(q * q, axis=1), own, xt, xt_sq,
                                                         precision=search.FUSED_PRECISION), axis=1)
            return jax.lax.map(one, jnp.arange(n_blocks))

        _, first, t = _twice(lambda: stage_one(xt, xt_sq, Xp))
        _say(part="minima", m=m, rows_a_block=rows, first=first, seconds=t)
    except Exception as e:  # noqa: BLE001
        _say(part="minima", m=m, error=f"{type(e).__name__}: {str(e)[:400]}")
    return found["search"]


def boosting(m: int, C: int, nb: np.ndarray, step_elements: int | None = None):
    X, y = synthetic(m, n_classes=C, seed=0)
    X = X.astype(np.float32)
    spent = {}

    def timed(name, fn):
        def wrapper(*a, **kw):
            t = time.perf_counter()
            out = jax.block_until_ready(fn(*a, **kw))
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - t
            return out
        return wrapper

    engine, elements = boost_runs.ENGINES["colored"], platforms.SCHEDULE_STEP_ELEMENTS_ACCELERATOR
    if step_elements is not None:
        platforms.SCHEDULE_STEP_ELEMENTS_ACCELERATOR = step_elements
    boost_runs.ENGINES["colored"] = boost_runs.Engine(timed("prepare", engine.prepare), timed("run", engine.run))
    leverage = fitting.unreached_leverage
    fitting.unreached_leverage = timed("unreached", leverage)
    try:
        fit = lambda: jaxnn.fit(X, y, k=K, posterior="link", shrinkage=None, neighbors=nb).alpha  # noqa: E731
        fit()
        spent.clear()
        start = time.perf_counter()
        jax.block_until_ready(fit())
        t = time.perf_counter() - start
    finally:
        boost_runs.ENGINES["colored"] = engine
        fitting.unreached_leverage = leverage
        platforms.SCHEDULE_STEP_ELEMENTS_ACCELERATOR = elements
    run = spent.get("run", float("nan"))
    _say(part="boost", m=m, C=C, step_elements=platforms.schedule_step_elements("gpu") if step_elements is None
         else step_elements, fit_seconds=t, **{f"{k}_seconds": v for k, v in spent.items()},
         pass_edge_updates_per_second=m * K * C / run, fit_edge_updates_per_second=m * K * C / t)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, nargs="+", default=[32_768, 100_000, 1_000_000])
    p.add_argument("--classes", type=int, nargs="+", default=[10, 100])
    p.add_argument("--step-elements", type=int, nargs="*", default=[],
                   help="also boost with colored steps of 2^N edge x class updates (N given)")
    p.add_argument("--boost-only", action="store_true", help="the graph searched once, no search variants")
    a = p.parse_args(argv)
    _say(devices=str(jax.devices()), jax=jax.__version__)
    for m in a.m:
        X, _ = synthetic(m, seed=0)
        X = X.astype(np.float32)
        nb = np.asarray(jaxnn.knn_graph(X, K).indices) if a.boost_only else graphs(m, X)
        for C in a.classes if m >= 100_000 else ():
            boosting(m, C, nb)
            for n in a.step_elements:
                boosting(m, C, nb, 1 << n)


if __name__ == "__main__":
    main()
