"""Cheap model selection: k, loss and number of passes by internal validation.

One neighbour graph at the largest candidate k serves every smaller k (the
searches return neighbours nearest first, so the first k columns are the
k-NN graph), and passes are run one after another from the previous edges,
so one compiled program per (k, loss) scores every number of passes.
"""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple, Sequence

import jax.numpy as jnp
import numpy as np

from jaxnn._src import algorithms as algos
from jaxnn._src import losses as losses_mod
from jaxnn._src import sharding, window
from jaxnn._src.boost_runs import (SharedShapes, auto_chooser, boosts_at_shared_size, padded_graph, runs_windowed,
                                   windowed_layout)
from jaxnn._src.boosting import boost, check_chooser, chooser_order, initial_edges
from jaxnn._src.checks import check_integer, check_real, did_you_mean
from jaxnn._src.graph import METHODS, _nndescent_index, _nndescent_query, graph_and_query, knn_graph, knn_query
from jaxnn._src.inputs import as_points, compute_dtype, encode_labels, label_rows, points_of_parts
from jaxnn._src.inverse import inverse_counts, inverse_neighbors
from jaxnn._src.prediction import _scores
from jaxnn._src.schedule import ScheduleSizes, boost_colored, color_schedule, padded_schedule
from jaxnn._src.shared_sizes import padded_rows, query_rows, shared_rows, shared_width, to_device

__all__ = ["Selection", "select", "DEFAULT_KS", "DEFAULT_LOSSES", "DEFAULT_PASSES"]

DEFAULT_KS = (5, 10, 20, 50)
DEFAULT_LOSSES = ("logistic", "matsushita")
DEFAULT_PASSES = (1, 2, 4)


class Selection(NamedTuple):
    """The chosen hyper-parameters and every validation score.

    Attributes:
      k, loss, passes: the best candidate (highest validation accuracy; ties →
        smaller k, then fewer passes, then the earlier loss).  ``loss`` is a
        catalogue loss's name, or a custom (``from_phi`` / ``from_psi``) Loss
        itself: what ``fit(loss=...)`` takes.
      scores: {(k, loss_name, passes): validation accuracy}; candidate losses
        must have distinct names (the same loss twice counts once).
    """

    k: int
    loss: Any
    passes: int
    scores: dict


def _candidates(values, name: str) -> list:
    """The candidates of ``select``'s ``name``: a sequence, or one value
    (a lone string or number is one candidate, not a sequence of them)."""
    if isinstance(values, (str, bytes, numbers.Number, np.generic)) or isinstance(values, losses_mod.Loss):
        values = [values]
    try:
        values = list(values)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of candidates, got {type(values).__name__}") from None
    if not values:
        raise ValueError(f"{name} must hold at least one candidate")
    return values


def _holdout(y: np.ndarray, fraction: float, seed: int):
    """(train, validation) indices: a plain random split (multilabel), or
    stratified (1-D labels): round(fraction·m) validation points in all,
    shared among the classes by largest remainder (ties at random) and never
    a class's last training example.  Rounding class by class gave 50
    classes of 2 examples no validation point at all, and 50 × 3 a third."""
    rng = np.random.default_rng(seed)
    m = y.shape[0]
    if y.ndim == 2:
        perm = rng.permutation(m)
        n_val = max(1, int(round(fraction * m)))
        return np.sort(perm[n_val:]), np.sort(perm[:n_val])
    _, codes = np.unique(y, return_inverse=True)
    codes = codes.reshape(-1)
    sizes = np.bincount(codes)
    quota = fraction * sizes
    room = np.maximum(sizes - 1, 0)  # a class keeps one training example
    take = np.minimum(np.floor(quota).astype(np.int64), room)
    extra = int(round(fraction * m)) - int(take.sum())
    if extra > 0:  # largest remainders first among classes with room, ties in a seeded random order
        order = np.lexsort((rng.permutation(sizes.size), -(quota - take)))
        order = order[take[order] < room[order]]
        take[order[:extra]] += 1
    val = [rng.permutation(np.flatnonzero(codes == c))[: take[c]] for c in range(sizes.size)]
    val = np.sort(np.concatenate(val))
    return np.setdiff1d(np.arange(m), val), val


def _pass_runner(chooser: str, nb: np.ndarray, m: int, n_classes: int, algo, seed: int, max_passes: int,
                 mesh=None, platform=None, shared=None, window_k=None, calls: int = 1):
    """``(Y, edges, loss, p) → BoostResult`` of pass p (1-based) on the graph
    ``nb`` as ``fit`` runs it: the colored schedule, or the scan — windowed
    for a large edge state — over pass p's slice of ``fit``'s sequence (the
    random chooser draws a new permutation each pass); with a class ``mesh``,
    on its devices.  ``shared``: None, or the scan on the problem padded to
    these :class:`boost_runs.SharedShapes` (:class:`boost_runs.WindowedShapes` for the
    windowed scan, its windows ``window_k``'s length;
    :class:`schedule.ScheduleSizes` for the colored schedule), as ``fit`` pads a
    small one (Y and the edges have ``shared.rows`` rows; the shapes of the
    largest k serve every k: one compiled scan per loss).  ``calls``: the
    runs of that compiled scan the caller makes (every k's and pass's): its
    steps are narrowed to n_j when their padded work pays for the
    compilation (:func:`boosting.step_widths`) — at the largest k's width,
    select's passes at full width took 4–5× longer (optdigits)."""
    if chooser == "colored" and shared is not None:  # padded as fit pads it (boost_runs.shared_size_colored)
        schedule, real_steps, _ = padded_schedule(nb, n_classes=n_classes, platform=platform, pad_to=shared)
        schedule = schedule._replace(colors=None)  # not read: its (m,) shape would compile per size
        counts = to_device(padded_rows(inverse_counts(nb, m), shared.rows))
        n_points, n_steps = to_device(m, np.int32), to_device(real_steps, np.int32)
        return lambda Y, edges, loss, p: boost_colored(Y, edges, counts, schedule, n_points, n_steps, algorithm=algo,
                                                       loss=loss, passes=1, trace=False)
    if chooser == "colored":
        schedule = color_schedule(nb, n_classes=n_classes, platform=platform)
        counts = jnp.asarray(inverse_counts(nb, m))
        return lambda Y, edges, loss, p: boost_colored(Y, edges, counts, schedule, algorithm=algo, loss=loss,
                                                       passes=1, trace=False)
    orders = chooser_order(chooser, m, max_passes * m, seed).reshape(max_passes, m)
    if runs_windowed(m, n_classes, chooser, mesh):
        # fit's windowed scan for a large edge state (2.8× faster a pass at m = 10⁵, C = 10, k = 10);
        # a layout per distinct pass order, built when first needed (lazy: one for all passes)
        counts = inverse_counts(nb, m)
        if shared is None:
            counts_j, max_count, n_points, at_least = to_device(counts), window.shared_max_count(counts), None, None
        else:  # padded as fit pads it (boost_runs.shared_size_windowed), at the largest k's sizes
            counts_j, max_count = to_device(padded_rows(counts, shared.rows)), shared.max_count
            n_points, at_least = to_device(m, np.int32), shared.layout
        steps, layouts = window.window_steps(n_classes, window_k or nb.shape[1]), {}

        def windowed_pass(Y, edges, loss, p):
            key = p if chooser == "random" else 1  # lazy: every pass the same order
            if key not in layouts:
                layouts[key] = window.window_layout(nb, orders[p - 1], steps, shared=shared is not None,
                                                    at_least=at_least)
            return window.boost_windowed(Y, edges, counts_j, layouts[key], n_points, algorithm=algo, loss=loss,
                                         trace=False, max_count=max_count, calls=calls)

        return windowed_pass
    if shared is not None:  # padded: sizes near m and the ks share the compiled scan (boost_runs.shared_size_boost)
        inv, neighbors = padded_graph(nb, shared.rows, shared.width, greedy=chooser == "greedy")
        sizes = to_device(m, np.int32)
        orders = padded_rows(orders.T, shared.steps).T  # (passes, steps): no-op steps after the m
        return lambda Y, edges, loss, p: boost(Y, edges, inv.members, inv.counts, neighbors, to_device(orders[p - 1]),
                                               sizes, sizes, algorithm=algo, loss=loss, greedy=chooser == "greedy",
                                               trace=False, calls=calls)
    inv = inverse_neighbors(nb, m, width=shared_width(inverse_counts(nb, m).max()))  # other folds' data share it
    if mesh is not None:
        inv = type(inv)(*(sharding.replicate(a, mesh) for a in inv))
    orders = jnp.asarray(orders)
    neighbors = jnp.asarray(nb) if chooser == "greedy" else None
    return lambda Y, edges, loss, p: boost(Y, edges, inv.members, inv.counts, neighbors, orders[p - 1],
                                           algorithm=algo, loss=loss, greedy=chooser == "greedy", trace=False,
                                           calls=calls)


def select(
    X,
    y,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    losses: Sequence[str] = DEFAULT_LOSSES,
    passes: Sequence[int] = DEFAULT_PASSES,
    algorithm="gnnb",
    chooser: str = "auto",
    epsilon: float = 0.5,
    holdout: float = 0.25,
    seed: int = 0,
    graph_method: str = "exact",
    devices=None,
) -> Selection:
    """Pick k, the loss and the number of boosting passes on a held-out split.

    Args:
      X, y: training data as for :func:`jaxnn.fit`.
      ks, losses, passes: candidate values (ks larger than the training part
        allows are dropped).
      algorithm, chooser, epsilon: as for :func:`jaxnn.fit`; each candidate's
        passes run as ``fit`` runs them (``"colored"``: the parallel schedule).
      holdout: validation fraction (stratified by class for 1-D labels).
      seed: seed of the split (and of nndescent and the random chooser).
      graph_method: as for :func:`jaxnn.fit`: ``"exact"`` or ``"approx"``
        (the training graph by :func:`jaxnn.knn_graph`, the validation points'
        neighbours by the exact :func:`jaxnn.knn_query`) or ``"nndescent"``
        (both by one pynndescent index of the training part, 2·max(ks)
        candidates).
      devices: as for :func:`jaxnn.fit`: the searches' query rows and the
        boosting's class axis are split across them.

    Returns:
      :class:`Selection`.
    """
    Xa = as_points(X)
    classes, Y_all, multilabel = encode_labels(y, Xa.shape[0])
    y_arr = label_rows(y)  # a one-column y split as the 1-D labels fit reads it as
    holdout = check_real(holdout, "holdout", low=0.0, high=1.0, low_open=True, high_open=True)
    seed = check_integer(seed, "seed", low=0)
    ks = [check_integer(k, "each of ks", low=1) for k in _candidates(ks, "ks")]
    passes = [check_integer(p, "each of passes", low=1) for p in _candidates(passes, "passes")]
    losses = _candidates(losses, "losses")
    epsilon = check_real(epsilon, "epsilon", low=0.0, high=1.0, low_open=True, high_open=True)
    tr, va = _holdout(y_arr, holdout, seed)
    if va.size == 0 or tr.size < 2:
        raise ValueError(f"holdout={holdout:g} of {y_arr.shape[0]} points leaves {tr.size} to train on and {va.size} "
                         "to validate: too few points for a held-out selection")
    m = tr.size
    check_chooser(chooser)
    if not isinstance(graph_method, str):
        raise TypeError(f"graph_method must be a str, got {type(graph_method).__name__}")
    if graph_method not in METHODS:
        raise ValueError(f"unknown graph_method {graph_method!r}; use one of {METHODS}" + did_you_mean(graph_method, METHODS))
    if graph_method == "nndescent":  # its random state (fit checks it the same way, later)
        check_integer(seed, "seed", low=0, high=2**32 - 1)
    platform = sharding.platform(devices)  # checks devices too
    if chooser == "auto":
        chooser = auto_chooser(m, m, platform, Y_all.shape[1])
    given_ks, ks = ks, sorted({int(k) for k in ks if 1 <= int(k) < m})
    if not ks:
        raise ValueError(f"no candidate k of {tuple(int(k) for k in given_ks)} is in [1, {m - 1}] for a training part "
                         f"of {m} points (fit(k='auto') tries {DEFAULT_KS}): give smaller ks, or a k")
    algo = algos.get(algorithm, epsilon=epsilon)
    loss_objs = []
    for loss in (losses_mod.get(name) for name in losses):
        twin = next((seen for seen in loss_objs if seen.name == loss.name), None)
        if twin is None:
            loss_objs.append(loss)
        elif twin is not loss:  # scores are keyed by name: the second one's scores overwrote the first's
            raise ValueError(f"two different candidate losses are both named {loss.name!r}: give custom losses "
                             "distinct names (from_phi(..., name=...))")
    for loss in loss_objs:
        algo.check(loss)

    dtype = compute_dtype(Xa)  # as fit computes: float32, or float64 under jax_enable_x64
    # as fit(Xa[tr]) and its predictions condition the points (float64 far from 0 centred first:
    # cast as given, points at 10⁸ ± 1 became one and every candidate scored chance)
    X_tr, X_va = points_of_parts(Xa, dtype, tr, va)
    k_max = max(ks)
    # nearest first: prefixes are the k-NN graphs
    if graph_method == "nndescent":
        graph, index = _nndescent_index(X_tr, k_max, seed, 2 * k_max, 1)
        graph, query = graph.indices, _nndescent_query(index, X_tr, X_va, k_max).indices
    elif graph_method == "exact":  # one search, one compilation (graph.graph_and_query)
        # exactly k_max neighbours: the candidate ks share this search already; a shared_k(k_max) search
        # (64 for 50) took 34–35 ms instead of 28–29 at m = 2000 (select warm: 124–132 → 120–121 ms)
        graph, query = graph_and_query(X_tr, X_va, k_max, devices=devices, share_k=False)
    else:
        graph = knn_graph(X_tr, k_max, method=graph_method, seed=seed, devices=devices).indices
        query = knn_query(X_tr, X_va, k_max, devices=devices).indices
    graph, query = np.asarray(graph), np.asarray(query)
    n_classes = Y_all.shape[1]
    max_passes = max(int(p) for p in passes)
    # a small problem is boosted and scored padded to shared sizes, as fit pads it; the largest k's
    # shapes serve every k (its inverse neighbourhoods hold the smaller ks'): one compiled scan
    shared = None
    if boosts_at_shared_size(m, n_classes, chooser, devices):
        if chooser == "colored":  # the largest k's schedule sizes (steps, edges, examples a step), for every k
            _, _, shared = padded_schedule(graph, n_classes=n_classes, platform=platform,
                                           pad_to=ScheduleSizes(shared_rows(m), 0, 0, 0))
        elif runs_windowed(m, n_classes, chooser, devices):  # the windows of the largest k's length, for every k
            first = chooser_order(chooser, m, m, seed)  # pass 1's order
            _, shared = windowed_layout(graph, first, window.window_steps(n_classes, k_max))
        else:
            shared = SharedShapes.of(m, m, inverse_counts(graph, m).max(), k_max)
    Y = to_device(padded_rows(Y_all[tr], m if shared is None else shared.rows), dtype)
    Y_va = Y_all[va]
    n_val = Y_va.shape[0]
    # the scoring compiled once for nearby sizes, and for every k: the k_max columns, the first k summed
    query = to_device(padded_rows(query, query_rows(n_val)))
    mesh = None if devices is None else sharding.class_mesh(devices)

    def on_mesh(a):  # (m, C) → padded to the devices and split along C, as fit does
        return a if mesh is None else sharding.shard_classes(sharding.pad_classes(a, mesh.devices.size), mesh)

    Y_run = on_mesh(Y)
    scores = {}
    calls = max_passes * (len(ks) if shared is not None else 1)  # runs of one loss's compiled scan
    for k in ks:
        nb = graph[:, :k]
        run_pass = _pass_runner(chooser, nb, m, n_classes, algo, seed, max_passes, mesh, platform, shared, k_max,
                                calls)
        for loss in loss_objs:
            edges = on_mesh(initial_edges(Y, algorithm=algo, loss=loss))
            alpha = jnp.zeros(Y_run.shape, Y.dtype)
            for p in range(1, max_passes + 1):
                res = run_pass(Y_run, edges, loss, p)
                edges, alpha = res.edges, alpha + res.alpha
                if p in passes:
                    H = np.asarray(_scores(alpha[:, :n_classes], Y, query, k))[:n_val]
                    if multilabel:
                        acc = float(np.mean((H > 0) == (Y_va > 0)))
                    else:
                        acc = float(np.mean(np.argmax(H, axis=1) == np.argmax(Y_va, axis=1)))
                    scores[(k, loss.name, p)] = acc
    rank = {loss.name: i for i, loss in enumerate(loss_objs)}
    best = max(scores, key=lambda key: (scores[key], -key[0], -key[2], -rank[key[1]]))
    return Selection(best[0], _fit_ready(loss_objs[rank[best[1]]]), best[2], scores)


def _fit_ready(loss):
    """A catalogue loss by its name, any other (from_phi / from_psi) as the
    Loss itself: either way what ``fit(loss=...)`` takes."""
    try:
        return loss.name if losses_mod.get(loss.name) is loss else loss
    except ValueError:  # a custom name, not in the catalogue
        return loss
