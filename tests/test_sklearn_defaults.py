"""BoostedKNNClassifier() at its defaults: every scikit-learn estimator check
passes (the checks fit 10 points, and k defaulted to 10), and the default k
adapts to small training sets while a k given is used as given."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from jaxnn.sklearn import EXPECTED_FAILED_CHECKS, BoostedKNNClassifier  # noqa: E402


@pytest.mark.slow  # ~60 checks, some refitting a dozen times: tens of seconds in all
@parametrize_with_checks([BoostedKNNClassifier()], expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS)
def test_default_estimator_passes_every_check(estimator, check, every_sklearn_check):
    check(estimator)


def _data(m: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 2))
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("m, k", [(2, 1), (5, 4), (10, 9), (11, 10), (40, 10)])
def test_the_default_k_is_10_or_one_less_than_the_training_points(m, k):
    X, y = _data(m)
    y[:2] = [0, 1]  # two classes however small
    est = BoostedKNNClassifier()
    assert est.k is None and est.get_params()["k"] is None  # scikit-learn's convention: the parameter as given
    est.fit(X, y)
    assert est.k_ == est.model_.k == k
    assert est.predict(X).shape == (m,)


def test_a_k_given_is_used_as_given_or_refused():
    X, y = _data(40)
    assert BoostedKNNClassifier(k=7).fit(X, y).k_ == 7
    with pytest.raises(ValueError, match="k must be < the number of training points"):
        BoostedKNNClassifier(k=10).fit(X[:10], y[:10])
    assert not hasattr(BoostedKNNClassifier(), "k_")  # unfitted: NotFittedError is an AttributeError


def test_k_auto_reports_the_chosen_k():
    X, y = _data(120)
    est = BoostedKNNClassifier(k="auto").fit(X, y)
    assert est.k_ in (5, 10, 20, 50) and est.k_ == est.model_.k
