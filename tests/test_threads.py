"""fit's held-out choice on a second thread (jaxnn._src.threads): the caller's
JAX settings carried over, the choice made while the main fit boosts, and
an error on either thread raised by fit with no thread left running."""

from __future__ import annotations

import os
import sys
import threading

import jax
import numpy as np
import pytest

import jaxnn
from jaxnn._src import fitting as fit_mod
from jaxnn._src import plan as plan_mod
from jaxnn._src.threads import CARRIED, in_thread

sys.path.insert(0, os.path.dirname(__file__))
from _data import _blobs  # noqa: E402

THREAD = "jaxnn-held-out-choice"


def _none_left() -> bool:
    """No held-out choice thread still working (one that has handed back its
    answer ends within moments)."""
    for thread in threading.enumerate():
        if thread.name == THREAD:
            thread.join(timeout=10)
    return not any(t.name == THREAD for t in threading.enumerate())


def _settings():
    return {key: getattr(jax.config, key) for key, _ in CARRIED}


def test_in_thread_carries_the_callers_jax_settings_and_hands_back_errors():
    cpu = jax.devices("cpu")[0]
    outside = in_thread(_settings, "t").result(timeout=60)
    with jax.enable_x64(True), jax.default_device(cpu), jax.numpy_rank_promotion("raise"):
        inside = _settings()
        there = in_thread(_settings, "t").result(timeout=60)
    assert there == inside and inside != outside
    assert there["jax_enable_x64"] and there["jax_default_device"] == cpu
    assert in_thread(lambda: threading.current_thread().name, "a-name").result(timeout=60) == "a-name"

    def fails():
        raise KeyError("from the thread")

    with pytest.raises(KeyError, match="from the thread"):
        in_thread(fails, "t").result(timeout=60)


def _chosen_in(monkeypatch) -> list:
    """The (thread name, α dtype) of every boosted fit of the next fit: the main one, then the auxiliary."""
    seen, real = [], fit_mod._boosted

    def spy(data, spec, *found):
        out = real(data, spec, *found)
        seen.append((threading.current_thread().name, out.model.alpha.dtype))
        return out

    monkeypatch.setattr(fit_mod, "_boosted", spy)
    return seen


def test_a_fit_under_x64_makes_its_held_out_choice_in_float64(monkeypatch):
    X, y = _blobs(m=200, C=3, seed=2)
    seen = _chosen_in(monkeypatch)
    with jax.enable_x64(True):
        model = jaxnn.fit(X.astype(np.float64), y, k=5, seed=1)
    assert model.alpha.dtype == np.float64
    assert [name for name, _ in seen] == [threading.current_thread().name] + [THREAD] * 5  # five cross-fitted folds
    assert {dtype for _, dtype in seen} == {np.dtype(np.float64)}


def test_the_held_out_choice_runs_while_the_main_fit_boosts(monkeypatch):
    """Where the plan shares no sizes (large data) the choice needs the
    graph alone: the main fit's boosting here waits until the choice has
    started, which it could not if the two ran one after the other — and the
    model is the one the choice and the boosting make."""
    monkeypatch.setattr(plan_mod.shared_sizes, "SHARED_MAX_ROWS", 0)  # no plan shares sizes
    X, y = _blobs(m=200, C=3, seed=3)
    expected = jaxnn.fit(X, y, k=5, seed=1)
    started, real_choose, real_boosted = threading.Event(), fit_mod._choose_posterior, fit_mod._boosted

    def choose(*a, **kw):
        started.set()
        return real_choose(*a, **kw)

    def boosted(data, spec, *found):
        if data.X.shape[0] == X.shape[0]:  # the main fit
            assert started.wait(timeout=120), "the held-out choice did not start while the main fit boosted"
        return real_boosted(data, spec, *found)

    monkeypatch.setattr(fit_mod, "_choose_posterior", choose)
    monkeypatch.setattr(fit_mod, "_boosted", boosted)
    model = jaxnn.fit(X, y, k=5, seed=1)
    np.testing.assert_array_equal(np.asarray(model.alpha), np.asarray(expected.alpha))
    assert (model.posterior_temperature, model.leverage_shrinkage) == (expected.posterior_temperature,
                                                                       expected.leverage_shrinkage)


@pytest.mark.parametrize("shared", [True, False])
def test_an_error_on_either_thread_ends_the_fit_with_no_thread_left(monkeypatch, shared):
    if not shared:
        monkeypatch.setattr(plan_mod.shared_sizes, "SHARED_MAX_ROWS", 0)
    X, y = _blobs(m=200, C=3, seed=4)
    real = fit_mod._boosted

    def main_fails(data, spec, *found):
        if data.X.shape[0] == X.shape[0]:
            raise RuntimeError("the main boosting failed")
        return real(data, spec, *found)

    monkeypatch.setattr(fit_mod, "_boosted", main_fails)
    with pytest.raises(RuntimeError, match="the main boosting failed"):
        jaxnn.fit(X, y, k=5, seed=1)
    assert _none_left()
    monkeypatch.setattr(fit_mod, "_boosted", real)

    def choice_fails(*a, **kw):
        raise FloatingPointError("the held-out choice failed")

    monkeypatch.setattr(fit_mod, "fit_shrinkage", choice_fails)
    with pytest.raises(FloatingPointError, match="the held-out choice failed"):
        jaxnn.fit(X, y, k=5, seed=1)
    assert _none_left()


def test_on_devices_across_processes_the_choice_follows_the_boosting(monkeypatch):
    """A plan whose devices span processes launches programs every process
    runs together: the held-out choice then runs after the boosting on the
    calling thread (each process launches them in one order), with the same model."""
    from jaxnn._src import multihost

    for devices in (None, 1, "all", jax.devices()):
        assert not multihost.spans_processes(devices)
    with monkeypatch.context() as elsewhere:  # seen from another process, this process's devices are not its own
        elsewhere.setattr(jax, "process_index", lambda: 1)
        assert multihost.spans_processes(1) and multihost.spans_processes(jax.devices())
        assert not multihost.spans_processes(None)
    X, y = _blobs(m=200, C=3, seed=5)
    expected = jaxnn.fit(X, y, k=5, seed=1)
    monkeypatch.setattr(multihost, "spans_processes", lambda devices: True)
    seen = _chosen_in(monkeypatch)
    model = jaxnn.fit(X, y, k=5, seed=1)
    assert {name for name, _ in seen} == {threading.current_thread().name} and len(seen) == 6
    np.testing.assert_array_equal(np.asarray(model.alpha), np.asarray(expected.alpha))
    assert model.posterior_temperature == expected.posterior_temperature


def test_the_held_out_grids_use_threads_only_on_scores_large_enough(monkeypatch):
    """calibration.in_threads: the loop's answers, in its order, either way;
    a thread pool only where each grid point works on at least
    THREADED_MIN_ENTRIES held-out scores (below, starting one costs more than
    the grid point)."""
    from jaxnn._src import calibration

    pools = []
    real = calibration.ThreadPoolExecutor

    def spy(workers):
        pools.append(workers)
        return real(workers)

    monkeypatch.setattr(calibration, "ThreadPoolExecutor", spy)
    monkeypatch.setattr(calibration.os, "cpu_count", lambda: 2)
    items = list(range(7))
    want = [x * x - 1 for x in items]
    small = calibration.THREADED_MIN_ENTRIES - 1
    assert calibration.in_threads(lambda x: x * x - 1, items, small) == want and pools == []
    assert calibration.in_threads(lambda x: x * x - 1, items, small + 1) == want and pools == [2]
