"""The contenders table of the ``ripley`` and ``uci`` experiments: the boosted
methods' ``jaxnn.fit`` arguments, the method names, and fitting one contender."""

from __future__ import annotations

from jaxnn._src.experiments.common import stratified_subsample

__all__ = ["BOOSTED", "KNN_METHODS", "SECONDARY", "OTHER_METHODS", "UCI_METHODS", "RBF_GRID", "fit_contender"]


#: Boosted leveraged k-NN contenders: name → jaxnn.fit keyword arguments.
BOOSTED = {
    "UNN(exp)": dict(algorithm="unn", loss="exponential"),
    "GNNB(log)": dict(algorithm="gnnb", loss="logistic"),
    "GNNB(mat)": dict(algorithm="gnnb", loss="matsushita"),
    "GNNB(squared)": dict(algorithm="gnnb", loss="squared"),
    "N3(hinge)": dict(algorithm="n3", loss="calibrated_hinge"),
}
KNN_METHODS = ("k-NN",) + tuple(BOOSTED)
SECONDARY = ("GNNB(mat)", "GNNB(squared)", "N3(hinge)")
OTHER_METHODS = ("jaxnn-auto", "SGD", "LinSVM", "RBF-SVM")
UCI_METHODS = KNN_METHODS + OTHER_METHODS
RBF_GRID = {"C": [1, 10, 100], "gamma": ["scale", 0.1]}


def fit_contender(method: str, k: int, Xtr, ytr, *, seed: int, rbf_max: int):
    """Fit one contender; returns (model, predict function, info string)."""
    import jaxnn
    from jaxnn._src import baselines as bl

    if method == "k-NN":
        return bl.knn_fit(Xtr, ytr, k=k), bl.predict, ""
    if method in BOOSTED:
        # the papers' rules (boosting's α, shrinkage=None); only predictions (argmax H)
        # are used here, so no auxiliary fit is made (posterior="link")
        return (jaxnn.fit(Xtr, ytr, k=k, posterior="link", shrinkage=None, seed=seed, **BOOSTED[method]),
                jaxnn.predict, "")
    if method == "jaxnn-auto":
        model = jaxnn.fit(Xtr, ytr, k="auto", loss="auto", rounds="auto", posterior="link", shrinkage=None, seed=seed)
        return model, jaxnn.predict, f"k={model.k} {model.loss.name} x{model.rounds // Xtr.shape[0]}"
    if method == "SGD":
        return bl.sgd_fit(Xtr, ytr, seed=seed), bl.predict, ""
    if method == "LinSVM":
        return bl.svm_fit(Xtr, ytr, seed=seed), bl.predict, ""
    if method == "RBF-SVM":
        from sklearn.model_selection import GridSearchCV
        from sklearn.svm import SVC

        sub = stratified_subsample(ytr, rbf_max, seed)
        full = sub.size == ytr.shape[0]
        gs = GridSearchCV(SVC(kernel="rbf"), RBF_GRID, cv=3, n_jobs=1, refit=full)
        gs.fit(Xtr[sub], ytr[sub])
        model = gs.best_estimator_ if full else SVC(kernel="rbf", **gs.best_params_).fit(Xtr, ytr)
        info = f"C={gs.best_params_['C']} gamma={gs.best_params_['gamma']}" + ("" if full else f" (grid on {sub.size})")
        return model, (lambda mdl, X: mdl.predict(X)), info
    raise ValueError(f"unknown method {method!r}; use one of {UCI_METHODS}")
