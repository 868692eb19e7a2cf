"""Small problems are searched, boosted and scored padded to shared sizes
(sizes_mod.shared_rows): nearby sizes reuse the compiled programs, and the
padding changes no result."""

import jax
import numpy as np
import pytest

import jaxnn
from jaxnn._src import graph as graph_mod
from jaxnn._src import inverse as inverse_mod
from jaxnn._src import prediction as predict_mod
from jaxnn._src import search as search_mod
from jaxnn._src import select as select_mod
from jaxnn._src import sharding
from jaxnn._src import shared_sizes as sizes_mod
from jaxnn._src.boosting import boost
from jaxnn._src import boost_runs, plan, platforms


def _blobs(m, C=3, d=5, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(C, d))
    y = rng.integers(0, C, m)
    return (centres[y] + rng.normal(size=(m, d))).astype(np.float32), y


def test_shared_rows_buckets():
    assert [sizes_mod.shared_rows(m) for m in (1, 128, 129, 400, 403, 640, 1200, 4097, 5000)] == [
        128, 128, 256, 512, 512, 640, 1280, 5120, 5120]
    assert sizes_mod.shared_rows(sizes_mod.SHARED_MAX_ROWS) == sizes_mod.SHARED_MAX_ROWS
    assert sizes_mod.shared_rows(sizes_mod.SHARED_MAX_ROWS + 1) == sizes_mod.SHARED_MAX_ROWS + 1  # large: never padded


@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_fits_of_nearby_sizes_share_the_compiled_programs(compilations):
    """Cross-validation folds differ by a row: the second size compiles no
    search, boosting or scoring (each new m compiled ~1.2 s of programs)."""
    watched = (search_mod.conditioned_search, boost, predict_mod._rule)
    X, y = _blobs(403, d=7, seed=11)
    with compilations(*watched):  # compiled anew
        model = jaxnn.fit(X[:400], y[:400], k=6)
        jaxnn.predict(model, X[:50]), jaxnn.predict_proba(model, X[:50])
    with compilations() as compiled:
        model = jaxnn.fit(X, y, k=6)
        jaxnn.predict(model, X[:50]), jaxnn.predict_proba(model, X[:50])
    assert compiled.of(*watched) == []
    assert model.alpha.shape == (403, 3) and model.X.shape == (403, 7) and model.Y.shape == (403, 3)


# each algorithm with a plain scan, a windowed one and (but UNN-fast, UNN's step
# approximated) the greedy chooser; each chooser with two or three algorithms
# (all 20 pairs: 40 fits' compilations, a sixth of the suite's time)
@pytest.mark.parametrize("chooser, algorithm", [
    ("lazy", "gnnb"), ("greedy", "gnnb"), ("lazy-windowed", "gnnb"),
    ("random", "unn"), ("greedy", "unn"), ("random-windowed", "unn"),
    ("lazy", "unn_fast"), ("random-windowed", "unn_fast"),
    ("random", "n3"), ("greedy", "n3"), ("lazy-windowed", "n3"),
])
@pytest.mark.slow  # compiles fits at new shapes, padded and not
def test_padded_fit_equals_the_unpadded_fit(algorithm, chooser, monkeypatch):
    """Padded to shared sizes, the sequential scan (and "-windowed": the
    windowed scan of a many-class problem, m·C ≥ 2¹⁶, its windows padded too)
    gives the unpadded fit's result."""
    if chooser.endswith("-windowed"):
        from jaxnn._src import window

        chooser = chooser.removesuffix("-windowed")
        monkeypatch.setattr(plan, "WINDOWED_MIN_STATE", 0)  # windowed at any size
    X, y = _blobs(300, seed=3)
    fits = []
    for limit in (sizes_mod.SHARED_MAX_ROWS, 0):
        monkeypatch.setattr(sizes_mod, "SHARED_MAX_ROWS", limit)
        model = jaxnn.fit(X, y, k=7, algorithm=algorithm, chooser=chooser, rounds=2 * 300 + 17, trace=True,
                          posterior="link", shrinkage=None, seed=4)
        fits.append((model, np.asarray(jaxnn.predict_proba(model, X[:60] + 0.05)), jaxnn.predict(model, X[:60] + 0.05)))
    (padded, p_padded, y_padded), (plain, p_plain, y_plain) = fits
    assert padded.alpha.shape == plain.alpha.shape == (300, 3)
    assert padded.trace.shape == plain.trace.shape == (617,)
    np.testing.assert_allclose(np.asarray(padded.alpha), np.asarray(plain.alpha), rtol=1e-5, atol=1e-6)
    # the trace sums float32 changes (its start a masked mean): equal to ~10⁻⁶ of the starting risk
    np.testing.assert_allclose(np.asarray(padded.trace), np.asarray(plain.trace), rtol=0, atol=2e-6 * float(plain.trace[0]))
    np.testing.assert_allclose(p_padded, p_plain, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(y_padded, y_plain)


@pytest.mark.slow  # compiles fits at new shapes, padded and not
def test_padded_auto_posterior_choice_equals_the_unpadded(monkeypatch):
    X, y = _blobs(260, seed=5)
    fits = []
    for limit in (sizes_mod.SHARED_MAX_ROWS, 0):
        monkeypatch.setattr(sizes_mod, "SHARED_MAX_ROWS", limit)
        fits.append(jaxnn.fit(X, y, k=5, seed=1))
    padded, plain = fits
    assert padded.posterior_mix == plain.posterior_mix
    np.testing.assert_allclose(np.asarray(padded.alpha), np.asarray(plain.alpha), rtol=1e-6, atol=1e-7)


def _brute_force(Q, X, k, exclude_self):
    """Exact neighbours in float64, ties to the lower index (stable sort)."""
    d2 = ((Q[:, None, :].astype(np.float64) - X[None, :, :]) ** 2).sum(-1)
    if exclude_self:
        np.fill_diagonal(d2, np.inf)
    return np.argsort(d2, axis=1, kind="stable")[:, :k]


@pytest.mark.parametrize("offset", [0.0, 1000.0])
def test_padded_search_is_exact_with_ties_and_offsets(offset):
    """Integer points (many exact ties, broken by the lower index) far from
    the origin or not: the padding rows (zeros, at the origin) are never
    neighbours and do not move the search's conditioning."""
    rng = np.random.default_rng(8)
    X = (rng.integers(0, 4, size=(300, 3)) + offset).astype(np.float32)
    Q = (rng.integers(0, 4, size=(70, 3)) + offset).astype(np.float32)
    assert sizes_mod.shared_rows(300) > 300
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_graph(X, 6).indices), _brute_force(X, X, 6, True))
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_query(X, Q, 6).indices), _brute_force(Q, X, 6, False))
    tr, q = graph_mod.graph_and_query(X, Q, 6)
    np.testing.assert_array_equal(tr, _brute_force(X, X, 6, True))
    np.testing.assert_array_equal(q, _brute_force(Q, X, 6, False))


@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_select_of_nearby_sizes_shares_the_compiled_programs_and_scores_as_unpadded(monkeypatch, compilations):
    """(One loss: select's programs per loss are test_select_compiles_one_boosting_per_loss's;
    its few held-out scores are summed on the host.)"""
    watched = (search_mod.conditioned_search, boost)
    X, y = _blobs(405, d=6, seed=12)
    kw = dict(ks=(5, 10), losses=("matsushita",), passes=(1, 2))
    with compilations(*watched):  # compiled anew
        jaxnn.select(X[:400], y[:400], **kw)
    with compilations() as compiled:
        padded = {"auto": jaxnn.select(X, y, chooser="auto", **kw)}
    assert compiled.of(*watched) == []
    padded["greedy"] = jaxnn.select(X, y, chooser="greedy", **kw)
    monkeypatch.setattr(sizes_mod, "SHARED_MAX_ROWS", 0)
    for chooser in ("auto", "greedy"):
        assert jaxnn.select(X, y, chooser=chooser, **kw) == padded[chooser], chooser


@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_windowed_refits_on_other_data_of_one_size_reuse_the_compiled_scan(monkeypatch, compilations):
    """The windowed scan's layout (rows per window U, members list length) and
    its max_count depend on the data: each refit on new data of the same size
    compiled again (~0.3 s at m = 8000, C = 10).  They are rounded to shared
    sizes now (window.shared_max_count).  Here the same graph relabelled by
    permutations: the windows gather other rows (U varied: 2768–2792 before
    the rounding), P stays."""
    from jaxnn._src import window

    monkeypatch.setattr(plan, "WINDOWED_MIN_STATE", 0)  # windowed at any size
    m = 3000  # three windows of 1024 steps (C = 4, k = 6)
    X, y = _blobs(m, C=4, d=11, seed=21)
    nb = np.asarray(jaxnn.knn_graph(X, 6).indices)
    fits = []
    for seed in (0, 1, 2):
        perm = np.random.default_rng(seed).permutation(m)
        rank = np.argsort(perm)
        Xp, yp, nbp = X[perm], y[perm], rank[nb[perm]]
        with compilations(*([window.boost_windowed] if seed == 0 else [])) as compiled:
            jaxnn.fit(Xp, yp, k=6, neighbors=nbp, posterior="link", shrinkage=None)
        fits.append(len(compiled.of(window.boost_windowed)))
    assert fits == [1, 0, 0]  # the first compiled the program; the refits reuse it
    assert window.shared_max_count(np.array([0, 30, 7])) == 32 and window.shared_max_count(np.array([28])) == 28


@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_select_compiles_one_boosting_per_loss_and_one_scoring_for_all_ks(compilations, monkeypatch):
    """Every candidate k runs at the largest one's padded shapes (its inverse
    neighbourhoods hold the smaller ks') and is scored from its neighbours'
    first k columns: fit(k="auto") compiled a boosting per (k, loss) and a
    scoring per k (2.5 → 1.5 s for a first fit of 2000 points).  The scoring
    in programs, as on many held-out points (here few: on the host, none)."""
    monkeypatch.setattr(select_mod, "HOST_SCORING_MAX_ENTRIES", 0)
    X, y = _blobs(300, C=5, d=4, seed=31)
    ks, losses = (3, 12), ("logistic", "matsushita")
    scoring = (predict_mod.leveraged_scores, select_mod._tie_parts)
    with compilations(boost, *scoring) as compiled:  # their programs dropped first
        together = jaxnn.select(X, y, ks=ks, losses=losses, passes=(1, 2))
    new = [len(compiled.of(f)) for f in (boost,) + scoring]
    assert new == [len(losses), 1, 1], compiled  # boosting and H: 4 and 2 before
    for k in ks:  # the same scores as each k selected alone (at its own width, its own columns)
        alone = jaxnn.select(X, y, ks=(k,), losses=losses, passes=(1, 2))
        assert {key: v for key, v in together.scores.items() if key[0] == k} == alone.scores


def test_scores_of_the_first_k_columns():
    """neighbor_sum(…, k) with a traced k sums the first k columns of more:
    one compiled scoring serves every k."""
    rng = np.random.default_rng(5)
    alpha, Y = rng.normal(size=(50, 3)).astype(np.float32), np.sign(rng.normal(size=(50, 3))).astype(np.float32)
    idx = rng.integers(0, 50, size=(20, 9)).astype(np.int32)
    for k in (1, 4, 9):
        want = (alpha * Y)[idx[:, :k]].sum(axis=1)
        np.testing.assert_allclose(np.asarray(predict_mod.leveraged_scores(alpha, Y, idx, k)), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(predict_mod.leveraged_scores(alpha, Y, idx)), (alpha * Y)[idx].sum(axis=1), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["gauss", "offset 1e3", "grid + 3e4", "scale 1e19", "scale 1e-20", "identical", "zeros"])
def test_host_conditioning_is_the_jitted_conditioning(kind, dtype):
    """A small search's training points are conditioned on the host
    (search_mod.conditioning_on_host), so that its compiled program holds no
    reduction of them (~0.04 s of compilation less a shape); it takes the
    jitted conditioning's steps: same exponent, same points."""
    rng = np.random.default_rng(7)
    X0 = rng.normal(size=(300, 4))
    X = {"gauss": X0, "offset 1e3": X0 + 1e3, "grid + 3e4": rng.integers(0, 50, (300, 4)) + 3e4,
         "scale 1e19": X0 * 1e19, "scale 1e-20": X0 * 1e-20, "identical": np.full((300, 4), 2.5),
         "zeros": np.zeros((300, 4))}[kind].astype(dtype)
    Q = (X[:30] * 1.0001 + 0.25).astype(dtype)
    with jax.enable_x64(dtype == np.float64):
        Qj, Xj, e, far = search_mod._conditioned(Q, X)
        Xh, (e0, shift, s, eh) = search_mod.conditioning_on_host(X)
        assert Xh.dtype == dtype and eh == int(e)
        np.testing.assert_array_equal(Xh, np.asarray(Xj))
        Qh = (jax.numpy.ldexp(Q, -e0) - shift) / s  # as the search conditions the queries
        np.testing.assert_array_equal(np.asarray(Qh), np.asarray(Qj))
        # the far rows (all of them at scale 1e-20, where the queries' offset of 0.25 is
        # 10¹⁹ times the points' spread; none elsewhere), found alike
        np.testing.assert_array_equal(np.flatnonzero(np.asarray(far)),
                                      search_mod.far_query_rows(Q, (e0, shift, s, eh)))
        assert np.all(far) if kind == "scale 1e-20" else not np.any(far)


@pytest.mark.parametrize("k", [4, 16])  # 16: m = 1200 and 2500 on either side of 3·32·k = 1536
@pytest.mark.slow  # compiles fits at new shapes, padded and not
def test_small_searches_conditioned_on_the_host_are_exact(k, monkeypatch):
    """The host-conditioned, padded search and the jitted one of large
    problems (SHARED_MAX_ROWS = 0) against float64 brute force, on integer
    points far from 0 (exact ties, broken by the lower index), on both sides
    of the two-stage selection's threshold (3·32·k columns: 384–1536 here,
    against 1200–2560)."""
    rng = np.random.default_rng(k)
    for m in (1200, 2500):
        X = (rng.integers(0, 30, size=(m, 6)) + 5e3).astype(np.float32)
        Q = X[:77] + np.float32(0.5)
        want = _brute_force(X, X, k, True), _brute_force(Q, X, k, False)
        for limit in (sizes_mod.SHARED_MAX_ROWS, 0):
            monkeypatch.setattr(sizes_mod, "SHARED_MAX_ROWS", limit)
            np.testing.assert_array_equal(np.asarray(jaxnn.knn_graph(X, k).indices), want[0])
            np.testing.assert_array_equal(np.asarray(jaxnn.knn_query(X, Q, k).indices), want[1])


@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_windowed_fits_of_nearby_sizes_share_the_compiled_scan(monkeypatch, compilations):
    """Cross-validation folds of a many-class problem (windowed from m = 656 at
    C = 100) compiled the windowed scan per fold size (3 times in 5 folds of
    1602–1603 points, ~0.26 s each); posterior="auto"'s auxiliary fit runs
    windowed at the main fit's sizes."""
    from jaxnn._src import window

    monkeypatch.setattr(plan, "WINDOWED_MIN_STATE", 0)
    X, y = _blobs(709, C=6, d=3, seed=8)
    with compilations(window.boost_windowed, search_mod.conditioned_search):  # compiled anew
        jaxnn.fit(X[:700], y[:700], k=5)
    with compilations() as compiled:
        for m in (703, 709):
            model = jaxnn.fit(X[:m], y[:m], k=5)
            assert model.alpha.shape == (m, 6)
    assert compiled.of(window.boost_windowed, search_mod.conditioned_search) == []


@pytest.mark.parametrize("chooser", ["lazy"])  # the random chooser's padded windows: test_padded_fit_equals_the_unpadded_fit
@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_windowed_select_compiles_one_scan_per_loss_and_scores_as_unpadded(chooser, monkeypatch, compilations):
    from jaxnn._src import window

    monkeypatch.setattr(plan, "WINDOWED_MIN_STATE", 0)
    X, y = _blobs(500, C=7, d=3, seed=9)
    kw = dict(ks=(3, 6, 12), losses=("logistic",), passes=(1, 2), chooser=chooser)
    with compilations(window.boost_windowed) as compiled:  # its programs dropped first
        padded = jaxnn.select(X, y, **kw)
    assert len(compiled.of(window.boost_windowed)) == 1, compiled  # one per (k, pass order) before
    monkeypatch.setattr(sizes_mod, "SHARED_MAX_ROWS", 0)
    assert jaxnn.select(X, y, **kw) == padded


@pytest.mark.parametrize("algorithm", ["gnnb", "n3"])
@pytest.mark.parametrize("windowed", [False, True])
@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_a_new_size_compiles_only_the_search_and_the_boosting(algorithm, windowed, monkeypatch, compilations):
    """The initial edges are computed inside the boosting's program: run
    eagerly on each new padded shape, N³'s class-balanced edges compiled ~10
    small programs (~0.3 s on 2 CPU cores) and GNNB's zeros one."""
    from jaxnn._src import window

    if windowed:
        monkeypatch.setattr(plan, "WINDOWED_MIN_STATE", 0)  # windowed at any size
    X, y = _blobs(300, d=6, seed=9)
    kw = dict(k=5, algorithm=algorithm, posterior="link", shrinkage=None, chooser="lazy")  # auto's choice on CPU
    jax.clear_caches()  # every size new to this process, whatever ran before
    jaxnn.fit(X[:100], y[:100], **kw)  # the loss's own programs (128 rows)
    with compilations() as names:
        jaxnn.fit(X, y, **kw)  # 384 rows
    windows = windowed and platforms.platform() in platforms.WINDOWED_PLATFORMS  # Plan.windowed (plan.py)
    scan = window.boost_windowed if windows else boost
    # (the leverage of the examples no step reached, n_j = 0, is filled on the host: no program)
    assert not np.all(np.bincount(np.asarray(jaxnn.knn_graph(X, 5).indices).ravel(), minlength=300) > 0)
    assert set(names) == {f"jit({search_mod.conditioned_search.__name__})", f"jit({scan.__name__})"}, names


@pytest.mark.parametrize("algorithm", ["gnnb", "n3"])  # the others' steps padded: test_padded_fit_equals_the_unpadded_fit
@pytest.mark.slow  # compiles fits at new shapes, padded and not
def test_padded_colored_fit_equals_the_unpadded_fit(algorithm, monkeypatch):
    """The colored schedule padded to shared sizes (rows, no-op
    steps, edges and examples a step; m traced) gives the unpadded schedule's
    α, trace and posteriors: the same colouring, the same steps."""
    X, y = _blobs(300, seed=8)
    fits = []
    for limit in (sizes_mod.SHARED_MAX_ROWS, 0):
        monkeypatch.setattr(sizes_mod, "SHARED_MAX_ROWS", limit)
        model = jaxnn.fit(X, y, k=7, algorithm=algorithm, chooser="colored", rounds=2 * 300, trace=True,
                          posterior="link", shrinkage=None)
        fits.append((model, np.asarray(jaxnn.predict_proba(model, X[:60] + 0.05))))
    (padded, p_padded), (plain, p_plain) = fits
    assert padded.alpha.shape == plain.alpha.shape == (300, 3)
    assert padded.trace.shape == plain.trace.shape  # two passes of the real steps
    np.testing.assert_allclose(np.asarray(padded.alpha), np.asarray(plain.alpha), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(padded.trace), np.asarray(plain.trace), rtol=0, atol=2e-6 * float(plain.trace[0]))
    np.testing.assert_allclose(p_padded, p_plain, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch_elements", [1, 64])
@pytest.mark.slow  # compiles fits at new shapes, padded and not
def test_colouring_padded_vertices_change_no_colour(batch_elements):
    """fit's shared sizes colour the conflict graph on arrays padded to more
    vertices, which are never queued: the colours of the unpadded call, for
    the sequential greedy colouring (batches of 1) and speculative batches."""
    from jaxnn._src import schedule

    rng = np.random.default_rng(batch_elements)
    nbrs = np.stack([rng.choice(np.delete(np.arange(300), i), 6, replace=False) for i in range(300)]).astype(np.int32)
    hub = (rng.random(300) < 0.5) & ~np.any(nbrs == 0, axis=1) & (np.arange(300) != 0)
    nbrs[hub, 0] = 0  # point 0 a neighbour of ~150 points: a hub, so a wider top tier
    csr = inverse_mod.inverse_csr(nbrs)
    plain = schedule._colour(nbrs, csr, batch_elements)
    np.testing.assert_array_equal(schedule._colour(nbrs, csr, batch_elements, rows=1024), plain)


@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_colored_fits_of_nearby_sizes_share_the_compiled_programs(compilations):
    """Cross-validation folds of the colored schedule (chooser="auto"'s choice
    on a GPU or TPU at every size) reuse one compiled colouring and scan:
    each fold's data-dependent shapes compiled both (~0.9 s on 2 CPU cores).
    With posterior="auto" the auxiliary fit is padded to the main fit's."""
    from jaxnn._src import schedule

    watched = (schedule._batched_colors, schedule.boost_colored)
    X, y = _blobs(1030, d=6, seed=12)
    with compilations(*watched):  # compiled anew
        jaxnn.fit(X[:1000], y[:1000], k=6, chooser="colored")
    with compilations() as compiled:
        for m, seed in ((1001, 13), (990, 14), (1020, 15)):  # 15–17 steps a pass: all padded to 32, run 15–17
            X, y = _blobs(m, d=6, seed=seed)
            model = jaxnn.fit(X, y, k=6, chooser="colored")
            assert model.alpha.shape == (m, 3)
    assert compiled.of(*watched) == []


@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_select_runs_colored_candidates_padded_and_scores_as_unpadded(monkeypatch, compilations):
    """select's colored candidates (chooser="auto"'s choice on a GPU or TPU)
    run at the largest k's padded schedule sizes: one compiled scan per loss
    for all ks, the scores those
    of the unpadded schedule."""
    from jaxnn._src import schedule

    X, y = _blobs(350, C=4, d=5, seed=33)
    kw = dict(ks=(3, 9), losses=("matsushita",), passes=(1, 2), chooser="colored")
    with compilations(schedule.boost_colored) as compiled:  # its programs dropped first
        padded = jaxnn.select(X, y, **kw)
    assert len(compiled.of(schedule.boost_colored)) == 1, compiled  # one per loss (one per k before)
    monkeypatch.setattr(sizes_mod, "SHARED_MAX_ROWS", 0)
    plain = jaxnn.select(X, y, **kw)
    assert plain.scores == padded.scores and plain.k == padded.k


@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_predict_proba_of_any_posterior_mix_shares_one_program(compilations):
    """posterior="auto" picks λ = 0 (link) or 1 (votes) per fit, and λ was a
    static argument: folds that chose differently compiled the posteriors
    twice per shape.  λ is traced now; the mixture is unchanged."""
    import dataclasses

    X, y = _blobs(300, d=8, seed=41)
    model = jaxnn.fit(X, y, k=5, posterior="link", shrinkage=None)
    Xq = X[:50] + 0.1
    with compilations(predict_mod._rule):  # compiled anew
        p_link = np.asarray(jaxnn.predict_proba(model, Xq))
    with compilations() as compiled:
        mixes = {lam: np.asarray(jaxnn.predict_proba(dataclasses.replace(model, posterior_mix=lam), Xq))
                 for lam in (1.0, 0.25)}
    assert compiled.of(predict_mod._rule) == []
    # the link posteriors and the vote fractions, each on its own
    link = np.clip(np.asarray(model.loss.posterior(jaxnn.decision_function(model, Xq)), np.float64), 0, 1)
    link /= link.sum(axis=1, keepdims=True)
    nb = np.asarray(jaxnn.knn_query(model.X, Xq, 5).indices)
    votes = (y[nb][:, :, None] == np.arange(3)[None, None, :]).mean(axis=1)
    np.testing.assert_allclose(p_link, link, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(mixes[1.0], votes, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(mixes[0.25], 0.75 * link + 0.25 * votes, rtol=1e-5, atol=1e-6)


def test_shared_k_buckets():
    small, ks = sizes_mod.SMALL_K_MAX_ROWS, (1, 3, 8, 9, 15, 16, 17, 50, 64, 65)
    assert [sizes_mod.shared_k(k, small) for k in ks] == [64] * 9 + [128]  # a few hundred points: every k ≤ 64
    assert [sizes_mod.shared_k(k, small + 1) for k in ks] == [8, 8, 8, 16, 16, 16, 32, 64, 64, 128]
    many = sizes_mod.SMALL_K_MAX_QUERIES
    assert sizes_mod.shared_k(5, small, many) == 64 and sizes_mod.shared_k(5, small, many + 1) == 8
    assert predict_mod.PREDICT_BLOCK_ROWS <= many  # predict's blocks run the rule a fit's held-out scoring does
    assert sizes_mod.shared_k(10, sizes_mod.SHARED_K_MAX_ROWS) == 16
    assert sizes_mod.shared_k(10, sizes_mod.SHARED_K_MAX_ROWS + 1) == 10  # larger searches find k


@pytest.mark.parametrize("k", [1, 3, 7, 9, 15])
def test_searches_at_a_shared_k_keep_the_exact_first_k(k):
    """A small search finds shared_k(k) neighbours and keeps the first k: on
    integer points (many exact ties, broken by the lower index) they are the
    brute-force k-NN, for the graph, the queries and both at once — also on
    6 points, where shared_k exceeds the points (the padding, never a
    neighbour, fills the columns past them)."""
    rng = np.random.default_rng(30 + k)
    X = rng.integers(0, 4, size=(300, 3)).astype(np.float32)
    Q = rng.integers(0, 4, size=(50, 3)).astype(np.float32)
    assert sizes_mod.shared_k(k, 300) > k  # the search finds more than it keeps
    graph = jaxnn.knn_graph(X, k)
    assert graph.indices.shape == graph.distances.shape == (300, k)
    np.testing.assert_array_equal(np.asarray(graph.indices), _brute_force(X, X, k, True))
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_query(X, Q, k).indices), _brute_force(Q, X, k, False))
    tr, q = graph_mod.graph_and_query(X, Q, k)
    np.testing.assert_array_equal(tr, _brute_force(X, X, k, True))
    np.testing.assert_array_equal(q, _brute_force(Q, X, k, False))
    small = min(k, 5)
    np.testing.assert_array_equal(np.asarray(jaxnn.knn_graph(X[:6], small).indices), _brute_force(X[:6], X[:6], small, True))


@pytest.mark.parametrize("posterior", ["link", "auto"])
@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_fits_of_nearby_ks_share_the_compiled_programs_and_equal_unshared_fits(posterior, monkeypatch, compilations):
    """A grid over k (3, 7, 50 on a few hundred points: 64 neighbours
    searched, width the padded rows): after the
    first k the others compile no search, boosting, scoring or posterior —
    with ``posterior="auto"`` the auxiliary fit's neither (each k compiled
    ~0.5–0.9 s of them, 2 CPU cores) — and every fit, its scores, posteriors,
    labels and posterior choice equal those of the fit without shared ks
    (SHARED_K_MAX_ROWS = 0: the search finds k, the width floor is 8k)."""
    watched = (search_mod.conditioned_search, boost, predict_mod._rule)
    X, y = _blobs(350 if posterior == "link" else 330, d=6, seed=21)
    Q = X[:70] + np.float32(0.1)

    def fit_and_predict(k):
        model = jaxnn.fit(X, y, k=k, posterior=posterior)
        return (np.asarray(model.alpha), np.asarray(jaxnn.decision_function(model, Q)),
                np.asarray(jaxnn.predict_proba(model, Q)), jaxnn.predict(model, Q), model.posterior_mix)

    with compilations(*watched):  # compiled anew
        fit_and_predict(3)
    with compilations() as compiled:
        shared = {k: fit_and_predict(k) for k in (7, 50)}
    assert compiled.of(*watched) == []
    monkeypatch.setattr(sizes_mod, "SHARED_K_MAX_ROWS", 0)
    for k in (7, 50):
        alpha, H, p, labels, mix = fit_and_predict(k)
        np.testing.assert_allclose(shared[k][0], alpha, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(shared[k][1], H, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(shared[k][2], p, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(shared[k][3], labels)
        assert shared[k][4] == mix


@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_knn_baselines_of_nearby_sizes_and_ks_share_the_search_and_vote_count(compilations):
    """The k-NN baseline on 320 points, then on 330 at k = 3, 5, 7 (8
    neighbours searched): one compiled search and vote count, and each fit's
    posteriors are its brute-force vote fractions."""
    from jaxnn import baselines as BL
    from jaxnn._src import baselines as bl_src

    X, y = _blobs(330, d=9, seed=4)
    classes = np.unique(y)
    with compilations(bl_src._votes, search_mod.conditioned_search):  # compiled anew
        np.asarray(BL.predict_proba(BL.knn_fit(X[:320], y[:320], k=3), X[:40]))
    with compilations() as compiled:
        for k in (3, 5, 7):
            p = np.asarray(BL.predict_proba(BL.knn_fit(X, y, k=k), X[:40]))
            idx = _brute_force(X[:40], X, k, False)
            np.testing.assert_allclose(p, (y[idx][:, :, None] == classes).mean(axis=1), atol=1e-6)
    assert compiled.of(bl_src._votes, search_mod.conditioned_search) == []


@pytest.mark.parametrize("m", [400, 500])
@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_auto_posterior_choice_compiles_only_predict_probas_program(m, compilations):
    """posterior="auto" scores its held-out points with predict_proba's
    program (λ = 0, then 1), the auxiliary model padded to the main fit's
    rows: a first fit and its predict_proba of a batch of the held-out size
    compile one posterior program, where they compiled two (~0.1 s each on
    2 CPU cores) — also where the 80 % and the whole round to different
    shared sizes (m = 400: 384 and 512 rows)."""
    X, y = _blobs(m, C=5, seed=12)
    with compilations(predict_mod._rule) as compiled:  # its programs dropped first
        model = jaxnn.fit(X, y, k=6)
        assert len(compiled.of(predict_mod._rule)) == 1, compiled  # one program for both λ
        p = np.asarray(jaxnn.predict_proba(model, X[:90]))  # 90 rows, as the 80–100 scored: 128 query rows
    assert len(compiled.of(predict_mod._rule)) == 1, compiled
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-5)


@pytest.mark.slow  # counts compilations: new shapes, fresh programs
def test_split_fits_of_nearby_sizes_share_the_compiled_programs(compilations):
    """fit_split pads its blocks as fit pads one set: folds that differ by
    a row compile no new block search, boosting or scoring (5 folds of
    402–403 points, 4 blocks, compiled 23 programs)."""
    from jaxnn._src import ensemble as ens_src

    watched = (ens_src._topk_blocks_padded, boost_runs._boost_blocks, ens_src._scores_blocks_padded)
    X, y = _blobs(403, d=11, seed=12)
    with compilations(*watched):  # compiled anew
        model = jaxnn.ensemble.fit_split(X[:400], y[:400], n_splits=3, k=5)
        jaxnn.ensemble.predict_proba_split(model, X[:50])
    with compilations() as compiled:
        for m in (403, 401):
            model = jaxnn.ensemble.fit_split(X[:m], y[:m], n_splits=3, k=5)
            jaxnn.ensemble.predict_proba_split(model, X[:60])
            assert model.alpha.shape == (3, m, 3) and model.X.shape == (3, m, 4)
    assert compiled.of(*watched) == []


@pytest.mark.parametrize("algorithm, chooser", [("gnnb", "random"), ("n3", "greedy")])  # fit's own: above
@pytest.mark.slow  # compiles fits at new shapes, padded and not
def test_padded_split_fit_equals_the_unpadded(algorithm, chooser, monkeypatch):
    """The padded blocks give the unpadded fit_split's graphs, α, trace and
    predictions; their graphs are each block's knn_graph."""
    X, y = _blobs(300, d=9, seed=13)
    fits = []
    for limit in (sizes_mod.SHARED_MAX_ROWS, 0):
        monkeypatch.setattr(sizes_mod, "SHARED_MAX_ROWS", limit)
        model = jaxnn.ensemble.fit_split(X, y, n_splits=3, k=6, algorithm=algorithm, chooser=chooser,
                                         rounds=2 * 300 + 17, trace=True, seed=2)
        fits.append((model, np.asarray(jaxnn.ensemble.predict_proba_split(model, X[:60] + 0.05)),
                     jaxnn.ensemble.predict_split(model, X[:60] + 0.05)))
    (padded, p_padded, y_padded), (plain, p_plain, y_plain) = fits
    assert padded.alpha.shape == plain.alpha.shape == (3, 300, 3) and padded.trace.shape == plain.trace.shape == (3, 617)
    np.testing.assert_allclose(np.asarray(padded.alpha), np.asarray(plain.alpha), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(padded.trace), np.asarray(plain.trace), rtol=0,
                               atol=2e-6 * float(np.max(plain.trace[:, 0])))
    np.testing.assert_allclose(p_padded, p_plain, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(y_padded, y_plain)
    from jaxnn._src import ensemble as ens_src

    monkeypatch.undo()  # the padded search again
    graphs = ens_src._block_graphs(padded.X, 6)
    for b in range(3):
        np.testing.assert_array_equal(graphs[b], np.asarray(jaxnn.knn_graph(padded.X[b], 6).indices))


def test_shared_k_of_the_padded_rows_is_that_of_the_points():
    """shared_k decides alike on m points and on the rows they are padded
    to, so a search or boosting padded to another's rows (an auxiliary fit
    to its main fit's) finds that one's neighbours and shares its program."""
    for m in range(1, 4 * sizes_mod.SHARED_K_MAX_ROWS, 7):
        for k in (1, 5, 9, 50, 64, 65):
            assert sizes_mod.shared_k(k, m) == sizes_mod.shared_k(k, sizes_mod.shared_rows(m)), (k, m)


def test_many_queries_among_few_points_keep_the_floor_of_8(monkeypatch):
    """Among a few hundred points a search of a few queries finds 64
    neighbours, one of more than SMALL_K_MAX_QUERIES (padded) rows the power
    of two ≥ max(k, 8) — its answer would otherwise hold 8 times the memory —
    and both keep the exact first k."""
    found = []
    real = search_mod.conditioned_search
    monkeypatch.setattr(search_mod, "conditioned_search", lambda *a, **kw: found.append(kw["k"]) or real(*a, **kw))
    rng = np.random.default_rng(40)
    X = rng.integers(0, 4, size=(300, 3)).astype(np.float32)
    Q = rng.integers(0, 4, size=(sizes_mod.SMALL_K_MAX_QUERIES + 1, 3)).astype(np.float32)
    few = np.asarray(jaxnn.knn_query(X, Q[:50], 5).indices)
    many = np.asarray(jaxnn.knn_query(X, Q, 5).indices)
    assert found == [64, 8]
    np.testing.assert_array_equal(few, _brute_force(Q[:50], X, 5, False))
    np.testing.assert_array_equal(many[-50:], _brute_force(Q[-50:], X, 5, False))


def test_a_padded_query_batch_searches_its_own_blocks_and_answers_as_a_full_one():
    """Among few training points a batch of one query is padded to the
    training points' rows (here 1024: eight blocks of 128) and the search
    loops over the blocks holding real rows only: each query's neighbours
    and distances are those the full batch's search gives it, to the bit."""
    rng = np.random.default_rng(4)
    X, Q = rng.normal(size=(1000, 5)).astype(np.float32), rng.normal(size=(300, 5)).astype(np.float32)
    assert sizes_mod.query_rows(1, among=sizes_mod.shared_rows(1000)) == 1024 == sizes_mod.query_rows(300, among=1024)
    full = jaxnn.knn_query(X, Q, 6)
    for i in (0, 129, 299):
        one = jaxnn.knn_query(X, Q[i:i + 1], 6)
        np.testing.assert_array_equal(np.asarray(one.indices)[0], np.asarray(full.indices)[i])
        np.testing.assert_array_equal(np.asarray(one.distances)[0], np.asarray(full.distances)[i])
    np.testing.assert_array_equal(np.asarray(full.indices), _brute_force(Q, X, 6, False))
