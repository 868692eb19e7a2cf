"""scikit-learn face of jaxnn: :class:`BoostedKNNClassifier` wraps
:func:`jaxnn.fit` / :func:`jaxnn.predict` / :func:`jaxnn.predict_proba` in
the estimator interface (``Pipeline``, ``GridSearchCV``, ``clone``…).

Needs scikit-learn (``pip install "jaxnn[sklearn]"``); ``import jaxnn`` does
not import it.  See :mod:`jaxnn._src.sklearn` for details.
"""

from jaxnn._src.sklearn import EXPECTED_FAILED_CHECKS, BoostedKNNClassifier

__all__ = ["BoostedKNNClassifier", "EXPECTED_FAILED_CHECKS"]
