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
``geometry``              paper 004 §7 / Fig. 15: ULS with rules (AdaBoost,
                          each φ, the loss bags F, E, F*), UDT and OLS for
                          each φ beside CART and SGD, ranked with paired
                          t-tests.
========================  ==================================================

``run(name, quick=..., plot_dir=...)`` runs one by name (``EXPERIMENTS``),
prints its table and optionally writes PNG figures (matplotlib);
:func:`~jaxnn._src.experiments.cli.main` is the ``jaxnn experiment`` command
line, also reachable as ``python -m jaxnn._src.experiments NAME``.
``quick=True`` runs a small version (uci, mostly compilation, takes
longest).

One concept per module: ``common`` (helpers shared by the experiments),
``contenders`` (the methods ``ripley`` and ``uci`` compare), one module per
experiment — ``pruning_curve`` (``ripley``), ``uci_benchmark`` (``uci``),
``posterior_estimation`` (``posteriors``), ``feature_splits``
(``splits``) and ``intrinsic_geometry`` (``geometry``), each with its result dataclass, its run function, its
``format_*`` and its constants — ``plots`` (the ``plot_*`` figures),
``cli`` (the registries, ``run`` and ``main``) and ``__main__``
(``python -m``).
"""

from jaxnn._src.experiments.cli import EXPERIMENTS, FORMATTERS, main, run
from jaxnn._src.experiments.plots import plot_geometry, plot_posteriors, plot_ripley, plot_splits, plot_uci
from jaxnn._src.experiments.feature_splits import SplitsResult, format_splits, splits
from jaxnn._src.experiments.intrinsic_geometry import GeometryResult, format_geometry, geometry
from jaxnn._src.experiments.posterior_estimation import PosteriorsResult, format_posteriors, posteriors
from jaxnn._src.experiments.pruning_curve import RipleyResult, format_ripley, ripley
from jaxnn._src.experiments.uci_benchmark import UCIResult, format_uci, uci

__all__ = [
    "EXPERIMENTS",
    "FORMATTERS",
    "RipleyResult",
    "UCIResult",
    "PosteriorsResult",
    "SplitsResult",
    "GeometryResult",
    "ripley",
    "uci",
    "posteriors",
    "splits",
    "geometry",
    "format_ripley",
    "format_uci",
    "format_posteriors",
    "format_splits",
    "format_geometry",
    "plot_ripley",
    "plot_uci",
    "plot_posteriors",
    "plot_splits",
    "plot_geometry",
    "run",
    "main",
]
