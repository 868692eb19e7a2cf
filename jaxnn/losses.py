"""Losses built from a permissible φ (or ψ). See :mod:`jaxnn._src.losses`."""

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
