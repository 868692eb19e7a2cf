"""tests/program_times.py, the plugin that sums JAX's tracing, lowering and
compiling by program: what it hears is what it writes, and its summary adds
the processes' records up."""

import collections
import json
import os
import sys

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(__file__))
import program_times  # noqa: E402


def test_a_compiled_program_is_heard_by_name_and_file(monkeypatch):
    monkeypatch.setattr(program_times, "_times", collections.defaultdict(program_times._times.default_factory))
    monkeypatch.setattr(program_times, "_file", ["tests/test_x.py"])

    def _program_times_probe(x):
        return x * 5.0 - 0.375

    listen = not program_times._listening[0]  # under ``-p program_times`` the plugin already listens
    if listen:
        jax.monitoring.register_event_duration_secs_listener(program_times._heard)
    try:
        jax.jit(_program_times_probe)(jnp.ones(3)).block_until_ready()
    finally:
        if listen:
            jax.monitoring.unregister_event_duration_listener(program_times._heard)
    trace, lower, compile_, compiles = program_times._times[("_program_times_probe", "tests/test_x.py")]
    assert compiles == 1 and trace > 0 and lower > 0 and compile_ > 0


def test_the_summary_adds_the_processes_records(tmp_path):
    records = {"1.json": [["boost", "tests/test_a.py", 1.0, 2.0, 3.0, 2], ["add", "tests/test_a.py", 0.0, 0.1, 0.1, 1]],
               "2.json": [["boost", "tests/test_b.py", 0.5, 0.5, 1.0, 1]]}
    for name, rows in records.items():
        (tmp_path / name).write_text(json.dumps(rows))
    lines = program_times.summary(str(tmp_path)).splitlines()
    assert lines[0] == "all programs: trace 1.5 s, lower 2.6 s, compile 4.1 s, 4 compilations"
    assert lines[2].split()[:5] == ["8.0", "1.5", "2.5", "4.0", "3"]
    assert lines[2].endswith("boost (test_a.py 2, test_b.py 1)")
    assert lines[3].split()[-3:] == ["add", "(test_a.py", "1)"]
