"""scikit-learn estimators over the functional API (a face; docs/design.md).

:class:`BoostedKNNClassifier` is :func:`jaxnn.fit` plus :func:`jaxnn.predict`,
:func:`jaxnn.predict_proba` and :func:`jaxnn.decision_function` behind
scikit-learn's estimator interface, so a leveraged k-NN rule drops into
``Pipeline``, ``GridSearchCV``, ``cross_val_score`` and the rest.  Its
parameters are ``fit``'s keywords with the same names and meaning, and the
same defaults but one (``k``, see the class); the fitted
:class:`jaxnn.Model` is ``model_``.  :class:`ULSClassifier`,
:class:`UDTClassifier` and :class:`OLSClassifier` are paper 004's family
(:func:`jaxnn.uls`, :func:`jaxnn.udt`, :func:`jaxnn.ols`) alike.

scikit-learn is an optional dependency (the ``sklearn`` extra): nothing in
the core imports this module, and ``import jaxnn`` does not import it.
"""

from __future__ import annotations

import numbers
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
from jaxnn._src.model import Model
from jaxnn._src.ols import ols, ols_init, ols_update
from jaxnn._src.prediction import family_rule, host_rule
from jaxnn._src.udt import udt
from jaxnn._src.uls import uls

__all__ = ["BoostedKNNClassifier", "ULSClassifier", "UDTClassifier", "OLSClassifier", "EXPECTED_FAILED_CHECKS",
           "ULS_EXPECTED_FAILED_CHECKS", "PROBA_FLOOR"]

_FLOATS = (np.float64, np.float32)

#: the estimator's k when ``k=None`` (its default), as :func:`jaxnn.fit`'s default k,
#: on training sets larger than it
DEFAULT_K = 10


#: the scikit-learn estimator checks a nearest-neighbour rule cannot pass, with
#: the reason: pass it as ``check_estimator(..., expected_failed_checks=...)``
#: or ``parametrize_with_checks(..., expected_failed_checks=lambda est: ...)``
EXPECTED_FAILED_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data": (
        "repeating an example is not weighing it twice: the copies become each other's nearest neighbours, "
        "which changes the graph the rule is boosted and predicts on"),
}


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
    same defaults except ``k``:

    Args:
      k: neighbours, 1 ≤ k < n_samples, ``"auto"``, or None (default):
        :data:`DEFAULT_K` = 10 (``fit``'s default), or n_samples − 1 on
        training sets of 10 points or fewer, so that the default estimator
        fits any data of at least 2 points (scikit-learn's checks fit 10).
        A k you give is used as given: one of n_samples or more is refused
        (ValueError) rather than quietly changed.  ``k_`` is the k used.
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
      posterior: ``"auto"`` (default, as ``fit``'s), ``"link"`` or
        ``"votes"`` — how :meth:`predict_proba` estimates posteriors.
        scikit-learn expects ``predict``, the argmax of ``predict_proba``
        and that of ``decision_function`` to be one label, and
        ``predict_proba`` to rank like ``decision_function``; the estimator
        holds to it for every setting.  ``"auto"`` (softmax(H/T) calibrated
        on held-out data — with a kernel term for three or more classes,
        predict's class kept on top — never exactly 0 or 1) and ``"link"`` (the papers'
        estimator, exactly 0 or 1 where it saturates) have argmax H, and for
        two classes are increasing in H:
        ``predict`` is :func:`jaxnn.predict` (argmax H, exact ties by the
        k-NN vote, then the nearest neighbour), and where two classes'
        posteriors are equal (saturated at 1 in float32) the predicted one
        is kept one float step above the other.  ``"votes"`` gives the k-NN
        vote fractions, which need not rank like H: with it the estimator is
        the k-NN vote rule — ``predict`` the class with the most of the k
        neighbours (ties by H, then the nearest neighbour) and
        ``decision_function`` the vote fractions.
      devices: None, an int, a list of devices or ``"all"`` (class axis
        sharded across them).  A device list clones as it is and pickles
        as (platform, id) pairs, found again on loading.
      trace: record the surrogate risk after every step (``trace_``).
      verbose: print fit's stages and their times to stderr (``jaxnn.fit``'s
        ``verbose``).
      class_weight: None (default), ``"balanced"`` (each class weighs
        n_samples / (n_classes · its count), scikit-learn's rule) or a dict
        {label: weight}: multiplies each example's sample weight by its
        class's (single-label y only).
      shrinkage: ``"auto"`` (default) or None: the leverages shrunk toward
        one common value as held-out data say, or boosting's own
        (``jaxnn.fit``'s ``shrinkage``) — shrunk, accuracy stays at plain
        k-NN's or above at small k.
      metric: None (default: the Euclidean distance of the features),
        ``"nca"`` (a metric learned by neighbourhood components analysis
        first) or a (n_features, r) map A (``jaxnn.fit``'s ``metric``).

    Attributes:
      model_: the fitted :class:`jaxnn.Model` (use it with the functional API).
      k_: the neighbours the fitted rule sums (``model_.k``): ``k``, the
        default's (see ``k``) or the one ``k="auto"`` chose.
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
        k=None,
        loss="logistic",
        algorithm="gnnb",
        rounds=None,
        chooser="auto",
        epsilon=0.5,
        seed=0,
        graph_method="exact",
        posterior="auto",
        devices=None,
        trace=False,
        verbose=False,
        class_weight=None,
        shrinkage="auto",
        metric=None,
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
        self.class_weight = class_weight
        self.shrinkage = shrinkage
        self.metric = metric

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
            state = dict(state, devices=_devices_found(devices, "pickled", stacklevel=3))
        super().__setstate__(state)

    # saved in jaxnn's model format (jaxnn.save / jaxnn.load): no pickle, no code run on loading

    def save(self, path) -> None:
        """Write this estimator to ``path`` (a str or os.PathLike; ``.jaxnn``
        by convention) in :func:`jaxnn.save`'s format, which never runs code
        when read: its parameters as JSON and, once fitted, the fitted
        :class:`jaxnn.Model` and attributes.  :meth:`load` reads it back.
        Its loss must be a catalogue one (a ValueError otherwise, as for
        :func:`jaxnn.save`); a device list is stored as (platform, id) pairs,
        as pickling stores it."""
        from jaxnn._src import persist

        params = {name: _param_meta(name, value) for name, value in self.get_params(deep=False).items()}
        fitted = hasattr(self, "model_")
        meta = {"params": params, "fitted": fitted}
        arrays = {}
        if fitted:
            arrays["estimator_classes"], classes_kind = persist.encode_labels(self.classes_, "classes_")
            meta.update(classes=classes_kind, negative_label=int(self._negative_label),
                        n_features_in=int(self.n_features_in_))
            if hasattr(self, "feature_names_in_"):
                arrays["estimator_feature_names"], meta["feature_names"] = persist.encode_labels(
                    self.feature_names_in_, "feature_names_in_")
        persist.write_file(path, type(self).__name__, self.model_ if fitted else None, extra_meta={"estimator": meta},
                           extra_arrays=arrays)

    @classmethod
    def load(cls, path) -> "BoostedKNNClassifier":
        """The estimator that :meth:`save` wrote to ``path``, fitted as it was
        (its predictions bitwise the same).  No code is run; the same errors
        as :func:`jaxnn.load` (FileNotFoundError, :class:`jaxnn.ModelFileError`
        — also for a file that holds a bare model: load that with
        :func:`jaxnn.load`).  Saved devices this process lacks give a warning,
        as unpickling does."""
        from jaxnn._src import persist

        meta, model, arrays = persist.read_file(path, kinds=(cls.__name__,))
        try:
            est = _estimator_of(cls, meta.get("estimator"), model, arrays)
        except (TypeError, ValueError, KeyError, IndexError) as err:
            raise persist.ModelFileError(f"{persist.fspath(path)!r} is corrupted: its estimator cannot be rebuilt "
                                         f"({type(err).__name__}: {err})") from err
        if _is_device_list(est.devices):
            est.devices = _devices_found(est.devices, "saved", stacklevel=3)
        return est

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        return tags

    def fit(self, X, y, neighbors=None, sample_weight=None):
        """Fit on X (n_samples, n_features) and y; ``neighbors``: an optional
        precomputed (n_samples, k) neighbour index array (self excluded) or a
        :class:`jaxnn.Neighbors` from :func:`jaxnn.knn_graph` (its first k);
        ``sample_weight``: optional (n_samples,) non-negative weights of the
        examples' terms of the surrogate risk (:func:`jaxnn.fit`'s), times
        ``class_weight``'s.  Repeating an example is not weighing it twice:
        its copies become each other's neighbours.
        A fit that fails leaves a previous fit whole."""
        return _keeping_features(self, lambda: self._fit(X, y, neighbors, sample_weight))

    def _fit(self, X, y, neighbors, sample_weight):
        missing = [f"{d.platform}:{d.id}" for d in self.devices if isinstance(d, _PickledDevice)] if _is_device_list(self.devices) else []
        if missing:
            raise ValueError(f"devices {missing} (from a pickled estimator) are not in this process: set_params(devices=...)")
        X, y = validate_data(self, X, y, dtype=_FLOATS, multi_output=True, ensure_min_samples=2)
        y, classes, negative_label = _targets(y)
        sample_weight = _with_class_weight(self.class_weight, y, sample_weight)
        model = fit(
            X,
            y,
            k=_k_for(self.k, X.shape[0]),
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
            sample_weight=sample_weight,
            shrinkage=self.shrinkage,
            metric=self.metric,
        )
        # set only once fit succeeded: a failed refit keeps the previous fit whole
        self.model_, self.classes_, self._negative_label = model, classes, negative_label
        if self.trace:
            self.trace_ = np.asarray(model.trace)
        elif hasattr(self, "trace_"):  # a refit without trace: no stale trace_
            del self.trace_
        return self

    @property
    def k_(self) -> int:
        """The neighbours the fitted rule sums: ``k``, the default's
        (min(10, n_samples − 1)) or the one ``k="auto"`` chose."""
        check_is_fitted(self, "model_")
        return int(self.model_.k)

    def _rule(self, X, proba: bool = False):
        """(scores S (n, C) float64, predicted class indices (n,) — None for
        a multilabel model[, :func:`jaxnn.predict_proba` with ``proba``]) on
        validated X, from one neighbour search: S is H and the class
        :func:`jaxnn.predict`'s, or for a model fit with ``posterior="votes"``
        the vote fractions and the class of most votes (ties by H, then the
        nearest neighbour)."""
        check_is_fitted(self, "model_")
        X = validate_data(self, X, reset=False, dtype=_FLOATS)
        H, votes, first, top, *P = host_rule(self.model_, X, proba=proba)
        if self.model_.multilabel:
            S, top = H.astype(np.float64), None
        elif _is_votes(self.model_):
            S, top = votes.astype(np.float64), _lexicographic_argmax(votes, H, first)
        else:
            S = H.astype(np.float64)
        return (S, top, *P)

    def decision_function(self, X) -> np.ndarray:
        """H_c(x), (n, C); binary: (n,) H_1 − H_0, > 0 for ``classes_[1]``.
        Where classes tie exactly, the predicted one is one float step above
        the others, so that the argmax (binary: the sign) is :meth:`predict`'s
        label.  A model fit with ``posterior="votes"``: the vote fractions
        instead of H (see the class)."""
        return _decision_values(*self._rule(X))

    def predict(self, X) -> np.ndarray:
        """Labels (n,) — :func:`jaxnn.predict`'s: argmax_c H_c(x), exact ties
        by the k-NN vote, then the nearest neighbour (a model fit with
        ``posterior="votes"``: the k-NN vote, ties by H, then the nearest
        neighbour); multilabel: (n, C) 0/1 (±1 when fit on a {−1, +1}
        matrix), H_c(x) > 0."""
        S, top = self._rule(X)
        if top is None:
            return np.where(S > 0, 1, self._negative_label).astype(np.int64)
        return self.classes_[top]

    def predict_proba(self, X) -> np.ndarray:
        """Posteriors (n, C) in [0, 1], columns in ``classes_`` order (rows
        sum to 1 unless multilabel) — :func:`jaxnn.predict_proba`, in float64;
        where classes' posteriors are equal, those other than :meth:`predict`'s
        are one float step lower, so that its argmax is :meth:`predict`'s."""
        _, top, P = self._rule(X, proba=True)
        P = P.astype(np.float64)
        if top is not None:  # rows normalised in float32 are off by ~1e-7 in float64: log_loss warned
            P /= P.sum(axis=1, keepdims=True)
            P = _others_below(P, top)
        return P

    def predict_log_proba(self, X) -> np.ndarray:
        """log of :meth:`predict_proba` (−inf where a posterior is 0)."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))


def _keeping_features(est, fit):
    """``fit()``; where it raises, the estimator's ``n_features_in_`` and
    ``feature_names_in_`` put back as they were (``validate_data`` records
    the new X's before the fit can fail), so a failed fit leaves a previous
    one whole."""
    names = ("n_features_in_", "feature_names_in_")
    seen = {name: getattr(est, name) for name in names if hasattr(est, name)}
    try:
        return fit()
    except Exception:
        for name in names:
            if name in seen:
                setattr(est, name, seen[name])
            elif hasattr(est, name):
                delattr(est, name)
        raise


def _targets(y) -> tuple:
    """(y as jaxnn takes it, ``classes_``, the multilabel negative label) of
    a validated y: 1-D labels, or a 2-D 0/1 or −1/+1 indicator matrix (dense
    or sparse) made 0/1, whose predictions answer in y's own convention."""
    if issparse(y):  # a sparse indicator matrix (scikit-learn's multilabel tools make them)
        y = y.toarray()
    if y.ndim == 2 and y.shape[1] == 1:
        y = column_or_1d(y, warn=True)  # DataConversionWarning, as scikit-learn's classifiers
    check_classification_targets(y)
    if y.ndim == 2:
        values = np.unique(y)
        if type_of_target(y) != "multilabel-indicator" or not (set(values) <= {0, 1} or set(values) <= {-1, 1}):
            # scikit-learn calls any two-valued matrix an indicator: {0, 2} must not pass as 0/1
            raise ValueError(f"a 2-D y must be a multilabel indicator matrix of 0/1 or -1/+1 values, got values {values}")
        # predict answers in y's own convention: a {−1, +1} matrix gives ±1 back
        return (y > 0).astype(np.int64), np.arange(y.shape[1]), -1 if np.any(y < 0) else 0
    return y, np.unique(y), 0


def _with_class_weight(class_weight, y, sample_weight):
    """``sample_weight`` (None or array-like, checked by :func:`jaxnn.fit`)
    times the weight ``class_weight`` gives each example's class: None (no
    change), ``"balanced"`` (n_samples / (n_classes · count)) or a dict
    {label: weight}, labels not in it weighing 1 (scikit-learn's rules)."""
    if class_weight is None:
        return sample_weight
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"class_weight must be None, 'balanced' or a dict {{label: weight}}, got {class_weight!r}")
    elif not isinstance(class_weight, dict):
        raise TypeError(f"class_weight must be None, 'balanced' or a dict {{label: weight}}, "
                        f"got {type(class_weight).__name__}")
    if y.ndim != 1:
        raise ValueError("class_weight applies to single-label y; weigh a multilabel fit's examples with sample_weight")
    from sklearn.utils.class_weight import compute_sample_weight

    if isinstance(class_weight, dict):
        for label, weight in class_weight.items():
            if isinstance(weight, (bool, np.bool_)) or not isinstance(weight, numbers.Real) or not weight >= 0:
                raise ValueError(f"class_weight[{label!r}] must be a number >= 0, got {weight!r}")
        unknown = [label for label in class_weight if label not in set(np.unique(y).tolist())]
        if unknown:
            raise ValueError(f"class_weight names labels that are not in y: {unknown}")
    per_class = compute_sample_weight(class_weight, y)
    if sample_weight is None:
        return per_class
    from jaxnn._src.inputs import sample_weights

    return sample_weights(sample_weight, y.shape[0]) * per_class


def _k_for(k, n_samples: int):
    """The ``k`` handed to :func:`jaxnn.fit` for ``n_samples`` training
    points: None (the estimator's default) is :data:`DEFAULT_K`, or
    n_samples − 1 where that is smaller; any other value as given (fit
    checks it)."""
    if k is None:
        return max(1, min(DEFAULT_K, n_samples - 1))
    return k


def _is_votes(model) -> bool:
    """Whether ``model``'s predict_proba is the plain k-NN vote fractions
    (``fit(posterior="votes")``)."""
    return float(getattr(model, "posterior_temperature", 0.0) or 0.0) == 0.0 and float(model.posterior_mix) == 1.0


def _lexicographic_argmax(primary, secondary, first) -> np.ndarray:
    """NumPy twin of :func:`jaxnn._src.prediction.tie_broken_argmax`: the
    class (n,) of largest ``primary``, exact ties by ``secondary``, then by
    the smallest ``first`` (the nearest neighbour's class)."""
    top = primary == primary.max(axis=1, keepdims=True)
    second = np.where(top, secondary, -np.inf)
    top &= second == second.max(axis=1, keepdims=True)
    return np.argmax(np.where(top, first.max() + 1 - first, -1), axis=1)


def _decision_values(S: np.ndarray, top) -> np.ndarray:
    """``decision_function``'s answer from scores S (n, C) and the predicted
    classes (n,) (None: multilabel, S as it is): the predicted class one
    float step above the others where they tie (:func:`_above_the_rest`);
    binary: (n,) S_1 − S_0."""
    if top is None:
        return S
    S = _above_the_rest(S, top)
    return S[:, 1] - S[:, 0] if S.shape[1] == 2 else S


def _above_the_rest(S: np.ndarray, top: np.ndarray) -> np.ndarray:
    """S (n, C) with S[i, top_i] raised to one float step above the row's
    largest value where it is not strictly the largest already (exact ties,
    or a tie-break that S does not show); other rows as they are."""
    rows = np.arange(S.shape[0])
    largest = S.max(axis=1)
    tied = (S[rows, top] < largest) | (np.sum(S == largest[:, None], axis=1) > 1)
    if tied.any():
        S = S.copy()
        S[rows[tied], top[tied]] = np.nextafter(largest[tied], np.inf)
    return S


def _others_below(P: np.ndarray, top: np.ndarray) -> np.ndarray:
    """P (n, C) with each class other than top_i whose posterior is at least
    P[i, top_i] set one float step below P[i, top_i] (rows still sum to 1
    within a few float steps)."""
    rows = np.arange(P.shape[0])
    ptop = P[rows, top][:, None]
    others = (P >= ptop) & (np.arange(P.shape[1])[None, :] != top[:, None])
    if others.any():
        P = np.where(others, np.nextafter(ptop, 0.0), P)
    return P


def _devices_found(devices, how: str, stacklevel: int):
    """A device list with its (platform, id) pairs as this process's devices;
    those it lacks stay pairs, with a warning (fit then refuses them) at
    ``stacklevel`` counted from this function."""
    found = [_device_named(d) if isinstance(d, _PickledDevice) else d for d in devices]
    missing = [f"{d.platform}:{d.id}" for d, f in zip(devices, found) if f is None]
    if missing:
        warnings.warn(
            f"this estimator was {how} with devices {missing} that this process does not have; "
            "predict works, but fit needs set_params(devices=...)",
            UserWarning,
            stacklevel=stacklevel,
        )
    return type(devices)(d if f is None else f for d, f in zip(devices, found))


def _param_meta(name: str, value):
    """An estimator parameter as JSON for :meth:`BoostedKNNClassifier.save`:
    plain values as they are, a loss or algorithm object by name and
    parameters, a device list as (platform, id) pairs."""
    from jaxnn._src import algorithms as algos
    from jaxnn._src import losses, persist

    if value is None or isinstance(value, (bool, str, np.bool_, numbers.Real)):
        return persist.json_scalar(value, f"the estimator's parameter {name}")
    if isinstance(value, losses.Loss):
        return {"loss": persist.loss_meta(value)}
    if isinstance(value, (algos.GNNB, algos.UNN, algos.N3)):
        return {"algorithm": persist.algorithm_meta(value)}
    if name == "class_weight" and isinstance(value, dict):
        return {"class_weight": [[persist.json_scalar(label, "class_weight label"), float(weight)]
                                 for label, weight in value.items()]}
    if _is_device_list(value) or (isinstance(value, (list, tuple)) and not value):
        pairs = [[d.platform, int(d.id)] for d in value]
        return {"devices": pairs, "tuple": isinstance(value, tuple)}
    raise ValueError(f"cannot save the estimator's parameter {name}={value!r}: a jaxnn model file stores numbers, "
                     "strings, catalogue losses, jaxnn's algorithms and device lists")


def _param_back(value):
    """The parameter that :func:`_param_meta` wrote."""
    from jaxnn._src import persist

    if not isinstance(value, dict):
        if isinstance(value, list):
            raise ValueError(f"a parameter is the list {value!r}")
        return value
    if set(value) == {"loss"}:
        return persist.loss_from_meta(value["loss"])
    if set(value) == {"algorithm"}:
        return persist.algorithm_from_meta(value["algorithm"])
    if set(value) == {"class_weight"}:
        return {label: weight for label, weight in value["class_weight"]}
    if set(value) == {"devices", "tuple"}:
        pairs = value["devices"]
        if not isinstance(pairs, list) or not all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], int) for p in pairs):
            raise ValueError(f"devices {pairs!r} are not (platform, id) pairs")
        devices = [_PickledDevice(platform, i) for platform, i in pairs]
        devices = tuple(devices) if value["tuple"] is True else devices
        return devices  # found in this process by load
    raise ValueError(f"a parameter is {value!r}")


def _estimator_of(cls, meta, model, arrays):
    """The fitted (or not) estimator of :meth:`BoostedKNNClassifier.save`'s metadata."""
    from jaxnn._src import persist

    if not isinstance(meta, dict) or not isinstance(meta.get("params"), dict):
        raise ValueError("the metadata lacks the estimator's parameters")
    params = meta["params"]
    known = set(cls._get_param_names())
    if set(params) != known:
        raise ValueError(f"the parameters {sorted(params)} are not this estimator's {sorted(known)}")
    est = cls(**{name: _param_back(value) for name, value in params.items()})
    if meta.get("fitted") is not True:
        if model is not None:
            raise ValueError("an unfitted estimator's file holds a model")
        return est
    if model is None or not isinstance(model, Model):
        raise ValueError("a fitted estimator's file holds no jaxnn Model")
    classes = persist.decode_labels(arrays["estimator_classes"], meta["classes"])
    if not isinstance(classes, np.ndarray) or classes.shape != (model.n_classes,):
        raise ValueError(f"classes_ has shape {getattr(classes, 'shape', None)} for a model of {model.n_classes} classes")
    negative_label, n_features = meta["negative_label"], meta["n_features_in"]
    if negative_label not in (0, -1) or isinstance(negative_label, bool):
        raise ValueError(f"the multilabel negative label is {negative_label!r}")
    if n_features != model.n_features or isinstance(n_features, bool):
        raise ValueError(f"n_features_in_ is {n_features!r} for a model of {model.n_features} features")
    est.model_, est.classes_, est._negative_label, est.n_features_in_ = model, classes, negative_label, n_features
    if "feature_names" in meta:
        names = persist.decode_labels(arrays["estimator_feature_names"], meta["feature_names"])
        if not isinstance(names, np.ndarray) or names.shape != (n_features,):
            raise ValueError(f"feature_names_in_ has shape {getattr(names, 'shape', None)} for {n_features} features")
        est.feature_names_in_ = names
    if est.trace:
        if model.trace is None:
            raise ValueError("the estimator was fit with trace=True but its model holds no trace")
        est.trace_ = np.asarray(model.trace)
    return est


# --------------------------------------------------------------------------
# paper 004's family: ULS, UDT, OLS
# --------------------------------------------------------------------------


#: the least (and 1 − the largest) multilabel probability of a family estimator
PROBA_FLOOR = 1e-12

#: the checks ULSClassifier cannot pass, with the reason (as EXPECTED_FAILED_CHECKS)
ULS_EXPECTED_FAILED_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data": (
        "the rules' candidate thresholds are quantiles of the training points and rounds=None holds some out: "
        "repeating a point moves them, weighing it does not"),
}


class _FamilyClassifier(ClassifierMixin, BaseEstimator):
    """scikit-learn's face of a learner of paper 004's family: :meth:`fit`
    calls the learner (:func:`jaxnn.uls`, :func:`jaxnn.udt`,
    :func:`jaxnn.ols`) with the estimator's parameters as its keywords, and
    the predictions are :func:`jaxnn.predict`'s, :func:`jaxnn.predict_proba`'s
    and :func:`jaxnn.decision_function`'s on ``model_``."""

    #: the learner: a function (X, y, **params) → a family model
    _learner = None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        return tags

    def _validated(self, X, y):
        X, y = validate_data(self, X, y, dtype=_FLOATS, multi_output=True, ensure_min_samples=2)
        return (X, *_targets(y))

    def fit(self, X, y, **fit_params):
        """Fit on X (n_samples, n_features) and y (1-D labels or a 2-D
        indicator matrix).  A fit that fails leaves a previous fit whole."""
        return _keeping_features(self, lambda: self._fit(X, y, fit_params))

    def _fit(self, X, y, fit_params):
        X, y, classes, negative_label = self._validated(X, y)
        model = type(self)._learner(X, y, **self.get_params(deep=False), **fit_params)
        self.model_, self.classes_, self._negative_label = model, classes, negative_label
        return self

    def _scores(self, X, proba: bool = False):
        """(H (n, C) float64, predicted class indices (n,) — None for a
        multilabel model[, posteriors (n, C) float64]) on validated X."""
        check_is_fitted(self, "model_")
        X = validate_data(self, X, reset=False, dtype=_FLOATS)
        H, P = family_rule(self.model_, X, proba=proba)
        H = np.asarray(H, np.float64)
        top = None if self.model_.multilabel else np.argmax(H, axis=1)
        return (H, top) if not proba else (H, top, np.asarray(P, np.float64))

    def decision_function(self, X) -> np.ndarray:
        """The model's scores H_c(x), (n, C); binary: (n,) H_1 − H_0, > 0
        for ``classes_[1]`` (the predicted class one float step above the
        others where they tie, so that the argmax is :meth:`predict`'s)."""
        return _decision_values(*self._scores(X))

    def predict(self, X) -> np.ndarray:
        """Labels (n,): argmax_c H_c(x) (exact ties: the first class);
        multilabel: (n, C) 0/1 (±1 when fit on a {−1, +1} matrix), p̂_c > 1/2."""
        if getattr(self, "model_", None) is not None and self.model_.multilabel:
            _, _, P = self._scores(X, proba=True)
            return np.where(P > 0.5, 1, self._negative_label).astype(np.int64)
        _, top = self._scores(X)
        return self.classes_[top]

    def predict_proba(self, X) -> np.ndarray:
        """Posteriors (n, C) (:func:`jaxnn.predict_proba`, rows summing to 1
        unless multilabel), in float64; classes whose posterior equals the
        predicted one's are one float step lower.  Multilabel: each label's
        p̂ clipped to [:data:`PROBA_FLOOR`, 1 − :data:`PROBA_FLOOR`]
        (a pure leaf's 0 or 1), as scikit-learn's tools expect of the
        positive class's probability."""
        _, top, P = self._scores(X, proba=True)
        if top is None:
            return np.clip(P, PROBA_FLOOR, 1.0 - PROBA_FLOOR)
        P /= P.sum(axis=1, keepdims=True)
        return _others_below(P, top)

    def predict_log_proba(self, X) -> np.ndarray:
        """log of :meth:`predict_proba` (−inf where a posterior is 0)."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))


class ULSClassifier(_FamilyClassifier):
    """A linear separator boosted over weak hypotheses — paper 004's ULS
    (Algorithm 1) — with any strictly convex loss: :func:`jaxnn.uls` behind
    scikit-learn's interface.  Parameters are ``uls``'s keywords, with the
    same names, meanings and defaults; ``fit`` takes ``sample_weight``.

    Attributes:
      model_: the fitted ULS model (use it with the functional API).
      classes_: (C,) class labels, sorted; multilabel: ``arange(C)``.
      n_features_in_: number of features seen by :meth:`fit`.
    """

    _learner = staticmethod(uls)

    def __init__(self, weak="rules", loss="logistic", rounds=None, max_literals=2, corrective=False,
                 loss_choice=None, k=10, seed=0, verbose=False, posterior="auto"):
        self.weak = weak
        self.loss = loss
        self.rounds = rounds
        self.max_literals = max_literals
        self.corrective = corrective
        self.loss_choice = loss_choice
        self.k = k
        self.seed = seed
        self.verbose = verbose
        self.posterior = posterior

    def fit(self, X, y, sample_weight=None):
        """Fit on X and y; ``sample_weight``: optional (n_samples,) weights
        of the examples' terms of the surrogate risk."""
        return super().fit(X, y, sample_weight=sample_weight)


class UDTClassifier(_FamilyClassifier):
    """A decision tree grown top-down by a permissible φ — paper 004's UDT
    (Algorithm 3; φ_B: CART's Gini, φ_Q: C4.5's entropy, φ_M:
    Kearns–Mansour's): :func:`jaxnn.udt` behind scikit-learn's interface,
    with ``udt``'s keywords, names, meanings and defaults.

    Attributes:
      model_: the fitted UDT model.
      classes_: (C,) class labels, sorted; multilabel: ``arange(C)``.
      n_features_in_: number of features seen by :meth:`fit`.
    """

    _learner = staticmethod(udt)

    def __init__(self, loss="squared", max_depth=None, min_samples_leaf=1, max_leaf_nodes=None,
                 leaves="posterior", max_bins=None, posterior="auto", seed=0):
        self.loss = loss
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_leaf_nodes = max_leaf_nodes
        self.leaves = leaves
        self.max_bins = max_bins
        self.posterior = posterior
        self.seed = seed


class OLSClassifier(_FamilyClassifier):
    """On-line learning in a p-norm geometry — paper 004's OLS (Algorithm 2,
    eq. 93): :func:`jaxnn.ols` behind scikit-learn's interface, with
    ``ols``'s keywords, names, meanings and defaults, and :meth:`partial_fit`
    for streams (:func:`jaxnn.ols_init` / :func:`jaxnn.ols_update`).

    Attributes:
      model_: the fitted OLS model (the stream's state).
      classes_: (C,) class labels, sorted; multilabel: ``arange(C)``.
      n_features_in_: number of features seen by :meth:`fit`.
    """

    _learner = staticmethod(ols)

    def __init__(self, loss="logistic", p=None, passes=1, eta=None, seed=0, posterior="auto"):
        self.loss = loss
        self.p = p
        self.passes = passes
        self.eta = eta
        self.seed = seed
        self.posterior = posterior

    def partial_fit(self, X, y, classes=None):
        """One pass of eq. 93 over the batch (X, y), continuing the stream:
        the first call needs ``classes`` (every label the stream will hold;
        scikit-learn's convention), later calls may repeat it.  A stream
        begun here holds no example out: its posteriors are the loss's link
        (``fit`` calibrates them), and a fitted model keeps its temperature.  A batch that
        is refused leaves the estimator as it was."""
        first = not hasattr(self, "model_")
        X, y = validate_data(self, X, y, dtype=_FLOATS, reset=first, ensure_min_samples=1)
        if y.ndim != 1:
            raise ValueError("partial_fit takes 1-D labels (a multilabel stream: jaxnn.ols_update)")
        if first:
            if classes is None:
                raise ValueError("classes must be given on the first call of partial_fit: every label of the stream")
            classes = np.unique(np.asarray(classes))
            if classes.size < 2:
                raise ValueError(f"classes must hold at least 2 labels, got {classes.tolist()}")
            state = ols_init(X.shape[1], tuple(classes), loss=self.loss, p=self.p)
        else:
            if classes is not None and not np.array_equal(np.unique(np.asarray(classes)), self.classes_):
                raise ValueError(f"classes {np.unique(np.asarray(classes)).tolist()} differ from those of the first "
                                 f"call of partial_fit, {self.classes_.tolist()}")
            state = self.model_
        state = ols_update(state, X, y)
        self.model_, self.classes_, self._negative_label = state, np.asarray(state.classes), 0
        return self
