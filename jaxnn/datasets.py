"""Bundled UCI data sets, synthetic benchmarks and splitting utilities.

See :mod:`jaxnn._src.datasets` for details.
"""

from jaxnn._src.datasets import (
    PosteriorSplit,
    Split,
    gaussian_posteriors,
    gaussian_true_posteriors,
    letter_sample,
    load,
    multilabel,
    names,
    ripley,
    ripley_bayes_error,
    ripley_bayes_posterior,
    ripley_bayes_predict,
    standardize,
    train_test_split,
)

__all__ = [
    "PosteriorSplit",
    "Split",
    "gaussian_posteriors",
    "gaussian_true_posteriors",
    "letter_sample",
    "load",
    "multilabel",
    "names",
    "ripley",
    "ripley_bayes_error",
    "ripley_bayes_posterior",
    "ripley_bayes_predict",
    "standardize",
    "train_test_split",
]
