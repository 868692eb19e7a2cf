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
_DIGIT = (1 << DIGIT_BITS) - 1
#: from this many values (far more than a CPU's cache holds), a sort of two
#: digits takes the high digit first and then each of its buckets — a
#: cache-sized sort — by the low digit; below, passes over all values are as
#: quick (docs/performance.md, a whole fit from a given graph)
MSD_MIN_SIZE = 1 << 21
#: the most buckets of the high digit sorted one by one; beyond, a pass a digit
MSD_MAX_BUCKETS = 1024


def stable_order(values, bound: int) -> np.ndarray:
    """The permutation (n,) that sorts ``values`` (n,) — non-negative integers
    < ``bound`` — stably (equal values keep their order), by stable argsorts
    of 16-bit digits: below 2¹⁶ one argsort; for at least
    :data:`MSD_MIN_SIZE` values below 2¹⁶·:data:`MSD_MAX_BUCKETS`, the high
    digit first and then each of its buckets by the low digit; else a
    least-significant-digit radix sort, one pass a digit over all values."""
    values = np.asarray(values)
    bound = max(int(bound), 1)
    if bound <= 1 << DIGIT_BITS:
        return np.argsort(values.astype(np.uint16), kind="stable")
    buckets = ((bound - 1) >> DIGIT_BITS) + 1
    if values.size >= MSD_MIN_SIZE and buckets <= MSD_MAX_BUCKETS:
        high = (values >> DIGIT_BITS).astype(np.uint16)
        order = np.argsort(high, kind="stable")
        low = (values & _DIGIT).astype(np.uint16)[order]
        sizes = np.bincount(high, minlength=buckets)
        ends = np.cumsum(sizes)
        for a, b in zip(ends - sizes, ends):
            if b - a > 1:
                order[a:b] = order[a:b][np.argsort(low[a:b], kind="stable")]
        return order
    order = None
    for d in range(-(-(bound - 1).bit_length() // DIGIT_BITS)):
        digit = ((values >> (d * DIGIT_BITS)) & _DIGIT).astype(np.uint16)
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
