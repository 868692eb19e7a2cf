"""The fitted model: :class:`Model`, a leveraged k-NN rule as an immutable pytree.

A :class:`Model` holds arrays (α, the training points and their ±1 labels)
plus static metadata (classes, k, loss, algorithm).  :func:`jaxnn.fit`
(:mod:`jaxnn._src.fitting`) makes one and :mod:`jaxnn._src.prediction` uses
it.  Pickles of models name this module (``Model``, ``_unpickled``,
``_HostArray``): those names stay here.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Model", "HostPickled", "without_float64"]


class _HostArray(NamedTuple):
    """A JAX array of a pickled model, stored as the NumPy array it holds."""

    value: np.ndarray


class HostPickled:
    """Pickling for the models (frozen dataclasses): JAX arrays are stored as
    NumPy arrays, and on loading become JAX arrays again — except float64
    ones while x64 is off, which stay NumPy, so that the model is narrowed by
    :func:`without_float64` on use, as in the process that fit it.  JAX's own
    array pickling cast them to float32 on loading, uncentred: a model fit
    under x64 on points at 10⁸ ± 1 and loaded without it predicted at chance
    (0.48 for 0.99), with no warning."""

    def __reduce__(self):
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields = {name: _HostArray(np.asarray(v)) if isinstance(v, jax.Array) else v for name, v in fields.items()}
        return _unpickled, (type(self), fields)


def _unpickled(cls, fields: dict):
    x64 = jax.config.jax_enable_x64

    def back(v):
        if not isinstance(v, _HostArray):
            return v
        return v.value if v.value.dtype == np.float64 and not x64 else jnp.asarray(v.value)

    return cls(**{name: back(v) for name, v in fields.items()})


@dataclasses.dataclass(frozen=True)
class Model(HostPickled):
    """A leveraged k-NN rule H_c(x) = Σ_{j∈NN_k(x)} α_jc y_jc.

    Attributes:
      alpha: (m, C) leveraging coefficients, columns in ``classes`` order.
      X: (m, d) training points.
      Y: (m, C) training labels in {−1, +1}.
      trace: (T,) total surrogate risk after each step, if fit(trace=True).
      classes: tuple of the C class labels (sorted), NumPy scalars of y's
        dtype, so that :func:`predict` answers in it; multilabel: 0..C−1.
      k: neighbours used.
      loss: the :class:`~jaxnn.losses.Loss` (its ``posterior`` is the link).
      algorithm: the algorithm object (``GNNB``, ``UNN``, ``UNNFast``, ``N3``).
      multilabel: True if fit on an indicator matrix.
      posterior_mix: λ ∈ [0, 1] of :func:`predict_proba`,
        p̂ = (1 − λ)·link(H) + λ·(k-NN vote fractions); chosen by ``fit``.
      rounds: boosting steps per class that were run.
      origin: None, or (d,) — the point subtracted (in float64) from float64
        training points far from 0 before their cast to float32, so that
        they keep their digits (:data:`jaxnn._src.points.CENTRE_RATIO`);
        ``X`` is stored shifted, and query points are shifted alike.
    """

    alpha: jax.Array
    X: jax.Array
    Y: jax.Array
    trace: Optional[jax.Array]
    classes: tuple
    k: int
    loss: Any
    algorithm: Any
    multilabel: bool
    posterior_mix: float = 0.0
    rounds: int = 0
    origin: Optional[jax.Array] = None

    @property
    def n_classes(self) -> int:
        return len(self.classes)


jax.tree_util.register_dataclass(
    Model,
    data_fields=["alpha", "X", "Y", "trace", "origin"],
    meta_fields=["classes", "k", "loss", "algorithm", "multilabel", "posterior_mix", "rounds"],
)


def check_model(model) -> Model:
    if not isinstance(model, Model):
        raise TypeError(f"expected a jaxnn Model (from jaxnn.fit), got {type(model).__name__}")
    return without_float64(model)


def without_float64(model):
    """``model`` itself — or, when it holds float64 arrays (fit under
    ``jax_enable_x64``) and x64 is off now, a copy in float32, with a warning.

    Fitting float64 data inside ``with jax.enable_x64(True):`` and predicting
    after it would otherwise ask for float64 in every operation, which JAX
    truncates to float32 with a warning each (a dozen a call).  The cast keeps
    the points apart: features far from 0 were centred at fit time, under x64
    too (``model.origin``, :func:`points.float32_origin`, a float32 number)."""
    if jax.config.jax_enable_x64:
        return model
    wide = [a for a in jax.tree_util.tree_leaves(model) if getattr(a, "dtype", None) == jnp.float64]
    if not wide or any(isinstance(a, jax.core.Tracer) for a in wide):
        return model
    warnings.warn(f"this {type(model).__name__} was fit in float64 (under jax_enable_x64), which is off now: it "
                  "predicts in float32; predict inside `with jax.enable_x64(True):` for float64", UserWarning, stacklevel=4)
    return jax.tree_util.tree_map(lambda a: a.astype(jnp.float32) if getattr(a, "dtype", None) == jnp.float64 else a, model)
