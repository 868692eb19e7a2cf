"""pytest plugin: the seconds JAX spends tracing, lowering and compiling (or
loading from the cache) each program, summed by program name over a run.

``PROGRAM_TIMES_DIR=/tmp/t PYTHONPATH=tests python -m pytest -p program_times …``
leaves one JSON file a process (each pytest-xdist worker its own) in the
folder; ``python tests/program_times.py /tmp/t`` then prints the programs by
time, with their compilations and the test files that compiled them most.
The durations are ``jax.monitoring``'s (``jaxpr_trace_duration``,
``jaxpr_to_mlir_module_duration``, ``backend_compile_duration``); an eager
operation is the program ``jit(<primitive>)``.  Set
``JAXNN_TEST_CACHE_DIR`` to an empty folder to see a first run's compiling.
"""

from __future__ import annotations

import collections
import json
import os
import sys

#: jax.monitoring's events, by the column they add to: trace, lower, compile
EVENTS = {"/jax/core/compile/jaxpr_trace_duration": 0,
          "/jax/core/compile/jaxpr_to_mlir_module_duration": 1,
          "/jax/core/compile/backend_compile_duration": 2}

_file = [""]  # the test file running
_listening = [False]  # whether pytest_configure registered _heard (``-p program_times``)
#: (program, test file) -> [trace s, lower s, compile s, compilations]
_times: dict = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])


def _heard(event, seconds, **kwargs):
    column = EVENTS.get(event)
    if column is None:
        return
    row = _times[(str(kwargs.get("fun_name", "?")).removeprefix("jit(").removesuffix(")"), _file[0])]
    row[column] += seconds
    row[3] += column == 2


def pytest_configure(config):
    if not os.environ.get("PROGRAM_TIMES_DIR"):
        raise SystemExit("program_times: set PROGRAM_TIMES_DIR to the folder for the per-process records")
    import jax.monitoring

    jax.monitoring.register_event_duration_secs_listener(_heard)
    _listening[0] = True


def pytest_runtest_setup(item):
    _file[0] = item.nodeid.split("::")[0]


def pytest_unconfigure(config):
    folder = os.environ["PROGRAM_TIMES_DIR"]
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{os.getpid()}.json"), "w") as f:
        json.dump([[name, file, *row] for (name, file), row in _times.items()], f)


def summary(folder: str, top: int = 30) -> str:
    """The programs of the records in ``folder`` by trace + lower + compile seconds."""
    total: dict = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    files: dict = collections.defaultdict(collections.Counter)
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name)) as f:
            for program, file, *row in json.load(f):
                for i, value in enumerate(row):
                    total[program][i] += value
                files[program][file] += row[3]
    sums = [sum(row[i] for row in total.values()) for i in range(4)]
    lines = [f"all programs: trace {sums[0]:.1f} s, lower {sums[1]:.1f} s, compile {sums[2]:.1f} s, "
             f"{sums[3]} compilations",
             f"{'seconds':>8} {'trace':>7} {'lower':>7} {'compile':>8} {'compiles':>8}  program (files compiling it most)"]
    for program, row in sorted(total.items(), key=lambda item: -sum(item[1][:3]))[:top]:
        most = ", ".join(f"{file.rsplit('/', 1)[-1]} {n}" for file, n in files[program].most_common(3) if n)
        lines.append(f"{sum(row[:3]):8.1f} {row[0]:7.1f} {row[1]:7.1f} {row[2]:8.1f} {row[3]:8d}  {program} ({most})")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit("usage: python tests/program_times.py FOLDER [TOP]")
    print(summary(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30))
