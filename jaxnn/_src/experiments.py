"""Reproductions of the papers' experiments: ``jaxnn experiment NAME``.

Each experiment is a function returning a result dataclass (numpy arrays and
plain Python values) with a matching ``format_*`` function that prints a
plain-text table:

========================  ==================================================
``ripley``                paper 001 Fig. 2: test error vs θ on Ripley's data
                          for UNN(exp) and GNNB(log) pruned to the fraction θ
                          of prototypes with largest |α| (:func:`jaxnn.prune`)
                          and for k-NN on a random sample of the same size
                          (:func:`jaxnn.knn_subsample`), k = 5.
``uci``                   papers 000/001: stratified cross-validation on
                          bundled UCI domains; k-NN, UNN, GNNB (3 losses),
                          N³, jaxnn-auto, SGD, linear SVM and a tuned RBF-SVM;
                          accuracy, macro F, macro recall, train/test time.
``posteriors``            paper 003 Table 3 / Fig. 2: KL divergence (eq. 32)
                          of estimated to true posteriors on C = 3 Gaussians
                          of standard deviation σ.
``splits``                papers 000 §6.4 / 002 §6.2: divide and conquer over
                          n blocks of features, three generalised means.
========================  ==================================================

``run(name, quick=..., plot_dir=...)`` runs one by name (``EXPERIMENTS``),
prints its table and optionally writes PNG figures (matplotlib);
:func:`main` is the ``jaxnn experiment`` command line, also reachable as
``python -m jaxnn._src.experiments NAME``.  ``quick=True`` runs a small
version (4–90 s each on two CPU cores; uci, mostly compilation, is the longest).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import tempfile
import time
import warnings
from typing import Callable, Optional, Sequence

import numpy as np

__all__ = [
    "EXPERIMENTS",
    "FORMATTERS",
    "RipleyResult",
    "UCIResult",
    "PosteriorsResult",
    "SplitsResult",
    "ripley",
    "uci",
    "posteriors",
    "splits",
    "format_ripley",
    "format_uci",
    "format_posteriors",
    "format_splits",
    "plot_ripley",
    "plot_uci",
    "plot_posteriors",
    "plot_splits",
    "run",
    "main",
]


# --------------------------------------------------------------------------
# small helpers: progress line, timing, folds, ranks
# --------------------------------------------------------------------------


class _Progress:
    """A dependency-free progress line on stderr: ``[ 12/40] uci: pima fold 3 GNNB(log)``.

    On a terminal the line is redrawn in place; otherwise (a log file) one line
    per step is written, with the elapsed time.
    """

    def __init__(self, total: int, name: str, enabled: bool = True, stream=None):
        self.total = max(1, int(total))
        self.name = name
        self.enabled = bool(enabled)
        self.stream = sys.stderr if stream is None else stream
        self.count = 0
        self.t0 = time.perf_counter()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._width = 0

    def step(self, message: str) -> None:
        """Announce the step about to run (counts it)."""
        self.count += 1
        if not self.enabled:
            return
        w = len(str(self.total))
        line = f"[{self.count:>{w}}/{self.total}] {self.name}: {message} ({time.perf_counter() - self.t0:.0f}s)"
        if self.tty:
            pad = max(0, self._width - len(line))
            self.stream.write("\r" + line + " " * pad)
            self._width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty and self._width:
            self.stream.write("\n")
            self.stream.flush()


def _block(x):
    """Wait for asynchronous JAX work inside ``x`` (a pytree or anything)."""
    import jax

    for leaf in jax.tree_util.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def _timed(fn: Callable):
    t0 = time.perf_counter()
    out = _block(fn())
    return out, time.perf_counter() - t0


def _stratified_folds(y, n_folds: int, seed: int) -> np.ndarray:
    """(n,) fold ids in 0..n_folds−1: per class a seeded shuffle dealt
    round-robin (continuing across classes), so folds are stratified and
    their sizes differ by at most one."""
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    folds = np.empty(y.shape[0], dtype=np.int64)
    offset = 0
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        folds[idx] = (offset + np.arange(idx.size)) % n_folds
        offset += idx.size
    return folds


def _stratified_subsample(y, n: int, seed: int) -> np.ndarray:
    """Sorted indices of a stratified random subsample of size ≈ n (≥ 2 per class where possible)."""
    y = np.asarray(y)
    if n >= y.shape[0]:
        return np.arange(y.shape[0])
    rng = np.random.default_rng(seed)
    keep = []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        take = min(idx.size, max(2, int(round(n * idx.size / y.shape[0]))))
        keep.append(rng.choice(idx, size=take, replace=False))
    return np.sort(np.concatenate(keep))


def _rank_desc(values: np.ndarray) -> np.ndarray:
    """Ranks (1 = largest), ties get their average rank; NaN gets NaN."""
    v = np.asarray(values, dtype=float)
    out = np.full(v.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(v))
    for i in ok:
        greater = np.sum(v[ok] > v[i])
        equal = np.sum(v[ok] == v[i])
        out[i] = greater + (equal + 1) / 2.0
    return out


def _nanmean(a, axis=None):
    """np.nanmean without the all-NaN RuntimeWarning (all-NaN → NaN)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(np.asarray(a, dtype=float), axis=axis)


def _fmt(x, spec: str = ".3f", width: int = 8) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)) or (isinstance(x, np.floating) and np.isnan(x)):
        return f"{'—':>{width}}"
    return f"{x:>{width}{spec}}"


def _rule(width: int) -> str:
    return "-" * width


def _check_domains(domains) -> tuple:
    """The domain names, all checked before any runs (a typo surfaced only
    when the loop reached it, after the domains before it had run)."""
    from jaxnn import datasets

    domains = tuple(domains)
    known = tuple(datasets.names()) + ("letter-2561",)
    unknown = [d for d in domains if d not in known]
    if unknown:
        raise ValueError(f"unknown domain(s) {', '.join(map(repr, unknown))}; choose from: {', '.join(known)}")
    return domains


def _load_domain(name: str, seed: int = 0):
    """(X, y) of a bundled domain; ``letter-2561`` is the stratified
    2561-row sample of paper 000 (:func:`jaxnn.datasets.letter_sample`)."""
    from jaxnn import datasets

    if name == "letter-2561":
        return datasets.letter_sample(2561, seed=0)
    return datasets.load(name)


# --------------------------------------------------------------------------
# contenders
# --------------------------------------------------------------------------

#: Boosted leveraged k-NN contenders: name → jaxnn.fit keyword arguments.
BOOSTED = {
    "UNN(exp)": dict(algorithm="unn", loss="exponential"),
    "GNNB(log)": dict(algorithm="gnnb", loss="logistic"),
    "GNNB(mat)": dict(algorithm="gnnb", loss="matsushita"),
    "GNNB(squared)": dict(algorithm="gnnb", loss="squared"),
    "N3(hinge)": dict(algorithm="n3", loss="calibrated_hinge"),
}
KNN_METHODS = ("k-NN",) + tuple(BOOSTED)
_SECONDARY = ("GNNB(mat)", "GNNB(squared)", "N3(hinge)")
OTHER_METHODS = ("jaxnn-auto", "SGD", "LinSVM", "RBF-SVM")
UCI_METHODS = KNN_METHODS + OTHER_METHODS
UCI_DOMAINS = ("bupa", "ionosphere", "pima", "satimage", "segment", "optdigits", "letter-2561", "letter", "wdbc", "iris")
UCI_QUICK_DOMAINS = ("iris", "wdbc", "bupa")
RBF_GRID = {"C": [1, 10, 100], "gamma": ["scale", 0.1]}


def _fit_contender(method: str, k: int, Xtr, ytr, *, seed: int, rbf_max: int):
    """Fit one contender; returns (model, predict function, info string)."""
    import jaxnn
    from jaxnn._src import baselines as bl

    if method == "k-NN":
        return bl.knn_fit(Xtr, ytr, k=k), bl.predict, ""
    if method in BOOSTED:
        # posterior="link": only predictions (argmax H) are used here, so the
        # auxiliary fit of posterior="auto" is skipped; labels are unaffected.
        return jaxnn.fit(Xtr, ytr, k=k, posterior="link", seed=seed, **BOOSTED[method]), jaxnn.predict, ""
    if method == "jaxnn-auto":
        model = jaxnn.fit(Xtr, ytr, k="auto", loss="auto", rounds="auto", posterior="link", seed=seed)
        return model, jaxnn.predict, f"k={model.k} {model.loss.name} x{model.rounds // Xtr.shape[0]}"
    if method == "SGD":
        return bl.sgd_fit(Xtr, ytr, seed=seed), bl.predict, ""
    if method == "LinSVM":
        return bl.svm_fit(Xtr, ytr, seed=seed), bl.predict, ""
    if method == "RBF-SVM":
        from sklearn.model_selection import GridSearchCV
        from sklearn.svm import SVC

        sub = _stratified_subsample(ytr, rbf_max, seed)
        full = sub.size == ytr.shape[0]
        gs = GridSearchCV(SVC(kernel="rbf"), RBF_GRID, cv=3, n_jobs=1, refit=full)
        gs.fit(Xtr[sub], ytr[sub])
        model = gs.best_estimator_ if full else SVC(kernel="rbf", **gs.best_params_).fit(Xtr, ytr)
        info = f"C={gs.best_params_['C']} gamma={gs.best_params_['gamma']}" + ("" if full else f" (grid on {sub.size})")
        return model, (lambda mdl, X: mdl.predict(X)), info
    raise ValueError(f"unknown method {method!r}; use one of {UCI_METHODS}")


# --------------------------------------------------------------------------
# 1. ripley: prototype filtering (paper 001 Fig. 2)
# --------------------------------------------------------------------------


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


def ripley(
    *,
    quick: bool = False,
    seed: int = 0,
    k: int = 5,
    thetas: Optional[Sequence[float]] = None,
    n_draws: Optional[int] = None,
    n_train: int = 250,
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
    if thetas is None:
        thetas = (0.2, 0.5, 1.0) if quick else tuple(np.round(np.arange(1, 11) / 10, 1))
    n_draws = (2 if quick else 5) if n_draws is None else int(n_draws)
    n_mc = (100_000 if quick else 1_000_000) if n_mc is None else int(n_mc)
    thetas = np.asarray(thetas, dtype=float)
    sp = datasets.ripley(n_train=n_train, n_test=n_test, seed=seed)
    methods = ("UNN(exp)", "GNNB(log)", "k-NN sample")
    specs = {"UNN(exp)": BOOSTED["UNN(exp)"], "GNNB(log)": BOOSTED["GNNB(log)"]}
    bar = _Progress(2 + thetas.size * (4 + n_draws), "ripley", progress)

    def err(model):
        return float(np.mean(np.asarray(jaxnn.predict(model, sp.X_test)) != sp.y_test))

    models = {}
    for name, kw in specs.items():
        bar.step(f"fit {name} k={k}")
        models[name] = jaxnn.fit(sp.X_train, sp.y_train, k=k, posterior="link", seed=seed, **kw)
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
            model = jaxnn.fit(sp.X_train, sp.y_train, k=k, posterior="link", seed=seed, chooser="greedy",
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
    print(_rule(len(head)), file=out)
    for t, theta in enumerate(r.thetas):
        row = f"{theta:>6.2f}{r.size[t]:>6d}" + "".join(f"{r.error[i, t]:>12.3f}" for i in range(2))
        row += f"{r.error[2, t]:>13.3f} ± {r.error_std[2, t]:.3f}"
        print(row, file=out)
    print(_rule(len(head)), file=out)
    print("paper 001's protocol, T = ⌈θm⌉ greedy rounds, the leveraged examples kept (their number in brackets):",
          file=out)
    for name, (errors, sizes) in r.leveraged.items():
        cells = "  ".join(f"θ={theta:.1f} {e:.3f} [{n}]" for theta, e, n in zip(r.thetas, errors, sizes))
        print(f"  {name}: {cells}", file=out)
    unpruned = ", ".join(f"{m} {e:.3f}" for m, e in r.unpruned_error.items())
    print(f"unpruned: {unpruned}; k-NN (all {r.n_train} points) {r.knn_error:.3f}", file=out)
    print(f"Bayes rule on this test set: {r.bayes_test:.3f}; Monte-Carlo Bayes error: {r.bayes_mc:.3f}", file=out)


# --------------------------------------------------------------------------
# 2. uci: cross-validation on UCI domains
# --------------------------------------------------------------------------

_METRICS = ("accuracy", "f_measure", "recall", "train_s", "test_s")
_METRIC_TITLES = {
    "accuracy": "test accuracy",
    "f_measure": "macro F-measure",
    "recall": "macro recall",
    "train_s": "train time (s, compile included)",
    "test_s": "test time (s, compile included)",
}


@dataclasses.dataclass
class UCIResult:
    """Cross-validated scores of every contender on every domain.

    Attributes:
      domains: D domain names.
      contenders: N contender names ("GNNB(log) k=10", "jaxnn-auto", …).
      methods: (N,) base method of each contender.
      ks: (N,) k of each contender (0 where it has none).
      accuracy, f_measure, recall, train_s, test_s: (D, N, F) per fold
        (NaN where a contender failed or was not run).
      info: {(domain, contender): [per-fold string]} (auto's choices, RBF grid).
      sizes: {domain: (n, d, C)}.
      notes: footnotes.
    """

    domains: tuple
    contenders: tuple
    methods: tuple
    ks: tuple
    folds: int
    accuracy: np.ndarray
    f_measure: np.ndarray
    recall: np.ndarray
    train_s: np.ndarray
    test_s: np.ndarray
    info: dict
    sizes: dict
    notes: list
    seed: int = 0
    seconds: float = 0.0

    def mean(self, metric: str = "accuracy") -> np.ndarray:
        """(D, N) mean over folds."""
        return _nanmean(getattr(self, metric), axis=2)

    def ranks(self, metric: str = "accuracy") -> np.ndarray:
        """(D, N) rank of each contender per domain (1 = best; times: fastest)."""
        m = np.round(self.mean(metric), 9)  # fold averages of equal scores tie exactly
        sign = -1.0 if metric.endswith("_s") else 1.0
        return np.stack([_rank_desc(sign * row) for row in m])


def uci(
    *,
    quick: bool = False,
    seed: int = 0,
    domains: Optional[Sequence[str]] = None,
    folds: Optional[int] = None,
    ks: Optional[Sequence[int]] = None,
    methods: Optional[Sequence[str]] = None,
    extra_ks: Optional[Sequence[int]] = None,
    rbf_max: int = 2500,
    save: Optional[str] = None,
    progress: bool = True,
) -> UCIResult:
    """Stratified k-fold CV on bundled UCI domains (papers 000 Tables 2–5, 001 Table 2).

    Features are standardised on each training fold.  k-NN-based methods
    (k-NN, UNN(exp), GNNB(log/mat/squared), N³(hinge)) run for every k in
    ``ks``; jaxnn-auto (``fit(k="auto", loss="auto", rounds="auto")``), SGD,
    LinSVM (jaxnn baselines) and an RBF-SVM tuned by ``GridSearchCV`` over
    C ∈ {1, 10, 100}, γ ∈ {"scale", 0.1} (3-fold) once each.  Boosted fits
    use ``posterior="link"`` (predictions are argmax H either way; this skips
    the auxiliary fit that ``posterior="auto"`` makes for predict_proba).

    Where a training fold exceeds ``rbf_max`` points the RBF grid search runs
    on a stratified subsample of ``rbf_max`` points and the best parameters
    are refit on the whole fold.  ``extra_ks`` (default: ``ks``) is the k
    grid of the secondary losses GNNB(mat), GNNB(squared) and N³(hinge), to
    bound the run time.  ``save``: a path where the (partial) result is
    pickled after every domain.

    Full: 10 domains, 5 folds, k ∈ {5, 10, 20, 50}.  Quick: iris, wdbc, bupa,
    2 folds, k = 10.
    """
    from jaxnn import datasets, metrics

    t_start = time.perf_counter()
    domains = _check_domains(domains) if domains is not None else (UCI_QUICK_DOMAINS if quick else UCI_DOMAINS)
    folds = (2 if quick else 5) if folds is None else int(folds)
    ks = tuple(int(k) for k in ks) if ks is not None else ((10,) if quick else (5, 10, 20, 50))
    methods = tuple(methods) if methods is not None else UCI_METHODS
    unknown = [m for m in methods if m not in UCI_METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; use some of {UCI_METHODS}")
    notes = []
    if "RBF-SVM" in methods:
        try:
            import sklearn  # noqa: F401
        except ImportError:
            methods = tuple(m for m in methods if m != "RBF-SVM")
            notes.append("RBF-SVM skipped: scikit-learn is not installed (pip install scikit-learn).")

    extra_ks = ks if extra_ks is None else tuple(int(k) for k in extra_ks)
    contenders, base, cks = [], [], []
    for m in methods:
        if m in KNN_METHODS:
            for k in (extra_ks if m in _SECONDARY else ks):
                contenders.append(f"{m} k={k}")
                base.append(m)
                cks.append(k)
        else:
            contenders.append(m)
            base.append(m)
            cks.append(0)
    D, N = len(domains), len(contenders)
    arrays = {metric: np.full((D, N, folds), np.nan) for metric in _METRICS}
    info: dict = {}
    sizes: dict = {}
    bar = _Progress(D * folds * N, "uci", progress)

    def result(n_done: int, extra_notes=()) -> UCIResult:
        return UCIResult(
            domains=domains[:n_done], contenders=tuple(contenders), methods=tuple(base), ks=tuple(cks),
            folds=folds, info=dict(info), sizes=dict(sizes), notes=list(notes) + list(extra_notes), seed=seed,
            seconds=time.perf_counter() - t_start, **{k: v[:n_done].copy() for k, v in arrays.items()},
        )

    for di, domain in enumerate(domains):
        X, y = _load_domain(domain)
        sizes[domain] = (X.shape[0], X.shape[1], int(np.unique(y).size))
        fold_id = _stratified_folds(y, folds, seed)
        for f in range(folds):
            tr, te = fold_id != f, fold_id == f
            Xtr, Xte = datasets.standardize(X[tr], X[te])
            ytr, yte = y[tr], y[te]
            for ci, (name, method, k) in enumerate(zip(contenders, base, cks)):
                bar.step(f"{domain} fold {f + 1}/{folds} {name}")
                if k and k >= Xtr.shape[0]:
                    skip = f"{name} skipped on {domain}: k must be < its {Xtr.shape[0]} training points"
                    if skip not in notes:
                        notes.append(skip)
                    continue
                try:
                    (model, predict, extra), t_fit = _timed(
                        lambda: _fit_contender(method, k, Xtr, ytr, seed=seed, rbf_max=rbf_max)
                    )
                    pred, t_pred = _timed(lambda: np.asarray(predict(model, Xte)))
                except Exception as err:  # keep a long run going; report the failure
                    msg = f"{domain} fold {f + 1} {name} failed: {type(err).__name__}: {err}"
                    print(msg, file=sys.stderr)
                    notes.append(msg)
                    continue
                arrays["accuracy"][di, ci, f] = metrics.accuracy(yte, pred)
                arrays["f_measure"][di, ci, f] = metrics.f_measure(yte, pred)
                arrays["recall"][di, ci, f] = metrics.recall(yte, pred)
                arrays["train_s"][di, ci, f] = t_fit
                arrays["test_s"][di, ci, f] = t_pred
                if extra:
                    info.setdefault((domain, name), []).append(extra)
        if save:
            _save(result(di + 1, [f"partial result: {di + 1} of {D} domains done"]), save)
    bar.close()
    if "RBF-SVM" in methods:
        big = [d for d in domains if sizes[d][0] * (folds - 1) / folds > rbf_max]
        if big:
            notes.append(
                f"RBF-SVM: on {', '.join(big)} the grid search ran on a stratified subsample of {rbf_max} "
                "training points to bound its time; the best (C, γ) was then refit on the whole training fold."
            )
    if extra_ks != ks:
        notes.append(f"k grid: {list(ks)} for k-NN, UNN(exp), GNNB(log); {list(extra_ks)} for {', '.join(m for m in _SECONDARY if m in methods)}.")
    notes.append(
        'Boosted fits use posterior="link" (predict = argmax H either way; this skips the auxiliary '
        'fit of posterior="auto", which only affects predict_proba); one boosting pass unless auto.'
    )
    notes.append(
        "Times are wall-clock seconds on the run's machine and include JIT compilation (none with a warm "
        "JAXNN_CACHE_DIR), which falls mostly on a domain's first fold: folds of nearby sizes share compiled programs."
    )
    out = result(D)
    if save:
        _save(out, save)
    return out


def _save(result, path: str) -> None:
    import pickle

    tmp = f"{path}.tmp"
    with open(tmp, "wb") as fh:
        pickle.dump(result, fh)
    os.replace(tmp, path)


def _short(domain: str, width: int) -> str:
    return domain if len(domain) <= width else domain[: width - 1] + "."


def format_uci(result: UCIResult, out=None, metrics: Sequence[str] = _METRICS) -> None:
    """One table per metric (rows contenders, columns domains, mean, mean rank),
    the best k per method, and jaxnn-auto's choices."""
    out = sys.stdout if out is None else out
    r = result
    cw, lw = 9, 18
    doms = "".join(f"{_short(d, cw - 1):>{cw}}" for d in r.domains)
    sizes = ", ".join(f"{d} {n}×{dim}/{c}" for d, (n, dim, c) in r.sizes.items())
    print(f"UCI: {r.folds}-fold stratified CV (features standardised on each training fold), seed {r.seed}", file=out)
    print(f"domains (n×d/classes): {sizes}", file=out)
    for metric in metrics:
        mean = r.mean(metric)
        ranks = r.ranks(metric)
        spec = ".2f" if metric.endswith("_s") else ".3f"
        head = f"{'':<{lw}}{doms}{'mean':>{cw}}{'rank':>{cw - 2}}"
        print("", file=out)
        print(f"{_METRIC_TITLES[metric]}, mean over folds; rank 1 = best" + (" (fastest)" if metric.endswith("_s") else ""), file=out)
        print(head, file=out)
        print(_rule(len(head)), file=out)
        for ci, name in enumerate(r.contenders):
            row = f"{name:<{lw}}" + "".join(_fmt(v, spec, cw) for v in mean[:, ci])
            row += _fmt(_nanmean(mean[:, ci]), spec, cw) + _fmt(_nanmean(ranks[:, ci]), ".1f", cw - 2)
            print(row, file=out)
    # best k per method
    acc = r.mean("accuracy")
    kmethods = [m for m in KNN_METHODS if m in r.methods]
    if kmethods:
        print("", file=out)
        print("best k per method (k:accuracy, the k with the highest CV accuracy on each domain — an oracle choice);", file=out)
        print("'k*' = the single k with the best accuracy averaged over domains", file=out)
        head = f"{'':<{lw}}{''.join(f'{_short(d, 10):>11}' for d in r.domains)}{'mean':>8}{'k*':>5}{'mean@k*':>9}"
        print(head, file=out)
        print(_rule(len(head)), file=out)
        for m in kmethods:
            idx = [i for i, b in enumerate(r.methods) if b == m]
            sub = acc[:, idx]  # (D, K)
            cells, best_vals = [], []
            for di in range(len(r.domains)):
                if np.all(np.isnan(sub[di])):
                    cells.append(f"{'—':>11}")
                    continue
                j = int(np.nanargmax(sub[di]))
                best_vals.append(sub[di, j])
                cells.append(f"{r.ks[idx[j]]:>4d}:{sub[di, j]:.3f}")
            per_k = _nanmean(sub, axis=0)
            row = f"{m:<{lw}}" + "".join(cells)
            if np.all(np.isnan(per_k)):  # no k ran on any domain (all skipped or failed): see the notes
                row += f"{'—':>8}{'—':>5}{'—':>9}"
            else:
                jstar = int(np.nanargmax(per_k))
                row += _fmt(float(np.mean(best_vals)), ".3f", 8)
                row += f"{r.ks[idx[jstar]]:>5d}" + _fmt(per_k[jstar], ".3f", 9)
            print(row, file=out)
    autos = {d: v for (d, c), v in r.info.items() if c == "jaxnn-auto"}
    if autos:
        print("", file=out)
        print("jaxnn-auto choices per fold (k, loss, passes):", file=out)
        for d, v in autos.items():
            print(f"  {d}: " + "; ".join(v), file=out)
    rbf = {d: v for (d, c), v in r.info.items() if c == "RBF-SVM"}
    if rbf:
        print("RBF-SVM grid choices per fold:", file=out)
        for d, v in rbf.items():
            print(f"  {d}: " + "; ".join(v), file=out)
    if r.notes:
        print("", file=out)
        for i, note in enumerate(r.notes, 1):
            print(f"[{i}] {note}", file=out)


# --------------------------------------------------------------------------
# 3. posteriors: KL to the true posteriors (paper 003 Table 3 / Fig. 2)
# --------------------------------------------------------------------------

#: posterior contenders: (label, column abbreviation, algorithm, loss, estimator)
POSTERIOR_METHODS = (
    ("UNN(exp) link", "Ue/L", "unn", "exponential", "link"),
    ("UNN(exp) auto", "Ue/A", "unn", "exponential", "auto"),
    ("UNN(log) link", "Ul/L", "unn", "logistic", "link"),
    ("UNN(log) auto", "Ul/A", "unn", "logistic", "auto"),
    ("UNN(mat) link", "Um/L", "unn", "matsushita", "link"),
    ("UNN(mat) auto", "Um/A", "unn", "matsushita", "auto"),
    ("GNNB(log) link", "Gl/L", "gnnb", "logistic", "link"),
    ("GNNB(log) auto", "Gl/A", "gnnb", "logistic", "auto"),
    ("GNNB(mat) link", "Gm/L", "gnnb", "matsushita", "link"),
    ("GNNB(mat) auto", "Gm/A", "gnnb", "matsushita", "auto"),
    ("k-NN votes", "kNN", None, None, "votes"),
    ("LinSVM+Platt", "SVM", None, None, "platt"),
)


@dataclasses.dataclass
class PosteriorsResult:
    """KL divergence D_KL(p̂ ‖ p) (paper 003 eq. 32) of each estimator.

    Attributes:
      sigmas: (S,) class standard deviations.
      ks: (K,) neighbours.
      methods: (M,) estimator labels (see ``POSTERIOR_METHODS``); "link" is
        the papers' p̂ = link(H), "auto" the default ``fit`` posterior
        (the fitted α are the same; only λ differs).
      kl: (S, K, M, R) KL divergence per replicate seed.
      accuracy: (S, K, M, R) test accuracy of argmax p̂.
      mix: (S, K, M, R) λ chosen by posterior="auto" (NaN for others).
      bayes_accuracy: (S, R) accuracy of the Bayes rule on the test sets.
    """

    sigmas: np.ndarray
    ks: tuple
    methods: tuple
    abbrev: tuple
    seeds: tuple
    kl: np.ndarray
    accuracy: np.ndarray
    mix: np.ndarray
    bayes_accuracy: np.ndarray
    n_train: int
    n_test: int
    n_classes: int
    seconds: float = 0.0


def _normalise_rows(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, None)
    s = p.sum(axis=1, keepdims=True)
    return np.where(s > 0, p / np.where(s > 0, s, 1.0), 1.0 / p.shape[1])


def posteriors(
    *,
    quick: bool = False,
    seed: int = 0,
    sigmas: Optional[Sequence[float]] = None,
    ks: Optional[Sequence[int]] = None,
    n_seeds: Optional[int] = None,
    n_train: Optional[int] = None,
    n_test: Optional[int] = None,
    n_classes: int = 3,
    methods: Optional[Sequence[str]] = None,
    progress: bool = True,
) -> PosteriorsResult:
    """KL to the true posteriors on C isotropic Gaussians of std σ (paper 003 §5.3).

    For each σ, k and seed: UNN (exponential, logistic, Matsushita) and GNNB
    (logistic, Matsushita) are fit once with ``posterior="auto"`` (one pass);
    the same model is scored with the papers' link estimator (λ = 0) and with
    the default blend; plus plain k-NN vote fractions and a linear SVM with
    Platt scaling (jaxnn baselines).

    Full: σ ∈ {0.2, 0.4, 0.6, 0.8, 1.0, 1.1}, k ∈ {10, 20}, 3 seeds,
    1500 train / 4500 test points.  Quick: σ ∈ {0.4, 1.0}, k = 10, 1 seed,
    600 / 1500 points.
    """
    import jaxnn
    from jaxnn import datasets, metrics
    from jaxnn._src import baselines as bl

    t_start = time.perf_counter()
    sigmas = np.asarray(sigmas if sigmas is not None else ((0.4, 1.0) if quick else (0.2, 0.4, 0.6, 0.8, 1.0, 1.1)), float)
    ks = tuple(int(k) for k in ks) if ks is not None else ((10,) if quick else (10, 20))
    n_seeds = (1 if quick else 3) if n_seeds is None else int(n_seeds)
    n_train = (600 if quick else 1500) if n_train is None else int(n_train)
    n_test = (1500 if quick else 4500) if n_test is None else int(n_test)
    table = POSTERIOR_METHODS if methods is None else tuple(t for t in POSTERIOR_METHODS if t[0] in methods)
    if methods is not None and len(table) != len(tuple(methods)):
        known = [t[0] for t in POSTERIOR_METHODS]
        raise ValueError(f"unknown posterior method(s) {sorted(set(methods) - set(known))}; use some of {known}")
    labels = tuple(t[0] for t in table)
    seeds = tuple(seed + r for r in range(n_seeds))
    S, K, M, R = sigmas.size, len(ks), len(table), n_seeds
    kl = np.full((S, K, M, R), np.nan)
    acc = np.full_like(kl, np.nan)
    mix = np.full_like(kl, np.nan)
    bayes = np.zeros((S, R))
    fits = sorted({(t[2], t[3]) for t in table if t[2] is not None})
    bar = _Progress(S * R * (K * (len(fits) + 1) + 1), "posteriors", progress)
    for si, sigma in enumerate(sigmas):
        for ri, s in enumerate(seeds):
            d = datasets.gaussian_posteriors(float(sigma), n_train=n_train, n_test=n_test, n_classes=n_classes, seed=s)
            bayes[si, ri] = metrics.accuracy(d.y_test, np.argmax(d.posterior_test, axis=1))

            def score(p, ki, mi):
                p = _normalise_rows(p)
                kl[si, ki, mi, ri] = metrics.kl_divergence(p, d.posterior_test)
                acc[si, ki, mi, ri] = metrics.accuracy(d.y_test, np.argmax(p, axis=1))

            bar.step(f"σ={sigma:g} seed {s} LinSVM+Platt")
            svm = bl.svm_fit(d.X_train, d.y_train, seed=s) if "LinSVM+Platt" in labels else None
            for ki, k in enumerate(ks):
                for algorithm, loss in fits:
                    bar.step(f"σ={sigma:g} seed {s} k={k} {algorithm.upper()}({loss})")
                    model = jaxnn.fit(d.X_train, d.y_train, k=k, algorithm=algorithm, loss=loss, seed=s, posterior="auto")
                    for mi, (_, _, alg, ls, est) in enumerate(table):
                        if (alg, ls) != (algorithm, loss):
                            continue
                        m = model if est == "auto" else dataclasses.replace(model, posterior_mix=0.0)
                        score(jaxnn.predict_proba(m, d.X_test), ki, mi)
                        if est == "auto":
                            mix[si, ki, mi, ri] = model.posterior_mix
                bar.step(f"σ={sigma:g} seed {s} k={k} k-NN / SVM")
                for mi, t in enumerate(table):
                    if t[4] == "votes":
                        score(bl.predict_proba(bl.knn_fit(d.X_train, d.y_train, k=k), d.X_test), ki, mi)
                    elif t[4] == "platt":
                        score(bl.predict_proba(svm, d.X_test), ki, mi)
    bar.close()
    return PosteriorsResult(
        sigmas=sigmas, ks=ks, methods=labels, abbrev=tuple(t[1] for t in table), seeds=seeds, kl=kl,
        accuracy=acc, mix=mix, bayes_accuracy=bayes, n_train=n_train, n_test=n_test, n_classes=n_classes,
        seconds=time.perf_counter() - t_start,
    )


def format_posteriors(result: PosteriorsResult, out=None) -> None:
    """Per k: rows σ, columns estimators, mean KL over seeds (and the verdict
    'default predict_proba vs k-NN votes')."""
    out = sys.stdout if out is None else out
    r = result
    cw = 8
    print(
        f"Posteriors (paper 003 eq. 32): mean D_KL(p̂ ‖ p) to the true posteriors, {r.n_classes} Gaussian classes, "
        f"{r.n_train} train / {r.n_test} test points, mean over {len(r.seeds)} seed(s) {list(r.seeds)}; lower is better",
        file=out,
    )
    print(f"D_KL = mean over test points of Σ_c p̂_c ln(p̂_c/p_c); eq. 32 also weights each class by Pr[c] = 1/{r.n_classes}: "
          f"its value (paper 003 Table 3's scale) is the row 'eq.32' = mean/{r.n_classes}", file=out)
    legend = ", ".join(f"{a} = {m}" for a, m in zip(r.abbrev, r.methods))
    print(f"columns: {legend}", file=out)
    print("/L = link(H) (the papers' estimator), /A = default predict_proba (posterior='auto', same α)", file=out)
    mean = _nanmean(r.kl, axis=3)  # (S, K, M)
    for ki, k in enumerate(r.ks):
        print("", file=out)
        print(f"k = {k}", file=out)
        head = f"{'σ':>5}" + "".join(f"{a:>{cw}}" for a in r.abbrev) + f"{'Bayes acc':>11}"
        print(head, file=out)
        print(_rule(len(head)), file=out)
        for si, sigma in enumerate(r.sigmas):
            row = f"{sigma:>5.2f}" + "".join(_fmt(v, ".4f", cw) for v in mean[si, ki])
            print(row + _fmt(float(np.mean(r.bayes_accuracy[si])), ".3f", 11), file=out)
        print(_rule(len(head)), file=out)
        print(f"{'mean':>5}" + "".join(_fmt(v, ".4f", cw) for v in _nanmean(mean[:, ki], axis=0)), file=out)
        print(f"{'eq.32':>5}" + "".join(_fmt(v / r.n_classes, ".4f", cw) for v in _nanmean(mean[:, ki], axis=0)), file=out)
    # test accuracy of argmax p̂, averaged over σ and k
    print("", file=out)
    print("test accuracy of argmax p̂, mean over σ, k and seeds:", file=out)
    accm = _nanmean(np.moveaxis(r.accuracy, 2, 0).reshape(len(r.methods), -1), axis=1)
    print("      " + "".join(f"{a:>{cw}}" for a in r.abbrev), file=out)
    print("      " + "".join(_fmt(v, ".3f", cw) for v in accm), file=out)
    lam = [(m, _nanmean(r.mix[:, :, i])) for i, m in enumerate(r.methods) if m.endswith(" auto")]
    if lam:
        print("mean λ chosen by posterior='auto': " + ", ".join(f"{m.replace(' auto', '')} {v:.2f}" for m, v in lam), file=out)
    # verdict: default predict_proba vs k-NN votes at the same k
    if "k-NN votes" in r.methods:
        kv = r.methods.index("k-NN votes")
        print("", file=out)
        print("default predict_proba (posterior='auto') vs k-NN votes at the same k: mean KL difference (auto − votes),", file=out)
        print("± standard error over seeds; negative = the default is closer to the true posteriors", file=out)
        for mi, m in enumerate(r.methods):
            if not m.endswith(" auto"):
                continue
            diff = r.kl[:, :, mi, :] - r.kl[:, :, kv, :]  # (S, K, R)
            cells = []
            for ki, k in enumerate(r.ks):
                per_seed = diff[:, ki, :].mean(axis=0)  # (R,)
                se = f" ± {per_seed.std(ddof=1) / math.sqrt(per_seed.size):.4f}" if per_seed.size > 1 else ""
                worse = int(np.sum(diff[:, ki, :].mean(axis=1) > 0))
                cells.append(f"k={k}: {per_seed.mean():+.4f}{se} (worse at {worse}/{r.sigmas.size} σ)")
            print(f"  {m.replace(' auto', ''):<10} " + "; ".join(cells), file=out)


# --------------------------------------------------------------------------
# 4. splits: divide and conquer (paper 000 §6.4, paper 002 §6.2)
# --------------------------------------------------------------------------

SPLITS_DOMAINS = ("optdigits", "texture", "spambase", "satimage")


@dataclasses.dataclass
class SplitsResult:
    """Accuracy of divide and conquer with n feature blocks and three means.

    Attributes:
      domains: D names; dims: (D,) feature counts.
      n_splits: (N,) block counts (capped at d: NaN where n > d).
      means: ("arithmetic", "geometric", "harmonic").
      accuracy: (D, N, 3, F) test accuracy per fold.
      fit_s: (D, N, F) fit seconds (compile included).
    """

    domains: tuple
    dims: tuple
    n_splits: tuple
    means: tuple
    accuracy: np.ndarray
    fit_s: np.ndarray
    folds: int
    protocol: str
    k: int
    seed: int
    seconds: float = 0.0


def splits(
    *,
    quick: bool = False,
    seed: int = 0,
    domains: Optional[Sequence[str]] = None,
    n_splits: Optional[Sequence[int]] = None,
    folds: Optional[int] = None,
    k: int = 10,
    max_rows: Optional[int] = None,
    progress: bool = True,
) -> SplitsResult:
    """Divide and conquer (:func:`jaxnn.ensemble.fit_split`): GNNB(log), k = 10,
    L2 norm per block, features standardised on the training part before
    splitting; one fit per n, scored with the arithmetic, geometric and
    harmonic means of the block posteriors.

    Full: optdigits, texture, spambase, satimage; n ∈ {1, 2, 4, 8, 16};
    3-fold stratified CV.  Quick: optdigits and spambase subsampled to 1200
    rows, n ∈ {1, 4, 16}, a single stratified 70/30 split.  ``folds=1``
    means a single 70/30 split.
    """
    from jaxnn import datasets, ensemble, metrics

    t_start = time.perf_counter()
    domains = _check_domains(domains) if domains is not None else (("optdigits", "spambase") if quick else SPLITS_DOMAINS)
    n_splits = tuple(int(n) for n in n_splits) if n_splits is not None else ((1, 4, 16) if quick else (1, 2, 4, 8, 16))
    folds = (1 if quick else 3) if folds is None else int(folds)
    max_rows = (1200 if quick else None) if max_rows is None else int(max_rows)
    means = ensemble.MEANS
    D, N, F = len(domains), len(n_splits), folds
    acc = np.full((D, N, len(means), F), np.nan)
    fit_s = np.full((D, N, F), np.nan)
    dims = []
    data = {}
    for domain in domains:  # all loaded and checked first: --folds 200 on iris failed after earlier domains ran
        X, y = _load_domain(domain)
        if max_rows is not None and X.shape[0] > max_rows:
            keep = _stratified_subsample(y, max_rows, seed)
            X, y = X[keep], y[keep]
        if folds > y.shape[0]:
            raise ValueError(f"folds={folds} is more than the {y.shape[0]} rows of {domain}")
        data[domain] = X, y
    bar = _Progress(D * N * F, "splits", progress)
    for di, domain in enumerate(domains):
        X, y = data[domain]
        dims.append(X.shape[1])
        if folds == 1:
            Xtr, Xte, ytr, yte = datasets.train_test_split(X, y, test_size=0.3, seed=seed)
            parts = [(Xtr, ytr, Xte, yte)]
        else:
            fid = _stratified_folds(y, folds, seed)
            parts = [(X[fid != f], y[fid != f], X[fid == f], y[fid == f]) for f in range(folds)]
        for f, (Xtr, ytr, Xte, yte) in enumerate(parts):
            Xtr, Xte = datasets.standardize(Xtr, Xte)
            for ni, n in enumerate(n_splits):
                bar.step(f"{domain} fold {f + 1}/{F} n={n}")
                if n > X.shape[1]:
                    continue
                model, fit_s[di, ni, f] = _timed(
                    lambda: ensemble.fit_split(Xtr, ytr, n_splits=n, norm="l2", mean="geometric", k=k, seed=seed)
                )
                for mi, mean in enumerate(means):
                    acc[di, ni, mi, f] = metrics.accuracy(yte, ensemble.predict_split(model, Xte, mean=mean))
    bar.close()
    protocol = "single stratified 70/30 split" if folds == 1 else f"{folds}-fold stratified CV"
    if max_rows is not None:
        protocol += f", domains subsampled to {max_rows} rows"
    return SplitsResult(
        domains=domains, dims=tuple(dims), n_splits=n_splits, means=means, accuracy=acc, fit_s=fit_s,
        folds=folds, protocol=protocol, k=k, seed=seed, seconds=time.perf_counter() - t_start,
    )


def format_splits(result: SplitsResult, out=None) -> None:
    """Per domain: rows n, columns means (accuracy), fit seconds."""
    out = sys.stdout if out is None else out
    r = result
    print(
        f"Divide and conquer (paper 000 §6.4): GNNB(log), k={r.k}, L2 norm per block, standardised features; "
        f"{r.protocol}; test accuracy (mean over folds) per number of blocks n and combining mean",
        file=out,
    )
    acc = _nanmean(r.accuracy, axis=3)  # (D, N, 3)
    fit = _nanmean(r.fit_s, axis=2)
    head = f"{'domain':<12}{'d':>4}{'n':>5}" + "".join(f"{m:>12}" for m in r.means) + f"{'fit s':>8}"
    print(head, file=out)
    print(_rule(len(head)), file=out)
    for di, d in enumerate(r.domains):
        for ni, n in enumerate(r.n_splits):
            if np.all(np.isnan(acc[di, ni])):
                continue
            row = f"{d if ni == 0 else '':<12}{r.dims[di] if ni == 0 else '':>4}{n:>5}"
            row += "".join(_fmt(v, ".3f", 12) for v in acc[di, ni]) + _fmt(fit[di, ni], ".1f", 8)
            print(row, file=out)
    print(_rule(len(head)), file=out)
    for ni, n in enumerate(r.n_splits):
        print(f"{'mean' if ni == 0 else '':<12}{'':>4}{n:>5}" + "".join(_fmt(v, ".3f", 12) for v in _nanmean(acc[:, ni], axis=0)), file=out)


# --------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------


def _figure(*args, **kwargs):
    """A matplotlib Figure without touching pyplot's global state."""
    try:
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("--plot needs matplotlib: pip install matplotlib") from err
    return Figure(*args, **kwargs)


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError as err:
        raise ImportError("--plot needs matplotlib, which is not installed: pip install matplotlib") from err


def plot_ripley(result: RipleyResult, plot_dir) -> list:
    """θ curves: test error vs θ for the pruned models and k-NN samples."""
    fig = _figure(figsize=(6, 4))
    ax = fig.add_subplot()
    for i, m in enumerate(result.methods):
        if i == 2:
            ax.errorbar(result.thetas, result.error[i], yerr=result.error_std[i], marker="s", capsize=3, label=m)
        else:
            ax.plot(result.thetas, result.error[i], marker="o", label=f"{m} pruned")
    for m, (errors, _) in result.leveraged.items():
        ax.plot(result.thetas, errors, marker="^", ls="--", label=m)
    ax.axhline(result.bayes_mc, color="k", ls="--", lw=1, label=f"Bayes error (MC) {result.bayes_mc:.3f}")
    ax.axhline(result.bayes_test, color="gray", ls=":", lw=1, label=f"Bayes rule, this test set {result.bayes_test:.3f}")
    ax.set_xlabel("θ (fraction of prototypes kept)")
    ax.set_ylabel("test error")
    ax.set_title(f"Ripley, k={result.k}")
    ax.legend(fontsize=8)
    path = os.path.join(plot_dir, "ripley_theta.png")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return [path]


def plot_uci(result: UCIResult, plot_dir) -> list:
    """Mean accuracy over domains of every contender (horizontal bars)."""
    mean = _nanmean(result.mean("accuracy"), axis=0)
    fig = _figure(figsize=(6, 0.25 * len(result.contenders) + 1))
    ax = fig.add_subplot()
    y = np.arange(len(result.contenders))
    ax.barh(y, mean)
    ax.set_yticks(y, result.contenders, fontsize=7)
    ax.invert_yaxis()
    finite = mean[np.isfinite(mean)]
    if finite.size:
        ax.set_xlim(max(0.0, float(finite.min()) - 0.05), min(1.0, float(finite.max()) + 0.02))
    ax.set_xlabel("mean test accuracy over domains")
    path = os.path.join(plot_dir, "uci_accuracy.png")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return [path]


_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")


def plot_posteriors(result: PosteriorsResult, plot_dir, *, sigma: Optional[float] = None, grid: int = 120) -> list:
    """KL vs σ (one panel per k) and, for one σ, maps of the true posteriors and
    of three estimates (3 classes drawn as RGB)."""
    import jaxnn
    from jaxnn import datasets
    from jaxnn._src import baselines as bl

    paths = []
    mean = _nanmean(result.kl, axis=3)
    fig = _figure(figsize=(5 * len(result.ks), 4))
    for ki, k in enumerate(result.ks):
        ax = fig.add_subplot(1, len(result.ks), ki + 1)
        for mi, m in enumerate(result.methods):
            ls = "--" if m.endswith("link") else "-"
            color = _COLORS[(mi // 2) % len(_COLORS)] if mi < 10 else ("k" if m.startswith("k-NN") else "tab:gray")
            ax.plot(result.sigmas, mean[:, ki, mi], ls=ls, marker="o", ms=3, color=color, label=m)
        ax.set_xlabel("σ")
        ax.set_ylabel("mean KL(p̂ ‖ p)")
        ax.set_yscale("log")
        ax.set_title(f"k = {k}")
        if ki == 0:
            ax.legend(fontsize=6)
    path = os.path.join(plot_dir, "posteriors_kl.png")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    paths.append(path)

    # posterior maps for one σ
    if sigma is None:
        sigma = float(result.sigmas[int(np.argmin(np.abs(result.sigmas - 0.6)))])
    k = result.ks[0]
    seed = result.seeds[0]
    d = datasets.gaussian_posteriors(sigma, n_train=result.n_train, n_test=10, n_classes=result.n_classes, seed=seed)
    lim = 1.0 + 2.5 * sigma
    xs = np.linspace(-lim, lim, grid)
    G = np.stack(np.meshgrid(xs, xs), axis=-1).reshape(-1, 2)
    maps = [("true posteriors", datasets.gaussian_true_posteriors(G, sigma, result.n_classes))]
    gnnb = jaxnn.fit(d.X_train, d.y_train, k=k, loss="matsushita", algorithm="gnnb", seed=seed)
    maps.append((f"GNNB(mat) default (λ={gnnb.posterior_mix:.2f})", np.asarray(jaxnn.predict_proba(gnnb, G))))
    maps.append(("GNNB(mat) link(H)", np.asarray(jaxnn.predict_proba(dataclasses.replace(gnnb, posterior_mix=0.0), G))))
    maps.append(("k-NN votes", np.asarray(bl.predict_proba(bl.knn_fit(d.X_train, d.y_train, k=k), G))))
    fig = _figure(figsize=(4 * len(maps), 4))
    for i, (title, P) in enumerate(maps):
        ax = fig.add_subplot(1, len(maps), i + 1)
        P = _normalise_rows(P)
        rgb = np.zeros((G.shape[0], 3))
        rgb[:, : min(3, P.shape[1])] = P[:, :3]
        ax.imshow(rgb.reshape(grid, grid, 3), origin="lower", extent=(-lim, lim, -lim, lim))
        ax.set_title(title, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(f"{result.n_classes} Gaussians, σ = {sigma:g}, k = {k} (RGB = class posteriors)")
    path = os.path.join(plot_dir, "posteriors_map.png")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    paths.append(path)
    return paths


def plot_splits(result: SplitsResult, plot_dir) -> list:
    """Accuracy vs number of blocks, one panel per domain, one line per mean."""
    acc = _nanmean(result.accuracy, axis=3)
    D = len(result.domains)
    fig = _figure(figsize=(3.5 * D, 3.2))
    for di, d in enumerate(result.domains):
        ax = fig.add_subplot(1, D, di + 1)
        for mi, m in enumerate(result.means):
            ax.plot(result.n_splits, acc[di, :, mi], marker="o", label=m)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("n blocks")
        ax.set_title(d)
        if di == 0:
            ax.set_ylabel("test accuracy")
            ax.legend(fontsize=7)
    path = os.path.join(plot_dir, "splits.png")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return [path]


# --------------------------------------------------------------------------
# registry, run, main
# --------------------------------------------------------------------------

EXPERIMENTS = {"ripley": ripley, "uci": uci, "posteriors": posteriors, "splits": splits}
FORMATTERS = {"ripley": format_ripley, "uci": format_uci, "posteriors": format_posteriors, "splits": format_splits}
PLOTTERS = {"ripley": plot_ripley, "uci": plot_uci, "posteriors": plot_posteriors, "splits": plot_splits}


_DESCRIPTIONS = {
    "ripley": "test error vs θ for pruned UNN/GNNB and k-NN on random samples (paper 001 Fig. 2)",
    "uci": "cross-validated accuracy, F, recall and times of 10 contenders on UCI domains (papers 000/001)",
    "posteriors": "KL divergence to the true posteriors on 3 Gaussians vs σ (paper 003 Table 3)",
    "splits": "divide and conquer over n feature blocks with three generalised means (paper 000 §6.4)",
}


def _check_name(name) -> str:
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; available: {', '.join(EXPERIMENTS)}")
    return name


def run(
    name: str,
    *,
    quick: bool = False,
    plot_dir=None,
    out=None,
    progress: bool = True,
    seed: int = 0,
    save: Optional[str] = None,
    **options,
):
    """Run experiment ``name``, print its table to ``out``, write figures to
    ``plot_dir`` (PNG, needs matplotlib) and return its result object.

    ``save``: pickle the result object to this path (``uci``: also after
    every domain).  ``options`` go to the experiment function (e.g.
    ``folds=3``, ``ks=(10,)``).
    """
    _check_name(name)
    out = sys.stdout if out is None else out
    if plot_dir is not None:
        _require_matplotlib()
        os.makedirs(plot_dir, exist_ok=True)
    if save is not None and name == "uci":
        options["save"] = save
    result = EXPERIMENTS[name](quick=quick, seed=seed, progress=progress, **options)
    FORMATTERS[name](result, out=out)  # the table first: a save that fails loses nothing printed
    print(f"({name}{' --quick' if quick else ''}: wall time {result.seconds:.1f} s)", file=out)
    if save is not None:
        _save(result, save)
    if plot_dir is not None:
        for path in PLOTTERS[name](result, plot_dir):
            print(f"wrote {path}", file=out)
    out.flush()
    return result


def _int_at_least(low: int):
    """An argparse type: an integer >= ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {value}")
        return value

    return parse


_positive_int, _seed = _int_at_least(1), _int_at_least(0)


def _distinct(values: tuple, text: str) -> tuple:
    """A non-empty list without repeats (an empty or doubled list is a typo)."""
    if not values:
        raise argparse.ArgumentTypeError(f"expected at least one value, got {text!r}")
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"values repeat in {text!r}")
    return values


def _int_list(text: str) -> tuple:
    values = _str_list_raw(text)
    try:
        ints = tuple(int(v) for v in values)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if any(v < 1 for v in ints):
        raise argparse.ArgumentTypeError(f"expected integers >= 1, got {text!r}")
    return _distinct(ints, text)


def _float_list(text: str) -> tuple:
    try:
        floats = tuple(float(v) for v in _str_list_raw(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not all(math.isfinite(v) and v > 0 for v in floats):
        raise argparse.ArgumentTypeError(f"expected finite numbers > 0, got {text!r}")
    return _distinct(floats, text)


def _str_list_raw(text: str) -> tuple:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _str_list(text: str) -> tuple:
    return _distinct(_str_list_raw(text), text)


#: command-line overrides → (keyword, parser, experiments accepting it)
_OPTIONS = {
    "--folds": ("folds", _positive_int, ("uci", "splits"), "cross-validation folds (splits: 1 = one 70/30 split)"),
    "--ks": ("ks", _int_list, ("uci", "posteriors"), "comma-separated k values"),
    "--domains": ("domains", _str_list, ("uci", "splits"), "comma-separated domain names"),
    "--methods": ("methods", _str_list, ("uci", "posteriors"), "comma-separated contender names"),
    "--seeds": ("n_seeds", _positive_int, ("posteriors",), "replicate seeds per σ"),
    "--sigmas": ("sigmas", _float_list, ("posteriors",), "comma-separated σ values"),
    "--thetas": ("thetas", _float_list, ("ripley",), "comma-separated θ values"),
    "--draws": ("n_draws", _positive_int, ("ripley",), "random k-NN samples per θ"),
    "--n-splits": ("n_splits", _int_list, ("splits",), "comma-separated block counts"),
    "--extra-ks": ("extra_ks", _int_list, ("uci",), "k values for GNNB(mat), GNNB(squared), N3(hinge)"),
}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``jaxnn experiment NAME [--quick] [--plot DIR] [--seed S] [overrides]``."""
    parser = argparse.ArgumentParser(
        prog="jaxnn experiment",
        description="Reproduce a paper experiment and print its table. "
        + "; ".join(f"{n}: {text}" for n, text in _DESCRIPTIONS.items()) + ".",
    )
    parser.add_argument("name", metavar="NAME", help=f"one of: {', '.join(EXPERIMENTS)}")
    parser.add_argument("--quick", action="store_true", help="small version (4-90 s on two CPU cores)")
    parser.add_argument("--plot", metavar="DIR", default=None, help="write PNG figures to DIR (needs matplotlib)")
    parser.add_argument("--seed", type=_seed, default=0, help="base random seed (default 0)")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    parser.add_argument("--save", metavar="FILE", default=None, help="pickle the result object to FILE (uci: after every domain)")
    for flag, (dest, typ, names, text) in _OPTIONS.items():
        parser.add_argument(flag, dest=dest, type=typ, default=None, help=f"{text} ({'/'.join(names)} only)")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.name not in EXPERIMENTS:
        parser.error(f"unknown experiment {args.name!r}; choose from: {', '.join(EXPERIMENTS)}")
    options = {}
    for flag, (dest, _, names, _) in _OPTIONS.items():
        value = getattr(args, dest)
        if value is None:
            continue
        if args.name not in names:
            parser.error(f"{flag} does not apply to {args.name!r} (only to {', '.join(names)})")
        options[dest] = value
    if args.name == "uci" and options.get("folds") == 1:
        parser.error("--folds: uci cross-validates: at least 2 folds")
    if any(not 0.0 < t <= 1.0 for t in options.get("thetas", ())):
        parser.error(f"--thetas: each θ must lie in (0, 1], got {options['thetas']}")
    if args.save is not None:
        folder = os.path.dirname(os.path.abspath(args.save))
        if os.path.isdir(args.save) or not os.path.isdir(folder):
            parser.error(f"--save: {args.save!r} is a folder or its folder does not exist: give a file path")
        try:  # writable? (found out only after the run, which the traceback then lost); a scratch
            with tempfile.TemporaryFile(dir=folder):  # file, not <save>.tmp, which may be the user's
                pass
        except OSError as err:
            parser.error(f"--save: cannot write {args.save!r}: {err.strerror or err}")
        if os.path.isdir(f"{args.save}.tmp"):  # the result is written there first, then renamed
            parser.error(f"--save: {args.save + '.tmp'!r} is a folder")
    if args.plot is not None and os.path.exists(args.plot) and not os.path.isdir(args.plot):
        parser.error(f"--plot: {args.plot!r} exists and is not a folder")
    if "domains" in options:
        try:
            options["domains"] = _check_domains(options["domains"])
        except ValueError as err:
            parser.error(f"--domains: {err}")
    try:
        run(args.name, quick=args.quick, plot_dir=args.plot, progress=not args.no_progress, seed=args.seed,
            save=args.save, **options)
    except ImportError as err:
        print(f"jaxnn experiment: {err}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as err:  # OSError: a figure or --save file that cannot be written
        print(f"jaxnn experiment: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    # run the importable module's main, so that pickled results (--save)
    # refer to jaxnn._src.experiments classes rather than __main__ ones
    from jaxnn._src.experiments import main as _main

    raise SystemExit(_main())
