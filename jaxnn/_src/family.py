"""The models of paper 004's family — ULS, OLS and UDT — as one kind of model.

Paper 004 (*Intrinsic Geometries in Learning*) drives three learners with the
same permissible φ: boosting a linear separator (ULS, Algorithm 1), on-line
p-norm learning (OLS, Algorithm 2) and top-down tree induction (UDT,
Algorithm 3).  Each returns a :class:`FamilyModel`: a frozen dataclass with
the label encoding (``classes``, ``multilabel``), the ``loss`` and the
number of features, plus its own arrays, whose method ``scores`` maps
checked query points (n, d) float32 to the scores H(x) (n, C), one column per
class.  :func:`scores` is the one way in (the points checked and padded to
shared row counts, so that nearby batch sizes share one compiled program);
``jaxnn.predict`` / ``predict_proba`` / ``decision_function`` answer from it
as for a k-NN model: argmax H (multilabel: H_c > 0), and the posteriors
either the loss's link ∇φ⁻¹(H) (paper 004 eq. 106's inverse) normalised over
the classes (``temperature`` None: ``posterior="link"``), or calibrated as a
k-NN model's default posteriors are (``posterior="auto"``, the members'
default): p̂ = (1 − ε)·softmax(S/T) + ε/C (multilabel (1 − ε)·σ(S_c/T) +
ε/2; :func:`jaxnn._src.calibration.calibrated_posterior`) of the member's
:meth:`FamilyModel.logits` S, at the temperature T of least log loss on
scores of examples the model did not learn from (:func:`held_out_temperature`:
a held-out split, :func:`held_out_split`, or an on-line learner's scores of
each example before its update).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Optional

import jax
import numpy as np

from jaxnn._src import calibration
from jaxnn._src.inputs import as_points
from jaxnn._src.losses import Loss
from jaxnn._src.model import HostPickled
from jaxnn._src.shared_sizes import first_rows, padded_rows, query_rows, to_device

__all__ = ["FamilyModel", "HOLDOUT", "held_out_split", "held_out_temperature", "query_points", "scores", "validate"]

#: the fraction of each class that a family member's fit holds out to choose
#: what the data cannot (the posteriors' temperature; ULS's number of steps)
HOLDOUT = 0.2


@dataclasses.dataclass(frozen=True)
class FamilyModel(HostPickled):
    """A model of paper 004's family (subclassed by ULS, OLS and UDT models).

    Attributes:
      classes: the C class labels (sorted), NumPy scalars of y's dtype;
        multilabel: 0..C−1.
      loss: the :class:`~jaxnn.losses.Loss` that drove the fit (its
        ``posterior`` is ∇φ⁻¹, the link of :func:`jaxnn.predict_proba`).
      multilabel: True if fit on an indicator matrix.
      n_features: d, the width of the points it scores.
      temperature: T of the calibrated posteriors (``posterior="auto"``),
        None for the loss's link (``posterior="link"``).
    """

    classes: tuple
    loss: Any
    multilabel: bool
    n_features: int
    temperature: Optional[float] = dataclasses.field(default=None, kw_only=True)

    #: "uls", "ols" or "udt": the algorithm's name in messages and files
    family: ClassVar[str] = ""

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def scores(self, X: jax.Array) -> jax.Array:
        """H(x) (n, C) for checked float32 points X (n, d) (rows may be padding)."""
        raise NotImplementedError

    def posterior(self, H: jax.Array) -> jax.Array:
        """The one-vs-rest posteriors p̂_c ∈ [0, 1] (n, C) of scores H: the
        loss's link ∇φ⁻¹(H) (a member whose scores are posteriors already
        overrides it).  Labels are H's argmax, multilabel p̂_c > 1/2."""
        return self.loss.posterior(H)

    def logits(self, H: jax.Array) -> jax.Array:
        """The scores S (n, C) that the calibrated posteriors read, on the
        link's scale: S_c > 0 exactly where the link's p̂_c > 1/2 — H itself
        (a member whose scores are posteriors overrides it)."""
        return H


def validate(model: FamilyModel) -> FamilyModel:
    """``model`` unless a field is wrong (a model edited by hand, a corrupted
    file): a TypeError or ValueError naming it — the fields every member
    shares (a member's arrays are checked by use)."""
    if not isinstance(model, FamilyModel):
        raise TypeError(f"expected a model of paper 004's family (jaxnn.uls, ols, udt), got {type(model).__name__}")
    if not isinstance(model.loss, Loss):
        raise TypeError(f"model.loss must be a jaxnn.losses.Loss, got {type(model.loss).__name__}")
    if not isinstance(model.multilabel, (bool, np.bool_)):
        raise TypeError(f"model.multilabel must be a bool, got {model.multilabel!r}")
    if len(model.classes) < 2:
        raise ValueError(f"model.classes must hold at least 2 classes, got {len(model.classes)}")
    d = model.n_features
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"model.n_features must be an integer >= 1, got {d!r}")
    T = model.temperature
    if T is not None and (isinstance(T, bool) or not isinstance(T, (int, float, np.number)) or not 0 < T < np.inf):
        raise ValueError(f"model.temperature must be None or a finite number > 0, got {T!r}")
    return model


def query_points(model: FamilyModel, X, name: str = "X") -> np.ndarray:
    """X checked (finite, 2-D, numeric) with ``model.n_features`` columns, as float32 (n, d)."""
    X = as_points(X, name)
    if X.shape[1] != model.n_features:
        raise ValueError(f"{name} has {X.shape[1]} features, but this {model.family.upper()} model was fit on "
                         f"{model.n_features}")
    return X


def scores(model: FamilyModel, X) -> jax.Array:
    """H(x) (n, C) for the rows of X: checked, padded on the host to
    :func:`~jaxnn._src.shared_sizes.query_rows` (nothing compiles per n), scored, cut."""
    X = query_points(model, X)
    if isinstance(X, jax.core.Tracer):
        return model.scores(X.astype(np.float32))
    n = X.shape[0]
    Xp = to_device(padded_rows(np.asarray(X, np.float32), query_rows(n)))
    return first_rows((model.scores(Xp),), n)[0]


def held_out_split(Y: np.ndarray, multilabel: bool, seed: int) -> tuple:
    """(train, held-out) row indices of labels Y (m, C) ±1: :data:`HOLDOUT`
    of each class held out (multilabel: of all rows), drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    m = Y.shape[0]
    if multilabel:
        order = rng.permutation(m)
        n = max(1, int(round(HOLDOUT * m)))
        return np.sort(order[n:]), np.sort(order[:n])
    held = []
    codes = np.argmax(Y, axis=1)
    for c in np.unique(codes):
        rows = np.flatnonzero(codes == c)
        held.append(rng.permutation(rows)[:int(HOLDOUT * rows.size)])
    held = np.sort(np.concatenate(held))
    return np.setdiff1d(np.arange(m), held), held


def held_out_temperature(S, Y, multilabel: bool, weights=None) -> Optional[float]:
    """The temperature T of least mean log loss of the calibrated posteriors
    (:func:`jaxnn._src.calibration.best_temperature`) on logits S (n, C) —
    :meth:`FamilyModel.logits` of scores of examples the model did not
    learn from — with labels Y (n, C) ±1 (``weights`` (n,): the weighted
    mean); None (the link's posteriors) where there are no such examples."""
    if np.shape(S)[0] == 0:
        return None
    target = (np.asarray(Y) > 0).astype(np.float64)
    return calibration.fit_temperature(np.asarray(S, np.float64), target, multilabel, weights)
