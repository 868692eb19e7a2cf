"""End-to-end fits at scale: m ∈ {10⁵, 10⁶} training points, C ∈ {10, 100}.

Colours, steps/s, edge updates/s and end-to-end fit time at m = 10⁵ and
10⁶, C ∈ {10, 100}, in one benchmark class, so that an accelerator session
gets every number from one command::

    JAX_PLATFORMS=cuda python -m asv run --config asv.gpu.conf.json --python=same -b ScaleFit

:class:`ScaleFit` fits ``jaxnn.fit(X, y, k=10, posterior="link", shrinkage=None)`` — every
other argument at its default, so ``chooser="auto"`` runs the colored
schedule on a GPU or TPU, and on CPU the windowed lazy scan at C = 10 and
the colored schedule at C = 100 (m·C ≥ 5·10⁶) — on the
:func:`common.synthetic` mixture (d = 64, C classes, m training points and
2·10⁴ test points), and reports, per (m, C):

* ``track_fit_seconds`` — the whole fit (exact graph + boosting), steady state;
* ``track_graph_seconds`` — the exact k-NN graph alone;
* ``track_boost_seconds`` — the fit on the precomputed graph (boosting, plus
  the colouring where the chooser is colored);
* ``track_compile_seconds`` — first minus steady time of the graph and of the
  boosting (compilation caches cleared first);
* ``track_colors`` — colours of the conflict graph (what the colored schedule
  runs as ~colours sequential steps per pass, instead of m);
* ``track_steps_per_second`` / ``track_edge_updates_per_second`` — m
  leveraging steps (each for all C classes) and m·k·C edge updates of the pass
  over ``track_boost_seconds``;
* ``track_test_accuracy``.

Everything is measured once per ``asv run`` in ``setup_cache`` (the 10⁶-point
graph is computed once, not once per reported number).  On CPU, m = 10⁶ is
skipped (n/a): the exact graph alone would take ~30 minutes on two cores
(18 s at 10⁵, ~m²).  Quick mode (the smoke run): m = 2000, C = 10.
"""

from __future__ import annotations

import jax
import numpy as np

import jaxnn

from jaxnn._src.schedule import color_conflict_graph

from .common import K, QUICK, SEED, Benchmark, accuracy, synthetic, timed_block

SCALE_M = (2000,) if QUICK else (100_000, 1_000_000)
SCALE_C = (10,) if QUICK else (10, 100)
SCALE_TEST = 500 if QUICK else 20_000
#: largest m measured on a CPU backend
CPU_MAX_M = 200_000


def _platform() -> str:
    return jax.devices()[0].platform


def _measure(m: int, C: int) -> dict:
    X, y = synthetic(m + SCALE_TEST, n_classes=C, seed=SEED)
    X = X.astype(np.float32)
    Xtr, ytr, Xte, yte = X[:m], y[:m], X[m:], y[m:]

    jax.clear_caches()  # every (m, C) compiles afresh, as in a new process

    def graph():
        return np.asarray(jaxnn.knn_graph(Xtr, K).indices)

    def boost():
        return jaxnn.fit(Xtr, ytr, k=K, posterior="link", shrinkage=None, neighbors=nb)

    nb, graph_first = timed_block(graph)
    nb, graph_steady = timed_block(graph)
    _, boost_first = timed_block(boost)
    _, boost_steady = timed_block(boost)
    model, fit_steady = timed_block(lambda: jaxnn.fit(Xtr, ytr, k=K, posterior="link", shrinkage=None))
    edges = nb.size * C  # m·k·C edge updates a pass
    return {
        "fit": fit_steady,
        "graph": graph_steady,
        "boost": boost_steady,
        "compile": max(graph_first - graph_steady, 0.0) + max(boost_first - boost_steady, 0.0),
        "colors": int(np.max(color_conflict_graph(nb)) + 1),
        "steps_per_second": model.rounds / boost_steady,
        "edge_updates_per_second": edges * (model.rounds // m) / boost_steady,
        "test_accuracy": accuracy(jaxnn.predict(model, Xte), yte),
    }


class ScaleFit(Benchmark):
    """``jaxnn.fit`` end to end at m ∈ {10⁵, 10⁶}, C ∈ {10, 100} (see the module)."""

    param_names = ["m", "n_classes"]
    params = (SCALE_M, SCALE_C)

    def setup_cache(self):
        out = {}
        for m in SCALE_M:
            for C in SCALE_C:
                if _platform() == "cpu" and m > CPU_MAX_M:
                    continue
                out[(m, C)] = _measure(m, C)
        return out

    setup_cache.timeout = 3600.0

    def setup(self, cache, m, n_classes):
        if (m, n_classes) not in cache:
            raise NotImplementedError(f"m = {m} needs an accelerator (the exact graph alone: ~30 min on 2 CPU cores)")

    def track_fit_seconds(self, cache, m, n_classes):
        return cache[(m, n_classes)]["fit"]

    def track_graph_seconds(self, cache, m, n_classes):
        return cache[(m, n_classes)]["graph"]

    def track_boost_seconds(self, cache, m, n_classes):
        return cache[(m, n_classes)]["boost"]

    def track_compile_seconds(self, cache, m, n_classes):
        return cache[(m, n_classes)]["compile"]

    for _f in (track_fit_seconds, track_graph_seconds, track_boost_seconds, track_compile_seconds):
        _f.unit = "seconds"
    del _f

    def track_colors(self, cache, m, n_classes):
        return cache[(m, n_classes)]["colors"]

    track_colors.unit = "colours"

    def track_steps_per_second(self, cache, m, n_classes):
        return cache[(m, n_classes)]["steps_per_second"]

    track_steps_per_second.unit = "steps/s"

    def track_edge_updates_per_second(self, cache, m, n_classes):
        return cache[(m, n_classes)]["edge_updates_per_second"]

    track_edge_updates_per_second.unit = "edges/s"

    def track_test_accuracy(self, cache, m, n_classes):
        return cache[(m, n_classes)]["test_accuracy"]

    track_test_accuracy.unit = "accuracy"
