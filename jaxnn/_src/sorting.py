"""Linear-time stable sorts of small non-negative integers on the host.

The host layouts of a fit (inverse neighbourhoods, the windowed scan's local
rows) order millions of indices below m.  A comparison sort of them costs
O(n log n); NumPy sorts 16-bit keys stably by radix in O(n), so a key below
m sorts in ⌈log₂ m / 16⌉ such passes (one up to m = 2¹⁶).
"""

from __future__ import annotations

import numpy as np

__all__ = ["stable_order", "unique_pairs"]

#: bits of one digit: NumPy's stable argsort of 16-bit keys is a radix sort
DIGIT_BITS = 16


def stable_order(values, bound: int) -> np.ndarray:
    """The permutation (n,) that sorts ``values`` (n,) — non-negative integers
    < ``bound`` — stably (equal values keep their order): a
    least-significant-digit radix sort, one stable argsort per 16-bit digit."""
    values = np.asarray(values)
    n_digits = max(1, -(-(max(int(bound), 1) - 1).bit_length() // DIGIT_BITS))
    order = None
    for d in range(n_digits):
        digit = ((values >> (d * DIGIT_BITS)) & ((1 << DIGIT_BITS) - 1)).astype(np.uint16)
        step = np.argsort(digit if order is None else digit[order], kind="stable")  # gathers 2-byte digits
        order = step if order is None else order[step]
    return order


def unique_pairs(major, minor, major_bound: int, minor_bound: int):
    """The distinct pairs (major, minor) of two (n,) arrays of non-negative
    integers below their bounds, in increasing (major, minor) order, and for
    each input pair the index of its pair among them — what
    ``np.unique(major * minor_bound + minor, return_inverse=True)`` gives,
    by two radix sorts instead of a comparison sort.

    Returns ``(major_u, minor_u, inverse)``: (u,), (u,) and (n,) int64."""
    major, minor = np.asarray(major), np.asarray(minor)
    order = stable_order(minor, minor_bound)
    order = order[stable_order(major[order], major_bound)]
    a, b = major[order], minor[order]
    new = np.ones(a.size, bool)
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    inverse = np.empty(a.size, np.int64)
    inverse[order] = np.cumsum(new) - 1
    return a[new].astype(np.int64), b[new].astype(np.int64), inverse
