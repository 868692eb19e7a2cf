"""``fit``: learn a leveraged k-NN rule by boosting — the neighbour graph,
the boosting plan (:func:`jaxnn._src.plan.make_plan`) and its run
(:func:`jaxnn._src.boost_runs.run`), the leverage of the examples no step
reached and the shrinkage of the leverages (:mod:`jaxnn._src.leverage`),
and the temperature of the ``posterior="auto"`` posteriors — T and s chosen
on the scores of auxiliary fits at held-out points (:func:`held_out_folds`;
the choice itself: :mod:`jaxnn._src.calibration`).

``fit`` checks its arguments against their declarations
(:mod:`jaxnn._src.params`) and builds one immutable :class:`FitSpec`;
:func:`_boosted` runs a spec on a :class:`FitData`, and the auxiliary
fits of the held-out choice are ``spec._replace(...)`` of the main one,
scored by the callback :func:`_fold_scores`."""

from __future__ import annotations

import dataclasses
from concurrent.futures import Future, wait
from typing import Any, Callable, NamedTuple, Optional

import numpy as np

from jaxnn._src import algorithms as algos
from jaxnn._src import losses as losses_mod
from jaxnn._src import boost_runs, multihost
from jaxnn._src.calibration import (SHRINKAGES, calibrated_log_probs, fit_kernel_term, fit_shrinkage, fit_temperature,
                                    kernel_log_votes, posterior_scores, shrunk_scores, targets)
from jaxnn._src.graph import graph_and_query, graph_candidates, subgraph_and_rows
from jaxnn._src.inputs import (as_points, check_neighbors, compute_dtype, encode_labels, label_rows, points_of_parts,
                               sample_weights, training_points)
from jaxnn._src.leverage import shrunk_leverage, unreached_leverage
from jaxnn._src.learned_metric import apply_metric, metric_transform
from jaxnn._src.model import Model, takes_kernel_term
from jaxnn._src.params import check
from jaxnn._src.plan import Plan, make_plan
from jaxnn._src.prediction import HeldOutScores, held_out_scores, tie_broken_argmax
from jaxnn._src.progress import logged, logger, progress_shown
from jaxnn._src.select import DEFAULT_KS, DEFAULT_LOSSES, DEFAULT_PASSES, select
from jaxnn._src.shared_sizes import candidates_k, to_device
from jaxnn._src.threads import in_thread

__all__ = ["fit"]


def fit(
    X,
    y,
    *,
    k: int = 10,
    loss="logistic",
    algorithm="gnnb",
    rounds: Optional[int] = None,
    chooser: str = "auto",
    epsilon: float = 0.5,
    neighbors=None,
    seed: int = 0,
    graph_method: str = "exact",
    trace: bool = False,
    posterior: str = "auto",
    devices=None,
    verbose: bool = False,
    sample_weight=None,
    shrinkage="auto",
    metric=None,
) -> Model:
    """Learn a leveraged k-NN rule by boosting.

    Under ``jax.distributed`` (several processes) X, y and ``sample_weight``
    are this process's rows of the training set, which is every process's
    concatenated in process order; every process gets the same model
    (:mod:`jaxnn._src.multihost`; labels then numbers, booleans or strings).

    Args:
      X: (m, d) training points.
      y: (m,) class labels (any sortable values) or an (m, C) {0,1} / {−1,+1}
        indicator matrix (multilabel).
      k: neighbours, 1 ≤ k < m, or ``"auto"`` (chosen by :func:`jaxnn.select`
        among 5, 10, 20, 50 on a held-out 25 %, with the same
        ``graph_method``, ``chooser`` and ``devices``).
      loss: a name (:func:`jaxnn.losses.names`), a :class:`~jaxnn.losses.Loss`
        or ``"auto"`` (logistic or Matsushita, chosen by :func:`jaxnn.select`).
      algorithm: ``"gnnb"``, ``"unn"``, ``"unn_fast"``, ``"n3"`` or an
        algorithm object (``jaxnn.gnnb(...)``, ``jaxnn.unn(...)``…).
      rounds: boosting steps per class T (default m: one pass), or ``"auto"``
        (1, 2 or 4 passes, chosen by :func:`jaxnn.select`).
      chooser: ``"auto"`` (default: :func:`auto_chooser` — ``"colored"``
        when ``rounds`` is whole passes on a GPU or TPU, or on CPU from
        m·C ≥ 5·10⁶; else ``"lazy"``),
        ``"lazy"`` (index order), ``"random"`` (seeded permutation),
        ``"colored"`` (the exact parallel schedule: every example once per
        pass in the order of a colouring of the conflict graph, vectorised
        over the examples of a colour, a colour cut into steps of about
        2¹⁷/C edges; ``rounds`` must be a multiple of m) or ``"greedy"``
        (largest |δ|: GNNB*, N³'s WEO).  From m·C ≥ 2¹⁶ the ``lazy`` and
        ``random`` steps run in windows on a local copy of the rows they
        touch (:mod:`jaxnn._src.window`; same result, faster on CPU).
      epsilon: GNNB's ε ∈ (0, 1) (paper 000 eq. 10).
      neighbors: optional precomputed (m, k) int neighbour indices (self excluded),
        or a :class:`Neighbors` from :func:`knn_graph` (of k or more neighbours:
        its first k, the nearest, are used).
      seed: seed of the random chooser and of nndescent.
      graph_method: ``"exact"``, ``"nndescent"`` or ``"approx"`` (TPU-native
        ``lax.approx_min_k``) when ``neighbors`` is None (:func:`jaxnn.knn_graph`).
      trace: record the total surrogate risk after every step (``model.trace``;
        after every step of the schedule for ``chooser="colored"``).  It
        evaluates ψ on every edge a step writes, which makes a pass several
        times slower.
      posterior: how :func:`predict_proba` estimates posteriors — ``"auto"``
        (default): p̂ = (1 − ε)·softmax(H/T + w·log(κ + δ)) + ε/C, the logit
        of :func:`predict`'s class raised to the row's largest (multilabel: per label
        (1 − ε)·σ(H_c/T) + ε/2), ε = 0.01, with the temperature T of least
        log loss on a held-out 20 % for an auxiliary fit on the other 80 %
        (one extra fit; on small data up to five, cross-fitted;
        ``model.posterior_temperature``) — for three or more classes with
        the weight w ≥ 0 (``model.posterior_weight``) and bandwidth of the
        distance-weighted vote κ of the same k neighbours
        (:func:`jaxnn._src.calibration.kernel_weights`) fit with it: never
        exactly 0 or 1, its argmax always :func:`predict`'s label.  Data
        too small to hold 10 points out (m < 48), or whose 80 % would lack a
        class, fit T on the training points' own scores (logged).
        ``"link"``: the papers' p̂ = link(H) (paper 003 eq. 29);
        ``"votes"``: the k-NN vote fractions (both may be exactly 0 or 1;
        no auxiliary fit with ``shrinkage=None``).
        docs/guide/posteriors.md compares them.
      metric: the distance the neighbours are searched under — None
        (default): the Euclidean distance of the features as given, the
        papers'; ``"nca"``: a Mahalanobis distance ‖(x − x′)A‖² learned
        first by neighbourhood components analysis on the training points
        (:func:`jaxnn.learn_metric`: on at most 2000 of them, early-stopped on
        a held-out quarter, the standardised features unless the held-out
        gain is clear); a (d, r) array: that map A.  Everything after
        (graph, boosting, ``"auto"`` choices, held-out fits) runs on the
        mapped points xA, ``model.transform`` = A, and prediction maps the
        queries alike.  Not with precomputed ``neighbors``
        (docs/guide/metric.md).
      devices: None (default device), an int n (the first n devices), a list
        of devices or ``"all"``: the class axis of the boosting state is
        sharded across them, and so are the query rows of the exact graph
        search (:mod:`jaxnn._src.sharding`); results equal the single-device
        ones.
      verbose: print each stage (the neighbour graph, boosting, the
        ``posterior="auto"`` choice…) as it starts and its wall time when
        done, to stderr — the ``jaxnn`` logger at INFO level for this call
        (through your own handlers instead, when logging is configured).
      sample_weight: None, or (m,) non-negative weights w_i (a number: all
        alike): boosting minimises the weighted surrogate risk
        (1/(mC)) Σ_i u_i Σ_c ψ(e_ic), u_i = m·w_i/Σ w — each step's δ weighs
        the members of inv(j) by u_i (:mod:`jaxnn._src.steps`), the greedy
        chooser's scores too, and ``model.trace`` is this risk.  Uniform
        weights give the unweighted model; a zero weight removes the
        example's term (it stays a neighbour and a prototype).  The
        ``posterior="auto"`` temperature minimises the weighted held-out log
        loss.  Not with k, loss or rounds ``"auto"`` (:func:`jaxnn.select`
        scores unweighted accuracy).
      shrinkage: ``"auto"`` (default) or None.  ``"auto"``: α is shrunk
        toward one common leverage ā, (1 − s)·α + s·ā
        (:func:`jaxnn._src.leverage.shrunk_leverage`), s ∈ {0, 0.1, …, 1}
        chosen with the temperature T on held-out data — an auxiliary fit
        on a random 80 %, scored on the other 20 % (on small data, up to
        five such fits scoring every point once) — by least log
        loss of the calibrated posteriors softmax(H/T) (before the kernel
        term is fit); with
        ``posterior="auto"`` the same auxiliary fit chooses T, with
        ``"link"`` or ``"votes"`` it is made for s alone.  Between boosting's
        rule (s = 0) and the plain k-NN vote (s = 1): where each α is
        estimated from few reciprocal neighbours (small k) held-out data
        prefer it shrunk, and accuracy stays at plain k-NN's or above
        (docs/guide/posteriors.md).  ``model.leverage_shrinkage`` = s;
        ``model.trace`` stays the risk of boosting's α.  None: ``model.alpha``
        is boosting's α, the papers' rule (and with ``posterior="link"`` or
        ``"votes"`` no auxiliary fit is made).

    Returns:
      A fitted :class:`Model`.  Computation is float32 unless X is float64 and
      ``jax_enable_x64`` is on.  ``model.alpha`` is boosting's α, except for
      the examples that are no example's neighbour in the training graph
      (n_j = 0: boosting never steps on them, frequent at small k — a third
      of the examples at k = 1): they take the mean α of the reached
      examples of their class and label sign
      (:func:`jaxnn._src.leverage.unreached_leverage`), so that no query's
      score ignores a neighbour.  :func:`predict` breaks exact ties in H by
      the k-NN vote, then the nearest neighbour.
    """
    if check("verbose", verbose):
        with progress_shown():
            return fit(X, y, k=k, loss=loss, algorithm=algorithm, rounds=rounds, chooser=chooser, epsilon=epsilon,
                       neighbors=neighbors, seed=seed, graph_method=graph_method, trace=trace, posterior=posterior,
                       devices=devices, sample_weight=sample_weight, shrinkage=shrinkage, metric=metric)
    Xa = as_points(X)
    if multihost.joined():  # this process's rows: the training set is every process's, gathered
        Xa, y, sample_weight = multihost.gathered(Xa, y, sample_weight)
    m = Xa.shape[0]
    classes, Y_np, multilabel = encode_labels(y, m)
    weights = sample_weights(sample_weight, m)
    # the settings jaxnn._src.params declares, before any work ("auto" and None are read below);
    # graph_method even when neighbors are given
    posterior, graph_method = check("posterior", posterior), check("graph_method", graph_method)
    check("shrinkage", shrinkage)
    trace = check("trace", trace)
    if _auto(k) != "auto":
        k = check("k", k, below=m)
    if rounds is not None and _auto(rounds) != "auto":
        rounds = check("rounds", rounds)
    check("chooser", chooser)
    epsilon, seed = check("epsilon", epsilon), check("seed", seed)
    transform = None
    if metric is not None:
        if neighbors is not None:
            raise ValueError("metric cannot be combined with precomputed neighbors (they were searched under another "
                             "distance): give one or the other")
        transform = logged(f"fit: the metric ({metric if isinstance(metric, str) else 'given'})", lambda: metric_transform(
            metric, Xa, y, seed=seed, sample_weight=sample_weight))
        Xa = apply_metric(Xa, transform)
    search_k = 0
    if "auto" in (_auto(k), _auto(loss), _auto(rounds)):
        if weights is not None:
            raise ValueError("sample_weight cannot be combined with k, loss or rounds 'auto' (jaxnn.select scores "
                             "unweighted accuracy): give k, loss and rounds")
        if neighbors is not None and _auto(k) == "auto":
            raise ValueError("k='auto' cannot be combined with precomputed neighbors")
        sel = logged("fit: choosing the 'auto' settings on a held-out 25 %", lambda: select(
            Xa, y,
            ks=DEFAULT_KS if _auto(k) == "auto" else (k,),
            losses=DEFAULT_LOSSES if _auto(loss) == "auto" else (loss,),
            passes=DEFAULT_PASSES if _auto(rounds) == "auto" else (_given_passes(rounds, m),),
            algorithm=algorithm, chooser=chooser, epsilon=epsilon, seed=seed,
            graph_method=graph_method, devices=devices, shrinkage=shrinkage,
        ))
        # fit(k="auto")'s model sized for the largest candidate: each fold's choice runs one search and rule
        search_k = candidates_k({key[0] for key in sel.scores}, m) if _auto(k) == "auto" else 0
        k = sel.k if _auto(k) == "auto" else k
        loss = sel.loss if _auto(loss) == "auto" else loss
        rounds = sel.passes * m if _auto(rounds) == "auto" else rounds
        logger.info("fit: 'auto' chose k=%d, loss %s, %d pass(es): held-out accuracy %.4f",
                    sel.k, sel.loss, sel.passes, sel.scores[(sel.k, sel.loss, sel.passes)])
    loss_obj = losses_mod.get(loss)
    algo = algos.get(algorithm, epsilon=epsilon)
    algo.check(loss_obj)
    rounds = m if rounds is None else rounds
    plan = make_plan(m, Y_np.shape[1], rounds, chooser, devices, weighted=weights is not None)
    spec = FitSpec(plan, k, loss_obj, algo, rounds, seed, graph_method, trace, posterior, shrink=shrinkage is not None,
                   search_k=search_k)
    model = _fit(FitData(Xa, y, classes, Y_np, multilabel, weights, neighbors), spec)
    return model if transform is None else dataclasses.replace(model, transform=to_device(transform))


class FitData(NamedTuple):
    """The training set of one boosting fit, checked."""

    X: np.ndarray  #: (m, d) host points (mapped by the metric, if any)
    y: Any  #: the labels as given: (m,) labels or an (m, C) indicator matrix
    classes: tuple  #: the C classes (:func:`encode_labels`)
    Y: np.ndarray  #: (m, C) int8 ±1 labels (:func:`encode_labels`)
    multilabel: bool
    weights: Optional[np.ndarray] = None  #: (m,) sample weights of mean 1 (:func:`inputs.sample_weights`), or None
    graph: Any = None  #: given neighbours of the m points (checked by the fit), or None: searched


class FitSpec(NamedTuple):
    """Every setting of one boosting fit, checked: :func:`fit` builds it
    once; the held-out choice's auxiliary fits are ``spec._replace(plan=…,
    rounds=…, trace=False, like=…)`` of it (:func:`_fold_scores`)."""

    plan: Plan  #: :func:`make_plan`'s decisions
    k: int
    loss: Any  #: a :class:`Loss`
    algorithm: Any  #: an algorithm object (GNNB, UNN, N3)
    rounds: int  #: boosting steps per class
    seed: int
    graph_method: str  #: how the graph is searched when none is given
    trace: bool
    posterior: str  #: one of :data:`params.POSTERIORS`
    shrink: bool = False  #: ``shrinkage="auto"``
    #: the padded shapes of another fit whose compiled search and boosting this one
    #: reuses (an auxiliary fit takes the main fit's), or None
    like: Any = None
    #: 0, or the k ≥ ``k`` its exact search, boosting and model are sized for (``Model.search_k``)
    search_k: int = 0

    @property
    def searched_k(self) -> int:
        """The k its exact searches find neighbours for (the first k of them are the
        k-NN): max(k, ``search_k``), as ``Model.searched_k``."""
        return max(self.k, self.search_k)


class FoldArgs(NamedTuple):
    """The ``args`` of :func:`_fold_scores`: what every auxiliary fit of
    one held-out choice shares."""

    data: FitData  #: the main fit's data
    spec: FitSpec  #: the main fit's settings
    graph: Any  #: the main fit's (m, k) graph when the auxiliary graphs derive from it, or None
    candidates: Any  #: the main fit's (m, c ≥ k) candidate lists (nndescent's), or None: two hops through ``graph``
    kernel: bool  #: whether the scores carry the kernel term's parts (the program the main model will run)
    #: the main fit's padded shapes, which the auxiliary fits reuse (None: it has none), asked for
    #: once the auxiliary graph is derived: the main fit may still be boosting
    like: Callable[[], Any] = lambda: None


def _fit(data: FitData, spec: FitSpec) -> Model:
    """:func:`fit` once its settings are checked: the graph (:func:`_graph`),
    the boosted model (:func:`_boosted`), then the ``posterior``'s mix or
    the held-out choice of T, s and the kernel term
    (:func:`_choose_posterior`) applied to it.  The held-out choice runs on
    a second thread while this one boosts (:func:`threads.in_thread`): it
    needs the graph — and, where the plan shares sizes, the main fit's padded
    shapes, which its auxiliary fit's search and boosting reuse (an auxiliary
    graph derived from a given or approximate graph is made before it waits
    for them), or the main model's scores where it cannot split the data.
    Where the plan's devices span processes (:func:`multihost.spans_processes`)
    the choice follows the boosting on this thread."""
    found = _graph(data, spec)
    mix = {"link": 0.0, "votes": 1.0}.get(spec.posterior)
    if mix is not None and not spec.shrink:
        return dataclasses.replace(_boosted(data, spec, found).model, posterior_mix=mix)
    kernel = mix is None and takes_kernel_term(data.multilabel, len(data.classes))
    # the 80 % fit's graph: derived from the full graph (its candidate lists, else two hops) when it is not exact —
    # the caller's (jaxnn cannot repeat their search) or an approximate search's, whose
    # second search of 80 % would cost nearly what the first did
    derive = data.graph is not None or spec.graph_method != "exact" or found.candidates is not None
    main: Future = Future()

    def choose() -> PosteriorChoice:
        args = FoldArgs(data, spec._replace(trace=False), found.neighbors if derive else None, found.candidates,
                        kernel, like=lambda: main.result().shapes if spec.plan.shared else None)
        return _choose_posterior(_fold_scores, args, data, spec, kernel=kernel,
                                 in_sample=lambda: held_out_scores(main.result().model, data.X, found=found.neighbors))

    # beside the boosting, unless its programs span processes (each process launches those in one order)
    chosen = None if multihost.spans_processes(spec.plan.devices) else in_thread(choose, "jaxnn-held-out-choice")
    try:
        main.set_result(_boosted(data, spec, found))
    except BaseException as error:
        main.set_exception(error)  # a choice that waits on the main fit ends too
        if chosen is not None:
            wait([chosen])
        raise
    choice, model = choose() if chosen is None else chosen.result(), main.result().model
    posterior_fields = {} if mix is not None else dict(  # the held-out fit was made for s alone
        posterior_temperature=choice.temperature, posterior_weight=choice.weight, posterior_bandwidth=choice.bandwidth)
    return dataclasses.replace(model, alpha=shrunk_leverage(model.alpha, choice.shrinkage, choice.common),
                               posterior_mix=mix or 0.0, leverage_shrinkage=choice.shrinkage, **posterior_fields)


class Graph(NamedTuple):
    """What :func:`_graph` found."""

    points: Any  #: (m, d) training points on the device, in the compute dtype (:func:`training_points`)
    origin: Any  #: the origin they are centred on (:func:`training_points`)
    neighbors: np.ndarray  #: the (m, k) host graph to boost on
    #: the search's (m, c ≥ k) candidate lists — nndescent's, or an exact search's of c ≥
    #: :data:`EXACT_LISTS` · k (small data) — or None
    candidates: Optional[np.ndarray]


def _graph(data: FitData, spec: FitSpec) -> Graph:
    """The training points of ``data`` on the device and their graph:
    ``data.graph`` checked, or searched by ``spec.graph_method``."""
    Xa, k = data.X, spec.k
    m = Xa.shape[0]
    Xj, origin = training_points(Xa, compute_dtype(Xa))
    if data.graph is not None:
        return Graph(Xj, origin, check_neighbors(data.graph, m, k, rows=m), None)
    graph_devices = spec.plan.devices if spec.graph_method in ("exact", "approx") else None
    searched = spec.searched_k if spec.graph_method == "exact" else k
    found, candidates = logged(f"fit: {spec.graph_method} {k}-NN graph of {m} points in {Xa.shape[1]} dimensions",
                               lambda: graph_candidates(Xj, searched, method=spec.graph_method, seed=spec.seed,
                                                        devices=graph_devices))
    if spec.graph_method == "exact" and candidates is not None and candidates.shape[1] < EXACT_LISTS * k:
        candidates = None  # too few kept candidates a row for the 80 %'s graph: it is searched
    return Graph(Xj, origin, np.asarray(found.indices)[:, :k], candidates)


#: an exact search's candidate lists of at least this many times k columns (small data:
#: :func:`shared_sizes.shared_k`) give the held-out choice's 80 % graph and scored points'
#: neighbours without a second search — their first k kept points are the exact neighbours
#: among the 80 %; a row that keeps fewer than k (with 4k columns, below 10⁻⁴ at k = 2 and far
#: below at larger k) is searched exactly
EXACT_LISTS = 4


class Boosted(NamedTuple):
    """What :func:`_boosted` made."""

    model: Model  #: link posteriors, boosting's α with the unreached examples' filled
    shapes: Any  #: the padded shapes its search and boosting ran at


def _boosted(data: FitData, spec: FitSpec, found: Optional[Graph] = None) -> Boosted:
    """The boosted model of ``data`` under ``spec``: :func:`boost_runs.run`
    as ``spec.plan`` says on the graph ``found`` (None: :func:`_graph`'s)."""
    Xj, origin, nbrs, _ = _graph(data, spec) if found is None else found
    k, dtype = spec.k, compute_dtype(data.X)
    Y = to_device(data.Y, dtype)  # cast on the host: nothing compiles per m
    n_classes = Y.shape[1]
    plan, algo, loss_obj, rounds = spec.plan, spec.algorithm, spec.loss, spec.rounds
    scan = "colour schedule" if plan.chooser == "colored" else "windowed scan" if plan.windowed else "scan"
    result, shapes = logged(
        f"fit: {type(algo).__name__} boosting ({loss_obj.name} loss, {plan.chooser} chooser, {scan}), "
        f"{rounds} steps x {n_classes} classes",
        lambda: boost_runs.run(plan, data.Y, nbrs, dtype, algorithm=algo, loss=loss_obj, rounds=rounds, seed=spec.seed,
                               trace=spec.trace, like=spec.like, home=next(iter(Xj.devices())), Y=Y,
                               weights=data.weights, sized_k=spec.search_k or None))
    # examples that are nobody's neighbour (n_j = 0) were never leveraged: they take
    # their class's mean leverage, so that no query's score ignores its neighbours
    alpha = unreached_leverage(result.alpha, data.Y, nbrs, data.weights)
    model = Model(alpha, Xj, Y, result.trace, data.classes, k, loss_obj, algo, data.multilabel, rounds=rounds,
                  origin=origin, search_k=spec.search_k)
    return Boosted(model, shapes)


def _given_passes(rounds, m: int) -> int:
    """Passes that ``rounds`` given beside an ``"auto"`` setting are scored
    as: rounds/m rounded, at least one (one when rounds is None)."""
    return 1 if rounds is None else max(1, round(rounds / m))


def _auto(value):
    return "auto" if isinstance(value, str) and value == "auto" else None


#: at most this many held-out points are scored by posterior="auto" (a seeded
#: random subset of the 20 %).  The standard error of a mean log loss over 10⁴
#: points is ~0.01 of its spread, while scoring costs an exact neighbour query
#: of every scored point against the 80 % (for all the held-out points of a
#: large set, a cost of the order of the whole fit)
MAX_SCORED = 10_000

class PosteriorChoice(NamedTuple):
    """What :func:`_choose_posterior` fits on held-out data."""

    temperature: float  #: T > 0 of the calibrated posteriors
    shrinkage: float  #: s of the leverages toward ``common``
    common: float  #: ā
    weight: float = 0.0  #: w of the kernel term
    bandwidth: float = 0.0  #: b of its weights


def _choose_posterior(score_fold: Callable, args, data: FitData, spec: FitSpec, *, kernel: bool, in_sample: Callable,
                      holdout=0.2) -> PosteriorChoice:
    """(T, s, ā, w, b): the temperature T > 0 of ``posterior="auto"``'s calibrated
    posteriors (:func:`jaxnn._src.calibration.calibrated_posterior`) and the
    shrinkage s of the leverages toward ā
    (:func:`jaxnn._src.leverage.shrunk_leverage`), the pair of least held-out
    log loss (:func:`jaxnn._src.calibration.fit_shrinkage`) — s = 0 unless
    ``spec.shrink`` — then, with ``kernel`` (single-label models of three or
    more classes), the weight w ≥ 0 and bandwidth b of the kernel term and T
    again (:func:`jaxnn._src.calibration.fit_kernel_term`; w = 0 where it
    does not lower the held-out log loss).

    The held-out scores come from ``score_fold((train, held_out), args)``,
    the :class:`HeldOutScores` at the points ``held_out`` of a rule fit on
    the points ``train`` (:func:`_fold_scores`: an auxiliary model with
    the main fit's settings, its graph and the scored points' neighbours
    derived from the full search's candidate lists — nndescent's, or an
    exact search's of at least :data:`EXACT_LISTS`·k neighbours a point
    (small data) —, else by an exact search where the full graph is exact,
    else from the full graph (two hops), rounds scaled with the sample) — honest
    out-of-sample scores, as the main model's will be at new points — for
    a seeded random 20 % held out (at most :data:`MAX_SCORED` of them,
    drawn at random).  On small data (fewer than :data:`MIN_SCORED`
    points in that 20 %) up to :data:`MAX_FOLDS` such fits each score
    another 20 % (:func:`held_out_folds`), and (T, s) are fit on all their
    scores.
    Where the data cannot be split so — fewer than 10 held-out points, k + 1
    or fewer points left in the 80 %, or a class (a label's positives or
    negatives) missing from the 80 % (of every fold) — T is fit instead on
    ``in_sample()``, the main model's scores at its own training points
    (each point's k nearest others: in-sample α, so T errs confident), with
    a log line saying why, and s = w = 0 (in-sample scores cannot tell
    boosting's leverages from a shrunk rule's).  With sample weights
    (``data.weights``) the auxiliary fits are weighted and (T, s) minimise
    the weighted log loss.
    """
    m, y, k, weights, multilabel = data.X.shape[0], data.y, spec.k, data.weights, data.multilabel
    n_val = int(round(holdout * m))

    def on_training_scores(reason: str) -> tuple:
        logger.info("fit: held-out choice: none (T fit on the training points' own scores, s = w = 0): %s", reason)
        H = in_sample().H
        T = fit_temperature(H, targets(y, np.arange(m), data.classes, multilabel), multilabel, weights)
        logger.info("fit: held-out choice: temperature %.4g", T)
        return PosteriorChoice(T, 0.0, 0.0)

    if n_val < 10:
        return on_training_scores(f"{m} points leave {n_val} < 10 to hold out")
    y_arr = label_rows(y)
    scored, reasons = [], []
    for tr, val in held_out_folds(m, n_val, spec.seed):
        reason = _unfit_reason(y_arr, weights, tr, val, k)
        if reason is None:
            scored.append((score_fold((tr, val), args), val))
        reasons.append(reason)
    if not scored:
        return on_training_scores(reasons[0])
    if len(scored) < len(reasons):
        logger.info("fit: held-out choice: %d of %d folds left out: %s", len(reasons) - len(scored), len(reasons),
                    next(r for r in reasons if r is not None))
    val = np.concatenate([v for _, v in scored])
    held = HeldOutScores(*(np.concatenate(parts) for parts in zip(*(sc for sc, _ in scored))))
    target = targets(y_arr, val, data.classes, multilabel)
    val_weights = None if weights is None else weights[val]
    shrink = spec.shrink
    T, s, common = fit_shrinkage(held.H, held.V, k, target, multilabel, val_weights, SHRINKAGES if shrink else (0.0,))
    S = shrunk_scores(held.H, held.V, s, common)
    w = b = 0.0
    G = top = None
    if kernel:
        top = np.asarray(tie_broken_argmax(S, held.V, held.first, k))
        T, w, b = fit_kernel_term(S, top, held.D, held.neighbour_labels, target, val_weights)
        G = w * kernel_log_votes(held.D, held.neighbour_labels, b) if w > 0 else None
    log_p, _ = calibrated_log_probs(S, T, multilabel, G, top)
    logloss, brier = posterior_scores(np.exp(log_p), target, multilabel, val_weights)
    logger.info("fit: held-out choice: temperature %.4g%s%s, held-out log loss %.4f, Brier score %.4f", T,
                f", leverage shrinkage {s:.1f}" if shrink else "",
                f", kernel weight {w:g} at bandwidth {b:g}" if w > 0 else "", logloss, brier)
    return PosteriorChoice(T, s, common, w, b)


#: the held-out choice of T and s scores at least this many points where the
#: data have them: below, it cross-fits (:func:`held_out_folds`)
MIN_SCORED = 200
#: the most folds :func:`held_out_folds` cross-fits (disjoint held-out parts)
MAX_FOLDS = 5


def held_out_folds(m: int, n_val: int, seed: int) -> list:
    """[(train, held_out)] host index arrays of the auxiliary fits that choose
    T and s (:func:`_choose_posterior`) on m points: a seeded random permutation's first n_val
    points held out, the rest the auxiliary fit's; where n_val <
    :data:`MIN_SCORED`, each of its next parts of n_val too (the last one
    what is left, if fewer), up to :data:`MAX_FOLDS` parts or MIN_SCORED
    scored points — on small data every point is scored once, by a fit that
    did not see it (cross-fitting), so that T and s are chosen on more than
    a handful of points.  A held-out part keeps at most :data:`MAX_SCORED` points (the
    permutation is random: its first points are a random subset)."""
    perm = np.random.default_rng(seed).permutation(m)
    n_folds = min(MAX_FOLDS, -(-MIN_SCORED // n_val), -(-m // n_val))
    folds = []
    for f in range(n_folds):
        lo, hi = f * n_val, min(m, (f + 1) * n_val)
        folds.append((np.concatenate((perm[:lo], perm[hi:])), perm[lo:hi][:MAX_SCORED]))
    return folds


def _unfit_reason(y_arr, weights, tr, val, k: int) -> Optional[str]:
    """Why labels ``y_arr`` (and sample ``weights``) cannot be split into an
    auxiliary k-NN fit on ``tr`` scored on ``val``, or None where they can."""
    if tr.size <= k + 1:
        return f"the auxiliary fit's {tr.size} points are too few for k={k}"
    if y_arr.ndim == 1:
        if np.unique(y_arr[tr]).size != np.unique(y_arr).size:
            return "a class has no example in the auxiliary fit's 80 %"
    elif np.any(np.all((y_arr[tr] > 0) == (y_arr[tr[:1]] > 0), axis=0)):
        return "a label has no positive (or no negative) example in the auxiliary fit's 80 %"
    if weights is not None and not (weights[tr].sum() > 0 and weights[val].sum() > 0):
        return "the auxiliary fit's 80 % or the held-out 20 % has no positive sample weight"
    return None


def _fold_scores(fold: tuple, args: FoldArgs) -> HeldOutScores:
    """:func:`_choose_posterior`'s ``score_fold``: the held-out scores
    (:func:`held_out_scores`) at the points ``val`` of an auxiliary fit on
    the points ``tr`` (``fold = (tr, val)``, host index arrays), ``args``
    a :class:`FoldArgs`.  The auxiliary graph and the scored points'
    neighbours among ``tr`` are derived from ``args.graph``
    (:func:`graph.subgraph_and_rows`: the kept points of each row's candidate list
    where the search kept one, ``args.candidates`` — an exact search's give
    the exact neighbours —, else two hops through
    the full graph) or found by
    one exact search (:func:`graph.graph_and_query`: one compilation, not
    two); the
    auxiliary fit is ``spec._replace(...)`` with rounds scaled to the
    sample, on the sample weights of ``tr`` scaled to mean 1."""
    tr, val = fold
    data, spec, graph, candidates, kernel, _ = args
    X, k = data.X, spec.k
    m = X.shape[0]
    scored = "" if val.size == m - tr.size else f"{val.size} of "
    logger.info("fit: held-out choice: auxiliary fit on %d points, scored on %sthe other %d", tr.size, scored,
                m - tr.size)
    if graph is not None:  # the 80 %'s graph and the scored points' neighbours among them, from the full graph's
        exact = spec.graph_method == "exact"  # candidate lists, where there are any, of an exact search (_graph)
        how = ("two hops" if candidates is None else
               f"its {candidates.shape[1]} {'nearest' if exact else 'candidates'} a point")
        aux_graph, val_neighbors = logged(
            f"fit: held-out choice: {k}-NN graph of the {tr.size} points and of the {val.size} scored among them "
            f"from the full graph ({how})",
            lambda: subgraph_and_rows(X, graph, tr, val, candidates=candidates, exact_lists=exact))
        like = args.like()
    else:  # an exact full graph: the 80 %'s graph and the scored points' neighbours by one search and program
        like = args.like()
        aux_graph, val_neighbors = logged(
            f"fit: held-out choice: exact {k}-NN graph of the {tr.size} points and of the {val.size} scored among them",
            lambda: graph_and_query(*points_of_parts(X, compute_dtype(X), tr, val), spec.searched_k,
                                    devices=spec.plan.devices, rows=None if like is None else like.rows,
                                    cut_queries=False))
        aux_graph = aux_graph[:, :k]  # the first k of the neighbours found are the k-NN
    y_tr = label_rows(data.y)[tr]
    weights = None if data.weights is None else _mean_one(data.weights[tr])
    aux_data = FitData(X[tr], y_tr, *encode_labels(y_tr, tr.size), weights, aux_graph)
    rounds = max(1, int(round(spec.rounds * tr.size / m)))
    aux_plan = make_plan(tr.size, aux_data.Y.shape[1], rounds, devices=spec.plan.devices, like=spec.plan,
                         weighted=weights is not None)
    aux = _boosted(aux_data, spec._replace(plan=aux_plan, rounds=rounds, like=like)).model
    return held_out_scores(aux, X[val], found=val_neighbors, rows=None if like is None else like.rows, kernel=kernel)


def _mean_one(weights):
    """Weights scaled to mean 1 (the ones of a subset, as a fit on it reads them)."""
    return weights * (weights.size / weights.sum()) if weights.sum() > 0 else np.ones_like(weights)
