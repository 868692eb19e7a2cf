"""Fits across processes under jax.distributed (jaxnn._src.multihost): two local
CPU processes (coordinator on 127.0.0.1, gloo collectives), each giving its
own rows, fit the model one process fits on all of them, and predict their
own queries with its labels; a process with other columns ends both with an
error naming it.  ``JAXNN_MULTIHOST_PLATFORM`` (default ``cpu``) puts the two
processes on another platform (``cuda``: bench/gpu_check.sh).
"""

import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jaxnn

pytestmark = pytest.mark.slow  # two processes a test

#: process P of 2: its half of the rows (the first 130 or the other 110), a default fit and a
#: posterior="link" fit, each process's own queries predicted; writes OUT.P.npz.  EXTRA: 1,
#: process 1 gives a fifth column; 2, process 1 leaves before the fit (heartbeats every 5 s)
SCRIPT = textwrap.dedent(
    """
    import sys
    import jax
    pid, port, out, extra = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=pid,
                               initialization_timeout=120, heartbeat_timeout_seconds=100 if extra < 2 else 5)
    import os, time
    import numpy as np
    if extra == 2 and pid == 1:  # lost before the fit
        os._exit(3)
    sys.path.insert(0, TESTS)
    from test_multihost import NAMES, data
    import jaxnn
    X, y, Q = data()
    rows = slice(0, 130) if pid == 0 else slice(130, None)
    Xp = X[rows] if not (extra and pid == 1) else np.hstack([X[rows], X[rows][:, :1]])
    auto = jaxnn.fit(Xp, NAMES[y[rows]], k=5)  # string labels
    link = jaxnn.fit(Xp, y[rows], k=5, posterior="link", shrinkage=None)
    if extra == 2:
        print("a model without process 1", flush=True)
        time.sleep(30)  # the lost process noticed meanwhile all the same
    mine = Q[pid::2]
    np.savez(f"{out}.{pid}.npz", auto_alpha=np.asarray(auto.alpha), link_alpha=np.asarray(link.alpha),
             graph=np.asarray(jaxnn.knn_graph(X, 5).indices),
             posterior=np.array([auto.posterior_temperature, auto.leverage_shrinkage, auto.posterior_weight]),
             labels=np.asarray(jaxnn.predict(auto, mine)), proba=np.asarray(jaxnn.predict_proba(auto, mine)))
    jax.distributed.shutdown()
    """
).replace("TESTS", repr(os.path.dirname(__file__)))


#: the default fit's labels: strings of other lengths
NAMES = np.array(["a", "bb", "a much longer label"])


def data():
    """240 points of three Gaussian classes in 4 dimensions, and 60 queries."""
    rng = np.random.default_rng(5)
    y = np.arange(300) % 3
    X = rng.normal(size=(300, 4)) + 2.5 * np.eye(4)[y]
    return X[:240], y[:240], X[240:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _two_processes(tmp_path, extra=0):
    """((returncode, stdout + stderr) of each process)."""
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAXNN_MULTIHOST_PLATFORM", "cpu"))
    port, out = _free_port(), str(tmp_path / "out")
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, str(p), str(port), out, str(extra)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in range(2)]
    results = []
    for proc in procs:
        try:
            out_text, err = proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise
        results.append((proc.returncode, out_text + err))
    return out, results


def test_two_processes_fit_the_one_process_model(tmp_path):
    """Each process's fit on its own rows is the fit on all of them: the same
    graph, α to float32 rounding, the same posterior choice; each process's
    labels (strings) and posteriors of its queries are the one model's."""
    out, results = _two_processes(tmp_path)
    for code, err in results:
        assert code == 0, err[-3000:]
    X, y, Q = data()
    auto = jaxnn.fit(X, NAMES[y], k=5)
    link = jaxnn.fit(X, y, k=5, posterior="link", shrinkage=None)
    for pid in range(2):
        with np.load(f"{out}.{pid}.npz") as got:
            np.testing.assert_array_equal(got["graph"], np.asarray(jaxnn.knn_graph(X, 5).indices))
            np.testing.assert_allclose(got["link_alpha"], np.asarray(link.alpha), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got["auto_alpha"], np.asarray(auto.alpha), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got["posterior"], [auto.posterior_temperature, auto.leverage_shrinkage,
                                                          auto.posterior_weight], rtol=1e-5)
            mine = Q[pid::2]
            np.testing.assert_array_equal(got["labels"], np.asarray(jaxnn.predict(auto, mine)))
            np.testing.assert_allclose(got["proba"], np.asarray(jaxnn.predict_proba(auto, mine)), atol=1e-5)


def test_a_process_with_other_columns_ends_every_process_naming_it(tmp_path):
    _, results = _two_processes(tmp_path, extra=1)
    for code, err in results:
        assert code != 0
        assert "process 1 has other features than process 0 (5 against 4)" in err, err[-3000:]


def test_a_process_lost_before_the_fit_ends_the_others_without_a_model(tmp_path):
    """JAX's coordination service notices the lost process (no heartbeat for
    5 s here; 100 s by default) and ends the other with an error naming it:
    no model is returned."""
    _, (first, second) = _two_processes(tmp_path, extra=2)
    assert second[0] == 3
    assert first[0] != 0 and "a model without process 1" not in first[1]
    assert "stopped sending heartbeats" in first[1], first[1][-3000:]


def test_a_process_without_its_coordinator_ends_after_the_timeout():
    """Process 1 of 2 with nobody at the coordinator's address: JAX ends it
    once ``initialization_timeout`` (2 s here) has passed, saying that
    registering with the coordinator ran out of time — no hang
    (docs/guide/large-data.md)."""
    script = ("import jax; jax.distributed.initialize(coordinator_address='127.0.0.1:%d', num_processes=2, "
              "process_id=1, initialization_timeout=2); print('joined')" % _free_port())
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "joined" not in proc.stdout
    assert "DEADLINE_EXCEEDED" in proc.stderr and "RegisterTask" in proc.stderr, proc.stderr[-3000:]


def test_one_process_is_not_joined():
    from jaxnn._src import multihost

    assert not multihost.joined() and multihost.process_rows(10) == (0, 10)
