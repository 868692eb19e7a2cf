"""Reading a user's table — a CSV file with a header, or a Parquet file —
into the arrays jaxnn fits on: ``X`` (float64 features chosen by column
name) and ``y`` (the class labels of one target column).

This module needs NumPy only (CSV through :mod:`csv`); Parquet needs
pandas and pyarrow (``pip install "jaxnn[io]"``).  Every problem of the
file — missing, empty, not a table, an unknown column, a value that is not
a number or is missing — is a :class:`TableError`: a ValueError whose
message is one line that names the file, and the column and row where
there is one, so that the command line can print it as it is.

CSV files
---------
* UTF-8 text (a byte-order mark is skipped), or the same gzip-compressed;
  the first line is the header, one name per column;
* comma-separated — tab- or semicolon-separated when the header holds no
  comma but one of those;
* blank lines (and lines of empty fields only) are skipped; every other
  line has as many fields as the header;
* values are stripped of surrounding spaces; an empty value and ``NA``,
  ``N/A``, ``NaN``, ``null``, ``None``, ``?`` (any case) are *missing*.

Rows are numbered from 1, the first after the header; a CSV row's message
also gives its line in the file.
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import gzip
import io
import os
from typing import Iterable, Sequence

import numpy as np

__all__ = ["TableError", "Table", "MISSING", "read_table", "table_of", "read_xy", "read_features", "target_labels",
           "parse_labels", "feature_columns", "split_names", "write_csv", "is_missing", "cell_number"]

#: the values (stripped, any case) that mean "no value" in a CSV cell
MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})

_PARQUET_MAGIC = b"PAR1"
_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGIC = b"PK\x03\x04"
IO_EXTRA = 'pip install "jaxnn[io]"'


class TableError(ValueError):
    """A problem of a data file (or of the columns asked of it), told in one
    line that names the file, and the column and row where there is one."""


@dataclasses.dataclass
class Table:
    """A table as read: column names in file order, and each column's values
    — a tuple of stripped strings (CSV) or a NumPy array (Parquet: float64
    for numeric columns, NaN missing; object otherwise, None missing).

    ``lines``: for a CSV, the file line where each data row ends."""

    path: str
    columns: list
    values: list
    lines: list | None = None

    @property
    def n_rows(self) -> int:
        return len(self.values[0]) if self.values else 0

    def where(self, row: int) -> str:
        """``row 7 (line 8)``: how a message names data row ``row`` (0-based)."""
        line = f" (line {self.lines[row]})" if self.lines is not None else ""
        return f"row {row + 1}{line}"

    def column(self, name: str):
        """The values of column ``name``; a TableError naming the file's
        columns (and the closest one) when it has none of that name."""
        try:
            return self.values[self.columns.index(name)]
        except ValueError:
            raise TableError(f"{self.path!r} has no column {name!r}{did_you_mean(name, self.columns)}; "
                             f"its columns: {list_names(self.columns)}") from None


# --------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------


def read_table(path) -> Table:
    """The :class:`Table` of the CSV or Parquet file at ``path`` (told apart
    by their first bytes, whatever the name); a :class:`TableError` when
    there is no such file, it is empty, or not a table."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except FileNotFoundError:
        raise TableError(f"{path!r}: no such file") from None
    except IsADirectoryError:
        raise TableError(f"{path!r} is a directory, not a data file") from None
    except OSError as err:
        raise TableError(f"{path!r} cannot be read ({err.strerror or err})") from None
    if not head:
        raise TableError(f"{path!r} is empty (0 bytes): a CSV needs a header line and rows")
    if head == _PARQUET_MAGIC:
        return _read_parquet(path)
    if head == _ZIP_MAGIC:
        raise TableError(f"{path!r} is a zip archive (a jaxnn model file?), not a CSV or Parquet table")
    return _read_csv(path, gzipped=head[:2] == _GZIP_MAGIC)


def _read_csv(path: str, gzipped: bool) -> Table:
    try:
        if gzipped:
            with gzip.open(path, "rt", encoding="utf-8-sig", newline="") as f:
                text = f.read()
        else:
            with open(path, encoding="utf-8-sig", newline="") as f:
                text = f.read()
    except UnicodeDecodeError as err:
        raise TableError(f"{path!r} is not UTF-8 text (byte {err.start}): not a CSV file jaxnn can read; "
                         "save it as UTF-8 CSV") from None
    except (OSError, EOFError) as err:  # a broken gzip stream
        raise TableError(f"{path!r} cannot be read ({err})") from None
    if "\0" in text:
        raise TableError(f"{path!r} holds NUL bytes: a binary file, not a CSV")
    first = text.lstrip("\r\n").split("\n", 1)[0]
    delimiter = "," if "," in first else next((d for d in ("\t", ";") if d in first), ",")
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        header = next((row for row in reader if _filled(row)), None)
        if header is None:
            raise TableError(f"{path!r} is empty: no header line")
        names = [name.strip() for name in header]
        _check_unique(path, names)
        rows, lines = [], []
        for row in reader:
            if not _filled(row):
                continue
            if len(row) != len(names):
                raise TableError(f"{path!r}: row {len(rows) + 1} (line {reader.line_num}) has {len(row)} fields where "
                                 f"the header has {len(names)}" + _delimiter_hint(delimiter))
            rows.append([cell.strip() for cell in row])
            lines.append(reader.line_num)
    except csv.Error as err:
        raise TableError(f"{path!r}: line {reader.line_num} is not valid CSV ({err})") from None
    if not rows:
        raise TableError(f"{path!r} has a header but no data rows")
    return Table(path, names, [tuple(col) for col in zip(*rows)], lines)


def _filled(row: Sequence[str]) -> bool:
    return any(cell.strip() for cell in row)


def _delimiter_hint(delimiter: str) -> str:
    return {",": " (a value holding a comma must be quoted)", "\t": " (read as tab-separated)",
            ";": " (read as semicolon-separated)"}[delimiter]


def _check_unique(path: str, names: list) -> None:
    seen = set()
    for name in names:
        if name and name in seen:
            raise TableError(f"{path!r} has two columns named {name!r}: rename one")
        seen.add(name)


def _read_parquet(path: str) -> Table:
    try:
        import pandas as pd
        import pyarrow  # noqa: F401  (pandas' Parquet engine)
    except ImportError:
        raise TableError(f"{path!r} is a Parquet file: reading it needs pandas and pyarrow ({IO_EXTRA})") from None
    try:
        frame = pd.read_parquet(path, engine="pyarrow")
    except Exception as err:  # pyarrow's ArrowInvalid, OSError: a truncated or broken file
        raise TableError(f"{path!r} cannot be read as Parquet ({type(err).__name__}: {one_line(err)})") from None
    names = [str(name).strip() for name in frame.columns]
    _check_unique(path, names)
    if frame.shape[0] == 0:
        raise TableError(f"{path!r} has columns but no rows")
    values = []
    for i in range(frame.shape[1]):
        series = frame.iloc[:, i]
        if pd.api.types.is_bool_dtype(series.dtype) or pd.api.types.is_numeric_dtype(series.dtype):
            values.append(series.to_numpy(dtype=np.float64, na_value=np.nan))
        else:
            values.append(series.astype(object).where(series.notna(), None).to_numpy(dtype=object))
    return Table(path, names, values, None)


def table_of(data, source: str = "data") -> Table:
    """A :class:`Table` of in-memory columns: ``data`` a mapping of column
    name → 1-D values (a dict of lists or arrays, a pandas DataFrame), or a
    Table (returned as it is).  Messages name it ``source``.  Numeric NumPy
    columns become float64 (NaN: missing), any other its values as given."""
    if isinstance(data, Table):
        return data
    if isinstance(data, np.ndarray) or not hasattr(data, "keys") or not hasattr(data, "__getitem__"):
        raise TypeError(f"the table must be a mapping of column name to values (a dict, a pandas DataFrame), got "
                        f"{type(data).__name__}")
    names = [str(name) for name in data.keys()]
    values = []
    for key, name in zip(data.keys(), names):
        column = data[key]
        array = np.asarray(column.to_numpy() if hasattr(column, "to_numpy") else column)
        if array.ndim != 1:
            raise TypeError(f"column {name!r} of the table must be 1-D, got shape {array.shape}")
        if array.dtype.kind in "biuf":
            array = array.astype(np.float64)
        elif array.dtype.kind != "O":
            array = array.astype(object)
        values.append(array)
    lengths = {len(v) for v in values}
    if len(lengths) > 1:
        raise ValueError(f"the columns of {source!r} differ in length: {sorted(lengths)}")
    if not values or not lengths.pop():
        raise ValueError(f"{source!r} has no columns or no rows")
    _check_unique(source, names)
    return Table(source, names, values, None)


# --------------------------------------------------------------------------
# columns
# --------------------------------------------------------------------------


def split_names(text: str) -> list:
    """``"a, b,c"`` → ``["a", "b", "c"]`` (``--features``); a TableError for
    an empty name or one given twice."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise TableError(f"--features {text!r} has an empty name: give comma-separated column names")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TableError(f"--features names {', '.join(map(repr, twice))} twice")
    return names


def feature_columns(table: Table, target: str, features: Sequence[str] | None = None) -> list:
    """The feature columns: ``features`` (each checked to exist, none the
    target), or every column but the target."""
    table.column(target)  # exists?
    if features is None:
        chosen = [name for name in table.columns if name != target]
        if not chosen:
            raise TableError(f"{table.path!r} has only the target column {target!r}: no features to fit on")
        if "" in chosen:
            raise TableError(f"{table.path!r}: column {table.columns.index('') + 1} has no name (an index written by "
                             "pandas' to_csv? write it with index=False, or choose columns with --features)")
        return chosen
    for name in features:
        table.column(name)
        if name == target:
            raise TableError(f"--features names the target column {target!r}: it cannot also be a feature")
    return list(features)


def read_features(table: Table, names: Sequence[str]) -> np.ndarray:
    """``(n, d)`` float64: the columns ``names`` in that order, every value a
    finite number — else a TableError naming the column and the row."""
    X = np.empty((table.n_rows, len(names)), dtype=np.float64)
    for j, name in enumerate(names):
        X[:, j] = _numbers(table, name)
    return X


def _numbers(table: Table, name: str) -> np.ndarray:
    raw = table.column(name)
    if isinstance(raw, np.ndarray) and raw.dtype == np.float64:
        values = raw
    else:
        try:
            values = np.array(raw, dtype=np.float64)
        except (ValueError, TypeError):  # find the first value that is not a number
            for row, value in enumerate(raw):
                cell_number(table, name, row, value)
            raise AssertionError("unreachable: some value did not parse")  # pragma: no cover
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        row = int(bad[0])
        cell_number(table, name, row, raw[row])
    return values


def cell_number(table: Table, name: str, row: int, value) -> float:
    """``value``, the cell of column ``name`` in data row ``row`` (0-based),
    as a finite float — else the TableError of the cell (missing, not a
    number, not finite), naming the file, the column and the row."""
    where = f"{table.path!r}, column {name!r}, {table.where(row)}"
    if is_missing(value):
        shown = f" ({value!r})" if isinstance(value, str) and value else ""
        raise TableError(f"{where}: missing value{shown}; every feature value must be a number: fill missing values "
                         f"with --impute median or most-frequent, drop the row, or leave the column out with --features")
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise TableError(f"{where}: {_short(value)} is not a number; every feature must be numeric (choose the "
                         "feature columns with --features)") from None
    if not np.isfinite(number):
        raise TableError(f"{where}: {_short(value)} is not a finite number")
    return number


def is_missing(value) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip().lower() in MISSING
    if isinstance(value, float):
        return value != value
    try:
        import pandas as pd  # pd.NA, NaT in object columns

        return bool(pd.isna(value))
    except (ImportError, TypeError, ValueError):
        return False


def target_labels(table: Table, name: str) -> np.ndarray:
    """The target column as stripped label texts (``numpy.str_``), none
    missing — else a TableError naming the row."""
    raw = table.column(name)
    texts = []
    for row, value in enumerate(raw):
        if is_missing(value):
            raise TableError(f"{table.path!r}, column {name!r}, {table.where(row)}: missing target value; "
                             "drop the row")
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)  # a whole number in a float column (Parquet): "3", not "3.0"
        texts.append(str(value).strip())
    return np.array(texts, dtype=str)


def parse_labels(texts: np.ndarray) -> np.ndarray:
    """Class labels from label texts: int64 when every text is a whole
    number (``"1"``, ``"-1.0"``), else the texts themselves (``"0.5"``
    stays a string class: jaxnn classifies, it does not regress)."""
    try:
        values = np.array([float(t) for t in texts], dtype=np.float64)
    except ValueError:
        return np.asarray(texts, dtype=str)
    if np.all(np.isfinite(values)) and np.all(values == np.round(values)) and np.all(np.abs(values) < 2**63):
        return values.astype(np.int64)
    return np.asarray(texts, dtype=str)


def read_xy(path, target: str, features: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray, list]:
    """``(X, y, feature_names)`` of the table at ``path``: ``y`` the labels
    of column ``target`` (:func:`parse_labels`), ``X`` float64 ``(n, d)``
    of ``features`` (default: every other column), in that order."""
    table = read_table(path)
    names = feature_columns(table, target, features)
    y = parse_labels(target_labels(table, target))
    X = read_features(table, names)
    return X, y, names


# --------------------------------------------------------------------------
# writing and messages
# --------------------------------------------------------------------------


def write_csv(out, header: Sequence[str], rows: Iterable[Sequence]) -> None:
    """``header`` and ``rows`` as CSV (``\\n`` line ends) to the open text file ``out``."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)


def one_line(message) -> str:
    return " ".join(str(message).split())


def did_you_mean(value: str, choices: Sequence[str]) -> str:
    """" — did you mean 'x'?" for the closest of ``choices``, or ""."""
    lowered = {str(c).lower(): c for c in choices if c}
    close = difflib.get_close_matches(str(value).strip().lower(), list(lowered), n=1, cutoff=0.6)
    return f" — did you mean {lowered[close[0]]!r}?" if close else ""


def list_names(names: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", … ({len(names)} in all)" if len(names) > limit else "")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "...'"
