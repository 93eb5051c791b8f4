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

numpy only (no torch); imported by :mod:`nobg_metrics.cli.report` when the outputs are written.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

MEAN_RTOL = 1e-9
"""A metric counts as a per-image mean when ``|value - mean| <= MEAN_RTOL * max(1, |mean|)`` on every job."""

BATCH_ELEMENTS = 1 << 22
"""Index / sign matrices are drawn in batches of ``max(1, BATCH_ELEMENTS // n)`` rows (bounded memory)."""


def batch_rows(n: int) -> int:
    """Rows per drawn batch for ``n`` images (pass it as ``batch=`` to ``scipy.stats.bootstrap`` to match)."""
    return max(1, BATCH_ELEMENTS // max(n, 1))


def generator(seed: int, *keys: str) -> np.random.Generator:
    """A generator for one ``(seed, dataset, method, ...)``: the same keys give the same draws in any run,
    whatever the other jobs (keys hashed with CRC-32)."""
    return np.random.default_rng(np.random.SeedSequence([seed, *(zlib.crc32(key.encode()) for key in keys)]))


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

    Example:
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
    """:math:`(B,)` means of ``values`` (:math:`(n,)`) over the rows of the index matrix."""
    return np.concatenate([values[idx].mean(axis=-1) for idx in resample_indices(rng, values.size, resamples)])


def bootstrap_interval(values: np.ndarray, rng: np.random.Generator, resamples: int,
                       alpha: float) -> tuple[float, float]:
    """Percentile bootstrap ``1 - alpha`` interval of the mean of ``values`` (:math:`(n,)`, n >= 1).

    Example:
        >>> bootstrap_interval(np.array([0.5, 0.5, 0.5]), generator(0, "D", "M"), 100, 0.05)
        (0.5, 0.5)
    """
    return percentile_interval(bootstrap_means(values, rng, resamples), alpha)


def _sign_matrices(n: int, permutations: int, rng: np.random.Generator) -> tuple[Iterator[np.ndarray], bool]:
    rows = batch_rows(n)
    if n <= 62 and (1 << n) <= permutations:  # every sign vector once (the identity among them)
        bits = np.arange(n, dtype=np.int64)
        return (1.0 - 2.0 * ((np.arange(s, min(s + rows, 1 << n), dtype=np.int64)[:, None] >> bits) & 1)
                for s in range(0, 1 << n, rows)), True
    return (1.0 - 2.0 * rng.integers(0, 2, (min(rows, permutations - s), n))
            for s in range(0, permutations, rows)), False


def sign_flip_test(differences: np.ndarray, permutations: int, rng: np.random.Generator) -> tuple[float, bool]:
    """Two-sided paired sign-flip test of ``mean(differences) == 0``; returns ``(p, exact)``.

    Statistic :math:`S = |\\sum_i d_i|`; under H0 each :math:`d_i` is symmetric about 0, so every sign
    vector :math:`\\varepsilon \\in \\{\\pm 1\\}^n` is equally likely. Exact: :math:`p = \\#\\{\\varepsilon:
    |\\varepsilon \\cdot d| \\ge S\\} / 2^n`; Monte Carlo (``2**n > permutations``): :math:`p = (1 + \\#\\{\\ge S\\}) /
    (1 + P)`. Ties up to :math:`10^{-12} \\sum_i |d_i|` count as reaching S (rounding of the sums).

    Example (by hand: only the all-plus and all-minus signs reach 10 of 16):
        >>> sign_flip_test(np.array([1.0, 2.0, 3.0, 4.0]), 10000, generator(0))
        (0.125, True)
    """
    observed = abs(float(differences.sum()))
    slack = 1e-12 * float(np.abs(differences).sum())
    batches, exact = _sign_matrices(differences.size, permutations, rng)
    reached = sum(int((np.abs(signs @ differences) >= observed - slack).sum()) for signs in batches)
    if exact:
        return reached / (1 << differences.size), True
    return (1 + reached) / (1 + permutations), False


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values: :math:`\\tilde p_{(i)} = \\max_{j \\le i} \\min(1, (m - j + 1) p_{(j)})`.

    Example:
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

    Example:
        >>> ranks_with_ties({"A": 0.9, "B": 0.8, "C": 0.1}, {("A", "C"), ("B", "C")}, True)
        [{'method': 'A', 'value': 0.9, 'rank': 1}, {'method': 'B', 'value': 0.8, 'rank': 1}, {'method': 'C', 'value': 0.1, 'rank': 3}]
    """
    order = sorted(values, key=lambda m: -values[m] if higher else values[m])
    return [{"method": m, "value": values[m], "rank": 1 + sum((o, m) in better for o in values)} for m in order]


def _pairs(dataset: str, metric: str, values: dict[str, dict[str, float]], higher: bool, seed: int,
           permutations: int, alpha: float) -> list[dict[str, Any]]:
    """Every pair of methods (plan order) tested on the images scored for both; Holm over the pairs."""
    methods = list(values)
    pairs = []
    for i, a in enumerate(methods):
        for b in methods[i + 1:]:
            common = sorted(image for image in values[a] if image in values[b])  # draws: by name, not row order
            entry: dict[str, Any] = {"a": a, "b": b, "images": len(common), "mean_difference": None,
                                     "p_value": None, "exact": None}
            if common:
                differences = np.array([values[a][image] - values[b][image] for image in common])
                p, exact = sign_flip_test(differences, permutations, generator(seed, dataset, metric, a, b))
                entry.update(mean_difference=float(differences.mean()), p_value=p, exact=exact)
            pairs.append(entry)
    tested = [pair for pair in pairs if pair["p_value"] is not None]
    for pair, adjusted in zip(tested, holm([pair["p_value"] for pair in tested])):
        pair["p_holm"] = adjusted
    for pair in pairs:
        pair.setdefault("p_holm", None)
        significant = pair["p_holm"] is not None and pair["p_holm"] <= alpha and pair["mean_difference"] != 0
        pair["significant"] = significant
        pair["better"] = None if not significant else pair["a"] if (pair["mean_difference"] > 0) == higher \
            else pair["b"]
    return pairs


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
        metrics = {}
        for metric in resampled:
            values = {r["method"]: finite_values(grouped, dataset, r["method"], metric) for r in results}
            methods = {}
            for r in results:
                own, value = values[r["method"]], r["metrics"].get(metric)
                interval = None
                if resamples > 0 and own and value is not None:
                    ordered = np.array([own[image] for image in sorted(own)])  # draws: by name, not row order
                    interval = list(bootstrap_interval(ordered,
                                                       generator(seed, dataset, r["method"], metric), resamples, alpha))
                methods[r["method"]] = {"value": value, "images": len(own), "ci": interval}
            entry: dict[str, Any] = {"methods": methods, "pairs": [], "ranking": []}
            higher = document["higher_is_better"].get(metric)
            if higher is not None:
                entry["pairs"] = _pairs(dataset, metric, values, higher, seed, permutations, alpha)
                better = {(p["better"], p["b"] if p["better"] == p["a"] else p["a"])
                          for p in entry["pairs"] if p["better"] is not None}
                shown = {m: v["value"] for m, v in methods.items() if v["value"] is not None}
                entry["ranking"] = ranks_with_ties(shown, better, higher)
            metrics[metric] = entry
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
