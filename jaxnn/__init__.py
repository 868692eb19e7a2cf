"""jaxnn — boosted (leveraged) nearest-neighbour classification in JAX.

    model = jaxnn.fit(X, y, k=10, loss="logistic", algorithm="gnnb")
    jaxnn.predict(model, X_test)

H_c(x) = Σ_{j∈NN_k(x)} α_jc y_jc, with α learned by UNN, GNNB or N³.
"""

from jaxnn._src import config as _config

_config.use_default_cache()  # before anything compiles: the persistent compilation cache (jaxnn.config)

from jaxnn import baselines, config, datasets, ensemble, losses, metrics, tabular  # noqa: E402
from jaxnn._src.algorithms import GNNB, N3, UNN, UNNFast, gnnb, n3, unn, unn_fast
from jaxnn._src.steps import surrogate_risk
from jaxnn._src.fitting import fit
from jaxnn._src.graph import Neighbors, knn_graph, knn_query
from jaxnn._src.inverse import InverseNeighbors, inverse_neighbors
from jaxnn._src.learned_metric import learn_metric
from jaxnn._src.model import Model
from jaxnn._src.ols import OLSModel, ols, ols_init, ols_update
from jaxnn._src.persist import ModelFileError, load, save
from jaxnn._src.prediction import decision_function, predict, predict_proba
from jaxnn._src.prune import knn_subsample, prune, prune_indices
from jaxnn._src.select import Selection, select
from jaxnn._src.udt import UDTModel, udt
from jaxnn._src.uls import ULSModel, uls

__version__ = "0.1.0"

__all__ = [
    "GNNB",
    "InverseNeighbors",
    "Model",
    "ModelFileError",
    "N3",
    "Neighbors",
    "OLSModel",
    "Selection",
    "UDTModel",
    "ULSModel",
    "UNN",
    "UNNFast",
    "baselines",
    "config",
    "datasets",
    "decision_function",
    "ensemble",
    "fit",
    "gnnb",
    "inverse_neighbors",
    "knn_graph",
    "knn_query",
    "knn_subsample",
    "learn_metric",
    "load",
    "losses",
    "metrics",
    "n3",
    "ols",
    "ols_init",
    "ols_update",
    "predict",
    "predict_proba",
    "prune",
    "prune_indices",
    "save",
    "select",
    "surrogate_risk",
    "tabular",
    "udt",
    "uls",
    "unn",
    "unn_fast",
]


def __getattr__(name):
    """``jaxnn.plot`` (figures; needs matplotlib), imported on first use so
    that ``import jaxnn`` imports no matplotlib."""
    if name == "plot":
        import importlib

        return importlib.import_module("jaxnn.plot")
    raise AttributeError(f"module 'jaxnn' has no attribute {name!r}")
