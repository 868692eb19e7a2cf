"""Measurements of compiled programs and warm costs, as a script
(each run a fresh process; compare two versions by alternating them)::

    python bench/compile_checks.py demo                 # jaxnn demo without the cache: time, programs compiled
    python bench/compile_checks.py experiment uci       # jaxnn experiment NAME --quick, the same (uci, posteriors, splits, ripley)
    python bench/compile_checks.py colored-folds        # 5 folds of fit(chooser="colored"): colourings and scans compiled
    python bench/compile_checks.py select-colored       # 3 folds of select(chooser="colored"): the same
    python bench/compile_checks.py colored-warm         # warm colored fits from a given graph (medians)
    python bench/compile_checks.py baselines-warm       # warm sgd_fit / svm_fit (medians)
    python bench/compile_checks.py proba-mix            # warm predict_proba from given neighbours at λ = 0 and 1
    python bench/compile_checks.py split-folds 503      # 5 folds of fit_split + predict_proba_split: time, programs
    python bench/compile_checks.py split-warm           # warm fit_split / predict_proba_split, m = 500 and 8000 (medians)
    python bench/compile_checks.py select-search        # select's search (k = 50) finding 50 vs shared_k(50) = 64, warm
    PYTHONPATH=/tmp/old python bench/compile_checks.py demo   # a copy: git archive REV jaxnn | tar -x -C /tmp/old

Programs are counted with ``jax.monitoring``'s compile-duration events, by
name.  First calls for whole workflows are in ``bench/first_calls.py``
(``folds-colored``, ``folds-baselines``).
"""

from __future__ import annotations

import collections
import io
import os
import sys
import time


def _compile_counter():
    """{program name: [count, seconds]} filled by XLA compilations from now on."""
    import jax.monitoring

    compiled = collections.defaultdict(lambda: [0, 0.0])

    def listen(event, seconds, fun_name=None, **_):
        if event.endswith("backend_compile_duration"):
            compiled[fun_name][0] += 1
            compiled[fun_name][1] += seconds

    jax.monitoring.register_event_duration_secs_listener(listen)
    return compiled


def _report(compiled, top: int = 12) -> None:
    print(f"programs compiled: {sum(c for c, _ in compiled.values())} "
          f"({sum(s for _, s in compiled.values()):.1f} s)")
    for name, (count, seconds) in sorted(compiled.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {name:40s} {count:4d} {seconds:6.2f} s")


def _median_ms(call, repeat: int = 9) -> float:
    import jax
    import numpy as np

    call(), call()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        jax.block_until_ready(call())
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def _blobs(m: int, C: int, d: int, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, m)
    return (rng.normal(scale=2.0, size=(C, d))[y] + rng.normal(size=(m, d))).astype(np.float32), y


def _four_classes(m: int, d: int):
    """bench/common.py's four_class_points (this script runs standalone)."""
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(m, d)).astype(np.float32)
    return X, (X[:, 0] + X[:, 1] > 0).astype(int) + 2 * (X[:, 2] > 0)


def main(argv: list[str]) -> None:
    os.environ.setdefault("JAXNN_CACHE_DIR", "")  # compilations measured: jaxnn's persistent cache (on by default) off
    mode = argv[0] if argv else "demo"
    if mode in ("demo", "experiment"):
        os.environ["JAXNN_CACHE_DIR"] = ""  # no persistent cache: every program compiles
        compiled = _compile_counter()
        from jaxnn._src import cli

        start = time.perf_counter()
        if mode == "demo":
            cli.demo(out=io.StringIO())
        else:
            cli.main(["experiment", argv[1] if len(argv) > 1 else "uci", "--quick", "--no-progress"])
        print(f"{mode}: {time.perf_counter() - start:.1f} s")
        _report(compiled)
        return

    import numpy as np

    import jaxnn
    from jaxnn._src import schedule

    if mode == "colored-folds":  # five folds of 824 points, k = 6, posterior="auto"
        X, y = _blobs(1030, 3, 6, 12)
        folds = np.arange(1030) % 5
        for f in range(5):
            jaxnn.fit(X[folds != f], y[folds != f], k=6, chooser="colored")
            print(f"fold {f}: colourings {schedule._batched_colors._cache_size()}, "
                  f"scans {schedule.boost_colored._cache_size()}")
    elif mode == "select-colored":  # select's default 4 ks × 2 losses × passes 1, 2, 4
        X, y = _blobs(1030, 3, 6, 12)
        folds = np.arange(1030) % 5
        for f in range(3):
            chosen = jaxnn.select(X[folds != f], y[folds != f], chooser="colored")
            print(f"fold {f}: k = {chosen.k}, colourings {schedule._batched_colors._cache_size()}, "
                  f"scans {schedule.boost_colored._cache_size()}")
    elif mode == "colored-warm":
        for m, C in ((2000, 4), (8000, 10), (4000, 400)):
            X, y = _blobs(m, C, 16, 0)
            nb = jaxnn.knn_graph(X, 10)
            ms = _median_ms(lambda: jaxnn.fit(X, y, k=10, chooser="colored", posterior="link", shrinkage=None, neighbors=nb).alpha)
            print(f"colored fit m={m} C={C}: {ms:.1f} ms")
    elif mode == "baselines-warm":
        from jaxnn import baselines

        rng = np.random.default_rng(0)
        for m, d, C in ((2000, 16, 5), (10000, 2, 3), (16000, 64, 10)):
            X = rng.normal(size=(m, d)).astype(np.float32)
            y = rng.integers(0, C, m)
            X[:, 0] += y
            for name, fit in (("sgd_fit", baselines.sgd_fit), ("svm_fit", baselines.svm_fit)):
                print(f"{name} {m} x {d}, C={C}: {_median_ms(lambda: fit(X, y).W, repeat=5):.1f} ms")
    elif mode == "proba-mix":
        import dataclasses

        X, y = _blobs(5000, 5, 16, 0)
        model = jaxnn.fit(X, y, k=10, posterior="link", shrinkage=None)
        nb = np.asarray(jaxnn.knn_query(X, X[:2000] + 0.1, 10).indices)
        for lam in (0.0, 1.0):
            mixed = dataclasses.replace(model, posterior_mix=lam, posterior_temperature=0.0)  # the link or the votes
            print(f"predict_proba(neighbors=), λ = {lam:g}: "
                  f"{_median_ms(lambda: jaxnn.predict_proba(mixed, neighbors=nb), repeat=30):.2f} ms")
    elif mode == "split-folds":  # the blocks padded to shared sizes
        m = int(argv[1]) if len(argv) > 1 else 503
        X, y = _four_classes(m, 32)
        folds = np.arange(m) % 5
        compiled = _compile_counter()
        start = time.perf_counter()
        for f in range(5):
            model = jaxnn.ensemble.fit_split(X[folds != f], y[folds != f], n_splits=4, k=10)
            jaxnn.ensemble.predict_proba_split(model, X[folds == f])
        print(f"5 folds of fit_split + predict_proba_split, m={m}: {time.perf_counter() - start:.2f} s")
        _report(compiled)
    elif mode == "split-warm":
        for m in (500, 8000):
            X, y = _four_classes(m, 32)
            model = jaxnn.ensemble.fit_split(X, y, n_splits=4, k=10)
            fit_ms = _median_ms(lambda: jaxnn.ensemble.fit_split(X, y, n_splits=4, k=10).alpha, repeat=5 if m > 1000 else 9)
            proba_ms = _median_ms(lambda: jaxnn.ensemble.predict_proba_split(model, X[:1000]))
            print(f"m={m}: fit_split {fit_ms:.1f} ms, predict_proba_split(1000) {proba_ms:.1f} ms")
    elif mode == "select-search":  # one process: the search select runs, at k_max and at shared_k(k_max)
        from jaxnn._src import graph

        X, y = _four_classes(2000, 16)
        for rep in range(3):
            for share in (True, False):
                ms = _median_ms(lambda: graph.graph_and_query(X[:1500], X[1500:], 50, share_k=share))
                print(f"graph_and_query(1500 + 500 points, k=50, share_k={share}): {ms:.1f} ms")
    else:
        raise SystemExit(f"unknown mode {mode!r}: demo, experiment NAME, colored-folds, select-colored, "
                         "colored-warm, baselines-warm, proba-mix, split-folds [M], split-warm or select-search")
    print(f"(jaxnn from {jaxnn.__file__})")


if __name__ == "__main__":
    main(sys.argv[1:])
