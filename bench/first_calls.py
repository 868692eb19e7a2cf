"""Wall time of a new process's first calls (compilation included): not an asv
benchmark (asv times warm calls in one process) but a script, each run a fresh
process.  Compare two versions by alternating runs::

    python bench/first_calls.py fit-auto 250            # this checkout
    PYTHONPATH=/tmp/old python bench/first_calls.py fit-auto 250   # a copy: git archive REV jaxnn | tar -x -C /tmp/old
    python bench/first_calls.py ripley                  # fit + predict + predict_proba on Ripley's data, import included
    JAXNN_CACHE_DIR=/tmp/c python bench/first_calls.py iris   # the same calls on scikit-learn's iris: where the time goes
    python bench/first_calls.py small-domains          # 5 folds of fit(k="auto") + predict against an SVC grid search
    python bench/first_calls.py small-domains own-k    # the same, each k its own programs (SMALL_K_MAX_ROWS = 0)
    python bench/first_calls.py small-domains iris json  # one set, one JSON line (bench/bench_processes.py)
    JAXNN_CACHE_DIR=/tmp/c python bench/first_calls.py family   # uls, udt and ols fit + predict_proba on wine
    JAXNN_CACHE_DIR=/tmp/c python bench/first_calls.py grid-jobs 2   # GridSearchCV(n_jobs=2) of the estimator, breast cancer
    JAXNN_CACHE_DIR=/tmp/c python bench/first_calls.py grid-jobs 2 threading  # the same, joblib's workers threads
    python bench/first_calls.py warm 20000 16           # first and three warm fits (posterior="auto")
    JAXNN_CACHE_DIR=/tmp/c python bench/first_calls.py padded-queries 1000 16  # warm predict of 1 / 100 queries
    JAXNN_CACHE_DIR=/tmp/c python bench/first_calls.py tiny link   # warm fit + predict_proba of 150 problems of 12-60 points
    JAXNN_CACHE_DIR=/tmp/c python bench/first_calls.py folds iris  # warm default fits (k = 10) of five folds' training sets
    JAXNN_CACHE_DIR=/tmp/c python bench/first_calls.py folds iris auto  # the same folds: fit(k="auto") + predict
    python bench/first_calls.py steady 16384 16 10     # warm graph, fits from it (colored, default chooser), fit, predict_proba
    python bench/first_calls.py select 40000            # select: 2 ks × 2 losses × passes 1, 2, 4
    python bench/first_calls.py given 30000 50          # fit(neighbors=a given k-NN graph), posterior="auto"
    python bench/first_calls.py cv 503                  # cross_val_score of the estimator, cv = 5
    python bench/first_calls.py cv 2003 100             # the same on 100 Gaussian classes: the windowed scan
    python bench/first_calls.py curve 400               # learning_curve of the estimator: 5 sizes × 5 folds
    python bench/first_calls.py grid 500                # GridSearchCV of the estimator over k = 3, 5, 7, 9, 11, 15, cv = 5
    python bench/first_calls.py auto-k 2000             # fit(k="auto"): select's 4 ks, then the fit
    python bench/first_calls.py ks 500                  # fit and predict_proba at k = 3, 5, 7, 9, 11, 15
    python bench/first_calls.py folds-colored 2003      # 5 folds of fit(chooser="colored"), as on a GPU
    python bench/first_calls.py folds-baselines 2003    # 5 folds of baselines.sgd_fit and svm_fit
    python bench/first_calls.py auto-uci optdigits      # fit(k, loss, rounds="auto") on a random 2/3 of a UCI set
    python bench/first_calls.py split-uci spambase 8    # fit_split(n_splits=8, norm="l2") on the same

Modes: ``fit-auto`` / ``fit-link`` / ``fit-plain`` M (d = 8, two classes; the
defaults, ``posterior="link"``, and ``posterior="link", shrinkage=None``: the first
and a second fit), ``ripley``, ``iris`` (scikit-learn's iris as it loads it, float64 X and
integer y: the first fit + predict + predict_proba, split into tracing, lowering, compiling or
loading from the cache — JAX's ``jax.monitoring`` durations — and the rest, which holds the loading of
jaxnn's kept stage programs: ``JAXNN_PROGRAMS=0`` for JAX's cache alone), ``small-domains``
(on each of eight small bundled sets, five folds of ``fit(k="auto")`` + ``predict`` against the same
folds' ``GridSearchCV(SVC(), C ∈ {1, 10, 100}, γ ∈ {scale, 0.01, 0.1}, cv=3)`` fit + predict, in
this one process, compilation included: seconds, their ratio and test accuracies, and the
tracing, lowering and compiling of all of them; set names after the mode run those sets alone),
``family`` (the
default ``uls``, ``udt`` and ``ols`` fit + ``predict_proba`` on the bundled wine, in turn), ``warm`` M D (five Gaussian classes),
``padded-queries`` M D (the same data: medians of 21 warm ``predict`` / ``predict_proba`` calls of 1 and 100
queries, padded as the training points or to their own 128 rows, two alternating rounds), ``select`` M
(d = 16, ten classes), ``tiny`` [link] (150 problems of 12–60 points, 1–4 features, 2–4 classes, k
from 1 to 8, as tests/test_properties.py draws them: milliseconds a warm ``fit`` + ``predict_proba``,
the best of three rounds after a first that compiles; ``link``: ``posterior="link", shrinkage=None``,
else the defaults), ``folds`` NAME (a bundled set's five stratified folds' training sets, eight
default fits of each at k = 10 a round: milliseconds a warm fit, as for ``tiny``; ``auto``:
``fit(k="auto")`` and ``predict`` of the fold's other points instead), ``steady`` M D C (Gaussian
classes: the best of seven warm calls of the exact graph, a colored and a default-chooser
``posterior="link", shrinkage=None`` fit from it, the default fit and ``predict_proba`` of M
points), ``given`` M K (d = 16, four classes), ``cv`` M [C], ``curve`` M, ``grid`` M and
``auto-k`` M and ``ks`` M (d = 16, four classes), ``folds-colored`` M and ``folds-baselines`` M (the
same data, five folds by index mod 5), ``auto-uci`` NAME and ``split-uci`` NAME N (a bundled UCI set,
a random 2/3 of it, standardised); the last eleven print a first and a second call.  Prints seconds;
``jaxnn.__file__`` is printed too, to show which copy ran.  ``json`` as the last argument of
``small-domains``, ``iris`` and ``grid-jobs`` N BACKEND prints their numbers as JSON lines instead
(one per set for ``small-domains``), which bench/bench_processes.py reads.
"""

from __future__ import annotations

import json
import os
import sys
import time

#: the small bundled sets of the ``small-domains`` mode, in the order it runs them
SMALL_SETS = ("bupa", "ionosphere", "pima", "wdbc", "sonar", "vehicle", "iris", "wine")


#: the dict the one ``jax.monitoring`` listener of this process fills (JAX keeps listeners for good)
_FILLING: list = []


def _jax_durations(jax) -> dict:
    """Seconds by ``jax.monitoring`` event from now on, summed (filled as the process runs)."""
    if not _FILLING:
        jax.monitoring.register_event_duration_secs_listener(
            lambda event, seconds, **_: _FILLING[0].__setitem__(event, _FILLING[0].get(event, 0.0) + seconds))
        _FILLING.append(None)
    _FILLING[0] = {}
    return _FILLING[0]


def _compile_parts(spent: dict) -> dict:
    """Tracing, lowering and XLA's compiling (or loading from the cache) in ``spent``."""
    return {name: sum(v for event, v in spent.items() if event.endswith(suffix)) for name, suffix in
            (("tracing", "jaxpr_trace_duration"), ("lowering", "jaxpr_to_mlir_module_duration"),
             ("compiling or loading", "backend_compile_duration"))}


def main(argv: list[str]) -> None:
    # first calls compile: jaxnn's persistent compilation cache (on by default) off unless JAXNN_CACHE_DIR is set
    os.environ.setdefault("JAXNN_CACHE_DIR", "")
    start = time.perf_counter()
    import jax
    import numpy as np

    import jaxnn

    mode = argv[0] if argv else "fit-auto"
    rng = np.random.default_rng(0)

    def timed(call):
        t = time.perf_counter()
        out = call()
        jax.block_until_ready(jax.tree_util.tree_leaves(out))
        return time.perf_counter() - t

    if mode in ("fit-auto", "fit-link", "fit-plain"):
        m = int(argv[1]) if len(argv) > 1 else 250
        X = rng.normal(size=(m, 8)).astype(np.float32)
        y = (X[:, 0] + 0.5 * rng.normal(size=m) > 0).astype(int)
        how = {"fit-auto": {}, "fit-link": {"posterior": "link"},
               "fit-plain": {"posterior": "link", "shrinkage": None}}[mode]  # plain: no held-out fit
        times = [timed(lambda: jaxnn.fit(X, y, k=10, **how).alpha) for _ in range(2)]
        print(f"{mode} m={m}: first {times[0]:.3f} s, second {times[1]:.3f} s")
    elif mode == "ripley":
        data = jaxnn.datasets.ripley()
        model = jaxnn.fit(data.X_train, data.y_train, k=5)
        accuracy = float(np.mean(np.asarray(jaxnn.predict(model, data.X_test)) == data.y_test))
        np.asarray(jaxnn.predict_proba(model, data.X_test))
        print(f"ripley: {time.perf_counter() - start:.2f} s with the import, test accuracy {accuracy:.3f}")
    elif mode == "iris":
        from sklearn.datasets import load_iris

        spent = _jax_durations(jax)
        X, y = load_iris(return_X_y=True)
        total = timed(lambda: (jaxnn.predict(model := jaxnn.fit(X, y), X), jaxnn.predict_proba(model, X)))
        parts = _compile_parts(spent)
        parts["the rest"] = total - sum(parts.values())
        if "json" in argv[1:]:
            print(json.dumps({"seconds": total, **parts}))
        else:
            print(f"iris fit + predict + predict_proba: {total:.3f} s (" +
                  ", ".join(f"{name} {t:.3f}" for name, t in parts.items()) + ")")
    elif mode == "small-domains":
        from sklearn.model_selection import GridSearchCV, StratifiedKFold
        from sklearn.svm import SVC

        from jaxnn._src import shared_sizes

        if "own-k" in argv[1:]:  # each k its own search, boosting and rule (no small-data floor)
            shared_sizes.SMALL_K_MAX_ROWS = 0
        as_json = "json" in argv[1:]
        names = [a for a in argv[1:] if a not in ("own-k", "json")] or list(SMALL_SETS)
        grid = {"C": [1, 10, 100], "gamma": ["scale", 0.01, 0.1]}
        total = {"jaxnn": 0.0, "svc": 0.0}
        spent = _jax_durations(jax)
        for name in names:
            X, y = jaxnn.datasets.load(name)
            folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
            seconds, right = {}, {}
            for who in ("jaxnn", "svc"):
                t, hits = time.perf_counter(), 0
                for train, test in folds:
                    if who == "jaxnn":
                        guess = np.asarray(jaxnn.predict(jaxnn.fit(X[train], y[train], k="auto"), X[test]))
                    else:
                        guess = GridSearchCV(SVC(), grid, cv=3).fit(X[train], y[train]).predict(X[test])
                    hits += int(np.sum(guess == y[test]))
                seconds[who], right[who] = time.perf_counter() - t, hits / len(y)
                total[who] += seconds[who]
            if as_json:
                print(json.dumps({"set": name, "jaxnn_seconds": seconds["jaxnn"], "svc_seconds": seconds["svc"],
                                  "jaxnn_accuracy": right["jaxnn"], "svc_accuracy": right["svc"]}))
                continue
            print(f"{name:11s} jaxnn {seconds['jaxnn']:6.2f} s (accuracy {right['jaxnn']:.3f})   "
                  f"SVC grid {seconds['svc']:6.2f} s ({right['svc']:.3f})   ratio {seconds['jaxnn'] / seconds['svc']:.2f}")
        if not as_json:
            print(f"all {len(names)}: jaxnn {total['jaxnn']:.2f} s, SVC grid {total['svc']:.2f} s, "
                  f"ratio {total['jaxnn'] / total['svc']:.2f}")
            print("jaxnn's programs: " + ", ".join(f"{name} {t:.2f} s" for name, t in _compile_parts(spent).items()))
    elif mode == "family":  # paper 004's family: each member's default fit + predict_proba on wine, in turn
        X, y = jaxnn.datasets.load("wine")
        for name in ("uls", "udt", "ols"):
            print(f"family {name}: fit + predict_proba {timed(lambda: jaxnn.predict_proba(getattr(jaxnn, name)(X, y), X)):.3f} s")
    elif mode == "grid-jobs":  # GridSearchCV of the pipeline on breast cancer with n_jobs=N worker processes
        from sklearn.datasets import load_breast_cancer
        from sklearn.model_selection import GridSearchCV
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        from jaxnn.sklearn import BoostedKNNClassifier

        import joblib

        X, y = load_breast_cancer(return_X_y=True)
        jobs = int(argv[1]) if len(argv) > 1 else 1
        backend = argv[2] if len(argv) > 2 else "loky"  # "threading": the workers are threads of this process
        grid = GridSearchCV(make_pipeline(StandardScaler(), BoostedKNNClassifier()),
                            {"boostedknnclassifier__k": [5, 10, 20]}, cv=5, n_jobs=jobs)
        # the second search reuses the first's worker processes (joblib keeps them), imports and programs loaded
        with joblib.parallel_config(backend=backend):
            first, second = (timed(lambda: grid.fit(X, y) and None) for _ in range(2))
        best = grid.best_params_["boostedknnclassifier__k"]
        if "json" in argv[3:]:
            print(json.dumps({"first": first, "second": second, "best_k": best}))
        else:
            print(f"grid-jobs {jobs} ({backend}): first search {first:.2f} s, second {second:.2f} s, best k = {best}")
    elif mode == "warm":
        m, d = int(argv[1]), int(argv[2])
        centers = rng.normal(scale=2, size=(5, d))
        y = rng.integers(0, 5, m)
        X = (centers[y] + rng.normal(size=(m, d))).astype(np.float32)
        times = [timed(lambda: jaxnn.fit(X, y, k=10, seed=1).alpha) for _ in range(4)]
        print(f"warm m={m} d={d}: first {times[0]:.2f} s, warm " + " ".join(f"{t:.3f}" for t in times[1:]))
    elif mode == "padded-queries":  # warm predict of a small model's few queries, padded as its training points or not
        from jaxnn._src import shared_sizes

        m, d = int(argv[1]), int(argv[2])
        centers = rng.normal(scale=2, size=(5, d))
        y = rng.integers(0, 5, m)
        X = (centers[y] + rng.normal(size=(m, d))).astype(np.float32)
        model, Q = jaxnn.fit(X, y, k=10), X[:100] + 0.1
        limit, best = shared_sizes.QUERIES_AS_TRAINING_MAX_ROWS, {}
        for _ in range(2):  # alternating, medians of 21 warm calls each
            for padded in (True, False):
                shared_sizes.QUERIES_AS_TRAINING_MAX_ROWS = limit if padded else 0
                for n, call in ((1, jaxnn.predict), (1, jaxnn.predict_proba), (100, jaxnn.predict_proba)):
                    np.asarray(call(model, Q[:n]))
                    times = [timed(lambda: np.asarray(call(model, Q[:n]))) for _ in range(21)]
                    best.setdefault((padded, call.__name__, n), []).append(1e3 * float(np.median(times)))
        shared_sizes.QUERIES_AS_TRAINING_MAX_ROWS = limit
        for (padded, name, n), ms in best.items():
            print(f"padded-queries m={m} d={d}: {name} of {n} {'padded as the training points' if padded else 'own rows'}: "
                  + " / ".join(f"{t:.2f}" for t in ms) + " ms")
    elif mode == "tiny":  # the host's fixed cost of a small fit: every program compiled by the first round
        kw = dict(posterior="link", shrinkage=None) if argv[1:2] == ["link"] else {}
        problems = []
        for _ in range(150):
            m, d, C = int(rng.integers(12, 61)), int(rng.integers(1, 5)), int(rng.integers(2, 5))
            y = np.concatenate([np.arange(C), rng.integers(0, C, m - C)])
            X = rng.normal(scale=2.0, size=(C, d))[y] + rng.normal(size=(m, d))
            problems.append((X, y, int(rng.integers(1, min(8, m - 1) + 1))))

        def rounds():
            return [np.asarray(jaxnn.predict_proba(jaxnn.fit(X, y, k=k, **kw), X + 0.1)) for X, y, k in problems]

        times = [timed(rounds) for _ in range(4)]
        print(f"tiny {argv[1:2] or ['defaults']}: first round {times[0]:.2f} s, "
              f"then {1e3 * min(times[1:]) / len(problems):.2f} ms a fit + predict_proba")
    elif mode == "folds":  # a small default fit's warm host cost: five auxiliary fits, their scoring, the grids
        from sklearn.model_selection import StratifiedKFold

        X, y = jaxnn.datasets.load(argv[1] if len(argv) > 1 else "iris")
        folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
        auto = "auto" in argv[2:]  # fit(k="auto") and predict on the fold's other points

        def rounds():
            if auto:
                return [jaxnn.predict(jaxnn.fit(X[tr], y[tr], k="auto"), X[te]) for _ in range(8) for tr, te in folds]
            return [jaxnn.fit(X[tr], y[tr], k=10).alpha for _ in range(8) for tr, _ in folds]

        times = [timed(rounds) for _ in range(4)]
        print(f"folds {argv[1:2] or ['iris']}{' auto' if auto else ''}: first round {times[0]:.2f} s, "
              f"then {1e3 * min(times[1:]) / (8 * len(folds)):.2f} ms a {'k=auto fit + predict' if auto else 'default fit'}")
    elif mode == "steady":  # warm calls at a size whose programs are small (platforms.compiler_options)
        m, d = (int(a) for a in (argv[1:3] + ["16384", "16"][len(argv[1:3]):]))
        C = int(argv[3]) if len(argv) > 3 else 10
        X = rng.normal(size=(m, d)).astype(np.float32)
        y = rng.integers(0, C, m)
        X[:, :min(C, d)] += 2 * np.eye(C)[y][:, :d]
        nb = jaxnn.knn_graph(X, 10).indices
        model = jaxnn.fit(X, y, k=10)
        calls = {"graph": lambda: jaxnn.knn_graph(X, 10).indices,
                 "colored fit from the graph": lambda: jaxnn.fit(X, y, k=10, neighbors=nb, posterior="link",
                                                                 shrinkage=None, chooser="colored").alpha,
                 "default-chooser fit from the graph": lambda: jaxnn.fit(X, y, k=10, neighbors=nb, posterior="link",
                                                                         shrinkage=None).alpha,
                 "default fit": lambda: jaxnn.fit(X, y, k=10).alpha,
                 "predict_proba": lambda: jaxnn.predict_proba(model, X + 0.1)}

        def best(call):  # the first call compiles; then the best of 7
            timed(call)
            return min(timed(call) for _ in range(7))

        print(f"steady m={m} d={d} C={C}: " + ", ".join(f"{name} {1e3 * best(call):.1f} ms"
                                                       for name, call in calls.items()))
    elif mode == "select":
        m = int(argv[1]) if len(argv) > 1 else 40000
        centers = rng.normal(scale=1.5, size=(10, 16))
        y = rng.integers(0, 10, m)
        X = (centers[y] + rng.normal(size=(m, 16))).astype(np.float32)
        times = [timed(lambda: jaxnn.select(X, y, ks=(10, 20), losses=("logistic", "matsushita"),
                                            passes=(1, 2, 4)).scores) for _ in range(2)]
        print(f"select m={m}: first {times[0]:.2f} s, second {times[1]:.2f} s")
    elif mode in ("auto-uci", "split-uci"):
        name = argv[1] if len(argv) > 1 else "optdigits"
        X, y = jaxnn.datasets.letter_sample() if name == "letter-2561" else jaxnn.datasets.load(name)
        rows = np.sort(rng.permutation(len(y))[: 2 * len(y) // 3])
        X, y = jaxnn.datasets.standardize(X[rows], X[rows][:1])[0].astype(np.float32), y[rows]
        if mode == "auto-uci":
            call = lambda: jaxnn.fit(X, y, k="auto", loss="auto", rounds="auto", posterior="link", shrinkage=None)  # noqa: E731
        else:
            n = int(argv[2]) if len(argv) > 2 else 8
            call = lambda: jaxnn.ensemble.fit_split(X, y, n_splits=n, norm="l2", k=10).alpha  # noqa: E731
        times = [timed(call) for _ in range(2)]
        print(f"{mode} {name} m={len(y)}: first {times[0]:.2f} s, second {times[1]:.2f} s")
    elif mode in ("given", "cv", "curve", "grid", "auto-k", "ks", "folds-colored", "folds-baselines"):
        m = int(argv[1]) if len(argv) > 1 else 30000
        X = rng.normal(size=(m, 16)).astype(np.float32)
        y = (X[:, 0] + X[:, 1] > 0).astype(int) + 2 * (X[:, 2] > 0)
        if mode == "cv" and len(argv) > 2:  # cv M C: C Gaussian classes (C = 100: the windowed scan from m = 656)
            n_classes = int(argv[2])
            y = rng.integers(0, n_classes, m)
            X = (rng.normal(scale=2, size=(n_classes, 16))[y] + rng.normal(size=(m, 16))).astype(np.float32)
        if mode == "given":
            k = int(argv[2]) if len(argv) > 2 else 50
            nb = jaxnn.knn_graph(X, k)
            times = [timed(lambda: jaxnn.fit(X, y, k=k, neighbors=nb).alpha) for _ in range(2)]
            print(f"given m={m} k={k}: first {times[0]:.2f} s, second {times[1]:.2f} s")
        elif mode == "auto-k":
            times = [timed(lambda: jaxnn.fit(X, y, k="auto").alpha) for _ in range(2)]
            print(f"auto-k m={m}: first {times[0]:.2f} s, second {times[1]:.2f} s")
        elif mode == "ks":  # fit's defaults (posterior="auto") at six ks, each model's posteriors of 200 points
            def fits():
                return [np.asarray(jaxnn.predict_proba(jaxnn.fit(X, y, k=k), X[:200])) for k in (3, 5, 7, 9, 11, 15)]

            times = [timed(fits) for _ in range(2)]
            print(f"ks m={m}: first {times[0]:.2f} s, second {times[1]:.2f} s")
        elif mode.startswith("folds-"):
            from jaxnn import baselines

            folds = np.arange(m) % 5

            def fit(Xf, yf):
                if mode == "folds-colored":
                    return jaxnn.fit(Xf, yf, chooser="colored").alpha
                return baselines.sgd_fit(Xf, yf).W, baselines.svm_fit(Xf, yf).W

            times = [timed(lambda: [fit(X[folds != f], y[folds != f]) for f in range(5)]) for _ in range(2)]
            print(f"{mode} m={m}: first {times[0]:.2f} s, second {times[1]:.2f} s")
        else:
            from sklearn.model_selection import GridSearchCV, cross_val_score, learning_curve

            from jaxnn.sklearn import BoostedKNNClassifier

            if mode == "cv":
                call = lambda: cross_val_score(BoostedKNNClassifier(k=10), X, y, cv=5)  # noqa: E731
            elif mode == "curve":  # learning_curve's defaults: 5 sizes (10 % … 100 % of a training fold) × 5 folds
                call = lambda: learning_curve(BoostedKNNClassifier(k=10), X, y, cv=5)[1]  # noqa: E731
            else:
                grid = {"k": [3, 5, 7, 9, 11, 15]}
                call = lambda: GridSearchCV(BoostedKNNClassifier(), grid, cv=5).fit(X, y).best_score_  # noqa: E731
            times = [timed(call) for _ in range(2)]
            print(f"{mode} m={m}: first {times[0]:.2f} s, second {times[1]:.2f} s")
    else:
        raise SystemExit(f"unknown mode {mode!r}: fit-auto, fit-link, fit-plain, ripley, iris, small-domains, family, "
                         "grid-jobs, warm, padded-queries, tiny, select, given, cv, curve, grid, auto-k, ks, folds-colored, "
                         "folds-baselines, auto-uci or split-uci")
    print(f"(jaxnn from {jaxnn.__file__})")


def run(*argv: str) -> None:
    """:func:`main` of these arguments (``bench.common.in_child``'s call)."""
    main(list(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
