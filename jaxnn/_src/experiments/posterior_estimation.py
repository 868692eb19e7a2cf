"""The ``posteriors`` experiment, KL to the true posteriors (paper 003 Table 3 /
Fig. 2): :class:`PosteriorsResult`, :func:`posteriors` and :func:`format_posteriors`."""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from typing import Optional, Sequence

import numpy as np

from jaxnn._src.experiments.common import fmt, nanmean, Progress, table_rule

__all__ = ["POSTERIOR_METHODS", "PosteriorsResult", "normalise_rows", "posteriors_settings", "posteriors",
           "format_posteriors"]


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
    ("SVC(prob)", "SVCp", None, None, "svc"),
    ("LogReg", "LR", None, None, "logreg"),
)


@dataclasses.dataclass
class PosteriorsResult:
    """KL divergence D_KL(p̂ ‖ p) (paper 003 eq. 32) of each estimator.

    Attributes:
      sigmas: (S,) class standard deviations.
      ks: (K,) neighbours.
      methods: (M,) estimator labels (see ``POSTERIOR_METHODS``); "link" is
        the papers' p̂ = link(H), "auto" ``fit``'s default posterior,
        softmax(H/T + w·log κ) with T and the kernel weight w fit on
        held-out data, both on boosting's α;
        "SVC(prob)" a scikit-learn ``SVC(probability=True)`` whose C and γ a
        3-fold CV of log loss chooses, "LogReg" ``LogisticRegression``.
      kl: (S, K, M, R) KL divergence per replicate seed.
      accuracy: (S, K, M, R) test accuracy of argmax p̂.
      mix: (S, K, M, R) λ of posterior="auto" models (0: unused by the
        calibrated posteriors; NaN for others).
      bayes_accuracy: (S, R) accuracy of the Bayes rule on the test sets.
      log_loss, brier: (S, K, M, R) test log loss (probabilities clipped at
        10⁻¹⁵) and multi-class Brier score Σ_c (p̂_c − 1[y = c])² on the
        sampled labels (None in results saved before they existed).
      temperature: (S, K, M, R) T of posterior="auto" models (NaN for others).
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
    log_loss: Optional[np.ndarray] = None
    brier: Optional[np.ndarray] = None
    temperature: Optional[np.ndarray] = None


def normalise_rows(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, None)
    s = p.sum(axis=1, keepdims=True)
    return np.where(s > 0, p / np.where(s > 0, s, 1.0), 1.0 / p.shape[1])


def posteriors_settings(quick: bool, sigmas, ks, n_seeds, n_train, n_test, methods) -> tuple:
    """(sigmas, ks, n_seeds, n_train, n_test, rows of ``POSTERIOR_METHODS``)
    that :func:`posteriors` runs with: the defaults (full or quick) filled in,
    the method names checked (ValueError)."""
    sigmas = np.asarray(sigmas if sigmas is not None else ((0.4, 1.0) if quick else (0.2, 0.4, 0.6, 0.8, 1.0, 1.1)), float)
    ks = tuple(int(k) for k in ks) if ks is not None else ((10,) if quick else (10, 20))
    n_seeds = (1 if quick else 3) if n_seeds is None else int(n_seeds)
    n_train = (600 if quick else 1500) if n_train is None else int(n_train)
    n_test = (1500 if quick else 4500) if n_test is None else int(n_test)
    table = POSTERIOR_METHODS if methods is None else tuple(t for t in POSTERIOR_METHODS if t[0] in methods)
    if methods is not None and len(table) != len(tuple(methods)):
        known = [t[0] for t in POSTERIOR_METHODS]
        raise ValueError(f"unknown posterior method(s) {sorted(set(methods) - set(known))}; use some of {known}")
    return sigmas, ks, n_seeds, n_train, n_test, table


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
    (logistic, Matsushita) are fit once with ``posterior="auto"`` (one pass,
    boosting's α: ``shrinkage=None``); the same model is scored with the
    papers' link estimator (λ = 0) and with the calibrated posteriors
    (softmax(H/T + w·log κ), T and w fit on held-out data); plus plain
    k-NN vote fractions, a linear SVM with Platt scaling (jaxnn baselines), a
    tuned RBF ``SVC(probability=True)`` and logistic regression (scikit-learn).
    Each is scored by KL to the true posteriors, and by log loss and Brier
    score on the test labels.

    Full: σ ∈ {0.2, 0.4, 0.6, 0.8, 1.0, 1.1}, k ∈ {10, 20}, 3 seeds,
    1500 train / 4500 test points.  Quick: σ ∈ {0.4, 1.0}, k = 10, 1 seed,
    600 / 1500 points.
    """
    import jaxnn
    from jaxnn import datasets, metrics
    from jaxnn._src import baselines as bl

    t_start = time.perf_counter()
    sigmas, ks, n_seeds, n_train, n_test, table = posteriors_settings(quick, sigmas, ks, n_seeds, n_train, n_test,
                                                                      methods)
    labels = tuple(t[0] for t in table)
    seeds = tuple(seed + r for r in range(n_seeds))
    S, K, M, R = sigmas.size, len(ks), len(table), n_seeds
    kl = np.full((S, K, M, R), np.nan)
    acc = np.full_like(kl, np.nan)
    mix = np.full_like(kl, np.nan)
    lloss, brier, temp = np.full_like(kl, np.nan), np.full_like(kl, np.nan), np.full_like(kl, np.nan)
    bayes = np.zeros((S, R))
    fits = sorted({(t[2], t[3]) for t in table if t[2] is not None})
    bar = Progress(S * R * (K * (len(fits) + 1) + 1), "posteriors", progress)
    for si, sigma in enumerate(sigmas):
        for ri, s in enumerate(seeds):
            d = datasets.gaussian_posteriors(float(sigma), n_train=n_train, n_test=n_test, n_classes=n_classes, seed=s)
            bayes[si, ri] = metrics.accuracy(d.y_test, np.argmax(d.posterior_test, axis=1))

            def score(p, ki, mi):
                p = normalise_rows(p)
                kl[si, ki, mi, ri] = metrics.kl_divergence(p, d.posterior_test)
                acc[si, ki, mi, ri] = metrics.accuracy(d.y_test, np.argmax(p, axis=1))
                truth = p[np.arange(d.y_test.size), d.y_test]
                lloss[si, ki, mi, ri] = float(-np.mean(np.log(np.clip(truth, 1e-15, 1.0))))
                brier[si, ki, mi, ri] = metrics.brier_score(d.y_test, p, np.arange(n_classes))

            bar.step(f"σ={sigma:g} seed {s} LinSVM+Platt / SVC(prob) / LogReg")
            svm = bl.svm_fit(d.X_train, d.y_train, seed=s) if "LinSVM+Platt" in labels else None
            sk = {est: _sklearn_proba(est, d.X_train, d.y_train, d.X_test, s)
                  for est in ("svc", "logreg") if any(t[4] == est for t in table)}
            for ki, k in enumerate(ks):
                for algorithm, loss in fits:
                    bar.step(f"σ={sigma:g} seed {s} k={k} {algorithm.upper()}({loss})")
                    model = jaxnn.fit(d.X_train, d.y_train, k=k, algorithm=algorithm, loss=loss, seed=s, posterior="auto",
                                      shrinkage=None)  # the link and auto read one α: boosting's
                    for mi, (_, _, alg, ls, est) in enumerate(table):
                        if (alg, ls) != (algorithm, loss):
                            continue
                        m = model if est == "auto" else dataclasses.replace(model, posterior_mix=0.0,
                                                                            posterior_temperature=0.0)
                        score(jaxnn.predict_proba(m, d.X_test), ki, mi)
                        if est == "auto":
                            mix[si, ki, mi, ri] = model.posterior_mix
                            temp[si, ki, mi, ri] = model.posterior_temperature
                bar.step(f"σ={sigma:g} seed {s} k={k} k-NN / SVM")
                for mi, t in enumerate(table):
                    if t[4] == "votes":
                        score(bl.predict_proba(bl.knn_fit(d.X_train, d.y_train, k=k), d.X_test), ki, mi)
                    elif t[4] == "platt":
                        score(bl.predict_proba(svm, d.X_test), ki, mi)
                    elif t[4] in sk:
                        score(sk[t[4]], ki, mi)
    bar.close()
    return PosteriorsResult(
        sigmas=sigmas, ks=ks, methods=labels, abbrev=tuple(t[1] for t in table), seeds=seeds, kl=kl,
        accuracy=acc, mix=mix, bayes_accuracy=bayes, n_train=n_train, n_test=n_test, n_classes=n_classes,
        seconds=time.perf_counter() - t_start, log_loss=lloss, brier=brier, temperature=temp,
    )


def _sklearn_proba(estimator: str, X, y, X_test, seed: int) -> np.ndarray:
    """Test posteriors (n, C) of a scikit-learn contender: ``"svc"`` an RBF
    ``SVC(probability=True)`` (Platt scaling by internal 5-fold CV), C and γ
    chosen by 3-fold CV log loss over {1, 10, 100} × {"scale", 0.1};
    ``"logreg"`` ``LogisticRegression(max_iter=1000)``."""
    import warnings

    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    with warnings.catch_warnings():  # scikit-learn 1.9 deprecates probability=True (its Platt scaling stays)
        warnings.simplefilter("ignore", FutureWarning)
        if estimator == "svc":
            grid = {"C": [1, 10, 100], "gamma": ["scale", 0.1]}
            model = GridSearchCV(SVC(probability=True, random_state=seed), grid, cv=3, n_jobs=1,
                                 scoring="neg_log_loss").fit(X, y)
        else:
            model = LogisticRegression(max_iter=1000).fit(X, y)
        return model.predict_proba(X_test)


def _format_scores(r: PosteriorsResult, out, cw: int) -> None:
    """Test log loss and Brier score on the sampled labels, per k: rows σ,
    columns estimators (mean over seeds), when the result holds them."""
    for name, title in (("log_loss", "test log loss (p̂ clipped at 1e-15)"),
                        ("brier", "test Brier score Σ_c (p̂_c − 1[y=c])²")):
        values = getattr(r, name, None)
        if values is None:
            continue
        mean = nanmean(values, axis=3)  # (S, K, M)
        print("", file=out)
        print(f"{title} on the test labels, mean over seeds; lower is better "
              "(/A = posterior='auto' on boosting's α, SVCp = tuned SVC(probability=True), LR = logistic regression)", file=out)
        for ki, k in enumerate(r.ks):
            head = f"{'k=' + str(k):>5}" + "".join(f"{a:>{cw}}" for a in r.abbrev)
            print(head, file=out)
            print(table_rule(len(head)), file=out)
            for si, sigma in enumerate(r.sigmas):
                print(f"{sigma:>5.2f}" + "".join(fmt(v, ".4f", cw) for v in mean[si, ki]), file=out)
            print(f"{'mean':>5}" + "".join(fmt(v, ".4f", cw) for v in nanmean(mean[:, ki], axis=0)), file=out)


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
    print("/L = link(H) (the papers' estimator), /A = posterior='auto' (softmax(H/T + w·log κ)) on the same α (shrinkage=None)", file=out)
    mean = nanmean(r.kl, axis=3)  # (S, K, M)
    for ki, k in enumerate(r.ks):
        print("", file=out)
        print(f"k = {k}", file=out)
        head = f"{'σ':>5}" + "".join(f"{a:>{cw}}" for a in r.abbrev) + f"{'Bayes acc':>11}"
        print(head, file=out)
        print(table_rule(len(head)), file=out)
        for si, sigma in enumerate(r.sigmas):
            row = f"{sigma:>5.2f}" + "".join(fmt(v, ".4f", cw) for v in mean[si, ki])
            print(row + fmt(float(np.mean(r.bayes_accuracy[si])), ".3f", 11), file=out)
        print(table_rule(len(head)), file=out)
        print(f"{'mean':>5}" + "".join(fmt(v, ".4f", cw) for v in nanmean(mean[:, ki], axis=0)), file=out)
        print(f"{'eq.32':>5}" + "".join(fmt(v / r.n_classes, ".4f", cw) for v in nanmean(mean[:, ki], axis=0)), file=out)
    # test accuracy of argmax p̂, averaged over σ and k
    print("", file=out)
    print("test accuracy of argmax p̂, mean over σ, k and seeds:", file=out)
    accm = nanmean(np.moveaxis(r.accuracy, 2, 0).reshape(len(r.methods), -1), axis=1)
    print("      " + "".join(f"{a:>{cw}}" for a in r.abbrev), file=out)
    print("      " + "".join(fmt(v, ".3f", cw) for v in accm), file=out)
    temps = getattr(r, "temperature", None)
    if temps is not None:
        lam = [(m, nanmean(temps[:, :, i])) for i, m in enumerate(r.methods) if m.endswith(" auto")]
        if lam:
            print("mean temperature T of posterior='auto' (softmax(H/T + w·log κ)): "
                  + ", ".join(f"{m.replace(' auto', '')} {v:.3g}" for m, v in lam), file=out)
    _format_scores(r, out, cw)
    # verdict: default predict_proba vs k-NN votes at the same k
    if "k-NN votes" in r.methods:
        kv = r.methods.index("k-NN votes")
        print("", file=out)
        print("posterior='auto' on boosting's α vs k-NN votes at the same k: mean KL difference (auto − votes),", file=out)
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
