"""Linear-time stable sorts of small non-negative integers on the host.

The host layouts of a fit (inverse neighbourhoods, the windowed scan's local
rows) order millions of indices below m.  A comparison sort of them costs
O(n log n); NumPy sorts 16-bit keys stably by radix in O(n), so a key below
m sorts in ⌈log₂ m / 16⌉ such passes (one up to m = 2¹⁶).
"""

from __future__ import annotations

import numpy as np

__all__ = ["stable_order", "unique_inverse"]

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


def unique_inverse(values, bound: int):
    """The distinct values of ``values`` (n,) — non-negative integers <
    ``bound`` — in increasing order, and for each value the index of its
    distinct value: ``np.unique(values, return_inverse=True)`` by a radix
    sort instead of a comparison sort.  Returns ``(unique (u,), inverse
    (n,) int64)``."""
    values = np.asarray(values)
    order = stable_order(values, bound)
    ordered = values[order]
    new = np.ones(ordered.size, bool)
    new[1:] = ordered[1:] != ordered[:-1]
    inverse = np.empty(ordered.size, np.int64)
    inverse[order] = np.cumsum(new) - 1
    return ordered[new], inverse
