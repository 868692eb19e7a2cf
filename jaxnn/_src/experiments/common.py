"""Helpers shared by the experiments: progress line, timing, stratified folds
and subsamples, ranks, table formatting, domain loading, pickling a result."""

from __future__ import annotations

import math
import os
import time
import warnings
from typing import Callable

import numpy as np

from jaxnn._src.progress import StepBar

__all__ = ["Progress", "timed", "stratified_folds", "stratified_subsample", "rank_desc", "nanmean", "fmt",
           "table_rule", "check_domains", "check_folds", "load_domain", "save_result"]


#: the experiments' progress counter: a tqdm bar on a terminal, one line per
#: step otherwise, ``[ 12/40] uci: pima fold 3 GNNB(log) (5s)`` (jaxnn._src.progress)
Progress = StepBar


def _block(x):
    """Wait for asynchronous JAX work inside ``x`` (a pytree or anything)."""
    import jax

    for leaf in jax.tree_util.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def timed(fn: Callable):
    t0 = time.perf_counter()
    out = _block(fn())
    return out, time.perf_counter() - t0


def stratified_folds(y, n_folds: int, seed: int) -> np.ndarray:
    """(n,) fold ids in 0..n_folds−1: per class a seeded shuffle dealt
    round-robin (continuing across classes), so folds are stratified and
    their sizes differ by at most one."""
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    folds = np.empty(y.shape[0], dtype=np.int64)
    offset = 0
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        folds[idx] = (offset + np.arange(idx.size)) % n_folds
        offset += idx.size
    return folds


def stratified_subsample(y, n: int, seed: int) -> np.ndarray:
    """Sorted indices of a stratified random subsample of size ≈ n (≥ 2 per class where possible)."""
    y = np.asarray(y)
    if n >= y.shape[0]:
        return np.arange(y.shape[0])
    rng = np.random.default_rng(seed)
    keep = []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        take = min(idx.size, max(2, int(round(n * idx.size / y.shape[0]))))
        keep.append(rng.choice(idx, size=take, replace=False))
    return np.sort(np.concatenate(keep))


def rank_desc(values: np.ndarray) -> np.ndarray:
    """Ranks (1 = largest), ties get their average rank; NaN gets NaN."""
    v = np.asarray(values, dtype=float)
    out = np.full(v.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(v))
    for i in ok:
        greater = np.sum(v[ok] > v[i])
        equal = np.sum(v[ok] == v[i])
        out[i] = greater + (equal + 1) / 2.0
    return out


def nanmean(a, axis=None):
    """np.nanmean without the all-NaN RuntimeWarning (all-NaN → NaN)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(np.asarray(a, dtype=float), axis=axis)


def fmt(x, spec: str = ".3f", width: int = 8) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)) or (isinstance(x, np.floating) and np.isnan(x)):
        return f"{'—':>{width}}"
    return f"{x:>{width}{spec}}"


def table_rule(width: int) -> str:
    return "-" * width


def check_domains(domains) -> tuple:
    """The domain names, all checked before any runs, so that a typo fails
    at once rather than after the domains before it."""
    from jaxnn import datasets

    domains = tuple(domains)
    known = tuple(datasets.names()) + ("letter-2561",)
    unknown = [d for d in domains if d not in known]
    if unknown:
        raise ValueError(f"unknown domain(s) {', '.join(map(repr, unknown))}; choose from: {', '.join(known)}")
    return domains


def check_folds(data: dict, folds: int) -> None:
    """ValueError unless every domain (``{name: y}``) can be dealt into
    ``folds`` stratified folds: at most its rows — every domain checked for
    that first — and at most the rows of its smallest class, so that every
    fold holds every class (``folds=1``, one 70/30 split, passes)."""
    for name, y in data.items():
        if folds > len(y):
            raise ValueError(f"folds={folds} is more than the {len(y)} rows of {name}")
    if folds > 1:
        for name, y in data.items():
            smallest = int(np.min(np.unique(np.asarray(y), return_counts=True)[1]))
            if folds > smallest:
                raise ValueError(f"folds={folds} is more than the {smallest} rows of {name}'s smallest class: "
                                 f"a stratified fold needs every class (at most {smallest} folds on {name})")


def load_domain(name: str, seed: int = 0):
    """(X, y) of a bundled domain; ``letter-2561`` is the stratified
    2561-row sample of paper 000 (:func:`jaxnn.datasets.letter_sample`)."""
    from jaxnn import datasets

    if name == "letter-2561":
        return datasets.letter_sample(2561, seed=0)
    return datasets.load(name)


def save_result(result, path: str) -> None:
    import pickle

    tmp = f"{path}.tmp"
    with open(tmp, "wb") as fh:
        pickle.dump(result, fh)
    os.replace(tmp, path)
