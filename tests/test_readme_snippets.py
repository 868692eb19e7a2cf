"""Every ```python block of the README and of the user guide runs as written.

The README's blocks are run in order in one namespace holding the names they
take as given (X, y: training data; X2, y2: test data; nb: X2's training
neighbours; np), so a renamed keyword, a changed signature or a dropped
attribute fails here, not in a user's first session.  Each page of
docs/guide/ runs the same way, in a fresh namespace of its own.
"""

import pathlib
import re
import warnings

import numpy as np
import pytest

import jaxnn

ROOT = pathlib.Path(__file__).resolve().parents[1]
GUIDE_PAGES = sorted((ROOT / "docs" / "guide").glob("*.md"))


def python_blocks(path: pathlib.Path) -> list[str]:
    return re.findall(r"```python\n(.+?)\n```", path.read_text(), flags=re.DOTALL)


def readme_python_blocks() -> list[str]:
    return python_blocks(ROOT / "README.md")


def given_names() -> dict:
    data = jaxnn.datasets.ripley(n_train=250, n_test=100)
    X, y, X2, y2 = data.X_train, data.y_train, data.X_test, data.y_test
    nb = np.asarray(jaxnn.knn_query(X, X2, 10).indices)
    return {"np": np, "X": X, "y": y, "X2": X2, "y2": y2, "nb": nb}


def run_blocks(blocks: list[str], where: str) -> None:
    pytest.importorskip("sklearn")
    namespace = given_names()
    for i, block in enumerate(blocks, start=1):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an example must run without a warning
            # but numba's note, the first time a process compiles one of pynndescent's kernels,
            # that it cannot cache it: a dependency's compile-time message, whichever test compiles first
            warnings.filterwarnings("ignore", message="Cannot cache compiled function")
            try:
                exec(compile(block, f"{where} python block {i}", "exec"), namespace)
            except Exception as e:  # name the block that broke
                raise AssertionError(f"{where} python block {i} fails:\n{block}") from e


def test_there_are_python_blocks_to_run():
    assert readme_python_blocks()
    assert GUIDE_PAGES and any(python_blocks(page) for page in GUIDE_PAGES)


def test_every_readme_python_block_runs():
    run_blocks(readme_python_blocks(), "README.md")


def _guide_params():
    """A page whose examples run pynndescent stays on the worker of the other
    tests that do (``--dist loadgroup``): its numba kernels compile once."""
    for page in GUIDE_PAGES:
        if not python_blocks(page):
            continue
        nndescent = "nndescent" in "".join(python_blocks(page)).lower()
        marks = [pytest.mark.xdist_group("nndescent")] if nndescent else []
        yield pytest.param(page, marks=marks, id=page.name)


@pytest.mark.parametrize("page", list(_guide_params()))
def test_every_guide_python_block_runs(page):
    run_blocks(python_blocks(page), f"docs/guide/{page.name}")
