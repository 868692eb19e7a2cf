"""The CLI's main job runs end to end (quick mode) and rejects bad options."""

import io

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
