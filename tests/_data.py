"""Data and helpers shared by the test files."""

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


def matmul_precisions(fn, *args):
    """The ``precision`` of every matmul (dot_general) that ``fn(*args)``
    traces, inner jaxprs (scans, maps, conds) included."""
    import jax

    def dots(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "dot_general":
                yield eqn.params["precision"]
            for value in eqn.params.values():
                for sub in value if isinstance(value, (tuple, list)) else (value,):
                    sub = getattr(sub, "jaxpr", sub)  # a ClosedJaxpr's Jaxpr
                    if hasattr(sub, "eqns"):
                        yield from dots(sub)

    return list(dots(jax.make_jaxpr(fn)(*args).jaxpr))


def is_full_float32(precision) -> bool:
    """Whether a dot_general's ``precision`` asks for full float32 (HIGHEST)."""
    import jax

    return precision in (jax.lax.Precision.HIGHEST, (jax.lax.Precision.HIGHEST,) * 2)


def assert_same_refit(actual, desired):
    """Two fits of one problem with the same settings give the same α (or any
    arrays they compute): bit for bit on a CPU.  On a GPU XLA adds the
    colored schedule's per-example sums with atomic scatter-adds, in any
    order, so there they agree to float32 rounding (docs/guide/large-data.md,
    Determinism)."""
    import jax

    actual, desired = np.asarray(actual), np.asarray(desired)
    if jax.default_backend() == "cpu":
        np.testing.assert_array_equal(actual, desired)
    else:
        np.testing.assert_allclose(actual, desired, rtol=1e-5, atol=1e-6)
