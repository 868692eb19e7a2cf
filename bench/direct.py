"""Run the asv suite's benchmark classes in one process, without asv.

For a machine where asv cannot run or time is short — a lent accelerator with
no package index and no git history, a few minutes of device time::

    JAX_PLATFORMS=cuda python -m bench.direct ScaleFit NumbaVsColored --budget 400 --out gpu.json

Each pattern is a regular expression matched against ``Class.method`` names
(as asv's ``-b``).  For every matching class, in the order of the patterns:
``setup_cache`` once (a mixin's cache, e.g. :class:`common.GraphCache`, is
computed once for every class that shares it), then for every parameter
combination ``setup``, each ``track_*`` method (its value) and each
``time_*`` method (asv's sampling: ``number`` calls a sample, samples until
``repeat = (min, max, max_seconds)`` is met; the median and the fastest
sample are reported), then ``teardown``.  A ``setup`` raising
``NotImplementedError`` marks the combination skipped (asv's n/a).  ``peakmem_*``
and ``mem_*`` benchmarks are asv-only and are left out.

Results go to stdout, one line each, and to ``--out`` (JSON, rewritten after
every result, so a run stopped at its time limit keeps what it measured).
``--budget SECONDS`` starts no class but the first after that much time.  Differences
from asv: one process for everything (JIT caches are shared across classes, as
in a user's program, so ``track_compile_seconds`` can read lower than asv's
fresh processes), no warm-up beyond what ``setup`` does, no result database.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import itertools
import json
import pkgutil
import re
import statistics
import sys
import time
import timeit
from pathlib import Path

_KINDS = ("track_", "time_")
_FAILED = object()  # a setup_cache that raised


def _benchmark_classes() -> list[type]:
    """Classes of the ``bench`` package's modules with ``time_``/``track_`` methods."""
    package = Path(__file__).resolve().parent
    found = []
    for info in sorted(pkgutil.iter_modules([str(package)]), key=lambda i: i.name):
        if info.name == "direct":
            continue
        module = importlib.import_module(f"{__package__ or 'bench'}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and any(n.startswith(_KINDS) for n in dir(cls)):
                found.append(cls)
    return found


def _methods(cls: type, patterns: list[re.Pattern]) -> list[str]:
    names = [n for n in dir(cls) if n.startswith(_KINDS) and callable(getattr(cls, n))]
    return [n for n in names if any(p.search(f"{cls.__name__}.{n}") for p in patterns)]


def _attribute(cls: type, method: str, name: str, default):
    return getattr(getattr(cls, method), name, getattr(cls, name, default))


def _time(fn, number: int, repeat) -> dict:
    """asv's sampling: ``number`` calls per sample; at least ``repeat[0]`` samples,
    at most ``repeat[1]``, no new sample after ``repeat[2]`` seconds."""
    low, high, limit = repeat if isinstance(repeat, tuple) else (repeat, repeat, float("inf"))
    samples, start = [], time.perf_counter()
    while len(samples) < low or (len(samples) < high and time.perf_counter() - start < limit):
        samples.append(timeit.timeit(fn, number=number) / number)
    return {"value": statistics.median(samples), "min": min(samples), "samples": len(samples), "unit": "seconds"}


def _format(result: dict) -> str:
    if "skipped" in result:
        return f"n/a ({result['skipped']})"
    if "error" in result:
        return f"failed: {result['error']}"
    value = result["value"]
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    extra = f", min {result['min']:.4g}, {result['samples']} samples" if "min" in result else ""
    return f"{text} {result.get('unit', '')}{extra}".strip()


def run(patterns: list[str], budget: float = float("inf"), out: Path | None = None, echo=print,
        quick: bool = False) -> list[dict]:
    """Run every benchmark matching ``patterns``; returns (and writes to ``out``)
    one dict per (benchmark, parameters): name, params, value or skipped or error.
    ``quick``: each ``time_*`` benchmark is called once (asv's ``--quick``)."""
    compiled = []
    for p in patterns:
        try:
            compiled.append(re.compile(p))
        except re.error as e:
            raise ValueError(f"pattern {p!r} is not a regular expression: {e}") from None
    classes = _benchmark_classes()
    import jax  # after bench.common has set the platform (JAX_PLATFORMS, cpu by default)

    chosen = []
    for p in compiled:  # in the order of the patterns
        chosen += [c for c in classes if c not in chosen and _methods(c, [p])]
    if not chosen:
        raise ValueError(f"no benchmark matches {patterns!r}; classes: {', '.join(c.__name__ for c in classes)}")
    header = {"platform": jax.devices()[0].platform, "device": str(jax.devices()[0]), "jax": jax.__version__}
    echo(f"# {header}")
    results, caches, start = [], {}, time.perf_counter()

    def save():
        if out is not None:
            out.write_text(json.dumps({**header, "results": results}, indent=1, default=str))

    for cls in chosen:
        if cls is not chosen[0] and time.perf_counter() - start > budget:  # the first always runs
            echo(f"# budget of {budget:.0f} s spent: {cls.__name__} and later classes not run")
            break
        bench = cls()
        cache_fn = getattr(cls, "setup_cache", None)
        t0 = time.perf_counter()
        lead, failed = (), None
        if cache_fn is not None:
            key = getattr(cache_fn, "__func__", cache_fn)
            if key not in caches:
                try:
                    caches[key] = cache_fn(bench)
                except Exception as e:  # noqa: BLE001 - every benchmark of the class reports it
                    caches[key] = _FAILED
                    failed = {"error": f"setup_cache: {type(e).__name__}: {e}"}
            failed = failed or ({"error": "setup_cache failed (above)"} if caches[key] is _FAILED else None)
            lead = (caches[key],)
        grid = itertools.product(*cls.params) if getattr(cls, "param_names", None) else [()]
        for params in grid:
            args = lead + tuple(params)
            label = f"({', '.join(map(str, params))})" if params else ""
            try:
                if failed is None and hasattr(bench, "setup"):
                    bench.setup(*args)
            except NotImplementedError as e:
                outcome = {"skipped": str(e)}
            except Exception as e:  # noqa: BLE001 - reported, the run goes on
                outcome = {"error": f"setup: {type(e).__name__}: {e}"}
            else:
                outcome = failed
            for name in _methods(cls, compiled):
                if outcome is not None:
                    result = dict(outcome)
                else:
                    fn = getattr(bench, name)
                    try:
                        if name.startswith("time_"):
                            number = 1 if quick else _attribute(cls, name, "number", 1)
                            repeat = 1 if quick else _attribute(cls, name, "repeat", (1, 10, 20.0))
                            result = _time(lambda: fn(*args), number, repeat)
                        else:
                            result = {"value": fn(*args), "unit": _attribute(cls, name, "unit", "")}
                    except NotImplementedError as e:
                        result = {"skipped": str(e)}
                    except Exception as e:  # noqa: BLE001
                        result = {"error": f"{type(e).__name__}: {e}"}
                result = {"name": f"{cls.__name__}.{name}", "params": list(params), **result}
                results.append(result)
                echo(f"{result['name']}{label} = {_format(result)}")
                save()
            if outcome is None and hasattr(bench, "teardown"):
                bench.teardown(*args)
        echo(f"# {cls.__name__}: {time.perf_counter() - t0:.1f} s")
    save()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.direct", description=__doc__.split("\n\n")[0])
    parser.add_argument("patterns", nargs="+", help="regular expressions on Class.method names (as asv -b)")
    parser.add_argument("--budget", type=float, default=float("inf"), help="start no new class after this many seconds")
    parser.add_argument("--out", type=Path, help="write the results here as JSON (after every result)")
    parser.add_argument("--quick", action="store_true", help="call each time_ benchmark once (as asv --quick)")
    args = parser.parse_args(argv)
    results = run(args.patterns, args.budget, args.out, echo=lambda s: print(s, flush=True), quick=args.quick)
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
