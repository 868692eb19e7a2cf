"""Figures of fitted models (matplotlib: ``pip install "jaxnn[plot]"``).

    import jaxnn.plot
    jaxnn.plot.decision_map(model, X, y, theta=0.25)   # 2-D posterior map, kept prototypes
    jaxnn.plot.risk_trace(model)                        # a fit(trace=True)'s surrogate risk
    jaxnn.plot.reliability(model, X_test, y_test)       # reliability diagram of predict_proba
    jaxnn.plot.pruning_curve(model, X_test, y_test)     # test error vs prototypes kept (prune)

Each draws on ``ax=`` (a new pyplot figure when None) and returns the
matplotlib Axes; none calls ``plt.show()``.  ``import jaxnn`` does not import
this module nor matplotlib: ``import jaxnn.plot``, or use ``jaxnn.plot``
(imported on first use).  See docs/guide/plots.md and :mod:`jaxnn._src.plots`.
"""

from jaxnn._src.plots import DEFAULT_THETAS, decision_map, pruning_curve, reliability, risk_trace

__all__ = ["DEFAULT_THETAS", "decision_map", "pruning_curve", "reliability", "risk_trace"]
