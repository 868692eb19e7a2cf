"""Every ```python block of the README runs as written.

The blocks are run in order in one namespace holding the names they take as given
(X, y: training data; X2, y2: test data; nb: X2's training neighbours; np), so a
renamed keyword, a changed signature or a dropped attribute fails here, not in a
user's first session.
"""

import pathlib
import re
import warnings

import numpy as np
import pytest

import jaxnn

ROOT = pathlib.Path(__file__).resolve().parents[1]


def readme_python_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.+?)\n```", text, flags=re.DOTALL)


def given_names() -> dict:
    data = jaxnn.datasets.ripley(n_train=250, n_test=100)
    X, y, X2, y2 = data.X_train, data.y_train, data.X_test, data.y_test
    nb = np.asarray(jaxnn.knn_query(X, X2, 10).indices)
    return {"np": np, "X": X, "y": y, "X2": X2, "y2": y2, "nb": nb}


def test_readme_has_the_python_blocks_this_test_runs():
    blocks = readme_python_blocks()
    assert len(blocks) >= 4
    assert any("jaxnn.fit(" in b for b in blocks)
    assert any("BoostedKNNClassifier" in b for b in blocks)


@pytest.mark.xdist_group("nndescent")  # a block queries a pynndescent index (numba compilation once per worker)
def test_every_readme_python_block_runs():
    pytest.importorskip("sklearn")
    namespace = given_names()
    for i, block in enumerate(readme_python_blocks(), start=1):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a README example must run without a warning
            try:
                exec(compile(block, f"README.md python block {i}", "exec"), namespace)
            except Exception as e:  # name the block that broke
                raise AssertionError(f"README python block {i} fails:\n{block}") from e
