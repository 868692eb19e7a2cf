"""Long runs go on from the edges a segment of whole passes at a time
(``boost_runs.SEGMENT_STEPS``): the same α as one run, and memory that does not
grow with ``rounds``."""

import numpy as np
import pytest

import jaxnn
from jaxnn._src import boost_runs, plan, shared_sizes


def _data(m=90, C=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, m)
    X = rng.normal(size=(m, 4)) + 1.5 * np.eye(C, 4)[y]
    return X.astype(np.float32), y


CASES = [
    ("lazy", "gnnb", False, False),
    ("random", "gnnb", False, False),
    ("greedy", "gnnb", False, False),
    ("colored", "gnnb", False, False),
    ("lazy", "unn", True, False),
    ("random", "n3", False, True),
    ("greedy", "n3", True, False),
    ("colored", "unn", True, False),
]


@pytest.mark.parametrize("chooser, algorithm, shared, windowed", CASES)
@pytest.mark.slow
def test_segments_give_the_one_run_result(monkeypatch, chooser, algorithm, shared, windowed):
    """α of 5 passes in segments of 2 passes (2 + 2 + 1) equals α of one run
    (float32 rounding of the summed segments aside), and the trace has one
    value a step (a scan step of the colored schedule), continuing across
    segments."""
    X, y = _data()
    m = X.shape[0]
    if not shared:
        monkeypatch.setattr(shared_sizes, "SHARED_MAX_ROWS", 0)
    if windowed:
        monkeypatch.setattr(plan, "WINDOWED_MIN_STATE", 0)
    kwargs = dict(k=5, chooser=chooser, algorithm=algorithm, rounds=5 * m, posterior="link", shrinkage=None,
                  trace=True, seed=3)
    whole = jaxnn.fit(X, y, **kwargs)
    monkeypatch.setattr(boost_runs, "SEGMENT_STEPS", 2 * m)
    parts = jaxnn.fit(X, y, **kwargs)
    np.testing.assert_allclose(np.asarray(parts.alpha), np.asarray(whole.alpha), rtol=1e-5, atol=1e-5)
    assert parts.trace.shape == whole.trace.shape
    assert chooser == "colored" or whole.trace.shape == (5 * m,)
    np.testing.assert_allclose(np.asarray(parts.trace), np.asarray(whole.trace), rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(jaxnn.predict(parts, X), jaxnn.predict(whole, X))


def test_a_partial_last_pass_runs_in_its_own_segment(monkeypatch):
    X, y = _data()
    m = X.shape[0]
    kwargs = dict(k=5, chooser="random", rounds=3 * m + 17, posterior="link", seed=1)
    whole = jaxnn.fit(X, y, **kwargs)
    monkeypatch.setattr(boost_runs, "SEGMENT_STEPS", m)
    parts = jaxnn.fit(X, y, **kwargs)
    np.testing.assert_allclose(np.asarray(parts.alpha), np.asarray(whole.alpha), rtol=1e-5, atol=1e-5)


def test_segment_orders_are_the_one_run_order():
    for chooser in ("lazy", "random", "greedy"):
        whole = plan.chooser_order(chooser, 7, 45, 2)
        parts = np.concatenate([o for _, o in plan.chooser_orders(chooser, 7, 45, 2, 14)])
        np.testing.assert_array_equal(parts, whole)
    assert [s for s, o in plan.chooser_orders("colored", 7, 35, 2, 14)] == [14, 14, 7]


@pytest.mark.slow
def test_many_rounds_do_not_allocate_an_order_of_rounds(monkeypatch):
    """rounds = 10⁹ on 80 points ran out of memory building a (10⁹,) order;
    in segments every order is at most one segment long (segments of five
    passes here, so that two run before the third is stopped)."""
    X, y = _data(m=80)
    assert boost_runs.segment_rounds(80) < 10**7
    monkeypatch.setattr(boost_runs, "SEGMENT_STEPS", 5 * 80)
    seen = []
    real = plan.chooser_orders

    def watched(chooser, m, rounds, seed, segment):
        for steps, order in real(chooser, m, rounds, seed, segment):
            seen.append(steps)
            if len(seen) == 3:
                raise KeyboardInterrupt  # stop the long run after three segments
            yield steps, order

    monkeypatch.setattr(boost_runs, "chooser_orders", watched)
    with pytest.raises(KeyboardInterrupt):
        jaxnn.fit(X, y, k=3, rounds=10**9, posterior="link")
    assert len(seen) == 3 and max(seen) <= boost_runs.segment_rounds(80) == 5 * 80


def test_fit_split_refuses_more_rounds_than_one_run_holds(monkeypatch):
    X, y = _data()
    monkeypatch.setattr(boost_runs, "SEGMENT_STEPS", 2 * X.shape[0])
    with pytest.raises(ValueError, match="rounds=270"):
        jaxnn.ensemble.fit_split(X, y, n_splits=2, k=5, rounds=3 * X.shape[0])
    jaxnn.ensemble.fit_split(X, y, n_splits=2, k=5, rounds=2 * X.shape[0])  # one segment: runs
