"""The greedy chooser's tournament tree against numpy's argmax.

The tree's functions run jitted, as inside the greedy chooser's program (one
compiled program per shape, where eager calls would compile each operation).
"""

import jax
import numpy as np
import jax.numpy as jnp
import pytest

from jaxnn._src import maxtree

build = jax.jit(maxtree.build, static_argnums=1)
add, add_pairs = jax.jit(maxtree.add), jax.jit(maxtree.add_pairs)
argmax, values = jax.jit(maxtree.argmax), jax.jit(maxtree.values)


def _check(tree, v, m):
    np.testing.assert_allclose(np.asarray(values(tree))[:m], v, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(argmax(tree)), np.abs(v).argmax(axis=0))


@pytest.mark.parametrize("m", [1, 8, 9, 65, 513])  # one leaf; a full level of 8; one over; one over 64, 512
@pytest.mark.parametrize("T", [2, 40])  # 2: levels repaired node by node; 40: whole
@pytest.mark.parametrize("branch", [2, 8])
@pytest.mark.slow
def test_add_then_argmax_matches_numpy(m, T, branch):
    rng = np.random.default_rng(m + T)
    C = 3
    v = rng.integers(-4, 5, (m, C)).astype(np.float32)  # small integers: many ties
    tree = build(jnp.asarray(v), branch)
    _check(tree, v, m)
    for _ in range(6):
        rows = rng.integers(0, m + 1, (T, C))  # row m: the engine's sentinel
        d = rng.integers(-3, 4, (T, C)).astype(np.float32)
        d[rows == m] = 0.0
        for c in range(C):
            np.add.at(v[:, c], rows[:, c][rows[:, c] < m], d[:, c][rows[:, c] < m])
        tree = add(tree, jnp.asarray(rows), jnp.asarray(d))
        _check(tree, v, m)


def test_ties_go_to_the_smallest_row_and_padding_never_wins():
    tree = build(jnp.zeros((10, 2)))
    np.testing.assert_array_equal(np.asarray(argmax(tree)), [0, 0])
    tree = add(tree, jnp.array([[7, 3], [2, 9]]), jnp.array([[-1.0, 1.0], [1.0, -1.0]]))
    np.testing.assert_array_equal(np.asarray(argmax(tree)), [2, 3])


@pytest.mark.parametrize("N", [3, 200])  # 3: levels repaired node by node; 200: whole
@pytest.mark.slow
def test_add_pairs_mixes_classes_and_accumulates_repeats(N):
    """``add_pairs`` takes entries of any classes in one list (the greedy
    step's (member, class) pairs), repeats included, against numpy."""
    rng = np.random.default_rng(N)
    m, C = 300, 4
    v = rng.integers(-4, 5, (m, C)).astype(np.float32)
    tree = build(jnp.asarray(v))
    for _ in range(8):
        rows = rng.integers(0, m + 1, N)
        rows[: N // 3] = rows[0]  # repeats of one entry accumulate
        cls = rng.integers(0, C, N)
        cls[: N // 3] = cls[0]
        d = rng.integers(-3, 4, N).astype(np.float32)
        d[rows == m] = 0.0
        real = rows < m
        np.add.at(v, (rows[real], cls[real]), d[real])
        tree = add_pairs(tree, jnp.asarray(rows), jnp.asarray(cls), jnp.asarray(d))
        _check(tree, v, m)
