"""Data shared by the test files."""

import numpy as np


def _blobs(m=240, C=3, d=4, seed=0, spread=1.5):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=spread, size=(C, d))
    y = rng.integers(0, C, size=m)
    X = centers[y] + rng.normal(size=(m, d))
    return X.astype(np.float32), y
