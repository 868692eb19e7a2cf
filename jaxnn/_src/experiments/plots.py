"""The experiments' figures: ``plot_*`` (PNG files; matplotlib, imported
inside them) and their matplotlib helpers."""

from __future__ import annotations

import dataclasses
import os
from typing import Optional

import numpy as np

from jaxnn._src.experiments.common import nanmean
from jaxnn._src.experiments.feature_splits import SplitsResult
from jaxnn._src.experiments.intrinsic_geometry import GeometryResult, summary
from jaxnn._src.experiments.posterior_estimation import PosteriorsResult, normalise_rows
from jaxnn._src.experiments.pruning_curve import RipleyResult
from jaxnn._src.experiments.uci_benchmark import UCIResult

__all__ = ["require_matplotlib", "plot_ripley", "plot_uci", "plot_posteriors", "plot_splits", "plot_geometry"]


def _figure(*args, **kwargs):
    """A matplotlib Figure without touching pyplot's global state."""
    try:
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("--plot needs matplotlib: pip install matplotlib") from err
    return Figure(*args, **kwargs)


def require_matplotlib() -> None:
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
    mean = nanmean(result.mean("accuracy"), axis=0)
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
    mean = nanmean(result.kl, axis=3)
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
    maps.append((f"GNNB(mat) default (T={gnnb.posterior_temperature:.2g})", np.asarray(jaxnn.predict_proba(gnnb, G))))
    link = dataclasses.replace(gnnb, posterior_mix=0.0, posterior_temperature=0.0)  # T = 0: the link, not softmax(H/T)
    maps.append(("GNNB(mat) link(H)", np.asarray(jaxnn.predict_proba(link, G))))
    maps.append(("k-NN votes", np.asarray(bl.predict_proba(bl.knn_fit(d.X_train, d.y_train, k=k), G))))
    fig = _figure(figsize=(4 * len(maps), 4))
    for i, (title, P) in enumerate(maps):
        ax = fig.add_subplot(1, len(maps), i + 1)
        P = normalise_rows(P)
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
    acc = nanmean(result.accuracy, axis=3)
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


def plot_geometry(result: GeometryResult, plot_dir) -> list:
    """Paper 004 Fig. 15's rank histograms: for each group, each algorithm's
    count of domains at each rank (one small panel per algorithm, best mean
    rank first); one PNG per group."""
    paths = []
    for g, group in enumerate(result.groups):
        s = summary(result.errors[group])
        names = result.names[group]
        order = np.argsort(s["rank"], kind="stable")
        n = len(names)
        cols = min(4, n)
        rows = -(-n // cols)
        fig = _figure(figsize=(2.4 * cols, 1.7 * rows), layout="constrained")
        bins = np.arange(0.5, n + 1.5)
        for p, i in enumerate(order):
            ax = fig.add_subplot(rows, cols, p + 1)
            ax.hist(s["ranks"][i], bins=bins, color="tab:blue")
            ax.set_title(f"{names[i]}  (mean {s['rank'][i]:.1f})", fontsize=8)
            ax.set_xlim(0.5, n + 0.5)
            ax.tick_params(labelsize=7)
        fig.suptitle(f"{group}: ranks over {len(result.domains)} domains", fontsize=9)
        path = os.path.join(plot_dir, f"geometry_ranks_{g + 1}.png")
        fig.savefig(path, dpi=120)
        paths.append(path)
    return paths
