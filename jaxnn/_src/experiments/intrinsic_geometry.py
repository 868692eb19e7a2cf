"""``jaxnn experiment geometry``: paper 004 §7's protocol on the bundled data.

Stratified cross-validation of paper 004's family on the same losses:

* ULS with rules ("if monomial then class = ±1 else ∓1") at §7's two
  settings, l = 2 literals and r = 10 rules per class, and l = 3, r = 100:
  AdaBoost (the exponential loss), each fixed φ of §7 — (26) φ_B, (27) φ_μ,
  (28) φ_M, (29) φ_Q, (107) φ_v — and the loss bags F₁, F₂ (the loss of least
  empirical risk at each step), E₁, E₂ (the largest edge) over bag 1 =
  {26, 27, 28, 29} and bag 2 = {27, 28, 29, 107}, and F\\* (one loss per fit
  from {26, 27, 28, 29, 107}, chosen on held-out data);
* UDT for each φ beside scikit-learn's CART (Gini);
* OLS for each φ beside scikit-learn's ``SGDClassifier`` (log loss);
* the leveraged k-NN rule (``jaxnn.fit``'s defaults) and a tuned RBF-SVM as
  references, ranked in every group.

The paper gives no μ or v: :data:`MU` and :data:`V` are ours.  Features are
standardised on each training fold.  :func:`format_geometry` prints paper
004 Fig. 15's view for each group: each algorithm's mean rank over the
domains, its mean test error, the domains where it ranks first, and the
number of others it beats under a paired t-test at 0.1 (over the folds of
each domain, averaged over the domains).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from typing import Callable, Optional

import numpy as np

from jaxnn._src.experiments.common import Progress, check_domains, check_folds, fmt, load_domain, stratified_folds

__all__ = ["GeometryResult", "geometry", "format_geometry", "geometry_settings", "contender_groups", "summary", "MU", "V",
           "PHIS", "DOMAINS", "QUICK_DOMAINS", "SIGNIFICANCE"]

#: μ of φ_μ (eq. 27) and v of φ_v (eq. 107): §7 does not give them
MU, V = 0.5, 0.7
#: §7's fixed losses by equation number → jaxnn.losses name
PHIS = {"26": "squared", "27": f"phi_mu({MU})", "28": "matsushita", "29": "logistic", "107": f"phi_power({V})"}
#: §7's bags of losses (L896–898)
BAGS = {"1": ("26", "27", "28", "29"), "2": ("27", "28", "29", "107")}
#: §7's two settings of the rules: (literals l, rules per class r)
RULE_SETTINGS = ((2, 10), (3, 100))
#: the bundled domains of the full run (the small and middle-sized ones) and of --quick
DOMAINS = ("bupa", "ionosphere", "iris", "pima", "sonar", "vehicle", "wdbc", "wine")
QUICK_DOMAINS = ("iris", "wine", "sonar")
FOLDS, QUICK_FOLDS = 10, 3
#: the paired t-test's threshold (§7: 0.1)
SIGNIFICANCE = 0.1
#: the RBF-SVM's grid (3-fold on the training fold)
RBF_GRID = {"C": [1, 10, 100], "gamma": ["scale", 0.01, 0.1]}
REFERENCES = ("k-NN (jaxnn.fit)", "RBF-SVM")


@dataclasses.dataclass
class GeometryResult:
    """Test errors ``errors[group]`` (algorithms, domains, folds) of each
    group's algorithms ``names[group]`` (NaN where a fit failed; ``failures``
    says why), the domains, folds and seed, and the run's wall time."""

    groups: tuple
    names: dict
    errors: dict
    domains: tuple
    folds: int
    seed: int
    quick: bool
    failures: list
    seconds: float


def geometry_settings(quick: bool, domains=None, folds=None) -> tuple:
    """(domains, folds) of a run: the defaults of ``quick`` where not given."""
    domains = check_domains(domains if domains is not None else (QUICK_DOMAINS if quick else DOMAINS))
    return domains, int(folds if folds is not None else (QUICK_FOLDS if quick else FOLDS))


#: the family's posteriors as fit for this experiment, which scores labels
#: only: the paper's link (a calibrated fit's temperature changes no label,
#: and its held-out fit would cost ULS with ``rounds`` given a second fit)
LABELS_ONLY = "link"


def _uls(**kw) -> Callable:
    import jaxnn

    return lambda X, y, seed: jaxnn.uls(X, y, weak="rules", seed=seed, posterior=LABELS_ONLY, **kw)


def contender_groups(quick: bool) -> dict:
    """{group: {algorithm: fit(X, y, seed) → a model jaxnn.predict takes (or
    an estimator with .predict)}} — the references belong to every group."""
    import jaxnn

    groups = {}
    for literals, rules in RULE_SETTINGS[:1] if quick else RULE_SETTINGS:
        setting = dict(max_literals=literals, rounds=rules)
        group = {"AdaBoost": _uls(loss="exponential", **setting)}
        group.update({f"φ({eq})": _uls(loss=name, **setting) for eq, name in PHIS.items()})
        for bag, eqs in BAGS.items():
            bag_losses = [PHIS[eq] for eq in eqs]
            group[f"F{bag}"] = _uls(loss=bag_losses, loss_choice="risk", **setting)
            group[f"E{bag}"] = _uls(loss=bag_losses, loss_choice="edge", **setting)
        group["F*"] = _uls(loss=list(PHIS.values()), loss_choice="fold", **setting)
        groups[f"ULS rules l={literals} r={rules}"] = group

    def cart(X, y, seed):
        from sklearn.tree import DecisionTreeClassifier

        return DecisionTreeClassifier(random_state=seed).fit(X, y)

    def sgd(X, y, seed):
        from sklearn.linear_model import SGDClassifier

        return SGDClassifier(loss="log_loss", random_state=seed).fit(X, y)

    groups["UDT"] = {**{f"φ({eq})": (lambda X, y, seed, name=name: jaxnn.udt(X, y, loss=name, posterior=LABELS_ONLY))
                        for eq, name in PHIS.items()}, "CART": cart}
    groups["OLS"] = {**{f"φ({eq})": (lambda X, y, seed, name=name: jaxnn.ols(X, y, loss=name, seed=seed,
                                                                               posterior=LABELS_ONLY))
                        for eq, name in PHIS.items()}, "SGDClassifier": sgd}
    return groups


def _references() -> dict:
    import jaxnn

    def rbf(X, y, seed):
        from sklearn.model_selection import GridSearchCV
        from sklearn.svm import SVC

        return GridSearchCV(SVC(kernel="rbf"), RBF_GRID, cv=3).fit(X, y).best_estimator_

    return {REFERENCES[0]: lambda X, y, seed: jaxnn.fit(X, y, seed=seed), REFERENCES[1]: rbf}


def _error(model, X, y) -> float:
    import jaxnn

    predicted = model.predict(X) if hasattr(model, "fit") else jaxnn.predict(model, X)
    return float(np.mean(np.asarray(predicted) != y))


def _drop_compiled() -> None:
    """Forget every compiled program (``jax.clear_caches``): the contenders
    compile for each domain's shapes (dozens of losses and settings), and a
    run over many domains that kept them all ran out of memory."""
    import jax

    jax.clear_caches()


def geometry(*, quick: bool = False, seed: int = 0, progress: bool = True, domains=None,
             folds: Optional[int] = None) -> GeometryResult:
    """Run the protocol (see the module) and return its errors."""
    domains, folds = geometry_settings(quick, domains, folds)
    data = {name: load_domain(name) for name in domains}
    check_folds({name: y for name, (_, y) in data.items()}, folds)
    groups = contender_groups(quick)
    references = _references()
    fits = [(g, name, fn) for g, group in groups.items() for name, fn in group.items()]
    fits += [("", name, fn) for name, fn in references.items()]  # fit once, ranked in every group
    start = time.perf_counter()
    bar = Progress(len(domains) * folds * len(fits), "geometry", enabled=progress)
    errors = {g: np.full((len(group) + len(references), len(domains), folds), np.nan) for g, group in groups.items()}
    names = {g: tuple(group) + REFERENCES for g, group in groups.items()}
    failures = []
    for d, domain in enumerate(domains):
        X, y = data[domain]
        fold_of = stratified_folds(y, folds, seed)
        for f in range(folds):
            train, test = fold_of != f, fold_of == f
            mean, scale = X[train].mean(axis=0), X[train].std(axis=0)
            scale = np.where(scale > 0, scale, 1.0)
            Xtr, Xte = (X[train] - mean) / scale, (X[test] - mean) / scale
            for group, name, fit in fits:
                bar.step(f"{domain} fold {f + 1} {group + ' ' if group else ''}{name}")
                try:
                    err = _error(fit(Xtr, y[train], seed), Xte, y[test])
                except (ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:
                    failures.append(f"{domain} fold {f + 1} {group} {name}: {exc}")
                    err = np.nan
                for g in ([group] if group else groups):
                    errors[g][names[g].index(name), d, f] = err
        _drop_compiled()  # a domain's shapes are its own: its programs are not used again
    bar.close()
    return GeometryResult(tuple(groups), names, errors, domains, folds, seed, quick, failures,
                          time.perf_counter() - start)


def summary(errors: np.ndarray) -> dict:
    """For errors (algorithms, domains, folds): mean rank over domains (1 =
    least mean error; ties share), mean error, domains ranked first, and the
    mean number of others beaten per domain under a paired t-test at
    :data:`SIGNIFICANCE`."""
    from scipy import stats

    n, D, _ = errors.shape
    per_domain = np.nanmean(errors, axis=2)  # (n, D)
    ranks = np.empty((n, D))
    for d in range(D):
        v = per_domain[:, d]
        ranks[:, d] = [np.sum(v < v[i]) + (np.sum(v == v[i]) + 1) / 2.0 for i in range(n)]
    beaten = np.zeros((n, D))
    for d in range(D):
        for a in range(n):
            for b in range(n):
                if a == b:
                    continue
                diff = errors[b, d] - errors[a, d]  # > 0 where a erred less
                if not np.all(np.isfinite(diff)) or diff.mean() <= 0:
                    continue
                if np.all(diff == diff[0]):  # the same margin on every fold: t is infinite
                    beaten[a, d] += 1
                else:
                    with warnings.catch_warnings():  # near-constant differences: scipy warns, p is still right
                        warnings.simplefilter("ignore", RuntimeWarning)
                        beaten[a, d] += stats.ttest_rel(errors[b, d], errors[a, d]).pvalue < SIGNIFICANCE
    return {"rank": ranks.mean(axis=1), "error": np.nanmean(per_domain, axis=1),
            "first": np.sum(ranks <= 1.0, axis=1), "beats": beaten.mean(axis=1), "ranks": ranks}


def format_geometry(result: GeometryResult, out=None) -> None:
    """Print each group's table (Fig. 15's view), best mean rank first."""
    import sys

    out = sys.stdout if out is None else out
    print(f"paper 004 §7 on {len(result.domains)} domains ({', '.join(result.domains)}), stratified "
          f"{result.folds}-fold CV, seed {result.seed}; φ_μ: μ = {MU}, φ_v: v = {V}", file=out)
    for group in result.groups:
        s = summary(result.errors[group])
        order = np.argsort(s["rank"], kind="stable")
        width = max(len(n) for n in result.names[group]) + 2
        print(f"\n{group}", file=out)
        print(f"{'algorithm':<{width}}{'mean rank':>10}{'mean error':>12}{'first':>7}"
              f"{'beats (t-test ' + str(SIGNIFICANCE) + ')':>22}", file=out)
        for i in order:
            print(f"{result.names[group][i]:<{width}}{fmt(s['rank'][i], '.2f', 10)}{fmt(s['error'][i], '.4f', 12)}"
                  f"{int(s['first'][i]):>7}{fmt(s['beats'][i], '.2f', 22)}", file=out)
    for line in result.failures:
        print(f"failed: {line}", file=out)
