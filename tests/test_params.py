"""The declared argument constraints (``jaxnn._src.params.PARAMS``), tried at
every entry point that takes the argument: each bad value the declaration
implies is refused with a TypeError or ValueError naming the argument.  The
cases are generated from the declaration table, so a new declaration is
tried at every entry point that takes it, and an entry point listed in
``ENTRIES`` is tried with every declaration it takes."""

from __future__ import annotations

import inspect
import math
import re

import numpy as np
import pytest

import jaxnn
from jaxnn import ensemble as ens
from jaxnn._src import ensemble as ens_src
from jaxnn._src.params import PARAMS, Bool, Options, check

M = 40  # training points of every call: each bad value is refused before any search
_rng = np.random.default_rng(0)
X = _rng.normal(size=(M, 3)).astype(np.float32)
y = np.arange(M) % 2


def _estimator_entry():
    try:
        from jaxnn.sklearn import BoostedKNNClassifier
    except ImportError:  # the optional sklearn extra: its entry point is not there to try
        return None
    return (lambda **kw: BoostedKNNClassifier(**{"k": 3, **kw}).fit(X, y),
            set(BoostedKNNClassifier().get_params()), {})


#: entry point → (a call with the keywords given, valid otherwise; the keywords it takes;
#: {declared name: the keyword that reads it}, where they differ).  select's ks and
#: passes are sequences of candidates: a bad value is tried as the one candidate
ENTRIES = {
    "fit": (lambda **kw: jaxnn.fit(X, y, **{"k": 3, "posterior": "link", "shrinkage": None, **kw}),
            set(inspect.signature(jaxnn.fit).parameters), {}),
    "select": (lambda **kw: jaxnn.select(X, y, **{"ks": (3,), "losses": ("logistic",), "passes": (1,),
                                                   **{key: (v,) if key in ("ks", "passes") else v
                                                      for key, v in kw.items()}}),
               set(inspect.signature(jaxnn.select).parameters), {"k": "ks"}),
    "fit_split": (lambda **kw: ens.fit_split(X, y, n_splits=1, **{"k": 3, **kw}),
                  set(inspect.signature(ens.fit_split).parameters) | set(ens_src._FIT_KEYS), {}),
    "fit_preparation": (lambda **kw: jaxnn.tabular.fit_preparation({"x": [1.0, 2.0]}, **kw),
                        set(inspect.signature(jaxnn.tabular.fit_preparation).parameters), {}),
    "ols": (lambda **kw: jaxnn.ols(X, y, **kw), set(inspect.signature(jaxnn.ols).parameters), {}),
    "ols_init": (lambda **kw: jaxnn.ols_init(**{"n_features": 3, "classes": [0, 1], **kw}),
                 set(inspect.signature(jaxnn.ols_init).parameters), {}),
    # weak="knn": the kind that reads k (k < m); the others take any k >= 1
    "uls": (lambda **kw: jaxnn.uls(X, y, **{"rounds": 2, "weak": "knn", **kw}), set(inspect.signature(jaxnn.uls).parameters),
            {}),
    "udt": (lambda **kw: jaxnn.udt(X, y, **kw), set(inspect.signature(jaxnn.udt).parameters), {}),
}
if _estimator_entry() is not None:
    ENTRIES["BoostedKNNClassifier"] = _estimator_entry()


def _keyword(entry: str, name: str):
    """The keyword of ``entry`` that reads the declaration ``name``, or None."""
    _, takes, aliases = ENTRIES[entry]
    keyword = aliases.get(name, name)
    return keyword if keyword in takes else None


def bad_values(constraint, below_taken: bool) -> list:
    """(value, the error it must raise) for each kind of value ``constraint``
    refuses: wrong types, values past each end (an open end itself), and
    the data's bound where the entry point reads it (k = m)."""
    if isinstance(constraint, Bool):
        return [("yes", TypeError), (1, TypeError), (None, TypeError)]
    if isinstance(constraint, Options):
        strings = all(isinstance(v, str) for v in constraint.values)
        return [("nope", ValueError), (3, TypeError if strings else ValueError),
                (np.array(["auto"]), TypeError if strings else ValueError)]
    bad = [("3", TypeError), (True, TypeError), ([3], TypeError)]
    if constraint.kind == "integer":
        bad.append((2.5, TypeError))
        if constraint.low is not None:
            bad.append((int(constraint.low) - 1, ValueError))
        if constraint.high is not None:
            bad.append((int(constraint.high) + 1, ValueError))
        if constraint.below and below_taken:
            bad.append((M, ValueError))
    else:
        bad.append((math.nan, ValueError))
        low_open, high_open = constraint.closed in ("right", "neither"), constraint.closed in ("left", "neither")
        if constraint.low is not None:
            bad.append((constraint.low if low_open else constraint.low - 1, ValueError))
        if constraint.high is not None:
            bad.append((constraint.high if high_open else constraint.high + 1, ValueError))
    return bad


CASES = [(name, entry) for name in PARAMS for entry in ENTRIES if _keyword(entry, name) is not None]


@pytest.mark.parametrize("name, entry", CASES, ids=[f"{entry}-{name}" for name, entry in CASES])
def test_every_entry_point_refuses_each_declared_bad_argument_by_name(name, entry):
    call = ENTRIES[entry][0]
    keyword = _keyword(entry, name)
    constraint = PARAMS[name]
    below_taken = keyword == name  # select drops candidate ks past its training part
    for value, error in bad_values(constraint, below_taken):
        with pytest.raises(error, match=rf"\b{re.escape(keyword)}\b") as raised:
            call(**{keyword: value})
        if isinstance(constraint, Options) and error is ValueError:  # the allowed values are named
            assert repr(constraint.values[0]) in str(raised.value), (value, str(raised.value))


def test_every_declaration_is_read_by_an_entry_point():
    unread = [name for name in PARAMS if not any(_keyword(entry, name) for entry in ENTRIES)]
    assert not unread, unread


def test_check_returns_the_value_as_declared_and_words_each_kind():
    assert check("k", np.int64(3), below=M) == 3 and type(check("k", np.int64(3))) is int
    assert check("epsilon", np.float32(0.25)) == 0.25 and check("trace", np.bool_(True)) is True
    assert check("shrinkage", None) is None and check("chooser", "lazy") == "lazy"
    with pytest.raises(ValueError, match=r"^k must be < the number of training points \(40\), got k=40$"):
        check("k", 40, below=M)
    with pytest.raises(ValueError, match=r"^each of ks must be >= 1, got 0$"):
        check("k", 0, label="each of ks")
    with pytest.raises(ValueError, match=r"^shrinkage must be None or 'auto', got 'yes'$"):
        check("shrinkage", "yes")
    with pytest.raises(ValueError, match=r"^unknown graph_method 'approx' for fit_split; use one of "
                                         r"\('exact', 'nndescent'\)$"):
        check("graph_method", "approx", among=("exact", "nndescent"), where=" for fit_split")
    with pytest.raises(ValueError, match=r"^unknown posterior 'lnk'; use one of \('auto', 'link', 'votes'\) — "
                                         r"did you mean 'link'\?$"):
        check("posterior", "lnk")
    with pytest.raises(ValueError, match=r"^epsilon must be finite and lie in \(0, 1\), got 1$"):
        check("epsilon", 1)


def test_fit_split_refuses_the_graph_method_its_batched_search_lacks():
    with pytest.raises(ValueError, match=r"unknown graph_method 'approx' for fit_split; "
                                         r"use one of \('exact', 'nndescent'\)"):
        ens.fit_split(X, y, n_splits=2, k=3, graph_method="approx")
