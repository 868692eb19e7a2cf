"""jaxnn's process-wide settings: where XLA's compiled programs are kept.

jaxnn's work is jitted JAX programs, compiled on a process's first call on
new shapes (about a second for a small ``fit`` on a CPU).  So that a new
process loads them instead, jaxnn turns on JAX's persistent compilation
cache when it is imported, in one folder (:func:`default_cache_dir`):

* ``$JAXNN_CACHE_DIR`` when that is set — set it empty for no cache;
* else ``$XDG_CACHE_HOME/jaxnn/xla`` where ``XDG_CACHE_HOME`` is set;
* else ``~/.cache/jaxnn/xla``.

It caches every program however quick to compile.  JAX writes each entry
once, without a lock and without looking at the rest of the folder (JAX's own
size limit lists and reads every entry at each write, which grows with the
cache).  Instead jaxnn keeps the folder in order when it turns the cache on
(each process's ``import jaxnn``), under a file lock where the ``filelock``
package is installed: it deletes entries cut short by a process killed while
writing (JAX would warn "Error reading persistent compilation cache entry"
and compile the program again in every later process, never replacing the
entry) and, past :data:`MAX_SIZE` bytes, the least recently used entries.

jaxnn keeps its stage programs in the same folder, compiled, so that a new
process need not even trace them (:mod:`jaxnn._src.programs`).

A cache you configured through JAX (``JAX_COMPILATION_CACHE_DIR`` or
``jax.config.update("jax_compilation_cache_dir", ...)`` before importing
jaxnn) is left alone.  The cache holds every JAX program the process
compiles, not only jaxnn's.  :func:`set_cache_dir` moves the cache or turns
it off from Python; ``jaxnn demo`` and ``jaxnn experiment`` follow the same
setting.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import time
import zlib
from typing import Callable, Optional

__all__ = ["ENV_VAR", "MAX_SIZE", "CACHE_SUFFIX", "cache_dir", "default_cache_dir", "drop_cut_short", "set_cache_dir"]

#: the environment variable that moves jaxnn's compilation cache (empty: no cache)
ENV_VAR = "JAXNN_CACHE_DIR"

#: the most bytes of compiled programs kept (1 GiB), checked when jaxnn
#: turns the cache on: the least recently used (file access or write time)
#: go first, down to this size
MAX_SIZE = 1 << 30

_logger = logging.getLogger("jaxnn")

# JAX's settings that jaxnn changes when it turns its cache on, put back when it is turned off
_SETTINGS = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
             "jax_persistent_cache_min_entry_size_bytes", "jax_compilation_cache_max_size")

#: the ending of a cache entry's file name (JAX's, jax._src.lru_cache; jaxnn's kept programs too)
CACHE_SUFFIX = "-cache"
_ATIME_SUFFIX = "-atime"  # JAX's last-use stamps
_CHECKED = ".jaxnn-checked"  # its modification time: when the entries were last checked whole
_LOCK_SECONDS = 10.0  # as long as JAX waits for the cache's lock


class _State:
    lock = threading.RLock()
    ours: Optional[str] = None  # the folder jaxnn made JAX's cache, while it is
    before: Optional[dict] = None  # JAX's settings before jaxnn changed them
    chosen = False  # set_cache_dir was called: the default no longer applies


def default_cache_dir(environ=None) -> Optional[str]:
    """The folder of jaxnn's compilation cache, or None for no cache:
    ``$JAXNN_CACHE_DIR`` (empty: None), else ``$XDG_CACHE_HOME/jaxnn/xla``,
    else ``~/.cache/jaxnn/xla``.  ``environ``: the environment to read
    (default ``os.environ``)."""
    env = os.environ if environ is None else environ
    if ENV_VAR in env:
        return env[ENV_VAR] or None
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxnn", "xla")


def cache_dir() -> Optional[str]:
    """The folder jaxnn's compilation cache is in, or None when it is off
    (``JAXNN_CACHE_DIR=``, :func:`set_cache_dir`, a folder that could not be
    written, or a cache you configured through JAX, which is yours:
    ``jax.config.jax_compilation_cache_dir`` names it)."""
    import jax

    with _State.lock:
        if _State.ours is not None and jax.config.jax_compilation_cache_dir == _State.ours:
            return _State.ours
        return None


def set_cache_dir(path) -> None:
    """Keep compiled programs in the folder ``path`` (a str or os.PathLike,
    made if missing) from now on, or turn jaxnn's cache off with None.

    It takes effect at once, for programs compiled after the call (those
    compiled already stay in memory).  A folder that cannot be made or
    written raises OSError and leaves the settings as they were.  This
    overrides ``JAXNN_CACHE_DIR`` and a cache configured through JAX; None
    puts back JAX's settings as they were before jaxnn changed them.
    """
    with _State.lock:
        _State.chosen = True
        if path is None:
            _turn_off()
            return
        folder = os.path.abspath(os.path.expanduser(os.fspath(path)))
        _writable(folder)
        _turn_on(folder)


def use_default_cache(report: Optional[Callable[[str], None]] = None) -> bool:
    """Turn on the cache in :func:`default_cache_dir` (``import jaxnn`` and
    the command line call it): unless :func:`set_cache_dir` chose, the
    environment turns it off (``JAXNN_CACHE_DIR=``) or JAX already has a
    cache folder (the user's own: left alone).  A folder that cannot be made
    or written is skipped, with a line to ``report`` (default: a DEBUG record
    on the ``jaxnn`` logger); so is any other failure, so that ``import
    jaxnn`` never fails for the cache's sake.  Returns whether jaxnn's cache
    is on."""
    import jax

    with _State.lock:
        if _State.chosen or cache_dir() is not None:
            return cache_dir() is not None
        folder = default_cache_dir()
        if folder is None or jax.config.jax_compilation_cache_dir:
            return False
        try:
            folder = os.path.abspath(os.path.expanduser(folder))  # a later os.chdir does not move it
            _writable(folder)
            _turn_on(folder)
        except Exception as err:  # noqa: BLE001 - a cache is an optimisation: never fail for it
            (report or _logger.debug)(f"jaxnn: no compilation cache ({err})")
            return False
        return True


# --------------------------------------------------------------------------
# the switches
# --------------------------------------------------------------------------
def _writable(folder: str) -> None:
    """OSError unless ``folder`` exists (made, private to the user, if
    missing) and a file can be created in it (os.access says yes to root,
    even on /proc/sys)."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    with tempfile.TemporaryFile(dir=folder):
        pass


def _locked() -> bool:
    try:
        import filelock  # noqa: F401  (around jaxnn's check of the folder)
    except ImportError:
        return False
    return True


def _turn_on(folder: str) -> None:
    import jax

    locked = _locked()
    drop_cut_short(folder, locked=locked)
    if _State.before is None:
        _State.before = {name: getattr(jax.config, name) for name in _SETTINGS if hasattr(jax.config, name)}
    values = {"jax_compilation_cache_dir": folder, "jax_persistent_cache_min_compile_time_secs": 0.0,
              "jax_persistent_cache_min_entry_size_bytes": 0}
    if "jax_compilation_cache_max_size" in _State.before:  # no eviction by JAX: it reads the folder at each write
        values["jax_compilation_cache_max_size"] = -1
    for name, value in values.items():
        jax.config.update(name, value)
    _State.ours = folder
    _reset_jax_cache()


def _turn_off() -> None:
    import jax

    if _State.before is None:  # jaxnn never changed JAX's settings
        return
    for name, value in _State.before.items():
        jax.config.update(name, value)
    _State.ours, _State.before = None, None
    _reset_jax_cache()


@contextlib.contextmanager
def jax_cache_paused():
    """A block in which JAX compiles without its persistent cache (neither
    reading nor writing it): a program compiled here is compiled whole, as
    :mod:`jaxnn._src.programs` needs to keep it (an executable JAX loaded
    from its cache serialises incomplete).  Process-wide while it lasts: a
    compilation in another thread meanwhile misses the cache too."""
    import jax

    with _State.lock:
        before = jax.config.jax_enable_compilation_cache
        jax.config.update("jax_enable_compilation_cache", False)
        _reset_jax_cache()
        try:
            yield
        finally:
            jax.config.update("jax_enable_compilation_cache", before)
            _reset_jax_cache()


def _reset_jax_cache() -> None:
    """JAX decides once per process whether its cache is used (at the first
    compilation) and opens it once: make it read the settings again."""
    from jax.experimental.compilation_cache import compilation_cache

    compilation_cache.reset_cache()


# --------------------------------------------------------------------------
# entries cut short
# --------------------------------------------------------------------------
def drop_cut_short(folder: str, *, locked: Optional[bool] = None, max_size: int = MAX_SIZE) -> list[str]:
    """Put the compilation cache in ``folder`` in order: delete the entries
    that are not whole (a process killed while JAX wrote one: JAX warns on
    reading it, compiles again and never replaces it) and, while the entries
    take more than ``max_size`` bytes, the least recently used (the later
    of a file's access and write times).  Only entries written since the
    last check are read (a marker file's time); every entry's size and times
    are looked at.  Runs under the cache's file lock when ``filelock`` is
    installed.  Returns the names of the entries deleted."""
    locked = _locked() if locked is None else locked
    if locked:
        import filelock

        try:
            with filelock.FileLock(os.path.join(folder, ".lockfile"), timeout=_LOCK_SECONDS):
                return _drop_cut_short(folder, max_size)
        except filelock.Timeout:  # another process holds it for long: check next time
            return []
    return _drop_cut_short(folder, max_size)


def _drop_cut_short(folder: str, max_size: int) -> list[str]:
    marker = os.path.join(folder, _CHECKED)
    try:
        since = os.stat(marker).st_mtime_ns
    except OSError:
        since = None  # never checked: every entry
    start = time.time_ns()
    dropped, kept = [], []  # kept: (last use, size, name)
    try:
        entries = [e for e in os.scandir(folder) if e.name.endswith(CACHE_SUFFIX) and e.is_file()]
    except OSError:
        return dropped
    for entry in entries:
        try:
            info = entry.stat()
            if (since is None or info.st_mtime_ns >= since) and not _whole(entry.path):
                _remove(folder, entry.name)
                dropped.append(entry.name)
                continue
        except OSError:  # gone meanwhile, or unreadable: JAX will tell
            continue
        kept.append((max(info.st_atime_ns, info.st_mtime_ns), info.st_size, entry.name))
    if dropped:
        _logger.debug("jaxnn: deleted %d compilation cache entries cut short: %s", len(dropped), ", ".join(dropped))
    total = sum(size for _, size, _ in kept)
    if total > max_size:
        old = []
        for _, size, name in sorted(kept):  # least recently used first
            if total <= max_size:
                break
            _remove(folder, name)
            old.append(name)
            total -= size
        _logger.debug("jaxnn: deleted the %d least recently used compilation cache entries", len(old))
        dropped += old
    with _quiet_os_error():
        with open(marker, "wb"):
            pass
        os.utime(marker, ns=(start, start))
    return dropped


def _remove(folder: str, name: str) -> None:
    """Delete the cache entry ``name`` and its last-use stamp (JAX writes one
    beside each entry when its own size limit is on)."""
    key = name[: -len(CACHE_SUFFIX)]
    for path in (os.path.join(folder, name), os.path.join(folder, key + _ATIME_SUFFIX)):
        with _quiet_os_error():
            os.remove(path)


class _quiet_os_error:
    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return kind is not None and issubclass(kind, OSError)


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _whole(path: str) -> bool:
    """Whether the cache entry at ``path`` is a whole compressed stream
    (zlib, or zstd where a zstd module is installed; JAX compresses with
    the first of zstd and zlib it finds).  An empty file is not; a format
    this process cannot read counts as whole (JAX's business)."""
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        return False
    if data[:4] == _ZSTD_MAGIC:
        decompress = _zstd_decompress()
        if decompress is None:
            return True
        try:
            decompress(data)
        except Exception:
            return False
        return True
    stream = zlib.decompressobj()
    try:
        stream.decompress(data)  # as JAX reads it: the whole executable in memory
    except zlib.error:
        return False
    return stream.eof


def _zstd_decompress():
    try:
        from compression import zstd  # Python >= 3.14

        return zstd.decompress
    except ImportError:
        pass
    try:
        import zstandard

        return zstandard.ZstdDecompressor().decompress
    except ImportError:
        return None

