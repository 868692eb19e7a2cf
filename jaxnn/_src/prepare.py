"""Preparing a table's feature columns for k-NN: missing numbers filled,
text columns one-hot encoded, numeric columns scaled — fitted on a training
table as one immutable :class:`Preparation`, then applied alike to any
table (``jaxnn fit`` stores it in the model file; ``jaxnn predict`` and
``jaxnn evaluate`` apply it).  Host-side float64 NumPy.

The steps, in this order (a scikit-learn ``SimpleImputer`` →
``OneHotEncoder`` / ``StandardScaler`` or ``RobustScaler`` pipeline):

* **kinds**: a column is *numeric* when over half of its present values
  are numbers (then every one must be: a stray text is an error naming
  its cell), else *text*;
* **impute** (``"none"``, ``"median"``, ``"most-frequent"``): a missing
  value (:func:`jaxnn._src.tabular.is_missing`) is an error naming its cell,
  or is filled with the training column's median (a numeric column) or
  most frequent value (ties: the smallest; a text column takes its most
  frequent category under either rule);
* **categorical** (``"onehot"``, ``"error"``): a text column becomes one
  0/1 feature per category seen in training (sorted), named
  ``column=category`` (a column of more than :data:`MAX_CATEGORIES`, or of
  over 20 that are more than half of its rows, is refused); a category not seen in training is a row of zeros
  (and one :class:`UnseenCategoryWarning` per column, with the count); or a
  text column is an error naming it;
* **scale** (``"standard"``, ``"robust"``, ``"none"``): each numeric
  feature becomes (x − c)/s with c, s its training mean and standard
  deviation (population, ddof = 0), or its median and interquartile range
  q₇₅ − q₂₅ (NumPy's linear quantiles); an s of 0 (a constant column) is
  taken as 1.  One-hot features are left 0/1.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple, Sequence

import numpy as np

from jaxnn._src import params, persist, tabular

__all__ = ["SCALES", "IMPUTES", "CATEGORICALS", "MAX_CATEGORIES", "Column", "Preparation", "UnseenCategoryWarning",
           "fit_preparation", "identity", "apply", "describe", "to_file", "from_file", "save", "load"]

SCALES, IMPUTES, CATEGORICALS = params.SCALES, params.IMPUTES, params.CATEGORICALS  # declared in params

#: the model-file metadata key (and array-name prefix) of a preparation
_KEY = "preparation"
_VERSION = 1


class UnseenCategoryWarning(UserWarning):
    """A text column of the table being prepared holds categories that the
    training table did not: those rows' one-hot features are all 0.
    ``message`` names the column, the count of such rows and a few of the
    categories."""

    def __init__(self, message: str):
        super().__init__(message)


class Column(NamedTuple):
    """How one input column is prepared.

    Attributes:
      name: the column's name.
      kind: ``"number"`` (one feature) or ``"text"`` (one feature per category).
      fill: what a missing value becomes — a float (numeric), a str (text) —
        or None: a missing value is an error.
      categories: a text column's training categories, sorted; () for numbers.
    """

    name: str
    kind: str
    fill: float | str | None
    categories: tuple = ()

    @property
    def width(self) -> int:
        """The features this column becomes."""
        return 1 if self.kind == "number" else len(self.categories)


class Preparation(NamedTuple):
    """A fitted table preparation (:func:`fit_preparation`): immutable, and
    applied by :func:`apply`.

    Attributes:
      columns: a :class:`Column` per input column, in feature order.
      scale, impute, categorical: the options it was fitted with.
      center: (d,) float64, subtracted from each output feature.
      spread: (d,) float64 > 0, by which each output feature is then divided.
    """

    columns: tuple
    scale: str
    impute: str
    categorical: str
    center: np.ndarray
    spread: np.ndarray

    @property
    def names(self) -> tuple:
        """The input columns' names, in order."""
        return tuple(c.name for c in self.columns)

    @property
    def feature_names(self) -> tuple:
        """The d output features' names: a numeric column's own, ``column=category`` for one-hot ones."""
        out = []
        for c in self.columns:
            out += [c.name] if c.kind == "number" else [f"{c.name}={v}" for v in c.categories]
        return tuple(out)

    @property
    def n_features(self) -> int:
        """d, the features :func:`apply` gives."""
        return sum(c.width for c in self.columns)


# --------------------------------------------------------------------------
# reading one column's cells
# --------------------------------------------------------------------------
class _Cells(NamedTuple):
    """A column's cells sorted out: missing (n,) bool, numbers (n,) float64
    (NaN where a cell is missing or text), texts: the cells as stripped
    text, or None when every present cell is a number."""

    missing: np.ndarray
    numbers: np.ndarray
    texts: np.ndarray | None


def _cells(raw) -> _Cells:
    if isinstance(raw, np.ndarray) and raw.dtype == np.float64:  # Parquet or in-memory numbers
        return _Cells(np.isnan(raw), raw, None)
    try:  # every cell a number (the usual CSV column): at C speed
        numbers = np.array(raw, dtype=np.float64)
        if numbers.ndim == 1 and not np.isnan(numbers).any():
            return _Cells(np.zeros(len(numbers), bool), numbers, None)
    except (ValueError, TypeError):
        pass
    n = len(raw)
    missing = np.fromiter((tabular.is_missing(v) for v in raw), bool, n)
    numbers = np.full(n, np.nan)
    texts = np.empty(n, dtype=object)
    for row, value in enumerate(raw):
        if missing[row]:
            continue
        texts[row] = str(value).strip() if isinstance(value, str) else str(value)
        try:
            numbers[row] = float(value.strip() if isinstance(value, str) else value)
        except (TypeError, ValueError):
            pass
    text = ~missing & np.isnan(numbers)
    if not text.any():
        return _Cells(missing, numbers, None)
    return _Cells(missing, numbers, texts)


def _is_text(cells: _Cells) -> bool:
    """Text when over half of the present cells are not numbers."""
    if cells.texts is None:
        return False
    present = ~cells.missing
    return 2 * int(np.sum(present & np.isnan(cells.numbers))) > int(np.sum(present))


def _number_column(table, name: str, cells: _Cells, fill) -> np.ndarray:
    """(n,) float64 of a numeric column: every present cell a finite
    number, missing ones ``fill`` — else the TableError of the first cell
    that is not (tabular's message)."""
    raw = table.column(name)
    bad = ~cells.missing & ~np.isfinite(cells.numbers)  # text, inf
    if fill is None:
        bad |= cells.missing
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        tabular.cell_number(table, name, row, raw[row])  # raises the cell's error
        raise AssertionError("unreachable: the cell's error")  # pragma: no cover
    return np.where(cells.missing, fill if fill is not None else 0.0, cells.numbers)


def _text(value) -> str:
    """A cell as a category: stripped text; a whole float as its integer (``3.0`` → ``"3"``)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _text_column(table, name: str, cells: _Cells, fill) -> np.ndarray:
    """(n,) object: a text column's cells as text (:func:`_text`), missing
    ones ``fill`` — else the TableError of the first missing cell."""
    raw = table.column(name)
    if cells.missing.any() and fill is None:
        row = int(np.flatnonzero(cells.missing)[0])
        tabular.cell_number(table, name, row, raw[row])  # raises "missing value"
    return np.array([fill if m else _text(v) for m, v in zip(cells.missing, raw)], dtype=object)


# --------------------------------------------------------------------------
# fitting
# --------------------------------------------------------------------------
def _most_frequent(values: np.ndarray):
    """The most frequent of ``values`` (ties: the smallest), as scikit-learn's SimpleImputer."""
    uniques, counts = np.unique(values, return_counts=True)
    return uniques[int(np.argmax(counts))]  # np.unique sorts: the first of the largest counts is the smallest


def fit_preparation(data, features: Sequence[str] | None = None, *, scale: str = "standard", impute: str = "none",
                    categorical: str = "onehot") -> Preparation:
    """The :class:`Preparation` of a training table's feature columns.

    Args:
      data: a mapping of column name → 1-D values (a dict of lists or
        arrays, a pandas DataFrame), or a :class:`jaxnn._src.tabular.Table`.
        Values are numbers, texts, or missing (None, NaN, ``""``, ``"NA"``…).
      features: the feature columns, in order (default: every column of ``data``).
      scale: ``"standard"``, ``"robust"`` or ``"none"``.
      impute: ``"none"`` (a missing value is an error), ``"median"`` or ``"most-frequent"``.
      categorical: ``"onehot"`` or ``"error"`` (a text column is an error).

    Raises:
      ValueError: an option not one of its choices, or a column or cell the
        options cannot prepare (:class:`~jaxnn._src.tabular.TableError`,
        naming the column, and the row where there is one).
    """
    for name, value in (("scale", scale), ("impute", impute), ("categorical", categorical)):
        params.check(name, value)
    table = tabular.table_of(data)
    names = list(table.columns) if features is None else [str(n) for n in features]
    if not names:
        raise ValueError("no feature columns to prepare")
    columns, blocks, numeric = [], [], []
    for name in names:
        cells = _cells(table.column(name))
        present = ~cells.missing
        if not present.any():
            raise tabular.TableError(f"{table.path!r}, column {name!r}: every value is missing")
        if _is_text(cells):
            if categorical == "error":
                shown = list(dict.fromkeys(cells.texts[present & np.isnan(cells.numbers)]))
                raise tabular.TableError(
                    f"{table.path!r}, column {name!r} holds text ({', '.join(map(repr, shown[:3]))}"
                    f"{', …' if len(shown) > 3 else ''}), not numbers: encode it one-hot (--categorical onehot), "
                    "or leave it out (--features)")
            fill = None if impute == "none" else str(_most_frequent(
                np.array([_text(v) for v, m in zip(table.column(name), cells.missing) if not m])))
            texts = _text_column(table, name, cells, fill)
            column = Column(name, "text", fill, tuple(sorted(set(texts))))
            _check_categories(table, column, len(texts))
            blocks.append(_one_hot(texts, column.categories))
            numeric += [False] * column.width
        else:
            if impute == "none":
                fill, x = None, _number_column(table, name, cells, None)
            else:
                x = _number_column(table, name, cells, np.nan)  # a text or infinite cell: its error
                fill = float(np.median(x[present]) if impute == "median" else _most_frequent(x[present]))
                x = np.where(cells.missing, fill, x)
            column = Column(name, "number", fill)
            blocks.append(x[:, None])
            numeric.append(True)
        columns.append(column)
    Z = np.concatenate(blocks, axis=1)
    center, spread = _scaling(Z, np.array(numeric), scale)
    return Preparation(tuple(columns), scale, impute, categorical, center, spread)


#: the most categories a text column may have (one-hot: a feature each)
MAX_CATEGORIES = 1000


def _check_categories(table, column: Column, rows: int) -> None:
    """A TableError naming a text column that is no set of categories: more
    than :data:`MAX_CATEGORIES` of them, or over 20 that are more than half
    of the rows (an identifier, free text, or numbers written as text)."""
    n = len(column.categories)
    if n > MAX_CATEGORIES or (n > 20 and 2 * n > rows):
        raise tabular.TableError(
            f"{table.path!r}, column {column.name!r} holds {n} different texts in {rows} rows "
            f"({', '.join(map(repr, column.categories[:3]))}, …): too many to encode one-hot (an identifier or free "
            "text?); leave it out (--features)")


def _scaling(Z: np.ndarray, numeric: np.ndarray, scale: str) -> tuple[np.ndarray, np.ndarray]:
    """(center, spread), each (d,), of the training features Z: identity
    (0, 1) on one-hot features and for ``scale="none"``."""
    d = Z.shape[1]
    center, spread = np.zeros(d), np.ones(d)
    if scale == "none" or not numeric.any():
        return center, spread
    Zn = Z[:, numeric]
    if scale == "standard":
        c, s = Zn.mean(axis=0), Zn.std(axis=0)
    else:
        q25, c, q75 = np.quantile(Zn, [0.25, 0.5, 0.75], axis=0)
        s = q75 - q25
    center[numeric] = c
    spread[numeric] = np.where(s > 0, s, 1.0)
    return center, spread


def identity(names: Sequence[str]) -> Preparation:
    """The preparation that takes the numeric columns ``names`` as they are
    (nothing filled, encoded or scaled): a missing or text value is an
    error.  What ``jaxnn fit`` did before it prepared tables."""
    d = len(names)
    return Preparation(tuple(Column(str(n), "number", None) for n in names), "none", "none", "error",
                       np.zeros(d), np.ones(d))


# --------------------------------------------------------------------------
# applying
# --------------------------------------------------------------------------
def _one_hot(texts: np.ndarray, categories: tuple) -> np.ndarray:
    """(n, len(categories)) float64 0/1; a text not in ``categories``: a row of zeros."""
    index = {c: j for j, c in enumerate(categories)}
    out = np.zeros((len(texts), len(categories)))
    cols = np.fromiter((index.get(str(t), -1) for t in texts), np.int64, len(texts))
    rows = np.flatnonzero(cols >= 0)
    out[rows, cols[rows]] = 1.0
    return out


def apply(preparation: Preparation, data) -> np.ndarray:
    """``(n, d)`` float64: the table's columns ``preparation.names`` (found
    by name: any order, other columns ignored) prepared as fitted — missing
    values filled, text columns one-hot, numeric features (x − center)/spread.

    A category the training table did not hold gives a row of zeros for
    its column and one :class:`UnseenCategoryWarning` per such column,
    naming it, the count of rows and a few of the categories.

    Raises:
      ValueError: a column missing from ``data``, or a cell that cannot be
        prepared (a missing value with no fill, a text in a numeric column),
        a :class:`~jaxnn._src.tabular.TableError` naming the column and row.
    """
    if not isinstance(preparation, Preparation):
        raise TypeError(f"preparation must be a jaxnn.tabular.Preparation, got {type(preparation).__name__}")
    table = tabular.table_of(data)
    blocks = []
    for column in preparation.columns:
        cells = _cells(table.column(column.name))
        if column.kind == "number":
            blocks.append(_number_column(table, column.name, cells, column.fill)[:, None])
            continue
        texts = _text_column(table, column.name, cells, column.fill)
        known = set(column.categories)
        unseen = [str(t) for t in texts if str(t) not in known]
        if unseen:
            kinds = list(dict.fromkeys(unseen))
            many = len(unseen) > 1
            warnings.warn(f"column {column.name!r}: {len(unseen)} row{'s' if many else ''} of {table.path!r} "
                          f"hold{'' if many else 's'} a category not seen in training "
                          f"({', '.join(map(repr, kinds[:3]))}{', …' if len(kinds) > 3 else ''}): "
                          f"{'their' if many else 'its'} one-hot features are all 0", UnseenCategoryWarning,
                          stacklevel=2)
        blocks.append(_one_hot(texts, column.categories))
    Z = np.concatenate(blocks, axis=1)
    return (Z - preparation.center) / preparation.spread


def describe(preparation: Preparation) -> str:
    """What the preparation does, in a few words: ``3 numeric columns
    standardised; 1 text column one-hot (colour: 3 categories) → 6
    features; missing values filled (median)``."""
    numbers = [c for c in preparation.columns if c.kind == "number"]
    texts = [c for c in preparation.columns if c.kind == "text"]
    scaled = {"standard": "standardised", "robust": "robust-scaled (median, IQR)", "none": "not scaled"}
    parts = []
    if numbers:
        parts.append(f"{len(numbers)} numeric column{'s' if len(numbers) > 1 else ''} {scaled[preparation.scale]}")
    if texts:
        shown = ", ".join(f"{c.name}: {len(c.categories)}" for c in texts[:4]) + (", …" if len(texts) > 4 else "")
        parts.append(f"{len(texts)} text column{'s' if len(texts) > 1 else ''} one-hot ({shown} categories) → "
                     f"{preparation.n_features} features")
    if preparation.impute != "none":
        parts.append(f"missing values filled ({preparation.impute})")
    return "; ".join(parts)


# --------------------------------------------------------------------------
# storage: beside a model in its file
# --------------------------------------------------------------------------
def to_file(preparation: Preparation) -> tuple[dict, dict]:
    """(metadata, arrays) of ``preparation`` for :func:`jaxnn._src.persist.write_file`'s
    ``extra_meta`` and ``extra_arrays``: JSON for the columns and options,
    float64 arrays for center and spread."""
    meta = {"version": _VERSION, "scale": preparation.scale, "impute": preparation.impute,
            "categorical": preparation.categorical,
            "columns": [{"name": c.name, "kind": c.kind, "fill": c.fill, "categories": list(c.categories)}
                        for c in preparation.columns]}
    arrays = {f"{_KEY}_center": np.asarray(preparation.center, np.float64),
              f"{_KEY}_spread": np.asarray(preparation.spread, np.float64)}
    return {_KEY: meta}, arrays


def from_file(meta: dict, arrays: dict) -> Preparation | None:
    """The preparation of a model file's metadata and arrays (:func:`to_file`),
    or None when the file holds none; a ValueError when it is malformed."""
    if _KEY not in meta:
        return None
    p = meta[_KEY]
    try:
        if not isinstance(p, dict) or p.get("version") != _VERSION:
            version = p.get("version") if isinstance(p, dict) else p
            raise ValueError(f"its preparation is of an unknown version {version!r}")
        columns = []
        for c in p["columns"]:
            name, kind, fill, categories = c["name"], c["kind"], c["fill"], c["categories"]
            if kind == "number":
                ok = not categories and (fill is None or (isinstance(fill, (int, float)) and not isinstance(fill, bool)))
            else:
                ok = (kind == "text" and isinstance(categories, list) and bool(categories)
                      and all(isinstance(v, str) for v in categories) and (fill is None or isinstance(fill, str)))
            if not (ok and isinstance(name, str)):
                raise ValueError(f"its preparation's column {c!r} is malformed")
            if kind == "number" and fill is not None:
                fill = float(fill)
            columns.append(Column(name, kind, fill, tuple(categories)))
        center, spread = arrays[f"{_KEY}_center"], arrays[f"{_KEY}_spread"]
        d = sum(c.width for c in columns)
        if (center.dtype != np.float64 or spread.dtype != np.float64 or center.shape != (d,) or spread.shape != (d,)
                or not np.all(np.isfinite(center)) or not np.all(np.isfinite(spread)) or not np.all(spread > 0)):
            raise ValueError(f"its preparation's center and spread are not {d} finite float64 values (spread > 0)")
        return Preparation(tuple(columns), params.check("scale", p["scale"]), params.check("impute", p["impute"]),
                           params.check("categorical", p["categorical"]), center, spread)
    except (KeyError, TypeError) as err:
        raise ValueError(f"its preparation is malformed ({type(err).__name__}: {err})") from None


def save(path, model, preparation: Preparation) -> None:
    """Write ``model`` (a :class:`~jaxnn.Model`, or a model of paper 004's
    family, fit on ``apply(preparation, …)``)
    and ``preparation`` to one model file at ``path``: :func:`jaxnn.save`'s
    format, which :func:`jaxnn.load` reads as the model alone, and
    :func:`load` as both."""
    from jaxnn._src.family import FamilyModel
    from jaxnn._src.model import Model

    if not isinstance(model, (Model, FamilyModel)):
        raise TypeError(f"model must be a jaxnn Model (from jaxnn.fit) or a model of jaxnn.uls, udt or ols, "
                        f"got {type(model).__name__}")
    if not isinstance(preparation, Preparation):
        raise TypeError(f"preparation must be a jaxnn.tabular.Preparation, got {type(preparation).__name__}")
    if preparation.n_features != model.n_features:
        raise ValueError(f"the preparation gives {preparation.n_features} features but the model takes "
                         f"{model.n_features}: they are not of one fit")
    meta, arrays = to_file(preparation)
    persist.write_file(path, type(model).__name__, model, extra_meta=meta, extra_arrays=arrays)


def load(path):
    """``(model, preparation)`` of a model file written by :func:`save` or
    ``jaxnn fit``; ``preparation`` is None for a file without one (written
    by :func:`jaxnn.save` — a SplitModel's too —, or by ``jaxnn fit``
    before it prepared tables).

    Raises:
      FileNotFoundError: no file at ``path``.
      ModelFileError: the file is not a jaxnn model file, or its model or
        preparation is invalid (the message names the path).
    """
    meta, model, arrays = persist.read_file(path, kinds=persist.MODEL_KINDS)
    try:
        preparation = from_file(meta, arrays)
    except ValueError as err:
        raise persist.ModelFileError(f"{persist.fspath(path)!r} is corrupted: {err}", persist.fspath(path)) from None
    if preparation is not None and preparation.n_features != model.n_features:
        raise persist.ModelFileError(f"{persist.fspath(path)!r} is corrupted: its preparation gives "
                                     f"{preparation.n_features} features, its model takes {model.n_features}",
                                     persist.fspath(path))
    return model, preparation
