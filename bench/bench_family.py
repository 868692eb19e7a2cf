"""Paper 004's family against scikit-learn on the same data, in one process.

* :class:`UDTFit` — ``jaxnn.udt(max_depth=8)`` against scikit-learn's
  ``DecisionTreeClassifier(max_depth=8)`` (Gini both) on 10⁵ × 20 points of two
  classes (quick: 2000): ``track_fit_ratio_vs_sklearn`` (median fit times,
  interleaved rounds; < 1: UDT fits faster), ``track_predict_ratio_vs_sklearn``
  (predicting the 10⁵ training rows) and ``track_compile_seconds`` (the first
  fit less the median).
* :class:`OLSPass` — one pass of ``jaxnn.ols_update`` over 10⁶ × 50 points of
  ten classes in batches of 10⁴ (quick: 2·10⁴ in batches of 2000), against
  ``SGDClassifier(loss="log_loss").partial_fit`` over the same batches, for
  Gentile's p and for p = 2 (``track_pass_ratio_vs_sgd_partial_fit``), and
  the peak resident memory of a stream of 100 batches less that of a stream
  of 10 (quick: 20 and 2; ``track_peak_rss_growth_long_vs_short``, bytes;
  about 0: memory does not grow with the stream).
* :class:`ULSRules` — ``jaxnn.uls(weak="rules", rounds=100,
  max_literals=3)`` on 10⁴ × 20 points of two classes (quick: 2000, 20 rules):
  ``track_fit_seconds`` (steady state) and ``track_rule_growth_share``, the
  time of growing the fit's rules alone (``weak.grow_rules``, one compiled
  loop over as many weight vectors) over the whole fit's; the rest is eq. 70's
  steps and the weights.
"""

from __future__ import annotations

import numpy as np

import jaxnn

from .common import QUICK, SEED, Benchmark, block, interleaved_medians, skip_unless, timed_block

UDT_M, UDT_D, UDT_DEPTH = (2000, 20, 8) if QUICK else (100_000, 20, 8)
OLS_M, OLS_D, OLS_C, OLS_BATCH = (2000, 50, 10, 500) if QUICK else (1_000_000, 50, 10, 10_000)
ULS_M, ULS_D, ULS_ROUNDS, ULS_LITERALS = (2000, 20, 20, 3) if QUICK else (10_000, 20, 100, 3)
ROUNDS = 3
#: the batches of the long and the short stream whose peak memory OLSPass compares
OLS_STREAMS = (20, 2) if QUICK else (100, 10)


def _two_classes(m: int, d: int, seed: int = SEED):
    """Points (m, d) float32 of two classes split by a noisy non-linear rule."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)).astype(np.float32)
    y = ((X[:, 0] * X[:, 1] + 0.5 * X[:, 2] + 0.3 * rng.normal(size=m)) > 0).astype(np.int64)
    return X, y


def _stream(m: int, d: int, C: int, seed: int = SEED):
    """(X, y): m points of C Gaussian classes in d dimensions, float32."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=1.5, size=(C, d))
    y = rng.integers(0, C, size=m)
    return (centres[y] + rng.normal(size=(m, d))).astype(np.float32), y


class UDTFit(Benchmark):
    """UDT against scikit-learn's CART at 10⁵ × 20, depth 8 (see the module)."""

    def setup_cache(self):
        tree = skip_unless("sklearn.tree")
        X, y = _two_classes(UDT_M, UDT_D)
        _, seconds = timed_block(lambda: jaxnn.udt(X, y, max_depth=UDT_DEPTH))  # the first fit: compiles
        model = jaxnn.udt(X, y, max_depth=UDT_DEPTH)
        cart = tree.DecisionTreeClassifier(max_depth=UDT_DEPTH, random_state=SEED).fit(X, y)
        fit_udt, fit_cart = interleaved_medians(
            [lambda: jaxnn.udt(X, y, max_depth=UDT_DEPTH),
             lambda: tree.DecisionTreeClassifier(max_depth=UDT_DEPTH, random_state=SEED).fit(X, y)], rounds=ROUNDS)
        block(jaxnn.predict(model, X))
        cart.predict(X)
        pred_udt, pred_cart = interleaved_medians([lambda: jaxnn.predict(model, X), lambda: cart.predict(X)],
                                                  rounds=ROUNDS)
        return {"fit": fit_udt / fit_cart, "predict": pred_udt / pred_cart, "compile": max(seconds - fit_udt, 0.0)}

    def track_fit_ratio_vs_sklearn(self, cache):
        return cache["fit"]

    track_fit_ratio_vs_sklearn.unit = "ratio"

    def track_predict_ratio_vs_sklearn(self, cache):
        return cache["predict"]

    track_predict_ratio_vs_sklearn.unit = "ratio"

    def track_compile_seconds(self, cache):
        return cache["compile"]

    track_compile_seconds.unit = "seconds"


def _ols_pass(state, X, y):
    for start in range(0, X.shape[0], OLS_BATCH):
        state = jaxnn.ols_update(state, X[start:start + OLS_BATCH], y[start:start + OLS_BATCH])
    return block(state.w)


def _sgd_pass(X, y, classes):
    from sklearn.linear_model import SGDClassifier

    sgd = SGDClassifier(loss="log_loss", random_state=SEED)
    for start in range(0, X.shape[0], OLS_BATCH):
        sgd.partial_fit(X[start:start + OLS_BATCH], y[start:start + OLS_BATCH], classes=classes)
    return sgd


def ols_stream_peak(batches: int) -> int:
    """The peak RSS increase (bytes) of a stream of ``batches`` batches of
    :data:`OLS_BATCH` rows through ``ols_update``, each batch made as it is
    needed (the stream is never held whole)."""
    from .bench_graph import peak_rss_increase

    classes = tuple(range(OLS_C))
    state = jaxnn.ols_init(OLS_D, classes)
    X, y = _stream(OLS_BATCH, OLS_D, OLS_C, seed=1)
    block(jaxnn.ols_update(state, X, y).w)  # compiled before the measurement

    def stream():
        s = state
        for b in range(batches):
            Xb, yb = _stream(OLS_BATCH, OLS_D, OLS_C, seed=2 + b)
            s = jaxnn.ols_update(s, Xb, yb)
        return block(s.w)

    return peak_rss_increase(stream)[2]


class OLSPass(Benchmark):
    """OLS against ``SGDClassifier.partial_fit`` over the same batches (see the module)."""

    param_names = ["p"]
    params = (["gentile", "2"],)

    def setup_cache(self):
        skip_unless("sklearn.linear_model")
        X, y = _stream(OLS_M, OLS_D, OLS_C)
        classes = np.arange(OLS_C)
        out = {}
        for name, p in (("gentile", None), ("2", 2.0)):
            start = jaxnn.ols_init(OLS_D, tuple(classes), p=p)
            _ols_pass(start, X[:2 * OLS_BATCH], y[:2 * OLS_BATCH])  # compiled
            _sgd_pass(X[:OLS_BATCH], y[:OLS_BATCH], classes)
            t_ols, t_sgd = interleaved_medians([lambda: _ols_pass(start, X, y), lambda: _sgd_pass(X, y, classes)],
                                               rounds=ROUNDS)
            out[name] = t_ols / t_sgd
        out["rss"] = ols_stream_peak(OLS_STREAMS[0]) - ols_stream_peak(OLS_STREAMS[1])
        return out

    def track_pass_ratio_vs_sgd_partial_fit(self, cache, p):
        return cache[p]

    track_pass_ratio_vs_sgd_partial_fit.unit = "ratio"

    def track_peak_rss_growth_long_vs_short(self, cache, p):
        return cache["rss"]

    track_peak_rss_growth_long_vs_short.unit = "bytes"


class ULSRules(Benchmark):
    """ULS with rules, r = 100, l = 3 at 10⁴ × 20 (see the module)."""

    def setup_cache(self):
        import jax
        import jax.numpy as jnp

        from jaxnn._src import weak

        X, y = _two_classes(ULS_M, ULS_D)
        fit = lambda: jaxnn.uls(X, y, weak="rules", rounds=ULS_ROUNDS, max_literals=ULS_LITERALS)  # noqa: E731
        block(fit().rule_alpha)
        (total,) = interleaved_medians([lambda: block(fit().rule_alpha)], rounds=ROUNDS)
        feature, threshold, greater = weak.literals(X)
        L = weak.literal_matrix(jnp.asarray(X), jnp.asarray(feature), jnp.asarray(threshold, jnp.float32),
                                jnp.asarray(greater)).astype(jnp.float32)
        V = jnp.asarray(np.random.default_rng(SEED).normal(size=(ULS_ROUNDS, ULS_M, 2)), jnp.float32)
        grow = jax.jit(lambda L, V: jax.lax.map(lambda v: weak.grow_rules(L, v, ULS_LITERALS)[1], V))
        block(grow(L, V))
        (growth,) = interleaved_medians([lambda: block(grow(L, V))], rounds=ROUNDS)
        return {"seconds": total, "growth": growth / total}

    def track_fit_seconds(self, cache):
        return cache["seconds"]

    track_fit_seconds.unit = "seconds"

    def track_rule_growth_share(self, cache):
        return cache["growth"]

    track_rule_growth_share.unit = "ratio"
