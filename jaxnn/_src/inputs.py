"""``fit``'s inputs as jaxnn computes with them: checked points (float64
points far from 0 shifted before their cast to float32), labels encoded as
(m, C) ±1 matrices, and given neighbour graphs checked."""

from __future__ import annotations

import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src.checks import check_points, check_whole_labels
from jaxnn._src.graph import Neighbors
from jaxnn._src.points import float32_origin, shift_points
from jaxnn._src.shared_sizes import to_device


def as_points(X, name: str = "X") -> np.ndarray:
    """Checked points (:func:`checks.check_points`) on the host; under
    ``jax.jit`` (query points of decision_function / predict_proba) the tracer."""
    X = check_points(X, name)
    return X if isinstance(X, jax.core.Tracer) else np.asarray(X)


def training_points(Xa, dtype):
    """(X as the model stores it (m, d) in ``dtype``, its origin or None):
    float64 and 64-bit integer points far from 0 are shifted before the cast
    to float32 (:func:`points.float32_origin`: (d,), or float32 parts (2, d)
    whose sum is an origin float32 alone cannot hold — µs timestamps)."""
    (Xp,), origin = _shifted_parts(Xa, dtype, slice(None))
    return to_device(Xp), None if origin is None else to_device(origin, dtype)


def _shifted_parts(Xa, dtype, *rows):
    """(``Xa[r]`` for each index r of ``rows`` as NumPy points in ``dtype``,
    all shifted by the first part's origin (:func:`points.float32_origin`);
    that origin or None)."""
    origin = float32_origin(Xa[rows[0]])  # under x64 too: a float64 model stays right once cast to float32
    return tuple(np.asarray(shift_points(Xa[r], origin), dtype) for r in rows), origin


def points_of_parts(Xa, dtype, *rows):
    """``Xa[r]`` for each index array r of ``rows``, as NumPy points in
    ``dtype``: the points a model fit on ``Xa[rows[0]]`` computes with
    (:func:`training_points`) and, for the other parts, its queries as
    prediction shifts them."""
    return _shifted_parts(Xa, dtype, *rows)[0]


def sample_weights(sample_weight, m: int):
    """``sample_weight`` as ``fit`` boosts with it: None, or (m,) float64
    weights scaled to mean 1 (u_i = m·w_i / Σ w), so that each example's
    term of the surrogate risk is weighed by u_i and uniform weights are the
    unweighted risk.  A real number is a uniform weight (scikit-learn's
    convention).  TypeError for anything but real numbers; ValueError for a
    wrong length, a NaN, infinite or negative weight, or weights summing to 0."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, (str, bytes, dict, set)) or isinstance(sample_weight, (bool, np.bool_)):
        raise TypeError(f"sample_weight must be an array of m real numbers, got {type(sample_weight).__name__}")
    try:
        w = np.asarray(sample_weight)
    except (TypeError, ValueError) as err:
        raise TypeError(f"sample_weight must be an array of m real numbers: {err}") from None
    if w.dtype == object:
        try:
            w = w.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError("sample_weight must be an array of real numbers, got objects that are not") from None
    if not (np.issubdtype(w.dtype, np.floating) or np.issubdtype(w.dtype, np.integer)):
        raise TypeError(f"sample_weight must be an array of real numbers, got dtype {w.dtype}")
    if w.ndim == 0:
        w = np.full(m, w, np.float64)
    if w.shape != (m,):
        raise ValueError(f"sample_weight must have one weight per training point, shape ({m},), got shape {w.shape}")
    w = w.astype(np.float64)
    if not np.all(np.isfinite(w)):
        raise ValueError(f"sample_weight contains NaN or infinite values (entry {int(np.flatnonzero(~np.isfinite(w))[0])})")
    if np.any(w < 0):
        i = int(np.flatnonzero(w < 0)[0])
        raise ValueError(f"sample_weight must be >= 0, got {w[i]!r} at entry {i}")
    w = w / w.max() if w.max() > 0 else w  # scaled first: a sum of huge weights stays finite
    total = w.sum()
    if not total > 0:
        raise ValueError("sample_weight is zero everywhere (sums to 0): no example would count in the risk")
    return w * (m / total)


def label_rows(y) -> np.ndarray:
    """y as a NumPy array of per-example labels for splitting and scoring:
    a one-column y as 1-D, as :func:`encode_labels` reads it (its warning is
    encode_labels' to give)."""
    y_arr = np.asarray(y)
    return y_arr[:, 0] if y_arr.ndim == 2 and y_arr.shape[1] == 1 else y_arr


def _is_missing(value) -> bool:
    """Whether one label of an object array is a missing value: None, a float
    NaN, NaT (NumPy's or pandas'), pandas' NA."""
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return bool(np.isnat(value))
    pd = sys.modules.get("pandas")  # only if the caller has it: its NA and NaT are its own
    return pd is not None and (value is pd.NA or value is pd.NaT)


def check_missing_labels(arr: np.ndarray) -> None:
    """ValueError for 1-D labels holding missing values: NaN in float labels,
    NaT in datetime64 / timedelta64 labels; None, NaN, NA or NaT in object labels (a pandas
    column with gaps), which passed the float NaN check — each NaN, equal to
    nothing, became a class of its own, and broke the sort that finds the
    classes (``(0.0, nan, 0.0, 1.0, nan)``: the real labels twice)."""
    if arr.dtype.kind in "mM":
        missing = np.isnat(arr)
    elif arr.dtype.kind == "f":  # a pandas column of labels with gaps (Int64 with NA reads as float NaN)
        missing = np.isnan(arr)
    elif arr.dtype == object:
        missing = np.fromiter((_is_missing(v) for v in arr.tolist()), bool, arr.size)
    else:
        return
    n = int(missing.sum())
    if n:
        raise ValueError(f"y has {n} missing label{'s' if n > 1 else ''} (None, NaN, NA or NaT), first at index "
                         f"{int(np.argmax(missing))}: drop those examples (from X and y) or give them a class of "
                         "their own")


def encode_labels(y, m: int):
    """Labels → (classes tuple, Y (m, C) int8 in {−1, +1}, multilabel flag).

    int8: a float64 Y took 8·m·C bytes of host memory for the whole fit
    (800 MB at m = 10⁶, C = 100)."""
    if y is None or isinstance(y, (str, bytes, dict, set)):
        raise TypeError(f"y must be an array of labels, got {type(y).__name__}")
    try:
        arr = np.asarray(y)
    except ValueError as err:  # rows of different lengths
        raise ValueError(f"y must be a rectangular array: {err}") from None
    if arr.ndim == 0:
        raise TypeError(f"y must be an array of labels, got {type(y).__name__}")
    if arr.dtype == object and arr.ndim == 1 and any(np.ndim(v) for v in arr):
        raise ValueError("y must be 1-D labels or a rectangular 2-D indicator matrix, got rows of different lengths")
    if arr.shape[0] != m:
        raise ValueError(f"X and y have mismatched lengths: {m} rows in X, {arr.shape[0]} labels in y")
    if arr.ndim == 2 and arr.shape[1] == 1:  # a column of labels (a one-column DataFrame), as scikit-learn reads it
        warnings.warn("y has shape (m, 1): read as 1-D labels — pass y.ravel() (a multilabel indicator matrix "
                      "needs at least 2 columns)", UserWarning, stacklevel=3)
        arr = arr[:, 0]
    if arr.ndim == 1:
        check_missing_labels(arr)
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise ValueError("y contains NaN or infinite values")
        check_whole_labels(arr)
        try:
            classes, codes = np.unique(arr, return_inverse=True)
        except TypeError as err:
            kinds = sorted({type(v).__name__ for v in arr.tolist()})
            mix = f", got a mix of {', '.join(kinds)}" if len(kinds) > 1 else ""
            raise TypeError(f"labels in y must be mutually comparable (sortable){mix}: {err} — give labels of one "
                            "type (y.astype(str), say)") from None
        if classes.size < 2:
            raise ValueError(f"y has a single class ({classes[0]!r}); at least 2 classes are needed")
        Y = np.full((m, classes.size), -1, np.int8)
        Y[np.arange(m), codes.reshape(-1)] = 1
        return tuple(classes), Y, False  # NumPy scalars: predict answers in y's own dtype
    if arr.ndim == 2:
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise TypeError(f"a 2-D y must be a numeric indicator matrix, got dtype {arr.dtype}")
        vals = np.unique(arr)
        if np.all(np.isin(vals, [0, 1])):
            Y = np.where(arr > 0, np.int8(1), np.int8(-1))
        elif np.all(np.isin(vals, [-1, 1])):
            Y = arr.astype(np.int8)
        else:
            raise ValueError(f"a 2-D y must be an indicator matrix with values in {{0, 1}} or {{-1, +1}}, got values {vals[:5]}")
        if arr.shape[1] < 2:
            raise ValueError("a 2-D y (a multilabel indicator matrix) needs at least 2 columns")
        constant = np.nonzero(np.all(Y == Y[:1], axis=0))[0]
        if constant.size:
            c = int(constant[0])
            raise ValueError(f"column {c} of the indicator matrix y is {'all positive' if Y[0, c] > 0 else 'never positive'}: "
                             "every label needs positive and negative examples")
        return tuple(range(arr.shape[1])), Y, True
    raise ValueError(f"y must be 1-D labels or a 2-D indicator matrix, got shape {arr.shape}")




def check_neighbors(neighbors, m: int, k: int, *, rows: int | None = None):
    """(rows, k) int32 indices into m training points, nearest first: an int
    array, or a :class:`Neighbors` (:func:`knn_graph` / :func:`knn_query`'s
    result; with more than k columns, its first k, the nearest — one search
    serves several k).  ``rows``: fit's graph — exactly m rows, each without its
    own index; None: query neighbours — any number ≥ 1 of rows, and under
    ``jax.jit`` a traced array gets its shape and dtype checked only."""
    if neighbors is None or isinstance(neighbors, (str, bytes, dict, set)):
        raise TypeError(f"neighbors must be an (n, k) integer index array or a jaxnn.Neighbors, "
                        f"got {type(neighbors).__name__}")
    sliced = isinstance(neighbors, Neighbors)
    if (not sliced and isinstance(neighbors, tuple) and len(neighbors) == 2
            and all(getattr(part, "ndim", None) == 2 for part in neighbors)):
        raise TypeError("neighbors is a pair of arrays — a search's (indices, distances), as pynndescent's "
                        "query returns: pass the indices")
    nb = neighbors.indices if sliced else neighbors
    if not isinstance(nb, jax.core.Tracer):
        try:
            nb = np.asarray(nb)
        except ValueError as err:  # rows of different lengths
            raise ValueError(f"neighbors must be a rectangular (n, k) array: {err}") from None
    if not jnp.issubdtype(nb.dtype, jnp.integer):
        raise TypeError(f"neighbors must be an integer index array or a jaxnn.Neighbors, got dtype {nb.dtype}")
    n_ok = nb.ndim == 2 and (nb.shape[0] == rows if rows is not None else nb.shape[0] > 0)
    if not n_ok or (nb.shape[1] < k if sliced else nb.shape[1] != k):
        if rows is not None:
            want = f"{rows} rows and at least {k} columns" if sliced else f"shape (m, k) = ({rows}, {k})"
        else:
            want = (f"at least {k} columns" if sliced else f"shape (n, k) with k = model.k = {k}") + " and at least one row"
        wider = not sliced and nb.ndim == 2 and nb.shape[1] > k and n_ok
        raise ValueError(f"neighbors must have {want}, got shape {tuple(nb.shape)}"
                         + (f": pass neighbors[:, :{k}] (the {k} nearest) or the jaxnn.Neighbors itself" if wider else ""))
    nb = nb[:, :k]
    if isinstance(nb, jax.core.Tracer):
        return nb.astype(jnp.int32)
    if nb.min() < 0 or nb.max() >= m:
        hint = ("; a graph of a larger set whose rows were taken for a subset (cross-validation slices the "
                "rows of fit's neighbors= but not the indices in them) needs a graph of the subset itself"
                if rows is not None and nb.max() >= m else "")
        raise ValueError(f"neighbors must hold indices in [0, {m}) (the training points), "
                         f"got values in [{nb.min()}, {nb.max()}]{hint}")
    if rows is not None and np.any(nb == np.arange(m)[:, None]):
        raise ValueError("neighbors must exclude each point itself (row i may not contain i)")
    repeats = np.nonzero(np.any(np.diff(np.sort(nb, axis=1), axis=1) == 0, axis=1))[0]
    if repeats.size:
        raise ValueError(f"neighbors must list k distinct training points a row: row {repeats[0]} repeats an index")
    return nb.astype(np.int32)


def compute_dtype(X: np.ndarray):
    if X.dtype == np.float64 and jax.config.jax_enable_x64:
        return jnp.float64
    return jnp.float32
