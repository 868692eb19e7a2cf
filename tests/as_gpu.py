"""pytest plugin: jaxnn's layout choices as on a GPU, the computations still on the CPU.

``PYTHONPATH=tests python -m pytest -p as_gpu tests/test_engine.py …`` runs tests
with :func:`jaxnn._src.platforms.platform` answering ``"gpu"`` where it would
answer ``"cpu"``: ``chooser="auto"`` picks the colored schedule, steps run at
full width with no windows, the search takes its accelerator layout.  A test
that fails only here assumes the CPU's choices (the lazy chooser, the
windowed scan) and would fail on a real GPU; CI, which has none, cannot see
it otherwise.  Tests of the platform plumbing itself (``platforms.platform``,
the search's layout per platform, the CPU-only slow-search warning) compare
with JAX's real backend and are expected to fail here.
"""

from jaxnn._src import platforms

_real_platform = platforms.platform


def _platform_as_gpu(devices=None) -> str:
    platform = _real_platform(devices)
    return "gpu" if platform == "cpu" else platform


platforms.platform = _platform_as_gpu
