"""Many devices: shard the class axis of the boosting state across a mesh,
and the query rows of the exact neighbour search.

Classes are independent (one-vs-rest), so the (m, C) edges, labels and α are
split along C with :class:`jax.sharding.NamedSharding`; the inverse
neighbourhoods and the example order are replicated.  The jitted loop is the
same function: XLA's SPMD partitioner runs each device's classes locally
(gathers and scatters are along rows, reductions along the members axis).
C is padded with all-zero label columns (r = 0, hence δ = 0) to a multiple of
the device count.  Multi-host: call ``jax.distributed.initialize()`` first on
every host; ``jax.devices()`` then lists all hosts' devices.

The exact neighbour search splits its query rows into equal slices, one a
device (``jax.shard_map`` over a 1-D ``"rows"`` mesh), with the training
points replicated: each device searches its slice against all points.
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["class_mesh", "row_mesh", "shard_classes", "shard_rows", "replicate", "pad_classes", "resolve_devices",
           "on_classes", "replicated"]

AXIS = "classes"
ROWS = "rows"


def class_mesh(devices) -> Mesh:
    """A 1-D mesh named ``"classes"`` from an int (first n devices), a list of
    devices or ``"all"``."""
    return Mesh(np.asarray(resolve_devices(devices)), (AXIS,))


def row_mesh(devices) -> Mesh:
    """A 1-D mesh named ``"rows"`` (query rows of the neighbour search)."""
    return Mesh(np.asarray(resolve_devices(devices)), (ROWS,))


def resolve_devices(devices) -> list:
    """The devices meant by an int (the first n), a list of devices or ``"all"``."""
    available = jax.devices()
    if isinstance(devices, str):
        if devices != "all":
            raise ValueError(f"devices must be an int, a list of devices or 'all', got {devices!r}")
        chosen = available
    elif isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        if not 1 <= int(devices) <= len(available):
            raise ValueError(f"devices={devices} but {len(available)} device(s) are available")
        chosen = available[: int(devices)]
    elif isinstance(devices, Sequence) and devices and all(isinstance(d, jax.Device) for d in devices):
        chosen = list(devices)
        if len(set(chosen)) != len(chosen):  # a mesh needs distinct devices (it raised a bare AssertionError)
            raise ValueError(f"devices lists a device more than once: {chosen}")
    else:
        raise TypeError(f"devices must be an int, a list of jax devices or 'all', got {devices!r}")
    return list(chosen)


def pad_classes(a, n_devices: int):
    """Pad the last axis with zero columns to a multiple of n_devices."""
    C = a.shape[-1]
    extra = (-C) % n_devices
    if extra == 0:
        return a
    return jnp.concatenate([a, jnp.zeros(a.shape[:-1] + (extra,), a.dtype)], axis=-1)


def shard_classes(a, mesh: Mesh):
    """Place an (m, C) array split along C."""
    return jax.device_put(a, NamedSharding(mesh, PartitionSpec(None, AXIS)))


def shard_rows(a, mesh: Mesh):
    """Place an array split along its first axis over the mesh's only axis."""
    return jax.device_put(a, NamedSharding(mesh, PartitionSpec(mesh.axis_names[0])))


def replicate(a, mesh: Mesh):
    """Place an array whole on every device of the mesh."""
    return jax.device_put(a, NamedSharding(mesh, PartitionSpec()))


def on_classes(a, devices):
    """An (m, C) array as a run on ``devices`` holds it: padded with zero
    columns (y = 0: δ = 0 there) to a multiple of the devices and split
    along C over their :func:`class_mesh`; ``devices`` None: ``a`` itself."""
    if devices is None:
        return a
    mesh = class_mesh(devices)
    return shard_classes(pad_classes(a, mesh.devices.size), mesh)


def replicated(tree, devices):
    """The arrays (JAX or NumPy) of a pytree (a run's inverse neighbourhoods, order,
    schedule, sample weights) whole on every device of the
    :func:`class_mesh` of ``devices``, other leaves as they are;
    ``devices`` None: ``tree`` itself."""
    if devices is None:
        return tree
    mesh = class_mesh(devices)
    return jax.tree_util.tree_map(lambda a: replicate(a, mesh) if isinstance(a, (jax.Array, np.ndarray)) else a, tree)
