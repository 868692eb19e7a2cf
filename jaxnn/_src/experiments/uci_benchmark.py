"""The ``uci`` experiment, cross-validation on UCI domains (papers 000/001):
:class:`UCIResult`, :func:`uci` and :func:`format_uci`."""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Optional, Sequence

import numpy as np

from jaxnn._src.experiments.common import (
    check_domains,
    check_folds,
    fmt,
    load_domain,
    nanmean,
    Progress,
    rank_desc,
    save_result,
    stratified_folds,
    stratified_subsample,
    table_rule,
    timed,
)
from jaxnn._src.experiments.contenders import KNN_METHODS, RBF_GRID, SECONDARY, UCI_METHODS, fit_contender

__all__ = ["UCI_DOMAINS", "UCI_QUICK_DOMAINS", "UCIResult", "uci_settings", "uci", "PROBA_CONTENDERS", "log_loss",
           "format_uci"]


UCI_DOMAINS = ("bupa", "ionosphere", "pima", "satimage", "segment", "optdigits", "letter-2561", "letter", "wdbc", "iris")
UCI_QUICK_DOMAINS = ("iris", "wdbc", "bupa")

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
      proba_contenders: P probabilistic contenders scored when RBF-SVM runs
        (:data:`PROBA_CONTENDERS`: jaxnn's default fit, a tuned
        ``SVC(probability=True)``, logistic regression); () otherwise.
      log_loss, brier: (D, P, F) per fold test log loss and multi-class
        Brier score Σ_c (p̂_c − 1[y = c])² of their predict_proba (None when
        not run).
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
    proba_contenders: tuple = ()
    log_loss: Optional[np.ndarray] = None
    brier: Optional[np.ndarray] = None

    def mean(self, metric: str = "accuracy") -> np.ndarray:
        """(D, N) mean over folds."""
        return nanmean(getattr(self, metric), axis=2)

    def ranks(self, metric: str = "accuracy") -> np.ndarray:
        """(D, N) rank of each contender per domain (1 = best; times: fastest)."""
        m = np.round(self.mean(metric), 9)  # fold averages of equal scores tie exactly
        sign = -1.0 if metric.endswith("_s") else 1.0
        return np.stack([rank_desc(sign * row) for row in m])


def uci_settings(quick: bool, domains, folds, ks, methods, extra_ks) -> tuple:
    """(domains, folds, ks, methods, extra_ks) that :func:`uci` runs with:
    the defaults (full or quick) filled in, the names checked (ValueError)."""
    domains = check_domains(domains) if domains is not None else (UCI_QUICK_DOMAINS if quick else UCI_DOMAINS)
    folds = (2 if quick else 5) if folds is None else int(folds)
    if folds < 2:
        raise ValueError(f"uci cross-validates: folds must be >= 2, got {folds}")
    ks = tuple(int(k) for k in ks) if ks is not None else ((10,) if quick else (5, 10, 20, 50))
    methods = tuple(methods) if methods is not None else UCI_METHODS
    unknown = [m for m in methods if m not in UCI_METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; use some of {UCI_METHODS}")
    extra_ks = ks if extra_ks is None else tuple(int(k) for k in extra_ks)
    return domains, folds, ks, methods, extra_ks


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
    are the papers' rules: boosting's α (``shrinkage=None``) with
    ``posterior="link"`` (predictions are argmax H either way; no auxiliary
    fit is made).

    Where a training fold exceeds ``rbf_max`` points the RBF grid search runs
    on a stratified subsample of ``rbf_max`` points and the best parameters
    are refit on the whole fold.  ``extra_ks`` (default: ``ks``) is the k
    grid of the secondary losses GNNB(mat), GNNB(squared) and N³(hinge), to
    bound the run time.  ``save``: a path where the (partial) result is
    pickled after every domain.

    Full: 10 domains, 5 folds, k ∈ {5, 10, 20, 50}.  Quick: iris, wdbc, bupa,
    2 folds, k = 10.

    ValueError at once, before any fit, for an unknown domain or method,
    ``folds`` < 2, or more folds than a domain's rows or than the rows of its
    smallest class; a contender whose k is not below a training fold's size
    is skipped there (a note says so).
    """
    from jaxnn import datasets, metrics

    t_start = time.perf_counter()
    domains, folds, ks, methods, extra_ks = uci_settings(quick, domains, folds, ks, methods, extra_ks)
    data = {domain: load_domain(domain) for domain in domains}  # all checked first: a bad folds fails at once
    check_folds({domain: y for domain, (_, y) in data.items()}, folds)
    notes = []
    if "RBF-SVM" in methods:
        try:
            import sklearn  # noqa: F401
        except ImportError:
            methods = tuple(m for m in methods if m != "RBF-SVM")
            notes.append("RBF-SVM skipped: scikit-learn is not installed (pip install scikit-learn).")

    contenders, base, cks = [], [], []
    for m in methods:
        if m in KNN_METHODS:
            for k in (extra_ks if m in SECONDARY else ks):
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
    bar = Progress(D * folds * N, "uci", progress)

    proba = PROBA_CONTENDERS if "RBF-SVM" in methods else ()
    scored = {metric: np.full((D, len(proba), folds), np.nan) for metric in ("log_loss", "brier")}

    def result(n_done: int, extra_notes=()) -> UCIResult:
        return UCIResult(
            domains=domains[:n_done], contenders=tuple(contenders), methods=tuple(base), ks=tuple(cks),
            folds=folds, info=dict(info), sizes=dict(sizes), notes=list(notes) + list(extra_notes), seed=seed,
            seconds=time.perf_counter() - t_start, **{k: v[:n_done].copy() for k, v in arrays.items()},
            proba_contenders=proba, **({k: v[:n_done].copy() for k, v in scored.items()} if proba else {}),
        )

    for di, domain in enumerate(domains):
        X, y = data[domain]
        sizes[domain] = (X.shape[0], X.shape[1], int(np.unique(y).size))
        fold_id = stratified_folds(y, folds, seed)
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
                    (model, predict, extra), t_fit = timed(
                        lambda: fit_contender(method, k, Xtr, ytr, seed=seed, rbf_max=rbf_max)
                    )
                    pred, t_pred = timed(lambda: np.asarray(predict(model, Xte)))
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
            for pi, name in enumerate(proba):
                try:
                    P, classes = _fit_proba_contender(name, Xtr, ytr, Xte, seed=seed, rbf_max=rbf_max)
                except Exception as err:  # keep a long run going; report the failure
                    msg = f"{domain} fold {f + 1} {name} failed: {type(err).__name__}: {err}"
                    print(msg, file=sys.stderr)
                    notes.append(msg)
                    continue
                scored["log_loss"][di, pi, f] = log_loss(yte, P, classes)
                scored["brier"][di, pi, f] = metrics.brier_score(yte, P, classes)
        if save:
            save_result(result(di + 1, [f"partial result: {di + 1} of {D} domains done"]), save)
    bar.close()
    if "RBF-SVM" in methods:
        big = [d for d in domains if sizes[d][0] * (folds - 1) / folds > rbf_max]
        if big:
            notes.append(
                f"RBF-SVM: on {', '.join(big)} the grid search ran on a stratified subsample of {rbf_max} "
                "training points to bound its time; the best (C, γ) was then refit on the whole training fold."
            )
    if proba:
        notes.append(
            "Posteriors (with RBF-SVM): jaxnn = jaxnn.fit(X, y) with every default (k=10, GNNB, logistic loss, "
            'posterior="auto": softmax(H/T + w·log κ), κ the distance-weighted vote of the k neighbours, T, w and the '
            'leverage shrinkage fit on held-out data); '
            'jaxnn(nca) = the same with metric="nca" (the neighbours searched under a metric learned by NCA); '
            "SVC(prob) = SVC(probability=True), "
            f"C and γ chosen by 3-fold CV log loss over {RBF_GRID} (on at most {rbf_max} points, then refit); "
            "LogReg = LogisticRegression(max_iter=1000).  Log loss clips probabilities at 1e-15 (as scikit-learn's)."
        )
    if extra_ks != ks:
        notes.append(f"k grid: {list(ks)} for k-NN, UNN(exp), GNNB(log); {list(extra_ks)} for {', '.join(m for m in SECONDARY if m in methods)}.")
    notes.append(
        'Boosted fits are the papers\' rules: boosting\'s α (shrinkage=None), posterior="link" (no auxiliary '
        "fit; predict is argmax H either way); one boosting pass unless auto."
    )
    notes.append(
        "Times are wall-clock seconds on the run's machine and include JIT compilation (none with a warm "
        "JAXNN_CACHE_DIR), which falls mostly on a domain's first fold: folds of nearby sizes share compiled programs."
    )
    out = result(D)
    if save:
        save_result(out, save)
    return out


#: the probabilistic contenders whose posteriors ``uci`` scores (log loss,
#: Brier score) when RBF-SVM is among its methods
PROBA_CONTENDERS = ("jaxnn", "jaxnn(nca)", "SVC(prob)", "LogReg")


def log_loss(y_true, proba, classes, eps: float = 1e-15) -> float:
    """Mean −log p̂(y) of probabilities proba (n, C), columns ``classes``,
    clipped to [eps, 1] (a posterior of exactly 0 for the true class would
    make it infinite; scikit-learn's ``log_loss`` clips alike)."""
    idx = np.searchsorted(np.asarray(classes), np.asarray(y_true))
    p = np.asarray(proba, np.float64)[np.arange(idx.size), idx]
    return float(-np.mean(np.log(np.clip(p, eps, 1.0))))


def _fit_proba_contender(name: str, Xtr, ytr, Xte, *, seed: int, rbf_max: int):
    """(test posteriors (n, C) in float64, their column labels) of one of
    :data:`PROBA_CONTENDERS` fit on the training fold."""
    import warnings

    import jaxnn

    if name in ("jaxnn", "jaxnn(nca)"):
        model = jaxnn.fit(Xtr, ytr, seed=seed, metric="nca" if name == "jaxnn(nca)" else None)
        return np.asarray(jaxnn.predict_proba(model, Xte), np.float64), np.asarray(model.classes)
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    with warnings.catch_warnings():  # scikit-learn 1.9 deprecates probability=True (its Platt scaling stays)
        warnings.simplefilter("ignore", FutureWarning)
        if name == "SVC(prob)":
            sub = stratified_subsample(ytr, rbf_max, seed)
            gs = GridSearchCV(SVC(probability=True, random_state=seed), RBF_GRID, cv=3, n_jobs=1, scoring="neg_log_loss")
            gs.fit(Xtr[sub], ytr[sub])
            model = gs.best_estimator_ if sub.size == ytr.shape[0] else \
                SVC(probability=True, random_state=seed, **gs.best_params_).fit(Xtr, ytr)
        elif name == "LogReg":
            model = LogisticRegression(max_iter=1000).fit(Xtr, ytr)
        else:
            raise ValueError(f"unknown probabilistic contender {name!r}; use one of {PROBA_CONTENDERS}")
        return model.predict_proba(Xte), model.classes_


def _format_posteriors(r: UCIResult, out, cw: int, lw: int, doms: str) -> None:
    """The log loss and Brier score tables of the probabilistic contenders
    (rows; columns domains and their mean), when they ran."""
    proba = getattr(r, "proba_contenders", ())
    if not proba or r.log_loss is None:
        return
    for metric, title in (("log_loss", "test log loss"), ("brier", "test Brier score Σ_c (p̂_c − 1[y=c])²")):
        mean = nanmean(getattr(r, metric), axis=2)  # (D, P)
        head = f"{'':<{lw}}{doms}{'mean':>{cw}}"
        print("", file=out)
        print(f"posteriors: {title}, mean over folds; lower is better", file=out)
        print(head, file=out)
        print(table_rule(len(head)), file=out)
        for pi, name in enumerate(proba):
            row = f"{name:<{lw}}" + "".join(fmt(v, ".3f", cw) for v in mean[:, pi])
            print(row + fmt(nanmean(mean[:, pi]), ".3f", cw), file=out)


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
        print(table_rule(len(head)), file=out)
        for ci, name in enumerate(r.contenders):
            row = f"{name:<{lw}}" + "".join(fmt(v, spec, cw) for v in mean[:, ci])
            row += fmt(nanmean(mean[:, ci]), spec, cw) + fmt(nanmean(ranks[:, ci]), ".1f", cw - 2)
            print(row, file=out)
    _format_posteriors(r, out, cw, lw, doms)
    # best k per method
    acc = r.mean("accuracy")
    kmethods = [m for m in KNN_METHODS if m in r.methods]
    if kmethods:
        print("", file=out)
        print("best k per method (k:accuracy, the k with the highest CV accuracy on each domain — an oracle choice);", file=out)
        print("'k*' = the single k with the best accuracy averaged over domains", file=out)
        head = f"{'':<{lw}}{''.join(f'{_short(d, 10):>11}' for d in r.domains)}{'mean':>8}{'k*':>5}{'mean@k*':>9}"
        print(head, file=out)
        print(table_rule(len(head)), file=out)
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
            per_k = nanmean(sub, axis=0)
            row = f"{m:<{lw}}" + "".join(cells)
            if np.all(np.isnan(per_k)):  # no k ran on any domain (all skipped or failed): see the notes
                row += f"{'—':>8}{'—':>5}{'—':>9}"
            else:
                jstar = int(np.nanargmax(per_k))
                row += fmt(float(np.mean(best_vals)), ".3f", 8)
                row += f"{r.ks[idx[jstar]]:>5d}" + fmt(per_k[jstar], ".3f", 9)
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
