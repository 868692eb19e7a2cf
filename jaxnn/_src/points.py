"""Points as the searches compute with them: float32 or float64 arrays, with
float64 (and wide-integer) points far from 0 shifted before their cast to
float32 so that they keep their digits (:func:`float32_origin`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src.shared_sizes import to_device


#: A feature whose mean lies further from 0 than this many times its range
#: (max − min) is centred before float64 / wide-integer points are cast to
#: float32: the cast keeps ~7 significant digits of the value, so points at
#: 10⁶ ± 1 lost half their neighbours and at 10⁸ ± 1 all became one point.
#: Below the ratio the cast's error is under 1.5·10⁻⁵ of the range and data
#: are left as they are (standardised data never cross it).
CENTRE_RATIO = 256.0


def float32_origin(X) -> np.ndarray | None:
    """The (d,) point to subtract from host points before their cast to float32,
    or None when no feature needs it (float32 or narrow-integer data, or
    every feature's |mean| ≤ ``CENTRE_RATIO`` × its range).

    A centred feature's origin is its mean rounded to float32 (so a float32
    model can hold it exactly), others' 0.  Distances are invariant under the
    shift: callers subtract it from the training and the query points alike
    (:func:`shift_points`), in float64, before the cast.
    """
    X = _wide_on_host(X)
    if not isinstance(X, np.ndarray) or X.dtype.kind not in "fiu" or X.dtype.itemsize < (8 if X.dtype.kind == "f" else 4):
        return None
    mean = X.mean(axis=0, dtype=np.float64)
    spread = X.max(axis=0).astype(np.float64) - X.min(axis=0)  # a range, not a std: no (m, d) temporary
    far = np.abs(mean) > CENTRE_RATIO * spread
    if not far.any():
        return None
    return np.where(far, mean.astype(np.float32), 0.0).astype(np.float64)


def float32_ready(X, *others):
    """(X, *others) for a search computed in float32: without x64, each shifted
    by X's :func:`float32_origin`, so float64 points far from 0 keep their
    digits in the cast; as they are under x64 (float64 keeps them)."""
    if jax.config.jax_enable_x64:
        return (X, *others)
    origin = float32_origin(X)
    return tuple(shift_points(a, origin) for a in (X, *others))


def _wide_on_host(X):
    """A concrete JAX array of 32- or 64-bit integers as NumPy (values such
    as int32 timestamps need centring before a cast to float32, which only
    the host does exactly); anything else as it is."""
    if isinstance(X, jax.Array) and not isinstance(X, jax.core.Tracer) and X.dtype.kind in "iu" and X.dtype.itemsize >= 4:
        return np.asarray(X)
    return X


def shift_points(X, origin):
    """X − origin: in float64 for host points (before any cast to float32;
    JAX arrays of 32/64-bit integers go to the host for it); for host points
    and a traced origin (a model passed into ``jax.jit``), as float32 parts
    hi + lo of X, hi − origin being exact for points near the origin; else in
    X's floating dtype (JAX arrays, under ``jax.jit`` too).  X itself when
    origin is None."""
    if origin is None:
        return X
    X = _wide_on_host(X)
    if isinstance(X, np.ndarray):
        if not isinstance(origin, jax.core.Tracer):
            return X.astype(np.float64) - np.asarray(origin, np.float64)
        hi = X.astype(origin.dtype)  # the float32 cast alone loses what lo keeps
        lo = (X.astype(np.float64) - hi).astype(origin.dtype)
        # the barrier keeps XLA from folding the two constants first, (hi + lo) − origin,
        # which rounds hi + lo back to hi (it did for 120 × 4 points at 10⁸)
        return jax.lax.optimization_barrier(jnp.asarray(hi) - origin) + jnp.asarray(lo)
    Xf = as_float(X)
    return Xf - jnp.asarray(origin, Xf.dtype)


def as_float(X):
    """Points as a floating JAX array to compute distances in: float32 or float64
    stay, anything else becomes the default float (float32, or float64 under
    ``jax_enable_x64``) — integers and bools on the host (jnp.asarray would
    first wrap int64 values beyond the int32 range), float16/bfloat16 (whose
    squared distances overflow) and long doubles (which JAX cannot hold) too."""
    if isinstance(X, jax.Array):
        return X if X.dtype in (jnp.float32, jnp.float64) else X.astype(jnp.result_type(float))
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64 if jax.config.jax_enable_x64 else np.float32)
    return to_device(X)
