"""Progress of long calls: ``fit(verbose=True)``, ``select(verbose=True)``,
the experiments' progress line, and the ``jaxnn`` logger.

The long calls report their *stages* (the neighbour graph, boosting, the
``posterior="auto"`` choice, model selection…) and, within a stage, *step i
of n* once per segment or candidate — never per boosting step: nothing here
runs inside a compiled loop.  How it shows:

* ``verbose=True`` with stderr a terminal and logging not configured: a
  `tqdm <https://tqdm.github.io>`_ bar per stage (its elapsed time ticking
  while the device works; a bar that fills where the stage has steps), other
  notes printed above the bars;
* otherwise (stderr a file or a pipe, a notebook, tqdm missing): plain lines
  on stderr, ``jaxnn: fit: ... ...`` as a stage starts and ``jaxnn: fit:
  ...: 1.23 s`` when it ends;
* with logging configured (a handler on the ``jaxnn`` logger or the root):
  the same lines as INFO records through your handlers;
* ``verbose=False`` (the default): nothing, and nothing is timed.

:func:`stage` and :func:`logged` wrap a stage, :func:`steps_done` reports
step i of n of the current one, :func:`progress_shown` turns the display on
for one thread's call (a helper thread of that call shows its stages as
lines: :func:`jaxnn._src.threads.in_thread`), and :class:`StepBar` is the
experiments' counter.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from typing import Optional

import jax

__all__ = ["logger", "progress_shown", "progress_shown_here", "progress_wanted", "logged", "stage", "steps_done", "Stage", "StepBar"]

#: ``fit`` reports its stages (graph, boosting, posterior choice) and their
#: wall times here at INFO level: ``logging.getLogger("jaxnn").setLevel("INFO")``
#: with a handler (``logging.basicConfig()``) shows them
logger = logging.getLogger("jaxnn")

#: seconds between redraws of a bar's clock while the device works
TICK_SECONDS = 0.5


def _tqdm():
    """tqdm's bar class, or None where tqdm is not installed (plain lines then)."""
    try:
        from tqdm import tqdm
    except ImportError:  # a dependency, but progress must never fail for it
        return None
    return tqdm


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # closed, or not a file
        return False


class _BarHandler(logging.StreamHandler):
    """The verbose calls' own handler while bars are drawn: a record is
    written above the bars (``tqdm.write``), not through them."""

    def emit(self, record):
        try:
            _tqdm().write(self.format(record), file=self.stream)
        except Exception:  # noqa: BLE001 - logging's own policy
            self.handleError(record)


class _Progress:
    """The state behind ``fit(verbose=True)``, shared by threads: while any
    call is verbose the ``jaxnn`` logger is at INFO (with a stderr handler of
    its own unless logging already has handlers), and a filter passes a record
    only from a verbose thread or at the level the logger had before.  The
    first verbose call in saves that level and the last one out restores it:
    saved and restored per call, overlapping verbose fits in threads (a
    threaded grid search) lost each other's lines and left the logger at INFO
    for good, so that every later fit logged and timed its stages.

    ``bars``: whether the verbose calls draw tqdm bars (the handler is
    jaxnn's own and stderr a terminal, decided by the first one in)."""

    lock = threading.Lock()
    threads: dict[int, int] = {}  # thread id → its verbose calls in progress
    lines: set[int] = set()  # the verbose threads that print lines even where the others draw bars
    level = logging.NOTSET  # the logger's own level before the first verbose call
    level_before = logging.WARNING  # its effective level then: what non-verbose threads still get
    handler: Optional[logging.Handler] = None
    bars = False

    @staticmethod
    def filter(record: logging.LogRecord) -> bool:
        return record.thread in _Progress.threads or record.levelno >= _Progress.level_before


@contextlib.contextmanager
def progress_shown(bars: bool = True):
    """The ``jaxnn`` logger at INFO level for this thread, for the duration
    (:class:`_Progress`); stages drawn as bars where stderr is a terminal and
    logging is not configured, plain lines on stderr otherwise — always
    lines without ``bars`` (a helper thread of a verbose call, whose caller
    draws the bars: :func:`jaxnn._src.threads.in_thread`)."""
    me = threading.get_ident()
    with _Progress.lock:
        if not _Progress.threads:
            _Progress.level, _Progress.level_before = logger.level, logger.getEffectiveLevel()
            _Progress.handler, _Progress.bars = None, False
            if not logger.hasHandlers():
                stream = sys.stderr
                _Progress.bars = _is_terminal(stream) and _tqdm() is not None
                _Progress.handler = _BarHandler(stream) if _Progress.bars else logging.StreamHandler(stream)
                _Progress.handler.setFormatter(logging.Formatter("jaxnn: %(message)s"))
                logger.addHandler(_Progress.handler)
            logger.addFilter(_Progress.filter)
            logger.setLevel(logging.INFO)
        _Progress.threads[me] = _Progress.threads.get(me, 0) + 1
        if not bars:
            _Progress.lines.add(me)
    try:
        yield
    finally:
        with _Progress.lock:
            _Progress.threads[me] -= 1
            if not _Progress.threads[me]:
                del _Progress.threads[me]
                _Progress.lines.discard(me)
            if not _Progress.threads:
                logger.setLevel(_Progress.level)
                logger.removeFilter(_Progress.filter)
                if _Progress.handler is not None:
                    logger.removeHandler(_Progress.handler)
                _Progress.handler, _Progress.bars = None, False


def progress_wanted() -> bool:
    """Whether this thread's stages are logged (then timed, blocking on the
    device): the logger enabled for INFO, by the user or by a verbose call of
    this thread."""
    if not logger.isEnabledFor(logging.INFO):
        return False
    return not _Progress.threads or threading.get_ident() in _Progress.threads or _Progress.level_before <= logging.INFO


def progress_shown_here() -> bool:
    """Whether a verbose call of this thread is in progress (:func:`progress_shown`)."""
    return threading.get_ident() in _Progress.threads


def _bars_here() -> bool:
    """Whether this thread's stages are drawn as bars."""
    me = threading.get_ident()
    return _Progress.bars and me in _Progress.threads and me not in _Progress.lines


# --------------------------------------------------------------------------
# stages
# --------------------------------------------------------------------------
class Stage:
    """A stage in progress (:func:`stage`): :meth:`step` reports step i of n.
    Where progress is not wanted every method does nothing."""

    def __init__(self, description: str, total: Optional[int], bar=None, shown: bool = True):
        self.description, self.total, self.done = description, total, 0
        self._bar, self.shown = bar, shown

    def step(self, done: Optional[int] = None, total: Optional[int] = None, note: Optional[str] = None,
             *args) -> None:
        """Step ``done`` of ``total`` done (default: one more, of the stage's
        total).  ``note`` (%-formatted with ``args``): a line for the plain
        display (a bar shows it beside itself instead)."""
        if not self.shown:
            return
        self.done = self.done + 1 if done is None else int(done)
        self.total = self.total if total is None else int(total)
        if self._bar is not None:
            if self._bar.total != self.total:  # a stage whose steps are known once it runs: a bar that fills
                self._bar.total = self.total
                self._bar.bar_format = None if self.total else self._bar.bar_format
            self._bar.n = self.done
            if note is not None:
                self._bar.set_postfix_str(note % args if args else note, refresh=False)
            self._bar.refresh()
        elif note is not None:
            logger.info(note, *args)


_NOT_SHOWN = Stage("", None, shown=False)
_stages = threading.local()  # .open: this thread's open stages, innermost last


def _open_stages() -> list:
    if not hasattr(_stages, "open"):
        _stages.open = []
    return _stages.open


@contextlib.contextmanager
def stage(description: str, total: Optional[int] = None, unit: str = "step"):
    """A long stage of this thread's call, as a context manager yielding its
    :class:`Stage`: where progress is wanted (:func:`progress_wanted`), a bar
    (a terminal) or the lines ``description ...`` as it starts and
    ``description: 1.23 s`` when it ends.  ``total``: its steps, if it has
    any.  The time is the block's: block on the device's work inside it."""
    if not progress_wanted():
        yield _NOT_SHOWN
        return
    bar, ticker = None, None
    if _bars_here():
        bar = _tqdm()(total=total, desc=description, unit=unit, file=sys.stderr, dynamic_ncols=True,
                      leave=not _open_stages(), mininterval=TICK_SECONDS,
                      bar_format=None if total else "{desc} ... {elapsed}{postfix}")
        ticker = _Ticker(bar)
    else:
        logger.info("%s ...", description)
    current = Stage(description, total, bar)
    _open_stages().append(current)
    t0 = time.perf_counter()
    done = False
    try:
        yield current
        done = True
    finally:
        _open_stages().remove(current)
        seconds = time.perf_counter() - t0
        ending = f"{seconds:.2f} s" if done else f"stopped by an error after {seconds:.2f} s"
        if bar is None:
            if done:  # an error speaks for itself
                logger.info("%s: %s", description, ending)
        else:  # the bar becomes the plain display's last line: the stage and its time
            ticker.stop()
            bar.bar_format = "{desc}"
            bar.set_description_str(f"{description}: {ending}", refresh=False)
            bar.close()


class _Ticker:
    """Redraws a bar every :data:`TICK_SECONDS` (its clock) while the thread
    that owns it waits on the device; a daemon thread, stopped with the bar."""

    def __init__(self, bar):
        self.bar, self.stopped = bar, threading.Event()
        self.thread = threading.Thread(target=self._run, name="jaxnn-progress", daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopped.wait(TICK_SECONDS):
            try:
                self.bar.refresh()
            except Exception:  # noqa: BLE001 - a bar closed meanwhile: nothing to draw
                return

    def stop(self):
        self.stopped.set()
        self.thread.join()


def logged(description: str, work):
    """``work()`` as a :func:`stage` without steps; where progress is wanted
    it blocks on the result, so the time is the work's, not its dispatch."""
    if not progress_wanted():
        return work()
    with stage(description):
        return jax.block_until_ready(work())


def steps_done(done: int, total: int, note: str, *args) -> None:
    """Step ``done`` of ``total`` of this thread's innermost stage (a
    segment of a long run, a candidate): its bar moves, or the plain display
    prints ``note % args``.  Call it once per segment or candidate, from the
    host, never from compiled code."""
    if not progress_wanted():
        return
    open_stages = _open_stages()
    if open_stages:
        open_stages[-1].step(done, total, note, *args)
    else:
        logger.info(note, *args)


# --------------------------------------------------------------------------
# the experiments' counter
# --------------------------------------------------------------------------
class StepBar:
    """A count of steps on ``stream`` (default stderr): a tqdm bar on a
    terminal, else one line per step, ``[ 12/40] uci: pima fold 3 GNNB(log)
    (5s)`` with the elapsed seconds; nothing where ``enabled`` is false (the
    command line's ``--quiet``)."""

    def __init__(self, total: int, name: str, enabled: bool = True, stream=None):
        self.total = max(1, int(total))
        self.name = name
        self.enabled = bool(enabled)
        self.stream = sys.stderr if stream is None else stream
        self.count = 0
        self.t0 = time.perf_counter()
        self.tty = _is_terminal(self.stream)
        tqdm = _tqdm() if self.enabled and self.tty else None
        self._bar = None if tqdm is None else tqdm(total=self.total, desc=name, file=self.stream, dynamic_ncols=True,
                                                  unit="step")

    def step(self, message: str) -> None:
        """Announce the step about to run (counts it)."""
        self.count += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_postfix_str(message, refresh=False)
            self._bar.update(1)
            return
        w = len(str(self.total))
        line = f"[{self.count:>{w}}/{self.total}] {self.name}: {message} ({time.perf_counter() - self.t0:.0f}s)"
        self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
