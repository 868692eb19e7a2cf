"""Divide and conquer: leveraged k-NN per block of features, posteriors
combined by a generalised mean (paper 000 §6.4, paper 002 §6.2).

    model = jaxnn.ensemble.fit_split(X, y, n_splits=8, norm="l2", mean="geometric", k=10)
    jaxnn.ensemble.predict_split(model, X_test)

See :mod:`jaxnn._src.ensemble` for details.
"""

from jaxnn._src.ensemble import (
    MEANS,
    NORMS,
    SplitModel,
    block_posteriors,
    decision_function_split,
    fit_split,
    generalized_mean,
    predict_proba_split,
    predict_split,
    split_features,
)

__all__ = [
    "MEANS",
    "NORMS",
    "SplitModel",
    "block_posteriors",
    "decision_function_split",
    "fit_split",
    "generalized_mean",
    "predict_proba_split",
    "predict_split",
    "split_features",
]
