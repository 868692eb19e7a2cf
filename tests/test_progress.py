"""Progress of long calls (jaxnn._src.progress): plain lines on stderr when it
is not a terminal, tqdm bars when it is, nothing without ``verbose``; a step
per segment or candidate, never per boosting step; the experiments' counter
and the command line's ``--quiet``."""

from __future__ import annotations

import io
import logging
import re
import subprocess
import sys

import numpy as np
import pytest

import jaxnn
from jaxnn._src import boost_runs, progress


def _blobs(m=90, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(m) % 3
    return (rng.normal(size=(3, 4))[y] + rng.normal(size=(m, 4))).astype(np.float32), y


_SCRIPT = """
import sys, numpy as np, jaxnn
rng = np.random.default_rng(0); y = np.arange(90) % 3
X = (rng.normal(size=(3, 4))[y] + rng.normal(size=(90, 4))).astype(np.float32)
jaxnn.fit(X, y, k=5, posterior="link", shrinkage=None, verbose=True)
jaxnn.select(X, y, ks=(3, 5), losses=("logistic", "matsushita"), passes=(1, 2), verbose=True)
print("QUIET FROM HERE", file=sys.stderr, flush=True)
jaxnn.fit(X, y, k=5, posterior="link", shrinkage=None)
jaxnn.select(X, y, ks=(3, 5), losses=("logistic", "matsushita"), passes=(1, 2))
"""


@pytest.mark.slow  # a new process: stderr a pipe, logging not configured
def test_verbose_prints_plain_lines_and_quiet_prints_nothing():
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    verbose, quiet = proc.stderr.split("QUIET FROM HERE")
    assert "jaxnn" not in quiet and "\r" not in proc.stderr  # no bar drawn on a pipe
    lines = [line for line in verbose.splitlines() if line.startswith("jaxnn: ")]
    assert lines[0] == "jaxnn: fit: exact 5-NN graph of 90 points in 4 dimensions ..."
    assert re.fullmatch(r"jaxnn: fit: GNNB boosting .*: \d+\.\d\d s", lines[3])
    select = lines[4:]
    assert select[0] == "jaxnn: select: exact 5-NN graph of 68 training points and the 22 held-out points' neighbours ..."
    assert re.fullmatch(r"jaxnn: select: exact 5-NN graph .*: \d+\.\d\d s", select[1])
    assert select[2] == "jaxnn: select: 4 candidates (k, loss) x passes [1, 2] on 68 points ..."
    steps = select[3:7]  # one line per candidate (k, loss), not per pass or boosting step
    assert [re.fullmatch(r"jaxnn: select: k=(\d), (\w+) loss: held-out accuracy [01]\.\d{4} \((\d) of 4\)", s).groups()
            for s in steps] == [("3", "logistic", "1"), ("3", "matsushita", "2"), ("5", "logistic", "3"),
                                ("5", "matsushita", "4")]
    assert re.fullmatch(r"jaxnn: select: 4 candidates .*: \d+\.\d\d s", select[7]) and len(select) == 8


def test_a_long_run_reports_each_segment(monkeypatch, caplog):
    # logging configured (pytest's handler): the records go there, one a segment
    monkeypatch.setattr(boost_runs, "SEGMENT_STEPS", 90)  # a pass of 90 points a segment
    X, y = _blobs()
    with caplog.at_level(logging.INFO, logger="jaxnn"):
        jaxnn.fit(X, y, k=5, rounds=3 * 90, posterior="link", shrinkage=None, verbose=True)
    done = [r.getMessage() for r in caplog.records if "steps done" in r.getMessage()]
    assert done == ["fit: 90 of 270 steps done", "fit: 180 of 270 steps done"]
    caplog.clear()
    jaxnn.fit(X, y, k=5, rounds=3 * 90, posterior="link", shrinkage=None)
    assert not caplog.records


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _on_a_terminal(monkeypatch) -> _Terminal:
    """stderr a terminal and logging unconfigured, for the verbose calls (in
    the test's body: pytest puts its own sys.stderr back after the fixtures)."""
    pytest.importorskip("tqdm")
    screen = _Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    monkeypatch.setattr(progress.logger, "hasHandlers", lambda: False)  # pytest's own handlers aside
    return screen


def test_a_terminal_gets_bars(monkeypatch):
    terminal = _on_a_terminal(monkeypatch)
    X, y = _blobs()
    jaxnn.select(X, y, ks=(3, 5), losses=("logistic",), passes=(1,), verbose=True)
    text = terminal.getvalue()
    assert "select: 2 candidates" in text and "2/2" in text and "\r" in text  # a bar, redrawn in place
    assert "jaxnn: select" not in text  # no plain lines besides
    assert progress.logger.handlers == [] or all(not isinstance(h, progress._BarHandler)
                                                 for h in progress.logger.handlers)
    # a long run's segments move the boosting stage's bar; a note is written above the bars
    monkeypatch.setattr(boost_runs, "SEGMENT_STEPS", 90)
    terminal.seek(0)
    terminal.truncate()
    jaxnn.fit(X, y, k=5, rounds=3 * 90, posterior="link", shrinkage=None, verbose=True)
    text = terminal.getvalue()
    assert "fit: GNNB boosting" in text and "180/270" in text and re.search(r"boosting.*: \d+\.\d\d s", text)


def test_a_verbose_default_fit_shows_its_held_out_choice_beside_the_bars(monkeypatch):
    """The held-out choice runs on a helper thread of the fit: its stages are
    shown too, as lines above the main fit's bars, and the display ends with the call."""
    terminal = _on_a_terminal(monkeypatch)
    X, y = _blobs()
    jaxnn.fit(X, y, k=5, verbose=True)
    text = terminal.getvalue()
    assert re.search(r"fit: GNNB boosting.*: \d+\.\d\d s", text) and "\r" in text  # the main fit: bars
    assert "jaxnn: fit: held-out choice: auxiliary fit on 72 points, scored on the other 18" in text  # the helper: lines
    assert re.search(r"jaxnn: fit: held-out choice: temperature \S+, leverage shrinkage", text)
    assert not progress._Progress.threads and not progress._Progress.lines


def test_stages_and_steps_outside_a_verbose_call_do_nothing(capsys):
    with progress.stage("nothing to see", total=3) as st:
        st.step()
        progress.steps_done(2, 3, "step %d", 2)
    assert st is progress._NOT_SHOWN and capsys.readouterr().err == ""


def test_the_experiments_counter(monkeypatch):
    plain = io.StringIO()
    bar = progress.StepBar(3, "uci", stream=plain)
    bar.step("iris fold 1/3 k-NN")
    bar.close()
    assert re.fullmatch(r"\[1/3\] uci: iris fold 1/3 k-NN \(\d+s\)\n", plain.getvalue())
    pytest.importorskip("tqdm")
    screen = _Terminal()
    bar = progress.StepBar(3, "uci", stream=screen)
    for i in range(3):
        bar.step(f"iris fold {i + 1}/3 k-NN")
    bar.close()
    assert "3/3" in screen.getvalue() and "iris fold 3/3 k-NN" in screen.getvalue()
    silent = _Terminal()
    bar = progress.StepBar(3, "uci", enabled=False, stream=silent)
    bar.step("x")
    bar.close()
    assert silent.getvalue() == ""


def test_experiment_quiet_prints_nothing_on_stderr(capsys):
    from jaxnn._src import experiments

    argv = ["uci", "--domains", "iris", "--methods", "k-NN", "--ks", "3", "--folds", "2"]
    assert experiments.main(argv + ["--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "iris" in captured.out
    assert experiments.main(argv) == 0
    assert "[1/2] uci: iris fold 1/2 k-NN" in capsys.readouterr().err
