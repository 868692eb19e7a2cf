"""jaxnn's airspeed-velocity (asv) benchmark suite.

Run from the repository root: ``asv run --python=same --quick`` (see
the README, "Benchmarks").  ``JAXNN_BENCH_QUICK=1`` shrinks every data set
to a smoke-test size (``bench/common.py``).
"""

import os

# benchmarks measure compilation: jaxnn's persistent compilation cache (on by
# default) stays off unless JAXNN_CACHE_DIR names one — set here, before any
# benchmark module imports jaxnn
os.environ.setdefault("JAXNN_CACHE_DIR", "")
