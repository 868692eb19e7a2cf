"""Losses defined once, by a permissible φ (or, for non-balanced losses, by ψ).

A *permissible* φ: [0, 1] → R is convex, twice differentiable on (0, 1) and
symmetric about 1/2 (paper 000 §2; docs/design.md).  Everything else is derived
from φ with :func:`jax.grad`:

====================  ======================================================
b                     φ(0) − φ(1/2) > 0
link                  (∇φ)⁻¹(h), the posterior estimate (paper 003 eq. 9/29)
conjugate φ*(y)       sup_{p∈[0,1]} p·y − φ(p) = y·link(y) − φ(link(y))
surrogate ψ_φ(x)      (φ*(−x) + φ(0)) / b,  ψ_φ(0) = 1   (paper 000 eq. 6)
weight w(e)           −ψ_φ'(e) = link(−e) / b            (paper 000 eq. 11)
H*                    sup ψ_φ'' = 1 / (b · min_p φ''(p))  (= ψ''(0) for the
                      catalogue, paper 000 after eq. 17)
====================  ======================================================

Because the conjugate is taken over [0, 1], the derived link saturates at 0 and
1: for the Gini φ the weights are clip(2(1 − e), 0, 4), which agrees with paper
000 Table 1 row A only while |e| ≤ 1.

Strictly convex losses that are *not* balanced (exponential, Amari's α-loss,
paper 003 Table 1 rows F, G) and N³'s calibrated hinge (paper 002 Table 1 D,
whose generator has φ(0) = ∞) are given by ψ (:func:`from_psi`): w = −ψ',
ψ'' by :func:`jax.grad`, posterior by paper 003 eq. 11,
p̂(h) = ψ'(−h) / (ψ'(h) + ψ'(−h)).

Closed forms in the catalogue are *fast paths only*; ``tests/test_losses.py``
checks each equals the derived quantity on a dense float64 grid.
"""

from __future__ import annotations

import functools
import math
import numbers
import pickle
import threading
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from jaxnn._src.checks import check_real, did_you_mean

Array = jax.Array
Fn = Callable[[Array], Array]

__all__ = [
    "Loss",
    "from_phi",
    "from_psi",
    "get",
    "names",
    "squared",
    "logistic",
    "binary_logistic",
    "matsushita",
    "phi_mu",
    "phi_power",
    "exponential",
    "amari",
    "calibrated_hinge",
]


class Loss(NamedTuple):
    """A loss as a bundle of pure, elementwise, jit-friendly functions.

    Every function maps an array to an array of the same shape and dtype.
    The object is hashable (fields are functions, strings, numbers), so it can
    be a static argument of :func:`jax.jit`; catalogue entries are cached, so
    ``get("logistic") is get("logistic")`` and nothing retraces.

    Attributes:
      name: display name.
      psi: surrogate ψ(x); ψ(0) = 1 for balanced losses.
      weight: w(e) = −ψ'(e) ≥ 0, the boosting weight of an example of edge e.
      curvature: ψ''(x) ≥ 0.
      posterior: p̂(h) ∈ [0, 1], the class posterior for a score h.
      posterior_inverse: h such that p̂(h) = p (used by UNN's fast step).
      hstar: ``hstar(dtype)`` → sup ψ'' as a scalar (∞ if unbounded).
      balanced: True when built from a permissible φ.
      phi, dphi, link, conjugate: φ, ∇φ, (∇φ)⁻¹ and φ* (None unless balanced).
      b: ``b(dtype)`` → φ(0) − φ(1/2) (None unless balanced).
      unn_closed_form: optional ``(w_plus, w_minus) → δ`` solving UNN's
        eq. (10) exactly when weights are multiplicative (exponential loss).
      bounded: whether sup ψ'' < ∞, where known when the loss is built (a
        balanced loss: its φ'' is bounded away from 0); None: read ``hstar``.
    """

    name: str
    psi: Fn
    weight: Fn
    curvature: Fn
    posterior: Fn
    posterior_inverse: Fn
    hstar: Callable[[object], Array]
    balanced: bool
    phi: Optional[Fn] = None
    dphi: Optional[Fn] = None
    link: Optional[Fn] = None
    conjugate: Optional[Fn] = None
    b: Optional[Callable[[object], Array]] = None
    unn_closed_form: Optional[Callable[[Array, Array], Array]] = None
    bounded: Optional[bool] = None

    def __repr__(self) -> str:  # functions make the default repr unreadable
        return f"Loss({self.name!r})"

    def __reduce__(self):
        """Pickle by name: :func:`get` rebuilds the same cached catalogue
        loss, so jitted functions do not retrace after a round trip.  A loss
        built by :func:`from_phi` / :func:`from_psi` holds closures, which
        pickle cannot store: it raises ``pickle.PicklingError``."""
        try:
            named = get(self.name) is self
        except (TypeError, ValueError):
            named = False
        if not named:
            raise pickle.PicklingError(
                f"loss {self.name!r} is not one of jaxnn.losses.names(), and pickle cannot store the functions "
                "it was built from; pickle a model fitted with a catalogue loss, or keep the model's arrays "
                "(alpha, X, Y) and rebuild the loss with from_phi/from_psi"
            )
        return (get, (self.name,))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        """A loss is immutable: a copy is the loss itself (``copy.deepcopy``
        went through :meth:`__reduce__`, so scikit-learn's ``clone`` of an
        estimator with a from_phi/from_psi loss raised ``PicklingError``)."""
        return self


# --------------------------------------------------------------------------
# generic numerics
# --------------------------------------------------------------------------


def _elementwise_grad(f: Fn) -> Fn:
    """x ↦ f'(x) elementwise, by forward-mode differentiation of f."""

    def df(x):
        x = jnp.asarray(x)
        return jax.jvp(f, (x,), (jnp.ones_like(x),))[1]

    return df


def _scalar(dtype, value):
    return jnp.asarray(value, dtype=dtype)


def _per_dtype_program(constant: Callable[[jnp.dtype], Array]) -> Callable[[object], Array]:
    """A loss's constant at a dtype (H*), computed by one compiled program per
    dtype: evaluated eagerly, each of φ's operations compiled on its own."""
    compiled = jax.jit(constant, static_argnums=0)

    @functools.wraps(constant)
    def at(dtype):
        return compiled(jnp.dtype(dtype))

    return at


def _float_dtype(x) -> jnp.dtype:
    x = jnp.asarray(x)
    return x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else jnp.result_type(float)


def increasing_root(f: Fn, target: Array, lo: Array, hi: Array, x0: Array, iters: int) -> Array:
    """Solve f(x) = target elementwise for increasing f on [lo, hi].

    Safeguarded Newton (derivative by :func:`jax.jvp`) with a bisection
    fallback whenever a Newton iterate leaves the current bracket; a fixed
    number of iterations so it is jit- and vmap-friendly.  When the target is
    outside [f(lo), f(hi)] the result converges to the nearer end of the
    bracket (this is how the derived link saturates at 0 or 1).
    """
    target = jnp.asarray(target)

    def body(_, state):
        x, lo, hi, dx_old = state
        fx, dfx = jax.jvp(f, (x,), (jnp.ones_like(x),))
        g = fx - target
        # g = 0: the root, both ends close on it (it was bisected away from);
        # g NaN (f overflowed far out, e.g. a hand-written log(1 + e^{−x})): the
        # root is taken to lie back toward the start (neither end moved before,
        # and the iterates sat on the same midpoint: 0.5 ↦ −5000)
        lost = jnp.isnan(g)
        lo = jnp.where((g <= 0) | (lost & (x < x0)), x, lo)
        hi = jnp.where((g >= 0) | (lost & (x >= x0)), x, hi)
        step = g / dfx
        newton = x - step
        # Newton only while it lands in the bracket and at least halves the
        # previous step (rtsafe's rule); otherwise bisect.
        ok = jnp.isfinite(newton) & (newton > lo) & (newton < hi) & (2.0 * jnp.abs(step) <= jnp.abs(dx_old))
        x_new = jnp.where(ok, newton, 0.5 * (lo + hi))
        return x_new, lo, hi, jnp.abs(x_new - x)

    shape = jnp.broadcast_shapes(target.shape, jnp.shape(x0))
    x0 = jnp.broadcast_to(x0, shape).astype(target.dtype)
    lo = jnp.broadcast_to(lo, shape).astype(target.dtype)
    hi = jnp.broadcast_to(hi, shape).astype(target.dtype)
    x, _, _, _ = jax.lax.fori_loop(0, iters, body, (x0, lo, hi, hi - lo))
    return x


def root_iterations(dtype) -> int:
    return 80 if jnp.dtype(dtype) == jnp.float64 else 50


def _derived_link(dphi: Fn, d2phi: Fn) -> Fn:
    """(∇φ)⁻¹ for a symmetric convex φ, by a safeguarded Newton in log p.

    By symmetry ∇φ(1 − p) = −∇φ(p), so we solve ∇φ(q) = −|h| for q ≤ 1/2 on
    a logarithmic scale (full relative precision for tiny q) and return q or
    1 − q.  Targets beyond ∇φ's range saturate at q → 0 (link clips to [0, 1]).
    """

    @jax.custom_jvp
    def link(h):
        h = jnp.asarray(h)
        dtype = _float_dtype(h)
        h = h.astype(dtype)
        s_min = math.log(float(jnp.finfo(dtype).tiny)) * 0.95
        s_max = math.log(0.5)

        def g(s):
            return dphi(jnp.exp(s))

        s = increasing_root(g, -jnp.abs(h), s_min, s_max, jnp.full_like(h, -1.0), root_iterations(dtype))
        q = jnp.exp(s)
        q = jnp.where(s <= s_min * 0.999, 0.0, q)  # saturated: exactly 0
        return jnp.where(h > 0, 1.0 - q, q)

    @link.defjvp
    def _link_jvp(primals, tangents):
        (h,), (t,) = primals, tangents
        p = link(h)
        inside = (p > 0) & (p < 1)
        slope = jnp.where(inside, 1.0 / d2phi(jnp.clip(p, 1e-30, 1 - 1e-7)), 0.0)
        return p, slope * t

    # jitted once per loss: called eagerly (predict_proba), the root finder's
    # fori_loop would be traced and compiled anew on every call
    return jax.jit(link)


#: a φ whose curvature falls below this fraction of φ''(½) anywhere in (0, 1)
#: — near 0 or 1, in practice — is taken to have none bounded away from 0:
#: H* = 1/(b·min φ'') is then infinite, and GNNB / N³ refuse the loss
MIN_CURVATURE_FRACTION = 1e-3


def _curvature_grid() -> np.ndarray:
    """Where :func:`_min_curvature` reads φ'': a dense grid of (0, 1) reaching
    10⁻⁷ from either end, and ½ (float32)."""
    p = np.linspace(1e-4, 1 - 1e-4, 4001)
    edges = 10.0 ** -np.arange(5, 8)
    return np.concatenate([p, [0.5], edges, 1 - edges]).astype(np.float32)


def _min_curvature(curvatures: np.ndarray, curv_half: float) -> float:
    """min over (0, 1) of φ'', from its values on :func:`_curvature_grid`
    (for H*); 0 when it falls below :data:`MIN_CURVATURE_FRACTION`·φ''(½).

    A grid stopping at 10⁻⁴ read φ(p) = −sin(πp)/π, whose φ'' → 0 at the ends,
    as H* = 3183 — and GNNB then barely moved (|α| ≤ 0.01 after 20 passes)."""
    vals = curvatures[np.isfinite(curvatures)]
    low = float(np.min(vals))
    return 0.0 if low < MIN_CURVATURE_FRACTION * curv_half else low


# --------------------------------------------------------------------------
# constructors
# --------------------------------------------------------------------------


# what JAX raises when a user's φ or ψ leaves JAX for numpy, math or Python
# control flow on a traced value (TracerBoolConversionError is a
# ConcretizationTypeError)
_TRACER_ERRORS = (
    jax.errors.TracerArrayConversionError,
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerIntegerConversionError,
)


def _untraceable(symbol: str, loss_name: str, err: Exception) -> TypeError:
    """The TypeError for a φ or ψ that JAX cannot trace (``err`` is one of
    :data:`_TRACER_ERRORS`)."""
    jax_says = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return TypeError(
        f"{symbol} of loss {loss_name!r} must be written with jax.numpy (jnp) operations and be traceable by JAX "
        f"(jax.grad, jax.vmap, jax.jit): use jnp.sqrt, jnp.log, jnp.where, ... instead of numpy (np.*), math.*, "
        f"float()/int() or a Python if/else on its argument (JAX said: {type(err).__name__}: {jax_says})"
    )


def _numbers_from(evaluate: Callable[[Array], tuple], at: np.ndarray, name: str) -> tuple[np.ndarray, ...]:
    """A user function's values, ``evaluate(at)``, computed in one compiled
    program and returned as float64 NumPy arrays; a TypeError names ``name``
    when it does not map real numbers to real numbers (it returned a string,
    a vector…).  JAX's tracer errors pass through, for the caller to name the
    loss (:func:`_untraceable`).

    One program, not the operations one by one: evaluated eagerly, each of
    φ's operations would compile on its own on first use, dozens of
    compilations in a new process's first ``logistic()`` (and so its first
    fit)."""
    try:
        values = jax.jit(evaluate)(at)
        for value in values:
            if not jnp.issubdtype(value.dtype, jnp.number):
                raise TypeError(f"dtype {value.dtype}")
        return tuple(np.asarray(v, dtype=np.float64) for v in values)
    except _TRACER_ERRORS:
        raise
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must map a real number to a real number: {err}") from None


def _scalar_values(values: tuple[np.ndarray, ...], name: str) -> list[float]:
    """The values as floats, or the TypeError of :func:`_numbers_from` for a
    function that returned something other than one number per point."""
    for v in values:
        if v.shape != ():
            raise TypeError(f"{name} must map a real number to a real number: shape {v.shape}")
    return [float(v) for v in values]


def from_phi(
    phi: Fn,
    *,
    name: str = "custom_phi",
    link: Optional[Fn] = None,
    psi: Optional[Fn] = None,
) -> Loss:
    """Build a balanced convex loss from a permissible φ (convex convention).

    Args:
      phi: scalar function on [0, 1], convex, symmetric about 1/2, finite at 0
        (write 0·log 0 with :func:`jax.scipy.special.xlogy`).
      name: display name.
      link, psi: optional closed-form fast paths for (∇φ)⁻¹ and ψ_φ; they must
        equal the derived functions (the catalogue's are tested to).

    Returns:
      A :class:`Loss` whose every quantity is derived from ``phi``.

    φ is differentiated with :func:`jax.grad` and run under :func:`jax.vmap`
    and :func:`jax.jit`, so it must be written with ``jax.numpy`` (``jnp``)
    operations and be traceable: no ``numpy``/``math`` functions, ``float()``
    or Python ``if``/``else`` on its argument (use ``jnp.where``).

    Raises:
      TypeError: ``phi`` is not callable, does not return a real number, or
        is not traceable by JAX (written with numpy, math or Python control
        flow on its argument).
      ValueError: φ is not permissible (b ≤ 0, asymmetric or not convex at 1/2).
    """
    if not callable(phi):
        raise TypeError(f"phi must be a callable on [0, 1], got {type(phi).__name__}")
    d2phi = _elementwise_grad(_elementwise_grad(phi))

    def permissibility(at):  # at = (0, ½, 0.2, 0.8, the curvature grid…)
        return (phi(at[0]) - phi(at[1]), phi(at[2]), phi(at[3]), d2phi(at[1]), jax.vmap(d2phi)(at[4:]))

    try:  # φ traced once (jit, vmap and the second derivative): untraceable code shows here
        *scalars, curvatures = _numbers_from(
            permissibility, np.concatenate([np.float32([0.0, 0.5, 0.2, 0.8]), _curvature_grid()]), "phi")
    except _TRACER_ERRORS as err:
        raise _untraceable("phi (φ)", name, err) from None
    b32, phi_02, phi_08, curv_half = _scalar_values(tuple(scalars), "phi")
    if not (np.isfinite(b32) and b32 > 0):
        raise ValueError(f"phi is not permissible: b = phi(0) - phi(1/2) = {b32} must be finite and > 0")
    if abs(phi_02 - phi_08) > 1e-4 * max(1.0, abs(b32)):
        raise ValueError("phi is not permissible: it must be symmetric about 1/2 (phi(p) == phi(1-p))")
    if not curv_half > 0:
        raise ValueError(f"phi is not permissible: phi''(1/2) = {curv_half} must be > 0 (strictly convex)")
    return _phi_loss(phi, name=name, link=link, psi=psi,
                     min_curv_ratio=_min_curvature(curvatures, curv_half) / curv_half)


def _phi_loss(phi: Fn, *, name: str, link: Optional[Fn], psi: Optional[Fn], min_curv_ratio: float) -> Loss:
    """The :class:`Loss` of a permissible φ (:func:`from_phi` checks it), whose
    curvature φ'' is smallest at ½ divided by ``min_curv_ratio``: every
    quantity derived from φ, none computed here (no program compiles).  The
    fixed catalogue losses are built here directly, with ratio 1 (their φ''
    is smallest at ½; tests/test_losses.py puts each through from_phi)."""
    dphi = _elementwise_grad(phi)
    d2phi = _elementwise_grad(dphi)

    def b_of(dtype) -> Array:
        return phi(_scalar(dtype, 0.0)) - phi(_scalar(dtype, 0.5))

    derived_link = _derived_link(dphi, d2phi)
    link_fn = link if link is not None else derived_link

    def conjugate(y):
        p = link_fn(y)
        return y * p - phi(p)

    def derived_psi(x):
        x = jnp.asarray(x)
        dtype = _float_dtype(x)
        return (conjugate(-x.astype(dtype)) + phi(_scalar(dtype, 0.0))) / b_of(dtype)

    psi_fn = psi if psi is not None else derived_psi

    def weight(e):
        e = jnp.asarray(e)
        return link_fn(-e) / b_of(_float_dtype(e))

    curvature = _elementwise_grad(lambda x: -weight(x))

    @_per_dtype_program
    def hstar(dtype):
        return 1.0 / (b_of(dtype) * d2phi(_scalar(dtype, 0.5)) * min_curv_ratio)

    return Loss(
        name=name,
        psi=psi_fn,
        weight=weight,
        curvature=curvature,
        posterior=link_fn,
        posterior_inverse=dphi,
        hstar=hstar,
        balanced=True,
        phi=phi,
        dphi=dphi,
        link=link_fn,
        conjugate=conjugate,
        b=b_of,
        bounded=min_curv_ratio > 0,
    )


def from_psi(
    psi: Fn,
    *,
    name: str = "custom_psi",
    bounded_curvature: bool = False,
    domain_min: float = -math.inf,
    unn_closed_form: Optional[Callable[[Array, Array], Array]] = None,
) -> Loss:
    """Build a strictly convex (not necessarily balanced) loss from ψ.

    Args:
      psi: scalar convex decreasing surrogate ψ(x), finite for x > domain_min.
      name: display name.
      bounded_curvature: True if sup ψ'' = ψ''(0) < ∞ (then GNNB/N³ can use
        the loss); False (exponential, Amari) restricts the loss to UNN.
      domain_min: ψ is +∞ below this edge (Amari's α-loss); the weight and
        curvature are evaluated at the clamped edge there.
      unn_closed_form: optional exact UNN step, ``(W+, W−) → δ``.

    Derived: w = −ψ' (jax.grad), ψ'' (jax.grad twice), p̂ by paper 003 eq. 11.
    ψ is differentiated and traced (:func:`jax.grad`, :func:`jax.jit`), so it
    must be written with ``jax.numpy`` (``jnp``) operations: no
    ``numpy``/``math`` functions, ``float()`` or Python ``if``/``else`` on its
    argument (use ``jnp.where``); otherwise a TypeError says so.
    """
    if not callable(psi):
        raise TypeError(f"psi must be a callable, got {type(psi).__name__}")
    if isinstance(domain_min, (bool, np.bool_)) or not isinstance(domain_min, numbers.Real) or math.isnan(domain_min) \
            or domain_min == math.inf:
        raise TypeError(f"domain_min must be a real number or -inf, got {domain_min!r}")

    # a finite domain is read from 10⁻⁶ of its edge on (ψ' is infinite at the edge)
    inner_min = domain_min + 1e-6 * abs(domain_min) if math.isfinite(domain_min) else -math.inf

    def clamp(x):
        x = jnp.asarray(x)
        x = x.astype(_float_dtype(x))
        if math.isfinite(domain_min):
            x = jnp.maximum(x, inner_min)
        return x

    dpsi = _elementwise_grad(psi)
    d2psi = _elementwise_grad(dpsi)

    def psi_fn(x):
        x = jnp.asarray(x)
        x = x.astype(_float_dtype(x))
        if math.isfinite(domain_min):
            return jnp.where(x > domain_min, psi(clamp(x)), jnp.inf)
        return psi(x)

    def weight(e):
        return -dpsi(clamp(e))

    def curvature(x):
        return d2psi(clamp(x))

    def posterior(h):
        # eq. 11, p̂ = ψ'(−h)/(ψ'(−h) + ψ'(h)), as 1/(1 + ψ'(h)/ψ'(−h)): the plain
        # quotient is inf/inf (NaN) once ψ'(−h) overflows (exponential loss:
        # |h| ≥ 89 in float32), while the ratio only goes to 0 or +inf
        return 1.0 / (1.0 + dpsi(clamp(h)) / dpsi(clamp(-h)))

    @jax.jit  # once per loss: eagerly (N³'s initial edges) the root finder recompiled on every call
    def posterior_inverse(p):
        p = jnp.asarray(p)
        dtype = _float_dtype(p)
        p = p.astype(dtype)
        # ±10⁸: the calibrated hinge's p̂⁻¹(π) is −(1/π − 2), ≈ −2C for N³'s
        # class-balanced start with C classes (±10⁴ cut it off from C ≈ 5000)
        # a finite domain: from where clamp starts (0.999·domain_min left p̂ ≥ 3.4e-4 out
        # of reach for Amari's α = −0.9: p̂ → 0 only at the domain's edge)
        lo = inner_min if math.isfinite(domain_min) else -1e8
        hi = -lo
        return increasing_root(posterior, p, lo, hi, jnp.zeros_like(p), root_iterations(dtype))

    @_per_dtype_program
    def hstar(dtype):
        if not bounded_curvature:
            return jnp.asarray(jnp.inf, dtype=dtype)
        return d2psi(_scalar(jnp.dtype(dtype), 0.0))

    # ψ must be a convex decreasing surrogate: checked where the boosting steps
    # need it, at the margin 0 (inside the domain)
    x0 = 0.0 if domain_min < 0 else domain_min + 1.0
    def convexity(at):
        return psi_fn(at[0]), dpsi(at[0]), d2psi(at[0])

    try:  # ψ traced once under jit, which catches Python control flow on x (jax.grad alone lets it through)
        values = _numbers_from(convexity, np.float32([x0]), "psi")
    except _TRACER_ERRORS as err:
        raise _untraceable("psi (ψ)", name, err) from None
    value, slope, bend = _scalar_values(values, "psi")
    if not (math.isfinite(value) and slope < 0 and bend > 0):
        raise ValueError(f"psi is not a strictly convex decreasing surrogate: at x = {x0:g}, psi = {value:g}, "
                         f"psi' = {slope:g} (must be < 0), psi'' = {bend:g} (must be > 0)")
    return Loss(
        name=name,
        psi=psi_fn,
        weight=weight,
        curvature=curvature,
        posterior=posterior,
        posterior_inverse=posterior_inverse,
        hstar=hstar,
        balanced=False,
        unn_closed_form=unn_closed_form,
    )


# --------------------------------------------------------------------------
# catalogue (paper 000 Table 1, paper 003 Table 1, paper 004 eqs 26–29, 107)
# --------------------------------------------------------------------------

_LN2 = math.log(2.0)


def _entropy_phi(p):
    return xlogy(p, p) + xlogy(1.0 - p, 1.0 - p)


_BUILD_LOCK = threading.RLock()


def _built_once(factory):
    """``factory`` cached per argument, built by one thread at a time: each
    catalogue loss is one object (pickling and the jitted functions' caches go
    by identity).  A bare ``functools.lru_cache`` let threads that asked at
    once each build a copy, keeping only the last: models fit with the others
    would not pickle ("loss 'logistic' is not one of jaxnn.losses.names()")
    and compiled again."""
    cached = functools.lru_cache(maxsize=None)(factory)

    @functools.wraps(factory)
    def once(*args):
        with _BUILD_LOCK:  # reentrant: a factory may ask for another
            return cached(*args)

    return once


@_built_once
def squared() -> Loss:
    """Gini φ(p) = p² − p = −p(1 − p); ψ(x) = (1 − x)² on [−1, 1] (Table 1 A)."""

    def psi(x):  # (φ*(−x) + φ(0))/b with φ* over [0, 1]: quadratic, then linear, then 0
        return jnp.where(x > 1, 0.0, jnp.where(x < -1, -4.0 * x, (1.0 - x) ** 2))

    return _phi_loss(
        lambda p: p * p - p,
        name="squared",
        link=lambda h: jnp.clip(0.5 * (1.0 + h), 0.0, 1.0),
        psi=psi,
        min_curv_ratio=1.0,
    )


@_built_once
def logistic() -> Loss:
    """Entropy φ (natural log); ψ(x) = log2(1 + e^{−x}) (Table 1 B)."""
    return _phi_loss(
        _entropy_phi,
        name="logistic",
        link=jax.nn.sigmoid,
        psi=lambda x: jax.nn.softplus(-x) / _LN2,
        min_curv_ratio=1.0,
    )


@_built_once
def binary_logistic() -> Loss:
    """Entropy φ in log2; ψ(x) = log2(1 + 2^{−x}) (Table 1 C)."""
    return _phi_loss(
        lambda p: _entropy_phi(p) / _LN2,
        name="binary_logistic",
        link=lambda h: jax.nn.sigmoid(h * _LN2),
        psi=lambda x: jax.nn.softplus(-x * _LN2) / _LN2,
        min_curv_ratio=1.0,
    )


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _sqrt_link(h, a):
    """½(1 + h/√(a² + h²)), the link of φ = −(μ + a√(p(1 − p))), without
    cancellation: with s = |h| and r = √(a² + s²), the smaller side is
    q = a²/(2r(r + s)) (as (r − s)(r + s) = a²), and the link is q for
    h < 0, 1 − q for h ≥ 0.  Where s² overflows, r = ∞ gives q = 0, which
    is q rounded (a²/4s² underflows there).  The plain form would read ½
    from |h| ≈ 1.8·10¹⁹ in float32 and 0 for link(−10⁴) (1 − 0.99999999 → 0).
    It is the hot function (the weights are link(−margin)/b, eq. 11).  Its derivative is
    given, a²/(2r³): through |h| autodiff read link'(0) = 0."""
    s = jnp.abs(h)
    r = jnp.sqrt(a * a + s * s)
    q = jnp.where(s == 0, 0.5, a * a / (2.0 * r * (r + s)))  # exactly ½ at 0 (a²/2a² rounded: 0.49999994)
    return jnp.where(h >= 0, 1.0 - q, q)


@_sqrt_link.defjvp
def _sqrt_link_jvp(a, primals, tangents):
    (h,), (dh,) = primals, tangents
    r = jnp.sqrt(a * a + h * h)
    return _sqrt_link(h, a), a * a / (2.0 * r * r * r) * dh


def _matsushita_psi(x):
    """ψ(x) = √(1 + x²) − x as 1/(r + s) + (s − x), s = |x|, r = hypot(1, s)
    (r − s = 1/(r + s)): no term cancels.  The plain difference read float32
    ψ(10⁴) = 0 for 5·10⁻⁵ (and the weight −ψ' with it) and overflowed from
    x ≈ 1.8·10¹⁹; this form costs the same in a boosting pass."""
    s = jnp.where(x >= 0, x, -x)  # |x| with derivative 1 at 0, so ψ'(0) = −1
    r = jnp.hypot(1.0, s)
    return 1.0 / (r + s) + (s - x)


@_built_once
def matsushita() -> Loss:
    """Matsushita φ(p) = −√(p(1 − p)); ψ(x) = −x + √(1 + x²) (Table 1 D)."""
    return _phi_loss(
        lambda p: -jnp.sqrt(p * (1.0 - p)),
        name="matsushita",
        link=lambda h: _sqrt_link(h, 1.0),
        psi=_matsushita_psi,
        min_curv_ratio=1.0,
    )


def _number(x: float) -> str:
    """x for a loss's name: short (``:g``) when that reads back exactly, so
    :func:`get` of the name rebuilds the same loss."""
    short = f"{x:g}"
    return short if float(short) == x else repr(x)


def phi_mu(mu: float) -> Loss:
    """φ_μ(p) = −(μ + (1 − μ)√(p(1 − p))), μ ∈ [0, 1) (paper 004 eq. 27)."""
    return _phi_mu(check_real(mu, "phi_mu's mu", low=0.0, high=1.0, high_open=True))


@_built_once
def _phi_mu(mu: float) -> Loss:
    a = 1.0 - mu
    return from_phi(
        lambda p: -(mu + a * jnp.sqrt(p * (1.0 - p))),
        name=f"phi_mu({_number(mu)})",
        link=lambda h: _sqrt_link(h, a),
    )


def phi_power(v: float) -> Loss:
    """φ_v(p) = −(p(1 − p))^v, v ∈ (0, 1) (paper 004 eq. 107); link derived."""
    return _phi_power(check_real(v, "phi_power's v", low=0.0, high=1.0, low_open=True, high_open=True))


@_built_once
def _phi_power(v: float) -> Loss:
    return from_phi(lambda p: -((p * (1.0 - p)) ** v), name=f"phi_power({_number(v)})")


@_built_once
def exponential() -> Loss:
    """ψ(x) = e^{−x} (paper 003 Table 1 F; AdaBoost). UNN only (ψ'' unbounded)."""

    def closed(w_plus, w_minus):  # paper 001 Table 1: δ = ½ log(W+/W−)
        return 0.5 * (jnp.log(w_plus) - jnp.log(w_minus))

    return from_psi(lambda x: jnp.exp(-x), name="exponential", unn_closed_form=closed)


def amari(alpha: float = 0.5) -> Loss:
    """Amari's α-loss ψ(x) = (1 + (1 − α²)x/4)^{−(1+α)/(1−α)}, α ∈ (−1, 1).

    Paper 003 Table 1 G. Finite for x > −4/(1 − α²). UNN only.
    """
    return _amari(check_real(alpha, "amari's alpha", low=-1.0, high=1.0, low_open=True, high_open=True))  # one cached object per α


@_built_once
def _amari(alpha: float) -> Loss:
    c = (1.0 - alpha * alpha) / 4.0
    power = -(1.0 + alpha) / (1.0 - alpha)
    return from_psi(
        lambda x: (1.0 + c * x) ** power,
        name=f"amari({_number(alpha)})",
        domain_min=-1.0 / c,
    )


@_built_once
def calibrated_hinge() -> Loss:
    """N³'s calibrated hinge (paper 002 Table 1 D), ψ(0) = 1:

    ψ(x) = 1 + max(0, −x) − log(1 + |x|/2), transfer f(x) = (1 + max(0, x))/(2 + |x|).
    Its generator has φ(0) = ∞, so it is given by ψ; sup ψ'' = ψ''(0) = 1/4.
    """
    return from_psi(
        lambda x: 1.0 + jax.nn.relu(-x) - jnp.log1p(jnp.abs(x) / 2.0),
        name="calibrated_hinge",
        bounded_curvature=True,
    )


_CATALOGUE: dict[str, Callable[[], Loss]] = {
    "squared": squared,
    "logistic": logistic,
    "binary_logistic": binary_logistic,
    "matsushita": matsushita,
    "exponential": exponential,
    "amari": amari,
    "calibrated_hinge": calibrated_hinge,
}


def names() -> list[str]:
    """Names accepted by :func:`get` (parametric: ``phi_mu(μ)``, ``phi_power(v)``, ``amari(α)``)."""
    return sorted(_CATALOGUE) + ["phi_mu(<mu>)", "phi_power(<v>)", "amari(<alpha>)"]


def get(loss) -> Loss:
    """A :class:`Loss` from a name (``"logistic"``, ``"phi_mu(0.3)"``…) or a Loss."""
    if isinstance(loss, Loss):
        return loss
    if not isinstance(loss, str):
        raise TypeError(f"loss must be a name or a jaxnn.losses.Loss, got {type(loss).__name__}")
    key = loss.strip().lower()
    if key in _CATALOGUE:
        return _CATALOGUE[key]()
    for prefix, factory in (("phi_mu(", phi_mu), ("phi_power(", phi_power), ("amari(", amari)):
        if key.startswith(prefix) and key.endswith(")"):
            try:
                value = float(key[len(prefix) : -1])
            except ValueError:
                break
            return factory(value)
    raise ValueError(f"unknown loss {loss!r}; known losses: {', '.join(names())}" + did_you_mean(loss, names()))
