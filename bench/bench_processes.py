"""Whole workflows in new processes, compilation included, with an empty and
with a filled compilation cache: what a user's first script pays.

asv times calls inside one process, where every program compiles once and a
later call pays nothing; these benchmarks instead start Python processes
(``bench/first_calls.py``'s modes, one JSON line each) in ``setup_cache``,
each with its own jaxnn cache folder (``JAXNN_CACHE_DIR``): the first
process of a folder compiles everything (an empty cache), the next loads what
the first kept (a filled one).

* :class:`SmallFolds` — on each small bundled set, five stratified folds of
  ``fit(k="auto")`` + ``predict`` against the same folds'
  ``GridSearchCV(SVC(), C ∈ {1, 10, 100}, γ ∈ {scale, 0.01, 0.1}, cv=3)`` fit
  + predict, in one new process: ``track_empty_cache_ratio_vs_svc_grid`` and
  ``track_filled_cache_ratio_vs_svc_grid`` (jaxnn's seconds over the grid's,
  both timed in that process; < 1: jaxnn is faster), and both test
  accuracies.
* :class:`FirstCalls` — a new process's first ``fit`` + ``predict`` +
  ``predict_proba`` on scikit-learn's iris (float64 X, integer y), the
  defaults, import not included: ``track_empty_cache_seconds``,
  ``track_filled_cache_seconds``.
* :class:`GridJobs` — ``GridSearchCV(make_pipeline(StandardScaler(),
  BoostedKNNClassifier()), k ∈ {5, 10, 20}, cv=5)`` on breast cancer, filled
  cache: the first search of a new process with ``n_jobs=2`` on joblib's
  ``backend`` (``loky``: worker processes, its default; ``threading``) over
  the same with ``n_jobs=1`` (``track_first_search_ratio_vs_one_job``; < 1:
  two workers are faster), and the same for a second search in the process
  (``track_second_search_ratio_vs_one_job``).

Quick mode: iris alone, the threads alone, every workload in this process
(:func:`run_script`).
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile

from . import first_calls
from .common import QUICK, Benchmark, in_child

#: the small bundled sets (quick: iris alone)
SMALL_SETS = ("iris",) if QUICK else first_calls.SMALL_SETS
#: joblib backends of GridJobs's two workers
BACKENDS = ("threading",) if QUICK else ("loky", "threading")
#: seconds a process may take
PROCESS_TIMEOUT = 600


def run_script(cache: str, *args: str) -> list[dict]:
    """``bench/first_calls.py ARGS… json`` in a new process
    (:func:`common.in_child`) with jaxnn's cache in the folder ``cache``:
    its JSON lines, parsed.  Quick: in this process, whose cache setting
    stays as it is — a smoke run of the benchmarks' code, not a measurement
    (a process starts in a few seconds; the test suite's smoke run would
    start seven)."""
    if QUICK:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            first_calls.run(*args, "json")
        printed = printed.getvalue()
    else:
        printed = in_child("first_calls", "run", *args, "json", timeout=PROCESS_TIMEOUT,
                           env={"JAXNN_CACHE_DIR": cache})
    return [json.loads(line) for line in printed.splitlines() if line.startswith("{")]


def empty_then_filled(*args: str) -> tuple[list[dict], list[dict]]:
    """:func:`run_script` twice on one new cache folder: with it empty, then
    with what the first process kept."""
    with tempfile.TemporaryDirectory(prefix="jaxnn-cache-") as cache:
        return run_script(cache, *args), run_script(cache, *args)


class SmallFolds(Benchmark):
    """Five folds of ``fit(k="auto")`` + ``predict`` against an SVC grid search on a small set (see the module)."""

    param_names = ["dataset"]
    params = [list(SMALL_SETS)]
    timeout = 3600.0

    def setup_cache(self):
        out = {}
        for name in SMALL_SETS:
            (empty,), (filled,) = empty_then_filled("small-domains", name)
            out[name] = {"empty": empty, "filled": filled}
        return out

    setup_cache.timeout = 3600.0

    def track_empty_cache_ratio_vs_svc_grid(self, cache, name):
        run = cache[name]["empty"]
        return run["jaxnn_seconds"] / run["svc_seconds"]

    def track_filled_cache_ratio_vs_svc_grid(self, cache, name):
        run = cache[name]["filled"]
        return run["jaxnn_seconds"] / run["svc_seconds"]

    def track_test_accuracy(self, cache, name):
        return cache[name]["filled"]["jaxnn_accuracy"]

    def track_svc_grid_test_accuracy(self, cache, name):
        return cache[name]["filled"]["svc_accuracy"]

    track_empty_cache_ratio_vs_svc_grid.unit = track_filled_cache_ratio_vs_svc_grid.unit = "ratio"
    track_test_accuracy.unit = track_svc_grid_test_accuracy.unit = "accuracy"


class FirstCalls(Benchmark):
    """A new process's first ``fit`` + ``predict`` + ``predict_proba`` on iris (see the module)."""

    timeout = 600.0

    def setup_cache(self):
        (empty,), (filled,) = empty_then_filled("iris")
        return {"empty": empty["seconds"], "filled": filled["seconds"]}

    def track_empty_cache_seconds(self, cache):
        return cache["empty"]

    def track_filled_cache_seconds(self, cache):
        return cache["filled"]

    track_empty_cache_seconds.unit = track_filled_cache_seconds.unit = "seconds"


class GridJobs(Benchmark):
    """``GridSearchCV(n_jobs=2)`` of the estimator against ``n_jobs=1``, filled cache (see the module)."""

    param_names = ["backend"]
    params = [list(BACKENDS)]
    timeout = 1800.0

    def setup_cache(self):
        with tempfile.TemporaryDirectory(prefix="jaxnn-cache-") as cache:
            run_script(cache, "grid-jobs", "1", "loky")  # fills the cache
            (one,) = run_script(cache, "grid-jobs", "1", "loky")
            return {"one": one, **{b: run_script(cache, "grid-jobs", "2", b)[0] for b in BACKENDS}}

    setup_cache.timeout = 1800.0

    def track_first_search_ratio_vs_one_job(self, cache, backend):
        return cache[backend]["first"] / cache["one"]["first"]

    def track_second_search_ratio_vs_one_job(self, cache, backend):
        return cache[backend]["second"] / cache["one"]["second"]

    track_first_search_ratio_vs_one_job.unit = track_second_search_ratio_vs_one_job.unit = "ratio"
