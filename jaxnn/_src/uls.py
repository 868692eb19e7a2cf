"""ULS — paper 004's Algorithm 1: boosting a linear separator with any
strictly convex loss.

H_c(o) = Σ_t α_tc h_t(o), one column per class c (one-vs-rest, y_ic ∈ ±1
from :func:`~jaxnn._src.inputs.encode_labels`; multilabel the same way).
Each step:

* weights (eq. 69): w_ic = −ψ′(y_ic H_c(o_i)) (``loss.weight`` of the
  margin), times the sample weight s_i;
* a hypothesis h_t of the weak kind (:mod:`jaxnn._src.weak`) chosen for
  those weights;
* its leveraging coefficient by eq. 70: δ solves
  Σ_i s_i y_i h_t(o_i) ψ′(y_i [H(o_i) + δ h_t(o_i)]) = 0, the stationarity
  of the convex risk along h_t (Lemma 8), by a safeguarded Newton iteration
  (Hessian Σ_i s_i h_t(o_i)² ψ″, bisection when a Newton iterate leaves the
  bracket) to a relative tolerance 10⁻¹² in float64 (float32: 10⁻⁶, its
  round-off).  After the step the hypothesis has zero edge (eq. 81) and
  the risk has fallen by the Bregman divergence D_ψ̃(w_{j+1} ‖ w_j) (eq. 74);
* ``corrective=True``: eq. 70 over every hypothesis chosen so far (totally
  corrective, T_j = {1..j}): a multi-dimensional Newton iteration with the
  Hessian of Lemma 8, e_uv = Σ_i s_i h_u h_v ψ″(y_i H_i), and a
  backtracking line search on the risk.

Where no finite δ exists (every example the hypothesis touches agrees with
it) the step is ±:data:`MAX_DELTA`, as UNN's.  The squared loss (φ_B) is
used on [−1, 1] only (paper 004 L902): its step is the closed form
Σ s a (1 − e) / Σ s a² (paper 001 Table 1: (W⁺ − W⁻)/(2‖m_t‖₁)), clipped
to the interval that keeps every training margin y_i H_i in [−1, 1]
(corrective: the Newton step scaled back into that box).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from typing import Any, ClassVar, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import programs
from jaxnn._src import weak as weak_kinds
from jaxnn._src.family import FamilyModel, held_out_split, held_out_temperature
from jaxnn._src.graph import knn_graph, knn_query
from jaxnn._src.inputs import as_points, compute_dtype, encode_labels, sample_weights
from jaxnn._src.losses import Loss
from jaxnn._src.losses import get as get_loss
from jaxnn._src.losses import squared as squared_loss
from jaxnn._src.params import FAMILY_POSTERIORS, check
from jaxnn._src.progress import progress_shown, stage
from jaxnn._src.shared_sizes import first_rows, padded_rows, shared_rows, to_device

__all__ = ["ULSModel", "uls", "line_step", "block_step", "MAX_DELTA", "ROUNDS_CAP"]

#: the largest |δ| of a step (a hypothesis no example disagrees with has no finite one)
MAX_DELTA = 50.0
#: rounds=None: the most rounds per kind tried on the held-out split
ROUNDS_CAP = 200
#: the iteration caps of the Newton solves
MAX_ITERATIONS = 200
LINE_SEARCH = 30


def _tolerance(dtype) -> float:
    return 1e-12 if jnp.dtype(dtype) == jnp.float64 else 1e-6


def _is_squared(loss: Loss) -> bool:
    return loss is squared_loss()


# ------------------------------------------------------------------ eq. 70
def line_step(loss: Loss, e, a, s):
    """δ (C,) solving eq. 70 for one hypothesis per class.

    e (m, C): the margins y_ic H_c(o_i); a (m, C): y_ic h_c(o_i) for the
    class's hypothesis h_c (0 where it does not reach o_i); s (m, 1) the
    sample weights (0 on padding).  The root of the decreasing
    g(δ) = Σ_i s_i a_i w(e_i + δ a_i) in [−MAX_DELTA, MAX_DELTA]."""
    if _is_squared(loss):
        return _squared_step(e, a, s)
    dtype = e.dtype
    sa = s * a
    pos, neg = jnp.any(sa > 0, axis=0), jnp.any(sa < 0, axis=0)
    tol = _tolerance(dtype)
    bound = jnp.asarray(MAX_DELTA, dtype)
    C = e.shape[1]

    def g(d):
        return jnp.sum(sa * loss.weight(e + a * d), axis=0)

    def slope(d):  # −g′(δ) = Σ s a² ψ″ ≥ 0
        return jnp.sum(s * a * a * loss.curvature(e + a * d), axis=0)

    def body(state):
        d, lo, hi, it, _ = state
        gd = g(d)
        lo = jnp.where(gd > 0, d, lo)
        hi = jnp.where(gd < 0, d, hi)
        newton = d + gd / slope(d)
        ok = jnp.isfinite(newton) & (newton > lo) & (newton < hi)
        nd = jnp.where(gd == 0, d, jnp.where(ok, newton, 0.5 * (lo + hi)))
        moving = jnp.any(jnp.abs(nd - d) > tol * (1.0 + jnp.abs(d)))
        return nd, lo, hi, it + 1, moving

    def cond(state):
        return (state[3] < MAX_ITERATIONS) & state[4]

    zero = jnp.zeros((C,), dtype)
    d = jax.lax.while_loop(cond, body, (zero, zero - bound, zero + bound, 0, jnp.bool_(True)))[0]
    return jnp.where(pos & ~neg, bound, jnp.where(neg & ~pos, -bound, jnp.where(pos | neg, d, 0.0)))


def _squared_box(e, a):
    """The δ interval (lo, hi) keeping every margin e + δa in [−1, 1]; (m, C) → (C,)."""
    safe = jnp.where(a == 0, 1.0, a)
    up, down = (1.0 - e) / safe, (-1.0 - e) / safe
    hi = jnp.min(jnp.where(a > 0, up, jnp.where(a < 0, down, jnp.inf)), axis=0)
    lo = jnp.max(jnp.where(a > 0, down, jnp.where(a < 0, up, -jnp.inf)), axis=0)
    return jnp.minimum(lo, 0.0), jnp.maximum(hi, 0.0)


def _squared_step(e, a, s):
    """The squared loss's step: Σ s a (1 − e) / Σ s a², clipped to :func:`_squared_box`."""
    num = jnp.sum(s * a * (1.0 - e), axis=0)
    den = jnp.sum(s * a * a, axis=0)
    d = jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)
    lo, hi = _squared_box(e, a)
    return jnp.clip(d, lo, hi)


def block_step(loss: Loss, e, A, s, mask):
    """δ (p,) solving eq. 70 jointly for the hypotheses of ``mask`` (p,)
    (totally corrective), for one class: e (m,) margins, A (m, p) the
    a_it = y_i h_t(o_i), s (m,) sample weights.  Newton on the convex risk
    R(δ) = Σ_i s_i ψ(e_i + (Aδ)_i) with the Hessian of Lemma 8,
    Aᵀ diag(s ψ″) A (its least-norm solution: :func:`_least_norm_solve`),
    and a backtracking line search (the best of :data:`LINE_SEARCH`
    halvings, or no move)."""
    dtype = e.dtype
    A = A * mask.astype(dtype)
    p = A.shape[1]
    if _is_squared(loss):
        grad = A.T @ (s * 2.0 * (1.0 - e))
        H = 2.0 * (A * s[:, None]).T @ A
        d = _least_norm_solve(H, grad) * mask
        r = A @ d
        safe = jnp.where(r == 0, 1.0, r)
        reach = jnp.where(r > 0, (1.0 - e) / safe, jnp.where(r < 0, (-1.0 - e) / safe, jnp.inf))
        return d * jnp.clip(jnp.min(reach), 0.0, 1.0)
    tol = _tolerance(dtype)
    ts = 0.5 ** jnp.arange(LINE_SEARCH, dtype=dtype)

    def risk(d):
        return jnp.sum(s * loss.psi(e + A @ d))

    def body(state):
        d, it, _ = state
        x = e + A @ d
        grad = -(A.T @ (s * loss.weight(x)))
        H = (A * (s * loss.curvature(x))[:, None]).T @ A
        step = -_least_norm_solve(H, grad) * mask
        step = jnp.where(jnp.isfinite(step), step, 0.0)
        tries = jax.vmap(lambda t: risk(d + t * step))(ts)
        tries = jnp.where(jnp.isfinite(tries), tries, jnp.inf)
        best = jnp.argmin(tries)
        t = jnp.where(tries[best] <= risk(d), ts[best], 0.0)
        nd = jnp.clip(d + t * step, -MAX_DELTA * p, MAX_DELTA * p)
        moving = jnp.max(jnp.abs(nd - d)) > tol * (1.0 + jnp.max(jnp.abs(d)))
        return nd, it + 1, moving

    def cond(state):
        return (state[1] < MAX_ITERATIONS) & state[2]

    return jax.lax.while_loop(cond, body, (jnp.zeros((p,), dtype), 0, jnp.bool_(True)))[0]


def _least_norm_solve(H, g):
    """d (p,) solving H d = g with the least norm, for H (p, p) symmetric
    positive semi-definite (a corrective step's Hessian, zero rows for the
    hypotheses not yet chosen): H's eigen-directions of eigenvalue at most
    √eps of its largest — its null space, where hypotheses repeat or a rule
    meets its complement and the risk is flat — take no step, whatever
    round-off puts in g along them (a solve would scale that round-off by
    1/eps into the coefficients)."""
    lam, V = jnp.linalg.eigh(H)
    keep = lam > jnp.sqrt(jnp.finfo(H.dtype).eps) * jnp.max(lam)
    return V @ jnp.where(keep, (V.T @ g) / jnp.where(keep, lam, 1.0), 0.0)


def _risk(loss: Loss, E, s, m):
    """(1/m) Σ_i s_i ψ(E_ic), (C,), over E's rows (M ≥ m: rows from m on have s_i = 0)."""
    return jnp.sum(s * loss.psi(E), axis=0) / m


def _choose(choice, risks, edges):
    """The bag member each class takes, (C,) int: least risk (``"risk"``) or
    largest normalised edge (``"edge"``) over the (L, C) candidates."""
    if risks.shape[0] == 1:
        return jnp.zeros(risks.shape[1:], jnp.int32)
    return (jnp.argmin(risks, axis=0) if choice == "risk" else jnp.argmax(edges, axis=0)).astype(jnp.int32)


def _pick(stacked, idx):
    """stacked (L, …, C) → (…, C) at each class's member idx (C,)."""
    onehot = (jnp.arange(stacked.shape[0])[:, None] == idx[None]).astype(stacked.dtype)
    onehot = onehot.reshape((stacked.shape[0],) + (1,) * (stacked.ndim - 2) + (idx.shape[0],))
    return jnp.sum(stacked * onehot, axis=0)


# ------------------------------------------------------------------ linear and rules
@programs.jit(static_argnames=("kind", "losses", "choice", "rounds", "max_literals", "corrective"))
def _boost_features(F, Y, s, E0, m, *, kind, losses, choice, rounds, max_literals, corrective):
    """``rounds`` steps of the ``"linear"`` (F = z(o), (M, p)) or ``"rules"``
    (F the (M, L) literal matrix) kind from the margins E0 (M, C), for m
    training points padded to M rows (:func:`~jaxnn._src.shared_sizes.shared_rows`:
    training sets of nearby sizes share the program): a padded row has
    s_i = 0 and Y_i = 0, so it weighs in no sum and its margin stays 0;
    m (a scalar, not static) normalises the risk.

    Returns (E (M, C), records, alphas (rounds, P, C) — the coefficients
    after each step, P = p (linear) or rounds (rules) —, risk (rounds, C),
    loss index (rounds, C)); records: the chosen coordinate (rounds, C)
    (linear) or literals (rounds, C, l) (rules)."""
    M, C = Y.shape
    dtype = E0.dtype
    P = F.shape[1] if kind == "linear" else rounds
    sc = s[:, None]

    def hypothesis(loss, E):
        v = sc * loss.weight(E) * Y
        if kind == "linear":
            coord = jnp.argmax(jnp.abs(F.T @ v), axis=0).astype(jnp.int32)  # (C,)
            return coord, F[:, coord], v
        lits, h = weak_kinds.grow_rules(F, v, max_literals)
        return lits, h, v

    def body(carry, t):
        E, alpha, hyps = carry
        cand = []
        for loss in losses:
            rec, h, v = hypothesis(loss, E)
            a = Y * h
            edge = jnp.abs(jnp.sum(v * h, axis=0)) / jnp.maximum(jnp.sum(sc * loss.weight(E), axis=0),
                                                                  jnp.finfo(dtype).tiny)
            if corrective:
                slot = rec if kind == "linear" else jnp.full((C,), t, jnp.int32)
                # linear: hyps is the (P, C) mask of the coordinates chosen so far; rules: the rules' values
                chosen = hyps if kind == "linear" else jnp.broadcast_to((jnp.arange(P) < t)[:, None], (P, C))
                mask = chosen | (jnp.arange(P)[:, None] == slot[None])  # (P, C)
                new_hyps = mask if kind == "linear" else hyps.at[t].set(h)
                A = (F if kind == "linear" else new_hyps.transpose(1, 0, 2))  # (m, P[, C])

                def per_class(e_c, y_c, mask_c, A_c):
                    return block_step(loss, e_c, A_c * y_c[:, None], s, mask_c)

                if kind == "linear":
                    d = jax.vmap(per_class, in_axes=(1, 1, 1, None), out_axes=1)(E, Y, mask, A)
                else:
                    d = jax.vmap(per_class, in_axes=(1, 1, 1, 2), out_axes=1)(E, Y, mask, A)
                moved = jnp.einsum("mp,pc->mc", F, d) if kind == "linear" else jnp.einsum("pmc,pc->mc", new_hyps, d)
                E_new = E + Y * moved
                alpha_new = alpha + d
            else:
                delta = line_step(loss, E, a, sc)
                E_new = E + a * delta
                onehot = (jnp.arange(P)[:, None] == (rec if kind == "linear" else jnp.full((C,), t))[None])
                alpha_new = alpha + onehot.astype(dtype) * delta
                new_hyps = hyps
            cand.append((rec, E_new, alpha_new, new_hyps, _risk(loss, E_new, sc, m), edge))
        if len(cand) == 1:
            rec, E, alpha, hyps, risk, _ = cand[0]
            idx = jnp.zeros((C,), jnp.int32)
        else:
            risks = jnp.stack([c[4] for c in cand])
            idx = _choose(choice, risks, jnp.stack([c[5] for c in cand]))
            rec = _pick(jnp.stack([c[0] for c in cand]), idx) if kind == "linear" else \
                _pick(jnp.stack([c[0].T for c in cand]), idx).T
            rec = rec.astype(jnp.int32)
            E = _pick(jnp.stack([c[1] for c in cand]), idx)
            alpha = _pick(jnp.stack([c[2] for c in cand]), idx)
            hyps = cand[0][3]
            risk = _pick(risks, idx)
        return (E, alpha, hyps), (rec, alpha, risk, idx)

    if not corrective:
        hyps0 = jnp.zeros((), dtype)
    else:
        hyps0 = jnp.zeros((P, C), bool) if kind == "linear" else jnp.zeros((rounds, M, C), dtype)
    (E, _, _), (recs, alphas, risk, idx) = jax.lax.scan(
        body, (E0, jnp.zeros((P, C), dtype), hyps0), jnp.arange(rounds))
    return E, recs, alphas, risk, idx


# ------------------------------------------------------------------ knn
@functools.partial(jax.jit, static_argnames=("losses", "choice", "steps"))
def _boost_knn(inv, Y, s, E0, *, losses, choice, steps):
    """``steps`` steps of the ``"knn"`` kind, example j = t mod m at step t
    (UNN's lazy chooser), from the margins E0 (m, C); inv (m, P) the inverse
    neighbour lists (sentinel m).  Returns (E, α (m, C), risk (steps, C),
    loss index (steps, C))."""
    m, C = Y.shape
    dtype = E0.dtype
    Yp = jnp.concatenate([Y, jnp.zeros((1, C), dtype)])
    sp = jnp.concatenate([s, jnp.zeros((1,), dtype)])[:, None]
    Ep = jnp.concatenate([E0, jnp.zeros((1, C), dtype)])
    risks0 = jnp.stack([_risk(loss, E0, s[:, None], m) for loss in losses])  # (L, C)

    def body(carry, t):
        E, alpha, risks = carry
        j = t % m
        mem = inv[j]
        e, a, sm = E[mem], Yp[mem] * Y[j], sp[mem]
        deltas, own, edges = [], [], []
        for li, loss in enumerate(losses):
            d = line_step(loss, e, a, sm)
            deltas.append(d)
            own.append(risks[li] + jnp.sum(sm * (loss.psi(e + a * d) - loss.psi(e)), axis=0) / m)
            w = sm * loss.weight(e)
            edges.append(jnp.abs(jnp.sum(w * a, axis=0)) / jnp.maximum(jnp.sum(w, axis=0), jnp.finfo(dtype).tiny))
        idx = _choose(choice, jnp.stack(own), jnp.stack(edges))
        delta = _pick(jnp.stack(deltas), idx)
        new = e + a * delta
        risks = jnp.stack([risks[li] + jnp.sum(sm * (loss.psi(new) - loss.psi(e)), axis=0) / m
                           for li, loss in enumerate(losses)])
        E = E.at[mem].set(new)
        alpha = alpha.at[j].add(delta)
        return (E, alpha, risks), (_pick(risks, idx), idx)

    (E, alpha, _), (risk, idx) = jax.lax.scan(body, (Ep, jnp.zeros((m, C), dtype), risks0), jnp.arange(steps))
    return E[:m], alpha, risk, idx


# ------------------------------------------------------------------ the model
@programs.jit()
def _linear_scores(X, mean, scale, coef):
    return weak_kinds.linear_features(X, mean.astype(X.dtype), scale.astype(X.dtype)) @ coef.astype(X.dtype)


@programs.jit()
def _summed(parts: tuple):
    """The parts' scores (each (n, C)) summed, in float32."""
    return functools.reduce(jnp.add, parts).astype(jnp.float32)


@programs.jit(static_argnames=("loss",))
def _posterior(H, *, loss: Loss):
    return loss.posterior(H)


@programs.jit()
def _rule_scores(X, feature, threshold, greater, alpha):
    h = weak_kinds.rule_values(X, feature, threshold.astype(X.dtype), greater)  # (n, T, C)
    return jnp.einsum("ntc,tc->nc", h, alpha.astype(X.dtype))


@dataclasses.dataclass(frozen=True)
class ULSModel(FamilyModel):
    """A ULS model (paper 004 Algorithm 1): H_c(x) = the sum of its parts'
    scores, each part None when its kind is not used.

    Attributes (besides :class:`FamilyModel`'s):
      weak: the kinds, in the order they were boosted.
      losses: the names of the loss bag (one name for a single loss);
        ``loss`` (the posterior's link) is the first, or the fold's choice.
      loss_choice: None, ``"risk"``, ``"edge"`` or ``"fold"``.
      loss_index: (T, C) int8, the bag member each recorded step used.
      risk: (T, C) the surrogate risk (1/m) Σ_i s_i ψ(y_ic H_c(o_i)) of each
        class after each step, under that step's loss.
      rounds: steps per kind (``weak``'s order).
      k, knn_X (m, d), knn_Y (m, C) int8, knn_alpha (m, C): the ``"knn"``
        part, H_c(x) = Σ_{j∈NN_k(x)} α_jc y_jc.
      linear_mean, linear_scale (d,), linear_coef (d + 1, C): the
        ``"linear"`` part, H(x) = ((x − mean)·scale, 1) @ coef.
      rule_feature (T, C, l) int32 (−1: no literal), rule_threshold
        (T, C, l), rule_greater (T, C, l) bool, rule_alpha (T, C): the
        ``"rules"`` part, rule (t, c) = 2·1[all its literals hold] − 1,
        literal x_f > θ if greater else x_f ≤ θ.
    """

    weak: tuple = ()
    losses: tuple = ()
    loss_choice: Optional[str] = None
    loss_index: Any = None
    risk: Any = None
    rounds: tuple = ()
    k: int = 0
    knn_X: Any = None
    knn_Y: Any = None
    knn_alpha: Any = None
    linear_mean: Any = None
    linear_scale: Any = None
    linear_coef: Any = None
    rule_feature: Any = None
    rule_threshold: Any = None
    rule_greater: Any = None
    rule_alpha: Any = None

    family: ClassVar[str] = "uls"

    def scores(self, X):
        """H(x) (n, C) for float32 points X (n, d): the parts' scores summed."""
        parts = []
        if self.knn_alpha is not None:
            nb = knn_query(self.knn_X, X, self.k).indices
            parts.append(weak_kinds.knn_scores(to_device(self.knn_alpha, np.float32), to_device(self.knn_Y), nb))
        if self.linear_coef is not None:
            parts.append(_linear_scores(X, to_device(self.linear_mean), to_device(self.linear_scale),
                                        to_device(self.linear_coef)))
        if self.rule_alpha is not None:
            parts.append(_rule_scores(X, to_device(self.rule_feature), to_device(self.rule_threshold),
                                      to_device(self.rule_greater), to_device(self.rule_alpha)))
        return _summed(tuple(parts))


# ------------------------------------------------------------------ fitting
def _kinds(weak) -> tuple:
    names = (weak,) if isinstance(weak, str) else weak
    if not isinstance(names, (list, tuple)) or len(names) == 0:
        raise TypeError(f"weak must be a kind name {weak_kinds.KINDS} or a non-empty list of them, "
                        f"got {type(weak).__name__} {weak!r}")
    kinds = tuple(check("weak", name) for name in names)
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"weak lists a kind twice: {list(kinds)}")
    return kinds


def _losses(loss) -> tuple:
    items = list(loss) if isinstance(loss, (list, tuple)) else [loss]
    if not items:
        raise ValueError("loss must be a loss or a non-empty list of losses, got an empty list")
    out = []
    for item in items:
        try:
            out.append(get_loss(item))
        except (TypeError, ValueError) as err:
            raise type(err)(f"loss: {err}") from None
    return tuple(out)


def _fit(X, Y, s, *, kinds, losses, choice, rounds, max_literals, corrective, k, dtype):
    """One ULS fit on (X, Y, s): ``rounds`` a dict kind → steps.  Returns
    (parts dict for :class:`ULSModel`, risk (T, C), loss index (T, C), the
    held-out paths: a list of (kind, data) per kind, in order).  The
    ``"linear"`` and ``"rules"`` kinds boost the rows padded to
    :func:`~jaxnn._src.shared_sizes.shared_rows` (m) (:func:`_boost_features`)."""
    m, d = X.shape
    C = Y.shape[1]
    M = shared_rows(m)
    Yp, sp, Xp = (to_device(padded_rows(np.asarray(a), M), dtype) for a in (Y, s, X))
    count = np.asarray(m, dtype)
    E = to_device(np.zeros((m, C), dtype))

    def boosted(F, E, kind, r):
        E, *out = _boost_features(F, Yp, sp, padded_rows(E, M), count, kind=kind, losses=losses, choice=choice,
                                  rounds=r, max_literals=max_literals, corrective=corrective)
        return (first_rows((E,), m)[0], *out)

    parts, risks, idxs, paths = {}, [], [], []
    for kind in kinds:
        r = rounds[kind]
        if kind == "knn":
            r = m if r is None else r
            nb = np.asarray(knn_graph(X, k).indices)
            inv = to_device(weak_kinds.inverse_lists(nb, m))
            E, alpha, risk, idx = _boost_knn(inv, to_device(Y, dtype), to_device(s, dtype), E, losses=losses,
                                             choice=choice, steps=r)
            parts.update(k=k, knn_X=np.asarray(X, np.float32), knn_Y=np.asarray(Y, np.int8),
                         knn_alpha=np.asarray(alpha))
            paths.append((kind, None))
        elif kind == "linear":
            mean, scale = standardised = weak_kinds.standardise(X)
            F = weak_kinds.linear_features(Xp, to_device(mean, dtype), to_device(scale, dtype))
            E, coord, alphas, risk, idx = boosted(F, E, kind, r)
            alphas = np.asarray(alphas)
            parts.update(linear_mean=mean, linear_scale=scale, linear_coef=alphas[-1])
            paths.append((kind, (standardised, alphas)))
        else:
            feature, threshold, greater = weak_kinds.literals(X)
            # columns padded to a power of two (≥ 8) so that data of one shape shares a program; a
            # padded literal (x_0 > +∞) never holds, its rule h ≡ −1 never raises |edge|, so it is never taken
            pad = max(8, 1 << max(int(feature.size) - 1, 0).bit_length()) - feature.size
            Lmat = weak_kinds.literal_matrix(Xp, to_device(np.pad(feature, (0, pad))),
                                             to_device(np.pad(threshold, (0, pad), constant_values=np.inf), dtype),
                                             to_device(np.pad(greater, (0, pad), constant_values=True)))
            E, lits, alphas, risk, idx = boosted(Lmat, E, kind, r)
            lits, alphas = np.asarray(lits), np.asarray(alphas)  # (T, C, l), (T, T, C)
            used = lits >= 0
            safe = np.where(used, lits, 0)
            feature = np.where(used, feature[safe] if feature.size else 0, -1).astype(np.int32)
            threshold = np.where(used, threshold[safe] if threshold.size else 0.0, 0.0)
            greater = np.where(used, greater[safe] if greater.size else False, False)
            parts.update(rule_feature=feature, rule_threshold=threshold, rule_greater=greater,
                         rule_alpha=alphas[-1])
            paths.append((kind, ((feature, threshold, greater), alphas)))
        risks.append(np.asarray(risk))
        idxs.append(np.asarray(idx, np.int8))
    return parts, np.concatenate(risks), np.concatenate(idxs), paths


def _heldout_path(model_parts, paths, Xh):
    """H (N, n, C) on the held-out points after each of the N steps of the
    ``"linear"`` / ``"rules"`` kinds in order, the ``"knn"`` parts counted whole."""
    Xh32 = to_device(Xh, np.float32)
    base = 0.0
    if model_parts.get("knn_alpha") is not None:
        nb = knn_query(model_parts["knn_X"], Xh, model_parts["k"]).indices
        base = np.asarray(weak_kinds.knn_scores(to_device(model_parts["knn_alpha"], np.float32),
                                                to_device(model_parts["knn_Y"]), nb))
    steps = []
    offset = 0.0
    for kind, data in paths:
        if kind == "knn":
            continue
        if kind == "linear":
            (mean, scale), alphas = data
            Z = np.asarray(weak_kinds.linear_features(Xh32, to_device(mean, np.float32),
                                                      to_device(scale, np.float32)), np.float64)
            path = np.einsum("np,tpc->tnc", Z, alphas)
        else:
            (feature, threshold, greater), alphas = data
            h = np.asarray(weak_kinds.rule_values(Xh32, to_device(feature), to_device(threshold, np.float32),
                                                  to_device(greater)), np.float64)  # (n, T, C)
            path = np.einsum("nsc,tsc->tnc", h, alphas)
        steps.append(path + offset)
        offset = offset + path[-1]
    if not steps:  # knn alone: one point
        return np.zeros((1, Xh.shape[0], len(model_parts["knn_Y"][0]))) + base
    return np.concatenate(steps) + base


def _criterion(H, Y, loss: Loss, multilabel: bool):
    """(held-out error, mean log loss) of scores H (…, n, C) for labels Y (n, C) ±1."""
    H = np.asarray(H, np.float64)
    positive = Y > 0
    if multilabel:
        error = np.mean((H > 0) != positive, axis=(-2, -1))
    else:
        error = np.mean(np.argmax(H, axis=-1) != np.argmax(Y, axis=-1), axis=-1)
    p = np.clip(np.asarray(_posterior(to_device(H, np.float32), loss=loss), np.float64), 1e-6, 1 - 1e-6)
    log = -np.mean(np.where(positive, np.log(p), np.log1p(-p)), axis=(-2, -1))
    return error, log


def _counts(kinds, rounds_cap: dict, n: int) -> dict:
    """Steps per kind for the first n steps of the non-knn kinds (knn whole)."""
    out = {}
    for kind in kinds:
        if kind == "knn":
            out[kind] = rounds_cap[kind]
        else:
            out[kind] = int(min(max(n, 0), rounds_cap[kind]))
            n -= out[kind]
    return out


def uls(X, y, *, weak="rules", loss="logistic", rounds=None, max_literals=2, corrective=False, loss_choice=None,
        k=10, seed=0, sample_weight=None, verbose=False, posterior="auto") -> ULSModel:
    """Boost a linear separator with a strictly convex loss (paper 004, Algorithm 1: ULS).

    H_c(x) = Σ_t α_tc h_t(x), one column per class (one-vs-rest with
    y_ic ∈ ±1; multilabel alike); weights by eq. 69, w = −ψ′(y H), each
    step's α by eq. 70 solved exactly (Newton, Lemma 8; see the module).

    Args:
      X: (m, d) training points (finite).  y: (m,) labels or an (m, C)
        indicator matrix (multilabel).
      weak: ``"rules"``, ``"linear"``, ``"knn"`` or a list of them, boosted
        stagewise in list order, each kind continuing from the previous
        kinds' H:
        ``"knn"`` — paper 001's hypotheses h_j(x) = y_jc·1[j ∈ NN_k(x)]
        (self excluded), one step per example in index order (``rounds``
        steps, default m: one pass); ULS on them is UNN without smoothing
        (``jaxnn.unn(smoothing=False)``), except that an example no
        example has as a neighbour keeps α = 0 (``jaxnn.fit`` fills it).
        ``"linear"`` — the standardised features and a bias; each step the
        coordinate of largest |edge| Σ_i s_i w_i y_i z(o_i).
        ``"rules"`` — §7's "if monomial then ±1 else ∓1" over literals
        x_f ≤ θ / x_f > θ (up to 32 quantile thresholds per feature), each
        rule grown greedily for the current weights, the literal that most
        raises |edge| added while it does, up to ``max_literals``.
      loss: a loss (name or :class:`~jaxnn.losses.Loss`), or a list of them
        (a bag, with ``loss_choice``).
      rounds: steps per class of each ``"linear"`` / ``"rules"`` kind (of
        ``"knn"``: steps, cycling over the examples).  None: ``"knn"`` one
        pass; the others grown on 80 % of the data (held out per class,
        drawn with ``seed``) up to 200 steps per kind, the number of steps
        (over the kinds in order) of least held-out log loss (of the
        posteriors, clipped to [10⁻⁶, 1 − 10⁻⁶]), ties by error, then refit
        on all the data with it.
      max_literals: literals per rule, ≥ 1 (§7: 2 with rounds=10, 3 with 100).
      corrective: totally corrective steps (eq. 70 over every hypothesis
        chosen so far).  Not for ``"knn"`` (m hypotheses: a Newton system
        of m unknowns a step), nor for a bag chosen per step.
      loss_choice: with a list of losses: ``"risk"`` (each step, per class,
        the loss whose step leaves the least surrogate risk, every ψ having
        ψ(0) = 1), ``"edge"`` (the loss whose hypothesis has the largest
        normalised edge |Σ s w y h| / Σ s w), ``"fold"`` (one loss, and with
        rounds=None its number of steps, chosen on the held-out split by
        log loss then error, refit on all the data).  None with one loss.
      k: neighbours of ``"knn"`` (1 ≤ k < m).
      seed: the held-out split's random state.
      sample_weight: (m,) weights of each example's term of the risk (mean 1).
      verbose: report the stages.
      posterior: ``"auto"``: :func:`jaxnn.predict_proba` gives calibrated
        posteriors, softmax(H/T) (multilabel σ(H_c/T)) with the temperature
        T of least log loss on the held-out split's scores — those of the
        held-out choice above, or of one more fit on 80 % of the data where
        there is none (``rounds`` given, one loss); ``"link"``: the loss's
        link ∇φ⁻¹(H).  Labels are the same either way.

    The squared loss (φ_B) keeps every training score in [−1, 1]: each
    step's δ is clipped to the interval that keeps the margins there
    (corrective: the Newton step scaled back into it), paper 004 L902.
    A step has no finite solution when every example its hypothesis
    reaches agrees with it: δ is then ±50 (as UNN's ``max_delta``).

    The model's ``loss`` (whose link the ``"link"`` posteriors are) is the
    first of the bag for ``"risk"`` / ``"edge"``, the chosen one for ``"fold"``.

    Returns:
      :class:`ULSModel`.
    """
    kinds = _kinds(weak)
    bag = _losses(loss)
    loss_choice = check("loss_choice", loss_choice)
    if len(bag) > 1 and loss_choice is None:
        raise ValueError(f"loss_choice must be 'risk', 'edge' or 'fold' with a list of {len(bag)} losses, got None")
    if rounds is not None:
        rounds = check("rounds", rounds)
    max_literals = check("max_literals", max_literals)
    corrective = check("corrective", corrective)
    seed = check("seed", seed)
    verbose = check("verbose", verbose)
    posterior = check("posterior", posterior, among=FAMILY_POSTERIORS, where=" for jaxnn.uls")
    if corrective and "knn" in kinds:
        raise ValueError("corrective=True is not available for weak='knn' (its m hypotheses would make each "
                         "corrective step a Newton system of m unknowns): use corrective=False")
    if corrective and len(bag) > 1 and loss_choice in ("risk", "edge"):
        raise ValueError(f"corrective=True needs one loss a fit: use loss_choice='fold' with a bag, "
                         f"got loss_choice={loss_choice!r}")
    X = as_points(X)
    m = X.shape[0]
    classes, Y, multilabel = encode_labels(y, m)
    k = check("k", k, below=m) if "knn" in kinds else check("k", k)  # k < m where "knn" reads it
    s = sample_weights(sample_weight, m)
    s = np.ones(m) if s is None else s
    dtype = compute_dtype(X)
    Xf = np.asarray(X, np.float64 if dtype == jnp.float64 else np.float32)
    choice = loss_choice if loss_choice in ("risk", "edge") else None
    grow = [kind for kind in kinds if kind != "knn"]
    fixed = {kind: rounds if kind == "knn" else (rounds or ROUNDS_CAP) for kind in kinds}  # knn None: one pass
    options = dict(kinds=kinds, choice=choice, max_literals=max_literals, corrective=corrective, k=k, dtype=dtype)

    with progress_shown() if verbose else contextlib.nullcontext():
        chosen_bag, counts, temperature = bag, fixed, None
        choose = loss_choice == "fold" or (rounds is None and grow)
        if choose or posterior == "auto":
            train, held = held_out_split(Y, multilabel, seed)
        if choose and held.size:
            best = None
            candidates = [(b,) for b in bag] if loss_choice == "fold" else [bag]
            with stage("uls: held-out choice", total=len(candidates)):
                for cand in candidates:
                    parts, _, _, paths = _fit(Xf[train], Y[train], s[train], losses=cand, rounds=fixed, **options)
                    H = _heldout_path(parts, paths, Xf[held])
                    error, log = _criterion(H, Y[held], cand[0], multilabel)
                    if rounds is None and grow:  # the number of steps of least held-out log loss, then error
                        at = int(np.lexsort((error, log))[0])
                    else:  # every step: the last
                        at = len(error) - 1
                    key = (float(log[at]), float(error[at]))
                    if best is None or key < best[0]:
                        best = (key, cand, at + 1, H[at])
            _, chosen_bag, n, H_held = best
            counts = _counts(kinds, fixed, n) if (rounds is None and grow) else fixed
        elif choose and loss_choice == "fold":  # too few examples to hold any out: the bag's first loss
            chosen_bag = bag[:1]
        if posterior == "auto" and held.size and not choose:  # no choice made: one fit on the 80 % for T alone
            with stage("uls: held-out fit"):
                parts, _, _, paths = _fit(Xf[train], Y[train], s[train], losses=bag, rounds=fixed, **options)
                H_held = _heldout_path(parts, paths, Xf[held])[-1]
        if posterior == "auto" and held.size:
            temperature = held_out_temperature(H_held, Y[held], multilabel, s[held])
        kinds_used = tuple(kind for kind in kinds if kind == "knn" or counts[kind] > 0)
        counts = {kind: counts[kind] for kind in kinds_used}
        with stage("uls: boosting"):
            parts, risk, idx, _ = _fit(Xf, Y, s, losses=chosen_bag, rounds=counts, **{**options, "kinds": kinds_used})
        if loss_choice == "fold":
            idx = np.full(idx.shape, bag.index(chosen_bag[0]), np.int8)
        return ULSModel(classes=classes, loss=chosen_bag[0], multilabel=multilabel, n_features=X.shape[1],
                        weak=kinds_used, losses=tuple(b.name for b in bag), loss_choice=loss_choice, loss_index=idx,
                        risk=risk, rounds=tuple(m if counts[kind] is None else counts[kind] for kind in kinds_used),
                        temperature=temperature, **parts)
