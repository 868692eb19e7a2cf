"""Renders the figures of docs/guide/plots.md (and the README's decision
map) and of docs/guide/family.md.

    .venv/bin/python docs/images/make_figures.py          # rewrites docs/images/*.png (~40 s on a CPU)
    .venv/bin/python docs/images/make_figures.py family   # family.png only

Ripley's data (250 training, 1000 test points), one GNNB fit with the
logistic loss, k = 10, two passes, boosting's α and the risk trace; and the
decision maps of paper 004's family beside the default k-NN fit.
"""

import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import jaxnn  # noqa: E402
import jaxnn.plot  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
DPI = 90


def save(fig, name: str, dpi: int = DPI) -> None:
    path = HERE / name
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {path.relative_to(HERE.parents[1])} ({path.stat().st_size // 1024} KB)")


def family(d) -> None:
    """family.png: the default leveraged k-NN rule, ULS with rules, UDT and OLS on Ripley's data."""
    import numpy as np

    X, y, X_test, y_test = d.X_train, d.y_train, d.X_test, d.y_test
    models = {"jaxnn.fit (leveraged k-NN)": jaxnn.fit(X, y, seed=0),
              "jaxnn.uls (rules, l = 2)": jaxnn.uls(X, y, weak="rules", max_literals=2),
              "jaxnn.udt (φ_M, depth 4)": jaxnn.udt(X, y, loss="matsushita", max_depth=4),
              "jaxnn.ols (logistic, 5 passes)": jaxnn.ols(X, y, passes=5)}
    fig, axes = plt.subplots(1, 4, figsize=(18, 4.0), layout="constrained")
    for ax, (name, model) in zip(axes, models.items()):
        jaxnn.plot.decision_map(model, X, y, ax=ax, colorbar=False, resolution=120)
        error = float(np.mean(np.asarray(jaxnn.predict(model, X_test)) != y_test))
        ax.set_title(f"{name}\ntest error {error:.3f}", fontsize=10)
    save(fig, "family.png", dpi=70)


def main(only=None) -> None:
    d = jaxnn.datasets.ripley(n_train=250, n_test=1000, seed=0)
    family(d)
    if only == "family":
        return
    X, y, X_test, y_test = d.X_train, d.y_train, d.X_test, d.y_test
    m = X.shape[0]
    # boosting's α (shrinkage=None): the rule whose risk the trace follows and whose leverages prune
    model = jaxnn.fit(X, y, k=10, loss="logistic", algorithm="gnnb", rounds=2 * m, trace=True, seed=0, shrinkage=None)

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    jaxnn.plot.decision_map(model, X, y, ax=left)
    jaxnn.plot.decision_map(model, X, y, theta=0.25, ax=right)
    save(fig, "decision_map.png", dpi=80)  # smooth colours: the largest file

    fig, ax = plt.subplots(figsize=(6, 3.6), layout="constrained")
    jaxnn.plot.risk_trace(model, ax=ax)
    save(fig, "risk_trace.png")

    fig, ax = plt.subplots(figsize=(5, 4.2), layout="constrained")
    jaxnn.plot.reliability(model, X_test, y_test, bins=10, ax=ax)
    save(fig, "reliability.png")

    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    jaxnn.plot.pruning_curve(model, X_test, y_test, knn_draws=5, ax=ax)
    ax.axhline(jaxnn.datasets.ripley_bayes_error(), color="tab:green", ls="--", lw=1, label="Bayes error")
    ax.legend(fontsize=8)
    save(fig, "pruning_curve.png")


if __name__ == "__main__":
    main(*sys.argv[1:2])
