"""The README's fresh-machine commands stay true: CI runs exactly its test command."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    first = text.split("\n## ", 2)[1]  # the first section
    return re.findall(r"```bash\n(.+?)\n```", first)


def test_readme_first_section_has_two_commands():
    cmds = _readme_commands()
    assert len(cmds) == 2
    assert "jaxnn demo" in cmds[0]
    assert "pytest" in cmds[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _readme_commands()[1] in ci
