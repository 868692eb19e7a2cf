"""Helpers of the command-line tests: run ``jaxnn ARGV`` in-process and check
that a user mistake is refused with one line on stderr and exit code 2."""

import contextlib
import csv
import io

from jaxnn._src import cli


def write_csv(path, header, rows) -> str:
    """Write a CSV table (a header line, then ``rows``) to ``path``; its path as a str."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return str(path)


def run(argv):
    """(status, stdout, stderr) of ``jaxnn ARGV`` run in-process, without
    capsys (for module fixtures)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(list(argv))
        except SystemExit as stop:
            status = stop.code
    return status, out.getvalue(), err.getvalue()


def outcome(argv, capsys):
    """(exit status, stdout, stderr) of ``jaxnn ARGV`` run in-process: the
    status main returns, or the one it exits with (argparse)."""
    try:
        status = cli.main(list(argv))
    except SystemExit as stop:
        status = stop.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_refused(argv, capsys, *words):
    """The stderr line of ``jaxnn ARGV``, checked: exit 2, exactly one line
    ``jaxnn…: error: …`` naming each of ``words``, no traceback, no stdout."""
    status, out, err = outcome(argv, capsys)
    assert status == 2, (argv, status, err)
    assert err.endswith("\n") and err.count("\n") == 1, (argv, err)  # exactly one line
    assert err.startswith("jaxnn") and ": error: " in err and "Traceback" not in err, (argv, err)
    assert out == "", (argv, out)
    for word in words:
        assert word in err, (argv, word, err)
    return err
