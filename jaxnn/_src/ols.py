"""OLS: on-line learning of a linear separator by a p-norm geodesic walk
(paper 004, Algorithm 2, §5.2).

Each example o_t = (x_t, 1) of the stream — the point with a constant
feature appended, so that the separator has a bias: w ∈ R^{d+1} — moves the
weights by eq. 93, a gradient step on the balanced loss
D_φ(y_t ‖ ∇φ⁻¹(w_{t−1}·o_t)) taken in the dual coordinates of the q-norm
potential ψ_q = ½‖w‖_q²:

    θ_t = θ_{t−1} − η_t (∇φ⁻¹(w_{t−1}·o_t) − y_t) o_t,   w_t = ∇ψ_p(θ_t),

with θ = ∇ψ_q(w), ∇ψ_q(x)_i = sign(x_i)|x_i|^{q−1} / ‖x‖_q^{q−2} (paper 004
Table 1) and its inverse ∇ψ_p, 1/p + 1/q = 1; w₀ = θ₀ = 0, y_t ∈ {0, 1}.
q = p = 2 is plain stochastic gradient descent on the φ-loss.

Multiclass and multilabel: one column of w per class, each a binary OLS of
"class c against the rest" on the same o_t (y_t,c = 1 for the class of the
example).  For a single-label problem of two classes the two columns are
exact opposites (φ symmetric: ∇φ⁻¹(−h) = 1 − ∇φ⁻¹(h)), so one column is
learned and the scores are H = (−h, h).

Rate (eq. 98): η = λ / ((p − 1) λ_p²), with λ = min φ'' (eq. 97: 4 for the
logistic loss's entropy φ_Q, 2 for φ_B (Gini) and φ_M (Matsushita)) and
λ_p = max ‖o_s‖_p (eq. 96) over the examples seen so far, the current one
included: the state keeps λ_p, and the rate of step t is
λ / ((p − 1) λ_{p,t}²).  A fixed ``eta`` replaces it.  With η fixed at eq.
98's value for the whole stream, Theorem 3 bounds the learner's
predictions' divergence to any reference r's:
Σ_t D_φ(p̂_w,t ‖ p̂_r,t) ≤ Σ_t D_φ(y_t ‖ p̂_r,t) + (p − 1) λ_p² ‖r‖_q² / (2λ).

p defaults to max(2, 2 ln(d + 1)), Gentile's choice for the d + 1 entries of
o_t (the bias included).

The state of the stream is an :class:`OLSModel`: ``jaxnn.predict`` takes it
at any point; :func:`ols_update` returns a new one (the given state is never
changed).  A batch's rows are one ``lax.scan`` (state in, state out) padded
to :func:`~jaxnn._src.shared_sizes.query_rows`, so that batches of nearby
sizes share one compiled program.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import ClassVar, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import losses as losses_mod
from jaxnn._src import programs
from jaxnn._src.checks import check_bool
from jaxnn._src.family import HOLDOUT, FamilyModel, held_out_temperature
from jaxnn._src.inputs import as_points, encode_labels
from jaxnn._src.params import FAMILY_POSTERIORS, check
from jaxnn._src.shared_sizes import query_rows, to_device

__all__ = ["OLSModel", "ols", "ols_init", "ols_update", "curvature_bound", "default_p", "grad_psi"]

#: rows a batch of :func:`ols` runs through :func:`ols_update`'s scan at once
#: (the data is shuffled and cut into batches of this size, the last padded)
OLS_BATCH = 8192


@dataclasses.dataclass(frozen=True)
class OLSModel(FamilyModel):
    """The state of an OLS stream, and the linear separator it predicts with.

    Attributes (besides :class:`FamilyModel`'s):
      theta: θ = ∇ψ_q(w), (d + 1, K) float32: the dual weights eq. 93 moves.
      w: w = ∇ψ_p(θ), (d + 1, K) float32, the last row the bias:
        H(x) = x·w[:d] + w[d].  K = C, except K = 1 for a single-label
        problem of two classes (H = (−h, h)).
      lam_p: λ_p = max ‖o_s‖_p over the examples seen (eq. 96), () float32;
        0 before the first.
      p: the norm of the examples (p ≥ 2); q = p / (p − 1) is the weights'.
      eta: a fixed rate, or None for eq. 98's λ / ((p − 1) λ_p²).
      lam: λ = min φ'' (eq. 97).
      seen: the examples the stream has had.
    """

    theta: jax.Array = None
    w: jax.Array = None
    lam_p: jax.Array = None
    p: float = 2.0
    eta: Optional[float] = None
    lam: float = 0.0
    seen: int = 0

    family: ClassVar[str] = "ols"

    @property
    def q(self) -> float:
        """The dual exponent, 1/p + 1/q = 1."""
        return self.p / (self.p - 1.0)

    @property
    def rate(self) -> float:
        """The rate of the next step when its example does not raise λ_p:
        ``eta``, or λ / ((p − 1) λ_p²) (eq. 98; ∞ before the first example)."""
        if self.eta is not None:
            return self.eta
        lam_p = float(self.lam_p)
        return math.inf if lam_p == 0 else self.lam / ((self.p - 1.0) * lam_p * lam_p)

    def scores(self, X: jax.Array) -> jax.Array:
        """H(x) = x·w[:d] + w[d], (n, C), for float32 points X (n, d)."""
        return _scores(self.w, X, two_sided=self.w.shape[1] != self.n_classes)


@programs.jit(static_argnames=("two_sided",))
def _scores(w, X, *, two_sided: bool):
    return _columns(X @ w[:-1] + w[-1], two_sided)


def _columns(h, two_sided: bool, xp=jnp):
    """The scores H (n, C) of the outputs h (n, K): (−h, h) for a binary
    stream's one output, else h (``xp``: traced or NumPy)."""
    return xp.concatenate([-h, h], axis=1) if two_sided else h


# --------------------------------------------------------------------------
# the q-norm link (paper 004 Table 1)
# --------------------------------------------------------------------------


def grad_psi(x, r: float, axis: int = 0):
    """∇ψ_r(x) = sign(x)|x|^{r−1} / ‖x‖_r^{r−2} along ``axis`` (ψ_r = ½‖x‖_r²,
    paper 004 Table 1), 0 at x = 0; the inverse of ∇ψ_s for 1/r + 1/s = 1.
    Computed on x / max|x| (no overflow or underflow of |x|^{r−1})."""
    if r == 2.0:
        return x
    a = jnp.abs(x)
    top = jnp.max(a, axis=axis, keepdims=True)
    scale = jnp.where(top > 0, top, 1.0)
    u = a / scale
    power = jnp.exp((r - 1.0) * jnp.log(u))  # u^{r−1}; log 0 = −∞ gives 0
    total = jnp.sum(power * u, axis=axis, keepdims=True)  # Σ u^r: ≥ 1 where x ≠ 0, else 0
    return jnp.copysign(power, x) * (scale / jnp.maximum(total, 1.0) ** ((r - 2.0) / r))


def _p_norms(O, p: float):
    """‖o‖_p of each row of O (n, d + 1), on o / max|o|."""
    a = jnp.abs(O)
    top = jnp.max(a, axis=1)
    scale = jnp.where(top > 0, top, 1.0)
    u = a / scale[:, None]
    powers = jnp.exp(p * jnp.log(u))  # u^p; log 0 = −∞ gives 0
    return scale * jnp.sum(powers, axis=1) ** (1.0 / p)


# --------------------------------------------------------------------------
# the update (eq. 93), one lax.scan over a batch's rows
# --------------------------------------------------------------------------


@programs.jit(static_argnames=("loss", "p", "lam", "eta"))
def _advance(theta, w, lam_p, O, Y, *, loss, p: float, lam: float, eta: Optional[float]):
    """Eq. 93 over the rows of O (B, d + 1) (last column 1, or 0 on a padding
    row, which changes nothing) and their targets Y (B, K) in {0, 1}: the
    new (θ, w, λ_p) and each row's score o_t·w_{t−1} before its own update
    (B, K)."""
    mask = O[:, -1]
    lam_ps = jnp.maximum(lam_p, jax.lax.cummax(_p_norms(O, p) * mask, axis=0))  # λ_p,t (eq. 96 so far)
    if eta is None:
        rates = lam / ((p - 1.0) * jnp.where(lam_ps > 0, lam_ps, 1.0) ** 2)  # eq. 98
    else:
        rates = jnp.full_like(lam_ps, eta)
    rates = rates * mask

    def step(carry, row):
        theta, w = carry
        o, y, rate = row
        h = o @ w
        g = loss.link(h) - y  # ∇φ⁻¹(w_{t−1}·o_t) − y_t, (K,)
        theta = theta - rate * o[:, None] * g[None, :]
        return (theta, grad_psi(theta, p)), h

    (theta, w), before = jax.lax.scan(step, (theta, w), (O, Y, rates), unroll=8)
    return theta, w, lam_ps[-1], before


# --------------------------------------------------------------------------
# checks and the public functions
# --------------------------------------------------------------------------


def default_p(n_features: int) -> float:
    """Gentile's p = max(2, 2 ln(d + 1)) for d features and the bias."""
    return max(2.0, 2.0 * math.log(n_features + 1))


@functools.lru_cache(maxsize=None)
def _curvature_bound(loss) -> float:
    grid = np.concatenate([np.linspace(1e-3, 1 - 1e-3, 999), [0.5]]).astype(np.float32)
    values = np.asarray(_phi_second_derivative(grid, loss=loss), np.float64)
    return float(np.min(values[np.isfinite(values)]))


@programs.jit(static_argnames=("loss",))
def _phi_second_derivative(p, *, loss):
    """φ''(p) at each point of p, by :func:`jax.grad` of φ twice."""
    return jax.vmap(jax.grad(jax.grad(loss.phi)))(p)


def curvature_bound(loss) -> float:
    """λ of eq. 97: min φ'' over (0, 1) for a balanced loss, from φ by
    :func:`jax.grad` (read on ½ and 999 points from 10⁻³ to 1 − 10⁻³; the
    catalogue's φ'' is least at ½: 4 for φ_Q, 2 for φ_B and φ_M)."""
    return _curvature_bound(_balanced(loss))


def _balanced(loss):
    loss = losses_mod.get(loss)
    if not loss.balanced:
        raise ValueError(f"loss {loss.name!r} is given by ψ, not by a permissible φ: OLS walks on a balanced loss "
                         "D_φ(y ‖ ∇φ⁻¹(w·o)) (paper 004 eq. 93); use a loss built from φ (e.g. 'logistic', "
                         "'squared', 'matsushita', 'phi_mu(0.3)', 'phi_power(0.5)')")
    return loss


def _classes(classes, multilabel: bool) -> tuple:
    if multilabel:
        if isinstance(classes, (int, np.integer)) and not isinstance(classes, (bool, np.bool_)):
            classes = range(int(classes))
        labels = tuple(classes) if not isinstance(classes, (str, bytes)) else ()
        if len(labels) < 2 or list(labels) != list(range(len(labels))):
            raise ValueError(f"classes of a multilabel stream must be its number of labels C >= 2 (or 0..C-1), "
                             f"got {classes!r}")
        return labels
    if classes is None or isinstance(classes, (str, bytes, dict, set)) or np.ndim(classes) != 1:
        raise TypeError(f"classes must be a 1-D sequence of the class labels, got {type(classes).__name__}")
    arr = np.asarray(classes)
    uniq = np.unique(arr)
    if uniq.size != arr.size:
        raise ValueError(f"classes must be distinct, got {list(arr)!r}")
    if uniq.size < 2:
        raise ValueError(f"classes must hold at least 2 labels, got {list(arr)!r}")
    return tuple(uniq)


def ols_init(n_features: int, classes, *, loss="logistic", p: Optional[float] = None,
             eta: Optional[float] = None, multilabel: bool = False) -> OLSModel:
    """The state of an OLS stream before its first example: w = θ = 0.

    Args:
      n_features: d, the width of the examples (a bias is appended: o = (x, 1)).
      classes: the class labels (at least 2, sorted here); multilabel: the
        number of labels C (or 0..C−1).
      loss: a balanced loss (built from a permissible φ): a name or a
        :class:`~jaxnn.losses.Loss`.
      p: the examples' norm, ≥ 2 (None: max(2, 2 ln(d + 1))); q = p/(p − 1).
      eta: a fixed rate > 0, or None for eq. 98's λ/((p − 1) λ_p²) as λ_p grows.
      multilabel: the labels of :func:`ols_update` are (n, C) indicator rows.

    Returns:
      An :class:`OLSModel` (``jaxnn.predict`` gives H = 0: ties, posteriors ½).
    """
    n_features = check("n_features", n_features)
    multilabel = check_bool(multilabel, "multilabel")
    loss = _balanced(loss)
    p = default_p(n_features) if p is None else check("p", p)
    if eta is not None:
        eta = check("eta", eta)
    lam = curvature_bound(loss)
    if eta is None and not lam > 0:
        raise ValueError(f"loss {loss.name!r} has min phi'' = {lam:g}: eq. 98's rate lam / ((p - 1) lam_p^2) "
                         "needs it > 0; give a fixed eta")
    labels = _classes(classes, multilabel)
    K = 1 if len(labels) == 2 and not multilabel else len(labels)
    zeros = to_device(np.zeros((n_features + 1, K), np.float32))
    return OLSModel(classes=labels, loss=loss, multilabel=multilabel, n_features=n_features, theta=zeros, w=zeros,
                    lam_p=to_device(np.float32(0.0)), p=float(p), eta=None if eta is None else float(eta),
                    lam=float(lam), seen=0)


def _plain(label):
    """A NumPy scalar label as its Python value (for messages)."""
    return label.item() if isinstance(label, np.generic) else label


def _targets(state: OLSModel, y, n: int) -> np.ndarray:
    """y_batch as (n, K) float32 targets in {0, 1}."""
    if y is None or isinstance(y, (str, bytes, dict, set)):
        raise TypeError(f"y_batch must be an array of labels, got {type(y).__name__}")
    arr = np.asarray(y)
    C = state.n_classes
    if state.multilabel:
        if arr.shape != (n, C):
            raise ValueError(f"y_batch of a multilabel stream must be an (n, C) = ({n}, {C}) indicator matrix, "
                             f"got shape {arr.shape}")
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise TypeError(f"y_batch must be a numeric indicator matrix, got dtype {arr.dtype}")
        vals = np.unique(arr)
        if not (np.all(np.isin(vals, [0, 1])) or np.all(np.isin(vals, [-1, 1]))):
            raise ValueError(f"y_batch must hold values in {{0, 1}} or {{-1, +1}}, got {vals[:5]}")
        return (arr > 0).astype(np.float32)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"y_batch must be 1-D labels, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"X_batch and y_batch have mismatched lengths: {n} rows in X_batch, {arr.shape[0]} labels "
                         "in y_batch")
    known = np.asarray(state.classes)
    try:
        idx = np.clip(np.searchsorted(known, arr), 0, C - 1)
        found = known[idx] == arr
    except (TypeError, ValueError):
        found = np.zeros(n, bool)
        idx = np.zeros(n, np.int64)
    found = np.asarray(found, bool).reshape(n)
    if not found.all():
        bad = _plain(arr[int(np.argmin(found))])
        raise ValueError(f"y_batch has label {bad!r}, not among the stream's classes "
                         f"{[_plain(c) for c in state.classes]!r}")
    if state.w.shape[1] == 1:
        return (idx == 1).astype(np.float32)[:, None]
    Y = np.zeros((n, C), np.float32)
    Y[np.arange(n), idx] = 1.0
    return Y


def _examples(X: np.ndarray) -> np.ndarray:
    """o = (x, 1) for each row of X (n, d), padded with zero rows to
    :func:`query_rows` (n): (B, d + 1) float32."""
    n, d = X.shape
    O = np.zeros((query_rows(n), d + 1), np.float32)
    O[:n, :d] = X
    O[:n, d] = 1.0
    return O


def _stepped(state: OLSModel, X: np.ndarray, Y: np.ndarray) -> tuple:
    """(the state after the rows of X (n, d) with targets Y (n, K) 0/1, each
    row's outputs o·w before its update: (B, K) on the device, B ≥ n padded)."""
    n = X.shape[0]
    O = _examples(X)
    Yp = np.zeros((O.shape[0], Y.shape[1]), np.float32)
    Yp[:n] = Y
    theta, w, lam_p, before = _advance(state.theta, state.w, state.lam_p, to_device(O), to_device(Yp),
                                       loss=state.loss, p=state.p, lam=state.lam, eta=state.eta)
    return dataclasses.replace(state, theta=theta, w=w, lam_p=lam_p, seen=state.seen + n), before


def ols_update(state: OLSModel, X_batch, y_batch) -> OLSModel:
    """The state after the examples (X_batch, y_batch), in order (eq. 93).

    Args:
      state: an :class:`OLSModel` (:func:`ols_init`, :func:`ols` or a
        previous update); it is not changed.
      X_batch: (n, d) points, finite, d = ``state.n_features``.
      y_batch: (n,) labels among ``state.classes``; multilabel: (n, C)
        indicator rows ({0, 1} or {−1, +1}).

    Returns:
      A new :class:`OLSModel`.  One batch of n rows or two of them in turn
      give the same state.  The rows run as one ``lax.scan``, padded to
      :func:`~jaxnn._src.shared_sizes.query_rows` (n).
    """
    if not isinstance(state, OLSModel):
        kind = f"a {state.family.upper()} model" if isinstance(state, FamilyModel) else type(state).__name__
        raise TypeError(f"state must be an OLS state (jaxnn.ols_init or jaxnn.ols), got {kind}")
    X = as_points(X_batch, "X_batch")
    if X.shape[1] != state.n_features:
        raise ValueError(f"X_batch has {X.shape[1]} features, but this OLS stream has {state.n_features}")
    Y = _targets(state, y_batch, X.shape[0])
    return _stepped(state, np.asarray(X, np.float32), Y)[0]


def ols(X, y, *, loss="logistic", p: Optional[float] = None, passes: int = 1, eta: Optional[float] = None,
        seed: int = 0, posterior: str = "auto") -> OLSModel:
    """OLS (paper 004 Algorithm 2) over a data set: ``passes`` passes, each
    over the examples shuffled anew (NumPy's generator seeded by ``seed``),
    fed to :func:`ols_update` in batches of :data:`OLS_BATCH` rows.

    Args:
      X: (m, d) points; y: (m,) labels or an (m, C) indicator matrix.
      loss, p, eta: as :func:`ols_init`.
      passes: passes over the data (≥ 1).
      seed: the shuffles' seed.
      posterior: ``"auto"``: :func:`jaxnn.predict_proba` gives calibrated
        posteriors, softmax(H/T) (multilabel σ(H_c/T)), T of least log loss
        on the scores of the first pass's last :data:`~jaxnn._src.family.HOLDOUT`
        of the examples, each scored before its own update (held out from
        the model that scored it; no second pass); ``"link"``: the loss's
        link ∇φ⁻¹(H).  Labels are the same either way; :func:`ols_update`
        keeps the state's temperature.

    Returns:
      An :class:`OLSModel`, which :func:`ols_update` continues.
    """
    passes = check("passes", passes)
    seed = check("seed", seed)
    posterior = check("posterior", posterior, among=FAMILY_POSTERIORS, where=" for jaxnn.ols")
    X = as_points(X)
    classes, Ysigned, multilabel = encode_labels(y, X.shape[0])
    state = ols_init(X.shape[1], len(classes) if multilabel else classes, loss=loss, p=p, eta=eta,
                     multilabel=multilabel)
    state = dataclasses.replace(state, classes=classes)
    Y = (Ysigned > 0).astype(np.float32)
    if state.w.shape[1] == 1:
        Y = Y[:, 1:]
    X = np.asarray(X, np.float32)
    rng = np.random.default_rng(seed)
    m = X.shape[0]
    held = m - int(HOLDOUT * m)  # the first pass's examples from here on score T
    scored, targets = [], []
    for t in range(passes):
        order = rng.permutation(m)
        for start in range(0, m, OLS_BATCH):
            rows = order[start:start + OLS_BATCH]
            state, before = _stepped(state, X[rows], Y[rows])
            if t == 0 and start + rows.size > held:
                scored.append(np.asarray(before)[max(0, held - start):rows.size])
                targets.append(Ysigned[rows[max(0, held - start):]])
    if posterior == "auto" and held < m:
        H = _columns(np.concatenate(scored), two_sided=state.w.shape[1] != state.n_classes, xp=np)
        S = state.logits(H)
        state = dataclasses.replace(state, temperature=held_out_temperature(S, np.concatenate(targets), multilabel))
    return state
