"""Safe persistence: :func:`save` and :func:`load` write and read a fitted
:class:`~jaxnn.Model` (or :class:`~jaxnn.ensemble.SplitModel`, or a model of
paper 004's family: ULS, OLS, UDT) in a
documented, versioned format that never runs code (docs/guide/persistence.md).

A file is a zip archive as :func:`numpy.savez` writes it (no compression):
one ``.npy`` entry per array — α, X, Y, the trace and the origin when there
are some, the class labels — and the entry ``__jaxnn__``, a 0-d unicode
array holding a JSON object of everything else (format name and version,
jaxnn's version, k, the loss and algorithm by name and parameters, the
flags, and each array's dtype and shape).  Reading parses the ``.npy``
headers and data itself through :mod:`zipfile` and
:func:`numpy.lib.format.read_array` with ``allow_pickle=False``: an entry
holding Python objects is refused, not unpickled, and every loss and
algorithm is rebuilt from the catalogue by name.  Unpickling a file runs
whatever code it names; :func:`load` runs none.

:class:`jaxnn.sklearn.BoostedKNNClassifier` saves itself in the same
format (:func:`write_file` / :func:`read_file`, with its parameters and
fitted attributes beside the model).
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import secrets
import zipfile

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import algorithms as algos
from jaxnn._src import family
from jaxnn._src import losses as losses_mod
from jaxnn._src.model import Model, check_alpha_values, validate_model
from jaxnn._src.ols import OLSModel
from jaxnn._src.udt import UDTModel
from jaxnn._src.uls import ULSModel

__all__ = ["save", "load", "ModelFileError", "FORMAT", "FORMAT_VERSION", "MODEL_KINDS", "write_file", "read_file", "json_scalar", "fspath"]

#: the ``format`` every jaxnn model file names in its metadata
FORMAT = "jaxnn"
#: the format version this jaxnn writes; it reads versions 1 … FORMAT_VERSION
#: (3: the models of paper 004's family, and tuple fields; 4: ``Model.search_k``)
FORMAT_VERSION = 4
#: paper 004's family models by the type name a file gives
FAMILY_TYPES = {cls.__name__: cls for cls in (ULSModel, OLSModel, UDTModel)}
#: the kinds of file :func:`load` reads: the k-NN models, then paper 004's family
MODEL_KINDS = ("Model", "SplitModel", *FAMILY_TYPES)
#: the entry (``__jaxnn__.npy`` in the archive) holding the JSON metadata
META = "__jaxnn__"
#: the extension the documentation uses (any name works: :func:`save` writes exactly the path given)
EXTENSION = ".jaxnn"

_ZIP_MAGIC = b"PK\x03\x04"
_NPY_MAGIC = b"\x93NUMPY"
#: array dtype kinds a file may hold: bool, integers, floats, complex, bytes, unicode, datetime, timedelta
_PLAIN_KINDS = "biufcSUMm"


class ModelFileError(ValueError):
    """A file that :func:`jaxnn.load` cannot read as a jaxnn model: not one
    (a foreign file), truncated or corrupted, of a newer format version, or
    holding an invalid model; the message names the path and the problem,
    and ``path`` is the file's path."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------


def save(model, path) -> None:
    """Write a fitted :class:`Model` (or :class:`~jaxnn.ensemble.SplitModel`,
    or a model of :func:`jaxnn.uls`, :func:`jaxnn.ols`, :func:`jaxnn.udt`)
    to ``path`` (a str or os.PathLike; ``.jaxnn`` by convention) in jaxnn's
    model format, which :func:`load` reads back bitwise: arrays in their own
    dtypes plus JSON metadata in one NumPy ``.npz`` archive, never a pickle.

    The model is validated first (as prediction validates it); its loss must
    be a catalogue one (:func:`jaxnn.losses.names`): a loss made by
    ``losses.from_phi`` / ``from_psi`` is Python code, which the format does
    not store (a ValueError says so, and no file is written).  The file is
    written beside ``path`` and renamed onto it, so a failed save leaves any
    previous file whole.  The format is described in
    docs/guide/persistence.md; ``BoostedKNNClassifier.save`` writes an
    estimator in it."""
    if not isinstance(model, (Model, _split_model_type(), family.FamilyModel)):
        hint = ": an estimator saves itself, est.save(path)" if hasattr(model, "model_") or hasattr(model, "get_params") else ""
        raise TypeError(f"save expects a jaxnn Model (from jaxnn.fit), SplitModel (from jaxnn.ensemble.fit_split) or "
                        f"a model of jaxnn.uls, ols or udt, got {type(model).__name__}{hint}")
    write_file(path, type(model).__name__, model)


def load(path):
    """The :class:`Model` (or :class:`~jaxnn.ensemble.SplitModel`, or family model) that
    :func:`save` wrote to ``path`` (a str or os.PathLike), bitwise: arrays
    of the same dtypes and values, the same loss and algorithm objects
    (rebuilt from the catalogue by name), classes, k and flags.

    No code is run: the arrays are read with ``allow_pickle=False`` and the
    metadata is JSON.  The model is validated as prediction validates it.
    Float64 arrays (a model fit under ``jax_enable_x64``) load as JAX
    arrays under x64, and as NumPy arrays without it — prediction then
    casts them to float32 with a warning, as for an unpickled model.

    Raises:
      FileNotFoundError: no file at ``path``.
      ModelFileError: (a ValueError) the file is not a jaxnn model file, is
        truncated or corrupted, was written by a newer jaxnn (a newer format
        version), or holds an invalid model — the message names the path
        and the problem.
    """
    meta, model, _ = read_file(path, kinds=MODEL_KINDS)
    return model


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------


def write_file(path, kind: str, model=None, *, extra_meta: dict | None = None, extra_arrays: dict | None = None) -> None:
    """Write ``model`` (a Model, a SplitModel or None) with metadata
    ``kind`` and ``extra_meta`` (JSON values) and the NumPy arrays
    ``extra_arrays`` to ``path`` — everything encoded (and checked) before
    the file is opened."""
    path = fspath(path)
    meta: dict = {"format": FORMAT, "format_version": FORMAT_VERSION, "jaxnn_version": _jaxnn_version(), "kind": kind}
    arrays: dict = {}
    if model is not None:
        meta["model"], arrays = _encode_model(model)
    meta.update(extra_meta or {})
    for name, value in (extra_arrays or {}).items():
        assert name not in arrays and name != META, name
        arrays[name] = _plain_array(value, name)
    meta["arrays"] = {name: {"dtype": a.dtype.str, "shape": list(a.shape)} for name, a in arrays.items()}
    text = json.dumps(meta, allow_nan=False)
    entries = {META: np.asarray(text), **arrays}
    _write_atomically(path, entries)


def _write_atomically(path: str, entries: dict) -> None:
    """``numpy.savez`` of ``entries`` to a new file beside ``path``, renamed
    onto it once complete (an open file: savez appends ``.npz`` to names)."""
    directory, base = os.path.split(os.path.abspath(path))
    tmp = os.path.join(directory, f".{base}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)  # the umask applies
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **entries)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def _encode_model(model) -> tuple[dict, dict]:
    """(the model's metadata, its arrays as NumPy), the model validated first:
    every dataclass field — an array as an entry of its own name, the class
    labels as the entry ``classes``, the loss and algorithm by name and
    parameters, the blocks of a SplitModel as lists, any other field as the
    JSON number, string, bool or null it is."""
    if isinstance(model, _split_model_type()):
        _validate_split(model)
    elif isinstance(model, family.FamilyModel):
        family.validate(model)
    else:
        validate_model(model)
    fields, arrays = {}, {}
    for field in dataclasses.fields(model):
        name, value = field.name, getattr(model, field.name)
        if name == "classes":
            arrays["classes"], fields["classes"] = encode_labels(value, "model.classes")
        elif name == "loss":
            fields["loss"] = loss_meta(value)
        elif name == "algorithm":
            fields["algorithm"] = algorithm_meta(value)
        elif name == "blocks":
            fields["blocks"] = [[int(i) for i in block] for block in value]
        elif isinstance(value, (np.ndarray, jax.Array)):
            arrays[name] = _plain_array(np.asarray(value), f"model.{name}")
        elif isinstance(value, tuple):  # a family model's tuple of scalars (a loss bag's names)
            fields[name] = {"tuple": [json_scalar(v, f"model.{name}") for v in value]}
        else:
            fields[name] = json_scalar(value, f"model.{name}")
    return {"type": type(model).__name__, "fields": fields, "array_fields": sorted(set(arrays) - {"classes"})}, arrays


def json_scalar(value, what: str):
    """A field's value as JSON: None, a bool, an int, a finite float or a str."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(float(value)):
        return float(value)
    raise ValueError(f"{what} = {value!r} cannot be stored in a jaxnn model file (a number, string, bool or None is)")


def _plain_array(a, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind not in _PLAIN_KINDS or a.dtype.hasobject:
        raise ValueError(f"{what} has dtype {a.dtype}, which a jaxnn model file cannot hold (only plain NumPy "
                         "dtypes: numbers, bools, strings, dates — no Python objects, which only pickle stores)")
    return a


#: the parametrised catalogue losses: the name's family → its parameter's name
_LOSS_PARAMETERS = {"phi_mu": "mu", "phi_power": "v", "amari": "alpha"}
_LOSS_FACTORIES = {"phi_mu": losses_mod.phi_mu, "phi_power": losses_mod.phi_power, "amari": losses_mod.amari}


def loss_meta(loss) -> dict:
    """``{"name": family, "parameters": {...}}`` of a catalogue loss; a
    ValueError for any other (from_phi / from_psi: Python code)."""
    name = getattr(loss, "name", None)
    try:
        catalogue = isinstance(name, str) and losses_mod.get(name) is loss
    except (TypeError, ValueError):
        catalogue = False
    if not catalogue:
        raise ValueError(
            f"cannot save loss {name!r}: it is not one of jaxnn.losses.names(), and a loss made by "
            "jaxnn.losses.from_phi / from_psi is Python code (its phi or psi), which a jaxnn model file does not "
            "store (loading never runs code); fit with a catalogue loss, or keep the arrays (alpha, X, Y) and "
            "rebuild the loss yourself")
    family, _, rest = name.partition("(")
    if family in _LOSS_PARAMETERS:
        return {"name": family, "parameters": {_LOSS_PARAMETERS[family]: float(rest.rstrip(")"))}}
    return {"name": name, "parameters": {}}


def algorithm_meta(algorithm) -> dict | None:
    """``{"name": …, parameters…}`` of a jaxnn algorithm object (None: None)."""
    if algorithm is None:
        return None
    kind = type(algorithm)
    if kind is algos.GNNB:
        return {"name": "gnnb", "epsilon": float(algorithm.epsilon)}
    if kind in (algos.UNN, algos.UNNFast):
        return {"name": algorithm.name, "smoothing": bool(algorithm.smoothing), "max_delta": float(algorithm.max_delta)}
    if kind is algos.N3:
        return {"name": "n3"}
    raise ValueError(f"cannot save algorithm {algorithm!r}: only jaxnn's own (jaxnn.gnnb, unn, unn_fast, n3) are "
                     "stored, by name and parameters")


def encode_labels(values, what: str) -> tuple[np.ndarray, str]:
    """(a plain NumPy array, how to read it back) for class labels — a tuple
    of NumPy scalars (``"numpy"``) or of Python values (``"python"``), or an
    array (``"array"``; of dtype object: ``"object"``, its values stored as
    a plain array); a ValueError unless :func:`decode_labels` gives back
    equal values of the same types."""
    if isinstance(values, np.ndarray):
        kind = "object" if values.dtype == object else "array"
        array = np.asarray(values.tolist()) if kind == "object" else values
        if kind == "object" and values.size == 0:
            array = np.zeros(values.shape, np.float64)
    else:
        values = tuple(values)
        kind = "numpy" if all(isinstance(v, np.generic) for v in values) else "python"
        array = np.asarray(values) if values else np.zeros(0, np.float64)
    array = _plain_array(array, what)
    back = decode_labels(array, kind)
    if not _same_labels(back, values):
        raise ValueError(f"{what} cannot be stored in a jaxnn model file: its labels {_short(values)} do not come back "
                         "as the same values of the same types from a plain NumPy array")
    return array, kind


def decode_labels(array: np.ndarray, kind: str):
    if kind == "numpy":
        return tuple(array[i] for i in range(array.shape[0]))
    if kind == "python":
        return tuple(array.tolist())
    if kind == "object":
        out = np.empty(array.shape, dtype=object)
        out[...] = array.tolist() if array.ndim else array.item()
        return out
    if kind == "array":
        return array
    raise ValueError(f"unknown label kind {kind!r}")


def _same_labels(a, b) -> bool:
    """Whether labels ``a`` are ``b``: equal values of the same types (the
    same dtype and shape, for arrays)."""
    if isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape):
            return False
        if b.dtype != object:
            return bool(np.array_equal(a, b))
        a, b = a.ravel(), b.ravel()
    return len(a) == len(b) and all(type(x) is type(y) and bool(x == y) for x, y in zip(a, b))


def _short(values) -> str:
    text = repr(list(values)[:5] if not isinstance(values, np.ndarray) else values[:5])
    return text if len(text) < 80 else text[:77] + "..."


# --------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------


def read_file(path, kinds) -> tuple[dict, object, dict]:
    """(metadata, the model or None, the other arrays) of the jaxnn file at
    ``path``, whose ``kind`` must be one of ``kinds`` — a
    :class:`ModelFileError` naming the path otherwise, and for every other
    problem of the file."""
    path = fspath(path)
    try:
        return _read_file(path, kinds)
    except ModelFileError as err:
        err.path = path
        raise


def _read_file(path: str, kinds) -> tuple[dict, object, dict]:
    with open(path, "rb") as f:  # FileNotFoundError, IsADirectoryError, PermissionError: Python's own
        head = f.read(len(_NPY_MAGIC))
        if not head:
            raise ModelFileError(f"{path!r} is empty (0 bytes): not a jaxnn model file, or one truncated to nothing")
        if head[:4] != _ZIP_MAGIC:
            what = "a NumPy .npy file" if head.startswith(_NPY_MAGIC) else "not a zip (.npz) archive"
            raise ModelFileError(f"{path!r} is not a jaxnn model file ({what}; jaxnn.save writes an .npz archive)")
        f.seek(0)
        meta, arrays = _read_archive(f, path)
    kind = meta.get("kind")
    if kind not in kinds:
        hint = {"BoostedKNNClassifier": ": load it with jaxnn.sklearn.BoostedKNNClassifier.load(path)",
                "Model": ": load it with jaxnn.load(path)", "SplitModel": ": load it with jaxnn.load(path)"}.get(kind, "")
        raise ModelFileError(f"{path!r} holds a jaxnn {kind!r}, not a {' or '.join(kinds)}{hint}")
    model = None
    if "model" in meta:
        model = _decode_model(meta["model"], arrays, path)
    return meta, model, arrays


def _read_archive(f, path: str) -> tuple[dict, dict]:
    """(metadata, arrays by name) of the open zip archive ``f``."""
    try:
        archive = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as err:
        raise ModelFileError(f"{path!r} is truncated or corrupted: not a complete zip archive ({err})") from err
    with archive:
        infos = {info.filename: info for info in archive.infolist()}
        if META + ".npy" not in infos:
            entries = sorted(name[:-4] if name.endswith(".npy") else name for name in infos)
            raise ModelFileError(f"{path!r} is not a jaxnn model file: a zip archive without jaxnn's metadata "
                                 f"entry {META!r} (it holds {_short(entries)})")
        text = _read_entry(archive, infos[META + ".npy"], path, META, None)
        if text.dtype.kind != "U" or text.shape != ():
            raise ModelFileError(f"{path!r} is corrupted: its metadata entry {META!r} is not a string "
                                 f"(dtype {text.dtype}, shape {text.shape})")
        try:
            meta = json.loads(str(text[()]))
        except ValueError as err:
            raise ModelFileError(f"{path!r} is corrupted: its metadata is not valid JSON ({err})") from err
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise ModelFileError(f"{path!r} is not a jaxnn model file: its {META!r} entry does not name the format "
                                 f"{FORMAT!r}")
        version = meta.get("format_version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ModelFileError(f"{path!r} is corrupted: format_version {version!r} is not a version number")
        if version > FORMAT_VERSION:
            raise ModelFileError(
                f"{path!r} was written by a newer jaxnn ({meta.get('jaxnn_version', '?')}) in format version {version}; "
                f"this jaxnn ({_jaxnn_version()}) reads format versions up to {FORMAT_VERSION}: upgrade jaxnn to load it")
        specs = meta.get("arrays")
        if not isinstance(specs, dict) or not isinstance(meta.get("kind"), str):
            raise ModelFileError(f"{path!r} is corrupted: its metadata lacks the kind of object or the list of arrays")
        arrays = {}
        for name, spec in specs.items():
            info = infos.get(f"{name}.npy")
            if info is None:
                raise ModelFileError(f"{path!r} is corrupted: the entry {name!r} that its metadata lists is missing")
            arrays[name] = _read_entry(archive, info, path, name, spec)
    return meta, arrays


def _read_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: str, name: str, spec) -> np.ndarray:
    """One ``.npy`` entry as a NumPy array, read without pickle; its header is
    checked first (dtype, shape against ``spec`` from the metadata, and that
    the entry holds exactly its data), so nothing is allocated for a forged
    shape."""
    def broken(problem: str, err: Exception | None = None) -> ModelFileError:
        return ModelFileError(f"{path!r} is corrupted: entry {name!r} {problem}")

    try:
        with archive.open(info) as fp:
            version = np.lib.format.read_magic(fp)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
            else:
                raise broken(f"has an unknown .npy version {version}")
            start = fp.tell()
    except ModelFileError:
        raise
    except Exception as err:  # BadZipFile, a bad header (ValueError), EOFError…
        raise broken(f"cannot be read ({type(err).__name__}: {err})") from err
    if dtype.hasobject:
        raise ModelFileError(f"{path!r} is corrupted or not jaxnn's: entry {name!r} holds Python objects (dtype "
                             f"{dtype}), which only pickle reads — jaxnn.load never unpickles")
    if spec is not None:
        if not isinstance(spec, dict):
            raise ModelFileError(f"{path!r} is corrupted: the metadata of entry {name!r} is not an object")
        if spec.get("dtype") != dtype.str or spec.get("shape") != list(shape):
            raise broken(f"has dtype {dtype.str} and shape {tuple(shape)} where the metadata says "
                         f"{spec.get('dtype')} and {spec.get('shape')}")
    size = math.prod(shape) * dtype.itemsize
    if info.file_size != start + size:
        raise broken(f"holds {info.file_size - start} bytes of data where its header ({dtype.str}, shape "
                     f"{tuple(shape)}) needs {size}")
    try:
        with archive.open(info) as fp:
            array = np.lib.format.read_array(fp, allow_pickle=False)
            fp.read()  # to the end: the CRC is checked there
    except Exception as err:  # a bad CRC-32 (corrupted bytes), a short read
        raise broken(f"cannot be read ({type(err).__name__}: {err})") from err
    return array


def _decode_model(meta, arrays: dict, path: str):
    """The Model or SplitModel of the metadata and arrays, validated."""
    try:
        model = _build_model(meta, arrays)
    except ModelFileError:
        raise
    except (TypeError, ValueError, KeyError, IndexError) as err:
        raise ModelFileError(f"{path!r} is corrupted: its model cannot be rebuilt ({type(err).__name__}: {err})") from err
    try:
        if isinstance(model, family.FamilyModel):
            family.validate(model)
        elif isinstance(model, Model):
            validate_model(model)
            check_alpha_values(model)  # α's values too: a NaN in α would predict without a word
        else:
            _validate_split(model)
            check_alpha_values(model)
    except (TypeError, ValueError) as err:
        raise ModelFileError(f"{path!r} holds an invalid model: {err}") from err
    return model


def _field(meta: dict, key: str, types, what: str = "model"):
    if not isinstance(meta, dict) or key not in meta:
        raise ValueError(f"the {what} metadata lacks {key!r}")
    value = meta[key]
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _as_tuple(types)):
        raise ValueError(f"the {what} metadata's {key!r} is {value!r}")
    return value


def _as_tuple(types):
    return types if isinstance(types, tuple) else (types,)


def _build_model(meta, arrays: dict):
    """The Model or SplitModel of :func:`_encode_model`'s metadata and arrays
    (fields the file lacks take their defaults: a file of an older jaxnn)."""
    kind = _field(meta, "type", str)
    if kind not in MODEL_KINDS:
        raise ValueError(f"unknown model type {kind!r}")
    cls = {"Model": Model, "SplitModel": _split_model_type()}.get(kind) or FAMILY_TYPES[kind]
    fields = _field(meta, "fields", dict)
    names = _field(meta, "array_fields", list)
    known = {field.name for field in dataclasses.fields(cls)}
    if not all(isinstance(name, str) for name in names) or "classes" in names:
        raise ValueError(f"the array fields are {names!r}")
    unknown = sorted((set(fields) | set(names)) - known)
    if unknown:
        raise ValueError(f"the fields {unknown} are not a {kind}'s in this jaxnn ({_jaxnn_version()})")
    values = {}
    for name, value in fields.items():
        if name == "classes":
            if "classes" not in arrays:
                raise ValueError("the array 'classes' is missing")
            values[name] = decode_labels(arrays["classes"], _field(fields, "classes", str))
        elif name == "loss":
            values[name] = loss_from_meta(_field(fields, "loss", dict))
        elif name == "algorithm":
            values[name] = algorithm_from_meta(value)
        elif name == "blocks":
            if not (isinstance(value, list) and all(isinstance(b, list) and all(
                    isinstance(i, int) and not isinstance(i, bool) for i in b) for b in value)):
                raise ValueError("the blocks are not lists of feature indices")
            values[name] = tuple(tuple(b) for b in value)
        elif value is None or isinstance(value, (bool, int, float, str)):
            values[name] = value
        elif isinstance(value, dict) and set(value) == {"tuple"} and isinstance(value["tuple"], list) and all(
                v is None or isinstance(v, (bool, int, float, str)) for v in value["tuple"]):
            values[name] = tuple(value["tuple"])
        else:
            raise ValueError(f"the field {name!r} is {value!r}")
    for name in names:
        if name not in arrays:
            raise ValueError(f"the array {name!r} is missing")
        values[name] = _leaf(arrays[name])
    return cls(**values)


def _leaf(array: np.ndarray):
    """A JAX array — but a float64 one stays NumPy while x64 is off, as an
    unpickled model's (:func:`jaxnn._src.model.without_float64` narrows it,
    centred, when it predicts)."""
    if array.dtype == np.float64 and not jax.config.jax_enable_x64:
        return array
    return jnp.asarray(array)


def loss_from_meta(meta: dict):
    """The catalogue loss of ``{"name", "parameters"}`` (:func:`loss_meta`)."""
    name = _field(meta, "name", str, "loss")
    parameters = _field(meta, "parameters", dict, "loss")
    if name in _LOSS_FACTORIES:
        key = _LOSS_PARAMETERS[name]
        if set(parameters) != {key}:
            raise ValueError(f"loss {name!r} takes the parameter {key!r}, got {sorted(parameters)}")
        value = parameters[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"loss {name!r}'s {key} is {value!r}")
        return _LOSS_FACTORIES[name](float(value))
    if parameters or "(" in name:
        raise ValueError(f"loss {name!r} takes no parameters, got {sorted(parameters)}")
    return losses_mod.get(name)


def algorithm_from_meta(meta):
    """The algorithm of :func:`algorithm_meta`'s dict, built by jaxnn's
    constructors (which check the parameters)."""
    if meta is None:
        return None
    name = _field(meta, "name", str, "algorithm")
    if name == "gnnb":
        return algos.gnnb(_field(meta, "epsilon", (int, float), "algorithm"))
    if name in ("unn", "unn_fast"):
        make = algos.unn if name == "unn" else algos.unn_fast
        return make(_field(meta, "smoothing", bool, "algorithm"), _field(meta, "max_delta", (int, float), "algorithm"))
    if name == "n3":
        return algos.n3()
    raise ValueError(f"unknown algorithm {name!r}")


# --------------------------------------------------------------------------
# SplitModel
# --------------------------------------------------------------------------


def _split_model_type():
    from jaxnn._src.ensemble import SplitModel

    return SplitModel


def _validate_split(model) -> None:
    """A TypeError or ValueError naming the field unless the SplitModel's
    fields agree (shapes and scalars; each block as :func:`validate_model`)."""
    from jaxnn._src import ensemble

    def array(name, ndim, optional=False):
        value = getattr(model, name)
        if value is None and optional:
            return None
        if not isinstance(getattr(value, "shape", None), tuple) or getattr(value, "dtype", None) is None:
            raise TypeError(f"model.{name} must be an array, got {type(value).__name__}")
        if len(value.shape) != ndim:
            raise ValueError(f"model.{name} must be {ndim}-D, got shape {value.shape}")
        return value

    alpha, X, Y = array("alpha", 3), array("X", 3), array("Y", 2)
    n, m, w = X.shape
    blocks = model.blocks
    if not isinstance(blocks, tuple) or not blocks:
        raise TypeError(f"model.blocks must be a non-empty tuple of tuples of feature indices, got {blocks!r}")
    if len(blocks) != n or alpha.shape[:2] != (n, m):
        raise ValueError(f"model.alpha {alpha.shape}, model.X {X.shape} and {len(blocks)} model.blocks disagree: "
                         "alpha must be (n, m, C) and X (n, m, w) for n blocks")
    if Y.shape != (m, alpha.shape[2]):
        raise ValueError(f"model.Y has shape {Y.shape}: it must be (m, C) = {(m, alpha.shape[2])}")
    d = model.n_features
    if isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 1:
        raise ValueError(f"model.n_features must be an integer >= 1, got {d!r}")
    for b, block in enumerate(blocks):
        if (not isinstance(block, tuple) or not 1 <= len(block) <= w
                or not all(isinstance(i, numbers.Integral) and 0 <= i < d for i in block)):
            raise ValueError(f"model.blocks[{b}] must be 1 to {w} feature indices in [0, {d}), got {block!r}")
    if max(len(block) for block in blocks) != w:
        raise ValueError(f"model.X is {w} wide, but the widest of model.blocks holds {max(len(b) for b in blocks)} features")
    trace = array("trace", 2, optional=True)
    if trace is not None and trace.shape[0] != n:
        raise ValueError(f"model.trace has shape {trace.shape}: it must be (n, T) for n = {n} blocks")
    origin = array("origin", 2 if getattr(model.origin, "ndim", 1) == 2 else 1, optional=True)
    if origin is not None and origin.shape not in ((d,), (2, d)):
        raise ValueError(f"model.origin has shape {origin.shape}: it must be None, (n_features,) = ({d},) "
                         f"or (2, n_features)")
    if ensemble.check_norm(model.norm) != model.norm:
        raise ValueError(f"model.norm must be one of {ensemble.NORMS}, got {model.norm!r}")
    if ensemble.check_mean(model.mean, "model.mean") != model.mean:
        raise ValueError(f"model.mean must be one of {ensemble.MEANS} or a power q, got {model.mean!r}")
    block_model = Model(
        jax.ShapeDtypeStruct(alpha.shape[1:], alpha.dtype), jax.ShapeDtypeStruct((m, w), X.dtype),
        jax.ShapeDtypeStruct(Y.shape, Y.dtype), None, model.classes, model.k, model.loss, model.algorithm,
        model.multilabel, rounds=model.rounds)
    validate_model(block_model)  # k, classes, loss, algorithm, flags as for a Model


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def fspath(path) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    if not isinstance(path, str):  # a PathLike giving bytes
        path = os.fsdecode(path)
    return path


def _jaxnn_version() -> str:
    import jaxnn

    return str(getattr(jaxnn, "__version__", "unknown"))
