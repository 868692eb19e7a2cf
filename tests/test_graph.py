"""Neighbour graphs: exact blocked search vs scikit-learn, ties, nndescent, inverse lists."""

import functools
import os
import pathlib
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.neighbors import NearestNeighbors

import jaxnn
from jaxnn._src import platforms

sys.path.insert(0, os.path.dirname(__file__))
from _data import is_full_float32, matmul_precisions  # noqa: E402

#: tests that run pynndescent share one pytest-xdist worker: its numba
#: compilation (~45 s on 2 cores) is paid once per process
NNDESCENT = pytest.mark.xdist_group("nndescent")


def _data(m=300, d=6, seed=0):
    return np.random.default_rng(seed).normal(size=(m, d)).astype(np.float32)


@pytest.mark.parametrize("block_size", [None, 1, 7, 300])
def test_exact_graph_matches_sklearn(block_size):
    X = _data()
    g = jaxnn.knn_graph(X, 8, block_size=block_size)
    dist, idx = NearestNeighbors(n_neighbors=9, algorithm="brute").fit(X).kneighbors(X)
    assert g.indices.shape == (300, 8) and g.indices.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(g.indices), idx[:, 1:])
    np.testing.assert_allclose(np.asarray(g.distances), dist[:, 1:], rtol=1e-4, atol=1e-4)


def test_self_excluded_and_ties_by_lower_index():
    X = np.array([[0.0], [1.0], [1.0], [1.0], [5.0]], dtype=np.float32)
    g = np.asarray(jaxnn.knn_graph(X, 2).indices)
    assert not np.any(g == np.arange(5)[:, None])
    # point 1 has duplicates 2 and 3 at distance 0: lower index first
    np.testing.assert_array_equal(g[1], [2, 3])
    np.testing.assert_array_equal(g[3], [1, 2])
    np.testing.assert_array_equal(g[0], [1, 2])


def test_query_matches_sklearn():
    X = _data()
    Q = _data(m=50, seed=1)
    nb = jaxnn.knn_query(X, Q, 5, block_size=16)
    _, idx = NearestNeighbors(n_neighbors=5, algorithm="brute").fit(X).kneighbors(Q)
    np.testing.assert_array_equal(np.asarray(nb.indices), idx)


@NNDESCENT
def test_nndescent_graph_recall_and_no_self():
    X = _data(m=400, d=5)
    g = np.asarray(jaxnn.knn_graph(X, 10, method="nndescent").indices)
    assert g.shape == (400, 10) and g.min() >= 0
    assert not np.any(g == np.arange(400)[:, None])
    _, idx = NearestNeighbors(n_neighbors=11, algorithm="brute").fit(X).kneighbors(X)
    recall = np.mean([len(set(a) & set(b[1:])) / 10 for a, b in zip(g, idx)])
    assert recall > 0.95


@NNDESCENT
def test_nndescent_more_candidates_do_not_lower_recall():
    X = _data(m=1500, d=24)
    _, idx = NearestNeighbors(n_neighbors=11, algorithm="brute").fit(X).kneighbors(X)

    def recall(candidates):
        g = np.asarray(jaxnn.knn_graph(X, 10, method="nndescent", candidates=candidates).indices)
        assert g.shape == (1500, 10) and not np.any(g == np.arange(1500)[:, None])
        return np.mean(np.any(g[:, :, None] == idx[:, None, 1:], axis=2))

    low, high = recall(11), recall(40)
    assert high >= low and high > 0.97


@NNDESCENT
def test_nndescent_effort_options_reach_pynndescent():
    """One tree and one NN-descent round: a valid graph of lower recall than the defaults."""
    X = _data(m=1500, d=24)
    _, idx = NearestNeighbors(n_neighbors=11, algorithm="brute").fit(X).kneighbors(X)

    def recall(**options):
        g = np.asarray(jaxnn.knn_graph(X, 10, method="nndescent", candidates=12, **options).indices)
        assert g.shape == (1500, 10) and g.min() >= 0 and not np.any(g == np.arange(1500)[:, None])
        return np.mean(np.any(g[:, :, None] == idx[:, None, 1:], axis=2))

    assert recall(n_trees=1, n_iters=1) < recall() - 0.05


@NNDESCENT
def test_nndescent_on_threads_gives_one_graph_run_to_run():
    """pynndescent splits its work by thread count: two threads (the default
    uses every core) give the same graph and candidate lists each time."""
    from jaxnn._src import graph

    X = _data(m=1500, d=24)
    first, again = (jaxnn.knn_graph(X, 10, method="nndescent", n_jobs=2, seed=3) for _ in range(2))
    np.testing.assert_array_equal(np.asarray(first.indices), np.asarray(again.indices))
    np.testing.assert_array_equal(np.asarray(first.distances), np.asarray(again.distances))
    lists = [graph.nndescent_index(X, 10, 3, 20, 2).candidates for _ in range(2)]
    np.testing.assert_array_equal(*lists)


def test_kernels_compiled_unoptimised_stay_out_of_pynndescents_cache():
    """Where the tests compile numba's kernels unoptimised (``NUMBA_OPT=0``),
    numba caches them in a folder of the tests' own: its cache key does not
    see the optimisation level, and every later process on the machine
    loads what pynndescent's own cache holds."""
    import importlib.util

    import numba

    if numba.config.OPT != 0:
        pytest.skip("numba compiles optimised kernels in this run: its own cache is theirs")
    package = pathlib.Path(importlib.util.find_spec("pynndescent").origin).parent
    cache = pathlib.Path(numba.config.CACHE_DIR).resolve()
    assert numba.config.CACHE_DIR and package.resolve() not in (cache, *cache.parents), cache


@pytest.mark.parametrize("kwargs, match", [
    (dict(method="nndescent", candidates=5), "candidates"),
    (dict(method="nndescent", candidates=2.5), "candidates"),
    (dict(method="exact", candidates=30), "candidates"),
    (dict(method="nndescent", n_jobs=0), "n_jobs"),
    (dict(method="nndescent", devices=1), "devices"),
    (dict(method="nndescent", n_trees=0), "n_trees"),
    (dict(method="nndescent", n_iters=2.0), "n_iters"),
    (dict(method="exact", n_trees=4), "n_trees"),
    (dict(method="exact", n_jobs=4), "n_jobs applies to method='nndescent' only"),  # was ignored
    (dict(method="approx", n_iters=4), "n_iters"),
    (dict(method="approx", recall_target=0.0), "recall_target"),
    (dict(method="approx", recall_target=1.5), "recall_target"),
])
def test_nndescent_options_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        jaxnn.knn_graph(_data(m=50, d=3), 5, **kwargs)


@NNDESCENT
def test_nndescent_with_duplicates_drops_self_by_index():
    X = np.repeat(_data(m=60, d=3), 3, axis=0)  # every point three times
    g = np.asarray(jaxnn.knn_graph(X, 4, method="nndescent").indices)
    assert not np.any(g == np.arange(len(X))[:, None])
    assert g.min() >= 0


def test_inverse_neighbors():
    X = _data(m=120)
    nb = np.asarray(jaxnn.knn_graph(X, 5).indices)
    inv = jaxnn.inverse_neighbors(nb)
    members, counts = np.asarray(inv.members), np.asarray(inv.counts)
    assert counts.sum() == 120 * 5
    for j in range(120):
        expect = np.nonzero((nb == j).any(axis=1))[0]
        np.testing.assert_array_equal(members[j, : counts[j]], expect)
        assert np.all(members[j, counts[j] :] == 120)


@pytest.mark.parametrize("n, m, k", [(40, 50, 3), (1, 1, 1), (9_000, 70_000, 8)])  # m > 2**16: two radix digits
def test_inverse_csr_lists_each_inverse_neighbourhood_in_increasing_order(n, m, k):
    from jaxnn._src.inverse import inverse_csr

    nb = np.random.default_rng(m).integers(0, m, (n, k))
    counts, starts, sources = inverse_csr(nb, m)
    rows, targets = np.repeat(np.arange(n), k), nb.reshape(-1)
    order = np.lexsort((rows, targets))  # by j, then by i
    np.testing.assert_array_equal(sources, rows[order])
    np.testing.assert_array_equal(counts, np.bincount(targets, minlength=m))
    np.testing.assert_array_equal(starts, np.concatenate([[0], np.cumsum(counts)[:-1]]))


def test_inverse_neighbors_device_build_equals_host(monkeypatch):
    """Large members arrays are scattered on the device: same result."""
    from jaxnn._src import inverse

    nb = np.asarray(jaxnn.knn_graph(_data(m=150), 6).indices)
    host = jaxnn.inverse_neighbors(nb)
    monkeypatch.setattr(inverse, "DEVICE_MEMBERS_MIN", 0)
    device = jaxnn.inverse_neighbors(nb)
    np.testing.assert_array_equal(np.asarray(device.members), np.asarray(host.members))
    np.testing.assert_array_equal(np.asarray(device.counts), np.asarray(host.counts))
    assert device.members.dtype == host.members.dtype


@pytest.mark.parametrize(
    "X, k, err",
    [
        (np.zeros((5, 2)), 5, ValueError),  # k >= m
        (np.zeros((5, 2)), 0, ValueError),
        (np.zeros((5, 2)), 2.5, TypeError),
        (np.zeros(5), 2, ValueError),
        (np.array([[0.0, np.nan], [1, 1], [2, 2]]), 1, ValueError),
        (np.array([[0.0, np.inf], [1, 1], [2, 2]]), 1, ValueError),
    ],
)
def test_graph_bad_inputs(X, k, err):
    with pytest.raises(err):
        jaxnn.knn_graph(X, k)


def test_graph_checks_the_type_shape_and_range_of_X_and_options():
    for bad in ("abc", None, {}):
        with pytest.raises(TypeError, match="X must be a 2-D numeric array"):
            jaxnn.knn_graph(bad, 2)
    with pytest.raises(ValueError, match="rectangular"):
        jaxnn.knn_graph([[0.0, 1.0], [2.0]] * 5, 2)
    with pytest.raises(ValueError, match="float32 range"):
        jaxnn.knn_graph(_data(m=10).astype(np.float64) * 1e39, 2)
    for bad in (2.7, True, "4"):
        with pytest.raises(TypeError, match="block_size"):
            jaxnn.knn_graph(_data(m=10), 2, block_size=bad)
    with pytest.raises(ValueError, match="seed must be >= 0"):
        jaxnn.knn_graph(_data(m=10), 2, method="nndescent", seed=-1)
    with pytest.raises(TypeError, match="seed must be an integer"):
        jaxnn.knn_graph(_data(m=10), 2, seed="a")


def test_integer_points_beyond_int32_are_not_wrapped():
    # int64 2**40 would wrap to 0 in int32, making row 0 a copy of the query
    X = np.array([[2**40, 0], [0, 1]], dtype=np.int64)
    nb = jaxnn.knn_query(X, np.array([[0, 0]]), 1)
    assert int(np.asarray(nb.indices)[0, 0]) == 1


def test_inverse_neighbors_checks_its_indices():
    nb = np.asarray(jaxnn.knn_graph(_data(m=10), 3).indices)
    from_graph = jaxnn.inverse_neighbors(jaxnn.knn_graph(_data(m=10), 3))
    np.testing.assert_array_equal(np.asarray(from_graph.members), np.asarray(jaxnn.inverse_neighbors(nb).members))
    with pytest.raises(TypeError, match="integers"):
        jaxnn.inverse_neighbors(nb.astype(float))
    with pytest.raises(TypeError, match="m must be an integer"):
        jaxnn.inverse_neighbors(nb, m="abc")
    with pytest.raises(TypeError, match="m must be an integer"):
        jaxnn.inverse_neighbors(nb, m=10.0)


def test_graph_bad_method():
    with pytest.raises(ValueError, match="method"):
        jaxnn.knn_graph(_data(m=10), 2, method="kdtree")


def test_query_feature_mismatch():
    with pytest.raises(ValueError, match="features"):
        jaxnn.knn_query(_data(m=10), _data(m=3, d=4), 2)


def test_two_stage_selection_is_exact_with_ties():
    """m > 3·k·32 takes the grouped partial selection; it must stay exact,
    ties by lower index included (every point appears twice)."""
    base = _data(m=1600, d=3, seed=4)
    X = np.concatenate([base, base])  # duplicates: i and i + 1600 coincide
    g = np.asarray(jaxnn.knn_graph(X, 5).indices)
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d2, np.inf)
    ref = np.argsort(d2, axis=1, kind="stable")[:, :5]
    # equal distances computed two ways may differ in the last bit: compare distances, then ties
    ref_d = np.take_along_axis(d2, ref, 1)
    got_d = np.take_along_axis(d2, g, 1)
    np.testing.assert_allclose(got_d, ref_d, rtol=1e-4, atol=1e-5)
    assert np.all(g[:1600, 0] == np.arange(1600) + 1600)  # the exact duplicate first
    assert np.all(g[1600:, 0] == np.arange(1600))
    q = np.asarray(jaxnn.knn_query(X, base[:50], 2).indices)
    np.testing.assert_array_equal(q, np.stack([np.arange(50), np.arange(50) + 1600], 1))


def _brute_force(X, Q=None, k=5):
    """float64 exact neighbours by explicit differences (self excluded when Q is None)."""
    X = np.asarray(X, np.float64)
    Q = X if Q is None else np.asarray(Q, np.float64)
    d2 = ((Q[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    if Q is X:
        np.fill_diagonal(d2, np.inf)
    idx = np.argsort(d2, axis=1, kind="stable")[:, :k]
    return idx, np.sqrt(np.take_along_axis(d2, idx, 1))


@pytest.mark.parametrize("transform", ["offset 1e3", "offset 1e4", "constant column 1e4", "scale 1e19", "scale 1e-20",
                                       "positive 1e37", "uniform 1e38"])
def test_search_is_exact_for_offset_and_scaled_points(transform):
    # ‖q‖² + ‖x‖² − 2q·x cancels under an offset (float32 +10³: 84 % of rows
    # wrong, +10⁴: all) and overflows / underflows for scaled points (NaN
    # distances at 10¹⁹, zeros at 10⁻²⁰); the search conditions the points first —
    # scaled to below 1 before the mean is summed (near 10³⁷ it overflowed: 0.4 % of
    # the graph right) and spread 2¹²⁷ and more (its power of two was inf)
    rng = np.random.default_rng(0)
    X0 = rng.normal(size=(300, 4)).astype(np.float32)
    X = {"offset 1e3": X0 + np.float32(1e3), "offset 1e4": X0 + np.float32(1e4),
         "constant column 1e4": np.c_[X0, np.full(300, 1e4, np.float32)],
         "scale 1e19": X0 * np.float32(1e19), "scale 1e-20": X0 * np.float32(1e-20),
         "positive 1e37": np.abs(X0) * np.float32(1e37),
         "uniform 1e38": (rng.uniform(-1, 1, (300, 4)) * 3e38).astype(np.float32)}[transform]
    if transform == "uniform 1e38":  # distances beyond float32: the neighbours are exact, the distances inf
        np.testing.assert_array_equal(np.asarray(jaxnn.knn_graph(X, 5).indices), _brute_force(X)[0])
        return
    nb = jaxnn.knn_graph(X, 5)
    ref_idx, ref_dist = _brute_force(X)
    np.testing.assert_array_equal(np.asarray(nb.indices), ref_idx)
    # all-positive points: the nearest distances are small beside the spread, so the
    # expansion's float32 rounding shows (as for np.abs(X0) itself)
    rtol = 1e-4 if transform == "positive 1e37" else 1e-5
    np.testing.assert_allclose(np.asarray(nb.distances, np.float64), ref_dist, rtol=rtol)
    q = np.asarray(jaxnn.knn_query(X, X[:40] * np.float32(1.0001), 3).indices)  # queries shifted alike
    np.testing.assert_array_equal(q, _brute_force(X, X[:40] * np.float32(1.0001), 3)[0])


def test_search_keeps_exact_ties_of_grid_points():
    # integer points offset far from 0: shifting by a multiple of the spread's
    # power of two is exact, so equal distances stay equal and the lower index wins
    X = np.random.default_rng(1).integers(0, 4, size=(200, 2)).astype(np.float32) + np.float32(3e4)
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_graph(X, 6).indices), _brute_force(X, k=6)[0])
    # a finer grid, where shifting by the mean itself (not rounded to the grid) breaks ties
    X = np.random.default_rng(0).integers(0, 50, size=(300, 3)).astype(np.float32) + np.float32(3e4)
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_graph(X, 6).indices), _brute_force(X, k=6)[0])


@pytest.mark.parametrize("exclude_self", [True, False])
@pytest.mark.slow
def test_chunked_search_is_exact(exclude_self):
    """The column-chunked search (used from CHUNKED_MIN_M points on), run on a
    small set with exact duplicates, returns the k nearest points: their true
    (float64) distances are the k smallest, up to the rounding of the norm expansion."""
    from jaxnn._src import search as search_mod

    X = np.repeat(_data(m=3000, d=6), [1, 2] * 1500, axis=0).astype(np.float32)  # 4500 rows, ties
    rows = np.arange(len(X)) if exclude_self else np.arange(0, len(X), 7)
    idx, dist = search_mod._chunked_topk(jnp.asarray(X[rows]), jnp.asarray(X), 10, 128, exclude_self)
    idx, dist = np.asarray(idx), np.asarray(dist)
    X64 = X.astype(np.float64)
    true = np.sqrt(((X64[rows][:, None, :] - X64[None, :, :]) ** 2).sum(-1))
    if exclude_self:
        true[np.arange(len(rows)), rows] = np.inf
    kth = np.sort(true, axis=1)[:, :10]
    got = np.take_along_axis(true, idx, axis=1)
    np.testing.assert_allclose(np.sort(got, axis=1), kth, atol=2e-3)  # the norm expansion's rounding
    np.testing.assert_allclose(dist, got, atol=3e-3)
    assert not np.any(idx == rows[:, None]) if exclude_self else True
    assert all(len(set(r)) == 10 for r in idx)
    assert search_mod.search_kernel(search_mod.CHUNKED_MIN_M, 64, 10, "cpu") is search_mod._chunked_topk
    assert search_mod.search_kernel(search_mod.CHUNKED_MIN_M - 1, 64, 10, "cpu") is search_mod._onepass_topk


def test_search_layout_follows_the_platform():
    """CPU: column chunks from CHUNKED_MIN_M points, tiles of ≤ 2²⁴ distances;
    a GPU: the fused kernel from FUSED_MIN_M points; below it, and on a TPU,
    one pass over whole rows, tiles of ≤ 2²⁷ (128 rows up to 10⁶ points)."""
    import jax

    from jaxnn._src import search as search_mod

    m = 1_000_000
    assert search_mod.search_kernel(m, 64, 10, "gpu") is search_mod._fused_topk
    assert search_mod.search_kernel(search_mod.FUSED_MIN_M, 64, 10, "gpu") is search_mod._fused_topk
    assert search_mod.search_kernel(search_mod.FUSED_MIN_M - 1, 64, 10, "gpu") is search_mod._onepass_topk
    assert search_mod.search_kernel(m, 64, 10, "gpu", np.float64) is search_mod._onepass_topk  # float32 only
    big_k = search_mod.FUSED_MIN_M // (search_mod.TWO_STAGE_MIN_RATIO * 32) + 1  # candidates over a third of the points
    assert search_mod.search_kernel(search_mod.FUSED_MIN_M, 64, big_k, "gpu") is search_mod._onepass_topk
    assert search_mod.search_kernel(m, 64, 10, "tpu") is search_mod._onepass_topk
    assert search_mod.search_kernel(m, 64, 10, "cpu") is search_mod._chunked_topk
    assert search_mod.block_rows(m, None, "cpu") == 16
    assert search_mod.block_rows(m, None, "gpu") == 128
    assert search_mod.block_rows(10**7, None, "gpu") == 13
    assert search_mod.block_rows(m, 7, "gpu") == 7  # an explicit block_size wins
    here = jax.default_backend()
    assert search_mod.search_kernel(m, 64, 10) is search_mod.search_kernel(m, 64, 10, here)
    assert search_mod.block_rows(m, None) == search_mod.block_rows(m, None, here)


@pytest.mark.parametrize(("m", "d", "k", "groups", "block_rows"), [(7000, 13, 2, 64, 64), (3000, 3, 8, 32, 32)])
def test_fused_search_is_the_one_pass_search(m, d, k, groups, block_rows):
    """The fused kernel's search (a GPU's from FUSED_MIN_M points), run in
    Pallas' interpreter at float32, finds the one-pass search's neighbours
    — exact duplicates (ties to the lower index), features and points
    padded to the kernel's blocks, padding rows (n_valid), self excluded
    from row0 on or not — and the two-level choice of groups (7000 points:
    219 groups of 32, more than 3·32·k)."""
    import jax

    from jaxnn._src import search as search_mod

    rng = np.random.default_rng(3)
    X = rng.normal(size=(m, d)).astype(np.float32)
    X[[100, 2000, 2999]] = X[7]
    Xj = jnp.asarray(X)
    fused = functools.partial(search_mod._fused_topk, precision=jax.lax.Precision.HIGHEST, groups=groups,
                              block_rows=block_rows)
    for Q, exclude_self, row0, n_valid in [(Xj[50:250], True, 50, None), (Xj[:130], True, 0, m - 40),
                                           (jnp.asarray(rng.normal(size=(90, d)).astype(np.float32)), False, 0, None)]:
        got = fused(Q, Xj, k, 128, exclude_self, row0, n_valid=n_valid)
        want = search_mod._onepass_topk(Q, Xj, k, 128, exclude_self, row0, n_valid=n_valid)
        np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
        np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), atol=3e-3)


def test_fused_search_layout():
    """The kernel's layout: tile t's j-th slab holds member j of each of its
    groups; points padded to whole tiles, features to a power of two ≥ 16;
    a query block's minima and candidates within FUSED_BLOCK_ELEMENTS."""
    from jaxnn._src import group_minima
    from jaxnn._src import search as search_mod

    a = np.arange(2 * 32 * 4)
    p = np.asarray(group_minima.permuted(jnp.asarray(a), groups=4))
    t, j, g = 1, 5, 3
    assert p[t * 128 + j * 4 + g] == (t * 4 + g) * 32 + j
    assert sorted(p) == list(a)
    assert group_minima.padded_columns(2049, 64) == 4096 and group_minima.padded_columns(2048, 64) == 2048
    assert [group_minima.feature_width(d) for d in (1, 16, 17, 64, 100)] == [16, 16, 32, 64, 128]
    rows = search_mod.fused_block_rows(10**6, 10, 64)
    assert rows % group_minima.BLOCK_ROWS == 0 and rows * 10**6 // 32 <= search_mod.FUSED_BLOCK_ELEMENTS
    assert search_mod.fused_block_rows(32768, 64, 1024) == group_minima.BLOCK_ROWS  # at least one kernel block


@pytest.mark.parametrize("kernel", ["_onepass_topk", "_chunked_topk"])
def test_search_distances_ask_for_full_float32_matmuls(kernel):
    """Every matmul of both search kernels asks for Precision.HIGHEST: with
    JAX's default an NVIDIA GPU computes float32 products in TF32 (10-bit
    mantissa; an H200 found other neighbours than the CPU for points at
    nearly equal distances) and a TPU in bfloat16 passes."""
    import functools

    from jaxnn._src import search as search_mod

    Q, X = np.ones((40, 5), np.float32), np.ones((300, 5), np.float32)
    fn = functools.partial(getattr(search_mod, kernel), k=3, block=8, exclude_self=False)
    found = matmul_precisions(fn, Q, X)
    assert found, "no matmul traced"
    assert all(is_full_float32(p) for p in found), found


def test_platform_is_where_computations_run(monkeypatch):
    """sharding.platform: the given devices', else jax.default_device's, else
    the default backend's — so a CPU fit under ``jax.default_device(cpu)``
    on a GPU machine gets the CPU layouts."""
    import jax

    assert platforms.platform() == jax.default_backend()
    assert platforms.platform(1) == jax.devices()[0].platform
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")  # as on a GPU machine
    assert platforms.platform() == "gpu"
    with jax.default_device(jax.devices("cpu")[0]):
        assert platforms.platform() == "cpu"
    with jax.default_device("cpu"):
        assert platforms.platform() == "cpu"


@pytest.mark.slow
def test_approx_method_runs_approx_min_k():
    """method="approx" selects with lax.approx_min_k: approximate on TPU, exact
    (XLA's fallback) elsewhere — so here it must equal the exact graph."""
    import jax

    X = _data(m=500, d=5)
    a = np.asarray(jaxnn.knn_graph(X, 7, method="approx", recall_target=0.9).indices)
    assert a.shape == (500, 7) and not np.any(a == np.arange(500)[:, None])
    if jax.default_backend() != "tpu":
        np.testing.assert_array_equal(a, np.asarray(jaxnn.knn_graph(X, 7).indices))


def test_a_long_exact_search_on_cpu_warns_on_the_jaxnn_logger(monkeypatch, caplog):
    """From SLOW_SEARCH_PAIRS (query, training) pairs an exact search on CPU
    warns (minutes at 2·10⁵ points, ~9 min at 10⁶ on 2 cores) and names the
    faster way; below it, or on an accelerator, nothing is said."""
    from jaxnn._src import graph as graph_mod

    X = np.random.default_rng(0).normal(size=(30, 3)).astype(np.float32)
    with caplog.at_level("WARNING", logger="jaxnn"):
        jaxnn.knn_graph(X, 3)
        jaxnn.knn_query(X, X[:5], 3)
    assert not caplog.records
    monkeypatch.setattr(graph_mod, "SLOW_SEARCH_PAIRS", 900)
    with caplog.at_level("WARNING", logger="jaxnn"):
        jaxnn.knn_graph(X, 3)  # 30 × 30 = 900 pairs
        jaxnn.knn_query(X, X[:5], 3)  # 150 pairs: below
        jaxnn.knn_query(X, np.vstack([X] * 2), 3)  # 1800 pairs
    messages = [r.getMessage() for r in caplog.records]
    if jax.default_backend() != "cpu":
        assert not messages
        return
    assert len(messages) == 2 and all(r.levelname == "WARNING" for r in caplog.records)
    assert messages[0].startswith("knn_graph of 30 points: the brute-force search compares all 9.0e+02")
    assert "method='nndescent'" in messages[0]
    assert messages[1].startswith("knn_query of 60 points among 30: the brute-force search compares all 1.8e+03")
    assert "neighbors=" in messages[1]
    caplog.clear()
    with caplog.at_level("WARNING", logger="jaxnn"):
        graph_mod._warn_if_slow(10**6, 10**6, "gpu", "knn_graph", "hint")
    assert not caplog.records


def _two_hop_reference(X, nb, keep, rows=None):
    """float64 NumPy reference of graph.subgraph: per kept point (or per point
    of ``rows``), the kept points within two hops (itself excluded), the k
    nearest; exact search if fewer."""
    X = np.asarray(X, np.float64)
    k = nb.shape[1]
    pos = {int(g): r for r, g in enumerate(keep)}
    targets = keep if rows is None else rows
    out = np.zeros((len(targets), k), np.int64)
    for r, g in enumerate(targets):
        cand = set(nb[g]) | {int(j) for i in nb[g] for j in nb[i]}
        cand = sorted(c for c in cand if c in pos and c != g)
        if len(cand) < k:
            cand = [int(c) for c in keep if c != g]
        d2 = np.sum((X[cand] - X[g]) ** 2, axis=1)
        order = np.lexsort((cand, d2))[:k]
        out[r] = [pos[cand[i]] for i in order]
    return out


@pytest.fixture
def two_hops(monkeypatch):
    """subgraph's two-hop search on these small sets, where it would otherwise
    run the (cheaper there) exact search: n < SUBGRAPH_EXACT_RATIO·k²."""
    from jaxnn._src import graph as graph_mod

    monkeypatch.setattr(graph_mod, "SUBGRAPH_EXACT_RATIO", 0)


@pytest.mark.parametrize("m, d, k, frac", [(300, 2, 5, 0.8), (400, 8, 10, 0.8), (250, 3, 4, 0.3)])
@pytest.mark.slow
def test_subgraph_equals_a_float64_two_hop_reference(m, d, k, frac, two_hops):
    from jaxnn._src.graph import subgraph

    rng = np.random.default_rng(m)
    X = rng.normal(size=(m, d)).astype(np.float32)
    nb = np.asarray(jaxnn.knn_graph(X, k).indices)
    keep = rng.permutation(m)[: int(frac * m)]  # in random order: rows follow keep
    got = subgraph(X, nb, keep)
    assert got.shape == (keep.size, k) and got.dtype == np.int32
    np.testing.assert_array_equal(got, _two_hop_reference(X, nb, keep))
    # from an exact graph, most of the exact graph of the subset (0.97 / 0.96 / 0.91 here;
    # 0.85–0.91 at 10⁵ points, d = 16–64, README)
    exact = np.asarray(jaxnn.knn_graph(X[keep], k).indices)
    recall = np.mean((got[:, :, None] == exact[:, None, :]).any(2))
    assert recall >= (0.95 if frac >= 0.8 else 0.85), recall


@pytest.mark.parametrize("m, d, k", [(300, 2, 5), (400, 8, 10)])
def test_subgraph_finds_other_points_neighbours_among_the_kept_ones(m, d, k, two_hops):
    """``rows=``: the held-out points' k nearest kept points within two hops
    (the float64 reference), and from an exact graph most of their exact
    neighbours among the kept points; a row with too few candidates within
    two hops gets its exact ones."""
    from jaxnn._src.graph import subgraph

    rng = np.random.default_rng(m + 1)
    X = rng.normal(size=(m, d)).astype(np.float32)
    nb = np.asarray(jaxnn.knn_graph(X, k).indices)
    perm = rng.permutation(m)
    keep, held = perm[: int(0.8 * m)], perm[int(0.8 * m):]
    got = subgraph(X, nb, keep, rows=held)
    assert got.shape == (held.size, k) and got.dtype == np.int32
    np.testing.assert_array_equal(got, _two_hop_reference(X, nb, keep, rows=held))
    exact = np.asarray(jaxnn.knn_query(X[keep], X[held], k).indices)
    assert np.mean((got[:, :, None] == exact[:, None, :]).any(2)) >= 0.9
    lone_keep = np.setdiff1d(np.arange(m), np.concatenate([[0], nb[0], nb[nb[0]].ravel()]))
    got0 = subgraph(X, nb, lone_keep, rows=np.array([0]))  # no kept point within two hops of point 0
    np.testing.assert_array_equal(got0, np.asarray(jaxnn.knn_query(X[lone_keep], X[:1], k).indices))


def test_subgraph_from_candidate_lists_takes_each_lists_first_kept_points(two_hops):
    """``candidates=``: each row's first k kept points of its own candidate
    list, in its order (−1 entries and the row itself skipped), for the kept points and for
    ``rows=``; a row with fewer than k kept candidates gets its exact
    neighbours among the kept points; too short lists are refused."""
    from jaxnn._src.graph import subgraph

    m, k = 300, 5
    rng = np.random.default_rng(7)
    X = rng.normal(size=(m, 3)).astype(np.float32)
    nb = np.asarray(jaxnn.knn_graph(X, k).indices)
    cand = np.asarray(jaxnn.knn_graph(X, 2 * k).indices)[:, ::-1].copy()  # any order: the list's is kept
    cand[::7, 3] = -1  # unfilled entries
    perm = rng.permutation(m)
    keep, held = perm[:240], perm[240:]
    cand[keep[0], :] = np.concatenate([held[:8], [-1, keep[1]]])  # one kept candidate: searched exactly
    cand[keep[2], 0] = keep[2]  # a row's own index: skipped
    pos = {int(g): r for r, g in enumerate(keep)}
    for rows in (None, held):
        targets = keep if rows is None else rows
        want = [[pos[int(c)] for c in cand[g] if c >= 0 and c != g and int(c) in pos][:k] for g in targets]
        short = [r for r, w in enumerate(want) if len(w) < k]
        assert rows is not None or 0 in short
        exact = (np.asarray(jaxnn.knn_graph(X[keep], k).indices) if rows is None
                 else np.asarray(jaxnn.knn_query(X[keep], X[held], k).indices))
        for r in short:
            want[r] = list(exact[r])
        got = subgraph(X, nb, keep, rows=rows, candidates=cand)
        assert got.shape == (targets.size, k) and got.dtype == np.int32
        np.testing.assert_array_equal(got, np.array(want))
    with pytest.raises(ValueError, match="candidates"):
        subgraph(X, nb, keep, candidates=cand[:, :k - 1])


@pytest.mark.parametrize("from_lists", [True, False])
def test_subgraph_and_rows_is_both_subgraphs_with_one_exact_search(monkeypatch, from_lists):
    """subgraph_and_rows(X, nb, keep, rows) gives subgraph's two answers (the kept
    points' graph and the rows' neighbours among them) — short rows in both
    parts, from candidate lists or two hops — and finds every short row by one
    exact search, where the two calls search twice."""
    from jaxnn._src import graph as graph_mod

    m, k = 1500, 2  # 1 200 kept ≥ 48·k²: derived, not searched exactly
    rng = np.random.default_rng(11)
    X = rng.normal(size=(m, 3)).astype(np.float32)
    nb = np.asarray(jaxnn.knn_graph(X, k).indices)
    perm = rng.permutation(m)
    keep, held = perm[:1200], perm[1200:]
    cand = np.array(jaxnn.knn_graph(X, 2 * k).indices) if from_lists else None
    if from_lists:
        cand[keep[:3]] = held[:4]  # three kept rows and two held-out rows with no kept candidate
        cand[held[:2]] = held[2:6].reshape(2, 2).repeat(2, axis=1)
    else:
        nb = nb.copy()
        nb[keep[:3]] = held[:2]  # two hops through held-out points only: short
        nb[held[:2]] = held[2:4]
        nb[held[2:4]] = held[4:6]
        nb[held[4:6]] = held[:2]
    searches = []
    real = graph_mod._exact_among
    monkeypatch.setattr(graph_mod, "_exact_among", lambda *a: searches.append(a[0].shape[0]) or real(*a))
    both = graph_mod.subgraph_and_rows(X, nb, keep, held, candidates=cand)
    assert len(searches) == 1
    apart = (graph_mod.subgraph(X, nb, keep, candidates=cand), graph_mod.subgraph(X, nb, keep, rows=held, candidates=cand))
    assert len(searches) == 3
    for got, want in zip(both, apart):
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)
    exact = np.asarray(jaxnn.knn_graph(X[keep], k).indices), np.asarray(jaxnn.knn_query(X[keep], X[held], k).indices)
    np.testing.assert_array_equal(both[0][:3], exact[0][:3])  # the short rows: their exact neighbours
    np.testing.assert_array_equal(both[1][:2], exact[1][:2])


def test_subgraph_falls_back_to_an_exact_search_for_isolated_rows(two_hops):
    """A kept point none of whose two-hop neighbours is kept gets its exact
    neighbours among the kept points."""
    from jaxnn._src.graph import subgraph

    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 2)).astype(np.float32)
    nb = np.asarray(jaxnn.knn_graph(X, 3).indices)
    two_hop = set(nb[0]) | {int(j) for i in nb[0] for j in nb[i]}
    keep = np.array([0] + [i for i in range(60) if i not in two_hop and i != 0])
    got = subgraph(X, nb, keep)
    exact = np.asarray(jaxnn.knn_graph(X[keep], 3).indices)
    np.testing.assert_array_equal(got[0], exact[0])
    np.testing.assert_array_equal(got, _two_hop_reference(X, nb, keep))


def test_subgraph_computes_in_float_and_in_bounded_blocks(monkeypatch, two_hops):
    """uint8 / bool / float16 points give the graph of their float32 values
    (uint8 differences used to wrap); a small element budget (more, smaller
    blocks) gives the same graph; keep is checked."""
    from jaxnn._src import graph as graph_mod

    rng = np.random.default_rng(3)
    Xu = rng.integers(0, 256, (300, 4)).astype(np.uint8)
    Xf = Xu.astype(np.float32)
    nb = np.asarray(jaxnn.knn_graph(Xf, 5).indices)
    keep = rng.permutation(300)[:240]
    want = graph_mod.subgraph(Xf, nb, keep)
    np.testing.assert_array_equal(want, _two_hop_reference(Xf, nb, keep))
    np.testing.assert_array_equal(graph_mod.subgraph(Xu, nb, keep), want)
    np.testing.assert_array_equal(graph_mod.subgraph(Xf.astype(np.float16), nb, keep), want)  # 0..255: exact in float16
    Xb = Xu > 128
    np.testing.assert_array_equal(graph_mod.subgraph(Xb, nb, keep), graph_mod.subgraph(Xb.astype(np.float32), nb, keep))
    monkeypatch.setattr(graph_mod, "SUBGRAPH_ELEMENTS", 4 * 30 * 7)  # 7 rows a block
    np.testing.assert_array_equal(graph_mod.subgraph(Xf, nb, keep), want)
    with pytest.raises(ValueError, match="more than k=5 distinct"):
        graph_mod.subgraph(Xf, nb, keep[:5])
    with pytest.raises(ValueError, match="distinct"):
        graph_mod.subgraph(Xf, nb, np.concatenate([keep, keep[:1]]))


def test_subgraph_for_a_large_k_is_the_exact_graph_of_the_kept_points(monkeypatch):
    """Two hops gather k + k² candidates a row: from n < SUBGRAPH_EXACT_RATIO·k²
    the exact search of the kept points is cheaper and runs instead (at
    n = 24 000 the two hops took 2.4 s for k = 40 against 0.9 s, over a
    minute for k = 200)."""
    from jaxnn._src import graph as graph_mod

    rng = np.random.default_rng(11)
    X = (1e8 + rng.normal(size=(300, 3))).astype(np.float64)  # centred as knn_graph centres
    nb = np.asarray(jaxnn.knn_graph(X, 8).indices)
    keep = rng.permutation(300)[:240]
    assert keep.size < graph_mod.SUBGRAPH_EXACT_RATIO * 8 * 8
    monkeypatch.setattr(graph_mod, "_two_hop_neighbors", None)  # not called
    got = graph_mod.subgraph(X, nb, keep)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.asarray(jaxnn.knn_graph(X[keep], 8).indices))


@pytest.mark.slow
def test_half_precision_points_are_searched_in_float32():
    """float16 squared distances overflow: searches and the baselines compute
    in float32 (the same neighbours as the float32 copy of the data)."""
    rng = np.random.default_rng(0)
    X16 = (rng.normal(size=(200, 3)) * 100 + 500).astype(np.float16)
    X32 = X16.astype(np.float32)
    for given in (X16, jnp.asarray(X16), jnp.asarray(X32, jnp.bfloat16)):
        ref = X32 if given.dtype != jnp.bfloat16 else np.asarray(jnp.asarray(given, jnp.float32))
        np.testing.assert_array_equal(np.asarray(jaxnn.knn_graph(given, 4).indices), np.asarray(jaxnn.knn_graph(ref, 4).indices))
        np.testing.assert_array_equal(np.asarray(jaxnn.knn_query(given, given[:20], 4).indices),
                                      np.asarray(jaxnn.knn_query(ref, ref[:20], 4).indices))
    y = (X32[:, 0] > 500).astype(int)
    np.testing.assert_array_equal(jaxnn.baselines.predict(jaxnn.baselines.knn_fit(X16, y, k=3), X16),
                                  jaxnn.baselines.predict(jaxnn.baselines.knn_fit(X32, y, k=3), X32))


def test_points_masked_arrays_and_non_numeric_kinds():
    """A masked array with masked entries is refused (missing values); without
    any, it is its data; timedelta64 is not a number — the same in fit,
    knn_graph and the baselines."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    masked = np.ma.masked_invalid(np.where(np.eye(40, 3) > 0, np.nan, X))
    plain = np.ma.masked_array(X)
    for call in (lambda A: jaxnn.fit(A, y, k=3, posterior="link"), lambda A: jaxnn.knn_graph(A, 3),
                 lambda A: jaxnn.baselines.knn_fit(A, y, k=3), lambda A: jaxnn.baselines.sgd_fit(A, y, epochs=1)):
        with pytest.raises(ValueError, match="masked"):
            call(masked)
        with pytest.raises(TypeError, match="must hold numbers"):
            call(X.astype("timedelta64[s]"))
        call(plain)  # no masked entries: its data
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_graph(plain, 3).indices), np.asarray(jaxnn.knn_graph(X, 3).indices))


def test_exact_rows_equal_the_exact_graph_rows_with_duplicates():
    """graph._exact_rows (nndescent's repair, subgraph's fallback): the rows of
    the exact graph, self dropped by index even where a duplicate ties it."""
    from jaxnn._src.graph import _exact_rows

    X = np.repeat(_data(m=40, d=3), 2, axis=0)  # i and its twin coincide
    rows = np.array([0, 1, 7, 50, 79])
    full = jaxnn.knn_graph(X, 4)
    idx, dist = _exact_rows(jnp.asarray(X), rows, 4)
    np.testing.assert_array_equal(idx, np.asarray(full.indices)[rows])
    np.testing.assert_allclose(dist, np.asarray(full.distances)[rows], atol=1e-5)


def test_partial_selections_break_ties_by_lower_index():
    """Both grouped selections (one pass from m > 3·k·32, column-chunked) keep
    equal distances in index order: query 0 against 0.5 (301), then 1 (0) and
    −1 (300) at the same distance."""
    from jaxnn._src import search as search_mod

    X = np.full((800, 1), 1000.0, np.float32)
    X[0], X[300], X[301] = 1.0, -1.0, 0.5
    q = np.zeros((1, 1), np.float32)
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_query(X, q, 3).indices), [[301, 0, 300]])
    idx, _ = search_mod._chunked_topk(jnp.zeros((1, 1)), jnp.asarray(X), 3, 1, False)
    np.testing.assert_array_equal(np.asarray(idx), [[301, 0, 300]])


@pytest.mark.parametrize("m, k", [(300, 1), (1001, 3)])
def test_grouped_selection_with_a_partial_last_group(m, k):
    # m not a multiple of the 32-column groups: the last group's padding must never win
    X = np.arange(m, dtype=np.float32)[:, None] + 10
    Q = np.array([[0.0], [m / 2 + 0.25], [m + 20.0]], np.float32)
    got = np.asarray(jaxnn.knn_query(X, Q, k).indices)
    assert got.max() < m
    np.testing.assert_array_equal(got, _brute_force(X, Q, k)[0])


def test_self_distances_are_zero_not_nan():
    # the norm expansion can round below 0: clipped before the square root
    X = np.random.default_rng(0).normal(size=(200, 7)).astype(np.float32)
    d = np.asarray(jaxnn.knn_query(X, X, 1).distances)
    assert np.isfinite(d).all() and d.max() < 1e-2


def test_query_takes_k_equal_to_m():
    X = np.arange(5, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_query(X, np.zeros((1, 1), np.float32), 5).indices), [[0, 1, 2, 3, 4]])


def test_exact_rows_of_coincident_points_in_index_order():
    from jaxnn._src.graph import _exact_rows

    idx, _ = _exact_rows(jnp.zeros((60, 2), jnp.float32), np.array([30]), 40)  # every distance ties
    np.testing.assert_array_equal(np.asarray(idx)[0], list(range(30)) + list(range(31, 41)))


def test_inverse_neighbors_of_a_point_nobody_chose():
    # the last point is nobody's neighbour: its count 0, its row all padding (m), and
    # the width is the largest count, no wider
    inv = jaxnn.inverse_neighbors(np.array([[1], [0], [0]]))
    np.testing.assert_array_equal(np.asarray(inv.counts), [2, 1, 0])
    np.testing.assert_array_equal(np.asarray(inv.members), [[1, 2], [0, 3], [3, 3]])


def test_approx_method_takes_recall_target_one():
    X = _data(m=50, d=3)
    g = jaxnn.knn_graph(X, 3, method="approx", recall_target=1.0)  # the range is (0, 1]
    np.testing.assert_array_equal(np.asarray(g.indices), np.asarray(jaxnn.knn_graph(X, 3).indices))


class _FakeNNDescent:
    """Stands in for ``pynndescent.NNDescent`` (no numba): exact float64
    neighbours, self included, with a duplicate point's twin placed before it
    and row 5 filled only to its third neighbour (−1 after), as pynndescent may; its
    queries leave row 2 unfilled."""

    built = []
    jobs = []

    def __init__(self, X, n_neighbors, random_state, n_jobs, **options):
        self.X = np.asarray(X, np.float64)
        self.built.append(n_neighbors)
        self.jobs.append(n_jobs)
        d2 = ((self.X[:, None] - self.X[None]) ** 2).sum(-1)
        np.fill_diagonal(d2, -1.0)  # self first ...
        idx = np.argsort(d2, axis=1, kind="stable")[:, :n_neighbors]
        idx[0, :2] = idx[0, [1, 0]]  # ... but row 0's twin (row 1, distance 0) before it
        dist = np.sqrt(np.maximum(np.take_along_axis(d2, idx, 1), 0.0))
        idx[5, 3:], dist[5, 3:] = -1, np.inf  # among row 5's k nearest others
        self.neighbor_graph = (idx, dist)

    def query(self, Q, k):
        d2 = ((np.asarray(Q, np.float64)[:, None] - self.X[None]) ** 2).sum(-1)
        idx = np.argsort(d2, axis=1, kind="stable")[:, :k]
        dist = np.sqrt(np.take_along_axis(d2, idx, 1))
        idx[2, -1], dist[2, -1] = -1, np.inf
        return idx, dist


def test_nndescent_drops_self_by_index_and_repairs_unfilled_rows(monkeypatch):
    """The wrapper asks pynndescent for candidates + 1 neighbours, drops each
    point itself by index (not column 0: a duplicate may come first), keeps the
    k nearest, and searches exactly the rows pynndescent left unfilled."""
    from jaxnn._src import graph

    # the fake in place of the module: importing pynndescent compiles numba kernels for tens of
    # seconds, which the tests marked xdist_group("nndescent") pay on their worker alone
    monkeypatch.setitem(sys.modules, "pynndescent", types.SimpleNamespace(NNDescent=_FakeNNDescent))
    _FakeNNDescent.built.clear()
    X = _data(m=40, d=3, seed=2)
    X[1] = X[0]  # a duplicate pair
    k = 4
    nb, index, candidates = graph.nndescent_index(X, k, 0, 6, 1)
    assert _FakeNNDescent.built == [7]
    # every row's 6 candidates, self dropped by index, in order; row 5's unfilled ones −1
    raw = index.neighbor_graph[0]
    for i in range(X.shape[0]):
        np.testing.assert_array_equal(candidates[i], [j for j in raw[i] if j != i][:6])
    assert (candidates[5, 2:] == -1).all() and (candidates[np.arange(40) != 5] >= 0).all()
    want = np.asarray(jaxnn.knn_graph(X, k).indices)
    np.testing.assert_array_equal(np.asarray(nb.indices), want)
    assert np.asarray(nb.indices)[0, 0] == 1 and np.asarray(nb.indices)[1, 0] == 0
    _FakeNNDescent.jobs.clear()
    jaxnn.knn_graph(X, k, method="nndescent")
    assert _FakeNNDescent.jobs == [-1]  # every core by default
    Q = X[:6] + np.float32(0.01)
    q = graph.nndescent_query(index, X, Q, k)
    np.testing.assert_array_equal(np.asarray(q.indices), np.asarray(jaxnn.knn_query(X, Q, k).indices))
    assert np.isfinite(np.asarray(q.distances)).all()


@pytest.mark.parametrize("offset", [1e6, 1e8])
def test_float64_points_far_from_zero_keep_their_neighbours(offset):
    # cast to float32 as given, points at 10⁶ ± 1 lost half their neighbours and at
    # 10⁸ ± 1 all became one point; each feature is now centred in float64 first
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(300, 3))
    X = Z + offset * np.array([1.0, -2.0, 0.0])  # the third feature stays where it is
    ref = np.argsort(((Z[:, None] - Z[None]) ** 2).sum(-1), axis=1)[:, 1:6]
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_graph(X, 5).indices), ref)
    Q = rng.normal(size=(40, 3))
    ref_q = np.argsort(((Q[:, None] - Z[None]) ** 2).sum(-1), axis=1)[:, :5]
    got = jaxnn.knn_query(X, Q + offset * np.array([1.0, -2.0, 0.0]), 5)
    np.testing.assert_array_equal(np.asarray(got.indices), ref_q)
    np.testing.assert_allclose(np.asarray(got.distances), np.sort(np.sqrt(((Q[:, None] - Z[None]) ** 2).sum(-1)), 1)[:, :5],
                               rtol=1e-5)


def test_float32_origin_centres_only_features_far_from_zero():
    from jaxnn._src.points import CENTRE_RATIO, float32_origin

    X = np.array([[0.0, 1e9, 5.0], [1.0, 1e9 + 1, 7.0], [2.0, 1e9 + 3, 5.0]])
    origin = float32_origin(X)
    assert origin[0] == 0 and origin[2] == 0 and origin[1] == np.float32(np.mean(X[:, 1]))
    assert float32_origin(X.astype(np.float32)) is None  # already float32: nothing to keep
    assert float32_origin(np.arange(12, dtype=np.int16).reshape(4, 3) + 30000) is None  # exact in float32
    assert float32_origin(np.array([[1_700_000_000], [1_700_000_060]], dtype=np.int64))[0] == np.float32(1.7e9 + 30)
    # at the ratio itself nothing moves; just beyond it the feature is centred
    spread = np.array([[-0.5], [0.5]])  # a range of 1
    assert float32_origin(spread + CENTRE_RATIO) is None
    assert float32_origin(spread + CENTRE_RATIO * 1.001) is not None


def test_knn_query_names_its_own_arguments():
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match="X_query has 2 features but X_train has 3"):
        jaxnn.knn_query(X, X[:, :2], 3)
    with pytest.raises(ValueError, match="X_query contains NaN"):
        jaxnn.knn_query(X, np.full((2, 3), np.nan), 3)


def test_inverse_neighbors_at_a_given_width():
    """width pads members with the sentinel m beyond the largest inverse
    neighbourhood; narrower than it is refused by name; shared_width rounds
    to three significant bits (at most a quarter more)."""
    from jaxnn._src.shared_sizes import shared_width

    nb = np.array([[1, 2], [0, 2], [0, 1], [0, 1]])
    exact = jaxnn.inverse_neighbors(nb)
    wide = jaxnn.inverse_neighbors(nb, width=7)
    assert exact.members.shape == (4, 3) and wide.members.shape == (4, 7)
    np.testing.assert_array_equal(np.asarray(wide.members)[:, :3], np.asarray(exact.members))
    assert np.all(np.asarray(wide.members)[:, 3:] == 4)
    np.testing.assert_array_equal(np.asarray(wide.counts), np.asarray(exact.counts))
    with pytest.raises(ValueError, match="narrower than the largest inverse neighbourhood"):
        jaxnn.inverse_neighbors(nb, width=2)
    with pytest.raises(TypeError, match="width"):
        jaxnn.inverse_neighbors(nb, width=3.5)
    assert [shared_width(P) for P in (1, 7, 8, 9, 71, 73, 78, 80, 81, 290)] == [1, 7, 8, 10, 80, 80, 80, 80, 96, 320]
    for P in range(1, 5000):
        assert P <= shared_width(P) <= 1.25 * P


@pytest.mark.parametrize("kind", ["gaussian", "grid ties", "far from 0", "int64", "bool", "jax"])
@pytest.mark.slow
def test_graph_and_query_equals_the_graph_and_the_query_searched_apart(kind):
    """fit(posterior="auto") finds the 80 %'s graph and the scored points'
    neighbours in one search (one compilation instead of two): the same
    neighbours as knn_graph and knn_query, and as a float64 reference —
    exact ties (grid points, duplicates) to the lower index, points far from 0
    centred first."""
    from jaxnn._src.graph import graph_and_query

    rng = np.random.default_rng(3)
    Z = rng.normal(size=(260, 5))
    X = {"gaussian": Z.astype(np.float32),
         "grid ties": rng.integers(0, 3, (260, 3)).astype(np.float32),
         "far from 0": Z + 1e8,
         "int64": rng.integers(-5, 6, (260, 4)) + np.int64(3_000_000_000),
         "bool": rng.random((260, 7)) > 0.5,
         "jax": jnp.asarray(Z, jnp.float32)}[kind]
    X_train, X_query = X[:200], X[200:]
    graph, query = graph_and_query(X_train, X_query, 6)
    assert graph.shape == (200, 6) and query.shape == (60, 6) and graph.dtype == query.dtype == np.int32
    np.testing.assert_array_equal(graph, np.asarray(jaxnn.knn_graph(X_train, 6).indices))
    np.testing.assert_array_equal(query, np.asarray(jaxnn.knn_query(X_train, X_query, 6).indices))
    if kind != "gaussian":  # exact distances (a grid) or ones far from float32 ties: the reference's order
        ref = np.asarray(X, np.float64) - (np.asarray(X, np.float64).mean(0) if kind in ("far from 0", "int64") else 0)
        np.testing.assert_array_equal(graph, _brute_force(ref[:200], k=6)[0])
        np.testing.assert_array_equal(query, _brute_force(ref[:200], ref[200:], k=6)[0])


def test_graph_and_query_names_its_arguments():
    from jaxnn._src.graph import graph_and_query

    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match="X_query has 2 features but X_train has 3"):
        graph_and_query(X, X[:4, :2], 3)
    with pytest.raises(ValueError, match="k must be < the number of training points"):
        graph_and_query(X, X[:4], 20)
    with pytest.raises(ValueError, match="X_query contains NaN"):
        graph_and_query(X, np.full((2, 3), np.nan), 3)


def test_jax_integer_points_far_from_zero_are_centred_like_numpy_ones():
    """int32 points at 10⁹ ± a few (timestamps): a NumPy array was centred
    before the float32 cast, a JAX array was not (0 rows of the graph right,
    the k-NN baseline 0.395 for 0.785)."""
    from jaxnn import baselines
    from jaxnn._src.graph import subgraph

    rng = np.random.default_rng(0)
    small = rng.integers(-6, 7, (300, 3))
    Q = rng.integers(-6, 7, (50, 3))
    y = (small[:, 0] > 0).astype(int)
    big, big_q = (a.astype(np.int32) + np.int32(1_000_000_000) for a in (small, Q))
    ref = np.asarray(jaxnn.knn_graph(small, 5).indices)
    ref_q = np.asarray(jaxnn.knn_query(small, Q, 5).indices)
    for train, query in [(big, jnp.asarray(big_q)), (jnp.asarray(big), jnp.asarray(big_q)), (jnp.asarray(big), big_q)]:
        np.testing.assert_array_equal(np.asarray(jaxnn.knn_graph(train, 5).indices), ref)
        np.testing.assert_array_equal(np.asarray(jaxnn.knn_query(train, query, 5).indices), ref_q)
        knn = baselines.knn_fit(train, y, k=5)
        np.testing.assert_array_equal(baselines.predict(knn, query), baselines.predict(baselines.knn_fit(small, y, k=5), Q))
    keep = np.arange(0, 300, 2)
    np.testing.assert_array_equal(subgraph(jnp.asarray(big), ref, keep), subgraph(small, ref, keep))
    np.testing.assert_array_equal(subgraph(small.astype(np.float64) + 1e8, ref, keep), subgraph(small, ref, keep))


@pytest.mark.parametrize("m", [20, 300])
def test_a_small_exact_search_returns_its_nearest_lists(m):
    """graph_candidates(method="exact") on at most SMALL_K_MAX_ROWS points
    returns the search's shared_k (64) columns as candidate lists: their first
    k are the graph, the rest the next nearest in order, −1 past the m − 1
    other points."""
    from jaxnn._src.graph import graph_candidates

    X = np.random.default_rng(3).normal(size=(m, 3)).astype(np.float32)
    found, lists = graph_candidates(X, 5)
    assert lists.shape == (m, 64) and lists.dtype == np.int32
    np.testing.assert_array_equal(lists[:, :5], np.asarray(found.indices))
    others = min(64, m - 1)
    np.testing.assert_array_equal(lists[:, :others], np.asarray(jaxnn.knn_graph(X, others).indices))
    assert np.all(lists[:, others:] == -1)
