"""Fuzzing the public API with malformed inputs: every call either returns
finite results or raises one of the documented exceptions (TypeError,
ValueError — ModelFileError and scikit-learn's NotFittedError are
ValueErrors — or FileNotFoundError / IsADirectoryError for a path), never
another exception, a crash or a NaN.  The command line's fuzzing lives in
tests/test_cli.py.

Cases are generated: a valid call with one argument replaced by a malformed
value, over two base problems (binary and 3-class), plus malformed files for
``jaxnn.load``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import jaxnn

DOCUMENTED = (TypeError, ValueError, FileNotFoundError, IsADirectoryError)

# malformed point arrays (and a few odd but valid ones)
BAD_POINTS = [
    None, "points", b"x", 3, 2.5, [], [[]], [[1, 2], [3]], [["a", "b"]] * 40, {"a": 1}, {1, 2},
    np.zeros(0), np.zeros((0, 3)), np.zeros((40, 0)), np.zeros((40, 3, 2)), np.float64(1.0), np.array(1.0),
    np.full((40, 3), np.nan), np.full((40, 3), np.inf), np.full((40, 3), -np.inf), np.ones((40, 3)) * 1e308,
    np.ones((40, 3), complex), np.ones((40, 3), object), np.array([[None] * 3] * 40, object),
    np.ones((40, 3), "datetime64[s]"), np.ones((40, 3), "timedelta64[s]"), np.array([["1", "2", "3"]] * 40),
    np.ones((39, 3)), np.ones((41, 3)), np.ones((1, 3)), np.ones((2, 3)),
    np.ones((40, 3), np.float16), np.ones((40, 3), bool), np.ones((40, 3), np.uint8) * 255,
    np.arange(120, dtype=np.int64).reshape(40, 3) * 2**60,
]
# malformed labels for 40 points
BAD_LABELS = [
    None, "y", 3, [], np.zeros(0), np.zeros(39), np.zeros(41), np.zeros((40, 2, 2)), np.zeros(40),
    np.full(40, np.nan), np.array([0.0] * 38 + [np.nan, 1.0]), np.array([0] * 20 + [None] * 20, object),
    np.array([0.0] * 38 + [1.0, np.nan], object), np.array(["a"] * 20 + [1] * 20, object),
    np.ones(40, complex), np.array([{}] * 40, object), np.ones((40, 1)) * 2, np.full((40, 3), 0.5),
    np.ones((40, 3), "datetime64[s]"), np.array([np.inf] * 20 + [0.0] * 20),
]
# malformed settings of fit: (name, value)
BAD_SETTINGS = [
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


def _finite(out) -> bool:
    arrays = out if isinstance(out, (tuple, list)) else (out,)
    for a in arrays:
        a = np.asarray(a)
        if np.issubdtype(a.dtype, np.number) and not np.all(np.isfinite(a)):
            return False
    return True


def _outcome(call):
    """'ok' (finite results), 'clear' (a documented exception with a message)
    or a description of what went wrong."""
    try:
        out = call()
    except DOCUMENTED as err:
        return "clear" if str(err).strip() else f"{type(err).__name__} without a message"
    except Exception as err:  # noqa: BLE001 — what the test looks for
        return f"{type(err).__name__}: {err}"
    return "ok" if _finite(out) else "non-finite result"


def _cases_fit():
    for n_classes in (2, 3):
        X, y = _problem(n_classes)
        for bad in BAD_POINTS:
            yield f"fit X={_short(bad)}", lambda bad=bad, y=y: jaxnn.fit(bad, y, k=3, posterior="link").alpha
        for bad in BAD_LABELS:
            yield f"fit y={_short(bad)}", lambda bad=bad, X=X: jaxnn.fit(X, bad, k=3, posterior="link").alpha
        for name, value in BAD_SETTINGS:
            kwargs = {"k": 3, "posterior": "link", name: value}
            yield f"fit {name}={_short(value)}", lambda X=X, y=y, kw=kwargs: jaxnn.fit(X, y, **kw).alpha


def _cases_predict():
    for n_classes in (2, 3):
        X, y = _problem(n_classes)
        model = jaxnn.fit(X, y, k=3, posterior="link")
        for bad in BAD_POINTS + [np.ones((5, 2)), np.ones((5, 4)), np.ones(3)]:
            for fn in (jaxnn.predict, jaxnn.predict_proba, jaxnn.decision_function):
                yield f"{fn.__name__} X={_short(bad)}", lambda fn=fn, bad=bad, model=model: fn(model, bad)
        for name, bad in BAD_SETTINGS:
            if name == "neighbors":
                yield f"predict neighbors={_short(bad)}", lambda bad=bad, model=model: jaxnn.predict(model, neighbors=bad)
        for bad in (None, "model", 3, X, {"alpha": 1}):
            yield f"predict model={_short(bad)}", lambda bad=bad: jaxnn.predict(bad, X)


def _cases_knn_graph():
    X, _ = _problem(2)
    for bad in BAD_POINTS:
        yield f"knn_graph X={_short(bad)}", lambda bad=bad: jaxnn.knn_graph(bad, 3).indices
    for k in (0, -1, 40, 2.5, "3", None, 10**9):
        yield f"knn_graph k={_short(k)}", lambda k=k: jaxnn.knn_graph(X, k).indices
    for method in ("nope", "", 3, None):
        yield f"knn_graph method={_short(method)}", lambda method=method: jaxnn.knn_graph(X, 3, method=method).indices
    for block in (0, -1, 2.5, "8", 10**9, 10**12):
        yield f"knn_graph block_size={_short(block)}", lambda block=block: jaxnn.knn_graph(X, 3, block_size=block).indices
    for bad in BAD_POINTS[:12] + [np.ones((5, 2)), np.full((5, 3), np.nan)]:
        yield f"knn_query Q={_short(bad)}", lambda bad=bad: jaxnn.knn_query(X, bad, 3).indices


def _cases_estimator():
    from jaxnn.sklearn import BoostedKNNClassifier

    X, y = _problem(3)
    for name, value in BAD_SETTINGS:
        if name in ("neighbors", "verbose"):
            continue
        yield f"estimator {name}={_short(value)}", \
            lambda name=name, value=value: BoostedKNNClassifier(**{name: value}).fit(X, y).predict(X)
    for bad in BAD_POINTS[:20]:
        yield f"estimator fit X={_short(bad)}", lambda bad=bad: BoostedKNNClassifier(k=3).fit(bad, y).predict(X)
    fitted = BoostedKNNClassifier(k=3).fit(X, y)
    for bad in BAD_POINTS[:20]:
        yield f"estimator predict X={_short(bad)}", lambda bad=bad: fitted.predict(bad)
    yield "estimator predict unfitted", lambda: BoostedKNNClassifier().predict(X)


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
        yield f"load {name}", lambda path=path: jaxnn.predict(jaxnn.load(path), X)
    for bad in (tmp_path / "missing.jaxnn", tmp_path, None, 3, b"\x00"):
        yield f"load path={_short(bad)}", lambda bad=bad: jaxnn.load(bad)


def _short(value) -> str:
    if isinstance(value, np.ndarray):
        return f"array{value.shape}{value.dtype}"
    text = repr(value)
    return text if len(text) < 30 else text[:27] + "..."


GROUPS = {"fit": _cases_fit, "predict": _cases_predict, "knn_graph": _cases_knn_graph,
          "estimator": _cases_estimator, "load": _cases_load}


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_malformed_inputs_end_in_documented_exceptions(group, tmp_path, request):
    make = GROUPS[group]
    cases = list(make(tmp_path) if group == "load" else make())
    outcomes = {name: _outcome(call) for name, call in cases}
    wrong = {name: what for name, what in outcomes.items() if what not in ("ok", "clear")}
    assert not wrong, wrong
    request.node.user_properties.append(("cases", len(cases)))


def test_the_fuzz_covers_at_least_500_inputs(tmp_path):
    total = sum(1 for group, make in GROUPS.items() for _ in (make(tmp_path) if group == "load" else make()))
    assert total >= 500, total
    assert math.isfinite(total)


def test_outcome_tells_an_undocumented_exception():
    assert _outcome(lambda: [][1]).startswith("IndexError")
    assert _outcome(lambda: np.array([np.nan])) == "non-finite result"
    assert _outcome(lambda: (_ for _ in ()).throw(ValueError("bad k"))) == "clear"
    assert list(itertools.islice(_cases_fit(), 1))
