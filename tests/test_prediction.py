"""decision_function, predict_proba and predict: given neighbours, jit, shared compiled programs, labels, float64 models."""

import dataclasses
import os
import pickle
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxnn
from jaxnn._src import shared_sizes as sizes_mod

sys.path.insert(0, os.path.dirname(__file__))
from _data import _blobs, reference_posteriors  # noqa: E402


def test_posteriors_and_determinism():
    X, y = _blobs(m=200, seed=2)
    Xq, _ = _blobs(m=50, seed=9)
    m1 = jaxnn.fit(X, y, k=5, chooser="random", seed=4)
    m2 = jaxnn.fit(X, y, k=5, chooser="random", seed=4)
    m3 = jaxnn.fit(X, y, k=5, chooser="random", seed=5)
    np.testing.assert_array_equal(np.asarray(m1.alpha), np.asarray(m2.alpha))
    assert not np.array_equal(np.asarray(m1.alpha), np.asarray(m3.alpha))
    p = np.asarray(jaxnn.predict_proba(m1, Xq))
    assert p.shape == (50, 3) and p.min() >= 0 and p.max() <= 1
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-5)
    link = jaxnn.fit(X, y, k=5, chooser="random", seed=4, posterior="link")
    votes = jaxnn.fit(X, y, k=5, chooser="random", seed=4, posterior="votes")
    assert link.posterior_mix == 0.0 and votes.posterior_mix == 1.0 and m1.posterior_mix == 0.0
    assert link.posterior_temperature == votes.posterior_temperature == 0.0
    pl, pv = np.asarray(jaxnn.predict_proba(link, Xq)), np.asarray(jaxnn.predict_proba(votes, Xq))
    # the default ("auto"): (1 - eps) softmax(H / T + w log(kappa + delta)) + eps / C, fit on held-out data
    T = m1.posterior_temperature
    assert T > 0 and T == m2.posterior_temperature
    np.testing.assert_allclose(p, reference_posteriors(m1, Xq), rtol=1e-4, atol=1e-6)
    assert p.min() > 0 and p.max() < 1
    np.testing.assert_array_equal(np.argmax(p, axis=1), jaxnn.predict(m1, Xq))
    nb = np.asarray(jaxnn.knn_query(X, Xq, 5).indices)
    np.testing.assert_allclose(pv, np.stack([(y[nb] == c).mean(1) for c in range(3)], 1), atol=1e-6)
    H = np.asarray(jaxnn.decision_function(link, Xq))
    raw = np.asarray(link.loss.posterior(H))
    np.testing.assert_allclose(pl, raw / raw.sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(jaxnn.predict(m1, Xq), jaxnn.predict(m2, Xq))
    H = np.asarray(jaxnn.decision_function(m1, Xq))
    np.testing.assert_array_equal(jaxnn.predict(m1, Xq), np.argmax(H, axis=1))


@pytest.mark.xdist_group("nndescent")  # pynndescent's numba compilation (~45 s) once per worker
def test_prediction_from_a_pynndescent_index_readme_recipe():
    """The README's recipe: a pynndescent index on model.X, queried for k
    neighbours, fed to predict(neighbors=) — pynndescent's int32 (n, k) result
    is taken as it is, and its labels agree with the exact search's."""
    from pynndescent import NNDescent

    X, y = _blobs(m=400, C=3, seed=1)
    model = jaxnn.fit(X[:300], y[:300], k=5, posterior="link")
    # a writeable copy, as the README says: a read-only array (np.asarray) makes numba
    # compile pynndescent's kernels a second time in this process (~45 s)
    index = NNDescent(np.array(model.X), n_neighbors=30, random_state=0)
    index.prepare()
    nb, _ = index.query(X[300:], k=model.k)
    assert nb.shape == (100, 5)
    agree = np.mean(jaxnn.predict(model, neighbors=nb) == jaxnn.predict(model, X[300:]))
    assert agree >= 0.95, agree


def test_predict_breaks_ties_by_the_vote_then_the_nearest_neighbour_and_zero_is_negative():
    """H tied across classes → the tied class with the most of the k
    neighbours, a tied vote → the tied class of the nearest neighbour (not the
    first class); a multilabel H_c = 0 → not that label (H > 0), eagerly and
    under jit."""
    X, y = _blobs(m=60, C=3, seed=2)

    def rows(classes):  # neighbour rows, nearest first, of distinct training examples of the given classes
        return np.array([[np.flatnonzero(y == c)[list(row[:i]).count(c)] for i, c in enumerate(row)]
                         for row in classes])

    # class votes 1:2:2 and 2:2:1 (the nearest in a tied class), 1:2:2 (the nearest in the untied class:
    # the nearest tied neighbour's class wins), 1:3:1
    nb = rows([[2, 2, 1, 1, 0], [1, 0, 0, 1, 2], [0, 1, 1, 2, 2], [2, 1, 1, 1, 0]])
    tied_y = np.array([2, 1, 1, 1])
    nb3 = rows([[1, 2, 0], [2, 0, 1]])  # 1:1:1 at k = 3: the nearest neighbour's
    first = [int(np.flatnonzero(y == c)[0]) for c in range(3)]  # an example of each class, for its label
    for labels in (y + 10, np.array(["b", "a", "c"])[y]):
        model = jaxnn.fit(X, labels, k=5, posterior="link")
        flat = dataclasses.replace(model, alpha=jnp.zeros_like(model.alpha))  # H ≡ 0 everywhere
        near = np.asarray(jaxnn.knn_query(X, X[:7], 5).indices)
        assert np.all(y[near] == y[near[:, :1]])  # X[:7]: unanimous neighbours, of more than one class
        want = labels[near[:, 0]]
        assert len(set(want)) > 1
        assert np.all(jaxnn.predict(flat, X[:7]) == want)
        np.testing.assert_array_equal(jaxnn.predict(flat, neighbors=nb), labels[first][tied_y])
        flat3 = dataclasses.replace(flat, k=3)
        np.testing.assert_array_equal(jaxnn.predict(flat3, neighbors=nb3), labels[first][[1, 2]])
        if labels.dtype.kind == "i":
            assert np.all(np.asarray(jax.jit(jaxnn.predict)(flat, X[:7])) == want)
            np.testing.assert_array_equal(np.asarray(jax.jit(lambda m, q: jaxnn.predict(m, neighbors=q))(flat, nb)),
                                          labels[first][tied_y])
    Y = np.stack([y == 0, y != 0], axis=1).astype(int)
    multi = jaxnn.fit(X, Y, k=5, posterior="link")
    flat = dataclasses.replace(multi, alpha=jnp.zeros_like(multi.alpha))
    assert jaxnn.predict(flat, X[:7]).sum() == 0
    assert int(jax.jit(jaxnn.predict)(flat, X[:7]).sum()) == 0


@pytest.mark.parametrize("labels", [np.array([3, 2**40]), np.array([1, 2**64 - 1], np.uint64),
                                    np.array([0.0, 2.0**24 + 1]), np.array([-1.0, 1e300])])
def test_predict_under_jit_refuses_labels_jax_cannot_hold(labels):
    """jax.jit(predict) answers in JAX's 32-bit dtypes: labels they cannot hold
    came back wrong without a word (2**40 → 0, 2**24 + 1 → 2**24, 1e300 → inf);
    they are refused by name, and labels that fit still predict as eagerly."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    side = (X[:, 0] > 0).astype(int)
    model = jaxnn.fit(X, labels[side], k=3, posterior="link")
    with pytest.raises(TypeError, match="cannot hold every class label"):
        jax.jit(jaxnn.predict)(model, X[:6])
    fits = np.array([3, 7] if labels.dtype.kind in "iu" else [-1.0, 2.0**24], labels.dtype)
    model = jaxnn.fit(X, fits[side], k=3, posterior="link")
    np.testing.assert_array_equal(np.asarray(jax.jit(jaxnn.predict)(model, X[:6])), jaxnn.predict(model, X[:6]))


@pytest.mark.slow
def test_prediction_under_jit_equals_eager():
    X, y = _blobs(m=120, seed=3)
    model = jaxnn.fit(X, y, k=5, posterior="votes")
    Xq = jnp.asarray(_blobs(m=30, seed=4)[0])
    for fn in (jaxnn.decision_function, jaxnn.predict_proba, jaxnn.predict):
        want = np.asarray(fn(model, Xq))
        np.testing.assert_array_equal(np.asarray(jax.jit(fn)(model, Xq)), want)  # model traced too
        np.testing.assert_array_equal(np.asarray(jax.jit(lambda q, fn=fn: fn(model, q))(Xq)), want)  # closed over
    named = jaxnn.fit(X, np.array(["a", "b", "c"])[y], k=5)
    with pytest.raises(TypeError, match="numeric class labels"):
        jax.jit(jaxnn.predict)(named, Xq)
    with pytest.raises(ValueError, match="features"):
        jax.jit(jaxnn.decision_function)(model, Xq[:, :2])
    bad = X.copy()
    bad[0, 0] = np.nan
    bad_model = dataclasses.replace(model, X=jnp.asarray(bad))
    with pytest.raises(ValueError, match="NaN"):  # a concrete (closed-over) model is still checked
        jax.jit(lambda q: jaxnn.decision_function(bad_model, q))(Xq)


@pytest.mark.xla_default  # a bitwise claim: at the settings users compile with
def test_prediction_from_precomputed_query_neighbors():
    """neighbors= (any search's (n, k) indices into model.X, or a Neighbors
    with ≥ k columns) gives the same H, posteriors and labels as the built-in
    exact search, with or without X (posteriors with a kernel term: with X
    only, else a clear error), and under jax.jit."""
    X, y = _blobs(m=150, C=3, seed=5)
    Xq = _blobs(m=40, C=3, seed=6)[0]
    model = jaxnn.fit(X, y, k=5)
    assert 0.0 <= model.posterior_mix <= 1.0 and model.posterior_weight > 0
    exact = jaxnn.knn_query(X, Xq, 5)
    wider = jaxnn.knn_query(X, Xq, 8)  # a Neighbors with more columns: its first 5
    without_kernel = dataclasses.replace(model, posterior_weight=0.0)
    for fn in (jaxnn.decision_function, jaxnn.predict_proba, jaxnn.predict):
        for mdl in (model, without_kernel):
            want = np.asarray(fn(mdl, Xq))
            for given in (exact, wider, exact.indices, np.asarray(exact.indices, np.int64)):
                np.testing.assert_array_equal(np.asarray(fn(mdl, Xq, neighbors=given)), want)
                if fn is jaxnn.predict_proba and mdl is model:
                    with pytest.raises(ValueError, match="give the query points X as well as neighbors"):
                        fn(mdl, neighbors=given)
                else:
                    np.testing.assert_array_equal(np.asarray(fn(mdl, neighbors=given)), want)
            jitted = jax.jit(lambda m, Xb, nb, fn=fn: fn(m, Xb, neighbors=nb))(mdl, Xq, exact.indices)
            np.testing.assert_allclose(np.asarray(jitted), want, rtol=1e-6, atol=1e-7)
    # other neighbours give other scores: the argument is used, not ignored
    shifted = (np.asarray(exact.indices) + 1) % 150
    assert not np.array_equal(np.asarray(jaxnn.decision_function(model, neighbors=shifted)),
                              np.asarray(jaxnn.decision_function(model, Xq)))
    H = np.asarray(jaxnn.decision_function(model, neighbors=shifted))
    want = np.sum(np.asarray(model.alpha)[shifted] * np.asarray(model.Y)[shifted], axis=1)
    np.testing.assert_allclose(H, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("neighbors, X, exc, match", [
    (None, None, TypeError, "give the query points X"),
    ("abc", None, TypeError, "neighbors must be an"),
    (np.zeros((4, 5)), None, TypeError, "integer index array"),
    (np.zeros((4, 5), bool), None, TypeError, "integer index array"),
    (np.zeros((4, 4), int), None, ValueError, "model.k = 5"),
    (np.zeros((4, 6), int), None, ValueError, "model.k = 5"),
    (np.zeros(5, int), None, ValueError, "shape"),
    (np.zeros((0, 5), int), None, ValueError, "at least one row"),
    (np.array([[0, 1, 2, 3, -1]]), None, ValueError, r"in \[0, 150\)"),
    (np.array([[0, 1, 2, 3, 150]]), None, ValueError, r"in \[0, 150\)"),
    (np.array([[0, 1, 2, 3, 3]]), None, ValueError, "row 0 repeats"),
    ([[0, 1, 2], [3, 4]], None, ValueError, "rectangular"),
    (np.array([[0, 1, 2, 3, 4]]), np.zeros((2, 4), np.float32), ValueError, "mismatched lengths"),
    (np.array([[0, 1, 2, 3, 4]]), np.zeros((1, 3), np.float32), ValueError, "features"),
    (np.array([[0, 1, 2, 3, 4]]), np.full((1, 4), np.nan, np.float32), ValueError, "NaN"),
])
def test_prediction_neighbors_bad_input(neighbors, X, exc, match):
    Xt, y = _blobs(m=150, C=3, seed=5)
    model = jaxnn.fit(Xt, y, k=5, posterior="link")
    for fn in (jaxnn.decision_function, jaxnn.predict_proba, jaxnn.predict):
        with pytest.raises(exc, match=match):
            fn(model, X, neighbors=neighbors)
    narrow = jaxnn.knn_query(Xt, Xt[:3], 4)
    with pytest.raises(ValueError, match="at least 5 columns"):
        jaxnn.predict(model, neighbors=narrow)
    with pytest.raises(ValueError, match="model.k = 5"):  # a traced array: its shape is still checked
        jax.jit(lambda nb: jaxnn.decision_function(model, neighbors=nb))(jnp.zeros((2, 4), jnp.int32))


def test_prediction_neighbors_given_as_a_search_result_pair():
    X, y = _blobs(m=100, C=3, seed=5)
    model = jaxnn.fit(X, y, k=5, posterior="link")
    nb = jaxnn.knn_query(X, X[:4], 5)
    with pytest.raises(TypeError, match="pass the indices"):
        jaxnn.predict(model, neighbors=(np.asarray(nb.indices), np.asarray(nb.distances)))


def test_prediction_from_neighbors_does_not_retrace(compilations):
    """Given neighbours of one shape, later calls (other indices, other models of
    the same shapes) reuse the compiled scoring: nothing compiles."""
    from jaxnn._src import prediction as predict_mod

    X, y = _blobs(m=120, C=3, seed=8)
    model = jaxnn.fit(X, y, k=4, posterior="link")
    other = jaxnn.fit(X + 0.5, y, k=4, posterior="link")
    nb = np.asarray(jaxnn.knn_query(X, X[:30], 4).indices)
    watched = (predict_mod._rule, predict_mod.leveraged_scores)
    with compilations(*watched):  # compiled anew
        jaxnn.predict_proba(model, neighbors=nb)
        jaxnn.decision_function(model, neighbors=nb)
        jaxnn.predict(model, neighbors=nb)
    with compilations() as compiled:
        for mdl in (model, other):
            jaxnn.decision_function(mdl, neighbors=(nb + 1) % 120)
            jaxnn.predict_proba(mdl, neighbors=nb[::-1].copy())
            jaxnn.predict(mdl, neighbors=jaxnn.knn_query(X, X[:30], 4))
    assert compiled.of(*watched) == []
    assert compiled == [], compiled


def test_labels_of_link_models_share_one_program_across_losses_and_algorithms(compilations):
    """A model without a temperature (``posterior="link"`` or ``"votes"``)
    predicts its labels with the rule's program without posteriors, which
    every loss and algorithm share: after one such model's predict, other
    losses' and algorithms' compile no rule — and their labels are those of
    the program with posteriors (its predicted class, ``predict_proba``'s
    program), calibrated models' too."""
    from jaxnn._src import prediction as predict_mod

    X, y = _blobs(m=150, C=3, seed=9)
    Xq = X[:40] + 0.1
    fits = [jaxnn.fit(X, y, k=5, posterior="link"),
            jaxnn.fit(X, y, k=5, posterior="link", loss="matsushita"),
            jaxnn.fit(X, y, k=5, posterior="votes", algorithm="unn", loss="exponential"),
            jaxnn.fit(X, y, k=5, posterior="link", algorithm="n3", loss="calibrated_hinge")]
    with compilations(predict_mod._rule):  # compiled anew, for the first model
        first = jaxnn.predict(fits[0], Xq)
    with compilations() as compiled:
        labels = [first] + [jaxnn.predict(model, Xq) for model in fits[1:]]
    assert compiled.of(predict_mod._rule) == []
    for model, got in zip(fits + [jaxnn.fit(X, y, k=5)], labels + [None]):
        _, _, _, top, _ = predict_mod.host_rule(model, Xq, proba=True)  # the program with posteriors
        want = np.asarray(model.classes)[top]
        np.testing.assert_array_equal(jaxnn.predict(model, Xq) if got is None else got, want)


def test_batches_of_other_sizes_share_the_compiled_prediction(compilations):
    """Query batches are padded to sizes_mod.query_rows: after one batch, batches of
    other sizes within the same bucket (here 1 … 128 rows) compile nothing —
    they reuse the search, scores and posteriors, and are cut to n rows on the
    host (sizes_mod.first_rows, no slice compiled per batch size) — and
    give what each point gives alone (the padding changes nothing)."""
    from jaxnn._src import prediction as predict_mod
    from jaxnn._src import search as search_mod

    X, y = _blobs(m=300, C=3, seed=8)
    model = jaxnn.fit(X, y, k=4, posterior="auto")
    Xq = X[:128] + 0.05
    watched = (search_mod.conditioned_search, predict_mod._rule, predict_mod.leveraged_scores)
    with compilations(*watched):  # compiled anew, for the first batch
        p_all = np.asarray(jaxnn.predict_proba(model, Xq))
        H_all = np.asarray(jaxnn.decision_function(model, Xq))
        labels_all = jaxnn.predict(model, Xq)
    with compilations() as compiled:
        for n in (1, 7, 50, 127):
            np.testing.assert_allclose(np.asarray(jaxnn.predict_proba(model, Xq[:n])), p_all[:n], rtol=1e-6,
                                       atol=1e-7)
            H = jaxnn.decision_function(model, Xq[:n])
            assert isinstance(H, jax.Array)  # sliced on the host, back on the device
            np.testing.assert_allclose(np.asarray(H), H_all[:n], rtol=1e-6, atol=1e-6)
            np.testing.assert_array_equal(jaxnn.predict(model, Xq[:n]), labels_all[:n])
            assert jaxnn.knn_query(X, Xq[:n], 4).indices.shape == (n, 4)
    assert compiled.of(*watched) == []
    assert compiled == [], compiled


@pytest.mark.parametrize("m", [250, 600])
def test_a_small_models_predictions_run_its_fits_search_and_rule(m, compilations):
    """On at most QUERIES_AS_TRAINING_MAX_ROWS padded training rows a batch of
    fewer queries is padded as the training points are, the shape of the
    fit's own graph search: a default fit compiles the search and the rule that its
    predictions of any batch up to that size run (m = 600: 640 rows, where
    a batch of up to 128 queries compiled a search and a rule of its own)."""
    from jaxnn._src import prediction as predict_mod
    from jaxnn._src import search as search_mod

    X, y = _blobs(m=m + 100, C=3, seed=9)
    watched = (search_mod.conditioned_search, predict_mod._rule)
    with compilations(*watched):  # compiled anew
        model = jaxnn.fit(X[:m], y[:m], k=7)
    assert sizes_mod.shared_rows(m) <= sizes_mod.QUERIES_AS_TRAINING_MAX_ROWS
    with compilations() as compiled:
        labels = jaxnn.predict(model, X[-m:])
        for n in (1, 100):
            np.testing.assert_array_equal(jaxnn.predict(model, X[-n:]), labels[-n:])
            assert np.asarray(jaxnn.predict_proba(model, X[-n:])).shape == (n, 3)
    assert compiled.of(*watched) == [], compiled


def test_query_rows_buckets():
    """query_rows: whole blocks, their number at two significant bits up to 64
    blocks and four beyond — never below n, at most half (then an eighth)
    more than the whole blocks."""
    from jaxnn._src.shared_sizes import query_rows

    assert [query_rows(n) for n in (1, 128, 129, 257, 640, 769, 8192, 8193, 9217)] == [
        128, 128, 256, 384, 768, 1024, 8192, 9216, 10240]
    for n in range(1, 30_000, 37):
        for block in (1, 5, 128):
            rows, blocks = query_rows(n, block), -(-n // block)
            assert rows >= n and rows % block == 0
            assert rows <= blocks * block * (3 / 2 if blocks <= 64 else 9 / 8)
    assert len({query_rows(n) for n in range(1, 10_001)}) == 14
    for among in (128, 384, 640, 1024, 1152):  # few training rows: a batch of queries as many as they have
        for n in (1, 100, among):
            rows = query_rows(n, among=among)
            assert rows % 128 == 0
            if among <= sizes_mod.QUERIES_AS_TRAINING_MAX_ROWS:
                assert rows >= max(query_rows(n), query_rows(among))
            else:
                assert rows == query_rows(n)


@pytest.mark.slow
def test_scoring_makes_no_neighbor_by_class_gather(temp_bytes):
    """H = Σ_t (α∘Y)[nb[:, t]] adds one neighbour column at a time: the (n, k, C)
    gather of α[nb]·Y[nb] held 11.7 GB (and 22.6 s) to score 10⁶ queries with
    C = 100 (now 0.33 GB, 0.42 s).  XLA's own buffer plan, no timing."""
    from jaxnn._src import baselines
    from jaxnn._src.prediction import _rule, leveraged_scores

    m, n, k, C = 20_000, 100_000, 10, 100
    rows, idx = jax.ShapeDtypeStruct((m, C), jnp.float32), jax.ShapeDtypeStruct((n, k), jnp.int32)
    gather_bytes = n * k * C * 4
    count = jax.ShapeDtypeStruct((), jnp.int32)  # the first k columns of more (select's candidates)
    for args in ((rows, rows, idx), (rows, rows, idx, count)):
        assert temp_bytes(leveraged_scores.lower(*args)) < gather_bytes / 10
    # the whole rule — H, vote counts, first positions, the posteriors (with the kernel term: the
    # neighbours' distances, their weights and κ) — holds a few (n, C) arrays beside its answers,
    # not the k of them of a gather
    d = 16
    points, X = jax.ShapeDtypeStruct((n, d), jnp.float32), jax.ShapeDtypeStruct((m, d), jnp.float32)
    for X_, points_ in ((None, None), (X, points)):
        rule = _rule.lower(rows, rows, idx, 0.5, count, 1.0, X_, points_, 1.0, 1.0, loss=jaxnn.losses.get("logistic"),
                           algorithm=jaxnn.gnnb(), multilabel=False)
        assert temp_bytes(rule) < 4 * n * C * 4
    votes = baselines._votes.lower(jax.ShapeDtypeStruct((m,), jnp.int32), idx, C=C, output="counts", dtype="float32")
    assert temp_bytes(votes) < gather_bytes / 10


@pytest.mark.parametrize("labels", [
    np.array([0.0, 1.0, 2.0], np.float32),
    np.array([3, 7, 9], np.uint8),
    np.array(["2020-01-01", "2021-06-01", "2022-01-01"], "datetime64[D]"),
    np.array(["ant", "bee", "cat"]),
])
def test_predict_answers_in_the_labels_dtype(labels):
    """predict's labels have y's dtype, as scikit-learn's classifiers' do
    (float32 labels came back float64, datetime64 as datetime.date objects),
    for jaxnn.predict, a pickled model and the split models."""
    import pickle

    X, y = _blobs(m=90, C=3, seed=2)
    y_named = labels[y]
    model = jaxnn.fit(X, y_named, k=4, shrinkage=None)  # boosting's α: no exact ties in H
    got = jaxnn.predict(model, X)
    assert got.dtype == labels.dtype
    np.testing.assert_array_equal(got, labels[np.argmax(np.asarray(jaxnn.decision_function(model, X)), axis=1)])
    assert model.classes == tuple(labels)
    assert jaxnn.predict(pickle.loads(pickle.dumps(model)), X[:5]).dtype == labels.dtype
    assert jaxnn.ensemble.predict_split(jaxnn.ensemble.fit_split(X, y_named, n_splits=2, k=4), X[:5]).dtype == labels.dtype


@pytest.mark.slow
def test_a_float64_model_predicts_in_float32_once_x64_is_off():
    """A model fit inside `with jax.enable_x64(True):` and used after it: one
    warning of ours (not a dozen of JAX's dtype truncations), float32 results
    equal to the float64 model's to float32 precision, under jit too."""
    import warnings

    X, y = _blobs(m=80, C=3, seed=5)
    X = X.astype(np.float64)
    with jax.enable_x64(True):
        model = jaxnn.fit(X, y, k=4)
        sm = jaxnn.ensemble.fit_split(X, y, n_splits=2, k=4)
        p64 = np.asarray(jaxnn.predict_proba(model, X))
        labels64 = jaxnn.predict(model, X)
        split64 = np.asarray(jaxnn.ensemble.predict_proba_split(sm, X))
    assert model.alpha.dtype == np.float64
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        p32 = jaxnn.predict_proba(model, X)
        labels32 = jaxnn.predict(model, X)
        split32 = jaxnn.ensemble.predict_proba_split(sm, X)
    messages = [str(w.message) for w in seen]
    assert len(messages) == 3 and all("fit in float64" in msg for msg in messages), messages
    assert seen[0].filename == __file__  # points at the caller's line
    assert p32.dtype == np.float32 and split32.dtype == np.float32
    np.testing.assert_allclose(np.asarray(p32), p64, atol=1e-5)
    np.testing.assert_allclose(np.asarray(split32), split64, atol=1e-5)
    np.testing.assert_array_equal(labels32, labels64)


@pytest.mark.parametrize("offset", [0.0, 1e8])
@pytest.mark.slow
def test_a_float64_model_far_from_zero_used_after_x64_is_centred_like_a_float32_fit(offset):
    """The float32 copy of a model fit under x64 stores its points as a
    float32 fit does: features far from 0 centred first.  Cast as stored,
    points at 10⁸ ± 1 became one and predicted at chance (0.395 for 0.775,
    3 classes) — Model, fit_split's SplitModel (norm=None) and the k-NN
    baseline alike; SGD and SVM models warn once a call too (JAX's own
    truncation warnings before)."""
    import warnings

    from jaxnn import baselines

    X, y = _blobs(m=420, C=3, seed=8, spread=1.2)
    X, y, Xq, yq = X[:300], y[:300], X[300:], y[300:]
    X, Xq = X.astype(np.float64) + offset, Xq.astype(np.float64) + offset
    with jax.enable_x64(True):
        fitted = {"model": jaxnn.fit(X, y, k=10, posterior="link"),
                  "split": jaxnn.ensemble.fit_split(X, y, n_splits=2, k=10, norm=None),
                  "knn": baselines.knn_fit(X, y, k=10),
                  "sgd": baselines.sgd_fit(X - offset, y), "svm": baselines.svm_fit(X - offset, y)}
        want = {name: np.asarray(jaxnn.predict(m, Xq)) if name == "model" else
                np.asarray(jaxnn.ensemble.predict_split(m, Xq)) if name == "split" else
                np.asarray(baselines.predict(m, Xq - (offset if name in ("sgd", "svm") else 0.0)))
                for name, m in fitted.items()}
    assert min(np.mean(w == yq) for w in want.values()) > 0.6
    # pickled and loaded without x64 too: JAX's array pickling cast to float32 uncentred on loading
    # (0.48 accuracy for 0.99 at 10⁸ ± 1, no warning); now the loaded model is narrowed on use alike
    loaded = {f"{name} (pickled)": pickle.loads(pickle.dumps(m)) for name, m in fitted.items()}
    want.update({f"{name} (pickled)": want[name] for name in fitted})
    for name, m in {**fitted, **loaded}.items():
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            got = (np.asarray(jaxnn.predict(m, Xq)) if name.startswith("model") else
                   np.asarray(jaxnn.ensemble.predict_split(m, Xq)) if name.startswith("split") else
                   np.asarray(baselines.predict(m, Xq - (offset if name[:3] in ("sgd", "svm") else 0.0))))
        assert [str(w.message)[:50] for w in seen] == [f"this {type(m).__name__} was fit in float64 (under jax_enable_x64)"[:50]], name
        assert np.mean(got == want[name]) >= 0.98, (name, np.mean(got == want[name]))
    with pytest.warns(UserWarning, match="fit in float64"):
        narrowed = jaxnn._src.model.without_float64(fitted["model"])
    assert narrowed.X.dtype == np.float32 and (narrowed.origin is None) == (offset == 0.0)


def test_a_traced_model_centres_a_float64_numpy_query_in_float64():
    """jax.jit(lambda model: predict(model, Xq)) with Xq float64 NumPy (what the
    README advises far from 0): the model's origin is then a tracer, and the
    query was cast to float32 before the shift — 0.315 accuracy for 0.775 at
    10⁸ ± 1.  It is split into float32 parts hi + lo, hi − origin exact."""
    X, y = _blobs(m=420, C=3, seed=8, spread=1.2)
    X, y, Xq = X[:300], y[:300], X[300:]
    X, Xq = X.astype(np.float64) + 1e8, Xq.astype(np.float64) + 1e8
    model = jaxnn.fit(X, y, k=10, posterior="link")
    assert model.origin is not None
    eager = np.asarray(jaxnn.predict_proba(model, Xq))
    traced = np.asarray(jax.jit(lambda m: jaxnn.predict_proba(m, Xq))(model))
    np.testing.assert_allclose(traced, eager, atol=1e-5)


@pytest.mark.slow
def test_predict_of_a_traced_model_drops_the_padded_query_rows():
    """A traced model with concrete queries (closed over in a jitted function,
    or vmap over models): the queries are padded to a shared size, and
    predict returned the padding too — 128 labels for 50 queries — where
    decision_function and predict_proba dropped it."""
    X, y = _blobs(m=200, C=3, seed=12)
    model = jaxnn.fit(X, y, k=5, posterior="link")
    Xq, want = X[:50], jaxnn.predict(model, X[:50])
    closed = jax.jit(lambda mm: jaxnn.predict(mm, Xq))(model)
    np.testing.assert_array_equal(np.asarray(closed), want)
    twice = jax.tree.map(lambda a: jnp.stack([a, a]), model)
    mapped = jax.vmap(lambda mm: jaxnn.predict(mm, Xq))(twice)
    assert mapped.shape == (2, 50)
    np.testing.assert_array_equal(np.asarray(mapped[1]), want)


@pytest.mark.slow
def test_an_x64_model_far_from_zero_stays_right_under_jit_once_x64_is_off():
    """fit (as fit_split and knn_fit) centres float64 points far from 0 under
    x64 too: a model whose float64 leaves JAX casts to float32 — rebuilt from
    NumPy leaves or unpickled, then traced with x64 off — keeps its points
    apart.  Stored uncentred, they became one (0.6 agreement, silently)."""
    X, y = _blobs(m=300, C=3, seed=13, spread=1.2)
    X = X.astype(np.float64) + 1e8
    with jax.enable_x64(True):
        model = jaxnn.fit(X[:200], y[:200], k=10, posterior="link")
        want = np.asarray(jaxnn.predict(model, X[200:]))
        knn = jaxnn.baselines.knn_fit(X[:200], y[:200], k=10)
        want_knn = np.asarray(jaxnn.baselines.predict(knn, X[200:]))
    assert model.origin is not None and knn.origin is not None
    leaves, treedef = jax.tree_util.tree_flatten(model)
    rebuilt = jax.tree_util.tree_unflatten(treedef, [np.asarray(a) for a in leaves])
    Xq = X[200:]  # float64 NumPy, closed over (a jit argument would be cast to float32 before jaxnn sees it)
    got = np.asarray(jax.jit(lambda mm: jaxnn.predict(mm, Xq))(rebuilt))
    np.testing.assert_array_equal(got, want)
    with pytest.warns(UserWarning, match="fit in float64"):
        np.testing.assert_array_equal(np.asarray(jaxnn.baselines.predict(knn, Xq)), want_knn)


def test_the_kernel_term_matches_the_float64_reference_and_keeps_predict_on_top():
    """posterior_weight w > 0: p̂ = (1 − ε)·softmax(H/T + w·log(κ + δ)) + ε/C
    with predict's class raised to the top, as an independent float64
    computation gives it (tests/_data.py), for several (w, b); argmax p̂ is
    predict's label though κ alone would rank some rows otherwise; w = 0 is
    softmax(H/T) (the kernel term off)."""
    X, y = _blobs(m=160, C=4, seed=11, spread=1.0)
    Xq = _blobs(m=60, C=4, seed=12, spread=1.0)[0]
    model = jaxnn.fit(X, y, k=7, shrinkage=None)
    labels = jaxnn.predict(model, Xq)
    for w, b in ((0.0, 0.0), (0.5, 0.25), (2.0, 1.0), (8.0, 4.0)):
        m = dataclasses.replace(model, posterior_weight=w, posterior_bandwidth=b)
        p = np.asarray(jaxnn.predict_proba(m, Xq))
        np.testing.assert_allclose(p, reference_posteriors(m, Xq), rtol=1e-4, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(m.classes)[np.argmax(p, axis=1)], labels)
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-5)
        assert p.min() > 0 and p.max() < 1
    # a large weight lets the kernel vote rank the other classes: the columns below the top change order
    p0 = np.asarray(jaxnn.predict_proba(dataclasses.replace(model, posterior_weight=0.0), Xq))
    p8 = np.asarray(jaxnn.predict_proba(dataclasses.replace(model, posterior_weight=8.0, posterior_bandwidth=4.0), Xq))
    assert np.any(np.argsort(p0, axis=1)[:, :-1] != np.argsort(p8, axis=1)[:, :-1])


@pytest.mark.parametrize("change, match", [
    (dict(posterior_weight=-1.0), "posterior_weight must be finite and >= 0"),
    (dict(posterior_weight=float("nan")), "posterior_weight must be finite"),
    (dict(posterior_weight=1.0, posterior_bandwidth=0.0), "posterior_bandwidth must be > 0"),
    (dict(posterior_bandwidth=float("inf")), "posterior_bandwidth must be finite"),
    (dict(posterior_weight="1"), "posterior_weight must be a real number"),
])
def test_a_bad_kernel_term_is_refused_where_prediction_starts(change, match):
    X, y = _blobs(m=80, C=3, seed=2)
    model = dataclasses.replace(jaxnn.fit(X, y, k=5, posterior="link"), posterior_temperature=1.0, **change)
    with pytest.raises((TypeError, ValueError), match=match):
        jaxnn.predict_proba(model, X[:5])


def test_the_kernel_term_is_refused_for_binary_and_multilabel_models():
    X, y = _blobs(m=80, C=2, seed=2)
    binary = jaxnn.fit(X, y, k=5)
    assert binary.posterior_weight == 0.0
    with pytest.raises(ValueError, match="posterior_weight must be 0 for a binary model"):
        jaxnn.predict_proba(dataclasses.replace(binary, posterior_weight=1.0, posterior_bandwidth=1.0), X[:5])
    Ym = np.stack([y, 1 - y, (X[:, 0] > 0).astype(int)], axis=1)
    multi = jaxnn.fit(X, Ym, k=5)
    assert multi.posterior_weight == 0.0
    with pytest.raises(ValueError, match="posterior_weight must be 0 for a multilabel model"):
        jaxnn.predict(dataclasses.replace(multi, posterior_weight=1.0, posterior_bandwidth=1.0), X[:5])
