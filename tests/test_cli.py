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
    assert text.splitlines()[0] == cli.demo_intro(k=5, quick=True)  # what runs, before any compilation
    assert "Bayes error" in text.splitlines()[-1] and "an error rate, not an accuracy" in text.splitlines()[-1]
    assert {d for d, _ in results} == {"ripley", "ionosphere", "wdbc"}
    for acc, seconds in results.values():
        assert 0.5 < acc <= 1.0 and seconds > 0


def test_demo_help_describes_the_run(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["demo", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # join the description's wrapped lines
    for fact in ("GNNB", "UNN", "N3", "k-NN", "SGD", "linear SVM", "250 training / 1000 test", "70/30",
                 "bupa, ionosphere, pima, wdbc, segment", "15-35 s", "6 s", "~/.cache/jaxnn/xla", "$JAXNN_CACHE_DIR",
                 "empty for no cache", "error rate"):
        assert fact in text, fact


def test_demo_intro_names_what_runs():
    full, quick = cli.demo_intro(k=10), cli.demo_intro(k=7, quick=True)
    assert full.startswith("jaxnn demo: k-NN, GNNB, UNN, N3, SGD, linear SVM (k=10) on Ripley (250 train / 1000 test)")
    assert "5 UCI sets (bupa, ionosphere, pima, wdbc, segment; 70/30 split)" in full and "~15-35 s" in full
    assert "(k=7)" in quick and "2 UCI sets (ionosphere, wdbc;" in quick


def test_demo_prints_its_intro_before_loading_anything(monkeypatch):
    # the first row takes ~10 s cold: the intro must be out (flushed) before the data are loaded
    out = io.StringIO()

    def no_data(quick):
        assert out.getvalue().startswith("jaxnn demo: ")
        raise RuntimeError("stop")

    monkeypatch.setattr(cli, "_demo_domains", no_data)
    with pytest.raises(RuntimeError, match="stop"):
        cli.demo(quick=True, out=out)


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


def test_cli_main_in_process_leaves_no_compilation_cache_on(tmp_path):
    """cli.main turns the persistent cache on for its command only: called
    in-process (a notebook), it left it on for the rest of the process until
    stop 28.  A subprocess: the cache is process-wide JAX configuration."""
    cache = tmp_path / "xla"
    env = {**os.environ, "JAXNN_CACHE_DIR": str(cache), "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    code = (
        "import os, jax, jax.numpy as jnp\n"
        "from jaxnn._src import cli\n"
        "cli.main(['experiment', 'uci', '--domains', 'iris', '--methods', 'k-NN', '--ks', '3', '--folds', '2',"
        " '--no-progress'])\n"
        "during = len(os.listdir(os.environ['JAXNN_CACHE_DIR']))\n"
        "jax.jit(lambda x: jnp.sin(x) * 3.0 + 17.0)(jnp.ones(7)).block_until_ready()  # a program of its own\n"
        "print(during, len(os.listdir(os.environ['JAXNN_CACHE_DIR'])), jax.config.jax_compilation_cache_dir)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True,
                         timeout=600).stdout.split()
    during, after, setting = int(out[-3]), int(out[-2]), out[-1]
    assert during > 0 and after == during and setting == "None"


def test_demo_refuses_a_k_as_large_as_a_training_set():
    with pytest.raises(ValueError, match="k must lie in"):
        cli.demo(k=1000, quick=True, out=io.StringIO())


@pytest.mark.parametrize(
    "argv",
    [["uci", "--folds", "0"], ["uci", "--folds", "1"], ["posteriors", "--seeds", "-1"], ["uci", "--ks", "0"],
     ["uci", "--ks", ""], ["uci", "--domains", ""], ["posteriors", "--methods", "k-NN votes,k-NN votes"],
     ["posteriors", "--sigmas", "0"], ["ripley", "--thetas", "1.5"], ["ripley", "--draws", "0"], ["uci", "--seed", "-1"],
     ["ripley", "--save", "/nonexistent/folder/x.pkl"], ["ripley", "--ks", "5"],
     ["uci", "--domains", "iris,nosuch"], ["splits", "--domains", "GNNB"],  # were found after the domains before them ran
     ["ripley", "--save", "{blocked}"], ["ripley", "--plot", "{file}"]],  # tracebacks after the run
)
def test_experiment_options_are_checked_before_running(argv, capsys, tmp_path):
    from jaxnn._src import experiments

    (tmp_path / "x.pkl.tmp").mkdir()  # x.pkl cannot be written through its temporary file
    (tmp_path / "file").write_text("")
    argv = [a.format(blocked=tmp_path / "x.pkl", file=tmp_path / "file") for a in argv]
    with pytest.raises(SystemExit) as exit_info:
        experiments.main(argv + ["--quick", "--no-progress"])
    assert exit_info.value.code == 2
    assert "jaxnn experiment: error:" in capsys.readouterr().err


def test_uci_table_when_every_k_of_a_method_is_skipped(capsys):
    # k = 100 ≥ iris's 75 training points per fold: the table raised "All-NaN slice encountered"
    from jaxnn._src import experiments

    code = experiments.main(["uci", "--domains", "iris", "--methods", "k-NN", "--ks", "100", "--folds", "2", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0 and "k-NN k=100 skipped on iris: k must be < its 75 training points" in out and "wall time" in out


def test_a_cache_folder_that_cannot_be_written_is_skipped(monkeypatch, capsys):
    # it existed, so makedirs passed, and JAX then warned once per compiled program
    import jax

    folder = "/proc/sys"  # exists; no user, root included, can create files in it
    if not os.path.isdir(folder):
        pytest.skip("needs Linux's /proc/sys")
    monkeypatch.setenv("JAXNN_CACHE_DIR", folder)
    if jax.config.jax_compilation_cache_dir:
        pytest.skip("this process already has a compilation cache")
    seen = []
    monkeypatch.setattr(jax.config, "update", lambda name, value: seen.append(name))
    cli._use_compilation_cache()
    assert seen == [] and "no compilation cache" in capsys.readouterr().err


def test_splits_checks_folds_against_every_domain_first(capsys):
    # --folds 200 on iris failed ("X is empty") only after the domains before it had run
    from jaxnn._src import experiments

    code = experiments.main(["splits", "--domains", "wine,iris", "--folds", "160", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 2 and "folds=160 is more than the 150 rows of iris" in captured.err and captured.out == ""


def test_the_save_check_leaves_an_existing_tmp_file_alone(tmp_path, capsys):
    # the writability check opened <save>.tmp for writing and removed it: a user's file there was lost
    from jaxnn._src import experiments

    precious = tmp_path / "out.pkl.tmp"
    precious.write_text("keep me")
    with pytest.raises(SystemExit):
        experiments.main(["uci", "--save", str(tmp_path / "out.pkl"), "--domains", "nosuch", "--no-progress"])
    assert precious.read_text() == "keep me"
