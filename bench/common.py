"""Shared pieces of jaxnn's asv suite: data, cached graphs, timing helpers.

Modelled on scikit-learn's ``asv_benchmarks``: a :class:`Benchmark` base class
fixes the timer and sampling, a mixin's ``setup_cache`` computes what is
expensive and shared (the exact k-NN graphs) once per ``asv run``, and every
data set is a deterministic function of a fixed seed.

* ``JAX_PLATFORMS`` defaults to ``cpu`` here, before JAX is imported, so a
  machine with a GPU is never used silently.  asv sets it from the config's
  matrix in asv-managed environments; with ``--python=same`` export it
  yourself (``JAX_PLATFORMS=cuda`` for the GPU config).
* ``JAXNN_BENCH_QUICK=1`` shrinks every data set to at most 2000 points,
  every parameter list to (mostly) one value and every round-robin timing
  to one round: the smoke run of
  ``tests/test_bench.py``.  Read at import, so it fixes ``params`` too, as
  does ``JAXNN_BENCH_DATASETS=letter,optdigits`` (the named data sets alone).
* Every timed call ends in ``jax.block_until_ready`` (:func:`block`) before
  the clock is read, and JIT compilation happens in ``setup`` — ahead of
  time for the engine's jitted functions (:func:`warm`), by one call of a
  public function otherwise — so ``time_*`` measure steady-state calls.
* A ratio of two contenders calls each once first (compilation excluded for
  both), then times them round-robin the same number of times
  (:func:`interleaved_times`) and divides like statistics of the two.
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# jaxnn turns on its own persistent compilation cache when imported (jaxnn.config): off here, so that
# compilation is measured; JAXNN_BENCH_JAX_CACHE below turns a cache on where wanted
os.environ.setdefault("JAXNN_CACHE_DIR", "")

import functools  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
from typing import Callable, NamedTuple  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxnn  # noqa: E402
from jaxnn import datasets, inverse_neighbors, knn_graph, knn_query  # noqa: E402
from jaxnn import losses as losses_mod  # noqa: E402
# engine internals, for the benchmarks that time the boosting alone
from jaxnn._src import algorithms as algos  # noqa: E402
from jaxnn._src import window as window_mod  # noqa: E402
from jaxnn._src.boosting import boost  # noqa: E402
from jaxnn._src.plan import chooser_order  # noqa: E402
from jaxnn._src.schedule import boost_colored, color_schedule  # noqa: E402

# In case JAX was imported before this module: the setting holds until the
# first computation initialises a backend.
jax.config.update("jax_platforms", os.environ["JAX_PLATFORMS"])

QUICK = os.environ.get("JAXNN_BENCH_QUICK", "").strip() not in ("", "0")

# asv runs every benchmark in a fresh process, so each one compiles again.  A
# persistent compilation cache (JAXNN_BENCH_JAX_CACHE=/some/dir; on by default
# in quick mode, in the system temp folder) lets later processes load the
# executables instead — which also makes track_compile_seconds measure a cache
# load, so the full suite leaves it off unless asked.  A cache already on (the
# test run's, through JAXNN_CACHE_DIR) is left as it is: a process imports
# this module mid-run there, and its other computations use that cache.
_JAX_CACHE = os.environ.get("JAXNN_BENCH_JAX_CACHE") or (
    os.path.join(__import__("tempfile").gettempdir(), "jaxnn-bench-jax-cache") if QUICK else ""
)
if _JAX_CACHE and not jax.config.jax_compilation_cache_dir:
    jax.config.update("jax_compilation_cache_dir", _JAX_CACHE)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)

K = 10  # neighbours everywhere
SEED = 0
LOSS = "logistic"

#: data sets of the fit / predict / baseline benchmarks (quick: one); the
#: comma-separated names in JAXNN_BENCH_DATASETS keep those of them alone
DATASETS = ("letter",) if QUICK else ("letter", "optdigits", "synthetic")
if os.environ.get("JAXNN_BENCH_DATASETS", "").strip():
    _only = [n.strip() for n in os.environ["JAXNN_BENCH_DATASETS"].split(",") if n.strip()]
    if not set(_only) <= set(DATASETS):
        raise ValueError(f"JAXNN_BENCH_DATASETS names {sorted(set(_only) - set(DATASETS))}: not among {DATASETS}")
    DATASETS = tuple(n for n in DATASETS if n in _only)
#: sizes of the synthetic set: 10 classes, d = 64
SYNTH_TRAIN, SYNTH_TEST, SYNTH_D, SYNTH_C = (450, 150, 64, 10) if QUICK else (100_000, 20_000, 64, 10)
#: greedy steps per class in bench_fit.FitBoost (a greedy step costs
#: ~0.1–0.3 ms whatever m, but it is one example per step: a whole pass is m
#: steps, not the ~30 of the colored schedule)
GREEDY_ROUNDS = 100 if QUICK else 1000


# --------------------------------------------------------------------------
# asv base class
# --------------------------------------------------------------------------


class Benchmark:
    """Defaults of every benchmark class: wall-clock timer, one process, no
    automatic warm-up (``setup`` compiles), one call per sample, 1–3 samples."""

    timer = timeit.default_timer  # wall time: JAX runs on other threads
    rounds = 1
    number = 1
    repeat = (1, 3, 20.0)  # (min samples, max samples, max seconds)
    min_run_count = 1
    warmup_time = 0.0
    timeout = 1800.0


# --------------------------------------------------------------------------
# timing helpers
# --------------------------------------------------------------------------


def block(x):
    """``jax.block_until_ready`` (works on any pytree, numpy leaves included)."""
    return jax.block_until_ready(x)


def timed_block(fn: Callable, *args, **kwargs):
    """Call ``fn``, wait for its result, return ``(result, seconds)``."""
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args, **kwargs))
    return out, time.perf_counter() - start


def four_class_points(m: int, d: int):
    """The first-call benchmarks' data: (X (m, d) standard normal float32,
    y in 4 classes by the signs of x₀ + x₁ and x₂), seed 0."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(m, d)).astype(np.float32)
    return X, (X[:, 0] + X[:, 1] > 0).astype(int) + 2 * (X[:, 2] > 0)


class FirstCall:
    """Mixin of the benchmarks that time a workload in a new process: its
    first call, compilation included, timed by ``setup`` (``self.first``),
    and a later one (``second_call_seconds``).  A subclass's ``workload()``
    returns the callable; its ``track_*`` methods name what asv records."""

    def workload(self) -> Callable:
        raise NotImplementedError

    def setup(self):
        self.call = self.workload()
        _, self.first = timed_block(self.call)

    def second_call_seconds(self) -> float:
        return timed_block(self.call)[1]


def best_time(fn: Callable, repeat: int = 3, budget: float = 20.0) -> float:
    """Fastest of up to ``repeat`` blocked calls of ``fn()``; stops once
    ``budget`` seconds are spent (at least one call)."""
    times = []
    start = time.perf_counter()
    while len(times) < repeat:
        times.append(timed_block(fn)[1])
        if time.perf_counter() - start > budget:
            break
    return min(times)


def interleaved_times(fns, rounds: int = 3, budget: float = 60.0) -> list:
    """Blocked call times of each of ``fns``, sampled round-robin (so a load
    change on a shared machine hits all of them alike): ``[[seconds, ...], ...]``,
    one list per function, all of the same length — ``rounds`` rounds, or
    fewer (at least one) once ``budget`` seconds are spent; one round in
    quick mode (:data:`QUICK`: a smoke run, whose numbers are checked to
    exist, not compared).  Nothing is warmed here: call each function once
    first if it compiles."""
    times = [[] for _ in fns]
    start = time.perf_counter()
    for _ in range(1 if QUICK else rounds):
        for t, fn in zip(times, fns):
            t.append(timed_block(fn)[1])
        if time.perf_counter() - start > budget:
            break
    return times


def interleaved_best(fns, repeat: int = 3, budget: float = 60.0) -> list:
    """Fastest blocked call of each of ``fns`` (:func:`interleaved_times`)."""
    return [min(t) for t in interleaved_times(fns, repeat, budget)]


def interleaved_medians(fns, rounds: int = 3, budget: float = 60.0) -> list:
    """Median blocked call time of each of ``fns`` (:func:`interleaved_times`)."""
    return [float(np.median(t)) for t in interleaved_times(fns, rounds, budget)]


def in_child(module: str, function: str, *args, timeout: float = 3600.0, env: dict | None = None) -> str:
    """Run ``bench.<module>.<function>(*args)`` (the arguments as strings) in
    a new Python process and return what it printed: a measurement that
    must not see this process's state (a process's peak memory never goes
    down, nor does its allocator hand back what it freed), or a new
    process's first calls.  The child inherits the environment
    (``JAX_PLATFORMS``, the caches' settings), with ``env``'s variables set
    over it, and finds this ``bench`` package after the interpreter's own
    path, so it imports the same jaxnn as this process.  A failing child
    raises RuntimeError with the end of its error output."""
    import subprocess
    import sys
    from pathlib import Path

    parent = str(Path(__file__).resolve().parents[1])
    code = (f"import sys; sys.path.append({parent!r}); from bench.{module} import {function}; "
            f"{function}(*sys.argv[1:])")
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=None if env is None else {**os.environ, **env})
    if proc.returncode != 0:
        raise RuntimeError(f"bench.{module}.{function}{args} failed in a child process "
                           f"(exit status {proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def warm(jitted, *args, **kwargs) -> None:
    """Compile the jitted function ``jitted`` for these arguments ahead of
    time, without running it: ``jit(f).lower(...).compile()`` fills the
    executable cache a call uses, so the next call does not compile
    (``tests/test_bench.py`` checks this for :meth:`Run.compile`)."""
    jitted.lower(*args, **kwargs).compile()


def warm_exact_graph(X, k: int = K) -> None:
    """Compile ``knn_graph(X, k)`` by calling it once.

    The exact search compiles one program per shape around its kernel (the
    point conditioning, padding to shared sizes, the distance rescale), so
    the public call is what compiles exactly what a timed call runs."""
    block(knn_graph(X, k).indices)


def warm_query(X_train, X_query, k: int = K) -> None:
    """Compile ``knn_query(X_train, X_query, k)`` by calling it once (as
    :func:`warm_exact_graph`)."""
    block(knn_query(X_train, X_query, k).indices)


def skip_unless(module: str):
    """Import ``module`` or raise NotImplementedError (asv's 'skip')."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise NotImplementedError(f"{module} is not installed: {err}") from None


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------


class Data(NamedTuple):
    """Standardised float32 train/test split with int labels 0..C−1."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int


def synthetic(n: int, d: int = SYNTH_D, n_classes: int = SYNTH_C, seed: int = SEED, sub: int = 4, spread: float = 0.6):
    """Gaussian mixture: each class is ``sub`` unit-variance Gaussians with
    means drawn N(0, spread²·I); non-linear enough that k-NN beats linear models."""
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(n_classes, sub, d)) * spread
    y = rng.integers(0, n_classes, n)
    comp = rng.integers(0, sub, n)
    X = means[y, comp] + rng.normal(size=(n, d))
    return X, y


def _codes(y):
    classes, codes = np.unique(np.asarray(y), return_inverse=True)
    return codes.reshape(-1).astype(np.int64), classes.size


@functools.lru_cache(maxsize=None)
def dataset(name: str) -> Data:
    """One of :data:`DATASETS`, built once per process from fixed seeds.

    * ``letter``: all 20000 rows, 16000 train / 4000 test (stratified, seed 0);
      quick: a stratified 600-row sample (450 / 150).
    * ``optdigits``: 5620 rows, 75 % / 25 %; quick: 600 rows (450 / 150).
    * ``synthetic``: :func:`synthetic`, 10⁵ train / 2·10⁴ test, d = 64, C = 10;
      quick: 450 / 150.
    """
    if name == "letter":
        X, y = datasets.letter_sample(600, seed=SEED) if QUICK else datasets.load("letter")
        test = 150 if QUICK else 4000
    elif name == "optdigits":
        X, y = datasets.load("optdigits")
        if QUICK:
            _, X, _, y = datasets.train_test_split(X, y, test_size=600, seed=SEED)
        test = 150 if QUICK else 0.25
    elif name == "synthetic":
        X, y = synthetic(SYNTH_TRAIN + SYNTH_TEST)
        test = SYNTH_TEST
    else:
        raise ValueError(f"unknown benchmark data set {name!r}")
    y, n_classes = _codes(y)
    X_tr, X_te, y_tr, y_te = datasets.train_test_split(X, y, test_size=test, seed=SEED)
    X_tr, X_te = datasets.standardize(X_tr, X_te)
    return Data(X_tr.astype(np.float32), y_tr, X_te.astype(np.float32), y_te, n_classes)


def random_neighbors(m: int, k: int = K, seed: int = SEED) -> np.ndarray:
    """(m, k) int32 random neighbour indices, self excluded (not a kNN graph:
    for step-cost benchmarks, where only the shapes and n_j matter)."""
    rng = np.random.default_rng(seed)
    nb = rng.integers(0, m - 1, size=(m, k))
    nb = nb + (nb >= np.arange(m)[:, None])
    return nb.astype(np.int32)


def accuracy(pred, y) -> float:
    return float(np.mean(np.asarray(pred) == np.asarray(y)))


# --------------------------------------------------------------------------
# the shared cache: exact k-NN graphs of the training sets
# --------------------------------------------------------------------------

#: graphs in the shared cache (bench_numba always needs the synthetic set)
GRAPH_SETS = tuple(dict.fromkeys(DATASETS + ("synthetic",)))


class GraphCache:
    """Mixin: ``setup_cache`` computes the exact k = 10 graph of every
    training set once per ``asv run`` (asv keys the cache by this function, so
    every class inheriting it, in any module, shares one computation)."""

    def setup_cache(self):
        graphs = {}
        for name in GRAPH_SETS:
            X = jnp.asarray(dataset(name).X_train)
            graphs[name] = np.asarray(knn_graph(X, K).indices)
        return graphs

    setup_cache.timeout = 3600.0


class Problem:
    """Boosting inputs: labels Y (m, C) in ±1 from int labels, the inverse
    neighbourhoods of an (m, k) neighbour array, and (lazily) the colour
    schedule.  ``data`` is the :class:`Data` it came from (for test accuracy),
    or None for random graphs."""

    def __init__(self, neighbors: np.ndarray, labels: np.ndarray, n_classes: int, data: Data | None = None):
        self.data = data
        self.neighbors = np.asarray(neighbors, np.int32)
        self.m = self.neighbors.shape[0]
        self.C = int(n_classes)
        labels = np.asarray(labels)
        self.Y = jnp.asarray(np.where(labels[:, None] == np.arange(self.C)[None, :], 1.0, -1.0), jnp.float32)
        inv = inverse_neighbors(self.neighbors, self.m)
        self.members, self.counts = inv.members, inv.counts
        self._schedule = None

    @classmethod
    def of_dataset(cls, name: str, neighbors: np.ndarray) -> "Problem":
        d = dataset(name)
        return cls(neighbors, d.y_train, d.n_classes, data=d)

    @property
    def schedule(self):
        if self._schedule is None:
            self._schedule = self.color_schedule()
        return self._schedule

    def color_schedule(self):
        """A fresh :func:`color_schedule` of this graph."""
        return color_schedule(self.neighbors, n_classes=self.C)

    def runner(self, algorithm: str = "gnnb", chooser: str = "lazy", rounds: int | None = None, loss: str = LOSS):
        """A :class:`Run`: the jitted ``boost``/``boost_colored`` call on these
        inputs, with everything but the call itself precomputed."""
        return Run(self, algorithm, chooser, rounds, loss)


class Run:
    """``fn()`` runs the boosting (``boost`` or ``boost_colored``) once;
    ``compile()`` compiles it ahead of time; ``model(result)`` wraps α."""

    def __init__(self, problem: Problem, algorithm: str, chooser: str, rounds, loss: str):
        self.problem = problem
        self.loss = losses_mod.get(loss)
        self.algorithm = algos.get(algorithm)
        self.chooser = chooser
        m = problem.m
        if rounds is None:
            rounds = min(m, GREEDY_ROUNDS) if chooser == "greedy" else m
        self.rounds = int(rounds)
        E0 = self.algorithm.init_edges(self.loss, problem.Y)
        self._edge_updates = None
        self.order = None  # the example sequence on the host (the greedy chooser ignores it)
        if chooser == "colored":
            sched = problem.schedule
            self._fn = boost_colored
            self._args = (problem.Y, E0, problem.counts, sched)
            self._kwargs = dict(algorithm=self.algorithm, loss=self.loss, passes=self.rounds // m, trace=False)
            self.scan_steps = sched.n_steps * (self.rounds // m)
        elif chooser == "windowed":  # the lazy sequence through the windowed scan (what fit runs for large m·C)
            order = self.order = chooser_order("lazy", m, self.rounds, SEED)
            counts = np.asarray(problem.counts)
            layout = window_mod.window_layout(problem.neighbors, order, window_mod.window_steps(problem.C, K))
            self._fn = window_mod.boost_windowed
            self._args = (problem.Y, E0, problem.counts, layout)
            self._kwargs = dict(algorithm=self.algorithm, loss=self.loss, trace=False, n_steps=self.rounds,
                                max_count=int(counts.max()))
            self.scan_steps = self.rounds
        else:
            self.order = chooser_order(chooser, m, self.rounds, SEED)
            order = jnp.asarray(self.order)
            self._fn = boost
            self._args = (problem.Y, E0, problem.members, problem.counts, jnp.asarray(problem.neighbors), order)
            self._kwargs = dict(algorithm=self.algorithm, loss=self.loss, greedy=chooser == "greedy", trace=False)
            self.scan_steps = self.rounds

    @property
    def edge_updates(self) -> int:
        """Edge updates e_ic += δ_c r_ic done by one call, from the graph: a
        step on example j changes the n_j edges of its inverse neighbourhood
        in each class it updates.  Lazy and windowed: Σ_t n_{j_t}·C over the
        step sequence; colored: every example once a pass, passes·Σ_j n_j·C
        (whole passes, lazy's too, make it m·k·C a pass: each row lists k
        neighbours); greedy, whose picks differ by class and follow the
        data: Σ_t Σ_c n_{j_tc} over the picks, recorded by a copy of the
        engine (:func:`greedy_floor.greedy_picks`, run once)."""
        if self._edge_updates is None:
            counts = np.asarray(self.problem.counts, np.int64)
            if self.chooser == "colored":
                edges = (self.rounds // self.problem.m) * int(counts.sum()) * self.problem.C
            elif self.chooser == "greedy":
                from .greedy_floor import greedy_picks

                picks = greedy_picks(self)
                if picks.shape != (self.rounds, self.problem.C):
                    raise RuntimeError(f"recorded {picks.shape} greedy picks, "
                                       f"expected ({self.rounds}, {self.problem.C})")
                edges = int(counts[picks].sum())
            else:
                edges = int(counts[self.order].sum()) * self.problem.C
            self._edge_updates = edges
        return self._edge_updates

    def compile(self) -> None:
        warm(self._fn, *self._args, **self._kwargs)

    def __call__(self):
        return self._fn(*self._args, **self._kwargs)

    def model(self, result) -> jaxnn.Model:
        p = self.problem
        return jaxnn.Model(result.alpha, jnp.asarray(p.data.X_train), p.Y, None, tuple(range(p.C)), K,
                           self.loss, self.algorithm, False, rounds=self.rounds)

    def test_accuracy(self, result) -> float:
        return accuracy(jaxnn.predict(self.model(result), self.problem.data.X_test), self.problem.data.y_test)


_PROBLEMS: dict = {}


def problem(cache: dict, name: str) -> Problem:
    """The :class:`Problem` of data set ``name`` from the shared graph cache
    (memoised per process)."""
    if name not in _PROBLEMS:
        _PROBLEMS[name] = Problem.of_dataset(name, cache[name])
    return _PROBLEMS[name]
