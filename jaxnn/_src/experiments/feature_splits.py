"""The ``splits`` experiment, divide and conquer (paper 000 §6.4, paper 002 §6.2):
:class:`SplitsResult`, :func:`splits` and :func:`format_splits`."""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Optional, Sequence

import numpy as np

from jaxnn._src.experiments.common import (
    check_domains,
    check_folds,
    fmt,
    load_domain,
    nanmean,
    Progress,
    stratified_folds,
    stratified_subsample,
    table_rule,
    timed,
)

__all__ = ["SPLITS_DOMAINS", "SplitsResult", "splits_settings", "splits_data", "splits", "format_splits"]


SPLITS_DOMAINS = ("optdigits", "texture", "spambase", "satimage")


@dataclasses.dataclass
class SplitsResult:
    """Accuracy of divide and conquer with n feature blocks and three means.

    Attributes:
      domains: D names; dims: (D,) feature counts.
      n_splits: (N,) block counts (capped at d: NaN where n > d).
      means: ("arithmetic", "geometric", "harmonic").
      accuracy: (D, N, 3, F) test accuracy per fold.
      fit_s: (D, N, F) fit seconds (compile included).
    """

    domains: tuple
    dims: tuple
    n_splits: tuple
    means: tuple
    accuracy: np.ndarray
    fit_s: np.ndarray
    folds: int
    protocol: str
    k: int
    seed: int
    seconds: float = 0.0


def splits_settings(quick: bool, domains, n_splits, folds, max_rows) -> tuple:
    """(domains, n_splits, folds, max_rows) that :func:`splits` runs with: the
    defaults (full or quick) filled in, the domain names checked (ValueError)."""
    domains = check_domains(domains) if domains is not None else (("optdigits", "spambase") if quick else SPLITS_DOMAINS)
    n_splits = tuple(int(n) for n in n_splits) if n_splits is not None else ((1, 4, 16) if quick else (1, 2, 4, 8, 16))
    folds = (1 if quick else 3) if folds is None else int(folds)
    if folds < 1:
        raise ValueError(f"folds must be >= 1 (1: a single 70/30 split), got {folds}")
    max_rows = (1200 if quick else None) if max_rows is None else int(max_rows)
    return domains, n_splits, folds, max_rows


def splits_data(domains, max_rows: Optional[int], seed: int) -> dict:
    """{domain: (X, y)} as :func:`splits` uses them: more than ``max_rows``
    rows subsampled (stratified, seeded)."""
    data = {}
    for domain in domains:
        X, y = load_domain(domain)
        if max_rows is not None and X.shape[0] > max_rows:
            keep = stratified_subsample(y, max_rows, seed)
            X, y = X[keep], y[keep]
        data[domain] = X, y
    return data


def splits(
    *,
    quick: bool = False,
    seed: int = 0,
    domains: Optional[Sequence[str]] = None,
    n_splits: Optional[Sequence[int]] = None,
    folds: Optional[int] = None,
    k: int = 10,
    max_rows: Optional[int] = None,
    progress: bool = True,
) -> SplitsResult:
    """Divide and conquer (:func:`jaxnn.ensemble.fit_split`): GNNB(log), k = 10,
    L2 norm per block, features standardised on the training part before
    splitting; one fit per n, scored with the arithmetic, geometric and
    harmonic means of the block posteriors.

    Full: optdigits, texture, spambase, satimage; n ∈ {1, 2, 4, 8, 16};
    3-fold stratified CV.  Quick: optdigits and spambase subsampled to 1200
    rows, n ∈ {1, 4, 16}, a single stratified 70/30 split.  ``folds=1``
    means a single 70/30 split.

    ValueError at once, before any fit, for an unknown domain, ``folds`` < 1,
    or more folds than a domain's rows or than the rows of its smallest
    class; an n above a domain's number of features d is skipped there (NaN).
    """
    from jaxnn import datasets, ensemble, metrics

    t_start = time.perf_counter()
    domains, n_splits, folds, max_rows = splits_settings(quick, domains, n_splits, folds, max_rows)
    means = ensemble.MEANS
    D, N, F = len(domains), len(n_splits), folds
    acc = np.full((D, N, len(means), F), np.nan)
    fit_s = np.full((D, N, F), np.nan)
    dims = []
    data = splits_data(domains, max_rows, seed)  # all loaded and checked first: a bad folds fails before any fit
    check_folds({domain: y for domain, (_, y) in data.items()}, folds)
    bar = Progress(D * N * F, "splits", progress)
    for di, domain in enumerate(domains):
        X, y = data[domain]
        dims.append(X.shape[1])
        if folds == 1:
            Xtr, Xte, ytr, yte = datasets.train_test_split(X, y, test_size=0.3, seed=seed)
            parts = [(Xtr, ytr, Xte, yte)]
        else:
            fid = stratified_folds(y, folds, seed)
            parts = [(X[fid != f], y[fid != f], X[fid == f], y[fid == f]) for f in range(folds)]
        for f, (Xtr, ytr, Xte, yte) in enumerate(parts):
            Xtr, Xte = datasets.standardize(Xtr, Xte)
            for ni, n in enumerate(n_splits):
                bar.step(f"{domain} fold {f + 1}/{F} n={n}")
                if n > X.shape[1]:
                    continue
                model, fit_s[di, ni, f] = timed(
                    lambda: ensemble.fit_split(Xtr, ytr, n_splits=n, norm="l2", mean="geometric", k=k, seed=seed)
                )
                for mi, mean in enumerate(means):
                    acc[di, ni, mi, f] = metrics.accuracy(yte, ensemble.predict_split(model, Xte, mean=mean))
    bar.close()
    protocol = "single stratified 70/30 split" if folds == 1 else f"{folds}-fold stratified CV"
    if max_rows is not None:
        protocol += f", domains subsampled to {max_rows} rows"
    return SplitsResult(
        domains=domains, dims=tuple(dims), n_splits=n_splits, means=means, accuracy=acc, fit_s=fit_s,
        folds=folds, protocol=protocol, k=k, seed=seed, seconds=time.perf_counter() - t_start,
    )


def format_splits(result: SplitsResult, out=None) -> None:
    """Per domain: rows n, columns means (accuracy), fit seconds."""
    out = sys.stdout if out is None else out
    r = result
    print(
        f"Divide and conquer (paper 000 §6.4): GNNB(log), k={r.k}, L2 norm per block, standardised features; "
        f"{r.protocol}; test accuracy (mean over folds) per number of blocks n and combining mean",
        file=out,
    )
    acc = nanmean(r.accuracy, axis=3)  # (D, N, 3)
    fit = nanmean(r.fit_s, axis=2)
    head = f"{'domain':<12}{'d':>4}{'n':>5}" + "".join(f"{m:>12}" for m in r.means) + f"{'fit s':>8}"
    print(head, file=out)
    print(table_rule(len(head)), file=out)
    ran = ~np.all(np.isnan(acc), axis=2)  # (D, N): n > d was skipped on that domain
    skipped = []
    for di, d in enumerate(r.domains):
        done = np.flatnonzero(ran[di])
        for j, ni in enumerate(done):  # the domain and its d head its first row that ran
            row = f"{d if j == 0 else '':<12}{r.dims[di] if j == 0 else '':>4}{r.n_splits[ni]:>5}"
            row += "".join(fmt(v, ".3f", 12) for v in acc[di, ni]) + fmt(fit[di, ni], ".1f", 8)
            print(row, file=out)
        if done.size == 0:
            print(f"{d:<12}{r.dims[di]:>4}{'':>5}  (no n ran)", file=out)
        if done.size < len(r.n_splits):
            gone = ", ".join(str(n) for n, ok in zip(r.n_splits, ran[di]) if not ok)
            skipped.append(f"{d} (d={r.dims[di]}): n = {gone}")
    print(table_rule(len(head)), file=out)
    first = True
    for ni, n in enumerate(r.n_splits):
        count = int(np.sum(ran[:, ni]))
        if count == 0:  # nothing to average
            continue
        row = f"{'mean' if first else '':<12}{'':>4}{n:>5}"
        row += "".join(fmt(v, ".3f", 12) for v in nanmean(acc[:, ni], axis=0))
        if count < len(r.domains):
            row += f"  (over {count} of {len(r.domains)} domains)"
        print(row, file=out)
        first = False
    if skipped:
        print(f"not run, more blocks than features (n > d): {'; '.join(skipped)}", file=out)
