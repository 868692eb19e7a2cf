"""Two engines vs the independent float64 reference (``tests/reference.py``).

1. The colored schedule (``chooser="colored"``) runs each pass as one
   vectorised step per colour of a colouring of the conflict graph; it must
   equal the *sequential* algorithm run in the schedule's colour order.  The
   reference is run sequentially, one example at a time, in that order
   (``passes`` times) and compared with ``jaxnn.fit(..., chooser="colored")``:
   α, and the trace — the total risk after each scan step, which is the
   reference's risk after the last example of that step.

2. ``jaxnn.ensemble.fit_split(..., chooser="greedy")`` (paper 000 §6.4)
   learns one greedy leveraged k-NN per block of features.  Each block's α
   (every block, not only the first) is compared with the reference's greedy
   run on that block's own neighbour graph, built here independently
   (``reference.normalised_blocks`` + ``reference.knn_bruteforce``).  Exactly
   tied greedy scores are broken by the engine's rounding (see
   ``jaxnn._src.boosting``), so the reference replays the engine's picks and
   checks that each one is an argmax of its own score |η_j|/n_j on that
   graph (``pick_gaps``), as ``test_reference.py``'s greedy test does.
   ``fit_split(..., chooser="colored")`` is checked alike: every block against
   the reference run sequentially in that block's own colour order.

Tolerances follow ``test_reference.py``: float64 (x64) α rtol 1e-5, atol
1e-8·max|α| (the observed error is ~1e-15), trace rtol 1e-7, atol 1e-10;
float32 α rtol 1e-4, atol 1e-4·max|α|; greedy picks within 1e-9 of the best
score (relative).

The engine's internals are touched in one place only, the two helpers under
"Engine hooks" below: the colour order of the schedule
(``jaxnn._src.schedule``) and a spy recording the greedy picks
(``jaxnn._src.maxtree.argmax``).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import reference as R  # noqa: E402

# --------------------------------------------------------------------------
# Engine hooks: the only places that import jaxnn._src
# --------------------------------------------------------------------------


def engine_colored_schedule(NN, n_classes):
    """(order, colours, step_sizes) of the colored schedule jaxnn builds for
    the (m, k) graph NN: ``order`` (m,) the sequence of examples a pass
    visits, ``colours`` (m,) each example's colour in run order (colour 0
    first), ``step_sizes`` the number of examples of each scan step of a
    pass (a step is a colour or a part of one)."""
    from jaxnn._src.schedule import color_schedule, colored_order

    schedule = color_schedule(np.asarray(NN), n_classes=n_classes)
    m = np.asarray(NN).shape[0]
    examples = np.asarray(schedule.examples)
    step_sizes = np.sum(examples < m, axis=1)
    return np.asarray(colored_order(schedule), np.int64), np.asarray(schedule.colors), step_sizes[step_sizes > 0]


# --------------------------------------------------------------------------
# Data and reference runs
# --------------------------------------------------------------------------

M = 240  # one m for every colored case: the engine compiles per shape
D = 3

# (k, C, multilabel)
CASE_K6_C3 = (6, 3, False)
CASE_K8_C4 = (8, 4, False)
CASE_K6_ML3 = (6, 3, True)


@functools.lru_cache(maxsize=None)
def dataset(k, C, multilabel):
    """Overlapping Gaussian blobs (both signs of r occur) and their exact kNN graph."""
    rng = np.random.default_rng(7000 + 100 * k + 10 * C + int(multilabel))
    X = rng.normal(size=(M, D))
    if multilabel:
        logits = X @ rng.normal(size=(D, C)) + 0.8 * rng.normal(size=(M, C))
        y = (logits > 0).astype(np.int64)
    else:
        y = rng.integers(0, C, size=M)
        angles = 2 * np.pi * np.arange(C) / C
        X[:, 0] += 1.2 * np.cos(angles)[y]
        X[:, 1] += 1.2 * np.sin(angles)[y]
    assert R.knn_margin(X, k) > 1e-9  # an unambiguous graph
    NN = R.knn_bruteforce(X, k)
    Y, _ = R.encode_labels(y)
    return X, y, Y, NN


def run_reference(algorithm, Y, NN, loss, order, epsilon=0.5):
    """The reference algorithm, sequentially in ``order`` ((T,) for every
    class, or (C, T) per class: a replay), its α as ``fit`` documents
    ``model.alpha`` (the examples no step reached take their class-sign
    leverage: :func:`reference.fill_unreached`)."""
    if algorithm == "gnnb":
        ref = R.gnnb(Y, NN, loss, epsilon, order=order)
    elif algorithm == "unn":
        ref = R.unn(Y, NN, loss, order=order)
    elif algorithm == "unn_fast":
        ref = R.unn_fast(Y, NN, loss, order=order)
    elif algorithm == "n3":
        ref = R.n3(Y, NN, loss, order=order)
    else:
        raise ValueError(algorithm)
    return dataclasses.replace(ref, alpha=R.fill_unreached(ref.alpha, Y, NN))


def tolerances(alpha_ref, x64):
    scale = float(np.abs(alpha_ref).max())
    assert scale > 0
    return (1e-5, 1e-8 * scale) if x64 else (1e-4, 1e-4 * scale)


def assert_alpha_matches(alpha, ref_alpha, x64, order, what):
    """α (m, C) against the reference's; on failure, name the diverging entry
    (j, c) whose example the reference's sequence ``order`` ((T,) for every
    class or (C, T) per class) visits first."""
    rtol, atol = tolerances(ref_alpha, x64)
    assert alpha.shape == ref_alpha.shape
    bad = np.abs(alpha - ref_alpha) > atol + rtol * np.abs(ref_alpha)
    if bad.any():
        m, C = alpha.shape
        seq = np.broadcast_to(np.asarray(order), (C, np.shape(order)[-1]))
        first = np.full((m, C), seq.shape[1])  # the step at which each (j, c) is first visited
        for c in range(C):
            col = first[:, c].copy()
            np.minimum.at(col, seq[c], np.arange(seq.shape[1]))
            first[:, c] = col
        j, c = min(zip(*np.nonzero(bad)), key=lambda jc: first[jc])
        pytest.fail(f"{what}: first diverging example j={j}, class {c} (first visited at step {first[j, c]}): "
                    f"engine {float(alpha[j, c])!r} vs reference {float(ref_alpha[j, c])!r} ({int(bad.sum())} entries "
                    f"off, max |diff| {np.abs(alpha - ref_alpha).max():.3g}, max |alpha| {np.abs(ref_alpha).max():.3g})")


# --------------------------------------------------------------------------
# 1. The colored schedule vs the reference in colour order
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def colored_reference(algorithm, loss, case, passes, epsilon=0.5):
    _, _, Y, NN = dataset(*case)
    order, colours, steps = engine_colored_schedule(NN, Y.shape[1])
    return run_reference(algorithm, Y, NN, loss, np.tile(order, passes), epsilon), order, colours, steps


def fit_colored(algorithm, loss, case, passes, epsilon=0.5, x64=True):
    import jax

    import jaxnn

    X, y, _, NN = dataset(*case)
    with jax.enable_x64(x64):
        model = jaxnn.fit(X.astype(np.float64 if x64 else np.float32), y, k=case[0], loss=loss, algorithm=algorithm,
                          chooser="colored", rounds=passes * M, epsilon=epsilon, neighbors=NN, posterior="link", shrinkage=None,
                          trace=True)
        return model, np.asarray(model.alpha), np.asarray(model.trace)


COLORED_GRID = [  # (algorithm, loss, case, passes, epsilon): every algorithm, two losses each, C = 3, 4, multilabel
    ("gnnb", "logistic", CASE_K6_C3, 3, 0.5),
    ("gnnb", "matsushita", CASE_K8_C4, 2, 0.2),
    ("unn", "exponential", CASE_K6_C3, 3, 0.5),
    ("unn", "logistic", CASE_K8_C4, 2, 0.5),
    ("n3", "calibrated_hinge", CASE_K8_C4, 2, 0.5),
    ("n3", "logistic", CASE_K6_ML3, 2, 0.5),
    ("unn_fast", "squared", CASE_K6_ML3, 2, 0.5),
]


@pytest.mark.parametrize("algorithm, loss, case, passes, epsilon", COLORED_GRID,
                         ids=[f"{a}-{l}-k{c[0]}-C{c[1]}{'-ml' if c[2] else ''}-{p}passes" for a, l, c, p, _ in COLORED_GRID])
@pytest.mark.slow
def test_colored_schedule_matches_reference_in_colour_order(algorithm, loss, case, passes, epsilon):
    ref, order, colours, steps = colored_reference(algorithm, loss, case, passes, epsilon)
    _, _, Y, NN = dataset(*case)
    # the order is one pass over every example, grouped by colour, each colour conflict-free
    np.testing.assert_array_equal(np.sort(order), np.arange(M))
    assert np.all(np.diff(colours[order]) >= 0)
    assert R.colour_conflicts(NN, colours) == 0
    assert 1 < colours.max() + 1 < M // 5  # vectorised: a few dozen steps, not m
    assert steps.sum() == M
    model, alpha, trace = fit_colored(algorithm, loss, case, passes, epsilon)
    assert alpha.dtype == np.float64
    assert_alpha_matches(alpha, ref.alpha, True, order, f"colored {algorithm}/{loss}")
    np.testing.assert_allclose(alpha, ref.alpha, rtol=1e-5, atol=1e-8 * np.abs(ref.alpha).max())
    np.testing.assert_array_equal(np.asarray(model.Y), ref.Y)
    # trace: the total risk after each scan step = the reference's after that step's last example
    ends = np.cumsum(np.tile(steps, passes)) - 1
    assert trace.shape == ends.shape
    np.testing.assert_allclose(trace, ref.parallel_risk[ends], rtol=1e-7, atol=1e-10)


def test_colored_schedule_float32_matches_reference():
    ref, order, _, _ = colored_reference("gnnb", "logistic", CASE_K6_C3, 3)
    _, alpha, _ = fit_colored("gnnb", "logistic", CASE_K6_C3, 3, x64=False)
    assert alpha.dtype == np.float32
    assert_alpha_matches(alpha, ref.alpha, False, order, "colored gnnb/logistic, float32")


def test_colour_order_matters_and_only_up_to_colours():
    """The comparison discriminates: the reference in the reversed colour
    order (or in index order) is far from the engine, while shuffling the
    examples *within* each colour changes nothing (a colour's steps touch
    disjoint edges) — so it is the colouring that the engine is checked
    against, not an accident of one sequence."""
    ref, order, colours, _ = colored_reference("unn", "exponential", CASE_K6_C3, 3)
    _, _, Y, NN = dataset(*CASE_K6_C3)
    _, alpha, _ = fit_colored("unn", "exponential", CASE_K6_C3, 3)
    scale = np.abs(ref.alpha).max()
    for other in (order[::-1], np.arange(M)):
        wrong = run_reference("unn", Y, NN, "exponential", np.tile(other, 3))
        assert np.abs(alpha - wrong.alpha).max() > 1e-2 * scale
    shuffled = R.order_by_colour(colours, np.random.default_rng(3))
    assert not np.array_equal(shuffled, order)
    same = run_reference("unn", Y, NN, "exponential", np.tile(shuffled, 3))
    np.testing.assert_allclose(same.alpha, ref.alpha, rtol=1e-12, atol=1e-14 * scale)
    np.testing.assert_allclose(alpha, same.alpha, rtol=1e-5, atol=1e-8 * scale)


# --------------------------------------------------------------------------
# 2. fit_split with the greedy chooser: every block vs the reference
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def wine():
    """The shipped wine set (178 × 13, 3 classes), z-scored."""
    import jaxnn

    X, y = jaxnn.datasets.load("wine")
    return (X - X.mean(axis=0)) / X.std(axis=0), y


SPLIT_GRID = [  # (algorithm, loss, split, norm, k, rounds): contiguous and explicit (overlapping) blocks
    ("gnnb", "logistic", 3, "l2", 6, 150),
    ("n3", "calibrated_hinge", [[0, 5, 9, 12], [1, 3, 11], [4, 6, 7, 8, 10], [2, 9, 10, 12]], "l1", 5, 200),
    ("unn", "exponential", 2, "l2", 7, 120),
]


@pytest.mark.parametrize("algorithm, loss, split, norm, k, rounds", SPLIT_GRID,
                         ids=[f"{a}-{l}-{'explicit' if isinstance(s, list) else s}-blocks" for a, l, s, *_ in SPLIT_GRID])
@pytest.mark.slow
def test_fit_split_greedy_blocks_match_reference(greedy_picks, algorithm, loss, split, norm, k, rounds):
    import jax

    import jaxnn

    X, y = wine()
    m, d = X.shape
    Y, _ = R.encode_labels(y)
    C = Y.shape[1]
    blocks = [list(b) for b in np.array_split(np.arange(d), split)] if isinstance(split, int) else split
    kwargs = dict(n_splits=split) if isinstance(split, int) else dict(blocks=split)
    with jax.enable_x64(True):
        sm = jaxnn.ensemble.fit_split(X, y, norm=norm, k=k, loss=loss, algorithm=algorithm, chooser="greedy",
                                      rounds=rounds, trace=True, **kwargs)
        alpha, trace = np.asarray(sm.alpha), np.asarray(sm.trace)
        block_X = [np.asarray(model.X) for model in sm.models]
    n = len(blocks)
    assert [list(b) for b in sm.blocks] == blocks
    assert alpha.shape == (n, m, C) and alpha.dtype == np.float64 and trace.shape == (n, rounds)
    # the blocks' greedy runs go one after another; each records its (padded) steps' picks
    picks = np.stack(greedy_picks)
    assert picks.shape[0] % n == 0 and picks.shape[1] == C
    picks = picks.reshape(n, -1, C)[:, :rounds].transpose(0, 2, 1)  # (n, C, rounds): padded steps are no-ops
    assert picks.shape[2] == rounds
    for b, Xb in enumerate(R.normalised_blocks(X, blocks, norm)):
        np.testing.assert_allclose(block_X[b], Xb, rtol=1e-12, atol=1e-15)
        assert R.knn_margin(Xb, k) > 1e-9  # the block's graph is unambiguous
        NN = R.knn_bruteforce(Xb, k)  # the block's own graph, built here
        ref = run_reference(algorithm, Y, NN, loss, picks[b])
        # each pick is the reference greedy's argmax of |η_j|/n_j on this block's graph
        assert np.max(ref.pick_gaps) <= 1e-9, f"block {b}: a pick {np.max(ref.pick_gaps):.3g} below the best score"
        assert len(np.unique(picks[b])) > rounds // 4  # the run moves around
        assert_alpha_matches(alpha[b], ref.alpha, True, picks[b], f"fit_split greedy {algorithm}/{loss}, block {b}")
        np.testing.assert_allclose(trace[b], ref.parallel_risk, rtol=1e-7, atol=1e-10)
    # the blocks' runs differ (else one block checked would be all blocks checked)
    assert all(np.abs(alpha[b] - alpha[0]).max() > 1e-3 for b in range(1, n))


@pytest.mark.slow
def test_fit_split_colored_blocks_match_reference_in_their_colour_orders():
    """The colored chooser in fit_split: each block runs its own colouring
    of its own graph (all blocks in one vmapped scan, padded to a common
    step count); every block's α is the reference run sequentially in that
    block's colour order, and its trace the reference's risk after each of
    its steps, then flat over the padding steps."""
    import jax

    import jaxnn

    X, y = wine()
    m, d = X.shape
    Y, _ = R.encode_labels(y)
    C, k, passes = Y.shape[1], 6, 2
    blocks = [list(b) for b in np.array_split(np.arange(d), 3)]
    with jax.enable_x64(True):
        sm = jaxnn.ensemble.fit_split(X, y, n_splits=3, k=k, loss="logistic", algorithm="gnnb", chooser="colored",
                                      rounds=passes * m, trace=True)
        alpha, trace = np.asarray(sm.alpha), np.asarray(sm.trace)
    n = len(blocks)
    schedules = []
    for Xb in R.normalised_blocks(X, blocks, "l2"):
        assert R.knn_margin(Xb, k) > 1e-9
        NN = R.knn_bruteforce(Xb, k)
        schedules.append((NN,) + engine_colored_schedule(NN, C * n))  # fit_split sizes its steps for C·n
    width = max(len(steps) for *_, steps in schedules)
    assert trace.shape == (n, passes * width)
    assert len({len(steps) for *_, steps in schedules}) > 1  # the padding steps are exercised
    for b, (NN, order, colours, steps) in enumerate(schedules):
        assert R.colour_conflicts(NN, colours) == 0
        ref = run_reference("gnnb", Y, NN, "logistic", np.tile(order, passes))
        assert_alpha_matches(alpha[b], ref.alpha, True, order, f"fit_split colored, block {b}")
        ends = np.cumsum(np.concatenate([steps, np.zeros(width - len(steps), int)] * passes)) - 1
        np.testing.assert_allclose(trace[b], ref.parallel_risk[ends], rtol=1e-7, atol=1e-10)
