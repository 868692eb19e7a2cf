"""The host's radix sorts (jaxnn._src.sorting) against NumPy's comparison sorts."""

from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from jaxnn._src.sorting import stable_order, unique_inverse  # noqa: E402

# bounds on both sides of one and two 16-bit digits
BOUNDS = st.sampled_from([1, 2, 7, 1 << 16, (1 << 16) + 1, 1 << 20, 1 << 33])


@given(bound=BOUNDS, n=st.integers(0, 300), seed=st.integers(0, 2**31 - 1))
def test_stable_order_is_numpys_stable_argsort(bound, n, seed):
    values = np.random.default_rng(seed).integers(0, bound, n)
    np.testing.assert_array_equal(stable_order(values, bound), np.argsort(values, kind="stable"))


@given(bound=BOUNDS, n=st.integers(0, 300), seed=st.integers(0, 2**31 - 1))
def test_unique_inverse_is_numpys_unique(bound, n, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, min(bound, 5) if seed % 2 else bound, n)  # many repeats, or few
    want, want_inverse = np.unique(values, return_inverse=True)
    got, inverse = unique_inverse(values, bound)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(inverse, want_inverse.reshape(-1))


@pytest.mark.parametrize("bound", [(1 << 16) + 1, 10**6, 1 << 26, (1 << 26) + 1])  # MSD: 2 to 1024 buckets; LSD
def test_stable_order_of_many_values_is_numpys_stable_argsort(bound):
    from jaxnn._src.sorting import MSD_MIN_SIZE

    values = np.random.default_rng(bound).integers(0, bound, MSD_MIN_SIZE + 7)
    values[:1000] = values[1000:2000]  # repeats, whose order must be kept
    np.testing.assert_array_equal(stable_order(values, bound), np.argsort(values, kind="stable"))
