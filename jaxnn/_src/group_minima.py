"""The exact search's first stage as one Pallas kernel: the minimum squared
distance of each query row to each group of 32 consecutive training points,
the distances computed and reduced in registers, never written out.

:func:`group_minima` gives (B, m/32) minima for B query rows against m
points; :mod:`jaxnn._src.search` keeps, for each row, the k groups with the
smallest minima (they hold its k nearest points) and ranks their 32·k
points again exactly.  A distance tile of a search among 10⁶ points holds
4 MB a query row, its group minima 125 kB: the tile's write and reread is
what the fused kernel saves.

Layout.  The points are padded to whole tiles of 32·G and permuted within
each tile (:func:`permuted`) so that the kernel's j-th (G, d) slab of tile t
holds member j of each of the tile's G groups: a program (a block of BM
query rows, one tile) runs 32 (BM × d)·(d × G) products and keeps the
running minimum, group g of tile t being the columns 32·(t·G + g) + 0…31 —
the groups of :func:`jaxnn._src.search._smallest_k`, so that ties go to the
lower index as there.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from jaxnn._src import platforms

__all__ = ["GROUP", "BLOCK_ROWS", "TILE_GROUPS", "group_minima", "permuted", "padded_columns", "feature_width"]

#: points a group (the selection's second stage re-ranks 32·k of them)
GROUP = 32
#: query rows of one program
BLOCK_ROWS = 64
#: groups of one program (32·G points a tile)
TILE_GROUPS = 64


def padded_columns(m: int, groups: int = TILE_GROUPS) -> int:
    """m rounded up to whole tiles of 32·``groups`` points."""
    tile = GROUP * groups
    return -(-m // tile) * tile


def feature_width(d: int) -> int:
    """d padded to a power of two of at least 16 (a Triton dot's block)."""
    return max(16, 1 << (max(d, 1) - 1).bit_length())


def permuted(a, groups: int = TILE_GROUPS):
    """Rows of ``a`` (m_pad, …) reordered within each tile of 32·groups rows:
    row j·groups + g of tile t is row (t·groups + g)·32 + j."""
    rest = a.shape[1:]
    return a.reshape((-1, groups, GROUP) + rest).swapaxes(1, 2).reshape(a.shape)


def group_minima(q, q_sq, own, xt, xt_sq, *, precision=jax.lax.Precision.HIGHEST, block_rows: int = BLOCK_ROWS,
                 groups: int = TILE_GROUPS, interpret: bool | None = None):
    """(B, m_pad/32) min over each group of 32 points of ‖q‖² − 2q·x + ‖x‖².

    Args:
      q: (B, d) query rows, B a multiple of ``block_rows``, d a power of two ≥ 16.
      q_sq: (B,) their squared norms.
      own: (B,) int32 the column each row leaves out (its own point), −1: none.
      xt: (m_pad, d) the points, m_pad a multiple of 32·``groups``, in
        :func:`permuted` order.
      xt_sq: (m_pad,) their squared norms, permuted alike (+inf: padding).
      precision: the products' precision (``Precision.HIGHEST``: float32).
      interpret: run in Pallas' interpreter (None:
        :func:`platforms.kernels_interpreted`).
    """
    if interpret is None:
        interpret = platforms.kernels_interpreted()
    B, d = q.shape
    m_pad = xt.shape[0]
    tile = GROUP * groups

    def kernel(q_ref, q_sq_ref, own_ref, x_ref, x_sq_ref, out_ref):
        t = pl.program_id(1)
        qb, qs, mine = q_ref[...], q_sq_ref[...], own_ref[...]
        first = t * tile + jnp.arange(groups, dtype=jnp.int32) * GROUP  # member 0 of each group

        def member(j, low):
            x = x_ref[pl.ds(j * groups, groups), :]
            dots = jax.lax.dot_general(qb, x, (((1,), (1,)), ((), ())), precision=precision,
                                       preferred_element_type=jnp.float32)
            d2 = qs[:, None] - 2.0 * dots + x_sq_ref[pl.ds(j * groups, groups)][None, :]
            d2 = jnp.where(mine[:, None] == (first + j)[None, :], jnp.inf, d2)
            return jnp.minimum(low, d2)

        out_ref[...] = jax.lax.fori_loop(0, GROUP, member, jnp.full((block_rows, groups), jnp.inf, jnp.float32))

    rows = lambda i, t: (i, 0)  # noqa: E731
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((B, m_pad // GROUP), jnp.float32),
        grid=(B // block_rows, m_pad // tile),
        in_specs=[pl.BlockSpec((block_rows, d), rows), pl.BlockSpec((block_rows,), lambda i, t: (i,)),
                  pl.BlockSpec((block_rows,), lambda i, t: (i,)), pl.BlockSpec((tile, d), lambda i, t: (t, 0)),
                  pl.BlockSpec((tile,), lambda i, t: (t,))],
        out_specs=pl.BlockSpec((block_rows, groups), lambda i, t: (i, t)),
        interpret=interpret,
    )(q, q_sq, own, xt, xt_sq)
