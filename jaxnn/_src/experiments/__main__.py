"""``python -m jaxnn._src.experiments NAME``: the ``jaxnn experiment`` command line."""

if __name__ == "__main__":  # pragma: no cover
    # run the importable package's main, so that pickled results (--save)
    # refer to jaxnn._src.experiments classes rather than __main__ ones
    from jaxnn._src.experiments import main as _main

    raise SystemExit(_main())
