"""scikit-learn face of jaxnn: :class:`BoostedKNNClassifier` wraps
:func:`jaxnn.fit` / :func:`jaxnn.predict` / :func:`jaxnn.predict_proba` in
the estimator interface (``Pipeline``, ``GridSearchCV``, ``clone``…);
:class:`ULSClassifier`, :class:`UDTClassifier` and :class:`OLSClassifier`
wrap paper 004's :func:`jaxnn.uls`, :func:`jaxnn.udt` and :func:`jaxnn.ols`.

Needs scikit-learn (``pip install "jaxnn[sklearn]"``); ``import jaxnn`` does
not import it.  See :mod:`jaxnn._src.sklearn` for details.
"""

from jaxnn._src.sklearn import (EXPECTED_FAILED_CHECKS, ULS_EXPECTED_FAILED_CHECKS, BoostedKNNClassifier, OLSClassifier,
                                UDTClassifier, ULSClassifier)

__all__ = ["BoostedKNNClassifier", "EXPECTED_FAILED_CHECKS", "OLSClassifier", "UDTClassifier", "ULSClassifier",
           "ULS_EXPECTED_FAILED_CHECKS"]
