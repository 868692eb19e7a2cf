"""The constraints of the entry points' arguments, each declared once.

:data:`PARAMS` maps an argument's name to its constraint — an
:class:`Interval` of integers or reals, :class:`Options` (a fixed set of
values) or :class:`Bool` — as scikit-learn's ``_param_validation`` declares
``Interval``, ``StrOptions`` and ``"boolean"``.  :func:`check` is the one
check of a declared argument: ``fit``, ``select``, ``fit_split`` and the
scikit-learn estimator (whose parameters go to ``fit``) all call it, and
its errors, worded in :mod:`jaxnn._src.checks`, name the argument and the
values it allows.  A new entry point's argument is one more line of
:data:`PARAMS`; ``tests/test_params.py`` then tries it at every entry
point that takes it.

Values that an entry point reads before the constraint applies (``k="auto"``,
``rounds=None``) are its own: it checks the rest.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

from jaxnn._src.checks import check_bool, check_integer, check_option, check_real
from jaxnn._src.graph import METHODS
from jaxnn._src.plan import CHOOSERS
from jaxnn._src.weak import KINDS

__all__ = ["Interval", "Options", "Bool", "PARAMS", "POSTERIORS", "SCALES", "IMPUTES", "CATEGORICALS", "LOSS_CHOICES",
           "LEAVES", "FAMILY_POSTERIORS", "check"]


class Interval(NamedTuple):
    """Numbers from ``low`` to ``high`` (None: unbounded).  ``kind``:
    ``"integer"`` (Python or NumPy integers, not bools: both ends belong)
    or ``"real"`` (finite real numbers; ``closed`` says which ends belong:
    ``"both"``, ``"left"``, ``"right"`` or ``"neither"``).  ``below``: what
    an exclusive upper bound known only with the data is, in words (given
    to :func:`check` as ``below=``)."""

    kind: str
    low: Optional[float] = None
    high: Optional[float] = None
    closed: str = "both"
    below: str = ""


class Options(NamedTuple):
    """One of ``values``: strings (any other type is a TypeError), or None
    among them (anything else is a ValueError listing them)."""

    values: tuple


class Bool(NamedTuple):
    """A Python or NumPy bool (``trace="no"`` is not taken as true)."""


#: ``posterior=``: how predict_proba estimates posteriors (:func:`jaxnn.fit`)
POSTERIORS = ("auto", "link", "votes")
#: a table's preparation (:func:`jaxnn.tabular.fit_preparation`, ``jaxnn fit``):
#: numeric columns' scaling, missing values, text columns
SCALES = ("standard", "robust", "none")
IMPUTES = ("none", "median", "most-frequent")
CATEGORICALS = ("onehot", "error")
#: ``posterior=`` of paper 004's family (:func:`jaxnn.uls`, :func:`jaxnn.udt`,
#: :func:`jaxnn.ols`): calibrated by a held-out temperature, or the loss's link
FAMILY_POSTERIORS = ("auto", "link")
#: ``leaves=`` of :func:`jaxnn.udt`: what a leaf predicts (paper 004 eq. 106, Theorem 4's proof)
LEAVES = ("posterior", "link", "leveraged")
#: ``loss_choice=`` of :func:`jaxnn.uls` with a bag of losses (paper 004 §7: F, E, F*)
LOSS_CHOICES = (None, "risk", "edge", "fold")

#: every declared argument's constraint, by the argument's name
PARAMS = {
    "k": Interval("integer", low=1, below="the number of training points"),
    "rounds": Interval("integer", low=1),
    "passes": Interval("integer", low=1),
    "epsilon": Interval("real", 0.0, 1.0, closed="neither"),
    "holdout": Interval("real", 0.0, 1.0, closed="neither"),
    "seed": Interval("integer", 0, 2**32 - 1),  # NumPy's and nndescent's random states
    "chooser": Options(("auto",) + tuple(CHOOSERS)),
    "graph_method": Options(tuple(METHODS)),
    "posterior": Options(POSTERIORS),
    "shrinkage": Options((None, "auto")),
    "trace": Bool(),
    "verbose": Bool(),
    "scale": Options(SCALES),
    "impute": Options(IMPUTES),
    "categorical": Options(CATEGORICALS),
    # ols, ols_init (paper 004 Algorithm 2)
    "n_features": Interval("integer", low=1),
    "p": Interval("real", 2.0, None, closed="left"),
    "eta": Interval("real", 0.0, None, closed="neither"),
    # uls (paper 004, Algorithm 1)
    "weak": Options(tuple(KINDS)),
    "loss_choice": Options(LOSS_CHOICES),
    "max_literals": Interval("integer", low=1),
    "corrective": Bool(),
    # udt (paper 004, Algorithm 3)
    "max_depth": Interval("integer", low=1),
    "min_samples_leaf": Interval("integer", low=1),
    "max_leaf_nodes": Interval("integer", low=2),
    "max_bins": Interval("integer", low=2),
    "leaves": Options(LEAVES),
}


def check(name: str, value, *, label: Optional[str] = None, among: Optional[tuple] = None, where: str = "",
          below: Optional[int] = None):
    """``value`` as :data:`PARAMS` [``name``] allows it (an int, a float, a
    bool or the option), else a TypeError or ValueError naming ``label``
    (default ``name``: ``"each of ks"`` names a candidate of a sequence).

    ``among``: the options this entry point accepts, a subset of the
    declared ones (``where`` names the entry point in the message: ``" for
    fit_split"``); ``below``: the exclusive upper bound of an Interval
    declared with ``below`` (k < m)."""
    constraint = PARAMS[name]
    label = name if label is None else label
    if isinstance(constraint, Bool):
        return check_bool(value, label)
    if isinstance(constraint, Options):
        return check_option(value, label, constraint.values if among is None else among, where=where)
    if constraint.kind == "integer":
        number = check_integer(value, label, low=constraint.low, high=constraint.high)
    else:
        number = check_real(value, label, low=-math.inf if constraint.low is None else constraint.low,
                            high=math.inf if constraint.high is None else constraint.high,
                            low_open=constraint.closed in ("right", "neither"),
                            high_open=constraint.closed in ("left", "neither"))
    if below is not None and number >= below:
        raise ValueError(f"{label} must be < {constraint.below} ({below}), got {label}={number}")
    return number
