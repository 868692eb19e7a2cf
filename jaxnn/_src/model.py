"""The fitted model: :class:`Model`, a leveraged k-NN rule as an immutable pytree.

A :class:`Model` holds arrays (α, the training points and their ±1 labels)
plus static metadata (classes, k, loss, algorithm).  :func:`jaxnn.fit`
(:mod:`jaxnn._src.fitting`) makes one and :mod:`jaxnn._src.prediction` uses
it.  Pickles of models name this module (``Model``, ``_unpickled``,
``_HostArray``): those names stay here.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import algorithms, losses

__all__ = ["Model", "HostPickled", "check_model", "validate_model", "check_alpha_values", "without_float64"]


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
      origin: None, (d,) or (2, d) float32 parts whose sum is the point subtracted (in float64) from float64
        training points far from 0 before their cast to float32, so that
        they keep their digits (:data:`jaxnn._src.points.CENTRE_RATIO`);
        ``X`` is stored shifted, and query points are shifted alike.
      posterior_temperature: T ≥ 0; T > 0 (``fit(posterior="auto")``, fit
        on held-out data) makes :func:`predict_proba` the calibrated
        p̂ = (1 − ε)·softmax(H/T + w·log(κ + δ)) + ε/C (predict's class's
        logit raised to the row's largest), and ``posterior_mix`` unused; 0
        keeps the λ mix above (docs/guide/posteriors.md).
      posterior_weight: w ≥ 0 of that kernel term, κ the distance-weighted
        vote of the k neighbours (fit on held-out data for three or more
        classes; 0: none, and always for binary and multilabel models).
      posterior_bandwidth: b ≥ 0, the relative bandwidth of κ's weights
        (:func:`jaxnn._src.calibration.kernel_weights`); > 0 where w > 0.
      leverage_shrinkage: s ∈ [0, 1] by which ``alpha`` was shrunk toward a
        common leverage, α = (1 − s)·α_boost + s·ā (``fit(shrinkage="auto")``,
        the default, chooses s on held-out data,
        :func:`jaxnn._src.leverage.shrunk_leverage`); 0: ``alpha`` is boosting's.
      transform: None, or the (d_in, d) map A of a learned metric
        (``fit(metric=...)``, :mod:`jaxnn._src.learned_metric`): ``X`` holds the
        training points mapped, x ↦ xA, and query points of d_in features are
        mapped alike before the search.
      search_k: 0, or a k ≥ ``k`` that the model's searches are sized for
        (``fit(k="auto")`` on at most 2048 points: the largest candidate k,
        :func:`jaxnn._src.shared_sizes.candidates_k`): they find the
        neighbours of a search for ``search_k`` and sum the first k, so
        that models of any candidate k share one compiled search and rule.
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
    posterior_temperature: float = 0.0
    leverage_shrinkage: float = 0.0
    transform: Optional[jax.Array] = None
    posterior_weight: float = 0.0
    posterior_bandwidth: float = 0.0
    search_k: int = 0

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def searched_k(self) -> int:
        """The k its searches find neighbours for: max(k, ``search_k``)."""
        return max(int(self.k), int(self.search_k))

    @property
    def n_features(self) -> int:
        """Features of the points the model takes (d_in: before its ``transform``)."""
        return int(self.X.shape[1] if self.transform is None else self.transform.shape[0])


jax.tree_util.register_dataclass(
    Model,
    data_fields=["alpha", "X", "Y", "trace", "origin", "transform"],
    meta_fields=["classes", "k", "loss", "algorithm", "multilabel", "posterior_mix", "rounds", "posterior_temperature",
                 "leverage_shrinkage", "posterior_weight", "posterior_bandwidth", "search_k"],
)


def takes_kernel_term(multilabel: bool, n_classes: int) -> bool:
    """Whether a model may have a posterior kernel term (``posterior_weight``
    > 0): single-label with three or more classes — a binary posterior must
    rank like ``decision_function`` (H₁ − H₀), and a multilabel one is 1/2
    exactly where H_c = 0."""
    return not multilabel and n_classes >= 3


def check_model(model) -> Model:
    """``model`` checked (:func:`validate_model`) as it enters prediction, as
    :func:`without_float64` gives it."""
    if not isinstance(model, Model):
        raise TypeError(f"expected a jaxnn Model (from jaxnn.fit), got {type(model).__name__}")
    validate_model(model)
    check_alpha_values(model)
    return without_float64(model)


def check_alpha_values(model) -> None:
    """A ValueError naming α and the count of its bad entries unless every
    entry of ``model.alpha`` is finite: a NaN in α (a model edited with
    ``dataclasses.replace`` or a file edited by hand) gave NaN scores that
    predict turned into class 0 and predict_proba into NaN rows, silently.

    One pass over α on the host; a JAX α (immutable) that passed is
    remembered on the model object, so that each model is checked once,
    not at every prediction (a NumPy α, which may be changed in place, is
    checked every time).  A traced α (a model passed into ``jax.jit``) has
    no values to check."""
    alpha = model.alpha
    if isinstance(alpha, jax.core.Tracer) or model.__dict__.get("_finite_alpha") is alpha:
        return
    values = np.asarray(alpha)
    bad = values.size - int(np.count_nonzero(np.isfinite(values)))
    if bad:
        raise ValueError(f"model.alpha holds {bad} NaN or infinite entries (of {values.size}): the leveraging "
                         "coefficients must be finite; refit the model, or restore alpha from an unedited copy")
    if isinstance(alpha, jax.Array):
        object.__setattr__(model, "_finite_alpha", alpha)  # not a field: no pytree leaf, not pickled or compared


def validate_model(model: Model) -> None:
    """A TypeError or ValueError naming the field, unless ``model``'s fields
    agree with each other: α (m, C), X (m, d) and Y (m, C) numeric arrays,
    trace None or 1-D, origin None or (d,), transform None or (d_in, d), C class labels (at least 2 for a
    single-label model), 1 ≤ k ≤ m, 0 ≤ search_k ≤ m, posterior_mix and leverage_shrinkage
    finite numbers in [0, 1], posterior_temperature a finite number ≥ 0, rounds ≥ 0, multilabel a bool, loss a :class:`~jaxnn.losses.Loss`
    and algorithm an algorithm object (or None: :func:`jaxnn.knn_subsample`'s
    vote-only models).

    Shapes and scalars only — no pass over the arrays' values — so it is
    cheap enough for every prediction, and works on traced leaves (a model
    passed into ``jax.jit``).  A :class:`Model` built by hand, unpickled,
    rebuilt from pytree leaves or edited with ``dataclasses.replace`` is not
    checked when made (JAX rebuilds models from placeholder leaves while it
    traces): prediction and :func:`jaxnn.load` check it here.  Unchecked, α
    cut to 7 rows predicted without an error (gathers clamp out-of-range
    indices), posterior_mix = 2 gave probabilities −0.16 and 1.16, and too
    few classes an IndexError."""
    alpha, X, Y = (_array_field(model, name, ndim=2) for name in ("alpha", "X", "Y"))
    m, d = X.shape
    if m < 1 or d < 1:
        raise ValueError(f"model.X must hold at least one training point of at least one feature, got shape {X.shape}")
    if alpha.shape[0] != m:
        raise ValueError(f"model.alpha has shape {alpha.shape} but model.X has {m} rows: alpha must be (m, C) "
                         f"with m = {m} training points")
    C = alpha.shape[1]
    if C < 1:
        raise ValueError(f"model.alpha has shape {alpha.shape}: it needs at least one column (class)")
    if Y.shape != alpha.shape:
        raise ValueError(f"model.Y has shape {Y.shape} but model.alpha has {alpha.shape}: both must be (m, C)")
    _array_field(model, "trace", ndim=1, optional=True)
    origin = model.origin
    origin = _array_field(model, "origin", ndim=2 if getattr(origin, "ndim", 1) == 2 else 1, optional=True)
    if origin is not None and origin.shape not in ((d,), (2, d)):
        raise ValueError(f"model.origin has shape {origin.shape}: it must be None, (d,) = ({d},) — one value per "
                         f"feature of model.X — or (2, d), float32 parts whose sum is the origin")
    transform = _array_field(model, "transform", ndim=2, optional=True)
    if transform is not None and (transform.shape[1] != d or transform.shape[0] < 1):
        raise ValueError(f"model.transform has shape {transform.shape}: it must be (d_in, d) with d = {d}, the "
                         "features of model.X (the mapped training points)")
    multilabel = model.multilabel
    if not isinstance(multilabel, (bool, np.bool_)):
        raise TypeError(f"model.multilabel must be a bool, got {type(multilabel).__name__} {multilabel!r}")
    classes = model.classes
    if isinstance(classes, (str, bytes)) or not hasattr(classes, "__len__"):
        raise TypeError(f"model.classes must be a tuple of class labels, got {type(classes).__name__}")
    if len(classes) != C:
        raise ValueError(f"model.classes holds {len(classes)} labels but model.alpha has {C} columns: "
                         "one label per column is needed")
    if not multilabel and C < 2:
        raise ValueError(f"model.classes holds {C} label: a single-label model needs at least 2 classes")
    k = model.k
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise TypeError(f"model.k must be an integer, got {type(k).__name__} {k!r}")
    if not 1 <= k <= m:
        raise ValueError(f"model.k must lie in [1, m] = [1, {m}] (m training points), got {k}")
    search_k = getattr(model, "search_k", 0)
    if isinstance(search_k, (bool, np.bool_)) or not isinstance(search_k, numbers.Integral):
        raise TypeError(f"model.search_k must be an integer, got {type(search_k).__name__} {search_k!r}")
    if not 0 <= search_k <= m:
        raise ValueError(f"model.search_k must be 0 or lie in [1, m] = [1, {m}] (m training points), got {search_k}")
    for name in ("posterior_mix", "leverage_shrinkage"):
        value = getattr(model, name, 0.0)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"model.{name} must be a real number in [0, 1], got {type(value).__name__} {value!r}")
        if not (math.isfinite(float(value)) and 0.0 <= float(value) <= 1.0):
            raise ValueError(f"model.{name} must be finite and lie in [0, 1], got {value!r}")
    for name in ("posterior_temperature", "posterior_weight", "posterior_bandwidth"):
        value = getattr(model, name, 0.0)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"model.{name} must be a real number >= 0, got {type(value).__name__} {value!r}")
        if not (math.isfinite(float(value)) and float(value) >= 0.0):
            raise ValueError(f"model.{name} must be finite and >= 0, got {value!r}")
    if float(getattr(model, "posterior_weight", 0.0)) > 0.0:
        if not takes_kernel_term(multilabel, C):
            raise ValueError(f"model.posterior_weight must be 0 for a {'multilabel' if multilabel else 'binary'} "
                             f"model (the kernel term is for single-label models of 3 or more classes), "
                             f"got {model.posterior_weight!r}")
        if not float(getattr(model, "posterior_bandwidth", 0.0)) > 0.0:
            raise ValueError(f"model.posterior_bandwidth must be > 0 where model.posterior_weight > 0, "
                             f"got {getattr(model, 'posterior_bandwidth', 0.0)!r}")
    rounds = model.rounds
    if isinstance(rounds, (bool, np.bool_)) or not isinstance(rounds, numbers.Integral):
        raise TypeError(f"model.rounds must be an integer, got {type(rounds).__name__} {rounds!r}")
    if rounds < 0:
        raise ValueError(f"model.rounds must be >= 0, got {rounds}")
    if not isinstance(model.loss, losses.Loss):
        raise TypeError(f"model.loss must be a jaxnn.losses.Loss (jaxnn.losses.get(name)), "
                        f"got {type(model.loss).__name__} {model.loss!r}")
    if model.algorithm is not None and not isinstance(model.algorithm, (algorithms.GNNB, algorithms.UNN, algorithms.N3)):
        raise TypeError(f"model.algorithm must be an algorithm object (jaxnn.gnnb(), jaxnn.unn(), jaxnn.unn_fast(), "
                        f"jaxnn.n3()) or None, got {type(model.algorithm).__name__} {model.algorithm!r}")


def _array_field(model, name: str, *, ndim: int, optional: bool = False):
    """``model.<name>`` if it is a numeric array (NumPy, JAX or traced) of
    ``ndim`` dimensions (or None, when ``optional``), else a TypeError or
    ValueError naming the field."""
    value = getattr(model, name)
    if value is None and optional:
        return None
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if not isinstance(shape, tuple) or dtype is None:
        what = "None or an array" if optional else "an array"
        raise TypeError(f"model.{name} must be {what}, got {type(value).__name__}")
    if not (jnp.issubdtype(dtype, jnp.number) or dtype == np.bool_):
        raise TypeError(f"model.{name} must hold numbers, got dtype {dtype}")
    if len(shape) != ndim:
        raise ValueError(f"model.{name} must be {ndim}-D, got shape {shape}")
    return value


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
