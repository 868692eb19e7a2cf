"""The experiments by name and the ``jaxnn experiment`` command line: the
``EXPERIMENTS``, ``FORMATTERS`` and ``PLOTTERS`` registries, :func:`run`, the
option parsers and :func:`main`."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
from typing import Callable, Optional, Sequence

from jaxnn._src.cli import OneLineErrorParser, one_line, quiet_on_broken_pipe
from jaxnn._src.experiments.common import check_domains, check_folds, load_domain, save_result
from jaxnn._src.experiments.contenders import KNN_METHODS, SECONDARY
from jaxnn._src.experiments.feature_splits import format_splits, splits, splits_data, splits_settings
from jaxnn._src.experiments.intrinsic_geometry import format_geometry, geometry, geometry_settings
from jaxnn._src.experiments.plots import (plot_geometry, plot_posteriors, plot_ripley, plot_splits, plot_uci,
                                          require_matplotlib)
from jaxnn._src.experiments.posterior_estimation import format_posteriors, posteriors, posteriors_settings
from jaxnn._src.experiments.pruning_curve import RIPLEY_K, RIPLEY_N_TRAIN, format_ripley, ripley, ripley_settings
from jaxnn._src.experiments.uci_benchmark import format_uci, uci, uci_settings

__all__ = ["EXPERIMENTS", "FORMATTERS", "PLOTTERS", "run", "MAX_SEED", "MAX_REPEATS", "MAX_SIGMA", "main", "command"]


EXPERIMENTS = {"ripley": ripley, "uci": uci, "posteriors": posteriors, "splits": splits, "geometry": geometry}
FORMATTERS = {"ripley": format_ripley, "uci": format_uci, "posteriors": format_posteriors, "splits": format_splits,
              "geometry": format_geometry}
PLOTTERS = {"ripley": plot_ripley, "uci": plot_uci, "posteriors": plot_posteriors, "splits": plot_splits,
            "geometry": plot_geometry}


_DESCRIPTIONS = {
    "ripley": "test error vs θ for pruned UNN/GNNB and k-NN on random samples (paper 001 Fig. 2)",
    "uci": "cross-validated accuracy, F, recall and times of 10 contenders on UCI domains (papers 000/001)",
    "posteriors": "KL divergence to the true posteriors on 3 Gaussians vs σ (paper 003 Table 3)",
    "splits": "divide and conquer over n feature blocks with three generalised means (paper 000 §6.4)",
    "geometry": "ULS, UDT and OLS on the same losses, ranked against AdaBoost, CART and SGD (paper 004 §7)",
}


def _check_name(name) -> str:
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; available: {', '.join(EXPERIMENTS)}")
    return name


def run(
    name: str,
    *,
    quick: bool = False,
    plot_dir=None,
    out=None,
    progress: bool = True,
    seed: int = 0,
    save: Optional[str] = None,
    **options,
):
    """Run experiment ``name``, print its table to ``out``, write figures to
    ``plot_dir`` (PNG, needs matplotlib) and return its result object.

    ``save``: pickle the result object to this path (``uci``: also after
    every domain).  ``options`` go to the experiment function (e.g.
    ``folds=3``, ``ks=(10,)``).
    """
    _check_name(name)
    out = sys.stdout if out is None else out
    if plot_dir is not None:
        require_matplotlib()
        os.makedirs(plot_dir, exist_ok=True)
    if save is not None and name == "uci":
        options["save"] = save
    result = EXPERIMENTS[name](quick=quick, seed=seed, progress=progress, **options)
    FORMATTERS[name](result, out=out)  # the table first: a save that fails loses nothing printed
    print(f"({name}{' --quick' if quick else ''}: wall time {result.seconds:.1f} s)", file=out)
    if save is not None:
        save_result(result, save)
    if plot_dir is not None:
        for path in PLOTTERS[name](result, plot_dir):
            print(f"wrote {path}", file=out)
    out.flush()
    return result


#: the largest --seed: JAX's random keys hold 32 bits, so a larger seed would repeat a smaller one's draws
MAX_SEED = 2**32 - 1
#: the most replicates (--seeds, --draws): far more than any run could finish, so a larger count is a typo
MAX_REPEATS = 10_000
#: the largest σ (--sigmas): the classes' means lie on the unit circle, and float32 (jaxnn's precision)
#: rounds them away in points ~10⁷ from the origin; far beyond σ ≈ 10 every posterior is uniform anyway
MAX_SIGMA = 1e6


def _int_at_least(low: int, high: Optional[int] = None):
    """An argparse type: an integer >= ``low`` (and <= ``high``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
            raise argparse.ArgumentTypeError(f"expected an integer {bounds}, got {value}")
        return value

    return parse


_positive_int, _seed, _repeats = _int_at_least(1), _int_at_least(0, MAX_SEED), _int_at_least(1, MAX_REPEATS)


def _distinct(values: tuple, text: str) -> tuple:
    """A non-empty list without repeats (an empty or doubled list is a typo)."""
    if not values:
        raise argparse.ArgumentTypeError(f"expected at least one value, got {text!r}")
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"values repeat in {text!r}")
    return values


def _int_list(text: str) -> tuple:
    values = _str_list_raw(text)
    try:
        ints = tuple(int(v) for v in values)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if any(v < 1 for v in ints):
        raise argparse.ArgumentTypeError(f"expected integers >= 1, got {text!r}")
    return _distinct(ints, text)


def _float_list(text: str) -> tuple:
    try:
        floats = tuple(float(v) for v in _str_list_raw(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not all(math.isfinite(v) and v > 0 for v in floats):
        raise argparse.ArgumentTypeError(f"expected finite numbers > 0, got {text!r}")
    return _distinct(floats, text)


def _sigma_list(text: str) -> tuple:
    sigmas = _float_list(text)
    if max(sigmas) > MAX_SIGMA:
        raise argparse.ArgumentTypeError(f"expected σ values in (0, {MAX_SIGMA:g}], got {text!r}")
    return sigmas


def _str_list_raw(text: str) -> tuple:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _str_list(text: str) -> tuple:
    return _distinct(_str_list_raw(text), text)


#: command-line overrides → (keyword, parser, experiments accepting it)
_OPTIONS = {
    "--folds": ("folds", _positive_int, ("uci", "splits", "geometry"),
                "cross-validation folds (splits: 1 = one 70/30 split)"),
    "--ks": ("ks", _int_list, ("uci", "posteriors"), "comma-separated k values"),
    "--domains": ("domains", _str_list, ("uci", "splits", "geometry"), "comma-separated domain names"),
    "--methods": ("methods", _str_list, ("uci", "posteriors"), "comma-separated contender names"),
    "--seeds": ("n_seeds", _repeats, ("posteriors",), f"replicate seeds per σ (at most {MAX_REPEATS})"),
    "--sigmas": ("sigmas", _sigma_list, ("posteriors",), f"comma-separated σ values in (0, {MAX_SIGMA:g}]"),
    "--thetas": ("thetas", _float_list, ("ripley",), "comma-separated θ values"),
    "--draws": ("n_draws", _repeats, ("ripley",), f"random k-NN samples per θ (at most {MAX_REPEATS})"),
    "--n-splits": ("n_splits", _int_list, ("splits",), "comma-separated block counts"),
    "--extra-ks": ("extra_ks", _int_list, ("uci",), "k values for GNNB(mat), GNNB(squared), N3(hinge)"),
}


def _check_settings(name: str, quick: bool, seed: int, options: dict) -> None:
    """ValueError (its message names the option) where the settings cannot
    run on the data they choose — found before any work, where the run would
    fail on every fold, or print rows of "—", only after minutes: more folds
    than a domain's rows or than its smallest class's, a k no chosen
    domain's training part exceeds, more feature blocks than features, a θ
    that keeps fewer than k prototypes, seeds past :data:`MAX_SEED`."""
    if name == "uci":
        with _naming("--methods"):  # unknown names
            domains, folds, ks, methods, extra_ks = uci_settings(quick, options.get("domains"), options.get("folds"),
                                                                  options.get("ks"), options.get("methods"),
                                                                  options.get("extra_ks"))
        labels = {domain: load_domain(domain)[1] for domain in domains}
        with _naming("--folds"):
            check_folds(labels, folds)
        training = {domain: len(y) - math.ceil(len(y) / folds) for domain, y in labels.items()}  # smallest per domain
        largest = max(training, key=training.get)
        grids = (("--ks", ks, any(m in KNN_METHODS and m not in SECONDARY for m in methods)),
                 ("--extra-ks" if "extra_ks" in options else "--ks", extra_ks, any(m in SECONDARY for m in methods)))
        for flag, grid, used in grids:
            for k in grid if used else ():
                if k >= training[largest]:
                    raise ValueError(f"{flag}: k={k} is not below the training part of any chosen domain, so no "
                                     f"fit would run (the largest: {training[largest]} points of {largest} in "
                                     f"{folds} folds)")
    elif name == "splits":
        domains, n_splits, folds, max_rows = splits_settings(quick, options.get("domains"), options.get("n_splits"),
                                                              options.get("folds"), None)
        data = splits_data(domains, max_rows, seed)
        with _naming("--folds"):
            check_folds({domain: y for domain, (_, y) in data.items()}, folds)
        for n in n_splits if "n_splits" in options else ():  # the defaults skip an n > d (a note says so)
            for domain, (X, _) in data.items():
                if n > X.shape[1]:
                    raise ValueError(f"--n-splits: n={n} blocks is more than the {X.shape[1]} features of {domain}")
    elif name == "geometry":
        domains, folds = geometry_settings(quick, options.get("domains"), options.get("folds"))
        if folds < 2:
            raise ValueError("--folds: geometry cross-validates: at least 2 folds")
        with _naming("--folds"):
            check_folds({domain: load_domain(domain)[1] for domain in domains}, folds)
    elif name == "posteriors":
        with _naming("--methods"):  # unknown names
            _, ks, n_seeds, n_train, _, _ = posteriors_settings(quick, options.get("sigmas"), options.get("ks"),
                                                                options.get("n_seeds"), None, None,
                                                                options.get("methods"))
        for k in ks:
            if k >= n_train:
                raise ValueError(f"--ks: k={k} is not below the {n_train} training points"
                                 f"{' of --quick' if quick else ''}")
        if seed + n_seeds - 1 > MAX_SEED:
            raise ValueError(f"--seed: the {n_seeds} seeds from {seed} go past {MAX_SEED}, the largest seed")
    elif name == "ripley":
        thetas, _, _ = ripley_settings(quick, options.get("thetas"), options.get("n_draws"), None)
        for theta in thetas:
            kept = math.ceil(round(float(theta) * RIPLEY_N_TRAIN, 9))
            if kept < RIPLEY_K:
                raise ValueError(f"--thetas: θ={theta:g} keeps {kept} of the {RIPLEY_N_TRAIN} training points, fewer "
                                 f"than k={RIPLEY_K}: each θ must be at least {RIPLEY_K / RIPLEY_N_TRAIN:g}")


@contextlib.contextmanager
def _naming(flag: str):
    """A ValueError raised inside, its message headed by ``flag``."""
    try:
        yield
    except ValueError as err:
        raise ValueError(f"{flag}: {err}") from None


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``jaxnn experiment NAME [--quick] [--plot DIR] [--seed S] [overrides]``.

    Returns the exit status.  Options and settings that cannot run are
    refused before any work: one line on stderr, ``jaxnn experiment: error:
    ...``, and status 2 (argparse's refusals raise it as SystemExit).  A
    reader of stdout gone (``... | head``) ends the command quietly with
    status 141.
    """
    return command(argv)


def command(argv: Optional[Sequence[str]] = None, *, around_run: Callable = contextlib.nullcontext) -> int:
    """:func:`main`, with ``around_run()`` (a context manager: ``jaxnn``'s
    compilation cache) entered for the run only, once the options are checked."""
    return quiet_on_broken_pipe(lambda: _command(argv, around_run))


def _command(argv: Optional[Sequence[str]], around_run: Callable) -> int:
    parser = OneLineErrorParser(
        prog="jaxnn experiment",
        description="Reproduce a paper experiment and print its table. "
        + "; ".join(f"{n}: {text}" for n, text in _DESCRIPTIONS.items()) + ".",
    )
    parser.add_argument("name", metavar="NAME", help=f"one of: {', '.join(EXPERIMENTS)}")
    parser.add_argument("--quick", action="store_true", help="small version (4 s to 4 minutes on two CPU cores)")
    parser.add_argument("--plot", metavar="DIR", default=None, help="write PNG figures to DIR (needs matplotlib)")
    parser.add_argument("--seed", type=_seed, default=0, help=f"base random seed (default 0, at most {MAX_SEED})")
    parser.add_argument("--no-progress", "--quiet", dest="no_progress", action="store_true",
                        help="no progress on stderr (a bar on a terminal, one line a step otherwise)")
    parser.add_argument("--save", metavar="FILE", default=None, help="pickle the result object to FILE (uci: after every domain)")
    for flag, (dest, typ, names, text) in _OPTIONS.items():
        parser.add_argument(flag, dest=dest, type=typ, default=None, help=f"{text} ({'/'.join(names)} only)")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.name not in EXPERIMENTS:
        parser.error(f"unknown experiment {args.name!r}; choose from: {', '.join(EXPERIMENTS)}")
    options = {}
    for flag, (dest, _, names, _) in _OPTIONS.items():
        value = getattr(args, dest)
        if value is None:
            continue
        if args.name not in names:
            parser.error(f"{flag} does not apply to {args.name!r} (only to {', '.join(names)})")
        options[dest] = value
    if args.name == "uci" and options.get("folds") == 1:
        parser.error("--folds: uci cross-validates: at least 2 folds")
    if any(not 0.0 < t <= 1.0 for t in options.get("thetas", ())):
        parser.error(f"--thetas: each θ must lie in (0, 1], got {options['thetas']}")
    if args.save is not None:
        folder = os.path.dirname(os.path.abspath(args.save))
        if os.path.isdir(args.save) or not os.path.isdir(folder):
            parser.error(f"--save: {args.save!r} is a folder or its folder does not exist: give a file path")
        try:  # writable? (found out only after the run, which the traceback then lost); a scratch
            with tempfile.TemporaryFile(dir=folder):  # file, not <save>.tmp, which may be the user's
                pass
        except OSError as err:
            parser.error(f"--save: cannot write {args.save!r}: {err.strerror or err}")
        if os.path.isdir(f"{args.save}.tmp"):  # the result is written there first, then renamed
            parser.error(f"--save: {args.save + '.tmp'!r} is a folder")
    if args.plot is not None and os.path.exists(args.plot) and not os.path.isdir(args.plot):
        parser.error(f"--plot: {args.plot!r} exists and is not a folder")
    if "domains" in options:
        try:
            options["domains"] = check_domains(options["domains"])
        except ValueError as err:
            parser.error(f"--domains: {err}")
    try:  # the settings against the data they choose: the errors of the run's own checks, found before it
        _check_settings(args.name, args.quick, args.seed, options)
    except ValueError as err:
        return _refuse(parser, str(err))
    if args.plot is not None:
        try:
            require_matplotlib()
            os.makedirs(args.plot, exist_ok=True)
            with tempfile.TemporaryFile(dir=args.plot):
                pass
        except ImportError as err:
            parser.error(f"--plot: {err}")
        except OSError as err:
            parser.error(f"--plot: cannot write figures to {args.plot!r}: {err.strerror or err}")
    try:
        with around_run():
            run(args.name, quick=args.quick, plot_dir=args.plot, progress=not args.no_progress, seed=args.seed,
                save=args.save, **options)
    except BrokenPipeError:  # the reader of stdout went away: quiet_on_broken_pipe's
        raise
    except OSError as err:  # a figure or --save file that could not be written after all (a full disk)
        return _refuse(parser, str(err))
    return 0


def _refuse(parser: argparse.ArgumentParser, message: str) -> int:
    """Exit status 2 after one line on stderr, as the parser's own errors."""
    print(f"{parser.prog}: error: {one_line(message)}", file=sys.stderr)
    return 2
