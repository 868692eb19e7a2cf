"""Losses defined once, by a permissible φ (or, for losses that are not
balanced, by ψ): the link, the conjugate, the surrogate ψ, the weights and
the curvature bound H* are derived with ``jax.grad``.

See :mod:`jaxnn._src.losses` for details.
"""

from jaxnn._src.losses import (
    Loss,
    amari,
    binary_logistic,
    calibrated_hinge,
    exponential,
    from_phi,
    from_psi,
    get,
    logistic,
    matsushita,
    names,
    phi_mu,
    phi_power,
    squared,
)

__all__ = [
    "Loss",
    "amari",
    "binary_logistic",
    "calibrated_hinge",
    "exponential",
    "from_phi",
    "from_psi",
    "get",
    "logistic",
    "matsushita",
    "names",
    "phi_mu",
    "phi_power",
    "squared",
]
