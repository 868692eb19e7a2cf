"""Data and helpers shared by the test files."""

import os

import numpy as np


def cpu_devices_env(n: int) -> dict:
    """The environment of a subprocess with ``n`` CPU devices: this one's,
    its XLA flags (the suite's compile settings) kept, the device count added."""
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={n}".strip()
    return dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")


def _blobs(m=240, C=3, d=4, seed=0, spread=1.5):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=spread, size=(C, d))
    y = rng.integers(0, C, size=m)
    X = centers[y] + rng.normal(size=(m, d))
    return X.astype(np.float32), y


def floored_log_loss(H, target, T, eps=0.01):
    """Mean −log p̂ of the true class, p̂ = (1 − ε)·softmax(H/T) + ε/C — the
    default posteriors (calibration.calibrated_posterior) — in float64 NumPy."""
    Z = np.asarray(H, np.float64) / T
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P = (1 - eps) * P / P.sum(axis=1, keepdims=True) + eps / P.shape[1]
    return float(-np.mean(np.log(np.sum(np.asarray(target) * P, axis=1))))


def reference_posteriors(model, Xq):
    """The default (``posterior="auto"``) posteriors of a single-label model
    without a learned metric or origin, from first principles in float64
    NumPy: a brute-force exact k-NN search, H_c = Σ α_jc y_jc, the kernel
    vote κ_c = Σ_t K_t [y_{j_t c} > 0] with K_t ∝ exp(−g_t / (b·mean g)),
    g_t = ‖x − x_{j_t}‖² − min_s ‖x − x_{j_s}‖², logits Z = H/T + w·log(κ + 10⁻³)
    with the largest H's logit raised to the row's largest, and
    p̂ = 0.99·softmax(Z) + 0.01/C."""
    Xt, Xq = np.asarray(model.X, np.float64), np.asarray(Xq, np.float64)
    A, Y = np.asarray(model.alpha, np.float64), np.asarray(model.Y, np.float64)
    D = np.sum((Xq[:, None, :] - Xt[None, :, :]) ** 2, axis=2)
    nb = np.argsort(D, axis=1, kind="stable")[:, :model.k]
    H = np.sum((A * Y)[nb], axis=1)
    Z = H / model.posterior_temperature
    if model.posterior_weight > 0:
        g = np.take_along_axis(D, nb, axis=1)
        g = g - g.min(axis=1, keepdims=True)
        scale = model.posterior_bandwidth * g.mean(axis=1, keepdims=True)
        K = np.exp(-np.divide(g, scale, out=np.zeros_like(g), where=scale > 0))
        kappa = np.einsum("nk,nkc->nc", K / K.sum(axis=1, keepdims=True), (Y[nb] > 0).astype(np.float64))
        Z = Z + model.posterior_weight * np.log(kappa + 1e-3)
        rows = np.arange(Z.shape[0])
        Z[rows, H.argmax(axis=1)] = Z.max(axis=1)
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    return 0.99 * P / P.sum(axis=1, keepdims=True) + 0.01 / P.shape[1]


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
