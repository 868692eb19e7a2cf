"""The CLI's main job runs end to end (quick mode) and rejects bad options."""

import io
import os
import subprocess
import sys

import pytest

from jaxnn._src import cli
from _cli import assert_refused, outcome  # noqa: E402


@pytest.mark.slow  # the demo: seven methods on three data sets
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
    """--help exits 0 with the options and the data sets the demo runs (the
    code's own lists; its wording and timings are the help's business)."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["demo", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # join the description's wrapped lines
    for fact in ("--k", "--quick", *cli._DEMO_UCI, *cli._DEMO_UCI_QUICK):
        assert fact in text, fact


def test_demo_intro_names_what_runs():
    full, quick = cli.demo_intro(k=10), cli.demo_intro(k=7, quick=True)
    assert full.startswith("jaxnn demo: k-NN, GNNB, UNN, N3, SGD, linear SVM (k=10) on Ripley (250 train / 1000 test)")
    assert "5 UCI sets (bupa, ionosphere, pima, wdbc, segment; 70/30 split)" in full
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
    code = ("from jaxnn._src import cli; cli.main(['experiment', 'uci', '--domains', 'iris', '--methods', 'k-NN',"
            " '--ks', '3', '--folds', '2', '--no-progress'])")  # a small command: any compiles
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, timeout=600)
    assert any(cache.iterdir())


def test_cli_main_in_process_keeps_the_librarys_cache_setting(tmp_path):
    """cli.main uses the library's compilation cache (jaxnn.config), which
    is on for the whole process: called in-process (a notebook) after
    ``jaxnn.config.set_cache_dir(None)``, it turns no cache on (and leaves
    no cache of its own on after it).  A subprocess: the cache is
    process-wide JAX configuration."""
    cache = tmp_path / "xla"
    env = {**os.environ, "JAXNN_CACHE_DIR": str(cache), "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    code = (
        "import os, jax, jaxnn\n"
        "from jaxnn._src import cli\n"
        "on = jax.config.jax_compilation_cache_dir\n"
        "jaxnn.config.set_cache_dir(None)\n"
        "cli.main(['experiment', 'uci', '--domains', 'iris', '--methods', 'k-NN', '--ks', '3', '--folds', '2',"
        " '--no-progress'])\n"
        "entries = [n for n in os.listdir(os.environ['JAXNN_CACHE_DIR']) if n.endswith('-cache')]\n"
        "print(on, len(entries), jax.config.jax_compilation_cache_dir)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True,
                         timeout=600).stdout.split()
    on, entries, setting = out[-3], int(out[-2]), out[-1]
    assert on == str(cache) and entries == 0 and setting == "None"


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


def test_uci_table_when_every_k_of_a_method_is_skipped():
    # k = 100 ≥ iris's 75 training points per fold: the table raised "All-NaN slice encountered".
    # The command line refuses such a k now (no domain allows it: see the tests of impossible
    # settings below); run, the library, still skips it with a note.
    from jaxnn._src import experiments

    buf = io.StringIO()
    experiments.run("uci", out=buf, progress=False, domains=("iris",), methods=("k-NN",), ks=(100,), folds=2)
    out = buf.getvalue()
    assert "k-NN k=100 skipped on iris: k must be < its 75 training points" in out and "wall time" in out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux's /proc/sys")
def test_a_cache_folder_that_cannot_be_written_is_skipped():
    # it existed, so makedirs passed, and JAX then warned once per compiled program.  A subprocess
    # with only this cache setting: the test run gives its own process a compilation cache.
    folder = "/proc/sys"  # exists; no user, root included, can create files in it
    env = {**os.environ, "JAXNN_CACHE_DIR": folder, "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    code = (
        "import jax\n"
        "from jaxnn._src import cli\n"  # import jaxnn: the same folder, skipped quietly (a DEBUG record)
        "assert jax.config.jax_compilation_cache_dir is None, jax.config.jax_compilation_cache_dir\n"
        "seen = []\n"
        "jax.config.update = lambda name, value: seen.append(name)\n"
        "print(cli._use_compilation_cache(), seen)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[-2] == "False []"  # off, and JAX's settings untouched
    assert run.stderr.count("no compilation cache") == 1 and folder in run.stderr


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


# --------------------------------------------------------------------------
# user mistakes: one line on stderr, exit status 2, before any work starts
# --------------------------------------------------------------------------
class _WorkStarted(Exception):
    """Raised by the stubs that stand in for the experiments and the demo:
    a refusal must come before any of them runs."""


@pytest.fixture
def no_work(monkeypatch):
    """The experiments and the demo replaced by stubs that raise
    :class:`_WorkStarted`; no compilation cache is turned on."""
    from jaxnn._src.experiments import cli as experiments_cli

    def started(*args, **kwargs):
        raise _WorkStarted("the work started: the settings were not refused first")

    for name in experiments_cli.EXPERIMENTS:
        monkeypatch.setitem(experiments_cli.EXPERIMENTS, name, started)
    monkeypatch.setattr(cli, "demo", started)
    monkeypatch.setenv("JAXNN_CACHE_DIR", "")


_outcome, _assert_refused = outcome, assert_refused


@pytest.mark.parametrize("argv, words", [
    # uci failed every fold for 159 s and exited 0
    (["experiment", "uci", "--quick", "--domains", "iris", "--folds", "1000"], ["folds=1000", "150 rows of iris"]),
    # a fold without some class: iris's classes have 50 rows each
    (["experiment", "uci", "--domains", "iris", "--folds", "51"], ["folds=51", "iris", "50"]),
    # printed rows of "—" and exited 0
    (["experiment", "uci", "--quick", "--domains", "iris", "--ks", "500"], ["--ks", "k=500"]),
    (["experiment", "uci", "--quick", "--methods", "GNNB(mat)", "--extra-ks", "100000"], ["--extra-ks", "k=100000"]),
    # printed a table without its rows (n > d: every fit skipped)
    (["experiment", "splits", "--domains", "iris", "--n-splits", "50"], ["--n-splits", "n=50", "4 features of iris"]),
    (["experiment", "splits", "--domains", "wine,iris", "--n-splits", "2,8"], ["n=8", "4 features of iris"]),
    (["experiment", "posteriors", "--quick", "--ks", "600"], ["--ks", "k=600", "600"]),
    (["experiment", "ripley", "--thetas", "0.01,0.5"], ["--thetas", "0.01"]),
    (["experiment", "posteriors", "--quick", "--seed", "4294967295", "--seeds", "2"], ["--seed"]),
    (["experiment", "posteriors", "--quick", "--methods", "nope"], ["nope"]),
    (["experiment", "uci", "--quick", "--methods", "nope"], ["nope"]),
    (["demo", "--k", "1000"], ["k must lie in"]),
    (["demo", "--quick", "--k", "245"], ["k must lie in"]),
])
def test_impossible_settings_are_refused_before_any_work(argv, words, no_work, capsys):
    _assert_refused(argv, capsys, *words)


def _malformed_command_lines():
    """Generated mistakes: every override given values it cannot take (bad
    numbers, negative, empty or repeated lists, unknown names, huge values),
    each override given to an experiment it does not apply to, and mistakes
    in the command itself."""
    huge = "9" * 30
    bad = {
        "count": ["", "x", "1.5", "0", "-3", "1e3", huge],
        "ints": ["", ",", "x", "0", "-1", "3,3", "2.5", huge],
        "reals": ["", ",", "x", "0", "-1", "nan", "inf", "1e999", "0.5,0.5"],
        "names": ["", ",", "nosuch", "iris,iris"],
        "seed": ["", "x", "-1", "1.5", huge],
    }
    overrides = {  # flag: (kind of value, experiments that take it, a good value)
        "--folds": ("count", ("uci", "splits"), "2"),
        "--ks": ("ints", ("uci", "posteriors"), "5"),
        "--extra-ks": ("ints", ("uci",), "5"),
        "--domains": ("names", ("uci", "splits"), "iris"),
        "--methods": ("names", ("uci", "posteriors"), "k-NN"),
        "--seeds": ("count", ("posteriors",), "1"),
        "--sigmas": ("reals", ("posteriors",), "0.5"),
        "--thetas": ("reals", ("ripley",), "0.5"),
        "--draws": ("count", ("ripley",), "1"),
        "--n-splits": ("ints", ("splits",), "1"),
        "--seed": ("seed", ("ripley", "uci", "posteriors", "splits"), "0"),
    }
    lines = []
    for flag, (kind, names, good) in overrides.items():
        for name in names:
            lines += [["experiment", name, "--quick", flag, value] for value in bad[kind]]
            lines.append(["experiment", name, flag])  # no value
        lines += [["experiment", name, flag, good] for name in ("ripley", "uci", "posteriors", "splits")
                  if name not in names]
    lines += [
        ["experiment", "uci", "--folds", "1"], ["experiment", "posteriors", "--sigmas", "1e300"],
        ["experiment", "ripley", "--thetas", "1.5"], ["experiment", "ripley", "--thetas", "1e-9"],
        ["experiment", "ripley", "--draws", huge], ["experiment", "ripley", "--seed", str(2**32)],
        ["experiment", "splits", "--quick", "--folds", "5000"], ["experiment", "splits", "--domains", "iris", "--n-splits", "5"],
        ["experiment", "uci", "--domains", "IRIS"], ["experiment", "uci", "--save", "/nonexistent/folder/x.pkl"],
        ["experiment", "uci", "--save", "/"], ["experiment", "nosuch"], ["experiment"], ["experiment", "--quick"],
        ["experiment", "uci", "--bogus"], ["experiment", "uci", "extra"], ["experiment", "uci", "--quick=yes"],
        ["demo", "--k", "0"], ["demo", "--k", "-5"], ["demo", "--k", "x"], ["demo", "--k", ""], ["demo", "--k", huge],
        ["demo", "--k"], ["demo", "extra"], ["demo", "--bogus"], [], ["bogus"], ["--bogus"],
    ]
    return lines


_MALFORMED = _malformed_command_lines()


def test_there_are_many_malformed_command_lines():
    assert len(_MALFORMED) >= 50 and len({tuple(a) for a in _MALFORMED}) == len(_MALFORMED)


@pytest.mark.parametrize("argv", _MALFORMED, ids=[" ".join(a) or "(nothing)" for a in _MALFORMED])
def test_malformed_command_lines_get_one_line_and_status_2(argv, no_work, capsys):
    _assert_refused(argv, capsys)


def test_the_plot_folder_is_checked_before_running(no_work, capsys, tmp_path):
    (tmp_path / "file").write_text("")
    _assert_refused(["experiment", "ripley", "--plot", str(tmp_path / "file" / "below")], capsys, "--plot")


@pytest.mark.parametrize("argv, option", [
    (["--help"], "demo"), (["demo", "--help"], "--k"), (["experiment", "--help"], "--folds"),
    (["experiment", "uci", "--help"], "--ks"), (["experiment", "splits", "-h"], "--n-splits"),
])
def test_help_still_works(argv, option, no_work, capsys):
    status, out, err = _outcome(argv, capsys)
    assert status == 0 and option in out and err == ""


# --------------------------------------------------------------------------
# a reader that goes away (jaxnn demo | head): no traceback, status 141
# --------------------------------------------------------------------------
class _ClosedPipe(io.StringIO):
    """A stdout whose reader went away."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")


#: the status chosen for a reader gone: 128 + SIGPIPE (13), what a shell
#: reports for a command that SIGPIPE ended (``yes | head``); 0 was the other choice
BROKEN_PIPE_STATUS = 141


@pytest.mark.parametrize("argv", [
    ["--help"], ["demo", "--help"], ["experiment", "--help"], ["experiment", "posteriors", "--help"],
    ["demo", "--quick"],  # its first line is printed before anything is compiled
    ["experiment", "uci", "--domains", "iris", "--methods", "k-NN", "--ks", "3", "--folds", "2", "--no-progress"],
])
def test_a_reader_gone_ends_the_command_quietly(argv, monkeypatch, capsys):
    monkeypatch.setenv("JAXNN_CACHE_DIR", "")
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    status, _, err = _outcome(argv, capsys)
    assert status == BROKEN_PIPE_STATUS and "Traceback" not in err and "BrokenPipe" not in err


@pytest.mark.slow
def test_jaxnn_demo_piped_into_head_exits_quietly(tmp_path):
    # `jaxnn demo --quick | head -c 10` ended in a BrokenPipeError traceback
    env = {**os.environ, "JAXNN_CACHE_DIR": "", "JAX_PLATFORMS": "cpu"}
    code = "import sys; from jaxnn._src.cli import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", code, "demo", "--quick"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert len(proc.stdout.read(10)) == 10  # what head -c 10 reads, then it goes away
    proc.stdout.close()
    try:
        err = proc.stderr.read().decode()
        status = proc.wait(timeout=300)
    finally:
        proc.kill()
    assert status == BROKEN_PIPE_STATUS and "Traceback" not in err and "BrokenPipe" not in err, err
