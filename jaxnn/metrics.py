"""Classification and posterior-estimation metrics (numpy in, float out).

See :mod:`jaxnn._src.metrics` for details.
"""

from jaxnn._src.metrics import (
    accuracy,
    brier_score,
    expected_calibration_error,
    f_measure,
    hamming_risk,
    kl_divergence,
    recall,
    top_k_accuracy,
)

__all__ = [
    "accuracy",
    "brier_score",
    "expected_calibration_error",
    "f_measure",
    "hamming_risk",
    "kl_divergence",
    "recall",
    "top_k_accuracy",
]
