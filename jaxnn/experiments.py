"""Reproductions of the papers' experiments (``jaxnn experiment NAME``).

    from jaxnn import experiments
    result = experiments.run("ripley", quick=True)       # prints the table
    result = experiments.posteriors(quick=True)           # just the result
    experiments.format_posteriors(result)

See :mod:`jaxnn._src.experiments` for details.
"""

from jaxnn._src.experiments import (
    EXPERIMENTS,
    FORMATTERS,
    GeometryResult,
    PosteriorsResult,
    RipleyResult,
    SplitsResult,
    UCIResult,
    format_geometry,
    format_posteriors,
    format_ripley,
    format_splits,
    format_uci,
    geometry,
    main,
    plot_geometry,
    plot_posteriors,
    plot_ripley,
    plot_splits,
    plot_uci,
    posteriors,
    ripley,
    run,
    splits,
    uci,
)

__all__ = [
    "EXPERIMENTS",
    "FORMATTERS",
    "GeometryResult",
    "PosteriorsResult",
    "RipleyResult",
    "SplitsResult",
    "UCIResult",
    "format_geometry",
    "format_posteriors",
    "format_ripley",
    "format_splits",
    "format_uci",
    "geometry",
    "main",
    "plot_geometry",
    "plot_posteriors",
    "plot_ripley",
    "plot_splits",
    "plot_uci",
    "posteriors",
    "ripley",
    "run",
    "splits",
    "uci",
]
