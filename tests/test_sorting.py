"""The host's radix sorts (jaxnn._src.sorting) against NumPy's comparison sorts."""

from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from jaxnn._src.sorting import stable_order, unique_pairs  # noqa: E402

# bounds on both sides of one and two 16-bit digits
BOUNDS = st.sampled_from([1, 2, 7, 1 << 16, (1 << 16) + 1, 1 << 20, 1 << 33])


@given(bound=BOUNDS, n=st.integers(0, 300), seed=st.integers(0, 2**31 - 1))
def test_stable_order_is_numpys_stable_argsort(bound, n, seed):
    values = np.random.default_rng(seed).integers(0, bound, n)
    np.testing.assert_array_equal(stable_order(values, bound), np.argsort(values, kind="stable"))


@given(major_bound=BOUNDS, minor_bound=BOUNDS, n=st.integers(0, 300), seed=st.integers(0, 2**31 - 1))
def test_unique_pairs_is_numpys_unique_of_the_combined_keys(major_bound, minor_bound, n, seed):
    rng = np.random.default_rng(seed)
    major = np.sort(rng.integers(0, major_bound, n))  # grouped, as the windows are, or not:
    major = major if seed % 2 else rng.permutation(major)
    minor = rng.integers(0, min(minor_bound, 5) if seed % 3 == 0 else minor_bound, n)  # repeats, or few
    keys, inverse = np.unique(major.astype(object) * minor_bound + minor, return_inverse=True)
    major_u, minor_u, got = unique_pairs(major, minor, major_bound, minor_bound)
    np.testing.assert_array_equal(got, inverse.reshape(-1))
    np.testing.assert_array_equal(major_u.astype(object) * minor_bound + minor_u, keys)
