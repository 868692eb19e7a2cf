"""Writes format_v<N>_*.jaxnn and format_v<N>_predictions.npz: models saved
by jaxnn.save in model file format version N (the version of the jaxnn that
runs it), with their predictions, for tests/test_persist.py's check that
today's jaxnn.load reads them and predicts the same.  Version 1 was made with
the last jaxnn that wrote it (commit 945732d), version 2 with commit
de634aa, each on the path::

    git worktree add --detach /tmp/jaxnn-old 945732d
    PYTHONPATH=/tmp/jaxnn-old python tests/data/make_format_files.py tests/data
"""

import sys

import numpy as np

import jaxnn


def problem(m, d, C, seed):
    rng = np.random.default_rng(seed)
    y = np.arange(m) % C
    X = rng.normal(scale=2.0, size=(C, d))[y] + rng.normal(size=(m, d))
    return X.astype(np.float32), y


def main(folder: str) -> None:
    version = jaxnn._src.persist.FORMAT_VERSION
    X3, y3 = problem(60, 3, 3, seed=0)
    names = np.array(["alder", "birch", "cedar"])
    X2, y2 = problem(50, 3, 2, seed=1)
    models = {
        # the default posteriors (held-out T and leverage shrinkage), string labels
        "default": jaxnn.fit(X3, names[y3], k=5),
        # a given metric, another loss and algorithm, the link posteriors
        "metric": jaxnn.fit(X2, y2, k=4, loss="matsushita", algorithm="unn", posterior="link",
                            metric=np.array([[1.0, 0.2], [-0.5, 1.5], [0.3, 0.0]])),
    }
    queries = problem(20, 3, 3, seed=2)[0] + 0.3
    out = {"queries": queries}
    for name, model in models.items():
        jaxnn.save(model, f"{folder}/format_v{version}_{name}.jaxnn")
        out[f"{name}.predict"] = np.asarray(jaxnn.predict(model, queries))
        out[f"{name}.predict_proba"] = np.asarray(jaxnn.predict_proba(model, queries))
        out[f"{name}.decision_function"] = np.asarray(jaxnn.decision_function(model, queries))
    np.savez(f"{folder}/format_v{version}_predictions.npz", **out)


if __name__ == "__main__":
    main(sys.argv[1])
