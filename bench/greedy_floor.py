"""The greedy step without its chooser: what any exact greedy step costs.

A greedy step (``boosting._boost_greedy``) does two things: it *chooses*, per
class, the example with the largest |η|/n (``maxtree.argmax``, then the
tree's repair in ``maxtree.add_pairs``), and it *updates* — the edges of the
chosen examples' inverse neighbourhoods, and the η of every neighbour of a
member whose weight changed (≈ n_j·k random entries of the (m, C) table per
class).  The update is the algorithm itself: any exact implementation does
it, whatever structure finds the argmax.

:class:`FloorRun` runs ``boosting.boost`` compiled from a private copy of
``jaxnn._src.boosting`` whose max tree is replaced by :data:`FLAT_LEAVES` —
the same leaf array and scatter-add of the changes, no levels above it, and
a pseudo-random row per class and step instead of the argmax.  Its per-step
time is the update's; the greedy step's minus it is the chooser's.  (The
pseudo-random rows have n_j = k on average where the greedy picks, at steps
1000–9000 on these graphs, have 7.4–9.5: the floor does slightly more
update work, so the chooser's share is if anything under-counted.)

Benchmark-only: the engine has no such mode; asv ``bench_fit.GreedyFloor``
and ``python -m bench.greedy_floor`` use it.  :func:`greedy_picks` runs a
copy of the engine whose chooser reports its picks (``bench.common.Run``'s
edge updates of a greedy run).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np

from jaxnn._src import boosting, maxtree


def _build(v, branch: int = maxtree.BRANCH) -> maxtree.MaxTree:
    """The leaves of :func:`maxtree.build` (flat, class-major, (C·n_0,)) and a
    step counter in place of the levels above."""
    m, C = v.shape
    n0 = maxtree.round_up(m + 1, branch)
    leaves = jnp.zeros((C, n0), v.dtype).at[:, :m].set(v.T).reshape(-1)
    return maxtree.MaxTree((leaves, jnp.zeros((), jnp.uint32)), (n0, 1), branch)


def _pseudo_random_rows(tree: maxtree.MaxTree):
    """(C,) uint32 rows < m, a multiplicative hash of the step counter and the
    class (a different, scattered row every step, as greedy picks are on a
    random graph)."""
    n0 = tree.sizes[0]
    C = tree.levels[0].shape[0] // n0
    t = tree.levels[1]
    h = (t * jnp.uint32(2654435761)) ^ (jnp.arange(C, dtype=jnp.uint32) * jnp.uint32(40503))
    h = (h ^ (h >> 15)) * jnp.uint32(2246822519)
    return (h ^ (h >> 13)) % jnp.uint32(n0 - tree.branch)  # n0 − branch ≤ m


def _add_pairs(tree: maxtree.MaxTree, rows, cls, deltas) -> maxtree.MaxTree:
    """The leaf scatter-add of :func:`maxtree.add_pairs`, no repair; counts the step."""
    leaves = tree.levels[0].at[cls.astype(jnp.uint32) * tree.sizes[0] + rows.astype(jnp.uint32)].add(deltas)
    return dataclasses.replace(tree, levels=(leaves, tree.levels[1] + 1))


#: a stand-in for :mod:`jaxnn._src.maxtree` with the tree's leaves and no chooser
FLAT_LEAVES = types.SimpleNamespace(build=_build, argmax=_pseudo_random_rows, add_pairs=_add_pairs)


def _engine_copy(name: str, tree) -> types.ModuleType:
    """A private copy of ``jaxnn._src.boosting`` (its own jit caches, so the
    engine's compiled programs are left as they are) whose greedy step uses
    ``tree`` in place of :mod:`maxtree`."""
    name = f"jaxnn._src._boosting_{name}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, boosting.__file__)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.maxtree = tree
        sys.modules[name] = module
    return sys.modules[name]


def _floor_module():
    """:func:`_engine_copy` whose greedy step uses :data:`FLAT_LEAVES`."""
    return _engine_copy("floor", FLAT_LEAVES)


#: the (C,) rows each greedy step of :func:`greedy_picks`'s call picked, in order
_PICKS: list = []


def _recorded_argmax(tree: maxtree.MaxTree):
    """:func:`maxtree.argmax`, each step's (C,) rows appended to :data:`_PICKS` on the host."""
    rows = maxtree.argmax(tree)
    jax.debug.callback(lambda r: _PICKS.append(np.asarray(r).copy()), rows, ordered=True)
    return rows


#: :mod:`maxtree` with its argmax recorded (everything else the module's own)
RECORDING = types.SimpleNamespace(**{**vars(maxtree), "argmax": _recorded_argmax})


def greedy_picks(run) -> np.ndarray:
    """(steps, C) rows the greedy chooser of the greedy ``bench.common.Run``
    ``run`` picks, class by class, step by step: the same arguments through
    a copy of the engine whose chooser reports its picks (compiled apart;
    the same program otherwise, so the same picks)."""
    boost = _engine_copy("recording", RECORDING).boost
    _PICKS.clear()
    jax.block_until_ready(boost(*run._args, **dict(run._kwargs, greedy=True)))
    jax.effects_barrier()
    picks = np.stack(_PICKS) if _PICKS else np.zeros((0, run.problem.C), np.int64)
    _PICKS.clear()
    return picks


class FloorRun:
    """The floor of a greedy ``bench.common.Run``: the same arguments through
    the private copy's ``boost`` (its α is meaningless); ``compile()``
    compiles it ahead of time."""

    def __init__(self, run):
        self._boost = _floor_module().boost
        self._args, self._kwargs = run._args, dict(run._kwargs, greedy=True)

    def compile(self) -> None:
        from .common import warm

        warm(self._boost, *self._args, **self._kwargs)

    def __call__(self):
        return self._boost(*self._args, **self._kwargs)


def greedy_and_floor_runs(problem, short: int, long: int) -> list:
    """[greedy short, greedy long, floor short, floor long], compiled."""
    greedy = [problem.runner("gnnb", "greedy", rounds=r) for r in (short, long)]
    runs = greedy + [FloorRun(run) for run in greedy]
    for run in runs:
        run.compile()
    return runs


def per_step_microseconds(runs: list, short: int, long: int) -> tuple:
    """(greedy, update alone) µs a step, (t(long) − t(short)) / (long −
    short), the four :func:`greedy_and_floor_runs` sampled round-robin."""
    from .common import interleaved_best

    t = interleaved_best(runs, repeat=5)
    per = (long - short) / 1e6
    return max(t[1] - t[0], 0.0) / per, max(t[3] - t[2], 0.0) / per


def main(sizes=(10_000, 100_000, 1_000_000)) -> None:
    """Print, per m, the greedy step, its update alone (the floor) and their
    difference (the chooser), µs a step over steps 1000–9000, on asv
    ``GreedyFloor``'s problems."""
    from .bench_fit import greedy_problem

    for m in sizes:
        g, f = per_step_microseconds(greedy_and_floor_runs(greedy_problem(m), 1000, 9000), 1000, 9000)
        print(f"m = {m:>9,}: greedy step {g:6.1f} µs, update alone {f:6.1f} µs, chooser {g - f:6.1f} µs", flush=True)


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or (10_000, 100_000, 1_000_000))
