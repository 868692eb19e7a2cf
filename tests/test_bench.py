"""The asv benchmark suite (bench/, asv.conf.json): ``asv check`` and quick
smoke runs in which every benchmark class runs and every benchmark must
produce a number.

Skipped when asv is not installed (``pip install asv``, or the ``bench``
extra).  The smoke runs use ``JAXNN_BENCH_QUICK=1`` (≤ 2000 points, one
parameter value) and call each timed benchmark once.  asv itself (``--quick
--dry-run --python=same``: this interpreter, no environment built, no results
saved) runs the classes with benchmarks only asv can run (``peakmem_``,
``mem_``: :data:`ASV_ONLY`); ``bench.direct`` runs every other class in the
test's own process — one JAX start and one compilation of each program, where
asv starts a process per benchmark — and the classes whose ``setup_cache``
compiles pynndescent's numba kernels (tens of seconds a process,
:data:`NUMBA_COMPILING`) in the worker that compiles those kernels for the
other pynndescent tests.  All compile at the tests' settings
(tests/conftest.py), as the tests' other programs do.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(importlib.util.find_spec("asv") is None, reason="asv is not installed")

MACHINE = "jaxnn-smoke"
TIMEOUT = 600  # seconds per asv call; the whole module takes ~1 min on 2 cores


def _load_conf(name: str) -> dict:
    return json.loads(re.sub(r"^\s*//.*$", "", (ROOT / name).read_text(), flags=re.M))


def _asv(*args, home: Path, config: Path = ROOT / "asv.conf.json", quick: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, HOME=str(home))  # asv's ~/.asv-machine.json goes to a temp home
    env["COLUMNS"] = "250"  # asv shortens benchmark names to the terminal's width: keep them whole
    env.setdefault("JAX_PLATFORMS", "cpu")
    if quick:
        env["JAXNN_BENCH_QUICK"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "asv", *args, "--config", str(config)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT,
    )


def _output(proc: subprocess.CompletedProcess) -> str:
    return f"exit status {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"


def test_asv_configs_are_valid_json_with_comments():
    for name in ("asv.conf.json", "asv.gpu.conf.json"):
        conf = _load_conf(name)
        assert conf["benchmark_dir"] == "bench"
        assert conf["environment_type"] == "virtualenv"
        for key in ("results_dir", "env_dir", "html_dir"):
            assert conf[key].startswith(".asv/"), (name, key)
        assert set(conf["matrix"]["req"]) >= {"jax", "jaxlib", "optax", "pynndescent", "numpy", "scikit-learn", "numba"}
        platform = "cuda" if "gpu" in name else "cpu"
        assert conf["matrix"]["env_nobuild"]["JAX_PLATFORMS"] == [platform]
    assert ".asv/" in (ROOT / ".gitignore").read_text().split()


def test_asv_check(tmp_path):
    proc = _asv("check", "--python=same", home=tmp_path)
    assert proc.returncode == 0, _output(proc)
    assert "No problems found" in proc.stdout + proc.stderr, _output(proc)


#: benchmark classes whose setup_cache compiles pynndescent's numba kernels
#: (not cached on disk: tens of seconds a process), run in-process apart
NUMBA_COMPILING = ("NNDescent", "FastFitRatio", "NNDescentDefaultFit")
#: benchmark classes with benchmarks that only asv runs (peak memory of a process)
ASV_ONLY = ("KnnGraph", "MemoryFit", "MemoryPredict")


def _bench_module(name: str):
    sys.path.insert(0, str(ROOT))
    try:
        return importlib.import_module(f"bench.{name}")
    finally:
        sys.path.remove(str(ROOT))


def _smoke_run(tmp_path: Path, bench: str) -> list[str]:
    """``asv run --quick`` of the benchmarks matching ``bench`` (asv's ``-b``):
    every one selected must appear in the output with a number — no failure,
    skip (n/a) or traceback anywhere.  Returns their names."""
    # asv.conf.json with absolute paths and asv's own files (benchmarks.json,
    # machine.json) in tmp_path, so the list of benchmarks read below is this run's.
    conf = _load_conf("asv.conf.json")
    conf.update(repo=str(ROOT), benchmark_dir=str(ROOT / "bench"), results_dir=str(tmp_path / "results"),
                env_dir=str(tmp_path / "env"), html_dir=str(tmp_path / "html"))
    config = tmp_path / "asv.conf.json"
    config.write_text(json.dumps(conf))
    machine = _asv("machine", "--yes", "--machine", MACHINE, home=tmp_path, config=config)
    assert machine.returncode == 0, _output(machine)
    proc = _asv("run", "--python=same", "--quick", "--dry-run", "--show-stderr", "--machine", MACHINE,
                "--bench", bench, home=tmp_path, config=config, quick=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, _output(proc)

    # Every selected benchmark is reported (benchmarks.json lists all discovered)...
    discovered = [n for n in json.loads((tmp_path / "results" / "benchmarks.json").read_text()) if n != "version"]
    names = [n for n in discovered if re.search(bench, n)]
    assert names, (bench, discovered)
    missing = [n for n in names if n.split(".", 1)[1] not in out and n.rsplit(".", 1)[1] not in out]
    assert not missing, f"not in the output: {missing}\n{_output(proc)}"
    # ...with a number: no failures, skips (n/a) or errors anywhere.
    bad = [line for line in out.splitlines() if re.search(r"\bfailed\b|\bn/a\b|\bskipped\b|Traceback", line)]
    assert not bad, "\n".join(bad) + "\n" + _output(proc)
    return names


def _direct_run(classes) -> list[dict]:
    """``bench.direct`` of the given classes, quick, in this process (quick
    sizes: tests/conftest.py sets ``JAXNN_BENCH_QUICK``): every benchmark and
    parameter gives a value — no error, no skip.  Returns the results."""
    common, direct = _bench_module("common"), _bench_module("direct")
    assert common.QUICK
    results = direct.run([rf"^{name}\." for name in classes], echo=lambda line: None, quick=True)
    assert {r["name"].split(".")[0] for r in results} == set(classes), results
    bad = [r for r in results if not isinstance(r.get("value"), (int, float)) or "error" in r or "skipped" in r]
    assert not bad, bad
    return results


def _classes(kinds=("time_", "track_", "peakmem_", "mem_")) -> dict[str, type]:
    """The benchmark classes of bench/'s modules with a method of these kinds, by name."""
    import inspect
    import pkgutil

    found = {}
    for info in pkgutil.iter_modules([str(ROOT / "bench")]):
        for _, cls in inspect.getmembers(_bench_module(info.name), inspect.isclass):
            if cls.__module__.endswith(f".{info.name}") and any(n.startswith(kinds) for n in dir(cls)):
                found[cls.__name__] = cls
    return found


def _class_names(kinds=("time_", "track_", "peakmem_", "mem_")) -> set[str]:
    """The names of :func:`_classes`."""
    return set(_classes(kinds))


def _parts(names, parts: int) -> list[list[str]]:
    """The classes ``names`` in ``parts`` shares — every ``parts``-th group,
    by name — where a group is the classes that share one ``setup_cache``
    (a mixin's, such as ``BaselineCache``'s): ``bench.direct`` computes it
    once a run, so the classes that read it run in one share."""
    classes, groups = _classes(), {}
    for name in sorted(names):
        cache = getattr(classes[name], "setup_cache", None)
        groups.setdefault(getattr(cache, "__qualname__", name) if cache else name, []).append(name)
    ordered = sorted(groups.values())
    return [[name for group in ordered[p::parts] for name in group] for p in range(parts)]


def test_asv_runs_the_classes_only_asv_can(tmp_path):
    """The classes of :data:`ASV_ONLY` under asv: each benchmark gives a number."""
    names = _smoke_run(tmp_path, r"\.(" + "|".join(ASV_ONLY) + r")\.")
    assert {n.split(".")[1] for n in names} == set(ASV_ONLY), names
    assert any(n.rsplit(".", 1)[1].startswith("peakmem_") for n in names), names


#: the in-process run of the benchmarks is split in this many parts
#: (:func:`_parts`), which pytest-xdist's workers share
DIRECT_PARTS = 4


@pytest.mark.parametrize("part", range(DIRECT_PARTS))
def test_every_other_benchmark_gives_a_number_in_process(part):
    """Every class but :data:`NUMBA_COMPILING`'s, by ``bench.direct``: the
    ``part``-th of :data:`DIRECT_PARTS` shares."""
    classes = _class_names() - set(NUMBA_COMPILING) - set(ASV_ONLY)
    assert len(classes) >= 20, classes
    _direct_run(_parts(classes, DIRECT_PARTS)[part])


def test_the_shares_hold_every_class_once_and_keep_a_shared_cache_in_one():
    """:func:`_parts`: every class in exactly one share, and the classes that
    read ``BaselineCache``'s (and ``GraphCache``'s) cache in the same one."""
    classes = _class_names() - set(NUMBA_COMPILING) - set(ASV_ONLY)
    shares = _parts(classes, DIRECT_PARTS)
    assert sorted(n for share in shares for n in share) == sorted(classes)
    for readers in (("Baselines", "FitRatio"), ("FitBoost", "Predict", "PredictFromNeighbors")):
        assert sum(set(readers) <= set(share) for share in shares) == 1, (readers, shares)


@pytest.mark.xdist_group("nndescent")  # the worker whose process compiles pynndescent's numba kernels
def test_the_numba_compiling_classes_give_a_number_each():
    """The classes of :data:`NUMBA_COMPILING`: pynndescent's kernels compile
    once here, not in each asv process."""
    _direct_run(NUMBA_COMPILING)


def test_the_smoke_runs_cover_every_class():
    """In quick mode too the suite defines every class (none hidden behind
    the full mode); the classes asv alone runs are those with memory
    benchmarks (which ``bench.direct`` leaves out), so that the three runs
    above execute every benchmark."""
    assert set(NUMBA_COMPILING) <= _class_names(), _class_names()
    assert _class_names(("peakmem_", "mem_")) == set(ASV_ONLY)


def test_engine_runs_compile_ahead_of_time(compilations):
    """``Run.compile()`` (bench.common.warm: ``jit(f).lower(...).compile()``)
    leaves nothing to compile for the timed call, for each kind of run: the
    compile is heard compiling the run's function (its programs dropped
    first), the call then compiles nothing."""
    import numpy as np

    sys.path.insert(0, str(ROOT))
    try:
        from bench.common import Problem, block, random_neighbors
    finally:
        sys.path.remove(str(ROOT))
    m, C = 257, 3
    p = Problem(random_neighbors(m, 5), np.random.default_rng(1).integers(0, C, m), C)
    for chooser in ("lazy", "greedy", "colored", "windowed"):
        run = p.runner("gnnb", chooser, rounds=m if chooser != "greedy" else 20)
        with compilations(run._fn) as warmed:
            run.compile()
        assert warmed.of(run._fn), (chooser, list(warmed))
        with compilations() as compiled:
            block(run())
        assert list(compiled) == [], (chooser, list(compiled))


def test_edge_updates_count_the_edges_the_steps_change(greedy_picks):
    """``Run.edge_updates`` (asv ``FitBoost.track_edge_updates_per_second``):
    Σ n_j·C over the examples a lazy or colored pass steps on — m·k·C a
    pass, each row listing k neighbours — and for the greedy chooser
    Σ_t Σ_c n_{j_tc} over its picks, which ``bench.greedy_floor.greedy_picks``
    records from a copy of the engine: the picks of the engine itself
    (``greedy_picks``, conftest's spy on it)."""
    import numpy as np

    sys.path.insert(0, str(ROOT))
    try:
        from bench.common import Problem, block, random_neighbors
        from bench.greedy_floor import greedy_picks as recorded_picks
    finally:
        sys.path.remove(str(ROOT))
    m, k, C, steps = 300, 5, 3, 40
    p = Problem(random_neighbors(m, k), np.random.default_rng(0).integers(0, C, m), C)
    counts = np.asarray(p.counts)
    assert p.runner("gnnb", "lazy").edge_updates == m * k * C
    assert p.runner("gnnb", "lazy", rounds=7).edge_updates == C * counts[p.runner("gnnb", "lazy", rounds=7).order].sum()
    assert p.runner("gnnb", "colored", rounds=2 * m).edge_updates == 2 * m * k * C
    greedy = p.runner("gnnb", "greedy", rounds=steps)
    block(greedy())  # the engine, spied on
    engine = np.stack(greedy_picks)
    picks = recorded_picks(greedy)
    np.testing.assert_array_equal(picks, engine)
    assert picks.shape == (steps, C) and len({tuple(r) for r in picks}) > 1
    assert greedy.edge_updates == counts[engine].sum()


def test_predict_streams_the_blocks_the_memory_benchmark_reads():
    """``bench_memory.searched_rows`` (asv ``MemoryPredict.track_rows_per_block``)
    reads the query rows of each search ``predict`` runs: more queries than
    ``PREDICT_BLOCK_ROWS`` are searched in blocks of at most that many (padded)
    rows and whole; the engine's function is restored after."""
    import numpy as np

    import jaxnn
    from jaxnn._src import prediction

    sys.path.insert(0, str(ROOT))
    try:
        from bench.bench_memory import searched_rows
    finally:
        sys.path.remove(str(ROOT))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2)).astype(np.float32)
    model = jaxnn.fit(X, (X[:, 0] > 0).astype(int), k=5, posterior="link", shrinkage=None)
    block = prediction.PREDICT_BLOCK_ROWS
    search = prediction.padded_query
    Q = rng.normal(size=(block + 37, 2)).astype(np.float32)
    small = searched_rows(lambda: jaxnn.predict(model, Q[:300]))
    assert len(small) == 1 and 300 <= small[0] < block, small
    rows = searched_rows(lambda: jaxnn.predict(model, Q))
    assert len(rows) == 2 and block <= rows[0] < 2 * block and 37 <= rows[1] < block, rows
    assert prediction.padded_query is search


def test_greedy_floor_runs_the_update_with_random_rows_and_leaves_the_engine_alone():
    """bench/greedy_floor.py (asv GreedyFloor): its program is the engine's
    greedy step with random rows chosen — edges change on the chosen rows'
    inverse neighbourhoods, the picks differ from the greedy ones — compiled
    apart, so ``boost`` itself still gives the greedy result afterwards."""
    import jax.numpy as jnp
    import numpy as np

    sys.path.insert(0, str(ROOT))
    try:
        from bench.common import Problem, block, random_neighbors
        from bench.greedy_floor import FLAT_LEAVES, FloorRun
    finally:
        sys.path.remove(str(ROOT))
    m, C, steps = 300, 3, 40
    p = Problem(random_neighbors(m, 5), np.random.default_rng(0).integers(0, C, m), C)
    greedy = p.runner("gnnb", "greedy", rounds=steps)
    before = np.asarray(block(greedy()).alpha)
    floor = block(FloorRun(greedy)())
    after = np.asarray(block(greedy()).alpha)
    np.testing.assert_array_equal(after, before)  # the engine's program is untouched
    floor_alpha, edges = np.asarray(floor.alpha), np.asarray(floor.edges)
    assert not np.array_equal(floor_alpha, before)
    picked = np.flatnonzero(np.any(floor_alpha != 0, axis=1))
    assert 0.5 * steps <= picked.size <= steps * C  # a different, scattered row most steps
    assert np.any(edges != 0)  # GNNB starts from zero edges: the update ran
    rows = np.asarray(FLAT_LEAVES.argmax(FLAT_LEAVES.build(jnp.zeros((m, C)))))
    assert rows.shape == (C,) and np.all(rows < m)


def test_direct_runner_measures_classes_without_asv(tmp_path):
    """``python -m bench.direct`` (the GPU session's runner, bench/gpu_check.sh):
    classes in the order of the patterns, a number per benchmark and parameter,
    the JSON rewritten as results come, no new class once the budget is spent,
    and a pattern matching nothing refused with the classes it could have named."""
    out = tmp_path / "direct.json"
    env = dict(os.environ, JAXNN_BENCH_QUICK="1", JAX_PLATFORMS="cpu")
    run = lambda *args: subprocess.run([sys.executable, "-m", "bench.direct", *args], cwd=ROOT, env=env,
                                       capture_output=True, text=True, timeout=TIMEOUT)
    proc = run("KnnGraph\\.", "ScaleFit", "--budget", "0", "--out", str(out))
    assert proc.returncode == 0, _output(proc)
    report = json.loads(out.read_text())
    assert report["platform"] == "cpu"
    names = {r["name"] for r in report["results"]}
    assert names == {"KnnGraph.time_graph"}, names  # ScaleFit started after the budget: not run
    (result,) = report["results"]
    assert result["unit"] == "seconds" and 0 < result["min"] <= result["value"] and result["samples"] >= 1
    assert "budget of 0 s spent: ScaleFit" in proc.stdout
    proc = run("NoSuchBenchmark")
    assert proc.returncode != 0 and "no benchmark matches ['NoSuchBenchmark']" in proc.stderr and "ScaleFit" in proc.stderr
    proc = run("([")
    assert proc.returncode != 0 and "pattern '([' is not a regular expression" in proc.stderr


def test_a_measurement_in_a_child_process_returns_what_it_printed_or_its_error():
    """``common.in_child`` (NNDescent's full-size cases, each in a new process):
    the child imports this bench package and jaxnn, its printed output comes
    back, and a child that fails raises RuntimeError with its error's end."""
    common = _bench_module("common")
    assert common.in_child("common", "skip_unless", "json", timeout=TIMEOUT) == ""  # ran, printed nothing
    failed = r"bench\.common\.skip_unless\('no_such_module',\) failed(?s:.*)NotImplementedError: no_such_module"
    with pytest.raises(RuntimeError, match=failed):
        common.in_child("common", "skip_unless", "no_such_module", timeout=TIMEOUT)


def test_a_first_calls_child_keeps_its_programs_in_its_own_cache_folder(tmp_path):
    """``common.in_child`` with ``env`` (bench_processes' new processes, which
    quick runs leave out): ``first_calls.py iris json`` in a child whose
    jaxnn cache is ``tmp_path`` prints its seconds as JSON and keeps its
    programs there."""
    common = _bench_module("common")
    printed = common.in_child("first_calls", "run", "iris", "json", timeout=TIMEOUT,
                              env={"JAXNN_CACHE_DIR": str(tmp_path)})
    (line,) = [json.loads(text) for text in printed.splitlines() if text.startswith("{")]
    assert line["seconds"] > 0 and line["seconds"] >= line["compiling or loading"] > 0, line
    assert any(tmp_path.rglob("*")), "nothing kept in the child's cache folder"


def test_direct_runner_reports_a_failing_setup_and_goes_on(monkeypatch):
    """A setup_cache or setup that raises gives each of the class's benchmarks an
    error (a setup's NotImplementedError: skipped, asv's n/a) and the run goes on."""
    sys.path.insert(0, str(ROOT))
    try:
        from bench import direct
    finally:
        sys.path.remove(str(ROOT))

    class Broken:
        def setup_cache(self):
            raise RuntimeError("no data")

        def track_a(self, cache):
            return 1.0

    class Picky:
        param_names, params = ["n"], ([1, 2],)

        def setup(self, n):
            if n == 2:
                raise NotImplementedError("n = 2 needs an accelerator")

        def track_n(self, n):
            return float(n)

    monkeypatch.setattr(direct, "_benchmark_classes", lambda: [Broken, Picky])
    results = direct.run(["Broken", "Picky"], echo=lambda s: None)
    assert [r["name"] for r in results] == ["Broken.track_a", "Picky.track_n", "Picky.track_n"]
    assert results[0]["error"] == "setup_cache: RuntimeError: no data"
    assert results[1]["value"] == 1.0 and results[2]["skipped"] == "n = 2 needs an accelerator"


def test_device_memory_reads_the_accelerator_and_refuses_a_cpu(monkeypatch, tmp_path, capsys):
    """``python -m bench.device_memory`` (bench/gpu_check.sh): on a platform whose
    devices report no memory statistics (the CPU) it says so and exits 2; a
    child prints the queries and the device's peak after loading and after
    predicting with a saved model."""
    import jaxnn

    sys.path.insert(0, str(ROOT))
    try:
        from bench import device_memory
    finally:
        sys.path.remove(str(ROOT))
    assert device_memory.main(["100"]) == 2
    assert "no device memory statistics on cpu" in capsys.readouterr().err
    peaks = iter([10, 25])
    monkeypatch.setattr(device_memory, "peak_bytes", lambda: next(peaks))
    X, y = device_memory.memory_points(300, 0)
    assert X.dtype == "float32" and X.shape == (300, 32)
    path = tmp_path / "model.jaxnn"
    jaxnn.save(jaxnn.fit(X, y, k=5, posterior="link", shrinkage=None), path)
    device_memory.child(str(path), 50)
    assert capsys.readouterr().out.split() == ["50", "10", "25"]
