"""Fuzzing the public API with malformed inputs.  Every input is listed with
what it must give: either a refusal — one of the documented exceptions
(TypeError, ValueError — ModelFileError and scikit-learn's NotFittedError are
ValueErrors — or FileNotFoundError / IsADirectoryError for a path) whose
message names the argument at fault — or an answer that is right for it
(labels among the model's classes, probabilities in [0, 1] summing to 1, the
same answer as for the input converted to float32, neighbours that are
distinct other points).  Never another exception, a crash or a NaN.  The
command line's fuzzing lives in tests/test_cli.py.

Cases are generated: a valid call with one argument replaced by a malformed
value, over two base problems (binary and 3-class), plus malformed files for
``jaxnn.load``.
"""

from __future__ import annotations

import itertools
import re
from typing import Callable, NamedTuple

import numpy as np
import pytest

import jaxnn

DOCUMENTED = (TypeError, ValueError, FileNotFoundError, IsADirectoryError)


class Refused(NamedTuple):
    """The call must raise a documented exception whose message names
    ``name`` (a whole word: the argument, or the file)."""
    name: str
    sklearn: bool = False  # or it is refused by scikit-learn's own input validation (the estimator's X)


class Accepted(NamedTuple):
    """The call must return; ``check(out)`` asserts that the answer is right."""
    check: Callable


# point arrays every entry point must refuse, naming the argument
REFUSED_POINTS = [
    None, "points", b"x", 3, 2.5, [], [[]], [[1, 2], [3]], [["a", "b"]] * 40, {"a": 1}, {1, 2},
    np.zeros(0), np.zeros((0, 3)), np.zeros((40, 0)), np.zeros((40, 3, 2)), np.float64(1.0), np.array(1.0),
    np.full((40, 3), np.nan), np.full((40, 3), np.inf), np.full((40, 3), -np.inf), np.ones((40, 3)) * 1e308,
    np.ones((40, 3), complex), np.ones((40, 3), object), np.array([[None] * 3] * 40, object),
    np.ones((40, 3), "datetime64[s]"), np.ones((40, 3), "timedelta64[s]"), np.array([["1", "2", "3"]] * 40),
]
# odd but valid point arrays: the answer is that of the same values in float32
ODD_DTYPE_POINTS = [
    np.ones((40, 3), np.float16), np.ones((40, 3), bool), np.ones((40, 3), np.uint8) * 255,
    np.arange(120, dtype=np.int64).reshape(40, 3) * 2**60,
]
# well-formed points of other row counts: refused by fit (y has 40 labels), valid queries
OTHER_ROWS_POINTS = [np.ones((39, 3)), np.ones((41, 3)), np.ones((1, 3)), np.ones((2, 3))]

# labels for 40 points that fit must refuse, naming y
REFUSED_LABELS = [
    None, "y", 3, [], np.zeros(0), np.zeros(39), np.zeros(41), np.zeros((40, 2, 2)), np.zeros(40),
    np.full(40, np.nan), np.array([0.0] * 38 + [np.nan, 1.0]), np.array([0] * 20 + [None] * 20, object),
    np.array([0.0] * 38 + [1.0, np.nan], object), np.array(["a"] * 20 + [1] * 20, object),
    np.ones(40, complex), np.array([{}] * 40, object), np.ones((40, 1)) * 2, np.full((40, 3), 0.5),
    np.ones((40, 3), "datetime64[s]"), np.array([np.inf] * 20 + [0.0] * 20),
]
# settings of fit it must refuse, naming the setting: (name, value)
REFUSED_SETTINGS = [
    ("k", v) for v in (0, -1, 40, 41, 10**9, 2.5, "3", None, True, np.nan, [3], -(2**63))
] + [
    ("loss", v) for v in ("nope", "", 3, None, object(), ["logistic"])
] + [
    ("algorithm", v) for v in ("nope", "", 3, None, object())
] + [
    ("rounds", v) for v in (0, -1, 2.5, "10", np.nan, np.inf, True, [40])
] + [
    ("chooser", v) for v in ("nope", "", 3, None, "Lazy")
] + [
    ("epsilon", v) for v in (0, 1, -0.5, 1.5, np.nan, np.inf, "0.5", None)
] + [
    ("seed", v) for v in (-1, 2.5, "0", None, np.nan, 2**70)
] + [
    ("graph_method", v) for v in ("nope", "", 3, None)
] + [
    ("trace", v) for v in ("yes", 2, None, np.nan)
] + [
    ("posterior", v) for v in ("nope", "", 3, None)
] + [
    ("devices", v) for v in (0, -1, 10**6, "some", [], ["cpu"], 2.5)
] + [
    ("neighbors", v) for v in ("nb", np.zeros((40, 3)), np.full((40, 3), 40), np.full((40, 3), -1),
                               np.zeros((39, 3), int), np.zeros((40, 1), int), np.zeros(40, int),
                               np.zeros((40, 3), complex), np.full((40, 3), np.nan))
] + [
    ("verbose", v) for v in ("loud", 2, None)
] + [
    ("metric", v) for v in ("nope", "", "NCA", 3, object(), np.ones((1, 1, 1)), np.full((50, 2), np.nan),
                            [[1j]], np.zeros((2, 0)), "nca\x00")
]


def _problem(n_classes: int, m: int = 40, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.arange(m) % n_classes
    X = rng.normal(size=(m, 3)) + np.eye(n_classes, 3)[y] * 2.0
    return X.astype(np.float32), y


# --------------------------------------------------------------------------
# what a right answer is
# --------------------------------------------------------------------------
def _check_prediction(fn, model, n: int) -> Callable:
    """``fn(model, ·)``'s answer for n queries: labels among the classes,
    probabilities in [0, 1] summing to 1, finite scores, of the right shapes."""
    C = len(model.classes)

    def check(out):
        out = np.asarray(out)
        if fn is jaxnn.predict:
            _check_labels(out, model.classes, n)
        else:
            assert out.shape == (n, C) and np.all(np.isfinite(out)), out
        if fn is jaxnn.predict_proba:
            assert np.all((out >= 0) & (out <= 1)), out
            np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-5)

    return check


def _check_labels(labels, classes, n: int) -> None:
    labels = np.asarray(labels)
    assert labels.shape == (n,) and set(labels.tolist()) <= set(classes), labels


def _same_as_float32(fn, bad, then: Callable | None = None) -> Callable:
    """The answer equals ``fn(bad as float32)`` (the documented conversion),
    and passes ``then``."""

    def check(out):
        want = fn(np.asarray(bad).astype(np.float32))
        for got, expected in zip(_arrays(out), _arrays(want)):
            np.testing.assert_array_equal(got, expected)
        if then is not None:
            then(out)

    return check


def _arrays(out) -> list[np.ndarray]:
    if isinstance(out, jaxnn.Model):
        return [np.asarray(out.alpha)]
    if hasattr(out, "indices"):
        return [np.asarray(out.indices)]
    return [np.asarray(out)]


def _check_fitted(X, n_classes: int) -> Callable:
    """A model of 40 points and ``n_classes`` classes whose predictions on
    its training points are labels among the classes and probabilities."""

    def check(model):
        assert model.classes == tuple(range(n_classes)) and np.asarray(model.alpha).shape == (40, n_classes)
        assert np.all(np.isfinite(np.asarray(model.alpha)))
        Xq = np.asarray(X, dtype=np.float32)
        _check_prediction(jaxnn.predict, model, 40)(jaxnn.predict(model, Xq))
        _check_prediction(jaxnn.predict_proba, model, 40)(jaxnn.predict_proba(model, Xq))

    return check


def _check_graph(n: int, k: int = 3) -> Callable:
    """k distinct neighbours a row among the n points, none the row itself."""

    def check(graph):
        idx = np.asarray(graph.indices)
        assert idx.shape == (n, k) and np.all((idx >= 0) & (idx < n)), idx
        assert not np.any(idx == np.arange(n)[:, None]), "a point is its own neighbour"
        assert all(len(set(row)) == k for row in idx.tolist()), "a row repeats a neighbour"

    return check


# --------------------------------------------------------------------------
# the cases: (name, call, expectation)
# --------------------------------------------------------------------------
def _cases_fit():
    for n_classes in (2, 3):
        X, y = _problem(n_classes)
        fit = lambda X_, y_=y, **kw: jaxnn.fit(X_, y_, k=3, posterior="link", **kw)  # noqa: E731
        for bad in REFUSED_POINTS:
            yield f"fit X={_short(bad)}", lambda bad=bad, fit=fit: fit(bad), Refused("X")
        for bad in OTHER_ROWS_POINTS:
            yield f"fit X={_short(bad)}", lambda bad=bad, fit=fit: fit(bad), Refused("y")  # "X and y have..."
        for bad in ODD_DTYPE_POINTS:
            yield (f"fit X={_short(bad)}", lambda bad=bad, fit=fit: fit(bad),
                   Accepted(_same_as_float32(fit, bad, _check_fitted(bad, n_classes))))
        for bad in REFUSED_LABELS:
            yield f"fit y={_short(bad)}", lambda bad=bad, X=X: jaxnn.fit(X, bad, k=3, posterior="link"), Refused("y")
        for name, value in REFUSED_SETTINGS:
            kwargs = {"k": 3, "posterior": "link", name: value}
            yield f"fit {name}={_short(value)}", lambda X=X, y=y, kw=kwargs: jaxnn.fit(X, y, **kw), Refused(name)


def _cases_predict():
    for n_classes in (2, 3):
        X, y = _problem(n_classes)
        model = jaxnn.fit(X, y, k=3, posterior="link")
        for fn in (jaxnn.predict, jaxnn.predict_proba, jaxnn.decision_function):
            call = lambda bad, fn=fn, model=model: fn(model, bad)  # noqa: E731
            for bad in REFUSED_POINTS + [np.ones((5, 2)), np.ones((5, 4)), np.ones(3)]:
                yield f"{fn.__name__} X={_short(bad)}", lambda bad=bad, call=call: call(bad), Refused("X")
            for bad in OTHER_ROWS_POINTS:
                yield (f"{fn.__name__} X={_short(bad)}", lambda bad=bad, call=call: call(bad),
                       Accepted(_check_prediction(fn, model, len(bad))))
            for bad in ODD_DTYPE_POINTS:
                yield (f"{fn.__name__} X={_short(bad)}", lambda bad=bad, call=call: call(bad),
                       Accepted(_same_as_float32(call, bad, _check_prediction(fn, model, len(bad)))))
        for name, bad in REFUSED_SETTINGS:
            if name == "neighbors":
                yield (f"predict neighbors={_short(bad)}",
                       lambda bad=bad, model=model: jaxnn.predict(model, neighbors=bad), Refused("neighbors"))
        for bad in (None, "model", 3, X, {"alpha": 1}):
            yield f"predict model={_short(bad)}", lambda bad=bad, X=X: jaxnn.predict(bad, X), Refused("Model")


def _cases_knn_graph():
    X, _ = _problem(2)
    graph = lambda P: jaxnn.knn_graph(P, 3)  # noqa: E731
    for bad in REFUSED_POINTS:
        yield f"knn_graph X={_short(bad)}", lambda bad=bad: graph(bad), Refused("X")
    for bad in OTHER_ROWS_POINTS:
        expect = Accepted(_check_graph(len(bad))) if len(bad) > 3 else Refused("k")  # k = 3 ≥ the points
        yield f"knn_graph X={_short(bad)}", lambda bad=bad: graph(bad), expect
    for bad in ODD_DTYPE_POINTS:
        yield (f"knn_graph X={_short(bad)}", lambda bad=bad: graph(bad),
               Accepted(_same_as_float32(graph, bad, _check_graph(40))))
    for k in (0, -1, 40, 2.5, "3", None, 10**9):
        yield f"knn_graph k={_short(k)}", lambda k=k: jaxnn.knn_graph(X, k), Refused("k")
    for method in ("nope", "", 3, None):
        yield f"knn_graph method={_short(method)}", lambda method=method: jaxnn.knn_graph(X, 3, method=method), \
            Refused("method")
    for block in (0, -1, 2.5, "8"):
        yield f"knn_graph block_size={_short(block)}", lambda block=block: jaxnn.knn_graph(X, 3, block_size=block), \
            Refused("block_size")
    for block in (10**9, 10**12):  # larger than the data: one block, the same graph

        def same_graph(out):
            _check_graph(40)(out)
            np.testing.assert_array_equal(np.asarray(out.indices), np.asarray(graph(X).indices))

        yield f"knn_graph block_size={_short(block)}", lambda block=block: jaxnn.knn_graph(X, 3, block_size=block), \
            Accepted(same_graph)
    for bad in REFUSED_POINTS[:12] + [np.ones((5, 2)), np.full((5, 3), np.nan)]:
        yield f"knn_query Q={_short(bad)}", lambda bad=bad: jaxnn.knn_query(X, bad, 3), Refused("X_query")


def _cases_estimator():
    from jaxnn.sklearn import BoostedKNNClassifier

    X, y = _problem(3)
    for name, value in REFUSED_SETTINGS:
        if name in ("neighbors", "verbose"):
            continue
        expect = Refused(name)
        if name == "k" and value is None:  # the estimator's k=None: the default k
            expect = Accepted(lambda labels: _check_labels(labels, (0, 1, 2), 40))
        yield f"estimator {name}={_short(value)}", \
            lambda name=name, value=value: BoostedKNNClassifier(**{name: value}).fit(X, y).predict(X), expect
    # scikit-learn's validate_data refuses these, in scikit-learn's words (which name X only at times)
    for bad in REFUSED_POINTS[:20]:
        yield f"estimator fit X={_short(bad)}", lambda bad=bad: BoostedKNNClassifier(k=3).fit(bad, y).predict(X), \
            Refused("X", sklearn=True)
    fitted = BoostedKNNClassifier(k=3).fit(X, y)
    for bad in REFUSED_POINTS[:20]:
        yield f"estimator predict X={_short(bad)}", lambda bad=bad: fitted.predict(bad), Refused("X", sklearn=True)
    yield "estimator predict unfitted", lambda: BoostedKNNClassifier().predict(X), Refused("BoostedKNNClassifier")


def _cases_load(tmp_path):
    X, y = _problem(3)
    good = tmp_path / "good.jaxnn"
    jaxnn.save(jaxnn.fit(X, y, k=3, posterior="link"), good)
    data = good.read_bytes()
    rng = np.random.default_rng(0)
    files = {"empty": b"", "text": b"hello, world\n", "json": b'{"format": "jaxnn"}', "zeros": bytes(512)}
    for cut in (1, 10, 100, len(data) // 3, len(data) // 2, len(data) - 10, len(data) - 1):
        files[f"truncated{cut}"] = data[:cut]
    for i in range(12):
        corrupt = bytearray(data)
        for at in rng.integers(0, len(data), size=1 + i):
            corrupt[at] ^= 0xFF
        files[f"corrupt{i}"] = bytes(corrupt)
    npz = tmp_path / "plain.npz"
    np.savez(npz, a=np.arange(3))
    files["foreign-npz"] = npz.read_bytes()
    for name, content in files.items():
        path = tmp_path / f"{name}.jaxnn"
        path.write_bytes(content)
        yield f"load {name}", lambda path=path: jaxnn.predict(jaxnn.load(path), X), Refused(str(path))
    for bad in (tmp_path / "missing.jaxnn", tmp_path):
        yield f"load path={_short(bad)}", lambda bad=bad: jaxnn.load(bad), Refused(str(bad))
    for bad in (None, 3, b"\x00"):
        yield f"load path={_short(bad)}", lambda bad=bad: jaxnn.load(bad), Refused("path")


def _short(value) -> str:
    if isinstance(value, np.ndarray):
        return f"array{value.shape}{value.dtype}"
    text = repr(value)
    return text if len(text) < 30 else text[:27] + "..."


GROUPS = {"fit": _cases_fit, "predict": _cases_predict, "knn_graph": _cases_knn_graph,
          "estimator": _cases_estimator, "load": _cases_load}


def _names(message: str, name: str) -> bool:
    """Whether ``message`` names ``name`` as a whole word (``X`` is not the
    X of ``X_query``)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", message) is not None


def _from_sklearn_validation(err: BaseException) -> bool:
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__") == "sklearn.utils.validation":
            return True
        tb = tb.tb_next
    return False


def _outcome(call, expect) -> str:
    """'as expected', or a description of what went wrong."""
    try:
        out = call()
    except DOCUMENTED as err:
        if isinstance(expect, Accepted):
            return f"refused a valid input: {type(err).__name__}: {err}"
        if _names(str(err), expect.name) or (expect.sklearn and _from_sklearn_validation(err)):
            return "as expected"
        return f"{type(err).__name__} that does not name {expect.name!r}: {err}"
    except Exception as err:  # noqa: BLE001 — what the test looks for
        return f"{type(err).__name__}: {err}"
    if isinstance(expect, Refused):
        return f"accepted; it must be refused, naming {expect.name!r}"
    try:
        expect.check(out)
    except AssertionError as err:
        return f"wrong answer: {err}"
    return "as expected"


def _cases(group, tmp_path):
    make = GROUPS[group]
    return list(make(tmp_path) if group == "load" else make())


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_malformed_inputs_are_refused_naming_the_argument_and_odd_ones_answered(group, tmp_path, request):
    cases = _cases(group, tmp_path)
    outcomes = {name: _outcome(call, expect) for name, call, expect in cases}
    wrong = {name: what for name, what in outcomes.items() if what != "as expected"}
    assert not wrong, wrong
    request.node.user_properties.append(("cases", len(cases)))


def test_the_fuzz_covers_at_least_500_inputs(tmp_path):
    cases = [case for group in GROUPS for case in _cases(group, tmp_path)]
    assert len(cases) >= 500, len(cases)
    kinds = [type(expect) for _, _, expect in cases]
    assert set(kinds) == {Refused, Accepted} and kinds.count(Accepted) >= 50, kinds.count(Accepted)


def test_outcome_tells_what_went_wrong():
    refused, accepted = Refused("k"), Accepted(lambda out: None)
    assert _outcome(lambda: [][1], refused).startswith("IndexError")
    assert _outcome(lambda: (_ for _ in ()).throw(ValueError("k must be >= 1")), refused) == "as expected"
    assert "does not name 'k'" in _outcome(lambda: (_ for _ in ()).throw(ValueError("bad value")), refused)
    assert "does not name 'X'" in _outcome(lambda: (_ for _ in ()).throw(ValueError("X_query is empty")), Refused("X"))
    assert _outcome(lambda: 3, refused).startswith("accepted; it must be refused")
    assert _outcome(lambda: 3, accepted) == "as expected"
    assert _outcome(lambda: (_ for _ in ()).throw(TypeError("k")), accepted).startswith("refused a valid input")

    def nan_check(out):
        assert np.all(np.isfinite(out)), "non-finite"

    assert _outcome(lambda: np.array([np.nan]), Accepted(nan_check)).startswith("wrong answer: non-finite")
    assert list(itertools.islice(_cases_fit(), 1))
