"""The experiments by name and the ``jaxnn experiment`` command line: the
``EXPERIMENTS``, ``FORMATTERS`` and ``PLOTTERS`` registries, :func:`run`, the
option parsers and :func:`main`."""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from typing import Optional, Sequence

from jaxnn._src.experiments.common import _check_domains, _save
from jaxnn._src.experiments.feature_splits import format_splits, splits
from jaxnn._src.experiments.plots import _require_matplotlib, plot_posteriors, plot_ripley, plot_splits, plot_uci
from jaxnn._src.experiments.posterior_estimation import format_posteriors, posteriors
from jaxnn._src.experiments.pruning_curve import format_ripley, ripley
from jaxnn._src.experiments.uci_benchmark import format_uci, uci


EXPERIMENTS = {"ripley": ripley, "uci": uci, "posteriors": posteriors, "splits": splits}
FORMATTERS = {"ripley": format_ripley, "uci": format_uci, "posteriors": format_posteriors, "splits": format_splits}
PLOTTERS = {"ripley": plot_ripley, "uci": plot_uci, "posteriors": plot_posteriors, "splits": plot_splits}


_DESCRIPTIONS = {
    "ripley": "test error vs θ for pruned UNN/GNNB and k-NN on random samples (paper 001 Fig. 2)",
    "uci": "cross-validated accuracy, F, recall and times of 10 contenders on UCI domains (papers 000/001)",
    "posteriors": "KL divergence to the true posteriors on 3 Gaussians vs σ (paper 003 Table 3)",
    "splits": "divide and conquer over n feature blocks with three generalised means (paper 000 §6.4)",
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
        _require_matplotlib()
        os.makedirs(plot_dir, exist_ok=True)
    if save is not None and name == "uci":
        options["save"] = save
    result = EXPERIMENTS[name](quick=quick, seed=seed, progress=progress, **options)
    FORMATTERS[name](result, out=out)  # the table first: a save that fails loses nothing printed
    print(f"({name}{' --quick' if quick else ''}: wall time {result.seconds:.1f} s)", file=out)
    if save is not None:
        _save(result, save)
    if plot_dir is not None:
        for path in PLOTTERS[name](result, plot_dir):
            print(f"wrote {path}", file=out)
    out.flush()
    return result


def _int_at_least(low: int):
    """An argparse type: an integer >= ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {value}")
        return value

    return parse


_positive_int, _seed = _int_at_least(1), _int_at_least(0)


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


def _str_list_raw(text: str) -> tuple:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _str_list(text: str) -> tuple:
    return _distinct(_str_list_raw(text), text)


#: command-line overrides → (keyword, parser, experiments accepting it)
_OPTIONS = {
    "--folds": ("folds", _positive_int, ("uci", "splits"), "cross-validation folds (splits: 1 = one 70/30 split)"),
    "--ks": ("ks", _int_list, ("uci", "posteriors"), "comma-separated k values"),
    "--domains": ("domains", _str_list, ("uci", "splits"), "comma-separated domain names"),
    "--methods": ("methods", _str_list, ("uci", "posteriors"), "comma-separated contender names"),
    "--seeds": ("n_seeds", _positive_int, ("posteriors",), "replicate seeds per σ"),
    "--sigmas": ("sigmas", _float_list, ("posteriors",), "comma-separated σ values"),
    "--thetas": ("thetas", _float_list, ("ripley",), "comma-separated θ values"),
    "--draws": ("n_draws", _positive_int, ("ripley",), "random k-NN samples per θ"),
    "--n-splits": ("n_splits", _int_list, ("splits",), "comma-separated block counts"),
    "--extra-ks": ("extra_ks", _int_list, ("uci",), "k values for GNNB(mat), GNNB(squared), N3(hinge)"),
}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``jaxnn experiment NAME [--quick] [--plot DIR] [--seed S] [overrides]``."""
    parser = argparse.ArgumentParser(
        prog="jaxnn experiment",
        description="Reproduce a paper experiment and print its table. "
        + "; ".join(f"{n}: {text}" for n, text in _DESCRIPTIONS.items()) + ".",
    )
    parser.add_argument("name", metavar="NAME", help=f"one of: {', '.join(EXPERIMENTS)}")
    parser.add_argument("--quick", action="store_true", help="small version (4-90 s on two CPU cores)")
    parser.add_argument("--plot", metavar="DIR", default=None, help="write PNG figures to DIR (needs matplotlib)")
    parser.add_argument("--seed", type=_seed, default=0, help="base random seed (default 0)")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
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
            options["domains"] = _check_domains(options["domains"])
        except ValueError as err:
            parser.error(f"--domains: {err}")
    try:
        run(args.name, quick=args.quick, plot_dir=args.plot, progress=not args.no_progress, seed=args.seed,
            save=args.save, **options)
    except ImportError as err:
        print(f"jaxnn experiment: {err}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as err:  # OSError: a figure or --save file that cannot be written
        print(f"jaxnn experiment: {err}", file=sys.stderr)
        return 2
    return 0
