"""Command line: ``jaxnn demo`` (the main job) and ``jaxnn experiment NAME``."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from typing import Callable, Sequence

import numpy as np

__all__ = ["main", "demo", "demo_intro", "compilation_cache_dir", "OneLineErrorParser", "one_line",
           "quiet_on_broken_pipe", "BROKEN_PIPE_STATUS"]


# --------------------------------------------------------------------------
# how the command line ends: a user's mistake, a reader gone
# --------------------------------------------------------------------------
def one_line(message: str) -> str:
    """``message`` on one line (its whitespace runs, newlines included, made one space)."""
    return " ".join(str(message).split())


class OneLineErrorParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr,
    ``PROG: error: MESSAGE``, and exit status 2 (argparse's own first prints
    the usage too); ``--help`` prints the usage and options as always.
    Subparsers made by ``add_subparsers().add_parser`` are of this class too."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


#: the exit status of a command whose output's reader went away
#: (``jaxnn demo | head``): 128 + SIGPIPE (13), what a shell reports for a
#: command that SIGPIPE ended, as ``yes | head`` does
BROKEN_PIPE_STATUS = 141


def quiet_on_broken_pipe(command: Callable[[], int]) -> int:
    """``command()``'s exit status, or :data:`BROKEN_PIPE_STATUS` without a
    traceback where the reader of stdout went away (a BrokenPipeError), as
    the Python documentation's "Note on SIGPIPE" advises: stdout is pointed at
    os.devnull, so that Python's final flush of what is left in its buffer
    does not fail again.  An ``argparse`` exit (``--help``) is flushed first."""
    try:
        try:
            status = command()
        except SystemExit:
            sys.stdout.flush()
            raise
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        _stdout_to_devnull()
        return BROKEN_PIPE_STATUS


def _stdout_to_devnull() -> None:
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's or a notebook's capture): nothing to redirect
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def compilation_cache_dir(environ=None) -> str | None:
    """Where the CLI keeps XLA's compiled programs between runs, or None.

    ``$JAXNN_CACHE_DIR`` (empty: no cache), else ``$XDG_CACHE_HOME/jaxnn/xla``,
    else ``~/.cache/jaxnn/xla``.  A second ``jaxnn demo`` then loads its
    programs instead of compiling them.  The library itself never sets it: in
    your own processes, set JAX's ``JAX_COMPILATION_CACHE_DIR``.
    """
    env = os.environ if environ is None else environ
    if "JAXNN_CACHE_DIR" in env:
        return env["JAXNN_CACHE_DIR"] or None
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jaxnn", "xla")


_CACHE_SETTINGS = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
                   "jax_persistent_cache_min_entry_size_bytes")


def _use_compilation_cache() -> bool:
    """Turn on JAX's persistent compilation cache at :func:`compilation_cache_dir`
    (every program, however quick to compile), unless the user configured one
    (``JAX_COMPILATION_CACHE_DIR``) or the folder cannot be made or written
    (JAX would warn once per compiled program about one that is read-only).
    Returns whether it turned the cache on."""
    import jax

    path = compilation_cache_dir()
    if path is None or jax.config.jax_compilation_cache_dir:
        return False
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):  # writable? (os.access says yes to root, even on /proc/sys)
            pass
    except OSError as err:
        print(f"jaxnn: no compilation cache ({err})", file=sys.stderr)
        return False
    for name, value in zip(_CACHE_SETTINGS, (path, 0.0, 0)):
        jax.config.update(name, value)
    return True


@contextlib.contextmanager
def _compilation_cache():
    """:func:`_use_compilation_cache` for the command's duration: JAX's own
    settings come back after it, so ``cli.main`` called in-process (a
    notebook, a test) does not leave the persistent cache on for the rest of
    the process."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    before = {name: getattr(jax.config, name) for name in _CACHE_SETTINGS}
    turned_on = _use_compilation_cache()
    try:
        yield
    finally:
        if turned_on:
            for name, value in before.items():
                jax.config.update(name, value)
            compilation_cache.reset_cache()  # JAX decides once whether the cache is used: ask it again


def _timed(fn: Callable):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


# the demo's bundled UCI sets (70/30 stratified split, standardised), all or --quick
_DEMO_UCI = ("bupa", "ionosphere", "pima", "wdbc", "segment")
_DEMO_UCI_QUICK = ("ionosphere", "wdbc")

_DEMO_DESCRIPTION = f"""\
Compare boosted k-NN with plain k-NN and two linear models on bundled data:
k-NN, GNNB (logistic and Matsushita losses), UNN (exponential loss), N3
(calibrated hinge), SGD one-vs-rest logistic regression and a linear SVM
(one-vs-rest, squared hinge); the k-NN methods use --k neighbours, all other
settings are the defaults.
Domains: Ripley's synthetic problem (250 training / 1000 test points) and the
UCI sets {", ".join(_DEMO_UCI)} (--quick: {", ".join(_DEMO_UCI_QUICK)}), each
split 70/30 (stratified, seed 0) and standardised.  Prints one row per domain:
test accuracy (fit seconds, compilation included), the mean accuracy of each
method, and the Monte-Carlo Bayes *error rate* of Ripley's problem (1 minus it
is the best expected accuracy there).

Time: about 15-35 s the first time on 2 CPU cores (mostly XLA compilation;
16-18 s on a quiet machine), about 6 s once the compiled programs are cached
(--quick: about 10-20 s and 3-4 s).  The cache lives in $JAXNN_CACHE_DIR (set it empty for no cache), else
$XDG_CACHE_HOME/jaxnn/xla, else ~/.cache/jaxnn/xla; a JAX_COMPILATION_CACHE_DIR
you set takes precedence.
"""


def demo_intro(*, k: int = 10, quick: bool = False) -> str:
    """The demo's first line: what it runs, printed before anything is compiled."""
    uci = _DEMO_UCI_QUICK if quick else _DEMO_UCI
    return (f"jaxnn demo: k-NN, GNNB, UNN, N3, SGD, linear SVM (k={k}) on Ripley (250 train / 1000 test) + "
            f"{len(uci)} UCI sets ({', '.join(uci)}; 70/30 split); test accuracy (fit seconds) per domain; "
            f"{'~10-20 s' if quick else '~15-35 s'} on 2 CPU cores when compiling, "
            f"{'~3-4 s' if quick else '~6 s'} with cached compiled programs")


def _demo_domains(quick: bool):
    from jaxnn import datasets

    sp = datasets.ripley(seed=0)
    yield "ripley", sp.X_train, sp.y_train, sp.X_test, sp.y_test
    names = _DEMO_UCI_QUICK if quick else _DEMO_UCI
    for name in names:
        X, y = datasets.load(name)
        Xtr, Xte, ytr, yte = datasets.train_test_split(X, y, test_size=0.3, seed=0)
        Xtr, Xte = datasets.standardize(Xtr, Xte)
        yield name, Xtr, ytr, Xte, yte


def _contenders(k: int):
    import jaxnn
    from jaxnn import baselines

    def boosted(**kw):
        def run(Xtr, ytr):
            return jaxnn.fit(Xtr, ytr, k=k, posterior="link", **kw)  # accuracy only: no auxiliary fit

        return run, jaxnn.predict

    return {
        "k-NN": ((lambda X, y: baselines.knn_fit(X, y, k=k)), baselines.predict),
        "GNNB(log)": boosted(loss="logistic", algorithm="gnnb"),
        "GNNB(mat)": boosted(loss="matsushita", algorithm="gnnb"),
        "UNN(exp)": boosted(loss="exponential", algorithm="unn"),
        "N3(hinge)": boosted(loss="calibrated_hinge", algorithm="n3"),
        "SGD": (baselines.sgd_fit, baselines.predict),
        "LinSVM": (baselines.svm_fit, baselines.predict),
    }


def _check_demo_k(k: int, domains) -> None:
    """ValueError unless 1 <= k < the smallest training set of ``domains`` (as :func:`_demo_domains` yields)."""
    smallest = min(len(ytr) for _, _, ytr, _, _ in domains)
    if not 1 <= k < smallest:
        raise ValueError(f"k must lie in [1, {smallest - 1}] (the smallest training set has {smallest} points), got {k}")


def demo(*, k: int = 10, quick: bool = False, out=None) -> dict:
    """Ripley + a few bundled UCI sets: boosted k-NN vs k-NN and linear models.

    Prints a table of test accuracy and fit time (seconds, JIT compilation
    included: every domain has new shapes);
    returns {(domain, method): (accuracy, fit_seconds)}.  The last line is
    Ripley's Bayes error rate (not an accuracy).  ``out``: where the table
    goes (default: sys.stdout at the call).
    """
    out = sys.stdout if out is None else out
    print(demo_intro(k=k, quick=quick), file=out, flush=True)  # at once: the first row waits on compilation
    import jax

    domains = list(_demo_domains(quick))
    _check_demo_k(k, domains)
    contenders = _contenders(k)
    results: dict = {}
    header = f"{'domain':<12}" + "".join(f"{name:>12}" for name in contenders)
    cached = " or its cached load" if jax.config.jax_compilation_cache_dir else ""
    print(f"jaxnn demo — test accuracy (fit seconds incl. compilation{cached}), k={k}, backend={jax.default_backend()}",
          file=out)
    print(header, file=out, flush=True)
    for domain, Xtr, ytr, Xte, yte in domains:
        cells = []
        for name, (fit_fn, predict_fn) in contenders.items():
            model, seconds = _timed(lambda: fit_fn(Xtr, ytr))
            acc = float(np.mean(np.asarray(predict_fn(model, Xte)) == np.asarray(yte)))
            results[(domain, name)] = (acc, seconds)
            cells.append(f"{acc:6.3f} ({seconds:4.1f})")
        print(f"{domain:<12}" + "".join(f"{c:>12}" for c in cells), file=out, flush=True)
    means = {name: np.mean([results[(d, name)][0] for d, n in results if n == name]) for name in contenders}
    print(f"{'mean':<12}" + "".join(f"{means[n]:>12.3f}" for n in contenders), file=out)
    if "ripley" in {d for d, _ in results}:
        from jaxnn import datasets

        bayes = datasets.ripley_bayes_error()  # 10⁶ draws: enough for the three printed digits
        print(f"Ripley Bayes error ≈ {bayes:.3f} (an error rate, not an accuracy: the best expected accuracy "
              f"on ripley is ≈ {1 - bayes:.3f})", file=out)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """``jaxnn demo [--k K] [--quick]`` and ``jaxnn experiment NAME ...``: the
    exit status.

    A user's mistake (a bad option value, settings no chosen data allow) is
    refused before any work starts: one line on stderr, ``jaxnn ...: error:
    ...``, and status 2 (returned, or raised as SystemExit by argparse).
    A reader of stdout gone (``jaxnn demo | head``) ends the command quietly
    with status :data:`BROKEN_PIPE_STATUS`.
    """
    return quiet_on_broken_pipe(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    parser = OneLineErrorParser(prog="jaxnn", description="Boosted nearest-neighbour classification in JAX.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="boosted k-NN vs k-NN, SGD and linear SVM on bundled data",
                            description=_DEMO_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p_demo.add_argument("--k", type=int, default=10, help="neighbours (default 10)")
    p_demo.add_argument("--quick", action="store_true", help="fewer domains")
    sub.add_parser("experiment", help="reproduce a paper experiment: jaxnn experiment NAME --help", add_help=False)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["experiment"]:
        from jaxnn._src.experiments.cli import command as experiment_command

        # the options are checked first; the compilation cache is on for the run only
        return experiment_command(argv[1:], around_run=_compilation_cache)
    args = parser.parse_args(argv)
    if args.command == "demo":
        if args.k < 1:
            p_demo.error(f"argument --k: must be >= 1, got {args.k}")
        try:  # before the first line: a k too large for the data is a mistake, found in a blink
            _check_demo_k(args.k, list(_demo_domains(args.quick)))
        except ValueError as err:
            p_demo.error(f"argument --k: {err}")
        with _compilation_cache():
            demo(k=args.k, quick=args.quick)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
