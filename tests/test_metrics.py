"""Tests for jaxnn.metrics: hand-computed cases and scikit-learn agreement."""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest
from sklearn import metrics as skm

from jaxnn import metrics as M


def _random_labels(rng, n, C, missing_true=(), missing_pred=()):
    classes = np.arange(C)
    t = rng.choice(np.setdiff1d(classes, missing_true), size=n)
    p = rng.choice(np.setdiff1d(classes, missing_pred), size=n)
    return t, p


def _random_proba(rng, n, C):
    logits = rng.normal(size=(n, C)) * 2
    e = np.exp(logits - logits.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


# --------------------------------------------------------------------------
# accuracy / top-k
# --------------------------------------------------------------------------
def test_accuracy_hand_and_sklearn():
    assert M.accuracy([0, 1, 2, 2], [0, 2, 2, 1]) == 0.5
    assert M.accuracy(["a", "b"], ["a", "b"]) == 1.0
    assert isinstance(M.accuracy([1], [1]), float)
    rng = np.random.default_rng(0)
    for _ in range(5):
        t, p = _random_labels(rng, 200, 4)
        assert M.accuracy(t, p) == pytest.approx(skm.accuracy_score(t, p), abs=1e-15)


def test_accuracy_invalid():
    with pytest.raises(ValueError, match="y_pred"):
        M.accuracy([0, 1, 2], [0, 1])
    with pytest.raises(ValueError, match="y_true"):
        M.accuracy(np.zeros((2, 2)), [0, 1])
    with pytest.raises(ValueError, match="y_pred"):
        M.accuracy([0, 1], np.zeros((2, 1)))
    with pytest.raises(ValueError, match="empty"):
        M.accuracy([], [])
    with pytest.raises(TypeError, match="mix string and numeric"):
        M.accuracy([0, 1], ["0", "1"])


_NAN = float("nan")


@pytest.mark.parametrize(
    "fn, y_true, y_pred, exc, match",
    [
        (M.accuracy, [_NAN, 1.0], [_NAN, 1.0], ValueError, "y_true contains NaN"),
        (M.accuracy, [0.0, 1.0], [0.0, _NAN], ValueError, "y_pred contains NaN"),
        (M.f_measure, [_NAN, 1.0], [_NAN, 1.0], ValueError, "y_true contains NaN"),
        (M.recall, [_NAN, 1.0], [_NAN, 1.0], ValueError, "y_true contains NaN"),
        (M.accuracy, np.array([_NAN, 1.0], dtype=object), [0, 1], ValueError, "y_true contains NaN"),
        (M.accuracy, [0, "a"], ["0", "a"], TypeError, "labels of y_true must be mutually comparable"),
        (M.f_measure, np.array([0, "a"], dtype=object), [0, 1], TypeError, "labels of y_true must be mutually comparable"),
        (M.recall, [0, 1], np.array([None, 1], dtype=object), TypeError, "labels of y_pred must be mutually comparable"),
        (M.accuracy, [[1, 2], [3]], [1, 2], ValueError, "y_true must be a rectangular array"),
        (M.f_measure, [0, 1], [[0], [1, 2]], ValueError, "y_pred must be a rectangular array"),
    ],
)
def test_label_metrics_bad_labels(fn, y_true, y_pred, exc, match):
    with pytest.raises(exc, match=match):
        fn(y_true, y_pred)


def test_top_k_hand():
    y = [0, 1, 2]
    s = np.array([[0.5, 0.3, 0.2], [0.5, 0.3, 0.2], [0.5, 0.3, 0.2]])
    assert M.top_k_accuracy(y, s, 1) == pytest.approx(1 / 3)
    assert M.top_k_accuracy(y, s, 2) == pytest.approx(2 / 3)
    # string labels, explicit (unsorted) class order
    s2 = np.array([[0.1, 0.9], [0.8, 0.2]])
    assert M.top_k_accuracy(["b", "a"], s2, 1, classes=["a", "b"]) == 1.0
    assert M.top_k_accuracy(["b", "a"], s2, 1, classes=["b", "a"]) == 0.0
    # class absent from y_true: must pass classes
    assert M.top_k_accuracy([0, 0], np.array([[0.9, 0.05, 0.05], [0.1, 0.8, 0.1]]), 1, classes=[0, 1, 2]) == 0.5


def test_top_k_with_k_at_least_the_number_of_classes_warns():
    # k >= C is a perfect score whatever the scores: still 1.0, but a UserWarning as scikit-learn's
    y = [0, 1, 2]
    s = np.array([[0.5, 0.3, 0.2], [0.5, 0.3, 0.2], [0.5, 0.3, 0.2]])
    for k in (3, 10):
        with pytest.warns(UserWarning, match=rf"k \({k}\) greater than or equal to the number of classes \(3\)"
                          r".*perfect score and is therefore meaningless; use k < 3"):
            assert M.top_k_accuracy(y, s, k) == 1.0
    with pytest.warns(UserWarning, match="number of classes \\(3\\)"):  # C counts the columns, not y_true's classes
        assert M.top_k_accuracy([0, 0], np.array([[0.9, 0.05, 0.05], [0.1, 0.8, 0.1]]), 3, classes=[0, 1, 2]) == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert M.top_k_accuracy(y, s, 2) == pytest.approx(2 / 3)  # k < C: no warning


@pytest.mark.parametrize("seed", range(4))
def test_top_k_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    n, C = 300, 6
    y = rng.integers(0, C, size=n)
    scores = rng.normal(size=(n, C))
    tied = rng.integers(0, 3, size=(n, C)).astype(float)  # many ties
    for s in (scores, tied):
        for k in range(1, C):
            assert M.top_k_accuracy(y, s, k) == pytest.approx(
                skm.top_k_accuracy_score(y, s, k=k, labels=np.arange(C)), abs=1e-15
            )


def test_top_k_invalid():
    s = np.ones((3, 3)) / 3
    with pytest.raises(ValueError, match="k must be >= 1"):
        M.top_k_accuracy([0, 1, 2], s, 0)
    with pytest.raises(TypeError, match="k"):
        M.top_k_accuracy([0, 1, 2], s, 1.5)
    with pytest.raises(ValueError, match="scores"):
        M.top_k_accuracy([0, 1], s, 1)
    with pytest.raises(ValueError, match="scores"):
        M.top_k_accuracy([0, 1, 2], s[0], 1)
    with pytest.raises(ValueError, match="classes"):
        M.top_k_accuracy([0, 1, 1], s, 1)  # 2 classes in y_true, 3 columns
    with pytest.raises(ValueError, match="not in classes"):
        M.top_k_accuracy([0, 1, 5], s, 1, classes=[0, 1, 2])
    with pytest.raises(TypeError, match="mix string and numeric"):
        M.top_k_accuracy(["a", "b", "c"], s, 1, classes=[0, 1, 2])
    with pytest.raises(ValueError, match="duplicates"):
        M.top_k_accuracy([0, 1, 1], s, 1, classes=[0, 1, 1])


@pytest.mark.parametrize(
    "y, scores, classes, exc, match",
    [
        ([0, 1, 2], np.eye(3) + 0j, None, TypeError, "scores must be real"),
        ([0, 1, 2], np.full((3, 3), "1"), None, TypeError, "scores must be numeric"),
        ([0, 1, 2], np.eye(3), [0, "a", 2], TypeError, "labels of classes must be mutually comparable"),
        ([0, 1, 2], np.eye(3), np.array([0, "a", 2], dtype=object), TypeError, "labels of classes must be mutually comparable"),
        ([0, 1, 2], np.eye(3), [0.0, _NAN, 2.0], ValueError, "classes contains NaN"),
        ([0, 1, 2], [[1, 0, 0], [0, 1], [0, 0, 1]], None, ValueError, "scores must be a rectangular array"),
    ],
)
def test_top_k_bad_values(y, scores, classes, exc, match):
    with pytest.raises(exc, match=match):
        M.top_k_accuracy(y, scores, 1, classes=classes)


# --------------------------------------------------------------------------
# F-measure / recall
# --------------------------------------------------------------------------
def test_f_measure_recall_hand():
    y_true = [0, 0, 1, 1, 2]
    y_pred = [0, 1, 1, 1, 0]
    # class 0: tp 1, pred 2, true 2 -> P 1/2, R 1/2, F 1/2
    # class 1: tp 2, pred 3, true 2 -> P 2/3, R 1,   F 4/5
    # class 2: tp 0, pred 0, true 1 -> P 0,   R 0,   F 0
    assert M.f_measure(y_true, y_pred) == pytest.approx((0.5 + 0.8 + 0.0) / 3)
    assert M.recall(y_true, y_pred) == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert M.f_measure(y_true, y_pred, average="weighted") == pytest.approx((2 * 0.5 + 2 * 0.8) / 5)
    assert M.recall(y_true, y_pred, average="micro") == pytest.approx(3 / 5)
    assert M.f_measure(y_true, y_pred, average="micro") == pytest.approx(3 / 5)
    # predicted class absent from y_true counts with recall 0 (sklearn semantics)
    assert M.recall([0, 0], [0, 1]) == pytest.approx((0.5 + 0.0) / 2)
    assert M.f_measure(["x", "y"], ["x", "y"]) == 1.0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("average", ["macro", "weighted", "micro"])
def test_f_measure_recall_match_sklearn(seed, average):
    rng = np.random.default_rng(seed)
    C = 5
    cases = [
        _random_labels(rng, 60, C),
        _random_labels(rng, 60, C, missing_pred=(1, 3)),  # classes never predicted
        _random_labels(rng, 60, C, missing_true=(4,)),  # predicted class absent from truth
        _random_labels(rng, 7, C, missing_true=(0,), missing_pred=(2,)),
    ]
    for t, p in cases:
        assert M.f_measure(t, p, average=average) == pytest.approx(
            skm.f1_score(t, p, average=average, zero_division=0), abs=1e-12
        )
        assert M.recall(t, p, average=average) == pytest.approx(
            skm.recall_score(t, p, average=average, zero_division=0), abs=1e-12
        )


def test_f_measure_recall_invalid():
    with pytest.raises(ValueError, match="average"):
        M.f_measure([0, 1], [0, 1], average="binary")
    with pytest.raises(ValueError, match="average"):
        M.recall([0, 1], [0, 1], average=None)
    with pytest.raises(ValueError, match="y_pred"):
        M.recall([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="y_true"):
        M.f_measure(np.zeros((2, 2)), [0, 1])
    with pytest.raises(TypeError, match="mix string and numeric"):
        M.f_measure([0, 1], ["a", "b"])
    with pytest.raises(TypeError, match="mix string and numeric"):
        M.recall(["a", "b"], [0, 1])


# --------------------------------------------------------------------------
# Hamming risk
# --------------------------------------------------------------------------
def test_hamming_risk():
    Yt = np.array([[1, 0, 1], [0, 0, 1]])
    Yp = np.array([[1, 1, 1], [1, 0, 0]])
    assert M.hamming_risk(Yt, Yp) == pytest.approx(3 / 6)
    # {-1, +1} coding, also mixed with {0, 1}
    assert M.hamming_risk(2 * Yt - 1, 2 * Yp - 1) == pytest.approx(0.5)
    assert M.hamming_risk(Yt, 2 * Yp - 1) == pytest.approx(0.5)
    assert M.hamming_risk(Yt, Yt) == 0.0
    rng = np.random.default_rng(0)
    A = rng.integers(0, 2, size=(50, 4))
    B = rng.integers(0, 2, size=(50, 4))
    assert M.hamming_risk(A, B) == pytest.approx(skm.hamming_loss(A, B), abs=1e-15)


def test_hamming_risk_invalid():
    with pytest.raises(ValueError, match="Y_pred"):
        M.hamming_risk(np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="Y_true"):
        M.hamming_risk(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="Y_pred must be coded"):
        M.hamming_risk(np.zeros((2, 2)), np.full((2, 2), 2))
    with pytest.raises(ValueError, match="Y_true must be coded"):
        M.hamming_risk(np.array([[0, -1]]), np.array([[0, 1]]))


@pytest.mark.parametrize(
    "Y_true, Y_pred, exc, match",
    [
        ([["1", "0"]], [[1, 0]], TypeError, "Y_true must be numeric"),
        ([[1, 0]], np.array([[1, "0"]], dtype=object), TypeError, "Y_pred must be numeric"),
        (np.array([[1, 0]]) + 0j, [[1, 0]], TypeError, "Y_true must be real"),
        ([[1, 0]], [[1, 0], [1]], ValueError, "Y_pred must be a rectangular array"),
    ],
)
def test_hamming_risk_bad_values(Y_true, Y_pred, exc, match):
    with pytest.raises(exc, match=match):
        M.hamming_risk(Y_true, Y_pred)
    # bool indicator matrices are fine
    assert M.hamming_risk(np.array([[True, False]]), [[1, 0]]) == 0.0


# --------------------------------------------------------------------------
# KL divergence
# --------------------------------------------------------------------------
def test_kl_divergence_hand():
    p_hat = np.array([[0.5, 0.5], [0.9, 0.1]])
    p = np.array([[0.25, 0.75], [0.9, 0.1]])
    expected = (0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75) + 0.0) / 2
    assert M.kl_divergence(p_hat, p) == pytest.approx(expected, rel=1e-12)
    # order matters: D(p_hat || p) != D(p || p_hat)
    rev = (0.25 * math.log(0.25 / 0.5) + 0.75 * math.log(0.75 / 0.5)) / 2
    assert M.kl_divergence(p, p_hat) == pytest.approx(rev, rel=1e-12)
    assert M.kl_divergence(p, p) == 0.0
    # zero entries in p_hat contribute nothing
    assert M.kl_divergence([[1.0, 0.0]], [[0.5, 0.5]]) == pytest.approx(math.log(2.0))
    # zero in p_true is clipped to eps
    assert M.kl_divergence([[0.5, 0.5]], [[1.0, 0.0]], eps=1e-12) == pytest.approx(
        0.5 * math.log(0.5 / 1e-12) + 0.5 * math.log(0.5), rel=1e-12
    )
    # tiny true posteriors are taken as they are by default (a floor of 1e-12
    # reported 13.8 here instead of 23.0: separated classes looked too good)
    tiny = [[1.0 - 1e-20, 1e-20]]
    exact = 0.5 * math.log(0.5 / (1.0 - 1e-20)) + 0.5 * math.log(0.5 / 1e-20)
    assert M.kl_divergence([[0.5, 0.5]], tiny) == pytest.approx(exact, rel=1e-12)
    assert M.kl_divergence([[0.5, 0.5]], [[1.0, 0.0]]) == pytest.approx(
        0.5 * math.log(0.5 / np.finfo(np.float64).tiny) + 0.5 * math.log(0.5), rel=1e-12
    )


def test_probabilities_take_rounding_on_both_sides():
    # 1 + 1e-9 was accepted but −1e-12 (rounding of 1 − p) refused; both are
    # taken now, as 0 and 1, and values beyond 1e-4 of rounding still refused
    p = np.array([[1.0 + 1e-9, -1e-12], [0.25, 0.75]])
    assert M.kl_divergence(p, [[1.0, 0.0], [0.25, 0.75]]) == 0.0
    assert M.brier_score([0, 1], p) == pytest.approx(0.0625)  # (0 + 0.25² + 0.25²) / 2
    assert np.isfinite(M.expected_calibration_error([0, 1], p))
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        M.brier_score([0, 1], np.array([[1.001, -0.001], [0.25, 0.75]]))


def test_kl_divergence_random_nonnegative():
    rng = np.random.default_rng(3)
    p_hat = _random_proba(rng, 100, 4)
    p = _random_proba(rng, 100, 4)
    d = M.kl_divergence(p_hat, p)
    manual = np.mean(np.sum(p_hat * np.log(p_hat / p), 1))
    assert d == pytest.approx(manual, rel=1e-12)
    assert d > 0


def test_kl_divergence_invalid():
    with pytest.raises(ValueError, match="p_true"):
        M.kl_divergence(np.full((2, 2), 0.5), np.full((3, 2), 0.5))
    with pytest.raises(ValueError, match="p_hat"):
        M.kl_divergence(np.array([0.5, 0.5]), np.full((1, 2), 0.5))
    with pytest.raises(ValueError, match="rows of p_hat"):
        M.kl_divergence(np.array([[0.7, 0.7]]), np.full((1, 2), 0.5))
    with pytest.raises(ValueError, match="p_true"):
        M.kl_divergence(np.full((1, 2), 0.5), np.array([[1.5, -0.5]]))
    with pytest.raises(ValueError, match="eps"):
        M.kl_divergence(np.full((1, 2), 0.5), np.full((1, 2), 0.5), eps=0.0)


@pytest.mark.parametrize(
    "eps, exc, match",
    [
        (2.0, ValueError, "eps must satisfy 0 < eps < 1"),
        (1.0, ValueError, "eps must satisfy 0 < eps < 1"),
        (float("inf"), ValueError, "eps must satisfy 0 < eps < 1"),
        (_NAN, ValueError, "eps must satisfy 0 < eps < 1"),
        (-1e-12, ValueError, "eps must satisfy 0 < eps < 1"),
        ("a", TypeError, "eps must be a real number"),
        (None, TypeError, "eps must be a real number"),
        ([1e-12], TypeError, "eps must be a real number"),
        (True, TypeError, "eps must be a real number"),
    ],
)
def test_kl_divergence_bad_eps(eps, exc, match):
    p = np.full((2, 2), 0.5)
    with pytest.raises(exc, match=match):
        M.kl_divergence(p, p, eps=eps)


def test_kl_divergence_complex():
    p = np.full((2, 2), 0.5)
    with pytest.raises(TypeError, match="p_hat must be real"):
        M.kl_divergence(p + 0j, p)
    with pytest.raises(TypeError, match="p_true must be real"):
        M.kl_divergence(p, p.astype(complex))


# --------------------------------------------------------------------------
# Brier score
# --------------------------------------------------------------------------
def test_brier_hand():
    proba = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    y = [0, 1]
    # (0.09 + 0.04 + 0.01) + (0.01 + 0.81 + 0.64) = 0.14 + 1.46
    assert M.brier_score(y, proba, classes=[0, 1, 2]) == pytest.approx(0.8)
    assert M.brier_score(np.eye(3)[y], proba) == pytest.approx(0.8)
    assert M.brier_score(["a", "b"], np.eye(2)) == 0.0
    assert M.brier_score([0, 1], np.eye(2)[::-1]) == 2.0


def test_brier_matches_sklearn():
    rng = np.random.default_rng(1)
    proba = _random_proba(rng, 200, 4)
    y = rng.integers(0, 4, size=200)
    manual = np.mean(np.sum((proba - np.eye(4)[y]) ** 2, 1))
    assert M.brier_score(y, proba) == pytest.approx(manual, rel=1e-12)
    # binary: twice sklearn's classic (positive-class) Brier loss
    p2 = _random_proba(rng, 200, 2)
    y2 = rng.integers(0, 2, size=200)
    assert M.brier_score(y2, p2) == pytest.approx(2 * skm.brier_score_loss(y2, p2[:, 1]), rel=1e-12)
    if "scale_by_half" in inspect.signature(skm.brier_score_loss).parameters:  # sklearn >= 1.7
        assert M.brier_score(y, proba) == pytest.approx(
            skm.brier_score_loss(y, proba, scale_by_half=False), rel=1e-12
        )


def test_brier_invalid():
    proba = np.full((3, 3), 1 / 3)
    with pytest.raises(ValueError, match="proba"):
        M.brier_score([0, 1], proba)
    with pytest.raises(ValueError, match="columns"):
        M.brier_score([0, 1, 1], proba)
    with pytest.raises(ValueError, match="one-hot"):
        M.brier_score(np.eye(2), proba)
    with pytest.raises(ValueError, match="one-hot"):
        M.brier_score(np.full((3, 3), 0.5), proba)
    with pytest.raises(ValueError, match="proba"):
        M.brier_score([0, 1, 2], proba[0])


_Y6 = [0, 1, 2, 0, 1, 2]


@pytest.mark.parametrize(
    "y, proba, exc, match",
    [
        (_Y6, [[5.0, -3.0, 0.0]] * 6, ValueError, "proba must hold probabilities in \\[0, 1\\]"),
        (_Y6, np.full((6, 3), 5 / 3), ValueError, "proba must hold probabilities"),
        (_Y6, np.full((6, 3), 0.5), ValueError, "rows of proba must sum to 1"),
        (_Y6, np.full((6, 3), _NAN), ValueError, "proba contains NaN"),
        (_Y6, np.full((6, 3), "0.3"), TypeError, "proba must be numeric"),
        ([[1, 0], [1]], np.eye(2), ValueError, "y_true must be a rectangular array"),
        ([_NAN, 1.0], np.eye(2), ValueError, "y_true contains NaN"),
    ],
)
def test_brier_bad_values(y, proba, exc, match):
    with pytest.raises(exc, match=match):
        M.brier_score(y, proba)


# --------------------------------------------------------------------------
# Expected calibration error
# --------------------------------------------------------------------------
def test_ece_hand():
    # confidences 0.9 (correct), 0.9 (wrong), 0.6 (correct), 0.55 (correct)
    proba = np.array([[0.9, 0.1], [0.1, 0.9], [0.6, 0.4], [0.45, 0.55]])
    y = [0, 0, 0, 1]
    # 2 bins: (0, .5], (.5, 1] -> all in bin 2: acc 3/4, conf 2.95/4
    assert M.expected_calibration_error(y, proba, n_bins=2) == pytest.approx(abs(0.75 - 2.95 / 4))
    # 10 bins: bin (0.8, 0.9]: acc 1/2 conf 0.9 ; (0.5, 0.6]: acc 1, conf 0.575
    expected = 2 / 4 * abs(0.5 - 0.9) + 2 / 4 * abs(1.0 - 0.575)
    assert M.expected_calibration_error(y, proba, n_bins=10) == pytest.approx(expected)
    # one-hot targets give the same value
    assert M.expected_calibration_error(np.eye(2)[y], proba, n_bins=10) == pytest.approx(expected)
    # perfectly confident and right -> 0
    assert M.expected_calibration_error([0, 1], np.eye(2)) == 0.0


def test_ece_matches_reference_loop():
    rng = np.random.default_rng(7)
    n, C, B = 500, 3, 15
    proba = _random_proba(rng, n, C)
    y = rng.integers(0, C, size=n)
    conf = proba.max(1)
    correct = proba.argmax(1) == y
    ece = 0.0
    edges = np.linspace(0, 1, B + 1)
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (conf > lo) & (conf <= hi)
        if m.any():
            ece += m.mean() * abs(correct[m].mean() - conf[m].mean())
    assert M.expected_calibration_error(y, proba, n_bins=B) == pytest.approx(ece, rel=1e-12)


def test_ece_invalid():
    proba = np.full((2, 2), 0.5)
    with pytest.raises(ValueError, match="n_bins"):
        M.expected_calibration_error([0, 1], proba, n_bins=0)
    with pytest.raises(TypeError, match="n_bins"):
        M.expected_calibration_error([0, 1], proba, n_bins=2.0)
    with pytest.raises(ValueError, match="proba"):
        M.expected_calibration_error([0, 1, 1], proba)
    with pytest.raises(ValueError, match="not in classes"):
        M.expected_calibration_error([0, 3], proba, classes=[0, 1])


@pytest.mark.parametrize(
    "y, proba, exc, match",
    [
        (_Y6, np.full((6, 3), 5 / 3), ValueError, "proba must hold probabilities in \\[0, 1\\]"),
        (_Y6, [[1.5, -0.5, 0.0]] * 6, ValueError, "proba must hold probabilities"),
        (_Y6, np.full((6, 3), float("inf")), ValueError, "proba contains NaN or infinite"),
        (_Y6, np.full((6, 3), 1 / 3) + 0j, TypeError, "proba must be real"),
        (np.array([0, "a"], dtype=object), np.eye(2), TypeError, "labels of y_true must be mutually comparable"),
    ],
)
def test_ece_bad_values(y, proba, exc, match):
    with pytest.raises(exc, match=match):
        M.expected_calibration_error(y, proba)


def test_ece_accepts_rows_not_summing_to_one():
    # one-vs-rest posteriors (each in [0, 1]) are valid input
    assert M.expected_calibration_error([0, 1], [[0.9, 0.8], [0.1, 0.7]], n_bins=10) == pytest.approx(0.2)


def test_ece_confidence_on_a_bin_edge_goes_to_the_lower_bin():
    # bins are (b/B, (b+1)/B]: with 2 bins a confidence of exactly 0.5 is in
    # (0, 0.5] — alone there (correct: |1 − 0.5|), 0.75 (wrong: |0 − 0.75|) in
    # (0.5, 1]; ECE = (0.5 + 0.75)/2. Both in the upper bin would give 0.125
    assert M.expected_calibration_error([0, 1], [[0.5, 0.5], [0.75, 0.25]], n_bins=2) == pytest.approx(0.625)


def test_ece_tie_predicts_the_first_column():
    # a tie is predicted as the first column (argmax), here class 0: wrong,
    # so ECE = |0 − 0.4| (the last column would be right: |1 − 0.4| = 0.6)
    assert M.expected_calibration_error([1], [[0.4, 0.4]], classes=[0, 1]) == pytest.approx(0.4)


def test_brier_clips_rounding_into_0_1():
    # a row within 1e-4 of rounding outside [0, 1] is taken as [1, 0] (its
    # squared error exactly 0), so the score is that of the second row alone
    assert M.brier_score([0, 1], [[1.00005, -0.00005], [0.5, 0.5]]) == pytest.approx(0.25, rel=0, abs=1e-15)


def test_brier_rows_sum_to_one_within_1e_4():
    # row sums may be off by rounding (1e-4), not more: 1.005 is refused
    with pytest.raises(ValueError, match="rows of proba must sum to 1"):
        M.brier_score([0], [[0.6, 0.405]], classes=[0, 1])
    assert M.brier_score([0], [[0.6, 0.40005]], classes=[0, 1]) == pytest.approx(0.16 + 0.40005**2)
