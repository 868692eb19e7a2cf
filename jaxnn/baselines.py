"""Baseline contenders of the papers, with jaxnn's functional API.

* :func:`sgd_fit` — linear one-vs-rest logistic regression trained by
  minibatch SGD (optax Adam, cosine-decayed step; paper 000's SGD contender).
* :func:`svm_fit` — linear one-vs-rest SVM (squared hinge or hinge + L2, like
  scikit-learn's ``LinearSVC``) with Platt-scaled posteriors (paper 003 eq. 31).
* :func:`knn_fit` — plain k-NN vote, H_c(x) = Σ_{j∈NN_k(x)} y_jc.

Every fitted model works with the generic :func:`predict`,
:func:`predict_proba` and :func:`decision_function`.  Features are never
standardised implicitly.  See :mod:`jaxnn._src.baselines` for details.
"""

from jaxnn._src.baselines import (
    KNNModel,
    SGDModel,
    SVMModel,
    decision_function,
    knn_fit,
    predict,
    predict_proba,
    sgd_fit,
    svm_fit,
)

__all__ = [
    "KNNModel",
    "SGDModel",
    "SVMModel",
    "decision_function",
    "knn_fit",
    "predict",
    "predict_proba",
    "sgd_fit",
    "svm_fit",
]
