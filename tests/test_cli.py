"""The CLI's main job runs end to end (quick mode) and rejects bad options."""

import io
import os
import subprocess
import sys

import pytest

from jaxnn._src import cli


def test_demo_quick_prints_a_table():
    out = io.StringIO()
    results = cli.demo(k=5, quick=True, out=out)
    text = out.getvalue()
    assert "GNNB(log)" in text and "ripley" in text and "mean" in text
    assert {d for d, _ in results} == {"ripley", "ionosphere", "wdbc"}
    for acc, seconds in results.values():
        assert 0.5 < acc <= 1.0 and seconds > 0


def test_cli_rejects_bad_k():
    with pytest.raises(SystemExit):
        cli.main(["demo", "--k", "0"])


def test_compilation_cache_dir_follows_the_environment(tmp_path):
    assert cli.compilation_cache_dir({"JAXNN_CACHE_DIR": str(tmp_path)}) == str(tmp_path)
    assert cli.compilation_cache_dir({"JAXNN_CACHE_DIR": ""}) is None
    assert cli.compilation_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == str(tmp_path / "jaxnn" / "xla")
    assert cli.compilation_cache_dir({}).endswith(os.path.join(".cache", "jaxnn", "xla"))


def test_cli_fills_the_compilation_cache(tmp_path):
    # a subprocess: the cache is process-wide JAX configuration
    cache = tmp_path / "xla"
    env = {**os.environ, "JAXNN_CACHE_DIR": str(cache), "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    code = "from jaxnn._src import cli; cli.main(['experiment', 'posteriors', '--quick', '--no-progress'])"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, timeout=600)
    assert any(cache.iterdir())
