"""Inverse neighbourhoods inv(j) = {i : j ∈ NN_k(x_i)}: the compressed form
on the host (:func:`inverse_csr`) and the padded ``members (m, P)`` /
``counts (m,)`` arrays the boosting scan reads (docs/design.md)."""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src.checks import check_integer
from jaxnn._src.graph import Neighbors
from jaxnn._src.shared_sizes import to_device
from jaxnn._src.sorting import stable_order

__all__ = ["InverseNeighbors", "inverse_neighbors", "inverse_csr", "inverse_counts"]


class InverseNeighbors(NamedTuple):
    """Padded inverse neighbourhoods.

    Attributes:
      members: (m, P) int32; row j lists inv(j) in increasing order, padded with m.
      counts: (m,) int32; n_j = |inv(j)|.
    """

    members: jax.Array
    counts: jax.Array


def inverse_csr(indices, m: int | None = None):
    """Inverse neighbourhoods in compressed form, on the host.

    Returns ``(counts, starts, sources)``: n_j = ``counts[j]`` (m,), and
    inv(j) = {i : j ∈ NN_k(x_i)} in increasing i is
    ``sources[starts[j] : starts[j] + counts[j]]`` (``sources``: (n·k,)).
    The row-major flat indices sorted stably by j (a radix sort,
    :func:`jaxnn._src.sorting.stable_order`), so each inv(j) keeps
    increasing i.
    """
    if isinstance(indices, Neighbors):
        indices = indices.indices
    nbrs = np.asarray(indices)
    if nbrs.ndim != 2:
        raise ValueError(f"neighbour indices must be 2-D (m, k), got shape {nbrs.shape}")
    if not np.issubdtype(nbrs.dtype, np.integer):
        raise TypeError(f"neighbour indices must be integers, got dtype {nbrs.dtype}")
    n, k = nbrs.shape
    m = n if m is None else check_integer(m, "m", low=1)
    targets = nbrs.reshape(-1).astype(np.int64)
    if targets.size and (targets.min() < 0 or targets.max() >= m):
        raise ValueError(f"neighbour indices must lie in [0, {m}); got values in [{targets.min()}, {targets.max()}]")
    counts = np.bincount(targets, minlength=m)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return counts, starts, stable_order(targets, m) // max(k, 1)


def inverse_counts(indices, m: int | None = None) -> np.ndarray:
    """n_j = |inv(j)|, how many rows of an (n, k) neighbour array hold j: (m,) int32."""
    nbrs = np.asarray(indices)
    return np.bincount(nbrs.reshape(-1), minlength=nbrs.shape[0] if m is None else int(m)).astype(np.int32)


def members_in_order(csr, examples) -> np.ndarray:
    """inv(j) for each j of ``examples`` in turn (increasing i within), one flat
    array; ``examples`` may hold the sentinel m (no members).  ``csr``: the
    triple of :func:`inverse_csr`."""
    counts, starts, sources = csr
    examples = np.asarray(examples)
    lens = np.concatenate([counts, [0]])[examples]
    first = np.concatenate([starts, [0]])[examples]
    return sources[np.repeat(first - (np.cumsum(lens) - lens), lens) + np.arange(lens.sum())]


def inverse_neighbors(indices, m: int | None = None, *, width: int | None = None) -> InverseNeighbors:
    """Padded inverse neighbourhoods from an (m, k) neighbour index array.

    Built once from :func:`inverse_csr`: row j of ``members`` lists
    inv(j) = {i : j ∈ NN_k(x_i)} in increasing i, padded with the sentinel m.
    ``width``: the columns of ``members``, at least the largest inverse
    neighbourhood P (default: P itself; :func:`shared_sizes.shared_width` for a width that
    graphs of one size but other data share).
    """
    counts, starts, sources = inverse_csr(indices, m)
    m = counts.size
    largest = max(1, int(counts.max(initial=0)))
    if width is None:
        width = largest
    elif check_integer(width, "width", low=1) < largest:
        raise ValueError(f"width={width} is narrower than the largest inverse neighbourhood ({largest} members)")
    width = int(width)
    rows = np.repeat(np.arange(m), counts)
    slot = np.arange(sources.size) - starts[rows]
    if m * width < DEVICE_MEMBERS_MIN:
        members = np.full((m, width), m, dtype=np.int32)
        members[rows, slot] = sources
        members = to_device(members)
    else:
        members = _scatter_members(to_device(rows, np.int32), to_device(slot, np.int32),
                                   to_device(sources, np.int32), m=m, width=width)
    return InverseNeighbors(members, to_device(counts, np.int32))


#: members arrays of at least this many entries are built on the device
#: (:func:`_scatter_members`); smaller ones on the host, where no compilation
#: per shape is paid
DEVICE_MEMBERS_MIN = 1 << 25


@functools.partial(jax.jit, static_argnames=("m", "width"))
def _scatter_members(rows, slots, values, *, m: int, width: int):
    """The (m, width) members array, filled with m and scattered on the
    device: a kNN graph's hubs make width ~50·k (P = 502 at m = 10⁵, k = 10:
    200 MB), which is faster filled here than filled on the host and copied
    over."""
    return jnp.full((m, width), m, jnp.int32).at[rows, slots].set(values, unique_indices=True)
