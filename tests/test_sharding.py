"""Sharding the class axis across devices gives the single-device result.

Runs in a subprocess with 4 forced host (CPU) devices, so it works on any machine.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from jaxnn._src import platforms

sys.path.insert(0, os.path.dirname(__file__))
from _data import cpu_devices_env  # noqa: E402

SCRIPT = textwrap.dedent(
    """
    import json, numpy as np, jax, jaxnn
    assert len(jax.devices()) == 4, jax.devices()
    rng = np.random.default_rng(0)
    y = rng.integers(0, 6, size=300)            # C = 6: padded to 8 on 4 devices
    X = rng.normal(size=(300, 4)) + np.eye(6)[y][:, :4] * 2
    out = {}
    # every chooser and every algorithm (the class split does not depend on the algorithm); the
    # trace is the real classes' risk (it counted the 2 padding columns' ψ(0) in: 0.455 for 0.273)
    for chooser, algo, loss in (("lazy", "gnnb", "logistic"), ("greedy", "unn", "exponential"),
                                ("colored", "n3", "calibrated_hinge")):
        kw = dict(k=7, algorithm=algo, loss=loss, chooser=chooser, posterior="link", shrinkage=None, trace=True)
        one, many = jaxnn.fit(X, y, **kw), jaxnn.fit(X, y, devices=4, **kw)  # boosting alone (held-out fits below)
        out[f"{chooser}-{algo}"] = float(np.max(np.abs(np.asarray(one.alpha) - np.asarray(many.alpha))))
        out[f"trace-{chooser}"] = float(np.max(np.abs(np.asarray(one.trace) - np.asarray(many.trace))))
        assert many.alpha.shape == (300, 6)
    # the exact graph with query rows split across devices (one pass and column-chunked kernels)
    from jaxnn._src import search as search_mod
    for kernel_min_m in (search_mod.CHUNKED_MIN_M, 1):
        search_mod.CHUNKED_MIN_M = kernel_min_m
        for n_dev in (4, 3):  # 300 rows: 3 uneven slices need padding
            a = jaxnn.knn_graph(X, 7, devices=n_dev, block_size=32)
            b = jaxnn.knn_graph(X, 7, block_size=32)
            assert np.array_equal(np.asarray(a.indices), np.asarray(b.indices)), (kernel_min_m, n_dev)
            qa = jaxnn.knn_query(X, X[:50] + 0.01, 5, devices=n_dev)
            qb = jaxnn.knn_query(X, X[:50] + 0.01, 5)
            assert np.array_equal(np.asarray(qa.indices), np.asarray(qb.indices)), (kernel_min_m, n_dev)
    search_mod.CHUNKED_MIN_M = 32768
    two = jaxnn.fit(X, y, k=7, devices=jax.devices()[:2], posterior="link")
    out["two"] = float(np.max(np.abs(np.asarray(two.alpha) - np.asarray(jaxnn.fit(X, y, k=7, posterior="link").alpha))))
    # select (fit's "auto" settings): the searches and the class axis on 4 devices, C = 6 padded to 8
    # (one loss: the class split does not depend on it)
    for chooser in ("lazy", "colored"):
        kw = dict(ks=(3, 7), losses=("logistic",), passes=(1, 2), chooser=chooser)
        assert jaxnn.select(X, y, devices=4, **kw).scores == jaxnn.select(X, y, **kw).scores, chooser
    # results come back where JAX puts them by default (they went to device 0)
    with jax.default_device(jax.devices()[3]):
        home = jaxnn.fit(X, y, k=7, devices=2, posterior="link")
        assert home.alpha.devices() == {jax.devices()[3]}, home.alpha.devices()
        assert jaxnn.knn_graph(X, 7, devices=2).indices.devices() == {jax.devices()[3]}
    # sample weights: replicated beside the sharded classes
    w = rng.gamma(1.0, 1.0, size=300)
    for chooser in ("lazy", "colored"):
        kw = dict(k=7, chooser=chooser, posterior="link", sample_weight=w)
        out[f"weighted-{chooser}"] = float(np.max(np.abs(np.asarray(jaxnn.fit(X, y, devices=4, **kw).alpha)
                                                         - np.asarray(jaxnn.fit(X, y, **kw).alpha))))
    # C = 5 on 4 devices: padded to 8 (a multiple of 4), not 6
    from jaxnn._src import sharding
    assert sharding.pad_classes(np.ones((2, 5)), 4).shape == (2, 8)
    y5 = y % 5
    five = jaxnn.fit(X, y5, k=7, devices=4, posterior="link")
    out["five"] = float(np.max(np.abs(np.asarray(five.alpha) - np.asarray(jaxnn.fit(X, y5, k=7, posterior="link").alpha))))
    assert sharding.resolve_devices(2) == jax.devices()[:2]  # an int: the first n
    try:  # a device named twice: a clear error (it was a bare AssertionError)
        jaxnn.fit(X, y, k=7, devices=[jax.devices()[0]] * 2)
        raise SystemExit("a repeated device was accepted")
    except ValueError as err:
        assert "more than once" in str(err), err
    print(json.dumps(out))
    """
)


@pytest.mark.slow  # a new process: JAX's start-up and every compilation
def test_sharded_classes_equal_single_device():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=cpu_devices_env(4), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    diffs = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, diff in diffs.items():
        assert diff <= 1e-5, (name, diff)


def test_bad_devices():
    import numpy as np
    import pytest

    import jaxnn

    X = np.random.default_rng(0).normal(size=(30, 2))
    y = np.arange(30) % 2
    with pytest.raises(ValueError, match="device"):
        jaxnn.fit(X, y, k=3, devices=999)
    with pytest.raises(TypeError, match="devices"):
        jaxnn.fit(X, y, k=3, devices=2.5)
    for bad in (True, []):  # a bool is no count, an empty list no devices
        with pytest.raises(TypeError, match="devices"):
            jaxnn.fit(X, y, k=3, devices=bad)


def test_platform_of_given_devices_is_theirs(monkeypatch):
    # CPU devices asked for on a GPU host: their platform, not the default backend's
    import jax

    from jaxnn._src import sharding

    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert platforms.platform(jax.devices("cpu")) == "cpu"


def test_gpu_matches_cpu_when_present():
    """On a machine with an NVIDIA GPU the jitted paths run there and agree with
    the CPU; elsewhere (CI) this skips."""
    import jax
    import numpy as np
    import pytest

    import jaxnn

    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    if not gpus:
        pytest.skip("no GPU backend")
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, size=400)
    X = rng.normal(size=(400, 8)) + np.eye(4)[y].repeat(2, axis=1)
    with jax.default_device(jax.devices("cpu")[0]):
        cpu = np.asarray(jaxnn.fit(X, y, k=8, chooser="colored", posterior="link").alpha)
    with jax.default_device(gpus[0]):
        model = jaxnn.fit(X, y, k=8, chooser="colored", posterior="link")
        assert model.alpha.devices() == {gpus[0]}
    np.testing.assert_allclose(np.asarray(model.alpha), cpu, rtol=1e-4, atol=1e-5)
