"""jaxnn's compilation cache (jaxnn.config): on by default in the user's cache
folder, moved or turned off by JAXNN_CACHE_DIR and set_cache_dir, the user's
own JAX cache left alone, and entries cut short by a killed process deleted.

The cache is process-wide JAX configuration, and this test process has
tests/conftest.py's own: whatever turns jaxnn's on runs in a new process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib

import pytest

from jaxnn import config
from jaxnn._src import cli
from jaxnn._src import config as config_impl


def test_the_folder_follows_the_environment(tmp_path):
    assert config.default_cache_dir({"JAXNN_CACHE_DIR": str(tmp_path)}) == str(tmp_path)
    assert config.default_cache_dir({"JAXNN_CACHE_DIR": ""}) is None
    assert config.default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == str(tmp_path / "jaxnn" / "xla")
    assert config.default_cache_dir({"XDG_CACHE_HOME": ""}).endswith(os.path.join(".cache", "jaxnn", "xla"))
    assert config.default_cache_dir({}) == os.path.join(os.path.expanduser("~"), ".cache", "jaxnn", "xla")
    # one place decides: the command line asks the library
    for env in ({"JAXNN_CACHE_DIR": str(tmp_path)}, {"JAXNN_CACHE_DIR": ""}, {"XDG_CACHE_HOME": str(tmp_path)}, {}):
        assert cli.compilation_cache_dir(env) == config.default_cache_dir(env)


# --------------------------------------------------------------------------
# entries cut short (no JAX configuration touched: plain files)
# --------------------------------------------------------------------------
def _entry(folder, key: str, payload: bytes, *, atime: bool = True) -> str:
    path = folder / f"{key}-cache"
    path.write_bytes(payload)
    if atime:
        (folder / f"{key}-atime").write_bytes((1).to_bytes(8, "little"))
    return path.name


@pytest.mark.parametrize("locked", [False, True])
def test_entries_cut_short_are_deleted_and_whole_ones_kept(tmp_path, locked):
    if locked:
        pytest.importorskip("filelock")
    whole = zlib.compress(os.urandom(5000) + bytes(20000))
    _entry(tmp_path, "jit_f-aa", whole)
    _entry(tmp_path, "jit_g-bb", whole, atime=False)  # written without JAX's size limit: no last-use stamp
    cut = _entry(tmp_path, "jit_h-cc", whole[: len(whole) // 2])  # a process killed while JAX wrote it
    empty = _entry(tmp_path, "jit_i-dd", b"")
    dropped = config.drop_cut_short(str(tmp_path), locked=locked)
    assert sorted(dropped) == sorted([cut, empty])
    names = set(os.listdir(tmp_path))
    assert {"jit_f-aa-cache", "jit_f-aa-atime", "jit_g-bb-cache"} <= names
    assert not {"jit_h-cc-cache", "jit_h-cc-atime", "jit_i-dd-cache"} & names
    # only entries written since the last check are read again
    os.utime(tmp_path / "jit_f-aa-cache", ns=(1, 1))
    (tmp_path / "jit_f-aa-cache").write_bytes(whole[:100])
    os.utime(tmp_path / "jit_f-aa-cache", ns=(1, 1))  # as if it had been cut short long ago
    assert config.drop_cut_short(str(tmp_path), locked=locked) == []
    late = _entry(tmp_path, "jit_j-ee", whole[:-3])
    assert config.drop_cut_short(str(tmp_path), locked=locked) == [late]


@pytest.mark.parametrize("locked", [False, True])
def test_past_the_size_limit_the_least_recently_used_entries_go(tmp_path, locked):
    if locked:
        pytest.importorskip("filelock")
    whole = zlib.compress(os.urandom(3000))
    names = [_entry(tmp_path, f"jit_f-{i:02d}", whole) for i in range(6)]
    assert config.drop_cut_short(str(tmp_path), locked=locked, max_size=10 * len(whole)) == []  # read: whole
    for i, name in enumerate(names):  # used in the order 3, 0, 5, 1, 4, 2 (seconds apart), long ago
        when = (10 + [3, 0, 5, 1, 4, 2].index(i)) * 10**9
        os.utime(tmp_path / name, ns=(when, when))
    dropped = config.drop_cut_short(str(tmp_path), locked=locked, max_size=4 * len(whole))
    assert dropped == [names[3], names[0]]
    left = set(os.listdir(tmp_path))
    assert not {"jit_f-03-cache", "jit_f-03-atime", "jit_f-00-cache", "jit_f-00-atime"} & left
    assert {f"jit_f-{i:02d}-cache" for i in (5, 1, 4, 2)} <= left
    # an entry read since (a later access time) outlives one written later but never read
    os.utime(tmp_path / names[5], ns=(99 * 10**9, 11 * 10**9))
    assert config.drop_cut_short(str(tmp_path), locked=locked, max_size=3 * len(whole)) == [names[1]]


# --------------------------------------------------------------------------
# new processes
# --------------------------------------------------------------------------
_FIT = """
import json, sys, warnings
import jax
events = {"requests": 0, "hits": 0}
def listen(event, **kwargs):
    if event == "/jax/compilation_cache/compile_requests_use_cache":
        events["requests"] += 1
    elif event == "/jax/compilation_cache/cache_hits":
        events["hits"] += 1
jax.monitoring.register_event_listener(listen)
import numpy as np, jaxnn
X = np.random.default_rng(0).normal(size=(40, 3)); y = (X[:, 0] > 0).astype(int)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    model = jaxnn.fit(X, y, k=3, posterior="link")
    jaxnn.predict(model, X); jaxnn.predict_proba(model, X)
events["warnings"] = [str(w.message) for w in caught]
events["dir"] = jax.config.jax_compilation_cache_dir
events["ours"] = jaxnn.config.cache_dir()
print(json.dumps(events))
"""


def _run(code: str, **env_changes) -> dict:
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    for name in ("JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
                 "JAX_COMPILATION_CACHE_MAX_SIZE", "SET_TO"):
        env.pop(name, None)
    env.update(env_changes)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["stderr"] = proc.stderr
    return out


@pytest.mark.slow  # new processes
def test_a_new_process_loads_what_an_earlier_one_compiled_and_survives_a_cut_short_entry(tmp_path):
    cache = tmp_path / "xla"
    first = _run(_FIT, JAXNN_CACHE_DIR=str(cache))
    assert first["dir"] == first["ours"] == str(cache)
    assert first["requests"] > 0 and first["hits"] == 0
    entries = sorted(cache.glob("*-cache"), key=lambda p: p.stat().st_size)
    assert len(entries) == first["requests"]
    second = _run(_FIT, JAXNN_CACHE_DIR=str(cache))
    assert second["hits"] == second["requests"] == first["requests"]  # nothing compiled
    # a process killed while JAX wrote an entry: half of it on disk
    victim = entries[-1]
    whole = victim.read_bytes()
    victim.write_bytes(whole[: len(whole) // 2])
    # JAX's cache alone (the folder as the user's own: jaxnn leaves it be) warns, compiles the program
    # again and leaves the entry cut short: so would every later process
    plain = _run(_FIT, JAXNN_CACHE_DIR="", JAX_COMPILATION_CACHE_DIR=str(cache),
                 JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", JAX_COMPILATION_CACHE_MAX_SIZE=str(config.MAX_SIZE))
    assert any("Error reading persistent compilation cache entry" in w for w in plain["warnings"]), plain
    assert plain["hits"] == plain["requests"] - 1 and victim.stat().st_size == len(whole) // 2
    third = _run(_FIT, JAXNN_CACHE_DIR=str(cache))
    assert not any("Error reading persistent compilation cache entry" in w for w in third["warnings"]), third["warnings"]
    assert "Error reading persistent compilation cache entry" not in third["stderr"]
    assert third["hits"] == third["requests"] - 1  # the one deleted entry compiled again, and written whole
    assert config_impl._whole(str(victim))
    fourth = _run(_FIT, JAXNN_CACHE_DIR=str(cache))
    assert fourth["hits"] == fourth["requests"]


_SETTINGS = """
import json, os, jax
import jaxnn
from jaxnn import config
out = {"dir": jax.config.jax_compilation_cache_dir, "ours": config.cache_dir(),
       "min_time": jax.config.jax_persistent_cache_min_compile_time_secs}
target = os.environ.get("SET_TO")
if target is not None:
    config.set_cache_dir(target or None)
    jax.jit(lambda x: x * 7.0 + 0.25)(jax.numpy.ones(3)).block_until_ready()
    out.update(after_dir=jax.config.jax_compilation_cache_dir, after_ours=config.cache_dir(),
               after_min_time=jax.config.jax_persistent_cache_min_compile_time_secs,
               files=sorted(os.listdir(target)) if target else None)
print(json.dumps(out))
"""


@pytest.mark.slow  # new processes
def test_off_the_users_own_and_set_cache_dir(tmp_path):
    off = _run(_SETTINGS, JAXNN_CACHE_DIR="")
    assert off["dir"] is None and off["ours"] is None
    mine = tmp_path / "mine"
    own = _run(_SETTINGS, JAXNN_CACHE_DIR=str(tmp_path / "xla"), JAX_COMPILATION_CACHE_DIR=str(mine))
    assert own["dir"] == str(mine) and own["ours"] is None and own["min_time"] == 1.0  # JAX's settings untouched
    assert not (tmp_path / "xla").exists()
    moved = tmp_path / "moved"
    on = _run(_SETTINGS, JAXNN_CACHE_DIR="", SET_TO=str(moved))
    assert on["after_dir"] == on["after_ours"] == str(moved) and on["after_min_time"] == 0.0
    assert any(name.endswith("-cache") for name in on["files"])  # a program compiled after the call
    back = _run(_SETTINGS, JAXNN_CACHE_DIR=str(tmp_path / "xla"), SET_TO="")
    assert back["ours"] == str(tmp_path / "xla") and back["after_dir"] is None and back["after_ours"] is None
    assert back["after_min_time"] == 1.0  # JAX's own settings back


@pytest.mark.slow  # a new process
def test_a_folder_that_cannot_be_written_leaves_the_cache_off_quietly(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    out = _run(_SETTINGS, JAXNN_CACHE_DIR=str(blocked / "xla"))
    assert out["dir"] is None and out["ours"] is None
    assert "jaxnn" not in out["stderr"]  # import jaxnn says nothing (the command line says why)
