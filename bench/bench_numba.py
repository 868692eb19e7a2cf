"""Sequential GNNB in a numba loop vs jaxnn's sequential scan and colored schedule.

The same algorithm — GNNB, logistic loss, ε = 0.5, lazy order (each example
once, index order), one pass — on the synthetic set's exact graph
(m = 10⁵, k = 10, C = 10):

* ``time_numba`` — a plain triple loop compiled by numba (float32, one core);
* ``time_sequential`` — jaxnn's ``boost`` (``jax.lax.scan``, one step per example);
* ``time_colored`` — jaxnn's ``boost_colored`` (one vectorised step per colour
  of the conflict graph: the same result as the sequential algorithm run in
  colour order);
* ``track_colored_over_numba_ratio``, ``track_colored_over_sequential_ratio``
  — time ratios measured interleaved in one process (< 1: colored is faster).

numba is benchmark-only (not a jaxnn dependency): without it every benchmark
here is skipped.  ``setup`` checks the numba loop against jaxnn's sequential
α before timing it.
"""

from __future__ import annotations

import math

import numpy as np

from .common import Benchmark, GraphCache, block, interleaved_best, problem, skip_unless

DATASET = "synthetic"
EPSILON = 0.5


def _gnnb_lazy_logistic(members, counts, Y, passes, scale):
    """α (m, C) of ``passes`` lazy GNNB passes with the logistic loss.

    w(e) = σ(−e)/ln 2, H* = 1/(4 ln 2), δ_c = scale·η_c/(H*·n_j) with
    η_c = Σ_{i∈inv(j)} w(e_ic)·r_ic, r_ic = y_ic·y_jc; scale = 2(1 − ε).
    """
    m, C = Y.shape
    E = np.zeros((m, C), np.float32)
    alpha = np.zeros((m, C), np.float32)
    eta = np.zeros(C, np.float32)
    delta = np.zeros(C, np.float32)
    ln2 = np.float32(math.log(2.0))
    hstar = np.float32(1.0) / (np.float32(4.0) * ln2)
    for _ in range(passes):
        for j in range(m):
            n = counts[j]
            if n == 0:
                continue
            for c in range(C):
                eta[c] = 0.0
            for t in range(n):
                i = members[j, t]
                for c in range(C):
                    eta[c] += Y[i, c] * Y[j, c] / (np.float32(1.0) + np.exp(E[i, c])) / ln2
            for c in range(C):
                delta[c] = scale * eta[c] / (hstar * n)
                alpha[j, c] += delta[c]
            for t in range(n):
                i = members[j, t]
                for c in range(C):
                    E[i, c] += delta[c] * Y[i, c] * Y[j, c]
    return alpha


_KERNEL = None


def numba_kernel():
    """The numba-compiled loop (compiled once, cached on disk by numba)."""
    global _KERNEL
    if _KERNEL is None:
        numba = skip_unless("numba")
        _KERNEL = numba.njit(cache=True, nogil=True)(_gnnb_lazy_logistic)
    return _KERNEL


class NumbaVsColored(GraphCache, Benchmark):
    """numba sequential loop vs jaxnn sequential scan (plain, and windowed as
    ``fit`` runs it at this size) vs jaxnn colored schedule."""

    def setup(self, cache):
        kernel = numba_kernel()
        p = problem(cache, DATASET)
        self.members = np.asarray(p.members)
        self.counts = np.asarray(p.counts)
        self.Y = np.asarray(p.Y, np.float32)
        self.scale = np.float32(2.0 * (1.0 - EPSILON))
        self.sequential = p.runner("gnnb", "lazy")
        self.colored = p.runner("gnnb", "colored")
        self.sequential.compile()
        self.colored.compile()
        try:
            self.windowed = p.runner("gnnb", "windowed")
            self.windowed.compile()
        except NotImplementedError:  # an older jaxnn
            self.windowed = None
        alpha_numba = kernel(self.members, self.counts, self.Y, 1, self.scale)  # compiles
        alpha_jax = np.asarray(block(self.sequential()).alpha)
        err = np.max(np.abs(alpha_numba - alpha_jax)) / max(np.max(np.abs(alpha_jax)), 1e-12)
        if not err < 1e-2:
            raise AssertionError(f"numba loop disagrees with jaxnn's boost: relative max error {err:.3g}")

    def _numba(self):
        return numba_kernel()(self.members, self.counts, self.Y, 1, self.scale)

    def time_numba(self, cache):
        self._numba()

    def time_sequential(self, cache):
        block(self.sequential())

    def time_colored(self, cache):
        block(self.colored())

    def time_windowed(self, cache):
        if self.windowed is None:
            raise NotImplementedError("this jaxnn has no windowed scan")
        block(self.windowed())

    def track_windowed_over_sequential_ratio(self, cache):
        if self.windowed is None:
            raise NotImplementedError("this jaxnn has no windowed scan")
        t_windowed, t_sequential = interleaved_best([self.windowed, self.sequential], repeat=3)
        return t_windowed / t_sequential

    track_windowed_over_sequential_ratio.unit = "ratio"

    def track_colored_over_numba_ratio(self, cache):
        t_colored, t_numba = interleaved_best([self.colored, self._numba], repeat=3)
        return t_colored / t_numba

    track_colored_over_numba_ratio.unit = "ratio"

    def track_colored_over_sequential_ratio(self, cache):
        t_colored, t_sequential = interleaved_best([self.colored, self.sequential], repeat=3)
        return t_colored / t_sequential

    track_colored_over_sequential_ratio.unit = "ratio"
