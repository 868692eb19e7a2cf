"""The ``ripley`` experiment, prototype filtering (paper 001 Fig. 2):
:class:`RipleyResult`, :func:`ripley` and :func:`format_ripley`."""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from typing import Optional, Sequence

import numpy as np

from jaxnn._src.experiments.common import Progress, table_rule
from jaxnn._src.experiments.contenders import BOOSTED

__all__ = ["RIPLEY_K", "RIPLEY_N_TRAIN", "RipleyResult", "ripley_settings", "ripley", "format_ripley"]


#: ripley's k and training set size (Ripley's 250 points)
RIPLEY_K, RIPLEY_N_TRAIN = 5, 250


@dataclasses.dataclass
class RipleyResult:
    """Test error vs θ on Ripley's data.

    Attributes:
      thetas: (T,) fractions of prototypes kept.
      methods: names of the rows of ``error``: the pruned UNN(exp), the pruned
        GNNB(log) and "k-NN sample" (k-NN on a random sample of the same size).
      error: (M, T) test error (k-NN sample: mean over ``n_draws`` draws).
      error_std: (M, T) standard deviation over the draws (0 for pruned models).
      size: (T,) prototypes kept (= sample size).
      leveraged: {"UNN(exp) T=θm", "GNNB(log) T=θm"} → (error (T,), kept (T,)):
        paper 001's own protocol — ⌈θm⌉ greedy rounds, then the examples
        leveraged (α ≠ 0 for some class) are the prototypes.
      unpruned_error: {method: test error of the unpruned model}.
      knn_error: test error of k-NN on the whole training set.
      bayes_test: error of the Bayes rule on this test set.
      bayes_mc: Monte-Carlo Bayes error of the problem.
    """

    thetas: np.ndarray
    methods: tuple
    error: np.ndarray
    error_std: np.ndarray
    size: np.ndarray
    leveraged: dict
    unpruned_error: dict
    knn_error: float
    bayes_test: float
    bayes_mc: float
    k: int
    n_train: int
    n_test: int
    n_draws: int
    seed: int
    seconds: float = 0.0


def ripley_settings(quick: bool, thetas, n_draws, n_mc) -> tuple:
    """(thetas, n_draws, n_mc) that :func:`ripley` runs with, the defaults (full or quick) filled in."""
    if thetas is None:
        thetas = (0.2, 0.5, 1.0) if quick else tuple(np.round(np.arange(1, 11) / 10, 1))
    n_draws = (2 if quick else 5) if n_draws is None else int(n_draws)
    n_mc = (100_000 if quick else 1_000_000) if n_mc is None else int(n_mc)
    return np.asarray(thetas, dtype=float), n_draws, n_mc


def ripley(
    *,
    quick: bool = False,
    seed: int = 0,
    k: int = RIPLEY_K,
    thetas: Optional[Sequence[float]] = None,
    n_draws: Optional[int] = None,
    n_train: int = RIPLEY_N_TRAIN,
    n_test: int = 1000,
    n_mc: Optional[int] = None,
    progress: bool = True,
) -> RipleyResult:
    """Paper 001 Fig. 2: prototype filtering on Ripley's problem.

    Two protocols.  Post hoc: UNN (exponential loss) and GNNB (logistic) are
    fit once with k neighbours (one pass); for each θ the model keeps the
    ⌈θ m⌉ examples with largest |α| (:func:`jaxnn.prune`, no refit), and plain
    k-NN runs on ``n_draws`` uniform random samples of the same size
    (:func:`jaxnn.knn_subsample`).  Paper 001's own (§4: "we replace
    parameter T by θ = T/m"; §3.2 [I.0.b], the boosting chooser): T = ⌈θ m⌉
    greedy rounds, after which the examples leveraged (α ≠ 0) are the
    prototypes — fewer than ⌈θ m⌉ when an example is chosen twice.

    Full: θ ∈ {0.1, …, 1.0}, 5 draws, 250 train / 1000 test (Ripley's sizes).
    Quick: θ ∈ {0.2, 0.5, 1.0}, 2 draws.
    """
    import jaxnn
    from jaxnn import datasets
    from jaxnn._src.prune import knn_subsample, prune

    t_start = time.perf_counter()
    thetas, n_draws, n_mc = ripley_settings(quick, thetas, n_draws, n_mc)
    sp = datasets.ripley(n_train=n_train, n_test=n_test, seed=seed)
    methods = ("UNN(exp)", "GNNB(log)", "k-NN sample")
    specs = {"UNN(exp)": BOOSTED["UNN(exp)"], "GNNB(log)": BOOSTED["GNNB(log)"]}
    bar = Progress(2 + thetas.size * (4 + n_draws), "ripley", progress)

    def err(model):
        return float(np.mean(np.asarray(jaxnn.predict(model, sp.X_test)) != sp.y_test))

    models = {}
    for name, kw in specs.items():
        bar.step(f"fit {name} k={k}")
        models[name] = jaxnn.fit(sp.X_train, sp.y_train, k=k, posterior="link", shrinkage=None, seed=seed, **kw)
    error = np.zeros((len(methods), thetas.size))
    error_std = np.zeros_like(error)
    size = np.zeros(thetas.size, dtype=np.int64)
    for t, theta in enumerate(thetas):
        for i, name in enumerate(specs):
            bar.step(f"θ={theta:.2f} {name}")
            pruned = prune(models[name], float(theta))
            error[i, t] = err(pruned)
            size[t] = pruned.X.shape[0]
        draws = []
        for r in range(n_draws):
            bar.step(f"θ={theta:.2f} k-NN sample {r + 1}/{n_draws}")
            draws.append(err(knn_subsample(sp.X_train, sp.y_train, float(theta), seed=seed + r, k=k, size=int(size[t]))))
        error[2, t], error_std[2, t] = float(np.mean(draws)), float(np.std(draws))
    leveraged = {f"{name} T=θm": (np.zeros(thetas.size), np.zeros(thetas.size, dtype=np.int64)) for name in specs}
    m = sp.X_train.shape[0]
    for t, theta in enumerate(thetas):
        for name, kw in specs.items():
            bar.step(f"θ={theta:.2f} {name}, T=θm greedy rounds")
            model = jaxnn.fit(sp.X_train, sp.y_train, k=k, posterior="link", shrinkage=None, seed=seed, chooser="greedy",
                              rounds=max(1, math.ceil(round(float(theta) * m, 9))), **kw)
            used = np.flatnonzero(np.any(np.asarray(model.alpha) != 0, axis=1))
            kept = dataclasses.replace(model, alpha=model.alpha[used], X=model.X[used], Y=model.Y[used])
            errors, sizes = leveraged[f"{name} T=θm"]
            errors[t] = err(kept) if used.size >= k else float("nan")
            sizes[t] = used.size
    bar.close()
    knn_full = knn_subsample(sp.X_train, sp.y_train, 1.0, k=k)
    return RipleyResult(
        thetas=thetas,
        methods=methods,
        error=error,
        error_std=error_std,
        size=size,
        leveraged=leveraged,
        unpruned_error={name: err(model) for name, model in models.items()},
        knn_error=err(knn_full),
        bayes_test=float(np.mean(datasets.ripley_bayes_predict(sp.X_test) != sp.y_test)),
        bayes_mc=datasets.ripley_bayes_error(n_mc=n_mc),
        k=k,
        n_train=n_train,
        n_test=n_test,
        n_draws=n_draws,
        seed=seed,
        seconds=time.perf_counter() - t_start,
    )


def format_ripley(result: RipleyResult, out=None) -> None:
    """θ, prototypes kept, and the test error of each method."""
    out = sys.stdout if out is None else out
    r = result
    print(
        f"Ripley (paper 001 Fig. 2): test error vs θ, k={r.k}, {r.n_train} train / {r.n_test} test points, "
        f"seed {r.seed}; k-NN on random samples of the same size: mean ± sd over {r.n_draws} draws",
        file=out,
    )
    head = f"{'θ':>6}{'kept':>6}" + "".join(f"{m:>12}" for m in r.methods[:2]) + f"{r.methods[2]:>20}"
    print(head, file=out)
    print(table_rule(len(head)), file=out)
    for t, theta in enumerate(r.thetas):
        row = f"{theta:>6.2f}{r.size[t]:>6d}" + "".join(f"{r.error[i, t]:>12.3f}" for i in range(2))
        row += f"{r.error[2, t]:>13.3f} ± {r.error_std[2, t]:.3f}"
        print(row, file=out)
    print(table_rule(len(head)), file=out)
    print("paper 001's protocol, T = ⌈θm⌉ greedy rounds, the leveraged examples kept (their number in brackets):",
          file=out)
    for name, (errors, sizes) in r.leveraged.items():
        cells = "  ".join(f"θ={theta:.1f} {e:.3f} [{n}]" for theta, e, n in zip(r.thetas, errors, sizes))
        print(f"  {name}: {cells}", file=out)
    unpruned = ", ".join(f"{m} {e:.3f}" for m, e in r.unpruned_error.items())
    print(f"unpruned: {unpruned}; k-NN (all {r.n_train} points) {r.knn_error:.3f}", file=out)
    print(f"Bayes rule on this test set: {r.bayes_test:.3f}; Monte-Carlo Bayes error: {r.bayes_mc:.3f}", file=out)
