"""Inputs that slipped through or were computed wrongly: missing and
unsortable labels in object arrays, a large constant feature, float64 and
int64 points far from 0 (centred in full precision), pandas datetime and
categorical columns, NumPy scalars as algorithm parameters, a block_size
larger than the queries."""

import jax
import numpy as np
import pytest

import jaxnn
from jaxnn._src import search
from jaxnn._src.points import float32_origin, shift_points


def _brute_graph(X, k):
    """The exact k-NN graph in float64 (self excluded, ties → the lower index)."""
    X = np.asarray(X, np.float64)
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d2, np.inf)
    return np.argsort(d2, axis=1, kind="stable")[:, :k]


def _exact_rows(X, indices, k):
    """The fraction of rows whose k neighbours found are at the true k smallest
    distances (exact for integer coordinates: ties do not count against it)."""
    X = np.asarray(X)
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1).astype(np.float64)
    np.fill_diagonal(d2, np.inf)
    got = np.sort(np.take_along_axis(d2, np.asarray(indices), axis=1), axis=1)
    return float(np.mean(np.all(got == np.sort(d2, axis=1)[:, :k], axis=1)))


def _distances_of(X, indices):
    """The float64 distances of each row of X to its neighbours ``indices``,
    ascending (a graph right up to the order of near ties)."""
    X = np.asarray(X, np.float64)
    idx = np.asarray(indices)
    return np.sort(np.sqrt(((X[:, None, :] - X[idx]) ** 2).sum(-1)), axis=1)


# --------------------------------------------------------------------------
# 4: missing labels in object arrays, unsortable labels


def _X(m=80, seed=0):
    return np.random.default_rng(seed).normal(size=(m, 3))


@pytest.mark.parametrize("missing", [np.nan, None, float("nan"), np.float32("nan")])
def test_missing_labels_in_an_object_array_are_refused(missing):
    # each NaN became a class of its own and the sort broke: classes (0.0, nan, 0.0, 1.0, nan)
    y = np.array([0.0] * 40 + [1.0] * 38 + [missing] * 2, dtype=object)
    with pytest.raises(ValueError, match=r"y has 2 missing labels.*first at index 78"):
        jaxnn.fit(_X(), y, k=3)


def test_missing_labels_of_pandas_are_refused():
    pd = pytest.importorskip("pandas")
    for missing in (pd.NA, pd.NaT):
        y = np.array(["a"] * 40 + ["b"] * 39 + [missing], dtype=object)
        y[5] = missing
        with pytest.raises(ValueError, match=r"y has 2 missing labels.*first at index 5"):
            jaxnn.fit(_X(), y, k=3)
    with pytest.raises(ValueError, match="1 missing label"):  # a nullable column (NaN or pd.NA to NumPy)
        jaxnn.fit(_X(), pd.Series([0] * 40 + [1] * 39 + [None], dtype="Int64"), k=3)
    with pytest.raises(ValueError, match="1 missing label"):
        jaxnn.fit(_X(), pd.Series(["a"] * 40 + ["b"] * 39 + [None], dtype="category"), k=3)


def test_not_a_time_labels_are_refused():
    y = np.array(["2020-01-01"] * 40 + ["2021-01-01"] * 39 + ["NaT"], dtype="datetime64[D]")
    with pytest.raises(ValueError, match=r"y has 1 missing label .*first at index 79"):
        jaxnn.fit(_X(), y, k=3)


def test_object_labels_without_missing_values_still_fit():
    y = np.array([0.0] * 40 + [1.0] * 40, dtype=object)
    assert jaxnn.fit(_X(), y, k=3, posterior="link").classes == (0.0, 1.0)
    y = np.array(["a"] * 40 + ["b"] * 40, dtype=object)
    assert jaxnn.fit(_X(), y, k=3, posterior="link").classes == ("a", "b")


def test_labels_that_cannot_be_sorted_are_named():
    y = np.array([0] * 40 + ["b"] * 40, dtype=object)
    with pytest.raises(TypeError, match=r"labels in y must be mutually comparable.*int.*str"):
        jaxnn.fit(_X(), y, k=3)


# --------------------------------------------------------------------------
# 5: a large constant feature


@pytest.mark.parametrize("dtype, value", [(np.float64, 1e20), (np.float64, 1e9), (np.float32, 1e9),
                                          (np.float32, 1e8), (np.float32, 1e20), (np.float64, -3e30)])
def test_a_large_constant_feature_adds_nothing_to_the_distances(dtype, value):
    # every distance read 0 and the graph was index order (0.8 % of it right at 10²⁰)
    Z = np.random.default_rng(1).normal(size=(80, 3)).astype(dtype)
    X = np.c_[Z, np.full(80, value, dtype)]
    want = _brute_graph(Z, 3)
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_graph(X, 3).indices), want)
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_graph(Z, 3).indices), want)
    step = np.asarray([0.1, 0.0, 0.0], dtype)  # queries near the training points, the constant feature kept
    got = jaxnn.knn_query(X, np.c_[Z[:10] + step, X[:10, 3]], 3)
    np.testing.assert_array_equal(np.asarray(got.indices), np.asarray(jaxnn.knn_query(Z, Z[:10] + step, 3).indices))


def test_a_large_constant_feature_under_jit():
    # traced points are conditioned in the program: the mean of the constant column,
    # summed in float32, was off by an ulp and swamped the other features
    Z = np.random.default_rng(2).normal(size=(80, 3)).astype(np.float32)
    X = np.c_[Z, np.full(80, 1e9, np.float32)]
    got = jax.jit(lambda A: jaxnn.knn_graph(A, 3).indices)(X)
    np.testing.assert_array_equal(np.asarray(got), _brute_graph(Z, 3))


def test_host_conditioning_centres_a_constant_column_exactly():
    X = np.c_[np.random.default_rng(3).normal(size=(50, 2)), np.full(50, 123456.7)].astype(np.float32)
    Xc, (e0, shift, s, e) = search.conditioning_on_host(X)
    assert Xc.dtype == np.float32 and np.all(Xc[:, 2] == 0)
    Q = (np.ldexp(X, -e0) - shift.astype(np.float32)) / np.float32(s)  # the queries' conditioning, in float32
    np.testing.assert_array_equal(Q, Xc)


# --------------------------------------------------------------------------
# 6: float64 and int64 points far from 0, centred in full precision


@pytest.mark.parametrize("base", [1.7e15, 1_712_345_678_901_234.0, 1.7e15 + 3e7, 9e15])
def test_microsecond_timestamps_keep_their_nearest_neighbours(base):
    # the origin rounded to float32 (a step of 1.3·10⁸ at 1.7·10¹⁵) left the unit steps
    # beyond float32's digits: 25 % of the rows kept their true 2-NN (7 % at 9·10¹⁵)
    t = (base + np.arange(300.0))[:, None]
    assert _exact_rows(t - base, jaxnn.knn_graph(t, 2).indices, 2) == 1.0
    X = np.c_[t, np.random.default_rng(4).normal(size=300)]  # one feature far from 0, one near
    found = _distances_of(X - [base, 0.0], jaxnn.knn_graph(X, 4).indices)
    np.testing.assert_allclose(found, _distances_of(X - [base, 0.0], _brute_graph(X - [base, 0.0], 4)), rtol=1e-6)


@pytest.mark.parametrize("spread", [300, 3000])
@pytest.mark.parametrize("base", [2**60, 2**60 + 5 * 10**10])  # the mean's float32 rounding near it, and far from it
def test_int64_points_near_two_to_the_sixty_keep_their_nearest_neighbours(spread, base):
    # cast to float64 (a step of 256 there) before the shift: 0–4 % of the rows right
    offsets = np.random.default_rng(5).choice(spread, size=200, replace=False)
    X = (np.int64(base) + offsets).astype(np.int64)[:, None]
    assert _exact_rows(offsets[:, None], jaxnn.knn_graph(X, 2).indices, 2) == 1.0
    with jax.enable_x64(True):  # float64 does not hold them either
        assert _exact_rows(offsets[:, None], jaxnn.knn_graph(X, 2).indices, 2) == 1.0
    U = (np.uint64(2**63 + 2**62) + offsets.astype(np.uint64))[:, None]  # beyond int64
    assert _exact_rows(offsets[:, None], jaxnn.knn_graph(U, 2).indices, 2) == 1.0


def test_a_full_precision_origin_shifts_training_and_query_points_alike():
    X = np.array([[1.7e15 + 3e7, 1.0], [1.7e15 + 3e7 + 1, 2.0], [1.7e15 + 3e7 + 3, 3.0]])
    origin = float32_origin(X)
    assert origin.shape == (2, 2)  # float32 parts: origin = hi + lo, exactly
    assert np.all(origin == origin.astype(np.float32))
    shifted = shift_points(X, origin)
    np.testing.assert_array_equal(shifted[:, 0] - shifted[0, 0], [0.0, 1.0, 3.0])
    assert np.all(np.abs(shifted[:, 0]) < 4) and np.all(shifted[:, 1] == X[:, 1])
    I = np.array([[2**60], [2**60 + 1], [2**60 + 5]], np.int64)
    shifted = shift_points(I, float32_origin(I))
    np.testing.assert_array_equal(shifted[:, 0] - shifted[0, 0], [0.0, 1.0, 5.0])
    # host points and a traced origin (a model passed into jax.jit) shift alike
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda o: shift_points(X, o))(origin.astype(np.float32))),
                                  shift_points(X, origin).astype(np.float32))


def _far_and_near(Xfar, Xnear, y, Qfar, Qnear):
    far = jaxnn.fit(Xfar, y, k=5, posterior="link")
    near = jaxnn.fit(Xnear, y, k=5, posterior="link")
    assert far.origin is not None
    np.testing.assert_array_equal(np.asarray(far.alpha), np.asarray(near.alpha))
    np.testing.assert_array_equal(jaxnn.predict(far, Qfar), jaxnn.predict(near, Qnear))
    np.testing.assert_allclose(np.asarray(jaxnn.decision_function(far, Qfar)),
                               np.asarray(jaxnn.decision_function(near, Qnear)), atol=1e-6)
    # a traced model (its origin a tracer), the queries float64 NumPy closed over
    traced = jax.jit(lambda model: jaxnn.decision_function(model, Qfar))(far)
    np.testing.assert_allclose(np.asarray(traced), np.asarray(jaxnn.decision_function(near, Qnear)), atol=1e-6)
    return far


@pytest.mark.slow
def test_fit_and_predict_on_timestamps_far_from_zero():
    base = 1_712_345_678_901_234.0
    t = np.arange(400.0)
    y = (t // 20 % 2).astype(int)  # runs of 20 timestamps a class
    Z = np.c_[t, np.zeros(400)]
    q = np.c_[np.arange(0.25, 390, 7.0), np.zeros(56)]
    far = _far_and_near(Z + [base, 0.0], Z, y, q + [base, 0.0], q)
    assert far.origin.shape == (2, 2)  # float32 parts: the mean rounded to float32 lies 3·10⁷ away
    assert np.mean(jaxnn.predict(far, q + [base, 0.0]) == (q[:, 0] // 20 % 2)) > 0.8


def test_fit_and_predict_on_int64_far_from_zero():
    offsets = np.random.default_rng(6).choice(3000, size=300, replace=False)
    y = (offsets // 100 % 2).astype(int)
    q = np.arange(5, 3000, 37)
    base = np.int64(2**60 + 5 * 10**10)  # the mean rounded to float32 is 5·10¹⁰ from it
    far = _far_and_near((base + offsets)[:, None], offsets[:, None].astype(np.int64), y,
                        (base + q)[:, None], q[:, None].astype(np.int64))
    assert far.origin.shape == (2, 1)


def test_a_float64_model_far_from_zero_narrowed_to_float32_keeps_its_origin():
    base = 1.7e15 + 3e7
    t = np.arange(300.0)[:, None]
    y = (t[:, 0] // 15 % 2).astype(int)
    with jax.enable_x64(True):
        model = jaxnn.fit(t + base, y, k=5, posterior="link")
        want = np.asarray(jaxnn.predict(model, t[::7] + base + 0.25))
    with pytest.warns(UserWarning, match="fit in float64"):
        got = np.asarray(jaxnn.predict(model, t[::7] + base + 0.25))
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------
# 7: pandas columns that are not numbers


def test_pandas_datetime_and_categorical_columns_are_refused():
    pd = pytest.importorskip("pandas")
    X = _X()
    y = np.arange(80) % 2
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1]})
    when = pd.date_range("2020-01-01", periods=80, freq="h")
    for name, column in [("when", when), ("took", when - when[0]), ("month", when.to_period("M")),
                         ("kind", pd.Categorical(np.arange(80) % 3)), ("label", pd.array(["x"] * 80, dtype="string")),
                         ("tz", when.tz_localize("UTC"))]:
        bad = frame.assign(**{name: column})
        with pytest.raises(TypeError, match=rf"X has non-numeric column\(s\) '{name}' \("):
            jaxnn.fit(bad, y, k=3)
        with pytest.raises(TypeError, match=rf"column\(s\) '{name}'"):
            jaxnn.knn_graph(bad, 3)
    with pytest.raises(TypeError, match=r"'when' \(datetime64\[\w+\]\), 'took' \(timedelta64\[\w+\]\).*total_seconds"):
        jaxnn.knn_graph(frame.assign(when=when, took=when - when[0]), 3)
    with pytest.raises(TypeError, match="X_query has non-numeric column"):
        jaxnn.knn_query(X, pd.DataFrame({"a": X[:5, 0], "b": X[:5, 1], "c": when[:5]}), 3)
    # numbers of every kind still pass: nullable, bool, int
    fine = frame.assign(n=pd.array(np.arange(80), dtype="Int64"), f=pd.array(X[:, 2], dtype="Float64"),
                        flag=np.arange(80) % 2 == 0, i=np.arange(80))
    assert jaxnn.knn_graph(fine, 3).indices.shape == (80, 3)


# --------------------------------------------------------------------------
# 12: NumPy scalars as algorithm parameters


def test_algorithms_take_numpy_scalars_as_their_factories_do():
    assert jaxnn.GNNB(epsilon=np.float32(0.5)) == jaxnn.gnnb(np.float32(0.5)) == jaxnn.GNNB(0.5)
    assert hash(jaxnn.GNNB(epsilon=np.float64(0.25))) == hash(jaxnn.GNNB(0.25))
    assert type(jaxnn.GNNB(epsilon=np.float32(0.5)).epsilon) is float
    assert jaxnn.UNN(max_delta=np.float32(10.0)) == jaxnn.unn(max_delta=np.int64(10)) == jaxnn.UNN(max_delta=10.0)
    assert jaxnn.UNNFast(smoothing=np.bool_(False), max_delta=np.int32(20)) == jaxnn.unn_fast(False, 20.0)
    assert jaxnn.GNNB(epsilon=np.array(0.5)) == jaxnn.GNNB(0.5)  # a 0-d array is its number
    for bad in (True, np.bool_(True), "0.5", None):
        with pytest.raises(TypeError, match="epsilon must be a real number"):
            jaxnn.GNNB(epsilon=bad)
        with pytest.raises(TypeError, match="epsilon must be a real number"):
            jaxnn.gnnb(bad)
    for eps in (np.float32(0.0), np.float64(1.0), np.float32("nan")):
        with pytest.raises(ValueError, match=r"epsilon must be finite and lie in \(0, 1\)"):
            jaxnn.GNNB(epsilon=eps)
    with pytest.raises(ValueError, match="max_delta must be finite"):
        jaxnn.UNN(max_delta=np.float32("inf"))
    with pytest.raises(TypeError, match="max_delta must be a real number"):
        jaxnn.UNNFast(max_delta=True)
    with pytest.raises(TypeError, match="smoothing must be a bool"):
        jaxnn.UNN(smoothing="no")
    X, y = _X(40), np.arange(40) % 2
    model = jaxnn.fit(X, y, k=3, algorithm=jaxnn.GNNB(np.float32(0.3)), posterior="link")
    np.testing.assert_array_equal(np.asarray(model.alpha),
                                  np.asarray(jaxnn.fit(X, y, k=3, algorithm="gnnb", epsilon=0.3, posterior="link").alpha))


# --------------------------------------------------------------------------
# 9: block_size larger than the queries


def test_block_size_is_clamped_to_the_query_rows():
    assert search.block_rows(80, 10**9) == 80
    assert search.block_rows(80, 10**9, queries=5) == 5
    assert search.block_rows(80, 7) == 7
    with pytest.raises(ValueError, match="block_size must be >= 1"):
        search.block_rows(80, 0)
    X = _X()
    want = np.asarray(jaxnn.knn_graph(X, 3).indices)
    # 10⁹ aborted the process (SIGABRT) and 10⁸ asked for 51 GB
    for huge in (10**8, 10**9, 2**62):
        np.testing.assert_array_equal(np.asarray(jaxnn.knn_graph(X, 3, block_size=huge).indices), want)
    Q = X[:5] + 0.1
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_query(X, Q, 3, block_size=10**9).indices),
                                  np.asarray(jaxnn.knn_query(X, Q, 3).indices))
