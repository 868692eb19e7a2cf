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
    """The point to subtract from host points before their cast to float32,
    or None when no feature needs it (float32 or narrow-integer data, or
    every feature's |mean| ≤ ``CENTRE_RATIO`` × its range).

    A centred feature's origin is its mean, others' 0; distances are
    invariant under the shift: callers subtract it from the training and the
    query points alike (:func:`shift_points`), in float64 (integers: in
    exact integer arithmetic), before the cast.  The origin is held by
    float32 numbers, so that a float32 model holds it exactly:

    * (d,): each centred feature's mean rounded to float32, where that lies
      within ``CENTRE_RATIO`` × the feature's range of the mean (points at
      10⁸ ± 1, the float32 step there being 8): the shifted points are then
      as near 0 as data that need no centring;
    * (2, d): else float32 parts hi + lo of the mean rounded to 48
      significant bits (:func:`exact_origin`), their sum in float64 being
      the origin.  Rounded to float32 alone, the origin of µs timestamps
      (1.7·10¹⁵, a float32 step of 1.3·10⁸) lay up to 6.7·10⁷ from the points,
      whose unit steps the cast then lost (25 % of the rows kept their true
      2-NN); int64 points near 2⁶⁰ 0–4 %; and a constant feature at 10²⁰
      kept a residue of 2·10¹² that swamped every other feature.
    """
    X = _wide_on_host(X)
    if not isinstance(X, np.ndarray) or X.dtype.kind not in "fiu" or X.dtype.itemsize < (8 if X.dtype.kind == "f" else 4):
        return None
    mean = X.mean(axis=0, dtype=np.float64)
    spread = X.max(axis=0).astype(np.float64) - X.min(axis=0)  # a range, not a std: no (m, d) temporary
    far = np.abs(mean) > CENTRE_RATIO * spread
    if not far.any():
        return None
    coarse = np.where(far, mean.astype(np.float32), 0.0).astype(np.float64)
    if np.all(np.abs(mean - coarse)[far] <= CENTRE_RATIO * spread[far]):  # float32 holds it closely enough
        return coarse
    return exact_origin(np.where(far, mean, 0.0), integer=X.dtype.kind in "iu")


#: the significant bits of an origin held by two float32 parts hi + lo (24
#: each): its sum is then exact in float64, and lo exact in float32
ORIGIN_BITS = 48


def exact_origin(point, *, integer: bool = False) -> np.ndarray:
    """(2, d) float64 array of float32 numbers hi, lo with hi + lo (exact in
    float64) the (d,) ``point`` rounded to :data:`ORIGIN_BITS` significant
    bits — to an integer for ``integer`` points, so that integers are
    shifted exactly (:func:`shift_points`).  Features beyond float32's range
    (under x64 only: without it such data are refused) get 0."""
    point = np.asarray(point, np.float64)
    point = np.where(np.abs(point) < float(np.finfo(np.float32).max) / 2, point, 0.0)
    _, e = np.frexp(point)  # |point| < 2^e
    step = np.ldexp(1.0, e - ORIGIN_BITS)
    if integer:
        step = np.maximum(step, 1.0)
    origin = np.round(point / step) * step  # exact: powers of two
    hi = origin.astype(np.float32).astype(np.float64)
    lo = origin - hi  # exact; |lo| ≤ half a float32 step of hi, a multiple of `step`: exact in float32
    return np.stack([hi, lo])


def origin_value(origin) -> np.ndarray:
    """A concrete origin of :func:`float32_origin` ((d,) or float32 parts
    (2, d)) as the (d,) float64 point it stands for (hi + lo, exact)."""
    o = np.asarray(origin, np.float64)
    return o[0] + o[1] if o.ndim == 2 else o


def float32_ready(X, *others):
    """(X, *others) for a search computed in float32: without x64, each shifted
    by X's :func:`float32_origin`, so float64 points far from 0 keep their
    digits in the cast; as they are under x64 (float64 keeps them), but
    for 64-bit integers, which float64 does not hold beyond 2⁵³."""
    if jax.config.jax_enable_x64 and not _wide_integers(X):
        return (X, *others)
    origin = float32_origin(X)
    return tuple(shift_points(a, origin) for a in (X, *others))


def _wide_integers(X) -> bool:
    X = _wide_on_host(X)
    return isinstance(X, np.ndarray) and X.dtype.kind in "iu" and X.dtype.itemsize == 8


def _wide_on_host(X):
    """A concrete JAX array of 32- or 64-bit integers as NumPy (values such
    as int32 timestamps need centring before a cast to float32, which only
    the host does exactly); anything else as it is."""
    if isinstance(X, jax.Array) and not isinstance(X, jax.core.Tracer) and X.dtype.kind in "iu" and X.dtype.itemsize >= 4:
        return np.asarray(X)
    return X


def shift_points(X, origin):
    """X − origin (:func:`float32_origin`: (d,), or float32 parts (2, d)
    whose sum is the origin).  X itself when origin is None.

    * Host points, concrete origin: in float64 (before any cast to
      float32); integers in exact integer arithmetic, so int64 points near
      2⁶⁰ (a float64 step of 256) keep their unit differences.
    * Host points, traced origin (a model passed into ``jax.jit``): X is
      shifted on the host by a float32-parts point P of its own
      (:func:`exact_origin` of its mean), exactly, and P − origin is taken
      part by part in the origin's dtype, each difference exact for points
      near the origin (a float32 cast of X first lost the digits: 0.315
      accuracy for 0.775 at 10⁸ ± 1).
    * JAX arrays (under ``jax.jit`` too; 32/64-bit integers go to the host):
      in X's floating dtype, the parts one after the other.
    """
    if origin is None:
        return X
    X = _wide_on_host(X)
    if isinstance(X, np.ndarray):
        if not isinstance(origin, jax.core.Tracer):
            return _host_minus(X, origin_value(origin))
        hi, lo = (origin[0], origin[1]) if origin.ndim == 2 else (origin, jnp.zeros_like(origin))
        pivot = exact_origin(_host_mean(X), integer=X.dtype.kind in "iu")
        rest = _host_minus(X, origin_value(pivot)).astype(origin.dtype)  # X − P, exact or nearly (X's own spread)
        # the barriers keep XLA from folding the constants first, (P_hi + P_lo) − origin,
        # which rounds them back to float32 (it did for 120 × 4 points at 10⁸)
        d_hi, d_lo = jax.lax.optimization_barrier((jnp.asarray(pivot[0], origin.dtype) - hi,
                                                   jnp.asarray(pivot[1], origin.dtype) - lo))
        return jax.lax.optimization_barrier(d_hi + d_lo) + jnp.asarray(rest)
    Xf = as_float(X)
    if origin.ndim == 2:
        return jax.lax.optimization_barrier(Xf - jnp.asarray(origin[0], Xf.dtype)) - jnp.asarray(origin[1], Xf.dtype)
    return Xf - jnp.asarray(origin, Xf.dtype)


def _host_mean(X: np.ndarray) -> np.ndarray:
    """Each feature's mean in float64 (0 for features that are not finite)."""
    mean = X.mean(axis=0, dtype=np.float64)
    return np.where(np.isfinite(mean), mean, 0.0)


def _host_minus(X: np.ndarray, point: np.ndarray) -> np.ndarray:
    """X − point (d,) in float64 on the host: floats in float64; 64-bit
    integers exactly, X − ⌊point⌋ modulo 2⁶⁴ read as a signed difference
    (exact where it lies within ±2⁶²; farther, the float64 difference)."""
    approx = X.astype(np.float64) - point
    if X.dtype.kind not in "iu" or X.dtype.itemsize < 8:
        return approx  # floats, and integers of up to 32 bits (exact in float64)
    whole = np.floor(point)
    frac = point - whole  # exact
    wrapped = np.array([int(w) % 2**64 for w in whole], np.uint64)
    Xu = X.view(np.uint64) if X.dtype.kind == "i" else X
    exact = (Xu - wrapped).view(np.int64).astype(np.float64) - frac
    return np.where(np.abs(approx) < 2.0**62, exact, approx)


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
