"""The boosting plan: every engine decision of a fit, made in one place.

:func:`make_plan` reads the problem (m examples, C classes, T rounds, the
number of feature blocks), the user's settings (``chooser``, ``devices``) and
the platform (:mod:`jaxnn._src.platforms`), and returns a :class:`Plan`;
:func:`jaxnn._src.boost_runs.run` (one graph), ``run_blocks`` (the blocks of
``fit_split``) and ``pass_runner`` (``select``'s passes) carry it out with
the engine of :attr:`Plan.schedule` (``boost_runs.ENGINES``).
``fit``, ``posterior="auto"``'s auxiliary fit, ``select`` and ``fit_split``
all plan this way; none of them chooses an engine itself.

=========  ==================================================================
decision   rule
=========  ==================================================================
chooser    ``"auto"``: ``"colored"`` for whole passes where
           :func:`platforms.colored_by_default` says so, else ``"lazy"``
windowed   lazy/random steps on one device of a platform that
           :func:`platforms.runs_windows`, from m·C ≥ ``WINDOWED_MIN_STATE``,
           one block, no sample weights
shared     on one device, m ≤ ``SHARED_MAX_ROWS``: the run padded to sizes
           that nearby m share (one compiled program for cross-validation
           folds), except the colored schedule of several blocks
narrow     steps at the narrowest width ≥ n_j: :func:`platforms.narrows_steps`
           (:func:`narrow_steps`, also the engines' default without a plan)
devices    None (the default device) or the devices the class axis is
           sharded across
=========  ==================================================================
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from jaxnn._src import platforms, shared_sizes

__all__ = ["Plan", "make_plan", "auto_chooser", "check_chooser", "chooser_order", "chooser_orders", "CHOOSERS",
           "WINDOWED_MIN_STATE", "narrow_steps"]

#: the windowed scan is used from this many edge-state entries (m·C) on: 256 KB
#: of float32, where XLA on CPU starts splitting gathers and scatters across
#: its thread pool
WINDOWED_MIN_STATE = 1 << 16


CHOOSERS = ("lazy", "random", "greedy", "colored")


def check_chooser(chooser) -> None:
    """TypeError or ValueError unless ``chooser`` is ``"auto"`` or one of
    :data:`CHOOSERS`: its one declaration (``params.PARAMS["chooser"]``)."""
    from jaxnn._src.params import check  # params reads CHOOSERS from here

    check("chooser", chooser)


def chooser_order(chooser: str, m: int, rounds: int, seed: int) -> np.ndarray:
    """The example sequence of the lazy and random choosers, (rounds,) int32
    (zeros for greedy, whose steps choose; any other chooser: ValueError —
    the colored schedule's sequence depends on the graph,
    :func:`jaxnn._src.schedule.colored_order`)."""
    if chooser == "lazy":
        return (np.arange(rounds) % m).astype(np.int32)
    if chooser == "random":
        rng = np.random.default_rng(seed)
        passes = -(-rounds // m)
        return np.concatenate([rng.permutation(m) for _ in range(passes)])[:rounds].astype(np.int32)
    if chooser == "greedy":  # the sequence is decided inside the loop; only its length matters
        return np.zeros(rounds, dtype=np.int32)
    raise ValueError(f"chooser {chooser!r} has no fixed example sequence here; use 'lazy', 'random' or 'greedy'")


def chooser_orders(chooser: str, m: int, rounds: int, seed: int, segment: int):
    """The T = ``rounds`` steps in segments of at most ``segment`` steps (a
    multiple of m): yields (steps, order) per segment, ``order`` the segment's
    slice of :func:`chooser_order`'s sequence — the random chooser's
    permutations drawn from one generator, pass after pass — or None for the
    colored schedule, whose passes follow the graph."""
    rng = np.random.default_rng(seed) if chooser == "random" else None
    for start in range(0, rounds, segment):
        steps = min(segment, rounds - start)
        if chooser == "colored":
            yield steps, None
        elif chooser == "random":
            passes = -(-steps // m)
            yield steps, np.concatenate([rng.permutation(m) for _ in range(passes)])[:steps].astype(np.int32)
        else:
            yield steps, chooser_order(chooser, m, steps, seed)


class Plan(NamedTuple):
    """How a boosting run is carried out.

    Attributes:
      chooser: ``"lazy"``, ``"random"``, ``"greedy"`` or ``"colored"``
        (never ``"auto"``).
      windowed: the lazy/random steps run in windows (:mod:`jaxnn._src.window`).
      shared: the run is padded to shared sizes (:mod:`jaxnn._src.shared_sizes`).
      narrow: steps run at the narrowest width ≥ n_j
        (:func:`jaxnn._src.steps.step_widths`), else at full width.
      platform: where the run computes (``"cpu"``, ``"gpu"``, ``"tpu"``).
      devices: None, or the devices whose mesh shards the class axis.
    """

    chooser: str
    windowed: bool
    shared: bool
    narrow: bool
    platform: str
    devices: Any = None

    @property
    def greedy(self) -> bool:
        """Whether the steps choose their own examples (GNNB*, N³'s WEO)."""
        return self.chooser == "greedy"

    @property
    def schedule(self) -> str:
        """The schedule that runs the steps, the key of its engine in
        :data:`jaxnn._src.boost_runs.ENGINES`: ``"colored"``,
        ``"windowed"``, ``"greedy"`` or ``"scan"`` (the lazy and random
        choosers' sequential scan)."""
        if self.chooser == "colored":
            return "colored"
        if self.windowed:
            return "windowed"
        return "greedy" if self.greedy else "scan"


def auto_chooser(m: int, rounds: int, platform: str, n_classes: int = 1) -> str:
    """What ``chooser="auto"`` runs: ``"colored"`` when ``rounds`` is a
    multiple of m (the schedule runs whole passes) and
    :func:`platforms.colored_by_default` holds for m·C on ``platform``;
    else ``"lazy"``.  Both visit every example once per pass."""
    if rounds % m:
        return "lazy"
    return "colored" if platforms.colored_by_default(m, n_classes, platform) else "lazy"


def narrow_steps(platform: str | None = None) -> bool:
    """The plan's ``narrow`` on ``platform`` (default: where computations run
    now, :func:`platforms.platform`): whether sequential and greedy steps run
    at the narrowest width ≥ n_j (:func:`platforms.narrows_steps`).  An
    engine called without a plan's decision (``narrow=None``) takes this."""
    return platforms.narrows_steps(platform)


def make_plan(m: int, n_classes: int, rounds: int, chooser: str = "auto", devices=None, *, blocks: int = 1,
              like: Plan | None = None, weighted: bool = False) -> Plan:
    """The :class:`Plan` of T = ``rounds`` steps on m examples and C =
    ``n_classes`` classes, for one graph or ``blocks`` feature blocks boosted
    together, with ``chooser`` as given to ``fit`` and ``devices`` (None, an
    int, a list of devices or ``"all"``).

    ``like``: the plan of a fit whose compiled programs this one is to reuse
    (``posterior="auto"``'s auxiliary fit on 80 % of the main fit's data): its
    chooser and windowing are kept.  ``weighted``: the run boosts a
    sample-weighted risk, which the windowed scan does not carry (the same
    steps then run in the plain scan).

    Raises ValueError for an unknown chooser, and for ``"colored"`` when
    ``rounds`` is not a multiple of m (the schedule runs whole passes)."""
    check_chooser(chooser)
    platform = platforms.platform(devices)  # checks devices too
    if like is not None:
        chooser = like.chooser
    elif chooser == "auto":
        chooser = auto_chooser(m, rounds, platform, n_classes)
    if chooser == "colored" and rounds % m:
        raise ValueError(f"chooser='colored' runs whole passes: rounds must be a multiple of m={m}, got {rounds}")
    one_device = devices is None
    windowed = (chooser in ("lazy", "random") and one_device and blocks == 1 and not weighted
                and m * n_classes >= WINDOWED_MIN_STATE and platforms.runs_windows(platform))
    if like is not None:
        windowed = (windowed or like.windowed) and not weighted
    shared = one_device and m <= shared_sizes.SHARED_MAX_ROWS and not (blocks > 1 and chooser == "colored")
    return Plan(chooser, windowed, shared, narrow_steps(platform), platform, devices)
