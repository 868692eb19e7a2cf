"""Independent float64 NumPy reference for jaxnn's boosting algorithms.

This module is deliberately written as a *literal loop* over the papers'
pseudo-code, without looking at (or importing) jaxnn's engine, so that the
tests in ``test_reference.py`` compare two independent implementations:

* GNNB -- Nock et al., *Gentle Nearest Neighbors Boosting over Proper Scoring
  Rules*, TPAMI 2014, Algorithm 1 (eqs. 9-11) and Table 1.
* UNN  -- Piro et al., *Leveraging k-NN for generic classification boosting*,
  Neurocomputing 2012, Algorithm 1 (eqs. 10-11), Table 1, smoothing eq. (13).
* UNN fast -- d'Ambrosio et al., *Boosting Nearest Neighbors for the Efficient
  Estimation of Posteriors*, ECML-PKDD 2012, eq. (30) and Table 2.
* N3   -- Bel Haj Ali et al., *Fast Newton Nearest Neighbors Boosting for Image
  Classification*, MLSP 2013, Algorithm 1 and Tables 1-2 (class-balanced
  initial weights ``1 / ||1 + y_ic y_i||_1``).

Conventions (shared by all three algorithms)
--------------------------------------------
``Y`` is an ``(m, C)`` matrix of +-1, ``NN`` an ``(m, k)`` matrix of neighbour
indices (self excluded).  The inverse neighbourhood of ``j`` is
``inv(j) = {i : j in NN(i)}`` and ``n_j = |inv(j)|``.  Classes are fitted
independently; within a class the *lazy* chooser of UNN [I.0.a] leverages
every example exactly once, ``j = t`` for ``t = 0 .. m-1``.  For a step on
``j`` the neighbours of interest have ``r_i = Y[i, c] * Y[j, c]``; the edge of
example ``i`` for class ``c`` is ``e_ic = y_ic H_c(x_i)`` (plus the initial
offset ``e0_ic`` used by N3).

Losses are written in closed form, in the convex convention of GNNB: for a
permissible ``phi`` (balanced losses), ``b = phi(0) - phi(1/2)``,
``link = (grad phi)^-1`` and the weight of an example with edge ``e`` is
``w(e) = link(-e) / b = -psi'(e)``; ``H* = 1 / (b phi''(1/2)) = psi''(0)``.
Non-balanced losses (exponential, calibrated hinge) are given by ``psi`` and
``w = -psi'``.

Everything is float64; nothing here is jitted or vectorised across steps.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

LN2 = math.log(2.0)


# --------------------------------------------------------------------------
# Losses
# --------------------------------------------------------------------------


def _sigmoid(h):
    return expit(np.asarray(h, dtype=np.float64))


@dataclasses.dataclass(frozen=True)
class RefLoss:
    """A loss in closed form.

    ``psi(e)`` is the loss of an edge, ``weight(e) = -psi'(e)``,
    ``posterior(h)`` maps a score to a probability (``link`` for balanced
    losses, the transfer function ``f`` for the calibrated hinge),
    ``h_star = psi''(0) = sup psi''``.  For balanced losses ``b``, ``link`` and
    ``grad_phi`` are also given (``None`` otherwise) so that GNNB's weight
    update (11) can be written literally.
    """

    name: str
    psi: callable
    weight: callable
    posterior: callable
    h_star: float
    balanced: bool
    b: float | None = None
    link: callable | None = None
    grad_phi: callable | None = None
    # initial edge e0 such that posterior(-e0) = pi (N3 class-balanced init)
    edge_from_prior: callable | None = None


def _squared_psi(x):
    x = np.asarray(x, dtype=np.float64)
    return np.where(x > 1.0, 0.0, np.where(x < -1.0, -4.0 * x, (1.0 - x) ** 2))


SQUARED = RefLoss(
    name="squared",
    # phi(p) = p^2 - p, b = 1/4, phi'' = 2, H* = 1 / (1/4 * 2) = 2.
    psi=_squared_psi,
    weight=lambda e: np.clip(2.0 * (1.0 - np.asarray(e, dtype=np.float64)), 0.0, 4.0),
    posterior=lambda h: np.clip((1.0 + np.asarray(h, dtype=np.float64)) / 2.0, 0.0, 1.0),
    h_star=2.0,
    balanced=True,
    b=0.25,
    link=lambda h: np.clip((1.0 + np.asarray(h, dtype=np.float64)) / 2.0, 0.0, 1.0),
    grad_phi=lambda p: 2.0 * np.asarray(p, dtype=np.float64) - 1.0,
    edge_from_prior=lambda p: -(2.0 * np.asarray(p, dtype=np.float64) - 1.0),
)

LOGISTIC = RefLoss(
    name="logistic",
    # phi(p) = p ln p + (1-p) ln(1-p), b = ln 2, link = sigmoid, grad = logit,
    # phi''(1/2) = 4, H* = 1 / (4 ln 2); psi(x) = log2(1 + e^-x).
    psi=lambda x: np.logaddexp(0.0, -np.asarray(x, dtype=np.float64)) / LN2,
    weight=lambda e: _sigmoid(-np.asarray(e, dtype=np.float64)) / LN2,
    posterior=_sigmoid,
    h_star=1.0 / (4.0 * LN2),
    balanced=True,
    b=LN2,
    link=_sigmoid,
    grad_phi=lambda p: np.log(p) - np.log1p(-p),
    edge_from_prior=lambda p: -(np.log(p) - np.log1p(-p)),
)

BINARY_LOGISTIC = RefLoss(
    name="binary_logistic",
    # phi(p) = p log2 p + (1-p) log2(1-p), b = 1, link(h) = 1/(1 + 2^-h),
    # grad = log2(p/(1-p)), phi''(1/2) = 4/ln 2, H* = ln 2 / 4;
    # psi(x) = log2(1 + 2^-x).
    psi=lambda x: np.logaddexp(0.0, -LN2 * np.asarray(x, dtype=np.float64)) / LN2,
    weight=lambda e: _sigmoid(-LN2 * np.asarray(e, dtype=np.float64)),
    posterior=lambda h: _sigmoid(LN2 * np.asarray(h, dtype=np.float64)),
    h_star=LN2 / 4.0,
    balanced=True,
    b=1.0,
    link=lambda h: _sigmoid(LN2 * np.asarray(h, dtype=np.float64)),
    grad_phi=lambda p: (np.log(p) - np.log1p(-p)) / LN2,
    edge_from_prior=lambda p: -(np.log(p) - np.log1p(-p)) / LN2,
)


def _mat_link(h):
    h = np.asarray(h, dtype=np.float64)
    return 0.5 * (1.0 + h / np.sqrt(1.0 + h * h))


def _mat_grad(p):
    p = np.asarray(p, dtype=np.float64)
    return (2.0 * p - 1.0) / (2.0 * np.sqrt(p * (1.0 - p)))


MATSUSHITA = RefLoss(
    name="matsushita",
    # phi(p) = -sqrt(p(1-p)), b = 1/2, phi''(1/2) = 2, H* = 1;
    # psi(x) = sqrt(1 + x^2) - x.
    psi=lambda x: np.sqrt(1.0 + np.asarray(x, dtype=np.float64) ** 2) - np.asarray(x, dtype=np.float64),
    weight=lambda e: 2.0 * _mat_link(-np.asarray(e, dtype=np.float64)),
    posterior=_mat_link,
    h_star=1.0,
    balanced=True,
    b=0.5,
    link=_mat_link,
    grad_phi=_mat_grad,
    edge_from_prior=lambda p: -_mat_grad(p),
)

EXPONENTIAL = RefLoss(
    name="exponential",
    psi=lambda x: np.exp(-np.asarray(x, dtype=np.float64)),
    weight=lambda e: np.exp(-np.asarray(e, dtype=np.float64)),
    posterior=lambda h: _sigmoid(2.0 * np.asarray(h, dtype=np.float64)),
    h_star=1.0,
    balanced=False,
)


def _hinge_transfer(h):
    h = np.asarray(h, dtype=np.float64)
    return (1.0 + np.maximum(0.0, h)) / (2.0 + np.abs(h))


CALIBRATED_HINGE = RefLoss(
    name="calibrated_hinge",
    # psi(x) = 1 + max(0, -x) - ln(1 + |x|/2); w(e) = f(-e) with transfer
    # f(h) = (1 + max(0, h)) / (2 + |h|); H* = psi''(0) = 1/4.
    psi=lambda x: 1.0
    + np.maximum(0.0, -np.asarray(x, dtype=np.float64))
    - np.log1p(np.abs(np.asarray(x, dtype=np.float64)) / 2.0),
    weight=lambda e: _hinge_transfer(-np.asarray(e, dtype=np.float64)),
    posterior=_hinge_transfer,
    h_star=0.25,
    balanced=False,
    # f(-e0) = pi <= 1/2 with -e0 <= 0: 1 / (2 + e0) = pi  =>  e0 = 1/pi - 2.
    edge_from_prior=lambda p: 1.0 / np.asarray(p, dtype=np.float64) - 2.0,
)

LOSSES = {
    loss.name: loss
    for loss in (SQUARED, LOGISTIC, BINARY_LOGISTIC, MATSUSHITA, EXPONENTIAL, CALIBRATED_HINGE)
}


# --------------------------------------------------------------------------
# Data helpers
# --------------------------------------------------------------------------


def encode_labels(y):
    """Return ``(Y, classes)``: ``Y`` the (m, C) +-1 matrix.

    1-d ``y``: classes are ``np.unique(y)`` (sorted) and ``Y[i, c] = +1`` iff
    ``y_i == classes[c]``.  2-d ``y`` (multilabel {0,1} or {-1,1}): ``Y[i, c] =
    +1`` iff ``y[i, c] > 0``.
    """
    y = np.asarray(y)
    if y.ndim == 1:
        classes = np.unique(y)
        Y = np.where(y[:, None] == classes[None, :], 1.0, -1.0)
        return Y, classes
    Y = np.where(y > 0, 1.0, -1.0)
    return Y, np.arange(y.shape[1])


def knn_bruteforce(X, k):
    """Exact Euclidean k nearest neighbours of each row of X among the others.

    Self is excluded; ties are broken by lower index (stable sort on squared
    distances computed in float64).
    """
    X = np.asarray(X, dtype=np.float64)
    # exact differences (no ||a||^2 + ||b||^2 - 2ab cancellation)
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    np.fill_diagonal(d2, np.inf)
    return np.argsort(d2, axis=1, kind="stable")[:, :k].astype(np.int64)


def inverse_neighborhoods(NN, m):
    """``inv[j]`` = sorted array of ``i`` with ``j in NN[i]``."""
    NN = np.asarray(NN)
    inv = [[] for _ in range(m)]
    for i in range(NN.shape[0]):
        for j in NN[i]:
            inv[int(j)].append(i)
    return [np.asarray(sorted(v), dtype=np.int64) for v in inv]


def _order(order, m, C):
    """The example sequence per class, (C, T): one lazy pass 0, 1, …, m − 1 by
    default, else the given indices — (T,) for every class (several passes, a
    random order, any length) or (C, T), a sequence per class (a greedy run's
    picks, replayed)."""
    order = np.arange(m) if order is None else np.asarray(order, dtype=np.int64)
    return np.broadcast_to(order, (C, order.shape[-1]))


def _membership(inv, m):
    """(m, m) float64 matrix A with A[j, i] = 1/n_j for i in inv(j): A @ v
    averages v over each inverse neighbourhood (every example's η/n at once)."""
    A = np.zeros((m, m))
    for j, s in enumerate(inv):
        A[j, s] = 1.0 / max(s.size, 1)
    return A


def _pick_gap(w, y, membership, j):
    """How far example j's greedy score |eta_j|/n_j = |sum_{i in inv(j)} w_i
    y_ic| / n_j falls below the best one, relative to it (0: j is an argmax);
    ``membership`` is :func:`_membership`'s matrix."""
    score = np.abs(membership @ (w * y))
    best = score.max()
    return 0.0 if best == 0 else (best - score[j]) / best


@dataclasses.dataclass
class RefResult:
    alpha: np.ndarray  # (m, C) leveraging coefficients, sorted class order
    edges: np.ndarray  # (m, C) final edges e_ic (including initial offset)
    weights: np.ndarray  # (m, C) final weights
    deltas: np.ndarray  # (C, T) delta of step t for class c (T steps; T = m by default)
    risk: np.ndarray  # (C*T + 1,) total risk (1/(mC)) sum psi(e_ic), classes in sequence
    class_risk: np.ndarray  # (C, T + 1) per-class risk (1/m) sum_i psi(e_ic) after step t
    Y: np.ndarray
    # (C, T) for a replayed per-class sequence: how far each pick's greedy score
    # fell below the best at its step, relative (0: an argmax); else None
    pick_gaps: np.ndarray | None = None

    @property
    def parallel_risk(self) -> np.ndarray:
        """(T,) total risk after step t when all classes advance together."""
        return self.class_risk[:, 1:].mean(axis=0)


def _risk_tracker(loss, E, u=None):
    """Running value of sum_{i,c} u_i psi(e_ic) (u = 1 by default); returns
    (total, per-entry u_i psi)."""
    P = loss.psi(E) if u is None else u[:, None] * loss.psi(E)
    return float(P.sum()), P


# --------------------------------------------------------------------------
# GNNB
# --------------------------------------------------------------------------


def gnnb(Y, NN, loss, epsilon=0.5, *, initial_edges=None, order=None):
    """GNNB (TPAMI 2014, Algorithm 1) with the lazy chooser j = t.

    eta = sum_{i in inv(j)} w_i r_i;  delta = 2 (1 - eps) eta / (H* n_j);
    weights updated by eq. (11),
        w_i <- link(-delta r_i + grad_phi(b w_i)) / b,
    written literally for the logistic, binary logistic and Matsushita losses
    (their links never saturate).

    For the squared loss the link *does* saturate (w in [0, 4]): once a
    weight hits 0 or 4, ``grad_phi(b w)`` no longer determines the edge, and
    the literal weight form forgets how far beyond the kink the example is.
    The faithful quantity is then the edge itself, so for the squared loss we
    carry e_i <- e_i + delta r_i and set w_i = clip(2 (1 - e_i), 0, 4).

    ``initial_edges`` (m, C) is used by N3 (class-balanced initial weights,
    via the weight-from-edge map); by default all edges start at 0, i.e.
    w = 1 / (2b).
    """
    if isinstance(loss, str):
        loss = LOSSES[loss]
    if not loss.balanced and initial_edges is None:
        raise ValueError("GNNB needs a balanced loss")
    Y = np.asarray(Y, dtype=np.float64)
    NN = np.asarray(NN)
    m, C = Y.shape
    inv = inverse_neighborhoods(NN, m)
    E0 = np.zeros((m, C)) if initial_edges is None else np.asarray(initial_edges, dtype=np.float64)
    alpha = np.zeros((m, C))
    E = E0.copy()
    W = np.zeros((m, C))
    replay = order is not None and np.ndim(order) == 2
    membership = _membership(inv, m) if replay else None
    order = _order(order, m, C)
    T = order.shape[1]
    deltas = np.zeros((C, T))
    gaps = np.zeros((C, T))
    total, P = _risk_tracker(loss, E)
    risk = [total / (m * C)]
    class_risk = np.zeros((C, T + 1))
    literal = loss.balanced and loss.name != "squared"
    for c in range(C):
        if initial_edges is None and loss.balanced:
            w = np.full(m, 1.0 / (2.0 * loss.b))  # Algorithm 1: w <- 1/(2b)
        else:
            w = loss.weight(E[:, c])
        e = E[:, c].copy()
        class_risk[c, 0] = P[:, c].sum() / m
        for t in range(T):
            j = int(order[c, t])  # lazy WIC [I.0.a]: order = 0, 1, …, m − 1
            if replay:
                gaps[c, t] = _pick_gap(w, Y[:, c], membership, j)
            idx = inv[j]
            n_j = idx.size
            if n_j == 0:
                delta = 0.0
            else:
                r = Y[idx, c] * Y[j, c]
                eta = float(np.sum(w[idx] * r))  # (9)
                delta = 2.0 * (1.0 - epsilon) * eta / (loss.h_star * n_j)  # (10)
                # edges are carried in every case (for the risk, and as the
                # state of the squared / non-balanced losses)
                e[idx] = e[idx] + delta * r
                if literal:  # (11), literally
                    b = loss.b
                    w[idx] = loss.link(-delta * r + loss.grad_phi(b * w[idx])) / b
                else:  # edge form: w_i = w(e_i)
                    w[idx] = loss.weight(e[idx])
                newP = loss.psi(e[idx])
                total += float(newP.sum() - P[idx, c].sum())
                P[idx, c] = newP
            alpha[j, c] += delta  # [I.3]
            deltas[c, t] = delta
            risk.append(total / (m * C))
            class_risk[c, t + 1] = P[:, c].sum() / m
        E[:, c] = e
        W[:, c] = w
    return RefResult(alpha, E, W, deltas, np.asarray(risk), class_risk, Y, gaps if replay else None)


# --------------------------------------------------------------------------
# UNN
# --------------------------------------------------------------------------


def _solve_decreasing(G, tol=1e-14):
    """Root of a non-increasing function G (sign change guaranteed)."""
    g0 = G(0.0)
    if g0 == 0.0:
        return 0.0
    step = 1.0
    if g0 > 0:
        lo, hi = 0.0, step
        while G(hi) > 0:
            lo, hi = hi, hi * 2.0
            if hi > 1e6:
                raise RuntimeError("no sign change")
    else:
        lo, hi = -step, 0.0
        while G(lo) < 0:
            hi, lo = lo, lo * 2.0
            if lo < -1e6:
                raise RuntimeError("no sign change")
    return brentq(G, lo, hi, xtol=tol, rtol=4 * np.finfo(float).eps, maxiter=500)


def _edge_loop(Y, NN, loss, step, order=None, *, u=None, E0=None):
    """The chooser's sequence (lazy: j = t) over the edges, class by class: ``step(r, e)``
    (r_i = y_ic y_jc and e_i for i in inv(j)) gives delta, then
    e_i <- e_i + delta r_i (weights w_i = w(e_i)) and alpha_jc += delta.
    With sample weights ``u`` (m,): ``step(r, e, u_inv)`` with the members'
    weights, delta = 0 where they sum to 0, and the risk sums u_i psi(e_ic).
    ``E0``: the initial edges (default 0)."""
    Y = np.asarray(Y, dtype=np.float64)
    m, C = Y.shape
    inv = inverse_neighborhoods(NN, m)
    alpha = np.zeros((m, C))
    E = np.zeros((m, C)) if E0 is None else np.asarray(E0, dtype=np.float64).copy()
    scale = np.ones(m) if u is None else np.asarray(u, dtype=np.float64)
    replay = order is not None and np.ndim(order) == 2
    membership = _membership(inv, m) if replay else None
    order = _order(order, m, C)
    T = order.shape[1]
    deltas = np.zeros((C, T))
    gaps = np.zeros((C, T))
    total, P = _risk_tracker(loss, E, scale)
    risk = [total / (m * C)]
    class_risk = np.zeros((C, T + 1))
    for c in range(C):
        e = E[:, c].copy()
        class_risk[c, 0] = P[:, c].sum() / m
        for t in range(T):
            j = int(order[c, t])
            if replay:
                gaps[c, t] = _pick_gap(loss.weight(e), Y[:, c], membership, j)
            idx = inv[j]
            if idx.size == 0 or scale[idx].sum() == 0:
                delta = 0.0
            else:
                r = Y[idx, c] * Y[j, c]
                delta = step(r, e[idx]) if u is None else step(r, e[idx], scale[idx])
                e[idx] = e[idx] + delta * r
                newP = scale[idx] * loss.psi(e[idx])
                total += float(newP.sum() - P[idx, c].sum())
                P[idx, c] = newP
            alpha[j, c] += delta
            deltas[c, t] = delta
            risk.append(total / (m * C))
            class_risk[c, t + 1] = P[:, c].sum() / m
        E[:, c] = e
    return RefResult(alpha, E, loss.weight(E), deltas, np.asarray(risk), class_risk, Y, gaps if replay else None)


def unn(Y, NN, loss, *, smoothing=True, order=None, max_delta=50.0):
    """UNN (Neurocomputing 2012, Algorithm 1) with the lazy chooser j = t.

    delta solves (10): sum_{i in inv(j)} r_i w(e_i + delta r_i) = 0, smoothed
    (default) by a virtual pair of neighbours at edge 0 carrying weight 1/m
    each,
        G(delta) = sum_i r_i w(e_i + delta r_i) + s (w(delta) - w(-delta)),
        s = 1 / (m w(0)),
    which for the exponential loss is exactly eq. (13):
        delta = 1/2 ln((W+ + 1/m) / (W- + 1/m)).
    Then e_i <- e_i + delta r_i (weights w_i = w(e_i), eq. (11)).
    The exponential loss uses the closed form; other losses are solved with
    brentq (G is decreasing in delta).  Roots beyond +-max_delta, and the
    missing root when all r_i agree without smoothing, give +-max_delta
    (jaxnn's documented bound; the papers have none).
    """
    if isinstance(loss, str):
        loss = LOSSES[loss]
    m = np.shape(Y)[0]
    s = 1.0 / (m * float(loss.weight(0.0))) if smoothing else 0.0
    mass = 1.0 / m if smoothing else 0.0

    def step(r, ei):
        if loss.name == "exponential":
            w = loss.weight(ei)
            wp = float(np.sum(w[r > 0])) + mass
            wm = float(np.sum(w[r < 0])) + mass
            if wp == 0.0 or wm == 0.0:  # one side empty, without smoothing: no finite root
                return math.copysign(max_delta, wp - wm)
            return min(max(0.5 * math.log(wp / wm), -max_delta), max_delta)  # eq. (13), clipped

        def G(d):
            g = float(np.sum(r * loss.weight(ei + d * r)))
            if s:
                g += s * float(loss.weight(d) - loss.weight(-d))
            return g

        if G(max_delta) >= 0:
            return max_delta
        if G(-max_delta) <= 0:
            return -max_delta
        return _solve_decreasing(G)

    return _edge_loop(Y, NN, loss, step, order)


# --------------------------------------------------------------------------
# UNN, fast step (paper 003)
# --------------------------------------------------------------------------

#: paper 003 Table 2, delta_jc as a function of W_jc = W+ / (W+ + W-) (rows A, B,
#: C, D, F), written in W+ and W- themselves: W rounds to 1 once W- << W+
#: (float64 too), and a side with no weight gives delta = +-inf (the clip to
#: +-max_delta) or, for the squared loss, +-1
FAST_DELTA = {
    "squared": lambda wp, wm: (wp - wm) / (wp + wm),  # A: 2W - 1
    "logistic": lambda wp, wm: np.log(wp) - np.log(wm),  # B: ln(W / (1 - W))
    "binary_logistic": lambda wp, wm: np.log2(wp) - np.log2(wm),  # C
    "matsushita": lambda wp, wm: (wp - wm) / (2.0 * np.sqrt(wp * wm)),  # D
    "exponential": lambda wp, wm: 0.5 * (np.log(wp) - np.log(wm)),  # F
    # paper 002 Table 1 D's transfer f(h) = (1 + max(0, h)) / (2 + |h|) inverted
    "calibrated_hinge": lambda wp, wm: (wp - wm) / wm if wp >= wm else 2.0 - (wp + wm) / wp,
}


def unn_fast(Y, NN, loss, *, smoothing=True, max_delta=50.0, order=None):
    """UNN with the fast step of d'Ambrosio et al. (ECML-PKDD 2012), eq. (30)
    and Table 2, lazy chooser j = t.

    W = (W+ + s) / (W+ + W- + 2 s), W+- the weights of the members of inv(j)
    with r_i = +-1 and s = 1/m when smoothed (eq. 13's mass 1/m on each side);
    delta = Table 2's delta(W), clipped to +-max_delta — without smoothing, W = 1
    (0) has no finite delta but for the squared loss (+-1).  Then
    e_i <- e_i + delta r_i.
    """
    if isinstance(loss, str):
        loss = LOSSES[loss]
    table = FAST_DELTA[loss.name]
    s = 1.0 / np.shape(Y)[0] if smoothing else 0.0

    def step(r, ei):
        w = loss.weight(ei)
        wp = np.float64(np.sum(w[r > 0]) + s)
        wm = np.float64(np.sum(w[r < 0]) + s)
        if wp + wm == 0:  # every weight 0 (squared loss, no smoothing): nothing to learn
            return 0.0
        with np.errstate(divide="ignore"):
            delta = float(table(wp, wm))
        return min(max(delta, -max_delta), max_delta)

    return _edge_loop(Y, NN, loss, step, order)


# --------------------------------------------------------------------------
# N3
# --------------------------------------------------------------------------


def class_balanced_prior(Y):
    """pi_ic = 1 / ||1 + y_ic y_i||_1 = 1 / (2 #{l : Y[i,l] == Y[i,c]})."""
    Y = np.asarray(Y)
    same = (Y[:, :, None] == Y[:, None, :]).sum(axis=2)  # (m, C)
    return 1.0 / (2.0 * same)


def n3(Y, NN, loss, *, order=None):
    """N3 (MLSP 2013, Algorithm 1) with the lazy chooser j = t.

    Newton step delta = eta / (H* n_j) (GNNB with eps = 1/2), class-balanced
    initial weights w_i = 1/||1 + y_ic y_i||_1 expressed as an initial edge
    offset e0 with posterior(-e0) = pi (so w(e0) = pi / b for balanced
    losses, pi for the calibrated hinge).  Weights are w(e).
    """
    if isinstance(loss, str):
        loss = LOSSES[loss]
    Y = np.asarray(Y, dtype=np.float64)
    pi = class_balanced_prior(Y)
    E0 = loss.edge_from_prior(pi)
    return gnnb(Y, NN, loss, epsilon=0.5, initial_edges=E0, order=order)


# --------------------------------------------------------------------------
# Sample weights
# --------------------------------------------------------------------------


def weighted(Y, NN, loss, algorithm, u, *, epsilon=0.5, smoothing=True, max_delta=50.0, order=None):
    """GNNB, N3, UNN or UNN fast (``algorithm`` by name) on the sample-weighted
    surrogate risk R = (1/(mC)) sum_i u_i sum_c psi(e_ic), lazy chooser
    j = t (or the given ``order``), edge form throughout.

    ``u`` (m,) are the weights as given (scaled here to mean 1).  A step on j
    weighs each member i of inv(j) by u_i wherever the unweighted step counts
    it once:

    * GNNB / N3: eta = sum_i u_i w(e_i) r_i, delta = s eta / (H* sum_i u_i)
      (s = 2 (1 - eps), or 1 for N3 from the class-balanced initial edges);
    * UNN: the root of sum_i u_i r_i w(e_i + delta r_i) + s (w(delta) - w(-delta)),
      s = 1/(m w(0)) smoothed;
    * UNN fast: Table 2's delta of W+- = sum_{r_i = +-1} u_i w(e_i) (+ 1/m);

    delta = 0 where sum_i u_i = 0; then e_i <- e_i + delta r_i and
    alpha_jc += delta.  ``risk`` holds R after each step, classes in
    sequence; ``parallel_risk`` with all classes stepping together."""
    if isinstance(loss, str):
        loss = LOSSES[loss]
    Y = np.asarray(Y, dtype=np.float64)
    m = Y.shape[0]
    u = np.asarray(u, dtype=np.float64)
    u = u * (m / u.sum())
    s = 1.0 / (m * float(loss.weight(0.0))) if smoothing else 0.0
    extra = 1.0 / m if smoothing else 0.0

    def newton(r, ei, ui):
        scale = 1.0 if algorithm == "n3" else 2.0 * (1.0 - epsilon)
        return scale * float(np.sum(ui * loss.weight(ei) * r)) / (loss.h_star * float(ui.sum()))

    def fast(r, ei, ui):
        w = loss.weight(ei)
        wp, wm = float(np.sum(ui * w * (r > 0))) + extra, float(np.sum(ui * w * (r < 0))) + extra
        with np.errstate(divide="ignore"):
            delta = float(FAST_DELTA[loss.name](wp, wm)) if wp + wm > 0 else 0.0
        return min(max(delta, -max_delta), max_delta)

    def root(r, ei, ui):
        def G(d):
            g = float(np.sum(ui * r * loss.weight(ei + d * r)))
            return g + (s * float(loss.weight(d) - loss.weight(-d)) if s else 0.0)

        return max_delta if G(max_delta) >= 0 else -max_delta if G(-max_delta) <= 0 else _solve_decreasing(G)

    steps = {"gnnb": newton, "n3": newton, "unn_fast": fast, "unn": root}
    if algorithm not in steps:
        raise ValueError(f"unknown algorithm {algorithm!r}")
    E0 = loss.edge_from_prior(class_balanced_prior(Y)) if algorithm == "n3" else None
    return _edge_loop(Y, NN, loss, steps[algorithm], order, u=u, E0=E0)


# --------------------------------------------------------------------------
# Colourings and feature blocks (for test_reference_schedules.py)
# --------------------------------------------------------------------------


def colour_conflicts(NN, colours) -> int:
    """How many pairs of distinct examples of one colour conflict: both sit in
    one neighbour list NN(i) (so both inverse neighbourhoods hold i and their
    steps touch the same edge e_i).  0 iff ``colours`` (m,) is a proper
    colouring of the conflict graph, i.e. running the examples of a colour
    one after another in any order gives the same edges as running them all
    at once."""
    NN = np.asarray(NN)
    colours = np.asarray(colours)
    bad = 0
    for row in NN:
        row = np.unique(row)
        _, counts = np.unique(colours[row], return_counts=True)
        bad += int(np.sum(counts * (counts - 1) // 2))
    return bad


def order_by_colour(colours, rng=None):
    """The examples grouped by colour, colour 0 first; within a colour by
    index, or in a random order when ``rng`` (a NumPy Generator) is given."""
    colours = np.asarray(colours)
    m = colours.size
    within = np.arange(m) if rng is None else rng.permutation(m)
    return np.lexsort((within, colours)).astype(np.int64)


def normalised_blocks(X, blocks, norm="l2"):
    """Paper 000 §6.4's sub-descriptors: for each block (a sequence of column
    indices) the (m, len(block)) float64 array X[:, block], each row scaled to
    unit L2 (``"l2"``) or L1 (``"l1"``) norm — an all-zero row stays zero —
    or left as it is (``None``)."""
    X = np.asarray(X, dtype=np.float64)
    out = []
    for block in blocks:
        B = X[:, list(block)]
        if norm is not None:
            size = np.abs(B).sum(axis=1) if norm == "l1" else np.sqrt((B * B).sum(axis=1))
            B = np.where(size[:, None] > 0, B / np.where(size > 0, size, 1.0)[:, None], 0.0)
        out.append(B)
    return out


def knn_margin(X, k):
    """The smallest relative gap, over all examples, between the squared
    distance of the k-th and of the (k+1)-th nearest other point: when it is
    well above float rounding, the k-NN graph of X is unambiguous (any exact
    search finds :func:`knn_bruteforce`'s graph)."""
    X = np.asarray(X, dtype=np.float64)
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    np.fill_diagonal(d2, np.inf)
    part = np.sort(d2, axis=1)[:, k - 1 : k + 1]
    return float(np.min((part[:, 1] - part[:, 0]) / np.maximum(part[:, 1], np.finfo(float).tiny)))


def fill_unreached(alpha, Y, NN, weights=None):
    """α (m, C) as ``fit`` documents ``model.alpha``: an example that is no
    example's neighbour in the (m, k) graph NN (n_j = 0, never leveraged)
    takes, for each class c, the mean α_jc of the reached examples whose label
    sign y_jc is its own, floored at 0 (0 where there are none); reached
    examples keep their α.  With sample ``weights`` (m,), reached means
    the neighbour of an example of positive weight.  Plain NumPy, in float64."""
    alpha = np.asarray(alpha, np.float64)
    Y = np.asarray(Y)
    NN = np.asarray(NN)
    per_edge = None if weights is None else np.repeat(np.asarray(weights, np.float64), NN.shape[1])
    reached = np.bincount(NN.ravel(), weights=per_edge, minlength=alpha.shape[0])[: alpha.shape[0]] > 0
    out = alpha.copy()
    for c in range(alpha.shape[1]):
        for sign in (True, False):
            group = (Y[:, c] > 0) == sign
            source = group & reached
            fill = max(alpha[source, c].mean(), 0.0) if source.any() else 0.0
            out[group & ~reached, c] = fill
    return out


# --------------------------------------------------------------------------
# Posteriors (the default, posterior="auto")
# --------------------------------------------------------------------------


def calibrated_posteriors(H, T, top=None, kernel_term=None, multilabel=False, eps=0.01):
    """The default posteriors of scores H (n, C) at temperature T, row by row
    in float64: multilabel (1 − ε)/(1 + e^{−H_c/T}) + ε/2 per label; else
    p̂ = (1 − ε)·softmax(Z) + ε/C with Z = H/T + G (G = ``kernel_term``, or
    0) and, with G, the logit of class ``top[i]`` set to row i's largest;
    where another class ties the largest p̂ of a row it is given the next
    float below (the tie goes to ``top``)."""
    H = np.asarray(H, np.float64)
    n, C = H.shape
    if multilabel:
        return (1 - eps) / (1 + np.exp(-H / T)) + eps / 2
    P = np.empty((n, C))
    for i in range(n):
        z = H[i] / T
        if kernel_term is not None:
            z = z + np.asarray(kernel_term, np.float64)[i]
            z[top[i]] = z.max()
        e = np.exp(z - z.max())
        P[i] = (1 - eps) * (e / e.sum()) + eps / C
        if top is not None:
            for c in range(C):
                if c != top[i] and P[i, c] >= P[i, top[i]]:
                    P[i, c] = np.nextafter(P[i, top[i]], 0.0)
    return P


def kernel_log_votes(D, labels, bandwidth, floor=1e-3):
    """log(κ + δ) (n, C) in float64: κ_c = Σ_t K_t [label_tc] / Σ_t K_t, the
    vote of the k neighbours of each row weighted by K_t = exp(−g_t / (b·ḡ)),
    g_t = D_t − min_s D_s the gaps of their squared distances D (n, k), ḡ
    their mean (every K_t = 1 where all gaps are 0), b = ``bandwidth``;
    ``labels`` (n, k, C) bool; δ = ``floor``."""
    D = np.asarray(D, np.float64)
    n, k, C = np.shape(labels)
    out = np.empty((n, C))
    for i in range(n):
        g = D[i] - D[i].min()
        scale = bandwidth * g.mean()
        K = np.exp(-g / scale) if scale > 0 else np.ones(k)
        out[i] = np.log((K / K.sum()) @ np.asarray(labels[i], np.float64) + floor)
    return out
