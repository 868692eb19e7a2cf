"""jaxnn's airspeed-velocity (asv) benchmark suite.

Run from the repository root: ``asv run --python=same --quick`` (see
the README, "Benchmarks").  ``JAXNN_BENCH_QUICK=1`` shrinks every data set
to a smoke-test size (``bench/common.py``).
"""
