"""Cheap model selection: k, loss and number of passes by internal validation.

One neighbour graph at the largest candidate k serves every smaller k (the
searches return neighbours nearest first, so the first k columns are the
k-NN graph), and passes are run one after another from the previous edges,
so one compiled program per (k, loss) scores every number of passes.
"""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple, Sequence

import numpy as np

from jaxnn._src import algorithms as algos
from jaxnn._src import losses as losses_mod
from jaxnn._src import boost_runs, programs, shared_sizes, sharding
from jaxnn._src.calibration import common_leverage, shrinkages_of, shrunk_scores
from jaxnn._src.graph import default_candidates, graph_and_query, knn_graph, knn_query, nndescent_index, nndescent_query
from jaxnn._src.inputs import as_points, compute_dtype, encode_labels, label_rows, points_of_parts
from jaxnn._src.params import check
from jaxnn._src.plan import make_plan
from jaxnn._src.leverage import unreached_leverage
from jaxnn._src.prediction import (host_first_positions, host_neighbor_sum, label_sums, leveraged_scores,
                                  tie_broken_argmax, tie_parts)
from jaxnn._src.progress import logged, progress_shown, stage
from jaxnn._src.shared_sizes import padded_rows, query_rows, shared_rows, to_device
from jaxnn._src.steps import initial_edges

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
      scores: {(k, loss_name, passes): validation accuracy of the rule
        :func:`jaxnn.fit` makes of that candidate}; candidate losses must
        have distinct names (the same loss twice counts once).
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
    verbose: bool = False,
    shrinkage="auto",
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
      verbose: print the stages (the searches, then the candidates: one
        step per k and loss, with its best held-out accuracy) to stderr, as
        :func:`jaxnn.fit`'s ``verbose`` does (a bar on a terminal).
      shrinkage: ``"auto"`` (default, as ``fit``'s) or None: the rule each
        candidate is scored as.  Each is scored as ``fit`` predicts: the
        examples no step reached take their class's leverage
        (:func:`jaxnn._src.leverage.unreached_leverage`) and exact ties in H
        go to the k-NN vote, then the nearest neighbour.  ``"auto"``: the
        leverages shrunk toward one common value, (1 − s)·α + s·ā, at the
        s ∈ {0, 0.1, …, 1} of best held-out accuracy (``fit`` then chooses
        its own s by held-out log loss); None: boosting's α.

    Returns:
      :class:`Selection`.
    """
    if check("verbose", verbose):
        with progress_shown():
            return select(X, y, ks=ks, losses=losses, passes=passes, algorithm=algorithm, chooser=chooser,
                          epsilon=epsilon, holdout=holdout, seed=seed, graph_method=graph_method, devices=devices,
                          shrinkage=shrinkage)
    Xa = as_points(X)
    classes, Y_all, multilabel = encode_labels(y, Xa.shape[0])
    y_arr = label_rows(y)  # a one-column y split as the 1-D labels fit reads it as
    # the settings jaxnn._src.params declares, before the searches below, which may take long
    holdout, seed = check("holdout", holdout), check("seed", seed)
    ks = [check("k", k, label="each of ks") for k in _candidates(ks, "ks")]
    passes = [check("passes", p, label="each of passes") for p in _candidates(passes, "passes")]
    losses = _candidates(losses, "losses")
    epsilon = check("epsilon", epsilon)
    shrinkages = shrinkages_of(shrinkage)  # its declared check
    chooser, graph_method = check("chooser", chooser), check("graph_method", graph_method)
    tr, va = _holdout(y_arr, holdout, seed)
    if va.size == 0 or tr.size < 2:
        raise ValueError(f"holdout={holdout:g} of {y_arr.shape[0]} points leaves {tr.size} to train on and {va.size} "
                         "to validate: too few points for a held-out selection")
    m = tr.size
    plan = make_plan(m, Y_all.shape[1], m, chooser, devices)  # one pass at a time: whole passes
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
    graph, query = logged(f"select: {graph_method} {k_max}-NN graph of {m} training points and the {va.size} "
                          f"held-out points' neighbours",
                          lambda: _searched(X_tr, X_va, ks, graph_method, seed, devices))
    n_classes = Y_all.shape[1]
    max_passes = max(int(p) for p in passes)
    # a small problem is boosted and scored padded to shared sizes, as fit pads it; the largest k's
    # shapes serve every k (its inverse neighbourhoods hold the smaller ks'): one compiled scan
    one_fit_pass = max_passes == 1 and plan.shared  # the candidates' run is the one pass of the fit of all points
    shared = boost_runs.select_shapes(plan, graph, n_classes, seed, fit_rows=Xa.shape[0] if one_fit_pass else 0)
    Y = to_device(padded_rows(Y_all[tr], m if shared is None else shared.rows), dtype)
    Y_va = Y_all[va]
    n_val = Y_va.shape[0]
    # the scoring on the host where small, else compiled once for nearby sizes, and for every k: the
    # k_max columns, the first k summed
    scored_on_host = n_val * k_max * n_classes <= HOST_SCORING_MAX_ENTRIES
    Y_scored = np.asarray(Y_all[tr], dtype) if scored_on_host else Y
    if not scored_on_host:
        query = to_device(padded_rows(query, query_rows(n_val)))
    Y_run = sharding.on_classes(Y, plan.devices)  # on the plan's class mesh, as fit's run holds it
    scores = {}
    calls = max_passes * (len(ks) if shared is not None else 1)  # runs of one loss's compiled scan
    n_candidates = len(ks) * len(loss_objs)
    with stage(f"select: {n_candidates} candidates (k, loss) x passes {sorted(set(passes))} on {m} points",
               total=n_candidates, unit="candidate") as progress:
        for k in ks:
            nb = graph[:, :k]
            rule = _RuleParts(Y_scored, query, k, n_val, n_classes)
            run_pass = boost_runs.pass_runner(plan, nb, n_classes, algo, seed, max_passes, shared, k_max, calls)
            for loss in loss_objs:
                # one padded pass: the initial edges computed in its program, as a fit's one pass computes
                # them (fit(k="auto") then runs this compiled pass); else given, as the later passes' are
                edges = None if one_fit_pass else sharding.on_classes(
                    initial_edges(Y, algorithm=algo, loss=loss), plan.devices)
                alpha = None  # the passes' α summed (the first pass's as it is: no program of its own)
                for p in range(1, max_passes + 1):
                    res = run_pass(Y_run, edges, loss, p)
                    edges, alpha = res.edges, res.alpha if alpha is None else alpha + res.alpha
                    if p in passes:
                        filled = unreached_leverage(np.asarray(alpha[:, :n_classes])[:m], Y_all[tr], nb)
                        scores[(k, loss.name, p)] = rule.accuracy(filled, Y_va, multilabel, shrinkages)
                # a step per candidate (k, loss), from the host: never per boosting step
                progress.step(None, None, "select: k=%d, %s loss: held-out accuracy %.4f (%d of %d)", k, loss.name,
                              max(scores[(k, loss.name, p)] for p in passes), progress.done + 1, n_candidates)
    rank = {loss.name: i for i, loss in enumerate(loss_objs)}
    best = max(scores, key=lambda key: (scores[key], -key[0], -key[2], -rank[key[1]]))
    return Selection(best[0], _fit_ready(loss_objs[rank[best[1]]]), best[2], scores)


class _RuleParts:
    """The parts of :func:`jaxnn.predict`'s rule at the held-out points that
    do not depend on α, for one k: the label sums V = Σ_{j∈NN_k(x)} y_jc,
    the vote counts and the first positions of each class (ties), computed
    once for every candidate of that k.  ``Y`` (rows, C') on the device,
    padded, and ``query`` the held-out points' (n', k_max) neighbours,
    padded; or, scored on the host (:data:`HOST_SCORING_MAX_ENTRIES`), the
    training part's (m, C) labels and the n_val points' neighbours, NumPy."""

    def __init__(self, Y, query, k: int, n_val: int, n_classes: int):
        self.Y, self.query, self.k, self.n_val, self.n_classes = Y, query, k, n_val, n_classes
        self.on_host = isinstance(query, np.ndarray)
        if self.on_host:
            self.counts = host_neighbor_sum((Y > 0).astype(Y.dtype), query, k)
            self.first = host_first_positions(Y, query, k)
        else:
            self.counts, self.first = (np.asarray(a)[:n_val, :n_classes] for a in _tie_parts(Y, query, k))
        self.V = label_sums(self.counts, k)

    def accuracy(self, alpha, Y_va, multilabel: bool, shrinkages) -> float:
        """Held-out accuracy of the rule of leverages ``alpha`` (m, C), host,
        unreached examples filled: predict's labels (argmax H, ties by the
        vote, then the nearest neighbour; multilabel H_c > 0) for H of α
        shrunk by each s of ``shrinkages`` toward ā, the best of them."""
        if self.on_host:  # the program's sum, in its order: the same H
            H = host_neighbor_sum(alpha.astype(self.Y.dtype) * self.Y, self.query, self.k)
        else:
            padded = to_device(padded_rows(alpha, self.Y.shape[0]), self.Y.dtype)
            H = np.asarray(leveraged_scores(padded, self.Y, self.query, self.k))[:self.n_val, :self.n_classes]
        common, truth = common_leverage(H, self.k), Y_va > 0 if multilabel else np.argmax(Y_va, axis=1)
        S = np.stack([shrunk_scores(H, self.V, s, common) for s in shrinkages])
        if multilabel:
            right = (S > 0) == truth
        else:
            right = tie_broken_argmax(S, self.counts, self.first, self.query.shape[1]) == truth  # NumPy: no program
        return max(float(np.mean(r)) for r in right)


#: held-out points × largest candidate k × classes up to which ``select``
#: scores its candidates on the host (:func:`host_neighbor_sum`, the
#: program's sums in its order: the same scores), where the scoring's two
#: programs would compile for each new shape at a few milliseconds' gain; beyond,
#: in those programs (several times quicker on many points)
HOST_SCORING_MAX_ENTRIES = 1 << 20

#: the vote counts and first positions at the held-out points, k traced (one program for every candidate)
_tie_parts = programs.jit()(tie_parts)


def _fit_search(m: int, ks) -> dict:
    """How select's exact search of the held-out split's m points, among its
    training part, is sized: where the candidates' fit on all m points —
    ``fit(k="auto")``'s, or a fit at the one k given — is sized for the
    largest candidate k (:func:`shared_sizes.candidates_k`: at most
    :data:`shared_sizes.SHARED_K_MAX_ROWS` points), as that fit's graph
    search — the training part padded to the m points'
    :func:`shared_sizes.shared_rows`, :func:`shared_sizes.shared_k` (max(ks))
    neighbours found —, so that the fit's search next runs the same compiled
    program; else exactly max(ks) neighbours (more would only cost time)."""
    if not shared_sizes.candidates_k(ks, m):
        return {"share_k": False}
    return {"rows": shared_rows(m)}


def _searched(X_tr, X_va, ks, graph_method: str, seed: int, devices):
    """(the (m, k_max) training graph, the (n_val, k_max) neighbours of the
    held-out points in it), host arrays, nearest first: prefixes are the
    k-NN graphs of the smaller ks."""
    k_max = max(ks)
    if graph_method == "nndescent":
        found = nndescent_index(X_tr, k_max, seed, default_candidates(k_max), 1)
        graph, query = found.neighbors.indices, nndescent_query(found.index, X_tr, X_va, k_max).indices
    elif graph_method == "exact":  # one search, one compilation (graph.graph_and_query)
        graph, query = graph_and_query(X_tr, X_va, k_max, devices=devices,
                                       **_fit_search(X_tr.shape[0] + X_va.shape[0], ks))
    else:
        graph = knn_graph(X_tr, k_max, method=graph_method, seed=seed, devices=devices).indices
        query = knn_query(X_tr, X_va, k_max, devices=devices).indices
    return np.asarray(graph), np.asarray(query)


def _fit_ready(loss):
    """A catalogue loss by its name, any other (from_phi / from_psi) as the
    Loss itself: either way what ``fit(loss=...)`` takes."""
    try:
        return loss.name if losses_mod.get(loss.name) is loss else loss
    except ValueError:  # a custom name, not in the catalogue
        return loss
