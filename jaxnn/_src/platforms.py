"""Every rule that depends on the platform a computation runs on.

jaxnn lays some computations out differently on a CPU (small steps that
stay in cache, with inner control flow) and on a GPU or TPU (wide steps with
no inner control flow, one kernel each).  Each such rule is one function
here, and nothing else in the package compares platform names:

=============================  ==============================================
rule                           CPU                      GPU / TPU
=============================  ==============================================
:func:`narrows_steps`          steps narrowed to n_j    full-width steps
:func:`runs_windows`           windowed sequential scan plain scan
:func:`colored_by_default`     from m ≥ 5·10⁵ or        whole passes, any size
                               m·C ≥ 5·10⁶
:func:`search_tile_elements`   2²⁴ distances a tile     2²⁷
:func:`chunked_search`         from m ≥ 32 768          never
:func:`fused_search`           never                    GPU: from m ≥ 32 768
:func:`schedule_step_elements` 2¹⁷ edge updates a step  2²⁰
:func:`warns_slow_search`      yes                      no
:func:`compiler_options`       small programs: no       XLA's defaults
                               fusion emitters
=============================  ==============================================

:func:`platform` says where a computation runs; every rule takes that
platform name (default: :func:`platform` now).
"""

from __future__ import annotations

import jax

from jaxnn._src import sharding

__all__ = ["platform", "is_cpu", "on_host", "narrows_steps", "runs_windows", "colored_by_default",
           "search_tile_elements", "chunked_search", "fused_search", "kernels_interpreted", "schedule_step_elements",
           "warns_slow_search", "compiler_options", "AUTO_COLORED_MIN_STATE_CPU",
           "AUTO_COLORED_MIN_ROWS_CPU", "SMALL_PROGRAM_ELEMENTS"]

#: platforms whose sequential and greedy steps are narrowed to n_j
#: (:func:`jaxnn._src.steps.step_widths`) and whose greedy updates loop over
#: pairs: a GPU runs a switch and an inner loop as separate kernels, with the
#: loop's predicate read back by the host every iteration.
NARROW_PLATFORMS = ("cpu",)
#: platforms whose lazy and random steps run in windows (:mod:`jaxnn._src.window`):
#: windows keep a CPU's working set in cache; elsewhere the plain scan is faster.
WINDOWED_PLATFORMS = ("cpu",)
#: m·C from which ``chooser="auto"`` runs the colored schedule on a CPU too
#: (an accelerator runs it for whole passes at any size)
AUTO_COLORED_MIN_STATE_CPU = 5_000_000
#: m from which ``chooser="auto"`` runs the colored schedule on a CPU at any C:
#: from there a first fit, which compiles the colouring, takes about as long
#: as the windowed scan's, and later ones half as long (docs/performance.md,
#: lazy against colored ``fit`` on CPU)
AUTO_COLORED_MIN_ROWS_CPU = 500_000
#: platforms whose exact search fuses its first stage into one kernel
FUSED_SEARCH_PLATFORMS = ("gpu",)
#: elements of one (block × m) distance tile of the exact search: 2²⁴ float32
#: (64 MiB) on a CPU, 2²⁷ (512 MiB) on an accelerator
SEARCH_TILE_ELEMENTS = {"cpu": 1 << 24}
SEARCH_TILE_ELEMENTS_ACCELERATOR = 1 << 27
#: edge × class updates of one colored-schedule step: on a CPU the step's
#: (L, C) arrays stay in a 2 MiB L2 cache (larger steps outgrow it and run
#: slower; docs/performance.md); on an accelerator 2²⁰ (every step is padded
#: to the largest, and the first colours of a largest-first colouring are
#: the largest by far: steps of whole colours ran a pass slower on a GPU,
#: docs/performance.md)
SCHEDULE_STEP_ELEMENTS = {"cpu": 1 << 17}
SCHEDULE_STEP_ELEMENTS_ACCELERATOR = 1 << 20
#: entries of a program's array arguments up to which a CPU compiles it
#: without XLA's fusion emitters (:func:`compiler_options`): a small fit's
#: programs compile in about two thirds of the time and run as fast, where
#: compiling is most of what a small fit costs (docs/performance.md)
SMALL_PROGRAM_ELEMENTS = 1 << 20
#: XLA's options for such a program (``jax.jit``'s ``compiler_options``)
SMALL_PROGRAM_OPTIONS = (("xla_cpu_use_fusion_emitters", False),)


def platform(devices=None) -> str:
    """Where a computation runs: the platform (``"cpu"``, ``"gpu"``, ``"tpu"``)
    of ``devices`` when given (an int, a list of devices or ``"all"``), else
    of the ``jax.default_device`` in force, else of JAX's default backend."""
    if devices is not None:
        return sharding.resolve_devices(devices)[0].platform
    default = jax.config.jax_default_device
    if default is None:
        return jax.default_backend()
    return default.platform if isinstance(default, jax.Device) else str(default)


def _named(name: str | None) -> str:
    return name if name is not None else platform()


def is_cpu(name: str | None = None) -> bool:
    """Whether ``name`` (default: :func:`platform`) is the host CPU."""
    return _named(name) == "cpu"


def on_host(array) -> bool:
    """Whether the concrete JAX ``array`` lives on host CPU devices only, where
    NumPy reads it without a copy over a bus (False for a tracer, a deleted
    array or anything that is not a JAX array)."""
    try:
        return all(device.platform == "cpu" for device in array.devices())
    except (AttributeError, RuntimeError):  # not a committed JAX array, or deleted
        return False


def narrows_steps(name: str | None = None) -> bool:
    """Whether sequential and greedy steps may run at the narrowest width ≥ n_j."""
    return _named(name) in NARROW_PLATFORMS


def runs_windows(name: str | None = None) -> bool:
    """Whether the lazy and random choosers' steps may run windowed."""
    return _named(name) in WINDOWED_PLATFORMS


def colored_by_default(m: int, n_classes: int, name: str | None = None) -> bool:
    """Whether ``chooser="auto"`` runs whole passes as the colored schedule:
    on an accelerator always, on a CPU from m ≥ :data:`AUTO_COLORED_MIN_ROWS_CPU`
    or m·C ≥ :data:`AUTO_COLORED_MIN_STATE_CPU`."""
    return (not is_cpu(name) or m >= AUTO_COLORED_MIN_ROWS_CPU
            or m * int(n_classes) >= AUTO_COLORED_MIN_STATE_CPU)


def search_tile_elements(name: str | None = None) -> int:
    """Distances in one (block × m) tile of the exact search."""
    return SEARCH_TILE_ELEMENTS.get(_named(name), SEARCH_TILE_ELEMENTS_ACCELERATOR)


def chunked_search(name: str | None = None) -> bool:
    """Whether the exact search may select candidates chunk by chunk (a CPU's
    cache-sized tiles; an accelerator searches a tile in one pass)."""
    return is_cpu(name)


def fused_search(name: str | None = None) -> bool:
    """Whether the exact search's first stage may run as one Pallas kernel
    (:mod:`jaxnn._src.group_minima`: Triton, on a GPU), the distances
    reduced to group minima in registers instead of written out a tile at a
    time."""
    return _named(name) in FUSED_SEARCH_PLATFORMS


def kernels_interpreted() -> bool:
    """Whether a Pallas kernel runs in Pallas' interpreter: where JAX's
    backend is a CPU (which compiles no Pallas kernel) — tests, and layouts
    chosen as on a GPU on a CPU (tests/as_gpu.py)."""
    return jax.default_backend() == "cpu"


def schedule_step_elements(name: str | None = None) -> int:
    """Edge × class updates a colored-schedule step aims at."""
    return SCHEDULE_STEP_ELEMENTS.get(_named(name), SCHEDULE_STEP_ELEMENTS_ACCELERATOR)


def warns_slow_search(name: str | None = None) -> bool:
    """Whether a brute-force search of many pairs warns that it will be slow."""
    return is_cpu(name)


def compiler_options(elements: int, name: str | None = None) -> tuple:
    """XLA's compiler options, as (option, value) pairs, for a program whose
    array arguments hold ``elements`` entries: on a CPU, up to
    :data:`SMALL_PROGRAM_ELEMENTS`, :data:`SMALL_PROGRAM_OPTIONS` (XLA's
    fusion emitters off: fusions compiled by its older CPU emitters, quicker
    to compile and as quick to run at these sizes); else none (XLA's
    defaults).  A program that runs slower without the emitters at any size
    (the colored schedule's colouring) keeps the defaults
    (:func:`jaxnn._src.programs.jit`'s ``fused``)."""
    return SMALL_PROGRAM_OPTIONS if is_cpu(name) and int(elements) <= SMALL_PROGRAM_ELEMENTS else ()
