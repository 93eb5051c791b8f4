"""Statistics of a run from its per-image records: bootstrap intervals, paired tests, rankings, worst images.

Everything here works on the rows of ``per_image.csv`` (``{"dataset", "method", "image", <metric>: value}``)
and on ``results.json``'s document; docs/statistics.md gives the methods, formulas and assumptions.

- :func:`resampled_metrics`: the metrics whose dataset value is the mean of their per-image values on every
  job of the run (checked, not assumed): only those are bootstrapped, tested and ranked. ``f_measure_max``
  (the max of the mean curve) is not a per-image mean and is left out, with the reason.
- :func:`bootstrap_interval`: percentile bootstrap of the mean over images; the index matrix is drawn as
  ``scipy.stats.bootstrap`` draws it (``rng.integers(0, n, (rows, n))`` per batch of rows).
- :func:`sign_flip_test`: two-sided paired permutation test of the mean difference (exact when
  ``2**n <= permutations``, else Monte Carlo).
- :func:`holm`, :func:`ranks_with_ties`: Holm's step-down adjustment; rank = 1 + number of methods
  significantly better.

numpy only (no torch); imported by :mod:`nobg_metrics.cli.outputs.report` when the outputs are written.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from nobg_metrics.cli.core.os_names import os_bytes

MEAN_RTOL = 1e-9
"""A metric counts as a per-image mean when ``|value - mean| <= MEAN_RTOL * max(1, |mean|)`` on every job."""

BATCH_ELEMENTS = 1 << 22
"""Index / sign matrices are drawn in batches of ``max(1, BATCH_ELEMENTS // n)`` rows (bounded memory)."""


def batch_rows(n: int) -> int:
    """Rows per drawn batch for ``n`` images (pass it as ``batch=`` to ``scipy.stats.bootstrap`` to match)."""
    return max(1, BATCH_ELEMENTS // max(n, 1))


def generator(seed: int, *keys: str) -> np.random.Generator:
    """A generator for one ``(seed, dataset, method, ...)``: the same keys give the same draws in any run,
    whatever the other jobs (keys hashed with CRC-32 of their bytes; an OS name's as the OS gives them)."""
    return np.random.default_rng(np.random.SeedSequence([seed, *(zlib.crc32(os_bytes(key)) for key in keys)]))


Grouped = dict[tuple[str, str], list[dict[str, Any]]]
"""Per-image rows by ``(dataset, method)``, in their order (:func:`group_rows`)."""


def group_rows(rows: list[dict[str, Any]]) -> Grouped:
    """The per-image rows by ``(dataset, method)``."""
    grouped: Grouped = {}
    for row in rows:
        grouped.setdefault((row["dataset"], row["method"]), []).append(row)
    return grouped


def finite_values(grouped: Grouped, dataset: str, method: str, metric: str) -> dict[str, float]:
    """``image -> value`` of one job's finite per-image values of ``metric`` (NaN / missing left out)."""
    return {r["image"]: float(r[metric]) for r in grouped.get((dataset, method), ())
            if r.get(metric) is not None and math.isfinite(r[metric])}


def resampled_metrics(document: dict[str, Any], grouped: Grouped) -> tuple[list[str], dict[str, str]]:
    """``(metrics to resample, {other metric: reason})``: a metric is resampled when, on every job with a value,
    results.json's value equals the mean of its finite per-image values (:data:`MEAN_RTOL`).

    Examples:
        >>> document = {"metrics": ["mae", "f_measure_max"],
        ...             "results": [{"dataset": "D", "method": "M", "metrics": {"mae": 0.2, "f_measure_max": 0.9}}]}
        >>> rows = [{"dataset": "D", "method": "M", "image": i, "mae": v, "f_measure_max": 1.0}
        ...         for i, v in (("a", 0.1), ("b", 0.3))]
        >>> resampled_metrics(document, group_rows(rows))[0]
        ['mae']
    """
    keep, reasons = [], {}
    for metric in document["metrics"]:
        checked = 0
        for result in document["results"]:
            value = result["metrics"].get(metric)
            values = list(finite_values(grouped, result["dataset"], result["method"], metric).values())
            if value is None or not values:
                continue
            mean = math.fsum(values) / len(values)
            if abs(value - mean) > MEAN_RTOL * max(1.0, abs(mean)):
                reasons[metric] = (f"the dataset value is not the per-image mean ({result['dataset']} / "
                                   f"{result['method']}: {value!r} vs mean {mean!r})")
                break
            checked += 1
        else:
            if checked:
                keep.append(metric)
            else:
                reasons[metric] = "no job has both a dataset value and per-image values"
    return keep, reasons


def resample_indices(rng: np.random.Generator, n: int, resamples: int) -> Iterator[np.ndarray]:
    """The bootstrap index matrix in batches: ``rng.integers(0, n, (rows, n))`` for each batch of rows — the
    draws of ``scipy.stats.bootstrap(..., rng=rng, batch=batch_rows(n))``."""
    rows = batch_rows(n)
    for start in range(0, resamples, rows):
        yield rng.integers(0, n, (min(rows, resamples - start), n), dtype=np.int64)


def percentile_interval(means: np.ndarray, alpha: float) -> tuple[float, float]:
    """The ``(alpha/2, 1 - alpha/2)`` quantiles of the resampled means (linear interpolation, numpy's default).

    Example (the by-hand case of docs/statistics.md):
        >>> [round(q, 12) for q in percentile_interval(np.array([0.0, 1.0, 2.0, 1.0]), 0.05)]
        [0.075, 1.925]
    """
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def bootstrap_means(values: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Means of ``values`` over the rows of one index matrix: :math:`(n,) \\to (B,)`, or :math:`(M, n) \\to (M, B)`
    (M metrics of the same images resampled together, by the same draws)."""
    table = np.atleast_2d(values)
    parts = [np.stack([row[idx].mean(axis=-1) for row in table])
             for idx in resample_indices(rng, table.shape[1], resamples)]
    means = np.concatenate(parts, axis=1)
    return means[0] if values.ndim == 1 else means


def bootstrap_interval(values: np.ndarray, rng: np.random.Generator, resamples: int,
                       alpha: float) -> tuple[float, float]:
    """Percentile bootstrap ``1 - alpha`` interval of the mean of ``values`` (:math:`(n,)`, n >= 1).

    Examples:
        >>> bootstrap_interval(np.array([0.5, 0.5, 0.5]), generator(0, "D", "M"), 100, 0.05)
        (0.5, 0.5)
    """
    return percentile_interval(bootstrap_means(values, rng, resamples), alpha)


def _job_intervals(values: dict[str, dict[str, float]], rng_key: tuple, resamples: int,
                   alpha: float) -> dict[str, list[float]]:
    """``metric -> interval`` of one job (``values``: metric -> image -> value): the metrics scored on the same
    images share one index matrix, drawn by a fresh ``generator(*rng_key)`` per image set (so each interval is
    ``bootstrap_interval(its values in image-name order, generator(*rng_key), ...)``)."""
    by_images: dict[tuple[str, ...], list[str]] = {}
    for metric, own in values.items():
        if own:
            by_images.setdefault(tuple(sorted(own)), []).append(metric)
    intervals = {}
    for images, metrics in by_images.items():
        table = np.array([[values[metric][image] for image in images] for metric in metrics])
        means = bootstrap_means(table, generator(*rng_key), resamples)
        for metric, row in zip(metrics, means):
            intervals[metric] = list(percentile_interval(row, alpha))
    return intervals


def _sign_matrices(n: int, permutations: int, rng: np.random.Generator) -> tuple[Iterator[np.ndarray], bool]:
    """:math:`(rows, n)` float ±1 batches: all :math:`2^n` sign vectors (exact), else ``permutations`` random ones
    (each sign one bit of ``rng.integers(0, 256, uint8)``: 8 signs per byte drawn)."""
    rows = batch_rows(n)
    if n <= 62 and (1 << n) <= permutations:  # every sign vector once (the identity among them)
        bits = np.arange(n, dtype=np.int64)
        return (1.0 - 2.0 * ((np.arange(s, min(s + rows, 1 << n), dtype=np.int64)[:, None] >> bits) & 1)
                for s in range(0, 1 << n, rows)), True
    width = (n + 7) // 8
    return (1.0 - 2.0 * np.unpackbits(rng.integers(0, 256, (min(rows, permutations - s), width), dtype=np.uint8),
                                      axis=1, count=n) for s in range(0, permutations, rows)), False


def sign_flip_tests(differences: np.ndarray, permutations: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """:func:`sign_flip_test` of each row of ``differences`` (:math:`(T, n)`) on one shared set of sign vectors
    (one matrix product per batch); returns ``(p of shape (T,), exact)``."""
    observed = np.abs(differences.sum(axis=1))
    threshold = observed - 1e-12 * np.abs(differences).sum(axis=1)
    batches, exact = _sign_matrices(differences.shape[1], permutations, rng)
    reached = np.zeros(differences.shape[0], dtype=np.int64)
    for signs in batches:
        reached += (np.abs(signs @ differences.T) >= threshold).sum(axis=0)
    if exact:
        return reached / float(1 << differences.shape[1]), True
    return (1 + reached) / (1 + permutations), False


def sign_flip_test(differences: np.ndarray, permutations: int, rng: np.random.Generator) -> tuple[float, bool]:
    """Two-sided paired sign-flip test of ``mean(differences) == 0`` (:math:`(n,)`); returns ``(p, exact)``.

    Statistic :math:`S = |\\sum_i d_i|`; under H0 each :math:`d_i` is symmetric about 0, so every sign
    vector :math:`\\varepsilon \\in \\{\\pm 1\\}^n` is equally likely. Exact: :math:`p = \\#\\{\\varepsilon:
    |\\varepsilon \\cdot d| \\ge S\\} / 2^n`; Monte Carlo (``2**n > permutations``): :math:`p = (1 + \\#\\{\\ge S\\}) /
    (1 + P)`. Ties up to :math:`10^{-12} \\sum_i |d_i|` count as reaching S (rounding of the sums).

    Example (by hand: only the all-plus and all-minus signs reach 10 of 16):
        >>> sign_flip_test(np.array([1.0, 2.0, 3.0, 4.0]), 10000, generator(0))
        (0.125, True)
    """
    p, exact = sign_flip_tests(differences[None, :], permutations, rng)
    return float(p[0]), exact


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values: :math:`\\tilde p_{(i)} = \\max_{j \\le i} \\min(1, (m - j + 1) p_{(j)})`.

    Examples:
        >>> [round(p, 12) for p in holm([0.01, 0.04, 0.03])]
        [0.03, 0.06, 0.06]
    """
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def ranks_with_ties(values: dict[str, float], better: set[tuple[str, str]], higher: bool) -> list[dict[str, Any]]:
    """Methods best first with ``rank = 1 + #{methods significantly better}`` (``(winner, loser)`` in ``better``).

    Examples:
        >>> better = {("A", "C"), ("B", "C")}
        >>> ranks_with_ties({"A": 0.9, "B": 0.8, "C": 0.1}, better, True)  # doctest: +NORMALIZE_WHITESPACE
        [{'method': 'A', 'value': 0.9, 'rank': 1}, {'method': 'B', 'value': 0.8, 'rank': 1},
         {'method': 'C', 'value': 0.1, 'rank': 3}]
    """
    order = sorted(values, key=lambda m: -values[m] if higher else values[m])
    return [{"method": m, "value": values[m], "rank": 1 + sum((o, m) in better for o in values)} for m in order]


def _pair_entries(values: dict[str, dict[str, float]]) -> tuple[list[dict[str, Any]], list[tuple]]:
    """Every pair of methods (plan order) on the images scored for both (by name); ``(entries, [(entry, images,
    differences)])`` for the pairs to test."""
    methods = list(values)
    pairs, pending = [], []
    for i, a in enumerate(methods):
        for b in methods[i + 1:]:
            common = tuple(sorted(image for image in values[a] if image in values[b]))  # by name, not row order
            entry: dict[str, Any] = {"a": a, "b": b, "images": len(common), "mean_difference": None,
                                     "p_value": None, "exact": None}
            if common:
                differences = np.array([values[a][image] - values[b][image] for image in common])
                entry["mean_difference"] = float(differences.mean())
                pending.append((entry, common, differences))
            pairs.append(entry)
    return pairs, pending


def _test_pending(pending: list[tuple], dataset: str, seed: int, permutations: int) -> None:
    """Fill ``p_value`` / ``exact``: the pairs with the same images share one set of sign vectors (seeded by the
    dataset and the image names), tested in one batch."""
    by_images: dict[tuple[str, ...], list[tuple]] = {}
    for entry, common, differences in pending:
        by_images.setdefault(common, []).append((entry, differences))
    for common, tests in by_images.items():
        rng = generator(seed, dataset, "\n".join(common))
        p, exact = sign_flip_tests(np.stack([d for _, d in tests]), permutations, rng)
        for (entry, _), value in zip(tests, p):
            entry.update(p_value=float(value), exact=exact)


def _decide(pairs: list[dict[str, Any]], higher: bool, alpha: float) -> None:
    """Holm over one metric's pairs; ``significant`` and the ``better`` method of each pair."""
    tested = [pair for pair in pairs if pair["p_value"] is not None]
    for pair, adjusted in zip(tested, holm([pair["p_value"] for pair in tested])):
        pair["p_holm"] = adjusted
    for pair in pairs:
        pair.setdefault("p_holm", None)
        significant = pair["p_holm"] is not None and pair["p_holm"] <= alpha and pair["mean_difference"] != 0
        pair["significant"] = significant
        pair["better"] = None if not significant else pair["a"] if (pair["mean_difference"] > 0) == higher \
            else pair["b"]


def worst_images(document: dict[str, Any], grouped: Grouped, k: int) -> list[dict[str, Any]]:
    """Per job and metric with a direction: its ``k`` worst images (lowest first when higher is better; ties in
    image order) as ``{"dataset", "method", "metric", "images": [{"image", "value"}]}``."""
    found = []
    for result in document["results"]:
        for metric in document["metrics"]:
            higher = document["higher_is_better"].get(metric)
            if higher is None or k <= 0:
                continue
            scored = finite_values(grouped, result["dataset"], result["method"], metric)
            order = sorted(scored, key=lambda image: scored[image] if higher else -scored[image])
            found.append({"dataset": result["dataset"], "method": result["method"], "metric": metric,
                          "images": [{"image": image, "value": scored[image]} for image in order[:k]]})
    return found


def run_statistics(document: dict[str, Any], rows: list[dict[str, Any]], resamples: int = 1000, seed: int = 0,
                   alpha: float = 0.05, permutations: int = 10000, worst_k: int = 5) -> dict[str, Any]:
    """The ``stats.json`` document (docs/statistics.md "stats.json")."""
    grouped = group_rows(rows)
    resampled, reasons = resampled_metrics(document, grouped)
    datasets = []
    for dataset in dict.fromkeys(r["dataset"] for r in document["results"]):
        results = [r for r in document["results"] if r["dataset"] == dataset]
        values = {metric: {r["method"]: finite_values(grouped, dataset, r["method"], metric) for r in results}
                  for metric in resampled}
        intervals = {} if resamples <= 0 else {r["method"]: _job_intervals(
            {m: values[m][r["method"]] for m in resampled if r["metrics"].get(m) is not None},
            (seed, dataset, r["method"]), resamples, alpha) for r in results}
        metrics, pending = {}, []
        for metric in resampled:
            methods = {r["method"]: {"value": r["metrics"].get(metric), "images": len(values[metric][r["method"]]),
                                     "ci": intervals.get(r["method"], {}).get(metric)} for r in results}
            entry: dict[str, Any] = {"methods": methods, "pairs": [], "ranking": []}
            higher = document["higher_is_better"].get(metric)
            if higher is not None:
                entry["pairs"], own_pending = _pair_entries(values[metric])
                pending += own_pending
            metrics[metric] = entry
        _test_pending(pending, dataset, seed, permutations)
        for metric, entry in metrics.items():
            higher = document["higher_is_better"].get(metric)
            if higher is None:
                continue
            _decide(entry["pairs"], higher, alpha)
            better = {(p["better"], p["b"] if p["better"] == p["a"] else p["a"])
                      for p in entry["pairs"] if p["better"] is not None}
            shown = {m: v["value"] for m, v in entry["methods"].items() if v["value"] is not None}
            entry["ranking"] = ranks_with_ties(shown, better, higher)
        datasets.append({"dataset": dataset, "metrics": metrics})
    return {
        "seed": seed, "alpha": alpha,
        "bootstrap": {"resamples": resamples, "confidence": 1 - alpha, "interval": "percentile",
                      "statistic": "mean over images"},
        "test": {"name": "paired sign-flip permutation test of the mean difference", "alternative": "two-sided",
                 "permutations": permutations, "correction": "holm"},
        "resampled_metrics": resampled, "not_resampled": reasons,
        "datasets": datasets, "worst_k": worst_k, "worst": worst_images(document, grouped, worst_k),
    }


# Resampling of sums: for dataset values that are ratios of sums over images (PQ's per-category TP / FP / FN /
# IoU sums, a mean over a varying number of objects per sequence), the per-unit sums are resampled, not means.


def resample_counts(rng: np.random.Generator, n: int, resamples: int) -> Iterator[np.ndarray]:
    """:math:`(rows, n)` float64 multiplicities: entry ``(b, i)`` counts how often unit ``i`` is drawn in resample
    ``b`` of :func:`resample_indices` (the same draws, batch by batch).

    Example:
        >>> counts = np.concatenate(list(resample_counts(generator(0), 4, 3)))
        >>> counts.shape, counts.sum(axis=1).tolist()
        ((3, 4), [4.0, 4.0, 4.0])
    """
    for index in resample_indices(rng, n, resamples):
        rows = index.shape[0]
        flat = (np.arange(rows, dtype=np.int64)[:, None] * n + index).ravel()
        yield np.bincount(flat, minlength=rows * n).reshape(rows, n).astype(np.float64)


def bootstrap_sums(table: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """Column sums of ``table`` (:math:`(n, K)`, one row per unit) over each resample of the units:
    :math:`(B, K)` = counts :math:`(B, n)` @ table (one matrix product per batch of :func:`resample_counts`).

    Example (every unit alike: every resample sums to n times it):
        >>> bootstrap_sums(np.ones((3, 2)), generator(0), 2).tolist()
        [[3.0, 3.0], [3.0, 3.0]]
    """
    parts = [counts @ table for counts in resample_counts(rng, table.shape[0], resamples)]
    return np.concatenate(parts) if parts else np.zeros((0, table.shape[1]))


def swap_matrices(n: int, permutations: int, rng: np.random.Generator) -> tuple[Iterator[np.ndarray], bool]:
    """:math:`(rows, n)` float 0/1 batches: 1 where a paired test swaps the two results of a unit — the sign
    vectors of :func:`sign_flip_tests` as ``(1 - sign) / 2`` (all :math:`2^n` when ``2**n <= permutations``,
    the identity among them: ``exact``)."""
    batches, exact = _sign_matrices(n, permutations, rng)
    return ((1.0 - signs) * 0.5 for signs in batches), exact
