"""The test run's configuration: the ``slow`` tier, a persistent JAX
compilation cache, and guarded helpers for the tests that count compilations.

Tiers
-----
``python -m pytest -m "not slow" -n 2`` is the development tier (some 1 550
tests; its time: docs/performance.md); the full suite (the README's
command, CI) runs every test.  ``slow`` marks what compiles a lot or starts something, whatever its
size:

* tests whose own code starts a Python process (found here: their source
  names ``sys.executable``, ``subprocess.`` or the benchmarks' ``in_child(``):
  JAX's import and every compilation from nothing;
* the ``nndescent`` xdist group: pynndescent's numba compilation (tens of
  seconds a process);
* in files others own (README, bench), by node id: :data:`SLOW_ELSEWHERE`;
* in the test files, by a mark on the test: the paper experiments,
  scikit-learn's estimator checks, the grids of float64 reference
  comparisons (the tier keeps ``test_float32_fit_matches_reference`` and
  one surrogate-risk case per algorithm), the padded-against-unpadded and
  compilation-counting tests of shared sizes (programs of new shapes each),
  and tests of more than a few seconds from an empty cache.

Property tests (hypothesis) run 5 examples a property in the development
tier and 200 in the full suite.

Compilation
-----------
``JAXNN_TEST_XLA`` says how the tests compile:

* ``fast`` (the default): most of XLA's optimisations off
  (``JAX_DISABLE_MOST_OPTIMIZATIONS=1``), XLA's older CPU fusion emitters and
  each program's machine code generated in one piece
  (:data:`FAST_COMPILE_XLA_FLAGS` in ``XLA_FLAGS``, where this jaxlib knows
  the flags), and pynndescent's numba kernels compiled unoptimised
  (``NUMBA_OPT=0``, cached in :data:`NUMBA_TEST_CACHE_DIR`, not in pynndescent's own
  cache, which users' processes load), unless set otherwise, inherited by the subprocesses tests start:
  most tests check results, and compiling is most of their time;
* ``default``: XLA's default settings, the programs users run.  The run
  refuses to start if a fast-compile setting is in the environment.

The tests marked ``xla_default`` — the bitwise and float64-reference claims
(:data:`XLA_DEFAULT_FILES`, and tests marked so one by one) — are the ones the README's test command runs at
``JAXNN_TEST_XLA=default``, in a run of their own (``-m xla_default``); its
first run leaves them out (``-m "not xla_default"``) and a third runs the
engine tests with the GPU's layout choices (``-p as_gpu``, tests/as_gpu.py).
Any run may select them at either setting.

The run keeps JAX's persistent compilation cache in
``.pytest_cache/jax-compilation-cache`` (gitignored): ``JAXNN_CACHE_DIR``
is pointed there before jaxnn is imported, so jaxnn's own cache (every
program however quick, size-limited: ``jaxnn.config``) is on there in each
pytest-xdist worker and in the subprocesses tests start.  The workers share
it — a program one compiled the other loads, as does a worker that dropped
its in-memory programs (``clear_cache``), and every later run.
jaxnn's kept stage programs (``JAXNN_PROGRAMS``: :mod:`jaxnn._src.programs`)
are off (``JAXNN_PROGRAMS=0``) except where tests/test_programs.py turns them
on: their key does not see the module constants that tests change.
``JAXNN_TEST_CACHE_DIR`` moves it (empty: no cache);
a ``JAXNN_CACHE_DIR`` or JAX cache you set is used as it is.  A first run
costs about what it costs without the cache, and a later run a fraction.

Workers
-------
Under ``--dist loadgroup`` (the README's test command) pytest-xdist keeps each
test file's tests on one worker: a test with no ``xdist_group`` mark of its
own is put in its file's group.  A file's tests share
their problems' shapes, so a worker traces and lowers each of those programs
once where two workers each traced and lowered it (the second loading the
compiled program from the shared cache).  The ``nndescent`` group still
gathers pynndescent's tests from every file on one worker.

Counting compilations
---------------------
The fixtures ``compilations`` (programs compiled in a block, heard through
``jax.monitoring``; its ``fresh`` functions' programs dropped first, so that
counts do not depend on the tests before) and ``temp_bytes`` (XLA's
temporary buffers of a lowered program) skip a test, with the reason, where
this JAX lacks what they use, instead of failing on a private attribute;
under CI (``CI`` set in the environment) ``compilations`` fails instead: a
listener that hears nothing there would leave every count unchecked.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: tests whose files others own (README, bench): marked ``slow`` here by node id prefix
SLOW_ELSEWHERE = (
    "tests/test_readme.py::test_xdist_groups_keep_their_tests_on_one_worker",  # the nndescent worker
    "tests/test_readme_snippets.py::test_every_readme_python_block_runs",  # pynndescent index: numba
    "tests/test_readme_snippets.py::test_every_guide_python_block_runs",  # ~5 s a page of the guide
    "tests/test_bench.py::test_asv_check",  # asv in a subprocess imports every benchmark
    "tests/test_bench.py::test_asv_runs_the_classes_only_asv_can",  # asv smoke run
    "tests/test_bench.py::test_every_other_benchmark_gives_a_number_in_process",  # the benchmarks' programs
    "tests/test_bench.py::test_direct_runner_measures_classes_without_asv",  # a subprocess
    "tests/test_bench.py::test_engine_runs_compile_ahead_of_time",  # four kinds of run compiled ahead
    "tests/test_bench.py::test_greedy_floor_runs_the_update_with_random_rows",  # a program of its own
)


# --------------------------------------------------------------------------
# the slow marker
# --------------------------------------------------------------------------

# jaxnn's kept programs (jaxnn._src.programs) are keyed by the arguments and the process's
# settings, not by the module constants that tests change: off (read at each call, so this holds
# for a plugin that imported jaxnn first, as tests/as_gpu.py does), but in test_programs
os.environ.setdefault("JAXNN_PROGRAMS", "0")

def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "slow: left out of the development tier (-m 'not slow'): subprocesses, numba, asv, experiments, "
        "grids of compilations (tests/conftest.py)",
    )
    config.addinivalue_line(
        "markers",
        "xla_default: the bitwise and float64-reference tests, run at XLA's default settings by the README's "
        "test command (JAXNN_TEST_XLA=default; tests/conftest.py)",
    )
    _load_hypothesis_profile(config)


# --------------------------------------------------------------------------
# hypothesis: 200 examples a property in the full suite (test_properties checks it), 5 in the
# development tier (each example of new shapes compiles a program)
# --------------------------------------------------------------------------
PROPERTY_EXAMPLES = {"full": 200, "dev": 5}


def _load_hypothesis_profile(config) -> None:
    """Register the ``full`` and ``dev`` hypothesis profiles (no deadline: a
    first example compiles, later ones do not; derandomized, so a run is
    repeatable) and load ``dev`` when the run deselects the slow tier."""
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:  # the property tests then skip themselves
        return
    for name, examples in PROPERTY_EXAMPLES.items():
        settings.register_profile(name, max_examples=examples, deadline=None, derandomize=True,
                                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    dev = "not slow" in (config.getoption("markexpr", default="") or "")
    settings.load_profile("dev" if dev else "full")


def pytest_collection_modifyitems(config, items):
    slow, xla_default = pytest.mark.slow, pytest.mark.xla_default
    for item in items:
        if (item.nodeid.startswith(SLOW_ELSEWHERE) or _in_nndescent_group(item)
                or _starts_a_process(getattr(item, "function", None))):
            item.add_marker(slow)
        if item.path.name in XLA_DEFAULT_FILES:
            item.add_marker(xla_default)
        if item.get_closest_marker("xdist_group") is None:  # its file's group (module docstring, *Workers*)
            item.add_marker(pytest.mark.xdist_group(item.path.stem))


def _in_nndescent_group(item) -> bool:
    """pynndescent's numba compilation: tens of seconds the first time in a process."""
    return any(m.name == "xdist_group" and m.args[:1] == ("nndescent",) for m in item.iter_markers())


#: what in a test's source starts a Python process: the interpreter named, a subprocess, the
#: benchmarks' child-process runner (``bench.common.in_child``)
PROCESS_CALLS = ("sys.executable", "subprocess.", "in_child(")


@functools.lru_cache(maxsize=None)
def _starts_a_process(function) -> bool:
    """A test whose own code starts a Python process: it imports JAX and
    compiles from nothing, whatever its size."""
    if function is None:
        return False
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    return any(call in source for call in PROCESS_CALLS)


# --------------------------------------------------------------------------
# the persistent compilation cache
# --------------------------------------------------------------------------
def _compilation_cache_dir() -> str | None:
    """``$JAXNN_TEST_CACHE_DIR`` (empty: no cache), else a ``$JAXNN_CACHE_DIR``
    you set, else ``.pytest_cache/jax-compilation-cache`` in the checkout."""
    for name in ("JAXNN_TEST_CACHE_DIR", "JAXNN_CACHE_DIR"):
        if name in os.environ:
            return os.environ[name] or None
    return str(ROOT / ".pytest_cache" / "jax-compilation-cache")


#: XLA's CPU flags the tests compile with where this jaxlib knows them: fusions by
#: the older elemental emitters, which compile in about two thirds of the time, and
#: one LLVM module a program (not split for parallel code generation: two
#: pytest-xdist workers already fill two cores)
FAST_COMPILE_XLA_FLAGS = ("--xla_cpu_use_fusion_emitters=false", "--xla_cpu_parallel_codegen_split_count=1")

#: the answers of :func:`_xla_knows`, by installed jaxlib and flags
XLA_FLAGS_CHECKED = str(ROOT / ".pytest_cache" / "xla-flags-checked.json")

#: where numba caches the kernels it compiles unoptimised for the tests (``NUMBA_OPT=0``): not
#: beside the installed packages' sources (pynndescent's), whose cache every later process loads
NUMBA_TEST_CACHE_DIR = str(ROOT / ".pytest_cache" / "numba-cache")

#: the settings the tests compile with (``JAXNN_TEST_XLA``): see the module's docstring
XLA_MODES = ("fast", "default")

#: the test files whose tests are marked ``xla_default``: the bitwise claims (uniform weights
#: give the unweighted model bit for bit) and the comparisons with the float64 reference
XLA_DEFAULT_FILES = ("test_reference.py", "test_reference_schedules.py", "test_sample_weight.py")


def xla_mode() -> str:
    """``$JAXNN_TEST_XLA`` (``fast`` when unset), checked."""
    mode = os.environ.get("JAXNN_TEST_XLA", "") or "fast"
    if mode not in XLA_MODES:
        raise pytest.UsageError(f"JAXNN_TEST_XLA={mode!r}: expected one of {', '.join(XLA_MODES)}")
    return mode


def _compile_for_tests() -> None:
    """Compile as :func:`xla_mode` says.  ``fast``: without most of XLA's
    optimisations (``JAX_DISABLE_MOST_OPTIMIZATIONS``) and with
    :data:`FAST_COMPILE_XLA_FLAGS` added to ``XLA_FLAGS``, for this process and
    the subprocesses tests start, unless you set them.  XLA aborts a process
    on a flag it does not know, so the flags are added only after a subprocess
    has started XLA's CPU backend with them (once: the pytest-xdist workers
    inherit the environment; where the flags together fail, each alone).
    ``default``: nothing changed, and a fast-compile setting found in the
    environment is an error.  Benchmarks run in the tests at the tests'
    settings; outside them they compile with every optimisation."""
    os.environ.setdefault("JAXNN_BENCH_QUICK", "1")  # benchmarks run in the tests at their quick sizes
    flags = os.environ.get("XLA_FLAGS", "")
    names = {f: f.split("=")[0] for f in FAST_COMPILE_XLA_FLAGS}
    missing = [f for f, name in names.items() if name not in flags]
    if xla_mode() == "default":
        found = [name for name in ("JAX_DISABLE_MOST_OPTIMIZATIONS",) if os.environ.get(name)] + [
            name for f, name in names.items() if f not in missing]
        if found:
            raise pytest.UsageError(f"JAXNN_TEST_XLA=default, but {' and '.join(found)} set in the environment: "
                                    "unset it to test at XLA's default settings")
        return
    os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
    # pynndescent's kernels: LLVM's optimisations off too, and kept in a cache of the tests' own
    # (numba keys its on-disk cache by signature and CPU, not by NUMBA_OPT)
    os.environ.setdefault("NUMBA_OPT", "0")
    if os.environ["NUMBA_OPT"] == "0":
        os.environ.setdefault("NUMBA_CACHE_DIR", NUMBA_TEST_CACHE_DIR)
    if not missing or os.environ.get("JAXNN_TEST_XLA_FLAG_CHECKED"):
        return
    os.environ["JAXNN_TEST_XLA_FLAG_CHECKED"] = "1"
    known = missing if _xla_knows(flags, missing) else [f for f in missing if _xla_knows(flags, [f])]
    os.environ["XLA_FLAGS"] = " ".join([flags, *known]).strip()


def _xla_knows(flags: str, extra: list) -> bool:
    """Whether a new process starts XLA's CPU backend with ``extra`` added to
    ``flags``: asked once per installed jaxlib and flags, the answer kept in
    :data:`XLA_FLAGS_CHECKED` (a process that imports jax costs seconds at
    every run's start)."""
    import json
    import subprocess
    import sys
    from importlib import metadata

    try:
        question = repr((metadata.version("jaxlib"), sys.executable, flags, sorted(extra)))
    except metadata.PackageNotFoundError:
        question = None
    try:
        known = json.loads(pathlib.Path(XLA_FLAGS_CHECKED).read_text())
    except (OSError, ValueError):
        known = {}
    if question is not None and isinstance(known.get(question), bool):
        return known[question]
    env = dict(os.environ, XLA_FLAGS=" ".join([flags, *extra]).strip(), JAX_PLATFORMS="cpu")
    try:
        answer = subprocess.run([sys.executable, "-c", "import jax; jax.devices()"], env=env, capture_output=True,
                                timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    if question is not None:
        with contextlib.suppress(OSError):
            pathlib.Path(XLA_FLAGS_CHECKED).parent.mkdir(parents=True, exist_ok=True)
            pathlib.Path(XLA_FLAGS_CHECKED).write_text(json.dumps({**known, question: answer}))
    return answer


_compile_for_tests()


def _use_compilation_cache() -> None:
    """jaxnn turns JAX's persistent cache on when imported, in
    ``$JAXNN_CACHE_DIR`` (jaxnn.config): point it at
    the test cache, for this process and the subprocesses tests start.  Where
    that did not turn a cache on (an older jaxnn, or its import failing: the
    tests will say why), configure JAX directly."""
    import jax

    if jax.config.jax_compilation_cache_dir:  # a cache configured through JAX: the user's
        return
    path = _compilation_cache_dir()
    os.environ["JAXNN_CACHE_DIR"] = path or ""
    if path is None:
        return
    try:
        import jaxnn  # noqa: F401  (jaxnn.config turns the cache on at import)
    except Exception:  # noqa: BLE001 - collection reports it, test module by test module
        pass
    if jax.config.jax_compilation_cache_dir:
        return
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


_use_compilation_cache()


# --------------------------------------------------------------------------
# counting compilations (JAX's public jax.monitoring, no private attribute)
# --------------------------------------------------------------------------
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"  # jax._src.dispatch.BACKEND_COMPILE_EVENT


class Compiled(list):
    """The names of the programs compiled in a ``compilations()`` block, as
    JAX names them (``"jit(boost)"``); a program loaded from the persistent
    cache counts too (JAX reports its lookup as a compilation)."""

    def __init__(self, in_test: set):
        super().__init__()
        self.in_test = in_test  # the names compiled in every block of the test so far

    def of(self, *jitted) -> list[str]:
        """Those of the jitted functions ``jitted``, in order.  Each must
        have compiled in a block of this test — a warm-up under
        ``compilations(*jitted)``, which drops their programs first — so that
        the name watched is known to be one JAX reports, and on the path the
        test runs: a watch of a renamed or no longer called function would
        see nothing, whatever happened."""
        wanted = {f"jit({f.__name__})" for f in jitted}
        unseen = sorted(wanted - self.in_test)
        assert not unseen, (f"{unseen} compiled in no block of this test: warm up under compilations(*watched), "
                            "or the watch sees nothing")
        return [name for name in self if name in wanted]


@pytest.fixture
def compilations():
    """``with compilations(*fresh) as compiled:`` — the programs XLA compiles
    inside the block (:class:`Compiled`), heard through ``jax.monitoring``
    within the test.  The jitted functions in ``fresh`` drop their compiled
    programs first (``clear_cache``), so that what the block compiles of them
    does not depend on what earlier tests compiled.  The pattern::

        with compilations(*watched):  # a warm-up: compiles each watched function anew
            fit(X[:400], y[:400])
        with compilations() as compiled:
            fit(X, y)  # a nearby size
        assert compiled.of(*watched) == []

    The test is skipped, with the reason, where this JAX lacks the
    listeners, the event or ``clear_cache`` — and fails under CI
    (:func:`_cannot_count`)."""
    import jax

    monitoring = getattr(jax, "monitoring", None)
    if not all(hasattr(monitoring, f) for f in ("register_event_duration_secs_listener",
                                                 "unregister_event_duration_listener")):
        _cannot_count(f"this JAX ({jax.__version__}) has no jax.monitoring duration listeners")
    _check_compile_event(jax)
    in_test: set[str] = set()

    @contextlib.contextmanager
    def block(*fresh):
        for f in fresh:
            if not hasattr(f, "clear_cache"):
                _cannot_count(f"this JAX ({jax.__version__}) has no clear_cache on jitted functions")
            f.clear_cache()
        compiled = Compiled(in_test)

        def listen(event, seconds, **kwargs):
            if event == _COMPILE_EVENT:
                compiled.append(str(kwargs.get("fun_name", "?")))
                in_test.add(compiled[-1])

        monitoring.register_event_duration_secs_listener(listen)
        try:
            yield compiled
        finally:
            monitoring.unregister_event_duration_listener(listen)

    return block


def _cannot_count(reason: str) -> None:
    """A compilation count this JAX cannot give: a failure under CI (``CI``
    set, as CI services set it), where the counts must be checked, else a
    skip with the reason."""
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{reason} (CI is set: compilation counts must be checked)")
    pytest.skip(reason)


_compile_event_heard: bool | None = None


def _check_compile_event(jax) -> None:
    """Check once per process that a new program reports :data:`_COMPILE_EVENT`
    (its name is JAX's, not public API), else :func:`_cannot_count`: a
    listener that hears nothing would make every "nothing compiled"
    assertion pass."""
    global _compile_event_heard
    if _compile_event_heard is None:
        import jax.numpy as jnp

        heard = []

        def listen(event, seconds, **kwargs):
            heard.append(event == _COMPILE_EVENT and kwargs.get("fun_name") == "jit(_compile_event_probe)")

        def _compile_event_probe(x):
            return x * 3.0 + 0.8125

        jax.monitoring.register_event_duration_secs_listener(listen)
        try:
            jax.jit(_compile_event_probe)(jnp.float32(1.0)).block_until_ready()
        finally:
            jax.monitoring.unregister_event_duration_listener(listen)
        _compile_event_heard = any(heard)
    if not _compile_event_heard:
        _cannot_count(f"this JAX ({jax.__version__}) reports no {_COMPILE_EVENT} events")


@pytest.fixture
def temp_bytes():
    """``temp_bytes(lowered)``: the temporary buffer bytes of XLA's plan for a
    lowered program (``lowered.compile().memory_analysis()``); skips the test
    where the backend gives no memory analysis."""

    def plan(lowered) -> int:
        analysis = lowered.compile().memory_analysis()
        if analysis is None or not hasattr(analysis, "temp_size_in_bytes"):
            pytest.skip("this backend gives no memory analysis of compiled programs")
        return analysis.temp_size_in_bytes

    return plan


# --------------------------------------------------------------------------
# the greedy chooser's picks
# --------------------------------------------------------------------------
@pytest.fixture
def greedy_picks(monkeypatch):
    """The (C,) picks of every greedy step, in the order they run: a spy on
    ``maxtree.argmax`` (instrumentation only).  The jitted functions that
    trace it — ``boost`` and ``fit_split``'s ``_boost_blocks`` — drop their
    compiled programs before and after, so that the engine is traced with the
    spy and later tests without it."""
    import jax

    from jaxnn._src import boost_runs, boosting, maxtree

    picks = []
    argmax = maxtree.argmax

    def spy(tree):
        j = argmax(tree)
        jax.debug.callback(lambda v: picks.append(np.asarray(v).copy()), j, ordered=True)
        return j

    def drop():
        boosting.boost.clear_cache()
        boost_runs._boost_blocks.clear_cache()

    monkeypatch.setattr(maxtree, "argmax", spy)
    drop()
    yield picks
    monkeypatch.undo()
    drop()


@pytest.fixture
def x64():
    """The test runs with float64 JAX (``jax.enable_x64``): ``pytestmark =
    pytest.mark.usefixtures("x64")`` for a whole module."""
    import jax

    with jax.enable_x64(True):
        yield


@pytest.fixture
def every_sklearn_check(monkeypatch):
    """scikit-learn's estimator checks, its array-API input check included:
    scikit-learn skips that one unless ``SCIPY_ARRAY_API`` is set when it
    runs (set here for the test alone, after SciPy's import)."""
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
