"""The test run's configuration: the ``slow`` tier, a persistent JAX
compilation cache, and guarded helpers for the tests that count compilations.

Tiers
-----
``python -m pytest -m "not slow" -n 2`` is the development tier (a couple
of minutes on 2 cores); the full suite (the README's command, CI) runs every
test.  ``slow`` marks what costs tens of seconds whatever its size: new
processes (a subprocess imports JAX and compiles from nothing), pynndescent's
numba compilation (the tests of the ``nndescent`` xdist group), the asv smoke
runs, the paper experiments, scikit-learn's estimator checks and the larger
reference comparisons.  Tests in files whose owners mark them elsewhere are
listed in :data:`SLOW_ELSEWHERE`.

Compilation cache
-----------------
Each worker turns JAX's persistent compilation cache on at
``.pytest_cache/jax-compilation-cache`` (gitignored; ``JAXNN_TEST_CACHE_DIR``
moves it, set empty to turn it off), caching every program however quick
(``jax_persistent_cache_min_compile_time_secs = 0``).  The pytest-xdist
workers share it: a program one worker compiled the other loads, as does a
worker that dropped its in-memory programs (``clear_cache``) and every later
run.  With a size limit set, JAX reads and writes the cache under a file
lock, so two workers never see each other's half-written entries; without
``filelock`` each worker gets a folder of its own.  Subprocesses started by
tests do not inherit it (their first-compile behaviour is what some test).
"""

from __future__ import annotations

import contextlib
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: tests whose files others own (README, bench): marked ``slow`` here by node id prefix
SLOW_ELSEWHERE = (
    "tests/test_readme.py::test_xdist_groups_keep_their_tests_on_one_worker",  # the nndescent worker
    "tests/test_readme_snippets.py::test_every_readme_python_block_runs",  # pynndescent index: numba
    "tests/test_bench.py::test_asv_check",  # asv in a subprocess imports every benchmark
    "tests/test_bench.py::test_quick_smoke_run",  # asv smoke runs
    "tests/test_bench.py::test_direct_runner_measures_classes_without_asv",  # a subprocess
)


# --------------------------------------------------------------------------
# the slow marker
# --------------------------------------------------------------------------
def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "slow: tens of seconds whatever the size (subprocesses, numba, asv, experiments); "
        "deselect with -m 'not slow' for the development tier",
    )
    _load_hypothesis_profile(config)


# --------------------------------------------------------------------------
# hypothesis: 200 examples a property in the full suite, 20 in the development tier
# --------------------------------------------------------------------------
PROPERTY_EXAMPLES = {"full": 200, "dev": 20}


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
    slow = pytest.mark.slow
    for item in items:
        if item.nodeid.startswith(SLOW_ELSEWHERE) or any(
                m.name == "xdist_group" and m.args[:1] == ("nndescent",) for m in item.iter_markers()):
            item.add_marker(slow)  # pynndescent's numba compilation: ~45 s the first time in a process


# --------------------------------------------------------------------------
# the persistent compilation cache
# --------------------------------------------------------------------------
def _compilation_cache_dir() -> str | None:
    path = os.environ.get("JAXNN_TEST_CACHE_DIR")
    if path is None:
        path = str(ROOT / ".pytest_cache" / "jax-compilation-cache")
    return path or None


def _use_compilation_cache() -> None:
    import jax

    path = _compilation_cache_dir()
    if path is None or jax.config.jax_compilation_cache_dir:  # off, or the user's own
        return
    try:
        import filelock  # noqa: F401  (JAX locks the cache's reads and writes with it)

        locked = True
    except ImportError:
        locked = False
        path = os.path.join(path, os.environ.get("PYTEST_XDIST_WORKER", "main"))
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    if locked:  # a size limit makes JAX's cache take a file lock around each read and write
        jax.config.update("jax_compilation_cache_max_size", 4 << 30)


_use_compilation_cache()


# --------------------------------------------------------------------------
# counting compilations (JAX's public jax.monitoring, no private attribute)
# --------------------------------------------------------------------------
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"  # jax._src.dispatch.BACKEND_COMPILE_EVENT


class Compiled(list):
    """The names of the programs compiled in a ``compilations()`` block, as
    JAX names them (``"jit(boost)"``); a program loaded from the persistent
    cache counts too (JAX reports its lookup as a compilation)."""

    def of(self, *jitted) -> list[str]:
        """Those of the jitted functions ``jitted``, in order."""
        wanted = {f"jit({f.__name__})" for f in jitted}
        return [name for name in self if name in wanted]


@pytest.fixture
def compilations():
    """``with compilations(*fresh) as compiled:`` — the programs XLA compiles
    inside the block (:class:`Compiled`), heard through ``jax.monitoring``
    within the test.  The jitted functions in ``fresh`` drop their compiled
    programs first (``clear_cache``), so that what the block compiles of them
    does not depend on what earlier tests compiled; the test is skipped, with
    the reason, where this JAX lacks the listeners, the event or
    ``clear_cache``."""
    import jax

    monitoring = getattr(jax, "monitoring", None)
    if not all(hasattr(monitoring, f) for f in ("register_event_duration_secs_listener",
                                                 "unregister_event_duration_listener")):
        pytest.skip(f"this JAX ({jax.__version__}) has no jax.monitoring duration listeners")
    _check_compile_event(jax)

    @contextlib.contextmanager
    def block(*fresh):
        for f in fresh:
            if not hasattr(f, "clear_cache"):
                pytest.skip(f"this JAX ({jax.__version__}) has no clear_cache on jitted functions")
            f.clear_cache()
        compiled = Compiled()

        def listen(event, seconds, **kwargs):
            if event == _COMPILE_EVENT:
                compiled.append(str(kwargs.get("fun_name", "?")))

        monitoring.register_event_duration_secs_listener(listen)
        try:
            yield compiled
        finally:
            monitoring.unregister_event_duration_listener(listen)

    return block


_compile_event_heard: bool | None = None


def _check_compile_event(jax) -> None:
    """Check once per process that a new program reports :data:`_COMPILE_EVENT`
    (its name is JAX's, not public API), else skip: a listener that hears
    nothing would make every "nothing compiled" assertion pass."""
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
        pytest.skip(f"this JAX ({jax.__version__}) reports no {_COMPILE_EVENT} events")


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
