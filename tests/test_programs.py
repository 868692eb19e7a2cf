"""jaxnn's kept stage programs (jaxnn._src.programs): a new process loads the
search, boosting and rule programs an earlier one compiled — nothing traced,
lowered or compiled — and answers bit for bit as the plain jit does.

The suite runs with them off (``JAXNN_PROGRAMS=0``, tests/conftest.py): these
tests turn them on, in subprocesses with a cache folder of their own.
"""

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxnn
from jaxnn._src import programs

STAGES = ["_rule", "boost", "conditioned_search", "_batched_colors", "boost_colored", "_sgd_train", "_svm_fit_jit",
          "_platt_jit", "_platt_proba", "_ovr_logistic_proba", "_votes"]

#: a default fit, predict and predict_proba on float64 X and integer y (as scikit-learn loads
#: iris), a colored fit and the baselines' fits and posteriors; prints the answers and the stage
#: programs this process traced
SCRIPT = textwrap.dedent(
    """
    import json, sys, numpy as np, jax, jax.monitoring
    traced = set()
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, seconds, **kw: traced.add(str(kw.get("fun_name"))) if event.endswith("jaxpr_trace_duration")
        else None)
    import jaxnn
    rng = np.random.default_rng(0)
    y = np.arange(90) % 3
    X = rng.normal(size=(90, 4)) + 2.0 * np.eye(4)[y]
    model = jaxnn.fit(X, y, k=5)
    colored = jaxnn.fit(X, y, k=5, chooser="colored", posterior="link", shrinkage=None)  # the colouring, its scan
    Q = X[:40] + 0.25
    out = {"alpha": np.asarray(model.alpha).tolist(), "labels": np.asarray(jaxnn.predict(model, Q)).tolist(),
           "colored": np.asarray(colored.alpha).tolist(),
           "baselines": [np.asarray(jaxnn.baselines.predict_proba(fit(X, y), Q)).tolist()
                         for fit in (jaxnn.baselines.sgd_fit, jaxnn.baselines.svm_fit, jaxnn.baselines.knn_fit)],
           "proba": np.asarray(jaxnn.predict_proba(model, Q)).tolist(),
           "T": model.posterior_temperature, "traced": sorted(traced)}
    print(json.dumps(out))
    """
)


#: paper 004's family: the ULS rules' literals, boosting and scores, the UDT growing, descent and leaf links, the
#: OLS curvature bound, pass and scores, and the family's calibrated posteriors (the defaults, posterior="auto");
#: a totally corrective ULS fit (its Newton steps call LAPACK, which a loading process must set up)
FAMILY_STAGES = ["_boost_features", "literal_matrix", "_rule_scores", "_summed", "_evaluate", "_apply", "_descend",
                 "_node_links", "_doubled_less_one", "_phi_second_derivative", "_advance", "_scores",
                 "_family_posterior"]

#: a fit of each member (the defaults) and its posteriors on a bundled set; prints them and the
#: programs this process traced
FAMILY_SCRIPT = textwrap.dedent(
    """
    import json, numpy as np, jax, jax.monitoring
    traced = set()
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, seconds, **kw: traced.add(str(kw.get("fun_name"))) if event.endswith("jaxpr_trace_duration")
        else None)
    import jaxnn
    X, y = jaxnn.datasets.load("wine")
    out = {name: np.asarray(jaxnn.predict_proba(getattr(jaxnn, name)(X, y), X[:30])).tolist()
           for name in ("uls", "udt", "ols")}
    out["corrective"] = np.asarray(jaxnn.predict_proba(jaxnn.uls(X, y, corrective=True, rounds=6), X[:30])).tolist()
    out["traced"] = sorted(traced)
    print(json.dumps(out))
    """
)


def _run(folder, programs_on=True, script=SCRIPT):
    env = dict(os.environ, JAXNN_CACHE_DIR=str(folder), JAXNN_PROGRAMS="1" if programs_on else "0")
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def _kept(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(programs.PREFIX))


def _same_answers(a, b):
    for name in ("alpha", "labels", "proba", "T", "colored", "baselines"):
        np.testing.assert_array_equal(np.asarray(a[name]), np.asarray(b[name]), err_msg=name)


@pytest.mark.slow  # three subprocesses
def test_a_new_process_loads_the_stage_programs_and_answers_alike(tmp_path):
    """A second process traces none of the stages (it loads them) and gives
    the first's answers bit for bit — which are the plain jit's."""
    first = _run(tmp_path)
    assert set(STAGES) <= set(first["traced"])
    kept = _kept(tmp_path)
    assert len(kept) >= 3 and all(name.endswith("-cache") for name in kept)
    second = _run(tmp_path)
    assert not set(STAGES) & set(second["traced"]), second["traced"]
    _same_answers(second, first)
    assert _kept(tmp_path) == kept  # nothing new written
    _same_answers(_run(tmp_path / "plain", programs_on=False), first)
    assert not (tmp_path / "plain").exists() or _kept(tmp_path / "plain") == []


@pytest.mark.slow  # three subprocesses
def test_a_new_process_loads_the_familys_programs_and_answers_alike(tmp_path):
    """ULS, UDT and OLS fits and their posteriors: a second process traces
    nothing — the family's programs loaded whole, no eager operation — and
    answers bit for bit as the first, and as the plain jit."""
    first = _run(tmp_path, script=FAMILY_SCRIPT)
    assert set(FAMILY_STAGES) <= set(first["traced"]), first["traced"]
    second = _run(tmp_path, script=FAMILY_SCRIPT)
    assert second["traced"] == [], second["traced"]
    plain = _run(tmp_path / "plain", programs_on=False, script=FAMILY_SCRIPT)
    for name in ("uls", "udt", "ols", "corrective"):
        np.testing.assert_array_equal(np.asarray(second[name]), np.asarray(first[name]), err_msg=name)
        np.testing.assert_array_equal(np.asarray(plain[name]), np.asarray(first[name]), err_msg=name)


@pytest.mark.slow  # two subprocesses
def test_an_unreadable_kept_program_is_compiled_again_and_replaced(tmp_path):
    """A kept program cut short (or from another jaxlib) is compiled again —
    whole, though JAX's own cache holds it now — the answers unchanged, and
    the file replaced: a third process loads every stage again."""
    first = _run(tmp_path)
    kept = _kept(tmp_path)
    for name in kept:
        path = tmp_path / name
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    again = _run(tmp_path)
    assert set(STAGES) <= set(again["traced"])
    _same_answers(again, first)
    assert _kept(tmp_path) == kept
    assert not [n for n in jaxnn.config.drop_cut_short(str(tmp_path)) if n.startswith(programs.PREFIX)]
    third = _run(tmp_path)
    assert not set(STAGES) & set(third["traced"]), third["traced"]
    _same_answers(third, first)


def test_static_arguments_without_a_stable_key_take_the_plain_jit():
    """Catalogue losses, numbers, tuples, frozen dataclasses of them and
    module-level functions have keys; a loss built from functions, a lambda
    and an object of another kind do not (their call goes to the plain jit)."""
    from jaxnn._src import algorithms, losses, search

    key = programs._static_key
    assert key(losses.get("logistic")) == ("loss", "logistic")
    assert key(losses.from_phi(lambda p: p * (p - 1), name="logistic")) is None
    assert key(algorithms.GNNB(0.25)) == key(algorithms.GNNB(0.25)) != key(algorithms.GNNB(0.5))
    assert key(search.conditioned_search) == ("jaxnn._src.search", "conditioned_search")
    assert key((3, None, "a", 0.5)) is not None and key((3, lambda: 0)) is None
    assert key(lambda x: x) is None and key(object()) is None
    assert key(True) != key(1) and key(1) != key(1.0)


def test_calls_under_a_trace_or_with_other_leaves_take_the_plain_jit(tmp_path, monkeypatch):
    """With the programs on: a call under jax.jit (its arguments tracers)
    runs the plain jit inside the trace, keeps nothing, and agrees with a
    call outside; x64 on is another program."""
    monkeypatch.setenv(programs.ENV_VAR, "1")
    monkeypatch.setattr(programs.config, "cache_dir", lambda: str(tmp_path))

    @programs.jit(static_argnames=("scale",))
    def twice(x, *, scale):
        return x * scale

    x = jnp.arange(4.0)
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda v: twice(v, scale=2.0))(x)), [0.0, 2.0, 4.0, 6.0])
    assert _kept(tmp_path) == []
    np.testing.assert_array_equal(np.asarray(twice(x, scale=2.0)), [0.0, 2.0, 4.0, 6.0])
    assert len(_kept(tmp_path)) == 1
    with jax.enable_x64(True):
        assert twice(jnp.arange(4.0), scale=2.0).dtype == jnp.float64
    assert len(_kept(tmp_path)) == 2
    twice.clear_cache()  # this process's programs dropped: the kept file loads
    np.testing.assert_array_equal(np.asarray(twice(x, scale=3.0)), [0.0, 3.0, 6.0, 9.0])
    assert len(_kept(tmp_path)) == 3
    monkeypatch.setenv(programs.ENV_VAR, "0")
    np.testing.assert_array_equal(np.asarray(twice(x, scale=5.0)), [0.0, 5.0, 10.0, 15.0])
    assert len(_kept(tmp_path)) == 3  # off: nothing kept


def test_a_numpy_argument_takes_the_program_of_the_same_array_on_the_device(tmp_path, monkeypatch):
    """NumPy arguments (``shared_sizes.program_argument``: int64 and float64
    cast as the device would cast them) and the same arrays put on the
    device share one kept program; another shape is another program."""
    monkeypatch.setenv(programs.ENV_VAR, "1")
    monkeypatch.setattr(programs.config, "cache_dir", lambda: str(tmp_path))

    @programs.jit()
    def total(x, n):
        return x.sum() + n

    x, n = np.arange(5, dtype=np.float64), np.asarray(2, np.int64)
    assert float(total(jax.device_put(x), jax.device_put(n))) == 12.0
    assert float(total(x, n)) == 12.0 and float(total(x.astype(np.float32), np.int32(3))) == 13.0
    assert len(total._programs) == 1 and len(_kept(tmp_path)) == 1
    assert float(total(np.arange(6.0), n)) == 17.0
    assert len(total._programs) == 2


def test_a_static_argument_must_be_keyword_only():
    with pytest.raises(TypeError, match="static argument 'scale' must be keyword-only"):
        programs.jit(static_argnames=("scale",))(lambda x, scale: x * scale)


@pytest.mark.parametrize("kept", [False, True])
def test_small_cpu_programs_compile_with_the_platforms_options_and_fused_or_large_ones_without(
        tmp_path, monkeypatch, kept):
    """A program's compiler options are the platform rule's for the entries
    of its array arguments (``platforms.compiler_options``), with the kept
    programs on and off: made invalid, they fail the compile of a call of at
    most ``SMALL_PROGRAM_ELEMENTS`` entries, not of a larger one, not of a
    ``fused`` program and not of a call under a trace (compiled as part of
    its caller); ``lower(...).compile()`` compiles with the call's."""
    from jaxnn._src import platforms

    monkeypatch.setenv(programs.ENV_VAR, "1" if kept else "0")
    monkeypatch.setattr(programs.config, "cache_dir", lambda: str(tmp_path))
    monkeypatch.setattr(platforms, "SMALL_PROGRAM_ELEMENTS", 8)
    monkeypatch.setattr(platforms, "SMALL_PROGRAM_OPTIONS", (("xla_cpu_use_fusion_emitters", "not a bool"),))
    assert platforms.compiler_options(8, "cpu") == platforms.SMALL_PROGRAM_OPTIONS
    assert platforms.compiler_options(9, "cpu") == () and platforms.compiler_options(8, "gpu") == ()

    def total(x, n):
        return x.sum() * n

    plain, fused = programs.jit()(total), programs.jit(fused=True)(total)
    with pytest.raises(Exception, match="not a valid bool"):
        plain(np.ones(7, np.float32), 2.0)  # 7 + 1 entries
    with pytest.raises(Exception, match="not a valid bool"):  # compiled ahead of time as the call would be
        plain.lower(np.ones(7, np.float32), 2.0).compile()
    assert float(plain(np.ones(8, np.float32), 2.0)) == 16.0  # 9 entries: XLA's defaults
    assert float(fused(np.ones(7, np.float32), 2.0)) == 14.0
    assert float(jax.jit(lambda x: plain(x, 2.0))(np.ones(3, np.float32))) == 6.0
    monkeypatch.setattr(platforms, "SMALL_PROGRAM_OPTIONS", (("xla_cpu_use_fusion_emitters", False),))
    assert float(plain(np.ones(7, np.float32), 2.0)) == 14.0
    assert len(_kept(tmp_path)) == (3 if kept else 0)  # the large call, the fused one, the small one
