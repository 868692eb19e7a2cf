"""Data shared by the test files."""

import numpy as np


def _blobs(m=240, C=3, d=4, seed=0, spread=1.5):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=spread, size=(C, d))
    y = rng.integers(0, C, size=m)
    X = centers[y] + rng.normal(size=(m, d))
    return X.astype(np.float32), y


def floored_log_loss(H, target, T, eps=0.01):
    """Mean −log p̂ of the true class, p̂ = (1 − ε)·softmax(H/T) + ε/C — the
    default posteriors (prediction.calibrated_posterior) — in float64 NumPy."""
    Z = np.asarray(H, np.float64) / T
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P = (1 - eps) * P / P.sum(axis=1, keepdims=True) + eps / P.shape[1]
    return float(-np.mean(np.log(np.sum(np.asarray(target) * P, axis=1))))
