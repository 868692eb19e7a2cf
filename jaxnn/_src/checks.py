"""Argument checks shared by the public functions: each raises a TypeError or
ValueError that names the argument and what is wrong with it."""

from __future__ import annotations

import difflib
import math
import numbers
import sys

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import platforms

__all__ = ["check_bool", "check_real", "check_integer", "check_option", "check_float32_range", "check_frame_columns",
           "check_points", "check_whole_labels"]


def check_whole_labels(y: np.ndarray) -> None:
    """ValueError for 1-D float labels that are not whole numbers: they look
    like regression targets, not classes (``fit`` and the baselines alike)."""
    if y.dtype.kind == "f" and not np.all(y == np.round(y)):
        raise ValueError("y holds non-integer floats: class labels are expected, not regression targets "
                         "(cast labels such as 0.5 / 1.5 to str to use them as classes)")


def check_bool(value, name: str) -> bool:
    """``value`` if it is a bool (Python or NumPy), else TypeError — so that
    ``trace="no"`` is not taken as true."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def check_real(value, name: str, *, low: float = -math.inf, high: float = math.inf, low_open: bool = False,
               high_open: bool = False) -> float:
    """``value`` as a finite float within [low, high] (ends open as asked):
    Python and NumPy numbers (np.floating, np.integer) and 0-d real arrays
    pass, bools and everything else are a TypeError.  The one check of every
    real parameter, so that a class and its factory (``jaxnn.GNNB`` and
    ``jaxnn.gnnb``) accept the same values."""
    if (isinstance(value, (np.ndarray, jax.Array)) and not isinstance(value, jax.core.Tracer) and value.shape == ()
            and (jnp.issubdtype(value.dtype, jnp.integer) or jnp.issubdtype(value.dtype, jnp.floating))):
        value = value.item()  # a 0-d real array (np.array(0.5), jnp.float32(0.5)) is its number, as in check_integer
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    x = float(value)
    if not math.isfinite(x) or x < low or x > high or (low_open and x == low) or (high_open and x == high):
        raise ValueError(f"{name} must be {_real_range(low, high, low_open, high_open)}, got {value!r}")
    return x


def _real_range(low: float, high: float, low_open: bool, high_open: bool) -> str:
    """The values check_real accepts, in words: "a finite number > 0",
    "finite and lie in (0, 1)"."""
    if math.isinf(low) and math.isinf(high):
        return "a finite number"
    if math.isinf(high):
        return f"a finite number {'>' if low_open else '>='} {low:g}"
    if math.isinf(low):
        return f"a number {'<' if high_open else '<='} {high:g}"
    return f"finite and lie in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"


def check_integer(value, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int (Python or NumPy integer, not a bool, not a float)
    within [low, high]; a 0-d integer array (``jnp.int32(5)``) is its value."""
    if (isinstance(value, (np.ndarray, jax.Array)) and not isinstance(value, jax.core.Tracer) and value.shape == ()
            and jnp.issubdtype(value.dtype, jnp.integer)):
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if low is not None and int(value) < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    if high is not None and int(value) > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return int(value)


def check_option(value, name: str, options, *, where: str = ""):
    """``value`` if it is one of ``options``.  Options all strings: a
    TypeError for a value that is not a str, a ValueError naming the
    options (and the closest one, :func:`did_you_mean`) for an unknown one;
    ``where`` follows the value (" for fit_split").  Options holding None:
    a ValueError listing them for anything else."""
    options = tuple(options)
    if all(isinstance(option, str) for option in options):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
        if value not in options:
            raise ValueError(f"unknown {name} {value!r}{where}; use one of {options}" + did_you_mean(value, options))
        return value
    # by identity and exact str equality: an array or a number is never compared elementwise
    if not any(value is option or (isinstance(value, str) and isinstance(option, str) and value == option)
               for option in options):
        spelled = ", ".join(map(repr, options[:-1])) + f" or {options[-1]!r}" if len(options) > 1 else repr(options[0])
        raise ValueError(f"{name} must be {spelled}{where}, got {value!r}")
    return value


def did_you_mean(value, choices) -> str:
    """" — did you mean 'x'?" for the choice closest to a mistyped name (case
    and spaces aside), or "" when none is close: the tail of an
    unknown-name error."""
    if not isinstance(value, str):
        return ""
    lowered = {str(c).lower(): c for c in choices}
    close = difflib.get_close_matches(value.strip().lower(), list(lowered), n=1, cutoff=0.6)
    return f" — did you mean {lowered[close[0]]!r}?" if close else ""


#: a varying feature whose values all lie below this in magnitude keeps under
#: 12 of float32's 24 bits: XLA flushes float32 values (and differences)
#: below the smallest normal, 1.18e-38, to zero — at 1e-39 every point became one
SMALLEST_FLOAT32_FEATURE = float(np.finfo(np.float32).tiny) * 2.0**12


def check_float32_range(X, name: str) -> None:
    """ValueError if finite float64 data would overflow to ±inf in float32, the
    computation dtype unless ``jax_enable_x64`` is on, or holds a varying
    feature too small for float32 (:data:`SMALLEST_FLOAT32_FEATURE`)."""
    if jax.config.jax_enable_x64 or not isinstance(X, np.ndarray) or X.dtype != np.float64 or X.size == 0:
        return
    largest = np.max(np.abs(X), axis=0)  # (d,) per feature
    biggest = float(largest.max())
    if biggest > float(np.finfo(np.float32).max):
        raise ValueError(f"{name} holds values beyond the float32 range (|x| up to {biggest:.3g}): rescale it, "
                         "or compute in float64 inside `with jax.enable_x64(True):`")
    tiny = np.flatnonzero((largest > 0) & (largest < SMALLEST_FLOAT32_FEATURE))
    # rare: only then a pass over those columns, for whether they vary
    small = tiny[np.max(X[:, tiny], axis=0) != np.min(X[:, tiny], axis=0)] if tiny.size else tiny
    if small.size:
        j = int(small[0])
        raise ValueError(f"{name}'s feature {j} (and {small.size - 1} more) holds values no larger than "
                         f"{float(largest[j]):.3g}: float32 flushes values below 1.18e-38 to zero, so its differences would "
                         "be lost; rescale it (e.g. X / np.abs(X).max(axis=0)), or compute in float64 inside "
                         "`with jax.enable_x64(True):`")


def _numeric_column(dtype) -> bool:
    """Whether a DataFrame column of ``dtype`` holds numbers jaxnn may compute
    distances with: NumPy numbers and bools, pandas' nullable numbers
    (Int64, Float64, boolean) and sparse numbers; not dates (datetime64,
    with or without a time zone), durations (timedelta64), periods,
    categories, strings or intervals.  A NumPy object column is left to the
    conversion (numbers stored as objects pass, others are refused by dtype)."""
    kind = getattr(dtype, "kind", "O")
    if kind in "mM":
        return False
    return isinstance(dtype, np.dtype) or kind in "biuf"


def check_frame_columns(X, name: str = "X") -> None:
    """TypeError naming the columns of a pandas DataFrame that are not
    numbers (:func:`_numeric_column`).  NumPy refuses a datetime64 array, but
    a DataFrame of numbers and dates converted to floats — microseconds
    since 1970, ~10¹⁵, that outweighed every other feature in every
    distance — and one of categories to their values."""
    pd = sys.modules.get("pandas")  # imported by the caller if X is one of its frames
    if pd is None or not isinstance(X, pd.DataFrame):
        return
    bad = [(col, dt) for col, dt in zip(X.columns, X.dtypes) if not _numeric_column(dt)]
    if not bad:
        return
    named = ", ".join(f"{col!r} ({dt})" for col, dt in bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
    kinds = {getattr(dt, "kind", "O") for _, dt in bad}
    hints = []
    if "M" in kinds:
        hints.append("dates to numbers on a scale that suits the data, e.g. days since the first: "
                     "(df[c] - df[c].min()).dt.total_seconds() / 86400")
    if "m" in kinds:
        hints.append("durations with df[c].dt.total_seconds()")
    if kinds - set("mM"):
        hints.append("categories or strings to indicator columns with pd.get_dummies(df, columns=[...]) "
                     "(or to codes with df[c].cat.codes, if their order means something)")
    raise TypeError(f"{name} has non-numeric column(s) {named}: jaxnn computes distances between numbers, so convert "
                    f"them first — {'; '.join(hints)} — or drop them")


def check_points(X, name: str = "X"):
    """``X`` if it is a non-empty 2-D array of finite real numbers, else a
    TypeError or ValueError naming ``name``.

    NumPy and JAX arrays come back as given (no copy, no transfer), anything
    else — array-likes, masked arrays without masked entries — as
    ``np.asarray(X)``.  Under ``jax.jit`` a traced X gets its shape and dtype
    checked — its values are unknown; a concrete JAX array is checked on the
    spot (not staged into the trace).  Float64 data must fit float32 unless
    ``jax_enable_x64`` is on (:func:`check_float32_range`).
    """
    if X is None or isinstance(X, (str, bytes, dict, set, numbers.Number)):
        raise TypeError(f"{name} must be a 2-D numeric array, got {type(X).__name__}")
    if isinstance(X, np.ma.MaskedArray):  # masked entries are missing values, not numbers to use
        if np.ma.getmaskarray(X).any():
            raise ValueError(f"{name} has masked (missing) entries")
        X = np.asarray(X.data)
    if hasattr(X, "toarray") and hasattr(X, "nnz"):  # scipy.sparse: np.asarray makes a 0-d object array of it
        raise TypeError(f"{name} is a sparse matrix ({type(X).__name__}); jaxnn searches dense points: pass {name}.toarray()")
    if not (hasattr(X, "shape") and hasattr(X, "dtype") and isinstance(X, (np.ndarray, jax.Array))):
        check_frame_columns(X, name)
        try:
            arr = np.asarray(X)
        except ValueError as err:  # rows of different lengths
            raise ValueError(f"{name} must be a rectangular 2-D array: {err}") from None
        if arr.dtype == object and hasattr(X, "to_numpy"):  # pandas nullable dtypes (Float64, Int64) holding pd.NA
            try:
                arr = X.to_numpy(dtype=float, na_value=np.nan)  # missing values become NaN, refused below as such
            except (TypeError, ValueError):  # strings and other non-numbers: named below by their dtype
                pass
        X = arr
    if jnp.issubdtype(X.dtype, jnp.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {X.dtype}")
    # kinds b/i/u/f (not timedelta64, which NumPy files under the integers), or a JAX
    # float (bfloat16, whose NumPy kind is V)
    if not (np.dtype(X.dtype).kind in "biuf" or jnp.issubdtype(X.dtype, jnp.floating)):
        raise TypeError(f"{name} must hold numbers, got dtype {X.dtype}")
    if len(X.shape) != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features), got shape {tuple(X.shape)}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {tuple(X.shape)}")
    if not isinstance(X, jax.core.Tracer):
        if isinstance(X, np.ndarray):  # on the host, before any cast to float32
            finite = X.dtype.kind != "f" or bool(np.all(np.isfinite(X)))
        elif platforms.on_host(X):  # read in place: eagerly on the device, isfinite and all compiled per shape
            finite = not jnp.issubdtype(X.dtype, jnp.floating) or bool(np.all(np.isfinite(np.asarray(X))))
        else:
            with jax.ensure_compile_time_eval():
                finite = bool(jnp.all(jnp.isfinite(jnp.asarray(X, dtype=float))))
        if not finite:
            raise ValueError(f"{name} contains NaN or infinite values")
        check_float32_range(X, name)
    return X
