"""Wall time of a new process's first calls (compilation included): not an asv
benchmark (asv times warm calls in one process) but a script, each run a fresh
process.  Compare two versions as the closing notes do, alternating runs::

    python bench/first_calls.py fit-auto 250            # this checkout
    PYTHONPATH=/tmp/old python bench/first_calls.py fit-auto 250   # a copy: git archive REV jaxnn | tar -x -C /tmp/old
    python bench/first_calls.py ripley                  # fit + predict + predict_proba on Ripley's data, import included
    python bench/first_calls.py warm 20000 16           # first and three warm fits (posterior="auto")

Modes: ``fit-auto`` / ``fit-link`` M (d = 8, two classes; the first and a
second fit), ``ripley``, ``warm`` M D (five Gaussian classes).  Prints seconds;
``jaxnn.__file__`` is printed too, to show which copy ran.
"""

from __future__ import annotations

import sys
import time


def main(argv: list[str]) -> None:
    start = time.perf_counter()
    import jax
    import numpy as np

    import jaxnn

    mode = argv[0] if argv else "fit-auto"
    rng = np.random.default_rng(0)

    def timed(call):
        t = time.perf_counter()
        out = call()
        jax.block_until_ready(jax.tree_util.tree_leaves(out))
        return time.perf_counter() - t

    if mode in ("fit-auto", "fit-link"):
        m = int(argv[1]) if len(argv) > 1 else 250
        X = rng.normal(size=(m, 8)).astype(np.float32)
        y = (X[:, 0] + 0.5 * rng.normal(size=m) > 0).astype(int)
        posterior = mode.removeprefix("fit-")
        times = [timed(lambda: jaxnn.fit(X, y, k=10, posterior=posterior).alpha) for _ in range(2)]
        print(f"{mode} m={m}: first {times[0]:.3f} s, second {times[1]:.3f} s")
    elif mode == "ripley":
        data = jaxnn.datasets.ripley()
        model = jaxnn.fit(data.X_train, data.y_train, k=5)
        accuracy = float(np.mean(np.asarray(jaxnn.predict(model, data.X_test)) == data.y_test))
        np.asarray(jaxnn.predict_proba(model, data.X_test))
        print(f"ripley: {time.perf_counter() - start:.2f} s with the import, test accuracy {accuracy:.3f}")
    elif mode == "warm":
        m, d = int(argv[1]), int(argv[2])
        centers = rng.normal(scale=2, size=(5, d))
        y = rng.integers(0, 5, m)
        X = (centers[y] + rng.normal(size=(m, d))).astype(np.float32)
        times = [timed(lambda: jaxnn.fit(X, y, k=10, seed=1).alpha) for _ in range(4)]
        print(f"warm m={m} d={d}: first {times[0]:.2f} s, warm " + " ".join(f"{t:.3f}" for t in times[1:]))
    else:
        raise SystemExit(f"unknown mode {mode!r}: fit-auto, fit-link, ripley or warm")
    print(f"(jaxnn from {jaxnn.__file__})")


if __name__ == "__main__":
    main(sys.argv[1:])
