"""A scikit-learn estimator over the functional API (a face; docs/design.md).

:class:`BoostedKNNClassifier` is :func:`jaxnn.fit` plus :func:`jaxnn.predict`,
:func:`jaxnn.predict_proba` and :func:`jaxnn.decision_function` behind
scikit-learn's estimator interface, so a leveraged k-NN rule drops into
``Pipeline``, ``GridSearchCV``, ``cross_val_score`` and the rest.  Its
parameters are ``fit``'s keywords with the same names and meaning, and the
same defaults but one (``posterior="link"``, see the class); the fitted
:class:`jaxnn.Model` is ``model_``.

scikit-learn is an optional dependency (the ``sklearn`` extra): nothing in
the core imports this module, and ``import jaxnn`` does not import it.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import jax
import numpy as np

try:
    from scipy.sparse import issparse  # a scikit-learn dependency
    from sklearn.base import BaseEstimator, ClassifierMixin, clone
    from sklearn.utils.multiclass import check_classification_targets, type_of_target
    from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data
except ImportError as err:  # scikit-learn missing, or older than 1.6 (no public validate_data)
    raise ImportError(
        f"jaxnn.sklearn needs scikit-learn >= 1.6 ({err}); install it with: pip install 'jaxnn[sklearn]'"
    ) from err

from jaxnn._src.fitting import fit
from jaxnn._src.prediction import host_proba, host_scores

__all__ = ["BoostedKNNClassifier"]

_FLOATS = (np.float64, np.float32)


class _PickledDevice(NamedTuple):
    """A JAX device named by platform and id: what a pickled estimator's
    ``devices`` list holds (``jax.Device`` objects do not pickle)."""

    platform: str
    id: int


def _is_device_list(devices) -> bool:
    return isinstance(devices, (list, tuple)) and any(isinstance(d, (jax.Device, _PickledDevice)) for d in devices)


def _device_named(ref: _PickledDevice):
    """This process's device with ref's platform and id, else None."""
    try:
        available = jax.devices(ref.platform)
    except RuntimeError:  # no such backend here (a GPU list unpickled on a CPU-only machine)
        return None
    return next((d for d in available if d.id == ref.id), None)


class BoostedKNNClassifier(ClassifierMixin, BaseEstimator):
    """Leveraged k-NN classifier, H_c(x) = Σ_{j∈NN_k(x)} α_jc y_jc, with α
    learned by boosting (UNN, GNNB/GNNB*, N³ — papers 000–003).

    Parameters are those of :func:`jaxnn.fit` (see its docstring), with the
    same defaults except ``posterior``:

    Args:
      k: neighbours, 1 ≤ k < n_samples, or ``"auto"``.
      loss: a loss name (:func:`jaxnn.losses.names`), a
        :class:`jaxnn.losses.Loss` or ``"auto"``.
      algorithm: ``"gnnb"``, ``"unn"``, ``"unn_fast"``, ``"n3"`` or an
        algorithm object (``jaxnn.gnnb(...)``…).
      rounds: boosting steps per class (None: one pass, n_samples steps) or
        ``"auto"``.
      chooser: ``"auto"``, ``"lazy"``, ``"random"``, ``"colored"`` or
        ``"greedy"``.
      epsilon: GNNB's ε ∈ (0, 1).
      seed: seed of the random chooser, of nndescent and of the held-out
        splits of ``"auto"`` choices.
      graph_method: ``"exact"``, ``"nndescent"`` or ``"approx"``.
      posterior: ``"link"`` (default here), ``"auto"`` or ``"votes"`` — how
        :meth:`predict_proba` estimates posteriors.  scikit-learn expects the
        argmax of ``predict_proba`` to be ``predict`` and
        ``decision_function`` to rank like it; both hold for the link
        posteriors link(H_c) (up to ties where two classes' posteriors
        saturate at 1 in float32), which is why this default differs from
        ``fit``'s ``"auto"`` (which may mix in the k-NN vote fractions: often
        better calibrated, but their argmax can differ from ``predict``).
      devices: None, an int, a list of devices or ``"all"`` (class axis
        sharded across them).  A device list clones as it is and pickles
        as (platform, id) pairs, found again on loading.
      trace: record the surrogate risk after every step (``trace_``).
      verbose: print fit's stages and their times to stderr (``jaxnn.fit``'s
        ``verbose``).

    Attributes:
      model_: the fitted :class:`jaxnn.Model` (use it with the functional API).
      classes_: (C,) class labels, sorted; multilabel: ``arange(C)``.
      n_features_in_: number of features seen by :meth:`fit`.
      feature_names_in_: column names, when X had string column names.
      trace_: (T,) surrogate risk after each step, when ``trace=True``.

    ``y`` is 1-D labels (binary or multiclass) or a 2-D {0, 1} or {−1, +1}
    indicator matrix with ≥ 2 columns, dense or sparse (multilabel; other
    values are refused).  :meth:`predict` is the leveraged rule, argmax_c
    H_c(x) (multilabel: H_c(x) > 0, in y's own convention).  A fitted
    estimator pickles (``joblib.dump`` too) when its loss is a catalogue
    one; a custom (from_phi / from_psi) loss clones (``GridSearchCV``) but
    does not pickle.
    """

    def __init__(
        self,
        k=10,
        loss="logistic",
        algorithm="gnnb",
        rounds=None,
        chooser="auto",
        epsilon=0.5,
        seed=0,
        graph_method="exact",
        posterior="link",
        devices=None,
        trace=False,
        verbose=False,
    ):
        self.k = k
        self.loss = loss
        self.algorithm = algorithm
        self.rounds = rounds
        self.chooser = chooser
        self.epsilon = epsilon
        self.seed = seed
        self.graph_method = graph_method
        self.posterior = posterior
        self.devices = devices
        self.trace = trace
        self.verbose = verbose

    # ``devices`` may be a list of ``jax.Device``, which neither deep-copies
    # nor pickles: clone passes the (process-wide) devices on by reference, and
    # pickling stores them as (platform, id) and finds them again on loading.

    def __sklearn_clone__(self):
        if not _is_device_list(self.devices):
            return super().__sklearn_clone__()
        bare = object.__new__(type(self))
        bare.__dict__.update(self.__dict__, devices=None)
        twin = clone(bare)
        twin.devices = type(self.devices)(self.devices)
        return twin

    def __getstate__(self):
        state = super().__getstate__()
        if _is_device_list(self.devices):  # a copy: object.__getstate__ hands back __dict__ itself
            state = dict(state)
            devices = [_PickledDevice(d.platform, d.id) if isinstance(d, jax.Device) else d for d in self.devices]
            state["devices"] = type(self.devices)(devices)
        return state

    def __setstate__(self, state):
        devices = state.get("devices")
        if _is_device_list(devices):
            found = [_device_named(d) if isinstance(d, _PickledDevice) else d for d in devices]
            missing = [f"{d.platform}:{d.id}" for d, f in zip(devices, found) if f is None]
            if missing:
                warnings.warn(
                    f"this estimator was pickled with devices {missing} that this process does not have; "
                    "predict works, but fit needs set_params(devices=...)",
                    UserWarning,
                    stacklevel=2,
                )
            state = dict(state, devices=type(devices)(d if f is None else f for d, f in zip(devices, found)))
        super().__setstate__(state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        return tags

    def fit(self, X, y, neighbors=None):
        """Fit on X (n_samples, n_features) and y; ``neighbors``: an optional
        precomputed (n_samples, k) neighbour index array (self excluded) or a
        :class:`jaxnn.Neighbors` from :func:`jaxnn.knn_graph` (its first k).
        A fit that fails leaves a previous fit whole."""
        seen = {name: getattr(self, name) for name in ("n_features_in_", "feature_names_in_") if hasattr(self, name)}
        try:
            return self._fit(X, y, neighbors)
        except Exception:
            # validate_data has already recorded the new X's features: put the fitted ones back
            for name in ("n_features_in_", "feature_names_in_"):
                if name in seen:
                    setattr(self, name, seen[name])
                elif hasattr(self, name):
                    delattr(self, name)
            raise

    def _fit(self, X, y, neighbors):
        missing = [f"{d.platform}:{d.id}" for d in self.devices if isinstance(d, _PickledDevice)] if _is_device_list(self.devices) else []
        if missing:
            raise ValueError(f"devices {missing} (from a pickled estimator) are not in this process: set_params(devices=...)")
        X, y = validate_data(self, X, y, dtype=_FLOATS, multi_output=True, ensure_min_samples=2)
        if issparse(y):  # a sparse indicator matrix (scikit-learn's multilabel tools make them)
            y = y.toarray()
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)  # DataConversionWarning, as scikit-learn's classifiers
        check_classification_targets(y)
        negative_label = 0
        if y.ndim == 2:
            values = np.unique(y)
            if type_of_target(y) != "multilabel-indicator" or not (set(values) <= {0, 1} or set(values) <= {-1, 1}):
                # scikit-learn calls any two-valued matrix an indicator: {0, 2} must not pass as 0/1
                raise ValueError(f"a 2-D y must be a multilabel indicator matrix of 0/1 or -1/+1 values, got values {values}")
            # predict answers in y's own convention: a {−1, +1} matrix gives ±1 back
            negative_label = -1 if np.any(y < 0) else 0
            y = (y > 0).astype(np.int64)
            classes = np.arange(y.shape[1])
        else:
            classes = np.unique(y)
        model = fit(
            X,
            y,
            k=self.k,
            loss=self.loss,
            algorithm=self.algorithm,
            rounds=self.rounds,
            chooser=self.chooser,
            epsilon=self.epsilon,
            neighbors=neighbors,
            seed=self.seed,
            graph_method=self.graph_method,
            trace=self.trace,
            posterior=self.posterior,
            devices=self.devices,
            verbose=self.verbose,
        )
        # set only once fit succeeded: a failed refit keeps the previous fit whole
        self.model_, self.classes_, self._negative_label = model, classes, negative_label
        if self.trace:
            self.trace_ = np.asarray(model.trace)
        elif hasattr(self, "trace_"):  # a refit without trace: no stale trace_
            del self.trace_
        return self

    def _scores(self, X) -> np.ndarray:
        """H (n, C) of the fitted rule on validated X."""
        check_is_fitted(self, "model_")
        X = validate_data(self, X, reset=False, dtype=_FLOATS)
        return host_scores(self.model_, X)

    def decision_function(self, X) -> np.ndarray:
        """H_c(x), (n, C); binary: (n,) H_1 − H_0, > 0 for ``classes_[1]``."""
        H = self._scores(X)
        if not self.model_.multilabel and H.shape[1] == 2:
            return H[:, 1] - H[:, 0]
        return H

    def predict(self, X) -> np.ndarray:
        """Labels (n,) = classes_[argmax_c H_c(x)]; multilabel: (n, C) 0/1 (±1
        when fit on a {−1, +1} matrix)."""
        H = self._scores(X)
        if self.model_.multilabel:
            return np.where(H > 0, 1, self._negative_label).astype(np.int64)
        return self.classes_[np.argmax(H, axis=1)]

    def predict_proba(self, X) -> np.ndarray:
        """Posteriors (n, C) in [0, 1], columns in ``classes_`` order (rows
        sum to 1 unless multilabel) — :func:`jaxnn.predict_proba`."""
        check_is_fitted(self, "model_")
        X = validate_data(self, X, reset=False, dtype=_FLOATS)
        P = host_proba(self.model_, X).astype(np.float64)
        if not self.model_.multilabel:  # rows normalised in float32 are off by ~1e-7 in float64: log_loss warned
            P /= P.sum(axis=1, keepdims=True)
        return P

    def predict_log_proba(self, X) -> np.ndarray:
        """log of :meth:`predict_proba` (−inf where a posterior is 0)."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))
