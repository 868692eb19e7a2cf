"""Compiled programs kept across processes.

JAX's persistent compilation cache (:mod:`jaxnn._src.config`) saves the
compiling of a program an earlier process compiled, but not its tracing and
lowering, which JAX needs to compute the cache key: with every program in the
cache, a new process's first small ``fit`` + ``predict`` + ``predict_proba``
still spends most of its time tracing and lowering its few large programs
(the search, the boosting, the rule).  :func:`jit` wraps such a function
as ``jax.jit`` does and, where jaxnn's cache is on, keeps its compiled
executables in the same folder (``jax.experimental.serialize_executable``),
keyed by what determines the program — the function, its static arguments,
the shapes and dtypes of the others and the process's setting (jax and
jaxlib versions, jaxnn's source, XLA's flags, JAX's settings, x64, the
device kind) — so that a later process loads the executable and calls it:
nothing traced, lowered or compiled.  A program to keep is compiled without
JAX's cache (:func:`jaxnn._src.config.jax_cache_paused`): an executable JAX
loaded from its cache serialises without its kernels.  Module constants
read while tracing are not in the key (jaxnn's users do not change them;
its tests do, and run with the kept programs off).

A call goes to the plain ``jax.jit`` where a key cannot be stable across
processes: under a trace, an argument that is not an array or a Python or
NumPy number, a static argument that is not a number, string, tuple, jaxnn
catalogue loss, frozen dataclass of these or module-level function (a loss
from :func:`jaxnn.losses.from_phi` holds closures), a process with more
than one device (results go where JAX's default device says), or
``$JAXNN_PROGRAMS=0``.  Entries are files ``jaxnn-<key>-cache`` (zlib)
written whole (a temporary file renamed), so the cache's size limit and
checks (:func:`jaxnn._src.config.drop_cut_short`) cover them; one that
cannot be read is compiled again and replaced.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import inspect
import logging
import os
import pickle
import sys
import tempfile
import zlib
from typing import Callable

import jax
import numpy as np

from jaxnn._src import config, platforms

__all__ = ["jit", "Program", "ENV_VAR", "PREFIX"]

#: ``$JAXNN_PROGRAMS=0`` keeps every call on the plain ``jax.jit`` (JAX's own cache still applies)
ENV_VAR = "JAXNN_PROGRAMS"

#: the file names of the kept executables: ``jaxnn-<sha256 of the key>-cache``
PREFIX = "jaxnn-"

_logger = logging.getLogger("jaxnn")


def jit(*, static_argnames: tuple = (), fused: bool = False) -> Callable[[Callable], "Program"]:
    """Decorator: ``jax.jit(fun, static_argnames=...)`` whose executables are
    kept across processes (:class:`Program`), compiled with the compiler
    options the platform rules give for the size of its arguments
    (:func:`jaxnn._src.platforms.compiler_options`) unless ``fused`` (XLA's
    defaults at every size: a program that runs slower without its fusion
    emitters).  The static arguments must be keyword-only."""
    return lambda fun: Program(fun, tuple(static_argnames), fused)


class Program:
    """A jitted function whose compiled executables a later process loads
    (module docstring).  Called as the jitted function, compiled with the
    compiler options of :func:`jaxnn._src.platforms.compiler_options` for
    its arguments' size (unless ``fused``; under a trace, as part of the
    calling program); ``lower`` lowers for the options of its arguments;
    ``clear_cache()`` drops this process's executables (the kept files
    stay); other attributes (``trace``, …) are the jitted function's at
    XLA's defaults."""

    def __init__(self, fun: Callable, static_argnames: tuple, fused: bool = False):
        params = inspect.signature(fun).parameters
        for name in static_argnames:
            if name not in params or params[name].kind is not inspect.Parameter.KEYWORD_ONLY:
                raise TypeError(f"programs.jit {fun.__qualname__}: static argument {name!r} must be keyword-only")
        self._fun = fun
        self._jit = jax.jit(fun, static_argnames=static_argnames)
        self._jits = {(): self._jit}  # by compiler options
        self._fused = bool(fused)
        self._static = frozenset(static_argnames)
        self._name = f"{fun.__module__}.{fun.__qualname__}"
        self._programs: dict = {}
        functools.update_wrapper(self, fun)

    def __call__(self, *args, **kwargs):
        dynamic, leaves, tree, options = self._split(args, kwargs)
        folder = _folder()
        key = None if folder is None or options is None else self._key(kwargs, leaves, tree, options)
        if key is None:
            return self._jitted(options or ())(*args, **kwargs)
        compiled = self._programs.get(key)
        if compiled is None:
            compiled = self._programs[key] = self._load_or_compile(folder, key, args, kwargs)
        return compiled(*args, **dynamic)

    def _split(self, args, kwargs):
        """A call's non-static keyword arguments, its non-static arguments
        flattened (leaves and tree) and the compiler options they give
        (:meth:`_options`)."""
        dynamic = {k: v for k, v in kwargs.items() if k not in self._static}
        leaves, tree = jax.tree_util.tree_flatten((args, dynamic))
        return dynamic, leaves, tree, self._options(leaves)

    def _options(self, leaves):
        """The compiler options for a call whose non-static arguments have
        these leaves, or None under a trace (the call is part of the
        caller's program, compiled with its options)."""
        elements = 0
        for leaf in leaves:
            if isinstance(leaf, jax.core.Tracer):
                return None
            elements += getattr(leaf, "size", 1)
        return () if self._fused else platforms.compiler_options(elements)

    def _jitted(self, options: tuple):
        """The jitted function compiled with ``options``."""
        jitted = self._jits.get(options)
        if jitted is None:
            jitted = self._jits[options] = jax.jit(self._fun, static_argnames=tuple(self._static),
                                                   compiler_options=dict(options))
        return jitted

    def clear_cache(self) -> None:
        """Drop this process's compiled programs (the jitted functions' and the loaded ones)."""
        self._programs.clear()
        for jitted in self._jits.values():
            jitted.clear_cache()

    def _cache_size(self) -> int:
        """This process's compiled programs: ``jax.jit``'s ``_cache_size`` summed
        over the compiler options, and the loaded ones."""
        return len(self._programs) + sum(jitted._cache_size() for jitted in self._jits.values())

    def lower(self, *args, **kwargs):
        """``jax.jit``'s ``lower`` with the compiler options a call with these
        arguments compiles with: ``lower(...).compile()`` compiles what the
        call runs (ahead of time, as the benchmarks warm their runs)."""
        options = self._split(args, kwargs)[3]
        return self._jitted(options or ()).lower(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._jit, name)

    def _key(self, kwargs, leaves, tree, options: tuple):
        """(static keys, argument tree, argument shapes, process setting,
        compiler options) of a call with keyword arguments ``kwargs`` and
        non-static arguments flattened to ``leaves`` and ``tree``, or None
        where no stable key exists (the plain jit runs)."""
        statics = []
        for name in sorted(self._static & kwargs.keys()):
            key = _static_key(kwargs[name])
            if key is None:
                return None
            statics.append((name, key))
        shapes = []
        for leaf in leaves:
            key = _leaf_key(leaf)
            if key is None:
                return None
            shapes.append(key)
        return tuple(statics), tree, tuple(shapes), _dynamic_setting(), options

    def _load_or_compile(self, folder: str, key, args, kwargs):
        statics, tree, shapes, setting, options = key
        text = repr((self._name, statics, str(tree), shapes, setting, _process_setting(), options))
        path = os.path.join(folder, f"{PREFIX}{hashlib.sha256(text.encode()).hexdigest()}{config.CACHE_SUFFIX}")
        try:
            with open(path, "rb") as f:
                payload, in_tree, out_tree = pickle.loads(zlib.decompress(f.read()))
            from jax.experimental.serialize_executable import deserialize_and_load

            _kernels_ready(payload)

            return deserialize_and_load(payload, in_tree, out_tree)
        except FileNotFoundError:
            pass
        except Exception as err:  # cut short, another jaxlib's format, …: compiled again, replaced or deleted
            _logger.debug("jaxnn: kept program %s unreadable (%s): compiling it again", path, err)
            with contextlib.suppress(OSError):
                os.remove(path)
        lowered = self._jit.lower(*args, **kwargs)
        with config.jax_cache_paused():  # compiled whole: not loaded from JAX's cache nor shared in memory
            compiled = lowered.compile(compiler_options={**_WHOLE, **dict(options)})
        _write(path, compiled)
        return compiled


#: a compiler option at its default value: the program compiles as it would without it, but
#: apart from the programs JAX compiled or loaded (an executable JAX loaded from its persistent
#: cache serialises without the kernels it was compiled with, and a process loading that fails:
#: "Function … not found")
_WHOLE = {"xla_embed_ir_in_executable": False}


def _kernels_ready(payload: bytes) -> None:
    """Set up the kernels a loaded executable calls that jaxlib sets up only
    while lowering a program: its CPU LAPACK kernels (custom calls
    ``lapack_*``: ``jnp.linalg.eigh`` in ULS's corrective steps) take their
    routines from SciPy when the first program using them is lowered, and a
    process that loads such a program without lowering one would call
    through unset pointers."""
    if b"lapack_" in payload:
        from jaxlib import lapack

        lapack.prepare_lapack_call("getrf_ffi", np.dtype(np.float32))


def _write(path: str, compiled) -> None:
    """Serialise ``compiled`` to ``path`` whole (a temporary file renamed);
    a backend that cannot serialise, or a folder that cannot be written,
    keeps nothing."""
    try:
        from jax.experimental.serialize_executable import serialize

        data = zlib.compress(pickle.dumps(serialize(compiled)))
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".jaxnn-tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise
    except Exception as err:
        _logger.debug("jaxnn: program not kept (%s)", err)


def _folder():
    """The folder the executables are kept in: jaxnn's compilation cache
    folder while it is on, in a process with one device, unless
    ``$JAXNN_PROGRAMS`` is ``0``; else None."""
    if os.environ.get(ENV_VAR, "").strip() == "0":
        return None
    folder = config.cache_dir()
    if folder is None or jax.device_count() != 1 or jax.process_count() != 1:
        return None
    return folder


def _leaf_key(leaf):
    """An argument's (dtype, shape, weak type, device) key — a NumPy array's
    that of the array it becomes on the default device —, or None (a tracer,
    an array on several devices, another type)."""
    if isinstance(leaf, jax.core.Tracer):
        return None
    if isinstance(leaf, jax.Array):
        devices = leaf.sharding.device_set
        if len(devices) != 1:
            return None
        return str(leaf.dtype), leaf.shape, bool(getattr(leaf, "weak_type", False)), next(iter(devices)).id
    if isinstance(leaf, (np.ndarray, np.generic)):  # the array it becomes on the default device: one key
        return str(jax.dtypes.canonicalize_dtype(leaf.dtype)), leaf.shape, False, _default_device().id
    if isinstance(leaf, (bool, int, float, complex)):
        return type(leaf).__name__
    return None


def _default_device():
    """The device a jitted program puts a NumPy argument on."""
    device = jax.config.jax_default_device
    if isinstance(device, str):
        return jax.devices(device)[0]
    return jax.devices()[0] if device is None else device


def _static_key(value):
    """A key of a static argument that is the same in every process, or None."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return type(value).__name__, repr(value)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        parts = tuple(_static_key(v) for v in value)
        return None if any(p is None for p in parts) else ("tuple", parts)
    from jaxnn._src import losses

    if isinstance(value, losses.Loss):  # a catalogue loss is its name; one built from functions has no key
        try:
            return ("loss", value.name) if losses.get(value.name) is value else None
        except (TypeError, ValueError):
            return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and type(value).__dataclass_params__.frozen:
        fields = tuple((f.name, _static_key(getattr(value, f.name))) for f in dataclasses.fields(value))
        cls = _module_level(type(value))
        return None if cls is None or any(k is None for _, k in fields) else (cls, fields)
    return _module_level(value)


def _module_level(obj):
    """(module, qualified name) of a function or class that its module
    holds under that name (what another process finds again), else None."""
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not name or sys.modules.get(module) is None:
        return None
    found = sys.modules[module]
    for part in name.split("."):
        found = getattr(found, part, None)
    return (module, name) if found is obj else None


def _dynamic_setting():
    """The settings a process may change between calls that change programs."""
    return bool(jax.config.jax_enable_x64), str(jax.config.jax_default_matmul_precision)


def _process_setting():
    """The settings of this process that change programs: jax and jaxlib
    versions, jaxnn's source, XLA's flags, JAX's settings, the device kind."""
    import jaxlib

    settings = sorted((name, repr(value)) for name, value in jax.config.values.items())
    return (jax.__version__, jaxlib.__version__, _source_digest(), os.environ.get("XLA_FLAGS", ""), settings,
            platforms.platform(), getattr(jax.devices()[0], "device_kind", ""))


@functools.lru_cache(maxsize=None)
def _source_digest() -> str:
    """sha256 of jaxnn's Python source (its programs are traced from it)."""
    source = hashlib.sha256()
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for root, dirs, files in sorted(os.walk(package)):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(root, name), "rb") as f:
                    source.update(name.encode() + f.read())
    return source.hexdigest()
