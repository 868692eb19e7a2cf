"""A tournament tree over |v_jc|: column-wise argmax under sparse additions.

The greedy chooser (paper 001, GNNB*; paper 002, N³'s WEO) needs, at every
step and for every class c, the example j maximising |η_jc|/n_j, while a
step changes η only on the few hundred rows that are neighbours of the
updated inverse neighbourhood.  A full ``argmax`` over the (m, C) table is
O(m·C) a step, so the step time grows with m.

This tree stores the signed values v (m, C) themselves as its leaves (the
engine keeps v = η/n there, adding pre-scaled changes) and, level by level,
the maximum of |v| over every block of ``branch`` children, up to at most
``branch`` top nodes.  Adding to T entries and
repairing costs O(T·branch·log_branch m); reading the argmax walks down
from the top in O(C·branch·log_branch m) — flat in m up to the logarithm
and the cache misses of a bigger table.  Ties go to the smallest row,
exactly as ``jnp.argmax``.  Rows ≥ m (padding, including the sentinel row m
of the engine's padded arrays) hold 0 and must only ever be given 0: as
every real row scores ≥ 0 and comes first, they are never chosen.

Layout: level ℓ is a flat class-major array (C·n_ℓ,) — entry c·n_ℓ + p is
node p of class c, so a node's ``branch`` children are one contiguous row of
the (C·n_{ℓ−1}/branch, branch) view and one gather fetches them — with
n_0 = m + 1 rounded up to a multiple of ``branch`` and n_{ℓ+1} = n_ℓ/branch,
rounded up likewise while it exceeds ``branch``.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

__all__ = ["MaxTree", "build", "add", "add_pairs", "argmax", "values"]

#: a level is recomputed whole when it has at most this many times N·branch
#: nodes (N entries added): repairing a level node by node costs far more a
#: node than recomputing a small level whole
WHOLE_LEVEL_FACTOR = 4

#: children per node; on CPU 8 makes a faster greedy step than 4, 16 or 32
#: (fewer levels against more children gathered per level)
BRANCH = 8


@functools.partial(jax.tree_util.register_dataclass, data_fields=["levels"], meta_fields=["sizes", "branch"])
@dataclasses.dataclass(frozen=True)
class MaxTree:
    """levels[0]: the values v, flat class-major (C·n_0,); levels[ℓ ≥ 1]: node
    maxima of |v|; sizes[ℓ] = n_ℓ and branch are static (pytree metadata)."""

    levels: tuple
    sizes: tuple
    branch: int


def round_up(n: int, b: int) -> int:
    """n rounded up to a multiple of b."""
    return -(-n // b) * b


def _dense_level(lower, n_lower: int, n: int, branch: int, leaves: bool):
    """A whole level (C·n,) from the level below, (C·n_lower,)."""
    x = lower.reshape(-1, n_lower // branch, branch)
    x = jnp.max(jnp.abs(x) if leaves else x, axis=2)
    return jnp.pad(x, ((0, 0), (0, n - x.shape[1])), constant_values=-jnp.inf).reshape(-1)


def build(v: jax.Array, branch: int = BRANCH) -> MaxTree:
    """The tree of the scores |v|: v (m, C)."""
    m, C = v.shape
    sizes = [round_up(m + 1, branch)]
    while sizes[-1] > branch:
        n = sizes[-1] // branch
        sizes.append(round_up(n, branch) if n > branch else n)
    levels = [jnp.zeros((C, sizes[0]), v.dtype).at[:, :m].set(v.T).reshape(-1)]
    for level in range(1, len(sizes)):
        levels.append(_dense_level(levels[-1], sizes[level - 1], sizes[level], branch, level == 1))
    return MaxTree(tuple(levels), tuple(sizes), branch)


def values(tree: MaxTree) -> jax.Array:
    """The current v, (m + padding, C)."""
    return tree.levels[0].reshape(-1, tree.sizes[0]).T


def _first_max(x):
    """Position of the first maximum along the last axis, by two plain
    reductions (XLA's variadic argmax is slow on CPU)."""
    b = x.shape[-1]
    pos = jnp.arange(b, dtype=jnp.uint32)  # unsigned: see add_pairs
    return jnp.min(jnp.where(x == jnp.max(x, axis=-1, keepdims=True), pos, b), axis=-1)


def _children(tree: MaxTree, level: int, node, cls):
    """Scores of the children of ``node`` (…, C) at ``level`` + 1: (…, C, branch)."""
    B = tree.branch
    block = cls * (tree.sizes[level] // B) + node  # row of the children in the (C·n/B, B) view
    x = tree.levels[level].reshape(-1, B)[block]
    return jnp.abs(x) if level == 0 else x


def argmax(tree: MaxTree) -> jax.Array:
    """(C,) uint32: per column, the smallest row with the largest |v|."""
    top = tree.levels[-1].reshape(-1, tree.sizes[-1])
    if len(tree.levels) == 1:  # m < branch: the leaves are the top
        top = jnp.abs(top)
    node = _first_max(top)
    cls = jnp.arange(top.shape[0], dtype=jnp.uint32)
    for level in range(len(tree.levels) - 2, -1, -1):
        node = node * tree.branch + _first_max(_children(tree, level, node, cls))
    return node


def add(tree: MaxTree, rows: jax.Array, deltas: jax.Array) -> MaxTree:
    """v[rows, c] += deltas for every column c (repeats accumulate), then
    repair the maxima above.  rows, deltas: (T, C) — :func:`add_pairs` with
    the class of column c."""
    T, C = deltas.shape
    cls = jnp.broadcast_to(jnp.arange(C, dtype=jnp.int32), (T, C))
    return add_pairs(tree, rows.reshape(-1), cls.reshape(-1), deltas.reshape(-1))


def add_pairs(tree: MaxTree, rows: jax.Array, cls: jax.Array, deltas: jax.Array) -> MaxTree:
    """v[rows[t], cls[t]] += deltas[t] (repeats accumulate), then repair the
    maxima above.  rows, cls, deltas: (N,) — any mix of classes, so a caller
    passes only the entries it changes, not a (T, C) block padded per class.

    A level is repaired node by node (gathering the ``branch`` children of
    each of the N touched nodes) while it has more than
    :data:`WHOLE_LEVEL_FACTOR`·N·``branch`` nodes in all, and recomputed
    whole (contiguous, cheaper) above that.
    """
    (N,) = deltas.shape
    B = tree.branch
    C = tree.levels[0].shape[0] // tree.sizes[0]
    # unsigned positions: node // B is a shift and the gathers skip the
    # negative-index fix-up (signed, the two cost a large share of a level
    # repaired node by node)
    cls = cls.astype(jnp.uint32)
    levels = list(tree.levels)
    node = rows.astype(jnp.uint32)
    levels[0] = levels[0].at[cls * tree.sizes[0] + node].add(deltas)
    for level in range(1, len(levels)):
        lower, n_lower = levels[level - 1], tree.sizes[level - 1]
        if n_lower * C <= WHOLE_LEVEL_FACTOR * N * B:
            levels[level] = _dense_level(lower, n_lower, tree.sizes[level], B, level == 1)
            continue
        node = node // B
        first = cls * n_lower + node * B  # flat position of the first child
        children = [lower[first + b] for b in range(B)]  # B 1-D gathers fuse with the max
        if level == 1:
            children = [jnp.abs(x) for x in children]
        best = functools.reduce(jnp.maximum, children)
        levels[level] = levels[level].at[cls * tree.sizes[level] + node].set(best)
    return dataclasses.replace(tree, levels=tuple(levels))
