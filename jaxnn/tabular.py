"""Preparing a table's feature columns for k-NN — missing values filled,
text columns one-hot encoded, numeric columns scaled — as ``jaxnn fit``
does (docs/guide/command-line.md; the steps: :mod:`jaxnn._src.prepare`).

From Python, with tables as a dict of columns or a pandas DataFrame::

    prep = jaxnn.tabular.fit_preparation(train, features, scale="standard", impute="median")
    model = jaxnn.fit(jaxnn.tabular.apply(prep, train), y)
    jaxnn.predict(model, jaxnn.tabular.apply(prep, new))
    jaxnn.tabular.save("model.jaxnn", model, prep)   # model, prep = jaxnn.tabular.load("model.jaxnn")
"""

from jaxnn._src.prepare import (
    CATEGORICALS,
    IMPUTES,
    SCALES,
    Column,
    Preparation,
    UnseenCategoryWarning,
    apply,
    describe,
    fit_preparation,
    load,
    save,
)

__all__ = [
    "CATEGORICALS",
    "IMPUTES",
    "SCALES",
    "Column",
    "Preparation",
    "UnseenCategoryWarning",
    "apply",
    "describe",
    "fit_preparation",
    "load",
    "save",
]
