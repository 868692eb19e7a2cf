"""Leveraging rules: how one boosting step computes δ for one example.

An algorithm is a small frozen dataclass (hashable, so it is a static
argument of the jitted loop and equal parameters never retrace) with two
pure methods:

* ``init_edges(loss, Y) -> E0 (m, C)``: the starting edges e_ic;
* ``delta(loss, e, r, n, m, layout=BLOCK) -> δ``: the leveraging update of
  example j for every class, from the edges ``e`` of its inverse
  neighbourhood, ``r = y_ic·y_jc`` (0 on padding), ``n = n_j`` and the sample
  size ``m``.  In a weighted fit r carries the member's sample weight,
  r = u_i·y_ic·y_jc, and n is Σ_{i∈inv(j)} u_i: every rule reads sign(r) where
  the edge moves and |r| as the member's weight, so δ is the step of the
  weighted risk (:mod:`jaxnn._src.steps`), and the unweighted step when
  every u_i = 1.  With the default :data:`BLOCK` layout ``e, r`` are (P, C) (one
  example) and δ is (C,); with a :class:`Segments` layout they are flat edge
  lists (L, C) of several examples whose inverse neighbourhoods are disjoint
  (one colour of the parallel schedule) and δ is (S, C).

Edges, not weights, are the state (docs/design.md, *The step core*): weights are w(e).
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import jax
import jax.numpy as jnp

from typing import NamedTuple

from jaxnn._src.checks import check_bool, check_real, did_you_mean
from jaxnn._src.losses import Loss, increasing_root, root_iterations
from jaxnn._src.params import check

__all__ = ["GNNB", "UNN", "UNNFast", "N3", "gnnb", "unn", "unn_fast", "n3", "get", "names", "BLOCK", "Segments"]


class _Block(NamedTuple):
    """One example: edges (P, C) summed over axis 0 into δ (C,)."""

    def total(self, x):
        return jnp.sum(x, axis=0)

    def spread(self, d):
        return d[None, :]


class Segments(NamedTuple):
    """Several examples at once: edge ℓ belongs to example ``seg[ℓ]`` < ``size``."""

    seg: jax.Array
    size: int

    def total(self, x):
        return jax.ops.segment_sum(x, self.seg, num_segments=self.size)

    def spread(self, d):
        return d[self.seg]


BLOCK = _Block()


def _eta(loss: Loss, e, r, layout):
    """η(c, j) = Σ_{i∈inv(j)} w(e_i) r_i — paper 000 eq. (9)."""
    return layout.total(loss.weight(e) * r)


def _newton_delta(loss: Loss, e, r, n, scale: float, layout):
    """δ = scale·η/(H*·n_j); δ = 0 when n_j = 0 (n_j: a count, or the
    weighted count Σ u_i, the curvature bound of the weighted risk)."""
    hstar = loss.hstar(e.dtype)
    return scale * _eta(loss, e, r, layout) / (hstar * jnp.where(n > 0, n, 1).astype(e.dtype))


def _require_bounded(loss: Loss, name: str) -> None:
    """ValueError unless sup ψ'' < ∞: ``loss.bounded`` where the loss knows
    it, else H* read at float32 (one small program)."""
    bounded = loss.bounded if loss.bounded is not None else math.isfinite(float(loss.hstar(jnp.float32)))
    if not bounded:
        raise ValueError(
            f"{name} needs a loss with bounded curvature (sup psi'' < inf); "
            f"{loss.name!r} has none: use algorithm='unn' or a balanced loss"
        )


@dataclasses.dataclass(frozen=True)
class GNNB:
    """Gentle NN boosting (paper 000 Alg. 1): δ = 2(1−ε)η/(H* n_j), eq. (10)."""

    epsilon: float = 0.5
    name = "gnnb"

    def __post_init__(self):  # the factory's check: NumPy numbers pass, stored as a float (equal, hashed alike)
        object.__setattr__(self, "epsilon", _check_epsilon(self.epsilon))

    def check(self, loss: Loss) -> None:
        _require_bounded(loss, "GNNB")

    def init_edges(self, loss: Loss, Y):
        return jnp.zeros(Y.shape, Y.dtype)

    def delta(self, loss: Loss, e, r, n, m: int, layout=BLOCK):
        return _newton_delta(loss, e, r, n, 2.0 * (1.0 - float(self.epsilon)), layout)


@dataclasses.dataclass(frozen=True)
class N3:
    """Newton NN (paper 002 Alg. 1): the bounded Newton step δ = η/(H* n_j)
    with the class-balanced initial weights w_i ∝ 1/‖1 + y_ic y_i‖₁.

    The initial weights are carried as initial edges e0 with
    p̂(−e0_ic) = π_ic = 1/(2·#{l : y_il = y_ic}) (so w(e0) = π/b and the
    weight update of Table 2 is a shift of e0 by δ·r).  With C = 2 this is GNNB
    with ε = 1/2.  Rows A (logistic) and D (calibrated hinge) of paper 002
    Table 2 are reproduced exactly; rows B, C there use another weight
    normalisation — we keep the step derived from ψ.
    """

    name = "n3"

    def check(self, loss: Loss) -> None:
        _require_bounded(loss, "N3")

    def init_edges(self, loss: Loss, Y):
        n_pos = jnp.sum(Y > 0, axis=1, keepdims=True)
        same = jnp.where(Y > 0, n_pos, Y.shape[1] - n_pos)
        pi = 1.0 / (2.0 * same.astype(Y.dtype))
        e0 = -loss.posterior_inverse(pi)
        return jnp.where(pi == 0.5, 0.0, e0).astype(Y.dtype)

    def delta(self, loss: Loss, e, r, n, m: int, layout=BLOCK):
        return _newton_delta(loss, e, r, n, 1.0, layout)


def _signed_masses(loss: Loss, e, r, layout):
    """W⁺ = Σ_{r_i > 0} |r_i| w(e_i), W⁻ = Σ_{r_i < 0} |r_i| w(e_i) (paper 001
    eq. 12; |r_i| = 1 unweighted, u_i weighted)."""
    w = loss.weight(e)
    return layout.total(jnp.where(r > 0, w * r, 0.0)), layout.total(jnp.where(r < 0, -w * r, 0.0))


def _finite_delta(d, n, max_delta: float):
    """δ clipped to ±max_delta (NaN → 0), and 0 for examples with n_j = 0."""
    d = jnp.where(jnp.isnan(d), 0.0, d)
    return jnp.where(n > 0, jnp.clip(d, -max_delta, max_delta), 0.0)


#: the largest max_delta taken: α sums a step's δ over many steps, and k of
#: them make H, which must stay finite in float32 (3.4·10³⁸; with 3·10³⁸,
#: unsmoothed UNN gave inf α and NaN posteriors)
MAX_DELTA_LIMIT = 1e30


def _check_epsilon(epsilon) -> float:
    return check("epsilon", epsilon)  # its one declaration (params.PARAMS)


def _check_max_delta(max_delta) -> float:
    return check_real(max_delta, "max_delta", low=0.0, high=MAX_DELTA_LIMIT, low_open=True)


def _wide_bracket_bisections(max_delta: float) -> int:
    """Root-finder iterations added for a bracket wider than the default ±50:
    the bisections that halve ±max_delta down to ±50 (with the default 50
    float32 iterations, α was off by 4·10⁻⁴ at max_delta = 10¹⁰ and by 600 at
    10¹⁶, though no root lay beyond ±8)."""
    return max(0, math.ceil(math.log2(max_delta / 50.0)))


def _smoothing_weight(loss: Loss, m: int, dtype):
    """Mass 1/m on each of W⁺ and W⁻ (paper 001 eq. 13), as weight units."""
    return 1.0 / (m * loss.weight(jnp.zeros((), dtype)))


def _one_sided(d, r, layout, bound):
    """δ (C,) with ±bound where all r_i agree (+ where all are > 0), whatever the
    weights read: without smoothing there is no finite step there, and float32
    weights that underflowed (logistic: e^−100) read 0 — a root finder then
    stops anywhere G reads 0, and W = W⁺/(W⁺ + W⁻) is 0/0.  Padding has r = 0."""
    pos = layout.total((r > 0).astype(r.dtype)) > 0
    neg = layout.total((r < 0).astype(r.dtype)) > 0
    return jnp.where(pos & ~neg, bound, jnp.where(neg & ~pos, -bound, d))


def _weights_never_vanish(loss: Loss) -> bool:
    """Whether the loss's weight is positive at every margin, read at margin
    30 (logistic 9e-14, exponential 1e-13, Matsushita 3e-4 — all but the
    squared loss, whose weight is 0 from margin 1): where such weights read 0
    they underflowed."""
    with jax.ensure_compile_time_eval():  # a concrete number, also while a boosting loop is traced
        return float(loss.weight(jnp.float32(30.0))) > 0.0


@dataclasses.dataclass(frozen=True)
class UNN:
    """Universal NN (paper 001 Alg. 1): δ is the exact root of eq. (10),

        G(δ) = Σ_{i∈inv(j)} r_i w(e_i + δ r_i) + s·(w(δ) − w(−δ)) = 0,

    where the second term (``smoothing=True``, s = 1/(m·w(0))) is a virtual
    pair of neighbours at edge 0 holding mass 1/m each — exactly eq. (13) for
    the exponential loss — which keeps δ finite when all r_i agree.  G is
    decreasing; the root is found by a safeguarded Newton/bisection (the
    exponential loss has a closed form).  Without smoothing, when all r_i
    agree there is no finite root and δ = ±max_delta.
    """

    smoothing: bool = True
    max_delta: float = 50.0
    name = "unn"

    def __post_init__(self):  # the factories' checks (UNNFast's too): NumPy scalars pass, stored as bool / float
        object.__setattr__(self, "smoothing", check_bool(self.smoothing, "smoothing"))
        object.__setattr__(self, "max_delta", _check_max_delta(self.max_delta))

    def check(self, loss: Loss) -> None:
        _check_max_delta(self.max_delta)

    def init_edges(self, loss: Loss, Y):
        return jnp.zeros(Y.shape, Y.dtype)

    def delta(self, loss: Loss, e, r, n, m: int, layout=BLOCK):
        dtype = e.dtype
        bound = jnp.asarray(self.max_delta, dtype)
        s = _smoothing_weight(loss, m, dtype) if self.smoothing else jnp.zeros((), dtype)
        if loss.unn_closed_form is not None:
            w_plus, w_minus = _signed_masses(loss, e, r, layout)
            extra = s * loss.weight(jnp.zeros((), dtype))
            d = loss.unn_closed_form(w_plus + extra, w_minus + extra)
        else:

            sign = jnp.sign(r)  # r itself unweighted; a weighted r = u_i·y_ic·y_jc moves the edge by δ·sign(r)

            def minus_g(d):  # increasing in d
                g = layout.total(r * loss.weight(e + layout.spread(d) * sign))
                return -(g + s * (loss.weight(d) - loss.weight(-d)))

            d0 = jnp.zeros(jnp.shape(n), dtype)  # one root per example and class
            d = increasing_root(minus_g, d0, -bound, bound, d0, root_iterations(dtype) + _wide_bracket_bisections(self.max_delta))
        if not self.smoothing:  # the squared loss's G is 0 on a half-line there: any point was returned
            d = _one_sided(d, r, layout, bound)
        return _finite_delta(d, n, self.max_delta)


@dataclasses.dataclass(frozen=True)
class UNNFast(UNN):
    """UNN with paper 003's fast step, eq. (30): δ solves p̂(δ) = W, with
    W = W⁺/(W⁺ + W⁻) (smoothed as eq. 13 when ``smoothing``); for balanced
    losses δ = ∇φ(W) (paper 003 Table 2).  Same parameters as :class:`UNN`."""

    name = "unn_fast"

    def delta(self, loss: Loss, e, r, n, m: int, layout=BLOCK):
        dtype = e.dtype
        extra = jnp.asarray(1.0 / m if self.smoothing else 0.0, dtype)
        w_plus, w_minus = _signed_masses(loss, e, r, layout)
        w_plus, w_minus = w_plus + extra, w_minus + extra
        weighed = w_plus + w_minus > 0  # else (squared loss: every weight 0) no information, δ = 0
        total = jnp.where(weighed, w_plus + w_minus, 1.0)
        # p̂⁻¹ of the smaller side's share, by p̂⁻¹(1 − q) = −p̂⁻¹(q): W itself
        # rounds to 1 once W⁻ ≪ W⁺ (float32, a pure inverse neighbourhood of
        # 500 at m = 10⁵ gave δ = max_delta = 50 for the logistic loss, not 17.4)
        plus_wins = w_plus >= w_minus
        q = jnp.where(plus_wins, w_minus, w_plus) / total  # in [0, ½]: p̂⁻¹(q) ≤ 0
        d = loss.posterior_inverse(q)
        # all of inv(j) on one side (possible without smoothing): p̂⁻¹(0) is −∞
        # or NaN for most losses, so δ = ±max_delta as for UNN (not NaN → 0);
        # where it is finite (the squared loss: ∇φ(0) = −1) it is the step
        d = jnp.where(jnp.isfinite(d), d, -self.max_delta)
        d = jnp.where(weighed, jnp.where(plus_wins, -d, d), 0.0)
        if not self.smoothing and _weights_never_vanish(loss):  # W = 1 or 0 there (the squared loss: ∓1, eq. 30)
            d = _one_sided(d, r, layout, jnp.asarray(self.max_delta, dtype))
        return _finite_delta(d, n, self.max_delta)


def gnnb(epsilon: float = 0.5) -> GNNB:
    """GNNB with ε ∈ (0, 1) (paper 000 eq. 10)."""
    return GNNB(_check_epsilon(epsilon))


def unn(smoothing: bool = True, max_delta: float = 50.0) -> UNN:
    """UNN with the exact root of paper 001 eq. (10)."""
    return UNN(check_bool(smoothing, "smoothing"), _check_max_delta(max_delta))


def unn_fast(smoothing: bool = True, max_delta: float = 50.0) -> UNNFast:
    """UNN with paper 003's fast approximation, eq. (30)."""
    return UNNFast(check_bool(smoothing, "smoothing"), _check_max_delta(max_delta))


def n3() -> N3:
    """N³ (paper 002)."""
    return N3()


_ALGORITHMS = {"gnnb": GNNB, "unn": UNN, "unn_fast": UNNFast, "n3": N3}


def names() -> list[str]:
    return sorted(_ALGORITHMS)


def get(algorithm, *, epsilon: float = 0.5):
    """An algorithm object from a name or an object (``epsilon`` for GNNB by
    name; ignored by the other names; an object carries its own settings, and
    an ``epsilon`` other than the default beside it is refused, not ignored)."""
    if isinstance(algorithm, (GNNB, UNN, N3)):
        if not isinstance(epsilon, bool) and isinstance(epsilon, numbers.Real) and epsilon != 0.5:
            raise ValueError(f"epsilon={epsilon!r} was given beside the algorithm object {algorithm!r}, which carries "
                             "its own settings: set ε in the object (jaxnn.gnnb(epsilon)) or give algorithm by name")
        return algorithm
    if not isinstance(algorithm, str):
        raise TypeError(f"algorithm must be a name or an algorithm object, got {type(algorithm).__name__}")
    key = algorithm.strip().lower()
    if key == "gnnb":
        return gnnb(epsilon)
    if key in _ALGORITHMS:
        return _ALGORITHMS[key]()
    raise ValueError(f"unknown algorithm {algorithm!r}; known algorithms: {', '.join(names())}" + did_you_mean(key, names()))
