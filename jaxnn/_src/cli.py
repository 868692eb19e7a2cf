"""Command line: ``jaxnn demo`` (the main job), ``jaxnn experiment NAME``,
and for a user's own tables ``jaxnn fit``, ``predict``, ``evaluate`` and
``datasets`` (reading through :mod:`jaxnn._src.tabular`)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from typing import Callable, Sequence

import numpy as np

__all__ = ["main", "demo", "demo_intro", "compilation_cache_dir", "OneLineErrorParser", "one_line",
           "quiet_on_broken_pipe", "BROKEN_PIPE_STATUS", "UserError", "COLUMNS_SUFFIX"]


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
    """Where jaxnn keeps XLA's compiled programs between runs, or None:
    :func:`jaxnn.config.default_cache_dir` — ``$JAXNN_CACHE_DIR`` (empty: no
    cache), else ``$XDG_CACHE_HOME/jaxnn/xla``, else ``~/.cache/jaxnn/xla``.
    The library and the command line share it (:mod:`jaxnn._src.config`).
    """
    from jaxnn._src import config

    return config.default_cache_dir(environ)


def _use_compilation_cache() -> bool:
    """jaxnn's compilation cache on (:func:`jaxnn._src.config.use_default_cache`:
    ``import jaxnn`` turned it on already unless the environment, the user's
    own JAX cache or ``jaxnn.config.set_cache_dir`` says otherwise); a folder
    that cannot be made or written is reported on stderr.  Returns whether it
    is on."""
    from jaxnn._src import config

    return config.use_default_cache(report=lambda line: print(line, file=sys.stderr))


@contextlib.contextmanager
def _compilation_cache():
    """:func:`_use_compilation_cache` around a command.  The cache is the
    library's, on for the whole process (``jaxnn.config``), so ``cli.main``
    called in-process leaves JAX's settings as the library has them."""
    _use_compilation_cache()
    yield


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

Time: about 30-40 s the first time on 2 shared CPU cores (mostly XLA
compilation), about 5 s once the compiled programs are cached (--quick: about
20-25 s and 3 s).  The cache lives in $JAXNN_CACHE_DIR (set it empty for no cache), else
$XDG_CACHE_HOME/jaxnn/xla, else ~/.cache/jaxnn/xla; a JAX_COMPILATION_CACHE_DIR
you set takes precedence.
"""


def demo_intro(*, k: int = 10, quick: bool = False) -> str:
    """The demo's first line: what it runs, printed before anything is compiled."""
    uci = _DEMO_UCI_QUICK if quick else _DEMO_UCI
    return (f"jaxnn demo: k-NN, GNNB, UNN, N3, SGD, linear SVM (k={k}) on Ripley (250 train / 1000 test) + "
            f"{len(uci)} UCI sets ({', '.join(uci)}; 70/30 split); test accuracy (fit seconds) per domain; "
            f"{'~20-25 s' if quick else '~30-40 s'} on 2 CPU cores when compiling, "
            f"{'~3 s' if quick else '~5 s'} with cached compiled programs")


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
            # the papers' rules (boosting's α), accuracy only: no auxiliary fit
            return jaxnn.fit(Xtr, ytr, k=k, posterior="link", shrinkage=None, **kw)

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


# --------------------------------------------------------------------------
# your own data: jaxnn fit / predict / evaluate / datasets
# --------------------------------------------------------------------------
class UserError(Exception):
    """A mistake of the user's (a file, a column, a value, an option): its
    message becomes the one line ``jaxnn COMMAND: error: MESSAGE``, status 2."""


#: the sidecar beside a model that ``jaxnn fit`` writes: the feature columns, by name
COLUMNS_SUFFIX = ".columns.json"
_COLUMNS_FORMAT = "jaxnn-columns"

_ALGORITHMS = ("gnnb", "unn", "unn_fast", "n3")

#: ``jaxnn fit --model``: the model options each model takes (beyond the table's and --seed)
_MODEL_OPTIONS = {"knn": ("k", "algorithm", "loss", "chooser", "rounds", "posterior", "shrinkage", "metric"),
                  "uls": ("k", "loss", "weak", "rounds"), "udt": ("loss", "max_depth"), "ols": ("loss",)}
#: the options whose default is None on the parser, with the value a model takes by default
_MODEL_DEFAULTS = {"k": 10, "algorithm": "gnnb", "loss": None, "weak": None, "max_depth": None, "chooser": "auto",
                   "rounds": None, "posterior": "auto", "shrinkage": "auto", "metric": "none"}

_FIT_DESCRIPTION = """\
Fit a classifier on a table and save it: the boosted k-NN rule, or with
--model one of paper 004's family (uls: boosted rules, udt: a decision
tree grown by the loss's φ, ols: an on-line p-norm linear model).  DATA is a CSV file
with a header line (comma-separated; any column order) or a Parquet file
(needs pandas and pyarrow: pip install "jaxnn[io]").  --target names the
class column (text or numbers); every other column is a feature, or
--features chooses them.  The table is prepared first, as the options say
(fitted on these rows, stored in the model file, applied alike by predict
and evaluate): numeric columns standardised (--scale), text columns
one-hot encoded (--categorical), missing values refused or filled
(--impute).  Writes the model (jaxnn.save's format, with the preparation:
jaxnn.load reads the model, jaxnn.tabular.load both) and, beside it,
MODEL.columns.json: the feature column names, which predict and evaluate
read the new data by.
"""

_FIT_EPILOG = """\
example:
  jaxnn fit train.csv --target species -o iris.jaxnn
  jaxnn fit train.csv --target species --features sepal_length,petal_length --k 5 --loss matsushita -o iris.jaxnn
  jaxnn fit survey.csv --target answer --scale robust --impute median -o survey.jaxnn
  jaxnn fit train.csv --target species --model udt --loss matsushita --max-depth 4 -o tree.jaxnn
"""

_PREDICT_DESCRIPTION = """\
Predict the class of every row of DATA (CSV or Parquet) with a model
from jaxnn fit.  The features are read by the column names recorded at
fit time (MODEL.columns.json): any column order, other columns ignored;
they are prepared as the training table was (scaled, encoded, filled).
A category a text column did not hold at fit time is encoded as zeros,
with one warning per column on stderr.
Writes a CSV: one column of labels named after the target, or with
--proba one probability column per class, p_<class>.
"""

_PREDICT_EPILOG = """\
example:
  jaxnn predict iris.jaxnn new.csv -o labels.csv
  jaxnn predict iris.jaxnn new.csv --proba        # to stdout: p_setosa,p_versicolor,p_virginica
"""

_EVALUATE_DESCRIPTION = """\
Score a model from jaxnn fit on labelled data (CSV or Parquet): accuracy,
log loss (natural log, probabilities floored at 1e-15), Brier score (sum
over classes, in [0, 2]) and the confusion matrix (rows: true class,
columns: predicted class).  --target defaults to the target column the
model was fit on.  --plot FILE writes a reliability diagram (needs
matplotlib: pip install "jaxnn[plot]"), in the format of FILE's extension.
"""

_EVALUATE_EPILOG = """\
example:
  jaxnn evaluate iris.jaxnn test.csv
  jaxnn evaluate iris.jaxnn test.csv --target species --plot reliability.png
"""

_DATASETS_DESCRIPTION = """\
List the bundled data sets (name, rows, features, classes), or export one
as a CSV with a header: feature columns x1 … xd, then the class column
named target.
"""

_DATASETS_EPILOG = """\
example:
  jaxnn datasets
  jaxnn datasets iris -o iris.csv
  jaxnn fit iris.csv --target target -o iris.jaxnn
"""


_MAIN_EPILOG = """\
your own data (jaxnn COMMAND --help for each):
  jaxnn datasets iris -o iris.csv
  jaxnn fit iris.csv --target target -o iris.jaxnn
  jaxnn predict iris.jaxnn iris.csv -o labels.csv
  jaxnn evaluate iris.jaxnn iris.csv
"""


def _whole(text: str, low: int, high: int | None, auto: bool = False):
    """An argparse type: a whole number in [low, high], or "auto" where allowed."""
    if auto and text.strip() == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        span = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise argparse.ArgumentTypeError(f"must be a whole number {span}{' or auto' if auto else ''}, got {text!r}")
    return value


def _add_parser(sub, name: str, help: str, description: str, epilog: str):
    return sub.add_parser(name, help=help, description=description, epilog=epilog,
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def _add_data_commands(sub) -> dict:
    """The fit, predict, evaluate and datasets subparsers."""
    from jaxnn._src import prepare
    from jaxnn._src.params import PARAMS
    p_fit = _add_parser(sub, "fit", "fit a classifier on a CSV or Parquet table and save it", _FIT_DESCRIPTION,
                        _FIT_EPILOG)
    p_fit.add_argument("data", metavar="DATA", help="CSV (with a header) or Parquet file")
    p_fit.add_argument("--target", required=True, metavar="COL", help="the class column")
    p_fit.add_argument("--features", metavar="A,B,C", help="feature columns (default: every other column)")
    p_fit.add_argument("--model", choices=tuple(_MODEL_OPTIONS), default="knn",
                       help="knn: the boosted k-NN rule (jaxnn.fit); uls: boosted rules (jaxnn.uls); udt: a "
                            "decision tree (jaxnn.udt); ols: an on-line p-norm linear model (jaxnn.ols) (default knn)")
    p_fit.add_argument("--k", type=lambda t: _whole(t, 1, None, auto=True), default=None,
                       help="neighbours, or auto (default 10; knn and uls --weak knn)")
    p_fit.add_argument("--algorithm", choices=_ALGORITHMS, default=None, help="knn only (default gnnb)")
    p_fit.add_argument("--loss", default=None, metavar="L",
                       help="a jaxnn.losses name (logistic, matsushita, exponential, squared, calibrated_hinge, "
                            "phi_mu(0.5), …) or, for knn, auto (default: logistic; udt: squared, the Gini index)")
    p_fit.add_argument("--weak", default=None, metavar="KIND",
                       help="uls only: weak hypotheses, rules, linear or knn, or a comma list (default rules)")
    p_fit.add_argument("--max-depth", type=lambda t: _whole(t, 1, None), default=None, dest="max_depth",
                       help="udt only: the tree's largest depth (default: grown until its leaves are pure)")
    p_fit.add_argument("--chooser", choices=PARAMS["chooser"].values, default=None, help="knn only (default auto)")
    p_fit.add_argument("--rounds", type=lambda t: _whole(t, 1, 2**31 - 1, auto=True), default=None,
                       help="knn: boosting steps per class (default: one pass, the number of rows); uls: rules or "
                            "steps per class (default auto: as many as held-out data say help); or auto")
    p_fit.add_argument("--posterior", choices=PARAMS["posterior"].values, default=None,
                       help="knn only: how probabilities are estimated (default auto)")
    p_fit.add_argument("--shrinkage", choices=("none", "auto"), default=None,
                       help="knn only: auto: leverages shrunk toward one value as held-out data say; none: "
                            "boosting's own (with --posterior link or votes, no held-out fit) (default auto)")
    p_fit.add_argument("--metric", choices=("none", "nca"), default=None,
                       help="knn only: none: the Euclidean distance of the features; nca: a metric learned first "
                            "by neighbourhood components analysis (default none)")
    p_fit.add_argument("--scale", choices=prepare.SCALES, default="standard",
                       help="numeric columns: standard (mean 0, standard deviation 1), robust (median 0, "
                            "interquartile range 1) or none, fitted on DATA (default standard)")
    p_fit.add_argument("--impute", choices=prepare.IMPUTES, default="none",
                       help="missing values: none (an error), or filled with the column's median or most frequent "
                            "value in DATA (a text column: its most frequent category) (default none)")
    p_fit.add_argument("--categorical", choices=prepare.CATEGORICALS, default="onehot",
                       help="text columns: onehot (a 0/1 feature per category in DATA) or error (default onehot)")
    p_fit.add_argument("--seed", type=lambda t: _whole(t, 0, 2**32 - 1), default=0, help="default 0")
    p_fit.add_argument("-o", "--output", required=True, metavar="MODEL", help="the model file to write (.jaxnn)")
    p_fit.add_argument("--quiet", action="store_true", help="no summary line")

    p_predict = _add_parser(sub, "predict", "predict the labels (or probabilities) of a table's rows",
                            _PREDICT_DESCRIPTION, _PREDICT_EPILOG)
    p_predict.add_argument("model", metavar="MODEL", help="a model file from jaxnn fit")
    p_predict.add_argument("data", metavar="DATA", help="CSV (with a header) or Parquet file")
    p_predict.add_argument("--proba", action="store_true", help="class probabilities instead of labels")
    p_predict.add_argument("-o", "--output", default="-", metavar="OUT.csv", help="where to write (default -: stdout)")
    p_predict.add_argument("--quiet", action="store_true", help="no summary line")

    p_eval = _add_parser(sub, "evaluate", "accuracy, log loss, Brier score and confusion matrix on labelled data",
                         _EVALUATE_DESCRIPTION, _EVALUATE_EPILOG)
    p_eval.add_argument("model", metavar="MODEL", help="a model file from jaxnn fit")
    p_eval.add_argument("data", metavar="DATA", help="CSV (with a header) or Parquet file")
    p_eval.add_argument("--target", metavar="COL", help="the class column (default: the one the model was fit on)")
    p_eval.add_argument("--plot", metavar="FILE", help="write a reliability diagram (png, pdf, svg, …)")
    p_eval.add_argument("--quiet", action="store_true", help="the table only")

    p_data = _add_parser(sub, "datasets", "list the bundled data sets, or export one as CSV", _DATASETS_DESCRIPTION,
                         _DATASETS_EPILOG)
    p_data.add_argument("name", nargs="?", metavar="NAME", help="a data set to export")
    p_data.add_argument("-o", "--output", default="-", metavar="FILE.csv", help="where to write (default -: stdout)")
    p_data.add_argument("--quiet", action="store_true", help="no summary line")
    return {"fit": p_fit, "predict": p_predict, "evaluate": p_eval, "datasets": p_data}


def _data_command(args) -> int:
    return {"fit": _fit_command, "predict": _predict_command, "evaluate": _evaluate_command,
            "datasets": _datasets_command}[args.command](args)


def _check_output(path: str, option: str = "-o") -> None:
    """A UserError, before any work, unless ``path`` can be written: its
    folder exists and it is not a folder."""
    if os.path.isdir(path):
        raise UserError(f"{option} {path!r} is a directory: give a file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UserError(f"{option} {path!r}: no directory {folder!r}")
    if not os.access(folder, os.W_OK):
        raise UserError(f"{option} {path!r}: the directory {folder!r} is not writable")


@contextlib.contextmanager
def _output(path: str):
    """The open text file to write to: stdout for ``-``."""
    if path == "-":
        yield sys.stdout
        return
    try:
        f = open(path, "w", encoding="utf-8", newline="")
    except OSError as err:
        raise UserError(f"-o {path!r} cannot be written ({err.strerror or err})") from None
    with f:
        yield f


def _table(path: str):
    from jaxnn._src import tabular

    try:
        return tabular.read_table(path)
    except tabular.TableError as err:
        raise UserError(str(err)) from None


def _check_loss(name: str):
    if name == "auto":
        return name
    from jaxnn import losses

    try:
        losses.get(name)
    except ValueError as err:
        raise UserError(f"argument --loss: {err}") from None
    return name


def _short_list(values, limit: int = 6) -> str:
    values = [str(v) for v in values]
    return ", ".join(values[:limit]) + (f", … ({len(values)} in all)" if len(values) > limit else "")


def _fit_command(args) -> int:
    from jaxnn._src import prepare, tabular

    _check_output(args.output)
    _check_output(args.output + COLUMNS_SUFFIX)
    _check_model_options(args)
    loss = None if args.loss is None else _check_loss(args.loss)
    if loss == "auto" and args.model != "knn":
        raise UserError(f"argument --loss: auto chooses among losses for --model knn only; give --model {args.model} "
                        "one loss")
    table = _table(args.data)
    try:
        features = None if args.features is None else tabular.split_names(args.features)
        names = tabular.feature_columns(table, args.target, features)
        y = tabular.parse_labels(tabular.target_labels(table, args.target))
        preparation = prepare.fit_preparation(table, names, scale=args.scale, impute=args.impute,
                                              categorical=args.categorical)
        X = prepare.apply(preparation, table)
    except tabular.TableError as err:
        raise UserError(str(err)) from None
    classes = np.unique(y)
    if len(classes) < 2:
        raise UserError(f"the target column {args.target!r} of {args.data!r} holds one class ({str(classes[0])!r}) "
                        "in all its rows: a classifier needs two or more")
    m = len(y)
    k = _MODEL_DEFAULTS["k"] if args.k is None else args.k
    if k != "auto" and k >= m and (args.model == "knn" or args.k is not None):
        raise UserError(f"argument --k: k = {k} must be smaller than the {m} rows of {args.data!r}")
    import jaxnn

    with _compilation_cache():
        try:
            model, seconds = _timed(lambda: _learn(args, X, y, loss, k))
        except ValueError as err:  # what the data cannot run (the messages name the setting)
            raise UserError(one_line(err)) from None
        accuracy = float(np.mean(np.asarray(jaxnn.predict(model, X)) == y))
    prepare.save(args.output, model, preparation)
    _write_columns(args.output + COLUMNS_SUFFIX, target=args.target, features=names)
    if not args.quiet:
        print(f"jaxnn fit: {m} rows, {len(names)} feature{'s' if len(names) > 1 else ''}, {len(classes)} classes "
              f"({_short_list(classes)}); {prepare.describe(preparation)}; "
              f"training accuracy {accuracy:.3f}; fit {seconds:.1f} s; wrote {args.output} "
              f"(+ {os.path.basename(args.output)}{COLUMNS_SUFFIX})")
    return 0


def _check_model_options(args) -> None:
    """A UserError naming an option given that ``--model`` does not take."""
    takes = _MODEL_OPTIONS[args.model]
    given = [name for name in _MODEL_DEFAULTS if name not in takes and getattr(args, name) is not None]
    if given:
        users = [model for model, names in _MODEL_OPTIONS.items() if given[0] in names]
        raise UserError(f"argument --{given[0].replace('_', '-')}: --model {args.model} does not take it (it is for "
                        f"--model {' or '.join(users)})")


def _learn(args, X, y, loss, k):
    """The model ``jaxnn fit --model`` asks for, fit on the prepared X and y."""
    import jaxnn

    def value(name):
        given = getattr(args, name)
        return _MODEL_DEFAULTS[name] if given is None else given

    own_loss = {} if loss is None else {"loss": loss}
    if args.model == "uls":
        weak = "rules" if args.weak is None else [w.strip() for w in args.weak.split(",")]
        weak = weak[0] if isinstance(weak, list) and len(weak) == 1 else weak
        return jaxnn.uls(X, y, weak=weak, rounds=None if args.rounds == "auto" else args.rounds, k=k,
                         seed=args.seed, **own_loss)
    if args.model == "udt":
        return jaxnn.udt(X, y, max_depth=args.max_depth, **own_loss)
    if args.model == "ols":
        return jaxnn.ols(X, y, seed=args.seed, **own_loss)
    return jaxnn.fit(X, y, k=k, loss="logistic" if loss is None else loss, algorithm=value("algorithm"),
                     rounds=args.rounds, chooser=value("chooser"), posterior=value("posterior"), seed=args.seed,
                     shrinkage=None if value("shrinkage") == "none" else "auto",
                     metric=None if value("metric") == "none" else value("metric"))


def _write_columns(path: str, *, target: str, features: list) -> None:
    import json

    text = json.dumps({"format": _COLUMNS_FORMAT, "version": 1, "target": target, "features": features}, indent=1)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    os.replace(tmp, path)


def _load_model(path: str):
    """(the model, its target column's name, its feature columns' names, its
    preparation) of ``path`` and the columns file ``jaxnn fit`` wrote beside
    it; a model file without a preparation (one that ``jaxnn fit`` wrote
    before it prepared tables) takes the columns as they are
    (:func:`jaxnn._src.prepare.identity`)."""
    import json

    import jaxnn
    from jaxnn._src import prepare

    try:
        model, preparation = prepare.load(path)
    except FileNotFoundError:
        raise UserError(f"{path!r}: no such model file") from None
    except IsADirectoryError:
        raise UserError(f"{path!r} is a directory, not a model file") from None
    except PermissionError as err:
        raise UserError(f"{path!r} cannot be read ({err.strerror})") from None
    except jaxnn.ModelFileError as err:
        raise UserError(one_line(err)) from None
    from jaxnn._src.family import FamilyModel

    single = isinstance(model, (jaxnn.Model, FamilyModel))
    if not single or model.multilabel:
        raise UserError(f"{path!r} holds a {'multilabel ' if single else ''}"
                        f"{type(model).__name__}: the command line predicts with single-label models from jaxnn fit")
    columns = path + COLUMNS_SUFFIX
    try:
        with open(columns, encoding="utf-8") as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise UserError(f"{columns!r} is missing: jaxnn fit writes the feature column names there, beside the model "
                        "(copy it along with the model)") from None
    except (OSError, ValueError) as err:
        raise UserError(f"{columns!r} cannot be read as the model's column names ({one_line(err)})") from None
    ok = (isinstance(meta, dict) and meta.get("format") == _COLUMNS_FORMAT and isinstance(meta.get("target"), str)
          and isinstance(meta.get("features"), list) and all(isinstance(n, str) for n in meta["features"]))
    if not ok:
        raise UserError(f"{columns!r} is not the column file jaxnn fit writes")
    names = meta["features"]
    if preparation is None:
        if len(names) != model.n_features:
            raise UserError(f"{columns!r} names {len(names)} feature columns, but the model {path!r} has "
                            f"{model.n_features} features: the two files are not of one fit")
        preparation = prepare.identity(names)
    elif tuple(names) != preparation.names:
        raise UserError(f"{columns!r} names the feature columns {_short_list(names)}, but the model {path!r} was fit "
                        f"on {_short_list(preparation.names)}: the two files are not of one fit")
    return model, meta["target"], names, preparation


def _model_features(table, names: list, preparation, model_path: str, command: str) -> np.ndarray:
    """The model's features of ``table``: its columns ``names`` prepared as
    at fit time; a category not seen then is a line ``jaxnn COMMAND:
    warning: …`` on stderr per column."""
    import warnings

    from jaxnn._src import prepare, tabular

    missing = [n for n in names if n not in table.columns]
    if missing:
        raise UserError(f"{table.path!r} lacks the feature column{'s' if len(missing) > 1 else ''} "
                        f"{', '.join(map(repr, missing))} that {model_path!r} was fit on (its features: "
                        f"{_short_list(names, 12)})")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", prepare.UnseenCategoryWarning)
            X = prepare.apply(preparation, table)
    except tabular.TableError as err:
        raise UserError(str(err)) from None
    for warning in caught:
        if issubclass(warning.category, prepare.UnseenCategoryWarning):
            print(f"jaxnn {command}: warning: {one_line(warning.message)}", file=sys.stderr)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return X


def _predict_command(args) -> int:
    from jaxnn._src import tabular

    if args.output != "-":
        _check_output(args.output)
    model, target, names, preparation = _load_model(args.model)
    X = _model_features(_table(args.data), names, preparation, args.model, "predict")
    import jaxnn

    with _compilation_cache():
        if args.proba:
            values = np.asarray(jaxnn.predict_proba(model, X))
            header = [f"p_{c}" for c in model.classes]
            rows = ([str(p) for p in row] for row in values)
        else:
            labels = np.asarray(jaxnn.predict(model, X))
            header = [target]
            rows = ([str(label)] for label in labels)
    with _output(args.output) as out:
        tabular.write_csv(out, header, rows)
    if args.output != "-" and not args.quiet:
        what = "class probabilities" if args.proba else "labels"
        print(f"jaxnn predict: {len(X)} rows; wrote their {what} to {args.output}")
    return 0


def _class_indices(texts: np.ndarray, classes, column: str, data: str) -> np.ndarray:
    """Each label text's column in ``classes`` (compared as text for text
    classes, as numbers for numeric ones); a UserError naming labels the
    model does not know."""
    numeric = np.asarray(classes).dtype.kind in "biuf"
    index = {(float(c) if numeric else str(c)): i for i, c in enumerate(classes)}
    out = np.empty(len(texts), dtype=np.int64)
    unknown = []
    for row, text in enumerate(texts):
        try:
            key = float(text) if numeric else str(text)
        except ValueError:
            key = None
        i = index.get(key)
        if i is None:
            if text not in unknown:
                unknown.append(str(text))
            continue
        out[row] = i
    if unknown:
        raise UserError(f"the target column {column!r} of {data!r} holds labels the model was not fit on: "
                        f"{_short_list(unknown)} (its classes: {_short_list(classes)})")
    return out


def _evaluate_command(args) -> int:
    from jaxnn._src import tabular

    if args.plot is not None:
        _check_plot(args.plot)
    model, fit_target, names, preparation = _load_model(args.model)
    target = fit_target if args.target is None else args.target
    table = _table(args.data)
    if target not in table.columns:
        raise UserError(f"{args.data!r} has no target column {target!r}{tabular.did_you_mean(target, table.columns)}"
                        f"{' (the column the model was fit on; choose another with --target)' if args.target is None else ''}; "
                        f"its columns: {tabular.list_names(table.columns)}")
    X = _model_features(table, names, preparation, args.model, "evaluate")
    try:
        texts = tabular.target_labels(table, target)
    except tabular.TableError as err:
        raise UserError(str(err)) from None
    y = _class_indices(texts, model.classes, target, args.data)
    import jaxnn

    with _compilation_cache():
        proba = np.asarray(jaxnn.predict_proba(model, X), dtype=np.float64)
        predicted = _class_indices(np.asarray(jaxnn.predict(model, X)).astype(str), model.classes, target, args.data)
        if args.plot is not None:
            _write_reliability(args.plot, model, X, np.asarray(model.classes)[y])
    C = len(model.classes)
    accuracy = float(np.mean(predicted == y))
    log_loss = float(-np.mean(np.log(np.clip(proba[np.arange(len(y)), y], 1e-15, 1.0))))
    brier = float(np.mean(np.sum((proba - np.eye(C)[y]) ** 2, axis=1)))
    confusion = np.zeros((C, C), dtype=np.int64)
    np.add.at(confusion, (y, predicted), 1)
    if not args.quiet:
        print(f"jaxnn evaluate: {args.model} on {args.data} ({len(y)} rows, target {target})")
    print(f"accuracy     {accuracy:.4f}")
    print(f"log loss     {log_loss:.4f}")
    print(f"Brier score  {brier:.4f}")
    print()
    print("confusion matrix (rows: true class, columns: predicted class)")
    names_, corner = [str(c) for c in model.classes], "true \\ predicted"
    first = max(len(corner), *(len(n) for n in names_))
    widths = [max(len(n), len(str(confusion[:, j].max()))) for j, n in enumerate(names_)]
    print(f"{corner:<{first}}" + "".join(f"  {n:>{w}}" for n, w in zip(names_, widths)))
    for i, n in enumerate(names_):
        print(f"{n:<{first}}" + "".join(f"  {confusion[i, j]:>{w}}" for j, w in enumerate(widths)))
    if args.plot is not None and not args.quiet:
        print(f"reliability diagram written to {args.plot}")
    return 0


def _check_plot(path: str) -> None:
    """Before any work: matplotlib is there, and ``path`` is a writable
    file in a format it writes."""
    _check_output(path, "--plot")
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise UserError('--plot needs matplotlib: pip install "jaxnn[plot]"') from None
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    formats = Figure().canvas.get_supported_filetypes()
    if ext not in formats:
        raise UserError(f"--plot {path!r}: give a file name ending in one of {', '.join('.' + f for f in sorted(formats))}")


def _write_reliability(path: str, model, X, y) -> None:
    from matplotlib.figure import Figure

    try:
        from jaxnn import plot
    except ImportError as err:
        raise UserError(f"--plot needs jaxnn.plot, which this jaxnn cannot import ({one_line(err)})") from None
    figure = Figure(figsize=(5, 5), layout="constrained")
    plot.reliability(model, X, y, ax=figure.add_subplot())
    figure.savefig(path)


def _datasets_command(args) -> int:
    from jaxnn import datasets
    from jaxnn._src import tabular

    if args.name is None:
        if args.output != "-":
            raise UserError("-o exports one data set: give its NAME (jaxnn datasets NAME -o FILE.csv)")
        rows = []
        for name in datasets.names():
            X, y = datasets.load(name)
            rows.append((name, str(X.shape[0]), str(X.shape[1]), str(len(np.unique(y)))))
        header = ("name", "rows", "features", "classes")
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        print(f"{header[0]:<{widths[0]}}" + "".join(f"  {h:>{w}}" for h, w in zip(header[1:], widths[1:])))
        for r in rows:
            print(f"{r[0]:<{widths[0]}}" + "".join(f"  {v:>{w}}" for v, w in zip(r[1:], widths[1:])))
        return 0
    if args.output != "-":
        _check_output(args.output)
    try:
        X, y = datasets.load(args.name)
    except ValueError as err:
        raise UserError(one_line(err)) from None
    header = [f"x{j + 1}" for j in range(X.shape[1])] + ["target"]
    with _output(args.output) as out:
        tabular.write_csv(out, header, ([*(str(v) for v in row), str(label)] for row, label in zip(X, y)))
    if args.output != "-" and not args.quiet:
        print(f"jaxnn datasets: wrote {args.name} ({X.shape[0]} rows, {X.shape[1]} features x1 … x{X.shape[1]}, "
              f"{len(np.unique(y))} classes in column target) to {args.output}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``jaxnn demo [--k K] [--quick]``, ``jaxnn experiment NAME ...`` and,
    for your own data, ``jaxnn fit / predict / evaluate / datasets``: the
    exit status.

    A user's mistake (a bad option value, settings no chosen data allow) is
    refused before any work starts: one line on stderr, ``jaxnn ...: error:
    ...``, and status 2 (returned, or raised as SystemExit by argparse).
    A reader of stdout gone (``jaxnn demo | head``) ends the command quietly
    with status :data:`BROKEN_PIPE_STATUS`.
    """
    return quiet_on_broken_pipe(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    parser = OneLineErrorParser(prog="jaxnn", description="Boosted nearest-neighbour classification in JAX.",
                                epilog=_MAIN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="boosted k-NN vs k-NN, SGD and linear SVM on bundled data",
                            description=_DEMO_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p_demo.add_argument("--k", type=int, default=10, help="neighbours (default 10)")
    p_demo.add_argument("--quick", action="store_true", help="fewer domains")
    sub.add_parser("experiment", help="reproduce a paper experiment: jaxnn experiment NAME --help", add_help=False)
    data_parsers = _add_data_commands(sub)
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
    try:
        return _data_command(args)
    except UserError as err:
        data_parsers[args.command].error(str(err))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
